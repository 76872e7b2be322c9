/* The MCP server's core: stdio transport, JSON-RPC framing and dispatch,
 * lifecycle (initialize, EOF, signals), parked requests and task-directory
 * watches. The tools, tasks and resources live in tools.c and
 * resources.c. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/mcp.h"

/* How stdin / stdout are driven: a libuv stream for pipes, sockets and
 * terminals; threadpool reads (uv_fs_read) for regular files and anything
 * else; plain blocking writes for a regular-file stdout (never blocks). */
enum { IO_STREAM, IO_FILE };

struct mcp_listener {
  mcp_listener_t *next;
  struct mcp_watch *watch;
  mcp_watch_fn fn;
  void *arg;
};

typedef struct mcp_watch {
  struct mcp_watch *next;
  mcp_server_t *srv;
  uv_fs_event_t ev;
  mcp_listener_t *listeners;
  int live; /* the inotify watch is in place */
  char id[TFS_ID_MAX + 1];
} mcp_watch_t;

struct mcp_server {
  uv_loop_t *loop;
  tfs_store_t *store;
  char who[64];

  int in_kind, out_kind;
  union {
    uv_pipe_t pipe;
    uv_tty_t tty;
    uv_tcp_t tcp;
    uv_stream_t stream;
  } in, out;
  uv_fs_t in_req;
  char in_buf[65536];
  int in_open, out_open;
  mcp_lines_t lines;

  size_t writes_pending;
  int holds;            /* work in flight (launches) that the exit must wait for */
  size_t bytes_pending; /* queued on stdout, not yet written */
  int read_paused;      /* input paused until the host reads our output */
  int file_reading;     /* a uv_fs_read on stdin is in flight */
  int closing;          /* no more input is read */
  int stopping;         /* uv_stop once output is flushed */
  int exit_code;
  int initialized;

  uv_signal_t sigterm, sigint;
  uv_timer_t flush_timer; /* bounds the final flush */
  mcp_pending_t *pending;
  mcp_watch_t *watches;
  int store_state; /* 0 when the store was there at the last request, else its error */
};

tfs_store_t *mcp_store(mcp_server_t *srv) {
  return srv->store;
}
const char *mcp_who(mcp_server_t *srv) {
  return srv->who;
}
int mcp_closing(mcp_server_t *srv) {
  return srv->closing;
}
uv_loop_t *mcp_loop(mcp_server_t *srv) {
  return srv->loop;
}

static void maybe_stop(mcp_server_t *srv);

/* ---- output ------------------------------------------------------------ */

typedef struct {
  uv_write_t req;
  mcp_server_t *srv;
  char *data;
  size_t len;
} write_req_t;

static void resume_input(mcp_server_t *srv);

static void on_write(uv_write_t *req, int status) {
  write_req_t *w = (write_req_t *)req;
  mcp_server_t *srv = w->srv;
  srv->bytes_pending -= w->len;
  free(w->data);
  free(w);
  srv->writes_pending--;
  if (srv->read_paused && srv->bytes_pending <= MCP_OUTPUT_LOW)
    resume_input(srv);
  if (status < 0 && !srv->stopping) {
    /* The host closed our stdout: nobody can hear us any more. */
    fprintf(stderr, "taskfs mcp: writing to stdout failed (%s); exiting\n", uv_strerror(status));
    srv->closing = 1;
    srv->stopping = 1;
    srv->exit_code = 1;
  }
  maybe_stop(srv);
}

/* Writes one message as one line. Streams take one uv_write per message
 * (libuv queues the rest under backpressure and finishes partial writes);
 * a regular file takes a blocking write loop. */
void mcp_send(mcp_server_t *srv, json_t *msg) {
  char *text = json_dumps(msg, JSON_COMPACT);
  json_decref(msg);
  if (!text) {
    fprintf(stderr, "taskfs mcp: could not serialise a message (out of memory?)\n");
    return;
  }
  size_t len = strlen(text);
  char *data = realloc(text, len + 2);
  if (!data) {
    free(text);
    return;
  }
  data[len++] = '\n';
  data[len] = 0;
  mcp_send_raw(srv, data, len);
}

