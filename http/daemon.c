/* libmicrohttpd on the libuv loop, and the connections it serves.
 *
 * MHD runs in its "external polling" mode with epoll and no thread of its
 * own: its epoll fd sits under a uv_poll, its next timeout under a
 * uv_timer, and every MHD callback (so every handler, so the MCP
 * dispatcher) runs on the loop's one thread. MHD wants MHD_run() after a
 * suspended connection is resumed; a resume can happen inside an MHD
 * callback, where MHD_run() must not be called, so it asks for a run on
 * the next loop turn (http_kick).
 *
 * Connections: MHD times out a connection that sends nothing for the
 * request timeout (its own idle timer, off while a connection is
 * suspended: a request we hold on purpose is never idle). A client that
 * trickles a byte now and then defeats an idle timer, so each request
 * must also arrive whole within the request timeout of the moment the
 * connection started waiting for it; the sweep shuts down a connection
 * past that deadline, which MHD then closes. A suspended connection (held
 * or streaming) has no deadline.
 *
 * Connections that have not shown the token yet (issue 26.2): anyone who
 * can reach the port can open them, so they must not be able to take the
 * room of the owner's. They have a budget of their own (HTTP_UNAUTH_MAX,
 * far below MHD's HTTP_CONNECTIONS_MAX): a new connection past it drops
 * the oldest of them, never one that has shown the token; and the deadline
 * for their request is short (HTTP_HEADER_TIMEOUT_MS), where a connection
 * that has shown the token gets the whole request timeout. So thousands of
 * idle sockets of another user cost the owner nothing: the owner's new
 * connection is accepted at once (MHD never reaches its own limit for
 * them) and shows its token in its first request.
 *
 * A second listening socket (the loopback address of the other family,
 * serve.c: issue 26.6) is not MHD's, which takes one: the loop accepts on
 * it and hands each connection to MHD (MHD_add_connection), where it is
 * served like any other. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/internal.h"

int64_t http_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_mhd_timer(uv_timer_t *t) {
  http_daemon_run(t->data);
}

void http_daemon_run(http_server_t *srv) {
  if (!srv->mhd)
    return;
  MHD_run(srv->mhd);
  MHD_UNSIGNED_LONG_LONG ms;
  if (MHD_get_timeout(srv->mhd, &ms) == MHD_YES)
    uv_timer_start(&srv->mhd_timer, on_mhd_timer, ms > 3600000 ? 3600000 : (uint64_t)ms, 0);
  else
    uv_timer_stop(&srv->mhd_timer);
}

void http_kick(http_server_t *srv) {
  if (!uv_is_active((uv_handle_t *)&srv->kick))
    uv_timer_start(&srv->kick, on_mhd_timer, 0, 0);
}

static void on_mhd_poll(uv_poll_t *p, int status, int events) {
  http_daemon_run(p->data);
}

/* ---- connections ---------------------------------------------------------- */

static int on_unauth(const http_server_t *srv, const http_conn_t *hc) {
  return hc->uprev || srv->unauth_head == hc;
}

static void unauth_remove(http_server_t *srv, http_conn_t *hc) {
  if (!on_unauth(srv, hc))
    return;
  if (hc->uprev)
    hc->uprev->unext = hc->unext;
  else
    srv->unauth_head = hc->unext;
  if (hc->unext)
    hc->unext->uprev = hc->uprev;
  else
    srv->unauth_tail = hc->uprev;
  hc->uprev = hc->unext = NULL;
  srv->nunauth--;
}

/* A new connection joins the unauth budget at its end; past the budget,
 * the oldest one there is shut down (MHD then closes it). */
static void unauth_add(http_server_t *srv, http_conn_t *hc) {
  hc->uprev = srv->unauth_tail;
  if (srv->unauth_tail)
    srv->unauth_tail->unext = hc;
  else
    srv->unauth_head = hc;
  srv->unauth_tail = hc;
  srv->nunauth++;
  while (srv->nunauth > HTTP_UNAUTH_MAX) {
    http_conn_t *old = srv->unauth_head;
    unauth_remove(srv, old);
    if (old->fd >= 0)
      shutdown(old->fd, SHUT_RDWR);
    old->deadline_ms = 0;
  }
}

void http_conn_authed(http_server_t *srv, http_conn_t *hc) {
  hc->authed = 1;
  unauth_remove(srv, hc);
  if (hc->deadline_ms)
    hc->deadline_ms = http_now_ms() + srv->request_timeout_ms;
}

int64_t http_conn_deadline(const http_server_t *srv, const http_conn_t *hc) {
  return http_now_ms() + (hc->authed ? srv->request_timeout_ms : srv->header_timeout_ms);
}

static void conn_started(http_server_t *srv, struct MHD_Connection *c, void **ctx) {
  http_conn_t *hc = calloc(1, sizeof *hc);
  if (!hc)
    return; /* served without a deadline: only the idle timer guards it */
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  hc->c = c;
  hc->fd = ci ? ci->connect_fd : -1;
  hc->deadline_ms = http_conn_deadline(srv, hc);
  hc->next = srv->conns;
  if (srv->conns)
    srv->conns->prev = hc;
  srv->conns = hc;
  srv->nconns++;
  unauth_add(srv, hc);
  *ctx = hc;
}

