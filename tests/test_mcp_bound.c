/* The MCP answers' bounds and streams, transport-free (tests/mcp_fixture.h):
 * maxBytes as a hard bound on the whole tools/call result in both eras
 * (long command, cwd and reason shortened with a note; members left out
 * only at the smallest bounds), the tail kept at three lines when nothing
 * is important, tailFrom null when the tail is empty; subscriptions/listen;
 * the default cwd from the client's roots in both eras; logging/setLevel
 * and its messages; prompts and completion. */
#include "tests/mcp_fixture.h"

/* Bytes of the result of m, compact, as the bound counts them. */
static size_t result_bytes(json_t *m) {
  char *t = json_dumps(result(m), JSON_COMPACT);
  size_t n = strlen(t);
  free(t);
  return n;
}

static json_t *sc(json_t *m) {
  return json_object_get(result(m), "structuredContent");
}

/* A task no bound was made for: a 3000-byte argument, a 3000-byte cwd, a
 * 3000-byte reason, output lines of control characters (six bytes each in
 * JSON, seven in the text copy) and 4,000 plain ones after them. */
static void make_hostile(char id[TFS_ID_MAX + 1]) {
  char arg[3001], cwd[3001], reason[3001];
  memset(arg, 'a', 3000);
  arg[3000] = 0;
  for (int i = 0; i < 3000; i++)
    cwd[i] = i % 10 ? 'd' : '/';
  cwd[3000] = 0;
  memset(reason, 'r', 3000);
  reason[3000] = 0;
  char *const argv[] = {"echo", arg, NULL};
  make_task("hostile", argv, cwd, TFS_FAILED, reason, id);
  append_ctl(id, 5);
  int fd = tfs_transcript_open_append(F.store, id);
  for (int i = 0; i < 4000; i++) {
    char line[32];
    int n = snprintf(line, sizeof line, "plain line %d", i);
    tfs_transcript_append(fd, line, (size_t)n, 1);
  }
  close(fd);
}

Test(mcp_bound, max_bytes_holds_for_any_task_in_both_eras, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  make_hostile(id);
  sink_t k;
  mcp_session_t *leg = legacy(&k);
  sink_t km;
  mcp_session_t *modern = session(&km);
  static const int bounds[] = {1024, 1500, 2048, 4096, 8192};
  int n = 10;
  for (int b = 0; b < 5; b++)
    for (int e = 0; e < 2; e++) {
      json_t *m = e ? rpc(modern, &km,
                          "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                          "\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
                          "\"maxBytes\":%d}," META "}}",
                          n++, id, bounds[b])
                    : rpc(leg, &k,
                          "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                          "\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
                          "\"maxBytes\":%d}}}",
                          n++, id, bounds[b]);
      cr_assert_leq(result_bytes(m), (size_t)bounds[b], "maxBytes %d (%s): %zu bytes", bounds[b],
                    e ? "modern" : "legacy", result_bytes(m));
      json_t *om = json_object_get(sc(m), "omitted");
      cr_assert_not_null(om, "the answer says what it left out");
      json_t *cut = json_object_get(om, "shortened");
      cr_assert_geq(json_array_size(cut), 1, "long fields are shortened");
      cr_assert_str_eq(str_at(sc(m), "taskId"), id);
      if (bounds[b] >= 4096) {
        /* At the default and above every member is there, shortened. */
        cr_assert(strstr(json_string_value(json_array_get(json_object_get(sc(m), "command"), 1)),
                         "\xe2\x80\xa6"),
                  "the argument ends in an ellipsis");
        cr_assert_null(json_object_get(om, "fields"));
        cr_assert_str_eq(str_at(sc(m), "state"), "failed");
      }
    }
  json_decref(k.msgs);
  json_decref(km.msgs);
}

/* With nothing important the tail keeps three lines before anything else
 * goes; a tail trimmed to nothing has tailFrom null, not a line past the
 * end. */
