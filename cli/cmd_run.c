/* taskfs run [OPTIONS] -- CMD [ARG...]: creates a task, prints its id,
 * starts its own detached supervisor, and returns once the worker is
 * running; --wait / --follow then stay until the task ends. Starting is
 * the core's one path (tfs_task_start_create, then tfs_task_start_launch:
 * the id is printed between the two), key adoption included.
 *
 * With --key the task is idempotent: the same key with the same command and
 * working directory names the existing task (nothing runs twice); --rerun
 * runs an ended keyed task again; a different command under a key is a
 * usage error, unless --replace (and the key's task has ended). Environment values (--env NAME from
 * this process's environment, --env-file FILE, or --env NAME=VALUE, which every local user can read
 * on this command line) travel to the supervisor in a memfd, never on a command line or on disk;
 * the record keeps their names. --on slurm runs CMD as a Slurm job (supervisor/exec_slurm.c); the
 * supervisor checks the cluster, so an unreachable one fails the task with
 * its reason, as a command that cannot start does. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/sched.h"
#include "cli/verbs.h"
#include "taskfs/buf.h"
#include "taskfs/supervise.h"
#include "taskfs/text.h"

static const char usage_text[] =
    "usage: taskfs run [OPTIONS] [--] CMD [ARG...]\n"
    "\n"
    "Starts CMD as a task under its own supervisor, detached from this shell: it\n"
    "keeps running (and is recorded to the end) if this process, the terminal or\n"
    "the session goes away. Prints the task id and returns once CMD is running.\n"
    "\n"
    "  --key K               idempotency key: if K already names a task with the\n"
    "                        same command and directory, print its id, run nothing\n"
    "  --rerun               with --key: run an ended task of that key again\n"
    "  --replace             with --key: the same, also when the ended task of the\n"
    "                        key ran another command (the key then names the new\n"
    "                        task; the old one stays, by its number and id)\n"
    "  --cwd DIR             working directory (default: the current one)\n"
    "  --env NAME            give CMD the variable NAME with its value here\n"
    "                        (repeatable; values are never written to disk, only\n"
    "                        names, and are on no command line)\n"
    "  --env-file FILE       the same for each NAME=VALUE line of FILE (blank lines\n"
    "                        and lines starting with # are skipped; the value is\n"
    "                        the rest of the line, as it is)\n"
    "  --env NAME=VALUE      set a variable for CMD; this VALUE is on this command\n"
    "                        line, which every local user can read (ps): secrets\n"
    "                        go by --env NAME or --env-file\n"
    "  --restart POLICY      no (default), on-failure or always; add ,on-timeout (or\n"
    "                        give on-timeout alone) to restart a worker stopped at\n"
    "                        its --timeout too\n"
    "  --max-restarts N      restart at most N times in all, whatever the uptime\n"
    "                        (default: no limit)\n"
    "  --min-uptime D        a worker that exits within D exits quickly (default 1s)\n"
    "  --max-quick-restarts N\n"
    "                        restarts allowed after quick exits in a row; the next\n"
    "                        quick exit ends them: a crash loop (default 5)\n"
    "  --grace D             after a stop request: SIGTERM, then SIGKILL after D\n"
    "                        (default 5s)\n"
    "  --important-k K       keep the first and last K important lines (default 20)\n"
    "  --stderr MODE         merged (default): stdout and stderr in one stream, in\n"
    "                        the order CMD wrote them (as 'CMD > file 2>&1');\n"
    "                        split: two pipes and a stderr-lines file naming the\n"
    "                        stderr lines (lines written close together to both\n"
    "                        streams may then appear in another order)\n"
    "  --timeout DURATION    stop each worker run after DURATION (500ms, 90s, 10m,\n"
    "                        1h, 1d; a bare number is seconds; none: no limit, also over\n"
    "                        the store's default) as a stop request would; the task\n"
    "                        then ends failed with exit code 124\n"
    "  --limit NAME=VALUE,...  resource limits of the worker and its tree: mem=2G,\n"
    "                        cpu=10m, nofile=4096, nproc=512, fsize=10G, core=0\n"
    "                        (setrlimit, soft and hard; mem: the tree's memory cgroup\n"
    "                        where one can be made; none lifts a store default)\n" CLI_SCHED_USAGE
    "  --on ENGINE           where CMD runs: local (default), or slurm: as a Slurm\n"
    "                        job through srun, its output streamed back\n"
    "  --slurm-opt ARG       one srun option for the job, its value in the same\n"
    "                        argument (--slurm-opt=--partition=debug; repeatable)\n"
    "  --wait                wait for the task to end; exit with its exit code\n"
    "  --follow              print its output until it ends; exit with its exit code\n"
    "  --state-dir DIR       use the store in DIR\n"
    "  -h, --help            show this help\n"
    "\n"
    "A duration D is a number with a unit: 500ms, 10s, 5m, 1h, 7d; a bare number is\n"
    "seconds. When a limit ends the restarts, the task ends as its last worker\n"
    "did (exit 0: completed, else failed).\n"
    "\n"
    "EXIT STATUS\n"
    "  0 started (or already known under --key), 100 usage (also: the key names a\n"
    "  different command), 101 no such task (--after names none), 111 system\n"
    "  failure, 127 CMD could not start (not found, not executable, bad --cwd;\n"
    "  the id is still printed), 103 not run: a task it starts after (--after)\n"
    "  has not completed. With --wait or\n"
    "  --follow: the task's exit code (completed 0, failed: its code, 128+N for\n"
    "  signal N; 124 timed out; 103 not run: a task it starts after did not\n"
    "  complete; cancelled 130; lost 102). Defaults for --timeout\n"
    "  and --limit come from the store's config ('taskfs config').\n";

enum {
  OPT_KEY = 256,
  OPT_RERUN,
  OPT_REPLACE,
  OPT_CWD,
  OPT_ENV,
  OPT_ENV_FILE,
  OPT_RESTART,
  OPT_MIN_UPTIME,
  OPT_MAX_RESTARTS,
  OPT_MAX_QUICK,
  OPT_GRACE,
  OPT_IMPORTANT_K,
  OPT_STDERR,
  OPT_TIMEOUT,
  OPT_LIMIT,
  OPT_WAIT,
  OPT_FOLLOW,
  OPT_ON,
  OPT_SLURM_OPT,
};

/* Makes dir absolute without requiring it to exist: a missing directory is
 * the task's start failure to report, not a usage error. */
