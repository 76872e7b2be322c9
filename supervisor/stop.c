/* Stop requests: how they reach the supervisor, and how it stops the tree.
 *
 * A request is the cancel file (core/cancel.c). It is noticed three ways:
 * the doorbell FIFO that tfs_cancel_request() rings, a slow poll of the
 * cancel file (for one written by hand), and SIGTERM/SIGINT to the
 * supervisor itself. Acting on it: SIGTERM and SIGCONT to the worker's
 * process group and every descendant, then after the grace period SIGKILL
 * rounds every KILL_REPEAT_MS until the tree is gone.
 */
#include "supervisor/sup.h"
#include "taskfs/cleanup.h"
#include "taskfs/text.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The poll for stop requests: the fallback when there is no doorbell, and
 * otherwise only for a cancel file written by hand, so it can be slow and
 * cost nothing while a task idles. TASKFS_CANCEL_POLL_MS overrides both. */
#define CANCEL_POLL_MS 1000
#define CANCEL_POLL_BELL_MS 10000
#define KILL_REPEAT_MS 100 /* after the grace period: SIGKILL rounds */

/* Signals everything the task started. The worker's process group is used
 * only while the worker is unreaped: its zombie pins the group id, so the
 * id cannot have been recycled. Descendants are found in /proc; the
 * sentinel is spared. */
static void signal_tree(sup_t *s, int sig) {
  if (s->worker > 0 && !s->worker_reaped)
    kill(-s->worker, sig);
  sup_kill_descendants(sig, s->sentinel);
}

static void on_kill_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  if (!s->tree_empty) {
    if (!s->killed)
      sup_log(s, "grace period of %" PRId64 " ms over: SIGKILL", s->rec.grace_ms);
    s->killed = 1;
    signal_tree(s, SIGKILL);
  }
}

void sup_arm_kill(sup_t *s) {
  if (!uv_is_active((uv_handle_t *)&s->kill_timer))
    uv_timer_start(&s->kill_timer, on_kill_timer, (uint64_t)s->rec.grace_ms, KILL_REPEAT_MS);
}

static void request_stop(sup_t *s, const char *by, int64_t at) {
  if (s->stopping || s->phase == PH_DONE)
    return;
  s->stopping = 1;
  snprintf(s->stop_by, sizeof s->stop_by, "%s", by && *by ? by : "someone");
  s->stop_at = at ? at : tfs_now_ms();
  sup_log(s, "stop requested by %s", s->stop_by);
  if (s->phase == PH_BACKOFF || s->phase == PH_START) {
    /* No worker is running: nothing to stop, and not a crash. */
    uv_timer_stop(&s->backoff_timer);
    sup_finish(s, TFS_CANCELLED, "stop requested by %s; no worker was running", s->stop_by);
    return;
  }
  sup_stop_tree(s);
}

void sup_stop_tree(sup_t *s) {
  signal_tree(s, SIGTERM);
  signal_tree(s, SIGCONT); /* a stopped process would not see SIGTERM */
  sup_arm_kill(s);
}

/* The log line "noticed via doorbell|poll|start" tells how stops are
 * picked up. */
void sup_check_cancel(sup_t *s, const char *via) {
  char who[256] = "";
  int64_t at = 0;
  if (s->phase != PH_DONE && tfs_cancel_query(s->store, s->id, who, sizeof who, &at) == 1) {
    if (!s->stopping)
      sup_log(s, "stop request noticed via %s", via);
    request_stop(s, who, at);
  }
}

static void on_poll_timer(uv_timer_t *t) {
  sup_check_cancel(t->data, "poll");
}

/* The doorbell rang: empty the FIFO (many rings count as one) and look. */
static void on_doorbell(uv_poll_t *h, int status, int events) {
  sup_t *s = h->data;
  char buf[256];
  while (read(s->bell_fd, buf, sizeof buf) > 0)
    ;
  sup_check_cancel(s, "doorbell");
}

static void on_signal(uv_signal_t *h, int signum) {
  sup_t *s = h->data;
  char by[128], sig[TFS_SIGNAME_MAX];
  snprintf(by, sizeof by, "signal %s to the supervisor (pid %d)", tfs_signal_name(signum, sig),
           (int)getpid());
  request_stop(s, by, tfs_now_ms());
}

/* The doorbell (tfs_doorbell_open), the FIFO that tfs_cancel_request()
 * writes a byte into after it has written the cancel file. One FIFO per
 * task costs a file descriptor, where an inotify watch would cost one of
 * the user's few inotify instances (fs.inotify.max_user_instances, 128 by
 * default), which hundreds of supervisors would use up for every other
 * program. */
void sup_doorbell_close(sup_t *s) {
  if (s->bell_fd >= 0)
    tfs_task_file_remove(s->store, s->id, TFS_FILE_DOORBELL);
}

/* The doorbell, unless TASKFS_NO_INOTIFY is on (the name is historical:
 * the watch it used to switch off was inotify), which leaves the poll. */
static void start_doorbell(sup_t *s) {
  if (tfs_watch_disabled())
    return;
  s->bell_fd = tfs_doorbell_open(s->store, s->id);
  if (s->bell_fd < 0) {
    sup_log(s, "cannot create the doorbell (%s); polling for stop requests",
            tfs_strerror(s->bell_fd));
    s->bell_fd = -1;
    return;
  }
  uv_poll_init(&s->loop, &s->bell_poll, s->bell_fd);
  s->bell_poll.data = s;
  uv_poll_start(&s->bell_poll, UV_READABLE, on_doorbell);
}

void sup_stop_init(sup_t *s) {
  uv_signal_init(&s->loop, &s->sigterm);
  uv_signal_init(&s->loop, &s->sigint);
  s->sigterm.data = s->sigint.data = s;
  uv_signal_start(&s->sigterm, on_signal, SIGTERM);
  uv_signal_start(&s->sigint, on_signal, SIGINT);
  uv_timer_init(&s->loop, &s->poll_timer);
  uv_timer_init(&s->loop, &s->kill_timer);
  s->poll_timer.data = s->kill_timer.data = s;
  start_doorbell(s);
  /* The poll stays: it notices a cancel file written by hand, or by a
   * writer that found no doorbell. */
  uint64_t poll_ms = s->bell_fd >= 0 ? CANCEL_POLL_BELL_MS : CANCEL_POLL_MS;
  const char *pm = getenv("TASKFS_CANCEL_POLL_MS");
  if (pm && atoll(pm) > 0)
    poll_ms = (uint64_t)atoll(pm);
  uv_timer_start(&s->poll_timer, on_poll_timer, poll_ms, poll_ms);
}
