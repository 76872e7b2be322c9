/* The JSON-RPC dispatcher: checks each message, has the era layer
 * (era.c) classify a request, routes it through the method table (a row
 * per method and era) and a notification to its handler, and answers the
 * lifecycle (initialize, ping, server/discover). It takes parsed messages
 * from any transport and answers through the session (session.c); it has
 * no idea where the bytes come from or go. */
#include <stdio.h>
#include <string.h>

#include "mcp/internal.h"

static const char *const supported_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                 "2024-11-05"};

static const char instructions[] =
    "taskfs runs commands as durable tasks: each task has its own supervisor process and "
    "lives on disk, so it keeps running, and stays visible, if this server is restarted or "
    "another instance is started. Start work with start_managed_task (give a stable taskKey: "
    "calling it again with the same key returns the same task instead of running it twice). "
    "Watch it with read_managed_task (waitMs long-polls up to 50 s; untilPattern returns as "
    "soon as a new output line matches, e.g. 'listening on'); the answer carries the important "
    "lines of the whole output (errors, failures, summaries) and a short tail, and sinceLine "
    "pages through the full transcript. list_managed_tasks shows every task in the store; "
    "cancel_managed_task stops one (its whole process tree). Resources taskfs://tasks/<id>/record "
    "and taskfs://tasks/<id>/transcript give the raw record and the transcript tail.";

int mcp_legacy_version_known(const char *v) {
  for (size_t i = 0; v && i < sizeof supported_versions / sizeof supported_versions[0]; i++)
    if (!strcmp(v, supported_versions[i]))
      return 1;
  return 0;
}

/* What the server offers, as each era names it: legacy the Tasks utility
 * in capabilities.tasks, modern the tasks extension. */
static json_t *capabilities(unsigned era) {
  json_t *c = json_pack("{s:{}, s:{s:b}, s:{}, s:{}, s:{}}", "tools", "resources", "subscribe", 1,
                        "prompts", "completions", "logging");
  if (era == MCP_ERA_LEGACY)
    json_object_set_new(
        c, "tasks",
        json_pack("{s:{}, s:{}, s:{s:{s:{}}}}", "list", "cancel", "requests", "tools", "call"));
  else
    json_object_set_new(c, "extensions", json_pack("{s:{}}", MCP_TASKS_EXTENSION));
  return c;
}

static void on_initialize(const mcp_req_t *r, json_t *params) {
  mcp_session_t *s = r->sess;
  const char *requested = json_string_value(json_object_get(params, "protocolVersion"));
  if (!requested) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "initialize needs params.protocolVersion (a string such as \"%s\")",
                    MCP_LATEST_PROTOCOL);
    return;
  }
  /* 2025-11-25 lifecycle: an unknown version is answered with the latest
   * the server speaks, and the client decides. */
  const char *version = mcp_legacy_version_known(requested) ? requested : MCP_LATEST_PROTOCOL;
  json_t *caps = json_object_get(params, "capabilities");
  mcp_era_pin(s, MCP_ERA_LEGACY, "initialize");
  snprintf(s->version, sizeof s->version, "%s", version);
  s->caps = json_is_object(json_object_get(caps, "roots")) ? MCP_CAP_ROOTS : 0;
  mcp_roots_forget(s);
  json_t *res = json_pack("{s:s, s:o, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version,
                          "capabilities", capabilities(MCP_ERA_LEGACY), "serverInfo", "name",
                          MCP_SERVER_NAME, "title", "taskfs: durable tasks", "version",
                          MCP_SERVER_VERSION, "instructions", instructions);
  mcp_reply(r, res);
}

/* server/discover (modern only): versions, capabilities, identity. */
static void on_discover(const mcp_req_t *r, json_t *params) {
  mcp_reply(r,
            json_pack("{s:[s], s:o, s:s}", "supportedVersions", MCP_MODERN_PROTOCOL, "capabilities",
                      capabilities(MCP_ERA_MODERN), "instructions", instructions));
}

static void on_ping(const mcp_req_t *r, json_t *params) {
  mcp_reply(r, json_object());
}

/* logging/setLevel (legacy): the level this session's log notifications
 * start at. */
static void on_set_level(const mcp_req_t *r, json_t *params) {
  json_t *jl = json_object_get(params, "level");
  int level = mcp_log_level_parse(json_string_value(jl));
  if (level < 0) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "params.level must be one of debug, info, notice, warning, error, critical, "
                    "alert, emergency");
    return;
  }
  r->sess->log_level = level;
  mcp_reply(r, json_object());
}

