/* The MCP dispatcher with both protocol revisions, driven through the
 * transport-free interface (mcp_dispatch on a session of a server on its
 * own loop): the per-request era and the connection's pin, bad envelopes
 * answered with errors that name the field while the server keeps
 * serving, modern result shaping, arguments checked against the schemas,
 * the hard maxBytes bound, the Tasks utility and the tasks extension,
 * subscriptions/listen, roots for the default cwd, logging, prompts and
 * completion. The same behaviours through real clients are in tests/mcp
 * (SDK 1.x) and tests/mcp2 (v2 client pinned to 2026-07-28). */
#include "tests/mcp_fixture.h"

#define V "io.modelcontextprotocol/protocolVersion"
#define C "io.modelcontextprotocol/clientCapabilities"

Test(mcp_era, the_pin_and_bad_envelopes_are_errors_naming_the_field, .init = fx_open,
     .fini = fx_close) {
  /* Legacy: discover does not pin; initialize does; a modern request then
   * names the field; the session goes on. */
  sink_t ka;
  mcp_session_t *a = session(&ka);
  json_t *m =
      rpc(a, &ka,
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}");
  cr_assert_str_eq(
      json_string_value(json_array_get(json_object_get(result(m), "supportedVersions"), 0)),
      "2026-07-28");
  m = rpc(a, &ka,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
          "\"1900-01-01\",\"capabilities\":{}}}");
  cr_assert_str_eq(str_at(result(m), "protocolVersion"), "2025-11-25",
                   "an unknown version: the latest");
  m = rpc(a, &ka, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{" META "}}");
  cr_assert_eq(err_code(m), -32602);
  cr_assert(
      strstr(err_msg(m),
             "params._meta[\"io.modelcontextprotocol/protocolVersion\"] names the other revision"),
      "%s", err_msg(m));
  m = rpc(a, &ka, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}");
  cr_assert(json_is_object(result(m)), "the session keeps serving");

  /* Modern: the first claimed request pins; then every request needs the
   * envelope, initialize is refused, removed methods say why. */
  sink_t kb;
  mcp_session_t *b = session(&kb);
  m = rpc(b, &kb, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}");
  cr_assert_str_eq(str_at(result(m), "resultType"), "complete");
  m = rpc(b, &kb, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
  cr_assert_eq(err_code(m), -32602);
  cr_assert(strstr(err_msg(m), "protocolVersion\"] is missing"), "%s", err_msg(m));
  cr_assert_str_eq(
      str_at(json_object_get(json_object_get(json_object_get(m, "error"), "data"), "envelope"),
             "key"),
      "io.modelcontextprotocol/protocolVersion");
  m = rpc(b, &kb, INIT_LEGACY);
  cr_assert_eq(err_code(m), -32600);
  cr_assert(strstr(err_msg(m), "already speaks 2026-07-28"), "%s", err_msg(m));
  static const char *const removed[] = {"ping", "logging/setLevel", "tasks/result", "tasks/list",
                                        "resources/subscribe"};
  for (int i = 0; i < 5; i++) {
    m = rpc(b, &kb, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{" META "}}",
            10 + i, removed[i]);
    cr_assert_eq(err_code(m), -32601, "%s", removed[i]);
    cr_assert(strstr(err_msg(m), "is not part of 2026-07-28"), "%s", err_msg(m));
  }

  /* Bad envelopes, each named; the session still serves after them. */
  sink_t kc;
  mcp_session_t *c = session(&kc);
  m = rpc(c, &kc,
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
          "list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
          "protocolVersion\":\"1900-01-01\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
  cr_assert_eq(err_code(m), -32022);
  json_t *data = json_object_get(json_object_get(m, "error"), "data");
  cr_assert_str_eq(str_at(data, "requested"), "1900-01-01");
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(data, "supported"), 0)),
                   "2026-07-28");
  static const struct {
    int code;
    const char *meta, *want;
  } bad[] = {
      {-32022, "{\"" V "\":\"2025-11-25\",\"" C "\":{}}", "negotiated by initialize"},
      {-32602, "{\"" V "\":\"2026-07-28\"}", "clientCapabilities\"] is missing"},
      {-32602, "{\"" V "\":\"2026-07-28\",\"" C "\":5}", "clientCapabilities\"] must be an object"},
      {-32602, "{\"" V "\":7,\"" C "\":{}}", "protocolVersion\"] must be a string"},
      {-32602,
       "{\"" V "\":\"2026-07-28\",\"" C "\":{},\"io.modelcontextprotocol/logLevel\":\"loud\"}",
       "logLevel\"] is not a log level"},
      {-32602, "5", "params._meta must be an object"},
  };
  for (int i = 0; i < 6; i++) {
    m = rpc(c, &kc,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/list\",\"params\":{\"_meta\":%s}}",
            2 + i, bad[i].meta);
    cr_assert_eq(err_code(m), bad[i].code, "%s", bad[i].meta);
    cr_assert(strstr(err_msg(m), bad[i].want), "%s: %s", bad[i].meta, err_msg(m));
  }
  /* A huge _meta: 100,000 bytes of one key. */
  char *big = malloc(100001);
  memset(big, 'x', 100000);
  big[100000] = 0;
  m = rpc(c, &kc,
          "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/"
          "list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
          "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
          "clientCapabilities\":{},\"com.example/pad\":\"%s\"}}}",
          big);
  free(big);
  cr_assert_eq(err_code(m), -32602);
  cr_assert(strstr(err_msg(m), "params._meta is 100"), "%s", err_msg(m));
  m = rpc(c, &kc,
          "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"server/discover\",\"params\":{" META "}}");
  cr_assert(json_is_object(result(m)), "still serving");
  json_decref(ka.msgs);
  json_decref(kb.msgs);
  json_decref(kc.msgs);
}

