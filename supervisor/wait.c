/* Waiting for a task's end, for `taskfs wait`, `run --wait` and any face
 * that long-polls.
 *
 * Every record change is a rename into the task directory, which inotify
 * reports at once. A supervisor that dies changes no file, only releases
 * its lock, so the record is also read again every 250 ms: a task whose
 * lock is free reads as lost, and is then settled (written as lost).
 */
#include "supervisor/internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define RECHECK_MS 250

int tfs_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms, tfs_record_t *rec_out) {
  if (rec_out)
    tfs_record_init(rec_out);
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/tasks/%s", tfs_store_path(store), id);
  int ino = getenv("TASKFS_NO_INOTIFY") ? -1 : inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (ino >= 0 && inotify_add_watch(ino, dir, IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF) < 0) {
    close(ino);
    ino = -1;
  }
  int64_t deadline = timeout_ms < 0 ? INT64_MAX : tfs_now_ms() + timeout_ms;
  int err;
  for (;;) {
    tfs_record_t rec;
    memset(&rec, 0, sizeof rec); /* the loader initializes it */
    err = tfs_task_load(store, id, &rec);
    if (err == 0 && rec.state == TFS_LOST) {
      /* Written once by whoever gets there first; read it back as stored. */
      tfs_task_settle_lost(store, id);
      tfs_record_free(&rec);
      memset(&rec, 0, sizeof rec);
      err = tfs_task_load(store, id, &rec);
    }
    int ended = err == 0 && tfs_state_terminal(rec.state);
    if (err == 0 && rec_out) {
      tfs_record_free(rec_out);
      *rec_out = rec;
    } else {
      tfs_record_free(&rec);
    }
    /* A record caught being created reads as absent or unparsable for a
     * moment; anything else is final. */
    if (err && err != -ENOENT && err != TFS_ECORRUPT)
      break;
    if (ended) {
      err = 0;
      break;
    }
    int64_t left = deadline - tfs_now_ms();
    if (left <= 0) {
      err = -ETIMEDOUT;
      break;
    }
    struct pollfd pfd = {.fd = ino, .events = POLLIN};
    int ms = left < RECHECK_MS ? (int)left : RECHECK_MS;
    if (poll(ino >= 0 ? &pfd : NULL, ino >= 0, ms) > 0) {
      char buf[4096];
      while (read(ino, buf, sizeof buf) > 0)
        ;
    }
  }
  if (ino >= 0)
    close(ino);
  return err;
}
