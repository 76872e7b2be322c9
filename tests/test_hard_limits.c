/* The audit's untilPattern findings (issue 11, finding 3) against the real
 * `taskfs mcp` over stdio, as the audit ran them: a 31-byte pattern that
 * drove the server to 3.5 GB (run here under a 1 GiB address-space
 * limit), one whose match over a 4 KiB line took 9.7 s while a ping
 * waited, and hundreds of parked reads that held 2.37 GB. Each must cost
 * its caller an answer (an error naming the limit, or the read's answer),
 * never the server: the ping is answered first, memory stays bounded
 * (VmHWM), the server keeps serving. */
#include "tests/hardening/hard.h"

TestSuite(hard_limits, .init = hh_setup, .fini = hh_teardown, .timeout = 300);

/* Reads messages until the answer to want; returns it. *first gets the id
 * of the first answer seen (0 if none). */
static json_t *until_answer(hh_mcp_t *m, int want, int *first, int64_t timeout_ms) {
  int64_t end = hh_now_ms() + timeout_ms;
  for (;;) {
    json_t *v = hh_mcp_read(m, end - hh_now_ms());
    cr_assert(v, "no answer to %d within %lld ms (the server hung or died)", want,
              (long long)timeout_ms);
    json_t *vid = json_object_get(v, "id");
    if (json_is_integer(vid) && first && !*first)
      *first = (int)json_integer_value(vid);
    if (json_is_integer(vid) && json_integer_value(vid) == want)
      return v;
    json_decref(v);
  }
}

static const char *text_of(json_t *v) {
  json_t *c = json_array_get(json_object_get(json_object_get(v, "result"), "content"), 0);
  const char *s = json_string_value(json_object_get(c, "text"));
  return s ? s : "";
}

/* A finished task whose only line is 4000 'a' (plus tail). */
static void a_task(const char *tail, char id[TFS_ID_MAX + 1]) {
  char *sh = hh_strdupf("head -c 4000 /dev/zero | tr '\\0' a; echo '%s'", tail);
  const char *cmd[] = {"/bin/sh", "-c", sh, NULL};
  hh_run_task(NULL, cmd, id);
  hh_wait_ended(id);
  free(sh);
}

static void send_read(hh_mcp_t *m, int rid, const char *id, const char *pattern, int wait_ms) {
  char *req = hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                         "\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
                         "\"waitMs\":%d,\"sinceLine\":0,\"untilPattern\":\"%s\"}}}\n",
                         rid, id, wait_ms, pattern);
  cr_assert_eq(hh_mcp_send_raw(m, req, strlen(req)), 0);
  free(req);
}

static void send_ping(hh_mcp_t *m, int rid) {
  char *req = hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", rid);
  cr_assert_eq(hh_mcp_send_raw(m, req, strlen(req)), 0);
  free(req);
}

/* (((a{0,20}){0,20}){0,20}){0,20}: 31 bytes, 3.5 GB in the old matcher.
 * Now a tool error saying the pattern is too large, at once; the server
 * stays far below its 1 GiB address-space limit. */
Test(hard_limits, nested_repetition_is_refused_small) {
  char id[TFS_ID_MAX + 1];
  a_task("", id);
  /* ASan reserves terabytes of address space for its shadow: no limit
   * under make asan, where the RSS is not checked either. */
  const char *const wrap[] = {"/usr/bin/prlimit", "--as=1073741824", "--", NULL};
  hh_mcp_t m;
  hh_mcp_start_ex(&m, getenv("TASKFS_SANITIZED") ? NULL : wrap);
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  send_read(&m, 91, id, "(((a{0,20}){0,20}){0,20}){0,20}", 2000);
  send_ping(&m, 92);
  json_t *v = until_answer(&m, 91, NULL, 60000);
  cr_assert(json_is_true(json_object_get(json_object_get(v, "result"), "isError")), "%s",
            json_dumps(v, JSON_COMPACT));
  cr_assert(strstr(text_of(v), "too large"), "%s", text_of(v));
  json_decref(v);
  json_decref(until_answer(&m, 92, NULL, 60000));
  long hwm = hh_vmhwm_kib(m.pid);
  cr_log_info("nested repetition: peak RSS %ld KiB", hwm);
  if (!getenv("TASKFS_SANITIZED")) /* ASan's shadow memory is not the server's */
    cr_expect(hwm > 0 && hwm < 64 * 1024, "peak RSS %ld KiB (bound: 64 MiB)", hwm);
  cr_assert_eq(hh_mcp_close(&m), 0);
}

