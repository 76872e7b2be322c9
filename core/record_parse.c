/* record.json text to a record. Parsing is strict on types (a present,
 * non-null field must have its type) and tolerant of missing optional
 * fields, so that older or newer writers of version 1 stay readable. Errors
 * name the field: "record.json: field 'state': ...".
 *
 * The text is read by core's strict JSON reader (core/json.c: no tree, no
 * allocation per value), which is what makes loading 100,000 records fast.
 * Whatever it refuses goes to jansson: invalid JSON gets jansson's message,
 * and valid JSON the reader does not take on (a real number, an escaped
 * key, deep nesting, a huge integer) is printed back by jansson in its
 * canonical compact form and read from that, so both roads accept the same
 * documents and give the same record. */
#include "core/json.h"
#include "taskfs/text.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  char *err;
  size_t errlen;
  const tfs__jdoc_t *d;
} perr_t;

static int bad(perr_t *p, const char *field, const char *what) {
  if (p->err && p->errlen)
    snprintf(p->err, p->errlen, "record.json: field '%s': %s", field, what);
  return TFS_ECORRUPT;
}

static int type(perr_t *p, int i) {
  return i < 0 ? -1 : p->d->v[i].type;
}

/* A field: its node, or -1 if absent. */
static int get(perr_t *p, int obj, const char *name) {
  return tfs__json_get(p->d, obj, name);
}

/* An optional field: -1 if absent or null. */
static int opt(perr_t *p, int obj, const char *name) {
  int v = get(p, obj, name);
  return type(p, v) == TFS__J_NULL ? -1 : v;
}

/* A string as a C string, the way jansson's json_string_value() gives it
 * (it ends at the first NUL, as a decoded \u0000 makes it), in buf when it
 * fits, else in *heap (free it). NULL without memory. */
static const char *cstr(perr_t *p, int i, char buf[128], char **heap) {
  const tfs__jnode_t *n = &p->d->v[i];
  *heap = NULL;
  if (!n->esc && n->len < 128) {
    memcpy(buf, n->s, n->len);
    buf[n->len] = '\0';
    return buf;
  }
  return *heap = tfs__json_str(p->d, i, NULL);
}

static int get_int(perr_t *p, int obj, const char *name, int64_t lo, int64_t hi, int64_t *out) {
  int v = opt(p, obj, name);
  if (v < 0)
    return 0;
  if (type(p, v) != TFS__J_INT)
    return bad(p, name, "expected an integer");
  int64_t x = p->d->v[v].i;
  if (x < lo || x > hi)
    return bad(p, name, "out of range");
  *out = x;
  return 0;
}

/* An integer field that fits an int. */
static int get_int32(perr_t *p, int obj, const char *name, int64_t lo, int64_t hi, int *out) {
  int64_t x = *out;
  int err = get_int(p, obj, name, lo, hi, &x);
  if (!err)
    *out = (int)x;
  return err;
}

static int get_time(perr_t *p, int obj, const char *name, int64_t *out) {
  char buf[128], *heap;
  int v = opt(p, obj, name);
  if (v < 0)
    return 0;
  if (type(p, v) != TFS__J_STR)
    return bad(p, name, "expected an RFC 3339 time");
  const char *s = cstr(p, v, buf, &heap);
  int err = !s ? -ENOMEM : tfs_time_parse(s, out) ? bad(p, name, "expected an RFC 3339 time") : 0;
  free(heap);
  return err;
}

static int get_str(perr_t *p, int obj, const char *name, char **out) {
  int v = opt(p, obj, name);
  if (v < 0)
    return 0;
  if (type(p, v) != TFS__J_STR)
    return bad(p, name, "expected a string");
  return (*out = tfs__json_str(p->d, v, NULL)) ? 0 : -ENOMEM;
}

static int get_strv(perr_t *p, int obj, const char *name, char ***out, int *count) {
  int v = opt(p, obj, name);
  if (v < 0)
    return 0;
  if (type(p, v) != TFS__J_ARR)
    return bad(p, name, "expected an array of strings");
  size_t n = p->d->v[v].kids;
  char **a = calloc(n + 1, sizeof *a);
  if (!a)
    return -ENOMEM;
  int e = v + 1;
  for (size_t i = 0; i < n; i++, e = tfs__json_next(p->d, e)) {
    if (type(p, e) != TFS__J_STR) {
      tfs_strv_free(a);
      return bad(p, name, "expected an array of strings");
    }
    if (!(a[i] = tfs__json_str(p->d, e, NULL))) {
      tfs_strv_free(a);
      return -ENOMEM;
    }
  }
  *out = a;
  *count = (int)n;
  return 0;
}

