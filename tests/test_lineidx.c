/* The line index (core/lineidx.c): checkpoints written as the supervisor
 * writes, checked against a brute-force count on random content (no
 * trailing newline, CR, huge lines, binary), and an index that is missing,
 * corrupt, torn or another transcript's, which must cost speed only. */
#include "tests/core_fixture.h"

#include <fcntl.h>

TestSuite(lineidx, .init = fx_setup, .fini = fx_teardown, .timeout = 120);

#define IV 512 /* a small interval, so that small content has many checkpoints */

static char tid[TFS_ID_MAX + 1];

static const char *idx_path(void) {
  static char p[64];
  snprintf(p, sizeof p, "tasks/%s/lines.idx", tid);
  return fx_path(p);
}

static const char *tx_path(void) {
  static char p[64];
  snprintf(p, sizeof p, "tasks/%s/transcript", tid);
  return fx_path(p);
}

/* Random content of about len bytes: short lines, CRs, binary, a huge
 * line now and then; ends without a newline when open_end. */
static char *random_content(unsigned seed, size_t len, int open_end, size_t *out) {
  char *b = malloc(len + 1);
  size_t n = 0;
  srand(seed);
  while (n < len) {
    int kind = rand() % 20;
    size_t l = kind == 0 ? (size_t)(rand() % (8 * IV)) : (size_t)(rand() % 40);
    for (size_t i = 0; i < l && n < len; i++) {
      int r = rand() % 16;
      b[n++] = r == 0 ? '\r' : r == 1 ? (char)(rand() % 256) : r == 2 ? '\0' : 'a' + r;
    }
    if (n < len)
      b[n++] = '\n';
  }
  if (open_end && b[n - 1] == '\n')
    b[n - 1] = 'z';
  *out = n;
  return b;
}

static int64_t brute_newlines(const char *b, size_t off) {
  int64_t c = 0;
  for (size_t i = 0; i < off; i++)
    c += b[i] == '\n';
  return c;
}

/* Writes content into the task's transcript as the capture does: whole
 * lines in one write, a long line in pieces (up to the next newline
 * within 64 KiB, else a piece), each write fed to the writer. */
static void write_as_supervisor(const char *b, size_t n) {
  int fd = tfs_transcript_open_append(fx_store, tid);
  cr_assert_geq(fd, 0);
  tfs_lineidx_writer_t *w;
  cr_assert_eq(tfs_lineidx_writer_open(fx_store, tid, fd, IV, &w), 0);
  for (size_t at = 0; at < n;) {
    size_t l = (size_t)(rand() % 300) + 1;
    if (l > n - at)
      l = n - at;
    const char *nl = memchr(b + at + l - 1, '\n', n - at - l + 1 < 65536 ? n - at - l + 1 : 65536);
    if (nl)
      l = (size_t)(nl - (b + at)) + 1;
    else if (n - at - l + 1 >= 65536)
      l = 65536;
    cr_assert_eq(tfs_transcript_append(fd, b + at, l, 0), 0);
    tfs_lineidx_feed(w, (int64_t)at, b + at, l);
    at += l;
  }
  tfs_lineidx_writer_close(w);
  close(fd);
}

static int open_tx(struct stat *st) {
  int fd = open(tx_path(), O_RDONLY);
  cr_assert_geq(fd, 0);
  cr_assert_eq(fstat(fd, st), 0);
  return fd;
}

