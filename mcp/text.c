/* Framing and text hygiene for the MCP server: a bounded line splitter for
 * stdin, and the UTF-8 sanitiser that every transcript line passes through
 * before it goes into JSON (jansson refuses invalid UTF-8, and an agent
 * gains nothing from a 10 MiB line). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

void mcp_lines_init(mcp_lines_t *l, size_t limit) {
  memset(l, 0, sizeof *l);
  l->limit = limit;
}

void mcp_lines_free(mcp_lines_t *l) {
  free(l->buf);
  l->buf = NULL;
  l->len = l->cap = 0;
}

/* Grows the buffer so that it can hold need bytes; never beyond limit + 1,
 * because a line that long is skipped rather than kept. */
static int lines_reserve(mcp_lines_t *l, size_t need) {
  if (need <= l->cap)
    return 0;
  size_t cap = l->cap ? l->cap : 4096;
  while (cap < need)
    cap *= 2;
  if (cap > l->limit + 1 && need <= l->limit + 1)
    cap = l->limit + 1;
  char *b = realloc(l->buf, cap);
  if (!b)
    return -ENOMEM;
  l->buf = b;
  l->cap = cap;
  return 0;
}

static void deliver(mcp_lines_t *l, const char *line, size_t len, mcp_line_fn fn, void *arg) {
  if (len && line[len - 1] == '\r')
    len--;
  fn(arg, line, len, 0);
}

int mcp_lines_feed(mcp_lines_t *l, const char *data, size_t n, mcp_line_fn fn, void *arg) {
  while (n) {
    const char *nl = memchr(data, '\n', n);
    size_t chunk = nl ? (size_t)(nl - data) : n;
    if (l->skipping) {
      l->skipped += chunk;
      if (nl) {
        size_t total = l->skipped;
        l->skipping = 0;
        l->skipped = 0;
        fn(arg, NULL, total, total);
      }
    } else if (l->len + chunk > l->limit) {
      /* Too long: forget what we held and count the rest up to the newline. */
      l->skipped = l->len + chunk;
      l->len = 0;
      if (nl) {
        size_t total = l->skipped;
        l->skipped = 0;
        fn(arg, NULL, total, total);
      } else {
        l->skipping = 1;
      }
    } else if (nl && l->len == 0) {
      deliver(l, data, chunk, fn, arg); /* the common case: no copy */
    } else {
      int err = lines_reserve(l, l->len + chunk + 1);
      if (err)
        return err;
      memcpy(l->buf + l->len, data, chunk);
      l->len += chunk;
      if (nl) {
        size_t len = l->len;
        l->len = 0;
        deliver(l, l->buf, len, fn, arg);
      }
    }
    if (!nl)
      break;
    n -= chunk + 1;
    data = nl + 1;
  }
  return 0;
}

void mcp_lines_finish(mcp_lines_t *l, mcp_line_fn fn, void *arg) {
  if (l->skipping) {
    size_t total = l->skipped;
    l->skipping = 0;
    l->skipped = 0;
    fn(arg, NULL, total, total);
  } else if (l->len) {
    size_t len = l->len;
    l->len = 0;
    deliver(l, l->buf, len, fn, arg);
  }
}

char *mcp_text_clean(const char *s, size_t len, size_t max) {
  return mcp_text_clean_prefix(s, len, len, max);
}

char *mcp_text_clean_prefix(const char *s, size_t len, size_t total, size_t max) {
  size_t keep = max ? tfs_utf8_cut(s, len, max) : len;
  size_t n;
  char *clean = tfs_utf8_sanitize(s, keep, &n);
  if (total < len)
    total = len;
  if (!clean || keep == total)
    return clean;
  char marker[64];
  int m = snprintf(marker, sizeof marker, "\xe2\x80\xa6 [cut %zu bytes]", total - keep);
  char *out = realloc(clean, n + (size_t)m + 1);
  if (!out) {
    free(clean);
    return NULL;
  }
  memcpy(out + n, marker, (size_t)m + 1);
  return out;
}
