/* The mount's process: one libuv loop runs the FUSE session (a uv_poll on
 * the /dev/fuse fd), the live hub (the store and its watch: live/live.h)
 * and the signal handlers, so everything happens on one thread and no
 * state needs a lock.
 *
 * fs_mount_run() goes through its steps in order: the mount's state, the
 * store, the checks on the two paths, the FUSE session, the loop; then it
 * serves until unmounted and takes everything down in reverse. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

void fs_log(mnt_t *m, int prio, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (m && m->use_syslog) {
    vsyslog(prio, fmt, ap);
  } else {
    fprintf(stderr, "taskfs mount: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  }
  va_end(ap);
}

/* Returns the store, or NULL while its directory is absent or refused
 * (the mount then shows it empty). The hub's refresh (live_store: core's
 * tfs_store_refresh) checks the store's identity at every call and reopens
 * it in place when it was removed and recreated under the mount, so one
 * handle serves the mount's whole life (the watch holds it too) and a
 * replaced store is picked up at the next request, but only if it passes
 * the checks of an open: a store recreated by another user, or made
 * writable by others, is refused (said once in the log, by on_store)
 * until the path names one of ours again. */
tfs_store_t *fs_store(mnt_t *m) {
  tfs_store_t *s = live_store(m->hub);
  return live_store_state(m->hub) ? NULL : s;
}

static void on_store(void *arg, int state, int before) {
  mnt_t *m = arg;
  if (state < 0) {
    const char *why = tfs_store_refusal(live_store_handle(m->hub));
    if (why)
      fs_log(m, LOG_WARNING,
             "refusing the store %s: %s; the mount shows it empty until it is yours and "
             "private again",
             m->state_dir, why);
    else
      fs_log(m, LOG_WARNING, "the store %s is gone; the mount shows it empty until it returns",
             m->state_dir);
  } else if (before < 0) {
    fs_log(m, LOG_INFO, "serving the store %s", m->state_dir);
  }
}

/* The hub's own messages (the watch without inotify) go where the mount's
 * go. */
static void hub_log(void *arg, int prio, const char *msg) {
  fs_log(arg, prio, "%s", msg);
}

/* Reads every request waiting on the FUSE fd. The fd is non-blocking, so
 * EAGAIN ends the batch; 0 or another error means the file system was
 * unmounted (or the session told to exit) and ends the loop. */
static void on_fuse(uv_poll_t *h, int status, int events) {
  mnt_t *m = h->data;
  for (;;) {
    int res = fuse_session_receive_buf(m->se, &m->fbuf);
    if (res == -EINTR)
      continue;
    if (res == -EAGAIN)
      return;
    if (res <= 0 || fuse_session_exited(m->se)) {
      if (res < 0)
        fs_log(m, LOG_ERR, "reading /dev/fuse: %s", strerror(-res));
      uv_stop(&m->loop);
      return;
    }
    fuse_session_process_buf(m->se, &m->fbuf);
  }
}

static void on_signal(uv_signal_t *h, int signum) {
  mnt_t *m = h->data;
  fs_log(m, LOG_INFO, "%s: unmounting", strsignal(signum));
  m->stopping = 1;
  fuse_session_exit(m->se);
  uv_stop(&m->loop);
}

static void on_close(uv_handle_t *h) {}

static void close_walk(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h))
    uv_close(h, on_close);
}

/* Writes the one-line readiness report to the waiting parent, if any. */
static void report(int *fd, const char *fmt, ...) {
  if (*fd < 0)
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 1)
    n = (int)sizeof line - 1;
  ssize_t w = write(*fd, line, (size_t)n);
  (void)w;
  close(*fd);
  *fd = -1;
}

/* The mount's state before anything is opened. */
static mnt_t *mnt_new(const fs_mount_opts_t *opts) {
  mnt_t *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->use_syslog = opts->use_syslog;
  /* Files belong to the store's owner, who is this process's user: a
   * store of anyone else is never served. */
  m->uid = geteuid();
  m->gid = getegid();
  clock_gettime(CLOCK_REALTIME, &m->mount_time);
  if (m->use_syslog)
    openlog("taskfs-mount", LOG_PID, LOG_USER);
  signal(SIGPIPE, SIG_IGN);
  return m;
}

/* Everything mnt_new and the steps after it took, in reverse. */
static void mnt_free(mnt_t *m) {
  live_hub_free(m->hub); /* after the open files, which leave its watch */
  fs_tab_free(&m->tasks);
  fs_tab_free(&m->keys);
  fs_tab_free(&m->queues);
  free(m->fbuf.mem);
  free(m->state_dir);
  free(m);
}

/* Opens (and, the first time, creates) the store. That is not taking
 * ownership: the mount never calls tfs_store_acquire. The mount reads
 * through a reader's handle (it changes nothing), which the hub keeps for
 * its life. The hub only notes the loop here: nothing of it is on the
 * loop before the first transcript is opened. */
static int mnt_open_store(mnt_t *m, const char *dir, char *msg, size_t msglen) {
  tfs_store_t *s, *store = NULL;
  int err = tfs_store_open(dir, &s);
  if (!err) {
    tfs_store_close(s);
    err = tfs_store_open_existing(dir, &store);
  }
  if (!err && !(m->state_dir = strdup(tfs_store_path(store))))
    err = -ENOMEM;
  if (err) {
    tfs_store_close(store);
    snprintf(msg, msglen, "cannot open the store %s: %s", dir, tfs_strerror(err));
    return err;
  }
  live_config_t lc = {
      .loop = &m->loop, .store = store, .name = "taskfs mount", .log = hub_log, .arg = m};
  if ((err = live_hub_open(&lc, &m->hub))) {
    snprintf(msg, msglen, "cannot watch the store %s: %s", dir, tfs_strerror(err));
    return err;
  }
  live_store_notify(m->hub, on_store, m);
  fs_store(m);
  return 0;
}

