/* Shared fixture of the transport-free MCP tests (tests/test_mcp_era.c,
 * tests/test_mcp_bound.c): a server on its own loop over a fresh store,
 * sessions whose messages are kept parsed, a request/answer helper, and
 * tasks made directly in the store (no supervisor runs them). */
#ifndef TASKFS_TESTS_MCP_FIXTURE_H
#define TASKFS_TESTS_MCP_FIXTURE_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/mcp.h"
#include "taskfs/taskfs.h"
#include "tests/helpers/testutil.h"

#define META                                                                                       \
  "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                         \
  "\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define META_TASKS                                                                                 \
  "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                         \
  "\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":{"                               \
  "\"io.modelcontextprotocol/tasks\":{}}}}"
#define META_ROOTS                                                                                 \
  "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                         \
  "\"io.modelcontextprotocol/clientCapabilities\":{\"roots\":{}}}"

/* A server on its own loop, one store, and what each session sent. */
typedef struct {
  json_t *msgs; /* every message sent, parsed, in order */
} sink_t;

typedef struct {
  uv_loop_t loop;
  mcp_server_t *srv;
  tfs_store_t *store;
  char *dir;
} fx_t;

static fx_t F;
/* The server's limits (zero: the defaults); a test sets them in its own
 * .init before fx_open. */
static mcp_limits_t FX_LIMITS;

static __attribute__((unused)) void sink_send(void *arg, const json_t *id, char *data, size_t len) {
  sink_t *k = arg;
  json_error_t e;
  json_t *m = json_loadb(data, len, 0, &e);
  cr_assert_not_null(m, "the server sent invalid JSON: %s", data);
  json_array_append_new(k->msgs, m);
  free(data);
}

static __attribute__((unused)) void fx_open(void) {
  memset(&F, 0, sizeof F);
  F.dir = tu_tmpdir("mcpera");
  setenv("TASKFS_SUPERVISOR_EXE", tu_taskfs_bin(), 1);
  cr_assert_eq(uv_loop_init(&F.loop), 0);
  mcp_server_config_t cfg = {
      .loop = &F.loop, .state_dir = F.dir, .role = "mcp-test", .limits = FX_LIMITS};
  cr_assert_eq(mcp_server_open(&cfg, &F.srv), 0);
  cr_assert_eq(tfs_store_open(F.dir, &F.store), 0);
}

static __attribute__((unused)) void fx_close(void) {
  mcp_server_shutdown(F.srv);
  int64_t deadline = tfs_now_ms() + 20000 * tu_slow();
  while (!mcp_server_idle(F.srv) && tfs_now_ms() < deadline)
    uv_run(&F.loop, UV_RUN_ONCE);
  uv_run(&F.loop, UV_RUN_NOWAIT);
  mcp_server_free(F.srv);
  uv_run(&F.loop, UV_RUN_NOWAIT);
  cr_assert_eq(uv_loop_close(&F.loop), 0, "no handle is left open");
  tfs_store_close(F.store);
  tu_cleanup_dir(F.dir);
  free(F.dir);
}

static __attribute__((unused)) mcp_session_t *session(sink_t *k) {
  k->msgs = json_array();
  return mcp_session_new(F.srv, sink_send, k);
}

/* The first message from index from on answering id (a number), waiting
 * for it on the loop. */
static __attribute__((unused)) json_t *reply_from(sink_t *k, size_t from, json_int_t id) {
  int64_t deadline = tfs_now_ms() + 30000 * tu_slow();
  for (;;) {
    for (size_t i = from; i < json_array_size(k->msgs); i++) {
      json_t *m = json_array_get(k->msgs, i);
      json_t *mid = json_object_get(m, "id");
      if (json_is_integer(mid) && json_integer_value(mid) == id && !json_object_get(m, "method"))
        return m;
    }
    cr_assert_lt(tfs_now_ms(), deadline, "no answer to request %lld", (long long)id);
    uv_run(&F.loop, UV_RUN_ONCE);
  }
}

static __attribute__((unused)) json_t *reply_to(sink_t *k, json_int_t id) {
  return reply_from(k, 0, id);
}

/* Dispatches one message (printf-style text, sent as it is: an integer
 * beyond int64 or a \u0000 reaches the server untouched) without waiting;
 * returns the index in k->msgs of whatever it got in answer. */
