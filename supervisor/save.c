/* Saving the record: at once on every state change, the progress counters
 * by a one-shot timer that output arms, aliveAt by a slow periodic check,
 * and the final save that records the end.
 *
 * Only the final save is fsynced (tfs_task_save: an end must survive a
 * power loss), but every save is a file written and renamed, so an idle
 * supervisor must not save often: a thousand idle tasks would mean
 * thousands of writes a second. A
 * preallocated space-reserve file is deleted just before the final save,
 * so the end lands even when the worker's output filled the disk.
 */
#include "supervisor/sup.h"
#include "taskfs/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SAVE_TICK_MS 250     /* counters are saved at most this often */
#define ALIVE_EVERY_MS 30000 /* aliveAt is refreshed at least this often */
/* Space held back for the final record (TFS_FILE_SPACE_RESERVE): if the
 * worker's output fills the disk, this file is deleted before the last
 * save so the end still lands. */
#define RESERVE_BYTES (128 * 1024)
#define RESERVE_MIN 4096 /* one page: what the final record needs at least */

static void on_save_tick(uv_timer_t *t);

void sup_save(sup_t *s) {
  sup_save_flags(s, 0);
}

/* The counter's figures (lines, the bytes they are of, important lines
 * seen), which its thread moves on meanwhile. */
static void counts(sup_t *s, int64_t *lines, int64_t *bytes, size_t *important) {
  sup_counter_lock(&s->cap.cnt);
  *lines = s->cap.cnt.lines;
  *bytes = s->cap.cnt.counted;
  *important = s->rec.important.total;
  sup_counter_unlock(&s->cap.cnt);
}

void sup_save_flags(sup_t *s, unsigned flags) {
  int64_t now = tfs_now_ms();
  /* The record shows what the counter has worked on: lines and bytes of
   * the same stretch, and a tracker it is not feeding meanwhile (it waits
   * for the save, never the capture). Exact at the end (sup_finish waits
   * for the counter first). */
  sup_counter_lock(&s->cap.cnt);
  s->rec.lines = s->cap.cnt.lines;
  s->rec.bytes = s->cap.cnt.counted;
  s->rec.lost_bytes = s->cap.lost_bytes;
  s->rec.lost_lines = s->cap.lost_lines;
  s->rec.lost_first_ms = s->cap.lost_first_ms;
  s->rec.lost_last_ms = s->cap.lost_last_ms;
  s->rec.alive_ms = now;
  /* While a worker runs, the record shows what it used so far. */
  tfs_usage_t total = s->rec.usage;
  if (s->phase == PH_RUNNING || s->phase == PH_DRAINING)
    sup_usage_live(s, &s->rec.usage);
  int err = tfs_task_save_flags(s->store, &s->rec, flags);
  size_t important = s->rec.important.total;
  sup_counter_unlock(&s->cap.cnt);
  s->rec.usage = total;
  if (err) {
    /* Retried on the next tick; logged at most every 10 s. */
    s->save_failed = 1;
    if (s->phase != PH_DONE && !uv_is_active((uv_handle_t *)&s->save_timer))
      uv_timer_start(&s->save_timer, on_save_tick, SAVE_TICK_MS, 0);
    if (now - s->last_log_ms > 10000) {
      sup_log(s, "cannot save the record: %s (will retry)", tfs_strerror(err));
      s->last_log_ms = now;
    }
    return;
  }
  s->save_failed = 0;
  s->last_save_ms = now;
  s->saved_lines = s->rec.lines;
  s->saved_bytes = s->rec.bytes;
  s->saved_important = (int64_t)important;
}

/* Counters are saved by a one-shot timer armed by output (sup_mark_dirty):
 * at most one save per SAVE_TICK_MS whatever the output rate, and no
 * wake-up at all while the worker is quiet (a thousand idle supervisors
 * must cost next to nothing). */
static void on_save_tick(uv_timer_t *t) {
  sup_t *s = t->data;
  sup_capture_flush_side(&s->cap);
  if (s->phase == PH_DONE)
    return;
  int64_t lines, bytes;
  size_t important;
  counts(s, &lines, &bytes, &important);
  if (s->save_failed || lines != s->saved_lines || bytes != s->saved_bytes ||
      (int64_t)important != s->saved_important)
    sup_save(s);
  /* Retried on the next tick; so is a save of figures the counter was
   * still behind on. */
  if (s->save_failed || s->saved_bytes < s->cap.bytes)
    uv_timer_start(&s->save_timer, on_save_tick, SAVE_TICK_MS, 0);
}

void sup_mark_dirty(sup_t *s) {
  if (s->phase != PH_DONE && !uv_is_active((uv_handle_t *)&s->save_timer))
    uv_timer_start(&s->save_timer, on_save_tick, SAVE_TICK_MS, 0);
}

