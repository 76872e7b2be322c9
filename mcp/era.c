/* The era layer: which protocol revision a request speaks, and what the
 * modern revision adds to every answer. One dispatcher and one set of
 * handlers serve both eras; everything that tells them apart is here.
 *
 * A request is modern when its params._meta carries
 * io.modelcontextprotocol/protocolVersion (the claim, as the reference SDK
 * reads it: nothing else in _meta claims an era); it is then served
 * statelessly from its own _meta, which must be whole (version,
 * capabilities). A request without the claim is legacy and is served in
 * the session the connection's initialize opened.
 *
 * The pinning rule (a connection is one conversation in one era): the
 * first request that is not server/discover pins the session — initialize
 * to legacy, a claimed request to modern. After a legacy pin a claimed
 * request is refused (-32602 naming the _meta field: the connection speaks
 * the version initialize negotiated); after a modern pin every request
 * must carry the envelope (-32602 naming the missing field) and initialize
 * is refused (-32600). server/discover never pins, so a dual-era client
 * may probe and then fall back to initialize on the same connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};

int mcp_log_level_parse(const char *name) {
  for (int i = 0; name && i < (int)(sizeof log_levels / sizeof log_levels[0]); i++)
    if (!strcmp(name, log_levels[i]))
      return i;
  return -1;
}

const char *mcp_log_level_name(int level) {
  return level >= 0 && level < 8 ? log_levels[level] : "info";
}

/* An envelope that cannot be served: -32602 naming the field, with the
 * reference SDK's data.envelope {key, problem}. */
static int envelope_error(const mcp_req_t *r, const char *key, const char *problem,
                          const char *more) {
  json_t *data = json_pack("{s:{s:s, s:s}}", "envelope", "key", key, "problem", problem);
  mcp_reply_error_data(r, MCP_RPC_INVALID_PARAMS, data,
                       "Invalid _meta envelope for protocol revision %s: "
                       "params._meta[\"%s\"] %s%s",
                       MCP_MODERN_PROTOCOL, key, problem, more ? more : "");
  return -1;
}

/* The requested version is not served per request: -32022 with the
 * versions that are. A legacy version in a modern envelope is named as
 * such, since the client can still speak it through initialize. */
static int unsupported_version(const mcp_req_t *r, const char *requested) {
  json_t *data =
      json_pack("{s:[s], s:s}", "supported", MCP_MODERN_PROTOCOL, "requested", requested);
  int legacy = mcp_legacy_version_known(requested);
  mcp_reply_error_data(r, MCP_RPC_UNSUPPORTED_VERSION, data,
                       "Unsupported protocol version: %.40s in params._meta[\"" MCP_META_VERSION
                       "\"]; per-request versions served: " MCP_MODERN_PROTOCOL "%s",
                       requested,
                       legacy ? " (that version is negotiated by initialize, without the "
                                "_meta envelope, on a connection of its own)"
                              : "");
  return -1;
}

/* The client's capabilities as one modern request declares them. */
static unsigned modern_caps(json_t *caps) {
  unsigned c = 0;
  if (json_is_object(json_object_get(caps, "roots")))
    c |= MCP_CAP_ROOTS;
  json_t *ext = json_object_get(caps, "extensions");
  if (json_is_object(json_object_get(ext, MCP_TASKS_EXTENSION)))
    c |= MCP_CAP_TASKS;
  return c;
}

/* The modern envelope of a claimed request: the version served, the
 * capabilities present, the optional fields well formed. */
static int modern_envelope(mcp_req_t *r, json_t *meta, json_t *ver) {
  if (!json_is_string(ver))
    return envelope_error(r, MCP_META_VERSION, "must be a string",
                          " (a protocol version, e.g. \"" MCP_MODERN_PROTOCOL "\")");
  if (strcmp(json_string_value(ver), MCP_MODERN_PROTOCOL))
    return unsupported_version(r, json_string_value(ver));
  if (r->sess->pin == MCP_ERA_LEGACY) {
    char more[200];
    snprintf(more, sizeof more,
             ": this connection was opened by initialize and speaks %s until it closes; send "
             "the request without the field, or open another connection for " MCP_MODERN_PROTOCOL,
             r->sess->version);
    return envelope_error(r, MCP_META_VERSION, "names the other revision", more);
  }
  json_t *caps = json_object_get(meta, MCP_META_CAPS);
  if (!caps)
    return envelope_error(r, MCP_META_CAPS, "is missing", " ({} declares no capabilities)");
  if (!json_is_object(caps))
    return envelope_error(r, MCP_META_CAPS, "must be an object", NULL);
  json_t *info = json_object_get(meta, MCP_META_CLIENT);
  if (info && !json_is_object(info))
    return envelope_error(r, MCP_META_CLIENT, "must be an object {name, version}", NULL);
  json_t *lvl = json_object_get(meta, MCP_META_LOGLEVEL);
  r->log_level = -1;
  if (lvl && (r->log_level = mcp_log_level_parse(json_string_value(lvl))) < 0)
    return envelope_error(r, MCP_META_LOGLEVEL, "is not a log level",
                          " (debug, info, notice, warning, error, critical, alert, emergency)");
  r->era = MCP_ERA_MODERN;
  r->caps = modern_caps(caps);
  return 0;
}

