/* The supervisor: the hidden `taskfs supervise --state-dir DIR ID` verb.
 *
 * One supervisor owns one task for its whole life. It holds the task lock
 * (the kernel lock every reader checks), is a child subreaper (so every
 * descendant of the worker stays below it), and runs one libuv loop for
 * everything: the worker's exit, its two output pipes, stop requests,
 * signals to itself, and timers.
 *
 * The worker is forked and exec'ed here, not with uv_spawn: libuv's own
 * SIGCHLD handling reaps only the children it spawned, while a subreaper
 * also inherits orphaned descendants that must be reaped. So SIGCHLD is a
 * plain uv_signal_t whose callback loops waitpid(-1, WNOHANG) and tells the
 * worker apart by pid. waitpid() failing with ECHILD also proves the whole
 * tree is gone: every descendant has a living parent below us or has been
 * reparented to us.
 *
 * One worker "generation" ends when the worker has been reaped, no
 * descendant is left and both pipes reached their end. Then the restart
 * policy decides: start another worker (after a back-off for quick deaths)
 * or record the end.
 */
#include "supervisor/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

extern char **environ;

#define SAVE_TICK_MS 250     /* counters are saved at most this often */
#define ALIVE_EVERY_MS 30000 /* aliveAt is refreshed at least this often */
/* The poll for stop requests: the fallback when there is no doorbell, and
 * otherwise only for a cancel file written by hand, so it can be slow and
 * cost nothing while a task idles. */
#define CANCEL_POLL_MS 1000
#define CANCEL_POLL_BELL_MS 10000
#define KILL_REPEAT_MS 100 /* after the grace period: SIGKILL rounds */
#define DRAIN_MS 1000      /* pipes still open once the tree is gone */
#define HOLD_MAX_MS 1000   /* a stream held back by a long line waits at most this */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
#define LOG_MAX (256 * 1024) /* supervisor.log stops growing past this */
/* Space held back for the final record: if the worker's output fills the
 * disk, this file is deleted before the last save so the end still lands. */
#define RESERVE_NAME "space-reserve"
#define RESERVE_BYTES (128 * 1024)

typedef enum { PH_START, PH_RUNNING, PH_DRAINING, PH_BACKOFF, PH_DONE } phase_t;

typedef struct {
  uv_loop_t loop;
  tfs_store_t *store;
  const char *id;
  tfs_record_t rec;
  int lock_fd, tx_fd, side_fd, devnull, bell_fd;
  tfs_capture_t cap;

  uv_pipe_t pipe[2];
  int pipe_open[2]; /* initialized and not yet closed */
  int reading[2];
  uv_signal_t sigchld, sigterm, sigint;
  uv_timer_t save_timer, alive_timer, poll_timer, kill_timer, backoff_timer, drain_timer;
  uv_timer_t hold_timer;
  uv_poll_t bell_poll;

  phase_t phase;
  pid_t worker;
  pid_t sentinel;    /* this worker's sentinel (our child), or 0 */
  char **worker_env; /* environ plus the overrides from --env-fd, or NULL */
  char *env_buf;     /* the "NAME=VALUE\0" records worker_env points into */
  int worker_reaped;
  int worker_status;
  int exit_requested; /* a stop had been requested when the worker exited */
  int tree_empty;
  int leftovers_signalled;
  int64_t worker_started_ms, worker_ended_ms;

  int stopping;
  char stop_by[512];
  int64_t stop_at;
  int killed; /* SIGKILL was needed */

  int quick_in_row;
  int64_t backoff_ms;

  int64_t saved_lines, saved_bytes, saved_important, last_save_ms;
  int save_failed;
  int64_t last_log_ms;
} sup_t;

/* Diagnostics go to stderr, which the launcher pointed at
 * tasks/<id>/supervisor.log. A task restarting for days must not fill the
 * disk with them: past LOG_MAX bytes only the final line is written. */
