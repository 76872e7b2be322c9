/* libFuzzer target: the MCP server's input, from the bytes on stdin to the
 * dispatcher's answers. The framing and text hygiene (mcp/text.c): the
 * bounded line splitter, fed the input in fuzzer-chosen chunk sizes, must
 * deliver exactly the lines a naive split gives (a trailing '\r' dropped),
 * report each line longer than the limit once with its length and never
 * buffer more than the limit; and the sanitiser every transcript line
 * passes before it goes into JSON must give NUL-free valid UTF-8 (jansson
 * accepts it) within its size bound. Then each line is dispatched, as the
 * server dispatches one, to a session of a server over an empty store
 * (made once per process) that holds one ended task, key "fz", with a few
 * lines (one of 4000 'a'): both protocol revisions (the era layer's
 * envelope checks and pins, era.c), the argument checks against the tool
 * schemas (validate.c) and every number they convert (built with UBSan
 * that aborts: sinceLine at the int64 maximum overflowed the paging),
 * untilPattern compiled and matched within its limits (pattern.c,
 * until.c), listen filters, roots in inputResponses, tasks methods. Every
 * message the server sends must be JSON. A line naming start_managed_task
 * is only checked against that tool's schema, never dispatched: a start
 * would create tasks and fork supervisors. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/internal.h"
#include "fuzz/check.h"

/* The server every input is dispatched to, and what it sent. */
static uv_loop_t loop;
static mcp_server_t *srv;

static void sink(void *arg, const json_t *id, char *data, size_t len) {
  json_error_t e;
  json_t *m = json_loadb(data, len, 0, &e);
  CHECK(m); /* the server only ever sends JSON */
  json_decref(m);
  free(data);
  (*(size_t *)arg)++;
}

/* The task the seeds read (key "fz"), ended, made through the core. */
static void make_task(const char *dir) {
  static const char *const lines[] = {"error: fuzz line one", "abab done",
                                      "listening on port 8080"};
  tfs_store_t *store;
  CHECK(tfs_store_open(dir, &store) == 0);
  char *argv[] = {"true", NULL}, id[TFS_ID_MAX + 1];
  tfs_task_spec_t spec = {.argv = argv, .cwd = "/", .key = "fz"};
  spec.min_uptime_ms = spec.grace_ms = -1;
  spec.max_restarts = -1;
  CHECK(tfs_task_create(store, &spec, id, NULL) == 0);
  tfs_record_t rec;
  CHECK(tfs_task_load(store, id, &rec) == 0);
  rec.state = TFS_COMPLETED;
  rec.exit_code = 0;
  rec.ended_ms = tfs_now_ms();
  CHECK(tfs_task_save(store, &rec) == 0);
  tfs_record_free(&rec);
  int fd = tfs_transcript_open_append(store, id);
  CHECK(fd >= 0);
  char as[4002];
  memset(as, 'a', 4000);
  memcpy(as + 4000, "!", 2);
  CHECK(tfs_transcript_append(fd, lines[0], strlen(lines[0]), 1) == 0);
  CHECK(tfs_transcript_append(fd, as, 4001, 1) == 0);
  CHECK(tfs_transcript_append(fd, lines[1], strlen(lines[1]), 1) == 0);
  CHECK(tfs_transcript_append(fd, lines[2], strlen(lines[2]), 1) == 0);
  close(fd);
  tfs_store_close(store);
}

static void server_once(void) {
  if (srv)
    return;
  char dir[] = "/tmp/taskfs-fuzz-mcp-XXXXXX";
  CHECK(mkdtemp(dir));
  make_task(dir);
  CHECK(uv_loop_init(&loop) == 0);
  mcp_server_config_t cfg = {.loop = &loop, .state_dir = dir, .role = "fuzz"};
  CHECK(mcp_server_open(&cfg, &srv) == 0);
}

/* One line as the server takes it. */
static void dispatch(mcp_session_t *s, const char *line, size_t len) {
  if (memmem(line, len, "start_managed_task", 18)) {
    json_error_t e;
    json_t *m = json_loadb(line, len, 0, &e);
    json_t *args = json_object_get(json_object_get(m, "params"), "arguments");
    char msg[600];
    if (json_is_object(args))
      mcp_validate_args(mcp_tool_input_schema(srv, "start_managed_task"), args, msg, sizeof msg);
    json_decref(m);
    return;
  }
  mcp_dispatch_text(s, line, len);
}

typedef struct {
  const char *in; /* the whole input after the header bytes */
  size_t inlen;
  size_t pos; /* where the next expected line starts */
  size_t limit;
  size_t ndelivered;
  size_t maxclean;
  mcp_session_t *sess;
} ctx_t;

static void check_clean(const char *s, size_t len, size_t max) {
  char *c = mcp_text_clean(s, len, max);
  CHECK(c);
  size_t n = strlen(c);
  /* Each byte kept becomes at most 3, plus the cut marker. */
  CHECK(n <= (max && len > max ? max : len) * 3 + 64);
  json_t *j = json_stringn(c, n);
  CHECK(j); /* valid UTF-8, or jansson would refuse it */
  json_decref(j);
  free(c);
}

static void on_line(void *arg, const char *line, size_t len, size_t oversize) {
  ctx_t *c = arg;
  CHECK(c->pos <= c->inlen);
  const char *start = c->in + c->pos;
  const char *nl = memchr(start, '\n', c->inlen - c->pos);
  size_t want = nl ? (size_t)(nl - start) : c->inlen - c->pos;
  if (line == NULL) {
    CHECK(oversize == want);
    CHECK(want > c->limit);
  } else {
    CHECK(oversize == 0);
    size_t w = want;
    if (w && start[w - 1] == '\r')
      w--;
    CHECK(want <= c->limit);
    CHECK(len == w && memcmp(line, start, len) == 0);
    check_clean(line, len, c->maxclean);
    dispatch(c->sess, line, len);
  }
  c->pos += want + (nl ? 1 : 0);
  c->ndelivered++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  ctx_t c = {(const char *)data + 3, size - 3, 0, (size_t)data[0] * 16 + 1, 0,
             (size_t)data[1] % 128,  NULL};
  size_t chunk = (size_t)data[2] + 1;
  server_once();
  size_t sent = 0;
  c.sess = mcp_session_new(srv, sink, &sent);
  CHECK(c.sess);
  mcp_lines_t l;
  mcp_lines_init(&l, c.limit);
  for (size_t off = 0; off < c.inlen; off += chunk) {
    size_t n = c.inlen - off < chunk ? c.inlen - off : chunk;
    CHECK(mcp_lines_feed(&l, c.in + off, n, on_line, &c) == 0);
    CHECK(l.len <= c.limit);
  }
  mcp_lines_finish(&l, on_line, &c);
  CHECK(c.pos == c.inlen);
  mcp_lines_free(&l);
  /* What waits (a listen, a long-poll) ends with the session; the loop
   * runs the close callbacks. */
  mcp_session_close(c.sess);
  uv_run(&loop, UV_RUN_NOWAIT);
  return 0;
}
