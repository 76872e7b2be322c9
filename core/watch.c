/* Watching tasks: one inotify instance for any number of task directories
 * (and tasks/ itself), behind an fd the caller polls however it likes.
 *
 * What is watched in tasks/<id>/ is exactly what the supervisor does to
 * it: every record save renames a new record.json into place
 * (IN_MOVED_TO), output is appended to transcript (IN_MODIFY, and
 * IN_CLOSE_WRITE when a writer closes it), and a forgotten task's
 * directory goes away (IN_DELETE_SELF, IN_MOVE_SELF, then IN_IGNORED).
 * Events a reader causes (opens, reads, closes without writing) are never
 * asked for, so a watcher can never wake itself in a loop. Events are only
 * hints: the caller looks at the store again. Anything inotify cannot see
 * (a supervisor that died, a watch that could not be set) is caught by the
 * caller's periodic re-check, tfs_watch_tick_ms(). */
#include "core/internal.h"
#include "taskfs/text.h"

#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>

#define TICK_MS 1000      /* inotify sees every change but a death */
#define TICK_BLIND_MS 250 /* some task is watched by the tick alone */
#define DIR_FLAGS (IN_ONLYDIR | IN_DONT_FOLLOW)
#define GONE_MASK (IN_DELETE_SELF | IN_MOVE_SELF)

typedef struct {
  char id[TFS_ID_MAX + 1];
  int wd;           /* -1: the tick alone watches it */
  unsigned what;    /* TFS_WATCH_STATE | TFS_WATCH_OUTPUT */
  unsigned pending; /* bits seen during this drain */
} entry_t;

typedef struct {
  char id[TFS_ID_MAX + 1]; /* "" for tasks/ itself */
  unsigned what;
} report_t;

struct tfs_watch {
  tfs_store_t *store;
  int fd;       /* inotify, -1 if none */
  int fd_err;   /* why there is none */
  int tasks_wd; /* tasks/ itself: -1 if not watched (or not by inotify) */
  int tasks_on; /* tfs_watch_tasks() was called */
  entry_t *e;
  size_t n, cap;
  report_t *r; /* reports of one drain */
  size_t nr, rcap;
};

int tfs_watch_disabled(void) {
  return tfs_env_flag("TASKFS_NO_INOTIFY");
}

int tfs_watch_open(tfs_store_t *store, tfs_watch_t **out) {
  tfs_watch_t *w = calloc(1, sizeof *w);
  *out = NULL;
  if (!w)
    return -ENOMEM;
  w->store = store;
  w->tasks_wd = -1;
  w->fd = -1;
  w->fd_err = -ENOSYS;
  if (!tfs_watch_disabled()) {
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0)
      w->fd_err = -errno; /* EMFILE: the user's instances are used up */
  }
  *out = w;
  return 0;
}

void tfs_watch_close(tfs_watch_t *w) {
  if (!w)
    return;
  if (w->fd >= 0)
    close(w->fd);
  free(w->e);
  free(w->r);
  free(w);
}

int tfs_watch_fd(const tfs_watch_t *w) {
  return w->fd;
}

static entry_t *find(tfs_watch_t *w, const char *id) {
  for (size_t i = 0; i < w->n; i++)
    if (!strcmp(w->e[i].id, id))
      return &w->e[i];
  return NULL;
}

static entry_t *find_wd(tfs_watch_t *w, int wd) {
  for (size_t i = 0; i < w->n; i++)
    if (w->e[i].wd == wd)
      return &w->e[i];
  return NULL;
}

static uint32_t mask_for(unsigned what) {
  uint32_t m = GONE_MASK | DIR_FLAGS;
  if (what & TFS_WATCH_STATE)
    m |= IN_MOVED_TO;
  if (what & TFS_WATCH_OUTPUT)
    m |= IN_MODIFY | IN_CLOSE_WRITE;
  return m;
}

/* Adds (or changes) the inotify watch of one path; the wd or an error. */
static int add_path(tfs_watch_t *w, const char *id, uint32_t mask) {
  char path[PATH_MAX];
  if (w->fd < 0)
    return w->fd_err;
  int err = tfs__task_path(w->store, id, path, sizeof path);
  if (err)
    return err;
  int wd = inotify_add_watch(w->fd, path, mask);
  if (wd >= 0)
    return wd;
  return errno == ENOENT || errno == ENOTDIR ? TFS_ENOTASK : -errno;
}

