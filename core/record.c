/* The task record in memory and as record.json (version 1). Field names are
 * camelCase and shared with every face; see docs/ARCHITECTURE.md. */
#include "core/internal.h"

#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tfs_record_init(tfs_record_t *rec) {
  memset(rec, 0, sizeof *rec);
  rec->state = TFS_QUEUED;
  rec->exit_code = -1;
  rec->restart = TFS_RESTART_NO;
  rec->min_uptime_ms = 1000;
  rec->max_restarts = 5;
  rec->grace_ms = 5000;
  tfs_important_init(&rec->important, TFS_IMPORTANT_K_DEFAULT);
}

static void free_strv(char **v) {
  if (!v)
    return;
  for (char **p = v; *p; p++)
    free(*p);
  free(v);
}

void tfs_record_free(tfs_record_t *rec) {
  if (!rec)
    return;
  free_strv(rec->argv);
  free(rec->cwd);
  free_strv(rec->env_names);
  free(rec->reason);
  free(rec->supervisor_exe);
  free(rec->supervisor_host);
  free(rec->cancel_by);
  tfs_important_free(&rec->important);
  rec->argv = rec->env_names = NULL;
  rec->cwd = rec->reason = rec->supervisor_exe = rec->supervisor_host = rec->cancel_by = NULL;
  rec->argc = rec->env_count = 0;
  memset(&rec->important, 0, sizeof rec->important);
}

/* Copies a NULL-terminated vector. */
static int dup_strv(char *const src[], char ***out, int *count) {
  int n = 0;
  while (src && src[n])
    n++;
  char **v = calloc((size_t)n + 1, sizeof *v);
  if (!v)
    return -ENOMEM;
  for (int i = 0; i < n; i++)
    if (!(v[i] = strdup(src[i]))) {
      free_strv(v);
      return -ENOMEM;
    }
  *out = v;
  *count = n;
  return 0;
}

int tfs_record_set_command(tfs_record_t *rec, char *const argv[], const char *cwd) {
  char **v;
  int n, err;
  char *c = NULL;
  if (!argv || !argv[0] || !argv[0][0])
    return -EINVAL;
  if ((err = dup_strv(argv, &v, &n)))
    return err;
  if (cwd && !(c = strdup(cwd))) {
    free_strv(v);
    return -ENOMEM;
  }
  free_strv(rec->argv);
  free(rec->cwd);
  rec->argv = v;
  rec->argc = n;
  rec->cwd = c;
  return 0;
}

int tfs_record_add_env_name(tfs_record_t *rec, const char *name) {
  if (!name || !*name)
    return -EINVAL;
  char **v = realloc(rec->env_names, ((size_t)rec->env_count + 2) * sizeof *v);
  if (!v)
    return -ENOMEM;
  rec->env_names = v;
  /* Only the name is ever kept: cut at '=' in case a caller passed NAME=VALUE. */
  size_t n = strcspn(name, "=");
  if (!(v[rec->env_count] = strndup(name, n))) {
    v[rec->env_count] = NULL;
    return -ENOMEM;
  }
  v[++rec->env_count] = NULL;
  return 0;
}

int tfs_record_set_reason(tfs_record_t *rec, const char *fmt, ...) {
  va_list ap;
  char *s = NULL;
  if (fmt) {
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
      return -ENOMEM;
  }
  free(rec->reason);
  rec->reason = s;
  return 0;
}

/* ---- dump ---------------------------------------------------------------- */

static json_t *jstrn(const char *s, size_t len) {
  char *clean = tfs_utf8_sanitize(s, len, &len);
  json_t *j = clean ? json_stringn(clean, len) : NULL;
  free(clean);
  return j ? j : json_null();
}

static json_t *jstr(const char *s) {
  return s ? jstrn(s, strlen(s)) : json_null();
}

static json_t *jtime(int64_t ms) {
  char buf[TFS_TIME_BUF];
  return ms ? json_string(tfs_time_format(ms, buf)) : json_null();
}

