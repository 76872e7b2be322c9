/* Before the first worker: a task may start after other tasks (each must
 * have completed; one that failed, was cancelled or lost ends this one
 * failed, never run), no sooner than a time, and only when its queue gives
 * it a slot. The supervisor waits for each in turn, on its loop, costing
 * no CPU meanwhile:
 *
 *  - a dependency with a live supervisor is waited for by a thread blocked
 *    on that task's lock (flock: the kernel wakes it when the supervisor
 *    exits, even killed -9), which then writes to a pipe the loop polls;
 *    one without a supervisor (still being launched) is looked at again
 *    after a back-off;
 *  - a start time is a timer (looked at again against the wall clock);
 *  - a queue slot is taken through core (tfs_queue_seat_take); whoever
 *    frees one rings the doorbell of the next waiters, and a slow timer
 *    (the oldest waiter's every 2 s, the others' every 30 s) covers a
 *    holder killed together with its sentinel, who rang nobody.
 *
 * The words of the wait are the record's reason while it lasts; the first
 * save of them (state queued, with this supervisor's pid) is what the
 * launcher waits for. At the end the slot goes back and the next waiter is
 * rung (sup_sched_finish). */
#include "supervisor/sched.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 5000
#define SLOT_CHECK_HEAD_MS 2000   /* the oldest waiter's own look */
#define SLOT_CHECK_MS 30000       /* the others' (a dead waiter ahead) */
#define SLOT_CHECK_NOBELL_MS 1000 /* without a doorbell */
#define TIME_CHECK_MAX_MS 3600000 /* a start time is looked at again hourly */

static sup_sched_t sched;

void sup_sched_say(sup_sched_t *ss, const char *fmt, ...) {
  char words[sizeof ss->said];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(words, sizeof words, fmt, ap);
  va_end(ap);
  if (!strcmp(words, ss->said))
    return;
  snprintf(ss->said, sizeof ss->said, "%s", words);
  tfs_record_set_reason(&ss->s->rec, "%s", words);
  sup_log(ss->s, "%s", words);
  /* Visible at once, not fsynced: after a crash the task reads lost
   * whatever this said. */
  sup_save_flags(ss->s, TFS_SAVE_NOSYNC);
}

static void on_timer(uv_timer_t *t) {
  sup_sched_t *ss = t->data;
  ss->woken_by = "its timer";
  sup_sched_advance(ss);
}

static void after(sup_sched_t *ss, int64_t ms) {
  uv_timer_start(&ss->timer, on_timer, (uint64_t)(ms > 0 ? ms : 0), 0);
}

/* A look to repeat: 100 ms, doubling to 5 s. */
static void retry(sup_sched_t *ss) {
  ss->retry_ms = ss->retry_ms ? ss->retry_ms * 2 : RETRY_FIRST_MS;
  if (ss->retry_ms > RETRY_MAX_MS)
    ss->retry_ms = RETRY_MAX_MS;
  after(ss, ss->retry_ms);
}

/* ---- dependencies ----------------------------------------------------------- */

typedef struct {
  int lock; /* the dependency's lock file */
  int wr;   /* our pipe's write end */
} dep_wait_t;

/* The thread: blocked until the dependency's supervisor lets go of its
 * lock (exits), then says so on the pipe and ends. It owns both fds; if
 * the supervisor ended first, the write fails (SIGPIPE is ignored) and
 * the process's exit takes the thread along. */
static void *dep_thread(void *arg) {
  dep_wait_t d = *(dep_wait_t *)arg;
  free(arg);
  while (flock(d.lock, LOCK_SH) < 0 && errno == EINTR)
    ;
  close(d.lock);
  (void)!write(d.wr, "!", 1);
  close(d.wr);
  return NULL;
}

/* A thread said its dependency's supervisor is gone: look again. */
static void on_dep(uv_poll_t *h, int status, int events) {
  sup_sched_t *ss = h->data;
  char buf[64];
  while (read(ss->dep_fd, buf, sizeof buf) > 0)
    ;
  ss->dep_waiting = 0;
  sup_sched_advance(ss);
}

/* The pipe the threads write to, made once and polled by the loop for the
 * supervisor's life (each thread writes through a copy of its write end). */
static int dep_pipe(sup_sched_t *ss) {
  int p[2];
  if (ss->dep_fd >= 0)
    return 0;
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
    return -errno;
  ss->dep_fd = p[0];
  ss->dep_wr = p[1];
  uv_poll_init(&ss->s->loop, &ss->dep_poll, p[0]);
  ss->dep_poll.data = ss;
  uv_poll_start(&ss->dep_poll, UV_READABLE, on_dep);
  return 0;
}