static void logmsg(sup_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logmsg(sup_t *s, const char *fmt, ...) {
  char t[TFS_TIME_BUF];
  va_list ap;
  struct stat st;
  if (s->phase != PH_DONE && fstat(2, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > LOG_MAX)
    return;
  fprintf(stderr, "%s supervisor[%d] %s: ", tfs_time_format(tfs_now_ms(), t), (int)getpid(), s->id);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static void finish(sup_t *s, tfs_state_t state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- saving the record -------------------------------------------------- */

static void on_save_tick(uv_timer_t *t);

static void save(sup_t *s) {
  int64_t now = tfs_now_ms();
  s->rec.lines = s->cap.lines;
  s->rec.bytes = s->cap.bytes;
  s->rec.alive_ms = now;
  int err = tfs_task_save(s->store, &s->rec);
  if (err) {
    /* Retried on the next tick; logged at most every 10 s. */
    s->save_failed = 1;
    if (s->phase != PH_DONE && !uv_is_active((uv_handle_t *)&s->save_timer))
      uv_timer_start(&s->save_timer, on_save_tick, SAVE_TICK_MS, 0);
    if (now - s->last_log_ms > 10000) {
      logmsg(s, "cannot save the record: %s (will retry)", tfs_strerror(err));
      s->last_log_ms = now;
    }
    return;
  }
  s->save_failed = 0;
  s->last_save_ms = now;
  s->saved_lines = s->cap.lines;
  s->saved_bytes = s->cap.bytes;
  s->saved_important = s->rec.important.total;
}

/* Counters are saved by a one-shot timer armed by output (mark_dirty):
 * at most one save per SAVE_TICK_MS whatever the output rate, and no
 * wake-up at all while the worker is quiet (a thousand idle supervisors
 * must cost next to nothing). */
static void on_save_tick(uv_timer_t *t) {
  sup_t *s = t->data;
  tfs_capture_flush_side(&s->cap);
  if (s->phase == PH_DONE)
    return;
  if (s->save_failed || s->cap.lines != s->saved_lines || s->cap.bytes != s->saved_bytes ||
      s->rec.important.total != s->saved_important)
    save(s);
  if (s->save_failed) /* retried on the next tick */
    uv_timer_start(&s->save_timer, on_save_tick, SAVE_TICK_MS, 0);
}

static void mark_dirty(sup_t *s) {
  if (s->phase != PH_DONE && !uv_is_active((uv_handle_t *)&s->save_timer))
    uv_timer_start(&s->save_timer, on_save_tick, SAVE_TICK_MS, 0);
}

/* aliveAt: refreshed when no other save happened for ALIVE_EVERY_MS. */
static void on_alive_tick(uv_timer_t *t) {
  sup_t *s = t->data;
  if (s->phase != PH_DONE && tfs_now_ms() - s->last_save_ms >= ALIVE_EVERY_MS - SAVE_TICK_MS)
    save(s);
}

/* ---- the process tree ------------------------------------------------- */

/* Signals everything the task started. The worker's process group is used
 * only while the worker is unreaped: its zombie pins the group id, so the
 * id cannot have been recycled. Descendants are found in /proc. */
static void signal_tree(sup_t *s, int sig) {
  if (s->worker > 0 && !s->worker_reaped)
    kill(-s->worker, sig);
  tfs_kill_descendants(sig);
}

static void check_generation_end(sup_t *s);

static void on_kill_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  if (!s->tree_empty) {
    if (!s->killed)
      logmsg(s, "grace period of %" PRId64 " ms over: SIGKILL", s->rec.grace_ms);
    s->killed = 1;
    signal_tree(s, SIGKILL);
  }
}

/* Starts the grace period, then SIGKILL rounds until the tree is gone. */
static void arm_kill(sup_t *s) {
  if (!uv_is_active((uv_handle_t *)&s->kill_timer))
    uv_timer_start(&s->kill_timer, on_kill_timer, (uint64_t)s->rec.grace_ms, KILL_REPEAT_MS);
}

/* ---- the sentinel ------------------------------------------------------ */

/* The longest a sentinel waits between SIGTERM and SIGKILL. */
#define SENTINEL_GRACE_MAX_MS 5000

/* The sentinel's body, in a child forked right after the worker. If this
 * supervisor is killed (-9, OOM) nobody would stop the worker's process
 * group any more: the task reads lost, and no PID from the record is ever
 * signalled. The worker itself dies with us (PR_SET_PDEATHSIG in the
 * worker), but what it left in its group would run on. So the sentinel
 * sleeps until the kernel tells it its parent died (its own death signal),
 * then stops the group it knows from memory: SIGTERM, a grace, SIGKILL.
 *
 * It runs on the memory it shares with us: no allocation, no stdio, only
 * system calls, so it dirties a page or two of stack. Every signal stays
 * blocked (it is spared by tfs_kill_descendants, and a stray signal is
 * checked against getppid() and ignored). The group id cannot have been
 * recycled when it acts: the worker, its leader, was alive a moment ago
 * (it dies of its own death signal now, so its id stays pinned while any
 * other member of the group lives). */
static void __attribute__((noreturn)) sentinel_main(pid_t parent, pid_t pgid, int64_t grace_ms) {
  if (close_range(0, ~0U, 0) < 0)
    for (int fd = 0; fd < 1024; fd++)
      close(fd);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  prctl(PR_SET_NAME, "taskfs-sentinel");
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  /* The parent may have died before the death signal was set. */
  while (getppid() == parent) {
    int sig;
    sigwait(&all, &sig);
  }
  kill(-pgid, SIGTERM);
  kill(-pgid, SIGCONT); /* a stopped process would not see SIGTERM */
  if (grace_ms > SENTINEL_GRACE_MAX_MS)
    grace_ms = SENTINEL_GRACE_MAX_MS;
  for (int64_t waited = 0; waited < grace_ms && kill(-pgid, 0) == 0; waited += 50) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  kill(-pgid, SIGKILL);
  _exit(0);
}

/* Forks the sentinel for the worker just started (its process group is
 * its pid). Without one the task still runs: only the guard against our
 * own sudden death is missing, which is logged. */
static void start_sentinel(sup_t *s) {
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t self = getpid();
  pid_t pid = fork();
  if (pid == 0)
    sentinel_main(self, s->worker, s->rec.grace_ms);
  int e = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (pid < 0) {
    logmsg(s,
           "cannot start the sentinel of worker %d (%s): should this supervisor be killed, "
           "what the worker left in its process group would run on",
           (int)s->worker, strerror(e));
    return;
  }
  s->sentinel = pid;
  tfs_proctree_spare(pid);
}

/* Ends the sentinel: its worker's group is finished. It is our child (live
 * knowledge, not a PID from disk), killed and reaped at once. */
static void end_sentinel(sup_t *s) {
  pid_t pid = s->sentinel;
  if (pid <= 0)
    return;
  s->sentinel = 0;
  tfs_proctree_spare(0);
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

static void on_sigchld(uv_signal_t *h, int signum) {
  sup_t *s = h->data;
  for (;;) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      if (p == s->sentinel) {
        /* Not a worker exit: killed by us, or by someone else (then the
         * group is unguarded should this process die). */
        s->sentinel = 0;
        continue;
      }
      if (p == s->worker && !s->worker_reaped) {
        s->worker_reaped = 1;
        s->worker_status = st;
        s->worker_ended_ms = tfs_now_ms();
        s->exit_requested = s->stopping;
      }
      continue;
    }
    if (p < 0 && errno == EINTR)
      continue;
    s->tree_empty = p < 0; /* ECHILD: no child, hence no descendant at all */
    /* The sentinel is a child too, so while it lives ECHILD never comes:
     * once the worker is reaped and the sentinel is all that is left, its
     * job is done; it is ended and the wait goes round again. */
    if (!s->tree_empty && s->sentinel > 0 && s->worker_reaped && tfs_kill_descendants(0) == 0) {
      end_sentinel(s);
      continue;
    }
    break;
  }
  if (!s->worker_reaped || s->phase == PH_DONE)
    return;
  if (s->phase == PH_RUNNING)
    s->phase = PH_DRAINING;
  /* The worker is gone but left processes behind: the task owns its tree,
   * so they are asked to stop too (then killed after the grace period). */
  if (!s->tree_empty && !s->leftovers_signalled) {
    s->leftovers_signalled = 1;
    int n = tfs_kill_descendants(SIGTERM);
    tfs_kill_descendants(SIGCONT);
    if (n > 0)
      logmsg(s, "worker exited; SIGTERM to %d process(es) it left behind", n);
    arm_kill(s);
  }
  check_generation_end(s);
}

/* ---- output pipes ----------------------------------------------------- */

static int stream_of(sup_t *s, uv_handle_t *h) {
  return h == (uv_handle_t *)&s->pipe[TFS_STDERR] ? TFS_STDERR : TFS_STDOUT;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  sup_t *s = h->data;
  char *p;
  size_t n;
  tfs_capture_space(&s->cap, stream_of(s, h), &p, &n);
  buf->base = p;
  buf->len = n;
}

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf);
static void update_reading(sup_t *s);

/* Bytes waiting for stream i: in its pipe, or kept back in its buffer. */
static int stream_waiting(sup_t *s, int i) {
  int n = 0;
  uv_os_fd_t fd;
  if (s->cap.s[i].len)
    return 1;
  if (s->pipe_open[i] && uv_fileno((uv_handle_t *)&s->pipe[i], &fd) == 0 &&
      ioctl(fd, FIONREAD, &n) == 0)
    return n > 0;
  return 0;
}

/* A stream has been held back for HOLD_MAX_MS behind the other stream's
 * long line. If it has output waiting, its writer may be blocked on the
 * full pipe, and the long line may never end because of that (one process
 * writing both): the long line is cut (a '\n' the program did not write)
 * so that the waiting stream can go on. */
static void on_hold_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  int h = tfs_capture_holder(&s->cap);
  if (h < 0)
    return;
  if (!stream_waiting(s, !h)) {
    uv_timer_start(&s->hold_timer, on_hold_timer, HOLD_MAX_MS, 0);
    return;
  }
  if (!s->cap.cuts)
    logmsg(s, "a long line on %s held %s back for %d ms: cut it (more cuts are not logged)",
           h == TFS_STDERR ? "stderr" : "stdout", h == TFS_STDERR ? "stdout" : "stderr",
           HOLD_MAX_MS);
  tfs_capture_cut(&s->cap);
  mark_dirty(s);
  update_reading(s);
}

