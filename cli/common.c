/* Helpers shared by every verb of the taskfs command line: option parsing,
 * error reporting, opening the store the way read-only verbs need it (never
 * creating it), resolving an ID or KEY argument, exit codes, and reporting
 * a task's end. The waits themselves are in cli/follow.c. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

/* The path cli_open_store() last resolved, so that later messages (a
 * missing store, an unknown task) can name it. */
static char last_store_path[PATH_MAX];

/* The message formatted, then escaped as a whole: the arguments of a
 * message (a reason, a path, a word of the command line) are never
 * written raw. */
static void put_message(const char *fmt, va_list ap) {
  char msg[2048], out[4 * sizeof msg + 1];
  vsnprintf(msg, sizeof msg, fmt, ap);
  cli_escape(msg, strlen(msg), 0, out, sizeof out, NULL);
  fputs(out, stderr);
}

void cli_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  if (verb)
    fprintf(stderr, "taskfs %s: ", verb);
  else
    fputs("taskfs: ", stderr);
  va_start(ap, fmt);
  put_message(fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

int cli_usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "taskfs %s: ", verb);
  va_start(ap, fmt);
  put_message(fmt, ap);
  va_end(ap);
  fprintf(stderr, "\ntry 'taskfs %s --help'\n", verb);
  return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *verb, char **argv, int c) {
  char q[96];
  /* getopt_long() has already advanced optind past the bad element. For a
   * long option, optopt is its value (or 0 if unknown), so name the option
   * by its text, without any "=value". */
  const char *opt = optind > 0 && argv[optind - 1] ? argv[optind - 1] : "?";
  if (!strncmp(opt, "--", 2)) {
    cli_quote(opt, q, sizeof q);
    char *eq = strchr(q, '=');
    if (c == ':')
      return cli_usage_error(verb, "option '%s' needs a value", q);
    if (eq && optopt) {
      *eq = 0;
      return cli_usage_error(verb, "option '%s' takes no value", q);
    }
    if (eq)
      *eq = 0;
    return cli_usage_error(verb, "unknown option '%s'", q);
  }
  if (c == ':')
    return cli_usage_error(verb, "option '-%c' needs a value", optopt);
  if (optopt > 0x20 && optopt < 0x7f)
    return cli_usage_error(verb, "unknown option '-%c'", optopt);
  return cli_usage_error(verb, "unknown option '%s'", cli_quote(opt, q, sizeof q));
}

/* Builds the optstring and the long option table of o once: ":" so that
 * getopt_long() reports nothing itself, "+" for verbs whose options end at
 * the first operand, then the verb's own options, --state-dir and --help. */
static void opts_build(cli_opts_t *o) {
  size_t n = 0, max = sizeof o->all / sizeof o->all[0] - 4;
  snprintf(o->optstring, sizeof o->optstring, "%s:h%s", o->flags & CLI_OPT_IN_ORDER ? "+" : "",
           o->shortopts ? o->shortopts : "");
  for (; o->longopts && o->longopts[n].name && n < max; n++)
    o->all[n] = o->longopts[n];
  /* Known also to a verb that takes none, so that it is refused in words. */
  o->all[n++] = (struct option){"state-dir", required_argument, NULL, CLI_OPT_STATE_DIR};
  if (o->flags & CLI_OPT_FOREIGN)
    o->all[n++] = (struct option){"foreign-store", no_argument, NULL, CLI_OPT_FOREIGN_STORE};
  o->all[n++] = (struct option){"help", no_argument, NULL, 'h'};
  o->all[n] = (struct option){NULL, 0, NULL, 0};
  optind = 1;
  opterr = 0;
}

cli_opts_t *cli_describe;

int cli_getopt(cli_opts_t *o, int argc, char **argv) {
  if (!o->optstring[0])
    opts_build(o);
  if (cli_describe) {
    *cli_describe = *o;
    o->code = CLI_EXIT_OK;
    return -1;
  }
  for (;;) {
    int c = getopt_long(argc, argv, o->optstring, o->all, NULL);
    switch (c) {
    case -1:
      return 0;
    case CLI_OPT_STATE_DIR:
      if (o->flags & CLI_OPT_NO_STATE_DIR) {
        o->code = cli_usage_error(o->verb,
                                  "%s takes no --state-dir: it acts on a mount point, "
                                  "not on a store",
                                  o->verb);
        return -1;
      }
      if (!*optarg) {
        o->code = cli_usage_error(o->verb, "--state-dir is empty; name a directory (or leave "
                                           "the option out for the default store)");
        return -1;
      }
      o->state_dir = optarg;
      continue;
    case CLI_OPT_FOREIGN_STORE:
      o->foreign = 1;
      continue;
    case 'h':
      fputs(o->usage, stdout);
      o->code = CLI_EXIT_OK;
      return -1;
    case '?':
    case ':':
      o->code = cli_bad_option(o->verb, argv, c);
      return -1;
    default:
      return c;
    }
  }
}