void mcp_send_raw(mcp_server_t *srv, char *data, size_t len) {
  if (!srv->out_open) {
    free(data);
    return;
  }
  if (srv->out_kind == IO_FILE) {
    size_t off = 0;
    while (off < len) {
      ssize_t n = write(1, data + off, len - off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        fprintf(stderr, "taskfs mcp: writing to stdout failed (%s); exiting\n", strerror(errno));
        srv->out_open = 0;
        srv->closing = srv->stopping = 1;
        srv->exit_code = 1;
        break;
      }
      off += (size_t)n;
    }
    free(data);
    maybe_stop(srv);
    return;
  }
  write_req_t *w = malloc(sizeof *w);
  if (!w) {
    free(data);
    return;
  }
  w->srv = srv;
  w->data = data;
  uv_buf_t buf = uv_buf_init(data, (unsigned int)len);
  int err = uv_write(&w->req, &srv->out.stream, &buf, 1, on_write);
  if (err) {
    fprintf(stderr, "taskfs mcp: writing to stdout failed (%s)\n", uv_strerror(err));
    free(data);
    free(w);
    return;
  }
  srv->writes_pending++;
  w->len = len;
  srv->bytes_pending += len;
  /* Backpressure: a host that sends faster than it reads our answers
   * would otherwise grow our memory without bound. */
  if (srv->bytes_pending > MCP_OUTPUT_HIGH && !srv->read_paused && !srv->closing) {
    srv->read_paused = 1;
    if (srv->in_kind == IO_STREAM)
      uv_read_stop(&srv->in.stream);
  }
}

void mcp_reply(mcp_server_t *srv, json_t *id, json_t *result) {
  mcp_send(srv, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                          "result", result));
}

void mcp_reply_error(mcp_server_t *srv, json_t *id, int code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* A %.Ns of user input may have cut a character in two: keep it UTF-8. */
  char *clean = mcp_text_clean(msg, strlen(msg), 0);
  json_t *m = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                        "error", "code", code, "message", clean ? clean : "error");
  free(clean);
  if (m)
    mcp_send(srv, m);
}

/* ---- watches ------------------------------------------------------------ */

static void on_watch_closed(uv_handle_t *h) {
  free(h->data);
}

static void on_fs_event(uv_fs_event_t *ev, const char *filename, int events, int status) {
  mcp_watch_t *w = ev->data;
  for (mcp_listener_t *l = w->listeners; l; l = l->next)
    l->fn(l->arg, filename ? filename : "");
}

mcp_listener_t *mcp_watch_add(mcp_server_t *srv, const char *id, mcp_watch_fn fn, void *arg) {
  mcp_watch_t *w;
  for (w = srv->watches; w; w = w->next)
    if (!strcmp(w->id, id))
      break;
  if (!w) {
    w = calloc(1, sizeof *w);
    if (!w)
      return NULL;
    w->srv = srv;
    snprintf(w->id, sizeof w->id, "%s", id);
    char path[4096];
    snprintf(path, sizeof path, "%s/tasks/%s", tfs_store_path(srv->store), id);
    uv_fs_event_init(srv->loop, &w->ev);
    w->ev.data = w;
    int err = uv_fs_event_start(&w->ev, on_fs_event, path, 0);
    w->live = !err;
    if (err)
      /* Without the watch we still have the fallback tick; say why once. */
      fprintf(stderr, "taskfs mcp: cannot watch %s (%s); falling back to a 1 s check\n", path,
              uv_strerror(err));
    w->next = srv->watches;
    srv->watches = w;
  }
  mcp_listener_t *l = calloc(1, sizeof *l);
  if (!l)
    return NULL;
  l->watch = w;
  l->fn = fn;
  l->arg = arg;
  l->next = w->listeners;
  w->listeners = l;
  return l;
}

int mcp_listener_live(const mcp_listener_t *l) {
  return l && l->watch->live;
}