static char *absolute_dir(const char *dir) {
  char here[PATH_MAX], *out;
  char *real = realpath(dir, NULL);
  if (real)
    return real;
  if (dir[0] == '/')
    return strdup(dir);
  if (!getcwd(here, sizeof here))
    return NULL;
  if (asprintf(&out, "%s/%s", here, dir) < 0)
    return NULL;
  return out;
}

/* Everything the command line of `run` says. */
typedef struct {
  tfs_task_spec_t spec;
  const char *cwd_arg;
  int wait, follow, nenv;
  size_t cap;   /* slots of env and names */
  char **env;   /* NAME=VALUE (malloc'ed), for the supervisor's environment only */
  char **names; /* NAME (malloc'ed), for the record */
  char *cwd;
  cli_sched_t sched;   /* --queue, --after, --delay, --at, --stdin */
  tfs_limits_t limits; /* --timeout, --limit */
  char why[1024];      /* a refusal of the limits, in core's words */
  char **engine_opts;  /* --slurm-opt, NULL-terminated (the strings are argv's) */
  int nopts;
} run_args_t;

static int run_args_init(run_args_t *a, int argc) {
  memset(a, 0, sizeof *a);
  a->spec = (tfs_task_spec_t){
      .restart = TFS_RESTART_NO, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  tfs_limits_init(&a->limits);
  a->spec.limits = &a->limits;
  a->spec.why = a->why;
  a->spec.whylen = sizeof a->why;
  return CLI_EXIT_OK;
}

static void run_args_free(run_args_t *a) {
  for (int i = 0; i < a->nenv; i++) {
    free(a->names[i]);
    free(a->env[i]);
  }
  free(a->names);
  free(a->env);
  free(a->cwd);
  cli_sched_free(&a->sched);
  tfs_limits_free(&a->limits);
  free(a->engine_opts);
}

/* Keeps one NAME=VALUE (len: the name's length) for the supervisor's
 * environment and its name for the record. */
static int env_add(run_args_t *a, const char *pair, size_t len) {
  /* Both arrays have room for one more and the NULL after it; cap is the
   * smaller room, should only the first have grown. */
  size_t need = (size_t)a->nenv + 2, ecap = a->cap, ncap = a->cap;
  if (tfs_grow(&a->env, &ecap, need, sizeof *a->env, 8) ||
      tfs_grow(&a->names, &ncap, need, sizeof *a->names, 8)) {
    cli_error("run", "out of memory");
    return CLI_EXIT_SYSTEM;
  }
  a->cap = ecap < ncap ? ecap : ncap;
  char *p = strdup(pair), *name = strndup(pair, len);
  if (!p || !name) {
    free(p);
    free(name);
    cli_error("run", "out of memory");
    return CLI_EXIT_SYSTEM;
  }
  a->env[a->nenv] = p;
  a->names[a->nenv++] = name;
  a->env[a->nenv] = a->names[a->nenv] = NULL;
  return CLI_EXIT_OK;
}

/* --env NAME=VALUE, or --env NAME: the value this process has for NAME,
 * so that it is on no command line. */
static int run_env(run_args_t *a, const char *arg) {
  char q[96];
  size_t l = tfs_env_name_len(arg);
  if (l)
    return env_add(a, arg, l);
  if (!tfs_env_name_valid(arg))
    return cli_usage_error("run", "--env wants NAME or NAME=VALUE, not '%s'",
                           cli_quote(arg, q, sizeof q));
  const char *v = getenv(arg);
  if (!v)
    return cli_usage_error("run",
                           "--env %s: %s is not set here; set it (export %s=...), or use "
                           "--env-file FILE",
                           arg, arg, arg);
  char *pair;
  if (asprintf(&pair, "%s=%s", arg, v) < 0) {
    cli_error("run", "out of memory");
    return CLI_EXIT_SYSTEM;
  }
  int code = env_add(a, pair, strlen(arg));
  free(pair);
  return code;
}

#define ENV_FILE_MAX (1 << 20)

/* Reads all of path (at most ENV_FILE_MAX bytes, no NUL) into *text. */
static int env_file_read(const char *path, char **text) {
  char q[96];
  FILE *f = fopen(path, "re");
  if (!f) {
    cli_error("run", "cannot read --env-file %s: %s", cli_quote(path, q, sizeof q),
              strerror(errno));
    return CLI_EXIT_SYSTEM;
  }
  char *buf = malloc(ENV_FILE_MAX + 1);
  size_t n = buf ? fread(buf, 1, ENV_FILE_MAX + 1, f) : 0;
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    cli_error("run", "cannot read --env-file %s: %s", cli_quote(path, q, sizeof q),
              buf ? "read error" : "out of memory");
    return CLI_EXIT_SYSTEM;
  }
  if (n > ENV_FILE_MAX || memchr(buf, 0, n)) {
    free(buf);
    return cli_usage_error("run", "--env-file %s is %s", cli_quote(path, q, sizeof q),
                           n > ENV_FILE_MAX ? "larger than 1 MiB" : "not text (it holds a NUL)");
  }
  buf[n] = 0;
  *text = buf;
  return CLI_EXIT_OK;
}

