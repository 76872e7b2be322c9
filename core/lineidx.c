/* The line index of a transcript (taskfs/lineidx.h tells who writes it
 * when). The file, tasks/<id>/lines.idx:
 *
 *   header  "TFSLIDX1", u64 transcript inode, u64 interval, u64 check
 *   entry   u64 off, u64 lines, u64 check          (repeated)
 *
 * native byte order (the index never leaves the machine). An entry is
 * good when its check word matches, its offset grows strictly and lies
 * within the transcript, and its line count grows by no more than the bytes
 * between it and the one before; reading stops at the first entry that is
 * not (a torn tail after a crash, a bad write). A checkpoint used for a
 * query is also checked against the transcript itself (the byte before it
 * is a '\n'), so an index the disk kept while it lost transcript bytes
 * (power loss) is caught where it matters. */
#include "core/internal.h"

#include <fcntl.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <string.h>
#include <sys/file.h>

#define MAGIC "TFSLIDX1"
#define BLOCK (256 << 10)     /* bytes a scan reads at a time */
#define INDEX_MAX (64u << 20) /* bytes of index read: 2.8 million entries */
#define REBUILD_AFTER 4       /* intervals of lag before a reader rebuilds */

typedef struct {
  char magic[8];
  uint64_t ino, interval, check;
} header_t;

typedef struct {
  uint64_t off, lines, check;
} entry_t;

static uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x5446534c49445831ull) * 0xC2B2AE3D27D4EB4Full;
  return h ^ (h >> 29);
}

static __thread tfs_cancel_t *scan_cancel;

tfs_cancel_t *tfs_scan_cancel_set(tfs_cancel_t *flag) {
  tfs_cancel_t *was = scan_cancel;
  scan_cancel = flag;
  return was;
}

tfs_cancel_t *tfs_scan_cancel_get(void) {
  return scan_cancel;
}

/* Newlines are counted 16 bytes at a time where SSE2 is there (every
 * x86-64): each compare gives 0xFF per '\n', subtracted into byte
 * counters that psadbw sums every 255 rounds, before one can wrap. No
 * popcount: without -mpopcnt it is a libgcc call per word, which cost more
 * than the rest of the capture. */
int64_t tfs_lineidx_count_newlines(const char *p, size_t n) {
  int64_t c = 0;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
  while (n - i >= 16) {
    __m128i acc = zero;
    size_t rounds = (n - i) / 16 > 255 ? 255 : (n - i) / 16;
    for (size_t r = 0; r < rounds; r++, i += 16)
      acc = _mm_sub_epi8(
          acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + i)), nl));
    __m128i sum = _mm_sad_epu8(acc, zero);
    c += _mm_cvtsi128_si64(sum) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum));
  }
#endif
  for (; i < n; i++)
    c += p[i] == '\n';
  return c;
}

/* pread of exactly len bytes (0), or what went wrong (a short file: -EIO). */
static int read_at(int fd, char *buf, size_t len, off_t at) {
  while (len > 0) {
    ssize_t r = pread(fd, buf, len, at);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r < 0 ? -errno : -EIO;
    buf += r;
    len -= (size_t)r;
    at += r;
  }
  return 0;
}

/* ---- reading the file ---------------------------------------------------- */

typedef struct {
  tfs_lineidx_cp_t *v;
  size_t n, cap;
  int64_t interval; /* the file's, or the default */
  int clean;        /* the whole file was good: header and every entry */
} idx_t;

static int push(idx_t *x, int64_t off, int64_t lines) {
  if (tfs_grow(&x->v, &x->cap, x->n + 1, sizeof *x->v, 64))
    return -ENOMEM;
  x->v[x->n++] = (tfs_lineidx_cp_t){off, lines};
  return 0;
}

static int entry_good(const entry_t *e, const tfs_lineidx_cp_t *prev, int64_t size) {
  int64_t off = (int64_t)e->off, lines = (int64_t)e->lines;
  return e->check == mix(e->off, e->lines) && off > prev->off && off <= size &&
         lines > prev->lines && lines - prev->lines <= off - prev->off;
}

/* The good checkpoints of the index file for the transcript tx; none (just
 * {0, 0}) when the file is missing, unreadable or another transcript's. */
