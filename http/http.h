/* taskfs: the HTTP face (libtaskfs-http.a), `taskfs serve`.
 *
 * One process over the store: libmicrohttpd parses HTTP, driven from the
 * same libuv loop the MCP dispatcher runs on (http/daemon.c); a route table
 * (http/routes.c) maps paths to handlers, and every request passes the same
 * gates before any handler sees it (http/guard.c: the Host and Origin
 * checks, the token). The MCP face is one handler (http/mcp.c, Streamable
 * HTTP at /mcp, both revisions through the one dispatcher of mcp/, the
 * only part of http/ that knows mcp/); the JSON API, the web viewer and
 * A2A are more rows of the same table. All of them sit on a live hub
 * (live/live.h: the store, its watch, the feeds), beside the MCP server.
 *
 * Two levels: http_serve() is the whole `taskfs serve` process (the store,
 * its token, the listening socket, the readiness report, signals, the
 * end); http_server_t is the HTTP server on a loop, which the fuzzer drives
 * over a socketpair without a listening socket. */
#ifndef TASKFS_HTTP_H
#define TASKFS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "live/live.h"

#define HTTP_DEFAULT_LISTEN "127.0.0.1:7077"

/* ---- the process (serve.c) ------------------------------------------- */

typedef struct {
  const char *state_dir;          /* NULL: resolve as every verb does */
  const char *listen;             /* "HOST:PORT"; NULL: HTTP_DEFAULT_LISTEN */
  int listen_fd;                  /* a listening socket handed over (systemd), or -1 */
  const char *token_file;         /* NULL: the store's serve.token */
  const char *const *allow_hosts; /* more names the Host header may give */
  size_t n_allow_hosts;
  int ready_fd; /* background: the report ("ok\n" and what to print, or
                 * "error: ...\n") goes here, then the log takes stderr */
} http_serve_opts_t;

/* Runs `taskfs serve` until SIGTERM, SIGINT or SIGHUP. Returns an exit
 * code: 0, 100 for what the command line got wrong (an address it cannot
 * use, listening beyond loopback without --token-file), 111 for the rest. */
int http_serve(const http_serve_opts_t *opts);

/* Socket activation (sd_listen_fds): the first listening socket systemd
 * handed this process (fd 3) when LISTEN_PID names it and LISTEN_FDS >= 1,
 * else -1. Either way LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are taken
 * out of the environment, so no task the server starts inherits them. */
int http_listen_fds(void);

/* ---- the HTTP server on a loop (server.c) ---------------------------- */

typedef struct http_server http_server_t;

typedef struct {
  live_hub_t *hub;                /* the loop, the store, the feeds */
  struct mcp_server *mcp;         /* served at /mcp (on the same hub) */
  const char *token;              /* the bearer token (URL-safe text) */
  const char *token_path;         /* where it is, for the 401's words; NULL: not said */
  int listen_fd;                  /* a listening socket, or -1 (http_server_add_connection) */
  int twin_fd;                    /* a second one (the other loopback family), which the server
                                   * takes and closes; 0 or -1: none */
  const char *host;               /* the listen address as given (a name or an address) */
  int port;                       /* its port */
  int no_localhost;               /* 1: the Host header may not name localhost */
  const char *const *allow_hosts; /* more names the Host header may give */
  size_t n_allow_hosts;
  /* Called once http_server_stop() has finished every request. */
  void (*on_stopped)(void *arg);
  void *arg;
} http_server_config_t;

/* Starts serving on the hub's loop. Returns 0, or a negative error with why. */
int http_server_start(const http_server_config_t *cfg, http_server_t **out, char *why,
                      size_t whylen);
/* Serves one more connection (a connected socket, which it takes). */
int http_server_add_connection(http_server_t *srv, int fd);
/* The end: no new connection is taken, held requests and streams are
 * ended (the MCP server answers its waiting requests first: the caller
 * calls mcp_server_shutdown()), and on_stopped is called once nothing is
 * in flight, or after grace_ms with what is left cut off. */
void http_server_stop(http_server_t *srv, int64_t grace_ms);
/* Frees the server once stopped (or never started serving); the loop must
 * then run once more for the handles' close callbacks. */
void http_server_free(http_server_t *srv);
/* Connections open now (for the bench and tests). */
size_t http_server_connections(const http_server_t *srv);

#endif /* TASKFS_HTTP_H */
