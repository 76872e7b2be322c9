/* A2A 1.0 over JSON-RPC at POST /a2a (the token as a bearer, the gates of
 * guard.c as every route): the envelope (JSON-RPC 2.0, one call a
 * request, answered 200 with a result or an error), the protocol version
 * (A2A-Version, as a header or a query parameter: 1.0 is spoken; none
 * means 0.3, which is not), and the methods that read the store and stop
 * tasks: GetTask, ListTasks, CancelTask. SendMessage is a2a_send.c,
 * SubscribeToTask a2a_stream.c. Push notifications and the extended card
 * are not offered (the card says so) and are refused with the codes the
 * specification gives. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/a2a.h"

tfs_store_t *a2a_store(http_req_t *r) {
  return http_store(r->srv);
}

static char *envelope(json_t *id, const char *field, json_t *value, size_t *len) {
  json_t *m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), field,
                        value ? value : json_null());
  char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
  json_decref(m);
  *len = text ? strlen(text) : 0;
  return text;
}

void a2a_reply(http_req_t *r, json_t *id, json_t *result) {
  size_t len;
  char *text = envelope(id, "result", result, &len);
  if (!text) {
    a2a_error(r, id, A2A_INTERNAL_ERROR, "out of memory");
    return;
  }
  http_respond_take(r, MHD_HTTP_OK, "application/json", text, len);
}

static json_t *error_object(int code, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  return json_pack("{s:i, s:s%}", "code", code, "message", msg, strlen(msg));
}

void a2a_error(http_req_t *r, json_t *id, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  json_t *err = error_object(code, fmt, ap);
  va_end(ap);
  size_t len;
  char *text = envelope(id, "error", err, &len);
  if (!text) {
    http_respond_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return;
  }
  http_respond_take(r, MHD_HTTP_OK, "application/json", text, len);
}

static void stream_message(http_req_t *r, json_t *id, const char *field, json_t *value) {
  size_t len;
  char *text = envelope(id, field, value, &len);
  if (!text)
    return;
  http_stream_event(r, "message", NULL, text, len);
  free(text);
}

void a2a_stream_event(http_req_t *r, json_t *id, json_t *result) {
  stream_message(r, id, "result", result);
}

void a2a_stream_error(http_req_t *r, json_t *id, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  json_t *err = error_object(code, fmt, ap);
  va_end(ap);
  stream_message(r, id, "error", err);
}

int a2a_param_id(http_req_t *r, json_t *id, json_t *params, char out[TFS_ID_MAX + 1]) {
  json_t *jid = json_object_get(params, "id");
  if (!json_is_string(jid) || !json_string_length(jid)) {
    a2a_error(r, id, A2A_INVALID_PARAMS,
              "params.id must be the id of a task (a string, as SendMessage or ListTasks gave it)");
    return -1;
  }
  const char *tid = json_string_value(jid);
  struct stat st;
  if (!tfs_id_valid(tid) || tfs_task_stat(a2a_store(r), tid, &st)) {
    a2a_error(r, id, A2A_TASK_NOT_FOUND,
              "task '%.64s' not found in this store (ListTasks shows the tasks there are)", tid);
    return -1;
  }
  snprintf(out, TFS_ID_MAX + 1, "%s", tid);
  return 0;
}

/* The record of params.id: 0, or answered and -1. */
static int load_task(http_req_t *r, json_t *id, json_t *params, tfs_record_t *rec) {
  char tid[TFS_ID_MAX + 1];
  if (a2a_param_id(r, id, params, tid))
    return -1;
  int err = tfs_task_load(a2a_store(r), tid, rec);
  if (err == TFS_ENOTASK) {
    a2a_error(r, id, A2A_TASK_NOT_FOUND, "task '%s' not found in this store", tid);
    return -1;
  }
  if (err) {
    a2a_error(r, id, A2A_INTERNAL_ERROR, "cannot read task %s: %s", tid, tfs_strerror(err));
    return -1;
  }
  return 0;
}

/* historyLength, where a method takes it: no history is kept (a task's
 * one message is its command, in metadata), but a bad value is still
 * refused. */