int tfs_watch_add(tfs_watch_t *w, const char *id, unsigned what) {
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  entry_t *e = find(w, id);
  if (!e) {
    if (tfs_grow(&w->e, &w->cap, w->n + 1, sizeof *w->e, 8))
      return -ENOMEM;
    e = &w->e[w->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", id);
    e->wd = -1;
  }
  e->what = what & (TFS_WATCH_STATE | TFS_WATCH_OUTPUT);
  int wd = add_path(w, id, mask_for(e->what));
  e->wd = wd >= 0 ? wd : -1;
  return wd >= 0 ? 0 : wd;
}

int tfs_watch_remove(tfs_watch_t *w, const char *id) {
  entry_t *e = find(w, id);
  if (!e)
    return TFS_ENOTASK;
  /* Another id never shares a wd (one directory each), so the kernel
   * watch goes with the entry. */
  if (e->wd >= 0 && w->fd >= 0)
    inotify_rm_watch(w->fd, e->wd);
  *e = w->e[--w->n];
  return 0;
}

int tfs_watch_tasks(tfs_watch_t *w) {
  w->tasks_on = 1;
  int wd = add_path(w, NULL,
                    IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | GONE_MASK | DIR_FLAGS);
  w->tasks_wd = wd >= 0 ? wd : -1;
  return wd >= 0 ? 0 : wd;
}

int tfs_watch_tick_ms(const tfs_watch_t *w) {
  if (w->fd < 0 || (w->tasks_on && w->tasks_wd < 0))
    return TICK_BLIND_MS;
  for (size_t i = 0; i < w->n; i++)
    if (w->e[i].wd < 0)
      return TICK_BLIND_MS;
  return TICK_MS;
}

static int report(tfs_watch_t *w, const char *id, unsigned what) {
  if (tfs_grow(&w->r, &w->rcap, w->nr + 1, sizeof *w->r, 16))
    return -ENOMEM;
  snprintf(w->r[w->nr].id, sizeof w->r[w->nr].id, "%s", id ? id : "");
  w->r[w->nr++].what = what;
  return 0;
}

/* An event on tasks/ itself: a task dir made, removed or renamed. */
static int tasks_event(tfs_watch_t *w, const struct inotify_event *ev) {
  if (ev->mask & (GONE_MASK | IN_IGNORED)) {
    w->tasks_wd = -1; /* the store itself went away: rescan */
    return report(w, NULL, TFS_WATCH_DELETED);
  }
  if (!(ev->mask & IN_ISDIR) || !ev->len || !tfs_id_valid(ev->name))
    return 0;
  unsigned what = ev->mask & (IN_CREATE | IN_MOVED_TO) ? TFS_WATCH_CREATED : TFS_WATCH_DELETED;
  return report(w, ev->name, what);
}

/* An event on a task dir: only the names we act on count. */
static void task_event(tfs_watch_t *w, const struct inotify_event *ev) {
  entry_t *e = find_wd(w, ev->wd);
  if (!e)
    return; /* removed meanwhile */
  if (ev->mask & (GONE_MASK | IN_IGNORED)) {
    e->pending |= TFS_WATCH_GONE | (e->what & TFS_WATCH_STATE);
    if (ev->mask & IN_IGNORED)
      e->wd = -1; /* the kernel dropped the watch with the directory */
    return;
  }
  if (!ev->len)
    return;
  if ((ev->mask & IN_MOVED_TO) && !strcmp(ev->name, TFS__FILE(RECORD)))
    e->pending |= TFS_WATCH_STATE;
  else if ((ev->mask & (IN_MODIFY | IN_CLOSE_WRITE)) && !strcmp(ev->name, TFS__FILE(TRANSCRIPT)))
    e->pending |= TFS_WATCH_OUTPUT;
  e->pending &= e->what | TFS_WATCH_GONE;
}

/* Reads the whole queue, leaving what changed in the entries' pending bits
 * and in the reports of tasks/. */
static int read_events(tfs_watch_t *w) {
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno == EAGAIN ? 0 : -errno;
    if (n == 0)
      return 0;
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        /* Events were lost: everything may have changed. */
        for (size_t i = 0; i < w->n; i++)
          w->e[i].pending |= w->e[i].what;
        if (w->tasks_on && report(w, NULL, TFS_WATCH_CREATED | TFS_WATCH_DELETED))
          return -ENOMEM;
      } else if (ev->wd == w->tasks_wd && w->tasks_wd >= 0) {
        if (tasks_event(w, ev))
          return -ENOMEM;
      } else {
        task_event(w, ev);
      }
    }
  }
}

/* The reports are collected first and handed out after, so that a
 * callback may add or remove watches. */
int tfs_watch_drain(tfs_watch_t *w, tfs_watch_cb cb, void *arg) {
  if (w->fd < 0)
    return 0;
  w->nr = 0;
  int err = read_events(w);
  for (size_t i = 0; i < w->n && !err; i++) {
    if (w->e[i].pending && !(err = report(w, w->e[i].id, w->e[i].pending)))
      w->e[i].pending = 0;
  }
  if (err)
    return err;
  size_t nr = w->nr;
  for (size_t i = 0; cb && i < nr; i++)
    cb(w->r[i].id[0] ? w->r[i].id : NULL, w->r[i].what, arg);
  return (int)nr;
}

int tfs_watch_wait(tfs_watch_t *w, int64_t timeout_ms, const sigset_t *sigmask, int extra_fd,
                   tfs_watch_cb cb, void *arg) {
  struct pollfd pfd[2];
  nfds_t n = 0;
  int ino = -1, extra = -1;
  if (w->fd >= 0) {
    pfd[n] = (struct pollfd){.fd = w->fd, .events = POLLIN};
    ino = (int)n++;
  }
  if (extra_fd >= 0) {
    /* events = 0: only POLLERR/POLLHUP, which a pipe's write end reports
     * once its reader has closed; a tty or a file reports nothing. */
    pfd[n] = (struct pollfd){.fd = extra_fd, .events = 0};
    extra = (int)n++;
  }
  if (timeout_ms < 0)
    timeout_ms = tfs_watch_tick_ms(w);
  struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
  int rc = ppoll(n ? pfd : NULL, n, &ts, sigmask);
  if (rc < 0)
    return errno == EINTR ? -EINTR : -errno;
  if (ino >= 0 && (pfd[ino].revents & POLLIN)) {
    int err = tfs_watch_drain(w, cb, arg);
    if (err < 0)
      return err;
  }
  if (extra >= 0 && (pfd[extra].revents & (POLLERR | POLLHUP)))
    return TFS_WATCH_HANGUP;
  return 0;
}
