/* Reaping: SIGCHLD is a plain uv_signal_t whose callback loops
 * waitpid(-1, WNOHANG), because as a child subreaper the supervisor also
 * inherits the worker's orphans and must reap them; ECHILD then proves the
 * whole tree is gone. The worker is told apart by pid, the sentinel too.
 *
 * A worker that exits on its own may leave processes behind: the task owns
 * its whole tree, so they are asked to stop (and killed after the grace).
 * The generation ends once the worker is reaped, no descendant is left and
 * both pipes are done.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

/* Reaps every child that has exited; sets tree_empty once none is left.
 * The sentinel is a child too, so while it lives ECHILD never comes: once
 * the worker is reaped and the sentinel is all that is left, its job is
 * done; it is ended and the wait goes round again. */
static void reap_children(sup_t *s) {
  for (;;) {
    int st;
    struct rusage ru;
    /* wait4: what each process of the tree used counts for the run. */
    pid_t p = wait4(-1, &st, WNOHANG, &ru);
    if (p > 0 && p != s->sentinel)
      sup_usage_reaped(s, p, &ru);
    if (p > 0) {
      if (p == s->sentinel) {
        /* Not a worker exit: killed by us, or by someone else (then the
         * group is unguarded should this process die). */
        s->sentinel = 0;
      } else if (p == s->worker && !s->worker_reaped) {
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
    if (!s->tree_empty && s->sentinel > 0 && s->worker_reaped &&
        sup_kill_descendants(0, s->sentinel) == 0) {
      sup_sentinel_end(s);
      continue;
    }
    break;
  }
}

/* The worker is gone but left processes behind: SIGTERM (and SIGCONT, for
 * stopped ones) now, SIGKILL after the grace period. */
static void stop_leftovers(sup_t *s) {
  if (s->tree_empty || s->leftovers_signalled)
    return;
  s->leftovers_signalled = 1;
  int n = sup_kill_descendants(SIGTERM, s->sentinel);
  sup_kill_descendants(SIGCONT, s->sentinel);
  if (n > 0)
    sup_log(s, "worker exited; SIGTERM to %d process(es) it left behind", n);
  sup_arm_kill(s);
}

static void on_sigchld(uv_signal_t *h, int signum) {
  sup_t *s = h->data;
  reap_children(s);
  if (!s->worker_reaped || s->phase == PH_DONE)
    return;
  if (s->phase == PH_RUNNING)
    s->phase = PH_DRAINING;
  stop_leftovers(s);
  sup_check_generation_end(s);
}

void sup_reap_init(sup_t *s) {
  uv_signal_init(&s->loop, &s->sigchld);
  s->sigchld.data = s;
  uv_signal_start(&s->sigchld, on_sigchld, SIGCHLD);
}

void sup_check_generation_end(sup_t *s) {
  if (s->phase != PH_DRAINING || !s->worker_reaped || !s->tree_empty)
    return;
  if (sup_pipes_wait(s))
    return;
  uv_timer_stop(&s->kill_timer);
  uv_timer_stop(&s->drain_timer);
  sup_generation_end(s);
}
