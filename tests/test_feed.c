/* The feed of `taskfs serve` while a follow is being opened (http/feed.c):
 * the open counts every line before the follow's start, so it runs on the
 * loop's thread pool, and the server answers everyone else meanwhile. The
 * binary runs under tests/preload/gate_pread.so, which holds that count's
 * first read until the test lets it go: what the server does during an
 * open is seen without a clock. Each case: requests answered while an
 * open is held and lines numbered from the start of the file after it; a
 * follow whose client leaves while it opens; the server told to stop,
 * and told again (it exits at once), while an open is held. Under
 * `make asan` the last two are what would show a completion that touches
 * freed memory. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers/serve.h"
#include "tests/helpers/testutil.h"

static ts_serve_t S;
static char gate[PATH_MAX], preload[PATH_MAX + 32], gate_env[PATH_MAX + 16];

/* The shim beside this test's binary (build/tests/preload/), so that the
 * ASan build's test finds its own. */
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

static void teardown(void) {
  /* A held read must not keep the server from ending. */
  char go[PATH_MAX + 8];
  snprintf(go, sizeof go, "%s/go", gate);
  tu_write_file(go, "", 0);
  int code = ts_serve_stop(&S);
  if (code != -1)
    cr_expect_eq(code, 0, "taskfs serve exited %d on SIGTERM", code);
  tu_rmrf(gate);
}

TestSuite(feed, .init = setup, .fini = teardown, .timeout = 120);

static void gate_file(const char *name) {
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/%s", gate, name);
  cr_assert_eq(tu_write_file(p, "", 0), 0);
}

static int gate_held(void *arg) {
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/held", gate);
  return access(p, F_OK) == 0;
}

/* A task that prints lines 1..n, then "after" once DIR/go exists; returns
 * once all n lines are in its transcript, with its size. */
static off_t run_counting(char id[32], int n) {
  char *out = NULL;
  int rc = tu_sh(&out,
                 "cd '%s' && '%s' run --state-dir '%s' -- sh -c 'seq 1 %d; "
                 "while [ ! -e go ]; do sleep 0.05; done; echo after'",
                 S.dir, tu_taskfs_bin(), S.store, n);
  cr_assert_eq(rc, 0, "run: %s", out);
  snprintf(id, 32, "%.15s", out);
  free(out);
  rc = tu_sh(&out,
             "cd '%s/tasks/%s' && until [ \"$(wc -l < transcript)\" -eq %d ]; do "
             "sleep 0.05; done; stat -c %%s transcript",
             S.store, id, n);
  cr_assert_eq(rc, 0, "the transcript never held %d lines: %s", n, out);
  off_t size = atoll(out);
  free(out);
  return size;
}

/* A follow from offset, its open held by the shim once this returns. */
static void follow_held(ts_stream_t *s, const char *id, off_t offset) {
  char path[200];
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1&offset=%lld", id,
           (long long)offset);
  gate_file("armed");
  ts_stream_open(s, &S, path, NULL);
  cr_assert(tu_wait_until(gate_held, NULL, 20000), "the follow's open never read the transcript");
}

/* GET path answers 200 while the open is held. Old code counted on the
 * loop: nothing was answered until the count was done (here: never). */
static void answered(const char *path) {
  char hdrs[400];
  snprintf(hdrs, sizeof hdrs, "Authorization: Bearer %s\r\n", S.token);
  char *a = ts_request(&S, "GET", path, hdrs, NULL);
  cr_expect_eq(ts_status(a), 200, "GET %s while a follow opens: %.300s", path, a);
  free(a);
}