/* Reads only the streams that may write now: while one stream is in the
 * middle of a long line the other one waits, its pipe unread. */
static void update_reading(sup_t *s) {
  int h;
  for (int round = 0; round < 3; round++) {
    h = tfs_capture_holder(&s->cap);
    for (int i = 0; i < 2; i++)
      if (h < 0 || h == i)
        tfs_capture_pending(&s->cap, i);
    if (tfs_capture_holder(&s->cap) == h)
      break;
  }
  h = tfs_capture_holder(&s->cap);
  if (h < 0)
    uv_timer_stop(&s->hold_timer);
  else if (!uv_is_active((uv_handle_t *)&s->hold_timer))
    uv_timer_start(&s->hold_timer, on_hold_timer, HOLD_MAX_MS, 0);
  for (int i = 0; i < 2; i++) {
    if (!s->pipe_open[i] || uv_is_closing((uv_handle_t *)&s->pipe[i]))
      continue;
    int want = h < 0 || h == i;
    if (want && !s->reading[i])
      uv_read_start((uv_stream_t *)&s->pipe[i], on_alloc, on_read);
    else if (!want && s->reading[i])
      uv_read_stop((uv_stream_t *)&s->pipe[i]);
    s->reading[i] = want;
  }
}

static void on_pipe_closed(uv_handle_t *h) {
  sup_t *s = h->data;
  s->pipe_open[stream_of(s, h)] = 0;
  check_generation_end(s);
}

