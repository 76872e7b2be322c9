/* C-level tests of the MCP server's framing and text hygiene (mcp/text.c),
 * of the wire protocol through the real binary with stdin from a pipe and
 * from a regular file, and of the session interface that transports drive
 * (mcp/session.c, mcp/dispatch.c). The full tool/task/resource behaviour is
 * tested with the official SDK client in tests/mcp/. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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
                        "initialize, ping, tools/*, tasks/*, resources/*, prompts/*, "
                        "completion/complete)\"}}\n");
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
  char *msgs[16];
} sink_t;

static void sink_send(void *arg, const json_t *id, char *data, size_t len) {
  sink_t *k = arg;
  cr_assert_lt(k->n, 16);
  cr_assert_eq(strlen(data), len);
  k->msgs[k->n++] = data;
}

static void sink_free(sink_t *k) {
  for (int i = 0; i < k->n; i++)
    free(k->msgs[i]);
}

/* A task with key that stays queued: no supervisor is launched for it. */
static void create_queued(tfs_store_t *store, const char *key, char id[TFS_ID_MAX + 1]) {
  char *const argv[] = {"true", NULL};
  tfs_task_spec_t spec = {.argv = argv, .cwd = "/", .key = key};
  spec.min_uptime_ms = spec.grace_ms = -1; /* the defaults */
  spec.max_restarts = -1;
  cr_assert_eq(tfs_task_create(store, &spec, id, NULL), 0);
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
  char id[TFS_ID_MAX + 1];
  create_queued(store, "waits", id);
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

/* Runs the loop until the sink holds n messages (bounded). */
static void run_until(uv_loop_t *loop, sink_t *k, int n) {
  int64_t deadline = tfs_now_ms() + 30000 * tu_slow();
  while (k->n < n && tfs_now_ms() < deadline)
    uv_run(loop, UV_RUN_ONCE);
  cr_assert_geq(k->n, n, "no answer within 30 s");
}

/* ---- waiting on the server's watch, with and without inotify ----------- */

/* A server on its own loop over a store with one queued task that no
 * supervisor runs: the test plays the supervisor, appending output and
 * saving records as it does. */
typedef struct {
  uv_loop_t loop;
  mcp_server_t *srv;
  mcp_session_t *sess;
  sink_t k;
  tfs_store_t *store;
  char id[TFS_ID_MAX + 1];
} fx_srv_t;

static void fx_srv_open(fx_srv_t *f, int no_inotify) {
  memset(f, 0, sizeof *f);
  if (no_inotify)
    setenv("TASKFS_NO_INOTIFY", "1", 1);
  else
    unsetenv("TASKFS_NO_INOTIFY");
  store_dir = tu_tmpdir("mcpw");
  cr_assert_eq(uv_loop_init(&f->loop), 0);
  mcp_server_config_t cfg = {.loop = &f->loop, .state_dir = store_dir, .role = "mcp-test"};
  cr_assert_eq(mcp_server_open(&cfg, &f->srv), 0);
  f->sess = mcp_session_new(f->srv, sink_send, &f->k);
  cr_assert_eq(tfs_store_open(store_dir, &f->store), 0);
  create_queued(f->store, "w", f->id);
}

static void fx_srv_close(fx_srv_t *f) {
  mcp_server_shutdown(f->srv);
  uv_run(&f->loop, UV_RUN_NOWAIT);
  mcp_server_free(f->srv);
  cr_assert_eq(uv_loop_close(&f->loop), 0, "no handle is left open");
  tfs_store_close(f->store);
  sink_free(&f->k);
}

/* As the supervisor does: the line, then its counters in the record
 * (what the hub's task feed tells as progress). */
static void fx_append(fx_srv_t *f, const char *line) {
  int fd = tfs_transcript_open_append(f->store, f->id);
  cr_assert_geq(fd, 0);
  cr_assert_eq(tfs_transcript_append(fd, line, strlen(line), 1), 0);
  close(fd);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(f->store, f->id, &rec), 0);
  rec.lines++;
  rec.bytes += (int64_t)strlen(line) + 1;
  cr_assert_eq(tfs_task_save(f->store, &rec), 0);
  tfs_record_free(&rec);
}

static void fx_save_state(fx_srv_t *f, tfs_state_t state) {
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(f->store, f->id, &rec), 0);
  rec.state = state;
  if (tfs_state_terminal(state)) {
    rec.exit_code = 0;
    rec.ended_ms = tfs_now_ms();
  }
  cr_assert_eq(tfs_task_save(f->store, &rec), 0);
  tfs_record_free(&rec);
}

