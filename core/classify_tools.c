/* Fixed markers of the tools whose output we classify: test runners (go
 * test, pytest, unittest, jest, vitest, cargo, TAP, node:test, Criterion,
 * JUnit through Gradle and Maven, xUnit, ctest), build tools and package
 * managers (make, ninja, npm, rustc), and compiler diagnostic headers
 * ("file.c:12:5: error: ..."). A marker that names a failing test is a
 * heading (TFS__RANK_HEADING); one that only says a run or a file failed is
 * a verdict (TFS__RANK_VERDICT). */
#include "core/classify.h"

/* ---- helpers ------------------------------------------------------------ */

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
int tfs__cl_diagnostic(const line_t *l) {
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

static inline int ranked(line_t *l, int kind, int rank) {
  l->rank = rank;
  return kind;
}

/* The line ends with s (trailing blanks are already gone). */
static int ends_with(const line_t *l, const char *s) {
  size_t k = strlen(s);
  return l->n - l->start >= k && memcmp(l->s + l->n - k, s, k) == 0;
}

/* A banner of '=' or '_' around a title: pytest's "==== FAILURES ====",
 * "____ test_x ____". Returns where the title starts, or 0. */
static size_t banner(const line_t *l, size_t p, unsigned char c) {
  size_t i = p;
  while (i < l->n && l->s[i] == c)
    i++;
  if (i - p < 2 || i >= l->n || l->s[i] != ' ' || l->n - p < 8 || l->s[l->n - 1] != c ||
      l->s[l->n - 2] != c)
    return 0;
  return i + 1;
}

/* Failing tests named at the content start. Returns the kind, or -1. */
static int test_headings(line_t *l, size_t p) {
  size_t t;
  switch (l->s[p]) {
  case 0xE2:
    /* jest: "\u25cf Suite \u203a test" (but "\u25cf Console" is a log). */
    if (match(l, p, "\xE2\x97\x8F ") && !match(l, p + 4, "Console"))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING);
    break;
  case 0xC3:
    /* vitest "\u00d7 caps the discount 7ms"; pip "\u00d7 x did not run". */
    if (match(l, p, "\xC3\x97 "))
      return TFS_LINE_FAILURE;
    break;
  case '_':
    /* pytest: "____ ERROR collecting a.py ____" says what failed; the
     * heading over a failed test's report only names it. */
    if ((t = banner(l, p, '_')))
      return match(l, t, "ERROR") ? ranked(l, TFS_LINE_ERROR, TFS__RANK_HEADING) : TFS_LINE_PLAIN;
    break;
  case '=':
    if ((t = banner(l, p, '=')) && (match(l, t, "FAILURES ") || match(l, t, "ERRORS ")))
      return TFS_LINE_PLAIN; /* the heading of pytest's report */
    break;
  case 'f':
  case 'F':
  case 'e':
  case 'E':
    /* A heading over a list: cargo test's "failures:", Maven's
     * "[ERROR] Failures:". The items say what failed. */
    if (whole(l, "failures:") || whole(l, "Failures:") || whole(l, "errors:") ||
        whole(l, "Errors:"))
      return TFS_LINE_PLAIN;
    /* tsc's table under "Found 3 errors in 2 files.": "Errors  Files". */
    if (match(l, p, "Errors ") && skip_blanks(l, p + 7) < l->n &&
        match(l, skip_blanks(l, p + 7), "Files") && skip_blanks(l, p + 7) + 5 == l->n)
      return TFS_LINE_PLAIN;
    break;
  case '[':
    if (match(l, p, "[xUnit.net "))
      return ends_with(l, "[FAIL]") ? ranked(l, TFS_LINE_FAILURE, TFS__RANK_VERDICT) : -1;
    break;
  }
  /* Markers at the end: unittest "test_x (m.C.test_x) ... FAIL", Gradle
   * "C > m() FAILED", Maven "c.C.m -- Time elapsed: 0.1 s <<< FAILURE!".
   * The last byte is looked at first, so that most lines cost one test. */
  switch (l->s[l->n - 1]) {
  case 'L':
  case 'R':
    if (ends_with(l, " ... FAIL") || ends_with(l, " ... ERROR"))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING);
    break;
  case '!':
    if (ends_with(l, "<<< FAILURE!") || ends_with(l, "<<< ERROR!"))
      return ranked(l, TFS_LINE_FAILURE,
                    match(l, p, "Tests run:") ? TFS__RANK_VERDICT : TFS__RANK_HEADING);
    break;
  case 'D':
    if (ends_with(l, " FAILED") && memmem(l->s + p, l->n - p, " > ", 3))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING);
    break;
  }
  return -1;
}

/* Test runners' markers: go test, jest, pytest, TAP and node:test, cargo,
 * Criterion. Returns the kind, or -1. */