Test(mcp_bound, the_tail_keeps_three_lines_and_tail_from_follows, .init = fx_open,
     .fini = fx_close) {
  char id[TFS_ID_MAX + 1], id2[TFS_ID_MAX + 1];
  char *const argv[] = {"true", NULL};
  /* The case: a 3000-byte command used to take the tail's room. */
  char arg[3001];
  memset(arg, 'c', 3000);
  arg[3000] = 0;
  char *const long_argv[] = {"echo", arg, NULL};
  make_task("plain", long_argv, "/", TFS_COMPLETED, "exited with code 0", id);
  char line[241];
  memset(line, 'p', 240);
  line[240] = 0;
  for (int i = 0; i < 4000; i++)
    append(id, line);
  sink_t k;
  mcp_session_t *s = legacy(&k);
  json_t *m = rpc(s, &k,
                  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                  "\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\"}}}",
                  id);
  cr_assert_leq(result_bytes(m), 4096);
  json_t *tail = json_object_get(sc(m), "tail");
  cr_assert_eq(json_array_size(tail), 3, "three tail lines: %zu", json_array_size(tail));
  cr_assert_eq(json_integer_value(json_object_get(sc(m), "tailFrom")), 3998);
  cr_assert_eq(json_integer_value(json_object_get(sc(m), "nextLine")), 4000);

  /* Lines that cannot fit at all: the tail goes, tailFrom is null. */
  make_task("wide", argv, "/", TFS_COMPLETED, "exited with code 0", id2);
  append_ctl(id2, 4);
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
          "\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\",\"maxBytes\":1024}}}",
          id2);
  cr_assert_eq(json_array_size(json_object_get(sc(m), "tail")), 0);
  json_t *from = json_object_get(sc(m), "tailFrom");
  cr_assert(!from || json_is_null(from), "tailFrom of an empty tail is null (or left out)");
  cr_assert_leq(result_bytes(m), 1024);
  json_decref(k.msgs);
}

/* subscriptions/listen: the acknowledgement first with what is honoured,
 * then tagged notifications for the resources and the task, nothing after
 * notifications/cancelled, and the graceful result at the server's end. */
Test(mcp_bound, listen_streams_tagged_notifications, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  char *const argv[] = {"true", NULL};
  make_task("watched", argv, "/", TFS_QUEUED, NULL, id);
  sink_t k;
  mcp_session_t *s = session(&k);
  const char *listen = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"subscriptions/listen\","
                       "\"params\":{\"notifications\":{\"resourceSubscriptions\":["
                       "\"taskfs://tasks/%s/transcript\",\"file:///etc/passwd\"],\"taskIds\":"
                       "[\"%s\"],\"toolsListChanged\":true}," META_TASKS "}}";
  char *text;
  cr_assert_geq(asprintf(&text, listen, 7, id, id), 0);
  mcp_dispatch_text(s, text, strlen(text));
  free(text);
  cr_assert_eq(json_array_size(k.msgs), 1, "only the acknowledgement");
  json_t *ack = json_array_get(k.msgs, 0);
  cr_assert_str_eq(str_at(ack, "method"), "notifications/subscriptions/acknowledged");
  json_t *p = json_object_get(ack, "params");
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(p, "_meta"),
                                                  "io.modelcontextprotocol/subscriptionId")),
               7);
  json_t *honoured = json_object_get(p, "notifications");
  cr_assert_eq(json_array_size(json_object_get(honoured, "resourceSubscriptions")), 1);
  cr_assert_eq(json_array_size(json_object_get(honoured, "taskIds")), 1);
  cr_assert_null(json_object_get(honoured, "toolsListChanged"), "the tool list never changes");

  append(id, "output");
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(F.store, id, &rec), 0);
  rec.lines++; /* the counters the supervisor saves with its output */
  rec.bytes += 7;
  rec.state = TFS_COMPLETED;
  rec.exit_code = 0;
  rec.ended_ms = tfs_now_ms();
  cr_assert_eq(tfs_task_save(F.store, &rec), 0);
  tfs_record_free(&rec);
  int64_t deadline = tfs_now_ms() + 30000 * tu_slow();
  int updated = 0, status = 0;
  while ((!updated || !status) && tfs_now_ms() < deadline) {
    uv_run(&F.loop, UV_RUN_ONCE);
    size_t i;
    json_t *m;
    json_array_foreach(k.msgs, i, m) {
      json_t *mp = json_object_get(m, "params");
      int tagged =
          json_integer_value(json_object_get(json_object_get(mp, "_meta"),
                                             "io.modelcontextprotocol/subscriptionId")) == 7;
      if (!strcmp(str_at(m, "method"), "notifications/resources/updated") && tagged)
        updated = 1;
      if (!strcmp(str_at(m, "method"), "notifications/tasks") && tagged &&
          !strcmp(str_at(mp, "status"), "completed") &&
          json_is_object(json_object_get(mp, "result")))
        status = 1;
    }
  }
  cr_assert(updated, "the transcript's growth was told");
  cr_assert(status, "the task's completion was told with its result");

  /* A second stream, cancelled: nothing more for it; the first gets its
   * graceful end at the server's end. */
  cr_assert_geq(asprintf(&text, listen, 8, id, id), 0);
  mcp_dispatch_text(s, text, strlen(text));
  free(text);
  const char *cancel = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                       "\"requestId\":8}}";
  mcp_dispatch_text(s, cancel, strlen(cancel));
  mcp_server_shutdown(F.srv);
  json_t *end = reply_to(&k, 7);
  cr_assert_str_eq(str_at(result(end), "resultType"), "complete");
  size_t i;
  json_t *m;
  json_array_foreach(k.msgs, i, m) {
    json_t *mid = json_object_get(m, "id");
    cr_assert(!json_is_integer(mid) || json_integer_value(mid) != 8, "no answer to the cancelled");
  }
  json_decref(k.msgs);
}

