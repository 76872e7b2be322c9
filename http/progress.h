/* The task feed's progress events on the loop (http/progress.c): one
 * pace per task that has not ended (core's tfs_progress_t: what was told
 * and when) and one pacer per feed, whose single timer looks at a held
 * task again once its interval has passed. Private to the feed. */
#ifndef TASKFS_HTTP_PROGRESS_H
#define TASKFS_HTTP_PROGRESS_H

#include "http/internal.h"
#include "taskfs/progress.h"

typedef struct http_pacer http_pacer_t;

typedef struct http_pace {
  struct http_pace *next; /* on the pacer's held list */
  tfs_progress_t prog;
  int64_t due_ms; /* held: look again then */
  int held;
} http_pace_t;

/* The pacer of a feed; look(pc) reads pc's task again (and calls
 * http_pace_look) once a hold is over. NULL without memory: then a held
 * task is looked at again on the watch's tick, which comes anyway. */
http_pacer_t *http_pacer_open(http_server_t *srv, void (*look)(http_pace_t *pc));
/* Lets go of every hold; the pacer is freed once its timer has closed.
 * NULL is fine. */
void http_pacer_close(http_pacer_t *p);

/* A pace starts from the record first seen (now_ms 0: the next change is
 * told at once). */
void http_pace_init(http_pace_t *pc, const tfs_record_t *rec, int64_t now_ms);
/* The record of a task that has not ended was read again: the progress
 * event to tell now (malloc'ed JSON), or NULL: nothing new, or held (the
 * pacer looks again when the interval has passed). */
char *http_pace_look(http_pacer_t *p, http_pace_t *pc, const tfs_record_t *rec);
/* The task's state changed and rec is told whole next: a progress event
 * for what moved since the last one (the end of a task flushes whatever
 * was held), or NULL; rec's counters count as told from now. */
char *http_pace_flush(http_pacer_t *p, http_pace_t *pc, const tfs_record_t *rec);
/* The task is no longer followed: its hold, if any, is let go of. */
void http_pace_drop(http_pacer_t *p, http_pace_t *pc);

#endif