void mcp_watch_remove(mcp_server_t *srv, mcp_listener_t *l) {
  if (!l)
    return;
  mcp_watch_t *w = l->watch;
  for (mcp_listener_t **pp = &w->listeners; *pp; pp = &(*pp)->next)
    if (*pp == l) {
      *pp = l->next;
      break;
    }
  free(l);
  if (w->listeners)
    return;
  for (mcp_watch_t **pp = &srv->watches; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      break;
    }
  uv_fs_event_stop(&w->ev);
  w->ev.data = w;
  uv_close((uv_handle_t *)&w->ev, on_watch_closed);
}

/* ---- pending requests --------------------------------------------------- */

static void pending_arm(mcp_pending_t *p);

static void on_pending_closed(uv_handle_t *h) {
  mcp_pending_t *p = h->data;
  if (p->free_fn)
    p->free_fn(p);
  json_decref(p->id);
  free(p);
}

static void pending_finish(mcp_pending_t *p) {
  mcp_server_t *srv = p->srv;
  p->done = 1;
  for (mcp_pending_t **pp = &srv->pending; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  mcp_watch_remove(srv, p->listener);
  p->listener = NULL;
  uv_timer_stop(&p->timer);
  uv_close((uv_handle_t *)&p->timer, on_pending_closed);
  maybe_stop(srv);
}

static void pending_run(mcp_pending_t *p) {
  int64_t now = tfs_now_ms();
  int timed_out = p->srv->closing || (p->deadline_ms && now >= p->deadline_ms);
  if (p->check(p, timed_out) || timed_out) {
    pending_finish(p);
    return;
  }
  pending_arm(p);
}

static void on_pending_timer(uv_timer_t *t) {
  mcp_pending_t *p = t->data;
  p->soon = 0;
  pending_run(p);
}

/* Arms the timer for the next fallback tick or the deadline, whichever
 * comes first. */
static void pending_arm(mcp_pending_t *p) {
  int64_t delay = MCP_FALLBACK_TICK_MS;
  if (p->deadline_ms) {
    int64_t left = p->deadline_ms - tfs_now_ms();
    if (left < 0)
      left = 0;
    if (left < delay)
      delay = left;
  }
  uv_timer_start(&p->timer, on_pending_timer, (uint64_t)delay, 0);
}

/* A change in the task directory: look again soon. The short delay
 * coalesces the burst of events a chatty task produces. */
static void on_pending_change(void *arg, const char *filename) {
  mcp_pending_t *p = arg;
  if (p->soon || p->done)
    return;
  p->soon = 1;
  uv_timer_start(&p->timer, on_pending_timer, 15, 0);
}

mcp_pending_t *mcp_pending_new(mcp_server_t *srv, json_t *id, const char *task_id,
                               int64_t wait_ms) {
  mcp_pending_t *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->srv = srv;
  p->id = json_incref(id);
  snprintf(p->task_id, sizeof p->task_id, "%s", task_id);
  p->started_ms = tfs_now_ms();
  p->deadline_ms = wait_ms > 0 ? p->started_ms + wait_ms : (wait_ms == 0 ? p->started_ms : 0);
  uv_timer_init(srv->loop, &p->timer);
  p->timer.data = p;
  return p;
}

void mcp_pending_start(mcp_pending_t *p) {
  mcp_server_t *srv = p->srv;
  p->next = srv->pending;
  srv->pending = p;
  /* Watch first, then look: a change between the two is not missed. */
  if (!srv->closing)
    p->listener = mcp_watch_add(srv, p->task_id, on_pending_change, p);
  pending_run(p);
}

void mcp_pending_drop_by_id(mcp_server_t *srv, json_t *id) {
  for (mcp_pending_t *p = srv->pending; p; p = p->next)
    if (json_equal(p->id, id)) {
      pending_finish(p);
      return;
    }
}

/* ---- lifecycle ------------------------------------------------------------ */

static void maybe_stop(mcp_server_t *srv) {
  if (srv->stopping && srv->writes_pending == 0 && !srv->pending && !srv->holds)
    uv_stop(srv->loop);
}

void mcp_hold(mcp_server_t *srv, int delta) {
  srv->holds += delta;
  maybe_stop(srv);
}

/* Stops reading, answers every waiting request with what it has, and
 * stops the loop once the output is flushed. */
static void on_flush_timeout(uv_timer_t *t) {
  mcp_server_t *srv = t->data;
  if (srv->holds) {
    /* A launch is still in flight (bounded by its own wait): exiting now
     * could leave its task queued. Look again in a second. */
    uv_timer_start(&srv->flush_timer, on_flush_timeout, 1000, 0);
    return;
  }
  fprintf(stderr,
          "taskfs mcp: the host is not reading our output; exiting without flushing %zu "
          "message(s)\n",
          srv->writes_pending);
  srv->exit_code = 1;
  uv_stop(srv->loop);
}

static void begin_shutdown(mcp_server_t *srv, const char *why) {
  if (srv->stopping)
    return;
  /* A host that stopped reading stdout must not keep us alive forever. */
  uv_timer_init(srv->loop, &srv->flush_timer);
  srv->flush_timer.data = srv;
  uv_timer_start(&srv->flush_timer, on_flush_timeout, MCP_FLUSH_TIMEOUT_MS, 0);
  uv_unref((uv_handle_t *)&srv->flush_timer);
  srv->closing = 1;
  srv->stopping = 1;
  if (srv->in_open && srv->in_kind == IO_STREAM)
    uv_read_stop(&srv->in.stream);
  while (srv->pending)
    pending_run(srv->pending);
  mcp_resources_shutdown(srv);
  maybe_stop(srv);
}

static void on_signal(uv_signal_t *s, int signum) {
  mcp_server_t *srv = s->data;
  if (srv->stopping) {
    fprintf(stderr, "taskfs mcp: %s again; exiting now\n", strsignal(signum));
    uv_stop(srv->loop);
    return;
  }
  fprintf(stderr, "taskfs mcp: %s; finishing pending output and exiting\n", strsignal(signum));
  begin_shutdown(srv, "signal");
}

/* ---- dispatch ------------------------------------------------------------- */

static const char *const supported_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                 "2024-11-05"};

