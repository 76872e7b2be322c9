/* Answers: now, held, or streamed.
 *
 * A handler that answers at once makes an MHD response that access.c
 * queues when the handler returns. One that holds the request (the answer
 * comes later: a long-poll, a blocking call) has its connection suspended
 * until it answers; the answer resumes the connection and is queued on
 * MHD's next call. A stream (SSE) is an MHD response of unknown length read
 * from a buffer the handler appends to; while the buffer is empty the
 * connection is suspended, and a write resumes it.
 *
 * MHD neither times out nor reads a suspended connection, so it would not
 * notice a client that leaves. While suspended, a connection's socket is
 * watched here (a uv_poll for readable or peer hang-up): EOF, an error or
 * a hang-up means the client is gone, and the handler hears of it at once
 * (on_gone) and stops waiting for it (a parked MCP request is dropped).
 * Bytes of a pipelined next request end the watch without a verdict. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/internal.h"
#include "taskfs/buf.h"

void http_add_header(http_req_t *r, const char *name, const char *value) {
  http_header_t *h = realloc(r->hdrs, (r->nhdrs + 1) * sizeof *h);
  if (!h)
    return;
  r->hdrs = h;
  h[r->nhdrs].name = strdup(name);
  h[r->nhdrs].value = strdup(value);
  if (h[r->nhdrs].name && h[r->nhdrs].value)
    r->nhdrs++;
  else {
    free(h[r->nhdrs].name);
    free(h[r->nhdrs].value);
  }
}

/* Headers every answer carries: nothing may frame or sniff it, and no
 * proxy may keep it. */
static void finish_response(http_req_t *r, struct MHD_Response *resp, const char *ctype) {
  if (ctype)
    MHD_add_response_header(resp, "Content-Type", ctype);
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  for (size_t i = 0; i < r->nhdrs; i++)
    MHD_add_response_header(resp, r->hdrs[i].name, r->hdrs[i].value);
}

static void stop_watch(http_req_t *r);

/* The answer exists now: queued at once if MHD is in its call, else on
 * the call the resume brings. */
static void set_response(http_req_t *r, unsigned status, struct MHD_Response *resp) {
  if (!resp || r->resp || r->queued || r->gone) {
    if (resp)
      MHD_destroy_response(resp);
    return;
  }
  r->resp = resp;
  r->status = status;
  if (r->suspended) {
    stop_watch(r);
    r->suspended = 0;
    MHD_resume_connection(r->c);
    http_kick(r->srv);
  }
}

void http_respond_take(http_req_t *r, unsigned status, const char *ctype, char *data, size_t len) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(data);
    return;
  }
  finish_response(r, resp, ctype);
  r->on_gone = NULL; /* answered: nothing more to tell the handler */
  set_response(r, status, resp);
}

void http_respond(http_req_t *r, unsigned status, const char *ctype, const char *data,
                  ssize_t len) {
  size_t n = len < 0 ? strlen(data) : (size_t)len;
  char *copy = malloc(n + 1);
  if (!copy)
    return;
  memcpy(copy, data, n);
  http_respond_take(r, status, ctype, copy, n);
}

void http_respond_fd(http_req_t *r, unsigned status, const char *ctype, int fd, uint64_t offset,
                     uint64_t len) {
  struct MHD_Response *resp =
      len ? MHD_create_response_from_fd_at_offset64(len, fd, offset)
          : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!len || !resp)
    close(fd);
  if (!resp)
    return;
  finish_response(r, resp, ctype);
  r->on_gone = NULL;
  set_response(r, status, resp);
}

void http_respond_text(http_req_t *r, unsigned status, const char *fmt, ...) {
  char msg[5120]; /* room for a path of PATH_MAX in it */
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    n = 0;
  if ((size_t)n > sizeof msg - 2)
    n = sizeof msg - 2;
  msg[n++] = '\n';
  msg[n] = '\0';
  http_respond(r, status, "text/plain; charset=utf-8", msg, n);
}

