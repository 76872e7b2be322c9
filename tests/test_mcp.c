/* C-level tests of the MCP server's framing and text hygiene (mcp/text.c),
 * of the wire protocol through the real binary with stdin from a pipe and
 * from a regular file, and of the session interface that transports drive
 * (mcp/session.c, mcp/dispatch.c). The full tool/task/resource behaviour is
 * tested with the official SDK client in tests/mcp/. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "taskfs/taskfs.h"
#include "tests/helpers/testutil.h"

typedef struct {
  int n;
  char *lines[16];
  size_t oversize[16];
} got_t;

static void on_line(void *arg, const char *line, size_t len, size_t oversize) {
  got_t *g = arg;
  cr_assert_lt(g->n, 16);
  g->lines[g->n] = line ? strndup(line, len) : NULL;
  g->oversize[g->n] = oversize;
  g->n++;
}

static void got_free(got_t *g) {
  for (int i = 0; i < g->n; i++)
    free(g->lines[i]);
}

Test(mcp_lines, splits_across_reads_and_drops_cr) {
  mcp_lines_t l;
  got_t g = {0};
  mcp_lines_init(&l, 1024);
  const char *parts[] = {"{\"a\":", "1}\n{\"b\"", ":2}\r\n\n", "tail"};
  for (size_t i = 0; i < 4; i++)
    cr_assert_eq(mcp_lines_feed(&l, parts[i], strlen(parts[i]), on_line, &g), 0);
  cr_assert_eq(g.n, 3);
  cr_assert_str_eq(g.lines[0], "{\"a\":1}");
  cr_assert_str_eq(g.lines[1], "{\"b\":2}");
  cr_assert_str_eq(g.lines[2], "");
  mcp_lines_finish(&l, on_line, &g); /* a last line without newline */
  cr_assert_eq(g.n, 4);
  cr_assert_str_eq(g.lines[3], "tail");
  got_free(&g);
  mcp_lines_free(&l);
}

Test(mcp_lines, oversize_line_is_reported_once_and_not_buffered) {
  mcp_lines_t l;
  got_t g = {0};
  mcp_lines_init(&l, 100);
  char chunk[64];
  memset(chunk, 'x', sizeof chunk);

  for (int i = 0; i < 1000; i++) /* 64,000 bytes of one line */
    mcp_lines_feed(&l, chunk, sizeof chunk, on_line, &g);
  cr_assert_eq(g.n, 0);
  cr_assert_leq(l.cap, 4096, "the buffer stays bounded (cap %zu)", l.cap);
  mcp_lines_feed(&l, "\n{\"ok\":1}\n", 10, on_line, &g);
  cr_assert_eq(g.n, 2);
  cr_assert_null(g.lines[0]);
  cr_assert_eq(g.oversize[0], 64000);
  cr_assert_str_eq(g.lines[1], "{\"ok\":1}");
  got_free(&g);
  mcp_lines_free(&l);
}

Test(mcp_text, invalid_utf8_and_nul_become_replacement_chars) {
  const char in[] = "ok \xff\xfe \xc3\xa9 \xed\xa0\x80 \xc0\xaf a\0b";
  char *out = mcp_text_clean(in, sizeof in - 1, 0);
  cr_assert_str_eq(out, "ok \xef\xbf\xbd\xef\xbf\xbd \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                        "\xef\xbf\xbd\xef\xbf\xbd a\xef\xbf\xbd"
                        "b");
  free(out);
}

Test(mcp_text, long_text_is_cut_at_a_character_boundary_and_marked) {
  char in[1000];
  memset(in, 'a', sizeof in);
  memcpy(in + 9, "\xc3\xa9", 2); /* a 2-byte char across the cut at 10 */
  char *out = mcp_text_clean(in, sizeof in, 10);
  cr_assert_str_eq(out, "aaaaaaaaa\xe2\x80\xa6 [cut 991 bytes]");
  free(out);
  out = mcp_text_clean_prefix("abcdef", 6, 5000, 4);
  cr_assert_str_eq(out, "abcd\xe2\x80\xa6 [cut 4996 bytes]");
  free(out);
}

static char *store_dir;
static void teardown(void) {
  if (store_dir)
    tu_rmrf(store_dir);
}

