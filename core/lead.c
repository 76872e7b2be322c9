/* The lead: the first error of a task's output, the line an agent reads
 * first, and the lines the tool printed around it as its context.
 *
 * It is chosen as the output goes by, from the rank the classifier gives
 * every important line (core/internal.h): the first line that is an error
 * or a failure becomes the lead; a line of a higher rank replaces it if it
 * comes within UPGRADE_WINDOW lines of the first error (the exception after
 * "Traceback (most recent call last):", the compiler's diagnostic after
 * "npm error code 1", the assertion after "--- FAIL: TestX"), or at any
 * distance while the lead is only a verdict ("make: *** [x] Error 1").
 *
 * Context comes from both sides. Before the lead, from the last RING lines
 * kept for that: the location above it (a traceback's last frame with its
 * code line, node's throw site, eslint's file heading, gcc's "In function",
 * ld's "in function") or the failing test's heading right above it. After
 * the lead, from the next AFTER_WINDOW lines: the line or two that go on
 * from it (a panic's message, cmake's explanation), the forms of context
 * (Expected/Received, "-->", "symbol:", a caret with a message) and the
 * first stack frame of the program's own code, until the next report
 * begins. What each line is comes from tfs__context_form().
 *
 * Once the lead can no longer change and its context is complete, the
 * tracker is freed and feeding costs nothing more than classifying. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/important_text.h"
#include "core/lead.h"

#define RING 4            /* lines kept before the lead */
#define RAW_MAX 320       /* bytes kept of each (escapes included) */
#define UPGRADE_WINDOW 40 /* lines after the first error a better one may come */
#define AFTER_WINDOW 20   /* lines after the lead looked at for context */
#define BEFORE_MAX 3      /* context lines above the lead */
#define AFTER_MAX 5       /* context lines below it */
#define NEAR_BEFORE 6     /* how far above the lead its context may be */

typedef struct {
  int64_t line;
  int rank;
  size_t len;
  char raw[RAW_MAX];
} ring_line_t;

struct tfs__lead_tracker {
  ring_line_t ring[RING];
  size_t nring, head; /* head: the slot written next */
  int rank;           /* the lead's */
  int64_t window_from;
  int64_t after_to; /* context is taken from the lines up to here (0: done) */
  int after, others, nonempty, frames, user_frame;
};

typedef struct tfs__lead_tracker tracker_t;

void tfs__lead_free(tfs_important_t *imp) {
  free(imp->tracker);
  imp->tracker = NULL;
}

/* The i-th newest line of the ring (0: the line just before this one). */
static ring_line_t *newest(tracker_t *t, size_t i) {
  return i < t->nring ? &t->ring[(t->head + RING - 1 - i) % RING] : NULL;
}

/* Copies n bytes: libc's memcpy, which copies a line's few dozen bytes in
 * a couple of vector moves, where an inlined copy becomes "rep movsq". */
static void *(*const volatile copy)(void *, const void *, size_t) = memcpy;

static void push(tracker_t *t, int64_t lineno, int rank, const char *line, size_t len) {
  ring_line_t *r = &t->ring[t->head];
  r->line = lineno;
  r->rank = rank;
  r->len = len < RAW_MAX ? len : RAW_MAX;
  copy(r->raw, line, r->len);
  t->head = (t->head + 1) % RING;
  if (t->nring < RING)
    t->nring++;
}

static void clear_context(tfs_important_t *imp) {
  for (size_t i = 0; i < imp->ncontext; i++)
    free(imp->context[i].text);
  imp->ncontext = 0;
}

/* Adds a context line, in line order; a full context takes no more. */
static int add_context(tfs_important_t *imp, int64_t lineno, const char *line, size_t len) {
  int err = tfs__context_insert(imp, lineno, line, len);
  return err == -ENOSPC ? 0 : err;
}

/* The context above a new lead, from the ring: a location and the lines
 * between it and the lead, or the heading right above it. */
