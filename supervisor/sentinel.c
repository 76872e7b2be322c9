/* The sentinel: a child forked right after each worker, which stops the
 * worker's process group should this supervisor die suddenly.
 *
 * If this supervisor is killed (-9, OOM) nobody would stop the worker's
 * process group any more: the task reads lost, and no PID from the record
 * is ever signalled. The worker itself dies with us (PR_SET_PDEATHSIG in
 * the worker), but what it left in its group would run on. So the sentinel
 * sleeps until the kernel tells it its parent died (its own death signal),
 * then stops the group it knows from memory: SIGTERM, a grace, SIGKILL.
 * Before that it runs the executor's cleanup command, if it set one (a
 * Slurm job's scancel: a job whose client died may run on, or still be
 * pending, and only the controller can end it).
 *
 * The sentinel is itself a member of that group (set by both sides of the
 * fork, while the worker, unreaped, still holds it), so the group id
 * cannot be handed to another process while it lives: a pid number stays
 * taken while any process has it as its group. Without that, a worker
 * that left only a child in a session of its own and exited would free
 * the id, and after PID wrap an unrelated process of the same user could
 * lead a group of that number, which the sentinel would then kill.
 *
 * In a queue the sentinel also keeps the fd that holds the task's slot, so
 * that the slot frees only once the task's last process is gone; when it
 * acted, it leaves behind a kicker (`taskfs supervise --queue-kick`,
 * outside the group) that rings the queue's next waiter once the slot is
 * free (sched.c).
 *
 * The supervisor owns it as live knowledge (its own child, pid in memory):
 * the stop path spares it where it can (sup_kill_descendants' spare; the
 * group's SIGTERM it blocks, the group's SIGKILL ends it, the supervisor
 * then killing everything itself), the SIGCHLD reaper tells it apart from
 * a worker exit, and once the worker is reaped and it is the only
 * descendant left it is killed and reaped.
 */
#include "supervisor/sup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* The longest a sentinel waits between SIGTERM and SIGKILL. */
#define SENTINEL_GRACE_MAX_MS 5000

/* Writes the decimal digits of v (> 0) into buf; returns the length. */
static size_t put_num(char *buf, long v) {
  char tmp[24];
  size_t n = 0, len = 0;
  do
    tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n)
    buf[len++] = tmp[--n];
  return len;
}

/* The process group in /proc/<name>/stat (after the command's ')': state,
 * ppid, pgrp), or -1; also for a zombie, which lives no more (it waits for
 * a reaper that may take its time). */
