/* taskfs: stop requests and the doorbell that rings them (core/cancel.c;
 * included by taskfs.h). */
#ifndef TASKFS_CANCEL_H
#define TASKFS_CANCEL_H

#include <stddef.h>
#include <stdint.h>

#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The doorbell (TFS_FILE_DOORBELL) is a FIFO the supervisor reads; a stop
 * request writes one byte into it after the cancel file, so that no
 * inotify watch is needed to notice the request at once. */

/* Records a stop request (who: free text, e.g. "cli pid 123 uid 0"), then
 * rings the task's doorbell (never writing to anything but a FIFO).
 * TFS_EFINISHED if the task has already ended: nothing is left written,
 * also when it ended on its own between the check and the write (the
 * request then removes the file it wrote, if it is still its own). */
int tfs_cancel_request(tfs_store_t *store, const char *id, const char *who);
/* 1 if a stop is requested (fills who/when if not NULL), 0 if not. For a
 * task that has ended, only the request the record says ended it counts:
 * a stale cancel file beside an end of its own reads as 0. */
int tfs_cancel_query(tfs_store_t *store, const char *id, char *who, size_t wholen, int64_t *at_ms);
/* What a face shows as the task's stop request: 1 if one is pending (as
 * tfs_cancel_query), or the task has ended by one (the request its record
 * names, also once the supervisor has consumed the cancel file), else 0. */
int tfs_cancel_status(tfs_store_t *store, const char *id, char *who, size_t wholen, int64_t *at_ms);
int tfs_cancel_clear(tfs_store_t *store, const char *id);
/* The supervisor's end of the doorbell: a new FIFO in place of whatever
 * had the name, opened for reading and writing, non-blocking. Returns the
 * fd, or a negative error (then stop requests are noticed by a poll). The
 * supervisor removes it at its end (tfs_task_file_remove). */
int tfs_doorbell_open(tfs_store_t *store, const char *id);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_CANCEL_H */
