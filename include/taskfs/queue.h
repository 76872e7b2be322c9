/* taskfs: queues with a parallel limit, dependencies and start times, and
 * the control of a running task (pause, resume, signals, its stdin). Part
 * of libtaskfs.a; included by taskfs.h. (The rule of a queue name is
 * taskfs/ids.h's.)
 *
 * No daemon keeps a queue: each task's own supervisor takes a slot of its
 * queue through the store, with kernel locks, so that a process killed at
 * any moment (kill -9) can neither lose a slot nor let two tasks run in
 * one. The layout (core's alone, as every store file):
 *
 *   <state>/queues/<name>/settings      {"parallel": N|null, "paused": bool}
 *   <state>/queues/<name>/lock          flock()ed for a moment by whoever
 *                                       takes a slot or changes settings
 *   <state>/queues/<name>/slot.<i>      flock()ed (LOCK_EX) by a running
 *                                       task for its worker's whole life
 *   <state>/queues/<name>/waiting/<id>  flock()ed by a task's supervisor
 *                                       while it waits for a slot
 *
 * A slot is held by a lock, so a dead holder frees it (the kernel drops
 * the lock with the last file descriptor), and a lock is held by one
 * holder at a time, so no slot ever runs two tasks. Order is by task id,
 * which sorts by creation time: a waiter takes a slot only when no older
 * waiter of the queue is still waiting (a live one: its entry's lock is
 * held). docs/ARCHITECTURE.md has the whole argument.
 */
#ifndef TASKFS_QUEUE_H
#define TASKFS_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "taskfs/ids.h"
#include "taskfs/record.h"
#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- queues (core/queue.c) ---------------------------------------------- */

#define TFS_QUEUE_PARALLEL_MAX 1000

/* A parallel limit as every face takes it: 1..TFS_QUEUE_PARALLEL_MAX in
 * decimal digits, or "none" (also "unlimited") for no limit (0). 0 and
 * *out, or -EINVAL. */
int tfs_queue_parallel_parse(const char *s, int *out);

/* A queue as it is now. */
typedef struct {
  char name[TFS_QUEUE_NAME_MAX + 1];
  int parallel; /* tasks that may run at once; 0: no limit */
  int paused;   /* 1: no task of it starts until it is resumed */
  int running;  /* slots held now */
  int waiting;  /* tasks waiting for a slot now */
} tfs_queue_info_t;

/* The queue name as it is now; -ENOENT if no task or setting ever made
 * it. */
int tfs_queue_info(tfs_store_t *store, const char *name, tfs_queue_info_t *out);
/* Every queue, sorted by name; *out is malloc'ed (free it). */
int tfs_queue_list(tfs_store_t *store, tfs_queue_info_t **out, size_t *n);
/* The tasks of a queue now: those that hold a slot (running or paused),
 * and those that wait for one, oldest first (ids; free each with
 * tfs_ids_free). -ENOENT if there is no such queue. */
int tfs_queue_tasks(tfs_store_t *store, const char *name, char ***running, size_t *nrunning,
                    char ***waiting, size_t *nwaiting);
/* Changes a queue's settings (making the queue if needed), atomically;
 * TFS_QUEUE_KEEP leaves one as it is. parallel: 1..TFS_QUEUE_PARALLEL_MAX,
 * or 0 for no limit (else -EINVAL). Waiters that may start now are woken
 * (tfs_queue_kick). */
#define TFS_QUEUE_KEEP (-1)
int tfs_queue_set(tfs_store_t *store, const char *name, int parallel, int paused);
/* tfs_queue_set(); without create, a queue that does not exist is -ENOENT
 * and is not made (pause and resume of a queue). */
int tfs_queue_change(tfs_store_t *store, const char *name, int parallel, int paused, int create);
/* Removes a queue (its settings with it): -ENOENT if there is none,
 * -EBUSY while a task holds or waits for one of its slots. */
int tfs_queue_remove(tfs_store_t *store, const char *name);
/* Rings the doorbells of the oldest waiters of the queue, as many as it
 * has free slots (all of them while it has no limit): whoever frees a slot
 * or raises the limit calls it. */
int tfs_queue_kick(tfs_store_t *store, const char *name);

/* ---- a task's seat in its queue (core/queue_seat.c): its supervisor's --- */

typedef struct tfs_queue_seat tfs_queue_seat_t;

