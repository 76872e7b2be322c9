/* What Streamable HTTP adds to an MCP message, before the dispatcher sees
 * it: the media types, the 2026-07-28 request headers (MCP-Protocol-Version,
 * Mcp-Method, Mcp-Name) checked against the body, the protocol version
 * header of a 2025-11-25 request, and the HTTP status of what the
 * dispatcher refused. The era of a message is the dispatcher's rule
 * (mcp_message_claim); only the headers are this file's.
 *
 * The order and the errors follow the reference SDK's inbound ladder
 * (@modelcontextprotocol/server 2.4.0), which the conformance suite
 * checks: a header that disagrees with the body, or a required header
 * that is missing, is -32020 (HeaderMismatch) on 400; a request whose
 * header names 2026-07-28 but whose body has no envelope is -32602 on 400,
 * naming what is missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/mcp_http.h"
#include "taskfs/text.h"

/* 1 if one media range of an Accept header covers type/sub (with a q
 * above 0). */
static int accept_covers(const char *accept, const char *type, const char *sub) {
  const char *p = accept;
  while (p && *p) {
    while (*p == ' ' || *p == ',')
      p++;
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char item[256];
    snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item ? n : sizeof item - 1), p);
    char *semi = strchr(item, ';');
    double q = 1;
    if (semi) {
      *semi = '\0';
      char *qp = strstr(semi + 1, "q=");
      if (qp)
        q = strtod(qp + 2, NULL);
    }
    size_t rlen = strlen(item);
    while (rlen && item[rlen - 1] == ' ')
      item[--rlen] = '\0';
    char *slash = strchr(item, '/');
    if (slash && q > 0) {
      *slash = '\0';
      if ((!strcmp(item, "*") || !strcasecmp(item, type)) &&
          (!strcmp(slash + 1, "*") || !strcasecmp(slash + 1, sub)))
        return 1;
    }
    p = end;
  }
  return 0;
}

int hm_accepts(const char *accept, int json, int sse) {
  if (!accept)
    return 0;
  return (!json || accept_covers(accept, "application", "json")) &&
         (!sse || accept_covers(accept, "text", "event-stream"));
}

int hm_content_type_ok(const char *ct) {
  if (!ct)
    return 0;
  size_t n = strcspn(ct, ";");
  while (n && ct[n - 1] == ' ')
    n--;
  return n == 16 && !strncasecmp(ct, "application/json", 16);
}

/* Optional whitespace around a field value (RFC 9110) is not part of it. */
static const char *ows(const char *v, char *buf, size_t len) {
  if (!v)
    return NULL;
  while (*v == ' ' || *v == '\t')
    v++;
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
    n--;
  if (n >= len)
    n = len - 1;
  memcpy(buf, v, n);
  buf[n] = '\0';
  return buf;
}

int hm_version_modern(const char *v) {
  /* Revisions are dates: this one and any later one are per-request. */
  return v && strlen(v) == 10 && strcmp(v, "2026-07-28") >= 0;
}

static int reject(hm_reject_t *rej, int status, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int reject(hm_reject_t *rej, int status, int code, json_t *data, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rej->msg, sizeof rej->msg, fmt, ap);
  va_end(ap);
  rej->status = status;
  rej->code = code;
  rej->data = data;
  return -1;
}

static int mismatch(hm_reject_t *rej, const char *header, const char *why) {
  return reject(rej, 400, HM_HEADER_MISMATCH,
                json_pack("{s:{s:s, s:s}}", "mismatch", "header", header, "body", why),
                "Bad Request: the request headers and body disagree: %s", why);
}

/* The body field Mcp-Name mirrors for a method, or NULL. */
static const char *name_field(const char *method) {
  static const struct {
    const char *method, *field;
  } t[] = {{"tools/call", "name"},  {"prompts/get", "name"},    {"resources/read", "uri"},
           {"tasks/get", "taskId"}, {"tasks/update", "taskId"}, {"tasks/cancel", "taskId"}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(method, t[i].method))
      return t[i].field;
  return NULL;
}