#define L MCP_ERA_LEGACY
#define M MCP_ERA_MODERN
#define STATIC_TTL 300000 /* lists that change only with the binary */
static const mcp_method_t methods[] = {
    {"initialize", on_initialize, L, 0, -1, NULL},
    {"ping", on_ping, L, 0, -1, NULL},
    {"server/discover", on_discover, M, 0, STATIC_TTL, "public"},
    {"tools/list", mcp_tools_list, L | M, 0, STATIC_TTL, "public"},
    {"tools/call", mcp_tools_call, L | M, 0, -1, NULL},
    {"tasks/get", mcp_tasks_get, L, 0, -1, NULL},
    {"tasks/get", mcp_tasks_get_ext, M, MCP_CAP_TASKS, -1, NULL},
    {"tasks/result", mcp_tasks_result, L, 0, -1, NULL},
    {"tasks/list", mcp_tasks_list, L, 0, -1, NULL},
    {"tasks/cancel", mcp_tasks_cancel, L, 0, -1, NULL},
    {"tasks/cancel", mcp_tasks_cancel_ext, M, MCP_CAP_TASKS, -1, NULL},
    {"tasks/update", mcp_tasks_update_ext, M, MCP_CAP_TASKS, -1, NULL},
    {"resources/list", mcp_resources_list, L | M, 0, 0, "private"},
    {"resources/templates/list", mcp_resources_templates, L | M, 0, STATIC_TTL, "public"},
    {"resources/read", mcp_resources_read, L | M, 0, 0, "private"},
    {"resources/subscribe", mcp_resources_subscribe, L, 0, -1, NULL},
    {"resources/unsubscribe", mcp_resources_unsubscribe, L, 0, -1, NULL},
    {"subscriptions/listen", mcp_listen, M, 0, -1, NULL},
    {"prompts/list", mcp_prompts_list, L | M, 0, STATIC_TTL, "public"},
    {"prompts/get", mcp_prompts_get, L | M, 0, -1, NULL},
    {"completion/complete", mcp_completion, L | M, 0, -1, NULL},
    {"logging/setLevel", on_set_level, L, 0, -1, NULL},
};
#undef L
#undef M

/* Why a method of one era is not served in the other: the modern
 * revision removed these, or moved what they did. */
static const struct {
  const char *name;
  const char *why;
} removed[] = {
    {"initialize", "2026-07-28 has no handshake: every request carries its _meta envelope"},
    {"ping", "2026-07-28 removed ping"},
    {"logging/setLevel",
     "2026-07-28 sets the level per request in params._meta[\"" MCP_META_LOGLEVEL "\"]"},
    {"resources/subscribe", "2026-07-28 subscribes with subscriptions/listen "
                            "(notifications.resourceSubscriptions)"},
    {"resources/unsubscribe", "2026-07-28 ends a subscription with notifications/cancelled for "
                              "its subscriptions/listen request"},
    {"tasks/result", "in the 2026-07-28 tasks extension tasks/get carries the result"},
    {"tasks/list", "the 2026-07-28 tasks extension has no tasks/list"},
};

static void method_not_found(const mcp_req_t *r, const char *method) {
  for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++)
    if (r->era == MCP_ERA_MODERN && !strcmp(method, removed[i].name)) {
      mcp_reply_error(r, MCP_RPC_METHOD_NOT_FOUND, "method '%s' is not part of 2026-07-28: %s",
                      method, removed[i].why);
      return;
    }
  if (r->era == MCP_ERA_LEGACY && !strcmp(method, "server/discover")) {
    mcp_reply_error(r, MCP_RPC_METHOD_NOT_FOUND,
                    "method 'server/discover' is part of " MCP_MODERN_PROTOCOL
                    ": send it with params._meta[\"" MCP_META_VERSION "\"] (this server speaks "
                    "both); without it the request is a legacy one");
    return;
  }
  mcp_reply_error(r, MCP_RPC_METHOD_NOT_FOUND,
                  "method '%s' is not supported by the taskfs MCP server (it offers %s, "
                  "tools/*, tasks/*, resources/*, prompts/*, completion/complete)",
                  method,
                  r->era == MCP_ERA_MODERN ? "server/discover, subscriptions/listen"
                                           : "initialize, ping");
}

static void on_request(mcp_req_t *r, const char *method, json_t *params) {
  mcp_server_refresh(r->srv);
  if (mcp_era_classify(r, method, params))
    return;
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
    const mcp_method_t *m = &methods[i];
    if (strcmp(method, m->name) || !(m->eras & r->era))
      continue;
    r->method = m;
    if (mcp_require_caps(r, m->needs, method))
      return;
    if (r->era == MCP_ERA_MODERN && strcmp(method, "server/discover"))
      mcp_era_pin(r->sess, MCP_ERA_MODERN, method);
    m->fn(r, params);
    return;
  }
  method_not_found(r, method);
}