static void fx_call(fx_srv_t *f, int id, const char *method, const char *params_fmt) {
  char params[1024], msg[1400];
  snprintf(params, sizeof params, params_fmt, f->id, f->id);
  snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}", id,
           method, params);
  cr_assert_eq(dispatch(f->sess, msg), 1);
}

/* A long-poll with untilPattern wakes on new output, one without a
 * pattern on the end. Nothing is answered before its time. */
static void long_poll_wakes(int no_inotify) {
  fx_srv_t f;
  fx_srv_open(&f, no_inotify);
  fx_call(&f, 1, "tools/call",
          "{\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
          "\"untilPattern\":\"^ready$\",\"waitMs\":40000}}");
  fx_call(&f, 2, "tools/call",
          "{\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\",\"waitMs\":40000}}");
  uv_run(&f.loop, UV_RUN_NOWAIT);
  cr_assert_eq(f.k.n, 0, "both wait");
  fx_append(&f, "not yet");
  fx_append(&f, "ready");
  run_until(&f.loop, &f.k, 1);
  cr_assert(strstr(f.k.msgs[0], "\"id\":1"), "%s", f.k.msgs[0]);
  cr_assert(strstr(f.k.msgs[0], "\\\"match\\\":{\\\"line\\\":2,\\\"text\\\":\\\"ready\\\"}"), "%s",
            f.k.msgs[0]);
  cr_assert(strstr(f.k.msgs[0], "\\\"timedOut\\\":false"), "%s", f.k.msgs[0]);
  cr_assert_eq(f.k.n, 1, "output does not end the other read");
  fx_save_state(&f, TFS_COMPLETED);
  run_until(&f.loop, &f.k, 2);
  cr_assert(strstr(f.k.msgs[1], "\"id\":2"), "%s", f.k.msgs[1]);
  cr_assert(strstr(f.k.msgs[1], "\\\"state\\\":\\\"completed\\\""), "%s", f.k.msgs[1]);
  cr_assert(mcp_server_idle(f.srv));
  fx_srv_close(&f);
}

Test(mcp_wait, long_poll_wakes_on_output_and_end, .fini = teardown, .timeout = 60) {
  long_poll_wakes(0);
}

Test(mcp_wait, long_poll_wakes_without_inotify, .fini = teardown, .timeout = 60) {
  long_poll_wakes(1);
}

/* Runs the loop until a message after the first from holds what
 * (bounded); returns its index. */
static int run_until_has(fx_srv_t *f, int from, const char *what) {
  int64_t deadline = tfs_now_ms() + 30000 * tu_slow();
  for (;;) {
    for (int i = from; i < f->k.n; i++)
      if (strstr(f->k.msgs[i], what))
        return i;
    cr_assert_lt(tfs_now_ms(), deadline, "no message with %s within 30 s", what);
    uv_run(&f->loop, UV_RUN_ONCE);
  }
}

/* Subscriptions: the transcript's growth and the record's change each
 * send notifications/resources/updated for their own resource (output
 * changes the record's counters too, so the record's may come with it). */
static void subscriptions_notify(int no_inotify) {
  fx_srv_t f;
  fx_srv_open(&f, no_inotify);
  fx_call(&f, 1, "resources/subscribe", "{\"uri\":\"taskfs://tasks/%s/transcript\"}");
  fx_call(&f, 2, "resources/subscribe", "{\"uri\":\"taskfs://tasks/%s/record\"}");
  cr_assert_eq(f.k.n, 2, "both subscribed at once");
  fx_append(&f, "some output");
  int at = run_until_has(&f, 2, "/transcript\"");
  cr_assert(strstr(f.k.msgs[at], "notifications/resources/updated"), "%s", f.k.msgs[at]);
  /* Whatever the output brought is told; then the state change. */
  uv_run(&f.loop, UV_RUN_NOWAIT);
  int n = f.k.n;
  fx_save_state(&f, TFS_RUNNING);
  at = run_until_has(&f, n, "/record\"");
  cr_assert(strstr(f.k.msgs[at], "notifications/resources/updated"), "%s", f.k.msgs[at]);
  n = f.k.n;
  fx_call(&f, 3, "resources/unsubscribe", "{\"uri\":\"taskfs://tasks/%s/transcript\"}");
  fx_call(&f, 4, "resources/unsubscribe", "{\"uri\":\"taskfs://tasks/%s/record\"}");
  cr_assert_eq(f.k.n, n + 2);
  fx_srv_close(&f);
}

Test(mcp_wait, subscriptions_notify_record_and_transcript, .fini = teardown, .timeout = 60) {
  subscriptions_notify(0);
}

