/* Resources: each task's record (taskfs://tasks/<id>/record, JSON) and
 * transcript (taskfs://tasks/<id>/transcript, text: the last 64 KiB), with
 * subscriptions. A subscription rides on the task-directory watch and sends
 * notifications/resources/updated at most twice a second per resource. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp/internal.h"

#define RES_PAGE_TASKS 50
#define URI_PREFIX "taskfs://tasks/"
/* The resource is the last this many bytes of the transcript. */
#define TRANSCRIPT_RESOURCE_MAX (64 * 1024)

enum { RES_RECORD, RES_TRANSCRIPT };

struct mcp_sub {
  mcp_sub_t *next;
  mcp_session_t *sess;
  char uri[128];
  char id[TFS_ID_MAX + 1];
  int kind;
  mcp_listener_t *listener;
  uv_timer_t timer;
  int64_t last_sent_ms;
  int armed;
  /* Fallback when the watch could not be set: a 1 s stat of the file. */
  uv_timer_t poll;
  int64_t seen_size, seen_mtime_ns;
  int open_handles; /* freed when both timers have closed */
};

/* Parses taskfs://tasks/<id>/(record|transcript). Returns 0, or -1. */
static int parse_uri(const char *uri, char id[TFS_ID_MAX + 1], int *kind) {
  if (!uri || strncmp(uri, URI_PREFIX, strlen(URI_PREFIX)))
    return -1;
  const char *p = uri + strlen(URI_PREFIX);
  const char *slash = strchr(p, '/');
  if (!slash || (size_t)(slash - p) > TFS_ID_MAX)
    return -1;
  memcpy(id, p, (size_t)(slash - p));
  id[slash - p] = 0;
  if (!tfs_id_valid(id))
    return -1;
  if (!strcmp(slash + 1, "record"))
    *kind = RES_RECORD;
  else if (!strcmp(slash + 1, "transcript"))
    *kind = RES_TRANSCRIPT;
  else
    return -1;
  return 0;
}

/* Checks params.uri; replies with an error and returns -1 if it is not a
 * resource of an existing task. */
static int uri_param(const mcp_req_t *r, json_t *params, char tid[TFS_ID_MAX + 1], int *kind,
                     const char **uri_out) {
  const char *uri = json_string_value(json_object_get(params, "uri"));
  if (!uri) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.uri (a string) is required");
    return -1;
  }
  if (parse_uri(uri, tid, kind)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "'%.200s' is not a taskfs resource; use taskfs://tasks/<id>/record or "
                    "taskfs://tasks/<id>/transcript",
                    uri);
    return -1;
  }
  tfs_record_t rec;
  int err = tfs_task_load(mcp_store(r->srv), tid, &rec);
  if (err == TFS_ENOTASK) {
    json_t *m = json_pack("{s:s, s:O, s:{s:i, s:s, s:{s:s}}}", "jsonrpc", "2.0", "id", r->id,
                          "error", "code", MCP_RPC_RESOURCE_NOT_FOUND, "message",
                          "resource not found: no such task in this store (see resources/list)",
                          "data", "uri", uri);
    mcp_send(r->sess, r->id, m);
    return -1;
  }
  if (!err)
    tfs_record_free(&rec);
  *uri_out = uri;
  return 0;
}

void mcp_resources_templates(const mcp_req_t *r, json_t *params) {
  mcp_reply(r, json_pack("{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]}", "resourceTemplates",
                         "uriTemplate", URI_PREFIX "{taskId}/record", "name", "task-record",
                         "description",
                         "The task's record.json: state, exit code, times, policy, important lines",
                         "mimeType", "application/json", "uriTemplate",
                         URI_PREFIX "{taskId}/transcript", "name", "task-transcript", "description",
                         "The task's output, bounded to its last 64 KiB (cut at a line start); "
                         "read_managed_task with sinceLine pages through all of it",
                         "mimeType", "text/plain"));
}

