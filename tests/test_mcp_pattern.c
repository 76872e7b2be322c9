/* untilPattern with bounds (issue 11, finding 3), through the real
 * dispatcher (tests/mcp_fixture.h): the pattern is PCRE2 with a length
 * cap, a bounded compile and match, depth and heap limits; a pattern that
 * hits one costs its caller a tool error naming the limit, never the
 * server; matching runs off the loop, so a request sent after a costly
 * read is answered first; the dialect (what an ERE user writes keeps
 * working, GNU escapes PCRE2 would read differently are refused, a
 * back-reference is allowed because it is bounded). */
#include "tests/mcp_fixture.h"

static json_t *sc(json_t *m) {
  return json_object_get(result(m), "structuredContent");
}

/* Sends read_managed_task of id from line 0 with pattern (a JSON string
 * body); returns where its answer will be in k->msgs. */
static size_t send_until(mcp_session_t *s, sink_t *k, int rid, const char *id, const char *pattern,
                         int wait_ms) {
  return fx_send(s, k,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\",\"sinceLine\":0,"
                 "\"waitMs\":%d,\"untilPattern\":\"%s\"}}}",
                 rid, id, wait_ms, pattern);
}

/* The same, and its answer. */
static json_t *read_until(mcp_session_t *s, sink_t *k, int rid, const char *id, const char *pattern,
                          int wait_ms) {
  return reply_from(k, send_until(s, k, rid, id, pattern, wait_ms), rid);
}

/* A failed task whose only output line is n 'a' and then tail. */
static void a_line(const char *key, size_t n, const char *tail, char id[TFS_ID_MAX + 1]) {
  char *line = malloc(n + strlen(tail) + 1);
  memset(line, 'a', n);
  strcpy(line + n, tail);
  failed_task(key, line, id);
  free(line);
}

/* A pattern that backtracks without end on a 4 KiB line is stopped by the
 * match limit: the caller is told which limit, on which line, and what to
 * do; the server goes on. */
Test(mcp_pattern, a_backtracking_pattern_is_a_clear_error, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  a_line("bt", 4000, "!", id);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  json_t *m = read_until(s, &k, 2, id, "(a+)+$", 2000);
  cr_assert(json_is_true(json_object_get(result(m), "isError")), "%s", json_dumps(m, 0));
  cr_assert(strstr(call_text(m), "match limit"), "%s", call_text(m));
  cr_assert(strstr(call_text(m), "line 1"), "%s", call_text(m));
  m = rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
  cr_assert(json_is_object(result(m)));
  json_decref(k.msgs);
}

/* Matching is off the loop: a ping sent right after a read whose pattern
 * the old matcher took 9.7 s over (the audit's) is answered first. */
