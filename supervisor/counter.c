/* The counter: what the capture learns from the bytes it wrote, found on a
 * thread of its own so that the worker's pipe is never left unread while
 * lines are counted and classified. The capture (capture.c) only moves
 * bytes into the transcript and says how far they landed
 * (sup_counter_landed); this thread reads them back from the page cache
 * through a read-only fd of the transcript and
 *   - counts the lines (a line counts as it starts, so an open last line
 *     counts too, as tfs_transcript_read() does),
 *   - feeds each line's first SUP_CAPTURE_FEED_MAX bytes to the
 *     important-line tracker, in line order,
 *   - feeds the line index (tfs_lineidx_feed, every byte in order),
 *   - with stderr split, lists the lines that began in stderr's writes in
 *     the sidecar as ranges "first-last\n".
 * A producer faster than the classifier makes the counter lag (the record's
 * line count trails its bytes for a moment); it never slows the capture.
 * The end of a task, a restart and a failed write wait for it to catch up
 * (sup_counter_drain), so that every figure saved at those points is
 * exact.
 *
 * Two locks: q (what landed, what was counted: held for a few
 * instructions, so the capture never waits on the work) and data (the
 * tracker, the counts, the sidecar, the line index: held by the thread
 * while it works on one block, and by the saver while it writes the
 * record, which thus never sees a half-fed tracker).
 *
 * Without a thread (pthread_create failed) the same work is done inline,
 * at each landed write. */
#include "supervisor/internal.h"

#include <errno.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes read back and worked on at a time: small enough to stay in the
 * cache and to hold the data lock only briefly (~0.1 ms of work), large
 * enough that the pread per block costs little (on this project's VM a
 * syscall is ~3 us: 64 KiB blocks spent ~8% of the counter's time there). */
#define BLOCK (256 * 1024)

int sup_counter_init(sup_counter_t *k, int rfd, int side_fd, tfs_important_t *imp, int64_t lines,
                     int64_t bytes) {
  memset(k, 0, sizeof *k);
  k->rfd = rfd;
  k->side_fd = side_fd;
  k->imp = imp;
  k->lines = lines;
  k->done = k->end = k->line_end = k->counted = bytes;
  k->buf = malloc(BLOCK);
  k->pre = malloc(SUP_CAPTURE_FEED_MAX);
  if (!k->buf || !k->pre) {
    free(k->buf);
    free(k->pre);
    k->buf = k->pre = NULL;
    return -ENOMEM;
  }
  pthread_mutex_init(&k->q, NULL);
  pthread_mutex_init(&k->data, NULL);
  pthread_cond_init(&k->more, NULL);
  pthread_cond_init(&k->caught_up, NULL);
  k->ready = 1;
  return 0;
}

/* ---- the sidecar: stderr's line ranges ----------------------------------- */

/* Writes the pending range (data lock held). A failed write loses only the
 * stream attribution of these lines; the transcript itself is intact. */
static void flush_side_locked(sup_counter_t *k) {
  char buf[64];
  if (!k->err_first)
    return;
  if (k->side_fd >= 0) {
    int n = snprintf(buf, sizeof buf, "%" PRId64 "-%" PRId64 "\n", k->err_first, k->err_last);
    if (write(k->side_fd, buf, (size_t)n) < 0)
      k->side_err = -errno;
  }
  k->err_first = k->err_last = 0;
}

/* Notes that lines first..last came from stderr, extending the open range
 * when they follow it. */
static void note_err_range(sup_counter_t *k, int64_t first, int64_t last) {
  if (k->err_first && k->err_last + 1 == first) {
    k->err_last = last;
    return;
  }
  flush_side_locked(k);
  k->err_first = first;
  k->err_last = last;
}

/* ---- finding lines ------------------------------------------------------- */

/* Feeds a line of the block in hand to the tracker if it can classify as
 * anything: the length test is inline so that floods of short lines ("y"
 * from yes, progress dots) cost no call per line. The line is fed by
 * reference (the tracker's ring points into the block; work() settles it
 * before the block is read over), so a flood of important lines costs no
 * copy each. */
static inline void feed_line(sup_counter_t *k, int64_t lineno, const char *line, size_t len) {
  if (k->imp && len >= TFS_CLASSIFY_MIN_LEN)
    tfs_important_feed_ref(k->imp, lineno, line,
                           len > SUP_CAPTURE_FEED_MAX ? SUP_CAPTURE_FEED_MAX : len);
}

/* Feeds the open line's kept start (k->pre, which the next open line
 * overwrites: copied, not referenced). */
static void feed_pre(sup_counter_t *k) {
  if (k->imp && k->pre_len >= TFS_CLASSIFY_MIN_LEN)
    tfs_important_feed(k->imp, k->lines, k->pre, k->pre_len);
}

#if defined(__SSE2__)
/* Bit i set: byte i of the 64 at p is a newline. */
static inline uint64_t newline_mask16(const char *p) {
  return (uint64_t)(unsigned)_mm_movemask_epi8(
      _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), _mm_set1_epi8('\n')));
}

