/* taskfs wait [--timeout SEC] [ID|KEY...|--all]: waits until a task (the
 * newest, each given, or every one not ended) has ended and exits with its
 * exit code (the worst of them). The wait is the core's (tfs_task_wait_end): it sleeps
 * on the task's watch, re-reading the record at every tick, so it notices a
 * supervisor that died (the task then reads lost and is settled as lost on
 * disk). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs wait [--timeout DURATION] [--state-dir DIR] [--foreign-store] [ID|KEY...]\n"
    "       taskfs wait --all [--timeout DURATION] [--state-dir DIR] [--foreign-store]\n"
    "\n"
    "Waits until the task has ended, then exits with its exit code. A task that\n"
    "did not complete is described on stderr. Without a task, waits for the\n"
    "newest (a note on stderr names it); with several, for each of them; with\n"
    "--all, for every task that has not ended yet.\n"
    "\n"
    "  --all               every task that has not ended yet\n"
    "  --timeout DURATION  give up after DURATION (500ms, 10s, 5m, 1h; a bare\n"
    "                      number is seconds), exit 124\n"
    "  --state-dir DIR     use the store in DIR\n"
    "  --foreign-store     read another user's store (root), changing nothing in it\n"
    "  -h, --help          show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  The task's: completed 0; failed: its exit code, 128+N if killed by signal N,\n"
    "  127 if it could not start, 103 if it never ran because a task it starts\n"
    "  after (--after) did not complete; cancelled 130; lost 102 (its supervisor\n"
    "  died).\n"
    "  With several tasks the highest of their codes (0 only if all completed).\n"
    "  124 --timeout ran out, 100 usage, 101 no such task, 111 system failure.\n";

int cmd_wait(int argc, char **argv) {
  static const struct option opts[] = {
      {"timeout", required_argument, NULL, 't'},
      {"all", no_argument, NULL, 'a'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS_READ("wait", usage_text, "", opts);
  int64_t timeout_ms = -1;
  int c, code, flags = CLI_TASKS_NEWEST | CLI_TASKS_MANY;
  cli_tasks_t t;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 'a')
      flags = CLI_TASKS_ALL;
    else if ((code = cli_duration_opt("wait", "--timeout", optarg, &timeout_ms))) /* --timeout */
      return code;
  }
  if (c < 0)
    return o.code;
  if ((code = cli_open_tasks(&o, argc, argv, optind, flags, &t)))
    return code;
  if (!t.n && flags == CLI_TASKS_ALL)
    cli_error("wait", "note: every task has ended already; nothing to wait for");
  /* One deadline for them all: --timeout bounds the whole wait. */
  int64_t deadline = timeout_ms >= 0 ? tfs_now_ms() + timeout_ms : -1;
  for (size_t i = 0; i < t.n; i++) {
    int64_t left = deadline < 0 ? -1 : deadline - tfs_now_ms();
    int one = cli_wait_report("wait", t.store, t.ids[i], left < 0 && deadline >= 0 ? 0 : left);
    code = cli_worst_code(code, one);
    /* 130 is a cancelled task's code too: only a task still running
     * means the wait itself was interrupted. */
    if (one == CLI_EXIT_TIMEOUT || one == CLI_EXIT_SYSTEM ||
        (one == CLI_EXIT_CANCELLED && cli_say_runs_on("wait", t.store, t.ids[i])))
      break; /* out of time, interrupted, or the store fails: stop waiting */
  }
  cli_tasks_free(&t);
  return code;
}
