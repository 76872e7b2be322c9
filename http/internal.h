/* What the modules of libtaskfs-http.a share; the CLI and the fuzzer need
 * only http.h.
 *
 * Who owns what: daemon.c libmicrohttpd on the libuv loop (its epoll fd,
 * its timeout, the kick after a resume), connections and their deadlines;
 * access.c the life of one request (the gates, the body, the route, the
 * answer); respond.c answers: now, held (the connection suspended until
 * the answer exists) or a stream (SSE), and the watch for a client that
 * leaves while we hold it; guard.c the gates (Host, Origin, the token);
 * addr.c listen addresses and the names the server answers to; routes.c
 * the route table; web.c the web viewer's files (web_assets.c compiles
 * them in); mcp.c and mcp_http.c the MCP face; api.c the JSON API; feed.c
 * what the faces stream from the store as it changes (a task's transcript
 * and state: follow.c; the tasks that come and go); server.c the server
 * object; serve.c the process. */
#ifndef TASKFS_HTTP_INTERNAL_H
#define TASKFS_HTTP_INTERNAL_H

#include <stdarg.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "http/http.h"
#include "taskfs/taskfs.h"

/* Limits (docs/serve.md, "Limits"). */
#define HTTP_BODY_MAX MCP_LINE_MAX         /* 4 MiB: larger bodies get 413 */
#define HTTP_BODY_DISCARD_MAX (64u << 20)  /* past that, a body that keeps coming is cut off */
#define HTTP_HEADERS_MAX 64                /* more header fields: 431 */
#define HTTP_POOL_SIZE (32u * 1024)        /* per connection; bounds the header block */
#define HTTP_CONNECTIONS_MAX 4000          /* open connections */
#define HTTP_UNAUTH_MAX 256                /* of them, not yet shown the token */
#define HTTP_REQUEST_TIMEOUT_MS 30000      /* a request must arrive whole within this */
#define HTTP_HEADER_TIMEOUT_MS 5000        /* ... its header, before the token was shown */
#define HTTP_STREAM_BACKLOG_MAX (8u << 20) /* unread stream bytes before the client is dropped */
#define HTTP_KEEPALIVE_MS 15000            /* a comment on a quiet stream */

typedef struct http_req http_req_t;
typedef struct http_conn http_conn_t;

/* ---- addresses (addr.c) --------------------------------------------- */

typedef struct {
  char host[256]; /* as given: a name or an address (IPv6 without brackets) */
  int port;
  struct sockaddr_storage sa; /* what it resolved to */
  socklen_t salen;
  int loopback; /* 127.0.0.0/8 or ::1 */
  int wildcard; /* 0.0.0.0 or :: */
} http_addr_t;

/* Parses HOST:PORT ([v6]:PORT) and resolves HOST (a name: its first
 * address). Returns 0, or -EINVAL / a resolver error with why. */
int http_addr_parse(const char *spec, http_addr_t *a, char *why, size_t whylen);
/* A listening TCP socket on a (port 0: the kernel picks one, written back
 * into a->port). Returns the fd, or a negative error with why. */
int http_addr_listen(http_addr_t *a, char *why, size_t whylen);
/* Fills a from a listening socket handed over (socket activation). */
int http_addr_from_fd(int fd, http_addr_t *a, char *why, size_t whylen);
/* The loopback address of the other family that `localhost` may resolve
 * to beside a, at a's port: ::1 beside 127.0.0.1 or 0.0.0.0, 127.0.0.1
 * beside ::1 or ::. Returns 0, or -1 when a has none (another loopback
 * address such as 127.0.0.2, an address of the network). */
int http_addr_twin(const http_addr_t *a, http_addr_t *twin);
/* host for a URL: "127.0.0.1", "[::1]". */
void http_addr_url_host(const char *host, char *buf, size_t len);

/* The names the server answers to (the Host header's name part, lower
 * case, IPv6 without brackets) and its port. */
typedef struct {
  char **names;
  size_t n;
  int port;
  int no_localhost; /* localhost left out on purpose (http_names_build) */
} http_names_t;
/* localhost 0: the name localhost is not one of them (another process
 * holds the loopback address of the other family at the port). */
int http_names_build(http_names_t *h, const char *host, int port, int localhost,
                     const char *const *allow, size_t nallow);
void http_names_free(http_names_t *h);
/* 1 if the Host header value names this server: one of the names, and
 * the port (absent only when it is 80). */
int http_names_host_ok(const http_names_t *h, const char *value);
/* 1 if an Origin header value is this server's own: http://HOST[:PORT]. */
int http_names_origin_ok(const http_names_t *h, const char *value);

