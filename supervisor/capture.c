/* Capture: a worker's output, read from its pipes, written into one
 * transcript. With the merged stream (the default) there is one pipe,
 * fd 1 and fd 2 of the worker both, and only stream 0 is used: the bytes
 * arrive in the order the program wrote them. With stderr split, stream 1
 * is stderr's own pipe.
 *
 * Each stream has a line buffer of SUP_CAPTURE_BUF bytes that only ever
 * holds an incomplete line: as soon as a read brings newlines, every
 * complete line in the buffer goes to the transcript in a single write (a
 * batch of whole lines; a line is never split between two writes, so the
 * lines of two streams never mix, and a follower never sees the first half
 * of a line whose write went on to fail). A line that fills the buffer
 * without a newline is written in pieces; while it is open the other
 * stream is held back (the caller stops reading its pipe), so the
 * transcript stays the exact bytes of each stream and memory stays bounded.
 *
 * Each new line is fed to the important-line tracker (its first
 * SUP_CAPTURE_FEED_MAX bytes), found 64 bytes at a time: a flood of lines
 * too short to be important costs a popcount per block.
 *
 * Line numbers count lines as they start, so a final line without a newline
 * counts too, matching tfs_transcript_read(). With stderr split, lines from
 * stderr are listed in the sidecar tasks/<id>/stderr-lines as ranges
 * "first-last\n" of line numbers, appended as they happen (adjacent ranges
 * may follow each other; a reader merges them).
 */
#include "supervisor/internal.h"

#include <errno.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sup_capture_init(sup_capture_t *c, int fd, int side_fd, tfs_important_t *imp, int64_t lines,
                     int64_t bytes) {
  memset(c, 0, sizeof *c);
  c->fd = fd;
  c->side_fd = side_fd;
  c->imp = imp;
  c->lines = lines;
  c->bytes = c->line_end = bytes;
  c->open_stream = -1;
  for (int i = 0; i < 2; i++) {
    c->s[i].buf = malloc(SUP_CAPTURE_BUF);
    if (!c->s[i].buf) {
      sup_capture_free(c);
      return -ENOMEM;
    }
  }
  return 0;
}

void sup_capture_free(sup_capture_t *c) {
  for (int i = 0; i < 2; i++) {
    free(c->s[i].buf);
    c->s[i].buf = NULL;
  }
}

void sup_capture_flush_side(sup_capture_t *c) {
  char buf[64];
  if (!c->err_first)
    return;
  if (c->side_fd >= 0) {
    int n = snprintf(buf, sizeof buf, "%" PRId64 "-%" PRId64 "\n", c->err_first, c->err_last);
    /* A failed sidecar write loses only the stream attribution of these
     * lines; the transcript itself is intact. */
    if (write(c->side_fd, buf, (size_t)n) < 0)
      c->last_err = -errno;
  }
  c->err_first = c->err_last = 0;
}

/* Notes that line lineno came from stream st. */
static void note_line(sup_capture_t *c, int st, int64_t lineno, const char *line, size_t len) {
  if (c->imp)
    tfs_important_feed(c->imp, lineno, line,
                       len > SUP_CAPTURE_FEED_MAX ? SUP_CAPTURE_FEED_MAX : len);
  if (st != SUP_STDERR)
    return;
  if (c->err_first && c->err_last + 1 == lineno) {
    c->err_last = lineno;
    return;
  }
  sup_capture_flush_side(c);
  c->err_first = c->err_last = lineno;
}

/* Notes where the last whole line of data, written at offset at, ends:
 * the transcript's last line boundary. */
static void note_boundary(sup_capture_t *c, int64_t at, const char *data, size_t len) {
  const char *nl = len ? memrchr(data, '\n', len) : NULL;
  if (nl)
    c->line_end = at + (nl - data) + 1;
}