/* Written out: gcc -O2 kept the loop of four, with a shift by a register. */
static inline uint64_t newline_mask64(const char *p) {
  return newline_mask16(p) | newline_mask16(p + 16) << 16 | newline_mask16(p + 32) << 32 |
         newline_mask16(p + 48) << 48;
}

/* Set bits of x, without the libgcc call __builtin_popcountll makes when
 * the target has no popcnt instruction. */
static inline int64_t bits64(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return (int64_t)((x * 0x0101010101010101ull) >> 56);
}
#endif

_Static_assert(TFS_CLASSIFY_MIN_LEN == 3, "the short-line test below checks 3 bytes");

/* Counts the lines in [p, stop), where p starts a line and stop[-1] is a
 * newline, feeding them to the tracker as lines first, first + 1, ...
 * Newlines are found 64 bytes at a time with compare masks. A block in
 * which no line of TFS_CLASSIFY_MIN_LEN bytes or more ends (no newline has
 * three other bytes before it: `yes`, progress dots) is only counted;
 * otherwise its newlines are visited in order. Returns the count. */
static int64_t scan_lines(sup_counter_t *k, const char *p, const char *stop, int64_t first) {
  int64_t n = 0;
  const char *line = p;
  if (!k->imp)
    return tfs_lineidx_count_newlines(p, (size_t)(stop - p));
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
        n += bits64(m);
        line = p + 64 - __builtin_clzll(m);
      }
    } else {
      for (uint64_t b = m; b; b &= b - 1) {
        const char *nl = p + __builtin_ctzll(b);
        feed_line(k, first + n++, line, (size_t)(nl - line));
        line = nl + 1;
      }
    }
    prev = nm;
  }
#endif
  for (; p < stop; p++) {
    if (*p == '\n') {
      feed_line(k, first + n++, line, (size_t)(p - line));
      line = p + 1;
    }
  }
  return n;
}

/* Keeps up to the first SUP_CAPTURE_FEED_MAX bytes of the open line (the
 * rest of its start may come in a later block); feeds them once that much
 * is in hand: the tracker never reads more of a line. */
static void keep_prefix(sup_counter_t *k, const char *p, size_t len) {
  if (k->fed)
    return;
  size_t room = SUP_CAPTURE_FEED_MAX - k->pre_len;
  size_t n = len < room ? len : room;
  memcpy(k->pre + k->pre_len, p, n);
  k->pre_len += n;
  if (k->pre_len == SUP_CAPTURE_FEED_MAX) {
    feed_pre(k);
    k->fed = 1;
  }
}

/* The open line's start goes to the tracker now, if it has not: a prompt
 * that waits for its answer, or the last line of a run. */
static void feed_open(sup_counter_t *k) {
  if (k->open && !k->fed && k->imp)
    tfs_important_feed(k->imp, k->lines, k->pre, k->pre_len);
  k->fed = 1;
}

/* Feeds the line index what landed at at, in two calls so that a
 * checkpoint can fall on the last line end within it; the block's
 * newlines (all in the first part) are counted already. */
