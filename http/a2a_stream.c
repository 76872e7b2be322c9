/* Following a task to its end on the server's feed (live/follow.c: one
 * follow of its transcript and state on the hub's watch of the store,
 * never a watch of our own), for SubscribeToTask and SendStreamingMessage (an SSE
 * stream of JSON-RPC responses: the Task, then status updates as its
 * state changes and artifact updates carrying its new output lines, and
 * last its final status, then the end) and for the calls that answer
 * once the task has ended (a blocking SendMessage, CancelTask).
 *
 * New lines are gathered and sent as one artifact update per turn of the
 * loop (a 0 ms timer), or sooner past FLUSH_BYTES, so that a task printing
 * fast costs an event per burst, not per line. Past STREAM_HIGH bytes the
 * client has not read, the follow waits until it has (the stream's drain
 * notice); a client that never reads is dropped by the stream's stall
 * bound (respond.c), which stops the follow. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http/a2a.h"
#include "taskfs/buf.h"

#define FLUSH_BYTES (64u * 1024)
#define SLICE_BYTES (256u * 1024)
#define STREAM_HIGH (1u << 20) /* unread bytes past which the follow waits */

typedef struct {
  http_server_t *srv;
  http_req_t *r; /* NULL once the client left or the answer is out */
  json_t *id;
  int mode;
  char tid[TFS_ID_MAX + 1];
  live_follow_t *fl; /* NULL once it ended or was stopped */
  uv_timer_t flush;  /* the lines gathered go out on the next turn */
  const char *sent;  /* the wire state last sent */
  char *buf;         /* lines gathered, each ending in '\n' but a partial one */
  size_t len, cap;
  int64_t first, last; /* their line numbers */
  int chunks;          /* artifact updates sent */
  int paused;          /* the follow waits for the client to read */
} follow_t;

static void on_closed(uv_handle_t *h) {
  follow_t *f = h->data;
  json_decref(f->id);
  free(f->buf);
  free(f);
}

/* The follow is over for us: no more callbacks, and freed once the timer
 * has closed. */
static void follow_close(follow_t *f) {
  if (f->fl)
    live_follow_stop(f->fl);
  f->fl = NULL;
  f->r = NULL;
  if (!uv_is_closing((uv_handle_t *)&f->flush))
    uv_close((uv_handle_t *)&f->flush, on_closed);
}

static void event(follow_t *f, const char *kind, json_t *body) {
  json_object_set_new(body, "taskId", json_string(f->tid));
  json_object_set_new(body, "contextId", json_string(f->tid));
  a2a_stream_event(f->r, f->id, json_pack("{s:o}", kind, body));
}

/* The lines gathered as one artifact update of the "transcript" artifact
 * (append after the first; lastChunk with the end: with nothing gathered
 * then, an empty chunk says it, so that a client always sees the last). */
static void flush_lines(follow_t *f, int last) {
  uv_timer_stop(&f->flush);
  if (!f->r || (!f->len && !last))
    return;
  json_t *part = json_pack("{s:o, s:s}", "text", a2a_text(f->len ? f->buf : "", f->len),
                           "mediaType", "text/plain");
  json_t *art = json_pack("{s:s, s:s, s:[o]}", "artifactId", "transcript", "name", "transcript",
                          "parts", part);
  if (f->len) /* an empty last chunk has no lines to number */
    json_object_set_new(art, "metadata",
                        json_pack("{s:I, s:I}", "firstLine", (json_int_t)f->first, "lastLine",
                                  (json_int_t)f->last));
  json_t *body = json_pack("{s:o, s:b}", "artifact", art, "append", f->chunks > 0);
  if (last)
    json_object_set_new(body, "lastChunk", json_true());
  event(f, "artifactUpdate", body);
  f->chunks++;
  f->len = 0;
}

static void on_flush(uv_timer_t *t) {
  flush_lines(t->data, 0);
}

/* Adds text to the lines gathered, flushing past FLUSH_BYTES. */
static void gather(follow_t *f, int64_t n, const char *text, size_t len) {
  if (tfs_grow(&f->buf, &f->cap, f->len + len + 1, 1, 4096))
    return; /* the text is lost, not the stream */
  if (!f->len)
    f->first = n;
  f->last = n;
  memcpy(f->buf + f->len, text, len);
  f->len += len;
  if (f->len >= FLUSH_BYTES)
    flush_lines(f, 0);
}

/* A line (or a 1 MiB piece of a longer one), in slices of SLICE_BYTES so
 * that no event outgrows what a client takes (the SDK's SSE reader stops
 * at 4 MiB of data, and JSON may escape a byte into six). */
static int on_line(void *arg, int64_t n, off_t end, const char *text, size_t len, int partial) {
  follow_t *f = arg;
  if (f->mode != A2A_FOLLOW_STREAM || !f->r)
    return 0; /* a call that answers at the end wants no lines */
  for (size_t o = 0; o < len; o += SLICE_BYTES)
    gather(f, n, text + o, len - o < SLICE_BYTES ? len - o : SLICE_BYTES);
  if (partial == 0)
    gather(f, n, "\n", 1);
  if (http_stream_unread(f->r) + f->len >= STREAM_HIGH) {
    flush_lines(f, 0);
    f->paused = 1; /* until the client has taken it (on_drain) */
    return 1;
  }
  if (f->len && !uv_is_active((uv_handle_t *)&f->flush))
    uv_timer_start(&f->flush, on_flush, 0, 0);
  return 0;
}

/* A status update when the state A2A sees changed (paused and running
 * are both working: nothing to tell). */
