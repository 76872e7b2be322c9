/* What the modules of libtaskfs-live.a share; the faces need only live.h.
 *
 * Who owns what: hub.c the hub (the loop pointer, the store and its
 * refresh, the count of work on the thread pool, the messages); watch.c
 * the one watch and its listeners; scan.c transcript scans on the pool;
 * launch.c the async launch; feed.c the feeds' life and the task feed;
 * follow.c follows. */
#ifndef TASKFS_LIVE_INTERNAL_H
#define TASKFS_LIVE_INTERNAL_H

#include <syslog.h>

#include "live/live.h"

/* At most this many scans of a hub on the thread pool at once. */
#define LIVE_SCAN_JOBS 2

typedef struct live_watch live_watch_t;

struct live_hub {
  uv_loop_t *loop;
  tfs_store_t *store;
  int store_state; /* 0 when the store was there at the last refresh, else its error */
  live_store_fn on_store;
  void *store_arg;
  char name[32]; /* "taskfs mcp": who speaks in messages */
  void (*log)(void *arg, int prio, const char *msg);
  void (*on_idle)(void *arg);
  void *arg;
  live_watch_t *watch;     /* watch.c */
  live_scan_t *scan_queue; /* scans waiting for the pool (scan.c) */
  int scanning;            /* and those on it */
  int holds;               /* work on the pool the end waits for */
};

/* A message of the hub: cfg->log, or stderr after its name. */
void live_log(live_hub_t *hub, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* watch.c: the watch is opened with the hub and closed with it. */
int live_watch_open(live_hub_t *hub);
void live_watch_close(live_hub_t *hub);

#endif /* TASKFS_LIVE_INTERNAL_H */
