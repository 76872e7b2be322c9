/* Step two of a start (tfs_task_start_launch) for a face on the hub's
 * loop (the MCP server, A2A in `taskfs serve`): it blocks for up to its
 * wait, so it runs on the loop's thread pool, with a store handle of its
 * own (a handle is not shared with a thread that may refresh it), and the
 * face hears the outcome back on the loop's thread. The hub holds it
 * meanwhile, so that no end leaves the task queued. One place for the
 * rule that a task is never left queued: without a handle for the thread,
 * the task is failed at once, in words that say which face could not
 * launch it. */
#include <errno.h>
#include <stdlib.h>

#include "live/internal.h"

struct launch_job {
  uv_work_t work;
  live_hub_t *hub;
  tfs_store_t *store; /* the thread's own handle */
  tfs_launch_opts_t opts;
  tfs_start_t *st;
  live_launch_fn done;
  void *arg;
  int err;
};

static void job_work(uv_work_t *work) {
  struct launch_job *j = work->data;
  j->err = tfs_task_start_launch(j->store, &j->opts, j->st);
}

static void job_done(uv_work_t *work, int status) {
  struct launch_job *j = work->data;
  live_hub_t *hub = j->hub;
  tfs_store_close(j->store);
  j->done(j->arg, j->err);
  free(j);
  live_hold(hub, -1);
}

int live_launch(live_hub_t *hub, const tfs_launch_opts_t *opts, tfs_start_t *st, const char *who,
                live_launch_fn done, void *arg) {
  tfs_store_t *store = live_store_handle(hub);
  struct launch_job *j = calloc(1, sizeof *j);
  int err = j ? tfs_store_reopen(store, &j->store) : -ENOMEM;
  if (err) {
    tfs_task_fail_queued(store, st->id, 127, "%s could not open the store to launch it: %s", who,
                         tfs_strerror(err));
    free(j);
    return err;
  }
  j->hub = hub;
  j->opts = *opts;
  j->st = st;
  j->done = done;
  j->arg = arg;
  j->work.data = j;
  live_hold(hub, 1);
  /* uv_queue_work fails only for arguments that are wrong; run it here
   * then rather than leave the task queued. */
  if (uv_queue_work(hub->loop, &j->work, job_work, job_done)) {
    job_work(&j->work);
    job_done(&j->work, 0);
  }
  return 0;
}
