/* The MCP face: Streamable HTTP at /mcp, both revisions, through the one
 * dispatcher of mcp/ (docs/serve.md, "MCP over HTTP").
 *
 * - A 2026-07-28 request (one whose params._meta claims the revision, the
 *   dispatcher's rule) is stateless: it gets a dispatcher session of its
 *   own that lives as long as its HTTP request, so everything that session
 *   sends (a listen's notifications, the answer) goes on that request's
 *   answer, and the client closing it cancels it (the session is closed:
 *   its waits and its listen are dropped). Mcp-Session-Id is ignored.
 * - A 2025-11-25 conversation is a session: initialize makes it and its
 *   Mcp-Session-Id (128 random bits); every later request names it (400
 *   without, 404 for one this server does not hold: another instance's, an
 *   ended one, a made-up one). What the dispatcher sends for a request
 *   goes on that request's answer, found by the JSON-RPC id; what concerns
 *   no request (a subscription's updates) goes on the session's GET stream.
 *   DELETE ends the session. A client that closes a request's answer drops
 *   the request (notifications/cancelled on its behalf); the task itself
 *   goes on, durable as ever.
 * - Answers: a message answered while the dispatcher handles it, with
 *   nothing else to send, is one JSON body; anything else (a long-poll, a
 *   listen, a request that sends notifications first) is an SSE stream that
 *   ends with the answer. Notifications and responses: 202.
 *
 * The dispatcher's sends can come from deep inside mcp/ (a parked request
 * answered from a watch callback), so nothing here closes a dispatcher
 * session or dispatches from inside a send: that waits for the next loop
 * turn (the reap list). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/mcp_session.h"

/* ---- answering ------------------------------------------------------------ */

/* A refusal of the transport's own, as a JSON-RPC error. */
static void refuse(http_req_t *r, const json_t *id, hm_reject_t *rej) {
  size_t len;
  char *body = hm_error_body(id, rej->code, rej->msg, rej->data, &len);
  rej->data = NULL;
  if (body)
    http_respond_take(r, (unsigned)rej->status, "application/json", body, len);
  else
    http_respond_text(r, (unsigned)rej->status, "%s", rej->msg);
}

static void refuse_msg(http_req_t *r, int status, int code, const char *msg) {
  hm_reject_t rej = {.status = status, .code = code};
  snprintf(rej.msg, sizeof rej.msg, "%s", msg);
  refuse(r, NULL, &rej);
}

/* 1 if the one message in pre is a result (initialize succeeded). */
static int pre_is_result(const hm_x_t *x) {
  json_t *m = x->pre ? json_loadb(x->pre->data, x->pre->len, 0, NULL) : NULL;
  int ok = json_object_get(m, "result") != NULL;
  json_decref(m);
  return ok;
}

/* After the dispatcher had the message: one JSON body, a 202, or a stream
 * with what came so far. Returns 1 if the exchange goes on. */
static int x_answer(hm_x_t *x, http_req_t *r, int will_reply, int modern, hm_sess_t *fresh) {
  int refused = mcp_session_refused(modern ? x->eph : x->sess->s);
  if (fresh && !(x->replied && x->npre == 1 && pre_is_result(x))) {
    hm_sess_close(fresh); /* initialize failed: no session */
    fresh = NULL;
  } else if (fresh) {
    http_add_header(r, "Mcp-Session-Id", fresh->id);
  }
  if (!will_reply && !x->replied) {
    http_respond(r, MHD_HTTP_ACCEPTED, NULL, "", 0);
    hm_x_finish(x);
    return 0;
  }
  if (x->replied && x->npre == 1) {
    hm_msg_t *m = x->pre;
    x->pre = NULL;
    http_respond_take(r, hm_status(modern, refused), "application/json", m->data, m->len);
    free(m);
    hm_x_finish(x);
    return 0;
  }
  if (!x->pre) {
    hm_live_add(x, r); /* nothing yet: held, for one JSON body or a stream later */
    http_hold(r, hm_x_gone, x);
    return 1;
  }
  hm_live_add(x, r);
  hm_x_stream(x);
  for (hm_msg_t *m = x->pre, *n; m; m = n) {
    n = m->next;
    hm_sse_event(r, m->data, m->len);
    free(m->data);
    free(m);
  }
  x->pre = NULL;
  if (x->replied) {
    http_stream_end(r);
    hm_x_finish(x);
    return 0;
  }
  return 1;
}

