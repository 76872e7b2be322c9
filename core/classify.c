/* The important-line classifier.
 *
 * Every line of every task's output goes through tfs_classify_line(), so it
 * must cost little on the plain lines that make up nearly all output. It
 * works in two steps:
 *
 *  1. Cheap checks at the start of the line's content (after indentation,
 *     colour escapes, OSC 8 hyperlinks and the prefixes tools wrap around
 *     their text: terraform's box, BuildKit's step and time, valgrind's pid,
 *     npm's and Maven's levels) for forms and fixed markers that decide
 *     the kind on their own (core/classify_forms.c, classify_tools.c):
 *     stack frames and code excerpts are context, never important; a
 *     source location followed by a message ("a.go:12:5: undefined: x")
 *     is a compiler's diagnostic whatever its words; shell errors
 *     ("x.sh: line 3: y: command not found"), apt's "E:", git's CONFLICT,
 *     the linker's "undefined reference", valgrind's and the sanitizers'
 *     reports; test runners' markers (go's "--- FAIL:", jest's "\u25cf",
 *     TAP's "not ok", cargo's "test result:") and build tools' (make's
 *     "make: ***", npm's "npm error").
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
 * summaries, whatever words they use. A name ending in Error or Exception,
 * dotted or not ("etl.errors.SchemaMismatchError: ...", "KeyError: 'x'"),
 * followed by ':' or the end of the line reports an exception.
 *
 * Each important line also gets a rank (core/internal.h, classify_rank.c):
 * how well it says what went wrong, from a verdict ("make: *** Error 1")
 * to the cause itself (a located diagnostic, an exception); the lead of an
 * answer is chosen by it (core/important.c).
 *
 * Only the first TFS__CLASSIFY_SCAN bytes of a line are examined: tools put
 * their markers at the start, and an enormous line must not cost more than
 * a normal one. No allocation, no regular expressions, linear in the
 * examined length. */
#include "core/classify.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Control bytes that text carries (tab, the line and page ends, backspace
 * of overstruck man pages, bell, shift out/in, escape): bit i set for byte
 * i. Every other byte below 0x20 is one text never holds. */
#define TEXT_CONTROLS                                                                              \
  ((1u << '\t') | (1u << '\n') | (1u << '\v') | (1u << '\f') | (1u << '\r') | (1u << '\b') |       \
   (1u << '\a') | (1u << 0x0e) | (1u << 0x0f) | (1u << 0x1b))

/* A line with two or more control bytes text never holds (NUL among them)
 * is binary data: random bytes have one in every dozen, text none. It is
 * never important, and saying so early keeps binary floods (an image or a
 * core dump written to stdout) from costing the full classifier per line.
 * Only the bytes the classifier would examine are looked at. */
static int binary(const unsigned char *s, size_t n) {
  int seen = 0;
  size_t i = 0;
  if (n > TFS__CLASSIFY_SCAN)
    n = TFS__CLASSIFY_SCAN;
#if defined(__SSE2__)
  /* The text controls are 0x07-0x0f and ESC (TEXT_CONTROLS): the others
   * below 0x20 are found 16 at a time without a branch per byte (random
   * bytes made the per-byte test mispredict on most lines). */
  _Static_assert(TEXT_CONTROLS == ((0x1ffu << 7) | (1u << 0x1b)), "the mask test below");
  const __m128i top = _mm_set1_epi8(0x1f), lo = _mm_set1_epi8(0x07), hi = _mm_set1_epi8(0x0f),
                esc = _mm_set1_epi8(0x1b);
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
    /* Below 0x20: max(v, 0x1f) == 0x1f; 0x07-0x0f: min(max(v, 7), 15) == v. */
    __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, top), top);
    __m128i ok = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(_mm_max_epu8(v, lo), hi), v),
                              _mm_cmpeq_epi8(v, esc));
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_andnot_si128(ok, ctl));
    if (m) {
      if (seen || (m & (m - 1)))
        return 1;
      seen = 1;
    }
  }
#endif
  for (; i < n; i++)
    if (s[i] < 0x20 && !(TEXT_CONTROLS >> s[i] & 1) && ++seen == 2)
      return 1;
  return 0;
}

/* The end of an escape sequence starting at s[i] == ESC: CSI ("\x1b[31m")
 * and OSC ("\x1b]8;;URL\x07", ended by BEL or ESC \\; OSC 8 is a terminal
 * hyperlink). Returns i if no complete sequence starts there. */
