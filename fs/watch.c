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

/* wd -> task index + 1 (0 = none). inotify hands out small increasing
 * numbers, so a flat array is both simple and O(1). */
static uint32_t *wd_map;
static size_t wd_cap;

static void wd_set(int wd, uint32_t v) {
  if (wd < 0)
    return;
  if ((size_t)wd >= wd_cap) {
    size_t cap = wd_cap ? wd_cap : 64;
    while (cap <= (size_t)wd)
      cap *= 2;
    uint32_t *n = realloc(wd_map, cap * sizeof *n);
    if (!n)
      return;
    memset(n + wd_cap, 0, (cap - wd_cap) * sizeof *n);
    wd_map = n;
    wd_cap = cap;
  }
  wd_map[wd] = v;
}

static int wd_get(int wd, size_t *idx) {
  if (wd < 0 || (size_t)wd >= wd_cap || !wd_map[wd])
    return -ENOENT;
  *idx = wd_map[wd] - 1;
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

static void on_inotify(uv_poll_t *h, int status, int events) {
  mnt_t *m = h->data;
  char buf[16 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t n = read(m->inotify_fd, buf, sizeof buf);
    if (n <= 0)
      return; /* EAGAIN: drained */
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      size_t idx;
      if (wd_get(ev->wd, &idx))
        continue;
      const char *name = ev->len ? ev->name : "";
      int wake = 0;
      if (ev->mask & (IN_IGNORED | IN_DELETE_SELF)) {
        wake = 1;
        if (ev->mask & IN_IGNORED) {
          wd_set(ev->wd, 0);
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
  }
}

int watch_init(mnt_t *m) {
  m->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (m->inotify_fd < 0)
    return -errno;
  int err = uv_poll_init(&m->loop, &m->inotify_watcher, m->inotify_fd);
  if (err)
    return err;
  m->inotify_watcher.data = m;
  return uv_poll_start(&m->inotify_watcher, UV_READABLE, on_inotify);
}

void watch_close(mnt_t *m) {
  free(wd_map);
  wd_map = NULL;
  wd_cap = 0;
}

/* Adds an open transcript to its task's list, watching the task directory
 * if this is the first one. Without a watch (inotify limit reached) poll
 * still answers correctly; it just is not woken early, and the failure is
 * logged once per task. */
void watch_attach(mnt_t *m, tfile_t *f) {
  tab_entry_t *e = &m->tasks.v[f->task];
  f->next = e->files;
  e->files = f;
  if (e->wd >= 0)
    return;
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/tasks/%s", m->state_dir, e->name) >= (int)sizeof path)
    return;
  int wd = inotify_add_watch(m->inotify_fd, path,
                             IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE_SELF |
                                 IN_ONLYDIR | IN_DONT_FOLLOW);
  if (wd < 0) {
    mnt_log(m, LOG_WARNING, "cannot watch %s (%s): poll on its transcript will not wake early",
            path, strerror(errno));
    return;
  }
  e->wd = wd;
  wd_set(wd, (uint32_t)(f->task + 1));
}

/* Removes an open transcript from its task's list; the last one out drops
 * the watch. */
void watch_detach(mnt_t *m, tfile_t *f) {
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
    inotify_rm_watch(m->inotify_fd, e->wd);
    wd_set(e->wd, 0);
    e->wd = -1;
  }
}
