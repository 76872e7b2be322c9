/* taskfs: the live layer (libtaskfs-live.a), between core and the faces.
 *
 * Core is the store at rest: files, records, transcripts, one watch that
 * says "look again". This layer is the store as it changes, on a libuv
 * loop, once for every face of a process: MCP (mcp/), HTTP (http/: the
 * JSON API, A2A, the viewer) and the mount (fs/) sit on it side by side,
 * and none of them includes another's headers.
 *
 * A hub (live_hub_t) owns:
 * - the loop pointer it is given (never the loop itself);
 * - the store handle and its refresh rule (a store removed and recreated
 *   under a process that runs for days is served again; a refused one
 *   stays refused; one face is told when that changes);
 * - one core watch (tfs_watch_t) under the loop with listener fan-out
 *   (watch.c): every wait, subscription, follow and feed of the process
 *   listens on it, never on a watch of its own;
 * - transcript scans on the loop's thread pool, capped and cancellable
 *   (scan.c), and the async launch of a task's supervisor (launch.c);
 * - the feeds (feed.c, follow.c): the task feed (appeared, changed, gone,
 *   and progress paced per task: progress.c)
 *   and follows of one task's transcript, opened on the thread pool
 *   through the line index.
 * Everything runs on the loop's thread, but what the thread pool runs.
 * The hub counts the work it has on the pool (live_idle); whoever runs
 * the loop frees the hub only once it is idle. */
#ifndef TASKFS_LIVE_H
#define TASKFS_LIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "taskfs/supervise.h"
#include "taskfs/taskfs.h"

typedef struct live_hub live_hub_t;

/* ---- the hub (hub.c) --------------------------------------------------- */

typedef struct {
  uv_loop_t *loop;       /* the loop everything runs on (required) */
  tfs_store_t *store;    /* an open store the hub takes; NULL: opened from state_dir */
  const char *state_dir; /* NULL: resolve as every verb does */
  /* Who speaks in the hub's messages ("taskfs mcp"). log, when set, takes
   * them instead of stderr (prio: a syslog priority). */
  const char *name;
  void (*log)(void *arg, int prio, const char *msg);
  /* Called each time the work on the thread pool drops to none
   * (live_idle() is 1 then), so that an end waiting for it goes on. */
  void (*on_idle)(void *arg);
  void *arg;
} live_config_t;

/* Opens the store (or takes cfg->store) and the watch. Says what went
 * wrong on stderr and returns a negative error. */
int live_hub_open(const live_config_t *cfg, live_hub_t **out);
/* Frees the hub and closes its store; only once it is idle and nothing
 * listens on its watch any more (the loop may still run for the close
 * callbacks of its handles). */
void live_hub_free(live_hub_t *hub);
uv_loop_t *live_loop(live_hub_t *hub);

/* The store, refreshed first: the path may name a store removed and
 * recreated since (served again once it passes the checks of an open; a
 * refused one stays refused). On the loop's thread only. */
tfs_store_t *live_store(live_hub_t *hub);
/* The same handle without the refresh, for the rest of a request that
 * began with live_store(), and the thread pool's reopen. */
tfs_store_t *live_store_handle(live_hub_t *hub);
/* What the last refresh found: 0 (served), or why the store is not (it is
 * absent, or refused: tfs_store_refusal() says why). */
int live_store_state(live_hub_t *hub);
/* fn(arg, state, before) when a refresh changes what it finds: state < 0
 * the store is unavailable now (before was 0), 0 it is served again
 * (before < 0), 1 it was replaced by another that passes. One face per hub
 * words it (MCP's log notifications, the mount's log); NULL: none. */
typedef void (*live_store_fn)(void *arg, int state, int before);
void live_store_notify(live_hub_t *hub, live_store_fn fn, void *arg);

/* Work on the thread pool that the end waits for (scans, launches, and a
 * face's own jobs): +1 when it starts, -1 when it is done. */
void live_hold(live_hub_t *hub, int delta);
/* 1 when none is. */
int live_idle(const live_hub_t *hub);

/* ---- the watch (watch.c) ---------------------------------------------- */

/* A listener is told what changed (TFS_WATCH_* bits; TFS_WATCH_GONE
 * always), or LIVE_WATCH_TICK on the tick, which comes every
 * tfs_watch_tick_ms() for what inotify cannot see. Either way it is only
 * "look again". It may add and remove listeners (a removal takes effect
 * once the round of calls is over: a removed listener is not called). */
#define LIVE_WATCH_TICK 0x100u
typedef struct live_listener live_listener_t;
typedef void (*live_watch_fn)(void *arg, unsigned what);
/* Listens to task id for what (TFS_WATCH_STATE, TFS_WATCH_OUTPUT). NULL
 * only when out of memory: the caller then looks every
 * live_watch_tick_ms() on its own. */
live_listener_t *live_watch_add(live_hub_t *hub, const char *id, unsigned what, live_watch_fn fn,
                                void *arg);
/* Listens to the store's tasks/ itself: fn(arg, id, TFS_WATCH_CREATED or
 * TFS_WATCH_DELETED) as a task appears or goes, fn(arg, NULL, ...) when
 * tasks/ changed in a way no event names (list it again), and
 * fn(arg, NULL, LIVE_WATCH_TICK) on the tick. NULL only when out of
 * memory. */
typedef void (*live_tasks_dir_fn)(void *arg, const char *id, unsigned what);
live_listener_t *live_watch_tasks(live_hub_t *hub, live_tasks_dir_fn fn, void *arg);
void live_watch_remove(live_hub_t *hub, live_listener_t *l); /* l may be NULL */
int live_watch_tick_ms(live_hub_t *hub);
/* 1 when inotify sees tasks/ appear and go (else only a new listing
 * does: the tick alone, TASKFS_NO_INOTIFY). */
