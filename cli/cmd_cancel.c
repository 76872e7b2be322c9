/* taskfs cancel ID|KEY: records a stop request in the store (the cancel
 * file); the task's supervisor sees it at once and stops the whole process
 * tree. Nothing here kills by PID. A task that has already ended is not an
 * error: the verb says so and exits 0, so scripts can cancel idempotently. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs cancel [-w|--wait] [--timeout DURATION] [--state-dir DIR] ID|KEY\n"
    "\n"
    "Requests a stop of a task: its supervisor stops the whole process tree\n"
    "(SIGTERM, a grace period, then SIGKILL) and records the task as cancelled.\n"
    "A task that has already ended is left alone (exit 0).\n"
    "\n"
    "  -w, --wait          wait until the task has ended and print its final state\n"
    "  --timeout DURATION  with --wait: give up after DURATION (500ms, 10s, 5m, 1d;\n"
    "                      a bare number is seconds), exit 124\n"
    "  --state-dir DIR     use the store in DIR\n"
    "  -h, --help          show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 stop requested (or already ended), 100 usage, 101 no such task, 111 system\n"
    "  failure, 124 --timeout ran out, 130 interrupted while waiting.\n";

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

int cmd_cancel(int argc, char **argv) {
  static const struct option opts[] = {
      {"wait", no_argument, NULL, 'w'},
      {"timeout", required_argument, NULL, 't'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS("cancel", usage_text, "w", opts);
  int wait = 0, ended = 0;
  int64_t timeout_ms = -1;
  char id[TFS_ID_MAX + 1];
  tfs_store_t *store;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 'w')
      wait = 1;
    else if ((code = cli_duration_opt("cancel", "--timeout", optarg, &timeout_ms)))
      return code; /* --timeout */
  }
  if (c < 0)
    return o.code;
  if (timeout_ms >= 0 && !wait)
    return cli_usage_error("cancel", "--timeout only makes sense with --wait");
  code = cli_open_one_task(&o, argc, argv, optind, &store, id);
  if (code)
    return code;
  code = request_stop(store, id, &ended);
  if (!code && !ended && wait)
    code = wait_stopped(store, id, timeout_ms);
  tfs_store_close(store);
  return code ? code : cli_flush_stdout("cancel", code);
}
