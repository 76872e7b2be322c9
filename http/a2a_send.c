/* SendMessage (and SendStreamingMessage): a message with one data part
 * {command: [...], cwd?, taskKey?} starts a task through the start path
 * every face uses (tfs_task_start_create on the loop, then the launch of
 * its supervisor on the thread pool with a store handle of its own, as
 * MCP's start tool does). Idempotent: the task's key is taskKey when
 * given, else one made of the message id, so a message sent again (a
 * client's retry) finds the task it started instead of running the
 * command twice.
 *
 * The answer: with configuration.returnImmediately the task as it stands
 * once launched; else (the specification's default) the task once it has
 * ended, held until then (a2a_stream.c follows it); a streaming call gets
 * the task, then its updates, as SubscribeToTask does. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/a2a.h"
#include "taskfs/supervise.h"

#define LAUNCH_WAIT_MS 10000

typedef struct {
  http_server_t *srv;
  http_req_t *r; /* NULL once the client left */
  json_t *id;
  int stream;    /* SendStreamingMessage */
  int immediate; /* configuration.returnImmediately */
  char **argv;
  char cwd[PATH_MAX];
  char key[TFS_KEY_MAX + 1];
  tfs_start_t st;
  int started; /* st is filled */
} send_t;

static void send_free(send_t *s) {
  tfs_strv_free(s->argv);
  if (s->started)
    tfs_start_free(&s->st);
  json_decref(s->id);
  free(s);
}

/* ---- the message ---------------------------------------------------------- */

/* The idempotency key of a message: "a2a-" and its id when that makes a
 * valid key, else "a2a-h" and a hash of it (FNV-1a, 128 bits as two
 * passes): a resent message maps onto the same key either way; two ids
 * that collide would have to name the same command too to share a task
 * (else the key conflict is refused). */
static void message_key(const char *mid, char out[TFS_KEY_MAX + 1]) {
  snprintf(out, TFS_KEY_MAX + 1, "a2a-%s", mid);
  if (strlen(mid) + 4 <= TFS_KEY_MAX && tfs_key_valid(out))
    return;
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  for (const unsigned char *p = (const unsigned char *)mid; *p; p++) {
    h1 = (h1 ^ *p) * 0x100000001b3ull;
    h2 = (h2 ^ (unsigned char)(*p + 0x5b)) * 0x100000001b3ull;
  }
  snprintf(out, TFS_KEY_MAX + 1, "a2a-h%016llx%016llx", (unsigned long long)h1,
           (unsigned long long)h2);
}

/* The data part's command: an array of strings, checked by core's rule
 * (a program named, sizes the kernel takes). 0, or -1 with msg. */
static int parse_command(json_t *cmd, send_t *s, const char *where, char *msg, size_t msglen) {
  if (!json_is_array(cmd) || !json_array_size(cmd)) {
    snprintf(msg, msglen,
             "%s.command must be a non-empty array of strings (the argv, no shell), like "
             "[\"make\", \"test\"]",
             where);
    return -1;
  }
  size_t n = json_array_size(cmd);
  if (n > TFS_ARGC_MAX) {
    snprintf(msg, msglen, "%s.command has %zu arguments; at most %d are taken", where, n,
             TFS_ARGC_MAX);
    return -1;
  }
  if (!(s->argv = calloc(n + 1, sizeof *s->argv))) {
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *a = json_array_get(cmd, i);
    if (!json_is_string(a)) {
      snprintf(msg, msglen, "%s.command[%zu] must be a string (every argument is text)", where, i);
      return -1;
    }
    if (!(s->argv[i] = strdup(json_string_value(a)))) {
      snprintf(msg, msglen, "out of memory");
      return -1;
    }
  }
  char why[512];
  if (tfs_command_check(s->argv, why, sizeof why)) {
    snprintf(msg, msglen, "%s: %s", where, why);
    return -1;
  }
  return 0;
}

