/* What the modules of libtaskfs-mcp.a share; transports need only mcp.h.
 *
 * Who owns what: server.c the server object; session.c sessions and every
 * outgoing JSON-RPC message; dispatch.c method routing and the lifecycle;
 * watch.c the server's watch of tasks; pending.c requests that wait;
 * schema.c the tool descriptions; reply.c tools/call results; tools.c
 * tools/call routing and argument helpers; output.c a task's output as an
 * answer; tool_read.c, tool_start.c, tool_list.c (and the pager),
 * tool_cancel.c one tool each; tasks.c the MCP Tasks utility; resources.c
 * resources and subscriptions; stdio.c the stdio transport. */
#ifndef TASKFS_MCP_INTERNAL_H
#define TASKFS_MCP_INTERNAL_H

#include <regex.h>

#include "mcp/mcp.h"
#include "taskfs/taskfs.h"

/* Long-polls are capped below the 60 s that common clients time out at. */
#define MCP_WAIT_CAP_MS 50000
/* notifications/resources/updated: at most one per this interval per
 * resource. */
#define MCP_NOTIFY_INTERVAL_MS 500

typedef struct mcp_pending mcp_pending_t;
typedef struct mcp_listener mcp_listener_t;
typedef struct mcp_watch mcp_watch_t;
typedef struct mcp_sub mcp_sub_t;

struct mcp_server {
  uv_loop_t *loop;
  tfs_store_t *store;
  char who[64];               /* "<role> pid N", recorded as the canceller */
  json_t *tools;              /* the tool list (schema.c); NULL if it failed to parse */
  mcp_session_t *sessions;    /* open sessions (session.c) */
  mcp_pending_t *pending;     /* requests that wait (pending.c) */
  mcp_watch_t *watch;         /* the tasks they wait on (watch.c) */
  int holds;                  /* launches in flight that the end waits for */
  int closing;                /* mcp_server_shutdown() was called */
  int store_state;            /* 0 when the store was there at the last request, else its error */
  void (*on_idle)(void *arg); /* see mcp_server_config_t */
  void *idle_arg;
};

struct mcp_session {
  mcp_session_t *next;
  mcp_server_t *srv;
  mcp_send_fn send;
  void *arg;
  int refs;   /* the open session, and each request kept past its handler */
  int closed; /* mcp_session_close() was called: nothing is sent any more */
  int initialized;
  mcp_sub_t *subs; /* resource subscriptions (resources.c) */
};

/* Where the reply to one request goes. The dispatcher hands each handler
 * one that lives as long as the handler runs (id borrowed); whatever
 * answers later keeps its own copy with mcp_req_keep(). */
typedef struct {
  mcp_server_t *srv; /* sess->srv */
  mcp_session_t *sess;
  json_t *id;
} mcp_req_t;

/* ---- server.c --------------------------------------------------------- */

tfs_store_t *mcp_store(mcp_server_t *srv);
const char *mcp_who(mcp_server_t *srv);
int mcp_closing(mcp_server_t *srv);
/* Counts work in flight (a launch on the threadpool) that the end waits
 * for, so that no task is left queued by a server that exits mid-launch. */
void mcp_hold(mcp_server_t *srv, int delta);
/* Tells the transport, once the server is shutting down and idle. */
void mcp_server_check_idle(mcp_server_t *srv);
/* Follows a store that was removed and recreated under a long-running
 * server; called before each request. */
void mcp_server_refresh(mcp_server_t *srv);

/* ---- session.c -------------------------------------------------------- */

void mcp_session_ref(mcp_session_t *s);
void mcp_session_unref(mcp_session_t *s);
void mcp_req_keep(mcp_req_t *dst, const mcp_req_t *src);
void mcp_req_release(mcp_req_t *r);

/* Sends one message (msg stolen) answering id (see mcp_send_fn). */
void mcp_send(mcp_session_t *s, const json_t *id, json_t *msg);
/* The same for a message already serialised: data (malloc'ed, stolen)
 * holds len bytes of compact JSON and a NUL. For answers built as text so
 * that a large result is not serialised twice. */
