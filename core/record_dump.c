/* record.json text from a record: version 1, camelCase, two-space indent.
 *
 * The text is written straight into one growing buffer instead of being
 * built as a jansson tree and serialized: a record is dumped at every save
 * of a supervisor and once per task by `taskfs ls --json`, and the tree
 * cost more than the parse. The bytes are exactly what jansson's
 * json_dumps(JSON_INDENT(2) | JSON_PRESERVE_ORDER) gives for the same
 * values (tests/test_record.c checks it), so files written before and
 * after read the same: strings are valid UTF-8 (tfs_utf8_sanitize), and
 * only '"', '\\' and C0 controls are escaped (\b \f \n \r \t, else
 * \u00XX in upper-case hex). */
#include "core/internal.h"
#include "taskfs/text.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define DEPTH_MAX 8

typedef struct {
  char *buf;
  size_t len, cap;
  int depth;
  int first[DEPTH_MAX]; /* nothing written yet at this depth */
  int oom;
} jw_t;

static void put(jw_t *w, const char *s, size_t n) {
  if (w->oom)
    return;
  if (w->len + n + 2 > w->cap) {
    size_t cap = w->cap ? w->cap : 1024;
    while (w->len + n + 2 > cap)
      cap *= 2;
    char *b = realloc(w->buf, cap);
    if (!b) {
      w->oom = 1;
      return;
    }
    w->buf = b;
    w->cap = cap;
  }
  memcpy(w->buf + w->len, s, n);
  w->len += n;
}

static void puts_(jw_t *w, const char *s) {
  put(w, s, strlen(s));
}

static void newline(jw_t *w) {
  static const char spaces[] = "                ";
  put(w, "\n", 1);
  put(w, spaces,
      (size_t)(2 * w->depth) < sizeof spaces - 1 ? (size_t)(2 * w->depth) : sizeof spaces - 1);
}

/* Starts the next value of the current array or object. */
static void item(jw_t *w) {
  if (!w->first[w->depth])
    put(w, ",", 1);
  w->first[w->depth] = 0;
  newline(w);
}

/* Keys are our own ASCII names: no escaping needed. */
static void key(jw_t *w, const char *k) {
  item(w);
  put(w, "\"", 1);
  puts_(w, k);
  put(w, "\": ", 3);
}

static void open_(jw_t *w, char c) {
  put(w, &c, 1);
  w->depth++;
  w->first[w->depth] = 1;
}

static void close_(jw_t *w, char c) {
  int empty = w->first[w->depth];
  w->depth--;
  if (!empty)
    newline(w);
  put(w, &c, 1);
}

/* Writes s[0..len) as a JSON string body: valid UTF-8 with the escapes
 * jansson uses. */
static void put_escaped(jw_t *w, const char *s, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t run = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    put(w, s + run, i - run);
    run = i + 1;
    char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
    size_t n = 2;
    switch (c) {
    case '"':
    case '\\':
      esc[1] = (char)c;
      break;
    case '\b':
      esc[1] = 'b';
      break;
    case '\f':
      esc[1] = 'f';
      break;
    case '\n':
      esc[1] = 'n';
      break;
    case '\r':
      esc[1] = 'r';
      break;
    case '\t':
      esc[1] = 't';
      break;
    default:
      memcpy(esc + 1, "u00", 3);
      esc[4] = hex[c >> 4];
      esc[5] = hex[c & 15];
      n = 6;
    }
    put(w, esc, n);
  }
  put(w, s + run, len - run);
}

/* A string value (outside bytes are made valid UTF-8 first), or null. */
static void str(jw_t *w, const char *s) {
  if (!s) {
    puts_(w, "null");
    return;
  }
  size_t len = strlen(s);
  char *clean = NULL;
  if (!tfs__utf8_valid(s, len)) {
    if (!(clean = tfs_utf8_sanitize(s, len, &len))) {
      w->oom = 1;
      return;
    }
    s = clean;
  }
  put(w, "\"", 1);
  put_escaped(w, s, len);
  put(w, "\"", 1);
  free(clean);
}

static void num(jw_t *w, int64_t v) {
  char b[24];
  int n = snprintf(b, sizeof b, "%" PRId64, v);
  put(w, b, (size_t)n);
}

static void num_or_null(jw_t *w, int present, int64_t v) {
  if (present)
    num(w, v);
  else
    puts_(w, "null");
}

static void when(jw_t *w, int64_t ms) {
  char b[TFS_TIME_BUF];
  if (!ms) {
    puts_(w, "null");
    return;
  }
  put(w, "\"", 1);
  puts_(w, tfs_time_format(ms, b));
  put(w, "\"", 1);
}