static int check_history(http_req_t *r, json_t *id, json_t *params) {
  json_t *h = json_object_get(params, "historyLength");
  if (h && (!json_is_integer(h) || json_integer_value(h) < 0)) {
    a2a_error(r, id, A2A_INVALID_PARAMS, "params.historyLength must be a non-negative integer");
    return -1;
  }
  return 0;
}

static void get_task(http_req_t *r, json_t *id, json_t *params) {
  tfs_record_t rec;
  if (check_history(r, id, params) || load_task(r, id, params, &rec))
    return;
  a2a_reply(r, id, a2a_task_json(a2a_store(r), &rec, 1));
  tfs_record_free(&rec);
}

/* CancelTask: a stop request through the store, as the mount, the CLI and
 * MCP make it; the supervisor stops the process tree (SIGTERM, its grace,
 * SIGKILL) and records the task cancelled. The answer waits for that end
 * (a2a_follow), so the Task it carries is canceled (or whatever end beat
 * the request to it). */
static void cancel_task(http_req_t *r, json_t *id, json_t *params) {
  tfs_record_t rec;
  if (load_task(r, id, params, &rec))
    return;
  tfs_store_t *store = a2a_store(r);
  int err = tfs_state_terminal(rec.state) ? TFS_EFINISHED : 0;
  if (!err) {
    char who[64];
    snprintf(who, sizeof who, "a2a (taskfs serve pid %d)", (int)getpid());
    err = tfs_cancel_request(store, rec.id, who);
  }
  if (err == TFS_EFINISHED) {
    tfs_record_t now;
    if (tfs_task_load(store, rec.id, &now) == 0) {
      tfs_record_free(&rec);
      rec = now;
    } else {
      tfs_record_free(&now);
    }
    a2a_error(r, id, A2A_TASK_NOT_CANCELABLE,
              "task %s cannot be canceled: it has already ended (%s)", rec.id,
              tfs_state_name(rec.state));
  } else if (err) {
    a2a_error(r, id, A2A_INTERNAL_ERROR, "cannot request a stop of task %s: %s", rec.id,
              tfs_strerror(err));
  } else {
    tfs_record_t now;
    const tfs_record_t *cur = tfs_task_load(store, rec.id, &now) == 0 ? &now : &rec;
    if (tfs_state_terminal(cur->state))
      a2a_reply(r, id, a2a_task_json(store, cur, 1));
    else
      a2a_follow(r, id, cur, A2A_FOLLOW_CANCEL);
    tfs_record_free(&now);
  }
  tfs_record_free(&rec);
}

/* ---- ListTasks ------------------------------------------------------------ */

#define LIST_DEFAULT 50
#define LIST_MAX 100

typedef struct {
  tfs_store_t *store;
  json_t *tasks;
  const char *context; /* contextId: the one task of that id (its own context) */
  int64_t after_ms;    /* statusTimestampAfter */
  int artifacts;
} list_t;

static int list_add(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  list_t *l = arg;
  if (l->after_ms && a2a_status_ms(rec) < l->after_ms)
    return 0;
  json_array_append_new(l->tasks, a2a_task_json(l->store, rec, l->artifacts));
  return 0;
}