Test(mcp_era, modern_results_are_shaped_and_legacy_ones_are_not, .init = fx_open,
     .fini = fx_close) {
  sink_t k;
  mcp_session_t *s = session(&k);
  json_t *m =
      rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}");
  json_t *r = result(m);
  cr_assert_str_eq(str_at(r, "resultType"), "complete");
  cr_assert_str_eq(str_at(r, "cacheScope"), "public");
  cr_assert_gt(json_integer_value(json_object_get(r, "ttlMs")), 0);
  cr_assert_str_eq(
      str_at(json_object_get(json_object_get(r, "_meta"), "io.modelcontextprotocol/serverInfo"),
             "name"),
      "taskfs");
  cr_assert_str_eq(
      str_at(json_object_get(json_array_get(json_object_get(r, "tools"), 0), "execution"),
             "taskSupport"),
      "optional", "2026-07-28 tools say which calls may become tasks");
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/list\",\"params\":{" META "}}");
  cr_assert_str_eq(str_at(result(m), "cacheScope"), "private");
  cr_assert_eq(json_integer_value(json_object_get(result(m), "ttlMs")), 0);
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/"
          "call\",\"params\":{\"name\":\"list_managed_tasks\",\"arguments\":{}," META "}}");
  cr_assert_str_eq(str_at(result(m), "resultType"), "complete");
  cr_assert_null(json_object_get(result(m), "ttlMs"), "tools/call is not cacheable");
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/"
          "call\",\"params\":{\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"zzzzzzzz-"
          "zzzzzz\"}," META "}}");
  cr_assert_str_eq(str_at(result(m), "resultType"), "complete", "the raw result path too");
  cr_assert(json_is_true(json_object_get(result(m), "isError")));
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/"
          "read\",\"params\":{\"uri\":\"taskfs://tasks/zzzzzzzz-zzzzzz/record\"," META "}}");
  cr_assert_eq(err_code(m), -32602, "2026-07-28: resource not found is -32602");

  sink_t kl;
  mcp_session_t *l = legacy(&kl);
  m = rpc(l, &kl, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
  cr_assert_null(json_object_get(result(m), "resultType"));
  cr_assert_str_eq(
      str_at(json_object_get(json_array_get(json_object_get(result(m), "tools"), 0), "execution"),
             "taskSupport"),
      "optional");
  m = rpc(l, &kl,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/"
          "read\",\"params\":{\"uri\":\"taskfs://tasks/zzzzzzzz-zzzzzz/record\"}}");
  cr_assert_eq(err_code(m), -32002, "2025-11-25: resource not found is -32002");
  json_decref(k.msgs);
  json_decref(kl.msgs);
}