static void strv(jw_t *w, char *const *v) {
  open_(w, '[');
  for (int i = 0; v && v[i]; i++) {
    item(w);
    str(w, v[i]);
  }
  close_(w, ']');
}

/* One exact-bytes element: {"b64": "..."} */
static void b64(jw_t *w, const char *s) {
  char *e = tfs_b64_encode(s, strlen(s));
  if (!e) {
    w->oom = 1;
    return;
  }
  open_(w, '{');
  key(w, "b64");
  str(w, e);
  close_(w, '}');
  free(e);
}

static int utf8_ok(const char *s) {
  return tfs__utf8_valid(s, strlen(s));
}

/* "command" is the display form; "commandBytes" and "cwdBytes" follow it
 * only when some argument (or the cwd) is not valid UTF-8. */
static void dump_command(jw_t *w, const tfs_record_t *rec) {
  int exact = 0;
  key(w, "command");
  strv(w, rec->argv);
  for (int i = 0; rec->argv && rec->argv[i]; i++)
    exact |= !utf8_ok(rec->argv[i]);
  if (exact) {
    key(w, "commandBytes");
    open_(w, '[');
    for (int i = 0; rec->argv[i]; i++) {
      item(w);
      if (utf8_ok(rec->argv[i]))
        str(w, rec->argv[i]);
      else
        b64(w, rec->argv[i]);
    }
    close_(w, ']');
  }
  key(w, "cwd");
  str(w, rec->cwd);
  if (rec->cwd && !utf8_ok(rec->cwd)) {
    key(w, "cwdBytes");
    b64(w, rec->cwd);
  }
  key(w, "env");
  strv(w, rec->env_names);
}

/* queue, after, notBefore, stdin: where and when it starts. */
static void dump_schedule(jw_t *w, const tfs_record_t *rec) {
  key(w, "queue");
  str(w, rec->queue[0] ? rec->queue : NULL);
  key(w, "after");
  strv(w, rec->after);
  key(w, "notBefore");
  when(w, rec->not_before_ms);
  key(w, "stdin");
  puts_(w, rec->with_stdin ? "true" : "false");
}

static void dump_outcome(jw_t *w, const tfs_record_t *rec) {
  key(w, "state");
  str(w, tfs_state_name(rec->state));
  key(w, "exitCode");
  num_or_null(w, rec->exit_code >= 0, rec->exit_code);
  key(w, "signal");
  num_or_null(w, rec->signal != 0, rec->signal);
  /* Named as the supervisor's reasons name it (a real-time signal too). */
  char name[TFS_SIGNAME_MAX];
  key(w, "signalName");
  if (rec->signal)
    str(w, tfs_signal_name(rec->signal, name));
  else
    puts_(w, "null");
  key(w, "reason");
  str(w, rec->reason);
  key(w, "created");
  when(w, rec->created_ms);
  key(w, "started");
  when(w, rec->started_ms);
  key(w, "ended");
  when(w, rec->ended_ms);
  key(w, "aliveAt");
  when(w, rec->alive_ms);
}

static void dump_processes(jw_t *w, const tfs_record_t *rec) {
  key(w, "supervisor");
  if (rec->supervisor_pid > 0) {
    open_(w, '{');
    key(w, "pid");
    num(w, rec->supervisor_pid);
    key(w, "started");
    when(w, rec->supervisor_started_ms);
    key(w, "exe");
    str(w, rec->supervisor_exe);
    key(w, "host");
    str(w, rec->supervisor_host);
    close_(w, '}');
  } else {
    puts_(w, "null");
  }
  key(w, "creator");
  if (rec->creator_pid > 0) {
    open_(w, '{');
    key(w, "pid");
    num(w, rec->creator_pid);
    key(w, "startTicks");
    num(w, (int64_t)rec->creator_start_ticks);
    key(w, "bootId");
    str(w, rec->creator_boot);
    close_(w, '}');
  } else {
    puts_(w, "null");
  }
  key(w, "worker");
  if (rec->worker_pid > 0) {
    open_(w, '{');
    key(w, "pid");
    num(w, rec->worker_pid);
    key(w, "pgid");
    num(w, rec->worker_pgid);
    close_(w, '}');
  } else {
    puts_(w, "null");
  }
}

/* What a run (or the task) used; the tree's peak only with a cgroup. */
static void dump_use(jw_t *w, const tfs_usage_t *u, int total) {
  key(w, "cpuUserMs");
  num(w, u->user_ms);
  key(w, "cpuSystemMs");
  num(w, u->sys_ms);
  key(w, "maxRssKb");
  num(w, u->maxrss_kb);
  key(w, "outputBytes");
  num(w, u->output_bytes);
  if (total) {
    key(w, "treePeakKb");
    num_or_null(w, u->tree_peak_kb >= 0, u->tree_peak_kb);
  }
}

