/* Limits and resource use through the MCP server, in both revisions
 * (2025-11-25 after initialize, 2026-07-28 per request): start_managed_task
 * with timeoutMs and limits runs a real supervisor (the task times out),
 * bad limits are isError results in core's words, every answer and list
 * entry carries cpuMs and maxRssKb, the record resource has the record's
 * limits and usage, and tools/list describes the new fields. */
#include "tests/mcp_fixture.h"

TestSuite(mcp_limits, .init = fx_open, .fini = fx_close, .timeout = 60);

/* One tools/call in the era of s (legacy: after initialize; modern: the
 * _meta envelope). */
static json_t *call(mcp_session_t *s, sink_t *k, int modern, int id, const char *tool,
                    const char *args) {
  return rpc(s, k,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":%s%s}}",
             id, tool, args, modern ? "," META : "");
}

static json_t *sc(json_t *m) {
  json_t *o = json_object_get(result(m), "structuredContent");
  cr_assert(json_is_object(o), "no structuredContent: %s", call_text(m));
  return o;
}

static void a_timeout_and_usage_in(int modern) {
  sink_t k;
  mcp_session_t *s = modern ? session(&k) : legacy(&k);
  char args[512];
  snprintf(args, sizeof args,
           "{\"taskKey\":\"limited-%d\",\"command\":\"trap '' TERM; sleep 300\",\"cwd\":\"/\","
           "\"timeoutMs\":500,\"graceMs\":200,\"waitMs\":30000,\"limits\":{\"cpu\":60,"
           "\"nofile\":\"4096\",\"core\":0}}",
           modern);
  json_t *m = call(s, &k, modern, 2, "start_managed_task", args);
  json_t *o = sc(m);
  cr_assert_str_eq(str_at(o, "state"), "failed", "%s", call_text(m));
  cr_assert_eq(json_integer_value(json_object_get(o, "exitCode")), 124);
  cr_assert(strstr(str_at(o, "reason"), "timed out after 500ms; the worker was killed by signal "
                                        "SIGKILL after the grace period ran out"),
            "%s", str_at(o, "reason"));
  cr_assert(json_is_integer(json_object_get(o, "cpuMs")), "cpuMs in %s", call_text(m));
  cr_assert_gt(json_integer_value(json_object_get(o, "maxRssKb")), 0);
  char id[TFS_ID_MAX + 1];
  snprintf(id, sizeof id, "%s", str_at(o, "taskId"));
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(F.store, id, &rec), 0);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_CPU].value, 60);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_NOFILE].value, 4096);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_CORE].via, TFS_VIA_RLIMIT);
  cr_assert_eq(rec.limits.timeout_from, TFS_FROM_GIVEN);
  tfs_record_free(&rec);
  /* read and list say the same. */
  snprintf(args, sizeof args, "{\"taskId\":\"%s\"}", id);
  m = call(s, &k, modern, 3, "read_managed_task", args);
  cr_assert(json_is_integer(json_object_get(sc(m), "cpuMs")));
  m = call(s, &k, modern, 4, "list_managed_tasks", "{}");
  json_t *first = json_array_get(json_object_get(sc(m), "tasks"), 0);
  cr_assert_str_eq(str_at(first, "taskId"), id);
  cr_assert(json_is_integer(json_object_get(first, "cpuMs")) &&
            json_is_integer(json_object_get(first, "maxRssKb")));
  /* The record resource is the record: limits and usage as stored. */
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/read\",\"params\":{\"uri\":"
          "\"taskfs://tasks/%s/record\"%s}}",
          id, modern ? "," META : "");
  const char *text = str_at(json_array_get(json_object_get(result(m), "contents"), 0), "text");
  cr_assert(strstr(text, "\"timedOut\": true") && strstr(text, "\"usage\": {") &&
                strstr(text, "\"via\": \"RLIMIT_NOFILE\""),
            "%s", text);
  json_decref(k.msgs);
}

Test(mcp_limits, a_timeout_and_usage_in_2025_11_25) {
  a_timeout_and_usage_in(0);
}

