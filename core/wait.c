/* Waiting for a task's end, for every face: `taskfs wait`, `run --wait`,
 * the MCP server's long-polls, tests.
 *
 * Every record change is a rename into the task directory, which the watch
 * reports at once. A supervisor that dies changes no file, only releases
 * its lock, so the record is also read again every tick: a task whose
 * supervisor is gone reads as lost, and is then settled (written as lost,
 * once, by whoever gets there first). tfs_task_ended() is that look, for
 * waiters that do their own waiting (an event loop). */
#include "core/internal.h"

#include <string.h>

/* Loads the record (the lost reading included) and settles a lost one, so
 * that what is returned is what is stored. -ENOENT: being created. */
static int load_settled(tfs_store_t *store, const char *id, tfs_record_t *rec) {
  int err = tfs__load_checked(store, id, rec);
  if (err || rec->state != TFS_LOST)
    return err;
  tfs_task_settle_lost(store, id);
  tfs_record_free(rec);
  return tfs__load_checked(store, id, rec);
}

/* The one look every waiter takes, blocking (tfs_task_wait_end) or not (a
 * face's event loop): the record as stored, lost settled, and whether that
 * is an end. */
int tfs_task_ended(tfs_store_t *store, const char *id, tfs_record_t *rec_out) {
  tfs_record_t rec;
  if (rec_out)
    tfs_record_init(rec_out);
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  int err = load_settled(store, id, &rec);
  if (err == -ENOENT)
    /* A task dir caught being created has no record for a moment; one
     * that never gets it is no task. */
    return tfs_now_ms() - tfs__id_time_ms(id) < TFS__CREATING_GRACE_MS ? -EAGAIN : TFS_ENOTASK;
  if (err)
    return err;
  int ended = tfs_state_terminal(rec.state);
  if (rec_out) {
    tfs_record_free(rec_out);
    *rec_out = rec;
  } else {
    tfs_record_free(&rec);
  }
  return ended;
}

int tfs_task_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms,
                      const sigset_t *sigmask, tfs_record_t *rec_out) {
  tfs_watch_t *w;
  if (rec_out)
    tfs_record_init(rec_out);
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  int err = tfs_watch_open(store, &w);
  if (err)
    return err;
  tfs_watch_add(w, id, TFS_WATCH_STATE); /* else the tick alone watches */
  int64_t deadline = timeout_ms < 0 ? INT64_MAX : tfs_now_ms() + timeout_ms;
  for (;;) {
    tfs_record_t rec;
    err = tfs_task_ended(store, id, &rec);
    if (err >= 0 && rec_out) {
      tfs_record_free(rec_out);
      *rec_out = rec;
    } else {
      tfs_record_free(&rec);
    }
    if (err == 1) {
      err = 0;
      break;
    }
    if (err < 0 && err != -EAGAIN)
      break;
    int64_t left = deadline - tfs_now_ms();
    if (left <= 0) {
      err = -ETIMEDOUT;
      break;
    }
    int tick = tfs_watch_tick_ms(w);
    err = tfs_watch_wait(w, left < tick ? left : tick, sigmask, -1, NULL, NULL);
    if (err == -EINTR)
      break;
  }
  tfs_watch_close(w);
  return err;
}