static void on_notification(mcp_session_t *s, const char *method, json_t *params) {
  if (!strcmp(method, "notifications/cancelled")) {
    json_t *rid = json_object_get(params, "requestId");
    if (rid) {
      mcp_pending_drop(s, rid);
      mcp_listen_drop(s, rid);
      mcp_client_drop(s, rid);
    }
  } else if (!strcmp(method, "notifications/roots/list_changed")) {
    mcp_roots_forget(s);
  }
  /* notifications/initialized and anything else: nothing to do, and
   * notifications never get a response. */
}

int mcp_dispatch(mcp_session_t *s, json_t *msg) {
  mcp_req_t r = {.srv = s->srv, .sess = s, .id = NULL, .era = MCP_ERA_LEGACY, .log_level = -1};
  if (json_is_array(msg)) {
    mcp_reply_error(&r, MCP_RPC_INVALID_REQUEST,
                    "batches (JSON arrays) are not supported: MCP 2025-06-18 removed JSON-RPC "
                    "batching; send one message per line");
    return 1;
  }
  if (!json_is_object(msg)) {
    mcp_reply_error(&r, MCP_RPC_INVALID_REQUEST,
                    "invalid request: a message must be a JSON object with \"jsonrpc\": \"2.0\"");
    return 1;
  }
  json_t *id = json_object_get(msg, "id");
  json_t *jmethod = json_object_get(msg, "method");
  json_t *params = json_object_get(msg, "params");
  const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
  /* A request waiting holds its id: a string id is bounded, so that the
   * limit on requests in flight bounds their memory too (limits.c). */
  int id_ok = json_is_integer(id) || (json_is_string(id) && json_string_length(id) <= MCP_ID_MAX);
  r.id = id_ok ? id : NULL;
  if (!jmethod && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
    mcp_client_response(s, msg); /* the answer to a request of ours (roots.c) */
    return 0;
  }
  if (!version || strcmp(version, "2.0")) {
    mcp_reply_error(&r, MCP_RPC_INVALID_REQUEST, "invalid request: \"jsonrpc\" must be \"2.0\"");
  } else if (id && !r.id) {
    mcp_reply_error(&r, MCP_RPC_INVALID_REQUEST,
                    "invalid request: \"id\" must be a string of at most %u bytes or an integer",
                    MCP_ID_MAX);
  } else if (!json_is_string(jmethod)) {
    mcp_reply_error(&r, MCP_RPC_INVALID_REQUEST, "invalid request: \"method\" must be a string");
  } else if (params && !json_is_object(params)) {
    if (!r.id)
      return 0;
    mcp_reply_error(&r, MCP_RPC_INVALID_PARAMS, "invalid params: \"params\" must be an object");
  } else {
    json_t *empty = params ? NULL : json_object();
    if (r.id)
      on_request(&r, json_string_value(jmethod), params ? params : empty);
    else
      on_notification(s, json_string_value(jmethod), params ? params : empty);
    json_decref(empty);
    return r.id != NULL;
  }
  return 1;
}

/* A message with an integer beyond int64 (what a JavaScript client sends
 * for 2**63) is valid JSON that jansson refuses as such: it is read again
 * with every integer as a real, so that the argument is answered as the
 * out-of-range number it is (validate.c), with the request's own id --
 * an id that was an exact integer is made one again. NULL if the message
 * is not JSON that way either (a real beyond a double: 1e400). */
static json_t *load_big_integers(const char *text, size_t len) {
  json_error_t jerr;
  json_t *msg = json_loadb(text, len, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &jerr);
  json_t *id = json_object_get(msg, "id");
  double d = json_real_value(id);
  if (json_is_real(id) && d >= -9007199254740991.0 && d <= 9007199254740991.0 &&
      d == (double)(json_int_t)d)
    json_object_set_new(msg, "id", json_integer((json_int_t)d));
  return msg;
}

int mcp_dispatch_text(mcp_session_t *s, const char *text, size_t len) {
  json_error_t jerr;
  json_t *msg = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
  if (!msg && json_error_code(&jerr) == json_error_numeric_overflow)
    msg = load_big_integers(text, len);
  if (!msg) {
    mcp_session_error(s, MCP_RPC_PARSE_ERROR,
                      "parse error: %s (line 1, column %d); each line must be one JSON-RPC 2.0 "
                      "message",
                      jerr.text, jerr.column);
    return 1;
  }
  int replied = mcp_dispatch(s, msg);
  json_decref(msg);
  return replied;
}
