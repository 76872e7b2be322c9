/* taskfs: the MCP server over stdio (libtaskfs-mcp.a).
 *
 * The protocol is newline-delimited JSON-RPC 2.0 on stdin/stdout; logs go to
 * stderr only. One libuv loop serves everything: requests are answered
 * synchronously when they can be, and the ones that wait (long-polls, the
 * short wait after a start or a cancel, tasks/result) are parked as
 * "pending" requests, each a timer plus a watch on its task directory, so
 * the loop keeps serving other requests meanwhile. */
#ifndef TASKFS_MCP_H
#define TASKFS_MCP_H

#include <stddef.h>
#include <stdint.h>
#include <regex.h>

#include <jansson.h>
#include <uv.h>

#include "taskfs/taskfs.h"

#define MCP_SERVER_NAME "taskfs"
#define MCP_SERVER_VERSION "0.1.0"
#define MCP_LATEST_PROTOCOL "2025-11-25"

/* A message (one line) longer than this is answered with an error and
 * skipped up to its newline without being buffered. */
#define MCP_LINE_MAX (4u << 20)
/* Long-polls are capped below the 60 s that common clients time out at. */
#define MCP_WAIT_CAP_MS 50000
/* Fallback tick while a request waits: catches what inotify cannot see
 * (a supervisor that died without writing anything). */
#define MCP_FALLBACK_TICK_MS 1000
/* notifications/resources/updated: at most one per this interval per
 * resource. */
#define MCP_NOTIFY_INTERVAL_MS 500
/* Input is paused while more than HIGH bytes of output wait for the host
 * to read them, and resumed below LOW. */
#define MCP_OUTPUT_HIGH (8u << 20)
#define MCP_OUTPUT_LOW (1u << 20)
/* At the end, output still unwritten after this long is given up. */
#define MCP_FLUSH_TIMEOUT_MS 5000
/* The transcript resource returns at most this many bytes (the tail). */
#define MCP_TRANSCRIPT_RESOURCE_MAX (64 * 1024)

typedef struct {
  const char *state_dir; /* NULL: resolve as every verb does */
} mcp_opts_t;

/* Runs the server until stdin ends or SIGTERM/SIGINT. Returns an exit code
 * (0 on a clean end). */
int mcp_serve(const mcp_opts_t *opts);

/* ---- framing (text.c) ------------------------------------------------ */

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

/* ---- the server (server.c) ------------------------------------------- */

typedef struct mcp_server mcp_server_t;
typedef struct mcp_pending mcp_pending_t;
typedef struct mcp_listener mcp_listener_t;

/* JSON-RPC error codes. */
#define RPC_PARSE_ERROR (-32700)
#define RPC_INVALID_REQUEST (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS (-32602)
#define RPC_INTERNAL_ERROR (-32603)
#define RPC_RESOURCE_NOT_FOUND (-32002)

/* Sends one message (steals msg). */
void mcp_send(mcp_server_t *srv, json_t *msg);
/* Sends one message already serialised as one line: data (malloc'd, stolen)
 * holds len bytes of compact JSON ending in '\n'. For answers built as text
 * so a large result is not serialised twice. */
