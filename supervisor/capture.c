/* Capture: a worker's output, read from its pipes, written into one
 * transcript. With the merged stream (the default) there is one pipe,
 * fd 1 and fd 2 of the worker both, and only stream 0 is used: the bytes
 * arrive in the order the program wrote them, and they are spliced from
 * the pipe into the transcript (sup_capture_splice: no copy through this
 * process) for as long as that works. With stderr split, stream 1 is
 * stderr's own pipe.
 *
 * Otherwise (split, or the merged stream once a splice could not have its
 * room or failed) each stream has a line buffer of SUP_CAPTURE_BUF bytes that only ever
 * holds an incomplete line: as soon as a read brings newlines, every
 * complete line in the buffer goes to the transcript in a single write (a
 * batch of whole lines; a line is never split between two writes, so the
 * lines of two streams never mix, and a follower never sees the first half
 * of a line whose write went on to fail). A line that fills the buffer
 * without a newline is written in pieces; while it is open the other
 * stream is held back (the caller stops reading its pipe), so the
 * transcript stays the exact bytes of each stream and memory stays bounded.
 *
 * What the written bytes hold (the line count, the important lines, the
 * line index, stderr's line ranges) is found by the counter (counter.c)
 * on a thread of its own, from the transcript's page cache: a producer
 * faster than the classifier never waits for it.
 *
 * A line without a newline that stays alone in its buffer (a prompt:
 * `printf 'Continue? '`) is written after a short quiet (pipes.c calls
 * sup_capture_flush_partial): it is then an open line, as a long line's
 * first piece is, and what comes later continues it.
 *
 * Line numbers count lines as they start, so a final line without a newline
 * counts too, matching tfs_transcript_read(). With stderr split, lines from
 * stderr are listed in the sidecar tasks/<id>/stderr-lines as ranges
 * "first-last\n" of line numbers, appended as they happen (adjacent ranges
 * may follow each other; a reader merges them).
 */
#include "supervisor/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int sup_capture_init(sup_capture_t *c, int fd, int rfd, int side_fd, tfs_important_t *imp,
                     int64_t lines, int64_t bytes) {
  memset(c, 0, sizeof *c);
  c->fd = fd;
  c->lines = lines;
  c->bytes = bytes;
  /* What is there already is never truncated (lose() cuts back to the
   * last line end only), whatever the record counted. */
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > bytes)
    c->bytes = st.st_size;
  c->alloc_end = c->bytes;
  c->open_stream = -1;
  c->splice = 1;
  c->sfd = -1;
  int err = sup_counter_init(&c->cnt, rfd, side_fd, imp, lines, c->bytes);
  for (int i = 0; i < 2 && !err; i++)
    if (!(c->s[i].buf = malloc(SUP_CAPTURE_BUF)))
      err = -ENOMEM;
  if (err) {
    sup_capture_free(c);
    close(rfd);
  }
  return err;
}

void sup_capture_free(sup_capture_t *c) {
  if (c->sfd >= 0)
    close(c->sfd);
  c->sfd = -1;
  if (c->cnt.ready) {
    sup_counter_free(&c->cnt);
    close(c->cnt.rfd);
  }
  for (int i = 0; i < 2; i++) {
    free(c->s[i].buf);
    c->s[i].buf = NULL;
  }
}

void sup_capture_flush_side(sup_capture_t *c) {
  if (c->cnt.ready)
    sup_counter_flush_side(&c->cnt);
}

void sup_capture_sync(sup_capture_t *c) {
  sup_counter_flush(&c->cnt);
  sup_counter_drain(&c->cnt);
  sup_counter_lock(&c->cnt);
  c->lines = c->cnt.lines;
  sup_counter_unlock(&c->cnt);
}

/* Room for the next write, taken before it: fallocate() with KEEP_SIZE
 * gives the blocks without changing the file's size, so a write into them
 * cannot run out of space half way and no reader ever sees the first bytes
 * of a line whose write then failed. Taken SUP_CAPTURE_AHEAD ahead (as
 * much as the write itself when that is more: one call per that much
 * output), or exactly what this write needs when
 * the disk is too full for more. A file system without fallocate (-ENOTSUP)
 * is not asked again; the truncation in lose() then still keeps the lines
 * whole, though a reader may glimpse the partial bytes before it. */
static int reserve(sup_capture_t *c, size_t len) {
  int64_t need = c->bytes + (int64_t)len;
  /* A large write (a splice of a grown pipe) reserves as much again. */
  off_t ahead = len > SUP_CAPTURE_AHEAD ? (off_t)len : SUP_CAPTURE_AHEAD;
  if (c->no_fallocate || need <= c->alloc_end)
    return 0;
  if (fallocate(c->fd, FALLOC_FL_KEEP_SIZE, c->bytes, (off_t)len + ahead) == 0) {
    c->alloc_end = need + ahead;
    return 0;
  }
  if (errno == ENOSPC || errno == EDQUOT) {
    if (fallocate(c->fd, FALLOC_FL_KEEP_SIZE, c->bytes, (off_t)len) == 0) {
      c->alloc_end = need;
      return 0;
    }
    if (errno == ENOSPC || errno == EDQUOT)
      return -errno;
  }
  if (errno == EOPNOTSUPP || errno == ENOSYS)
    c->no_fallocate = 1;
  return 0; /* anything else: the write itself will tell */
}

