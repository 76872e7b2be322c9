/* The JSON API (docs/web.md, "The JSON API"): what the web viewer uses
 * and scripts can too, behind the same gates as /mcp (routes.c rows, the
 * bearer token; a foreign Origin is refused by
 * http_guard_reach before any of this runs).
 *
 *   GET  /api/tasks                   the listing (tfs_task_page)
 *   GET  /api/tasks/<id>              the record
 *   GET  /api/tasks/<id>/transcript   bytes (Range), or ?follow=1 as SSE
 *   POST /api/tasks/<id>/cancel       a stop request (tfs_cancel_request)
 *   GET  /api/events                  SSE: tasks that appear, change, progress, go
 *
 * A face only: the records, listings, transcripts and stop requests are
 * core's, the streams are the live layer's follows and task feed
 * (live/feed.c, live/follow.c), written here as SSE. Every id
 * from a URL passes tfs_id_valid() before the store sees it, so nothing
 * outside the store is named. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "http/internal.h"
#include "taskfs/buf.h"

#define API_LIMIT_DEFAULT 100
#define API_LIMIT_MAX 1000
#define API_STREAM_HIGH (256u << 10) /* unread stream bytes at which a follow pauses */
#define JSON_CT "application/json; charset=utf-8"

static tfs_store_t *store_of(http_req_t *r) {
  return http_store(r->srv);
}

/* The record text as one line: core writes it indented, and its strings
 * hold no raw newline (they are escaped), so dropping each '\n' and the
 * indent after it leaves the same JSON, compact enough for an SSE data
 * field. In place; returns the new length. */
static size_t one_line(char *json, size_t len) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (json[i] == '\n') {
      while (i + 1 < len && json[i + 1] == ' ')
        i++;
      continue;
    }
    json[o++] = json[i];
  }
  json[o] = '\0';
  return o;
}

/* {"error": "<why>"} (and "state" for a task that has ended). */
static void api_error(http_req_t *r, unsigned status, const char *state, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void api_error(http_req_t *r, unsigned status, const char *state, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char *clean = tfs_utf8_sanitize(msg, strlen(msg), NULL); /* a URL's bytes may be in it */
  json_t *o = clean ? json_pack("{s:s}", "error", clean) : NULL;
  free(clean);
  if (o && state)
    json_object_set_new(o, "state", json_string(state));
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!text) {
    http_respond_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return;
  }
  size_t n;
  char *body = tfs_str_line(text, &n);
  if (body)
    http_respond_take(r, status, JSON_CT, body, n);
}

static void api_no_task(http_req_t *r, const char *id) {
  api_error(r, MHD_HTTP_NOT_FOUND, NULL,
            "no task %.40s%s: list the tasks with GET /api/tasks (ids look like "
            "mi4x7k2p-3fz9qa)",
            id, strlen(id) > 40 ? "..." : "");
}

/* What a store error means to a client of a task. */
static void api_task_error(http_req_t *r, const char *id, int err) {
  if (err == TFS_ENOTASK || err == TFS_EBADID)
    api_no_task(r, id);
  else
    api_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "task %s cannot be read: %s", id,
              tfs_strerror(err));
}

static void respond_record(http_req_t *r, unsigned status, const tfs_record_t *rec) {
  char *json = tfs_record_dump(rec);
  if (!json) {
    api_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    return;
  }
  http_respond_take(r, status, JSON_CT, json, strlen(json));
}

/* A decimal number in [0, max], the whole of s. -1 if it is not one. */
static int64_t parse_num(const char *s, int64_t max) {
  if (!s || !*s)
    return -1;
  int64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    if (v > (max - (*p - '0')) / 10)
      return -2; /* larger than max */
    v = v * 10 + (*p - '0');
  }
  return v;
}

/* ---- GET /api/tasks ---------------------------------------------------- */

typedef struct {
  tfs_buf_t b;
  size_t n;
} page_t;

static int on_listed(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  page_t *p = arg;
  if (p->n++)
    tfs_buf_append(&p->b, ",", 1);
  if (len && json[len - 1] == '\n')
    len--;
  return tfs_buf_append(&p->b, json, len) ? 1 : 0;
}

