/* The CUSTOM rows of the record.json field table: the members whose shape
 * no row type says (the version, the exact bytes of the command and cwd,
 * the signal's name, the restart history, the per-resource limits, the
 * kept lines, a job's step), each written and read here, for the table
 * (core/record_fields.c). Layer: above the primitives (record_dump.c,
 * record_parse.c), below the table. */
#include "core/record_custom.h"
#include "core/record_rows.h"
#include "taskfs/text.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define EXIT(m) offsetof(tfs_exit_t, m)

/* One run in restart.exits; treePeakKb is read from older writers. These
 * rows live here, beside the two functions that walk them, rather than in
 * the table (core/record_fields.c): the table uses this file, so this file
 * must not use the table, only the writer's and reader's primitives. */
static const rf_field_t exit_rows[] = {
    TIME("started", EXIT(started_ms)),
    TIME("ended", EXIT(ended_ms)),
    INT("exitCode", RF_I32, EXIT(exit_code), 0, 255, RF_NULL_NEG),
    INT("signal", RF_I32, EXIT(signal), 0, 128, RF_NULL_ZERO),
    BOOL("requested", EXIT(requested)),
    BOOL("timedOut", EXIT(timed_out)),
    INT("cpuUserMs", RF_I64, EXIT(use.user_ms), 0, I64MAX, 0),
    INT("cpuSystemMs", RF_I64, EXIT(use.sys_ms), 0, I64MAX, 0),
    INT("maxRssKb", RF_I64, EXIT(use.maxrss_kb), 0, I64MAX, 0),
    INT("outputBytes", RF_I64, EXIT(use.output_bytes), 0, I64MAX, 0),
    INT("treePeakKb", RF_I64, EXIT(use.tree_peak_kb), 0, I64MAX, RF_NOWRITE),
    END,
};

#define key tfs__jw_key
#define str tfs__jw_str
#define num tfs__jw_num
#define bad tfs__rf_bad
#define type tfs__rf_type
#define opt tfs__rf_opt
#define get tfs__rf_get

void tfs__rf_write_version(jw_t *w, const void *rec) {
  key(w, "v");
  num(w, TFS_RECORD_VERSION);
}

int tfs__rf_read_version(rf_reader_t *p, int j, void *rec) {
  int v = get(p, j, "v");
  if (type(p, v) != TFS__J_INT || p->d->v[v].i != TFS_RECORD_VERSION)
    return bad(p, "v", "expected version 1");
  return 0;
}

static int utf8_ok(const char *s) {
  return tfs__utf8_valid(s, strlen(s));
}

/* One exact-bytes element: {"b64": "..."} */
static void b64(jw_t *w, const char *s) {
  char *e = tfs_b64_encode(s, strlen(s));
  if (!e) {
    w->b.oom = 1;
    return;
  }
  tfs__jw_open(w, '{');
  key(w, "b64");
  str(w, e);
  tfs__jw_close(w, '}');
  free(e);
}

/* "commandBytes" and "cwdBytes" follow "command" and "cwd" only when some
 * argument (or the cwd) is not valid UTF-8; when read, they replace the
 * display forms. */
void tfs__rf_write_command_bytes(jw_t *w, const void *base) {
  const tfs_record_t *rec = base;
  int exact = 0;
  for (int i = 0; rec->argv && rec->argv[i]; i++)
    exact |= !utf8_ok(rec->argv[i]);
  if (!exact)
    return;
  key(w, "commandBytes");
  tfs__jw_open(w, '[');
  for (int i = 0; rec->argv[i]; i++) {
    tfs__jw_item(w);
    if (utf8_ok(rec->argv[i]))
      str(w, rec->argv[i]);
    else
      b64(w, rec->argv[i]);
  }
  tfs__jw_close(w, ']');
}

void tfs__rf_write_cwd_bytes(jw_t *w, const void *base) {
  const tfs_record_t *rec = base;
  if (rec->cwd && !utf8_ok(rec->cwd)) {
    key(w, "cwdBytes");
    b64(w, rec->cwd);
  }
}

/* One exact-bytes element: a plain string or {"b64": "..."}. */
static int get_bytes_elem(rf_reader_t *p, int e, const char *name, char **out) {
  char buf[128], *heap;
  int b = type(p, e) == TFS__J_OBJ ? get(p, e, "b64") : -1;
  if (type(p, e) == TFS__J_STR) {
    *out = tfs__json_str(p->d, e, NULL);
  } else if (type(p, b) == TFS__J_STR) {
    const char *s = tfs__rf_cstr(p, b, buf, &heap);
    *out = s ? tfs_b64_decode(s) : NULL;
    free(heap);
    if (s && !*out)
      return bad(p, name, "expected base64 bytes without NUL");
  } else {
    return bad(p, name, "expected a string or {\"b64\": string}");
  }
  return *out ? 0 : -ENOMEM;
}

int tfs__rf_read_command_bytes(rf_reader_t *p, int j, void *base) {
  tfs_record_t *rec = base;
  int v = opt(p, j, "commandBytes"), err;
  if (v < 0)
    return 0;
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
  return 0;
}