static void close_pipe(sup_t *s, int i) {
  if (!s->pipe_open[i] || uv_is_closing((uv_handle_t *)&s->pipe[i]))
    return;
  uv_read_stop((uv_stream_t *)&s->pipe[i]);
  s->reading[i] = 0;
  tfs_capture_eof(&s->cap, i);
  uv_close((uv_handle_t *)&s->pipe[i], on_pipe_closed);
}

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf) {
  sup_t *s = h->data;
  int i = stream_of(s, (uv_handle_t *)h);
  if (nread > 0) {
    tfs_capture_commit(&s->cap, i, (size_t)nread);
    mark_dirty(s);
  } else if (nread == UV_ENOBUFS)
    ; /* held back: update_reading stops this pipe */
  else if (nread < 0) {
    close_pipe(s, i);
    mark_dirty(s); /* a final partial line may have been written */
  }
  update_reading(s);
}

static void on_drain_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  /* Some process outside the tree still holds a pipe: stop waiting. */
  for (int i = 0; i < 2; i++)
    close_pipe(s, i);
  update_reading(s);
}

/* ---- workers ---------------------------------------------------------- */

typedef struct {
  int stage; /* 1: chdir, 2: exec */
  int err;
} start_err_t;

/* Forks and execs the worker in its own process group, its stdout and
 * stderr on two pipes. Returns 0, or fills why with the reason it could not
 * start and returns -1. */
static int spawn_worker(sup_t *s, char *why, size_t whylen) {
  int out[2] = {-1, -1}, err[2] = {-1, -1}, stp[2] = {-1, -1};
  const char *cmd = s->rec.argv[0];
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(stp, O_CLOEXEC) < 0) {
    snprintf(why, whylen, "cannot start '%s': no pipe for its output (%s)", cmd, strerror(errno));
    goto fail;
  }
  /* Block signals across fork: until the child has reset the handlers, a
   * signal would run libuv's handler there and write into the pipe libuv
   * shares with this process. */
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t self = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    /* The worker dies with this supervisor (even killed -9): unsupervised,
     * nothing could stop it any more. If we died before this was set,
     * the worker must not start at all. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
      _exit(127);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
      sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    start_err_t e = {0, 0};
    if (dup2(s->devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) {
      e.stage = 3;
    } else if (s->rec.cwd && chdir(s->rec.cwd) < 0) {
      e.stage = 1;
    } else {
      /* The overrides apply here only; execvp then also searches an
       * overridden PATH, as the worker's own environment says. */
      if (s->worker_env)
        environ = s->worker_env;
      execvp(cmd, s->rec.argv);
      e.stage = 2;
    }
    e.err = errno;
    (void)!write(stp[1], &e, sizeof e);
    _exit(127);
  }
  int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (pid < 0) {
    snprintf(why, whylen, "cannot start '%s': fork failed (%s)", cmd, strerror(fork_errno));
    goto fail;
  }
  /* Also here, so that signalling the group works before the child ran. */
  setpgid(pid, pid);
  close(out[1]);
  close(err[1]);
  close(stp[1]);
  out[1] = err[1] = stp[1] = -1;
  start_err_t e = {0, 0};
  ssize_t n;
  while ((n = read(stp[0], &e, sizeof e)) < 0 && errno == EINTR)
    ;
  close(stp[0]);
  stp[0] = -1;
  if (n == (ssize_t)sizeof e) {
    /* The child has exited or is about to; it is reaped by on_sigchld. */
    if (e.stage == 1)
      snprintf(why, whylen, "cannot start '%s': working directory '%s' is not usable (%s)", cmd,
               s->rec.cwd, strerror(e.err));
    else if (e.stage == 2 && e.err == ENOENT)
      snprintf(why, whylen, "cannot start '%s': %s (%s)", cmd,
               strchr(cmd, '/') ? "no such file" : "command not found", strerror(e.err));
    else if (e.stage == 2 && e.err == EACCES)
      snprintf(why, whylen, "cannot start '%s': not executable (%s)", cmd, strerror(e.err));
    else if (e.stage == 2 && e.err == ENOEXEC)
      snprintf(why, whylen, "cannot start '%s': not a program this system can run (%s)", cmd,
               strerror(e.err));
    else
      snprintf(why, whylen, "cannot start '%s': %s", cmd, strerror(e.err));
    goto fail;
  }

  s->worker = pid;
  s->worker_reaped = 0;
  s->worker_status = 0;
  s->tree_empty = 0;
  s->leftovers_signalled = 0;
  s->worker_started_ms = tfs_now_ms();
  s->worker_ended_ms = 0;
  s->rec.worker_pid = pid;
  s->rec.worker_pgid = pid;
  start_sentinel(s);
  int fds[2] = {out[0], err[0]};
  for (int i = 0; i < 2; i++) {
    uv_pipe_init(&s->loop, &s->pipe[i], 0);
    s->pipe[i].data = s;
    uv_pipe_open(&s->pipe[i], fds[i]);
    s->pipe_open[i] = 1;
    s->reading[i] = 0;
  }
  update_reading(s);
  return 0;

fail:
  for (int i = 0; i < 2; i++) {
    if (out[i] >= 0)
      close(out[i]);
    if (err[i] >= 0)
      close(err[i]);
    if (stp[i] >= 0)
      close(stp[i]);
  }
  return -1;
}