Test(mcp_era, tasks_need_the_extension_and_name_a_foreign_id, .init = fx_open, .fini = fx_close) {
  sink_t k;
  mcp_session_t *s = session(&k);
  json_t *m = rpc(s, &k,
                  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/"
                  "get\",\"params\":{\"taskId\":\"zzzzzzzz-zzzzzz\"," META "}}");
  cr_assert_eq(err_code(m), -32021);
  cr_assert(json_is_object(json_object_get(
      json_object_get(json_object_get(json_object_get(json_object_get(m, "error"), "data"),
                                      "requiredCapabilities"),
                      "extensions"),
      "io.modelcontextprotocol/tasks")));
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/"
          "get\",\"params\":{\"taskId\":\"zzzzzzzz-zzzzzz\"," META_TASKS "}}");
  cr_assert_eq(err_code(m), -32602);
  cr_assert(strstr(err_msg(m), "no task 'zzzzzzzz-zzzzzz' in this server's store"), "%s",
            err_msg(m));
  cr_assert(strstr(err_msg(m), F.dir), "names the store: %s", err_msg(m));
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"subscriptions/"
          "listen\",\"params\":{\"notifications\":{\"taskIds\":[\"zzzzzzzz-zzzzzz\"]}," META "}}");
  cr_assert_eq(err_code(m), -32021, "taskIds need the extension");
  sink_t kl;
  mcp_session_t *l = legacy(&kl);
  m = rpc(l, &kl,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/"
          "get\",\"params\":{\"taskId\":\"zzzzzzzz-zzzzzz\"}}");
  cr_assert_eq(err_code(m), -32602);
  cr_assert(strstr(err_msg(m), "in this server's store"), "%s", err_msg(m));
  m = rpc(l, &kl,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/"
          "list\",\"params\":{\"cursor\":\"zzzzzzzz-zzzzzz\"}}");
  cr_assert_eq(err_code(m), -32602, "a cursor that names no task");
  cr_assert(strstr(err_msg(m), "names no task"), "%s", err_msg(m));
  json_decref(k.msgs);
  json_decref(kl.msgs);
}

/* Arguments are checked against the tool's own schema: wrongly typed ones
 * are reported as wrongly typed, bounds are the schema's, and a task
 * augmented call gets the same isError result as a plain one. */
Test(mcp_era, arguments_are_checked_against_the_schema, .init = fx_open, .fini = fx_close) {
  sink_t k;
  mcp_session_t *s = legacy(&k);
  static const struct {
    const char *args, *want;
  } cases[] = {
      {"{\"taskKey\":123}", "taskKey must be a string (got the number 123)"},
      {"{\"taskKey\":\"k\",\"waitMs\":-1}",
       "waitMs must be an integer from 0 to 50000 (got the number -1)"},
      {"{\"taskKey\":\"k\",\"waitMs\":60000}", "waitMs must be an integer from 0 to 50000"},
      {"{\"taskKey\":\"k\",\"maxBytes\":100}", "maxBytes must be an integer from 1024 to 262144"},
      {"{\"taskKey\":\"k\",\"untilPattern\":5}", "untilPattern must be a string"},
  };
  for (int i = 0; i < 5; i++) {
    json_t *m = rpc(s, &k,
                    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/"
                    "call\",\"params\":{\"name\":\"read_managed_task\",\"arguments\":%s}}",
                    10 + i, cases[i].args);
    cr_assert(json_is_true(json_object_get(result(m), "isError")), "%s", cases[i].args);
    cr_assert(strstr(call_text(m), cases[i].want), "%s: %s", cases[i].args, call_text(m));
  }
  static const struct {
    const char *args, *want;
  } starts[] = {
      {"{\"command\":\"true\"}", "taskKey is required"},
      {"{\"taskKey\":\"k\",\"command\":{}}",
       "command must be a non-empty array of strings or a non-empty string (got an object)"},
      {"{\"taskKey\":\"k\",\"command\":\"true\",\"env\":{\"A\":1}}",
       "env.A must be a string (got the number 1)"},
      {"{\"taskKey\":\"k\",\"command\":\"true\",\"restart\":\"sometimes\"}",
       "restart must be one of no, on-failure, always"},
      {"{\"taskKey\":\"k\",\"command\":\"true\",\"rerun\":\"yes\"}", "rerun must be true or false"},
  };
  for (int i = 0; i < 5; i++) {
    json_t *m =
        rpc(s, &k,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/"
            "call\",\"params\":{\"name\":\"start_managed_task\",\"arguments\":%s,\"task\":{}}}",
            20 + i, starts[i].args);
    cr_assert(json_is_true(json_object_get(result(m), "isError")),
              "task-augmented, still isError: %s", starts[i].args);
    cr_assert(strstr(call_text(m), starts[i].want), "%s: %s", starts[i].args, call_text(m));
  }
  json_decref(k.msgs);
}

