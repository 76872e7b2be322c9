/* Starting a supervisor, detached from whoever asks for it.
 *
 * The launcher forks; the child calls setsid() (a new session: no
 * controlling terminal, out of the launcher's process group) and forks
 * again, so the supervisor is a non-leader of that session (it can never
 * acquire a terminal) and is reparented away from the launcher (a CLI
 * that runs the supervisor without an exec forks once: spawn_run). The
 * grandchild sets stdin/stdout to /dev/null, stderr to
 * tasks/<id>/supervisor.log, marks every other fd close-on-exec, resets
 * signal dispositions and the mask, and execs `taskfs supervise`: the
 * light taskfs-supervise binary where it is installed (supervisor_exe()).
 * A single-threaded launcher that links the supervisor (the CLI) may ask
 * for no exec at all (no_exec): the grandchild then closes what it must
 * not hold and runs the supervisor itself (inproc.c).
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
 * the launcher waits (a core watch of the task: the record's renames at
 * once, a tick for a supervisor that died) until the record leaves
 * `queued`: the supervisor writes `running` once the worker has been
 * exec'ed, or `failed` when it could not start.
 *
 * tfs_task_start() is the one way a face starts a task: it creates the
 * task (or finds it under its key, adopting one stranded in queued) and
 * launches it, in two steps a face may split (the MCP server answers
 * between them).
 */
#include "supervisor/child.h"
#include "supervisor/internal.h"
#include "taskfs/text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char **environ;

/* Writes the overrides as "NAME=VALUE\0" records into a new memfd (close on
 * exec; the grandchild clears that for itself) rewound to its start, in
 * *fd (-1 when there is nothing to hand over). Returns 0, -EINVAL if an
 * override is not NAME=VALUE, or another negative errno. */