void http_api_tasks(http_req_t *r) {
  tfs_page_t pg = {.limit = API_LIMIT_DEFAULT, .with_json = 1, .cursor = http_query(r, "cursor")};
  const char *s = http_query(r, "state");
  char bad[48];
  if (s && tfs_state_parse_list(s, &pg.states, bad, sizeof bad)) {
    api_error(r, MHD_HTTP_BAD_REQUEST, NULL,
              "unknown state '%s' in ?state=; the states are " TFS_STATE_NAMES
              " (several: comma-separated)",
              bad);
    return;
  }
  const char *l = http_query(r, "limit");
  if (l) {
    int64_t v = parse_num(l, API_LIMIT_MAX);
    if (v < 1) {
      api_error(r, MHD_HTTP_BAD_REQUEST, NULL,
                "?limit=%.40s is not allowed: give a number from 1 to %d (default %d), and "
                "?cursor= for the next page",
                l, API_LIMIT_MAX, API_LIMIT_DEFAULT);
      return;
    }
    pg.limit = (size_t)v;
  }
  page_t p = {TFS_BUF_INIT, 0};
  char why[256];
  tfs_buf_reserve(&p.b, 64 * 1024);
  tfs_buf_puts(&p.b, "{\"tasks\":[");
  int err = tfs_task_page(store_of(r), &pg, on_listed, &p, why, sizeof why);
  if (err == TFS_ENOTASK) {
    tfs_buf_free(&p.b);
    api_error(r, MHD_HTTP_BAD_REQUEST, NULL, "?cursor=: %s", why);
    return;
  }
  if (err || p.b.oom) {
    tfs_buf_free(&p.b);
    api_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "the tasks cannot be listed: %s",
              err ? why : "out of memory");
    return;
  }
  /* More ids than the walk reached: the next page starts below the last
   * one it looked at. */
  if (pg.next[0])
    tfs_buf_printf(&p.b, "],\"next\":\"%s\"}\n", pg.next);
  else
    tfs_buf_puts(&p.b, "],\"next\":null}\n");
  size_t len;
  char *body = tfs_buf_take(&p.b, &len);
  if (!body) {
    api_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    return;
  }
  http_respond_take(r, MHD_HTTP_OK, JSON_CT, body, len);
}

/* ---- GET /api/tasks/<id> ------------------------------------------------ */

static void on_record(http_req_t *r, const char *id) {
  tfs_record_t rec;
  int err = tfs_task_load(store_of(r), id, &rec);
  if (err)
    api_task_error(r, id, err);
  else
    respond_record(r, MHD_HTTP_OK, &rec);
  tfs_record_free(&rec);
}

/* ---- POST /api/tasks/<id>/cancel ---------------------------------------- */

static void on_cancel(http_req_t *r, const char *id) {
  tfs_store_t *store = store_of(r);
  char who[128];
  snprintf(who, sizeof who, "serve api pid %ld uid %ld", (long)getpid(), (long)getuid());
  int err = tfs_cancel_request(store, id, who);
  tfs_record_t rec;
  int lerr = tfs_task_load(store, id, &rec);
  if (err == TFS_EFINISHED && !lerr) {
    const char *state = tfs_state_name(rec.state);
    api_error(r, MHD_HTTP_CONFLICT, state, "task %s has already ended (%s): nothing to cancel", id,
              state);
  } else if (err) {
    api_task_error(r, id, err);
  } else if (lerr) {
    api_task_error(r, id, lerr);
  } else {
    respond_record(r, MHD_HTTP_ACCEPTED, &rec);
  }
  tfs_record_free(&rec);
}

/* ---- GET /api/tasks/<id>/transcript -------------------------------------- */

/* Digits of [p, e) as a number; an overflow reads as INT64_MAX (past any
 * end). -1: empty, or not digits only. */
static int64_t range_num(const char *p, const char *e) {
  if (p == e)
    return -1;
  int64_t v = 0;
  for (; p < e; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (*p - '0');
  }
  return v;
}

/* A Range header: 1 with [*from, *to] inside size, 0 to ignore it (absent,
 * or not one byte range we read: the whole file then, as RFC 9110
 * allows), -1 when it asks only for bytes past the end (416). */
static int parse_range(const char *v, uint64_t size, uint64_t *from, uint64_t *to) {
  if (!v || strncmp(v, "bytes=", 6) || strchr(v, ','))
    return 0;
  const char *p = v + 6, *dash = strchr(p, '-'), *e = p + strlen(p);
  if (!dash)
    return 0;
  int64_t x = range_num(p, dash), y = range_num(dash + 1, e);
  if ((x < 0 && p != dash) || (y < 0 && dash + 1 != e) || (x < 0 && y < 0))
    return 0;  /* not digits */
  if (x < 0) { /* -n: the last n bytes */
    if (y == 0 || size == 0)
      return -1;
    *from = (uint64_t)y >= size ? 0 : size - (uint64_t)y;
    *to = size - 1;
    return 1;
  }
  if (y >= 0 && y < x)
    return 0;
  if ((uint64_t)x >= size)
    return -1;
  *from = (uint64_t)x;
  *to = y < 0 || (uint64_t)y >= size ? size - 1 : (uint64_t)y;
  return 1;
}