/* The data part: {command, cwd?, taskKey?}. */
static int parse_data(json_t *data, send_t *s, const char *where, char *msg, size_t msglen) {
  const char *k;
  json_t *v;
  json_object_foreach(data, k, v) {
    if (strcmp(k, "command") && strcmp(k, "cwd") && strcmp(k, "taskKey")) {
      snprintf(msg, msglen, "%s: unknown field '%.64s'; the fields are command, cwd, taskKey",
               where, k);
      return -1;
    }
  }
  if (parse_command(json_object_get(data, "command"), s, where, msg, msglen))
    return -1;
  json_t *cwd = json_object_get(data, "cwd");
  char why[512];
  if (cwd && !json_is_string(cwd)) {
    snprintf(msg, msglen, "%s.cwd must be a string: an absolute directory", where);
    return -1;
  }
  if (cwd) {
    if (tfs_cwd_check(json_string_value(cwd), why, sizeof why)) {
      snprintf(msg, msglen, "%s: %s", where, why);
      return -1;
    }
    snprintf(s->cwd, sizeof s->cwd, "%s", json_string_value(cwd));
  } else if (!getcwd(s->cwd, sizeof s->cwd)) {
    snprintf(msg, msglen, "%s: the server's working directory is unknown; pass cwd", where);
    return -1;
  }
  json_t *key = json_object_get(data, "taskKey");
  if (key && (!json_is_string(key) || !tfs_key_valid(json_string_value(key)))) {
    snprintf(msg, msglen, "%s.taskKey must be 1-128 characters of A-Z a-z 0-9 . _ : - (got %.64s)",
             where, json_is_string(key) ? json_string_value(key) : "no string");
    return -1;
  }
  if (key)
    snprintf(s->key, sizeof s->key, "%s", json_string_value(key));
  return 0;
}

/* params: {message: {messageId, role, parts: [..., {data: {...}}, ...],
 * taskId?}, configuration?}. Returns 0, or the error code with msg. */
static int parse_send(http_req_t *r, json_t *params, send_t *s, char *msg, size_t msglen) {
  json_t *m = json_object_get(params, "message");
  if (!json_is_object(m)) {
    snprintf(msg, msglen, "params.message must be a Message object");
    return A2A_INVALID_PARAMS;
  }
  const char *mid = json_string_value(json_object_get(m, "messageId"));
  if (!mid || !*mid) {
    snprintf(msg, msglen, "params.message.messageId must be a non-empty string (a UUID)");
    return A2A_INVALID_PARAMS;
  }
  json_t *tid = json_object_get(m, "taskId");
  if (json_string_length(tid)) {
    struct stat st;
    const char *t = json_string_value(tid);
    if (!tfs_id_valid(t) || tfs_task_stat(a2a_store(r), t, &st)) {
      snprintf(msg, msglen, "task '%.64s' (params.message.taskId) not found in this store", t);
      return A2A_TASK_NOT_FOUND;
    }
    snprintf(msg, msglen,
             "task %s takes no further messages: a taskfs task runs the command it was started "
             "with; send a message without taskId to start another",
             t);
    return A2A_UNSUPPORTED_OPERATION;
  }
  json_t *conf = json_object_get(params, "configuration");
  if (conf && !json_is_object(conf)) {
    snprintf(msg, msglen, "params.configuration must be an object");
    return A2A_INVALID_PARAMS;
  }
  if (json_object_get(conf, "taskPushNotificationConfig")) {
    snprintf(msg, msglen, "push notifications are not supported; use SubscribeToTask or GetTask");
    return A2A_PUSH_NOT_SUPPORTED;
  }
  s->immediate = json_is_true(json_object_get(conf, "returnImmediately"));
  json_t *parts = json_object_get(m, "parts");
  size_t i, n = json_array_size(parts);
  for (i = 0; i < n && !json_is_object(json_object_get(json_array_get(parts, i), "data")); i++)
    ;
  if (i == n && n > 0) {
    snprintf(msg, msglen,
             "params.message.parts has no data part: this agent takes application/json (its "
             "card's input mode), a data part {\"data\": {\"command\": [\"make\", \"test\"], "
             "\"cwd\": \"/abs/dir\", \"taskKey\": \"name\"}}; it does not read text or files");
    return A2A_CONTENT_TYPE_NOT_SUPPORTED;
  }
  if (i == n) {
    snprintf(msg, msglen,
             "params.message.parts needs a data part {\"data\": {\"command\": [\"make\", "
             "\"test\"], \"cwd\": \"/abs/dir\", \"taskKey\": \"name\"}} (cwd and taskKey are "
             "optional): this agent runs commands, it does not read text");
    return A2A_INVALID_PARAMS;
  }
  char where[64];
  snprintf(where, sizeof where, "params.message.parts[%zu].data", i);
  if (parse_data(json_object_get(json_array_get(parts, i), "data"), s, where, msg, msglen))
    return A2A_INVALID_PARAMS;
  if (!s->key[0])
    message_key(mid, s->key);
  return 0;
}

