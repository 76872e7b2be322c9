/* Feeding the important-line keeper as the capture does: lines kept as
 * prefixes and made into texts when read, a memo of the last important
 * line, lines fed by reference and settled per block; each must keep
 * exactly what adding every classified line keeps. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/taskfs.h"

/* ---- fed lines against added ones ------------------------------------------ */

/* One line of a mix: repeats of one diagnostic, other important lines,
 * plain lines, escapes, CR, invalid UTF-8, and lines longer than a kept
 * text (some with an escape past the kept prefix). */
static size_t mixed_line(unsigned *seed, int i, char *buf) {
  static const char *const forms[] = {
      "src/a.c:12:3: error: expected ';'",
      "warning: unused variable 'x'",
      "\x1b[31merror\x1b[0m: red",
      "FAIL\tpkg/x\r",
      "error: bad \xff\xfe byte",
      "progress 10%",
      "plain words only",
      "--- FAIL: TestThing (0.01s)",
  };
  unsigned r = (unsigned)rand_r(seed);
  if (r % 5 < 2) /* the same line, many times in a row */
    return (size_t)sprintf(buf, "%s", forms[0]);
  if (r % 5 == 2) {
    size_t n = (size_t)sprintf(buf, "error: long line %d ", i);
    size_t len = 400 + r % 900;
    for (; n < len; n++)
      buf[n] = (char)('a' + n % 26);
    if (r & 64)
      memcpy(buf + len - 20, "\x1b[1m", 4);
    return len;
  }
  return (size_t)sprintf(buf, "%s %d", forms[r % 8], i % 7);
}

static void assert_same_line(const tfs_important_line_t *a, const tfs_important_line_t *b) {
  cr_assert_eq(a->line, b->line);
  cr_assert_eq(a->kind, b->kind, "line %lld", (long long)a->line);
  cr_assert_str_eq(a->text, b->text, "line %lld", (long long)a->line);
}

/* a and b kept the same lines: counts, first K, last K. */
static void assert_same_kept(const tfs_important_t *a, const tfs_important_t *b) {
  cr_assert_eq(a->total, b->total);
  cr_assert_eq(a->nfirst, b->nfirst);
  cr_assert_eq(a->nlast, b->nlast);
  for (size_t j = 0; j < a->nfirst; j++)
    assert_same_line(&a->first[j], &b->first[j]);
  for (size_t j = 0; j < a->nlast; j++)
    assert_same_line(tfs_important_last(a, j), tfs_important_last(b, j));
}

/* Feeding keeps the last ring's lines as prefixes and makes their texts
 * when they are read, and classifies a repeated line once: what it keeps
 * must be exactly what adding each classified line keeps. */
Test(important, fed_lines_read_as_added_ones) {
  tfs_important_t fed, added;
  cr_assert_eq(tfs_important_init(&fed, 7), 0);
  cr_assert_eq(tfs_important_init(&added, 7), 0);
  unsigned seed = 12345;
  char buf[2048];
  for (int i = 1; i <= 20000; i++) {
    size_t n = mixed_line(&seed, i, buf);
    cr_assert_eq(tfs_important_feed(&fed, i, buf, n), 0);
    tfs_line_kind_t k = tfs_classify_line(buf, n);
    if (k != TFS_LINE_PLAIN)
      cr_assert_eq(tfs_important_add(&added, i, k, buf, n), 0);
    if (i % 997 == 0) /* reads in the middle, as record saves do */
      for (size_t j = 0; j < fed.nlast; j++)
        assert_same_line(tfs_important_last(&fed, j), tfs_important_last(&added, j));
  }
  assert_same_kept(&fed, &added);
  tfs_important_free(&fed);
  tfs_important_free(&added);
}

/* An important line too long for the classifier's memo leaves no memo,
 * and an empty line after it is not taken for it (found by fuzz_important:
 * the empty memo matched every empty line). */
Test(important, an_empty_line_after_an_unmemoized_important_one_is_plain) {
  tfs_important_t imp;
  cr_assert_eq(tfs_important_init(&imp, 4), 0);
  char line[2048];
  memset(line, 'x', sizeof line);
  memcpy(line, "error: ", 7);
  const char *short_error = "error: a short one";
  cr_assert_eq(tfs_important_feed(&imp, 1, short_error, strlen(short_error)), 0);
  cr_assert_eq(tfs_important_feed(&imp, 2, line, sizeof line), 0);
  cr_assert_eq(imp.total, 2);
  cr_assert_eq(tfs_important_feed(&imp, 3, "", 0), 0);
  cr_assert_eq(tfs_important_feed(&imp, 4, "", 0), 0);
  cr_assert_eq(imp.total, 2, "empty lines are plain");
  tfs_important_free(&imp);
}

/* Feeding by reference (the capture's counter: lines pointed at in the
 * block it read back, settled once per block) keeps exactly what feeding
 * copies keeps, once the block is read over; a read between (a record
 * save) sees the lines too. */
Test(important, fed_by_reference_reads_as_fed_copies) {
  tfs_important_t ref, fed;
  cr_assert_eq(tfs_important_init(&ref, 7), 0);
  cr_assert_eq(tfs_important_init(&fed, 7), 0);
  unsigned seed = 54321;
  static char block[64 * 1024];
  size_t used = 0;
  for (int i = 1; i <= 20000; i++) {
    if (sizeof block - used < 2048) { /* the next block is read over this one */
      tfs_important_settle(&ref);
      memset(block, 0xAA, sizeof block);
      used = 0;
    }
    size_t n = mixed_line(&seed, i, block + used);
    cr_assert_eq(tfs_important_feed_ref(&ref, i, block + used, n), 0);
    cr_assert_eq(tfs_important_feed(&fed, i, block + used, n), 0);
    used += n;
    if (i % 997 == 0) /* reads before the settle, as record saves may */
      for (size_t j = 0; j < ref.nlast; j++)
        assert_same_line(tfs_important_last(&ref, j), tfs_important_last(&fed, j));
  }
  tfs_important_settle(&ref);
  memset(block, 0xAA, sizeof block);
  cr_assert_gt(ref.nlast, 0);
  assert_same_kept(&ref, &fed);
  tfs_important_free(&ref);
  tfs_important_free(&fed);
}

/* The memo's compare (16 bytes at a time, the last 16 overlapping) tells
 * apart lines that differ in one byte wherever it is: an error line, then
 * the same line with its keyword misspelt at each offset, is plain. */
Test(important, a_line_one_byte_off_the_memo_is_classified_again) {
  char a[128], b[128];
  for (size_t n = 12; n <= sizeof a; n++)
    for (size_t j = 0; j + 10 <= n; j++) {
      memset(a, 'a', n);
      memcpy(a + j, " error: ", 8);
      memcpy(b, a, n);
      b[j + 4] = 'a'; /* "erar" */
      cr_assert_eq(tfs_classify_line(a, n), TFS_LINE_ERROR, "n=%zu j=%zu", n, j);
      cr_assert_eq(tfs_classify_line(b, n), TFS_LINE_PLAIN, "n=%zu j=%zu", n, j);
      tfs_important_t imp;
      cr_assert_eq(tfs_important_init(&imp, 2), 0);
      cr_assert_eq(tfs_important_feed(&imp, 1, a, n), 0);
      cr_assert_eq(tfs_important_feed(&imp, 2, b, n), 0);
      cr_assert_eq(tfs_important_feed(&imp, 3, a, n), 0);
      cr_assert_eq(imp.total, 2, "n=%zu j=%zu: the misspelt line taken for the memo's", n, j);
      tfs_important_free(&imp);
    }
}
