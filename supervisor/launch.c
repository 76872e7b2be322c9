/* Starting a supervisor, detached from whoever asks for it.
 *
 * The launcher forks; the child calls setsid() (a new session: no
 * controlling terminal, out of the launcher's process group) and forks
 * again, so the supervisor is a non-leader of that session (it can never
 * acquire a terminal) and is reparented away from the launcher. The
 * grandchild sets stdin/stdout to /dev/null, stderr to
 * tasks/<id>/supervisor.log, marks every other fd close-on-exec, resets
 * signal dispositions and the mask, and execs `taskfs supervise`.
 *
 * Everything the children need (argv, open fds) is prepared before fork:
 * between fork and exec only async-signal-safe calls are made, so a
 * multithreaded launcher (the MCP server, the mount) is safe.
 *
 * Environment overrides are for the worker only: the supervisor runs with
 * the launcher's environment, untouched (an LD_PRELOAD or LD_LIBRARY_PATH
 * meant for the user's program must not load into the supervisor, and a
 * TASKFS_* variable must not reconfigure it). The overrides travel as
 * "NAME=VALUE\0" records in an anonymous memory file (memfd: no path, never
 * on disk, no pipe capacity to deadlock on) whose fd is inherited and named
 * by `--env-fd N`; the supervisor reads it once at start, closes it, and
 * applies the records only in the worker's environment. The record holds
 * names only.
 *
 * An O_CLOEXEC status pipe tells the launcher whether the exec worked. Then
 * the launcher waits (inotify on the task directory, 50 ms re-checks) until
 * the record leaves `queued`: the supervisor writes `running` once the
 * worker has been exec'ed, or `failed` when it could not start.
 */
#include "supervisor/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char **environ;

/* Length of the NAME in "NAME=VALUE", or 0 if s is not of that form. */
static size_t env_name_len(const char *s) {
  size_t i = 0;
  if (!s || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
    return 0;
  while (s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
         (s[i] >= '0' && s[i] <= '9'))
    i++;
  return s[i] == '=' ? i : 0;
}

int tfs_sup_env_merge(char *const *base, char *const *over, char ***out) {
  size_t n = 0, nover = 0;
  while (base && base[n])
    n++;
  while (over && over[nover]) {
    if (!env_name_len(over[nover]))
      return -EINVAL;
    nover++;
  }
  char **env = calloc(n + nover + 1, sizeof *env);
  if (!env)
    return -ENOMEM;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    int replaced = 0;
    for (size_t j = 0; j < nover && !replaced; j++) {
      size_t l = env_name_len(over[j]);
      replaced = !strncmp(base[i], over[j], l + 1);
    }
    if (!replaced)
      env[m++] = base[i];
  }
  for (size_t j = 0; j < nover; j++) {
    /* A later override of the same name wins. */
    size_t l = env_name_len(over[j]);
    int later = 0;
    for (size_t k = j + 1; k < nover && !later; k++)
      later = !strncmp(over[k], over[j], l + 1);
    if (!later)
      env[m++] = over[j];
  }
  env[m] = NULL;
  *out = env;
  return 0;
}

/* Writes the overrides as "NAME=VALUE\0" records into a new memfd (close on
 * exec; the grandchild clears that for itself) rewound to its start, in
 * *fd (-1 when there is nothing to hand over). Returns 0, -EINVAL if an
 * override is not NAME=VALUE, or another negative errno. */
static int env_memfd(char *const *over, int *fd) {
  *fd = -1;
  if (!over || !over[0])
    return 0;
  for (size_t i = 0; over[i]; i++)
    if (!env_name_len(over[i]))
      return -EINVAL;
  int m = memfd_create("taskfs-worker-env", MFD_CLOEXEC);
  if (m < 0)
    return -errno;
  for (size_t i = 0; over[i]; i++) {
    const char *p = over[i];
    size_t left = strlen(p) + 1; /* the record ends with its NUL */
    while (left) {
      ssize_t w = write(m, p, left);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        int err = w < 0 ? -errno : -EIO;
        close(m);
        return err;
      }
      p += w;
      left -= (size_t)w;
    }
  }
  if (lseek(m, 0, SEEK_SET) < 0) {
    int err = -errno;
    close(m);
    return err;
  }
  *fd = m;
  return 0;
}

