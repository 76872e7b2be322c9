/* The life of one request, as libmicrohttpd calls it: once when the
 * header block is in (the gates run then, so a bad Host, a foreign Origin,
 * a missing token, an unknown path or a body announced too large is
 * answered before any body is read), once per piece of body, and once
 * when the request is whole (the route's handler runs then, with the
 * body). A handler answers at once, holds the request (the answer comes
 * later), or starts a stream; respond.c does each.
 *
 * Bodies: at most HTTP_BODY_MAX (4 MiB, the MCP message bound). A larger
 * Content-Length is refused at once (413, nothing read: MHD sends no
 * "100 Continue" for it and closes the connection after the answer); a
 * chunked body that grows past it is thrown away as it comes and answered
 * 413 at its end, and one that keeps coming past HTTP_BODY_DISCARD_MAX, or
 * never ends, is cut off (by that bound, or by the request deadline). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/internal.h"
#include "taskfs/buf.h"

const char *http_header(http_req_t *r, const char *name) {
  return MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
}

const char *http_query(http_req_t *r, const char *name) {
  return MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, name);
}

static unsigned method_bit(const char *m) {
  static const struct {
    const char *name;
    unsigned bit;
  } ms[] = {
      {"GET", HTTP_M_GET}, {"POST", HTTP_M_POST}, {"DELETE", HTTP_M_DELETE}, {"HEAD", HTTP_M_HEAD}};
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
    if (!strcmp(m, ms[i].name))
      return ms[i].bit;
  return HTTP_M_OTHER;
}

static http_req_t *req_new(http_server_t *srv, struct MHD_Connection *c, const char *url,
                           const char *method) {
  http_req_t *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  r->srv = srv;
  r->c = c;
  r->conn = ci ? ci->socket_context : NULL;
  r->url = url;
  r->method = method;
  r->m = method_bit(method);
  r->next = srv->reqs;
  if (srv->reqs)
    srv->reqs->prev = r;
  srv->reqs = r;
  srv->nreqs++;
  return r;
}

/* The header block's own limits, beyond the size MHD's memory pool
 * bounds (431 from MHD itself). */
static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *k,
                                    const char *v) {
  return MHD_YES;
}

/* Every gate a request passes before its body is read. Returns 0 to go
 * on, -1 when it was answered. */
static int screen(http_req_t *r) {
  if (r->srv->stopping) {
    http_add_header(r, "Connection", "close");
    http_respond_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is stopping");
    return -1;
  }
  int n = MHD_get_connection_values(r->c, MHD_HEADER_KIND, count_header, NULL);
  if (n > HTTP_HEADERS_MAX) {
    http_respond_text(r, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
                      "%d header fields; at most %d are accepted", n, HTTP_HEADERS_MAX);
    return -1;
  }
  if (http_guard_reach(r))
    return -1;
  const http_route_t *rt = http_route_find(r->url);
  if (!rt) {
    http_respond_text(r, MHD_HTTP_NOT_FOUND, "no such page: %.200s", r->url);
    return -1;
  }
  r->route = rt;
  if (!(rt->methods & r->m)) {
    char allow[64];
    http_route_allow(rt, allow, sizeof allow);
    http_add_header(r, "Allow", allow);
    http_respond_text(r, MHD_HTTP_METHOD_NOT_ALLOWED, "%s is not served at %.200s (allowed: %s)",
                      r->method, r->url, allow);
    return -1;
  }
  if (!(rt->flags & HTTP_ROUTE_PUBLIC)) {
    if (http_guard_token(r))
      return -1;
    if (r->conn)
      http_conn_authed(r->srv, r->conn);
  }
  const char *cl = http_header(r, "Content-Length");
  if (cl && strtoull(cl, NULL, 10) > HTTP_BODY_MAX) {
    http_respond_text(r, MHD_HTTP_CONTENT_TOO_LARGE,
                      "the body is %s bytes; at most %u are accepted", cl, HTTP_BODY_MAX);
    return -1;
  }
  return 0;
}

/* A piece of the body. Returns 0, or -1 to cut the connection off. */
static int take_body(http_req_t *r, const char *data, size_t n) {
  if (r->discarded || r->len + n > HTTP_BODY_MAX) {
    r->discarded += n;
    free(r->body);
    r->body = NULL;
    r->len = r->cap = 0;
    return r->discarded > HTTP_BODY_DISCARD_MAX ? -1 : 0;
  }
  if (tfs_grow(&r->body, &r->cap, r->len + n + 1, 1, 4096))
    return -1;
  memcpy(r->body + r->len, data, n);
  r->len += n;
  r->body[r->len] = '\0';
  return 0;
}

/* The request is whole: its handler runs, once. */
static void run_handler(http_req_t *r) {
  r->handled = 1;
  if (r->conn)
    r->conn->deadline_ms = 0; /* whatever comes now is the server's doing */
  if (r->discarded) {
    http_respond_text(r, MHD_HTTP_CONTENT_TOO_LARGE,
                      "the body was %zu bytes; at most %u are accepted", r->discarded + r->len,
                      HTTP_BODY_MAX);
    return;
  }
  ((const http_route_t *)r->route)->fn(r);
}

enum MHD_Result http_access(void *cls, struct MHD_Connection *c, const char *url,
                            const char *method, const char *version, const char *data, size_t *size,
                            void **ptr) {
  http_server_t *srv = cls;
  http_req_t *r = *ptr;
  if (!r) {
    if (!(r = req_new(srv, c, url, method)))
      return MHD_NO;
    *ptr = r;
    if (screen(r))
      return http_req_answer(r);
    return MHD_YES;
  }
  if (*size) {
    int cut = take_body(r, data, *size);
    *size = 0;
    return cut ? MHD_NO : MHD_YES;
  }
  if (!r->handled && !r->resp)
    run_handler(r);
  return http_req_answer(r);
}

void http_completed(void *cls, struct MHD_Connection *c, void **ptr,
                    enum MHD_RequestTerminationCode why) {
  http_server_t *srv = cls;
  http_req_t *r = *ptr;
  *ptr = NULL;
  if (!r)
    return;
  if (why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED && r->streaming && !r->ended && !r->gone)
    fprintf(stderr,
            "taskfs serve: a client of %.200s has read nothing of its stream for %lld ms; "
            "dropped\n",
            r->url, (long long)srv->request_timeout_ms);
  http_req_release(r);
  if (r->conn && !srv->stopping)
    r->conn->deadline_ms = http_conn_deadline(srv, r->conn); /* for the next request */
  if (r->prev)
    r->prev->next = r->next;
  else
    srv->reqs = r->next;
  if (r->next)
    r->next->prev = r->prev;
  srv->nreqs--;
  for (size_t i = 0; i < r->nhdrs; i++) {
    free(r->hdrs[i].name);
    free(r->hdrs[i].value);
  }
  free(r->hdrs);
  free(r->body);
  free(r->out);
  free(r);
}
