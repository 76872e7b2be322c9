/* taskfs wait [--timeout SEC] ID|KEY: waits until a task has ended and exits
 * with its exit code. It sleeps on inotify (the task directory), re-reading
 * the record at least once a second, so it notices a supervisor that died
 * (the task then reads lost and is settled as lost on disk). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs wait [--timeout SEC] [--state-dir DIR] ID|KEY\n"
    "\n"
    "Waits until the task has ended, then exits with its exit code.\n"
    "\n"
    "  --timeout SEC    give up after SEC seconds (fractions allowed), exit 124\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit codes: the task's: completed 0; failed: its exit code, 128+N if killed by\n"
    "signal N, 127 if it could not start; cancelled 130; lost 102 (its supervisor\n"
    "died). 124 on timeout, 100 usage, 101 no such task, 111 system failure.\n"
    "A task that did not complete is described on stderr.\n";

int cmd_wait(int argc, char **argv) {
  static const struct option opts[] = {
      {"timeout", required_argument, NULL, 't'},
      {"state-dir", required_argument, NULL, 'S'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *state_dir = NULL, *timeout_arg = "";
  int64_t timeout_ms = -1;
  char q[96], id[TFS_ID_MAX + 1];
  tfs_store_t *store = NULL;
  tfs_record_t rec;
  int c, code;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 't':
      if (cli_parse_seconds(optarg, &timeout_ms))
        return cli_usage_error("wait", "--timeout wants seconds (like 30 or 0.5), not '%s'",
                               cli_quote(optarg, q, sizeof q));
      timeout_arg = optarg;
      break;
    case 'S':
      state_dir = optarg;
      break;
    case 'h':
      fputs(usage_text, stdout);
      return CLI_EXIT_OK;
    default:
      return cli_bad_option("wait", argv, c);
    }
  }
  code = cli_open_one_task("wait", state_dir, argc, argv, optind, &store, id);
  if (code)
    goto out;

  memset(&rec, 0, sizeof rec);
  int rc = cli_wait_end(store, id, timeout_ms, &rec);
  if (rc == 1) {
    cli_error("wait", "task %s is still %s after %s s; 'taskfs logs -f %s' follows it", id,
              tfs_state_name(rec.state), timeout_arg, id);
    code = CLI_EXIT_TIMEOUT;
  } else if (rc == 2) {
    code = CLI_EXIT_CANCELLED; /* Ctrl-C: only the wait stops, the task runs on */
  } else if (rc < 0) {
    cli_error("wait", "cannot wait for task %s: %s", id, tfs_strerror(rc));
    code = cli_exit_for(rc);
  } else {
    /* Lost: the first reader able to take the lock writes it down. */
    if (rec.state == TFS_LOST && tfs_task_settle_lost(store, id) >= 0) {
      tfs_record_free(&rec);
      memset(&rec, 0, sizeof rec);
      tfs_task_load(store, id, &rec);
    }
    if (rec.state != TFS_COMPLETED)
      cli_error("wait", "task %s %s%s%s", id, tfs_state_name(rec.state), rec.reason ? ": " : "",
                rec.reason ? rec.reason : "");
    code = cli_exit_for_record(&rec);
  }
  tfs_record_free(&rec);
out:
  if (store)
    tfs_store_close(store);
  return code;
}