/* The default cwd: legacy asks the client with roots/list (once, until the
 * list changes); modern answers input_required and takes the retry's
 * inputResponses; without roots, the server's cwd; every answer says
 * which. */
Test(mcp_bound, cwd_defaults_to_the_client_s_first_root, .init = fx_open, .fini = fx_close) {
  sink_t k;
  mcp_session_t *s = session(&k);
  rpc(s, &k,
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
      "\"2025-11-25\",\"capabilities\":{\"roots\":{}}}}");
  const char *start = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                      "\"name\":\"start_managed_task\",\"arguments\":{\"taskKey\":\"r%d\","
                      "\"command\":[\"true\"],\"waitMs\":0}}}";
  char *text;
  cr_assert_geq(asprintf(&text, start, 2, 2), 0);
  mcp_dispatch_text(s, text, strlen(text));
  free(text);
  json_t *ask = json_array_get(k.msgs, json_array_size(k.msgs) - 1);
  cr_assert_str_eq(str_at(ask, "method"), "roots/list", "the server asks the client");
  char *answer;
  cr_assert_geq(asprintf(&answer,
                         "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"roots\":[{\"uri\":"
                         "\"file:///tmp\",\"name\":\"tmp\"}]}}",
                         str_at(ask, "id")),
                0);
  mcp_dispatch_text(s, answer, strlen(answer));
  free(answer);
  json_t *m = reply_to(&k, 2);
  cr_assert_str_eq(str_at(sc(m), "cwd"), "/tmp");
  cr_assert_str_eq(str_at(sc(m), "cwdFrom"), "root");
  size_t before = json_array_size(k.msgs);
  m = rpc(s, &k, start, 3, 3);
  cr_assert_eq(json_array_size(k.msgs), before + 1, "known roots are not asked again");
  cr_assert_str_eq(str_at(sc(m), "cwdFrom"), "root");
  /* The list changed: asked again; the start is cancelled meanwhile, so
   * the answer starts nothing and nothing answers the start. */
  const char *changed = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}";
  mcp_dispatch_text(s, changed, strlen(changed));
  cr_assert_geq(asprintf(&text, start, 4, 4), 0);
  mcp_dispatch_text(s, text, strlen(text));
  free(text);
  ask = json_array_get(k.msgs, json_array_size(k.msgs) - 1);
  cr_assert_str_eq(str_at(ask, "method"), "roots/list", "asked again after list_changed");
  const char *cancel = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                       "\"requestId\":4}}";
  mcp_dispatch_text(s, cancel, strlen(cancel));
  cr_assert(mcp_server_idle(F.srv), "nothing waits for the cancelled start");
  char lookup[TFS_ID_MAX + 1];
  cr_assert_eq(tfs_key_lookup(F.store, "r4", lookup), TFS_ENOTASK, "no task was made");

  sink_t km;
  mcp_session_t *n = session(&km);
  const char *mstart = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"start_managed_task\",\"arguments\":{\"taskKey\":\"m%d\","
                       "\"command\":[\"true\"],\"waitMs\":0}%s}}";
  m = rpc(n, &km, mstart, 1, 1, "," META_ROOTS);
  cr_assert_str_eq(str_at(result(m), "resultType"), "input_required");
  cr_assert_str_eq(
      str_at(json_object_get(json_object_get(result(m), "inputRequests"), "roots"), "method"),
      "roots/list");
  m = rpc(n, &km, mstart, 2, 1,
          ",\"inputResponses\":{\"roots\":{\"roots\":[{\"uri\":\"file:///tmp\"}]}}," META_ROOTS);
  cr_assert_str_eq(str_at(sc(m), "cwdFrom"), "root");
  cr_assert_str_eq(str_at(sc(m), "cwd"), "/tmp");
  m = rpc(
      n, &km, mstart, 3, 3,
      ",\"inputResponses\":{\"roots\":{\"roots\":[{\"uri\":\"file://elsewhere/x\"}]}}," META_ROOTS);
  cr_assert_str_eq(str_at(sc(m), "cwdFrom"), "server");
  cr_assert(strstr(str_at(sc(m), "cwdNote"), "not a local file:// URI"), "%s",
            str_at(sc(m), "cwdNote"));
  m = rpc(n, &km, mstart, 4, 4, ",\"inputResponses\":{\"roots\":5}," META_ROOTS);
  cr_assert_eq(err_code(m), -32602);
  m = rpc(n, &km, mstart, 5, 5, "," META);
  cr_assert_str_eq(str_at(sc(m), "cwdFrom"), "server", "no roots declared");
  cr_assert_null(json_object_get(sc(m), "cwdNote"));
  json_decref(k.msgs);
  json_decref(km.msgs);
}

