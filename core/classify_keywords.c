/* The keyword families of the classifier, one function per anchor: errors
 * (error, ERR!, TypeError:), warnings, fail/fatal/fault, pass/panic,
 * exceptions, Python tracebacks, success summaries, core dumps and the
 * crosses test runners print. */
#include "core/classify.h"

/* The exception name whose last part is [a, b) is reported: an error, and
 * the cause of the failure when it opens the line. */
static void exception_name(line_t *l, size_t a, size_t b) {
  size_t s = tfs__cl_name_start(l, a);
  if (s == (size_t)-1)
    return;
  if (s == a && !tfs__cl_standalone(l, a, b))
    return;
  l->flags |= F_ERROR;
  if (tfs__cl_report_start(l, s)) {
    l->rank = TFS__RANK_CAUSE;
    l->located = 1;
  }
}

void tfs__cl_error(line_t *l, size_t i) {
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
          int v = tfs__cl_number_value(l, t, e);
          l->flags |= v > 0 ? F_ERROR : F_SUMMARY;
          return;
        }
      }
      if (tfs__cl_condition_word(l, a, b, 0)) {
        l->flags |= F_ERROR;
        /* JavaScript's and terraform's "Error: message" is the report. */
        if (a == l->start && match(l, a, "Error") && b < l->n && l->s[b] == ':') {
          l->rank = TFS__RANK_CAUSE;
          l->located = 1; /* a report of its own */
        }
      }
      return;
    }
    if (tok_is(l, a, b, "errors")) {
      if (tfs__cl_condition_word(l, a, b, 1))
        l->flags |= F_ERROR;
      return;
    }
    if (b == wb && tok_is(l, a, b, "err")) {
      /* "npm ERR!", "[ERR]", "err: ..."; a bare "err" is a variable name. */
      unsigned char c = b < l->n ? l->s[b] : ' ';
      if (c == '!' || c == ':' || (tok_upper(l, a, b) && (c == ']' || c == ' ')))
        if (tfs__cl_standalone(l, a, b))
          l->flags |= F_ERROR;
      return;
    }
    return;
  }
  /* Inside a longer word: "TypeError:", "AssertionError" at the end,
   * "etl.errors.SchemaMismatchError: ...". */
  if (b == k + 5 && match(l, k, "Error") && tfs__cl_camel_report(l, a, b, 5))
    exception_name(l, a, b);
}

/* "wa": warn, warning, warnings, WARN, DeprecationWarning:. */
void tfs__cl_warning(line_t *l, size_t i) {
  if (!match_ci(l, i, "warn"))
    return;
  size_t a = tok_start(l, i), b = tok_end(l, i);
  if (a == i) {
    if (tok_is(l, a, b, "warn") || tok_is(l, a, b, "warning")) {
      if (tfs__cl_condition_word(l, a, b, 0))
        l->flags |= F_WARNING;
    } else if (tok_is(l, a, b, "warnings")) {
      if (tfs__cl_condition_word(l, a, b, 1))
        l->flags |= F_WARNING;
    }
    return;
  }
  if (b == i + 7 && match(l, i, "Warning") && tfs__cl_camel_report(l, a, b, 7) &&
      tfs__cl_standalone(l, a, b))
    l->flags |= F_WARNING;
}