/* Hands msg to the dispatcher: on sess (2025-11-25), or on a session of
 * its own (2026-07-28, sess NULL); fresh is a session initialize makes. */
static void exchange(http_req_t *r, hm_sess_t *sess, json_t *msg, hm_sess_t *fresh) {
  http_mcp_t *hm = r->srv->mcpx;
  hm_x_t *x = calloc(1, sizeof *x);
  if (!x) {
    if (fresh)
      hm_sess_close(fresh);
    http_respond_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
    return;
  }
  x->hm = hm;
  x->pre_tail = &x->pre;
  json_t *id = json_object_get(msg, "id");
  x->id = id && !json_object_get(msg, "result") && !json_object_get(msg, "error") &&
                  json_object_get(msg, "method")
              ? json_incref(id)
              : NULL;
  if (sess) {
    x->sess = sess;
    x->next = sess->xs;
    sess->xs = x;
    sess->used_ms = http_now_ms();
  } else if (!(x->eph = mcp_session_new(r->srv->mcp, hm_eph_send, x))) {
    json_decref(x->id);
    free(x);
    http_respond_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
    return;
  }
  hm_x_t *outer = hm->cur;
  hm->cur = x;
  x->collecting = 1;
  int will = mcp_dispatch(sess ? sess->s : x->eph, msg);
  x->collecting = 0;
  hm->cur = outer;
  x_answer(x, r, will, sess == NULL, fresh);
}

/* ---- the methods --------------------------------------------------------- */

static void on_post(http_req_t *r) {
  http_mcp_t *hm = r->srv->mcpx;
  if (!hm_content_type_ok(http_header(r, "Content-Type")))
    return refuse_msg(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, HM_SERVER_ERROR,
                      "Unsupported Media Type: Content-Type must be application/json");
  if (!hm_accepts(http_header(r, "Accept"), 1, 1))
    return refuse_msg(r, MHD_HTTP_NOT_ACCEPTABLE, HM_SERVER_ERROR,
                      "Not Acceptable: the Accept header must take both application/json and "
                      "text/event-stream");
  json_error_t jerr;
  json_t *msg = mcp_message_load(r->body ? r->body : "", r->len, &jerr);
  if (!msg) {
    char text[400];
    snprintf(text, sizeof text,
             "Parse error: %s (line %d, column %d); the body must be one "
             "JSON-RPC 2.0 message",
             jerr.text, jerr.line, jerr.column);
    return refuse_msg(r, MHD_HTTP_BAD_REQUEST, -32700, text);
  }
  hm_headers_t h = {http_header(r, "MCP-Protocol-Version"), http_header(r, "Mcp-Method"),
                    http_header(r, "Mcp-Name")};
  json_t *params = json_object_get(msg, "params");
  const char *method = json_string_value(json_object_get(msg, "method"));
  int request = method && json_object_get(msg, "id");
  json_t *claim = mcp_message_claim(msg);
  hm_reject_t rej = {0};
  if (!json_is_object(msg)) {
    exchange(r, NULL, msg, NULL); /* the dispatcher words what is wrong */
  } else if (claim) {
    if (method && hm_check_modern(&h, method, params, request, json_string_value(claim), &rej))
      refuse(r, json_object_get(msg, "id"), &rej);
    else
      exchange(r, NULL, msg, NULL);
  } else if (hm_check_legacy(&h, method, params, request, &rej)) {
    refuse(r, json_object_get(msg, "id"), &rej);
  } else if (!request && method && hm_version_modern(h.version)) {
    http_respond(r, MHD_HTTP_ACCEPTED, NULL, "", 0); /* a 2026-07-28 notification */
  } else {
    const char *sid = http_header(r, "Mcp-Session-Id");
    hm_sess_t *ss = sid ? hm_sess_find(hm, sid) : NULL;
    if (sid && !ss) {
      refuse_msg(r, MHD_HTTP_NOT_FOUND, HM_SESSION_NOT_FOUND,
                 "Session not found: this server holds no session with that Mcp-Session-Id "
                 "(it ended, or another server made it); initialize a new one");
    } else if (!ss && request && !strcmp(method, "initialize")) {
      hm_sess_t *fresh = hm_sess_new(hm);
      if (fresh)
        exchange(r, fresh, msg, fresh);
      else
        refuse_msg(r, MHD_HTTP_SERVICE_UNAVAILABLE, HM_SERVER_ERROR,
                   "Service Unavailable: every one of the server's sessions is in use");
    } else if (!ss) {
      refuse_msg(r, MHD_HTTP_BAD_REQUEST, HM_SERVER_ERROR,
                 "Bad Request: Mcp-Session-Id header is required (a 2025-11-25 session starts "
                 "with initialize; a 2026-07-28 request carries params._meta instead)");
    } else {
      exchange(r, ss, msg, NULL);
    }
  }
  json_decref(msg);
}