int tfs_sup_open_file(tfs_store_t *store, const char *id, const char *name, int flags) {
  /* tfs_task_openat() refuses anything but a regular file (TFS_ECORRUPT);
   * the supervisor's messages call that "not a regular file". */
  int fd = tfs_task_openat(store, id, name, flags, 0600);
  return fd == TFS_ECORRUPT ? -EINVAL : fd;
}

/* Records that the supervisor could not be started at all. */
static void record_launch_failure(tfs_store_t *store, const char *id, const char *exe, int err) {
  tfs_record_t rec;
  memset(&rec, 0, sizeof rec); /* the loader initializes it */
  if (tfs_task_load(store, id, &rec) == 0 && rec.state == TFS_QUEUED) {
    rec.state = TFS_FAILED;
    rec.exit_code = 127;
    rec.ended_ms = tfs_now_ms();
    tfs_record_set_reason(&rec, "cannot start the supervisor '%s': %s", exe, strerror(-err));
    tfs_task_save(store, &rec);
  }
  tfs_record_free(&rec);
}

/* Loads the record into *rec (an initialized record, replaced on success). */
static int reload(tfs_store_t *store, const char *id, tfs_record_t *rec, tfs_state_t *state) {
  tfs_record_t cur;
  memset(&cur, 0, sizeof cur); /* the loader initializes it */
  int err = tfs_task_load(store, id, &cur);
  if (err == 0) {
    *state = cur.state;
    if (rec) {
      tfs_record_free(rec);
      *rec = cur;
      return 0;
    }
  }
  tfs_record_free(&cur);
  return err;
}

/* The supervisor was exec'ed but has held no lock for DEAD_MS while the task
 * is still queued: it died before starting the task (its log says why).
 * Holding the lock ourselves, so that a very late supervisor then finds the
 * task ended and leaves it alone, the task is recorded failed. Returns 1 if
 * it did so. */
#define DEAD_MS 5000
static int give_up(tfs_store_t *store, const char *id) {
  int done = 0;
  int fd = tfs_task_openat(store, id, "lock", O_RDWR | O_CREAT, 0600);
  if (fd < 0)
    return 0;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    tfs_record_t rec;
    memset(&rec, 0, sizeof rec);
    if (tfs_task_load(store, id, &rec) == 0 && rec.state == TFS_QUEUED) {
      rec.state = TFS_FAILED;
      rec.exit_code = 127;
      rec.ended_ms = tfs_now_ms();
      tfs_record_set_reason(&rec,
                            "the supervisor exited before starting the task; see "
                            "tasks/%s/supervisor.log in the store",
                            id);
      done = tfs_task_save(store, &rec) == 0;
    }
    tfs_record_free(&rec);
  }
  close(fd);
  return done;
}

/* Waits until the record leaves queued or wait_ms passes. */
static int wait_started(tfs_store_t *store, const char *id, int ino, int64_t wait_ms,
                        tfs_record_t *rec) {
  int64_t deadline = tfs_now_ms() + wait_ms, dead_since = 0;
  for (;;) {
    tfs_state_t state = TFS_QUEUED;
    int err = reload(store, id, rec, &state);
    if (err == 0 && state != TFS_QUEUED)
      return 0;
    if (err && err != -ENOENT && err != TFS_ECORRUPT)
      return err;
    int64_t now = tfs_now_ms();
    if (tfs_task_alive(store, id) != 0) {
      dead_since = 0;
    } else if (!dead_since) {
      dead_since = now;
    } else if (now - dead_since >= DEAD_MS && give_up(store, id)) {
      continue; /* read the failed record back */
    }
    int64_t left = deadline - tfs_now_ms();
    if (left <= 0)
      return 0;
    struct pollfd pfd = {.fd = ino, .events = POLLIN};
    int ms = left < 50 ? (int)left : 50;
    if (ino >= 0 && poll(&pfd, 1, ms) > 0) {
      char buf[4096];
      while (read(ino, buf, sizeof buf) > 0)
        ;
    } else if (ino < 0) {
      poll(NULL, 0, ms);
    }
  }
}