/* Starts the thread that waits for id's supervisor to exit. 0, or an
 * error (then the caller looks again after a back-off). */
static int watch_dep(sup_sched_t *ss, const char *id) {
  int err = dep_pipe(ss);
  if (err)
    return err;
  dep_wait_t *d = malloc(sizeof *d);
  int lock = tfs_task_file_open(ss->s->store, id, TFS_FILE_LOCK, O_RDONLY, 0);
  int wr = fcntl(ss->dep_wr, F_DUPFD_CLOEXEC, 0);
  if (!d || lock < 0 || wr < 0) {
    free(d);
    if (lock >= 0)
      close(lock);
    if (wr >= 0)
      close(wr);
    return lock < 0 ? lock : -ENOMEM;
  }
  d->lock = lock;
  d->wr = wr;
  pthread_attr_t attr;
  pthread_t t;
  sigset_t all, old;
  sigfillset(&all);
  /* The thread takes no signal: they are the loop's. */
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  err = pthread_create(&t, &attr, dep_thread, d);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err) {
    close(lock);
    close(wr);
    free(d);
    return -err;
  }
  ss->dep_waiting = 1;
  return 0;
}

/* 1 once every dependency has completed; 0 while one is waited for (or
 * the task was ended failed: one did not complete). */
static int wait_deps(sup_sched_t *ss) {
  sup_t *s = ss->s;
  for (; ss->dep < s->rec.nafter; ss->dep++) {
    const char *d = s->rec.after[ss->dep];
    char why[512];
    int r = tfs_after_state(s->store, d, why, sizeof why);
    if (r == 1) {
      ss->retry_ms = 0;
      continue;
    }
    if (r == TFS_EFINISHED) {
      sup_finish(s, TFS_FAILED, TFS_REASON_NOT_RUN "it starts after task %s, which %s", d, why);
      return 0;
    }
    if (r < 0) {
      sup_sched_say(ss, "waiting for task %s, which cannot be read now (%s)", d, tfs_strerror(r));
      retry(ss);
      return 0;
    }
    sup_sched_say(ss, "waiting for task %s to complete", d);
    /* A live supervisor is waited on; one that is not there yet (the task
     * is being launched) is looked for again shortly. */
    if (ss->dep_waiting || (tfs_task_alive(s->store, d) == 1 && watch_dep(ss, d) == 0))
      return 0;
    retry(ss);
    return 0;
  }
  ss->retry_ms = 0;
  ss->stage = STAGE_TIME;
  return 1;
}

/* ---- the start time and the slot --------------------------------------------- */

static int wait_time(sup_sched_t *ss) {
  int64_t left = ss->s->rec.not_before_ms - tfs_now_ms();
  if (left > 0) {
    char t[TFS_TIME_BUF];
    sup_sched_say(ss, "waiting until %s", tfs_time_format(ss->s->rec.not_before_ms, t));
    after(ss, left < TIME_CHECK_MAX_MS ? left : TIME_CHECK_MAX_MS);
    return 0;
  }
  ss->stage = STAGE_SLOT;
  return 1;
}

static int wait_slot(sup_sched_t *ss) {
  sup_t *s = ss->s;
  tfs_queue_wait_t w;
  if (!s->rec.queue[0]) {
    ss->stage = STAGE_RUN;
    return 1;
  }
  int r = ss->seat ? 0 : tfs_queue_seat_open(s->store, s->rec.queue, s->id, &ss->seat);
  if (r == 0)
    r = tfs_queue_seat_take(ss->seat, &w);
  if (r == 1) {
    if (ss->said[0])
      sup_log(s, "took a slot in queue %s (woken by %s)", s->rec.queue, ss->woken_by);
    ss->stage = STAGE_RUN;
    return 1;
  }
  if (r < 0) {
    sup_sched_say(ss, "waiting for queue %s, which cannot be used now (%s)", s->rec.queue,
                  tfs_strerror(r));
    retry(ss);
    return 0;
  }
  sup_sched_say(ss, "waiting for a slot in queue %s", s->rec.queue);
  after(ss, s->bell_fd < 0 ? SLOT_CHECK_NOBELL_MS : w.ahead ? SLOT_CHECK_MS : SLOT_CHECK_HEAD_MS);
  return 0;
}

