/* The JSON API of `taskfs serve` (docs/web.md, "The JSON API"): every
 * route against the real binary over real sockets, the transcript's byte
 * ranges and its follow stream as a running task writes, /api/events as a
 * task appears, changes and goes, cancel, the Origin rule for cancel,
 * the bad input of issue 17 (hostile ids, ranges past the end, huge
 * limits, a stream client that never reads), each answered with a clear
 * error while the server keeps serving. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "taskfs/progress.h"
#include "tests/helpers/serve.h"
#include "tests/helpers/testutil.h"

static ts_serve_t S;
static const char *const short_timeout[] = {"TASKFS_SERVE_TIMEOUT_MS=2000", NULL};

static void setup(void) {
  ts_serve_start(&S, NULL, NULL, short_timeout);
}

static void teardown(void) {
  int code = ts_serve_stop(&S);
  cr_expect_eq(code, 0, "taskfs serve exited %d on SIGTERM", code);
}

TestSuite(serve_api, .init = setup, .fini = teardown, .timeout = 120);

/* A request with the bearer token (and extra header lines). */
static char *api(const char *method, const char *path, const char *extra) {
  char hdrs[1200];
  snprintf(hdrs, sizeof hdrs, "Authorization: Bearer %s\r\n%s", S.token, extra ? extra : "");
  return ts_request(&S, method, path, hdrs, method[0] == 'P' ? "" : NULL);
}

/* The JSON body of a 2xx/4xx answer with the given status. */
static json_t *api_json(const char *method, const char *path, int status) {
  char *a = api(method, path, NULL);
  cr_assert_eq(ts_status(a), status, "%s %s: %.400s", method, path, a);
  char *ct = ts_answer_header(a, "Content-Type");
  cr_expect(ct && strstr(ct, "application/json"), "%s: %s", path, ct);
  free(ct);
  json_error_t e;
  json_t *j = json_loads(ts_body(a), 0, &e);
  cr_assert(j, "%s %s: not JSON (%s): %.400s", method, path, e.text, a);
  free(a);
  return j;
}

/* An error answer: status, and {"error": "..."} containing what. */
static void expect_error(const char *method, const char *path, const char *extra, int status,
                         const char *what) {
  char *a = api(method, path, extra);
  cr_expect_eq(ts_status(a), status, "%s %s: %.400s", method, path, a);
  json_t *j = json_loads(ts_body(a), 0, NULL);
  const char *msg = json_string_value(json_object_get(j, "error"));
  cr_expect(msg && strstr(msg, what), "%s %s: %.400s", method, path, a);
  json_decref(j);
  free(a);
}

/* The server still answers a good request. */
static void still_serving(void) {
  json_t *j = api_json("GET", "/api/tasks?limit=1", 200);
  cr_assert(json_is_array(json_object_get(j, "tasks")));
  json_decref(j);
}

/* Starts a task through the CLI (the one start path); returns its id. */
static void run_task(char id[32], const char *cmd) {
  char *out = NULL;
  int rc = tu_sh(&out, "cd '%s' && '%s' run --state-dir '%s' -- %s", S.dir, tu_taskfs_bin(),
                 S.store, cmd);
  cr_assert_eq(rc, 0, "run: %s", out);
  snprintf(id, 32, "%.15s", out);
  free(out);
}

static void wait_ended(const char *id) {
  char *out = NULL;
  tu_sh(&out, "'%s' wait --state-dir '%s' %s", tu_taskfs_bin(), S.store, id);
  free(out);
}

static void touch(const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", S.dir, name);
  cr_assert_eq(tu_write_file(path, "", 0), 0);
}

/* ---- the listing and the record -------------------------------------------- */

