/* Forms of the classifier: what the shape of a line decides before any
 * keyword is looked at.
 *
 *  - Prefixes that tools put before their own text are skipped, so that
 *    the text is classified as if it stood alone: terraform's box ("| "),
 *    BuildKit's step and time ("#6 3.524 "), valgrind's and the
 *    sanitizers' pid ("==123== "), Criterion's "[----] ", and the level of
 *    npm ("npm error ") and Maven ("[ERROR] "), whose payload decides.
 *  - Stack frames and code excerpts are context: plain, whatever words
 *    they hold ("at error (node_modules/x.js:3:9)").
 *  - A source location at the start followed by a message is a compiler's
 *    or a test's diagnostic, whatever its words: "a.go:12:5: undefined: x",
 *    "t_test.go:14: got 2, want 3", "a.c:13: undefined reference to `f'".
 *  - Shell errors ("x.sh: line 3: y: command not found", "sh: 1: y: not
 *    found", "cp: cannot stat 'a': No such file or directory", a job's
 *    "Killed"), apt's "E:", git's "CONFLICT" and "! [rejected]", the
 *    linker's "undefined reference", valgrind's and the sanitizers'
 *    reports.
 *
 * Every check starts at the content start and looks at a few bytes, so a
 * plain line costs a switch on its first byte. */
#include "core/classify.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The line is the cause of a failure and a report of its own. */
static inline int cause(line_t *l) {
  l->rank = TFS__RANK_CAUSE;
  l->located = 1;
  return TFS_LINE_ERROR;
}

/* ---- prefixes --------------------------------------------------------------- */

/* "==123==" (valgrind, sanitizers): returns the end, or i. */
static size_t pid_prefix(const line_t *l, size_t i) {
  if (!match(l, i, "=="))
    return i;
  size_t j = i + 2;
  while (j < l->n && is_digit(l->s[j]))
    j++;
  return j > i + 2 && match(l, j, "==") ? j + 2 : i;
}

/* BuildKit: "#12 " and then "3.524 " (seconds since the step began). */
static size_t buildkit_prefix(const line_t *l, size_t i) {
  size_t j = i + 1;
  while (j < l->n && is_digit(l->s[j]))
    j++;
  if (j == i + 1 || j >= l->n || l->s[j] != ' ')
    return i;
  i = j + 1;
  j = i;
  while (j < l->n && is_digit(l->s[j]))
    j++;
  if (j > i && j + 4 < l->n && l->s[j] == '.' && is_digit(l->s[j + 1]) && is_digit(l->s[j + 2]) &&
      is_digit(l->s[j + 3]) && l->s[j + 4] == ' ')
    return j + 5;
  return i;
}

static size_t blanks_from(const line_t *l, size_t i) {
  return skip_blanks(l, i);
}

size_t tfs__cl_prefixes(line_t *l, size_t i) {
  if (i >= l->n)
    return i;
  switch (l->s[i]) {
  case 0xE2:
    /* terraform's box: U+2502 "\u2502", U+2577 and U+2575 around it. */
    if (match(l, i, "\xE2\x94\x82"))
      return blanks_from(l, i + 3);
    break;
  case '#':
    return buildkit_prefix(l, i);
  case '=': {
    size_t j = pid_prefix(l, i);
    if (j > i) {
      l->wrapper = W_VALGRIND;
      return blanks_from(l, j);
    }
    break;
  }
  case '[':
    if (match(l, i, "[----]"))
      return blanks_from(l, i + 6); /* Criterion */
    if (match(l, i, "[ERROR]")) {
      l->wrapper = W_MVN_ERR;
      return blanks_from(l, i + 7);
    }
    if (match(l, i, "[WARNING]")) {
      l->wrapper = W_MVN_WARN;
      return blanks_from(l, i + 9);
    }
    if (match(l, i, "[INFO]")) {
      l->wrapper = W_MVN_INFO;
      return blanks_from(l, i + 6);
    }
    break;
  case 'n':
    if (match(l, i, "npm error") && (i + 9 == l->n || l->s[i + 9] == ' ')) {
      l->wrapper = W_NPM_ERR;
      return i + 9 < l->n ? i + 10 : i + 9; /* keep the payload's own indentation */
    }
    if (match(l, i, "npm ERR!")) {
      l->wrapper = W_NPM_ERR;
      return i + 8 < l->n ? i + 9 : i + 8;
    }
    break;
  }
  return i;
}

