/* Transcripts: append-only output, read as lines. One write() per appended
 * line, so a concurrent reader never sees half a line that it would later
 * see completed differently. Readers use bounded memory whatever the size
 * of the file or of one line. */
#include "core/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define READ_BUF (256 << 10) /* must stay below TFS__PIECE_MAX */

int tfs_transcript_open_append(tfs_store_t *store, const char *id) {
  return tfs_task_file_open(store, id, TFS_FILE_TRANSCRIPT, O_WRONLY | O_APPEND | O_CREAT, 0600);
}

int tfs_transcript_append(int fd, const char *data, size_t len, int add_newline) {
  struct iovec iov[2] = {{(void *)data, len}, {(void *)"\n", add_newline ? 1 : 0}};
  int cnt = 2, i = 0;
  while (i < cnt) {
    ssize_t n = writev(fd, iov + i, cnt - i);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    /* A short write (disk nearly full, a signal) is completed with more
     * writes; the O_APPEND position keeps the pieces in order. */
    while (i < cnt && (size_t)n >= iov[i].iov_len) {
      n -= (ssize_t)iov[i].iov_len;
      i++;
    }
    if (i < cnt) {
      iov[i].iov_base = (char *)iov[i].iov_base + n;
      iov[i].iov_len -= (size_t)n;
      if (iov[i].iov_len == 0)
        i++;
    }
  }
  return 0;
}

/* ---- the line scanner --------------------------------------------------- */

/* Splits [off, end) of a file into lines. seg_start/lineno always describe
 * the first byte not yet delivered, so a caller that stops (or a follower
 * that comes back later) resumes exactly there. */
typedef struct {
  int fd;
  off_t off, end;
  off_t seg_start;    /* first byte of the current line not yet delivered */
  int64_t lineno;     /* number of the current line */
  int midline;        /* pieces of the current line were delivered */
  int64_t skip_below; /* lines numbered lower are counted, not delivered */
  int64_t max_lines;  /* < 0: no limit */
  off_t *line_end;    /* if set: the byte after each line (or piece) handed out */
  int64_t delivered;
  int stopped;
  char *buf; /* READ_BUF + 1 */
  char *acc; /* TFS__PIECE_MAX + 1 */
  size_t acclen;
  tfs_line_cb cb;
  void *arg;
} scan_t;

static int scan_init(scan_t *s, int fd, off_t start, off_t end, int64_t lineno, tfs_line_cb cb,
                     void *arg) {
  memset(s, 0, sizeof *s);
  s->fd = fd;
  s->off = s->seg_start = start;
  s->end = end;
  s->lineno = lineno;
  s->max_lines = -1;
  s->cb = cb;
  s->arg = arg;
  s->buf = malloc(READ_BUF + 1);
  s->acc = malloc(TFS__PIECE_MAX + 1);
  if (!s->buf || !s->acc) {
    free(s->buf);
    free(s->acc);
    return -ENOMEM;
  }
  return 0;
}

static void scan_free(scan_t *s) {
  free(s->buf);
  free(s->acc);
}

static void emit(scan_t *s, char *p, size_t len, int partial) {
  p[len] = '\0';
  /* seg_start is still where the bytes handed out start (from the read
   * buffer or the accumulator alike); a whole line also ends in '\n'. */
  if (s->line_end)
    *s->line_end = s->seg_start + (off_t)len + (partial == 0);
  if (s->cb && s->cb(s->lineno, p, len, partial, s->arg))
    s->stopped = 1;
  if (partial != 2) {
    s->delivered++;
    if (s->max_lines >= 0 && s->delivered >= s->max_lines)
      s->stopped = 1;
  }
}

/* Adds bytes of the current line to the accumulator, handing out full
 * pieces first, so memory stays at one piece however long the line. */