/* logging/setLevel is checked and followed; prompts and completion answer
 * what the capabilities declare. */
Test(mcp_bound, logging_prompts_and_completion, .init = fx_open, .fini = fx_close) {
  char id[TFS_ID_MAX + 1];
  failed_task("diag", "error: the cause", id);
  sink_t k;
  mcp_session_t *s = session(&k);
  json_t *m = rpc(s, &k, INIT_LEGACY);
  json_t *caps = json_object_get(result(m), "capabilities");
  cr_assert(json_is_object(json_object_get(caps, "logging")));
  cr_assert(json_is_object(json_object_get(caps, "prompts")));
  cr_assert(json_is_object(json_object_get(caps, "completions")));
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/"
          "setLevel\",\"params\":{\"level\":\"loud\"}}");
  cr_assert_eq(err_code(m), -32602);
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/"
          "setLevel\",\"params\":{\"level\":\"warning\"}}");
  cr_assert_eq(json_object_size(result(m)), 0);
  /* The store vanishes: a warning for the session. */
  char moved[4200];
  snprintf(moved, sizeof moved, "%s.moved", F.dir);
  cr_assert_eq(rename(F.dir, moved), 0);
  rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}");
  cr_assert_eq(rename(moved, F.dir), 0);
  int warned = 0;
  size_t i;
  json_t *e;
  json_array_foreach(k.msgs, i, e) {
    if (!strcmp(str_at(e, "method"), "notifications/message") &&
        !strcmp(str_at(json_object_get(e, "params"), "level"), "warning"))
      warned = 1;
  }
  cr_assert(warned, "a notifications/message at the level set");
  rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}");

  m = rpc(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"prompts/list\"}");
  cr_assert_str_eq(str_at(json_array_get(json_object_get(result(m), "prompts"), 0), "name"),
                   "diagnose_task");
  m = rpc(
      s, &k,
      "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"prompts/get\",\"params\":{\"name\":\"nope\"}}");
  cr_assert_eq(err_code(m), -32602);
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"prompts/"
          "get\",\"params\":{\"name\":\"diagnose_task\",\"arguments\":{\"task\":\"diag\"}}}");
  const char *text =
      str_at(json_object_get(json_array_get(json_object_get(result(m), "messages"), 0), "content"),
             "text");
  cr_assert(strstr(text, "error: the cause"), "the prompt carries the important lines: %s", text);
  m = rpc(
      s, &k,
      "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"completion/"
      "complete\",\"params\":{\"ref\":{\"type\":\"ref/"
      "prompt\",\"name\":\"diagnose_task\"},\"argument\":{\"name\":\"task\",\"value\":\"di\"}}}");
  json_t *values = json_object_get(json_object_get(result(m), "completion"), "values");
  cr_assert_eq(json_array_size(values), 1);
  cr_assert_str_eq(json_string_value(json_array_get(values, 0)), "diag");
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"completion/"
          "complete\",\"params\":{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"taskfs://tasks/"
          "{taskId}/record\"},\"argument\":{\"name\":\"taskId\",\"value\":\"\"}}}");
  values = json_object_get(json_object_get(result(m), "completion"), "values");
  cr_assert_str_eq(json_string_value(json_array_get(values, 0)), id);
  m = rpc(s, &k,
          "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"completion/"
          "complete\",\"params\":{\"ref\":{\"type\":\"ref/"
          "prompt\",\"name\":\"other\"},\"argument\":{\"name\":\"x\",\"value\":\"\"}}}");
  cr_assert_eq(err_code(m), -32602);
  json_decref(k.msgs);
}
