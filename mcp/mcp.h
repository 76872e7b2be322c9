/* taskfs: the MCP server (libtaskfs-mcp.a).
 *
 * Three layers, so that one dispatcher serves every transport (and both
 * protocol eras, 2025-11-25 and 2026-07-28, chosen per request; see
 * mcp/era.c):
 * - the server (mcp_server_t), on a live hub (live/live.h: the loop, the
 *   store, the one watch, the scans and launches on the thread pool): the
 *   requests that wait (long-polls, the short wait after a start or a
 *   cancel, tasks/result) and the subscriptions, riding on the hub's watch;
 * - sessions (mcp_session_t): one client conversation each, with its own
 *   subscriptions and its own way out (a send callback);
 * - transports, which feed a session the messages they receive
 *   (mcp_dispatch) and carry the messages it sends. stdio (mcp_serve) is
 *   one: newline-delimited JSON-RPC 2.0 on stdin/stdout, logs on stderr.
 *   The dispatcher never learns which transport it is on.
 * Everything runs on the server's one loop thread. */
#ifndef TASKFS_MCP_H
#define TASKFS_MCP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "live/live.h"
#include "taskfs/taskfs.h"

#define MCP_SERVER_NAME "taskfs"
#define MCP_SERVER_VERSION TFS_VERSION
#define MCP_LATEST_PROTOCOL "2025-11-25"
/* The key of params._meta that makes a request a 2026-07-28 one. */
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"

/* A message longer than this is refused without being buffered (stdio:
 * answered with an error and skipped up to its newline). */
#define MCP_LINE_MAX (4u << 20)

/* JSON-RPC error codes. */
#define MCP_RPC_PARSE_ERROR (-32700)
#define MCP_RPC_INVALID_REQUEST (-32600)
#define MCP_RPC_METHOD_NOT_FOUND (-32601)
#define MCP_RPC_INVALID_PARAMS (-32602)
#define MCP_RPC_INTERNAL_ERROR (-32603)
#define MCP_RPC_RESOURCE_NOT_FOUND (-32002)
/* A limit of the server (mcp_limits_t) was reached; data.limit names it. */
#define MCP_RPC_LIMIT (-32000)

/* ---- the stdio server (stdio.c) ------------------------------------- */

typedef struct {
  const char *state_dir; /* NULL: resolve as every verb does */
} mcp_opts_t;

/* Runs the server over stdin/stdout until stdin ends or SIGTERM/SIGINT.
 * Returns an exit code (0 on a clean end). */
int mcp_serve(const mcp_opts_t *opts);

/* ---- the server (server.c) ------------------------------------------- */

typedef struct mcp_server mcp_server_t;
typedef struct mcp_session mcp_session_t;

/* What one server allows, so that no client can take it over: requests in
 * flight (a long-poll, a start being launched or waiting for the client's
 * roots, a subscriptions/listen stream) and what an untilPattern may cost.
 * A zero field takes the default (in parentheses). A transport with many
 * connections (HTTP) has a session per connection, so the per-session
 * limit is per connection. docs/mcp.md, "Limits", says what each bounds. */
typedef struct {
  unsigned requests_per_session; /* in flight at once in one session (64) */
  unsigned requests_per_server;  /* in flight at once in all sessions (256) */
  size_t pattern_max;            /* bytes of an untilPattern (1024) */
  size_t pattern_memory;         /* bytes its compiled form may take (128 KiB) */
  uint32_t match_steps;          /* PCRE2 match limit, per line (100000) */
  uint32_t match_depth;          /* PCRE2 depth limit, per line (10000) */
  size_t match_heap;             /* bytes of PCRE2's backtracking heap, per line (4 MiB) */
  size_t scan_batch;             /* bytes of new lines handed to the matcher at once (64 KiB) */
} mcp_limits_t;

typedef struct {
  /* The hub the server sits on, beside the process's other faces (`taskfs
   * serve`); it stays the caller's, who frees it after the server. NULL:
   * the server makes one of its own on loop and state_dir. */
  live_hub_t *hub;
  uv_loop_t *loop;       /* the loop everything runs on (without a hub: required) */
  const char *state_dir; /* without a hub: NULL resolves as every verb does */
  const char *role;      /* recorded as the store's owner, e.g. "mcp" */
  /* Called after mcp_server_shutdown() whenever nothing is left in
   * flight (mcp_server_idle() is 1), possibly more than once: the
   * transport stops the loop once its own output is out. */
  void (*on_idle)(void *arg);
  void *arg;
  mcp_limits_t limits; /* zero fields: the defaults */
} mcp_server_config_t;

/* Opens the server on its hub (made here without one) and records this
 * instance as the store's owner. Says what went wrong on stderr and
 * returns a negative error. */
int mcp_server_open(const mcp_server_config_t *cfg, mcp_server_t **out);
/* The end: every waiting request is answered with what it has (a long-poll
 * with timedOut: true), subscriptions end, and requests that arrive later
 * are answered at once. Sessions stay open until their transport closes
 * them. */
void mcp_server_shutdown(mcp_server_t *srv);
/* 1 when no request waits and no work of the server or its hub runs on
 * the thread pool. */