static json_t *jstrv(char *const *v) {
  json_t *a = json_array();
  for (int i = 0; v && v[i]; i++)
    json_array_append_new(a, jstr(v[i]));
  return a;
}

/* ---- exact bytes ----------------------------------------------------------
 *
 * JSON strings are UTF-8, but argv and cwd are bytes: "command" and "cwd"
 * hold the display form (invalid bytes shown as U+FFFD), and when any of them
 * is not valid UTF-8, "commandBytes" / "cwdBytes" hold the exact bytes, each
 * element either the plain string (when valid) or {"b64": "<base64>"}. */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int utf8_ok(const char *s) {
  size_t len = strlen(s), n;
  char *c = tfs_utf8_sanitize(s, len, &n);
  int ok = c && n == len && !memcmp(c, s, len);
  free(c);
  return ok;
}

static json_t *jb64(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t len = strlen(s), o = 0;
  char *out = malloc((len + 2) / 3 * 4 + 1);
  if (!out)
    return NULL;
  for (size_t i = 0; i < len; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) |
                 (i + 2 < len ? p[i + 2] : 0);
    out[o++] = b64chars[v >> 18 & 63];
    out[o++] = b64chars[v >> 12 & 63];
    out[o++] = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
    out[o++] = i + 2 < len ? b64chars[v & 63] : '=';
  }
  out[o] = '\0';
  json_t *j = json_pack("{s:s}", "b64", out);
  free(out);
  return j;
}

/* Decodes strict base64 (padding required, no whitespace). A decoded NUL is
 * refused: no argument or path can hold one. Returns NULL if malformed. */
static char *unb64(const char *s) {
  size_t len = strlen(s), o = 0;
  if (len % 4)
    return NULL;
  char *out = malloc(len / 4 * 3 + 1);
  if (!out)
    return NULL;
  for (size_t i = 0; i < len; i += 4) {
    unsigned v = 0;
    int pad = 0;
    for (int k = 0; k < 4; k++) {
      const char *c = s[i + k] ? strchr(b64chars, s[i + k]) : NULL;
      if (s[i + k] == '=' && i + 4 == len && k >= 2 && (k == 3 || s[i + 3] == '=')) {
        pad++;
        v <<= 6;
      } else if (c && !pad) {
        v = v << 6 | (unsigned)(c - b64chars);
      } else {
        free(out);
        return NULL;
      }
    }
    unsigned char b[3] = {v >> 16 & 255, v >> 8 & 255, v & 255};
    for (int k = 0; k < 3 - pad; k++) {
      if (!b[k]) {
        free(out);
        return NULL;
      }
      out[o++] = (char)b[k];
    }
  }
  out[o] = '\0';
  return out;
}

/* The "commandBytes" array, or NULL when every argument is valid UTF-8 (the
 * common case keeps the record as readers expect it). */
static json_t *jstrv_bytes(char *const *v) {
  int need = 0;
  for (int i = 0; v && v[i]; i++)
    need |= !utf8_ok(v[i]);
  if (!need)
    return NULL;
  json_t *a = json_array();
  for (int i = 0; v[i]; i++)
    json_array_append_new(a, utf8_ok(v[i]) ? json_string(v[i]) : jb64(v[i]));
  return a;
}

static json_t *jimportant_line(const tfs_important_line_t *l) {
  json_t *o = json_object();
  json_object_set_new(o, "line", json_integer(l->line));
  json_object_set_new(o, "kind", json_string(tfs_line_kind_name(l->kind)));
  json_object_set_new(o, "text", jstr(l->text ? l->text : ""));
  return o;
}

