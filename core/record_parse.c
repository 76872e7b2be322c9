/* record.json text to a record. Parsing is strict on types (a present,
 * non-null field must have its type) and tolerant of missing optional
 * fields, so that older or newer writers of version 1 stay readable. Errors
 * name the field: "record.json: field 'state': ...". */
#include "core/internal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  char *err;
  size_t errlen;
} perr_t;

static int bad(perr_t *p, const char *field, const char *what) {
  if (p->err && p->errlen)
    snprintf(p->err, p->errlen, "record.json: field '%s': %s", field, what);
  return TFS_ECORRUPT;
}

/* Fetches an optional field: NULL if absent or null. */
static json_t *opt(json_t *obj, const char *name) {
  json_t *v = json_object_get(obj, name);
  return json_is_null(v) ? NULL : v;
}

static int get_int(perr_t *p, json_t *obj, const char *name, int64_t lo, int64_t hi, int64_t *out) {
  json_t *v = opt(obj, name);
  if (!v)
    return 0;
  if (!json_is_integer(v))
    return bad(p, name, "expected an integer");
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return bad(p, name, "out of range");
  *out = x;
  return 0;
}

static int get_time(perr_t *p, json_t *obj, const char *name, int64_t *out) {
  json_t *v = opt(obj, name);
  if (!v)
    return 0;
  if (!json_is_string(v) || tfs_time_parse(json_string_value(v), out))
    return bad(p, name, "expected an RFC 3339 time");
  return 0;
}

static int get_str(perr_t *p, json_t *obj, const char *name, char **out) {
  json_t *v = opt(obj, name);
  if (!v)
    return 0;
  if (!json_is_string(v))
    return bad(p, name, "expected a string");
  if (!(*out = strdup(json_string_value(v))))
    return -ENOMEM;
  return 0;
}

static int get_strv(perr_t *p, json_t *obj, const char *name, char ***out, int *count) {
  json_t *v = opt(obj, name);
  if (!v)
    return 0;
  if (!json_is_array(v))
    return bad(p, name, "expected an array of strings");
  size_t n = json_array_size(v);
  char **a = calloc(n + 1, sizeof *a);
  if (!a)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    if (!json_is_string(e)) {
      tfs__strv_free(a);
      return bad(p, name, "expected an array of strings");
    }
    if (!(a[i] = strdup(json_string_value(e)))) {
      tfs__strv_free(a);
      return -ENOMEM;
    }
  }
  *out = a;
  *count = (int)n;
  return 0;
}

/* One exact-bytes element: a plain string or {"b64": "..."}. */

/* One exact-bytes element: a plain string or {"b64": "..."}. */
static int get_bytes_elem(perr_t *p, json_t *e, const char *name, char **out) {
  json_t *b = json_is_object(e) ? json_object_get(e, "b64") : NULL;
  if (json_is_string(e)) {
    *out = strdup(json_string_value(e));
  } else if (json_is_string(b)) {
    if (!(*out = tfs__b64_decode(json_string_value(b))))
      return bad(p, name, "expected base64 bytes without NUL");
  } else {
    return bad(p, name, "expected a string or {\"b64\": string}");
  }
  return *out ? 0 : -ENOMEM;
}

/* "commandBytes" and "cwdBytes", when present, replace the display forms
 * already parsed from "command" and "cwd". */
static int get_exact(perr_t *p, json_t *j, tfs_record_t *rec) {
  json_t *v = opt(j, "commandBytes");
  int err;
  if (v) {
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n < 1)
      return bad(p, "commandBytes", "expected a non-empty array");
    char **a = calloc(n + 1, sizeof *a);
    if (!a)
      return -ENOMEM;
    for (size_t i = 0; i < n; i++)
      if ((err = get_bytes_elem(p, json_array_get(v, i), "commandBytes", &a[i]))) {
        tfs__strv_free(a);
        return err;
      }
    if (!a[0][0]) {
      tfs__strv_free(a);
      return bad(p, "commandBytes", "expected a non-empty program name");
    }
    tfs__strv_free(rec->argv);
    rec->argv = a;
    rec->argc = (int)n;
  }
  if ((v = opt(j, "cwdBytes"))) {
    char *c;
    if ((err = get_bytes_elem(p, v, "cwdBytes", &c)))
      return err;
    free(rec->cwd);
    rec->cwd = c;
  }
  return 0;
}

static int get_obj(perr_t *p, json_t *obj, const char *name, json_t **out) {
  json_t *v = opt(obj, name);
  *out = NULL;
  if (!v)
    return 0;
  if (!json_is_object(v))
    return bad(p, name, "expected an object");
  *out = v;
  return 0;
}

/* An integer field that fits an int. */
static int get_int32(perr_t *p, json_t *obj, const char *name, int64_t lo, int64_t hi, int *out) {
  int64_t x = *out;
  int err = get_int(p, obj, name, lo, hi, &x);
  if (!err)
    *out = (int)x;
  return err;
}

