/* MCP over HTTP's state (http/mcp_session.h): the end of an exchange,
 * the delivery of what the dispatcher sends (to the request a message is
 * about, else to the session's GET stream), and the sessions of
 * 2025-11-25 with their sweep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "http/mcp_session.h"

#define SESSIONS_MAX 1000
#define SESSION_IDLE_MS (60 * 60 * 1000)
/* An answer that is not ready yet is waited for this long as one JSON body
 * to come; then the answer becomes a stream (headers at once, keep-alive
 * comments), so that no client's wait for headers runs out. */
#define HOLD_MS 10000

/* ---- the end of an exchange -------------------------------------------- */

static void unlink_x(hm_x_t *x) {
  if (!x->sess)
    return;
  for (hm_x_t **pp = &x->sess->xs; *pp; pp = &(*pp)->next)
    if (*pp == x) {
      *pp = x->next;
      break;
    }
  x->next = NULL;
}

/* What can only happen outside the dispatcher: a request whose client left
 * is dropped (cancelled on its behalf), a stateless session is closed. */
void hm_reap(uv_timer_t *t) {
  http_mcp_t *hm = t->data;
  while (hm->reap) {
    hm_x_t *x = hm->reap;
    hm->reap = x->next;
    if (x->sess && !x->replied && x->id) {
      json_t *note = json_pack("{s:s, s:s, s:{s:O}}", "jsonrpc", "2.0", "method",
                               "notifications/cancelled", "params", "requestId", x->id);
      if (note)
        mcp_dispatch(x->sess->s, note);
      json_decref(note);
    }
    if (x->eph)
      mcp_session_close(x->eph);
    for (hm_msg_t *m = x->pre, *n; m; m = n) {
      n = m->next;
      free(m->data);
      free(m);
    }
    json_decref(x->id);
    free(x);
  }
}

void hm_live_add(hm_x_t *x, http_req_t *r) {
  x->r = r;
  x->held_at = http_now_ms();
  x->lnext = x->hm->live;
  if (x->hm->live)
    x->hm->live->lprev = x;
  x->hm->live = x;
}

static void live_remove(hm_x_t *x) {
  if (!x->r)
    return;
  if (x->lprev)
    x->lprev->lnext = x->lnext;
  else
    x->hm->live = x->lnext;
  if (x->lnext)
    x->lnext->lprev = x->lprev;
  x->lprev = x->lnext = NULL;
  x->r = NULL;
}

/* The exchange is over (answered, or its client left). */
void hm_x_finish(hm_x_t *x) {
  if (x->reaping)
    return;
  x->reaping = 1;
  live_remove(x);
  unlink_x(x);
  x->next = x->hm->reap;
  x->hm->reap = x;
  uv_timer_start(&x->hm->reap_timer, hm_reap, 0, 0);
}

void hm_x_gone(http_req_t *r, void *arg) {
  hm_x_finish(arg);
}

/* ---- what the dispatcher sends ------------------------------------------- */

void hm_sse_event(http_req_t *r, const char *data, size_t len) {
  http_stream_event(r, "message", NULL, data, len);
}

void hm_x_stream(hm_x_t *x) {
  x->streaming = 1;
  http_stream_start(x->r, MHD_HTTP_OK, "text/event-stream", hm_x_gone, x);
}

static void x_deliver(hm_x_t *x, char *data, size_t len, int final) {
  if (x->replied || x->reaping) {
    free(data);
    return;
  }
  x->replied = final;
  if (x->collecting) {
    hm_msg_t *m = malloc(sizeof *m);
    if (!m) {
      free(data);
      return;
    }
    *m = (hm_msg_t){.data = data, .len = len};
    *x->pre_tail = m;
    x->pre_tail = &m->next;
    x->npre++;
    return;
  }
  if (x->r && !x->streaming && final) {
    http_respond_take(x->r, MHD_HTTP_OK, "application/json", data, len); /* one JSON body */
    hm_x_finish(x);
    return;
  }
  if (x->r && !x->streaming)
    hm_x_stream(x);
  if (x->r)
    hm_sse_event(x->r, data, len);
  free(data);
  if (final) {
    if (x->r)
      http_stream_end(x->r);
    hm_x_finish(x);
  }
}

static hm_x_t *find_x(hm_sess_t *ss, const json_t *id) {
  for (hm_x_t *x = ss->xs; x; x = x->next)
    if (x->id && json_equal(x->id, (json_t *)id))
      return x;
  return NULL;
}

