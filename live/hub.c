/* The hub: the loop pointer it is given, the store handle and its
 * refresh rule, the count of work on the thread pool that an end waits
 * for, and the hub's own messages. One per process side of a loop: `taskfs
 * serve` makes one for its MCP and HTTP faces, `taskfs mcp` one for its
 * server, the mount one for its FUSE session. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "live/internal.h"

void live_log(live_hub_t *hub, int prio, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (hub->log)
    hub->log(hub->arg, prio, msg);
  else
    fprintf(stderr, "%s: %s\n", hub->name, msg);
}

/* The store a hub serves: the caller's, or the one the state directory
 * names (created when absent, as every viewer does). */
static int hub_store(const live_config_t *cfg, live_hub_t *hub) {
  if (cfg->store) {
    hub->store = cfg->store;
    return 0;
  }
  char dir[4096];
  int err = tfs_store_resolve(cfg->state_dir, dir, sizeof dir);
  if (err) {
    live_log(hub, LOG_ERR, "cannot resolve the state directory (%s); pass --state-dir DIR",
             tfs_strerror(err));
    return err;
  }
  err = tfs_store_open(dir, &hub->store);
  if (err)
    live_log(hub, LOG_ERR, "cannot open the store %s (%s)", dir, tfs_strerror(err));
  return err;
}

int live_hub_open(const live_config_t *cfg, live_hub_t **out) {
  *out = NULL;
  live_hub_t *hub = calloc(1, sizeof *hub);
  if (!hub) {
    fprintf(stderr, "%s: out of memory\n", cfg->name ? cfg->name : "taskfs");
    tfs_store_close(cfg->store);
    return -ENOMEM;
  }
  snprintf(hub->name, sizeof hub->name, "%s", cfg->name ? cfg->name : "taskfs");
  hub->loop = cfg->loop;
  hub->log = cfg->log;
  hub->on_idle = cfg->on_idle;
  hub->arg = cfg->arg;
  int err = hub_store(cfg, hub);
  if (!err && (err = live_watch_open(hub)))
    live_log(hub, LOG_ERR, "out of memory");
  if (err) {
    tfs_store_close(hub->store);
    free(hub);
    return err;
  }
  *out = hub;
  return 0;
}

void live_hub_free(live_hub_t *hub) {
  if (!hub)
    return;
  live_watch_close(hub);
  tfs_store_close(hub->store);
  free(hub);
}

uv_loop_t *live_loop(live_hub_t *hub) {
  return hub->loop;
}

tfs_store_t *live_store_handle(live_hub_t *hub) {
  return hub->store;
}

/* The store may have been removed and recreated under a process that runs
 * for days: serve what the path names now. If it is gone, callers get the
 * store's errors (no such task, an empty list) until it returns. */
tfs_store_t *live_store(live_hub_t *hub) {
  int moved = tfs_store_refresh(hub->store);
  if (moved != hub->store_state) {
    int before = hub->store_state;
    hub->store_state = moved < 0 ? moved : 0;
    if (hub->on_store && (moved < 0 || moved == 1 || before < 0))
      hub->on_store(hub->store_arg, moved, before);
  }
  return hub->store;
}

int live_store_state(live_hub_t *hub) {
  return hub->store_state;
}

void live_store_notify(live_hub_t *hub, live_store_fn fn, void *arg) {
  hub->on_store = fn;
  hub->store_arg = arg;
}

void live_hold(live_hub_t *hub, int delta) {
  hub->holds += delta;
  if (!hub->holds && hub->on_idle)
    hub->on_idle(hub->arg);
}

int live_idle(const live_hub_t *hub) {
  return !hub->holds;
}