/* One exact-bytes element: a plain string or {"b64": "..."}. */
static int get_bytes_elem(perr_t *p, int e, const char *name, char **out) {
  char buf[128], *heap;
  int b = type(p, e) == TFS__J_OBJ ? get(p, e, "b64") : -1;
  if (type(p, e) == TFS__J_STR) {
    *out = tfs__json_str(p->d, e, NULL);
  } else if (type(p, b) == TFS__J_STR) {
    const char *s = cstr(p, b, buf, &heap);
    *out = s ? tfs_b64_decode(s) : NULL;
    free(heap);
    if (s && !*out)
      return bad(p, name, "expected base64 bytes without NUL");
  } else {
    return bad(p, name, "expected a string or {\"b64\": string}");
  }
  return *out ? 0 : -ENOMEM;
}

/* "commandBytes" and "cwdBytes", when present, replace the display forms
 * already parsed from "command" and "cwd". */
static int get_exact(perr_t *p, int j, tfs_record_t *rec) {
  int v = opt(p, j, "commandBytes"), err;
  if (v >= 0) {
    size_t n = type(p, v) == TFS__J_ARR ? p->d->v[v].kids : 0;
    if (n < 1)
      return bad(p, "commandBytes", "expected a non-empty array");
    char **a = calloc(n + 1, sizeof *a);
    if (!a)
      return -ENOMEM;
    int e = v + 1;
    for (size_t i = 0; i < n; i++, e = tfs__json_next(p->d, e))
      if ((err = get_bytes_elem(p, e, "commandBytes", &a[i]))) {
        tfs_strv_free(a);
        return err;
      }
    if (!a[0][0]) {
      tfs_strv_free(a);
      return bad(p, "commandBytes", "expected a non-empty program name");
    }
    tfs_strv_free(rec->argv);
    rec->argv = a;
    rec->argc = (int)n;
  }
  if ((v = opt(p, j, "cwdBytes")) >= 0) {
    char *c;
    if ((err = get_bytes_elem(p, v, "cwdBytes", &c)))
      return err;
    free(rec->cwd);
    rec->cwd = c;
  }
  return 0;
}

static int get_obj(perr_t *p, int obj, const char *name, int *out) {
  int v = opt(p, obj, name);
  *out = -1;
  if (v < 0)
    return 0;
  if (type(p, v) != TFS__J_OBJ)
    return bad(p, name, "expected an object");
  *out = v;
  return 0;
}

/* A string field whose C string must pass check (an id, a key, a name). */
static int check_str(perr_t *p, int v, int (*check)(const char *s, void *arg), void *arg) {
  char buf[128], *heap;
  if (type(p, v) != TFS__J_STR)
    return 0;
  const char *s = cstr(p, v, buf, &heap);
  int ok = s ? check(s, arg) : -1;
  free(heap);
  return ok;
}

static int is_id(const char *s, void *out) {
  if (!tfs_id_valid(s))
    return 0;
  snprintf(out, TFS_ID_MAX + 1, "%s", s);
  return 1;
}

static int is_key(const char *s, void *out) {
  if (!tfs_key_valid(s))
    return 0;
  snprintf(out, TFS_KEY_MAX + 1, "%s", s);
  return 1;
}

static int is_state(const char *s, void *out) {
  return tfs_state_parse(s, out) == 0;
}

static int is_policy(const char *s, void *out) {
  return tfs_restart_parse(s, out) == 0;
}

static int is_stderr_mode(const char *s, void *out) {
  return tfs_stderr_parse(s, out) == 0;
}

static int is_kind(const char *s, void *out) {
  return tfs_line_kind_parse(s, out) == 0;
}