static void send_status(follow_t *f, const tfs_record_t *rec) {
  const char *wire = a2a_state_wire(rec->state);
  if (f->sent && !strcmp(f->sent, wire))
    return;
  f->sent = wire;
  flush_lines(f, 0);
  event(f, "statusUpdate", json_pack("{s:o}", "status", a2a_status_json(rec)));
}

/* The final status waits for on_end: the last lines, and the chunk that
 * says lastChunk, go before it. */
static void on_state(void *arg, const tfs_record_t *rec, const char *json) {
  follow_t *f = arg;
  if (f->mode == A2A_FOLLOW_STREAM && f->r && !tfs_state_terminal(rec->state))
    send_status(f, rec);
}

/* The follow is over: the task ended (rec), went away or cannot be read
 * (err), or the server stops (-ESHUTDOWN: the task goes on; a stream
 * just ends, a held call gets the task as it stands). */
static void on_end(void *arg, const tfs_record_t *rec, const char *json, int err) {
  follow_t *f = arg;
  f->fl = NULL; /* over: no live_follow_stop() */
  http_req_t *r = f->r;
  tfs_record_t now;
  int loaded = 0;
  if (r && !rec && err == -ESHUTDOWN && tfs_task_load(a2a_store(r), f->tid, &now) == 0) {
    rec = &now;
    loaded = 1;
  }
  if (r && f->mode == A2A_FOLLOW_STREAM) {
    if (rec) {
      flush_lines(f, tfs_state_terminal(rec->state));
      send_status(f, rec);
    }
    if (err && err != -ESHUTDOWN)
      a2a_stream_error(r, f->id, err == TFS_ENOTASK ? A2A_TASK_NOT_FOUND : A2A_INTERNAL_ERROR,
                       "task %s: %s", f->tid, tfs_strerror(err));
    http_stream_end(r);
  } else if (r) {
    r->on_gone = NULL;
    if (!rec) {
      a2a_error(r, f->id, err == TFS_ENOTASK ? A2A_TASK_NOT_FOUND : A2A_INTERNAL_ERROR,
                "task %s: %s", f->tid, tfs_strerror(err));
    } else {
      json_t *t = a2a_task_json(a2a_store(r), rec, 1);
      a2a_reply(r, f->id, f->mode == A2A_FOLLOW_CANCEL ? t : json_pack("{s:o}", "task", t));
    }
  }
  if (loaded)
    tfs_record_free(&now);
  follow_close(f);
}

/* The client took all that was written: a follow paused for room goes
 * on. */
static void on_drain(http_req_t *r, void *arg) {
  follow_t *f = arg;
  if (f->paused && f->fl) {
    f->paused = 0;
    live_follow_resume(f->fl);
  }
}

static void on_gone(http_req_t *r, void *arg) {
  follow_close(arg);
}

static const live_follow_ops_t ops = {on_line, on_state, on_end};

void a2a_follow(http_req_t *r, json_t *id, const tfs_record_t *rec, int mode) {
  tfs_store_t *store = a2a_store(r);
  follow_t *f = calloc(1, sizeof *f);
  if (!f) {
    a2a_error(r, id, A2A_INTERNAL_ERROR, "out of memory");
    return;
  }
  f->srv = r->srv;
  f->r = r;
  f->id = json_incref(id);
  f->mode = mode;
  snprintf(f->tid, sizeof f->tid, "%s", rec->id);
  uv_timer_init(r->srv->loop, &f->flush);
  f->flush.data = f;
  /* A stream goes on exactly where the Task's tail artifact ends (read
   * first, up to a line's end): no line is skipped or sent twice. A held
   * call wants no lines: from where the transcript ends now. */
  json_t *task = NULL;
  off_t from = 0;
  struct stat st;
  if (mode == A2A_FOLLOW_STREAM)
    task = a2a_task_json_at(store, rec, &from);
  else if (tfs_task_file_stat(store, rec->id, TFS_FILE_TRANSCRIPT, &st) == 0)
    from = st.st_size;
  int err = live_follow_start(http_feed(r->srv), rec->id, from, &ops, f, &f->fl);
  if (err) {
    json_decref(task);
    a2a_error(r, id, err == TFS_ENOTASK ? A2A_TASK_NOT_FOUND : A2A_INTERNAL_ERROR,
              "cannot follow task %s: %s", rec->id, tfs_strerror(err));
    follow_close(f);
    return;
  }
  if (mode != A2A_FOLLOW_STREAM) {
    http_hold(r, on_gone, f);
    return;
  }
  http_stream_start(r, MHD_HTTP_OK, "text/event-stream", on_gone, f);
  http_stream_on_drain(r, on_drain);
  f->sent = a2a_state_wire(rec->state);
  a2a_stream_event(r, id, json_pack("{s:o}", "task", task));
}

void a2a_subscribe(http_req_t *r, json_t *id, json_t *params) {
  char tid[TFS_ID_MAX + 1];
  if (a2a_param_id(r, id, params, tid))
    return;
  tfs_record_t rec;
  int err = tfs_task_load(a2a_store(r), tid, &rec);
  if (err)
    a2a_error(r, id, err == TFS_ENOTASK ? A2A_TASK_NOT_FOUND : A2A_INTERNAL_ERROR, "task %s: %s",
              tid, tfs_strerror(err));
  else if (tfs_state_terminal(rec.state))
    a2a_error(r, id, A2A_UNSUPPORTED_OPERATION,
              "task %s has already ended (%s): there is nothing to subscribe to; GetTask reads "
              "its end",
              tid, tfs_state_name(rec.state));
  else
    a2a_follow(r, id, &rec, A2A_FOLLOW_STREAM);
  tfs_record_free(&rec);
}