/* ---- the server (server.c, daemon.c) --------------------------------- */

typedef struct http_mcp http_mcp_t;
typedef struct http_feed http_feed_t;

struct http_server {
  uv_loop_t *loop;
  struct MHD_Daemon *mhd;
  uv_poll_t mhd_poll;   /* MHD's epoll fd */
  uv_timer_t mhd_timer; /* MHD's own timeouts */
  uv_timer_t kick;      /* an MHD run soon: after a resume */
  uv_timer_t sweep;     /* request deadlines, stream keep-alives */
  uv_timer_t stop_timer;
  uv_poll_t twin_poll; /* the second listening socket (http_server_config_t) */
  int twin_fd;
  int handles; /* open uv handles (free waits for their close callbacks) */
  char *token;
  size_t token_len;
  char *token_path; /* named by the 401 (NULL: "the token file") */
  http_names_t names;
  mcp_server_t *mcp;
  http_mcp_t *mcpx;  /* the MCP face's state (mcp.c) */
  http_feed_t *feed; /* follows and the task feed (feed.c), made on first use */
  http_conn_t *conns;
  size_t nconns;
  http_conn_t *unauth_head, *unauth_tail; /* not yet shown the token, oldest first */
  size_t nunauth;
  http_req_t *reqs; /* requests in flight: held, streaming, or being read */
  size_t nreqs;
  int64_t request_timeout_ms;
  int64_t header_timeout_ms; /* a connection's request, until it has shown the token */
  int stopping;
  int stopped;
  int64_t stop_deadline_ms;
  void (*on_stopped)(void *arg);
  void *arg;
};

/* A connection (MHD's socket context). */
struct http_conn {
  http_conn_t *prev, *next;
  http_conn_t *uprev, *unext; /* on the server's unauth list */
  struct MHD_Connection *c;
  int fd;
  int authed;          /* a request of it has shown the token */
  int64_t deadline_ms; /* the request must be whole by then; 0: none */
};

/* Runs MHD now (what it has to do: new connections, reads, writes,
 * timeouts), then re-arms its timer. Never from inside an MHD callback:
 * those ask for http_kick(). */
void http_daemon_run(http_server_t *srv);
void http_kick(http_server_t *srv);
/* A request of hc showed the token: the connection leaves the unauth
 * budget, and its request has the whole request timeout from its start. */
void http_conn_authed(http_server_t *srv, http_conn_t *hc);
/* The deadline of hc's next request, from now. */
int64_t http_conn_deadline(const http_server_t *srv, const http_conn_t *hc);
int http_daemon_start(http_server_t *srv, int listen_fd, char *why, size_t whylen);
/* No more connections from the second listening socket; it is closed. */
void http_daemon_twin_close(http_server_t *srv);
/* One of the server's uv handles has closed; the last one frees it. */
void http_handle_closed(http_server_t *srv);
int64_t http_now_ms(void);

/* ---- a request (access.c, respond.c) --------------------------------- */

enum { HTTP_M_GET = 1, HTTP_M_POST = 2, HTTP_M_DELETE = 4, HTTP_M_HEAD = 8, HTTP_M_OTHER = 16 };

/* Called when a request the handler holds or streams ends before the
 * handler ended it: the client left, its stream backed up, the server
 * stopped. After it returns the handler must not touch req. */
typedef void (*http_gone_fn)(http_req_t *req, void *arg);

typedef struct {
  char *name, *value;
} http_header_t;

struct http_req {
  http_req_t *prev, *next;
  http_server_t *srv;
  struct MHD_Connection *c;
  http_conn_t *conn;
  const char *url, *method; /* MHD's, valid for the request's life */
  unsigned m;               /* HTTP_M_* */
  const void *route;        /* the route it matched (routes.c) */
  /* the body */
  char *body;
  size_t len, cap;
  size_t discarded; /* bytes past HTTP_BODY_MAX, thrown away */
  int handled;      /* the handler has run */
  /* the answer */
  struct MHD_Response *resp; /* made, not yet queued */
  unsigned status;
  http_header_t *hdrs; /* headers for the answer */
  size_t nhdrs;
  int queued;     /* MHD has the answer */
  int held;       /* the handler answers later */
  int suspended;  /* the connection is suspended (held, or a stream waiting for data) */
  uv_poll_t *hup; /* watches a suspended connection for the client leaving */
  int gone;       /* the client left: no answer will reach it */
  http_gone_fn on_gone;
  void *gone_arg;
  /* a stream */
  int streaming;
  int ended; /* the handler ended the stream */
  char *out;
  size_t out_len, out_off, out_cap;
  int64_t out_at;        /* when the stream last carried something */
  http_gone_fn on_drain; /* http_stream_on_drain() */
};