Test(mcp_wait, subscriptions_notify_without_inotify, .fini = teardown, .timeout = 60) {
  subscriptions_notify(1);
}

/* ---- a launch on the thread pool beside a store refresh ------------------ */

/* The interleaving, made deterministic: this test binary interposes
 * openat64(), which core opens files in the store with. Armed, the first
 * call a thread other than the test's own makes relative to the store's
 * tasks/ directory (the launch on the libuv thread pool, about to open a
 * task file) stops there, with the directory fd it was given in hand, until
 * the test has had the loop thread refresh the store. */
static struct {
  int armed;
  pid_t main_tid;
  dev_t dev;
  ino_t ino;
  int fd; /* the dirfd the paused call holds */
  sem_t reached, go;
} g_race;

static int is_tasks_dir(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == g_race.dev && st.st_ino == g_race.ino;
}

int openat64(int dirfd, const char *path, int flags, ...) {
  int mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, int);
    va_end(ap);
  }
  if (__atomic_load_n(&g_race.armed, __ATOMIC_ACQUIRE) && gettid() != g_race.main_tid &&
      is_tasks_dir(dirfd) && __atomic_exchange_n(&g_race.armed, 0, __ATOMIC_ACQ_REL)) {
    g_race.fd = dirfd;
    sem_post(&g_race.reached);
    while (sem_wait(&g_race.go) && errno == EINTR)
      ;
  }
  return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static int sem_wait_s(sem_t *s, int seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += seconds;
  int rc;
  while ((rc = sem_timedwait(s, &ts)) && errno == EINTR)
    ;
  return rc;
}

/* The store is removed and recreated while a start's launch runs on the
 * thread pool. The next request refreshes the store on the loop thread,
 * which swaps the handle's directory fds and closes the old ones: a launch
 * that shared that handle would go on with a closed fd (or with whatever
 * the number names next). Each thread has its own handle, so the fd the
 * launch holds stays open. */
Test(mcp_race, a_launch_keeps_its_store_through_a_refresh, .fini = teardown, .timeout = 60) {
  store_dir = tu_tmpdir("mcpr");
  char dir[2048], old[2100], tasks[2100];
  snprintf(dir, sizeof dir, "%s/s", store_dir);
  snprintf(old, sizeof old, "%s/s.old", store_dir);
  snprintf(tasks, sizeof tasks, "%s/tasks", dir);
  setenv("TASKFS_SUPERVISOR_EXE", tu_taskfs_bin(), 1);
  uv_loop_t loop;
  cr_assert_eq(uv_loop_init(&loop), 0);
  mcp_server_config_t cfg = {.loop = &loop, .state_dir = dir, .role = "mcp-test"};
  mcp_server_t *srv;
  cr_assert_eq(mcp_server_open(&cfg, &srv), 0);
  sink_t k = {0};
  mcp_session_t *s = mcp_session_new(srv, sink_send, &k);

  struct stat st;
  cr_assert_eq(stat(tasks, &st), 0);
  g_race.dev = st.st_dev;
  g_race.ino = st.st_ino;
  g_race.main_tid = gettid();
  sem_init(&g_race.reached, 0, 0);
  sem_init(&g_race.go, 0, 0);
  __atomic_store_n(&g_race.armed, 1, __ATOMIC_RELEASE);
  cr_assert_eq(dispatch(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
                           "\"name\":\"start_managed_task\",\"arguments\":{\"taskKey\":\"race\","
                           "\"command\":[\"true\"],\"waitMs\":0}}}"),
               1);
  cr_assert_eq(sem_wait_s(&g_race.reached, 20), 0, "the launch never opened a task file");

  /* Removed and recreated, then a request: the loop thread refreshes. */
  cr_assert_eq(rename(dir, old), 0);
  tfs_store_t *fresh;
  cr_assert_eq(tfs_store_open(dir, &fresh), 0);
  tfs_store_close(fresh);
  cr_assert_eq(dispatch(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"), 1);
  cr_assert_eq(k.n, 1, "ping is answered at once");
  int open_still = fcntl(g_race.fd, F_GETFD) != -1;
  cr_expect(open_still, "the refresh closed the directory fd the launch was using");

  /* The old store goes for good, so the launch ends quickly either way. */
  tu_rmrf(old);
  sem_post(&g_race.go);
  run_until(&loop, &k, 2);
  cr_assert(strstr(k.msgs[1], "\"id\":1"), "%s", k.msgs[1]);

  mcp_server_shutdown(srv);
  uv_run(&loop, UV_RUN_NOWAIT);
  mcp_server_free(srv);
  cr_assert_eq(uv_loop_close(&loop), 0, "no handle is left open");
  sink_free(&k);
}