static const char instructions[] =
    "taskfs runs commands as durable tasks: each task has its own supervisor process and "
    "lives on disk, so it keeps running, and stays visible, if this server is restarted or "
    "another instance is started. Start work with start_managed_task (give a stable taskKey: "
    "calling it again with the same key returns the same task instead of running it twice). "
    "Watch it with read_managed_task (waitMs long-polls up to 50 s; untilPattern returns as "
    "soon as a new output line matches, e.g. 'listening on'); the answer carries the important "
    "lines of the whole output (errors, failures, summaries) and a short tail, and sinceLine "
    "pages through the full transcript. list_managed_tasks shows every task in the store; "
    "cancel_managed_task stops one (its whole process tree). Resources taskfs://tasks/<id>/record "
    "and taskfs://tasks/<id>/transcript give the raw record and the transcript tail.";

static void handle_initialize(mcp_server_t *srv, json_t *id, json_t *params) {
  const char *requested = json_string_value(json_object_get(params, "protocolVersion"));
  if (!requested) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS,
                    "initialize needs params.protocolVersion (a string such as \"%s\")",
                    MCP_LATEST_PROTOCOL);
    return;
  }
  const char *version = MCP_LATEST_PROTOCOL;
  for (size_t i = 0; i < sizeof supported_versions / sizeof supported_versions[0]; i++)
    if (!strcmp(requested, supported_versions[i]))
      version = supported_versions[i];
  srv->initialized = 1;
  json_t *res = json_pack(
      "{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{s:{}, s:{}, s:{s:{s:{}}}}}, s:{s:s, s:s, s:s}, s:s}",
      "protocolVersion", version, "capabilities", "tools", "listChanged", 0, "resources",
      "subscribe", 1, "listChanged", 0, "tasks", "list", "cancel", "requests", "tools", "call",
      "serverInfo", "name", MCP_SERVER_NAME, "title", "taskfs: durable tasks", "version",
      MCP_SERVER_VERSION, "instructions", instructions);
  mcp_reply(srv, id, res);
}

static void handle_notification(mcp_server_t *srv, const char *method, json_t *params) {
  if (!strcmp(method, "notifications/cancelled")) {
    json_t *rid = json_object_get(params, "requestId");
    if (rid)
      mcp_pending_drop_by_id(srv, rid);
  }
  /* notifications/initialized and anything else: nothing to do, and
   * notifications never get a response. */
}