/* ---- context: frames and excerpts ------------------------------------------- */

/* A hex number "0x..." at i; returns its end, or i. */
static size_t hex_at(const line_t *l, size_t i) {
  if (!match(l, i, "0x"))
    return i;
  size_t j = i + 2;
  while (j < l->n && (is_digit(l->s[j]) || (lower(l->s[j]) >= 'a' && lower(l->s[j]) <= 'f')))
    j++;
  return j > i + 2 ? j : i;
}

int tfs__cl_frame_at(const line_t *l, size_t i) {
  if (i + 3 >= l->n)
    return 0;
  switch (l->s[i]) {
  case 'a':
    /* "at f (a.js:1:2)", "at a.b.C.m(C.java:3)", "at 0x4005: f (a.c:3)"
     * (valgrind), "at node:internal/x:3:9"; "at least one" is prose. */
    if (match(l, i, "at ")) {
      size_t j = i + 3, e = j;
      while (e < l->n && !is_blank(l->s[e]))
        e++;
      for (size_t k = j; k < e; k++)
        if (l->s[k] == '.' || l->s[k] == '(' || l->s[k] == ':' || l->s[k] == '<' || l->s[k] == '/')
          return 1;
      return l->s[l->n - 1] == ')';
    }
    break;
  case 'b':
    return match(l, i, "by 0x"); /* valgrind */
  case 'F':
    return match(l, i, "File \""); /* Python */
  case '#': {
    /* gdb and the sanitizers: "#1 0x563ab8947348 in f src/a.c:15". */
    size_t j = i + 1;
    while (j < l->n && is_digit(l->s[j]))
      j++;
    return j > i + 1 && hex_at(l, skip_blanks(l, j)) > skip_blanks(l, j);
  }
  case '0': {
    /* The same after BuildKit's "#N" was taken for a prefix. */
    size_t j = hex_at(l, i);
    return j > i && match(l, skip_blanks(l, j), "in ");
  }
  }
  return 0;
}

int tfs__cl_excerpt_at(const line_t *l, size_t i) {
  /* "  12 |   code", "> 17 |  expect(x)", "   |   ^^^", "  12|" (vitest),
   * "  +++ |+#include" (gcc's fix-it). */
  if (i < l->n && l->s[i] == '>')
    i = skip_blanks(l, i + 1);
  size_t j = i;
  while (j < l->n && (is_digit(l->s[j]) || l->s[j] == '+'))
    j++;
  j = skip_blanks(l, j);
  return j < l->n && l->s[j] == '|' && (j + 1 == l->n || l->s[j + 1] != '|');
}

/* ---- located diagnostics ---------------------------------------------------- */

/* The first word of the content, up to its first ':', in one pass: what
 * decides whether the line starts with a program reporting ("cp:",
 * "./deploy.sh:", "/usr/bin/ld:") or with a source location ("a.c:12",
 * "internal/x.go:3", "/usr/lib/x.h:1261"). */
typedef struct {
  size_t colon; /* the first ':' (0: none in the first word) */
  int program;  /* only a program name's bytes before it */
  int path;     /* a path or file name: an extension or a directory, a letter */
} first_word_t;

enum { C_STOP = 1, C_PROG = 2, C_DOT = 4, C_SLASH = 8, C_DIGIT = 16, C_BAD = 32 };

/* Byte classes for the first word, built once. */
static unsigned char word_class[256];

__attribute__((constructor)) static void word_class_init(void) {
  for (int c = 0; c < 256; c++) {
    unsigned char k = 0;
    if (is_word((unsigned char)c) || c == '.' || c == '/' || c == '-' || c == '+')
      k |= C_PROG;
    if (c == '.')
      k |= C_DOT;
    if (c == '/' || c == '\\')
      k |= C_SLASH;
    if (is_digit((unsigned char)c))
      k |= C_DIGIT;
    if (c == ' ' || c == '\t' || c == ':')
      k |= C_STOP;
    if (c == '"' || c == '\'' || c == '(' || c == ')' || c == '=' || c == ',' || c == '<' ||
        c == '>')
      k |= C_BAD;
    word_class[c] = k;
  }
}

/* Where the first word ends: the first blank, ':' or '(' before lim.
 * Most words end at a blank, and 16 bytes are looked at at once. */