static size_t escape_end(const unsigned char *s, size_t n, size_t i) {
  if (i + 1 >= n)
    return i;
  if (s[i + 1] == '[') {
    size_t j = i + 2;
    while (j < n && s[j] >= 0x20 && s[j] <= 0x3f)
      j++;
    return j < n && s[j] >= 0x40 && s[j] <= 0x7e ? j + 1 : i;
  }
  if (s[i + 1] == ']') {
    const unsigned char *bel = memchr(s + i + 2, 0x07, n - i - 2);
    const unsigned char *st = memchr(s + i + 2, 0x1b, n - i - 2);
    if (st && (!bel || st < bel))
      return st + 1 < s + n && st[1] == '\\' ? (size_t)(st - s) + 2 : i;
    return bel ? (size_t)(bel - s) + 1 : i;
  }
  return i;
}

/* Skips indentation and escape sequences at the start of a line, where
 * colour codes usually sit, then the prefixes tools wrap around their
 * text. */
static size_t content_start(line_t *l) {
  size_t i = 0;
  for (;;) {
    while (i < l->n && (is_blank(l->s[i]) || l->s[i] == '\r'))
      i++;
    if (i < l->n && l->s[i] == 0x1b) {
      size_t j = escape_end(l->s, l->n, i);
      if (j > i) {
        i = j;
        continue;
      }
    }
    return tfs__cl_prefixes(l, i);
  }
}

/* Copies s without escape sequences into out (n bytes at most): the runs
 * between ESC bytes are copied whole (binary output holds an ESC every few
 * hundred bytes; a byte loop made it the classifier's costliest step). */
static size_t strip_escapes(const unsigned char *s, size_t n, unsigned char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    const unsigned char *esc = memchr(s + i, 0x1b, n - i);
    size_t run = esc ? (size_t)(esc - s) - i : n - i;
    memcpy(out + o, s + i, run);
    o += run;
    i += run;
    if (i == n)
      break;
    size_t j = escape_end(s, n, i);
    if (j > i) {
      i = j;
      continue;
    }
    out[o++] = s[i++];
  }
  return o;
}

/* The kind from the keywords the scan found, once no form or marker has
 * decided. */
static int keyword_kind(line_t *l) {
  tfs__cl_scan_keywords(l);
  if (!l->flags && !l->pass_counts && !l->fail_counts)
    return TFS_LINE_PLAIN;

  /* Lines that count outcomes are summaries: pytest's "==== 1 failed, 2
   * passed, 1 error in 0.5s ====", "100% tests passed, 0 tests failed out
   * of 3", "5 passed". */
  int counts = l->pass_counts + l->fail_counts + l->other_counts;
  if (match(l, l->start, "==") && counts > 0 &&
      !(l->start + 2 < l->n && is_digit(l->s[l->start + 2]))) /* valgrind's "==123==" */
    return TFS_LINE_SUMMARY;
  if (l->pass_counts && counts >= 2)
    return TFS_LINE_SUMMARY;

  if (l->fail_counts && l->fail_positive)
    l->flags |= F_FAILURE;
  if (l->flags & (F_ERROR | F_WARNING | F_FAILURE)) {
    /* A compiler diagnostic names its own kind: a warning that quotes the
     * word "error" is still a warning, a note that a deduction "failed" is
     * a note. */
    int d = tfs__cl_diagnostic(l);
    if (d >= 0)
      return d;
  }
  if (l->flags & F_ERROR)
    return TFS_LINE_ERROR;
  if (l->flags & F_FAILURE)
    return TFS_LINE_FAILURE;
  if (l->flags & F_WARNING)
    return TFS_LINE_WARNING;
  if (l->pass_counts || l->fail_counts || (l->flags & F_SUMMARY))
    return TFS_LINE_SUMMARY;
  return TFS_LINE_PLAIN;
}

/* What a tool's wrapper makes of its payload's kind: npm's "npm error" and
 * Maven's "[ERROR]" report an error whatever the payload says, but not
 * their empty lines, hints and the progress they relay. */