/* v, id and key: what makes the record this task's. */
static int parse_identity(perr_t *p, int j, tfs_record_t *rec) {
  int v, ok;
  if (type(p, j) != TFS__J_OBJ)
    return bad(p, "(top)", "expected an object");
  v = get(p, j, "v");
  if (type(p, v) != TFS__J_INT || p->d->v[v].i != TFS_RECORD_VERSION)
    return bad(p, "v", "expected version 1");
  if ((ok = check_str(p, get(p, j, "id"), is_id, rec->id)) <= 0)
    return ok < 0 ? -ENOMEM : bad(p, "id", "expected a task id");
  if ((v = opt(p, j, "key")) >= 0 && (ok = check_str(p, v, is_key, rec->key)) <= 0)
    return ok < 0 ? -ENOMEM : bad(p, "key", "expected a task key or null");
  /* The task number: optional (records from before numbers have none). */
  return get_int(p, j, "number", 1, INT64_MAX, &rec->number);
}

/* command, cwd (their exact bytes when given) and env. */
static int parse_command(perr_t *p, int j, tfs_record_t *rec) {
  int err = get_strv(p, j, "command", &rec->argv, &rec->argc);
  if (err)
    return err;
  if (!rec->argv || rec->argc < 1)
    return bad(p, "command", "expected a non-empty array of strings");
  if ((err = get_str(p, j, "cwd", &rec->cwd)) || (err = get_exact(p, j, rec)))
    return err;
  return get_strv(p, j, "env", &rec->env_names, &rec->env_count);
}

static int is_queue(const char *s, void *out) {
  if (!tfs_queue_name_valid(s))
    return 0;
  snprintf(out, TFS_QUEUE_NAME_MAX + 1, "%s", s);
  return 1;
}

/* queue, after (task ids), notBefore and stdin; all optional (records
 * before queues have none). */
static int parse_schedule(perr_t *p, int j, tfs_record_t *rec) {
  int v, ok, err;
  if ((v = opt(p, j, "queue")) >= 0 && (ok = check_str(p, v, is_queue, rec->queue)) <= 0)
    return ok < 0 ? -ENOMEM : bad(p, "queue", "expected a queue name or null");
  if ((err = get_strv(p, j, "after", &rec->after, &rec->nafter)))
    return err;
  for (int i = 0; i < rec->nafter; i++)
    if (!tfs_id_valid(rec->after[i]))
      return bad(p, "after", "expected an array of task ids");
  if ((err = get_time(p, j, "notBefore", &rec->not_before_ms)))
    return err;
  if ((v = opt(p, j, "stdin")) >= 0) {
    if (type(p, v) != TFS__J_TRUE && type(p, v) != TFS__J_FALSE)
      return bad(p, "stdin", "expected a boolean");
    rec->with_stdin = type(p, v) == TFS__J_TRUE;
  }
  return 0;
}