static size_t word_end(const line_t *l, size_t lim) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i sp = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t'), col = _mm_set1_epi8(':');
  const __m128i par = _mm_set1_epi8('(');
  for (; i + 16 <= lim; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(l->s + i));
    unsigned m = (unsigned)_mm_movemask_epi8(
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, tab)),
                     _mm_or_si128(_mm_cmpeq_epi8(v, col), _mm_cmpeq_epi8(v, par))));
    if (m)
      return i + (size_t)__builtin_ctz(m);
  }
#endif
  while (i < lim && !(word_class[l->s[i]] & C_STOP) && l->s[i] != '(')
    i++;
  return i;
}

/* The first word up to end, where word_end stopped. */
static void first_word(const line_t *l, size_t end, first_word_t *w) {
  size_t lim = l->n < 512 ? l->n : 512, dot = 0, slash = 0, letters = 0, i = 0;
  unsigned any = 0, prog = C_PROG;
  w->colon = 0;
  w->program = w->path = 0;
  if (end + 1 >= lim || l->s[end] != ':' || !(l->s[end + 1] == ' ' || is_digit(l->s[end + 1])))
    return; /* "a.py::test_x", no ':' at all */
  for (; i < end; i++) {
    unsigned k = word_class[l->s[i]];
    if (k & C_STOP)
      break;
    any |= k;
    prog &= k;
    if (k & (C_DOT | C_SLASH)) {
      if (k & C_SLASH)
        slash = i + 1, dot = 0;
      else
        dot = i + 1;
    } else if (!(k & C_DIGIT)) {
      letters++;
    }
  }
  if (i >= lim || i == 0 || l->s[i] != ':' || i + 1 >= l->n)
    return;
  w->colon = i;
  w->program = prog && i < 128 && l->s[i + 1] == ' ';
  /* "a.go:3", "src/x:3" but not "12:30:45", "10.0.0.1:80", "a(b):3". */
  w->path = is_digit(l->s[i + 1]) && letters && !(any & C_BAD) &&
            ((dot && dot < i && !is_digit(l->s[dot])) || (slash && slash < i));
}

/* What an Elixir stack frame has after its "lib/a.ex:12: ": "(test)", or
 * the function "Shop.Cart.total/1" (one word ending in /ARITY). */
static int elixir_frame(const line_t *l, size_t m) {
  size_t i = m;
  while (i < l->n && !is_blank(l->s[i]))
    i++;
  if (i != l->n)
    return 0;
  if (l->s[m] == '(' && l->s[l->n - 1] == ')')
    return 1;
  size_t d = l->n;
  while (d > m && is_digit(l->s[d - 1]))
    d--;
  return d < l->n && d > m + 1 && l->s[d - 1] == '/' && memchr(l->s + m, '.', d - m);
}

/* The message after "a.c:12:5: " or "a.c:12:5 - " (tsc). What it says is a
 * diagnostic's kind: error unless it names another one. */
static int located_kind(line_t *l, size_t colon) {
  size_t j = colon;
  for (int groups = 0;
       groups < 2 && j < l->n && l->s[j] == ':' && j + 1 < l->n && is_digit(l->s[j + 1]);
       groups++) {
    j++;
    while (j < l->n && is_digit(l->s[j]))
      j++;
  }
  size_t m;
  if (match(l, j, ": "))
    m = j + 2;
  else if (match(l, j, " - "))
    m = j + 3;
  else
    return -1;
  if (m >= l->n || is_blank(l->s[m]))
    return TFS_LINE_PLAIN; /* gcc's "a.h:3:7:   required from here" */
  if (match(l, m, "note") || match(l, m, "remark") || match(l, m, "in ") ||
      match(l, m, "required from") || match(l, m, "In "))
    return TFS_LINE_PLAIN; /* a note, a pytest frame "a.py:3: in f" */
  if (elixir_frame(l, m))
    return TFS_LINE_PLAIN;
  if (match(l, m, "warning") || match(l, m, "Warning"))
    return TFS_LINE_WARNING;
  l->located = 1;
  l->rank = TFS__RANK_CAUSE;
  if (match(l, m, "error") || match(l, m, "fatal error") || match(l, m, "Error") ||
      match(l, m, "runtime error"))
    return TFS_LINE_ERROR;
  /* No kind word: the keywords decide between a warning ("a.py:3:
   * DeprecationWarning: x") and an error; anything else is an error. */
  line_t m2 = *l;
  m2.start = m;
  m2.flags = 0;
  tfs__cl_scan_keywords(&m2);
  if ((m2.flags & F_WARNING) && !(m2.flags & (F_ERROR | F_FAILURE))) {
    l->located = 0;
    l->rank = 0;
    return TFS_LINE_WARNING;
  }
  return TFS_LINE_ERROR;
}

