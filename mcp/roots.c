/* The client's first root, the default cwd of a start: each era's way of
 * asking for it, behind one call (mcp_roots_first).
 *
 * Legacy (2025-11-25): a client that declared roots in initialize is sent
 * a roots/list request, on behalf of the request that needs it; the answer
 * (a response message, routed here by the dispatcher) is kept for the
 * session until notifications/roots/list_changed. A client that does not
 * answer within ROOTS_WAIT_MS is treated as having none.
 * Modern (2026-07-28): servers send no requests; a request that declared
 * roots in its _meta and carries no answer yet gets an input_required
 * result asking for roots/list (MRTR), and its retry carries the roots in
 * params.inputResponses.
 * Either way the first root must be a file:// URI naming an existing local
 * directory; otherwise the caller uses its own default and says why. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mcp/internal.h"

#define ROOTS_WAIT_MS 5000
#define ROOTS_KEY "roots" /* the inputRequests key of a modern request */

struct mcp_outreq {
  mcp_outreq_t *next;
  char id[48];
  mcp_req_t req; /* kept: the request that waits for the answer */
  mcp_root_fn cb;
  void *arg;
  uv_timer_t timer;
};

/* Percent-decodes a file:// URI into an absolute path; returns 0, or -1
 * when it is not a local file URI. */
static int file_uri_path(const char *uri, char *out, size_t outlen) {
  if (!uri || strncmp(uri, "file://", 7))
    return -1;
  const char *p = uri + 7;
  if (!strncmp(p, "localhost/", 10))
    p += 9;
  if (*p != '/')
    return -1; /* a host other than the local one */
  size_t o = 0;
  for (; *p && *p != '?' && *p != '#'; p++) {
    char c = *p;
    if (c == '%' && p[1] && p[2]) {
      char hex[3] = {p[1], p[2], 0};
      char *end;
      long v = strtol(hex, &end, 16);
      if (*end || v <= 0)
        return -1; /* not hex, or an encoded NUL */
      c = (char)v;
      p += 2;
    }
    if (o + 1 >= outlen)
      return -1;
    out[o++] = c;
  }
  out[o] = 0;
  return 0;
}

/* The first root of a ListRootsResult, as a directory: a malloc'ed path,
 * or NULL with why filled. */
static char *first_root(json_t *result, char *why, size_t whylen) {
  json_t *roots = json_object_get(result, "roots");
  if (!json_is_array(roots)) {
    snprintf(why, whylen, "the client's roots/list answer had no roots array");
    return NULL;
  }
  if (!json_array_size(roots)) {
    snprintf(why, whylen, "the client has no roots");
    return NULL;
  }
  const char *uri = json_string_value(json_object_get(json_array_get(roots, 0), "uri"));
  char path[PATH_MAX];
  struct stat st;
  if (file_uri_path(uri, path, sizeof path)) {
    snprintf(why, whylen, "the client's first root %.200s is not a local file:// URI",
             uri ? uri : "(no uri)");
    return NULL;
  }
  if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
    snprintf(why, whylen, "the client's first root %.200s is not an existing directory here", path);
    return NULL;
  }
  char *dup = strdup(path);
  if (!dup)
    snprintf(why, whylen, "out of memory");
  return dup;
}

/* ---- legacy: roots/list to the client -------------------------------- */

static void on_outreq_closed(uv_handle_t *h) {
  free(h->data);
}

/* Unlinks and frees one request of ours; the end is told (the hold). */
static void outreq_free(mcp_outreq_t *o) {
  mcp_session_t *s = o->req.sess;
  for (mcp_outreq_t **pp = &s->out; *pp; pp = &(*pp)->next)
    if (*pp == o) {
      *pp = o->next;
      break;
    }
  mcp_server_t *srv = o->req.srv;
  mcp_req_release(&o->req);
  uv_timer_stop(&o->timer);
  uv_close((uv_handle_t *)&o->timer, on_outreq_closed);
  mcp_hold(srv, -1);
}

/* The answer (or its absence): remembered for the session, then handed
 * to the request that waited (answer 0: nobody waits for its reply any
 * more, the session ended or the request was cancelled). */
static void outreq_end(mcp_outreq_t *o, char *root, const char *why, int remember, int answer) {
  mcp_session_t *s = o->req.sess;
  if (remember) {
    free(s->root);
    s->root = root ? strdup(root) : NULL;
    s->roots_known = 1;
  }
  mcp_req_t req;
  mcp_req_keep(&req, &o->req);
  mcp_root_fn cb = o->cb;
  void *arg = o->arg;
  outreq_free(o);
  cb(&req, arg, root, why, answer);
  mcp_req_release(&req);
  free(root);
}

static void outreq_done(mcp_outreq_t *o, char *root, const char *why, int remember) {
  outreq_end(o, root, why, remember, 1);
}

