/* taskfs cancel [ID|KEY...|--all]: records a stop request in the store (the cancel
 * file); the task's supervisor sees it at once and stops the whole process
 * tree. Nothing here kills by PID. A task that has already ended is not an
 * error: the verb says so and exits 0, so scripts can cancel idempotently. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs cancel [-w] [--timeout DURATION] [--state-dir DIR] [ID|KEY...]\n"
    "       taskfs cancel --all [-y] [-w] [--timeout DURATION] [--state-dir DIR]\n"
    "\n"
    "Requests a stop of a task: its supervisor stops the whole process tree\n"
    "(SIGTERM, a grace period, then SIGKILL) and records the task as cancelled.\n"
    "A task that has already ended is left alone (exit 0). Without a task, the\n"
    "newest (a note on stderr names it); with several, each of them.\n"
    "\n"
    "  --all               every task that has not ended; asks first on a terminal,\n"
    "                      and needs -y when stdin is not one\n"
    "  -y, --yes           --all: do not ask\n"
    "  -w, --wait          wait until the tasks have ended and print their final state\n"
    "  --timeout DURATION  with --wait: give up after DURATION (500ms, 10s, 5m, 1d;\n"
    "                      a bare number is seconds), exit 124\n"
    "  --state-dir DIR     use the store in DIR\n"
    "  -h, --help          show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 stop requested (or already ended), 100 usage (also --all without -y when\n"
    "  stdin is not a terminal), 101 no such task, 111 system failure, 124 --timeout\n"
    "  ran out, 130 interrupted while waiting. With several tasks the highest.\n";

static void print_end(const tfs_record_t *rec) {
  printf("%s %s", rec->id, tfs_state_name(rec->state));
  if (rec->reason && *rec->reason)
    printf(": %s", rec->reason);
  putchar('\n');
}

/* Records the stop request and returns an exit code. A task that has
 * already ended is not an error: it is said so, and *ended set. */
static int request_stop(tfs_store_t *store, const char *id, int *ended) {
  char who[96];
  tfs_record_t rec;
  snprintf(who, sizeof who, "cli pid %ld uid %ld", (long)getpid(), (long)getuid());
  int rc = tfs_cancel_request(store, id, who);
  if (rc == TFS_EFINISHED) {
    rc = tfs_task_load(store, id, &rec);
    if (rc < 0)
      printf("%s already ended; nothing to stop\n", id);
    else
      printf("%s already ended (%s); nothing to stop\n", id, tfs_state_name(rec.state));
    tfs_record_free(&rec);
    *ended = 1;
    return CLI_EXIT_OK;
  }
  if (rc < 0) {
    cli_error("cancel", "cannot record a stop request for %s in %s: %s", id, tfs_store_path(store),
              tfs_strerror(rc));
    return cli_exit_for(rc);
  }
  printf("stop requested for %s\n", id);
  fflush(stdout);
  return CLI_EXIT_OK;
}

/* --wait: waits for the end the request brings and prints it. */
static int wait_stopped(tfs_store_t *store, const char *id, int64_t timeout_ms) {
  tfs_record_t rec;
  int code = CLI_EXIT_OK, rc = cli_wait_end(store, id, timeout_ms, &rec);
  if (rc == 0) {
    print_end(&rec);
  } else if (rc == -ETIMEDOUT) {
    char then[128];
    snprintf(then, sizeof then, "the stop request stays recorded ('taskfs wait %s' waits longer)",
             id);
    cli_timeout_error("cancel", id, &rec, timeout_ms, then);
    code = CLI_EXIT_TIMEOUT;
  } else if (rc == -EINTR) {
    code = CLI_EXIT_CANCELLED;
  } else {
    cli_error("cancel", "cannot read the record of %s while waiting: %s", id, tfs_strerror(rc));
    code = cli_exit_for(rc);
  }
  tfs_record_free(&rec); /* cli_wait_end leaves it freeable on every path */
  return code;
}

/* --all: asks before stopping every task that has not ended. 0 to go on,
 * else the exit code. */
static int confirm_all(const cli_tasks_t *t, int yes) {
  char q[96];
  if (!t->n) {
    printf("no task is running or queued; nothing to stop\n");
    return -1;
  }
  snprintf(q, sizeof q, "stop %zu task%s that %s not ended?", t->n, t->n == 1 ? "" : "s",
           t->n == 1 ? "has" : "have");
  int ok = cli_confirm("cancel", q, yes);
  if (ok < 0)
    return CLI_EXIT_USAGE;
  if (!ok) {
    printf("nothing stopped\n");
    return -1;
  }
  return 0;
}

int cmd_cancel(int argc, char **argv) {
  static const struct option opts[] = {
      {"wait", no_argument, NULL, 'w'},
      {"timeout", required_argument, NULL, 't'},
      {"all", no_argument, NULL, 'a'},
      {"yes", no_argument, NULL, 'y'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS("cancel", usage_text, "wy", opts);
  int wait = 0, yes = 0, flags = CLI_TASKS_NEWEST | CLI_TASKS_MANY;
  int64_t timeout_ms = -1;
  cli_tasks_t t;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 'w')
      wait = 1;
    else if (c == 'a')
      flags = CLI_TASKS_ALL;
    else if (c == 'y')
      yes = 1;
    else if ((code = cli_duration_opt("cancel", "--timeout", optarg, &timeout_ms)))
      return code; /* --timeout */
  }
  if (c < 0)
    return o.code;
  if (timeout_ms >= 0 && !wait)
    return cli_usage_error("cancel", "--timeout only makes sense with --wait");
  if (yes && flags != CLI_TASKS_ALL)
    return cli_usage_error("cancel", "-y only makes sense with --all");
  if ((code = cli_open_tasks(&o, argc, argv, optind, flags, &t)))
    return code;
  if (flags == CLI_TASKS_ALL && (code = confirm_all(&t, yes))) {
    cli_tasks_free(&t);
    return code < 0 ? cli_flush_stdout("cancel", CLI_EXIT_OK) : code;
  }
  int *ended = calloc(t.n + 1, sizeof *ended);
  for (size_t i = 0; i < t.n && ended; i++)
    code = cli_worst_code(code, request_stop(t.store, t.ids[i], &ended[i]));
  int64_t deadline = timeout_ms >= 0 ? tfs_now_ms() + timeout_ms : -1;
  for (size_t i = 0; i < t.n && ended && wait; i++) {
    if (ended[i])
      continue;
    int64_t left = deadline < 0 ? -1 : deadline - tfs_now_ms();
    int one = wait_stopped(t.store, t.ids[i], deadline >= 0 && left < 0 ? 0 : left);
    code = cli_worst_code(code, one);
    if (one == CLI_EXIT_TIMEOUT || one == CLI_EXIT_CANCELLED) /* out of time, or Ctrl-C */
      break;
  }
  if (!ended)
    code = CLI_EXIT_SYSTEM;
  free(ended);
  cli_tasks_free(&t);
  return code ? code : cli_flush_stdout("cancel", code);
}