static void on_transcript_bytes(http_req_t *r, const char *id) {
  tfs_store_t *store = store_of(r);
  struct stat st;
  int err = tfs_task_stat(store, id, &st);
  if (err) {
    api_task_error(r, id, err);
    return;
  }
  int fd = tfs_task_file_open(store, id, TFS_FILE_TRANSCRIPT, O_RDONLY, 0);
  uint64_t size = 0;
  if (fd >= 0) {
    if (fstat(fd, &st)) {
      close(fd);
      api_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "the transcript of %s: %s", id,
                strerror(errno));
      return;
    }
    size = (uint64_t)st.st_size;
  } else if (fd != -ENOENT) { /* -ENOENT: nothing written yet */
    api_task_error(r, id, fd);
    return;
  }
  char buf[96];
  snprintf(buf, sizeof buf, "%" PRIu64, size);
  http_add_header(r, "X-Taskfs-Size", buf);
  http_add_header(r, "Accept-Ranges", "bytes");
  uint64_t from = 0, to = 0;
  int ranged = parse_range(http_header(r, "Range"), size, &from, &to);
  if (ranged < 0) {
    if (fd >= 0)
      close(fd);
    snprintf(buf, sizeof buf, "bytes */%" PRIu64, size);
    http_add_header(r, "Content-Range", buf);
    api_error(r, MHD_HTTP_RANGE_NOT_SATISFIABLE, NULL,
              "the range %.60s is past the end of the transcript of %s, which has %" PRIu64
              " bytes; ask for bytes below that (bytes=-N: the last N)",
              http_header(r, "Range"), id, size);
    return;
  }
  if (fd < 0) {
    http_respond(r, MHD_HTTP_OK, "application/octet-stream", "", 0);
    return;
  }
  if (ranged) {
    snprintf(buf, sizeof buf, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, from, to, size);
    http_add_header(r, "Content-Range", buf);
    http_respond_fd(r, MHD_HTTP_PARTIAL_CONTENT, "application/octet-stream", fd, from,
                    to - from + 1);
  } else {
    http_respond_fd(r, MHD_HTTP_OK, "application/octet-stream", fd, 0, size);
  }
}

/* ?follow=1: a follow (live/follow.c) written as server-sent events. */
typedef struct {
  http_req_t *r;
  live_follow_t *fl;
  char id[TFS_ID_MAX + 1];
} tail_t;

static int tail_line(void *arg, int64_t n, off_t end, const char *text, size_t len, int partial) {
  tail_t *t = arg;
  char *clean = tfs_utf8_sanitize(text, len, &len);
  json_t *o = clean ? json_pack("{s:I,s:s%}", "n", (json_int_t)n, "text", clean, len) : NULL;
  if (o && partial == 2)
    json_object_set_new(o, "more", json_true()); /* a 1 MiB piece; the line goes on */
  char *data = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  free(clean);
  if (data) {
    char idbuf[24];
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)end);
    http_stream_event(t->r, "line", idbuf, data, strlen(data));
    free(data);
  }
  return http_stream_unread(t->r) >= API_STREAM_HIGH;
}

static void tail_state(void *arg, const tfs_record_t *rec, const char *json) {}

static void tail_end(void *arg, const tfs_record_t *rec, const char *json, int err) {
  tail_t *t = arg;
  t->fl = NULL;
  if (rec && json && !err) {
    char *line = strdup(json);
    if (line)
      http_stream_event(t->r, "end", NULL, line, one_line(line, strlen(line)));
    free(line);
  } else if (err != -ESHUTDOWN) {
    json_t *o = json_pack("{s:s,s:s}", "id", t->id, "error", tfs_strerror(err));
    char *data = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (data)
      http_stream_event(t->r, "gone", NULL, data, strlen(data));
    free(data);
  }
  http_stream_end(t->r);
  free(t);
}

static void tail_gone(http_req_t *r, void *arg) {
  tail_t *t = arg;
  live_follow_stop(t->fl);
  free(t);
}

static void tail_drain(http_req_t *r, void *arg) {
  tail_t *t = arg;
  live_follow_resume(t->fl);
}

static const live_follow_ops_t tail_ops = {tail_line, tail_state, tail_end};

