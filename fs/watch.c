/* The store watch: wakes poll()/epoll() waiters on open transcripts.
 *
 * The mount sits on a live hub (live/live.h) like every face: its one
 * watch (one core tfs_watch_t under a uv_poll on the same libuv loop as
 * the FUSE session, with its tick) says "look again" to listeners. Each
 * open transcript is a listener of its task while it is open, so the cost
 * follows the number of readers, not the number of tasks (the hub asks
 * the core watch once per task, whatever the number of handles). A
 * growing transcript, a writer closing it, a new record (the task may
 * have ended) or a vanished task directory wakes the handle's poll; the
 * kernel then polls again and gets the fresh readiness. The core watch
 * never asks for the events a reader causes (opens, reads, closes without
 * writing), so the mount's own reads can never wake it in a loop.
 *
 * What no event shows (a supervisor that died: its task now reads lost, so
 * its transcript is at EOF; a task the watch could not add; no inotify at
 * all) is caught by the tick: every tfs_watch_tick_ms() a waiting handle's
 * readiness is checked again, and only a handle that is ready now is
 * woken. */
#include <syslog.h>

#include "fs/fs.h"

static void wake(tfile_t *f) {
  if (f->ph) {
    fuse_lowlevel_notify_poll(f->ph);
    fuse_pollhandle_destroy(f->ph);
    f->ph = NULL;
  }
}

/* An event of the handle's task wakes it; the tick wakes it only when it
 * is ready now. */
static void on_look(void *arg, unsigned what) {
  tfile_t *f = arg;
  if (!f->ph)
    return;
  if (what != LIVE_WATCH_TICK || fs_transcript_ready(f->m, f))
    wake(f);
}

/* Puts an open transcript on the watch of its task. Without a listener
 * (no memory) its pollers are only woken by their next poll. */
void fs_watch_attach(mnt_t *m, tfile_t *f) {
  f->m = m;
  f->l = live_watch_add(m->hub, m->tasks.v[f->task].name, TFS_WATCH_STATE | TFS_WATCH_OUTPUT,
                        on_look, f);
  if (!f->l)
    fs_log(m, LOG_WARNING,
           "cannot watch task %s (out of memory): poll on its transcript may not wake",
           m->tasks.v[f->task].name);
}

/* Takes a transcript that is being closed off the watch. */
void fs_watch_detach(mnt_t *m, tfile_t *f) {
  live_watch_remove(m->hub, f->l);
  f->l = NULL;
  if (f->ph) {
    fuse_pollhandle_destroy(f->ph);
    f->ph = NULL;
  }
}