static int before_context(tfs_important_t *imp, tracker_t *t, int64_t lead) {
  ring_line_t *between[BEFORE_MAX];
  size_t nb = 0;
  for (size_t i = 0; i < t->nring; i++) {
    ring_line_t *r = newest(t, i);
    if (lead - r->line > NEAR_BEFORE)
      break;
    int form = tfs__context_form(r->raw, r->len);
    if (form == TFS__CX_EMPTY)
      continue;
    if (form == TFS__CX_LOCATION || form == TFS__CX_PLACE || form == TFS__CX_HEADER) {
      int err = add_context(imp, r->line, r->raw, r->len);
      for (size_t j = 0; j < nb && !err; j++)
        err = add_context(imp, between[j]->line, between[j]->raw, between[j]->len);
      /* The failure header right above the location names the test
       * ("1) test total/1 ... (Shop.CartTest)" over "test/cart_test.exs:14"). */
      ring_line_t *up = newest(t, i + 1);
      if (!err && form != TFS__CX_HEADER && up && up->line == r->line - 1 &&
          (up->rank == TFS__RANK_HEADING || tfs__context_form(up->raw, up->len) == TFS__CX_HEADER))
        err = add_context(imp, up->line, up->raw, up->len);
      return err;
    }
    if (nb == 0 && r->rank == TFS__RANK_HEADING)
      return add_context(imp, r->line, r->raw, r->len);
    if (nb + 1 >= BEFORE_MAX)
      break;
    between[nb++] = r;
  }
  /* No location above: the code line right above, if it is one (pytest's
   * ">       assert x"). */
  if (nb > 0 && tfs__context_form(between[0]->raw, between[0]->len) == TFS__CX_CODE)
    return add_context(imp, between[0]->line, between[0]->raw, between[0]->len);
  return 0;
}

/* Makes the line the lead, with the context above it. */
static int set_lead(tfs_important_t *imp, tracker_t *t, int64_t lineno, int kind, int rank,
                    const char *line, size_t len) {
  char *text = tfs__important_text(line, len, TFS_IMPORTANT_TEXT_MAX);
  if (!text)
    return -ENOMEM;
  free(imp->lead.text);
  imp->lead = (tfs_important_line_t){.line = lineno, .kind = (tfs_line_kind_t)kind, .text = text};
  clear_context(imp);
  if (t->rank <= TFS__RANK_VERDICT)
    t->window_from = lineno;
  t->rank = rank;
  t->after_to = lineno + AFTER_WINDOW;
  t->after = t->others = t->nonempty = t->frames = t->user_frame = 0;
  return before_context(imp, t, lineno);
}

/* The line says again what the lead says (go's nested "\tpanic: x"). */
static int repeats_lead(const tfs_important_t *imp, const char *line, size_t len) {
  while (len && (*line == ' ' || *line == '\t'))
    line++, len--;
  const char *lead = imp->lead.text;
  while (*lead == ' ' || *lead == '\t')
    lead++;
  return len > 8 && strlen(lead) >= len && memcmp(lead, line, len) == 0;
}

