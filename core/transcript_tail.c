/* Transcripts read from their end: where the last n lines start (read
 * backwards, so a huge file is not read for its tail) and their numbers
 * (the line index), the last bytes, and a copy for `taskfs logs`. */
#include "core/internal.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define READ_BUF (256 << 10)

/* Where the last n lines of [0, size) start, a final line without its
 * newline counting as one (tail(1)): found by reading backwards from the
 * end in blocks, so a huge file is not read for its tail. n = 0: the end. */
int tfs__tail_start(int fd, off_t size, int64_t n, off_t *start) {
  char last;
  *start = size;
  if (n <= 0 || size == 0)
    return 0;
  if (pread(fd, &last, 1, size - 1) != 1)
    return -EIO;
  /* A trailing newline ends the last line; it does not start a new one. */
  off_t pos = last == '\n' ? size - 1 : size;
  char *buf = malloc(READ_BUF);
  if (!buf)
    return -ENOMEM;
  int64_t seen = 0;
  *start = 0;
  tfs_cancel_t *cancel = tfs_scan_cancel_get();
  while (pos > 0) {
    if (cancel && *cancel) {
      free(buf);
      return -ECANCELED;
    }
    size_t len = pos > READ_BUF ? READ_BUF : (size_t)pos;
    ssize_t r = pread(fd, buf, len, pos - (off_t)len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r != (ssize_t)len) {
      free(buf);
      return r < 0 ? -errno : -EIO; /* shrank under us */
    }
    pos -= (off_t)len;
    size_t left = len;
    char *nl;
    while ((nl = memrchr(buf, '\n', left))) {
      /* The n-th newline from the end ends the line before our first. */
      left = (size_t)(nl - buf);
      if (++seen == n) {
        *start = pos + (off_t)left + 1;
        free(buf);
        return 0;
      }
    }
  }
  free(buf);
  return 0;
}

/* Opens the transcript for reading with its size: 0 and fd -1 when the
 * task has written nothing yet. */
int tfs__transcript_open_read(tfs_store_t *store, const char *id, int *fd, struct stat *st) {
  *fd = tfs_task_file_open(store, id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
  if (*fd == -ENOENT) {
    *fd = -1;
    memset(st, 0, sizeof *st);
    return 0;
  }
  if (*fd < 0)
    return *fd;
  return fstat(*fd, st) ? -errno : 0;
}

int tfs_transcript_tail(tfs_store_t *store, const char *id, int64_t n, off_t *offset,
                        int64_t *first_lineno, off_t *size) {
  struct stat st;
  int fd TFS_AUTOCLOSE = -1;
  int64_t before = 0;
  off_t start = 0;
  *offset = 0;
  *first_lineno = 1;
  if (size)
    *size = 0;
  int err = tfs__transcript_open_read(store, id, &fd, &st);
  if (err || fd < 0)
    return err;
  if (n >= 0 && (err = tfs__tail_start(fd, st.st_size, n, &start)))
    return err;
  if ((err = tfs_lineidx_count(store, id, fd, &st, start, &before, tfs_scan_cancel_get())))
    return err;
  *offset = start;
  *first_lineno = before + 1;
  if (size)
    *size = st.st_size;
  return 0;
}

/* Reads the last max bytes and one more: the byte before the window says
 * whether the window starts a line. The first line that starts inside the
 * window is where the text starts; a window holding no line start (one
 * line longer than max) is kept whole. */
int tfs_transcript_tail_bytes(tfs_store_t *store, const char *id, size_t max, char **text,
                              size_t *len, off_t *size) {
  struct stat st;
  int fd TFS_AUTOCLOSE = -1;
  *text = NULL;
  *len = 0;
  if (size)
    *size = 0;
  int err = tfs__transcript_open_read(store, id, &fd, &st);
  if (err)
    return err;
  off_t from = fd >= 0 && st.st_size > (off_t)max ? st.st_size - (off_t)max - 1 : 0;
  size_t want = fd >= 0 ? (size_t)(st.st_size - from) : 0, got = 0;
  char *buf = malloc(want + 1);
  if (!buf)
    return -ENOMEM;
  while (got < want) {
    ssize_t r = pread(fd, buf + got, want - got, from + (off_t)got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      free(buf);
      return -errno;
    }
    if (r == 0)
      break; /* shrank under us: what there is */
    got += (size_t)r;
  }
  size_t start = 0;
  if (fd >= 0 && st.st_size > (off_t)max && got > 0) {
    char *nl = memchr(buf, '\n', got);
    start = nl && nl < buf + got - 1 ? (size_t)(nl - buf) + 1 : 1;
  }
  memmove(buf, buf + start, got - start);
  buf[got - start] = '\0';
  *text = buf;
  *len = got - start;
  if (size)
    *size = st.st_size;
  return 0;
}

/* Writes all of buf to fd (EINTR retried, EAGAIN waited out). */
static int write_out(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, buf, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno == EAGAIN) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      poll(&p, 1, 1000);
      continue;
    }
    if (w < 0)
      return -errno;
    buf += w;
    len -= (size_t)w;
  }
  return 0;
}

int tfs_transcript_copy(tfs_store_t *store, const char *id, int64_t last_n, int out_fd) {
  struct stat st;
  int fd TFS_AUTOCLOSE = -1;
  off_t at = 0;
  int err = tfs__transcript_open_read(store, id, &fd, &st);
  if (err || fd < 0)
    return err;
  if (last_n >= 0 && (err = tfs__tail_start(fd, st.st_size, last_n, &at)))
    return err;
  char *buf TFS_AUTOFREE = malloc(READ_BUF);
  if (!buf)
    return -ENOMEM;
  /* Up to the size at the open: a task writing fast cannot keep us
   * chasing its output. */
  while (at < st.st_size && !err) {
    size_t want = st.st_size - at < READ_BUF ? (size_t)(st.st_size - at) : READ_BUF;
    ssize_t r = pread(fd, buf, want, at);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r < 0 ? -errno : 0;
    at += r;
    err = write_out(out_fd, buf, (size_t)r);
  }
  return err;
}