int cli_no_operands(const char *verb, int argc, char **argv, const char *hint) {
  char q[96];
  if (optind >= argc)
    return 0;
  return cli_usage_error(verb, "unexpected argument '%s'%s%s", cli_quote(argv[optind], q, sizeof q),
                         hint ? " " : "", hint ? hint : "");
}

int cli_flush_stdout(const char *verb, int code) {
  if (fflush(stdout) == 0 && !ferror(stdout))
    return code;
  cli_error(verb, "cannot write to stdout: %s", strerror(errno));
  return CLI_EXIT_SYSTEM;
}

int cli_parse_i64(const char *s, int64_t *out) {
  int64_t v = 0;
  if (!s || !*s)
    return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    if (v > (INT64_MAX - (*s - '0')) / 10)
      return -1;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return 0;
}

int cli_duration_opt(const char *verb, const char *opt, const char *arg, int64_t *ms_out) {
  char q[96];
  if (!tfs_duration_parse(arg, ms_out))
    return CLI_EXIT_OK;
  return cli_usage_error(verb,
                         "%s wants a duration: a number with a unit " TFS_DURATION_UNITS
                         " (a bare number is seconds), like 500ms, 10s, 5m, 1h or 7d; not '%s'",
                         opt, cli_quote(arg, q, sizeof q));
}

