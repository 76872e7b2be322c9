/* The growable buffer (include/taskfs/buf.h): one way to grow text and
 * arrays, and the one JSON string escaper, for every library.
 *
 * The buffer keeps a NUL after its bytes at all times, so its text can be
 * handed to anything that wants a C string; its failure is sticky (oom),
 * so a writer that appends a hundred pieces checks once. */
#include "taskfs/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tfs_grow(void *v, size_t *cap, size_t need, size_t size, size_t first) {
  void **pv = v;
  if (need <= *cap)
    return 0;
  size_t ncap = *cap ? *cap : first ? first : 1;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2)
      return -ENOMEM;
    ncap *= 2;
  }
  if (size && ncap > SIZE_MAX / size)
    return -ENOMEM;
  void *nv = realloc(*pv, ncap * size);
  if (!nv)
    return -ENOMEM;
  *pv = nv;
  *cap = ncap;
  return 0;
}

int tfs_buf_reserve(tfs_buf_t *b, size_t n) {
  if (b->oom)
    return -ENOMEM;
  if (n > SIZE_MAX - b->len - 1 || tfs_grow(&b->s, &b->cap, b->len + n + 1, 1, 64)) {
    b->oom = 1;
    return -ENOMEM;
  }
  b->s[b->len] = '\0';
  return 0;
}

int tfs_buf_append(tfs_buf_t *b, const void *p, size_t n) {
  if (tfs_buf_reserve(b, n))
    return -ENOMEM;
  if (n)
    memcpy(b->s + b->len, p, n);
  b->len += n;
  b->s[b->len] = '\0';
  return 0;
}

int tfs_buf_puts(tfs_buf_t *b, const char *s) {
  return tfs_buf_append(b, s, strlen(s));
}

/* Formats straight into the room left; only a text longer than that is
 * formatted a second time, after the buffer grew to its size. */
int tfs_buf_printf(tfs_buf_t *b, const char *fmt, ...) {
  if (tfs_buf_reserve(b, 0))
    return -ENOMEM;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->s[b->len] = '\0';
    return -EINVAL;
  }
  if ((size_t)n >= b->cap - b->len) {
    if (tfs_buf_reserve(b, (size_t)n))
      return -ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
  return 0;
}

/* The escape of byte c, or 0 for a byte written as it is. */
static char json_short(unsigned char c) {
  switch (c) {
  case '"':
    return '"';
  case '\\':
    return '\\';
  case '\b':
    return 'b';
  case '\f':
    return 'f';
  case '\n':
    return 'n';
  case '\r':
    return 'r';
  case '\t':
    return 't';
  }
  return 0;
}

size_t tfs_json_escaped_len(const char *s, size_t n) {
  size_t len = n;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (json_short(c))
      len += 1;
    else if (c < 0x20)
      len += 5;
  }
  return len;
}

/* Runs of plain bytes are copied whole: most text has no byte to escape,
 * and a record is dumped at every save of a supervisor. */
int tfs_buf_json(tfs_buf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    tfs_buf_append(b, s + run, i - run);
    run = i + 1;
    char esc[6] = {'\\', json_short(c), 0, 0, 0, 0};
    if (esc[1]) {
      tfs_buf_append(b, esc, 2);
      continue;
    }
    memcpy(esc + 1, "u00", 3);
    esc[4] = hex[c >> 4];
    esc[5] = hex[c & 15];
    tfs_buf_append(b, esc, 6);
  }
  return tfs_buf_append(b, s + run, n - run);
}

/* Never asks read() for more than max + 1 bytes in all: a file that grew
 * past max is known by that one byte more, and a file that keeps growing
 * is not read on. A caller that knows the size (fstat) reserves it first,
 * so that a file that stays as it was is read into one allocation. */
int tfs_buf_read(tfs_buf_t *b, int fd, size_t max) {
  size_t start = b->len, limit = max < SIZE_MAX - 1 ? max + 1 : SIZE_MAX - 1;
  for (;;) {
    size_t got = b->len - start;
    if (got > max)
      return -EFBIG;
    size_t left = limit - got, room = b->cap > b->len ? b->cap - b->len - 1 : 0;
    if (!room) {
      size_t more = b->cap > 4096 ? b->cap : 4096;
      if (tfs_buf_reserve(b, more < left ? more : left))
        return -ENOMEM;
      room = b->cap - b->len - 1;
    }
    ssize_t r = read(fd, b->s + b->len, room < left ? room : left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -errno;
    if (r == 0)
      return 0;
    b->len += (size_t)r;
    b->s[b->len] = '\0';
  }
}

char *tfs_str_line(char *s, size_t *len) {
  if (!s)
    return NULL;
  size_t n = strlen(s);
  tfs_buf_t b = {s, n, n + 1, 0};
  if ((n && s[n - 1] == '\n') || !tfs_buf_append(&b, "\n", 1)) {
    if (len)
      *len = b.len;
    return b.s;
  }
  tfs_buf_free(&b);
  return NULL;
}

char *tfs_buf_take(tfs_buf_t *b, size_t *len) {
  if (b->oom || tfs_buf_reserve(b, 0)) {
    tfs_buf_free(b);
    return NULL;
  }
  char *s = b->s;
  if (len)
    *len = b->len;
  *b = (tfs_buf_t)TFS_BUF_INIT;
  return s;
}

void tfs_buf_free(tfs_buf_t *b) {
  free(b->s);
  *b = (tfs_buf_t)TFS_BUF_INIT;
}