static void handle_request(mcp_server_t *srv, json_t *id, const char *method, json_t *params) {
  /* The store may have been removed and recreated under a server that runs
   * for days: serve what the path names now. If it is gone, requests get
   * the store's errors (no such task, an empty list) until it returns. */
  int moved = tfs_store_refresh(srv->store);
  if (moved != srv->store_state) {
    if (moved < 0)
      fprintf(stderr, "taskfs mcp: the store %s is unavailable (%s); waiting for it to return\n",
              tfs_store_path(srv->store), tfs_strerror(moved));
    else if (moved == 1 || srv->store_state < 0)
      fprintf(stderr, "taskfs mcp: serving the store %s again\n", tfs_store_path(srv->store));
    srv->store_state = moved < 0 ? moved : 0;
  }
  if (!strcmp(method, "initialize"))
    handle_initialize(srv, id, params);
  else if (!strcmp(method, "ping"))
    mcp_reply(srv, id, json_object());
  else if (!strcmp(method, "tools/list"))
    mcp_reply(srv, id, json_pack("{s:o}", "tools", mcp_tools_list()));
  else if (!strcmp(method, "tools/call"))
    mcp_tools_call(srv, id, params);
  else if (!strcmp(method, "tasks/get"))
    mcp_tasks_get(srv, id, params);
  else if (!strcmp(method, "tasks/result"))
    mcp_tasks_result(srv, id, params);
  else if (!strcmp(method, "tasks/list"))
    mcp_tasks_list(srv, id, params);
  else if (!strcmp(method, "tasks/cancel"))
    mcp_tasks_cancel(srv, id, params);
  else if (!strcmp(method, "resources/list"))
    mcp_resources_list(srv, id, params);
  else if (!strcmp(method, "resources/templates/list"))
    mcp_resources_templates(srv, id, params);
  else if (!strcmp(method, "resources/read"))
    mcp_resources_read(srv, id, params);
  else if (!strcmp(method, "resources/subscribe"))
    mcp_resources_subscribe(srv, id, params, 1);
  else if (!strcmp(method, "resources/unsubscribe"))
    mcp_resources_subscribe(srv, id, params, 0);
  else if (!strcmp(method, "prompts/list"))
    mcp_reply(srv, id, json_pack("{s:[]}", "prompts"));
  else if (!strcmp(method, "logging/setLevel"))
    mcp_reply(srv, id, json_object());
  else
    mcp_reply_error(srv, id, RPC_METHOD_NOT_FOUND,
                    "method '%s' is not supported by the taskfs MCP server (it offers initialize, "
                    "ping, tools/*, tasks/*, resources/*)",
                    method);
}

/* Handles one line of input: exactly one reply for a request (or for input
 * that is not even a valid message), none for a notification. */
