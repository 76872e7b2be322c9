/* taskfs pause|resume ID..., taskfs signal SIG ID...: control requests through
 * the store (tfs_control_request), as a stop request is: the task's
 * supervisor, which knows its worker's process group from memory, acts on
 * them. Nothing here signals a PID. pause and resume wait briefly for the
 * record to say it happened. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "taskfs/text.h"

#define CONFIRM_MS 5000 /* how long pause and resume wait to see it done */

static const char pause_usage[] =
    "usage: taskfs pause [--free-slot] [--state-dir DIR] ID|KEY...\n"
    "       taskfs resume [--state-dir DIR] ID|KEY...\n"
    "\n"
    "pause stops a running task's whole process tree (SIGSTOP) through its\n"
    "supervisor; the task reads paused and uses no CPU. resume continues it\n"
    "(SIGCONT). A paused task keeps its queue slot unless --free-slot gives it\n"
    "back (then resume waits for a slot, in turn with the other waiters).\n"
    "A stop request ('taskfs cancel') ends a paused task too. Several tasks are\n"
    "done in turn.\n"
    "\n"
    "  --free-slot      pause: the task counts as not running for its queue's limit\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 done (or requested, and said so), 100 usage (also: the task is not\n"
    "  running, or not paused for resume), 101 no such task, 111 system failure;\n"
    "  with several tasks the highest.\n";

static const char signal_usage[] =
    "usage: taskfs signal [--state-dir DIR] SIG ID|KEY...\n"
    "\n"
    "Sends signal SIG to a running task's whole process tree through its\n"
    "supervisor: the worker's process group and every process it started.\n"
    "SIG is a name or number as kill(1) takes it: TERM, SIGUSR1, HUP, 10,\n"
    "RTMIN+2. The supervisor keeps supervising: if the signal ends the worker,\n"
    "the task ends as it says (failed, killed by signal ...), or is restarted by\n"
    "its policy. To stop a task, use 'taskfs cancel'. Several tasks each get it.\n"
    "\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 requested, 100 usage (an unknown signal, a task that is not running),\n"
    "  101 no such task, 111 system failure; with several tasks the highest.\n";

static void who_am_i(char *buf, size_t len) {
  snprintf(buf, len, "cli pid %ld uid %ld", (long)getpid(), (long)getuid());
}

/* The request, and the words for a refusal. Returns an exit code. */
static int request(const char *verb, tfs_store_t *store, const char *id, const tfs_control_t *c) {
  char who[96];
  who_am_i(who, sizeof who);
  int err = tfs_control_request(store, id, c, who);
  if (!err)
    return CLI_EXIT_OK;
  tfs_record_t rec;
  int lr = tfs_task_load(store, id, &rec);
  const char *state = lr ? "unknown" : tfs_state_name(rec.state);
  if (err == TFS_EFINISHED)
    cli_error(verb, "task %s has ended (%s); there is nothing to %s", id, state, verb);
  else if (err == TFS_ENOTRUNNING && c->action == TFS_CONTROL_RESUME)
    cli_error(verb, "task %s is %s, not paused; there is nothing to resume", id, state);
  else if (err == TFS_ENOTRUNNING)
    cli_error(verb, "task %s is %s: nothing of it runs yet; 'taskfs cancel %s' stops it", id, state,
              id);
  else
    cli_error(verb, "cannot send the %s request to task %s in %s: %s", verb, id,
              tfs_store_path(store), tfs_strerror(err));
  tfs_record_free(&rec);
  return err == TFS_EFINISHED || err == TFS_ENOTRUNNING ? CLI_EXIT_USAGE : cli_exit_for(err);
}

/* Waits a moment for the supervisor to have done it, and says what is. */
static int confirm(const char *verb, tfs_store_t *store, const char *id, tfs_state_t want) {
  tfs_record_t rec;
  int err = tfs_task_wait_state(store, id, TFS_STATE_BIT(want), CONFIRM_MS, NULL, &rec);
  if (!err && rec.state == want)
    printf("%s %s%s%s\n", id, tfs_state_name(want), rec.reason ? ": " : "",
           rec.reason ? rec.reason : "");
  else if (!err)
    printf("%s %s%s%s\n", id, tfs_state_name(rec.state), rec.reason ? ": " : "",
           rec.reason ? rec.reason : "");
  else
    printf("%s requested for %s; it is still %s ('taskfs show %s' tells when it is done)\n", verb,
           id, tfs_state_name(rec.state), id);
  tfs_record_free(&rec);
  return cli_flush_stdout(verb, CLI_EXIT_OK);
}

static int pause_or_resume(const char *verb, int argc, char **argv) {
  static const struct option opts[] = {{"free-slot", no_argument, NULL, 'f'}, {NULL, 0, NULL, 0}};
  int pause = !strcmp(verb, "pause");
  cli_opts_t o = CLI_OPTS(verb, pause_usage, "", pause ? opts : NULL);
  tfs_control_t c = {.action = pause ? TFS_CONTROL_PAUSE : TFS_CONTROL_RESUME};
  cli_tasks_t t;
  int ch, code;
  while ((ch = cli_getopt(&o, argc, argv)) > 0)
    c.free_slot = 1;
  if (ch < 0)
    return o.code;
  if ((code = cli_open_tasks(&o, argc, argv, optind, CLI_TASKS_MANY, &t)))
    return code;
  for (size_t i = 0; i < t.n; i++) {
    int one = request(verb, t.store, t.ids[i], &c);
    if (!one)
      one = confirm(verb, t.store, t.ids[i], pause ? TFS_PAUSED : TFS_RUNNING);
    code = cli_worst_code(code, one);
  }
  cli_tasks_free(&t);
  return code;
}

int cmd_pause(int argc, char **argv) {
  return pause_or_resume("pause", argc, argv);
}

int cmd_resume(int argc, char **argv) {
  return pause_or_resume("resume", argc, argv);
}

int cmd_signal(int argc, char **argv) {
  cli_opts_t o = CLI_OPTS("signal", signal_usage, "", NULL);
  char q[96], name[TFS_SIGNAME_MAX];
  cli_tasks_t t;
  int ch, code;
  /* In order: "-9" or "-TERM" would read as options. */
  o.flags = CLI_OPT_IN_ORDER;
  while ((ch = cli_getopt(&o, argc, argv)) > 0)
    ;
  if (ch < 0)
    return o.code;
  if (optind >= argc)
    return cli_usage_error("signal", "which signal? give SIG and the task: taskfs signal TERM ID");
  const char *sig_arg = argv[optind];
  tfs_control_t c = {.action = TFS_CONTROL_SIGNAL, .sig = tfs_signal_parse(sig_arg)};
  if (c.sig < 0)
    return cli_usage_error("signal",
                           "'%s' is not a signal: give a name or number as kill -l lists them "
                           "(TERM, SIGUSR1, HUP, 10, RTMIN+2)",
                           cli_quote(sig_arg, q, sizeof q));
  if ((code = cli_open_tasks(&o, argc, argv, optind + 1, CLI_TASKS_MANY, &t)))
    return code;
  for (size_t i = 0; i < t.n; i++) {
    int one = request("signal", t.store, t.ids[i], &c);
    if (!one)
      printf("%s sent to the process tree of %s\n", tfs_signal_name(c.sig, name), t.ids[i]);
    code = cli_worst_code(code, one);
  }
  cli_tasks_free(&t);
  return code ? code : cli_flush_stdout("signal", CLI_EXIT_OK);
}