Test(mcp_limits, a_timeout_and_usage_in_2026_07_28) {
  a_timeout_and_usage_in(1);
}

/* Bad limits: the same words as taskfs run, as an isError result; the
 * schema's bound for timeoutMs; no task made. */
Test(mcp_limits, bad_limits_are_tool_errors_in_both_eras) {
  static const struct {
    const char *args, *words;
  } cases[] = {
      {"\"limits\":{\"swap\":\"1G\"}", "limits: unknown limit 'swap': the limits are mem, cpu"},
      {"\"limits\":{\"mem\":\"-1\"}", "limits: mem=-1: the mem limit wants a size"},
      {"\"limits\":{\"mem\":\"2G,cpu=1\"}", "limits.mem: '2G,cpu=1' is one value"},
      {"\"limits\":{\"cpu\":0}", "the cpu limit wants a CPU time"},
      {"\"timeoutMs\":0", "timeoutMs must be an integer from 1 to 2678400000"},
      {"\"limits\":{\"nofile\":true}", "limits.nofile"},
  };
  for (int modern = 0; modern < 2; modern++) {
    sink_t k;
    mcp_session_t *s = modern ? session(&k) : legacy(&k);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
      char args[512];
      snprintf(args, sizeof args, "{\"taskKey\":\"bad\",\"command\":\"true\",\"cwd\":\"/\",%s}",
               cases[i].args);
      json_t *m = call(s, &k, modern, 10 + (int)i, "start_managed_task", args);
      cr_assert(json_is_true(json_object_get(result(m), "isError")), "%s", cases[i].args);
      cr_assert(strstr(call_text(m), cases[i].words), "%s: %s", cases[i].args, call_text(m));
    }
    json_decref(k.msgs);
  }
  cr_assert_eq(tfs_task_count(F.store), 0);
}

/* What a record says it used is what every answer says, in ms and KiB. */
Test(mcp_limits, answers_carry_the_records_use) {
  char id[TFS_ID_MAX + 1];
  char *const argv[] = {"true", NULL};
  make_task("used", argv, "/", TFS_COMPLETED, "exited with code 0", id);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(F.store, id, &rec), 0);
  rec.started_ms = rec.created_ms;
  rec.usage.user_ms = 1200;
  rec.usage.sys_ms = 34;
  rec.usage.maxrss_kb = 5678;
  cr_assert_eq(tfs_task_save(F.store, &rec), 0);
  tfs_record_free(&rec);
  for (int modern = 0; modern < 2; modern++) {
    sink_t k;
    mcp_session_t *s = modern ? session(&k) : legacy(&k);
    json_t *m = call(s, &k, modern, 2, "read_managed_task", "{\"taskKey\":\"used\"}");
    cr_assert_eq(json_integer_value(json_object_get(sc(m), "cpuMs")), 1234);
    cr_assert_eq(json_integer_value(json_object_get(sc(m), "maxRssKb")), 5678);
    m = call(s, &k, modern, 3, "cancel_managed_task", "{\"taskKey\":\"used\"}");
    cr_assert_eq(json_integer_value(json_object_get(sc(m), "cpuMs")), 1234);
    /* tools/list describes them and the new arguments. */
    m = rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{%s}}",
            modern ? META : "");
    json_t *start = json_array_get(json_object_get(result(m), "tools"), 0);
    json_t *in = json_object_get(json_object_get(start, "inputSchema"), "properties");
    json_t *read = json_array_get(json_object_get(result(m), "tools"), 1);
    cr_assert(strstr(str_at(json_object_get(in, "timeoutMs"), "description"), "exitCode 124"));
    cr_assert(strstr(str_at(json_object_get(in, "limits"), "description"), "mem"));
    cr_assert(json_object_get(json_object_get(in, "limits"), "additionalProperties"));
    cr_assert_str_eq(str_at(json_object_get(in, "restartOnTimeout"), "type"), "boolean");
    cr_assert(strstr(str_at(read, "description"), "cpuMs: CPU time"));
    cr_assert(strstr(str_at(read, "description"), "maxRssKb: peak RSS, KiB"));
    json_decref(k.msgs);
  }
}
