/* A task's output as an answer of read_managed_task, start_managed_task
 * and tasks/result: the record's state, its important lines as the core's
 * triage orders them (the lead, the first error, with its context, then the
 * others), the tail (or a page with sinceLine), how the wait went, trimmed
 * so that the whole tools/call result keeps within maxBytes: the tail
 * shrinks first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"
#include "taskfs/buf.h"

#define LINE_CUT 240      /* bytes kept of one output line */
#define TAIL_KEPT 1       /* tail lines kept before important lines are dropped */
#define TAIL_KEPT_PLAIN 3 /* tail lines kept before long strings are shortened */
#define PICK_COST 40      /* JSON bytes of an important line besides its text */

typedef struct {
  int64_t line;
  size_t total; /* bytes of the whole line */
  size_t len;   /* bytes kept in text */
  char text[LINE_CUT + 8];
} out_line_t;

typedef struct {
  out_line_t *v;
  size_t n, cap;
  int keep_partial; /* deliver a final line without newline */
} out_lines_t;

static int collect_line(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  out_lines_t *o = arg;
  if (partial == 1 && !o->keep_partial)
    return 0;
  if (o->n && o->v[o->n - 1].line == lineno) {
    /* Another piece of a line longer than the reader's piece size. */
    o->v[o->n - 1].total += len;
    return 0;
  }
  if (tfs_grow(&o->v, &o->cap, o->n + 1, sizeof *o->v, 32))
    return 1;
  out_line_t *l = &o->v[o->n++];
  l->line = lineno;
  l->total = len;
  l->len = len < sizeof l->text ? len : sizeof l->text;
  memcpy(l->text, line, l->len);
  return 0;
}

static json_t *line_text(const out_line_t *l) {
  char *c = mcp_text_clean_prefix(l->text, l->len, l->total, LINE_CUT);
  json_t *j = json_string(c ? c : "");
  free(c);
  return j;
}

static json_t *important_entry(const tfs_important_line_t *il, size_t cut) {
  size_t len = il->text ? strlen(il->text) : 0;
  char *c = mcp_text_clean(il->text ? il->text : "", len, cut);
  json_t *j = json_pack("{s:I, s:s, s:s}", "line", (json_int_t)il->line, "kind",
                        tfs_line_kind_name(il->kind), "text", c ? c : "");
  free(c);
  return j;
}

/* The lines of the answer: the last tail_lines or, with sinceLine, the
 * page of tail_lines after it. */
static void collect_output(tfs_store_t *store, const tfs_record_t *rec, const mcp_read_t *ra,
                           out_lines_t *out) {
  if (ra->tail_lines <= 0)
    return;
  if (ra->since_line >= 0) {
    tfs_transcript_read(store, rec->id, ra->since_line + 1, ra->tail_lines, collect_line, out);
    return;
  }
  /* The last N lines as core counts them (a final partial line is one of
   * them, held back while the task runs). */
  tfs_follower_t *f = NULL;
  if (tfs_follower_open(store, rec->id, ra->tail_lines, &f) == 0) {
    tfs_follower_next(f, out->keep_partial, collect_line, out);
    tfs_follower_close(f);
  }
}

/* ---- the lines, read on the thread pool --------------------------------- */

struct mcp_tail {
  live_scan_t *sc;    /* while queued or on the pool */
  int gone;           /* the read let go: the scan's end frees it */
  int ready;          /* out holds the lines */
  int keep_partial;   /* what they were read with (the task had ended) */
  tfs_store_t *store; /* the thread's own handle */
  char id[TFS_ID_MAX + 1];
  mcp_read_t ra; /* tail_lines and since_line only */
  out_lines_t out;
  void (*tell)(void *arg);
  void *arg;
};

static void tail_destroy(mcp_tail_t *t) {
  free(t->out.v);
  tfs_store_close(t->store);
  free(t);
}

static void tail_run(void *arg) {
  mcp_tail_t *t = arg;
  tfs_record_t rec = {0};
  snprintf(rec.id, sizeof rec.id, "%s", t->id);
  collect_output(t->store, &rec, &t->ra, &t->out);
}

static void tail_done(void *arg, int err) {
  mcp_tail_t *t = arg;
  t->sc = NULL;
  if (t->gone) {
    tail_destroy(t);
    return;
  }
  t->ready = 1;
  t->tell(t->arg);
}