static json_t *jimportant(const tfs_important_t *imp) {
  json_t *o = json_object(), *first = json_array(), *last = json_array();
  json_object_set_new(o, "k", json_integer(imp->k));
  json_object_set_new(o, "total", json_integer(imp->total));
  for (size_t i = 0; imp->first && i < imp->nfirst; i++)
    json_array_append_new(first, jimportant_line(&imp->first[i]));
  for (size_t i = 0; imp->last && i < imp->nlast; i++)
    json_array_append_new(last, jimportant_line(tfs_important_last(imp, i)));
  json_object_set_new(o, "first", first);
  json_object_set_new(o, "last", last);
  return o;
}

char *tfs_record_dump(const tfs_record_t *rec) {
  json_t *j = json_object(), *o;
  if (!j)
    return NULL;
  json_object_set_new(j, "v", json_integer(TFS_RECORD_VERSION));
  json_object_set_new(j, "id", json_string(rec->id));
  json_object_set_new(j, "key", rec->key[0] ? jstr(rec->key) : json_null());
  json_object_set_new(j, "command", jstrv(rec->argv));
  json_t *bytes = jstrv_bytes(rec->argv);
  if (bytes)
    json_object_set_new(j, "commandBytes", bytes);
  json_object_set_new(j, "cwd", jstr(rec->cwd));
  if (rec->cwd && !utf8_ok(rec->cwd))
    json_object_set_new(j, "cwdBytes", jb64(rec->cwd));
  json_object_set_new(j, "env", jstrv(rec->env_names));
  json_object_set_new(j, "state", json_string(tfs_state_name(rec->state)));
  json_object_set_new(j, "exitCode",
                      rec->exit_code >= 0 ? json_integer(rec->exit_code) : json_null());
  json_object_set_new(j, "signal", rec->signal ? json_integer(rec->signal) : json_null());
  const char *abbrev = rec->signal ? sigabbrev_np(rec->signal) : NULL;
  if (abbrev) {
    char name[32];
    snprintf(name, sizeof name, "SIG%s", abbrev);
    json_object_set_new(j, "signalName", json_string(name));
  } else {
    json_object_set_new(j, "signalName", json_null());
  }
  json_object_set_new(j, "reason", jstr(rec->reason));
  json_object_set_new(j, "created", jtime(rec->created_ms));
  json_object_set_new(j, "started", jtime(rec->started_ms));
  json_object_set_new(j, "ended", jtime(rec->ended_ms));
  json_object_set_new(j, "aliveAt", jtime(rec->alive_ms));
  if (rec->supervisor_pid > 0) {
    o = json_object();
    json_object_set_new(o, "pid", json_integer(rec->supervisor_pid));
    json_object_set_new(o, "started", jtime(rec->supervisor_started_ms));
    json_object_set_new(o, "exe", jstr(rec->supervisor_exe));
    json_object_set_new(o, "host", jstr(rec->supervisor_host));
    json_object_set_new(j, "supervisor", o);
  } else {
    json_object_set_new(j, "supervisor", json_null());
  }
  if (rec->worker_pid > 0) {
    o = json_object();
    json_object_set_new(o, "pid", json_integer(rec->worker_pid));
    json_object_set_new(o, "pgid", json_integer(rec->worker_pgid));
    json_object_set_new(j, "worker", o);
  } else {
    json_object_set_new(j, "worker", json_null());
  }
  o = json_object();
  json_object_set_new(o, "policy", json_string(tfs_restart_name(rec->restart)));
  json_object_set_new(o, "minUptimeMs", json_integer(rec->min_uptime_ms));
  json_object_set_new(o, "maxRestarts", json_integer(rec->max_restarts));
  json_object_set_new(o, "graceMs", json_integer(rec->grace_ms));
  json_object_set_new(o, "count", json_integer(rec->restarts));
  json_t *exits = json_array();
  int nexits = rec->nexits < 0 ? 0 : rec->nexits > TFS_LAST_EXITS ? TFS_LAST_EXITS : rec->nexits;
  for (int i = 0; i < nexits; i++) {
    const tfs_exit_t *e = &rec->exits[i];
    json_t *x = json_object();
    json_object_set_new(x, "started", jtime(e->started_ms));
    json_object_set_new(x, "ended", jtime(e->ended_ms));
    json_object_set_new(x, "exitCode",
                        e->exit_code >= 0 ? json_integer(e->exit_code) : json_null());
    json_object_set_new(x, "signal", e->signal ? json_integer(e->signal) : json_null());
    json_object_set_new(x, "requested", json_boolean(e->requested));
    json_array_append_new(exits, x);
  }
  json_object_set_new(o, "exits", exits);
  json_object_set_new(j, "restart", o);
  if (rec->cancel_by || rec->cancel_ms) {
    o = json_object();
    json_object_set_new(o, "by", jstr(rec->cancel_by ? rec->cancel_by : ""));
    json_object_set_new(o, "at", jtime(rec->cancel_ms));
    json_object_set_new(j, "cancel", o);
  } else {
    json_object_set_new(j, "cancel", json_null());
  }
  o = json_object();
  json_object_set_new(o, "lines", json_integer(rec->lines));
  json_object_set_new(o, "bytes", json_integer(rec->bytes));
  json_object_set_new(j, "transcript", o);
  json_object_set_new(j, "important", jimportant(&rec->important));
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(j);
  if (s) {
    /* A trailing newline makes `cat record.json` friendly. */
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) {
      free(s);
      return NULL;
    }
    t[n] = '\n';
    t[n + 1] = '\0';
    s = t;
  }
  return s;
}