/* A write of data (len bytes) failed with err: nothing of it stays. What
 * landed, and the start of a line left open at the transcript's end (the
 * earlier pieces of a long line), are truncated away to the last line
 * boundary, so the transcript ends with a whole line and the next write
 * starts one. Everything dropped is counted (bytes and lines: a line
 * counts once however much of it went), with the time. */
static void lose(sup_capture_t *c, const char *data, size_t len, int err) {
  /* The counter has worked on every landed byte: it knows the last line
   * end, and none of what is cut away is read back later. */
  sup_counter_drain(&c->cnt);
  int64_t line_end = sup_counter_line_end(&c->cnt);
  int64_t open_len = c->bytes - line_end; /* a counted line still open */
  int starts = open_len == 0 ? 1 : 0;     /* data begins a new line */
  for (const char *p = data, *stop = data + len; (p = memchr(p, '\n', (size_t)(stop - p)));)
    if (++p < stop)
      starts++;
  if (open_len > 0)
    starts++;
  if (ftruncate(c->fd, line_end) == 0) {
    c->bytes = line_end;
  } else { /* cannot happen on a regular file; keep the count true */
    struct stat st;
    if (fstat(c->fd, &st) == 0)
      c->bytes = st.st_size;
  }
  sup_counter_truncated(&c->cnt, c->bytes);
  c->alloc_end = c->bytes;
  c->lost_bytes += (int64_t)len + open_len;
  c->lost_lines += len ? starts : open_len > 0;
  int64_t now = tfs_now_ms();
  if (!c->lost_first_ms)
    c->lost_first_ms = now;
  c->lost_last_ms = now;
  c->last_err = err;
  c->open_stream = -1;
}

/* The line index hook (lineidx.h): the counter feeds it every landed
 * byte, in order. Handed over before the counter's thread starts (at the
 * first landed bytes), so the thread only ever reads it. */
static void hand_lidx(sup_capture_t *c) {
  if (!c->cnt.started && !c->cnt.inline_work)
    c->cnt.lidx = c->lidx;
}

/* The one place bytes go into the transcript: data is whole lines, or a
 * piece of one long line (see write_lines and write_piece), of stream st.
 * A short write is completed (tfs_transcript_append goes on from where it
 * stopped); a write that cannot land whole (a full disk) leaves nothing
 * (lose). What landed goes to the counter. Returns 0 or the negative
 * errno. */
static int put(sup_capture_t *c, int st, const char *data, size_t len) {
  int err = reserve(c, len);
  if (!err)
    err = tfs_transcript_append(c->fd, data, len, 0);
  if (err) {
    lose(c, data, len, err);
    return err;
  }
  c->bytes += (int64_t)len;
  hand_lidx(c);
  sup_counter_landed(&c->cnt, c->bytes, st);
  return 0;
}

/* ---- splicing the merged stream ----------------------------------------- */

/* Bytes a splice moves at most: a grown pipe's worth. */
#define SPLICE_MAX (1 << 20)

/* The transcript once more, for writing without O_APPEND (splice refuses
 * an appending file); the same file, or none. */
static int open_splice_fd(sup_capture_t *c) {
  char path[64];
  struct stat a, b;
  snprintf(path, sizeof path, "/proc/self/fd/%d", c->fd);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd >= 0 && (fstat(fd, &a) || fstat(c->fd, &b) || a.st_ino != b.st_ino ||
                  a.st_dev != b.st_dev || !S_ISREG(a.st_mode))) {
    close(fd);
    fd = -1;
  }
  c->sfd = fd;
  return fd;
}

/* From here on (for this worker) the line buffer takes the bytes: a line
 * the splices left open at the transcript's end is the stream's open line,
 * as a long line's first pieces are, so the buffer's rules (a failed write
 * cuts back to the last line end) go on from the right place. */
static ssize_t go_buffered(sup_capture_t *c) {
  c->splice = 0;
  sup_counter_drain(&c->cnt);
  if (sup_counter_line_end(&c->cnt) < c->bytes)
    c->open_stream = SUP_STDOUT;
  return -ENOTSUP;
}