int mcp_output_prepare(mcp_server_t *srv, mcp_read_t *ra, const tfs_record_t *rec,
                       void (*tell)(void *arg), void *arg) {
  int keep_partial = tfs_state_terminal(rec->state);
  mcp_tail_t *t = ra->tail;
  if (ra->tail_lines <= 0)
    return 0;
  if (t && t->sc)
    return 1;
  if (t && t->ready && t->keep_partial == keep_partial)
    return 0;
  /* None yet, or read before the task ended (its last line without a
   * newline was left out): read them (again). */
  mcp_output_tail_free(t);
  ra->tail = t = calloc(1, sizeof *t);
  if (!t || tfs_store_reopen(mcp_store(srv), &t->store)) {
    free(t);
    ra->tail = NULL;
    return 0;
  }
  snprintf(t->id, sizeof t->id, "%s", rec->id);
  t->keep_partial = t->out.keep_partial = keep_partial;
  t->ra.tail_lines = ra->tail_lines;
  t->ra.since_line = ra->since_line;
  t->tell = tell;
  t->arg = arg;
  t->sc = live_scan_submit(srv->hub, tail_run, tail_done, t);
  if (!t->sc) {
    tail_destroy(t);
    ra->tail = NULL;
    return 0;
  }
  return 1;
}

void mcp_output_tail_free(mcp_tail_t *t) {
  if (!t)
    return;
  if (!t->sc) {
    tail_destroy(t);
    return;
  }
  t->gone = 1;
  live_scan_cancel(t->sc); /* its end frees t, maybe right here */
}

/* The important lines shown: the first keep picks of the triage, each in
 * "first" (the lead, its context, the first K) or "last" (the last K), in
 * line order; "lead" names the lead's line. None in a page: the page is
 * the lines asked for. */
typedef struct {
  const tfs_important_t *imp;
  tfs_triage_t picks;
  size_t keep;
  size_t lead_cut; /* bytes kept of the lead's text */
} shown_t;

static int by_line(const void *a, const void *b) {
  const tfs_pick_t *x = *(tfs_pick_t *const *)a, *y = *(tfs_pick_t *const *)b;
  return x->line->line < y->line->line ? -1 : x->line->line > y->line->line;
}

static json_t *important_json(const shown_t *sh) {
  json_t *first = json_array(), *last = json_array();
  tfs_pick_t **order = sh->keep ? calloc(sh->keep, sizeof *order) : NULL;
  int lead = 0;
  for (size_t i = 0; order && i < sh->keep; i++) {
    order[i] = &sh->picks.v[i];
    lead |= order[i]->role == TFS_PICK_LEAD;
  }
  if (order)
    qsort(order, sh->keep, sizeof *order, by_line);
  for (size_t i = 0; order && i < sh->keep; i++)
    json_array_append_new(
        order[i]->from_last ? last : first,
        important_entry(order[i]->line, order[i]->role == TFS_PICK_LEAD ? sh->lead_cut : LINE_CUT));
  free(order);
  json_t *o = json_pack("{s:I, s:o, s:o}", "total", (json_int_t)sh->imp->total, "first", first,
                        "last", last);
  if (lead)
    json_object_set_new(o, "lead", json_integer(sh->imp->lead.line));
  return o;
}

/* What the wait saw (a match, a timeout), what a start did, and what to
 * do next. */
static void add_wait_fields(json_t *o, const mcp_read_t *ra, int terminal, int64_t waited_ms,
                            int timed_out) {
  if (ra->match_line > 0) {
    char *c = mcp_text_clean(ra->match_text ? ra->match_text : "",
                             ra->match_text ? strlen(ra->match_text) : 0, LINE_CUT);
    json_object_set_new(
        o, "match",
        json_pack("{s:I, s:s}", "line", (json_int_t)ra->match_line, "text", c ? c : ""));
    free(c);
  }
  json_object_set_new(o, "timedOut", json_boolean(timed_out));
  json_object_set_new(o, "waitedMs", json_integer(waited_ms));
  if (ra->is_start) {
    json_object_set_new(o, "existing", json_boolean(ra->existing));
    json_object_set_new(o, "started", json_boolean(!ra->existing));
    if (ra->cwd_from)
      json_object_set_new(o, "cwdFrom", json_string(ra->cwd_from));
    if (ra->cwd_note[0])
      json_object_set_new(o, "cwdNote", json_string(ra->cwd_note));
  }
  const char *hint = NULL;
  if (!terminal)
    hint = "still running: call read_managed_task with waitMs to wait for it (or untilPattern for "
           "a line)";
  else if (ra->is_start && ra->existing)
    hint = "this key names a task that has already ended; nothing ran now: pass rerun: true to "
           "run it again";
  if (hint)
    json_object_set_new(o, "hint", json_string(hint));
}