static int wrapped_kind(line_t *l, int k) {
  static const char *const hints[] = {
      "To see the full stack trace",
      "Re-run Maven",
      "For more information",
      "[Help ",
      "-> [Help",
      "Please refer to",
      "A complete log of this run",
      "For a full report see",
      "Run with --",
  };
  if (l->start >= l->n)
    return TFS_LINE_PLAIN;
  for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
    if (match(l, l->start, hints[i]))
      return TFS_LINE_PLAIN;
  if (l->wrapper == W_NPM_ERR) {
    /* npm relays what the failed script printed and node-gyp's log: an
     * indented payload is a tree or a build's progress, a bare path names a
     * log; node-gyp's own lines and npm's "path" and "command" say where,
     * not what. */
    static const char *const relayed[] = {
        "gyp info",        "gyp http",         "gyp verb",     "gyp ERR! stack at",
        "gyp ERR! System", "gyp ERR! command", "gyp ERR! cwd", "gyp ERR! node",
        "path ",           "command sh",       "command bash", "make: Entering",
        "make: Leaving",
    };
    for (size_t i = 0; i < sizeof relayed / sizeof relayed[0]; i++)
      if (match(l, l->start, relayed[i]))
        return TFS_LINE_PLAIN;
    if (k == TFS_LINE_PLAIN &&
        (is_blank(l->s[l->start]) || memchr(l->s + l->start, ' ', l->n - l->start) == NULL))
      return TFS_LINE_PLAIN;
    return k == TFS_LINE_WARNING ? k : TFS_LINE_ERROR;
  }
  if (l->wrapper == W_MVN_ERR)
    return k == TFS_LINE_WARNING ? k : TFS_LINE_ERROR;
  if (l->wrapper == W_MVN_WARN)
    return k == TFS_LINE_PLAIN ? TFS_LINE_WARNING : k;
  return k;
}

void tfs__cl_begin(line_t *l, const char *line, size_t len,
                   unsigned char plain[TFS__CLASSIFY_SCAN]) {
  memset(l, 0, sizeof *l);
  l->s = (const unsigned char *)line;
  l->n = len < TFS__CLASSIFY_SCAN ? len : TFS__CLASSIFY_SCAN;
  /* Coloured output ("\x1b[31merror\x1b[39m:") is classified as it reads
   * on a terminal. memchr makes the check nearly free on plain lines. */
  if (memchr(l->s, 0x1b, l->n)) {
    l->n = strip_escapes(l->s, l->n, plain);
    l->s = plain;
  }
  while (l->n > 0 && (l->s[l->n - 1] == '\r' || is_blank(l->s[l->n - 1])))
    l->n--;
  /* The content is the line from here on: a tool's prefix ("npm error",
   * "[ERROR]", valgrind's "==123==") is no part of what it says. */
  size_t start = content_start(l);
  l->s += start;
  l->n -= start;
}

tfs_line_kind_t tfs__classify(const char *line, size_t len, int *rank, int *block) {
  if (rank)
    *rank = TFS__RANK_NONE;
  if (block)
    *block = 0;
  /* The shortest lines that classify as anything are three bytes ("ERR"
   * and the UTF-8 crosses "\u2715".."\u2718"); every line of one or two bytes is
   * plain (tests/test_important.c checks all of them). Deciding that before
   * the escape memchr makes floods of short lines ("y" from yes, "." from
   * progress dots) cost almost nothing. */
  if (!line || len < TFS__CLASSIFY_MIN || binary((const unsigned char *)line, len))
    return TFS_LINE_PLAIN;
  line_t l;
  unsigned char plain[TFS__CLASSIFY_SCAN];
  tfs__cl_begin(&l, line, len, plain);

  int k = tfs__cl_forms(&l);
  if (k < 0)
    k = tfs__cl_markers(&l);
  /* A form or a marker that says plain (a frame, a heading, a hint) is
   * plain whoever wrapped it; only words are the wrapper's to judge. */
  int decided = k >= 0;
  if (k < 0)
    k = keyword_kind(&l);
  if (l.wrapper >= W_NPM_ERR && !(decided && k == TFS_LINE_PLAIN))
    k = wrapped_kind(&l, k);
  if (k == TFS_LINE_PLAIN)
    return TFS_LINE_PLAIN;
  if (rank)
    *rank = tfs__cl_rank(&l, k);
  if (block)
    *block = l.located || l.rank == TFS__RANK_HEADING;
  return (tfs_line_kind_t)k;
}

tfs_line_kind_t tfs_classify_line(const char *line, size_t len) {
  return tfs__classify(line, len, NULL, NULL);
}
