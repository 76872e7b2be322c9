/* untilPattern's matcher: PCRE2 (Debian's libpcre2-8) with every cost
 * bounded, so that a pattern from a client costs that client an error and
 * never the server (issue 11: a 31-byte POSIX regex took 3.5 GB to
 * compile, another 9.7 s to match one 4 KiB line).
 *
 * - Compiling: the pattern's length is capped (pattern_max), the compile
 *   context bounds nesting and length, and every byte PCRE2 allocates for
 *   the pattern goes through an allocator that refuses more than
 *   pattern_memory, so a pattern whose compiled form would be large (nested
 *   counted repetition multiplies) fails at once. PCRE2's own ceiling (64K
 *   code units at link size 2) stops most such patterns before that.
 * - Matching: the match, depth and heap limits of a match context bound
 *   each line's backtracking and memory; the interpreter is used, not the
 *   JIT, because the JIT ignores the depth and heap limits. A limit costs
 *   the line an error that names it and says what to change. Matching
 *   time is not bounded by these alone (a repeat's backtracking is not
 *   counted as steps: '(a|b).*(c|d)' over a 4 KiB line takes ~200 ms), so
 *   matching never runs on the server's loop (until.c).
 * - The dialect is PCRE2's; what users wrote as POSIX ERE keeps its
 *   meaning except for GNU escapes PCRE2 reads differently, which are
 *   refused with what to write instead (docs/mcp.md, "untilPattern").
 *   Back-references are allowed: they are bounded like the rest.
 * Subjects are bytes (no UTF mode), NUL bytes included.
 *
 * Compiling runs on the loop; mcp_pattern_match on a worker thread, one
 * thread per pattern at a time (a compiled pattern is read-only). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define PARENS_NEST_MAX 64

/* The GNU escapes refused, and what PCRE2 writes for each; GNU_UPTO is
 * {,N}, GNU's {0,N}, which PCRE2 10.42 reads as plain text. */
#define GNU_UPTO 4
static const char gnu_chars[] = "<>`'";
static const char *const gnu_instead[] = {"\\b", "\\b", "\\A", "\\z"};

struct mcp_pattern {
  pcre2_code *code;
  size_t used, cap; /* bytes PCRE2 holds for it, and the most it may */
  uint32_t steps, depth, heap_kib;
};

/* PCRE2's allocator for one pattern: counts, and refuses beyond cap. */
static void *pat_alloc(size_t n, void *arg) {
  mcp_pattern_t *p = arg;
  if (n > p->cap - p->used)
    return NULL;
  size_t *b = malloc(sizeof(size_t) * 2 + n);
  if (!b)
    return NULL;
  b[0] = n;
  p->used += n;
  return b + 2;
}

static void pat_free(void *ptr, void *arg) {
  if (!ptr)
    return;
  mcp_pattern_t *p = arg;
  size_t *b = (size_t *)ptr - 2;
  p->used -= b[0];
  free(b);
}

/* GNU ERE escapes that PCRE2 would take as literal characters, silently
 * changing what matches. Returns the index in gnu_chars of the first one
 * (its offset in *at), or -1; \Q..\E and character classes are skipped,
 * where they mean nothing special. */
static int gnu_escape(const char *s, size_t len, size_t *at) {
  int in_class = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\\' && i + 1 < len) {
      char c = s[++i];
      if (c == 'Q') {
        const char *e = memmem(s + i, len - i, "\\E", 2);
        i = e ? (size_t)(e - s) + 1 : len;
      } else if (!in_class && c && strchr(gnu_chars, c)) {
        *at = i - 1;
        return (int)(strchr(gnu_chars, c) - gnu_chars);
      }
    } else if (s[i] == '{' && !in_class && i + 2 < len && s[i + 1] == ',') {
      size_t j = i + 2;
      while (j < len && s[j] >= '0' && s[j] <= '9')
        j++;
      if (j > i + 2 && j < len && s[j] == '}') {
        *at = i;
        return GNU_UPTO;
      }
    } else if (s[i] == '[' && !in_class) {
      in_class = 1;
      if (i + 1 < len && s[i + 1] == '^')
        i++;
      if (i + 1 < len && s[i + 1] == ']')
        i++; /* a leading ']' is a member */
    } else if (s[i] == '[' && in_class && i + 1 < len && s[i + 1] == ':') {
      const char *e = memmem(s + i, len - i, ":]", 2);
      i = e ? (size_t)(e - s) + 1 : i;
    } else if (s[i] == ']' && in_class) {
      in_class = 0;
    }
  }
  return -1;
}

static void compile_error(int code, size_t off, const char *src, size_t len, const mcp_pattern_t *p,
                          char *msg, size_t msglen) {
  if (code == PCRE2_ERROR_PATTERN_TOO_LARGE || code == PCRE2_ERROR_HEAP_FAILED ||
      code == PCRE2_ERROR_PATTERN_TOO_COMPLICATED) {
    /* Larger than PCRE2's code limit, or than pattern_memory (the
     * allocator refused). */
    snprintf(msg, msglen,
             "untilPattern '%.200s' is too large once compiled (more than %zu KiB): counted "
             "repetitions nested in each other multiply, e.g. (a{0,20}){0,20}; write it "
             "without nesting them (e.g. a{0,400})",
             src, p->cap / 1024);
    return;
  }
  PCRE2_UCHAR why[200];
  if (pcre2_get_error_message(code, why, sizeof why) < 0)
    snprintf((char *)why, sizeof why, "error %d", code);
  snprintf(msg, msglen,
           "untilPattern '%.200s' is not a valid pattern (PCRE2 syntax): %s at offset %zu; fix "
           "it (e.g. 'listening on [0-9]+')",
           src, (char *)why, off > len ? len : off);
}