/* The answer being trimmed, and where its tail stands. */
typedef struct {
  json_t *o, *tail;
  shown_t *shown;
  size_t essential; /* the lead and its context among the picks */
  int paging;
  int64_t since_line, tail_from, next_line;
  json_t *shortened; /* the fields shorten.c cut */
  size_t left_out;   /* members left out (null members do not count) */
  int compact;       /* figures are going: null members and empty lists too */
} trim_t;

/* Drops one tail line: the oldest of a tail, the newest of a page (the
 * page then ends earlier: nextLine follows). */
static void drop_tail_line(trim_t *t) {
  size_t ntail = json_array_size(t->tail);
  if (t->paging) {
    json_array_remove(t->tail, ntail - 1);
    t->next_line = ntail > 1 ? t->next_line - 1 : t->since_line;
  } else {
    json_array_remove(t->tail, 0);
    t->tail_from++;
  }
}

/* The answer's own strings that shorten.c may cut: first the long ones,
 * last (when even the bare answer does not fit) all of them. */
static const char *const long_fields[] = {"command", "cwd", "reason", "match", NULL};
static const char *const all_fields[] = {"command", "cwd",  "reason", "match",
                                         "taskKey", "hint", NULL};
#define LONG_KEEP 200 /* a long string is cut to this before any figure goes */
#define SHORT_KEEP 24
#define LEAD_MIN 64 /* the lead's text is cut down to this before it goes */

/* Members left out, in this order: first the figures (timestamps, what
 * the task used, how the wait went), which say least about what went
 * wrong; then what the caller knows already or the state says. The task,
 * its state, exit and reason, the lead and where the output stands stay. */
static const char *const figures[] = {"cpuMs",    "maxRssKb", "createdAt",  "startedAt", "bytes",
                                      "restarts", "waitedMs", "cwdFrom",    "cwdNote",   "existing",
                                      "started",  "endedAt",  "durationMs", NULL};
static const char *const minor[] = {"hint",     "match",   "command", "cwd",
                                    "timedOut", "taskKey", "signal",  NULL};
static const char *const last_members[] = {"reason", NULL};

/* One step of trimming; 0 when nothing is left to trim. Triage order: the
 * tail (down to TAIL_KEPT_PLAIN lines, to TAIL_KEPT when there are
 * important lines to show), the important lines the triage put last, long
 * strings down to LONG_KEEP, then the figures, the rest of the tail, the
 * strings down to SHORT_KEEP, the context from its end, the minor members;
 * the lead line is cut (never below LEAD_MIN bytes and an ellipsis) only
 * then, then the strings left (the reason), and the lead goes only when
 * even that does not fit. */
static int trim_step(trim_t *t, size_t over) {
  shown_t *sh = t->shown;
  size_t ntail = json_array_size(t->tail);
  size_t floor = t->essential > 0 ? t->essential : 1;
  if (ntail > TAIL_KEPT_PLAIN || (ntail > TAIL_KEPT && sh->keep)) {
    drop_tail_line(t);
    return 1;
  }
  if (sh->keep > floor) {
    sh->keep--; /* an "other" line */
    return 2;
  }
  if (mcp_shorten(t->o, long_fields, over, LONG_KEEP, t->shortened))
    return 3;
  t->compact = 1;
  if (mcp_shorten_nulls(t->o))
    return 3;
  if (mcp_shorten_drop(t->o, figures)) {
    t->left_out++;
    return 3;
  }
  if (ntail) {
    drop_tail_line(t);
    return 1;
  }
  if (mcp_shorten(t->o, long_fields, over, SHORT_KEEP, t->shortened))
    return 3;
  if (sh->keep > 1) {
    sh->keep--; /* the context, from its end */
    return 2;
  }
  if (mcp_shorten_drop(t->o, minor)) {
    t->left_out++;
    return 3;
  }
  if (sh->keep && sh->lead_cut > LEAD_MIN) {
    /* A byte of text takes two to seven of result (both copies, a quote
     * escaped twice in the text copy): cut gently, so that no more goes
     * than has to. */
    size_t cut = over / 7 + 4;
    sh->lead_cut = sh->lead_cut > LEAD_MIN + cut ? sh->lead_cut - cut : LEAD_MIN;
    return 3;
  }
  if (mcp_shorten(t->o, all_fields, over, 0, t->shortened))
    return 3;
  if (mcp_shorten_drop(t->o, last_members)) {
    t->left_out++;
    return 3;
  }
  if (sh->keep) {
    sh->keep--;
    return 2;
  }
  return 0;
}

