/* Resources: each task's record (taskfs://tasks/<id>/record, JSON) and
 * transcript (taskfs://tasks/<id>/transcript, text: its last whole lines
 * within 64 KiB), with subscriptions. A subscription is a subscriber of
 * the hub's task feed (live_tasks_subscribe on the server's feed, as
 * /api/events is): a state change of its task is told at once, its
 * progress (lines, bytes, important lines, CPU: the counters the
 * supervisor saves in the record as output flows) as the feed paces it,
 * at most twice a second per task (live/progress.c), never by a pacing
 * of MCP's own. A transcript's subscription tells only the events that
 * find its file changed. The legacy session (resources/subscribe) sends
 * notifications/resources/updated, a modern subscriptions/listen stream
 * (listen.c) its tagged notifications. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mcp/internal.h"

#define RES_PAGE_TASKS 50
#define URI_PREFIX "taskfs://tasks/"
/* The transcript resource is at most this many bytes of its end. */
#define TRANSCRIPT_RESOURCE_MAX (64 * 1024)

struct mcp_sub {
  mcp_sub_t *next; /* the owner's list */
  mcp_server_t *srv;
  char uri[128];
  char id[TFS_ID_MAX + 1];
  int kind;
  mcp_sub_fn fn;
  void *arg;
  live_task_sub_t *fsub; /* on the server's feed; NULL once it stopped */
  struct stat seen;      /* the transcript's; st_ino 0: absent */
};

const char *mcp_sub_uri(const mcp_sub_t *s) {
  return s->uri;
}
const char *mcp_sub_task(const mcp_sub_t *s) {
  return s->id;
}

