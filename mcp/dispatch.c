/* The JSON-RPC dispatcher: checks each message, routes a request to its
 * method and a notification to its handler, and answers the lifecycle
 * (initialize, ping). It takes parsed messages from any transport and
 * answers through the session (session.c); it has no idea where the bytes
 * come from or go. */
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

static void on_initialize(const mcp_req_t *r, json_t *params) {
  const char *requested = json_string_value(json_object_get(params, "protocolVersion"));
  if (!requested) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "initialize needs params.protocolVersion (a string such as \"%s\")",
                    MCP_LATEST_PROTOCOL);
    return;
  }
  const char *version = MCP_LATEST_PROTOCOL;
  for (size_t i = 0; i < sizeof supported_versions / sizeof supported_versions[0]; i++)
    if (!strcmp(requested, supported_versions[i]))
      version = supported_versions[i];
  r->sess->initialized = 1;
  json_t *res = json_pack(
      "{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{s:{}, s:{}, s:{s:{s:{}}}}}, s:{s:s, s:s, s:s}, s:s}",
      "protocolVersion", version, "capabilities", "tools", "listChanged", 0, "resources",
      "subscribe", 1, "listChanged", 0, "tasks", "list", "cancel", "requests", "tools", "call",
      "serverInfo", "name", MCP_SERVER_NAME, "title", "taskfs: durable tasks", "version",
      MCP_SERVER_VERSION, "instructions", instructions);
  mcp_reply(r, res);
}

static void on_empty(const mcp_req_t *r, json_t *params) {
  mcp_reply(r, json_object());
}

static void on_prompts_list(const mcp_req_t *r, json_t *params) {
  mcp_reply(r, json_pack("{s:[]}", "prompts"));
}

static const struct {
  const char *name;
  mcp_method_fn fn;
} methods[] = {
    {"initialize", on_initialize},
    {"ping", on_empty},
    {"tools/list", mcp_tools_list},
    {"tools/call", mcp_tools_call},
    {"tasks/get", mcp_tasks_get},
    {"tasks/result", mcp_tasks_result},
    {"tasks/list", mcp_tasks_list},
    {"tasks/cancel", mcp_tasks_cancel},
    {"resources/list", mcp_resources_list},
    {"resources/templates/list", mcp_resources_templates},
    {"resources/read", mcp_resources_read},
    {"resources/subscribe", mcp_resources_subscribe},
    {"resources/unsubscribe", mcp_resources_unsubscribe},
    {"prompts/list", on_prompts_list},
    {"logging/setLevel", on_empty},
};

static void on_request(const mcp_req_t *r, const char *method, json_t *params) {
  mcp_server_refresh(r->srv);
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
    if (!strcmp(method, methods[i].name)) {
      methods[i].fn(r, params);
      return;
    }
  mcp_reply_error(r, MCP_RPC_METHOD_NOT_FOUND,
                  "method '%s' is not supported by the taskfs MCP server (it offers initialize, "
                  "ping, tools/*, tasks/*, resources/*)",
                  method);
}

static void on_notification(mcp_session_t *s, const char *method, json_t *params) {
  if (!strcmp(method, "notifications/cancelled")) {
    json_t *rid = json_object_get(params, "requestId");
    if (rid)
      mcp_pending_drop(s, rid);
  }
  /* notifications/initialized and anything else: nothing to do, and
   * notifications never get a response. */
}

int mcp_dispatch(mcp_session_t *s, json_t *msg) {
  mcp_req_t r = {.srv = s->srv, .sess = s, .id = NULL};
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
  r.id = (id && (json_is_string(id) || json_is_integer(id))) ? id : NULL;
  if (!jmethod && (json_object_get(msg, "result") || json_object_get(msg, "error")))
    return 0; /* a response to a request we never send: ignore it */
  if (!version || strcmp(version, "2.0")) {
    mcp_reply_error(&r, MCP_RPC_INVALID_REQUEST, "invalid request: \"jsonrpc\" must be \"2.0\"");
  } else if (id && !r.id) {
    mcp_reply_error(&r, MCP_RPC_INVALID_REQUEST,
                    "invalid request: \"id\" must be a string or an integer");
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

int mcp_dispatch_text(mcp_session_t *s, const char *text, size_t len) {
  json_error_t jerr;
  json_t *msg = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
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
