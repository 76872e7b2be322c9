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
    "usage: taskfs wait [--timeout DURATION] [--state-dir DIR] [--foreign-store] ID|KEY\n"
    "\n"
    "Waits until the task has ended, then exits with its exit code. A task that\n"
    "did not complete is described on stderr.\n"
    "\n"
    "  --timeout DURATION  give up after DURATION (500ms, 10s, 5m, 1h; a bare\n"
    "                      number is seconds), exit 124\n"
    "  --state-dir DIR     use the store in DIR\n"
    "  --foreign-store     read another user's store (root), changing nothing in it\n"
    "  -h, --help          show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  The task's: completed 0; failed: its exit code, 128+N if killed by signal N,\n"
    "  127 if it could not start; cancelled 130; lost 102 (its supervisor died).\n"
    "  124 --timeout ran out, 100 usage, 101 no such task, 111 system failure.\n";

int cmd_wait(int argc, char **argv) {
  static const struct option opts[] = {
      {"timeout", required_argument, NULL, 't'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS_READ("wait", usage_text, "", opts);
  int64_t timeout_ms = -1;
  char id[TFS_ID_MAX + 1];
  tfs_store_t *store = NULL;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    if ((code = cli_duration_opt("wait", "--timeout", optarg, &timeout_ms))) /* --timeout */
      return code;
  if (c < 0)
    return o.code;
  code = cli_open_one_task(&o, argc, argv, optind, &store, id);
  if (!code)
    code = cli_wait_report("wait", store, id, timeout_ms);
  if (store)
    tfs_store_close(store);
  return code;
}