/* Starts a worker (the first or a restart) and records it. */
static void start_worker(sup_t *s) {
  char why[1024];
  if (spawn_worker(s, why, sizeof why) < 0) {
    logmsg(s, "%s", why);
    s->rec.exit_code = 127;
    s->rec.signal = 0;
    finish(s, TFS_FAILED, "%s", why);
    return;
  }
  s->phase = PH_RUNNING;
  if (s->rec.state != TFS_RUNNING) {
    s->rec.state = TFS_RUNNING;
    s->rec.started_ms = s->worker_started_ms;
  }
  logmsg(s, "worker %d started", (int)s->worker);
  save(s);
}

static void on_backoff_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  s->rec.restarts++;
  start_worker(s);
}

/* The worker's exit in words: "exited with code 1", "killed by signal
 * SIGSEGV". */
static void describe_exit(int status, char *buf, size_t len) {
  char sig[32];
  if (WIFSIGNALED(status))
    snprintf(buf, len, "killed by signal %s", tfs_signal_name(WTERMSIG(status), sig));
  else
    snprintf(buf, len, "exited with code %d", WEXITSTATUS(status));
}

static void generation_end(sup_t *s) {
  uv_timer_stop(&s->kill_timer);
  uv_timer_stop(&s->drain_timer);
  int st = s->worker_status;
  tfs_exit_t ex = {
      .started_ms = s->worker_started_ms,
      .ended_ms = s->worker_ended_ms,
      .exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1,
      .signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0,
      .requested = s->exit_requested,
  };
  if (s->rec.nexits == TFS_LAST_EXITS) {
    memmove(s->rec.exits, s->rec.exits + 1, (TFS_LAST_EXITS - 1) * sizeof ex);
    s->rec.nexits--;
  }
  s->rec.exits[s->rec.nexits++] = ex;
  s->rec.exit_code = ex.exit_code;
  s->rec.signal = ex.signal;
  char desc[128];
  describe_exit(st, desc, sizeof desc);
  logmsg(s, "worker %d %s", (int)s->worker, desc);

  if (s->stopping && !s->exit_requested) {
    /* The worker had ended on its own; the request only stopped what it
     * left behind. The end is the worker's. */
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    finish(s, ok ? TFS_COMPLETED : TFS_FAILED,
           "%s; then a stop request by %s ended the processes it left behind", desc, s->stop_by);
    return;
  }
  if (s->stopping) {
    int after_grace = s->killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    finish(s, TFS_CANCELLED, "stop requested by %s; the worker %s%s%s", s->stop_by,
           WIFSIGNALED(st) ? "was " : "", desc,
           after_grace ? " after the grace period ran out" : "");
    return;
  }
  int failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  int again =
      s->rec.restart == TFS_RESTART_ALWAYS || (s->rec.restart == TFS_RESTART_ON_FAILURE && failed);
  if (!again) {
    finish(s, failed ? TFS_FAILED : TFS_COMPLETED, "%s", desc);
    return;
  }
  int quick = ex.ended_ms - ex.started_ms < s->rec.min_uptime_ms;
  if (quick) {
    s->quick_in_row++;
  } else {
    s->quick_in_row = 0;
    s->backoff_ms = BACKOFF_FIRST_MS;
  }
  if (quick && s->quick_in_row > s->rec.max_restarts) {
    char last[64], sig[32];
    if (WIFSIGNALED(st))
      snprintf(last, sizeof last, "signal %s", tfs_signal_name(WTERMSIG(st), sig));
    else
      snprintf(last, sizeof last, "exit code %d", WEXITSTATUS(st));
    finish(s, TFS_FAILED,
           "crash loop: %d exits within min-uptime %" PRId64 " ms in a row (last: %s)",
           s->quick_in_row, s->rec.min_uptime_ms, last);
    return;
  }
  /* Quick deaths back off; any other restart waits at least the first
   * back-off step if the worker lived under a second, so that a policy
   * with min-uptime 0 cannot spin. */
  int64_t delay = ex.ended_ms - ex.started_ms < 1000 ? BACKOFF_FIRST_MS : 0;
  if (quick) {
    delay = s->backoff_ms;
    s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
  }
  tfs_capture_restart(&s->cap);
  s->phase = PH_BACKOFF;
  logmsg(s, "restarting in %" PRId64 " ms (%d quick exit(s) in a row)", delay, s->quick_in_row);
  save(s);
  uv_timer_start(&s->backoff_timer, on_backoff_timer, (uint64_t)delay, 0);
}

static void check_generation_end(sup_t *s) {
  if (s->phase != PH_DRAINING || !s->worker_reaped || !s->tree_empty)
    return;
  if (s->pipe_open[0] || s->pipe_open[1]) {
    if (!uv_is_active((uv_handle_t *)&s->drain_timer))
      uv_timer_start(&s->drain_timer, on_drain_timer, DRAIN_MS, 0);
    return;
  }
  generation_end(s);
}

/* ---- stop requests ---------------------------------------------------- */

static void request_stop(sup_t *s, const char *by, int64_t at) {
  if (s->stopping || s->phase == PH_DONE)
    return;
  s->stopping = 1;
  snprintf(s->stop_by, sizeof s->stop_by, "%s", by && *by ? by : "someone");
  s->stop_at = at ? at : tfs_now_ms();
  logmsg(s, "stop requested by %s", s->stop_by);
  if (s->phase == PH_BACKOFF || s->phase == PH_START) {
    /* No worker is running: nothing to stop, and not a crash. */
    uv_timer_stop(&s->backoff_timer);
    finish(s, TFS_CANCELLED, "stop requested by %s; no worker was running", s->stop_by);
    return;
  }
  signal_tree(s, SIGTERM);
  signal_tree(s, SIGCONT); /* a stopped process would not see SIGTERM */
  arm_kill(s);
}

