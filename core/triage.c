/* Triage: the important lines a small answer shows, most needed first.
 *
 * One order for every face that has little room (the MCP answer within
 * maxBytes, later the web viewer's summary): the lead (the first error,
 * core/lead.c) and its context lines, then the other important lines of
 * the first K and the last K, scored by what they are (an error before a
 * failure before a warning before a summary; within errors and failures,
 * a cause before a failing test's heading before an error in words before
 * a verdict), earlier lines first among equals. A line is listed once, and
 * a text already listed (a summary repeating the diagnostics) is not listed
 * again. A face drops picks from the end to fit, after its own tail.
 *
 * Faces without a bound (taskfs show, the mount's record.json) show the
 * record as it is: first K, last K, the lead and its context. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

typedef struct {
  tfs_pick_t pick;
  int score;
} cand_t;

/* Higher first: what the line is and how well it says what went wrong. */
static int score(const tfs_important_line_t *l) {
  int rank = 0;
  size_t len = l->text ? strlen(l->text) : 0;
  tfs__classify(l->text, len, &rank, NULL);
  switch (l->kind) {
  case TFS_LINE_ERROR:
    return 11 + 2 * rank;
  case TFS_LINE_FAILURE:
    return 10 + 2 * rank;
  case TFS_LINE_WARNING:
    return 5;
  case TFS_LINE_SUMMARY:
    return 2;
  default:
    return 0;
  }
}

static int by_score(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  if (x->score != y->score)
    return y->score - x->score;
  return x->pick.line->line < y->pick.line->line ? -1 : x->pick.line->line > y->pick.line->line;
}

/* The line is the lead, a context line, or has the text of a line listed
 * before it. */
static int listed(const tfs_important_t *imp, const cand_t *c, size_t n,
                  const tfs_important_line_t *l) {
  if (imp->lead.text && l->line == imp->lead.line)
    return 1;
  for (size_t i = 0; i < imp->ncontext; i++)
    if (imp->context[i].line == l->line)
      return 1;
  for (size_t i = 0; i < n; i++)
    if (c[i].pick.line->line == l->line ||
        (c[i].pick.line->kind == l->kind && l->text && c[i].pick.line->text &&
         strcmp(c[i].pick.line->text, l->text) == 0))
      return 1;
  return 0;
}

/* Whether a pick of text fits what is left of the budget; spends it. */
static int fits(size_t budget, size_t per_line, size_t *spent, const tfs_important_line_t *l,
                int always) {
  size_t cost = (l->text ? strlen(l->text) : 0) + per_line;
  if (budget && !always && *spent + cost > budget)
    return 0;
  *spent += cost;
  return 1;
}

int tfs_triage_select(const tfs_important_t *imp, size_t budget, size_t per_line,
                      tfs_triage_t *out) {
  memset(out, 0, sizeof *out);
  size_t max = 1 + imp->ncontext + imp->nfirst + imp->nlast;
  cand_t *c = calloc(max, sizeof *c);
  out->v = calloc(max, sizeof *out->v);
  if (!c || !out->v) {
    free(c);
    free(out->v);
    out->v = NULL;
    return -ENOMEM;
  }
  size_t n = 0;
  for (size_t i = 0; i < imp->nfirst + imp->nlast; i++) {
    const tfs_important_line_t *l =
        i < imp->nfirst ? &imp->first[i] : tfs_important_last(imp, i - imp->nfirst);
    if (!l || listed(imp, c, n, l))
      continue;
    c[n] = (cand_t){.pick = {.line = l, .role = TFS_PICK_OTHER, .from_last = i >= imp->nfirst},
                    .score = score(l)};
    n++;
  }
  qsort(c, n, sizeof *c, by_score);

  size_t spent = 0;
  if (imp->lead.text && fits(budget, per_line, &spent, &imp->lead, 1))
    out->v[out->n++] = (tfs_pick_t){.line = &imp->lead, .role = TFS_PICK_LEAD};
  for (size_t i = 0; i < imp->ncontext; i++)
    if (fits(budget, per_line, &spent, &imp->context[i], 0))
      out->v[out->n++] = (tfs_pick_t){.line = &imp->context[i], .role = TFS_PICK_CONTEXT};
  for (size_t i = 0; i < n; i++)
    if (fits(budget, per_line, &spent, c[i].pick.line, 0))
      out->v[out->n++] = c[i].pick;
  free(c);
  return 0;
}

void tfs_triage_free(tfs_triage_t *t) {
  if (!t)
    return;
  free(t->v);
  t->v = NULL;
  t->n = 0;
}
