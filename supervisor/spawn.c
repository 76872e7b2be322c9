/* Spawning a worker: clone and exec by hand, in its own process group,
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
#include <limits.h>
#include <sched.h>
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

/* The value of PATH in env, or the system's default as execvp takes it. */
static const char *env_path(char *const env[]) {
  for (char *const *e = env; e && *e; e++)
    if (!strncmp(*e, "PATH=", 5))
      return *e + 5;
  return "/bin:/usr/bin";
}

/* A file the kernel refused as a program (ENOEXEC) runs as a shell
 * script, as execvp runs it. */
static void exec_script(const char *path, char *const argv[], char *const env[]) {
  size_t argc = 0;
  while (argv[argc])
    argc++;
  char *sh_argv[argc + 2];
  sh_argv[0] = "/bin/sh";
  sh_argv[1] = (char *)path;
  for (size_t i = 1; i <= argc; i++)
    sh_argv[i + 1] = argv[i];
  execve(sh_argv[0], sh_argv, env);
}

/* execvp with an environment of the worker's own: the search follows the
 * PATH of env (the worker's overrides included), not ours, and errors as
 * execvp reports them (EACCES if some entry was not executable and none
 * ran, else the last). It writes nothing but its own stack: the worker's
 * child shares the supervisor's memory (spawn_child). Returns with errno
 * set only if nothing could be exec'd. */
static void exec_search(char *const argv[], char *const env[]) {
  const char *file = argv[0];
  if (strchr(file, '/')) {
    execve(file, argv, env);
    if (errno == ENOEXEC)
      exec_script(file, argv, env);
    return;
  }
  size_t flen = strlen(file);
  if (!flen || flen > NAME_MAX) {
    errno = flen ? ENAMETOOLONG : ENOENT;
    return;
  }
  char buf[PATH_MAX + NAME_MAX + 2];
  int eacces = 0;
  for (const char *dir = env_path(env), *end;; dir = end + 1) {
    end = strchr(dir, ':');
    if (!end)
      end = dir + strlen(dir);
    size_t dlen = (size_t)(end - dir);
    if (dlen <= PATH_MAX) {
      /* An empty entry is the working directory. */
      memcpy(buf, dir, dlen);
      size_t at = dlen;
      if (dlen)
        buf[at++] = '/';
      memcpy(buf + at, file, flen + 1);
      execve(buf, argv, env);
      if (errno == ENOEXEC)
        exec_script(buf, argv, env);
      if (errno == EACCES)
        eacces = 1;
      else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
               errno != ETIMEDOUT && errno != ENOEXEC)
        return;
    }
    if (!*end)
      break;
  }
  errno = eacces ? EACCES : ENOENT;
}

/* The worker's child runs on a stack of ours that ASan does not know as a
 * thread's: before a call that does not return it would warn that it
 * cannot clean that stack (into the worker's output), so the two
 * functions that make such calls are not instrumented. */
#define CHILD_SIDE __attribute__((no_sanitize_address))

/* The child between clone and exec. The worker dies with this supervisor
 * (even killed -9): unsupervised, nothing could stop it any more. If we
 * died before that was set, the worker must not start at all. */
static void CHILD_SIDE __attribute__((noreturn))
worker_child(const sup_t *s, pid_t parent, const pipes_t *p) {
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
    /* The overrides apply here only, PATH's too. */
    if (s->spawn_fd3 >= 0 && give_fd3(s->spawn_fd3, &stp) < 0) {
      e.stage = STAGE_DUP;
    } else {
      exec_search(s->spawn_argv, s->spawn_env ? s->spawn_env : environ);
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

/* What spawn_child needs, on the supervisor's stack. */
typedef struct {
  const sup_t *s;
  pid_t parent;
  const pipes_t *p;
} child_args_t;

static int CHILD_SIDE spawn_child(void *arg) {
  const child_args_t *a = arg;
  worker_child(a->s, a->parent, a->p);
}

/* The worker's child shares this process's memory until its exec
 * (CLONE_VM), on a stack of its own, while this thread waits (CLONE_VFORK)
 * for the exec or the child's exit: no copy of the supervisor's page
 * tables, which made a fork cost 1.3-1.8 ms on the 2-core VM against
 * 0.03 ms for this (bench/analysis.md, Row 11). So the child writes only
 * its own stack and the kernel's state (its fds, signal dispositions,
 * group, limits): no malloc, no stdio, no global (environ included: the
 * exec takes the worker's environment as an argument). Every signal is
 * blocked across the clone, as for a fork: a handler of ours must never
 * run in the child. Returns the pid, or -errno. */
static pid_t fork_worker(sup_t *s, const pipes_t *p) {
  /* One stack for every worker's child, one child at a time (the loop's
   * thread spawns, and waits until the child is done with it); never
   * unmapped, so that a sanitizer's picture of it stays its own. */
  static char stack[256 * 1024] __attribute__((aligned(64)));
  child_args_t a = {s, getpid(), p};
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = clone(spawn_child, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
  int e = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (pid < 0)
    return -e;
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