int tfs_launch(tfs_store_t *store, const char *id, const tfs_launch_opts_t *opts,
               tfs_record_t *rec_out) {
  if (rec_out)
    tfs_record_init(rec_out);
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  const char *exe = opts && opts->exe ? opts->exe : getenv("TASKFS_SUPERVISOR_EXE");
  if (!exe || !*exe)
    exe = "/proc/self/exe";
  int64_t wait_ms = opts ? opts->wait_ms : -1;
  if (wait_ms < 0)
    wait_ms = 10000;

  tfs_state_t state = TFS_QUEUED;
  int err = reload(store, id, rec_out, &state);
  if (err)
    return err;
  if (state != TFS_QUEUED)
    return -EALREADY;

  int envfd = -1;
  err = env_memfd(opts ? opts->env : NULL, &envfd);
  if (err)
    return err;
  char envarg[16];
  snprintf(envarg, sizeof envarg, "%d", envfd);
  char *argv[] = {"taskfs", "supervise", "--state-dir", (char *)tfs_store_path(store),
                  NULL,     NULL,        NULL,          NULL};
  int ai = 4;
  if (envfd >= 0) {
    argv[ai++] = "--env-fd";
    argv[ai++] = envarg;
  }
  argv[ai] = (char *)id;

  int devnull = -1, logfd = -1, ino = -1, st[2] = {-1, -1};
  devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    err = -errno;
    goto out;
  }
  logfd = tfs_sup_open_file(store, id, "supervisor.log", O_WRONLY | O_CREAT | O_APPEND);
  if (logfd < 0) {
    err = logfd;
    goto out;
  }
  if (pipe2(st, O_CLOEXEC) < 0) {
    err = -errno;
    goto out;
  }
  /* Watch before forking, so a quick supervisor cannot be missed. */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/tasks/%s", tfs_store_path(store), id);
  ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (ino >= 0 && inotify_add_watch(ino, dir, IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE) < 0) {
    close(ino);
    ino = -1;
  }

  pid_t pid = fork();
  if (pid < 0) {
    err = -errno;
    goto out;
  }
  if (pid == 0) {
    /* The intermediate child: a session of its own, then away. */
    if (setsid() < 0 || (pid = fork()) < 0) {
      int e = errno;
      (void)!write(st[1], &e, sizeof e);
      _exit(1);
    }
    if (pid > 0)
      _exit(0);
    /* The grandchild: a clean slate, then exec. */
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
      sigaction(sig, &dfl, NULL);
    if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(logfd, 2) < 0 || chdir("/") < 0) {
      int e = errno;
      (void)!write(st[1], &e, sizeof e);
      _exit(1);
    }
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
      for (int fd = 3; fd < 1024; fd++)
        if (fd != st[1])
          fcntl(fd, F_SETFD, FD_CLOEXEC);
    /* The one fd the supervisor inherits on purpose. */
    if (envfd >= 0 && fcntl(envfd, F_SETFD, 0) < 0) {
      int e = errno;
      (void)!write(st[1], &e, sizeof e);
      _exit(1);
    }
    execve(exe, argv, environ);
    int e = errno;
    (void)!write(st[1], &e, sizeof e);
    _exit(127);
  }

  close(st[1]);
  st[1] = -1;
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  int child_err = 0;
  ssize_t n;
  while ((n = read(st[0], &child_err, sizeof child_err)) < 0 && errno == EINTR)
    ;
  if (n == (ssize_t)sizeof child_err && child_err) {
    err = -child_err;
    record_launch_failure(store, id, exe, err);
    tfs_state_t ignored;
    reload(store, id, rec_out, &ignored);
    goto out;
  }
  err = wait_started(store, id, ino, wait_ms, rec_out);

out:
  if (envfd >= 0)
    close(envfd);
  for (int i = 0; i < 2; i++)
    if (st[i] >= 0)
      close(st[i]);
  if (devnull >= 0)
    close(devnull);
  if (logfd >= 0)
    close(logfd);
  if (ino >= 0)
    close(ino);
  return err;
}

int tfs_task_start(tfs_store_t *store, const tfs_task_spec_t *spec, const tfs_launch_opts_t *opts,
                   char id_out[TFS_ID_MAX + 1], int *existed, tfs_record_t *rec_out) {
  int ex = 0;
  tfs_state_t state = TFS_QUEUED;
  if (rec_out)
    tfs_record_init(rec_out);
  int err = tfs_task_create(store, spec, id_out, &ex);
  if (existed)
    *existed = ex;
  if (err)
    return err;
  if (ex) {
    err = reload(store, id_out, rec_out, &state);
    if (err || state != TFS_QUEUED || tfs_task_alive(store, id_out) != 0)
      return err;
  }
  if (rec_out)
    tfs_record_free(rec_out);
  err = tfs_launch(store, id_out, opts, rec_out);
  /* Someone else's launch got there first: fine, report what is. */
  if (err == -EALREADY)
    err = reload(store, id_out, rec_out, &state);
  return err;
}
