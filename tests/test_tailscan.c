/* Tail reads and follows of a big transcript (issue 26 item 3): they read
 * what the line index says, not the file from byte 0, they run off the
 * server's loop, and one whose client left stops. The binaries run under
 * tests/preload/gate_pread.so (TFS_GATE): it logs every read of a
 * transcript and, while the test says so, holds each until the test lets
 * it go, so what a server does during a scan is seen without a clock.
 * - an MCP read with tailLines, held: the same server answers a ping over
 *   stdio (`taskfs mcp`), and tools/list over HTTP (`taskfs serve`); so
 *   does it while a wait for untilPattern scans, held;
 * - the bytes such a read takes from a 20 MB transcript are a few
 *   checkpoint intervals, not the file;
 * - an HTTP follow whose open must scan the whole file (its index was
 *   removed) and whose client leaves: the scan stops, far before the end. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers/serve.h"
#include "tests/helpers/testutil.h"

#define LINES 3000000 /* seq 1 LINES: 20.9 MB */

static ts_serve_t S;
static char gate[PATH_MAX], preload[PATH_MAX + 32], gate_env[PATH_MAX + 16];

static void setup(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  cr_assert_gt(n, 0);
  exe[n] = '\0';
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s/preload/gate_pread.so", dirname(exe));
  cr_assert_eq(access(preload + strlen("LD_PRELOAD="), R_OK), 0, "no %s", preload);
  char *g = tu_tmpdir("gate");
  snprintf(gate, sizeof gate, "%s", g);
  free(g);
  snprintf(gate_env, sizeof gate_env, "TFS_GATE=%s", gate);
  const char *const env[] = {preload, gate_env, NULL};
  ts_serve_start(&S, NULL, NULL, env);
}

static void gate_path(char *p, const char *name) {
  snprintf(p, PATH_MAX + 16, "%s/%s", gate, name);
}

static void gate_file(const char *name) {
  char p[PATH_MAX + 16];
  gate_path(p, name);
  cr_assert_eq(tu_write_file(p, "", 0), 0);
}

static void gate_rm(const char *name) {
  char p[PATH_MAX + 16];
  gate_path(p, name);
  unlink(p);
}

static int gate_has(void *arg) {
  char p[PATH_MAX + 16];
  gate_path(p, arg);
  return access(p, F_OK) == 0;
}

static int gate_lacks(void *arg) {
  return !gate_has(arg);
}

/* Lets every read go from now on. */
static void gate_open(void) {
  gate_rm("each");
  gate_file("go");
}

static void teardown(void) {
  gate_open();
  int code = ts_serve_stop(&S);
  if (code != -1)
    cr_expect_eq(code, 0, "taskfs serve exited %d on SIGTERM", code);
  tu_rmrf(gate);
}

TestSuite(tailscan, .init = setup, .fini = teardown, .timeout = 240);

/* The transcript reads logged since the log was last removed: their count
 * and their bytes. */
static void reads(long *count, long long *bytes) {
  char p[PATH_MAX + 16];
  gate_path(p, "log");
  char *text = tu_read_file(p, NULL);
  *count = 0;
  *bytes = 0;
  for (char *l = text; l && *l;) {
    long long off, len;
    if (sscanf(l, "%lld %lld", &off, &len) == 2) {
      (*count)++;
      *bytes += len;
    }
    char *nl = strchr(l, '\n');
    l = nl ? nl + 1 : l + strlen(l);
  }
  free(text);
}

/* A task that printed 1..LINES and ended; its id. */
static void big_task(char id[32]) {
  char *out = NULL;
  int rc = tu_sh(&out, "'%s' run --state-dir '%s' -- seq 1 %d", tu_taskfs_bin(), S.store, LINES);
  cr_assert_eq(rc, 0, "run: %s", out);
  snprintf(id, 32, "%.15s", out);
  free(out);
  rc = tu_sh(&out, "'%s' wait --state-dir '%s' %s", tu_taskfs_bin(), S.store, id);
  cr_assert_eq(rc, 0, "wait: %s", out);
  free(out);
}

/* ---- `taskfs mcp` over stdio, under the shim -------------------------- */

typedef struct {
  pid_t pid;
  int in, out;
  char buf[1 << 16];
  size_t len;
} stdio_t;