/* aliveAt: refreshed when no other save happened for ALIVE_EVERY_MS. */
static void on_alive_tick(uv_timer_t *t) {
  sup_t *s = t->data;
  if (s->phase != PH_DONE && tfs_now_ms() - s->last_save_ms >= ALIVE_EVERY_MS - SAVE_TICK_MS)
    sup_save(s);
}

void sup_save_init(sup_t *s) {
  uv_timer_init(&s->loop, &s->save_timer);
  uv_timer_init(&s->loop, &s->alive_timer);
  s->save_timer.data = s->alive_timer.data = s;
  uv_timer_start(&s->alive_timer, on_alive_tick, ALIVE_EVERY_MS, ALIVE_EVERY_MS);
}

/* The reserve adapts to the room there is: the full size when it fits,
 * else as little as the final record needs (a page holds a usual record),
 * so that on a small store (a 64 KiB tmpfs) the end still lands. A failed
 * size may leave blocks allocated on some filesystems: truncated before
 * the next, smaller try. */
int sup_reserve_make(sup_t *s) {
  static const off_t sizes[] = {RESERVE_BYTES, 4 * RESERVE_MIN, RESERVE_MIN};
  int fd TFS_AUTOCLOSE =
      sup_open_file(s->store, s->id, TFS_FILE_SPACE_RESERVE, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd < 0)
    return fd == -ENOSPC || fd == -EDQUOT ? fd : 0; /* no reserve file: the end is tried anyway */
  int err = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    err = posix_fallocate(fd, 0, sizes[i]);
    if (!err) {
      if (i)
        sup_log(s, "the store has little room: %lld bytes held for the final record",
                (long long)sizes[i]);
      return 0;
    }
    if (err != ENOSPC && err != EDQUOT)
      break;
    if (ftruncate(fd, 0) < 0)
      break;
  }
  if (err == ENOSPC || err == EDQUOT)
    return -err;
  /* A filesystem without fallocate (EOPNOTSUPP): the end is tried anyway. */
  sup_log(s, "cannot reserve space for the final record: %s", strerror(err));
  return 0;
}

void sup_reserve_release(sup_t *s) {
  tfs_task_file_remove(s->store, s->id, TFS_FILE_SPACE_RESERVE);
}

/* Adds to the reason what the transcript lost, if anything (the counts are
 * in the record too: transcript.lostBytes, lostLines). */
static void note_dropped(sup_t *s, char *reason, size_t size) {
  if (!s->cap.lost_bytes)
    return;
  size_t l = strlen(reason);
  snprintf(reason + l, size - l,
           "; %" PRId64 " bytes (%" PRId64 " lines) of output were lost: the transcript could "
           "not be written (%s)",
           s->cap.lost_bytes, s->cap.lost_lines,
           s->cap.last_err == -ENOSPC ? "the disk is full" : strerror(-s->cap.last_err));
}

/* The one write that must land: retried for 5 s. */
static void save_final(sup_t *s) {
  for (int attempt = 0; attempt < 50; attempt++) {
    sup_save(s);
    if (!s->save_failed)
      break;
    usleep(100 * 1000);
  }
}

static void close_walk(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

/* Records the task's end, clears the stop request, and lets the loop run
 * out by closing every handle. */
void sup_finish(sup_t *s, tfs_state_t state, const char *fmt, ...) {
  if (s->phase == PH_DONE)
    return;
  s->phase = PH_DONE;
  char reason[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  sup_pipes_eof(s);
  sup_capture_sync(&s->cap); /* every line counted and classified */
  sup_capture_flush_side(&s->cap);
  note_dropped(s, reason, sizeof reason);
  sup_capture_release(&s->cap);
  s->rec.state = state;
  s->rec.ended_ms = tfs_now_ms();
  tfs_record_set_reason(&s->rec, "%s", reason);
  /* The tree is gone and the end is stamped: the queue slot goes back
   * now, so the next task's start waits neither for this one's cgroup
   * reads and file removals nor for its fsyncs (a task that ended never
   * holds a slot past its end time). */
  sup_sched_finish(s);
  sup_limits_finish(s); /* its cgroup's peak, then the cgroup */
  sup_reserve_release(s);
  /* Gone before the record says ended, so nobody sees an ended task with
   * a doorbell (a later ring gets ENOENT, which is fine). */
  sup_doorbell_close(s);
  if (s->stopping) {
    free(s->rec.cancel_by);
    s->rec.cancel_by = strdup(s->stop_by);
    s->rec.cancel_ms = s->stop_at;
  }
  save_final(s);
  sup_log(s, "task %s: %s", tfs_state_name(state), reason);
  /* The request has been acted on: a later run under the same key must not
   * inherit it. */
  tfs_cancel_clear(s->store, s->id);
  uv_walk(&s->loop, close_walk, NULL);
}