static void conn_closed(http_server_t *srv, http_conn_t *hc) {
  unauth_remove(srv, hc);
  if (hc->prev)
    hc->prev->next = hc->next;
  else
    srv->conns = hc->next;
  if (hc->next)
    hc->next->prev = hc->prev;
  srv->nconns--;
  free(hc);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
                          enum MHD_ConnectionNotificationCode code) {
  if (code == MHD_CONNECTION_NOTIFY_STARTED)
    conn_started(cls, c, ctx);
  else if (*ctx)
    conn_closed(cls, *ctx);
}

size_t http_server_connections(const http_server_t *srv) {
  return srv->nconns;
}

/* Connections past their deadline are shut down (MHD then closes them);
 * quiet streams get a keep-alive; MCP sessions past their idle time go. */
static void on_sweep(uv_timer_t *t) {
  http_server_t *srv = t->data;
  int64_t now = http_now_ms();
  for (http_conn_t *hc = srv->conns; hc; hc = hc->next)
    if (hc->deadline_ms && now >= hc->deadline_ms && hc->fd >= 0) {
      shutdown(hc->fd, SHUT_RDWR);
      hc->deadline_ms = 0;
    }
  http_stream_keepalive(srv, now);
  http_mcp_sweep(srv, now);
  http_kick(srv);
}

/* MHD's own messages (a malformed request it answered itself, a socket
 * error) go to stderr with our prefix. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  msg[strcspn(msg, "\n")] = '\0';
  /* A stream whose client left ends with an "application error": that is
   * ours, and no news. */
  if (!strncmp(msg, "Closing connection (application error", 37))
    return;
  fprintf(stderr, "taskfs serve: http: %s\n", msg);
}

static void handle_init(http_server_t *srv, uv_handle_t *h) {
  h->data = srv;
  srv->handles++;
}

/* Connections on the second listening socket, a few at a time so that
 * the loop turns. */
static void on_twin(uv_poll_t *p, int status, int events) {
  http_server_t *srv = p->data;
  for (int i = 0; i < 64 && srv->mhd && !srv->stopping; i++) {
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    int fd = accept4(srv->twin_fd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      break; /* EAGAIN; or EMFILE and the like: the client waits in the backlog */
    MHD_add_connection(srv->mhd, fd, (struct sockaddr *)&sa, len); /* closes fd on failure */
  }
  http_kick(srv);
}

static void on_twin_closed(uv_handle_t *h) {
  http_server_t *srv = h->data;
  close(srv->twin_fd);
  srv->twin_fd = -1;
  http_handle_closed(srv);
}

void http_daemon_twin_close(http_server_t *srv) {
  if (srv->twin_poll.data == srv) {
    if (!uv_is_closing((uv_handle_t *)&srv->twin_poll))
      uv_close((uv_handle_t *)&srv->twin_poll, on_twin_closed);
  } else if (srv->twin_fd > 0) {
    close(srv->twin_fd);
    srv->twin_fd = -1;
  }
}

int http_daemon_start(http_server_t *srv, int listen_fd, char *why, size_t whylen) {
  unsigned timeout_s = (unsigned)((srv->request_timeout_ms + 999) / 1000);
  unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  /* Without a listening socket (the fuzzer adds connections itself) MHD
   * must not be given MHD_OPTION_LISTEN_SOCKET at all: it refuses the pair.
   * MHD_OPTION_ARRAY lets the one call take the option or leave it out. */
  struct MHD_OptionItem listen_opt[] = {
      {listen_fd < 0 ? MHD_OPTION_END : MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL},
      {MHD_OPTION_END, 0, NULL}};
  if (listen_fd < 0)
    flags |= MHD_USE_NO_LISTEN_SOCKET;
  srv->mhd = MHD_start_daemon(
      flags, 0, NULL, NULL, http_access, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
      MHD_OPTION_ARRAY, listen_opt, MHD_OPTION_NOTIFY_COMPLETED, http_completed, srv,
      MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_POOL_SIZE, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)HTTP_CONNECTIONS_MAX, MHD_OPTION_STRICT_FOR_CLIENT, 1,
      MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1, MHD_OPTION_END);
  if (!srv->mhd) {
    snprintf(why, whylen, "cannot start the HTTP server (libmicrohttpd): %s",
             errno ? strerror(errno) : "unknown error");
    return errno ? -errno : -EIO;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
  int err = di ? uv_poll_init(srv->loop, &srv->mhd_poll, di->epoll_fd) : UV_EINVAL;
  if (err) {
    snprintf(why, whylen, "cannot watch the HTTP server's epoll fd: %s", uv_strerror(err));
    MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
    return err;
  }
  handle_init(srv, (uv_handle_t *)&srv->mhd_poll);
  uv_poll_start(&srv->mhd_poll, UV_READABLE, on_mhd_poll);
  uv_timer_init(srv->loop, &srv->mhd_timer);
  handle_init(srv, (uv_handle_t *)&srv->mhd_timer);
  uv_timer_init(srv->loop, &srv->kick);
  handle_init(srv, (uv_handle_t *)&srv->kick);
  uv_timer_init(srv->loop, &srv->sweep);
  handle_init(srv, (uv_handle_t *)&srv->sweep);
  uv_timer_init(srv->loop, &srv->stop_timer);
  handle_init(srv, (uv_handle_t *)&srv->stop_timer);
  uv_timer_start(&srv->sweep, on_sweep, 1000, 1000);
  if (srv->twin_fd > 0 && !uv_poll_init(srv->loop, &srv->twin_poll, srv->twin_fd)) {
    handle_init(srv, (uv_handle_t *)&srv->twin_poll);
    uv_poll_start(&srv->twin_poll, UV_READABLE, on_twin);
  }
  http_daemon_run(srv);
  return 0;
}