int mcp_server_idle(const mcp_server_t *srv);
/* Frees the server and closes its sessions (and the hub it made); only
 * once it is idle and the loop has stopped (a launch in flight still uses
 * the store). */
void mcp_server_free(mcp_server_t *srv);
uv_loop_t *mcp_loop(mcp_server_t *srv);

/* ---- sessions and dispatch (session.c, dispatch.c) ------------------- */

/* How a session's messages leave. data (malloc'ed; the callee frees it)
 * holds len bytes of one compact JSON-RPC message and a NUL at data[len],
 * which the transport may overwrite (stdio puts its newline there). id is
 * the id of the request it answers or relates to (borrowed): the request
 * itself, a notification of its subscriptions/listen stream, or a request
 * of the server's on its behalf (roots/list), so that a transport with a
 * stream per request (HTTP) knows where it goes; JSON null for an error
 * about a message that had none, NULL for a notification of no request. */
typedef void (*mcp_send_fn)(void *arg, const json_t *id, char *data, size_t len);

mcp_session_t *mcp_session_new(mcp_server_t *srv, mcp_send_fn send, void *arg);
/* Ends a session: its waiting requests are dropped unanswered, its
 * subscriptions end and send is never called again. */
void mcp_session_close(mcp_session_t *s);

/* Handles one message of the session (borrowed): a request gets exactly
 * one reply through send, now or later; a notification or a response
 * gets none. Returns 1 if a reply will be sent, 0 if none will. */
int mcp_dispatch(mcp_session_t *s, json_t *msg);
/* The same for a message still in text: invalid JSON gets a parse error
 * (-32700, id null). */
int mcp_dispatch_text(mcp_session_t *s, const char *text, size_t len);
/* The parse of a message's text that mcp_dispatch_text does (an integer
 * beyond int64 read as the out-of-range number it is), for transports that
 * must look at a message before dispatching it (HTTP). NULL with jerr when
 * it is not JSON. */
json_t *mcp_message_load(const char *text, size_t len, json_error_t *jerr);
/* For transports that answer each request on a stream of its own (HTTP):
 * inside send, 1 when the message is the final response to its request (a
 * result or an error: that request's stream ends with it), 0 for a
 * notification or a request of the server's. */
int mcp_session_replying(const mcp_session_t *s);
/* Right after mcp_dispatch(_text) returns: the JSON-RPC error code the
 * dispatcher refused the message with before any handler ran (malformed
 * JSON or JSON-RPC, an envelope the era layer refuses, an unknown method),
 * or a missing client capability (-32021, wherever it was found); else
 * 0. HTTP gives these a status of their own (400, 404); whatever a
 * handler answers rides in-band. */
int mcp_session_refused(const mcp_session_t *s);
/* The 2026-07-28 claim of a message, the rule the dispatcher applies:
 * params._meta["io.modelcontextprotocol/protocolVersion"], returned
 * (borrowed; any JSON type: the dispatcher judges it), or NULL for a
 * legacy message. HTTP needs it before dispatching, to tell a stateless
 * request from one of a 2025-11-25 session. */
json_t *mcp_message_claim(const json_t *msg);

/* 1 if v is a revision initialize negotiates (2025-11-25 and before). */
int mcp_legacy_version_known(const char *v);

/* Sends an error with id null, for faults of the transport's own framing
 * (a message too large). */
void mcp_session_error(mcp_session_t *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- framing and text (text.c) --------------------------------------- */

/* Splits a byte stream into lines with a bounded buffer. A line longer than
 * limit is not buffered: the callback gets it once, at its newline, with
 * line = NULL and oversize = its length. */
typedef void (*mcp_line_fn)(void *arg, const char *line, size_t len, size_t oversize);
typedef struct {
  char *buf;
  size_t len, cap, limit;
  int skipping;   /* inside an oversize line */
  size_t skipped; /* its bytes so far */
} mcp_lines_t;

void mcp_lines_init(mcp_lines_t *l, size_t limit);
void mcp_lines_free(mcp_lines_t *l);
/* Feeds bytes; calls fn once per complete line (without '\n'; a trailing
 * '\r' is dropped). Returns 0 or -ENOMEM. */
int mcp_lines_feed(mcp_lines_t *l, const char *data, size_t n, mcp_line_fn fn, void *arg);
/* End of input: delivers a final line that had no newline. */
void mcp_lines_finish(mcp_lines_t *l, mcp_line_fn fn, void *arg);

/* Returns a malloc'ed, NUL-terminated copy of s[0..len) that is valid UTF-8
 * (invalid bytes and NULs become U+FFFD) and at most max bytes of the
 * original text; a longer text is cut at a character boundary and ends in
 * "… [cut N bytes]". max = 0 means no limit. */
char *mcp_text_clean(const char *s, size_t len, size_t max);
/* The same for a prefix s[0..len) of a text of total bytes (a line read in
 * pieces): the cut marker counts what was never read as well. */
char *mcp_text_clean_prefix(const char *s, size_t len, size_t total, size_t max);

#endif /* TASKFS_MCP_H */