static void on_transcript_follow(http_req_t *r, const char *id) {
  const char *from_s = http_header(r, "Last-Event-ID");
  if (!from_s || !*from_s)
    from_s = http_query(r, "offset");
  int64_t from = from_s ? parse_num(from_s, INT64_MAX / 2) : 0;
  if (from < 0) {
    api_error(r, MHD_HTTP_BAD_REQUEST, NULL,
              "offset %.40s is not a byte offset: give a number of bytes (an event's id) in "
              "?offset= or Last-Event-ID",
              from_s);
    return;
  }
  tail_t *t = calloc(1, sizeof *t);
  if (!t) {
    api_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    return;
  }
  t->r = r;
  snprintf(t->id, sizeof t->id, "%s", id);
  int err = live_follow_start(http_feed(r->srv), id, (off_t)from, &tail_ops, t, &t->fl);
  if (err) {
    free(t);
    api_task_error(r, id, err);
    return;
  }
  http_stream_start(r, MHD_HTTP_OK, "text/event-stream; charset=utf-8", tail_gone, t);
  http_stream_on_drain(r, tail_drain);
}

/* ---- /api/tasks/<id>[/...] ------------------------------------------------ */

static void not_allowed(http_req_t *r, const char *allow) {
  http_add_header(r, "Allow", allow);
  api_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "%s is not served at %.200s (allowed: %s)",
            r->method, r->url, allow);
}

void http_api_task(http_req_t *r) {
  const char *rest = r->url + strlen("/api/tasks/");
  size_t n = strcspn(rest, "/");
  char id[TFS_ID_MAX + 1];
  snprintf(id, sizeof id, "%.*s", (int)(n < sizeof id - 1 ? n : sizeof id - 1), rest);
  /* A hostile id (empty, "..", too long, a byte an id never has) names
   * nothing: it never reaches the store. */
  if (n > TFS_ID_MAX || !tfs_id_validn(rest, n)) {
    char shown[48];
    snprintf(shown, sizeof shown, "%.*s", (int)(n > 40 ? 40 : n), rest);
    api_no_task(r, shown);
    return;
  }
  const char *sub = rest + n;
  int get = (r->m & (HTTP_M_GET | HTTP_M_HEAD)) != 0;
  if (!*sub) {
    if (!get)
      not_allowed(r, "GET, HEAD");
    else
      on_record(r, id);
  } else if (!strcmp(sub, "/transcript")) {
    const char *f = http_query(r, "follow");
    if (!get)
      not_allowed(r, "GET, HEAD");
    else if (f && strcmp(f, "0") && r->m == HTTP_M_GET)
      on_transcript_follow(r, id);
    else
      on_transcript_bytes(r, id);
  } else if (!strcmp(sub, "/cancel")) {
    if (r->m != HTTP_M_POST)
      not_allowed(r, "POST");
    else
      on_cancel(r, id);
  } else {
    api_error(r, MHD_HTTP_NOT_FOUND, NULL,
              "no such page: %.200s (a task has /api/tasks/ID, /transcript and /cancel)", r->url);
  }
}

/* ---- GET /api/events -------------------------------------------------------- */

typedef struct {
  http_req_t *r;
  live_task_sub_t *sub;
} events_t;

static void events_told(void *arg, const char *id, const tfs_record_t *rec, const char *json) {
  events_t *e = arg;
  if (!id) { /* the server stops */
    e->sub = NULL;
    http_stream_end(e->r);
    free(e);
    return;
  }
  if (json) {
    char *line = strdup(json);
    if (line)
      http_stream_event(e->r, rec ? "task" : "progress", NULL, line, one_line(line, strlen(line)));
    free(line);
  } else {
    char data[TFS_ID_MAX + 16];
    snprintf(data, sizeof data, "{\"id\":\"%s\"}", id);
    http_stream_event(e->r, "gone", NULL, data, strlen(data));
  }
}

static void events_gone(http_req_t *r, void *arg) {
  events_t *e = arg;
  live_tasks_unsubscribe(r->srv->feed, e->sub);
  free(e);
}

void http_api_events(http_req_t *r) {
  events_t *e = calloc(1, sizeof *e);
  if (!e) {
    api_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    return;
  }
  e->r = r;
  int err = live_tasks_subscribe(http_feed(r->srv), events_told, e, &e->sub);
  if (err) {
    free(e);
    api_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "the tasks cannot be watched: %s",
              tfs_strerror(err));
    return;
  }
  http_stream_start(r, MHD_HTTP_OK, "text/event-stream; charset=utf-8", events_gone, e);
  http_stream_event(r, "ready", NULL, "{}", 2);
}