void mcp_send_raw(mcp_server_t *srv, char *data, size_t len);
/* Sends a result / an error for request id (id is borrowed; result stolen). */
void mcp_reply(mcp_server_t *srv, json_t *id, json_t *result);
void mcp_reply_error(mcp_server_t *srv, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

tfs_store_t *mcp_store(mcp_server_t *srv);
const char *mcp_who(mcp_server_t *srv);
int mcp_closing(mcp_server_t *srv);
uv_loop_t *mcp_loop(mcp_server_t *srv);
/* Counts work in flight (a launch on the threadpool) that the exit waits
 * for, so that no task is left queued by a server that exits mid-launch. */
void mcp_hold(mcp_server_t *srv, int delta);

/* Watches <store>/tasks/<id>/ (inotify through uv_fs_event). fn gets the
 * name of the file that changed; it must not add or remove listeners. */
typedef void (*mcp_watch_fn)(void *arg, const char *filename);
mcp_listener_t *mcp_watch_add(mcp_server_t *srv, const char *id, mcp_watch_fn fn, void *arg);
void mcp_watch_remove(mcp_server_t *srv, mcp_listener_t *l);
/* 1 if the listener's inotify watch is in place (it can fail, e.g. when the
 * user's inotify instances run out); else the caller must look itself. */
int mcp_listener_live(const mcp_listener_t *l);

/* A request that waits. check() is called on every change of the task
 * directory (debounced), on the fallback tick and at the deadline
 * (timed_out = 1); it returns 1 once it has replied (the pending is then
 * freed, with its free_fn), 0 to keep waiting. At shutdown check() is called
 * with timed_out = 1 so that every waiter answers with what it has. */
typedef int (*mcp_check_fn)(mcp_pending_t *p, int timed_out);
struct mcp_pending {
  mcp_pending_t *next;
  mcp_server_t *srv;
  json_t *id; /* the request id (owned) */
  char task_id[TFS_ID_MAX + 1];
  int64_t started_ms;
  int64_t deadline_ms; /* 0: no deadline */
  mcp_check_fn check;
  void (*free_fn)(mcp_pending_t *p);
  void *data; /* owned by the kind (freed by free_fn) */
  /* internal */
  uv_timer_t timer;
  mcp_listener_t *listener;
  int soon;
  int done;
};

/* Parks a request: allocates a pending for id (copied) that waits on task
 * id. The caller fills check/free_fn/data and calls mcp_pending_start(). */
mcp_pending_t *mcp_pending_new(mcp_server_t *srv, json_t *id, const char *task_id, int64_t wait_ms);
/* Runs check once at once, and parks the request if it did not reply. */
void mcp_pending_start(mcp_pending_t *p);

/* ---- tools, tasks and resources (tools.c, resources.c) --------------- */

json_t *mcp_tools_list(void);
void mcp_tools_call(mcp_server_t *srv, json_t *id, json_t *params);
void mcp_tasks_get(mcp_server_t *srv, json_t *id, json_t *params);
void mcp_tasks_result(mcp_server_t *srv, json_t *id, json_t *params);
void mcp_tasks_list(mcp_server_t *srv, json_t *id, json_t *params);
void mcp_tasks_cancel(mcp_server_t *srv, json_t *id, json_t *params);

void mcp_resources_list(mcp_server_t *srv, json_t *id, json_t *params);
void mcp_resources_templates(mcp_server_t *srv, json_t *id, json_t *params);
void mcp_resources_read(mcp_server_t *srv, json_t *id, json_t *params);
void mcp_resources_subscribe(mcp_server_t *srv, json_t *id, json_t *params, int on);
void mcp_resources_shutdown(mcp_server_t *srv);

/* Drops a pending request (notifications/cancelled): no reply is sent. */
void mcp_pending_drop_by_id(mcp_server_t *srv, json_t *id);

/* Pagination helper shared by the lists: the ids of the page that starts
 * after cursor (newest first). Returns 0 and fills ids (malloc'ed array of
 * pointers into all, which the caller frees with tfs_ids_free), or an error
 * message in err. */
typedef struct {
  char **all;
  size_t nall;
  size_t start; /* index into all where the page starts (counting down) */
} mcp_idpage_t;
int mcp_idpage_open(mcp_server_t *srv, const char *cursor, mcp_idpage_t *pg, char *err,
                    size_t errlen);
void mcp_idpage_close(mcp_idpage_t *pg);

/* Helpers shared by tools.c and resources.c. */
json_t *mcp_record_compact(const tfs_record_t *rec);
/* Resolves taskId / taskKey arguments into an id; on failure fills msg with
 * what was wrong and what to do, and returns a negative error. */
int mcp_resolve_args(mcp_server_t *srv, json_t *args, char id[TFS_ID_MAX + 1], char *msg,
                     size_t msglen);

#endif /* TASKFS_MCP_H */
