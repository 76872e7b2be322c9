/* Fixed markers of the tools whose output we classify: test runners (go
 * test, pytest, jest, cargo, TAP, node:test, Criterion), build tools and
 * package managers (make, ninja, npm, rustc), and compiler diagnostic
 * headers ("file.c:12:5: error: ..."). */
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

/* Test runners' markers: go test, jest, pytest, TAP and node:test, cargo,
 * Criterion. Returns the kind, or -1. */
static int test_markers(const line_t *l, size_t p) {
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
      return TFS_LINE_FAILURE;
    break;
  case '[':
    /* Criterion. */
    if (match(l, p, "[FAIL]"))
      return TFS_LINE_FAILURE;
    if (match(l, p, "[====] Synthesis:"))
      return TFS_LINE_SUMMARY;
    break;
  }
  return -1;
}

/* Build tools', compilers' and package managers' markers: npm, make,
 * rustc-style "error:" / "warning:" heads, a C++ terminate. Returns the
 * kind, or -1. */
static int build_markers(const line_t *l, size_t p) {
  switch (l->s[p]) {
  case 'n':
    if (match(l, p, "npm ERR!") || match(l, p, "npm error"))
      return TFS_LINE_ERROR;
    if (match(l, p, "npm WARN") || match(l, p, "npm warn"))
      return TFS_LINE_WARNING;
    break;
  case 't':
    if (match(l, p, "terminate called after throwing"))
      return TFS_LINE_ERROR; /* C++ */
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

/* Fixed markers that decide a line on their own. Returns the kind, or -1
 * to go on with the keyword scan. */
int tfs__cl_markers(const line_t *l) {
  size_t p = l->start;
  if (p >= l->n)
    return -1;
  int k = test_markers(l, p);
  return k >= 0 ? k : build_markers(l, p);
}