static void index_block(sup_counter_t *k, const char *data, size_t n, int64_t at,
                        int64_t newlines) {
  if (!k->lidx)
    return;
  size_t whole = k->line_end > at ? (size_t)(k->line_end - at) : 0;
  tfs_lineidx_feed_counted(k->lidx, at, data, whole, newlines);
  tfs_lineidx_feed_counted(k->lidx, at + (int64_t)whole, data + whole, n - whole, 0);
}

/* Works on n bytes read back from offset at, all written by stream st
 * (data lock held): the end of an open line, whole lines, the start of a
 * new open line. */
static void work(sup_counter_t *k, const char *data, size_t n, int64_t at, int st) {
  const char *p = data, *stop = data + n;
  int64_t newlines = 0;
  k->counted = at + (int64_t)n;
  if (k->open) { /* the rest of a line begun earlier */
    const char *nl = memchr(p, '\n', n);
    keep_prefix(k, p, (size_t)((nl ? nl : stop) - p));
    if (!nl) {
      index_block(k, data, n, at, 0);
      return;
    }
    if (!k->fed)
      feed_pre(k);
    k->open = 0;
    p = nl + 1;
    k->line_end = at + (p - data);
    newlines = 1;
  }
  const char *last = p < stop ? memrchr(p, '\n', (size_t)(stop - p)) : NULL;
  if (last) { /* whole lines */
    int64_t first = k->lines + 1;
    int64_t got = scan_lines(k, p, last + 1, first);
    if (k->imp)
      tfs_important_settle(k->imp); /* before the block is read over */
    newlines += got;
    k->lines += got;
    if (got && st == SUP_STDERR)
      note_err_range(k, first, first + got - 1);
    p = last + 1;
    k->line_end = at + (p - data);
  }
  if (p < stop) { /* a line begins: it counts now */
    k->lines++;
    if (st == SUP_STDERR)
      note_err_range(k, k->lines, k->lines);
    k->open = 1;
    k->fed = 0;
    k->pre_len = 0;
    keep_prefix(k, p, (size_t)(stop - p));
  }
  index_block(k, data, n, at, newlines);
}

/* ---- the thread ---------------------------------------------------------- */

/* The stream of the bytes at k->done and how far they go (q held). */
static int64_t next_stretch(sup_counter_t *k, int *st) {
  while (k->nseg && k->seg[k->seg_head].end <= k->done) {
    k->seg_head = (k->seg_head + 1) % SUP_COUNTER_SEGS;
    k->nseg--;
  }
  int64_t to = k->end;
  *st = SUP_STDOUT;
  if (k->nseg) {
    *st = k->seg[k->seg_head].st;
    to = k->seg[k->seg_head].end;
  }
  return to - k->done > BLOCK ? k->done + BLOCK : to;
}

/* Reads back and works on what landed up to k->end, a block at a time, and
 * serves a pending flush (q held on entry and on return; released while
 * reading and working). */
static void catch_up(sup_counter_t *k) {
  while (k->done < k->end) {
    int st;
    int64_t at = k->done, to = next_stretch(k, &st);
    pthread_mutex_unlock(&k->q);
    ssize_t n = k->broken ? -1 : pread(k->rfd, k->buf, (size_t)(to - at), at);
    pthread_mutex_lock(&k->data);
    if (n == to - at)
      work(k, k->buf, (size_t)n, at, st);
    else
      k->broken = 1; /* cannot happen on a regular file: count no more */
    pthread_mutex_unlock(&k->data);
    pthread_mutex_lock(&k->q);
    k->done = to;
  }
  if (k->flush && k->done >= k->flush_at) {
    k->flush = 0;
    pthread_mutex_lock(&k->data);
    feed_open(k);
    pthread_mutex_unlock(&k->data);
  }
  pthread_cond_broadcast(&k->caught_up);
}

static void *counter_main(void *arg) {
  sup_counter_t *k = arg;
  pthread_setname_np(pthread_self(), "taskfs-counter"); /* in top -H, perf */
  pthread_mutex_lock(&k->q);
  for (;;) {
    catch_up(k);
    if (k->quit)
      break;
    pthread_cond_wait(&k->more, &k->q);
  }
  pthread_mutex_unlock(&k->q);
  return NULL;
}