static int env_memfd(char *const *over, int *fd) {
  *fd = -1;
  if (!over || !over[0])
    return 0;
  for (size_t i = 0; over[i]; i++)
    if (!tfs_env_name_len(over[i]))
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

int sup_open_file(tfs_store_t *store, const char *id, tfs_task_file_t which, int flags) {
  /* tfs_task_file_open() refuses anything but a regular file
   * (TFS_ECORRUPT); the supervisor's messages call that "not a regular
   * file". */
  int fd = tfs_task_file_open(store, id, which, flags, 0600);
  return fd == TFS_ECORRUPT ? -EINVAL : fd;
}

/* Loads the record into *rec (an initialized record, replaced on success;
 * may be NULL) and its state into *state. */
static int reload(tfs_store_t *store, const char *id, tfs_record_t *rec, tfs_state_t *state) {
  tfs_record_t cur;
  memset(&cur, 0, sizeof cur); /* the loader initializes it */
  int err = tfs_task_load(store, id, &cur);
  if (err == 0) {
    *state = cur.state;
    /* A worker started while the task stays queued: an engine holds it
     * (a pending job); it is started as far as the launch goes. */
    if (cur.state == TFS_QUEUED && cur.worker_pid > 0)
      *state = TFS_RUNNING;
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
 * tfs_task_fail_queued() holds the lock while it records the task failed,
 * so a very late supervisor then finds it ended and leaves it alone.
 * Returns 1 if it did so, or why that failed (-ENOSPC on a full store:
 * then nobody can record this task's end, and the launch fails rather
 * than wait for it). */
#define DEAD_MS 5000
static int give_up(tfs_store_t *store, const char *id) {
  return tfs_task_fail_queued(store, id, 127,
                              "the supervisor exited before starting the task; see "
                              "tasks/%s/%s in the store",
                              id, tfs_task_file_name(TFS_FILE_SUPERVISOR_LOG));
}

/* The watch's report: the record was replaced (a rename of record.json;
 * the line index renamed in beside it is no news). */
static void on_state(const char *id, unsigned what, void *arg) {
  (void)id;
  if (what & (TFS_WATCH_STATE | TFS_WATCH_GONE))
    *(int *)arg = 1;
}

/* 1 once the record says the launch is over: running (or failed to
 * start), or taken by its supervisor, which waits for a dependency, its
 * start time or its queue's slot. */
static int started(const tfs_record_t *rec, tfs_state_t state) {
  return state != TFS_QUEUED || rec->supervisor_pid > 0;
}

/* Waits until the record leaves queued or wait_ms passes. The record is
 * read when the watch reports it replaced (the supervisor's first save,
 * running or failed, is a rename seen at once) and at each tick, which
 * also notices a supervisor that died; not before: the watch was set
 * before the fork, and the supervisor cannot have saved anything before
 * the launcher learnt that it runs. rec ends as last read. */
static int wait_started(tfs_store_t *store, const char *id, tfs_watch_t *w, int64_t wait_ms,
                        tfs_record_t *rec) {
  int64_t now = tfs_now_ms(), deadline = now + wait_ms, dead_since = 0;
  int64_t next_tick = now + tfs_watch_tick_ms(w);
  int changed = 0, err = 0;
  for (;;) {
    int tick = now >= next_tick;
    tfs_state_t state = TFS_QUEUED;
    if (changed || tick || now >= deadline) {
      err = reload(store, id, rec, &state);
      if ((err == 0 && started(rec, state)) || (err && err != TFS_ECORRUPT))
        return err;
    }
    if (tick) {
      next_tick = now + tfs_watch_tick_ms(w);
      if (tfs_task_alive(store, id) != 0) {
        dead_since = 0;
      } else if (!dead_since) {
        dead_since = now;
      } else if (now - dead_since >= DEAD_MS) {
        int r = give_up(store, id);
        if (r == -ENOSPC || r == -EDQUOT)
          return r;
        changed = r == 1; /* read the failed record back */
        if (changed)
          continue;
      }
    }
    if (now >= deadline)
      return 0;
    changed = 0;
    int64_t until = next_tick < deadline ? next_tick : deadline;
    tfs_watch_wait(w, until - now, NULL, -1, on_state, &changed);
    now = tfs_now_ms();
  }
}

/* What the launcher prepares before it forks: nothing is allocated between
 * fork and exec. */
typedef struct {
  const char *exe;
  char exebuf[PATH_MAX];
  char *argv[8];
  char envarg[16];
  int envfd, devnull, logfd, st[2]; /* st: the exec status pipe */
  int no_exec;                      /* the grandchild is the supervisor (inproc.c) */
} spawn_t;

static void spawn_close(spawn_t *sp) {
  int *fds[] = {&sp->envfd, &sp->devnull, &sp->logfd, &sp->st[0], &sp->st[1]};
  for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
    if (*fds[i] >= 0)
      close(*fds[i]);
    *fds[i] = -1;
  }
}

int sup_libexec_find(const char *name, char *buf, size_t size) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char *slash = n > 0 ? (self[n] = 0, strrchr(self, '/')) : NULL;
  if (!slash)
    return -ENOENT;
  *slash = 0;
  static const char *const rel[] = {"", "/../libexec/taskfs"};
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
    if ((size_t)snprintf(buf, size, "%s%s/%s", self, rel[i], name) < size && access(buf, X_OK) == 0)
      return 0;
  return -ENOENT;
}

/* The binary a start execs: the light taskfs-supervise (core and the
 * supervisor only) where it is installed with this one, beside it (the
 * build tree) or in ../libexec/taskfs/ (make install, the package); else
 * this very binary, whose hidden `supervise` verb is the same code. The
 * path comes from where this binary is, never from the environment. */
static const char *supervisor_exe(char *buf, size_t size) {
  return sup_libexec_find("taskfs-supervise", buf, size) == 0 ? buf : "/proc/self/exe";
}

static int spawn_prepare(tfs_store_t *store, const char *id, const tfs_launch_opts_t *opts,
                         spawn_t *sp) {
  memset(sp, 0, sizeof *sp);
  sp->envfd = sp->devnull = sp->logfd = sp->st[0] = sp->st[1] = -1;
  sp->exe = opts && opts->exe ? opts->exe : getenv("TASKFS_SUPERVISOR_EXE");
  /* No exec where the launcher asks for none and can (one thread), unless
   * a binary is named (tests, valgrind, which follows only execs). */
  sp->no_exec = opts && opts->no_exec && (!sp->exe || !*sp->exe) && sup_inproc_possible();
  if (!sp->exe || !*sp->exe)
    sp->exe = supervisor_exe(sp->exebuf, sizeof sp->exebuf);
  int err = env_memfd(opts ? opts->env : NULL, &sp->envfd);
  if (err)
    return err;
  snprintf(sp->envarg, sizeof sp->envarg, "%d", sp->envfd);
  char **a = sp->argv;
  *a++ = "taskfs";
  *a++ = "supervise";
  *a++ = "--state-dir";
  *a++ = (char *)tfs_store_path(store);
  if (sp->envfd >= 0) {
    *a++ = "--env-fd";
    *a++ = sp->envarg;
  }
  *a++ = (char *)id;
  *a = NULL;
  if ((sp->devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
    return -errno;
  sp->logfd = sup_open_file(store, id, TFS_FILE_SUPERVISOR_LOG, O_WRONLY | O_CREAT | O_APPEND);
  if (sp->logfd < 0)
    return sp->logfd;
  return pipe2(sp->st, O_CLOEXEC) < 0 ? -errno : 0;
}

/* Reports errno on the status pipe and ends the child. */
static void child_fail(const spawn_t *sp, int code) {
  int e = errno;
  (void)!write(sp->st[1], &e, sizeof e);
  _exit(code);
}

/* The grandchild: a clean slate (signals, fds, cwd), then the supervisor
 * in this very process (no_exec), or exec. Only async-signal-safe calls
 * before that. */
static void spawn_exec(const spawn_t *sp) {
  sup_child_t c = {.stdio = {sp->devnull, sp->devnull, sp->logfd}, .cloexec_from = 3};
  if (sup_child_init(&c) || chdir("/") < 0)
    child_fail(sp, 1);
  if (sp->no_exec)
    sup_inproc_run(sp->argv, sp->envfd); /* returns only to exec after all */
  /* The one fd the supervisor inherits on purpose. */
  if (sp->envfd >= 0 && fcntl(sp->envfd, F_SETFD, 0) < 0)
    child_fail(sp, 1);
  execve(sp->exe, sp->argv, environ);
  child_fail(sp, 127);
}

/* Forks the supervisor. For an exec: an intermediate child (a session of
 * its own, then away) and the grandchild that execs, so that a launcher
 * that lives on (the MCP server, the mount) never holds a supervisor as
 * its child. Without an exec (the CLI, which exits or ends with the task)
 * one fork is enough: the child takes a session of its own and is the
 * supervisor, a session leader that opens no terminal (every open in
 * core and the supervisor is O_NOCTTY or of no tty), and the init process
 * or the nearest subreaper adopts it when the CLI exits. A fork of this VM
 * costs 1.3-1.8 ms, a fifth of a start (bench/analysis.md, Row 11). The
 * status pipe reports the exec's or the in-process start's error; its end
 * in the child closes at the exec, or when the supervisor closes what it
 * inherited (inproc.c). Returns 0 once that happened, or the error. */
static int spawn_run(spawn_t *sp) {
  /* The supervisor without an exec would write out what this process's
   * stdio still holds once more when it exits. */
  if (sp->no_exec)
    fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    return -errno;
  if (pid == 0) {
    if (setsid() < 0)
      child_fail(sp, 1);
    if (!sp->no_exec && (pid = fork()) != 0) {
      if (pid < 0)
        child_fail(sp, 1);
      _exit(0);
    }
    spawn_exec(sp);
  }
  close(sp->st[1]);
  sp->st[1] = -1;
  while (!sp->no_exec && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  int child_err = 0;
  ssize_t n;
  while ((n = read(sp->st[0], &child_err, sizeof child_err)) < 0 && errno == EINTR)
    ;
  return n == (ssize_t)sizeof child_err && child_err ? -child_err : 0;
}

/* tfs_launch(), after the check that the task is queued (the caller's
 * own read, or launch()'s). rec: initialized, the record as last read. */
static int launch_queued(tfs_store_t *store, const char *id, const tfs_launch_opts_t *opts,
                         tfs_record_t *rec) {
  spawn_t sp;
  tfs_watch_t *w = NULL;
  tfs_state_t state = TFS_QUEUED;
  int64_t wait_ms = opts ? opts->wait_ms : -1;
  if (wait_ms < 0)
    wait_ms = 10000;
  int err = spawn_prepare(store, id, opts, &sp);
  /* Watch before forking, so a quick supervisor cannot be missed. */
  if (!err && !(err = tfs_watch_open(store, &w)))
    tfs_watch_add(w, id, TFS_WATCH_STATE);
  if (!err && (err = spawn_run(&sp))) {
    tfs_task_fail_queued(store, id, 127, "cannot start the supervisor '%s': %s", sp.exe,
                         strerror(-err));
    reload(store, id, rec, &state);
  } else if (!err) {
    err = wait_started(store, id, w, wait_ms, rec);
  }
  spawn_close(&sp);
  tfs_watch_close(w);
  return err;
}

int tfs_launch(tfs_store_t *store, const char *id, const tfs_launch_opts_t *opts,
               tfs_record_t *rec_out) {
  tfs_state_t state = TFS_QUEUED;
  tfs_record_t mine;
  tfs_record_t *rec = rec_out ? rec_out : &mine;
  tfs_record_init(rec);
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  int err = reload(store, id, rec, &state);
  if (!err && state != TFS_QUEUED)
    err = -EALREADY;
  if (!err)
    err = launch_queued(store, id, opts, rec);
  if (rec == &mine)
    tfs_record_free(&mine);
  return err;
}

/* ---- starting a task: create or find, then launch if needed ------------ */

void tfs_start_free(tfs_start_t *st) {
  tfs_record_free(&st->rec);
}

int tfs_task_start_create(tfs_store_t *store, const tfs_task_spec_t *spec, tfs_start_t *st) {
  tfs_state_t state = TFS_QUEUED;
  memset(st, 0, sizeof *st);
  tfs_record_init(&st->rec);
  int err = tfs_task_create(store, spec, st->id, &st->existed);
  if (err)
    return err;
  if (!st->existed) {
    st->launch = 1;
    return reload(store, st->id, &st->rec, &state);
  }
  if ((err = reload(store, st->id, &st->rec, &state)))
    return err;
  /* Queued with no supervisor: its launcher died between creating and
   * launching it. Adopt it, or the key would be wedged for ever. Should
   * the first launch still be on its way, the later of the two
   * supervisors finds the task taken and leaves. */
  st->launch = state == TFS_QUEUED && tfs_task_alive(store, st->id) == 0;
  st->ended = tfs_state_terminal(state);
  return 0;
}

int tfs_task_start_launch(tfs_store_t *store, const tfs_launch_opts_t *opts, tfs_start_t *st) {
  tfs_state_t state = TFS_QUEUED;
  if (!st->launch)
    return 0;
  /* st->rec was read queued by step one: launched without reading it
   * again. Should another launcher have taken the task meanwhile, this
   * supervisor finds it taken and leaves, and the wait reads what is. */
  int err = TFS_EBADID;
  if (tfs_id_valid(st->id))
    err = st->rec.state == TFS_QUEUED ? launch_queued(store, st->id, opts, &st->rec) : -EALREADY;
  /* Someone else's launch got there first: fine, report what is. */
  if (err == -EALREADY)
    err = reload(store, st->id, &st->rec, &state);
  else if (err)
    st->launch_err = err;
  st->not_started = st->rec.state == TFS_FAILED && st->rec.nexits == 0;
  return err;
}

int tfs_task_start(tfs_store_t *store, const tfs_task_spec_t *spec, const tfs_launch_opts_t *opts,
                   tfs_start_t *st) {
  int err = tfs_task_start_create(store, spec, st);
  return err ? err : tfs_task_start_launch(store, opts, st);
}