const char *cli_format_duration(int64_t ms, char *buf, size_t len) {
  if (ms >= 3600000 && ms % 3600000 == 0)
    snprintf(buf, len, "%lldh", (long long)(ms / 3600000));
  else if (ms >= 60000 && ms % 60000 == 0)
    snprintf(buf, len, "%lldm", (long long)(ms / 60000));
  else if (ms % 1000 == 0)
    snprintf(buf, len, "%llds", (long long)(ms / 1000));
  else if (ms < 1000)
    snprintf(buf, len, "%lldms", (long long)ms);
  else {
    int n = snprintf(buf, len, "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
    while (n > 0 && (size_t)n < len && buf[n - 1] == '0')
      buf[--n] = 0;
    snprintf(buf + n, len - (size_t)n, "s");
  }
  return buf;
}

int cli_exit_for(int err) {
  if (err >= 0)
    return CLI_EXIT_OK;
  switch (err) {
  case TFS_ENOTASK:
    return CLI_EXIT_NOTASK;
  case TFS_EBADID:
    return CLI_EXIT_USAGE;
  default:
    return CLI_EXIT_SYSTEM;
  }
}

/* The exit code that stands for a task's end; see cli.h and docs/cli.md.
 * A record that has not ended yet has no such code: 111 marks the misuse. */
int cli_exit_for_record(const tfs_record_t *rec) {
  switch (rec->state) {
  case TFS_COMPLETED:
    return CLI_EXIT_OK;
  case TFS_CANCELLED:
    return CLI_EXIT_CANCELLED;
  case TFS_LOST:
    return CLI_EXIT_LOST;
  case TFS_FAILED:
    if (rec->signal > 0)
      return 128 + (rec->signal & 127);
    if (rec->exit_code >= 1)
      return rec->exit_code > 255 ? 255 : rec->exit_code;
    if (tfs_record_skipped(rec))
      return CLI_EXIT_SKIPPED;
    if (rec->worker_pid <= 0 && rec->nexits == 0)
      return CLI_EXIT_NOSTART;
    return 1;
  default:
    return CLI_EXIT_SYSTEM;
  }
}

/* A refused store: what is wrong (why, from the core), and what to do
 * about it, which depends on whether the verb could read it as another
 * user's (--foreign-store) or would change it. */
static void report_refused(const cli_opts_t *o, int rc, const char *why) {
  char q[96];
  const char *path = cli_quote(last_store_path, q, sizeof q);
  if (rc == TFS_EUNSAFE)
    cli_error(o->verb,
              "refusing the store %s: %s; other users may have planted tasks in it. If nobody "
              "could have, make it private (chmod 700 on it and on its tasks and keys "
              "directories); else remove it, or choose another with --state-dir or "
              "TASKFS_STATE_DIR",
              path, why);
  else if (o->flags & CLI_OPT_FOREIGN)
    cli_error(o->verb,
              "refusing the store %s: %s; a store must be your own: choose yours with "
              "--state-dir or TASKFS_STATE_DIR, or read this one without changing it with "
              "--foreign-store",
              path, why);
  else
    cli_error(o->verb,
              "refusing the store %s: %s; only its owner may change it (run 'taskfs %s' as "
              "that user), and a store of your own is chosen with --state-dir or "
              "TASKFS_STATE_DIR",
              path, why, o->verb);
}

int cli_store_path(const char *verb, const char *state_dir, char *buf, size_t len) {
  int rc = tfs_store_resolve(state_dir, buf, len);
  if (rc == 0)
    return CLI_EXIT_OK;
  buf[0] = 0;
  if (rc == -EINVAL && state_dir)
    return cli_usage_error(verb, "--state-dir is empty; name a directory (or leave the option "
                                 "out for the default store)");
  if (rc == -EINVAL)
    return cli_usage_error(verb, "TASKFS_STATE_DIR is set but empty; name a directory, or unset "
                                 "it for the default store");
  if (rc == -ENAMETOOLONG)
    return cli_usage_error(verb, "the state directory path is too long; pass a shorter "
                                 "--state-dir");
  cli_error(verb,
            "cannot tell where the store is (%s): pass --state-dir DIR or set "
            "TASKFS_STATE_DIR, XDG_STATE_HOME or HOME",
            tfs_strerror(rc));
  return CLI_EXIT_SYSTEM;
}

int cli_open_store(const cli_opts_t *o, int create, tfs_store_t **out) {
  char q[96], why[600];
  const char *verb = o->verb;
  int rc;
  *out = NULL;
  if ((rc = cli_store_path(verb, o->state_dir, last_store_path, sizeof last_store_path)))
    return rc;
  unsigned flags = (create ? TFS_STORE_CREATE : 0) | (o->foreign ? TFS_STORE_FOREIGN : 0);
  rc = tfs_store_open_flags(last_store_path, flags, out, why, sizeof why);
  if (rc == -ENOENT && !create) {
    *out = NULL;
    return CLI_EXIT_OK;
  }
  if (rc == TFS_EFOREIGN || rc == TFS_EUNSAFE) {
    report_refused(o, rc, why);
    return CLI_EXIT_SYSTEM;
  }
  if (rc < 0) {
    *out = NULL;
    cli_error(verb, "cannot open the store %s: %s; check that it is a directory you may %s",
              cli_quote(last_store_path, q, sizeof q), tfs_strerror(rc), create ? "write" : "read");
    return CLI_EXIT_SYSTEM;
  }
  return CLI_EXIT_OK;
}

/* An id prefix that names several tasks: which ones, and what to do. */
static int report_ambiguous(const char *verb, const char *arg, char **cands, size_t n) {
  char list[8 * (TFS_ID_MAX + 2) + 8] = "";
  size_t o = 0;
  for (size_t i = 0; i < n && o < sizeof list - TFS_ID_MAX - 3; i++)
    o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", cands[i]);
  tfs_ids_free(cands, n);
  return cli_usage_error(verb, "'%s' is the start of more than one task id (%s%s); give more of it",
                         arg, list, n >= 8 ? ", ..." : "");
}

int cli_resolve_task(const char *verb, tfs_store_t *store, const char *arg,
                     char id_out[TFS_ID_MAX + 1]) {
  char q[96];
  struct stat st;
  int rc;
  if (!arg || !*arg)
    return cli_usage_error(verb, "the task id or key is empty");
  /* Check the shape first, so a hostile argument never reaches a path and
   * gets the same answer whether or not the store exists. */
  if (!tfs_id_valid(arg) && !tfs_key_valid(arg))
    return cli_usage_error(verb,
                           "'%s' is neither a task id (like mi4x7k2p-3fz9qa) nor a task key "
                           "(1 to %d of A-Z a-z 0-9 . _ : -)",
                           cli_quote(arg, q, sizeof q), TFS_KEY_MAX);
  if (!store) {
    cli_error(verb, "no task '%s': the store %s does not exist yet; 'taskfs ls' lists tasks", arg,
              last_store_path);
    return CLI_EXIT_NOTASK;
  }
  char **cands = NULL;
  size_t ncands = 0;
  rc = tfs_task_resolve_prefix(store, arg, id_out, &cands, &ncands, 8);
  /* The task must exist, also when a key names one that is gone. */
  if (rc == 0)
    rc = tfs_task_stat(store, id_out, &st);
  if (rc == 0)
    return CLI_EXIT_OK;
  if (rc == TFS_EAMBIGUOUS)
    return report_ambiguous(verb, arg, cands, ncands);
  if (rc == TFS_ENOTASK) {
    cli_error(verb, "no task with id or key '%s' in %s%s; 'taskfs ls' lists tasks", arg,
              tfs_store_path(store),
              strlen(arg) < TFS_ID_PREFIX_MIN ? " (an id prefix needs at least 4 characters)" : "");
    return CLI_EXIT_NOTASK;
  }
  if (rc == TFS_EBADID)
    return cli_usage_error(verb, "'%s' is not a valid task id or key", cli_quote(arg, q, sizeof q));
  cli_error(verb, "cannot look up '%s' in %s: %s", arg, tfs_store_path(store), tfs_strerror(rc));
  return cli_exit_for(rc);
}

int cli_open_one_task(const cli_opts_t *o, int argc, char **argv, int first, tfs_store_t **store,
                      char id_out[TFS_ID_MAX + 1]) {
  const char *verb = o->verb;
  char q[96];
  int code;
  *store = NULL;
  if (first >= argc)
    return cli_usage_error(verb, "which task? give an ID or KEY ('taskfs ls' lists them)");
  if (argc - first > 1)
    return cli_usage_error(verb, "one task at a time; unexpected '%s'",
                           cli_quote(argv[first + 1], q, sizeof q));
  code = cli_open_store(o, 0, store);
  if (code)
    return code;
  code = cli_resolve_task(verb, *store, argv[first], id_out);
  if (code && *store) {
    tfs_store_close(*store);
    *store = NULL;
  }
  return code;
}

/* Describes a task that did not complete and returns its exit code. */
static int report_end(const char *verb, const char *id, const tfs_record_t *rec) {
  if (rec->state != TFS_COMPLETED)
    cli_error(verb, "task %s %s%s%s", id, tfs_state_name(rec->state), rec->reason ? ": " : "",
              rec->reason ? rec->reason : "");
  return cli_exit_for_record(rec);
}

void cli_timeout_error(const char *verb, const char *id, const tfs_record_t *rec,
                       int64_t timeout_ms, const char *then) {
  char d[32];
  cli_error(verb, "task %s is still %s after %s (--timeout); %s", id, tfs_state_name(rec->state),
            cli_format_duration(timeout_ms, d, sizeof d), then);
}

int cli_wait_report(const char *verb, tfs_store_t *store, const char *id, int64_t timeout_ms) {
  char then[96];
  tfs_record_t rec;
  int code, rc = cli_wait_end(store, id, timeout_ms, &rec);
  if (rc == -ETIMEDOUT) {
    snprintf(then, sizeof then, "'taskfs logs -f %s' follows it", id);
    cli_timeout_error(verb, id, &rec, timeout_ms, then);
    code = CLI_EXIT_TIMEOUT;
  } else if (rc == -EINTR) {
    code = CLI_EXIT_CANCELLED;
  } else if (rc < 0) {
    cli_error(verb, "cannot wait for task %s: %s", id, tfs_strerror(rc));
    code = cli_exit_for(rc);
  } else {
    code = report_end(verb, id, &rec);
  }
  tfs_record_free(&rec);
  return code;
}

int cli_hoist_state_dir(int *argc, char ***argv) {
  char **av = *argv;
  const char *dir = NULL;
  int skip = 0;
  if (*argc < 2)
    return 0;
  if (!strcmp(av[1], "--state-dir") && *argc >= 3) {
    dir = av[2];
    skip = 2;
  } else if (!strncmp(av[1], "--state-dir=", 12)) {
    dir = av[1] + 12;
    skip = 1;
  }
  if (!dir)
    return 0;
  if (*argc - skip < 2) {
    fprintf(stderr, "taskfs: --state-dir needs a verb after it; run 'taskfs --help'\n");
    return CLI_EXIT_USAGE;
  }
  /* A new array: this may run on one main() already made (queue). */
  char **out = calloc((size_t)*argc + 3, sizeof *out);
  int n = 0;
  if (!out)
    return CLI_EXIT_USAGE;
  out[n++] = av[0];
  out[n++] = av[1 + skip];
  out[n++] = "--state-dir";
  out[n++] = (char *)dir;
  for (int i = 2 + skip; i < *argc; i++)
    out[n++] = av[i];
  *argc = n;
  *argv = out;
  return 0;
}