/* A 2025-11-25 session's way out: to the request the message is about, by
 * its id; without one, to the request being dispatched (a log line, an
 * error about a message without an id), else to the GET stream. */
static void sess_send(void *arg, const json_t *id, char *data, size_t len) {
  hm_sess_t *ss = arg;
  int final = mcp_session_replying(ss->s);
  hm_x_t *x = NULL;
  if (id && !json_is_null(id))
    x = find_x(ss, id);
  else if (ss->hm->cur && ss->hm->cur->sess == ss)
    x = ss->hm->cur;
  if (x) {
    x_deliver(x, data, len, final);
    return;
  }
  if (!final && ss->get)
    hm_sse_event(ss->get, data, len);
  free(data);
}

/* A 2026-07-28 request's session: everything it sends is that request's. */
void hm_eph_send(void *arg, const json_t *id, char *data, size_t len) {
  hm_x_t *x = arg;
  x_deliver(x, data, len, mcp_session_replying(x->eph));
}

/* ---- sessions ------------------------------------------------------------ */

static void sess_end_streams(hm_sess_t *ss) {
  if (ss->get) {
    http_stream_end(ss->get);
    ss->get = NULL;
  }
  while (ss->xs) {
    hm_x_t *x = ss->xs;
    if (x->r && !x->streaming)
      hm_x_stream(x); /* a held request ends as an empty stream */
    if (x->r)
      http_stream_end(x->r);
    x->sess = NULL; /* nothing to cancel: the session's end drops it */
    ss->xs = x->next;
    x->next = NULL;
    hm_x_finish(x);
  }
}

void hm_sess_close(hm_sess_t *ss) {
  http_mcp_t *hm = ss->hm;
  sess_end_streams(ss);
  for (hm_x_t *x = hm->reap; x; x = x->next)
    if (x->sess == ss)
      x->sess = NULL; /* nothing to cancel: the session's end drops it */
  mcp_session_close(ss->s);
  if (ss->prev)
    ss->prev->next = ss->next;
  else
    hm->sessions = ss->next;
  if (ss->next)
    ss->next->prev = ss->prev;
  hm->nsessions--;
  free(ss);
}

static int sess_idle(const hm_sess_t *ss) {
  return !ss->xs && !ss->get;
}

/* A new session, making room by ending the longest-idle one when full;
 * NULL when every session is busy or memory is short. */
hm_sess_t *hm_sess_new(http_mcp_t *hm) {
  if (hm->nsessions >= SESSIONS_MAX) {
    hm_sess_t *old = NULL;
    for (hm_sess_t *ss = hm->sessions; ss; ss = ss->next)
      if (sess_idle(ss) && (!old || ss->used_ms < old->used_ms))
        old = ss;
    if (!old)
      return NULL;
    hm_sess_close(old);
  }
  hm_sess_t *ss = calloc(1, sizeof *ss);
  unsigned char raw[16];
  if (!ss || getrandom(raw, sizeof raw, 0) != sizeof raw) {
    free(ss);
    return NULL;
  }
  for (int i = 0; i < 16; i++)
    snprintf(ss->id + 2 * i, 3, "%02x", raw[i]);
  ss->hm = hm;
  ss->used_ms = http_now_ms();
  if (!(ss->s = mcp_session_new(hm->srv->mcp, sess_send, ss))) {
    free(ss);
    return NULL;
  }
  ss->next = hm->sessions;
  if (hm->sessions)
    hm->sessions->prev = ss;
  hm->sessions = ss;
  hm->nsessions++;
  return ss;
}

hm_sess_t *hm_sess_find(http_mcp_t *hm, const char *id) {
  for (hm_sess_t *ss = hm->sessions; ss; ss = ss->next)
    if (http_secret_equal(id, strlen(id), ss->id, 32))
      return ss;
  return NULL;
}

void http_mcp_sweep(http_server_t *srv, int64_t now) {
  http_mcp_t *hm = srv->mcpx;
  for (hm_x_t *x = hm ? hm->live : NULL; x; x = x->lnext)
    if (!x->streaming && now - x->held_at >= HOLD_MS) {
      hm_x_stream(x);
      http_stream_write(x->r, ": taskfs\n\n", 10);
    }
  for (hm_sess_t *ss = hm ? hm->sessions : NULL, *n; ss; ss = n) {
    n = ss->next;
    if (sess_idle(ss) && now - ss->used_ms > SESSION_IDLE_MS)
      hm_sess_close(ss);
  }
}