/* The one place bytes go into the transcript: data is whole lines, or a
 * piece of one long line (see write_lines and write_piece). A short write
 * is completed (tfs_transcript_append goes on from where it stopped); one
 * that fails part way (a full disk) leaves the bytes that landed, measured
 * with fstat since only this process appends, and counts the rest as
 * dropped. The transcript's last line boundary is kept in line_end, so
 * what a failed write left of a line, [line_end, bytes), is known exactly
 * and can be truncated away. Returns 0 or the negative errno. */
static int put(sup_capture_t *c, const char *data, size_t len) {
  int64_t at = c->bytes;
  int err = tfs_transcript_append(c->fd, data, len, 0);
  int64_t landed = (int64_t)len;
  if (err) {
    struct stat st;
    landed = 0;
    if (fstat(c->fd, &st) == 0 && st.st_size >= c->bytes && st.st_size - c->bytes <= (int64_t)len)
      landed = st.st_size - c->bytes;
    c->dropped += (int64_t)len - landed;
    c->last_err = err;
  }
  c->bytes += landed;
  note_boundary(c, at, data, (size_t)landed);
  return err;
}

/* Before stream st writes: if the other stream left a line open (it ended
 * without a newline), close that line so the two never share one. */
static void close_foreign(sup_capture_t *c, int st) {
  if (c->open_stream >= 0 && c->open_stream != st) {
    put(c, "\n", 1);
    c->open_stream = -1;
  }
}

int sup_capture_holder(const sup_capture_t *c) {
  if (c->open_stream >= 0 && !c->s[c->open_stream].eof)
    return c->open_stream;
  return -1;
}

void sup_capture_space(sup_capture_t *c, int st, char **p, size_t *n) {
  sup_cap_stream_t *s = &c->s[st];
  *p = s->buf + s->len;
  *n = SUP_CAPTURE_BUF - s->len;
}

/* Notes that lines first..last came from stderr, extending the open range
 * when they follow it (what note_line() does one line at a time). */
static void note_err_range(sup_capture_t *c, int64_t first, int64_t last) {
  if (c->err_first && c->err_last + 1 == first) {
    c->err_last = last;
    return;
  }
  sup_capture_flush_side(c);
  c->err_first = first;
  c->err_last = last;
}

/* Feeds a line to the important-line tracker if it can classify as
 * anything: the length test is inline so that floods of short lines ("y"
 * from yes, progress dots) cost no call per line. */
static inline void feed_line(sup_capture_t *c, int64_t lineno, const char *line, size_t len) {
  if (len >= TFS_CLASSIFY_MIN_LEN)
    tfs_important_feed(c->imp, lineno, line,
                       len > SUP_CAPTURE_FEED_MAX ? SUP_CAPTURE_FEED_MAX : len);
}

#if defined(__SSE2__)
/* Bit i set: byte i of the 64 at p is a newline. */
static inline uint64_t newline_mask64(const char *p) {
  const __m128i nl = _mm_set1_epi8('\n');
  uint64_t m = 0;
  for (int i = 0; i < 4; i++)
    m |= (uint64_t)(unsigned)_mm_movemask_epi8(
             _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)), nl))
         << (16 * i);
  return m;
}
#endif

_Static_assert(TFS_CLASSIFY_MIN_LEN == 3, "the short-line test below checks 3 bytes");

/* Counts the lines in [p, stop), where stop[-1] is a newline, feeding them
 * to the tracker as lines first, first + 1, ... Newlines are found 64
 * bytes at a time with compare masks. A block in which no line of
 * TFS_CLASSIFY_MIN_LEN bytes or more ends (no newline has three other
 * bytes before it: `yes`, progress dots) is only counted (a popcount);
 * otherwise its newlines are visited in order. Returns the count. */
