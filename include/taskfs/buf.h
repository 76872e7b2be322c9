/* taskfs: the growable buffer every library shares (core/buf.c, part of
 * libtaskfs.a), in the manner of skalibs' stralloc or Redis's sds: bytes
 * appended, a printf appended, room reserved, the text taken or freed.
 * Also the one growth rule for an array of anything (tfs_grow) and the
 * one JSON string escaper (tfs_buf_json), so no library grows or escapes
 * by hand.
 *
 *   tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
 *   tfs_buf_puts(&b, "id=");
 *   tfs_buf_printf(&b, "%d\n", n);
 *   if (b.oom) return -ENOMEM;      (one check after many appends)
 *   char *text = tfs_buf_take(&b, &len);
 */
#ifndef TASKFS_BUF_H
#define TASKFS_BUF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* s holds len bytes and a NUL after them once anything was appended or
 * reserved (NULL before). oom is sticky: once an allocation failed, every
 * later append does nothing and returns -ENOMEM, so a writer may append
 * many pieces and check once. */
typedef struct {
  char *s;
  size_t len, cap;
  int oom;
} tfs_buf_t;

#define TFS_BUF_INIT                                                                               \
  { 0 }

/* Room for n more bytes and the NUL (capacity doubles, from 64 bytes at
 * the least). 0, or -ENOMEM (and oom set). */
int tfs_buf_reserve(tfs_buf_t *b, size_t n);
/* Appends n bytes of p (NUL bytes are kept as any other). 0 or -ENOMEM. */
int tfs_buf_append(tfs_buf_t *b, const void *p, size_t n);
int tfs_buf_puts(tfs_buf_t *b, const char *s);
int tfs_buf_printf(tfs_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..n) escaped as the body of a JSON string (no quotes), as
 * jansson writes it: '"' and '\\' with a backslash, \b \f \n \r \t, the
 * other C0 controls as \u00XX in upper-case hex, every other byte as it
 * is (the caller passes valid UTF-8). 0 or -ENOMEM. */
int tfs_buf_json(tfs_buf_t *b, const char *s, size_t n);
/* The bytes tfs_buf_json() writes for s[0..n). */
size_t tfs_json_escaped_len(const char *s, size_t n);
/* Appends what fd reads until its end (EINTR retried). 0; -EFBIG once
 * this call read more than max bytes (max + 1 at the most, and kept); or
 * -errno of read. */
int tfs_buf_read(tfs_buf_t *b, int fd, size_t max);
/* Hands the text over (malloc'ed, NUL-terminated; "" when nothing was
 * appended) with its length in *len (if len), and leaves b empty. NULL
 * after an allocation failed (b is freed then). */
char *tfs_buf_take(tfs_buf_t *b, size_t *len);
/* s (malloc'ed, NUL-terminated) ending in '\n': one is added unless it
 * is there (a JSON dump, say, for a file or a response body), its length
 * in *len (if len). NULL for a NULL s, and without memory (s is freed). */
char *tfs_str_line(char *s, size_t *len);
/* Frees the text and leaves b empty (TFS_BUF_INIT). */
void tfs_buf_free(tfs_buf_t *b);

/* A tfs_buf_t local that is freed when it goes out of scope (the style of
 * taskfs/cleanup.h); tfs_buf_take() first to keep the text. */
#define TFS_AUTOBUF __attribute__((cleanup(tfs_buf_free)))

/* Makes room for at least need elements of size bytes in the array *v (a
 * pointer to the array's pointer) of *cap elements, doubling from first.
 * 0, or -ENOMEM with *v and *cap unchanged. */
int tfs_grow(void *v, size_t *cap, size_t need, size_t size, size_t first);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_BUF_H */
