/* The server object: the store it serves, the loop it is given, and the
 * end (shutdown, idle, free). It knows no transport: sessions (session.c)
 * carry its messages out, and whoever runs the loop stops it when told the
 * server is idle. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/internal.h"

tfs_store_t *mcp_store(mcp_server_t *srv) {
  return srv->store;
}
tfs_store_t *mcp_server_store(mcp_server_t *srv) {
  mcp_server_refresh(srv);
  return srv->store;
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

/* Another live instance on the same store is fine (every answer comes
 * from the store), but worth a line on stderr. */
static void note_other_instance(mcp_server_t *srv, const char *dir, const tfs_owner_t *prev) {
  tfs_list_opts_t o = {.states = TFS_STATE_BIT(TFS_RUNNING)};
  tfs_list_stats_t st;
  size_t running = tfs_task_list_opts(srv->store, &o, NULL, NULL, &st) ? 0 : st.shown;
  char when[TFS_TIME_BUF];
  fprintf(stderr,
          "taskfs mcp: another live instance (%s pid %d, since %s) also serves %s; %zu "
          "task(s) running; this instance lists, reads and cancels every task too\n",
          prev->role[0] ? prev->role : "?", (int)prev->pid, tfs_time_format(prev->started_ms, when),
          dir, running);
}

int mcp_server_open(const mcp_server_config_t *cfg, mcp_server_t **out) {
  *out = NULL;
  char dir[4096];
  int err = tfs_store_resolve(cfg->state_dir, dir, sizeof dir);
  if (err) {
    fprintf(stderr, "taskfs mcp: cannot resolve the state directory (%s); pass --state-dir DIR\n",
            tfs_strerror(err));
    return err;
  }
  mcp_server_t *srv = calloc(1, sizeof *srv);
  if (!srv) {
    fprintf(stderr, "taskfs mcp: out of memory\n");
    return -ENOMEM;
  }
  err = tfs_store_open(dir, &srv->store);
  if (err) {
    fprintf(stderr, "taskfs mcp: cannot open the store %s (%s)\n", dir, tfs_strerror(err));
    free(srv);
    return err;
  }
  srv->loop = cfg->loop;
  mcp_limits_resolve(&cfg->limits, &srv->lim);
  srv->on_idle = cfg->on_idle;
  srv->idle_arg = cfg->arg;
  srv->tools = mcp_schema_tools();
  srv->tools_modern = mcp_schema_modern(srv->tools);
  if (mcp_watch_open(srv)) {
    fprintf(stderr, "taskfs mcp: out of memory\n");
    tfs_store_close(srv->store);
    json_decref(srv->tools);
    json_decref(srv->tools_modern);
    free(srv);
    return -ENOMEM;
  }
  const char *role = cfg->role ? cfg->role : "mcp";
  snprintf(srv->who, sizeof srv->who, "%s pid %d", role, (int)getpid());

  tfs_owner_t prev;
  memset(&prev, 0, sizeof prev);
  err = tfs_store_acquire(srv->store, role, &prev);
  if (err)
    fprintf(stderr, "taskfs mcp: could not record this instance in %s (%s); serving anyway\n", dir,
            tfs_strerror(err));
  else if (prev.alive)
    note_other_instance(srv, dir, &prev);
  *out = srv;
  return 0;
}

void mcp_server_refresh(mcp_server_t *srv) {
  /* The store may have been removed and recreated under a server that runs
   * for days: serve what the path names now. If it is gone, requests get
   * the store's errors (no such task, an empty list) until it returns. */
  int moved = tfs_store_refresh(srv->store);
  if (moved == srv->store_state)
    return;
  if (moved < 0)
    mcp_log_all(srv, MCP_LOG_WARNING, "the store %s is unavailable (%s); waiting for it to return",
                tfs_store_path(srv->store), tfs_strerror(moved));
  else if (moved == 1 || srv->store_state < 0)
    mcp_log_all(srv, MCP_LOG_INFO, "serving the store %s again", tfs_store_path(srv->store));
  srv->store_state = moved < 0 ? moved : 0;
}

int mcp_server_idle(const mcp_server_t *srv) {
  return !srv->pending && !srv->holds;
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
  mcp_server_check_idle(srv);
}

void mcp_server_free(mcp_server_t *srv) {
  if (!srv)
    return;
  while (srv->sessions)
    mcp_session_close(srv->sessions);
  mcp_watch_close(srv);
  tfs_store_close(srv->store);
  json_decref(srv->tools);
  json_decref(srv->tools_modern);
  free(srv);
}