static void add_bytes(scan_t *s, const char *p, size_t n) {
  while (n > 0 && !s->stopped) {
    if (s->acclen == TFS__PIECE_MAX) {
      emit(s, s->acc, s->acclen, 2);
      s->seg_start += TFS__PIECE_MAX;
      s->acclen = 0;
      s->midline = 1;
      if (s->stopped)
        return;
    }
    size_t take = TFS__PIECE_MAX - s->acclen;
    if (take > n)
      take = n;
    memcpy(s->acc + s->acclen, p, take);
    s->acclen += take;
    p += take;
    n -= take;
  }
}

static int scan_run(scan_t *s) {
  tfs_cancel_t *cancel = tfs_scan_cancel_get();
  while (!s->stopped && s->off < s->end) {
    if (cancel && *cancel)
      return -ECANCELED;
    size_t want = s->end - s->off > READ_BUF ? READ_BUF : (size_t)(s->end - s->off);
    ssize_t r = pread(s->fd, s->buf, want, s->off);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (r == 0) {
      s->end = s->off; /* the file shrank under us */
      break;
    }
    off_t base = s->off;
    s->off += r;
    char *p = s->buf, *e = s->buf + r;
    while (p < e && !s->stopped) {
      char *nl = memchr(p, '\n', (size_t)(e - p));
      int skip = s->lineno < s->skip_below;
      if (!nl) {
        if (!skip)
          add_bytes(s, p, (size_t)(e - p));
        break;
      }
      size_t n = (size_t)(nl - p);
      if (!skip) {
        if (s->acclen == 0) {
          emit(s, p, n, 0); /* straight from the read buffer */
        } else {
          add_bytes(s, p, n);
          if (s->stopped)
            break;
          emit(s, s->acc, s->acclen, 0);
        }
      }
      s->acclen = 0;
      s->midline = 0;
      s->lineno++;
      s->seg_start = base + (nl - s->buf) + 1;
      p = nl + 1;
    }
  }
  return 0;
}

/* Delivers what is left of the last line (no newline) as partial = 1. */
static void scan_flush(scan_t *s) {
  if (s->stopped || s->lineno < s->skip_below || (s->acclen == 0 && !s->midline))
    return;
  emit(s, s->acc, s->acclen, 1);
  s->acclen = 0;
  s->midline = 0;
  s->lineno++;
  s->seg_start = s->end;
}

/* Hands out what the open last line holds so far as a piece (partial = 2,
 * the line's number kept): its rest follows as the same line. */
static void scan_piece(scan_t *s) {
  if (s->stopped || s->lineno < s->skip_below || s->acclen == 0)
    return;
  emit(s, s->acc, s->acclen, 2);
  s->seg_start += (off_t)s->acclen;
  s->acclen = 0;
  s->midline = 1;
}