Test(mcp_pattern, a_costly_match_does_not_hold_other_requests, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  a_line("slow", 4096, "", id);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  size_t from = send_until(s, &k, 2, id, "((a{1,30}){1,30}){1,30}b", 0);
  fx_send(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
  reply_from(&k, from, 2);
  json_t *first = json_array_get(k.msgs, from);
  cr_assert_eq(json_integer_value(json_object_get(first, "id")), 3,
               "the ping is answered before the read: %s", json_dumps(first, 0));
  json_t *m = reply_from(&k, from, 2);
  cr_assert_null(json_object_get(result(m), "isError"), "%s", call_text(m));
  cr_assert_null(json_object_get(sc(m), "match"));
  json_decref(k.msgs);
}

/* Compile-time bounds: the length cap, a pattern whose compiled form
 * would be too large (nested counted repetition), bad syntax; each a tool
 * error that says what to change. */
Test(mcp_pattern, compile_bounds_are_tool_errors, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("c", "ready", id);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  char *longp = malloc(1100);
  memset(longp, 'x', 1099);
  longp[1099] = 0;
  json_t *m = read_until(s, &k, 2, id, longp, 0);
  free(longp);
  cr_assert(json_is_true(json_object_get(result(m), "isError")));
  cr_assert(strstr(call_text(m), "1099 bytes; at most 1024"), "%s", call_text(m));
  m = read_until(s, &k, 3, id, "((((a{0,20}){0,20}){0,20}){0,20}){0,20}", 0);
  cr_assert(json_is_true(json_object_get(result(m), "isError")));
  cr_assert(strstr(call_text(m), "too large"), "%s", call_text(m));
  m = read_until(s, &k, 4, id, "(unclosed", 0);
  cr_assert(json_is_true(json_object_get(result(m), "isError")));
  cr_assert(strstr(call_text(m), "is not a valid pattern"), "%s", call_text(m));
  cr_assert(strstr(call_text(m), "offset 9"), "%s", call_text(m));
  json_decref(k.msgs);
}

/* The dialect: ERE as users write it keeps matching; \d and friends are
 * PCRE2's; a back-reference is allowed (it is bounded like everything
 * else); GNU's \< \> \` \' are refused with what to write instead; a NUL
 * in the pattern is a NUL, not its end; the whole line is matched, NUL
 * bytes included. */
Test(mcp_pattern, the_dialect, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("d", "booting", id);
  append(id, "listening on port 8080");
  append(id, "abab done");
  int fd = tfs_transcript_open_append(F.store, id);
  cr_assert_eq(tfs_transcript_append(fd, "nul\0here", 8, 1), 0);
  close(fd);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  static const struct {
    const char *pattern;
    int line; /* 0: no match */
  } cases[] = {
      {"listening on port [0-9]+", 2},
      {"^listening on (port|socket) [[:digit:]]{4}$", 2},
      {"port \\\\d+", 2},
      {"(ab)\\\\1 done", 3},
      {"\\\\bdone$", 3},
      {"here$", 4},
      {"LISTENING", 0},
  };
  int rid = 10;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *m = read_until(s, &k, rid++, id, cases[i].pattern, 0);
    cr_assert_null(json_object_get(result(m), "isError"), "%s: %s", cases[i].pattern, call_text(m));
    json_t *match = json_object_get(sc(m), "match");
    cr_assert_eq(json_integer_value(json_object_get(match, "line")), cases[i].line, "%s: %s",
                 cases[i].pattern, json_dumps(sc(m), 0));
  }
  static const char *const gnu[] = {"\\\\<port", "port\\\\>", "\\\\`b", "done\\\\'", "o{,3}n"};
  for (int i = 0; i < 5; i++) {
    json_t *m = read_until(s, &k, rid++, id, gnu[i], 0);
    cr_assert(json_is_true(json_object_get(result(m), "isError")), "%s", gnu[i]);
    cr_assert(strstr(call_text(m), "GNU"), "%s: %s", gnu[i], call_text(m));
  }
  /* Inside a class or \Q..\E they are plain characters, as in PCRE2. */
  json_t *m = read_until(s, &k, rid++, id, "[\\\\<]|\\\\Q\\\\<\\\\E|port", 0);
  cr_assert_null(json_object_get(result(m), "isError"), "%s", call_text(m));
  json_decref(k.msgs);
}

/* A start whose pattern hits a limit on the new task's output says
 * which task it started (the task goes on; the caller stops it). */
Test(mcp_pattern, a_start_whose_pattern_hits_a_limit_names_its_task, .init = fx_open,
     .fini = fx_close) {
  sink_t k;
  mcp_session_t *s = legacy(&k);
  json_t *m =
      rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
          "\"start_managed_task\",\"arguments\":{\"taskKey\":\"st\",\"command\":"
          "\"head -c 4000 /dev/zero | tr '\\\\0' a; echo '!'; exec sleep 60\",\"cwd\":\"/\","
          "\"waitMs\":20000,\"untilPattern\":\"(a+)+$\"}}}");
  cr_assert(json_is_true(json_object_get(result(m), "isError")), "%s", json_dumps(m, 0));
  char id[TFS_ID_MAX + 1];
  cr_assert_eq(tfs_key_lookup(F.store, "st", id), 0);
  cr_assert(strstr(call_text(m), id), "names the task: %s", call_text(m));
  cr_assert(strstr(call_text(m), "match limit"), "%s", call_text(m));
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
          "\"cancel_managed_task\",\"arguments\":{\"taskId\":\"%s\"}}}",
          id);
  cr_assert_str_eq(str_at(sc(m), "state"), "cancelled");
  json_decref(k.msgs);
}

