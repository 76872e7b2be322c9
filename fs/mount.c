/* The mount's process: one libuv loop runs the FUSE session (a uv_poll on
 * the /dev/fuse fd), the store watch (inotify) and the signal handlers, so
 * everything happens on one thread and no state needs a lock. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

#define FUSE_SUPER_MAGIC 0x65735546

void mnt_log(mnt_t *m, int prio, const char *fmt, ...) {
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

/* Returns the store, reopening it when its directory was removed (and maybe
 * recreated) under the mount: tfs_store_refresh() checks the tasks/
 * directory's identity at every call, so a replaced store is picked up at
 * the next request and a missing one reads as empty. */
tfs_store_t *mnt_store(mnt_t *m) {
  if (m->store && tfs_store_refresh(m->store) < 0) {
    mnt_log(m, LOG_WARNING, "the store %s is gone; the mount shows it empty until it returns",
            m->state_dir);
    tfs_store_close(m->store);
    m->store = NULL;
  }
  if (!m->store) {
    if (tfs_store_open_existing(m->state_dir, &m->store)) {
      m->store = NULL;
      return NULL;
    }
    mnt_log(m, LOG_INFO, "serving the store %s", m->state_dir);
  }
  /* Files belong to whoever owns the store; a chown shows at once. */
  struct stat st;
  if (fstat(tfs_store_tasks_fd(m->store), &st) == 0) {
    m->uid = st.st_uid;
    m->gid = st.st_gid;
  }
  return m->store;
}

/* Reads every request waiting on the FUSE fd. The fd is non-blocking, so
 * EAGAIN ends the batch; 0 or another error means the file system was
 * unmounted (or the session told to exit) and ends the loop. */
static void on_fuse(uv_poll_t *h, int status, int events) {
  mnt_t *m = h->data;
  static struct fuse_buf buf;
  for (;;) {
    int res = fuse_session_receive_buf(m->se, &buf);
    if (res == -EINTR)
      continue;
    if (res == -EAGAIN)
      return;
    if (res <= 0 || fuse_session_exited(m->se)) {
      if (res < 0)
        mnt_log(m, LOG_ERR, "reading /dev/fuse: %s", strerror(-res));
      uv_stop(&m->loop);
      return;
    }
    fuse_session_process_buf(m->se, &buf);
  }
}

static void on_signal(uv_signal_t *h, int signum) {
  mnt_t *m = h->data;
  mnt_log(m, LOG_INFO, "%s: unmounting", strsignal(signum));
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

int tfs_mount_run(const tfs_mount_opts_t *opts) {
  mnt_t *m = calloc(1, sizeof *m);
  int ready_fd = opts->ready_fd;
  int err = 0;
  char msg[512];
  if (!m)
    return -ENOMEM;
  m->use_syslog = opts->use_syslog;
  m->inotify_fd = -1;
  m->uid = getuid();
  m->gid = getgid();
  clock_gettime(CLOCK_REALTIME, &m->mount_time);
  if (m->use_syslog)
    openlog("taskfs-mount", LOG_PID, LOG_USER);
  signal(SIGPIPE, SIG_IGN);

  /* Opening (and, the first time, creating) the store is not taking
   * ownership: the mount never calls tfs_store_acquire. */
  tfs_store_t *s;
  err = tfs_store_open(opts->state_dir, &s);
  if (err) {
    snprintf(msg, sizeof msg, "cannot open the store %s: %s", opts->state_dir, tfs_strerror(err));
    goto fail;
  }
  tfs_store_close(s);
  m->state_dir = strdup(opts->state_dir);
  if (!m->state_dir || !mnt_store(m)) {
    err = -EIO;
    snprintf(msg, sizeof msg, "cannot open the store %s", opts->state_dir);
    goto fail;
  }

  if ((err = tfs_mount_check_point(opts->mountpoint, msg, sizeof msg)))
    goto fail;
  /* A store inside its own mount point would have the mount reading
   * through itself: every request would wait for itself forever. */
  char real_state[PATH_MAX], real_mnt[PATH_MAX];
  if (realpath(m->state_dir, real_state) && realpath(opts->mountpoint, real_mnt)) {
    size_t n = strlen(real_mnt), ns = strlen(real_state);
    if (!strncmp(real_state, real_mnt, n) &&
        (real_state[n] == '/' || real_state[n] == 0 || !strcmp(real_mnt, "/"))) {
      err = -EINVAL;
      snprintf(msg, sizeof msg, "the store %s is inside the mount point %s; choose another one",
               m->state_dir, opts->mountpoint);
      goto fail;
    }
    /* A mount point inside the store hides part of it (tasks/, keys/) from
     * every process, the mount itself included, whose reads would then
     * wait for themselves. */
    if (!strncmp(real_mnt, real_state, ns) && (real_mnt[ns] == '/' || real_mnt[ns] == 0)) {
      err = -EINVAL;
      snprintf(msg, sizeof msg,
               "the mount point %s is inside the store %s; choose a directory outside it",
               opts->mountpoint, m->state_dir);
      goto fail;
    }
  }

  char fsname[PATH_MAX + 16];
  snprintf(fsname, sizeof fsname, "fsname=taskfs:%s", m->state_dir);
  for (char *p = fsname; *p; p++)
    if (*p == ',')
      *p = '_'; /* a comma would split the -o list */
  char *argv[] = {
      "taskfs", "-o", "default_permissions,subtype=taskfs", "-o", fsname, NULL, NULL, NULL,
      NULL,     NULL};
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
  m->se = fuse_session_new(&args, &tfs_fs_ops, sizeof tfs_fs_ops, m);
  fuse_opt_free_args(&args);
  if (!m->se) {
    err = -EINVAL;
    snprintf(msg, sizeof msg, "cannot create the FUSE session (is fuse3 installed?)");
    goto fail;
  }
  if (fuse_session_mount(m->se, opts->mountpoint)) {
    err = -EIO;
    snprintf(msg, sizeof msg,
             "cannot mount on %s (is /dev/fuse usable? is fusermount3 installed? "
             "allow_other needs user_allow_other in /etc/fuse.conf)",
             opts->mountpoint);
    fuse_session_destroy(m->se);
    m->se = NULL;
    goto fail;
  }

  int fd = fuse_session_fd(m->se);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  uv_loop_init(&m->loop);
  uv_poll_init(&m->loop, &m->fuse_watcher, fd);
  m->fuse_watcher.data = m;
  uv_poll_start(&m->fuse_watcher, UV_READABLE, on_fuse);
  if ((err = watch_init(m)))
    mnt_log(m, LOG_WARNING, "no inotify (%s): poll on transcripts will not wake early",
            tfs_strerror(err));
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(&m->loop, &m->sig[i]);
    m->sig[i].data = m;
    uv_signal_start(&m->sig[i], on_signal, sigs[i]);
  }

  mnt_log(m, LOG_INFO, "mounted %s on %s", m->state_dir, opts->mountpoint);
  report(&ready_fd, "ok\n");
  if (opts->detach) {
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
      dup2(nul, 0);
      dup2(nul, 1);
      dup2(nul, 2);
      close(nul);
    }
  }

  uv_run(&m->loop, UV_RUN_DEFAULT);

  uv_walk(&m->loop, close_walk, NULL);
  uv_run(&m->loop, UV_RUN_DEFAULT);
  uv_loop_close(&m->loop);
  fuse_session_unmount(m->se);
  fuse_session_destroy(m->se);
  ops_free_open_files(m);
  if (m->inotify_fd >= 0)
    close(m->inotify_fd);
  watch_close(m);
  mnt_log(m, LOG_INFO, "unmounted %s", opts->mountpoint);
  err = 0;
  goto out;