int live_watch_sees_tasks(live_hub_t *hub);

/* ---- scans on the thread pool (scan.c) -------------------------------- */

/* Every face's tail reads and follow opens: at most LIVE_SCAN_JOBS of a
 * hub at once, the rest queued in order off the loop. */
typedef struct live_scan live_scan_t;
/* Runs run(arg) on the loop's thread pool with a cancel flag of its own
 * (tfs_scan_cancel_set); then done(arg, err) on the loop: err 0,
 * -ECANCELED (live_scan_cancel; run may not have run at all) or a pool
 * error. done is called exactly once, from live_scan_cancel itself for a
 * scan still queued. NULL: out of memory. */
live_scan_t *live_scan_submit(live_hub_t *hub, void (*run)(void *arg),
                              void (*done)(void *arg, int err), void *arg);
/* The scan's client left: a running scan stops at its next block. */
void live_scan_cancel(live_scan_t *sc);

/* ---- the async launch (launch.c) -------------------------------------- */

/* Step two of a start (tfs_task_start_launch) on the thread pool, with a
 * store handle of its own (tfs_store_reopen of the hub's); done(arg, err)
 * on the loop, err as tfs_task_start_launch returned it (st and
 * opts->env stay the caller's until then). The hub holds it
 * (live_hold) meanwhile. Without a handle for the thread the task is
 * failed at once (127, in words naming who), never left queued, and the
 * error is returned: done is not called then. */
typedef void (*live_launch_fn)(void *arg, int err);
int live_launch(live_hub_t *hub, const tfs_launch_opts_t *opts, tfs_start_t *st, const char *who,
                live_launch_fn done, void *arg);

/* ---- feeds (feed.c, follow.c) ----------------------------------------- */

/* A feed is one face's set of follows and task-feed subscriptions on the
 * hub (the HTTP server's: the JSON API and A2A), so that the face can end
 * them all at its stop. Made on first use; NULL: no memory. */
typedef struct live_feed live_feed_t;
live_feed_t *live_feed_open(live_hub_t *hub);
/* The face stops: every follow ends (end with rec NULL, err -ESHUTDOWN)
 * and every subscriber is told fn(arg, NULL, NULL, NULL), the last call
 * it gets. */
void live_feed_stop(live_feed_t *fd);
/* How many follows are being opened on the thread pool: the face's stop
 * waits for them as for requests in flight. */
int live_feed_opening(const live_feed_t *fd);
/* The end: every follow and subscription is let go of; an open still on
 * the thread pool frees only itself when it is done. fd may be NULL. */
void live_feed_close(live_feed_t *fd);

/* A follow: one task's transcript from a byte offset, as it is written. */
typedef struct live_follow live_follow_t;
typedef struct {
  /* Each complete new line (without its '\n'): n its 1-based number, end
   * the byte offset just after it (what a reader gives to go on from
   * there). partial 1: the final line of an ended task, which has no
   * '\n'; 2: a 1 MiB piece of a longer line (the next piece has the same
   * n). Returns non-zero when the consumer can take no more for now: the
   * follow then reads nothing until live_follow_resume(). */
  int (*line)(void *arg, int64_t n, off_t end, const char *text, size_t len, int partial);
  /* The record (json: tfs_record_dump of it) at the first look, then
   * whenever the task's state changes. */
  void (*state)(void *arg, const tfs_record_t *rec, const char *json);
  /* Once, last: the task has ended and every byte is handed out (rec,
   * json, err 0), or it went away or cannot be read (rec NULL or not, err
   * why). The follow is over: live_follow_stop() is no longer called. */
  void (*end)(void *arg, const tfs_record_t *rec, const char *json, int err);
} live_follow_ops_t;
/* Starts following task id at the first line that starts at or after
 * byte from (0: the start). The first callbacks come on a later turn of
 * the loop, once the follow is open: the open (which counts the lines
 * before from) runs on the loop's thread pool, and an error it meets
 * then (the task went away meanwhile) comes as end. Returns 0,
 * TFS_EBADID, TFS_ENOTASK, or another error found before the open
 * (-ENOMEM for a NULL feed). */
int live_follow_start(live_feed_t *fd, const char *id, off_t from, const live_follow_ops_t *ops,
                      void *arg, live_follow_t **out);
/* The consumer has room again after its line callback said it had none. */
void live_follow_resume(live_follow_t *fl);
/* No more callbacks, from this moment (also from inside one). */
void live_follow_stop(live_follow_t *fl);

/* The task feed: fn(arg, id, rec, json) for every task that appears or
 * whose state changes (the record after the change), fn(arg, id, NULL,
 * json) for a running task's progress (json: tfs_progress_dump's event,
 * at most one per TFS_PROGRESS_INTERVAL_MS per task, the last counters
 * always told, before the record of a state change at the latest;
 * live/progress.c paces them), fn(arg, id, NULL, NULL) for a task that
 * went away, fn(arg, NULL, NULL, NULL) at the feed's stop
 * (live_feed_stop). Set up when the call returns (what
 * happens from then on is told). */
typedef struct live_task_sub live_task_sub_t;
typedef void (*live_tasks_fn)(void *arg, const char *id, const tfs_record_t *rec, const char *json);
int live_tasks_subscribe(live_feed_t *fd, live_tasks_fn fn, void *arg, live_task_sub_t **out);
/* No more calls, from this moment (also from inside one). */
void live_tasks_unsubscribe(live_feed_t *fd, live_task_sub_t *s);

#endif /* TASKFS_LIVE_H */
