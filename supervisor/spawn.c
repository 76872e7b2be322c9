/* Spawning a worker: fork and exec by hand, in its own process group,
 * with stdin on /dev/null and its stdout and stderr on one pipe (the
 * merged stream: both in the order the program wrote them, as
 * `cmd > file 2>&1` records) or, with stderr split, on two (not uv_spawn:
 * see supervise.c). A close-on-exec status pipe carries a failed chdir or
 * exec back, with its errno, so the reason a command cannot start is told
 * in words ("command not found", "not executable", ...).
 */
#include "supervisor/child.h"
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

extern char **environ;

/* What the child reports on the status pipe when it cannot exec. */
typedef struct {
  int stage; /* STAGE_* */
  int err;
  int which; /* STAGE_LIMIT: what sup_limits_child() could not set */
} start_err_t;

enum { STAGE_CHDIR = 1, STAGE_EXEC = 2, STAGE_DUP = 3, STAGE_LIMIT = 4 };

/* The worker's pipes: stdout, stderr (-1 in the merged mode: fd 2 is
 * stdout's pipe too), and the status pipe. */
typedef struct {
  int out[2], err[2], stp[2];
} pipes_t;

/* The cleanup of a pipes_t: closes whichever end is still open. */
static void pipes_close(pipes_t *p) {
  int *fds[] = {p->out, p->err, p->stp};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++)
      if (fds[i][j] >= 0) {
        close(fds[i][j]);
        fds[i][j] = -1;
      }
}

/* The child, last before exec: fd becomes fd 3, kept open across the
 * exec (the engine's channel, s->spawn_fd3); the status pipe's end moves
 * out of the way if it is fd 3. */
static int give_fd3(int fd, int *stp) {
  if (*stp == 3 && fd != 3 && (*stp = fcntl(3, F_DUPFD_CLOEXEC, 4)) < 0)
    return -1;
  if (fd == 3)
    return fcntl(3, F_SETFD, 0);
  return dup2(fd, 3) < 0 ? -1 : 0;
}

/* The child between fork and exec. The worker dies with this supervisor
 * (even killed -9): unsupervised, nothing could stop it any more. If we
 * died before that was set, the worker must not start at all. */
static void __attribute__((noreturn)) worker_child(sup_t *s, pid_t parent, const pipes_t *p) {
  start_err_t e = {0, 0, -1};
  int stp = p->stp[1];
  /* A pipe, never the transcript itself: a worker that reopens its output
   * (`> /dev/stderr`, `exec >/dev/stdout`, `: > /proc/self/fd/1`) opens
   * the pipe again, which cannot truncate what was written. */
  int err_fd = p->err[1] >= 0 ? p->err[1] : p->out[1];
  int in_fd = s->stdin_rd >= 0 ? s->stdin_rd : s->devnull;
  sup_child_t c = {.deathsig = SIGKILL, .parent = parent, .stdio = {in_fd, p->out[1], err_fd}};
  setpgid(0, 0);
  int failed = sup_child_init(&c);
  if (failed == SUP_CHILD_PARENT)
    _exit(127);
  if (failed) {
    e.stage = STAGE_DUP;
  } else if (s->rec.cwd && chdir(s->rec.cwd) < 0) {
    e.stage = STAGE_CHDIR;
  } else if ((e.which = sup_limits_child(s)) >= 0) {
    e.stage = STAGE_LIMIT; /* its limits and cgroup, last: what it runs inherits them */
  } else {
    /* The overrides apply here only; execvp then also searches an
     * overridden PATH, as the worker's own environment says. */
    if (s->spawn_env)
      environ = s->spawn_env;
    if (s->spawn_fd3 >= 0 && give_fd3(s->spawn_fd3, &stp) < 0) {
      e.stage = STAGE_DUP;
    } else {
      execvp(s->spawn_argv[0], s->spawn_argv);
      e.stage = STAGE_EXEC;
    }
  }
  e.err = errno;
  (void)!write(stp, &e, sizeof e);
  _exit(127);
}

/* The reason the child reported, in words. */
static void describe_start_error(sup_t *s, const start_err_t *e, char *why, size_t len) {
  const char *cmd = s->rec.argv[0];
  if (e->stage == STAGE_LIMIT)
    sup_limits_describe(s, e->which, e->err, why, len);
  else if (e->stage == STAGE_CHDIR)
    snprintf(why, len, "cannot start '%s': working directory '%s' is not usable (%s)", cmd,
             s->rec.cwd, strerror(e->err));
  else if (e->stage == STAGE_EXEC && e->err == ENOENT)
    snprintf(why, len, "cannot start '%s': %s (%s)", cmd,
             strchr(cmd, '/') ? "no such file" : "command not found", strerror(e->err));
  else if (e->stage == STAGE_EXEC && e->err == EACCES)
    snprintf(why, len, "cannot start '%s': not executable (%s)", cmd, strerror(e->err));
  else if (e->stage == STAGE_EXEC && e->err == ENOEXEC)
    snprintf(why, len, "cannot start '%s': not a program this system can run (%s)", cmd,
             strerror(e->err));
  else
    snprintf(why, len, "cannot start '%s': %s", cmd, strerror(e->err));
}

pid_t sup_fork(void) {
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid == 0)
    return 0;
  int e = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  errno = e;
  return pid;
}