/* 1 if path is inside dir or is dir (both real paths). */
static int path_within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == 0 || !strcmp(dir, "/"));
}

/* Refuses a store and a mount point nested in each other. A store inside
 * its own mount point would have the mount reading through itself: every
 * request would wait for itself forever. A mount point inside the store
 * hides part of it from every process, the mount itself included, whose
 * reads would then wait for themselves. */
static int check_nesting(const char *state, const char *mnt, char *msg, size_t msglen) {
  char real_state[PATH_MAX], real_mnt[PATH_MAX];
  if (!realpath(state, real_state) || !realpath(mnt, real_mnt))
    return 0;
  if (path_within(real_state, real_mnt)) {
    snprintf(msg, msglen, "the store %s is inside the mount point %s; choose another one", state,
             mnt);
    return -EINVAL;
  }
  if (path_within(real_mnt, real_state)) {
    snprintf(msg, msglen,
             "the mount point %s is inside the store %s; choose a directory outside it", mnt,
             state);
    return -EINVAL;
  }
  return 0;
}

/* Creates the FUSE session and mounts it on opts->mountpoint. */
static int session_mount(mnt_t *m, const fs_mount_opts_t *opts, char *msg, size_t msglen) {
  char fsname[PATH_MAX + 16];
  snprintf(fsname, sizeof fsname, "fsname=taskfs:%s", m->state_dir);
  for (char *p = fsname; *p; p++)
    if (*p == ',')
      *p = '_'; /* a comma would split the -o list */
  char *argv[10] = {"taskfs", "-o", "default_permissions,subtype=taskfs", "-o", fsname};
  int argc = 5;
  if (opts->allow_other) {
    argv[argc++] = "-o";
    argv[argc++] = "allow_other";
  }
  /* TASKFS_FUSE_DEBUG=1 prints every FUSE request on stderr (foreground). */
  const char *dbg = getenv("TASKFS_FUSE_DEBUG");
  if (dbg && *dbg == '1')
    argv[argc++] = "-d";
  struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
  m->se = fuse_session_new(&args, &fs_ops, sizeof fs_ops, m);
  fuse_opt_free_args(&args);
  if (!m->se) {
    snprintf(msg, msglen, "cannot create the FUSE session (is fuse3 installed?)");
    return -EINVAL;
  }
  if (fuse_session_mount(m->se, opts->mountpoint)) {
    snprintf(msg, msglen,
             "cannot mount on %s (is /dev/fuse usable? is fusermount3 installed? "
             "allow_other needs user_allow_other in /etc/fuse.conf)",
             opts->mountpoint);
    fuse_session_destroy(m->se);
    m->se = NULL;
    return -EIO;
  }
  return 0;
}

/* Puts the FUSE fd and the signals on the loop (the hub's watch joins it
 * with the first open transcript). Without inotify the mount still works;
 * poll is woken by the watch's tick. */
static int loop_start(mnt_t *m, char *msg, size_t msglen) {
  int fd = fuse_session_fd(m->se);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  int err = uv_loop_init(&m->loop);
  if (!err)
    err = uv_poll_init(&m->loop, &m->fuse_watcher, fd);
  if (err) {
    snprintf(msg, msglen, "cannot start the event loop: %s", uv_strerror(err));
    return err;
  }
  m->fuse_watcher.data = m;
  uv_poll_start(&m->fuse_watcher, UV_READABLE, on_fuse);
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(&m->loop, &m->sig[i]);
    m->sig[i].data = m;
    uv_signal_start(&m->sig[i], on_signal, sigs[i]);
  }
  return 0;
}

static void detach_stdio(void) {
  int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (nul < 0)
    return;
  dup2(nul, 0);
  dup2(nul, 1);
  dup2(nul, 2);
  close(nul);
}

/* Serves until unmounted or signalled, then frees what the kernel never
 * released (its transcripts leave the hub's watch, which closes its loop
 * handles itself), closes the loop and unmounts. */
static void serve(mnt_t *m) {
  uv_run(&m->loop, UV_RUN_DEFAULT);
  fs_free_open_files(m);
  uv_walk(&m->loop, close_walk, NULL);
  uv_run(&m->loop, UV_RUN_DEFAULT);
  uv_loop_close(&m->loop);
  fuse_session_unmount(m->se);
  fuse_session_destroy(m->se);
  m->se = NULL;
}

int fs_mount_run(const fs_mount_opts_t *opts) {
  char msg[512];
  int ready_fd = opts->ready_fd;
  mnt_t *m = mnt_new(opts);
  if (!m)
    return -ENOMEM;
  int err = mnt_open_store(m, opts->state_dir, msg, sizeof msg);
  if (!err)
    err = fs_mount_check_point(opts->mountpoint, NULL, msg, sizeof msg);
  if (!err)
    err = check_nesting(m->state_dir, opts->mountpoint, msg, sizeof msg);
  if (!err)
    err = session_mount(m, opts, msg, sizeof msg);
  if (!err && (err = loop_start(m, msg, sizeof msg))) {
    fuse_session_unmount(m->se);
    fuse_session_destroy(m->se);
  }
  if (err) {
    fs_log(m, LOG_ERR, "%s", msg);
    report(&ready_fd, "error: %s\n", msg);
    mnt_free(m);
    return err;
  }
  fs_log(m, LOG_INFO, "mounted %s on %s", m->state_dir, opts->mountpoint);
  report(&ready_fd, "ok\n");
  if (opts->detach)
    detach_stdio();
  serve(m);
  fs_log(m, LOG_INFO, "unmounted %s", opts->mountpoint);
  mnt_free(m);
  return 0;
}