/* ---- shell and tools' one-line reports ---------------------------------------- */

/* The line ends with s. */
static int ends_with(const line_t *l, const char *s) {
  size_t k = strlen(s);
  return l->n - l->start >= k && memcmp(l->s + l->n - k, s, k) == 0;
}

static int contains(const line_t *l, size_t from, const char *s) {
  size_t k = strlen(s);
  return from <= l->n && l->n - from >= k && memmem(l->s + from, l->n - from, s, k) != NULL;
}

/* What a program's report after "prog:" says. */
static int program_report(line_t *l, size_t p) {
  size_t j = skip_blanks(l, p);
  /* bash: "x.sh: line 14:  2752 Killed   cmd", "x.sh: line 4: V: unbound
   * variable"; dash: "sh: 1: webpack: not found". */
  size_t d = match(l, j, "line ") ? j + 5 : j, e = d;
  while (e < l->n && is_digit(l->s[e]))
    e++;
  if (e > d && match(l, e, ": "))
    return cause(l);
  size_t ps = l->start;
  int ld = p - ps >= 3 && match(l, p - 3, "ld:");
  if (ld || match(l, ps, "collect2:")) {
    if (contains(l, j, "undefined reference") || match(l, j, "cannot find -l") ||
        contains(l, j, "multiple definition"))
      return cause(l);
    if (contains(l, j, "in function") || match(l, j, "warning"))
      return contains(l, j, "in function") ? TFS_LINE_PLAIN : TFS_LINE_WARNING;
    return -1;
  }
  if (match(l, j, "cannot ") || match(l, j, "can't ") || ends_with(l, ": command not found") ||
      ends_with(l, ": not found") || ends_with(l, ": No such file or directory") ||
      ends_with(l, ": Permission denied")) {
    if (match(l, ps, "warning:") || match(l, ps, "note:"))
      return -1;
    l->rank = TFS__RANK_CAUSE;
    return TFS_LINE_ERROR;
  }
  return -1;
}

/* valgrind's reports after "==123== ". */
static int valgrind_report(line_t *l) {
  size_t p = l->start;
  static const char *const errs[] = {
      "Invalid read",        "Invalid write",
      "Invalid free",        "Mismatched free",
      "Use of uninit",       "Conditional jump or move",
      "Syscall param",       "Source and destination overlap",
      "Process terminating", "Argument 'size' of function",
  };
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
    if (match(l, p, errs[i]))
      return cause(l);
  /* The banner "Memcheck, a memory error detector" and the frames. */
  if (match(l, p, "Memcheck,") || match(l, p, "Helgrind,") || match(l, p, "DRD,") ||
      match(l, p, "For lists of detected") || match(l, p, "For counts of detected"))
    return TFS_LINE_PLAIN;
  if (match(l, p, "ERROR: AddressSanitizer") || match(l, p, "ERROR: LeakSanitizer") ||
      match(l, p, "ERROR: ThreadSanitizer") || match(l, p, "ERROR: MemorySanitizer"))
    return cause(l);
  return -1;
}

/* Perl's "Can't locate X.pm in @INC", Tcl's "can't read "x": no such
 * variable", "Cannot find module 'x'": a report of its own. */
static int cannot(line_t *l, size_t p) {
  if (!(match(l, p + 1, "an't ") || match(l, p + 1, "annot ")))
    return 0;
  l->rank = TFS__RANK_ERROR;
  l->located = 1;
  return 1;
}

/* "a.pas(6,24) Error: x", "a.cu(3): error: x", "A.cs(42,17): error CS0103:
 * x": a file, a line (and column) in parentheses at i (where the first
 * word stopped), then the message. Returns its kind, or -1. */