static size_t fx_send(mcp_session_t *s, sink_t *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), unused));
static __attribute__((unused)) size_t fx_send(mcp_session_t *s, sink_t *k, const char *fmt, ...) {
  char *text;
  va_list ap;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&text, fmt, ap), 0);
  va_end(ap);
  size_t from = json_array_size(k->msgs);
  mcp_dispatch_text(s, text, strlen(text));
  free(text);
  return from;
}

/* Sends one request (printf-style text) and returns its answer. */
static json_t *rpc(mcp_session_t *s, sink_t *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), unused));
static __attribute__((unused)) json_t *rpc(mcp_session_t *s, sink_t *k, const char *fmt, ...) {
  char *text;
  va_list ap;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&text, fmt, ap), 0);
  va_end(ap);
  json_error_t e;
  json_t *req = json_loads(text, 0, &e);
  cr_assert_not_null(req, "bad test request %s: %s", text, e.text);
  json_int_t id = json_integer_value(json_object_get(req, "id"));
  json_decref(req);
  size_t from = json_array_size(k->msgs);
  mcp_dispatch_text(s, text, strlen(text));
  free(text);
  return reply_from(k, from, id);
}

static __attribute__((unused)) int err_code(json_t *m) {
  return (int)json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}
static __attribute__((unused)) const char *err_msg(json_t *m) {
  const char *s = json_string_value(json_object_get(json_object_get(m, "error"), "message"));
  return s ? s : "";
}
static __attribute__((unused)) json_t *result(json_t *m) {
  return json_object_get(m, "result");
}
static __attribute__((unused)) const char *str_at(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}
/* The text of a tools/call result. */
static __attribute__((unused)) const char *call_text(json_t *m) {
  return str_at(json_array_get(json_object_get(result(m), "content"), 0), "text");
}

/* A task with key and argv in the store, its record then set to state
 * (an ended one with exit code 3 and reason). */
static __attribute__((unused)) void make_task(const char *key, char *const argv[], const char *cwd,
                                              tfs_state_t state, const char *reason,
                                              char id[TFS_ID_MAX + 1]) {
  tfs_task_spec_t spec = {.argv = argv, .cwd = cwd, .key = key};
  spec.min_uptime_ms = spec.grace_ms = -1;
  spec.max_restarts = -1;
  cr_assert_eq(tfs_task_create(F.store, &spec, id, NULL), 0);
  if (state == TFS_QUEUED)
    return;
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(F.store, id, &rec), 0);
  rec.state = state;
  if (tfs_state_terminal(state)) {
    rec.exit_code = state == TFS_COMPLETED ? 0 : 3;
    rec.ended_ms = tfs_now_ms();
    free(rec.reason);
    rec.reason = strdup(reason ? reason : "exited with code 3");
  }
  cr_assert_eq(tfs_task_save(F.store, &rec), 0);
  tfs_record_free(&rec);
}

static __attribute__((unused)) void append(const char *id, const char *line) {
  int fd = tfs_transcript_open_append(F.store, id);
  cr_assert_geq(fd, 0);
  cr_assert_eq(tfs_transcript_append(fd, line, strlen(line), 1), 0);
  close(fd);
}

/* A task that failed (exit 3) after printing line. */
static __attribute__((unused)) void failed_task(const char *key, const char *line,
                                                char id[TFS_ID_MAX + 1]) {
  char *const argv[] = {"false", NULL};
  make_task(key, argv, "/", TFS_FAILED, NULL, id);
  append(id, line);
}

/* n lines of control characters (six bytes each in JSON, seven in the
 * text copy): output no line cut makes small. */
static __attribute__((unused)) void append_ctl(const char *id, int n) {
  char ctl[300];
  for (int i = 0; i < 299; i++)
    ctl[i] = (char)(1 + i % 8);
  ctl[299] = 0;
  for (int i = 0; i < n; i++)
    append(id, ctl);
}

#define INIT_LEGACY                                                                                \
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"       \
  "\"2025-11-25\",\"capabilities\":{}}}"

/* A session opened with initialize (2025-11-25, no capabilities). */
static __attribute__((unused)) mcp_session_t *legacy(sink_t *k) {
  mcp_session_t *s = session(k);
  rpc(s, k, INIT_LEGACY);
  return s;
}

#endif /* TASKFS_TESTS_MCP_FIXTURE_H */