int mcp_era_classify(mcp_req_t *r, const char *method, json_t *params) {
  mcp_session_t *s = r->sess;
  r->era = MCP_ERA_LEGACY;
  r->caps = s->caps;
  r->log_level = s->log_level;
  json_t *meta = json_object_get(params, "_meta");
  if (meta && !json_is_object(meta)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params._meta must be an object");
    return -1;
  }
  size_t size = meta ? json_dumpb(meta, NULL, 0, JSON_COMPACT) : 0;
  if (size > MCP_META_MAX) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "params._meta is %zu bytes; at most %u are accepted (the protocol's own "
                    "keys need a few hundred)",
                    size, MCP_META_MAX);
    return -1;
  }
  json_t *ver = meta ? json_object_get(meta, MCP_META_VERSION) : NULL;
  if (ver)
    return modern_envelope(r, meta, ver);
  if (s->pin != MCP_ERA_MODERN)
    return 0;
  if (!strcmp(method, "initialize")) {
    mcp_reply_error(r, MCP_RPC_INVALID_REQUEST,
                    "initialize: this connection already speaks " MCP_MODERN_PROTOCOL
                    " (pinned by %s, which carried params._meta[\"" MCP_META_VERSION
                    "\"]); that revision has no handshake. Open another connection for a "
                    "legacy session",
                    s->pinned_by);
  } else {
    char more[160];
    snprintf(more, sizeof more,
             ": this connection speaks " MCP_MODERN_PROTOCOL
             " (pinned by %s) and every request carries its _meta envelope",
             s->pinned_by);
    envelope_error(r, MCP_META_VERSION, "is missing", more);
  }
  return -1;
}

void mcp_era_pin(mcp_session_t *s, unsigned era, const char *method) {
  if (s->pin)
    return;
  s->pin = era;
  snprintf(s->pinned_by, sizeof s->pinned_by, "%s", method);
}

/* The serverInfo every modern result carries. */
static json_t *server_info(void) {
  return json_pack("{s:s, s:s}", "name", MCP_SERVER_NAME, "version", MCP_SERVER_VERSION);
}

json_t *mcp_era_result(const mcp_req_t *r, json_t *result) {
  if (r->era != MCP_ERA_MODERN || !json_is_object(result))
    return result;
  if (!json_object_get(result, "resultType"))
    json_object_set_new(result, "resultType", json_string("complete"));
  json_t *meta = json_object_get(result, "_meta");
  if (!json_is_object(meta)) {
    meta = json_object();
    json_object_set_new(result, "_meta", meta);
  }
  json_object_set_new(meta, MCP_META_SERVER, server_info());
  const char *type = json_string_value(json_object_get(result, "resultType"));
  if (r->method && r->method->ttl_ms >= 0 && type && !strcmp(type, "complete")) {
    json_object_set_new(result, "ttlMs", json_integer(r->method->ttl_ms));
    json_object_set_new(result, "cacheScope", json_string(r->method->scope));
  }
  return result;
}

/* What mcp_era_result() adds to a tools/call result (not cacheable), as
 * text for results assembled around one serialisation (reply.c). */
#define MODERN_TAIL                                                                                \
  ",\"resultType\":\"complete\",\"_meta\":{\"" MCP_META_SERVER "\":{\"name\":\"" MCP_SERVER_NAME   \
  "\",\"version\":\"" MCP_SERVER_VERSION "\"}}"

const char *mcp_era_tail(const mcp_req_t *r, size_t *len) {
  *len = r->era == MCP_ERA_MODERN ? sizeof MODERN_TAIL - 1 : 0;
  return r->era == MCP_ERA_MODERN ? MODERN_TAIL : "";
}

int mcp_require_caps(const mcp_req_t *r, unsigned needs, const char *why) {
  unsigned missing = needs & ~r->caps;
  if (r->era != MCP_ERA_MODERN || !missing)
    return 0;
  json_t *req = json_object();
  if (missing & MCP_CAP_ROOTS)
    json_object_set_new(req, "roots", json_object());
  if (missing & MCP_CAP_TASKS)
    json_object_set_new(req, "extensions", json_pack("{s:{}}", MCP_TASKS_EXTENSION));
  mcp_reply_error_data(
      r, MCP_RPC_MISSING_CAPABILITY, json_pack("{s:o}", "requiredCapabilities", req),
      "Missing required client capability: %s needs %s in "
      "params._meta[\"" MCP_META_CAPS "\"]",
      why, (missing & MCP_CAP_TASKS) ? "extensions[\"" MCP_TASKS_EXTENSION "\"]" : "roots");
  return -1;
}