Test(serve_api, the_listing_pages_newest_first_with_the_records_ls_prints) {
  char ids[3][32];
  for (int i = 0; i < 3; i++) {
    run_task(ids[i], "true");
    wait_ended(ids[i]);
  }
  json_t *p1 = api_json("GET", "/api/tasks?limit=2", 200);
  json_t *tasks = json_object_get(p1, "tasks");
  cr_assert_eq(json_array_size(tasks), 2);
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(tasks, 0), "id")), ids[2]);
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(tasks, 1), "id")), ids[1]);
  const char *next = json_string_value(json_object_get(p1, "next"));
  cr_assert(next, "a next cursor while tasks are left");
  char path[200];
  snprintf(path, sizeof path, "/api/tasks?limit=2&cursor=%s", next);
  json_t *p2 = api_json("GET", path, 200);
  cr_assert_eq(json_array_size(json_object_get(p2, "tasks")), 1);
  cr_expect_str_eq(
      json_string_value(json_object_get(json_array_get(json_object_get(p2, "tasks"), 0), "id")),
      ids[0]);
  cr_expect(json_is_null(json_object_get(p2, "next")), "the last page has next null");
  /* Exactly what `taskfs ls --json` prints per task. */
  char *out = NULL;
  cr_assert_eq(tu_sh(&out, "'%s' ls --json --state-dir '%s'", tu_taskfs_bin(), S.store), 0);
  json_t *ls = json_loads(out, 0, NULL);
  free(out);
  cr_assert(json_is_array(ls));
  cr_expect(json_equal(json_array_get(ls, 2), json_array_get(tasks, 0)), "the same record");
  /* The record alone is the same object too. */
  snprintf(path, sizeof path, "/api/tasks/%s", ids[0]);
  json_t *rec = api_json("GET", path, 200);
  cr_expect(json_equal(json_array_get(ls, 0), rec));
  /* ?state= filters. */
  json_t *none = api_json("GET", "/api/tasks?state=running,queued", 200);
  cr_expect_eq(json_array_size(json_object_get(none, "tasks")), 0);
  json_t *done = api_json("GET", "/api/tasks?state=completed&limit=1000", 200);
  cr_expect_eq(json_array_size(json_object_get(done, "tasks")), 3);
  json_decref(p1);
  json_decref(p2);
  json_decref(ls);
  json_decref(rec);
  json_decref(none);
  json_decref(done);
}

Test(serve_api, bad_listing_parameters_get_400_saying_what_is_allowed) {
  expect_error("GET", "/api/tasks?limit=0", NULL, 400, "from 1 to 1000");
  expect_error("GET", "/api/tasks?limit=1001", NULL, 400, "from 1 to 1000");
  expect_error("GET", "/api/tasks?limit=99999999999999999999999", NULL, 400, "from 1 to 1000");
  expect_error("GET", "/api/tasks?limit=-5", NULL, 400, "from 1 to 1000");
  expect_error("GET", "/api/tasks?limit=ten", NULL, 400, "from 1 to 1000");
  expect_error("GET", "/api/tasks?state=bogus", NULL, 400, "queued, running");
  expect_error("GET", "/api/tasks?cursor=../../etc", NULL, 400, "not a task id");
  still_serving();
}

Test(serve_api, hostile_and_unknown_ids_are_404_and_touch_nothing_outside_the_store) {
  const char *paths[] = {
      "/api/tasks/..",
      "/api/tasks/../../../etc/passwd",
      "/api/tasks/%2e%2e/transcript",
      "/api/tasks/..%2f..%2fetc%2fpasswd",
      "/api/tasks/",
      "/api/tasks/zzzzzzzz-zzzzzz",
      "/api/tasks/zzzzzzzz-zzzzzz/transcript",
      "/api/tasks/zzzzzzzz-zzzzzz/transcript?follow=1",
      "/api/tasks/"
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      "/api/tasks/mx5ergly-n6ke%00fi",
      "/api/tasks/mx5ergly-n6kefi%0a",
      "/api/tasks/%ff%fe",
  };
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
    expect_error("GET", paths[i], NULL, 404, "no task");
  expect_error("POST", "/api/tasks/../cancel", NULL, 404, "no task");
  expect_error("POST", "/api/tasks/zzzzzzzz-zzzzzz/cancel", NULL, 404, "no task");
  char id[32];
  run_task(id, "true");
  char path[200];
  snprintf(path, sizeof path, "/api/tasks/%s/nothing", id);
  expect_error("GET", path, NULL, 404, "no such page");
  snprintf(path, sizeof path, "/api/tasks/%s/cancel", id);
  expect_error("GET", path, NULL, 405, "allowed: POST");
  snprintf(path, sizeof path, "/api/tasks/%s", id);
  expect_error("POST", path, NULL, 405, "allowed: GET");
  char *a = ts_request(&S, "GET", path, NULL, NULL);
  cr_expect_eq(ts_status(a), 401, "the API needs the token: %.300s", a);
  free(a);
  still_serving();
}