static const char *from_name(tfs_from_t f) {
  return f == TFS_FROM_GIVEN ? "given" : f == TFS_FROM_CONFIG ? "config" : "none";
}

/* limits {timeout {ms, from}, NAME {value, from, via, note}..., cgroup}:
 * the timeout always (from "none" without one), a resource limit when
 * given or a default (value null: "none" was asked for). */
static void dump_limits(jw_t *w, const tfs_record_t *rec) {
  const tfs_limits_t *l = &rec->limits;
  key(w, "limits");
  open_(w, '{');
  key(w, "timeout");
  open_(w, '{');
  key(w, "ms");
  num_or_null(w, l->timeout_ms > 0, l->timeout_ms);
  key(w, "from");
  str(w, from_name(l->timeout_from));
  close_(w, '}');
  for (int i = 0; i < TFS_LIMIT_COUNT; i++) {
    const tfs_limit_val_t *v = &l->v[i];
    if (v->from == TFS_FROM_NONE)
      continue;
    key(w, tfs_limit_name((tfs_limit_t)i));
    open_(w, '{');
    key(w, "value");
    num_or_null(w, v->value != TFS_LIMIT_NONE, v->value);
    key(w, "from");
    str(w, from_name(v->from));
    key(w, "via");
    str(w, v->via == TFS_VIA_CGROUP   ? "cgroup"
           : v->via == TFS_VIA_RLIMIT ? tfs_limit_rlimit_name((tfs_limit_t)i)
                                      : NULL);
    if (v->note) {
      key(w, "note");
      str(w, v->note);
    }
    close_(w, '}');
  }
  if (l->cgroup) {
    key(w, "cgroup");
    str(w, l->cgroup);
  }
  close_(w, '}');
}

static void dump_usage(jw_t *w, const tfs_record_t *rec) {
  key(w, "usage");
  open_(w, '{');
  dump_use(w, &rec->usage, 1);
  key(w, "queuedMs");
  num(w, rec->queued_ms);
  close_(w, '}');
}

static void dump_restart(jw_t *w, const tfs_record_t *rec) {
  key(w, "restart");
  open_(w, '{');
  key(w, "policy");
  str(w, tfs_restart_name(rec->restart));
  key(w, "minUptimeMs");
  num(w, rec->min_uptime_ms);
  key(w, "maxRestarts");
  num_or_null(w, rec->max_restarts >= 0, rec->max_restarts);
  key(w, "maxQuickRestarts");
  num(w, rec->max_quick_restarts);
  key(w, "graceMs");
  num(w, rec->grace_ms);
  key(w, "onTimeout");
  puts_(w, rec->restart_on_timeout ? "true" : "false");
  key(w, "count");
  num(w, rec->restarts);
  key(w, "exits");
  open_(w, '[');
  int nexits = rec->nexits < 0 ? 0 : rec->nexits > TFS_LAST_EXITS ? TFS_LAST_EXITS : rec->nexits;
  for (int i = 0; i < nexits; i++) {
    const tfs_exit_t *e = &rec->exits[i];
    item(w);
    open_(w, '{');
    key(w, "started");
    when(w, e->started_ms);
    key(w, "ended");
    when(w, e->ended_ms);
    key(w, "exitCode");
    num_or_null(w, e->exit_code >= 0, e->exit_code);
    key(w, "signal");
    num_or_null(w, e->signal != 0, e->signal);
    key(w, "requested");
    puts_(w, e->requested ? "true" : "false");
    key(w, "timedOut");
    puts_(w, e->timed_out ? "true" : "false");
    dump_use(w, &e->use, 0);
    close_(w, '}');
  }
  close_(w, ']');
  close_(w, '}');
}

static void dump_important_list(jw_t *w, const char *name, const tfs_important_t *imp, int last) {
  size_t n = last ? imp->nlast : imp->nfirst;
  key(w, name);
  open_(w, '[');
  for (size_t i = 0; i < n && (last ? imp->last : imp->first); i++) {
    const tfs_important_line_t *l = last ? tfs_important_last(imp, i) : &imp->first[i];
    item(w);
    open_(w, '{');
    key(w, "line");
    num(w, l->line);
    key(w, "kind");
    str(w, tfs_line_kind_name(l->kind));
    key(w, "text");
    str(w, l->text ? l->text : "");
    close_(w, '}');
  }
  close_(w, ']');
}