int tfs__rf_read_cwd_bytes(rf_reader_t *p, int j, void *base) {
  tfs_record_t *rec = base;
  int v = opt(p, j, "cwdBytes"), err;
  char *c;
  if (v < 0)
    return 0;
  if ((err = get_bytes_elem(p, v, "cwdBytes", &c)))
    return err;
  free(rec->cwd);
  rec->cwd = c;
  return 0;
}

/* Named as the supervisor's reasons name it (a real-time signal too). */
void tfs__rf_write_signal_name(jw_t *w, const void *base) {
  const tfs_record_t *rec = base;
  char name[TFS_SIGNAME_MAX];
  key(w, "signalName");
  if (rec->signal)
    str(w, tfs_signal_name(rec->signal, name));
  else
    tfs__jw_raw(w, "null");
}

void tfs__rf_write_exits(jw_t *w, const void *base) {
  const tfs_record_t *rec = base;
  int n = rec->nexits < 0 ? 0 : rec->nexits > TFS_LAST_EXITS ? TFS_LAST_EXITS : rec->nexits;
  key(w, "exits");
  tfs__jw_open(w, '[');
  for (int i = 0; i < n; i++) {
    tfs__jw_item(w);
    tfs__jw_open(w, '{');
    tfs__jw_fields(w, exit_rows, &rec->exits[i]);
    tfs__jw_close(w, '}');
  }
  tfs__jw_close(w, ']');
}

/* restart.exits: the newest TFS_LAST_EXITS if a writer kept more. */
int tfs__rf_read_exits(rf_reader_t *p, int o, void *base) {
  tfs_record_t *rec = base;
  int v = opt(p, o, "exits");
  if (v < 0)
    return 0;
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
    if ((err = tfs__rf_fields(p, e, exit_rows, x)))
      return err;
    rec->nexits++;
  }
  return 0;
}

static const char *const from_names[] = {"none", "given", "config"};

const char *tfs__rf_from_name(int f) {
  return f == TFS_FROM_GIVEN ? "given" : f == TFS_FROM_CONFIG ? "config" : "none";
}

int tfs__rf_from_parse(const char *s, int *out) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(s, from_names[i])) {
      *out = i;
      return 0;
    }
  return -1;
}

static int is_from(const char *s, void *out) {
  int v;
  if (tfs__rf_from_parse(s, &v))
    return 0;
  *(tfs_from_t *)out = (tfs_from_t)v;
  return 1;
}

static int is_via(const char *s, void *out) {
  tfs_via_t v = !strcmp(s, "cgroup")        ? TFS_VIA_CGROUP
                : !strncmp(s, "RLIMIT_", 7) ? TFS_VIA_RLIMIT
                                            : TFS_VIA_NONE;
  *(tfs_via_t *)out = v;
  return v != TFS_VIA_NONE;
}

/* NAME {value, from, via, note} for each resource limit given or a default
 * (value null: "none" was asked for); via names the limit's RLIMIT_*. */
void tfs__rf_write_limits(jw_t *w, const void *base) {
  const tfs_limits_t *l = base;
  for (int i = 0; i < TFS_LIMIT_COUNT; i++) {
    const tfs_limit_val_t *v = &l->v[i];
    if (v->from == TFS_FROM_NONE)
      continue;
    key(w, tfs_limit_name((tfs_limit_t)i));
    tfs__jw_open(w, '{');
    key(w, "value");
    tfs__jw_num_or_null(w, v->value != TFS_LIMIT_NONE, v->value);
    key(w, "from");
    str(w, tfs__rf_from_name(v->from));
    key(w, "via");
    str(w, v->via == TFS_VIA_CGROUP   ? "cgroup"
           : v->via == TFS_VIA_RLIMIT ? tfs_limit_rlimit_name((tfs_limit_t)i)
                                      : NULL);
    if (v->note) {
      key(w, "note");
      str(w, v->note);
    }
    tfs__jw_close(w, '}');
  }
}

int tfs__rf_read_limits(rf_reader_t *p, int o, void *base) {
  tfs_limits_t *l = base;
  for (int i = 0; i < TFS_LIMIT_COUNT; i++) {
    tfs_limit_val_t *lv = &l->v[i];
    const char *name = tfs_limit_name((tfs_limit_t)i);
    int t = opt(p, o, name), v, ok, err;
    if (t < 0)
      continue;
    if (type(p, t) != TFS__J_OBJ)
      return bad(p, name, "expected an object");
    lv->from = TFS_FROM_GIVEN;
    if ((err = tfs__rf_get_int(p, t, "value", 0, INT64_MAX, &lv->value)))
      return err;
    if ((v = opt(p, t, "from")) >= 0 && (ok = tfs__rf_check_str(p, v, is_from, &lv->from)) <= 0)
      return ok < 0 ? -ENOMEM : bad(p, "from", "expected given|config|none");
    if ((v = opt(p, t, "via")) >= 0 && (ok = tfs__rf_check_str(p, v, is_via, &lv->via)) <= 0)
      return ok < 0 ? -ENOMEM : bad(p, "via", "expected cgroup or RLIMIT_*");
    if ((err = tfs__rf_get_str(p, t, "note", &lv->note)))
      return err;
  }
  return 0;
}