/* ---- the transcript's bytes -------------------------------------------------- */

static char *transcript(const char *id, const char *range) {
  char path[200], hdr[200] = "";
  snprintf(path, sizeof path, "/api/tasks/%s/transcript", id);
  if (range)
    snprintf(hdr, sizeof hdr, "Range: %s\r\n", range);
  return api("GET", path, hdr);
}

static void expect_header(const char *a, const char *name, const char *value) {
  char *v = ts_answer_header(a, name);
  cr_expect(v && !strcmp(v, value), "%s: %s, not %s: %.300s", name, v ? v : "(none)", value, a);
  free(v);
}

Test(serve_api, transcript_bytes_with_ranges_and_416_past_the_end) {
  char id[32];
  run_task(id, "printf 'one\\ntwo\\nthree'");
  wait_ended(id);
  char *a = transcript(id, NULL);
  cr_expect_eq(ts_status(a), 200, "%s", a);
  cr_expect_str_eq(ts_body(a), "one\ntwo\nthree");
  expect_header(a, "X-Taskfs-Size", "13");
  expect_header(a, "Accept-Ranges", "bytes");
  expect_header(a, "Content-Type", "application/octet-stream");
  free(a);
  struct {
    const char *range;
    int status;
    const char *body, *content_range;
  } cases[] = {
      {"bytes=4-6", 206, "two", "bytes 4-6/13"},
      {"bytes=8-", 206, "three", "bytes 8-12/13"},
      {"bytes=-5", 206, "three", "bytes 8-12/13"},
      {"bytes=-100", 206, "one\ntwo\nthree", "bytes 0-12/13"},
      {"bytes=10-1000", 206, "ree", "bytes 10-12/13"},
      {"bytes=13-", 416, NULL, "bytes */13"},
      {"bytes=99999999999999999999999-", 416, NULL, "bytes */13"},
      {"bytes=-0", 416, NULL, "bytes */13"},
      {"bytes=6-4", 200, "one\ntwo\nthree", NULL}, /* invalid: ignored */
      {"lines=1-2", 200, "one\ntwo\nthree", NULL},
      {"bytes=0-1,4-5", 200, "one\ntwo\nthree", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    a = transcript(id, cases[i].range);
    cr_expect_eq(ts_status(a), cases[i].status, "%s: %.300s", cases[i].range, a);
    if (cases[i].body)
      cr_expect_str_eq(ts_body(a), cases[i].body, "%s", cases[i].range);
    else
      cr_expect(strstr(ts_body(a), "past the end"), "%s: %s", cases[i].range, a);
    if (cases[i].content_range)
      expect_header(a, "Content-Range", cases[i].content_range);
    expect_header(a, "X-Taskfs-Size", "13");
    free(a);
  }
  /* A task that wrote nothing: empty, size 0, and any range is past its end. */
  char quiet[32];
  run_task(quiet, "true");
  wait_ended(quiet);
  a = transcript(quiet, NULL);
  cr_expect_eq(ts_status(a), 200);
  cr_expect_str_eq(ts_body(a), "");
  expect_header(a, "X-Taskfs-Size", "0");
  free(a);
  a = transcript(quiet, "bytes=0-");
  cr_expect_eq(ts_status(a), 416, "%s", a);
  expect_header(a, "Content-Range", "bytes */0");
  free(a);
  still_serving();
}

/* ---- following ------------------------------------------------------------------ */

Test(serve_api, follow_hands_out_each_line_as_it_is_written_until_the_end) {
  char id[32];
  run_task(id, "sh -c 'echo one; while [ ! -e go1 ]; do sleep 0.05; done; echo two; "
               "while [ ! -e go2 ]; do sleep 0.05; done; printf \"thr\\377e\"'");
  char path[200];
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1", id);
  ts_stream_t s;
  ts_stream_open(&s, &S, path, NULL);
  cr_assert(ts_stream_until(&s, "data: {\"n\":1,\"text\":\"one\"}"), "%s", s.buf);
  cr_expect(strstr(s.buf, "text/event-stream"), "%s", s.buf);
  cr_expect(strstr(s.buf, "event: line\r\nid: 4\r\n") || strstr(s.buf, "event: line\nid: 4\n"),
            "the id is the offset after the line: %s", s.buf);
  cr_expect(!strstr(s.buf, "two"), "two is not written yet");
  touch("go1");
  cr_assert(ts_stream_until(&s, "{\"n\":2,\"text\":\"two\"}"), "%s", s.buf);
  cr_expect(!strstr(s.buf, "event: end"), "the task runs: %s", s.buf);
  touch("go2");
  /* The final partial line is flushed, its bad byte as U+FFFD. */
  cr_assert(ts_stream_until(&s, "{\"n\":3,\"text\":\"thr\xef\xbf\xbd"
                                "e\"}"),
            "%s", s.buf);
  cr_assert(ts_stream_until(&s, "event: end"), "%s", s.buf);
  cr_assert(ts_stream_until(&s, "\"state\": \"completed\""), "the end carries the record: %s",
            s.buf);
  cr_expect(ts_closed_by_server(s.fd, 20000), "the stream closes after the end");
  ts_stream_close(&s);

  /* From a byte offset, or Last-Event-ID: the next line start. */
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1&offset=5", id);
  ts_stream_open(&s, &S, path, NULL);
  cr_assert(ts_stream_until(&s, "event: end"), "%s", s.buf);
  cr_expect(!strstr(s.buf, "\"one\"") && !strstr(s.buf, "\"two\"") && strstr(s.buf, "\"n\":3"),
            "offset 5 is inside line 2: from line 3: %s", s.buf);
  ts_stream_close(&s);
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1&offset=0", id);
  ts_stream_open(&s, &S, path, "Last-Event-ID: 8\r\n");
  cr_assert(ts_stream_until(&s, "event: end"), "%s", s.buf);
  cr_expect(!strstr(s.buf, "\"two\"") && strstr(s.buf, "\"n\":3"), "%s", s.buf);
  ts_stream_close(&s);
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1&offset=-1", id);
  expect_error("GET", path, NULL, 400, "not a byte offset");
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1&offset=12abc", id);
  expect_error("GET", path, NULL, 400, "not a byte offset");
  still_serving();
}

/* ---- events ------------------------------------------------------------------------ */

Test(serve_api, events_tell_a_new_task_its_state_changes_and_its_removal) {
  ts_stream_t s;
  ts_stream_open(&s, &S, "/api/events", NULL);
  cr_assert(ts_stream_until(&s, "event: ready"), "%s", s.buf);
  char id[32];
  run_task(id, "sh -c 'while [ ! -e go ]; do sleep 0.05; done'");
  char want[200];
  snprintf(want, sizeof want, "\"id\": \"%s\"", id);
  cr_assert(ts_stream_until(&s, want), "the new task is told: %s", s.buf);
  cr_assert(ts_stream_until(&s, "\"state\": \"running\""), "%s", s.buf);
  touch("go");
  cr_assert(ts_stream_until(&s, "\"state\": \"completed\""), "%s", s.buf);
  wait_ended(id);
  char *out = NULL;
  cr_assert_eq(tu_sh(&out, "'%s' rm --state-dir '%s' %s", tu_taskfs_bin(), S.store, id), 0, "%s",
               out);
  free(out);
  snprintf(want, sizeof want, "event: gone\ndata: {\"id\":\"%s\"}", id);
  cr_assert(ts_stream_until(&s, want), "the removal is told: %s", s.buf);
  still_serving();
  ts_stream_close(&s);
}

/* The lines counts of id's progress events in what the stream brought,
 * in order (at most max); returns how many. */
static size_t progress_lines(const char *buf, const char *id, int64_t *out, size_t max) {
  size_t n = 0;
  for (const char *p = buf; n < max && (p = strstr(p, "event: progress\ndata: "));) {
    p += strlen("event: progress\ndata: ");
    const char *end = strchr(p, '\n');
    json_t *j = end ? json_loadb(p, (size_t)(end - p), 0, NULL) : NULL;
    cr_assert(j, "a progress event is one line of JSON: %.300s", p);
    if (!strcmp(json_string_value(json_object_get(j, "id")), id))
      out[n++] = json_integer_value(json_object_get(json_object_get(j, "transcript"), "lines"));
    json_decref(j);
  }
  return n;
}

/* What a viewer's record panel shows while a task runs: its line count
 * grows in progress events, before the task ends, and the last one (the
 * end flushes it) counts every line of the transcript. The stages are
 * made with files the task waits for, never with a clock. */
Test(serve_api, events_tell_a_running_tasks_progress_and_its_final_count) {
  ts_stream_t s;
  ts_stream_open(&s, &S, "/api/events", NULL);
  cr_assert(ts_stream_until(&s, "event: ready"), "%s", s.buf);
  char id[32];
  run_task(id, "sh -c 'seq 1 5; while [ ! -e go1 ]; do sleep 0.05; done; seq 6 10; echo error: "
               "ten; while [ ! -e go2 ]; do sleep 0.05; done; seq 12 13'");
  char want[300];
  snprintf(want, sizeof want,
           "event: progress\ndata: {\"id\": \"%s\",\"state\": \"running\",\"transcript\": "
           "{\"lines\": 5,",
           id);
  cr_assert(ts_stream_until(&s, want), "5 lines are told while the task runs: %s", s.buf);
  touch("go1");
  snprintf(want, sizeof want,
           "event: progress\ndata: {\"id\": \"%s\",\"state\": \"running\",\"transcript\": "
           "{\"lines\": 11,",
           id);
  cr_assert(ts_stream_until(&s, want), "then 11: %s", s.buf);
  cr_assert(ts_stream_until(&s, "\"new\": [{\"line\": 11,\"kind\": \"error\",\"text\": \"error: "
                                "ten\"}]"),
            "the new important line comes with its count: %s", s.buf);
  cr_expect(!strstr(s.buf, "\"state\": \"completed\""), "the task still runs: %s", s.buf);
  touch("go2");
  cr_assert(ts_stream_until(&s, "\"state\": \"completed\""), "%s", s.buf);
  int64_t counts[1000];
  size_t n = progress_lines(s.buf, id, counts, 1000);
  cr_assert_geq(n, 2, "%s", s.buf);
  for (size_t i = 1; i < n; i++)
    cr_expect_geq(counts[i], counts[i - 1], "counts never go back: %s", s.buf);
  char path[200];
  snprintf(path, sizeof path, "/api/tasks/%s/transcript", id);
  char *a = api("GET", path, NULL);
  cr_assert_eq(ts_status(a), 200, "%.300s", a);
  int64_t lines = 0;
  for (const char *p = ts_body(a); *p; p++)
    lines += *p == '\n';
  free(a);
  cr_expect_eq(lines, 13);
  cr_expect_eq(counts[n - 1], lines, "the last progress counts the transcript's %lld lines: %s",
               (long long)lines, s.buf);
  ts_stream_close(&s);
}

/* The pace of one task's progress events (core/progress.c), driven with
 * times of the test's own: the seam live/progress.c calls with the
 * loop's clock. A burst of changes inside one interval is held, not told,
 * and the look at the end of the interval tells the latest counters. */
Test(progress, a_burst_within_the_interval_is_one_event_with_the_latest_counts) {
  tfs_record_t rec;
  tfs_record_init(&rec);
  snprintf(rec.id, sizeof rec.id, "t1");
  rec.state = TFS_RUNNING;
  tfs_progress_t p = {0};
  tfs_progress_told(&p, &rec, 0);
  cr_expect_eq(tfs_progress_check(&p, &rec, 1000), -1, "nothing moved");
  rec.lines = 1;
  cr_assert_eq(tfs_progress_check(&p, &rec, 1000), 0, "never told: at once");
  free(tfs_progress_dump(&p, &rec, 1000));
  int told = 0;
  for (int i = 2; i <= 100; i++) {
    rec.lines = i;
    rec.bytes = 2 * i;
    int64_t wait = tfs_progress_check(&p, &rec, 1000 + i);
    cr_assert_gt(wait, 0, "held within the interval (change %d)", i);
    cr_assert_leq(1000 + i + wait, 1000 + TFS_PROGRESS_INTERVAL_MS, "until its end");
    told += wait == 0;
  }
  cr_expect_eq(told, 0);
  for (int i = 0; i < 7; i++)
    tfs_important_add(&rec.important, 90 + i, TFS_LINE_ERROR, "error: x", 8);
  cr_assert_eq(tfs_progress_check(&p, &rec, 1000 + TFS_PROGRESS_INTERVAL_MS), 0);
  char *json = tfs_progress_dump(&p, &rec, 1000 + TFS_PROGRESS_INTERVAL_MS);
  json_t *j = json_loads(json, 0, NULL);
  cr_assert(j, "%s", json);
  cr_expect_eq(json_integer_value(json_object_get(json_object_get(j, "transcript"), "lines")), 100);
  cr_expect_eq(json_integer_value(json_object_get(json_object_get(j, "transcript"), "bytes")), 200);
  json_t *imp = json_object_get(j, "important");
  cr_expect_eq(json_integer_value(json_object_get(imp, "total")), 7);
  json_t *fresh = json_object_get(imp, "new");
  cr_assert_eq(json_array_size(fresh), TFS_PROGRESS_NEW_MAX, "%s", json);
  cr_expect_eq(json_integer_value(json_object_get(json_array_get(fresh, 0), "line")), 92,
               "the newest: %s", json);
  json_decref(j);
  free(json);
  cr_expect_eq(tfs_progress_check(&p, &rec, 1000 + TFS_PROGRESS_INTERVAL_MS), -1, "told");
  rec.lines++;
  int64_t wait = tfs_progress_check(&p, &rec, 10);
  cr_expect(wait > 0 && wait <= TFS_PROGRESS_INTERVAL_MS, "a clock stepped back holds %lld ms",
            (long long)wait);
  tfs_important_add(&rec.important, 200, TFS_LINE_WARNING, "warning: y", 10);
  json = tfs_progress_dump(&p, &rec, 5000);
  j = json_loads(json, 0, NULL);
  fresh = json_object_get(json_object_get(j, "important"), "new");
  cr_expect_eq(json_array_size(fresh), 1, "only what came after the last told: %s", json);
  json_decref(j);
  free(json);
  tfs_record_free(&rec);
}

/* ---- cancel -------------------------------------------------------------------------- */

static int cancelled_yet(void *arg) {
  char path[200];
  snprintf(path, sizeof path, "/api/tasks/%s", (const char *)arg);
  json_t *j = api_json("GET", path, 200);
  int done = !strcmp(json_string_value(json_object_get(j, "state")), "cancelled");
  json_decref(j);
  return done;
}

Test(serve_api, cancel_ends_the_task_cancelled_and_an_ended_task_is_409) {
  char id[32];
  run_task(id, "sleep infinity");
  char path[200];
  snprintf(path, sizeof path, "/api/tasks/%s/cancel", id);
  json_t *rec = api_json("POST", path, 202);
  cr_expect_str_eq(json_string_value(json_object_get(rec, "id")), id);
  json_decref(rec);
  cr_assert(tu_wait_until(cancelled_yet, id, 20000), "the task ends cancelled");
  json_t *err = api_json("POST", path, 409);
  cr_expect_str_eq(json_string_value(json_object_get(err, "state")), "cancelled");
  cr_expect(strstr(json_string_value(json_object_get(err, "error")), "already ended"));
  json_decref(err);
  still_serving();
}

/* The status of a POST to path with the header lines hdr. */
static int post_status(const char *path, const char *hdr) {
  char *a = ts_request(&S, "POST", path, hdr, "");
  int st = ts_status(a);
  cr_log_info("POST %s: %.300s", path, a);
  free(a);
  return st;
}

/* A page of another origin (another site, another local port) cannot
 * cancel: not with the token it stole somewhere (its Origin is refused),
 * and not with a cookie, which is no credential at all. */
Test(serve_api, a_page_of_another_origin_cannot_cancel) {
  char id[32];
  run_task(id, "sleep infinity");
  char path[200], hdr[1200];
  snprintf(path, sizeof path, "/api/tasks/%s/cancel", id);
  snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\nOrigin: http://evil.example\r\n", S.token);
  cr_expect_eq(post_status(path, hdr), 403, "another site");
  snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\nOrigin: http://127.0.0.1:%d\r\n", S.token,
           S.port + 1);
  cr_expect_eq(post_status(path, hdr), 403, "another port is another origin");
  snprintf(hdr, sizeof hdr, "Cookie: taskfs_token=%s\r\nOrigin: http://127.0.0.1:%d\r\n", S.token,
           S.port);
  cr_expect_eq(post_status(path, hdr), 401, "a cookie is no credential");
  snprintf(path, sizeof path, "/api/tasks/%s", id);
  json_t *j = api_json("GET", path, 200);
  cr_expect_str_neq(json_string_value(json_object_get(j, "state")), "cancelled");
  json_decref(j);
  /* The page's own origin, with the bearer token, may. */
  snprintf(path, sizeof path, "/api/tasks/%s/cancel", id);
  snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\nOrigin: http://127.0.0.1:%d\r\n", S.token,
           S.port);
  cr_expect_eq(post_status(path, hdr), 202, "our own origin");
  cr_assert(tu_wait_until(cancelled_yet, id, 20000));
}