/* The page's parameters: 0, or answered and -1. */
static int list_params(http_req_t *r, json_t *id, json_t *params, tfs_page_t *pg, list_t *l,
                       int *none) {
  json_t *ps = json_object_get(params, "pageSize");
  if (ps &&
      (!json_is_integer(ps) || json_integer_value(ps) < 1 || json_integer_value(ps) > LIST_MAX)) {
    a2a_error(r, id, A2A_INVALID_PARAMS, "params.pageSize must be an integer from 1 to %d",
              LIST_MAX);
    return -1;
  }
  pg->limit = ps ? (size_t)json_integer_value(ps) : LIST_DEFAULT;
  json_t *tok = json_object_get(params, "pageToken");
  if (tok && !json_is_string(tok)) {
    a2a_error(r, id, A2A_INVALID_PARAMS,
              "params.pageToken must be a string: the nextPageToken of the previous page");
    return -1;
  }
  pg->cursor = json_string_value(tok);
  json_t *status = json_object_get(params, "status");
  if (status &&
      (!json_is_string(status) || a2a_state_filter(json_string_value(status), &pg->states, none))) {
    a2a_error(r, id, A2A_INVALID_PARAMS,
              "params.status must be a TaskState: TASK_STATE_SUBMITTED, TASK_STATE_WORKING, "
              "TASK_STATE_COMPLETED, TASK_STATE_FAILED, TASK_STATE_CANCELED, "
              "TASK_STATE_REJECTED, TASK_STATE_INPUT_REQUIRED or TASK_STATE_AUTH_REQUIRED");
    return -1;
  }
  json_t *ctx = json_object_get(params, "contextId");
  if (ctx && !json_is_string(ctx)) {
    a2a_error(r, id, A2A_INVALID_PARAMS, "params.contextId must be a string");
    return -1;
  }
  l->context = json_string_length(ctx) ? json_string_value(ctx) : NULL;
  json_t *after = json_object_get(params, "statusTimestampAfter");
  if (after && (!json_is_string(after) || tfs_time_parse(json_string_value(after), &l->after_ms))) {
    a2a_error(r, id, A2A_INVALID_PARAMS,
              "params.statusTimestampAfter must be a time in ISO 8601 UTC, like "
              "2026-01-31T12:00:00.000Z");
    return -1;
  }
  json_t *art = json_object_get(params, "includeArtifacts");
  if (art && !json_is_boolean(art)) {
    a2a_error(r, id, A2A_INVALID_PARAMS, "params.includeArtifacts must be true or false");
    return -1;
  }
  l->artifacts = json_is_true(art);
  return check_history(r, id, params);
}

/* ListTasks: a page of the core listing, newest first (tasks are ordered
 * by creation, which the ids carry, not by their last change: the cursor
 * is an id). totalSize counts the tasks in the store. */
static void list_tasks(http_req_t *r, json_t *id, json_t *params) {
  tfs_page_t pg = {0};
  list_t l = {.store = a2a_store(r)};
  int none = 0, err;
  if (list_params(r, id, params, &pg, &l, &none))
    return;
  l.tasks = json_array();
  char msg[300];
  if (l.context) {
    /* Every task is its own context: the one task of that id, if it
     * passes the filters. */
    if (!none && tfs_id_valid(l.context)) {
      tfs_record_t rec;
      if (tfs_task_load(l.store, l.context, &rec) == 0 &&
          (!pg.states || (pg.states & TFS_STATE_BIT(rec.state))))
        list_add(&rec, NULL, 0, &l);
      tfs_record_free(&rec);
    }
    pg.total = json_array_size(l.tasks);
  } else if (none) {
    pg.total = (size_t)tfs_task_count(l.store);
  } else if ((err = tfs_task_page(l.store, &pg, list_add, &l, msg, sizeof msg))) {
    json_decref(l.tasks);
    if (err == TFS_ENOTASK)
      a2a_error(r, id, A2A_INVALID_PARAMS, "params.pageToken: %s", msg);
    else
      a2a_error(r, id, A2A_INTERNAL_ERROR, "%s", msg);
    return;
  }
  a2a_reply(r, id,
            json_pack("{s:o, s:s, s:I, s:I}", "tasks", l.tasks, "nextPageToken", pg.next,
                      "pageSize", (json_int_t)pg.limit, "totalSize", (json_int_t)pg.total));
}

/* ---- the envelope ----------------------------------------------------------- */

/* A2A-Version (header, else query parameter): Major.Minor, the patch
 * ignored; none or empty means 0.3 (the specification's rule). */
static int version_ok(http_req_t *r, char *got, size_t gotlen) {
  const char *v = http_header(r, "A2A-Version");
  if (!v || !*v)
    v = http_query(r, "A2A-Version");
  if (!v || !*v) {
    snprintf(got, gotlen, "none (which means 0.3)");
    return 0;
  }
  snprintf(got, gotlen, "%.40s", v);
  unsigned major = 0, minor = 0;
  char rest = 0;
  int n = sscanf(v, "%u.%u%c", &major, &minor, &rest);
  return (n == 1 || n == 2 || (n == 3 && rest == '.')) && major == 1 && minor == 0;
}