static long stat_pgrp(int procfd, const char *name) {
  char path[64], buf[512];
  size_t n = strnlen(name, 32);
  memcpy(path, name, n);
  memcpy(path + n, "/stat", 6);
  int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t r = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (r <= 0)
    return -1;
  buf[r] = 0;
  char *p = strrchr(buf, ')');
  if (p && (p[1] == ' ') && (p[2] == 'Z' || p[2] == 'X'))
    return -1;
  int field = 0;
  for (p = p ? p + 1 : NULL; p && *p; p++)
    if (*p == ' ' && ++field == 3) {
      long v = 0;
      for (p++; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
      return v;
    }
  return -1;
}

/* 1 if a process other than this one is in group pgid (a /proc walk with
 * system calls only: the sentinel allocates nothing), 0 if none, -1 if
 * /proc cannot tell. */
static int group_has_others(pid_t pgid) {
  char self[24], buf[4096] __attribute__((aligned(8)));
  self[put_num(self, getpid())] = 0;
  int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (procfd < 0)
    return -1;
  int found = 0;
  long n;
  while (!found && (n = syscall(SYS_getdents64, procfd, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n && !found;) {
      struct {
        unsigned long long ino;
        long long off;
        unsigned short reclen;
        unsigned char type;
        char name[];
      } *d = (void *)(buf + off);
      off += d->reclen;
      if (d->name[0] >= '1' && d->name[0] <= '9' && strcmp(d->name, self) &&
          stat_pgrp(procfd, d->name) == pgid)
        found = 1;
    }
  }
  close(procfd);
  return n < 0 ? -1 : found;
}

/* The kicker that rings the next waiter of the task's queue once the slot
 * is free: forked now, moved out of the group before the group's SIGKILL
 * (both sides set its group, as with the sentinel itself). */
static void leave_kicker(int keep, char *const *kick) {
  if (keep < 0 || !kick)
    return;
  pid_t k = fork();
  if (k == 0) {
    setpgid(0, 0);
    fcntl(keep, F_SETFD, 0); /* the slot's fd goes through the exec */
    execve("/proc/self/exe", kick, environ);
    _exit(127);
  }
  if (k > 0)
    setpgid(k, k);
}

/* Runs the executor's cleanup command (a Slurm job's scancel), if any,
 * and waits up to SENTINEL_GRACE_MAX_MS for it: a fork and an execve,
 * async-signal-safe, on an argv prepared before the sentinel was forked.
 * It runs in the group, so the group's last SIGKILL would end it too. */
static void run_cleanup(char *const *cmd, char *const *env) {
  if (!cmd || !cmd[0])
    return;
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
    }
    execve(cmd[0], cmd, env);
    _exit(127);
  }
  for (int waited = 0; pid > 0 && waited < SENTINEL_GRACE_MAX_MS; waited += 20) {
    if (waitpid(pid, NULL, WNOHANG) != 0)
      return;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* The sentinel's body. It runs on the memory it shares with us: no
 * allocation, no stdio, only system calls, so it dirties a page or two of
 * stack. Every signal stays blocked (the group's SIGTERM included; a stray
 * signal is checked against getppid() and ignored). It acts only as a
 * member of the group, which is what keeps the group id from being
 * recycled: if it could not join, it signals nothing. */
static void __attribute__((noreturn)) sentinel_main(const sup_t *s, pid_t parent, pid_t pgid,
                                                    int64_t grace_ms, int keep,
                                                    char *const *kick) {
  /* Every fd goes but the slot's (keep; -1: none). */
  int failed = keep < 0 ? close_range(0, ~0U, 0) < 0
                        : (keep > 0 && close_range(0, (unsigned)keep - 1, 0) < 0) ||
                              close_range((unsigned)keep + 1, ~0U, 0) < 0;
  for (int fd = 0; failed && fd < 1024; fd++)
    if (fd != keep)
      close(fd);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  prctl(PR_SET_NAME, "taskfs-sentinel");
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  setpgid(0, pgid); /* the parent does too: whichever comes first */
  /* The parent may have died before the death signal was set. */
  while (getppid() == parent) {
    int sig;
    sigwait(&all, &sig);
  }
  if (getpgrp() != pgid)
    _exit(0);
  /* First the engine's own cleanup: a cluster job outlives its client. */
  run_cleanup(s->sentinel_cmd, s->spawn_env ? s->spawn_env : environ);
  kill(-pgid, SIGTERM);
  kill(-pgid, SIGCONT); /* a stopped process would not see SIGTERM */
  if (grace_ms > SENTINEL_GRACE_MAX_MS)
    grace_ms = SENTINEL_GRACE_MAX_MS;
  for (int64_t waited = 0; waited < grace_ms && group_has_others(pgid) != 0; waited += 50) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  leave_kicker(keep, kick);
  kill(-pgid, SIGKILL); /* the sentinel too: the group's last member */
  _exit(0);
}

/* Forks the sentinel for the worker just started (its process group is
 * its pid, held by the worker until it is reaped: this runs before the
 * loop can reap it). Without one the task still runs: only the guard
 * against our own sudden death is missing, which is logged. */
void sup_sentinel_start(sup_t *s) {
  pid_t self = getpid();
  int slot = sup_sched_slot_fd(s);
  char *const *kick = sup_sched_kick_argv(s);
  pid_t pid = sup_fork();
  if (pid == 0)
    sentinel_main(s, self, s->worker, s->rec.grace_ms, slot, kick);
  if (pid < 0) {
    sup_log(s,
            "cannot start the sentinel of worker %d (%s): should this supervisor be killed, "
            "what the worker left in its process group would run on",
            (int)s->worker, strerror(errno));
    return;
  }
  s->sentinel = pid;
  if (setpgid(pid, s->worker) < 0 && errno != EACCES)
    sup_log(s,
            "the sentinel cannot join the process group of worker %d (%s): should this "
            "supervisor be killed, what the worker left in its group would run on",
            (int)s->worker, strerror(errno));
}

/* Ends the sentinel: its worker's group is finished. It is our child (live
 * knowledge, not a PID from disk), killed and reaped at once. */
void sup_sentinel_end(sup_t *s) {
  pid_t pid = s->sentinel;
  if (pid <= 0)
    return;
  s->sentinel = 0;
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
}
