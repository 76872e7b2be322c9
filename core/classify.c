/* The important-line classifier.
 *
 * Every line of every task's output goes through tfs_classify_line(), so it
 * must cost little on the plain lines that make up nearly all output. It
 * works in two steps:
 *
 *  1. Cheap checks at the start of the line's content (after indentation and
 *     colour escapes) for the fixed markers of test runners and build tools:
 *     go's "--- FAIL:", "ok  \tpkg", cargo's "test result:", TAP's "not ok",
 *     jest's "Tests:", Criterion's "[FAIL]", make's "make: ***", npm's
 *     "npm ERR!", and so on. These decide the kind on their own.
 *  2. One pass over the line that looks for "anchors": pairs of adjacent
 *     bytes that every keyword contains ("rr" of error, "wa" of warn, "fa"
 *     of fail, fatal and fault, "pa" of pass and panic, "xc" of exception,
 *     "eb" of traceback, "cc" of success, "du" of dumped, and the lead bytes
 *     of the crosses), checked with a neighbouring byte. With SSE2 (every
 *     x86-64) 16 positions are tested at once; elsewhere a bitset of byte
 *     pairs costs one lookup per byte. Only where an anchor sits is the
 *     surrounding word looked at, so a plain line costs a fraction of a
 *     cycle per byte.
 *
 * A keyword only counts when it is used as a word of its own: not inside an
 * identifier (error_count, ERROR_LEVEL, -Werror), a path or file name
 * (src/error.c), a flag (--fail-fast) or a member access (console.error),
 * and not with a zero or negated count ("0 errors", "errors: 0", "no
 * errors found"). Lines that count outcomes ("3 passed, 1 failed") are
 * summaries, whatever words they use.
 *
 * Only the first TFS__CLASSIFY_SCAN bytes of a line are examined: tools put
 * their markers at the start, and an enormous line must not cost more than
 * a normal one. No allocation, no regular expressions, linear in the
 * examined length. */
#include "core/classify.h"

/* Skips indentation and ANSI CSI escape sequences ("\x1b[31m") at the start
 * of a line, where colour codes usually sit. */
static size_t content_start(const unsigned char *s, size_t n) {
  size_t i = 0;
  for (;;) {
    while (i < n && (is_blank(s[i]) || s[i] == '\r'))
      i++;
    if (i + 1 < n && s[i] == 0x1b && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < n && s[j] >= 0x20 && s[j] <= 0x3f)
        j++;
      if (j < n && s[j] >= 0x40 && s[j] <= 0x7e) {
        i = j + 1;
        continue;
      }
    }
    return i;
  }
}

/* Copies s without ANSI CSI escape sequences into out (n bytes at most). */
static size_t strip_escapes(const unsigned char *s, size_t n, unsigned char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    if (s[i] == 0x1b && i + 1 < n && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < n && s[j] >= 0x20 && s[j] <= 0x3f)
        j++;
      if (j < n && s[j] >= 0x40 && s[j] <= 0x7e) {
        i = j + 1;
        continue;
      }
    }
    out[o++] = s[i++];
  }
  return o;
}

tfs_line_kind_t tfs_classify_line(const char *line, size_t len) {
  /* The shortest lines that classify as anything are three bytes ("ERR"
   * and the UTF-8 crosses "\u2715".."\u2718"); every line of one or two bytes is
   * plain (tests/test_important.c checks all of them). Deciding that before
   * the escape memchr makes floods of short lines ("y" from yes, "." from
   * progress dots) cost almost nothing. */
  if (!line || len < TFS__CLASSIFY_MIN)
    return TFS_LINE_PLAIN;
  line_t l = {.s = (const unsigned char *)line,
              .n = len < TFS__CLASSIFY_SCAN ? len : TFS__CLASSIFY_SCAN};
  /* Coloured output ("\x1b[31merror\x1b[39m:") is classified as it reads
   * on a terminal. memchr makes the check nearly free on plain lines. */
  unsigned char plain[TFS__CLASSIFY_SCAN];
  if (memchr(l.s, 0x1b, l.n)) {
    l.n = strip_escapes(l.s, l.n, plain);
    l.s = plain;
  }
  while (l.n > 0 && (l.s[l.n - 1] == '\r' || is_blank(l.s[l.n - 1])))
    l.n--;
  l.start = content_start(l.s, l.n);

  int m = tfs__cl_markers(&l);
  if (m >= 0)
    return (tfs_line_kind_t)m;

  tfs__cl_scan_keywords(&l);
  if (!l.flags && !l.pass_counts && !l.fail_counts)
    return TFS_LINE_PLAIN;

  /* Lines that count outcomes are summaries: pytest's "==== 1 failed, 2
   * passed, 1 error in 0.5s ====", "100% tests passed, 0 tests failed out
   * of 3", "5 passed". */
  int counts = l.pass_counts + l.fail_counts + l.other_counts;
  if (match(&l, l.start, "==") && counts > 0 &&
      !(l.start + 2 < l.n && is_digit(l.s[l.start + 2]))) /* valgrind's "==123==" */
    return TFS_LINE_SUMMARY;
  if (l.pass_counts && counts >= 2)
    return TFS_LINE_SUMMARY;

  if (l.fail_counts && l.fail_positive)
    l.flags |= F_FAILURE;
  if (l.flags & (F_ERROR | F_WARNING)) {
    /* A compiler diagnostic names its own kind; a warning that quotes the
     * word "error" is still a warning. */
    int d = tfs__cl_diagnostic(&l);
    if (d >= 0)
      return (tfs_line_kind_t)d;
  }
  if (l.flags & F_ERROR)
    return TFS_LINE_ERROR;
  if (l.flags & F_FAILURE)
    return TFS_LINE_FAILURE;
  if (l.flags & F_WARNING)
    return TFS_LINE_WARNING;
  if (l.pass_counts || l.fail_counts || (l.flags & F_SUMMARY))
    return TFS_LINE_SUMMARY;
  return TFS_LINE_PLAIN;
}