int64_t tfs_transcript_read(tfs_store_t *store, const char *id, int64_t from_line,
                            int64_t max_lines, tfs_line_cb cb, void *arg) {
  struct stat st;
  scan_t s;
  int fd TFS_AUTOCLOSE =
      tfs_task_file_open(store, id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
  if (fd == -ENOENT)
    return 0; /* the task exists but has written nothing yet */
  if (fd < 0)
    return fd;
  if (fstat(fd, &st))
    return -errno;
  if (!S_ISREG(st.st_mode))
    return TFS_ECORRUPT;
  if (max_lines == 0)
    return 0;
  /* From the line index's checkpoint at or before from_line: at most an
   * interval is read before it, not the whole file. */
  off_t at;
  int64_t at_line;
  from_line = from_line < 1 ? 1 : from_line;
  int err = tfs_lineidx_seek(store, id, fd, &st, from_line, &at, &at_line, tfs_scan_cancel_get());
  if (!err)
    err = scan_init(&s, fd, at, st.st_size, at_line, cb, arg);
  if (err)
    return err;
  s.skip_below = from_line;
  s.max_lines = max_lines;
  err = scan_run(&s);
  if (!err)
    scan_flush(&s);
  int64_t n = s.delivered;
  scan_free(&s);
  return err ? err : n;
}

/* ---- the follower --------------------------------------------------------- */

struct tfs_follower {
  tfs_store_t *store;
  char id[TFS_ID_MAX + 1];
  off_t offset;        /* first byte not yet delivered */
  int64_t next_lineno; /* number of the line that starts (or continues) there */
  int midline;         /* pieces of that line were delivered already */
  int64_t skip_below;  /* tfs_follower_open_at inside a line: that line is not handed out */
  off_t line_end;      /* tfs_follower_line_end() */
  int have_file;
  dev_t dev;
  ino_t ino;
  off_t old_end; /* last_n = 0 inside a line: the size then (see open) */
};

/* Puts a new follower at start of the file fd (its stat st): the number
 * of the line there is counted from the line index's checkpoint before. */
static int follower_place(tfs_follower_t *f, int fd, const struct stat *st, off_t start) {
  int64_t before = 0;
  int err = tfs_lineidx_count(f->store, f->id, fd, st, start, &before, tfs_scan_cancel_get());
  f->offset = f->line_end = start;
  f->next_lineno = before + 1;
  f->have_file = 1;
  f->dev = st->st_dev;
  f->ino = st->st_ino;
  return err;
}

/* A follower at line 1 of no file yet. */
static tfs_follower_t *follower_new(tfs_store_t *store, const char *id) {
  tfs_follower_t *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  f->store = store;
  snprintf(f->id, sizeof f->id, "%s", id);
  f->next_lineno = 1;
  return f;
}

/* A follower never starts inside a line: with last_n = 0 and a line still
 * being written, it starts where that line starts, so the line is handed
 * out whole once it is completed (or has grown and is flushed). Flushed as
 * it was at the open, it is none of the last 0 lines and is skipped:
 * old_end remembers that size. */
int tfs_follower_open(tfs_store_t *store, const char *id, int64_t last_n, tfs_follower_t **out) {
  return tfs_follower_open_upto(store, id, last_n, -1, out);
}

/* The transcript is taken to end at upto (when it is longer): a follower
 * opened later, on a thread pool, starts where one opened when upto was
 * the size would have started. */
int tfs_follower_open_upto(tfs_store_t *store, const char *id, int64_t last_n, off_t upto,
                           tfs_follower_t **out) {
  struct stat st;
  *out = NULL;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  tfs_follower_t *f = follower_new(store, id);
  if (!f)
    return -ENOMEM;
  int fd TFS_AUTOCLOSE = -1;
  int err = last_n >= 0 ? tfs__transcript_open_read(store, id, &fd, &st) : 0;
  if (!err && fd >= 0 && upto >= 0 && upto < st.st_size)
    st.st_size = upto;
  if (!err && fd >= 0) {
    off_t start;
    err = tfs__tail_start(fd, st.st_size, last_n > 0 ? last_n : 1, &start);
    if (!err && last_n == 0 && start < st.st_size) {
      char last;
      if (pread(fd, &last, 1, st.st_size - 1) == 1 && last == '\n')
        start = st.st_size; /* no line in progress: from the end */
      else
        f->old_end = st.st_size;
    }
    if (!err)
      err = follower_place(f, fd, &st, start);
  }
  if (err) {
    free(f);
    return err;
  }
  *out = f;
  return 0;
}

int64_t tfs_follower_next(tfs_follower_t *f, int flush_partial, tfs_line_cb cb, void *arg) {
  struct stat st;
  scan_t s;
  int fd TFS_AUTOCLOSE =
      tfs_task_file_open(f->store, f->id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
  if (fd == -ENOENT || fd == TFS_ENOTASK) {
    if (f->have_file) {
      /* Vanished: when it comes back it is a new file, read from its start. */
      f->have_file = 0;
      f->offset = 0;
      f->next_lineno = 1;
      f->midline = 0;
      f->old_end = 0;
      f->skip_below = 0;
    }
    return 0;
  }
  if (fd < 0)
    return fd;
  if (fstat(fd, &st))
    return -errno;
  if (!S_ISREG(st.st_mode))
    return TFS_ECORRUPT;
  int replaced = f->have_file && (st.st_dev != f->dev || st.st_ino != f->ino);
  if (replaced || st.st_size < f->offset) {
    /* Replaced or truncated: the old positions mean nothing any more. */
    f->offset = 0;
    f->next_lineno = 1;
    f->midline = 0;
    f->old_end = 0;
    f->skip_below = 0;
  }
  f->have_file = 1;
  f->dev = st.st_dev;
  f->ino = st.st_ino;
  if (st.st_size == f->offset && !(flush_partial == 1 && f->midline))
    return 0;
  int err = scan_init(&s, fd, f->offset, st.st_size, f->next_lineno, cb, arg);
  if (err)
    return err;
  s.midline = f->midline;
  s.skip_below = f->skip_below;
  s.line_end = &f->line_end;
  err = scan_run(&s);
  if (!err && flush_partial == 1 && s.end > f->old_end)
    scan_flush(&s);
  else if (!err && flush_partial == 2 && s.end > f->old_end)
    scan_piece(&s);
  f->offset = f->line_end = s.seg_start;
  f->next_lineno = s.lineno;
  f->midline = s.midline;
  int64_t n = s.delivered;
  scan_free(&s);
  return err ? err : n;
}

/* The line start at or after offset: offset itself when it is 0 or
 * follows a '\n'; else after the next '\n' that is written already; else
 * (offset inside the line still being written, or past the end: clamped
 * to it) offset, with that line's number as skip_below so its rest is
 * skipped, not handed out as a line. */
int tfs_follower_open_at(tfs_store_t *store, const char *id, off_t offset, tfs_follower_t **out) {
  struct stat st;
  *out = NULL;
  if (offset < 0)
    return -EINVAL;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  int fd TFS_AUTOCLOSE = -1;
  int err = tfs__transcript_open_read(store, id, &fd, &st);
  if (err)
    return err;
  tfs_follower_t *f = follower_new(store, id);
  if (!f)
    return -ENOMEM;
  if (fd >= 0) {
    off_t at = offset > st.st_size ? st.st_size : offset;
    char c = '\n';
    if (at > 0 && pread(fd, &c, 1, at - 1) != 1)
      err = -EIO;
    /* Inside a line: on to the next '\n', in blocks. */
    char buf[4096];
    while (!err && c != '\n' && at < st.st_size) {
      size_t want = st.st_size - at < (off_t)sizeof buf ? (size_t)(st.st_size - at) : sizeof buf;
      ssize_t r = pread(fd, buf, want, at);
      if (r <= 0) {
        err = r < 0 ? -errno : -EIO;
        break;
      }
      char *nl = memchr(buf, '\n', (size_t)r);
      at += nl ? (off_t)(nl - buf) + 1 : r;
      if (nl)
        c = '\n';
    }
    if (!err)
      err = follower_place(f, fd, &st, at);
    if (c != '\n')
      f->skip_below = f->next_lineno + 1; /* the rest of a line being written */
  }
  if (err) {
    free(f);
    return err;
  }
  *out = f;
  return 0;
}

/* At the line index's checkpoint at or before line lineno, the lines
 * before lineno counted, not handed out. */
int tfs_follower_open_line(tfs_store_t *store, const char *id, int64_t lineno,
                           tfs_follower_t **out) {
  struct stat st;
  *out = NULL;
  int fd TFS_AUTOCLOSE = -1;
  int err = tfs__transcript_open_read(store, id, &fd, &st);
  tfs_follower_t *f = err ? NULL : follower_new(store, id);
  if (!err && !f)
    err = -ENOMEM;
  if (!err && fd >= 0) {
    off_t at;
    int64_t at_line;
    err = tfs_lineidx_seek(store, id, fd, &st, lineno, &at, &at_line, tfs_scan_cancel_get());
    f->offset = f->line_end = at;
    f->next_lineno = at_line;
    f->skip_below = lineno;
    f->have_file = 1;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
  }
  if (err) {
    free(f);
    return err;
  }
  *out = f;
  return 0;
}

off_t tfs_follower_line_end(const tfs_follower_t *f) {
  return f->line_end;
}

void tfs_follower_rebind(tfs_follower_t *f, tfs_store_t *store) {
  f->store = store;
}

void tfs_follower_close(tfs_follower_t *f) {
  free(f);
}
