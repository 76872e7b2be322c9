/* Numbers from JSON are checked before any conversion (issue 11, finding
 * 7), through the real dispatcher (tests/mcp_fixture.h, both eras): every
 * numeric argument of every tool with every hostile value jansson accepts
 * -- reals far out of range (1e300), reals that are not integers (1.5),
 * negative zero, the int64 extremes, integers beyond 2^53 -- is either
 * refused with an error naming the argument and its bounds or taken as the
 * integer it is; sinceLine at the int64 maximum (signed overflow in the
 * page arithmetic, seen under UBSan) is refused; an argument the tool does
 * not have (sinceLine on start) is not read; integers too big for int64
 * and reals too big for a double are answered, not dropped. Every integer
 * of every tool schema has both bounds, within 2^53. make asan runs this
 * file under UBSan with halt_on_error. */
#include "tests/mcp_fixture.h"

#define MAX_SAFE "9007199254740991"

static json_t *sc(json_t *m) {
  return json_object_get(result(m), "structuredContent");
}

/* A tools/call, sent as text (the fixture's rpc() parses its request to
 * learn the id, which an integer beyond int64 would not survive). */
static json_t *call(mcp_session_t *s, sink_t *k, int id, const char *tool, const char *args,
                    const char *meta) {
  size_t from = fx_send(s, k,
                        "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                        "\"name\":\"%s\",\"arguments\":%s%s%s}}",
                        id, tool, args, meta ? "," : "", meta ? meta : "");
  return reply_from(k, from, id);
}

/* Every integer a tool takes has a minimum and a maximum, both exact in a
 * double (|n| <= 2^53 - 1), so that whatever passes the schema can be
 * converted and added to without overflow. */
Test(mcp_numbers, every_schema_integer_has_both_bounds, .init = fx_open, .fini = fx_close) {
  sink_t k;
  mcp_session_t *s = legacy(&k);
  json_t *m = rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
  json_t *tools = json_object_get(result(m), "tools"), *t;
  size_t i, n = 0;
  json_array_foreach(tools, i, t) {
    const char *key;
    json_t *p;
    json_object_foreach(json_object_get(json_object_get(t, "inputSchema"), "properties"), key, p) {
      if (strcmp(str_at(p, "type"), "integer"))
        continue;
      json_t *min = json_object_get(p, "minimum"), *max = json_object_get(p, "maximum");
      cr_expect(json_is_integer(min) && json_is_integer(max), "%s.%s has no %s", str_at(t, "name"),
                key, json_is_integer(min) ? "maximum" : "minimum");
      if (json_is_integer(min) && json_is_integer(max))
        cr_expect(json_integer_value(min) >= -9007199254740991LL &&
                      json_integer_value(max) <= 9007199254740991LL,
                  "%s.%s: bounds beyond 2^53", str_at(t, "name"), key);
      n++;
    }
  }
  cr_assert_geq(n, 11, "the integers of the four tools (got %zu)", n);
  json_decref(k.msgs);
}

/* Each hostile value for each integer argument of read and list: refused
 * naming the argument, or (negative zero, an integral real in range) taken
 * as the integer. */
