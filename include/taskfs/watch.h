/* taskfs: one watch over the store for any number of tasks
 * (core/watch.c; included by taskfs.h). */
#ifndef TASKFS_WATCH_H
#define TASKFS_WATCH_H

#include <signal.h>
#include <stdint.h>

#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One watch serves any number of tasks: "tell me when task X changes".
 * It is an inotify instance behind an fd that a face puts under ppoll() or
 * a uv_poll_t, so core stays free of any event loop. Events only say "look
 * again": a watcher re-reads the record or the transcript. A supervisor
 * that dies changes no file, so every watcher also re-checks every
 * tfs_watch_tick_ms(). Without inotify (TASKFS_NO_INOTIFY=1, or the user's
 * inotify instances or watches used up) the watch still works, by the tick
 * alone. */
typedef struct tfs_watch tfs_watch_t;

/* What changed (tfs_watch_add() masks and callback bits). */
#define TFS_WATCH_STATE 1u    /* the record was replaced: any state change */
#define TFS_WATCH_OUTPUT 2u   /* the transcript grew */
#define TFS_WATCH_GONE 4u     /* reported only: the task dir was removed or moved */
#define TFS_WATCH_CREATED 8u  /* reported only, for tfs_watch_tasks(): a task appeared */
#define TFS_WATCH_DELETED 16u /* reported only, for tfs_watch_tasks(): a task went away */
/* tfs_watch_wait() result bit: extra_fd reported POLLHUP or POLLERR. */
#define TFS_WATCH_HANGUP 32u

/* 1 if TASKFS_NO_INOTIFY asks for no instant paths (no inotify, and no
 * supervisor doorbell): set to anything but "" or "0". The one place that
 * reads it. */
int tfs_watch_disabled(void);

/* Opens a watch on the store (no task yet). Fails only without memory. */
int tfs_watch_open(tfs_store_t *store, tfs_watch_t **out);
void tfs_watch_close(tfs_watch_t *w);
/* The inotify fd (readable when something changed; call
 * tfs_watch_drain()), or -1 when there is none (tick only). */
int tfs_watch_fd(const tfs_watch_t *w);
/* Watches task id for what (TFS_WATCH_STATE | TFS_WATCH_OUTPUT); adding an
 * id again changes its mask. The id is watched by the tick in any case;
 * the return tells whether inotify watches it too: 0 yes, else why not
 * (TFS_ENOTASK, -ENOSPC for the watch limit, -ENOSYS without inotify). */
int tfs_watch_add(tfs_watch_t *w, const char *id, unsigned what);
/* Stops watching id. 0, or TFS_ENOTASK if it was not watched. */
int tfs_watch_remove(tfs_watch_t *w, const char *id);
/* Also watches tasks/ itself: ids that appear (TFS_WATCH_CREATED) or go
 * (TFS_WATCH_DELETED). 0, or why inotify cannot (as tfs_watch_add). */
int tfs_watch_tasks(tfs_watch_t *w);

/* Called once per task id that changed, with the bits of what changed,
 * after the queue is read (a burst of appends is one call). After an event
 * queue overflow every watched id is reported with every bit it watches.
 * id NULL (with tfs_watch_tasks() only): tasks/ changed in a way no event
 * names (an overflow, the store itself removed): list it again. A task
 * appears (TFS_WATCH_CREATED) when its directory is made, before its
 * record: add it to the watch, then read it. */
typedef void (*tfs_watch_cb)(const char *id, unsigned what, void *arg);
/* Reads the events waiting on the fd without blocking and reports them (cb
 * may be NULL: discard). Returns the number of ids reported, or a negative
 * error. */
int tfs_watch_drain(tfs_watch_t *w, tfs_watch_cb cb, void *arg);
/* How often a watcher should re-check even without events: 1000 ms while
 * inotify watches every id, 250 ms when any is watched by the tick alone. */
int tfs_watch_tick_ms(const tfs_watch_t *w);
/* For blocking callers: sleeps until a watched task changes (the events
 * are drained into cb), timeout_ms passes (< 0: the tick), a signal
 * arrives, or extra_fd (>= 0) reports POLLHUP/POLLERR (a pipe's reader went
 * away). sigmask: the signal mask during the sleep (ppoll), so a caller
 * that blocks SIGINT/SIGTERM elsewhere is woken by them only here, without
 * a race; NULL keeps the current mask. Returns 0 (woken or timed out:
 * look again), TFS_WATCH_HANGUP, or -EINTR after a signal. */
int tfs_watch_wait(tfs_watch_t *w, int64_t timeout_ms, const sigset_t *sigmask, int extra_fd,
                   tfs_watch_cb cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_WATCH_H */