/* ---- parse --------------------------------------------------------------- */

/* Parsing is strict on types (a present, non-null field must have its type)
 * and tolerant of missing optional fields, so that older or newer writers of
 * version 1 stay readable. */
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
      free_strv(a);
      return bad(p, name, "expected an array of strings");
    }
    if (!(a[i] = strdup(json_string_value(e)))) {
      free_strv(a);
      return -ENOMEM;
    }
  }
  *out = a;
  *count = (int)n;
  return 0;
}

/* One exact-bytes element: a plain string or {"b64": "..."}. */
static int get_bytes_elem(perr_t *p, json_t *e, const char *name, char **out) {
  json_t *b = json_is_object(e) ? json_object_get(e, "b64") : NULL;
  if (json_is_string(e)) {
    *out = strdup(json_string_value(e));
  } else if (json_is_string(b)) {
    if (!(*out = unb64(json_string_value(b))))
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
        free_strv(a);
        return err;
      }
    if (!a[0][0]) {
      free_strv(a);
      return bad(p, "commandBytes", "expected a non-empty program name");
    }
    free_strv(rec->argv);
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

static int parse_body(perr_t *p, json_t *j, tfs_record_t *rec) {
  json_t *v, *o;
  int64_t x;
  int err;
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
  if ((err = get_strv(p, j, "command", &rec->argv, &rec->argc)))
    return err;
  if (!rec->argv || rec->argc < 1)
    return bad(p, "command", "expected a non-empty array of strings");
  if ((err = get_str(p, j, "cwd", &rec->cwd)) || (err = get_exact(p, j, rec)) ||
      (err = get_strv(p, j, "env", &rec->env_names, &rec->env_count)))
    return err;
  v = json_object_get(j, "state");
  if (!json_is_string(v) || tfs_state_parse(json_string_value(v), &rec->state))
    return bad(p, "state", "expected queued|running|completed|failed|cancelled|lost");
  x = -1;
  if ((err = get_int(p, j, "exitCode", 0, 255, &x)))
    return err;
  rec->exit_code = (int)x;
  x = 0;
  if ((err = get_int(p, j, "signal", 0, 128, &x)))
    return err;
  rec->signal = (int)x;
  if ((err = get_str(p, j, "reason", &rec->reason)) ||
      (err = get_time(p, j, "created", &rec->created_ms)) ||
      (err = get_time(p, j, "started", &rec->started_ms)) ||
      (err = get_time(p, j, "ended", &rec->ended_ms)) ||
      (err = get_time(p, j, "aliveAt", &rec->alive_ms)))
    return err;

  if ((err = get_obj(p, j, "supervisor", &o)))
    return err;
  if (o) {
    x = 0;
    if ((err = get_int(p, o, "pid", 0, INT32_MAX, &x)))
      return err;
    rec->supervisor_pid = (pid_t)x;
    if ((err = get_time(p, o, "started", &rec->supervisor_started_ms)) ||
        (err = get_str(p, o, "exe", &rec->supervisor_exe)) ||
        (err = get_str(p, o, "host", &rec->supervisor_host)))
      return err;
  }
  if ((err = get_obj(p, j, "worker", &o)))
    return err;
  if (o) {
    x = 0;
    if ((err = get_int(p, o, "pid", 0, INT32_MAX, &x)))
      return err;
    rec->worker_pid = (pid_t)x;
    x = 0;
    if ((err = get_int(p, o, "pgid", 0, INT32_MAX, &x)))
      return err;
    rec->worker_pgid = (pid_t)x;
  }
  if ((err = get_obj(p, j, "restart", &o)))
    return err;
  if (o) {
    if ((v = opt(o, "policy")) &&
        (!json_is_string(v) || tfs_restart_parse(json_string_value(v), &rec->restart)))
      return bad(p, "policy", "expected no|on-failure|always");
    x = rec->max_restarts;
    if ((err = get_int(p, o, "minUptimeMs", 0, INT64_MAX, &rec->min_uptime_ms)) ||
        (err = get_int(p, o, "maxRestarts", 0, INT32_MAX, &x)))
      return err;
    rec->max_restarts = (int)x;
    x = 0;
    if ((err = get_int(p, o, "graceMs", 0, INT64_MAX, &rec->grace_ms)) ||
        (err = get_int(p, o, "count", 0, INT32_MAX, &x)))
      return err;
    rec->restarts = (int)x;
    if ((v = opt(o, "exits"))) {
      if (!json_is_array(v))
        return bad(p, "exits", "expected an array");
      size_t n = json_array_size(v);
      /* Keep the newest TFS_LAST_EXITS if a writer kept more. */
      size_t from = n > TFS_LAST_EXITS ? n - TFS_LAST_EXITS : 0;
      for (size_t i = from; i < n; i++) {
        json_t *e = json_array_get(v, i), *req;
        tfs_exit_t *x2 = &rec->exits[rec->nexits];
        if (!json_is_object(e))
          return bad(p, "exits", "expected objects");
        memset(x2, 0, sizeof *x2);
        int64_t code = -1, sig = 0;
        if ((err = get_time(p, e, "started", &x2->started_ms)) ||
            (err = get_time(p, e, "ended", &x2->ended_ms)) ||
            (err = get_int(p, e, "exitCode", 0, 255, &code)) ||
            (err = get_int(p, e, "signal", 0, 128, &sig)))
          return err;
        x2->exit_code = (int)code;
        x2->signal = (int)sig;
        if ((req = opt(e, "requested"))) {
          if (!json_is_boolean(req))
            return bad(p, "requested", "expected a boolean");
          x2->requested = json_is_true(req);
        }
        rec->nexits++;
      }
    }
  }
  if ((err = get_obj(p, j, "cancel", &o)))
    return err;
  if (o) {
    if ((err = get_str(p, o, "by", &rec->cancel_by)) ||
        (err = get_time(p, o, "at", &rec->cancel_ms)))
      return err;
  }
  if ((err = get_obj(p, j, "transcript", &o)))
    return err;
  if (o) {
    if ((err = get_int(p, o, "lines", 0, INT64_MAX, &rec->lines)) ||
        (err = get_int(p, o, "bytes", 0, INT64_MAX, &rec->bytes)))
      return err;
  }
  if ((err = get_obj(p, j, "important", &o)))
    return err;
  if (o) {
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
  }
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
  int e = parse_body(&p, j, rec);
  json_decref(j);
  if (e)
    tfs_record_free(rec);
  return e;
}