static void handle_line(void *arg, const char *line, size_t len, size_t oversize) {
  mcp_server_t *srv = arg;
  if (srv->stopping)
    return;
  if (oversize) {
    mcp_reply_error(srv, NULL, RPC_INVALID_REQUEST,
                    "message too large: %zu bytes; the limit is %u bytes (send smaller requests)",
                    oversize, MCP_LINE_MAX);
    return;
  }
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
    i++;
  if (i == len)
    return; /* blank lines are harmless keep-alives */
  json_error_t jerr;
  json_t *msg = json_loadb(line, len, JSON_DECODE_ANY, &jerr);
  if (!msg) {
    mcp_reply_error(srv, NULL, RPC_PARSE_ERROR,
                    "parse error: %s (line 1, column %d); each line must be one JSON-RPC 2.0 "
                    "message",
                    jerr.text, jerr.column);
    return;
  }
  if (json_is_array(msg)) {
    mcp_reply_error(srv, NULL, RPC_INVALID_REQUEST,
                    "batches (JSON arrays) are not supported: MCP 2025-06-18 removed JSON-RPC "
                    "batching; send one message per line");
    json_decref(msg);
    return;
  }
  if (!json_is_object(msg)) {
    mcp_reply_error(srv, NULL, RPC_INVALID_REQUEST,
                    "invalid request: a message must be a JSON object with \"jsonrpc\": \"2.0\"");
    json_decref(msg);
    return;
  }
  json_t *id = json_object_get(msg, "id");
  json_t *jmethod = json_object_get(msg, "method");
  json_t *params = json_object_get(msg, "params");
  json_t *reply_id = (id && (json_is_string(id) || json_is_integer(id))) ? id : NULL;
  const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
  if (!jmethod && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
    json_decref(msg); /* a response to a request we never send: ignore it */
    return;
  }
  if (!version || strcmp(version, "2.0")) {
    mcp_reply_error(srv, reply_id, RPC_INVALID_REQUEST,
                    "invalid request: \"jsonrpc\" must be \"2.0\"");
  } else if (id && !reply_id) {
    mcp_reply_error(srv, NULL, RPC_INVALID_REQUEST,
                    "invalid request: \"id\" must be a string or an integer");
  } else if (!json_is_string(jmethod)) {
    mcp_reply_error(srv, reply_id, RPC_INVALID_REQUEST,
                    "invalid request: \"method\" must be a string");
  } else if (params && !json_is_object(params)) {
    if (reply_id)
      mcp_reply_error(srv, reply_id, RPC_INVALID_PARAMS,
                      "invalid params: \"params\" must be an object");
  } else {
    json_t *p = params ? params : json_object();
    if (!params)
      json_object_set_new(msg, "params", p);
    if (reply_id)
      handle_request(srv, reply_id, json_string_value(jmethod), p);
    else
      handle_notification(srv, json_string_value(jmethod), p);
  }
  json_decref(msg);
}

/* ---- input ---------------------------------------------------------------- */