void tfs__rf_write_step(jw_t *w, const void *base) {
  const tfs_executor_t *ex = base;
  char step[80];
  /* The job's first step, <id>.0: srun makes one per job. */
  snprintf(step, sizeof step, "%.60s.0", ex->job_id ? ex->job_id : "");
  key(w, "step");
  str(w, ex->job_id ? step : NULL);
}

static int is_kind(const char *s, void *out) {
  return tfs_line_kind_parse(s, out) == 0;
}

/* One kept line, {line, kind, text} (kind NULL: {line, text}): its fields,
 * the text malloc'ed. Returns 0, or 1 if the entry has not that form. */
static int line_entry(rf_reader_t *p, int e, tfs_line_kind_t *k, int64_t *line, char **text,
                      size_t *len) {
  int l = type(p, e) == TFS__J_OBJ ? get(p, e, "line") : -1;
  int t = type(p, e) == TFS__J_OBJ ? get(p, e, "text") : -1;
  int kind = k && type(p, e) == TFS__J_OBJ ? get(p, e, "kind") : -1;
  if (type(p, l) != TFS__J_INT || type(p, t) != TFS__J_STR ||
      (k && (type(p, kind) != TFS__J_STR || tfs__rf_check_str(p, kind, is_kind, k) != 1)))
    return 1;
  *line = p->d->v[l].i;
  return (*text = tfs__json_str(p->d, t, len)) ? 0 : -ENOMEM;
}

/* important.first / last: {line, kind, text} entries. */
static int parse_important_list(rf_reader_t *p, int arr, const char *name, tfs_important_t *imp) {
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
static int parse_lead(rf_reader_t *p, int o, tfs_important_t *imp) {
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

void tfs__rf_write_important_line(jw_t *w, const tfs_important_line_t *l) {
  tfs__jw_item(w);
  tfs__jw_open(w, '{');
  key(w, "line");
  num(w, l->line);
  key(w, "kind");
  str(w, tfs_line_kind_name(l->kind));
  key(w, "text");
  str(w, l->text ? l->text : "");
  tfs__jw_close(w, '}');
}

static void dump_important_list(jw_t *w, const char *name, const tfs_important_t *imp, int last) {
  size_t n = last ? imp->nlast : imp->nfirst;
  key(w, name);
  tfs__jw_open(w, '[');
  for (size_t i = 0; i < n && (last ? imp->last : imp->first); i++)
    tfs__rf_write_important_line(w, last ? tfs_important_last(imp, i) : &imp->first[i]);
  tfs__jw_close(w, ']');
}

/* The lead and its context, when there is one (core/lead.c). */
static void dump_lead(jw_t *w, const tfs_important_t *imp) {
  if (!imp->lead.text)
    return;
  key(w, "lead");
  tfs__jw_open(w, '{');
  key(w, "line");
  num(w, imp->lead.line);
  key(w, "kind");
  str(w, tfs_line_kind_name(imp->lead.kind));
  key(w, "text");
  str(w, imp->lead.text);
  tfs__jw_close(w, '}');
  key(w, "context");
  tfs__jw_open(w, '[');
  for (size_t i = 0; i < imp->ncontext; i++) {
    tfs__jw_item(w);
    tfs__jw_open(w, '{');
    key(w, "line");
    num(w, imp->context[i].line);
    key(w, "text");
    str(w, imp->context[i].text ? imp->context[i].text : "");
    tfs__jw_close(w, '}');
  }
  tfs__jw_close(w, ']');
}

void tfs__rf_write_important(jw_t *w, const void *base) {
  const tfs_important_t *imp = base;
  key(w, "k");
  num(w, imp->k);
  key(w, "total");
  num(w, imp->total);
  dump_important_list(w, "first", imp, 0);
  dump_important_list(w, "last", imp, 1);
  dump_lead(w, imp);
}

/* important {k, total, first, last, lead, context}: the lines are added
 * again, so k comes first and the total is at least what they count. */
int tfs__rf_read_important(rf_reader_t *p, int o, void *base) {
  tfs_important_t *imp = base;
  int64_t k = TFS_IMPORTANT_K_DEFAULT, total = 0;
  int err;
  if ((err = tfs__rf_get_int(p, o, "k", 1, TFS_IMPORTANT_K_MAX, &k)) ||
      (err = tfs__rf_get_int(p, o, "total", 0, INT64_MAX, &total)))
    return err;
  tfs_important_free(imp);
  memset(imp, 0, sizeof *imp);
  if ((err = tfs_important_init(imp, (int)k)))
    return err;
  if ((err = parse_important_list(p, get(p, o, "first"), "first", imp)) ||
      (err = parse_important_list(p, get(p, o, "last"), "last", imp)) ||
      (err = parse_lead(p, o, imp)))
    return err;
  if (total > imp->total)
    imp->total = total;
  return 0;
}
