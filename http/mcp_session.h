/* MCP over HTTP's state (http/mcp_session.c): an exchange for each
 * request, a session for each 2025-11-25 conversation, and the delivery
 * of what the dispatcher sends to the request it belongs to. The methods
 * at /mcp (http/mcp.c) make and end them. */
#ifndef TASKFS_HTTP_MCP_SESSION_H
#define TASKFS_HTTP_MCP_SESSION_H

#include "http/internal.h"
#include "http/mcp_http.h"

typedef struct hm_x hm_x_t;
typedef struct hm_sess hm_sess_t;
typedef struct hm_msg hm_msg_t;

struct hm_msg {
  hm_msg_t *next;
  char *data;
  size_t len;
};

/* A 2025-11-25 session. */
struct hm_sess {
  hm_sess_t *prev, *next;
  http_mcp_t *hm;
  char id[33];
  mcp_session_t *s;
  hm_x_t *xs;      /* requests awaiting their answer */
  http_req_t *get; /* its GET stream */
  int64_t used_ms;
};

/* One request's exchange: the POST that carries it, and what goes back. */
struct hm_x {
  hm_x_t *next;          /* in sess->xs, or in the reap list */
  hm_x_t *lprev, *lnext; /* in hm->live while its HTTP request is held or streams */
  http_mcp_t *hm;
  hm_sess_t *sess;    /* 2025-11-25; NULL for 2026-07-28 */
  mcp_session_t *eph; /* 2026-07-28: the session of its own */
  json_t *id;
  http_req_t *r; /* NULL once its HTTP request is over */
  int streaming; /* its answer is an SSE stream (else it is held for one JSON body) */
  int64_t held_at;
  int collecting; /* inside mcp_dispatch: messages wait in pre */
  hm_msg_t *pre, **pre_tail;
  size_t npre;
  int replied; /* the final answer came */
  int reaping;
};

struct http_mcp {
  http_server_t *srv;
  hm_sess_t *sessions;
  size_t nsessions;
  hm_x_t *cur;  /* the exchange being dispatched */
  hm_x_t *live; /* exchanges whose HTTP request is held or streams */
  hm_x_t *reap; /* exchanges to end on the next loop turn */
  uv_timer_t reap_timer;
};

/* The end of an exchange: answered, or its client left. It is taken out
 * of its session and the live list now and freed on the next loop turn
 * (hm_reap), outside the dispatcher. */
void hm_x_finish(hm_x_t *x);
/* http_hold()'s and http_stream_start()'s callback: the client left. */
void hm_x_gone(http_req_t *r, void *arg);
/* Ends what waits on the reap list (the reap timer's callback; also
 * called once more when the face closes). */
void hm_reap(uv_timer_t *t);
/* The exchange holds its HTTP request r (for one JSON body or a stream). */
void hm_live_add(hm_x_t *x, http_req_t *r);
/* Turns the exchange's held answer into an SSE stream. */
void hm_x_stream(hm_x_t *x);
/* One SSE "message" event on r. */
void hm_sse_event(http_req_t *r, const char *data, size_t len);
/* A 2026-07-28 request's session send callback (arg: its exchange). */
void hm_eph_send(void *arg, const json_t *id, char *data, size_t len);

/* A new 2025-11-25 session, making room by ending the longest-idle one
 * when full; NULL when every session is busy or memory is short. */
hm_sess_t *hm_sess_new(http_mcp_t *hm);
/* The session of an Mcp-Session-Id (compared in constant time), or NULL. */
hm_sess_t *hm_sess_find(http_mcp_t *hm, const char *id);
/* Ends a session: its streams, its requests (dropped, not cancelled), its
 * dispatcher session. */
void hm_sess_close(hm_sess_t *ss);

#endif /* TASKFS_HTTP_MCP_SESSION_H */
