/* Requests in flight are bounded (issue 11, finding 3: 200 parked reads
 * held 2.37 GB for 50 s): per session and per server, through the real
 * dispatcher (tests/mcp_fixture.h). A request over a limit gets a
 * JSON-RPC error in the -32000 range whose data names the limit; a
 * request that does not wait is still served; a slot comes back when a
 * waiting request is answered, cancelled or its session ends. */
#include "tests/mcp_fixture.h"

/* Sends a long-poll of the queued task id (it never ends: no supervisor
 * runs it) and returns the message it got at once, or NULL (it waits). */
static json_t *park(mcp_session_t *s, sink_t *k, int rid, const char *id) {
  size_t from = fx_send(s, k,
                        "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                        "\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
                        "\"waitMs\":40000}}}",
                        rid, id);
  return json_array_size(k->msgs) > from ? json_array_get(k->msgs, from) : NULL;
}

static const char *data_limit(json_t *m) {
  return str_at(json_object_get(json_object_get(m, "error"), "data"), "limit");
}

static void queued_task(char id[TFS_ID_MAX + 1]) {
  char *const argv[] = {"sleep", "60", NULL};
  make_task("q", argv, "/", TFS_QUEUED, NULL, id);
}

/* The defaults: 64 waiting requests per session, 256 per server. */
Test(mcp_flight, waiting_requests_are_bounded_per_session_and_server, .init = fx_open,
     .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  queued_task(id);
  sink_t ka;
  mcp_session_t *a = legacy(&ka);
  for (int i = 0; i < 64; i++)
    cr_assert_null(park(a, &ka, 100 + i, id), "request %d waits", i);
  json_t *m = park(a, &ka, 200, id);
  cr_assert_not_null(m, "the 65th of a session is refused at once");
  cr_assert_eq(err_code(m), -32000, "%s", json_dumps(m, 0));
  cr_assert_str_eq(data_limit(m), "requestsPerSession");
  cr_assert_eq(json_integer_value(
                   json_object_get(json_object_get(json_object_get(m, "error"), "data"), "max")),
               64);
  cr_assert(strstr(err_msg(m), "64"), "%s", err_msg(m));
  /* What does not wait is served. */
  m = rpc(a, &ka, "{\"jsonrpc\":\"2.0\",\"id\":201,\"method\":\"ping\"}");
  cr_assert(json_is_object(result(m)));
  m = rpc(a, &ka,
          "{\"jsonrpc\":\"2.0\",\"id\":202,\"method\":\"tools/call\",\"params\":{\"name\":"
          "\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\"}}}",
          id);
  cr_assert_str_eq(str_at(json_object_get(result(m), "structuredContent"), "state"), "queued");
  /* Cancelling one gives its slot back. */
  fx_send(a, &ka,
          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":"
          "100}}");
  cr_assert_null(park(a, &ka, 203, id), "a slot came back");

  /* Three more sessions fill the server's 256; the next is refused with
   * the server's limit. */
  sink_t kb[3];
  mcp_session_t *b[3];
  int n = 64;
  for (int j = 0; j < 3; j++) {
    b[j] = legacy(&kb[j]);
    for (int i = 0; i < 64; i++, n++)
      cr_assert_null(park(b[j], &kb[j], 100 + i, id), "request %d of the server waits", n);
  }
  sink_t kc;
  mcp_session_t *c = legacy(&kc);
  m = park(c, &kc, 100, id);
  cr_assert_not_null(m);
  cr_assert_eq(err_code(m), -32000);
  cr_assert_str_eq(data_limit(m), "requestsPerServer");
  /* A session that ends gives its slots back. */
  mcp_session_close(b[0]);
  cr_assert_null(park(c, &kc, 101, id));
  /* Their waiting requests end with them (unanswered), before the sinks. */
  mcp_session_close(a);
  mcp_session_close(b[1]);
  mcp_session_close(b[2]);
  mcp_session_close(c);
  json_decref(ka.msgs);
  for (int j = 0; j < 3; j++)
    json_decref(kb[j].msgs);
  json_decref(kc.msgs);
}