/* Forks the worker's child. Returns the pid, or -errno. */
static pid_t fork_worker(sup_t *s, const pipes_t *p) {
  pid_t self = getpid();
  pid_t pid = sup_fork();
  if (pid == 0)
    worker_child(s, self, p);
  if (pid < 0)
    return -errno;
  /* Also here, so that signalling the group works before the child ran. */
  setpgid(pid, pid);
  return pid;
}

/* Waits for the child's exec: 1 and *e if it reported an error (the child
 * has exited or is about to; on_sigchld reaps it), 0 if the exec worked
 * (the status pipe closed on exec). Closes the child's ends first, so that
 * the status pipe reads EOF once the exec closed it in the child. */
static int exec_failed(pipes_t *p, start_err_t *e) {
  close(p->out[1]);
  if (p->err[1] >= 0)
    close(p->err[1]);
  close(p->stp[1]);
  p->out[1] = p->err[1] = p->stp[1] = -1;
  ssize_t n;
  while ((n = read(p->stp[0], e, sizeof *e)) < 0 && errno == EINTR)
    ;
  close(p->stp[0]);
  p->stp[0] = -1;
  return n == (ssize_t)sizeof *e;
}

/* The worker pid runs: resets the generation and takes its pipes; base
 * is its memory cgroup as read when it was forked. */
static void adopt_worker(sup_t *s, pid_t pid, pipes_t *p, const tfs_memcg_t *base) {
  s->worker = pid;
  s->worker_reaped = 0;
  s->worker_status = 0;
  s->tree_empty = 0;
  s->leftovers_signalled = 0;
  s->worker_started_ms = tfs_now_ms();
  s->worker_ended_ms = 0;
  s->rec.worker_pid = pid;
  s->rec.worker_pgid = pid;
  s->worker_memcg = *base; /* to tell an OOM kill at its end */
  sup_pipes_open(s, p->out[0], p->err[0]);
  p->out[0] = p->err[0] = -1;
}

/* Forks and execs the worker. Returns 0, or fills why with the reason it
 * could not start and returns -1. */
static int spawn_worker(sup_t *s, char *why, size_t whylen) {
  pipes_t p __attribute__((cleanup(pipes_close))) = {{-1, -1}, {-1, -1}, {-1, -1}};
  const char *cmd = s->spawn_argv[0];
  int split = s->rec.stderr_mode == TFS_STDERR_SPLIT;
  if (pipe2(p.out, O_CLOEXEC) < 0 || (split && pipe2(p.err, O_CLOEXEC) < 0) ||
      pipe2(p.stp, O_CLOEXEC) < 0) {
    snprintf(why, whylen, "cannot start '%s': no pipe for its output (%s)", cmd, strerror(errno));
    return -1;
  }
  if (sup_stdin_pipe(s, why, whylen) < 0)
    return -1;
  tfs_memcg_t before; /* the tree's cgroup before the worker enters it */
  int cg = sup_cgroup_events(s, &before) == 0;
  pid_t pid = fork_worker(s, &p);
  sup_stdin_forked(s);
  if (pid < 0) {
    snprintf(why, whylen, "cannot start '%s': fork failed (%s)", cmd, strerror(-pid));
    return -1;
  }
  /* The OOM baseline, read while the child execs (it is in our cgroup
   * from the fork on) rather than after: the exec of the worker and
   * these reads overlap, and the `running` save comes sooner. */
  tfs_memcg_t base;
  memset(&base, 0, sizeof base);
  if (!cg)
    tfs_memcg_read(pid, &base);
  start_err_t e = {0, 0, -1};
  if (exec_failed(&p, &e)) {
    describe_start_error(s, &e, why, whylen);
    return -1;
  }
  adopt_worker(s, pid, &p, &base);
  if (cg)
    s->worker_memcg = before;
  return 0;
}

void sup_start_worker(sup_t *s) {
  char why[1024];
  s->end_note[0] = 0;
  s->end_failed = 0;
  s->kill_round = 0;
  int failed = s->exec->spawn(s, why, sizeof why) < 0 || spawn_worker(s, why, sizeof why) < 0;
  if (s->spawn_fd3 >= 0) /* the worker has its copy; no later fork (the sentinel) gets one */
    close(s->spawn_fd3);
  s->spawn_fd3 = -1;
  if (failed) {
    sup_log(s, "%s", why);
    s->rec.exit_code = 127;
    s->rec.signal = 0;
    sup_finish(s, TFS_FAILED, "%s", why);
    return;
  }
  s->phase = PH_RUNNING;
  /* An engine may hold the task queued (a pending job): it records
   * running itself when the job starts. */
  if (s->exec->started(s) && s->rec.state != TFS_RUNNING) {
    s->rec.state = TFS_RUNNING;
    s->rec.started_ms = s->worker_started_ms;
  }
  sup_limits_worker_started(s);
  sup_log(s, "worker %d started (%s)", (int)s->worker, tfs_engine_name(s->rec.exec.engine));
  sup_save(s);
  /* After the save that says running (what `run` waits for), so the
   * launcher does not wait for this fork too. The worker is unreaped until
   * the loop runs again, so its group still exists for the sentinel to
   * join; until then the worker dies with us (its death signal). */
  if (s->phase != PH_DONE)
    sup_sentinel_start(s);
}