void mcp_resources_list(const mcp_req_t *r, json_t *params) {
  mcp_idpage_t pg;
  if (mcp_idpage_param(r, params, &pg))
    return;
  json_t *list = json_array();
  size_t i = pg.start, n = 0;
  while (i > 0 && n < RES_PAGE_TASKS) {
    i--;
    n++;
    const char *tid = pg.all[i];
    char uri[128], name[96];
    snprintf(uri, sizeof uri, URI_PREFIX "%s/record", tid);
    snprintf(name, sizeof name, "task %s record", tid);
    json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "uri", uri, "name", name, "mimeType",
                                          "application/json"));
    snprintf(uri, sizeof uri, URI_PREFIX "%s/transcript", tid);
    snprintf(name, sizeof name, "task %s transcript (last 64 KiB)", tid);
    json_array_append_new(
        list, json_pack("{s:s, s:s, s:s}", "uri", uri, "name", name, "mimeType", "text/plain"));
  }
  json_t *o = json_pack("{s:o}", "resources", list);
  if (i > 0 && n)
    json_object_set_new(o, "nextCursor", json_string(pg.all[i]));
  mcp_idpage_close(&pg);
  mcp_reply(r, o);
}

/* The last TRANSCRIPT_RESOURCE_MAX bytes of the transcript, starting at
 * a line boundary when cut, as valid UTF-8. */
static char *transcript_tail(mcp_server_t *srv, const char *tid, size_t *total, int *cut) {
  *total = 0;
  *cut = 0;
  int fd = tfs_task_openat(mcp_store(srv), tid, "transcript", O_RDONLY, 0);
  if (fd < 0)
    return strdup("");
  struct stat st;
  if (fstat(fd, &st)) {
    close(fd);
    return strdup("");
  }
  *total = (size_t)st.st_size;
  size_t want = *total > TRANSCRIPT_RESOURCE_MAX ? TRANSCRIPT_RESOURCE_MAX : *total;
  off_t off = (off_t)(*total - want);
  char *buf = malloc(want + 1);
  ssize_t n = buf ? pread(fd, buf, want, off) : -1;
  close(fd);
  if (n < 0) {
    free(buf);
    return strdup("");
  }
  size_t start = 0;
  if (off > 0) {
    *cut = 1;
    char *nl = memchr(buf, '\n', (size_t)n);
    if (nl)
      start = (size_t)(nl - buf) + 1;
  }
  char *clean = mcp_text_clean(buf + start, (size_t)n - start, 0);
  free(buf);
  return clean;
}

void mcp_resources_read(const mcp_req_t *r, json_t *params) {
  char tid[TFS_ID_MAX + 1];
  int kind;
  const char *uri;
  if (uri_param(r, params, tid, &kind, &uri))
    return;
  if (kind == RES_RECORD) {
    tfs_record_t rec;
    int err = tfs_task_load(mcp_store(r->srv), tid, &rec);
    char *text = err ? NULL : tfs_record_dump(&rec);
    if (!err)
      tfs_record_free(&rec);
    if (!text) {
      mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "cannot read the record of %s: %s", tid,
                      tfs_strerror(err ? err : -ENOMEM));
      return;
    }
    char *clean = mcp_text_clean(text, strlen(text), 0);
    free(text);
    mcp_reply(r, json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
                           "application/json", "text", clean ? clean : ""));
    free(clean);
    return;
  }
  size_t total;
  int cut;
  char *text = transcript_tail(r->srv, tid, &total, &cut);
  mcp_reply(r, json_pack("{s:[{s:s, s:s, s:s, s:{s:I, s:b}}]}", "contents", "uri", uri, "mimeType",
                         "text/plain", "text", text ? text : "", "_meta", "totalBytes",
                         (json_int_t)total, "truncated", cut));
  free(text);
}

static void sub_send(mcp_sub_t *s) {
  s->last_sent_ms = tfs_now_ms();
  mcp_notify(s->sess, "notifications/resources/updated", json_pack("{s:s}", "uri", s->uri));
}

static void on_mcp_sub_timer(uv_timer_t *t) {
  mcp_sub_t *s = t->data;
  s->armed = 0;
  sub_send(s);
}

/* A change in the task directory: notify now, or once the interval since
 * the last notification has passed. */