/* Every query against the brute-force count. */
static void check_all(const char *b, size_t n) {
  struct stat st;
  int fd = open_tx(&st);
  for (int i = 0; i < 300; i++) {
    off_t off = i == 0 ? (off_t)n : (off_t)(rand() % (n + 1));
    int64_t lines;
    cr_assert_eq(tfs_lineidx_count(fx_store, tid, fd, &st, off, &lines, NULL), 0);
    cr_assert_eq(lines, brute_newlines(b, (size_t)off), "newlines before %lld", (long long)off);
  }
  int64_t total = brute_newlines(b, n) + (n && b[n - 1] != '\n');
  for (int64_t l = 1; l <= total + 1; l += 1 + rand() % 7) {
    off_t at;
    int64_t at_line;
    cr_assert_eq(tfs_lineidx_seek(fx_store, tid, fd, &st, l, &at, &at_line, NULL), 0);
    cr_assert(at == 0 || b[at - 1] == '\n', "a checkpoint is a line start");
    cr_assert_eq(at_line, brute_newlines(b, (size_t)at) + 1);
    cr_assert_leq(at_line, l);
  }
  close(fd);
  /* The faces' calls: the last n lines start where a count from byte 0
   * says, with the number it says. */
  for (int64_t k = 0; k < 40; k += 1 + rand() % 5) {
    off_t off, size;
    int64_t first;
    cr_assert_eq(tfs_transcript_tail(fx_store, tid, k, &off, &first, &size), 0);
    cr_assert_eq(first, brute_newlines(b, (size_t)off) + 1, "tail %lld", (long long)k);
  }
}

static void make_task(void) {
  fx_create("x", NULL, tid);
}

Test(lineidx, count_newlines_matches_brute_force) {
  size_t n;
  for (unsigned seed = 1; seed < 40; seed++) {
    char *b = random_content(seed, (size_t)(rand() % 5000), seed & 1, &n);
    for (size_t s = 0; s < 9 && s < n; s++)
      cr_assert_eq(tfs_lineidx_count_newlines(b + s, n - s), brute_newlines(b + s, n - s));
    free(b);
  }
  /* Nothing but newlines, over many rounds of the byte counters (255 of 16
   * bytes each): no counter may wrap. */
  size_t big = 100003;
  char *nl = malloc(big);
  memset(nl, '\n', big);
  for (size_t len = big - 40; len <= big; len += 7)
    cr_assert_eq(tfs_lineidx_count_newlines(nl + big - len, len), (int64_t)len);
  free(nl);
}

Test(lineidx, written_as_captured_matches_brute_force) {
  for (int open_end = 0; open_end < 2; open_end++) {
    make_task();
    size_t n;
    char *b = random_content(7 + open_end, 200000, open_end, &n);
    write_as_supervisor(b, n);
    struct stat st;
    cr_assert_eq(stat(idx_path(), &st), 0);
    cr_assert_gt(st.st_size, 32 + 24 * 100, "checkpoints were written: %lld",
                 (long long)st.st_size);
    check_all(b, n);
    free(b);
  }
}

Test(lineidx, huge_line_and_empty) {
  make_task();
  size_t n = 3 << 20;
  char *b = malloc(n);
  memset(b, 'x', n);
  b[10] = '\n';
  b[n - 2] = '\n';
  write_as_supervisor(b, n);
  check_all(b, n);
  free(b);
  make_task();
  int fd = tfs_transcript_open_append(fx_store, tid);
  close(fd);
  check_all("", 0);
}

/* An index with nothing to go on, or a bad one, gives the same answers. */
Test(lineidx, missing_corrupt_torn_or_foreign_index) {
  make_task();
  size_t n;
  char *b = random_content(11, 100000, 1, &n);
  write_as_supervisor(b, n);
  struct stat st;
  cr_assert_eq(stat(idx_path(), &st), 0);
  /* As if a supervisor lived: no reader rebuilds what follows. */
  int lk = tfs_task_lock(fx_store, tid);
  cr_assert_geq(lk, 0);
  /* torn last entry */
  size_t entries = (size_t)(st.st_size - 32) / 24;
  cr_assert_eq(truncate(idx_path(), st.st_size - 7), 0);
  struct stat tx;
  int tfd = open_tx(&tx);
  tfs_lineidx_cp_t *v;
  size_t cnt;
  cr_assert_eq(tfs_lineidx_load(fx_store, tid, tfd, &tx, &v, &cnt, NULL), 0);
  cr_assert_eq(cnt, entries, "the torn one is left out: %zu of %zu", cnt, entries);
  free(v);
  check_all(b, n);
  /* a bad entry in the middle: it and all after it are ignored */
  int fd = open(idx_path(), O_RDWR);
  cr_assert_eq(pwrite(fd, "\xff\xff\xff", 3, 32 + 24 * 5 + 4), 3);
  close(fd);
  cr_assert_eq(tfs_lineidx_load(fx_store, tid, tfd, &tx, &v, &cnt, NULL), 0);
  cr_assert_eq(cnt, 6, "entries before the bad one, and {0,0}: %zu", cnt);
  free(v);
  close(tfd);
  check_all(b, n);
  close(lk);
  /* garbage */
  cr_assert_eq(tu_write_file(idx_path(), "garbage long enough to be a header......", 40), 0);
  check_all(b, n);
  /* missing */
  cr_assert_eq(unlink(idx_path()), 0);
  check_all(b, n);
  /* another transcript's (a new inode): none */
  write_as_supervisor(b, n);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.new", tx_path());
  int nfd = open(tmp, O_WRONLY | O_CREAT, 0600);
  cr_assert_eq(write(nfd, "a\nb\n", 4), 4);
  close(nfd);
  cr_assert_eq(rename(tmp, tx_path()), 0);
  check_all("a\nb\n", 4);
  free(b);
}

