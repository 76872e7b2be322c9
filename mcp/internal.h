/* What the modules of libtaskfs-mcp.a share; transports need only mcp.h.
 *
 * Who owns what: server.c the server object; session.c sessions and every
 * outgoing JSON-RPC message; dispatch.c method routing and the lifecycle;
 * era.c the per-request protocol era, the connection's pin and modern
 * shaping (the watch of tasks, scans and launches are the hub's:
 * live/live.h); pending.c requests that wait; schema.c the tool descriptions; validate.c arguments
 * against them; reply.c tools/call results; tools.c tools/call routing; output.c a task's output as
 * an answer; shorten.c the bound's last resort; tool_read.c, tool_start.c, tool_list.c (and the
 * pager), tool_cancel.c, tool_control.c one tool each; sched.c start's queue and dependencies;
 * roots.c the client's roots; tasks.c the Task and the 2025-11-25 Tasks utility; tasks_ext.c the
 * 2026-07-28 tasks extension; resources.c resources and subscriptions; listen.c
 * subscriptions/listen; prompts.c prompts and completion; limits.c the server's limits and the
 * requests in flight; pattern.c untilPattern's bounded matcher; until.c
 * the scan of a read's new lines off the loop; stdio.c the stdio
 * transport. */
#ifndef TASKFS_MCP_INTERNAL_H
#define TASKFS_MCP_INTERNAL_H

#include "mcp/mcp.h"
#include "taskfs/taskfs.h"

/* Long-polls are capped below the 60 s that common clients time out at. */
#define MCP_WAIT_CAP_MS 50000
typedef struct mcp_pending mcp_pending_t;
typedef struct mcp_sub mcp_sub_t;
typedef struct mcp_until mcp_until_t;
typedef struct mcp_tail mcp_tail_t;
typedef struct mcp_pattern mcp_pattern_t;

struct mcp_server {
  live_hub_t *hub;            /* the loop, the store, the watch, the pool's work */
  int own_hub;                /* made by the server (stdio), freed with it */
  uv_loop_t *loop;            /* the hub's */
  char who[64];               /* "<role> pid N", recorded as the canceller */
  json_t *tools;              /* the tool list (schema.c); NULL if it failed to parse */
  json_t *tools_modern;       /* the same as 2026-07-28 lists it */
  mcp_session_t *sessions;    /* open sessions (session.c) */
  mcp_pending_t *pending;     /* requests that wait (pending.c) */
  int holds;                  /* work of the server in flight that the end waits for */
  int closing;                /* mcp_server_shutdown() was called */
  void (*on_idle)(void *arg); /* see mcp_server_config_t */
  void *idle_arg;
  mcp_limits_t lim;  /* the config's, defaults filled in (limits.c) */
  unsigned inflight; /* requests kept past their handler, all sessions */
  live_feed_t *feed; /* the hub's task feed for subscriptions (resources.c) */
};

typedef struct mcp_outreq mcp_outreq_t;
typedef struct mcp_listen mcp_listen_t;

struct mcp_session {
  mcp_session_t *next;
  mcp_server_t *srv;
  mcp_send_fn send;
  void *arg;
  int refs;          /* the open session, and each request kept past its handler */
  int closed;        /* mcp_session_close() was called: nothing is sent any more */
  unsigned inflight; /* its requests kept past their handler (limits.c) */
  /* For transports (mcp_session_replying, mcp_session_refused): the
   * message being sent is a request's final response; the dispatcher is
   * still deciding whether to serve the message it was handed (no handler
   * runs yet); and the code it refused that message with. */
  int replying, screening, refused;
  /* The era the connection is pinned to (era.c): 0 until its opening
   * request says, then MCP_ERA_LEGACY (initialize) or MCP_ERA_MODERN (a
   * request with the modern _meta; server/discover does not pin). */
  unsigned pin;
  char pinned_by[40];    /* the method that pinned it, for error messages */
  char version[16];      /* legacy: the version initialize negotiated */
  unsigned caps;         /* legacy: MCP_CAP_* from initialize */
  int log_level;         /* legacy: logging/setLevel's level, -1 before any */
  mcp_sub_t *subs;       /* legacy resource subscriptions (resources.c) */
  mcp_listen_t *listens; /* modern subscriptions/listen streams (listen.c) */
  /* Legacy requests to the client (roots.c): the ones awaiting an answer,
   * the next id, and the first root as last answered. */
  mcp_outreq_t *out;
  int64_t next_out;
  int roots_known; /* root is what the client said (until list_changed) */
  char *root;      /* the first root's path; NULL: none usable */
};

