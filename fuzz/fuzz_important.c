/* libFuzzer target: the important-line classifier, the first-K/last-K
 * keeper, the lead with its context and the triage of them. The input's
 * first byte picks K (1..16); the rest is split into lines at '\n' and fed
 * in order. After every line the keeper's invariants must hold: counts
 * within K, line numbers increasing, "last" never repeating "first", each
 * kept line's kind equal to what tfs_classify_line() says, text within
 * TFS_IMPORTANT_TEXT_MAX; the lead an error or a failure already fed, its
 * context at most TFS_CONTEXT_MAX lines in line order, each within
 * TFS_CONTEXT_TEXT_MAX; at the end the triage lists the lead first and no
 * line twice, and a second keeper fed the same lines by reference
 * (tfs_important_feed_ref, settled per block) kept the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/taskfs.h"
#include "fuzz/check.h"

static void check(const tfs_important_t *imp, int k, int64_t important_seen) {
  CHECK(imp->total == important_seen);
  CHECK(imp->nfirst <= (size_t)k);
  CHECK(imp->nlast <= (size_t)k);
  int64_t prev = 0;
  for (size_t i = 0; i < imp->nfirst; i++) {
    const tfs_important_line_t *l = &imp->first[i];
    CHECK(l->line > prev);
    CHECK(l->kind != TFS_LINE_PLAIN);
    CHECK(l->text && strlen(l->text) <= TFS_IMPORTANT_TEXT_MAX);
    prev = l->line;
  }
  for (size_t i = 0; i < imp->nlast; i++) {
    const tfs_important_line_t *l = tfs_important_last(imp, i);
    CHECK(l);
    CHECK(l->line > prev); /* after every "first" line, oldest first */
    CHECK(l->kind != TFS_LINE_PLAIN);
    CHECK(l->text && strlen(l->text) <= TFS_IMPORTANT_TEXT_MAX);
    prev = l->line;
  }
  CHECK((int64_t)(imp->nfirst + imp->nlast) <= imp->total);
}

/* b, fed by reference, kept what a, fed copies, kept. */
static void check_same(const tfs_important_t *a, const tfs_important_t *b) {
  CHECK(a->total == b->total && a->nfirst == b->nfirst && a->nlast == b->nlast);
  for (size_t i = 0; i < a->nfirst; i++)
    CHECK(a->first[i].line == b->first[i].line && !strcmp(a->first[i].text, b->first[i].text));
  for (size_t i = 0; i < a->nlast; i++) {
    const tfs_important_line_t *x = tfs_important_last(a, i), *y = tfs_important_last(b, i);
    CHECK(x->line == y->line && x->kind == y->kind);
    CHECK(x->text && y->text && !strcmp(x->text, y->text));
  }
}

static void check_lead(const tfs_important_t *imp, int64_t lineno) {
  if (!imp->lead.text) {
    CHECK(imp->ncontext == 0);
    return;
  }
  CHECK(imp->lead.line >= 1 && imp->lead.line <= lineno);
  CHECK(imp->lead.kind == TFS_LINE_ERROR || imp->lead.kind == TFS_LINE_FAILURE);
  CHECK(strlen(imp->lead.text) <= TFS_IMPORTANT_TEXT_MAX);
  CHECK(imp->ncontext <= TFS_CONTEXT_MAX);
  for (size_t i = 0; i < imp->ncontext; i++) {
    const tfs_important_line_t *c = &imp->context[i];
    CHECK(c->kind == TFS_LINE_CONTEXT);
    CHECK(c->text && strlen(c->text) <= TFS_CONTEXT_TEXT_MAX);
    CHECK(c->line >= 1 && c->line <= lineno && c->line != imp->lead.line);
    CHECK(i == 0 || c->line > imp->context[i - 1].line);
  }
}

static void check_triage(const tfs_important_t *imp) {
  tfs_triage_t t;
  if (tfs_triage_select(imp, 0, 0, &t))
    return; /* out of memory */
  CHECK(t.n <= 1 + imp->ncontext + imp->nfirst + imp->nlast);
  CHECK(!imp->lead.text || (t.n >= 1 && t.v[0].role == TFS_PICK_LEAD));
  for (size_t i = 0; i < t.n; i++)
    for (size_t j = i + 1; j < t.n; j++)
      CHECK(t.v[i].line->line != t.v[j].line->line);
  tfs_triage_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  int k = data[0] % 16 + 1;
  const char *p = (const char *)data + 1, *end = (const char *)data + size;
  /* A second keeper fed by reference, as the capture's counter feeds it:
   * from a block of lines copied to the heap, settled and freed every
   * `per` lines (ASan sees a reference kept past its block). */
  int per = data[0] / 16 + 1;
  tfs_important_t imp, ref;
  if (tfs_important_init(&imp, k) < 0 || tfs_important_init(&ref, k) < 0)
    abort();
  char *block = NULL;
  const char *block_at = NULL;
  int64_t lineno = 0, seen = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    if (lineno % per == 0) {
      tfs_important_settle(&ref);
      free(block);
      if (!(block = malloc((size_t)(end - p))))
        abort();
      memcpy(block, p, (size_t)(end - p));
      block_at = p;
    }
    CHECK(tfs_important_feed_ref(&ref, lineno + 1, block + (p - block_at), len) >= 0);
    lineno++;
    tfs_line_kind_t kind = tfs_classify_line(p, len);
    CHECK((int)kind >= TFS_LINE_PLAIN && (int)kind <= TFS_LINE_SUMMARY);
    /* Classification is a pure function of the bytes. */
    CHECK(tfs_classify_line(p, len) == kind);
    CHECK(tfs_important_feed(&imp, lineno, p, len) >= 0);
    if (kind != TFS_LINE_PLAIN) {
      seen++;
      /* The line just fed is kept as the newest one, with its kind. */
      const tfs_important_line_t *l =
          imp.nlast ? tfs_important_last(&imp, imp.nlast - 1) : &imp.first[imp.nfirst - 1];
      if (imp.nlast == 0)
        CHECK(imp.nfirst > 0);
      CHECK(l->line == lineno);
      CHECK(l->kind == kind);
    }
    check(&imp, k, seen);
    check_lead(&imp, lineno);
    p += len + (nl ? 1 : 0);
  }
  tfs_important_settle(&ref);
  free(block);
  check_same(&imp, &ref);
  check_triage(&imp);
  tfs_important_free(&imp);
  tfs_important_free(&ref);
  return 0;
}