/* --env-file FILE: a NAME=VALUE per line, the value the rest of the line
 * as it is (no quoting, a trailing \r dropped); blank lines and lines whose
 * first non-blank is # are skipped. A bad line is named by its number. */
static int run_env_file(run_args_t *a, const char *path) {
  char q[96], *text = NULL;
  int code = env_file_read(path, &text);
  if (code)
    return code;
  int lineno = 0;
  for (char *line = text, *next; line && !code; line = next) {
    lineno++;
    next = strchr(line, '\n');
    if (next)
      *next++ = 0;
    size_t len = strlen(line);
    if (len && line[len - 1] == '\r')
      line[--len] = 0;
    const char *p = line + strspn(line, " \t");
    if (!*p || *p == '#')
      continue;
    size_t l = tfs_env_name_len(line);
    if (!l)
      code = cli_usage_error("run",
                             "%s:%d: not NAME=VALUE (a NAME of letters, digits and _, not "
                             "starting with a digit, then =)",
                             cli_quote(path, q, sizeof q), lineno);
    else
      code = env_add(a, line, l);
  }
  free(text);
  return code;
}

/* A count option within [lo, hi]. */
static int parse_count(const char *opt, const char *arg, int64_t lo, int64_t hi, int *out) {
  char q[96];
  int64_t v;
  if (cli_parse_i64(arg, &v) || v < lo || v > hi)
    return lo > 0 ? cli_usage_error("run", "%s wants a count from %lld to %lld, not '%s'", opt,
                                    (long long)lo, (long long)hi, cli_quote(arg, q, sizeof q))
                  : cli_usage_error("run", "%s wants a count, not '%s'", opt,
                                    cli_quote(arg, q, sizeof q));
  *out = (int)v;
  return CLI_EXIT_OK;
}

