/* The sentinel: a child forked right after each worker, which stops the
 * worker's process group should this supervisor die suddenly.
 *
 * If this supervisor is killed (-9, OOM) nobody would stop the worker's
 * process group any more: the task reads lost, and no PID from the record
 * is ever signalled. The worker itself dies with us (PR_SET_PDEATHSIG in
 * the worker), but what it left in its group would run on. So the sentinel
 * sleeps until the kernel tells it its parent died (its own death signal),
 * then stops the group it knows from memory: SIGTERM, a grace, SIGKILL.
 *
 * The supervisor owns it as live knowledge (its own child, pid in memory):
 * the stop path spares it (sup_kill_descendants' spare), the SIGCHLD
 * reaper tells it apart from a worker exit, and once the worker is reaped
 * and it is the only descendant left it is killed and reaped.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The longest a sentinel waits between SIGTERM and SIGKILL. */
#define SENTINEL_GRACE_MAX_MS 5000

/* The sentinel's body. It runs on the memory it shares with us: no
 * allocation, no stdio, only system calls, so it dirties a page or two of
 * stack. Every signal stays blocked (it is spared by the stop path, and a
 * stray signal is checked against getppid() and ignored). The group id
 * cannot have been recycled when it acts: the worker, its leader, was
 * alive a moment ago (it dies of its own death signal now, so its id stays
 * pinned while any other member of the group lives). */
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
void sup_sentinel_start(sup_t *s) {
  pid_t self = getpid();
  pid_t pid = sup_fork();
  if (pid == 0)
    sentinel_main(self, s->worker, s->rec.grace_ms);
  if (pid < 0) {
    sup_log(s,
            "cannot start the sentinel of worker %d (%s): should this supervisor be killed, "
            "what the worker left in its process group would run on",
            (int)s->worker, strerror(errno));
    return;
  }
  s->sentinel = pid;
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