/* ---- the watch of a suspended connection ------------------------------- */

static void gone(http_req_t *r) {
  if (r->gone)
    return;
  r->gone = 1;
  http_gone_fn fn = r->on_gone;
  r->on_gone = NULL;
  r->on_drain = NULL;
  if (fn)
    fn(r, r->gone_arg);
}

static void on_watch_closed(uv_handle_t *h) {
  free(h);
}

static void stop_watch(http_req_t *r) {
  if (!r->hup)
    return;
  r->hup->data = NULL;
  uv_close((uv_handle_t *)r->hup, on_watch_closed);
  r->hup = NULL;
}

/* The client of a suspended connection left (or sent more): the
 * connection goes back to MHD, which closes a dead one. */
static void on_hup(uv_poll_t *p, int status, int events) {
  http_req_t *r = p->data;
  if (!r)
    return;
  char c;
  ssize_t n = status < 0 ? 0 : recv(r->conn ? r->conn->fd : -1, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0 && !(events & UV_DISCONNECT)) {
    stop_watch(r); /* a pipelined request: not a verdict, and nothing more to watch */
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  stop_watch(r);
  gone(r);
  if (r->suspended) {
    r->suspended = 0;
    MHD_resume_connection(r->c);
    http_kick(r->srv);
  }
}

static void suspend(http_req_t *r) {
  if (r->suspended)
    return;
  r->suspended = 1;
  MHD_suspend_connection(r->c);
  if (r->hup || !r->conn || r->conn->fd < 0)
    return;
  uv_poll_t *p = malloc(sizeof *p);
  if (!p)
    return;
  if (uv_poll_init_socket(r->srv->loop, p, r->conn->fd)) {
    free(p);
    return;
  }
  p->data = r;
  r->hup = p;
  uv_poll_start(p, UV_READABLE | UV_DISCONNECT, on_hup);
}

/* ---- holding ------------------------------------------------------------- */

void http_hold(http_req_t *r, http_gone_fn on_gone, void *arg) {
  r->held = 1;
  r->on_gone = on_gone;
  r->gone_arg = arg;
}

enum MHD_Result http_req_answer(http_req_t *r) {
  if (r->gone)
    return MHD_NO; /* the client left: close */
  if (r->resp) {
    struct MHD_Response *resp = r->resp;
    r->resp = NULL;
    r->queued = 1;
    enum MHD_Result ok = MHD_queue_response(r->c, r->status, resp);
    MHD_destroy_response(resp);
    return ok;
  }
  if (r->queued)
    return MHD_YES;
  if (r->held) {
    suspend(r);
    return MHD_YES;
  }
  /* A handler that neither answered nor held: a bug, but not a hang. */
  http_respond_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "no answer");
  return http_req_answer(r);
}

/* ---- streams -------------------------------------------------------------- */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  http_req_t *r = cls;
  if (r->gone)
    return MHD_CONTENT_READER_END_WITH_ERROR;
  if (r->out_off < r->out_len) {
    size_t n = r->out_len - r->out_off;
    if (n > max)
      n = max;
    memcpy(buf, r->out + r->out_off, n);
    r->out_off += n;
    if (r->out_off == r->out_len) {
      r->out_off = r->out_len = 0;
      if (r->on_drain)
        r->on_drain(r, r->gone_arg); /* room again: the writer may go on */
    }
    return (ssize_t)n;
  }
  if (r->ended)
    return MHD_CONTENT_READER_END_OF_STREAM;
  suspend(r); /* until there is more to send */
  return 0;
}

void http_stream_start(http_req_t *r, unsigned status, const char *ctype, http_gone_fn on_gone,
                       void *arg) {
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, r, NULL);
  if (!resp)
    return;
  r->streaming = 1;
  r->on_gone = on_gone;
  r->gone_arg = arg;
  r->out_at = http_now_ms();
  finish_response(r, resp, ctype ? ctype : "text/event-stream");
  MHD_add_response_header(resp, "X-Accel-Buffering", "no");
  set_response(r, status, resp);
}