/* The lead and its context, when there is one (core/lead.c). */
static void dump_lead(jw_t *w, const tfs_important_t *imp) {
  if (!imp->lead.text)
    return;
  key(w, "lead");
  open_(w, '{');
  key(w, "line");
  num(w, imp->lead.line);
  key(w, "kind");
  str(w, tfs_line_kind_name(imp->lead.kind));
  key(w, "text");
  str(w, imp->lead.text);
  close_(w, '}');
  key(w, "context");
  open_(w, '[');
  for (size_t i = 0; i < imp->ncontext; i++) {
    item(w);
    open_(w, '{');
    key(w, "line");
    num(w, imp->context[i].line);
    key(w, "text");
    str(w, imp->context[i].text ? imp->context[i].text : "");
    close_(w, '}');
  }
  close_(w, ']');
}

static void dump_counters(jw_t *w, const tfs_record_t *rec) {
  key(w, "cancel");
  if (rec->cancel_by || rec->cancel_ms) {
    open_(w, '{');
    key(w, "by");
    str(w, rec->cancel_by ? rec->cancel_by : "");
    key(w, "at");
    when(w, rec->cancel_ms);
    close_(w, '}');
  } else {
    puts_(w, "null");
  }
  key(w, "transcript");
  open_(w, '{');
  key(w, "lines");
  num(w, rec->lines);
  key(w, "bytes");
  num(w, rec->bytes);
  key(w, "stderr");
  str(w, tfs_stderr_name(rec->stderr_mode));
  if (rec->lost_bytes > 0) {
    key(w, "lostBytes");
    num(w, rec->lost_bytes);
    key(w, "lostLines");
    num(w, rec->lost_lines);
    key(w, "lostFirst");
    when(w, rec->lost_first_ms);
    key(w, "lostLast");
    when(w, rec->lost_last_ms);
  }
  close_(w, '}');
  dump_usage(w, rec);
  key(w, "important");
  open_(w, '{');
  key(w, "k");
  num(w, rec->important.k);
  key(w, "total");
  num(w, rec->important.total);
  dump_important_list(w, "first", &rec->important, 0);
  dump_important_list(w, "last", &rec->important, 1);
  dump_lead(w, &rec->important);
  close_(w, '}');
}

/* executor {engine, options, job}: job {id, name, step, state, reason,
 * partition, nodes, queueWaitMs} once the engine has submitted one (the
 * step is the job's first, <id>.0: srun makes one per job). */
static void dump_executor(jw_t *w, const tfs_executor_t *ex) {
  key(w, "executor");
  open_(w, '{');
  key(w, "engine");
  str(w, tfs_engine_name(ex->engine));
  key(w, "options");
  strv(w, ex->options);
  key(w, "job");
  if (ex->job_id || ex->job_name) {
    char step[80];
    snprintf(step, sizeof step, "%.60s.0", ex->job_id ? ex->job_id : "");
    open_(w, '{');
    key(w, "id");
    str(w, ex->job_id);
    key(w, "name");
    str(w, ex->job_name);
    key(w, "step");
    str(w, ex->job_id ? step : NULL);
    key(w, "state");
    str(w, ex->job_state);
    key(w, "reason");
    str(w, ex->job_reason);
    key(w, "partition");
    str(w, ex->partition);
    key(w, "nodes");
    str(w, ex->nodes);
    key(w, "queueWaitMs");
    num_or_null(w, ex->queue_wait_ms >= 0, ex->queue_wait_ms);
    close_(w, '}');
  } else {
    puts_(w, "null");
  }
  close_(w, '}');
}

char *tfs_record_dump(const tfs_record_t *rec) {
  jw_t w = {0};
  open_(&w, '{');
  key(&w, "v");
  num(&w, TFS_RECORD_VERSION);
  key(&w, "id");
  str(&w, rec->id);
  key(&w, "key");
  str(&w, rec->key[0] ? rec->key : NULL);
  key(&w, "number");
  num_or_null(&w, rec->number > 0, rec->number);
  dump_command(&w, rec);
  dump_schedule(&w, rec);
  dump_outcome(&w, rec);
  dump_processes(&w, rec);
  dump_restart(&w, rec);
  dump_limits(&w, rec);
  dump_counters(&w, rec);
  dump_executor(&w, &rec->exec);
  close_(&w, '}');
  /* A trailing newline makes `cat record.json` friendly. */
  put(&w, "\n", 1);
  if (w.oom) {
    free(w.buf);
    return NULL;
  }
  w.buf[w.len] = '\0';
  return w.buf;
}
