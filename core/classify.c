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
#include <stdint.h>
#include <string.h>

#include "taskfs/taskfs.h"

#define TFS__CLASSIFY_SCAN 4096

/* Lines shorter than this are plain whatever their bytes (shared with the
 * capture loop, which skips the call for them). */
#define TFS__CLASSIFY_MIN TFS_CLASSIFY_MIN_LEN

/* ---- character classes -------------------------------------------------- */

static inline int is_word(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
static inline int is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
static inline int is_upper(unsigned char c) {
  return c >= 'A' && c <= 'Z';
}
static inline int is_lower(unsigned char c) {
  return c >= 'a' && c <= 'z';
}
static inline unsigned char lower(unsigned char c) {
  return is_upper(c) ? (unsigned char)(c | 0x20) : c;
}
static inline int is_blank(unsigned char c) {
  return c == ' ' || c == '\t';
}

/* ---- the line being classified ------------------------------------------ */

enum {
  F_ERROR = 1 << 0,
  F_FAILURE = 1 << 1,
  F_WARNING = 1 << 2,
  F_SUMMARY = 1 << 3,
};

typedef struct {
  const unsigned char *s;
  size_t n;     /* examined length */
  size_t start; /* where the content starts (after blanks and escapes) */
  unsigned flags;
  int pass_counts;  /* "3 passed", "Passing: 3" */
  int fail_counts;  /* "1 failed", "failures: 0" */
  int other_counts; /* "2 errors", "0 warnings" */
  int fail_positive;
} line_t;

/* Case-insensitive comparison of s[at..] with a lowercase word. */
static inline __attribute__((always_inline)) int match_ci(const line_t *l, size_t at,
                                                          const char *w) {
  size_t k = strlen(w);
  if (at > l->n || l->n - at < k)
    return 0;
  for (size_t i = 0; i < k; i++)
    if (lower(l->s[at + i]) != (unsigned char)w[i])
      return 0;
  return 1;
}

/* Case-sensitive prefix comparison. */
static inline __attribute__((always_inline)) int match(const line_t *l, size_t at, const char *w) {
  size_t k = strlen(w);
  return at <= l->n && l->n - at >= k && memcmp(l->s + at, w, k) == 0;
}

/* [a, b) equals the lowercase word w, ignoring case. */
static inline __attribute__((always_inline)) int tok_is(const line_t *l, size_t a, size_t b,
                                                        const char *w) {
  return strlen(w) == b - a && match_ci(l, a, w);
}

static inline __attribute__((always_inline)) size_t tok_start(const line_t *l, size_t i) {
  while (i > 0 && is_word(l->s[i - 1]))
    i--;
  return i;
}

static inline __attribute__((always_inline)) size_t tok_end(const line_t *l, size_t i) {
  while (i < l->n && is_word(l->s[i]))
    i++;
  return i;
}

/* All letters of [a, b) are capitals (digits allowed), at least two. */
static int tok_upper(const line_t *l, size_t a, size_t b) {
  int letters = 0;
  for (size_t i = a; i < b; i++) {
    if (is_lower(l->s[i]))
      return 0;
    letters += is_upper(l->s[i]);
  }
  return letters >= 2;
}

static size_t skip_blanks(const line_t *l, size_t i) {
  while (i < l->n && is_blank(l->s[i]))
    i++;
  return i;
}

/* Skips blanks backwards from i (exclusive end). */
static size_t skip_blanks_back(const line_t *l, size_t i) {
  while (i > 0 && is_blank(l->s[i - 1]))
    i--;
  return i;
}

/* The word that ends (after blanks) just before position a, as [*pa, *pb). */
static int prev_word(const line_t *l, size_t a, size_t *pa, size_t *pb) {
  size_t e = skip_blanks_back(l, a);
  size_t s = tok_start(l, e);
  if (s == e)
    return 0;
  *pa = s;
  *pb = e;
  return 1;
}

/* Whether the word at [a, b) stands as a word of its own rather than as a
 * piece of a flag (-Werror, --fail-fast), a path or file name (src/error.c,
 * error.h), a member access (console.error), a hyphenated compound
 * (non-fatal, error-prone) or a quoted identifier ('error', `error`). */
static int standalone(const line_t *l, size_t a, size_t b) {
  unsigned char before = a > 0 ? l->s[a - 1] : ' ';
  unsigned char after = b < l->n ? l->s[b] : ' ';
  unsigned char after2 = b + 1 < l->n ? l->s[b + 1] : ' ';
  switch (before) {
  case '-':
  case '.':
  case '/':
  case '\\':
  case '$':
  case '@':
  case '~':
  case '+':
  case '<':
  case '#': /* "#error" and "#warning" directives echoed from source */
    return 0;
  case '\'':
  case '`':
    if (after == before)
      return 0;
    break;
  }
  switch (after) {
  case '-':
  case '.':
  case '/':
  case '\\':
  case '>':
    if (is_word(after2))
      return 0;
    break;
  case '(':
    /* error(s), warning(s); anything else is a call in echoed code. */
    if (!(after2 == 's' && b + 2 < l->n && l->s[b + 2] == ')'))
      return 0;
    break;
  }
  return 1;
}

/* A number standing alone at [a, b) ("3", "100%", "1,024"): not a piece of
 * a time (12:00:00), a date, a version or an identifier. Returns 0 for zero,
 * 1 for a positive number, -1 if it is not such a number. */
static int number_value(const line_t *l, size_t a, size_t b) {
  if (a == b)
    return -1;
  int nonzero = 0, digits = 0;
  for (size_t i = a; i < b; i++) {
    unsigned char c = l->s[i];
    if (is_digit(c)) {
      digits++;
      nonzero |= c != '0';
    } else if (!(c == ',' || (c == '%' && i == b - 1))) {
      return -1;
    }
  }
  if (!digits)
    return -1;
  unsigned char before = a > 0 ? l->s[a - 1] : ' ';
  if (!(is_blank(before) || before == '(' || before == '[' || before == '|' || before == '=' ||
        before == ':' || a == l->start)) {
    return -1;
  }
  if (before == ':' && a >= 2 && is_digit(l->s[a - 2]))
    return -1; /* 12:00 */
  return nonzero;
}

/* The count before the word at a: "3 errors", "100% tests passed" (one
 * noun may sit between), "no errors". Returns -1 if none, 0 if zero or
 * negated, 1 if positive. */
static int count_before(const line_t *l, size_t a) {
  size_t e = skip_blanks_back(l, a);
  if (e == a && a > 0)
    return -1; /* glued to something */
  for (int hop = 0; hop < 2; hop++) {
    size_t s = e;
    while (s > 0 && (is_digit(l->s[s - 1]) || l->s[s - 1] == ',' || l->s[s - 1] == '%'))
      s--;
    if (s < e && (s == 0 || !is_word(l->s[s - 1]))) {
      int v = number_value(l, s, e);
      if (v >= 0)
        return v;
    }
    size_t ws = tok_start(l, e);
    if (ws == e)
      return -1;
    if (tok_is(l, ws, e, "no") || tok_is(l, ws, e, "zero") || tok_is(l, ws, e, "without"))
      return 0;
    if (hop == 0 && (tok_is(l, ws, e, "tests") || tok_is(l, ws, e, "test") ||
                     tok_is(l, ws, e, "specs") || tok_is(l, ws, e, "examples") ||
                     tok_is(l, ws, e, "checks") || tok_is(l, ws, e, "suites"))) {
      e = skip_blanks_back(l, ws);
      continue;
    }
    return -1;
  }
  return -1;
}

/* The count after the word ending at b: "errors: 0", "failed=2",
 * "warning(s): 1". Returns -1 if none, 0 if zero, 1 if positive. */
static int count_after(const line_t *l, size_t b) {
  size_t i = b;
  if (match(l, i, "(s)"))
    i += 3;
  i = skip_blanks(l, i);
  if (i < l->n && (l->s[i] == ':' || l->s[i] == '='))
    i = skip_blanks(l, i + 1);
  size_t s = i;
  while (i < l->n && is_digit(l->s[i]))
    i++;
  if (i == s)
    return -1;
  if (i < l->n) {
    unsigned char c = l->s[i];
    if (is_word(c) || c == ':' || c == '-' || c == '/' ||
        (c == '.' && i + 1 < l->n && is_digit(l->s[i + 1])))
      return -1; /* 0x1f, 12:30, 2026-11-30, 1.5 */
  }
  int nonzero = 0;
  for (size_t j = s; j < i; j++)
    nonzero |= l->s[j] != '0';
  return nonzero;
}

/* Count on either side; a count before the word wins. */
static int count_near(const line_t *l, size_t a, size_t b) {
  int c = count_before(l, a);
  return c >= 0 ? c : count_after(l, b);
}

/* ---- keyword families ------------------------------------------------------ */

/* "error handling", "warning level": the word qualifies a noun that
 * follows it, and the line talks about errors rather than reporting one. */
static int modifier_follows(const line_t *l, size_t b) {
  static const char *const nouns[] = {
      "handling", "handler",  "handlers", "reporting", "reporter", "reports", "messages",
      "log",      "logs",     "logging",  "page",      "pages",    "rate",    "budget",
      "checking", "recovery", "tracking", "boundary",  "level",    "levels",  "codes",
      "classes",  "types",    "callback", "flag",      "threshold"};
  size_t t = skip_blanks(l, b);
  if (t == b || t >= l->n)
    return 0;
  size_t e = tok_end(l, t);
  for (size_t i = 0; i < sizeof(nouns) / sizeof(nouns[0]); i++)
    if (tok_is(l, t, e, nouns[i]))
      return 1;
  return 0;
}

/* The word at [a, b) names an error, warning or similar condition ("error",
 * "errors", "warning"): decides from its count and position whether the
 * line reports one. With plural set, "errors" in prose ("check for
 * errors") says nothing, but "2 errors", "Errors:" and a line that starts
 * with it do. */
static int condition_word(line_t *l, size_t a, size_t b, int plural) {
  if (!standalone(l, a, b))
    return 0;
  int c = count_near(l, a, b);
  if (c >= 0) {
    l->other_counts++;
    return c > 0;
  }
  if (!plural && !tok_upper(l, a, b) && modifier_follows(l, b))
    return 0;
  if (plural) {
    /* "Errors:", "ERRORS", "Errors while running", "Compiled with warnings". */
    size_t t = skip_blanks(l, b), pa, pb;
    return a == l->start || (t < l->n && l->s[t] == ':') || tok_upper(l, a, b) ||
           (prev_word(l, a, &pa, &pb) && tok_is(l, pa, pb, "with"));
  }
  return 1;
}

/* A CamelCase name ending in suffix ("TypeError", "DeprecationWarning",
 * "NullPointerException") followed by ':' or the end of the line is an
 * exception or warning being reported, not mentioned. */
static int camel_report(const line_t *l, size_t a, size_t b, size_t slen) {
  if (b - a <= slen || !is_upper(l->s[b - slen]) || !is_lower(l->s[b - slen - 1]))
    return 0;
  size_t t = skip_blanks(l, b);
  if (t < l->n && l->s[t] == '[') {
    /* node: "AssertionError [ERR_ASSERTION]: ..." */
    const unsigned char *close = memchr(l->s + t, ']', l->n - t < 64 ? l->n - t : 64);
    if (close)
      t = skip_blanks(l, (size_t)(close - l->s) + 1);
  }
  return t == l->n || l->s[t] == ':';
}

/* "rr": error, errors, err, ERR!, TypeError:. */
static void family_error(line_t *l, size_t i) {
  if (i == 0 || lower(l->s[i - 1]) != 'e')
    return;
  size_t k = i - 1;
  size_t a = tok_start(l, k), b = tok_end(l, k);
  size_t wb = k + 3; /* end of "err" */
  if (a == k) {
    if (tok_is(l, a, b, "error")) {
      /* valgrind: "ERROR SUMMARY: 0 errors from 0 contexts". */
      size_t t = skip_blanks(l, b);
      if (match_ci(l, t, "summary:")) {
        t = skip_blanks(l, t + 8);
        size_t e = t;
        while (e < l->n && is_digit(l->s[e]))
          e++;
        if (e > t) {
          int v = number_value(l, t, e);
          l->flags |= v > 0 ? F_ERROR : F_SUMMARY;
          return;
        }
      }
      if (condition_word(l, a, b, 0))
        l->flags |= F_ERROR;
      return;
    }
    if (tok_is(l, a, b, "errors")) {
      if (condition_word(l, a, b, 1))
        l->flags |= F_ERROR;
      return;
    }
    if (b == wb && tok_is(l, a, b, "err")) {
      /* "npm ERR!", "[ERR]", "err: ..."; a bare "err" is a variable name. */
      unsigned char c = b < l->n ? l->s[b] : ' ';
      if (c == '!' || c == ':' || (tok_upper(l, a, b) && (c == ']' || c == ' ')))
        if (standalone(l, a, b))
          l->flags |= F_ERROR;
      return;
    }
    return;
  }
  /* Inside a longer word: "TypeError:", "AssertionError" at the end. */
  if (b == k + 5 && match(l, k, "Error") && camel_report(l, a, b, 5) && standalone(l, a, b))
    l->flags |= F_ERROR;
}

/* "wa": warn, warning, warnings, WARN, DeprecationWarning:. */
static void family_warning(line_t *l, size_t i) {
  if (!match_ci(l, i, "warn"))
    return;
  size_t a = tok_start(l, i), b = tok_end(l, i);
  if (a == i) {
    if (tok_is(l, a, b, "warn") || tok_is(l, a, b, "warning")) {
      if (condition_word(l, a, b, 0))
        l->flags |= F_WARNING;
    } else if (tok_is(l, a, b, "warnings")) {
      if (condition_word(l, a, b, 1))
        l->flags |= F_WARNING;
    }
    return;
  }
  if (b == i + 7 && match(l, i, "Warning") && camel_report(l, a, b, 7) && standalone(l, a, b))
    l->flags |= F_WARNING;
}

/* "fa": fail, failed, failure(s), FAIL, fatal, fault, segfault. */
static void family_fa(line_t *l, size_t i) {
  size_t a = tok_start(l, i), b = tok_end(l, i);
  if (a == i) {
    if (tok_is(l, a, b, "fatal")) {
      /* "fatal: not a git repository", "FATAL", "[fatal]"; "non-fatal"
       * and prose are not. */
      if (!standalone(l, a, b))
        return;
      unsigned char c = b < l->n ? l->s[b] : ' ';
      if (c == ':' || c == ']' || tok_upper(l, a, b) || (a > 0 && l->s[a - 1] == '['))
        l->flags |= F_ERROR;
      return;
    }
    if (tok_is(l, a, b, "fault")) {
      size_t pa, pb;
      if (prev_word(l, a, &pa, &pb) && tok_is(l, pa, pb, "segmentation"))
        l->flags |= F_ERROR;
      return;
    }
    int plural = tok_is(l, a, b, "failures");
    if (!(plural || tok_is(l, a, b, "fail") || tok_is(l, a, b, "failed") ||
          tok_is(l, a, b, "failure") || tok_is(l, a, b, "failing")))
      return;
    if (!standalone(l, a, b))
      return;
    int c = count_near(l, a, b);
    if (c >= 0) {
      l->fail_counts++;
      l->fail_positive |= c > 0;
      return;
    }
    /* "failing" only counts with a number ("1 failing"); "no failures". */
    if (tok_is(l, a, b, "failing"))
      return;
    if (plural && !(a == l->start || tok_upper(l, a, b) ||
                    (skip_blanks(l, b) < l->n && l->s[skip_blanks(l, b)] == ':')))
      return;
    l->flags |= F_FAILURE;
    return;
  }
  /* "segfault", "Segfaulted". */
  if (i - a == 3 && match_ci(l, a, "segfault"))
    l->flags |= F_ERROR;
}

/* "pa": pass, passed, passing, panic, panicked. */
static void family_pa(line_t *l, size_t i) {
  size_t a = tok_start(l, i), b = tok_end(l, i);
  if (a != i)
    return;
  if (tok_is(l, a, b, "panic")) {
    /* go "panic: ...", "Kernel panic", "PANIC". */
    size_t pa, pb;
    unsigned char c = b < l->n ? l->s[b] : ' ';
    if (standalone(l, a, b) && (c == ':' || tok_upper(l, a, b) ||
                                (prev_word(l, a, &pa, &pb) && tok_is(l, pa, pb, "kernel"))))
      l->flags |= F_ERROR;
    return;
  }
  if (tok_is(l, a, b, "panicked")) {
    l->flags |= F_ERROR; /* rust: "thread 'main' panicked at ..." */
    return;
  }
  if (tok_is(l, a, b, "passed") || tok_is(l, a, b, "passing") || tok_is(l, a, b, "pass")) {
    if (!standalone(l, a, b))
      return;
    if (count_near(l, a, b) >= 0) {
      l->pass_counts++;
      return;
    }
    /* "All tests passed", "All checks passed!" */
    size_t pa, pb;
    if (prev_word(l, a, &pa, &pb) && (tok_is(l, pa, pb, "tests") || tok_is(l, pa, pb, "checks")))
      l->flags |= F_SUMMARY;
  }
}

/* "xc": Exception in thread, java.lang.IllegalStateException: x,
 * Unhandled exception. */
static void family_exception(line_t *l, size_t i) {
  if (i == 0 || !match_ci(l, i - 1, "exception"))
    return;
  size_t k = i - 1;
  size_t a = tok_start(l, k), b = tok_end(l, k);
  if (b != k + 9)
    return; /* exceptions, exceptional */
  if (a == k) {
    if (!standalone(l, a, b))
      return;
    size_t t = skip_blanks(l, b), pa, pb;
    if ((t < l->n && l->s[t] == ':') || match(l, t, "in thread") || tok_upper(l, a, b) ||
        (prev_word(l, a, &pa, &pb) &&
         (tok_is(l, pa, pb, "unhandled") || tok_is(l, pa, pb, "uncaught"))))
      l->flags |= F_ERROR;
    return;
  }
  if (match(l, k, "Exception") && camel_report(l, a, b, 9))
    l->flags |= F_ERROR;
}

/* "eb": Traceback (most recent call last): */
static void family_traceback(line_t *l, size_t i) {
  if (i < 4 || !match_ci(l, i - 4, "traceback"))
    return;
  size_t a = i - 4, b = tok_end(l, a);
  if (b != a + 9 || tok_start(l, a) != a)
    return;
  size_t t = skip_blanks(l, b);
  if (match(l, t, "(most recent call") || (t < l->n && l->s[t] == ':'))
    l->flags |= F_ERROR;
}

/* "cc": Build succeeded, BUILD SUCCESSFUL, Compiled successfully,
 * Successfully built. */
static void family_success(line_t *l, size_t i) {
  if (i < 2 || !match_ci(l, i - 2, "succ"))
    return;
  size_t a = i - 2, b = tok_end(l, a);
  if (tok_start(l, a) != a)
    return;
  if (!(tok_is(l, a, b, "succeeded") || tok_is(l, a, b, "success") ||
        tok_is(l, a, b, "successful") || tok_is(l, a, b, "successfully")))
    return;
  if (!standalone(l, a, b))
    return;
  size_t pa, pb;
  if (tok_upper(l, a, b) || (a == l->start && is_upper(l->s[a])) ||
      (prev_word(l, a, &pa, &pb) &&
       (tok_is(l, pa, pb, "build") || tok_is(l, pa, pb, "compiled") ||
        tok_is(l, pa, pb, "compilation") || tok_is(l, pa, pb, "tests"))))
    l->flags |= F_SUMMARY;
}

/* "du": "(core dumped)". */
static void family_dumped(line_t *l, size_t i) {
  if (i >= 5 && match_ci(l, i, "dumped") && match_ci(l, i - 5, "core "))
    l->flags |= F_ERROR;
}

/* 0xE2 0x9C: the crosses test runners print for a failed test: U+2715 ✕,
 * U+2716 ✖, U+2717 ✗, U+2718 ✘. (The ticks U+2713, U+2714 are plain.) */
static void family_cross(line_t *l, size_t i) {
  if (i + 2 < l->n) {
    unsigned char c = l->s[i + 2];
    if (c >= 0x95 && c <= 0x98)
      l->flags |= F_FAILURE;
  }
}

/* ---- the anchor table ------------------------------------------------------ */

#if !defined(__SSE2__)

/* Bit (a | b << 8) is set for every byte pair that may anchor a keyword, in
 * every mix of case. Indexing by a 16-bit little-endian load of two bytes
 * makes the scan one load and one bit test per byte. */
static uint8_t anchors[65536 / 8];

static void anchor_set(unsigned a, unsigned b) {
  unsigned idx = a | b << 8;
  anchors[idx >> 3] |= (uint8_t)(1u << (idx & 7));
}

static void anchor_ci(const char *pair) {
  unsigned a = (unsigned char)pair[0], b = (unsigned char)pair[1];
  unsigned au = a >= 'a' && a <= 'z' ? a - 32 : a, bu = b >= 'a' && b <= 'z' ? b - 32 : b;
  anchor_set(a, b);
  anchor_set(au, b);
  anchor_set(a, bu);
  anchor_set(au, bu);
}

__attribute__((constructor)) static void anchors_init(void) {
  static const char *const pairs[] = {"rr", "wa", "fa", "pa", "xc", "eb", "cc", "du"};
  for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
    anchor_ci(pairs[i]);
  anchor_set(0xE2, 0x9C);
}

static inline int anchor_at(const unsigned char *p) {
  uint16_t w;
  memcpy(&w, p, 2);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = (uint16_t)(w >> 8 | w << 8);
#endif
  return anchors[w >> 3] & (1u << (w & 7));
}
#endif

/* The byte at p folded to lower case (letters only). */
#define LC(p) lower(*(p))

/* Looks at the keyword anchored at i, if any. A check of the next byte or
 * two comes first, so that the many plain words sharing an anchor
 * ("package", "default", "was", "current") cost next to nothing. */
static void anchor_visit(line_t *l, size_t i) {
  const unsigned char *s = l->s;
  size_t n = l->n;
  if (i + 1 >= n)
    return;
  unsigned char c1 = lower(s[i + 1]);
  unsigned char c2 = i + 2 < n ? lower(s[i + 2]) : 0;
  switch (lower(s[i])) {
  case 'r':
    if (c1 == 'r' && i > 0 && LC(s + i - 1) == 'e')
      family_error(l, i);
    break;
  case 'w':
    if (c1 == 'a' && c2 == 'r')
      family_warning(l, i);
    break;
  case 'f':
    if (c1 == 'a' && (c2 == 'i' || c2 == 't' || c2 == 'u'))
      family_fa(l, i);
    break;
  case 'p':
    if (c1 == 'a' && (c2 == 's' || c2 == 'n'))
      family_pa(l, i);
    break;
  case 'x':
    if (c1 == 'c' && c2 == 'e')
      family_exception(l, i);
    break;
  case 'e':
    if (c1 == 'b' && i >= 4 && LC(s + i - 4) == 't')
      family_traceback(l, i);
    break;
  case 'c':
    if (c1 == 'c' && i >= 2 && LC(s + i - 1) == 'u')
      family_success(l, i);
    break;
  case 'd':
    if (c1 == 'u' && c2 == 'm')
      family_dumped(l, i);
    break;
  case 0xE2:
    if (s[i + 1] == 0x9C)
      family_cross(l, i);
    break;
  }
}

#if defined(__SSE2__)
#include <emmintrin.h>

/* Candidate anchors at 16 positions [i, i + 16): p points at byte i - 1 of
 * a window that holds bytes i - 1 .. i + 18. Bytes are folded to lower case
 * with | 0x20 (which maps only A-Z onto letters) and each anchor is checked
 * with the byte before or after it too ("e"+"rr", "wa"+"r", "fa"+"i|t|u",
 * "pa"+"s|n", "e"+"xc", "eb"+"a", "u"+"cc", "du"+"m"), so plain words that
 * share an anchor ("package", "was", "current", "module") rarely get past
 * this filter. Returns a bit per position. */
static inline unsigned block_mask(const unsigned char *p) {
  const __m128i fold = _mm_set1_epi8(0x20);
#define B(c) _mm_set1_epi8((char)(c))
#define EQ(v, c) _mm_cmpeq_epi8(v, B(c))
#define OR _mm_or_si128
#define AND _mm_and_si128
  __m128i fm = OR(_mm_loadu_si128((const __m128i *)p), fold);
  __m128i f0 = OR(_mm_loadu_si128((const __m128i *)(p + 1)), fold);
  __m128i f1 = OR(_mm_loadu_si128((const __m128i *)(p + 2)), fold);
  __m128i f2 = OR(_mm_loadu_si128((const __m128i *)(p + 3)), fold);
  __m128i a1 = EQ(f1, 'a');
  __m128i r = AND(AND(EQ(fm, 'e'), EQ(f0, 'r')), EQ(f1, 'r'));
  __m128i w = AND(AND(EQ(f0, 'w'), a1), EQ(f2, 'r'));
  __m128i f = AND(AND(EQ(f0, 'f'), a1), OR(OR(EQ(f2, 'i'), EQ(f2, 't')), EQ(f2, 'u')));
  __m128i pp = AND(AND(EQ(f0, 'p'), a1), OR(EQ(f2, 's'), EQ(f2, 'n')));
  __m128i c1 = EQ(f1, 'c');
  __m128i x = AND(AND(EQ(fm, 'e'), EQ(f0, 'x')), c1);
  __m128i e = AND(AND(EQ(f0, 'e'), EQ(f1, 'b')), EQ(f2, 'a'));
  __m128i c = AND(AND(EQ(fm, 'u'), EQ(f0, 'c')), c1);
  __m128i d = AND(AND(EQ(f0, 'd'), EQ(f1, 'u')), EQ(f2, 'm'));
  __m128i k = AND(EQ(f0, 0xE2), EQ(f1, 0xBC));
  __m128i any = OR(OR(OR(r, w), OR(f, pp)), OR(OR(x, e), OR(OR(c, d), k)));
#undef B
#undef EQ
#undef OR
#undef AND
  return (unsigned)_mm_movemask_epi8(any);
}

/* Runs the filter over the whole line. Blocks at the edges are copied into
 * a zero-padded window so that nothing outside the line is read. */
static void scan_keywords(line_t *l) {
  const unsigned char *s = l->s;
  size_t n = l->n;
  if (n < 2)
    return;
  for (size_t i = 0; i + 1 < n; i += 16) {
    unsigned mask;
    if (i >= 1 && i + 18 <= n) {
      mask = block_mask(s + i - 1);
    } else {
      unsigned char win[32] = {0};
      size_t from = i >= 1 ? i - 1 : 0, to = i + 18 <= n ? i + 18 : n;
      memcpy(win + (i >= 1 ? 0 : 1), s + from, to - from);
      mask = block_mask(win);
      if (n - 1 - i < 16)
        mask &= (1u << (n - 1 - i)) - 1; /* a pair must start before n - 1 */
    }
    while (__builtin_expect(mask != 0, 0)) {
      anchor_visit(l, i + (size_t)__builtin_ctz(mask));
      mask &= mask - 1;
    }
  }
}
#else
static void scan_keywords(line_t *l) {
  for (size_t i = 0; i + 1 < l->n; i++)
    if (__builtin_expect(anchor_at(l->s + i), 0))
      anchor_visit(l, i);
}
#endif

/* ---- fixed markers at the start of the content ------------------------------ */

/* The content is exactly w (nothing but blanks after it). */
static inline __attribute__((always_inline)) int whole(const line_t *l, const char *w) {
  size_t k = strlen(w);
  return match(l, l->start, w) && skip_blanks(l, l->start + k) == l->n;
}

/* The line contains s at or after position from. */
static int contains(const line_t *l, size_t from, const char *s) {
  size_t k = strlen(s);
  if (from > l->n || l->n - from < k)
    return 0;
  const void *p = memmem(l->s + from, l->n - from, s, k);
  return p != NULL;
}

/* "make: *** ...", "make[2]: *** ...", "gmake: ***". */
static int make_failure(const line_t *l, size_t p) {
  if (match(l, p, "gmake"))
    p += 5;
  else if (match(l, p, "make"))
    p += 4;
  else
    return 0;
  if (p < l->n && l->s[p] == '[') {
    p++;
    while (p < l->n && is_digit(l->s[p]))
      p++;
    if (p >= l->n || l->s[p] != ']')
      return 0;
    p++;
  }
  return match(l, p, ": ***");
}

/* A compiler diagnostic header: "file.c:12:5: error: ...", "file.c:12:
 * warning: ...", "x.ts(3,5): error TS2304: ...", "x.cpp(12): warning C4996:".
 * Returns the kind it names (note: plain), or -1 if the line is not one. */
static int diagnostic(const line_t *l) {
  size_t lim = l->n < 1024 ? l->n : 1024;
  for (size_t i = l->start; i + 1 < lim; i++) {
    if (l->s[i] != ':' || l->s[i + 1] != ' ')
      continue;
    /* What is before ": " must be ":LINE", ":LINE:COL" or "(LINE[,COL])". */
    size_t j = i;
    if (j > 0 && l->s[j - 1] == ')') {
      j--;
      size_t e = j;
      while (j > 0 && (is_digit(l->s[j - 1]) || l->s[j - 1] == ','))
        j--;
      if (j == e || j == 0 || l->s[j - 1] != '(' || !is_digit(l->s[j]))
        continue;
    } else {
      int groups = 0;
      while (groups < 2) {
        size_t e = j;
        while (j > 0 && is_digit(l->s[j - 1]))
          j--;
        if (j == e || j == 0 || l->s[j - 1] != ':')
          break;
        j--;
        groups++;
      }
      if (groups == 0)
        continue;
    }
    size_t w = i + 2;
    if (match(l, w, "fatal error") || match(l, w, "error"))
      return TFS_LINE_ERROR;
    if (match(l, w, "warning"))
      return TFS_LINE_WARNING;
    if (match(l, w, "note") || match(l, w, "remark"))
      return TFS_LINE_PLAIN;
    return -1;
  }
  return -1;
}

/* Fixed markers that decide a line on their own. Returns the kind, or -1
 * to go on with the keyword scan. */
static int markers(const line_t *l) {
  size_t p = l->start;
  if (p >= l->n)
    return -1;
  switch (l->s[p]) {
  case '-':
    if (match(l, p, "--- FAIL:"))
      return TFS_LINE_FAILURE; /* go test */
    break;
  case 'F':
    /* go "FAIL\tpkg 0.1s" and a bare "FAIL"; jest "FAIL src/x.test.js";
     * pytest "FAILED tests/x.py::t - ..."; ninja "FAILED: x.o". */
    if (match(l, p, "FAIL\t") || match(l, p, "FAIL ") || whole(l, "FAIL") ||
        match(l, p, "FAILED ") || match(l, p, "FAILED:") || whole(l, "FAILED"))
      return TFS_LINE_FAILURE;
    break;
  case 'P':
    if (whole(l, "PASS"))
      return TFS_LINE_SUMMARY; /* go test */
    break;
  case 'o':
    /* go: "ok  \tgithub.com/x/y\t0.012s"; TAP's "ok 1 - name" is plain. */
    if ((match(l, p, "ok ") || match(l, p, "ok\t")) && memchr(l->s + p, '\t', l->n - p))
      return TFS_LINE_SUMMARY;
    break;
  case 'n':
    if (match(l, p, "not ok ")) {
      /* TAP: a "# TODO" or "# SKIP" failure is expected. */
      if (contains(l, p, "# TODO") || contains(l, p, "# SKIP"))
        return TFS_LINE_PLAIN;
      return TFS_LINE_FAILURE;
    }
    if (match(l, p, "npm ERR!") || match(l, p, "npm error"))
      return TFS_LINE_ERROR;
    if (match(l, p, "npm WARN") || match(l, p, "npm warn"))
      return TFS_LINE_WARNING;
    break;
  case '#':
    /* TAP / node:test totals: "# tests 5", "# pass 5", "# fail 0". */
    if (match(l, p, "# tests ") || match(l, p, "# pass ") || match(l, p, "# fail ") ||
        match(l, p, "# suites ") || match(l, p, "# cancelled "))
      return TFS_LINE_SUMMARY;
    break;
  case 0xE2:
    /* node:test spec reporter totals: "ℹ tests 5", "ℹ pass 5", "ℹ fail 0". */
    if (match(l, p, "\xE2\x84\xB9 tests ") || match(l, p, "\xE2\x84\xB9 pass ") ||
        match(l, p, "\xE2\x84\xB9 fail "))
      return TFS_LINE_SUMMARY;
    break;
  case 'T':
    /* jest: "Tests:       1 failed, 2 passed, 3 total", "Test Suites: ..." */
    if (match(l, p, "Tests:") || match(l, p, "Test Suites:"))
      return TFS_LINE_SUMMARY;
    break;
  case 't':
    /* cargo: "test result: ok. 3 passed; ..." and "test foo ... FAILED". */
    if (match(l, p, "test result:"))
      return TFS_LINE_SUMMARY;
    if (match(l, p, "test ") && contains(l, p, " ... FAILED"))
      return TFS_LINE_FAILURE;
    if (match(l, p, "terminate called after throwing"))
      return TFS_LINE_ERROR; /* C++ */
    break;
  case '[':
    /* Criterion. */
    if (match(l, p, "[FAIL]"))
      return TFS_LINE_FAILURE;
    if (match(l, p, "[====] Synthesis:"))
      return TFS_LINE_SUMMARY;
    break;
  case 'm':
  case 'g':
    if (make_failure(l, p))
      return TFS_LINE_FAILURE;
    break;
  case 'e':
    /* rustc and others: the line starts with its kind ("error[E0308]:"). */
    if (match(l, p, "error:") || match(l, p, "error["))
      return TFS_LINE_ERROR;
    break;
  case 'w':
    if (match(l, p, "warning:") || match(l, p, "warning["))
      return TFS_LINE_WARNING;
    break;
  }
  return -1;
}

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

  int m = markers(&l);
  if (m >= 0)
    return (tfs_line_kind_t)m;

  scan_keywords(&l);
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
    int d = diagnostic(&l);
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