static void resume_stream(http_req_t *r) {
  if (r->suspended && !r->resp) {
    stop_watch(r);
    r->suspended = 0;
    MHD_resume_connection(r->c);
    http_kick(r->srv);
  }
}

/* A client that does not take what its stream holds is let go of: the
 * handler hears of it (on_gone) and the connection is closed. */
static void drop_stream(http_req_t *r, const char *why) {
  fprintf(stderr, "taskfs serve: a client of %.200s %s; dropped\n", r->url, why);
  gone(r);
  resume_stream(r);
}

void http_stream_write(http_req_t *r, const char *data, size_t len) {
  if (!r->streaming || r->ended || r->gone)
    return;
  size_t unread = r->out_len - r->out_off;
  if (unread + len > HTTP_STREAM_BACKLOG_MAX) {
    drop_stream(r, "does not read its stream");
    return;
  }
  if (r->out_off) {
    memmove(r->out, r->out + r->out_off, unread);
    r->out_len = unread;
    r->out_off = 0;
  }
  if (tfs_grow(&r->out, &r->out_cap, r->out_len + len, 1, 4096))
    return;
  memcpy(r->out + r->out_len, data, len);
  r->out_len += len;
  r->out_at = http_now_ms();
  resume_stream(r);
}

void http_stream_end(http_req_t *r) {
  if (!r->streaming || r->ended)
    return;
  r->ended = 1;
  r->on_gone = NULL;
  r->on_drain = NULL; /* the handler may be gone already */
  resume_stream(r);
}

/* Keep-alives on quiet streams. A stream with bytes waiting is never
 * suspended, so MHD's idle timeout (the request timeout) cuts off a client
 * that takes none of them, however few: a writer that waits for room
 * (http_stream_on_drain) cannot be held forever. */
void http_stream_keepalive(http_server_t *srv, int64_t now) {
  static const char ka[] = ": keep-alive\n\n";
  for (http_req_t *r = srv->reqs; r; r = r->next)
    if (r->streaming && !r->ended && !r->gone && now - r->out_at >= HTTP_KEEPALIVE_MS)
      http_stream_write(r, ka, sizeof ka - 1);
}

size_t http_stream_unread(const http_req_t *r) {
  return r->out_len - r->out_off;
}

void http_stream_on_drain(http_req_t *r, http_gone_fn fn) {
  r->on_drain = fn;
}

void http_stream_event(http_req_t *r, const char *event, const char *id, const char *data,
                       size_t len) {
  char head[160];
  int n = snprintf(head, sizeof head, "event: %.60s\n", event);
  if (id)
    n += snprintf(head + n, sizeof head - n, "id: %.60s\n", id);
  http_stream_write(r, head, (size_t)n);
  /* Each line of the data is a data field of its own: SSE joins them
   * with '\n' again. */
  const char *p = data, *e = data + len;
  do {
    const char *nl = memchr(p, '\n', (size_t)(e - p));
    size_t k = nl ? (size_t)(nl - p) : (size_t)(e - p);
    http_stream_write(r, "data: ", 6);
    http_stream_write(r, p, k);
    http_stream_write(r, "\n", 1);
    p += k + (nl ? 1 : 0);
  } while (p < e);
  http_stream_write(r, "\n", 1);
}

/* ---- the end of a request ------------------------------------------------ */

/* MHD is done with the request (answered, or the connection closed): a
 * handler that still held it or streamed to it is told. */
void http_req_release(http_req_t *r) {
  stop_watch(r);
  gone(r);
}

/* The server's stop: a held request or an open stream is let go of. */
void http_req_cut(http_req_t *r) {
  if (r->streaming) {
    gone(r);
    resume_stream(r);
  } else if (r->held && !r->queued && !r->resp) {
    gone(r);
    if (r->suspended) {
      stop_watch(r);
      r->suspended = 0;
      MHD_resume_connection(r->c);
      http_kick(r->srv);
    }
  }
}