/* ((a{1,30}){1,30}){1,30}b over one 4 KiB line: 9.7 s in the old matcher,
 * on the loop. A ping sent after it is answered first. */
Test(hard_limits, a_costly_match_lets_a_ping_through) {
  char id[TFS_ID_MAX + 1];
  a_task("", id);
  hh_mcp_t m;
  hh_mcp_start(&m);
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  send_read(&m, 91, id, "((a{1,30}){1,30}){1,30}b", 0);
  send_ping(&m, 92);
  int first = 0;
  json_decref(until_answer(&m, 91, &first, 60000));
  cr_expect_eq(first, 92, "the ping was answered after the costly read (the loop was held)");
  /* A pattern that backtracks for ever on that line: the match limit. */
  a_task("!", id);
  send_read(&m, 93, id, "(a+)+$", 0);
  json_t *v = until_answer(&m, 93, NULL, 60000);
  cr_assert(strstr(text_of(v), "match limit"), "%s", json_dumps(v, JSON_COMPACT));
  json_decref(v);
  cr_assert_eq(hh_mcp_close(&m), 0);
}

/* 300 parked reads, each with a 24-byte pattern whose compiled form the
 * old matcher expanded into megabytes and a 1000-byte id: the first 64
 * of the session wait, the rest are refused with -32000 naming the
 * limit; the server's peak RSS stays under 64 MiB (2.37 GB for 200
 * before). */
Test(hard_limits, parked_reads_are_bounded_in_number_and_memory) {
  const char *cmd[] = {"/bin/sh", "-c", "echo up; exec sleep 300", NULL};
  char id[TFS_ID_MAX + 1];
  hh_run_task(NULL, cmd, id);
  hh_mcp_t m;
  hh_mcp_start(&m);
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  char pad[1001];
  memset(pad, 'p', 1000);
  pad[1000] = 0;
  for (int i = 0; i < 300; i++) {
    char *req =
        hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":\"%s-%d\",\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":"
                   "\"%s\",\"waitMs\":50000,\"untilPattern\":\"((a{1,30}){1,30}){1,30}b\"}}}"
                   "\n",
                   pad, i, id);
    cr_assert_eq(hh_mcp_send_raw(&m, req, strlen(req)), 0);
    free(req);
  }
  send_ping(&m, 7);
  int refused = 0;
  int64_t end = hh_now_ms() + 60000;
  for (;;) {
    json_t *v = hh_mcp_read(&m, end - hh_now_ms());
    cr_assert(v, "the ping after 300 reads was not answered");
    json_t *vid = json_object_get(v, "id");
    if (json_is_integer(vid) && json_integer_value(vid) == 7) {
      json_decref(v);
      break;
    }
    json_t *e = json_object_get(v, "error");
    if (e && json_integer_value(json_object_get(e, "code")) == -32000)
      refused++;
    json_decref(v);
  }
  cr_expect_eq(refused, 300 - 64, "every read beyond the session's 64 is refused at once");
  long hwm = hh_vmhwm_kib(m.pid);
  cr_log_info("300 reads sent, %d refused: peak RSS %ld KiB", refused, hwm);
  if (!getenv("TASKFS_SANITIZED"))
    cr_expect(hwm > 0 && hwm < 64 * 1024, "peak RSS %ld KiB with 64 reads parked (bound: 64 MiB)",
              hwm);
  hh_mcp_kill9(&m);
  hh_res_t r = hh_tfs("cancel", id, NULL);
  hh_res_free(&r);
}
