/* Internal to the classifier (core/classify*.c): the line being looked at,
 * character classes and the small matchers every step inlines, and the
 * steps themselves. See core/classify.c for how a line is classified. */
#ifndef TASKFS_CORE_CLASSIFY_H
#define TASKFS_CORE_CLASSIFY_H

#include <stdint.h>
#include <string.h>

#include "core/internal.h"
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

/* A tool's prefix in front of the content, noted by content_start(): what
 * the payload after it means depends on who wrapped it. */
enum {
  W_NONE = 0,
  W_VALGRIND, /* "==123== " */
  W_NPM_ERR,  /* "npm error ", "npm ERR! " */
  W_MVN_ERR,  /* "[ERROR] " */
  W_MVN_WARN, /* "[WARNING] " */
  W_MVN_INFO, /* "[INFO] " */
};

typedef struct {
  const unsigned char *s;
  size_t n;     /* examined length */
  size_t start; /* where the content starts (after blanks, escapes, prefixes) */
  unsigned flags;
  int pass_counts;  /* "3 passed", "Passing: 3" */
  int fail_counts;  /* "1 failed", "failures: 0" */
  int other_counts; /* "2 errors", "0 warnings" */
  int fail_positive;
  int rank;    /* TFS__RANK_* set by a rule that knows, else 0 */
  int wrapper; /* W_* */
  int located; /* the content starts with a source location ("a.c:3:") */
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
static inline int tok_upper(const line_t *l, size_t a, size_t b) {
  int letters = 0;
  for (size_t i = a; i < b; i++) {
    if (is_lower(l->s[i]))
      return 0;
    letters += is_upper(l->s[i]);
  }
  return letters >= 2;
}

static inline size_t skip_blanks(const line_t *l, size_t i) {
  while (i < l->n && is_blank(l->s[i]))
    i++;
  return i;
}

/* Skips blanks backwards from i (exclusive end). */
static inline size_t skip_blanks_back(const line_t *l, size_t i) {
  while (i > 0 && is_blank(l->s[i - 1]))
    i--;
  return i;
}

/* Sets l up for the line: escapes removed (into plain if any), trailing
 * blanks dropped, the content start found. */
void tfs__cl_begin(line_t *l, const char *line, size_t len,
                   unsigned char plain[TFS__CLASSIFY_SCAN]);

/* ---- generic word checks (classify_words.c) ------------------------------ */

/* The word that ends (after blanks) just before position a, as [*pa, *pb). */
int tfs__cl_prev_word(const line_t *l, size_t a, size_t *pa, size_t *pb);
/* The word at [a, b) stands as a word of its own (not in a flag, path,
 * member access, hyphenated compound or quoted identifier). */
int tfs__cl_standalone(const line_t *l, size_t a, size_t b);
/* A number standing alone at [a, b): 0 zero, 1 positive, -1 not one. */
int tfs__cl_number_value(const line_t *l, size_t a, size_t b);
/* The count next to the word at [a, b): -1 none, 0 zero/negated, 1 positive. */
int tfs__cl_count_near(const line_t *l, size_t a, size_t b);
/* The condition word at [a, b) ("error", "warnings") reports one. */
int tfs__cl_condition_word(line_t *l, size_t a, size_t b, int plural);
/* A CamelCase name ending in a suffix of slen bytes, reported ("TypeError:"). */
int tfs__cl_camel_report(const line_t *l, size_t a, size_t b, size_t slen);
/* Where a dotted name ending with the part at a starts, or (size_t)-1. */
size_t tfs__cl_name_start(const line_t *l, size_t a);
/* An exception name starting at s opens the line's report. */
int tfs__cl_report_start(const line_t *l, size_t s);

/* ---- keyword families (classify_keywords.c), each at its anchor i -------- */

void tfs__cl_error(line_t *l, size_t i);
void tfs__cl_warning(line_t *l, size_t i);
void tfs__cl_fa(line_t *l, size_t i);
void tfs__cl_pa(line_t *l, size_t i);
void tfs__cl_exception(line_t *l, size_t i);
void tfs__cl_traceback(line_t *l, size_t i);
void tfs__cl_success(line_t *l, size_t i);
void tfs__cl_dumped(line_t *l, size_t i);
void tfs__cl_cross(line_t *l, size_t i);

/* ---- the anchor scan (classify_scan.c) ------------------------------------ */

/* Runs the anchor filter over the line and visits every keyword it finds. */
void tfs__cl_scan_keywords(line_t *l);

/* ---- tools' fixed markers (classify_tools.c) ------------------------------ */

/* The kind a fixed marker at the content start decides, or -1. */
int tfs__cl_markers(line_t *l);
/* The kind a compiler diagnostic header names, or -1 if it is not one. */
int tfs__cl_diagnostic(const line_t *l);

/* ---- forms (classify_forms.c) ---------------------------------------------- */

/* Skips the prefixes tools put before their own text (terraform's box,
 * BuildKit's step and time, valgrind's pid, Criterion's "[----]", npm's and
 * Maven's level); notes the wrapper. Returns where the content starts. */
size_t tfs__cl_prefixes(line_t *l, size_t i);
/* Lines whose form decides: stack frames and code excerpts (plain, they are
 * context), shell, apt, git, linker, valgrind and sanitizer reports, and a
 * source location at the start ("a.go:12:5: message"). Returns the kind,
 * or -1 to go on. */
int tfs__cl_forms(line_t *l);
/* The content at i is a stack frame ("at f (a.js:1:2)", "File \"x\", line
 * 3", "#1 0x4005 in f a.c:3", "by 0x4005: f (a.c:3)"). */
int tfs__cl_frame_at(const line_t *l, size_t i);
/* The content at i is a code excerpt ("  12 |   code", "> 3 | x", "   |"). */
int tfs__cl_excerpt_at(const line_t *l, size_t i);

/* ---- ranks (classify_rank.c) ----------------------------------------------- */

/* The rank of an important line of kind k whose rules left l->rank 0:
 * verdicts ("make: *** [x] Error 1", "Build FAILED") rank below errors. */
int tfs__cl_rank(const line_t *l, int kind);

#endif