/* ---- the start ------------------------------------------------------------ */

/* The answer once the task is launched (or found). */
static void send_answer(send_t *s) {
  http_req_t *r = s->r;
  if (!r)
    return;
  tfs_store_t *store = http_store(s->srv);
  tfs_record_t rec;
  int err = tfs_task_load(store, s->st.id, &rec);
  if (err) {
    a2a_error(r, s->id, A2A_INTERNAL_ERROR, "task %s was made but cannot be read: %s", s->st.id,
              tfs_strerror(err));
  } else if (s->stream) {
    a2a_follow(r, s->id, &rec, A2A_FOLLOW_STREAM);
  } else if (s->immediate || tfs_state_terminal(rec.state)) {
    a2a_reply(r, s->id, json_pack("{s:o}", "task", a2a_task_json(store, &rec, 1)));
  } else {
    a2a_follow(r, s->id, &rec, A2A_FOLLOW_REPLY);
  }
  tfs_record_free(&rec);
}

static void on_gone(http_req_t *r, void *arg) {
  send_t *s = arg;
  s->r = NULL;
}

static void launch_done(void *arg, int err) {
  send_t *s = arg;
  if (err)
    fprintf(stderr, "taskfs serve: a2a: starting the supervisor of %s failed: %s\n", s->st.id,
            tfs_strerror(err));
  if (s->r) {
    s->r->on_gone = NULL; /* the answer's own now (it may hold again) */
    if (err)
      a2a_error(s->r, s->id, A2A_INTERNAL_ERROR,
                "task %s was created but its supervisor could not be started: %s", s->st.id,
                tfs_strerror(err));
    else
      send_answer(s);
  }
  send_free(s);
}

/* Creates (or finds) the task on the loop; its supervisor, when it needs
 * one, is launched on the thread pool meanwhile the request is held. */
static void start(http_req_t *r, send_t *s) {
  tfs_store_t *store = a2a_store(r);
  char why[1024] = "";
  /* The policies are core's defaults (-1): no restart, the default grace. */
  tfs_task_spec_t spec = {.argv = s->argv,
                          .cwd = s->cwd,
                          .key = s->key,
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1,
                          .why = why,
                          .whylen = sizeof why};
  int err = tfs_task_start_create(store, &spec, &s->st);
  s->started = 1;
  if (err == TFS_EKEYCONFLICT) {
    char id[TFS_ID_MAX + 1] = "?";
    tfs_key_lookup(store, s->key, id);
    a2a_error(r, s->id, A2A_INVALID_PARAMS,
              "key '%s' already names task %s, of another command or cwd: a message id (or "
              "taskKey) is used once per command; send a new messageId",
              s->key, id);
  } else if (err) {
    a2a_error(r, s->id,
              err == TFS_ELIMIT || err == TFS_ECONFIG ? A2A_INVALID_PARAMS : A2A_INTERNAL_ERROR,
              "could not create the task: %s", why[0] ? why : tfs_strerror(err));
  } else if (!s->st.launch) {
    s->r = r;
    send_answer(s);
  } else {
    tfs_launch_opts_t lo = {.wait_ms = LAUNCH_WAIT_MS};
    s->r = r;
    http_hold(r, on_gone, s);
    if (!(err = live_launch(r->srv->hub, &lo, &s->st, "taskfs serve", launch_done, s)))
      return; /* launch_done answers and frees */
    s->r = NULL;
    r->on_gone = NULL;
    a2a_error(r, s->id, A2A_INTERNAL_ERROR, "could not launch task %s: %s", s->st.id,
              tfs_strerror(err));
  }
  send_free(s);
}

void a2a_send_message(http_req_t *r, json_t *id, json_t *params, int stream) {
  send_t *s = calloc(1, sizeof *s);
  if (!s) {
    a2a_error(r, id, A2A_INTERNAL_ERROR, "out of memory");
    return;
  }
  s->srv = r->srv;
  s->id = json_incref(id);
  s->stream = stream;
  char msg[1024];
  int code = parse_send(r, params, s, msg, sizeof msg);
  if (code) {
    a2a_error(r, id, code, "%s", msg);
    send_free(s);
    return;
  }
  start(r, s);
}