static int read_index(tfs_store_t *store, const char *id, const struct stat *tx, idx_t *x) {
  memset(x, 0, sizeof *x);
  x->interval = TFS_LINEIDX_INTERVAL;
  int err = push(x, 0, 0);
  if (err)
    return err;
  int fd TFS_AUTOCLOSE = tfs_task_file_open(store, id, TFS_FILE_LINEIDX, O_RDONLY | O_NONBLOCK, 0);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || st.st_size < (off_t)sizeof(header_t))
    return 0;
  size_t len = st.st_size > (off_t)INDEX_MAX ? INDEX_MAX : (size_t)st.st_size;
  char *buf TFS_AUTOFREE = malloc(len);
  if (!buf)
    return -ENOMEM;
  if (read_at(fd, buf, len, 0))
    return 0;
  header_t h;
  memcpy(&h, buf, sizeof h);
  if (memcmp(h.magic, MAGIC, 8) || h.ino != (uint64_t)tx->st_ino ||
      h.check != mix(h.ino, h.interval) || h.interval == 0 || h.interval > (1ull << 40))
    return 0;
  x->interval = (int64_t)h.interval;
  size_t at = sizeof h;
  for (; at + sizeof(entry_t) <= len; at += sizeof(entry_t)) {
    entry_t e;
    memcpy(&e, buf + at, sizeof e);
    if (!entry_good(&e, &x->v[x->n - 1], tx->st_size))
      break;
    if ((err = push(x, (int64_t)e.off, (int64_t)e.lines)))
      return err;
  }
  x->clean = at == (size_t)st.st_size;
  return 0;
}

/* The file's bytes for the checkpoints x->v[1..] (v[0] is implied). */
static char *encode(const idx_t *x, ino_t ino, size_t *len) {
  *len = sizeof(header_t) + (x->n - 1) * sizeof(entry_t);
  char *buf = malloc(*len);
  if (!buf)
    return NULL;
  header_t h = {.ino = (uint64_t)ino, .interval = (uint64_t)x->interval};
  memcpy(h.magic, MAGIC, 8);
  h.check = mix(h.ino, h.interval);
  memcpy(buf, &h, sizeof h);
  for (size_t i = 1; i < x->n; i++) {
    entry_t e = {(uint64_t)x->v[i].off, (uint64_t)x->v[i].lines, 0};
    e.check = mix(e.off, e.lines);
    memcpy(buf + sizeof h + (i - 1) * sizeof e, &e, sizeof e);
  }
  return buf;
}

/* Replaces the index file with x, whole. No fsync: the index is a cache
 * that a reader rebuilds, and a stale one is caught (see the top). */
static int write_index(tfs_store_t *store, const char *id, const idx_t *x, ino_t ino) {
  size_t len;
  char *buf TFS_AUTOFREE = encode(x, ino, &len);
  if (!buf)
    return -ENOMEM;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  return tfs__write_atomic_flags(dfd, tfs_task_file_name(TFS_FILE_LINEIDX), buf, len,
                                 TFS__WRITE_NOSYNC, NULL);
}

/* Scans the transcript fd from the last checkpoint of x up to end, adding
 * a checkpoint at the first line start an interval or more after the one
 * before. *lines (may be NULL) gets the count of '\n' in [0, end). */
static int extend(idx_t *x, int fd, int64_t end, int64_t *lines, tfs_cancel_t *cancel) {
  char *buf TFS_AUTOFREE = malloc(BLOCK);
  if (!buf)
    return -ENOMEM;
  int64_t pos = x->v[x->n - 1].off, count = x->v[x->n - 1].lines;
  while (pos < end) {
    if (cancel && *cancel)
      return -ECANCELED;
    size_t len = end - pos > BLOCK ? BLOCK : (size_t)(end - pos);
    int err = read_at(fd, buf, len, pos);
    if (err)
      return err;
    /* Checkpoints in this block: a '\n' at index i starts a line at
     * pos + i + 1, which must be >= the last checkpoint + interval. */
    size_t done = 0; /* buf[0, done) is in count */
    for (;;) {
      int64_t last = x->v[x->n - 1].off;
      if (last > INT64_MAX - x->interval || last + x->interval > pos + (int64_t)len)
        break;
      int64_t want = last + x->interval;
      if (want > pos + (int64_t)len)
        break;
      size_t from = want - 1 > pos ? (size_t)(want - 1 - pos) : 0;
      if (from < done)
        from = done;
      const char *nl = memchr(buf + from, '\n', len - from);
      if (!nl)
        break;
      size_t upto = (size_t)(nl - buf) + 1;
      count += tfs_lineidx_count_newlines(buf + done, upto - done);
      done = upto;
      if ((err = push(x, pos + (int64_t)upto, count)))
        return err;
    }
    count += tfs_lineidx_count_newlines(buf + done, len - done);
    pos += (int64_t)len;
  }
  if (lines)
    *lines = count;
  return 0;
}