static void on_sub_change(void *arg, const char *filename) {
  mcp_sub_t *s = arg;
  int relevant =
      s->kind == RES_RECORD ? !strcmp(filename, "record.json") : !strcmp(filename, "transcript");
  if (!relevant || s->armed || mcp_closing(s->sess->srv))
    return;
  int64_t since = tfs_now_ms() - s->last_sent_ms;
  if (since >= MCP_NOTIFY_INTERVAL_MS) {
    sub_send(s);
    return;
  }
  s->armed = 1;
  uv_timer_start(&s->timer, on_mcp_sub_timer, (uint64_t)(MCP_NOTIFY_INTERVAL_MS - since), 0);
}

static void on_sub_closed(uv_handle_t *h) {
  mcp_sub_t *s = h->data;
  if (--s->open_handles == 0)
    free(s);
}

static void sub_free(mcp_sub_t *s) {
  mcp_watch_remove(s->sess->srv, s->listener);
  uv_timer_stop(&s->timer);
  uv_timer_stop(&s->poll);
  s->open_handles = 2;
  uv_close((uv_handle_t *)&s->timer, on_sub_closed);
  uv_close((uv_handle_t *)&s->poll, on_sub_closed);
}

/* Size and mtime of the file behind the subscription (0 if absent). */
static void sub_stat(mcp_sub_t *s, int64_t *size, int64_t *mtime_ns) {
  struct stat st;
  char rel[TFS_ID_MAX + 32];
  snprintf(rel, sizeof rel, "%s/%s", s->id, s->kind == RES_RECORD ? "record.json" : "transcript");
  if (fstatat(tfs_store_tasks_fd(mcp_store(s->sess->srv)), rel, &st, AT_SYMLINK_NOFOLLOW)) {
    *size = *mtime_ns = 0;
    return;
  }
  *size = st.st_size;
  *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

static void on_sub_poll(uv_timer_t *t) {
  mcp_sub_t *s = t->data;
  int64_t size, mtime;
  sub_stat(s, &size, &mtime);
  if (size != s->seen_size || mtime != s->seen_mtime_ns) {
    s->seen_size = size;
    s->seen_mtime_ns = mtime;
    on_sub_change(s, s->kind == RES_RECORD ? "record.json" : "transcript");
  }
}

void mcp_resources_unsubscribe(const mcp_req_t *r, json_t *params) {
  /* Unsubscribing needs no existing task: it may have been pruned. */
  const char *uri = json_string_value(json_object_get(params, "uri"));
  if (!uri) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.uri (a string) is required");
    return;
  }
  for (mcp_sub_t **pp = &r->sess->subs; *pp;) {
    mcp_sub_t *s = *pp;
    if (!strcmp(s->uri, uri)) {
      *pp = s->next;
      sub_free(s);
    } else {
      pp = &s->next;
    }
  }
  mcp_reply(r, json_object());
}

void mcp_resources_subscribe(const mcp_req_t *r, json_t *params) {
  char tid[TFS_ID_MAX + 1];
  int kind;
  const char *uri;
  if (uri_param(r, params, tid, &kind, &uri))
    return;
  for (mcp_sub_t *s = r->sess->subs; s; s = s->next)
    if (!strcmp(s->uri, uri)) {
      mcp_reply(r, json_object()); /* already subscribed */
      return;
    }
  mcp_sub_t *s = calloc(1, sizeof *s);
  if (!s) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  s->sess = r->sess;
  snprintf(s->uri, sizeof s->uri, "%s", uri);
  snprintf(s->id, sizeof s->id, "%s", tid);
  s->kind = kind;
  uv_timer_init(mcp_loop(r->srv), &s->timer);
  s->timer.data = s;
  uv_timer_init(mcp_loop(r->srv), &s->poll);
  s->poll.data = s;
  s->listener = mcp_watch_add(r->srv, tid, on_sub_change, s);
  if (!mcp_listener_live(s->listener)) {
    sub_stat(s, &s->seen_size, &s->seen_mtime_ns);
    uv_timer_start(&s->poll, on_sub_poll, MCP_FALLBACK_TICK_MS, MCP_FALLBACK_TICK_MS);
  }
  s->next = r->sess->subs;
  r->sess->subs = s;
  mcp_reply(r, json_object());
}

void mcp_resources_drop(mcp_session_t *sess) {
  while (sess->subs) {
    mcp_sub_t *s = sess->subs;
    sess->subs = s->next;
    sub_free(s);
  }
}