Test(mcp_numbers, hostile_values_are_refused_or_exact, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("n", "error: the only line", id);
  static const char *const hostile[] = {
      "1e300",
      "-1e300",
      "1.5",
      "-0.5",
      "9223372036854775807",
      "-9223372036854775808",
      "9.3e18",
      "1e19",
      "9007199254740993",
      "4.9e-324",
      "-9007199254740993",
  };
  static const struct {
    const char *tool, *arg;
    const char *exact; /* an integral real in the bounds */
  } args[] = {
      {"read_managed_task", "waitMs", "-0.0"},    {"read_managed_task", "tailLines", "-0.0"},
      {"read_managed_task", "sinceLine", "-0.0"}, {"read_managed_task", "maxBytes", "1024.0"},
      {"list_managed_tasks", "limit", "5.0"},
  };
  for (int era = 0; era < 2; era++) {
    sink_t k;
    mcp_session_t *s = era ? session(&k) : legacy(&k);
    const char *meta = era ? META : NULL;
    int rid = 10;
    for (size_t a = 0; a < sizeof args / sizeof args[0]; a++) {
      for (size_t h = 0; h < sizeof hostile / sizeof hostile[0]; h++) {
        char av[200];
        snprintf(av, sizeof av, "{\"taskId\":\"%s\",\"%s\":%s}", id, args[a].arg, hostile[h]);
        json_t *m = call(s, &k, rid++, args[a].tool, av, meta);
        cr_assert(json_is_true(json_object_get(result(m), "isError")), "%s %s: accepted: %s",
                  args[a].tool, av, json_dumps(m, 0));
        char want[80];
        snprintf(want, sizeof want, "%s must be an integer", args[a].arg);
        cr_assert(strstr(call_text(m), want), "%s: %s", av, call_text(m));
      }
      /* Negative zero and an integral real are the integer they hold. */
      char av[200];
      snprintf(av, sizeof av, "{\"taskId\":\"%s\",\"%s\":%s}", id, args[a].arg, args[a].exact);
      json_t *m = call(s, &k, rid++, args[a].tool, av, meta);
      cr_assert_null(json_object_get(result(m), "isError"), "%s: %s", av, call_text(m));
    }
    json_decref(k.msgs);
  }
}

/* sinceLine: the largest int64 overflowed the page arithmetic (UB, and
 * pages from line 1); beyond 2^53 it is refused, at 2^53 - 1 the page is
 * empty and nextLine says where it stands. */
Test(mcp_numbers, since_line_at_the_extremes, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("s", "error: line one", id);
  append(id, "line two");
  sink_t k;
  mcp_session_t *s = legacy(&k);
  char av[200];
  snprintf(av, sizeof av, "{\"taskId\":\"%s\",\"sinceLine\":9223372036854775807}", id);
  json_t *m = call(s, &k, 2, "read_managed_task", av, NULL);
  cr_assert(json_is_true(json_object_get(result(m), "isError")),
            "sinceLine INT64_MAX is refused, not paged from line 1: %s", json_dumps(m, 0));
  cr_assert(strstr(call_text(m), "sinceLine must be an integer from 0 to " MAX_SAFE), "%s",
            call_text(m));
  snprintf(av, sizeof av, "{\"taskId\":\"%s\",\"sinceLine\":" MAX_SAFE ",\"tailLines\":1000}", id);
  m = call(s, &k, 3, "read_managed_task", av, NULL);
  cr_assert_null(json_object_get(result(m), "isError"), "%s", call_text(m));
  cr_assert_eq(json_array_size(json_object_get(sc(m), "tail")), 0);
  cr_assert_eq(json_integer_value(json_object_get(sc(m), "nextLine")), 9007199254740991LL);
  snprintf(av, sizeof av, "{\"taskId\":\"%s\",\"sinceLine\":1}", id);
  m = call(s, &k, 4, "read_managed_task", av, NULL);
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(sc(m), "tail"), 0)),
                   "line two");
  json_decref(k.msgs);
}

/* sinceLine is not an argument of start_managed_task: its answer is the
 * tail (the last 20 of 30 lines), whatever sinceLine says. */
Test(mcp_numbers, an_argument_the_tool_does_not_have_is_not_read, .init = fx_open,
     .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("ended", "error: it broke", id);
  for (int i = 2; i <= 30; i++)
    append(id, "more");
  sink_t k;
  mcp_session_t *s = legacy(&k);
  static const char *const since[] = {"9223372036854775807", "-9223372036854775808", "9.2e18", "5"};
  for (int i = 0; i < 4; i++) {
    char av[300];
    snprintf(av, sizeof av,
             "{\"taskKey\":\"ended\",\"command\":[\"false\"],\"cwd\":\"/\",\"waitMs\":0,"
             "\"sinceLine\":%s}",
             since[i]);
    json_t *m = call(s, &k, 10 + i, "start_managed_task", av, NULL);
    cr_assert_null(json_object_get(result(m), "isError"), "%s", call_text(m));
    cr_assert_eq(json_integer_value(json_object_get(sc(m), "tailFrom")), 11,
                 "sinceLine %s: the tail, not a page: %s", since[i], json_dumps(sc(m), 0));
    cr_assert_eq(json_integer_value(json_object_get(sc(m), "nextLine")), 30);
  }
  json_decref(k.msgs);
}

