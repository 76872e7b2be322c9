/* subscriptions/listen (2026-07-28): one long-lived request whose answer
 * is a stream of notifications, each tagged with the request's id in
 * _meta["io.modelcontextprotocol/subscriptionId"]. The filter taskfs
 * honours: resourceSubscriptions (its record and transcript resources,
 * notifications/resources/updated) and, with the tasks extension declared,
 * taskIds (notifications/tasks with the DetailedTask, on each change of
 * status). The tool, prompt and resource lists do not change while a
 * server runs, so their listChanged filters are not honoured (left out of
 * the acknowledgement). The stream ends on notifications/cancelled for its
 * id (nothing more is sent) or at the server's end, which answers the
 * request (the graceful end of the subscriptions page). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mcp/internal.h"

typedef struct lsub lsub_t;
struct lsub {
  lsub_t *next;
  mcp_listen_t *listen;
  mcp_sub_t *sub;
  char status[16]; /* tasks: the status last told */
};

struct mcp_listen {
  mcp_listen_t *next;
  mcp_req_t req; /* kept: its id is the subscription id */
  lsub_t *subs;
};

/* A notification on the stream (params stolen), sent as relating to the
 * listen request so that a transport with a stream per request puts it on
 * the listen's. */
static void stream_notify(mcp_listen_t *l, const char *method, json_t *params) {
  json_object_set_new(params, "_meta", json_pack("{s:O}", MCP_META_SUBSCRIPTION, l->req.id));
  mcp_send(l->req.sess, l->req.id,
           json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params));
}

static void on_resource(void *arg, mcp_sub_t *s) {
  lsub_t *ls = arg;
  stream_notify(ls->listen, "notifications/resources/updated",
                json_pack("{s:s}", "uri", mcp_sub_uri(s)));
}

static void on_task(void *arg, mcp_sub_t *s) {
  lsub_t *ls = arg;
  tfs_record_t rec;
  if (tfs_task_ended(mcp_store(ls->listen->req.srv), mcp_sub_task(s), &rec) < 0) {
    tfs_record_free(&rec);
    return;
  }
  const char *status = mcp_task_status(&rec);
  if (strcmp(status, ls->status)) {
    snprintf(ls->status, sizeof ls->status, "%s", status);
    json_t *t = mcp_task_detailed(&ls->listen->req, &rec);
    if (t)
      stream_notify(ls->listen, "notifications/tasks", t);
  }
  tfs_record_free(&rec);
}

static void listen_free(mcp_listen_t *l) {
  while (l->subs) {
    lsub_t *ls = l->subs;
    l->subs = ls->next;
    mcp_sub_close(ls->sub);
    free(ls);
  }
  mcp_req_release(&l->req);
  free(l);
}

/* Adds a subscription of kind to task id; returns 0, or -1 when out of
 * memory. */
static int add(mcp_listen_t *l, const char *uri, const char *id, int kind, const char *status) {
  lsub_t *ls = calloc(1, sizeof *ls);
  if (!ls)
    return -1;
  ls->listen = l;
  snprintf(ls->status, sizeof ls->status, "%s", status ? status : "");
  ls->sub =
      mcp_sub_open(l->req.srv, uri, id, kind, kind == MCP_RES_TASK ? on_task : on_resource, ls);
  if (!ls->sub) {
    free(ls);
    return -1;
  }
  ls->next = l->subs;
  l->subs = ls;
  return 0;
}

/* The resources of the filter that name an existing task's record or
 * transcript; the honoured ones are appended to ok. */
static int add_resources(mcp_listen_t *l, json_t *uris, json_t *ok) {
  size_t i;
  json_t *u;
  json_array_foreach(uris, i, u) {
    char id[TFS_ID_MAX + 1];
    int kind;
    struct stat st;
    const char *uri = json_string_value(u);
    if (!uri || mcp_resource_parse(uri, id, &kind) ||
        tfs_task_stat(mcp_store(l->req.srv), id, &st) == TFS_ENOTASK)
      continue; /* not a resource of this store: not honoured */
    if (add(l, uri, id, kind, NULL))
      return -1;
    json_array_append(ok, u);
  }
  return 0;
}

