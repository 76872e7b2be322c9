/* taskfs rm ID...: deletes tasks that have ended (tfs_task_forget, which
 * refuses a live one: a running, paused or waiting task stays). Each task
 * is said; the exit code tells whether every one went. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs rm [--state-dir DIR] ID|KEY...\n"
    "\n"
    "Deletes tasks that have ended: their directory, transcript and key. A task\n"
    "that is still running, paused or waiting is refused ('taskfs cancel' stops\n"
    "it first). IDs may be unique prefixes of at least 4 characters.\n"
    "\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 every task deleted, 100 usage (also: a task has not ended), 101 no such\n"
    "  task, 111 system failure; with several, the first failure's code.\n";

/* How long rm waits for a supervisor that has saved its task's end. */
#define ENDING_GRACE_MS 10000

/* tfs_task_forget, waiting (up to ENDING_GRACE_MS) while the task's record
 * says it ended but its supervisor still holds the lock: that supervisor
 * is past its last decision and only finishing (the task number made
 * durable, the sentinel, the cgroup), and `taskfs wait` returns at the
 * ended record, so `wait; rm` met it and was refused ("completed, not
 * ended"). A task whose record says it is live is refused at once. */
static int forget_once_ended(tfs_store_t *store, const char *id) {
  int err = tfs_task_forget(store, id);
  for (int waited = 0; err == -EBUSY && waited < ENDING_GRACE_MS; waited += 10) {
    tfs_record_t rec;
    if (tfs_task_load(store, id, &rec))
      break;
    int ended = tfs_state_terminal(rec.state);
    tfs_record_free(&rec);
    if (!ended)
      break;
    usleep(10 * 1000);
    err = tfs_task_forget(store, id);
  }
  return err;
}

/* One task; returns an exit code. */
static int rm_one(tfs_store_t *store, const char *arg) {
  char id[TFS_ID_MAX + 1];
  int code = cli_resolve_task("rm", store, arg, id);
  if (code)
    return code;
  int err = forget_once_ended(store, id);
  if (!err) {
    printf("deleted %s\n", id);
    return CLI_EXIT_OK;
  }
  if (err == -EBUSY) {
    tfs_record_t rec;
    int lr = tfs_task_load(store, id, &rec);
    cli_error("rm", "task %s is %s, not ended: it stays ('taskfs cancel %s' stops it)", id,
              lr ? "live" : tfs_state_name(rec.state), id);
    tfs_record_free(&rec);
    return CLI_EXIT_USAGE;
  }
  cli_error("rm", "cannot delete task %s from %s: %s", id, tfs_store_path(store),
            tfs_strerror(err));
  return cli_exit_for(err);
}

int cmd_rm(int argc, char **argv) {
  cli_opts_t o = CLI_OPTS("rm", usage_text, "", NULL);
  tfs_store_t *store;
  int c, code, first_bad = 0;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    ;
  if (c < 0)
    return o.code;
  if (optind >= argc)
    return cli_usage_error("rm", "which tasks? give their IDs or KEYs ('taskfs ls' lists them)");
  if ((code = cli_open_store(&o, 0, &store)))
    return code;
  for (int i = optind; i < argc; i++) {
    code = rm_one(store, argv[i]);
    if (code && !first_bad)
      first_bad = code;
  }
  if (store)
    tfs_store_close(store);
  return cli_flush_stdout("rm", first_bad);
}
