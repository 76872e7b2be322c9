/* What sched.c, control.c and stdin.c share: the state of a task's wait
 * before its first worker (dependencies, start time, queue slot), of its
 * pause, and of its stdin. One per supervisor, as sup_t. */
#ifndef TASKFS_SUPERVISOR_SCHED_H
#define TASKFS_SUPERVISOR_SCHED_H

#include "supervisor/sup.h"

enum { STAGE_DEPS = 0, STAGE_TIME, STAGE_SLOT, STAGE_RUN };

#define SUP_STDIN_BUF (64 * 1024)

typedef struct sup_sched {
  sup_t *s;
  int stage;
  int dep;                /* the next dependency to look at */
  int64_t retry_ms;       /* back-off of a look that must be repeated */
  uv_timer_t timer;       /* the next look: start time, back-off, fallback */
  uv_poll_t dep_poll;     /* the dependency thread's pipe */
  int dep_fd, dep_wr;     /* its ends, -1: none yet */
  int dep_waiting;        /* a thread waits for a dependency */
  tfs_queue_seat_t *seat; /* in the task's queue; NULL: none (yet) */
  char said[600];         /* the waiting words last saved in the record */
  const char *woken_by;   /* what made the last look (for the log) */

  /* control.c */
  off_t control_off;  /* requests read so far */
  int slot_freed;     /* paused with free-slot: the slot went back */
  int resuming;       /* a resume waits for the slot */
  char resume_by[256];
  char *kick_argv[10]; /* `taskfs supervise --queue-kick`, for the sentinel */
  char kick_fd[16];

  /* stdin.c */
  int fifo; /* the task's stdin FIFO, -1: none */
  uv_poll_t fifo_poll;
  int fifo_on;
  int wr; /* the worker's stdin pipe, our end; -1: none */
  uv_poll_t *wr_poll; /* its own per pipe (malloc'ed, freed when closed) */
  int wr_on;
  char buf[SUP_STDIN_BUF];
  size_t len;
} sup_sched_t;

/* Another look at whatever the task waits for (sched.c). */
void sup_sched_advance(sup_sched_t *ss);
/* Records the words of a wait (or a pause) as the record's reason, saved
 * only when they change. */
void sup_sched_say(sup_sched_t *ss, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