int mcp_pattern_compile(const char *src, size_t len, const mcp_limits_t *lim, mcp_pattern_t **out,
                        char *msg, size_t msglen) {
  *out = NULL;
  if (len > lim->pattern_max) {
    snprintf(msg, msglen,
             "untilPattern is %zu bytes; at most %zu are accepted: match a shorter, distinctive "
             "part of the line",
             len, lim->pattern_max);
    return -1;
  }
  size_t at;
  int gnu = gnu_escape(src, len, &at);
  if (gnu == GNU_UPTO) {
    snprintf(msg, msglen,
             "untilPattern: {,N} (offset %zu) means {0,N} in GNU regex but is plain text in the "
             "PCRE2 syntax; write {0,N}",
             at);
    return -1;
  }
  if (gnu >= 0) {
    snprintf(msg, msglen,
             "untilPattern: \\%c (offset %zu) is a GNU regex escape, which the PCRE2 syntax "
             "reads as a plain character; write %s instead",
             gnu_chars[gnu], at, gnu_instead[gnu]);
    return -1;
  }
  mcp_pattern_t *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  p->cap = lim->pattern_memory;
  p->steps = lim->match_steps;
  p->depth = lim->match_depth;
  p->heap_kib = (uint32_t)(lim->match_heap / 1024 ? lim->match_heap / 1024 : 1);
  pcre2_general_context *gc = pcre2_general_context_create(pat_alloc, pat_free, p);
  pcre2_compile_context *cc = gc ? pcre2_compile_context_create(gc) : NULL;
  int code = 0;
  PCRE2_SIZE off = 0;
  if (cc) {
    pcre2_set_max_pattern_length(cc, lim->pattern_max);
    pcre2_set_parens_nest_limit(cc, PARENS_NEST_MAX);
    /* Bytes, never UTF (a (*UTF) in the pattern would make every line
     * that is not valid UTF-8 an error); no \C. */
    p->code =
        pcre2_compile((PCRE2_SPTR)src, len,
                      PCRE2_NEVER_UTF | PCRE2_NEVER_UCP | PCRE2_NEVER_BACKSLASH_C, &code, &off, cc);
  }
  pcre2_compile_context_free(cc);
  pcre2_general_context_free(gc);
  if (!p->code) {
    if (cc)
      compile_error(code, off, src, len, p, msg, msglen);
    else
      snprintf(msg, msglen, "out of memory");
    free(p);
    return -1;
  }
  *out = p;
  return 0;
}

void mcp_pattern_free(mcp_pattern_t *p) {
  if (!p)
    return;
  pcre2_code_free(p->code); /* through pat_free, which needs p */
  free(p);
}

struct mcp_matcher {
  pcre2_match_context *mc;
  pcre2_match_data *md;
};

mcp_matcher_t *mcp_matcher_new(const mcp_pattern_t *p) {
  mcp_matcher_t *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->mc = pcre2_match_context_create(NULL);
  m->md = pcre2_match_data_create(1, NULL);
  if (!m->mc || !m->md) {
    mcp_matcher_free(m);
    return NULL;
  }
  pcre2_set_match_limit(m->mc, p->steps);
  pcre2_set_depth_limit(m->mc, p->depth);
  pcre2_set_heap_limit(m->mc, p->heap_kib);
  return m;
}

void mcp_matcher_free(mcp_matcher_t *m) {
  if (!m)
    return;
  pcre2_match_data_free(m->md); /* and the heap it grew for backtracking */
  pcre2_match_context_free(m->mc);
  free(m);
}

int mcp_pattern_match(const mcp_pattern_t *p, mcp_matcher_t *m, const char *s, size_t len,
                      char *msg, size_t msglen) {
  int rc = pcre2_match(p->code, (PCRE2_SPTR)s, len, 0, 0, m->md, m->mc);
  if (rc >= 0)
    return 1;
  if (rc == PCRE2_ERROR_NOMATCH)
    return 0;
  const char *what = "the matcher failed";
  char bound[64] = "";
  switch (rc) {
  case PCRE2_ERROR_MATCHLIMIT:
    what = "the match limit";
    snprintf(bound, sizeof bound, " (%u steps)", p->steps);
    break;
  case PCRE2_ERROR_DEPTHLIMIT:
    what = "the depth limit";
    snprintf(bound, sizeof bound, " (%u nested backtracking points)", p->depth);
    break;
  case PCRE2_ERROR_HEAPLIMIT:
    what = "the heap limit";
    snprintf(bound, sizeof bound, " (%u KiB)", p->heap_kib);
    break;
  case PCRE2_ERROR_NOMEMORY:
    what = "the memory available";
    break;
  }
  snprintf(msg, msglen, "%s%s", what, bound);
  return -1;
}

const char *mcp_pattern_hint(void) {
  return "the pattern backtracks too much on this output (nested or adjacent quantifiers such "
         "as (a+)+ or .*.*); make it more specific: anchor it, start it with a literal word, "
         "avoid repeated groups that can match the same text.";
}
