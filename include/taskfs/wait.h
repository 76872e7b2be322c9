/* taskfs: waiting for a task's end or state, over a watch (core/wait.c;
 * included by taskfs.h). */
#ifndef TASKFS_WAIT_H
#define TASKFS_WAIT_H

#include <signal.h>
#include <stdint.h>

#include "taskfs/record.h"
#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Waits until the task has ended (completed, failed, cancelled or lost)
 * and fills rec_out (may be NULL; initialized by the call, free it with
 * tfs_record_free) with the record as last read. A task read as lost is
 * settled on the way (written as lost once), so the record returned is
 * what is stored. timeout_ms < 0: no limit. sigmask as for
 * tfs_watch_wait(): a signal it lets through ends the wait with -EINTR.
 * Returns 0 once ended, -ETIMEDOUT, -EINTR, or another error (TFS_ENOTASK:
 * the task is gone). */
int tfs_task_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms,
                      const sigset_t *sigmask, tfs_record_t *rec_out);
/* The same, also returning 0 as soon as the task is in one of states
 * (TFS_STATE_BIT()s: a pause or a resume taking effect). */
int tfs_task_wait_state(tfs_store_t *store, const char *id, unsigned states, int64_t timeout_ms,
                        const sigset_t *sigmask, tfs_record_t *rec_out);
/* The look tfs_task_wait_end() takes each time, without waiting, for a
 * face that waits on its own event loop (a watch under a uv_poll_t): the
 * record as stored, a task read as lost settled on the way. rec_out (may
 * be NULL; initialized by the call, free it with tfs_record_free) gets it.
 * Returns 1 if the task has ended, 0 if not yet, -EAGAIN for a task dir
 * still being created (no record yet: look again), or another error
 * (TFS_ENOTASK: no such task, TFS_ECORRUPT). */
int tfs_task_ended(tfs_store_t *store, const char *id, tfs_record_t *rec_out);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_WAIT_H */