/* Looks for the stop request; via says which path noticed it (the log
 * line "noticed via doorbell|poll|start" tells how stops are picked up). */
static void check_cancel(sup_t *s, const char *via) {
  char who[256] = "";
  int64_t at = 0;
  if (s->phase != PH_DONE && tfs_cancel_query(s->store, s->id, who, sizeof who, &at) == 1) {
    if (!s->stopping)
      logmsg(s, "stop request noticed via %s", via);
    request_stop(s, who, at);
  }
}

static void on_poll_timer(uv_timer_t *t) {
  check_cancel(t->data, "poll");
}

/* The doorbell rang: empty the FIFO (many rings count as one) and look. */
static void on_doorbell(uv_poll_t *h, int status, int events) {
  sup_t *s = h->data;
  char buf[256];
  while (read(s->bell_fd, buf, sizeof buf) > 0)
    ;
  check_cancel(s, "doorbell");
}

/* Creates tasks/<id>/doorbell, the FIFO that tfs_cancel_request() writes a
 * byte into after it has written the cancel file. One FIFO per task costs a
 * file descriptor, where an inotify watch would cost one of the user's few
 * inotify instances (fs.inotify.max_user_instances, 128 by default), which
 * hundreds of supervisors would use up for every other program. Opened
 * O_RDWR so that this process is a reader (writers do not get ENXIO) and a
 * writer (reads never see EOF). Returns 0, or a negative errno: then stop
 * requests are noticed by the poll alone. */
static int open_doorbell(sup_t *s) {
  char path[TFS_ID_MAX + 32];
  int tfd = tfs_store_tasks_fd(s->store);
  snprintf(path, sizeof path, "%s/%s", s->id, TFS_DOORBELL);
  /* Whatever has the name (a FIFO left by a killed supervisor, or a file
   * planted there) is replaced: this process owns the task. */
  if (unlinkat(tfd, path, 0) < 0 && errno != ENOENT)
    return -errno;
  if (mkfifoat(tfd, path, 0600) < 0)
    return -errno;
  int fd = openat(tfd, path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
    close(fd); /* replaced between mkfifoat and openat */
    return -EEXIST;
  }
  s->bell_fd = fd;
  return 0;
}

static void close_doorbell(sup_t *s) {
  char path[TFS_ID_MAX + 32];
  if (s->bell_fd < 0)
    return;
  snprintf(path, sizeof path, "%s/%s", s->id, TFS_DOORBELL);
  unlinkat(tfs_store_tasks_fd(s->store), path, 0);
}

static void on_signal(uv_signal_t *h, int signum) {
  sup_t *s = h->data;
  char by[128], sig[32];
  snprintf(by, sizeof by, "signal %s to the supervisor (pid %d)", tfs_signal_name(signum, sig),
           (int)getpid());
  request_stop(s, by, tfs_now_ms());
}

/* ---- the end ---------------------------------------------------------- */

static void make_reserve(sup_t *s) {
  int fd = tfs_sup_open_file(s->store, s->id, RESERVE_NAME, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd < 0)
    return;
  int err = posix_fallocate(fd, 0, RESERVE_BYTES);
  if (err)
    logmsg(s, "cannot reserve space for the final record: %s", strerror(err));
  close(fd);
}