/* v, id and key: what makes the record this task's. */
static int parse_identity(perr_t *p, json_t *j, tfs_record_t *rec) {
  json_t *v;
  if (!json_is_object(j))
    return bad(p, "(top)", "expected an object");
  v = json_object_get(j, "v");
  if (!json_is_integer(v) || json_integer_value(v) != TFS_RECORD_VERSION)
    return bad(p, "v", "expected version 1");
  v = json_object_get(j, "id");
  if (!json_is_string(v) || !tfs_id_valid(json_string_value(v)))
    return bad(p, "id", "expected a task id");
  snprintf(rec->id, sizeof rec->id, "%s", json_string_value(v));
  if ((v = opt(j, "key"))) {
    if (!json_is_string(v) || !tfs_key_valid(json_string_value(v)))
      return bad(p, "key", "expected a task key or null");
    snprintf(rec->key, sizeof rec->key, "%s", json_string_value(v));
  }
  return 0;
}

/* command, cwd (their exact bytes when given) and env. */
static int parse_command(perr_t *p, json_t *j, tfs_record_t *rec) {
  int err = get_strv(p, j, "command", &rec->argv, &rec->argc);
  if (err)
    return err;
  if (!rec->argv || rec->argc < 1)
    return bad(p, "command", "expected a non-empty array of strings");
  if ((err = get_str(p, j, "cwd", &rec->cwd)) || (err = get_exact(p, j, rec)))
    return err;
  return get_strv(p, j, "env", &rec->env_names, &rec->env_count);
}

/* state, exitCode, signal, reason and the times. */
static int parse_outcome(perr_t *p, json_t *j, tfs_record_t *rec) {
  json_t *v = json_object_get(j, "state");
  int err;
  if (!json_is_string(v) || tfs_state_parse(json_string_value(v), &rec->state))
    return bad(p, "state", "expected queued|running|completed|failed|cancelled|lost");
  rec->exit_code = -1;
  rec->signal = 0;
  if ((err = get_int32(p, j, "exitCode", 0, 255, &rec->exit_code)) ||
      (err = get_int32(p, j, "signal", 0, 128, &rec->signal)))
    return err;
  if ((err = get_str(p, j, "reason", &rec->reason)) ||
      (err = get_time(p, j, "created", &rec->created_ms)) ||
      (err = get_time(p, j, "started", &rec->started_ms)) ||
      (err = get_time(p, j, "ended", &rec->ended_ms)))
    return err;
  return get_time(p, j, "aliveAt", &rec->alive_ms);
}

/* supervisor {pid, started, exe, host} and worker {pid, pgid}. */
static int parse_processes(perr_t *p, json_t *j, tfs_record_t *rec) {
  json_t *o;
  int err, pid = 0, pgid = 0;
  if ((err = get_obj(p, j, "supervisor", &o)))
    return err;
  if (o) {
    if ((err = get_int32(p, o, "pid", 0, INT32_MAX, &pid)) ||
        (err = get_time(p, o, "started", &rec->supervisor_started_ms)) ||
        (err = get_str(p, o, "exe", &rec->supervisor_exe)) ||
        (err = get_str(p, o, "host", &rec->supervisor_host)))
      return err;
    rec->supervisor_pid = (pid_t)pid;
  }
  if ((err = get_obj(p, j, "worker", &o)))
    return err;
  if (o) {
    pid = 0;
    if ((err = get_int32(p, o, "pid", 0, INT32_MAX, &pid)) ||
        (err = get_int32(p, o, "pgid", 0, INT32_MAX, &pgid)))
      return err;
    rec->worker_pid = (pid_t)pid;
    rec->worker_pgid = (pid_t)pgid;
  }
  return 0;
}

/* restart.exits: the newest TFS_LAST_EXITS if a writer kept more. */
static int parse_exits(perr_t *p, json_t *v, tfs_record_t *rec) {
  if (!json_is_array(v))
    return bad(p, "exits", "expected an array");
  size_t n = json_array_size(v);
  size_t from = n > TFS_LAST_EXITS ? n - TFS_LAST_EXITS : 0;
  for (size_t i = from; i < n; i++) {
    json_t *e = json_array_get(v, i), *req;
    tfs_exit_t *x = &rec->exits[rec->nexits];
    int err;
    if (!json_is_object(e))
      return bad(p, "exits", "expected objects");
    memset(x, 0, sizeof *x);
    x->exit_code = -1;
    if ((err = get_time(p, e, "started", &x->started_ms)) ||
        (err = get_time(p, e, "ended", &x->ended_ms)) ||
        (err = get_int32(p, e, "exitCode", 0, 255, &x->exit_code)) ||
        (err = get_int32(p, e, "signal", 0, 128, &x->signal)))
      return err;
    if ((req = opt(e, "requested"))) {
      if (!json_is_boolean(req))
        return bad(p, "requested", "expected a boolean");
      x->requested = json_is_true(req);
    }
    rec->nexits++;
  }
  return 0;
}