void mcp_send_raw(mcp_session_t *s, const json_t *id, char *data, size_t len);
/* A result / an error for the request (result stolen). */
void mcp_reply(const mcp_req_t *r, json_t *result);
void mcp_reply_error(const mcp_req_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A notification to the session (params stolen). */
void mcp_notify(mcp_session_t *s, const char *method, json_t *params);

/* ---- watch.c: the server's watch of tasks ----------------------------- */

/* A listener is told what changed (TFS_WATCH_* bits; TFS_WATCH_GONE
 * always), or MCP_WATCH_TICK on the tick, which comes every
 * tfs_watch_tick_ms() for what inotify cannot see. Either way it is only
 * "look again". It may add and remove listeners (a removal takes effect
 * once the round of calls is over: a removed listener is not called). */
#define MCP_WATCH_TICK 0x100u
typedef void (*mcp_watch_fn)(void *arg, unsigned what);
int mcp_watch_open(mcp_server_t *srv);
void mcp_watch_close(mcp_server_t *srv);
/* Listens to task id for what (TFS_WATCH_STATE, TFS_WATCH_OUTPUT). NULL
 * only when out of memory: the caller then looks every
 * mcp_watch_tick_ms() on its own. */
mcp_listener_t *mcp_watch_add(mcp_server_t *srv, const char *id, unsigned what, mcp_watch_fn fn,
                              void *arg);
void mcp_watch_remove(mcp_server_t *srv, mcp_listener_t *l); /* l may be NULL */
int mcp_watch_tick_ms(mcp_server_t *srv);

/* ---- pending.c: requests that wait for a task ------------------------- */

/* What one look found (tfs_task_ended): the record as stored, a dead
 * supervisor's task settled as lost. */
typedef struct {
  const char *task_id;
  int err;                 /* 0, or why the task could not be read (rec is empty) */
  const tfs_record_t *rec; /* borrowed for the call */
  int ended;               /* completed, failed, cancelled or lost */
  int timed_out;           /* the deadline passed or the server is ending */
  int64_t waited_ms;
} mcp_look_t;
/* Decides from a look whether to answer. Replies and returns 1, or returns
 * 0 to wait on; with err or timed_out it must reply. */
typedef int (*mcp_check_fn)(const mcp_req_t *r, void *data, const mcp_look_t *lk);

/* The one wait: looks at task_id at once and, unless check answered,
 * parks r (kept) on the server's watch of the task for what
 * (TFS_WATCH_STATE, | TFS_WATCH_OUTPUT to hear of output), looking again
 * at every change, at every tick and at the deadline: wait_ms > 0 after
 * that long, 0 at the first look, < 0 never (only the end or the server's
 * end answer it). data goes with the request (free_fn frees it, may be
 * NULL). */
void mcp_wait(const mcp_req_t *r, const char *task_id, int64_t wait_ms, unsigned what,
              mcp_check_fn check, void *data, void (*free_fn)(void *data));
/* Drops the request id of s (notifications/cancelled): no reply is sent. */
void mcp_pending_drop(mcp_session_t *s, const json_t *id);
/* Drops every request of s, unanswered (the session ended). */
void mcp_pending_drop_session(mcp_session_t *s);
/* Answers every waiting request with what it has (shutdown). */
void mcp_pending_flush(mcp_server_t *srv);

/* ---- method handlers (each replies exactly once) --------------------- */

typedef void (*mcp_method_fn)(const mcp_req_t *r, json_t *params);

json_t *mcp_schema_tools(void); /* schema.c: the parsed tool list, or NULL */
void mcp_tools_list(const mcp_req_t *r, json_t *params);
void mcp_tools_call(const mcp_req_t *r, json_t *params);
void mcp_tasks_get(const mcp_req_t *r, json_t *params);
void mcp_tasks_result(const mcp_req_t *r, json_t *params);
void mcp_tasks_list(const mcp_req_t *r, json_t *params);
void mcp_tasks_cancel(const mcp_req_t *r, json_t *params);
void mcp_resources_list(const mcp_req_t *r, json_t *params);
void mcp_resources_templates(const mcp_req_t *r, json_t *params);
void mcp_resources_read(const mcp_req_t *r, json_t *params);
void mcp_resources_subscribe(const mcp_req_t *r, json_t *params);
void mcp_resources_unsubscribe(const mcp_req_t *r, json_t *params);
/* Ends every subscription of s. */
void mcp_resources_drop(mcp_session_t *s);

/* ---- the tools (tool_*.c); args is an object, task the params.task of
 * a task-augmented call or NULL --------------------------------------- */

typedef void (*mcp_tool_fn)(const mcp_req_t *r, json_t *args, json_t *task);
void mcp_tool_start(const mcp_req_t *r, json_t *args, json_t *task);
void mcp_tool_read(const mcp_req_t *r, json_t *args, json_t *task);
void mcp_tool_list(const mcp_req_t *r, json_t *args, json_t *task);
void mcp_tool_cancel(const mcp_req_t *r, json_t *args, json_t *task);

/* tools.c: reads an optional integer argument within [min, max]. Returns
 * 0, or -1 with msg filled. */
int mcp_arg_int(json_t *args, const char *name, int64_t def, int64_t min, int64_t max, int64_t *out,
                char *msg, size_t msglen);
/* tools.c: resolves taskId / taskKey arguments into an id; on failure
 * fills msg with what was wrong and what to do, and returns a negative
 * error. */
int mcp_resolve_args(mcp_server_t *srv, json_t *args, char id[TFS_ID_MAX + 1], char *msg,
                     size_t msglen);

/* ---- reply.c: results ------------------------------------------------- */

json_t *mcp_time_or_null(int64_t ms);
/* The state every tool returns: id, key, state, command, times, counts. */
json_t *mcp_record_compact(const tfs_record_t *rec);
/* A tools/call result: the structured content (stolen) and the same JSON
 * as text. */
json_t *mcp_call_result(json_t *structured, int is_error);
/* Bytes of the whole tools/call result message for a structured content
 * whose compact dump is text: what the maxBytes bound is checked against. */
size_t mcp_result_size(const char *text);
/* Replies with the tools/call result for structured (stolen), whose
 * compact dump is text (malloc'ed and stolen; NULL to dump it here). */
void mcp_reply_result(const mcp_req_t *r, json_t *structured, char *text);
/* A tool failure: an isError result whose text says what to do. */
void mcp_tool_error(const mcp_req_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- a read: arguments, output, waiting (output.c, tool_read.c) ------- */

typedef struct {
  int64_t tail_lines;
  int64_t since_line; /* -1: tail mode */
  int64_t max_bytes;
  int has_re;
  regex_t re;
  tfs_follower_t *fol;
  int64_t match_line;
  char *match_text;
  /* start_managed_task only */
  int is_start;
  int existing;
  /* task-augmented result (tasks/result) */
  int task_result;
} mcp_read_t;

/* A read with the defaults (20 tail lines, 4096 bytes), or NULL. */
mcp_read_t *mcp_read_new(void);
void mcp_read_free(mcp_read_t *ra);
/* Parses the read arguments shared by read_managed_task and the answer of
 * start_managed_task. Returns 0, or -1 with msg. */
int mcp_read_parse(json_t *args, mcp_read_t *ra, int64_t *wait_ms, int64_t wait_def, char *msg,
                   size_t msglen);
/* Answers now if it can (no wait, the task has ended, shutting down), else
 * parks the request until the task ends, the pattern matches or wait_ms
 * (-1: no deadline) passes. Takes ra. */
void mcp_read_park(const mcp_req_t *r, const char *task_id, mcp_read_t *ra, int64_t wait_ms);
/* output.c: the read/start answer for rec, trimmed so that the whole
 * tools/call result fits ra->max_bytes; *text gets its compact dump
 * (malloc'ed, or NULL). */
json_t *mcp_output_build(mcp_server_t *srv, const tfs_record_t *rec, const mcp_read_t *ra,
                         int64_t waited_ms, int timed_out, char **text);

/* ---- the Tasks utility and cancel (tasks.c, tool_cancel.c) ------------ */

/* The MCP Task object of rec. */
json_t *mcp_task_object(const tfs_record_t *rec);
/* tasks/result payload: the CallToolResult of the (start) call with the
 * related-task _meta (structured stolen). */
json_t *mcp_task_payload(json_t *structured, const tfs_record_t *rec);
/* Records the stop request and parks until the task is terminal, replying
 * as tasks/cancel (mcp_task) or as cancel_managed_task. Returns 1 if the
 * task had already ended (rec filled; nothing replied), 0 if parked, -1 on
 * error (msg filled; nothing replied). */
int mcp_cancel_start(const mcp_req_t *r, const char *task_id, int mcp_task, tfs_record_t *rec,
                     char *msg, size_t msglen);

/* ---- paging (tool_list.c), shared by the three lists ------------------ */

/* One page of tasks, newest first, older than the cursor (the last id of
 * the previous page), over the core listing. cb gets each record kept. */
typedef struct {
  unsigned states; /* TFS_STATE_BIT()s; 0: every state */
  size_t limit;    /* records kept */
  tfs_list_cb cb;
  void *arg;
  /* filled by the page */
  size_t total;              /* tasks in the store */
  int capped;                /* the scan cap ended the page before limit */
  char next[TFS_ID_MAX + 1]; /* the next page's cursor; "" after the last */
} mcp_page_t;
/* Returns 0, or -1 with what was wrong (a cursor this server never handed
 * out, a store that cannot be listed) in err. */
int mcp_page_run(mcp_server_t *srv, const char *cursor, mcp_page_t *pg, char *err, size_t errlen);
/* Answers a protocol list (tasks/list, resources/list) with the page for
 * params.cursor: {field: [...], nextCursor}, the array being what cb
 * appends to its arg for each record; -32602 for a bad cursor. */
void mcp_page_reply(const mcp_req_t *r, json_t *params, const char *field, size_t limit,
                    tfs_list_cb cb);

#endif /* TASKFS_MCP_INTERNAL_H */