/* A line after the lead: context, or the end of it. */
static int after_line(tfs_important_t *imp, tracker_t *t, int64_t lineno, const char *line,
                      size_t len, int rank, int block) {
  if (t->after >= AFTER_MAX || (block && rank >= TFS__RANK_HEADING)) {
    t->after_to = 0; /* complete, or the next report begins */
    return 0;
  }
  if (rank == TFS__RANK_VERDICT) {
    t->nonempty++; /* "FAIL\tpkg", "make: *** Error 1": shown by their rank */
    return 0;
  }
  int form = tfs__context_form(line, len), take = 0, err = 0;
  switch (form) {
  case TFS__CX_EMPTY:
    return 0;
  case TFS__CX_PLACE:
    t->after_to = 0; /* gfortran's next report starts with its place */
    return 0;
  case TFS__CX_FRAMES:
  case TFS__CX_LIBFRAME:
    t->frames = 1;
    break;
  case TFS__CX_FRAME:
    t->frames = 1;
    if (t->user_frame)
      break;
    t->user_frame = take = 1;
    /* Go prints a frame's function on the line above its file. */
    ring_line_t *up = newest(t, 0);
    int upform = up ? tfs__context_form(up->raw, up->len) : TFS__CX_EMPTY;
    if (len > 1 && line[0] == '\t' && line[1] == '/' && memmem(line, len, ".go:", 4) && up &&
        up->line == lineno - 1 && up->line != imp->lead.line && up->raw[0] != '\t' &&
        (upform == TFS__CX_OTHER || upform == TFS__CX_LOCATION)) {
      err = add_context(imp, up->line, up->raw, up->len);
      t->after++;
    }
    break;
  case TFS__CX_FORM:
    take = 1;
    break;
  case TFS__CX_LOCATION:
    take = t->nonempty < 3;
    break;
  case TFS__CX_OTHER:
    take = !t->frames && t->others < 2 && t->nonempty < 3 && !repeats_lead(imp, line, len);
    t->others += take;
    break;
  }
  t->nonempty++;
  if (take && !err) {
    err = add_context(imp, lineno, line, len);
    t->after++;
  }
  return err;
}

int tfs__lead_feed(tfs_important_t *imp, int64_t lineno, const char *line, size_t len, int kind,
                   int rank, int block) {
  tracker_t *t = imp->tracker;
  if (!t) {
    if (imp->lead.line) {
      imp->lead_final = 1; /* a lead loaded from a record is kept */
      return 0;
    }
    if (!(t = imp->tracker = calloc(1, sizeof *t)))
      return -ENOMEM;
  }
  if (!line)
    line = "", len = 0;
  int err = 0;
  if (rank >= TFS__RANK_VERDICT &&
      (!imp->lead.line || (rank > t->rank && (t->rank <= TFS__RANK_VERDICT ||
                                              lineno - t->window_from <= UPGRADE_WINDOW))))
    err = set_lead(imp, t, lineno, kind, rank, line, len);
  else if (imp->lead.line && lineno <= t->after_to)
    err = after_line(imp, t, lineno, line, len, rank, block);
  push(t, lineno, rank, line, len);
  /* Final once nothing better can come and the context is complete. */
  if (imp->lead.line && lineno >= t->after_to &&
      (t->rank == TFS__RANK_CAUSE ||
       (t->rank >= TFS__RANK_ERROR && lineno > t->window_from + UPGRADE_WINDOW))) {
    imp->lead_final = 1;
    tfs__lead_free(imp);
  }
  return err;
}

/* Adds a context line in line order (core/lead.h). */
int tfs__context_insert(tfs_important_t *imp, int64_t lineno, const char *text, size_t len) {
  for (size_t i = 0; i < imp->ncontext; i++)
    if (imp->context[i].line == lineno)
      return 0; /* kept already */
  if (imp->ncontext >= TFS_CONTEXT_MAX)
    return -ENOSPC;
  if (!imp->context && !(imp->context = calloc(TFS_CONTEXT_MAX, sizeof *imp->context)))
    return -ENOMEM;
  char *t = tfs__important_text(text ? text : "", text ? len : 0, TFS_CONTEXT_TEXT_MAX);
  if (!t)
    return -ENOMEM;
  /* In line order: a line before the ones kept goes in front. */
  size_t at = imp->ncontext;
  while (at > 0 && imp->context[at - 1].line > lineno)
    at--;
  memmove(imp->context + at + 1, imp->context + at, (imp->ncontext - at) * sizeof *imp->context);
  imp->context[at] = (tfs_important_line_t){.line = lineno, .kind = TFS_LINE_CONTEXT, .text = t};
  imp->ncontext++;
  return 0;
}
