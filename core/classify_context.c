/* What a line near the lead (the first error) is to its reader: the
 * context the tool printed around an error, as core/lead.c collects it.
 * Tools print the same few forms whatever the language: where the error
 * is ("File \"a.py\", line 3", "a.js:6", "  --> src/a.rs:11:22", a bare
 * path above eslint's messages), the code quoted with a caret under it,
 * what was expected and what came ("Expected: 5000", "left: 103", javac's
 * "symbol:"), and a stack trace, whose first frame in the program's own
 * code is the one to read. Runs only for the few lines around a lead. */
#include "core/classify.h"

/* A frame's text names a library, the language's runtime or a test
 * framework rather than the program's own code. */
static int library_frame(const line_t *l) {
  static const char *const libs[] = {
      "node_modules/",     "node:",           "(internal/",      "site-packages/",
      "dist-packages/",    "/usr/lib/",       "/usr/local/lib/", "/usr/include/",
      "/usr/local/go/",    "/src/runtime/",   "/src/testing/",   "<frozen ",
      "java.base/",        "jdk.internal.",   "sun.reflect",     "java.lang.reflect",
      "org.junit.",        "junit.framework", "org.testng",      "/rustc/",
      "/.cargo/registry/", "libsanitizer",    "../sysdeps/",     "libc_start",
      "libc.so",           "vgpreload",       "System.Runtime",  "System.Reflection",
      "System.Threading",  "Microsoft.",      "Xunit.",          "NUnit.",
      "_pytest/",          "unittest/",       "/lib/python",     "<anonymous>)",
      "__libc_",           "(in /",
  };
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    size_t k = strlen(libs[i]);
    if (l->n - l->start >= k && memmem(l->s + l->start, l->n - l->start, libs[i], k))
      return 1;
  }
  return 0;
}

static int has_alnum(const line_t *l, size_t from) {
  for (size_t i = from; i < l->n; i++)
    if (is_word(l->s[i]) || l->s[i] >= 0x80)
      return 1;
  return 0;
}

/* A path and a line number alone ("/a/b/index.js:6", node's throw site;
 * "a.f90:10:6:", gfortran's): TFS__CX_PLACE; a bare path (eslint's file
 * heading): TFS__CX_LOCATION; else 0. */
static int bare_location(const line_t *l) {
  size_t i = l->start, dot = 0, slash = 0;
  for (; i < l->n; i++) {
    unsigned char c = l->s[i];
    if (is_blank(c))
      return 0;
    if (c == '/')
      slash = 1;
    else if (c == '.')
      dot = 1;
    else if (c == ':') {
      size_t j = i;
      for (int groups = 0; groups < 2 && j + 1 < l->n && l->s[j] == ':' && is_digit(l->s[j + 1]);
           groups++)
        for (j++; j < l->n && is_digit(l->s[j]);)
          j++;
      if (j < l->n && l->s[j] == ':')
        j++;
      return j > i + 1 && j == l->n && (slash || dot) ? TFS__CX_PLACE : 0;
    }
  }
  return slash && l->s[l->start] != '-' ? TFS__CX_LOCATION : 0;
}

/* "Expected: 5000", "Received: 2000", "left: Amount(103)", "  --> a.rs:3:9",
 * "symbol:   variable x", "what():  ..." and their kin. */