/* restart {policy, minUptimeMs, maxRestarts, graceMs, count, exits}. */
static int parse_restart(perr_t *p, json_t *j, tfs_record_t *rec) {
  json_t *o, *v;
  int err = get_obj(p, j, "restart", &o);
  if (err || !o)
    return err;
  if ((v = opt(o, "policy")) &&
      (!json_is_string(v) || tfs_restart_parse(json_string_value(v), &rec->restart)))
    return bad(p, "policy", "expected no|on-failure|always");
  if ((err = get_int(p, o, "minUptimeMs", 0, INT64_MAX, &rec->min_uptime_ms)) ||
      (err = get_int32(p, o, "maxRestarts", 0, INT32_MAX, &rec->max_restarts)) ||
      (err = get_int(p, o, "graceMs", 0, INT64_MAX, &rec->grace_ms)) ||
      (err = get_int32(p, o, "count", 0, INT32_MAX, &rec->restarts)))
    return err;
  return (v = opt(o, "exits")) ? parse_exits(p, v, rec) : 0;
}

static int parse_important_list(perr_t *p, json_t *arr, const char *name, tfs_important_t *imp) {
  if (!arr)
    return 0;
  if (!json_is_array(arr))
    return bad(p, name, "expected an array");
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *e = json_array_get(arr, i), *line, *kind, *text;
    tfs_line_kind_t k;
    if (!json_is_object(e) || !json_is_integer(line = json_object_get(e, "line")) ||
        !json_is_string(kind = json_object_get(e, "kind")) ||
        !json_is_string(text = json_object_get(e, "text")) ||
        tfs_line_kind_parse(json_string_value(kind), &k))
      return bad(p, name, "expected {line, kind, text} entries");
    int err = tfs_important_add(imp, json_integer_value(line), k, json_string_value(text),
                                json_string_length(text));
    if (err)
      return err;
  }
  return 0;
}

/* cancel {by, at}, transcript {lines, bytes} and important {k, total,
 * first, last}. */
static int parse_counters(perr_t *p, json_t *j, tfs_record_t *rec) {
  json_t *o;
  int err;
  if ((err = get_obj(p, j, "cancel", &o)))
    return err;
  if (o && ((err = get_str(p, o, "by", &rec->cancel_by)) ||
            (err = get_time(p, o, "at", &rec->cancel_ms))))
    return err;
  if ((err = get_obj(p, j, "transcript", &o)))
    return err;
  if (o && ((err = get_int(p, o, "lines", 0, INT64_MAX, &rec->lines)) ||
            (err = get_int(p, o, "bytes", 0, INT64_MAX, &rec->bytes))))
    return err;
  if ((err = get_obj(p, j, "important", &o)) || !o)
    return err;
  int64_t k = TFS_IMPORTANT_K_DEFAULT, total = 0;
  if ((err = get_int(p, o, "k", 1, TFS_IMPORTANT_K_MAX, &k)) ||
      (err = get_int(p, o, "total", 0, INT64_MAX, &total)))
    return err;
  tfs_important_free(&rec->important);
  memset(&rec->important, 0, sizeof rec->important);
  if ((err = tfs_important_init(&rec->important, (int)k)))
    return err;
  if ((err = parse_important_list(p, json_object_get(o, "first"), "first", &rec->important)) ||
      (err = parse_important_list(p, json_object_get(o, "last"), "last", &rec->important)))
    return err;
  if (total > rec->important.total)
    rec->important.total = total;
  return 0;
}

int tfs_record_parse(const char *json, size_t len, tfs_record_t *rec, char *err, size_t errlen) {
  json_error_t jerr;
  perr_t p = {err, errlen};
  tfs_record_init(rec);
  if (err && errlen)
    err[0] = '\0';
  if (len > TFS_RECORD_MAX) {
    bad(&p, "(top)", "record larger than 4 MiB");
    tfs_record_free(rec);
    return TFS_ECORRUPT;
  }
  /* JSON_ALLOW_NUL: an escaped NUL from another writer must not make the
   * whole record unreadable; C strings simply end there. */
  json_t *j = json_loadb(json, len, JSON_ALLOW_NUL, &jerr);
  if (!j) {
    if (err && errlen)
      snprintf(err, errlen, "record.json: line %d: %s", jerr.line, jerr.text);
    tfs_record_free(rec);
    return TFS_ECORRUPT;
  }
  int e = parse_identity(&p, j, rec);
  if (!e)
    e = parse_command(&p, j, rec);
  if (!e)
    e = parse_outcome(&p, j, rec);
  if (!e)
    e = parse_processes(&p, j, rec);
  if (!e)
    e = parse_restart(&p, j, rec);
  if (!e)
    e = parse_counters(&p, j, rec);
  json_decref(j);
  if (e)
    tfs_record_free(rec);
  return e;
}