/* A reader's rebuild: only when no supervisor lives, which holding the
 * lock for the rename makes sure of (a supervisor that comes later opens
 * the new file; one that lives makes the trylock fail). */
static int persist_if_free(tfs_store_t *store, const char *id, const idx_t *x, ino_t ino) {
  int lk TFS_AUTOCLOSE = tfs__task_trylock(store, id);
  if (lk < 0)
    return lk;
  return write_index(store, id, x, ino);
}

static int lags(const idx_t *x, const struct stat *tx) {
  return tx->st_size - x->v[x->n - 1].off >= REBUILD_AFTER * x->interval;
}

int tfs_lineidx_load(tfs_store_t *store, const char *id, int tx_fd, const struct stat *tx,
                     tfs_lineidx_cp_t **v, size_t *n, tfs_cancel_t *cancel) {
  idx_t x;
  *v = NULL;
  *n = 0;
  int err = read_index(store, id, tx, &x);
  if (!err && lags(&x, tx) && !tfs__writable(store) && tfs_task_alive(store, id) == 0) {
    size_t had = x.n;
    err = extend(&x, tx_fd, tx->st_size, NULL, cancel);
    if (!err && x.n > had)
      persist_if_free(store, id, &x, tx->st_ino); /* failing, it is only slower */
  }
  if (err) {
    free(x.v);
    return err;
  }
  *v = x.v;
  *n = x.n;
  return 0;
}

const tfs_lineidx_cp_t *tfs_lineidx_at_off(const tfs_lineidx_cp_t *v, size_t n, int64_t off) {
  size_t lo = 0, hi = n; /* v[lo].off <= off < v[hi].off */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].off <= off)
      lo = mid;
    else
      hi = mid;
  }
  return &v[lo];
}

const tfs_lineidx_cp_t *tfs_lineidx_at_line(const tfs_lineidx_cp_t *v, size_t n, int64_t lineno) {
  size_t lo = 0, hi = n; /* v[lo].lines + 1 <= lineno < v[hi].lines + 1 */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].lines + 1 <= lineno)
      lo = mid;
    else
      hi = mid;
  }
  return &v[lo];
}

/* Whether checkpoint c is a line start of the transcript as it is now. */
static int cp_true(int fd, const tfs_lineidx_cp_t *c) {
  char b;
  return c->off == 0 || (read_at(fd, &b, 1, c->off - 1) == 0 && b == '\n');
}

int tfs_lineidx_count(tfs_store_t *store, const char *id, int fd, const struct stat *st, off_t off,
                      int64_t *lines, tfs_cancel_t *cancel) {
  tfs_lineidx_cp_t *v TFS_AUTOFREE = NULL;
  size_t n;
  *lines = 0;
  int err = tfs_lineidx_load(store, id, fd, st, &v, &n, cancel);
  if (err)
    return err;
  const tfs_lineidx_cp_t *c = tfs_lineidx_at_off(v, n, off);
  while (!cp_true(fd, c))
    c--; /* v[0] is always true */
  idx_t x = {.v = (tfs_lineidx_cp_t[]){*c}, .n = 1, .cap = 1, .interval = INT64_MAX};
  return extend(&x, fd, off, lines, cancel);
}

int tfs_lineidx_seek(tfs_store_t *store, const char *id, int fd, const struct stat *st,
                     int64_t lineno, off_t *at, int64_t *at_lineno, tfs_cancel_t *cancel) {
  tfs_lineidx_cp_t *v TFS_AUTOFREE = NULL;
  size_t n;
  *at = 0;
  *at_lineno = 1;
  int err = tfs_lineidx_load(store, id, fd, st, &v, &n, cancel);
  if (err)
    return err;
  const tfs_lineidx_cp_t *c = tfs_lineidx_at_line(v, n, lineno);
  while (!cp_true(fd, c))
    c--;
  *at = c->off;
  *at_lineno = c->lines + 1;
  return 0;
}