/* The limits are the server's config (mcp_server_config_t.limits), which
 * a transport with many connections applies per connection: with 2 per
 * session and 3 per server, a long-poll, a listen and a start are each
 * one request in flight; over the limit each is refused, and nothing is
 * started for a refused start. */
static void fx_open_small(void) {
  FX_LIMITS = (mcp_limits_t){.requests_per_session = 2, .requests_per_server = 3};
  fx_open();
}

Test(mcp_flight, the_limits_are_the_server_s_config, .init = fx_open_small, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  queued_task(id);
  sink_t ka;
  mcp_session_t *a = session(&ka);
  size_t from = fx_send(a, &ka,
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"subscriptions/listen\","
                        "\"params\":{\"notifications\":{}," META "}}");
  cr_assert_str_eq(str_at(json_array_get(ka.msgs, from), "method"),
                   "notifications/subscriptions/acknowledged");
  from =
      fx_send(a, &ka,
              "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
              "\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\",\"waitMs\":40000}," META "}}",
              id);
  cr_assert_eq(json_array_size(ka.msgs), from, "the second waits");
  const char *start =
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"start_managed_task\",\"arguments\":{\"taskKey\":\"never\",\"command\":"
      "[\"true\"],\"cwd\":\"/\"}," META "}}";
  json_t *m = rpc(a, &ka, "%s", start);
  cr_assert_eq(err_code(m), -32000, "%s", json_dumps(m, 0));
  cr_assert_str_eq(data_limit(m), "requestsPerSession");
  char never[TFS_ID_MAX + 1];
  cr_assert_eq(tfs_key_lookup(F.store, "never", never), TFS_ENOTASK,
               "a refused start makes nothing");
  m = rpc(a, &ka,
          "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"subscriptions/listen\",\"params\":"
          "{\"notifications\":{}," META "}}");
  cr_assert_eq(err_code(m), -32000);
  /* A second session: one more fits the server's 3, then its limit. */
  sink_t kb;
  mcp_session_t *b = legacy(&kb);
  cr_assert_null(park(b, &kb, 10, id));
  m = park(b, &kb, 11, id);
  cr_assert_not_null(m);
  cr_assert_str_eq(data_limit(m), "requestsPerServer");
  cr_assert_eq(json_integer_value(
                   json_object_get(json_object_get(json_object_get(m, "error"), "data"), "max")),
               3);
  /* Ending the listen gives its slot back. */
  fx_send(a, &ka,
          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
          "cancelled\",\"params\":{\"requestId\":1," META "}}");
  cr_assert_null(park(b, &kb, 12, id));
  mcp_session_close(a);
  mcp_session_close(b);
  json_decref(ka.msgs);
  json_decref(kb.msgs);
}

/* What a waiting request holds is bounded too: its string id is at most
 * 1024 bytes (a longer one is -32600 with id null, as a bad id is). */
Test(mcp_flight, a_request_s_id_is_bounded, .init = fx_open, .fini = fx_close) {
  sink_t k;
  mcp_session_t *s = legacy(&k);
  char *line = malloc(1200);
  for (int n = 1024; n <= 1025; n++) {
    memset(line, 0, 1200);
    strcpy(line, "{\"jsonrpc\":\"2.0\",\"id\":\"");
    memset(line + strlen(line), 'i', (size_t)n);
    strcat(line, "\",\"method\":\"ping\"}");
    size_t from = json_array_size(k.msgs);
    mcp_dispatch_text(s, line, strlen(line));
    json_t *m = json_array_get(k.msgs, from);
    if (n == 1024) {
      cr_assert(json_is_object(result(m)), "%s", json_dumps(m, 0));
    } else {
      cr_assert_eq(err_code(m), -32600);
      cr_assert(json_is_null(json_object_get(m, "id")));
      cr_assert(strstr(err_msg(m), "at most 1024 bytes"), "%s", err_msg(m));
    }
  }
  free(line);
  json_decref(k.msgs);
}
