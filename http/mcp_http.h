/* Streamable HTTP's own rules for MCP messages (mcp_http.c): media types,
 * the request headers of both revisions, the status of a refusal, and
 * the JSON-RPC error bodies of the transport's own refusals. Pure
 * functions of the headers and the parsed body, so that the fuzzer and
 * the tests reach them without a connection. */
#ifndef TASKFS_HTTP_MCP_HTTP_H
#define TASKFS_HTTP_MCP_HTTP_H

#include <jansson.h>

#include "mcp/mcp.h"

#define HM_HEADER_MISMATCH (-32020)
#define HM_INVALID_PARAMS (-32602)
#define HM_METHOD_NOT_FOUND (-32601)
#define HM_SERVER_ERROR (-32000)
#define HM_SESSION_NOT_FOUND (-32001)

/* The request headers the rules read (NULL: absent). */
typedef struct {
  const char *version; /* MCP-Protocol-Version */
  const char *method;  /* Mcp-Method */
  const char *name;    /* Mcp-Name */
} hm_headers_t;

/* A refusal: the HTTP status and the JSON-RPC error to send (data owned). */
typedef struct {
  int status;
  int code;
  char msg[768];
  json_t *data;
} hm_reject_t;

/* 1 if the Accept header takes application/json (json) and
 * text/event-stream (sse), wildcards and q values read. */
int hm_accepts(const char *accept, int json, int sse);
/* 1 if the Content-Type is application/json (parameters allowed). */
int hm_content_type_ok(const char *ct);
/* 1 if a protocol version is 2026-07-28 or later (served per request). */
int hm_version_modern(const char *v);
/* A message that claims 2026-07-28 (claimed: the version it names, NULL
 * when not a string): the headers against the body. 0, or -1 with rej. */
int hm_check_modern(const hm_headers_t *h, const char *method, json_t *params, int request,
                    const char *claimed, hm_reject_t *rej);
/* A message without the claim: its MCP-Protocol-Version header, if any,
 * must be a legacy revision, or 2026-07-28 for a notification. */
int hm_check_legacy(const hm_headers_t *h, const char *method, json_t *params, int request,
                    hm_reject_t *rej);
/* The status of a dispatcher's answer, given what it refused the message
 * with (mcp_session_refused) in either era. */
unsigned hm_status(int modern, int refused);
/* A JSON-RPC error message (compact text, malloc'ed; data stolen). */
char *hm_error_body(const json_t *id, int code, const char *msg, json_t *data, size_t *len);

#endif /* TASKFS_HTTP_MCP_HTTP_H */