/* Starts the thread at the first write (the line index is set by then);
 * without one, the work is done inline (k->inline_work). */
static void start(sup_counter_t *k) {
  if (k->started || k->inline_work)
    return;
  if (pthread_create(&k->th, NULL, counter_main, k) == 0)
    k->started = 1;
  else
    k->inline_work = 1;
}

void sup_counter_landed(sup_counter_t *k, int64_t end, int st) {
  start(k);
  pthread_mutex_lock(&k->q);
  /* With stderr split, stretches of one stream are kept apart; a full ring
   * (many alternations faster than the counter) waits for it. */
  if (st != SUP_STDOUT || k->nseg) {
    sup_counter_seg_t *lastseg =
        k->nseg ? &k->seg[(k->seg_head + k->nseg - 1) % SUP_COUNTER_SEGS] : NULL;
    if (lastseg && lastseg->st == st) {
      lastseg->end = end;
    } else {
      while (k->nseg == SUP_COUNTER_SEGS && k->started)
        pthread_cond_wait(&k->caught_up, &k->q);
      if (k->nseg == 0 && k->end > k->done) /* what is pending was stdout's */
        k->seg[k->seg_head] = (sup_counter_seg_t){k->end, SUP_STDOUT}, k->nseg = 1;
      k->seg[(k->seg_head + k->nseg) % SUP_COUNTER_SEGS] = (sup_counter_seg_t){end, st};
      k->nseg++;
    }
  }
  k->end = end;
  if (k->inline_work)
    catch_up(k);
  else
    pthread_cond_signal(&k->more);
  pthread_mutex_unlock(&k->q);
}

void sup_counter_flush(sup_counter_t *k) {
  pthread_mutex_lock(&k->q);
  k->flush = 1;
  k->flush_at = k->end;
  if (k->started)
    pthread_cond_signal(&k->more);
  else
    catch_up(k);
  pthread_mutex_unlock(&k->q);
}

void sup_counter_drain(sup_counter_t *k) {
  pthread_mutex_lock(&k->q);
  if (k->started)
    while (k->done < k->end || k->flush)
      pthread_cond_wait(&k->caught_up, &k->q);
  else
    catch_up(k);
  pthread_mutex_unlock(&k->q);
}

int64_t sup_counter_line_end(sup_counter_t *k) {
  pthread_mutex_lock(&k->data);
  int64_t e = k->line_end;
  pthread_mutex_unlock(&k->data);
  return e;
}

void sup_counter_truncated(sup_counter_t *k, int64_t to) {
  pthread_mutex_lock(&k->q);
  pthread_mutex_lock(&k->data);
  if (k->open && to <= k->line_end) {
    k->lines--; /* the open line is gone whole */
    k->open = 0;
  }
  k->done = k->end = k->counted = to;
  k->nseg = 0;
  pthread_mutex_unlock(&k->data);
  pthread_mutex_unlock(&k->q);
}

void sup_counter_lock(sup_counter_t *k) {
  pthread_mutex_lock(&k->data);
}

void sup_counter_unlock(sup_counter_t *k) {
  pthread_mutex_unlock(&k->data);
}

void sup_counter_flush_side(sup_counter_t *k) {
  pthread_mutex_lock(&k->data);
  flush_side_locked(k);
  pthread_mutex_unlock(&k->data);
}

void sup_counter_free(sup_counter_t *k) {
  if (!k->ready)
    return;
  if (k->started) {
    pthread_mutex_lock(&k->q);
    k->quit = 1;
    pthread_cond_signal(&k->more);
    pthread_mutex_unlock(&k->q);
    pthread_join(k->th, NULL);
    k->started = 0;
  }
  pthread_mutex_destroy(&k->q);
  pthread_mutex_destroy(&k->data);
  pthread_cond_destroy(&k->more);
  pthread_cond_destroy(&k->caught_up);
  free(k->buf);
  free(k->pre);
  k->buf = k->pre = NULL;
  k->ready = 0;
}