/* Integers beyond int64 (what a JavaScript client sends for 2**63) are
 * answered as the out-of-range numbers they are, with the request's id;
 * a real beyond a double (1e400), NaN and Infinity are not JSON: -32700.
 * The session goes on. */
Test(mcp_numbers, numbers_beyond_int64_are_answered, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("b", "error: x", id);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  char av[200];
  snprintf(av, sizeof av, "{\"taskId\":\"%s\",\"sinceLine\":9223372036854775808}", id);
  json_t *m = call(s, &k, 7, "read_managed_task", av, NULL);
  cr_assert(json_is_true(json_object_get(result(m), "isError")), "%s", json_dumps(m, 0));
  cr_assert(strstr(call_text(m), "sinceLine must be an integer from 0 to " MAX_SAFE), "%s",
            call_text(m));
  snprintf(av, sizeof av, "{\"taskId\":\"%s\",\"waitMs\":-123456789012345678901234567890}", id);
  m = call(s, &k, 8, "read_managed_task", av, NULL);
  cr_assert(strstr(call_text(m), "waitMs must be an integer from 0 to 50000"), "%s",
            json_dumps(m, 0));
  /* The id itself too big: answered with id null, as a bad id is. */
  size_t from =
      fx_send(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"ping\"}");
  cr_assert_eq(json_array_size(k.msgs), from + 1);
  m = json_array_get(k.msgs, from);
  cr_assert_eq(err_code(m), -32600, "%s", json_dumps(m, 0));
  cr_assert(json_is_null(json_object_get(m, "id")));
  static const char *const not_json[] = {"1e400", "-1e400", "NaN", "Infinity"};
  for (int i = 0; i < 4; i++) {
    from = fx_send(s, &k,
                   "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\",\"waitMs\":%s}}}",
                   id, not_json[i]);
    cr_assert_eq(err_code(json_array_get(k.msgs, from)), -32700, "%s", not_json[i]);
  }
  m = rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}");
  cr_assert(json_is_object(result(m)), "the session goes on");
  json_decref(k.msgs);
}

/* The integer arguments of start_managed_task, each with the hostile
 * values: refused naming the argument, and no task is made. */
Test(mcp_numbers, start_arguments_are_checked_before_anything_runs, .init = fx_open,
     .fini = fx_close) {
  sink_t k;
  mcp_session_t *s = session(&k);
  static const char *const names[] = {"waitMs",      "tailLines", "maxBytes",
                                      "minUptimeMs", "graceMs",   "maxRestarts"};
  static const char *const hostile[] = {"1e300", "1.5", "9223372036854775807",
                                        "-9223372036854775808", "1e19"};
  int rid = 1;
  for (int n = 0; n < 6; n++)
    for (int h = 0; h < 5; h++) {
      char av[300];
      snprintf(av, sizeof av,
               "{\"taskKey\":\"never-%d-%d\",\"command\":[\"true\"],\"cwd\":\"/\",\"%s\":%s}", n, h,
               names[n], hostile[h]);
      json_t *m = call(s, &k, rid++, "start_managed_task", av, META);
      cr_assert(json_is_true(json_object_get(result(m), "isError")), "%s", av);
      char want[80];
      snprintf(want, sizeof want, "%s must be an integer", names[n]);
      cr_assert(strstr(call_text(m), want), "%s: %s", av, call_text(m));
    }
  tfs_list_stats_t st;
  tfs_list_opts_t o = {0};
  cr_assert_eq(tfs_task_list_opts(F.store, &o, NULL, NULL, &st), 0);
  cr_assert_eq(st.ids, 0, "no task was made");
  json_decref(k.msgs);
}