/* What a handler reads. */
const char *http_header(http_req_t *r, const char *name);
const char *http_query(http_req_t *r, const char *name);

/* A header for the answer (copied); before it is made. */
void http_add_header(http_req_t *r, const char *name, const char *value);
/* Answers with data (copied; a NUL-terminated text when len is -1). */
void http_respond(http_req_t *r, unsigned status, const char *ctype, const char *data, ssize_t len);
/* The same with a malloc'ed body the answer takes. */
void http_respond_take(http_req_t *r, unsigned status, const char *ctype, char *data, size_t len);
/* A short text/plain reason. */
void http_respond_text(http_req_t *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The handler answers later (http_respond*): the connection is suspended
 * meanwhile and watched for the client leaving (on_gone). */
void http_hold(http_req_t *r, http_gone_fn on_gone, void *arg);
/* Starts a stream (text/event-stream unless ctype says otherwise) of
 * unknown length: http_stream_write() adds to it, http_stream_end() ends
 * it. A stream whose client does not read is dropped past
 * HTTP_STREAM_BACKLOG_MAX unread bytes (on_gone). */
void http_stream_start(http_req_t *r, unsigned status, const char *ctype, http_gone_fn on_gone,
                       void *arg);
void http_stream_write(http_req_t *r, const char *data, size_t len);
void http_stream_end(http_req_t *r);
/* One server-sent event: "event: EVENT", "id: ID" (NULL: none), and the
 * data, one data field per line of it. */
void http_stream_event(http_req_t *r, const char *event, const char *id, const char *data,
                       size_t len);
/* Bytes written to the stream that the client has not taken yet. */
size_t http_stream_unread(const http_req_t *r);
/* fn(r, arg of http_stream_start) each time the client has taken all
 * that was written: a writer that waits for room (a follow that its
 * consumer paused) goes on then. Called from inside MHD: only note it.
 * Bytes left unread for the request timeout drop the stream (MHD's idle
 * timeout; on_gone), so a client that never reads cannot hold a waiting
 * writer forever. */
void http_stream_on_drain(http_req_t *r, http_gone_fn fn);
/* Answers with len bytes of the file fd from offset (MHD sends them and
 * closes fd; len 0: an empty body). */
void http_respond_fd(http_req_t *r, unsigned status, const char *ctype, int fd, uint64_t offset,
                     uint64_t len);

/* respond.c for access.c and daemon.c: queues what the handler made (or
 * suspends a held request); the end of a request (MHD's notice, or the
 * server's stop) tells its handler if it still held it. */
enum MHD_Result http_req_answer(http_req_t *r);
void http_req_release(http_req_t *r);
void http_req_cut(http_req_t *r);
void http_stream_keepalive(http_server_t *srv, int64_t now);
enum MHD_Result http_access(void *cls, struct MHD_Connection *c, const char *url,
                            const char *method, const char *version, const char *data, size_t *size,
                            void **ptr);
void http_completed(void *cls, struct MHD_Connection *c, void **ptr,
                    enum MHD_RequestTerminationCode why);

/* ---- gates (guard.c) ------------------------------------------------- */

/* 1 if a and b (of lengths alen, blen) are equal, in time that depends on
 * blen only (b is the secret). */
int http_secret_equal(const char *a, size_t alen, const char *b, size_t blen);
/* The gates every request passes before a route: the Host header names
 * this server (421), a present Origin is its own (403). Answers and
 * returns -1, or returns 0. */
int http_guard_reach(http_req_t *r);
/* The token, as "Authorization: Bearer TOKEN" (no cookie is one).
 * Answers 401 and returns -1, or returns 0. */
int http_guard_token(http_req_t *r);

/* ---- routes (routes.c) ------------------------------------------------ */

typedef void (*http_handler_fn)(http_req_t *r);
#define HTTP_ROUTE_PUBLIC 1u /* no token needed */
#define HTTP_ROUTE_PREFIX 2u /* path is a prefix (ends in '/') */
typedef struct {
  const char *path;
  unsigned methods; /* HTTP_M_* it answers; others 405 */
  unsigned flags;
  http_handler_fn fn;
} http_route_t;
/* The route for a path, or NULL (404). */
const http_route_t *http_route_find(const char *path);
/* The Allow header value of a route. */
void http_route_allow(const http_route_t *rt, char *buf, size_t len);

/* ---- feeds (feed.c, follow.c) ------------------------------------------ */

/* Everything runs on the server's loop (but a follow's open, on its
 * thread pool), on the MCP server's one watch of the store
 * (mcp_watch_add): no feed has a watch of its own. */

/* A follow: one task's transcript from a byte offset, as it is written. */
typedef struct http_follow http_follow_t;
typedef struct {
  /* Each complete new line (without its '\n'): n its 1-based number, end
   * the byte offset just after it (what a reader gives to go on from
   * there). partial 1: the final line of an ended task, which has no
   * '\n'; 2: a 1 MiB piece of a longer line (the next piece has the same
   * n). Returns non-zero when the consumer can take no more for now: the
   * follow then reads nothing until http_follow_resume(). */
  int (*line)(void *arg, int64_t n, off_t end, const char *text, size_t len, int partial);
  /* The record (json: tfs_record_dump of it) at the first look, then
   * whenever the task's state changes. */
  void (*state)(void *arg, const tfs_record_t *rec, const char *json);
  /* Once, last: the task has ended and every byte is handed out (rec,
   * json, err 0), or it went away or cannot be read (rec NULL or not, err
   * why). The follow is over: http_follow_stop() is no longer called. */
  void (*end)(void *arg, const tfs_record_t *rec, const char *json, int err);
} http_follow_ops_t;
/* Starts following task id at the first line that starts at or after
 * byte from (0: the start). The first callbacks come on a later turn of
 * the loop, once the follow is open: the open (which counts the lines
 * before from) runs on the loop's thread pool, and an error it meets
 * then (the task went away meanwhile) comes as end. Returns 0,
 * TFS_EBADID, TFS_ENOTASK, or another error found before the open. */
int http_follow_start(http_server_t *srv, const char *id, off_t from, const http_follow_ops_t *ops,
                      void *arg, http_follow_t **out);
/* The consumer has room again after its line callback said it had none. */
void http_follow_resume(http_follow_t *fl);
/* Where the follow stands: the byte after the last line handed out
 * (from, until the open is done). */
off_t http_follow_offset(const http_follow_t *fl);
/* No more callbacks, from this moment (also from inside one). */
void http_follow_stop(http_follow_t *fl);

/* The task feed: fn(arg, id, rec, json) for every task that appears or
 * whose state changes (the record after the change), fn(arg, id, NULL,
 * json) for a running task's progress (json: tfs_progress_dump's event,
 * at most one per TFS_PROGRESS_INTERVAL_MS per task, the last counters
 * always told, before the record of a state change at the latest),
 * fn(arg, id, NULL, NULL) for a task that went away, fn(arg, NULL, NULL, NULL) at the
 * server's stop (http_feed_stop). Set up when the call returns (what
 * happens from then on is told). */
typedef struct http_task_sub http_task_sub_t;
typedef void (*http_tasks_fn)(void *arg, const char *id, const tfs_record_t *rec, const char *json);
int http_tasks_subscribe(http_server_t *srv, http_tasks_fn fn, void *arg, http_task_sub_t **out);
/* No more calls, from this moment (also from inside one). */
void http_tasks_unsubscribe(http_server_t *srv, http_task_sub_t *s);

/* The server stops: every follow ends (end with rec NULL, err
 * -ESHUTDOWN) and every subscriber is told fn(arg, NULL, NULL, NULL),
 * the last call it gets. */
void http_feed_stop(http_server_t *srv);
/* How many follows are being opened on the thread pool: the stop waits
 * for them as for requests in flight. */
int http_feed_opening(const http_server_t *srv);
/* The server's feed state, made on first use (NULL: no memory). */
http_feed_t *http_feed_get(http_server_t *srv);
/* The end: every follow and subscription is let go of (http_server_free);
 * an open still on the thread pool frees only itself when it is done. */
void http_feed_close(http_server_t *srv);

/* ---- the JSON API (api.c) ---------------------------------------------- */

void http_api_tasks(http_req_t *r);  /* GET /api/tasks */
void http_api_task(http_req_t *r);   /* /api/tasks/<id>[/transcript|/cancel] */
void http_api_events(http_req_t *r); /* GET /api/events */

/* ---- the web viewer (web.c, web_assets.c) -------------------------- */

/* The page, its script and its style sheet, with their CSP. */
void http_web_index(http_req_t *r);
void http_web_script(http_req_t *r);
void http_web_style(http_req_t *r);

/* ---- the MCP face (mcp.c, mcp_http.c) ------------------------------- */

int http_mcp_open(http_server_t *srv);
void http_mcp_close(http_server_t *srv);
/* The end: every session's streams are ended. */
void http_mcp_stop(http_server_t *srv);
/* Sessions past their idle time are closed. */
void http_mcp_sweep(http_server_t *srv, int64_t now);
void http_mcp_handle(http_req_t *r);

#endif /* TASKFS_HTTP_INTERNAL_H */