static void stdio_send(stdio_t *c, const char *line) {
  size_t n = strlen(line);
  cr_assert_eq(write(c->in, line, n), (ssize_t)n);
  cr_assert_eq(write(c->in, "\n", 1), 1);
}

/* The next message (one line), or NULL when none comes within 20 s. */
static json_t *stdio_recv(stdio_t *c) {
  for (;;) {
    char *nl = memchr(c->buf, '\n', c->len);
    if (nl) {
      json_t *j = json_loadb(c->buf, (size_t)(nl - c->buf), 0, NULL);
      c->len -= (size_t)(nl - c->buf) + 1;
      memmove(c->buf, nl + 1, c->len);
      return j;
    }
    struct pollfd p = {.fd = c->out, .events = POLLIN};
    if (poll(&p, 1, 20000) <= 0)
      return NULL;
    if (c->len == sizeof c->buf)
      c->len = 0; /* a line too long for this test: dropped */
    ssize_t r = read(c->out, c->buf + c->len, sizeof c->buf - c->len);
    if (r <= 0)
      return NULL;
    c->len += (size_t)r;
  }
}

static void stdio_start(stdio_t *c) {
  int in[2], out[2];
  cr_assert_eq(pipe(in), 0);
  cr_assert_eq(pipe(out), 0);
  c->len = 0;
  c->pid = fork();
  cr_assert_geq(c->pid, 0);
  if (c->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    putenv(preload);
    putenv(gate_env);
    execl(tu_taskfs_bin(), "taskfs", "mcp", "--state-dir", S.store, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  c->in = in[1];
  c->out = out[0];
  stdio_send(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
                "\"name\":\"t\",\"version\":\"1\"}}}");
  json_t *m = stdio_recv(c);
  cr_assert_not_null(m, "no answer to initialize");
  json_decref(m);
  stdio_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static void stdio_stop(stdio_t *c) {
  close(c->in);
  close(c->out);
  int st;
  if (waitpid(c->pid, &st, WNOHANG) == 0) {
    kill(c->pid, SIGTERM);
    waitpid(c->pid, &st, 0);
  }
}

static json_int_t msg_id(json_t *m) {
  return json_integer_value(json_object_get(m, "id"));
}

static const char *READ_TAIL =
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
    "\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
    "\"tailLines\":3}}}";

/* Sends the tools/call read (id 2, fmt with the big task's id) to a
 * stdio server while every transcript read is held: a ping (id 3) is
 * answered first; once the reads go, the read's answer holds expect. */
static void ping_while_held(const char *fmt, const char *expect) {
  char id[32], line[600];
  big_task(id);
  stdio_t c;
  stdio_start(&c);
  gate_file("each");
  snprintf(line, sizeof line, fmt, id);
  stdio_send(&c, line);
  cr_assert(tu_wait_until(gate_has, "held", 20000), "the read never read the transcript");
  stdio_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
  json_t *m = stdio_recv(&c);
  cr_assert_not_null(m, "no answer to the ping while the read is held");
  cr_expect_eq(msg_id(m), 3, "the ping is answered first: %s", json_dumps(m, 0));
  json_decref(m);
  gate_open();
  m = stdio_recv(&c);
  cr_assert_not_null(m, "the read was never answered");
  char *text = json_dumps(m, JSON_COMPACT);
  cr_expect_eq(msg_id(m), 2);
  cr_expect(strstr(text, expect), "%s in: %.600s", expect, text);
  free(text);
  json_decref(m);
  stdio_stop(&c);
}

/* The old server counted the lines before the tail on its loop: the ping
 * waited for the held read (here: forever). */
Test(tailscan, mcp_stdio_answers_a_ping_while_a_tail_read_is_held) {
  ping_while_held(READ_TAIL, "\"3000000\"");
}

#define MODERN_META                                                                                \
  "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                         \
  "\"io.modelcontextprotocol/clientCapabilities\":{}}"

Test(tailscan, mcp_http_answers_while_a_tail_read_is_held) {
  char id[32], body[600], req[2000];
  big_task(id);
  gate_file("each");
  snprintf(body, sizeof body,
           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
           "\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\",\"tailLines\":3}," MODERN_META
           "}}",
           id);
  int n = snprintf(req, sizeof req,
                   "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
                   "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                   "Accept: application/json, text/event-stream\r\n"
                   "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                   "Mcp-Name: read_managed_task\r\nContent-Length: %zu\r\n\r\n%s",
                   S.port, S.token, strlen(body), body);
  int fd = ts_connect(S.port);
  cr_assert_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
  cr_assert(tu_wait_until(gate_has, "held", 20000), "the read never read the transcript");
  /* 2026-07-28 has no ping: its smallest request is tools/list. */
  char *a = ts_post_mcp(
      &S, S.token, "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n",
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{" MODERN_META "}}");
  cr_expect_eq(ts_status(a), 200, "tools/list while the tail read is held: %.300s", a);
  cr_expect(strstr(ts_body(a), "read_managed_task"), "%.300s", a);
  free(a);
  gate_open();
  a = ts_read_all(fd, 20000);
  cr_expect(strstr(a, "3000000"), "the last lines: %.600s", a);
  free(a);
  close(fd);
}

/* A wait for untilPattern over the big transcript from line 1
 * (sinceLine 0): its follower's open and every batch of lines are read by
 * scans on the thread pool. The old server read each batch on its loop:
 * the ping waited for the held read (here: forever). */
Test(tailscan, mcp_stdio_answers_a_ping_while_an_until_scan_is_held) {
  ping_while_held("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
                  "\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
                  "\"sinceLine\":0,\"untilPattern\":\"^5$\",\"waitMs\":20000,\"tailLines\":1}}}",
                  "\"match\":{\"line\":5,");
}

/* A tail of 3 lines reads the end of the file and up to a checkpoint
 * interval (1 MiB) or two before it, not the 20 MB from byte 0. */
Test(tailscan, a_tail_read_reads_the_tail_not_the_file) {
  char id[32], line[400];
  big_task(id);
  stdio_t c;
  stdio_start(&c);
  gate_rm("log");
  snprintf(line, sizeof line, READ_TAIL, id);
  stdio_send(&c, line);
  json_t *m = stdio_recv(&c);
  cr_assert_not_null(m, "the read was never answered");
  char *text = json_dumps(m, 0);
  cr_expect(strstr(text, "\"3000000\""), "the last lines: %.600s", text);
  free(text);
  json_decref(m);
  long count;
  long long bytes;
  reads(&count, &bytes);
  cr_expect_lt(bytes, 4ll << 20, "a tail of 3 lines read %lld bytes of the transcript in %ld reads",
               bytes, count);
  stdio_stop(&c);
}

/* A follow of an ended task whose index is gone: its open scans the file
 * (and rebuilds the index). The client leaves while the first block is
 * held; every read after is let go one at a time until none comes: the
 * scan stopped far before the file's end. A server that does not stop
 * it reads every block (here about 80). */
Test(tailscan, a_follow_whose_client_leaves_stops_its_scan) {
  char id[32], p[PATH_MAX];
  big_task(id);
  snprintf(p, sizeof p, "%s/tasks/%s/lines.idx", S.store, id);
  cr_assert(unlink(p) == 0 || errno == ENOENT, "cannot remove %s", p);
  struct stat st;
  snprintf(p, sizeof p, "%s/tasks/%s/transcript", S.store, id);
  cr_assert_eq(stat(p, &st), 0);
  long blocks = (long)(st.st_size / (256 << 10));
  gate_file("each");
  gate_rm("log");
  char path[200];
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1&offset=%lld", id,
           (long long)st.st_size);
  ts_stream_t s;
  ts_stream_open(&s, &S, path, NULL);
  cr_assert(tu_wait_until(gate_has, "held", 20000), "the follow's open never read");
  ts_stream_close(&s); /* the client leaves */
  long count = 0;
  long long bytes;
  for (long i = 0; i <= blocks + 8; i++) {
    gate_file("go");
    cr_assert(tu_wait_until(gate_lacks, "go", 20000), "a held read was not let go");
    if (!tu_wait_until(gate_has, "held", 2000))
      break; /* no more reads */
  }
  reads(&count, &bytes);
  cr_expect_lt(count, blocks / 2, "the scan of a follow whose client left read %ld of %ld blocks",
               count, blocks);
}