int mcp_resource_parse(const char *uri, char id[TFS_ID_MAX + 1], int *kind) {
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
    *kind = MCP_RES_RECORD;
  else if (!strcmp(slash + 1, "transcript"))
    *kind = MCP_RES_TRANSCRIPT;
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
  if (mcp_resource_parse(uri, tid, kind)) {
    mcp_reply_error_data(r, MCP_RPC_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                         "'%.200s' is not a taskfs resource; use taskfs://tasks/<id>/record or "
                         "taskfs://tasks/<id>/transcript",
                         uri);
    return -1;
  }
  tfs_record_t rec;
  int err = tfs_task_load(mcp_store(r->srv), tid, &rec);
  if (err == TFS_ENOTASK) {
    /* 2026-07-28 replaced the legacy -32002 by -32602. */
    mcp_reply_error_data(
        r, r->era == MCP_ERA_MODERN ? MCP_RPC_INVALID_PARAMS : MCP_RPC_RESOURCE_NOT_FOUND,
        json_pack("{s:s}", "uri", uri),
        "Resource not found: %.200s (no such task in this store; see "
        "resources/list)",
        uri);
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

static int add_resources(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  char uri[128], name[96];
  snprintf(uri, sizeof uri, URI_PREFIX "%s/record", rec->id);
  snprintf(name, sizeof name, "task %s record", rec->id);
  json_array_append_new(
      arg, json_pack("{s:s, s:s, s:s}", "uri", uri, "name", name, "mimeType", "application/json"));
  snprintf(uri, sizeof uri, URI_PREFIX "%s/transcript", rec->id);
  snprintf(name, sizeof name, "task %s transcript (last 64 KiB)", rec->id);
  json_array_append_new(
      arg, json_pack("{s:s, s:s, s:s}", "uri", uri, "name", name, "mimeType", "text/plain"));
  return 0;
}

void mcp_resources_list(const mcp_req_t *r, json_t *params) {
  mcp_page_reply(r, params, "resources", RES_PAGE_TASKS, add_resources);
}

/* The transcript resource: core's tail bounded in bytes, as valid UTF-8;
 * nothing yet (or no transcript) reads as empty. */
static char *transcript_text(mcp_server_t *srv, const char *tid, off_t *total, int *cut) {
  char *raw;
  size_t len;
  *total = 0;
  *cut = 0;
  if (tfs_transcript_tail_bytes(mcp_store(srv), tid, TRANSCRIPT_RESOURCE_MAX, &raw, &len, total))
    return strdup("");
  *cut = (off_t)len < *total;
  char *clean = mcp_text_clean(raw, len, 0);
  free(raw);
  return clean;
}

void mcp_resources_read(const mcp_req_t *r, json_t *params) {
  char tid[TFS_ID_MAX + 1];
  int kind;
  const char *uri;
  if (uri_param(r, params, tid, &kind, &uri))
    return;
  if (kind == MCP_RES_RECORD) {
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
  off_t total;
  int cut;
  char *text = transcript_text(r->srv, tid, &total, &cut);
  mcp_reply(r, json_pack("{s:[{s:s, s:s, s:s, s:{s:I, s:b}}]}", "contents", "uri", uri, "mimeType",
                         "text/plain", "text", text ? text : "", "_meta", "totalBytes",
                         (json_int_t)total, "truncated", cut));
  free(text);
}

/* The file's identity, size and time: what tells a transcript that grew
 * from a feed event that changed only the record (CPU, a state). */
static void sub_stat(mcp_sub_t *s, struct stat *st) {
  tfs_task_file_t which = s->kind == MCP_RES_TRANSCRIPT ? TFS_FILE_TRANSCRIPT : TFS_FILE_RECORD;
  if (tfs_task_file_stat(mcp_store(s->srv), s->id, which, st))
    memset(st, 0, sizeof *st);
}

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The hub's task feed tells of a task: its state changed (rec), it made
 * progress (json alone: the counters the supervisor saves as output
 * flows, paced by the feed), or it went away. A subscription of that
 * task tells its owner; a transcript's only when the file changed. No
 * id: the feed stopped, and this is its last call. */
static void on_sub_feed(void *arg, const char *id, const tfs_record_t *rec, const char *json) {
  mcp_sub_t *s = arg;
  if (!id) {
    s->fsub = NULL;
    return;
  }
  if (strcmp(id, s->id) || mcp_closing(s->srv))
    return;
  if (s->kind == MCP_RES_TRANSCRIPT) {
    struct stat st;
    sub_stat(s, &st);
    if (same_file(&st, &s->seen))
      return;
    s->seen = st;
  }
  s->fn(s->arg, s);
}

void mcp_sub_close(mcp_sub_t *s) {
  if (s->fsub && s->srv->feed)
    live_tasks_unsubscribe(s->srv->feed, s->fsub);
  free(s);
}

mcp_sub_t *mcp_sub_open(mcp_server_t *srv, const char *uri, const char *id, int kind, mcp_sub_fn fn,
                        void *arg) {
  mcp_sub_t *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->srv = srv;
  snprintf(s->uri, sizeof s->uri, "%s", uri ? uri : "");
  snprintf(s->id, sizeof s->id, "%s", id);
  s->kind = kind;
  s->fn = fn;
  s->arg = arg;
  sub_stat(s, &s->seen);
  /* At the server's end nothing is followed any more. */
  if (!mcp_closing(srv) && live_tasks_subscribe(mcp_feed(srv), on_sub_feed, s, &s->fsub)) {
    free(s);
    return NULL;
  }
  return s;
}

/* A legacy subscription's change: notifications/resources/updated. */
static void legacy_updated(void *arg, mcp_sub_t *s) {
  mcp_notify(arg, "notifications/resources/updated", json_pack("{s:s}", "uri", s->uri));
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
      mcp_sub_close(s);
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
  mcp_sub_t *s = mcp_sub_open(r->srv, uri, tid, kind, legacy_updated, r->sess);
  if (!s) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  s->next = r->sess->subs;
  r->sess->subs = s;
  mcp_reply(r, json_object());
}

void mcp_resources_drop(mcp_session_t *sess) {
  while (sess->subs) {
    mcp_sub_t *s = sess->subs;
    sess->subs = s->next;
    mcp_sub_close(s);
  }
}

mcp_sub_t **mcp_sub_next(mcp_sub_t *s) {
  return &s->next;
}
