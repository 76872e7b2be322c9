/* What feed.c and follow.c share (feed.c's opening comment tells what
 * feeds are): a server's feed state, with the 0 ms timer that runs the
 * looks that are due and frees what was stopped. Private to the two. */
#ifndef TASKFS_HTTP_FEED_H
#define TASKFS_HTTP_FEED_H

#include "http/internal.h"

struct http_feed {
  http_server_t *srv;
  uv_timer_t soon; /* looks due, and the sweep of what was stopped */
  http_follow_t *follows;
  int opens; /* follows being opened on the thread pool */
  /* the task feed */
  http_task_sub_t *subs;
  mcp_listener_t *dirl;
  struct feed_id *ids; /* every task id, sorted */
  size_t nids, capids;
  struct live *live;
  struct http_pacer *pacer; /* the holds of progress events (progress.c) */
  int telling;
};

/* The store the feeds read: the MCP server's, on the loop's thread. */
tfs_store_t *http_feed_store(http_feed_t *fd);
/* The timer runs on the next loop turn. */
void http_feed_soon(http_feed_t *fd);

/* follow.c's side of the feed's life: the looks that are due, the
 * follows that were stopped freed (one whose open is on the thread pool
 * stays until it is done), every follow ended at the server's stop
 * (-ESHUTDOWN), and every follow stopped and let go of at the end (an
 * open still on the pool then frees only itself; the sweep that follows
 * frees the follows). */
void http_follows_look(http_feed_t *fd);
void http_follows_sweep(http_feed_t *fd);
void http_follows_end(http_feed_t *fd);
void http_follows_let_go(http_feed_t *fd);

#endif
