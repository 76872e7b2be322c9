/* Framing and text hygiene for the MCP server: a bounded line splitter for
 * stdin, and the UTF-8 sanitiser that every transcript line passes through
 * before it goes into JSON (jansson refuses invalid UTF-8, and an agent
 * gains nothing from a 10 MiB line). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

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

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if the bytes there
 * are not one (overlongs, surrogates and code points above U+10FFFF
 * included). */
static size_t utf8_seq(const unsigned char *p, size_t avail) {
  unsigned char c = p[0];
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned int cp;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (avail < n)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

char *mcp_text_clean(const char *s, size_t len, size_t max) {
  return mcp_text_clean_prefix(s, len, len, max);
}

char *mcp_text_clean_prefix(const char *s, size_t len, size_t total, size_t max) {
  static const char repl[] = "\xef\xbf\xbd"; /* U+FFFD */
  const unsigned char *p = (const unsigned char *)s;
  size_t keep = len;
  if (max && len > max)
    keep = max;
  /* Worst case: every byte becomes 3, plus the cut marker. */
  char *out = malloc(keep * 3 + 64);
  if (!out)
    return NULL;
  size_t o = 0, i = 0;
  while (i < keep) {
    size_t n = utf8_seq(p + i, len - i);
    if (n == 0 || p[i] == 0) {
      memcpy(out + o, repl, 3);
      o += 3;
      i++;
      continue;
    }
    if (i + n > keep)
      break; /* do not split a character at the cut */
    memcpy(out + o, p + i, n);
    o += n;
    i += n;
  }
  if (total < len)
    total = len;
  if (i < total)
    o += (size_t)sprintf(out + o, "\xe2\x80\xa6 [cut %zu bytes]", total - i);
  out[o] = 0;
  return out;
}