static int test_markers(line_t *l, size_t p) {
  int h = test_headings(l, p);
  if (h >= 0)
    return h;
  switch (l->s[p]) {
  case '-':
    if (match(l, p, "--- FAIL:"))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING); /* go test */
    break;
  case 'F':
    /* unittest "FAIL: test_x (m.C.test_x)"; vitest "FAIL  a.test.ts > b";
     * vstest "Failed X [6 ms]". */
    if (match(l, p, "FAIL: ") || (match(l, p, "FAIL ") && memmem(l->s + p, l->n - p, " > ", 3)) ||
        (match(l, p, "Failed ") && ends_with(l, "]")))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING);
    /* go "FAIL\tpkg 0.1s" and a bare "FAIL"; jest "FAIL src/x.test.js";
     * ninja "FAILED: x.o". */
    if (match(l, p, "FAIL\t") || match(l, p, "FAIL ") || whole(l, "FAIL") ||
        match(l, p, "FAILED:") || whole(l, "FAILED"))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_VERDICT);
    /* pytest "FAILED tests/x.py::t - AssertionError: ...". */
    if (match(l, p, "FAILED "))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING);
    /* RSpec: "Failure/Error: expect(order.total).to eq(90)", the failing
     * expectation, under its numbered header. */
    if (match(l, p, "Failure/Error:"))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_CAUSE);
    break;
  case 'E':
    /* unittest "ERROR: test_x (m.C.test_x)". */
    if (match(l, p, "ERROR: ") && ends_with(l, ")") && memchr(l->s + p, '(', l->n - p))
      return ranked(l, TFS_LINE_ERROR, TFS__RANK_HEADING);
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
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING);
    }
    break;
  case '#':
    /* TAP / node:test totals: "# tests 5", "# pass 5", "# fail 0". */
    if (match(l, p, "# tests ") || match(l, p, "# pass ") || match(l, p, "# fail ") ||
        match(l, p, "# suites ") || match(l, p, "# cancelled "))
      return TFS_LINE_SUMMARY;
    break;
  case 0xE2:
    /* node:test spec reporter totals: "\u2139 tests 5", "\u2139 pass 5". */
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
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING);
    break;
  case '[':
    /* Criterion. */
    if (match(l, p, "[FAIL]"))
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_HEADING);
    if (match(l, p, "[====] Synthesis:"))
      return TFS_LINE_SUMMARY;
    break;
  }
  return -1;
}

/* Build tools', compilers' and package managers' markers: npm, make,
 * rustc-style "error:" / "warning:" heads, a C++ terminate. Returns the
 * kind, or -1. */
static int build_markers(line_t *l, size_t p) {
  switch (l->s[p]) {
  case 'n':
    if (match(l, p, "npm WARN") || match(l, p, "npm warn"))
      return TFS_LINE_WARNING;
    if (match(l, p, "note:"))
      return TFS_LINE_PLAIN; /* rustc, pip, git: advice */
    break;
  case 'h':
    if (match(l, p, "hint:") || match(l, p, "help:"))
      return TFS_LINE_PLAIN;
    break;
  case 'F':
    /* rustc "For more information about this error, try `rustc --explain
     * E0308`.", Maven's and npm's pointers to more. */
    if (match(l, p, "For more information"))
      return TFS_LINE_PLAIN;
    break;
  case 't':
    if (match(l, p, "terminate called after throwing"))
      return ranked(l, TFS_LINE_ERROR, TFS__RANK_CAUSE); /* C++ */
    break;
  case 'm':
  case 'g':
    if (make_failure(l, p)) {
      if (contains(l, p, "No rule to make target") || contains(l, p, "missing separator"))
        return ranked(l, TFS_LINE_ERROR, TFS__RANK_CAUSE);
      if (contains(l, p, "Waiting for unfinished jobs"))
        return TFS_LINE_PLAIN; /* the failure was told just before */
      return ranked(l, TFS_LINE_FAILURE, TFS__RANK_VERDICT);
    }
    break;
  case 'e':
    /* rustc and others: the line starts with its kind ("error[E0308]:"). */
    if (match(l, p, "error[")) {
      l->located = 1; /* a message of its own: the one before ends here */
      return ranked(l, TFS_LINE_ERROR, TFS__RANK_CAUSE);
    }
    if (match(l, p, "error:")) {
      l->located = 1;
      return TFS_LINE_ERROR;
    }
    break;
  case 'w':
    if (match(l, p, "warning:") || match(l, p, "warning["))
      return TFS_LINE_WARNING;
    break;
  case 'W':
    /* A leading level is the line's kind: pip's "WARNING: Retrying ...
     * Failed to establish a new connection" is a warning. */
    if (match(l, p, "WARNING:") || match(l, p, "WARNING ") || match(l, p, "WARN ") ||
        match(l, p, "WARN:") || match(l, p, "Warning: "))
      return TFS_LINE_WARNING;
    break;
  case 'f':
    /* ansible: "fatal: [host]: FAILED! => {...}". */
    if (match(l, p, "fatal: [") && contains(l, p, "]: FAILED!"))
      return ranked(l, TFS_LINE_ERROR, TFS__RANK_CAUSE);
    break;
  }
  return -1;
}

/* Fixed markers that decide a line on their own. Returns the kind, or -1
 * to go on with the keyword scan. */
int tfs__cl_markers(line_t *l) {
  size_t p = l->start;
  if (p >= l->n)
    return -1;
  int k = test_markers(l, p);
  return k >= 0 ? k : build_markers(l, p);
}
