/* The child between fork and exec (supervisor/child.h): one clean slate
 * for the worker (spawn.c), the supervisor a launcher starts (launch.c),
 * a helper command (command.c) and the sentinel's cleanup command
 * (sentinel.c). Only async-signal-safe calls: the launcher may be
 * multithreaded, and the sentinel allocates nothing. */
#include "supervisor/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Dispositions first, then the mask: sup_fork() blocks every signal
 * across fork, and one that arrived meanwhile is delivered when the mask
 * opens, by then with its default action. */
static void signals_default(void) {
  struct sigaction dfl = {.sa_handler = SIG_DFL};
  for (int sig = 1; sig < NSIG; sig++)
    sigaction(sig, &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* fds 0..2 from c->stdio. One already in place only loses close-on-exec
 * (dup2 of an fd onto itself would keep the flag, and the fd would be
 * gone at exec); one below 3 that another slot needs is moved up first,
 * so that setting fd 1 cannot overwrite what fd 2 is to become. */
static int set_stdio(const int stdio[3]) {
  int fds[3];
  for (int i = 0; i < 3; i++) {
    fds[i] = stdio[i];
    if (fds[i] >= 0 && fds[i] < 3 && fds[i] != i &&
        (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0)
      return -1;
  }
  for (int i = 0; i < 3; i++) {
    if (fds[i] < 0)
      continue;
    if (fds[i] == i ? fcntl(i, F_SETFD, 0) < 0 : dup2(fds[i], i) < 0)
      return -1;
  }
  return 0;
}

int sup_child_init(const sup_child_t *c) {
  if (c->deathsig && prctl(PR_SET_PDEATHSIG, c->deathsig) < 0)
    return SUP_CHILD_PARENT;
  /* The parent may have died before the death signal was set. */
  if (c->deathsig && c->parent > 0 && getppid() != c->parent) {
    errno = ESRCH;
    return SUP_CHILD_PARENT;
  }
  signals_default();
  if (set_stdio(c->stdio) < 0)
    return SUP_CHILD_STDIO;
  if (c->cloexec_from > 2 && close_range((unsigned)c->cloexec_from, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
    for (int fd = c->cloexec_from; fd < 1024; fd++)
      fcntl(fd, F_SETFD, FD_CLOEXEC);
  return 0;
}
