/* libFuzzer target: the important-line classifier and the first-K/last-K
 * keeper. The input's first byte picks K (1..16); the rest is split into
 * lines at '\n' and fed in order. After every line the keeper's invariants
 * must hold: counts within K, line numbers increasing, "last" never
 * repeating "first", each kept line's kind equal to what
 * tfs_classify_line() says, text within TFS_IMPORTANT_TEXT_MAX. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/taskfs.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "invariant failed: %s (line %d)\n", #c, __LINE__);                           \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  int k = data[0] % 16 + 1;
  const char *p = (const char *)data + 1, *end = (const char *)data + size;
  tfs_important_t imp;
  if (tfs_important_init(&imp, k) < 0)
    abort();
  int64_t lineno = 0, seen = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
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
    p += len + (nl ? 1 : 0);
  }
  tfs_important_free(&imp);
  return 0;
}
