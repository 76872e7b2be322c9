/* tfs_wait_end(): the name the supervisor library has always exported for
 * waiting on a task's end. The mechanism is core's (tfs_task_wait_end);
 * this keeps the old name working until its callers move over. */
#include "supervisor/internal.h"

int tfs_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms, tfs_record_t *rec_out) {
  return tfs_task_wait_end(store, id, timeout_ms, NULL, rec_out);
}