static void dispatch(http_req_t *r, json_t *id, const char *method, json_t *params) {
  static const char *const push[] = {
      "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
      "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"};
  if (!strcmp(method, "SendMessage"))
    return a2a_send_message(r, id, params, 0);
  if (!strcmp(method, "SendStreamingMessage"))
    return a2a_send_message(r, id, params, 1);
  if (!strcmp(method, "GetTask"))
    return get_task(r, id, params);
  if (!strcmp(method, "ListTasks"))
    return list_tasks(r, id, params);
  if (!strcmp(method, "CancelTask"))
    return cancel_task(r, id, params);
  if (!strcmp(method, "SubscribeToTask"))
    return a2a_subscribe(r, id, params);
  for (size_t i = 0; i < sizeof push / sizeof push[0]; i++)
    if (!strcmp(method, push[i]))
      return a2a_error(r, id, A2A_PUSH_NOT_SUPPORTED,
                       "%s: push notifications are not supported (the agent card says "
                       "capabilities.pushNotifications false); use SubscribeToTask or GetTask",
                       method);
  if (!strcmp(method, "GetExtendedAgentCard"))
    return a2a_error(r, id, A2A_UNSUPPORTED_OPERATION,
                     "GetExtendedAgentCard: there is no extended agent card (the public one at "
                     "/.well-known/agent-card.json is all)");
  a2a_error(r, id, A2A_METHOD_NOT_FOUND,
            "method '%.80s' not found; A2A 1.0 methods here: SendMessage, SendStreamingMessage, "
            "GetTask, ListTasks, CancelTask, SubscribeToTask",
            method);
}

static int content_type_ok(const char *ct) {
  if (!ct)
    return 1; /* curl -d without -H: take it */
  size_t n = strcspn(ct, ";");
  while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
    n--;
  return (n == 16 && !strncasecmp(ct, "application/json", 16)) ||
         (n == 20 && !strncasecmp(ct, "application/a2a+json", 20));
}

void http_a2a_handle(http_req_t *r) {
  if (!content_type_ok(http_header(r, "Content-Type")))
    return a2a_error(r, NULL, A2A_INVALID_REQUEST,
                     "Content-Type must be application/json (one JSON-RPC 2.0 request)");
  json_error_t jerr;
  json_t *msg = json_loadb(r->body ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &jerr);
  if (!msg)
    return a2a_error(r, NULL, A2A_PARSE_ERROR,
                     "Invalid JSON payload: %s (line %d, column %d); the body must be one "
                     "JSON-RPC 2.0 request",
                     jerr.text, jerr.line, jerr.column);
  json_t *id = json_object_get(msg, "id");
  const char *method = json_string_value(json_object_get(msg, "method"));
  json_t *params = json_object_get(msg, "params");
  char got[64];
  if (!json_is_object(msg))
    a2a_error(r, NULL, A2A_INVALID_REQUEST,
              "Request payload validation error: the body must be one JSON-RPC 2.0 request "
              "object (batches are not taken)");
  else if (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id))
    a2a_error(r, NULL, A2A_INVALID_REQUEST,
              "Request payload validation error: id must be a string or an integer");
  else if (!id || json_is_null(id))
    a2a_error(r, NULL, A2A_INVALID_REQUEST,
              "Request payload validation error: a call needs an id (A2A has no notifications)");
  else if (strcmp(json_string_value(json_object_get(msg, "jsonrpc")) ?: "", "2.0"))
    a2a_error(r, id, A2A_INVALID_REQUEST,
              "Request payload validation error: jsonrpc must be \"2.0\"");
  else if (!method)
    a2a_error(r, id, A2A_INVALID_REQUEST,
              "Request payload validation error: method must be a string");
  else if (params && !json_is_object(params))
    a2a_error(r, id, A2A_INVALID_PARAMS, "params must be an object");
  else if (!version_ok(r, got, sizeof got))
    a2a_error(r, id, A2A_VERSION_NOT_SUPPORTED,
              "A2A-Version %s is not supported: this agent speaks A2A 1.0; send the header "
              "A2A-Version: 1.0",
              got);
  else {
    json_t *empty = params ? NULL : json_object();
    dispatch(r, id, method, params ? params : empty);
    json_decref(empty);
  }
  json_decref(msg);
}