static void on_outreq_timeout(uv_timer_t *t) {
  mcp_outreq_t *o = t->data;
  outreq_done(o, NULL, "the client did not answer roots/list within 5 s", 0);
}

void mcp_client_response(mcp_session_t *s, json_t *msg) {
  const char *id = json_string_value(json_object_get(msg, "id"));
  mcp_outreq_t *o = s->out;
  while (o && (!id || strcmp(o->id, id)))
    o = o->next;
  if (!o)
    return; /* not ours, or answered too late */
  char why[300] = "";
  json_t *err = json_object_get(msg, "error");
  if (err) {
    snprintf(why, sizeof why, "the client answered roots/list with an error: %.200s",
             json_string_value(json_object_get(err, "message"))
                 ? json_string_value(json_object_get(err, "message"))
                 : "?");
    outreq_done(o, NULL, why, 1);
    return;
  }
  char *root = first_root(json_object_get(msg, "result"), why, sizeof why);
  outreq_done(o, root, why, 1);
}

void mcp_client_drop_session(mcp_session_t *s) {
  while (s->out)
    outreq_end(s->out, NULL, NULL, 0, 0);
}

void mcp_client_drop(mcp_session_t *s, const json_t *id) {
  for (mcp_outreq_t *o = s->out; o; o = o->next)
    if (json_equal(o->req.id, (json_t *)id)) {
      outreq_end(o, NULL, NULL, 0, 0);
      return;
    }
}

void mcp_client_flush(mcp_server_t *srv) {
  for (mcp_session_t *s = srv->sessions; s; s = s->next)
    while (s->out)
      outreq_done(s->out, NULL, "the server is ending", 0);
}

void mcp_roots_forget(mcp_session_t *s) {
  free(s->root);
  s->root = NULL;
  s->roots_known = 0;
}

/* Sends roots/list on behalf of r; cb follows with the answer. */
static void ask_roots(const mcp_req_t *r, mcp_root_fn cb, void *arg) {
  mcp_session_t *s = r->sess;
  mcp_outreq_t *o = calloc(1, sizeof *o);
  if (!o) {
    cb(r, arg, NULL, "out of memory", 1);
    return;
  }
  snprintf(o->id, sizeof o->id, "taskfs-roots-%lld", (long long)s->next_out++);
  mcp_req_keep(&o->req, r);
  o->cb = cb;
  o->arg = arg;
  uv_timer_init(mcp_loop(r->srv), &o->timer);
  o->timer.data = o;
  uv_timer_start(&o->timer, on_outreq_timeout, ROOTS_WAIT_MS, 0);
  o->next = s->out;
  s->out = o;
  mcp_hold(r->srv, 1);
  /* On behalf of r: a transport with a stream per request sends it there. */
  mcp_send(s, r->id,
           json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", o->id, "method", "roots/list"));
}

/* ---- both eras ---------------------------------------------------------- */

/* Modern: the answer in params.inputResponses, if the client sent it.
 * Returns 1 and calls cb when there was one, 0 when there was none, -1
 * after replying with an error for a malformed one. */
static int modern_answer(const mcp_req_t *r, json_t *params, mcp_root_fn cb, void *arg) {
  json_t *responses = json_object_get(params, "inputResponses");
  if (!responses)
    return 0;
  if (!json_is_object(responses)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.inputResponses must be an object");
    return -1;
  }
  json_t *roots = json_object_get(responses, ROOTS_KEY);
  if (!roots)
    return 0; /* the answer is missing: ask again */
  if (!json_is_object(roots) || !json_is_array(json_object_get(roots, "roots"))) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "params.inputResponses.roots must be a roots/list result {\"roots\": [...]}");
    return -1;
  }
  char why[300] = "";
  char *root = first_root(roots, why, sizeof why);
  cb(r, arg, root, why, 1);
  free(root);
  return 1;
}

int mcp_roots_first(const mcp_req_t *r, json_t *params, mcp_root_fn cb, void *arg) {
  if (r->era == MCP_ERA_MODERN) {
    int rc = modern_answer(r, params, cb, arg);
    if (rc)
      return rc < 0;
    if (r->caps & MCP_CAP_ROOTS) {
      mcp_reply(r, json_pack("{s:s, s:{s:{s:s}}}", "resultType", "input_required", "inputRequests",
                             ROOTS_KEY, "method", "roots/list"));
      return 1;
    }
    cb(r, arg, NULL, NULL, 1);
    return 0;
  }
  mcp_session_t *s = r->sess;
  if (!(s->caps & MCP_CAP_ROOTS)) {
    cb(r, arg, NULL, NULL, 1);
    return 0;
  }
  if (s->roots_known) {
    cb(r, arg, s->root, s->root ? NULL : "the client has no usable root", 1);
    return 0;
  }
  if (mcp_closing(r->srv)) {
    cb(r, arg, NULL, "the server is ending", 1);
    return 0;
  }
  ask_roots(r, cb, arg);
  return 0;
}