/* A backlog far larger than one batch (5000 lines, batches of 1024) is
 * scanned in turns, with other requests served between them; waitMs 0
 * still finds the match in what was already written. */
Test(mcp_pattern, a_backlog_is_scanned_in_batches, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("big", "line 1", id);
  int fd = tfs_transcript_open_append(F.store, id);
  for (int i = 2; i <= 5000; i++) {
    char line[32];
    int n = snprintf(line, sizeof line, i == 4990 ? "needle %d" : "line %d", i);
    tfs_transcript_append(fd, line, (size_t)n, 1);
  }
  close(fd);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  size_t from = send_until(s, &k, 2, id, "^needle [0-9]+$", 0);
  json_t *ping = rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
  cr_assert(json_is_object(result(ping)));
  json_t *m = reply_from(&k, from, 2);
  json_t *match = json_object_get(sc(m), "match");
  cr_assert_eq(json_integer_value(json_object_get(match, "line")), 4990, "%s",
               json_dumps(sc(m), 0));
  cr_assert_str_eq(str_at(match, "text"), "needle 4990");
  cr_assert(json_is_false(json_object_get(sc(m), "timedOut")));
  json_decref(k.msgs);
}

/* The pattern limits are the server's config too. */
static void fx_open_tight(void) {
  FX_LIMITS = (mcp_limits_t){.pattern_max = 16, .match_steps = 50, .scan_batch = 1};
  fx_open();
}

Test(mcp_pattern, the_pattern_limits_are_the_server_s_config, .init = fx_open_tight,
     .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("t", "a line with words and more words in it", id);
  for (int i = 0; i < 20; i++)
    append(id, "filler");
  append(id, "the end");
  sink_t k;
  mcp_session_t *s = legacy(&k);
  json_t *m = read_until(s, &k, 2, id, "seventeen bytes!!", 0);
  cr_assert(strstr(call_text(m), "17 bytes; at most 16"), "%s", call_text(m));
  m = read_until(s, &k, 3, id, "^the end$", 0);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(sc(m), "match"), "line")), 22,
               "a batch of one line at a time finds it: %s", json_dumps(sc(m), 0));
  m = read_until(s, &k, 4, id, "(\\\\w+\\\\s?)+i$", 0);
  cr_assert(strstr(call_text(m), "match limit (50 steps) on line 1"), "%s", call_text(m));
  json_decref(k.msgs);
}

/* A read still being scanned when the server ends is answered (timedOut),
 * and the batch on the pool does not outlive the server. */
Test(mcp_pattern, the_end_answers_a_read_being_scanned, .init = fx_open) {
  char id[TFS_ID_MAX + 1];
  failed_task("end", "start", id);
  int fd = tfs_transcript_open_append(F.store, id);
  char ab[4001];
  for (int i = 0; i < 4000; i++)
    ab[i] = "ab "[i % 3];
  ab[4000] = 0;
  for (int i = 0; i < 200; i++)
    tfs_transcript_append(fd, ab, 4000, 1);
  close(fd);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  /* ~200 ms a line (a repeat's backtracking is not counted as steps): the
   * scan outlasts the test. */
  size_t from = send_until(s, &k, 2, id, "(a|b).*(c|d)", 0);
  cr_assert_eq(json_array_size(k.msgs), from, "the read waits for its scan");
  mcp_server_shutdown(F.srv);
  json_t *m = reply_from(&k, from, 2);
  cr_assert(json_is_true(json_object_get(sc(m), "timedOut")), "%s", json_dumps(m, 0));
  json_decref(k.msgs);
  fx_close();
}
