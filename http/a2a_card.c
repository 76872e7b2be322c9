/* The agent card at GET /.well-known/agent-card.json (public: a client
 * reads it before it has a token). It names the JSON-RPC interface at
 * /a2a under the name the client reached us by (the Host header, which
 * the gates have checked names this server), the bearer scheme the token
 * of `taskfs serve` is sent with, and the one skill: running a command as
 * a durable task. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/a2a.h"

static json_t *skill(void) {
  return json_pack(
      "{s:s, s:s, s:s, s:[s,s,s,s], s:[s,s], s:[s], s:[s,s]}", "id", "run-command", "name",
      "Run a command", "description",
      "Runs a command (an argv array, no shell) as a durable taskfs task under its own "
      "supervisor: it keeps running whoever asked, its output is kept, and its end is recorded. "
      "Send a message with one data part {\"command\": [\"make\", \"test\"], \"cwd\": "
      "\"/abs/dir\" (optional), \"taskKey\": \"name\" (optional: the same key and command give "
      "the same task)}. The message id is an idempotency key: a message sent again returns the "
      "task it started. The task's artifacts are its important lines and the tail of its output; "
      "SubscribeToTask streams new output lines.",
      "tags", "command", "build", "test", "durable task", "examples",
      "{\"command\": [\"make\", \"-j4\", \"test\"], \"cwd\": \"/home/me/project\"}",
      "{\"command\": [\"sh\", \"-c\", \"sleep 5; echo done\"], \"taskKey\": \"nap\"}", "inputModes",
      "application/json", "outputModes", "application/json", "text/plain");
}

void http_a2a_card(http_req_t *r) {
  char url[600];
  snprintf(url, sizeof url, "http://%.500s/a2a", http_header(r, "Host"));
  json_t *card = json_pack(
      "{s:s, s:s, s:[{s:s, s:s, s:s}], s:s, s:{s:b, s:b, s:b}, "
      "s:{s:{s:{s:s, s:s}}}, s:[{s:{s:{s:[]}}}], s:[s], s:[s,s], s:[o]}",
      "name", "taskfs", "description",
      "taskfs runs commands as durable tasks: each has its own supervisor, outlives whoever "
      "started it, and leaves its output and its end in a store on disk. This is `taskfs serve`'s "
      "A2A face over that store.",
      "supportedInterfaces", "url", url, "protocolBinding", "JSONRPC", "protocolVersion",
      A2A_PROTOCOL_VERSION, "version", TFS_VERSION, "capabilities", "streaming", 1,
      "pushNotifications", 0, "extendedAgentCard", 0, "securitySchemes", "bearer",
      "httpAuthSecurityScheme", "scheme", "Bearer", "description",
      "the token of `taskfs serve`: the line in its token file (<state>/serve.token unless "
      "--token-file names another)",
      "securityRequirements", "schemes", "bearer", "list", "defaultInputModes", "application/json",
      "defaultOutputModes", "application/json", "text/plain", "skills", skill());
  char *text = card ? json_dumps(card, JSON_COMPACT) : NULL;
  json_decref(card);
  if (!text) {
    http_respond_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return;
  }
  http_respond_take(r, MHD_HTTP_OK, "application/json", text, strlen(text));
}
