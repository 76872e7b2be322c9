/* The end of a worker generation and the restart policy.
 *
 * The exit is recorded in the record's last exits; then a stop request
 * decides (cancelled, or the worker's own end if it had exited first), or
 * the policy does: --restart no|on-failure|always. Two limits end the
 * restarts: max_restarts in all (whatever the uptime; -1: none), and the
 * crash loop: a quick exit (within min-uptime) counts towards it, and
 * max_quick_restarts quick exits in a row are restarted, the next one is
 * not. When a limit ends the restarts, the task's state is the last
 * worker's own end (exit 0: completed, else failed), so its state, its
 * exit code and `taskfs wait` always agree; the reason names the limit.
 * Restarts after quick exits back off: 100 ms doubling to 5 s, counted
 * from the exit the record holds, so a record shows every restart at least
 * its back-off after the exit before it.
 */
#include "supervisor/sup.h"
#include "taskfs/text.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000

/* The next worker starts no sooner than restart_at_ms, the last worker's
 * recorded exit plus the back-off, by the clock the record's times are
 * taken from: libuv's timers count from the loop's cached time, which may
 * lag the exit, and in whole milliseconds of another clock, so the timer
 * can fire a little early; then it waits out the rest. */
static void on_backoff_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  int64_t left = s->restart_at_ms - tfs_now_ms();
  if (left > 0) {
    uv_timer_start(&s->backoff_timer, on_backoff_timer, (uint64_t)left, 0);
    return;
  }
  s->rec.restarts++;
  sup_start_worker(s);
}

void sup_restart_init(sup_t *s) {
  uv_timer_init(&s->loop, &s->backoff_timer);
  s->backoff_timer.data = s;
  s->backoff_ms = BACKOFF_FIRST_MS;
}

/* The worker's exit in words, as the core words it (tfs_exit_describe):
 * "exited with code 1", "killed by signal SIGSEGV (segmentation fault:
 * ...)"; the memory events of its cgroup, at its start and now, tell
 * whether the kernel's OOM killer ended it. */
static void describe_exit(sup_t *s, char *buf, size_t len) {
  tfs_memcg_t now = s->worker_memcg; /* the same cgroup, read again */
  tfs_memcg_read(0, &now);
  size_t n = 0;
  if (s->end_note[0])
    n = (size_t)snprintf(buf, len, "%s; ", s->end_note);
  /* A worker its own tree's stop (a stop request, its timeout) ended was
   * not ended by a limit. */
  if (n < len)
    tfs_exit_describe_limits(s->worker_status, &s->worker_memcg, &now,
                             s->stopping || s->timed_out ? NULL : &s->rec.limits,
                             s->worker_cpu_ms, s->killed, buf + n, len - n);
}

/* Appends the worker's exit to the record's last exits (the oldest falls
 * out) and sets its exit code and signal. */
static tfs_exit_t record_exit(sup_t *s) {
  int st = s->worker_status;
  tfs_exit_t ex = {
      .started_ms = s->worker_started_ms,
      .ended_ms = s->worker_ended_ms,
      .exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1,
      .signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0,
      .requested = s->exit_requested,
      .timed_out = s->timed_out,
  };
  sup_usage_run_end(s, &ex.use);
  if (s->rec.nexits == TFS_LAST_EXITS) {
    memmove(s->rec.exits, s->rec.exits + 1, (TFS_LAST_EXITS - 1) * sizeof ex);
    s->rec.nexits--;
  }
  s->rec.exits[s->rec.nexits++] = ex;
  s->rec.exit_code = ex.exit_code;
  s->rec.signal = ex.signal;
  return ex;
}

/* Whether the restart policy starts another worker after this end (the
 * crash-loop and max-restarts limits aside). */
static int policy_restarts(const sup_t *s) {
  int st = s->worker_status;
  int failed = s->end_failed || !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  if (s->timed_out)
    return s->rec.restart_on_timeout;
  return s->rec.restart == TFS_RESTART_ALWAYS ||
         (s->rec.restart == TFS_RESTART_ON_FAILURE && failed);
}

/* A stop had been requested: the end is a cancel, unless the worker had
 * ended on its own, for good, and the request only stopped what it left
 * behind. A worker the policy would have started again was ended for
 * good by the request: that is a cancel too (the request met the worker's
 * exit rather than the back-off after it, which is a matter of timing). */
