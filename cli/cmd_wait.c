/* taskfs wait [--timeout SEC] ID|KEY: waits until a task has ended and exits
 * with its exit code. The wait is the core's (tfs_task_wait_end): it sleeps
 * on the task's watch, re-reading the record at every tick, so it notices a
 * supervisor that died (the task then reads lost and is settled as lost on
 * disk). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs wait [--timeout SEC] [--state-dir DIR] [--foreign-store] ID|KEY\n"
    "\n"
    "Waits until the task has ended, then exits with its exit code.\n"
    "\n"
    "  --timeout SEC    give up after SEC seconds (fractions allowed), exit 124\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  --foreign-store  read another user's store (root), changing nothing in it\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit codes: the task's: completed 0; failed: its exit code, 128+N if killed by\n"
    "signal N, 127 if it could not start; cancelled 130; lost 102 (its supervisor\n"
    "died). 124 on timeout, 100 usage, 101 no such task, 111 system failure.\n"
    "A task that did not complete is described on stderr.\n";

int cmd_wait(int argc, char **argv) {
  static const struct option opts[] = {
      {"timeout", required_argument, NULL, 't'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS_READ("wait", usage_text, "", opts);
  const char *timeout_arg = "";
  int64_t timeout_ms = -1;
  char q[96], id[TFS_ID_MAX + 1];
  tfs_store_t *store = NULL;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 't' && cli_parse_seconds(optarg, &timeout_ms))
      return cli_usage_error("wait", "--timeout wants seconds (like 30 or 0.5), not '%s'",
                             cli_quote(optarg, q, sizeof q));
    timeout_arg = optarg;
  }
  if (c < 0)
    return o.code;
  code = cli_open_one_task(&o, argc, argv, optind, &store, id);
  if (!code)
    code = cli_wait_report("wait", store, id, timeout_ms, timeout_arg);
  if (store)
    tfs_store_close(store);
  return code;
}