/* Takes one option into the arguments; returns an exit code (0: go on). */
static int run_option(run_args_t *a, int c, const char *arg) {
  char q[96];
  switch (c) {
  case OPT_KEY:
    a->spec.key = arg;
    if (!tfs_key_valid(arg))
      return cli_usage_error("run", "'%s' is not a valid key (1 to %d of A-Z a-z 0-9 . _ : -)",
                             cli_quote(arg, q, sizeof q), TFS_KEY_MAX);
    return CLI_EXIT_OK;
  case OPT_RERUN:
    a->spec.rerun = 1;
    return CLI_EXIT_OK;
  case OPT_REPLACE:
    a->spec.replace = 1;
    return CLI_EXIT_OK;
  case OPT_CWD:
    a->cwd_arg = arg;
    return CLI_EXIT_OK;
  case OPT_ENV:
    return run_env(a, arg);
  case OPT_ENV_FILE:
    return run_env_file(a, arg);
  case OPT_RESTART:
    if (tfs_restart_parse_list(arg, &a->spec.restart, &a->spec.restart_on_timeout))
      return cli_usage_error("run",
                             "--restart is no, on-failure or always, with ,on-timeout if a "
                             "worker stopped at its timeout is to be restarted too; not '%s'",
                             cli_quote(arg, q, sizeof q));
    return CLI_EXIT_OK;
  case OPT_TIMEOUT:
    if (tfs_timeout_parse(arg, &a->limits.timeout_ms, a->why, sizeof a->why))
      return cli_usage_error("run", "%s", a->why);
    a->limits.timeout_from = TFS_FROM_GIVEN;
    return CLI_EXIT_OK;
  case OPT_LIMIT:
    if (tfs_limits_parse(arg, &a->limits, a->why, sizeof a->why))
      return cli_usage_error("run", "--limit %s", a->why);
    return CLI_EXIT_OK;
  case OPT_MIN_UPTIME:
    return cli_duration_opt("run", "--min-uptime", arg, &a->spec.min_uptime_ms);
  case OPT_GRACE:
    return cli_duration_opt("run", "--grace", arg, &a->spec.grace_ms);
  case OPT_MAX_RESTARTS:
    return parse_count("--max-restarts", arg, 0, 1000000, &a->spec.max_restarts);
  case OPT_MAX_QUICK: {
    int n, code = parse_count("--max-quick-restarts", arg, 0, 1000000, &n);
    a->spec.crash_loop_exits = n + 1; /* the quick exit after N restarts ends them */
    return code;
  }
  case OPT_IMPORTANT_K:
    return parse_count("--important-k", arg, 1, 10000, &a->spec.important_k);
  case OPT_STDERR:
    if (tfs_stderr_parse(arg, &a->spec.stderr_mode))
      return cli_usage_error("run", "--stderr is merged or split, not '%s'",
                             cli_quote(arg, q, sizeof q));
    return CLI_EXIT_OK;
  case OPT_ON:
    if (tfs_engine_parse(arg, &a->spec.engine))
      return cli_usage_error("run", "--on is local or slurm, not '%s'",
                             cli_quote(arg, q, sizeof q));
    return CLI_EXIT_OK;
  case OPT_SLURM_OPT: {
    char **v = realloc(a->engine_opts, (size_t)(a->nopts + 2) * sizeof *v);
    if (!v)
      return cli_usage_error("run", "out of memory");
    v[a->nopts++] = (char *)arg;
    v[a->nopts] = NULL;
    a->engine_opts = v;
    return CLI_EXIT_OK;
  }
  case OPT_WAIT:
    a->wait = 1;
    return CLI_EXIT_OK;
  case OPT_FOLLOW:
    a->follow = 1;
    return CLI_EXIT_OK;
  default:
    return cli_sched_option(&a->sched, c, arg);
  }
}