static void finish_stopped(sup_t *s, const char *desc) {
  int st = s->worker_status;
  if (!s->exit_requested && policy_restarts(s) &&
      (s->rec.max_restarts < 0 || s->rec.restarts < s->rec.max_restarts)) {
    sup_finish(s, TFS_CANCELLED, "stop requested by %s as the worker %s; not restarted",
               s->stop_by, desc);
    return;
  }
  if (!s->exit_requested) {
    int ok = !s->end_failed && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    sup_finish(s, ok ? TFS_COMPLETED : TFS_FAILED,
               "%s; then a stop request by %s ended the processes it left behind", desc,
               s->stop_by);
    return;
  }
  int after_grace = s->killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
  sup_finish(s, TFS_CANCELLED, "stop requested by %s; the worker %s%s%s", s->stop_by,
             WIFSIGNALED(st) ? "was " : "", desc,
             after_grace ? " after the grace period ran out" : "");
}

/* The worker's wall-clock limit ran out and its tree was stopped: failed,
 * with timeout(1)'s exit code, 124; the exit itself stays in the record's
 * exits. */
static void finish_timed_out(sup_t *s, const char *desc) {
  char d[TFS_DURATION_BUF];
  int st = s->worker_status;
  int after_grace = s->killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
  s->rec.exit_code = 124;
  s->rec.signal = 0;
  sup_finish(s, TFS_FAILED, "timed out after %s; the worker %s%s%s",
             tfs_duration_format(s->rec.limits.timeout_ms, d), WIFSIGNALED(st) ? "was " : "", desc,
             after_grace ? " after the grace period ran out" : "");
}

/* Counts a quick exit towards the crash loop, then checks both limits;
 * returns 1 if one ends the restarts (and finishes the task with the last
 * worker's own end: completed after exit 0, else failed). */
static int restarts_end(sup_t *s, int quick, const char *desc) {
  int st = s->worker_status;
  tfs_state_t end =
      !s->end_failed && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? TFS_COMPLETED : TFS_FAILED;
  if (!quick) {
    s->quick_in_row = 0;
    s->backoff_ms = BACKOFF_FIRST_MS;
  } else if (++s->quick_in_row > s->rec.max_quick_restarts) {
    char last[64], sig[TFS_SIGNAME_MAX];
    if (WIFSIGNALED(st))
      snprintf(last, sizeof last, "signal %s", tfs_signal_name(WTERMSIG(st), sig));
    else
      snprintf(last, sizeof last, "exit code %d", WEXITSTATUS(st));
    sup_finish(s, end, "crash loop: %d exits within min-uptime %" PRId64 " ms in a row (last: %s)",
               s->quick_in_row, s->rec.min_uptime_ms, last);
    return 1;
  }
  if (s->rec.max_restarts < 0 || s->rec.restarts < s->rec.max_restarts)
    return 0;
  sup_finish(s, end, "%s; not restarted again: %d restart%s, the limit (max-restarts)", desc,
             s->rec.restarts, s->rec.restarts == 1 ? "" : "s");
  return 1;
}

/* Schedules the next worker. Quick deaths back off; any other restart
 * waits at least the first back-off step if the worker lived under a
 * second, so that a policy with min-uptime 0 cannot spin. */
static void schedule_restart(sup_t *s, int64_t uptime_ms, int quick) {
  int64_t delay = uptime_ms < 1000 ? BACKOFF_FIRST_MS : 0;
  if (quick) {
    delay = s->backoff_ms;
    s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
  }
  sup_capture_restart(&s->cap);
  s->phase = PH_BACKOFF;
  sup_log(s, "restarting in %" PRId64 " ms (%d quick exit(s) in a row)", delay, s->quick_in_row);
  sup_save(s);
  s->restart_at_ms = s->worker_ended_ms + delay;
  uv_update_time(&s->loop);
  s->killed = 0; /* the next worker's stop, if any, is its own */
  uv_timer_start(&s->backoff_timer, on_backoff_timer, (uint64_t)delay, 0);
}

void sup_generation_end(sup_t *s) {
  s->exec->describe(s); /* the engine's own account of the end */
  tfs_exit_t ex = record_exit(s);
  int st = s->worker_status;
  char desc[512];
  describe_exit(s, desc, sizeof desc);
  sup_log(s, "worker %d %s", (int)s->worker, desc);
  if (s->stopping) {
    finish_stopped(s, desc);
    return;
  }
  if (s->timed_out && !s->rec.restart_on_timeout) {
    finish_timed_out(s, desc);
    return;
  }
  int failed = s->end_failed || !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  int again = s->timed_out || policy_restarts(s);
  if (!again) {
    sup_finish(s, failed ? TFS_FAILED : TFS_COMPLETED, "%s", desc);
    return;
  }
  int64_t uptime = ex.ended_ms - ex.started_ms;
  int quick = uptime < s->rec.min_uptime_ms;
  if (!restarts_end(s, quick, desc))
    schedule_restart(s, uptime, quick);
}