/* An MCP task stands for the call: a task-augmented start on a key whose
 * task has ended begins working (2025-11-25) and reads completed, and
 * tasks/result is exactly the plain call's answer (no isError for a task
 * that ran and failed). In 2026-07-28 nothing is launched, so the server
 * answers at once, and tasks/get inlines the same result. */
Test(mcp_era, task_results_are_the_plain_call_s, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("ended", "error: it broke", id);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  const char *start =
      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"start_managed_task\",\"arguments\":{\"taskKey\":\"ended\",\"command\":"
      "[\"false\"],\"cwd\":\"/\"}%s}}";
  json_t *m = rpc(s, &k, start, 2, ",\"task\":{\"ttl\":60000}");
  json_t *task = json_object_get(result(m), "task");
  cr_assert_str_eq(str_at(task, "taskId"), id);
  cr_assert_str_eq(str_at(task, "status"), "working", "tasks begin working");
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"%s\"}}",
          id);
  cr_assert_str_eq(str_at(result(m), "status"), "completed");
  cr_assert(strstr(str_at(result(m), "statusMessage"), "failed"), "%s",
            str_at(result(m), "statusMessage"));
  m = rpc(
      s, &k,
      "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tasks/result\",\"params\":{\"taskId\":\"%s\"}}",
      id);
  json_t *via_task = json_deep_copy(json_object_get(result(m), "structuredContent"));
  cr_assert_null(json_object_get(result(m), "isError"));
  cr_assert_str_eq(str_at(json_object_get(json_object_get(result(m), "_meta"),
                                          "io.modelcontextprotocol/related-task"),
                          "taskId"),
                   id);
  m = rpc(s, &k, start, 5, "");
  cr_assert_null(json_object_get(result(m), "isError"), "the plain call: no isError either");
  json_t *plain = json_object_get(result(m), "structuredContent");
  cr_assert_str_eq(str_at(plain, "state"), "failed");
  cr_assert_str_eq(str_at(via_task, "state"), "failed");
  cr_assert(
      json_equal(json_object_get(plain, "important"), json_object_get(via_task, "important")));
  json_decref(via_task);

  sink_t km;
  mcp_session_t *n = session(&km);
  m = rpc(n, &km,
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
          "call\",\"params\":{\"name\":\"start_managed_task\",\"arguments\":{\"taskKey\":\"ended\","
          "\"command\":[\"false\"],\"cwd\":\"/\"}," META_TASKS "}}");
  cr_assert_str_eq(str_at(result(m), "resultType"), "complete", "nothing launched: no task");
  cr_assert(
      json_is_true(json_object_get(json_object_get(result(m), "structuredContent"), "existing")));
  m = rpc(n, &km,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/"
          "get\",\"params\":{\"taskId\":\"%s\"," META_TASKS "}}",
          id);
  cr_assert_str_eq(str_at(result(m), "resultType"), "complete");
  cr_assert_str_eq(str_at(result(m), "status"), "completed");
  cr_assert(json_is_null(json_object_get(result(m), "ttlMs")));
  json_t *inl = json_object_get(result(m), "result");
  cr_assert_str_eq(str_at(inl, "resultType"), "complete");
  cr_assert_null(json_object_get(inl, "isError"));
  cr_assert_str_eq(str_at(json_object_get(inl, "structuredContent"), "state"), "failed");
  m = rpc(n, &km,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/"
          "update\",\"params\":{\"taskId\":\"%s\",\"inputResponses\":{}," META_TASKS "}}",
          id);
  cr_assert_str_eq(str_at(result(m), "resultType"), "complete");
  m = rpc(n, &km,
          "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tasks/"
          "cancel\",\"params\":{\"taskId\":\"%s\"," META_TASKS "}}",
          id);
  cr_assert_str_eq(str_at(result(m), "resultType"), "complete", "an ack, also for an ended task");
  json_decref(k.msgs);
  json_decref(km.msgs);
}
