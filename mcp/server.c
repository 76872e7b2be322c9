/* The server object: the hub it sits on (the loop, the store, the watch:
 * live/live.h), and the end (shutdown, idle, free). It knows no transport:
 * sessions (session.c) carry its messages out, and whoever runs the loop
 * stops it when told the server is idle. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/internal.h"

tfs_store_t *mcp_store(mcp_server_t *srv) {
  return live_store_handle(srv->hub);
}
const char *mcp_who(mcp_server_t *srv) {
  return srv->who;
}
int mcp_closing(mcp_server_t *srv) {
  return srv->closing;
}
uv_loop_t *mcp_loop(mcp_server_t *srv) {
  return srv->loop;
}
live_feed_t *mcp_feed(mcp_server_t *srv) {
  if (!srv->feed && !srv->closing)
    srv->feed = live_feed_open(srv->hub);
  return srv->closing ? NULL : srv->feed;
}

/* Another live instance on the same store is fine (every answer comes
 * from the store), but worth a line on stderr. */
static void note_other_instance(mcp_server_t *srv, const char *dir, const tfs_owner_t *prev) {
  tfs_list_opts_t o = {.states = TFS_STATE_BIT(TFS_RUNNING)};
  tfs_list_stats_t st;
  size_t running = tfs_task_list_opts(mcp_store(srv), &o, NULL, NULL, &st) ? 0 : st.shown;
  char when[TFS_TIME_BUF];
  fprintf(stderr,
          "taskfs mcp: another live instance (%s pid %d, since %s) also serves %s; %zu "
          "task(s) running; this instance lists, reads and cancels every task too\n",
          prev->role[0] ? prev->role : "?", (int)prev->pid, tfs_time_format(prev->started_ms, when),
          dir, running);
}

/* The store's state changed under the server (live_store): every session
 * hears of it. */
static void on_store(void *arg, int state, int before) {
  mcp_server_t *srv = arg;
  const char *path = tfs_store_path(mcp_store(srv));
  if (state < 0)
    mcp_log_all(srv, MCP_LOG_WARNING, "the store %s is unavailable (%s); waiting for it to return",
                path, tfs_strerror(state));
  else
    mcp_log_all(srv, MCP_LOG_INFO, "serving the store %s again", path);
}

/* A hub the server made for itself tells it when its work on the pool is
 * done, so that the server's end can go on. */
static void on_hub_idle(void *arg) {
  mcp_server_check_idle(arg);
}

int mcp_server_open(const mcp_server_config_t *cfg, mcp_server_t **out) {
  *out = NULL;
  mcp_server_t *srv = calloc(1, sizeof *srv);
  if (!srv) {
    fprintf(stderr, "taskfs mcp: out of memory\n");
    return -ENOMEM;
  }
  srv->hub = cfg->hub;
  if (!srv->hub) {
    live_config_t lc = {.loop = cfg->loop,
                        .state_dir = cfg->state_dir,
                        .name = "taskfs mcp",
                        .on_idle = on_hub_idle,
                        .arg = srv};
    int err = live_hub_open(&lc, &srv->hub);
    if (err) {
      free(srv);
      return err;
    }
    srv->own_hub = 1;
  }
  srv->loop = live_loop(srv->hub);
  mcp_limits_resolve(&cfg->limits, &srv->lim);
  srv->on_idle = cfg->on_idle;
  srv->idle_arg = cfg->arg;
  srv->tools = mcp_schema_tools();
  srv->tools_modern = mcp_schema_modern(srv->tools);
  live_store_notify(srv->hub, on_store, srv);
  const char *role = cfg->role ? cfg->role : "mcp";
  snprintf(srv->who, sizeof srv->who, "%s pid %d", role, (int)getpid());

  tfs_owner_t prev;
  memset(&prev, 0, sizeof prev);
  const char *dir = tfs_store_path(mcp_store(srv));
  int err = tfs_store_acquire(mcp_store(srv), role, &prev);
  if (err)
    fprintf(stderr, "taskfs mcp: could not record this instance in %s (%s); serving anyway\n", dir,
            tfs_strerror(err));
  else if (prev.alive)
    note_other_instance(srv, dir, &prev);
  *out = srv;
  return 0;
}

void mcp_server_refresh(mcp_server_t *srv) {
  live_store(srv->hub);
}

int mcp_server_idle(const mcp_server_t *srv) {
  return !srv->pending && !srv->holds && live_idle(srv->hub);
}

void mcp_server_check_idle(mcp_server_t *srv) {
  if (srv->closing && mcp_server_idle(srv) && srv->on_idle)
    srv->on_idle(srv->idle_arg);
}

void mcp_hold(mcp_server_t *srv, int delta) {
  srv->holds += delta;
  mcp_server_check_idle(srv);
}

void mcp_server_shutdown(mcp_server_t *srv) {
  if (srv->closing)
    return;
  srv->closing = 1;
  mcp_client_flush(srv);
  mcp_pending_flush(srv);
  mcp_listen_flush(srv);
  for (mcp_session_t *s = srv->sessions; s; s = s->next)
    mcp_resources_drop(s);
  /* Every subscription is gone: the feed's handles close with the
   * server's end, so that the loop can end too. */
  live_feed_close(srv->feed);
  srv->feed = NULL;
  mcp_server_check_idle(srv);
}

void mcp_server_free(mcp_server_t *srv) {
  if (!srv)
    return;
  while (srv->sessions)
    mcp_session_close(srv->sessions);
  live_feed_close(srv->feed); /* NULL after a shutdown */
  srv->feed = NULL;
  live_store_notify(srv->hub, NULL, NULL);
  if (srv->own_hub)
    live_hub_free(srv->hub);
  json_decref(srv->tools);
  json_decref(srv->tools_modern);
  free(srv);
}