/* Trims (trim_step) until the whole tools/call result fits max_bytes; the
 * omitted note is part of what is measured. Returns the compact dump of
 * what is left (malloc'ed, or NULL), made for the size check and reused
 * for the reply. */
static char *trim_to_bound(trim_t *t, int64_t max_bytes) {
  size_t dropped_tail = 0, dropped_imp = 0;
  char *text = NULL;
  for (;;) {
    json_t *imp = important_json(t->shown);
    if (t->compact)
      mcp_shorten_nulls(imp);
    json_object_set_new(t->o, "important", imp);
    size_t ntail = json_array_size(t->tail);
    if (ntail || !t->compact)
      json_object_set_new(t->o, "tailFrom", ntail ? json_integer(t->tail_from) : json_null());
    else
      json_object_del(t->o, "tailFrom");
    json_object_set_new(t->o, "nextLine", json_integer(t->next_line));
    if (dropped_tail || dropped_imp || json_array_size(t->shortened) || t->left_out) {
      json_t *om = json_object(); /* what was dropped; zeros are not sent */
      if (dropped_tail)
        json_object_set_new(om, "tailLines", json_integer((json_int_t)dropped_tail));
      if (dropped_imp)
        json_object_set_new(om, "importantLines", json_integer((json_int_t)dropped_imp));
      json_t *cut = json_array(), *e; /* of the members still there */
      size_t i;
      json_array_foreach(t->shortened, i, e) {
        if (json_object_get(t->o, json_string_value(e)))
          json_array_append(cut, e);
      }
      if (json_array_size(cut))
        json_object_set(om, "shortened", cut);
      json_decref(cut);
      if (t->left_out)
        json_object_set_new(om, "fields", json_integer((json_int_t)t->left_out));
      json_object_set_new(t->o, "omitted", om);
    }
    free(text);
    text = json_dumps(t->o, JSON_COMPACT);
    size_t size = text ? mcp_result_size(text) : 0;
    if (!text || size <= (size_t)max_bytes)
      break;
    int step = trim_step(t, size - (size_t)max_bytes);
    if (!step)
      break; /* as small as it gets */
    dropped_tail += step == 1;
    dropped_imp += step == 2;
  }
  return text;
}

json_t *mcp_output_build(mcp_server_t *srv, const tfs_record_t *rec, const mcp_read_t *ra,
                         int64_t waited_ms, int timed_out, char **text) {
  json_t *o = mcp_record_compact(rec);
  int terminal = tfs_state_terminal(rec->state);
  int paging = ra->since_line >= 0;
  out_lines_t out = {.keep_partial = terminal};
  mcp_tail_t *ready = ra->tail;
  if (ready && ready->ready && ready->keep_partial == terminal) {
    out = ready->out; /* read on the pool (mcp_output_prepare) */
    ready->out = (out_lines_t){0};
    ready->ready = 0;
  } else {
    collect_output(mcp_store(srv), rec, ra, &out);
  }
  /* The picks that can fit at all: half the bound (the text goes out
   * twice, as text and as structured content), less for a page. */
  shown_t sh = {.imp = &rec->important, .lead_cut = LINE_CUT};
  if (!paging)
    tfs_triage_select(&rec->important, (size_t)(ra->max_bytes - (int64_t)ra->extra_bytes) / 2,
                      PICK_COST, &sh.picks);
  sh.keep = sh.picks.n;
  size_t essential = 0;
  while (essential < sh.picks.n && sh.picks.v[essential].role != TFS_PICK_OTHER)
    essential++;
  json_object_set_new(o, "important", json_null()); /* its place; trim_to_bound fills it */
  json_t *tail = json_array();
  for (size_t i = 0; i < out.n; i++)
    json_array_append_new(tail, line_text(&out.v[i]));
  json_object_set_new(o, "tail", tail);
  trim_t t = {
      .o = o,
      .tail = tail,
      .shown = &sh,
      .essential = essential,
      .paging = paging,
      .since_line = ra->since_line,
      .shortened = json_array(),
      .tail_from = out.n ? out.v[0].line : 0,
      .next_line = out.n ? out.v[out.n - 1].line : (paging ? ra->since_line : rec->lines),
  };
  free(out.v);
  add_wait_fields(o, ra, terminal, waited_ms, timed_out);
  *text = trim_to_bound(&t, ra->max_bytes - (int64_t)ra->extra_bytes);
  json_decref(t.shortened);
  tfs_triage_free(&sh.picks);
  return o;
}