/* state, exitCode, signal, reason and the times. */
static int parse_outcome(perr_t *p, int j, tfs_record_t *rec) {
  int err, ok = check_str(p, get(p, j, "state"), is_state, &rec->state);
  if (ok <= 0)
    return ok < 0 ? -ENOMEM
                  : bad(p, "state", "expected queued|running|completed|failed|cancelled|lost|paused");
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

/* creator {pid, startTicks, bootId}: who will launch a queued task. */
static int parse_creator(perr_t *p, int j, tfs_record_t *rec) {
  int o, err, pid = 0;
  int64_t ticks = 0;
  char *boot = NULL;
  if ((err = get_obj(p, j, "creator", &o)) || o < 0)
    return err;
  if ((err = get_int32(p, o, "pid", 0, INT32_MAX, &pid)) ||
      (err = get_int(p, o, "startTicks", 0, INT64_MAX, &ticks)) ||
      (err = get_str(p, o, "bootId", &boot)))
    return err;
  rec->creator_pid = (pid_t)pid;
  rec->creator_start_ticks = (uint64_t)ticks;
  snprintf(rec->creator_boot, sizeof rec->creator_boot, "%s", boot ? boot : "");
  free(boot);
  return 0;
}

/* supervisor {pid, started, exe, host}, creator and worker {pid, pgid}. */
static int parse_processes(perr_t *p, int j, tfs_record_t *rec) {
  int o, err, pid = 0, pgid = 0;
  if ((err = get_obj(p, j, "supervisor", &o)))
    return err;
  if (o >= 0) {
    if ((err = get_int32(p, o, "pid", 0, INT32_MAX, &pid)) ||
        (err = get_time(p, o, "started", &rec->supervisor_started_ms)) ||
        (err = get_str(p, o, "exe", &rec->supervisor_exe)) ||
        (err = get_str(p, o, "host", &rec->supervisor_host)))
      return err;
    rec->supervisor_pid = (pid_t)pid;
  }
  if ((err = parse_creator(p, j, rec)))
    return err;
  if ((err = get_obj(p, j, "worker", &o)))
    return err;
  if (o >= 0) {
    pid = 0;
    if ((err = get_int32(p, o, "pid", 0, INT32_MAX, &pid)) ||
        (err = get_int32(p, o, "pgid", 0, INT32_MAX, &pgid)))
      return err;
    rec->worker_pid = (pid_t)pid;
    rec->worker_pgid = (pid_t)pgid;
  }
  return 0;
}

/* An optional boolean field. */
static int get_bool(perr_t *p, int obj, const char *name, int *out) {
  int v = opt(p, obj, name);
  if (v < 0)
    return 0;
  if (type(p, v) != TFS__J_TRUE && type(p, v) != TFS__J_FALSE)
    return bad(p, name, "expected a boolean");
  *out = type(p, v) == TFS__J_TRUE;
  return 0;
}

/* What a run or the task used (cpuUserMs, cpuSystemMs, maxRssKb,
 * outputBytes, treePeakKb); records before them have none. */
static int get_use(perr_t *p, int o, tfs_usage_t *u) {
  int err;
  if ((err = get_int(p, o, "cpuUserMs", 0, INT64_MAX, &u->user_ms)) ||
      (err = get_int(p, o, "cpuSystemMs", 0, INT64_MAX, &u->sys_ms)) ||
      (err = get_int(p, o, "maxRssKb", 0, INT64_MAX, &u->maxrss_kb)) ||
      (err = get_int(p, o, "outputBytes", 0, INT64_MAX, &u->output_bytes)))
    return err;
  return get_int(p, o, "treePeakKb", 0, INT64_MAX, &u->tree_peak_kb);
}

/* restart.exits: the newest TFS_LAST_EXITS if a writer kept more. */
static int parse_exits(perr_t *p, int v, tfs_record_t *rec) {
  if (type(p, v) != TFS__J_ARR)
    return bad(p, "exits", "expected an array");
  size_t n = p->d->v[v].kids;
  size_t from = n > TFS_LAST_EXITS ? n - TFS_LAST_EXITS : 0;
  int e = tfs__json_at(p->d, v, from);
  for (size_t i = from; i < n; i++, e = tfs__json_next(p->d, e)) {
    tfs_exit_t *x = &rec->exits[rec->nexits];
    int err;
    if (type(p, e) != TFS__J_OBJ)
      return bad(p, "exits", "expected objects");
    memset(x, 0, sizeof *x);
    x->exit_code = -1;
    tfs_usage_init(&x->use);
    if ((err = get_time(p, e, "started", &x->started_ms)) ||
        (err = get_time(p, e, "ended", &x->ended_ms)) ||
        (err = get_int32(p, e, "exitCode", 0, 255, &x->exit_code)) ||
        (err = get_int32(p, e, "signal", 0, 128, &x->signal)))
      return err;
    if ((err = get_bool(p, e, "requested", &x->requested)) ||
        (err = get_bool(p, e, "timedOut", &x->timed_out)) || (err = get_use(p, e, &x->use)))
      return err;
    rec->nexits++;
  }
  return 0;
}

/* restart {policy, minUptimeMs, maxRestarts (null: no limit),
 * maxQuickRestarts, graceMs, count, exits}. */
static int parse_restart(perr_t *p, int j, tfs_record_t *rec) {
  int o, v, err = get_obj(p, j, "restart", &o);
  if (err || o < 0)
    return err;
  if ((v = opt(p, o, "policy")) >= 0) {
    int ok = check_str(p, v, is_policy, &rec->restart);
    if (ok <= 0)
      return ok < 0 ? -ENOMEM : bad(p, "policy", "expected no|on-failure|always");
  }
  if ((v = opt(p, o, "maxRestarts")) >= 0 && type(p, v) == TFS__J_NULL)
    rec->max_restarts = -1;
  else if ((err = get_int32(p, o, "maxRestarts", 0, INT32_MAX, &rec->max_restarts)))
    return err;
  if ((err = get_int(p, o, "minUptimeMs", 0, INT64_MAX, &rec->min_uptime_ms)) ||
      (err = get_int32(p, o, "maxQuickRestarts", 0, INT32_MAX, &rec->max_quick_restarts)) ||
      (err = get_int(p, o, "graceMs", 0, INT64_MAX, &rec->grace_ms)) ||
      (err = get_int32(p, o, "count", 0, INT32_MAX, &rec->restarts)) ||
      (err = get_bool(p, o, "onTimeout", &rec->restart_on_timeout)))
    return err;
  return (v = opt(p, o, "exits")) >= 0 ? parse_exits(p, v, rec) : 0;
}

/* One kept line, {line, kind, text} (kind NULL: {line, text}): its fields,
 * the text malloc'ed. Returns 0, or 1 if the entry has not that form. */
static int line_entry(perr_t *p, int e, tfs_line_kind_t *k, int64_t *line, char **text,
                      size_t *len) {
  int l = type(p, e) == TFS__J_OBJ ? get(p, e, "line") : -1;
  int t = type(p, e) == TFS__J_OBJ ? get(p, e, "text") : -1;
  int kind = k && type(p, e) == TFS__J_OBJ ? get(p, e, "kind") : -1;
  if (type(p, l) != TFS__J_INT || type(p, t) != TFS__J_STR ||
      (k && (type(p, kind) != TFS__J_STR || check_str(p, kind, is_kind, k) != 1)))
    return 1;
  *line = p->d->v[l].i;
  return (*text = tfs__json_str(p->d, t, len)) ? 0 : -ENOMEM;
}

/* important.first / last: {line, kind, text} entries. */
static int parse_important_list(perr_t *p, int arr, const char *name, tfs_important_t *imp) {
  if (arr < 0)
    return 0;
  if (type(p, arr) != TFS__J_ARR)
    return bad(p, name, "expected an array");
  int e = arr + 1;
  for (size_t i = 0; i < p->d->v[arr].kids; i++, e = tfs__json_next(p->d, e)) {
    tfs_line_kind_t k;
    int64_t line;
    char *t;
    size_t len;
    int err = line_entry(p, e, &k, &line, &t, &len);
    if (err)
      return err > 0 ? bad(p, name, "expected {line, kind, text} entries") : err;
    err = tfs_important_add(imp, line, k, t, len);
    free(t);
    if (err)
      return err;
  }
  return 0;
}

/* important.lead {line, kind, text} and important.context [{line, text}],
 * both optional (records before the lead have neither). */
static int parse_lead(perr_t *p, int o, tfs_important_t *imp) {
  int lead = opt(p, o, "lead"), ctx = opt(p, o, "context");
  if (lead < 0)
    return 0;
  tfs_line_kind_t k;
  int64_t line;
  char *t;
  size_t len;
  int err = line_entry(p, lead, &k, &line, &t, &len);
  if (err)
    return err > 0 ? bad(p, "lead", "expected {line, kind, text}") : err;
  err = tfs_important_set_lead(imp, line, k, t, len);
  free(t);
  if (err || ctx < 0)
    return err;
  if (type(p, ctx) != TFS__J_ARR || p->d->v[ctx].kids > TFS_CONTEXT_MAX)
    return bad(p, "context", "expected an array of at most 8 {line, text}");
  int e = ctx + 1;
  for (size_t i = 0; i < p->d->v[ctx].kids; i++, e = tfs__json_next(p->d, e)) {
    if ((err = line_entry(p, e, NULL, &line, &t, &len)))
      return err > 0 ? bad(p, "context", "expected {line, text} entries") : err;
    err = tfs_important_add_context(imp, line, t, len);
    free(t);
    if (err)
      return err;
  }
  return 0;
}

/* cancel {by, at}, transcript {lines, bytes, stderr} and important {k, total,
 * first, last, lead, context}. */
static int parse_counters(perr_t *p, int j, tfs_record_t *rec) {
  int o, err;
  if ((err = get_obj(p, j, "cancel", &o)))
    return err;
  if (o >= 0 && ((err = get_str(p, o, "by", &rec->cancel_by)) ||
                 (err = get_time(p, o, "at", &rec->cancel_ms))))
    return err;
  if ((err = get_obj(p, j, "transcript", &o)))
    return err;
  if (o >= 0 && ((err = get_int(p, o, "lines", 0, INT64_MAX, &rec->lines)) ||
                 (err = get_int(p, o, "bytes", 0, INT64_MAX, &rec->bytes)) ||
                 (err = get_int(p, o, "lostBytes", 0, INT64_MAX, &rec->lost_bytes)) ||
                 (err = get_int(p, o, "lostLines", 0, INT64_MAX, &rec->lost_lines)) ||
                 (err = get_time(p, o, "lostFirst", &rec->lost_first_ms)) ||
                 (err = get_time(p, o, "lostLast", &rec->lost_last_ms))))
    return err;
  /* Records from before the merged stream had two pipes: split. */
  int v = o >= 0 ? opt(p, o, "stderr") : -1;
  rec->stderr_mode = TFS_STDERR_SPLIT;
  if (v >= 0) {
    int ok = check_str(p, v, is_stderr_mode, &rec->stderr_mode);
    if (ok <= 0)
      return ok < 0 ? -ENOMEM : bad(p, "stderr", "expected merged|split");
  }
  if ((err = get_obj(p, j, "important", &o)) || o < 0)
    return err;
  int64_t k = TFS_IMPORTANT_K_DEFAULT, total = 0;
  if ((err = get_int(p, o, "k", 1, TFS_IMPORTANT_K_MAX, &k)) ||
      (err = get_int(p, o, "total", 0, INT64_MAX, &total)))
    return err;
  tfs_important_free(&rec->important);
  memset(&rec->important, 0, sizeof rec->important);
  if ((err = tfs_important_init(&rec->important, (int)k)))
    return err;
  if ((err = parse_important_list(p, get(p, o, "first"), "first", &rec->important)) ||
      (err = parse_important_list(p, get(p, o, "last"), "last", &rec->important)) ||
      (err = parse_lead(p, o, &rec->important)))
    return err;
  if (total > rec->important.total)
    rec->important.total = total;
  return 0;
}

static int is_from(const char *s, void *out) {
  static const char *const names[] = {"none", "given", "config"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(s, names[i])) {
      *(tfs_from_t *)out = (tfs_from_t)i;
      return 1;
    }
  return 0;
}

static int is_via(const char *s, void *out) {
  tfs_via_t v = !strcmp(s, "cgroup")        ? TFS_VIA_CGROUP
                : !strncmp(s, "RLIMIT_", 7) ? TFS_VIA_RLIMIT
                                            : TFS_VIA_NONE;
  *(tfs_via_t *)out = v;
  return v != TFS_VIA_NONE;
}

/* A {.., from, via} member: "from" and "via" of a limit. */
static int get_from(perr_t *p, int o, tfs_from_t *from, tfs_via_t *via) {
  int v = opt(p, o, "from"), ok;
  if (v >= 0 && (ok = check_str(p, v, is_from, from)) <= 0)
    return ok < 0 ? -ENOMEM : bad(p, "from", "expected given|config|none");
  if (via && (v = opt(p, o, "via")) >= 0 && (ok = check_str(p, v, is_via, via)) <= 0)
    return ok < 0 ? -ENOMEM : bad(p, "via", "expected cgroup or RLIMIT_*");
  return 0;
}

/* limits {timeout {ms, from}, mem {value, from, via, note}, ..., cgroup}. */
static int parse_limits(perr_t *p, int j, tfs_limits_t *l) {
  int o, t, err = get_obj(p, j, "limits", &o);
  if (err || o < 0)
    return err;
  if ((err = get_obj(p, o, "timeout", &t)))
    return err;
  if (t >= 0 && ((err = get_int(p, t, "ms", 1, INT64_MAX, &l->timeout_ms)) ||
                 (err = get_from(p, t, &l->timeout_from, NULL))))
    return err;
  for (int i = 0; i < TFS_LIMIT_COUNT; i++) {
    tfs_limit_val_t *v = &l->v[i];
    if ((err = get_obj(p, o, tfs_limit_name((tfs_limit_t)i), &t)))
      return err;
    if (t < 0)
      continue;
    v->from = TFS_FROM_GIVEN;
    if ((err = get_int(p, t, "value", 0, INT64_MAX, &v->value)) ||
        (err = get_from(p, t, &v->from, &v->via)) || (err = get_str(p, t, "note", &v->note)))
      return err;
  }
  return get_str(p, o, "cgroup", &l->cgroup);
}

/* usage {cpuUserMs, cpuSystemMs, maxRssKb, outputBytes, treePeakKb,
 * queuedMs}. */
static int parse_usage(perr_t *p, int j, tfs_record_t *rec) {
  int o, err = get_obj(p, j, "usage", &o);
  if (err || o < 0)
    return err;
  if ((err = get_use(p, o, &rec->usage)))
    return err;
  return get_int(p, o, "queuedMs", 0, INT64_MAX, &rec->queued_ms);
}

static int is_engine(const char *s, void *out) {
  return tfs_engine_parse(s, out) == 0;
}

/* executor {engine, options, job {...}}: all optional (records before it
 * are local); job.step is derived from the id and not read back. */
static int parse_executor(perr_t *p, int j, tfs_executor_t *ex) {
  int o, job, err;
  if ((err = get_obj(p, j, "executor", &o)) || o < 0)
    return err;
  int v = opt(p, o, "engine");
  if (v >= 0) {
    int ok = check_str(p, v, is_engine, &ex->engine);
    if (ok <= 0)
      return ok < 0 ? -ENOMEM : bad(p, "engine", "expected local|slurm");
  }
  if ((err = get_strv(p, o, "options", &ex->options, &ex->noptions)) ||
      (err = get_obj(p, o, "job", &job)) || job < 0)
    return err;
  if ((err = get_str(p, job, "id", &ex->job_id)) ||
      (err = get_str(p, job, "name", &ex->job_name)) ||
      (err = get_str(p, job, "state", &ex->job_state)) ||
      (err = get_str(p, job, "reason", &ex->job_reason)) ||
      (err = get_str(p, job, "partition", &ex->partition)) ||
      (err = get_str(p, job, "nodes", &ex->nodes)))
    return err;
  return get_int(p, job, "queueWaitMs", 0, INT64_MAX, &ex->queue_wait_ms);
}

static int parse_doc(perr_t *p, tfs_record_t *rec) {
  int e = parse_identity(p, 0, rec);
  if (!e)
    e = parse_command(p, 0, rec);
  if (!e)
    e = parse_schedule(p, 0, rec);
  if (!e)
    e = parse_outcome(p, 0, rec);
  if (!e)
    e = parse_processes(p, 0, rec);
  if (!e)
    e = parse_restart(p, 0, rec);
  if (!e)
    e = parse_limits(p, 0, &rec->limits);
  if (!e)
    e = parse_usage(p, 0, rec);
  if (!e)
    e = parse_counters(p, 0, rec);
  if (!e)
    e = parse_executor(p, 0, &rec->exec);
  return e;
}

/* The jansson road: its verdict on the text, and for valid JSON its
 * canonical compact form, which the reader takes in full. */
static int parse_canonical(const char *json, size_t len, perr_t *p, tfs__jdoc_t *d, char **canon) {
  json_error_t jerr;
  /* JSON_ALLOW_NUL: an escaped NUL from another writer must not make the
   * whole record unreadable; C strings simply end there. */
  json_t *j = json_loadb(json, len, JSON_ALLOW_NUL, &jerr);
  if (!j) {
    if (p->err && p->errlen)
      snprintf(p->err, p->errlen, "record.json: line %d: %s", jerr.line, jerr.text);
    return TFS_ECORRUPT;
  }
  *canon = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!*canon)
    return -ENOMEM;
  return tfs__json_parse(*canon, strlen(*canon), 0, d) ? bad(p, "(top)", "unreadable") : 0;
}

int tfs_record_parse(const char *json, size_t len, tfs_record_t *rec, char *err, size_t errlen) {
  tfs__jdoc_t d;
  perr_t p = {err, errlen, &d};
  char *canon = NULL;
  tfs_record_init(rec);
  if (err && errlen)
    err[0] = '\0';
  if (len > TFS_RECORD_MAX) {
    bad(&p, "(top)", "record larger than 4 MiB");
    tfs_record_free(rec);
    return TFS_ECORRUPT;
  }
  int e = 0;
  if (tfs__json_parse(json, len, 1, &d)) {
    tfs__json_free(&d);
    e = parse_canonical(json, len, &p, &d, &canon);
  }
  if (!e)
    e = parse_doc(&p, rec);
  tfs__json_free(&d);
  free(canon);
  if (e)
    tfs_record_free(rec);
  return e;
}