fail:
  mnt_log(m, LOG_ERR, "%s", msg);
  report(&ready_fd, "error: %s\n", msg);
out:
  if (m->store)
    tfs_store_close(m->store);
  tab_free(&m->tasks);
  tab_free(&m->keys);
  free(m->rbuf);
  free(m->state_dir);
  free(m);
  return err;
}

int tfs_mount_default_point(char *buf, size_t len) {
  const char *rt = getenv("XDG_RUNTIME_DIR");
  const char *home = getenv("HOME");
  int n;
  if (rt && *rt == '/')
    n = snprintf(buf, len, "%s/taskfs", rt);
  else if (home && *home == '/')
    n = snprintf(buf, len, "%s/taskfs", home);
  else
    return -ENOENT;
  return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int tfs_mount_check_point(const char *path, char *msg, size_t msglen) {
  struct stat st;
  if (stat(path, &st)) {
    int e = errno;
    if (e == ENOTCONN || e == ECONNABORTED)
      snprintf(msg, msglen,
               "%s is a stale mount (transport endpoint is not connected: its mount process "
               "died); run 'taskfs umount %s' and try again",
               path, path);
    else if (e == ENOENT)
      snprintf(msg, msglen, "mount point %s does not exist; create it with 'mkdir -p %s'", path,
               path);
    else
      snprintf(msg, msglen, "cannot use mount point %s: %s", path, strerror(e));
    return -e;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(msg, msglen, "mount point %s is not a directory", path);
    return -ENOTDIR;
  }
  /* Mounting over a live mount would hide it, not replace it. */
  struct statfs sf;
  if (!statfs(path, &sf) && sf.f_type == FUSE_SUPER_MAGIC) {
    snprintf(msg, msglen,
             "%s is already a FUSE mount (a taskfs mount still running?); run 'taskfs umount %s' "
             "first",
             path, path);
    return -EBUSY;
  }
  return 0;
}

int tfs_mount_unmount(const char *path, int lazy, char *msg, size_t msglen) {
  if (geteuid() == 0) {
    if (!umount2(path, lazy ? MNT_DETACH : 0))
      return 0;
    int e = errno;
    if (e == EBUSY)
      snprintf(msg, msglen,
               "%s is busy (a process has a file open in it); close it, or use "
               "'taskfs umount --lazy %s'",
               path, path);
    else if (e == EINVAL)
      snprintf(msg, msglen, "%s is not a mount point", path);
    else
      snprintf(msg, msglen, "cannot unmount %s: %s", path, strerror(e));
    return -e;
  }
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(msg, msglen, "cannot fork: %s", strerror(errno));
    return -errno;
  }
  if (pid == 0) {
    execlp("fusermount3", "fusermount3", lazy ? "-uz" : "-u", "--", path, (char *)NULL);
    fprintf(stderr, "taskfs umount: cannot run fusermount3: %s\n", strerror(errno));
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return 0;
  snprintf(msg, msglen, "fusermount3 could not unmount %s (see its message above)", path);
  return -EIO;
}
