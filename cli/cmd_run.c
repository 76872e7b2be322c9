/* taskfs run [OPTIONS] -- CMD [ARG...]: creates a task, starts its own
 * detached supervisor (tfs_launch), prints the task id, and returns once
 * the worker is running; --wait / --follow then stay until the task ends.
 *
 * With --key the task is idempotent: the same key with the same command and
 * working directory names the existing task (nothing runs twice); --rerun
 * runs an ended keyed task again; a different command under a key is a
 * usage error. Environment values given with --env travel only in the
 * supervisor's environment; the record keeps their names. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "taskfs/supervise.h"

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
    "  --cwd DIR             working directory (default: the current one)\n"
    "  --env NAME=VALUE      set a variable for CMD (repeatable; the value is never\n"
    "                        written to disk, only the name)\n"
    "  --restart POLICY      no (default), on-failure or always\n"
    "  --min-uptime MS       a worker exiting sooner counts as a quick death\n"
    "                        (default 1000)\n"
    "  --max-restarts N      restarts allowed after quick deaths in a row; one more\n"
    "                        quick death ends the task failed, 'crash loop' (default 5)\n"
    "  --grace MS            after a stop request, SIGTERM, then SIGKILL after MS\n"
    "                        (default 5000)\n"
    "  --important-k K       keep the first and last K important lines (default 20)\n"
    "  --wait                wait for the task to end; exit with its exit code\n"
    "  --follow              print its output until it ends; exit with its exit code\n"
    "  --state-dir DIR       use the store in DIR\n"
    "  -h, --help            show this help\n"
    "\n"
    "Exit codes: 0 started (or already known under --key), 100 usage (also: the key\n"
    "names a different command), 111 system failure, 127 CMD could not start (not\n"
    "found, not executable, bad --cwd; the id is still printed). With --wait or\n"
    "--follow: the task's exit code (completed 0, failed: its code, 128+N for\n"
    "signal N; cancelled 130; lost 102).\n";

enum {
  OPT_KEY = 256,
  OPT_RERUN,
  OPT_CWD,
  OPT_ENV,
  OPT_RESTART,
  OPT_MIN_UPTIME,
  OPT_MAX_RESTARTS,
  OPT_GRACE,
  OPT_IMPORTANT_K,
  OPT_WAIT,
  OPT_FOLLOW,
  OPT_STATE_DIR,
};

/* Length of NAME in NAME=VALUE (a shell-style name), 0 if malformed. */
static size_t env_name_len(const char *s) {
  size_t i = 0;
  if (!(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
    return 0;
  while (s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
         (s[i] >= '0' && s[i] <= '9'))
    i++;
  return s[i] == '=' ? i : 0;
}

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

static int parse_ms(const char *opt, const char *arg, int64_t *out) {
  char q[96];
  if (cli_parse_i64(arg, out))
    return cli_usage_error("run", "%s wants a number of milliseconds, not '%s'", opt,
                           cli_quote(arg, q, sizeof q));
  return 0;
}

int cmd_run(int argc, char **argv) {
  static const struct option opts[] = {
      {"key", required_argument, NULL, OPT_KEY},
      {"rerun", no_argument, NULL, OPT_RERUN},
      {"cwd", required_argument, NULL, OPT_CWD},
      {"env", required_argument, NULL, OPT_ENV},
      {"restart", required_argument, NULL, OPT_RESTART},
      {"min-uptime", required_argument, NULL, OPT_MIN_UPTIME},
      {"max-restarts", required_argument, NULL, OPT_MAX_RESTARTS},
      {"grace", required_argument, NULL, OPT_GRACE},
      {"important-k", required_argument, NULL, OPT_IMPORTANT_K},
      {"wait", no_argument, NULL, OPT_WAIT},
      {"follow", no_argument, NULL, OPT_FOLLOW},
      {"state-dir", required_argument, NULL, OPT_STATE_DIR},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *key = NULL, *cwd_arg = NULL, *state_dir = NULL;
  int rerun = 0, wait = 0, follow = 0, nenv = 0, held = 0, c, code;
  char q[96];
  int64_t v;
  tfs_task_spec_t spec = {
      .restart = TFS_RESTART_NO, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  char **env = calloc((size_t)argc + 1, sizeof *env);
  char **names = calloc((size_t)argc + 1, sizeof *names);
  char *cwd = NULL;
  tfs_store_t *store = NULL;
  tfs_record_t rec;
  memset(&rec, 0, sizeof rec);
  if (!env || !names) {
    cli_error("run", "out of memory");
    code = CLI_EXIT_SYSTEM;
    goto out;
  }

  optind = 1;
  opterr = 0;
  /* "+": options end at CMD, so CMD's own options are never taken. */
  while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
    code = 0;
    switch (c) {
    case OPT_KEY:
      if (!tfs_key_valid(optarg))
        code = cli_usage_error("run", "'%s' is not a valid key (1 to %d of A-Z a-z 0-9 . _ : -)",
                               cli_quote(optarg, q, sizeof q), TFS_KEY_MAX);
      key = optarg;
      break;
    case OPT_RERUN:
      rerun = 1;
      break;
    case OPT_CWD:
      cwd_arg = optarg;
      break;
    case OPT_ENV: {
      size_t l = env_name_len(optarg);
      if (!l) {
        code = cli_usage_error("run", "--env wants NAME=VALUE, not '%s'",
                               cli_quote(optarg, q, sizeof q));
        break;
      }
      env[nenv] = optarg;
      names[nenv] = strndup(optarg, l);
      if (!names[nenv++]) {
        cli_error("run", "out of memory");
        code = CLI_EXIT_SYSTEM;
      }
      break;
    }
    case OPT_RESTART:
      if (tfs_restart_parse(optarg, &spec.restart))
        code = cli_usage_error("run", "--restart is no, on-failure or always, not '%s'",
                               cli_quote(optarg, q, sizeof q));
      break;
    case OPT_MIN_UPTIME:
      code = parse_ms("--min-uptime", optarg, &spec.min_uptime_ms);
      break;
    case OPT_GRACE:
      code = parse_ms("--grace", optarg, &spec.grace_ms);
      break;
    case OPT_MAX_RESTARTS:
      if (cli_parse_i64(optarg, &v) || v > 1000000)
        code = cli_usage_error("run", "--max-restarts wants a count, not '%s'",
                               cli_quote(optarg, q, sizeof q));
      spec.max_restarts = (int)v;
      break;
    case OPT_IMPORTANT_K:
      if (cli_parse_i64(optarg, &v) || v < 1 || v > 10000)
        code = cli_usage_error("run", "--important-k wants a count from 1 to 10000, not '%s'",
                               cli_quote(optarg, q, sizeof q));
      spec.important_k = (int)v;
      break;
    case OPT_WAIT:
      wait = 1;
      break;
    case OPT_FOLLOW:
      follow = 1;
      break;
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case 'h':
      fputs(usage_text, stdout);
      code = CLI_EXIT_OK;
      goto out;
    default:
      code = cli_bad_option("run", argv, c);
    }
    if (code)
      goto out;
  }
  if (optind < argc && !strcmp(argv[optind], "--"))
    optind++;
  if (optind >= argc) {
    code = cli_usage_error("run", "what should run? give the command after the options, "
                                  "e.g. 'taskfs run -- make test'");
    goto out;
  }
  if (!argv[optind][0]) {
    code = cli_usage_error("run", "the command name is empty");
    goto out;
  }
  if (wait && follow) {
    code = cli_usage_error("run", "--wait and --follow exclude each other (--follow also waits)");
    goto out;
  }
  if (rerun && !key) {
    code = cli_usage_error("run", "--rerun only makes sense with --key");
    goto out;
  }
  cwd = absolute_dir(cwd_arg ? cwd_arg : ".");
  if (!cwd) {
    cli_error("run", "cannot tell the current directory (%s); pass --cwd DIR", strerror(errno));
    code = CLI_EXIT_SYSTEM;
    goto out;
  }

  code = cli_open_store("run", state_dir, 1, &store);
  if (code)
    goto out;
  spec.argv = argv + optind;
  spec.cwd = cwd;
  spec.key = key;
  spec.env_names = names;
  spec.rerun = rerun;
  char id[TFS_ID_MAX + 1];
  int existed = 0;
  /* From creating the task to its supervisor holding it, an interrupted
   * run would leave a queued task nobody runs: Ctrl-C and friends wait
   * until the launch is done (a closed stdout must not kill us either). */
  sigset_t hold, old_mask;
  sigemptyset(&hold);
  sigaddset(&hold, SIGINT);
  sigaddset(&hold, SIGTERM);
  sigaddset(&hold, SIGHUP);
  sigaddset(&hold, SIGQUIT);
  sigprocmask(SIG_BLOCK, &hold, &old_mask);
  signal(SIGPIPE, SIG_IGN);
  held = 1;
  int err = tfs_task_create(store, &spec, id, &existed);
  if (err == TFS_EKEYCONFLICT) {
    char other[TFS_ID_MAX + 1] = "?";
    tfs_key_lookup(store, key, other);
    cli_error("run",
              "key '%s' already names task %s, which runs a different command or directory; "
              "use another key (or 'taskfs show %s' to see it)",
              key, other, other);
    code = CLI_EXIT_USAGE;
    goto out;
  }
  if (err) {
    cli_error("run", "cannot create the task in %s: %s", tfs_store_path(store), tfs_strerror(err));
    code = cli_exit_for(err);
    goto out;
  }
  /* The id first, whatever happens next, so a script always learns it. */
  printf("%s\n", id);
  fflush(stdout);

  int launch = !existed;
  if (existed) {
    memset(&rec, 0, sizeof rec);
    err = tfs_task_load(store, id, &rec);
    if (err == 0 && tfs_state_terminal(rec.state) && !wait && !follow)
      cli_error("run",
                "key '%s' names task %s, which has ended (%s); not run again (add --rerun "
                "to run it again)",
                key, id, tfs_state_name(rec.state));
    /* Queued with no supervisor: its launcher died between creating and
     * launching it. Adopt it, or the key would be wedged for ever. Should
     * the first launch still be on its way, the later of the two
     * supervisors finds the task taken and leaves. */
    if (err == 0 && rec.state == TFS_QUEUED && tfs_task_alive(store, id) == 0)
      launch = 1;
    tfs_record_free(&rec);
    memset(&rec, 0, sizeof rec);
  }
  if (launch) {
    tfs_launch_opts_t lo = {.env = env, .wait_ms = 30000};
    err = tfs_launch(store, id, &lo, &rec);
    if (err) {
      cli_error("run", "cannot start the supervisor of task %s: %s", id, tfs_strerror(err));
      code = cli_exit_for(err);
      goto out;
    }
    if (rec.state == TFS_FAILED && rec.nexits == 0) {
      cli_error("run", "%s", rec.reason ? rec.reason : "the command could not start");
      code = CLI_EXIT_NOSTART;
      goto out;
    }
    if (rec.state == TFS_QUEUED)
      cli_error("run",
                "task %s has not started yet (its supervisor is slow); 'taskfs show %s' "
                "tells when it does",
                id, id);
    tfs_record_free(&rec);
    memset(&rec, 0, sizeof rec);
  }

  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  held = 0;
  if (follow) {
    code = cli_follow(store, id, -1, STDOUT_FILENO);
  } else if (wait) {
    int rc = cli_wait_end(store, id, -1, &rec);
    if (rc == 2) {
      code = CLI_EXIT_CANCELLED; /* interrupted: the task itself runs on */
    } else if (rc < 0) {
      cli_error("run", "cannot wait for task %s: %s", id, tfs_strerror(rc));
      code = cli_exit_for(rc);
    } else {
      if (rec.state == TFS_LOST && tfs_task_settle_lost(store, id) >= 0) {
        tfs_record_free(&rec);
        memset(&rec, 0, sizeof rec);
        tfs_task_load(store, id, &rec);
      }
      if (rec.state != TFS_COMPLETED && rec.reason)
        cli_error("run", "task %s %s: %s", id, tfs_state_name(rec.state), rec.reason);
      code = cli_exit_for_record(&rec);
    }
  } else {
    code = CLI_EXIT_OK;
  }

out:
  if (held)
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
  tfs_record_free(&rec);
  if (store)
    tfs_store_close(store);
  for (int i = 0; names && names[i]; i++)
    free(names[i]);
  free(names);
  free(env);
  free(cwd);
  return code;
}