/* Checks what follows the options (CMD and its arguments) and the
 * options that only make sense together, and fixes the working
 * directory. */
static int run_operands(run_args_t *a, int argc, char **argv) {
  if (optind < argc && !strcmp(argv[optind], "--"))
    optind++;
  if (optind >= argc)
    return cli_usage_error("run", "what should run? give the command after the options, "
                                  "e.g. 'taskfs run -- make test'");
  if (!argv[optind][0])
    return cli_usage_error("run", "the command name is empty");
  if (a->wait && a->follow)
    return cli_usage_error("run", "--wait and --follow exclude each other (--follow also waits)");
  if ((a->spec.rerun || a->spec.replace) && !a->spec.key)
    return cli_usage_error("run", "--%s only makes sense with --key",
                           a->spec.replace ? "replace" : "rerun");
  if (a->nopts && a->spec.engine != TFS_ENGINE_SLURM)
    return cli_usage_error("run", "--slurm-opt needs --on slurm");
  char why[512];
  if (tfs_engine_options_check(a->spec.engine, a->engine_opts, why, sizeof why))
    return cli_usage_error("run", "%s", why);
  a->spec.engine_options = a->engine_opts;
  a->cwd = absolute_dir(a->cwd_arg ? a->cwd_arg : ".");
  if (!a->cwd) {
    cli_error("run", "cannot tell the current directory (%s); pass --cwd DIR", strerror(errno));
    return CLI_EXIT_SYSTEM;
  }
  a->spec.argv = argv + optind;
  a->spec.cwd = a->cwd;
  a->spec.env_names = a->names;
  return CLI_EXIT_OK;
}

/* A key that names a task of another command or directory: what to do,
 * which depends on whether that task has ended. */