static int64_t scan_lines(sup_capture_t *c, const char *p, const char *stop, int64_t first) {
  int64_t n = 0;
  const char *line = p;
  if (!c->imp) {
    for (; (p = memchr(p, '\n', (size_t)(stop - p))) != NULL; p++)
      n++;
    return n;
  }
#if defined(__SSE2__)
  /* prev: bit 63 - j set when byte -1 - j (before the block) is no
   * newline and belongs to the current line. */
  uint64_t prev = 0;
  for (; stop - p >= 64; p += 64) {
    uint64_t m = newline_mask64(p), nm = ~m;
    uint64_t need =
        m & ((nm << 1) | (prev >> 63)) & ((nm << 2) | (prev >> 62)) & ((nm << 3) | (prev >> 61));
    if (!need) {
      if (m) {
        n += __builtin_popcountll(m);
        line = p + 64 - __builtin_clzll(m);
      }
    } else {
      for (uint64_t b = m; b; b &= b - 1) {
        const char *nl = p + __builtin_ctzll(b);
        feed_line(c, first + n++, line, (size_t)(nl - line));
        line = nl + 1;
      }
    }
    prev = nm;
  }
#endif
  for (; p < stop; p++) {
    if (*p == '\n') {
      feed_line(c, first + n++, line, (size_t)(p - line));
      line = p + 1;
    }
  }
  return n;
}

/* Writes the complete lines at the start of stream st's buffer (up to and
 * including the newline at end - 1), then keeps the rest. */
static void write_lines(sup_capture_t *c, int st, size_t end) {
  sup_cap_stream_t *s = &c->s[st];
  close_foreign(c, st);
  int continuing = c->open_stream == st;
  if (put(c, s->buf, end) == 0) {
    const char *p = s->buf, *stop = s->buf + end;
    if (continuing) /* the end of a long line: counted when it began */
      p = (const char *)rawmemchr(p, '\n') + 1;
    int64_t first = c->lines + 1;
    int64_t n = scan_lines(c, p, stop, first);
    c->lines += n;
    if (n && st == SUP_STDERR)
      note_err_range(c, first, first + n - 1);
  }
  c->open_stream = -1;
  memmove(s->buf, s->buf + end, s->len - end);
  s->len -= end;
  s->clean = s->len;
}

/* Writes the whole buffer of stream st as (a piece of) an open line. */
static void write_piece(sup_capture_t *c, int st) {
  sup_cap_stream_t *s = &c->s[st];
  close_foreign(c, st);
  int starts = c->open_stream != st;
  if (put(c, s->buf, s->len) == 0 && starts)
    note_line(c, st, ++c->lines, s->buf, s->len);
  c->open_stream = st;
  s->len = s->clean = 0;
}

void sup_capture_commit(sup_capture_t *c, int st, size_t n) {
  sup_cap_stream_t *s = &c->s[st];
  s->len += n;
  int holder = sup_capture_holder(c);
  if (holder >= 0 && holder != st)
    return; /* the other stream is mid-line: keep this data for later */
  /* Only the bytes after s->clean can hold a newline. */
  const char *last = s->len > s->clean ? memrchr(s->buf + s->clean, '\n', s->len - s->clean) : NULL;
  if (last)
    write_lines(c, st, (size_t)(last - s->buf) + 1);
  s->clean = s->len;
  if (s->len == SUP_CAPTURE_BUF)
    write_piece(c, st);
}

void sup_capture_pending(sup_capture_t *c, int st) {
  sup_cap_stream_t *s = &c->s[st];
  int holder = sup_capture_holder(c);
  if (holder >= 0 && holder != st)
    return;
  sup_capture_commit(c, st, 0);
  if (s->eof && s->len)
    write_piece(c, st);
}

void sup_capture_eof(sup_capture_t *c, int st) {
  c->s[st].eof = 1;
  sup_capture_pending(c, st);
}

void sup_capture_cut(sup_capture_t *c) {
  if (sup_capture_holder(c) < 0)
    return;
  put(c, "\n", 1);
  c->open_stream = -1;
  c->cuts++;
}

void sup_capture_restart(sup_capture_t *c) {
  if (c->open_stream >= 0) {
    put(c, "\n", 1);
    c->open_stream = -1;
  }
  for (int i = 0; i < 2; i++) {
    c->s[i].len = c->s[i].clean = 0;
    c->s[i].eof = 0;
  }
}