/* Mcp-Name against the body (its =?base64?...?= form decoded). */
static int check_name(const hm_headers_t *h, const char *method, json_t *params, hm_reject_t *rej) {
  const char *field = name_field(method);
  const char *body = field ? json_string_value(json_object_get(params, field)) : NULL;
  char why[600], buf[1024];
  if (!body)
    return 0; /* nothing to mirror: the dispatcher judges the params */
  const char *v = ows(h->name, buf, sizeof buf);
  if (!v) {
    snprintf(why, sizeof why,
             "the body carries params.%s=\"%.200s\" but the required Mcp-Name "
             "header is absent",
             field, body);
    return mismatch(rej, "(missing)", why);
  }
  size_t n = strlen(v);
  char *decoded = NULL;
  if (n >= 11 && !strncmp(v, "=?base64?", 9) && !strcmp(v + n - 2, "?=")) {
    char enc[1024];
    snprintf(enc, sizeof enc, "%.*s", (int)(n - 11), v + 9);
    if (!(decoded = tfs_b64_decode(enc)))
      return mismatch(rej, v, "the Mcp-Name header carries an invalid Base64 sentinel value");
    v = decoded;
  }
  int bad = strcmp(v, body) != 0;
  if (bad)
    snprintf(why, sizeof why,
             "the body carries params.%s=\"%.200s\" but the Mcp-Name header "
             "names \"%.200s\"",
             field, body, v);
  free(decoded);
  return bad ? mismatch(rej, h->name, why) : 0;
}

int hm_check_modern(const hm_headers_t *h, const char *method, json_t *params, int request,
                    const char *claimed, hm_reject_t *rej) {
  char vb[64], mb[256], why[600];
  const char *ver = ows(h->version, vb, sizeof vb);
  const char *meth = ows(h->method, mb, sizeof mb);
  if (ver && claimed && strcmp(ver, claimed)) {
    snprintf(why, sizeof why,
             "the body envelope names protocol version %.40s but the "
             "MCP-Protocol-Version header names %.40s",
             claimed, ver);
    return mismatch(rej, ver, why);
  }
  if (meth && strcmp(meth, method)) {
    snprintf(why, sizeof why, "the body names method %.200s but the Mcp-Method header names %.200s",
             method, meth);
    return mismatch(rej, meth, why);
  }
  if (!request)
    return 0;
  if (!ver) {
    snprintf(why, sizeof why,
             "the body envelope names protocol version %.40s but the required "
             "MCP-Protocol-Version header is absent",
             claimed ? claimed : "?");
    return mismatch(rej, "(missing)", why);
  }
  if (!meth) {
    snprintf(why, sizeof why,
             "the body names method %.200s but the required Mcp-Method header "
             "is absent",
             method);
    return mismatch(rej, "(missing)", why);
  }
  return check_name(h, method, params, rej);
}

int hm_check_legacy(const hm_headers_t *h, const char *method, json_t *params, int request,
                    hm_reject_t *rej) {
  char vb[64];
  const char *ver = ows(h->version, vb, sizeof vb);
  if (!ver)
    return 0;
  if (hm_version_modern(ver)) {
    if (method && !strcmp(method, "initialize"))
      return mismatch(rej, ver,
                      "an initialize request (legacy handshake) was sent with a modern "
                      "MCP-Protocol-Version header");
    if (!request)
      return 0; /* a notification: the header decides, and it says 2026-07-28 */
    json_t *meta = json_object_get(params, "_meta");
    json_t *missing = json_array();
    json_array_append_new(missing, json_string(json_is_object(meta) ? MCP_META_VERSION : "_meta"));
    return reject(rej, 400, HM_INVALID_PARAMS,
                  json_pack("{s:{s:o}}", "envelope", "missing", missing),
                  "Invalid params: the MCP-Protocol-Version header names protocol revision %s, "
                  "but the request is missing the required per-request envelope key(s): %s",
                  ver, json_is_object(meta) ? MCP_META_VERSION : "_meta");
  }
  if (!mcp_legacy_version_known(ver))
    return reject(rej, 400, HM_SERVER_ERROR, NULL,
                  "Bad Request: unsupported MCP-Protocol-Version %.40s (supported: 2025-11-25, "
                  "2025-06-18, 2025-03-26, 2024-11-05, and 2026-07-28 with a per-request "
                  "_meta envelope)",
                  ver);
  return 0;
}

unsigned hm_status(int modern, int refused) {
  if (!refused)
    return 200;
  if (modern)
    return refused == HM_METHOD_NOT_FOUND ? 404 : 400;
  return refused == -32700 || refused == -32600 ? 400 : 200;
}

char *hm_error_body(const json_t *id, int code, const char *msg, json_t *data, size_t *len) {
  json_t *err = json_pack("{s:i, s:s}", "code", code, "message", msg);
  if (err && data)
    json_object_set(err, "data", data);
  json_decref(data);
  json_t *m = err ? json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
                              id ? (json_t *)id : json_null(), "error", err)
                  : NULL;
  char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
  json_decref(m);
  *len = text ? strlen(text) : 0;
  return text;
}