int tfs_lineidx_rebuild(tfs_store_t *store, const char *id, int64_t interval,
                        tfs_cancel_t *cancel) {
  struct stat st;
  int err = tfs__writable(store);
  if (err)
    return err;
  int fd TFS_AUTOCLOSE =
      tfs_task_file_open(store, id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
  if (fd < 0)
    return fd;
  if (fstat(fd, &st))
    return -errno;
  idx_t x = {.interval = interval > 0 ? interval : TFS_LINEIDX_INTERVAL};
  if (!(err = push(&x, 0, 0)) && !(err = extend(&x, fd, st.st_size, NULL, cancel)))
    err = persist_if_free(store, id, &x, st.st_ino);
  free(x.v);
  return err;
}

/* ---- the supervisor's writer --------------------------------------------- */

struct tfs_lineidx_writer {
  int fd;           /* the index, O_APPEND; -1 once broken */
  int64_t size;     /* transcript bytes fed (or found at the open) */
  int64_t lines;    /* '\n' among them */
  int64_t last_off; /* the last checkpoint's offset */
  int64_t interval;
};

int tfs_lineidx_writer_open(tfs_store_t *store, const char *id, int tx_fd, int64_t interval,
                            tfs_lineidx_writer_t **out) {
  struct stat st, rst;
  idx_t x;
  *out = NULL;
  /* tx_fd is the capture's, write-only: the counting reads its own. */
  int rfd TFS_AUTOCLOSE =
      tfs_task_file_open(store, id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
  if (rfd < 0)
    return rfd;
  if (fstat(tx_fd, &st) || fstat(rfd, &rst))
    return -errno;
  if (st.st_ino != rst.st_ino || st.st_dev != rst.st_dev)
    return -ESTALE;
  int err = read_index(store, id, &st, &x);
  int64_t lines = 0;
  if (!err && interval > 0 && interval != x.interval && x.n == 1)
    x.interval = interval; /* nothing to keep: the caller's spacing */
  /* What the index lacks is counted (and checkpointed) now: after a
   * restart, or for a task of an older taskfs, the whole transcript. */
  size_t had = x.n;
  if (!err)
    err = extend(&x, rfd, st.st_size, &lines, NULL);
  if (!err && (!x.clean || x.n > had))
    err = write_index(store, id, &x, st.st_ino);
  tfs_lineidx_writer_t *w = err ? NULL : calloc(1, sizeof *w);
  if (!err && !w)
    err = -ENOMEM;
  if (!err) {
    /* Written above unless it was clean already: it exists. */
    w->fd = tfs_task_file_open(store, id, TFS_FILE_LINEIDX, O_WRONLY | O_APPEND, 0);
    err = w->fd < 0 ? w->fd : 0;
  }
  if (!err) {
    w->size = st.st_size;
    w->lines = lines;
    w->last_off = x.v[x.n - 1].off;
    w->interval = x.interval;
    *out = w;
  } else {
    free(w);
  }
  free(x.v);
  return err;
}

void tfs_lineidx_feed(tfs_lineidx_writer_t *w, int64_t at, const char *data, size_t len) {
  if (w && w->fd >= 0)
    tfs_lineidx_feed_counted(w, at, data, len, tfs_lineidx_count_newlines(data, len));
}

void tfs_lineidx_feed_counted(tfs_lineidx_writer_t *w, int64_t at, const char *data, size_t len,
                              int64_t newlines) {
  if (!w || w->fd < 0)
    return;
  if (at > w->size) {
    /* Bytes we never saw: our count would be wrong from here on. */
    close(w->fd);
    w->fd = -1;
    return;
  }
  w->size = at + (int64_t)len; /* at < size: a cut of bytes without '\n' */
  w->lines += newlines;
  if (len == 0 || data[len - 1] != '\n' || w->size - w->last_off < w->interval)
    return;
  entry_t e = {(uint64_t)w->size, (uint64_t)w->lines, 0};
  e.check = mix(e.off, e.lines);
  /* One write of a whole entry: a crash tears at most this one, which
   * readers ignore (and the next open rewrites). */
  if (write(w->fd, &e, sizeof e) != (ssize_t)sizeof e) {
    close(w->fd);
    w->fd = -1;
    return;
  }
  w->last_off = w->size;
}

void tfs_lineidx_writer_close(tfs_lineidx_writer_t *w) {
  if (!w)
    return;
  if (w->fd >= 0)
    close(w->fd);
  free(w);
}