static int add_tasks(mcp_listen_t *l, json_t *ids, json_t *ok) {
  size_t i;
  json_t *v;
  json_array_foreach(ids, i, v) {
    const char *id = json_string_value(v);
    tfs_record_t rec;
    if (!id || !tfs_id_valid(id))
      continue;
    if (tfs_task_ended(mcp_store(l->req.srv), id, &rec) < 0) {
      tfs_record_free(&rec);
      continue; /* no such task here: not honoured */
    }
    int err = add(l, NULL, id, MCP_RES_TASK, mcp_task_status(&rec));
    tfs_record_free(&rec);
    if (err)
      return -1;
    json_array_append(ok, v);
  }
  return 0;
}

/* Checks the filter's fields; replies and returns -1 if one is wrong. */
static int check_filter(const mcp_req_t *r, json_t *f) {
  static const char *const arrays[] = {"resourceSubscriptions", "taskIds"};
  if (f && !json_is_object(f)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.notifications must be an object");
    return -1;
  }
  for (size_t i = 0; i < 2; i++) {
    json_t *a = json_object_get(f, arrays[i]);
    if (a && !json_is_array(a)) {
      mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                      "params.notifications.%s must be an array of strings", arrays[i]);
      return -1;
    }
  }
  if (json_object_get(f, "taskIds") &&
      mcp_require_caps(r, MCP_CAP_TASKS, "subscriptions/listen with notifications.taskIds"))
    return -1;
  return 0;
}

void mcp_listen(const mcp_req_t *r, json_t *params) {
  json_t *f = json_object_get(params, "notifications");
  if (check_filter(r, f) || mcp_admit(r))
    return;
  mcp_listen_t *l = calloc(1, sizeof *l);
  json_t *res_ok = json_array(), *task_ok = json_array();
  if (!l) {
    json_decref(res_ok);
    json_decref(task_ok);
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  mcp_req_keep(&l->req, r);
  json_t *uris = json_object_get(f, "resourceSubscriptions");
  json_t *ids = json_object_get(f, "taskIds");
  if (add_resources(l, uris, res_ok) || add_tasks(l, ids, task_ok)) {
    json_decref(res_ok);
    json_decref(task_ok);
    listen_free(l);
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  /* The acknowledgement first: what is honoured of each type asked for. */
  json_t *honoured = json_object();
  if (uris)
    json_object_set(honoured, "resourceSubscriptions", res_ok);
  if (ids)
    json_object_set(honoured, "taskIds", task_ok);
  json_decref(res_ok);
  json_decref(task_ok);
  stream_notify(l, "notifications/subscriptions/acknowledged",
                json_pack("{s:o}", "notifications", honoured));
  l->next = r->sess->listens;
  r->sess->listens = l;
}

/* Unlinks the stream of s with id (NULL: the first); returns it. */
static mcp_listen_t *unlink_listen(mcp_session_t *s, const json_t *id) {
  for (mcp_listen_t **pp = &s->listens; *pp; pp = &(*pp)->next)
    if (!id || json_equal((*pp)->req.id, (json_t *)id)) {
      mcp_listen_t *l = *pp;
      *pp = l->next;
      return l;
    }
  return NULL;
}

void mcp_listen_drop(mcp_session_t *s, const json_t *id) {
  mcp_listen_t *l = unlink_listen(s, id);
  if (l)
    listen_free(l);
}

void mcp_listen_drop_session(mcp_session_t *s) {
  mcp_listen_t *l;
  while ((l = unlink_listen(s, NULL)))
    listen_free(l);
}

void mcp_listen_flush(mcp_server_t *srv) {
  for (mcp_session_t *s = srv->sessions; s; s = s->next) {
    mcp_listen_t *l;
    while ((l = unlink_listen(s, NULL))) {
      mcp_reply(&l->req, json_pack("{s:{s:O}}", "_meta", MCP_META_SUBSCRIPTION, l->req.id));
      listen_free(l);
    }
  }
}
