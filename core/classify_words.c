/* Generic word checks of the classifier: whether a keyword stands as a word
 * of its own, the counts next to it ("3 errors", "failed=0", "no errors"),
 * and whether it reports a condition or only mentions one. */
#include "core/classify.h"

/* The word that ends (after blanks) just before position a, as [*pa, *pb). */
int tfs__cl_prev_word(const line_t *l, size_t a, size_t *pa, size_t *pb) {
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
int tfs__cl_standalone(const line_t *l, size_t a, size_t b) {
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
int tfs__cl_number_value(const line_t *l, size_t a, size_t b) {
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
    /* "4, Failures: 0" lists two things: a ',' right before the blank ends
     * a number that is not this word's count. */
    if (s > 0 && l->s[s - 1] == ',')
      return -1;
    while (s > 0 && (is_digit(l->s[s - 1]) || l->s[s - 1] == ',' || l->s[s - 1] == '%'))
      s--;
    if (s < e && (s == 0 || !is_word(l->s[s - 1]))) {
      int v = tfs__cl_number_value(l, s, e);
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
int tfs__cl_count_near(const line_t *l, size_t a, size_t b) {
  int c = count_before(l, a);
  return c >= 0 ? c : count_after(l, b);
}

/* ---- keyword families ------------------------------------------------------ */

/* "error handling", "warning level": the word qualifies a noun that
 * follows it, and the line talks about errors rather than reporting one. */
static int modifier_follows(const line_t *l, size_t b) {
  static const char *const nouns[] = {
      "handling", "handler",  "handlers", "reporting", "reporter",  "reports", "messages",
      "log",      "logs",     "logging",  "page",      "pages",     "rate",    "budget",
      "checking", "recovery", "tracking", "boundary",  "level",     "levels",  "codes",
      "classes",  "types",    "callback", "flag",      "threshold", "message"};
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
int tfs__cl_condition_word(line_t *l, size_t a, size_t b, int plural) {
  if (!tfs__cl_standalone(l, a, b))
    return 0;
  int c = tfs__cl_count_near(l, a, b);
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
           (tfs__cl_prev_word(l, a, &pa, &pb) && tok_is(l, pa, pb, "with"));
  }
  return 1;
}

/* A name ending in suffix ("TypeError", "DeprecationWarning",
 * "PSQLException", "OSError", the last part of a dotted one) followed by
 * ':' or the end of the line is an exception or warning being reported, not
 * mentioned. */
int tfs__cl_camel_report(const line_t *l, size_t a, size_t b, size_t slen) {
  if (b - a <= slen || !is_upper(l->s[b - slen]) || !is_word(l->s[b - slen - 1]))
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

/* Where the dotted name whose last part starts at a begins
 * ("etl.errors.SchemaMismatchError", "java.lang.IllegalStateException"),
 * or (size_t)-1 if what is before it is no name (a path, a flag, a member
 * of an expression). */
size_t tfs__cl_name_start(const line_t *l, size_t a) {
  size_t s = a;
  while (s >= 2 && l->s[s - 1] == '.' && is_word(l->s[s - 2]))
    s = tok_start(l, s - 1);
  unsigned char before = s > 0 ? l->s[s - 1] : ' ';
  if (is_word(before) || before == '.' || before == '/' || before == '\\' || before == '-' ||
      before == '$' || before == '@' || before == '#' || before == '~' || before == '+')
    return (size_t)-1;
  return s;
}

/* The exception name starting at s opens the report: at the content start,
 * or after pytest's "E" and its indentation. */
int tfs__cl_report_start(const line_t *l, size_t s) {
  if (s == l->start)
    return 1;
  if (l->s[l->start] != 'E')
    return 0;
  for (size_t i = l->start + 1; i < s; i++)
    if (!is_blank(l->s[i]))
      return 0;
  return s > l->start + 1;
}