static int key_conflict(tfs_store_t *store, const char *key) {
  char other[TFS_ID_MAX + 1] = "?";
  tfs_record_t rec;
  tfs_key_lookup(store, key, other);
  if (tfs_task_load(store, other, &rec) == 0 && tfs_state_terminal(rec.state))
    cli_error("run",
              "key '%s' names task %s, which ran a different command or directory and has "
              "ended (%s); add --replace to run this command under the key (the old task "
              "stays, by its id), or 'taskfs rm %s' forgets the old task, or use another key",
              key, other, tfs_state_name(rec.state), key);
  else
    cli_error("run",
              "key '%s' already names task %s, which runs a different command or directory and "
              "has not ended; use another key, or stop it ('taskfs cancel %s') and then add "
              "--replace",
              key, other, key);
  tfs_record_free(&rec);
  return CLI_EXIT_USAGE;
}

/* Step one of tfs_task_start: creates the task, or finds the one its key
 * already names (adopting one stranded in queued: st->launch). */
static int create_task(tfs_store_t *store, run_args_t *a, tfs_start_t *st) {
  a->why[0] = 0;
  int err = tfs_task_start_create(store, &a->spec, st);
  if ((err == TFS_ELIMIT || err == TFS_ECONFIG || err == TFS_EBADID) && a->why[0]) {
    /* A limit above the hard one, or the store's defaults: core's words. */
    cli_error("run", "%s", a->why);
    return err == TFS_ECONFIG ? CLI_EXIT_SYSTEM : CLI_EXIT_USAGE;
  }
  if (err == TFS_EKEYCONFLICT)
    return key_conflict(store, a->spec.key);
  if (err && st->id[0]) {
    printf("%s\n", st->id); /* made, but its record does not read back */
    cli_error("run", "cannot read the record of the new task %s: %s", st->id, tfs_strerror(err));
    return cli_exit_for(err);
  }
  if (err) {
    cli_error("run", "cannot create the task in %s: %s", tfs_store_path(store), tfs_strerror(err));
    return cli_exit_for(err);
  }
  if (st->ended && !a->wait && !a->follow)
    cli_error("run",
              "key '%s' names task %s, which has ended (%s); not run again (add --rerun "
              "to run it again)",
              a->spec.key, st->id, tfs_state_name(st->rec.state));
  return CLI_EXIT_OK;
}

/* Step two: starts the task's supervisor when it needs one and waits until
 * the worker runs (or could not start: 127, the reason on stderr). */
static int launch_task(tfs_store_t *store, const run_args_t *a, tfs_start_t *st) {
  /* No exec: the supervisor is a fork of this process (inproc.c). */
  tfs_launch_opts_t lo = {.env = a->env, .wait_ms = 30000, .no_exec = 1};
  if (!st->launch)
    return CLI_EXIT_OK;
  tfs_task_start_launch(store, &lo, st);
  if (st->launch_err == -ENOSPC || st->launch_err == -EDQUOT) {
    cli_error("run",
              TFS_REASON_STORE_FULL "%s to keep task %s's record; free space or use another "
                                    "--state-dir",
              tfs_store_path(store), st->id);
    return CLI_EXIT_SYSTEM;
  }
  if (st->launch_err) {
    cli_error("run", "cannot start the supervisor of task %s: %s", st->id,
              tfs_strerror(st->launch_err));
    return cli_exit_for(st->launch_err);
  }
  if (st->not_started) {
    cli_error("run", "%s", st->rec.reason ? st->rec.reason : "the command could not start");
    if (tfs_record_store_full(&st->rec))
      return CLI_EXIT_SYSTEM;
    return tfs_record_skipped(&st->rec) ? CLI_EXIT_SKIPPED : CLI_EXIT_NOSTART;
  }
  /* Queued with a worker: an engine holds it (a pending Slurm job), which
   * is started as far as run is concerned; with only its supervisor it
   * waits for its queue, dependencies or start time. */
  int engine_holds = st->rec.worker_pid > 0;
  if (st->rec.state == TFS_QUEUED && !engine_holds && st->rec.supervisor_pid > 0)
    cli_say_queued("run", store, &st->rec);
  else if (st->rec.state == TFS_QUEUED && !engine_holds)
    cli_error("run",
              "task %s has not started yet (its supervisor is slow); 'taskfs show %s' "
              "tells when it does",
              st->id, st->id);
  return CLI_EXIT_OK;
}