static void release_reserve(sup_t *s) {
  char path[TFS_ID_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", s->id, RESERVE_NAME);
  unlinkat(tfs_store_tasks_fd(s->store), path, 0);
}

static void close_walk(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

/* Records the task's end (retrying a failed save for a few seconds: this is
 * the one write that must land), clears the stop request, and lets the loop
 * run out. */
static void finish(sup_t *s, tfs_state_t state, const char *fmt, ...) {
  if (s->phase == PH_DONE)
    return;
  s->phase = PH_DONE;
  char reason[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  for (int i = 0; i < 2; i++)
    if (s->pipe_open[i])
      tfs_capture_eof(&s->cap, i);
  tfs_capture_flush_side(&s->cap);
  if (s->cap.dropped) {
    size_t l = strlen(reason);
    snprintf(reason + l, sizeof reason - l,
             "; %" PRId64 " bytes of output were lost: the transcript could not be written (%s)",
             s->cap.dropped,
             s->cap.last_err == -ENOSPC ? "the disk is full" : strerror(-s->cap.last_err));
  }
  s->rec.state = state;
  s->rec.ended_ms = tfs_now_ms();
  tfs_record_set_reason(&s->rec, "%s", reason);
  release_reserve(s);
  /* Gone before the record says ended, so nobody sees an ended task with
   * a doorbell (a later ring gets ENOENT, which is fine). */
  close_doorbell(s);
  if (s->stopping) {
    free(s->rec.cancel_by);
    s->rec.cancel_by = strdup(s->stop_by);
    s->rec.cancel_ms = s->stop_at;
  }
  for (int attempt = 0; attempt < 50; attempt++) {
    save(s);
    if (!s->save_failed)
      break;
    usleep(100 * 1000);
  }
  logmsg(s, "task %s: %s", tfs_state_name(state), reason);
  /* The request has been acted on: a later run under the same key must not
   * inherit it. */
  tfs_cancel_clear(s->store, s->id);
  uv_walk(&s->loop, close_walk, NULL);
}

/* ---- main ------------------------------------------------------------- */

/* Reads the worker's environment overrides, "NAME=VALUE\0" records, from
 * the fd the launcher handed over (an anonymous memfd, see launch.c), then
 * closes it, and builds the worker's environment: ours with the overrides
 * applied. Our own environment is left as it is. Returns 0 or a negative
 * errno. */
static int read_env_fd(sup_t *s, int fd) {
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  int err = 0;
  for (;;) {
    if (!buf) {
      err = -ENOMEM;
      break;
    }
    if (cap - len < 2) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        continue;
      }
      buf = nb;
    }
    ssize_t n = pread(fd, buf + len, cap - len - 1, (off_t)len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      err = -errno;
      break;
    }
    if (n == 0)
      break;
    len += (size_t)n;
  }
  close(fd);
  if (err) {
    free(buf);
    return err;
  }
  buf[len] = 0;
  size_t nrec = 0;
  for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
    nrec++;
  char **over = calloc(nrec + 1, sizeof *over);
  if (!over) {
    free(buf);
    return -ENOMEM;
  }
  size_t k = 0;
  for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
    if (buf[i])
      over[k++] = buf + i;
  err = tfs_sup_env_merge(environ, over, &s->worker_env);
  free(over);
  if (err) {
    free(buf);
    return err;
  }
  s->env_buf = buf;
  return 0;
}

static void usage(FILE *out) {
  fprintf(out, "usage: taskfs supervise --state-dir DIR [--env-fd N] ID\n\n"
               "Internal: owns one queued task (started by 'taskfs run', the MCP server or\n"
               "the mount). Not meant to be run by hand.\n");
}

/* Takes the task lock (the same flock as tfs_task_lock(), O_CLOEXEC), but
 * without blocking for ever: a task may be launched twice (a `run --key`
 * adopting a task whose launcher died races with a late first launch), and
 * the second supervisor must not wait, blocked, for the task's whole life.
 * Readers (settling a lost task, a launcher giving up) hold the lock only
 * for a moment, so a lock still busy after 2 s belongs to a supervisor.
 * Returns the fd, -EBUSY, or another negative error. */
static int lock_task(sup_t *s) {
  int fd = tfs_task_openat(s->store, s->id, "lock", O_RDWR | O_CREAT, 0600);
  if (fd < 0)
    return fd;
  for (int i = 0; i < 40; i++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
      return fd;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      int err = -errno;
      close(fd);
      return err;
    }
    usleep(50 * 1000);
  }
  close(fd);
  return -EBUSY;
}

/* Fills the record's supervisor fields for this process. */
static void claim(sup_t *s) {
  tfs_owner_t o;
  s->rec.supervisor_pid = getpid();
  s->rec.supervisor_started_ms = tfs_now_ms();
  if (tfs_owner_self(&o, "supervisor") == 0) {
    free(s->rec.supervisor_exe);
    free(s->rec.supervisor_host);
    s->rec.supervisor_exe = strdup(o.exe);
    s->rec.supervisor_host = strdup(o.host);
    if (o.started_ms)
      s->rec.supervisor_started_ms = o.started_ms;
  }
}

static int setup_loop(sup_t *s) {
  int err = uv_loop_init(&s->loop);
  if (err)
    return err;
  uv_signal_t *sigs[] = {&s->sigchld, &s->sigterm, &s->sigint};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(&s->loop, sigs[i]);
    sigs[i]->data = s;
  }
  uv_signal_start(&s->sigchld, on_sigchld, SIGCHLD);
  uv_signal_start(&s->sigterm, on_signal, SIGTERM);
  uv_signal_start(&s->sigint, on_signal, SIGINT);
  uv_timer_t *timers[] = {&s->save_timer, &s->alive_timer,   &s->poll_timer, &s->kill_timer,
                          &s->hold_timer, &s->backoff_timer, &s->drain_timer};
  for (int i = 0; i < 7; i++) {
    uv_timer_init(&s->loop, timers[i]);
    timers[i]->data = s;
  }
  uv_timer_start(&s->alive_timer, on_alive_tick, ALIVE_EVERY_MS, ALIVE_EVERY_MS);

  /* The doorbell, before the record says running: a request made from
   * then on rings it, and one made before is seen by the check that
   * follows setup. TASKFS_NO_INOTIFY (the name is historical: the watch it
   * used to switch off was inotify) leaves only the poll. */
  if (!tfs_watch_disabled()) {
    err = open_doorbell(s);
    if (err) {
      logmsg(s, "cannot create the doorbell (%s); polling for stop requests", strerror(-err));
    } else {
      uv_poll_init(&s->loop, &s->bell_poll, s->bell_fd);
      s->bell_poll.data = s;
      uv_poll_start(&s->bell_poll, UV_READABLE, on_doorbell);
    }
  }
  /* The poll stays: it notices a cancel file written by hand, or by a
   * writer that found no doorbell. */
  uint64_t poll_ms = s->bell_fd >= 0 ? CANCEL_POLL_BELL_MS : CANCEL_POLL_MS;
  const char *pm = getenv("TASKFS_CANCEL_POLL_MS");
  if (pm && atoll(pm) > 0)
    poll_ms = (uint64_t)atoll(pm);
  uv_timer_start(&s->poll_timer, on_poll_timer, poll_ms, poll_ms);
  return 0;
}