ssize_t sup_capture_splice(sup_capture_t *c, int fd) {
  if (!c->splice || c->s[SUP_STDOUT].len || c->s[SUP_STDOUT].skip)
    return -ENOTSUP;
  if (c->sfd < 0 && open_splice_fd(c) < 0)
    return go_buffered(c);
  int avail = 0;
  size_t len = 64 * 1024;
  if (ioctl(fd, FIONREAD, &avail) == 0 && avail > 0)
    len = (size_t)avail < SPLICE_MAX ? (size_t)avail : SPLICE_MAX;
  /* Room first, as for a write: a splice then cannot stop half way for
   * want of space; and SUP_CAPTURE_AHEAD more, so that on a full disk the
   * line a splice leaves open can still be ended (write_lines) and no
   * reader who saw its start sees it cut away. No room: the line buffer's
   * rules decide what is kept. */
  if (reserve(c, len + SUP_CAPTURE_AHEAD))
    return go_buffered(c);
  loff_t off = c->bytes;
  ssize_t n;
  do
    n = splice(fd, NULL, c->sfd, &off, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  while (n < 0 && errno == EINTR);
  if (n > 0) {
    c->bytes += n;
    c->spliced = 1;
    hand_lidx(c);
    sup_counter_landed(&c->cnt, c->bytes, SUP_STDOUT);
    return n;
  }
  if (n == 0 || errno == EAGAIN)
    return n == 0 ? 0 : -EAGAIN;
  /* No splice here (EINVAL), or the write failed (ENOSPC, EIO): what is
   * still in the pipe goes through the buffer, which keeps lines whole. */
  return go_buffered(c);
}

void sup_capture_release(sup_capture_t *c) {
  /* Blocks taken ahead of the end go back (a truncation to the size). */
  if (c->alloc_end > c->bytes && ftruncate(c->fd, c->bytes) == 0)
    c->alloc_end = c->bytes;
}

/* Before stream st writes: if the other stream left a line open (it ended
 * without a newline), close that line so the two never share one. */
static void close_foreign(sup_capture_t *c, int st) {
  if (c->open_stream >= 0 && c->open_stream != st) {
    put(c, c->open_stream, "\n", 1);
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

/* Writes the complete lines at the start of stream st's buffer (up to and
 * including the newline at end - 1), then keeps the rest. */
static void write_lines(sup_capture_t *c, int st, size_t end) {
  sup_cap_stream_t *s = &c->s[st];
  close_foreign(c, st);
  size_t first = 0;
  if (c->open_stream == st) {
    /* The end of an open line lands on its own: the room taken ahead with
     * its earlier pieces (or splices) holds it on a full disk, and lines
     * after it that cannot land do not take it with them. A reader who saw
     * its start then sees it whole. */
    first = (size_t)((const char *)memchr(s->buf, '\n', end) - s->buf) + 1;
    put(c, st, s->buf, first);
    c->open_stream = -1;
  }
  if (first < end)
    put(c, st, s->buf + first, end - first);
  c->open_stream = -1;
  memmove(s->buf, s->buf + end, s->len - end);
  s->len -= end;
  s->clean = s->len;
}

/* Writes the whole buffer of stream st as (a piece of) an open line. */
static void write_piece(sup_capture_t *c, int st) {
  sup_cap_stream_t *s = &c->s[st];
  close_foreign(c, st);
  if (put(c, st, s->buf, s->len) == 0)
    c->open_stream = st;
  else if (!s->eof)
    s->skip = 1; /* the rest of this line is lost too: resume at the next */
  s->len = s->clean = 0;
}

/* Drops what a skipping stream holds up to and including its next newline
 * (the rest of a line whose start was lost). */
static void skip_rest(sup_capture_t *c, sup_cap_stream_t *s) {
  const char *nl = memchr(s->buf, '\n', s->len);
  size_t drop = nl ? (size_t)(nl - s->buf) + 1 : s->len;
  c->lost_bytes += (int64_t)drop;
  memmove(s->buf, s->buf + drop, s->len - drop);
  s->len -= drop;
  s->clean = 0;
  s->skip = !nl;
}

void sup_capture_commit(sup_capture_t *c, int st, size_t n) {
  sup_cap_stream_t *s = &c->s[st];
  s->len += n;
  if (s->skip)
    skip_rest(c, s);
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

int sup_capture_flush_partial(sup_capture_t *c, int st) {
  sup_cap_stream_t *s = &c->s[st];
  int holder = sup_capture_holder(c);
  /* With stderr split, only once the other stream has ended: an open line
   * holds the other stream back, and a cut would add a newline the program
   * did not write. */
  if (!s->len || s->skip || !c->s[!st].eof || (holder >= 0 && holder != st))
    return 0;
  write_piece(c, st);
  sup_counter_flush(&c->cnt); /* the prompt is classified as it stands */
  return 1;
}

void sup_capture_eof(sup_capture_t *c, int st) {
  c->s[st].eof = 1;
  sup_capture_pending(c, st);
}

void sup_capture_cut(sup_capture_t *c) {
  if (sup_capture_holder(c) < 0)
    return;
  put(c, c->open_stream, "\n", 1);
  c->open_stream = -1;
  c->cuts++;
}

void sup_capture_restart(sup_capture_t *c) {
  /* A line the splices left open ends here, as a buffered one does. */
  if (c->spliced && c->open_stream < 0) {
    sup_counter_drain(&c->cnt);
    if (sup_counter_line_end(&c->cnt) < c->bytes)
      c->open_stream = SUP_STDOUT;
  }
  c->spliced = 0;
  c->splice = 1;
  if (c->open_stream >= 0) {
    put(c, c->open_stream, "\n", 1);
    c->open_stream = -1;
  }
  for (int i = 0; i < 2; i++) {
    c->s[i].len = c->s[i].clean = 0;
    c->s[i].eof = c->s[i].skip = 0;
  }
}
