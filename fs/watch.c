/* The store watch: wakes poll()/epoll() waiters on open transcripts.
 *
 * One inotify instance serves the whole mount, read from the same libuv
 * loop as the FUSE session. A task directory is watched only while one of
 * its transcripts is open through the mount, so the cost follows the number
 * of readers, not the number of tasks. A growing transcript (IN_MODIFY), a
 * writer closing it, or a new record.json (the task may have ended) wakes
 * every poll handle stored for that task; the kernel then polls again and
 * gets the fresh readiness. Events caused by the mount's own reads (opens
 * and closes without writing) are not watched, so a poll cannot wake
 * itself. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <syslog.h>
#include <unistd.h>

#include "fs/fs.h"

/* Records which task a watch descriptor belongs to (v = index + 1, 0 to
 * forget it). Returns -ENOMEM if the map cannot grow. */
static int wd_set(fs_watch_t *w, int wd, uint32_t v) {
  if (wd < 0)
    return 0;
  if ((size_t)wd >= w->wd_cap) {
    size_t cap = w->wd_cap ? w->wd_cap : 64;
    while (cap <= (size_t)wd)
      cap *= 2;
    uint32_t *n = realloc(w->wd_map, cap * sizeof *n);
    if (!n)
      return -ENOMEM;
    memset(n + w->wd_cap, 0, (cap - w->wd_cap) * sizeof *n);
    w->wd_map = n;
    w->wd_cap = cap;
  }
  w->wd_map[wd] = v;
  return 0;
}

static int wd_get(const fs_watch_t *w, int wd, size_t *idx) {
  if (wd < 0 || (size_t)wd >= w->wd_cap || !w->wd_map[wd])
    return -ENOENT;
  *idx = w->wd_map[wd] - 1;
  return 0;
}

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

/* Acts on one event: a growing or closed transcript, a new record.json
 * (the task may have ended) or a vanished task directory wakes the task's
 * pollers. */
static void on_event(mnt_t *m, const struct inotify_event *ev) {
  size_t idx;
  if (wd_get(&m->watch, ev->wd, &idx))
    return;
  const char *name = ev->len ? ev->name : "";
  int wake = 0;
  if (ev->mask & (IN_IGNORED | IN_DELETE_SELF)) {
    wake = 1;
    if (ev->mask & IN_IGNORED) {
      wd_set(&m->watch, ev->wd, 0);
      m->tasks.v[idx].wd = -1;
    }
  } else if (!strcmp(name, "transcript")) {
    wake = (ev->mask & (IN_MODIFY | IN_CLOSE_WRITE)) != 0;
  } else if (!strcmp(name, "record.json")) {
    wake = (ev->mask & IN_MOVED_TO) != 0;
  }
  if (wake)
    wake_task(m, idx);
}

static void on_inotify(uv_poll_t *h, int status, int events) {
  mnt_t *m = h->data;
  char buf[16 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t n = read(m->watch.fd, buf, sizeof buf);
    if (n <= 0)
      return; /* EAGAIN: drained */
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      on_event(m, ev);
    }
  }
}

/* Starts the watch on the mount's loop. On failure the mount runs without
 * it (m->watch.fd stays -1 or is closed by fs_watch_close). */
int fs_watch_init(mnt_t *m) {
  m->watch.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (m->watch.fd < 0)
    return -errno;
  int err = uv_poll_init(&m->loop, &m->watch.watcher, m->watch.fd);
  if (err)
    return err;
  m->watch.watcher.data = m;
  return uv_poll_start(&m->watch.watcher, UV_READABLE, on_inotify);
}

/* Releases the watch once the loop has closed its handles. */
void fs_watch_close(mnt_t *m) {
  if (m->watch.fd >= 0)
    close(m->watch.fd);
  m->watch.fd = -1;
  free(m->watch.wd_map);
  m->watch.wd_map = NULL;
  m->watch.wd_cap = 0;
}

/* Adds an open transcript to its task's list, watching the task directory
 * if this is the first one. Without a watch (inotify limit reached) poll
 * still answers correctly; it just is not woken early, and the failure is
 * logged once per task. */
void fs_watch_attach(mnt_t *m, tfile_t *f) {
  tab_entry_t *e = &m->tasks.v[f->task];
  f->next = e->files;
  e->files = f;
  if (e->wd >= 0 || m->watch.fd < 0)
    return;
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/tasks/%s", m->state_dir, e->name) >= (int)sizeof path)
    return;
  int wd = inotify_add_watch(m->watch.fd, path,
                             IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE_SELF |
                                 IN_ONLYDIR | IN_DONT_FOLLOW);
  if (wd < 0) {
    fs_log(m, LOG_WARNING, "cannot watch %s (%s): poll on its transcript will not wake early", path,
           strerror(errno));
    return;
  }
  if (wd_set(&m->watch, wd, (uint32_t)(f->task + 1))) {
    /* An event the map cannot name would never wake anyone. */
    inotify_rm_watch(m->watch.fd, wd);
    fs_log(m, LOG_WARNING,
           "cannot watch %s (out of memory): poll on its transcript will not "
           "wake early",
           path);
    return;
  }
  e->wd = wd;
}

/* Removes an open transcript from its task's list; the last one out drops
 * the watch. */
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
  if (!e->files && e->wd >= 0) {
    inotify_rm_watch(m->watch.fd, e->wd);
    wd_set(&m->watch, e->wd, 0);
    e->wd = -1;
  }
}