/* The two protocol eras one server speaks (docs/mcp.md, "Revisions"):
 * legacy, the handshake revisions up to 2025-11-25 (initialize, the Tasks
 * utility, resources/subscribe), and modern, 2026-07-28 (no handshake: the
 * version and the client's capabilities ride in every request's _meta;
 * server/discover, resultType, the tasks extension, subscriptions/listen).
 * The dispatcher classifies each request (era.c); handlers are shared and
 * only the era layer shapes what differs. */
#define MCP_ERA_LEGACY 1u
#define MCP_ERA_MODERN 2u
#define MCP_MODERN_PROTOCOL "2026-07-28"
#define MCP_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT "io.modelcontextprotocol/clientInfo"
#define MCP_META_LOGLEVEL "io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER "io.modelcontextprotocol/serverInfo"
#define MCP_META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"
#define MCP_TASKS_EXTENSION "io.modelcontextprotocol/tasks"
/* A request's params._meta larger than this (compact JSON) is refused: the
 * protocol's own keys need a few hundred bytes. */
#define MCP_META_MAX (64u * 1024)
/* The longest string id a request may have (bytes). */
#define MCP_ID_MAX 1024u
/* -32021, -32022: the modern revision's codes. */
#define MCP_RPC_MISSING_CAPABILITY (-32021)
#define MCP_RPC_UNSUPPORTED_VERSION (-32022)

/* What the client declared it can do, as seen by one request: the
 * request's own _meta (modern) or the session's initialize (legacy). */
#define MCP_CAP_ROOTS 0x1u /* roots (roots/list; MRTR input in modern) */
#define MCP_CAP_TASKS 0x2u /* modern: the io.modelcontextprotocol/tasks extension */

typedef struct mcp_method mcp_method_t; /* a row of the method table (below) */

/* Where the reply to one request goes, and how to shape it. The
 * dispatcher hands each handler one that lives as long as the handler runs
 * (id borrowed); whatever answers later keeps its own copy with
 * mcp_req_keep(). */
typedef struct {
  mcp_server_t *srv; /* sess->srv */
  mcp_session_t *sess;
  json_t *id;
  unsigned era;               /* MCP_ERA_LEGACY or MCP_ERA_MODERN */
  unsigned caps;              /* MCP_CAP_* the client declared */
  int log_level;              /* lowest severity (0 debug .. 7 emergency) to send, -1: none */
  const mcp_method_t *method; /* NULL for errors about messages no method was found for */
  int kept;                   /* a copy made by mcp_req_keep: the request is in flight */
} mcp_req_t;

/* ---- server.c --------------------------------------------------------- */

tfs_store_t *mcp_store(mcp_server_t *srv);
const char *mcp_who(mcp_server_t *srv);
int mcp_closing(mcp_server_t *srv);
/* The server's feed on the hub (live_feed_open), made on first use;
 * NULL once the server is shutting down, or without memory. */
live_feed_t *mcp_feed(mcp_server_t *srv);
/* Counts work in flight of the server's own (a roots/list to the client)
 * that the end waits for; the hub counts its scans (tail reads, every
 * scan and match of untilPattern) and launches (live_hold). */
void mcp_hold(mcp_server_t *srv, int delta);

/* Tells the transport, once the server is shutting down and idle. */
void mcp_server_check_idle(mcp_server_t *srv);
/* Follows a store that was removed and recreated under a long-running
 * server (the hub's rule, live_store); called before each request. */
void mcp_server_refresh(mcp_server_t *srv);

/* ---- limits.c: the server's limits, requests in flight ----------------- */

void mcp_limits_resolve(const mcp_limits_t *in, mcp_limits_t *out);
const mcp_limits_t *mcp_limits(mcp_server_t *srv);
/* The count of requests in flight of s and its server (mcp_req_keep,
 * mcp_req_release). */
