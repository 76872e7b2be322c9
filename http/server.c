/* The HTTP server object: its configuration, its start, its end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/internal.h"

/* TASKFS_SERVE_TIMEOUT_MS and TASKFS_SERVE_HEADER_TIMEOUT_MS change the
 * request and header timeouts (tests). */
static int64_t env_ms(const char *name, int64_t dflt) {
  const char *v = getenv(name);
  long long ms = v ? atoll(v) : 0;
  return ms > 0 ? ms : dflt;
}

int http_server_start(const http_server_config_t *cfg, http_server_t **out, char *why,
                      size_t whylen) {
  *out = NULL;
  http_server_t *srv = calloc(1, sizeof *srv);
  if (!srv || !(srv->token = strdup(cfg->token))) {
    free(srv);
    snprintf(why, whylen, "out of memory");
    return -ENOMEM;
  }
  srv->token_len = strlen(srv->token);
  if (cfg->token_path && !(srv->token_path = strdup(cfg->token_path))) {
    free(srv->token);
    free(srv);
    snprintf(why, whylen, "out of memory");
    return -ENOMEM;
  }
  srv->hub = cfg->hub;
  srv->loop = live_loop(cfg->hub);
  srv->mcp = cfg->mcp;
  srv->on_stopped = cfg->on_stopped;
  srv->arg = cfg->arg;
  srv->request_timeout_ms = env_ms("TASKFS_SERVE_TIMEOUT_MS", HTTP_REQUEST_TIMEOUT_MS);
  srv->header_timeout_ms = env_ms("TASKFS_SERVE_HEADER_TIMEOUT_MS", HTTP_HEADER_TIMEOUT_MS);
  if (srv->header_timeout_ms > srv->request_timeout_ms)
    srv->header_timeout_ms = srv->request_timeout_ms;
  srv->twin_fd = cfg->twin_fd;
  int err = http_names_build(&srv->names, cfg->host, cfg->port, !cfg->no_localhost,
                             cfg->allow_hosts, cfg->n_allow_hosts);
  if (!err)
    err = http_mcp_open(srv);
  if (err) {
    snprintf(why, whylen, "out of memory");
    http_server_free(srv);
    return err;
  }
  if ((err = http_daemon_start(srv, cfg->listen_fd, why, whylen))) {
    http_server_free(srv);
    return err;
  }
  *out = srv;
  return 0;
}

int http_server_add_connection(http_server_t *srv, int fd) {
  struct sockaddr_storage sa = {.ss_family = AF_UNIX};
  if (MHD_add_connection(srv->mhd, fd, (struct sockaddr *)&sa, sizeof(sa_family_t)) != MHD_YES)
    return -EIO;
  http_kick(srv);
  return 0;
}

live_feed_t *http_feed(http_server_t *srv) {
  if (!srv->feed)
    srv->feed = live_feed_open(srv->hub);
  return srv->feed;
}

tfs_store_t *http_store(http_server_t *srv) {
  return live_store(srv->hub);
}

/* ---- the end --------------------------------------------------------------- */

static void stopped(http_server_t *srv) {
  if (srv->stopped)
    return;
  srv->stopped = 1;
  uv_timer_stop(&srv->stop_timer);
  /* MHD must not be stopped with a connection suspended. */
  for (http_req_t *r = srv->reqs; r; r = r->next)
    http_req_cut(r);
  http_kick(srv);
  if (srv->on_stopped)
    srv->on_stopped(srv->arg);
}

/* A look every 50 ms until no request is in flight and no follow is
 * being opened on the thread pool, or the grace is up. */
static void on_stop_tick(uv_timer_t *t) {
  http_server_t *srv = t->data;
  if ((!srv->nreqs && !live_feed_opening(srv->feed)) || http_now_ms() >= srv->stop_deadline_ms)
    stopped(srv);
}

void http_server_stop(http_server_t *srv, int64_t grace_ms) {
  if (srv->stopping)
    return;
  srv->stopping = 1;
  srv->stop_deadline_ms = http_now_ms() + grace_ms;
  /* No new connection: the listening socket goes now. */
  int lfd = srv->mhd ? MHD_quiesce_daemon(srv->mhd) : -1;
  if (lfd >= 0)
    close(lfd);
  http_daemon_twin_close(srv);
  http_mcp_stop(srv);
  live_feed_stop(srv->feed);
  /* Idle keep-alive connections would never end on their own. */
  for (http_conn_t *hc = srv->conns; hc; hc = hc->next)
    hc->deadline_ms = 1;
  http_kick(srv);
  uv_timer_start(&srv->stop_timer, on_stop_tick, 0, 50);
}

void http_handle_closed(http_server_t *srv) {
  if (--srv->handles)
    return;
  http_names_free(&srv->names);
  free(srv->token_path);
  free(srv->token);
  free(srv);
}

static void on_closed(uv_handle_t *h) {
  http_handle_closed(h->data);
}

void http_server_free(http_server_t *srv) {
  if (!srv)
    return;
  if (srv->mhd) {
    for (http_req_t *r = srv->reqs; r; r = r->next)
      http_req_cut(r);
    MHD_run(srv->mhd);
    MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
  }
  http_mcp_close(srv);
  live_feed_close(srv->feed);
  srv->feed = NULL;
  http_daemon_twin_close(srv);
  uv_handle_t *hs[] = {(uv_handle_t *)&srv->mhd_poll, (uv_handle_t *)&srv->mhd_timer,
                       (uv_handle_t *)&srv->kick, (uv_handle_t *)&srv->sweep,
                       (uv_handle_t *)&srv->stop_timer};
  srv->handles++; /* held while the closes are issued */
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
    if (hs[i]->data == srv && !uv_is_closing(hs[i]))
      uv_close(hs[i], on_closed);
  http_handle_closed(srv);
}