void sup_sched_advance(sup_sched_t *ss) {
  sup_t *s = ss->s;
  if (s->phase == PH_DONE || s->stopping)
    return;
  if (ss->stage == STAGE_RUN) {
    /* Running: only a paused task that gave its slot back waits for one. */
    if (ss->resuming && ss->seat && tfs_queue_seat_take(ss->seat, NULL) == 1)
      sup_control_resumed(s);
    else if (ss->resuming)
      after(ss, s->bell_fd < 0 ? SLOT_CHECK_NOBELL_MS : SLOT_CHECK_HEAD_MS);
    return;
  }
  if (s->phase != PH_START)
    return;
  if ((ss->stage == STAGE_DEPS && !wait_deps(ss)) || (ss->stage == STAGE_TIME && !wait_time(ss)) ||
      (ss->stage == STAGE_SLOT && !wait_slot(ss)))
    return;
  uv_timer_stop(&ss->timer);
  if (ss->said[0]) {
    ss->said[0] = '\0';
    tfs_record_set_reason(&s->rec, NULL); /* the wait is over */
  }
  sup_start_worker(s);
}

void sup_sched_start(sup_t *s) {
  sup_sched_t *ss = &sched;
  memset(ss, 0, sizeof *ss);
  ss->s = s;
  ss->dep_fd = ss->dep_wr = ss->fifo = ss->wr = -1;
  s->sched = ss;
  s->stdin_rd = -1;
  uv_timer_init(&s->loop, &ss->timer);
  ss->timer.data = ss;
  sup_stdin_init(s);
  /* A task that must wait says so at its first look (sup_sched_say saves
   * the record, state queued with this supervisor's pid): the launcher
   * returns then. One that need not wait starts at once, and the launcher
   * returns when it runs; saying "waiting" before looking would tell it a
   * wait that never happens. */
  sup_sched_advance(ss);
}

void sup_sched_bell(sup_t *s, int poll) {
  sup_sched_t *ss = s->sched;
  if (!ss || s->phase == PH_DONE)
    return;
  sup_control_check(s);
  /* The poll only stands in for a missing doorbell: with one, each waiter
   * has its own timer. */
  ss->woken_by = poll ? "the poll" : "the doorbell";
  if (!poll || s->bell_fd < 0)
    sup_sched_advance(ss);
}

void sup_sched_finish(sup_t *s) {
  sup_sched_t *ss = s->sched;
  if (!ss)
    return;
  /* The tree is gone: the slot frees, and the queue's next waiter is
   * rung (a waiter that leaves rings the ones behind it). */
  tfs_queue_seat_close(ss->seat);
  ss->seat = NULL;
  sup_stdin_close(s);
}

int sup_sched_slot_fd(sup_t *s) {
  return s->sched ? tfs_queue_seat_fd(s->sched->seat) : -1;
}

char *const *sup_sched_kick_argv(sup_t *s) {
  sup_sched_t *ss = s->sched;
  int fd = sup_sched_slot_fd(s);
  if (fd < 0)
    return NULL;
  snprintf(ss->kick_fd, sizeof ss->kick_fd, "%d", fd);
  char **a = ss->kick_argv;
  *a++ = "taskfs";
  *a++ = "supervise";
  *a++ = "--state-dir";
  *a++ = (char *)tfs_store_path(s->store);
  *a++ = "--queue-kick";
  *a++ = s->rec.queue;
  *a++ = "--slot-fd";
  *a++ = ss->kick_fd;
  *a = NULL;
  return ss->kick_argv;
}

/* The kicker a sentinel leaves when its supervisor was killed: it shares
 * the slot's open file, so it opens the file again (an open file of its
 * own, whose lock the sentinel's does not satisfy), lets the inherited one
 * go, and blocks on the lock until the sentinel, the slot's last holder,
 * is gone. Then the slot is free: it rings the next waiters. */
int sup_queue_kick_main(const char *dir, const char *queue, int fd) {
  char path[64];
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  /* The sentinel closed every fd but the slot's: 0, 1 and 2 are /dev/null. */
  for (int n; (n = open("/dev/null", O_RDWR)) >= 0 && n <= 2;)
    ;
  alarm(600); /* never a stray process for ever */
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int mine = open(path, O_RDONLY | O_CLOEXEC);
  close(fd);
  if (mine < 0)
    return 111;
  while (flock(mine, LOCK_EX) < 0 && errno == EINTR)
    ;
  close(mine);
  tfs_store_t *store;
  if (tfs_store_open_flags(dir, 0, &store, NULL, 0))
    return 111;
  int err = tfs_queue_kick(store, queue);
  tfs_store_close(store);
  return err ? 111 : 0;
}