void mcp_flight_count(mcp_session_t *s, int delta);
/* Whether r may become one more request in flight: 0, or the limit it is
 * over (a request already in flight, r->kept, always may). */
#define MCP_OVER_SESSION 1
#define MCP_OVER_SERVER 2
int mcp_admit_check(const mcp_req_t *r);
/* Whether r may wait (be parked) within the limits: 1, or 0 when it could
 * not, also for a request kept only for its first look (pending.c). */
int mcp_admit_room(const mcp_req_t *r);
/* Replies -32000 for the limit over names, data {limit, max, inFlight}. */
void mcp_reply_over(const mcp_req_t *r, int over);
/* Both: 0, or -1 after replying. */
int mcp_admit(const mcp_req_t *r);

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
/* The same for the final response to request id (transports end its
 * stream there). */
void mcp_send_reply_raw(mcp_session_t *s, const json_t *id, char *data, size_t len);
/* A result / an error for the request (result stolen). */
void mcp_reply(const mcp_req_t *r, json_t *result);
void mcp_reply_error(const mcp_req_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with data (stolen, may be NULL) as the error's data member. */
void mcp_reply_error_data(const mcp_req_t *r, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A notification to the session (params stolen). */
void mcp_notify(mcp_session_t *s, const char *method, json_t *params);
/* Logs a line on stderr and, when the client asked for log messages at
 * that level (legacy: logging/setLevel; modern: the request's logLevel),
 * sends it as notifications/message on the request's way out. */
void mcp_log(const mcp_req_t *r, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for what concerns no request: stderr, and every legacy session
 * that set a level. */
void mcp_log_all(mcp_server_t *srv, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- era.c: the per-request era ---------------------------------------- */

#define MCP_LOG_INFO 1
#define MCP_LOG_WARNING 3
#define MCP_LOG_ERROR 4
/* A log level's index (0 debug .. 7 emergency), or -1. */
int mcp_log_level_parse(const char *name);
const char *mcp_log_level_name(int level);
/* Fills r->era, r->caps and r->log_level from the session's pin and
 * params._meta. Replies with an error naming the field and returns -1
 * when the request cannot be served in any era. */
int mcp_era_classify(mcp_req_t *r, const char *method, json_t *params);
/* The modern claim in params (params._meta[MCP_META_VERSION]), or NULL. */
json_t *mcp_params_claim(const json_t *params);
/* Pins the session to era (once; later calls do nothing). */
void mcp_era_pin(mcp_session_t *s, unsigned era, const char *method);
/* Shapes a result (kept, returned) for r's era: a modern result gets its
 * resultType ("complete" unless set), serverInfo in _meta and, for a
 * cacheable method, ttlMs and cacheScope. */
json_t *mcp_era_result(const mcp_req_t *r, json_t *result);
/* The text mcp_era_result() adds to a tools/call result, for results
 * assembled as text; *len its length ("" for legacy). */
const char *mcp_era_tail(const mcp_req_t *r, size_t *len);
/* In the modern era, replies -32021 naming what is missing and returns -1
 * unless the request declared every capability in needs (why names what
 * needs them). Legacy requests always pass. */
int mcp_require_caps(const mcp_req_t *r, unsigned needs, const char *why);

/* ---- roots.c: requests to the client, and the client's first root ----- */

/* A response the client sent (to a legacy roots/list of ours). */
void mcp_client_response(mcp_session_t *s, json_t *msg);
/* Drops what the session asked the client and has not been answered
 * (all of it; or what it asked on behalf of request id, cancelled). */
void mcp_client_drop_session(mcp_session_t *s);
void mcp_client_drop(mcp_session_t *s, const json_t *id);
/* The server's end: what waits for the client's answer goes on without. */
void mcp_client_flush(mcp_server_t *srv);
/* Forgets the roots the client gave (notifications/roots/list_changed, a
 * new initialize). */
void mcp_roots_forget(mcp_session_t *s);
/* The client's first root, as a directory the task may run in: cb gets
 * it (NULL: none to use; why says why when the client declared roots,
 * NULL when it did not) now or later. answer 0 tells cb that nobody waits
 * for the reply any more (the session ended, the request was cancelled):
 * it must only clean up.
 * Legacy: asks the client with roots/list when it declared roots (once per
 * session, until the list changes); modern: from params.inputResponses,
 * else -- when the request declared roots -- replies with an
 * input_required result asking for them and returns 1 (cb is not called).
 * Returns 0 when cb was or will be called. */
typedef void (*mcp_root_fn)(const mcp_req_t *r, void *arg, const char *root, const char *why,
                            int answer);
int mcp_roots_first(const mcp_req_t *r, json_t *params, mcp_root_fn cb, void *arg);

/* ---- pending.c: requests that wait for a task ------------------------- */

/* What one look found (tfs_task_ended): the record as stored, a dead
 * supervisor's task settled as lost. */
typedef struct {
  const char *task_id;
  int err;                 /* 0, or why the task could not be read (rec is empty) */
  const tfs_record_t *rec; /* borrowed for the call */
  int ended;               /* completed, failed, cancelled or lost */
  int timed_out;           /* the deadline passed or the server is ending */
  int final;               /* the server is ending, or the hard cap passed */
  int64_t waited_ms;
  mcp_pending_t *wait; /* the waiting request, for mcp_wait_poke() */
} mcp_look_t;
/* Decides from a look whether to answer: replies and returns
 * MCP_CHECK_DONE, or returns MCP_CHECK_WAIT to wait on; with err or
 * timed_out it must reply, unless work of its own is in flight that will
 * call mcp_wait_poke(lk->wait) when done: then MCP_CHECK_LATER (never
 * when final). */
#define MCP_CHECK_WAIT 0
#define MCP_CHECK_DONE 1
#define MCP_CHECK_LATER 2
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
/* Has the waiting request look again now (its check's work is done). */
void mcp_wait_poke(mcp_pending_t *p);
/* Drops the request id of s (notifications/cancelled): no reply is sent. */
void mcp_pending_drop(mcp_session_t *s, const json_t *id);
/* Drops every request of s, unanswered (the session ended). */
void mcp_pending_drop_session(mcp_session_t *s);
/* Answers every waiting request with what it has (shutdown). */
void mcp_pending_flush(mcp_server_t *srv);

/* ---- method handlers (each replies exactly once) --------------------- */

typedef void (*mcp_method_fn)(const mcp_req_t *r, json_t *params);

/* One row of the method table (dispatch.c): which eras serve the method,
 * what the client must have declared for it in the modern era, and its
 * caching hint there (ttl_ms < 0: not cacheable). A method the eras serve
 * differently has a row per era. */
struct mcp_method {
  const char *name;
  mcp_method_fn fn;
  unsigned eras;     /* MCP_ERA_* bits */
  unsigned needs;    /* MCP_CAP_* bits a modern request must carry */
  int64_t ttl_ms;    /* ttlMs of a complete modern result; < 0: none */
  const char *scope; /* its cacheScope: "public" or "private" */
};

json_t *mcp_schema_tools(void); /* schema.c: the parsed tool list, or NULL */
/* The list as the modern era gives it (a copy without execution). */
json_t *mcp_schema_modern(const json_t *tools);
/* The inputSchema of tool name (borrowed), or NULL for no such tool. */
json_t *mcp_tool_input_schema(mcp_server_t *srv, const char *name);
void mcp_tools_list(const mcp_req_t *r, json_t *params);
void mcp_tools_call(const mcp_req_t *r, json_t *params);
void mcp_tasks_get(const mcp_req_t *r, json_t *params);
void mcp_tasks_result(const mcp_req_t *r, json_t *params);
void mcp_tasks_list(const mcp_req_t *r, json_t *params);
void mcp_tasks_cancel(const mcp_req_t *r, json_t *params);
/* The 2026-07-28 tasks extension (tasks_ext.c). A DetailedTask: the
 * Task, and once completed the start call's final result (NULL when out
 * of memory). */
json_t *mcp_task_detailed(const mcp_req_t *r, const tfs_record_t *rec);
void mcp_tasks_get_ext(const mcp_req_t *r, json_t *params);
void mcp_tasks_cancel_ext(const mcp_req_t *r, json_t *params);
void mcp_tasks_update_ext(const mcp_req_t *r, json_t *params);
/* subscriptions/listen (listen.c): a stream of resource and task
 * notifications until notifications/cancelled or the server's end. */
void mcp_listen(const mcp_req_t *r, json_t *params);
void mcp_listen_drop(mcp_session_t *s, const json_t *id);
void mcp_listen_drop_session(mcp_session_t *s);
/* The server's end: every stream gets its graceful result. */
void mcp_listen_flush(mcp_server_t *srv);
/* prompts.c: the diagnose_task prompt and argument completion. */
void mcp_prompts_list(const mcp_req_t *r, json_t *params);
void mcp_prompts_get(const mcp_req_t *r, json_t *params);
void mcp_completion(const mcp_req_t *r, json_t *params);
void mcp_resources_list(const mcp_req_t *r, json_t *params);
void mcp_resources_templates(const mcp_req_t *r, json_t *params);
void mcp_resources_read(const mcp_req_t *r, json_t *params);
void mcp_resources_subscribe(const mcp_req_t *r, json_t *params);
void mcp_resources_unsubscribe(const mcp_req_t *r, json_t *params);
/* Ends every legacy subscription of s. */
void mcp_resources_drop(mcp_session_t *s);

/* Subscriptions (resources.c): one task's record or transcript, told
 * from the hub's task feed (live_tasks_subscribe): fn is called when the
 * task's state changes, and on its progress events (paced by the feed,
 * at most two a second per task); a transcript's only when the file
 * changed. MCP_RES_TASK follows the record like MCP_RES_RECORD, for task
 * status notifications. */
enum { MCP_RES_RECORD, MCP_RES_TRANSCRIPT, MCP_RES_TASK };
typedef void (*mcp_sub_fn)(void *arg, mcp_sub_t *s);
/* Parses taskfs://tasks/<id>/(record|transcript). Returns 0, or -1. */
int mcp_resource_parse(const char *uri, char id[TFS_ID_MAX + 1], int *kind);
/* NULL when out of memory. The caller keeps it in a list of its own
 * through mcp_sub_next(). */
mcp_sub_t *mcp_sub_open(mcp_server_t *srv, const char *uri, const char *id, int kind, mcp_sub_fn fn,
                        void *arg);
void mcp_sub_close(mcp_sub_t *s);
const char *mcp_sub_uri(const mcp_sub_t *s);
const char *mcp_sub_task(const mcp_sub_t *s);
mcp_sub_t **mcp_sub_next(mcp_sub_t *s);

/* ---- the tools (tool_*.c); args is an object that fits the tool's
 * inputSchema, task the params.task of a legacy task-augmented call or
 * NULL, params the call's params ------------------------------------- */

typedef void (*mcp_tool_fn)(const mcp_req_t *r, json_t *args, json_t *task, json_t *params);
void mcp_tool_start(const mcp_req_t *r, json_t *args, json_t *task, json_t *params);
void mcp_tool_read(const mcp_req_t *r, json_t *args, json_t *task, json_t *params);
void mcp_tool_list(const mcp_req_t *r, json_t *args, json_t *task, json_t *params);
void mcp_tool_cancel(const mcp_req_t *r, json_t *args, json_t *task, json_t *params);
void mcp_tool_control(const mcp_req_t *r, json_t *args, json_t *task, json_t *params);

/* sched.c: start_managed_task's queue, after and delayMs, checked. */
typedef struct {
  char queue[TFS_QUEUE_NAME_MAX + 1];
  char **after; /* ids, NULL-terminated, or NULL */
  int64_t not_before_ms;
} mcp_sched_t;
/* 0, or -1 with msg saying what to fix. key: the task's own key. */
int mcp_sched_parse(mcp_server_t *srv, json_t *args, const char *key, mcp_sched_t *sc, char *msg,
                    size_t msglen);
void mcp_sched_free(mcp_sched_t *sc);

/* validate.c: checks args against a tool's inputSchema. Returns 0, or -1
 * with msg saying which argument is wrong and what it must be. */
int mcp_validate_args(const json_t *schema, const json_t *args, char *msg, size_t msglen);
/* An integer argument already checked against the schema, or def. */
int64_t mcp_arg_i64(json_t *args, const char *name, int64_t def);
/* tools.c: resolves taskId / taskKey arguments into an id; on failure
 * fills msg with what was wrong and what to do, and returns a negative
 * error. */
int mcp_resolve_args(mcp_server_t *srv, json_t *args, char id[TFS_ID_MAX + 1], char *msg,
                     size_t msglen);

/* ---- reply.c: results ------------------------------------------------- */

json_t *mcp_time_or_null(int64_t ms);
/* The state every tool returns: id, key, state, command, times, counts. */
json_t *mcp_record_compact(const tfs_record_t *rec);
/* What the task used, compact (every answer and list entry): cpuMs (user
 * + system of its whole tree), maxRssKb (its largest process). */
void mcp_usage_fields(json_t *o, const tfs_record_t *rec);
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
  mcp_pattern_t *pattern; /* untilPattern, until the wait scans with it */
  mcp_until_t *until;     /* the scan of new lines (until.c) */
  mcp_tail_t *tail;       /* the answer's lines, read on the pool (output.c) */
  int64_t match_line;
  char *match_text;
  /* start_managed_task only */
  int is_start;
  int existing;
  const char *cwd_from; /* "argument", "root", "server", "task" (static) */
  char cwd_note[240];   /* why the client's first root was not used */
  /* task-augmented result (tasks/result) */
  int task_result;
  /* Bytes the answer's era and wrapping add to the result, which
   * max_bytes bounds too. */
  size_t extra_bytes;
} mcp_read_t;

/* ---- pattern.c, until.c: untilPattern --------------------------------- */

/* Bytes of each output line that untilPattern is matched against. */
#define MCP_UNTIL_LINE_MAX 4096
typedef struct mcp_matcher mcp_matcher_t;
/* Compiles src[0..len) (NUL bytes allowed) within lim: 0, or -1 with msg
 * saying what is wrong and what to write instead. */
int mcp_pattern_compile(const char *src, size_t len, const mcp_limits_t *lim, mcp_pattern_t **out,
                        char *msg, size_t msglen);
void mcp_pattern_free(mcp_pattern_t *p);
/* What one thread needs to match with p (its limits, its backtracking
 * heap); NULL when out of memory. */
mcp_matcher_t *mcp_matcher_new(const mcp_pattern_t *p);
void mcp_matcher_free(mcp_matcher_t *m);
/* Matches s[0..len): 1, 0, or -1 with msg naming the limit hit ("the
 * match limit (100000 steps)"). Any thread; one matcher per thread. */
int mcp_pattern_match(const mcp_pattern_t *p, mcp_matcher_t *m, const char *s, size_t len,
                      char *msg, size_t msglen);
/* What to do about a pattern that hit a match limit, in words. */
const char *mcp_pattern_hint(void);

/* The scan of task_id's new lines with pat (taken): a follower opened at
 * the last last_n lines (-1: the start), lines up to after ignored. NULL
 * when out of memory. */
mcp_until_t *mcp_until_new(mcp_server_t *srv, mcp_pattern_t *pat, const char *task_id,
                           int64_t last_n, int64_t after);
void mcp_until_free(mcp_until_t *u);
/* Hands the matcher the lines that are new (terminal: the task has ended,
 * so a last line without newline counts). Returns 1 while lines are being
 * matched (tell(arg) is called when that ends with an outcome), 0 when
 * every line so far was matched or the outcome is known. */
int mcp_until_feed(mcp_until_t *u, int terminal, void (*tell)(void *arg), void *arg);
/* The first line that matched (0: none) and, once, its text (taken). */
int64_t mcp_until_match(mcp_until_t *u, char **text);
/* What stopped the scan ("the match limit (100000 steps) on line 7"), or
 * NULL. */
const char *mcp_until_error(const mcp_until_t *u);

/* A read with the defaults (20 tail lines, 4096 bytes) for r's era, or
 * NULL. */
mcp_read_t *mcp_read_new(const mcp_req_t *r);
void mcp_read_free(mcp_read_t *ra);
/* Parses the read arguments shared by read_managed_task and the answer of
 * start_managed_task (untilPattern compiled within the server's limits).
 * Returns 0, or -1 with msg. */
int mcp_read_parse(const mcp_req_t *r, json_t *args, mcp_read_t *ra, int64_t *wait_ms,
                   int64_t wait_def, char *msg, size_t msglen);
/* Answers now if it can (no wait, the task has ended, shutting down), else
 * parks the request until the task ends, the pattern matches or wait_ms
 * (-1: no deadline) passes. Takes ra. */
void mcp_read_park(const mcp_req_t *r, const char *task_id, mcp_read_t *ra, int64_t wait_ms);
/* output.c: the read/start answer for rec, trimmed so that the whole
 * tools/call result fits ra->max_bytes; *text gets its compact dump
 * (malloc'ed, or NULL). */
json_t *mcp_output_build(mcp_server_t *srv, const tfs_record_t *rec, const mcp_read_t *ra,
                         int64_t waited_ms, int timed_out, char **text);
/* Reads the lines of ra's answer about rec on the thread pool (a scan,
 * live/scan.c), so that mcp_output_build finds them ready and reads nothing on
 * the loop. Returns 1 while they are being read (tell(arg) is called when
 * they are), 0 when they are ready, or not wanted, or the scan could not
 * start (mcp_output_build then reads them itself). */
int mcp_output_prepare(mcp_server_t *srv, mcp_read_t *ra, const tfs_record_t *rec,
                       void (*tell)(void *arg), void *arg);
/* Lets go of ra's lines; a scan still reading them is cancelled. */
void mcp_output_tail_free(mcp_tail_t *t);

/* shorten.c: shortens the longest string of fields in the answer o (the
 * argv first to its first arguments, then one string) by about need bytes
 * of result, keeping at least keep bytes and an ellipsis; shortened gets
 * the field's name. Returns 1, or 0 when nothing is longer than keep. */
int mcp_shorten(json_t *o, const char *const *fields, size_t need, size_t keep, json_t *shortened);
/* Leaves out o's null members and the empty lists of its important lines
 * (o's own "first" and "last" too, for the important object itself).
 * Returns 1 if that changed anything. */
int mcp_shorten_nulls(json_t *o);
/* Leaves out the first of members that o has; 1, or 0 when none. */
int mcp_shorten_drop(json_t *o, const char *const *members);

/* ---- the Tasks utility and cancel (tasks.c, tool_cancel.c) ------------ */

/* The answer's bounds (maxBytes, tailLines) of the call that made task
 * id, kept with the task for its result (tasks.c); load leaves ra's
 * defaults when none were kept. */
void mcp_task_bounds_save(mcp_server_t *srv, const char *id, const mcp_read_t *ra);
void mcp_task_bounds_load(mcp_server_t *srv, const char *id, mcp_read_t *ra);
/* What tasks/cancel adds to the server's name in a stop request it
 * records, so that the MCP task reads cancelled (tasks.c). */
#define MCP_TASKS_CANCEL " (tasks/cancel)"
/* The MCP task status of a record (tasks.c: the call's status): working,
 * completed, or cancelled when tasks/cancel stopped it. */
const char *mcp_task_status(const tfs_record_t *rec);
int mcp_task_cancelled_by_requester(const tfs_record_t *rec);
/* The call's result says isError: the task was stopped by other means
 * than tasks/cancel (the reason names by whom). */
int mcp_task_result_is_error(const tfs_record_t *rec);
/* The MCP Task object of rec, in era (ttl/pollInterval or
 * ttlMs/pollIntervalMs). */
json_t *mcp_task_object(unsigned era, const tfs_record_t *rec);
/* Reads params.taskId into rec (the record as stored, lost settled), or
 * replies -32602 naming the id (and the store for one it does not hold)
 * and returns -1. */
int mcp_task_param(const mcp_req_t *r, json_t *params, tfs_record_t *rec);
/* tasks/result payload: the CallToolResult of the (start) call, exactly as
 * the plain call answers, with the related-task _meta (structured
 * stolen). */
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