/* The session named by the request's Mcp-Session-Id; answers and returns
 * NULL without one (405: only a session has these methods) or for one
 * this server does not hold (404). */
static hm_sess_t *session_of(http_req_t *r) {
  const char *sid = http_header(r, "Mcp-Session-Id");
  if (!sid) {
    http_add_header(r, "Allow", "POST");
    refuse_msg(r, MHD_HTTP_METHOD_NOT_ALLOWED, HM_SERVER_ERROR,
               "Method Not Allowed: GET and DELETE belong to a 2025-11-25 session (send its "
               "Mcp-Session-Id); 2026-07-28 speaks POST only");
    return NULL;
  }
  hm_sess_t *ss = hm_sess_find(r->srv->mcpx, sid);
  if (!ss)
    refuse_msg(r, MHD_HTTP_NOT_FOUND, HM_SESSION_NOT_FOUND,
               "Session not found: this server holds no session with that Mcp-Session-Id");
  return ss;
}

static void get_gone(http_req_t *r, void *arg) {
  hm_sess_t *ss = arg;
  if (ss->get == r)
    ss->get = NULL;
  ss->used_ms = http_now_ms();
}

/* GET: the session's stream of what concerns no request. */
static void on_get(http_req_t *r) {
  if (!hm_accepts(http_header(r, "Accept"), 0, 1))
    return refuse_msg(r, MHD_HTTP_NOT_ACCEPTABLE, HM_SERVER_ERROR,
                      "Not Acceptable: the Accept header must take text/event-stream");
  hm_sess_t *ss = session_of(r);
  if (!ss)
    return;
  if (ss->get)
    return refuse_msg(r, MHD_HTTP_CONFLICT, HM_SERVER_ERROR,
                      "Conflict: this session's GET stream is open already (one per session)");
  ss->get = r;
  ss->used_ms = http_now_ms();
  http_stream_start(r, MHD_HTTP_OK, "text/event-stream", get_gone, ss);
  http_stream_write(r, ": taskfs\n\n", 10);
}

static void on_delete(http_req_t *r) {
  hm_sess_t *ss = session_of(r);
  if (!ss)
    return;
  hm_sess_close(ss);
  http_respond(r, MHD_HTTP_NO_CONTENT, NULL, "", 0);
}

void http_mcp_handle(http_req_t *r) {
  if (r->m == HTTP_M_POST)
    on_post(r);
  else if (r->m == HTTP_M_GET)
    on_get(r);
  else
    on_delete(r);
}

/* ---- the face's life ------------------------------------------------------ */

int http_mcp_open(http_server_t *srv) {
  http_mcp_t *hm = calloc(1, sizeof *hm);
  if (!hm)
    return -ENOMEM;
  hm->srv = srv;
  uv_timer_init(srv->loop, &hm->reap_timer);
  hm->reap_timer.data = hm;
  srv->handles++;
  srv->mcpx = hm;
  return 0;
}

void http_mcp_stop(http_server_t *srv) {
  http_mcp_t *hm = srv->mcpx;
  for (hm_sess_t *ss = hm ? hm->sessions : NULL; ss; ss = ss->next)
    if (ss->get) {
      http_stream_end(ss->get);
      ss->get = NULL;
    }
}

static void on_reap_closed(uv_handle_t *h) {
  http_mcp_t *hm = h->data;
  http_server_t *srv = hm->srv;
  free(hm);
  http_handle_closed(srv);
}

void http_mcp_close(http_server_t *srv) {
  http_mcp_t *hm = srv->mcpx;
  if (!hm)
    return;
  while (hm->sessions)
    hm_sess_close(hm->sessions);
  hm_reap(&hm->reap_timer);
  srv->mcpx = NULL;
  uv_close((uv_handle_t *)&hm->reap_timer, on_reap_closed);
}