/* Creates the task, prints its id and launches it. From creating the task
 * to its supervisor holding it, an interrupted run would leave a queued
 * task nobody runs: Ctrl-C and friends wait until the launch is done (a
 * closed stdout must not kill us either). */
static int run_start(tfs_store_t *store, run_args_t *a, char id[TFS_ID_MAX + 1]) {
  sigset_t hold, old_mask;
  tfs_start_t st;
  sigemptyset(&hold);
  sigaddset(&hold, SIGINT);
  sigaddset(&hold, SIGTERM);
  sigaddset(&hold, SIGHUP);
  sigaddset(&hold, SIGQUIT);
  sigprocmask(SIG_BLOCK, &hold, &old_mask);
  signal(SIGPIPE, SIG_IGN);
  int code = create_task(store, a, &st);
  if (!code) {
    /* The id first, whatever happens next, so a script always learns it. */
    printf("%s\n", st.id);
    fflush(stdout);
    code = launch_task(store, a, &st);
  }
  snprintf(id, TFS_ID_MAX + 1, "%s", st.id);
  tfs_start_free(&st);
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  return code;
}

int cmd_run(int argc, char **argv) {
  static const struct option opts[] = {
      {"key", required_argument, NULL, OPT_KEY},
      {"rerun", no_argument, NULL, OPT_RERUN},
      {"replace", no_argument, NULL, OPT_REPLACE},
      {"cwd", required_argument, NULL, OPT_CWD},
      {"env", required_argument, NULL, OPT_ENV},
      {"env-file", required_argument, NULL, OPT_ENV_FILE},
      {"restart", required_argument, NULL, OPT_RESTART},
      {"min-uptime", required_argument, NULL, OPT_MIN_UPTIME},
      {"max-restarts", required_argument, NULL, OPT_MAX_RESTARTS},
      {"max-quick-restarts", required_argument, NULL, OPT_MAX_QUICK},
      {"grace", required_argument, NULL, OPT_GRACE},
      {"important-k", required_argument, NULL, OPT_IMPORTANT_K},
      {"stderr", required_argument, NULL, OPT_STDERR},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"limit", required_argument, NULL, OPT_LIMIT},
      {"wait", no_argument, NULL, OPT_WAIT},
      {"follow", no_argument, NULL, OPT_FOLLOW},
      CLI_SCHED_OPTIONS,
      {"on", required_argument, NULL, OPT_ON},
      {"slurm-opt", required_argument, NULL, OPT_SLURM_OPT},
      {NULL, 0, NULL, 0},
  };
  /* In order: options end at CMD, so CMD's own options are never taken. */
  cli_opts_t o = CLI_OPTS("run", usage_text, "", opts);
  o.flags = CLI_OPT_IN_ORDER;
  tfs_store_t *store = NULL;
  char id[TFS_ID_MAX + 1];
  run_args_t a;
  int c, code = run_args_init(&a, argc);
  if (code)
    goto out;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    if ((code = run_option(&a, c, optarg)))
      goto out;
  if (c < 0) {
    code = o.code;
    goto out;
  }
  if ((code = run_operands(&a, argc, argv)) || (code = cli_open_store(&o, 1, &store)) ||
      (code = cli_sched_apply(&a.sched, store, &a.spec)) || (code = run_start(store, &a, id)))
    goto out;
  if (a.follow)
    code = cli_follow(store, id, -1, STDOUT_FILENO);
  else if (a.wait)
    code = cli_wait_report("run", store, id, -1);
  if (code == CLI_EXIT_CANCELLED && (a.follow || a.wait))
    cli_say_runs_on("run", store, id);
out:
  if (store)
    tfs_store_close(store);
  run_args_free(&a);
  return code;
}
