/* The store watch: wakes poll()/epoll() waiters on open transcripts.
 *
 * One core watch (tfs_watch_t) serves the whole mount: its fd sits under a
 * uv_poll on the same libuv loop as the FUSE session, and each drain
 * reports the tasks that changed. A task is on the watch only while one of
 * its transcripts is open through the mount, so the cost follows the
 * number of readers, not the number of tasks. A growing transcript, a
 * writer closing it, a new record (the task may have ended) or a vanished
 * task directory wakes every poll handle stored for that task; the kernel
 * then polls again and gets the fresh readiness. The core watch never asks
 * for the events a reader causes (opens, reads, closes without writing),
 * so the mount's own reads can never wake it in a loop.
 *
 * What no event shows (a supervisor that died: its task now reads lost, so
 * its transcript is at EOF; a task the watch could not add; no inotify at
 * all) is caught by the tick: while a poll handle waits, every
 * tfs_watch_tick_ms() each waiting handle's readiness is checked again,
 * and only a handle that is ready now is woken. */
#include <errno.h>
#include <string.h>
#include <syslog.h>

#include "fs/fs.h"

/* Wakes every poll handle stored on the task's open transcripts. */
static void wake_task(mnt_t *m, size_t idx) {
  for (tfile_t *f = m->tasks.v[idx].files; f; f = f->next) {
    if (f->ph) {
      fuse_lowlevel_notify_poll(f->ph);
      fuse_pollhandle_destroy(f->ph);
      f->ph = NULL;
    }
  }
}

/* One task the watch reports changed (id NULL only for tasks/ itself,
 * which the mount does not watch). */
static void on_change(const char *id, unsigned what, void *arg) {
  mnt_t *m = arg;
  size_t idx;
  if (id && fs_tab_find(&m->tasks, id, &idx) == 0)
    wake_task(m, idx);
}

static void on_events(uv_poll_t *h, int status, int events) {
  mnt_t *m = h->data;
  tfs_watch_drain(m->watch.w, on_change, m);
}

/* The tick: wakes the waiting handles that are ready now, and stops once
 * none waits. */
static void on_tick(uv_timer_t *t) {
  mnt_t *m = t->data;
  int waiting = 0;
  for (tfile_t *f = m->open_files; f; f = f->all_next) {
    if (f->kind != K_TRANSCRIPT || !f->ph)
      continue;
    if (fs_transcript_ready(m, f)) {
      fuse_lowlevel_notify_poll(f->ph);
      fuse_pollhandle_destroy(f->ph);
      f->ph = NULL;
    } else {
      waiting = 1;
    }
  }
  if (!waiting)
    uv_timer_stop(t);
  else
    uv_timer_set_repeat(t, (uint64_t)tfs_watch_tick_ms(m->watch.w));
}

void fs_watch_poll_kept(mnt_t *m) {
  if (!uv_is_active((uv_handle_t *)&m->watch.tick)) {
    uint64_t ms = (uint64_t)tfs_watch_tick_ms(m->watch.w);
    uv_timer_start(&m->watch.tick, on_tick, ms, ms);
  }
}

/* Opens the watch on the mount's store and puts it on the loop. Without
 * an inotify fd (TASKFS_NO_INOTIFY, the user's instances used up) the tick
 * alone wakes pollers, and the mount says so once. */
int fs_watch_init(mnt_t *m) {
  int err = tfs_watch_open(m->store, &m->watch.w);
  if (err)
    return err;
  if ((err = uv_timer_init(&m->loop, &m->watch.tick)))
    return err;
  m->watch.tick.data = m;
  int fd = tfs_watch_fd(m->watch.w);
  if (fd < 0) {
    if (!tfs_watch_disabled())
      fs_log(m, LOG_WARNING, "no inotify: poll on transcripts wakes on a %d ms tick",
             tfs_watch_tick_ms(m->watch.w));
    return 0;
  }
  if ((err = uv_poll_init(&m->loop, &m->watch.poller, fd)))
    return err;
  m->watch.poller.data = m;
  return uv_poll_start(&m->watch.poller, UV_READABLE, on_events);
}

/* Releases the watch once the loop has closed its handles. */
void fs_watch_close(mnt_t *m) {
  tfs_watch_close(m->watch.w);
  m->watch.w = NULL;
}

/* Adds an open transcript to its task's list, putting the task on the
 * watch if this is the first one. Should the watch not take it (the
 * inotify watch limit), the tick still wakes its pollers, later; that is
 * logged once per task. */
void fs_watch_attach(mnt_t *m, tfile_t *f) {
  tab_entry_t *e = &m->tasks.v[f->task];
  f->next = e->files;
  e->files = f;
  if (e->watched)
    return;
  e->watched = 1;
  int err = tfs_watch_add(m->watch.w, e->name, TFS_WATCH_STATE | TFS_WATCH_OUTPUT);
  if (err && err != -ENOSYS && err != TFS_ENOTASK)
    fs_log(m, LOG_WARNING,
           "cannot watch task %s (%s): poll on its transcript wakes on a %d ms tick", e->name,
           tfs_strerror(err), tfs_watch_tick_ms(m->watch.w));
}

/* Removes an open transcript from its task's list; the last one out takes
 * the task off the watch. */
void fs_watch_detach(mnt_t *m, tfile_t *f) {
  tab_entry_t *e = &m->tasks.v[f->task];
  for (tfile_t **pp = &e->files; *pp; pp = &(*pp)->next) {
    if (*pp == f) {
      *pp = f->next;
      break;
    }
  }
  if (f->ph) {
    fuse_pollhandle_destroy(f->ph);
    f->ph = NULL;
  }
  if (!e->files && e->watched) {
    tfs_watch_remove(m->watch.w, e->name);
    e->watched = 0;
  }
}