/* Why a take did not succeed. */
typedef enum {
  TFS_QWAIT_NONE = 0, /* it took a slot */
  TFS_QWAIT_PAUSED,   /* the queue is paused */
  TFS_QWAIT_FULL,     /* every slot is held */
  TFS_QWAIT_BEHIND,   /* older tasks wait before it */
} tfs_qwait_t;

typedef struct {
  tfs_qwait_t why;
  int ahead;    /* live waiters older than this task */
  int parallel; /* the queue's limit then (0: none) */
} tfs_queue_wait_t;

/* Joins the queue as a waiter (its entry in waiting/, locked for as long
 * as the seat waits). The queue is made if needed. */
int tfs_queue_seat_open(tfs_store_t *store, const char *queue, const char *id,
                        tfs_queue_seat_t **out);
/* Takes a slot if this waiter may: the queue not paused, a slot free, no
 * older live waiter. 1: taken (the seat holds the slot's lock and has left
 * the waiters); 0: must wait (*wait says why; may be NULL); or an error.
 * Once taken, the next waiters are rung if slots are left and anyone else
 * waits. */
int tfs_queue_seat_take(tfs_queue_seat_t *seat, tfs_queue_wait_t *wait);
/* The fd that holds the slot (-1 while none): a process that inherits it
 * keeps the slot held while it lives (the supervisor's sentinel does, so
 * the slot frees only once the task's last process is gone). */
int tfs_queue_seat_fd(const tfs_queue_seat_t *seat);
/* Gives the slot back (unlocked for every holder of the fd) and rings the
 * next waiters. 0 if none was held. */
int tfs_queue_seat_release(tfs_queue_seat_t *seat);
/* Waits again (after a release): joins the waiters under the task's own
 * id, so it keeps its place by age. */
int tfs_queue_seat_rejoin(tfs_queue_seat_t *seat);
/* Releases whatever the seat holds and frees it (NULL is fine). */
void tfs_queue_seat_close(tfs_queue_seat_t *seat);

/* ---- where a queued task stands (core/queue_seat.c) ---------------------- */

/* Positions are computed on read: a task waiting for a slot is number
 * 1 + the live waiters older than it in its queue. One table serves a
 * listing: each queue's waiters are read once. */
typedef struct tfs_queue_positions tfs_queue_positions_t;
int tfs_queue_positions_open(tfs_store_t *store, tfs_queue_positions_t **out);
void tfs_queue_positions_close(tfs_queue_positions_t *p);
/* rec's position in its queue (1-based), or 0 when it is not waiting for
 * a slot (no queue, running, waiting for a dependency or a time). */
int tfs_queue_position(tfs_queue_positions_t *p, const tfs_record_t *rec);
/* Why a task that has not ended is where it is, in words, for every face
 * ("3rd in queue build (2 running, parallel 2)", "queue build is paused",
 * the supervisor's own words for a dependency or a start time, or the
 * reason it was paused); "" when there is nothing to say. */
void tfs_queue_describe(tfs_queue_positions_t *p, const tfs_record_t *rec, char *buf, size_t len);

/* ---- dependencies and start times (core/after.c) ------------------------- */

/* Checks what a new task would start after: every id names a task of the
 * store (TFS_ENOTASK, the id in bad), and following the dependencies of
 * those tasks never comes back to one of them (TFS_ECYCLE: bad gets the
 * cycle, "a -> b -> a"). bad may be NULL. */
int tfs_after_check(tfs_store_t *store, char *const *after, char *bad, size_t badlen);
/* Where a dependency stands, for the task waiting on it: 1 it completed,
 * 0 not yet (*rec_state its state), or TFS_EFINISHED when it ended any
 * other way (failed, cancelled, lost: the waiter never runs), with why in
 * words ("failed: exited with code 2"). A task read as lost is settled. */
int tfs_after_state(tfs_store_t *store, const char *id, char *why, size_t whylen);
/* Parses a start time: RFC 3339 (2026-12-01T18:00:00Z, with an offset, or
 * "2026-12-01 18:00:00" in local time) or HH:MM[:SS] in local time (the
 * next such moment: today, else tomorrow). 0 and *ms, or -EINVAL. */
int tfs_at_parse(const char *s, int64_t now_ms, int64_t *ms);

#ifdef __cplusplus
}
#endif

#include "taskfs/control.h"

#endif /* TASKFS_QUEUE_H */