static void on_input_eof(mcp_server_t *srv) {
  mcp_lines_finish(&srv->lines, handle_line, srv);
  begin_shutdown(srv, "end of input");
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  mcp_server_t *srv = h->data;
  *buf = uv_buf_init(srv->in_buf, sizeof srv->in_buf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  mcp_server_t *srv = s->data;
  if (n > 0) {
    if (mcp_lines_feed(&srv->lines, buf->base, (size_t)n, handle_line, srv)) {
      fprintf(stderr, "taskfs mcp: out of memory reading input\n");
      srv->exit_code = 1;
      on_input_eof(srv);
    }
  } else if (n < 0) {
    if (n != UV_EOF) {
      fprintf(stderr, "taskfs mcp: reading stdin failed (%s)\n", uv_strerror((int)n));
      srv->exit_code = 1;
    }
    uv_read_stop(s);
    on_input_eof(srv);
  }
}

static void file_read_next(mcp_server_t *srv);

static void on_file_read(uv_fs_t *req) {
  mcp_server_t *srv = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  srv->file_reading = 0;
  if (srv->stopping)
    return;
  if (n > 0) {
    mcp_lines_feed(&srv->lines, srv->in_buf, (size_t)n, handle_line, srv);
    if (!srv->stopping && !srv->read_paused)
      file_read_next(srv);
    return;
  }
  if (n < 0 && n != UV_EOF) {
    fprintf(stderr, "taskfs mcp: reading stdin failed (%s)\n", uv_strerror((int)n));
    srv->exit_code = 1;
  }
  on_input_eof(srv);
}

static void file_read_next(mcp_server_t *srv) {
  if (srv->file_reading)
    return;
  uv_buf_t buf = uv_buf_init(srv->in_buf, sizeof srv->in_buf);
  srv->in_req.data = srv;
  srv->file_reading = 1;
  int err = uv_fs_read(srv->loop, &srv->in_req, 0, &buf, 1, -1, on_file_read);
  if (err) {
    srv->file_reading = 0;
    fprintf(stderr, "taskfs mcp: reading stdin failed (%s)\n", uv_strerror(err));
    on_input_eof(srv);
  }
}

static void resume_input(mcp_server_t *srv) {
  srv->read_paused = 0;
  if (srv->closing)
    return;
  if (srv->in_kind == IO_STREAM)
    uv_read_start(&srv->in.stream, on_alloc, on_read);
  else
    file_read_next(srv);
}

/* Opens fd as a libuv stream if it is one; returns IO_STREAM or IO_FILE. */
static int open_stdio(mcp_server_t *srv, int fd, void *handle, int readable) {
  uv_handle_type t = uv_guess_handle(fd);
  int err = -1;
  if (t == UV_NAMED_PIPE) {
    uv_pipe_init(srv->loop, handle, 0);
    err = uv_pipe_open(handle, fd);
  } else if (t == UV_TTY) {
    err = uv_tty_init(srv->loop, handle, fd, readable);
  } else if (t == UV_TCP) {
    uv_tcp_init(srv->loop, handle);
    err = uv_tcp_open(handle, fd);
  } else {
    return IO_FILE;
  }
  if (err) {
    /* An opened-but-failed handle still needs closing; fall back to
     * plain file I/O, which works on any fd. */
    uv_close(handle, NULL);
    return IO_FILE;
  }
  ((uv_handle_t *)handle)->data = srv;
  return IO_STREAM;
}

int mcp_serve(const mcp_opts_t *opts) {
  static mcp_server_t server;
  mcp_server_t *srv = &server;
  memset(srv, 0, sizeof *srv);
  signal(SIGPIPE, SIG_IGN);

  char dir[4096];
  int err = tfs_store_resolve(opts->state_dir, dir, sizeof dir);
  if (err) {
    fprintf(stderr, "taskfs mcp: cannot resolve the state directory (%s); pass --state-dir DIR\n",
            tfs_strerror(err));
    return 111;
  }
  err = tfs_store_open(dir, &srv->store);
  if (err) {
    fprintf(stderr, "taskfs mcp: cannot open the store %s (%s)\n", dir, tfs_strerror(err));
    return 111;
  }
  snprintf(srv->who, sizeof srv->who, "mcp pid %d", (int)getpid());

  tfs_owner_t prev;
  memset(&prev, 0, sizeof prev);
  err = tfs_store_acquire(srv->store, "mcp", &prev);
  if (err)
    fprintf(stderr, "taskfs mcp: could not record this instance in %s (%s); serving anyway\n", dir,
            tfs_strerror(err));
  else if (prev.alive) {
    char **ids = NULL;
    size_t n = 0, running = 0;
    if (tfs_task_ids(srv->store, &ids, &n) == 0) {
      for (size_t i = 0; i < n; i++)
        if (tfs_task_alive(srv->store, ids[i]) == 1)
          running++;
      tfs_ids_free(ids, n);
    }
    char when[TFS_TIME_BUF];
    fprintf(stderr,
            "taskfs mcp: another live instance (%s pid %d, since %s) also serves %s; %zu "
            "task(s) running; this instance lists, reads and cancels every task too\n",
            prev.role[0] ? prev.role : "?", (int)prev.pid, tfs_time_format(prev.started_ms, when),
            dir, running);
  }

  srv->loop = uv_default_loop();
  mcp_lines_init(&srv->lines, MCP_LINE_MAX);
  srv->in_kind = open_stdio(srv, 0, &srv->in, 1);
  srv->out_kind = open_stdio(srv, 1, &srv->out, 0);
  srv->in_open = srv->out_open = 1;

  uv_signal_init(srv->loop, &srv->sigterm);
  uv_signal_init(srv->loop, &srv->sigint);
  srv->sigterm.data = srv->sigint.data = srv;
  uv_signal_start(&srv->sigterm, on_signal, SIGTERM);
  uv_signal_start(&srv->sigint, on_signal, SIGINT);

  if (srv->in_kind == IO_STREAM) {
    err = uv_read_start(&srv->in.stream, on_alloc, on_read);
    if (err) {
      fprintf(stderr, "taskfs mcp: cannot read stdin (%s)\n", uv_strerror(err));
      return 111;
    }
  } else {
    file_read_next(srv);
  }

  uv_run(srv->loop, UV_RUN_DEFAULT);
  /* The loop stopped with every reply flushed. Handles (and a possible
   * threadpool read blocked on stdin) are left to process exit. */
  mcp_lines_free(&srv->lines);
  if (!srv->holds)
    tfs_store_close(srv->store);
  return srv->exit_code;
}
