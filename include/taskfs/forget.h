/* taskfs: removing tasks: one (forget) or many by rules (prune)
 * (core/forget.c, prune.c; included by taskfs.h). */
#ifndef TASKFS_FORGET_H
#define TASKFS_FORGET_H

#include <stddef.h>
#include <stdint.h>

#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Deletes a task's directory and its key. Only a task that has ended
 * (completed, failed, cancelled, lost) or whose record is corrupt is
 * deleted, and only while this call holds its lock (taken without
 * waiting): -EBUSY for a live supervisor, a task still queued (its
 * supervisor may be on its way) and a directory still being created (no
 * record yet, younger than 5 s). TFS_ENOTASK if there is no such task. */
int tfs_task_forget(tfs_store_t *store, const char *id);
/* Deletes the oldest tasks so that at most keep remain, by the rules of
 * tfs_task_forget(): a task that has not ended is never deleted, so more
 * than keep remain while tasks run or wait. Returns the number deleted. */
int tfs_task_prune(tfs_store_t *store, size_t keep);
/* Prune by rules: the tasks that match every rule given go, by the rules
 * of tfs_task_forget() (a live task never does). */
typedef struct {
  unsigned states;       /* TFS_STATE_BIT()s; 0: any state that has ended */
  int64_t older_than_ms; /* > 0: only tasks that ended (else were created)
                            longer ago than this */
  size_t keep;           /* of the matching tasks the newest keep stay; SIZE_MAX: none */
} tfs_prune_opts_t;
int tfs_task_prune_opts(tfs_store_t *store, const tfs_prune_opts_t *opts);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_FORGET_H */