Test(mcp_wire, pipe_and_file_stdin_get_one_reply_per_request, .fini = teardown) {
  store_dir = tu_tmpdir("mcp");
  const char *input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\\n"
                      "not json\\n"
                      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\\n"
                      "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"nope\"}";
  char *out = NULL;
  int rc = tu_sh(&out, "printf '%s' | %s mcp --state-dir %s/s 2>/dev/null", input, tu_taskfs_bin(),
                 store_dir);
  cr_assert_eq(rc, 0);
  cr_assert_str_eq(out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"
                        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":"
                        "\"parse error: invalid token near 'not' (line 1, column 3); each line "
                        "must be one JSON-RPC 2.0 message\"}}\n"
                        "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"error\":{\"code\":-32601,\"message\":"
                        "\"method 'nope' is not supported by the taskfs MCP server (it offers "
                        "initialize, ping, tools/*, tasks/*, resources/*)\"}}\n");
  free(out);
  /* The same from a regular file, stdout to a regular file. */
  rc = tu_sh(NULL, "printf '%s' > %s/in && %s mcp --state-dir %s/s < %s/in > %s/out 2>/dev/null",
             input, store_dir, tu_taskfs_bin(), store_dir, store_dir, store_dir);
  cr_assert_eq(rc, 0);
  char path[4096];
  snprintf(path, sizeof path, "%s/out", store_dir);
  size_t len;
  char *file = tu_read_file(path, &len);
  cr_assert_not_null(file);
  int lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += file[i] == '\n';
  cr_assert_eq(lines, 3);
  free(file);
}

/* ---- the dispatcher without a transport ------------------------------ */

/* What a transport gets from a session: every message, in order. */
typedef struct {
  int n;
  char *msgs[8];
} sink_t;

static void sink_send(void *arg, const json_t *id, char *data, size_t len) {
  sink_t *k = arg;
  cr_assert_lt(k->n, 8);
  cr_assert_eq(strlen(data), len);
  k->msgs[k->n++] = data;
}

static void sink_free(sink_t *k) {
  for (int i = 0; i < k->n; i++)
    free(k->msgs[i]);
}

static int dispatch(mcp_session_t *s, const char *text) {
  return mcp_dispatch_text(s, text, strlen(text));
}

/* The interface a second transport (HTTP) builds on: two sessions on one
 * server each get their own replies; a request waits in one session
 * whatever the other does with the same id; closing a session drops its
 * waiting requests without a word; the server ends idle with every handle
 * closed. */
Test(mcp_dispatch, sessions_on_one_server_are_separate, .fini = teardown) {
  store_dir = tu_tmpdir("mcpd");
  uv_loop_t loop;
  cr_assert_eq(uv_loop_init(&loop), 0);
  mcp_server_config_t cfg = {.loop = &loop, .state_dir = store_dir, .role = "mcp-test"};
  mcp_server_t *srv;
  cr_assert_eq(mcp_server_open(&cfg, &srv), 0);
  /* A task that stays queued (nothing launches it), so a read waits. */
  tfs_store_t *store;
  cr_assert_eq(tfs_store_open(store_dir, &store), 0);
  char *const argv[] = {"true", NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = "/",
                          .key = "waits",
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1};
  char id[TFS_ID_MAX + 1];
  int existed;
  cr_assert_eq(tfs_task_create(store, &spec, id, &existed), 0);
  tfs_store_close(store);

  sink_t ka = {0}, kb = {0};
  mcp_session_t *a = mcp_session_new(srv, sink_send, &ka);
  mcp_session_t *b = mcp_session_new(srv, sink_send, &kb);
  cr_assert_eq(dispatch(a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), 1);
  cr_assert_eq(dispatch(a, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"), 0);
  cr_assert_eq(dispatch(b, "not json"), 1);
  cr_assert_eq(ka.n, 1);
  cr_assert_str_eq(ka.msgs[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
  cr_assert_eq(kb.n, 1);
  cr_assert(strstr(kb.msgs[0], "\"id\":null,\"error\":{\"code\":-32700"));

  const char *read =
      "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"read_managed_task\",\"arguments\":{\"taskKey\":\"waits\",\"waitMs\":40000}}}";
  cr_assert_eq(dispatch(b, read), 1);
  cr_assert_eq(dispatch(a, read), 1); /* a's is the newer of two requests with id 7 */
  cr_assert_eq(ka.n + kb.n, 2, "both reads wait");
  const char *cancel = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
                       "{\"requestId\":7}}";
  cr_assert_eq(dispatch(b, cancel), 0);
  cr_assert_not(mcp_server_idle(srv), "a's read still waits after b cancelled its own id 7");
  mcp_session_close(a);
  cr_assert(mcp_server_idle(srv));
  cr_assert_eq(ka.n + kb.n, 2, "dropped requests are not answered");

  mcp_server_shutdown(srv);
  uv_run(&loop, UV_RUN_NOWAIT); /* the close callbacks of timers and watches */
  mcp_server_free(srv);         /* closes b */
  cr_assert_eq(uv_loop_close(&loop), 0, "no handle is left open");
  sink_free(&ka);
  sink_free(&kb);
}
