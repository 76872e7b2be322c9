/* The task feed's progress events on the loop (live/progress.c): one
 * pace per task that has not ended (core's tfs_progress_t: what was told
 * and when) and one pacer per feed, whose single timer looks at a held
 * task again once its interval has passed. Private to the feed. */
#ifndef TASKFS_LIVE_PROGRESS_H
#define TASKFS_LIVE_PROGRESS_H

#include <uv.h>

#include "taskfs/taskfs.h"
#include "taskfs/progress.h"

typedef struct live_pacer live_pacer_t;

typedef struct live_pace {
  struct live_pace *next; /* on the pacer's held list */
  tfs_progress_t prog;
  int64_t due_ms; /* held: look again then */
  int held;
} live_pace_t;

/* The pacer of a feed; look(pc) reads pc's task again (and calls
 * live_pace_look) once a hold is over. NULL without memory: then a held
 * task is looked at again on the watch's tick, which comes anyway. */
live_pacer_t *live_pacer_open(uv_loop_t *loop, void (*look)(live_pace_t *pc));
/* Lets go of every hold; the pacer is freed once its timer has closed.
 * NULL is fine. */
void live_pacer_close(live_pacer_t *p);

/* A pace starts from the record first seen (now_ms 0: the next change is
 * told at once). */
void live_pace_init(live_pace_t *pc, const tfs_record_t *rec, int64_t now_ms);
/* The record of a task that has not ended was read again: the progress
 * event to tell now (malloc'ed JSON), or NULL: nothing new, or held (the
 * pacer looks again when the interval has passed). */
char *live_pace_look(live_pacer_t *p, live_pace_t *pc, const tfs_record_t *rec);
/* The task's state changed and rec is told whole next: a progress event
 * for what moved since the last one (the end of a task flushes whatever
 * was held), or NULL; rec's counters count as told from now. */
char *live_pace_flush(live_pacer_t *p, live_pace_t *pc, const tfs_record_t *rec);
/* The task is no longer followed: its hold, if any, is let go of. */
void live_pace_drop(live_pacer_t *p, live_pace_t *pc);

#endif