/* "fa": fail, failed, failure(s), FAIL, fatal, fault, segfault. */
void tfs__cl_fa(line_t *l, size_t i) {
  size_t a = tok_start(l, i), b = tok_end(l, i);
  if (a == i) {
    if (tok_is(l, a, b, "fatal")) {
      /* "fatal: not a git repository", "FATAL", "[fatal]"; "non-fatal"
       * and prose are not. */
      if (!tfs__cl_standalone(l, a, b))
        return;
      unsigned char c = b < l->n ? l->s[b] : ' ';
      if (c == ':' || c == ']' || tok_upper(l, a, b) || (a > 0 && l->s[a - 1] == '['))
        l->flags |= F_ERROR;
      return;
    }
    if (tok_is(l, a, b, "fault")) {
      size_t pa, pb;
      if (tfs__cl_prev_word(l, a, &pa, &pb) && tok_is(l, pa, pb, "segmentation")) {
        l->flags |= F_ERROR;
        l->rank = TFS__RANK_CAUSE;
      }
      return;
    }
    int plural = tok_is(l, a, b, "failures");
    if (!(plural || tok_is(l, a, b, "fail") || tok_is(l, a, b, "failed") ||
          tok_is(l, a, b, "failure") || tok_is(l, a, b, "failing")))
      return;
    if (!tfs__cl_standalone(l, a, b))
      return;
    int c = tfs__cl_count_near(l, a, b);
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
void tfs__cl_pa(line_t *l, size_t i) {
  size_t a = tok_start(l, i), b = tok_end(l, i);
  if (a != i)
    return;
  if (tok_is(l, a, b, "panic")) {
    /* go "panic: ...", "Kernel panic", "PANIC". */
    size_t pa, pb;
    unsigned char c = b < l->n ? l->s[b] : ' ';
    if (tfs__cl_standalone(l, a, b) &&
        (c == ':' || tok_upper(l, a, b) ||
         (tfs__cl_prev_word(l, a, &pa, &pb) && tok_is(l, pa, pb, "kernel")))) {
      l->flags |= F_ERROR;
      if (a == l->start)
        l->rank = TFS__RANK_CAUSE;
    }
    return;
  }
  if (tok_is(l, a, b, "panicked")) {
    l->flags |= F_ERROR; /* rust: "thread 'main' panicked at ..." */
    l->rank = TFS__RANK_CAUSE;
    return;
  }
  if (tok_is(l, a, b, "passed") || tok_is(l, a, b, "passing") || tok_is(l, a, b, "pass")) {
    if (!tfs__cl_standalone(l, a, b))
      return;
    if (tfs__cl_count_near(l, a, b) >= 0) {
      l->pass_counts++;
      return;
    }
    /* "All tests passed", "All checks passed!" */
    size_t pa, pb;
    if (tfs__cl_prev_word(l, a, &pa, &pb) &&
        (tok_is(l, pa, pb, "tests") || tok_is(l, pa, pb, "checks")))
      l->flags |= F_SUMMARY;
  }
}

/* "xc": Exception in thread, java.lang.IllegalStateException: x,
 * Unhandled exception. */
void tfs__cl_exception(line_t *l, size_t i) {
  if (i == 0 || !match_ci(l, i - 1, "exception"))
    return;
  size_t k = i - 1;
  size_t a = tok_start(l, k), b = tok_end(l, k);
  if (b != k + 9)
    return; /* exceptions, exceptional */
  if (a == k) {
    if (!tfs__cl_standalone(l, a, b))
      return;
    size_t t = skip_blanks(l, b), pa, pb;
    if ((t < l->n && l->s[t] == ':') || match(l, t, "in thread") || tok_upper(l, a, b) ||
        (tfs__cl_prev_word(l, a, &pa, &pb) &&
         (tok_is(l, pa, pb, "unhandled") || tok_is(l, pa, pb, "uncaught")))) {
      l->flags |= F_ERROR;
      /* Java: "Exception in thread "main" java.lang.X: ...". */
      if (a == l->start && (match(l, t, "in thread") || match(l, a, "Exception:")))
        l->rank = TFS__RANK_CAUSE;
    }
    return;
  }
  if (match(l, k, "Exception") && tfs__cl_camel_report(l, a, b, 9))
    exception_name(l, a, b);
}

/* "eb": Traceback (most recent call last): */
void tfs__cl_traceback(line_t *l, size_t i) {
  if (i < 4 || !match_ci(l, i - 4, "traceback"))
    return;
  size_t a = i - 4, b = tok_end(l, a);
  if (b != a + 9 || tok_start(l, a) != a)
    return;
  size_t t = skip_blanks(l, b);
  if (match(l, t, "(most recent call") || (t < l->n && l->s[t] == ':')) {
    l->flags |= F_ERROR;
    l->rank = TFS__RANK_VERDICT; /* the exception at its end says what */
  }
}

/* "cc": Build succeeded, BUILD SUCCESSFUL, Compiled successfully,
 * Successfully built. */
void tfs__cl_success(line_t *l, size_t i) {
  if (i < 2 || !match_ci(l, i - 2, "succ"))
    return;
  size_t a = i - 2, b = tok_end(l, a);
  if (tok_start(l, a) != a)
    return;
  if (!(tok_is(l, a, b, "succeeded") || tok_is(l, a, b, "success") ||
        tok_is(l, a, b, "successful") || tok_is(l, a, b, "successfully")))
    return;
  if (!tfs__cl_standalone(l, a, b))
    return;
  size_t pa, pb;
  if (tok_upper(l, a, b) || (a == l->start && is_upper(l->s[a])) ||
      (tfs__cl_prev_word(l, a, &pa, &pb) &&
       (tok_is(l, pa, pb, "build") || tok_is(l, pa, pb, "compiled") ||
        tok_is(l, pa, pb, "compilation") || tok_is(l, pa, pb, "tests"))))
    l->flags |= F_SUMMARY;
}

/* "du": "(core dumped)". */
void tfs__cl_dumped(line_t *l, size_t i) {
  if (i >= 5 && match_ci(l, i, "dumped") && match_ci(l, i - 5, "core ")) {
    l->flags |= F_ERROR;
    l->rank = TFS__RANK_CAUSE;
  }
}

/* 0xE2 0x9C: the crosses test runners print for a failed test: U+2715 ✕,
 * U+2716 ✖, U+2717 ✗, U+2718 ✘. (The ticks U+2713, U+2714 are plain.) */
void tfs__cl_cross(line_t *l, size_t i) {
  if (i + 2 < l->n) {
    unsigned char c = l->s[i + 2];
    if (c >= 0x95 && c <= 0x98)
      l->flags |= F_FAILURE;
  }
}
