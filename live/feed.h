/* What feed.c and follow.c share (feed.c's opening comment tells what
 * feeds are): a face's feed state, with the 0 ms timer that runs the
 * looks that are due and frees what was stopped. Private to the two. */
#ifndef TASKFS_LIVE_FEED_H
#define TASKFS_LIVE_FEED_H

#include "live/internal.h"

struct live_feed {
  live_hub_t *hub;
  uv_timer_t soon; /* looks due, and the sweep of what was stopped */
  live_follow_t *follows;
  int opens; /* follows being opened on the thread pool */
  /* the task feed */
  live_task_sub_t *subs;
  live_listener_t *dirl;
  struct feed_id *ids; /* every task id, sorted */
  size_t nids, capids;
  struct live *live;
  struct live_pacer *pacer; /* the holds of progress events (progress.c) */
  int telling;
};

/* The store the feeds read: the hub's, on the loop's thread. */
tfs_store_t *live_feed_store(live_feed_t *fd);
/* The timer runs on the next loop turn. */
void live_feed_soon(live_feed_t *fd);

/* follow.c's side of the feed's life: the looks that are due, the
 * follows that were stopped freed (one whose open is on the thread pool
 * stays until it is done), every follow ended at the face's stop
 * (-ESHUTDOWN), and every follow stopped and let go of at the end (an
 * open still on the pool then frees only itself; the sweep that follows
 * frees the follows). */
void live_follows_look(live_feed_t *fd);
void live_follows_sweep(live_feed_t *fd);
void live_follows_end(live_feed_t *fd);
void live_follows_let_go(live_feed_t *fd);

#endif