static int paren_located(line_t *l, size_t i) {
  size_t dot = 0;
  for (size_t j = 0; j < i; j++) {
    unsigned k = word_class[l->s[j]];
    if (k & C_BAD)
      return -1;
    if (k & C_DOT)
      dot = j + 1;
  }
  if (!dot || dot >= i || is_digit(l->s[dot]) || i + 1 >= l->n || !is_digit(l->s[i + 1]))
    return -1;
  size_t j = i + 1;
  while (j < l->n && (is_digit(l->s[j]) || l->s[j] == ','))
    j++;
  if (j >= l->n || l->s[j] != ')')
    return -1;
  j++;
  if (j < l->n && l->s[j] == ':')
    j++;
  j = skip_blanks(l, j);
  if (match(l, j, "warning") || match(l, j, "Warning") || match(l, j, "Hint") ||
      match(l, j, "Note") || match(l, j, "note"))
    return match(l, j, "warning") || match(l, j, "Warning") ? TFS_LINE_WARNING : TFS_LINE_PLAIN;
  if (match(l, j, "error") || match(l, j, "Error") || match(l, j, "fatal") ||
      match(l, j, "Fatal")) {
    l->located = 1;
    l->rank = TFS__RANK_CAUSE;
    return TFS_LINE_ERROR;
  }
  return -1;
}

/* Reports known by their first byte and words: apt, git, CMake, Kotlin,
 * Perl and Tcl, a killed job, the macOS linker. Returns the kind, or -1. */
static int first_byte_forms(line_t *l, size_t p) {
  switch (l->s[p]) {
  case 'E':
    /* apt: "E: Unable to locate package x"; pytest: "E       assert 2 == 3". */
    if (match(l, p, "E: "))
      return cause(l);
    if (p + 1 < l->n && is_blank(l->s[p + 1])) {
      size_t j = skip_blanks(l, p + 1);
      if (match(l, j, "assert ") || match(l, j, "Failed: ")) {
        l->rank = TFS__RANK_CAUSE;
        return TFS_LINE_ERROR;
      }
    }
    break;
  case 'W':
    return match(l, p, "W: ") ? TFS_LINE_WARNING : -1; /* apt */
  case 'C':
    if (cannot(l, p))
      return TFS_LINE_ERROR;
    /* git: "CONFLICT (content): Merge conflict in a.c". */
    if (match(l, p, "CONFLICT (") || match(l, p, "CMake Error"))
      return cause(l);
    return match(l, p, "CMake Warning") ? TFS_LINE_WARNING : -1;
  case '!':
    /* git push: " ! [rejected]  main -> main (fetch first)". */
    if (match(l, p, "! [rejected]") || match(l, p, "! [remote rejected]"))
      return cause(l);
    break;
  case 'c':
    return cannot(l, p) ? TFS_LINE_ERROR : -1;
  case 'K':
  case 'U':
    /* sh: a job killed (SIGKILL); the macOS linker. */
    if ((skip_blanks(l, p + 6) == l->n && match(l, p, "Killed")) ||
        match(l, p, "Undefined symbols for architecture")) {
      l->rank = TFS__RANK_CAUSE;
      return TFS_LINE_ERROR;
    }
    break;
  case 'e':
  case 'w':
    /* Kotlin: "e: file:///a/B.kt:42:25 Unresolved reference: x". */
    if (p + 3 < l->n && l->s[p + 1] == ':' && l->s[p + 2] == ' ' &&
        (match(l, p + 3, "file:") || l->s[p + 3] == '/'))
      return l->s[p] == 'w' ? TFS_LINE_WARNING : cause(l);
    break;
  }
  return -1;
}

int tfs__cl_forms(line_t *l) {
  size_t p = l->start;
  if (p >= l->n)
    return TFS_LINE_PLAIN; /* only a prefix: "npm error", "[ERROR] " */
  if (l->wrapper == W_VALGRIND) {
    int k = valgrind_report(l);
    if (k >= 0)
      return k;
  }
  unsigned char c0 = l->s[p];
  if ((c0 == 'a' || c0 == 'b' || c0 == 'F' || c0 == '#' || c0 == '0') && tfs__cl_frame_at(l, p))
    return TFS_LINE_PLAIN;
  if ((c0 == '>' || c0 == '|' || c0 == '+' || is_digit(c0)) && tfs__cl_excerpt_at(l, p))
    return TFS_LINE_PLAIN;
  int k = first_byte_forms(l, p);
  if (k >= 0)
    return k;
  size_t end = word_end(l, l->n < 512 ? l->n : 512);
  if (end < l->n && l->s[end] == '(' && (k = paren_located(l, end)) >= 0)
    return k;
  first_word_t w;
  first_word(l, end, &w);
  if (w.program && (k = program_report(l, w.colon + 1)) >= 0)
    return k;
  if (w.path)
    return contains(l, w.colon, "undefined reference") ? cause(l) : located_kind(l, w.colon);
  return -1;
}
