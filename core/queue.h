/* What core/queue.c and core/queue_seat.c share: a queue's directory,
 * its lock, its settings, its slots and its waiters (the layout is in
 * include/taskfs/queue.h). */
#ifndef TASKFS_CORE_QUEUE_H
#define TASKFS_CORE_QUEUE_H

#include "core/internal.h"

#define TFS__QUEUES_DIR "queues"
#define TFS__QUEUE_WAITING "waiting"

/* Opens queues/<name> (with create: makes it and queues/), checked as the
 * store's directories are. -ENOENT without create when it is absent. */
int tfs__queue_open(tfs_store_t *store, const char *name, int create);
/* Its waiting/ directory. */
int tfs__queue_waiting(tfs_store_t *store, int qfd, int create);
/* Takes the queue's lock (blocking, a moment: every holder only looks at
 * a few files); returns the fd that holds it (closing it unlocks). */
int tfs__queue_lock(const tfs_store_t *store, int qfd);
/* The settings as stored; absent: no limit, not paused. */
int tfs__queue_settings(int qfd, int *parallel, int *paused);

/* The slots as they are, with the queue lock held: how many are held, and
 * with want a free slot below the limit taken (its fd in *taken, else -1;
 * one is made when every existing file is held or past the limit). Free
 * slot files past the limit are removed. */
int tfs__queue_slots(int qfd, int parallel, int want, int *held, int *taken);

/* The same, also naming the holders (the ids they wrote into their slots;
 * "" for one that did not say), at most max of them. */
int tfs__queue_holders(int qfd, int parallel, int want, int *held, int *taken,
                       char (*holders)[TFS_ID_MAX + 1], size_t max);

/* The waiters in waiting/ (ids, sorted: oldest first). */
int tfs__queue_entries(int wfd, tfs__idbuf_t **ids, size_t *n);
/* The live waiters of an open queue (ids, oldest first; free *live). */
int tfs__queue_live(tfs_store_t *store, int qfd, tfs__idbuf_t **live, size_t *n);
/* The info of an open queue; with keep, its live waiters too (oldest
 * first, listed once for both; free *keep). */
int tfs__queue_info_at(tfs_store_t *store, int qfd, const char *name, tfs_queue_info_t *out,
                       tfs__idbuf_t **keep, size_t *nkeep);
/* 1 if a supervisor holds the waiter entry's lock (it waits), 0 if not
 * (stale: its waiter died or left), or an error. */
int tfs__queue_entry_live(int wfd, const char *id);

#endif