/* Before the loop runs: records the task failed (it never started) and
 * returns the verb's exit code. This process holds the lock, so it is the
 * one to write the end. */
static int fail_setup(sup_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_setup(sup_t *s, const char *fmt, ...) {
  char reason[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  logmsg(s, "%s", reason);
  s->rec.state = TFS_FAILED;
  s->rec.exit_code = 127;
  s->rec.ended_ms = tfs_now_ms();
  tfs_record_set_reason(&s->rec, "cannot start '%s': %s",
                        s->rec.argv && s->rec.argv[0] ? s->rec.argv[0] : "", reason);
  int err = tfs_task_save(s->store, &s->rec);
  if (err)
    logmsg(s, "cannot save the record: %s", tfs_strerror(err));
  return 111;
}

int tfs_supervise_main(int argc, char **argv) {
  static const struct option opts[] = {{"state-dir", required_argument, NULL, 'd'},
                                       {"env-fd", required_argument, NULL, 'e'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *dir = NULL;
  int c, env_fd = -1;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
    if (c == 'd') {
      dir = optarg;
    } else if (c == 'e') {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (*end || v < 0 || v > INT_MAX) {
        usage(stderr);
        return 100;
      }
      env_fd = (int)v;
    } else if (c == 'h') {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 100;
    }
  }
  if (!dir || optind != argc - 1 || !tfs_id_valid(argv[optind])) {
    usage(stderr);
    return 100;
  }

  static sup_t sup; /* static: its address stays valid in every callback */
  sup_t *s = &sup;
  memset(s, 0, sizeof *s);
  s->id = argv[optind];
  s->lock_fd = s->tx_fd = s->side_fd = s->devnull = s->bell_fd = -1;
  s->backoff_ms = BACKOFF_FIRST_MS;
  if (env_fd >= 0) {
    /* First, so the values are in no fd of ours for longer than needed. */
    int e = read_env_fd(s, env_fd);
    if (e) {
      logmsg(s, "cannot read the worker's environment from fd %d: %s", env_fd, strerror(-e));
      return 111;
    }
  }

  /* Immune to the terminal closing and to a reader going away. */
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
    logmsg(s, "cannot become a child subreaper: %s", strerror(errno));

  int err = tfs_store_open_existing(dir, &s->store);
  if (err) {
    logmsg(s, "cannot open the store %s: %s", dir, tfs_strerror(err));
    return 111;
  }
  s->lock_fd = lock_task(s);
  if (s->lock_fd == -EBUSY) {
    logmsg(s, "another supervisor owns this task: nothing to do");
    return 0;
  }
  if (s->lock_fd < 0) {
    logmsg(s, "cannot lock the task: %s", tfs_strerror(s->lock_fd));
    return 111;
  }
  err = tfs_task_load(s->store, s->id, &s->rec);
  if (err) {
    logmsg(s, "cannot load the task: %s", tfs_strerror(err));
    return 111;
  }
  if (s->rec.state != TFS_QUEUED) {
    /* Launched twice: the first supervisor did the work. */
    logmsg(s, "task is %s, not queued: nothing to do", tfs_state_name(s->rec.state));
    return 0;
  }
  if (!s->rec.argv || !s->rec.argv[0] || !s->rec.argv[0][0])
    return fail_setup(s, "the task has no command");
  s->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  /* As tfs_transcript_open_append(), but a FIFO planted as the transcript
   * is refused instead of blocking the supervisor for ever. */
  s->tx_fd = tfs_sup_open_file(s->store, s->id, "transcript", O_WRONLY | O_CREAT | O_APPEND);
  s->side_fd = tfs_sup_open_file(s->store, s->id, TFS_STDERR_LINES, O_WRONLY | O_CREAT | O_APPEND);
  if (s->devnull < 0 || s->tx_fd < 0)
    return fail_setup(s, "cannot open the transcript: %s",
                      s->tx_fd == -EINVAL ? "it is not a regular file"
                                          : tfs_strerror(s->tx_fd < 0 ? s->tx_fd : -errno));
  fcntl(s->tx_fd, F_SETFD, FD_CLOEXEC);
  if (s->side_fd >= 0)
    fcntl(s->side_fd, F_SETFD, FD_CLOEXEC);
  err = tfs_capture_init(&s->cap, s->tx_fd, s->side_fd, &s->rec.important, s->rec.lines,
                         s->rec.bytes);
  if (!err)
    err = setup_loop(s);
  if (err)
    return fail_setup(s, "cannot set up: %s", tfs_strerror(err));
  claim(s);
  make_reserve(s);

  /* A stop requested before the start: the task never runs. */
  char who[256] = "";
  int64_t at = 0;
  if (tfs_cancel_query(s->store, s->id, who, sizeof who, &at) == 1) {
    logmsg(s, "stop request noticed via start");
    request_stop(s, who, at);
  } else {
    start_worker(s);
  }

  uv_run(&s->loop, UV_RUN_DEFAULT);
  /* Handles closed by finish(); run the close callbacks out. */
  uv_run(&s->loop, UV_RUN_DEFAULT);
  uv_loop_close(&s->loop);
  end_sentinel(s); /* normally ended with its group already */
  free(s->worker_env);
  free(s->env_buf);
  if (s->bell_fd >= 0)
    close(s->bell_fd);
  tfs_capture_free(&s->cap);
  tfs_record_free(&s->rec);
  tfs_store_close(s->store);
  return 0;
}
