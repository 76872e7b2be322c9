/* Sessions and everything the server sends. A session is one client
 * conversation: stdio has one for the process; an HTTP transport has one
 * per client session (or per request, where the protocol is stateless).
 * Every message leaves through its session's send callback, so the code
 * that answers never knows the transport. A closed session sends nothing;
 * it is freed when the last request kept past its handler (a parked
 * request, a launch on the thread pool) lets go of it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

mcp_session_t *mcp_session_new(mcp_server_t *srv, mcp_send_fn send, void *arg) {
  mcp_session_t *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->srv = srv;
  s->send = send;
  s->arg = arg;
  s->refs = 1;
  s->next = srv->sessions;
  srv->sessions = s;
  return s;
}

void mcp_session_ref(mcp_session_t *s) {
  s->refs++;
}

void mcp_session_unref(mcp_session_t *s) {
  if (--s->refs == 0)
    free(s);
}

void mcp_session_close(mcp_session_t *s) {
  if (!s || s->closed)
    return;
  s->closed = 1;
  mcp_pending_drop_session(s);
  mcp_resources_drop(s);
  for (mcp_session_t **pp = &s->srv->sessions; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  mcp_session_unref(s);
}

void mcp_req_keep(mcp_req_t *dst, const mcp_req_t *src) {
  *dst = *src;
  dst->id = json_incref(src->id);
  mcp_session_ref(dst->sess);
}

void mcp_req_release(mcp_req_t *r) {
  json_decref(r->id);
  r->id = NULL;
  if (r->sess)
    mcp_session_unref(r->sess);
  r->sess = NULL;
}

void mcp_send_raw(mcp_session_t *s, const json_t *id, char *data, size_t len) {
  if (s->closed) {
    free(data);
    return;
  }
  s->send(s->arg, id, data, len);
}

void mcp_send(mcp_session_t *s, const json_t *id, json_t *msg) {
  char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
  json_decref(msg);
  if (!text) {
    fprintf(stderr, "taskfs mcp: could not serialise a message (out of memory?)\n");
    return;
  }
  mcp_send_raw(s, id, text, strlen(text));
}

void mcp_reply(const mcp_req_t *r, json_t *result) {
  json_t *id = r->id ? r->id : json_null();
  mcp_send(r->sess, id, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static void send_error(mcp_session_t *s, json_t *id, int code, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  /* A %.Ns of user input may have cut a character in two: keep it UTF-8. */
  char *clean = mcp_text_clean(msg, strlen(msg), 0);
  json_t *m = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                        code, "message", clean ? clean : "error");
  free(clean);
  if (m)
    mcp_send(s, id, m);
}

void mcp_reply_error(const mcp_req_t *r, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  send_error(r->sess, r->id ? r->id : json_null(), code, fmt, ap);
  va_end(ap);
}

void mcp_session_error(mcp_session_t *s, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  send_error(s, json_null(), code, fmt, ap);
  va_end(ap);
}

void mcp_notify(mcp_session_t *s, const char *method, json_t *params) {
  mcp_send(s, NULL,
           json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params));
}
