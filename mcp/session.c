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
  s->log_level = -1;
  s->next_out = 1;
  s->next = srv->sessions;
  srv->sessions = s;
  return s;
}

void mcp_session_ref(mcp_session_t *s) {
  s->refs++;
}

void mcp_session_unref(mcp_session_t *s) {
  if (--s->refs)
    return;
  free(s->root);
  free(s);
}

void mcp_session_close(mcp_session_t *s) {
  if (!s || s->closed)
    return;
  s->closed = 1;
  mcp_pending_drop_session(s);
  mcp_resources_drop(s);
  mcp_listen_drop_session(s);
  mcp_client_drop_session(s);
  for (mcp_session_t **pp = &s->srv->sessions; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  mcp_session_unref(s);
}

/* A kept request is one in flight: counted for the limits (limits.c). */
void mcp_req_keep(mcp_req_t *dst, const mcp_req_t *src) {
  *dst = *src;
  dst->id = json_incref(src->id);
  dst->kept = 1;
  mcp_session_ref(dst->sess);
  mcp_flight_count(dst->sess, 1);
}

void mcp_req_release(mcp_req_t *r) {
  json_decref(r->id);
  r->id = NULL;
  if (r->sess) {
    mcp_flight_count(r->sess, -1);
    mcp_session_unref(r->sess);
  }
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
  result = mcp_era_result(r, result);
  mcp_send(r->sess, id, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

/* An error message (data stolen, may be NULL), its text kept valid UTF-8:
 * a %.Ns of user input may have cut a character in two. */
static void send_error(mcp_session_t *s, json_t *id, int code, json_t *data, const char *fmt,
                       va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  char *clean = mcp_text_clean(msg, strlen(msg), 0);
  json_t *err = json_pack("{s:i, s:s}", "code", code, "message", clean ? clean : "error");
  free(clean);
  if (err && data)
    json_object_set(err, "data", data);
  json_decref(data);
  json_t *m = err ? json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "error", err) : NULL;
  if (m)
    mcp_send(s, id, m);
}

void mcp_reply_error(const mcp_req_t *r, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  send_error(r->sess, r->id ? r->id : json_null(), code, NULL, fmt, ap);
  va_end(ap);
}

void mcp_reply_error_data(const mcp_req_t *r, int code, json_t *data, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  send_error(r->sess, r->id ? r->id : json_null(), code, data, fmt, ap);
  va_end(ap);
}

void mcp_session_error(mcp_session_t *s, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  send_error(s, json_null(), code, NULL, fmt, ap);
  va_end(ap);
}

void mcp_notify(mcp_session_t *s, const char *method, json_t *params) {
  mcp_send(s, NULL,
           json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params));
}

static void log_send(mcp_session_t *s, int level, const char *msg) {
  mcp_notify(s, "notifications/message",
             json_pack("{s:s, s:s, s:s}", "level", mcp_log_level_name(level), "logger", "taskfs",
                       "data", msg));
}

/* The line on stderr; returns it as valid UTF-8 (malloc'ed, or NULL). */
static char *log_line(const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  fprintf(stderr, "taskfs mcp: %s\n", msg);
  return mcp_text_clean(msg, strlen(msg), 0);
}

void mcp_log(const mcp_req_t *r, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = log_line(fmt, ap);
  va_end(ap);
  /* Legacy: the session's level now (setLevel may have come since);
   * modern: the level this request asked for. */
  int want = r->era == MCP_ERA_LEGACY ? r->sess->log_level : r->log_level;
  if (want >= 0 && level >= want && msg)
    log_send(r->sess, level, msg);
  free(msg);
}

void mcp_log_all(mcp_server_t *srv, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = log_line(fmt, ap);
  va_end(ap);
  for (mcp_session_t *s = srv->sessions; s && msg; s = s->next)
    if (s->pin == MCP_ERA_LEGACY && s->log_level >= 0 && level >= s->log_level)
      log_send(s, level, msg);
  free(msg);
}