/* The writer's reopen (a restart of the supervisor) rewrites a torn
 * index whole and goes on counting where the transcript is. */
Test(lineidx, writer_reopen_after_torn_tail) {
  make_task();
  size_t n;
  char *b = random_content(13, 60000, 0, &n);
  size_t half = n / 2;
  while (b[half - 1] != '\n')
    half++;
  write_as_supervisor(b, half);
  struct stat st;
  cr_assert_eq(stat(idx_path(), &st), 0);
  cr_assert_eq(truncate(idx_path(), st.st_size - 5), 0);
  int fd = tfs_transcript_open_append(fx_store, tid);
  tfs_lineidx_writer_t *w;
  cr_assert_eq(tfs_lineidx_writer_open(fx_store, tid, fd, IV, &w), 0);
  cr_assert_eq(stat(idx_path(), &st), 0);
  cr_assert_eq((st.st_size - 32) % 24, 0, "the torn entry is gone");
  cr_assert_eq(tfs_transcript_append(fd, b + half, n - half, 0), 0);
  tfs_lineidx_feed(w, (int64_t)half, b + half, n - half);
  tfs_lineidx_writer_close(w);
  close(fd);
  check_all(b, n);
  free(b);
}

/* A reader rebuilds the index of a task no supervisor runs; with the
 * task's lock held (a supervisor lives), it writes nothing. */
Test(lineidx, rebuild_only_without_a_supervisor) {
  make_task();
  size_t n;
  char *b = random_content(17, 50000, 0, &n);
  int fd = tfs_transcript_open_append(fx_store, tid);
  cr_assert_eq(tfs_transcript_append(fd, b, n, 0), 0);
  close(fd);
  int lk = tfs_task_lock(fx_store, tid);
  cr_assert_geq(lk, 0);
  cr_assert_eq(tfs_lineidx_rebuild(fx_store, tid, IV, NULL), -EBUSY);
  struct stat st;
  cr_assert_neq(stat(idx_path(), &st), 0, "no index written while the lock is held");
  close(lk);
  cr_assert_eq(tfs_lineidx_rebuild(fx_store, tid, IV, NULL), 0);
  cr_assert_eq(stat(idx_path(), &st), 0);
  cr_assert_gt(st.st_size, 32 + 24 * 10, "%lld", (long long)st.st_size);
  check_all(b, n);
  free(b);
}

/* The queries read the index, not the file from byte 0: with the newlines
 * of the first half of the transcript turned into other bytes (same size,
 * same inode), the numbers still come from the checkpoints. */
Test(lineidx, queries_do_not_read_from_the_start) {
  make_task();
  size_t n;
  char *b = random_content(19, 100000, 0, &n);
  write_as_supervisor(b, n);
  int fd = open(tx_path(), O_RDWR);
  for (size_t i = 0; i < n / 2; i++)
    if (b[i] == '\n')
      cr_assert_eq(pwrite(fd, "#", 1, (off_t)i), 1);
  close(fd);
  off_t off, size;
  int64_t first;
  cr_assert_eq(tfs_transcript_tail(fx_store, tid, 3, &off, &first, &size), 0);
  cr_assert_eq(first, brute_newlines(b, (size_t)off) + 1);
  free(b);
}