Test(feed, the_server_answers_while_a_follow_opens_and_lines_keep_their_numbers) {
  char id[32], path[200];
  off_t end = run_counting(id, 100000);
  ts_stream_t s;
  follow_held(&s, id, end);
  snprintf(path, sizeof path, "/api/tasks/%s", id);
  answered(path);
  answered("/api/tasks?limit=5");
  gate_file("go"); /* the shim's */
  char go[PATH_MAX];
  snprintf(go, sizeof go, "%s/go", S.dir);
  cr_assert_eq(tu_write_file(go, "", 0), 0); /* the task's */
  cr_assert(ts_stream_until(&s, "{\"n\":100001,\"text\":\"after\"}"), "%.2000s", s.buf);
  cr_expect(!strstr(s.buf, "\"n\":100000,"), "from the end: no earlier line: %.2000s", s.buf);
  cr_assert(ts_stream_until(&s, "event: end"), "%.2000s", s.buf);
  ts_stream_close(&s);

  /* From the middle of line 50001 (which starts at byte 288894): the next
   * line, numbered from the start of the file. */
  gate_file("armed");
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1&offset=288897", id);
  ts_stream_open(&s, &S, path, NULL);
  cr_assert(tu_wait_until(gate_held, NULL, 20000), "the follow's open never read the transcript");
  gate_file("go");
  cr_assert(ts_stream_until(&s, "event: end"), "%.300s", s.buf);
  char *first = strstr(s.buf, "data: {\"n\":");
  cr_assert(first, "%.300s", s.buf);
  const char *want = "data: {\"n\":50002,\"text\":\"50002\"}";
  cr_expect(!strncmp(first, want, strlen(want)), "%.300s", first);
  ts_stream_close(&s);
}

Test(feed, a_follow_whose_client_leaves_while_it_opens_is_let_go) {
  char id[32], path[200];
  off_t end = run_counting(id, 20000);
  ts_stream_t s;
  follow_held(&s, id, end);
  ts_stream_close(&s); /* the client leaves: the follow stops while its open runs */
  snprintf(path, sizeof path, "/api/tasks/%s", id);
  answered(path);
  gate_file("go");
  /* The open finishes for a follow that is gone; the server goes on. */
  ts_stream_t t;
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1&offset=%lld", id, (long long)end);
  ts_stream_open(&t, &S, path, NULL);
  char go[PATH_MAX];
  snprintf(go, sizeof go, "%s/go", S.dir);
  cr_assert_eq(tu_write_file(go, "", 0), 0);
  cr_assert(ts_stream_until(&t, "{\"n\":20001,\"text\":\"after\"}"), "%.2000s", t.buf);
  ts_stream_close(&t);
  answered("/api/tasks?limit=5");
}

static int logged(const char *what) {
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/serve.err", S.dir);
  char *text = tu_read_file(p, NULL);
  int ok = text && strstr(text, what);
  free(text);
  return ok;
}

static int stopped_logged(void *arg) {
  return logged("taskfs serve: stopped");
}

static int server_closed(void *arg) {
  return ts_closed_by_server(*(int *)arg, 0);
}

/* A follow whose open the shim holds, and the server told to stop: the
 * stop ends the follow at once (its stream closes), though its open is
 * still held. */
static void stop_while_opening(void) {
  char id[32];
  off_t end = run_counting(id, 20000);
  ts_stream_t s;
  follow_held(&s, id, end);
  cr_assert_eq(kill(S.pid, SIGTERM), 0);
  cr_assert(tu_wait_until(server_closed, &s.fd, 20000), "the follow's stream stayed open");
  ts_stream_close(&s);
}

/* The shim lets go; the server exits, with 0. */
static void exits_once_let_go(void) {
  gate_file("go");
  int st;
  cr_assert_eq(waitpid(S.pid, &st, 0), S.pid);
  S.pid = 0;
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "taskfs serve ended with status %d", st);
}

Test(feed, the_server_stops_with_a_follow_opening_and_waits_for_the_open) {
  stop_while_opening();
  /* Nothing else is in flight: without the wait for the open, the stop
   * would be over at its next look (every 50 ms); with it, not before
   * the grace (5 s) is up. */
  cr_expect(!tu_wait_until(stopped_logged, NULL, 1000), "the server did not wait for the open");
  exits_once_let_go();
}

static int exiting_now(void *arg) {
  return logged("exiting now");
}

/* A second signal frees the server without waiting: the open, still
 * held, ends on its own afterwards and touches nothing the server had. */
Test(feed, the_server_told_twice_exits_with_a_follow_opening) {
  stop_while_opening();
  cr_assert_eq(kill(S.pid, SIGTERM), 0);
  cr_assert(tu_wait_until(exiting_now, NULL, 20000), "no second stop");
  exits_once_let_go();
}