static int value_form(const line_t *l) {
  static const char *const forms[] = {
      "Expected",   "expected:", "Received",   "received:",  "Actual",
      "actual:",    "left:",     "right:",     "-->",        "symbol:",
      "location:",  "what():",   "but was",    "- Expected", "+ Received",
      "- expected", "+ actual",  "Difference", "Address 0x", "Diff:",
      "found:",     "required:", "reason:",    "(file \"",   "(procedure \"",
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
    if (match(l, l->start, forms[i]))
      return 1;
  return 0;
}

/* A line that heads a stack trace. */
static int trace_heading(const line_t *l) {
  size_t p = l->start;
  return match(l, p, "goroutine ") || match(l, p, "Stack Trace:") || match(l, p, "Stack trace:") ||
         match(l, p, "stack backtrace:") || match(l, p, "Traceback") || match(l, p, "Call Stack") ||
         match(l, p, "Backtrace:") || match(l, p, "Emitted 'error' event");
}

/* An excerpt's gutter followed by carets or dashes and words: rustc's
 * "   |   ---   ^^^^ expected `u32`, found `&str`". */
static int caret_with_text(const line_t *l) {
  const unsigned char *bar = memchr(l->s + l->start, '|', l->n - l->start);
  if (!bar)
    return 0;
  size_t i = (size_t)(bar - l->s) + 1, marks = 0;
  for (; i < l->n; i++) {
    unsigned char c = l->s[i];
    if (c == '^' || c == '~' || c == '-')
      marks++;
    else if (!is_blank(c) && c != '|')
      break;
  }
  return marks > 0 && i < l->n && has_alnum(l, i);
}

/* A short heading that only announces what follows: "Caused by:", "Stack
 * Trace:", "Error Message:" (two words at most, ending in ':'). */
static int announce(const line_t *l) {
  if (l->s[l->n - 1] != ':' || l->n - l->start > 24)
    return 0;
  int blanks = 0;
  for (size_t i = l->start; i < l->n; i++)
    blanks += is_blank(l->s[i]);
  return blanks <= 1;
}

/* The numbered header over a failure's report, which names what failed:
 * PHPUnit's "1) App\\Tests\\InvoiceTest::testTotal" after "There was 1
 * failure:", ExUnit's "  1) test total/1 applies it (Shop.CartTest)",
 * RSpec's "  1) Order#total applies the coupon", mocha's "  1) Cart". */
static int numbered_header(const line_t *l, size_t p) {
  size_t i = p;
  while (i < l->n && i - p < 4 && is_digit(l->s[i]))
    i++;
  return i > p && match(l, i, ") ") && i + 2 < l->n && !is_blank(l->s[i + 2]);
}

/* shellcheck's "In scripts/x.sh line 9:" above the quoted line and its
 * SC codes. */
static int in_file_line(const line_t *l, size_t p) {
  if (!match(l, p, "In ") || l->s[l->n - 1] != ':')
    return 0;
  const unsigned char *w = memmem(l->s + p, l->n - p, " line ", 6);
  if (!w)
    return 0;
  size_t i = (size_t)(w - l->s) + 6, d = i;
  while (i < l->n && is_digit(l->s[i]))
    i++;
  return i > d && i + 1 == l->n;
}

int tfs__context_form(const char *line, size_t len) {
  line_t l;
  unsigned char plain[TFS__CLASSIFY_SCAN];
  tfs__cl_begin(&l, line, len, plain);
  size_t p = l.start;
  /* pytest's "E" and the indentation after it. */
  if (p + 1 < l.n && l.s[p] == 'E' && is_blank(l.s[p + 1]))
    l.start = p = skip_blanks(&l, p + 1);
  if (p >= l.n || !has_alnum(&l, p))
    return TFS__CX_EMPTY;
  if (match(&l, p, "File \""))
    return TFS__CX_LOCATION;
  if (tfs__cl_frame_at(&l, p))
    return library_frame(&l) ? TFS__CX_LIBFRAME : TFS__CX_FRAME;
  /* Go: "\t/home/u/x/main.go:13 +0x1f" under its function's line. */
  if (line[0] == '\t' && l.s[p] == '/' && memmem(l.s + p, l.n - p, ".go:", 4))
    return library_frame(&l) ? TFS__CX_LIBFRAME : TFS__CX_FRAME;
  if (trace_heading(&l))
    return TFS__CX_FRAMES;
  if (value_form(&l))
    return TFS__CX_FORM;
  if (tfs__cl_excerpt_at(&l, p))
    return caret_with_text(&l) ? TFS__CX_FORM : TFS__CX_CODE;
  if (l.s[p] == '>' && p + 1 < l.n && is_blank(l.s[p + 1]))
    return TFS__CX_CODE; /* pytest's failing line ">       assert x" */
  if (match(&l, p, "note: run with") || match(&l, p, "hint:") ||
      match(&l, p, "For more information") || match(&l, p, "Run with") || match(&l, p, "See ") ||
      match(&l, p, "To see the full"))
    return TFS__CX_HINT;
  int bare = bare_location(&l);
  if (bare)
    return bare;
  if (numbered_header(&l, p))
    return TFS__CX_HEADER;
  if (in_file_line(&l, p))
    return TFS__CX_LOCATION;
  if (match(&l, p, "In file included") || match(&l, p, "on ") ||
      ((memmem(l.s + p, l.n - p, ": In ", 5) || memmem(l.s + p, l.n - p, ": in function", 13)) &&
       l.s[l.n - 1] == ':'))
    return TFS__CX_LOCATION;
  if (announce(&l))
    return TFS__CX_EMPTY;
  return TFS__CX_OTHER;
}