/* ---- a client that never reads ------------------------------------------------------ */

static int dropped_logged(void *arg) {
  char path[4200];
  snprintf(path, sizeof path, "%s/serve.err", S.dir);
  char *err = tu_read_file(path, NULL);
  int yes = err && strstr(err, "dropped");
  free(err);
  return yes;
}

Test(serve_api, a_follow_client_that_never_reads_is_dropped_and_the_server_keeps_serving) {
  char id[32];
  /* 64 MB of output, far more than every buffer on the way; then it runs
   * until the test cancels it (after `sleep 60` it could end before a
   * slow machine got to the drop, and the cancel found it ended). */
  run_task(id, "sh -c 'yes abcdefghijklmnopqrstuvwxyz0123456789 | head -c 64000000; "
               "while :; do sleep 1; done'");
  char path[200];
  snprintf(path, sizeof path, "/api/tasks/%s/transcript?follow=1", id);
  ts_stream_t s;
  ts_stream_open(&s, &S, path, NULL);
  /* It reads nothing; the server must go on serving meanwhile. */
  for (int i = 0; i < 3; i++)
    still_serving();
  cr_assert(tu_wait_until(dropped_logged, NULL, 60000), "the stalled stream is dropped");
  cr_expect(ts_closed_by_server(s.fd, 20000), "its connection is closed");
  ts_stream_close(&s);
  still_serving();
  snprintf(path, sizeof path, "/api/tasks/%s/cancel", id);
  json_decref(api_json("POST", path, 202));
  cr_assert(tu_wait_until(cancelled_yet, id, 20000));
}
