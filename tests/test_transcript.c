/* Transcripts: appends, reading ranges, and the follower's semantics
 * (last N, partial lines, truncation, vanishing, huge lines). */
#include "tests/core_fixture.h"

TestSuite(transcript, .init = fx_setup, .fini = fx_teardown, .timeout = 60);

typedef struct {
  int n;
  int64_t lineno[64];
  char text[64][64];
  int partial[64];
  int stop_at;
} lines_t;

static int lines_cb(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  lines_t *l = arg;
  cr_assert_eq(line[len], '\0', "lines are NUL-terminated");
  if (l->n < 64) {
    l->lineno[l->n] = lineno;
    snprintf(l->text[l->n], 64, "%.*s", (int)len, line);
    l->partial[l->n] = partial;
  }
  l->n++;
  return l->stop_at && l->n >= l->stop_at;
}

static char tid[TFS_ID_MAX + 1];

static int append_fd(void) {
  int fd = tfs_transcript_open_append(fx_store, tid);
  cr_assert_geq(fd, 0, "open_append: %s", tfs_strerror(fd));
  return fd;
}

static void append(int fd, const char *s, int nl) {
  cr_assert_eq(tfs_transcript_append(fd, s, strlen(s), nl), 0);
}

static const char *tpath(void) {
  static char p[64];
  snprintf(p, sizeof p, "tasks/%s/transcript", tid);
  return fx_path(p);
}

Test(transcript, append_and_read) {
  fx_create("x", NULL, tid);
  lines_t l = {0};
  cr_assert_eq(tfs_transcript_read(fx_store, tid, 1, -1, lines_cb, &l), 0, "no file yet");
  int fd = append_fd();
  append(fd, "one", 1);
  append(fd, "two", 1);
  append(fd, "", 1);
  append(fd, "four\nfive", 1);
  append(fd, "six-partial", 0);
  struct stat st;
  cr_assert_eq(stat(tpath(), &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600);
  cr_assert_eq(tfs_transcript_read(fx_store, tid, 1, -1, lines_cb, &l), 6);
  cr_assert_str_eq(l.text[0], "one");
  cr_assert_str_eq(l.text[2], "");
  cr_assert_str_eq(l.text[3], "four");
  cr_assert_str_eq(l.text[4], "five");
  cr_assert_str_eq(l.text[5], "six-partial");
  cr_assert_eq(l.partial[4], 0);
  cr_assert_eq(l.partial[5], 1);
  for (int i = 0; i < 6; i++)
    cr_assert_eq(l.lineno[i], i + 1);
  /* A window. */
  lines_t w = {0};
  cr_assert_eq(tfs_transcript_read(fx_store, tid, 2, 2, lines_cb, &w), 2);
  cr_assert_eq(w.lineno[0], 2);
  cr_assert_str_eq(w.text[1], "");
  lines_t z = {0};
  cr_assert_eq(tfs_transcript_read(fx_store, tid, 100, 10, lines_cb, &z), 0);
  cr_assert_eq(tfs_transcript_read(fx_store, tid, 1, 0, lines_cb, &z), 0);
  lines_t s = {.stop_at = 3};
  cr_assert_eq(tfs_transcript_read(fx_store, tid, 0, -1, lines_cb, &s), 3, "callback stops");
  cr_assert_eq(tfs_transcript_read(fx_store, "zzzzzzzz-zzzzzz", 1, -1, lines_cb, &z), TFS_ENOTASK);
  close(fd);
  /* Writing to a closed or read-only fd reports the errno. */
  int rfd = open(tpath(), O_RDONLY);
  cr_assert_eq(tfs_transcript_append(rfd, "x", 1, 1), -EBADF);
  close(rfd);
}

Test(transcript, append_reports_enospc) {
  int fd = open("/dev/full", O_WRONLY);
  cr_assert_geq(fd, 0);
  cr_assert_eq(tfs_transcript_append(fd, "x", 1, 1), -ENOSPC);
  close(fd);
}

Test(transcript, follower_last_n) {
  fx_create("x", NULL, tid);
  int fd = append_fd();
  for (int i = 1; i <= 5; i++) {
    char b[16];
    snprintf(b, sizeof b, "l%d", i);
    append(fd, b, 1);
  }
  append(fd, "part", 0);
  tfs_follower_t *f0, *f2, *fall, *fbig;
  cr_assert_eq(tfs_follower_open(fx_store, tid, 0, &f0), 0);
  cr_assert_eq(tfs_follower_open(fx_store, tid, 2, &f2), 0);
  cr_assert_eq(tfs_follower_open(fx_store, tid, -1, &fall), 0);
  cr_assert_eq(tfs_follower_open(fx_store, tid, 100, &fbig), 0);
  lines_t a = {0}, b = {0}, c = {0}, d = {0};
  cr_assert_eq(tfs_follower_next(f0, 0, lines_cb, &a), 0, "last 0: nothing old");
  cr_assert_eq(tfs_follower_next(f0, 1, lines_cb, &a), 0, "the old partial is not new");
  /* The last two lines are "l5" and the partial "part", held back. */
  cr_assert_eq(tfs_follower_next(f2, 0, lines_cb, &b), 1);
  cr_assert_str_eq(b.text[0], "l5");
  cr_assert_eq(b.lineno[0], 5);
  cr_assert_eq(tfs_follower_next(fall, 0, lines_cb, &c), 5, "partial held back");
  cr_assert_eq(c.lineno[0], 1);
  cr_assert_eq(tfs_follower_next(fbig, 0, lines_cb, &d), 5);
  /* The partial line is completed: everyone gets it whole, once. */
  append(fd, "ial done", 1);
  append(fd, "l7", 1);
  tfs_follower_t *fs[] = {f0, f2, fall, fbig};
  lines_t *ls[] = {&a, &b, &c, &d};
  for (int i = 0; i < 4; i++) {
    int before = ls[i]->n;
    cr_assert_eq(tfs_follower_next(fs[i], 0, lines_cb, ls[i]), 2, "follower %d", i);
    cr_assert_str_eq(ls[i]->text[before], "partial done");
    cr_assert_eq(ls[i]->lineno[before], 6);
    cr_assert_eq(ls[i]->partial[before], 0);
    cr_assert_str_eq(ls[i]->text[before + 1], "l7");
    cr_assert_eq(tfs_follower_next(fs[i], 0, lines_cb, ls[i]), 0, "nothing new");
  }
  /* flush_partial delivers a trailing partial line once. */
  append(fd, "tail", 0);
  cr_assert_eq(tfs_follower_next(f0, 0, lines_cb, &a), 0);
  cr_assert_eq(tfs_follower_next(f0, 1, lines_cb, &a), 1);
  cr_assert_str_eq(a.text[a.n - 1], "tail");
  cr_assert_eq(a.partial[a.n - 1], 1);
  cr_assert_eq(a.lineno[a.n - 1], 8);
  cr_assert_eq(tfs_follower_next(f0, 1, lines_cb, &a), 0);
  for (int i = 0; i < 4; i++)
    tfs_follower_close(fs[i]);
  close(fd);
}

Test(transcript, follower_before_file_exists) {
  fx_create("x", NULL, tid);
  tfs_follower_t *f;
  cr_assert_eq(tfs_follower_open(fx_store, tid, 3, &f), 0);
  lines_t l = {0};
  cr_assert_eq(tfs_follower_next(f, 0, lines_cb, &l), 0);
  int fd = append_fd();
  append(fd, "a", 1);
  append(fd, "b", 1);
  cr_assert_eq(tfs_follower_next(f, 0, lines_cb, &l), 2, "everything in a new file is new");
  cr_assert_eq(l.lineno[0], 1);
  close(fd);
  tfs_follower_close(f);
  cr_assert_eq(tfs_follower_open(fx_store, "zzzzzzzz-zzzzzz", 0, &f), TFS_ENOTASK);
}

Test(transcript, follower_truncated_and_vanished) {
  fx_create("x", NULL, tid);
  int fd = append_fd();
  append(fd, "one", 1);
  append(fd, "two", 1);
  append(fd, "three", 1);
  tfs_follower_t *f;
  cr_assert_eq(tfs_follower_open(fx_store, tid, -1, &f), 0);
  lines_t l = {0};
  cr_assert_eq(tfs_follower_next(f, 0, lines_cb, &l), 3);
  /* Truncated below our offset: start again at line 1. */
  cr_assert_eq(ftruncate(fd, 0), 0);
  append(fd, "new1", 1);
  cr_assert_eq(tfs_follower_next(f, 0, lines_cb, &l), 1);
  cr_assert_str_eq(l.text[3], "new1");
  cr_assert_eq(l.lineno[3], 1);
  close(fd);
  /* Vanished: nothing, no error. */
  cr_assert_eq(unlink(tpath()), 0);
  cr_assert_eq(tfs_follower_next(f, 0, lines_cb, &l), 0);
  cr_assert_eq(tfs_follower_next(f, 1, lines_cb, &l), 0);
  /* Back, bigger than before: read from its start, not from the old offset. */
  fd = append_fd();
  append(fd, "reborn-1-long-line", 1);
  append(fd, "reborn-2", 1);
  cr_assert_eq(tfs_follower_next(f, 0, lines_cb, &l), 2);
  cr_assert_str_eq(l.text[4], "reborn-1-long-line");
  cr_assert_eq(l.lineno[4], 1);
  close(fd);
  /* Replaced by rename (a new inode) while we were away: from its start. */
  char other[4096];
  snprintf(other, sizeof other, "%s.new", tpath());
  cr_assert_eq(tu_write_file(other, "r1\nr2\nr3\nr4\n", 12), 0);
  cr_assert_eq(rename(other, tpath()), 0);
  cr_assert_eq(tfs_follower_next(f, 0, lines_cb, &l), 4);
  cr_assert_str_eq(l.text[6], "r1");
  cr_assert_eq(l.lineno[6], 1);
  cr_assert_eq(l.lineno[9], 4);
  tfs_follower_close(f);
}

/* Collects a huge line's pieces without keeping them. */
typedef struct {
  int pieces, finals;
  size_t total, maxpiece;
  int64_t lineno;
  int bad;
  size_t short_lines;
} big_t;

static int big_cb(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  big_t *b = arg;
  if (len > b->maxpiece)
    b->maxpiece = len;
  if (len < 100) {
    b->short_lines++;
    return 0;
  }
  if (b->lineno && lineno != b->lineno)
    b->bad = 1;
  b->lineno = lineno;
  for (size_t i = 0; i < len; i += 4096)
    if (line[i] != 'x')
      b->bad = 1;
  b->total += len;
  if (partial == 2)
    b->pieces++;
  else
    b->finals++;
  return 0;
}

Test(transcript, huge_line_in_pieces) {
  fx_create("x", NULL, tid);
  int fd = append_fd();
  size_t big = (size_t)5 * (1 << 20) + 123; /* 5 MiB + a bit */
  char *data = malloc(big);
  memset(data, 'x', big);
  append(fd, "before", 1);
  cr_assert_eq(tfs_transcript_append(fd, data, big, 1), 0);
  append(fd, "after", 1);
  big_t b = {0};
  cr_assert_eq(tfs_transcript_read(fx_store, tid, 1, -1, big_cb, &b), 3);
  cr_assert_eq(b.bad, 0);
  cr_assert_eq(b.total, big);
  cr_assert_eq(b.pieces, 5);
  cr_assert_eq(b.finals, 1);
  cr_assert_eq(b.lineno, 2);
  cr_assert_leq(b.maxpiece, (size_t)1 << 20);
  cr_assert_eq(b.short_lines, 2);

  /* The follower: a huge line still being written is handed out in pieces
   * as it grows, and completed once. */
  tfs_follower_t *f;
  cr_assert_eq(tfs_follower_open(fx_store, tid, 0, &f), 0);
  big_t g = {0};
  cr_assert_eq(tfs_transcript_append(fd, data, 3 * (1 << 20) + 5, 0), 0);
  cr_assert_eq(tfs_follower_next(f, 0, big_cb, &g), 0);
  cr_assert_eq(g.pieces, 3, "pieces of an unfinished line are delivered");
  cr_assert_eq(tfs_transcript_append(fd, data, 100, 1), 0);
  cr_assert_eq(tfs_follower_next(f, 0, big_cb, &g), 1);
  cr_assert_eq(g.finals, 1);
  cr_assert_eq(g.total, 3 * (1 << 20) + 105);
  cr_assert_eq(g.lineno, 4);
  cr_assert_eq(g.bad, 0);
  tfs_follower_close(f);
  free(data);
  close(fd);
}

Test(transcript, last_n_on_big_file) {
  fx_create("x", NULL, tid);
  int fd = append_fd();
  /* 200,000 lines, so the tail search crosses many read blocks. */
  char *buf = malloc(200000 * 8 + 1);
  size_t len = 0;
  for (int i = 1; i <= 200000; i++)
    len += (size_t)sprintf(buf + len, "%07d\n", i);
  cr_assert_eq(tfs_transcript_append(fd, buf, len, 0), 0);
  free(buf);
  tfs_follower_t *f;
  cr_assert_eq(tfs_follower_open(fx_store, tid, 3, &f), 0);
  lines_t l = {0};
  cr_assert_eq(tfs_follower_next(f, 0, lines_cb, &l), 3);
  cr_assert_str_eq(l.text[0], "0199998");
  cr_assert_eq(l.lineno[0], 199998);
  cr_assert_eq(l.lineno[2], 200000);
  tfs_follower_close(f);
  lines_t m = {0};
  cr_assert_eq(tfs_transcript_read(fx_store, tid, 123456, 2, lines_cb, &m), 2);
  cr_assert_str_eq(m.text[0], "0123456");
  cr_assert_str_eq(m.text[1], "0123457");
  close(fd);
}

/* Concurrent appenders never interleave inside a line. */
Test(transcript, concurrent_appends_whole_lines) {
  fx_create("x", NULL, tid);
  pid_t kids[4];
  for (int k = 0; k < 4; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      int fd = tfs_transcript_open_append(fx_store, tid);
      char line[600];
      memset(line, 'a' + k, sizeof line);
      for (int i = 0; i < 500; i++)
        if (tfs_transcript_append(fd, line, sizeof line, 1))
          _exit(1);
      _exit(0);
    }
    fx_track(kids[k]);
  }
  for (int k = 0; k < 4; k++)
    cr_assert_eq(fx_wait(kids[k]), 0);
  size_t len;
  char *all = tu_read_file(tpath(), &len);
  cr_assert_eq(len, 4 * 500 * 601);
  for (size_t off = 0; off < len; off += 601) {
    for (size_t i = 1; i < 600; i++)
      cr_assert_eq(all[off + i], all[off], "line at %zu is mixed", off);
    cr_assert_eq(all[off + 600], '\n');
  }
  free(all);
}

/* One definition of the last N lines: a final line without its newline
 * counts as one of them, as in tail(1). For "a\nb\nc" the last line is "c",
 * for the follower as for `taskfs logs -n 1`. */
Test(transcript, last_n_counts_a_final_partial_line) {
  fx_create("x", NULL, tid);
  int fd = append_fd();
  append(fd, "a\nb\nc", 0);
  tfs_follower_t *f1, *f2;
  cr_assert_eq(tfs_follower_open(fx_store, tid, 1, &f1), 0);
  cr_assert_eq(tfs_follower_open(fx_store, tid, 2, &f2), 0);
  lines_t a = {0}, b = {0};
  cr_assert_eq(tfs_follower_next(f1, 1, lines_cb, &a), 1, "the last line is c alone");
  cr_assert_str_eq(a.text[0], "c");
  cr_assert_eq(a.lineno[0], 3);
  cr_assert_eq(a.partial[0], 1);
  /* While the task runs the partial is held back: one line of the two. */
  cr_assert_eq(tfs_follower_next(f2, 0, lines_cb, &b), 1);
  cr_assert_str_eq(b.text[0], "b");
  append(fd, "!", 1);
  cr_assert_eq(tfs_follower_next(f2, 0, lines_cb, &b), 1);
  cr_assert_str_eq(b.text[1], "c!", "completed, delivered whole");
  cr_assert_eq(b.lineno[1], 3);
  tfs_follower_close(f1);
  tfs_follower_close(f2);
  close(fd);
}

/* The same through the binary: `logs -n 1` and `logs -n 1 -f` print the
 * same last line. */
Test(transcript, logs_and_logs_follow_agree_on_the_last_line) {
  char *out = NULL;
  const char *bin = tu_taskfs_bin();
  int rc = tu_sh(&out, "'%s' run --wait --state-dir '%s' -- printf 'a\\nb\\nc'", bin, fx_path(""));
  cr_assert_eq(rc, 0, "run: %s", out);
  char id[TFS_ID_MAX + 1];
  snprintf(id, sizeof id, "%.15s", out);
  free(out);
  rc = tu_sh(&out, "'%s' logs -n 1 --state-dir '%s' %s", bin, fx_path(""), id);
  cr_assert_eq(rc, 0);
  cr_assert_str_eq(out, "c", "logs -n 1");
  free(out);
  rc = tu_sh(&out, "'%s' logs -n 1 -f --state-dir '%s' %s", bin, fx_path(""), id);
  cr_assert_eq(rc, 0);
  cr_assert_str_eq(out, "c", "logs -n 1 -f");
  free(out);
  rc = tu_sh(&out, "'%s' logs -n 2 -f --state-dir '%s' %s", bin, fx_path(""), id);
  cr_assert_str_eq(out, "b\nc", "logs -n 2 -f");
  free(out);
  rc = tu_sh(&out, "'%s' logs -n 0 -f --state-dir '%s' %s", bin, fx_path(""), id);
  cr_assert_str_eq(out, "", "logs -n 0 -f");
  free(out);
}

/* tfs_transcript_tail and tfs_transcript_copy: the offsets and bytes the
 * faces print, byte-exact (binary and a final partial line included). */
Test(transcript, tail_offsets_and_byte_copy) {
  fx_create("x", NULL, tid);
  off_t off, size;
  int64_t line;
  cr_assert_eq(tfs_transcript_tail(fx_store, tid, 3, &off, &line, &size), 0, "nothing yet");
  cr_assert(off == 0 && line == 1 && size == 0);
  int fd = append_fd();
  append(fd, "a\nb\nc", 0);
  struct {
    int64_t n;
    off_t off;
    int64_t line;
  } want[] = {{0, 5, 3}, {1, 4, 3}, {2, 2, 2}, {3, 0, 1}, {9, 0, 1}, {-1, 0, 1}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    cr_assert_eq(tfs_transcript_tail(fx_store, tid, want[i].n, &off, &line, &size), 0);
    cr_assert_eq(off, want[i].off, "n=%lld: offset %lld", (long long)want[i].n, (long long)off);
    cr_assert_eq(line, want[i].line, "n=%lld: line %lld", (long long)want[i].n, (long long)line);
    cr_assert_eq(size, 5);
  }
  cr_assert_eq(tfs_transcript_append(fd, "\n\xff\x00z\n", 5, 0), 0);
  /* "a\nb\nc\n\xff" is 8 bytes; then NUL, "z\n": the last line is "\xff\0z". */
  cr_assert_eq(tfs_transcript_tail(fx_store, tid, 1, &off, &line, &size), 0);
  cr_assert_eq(off, 6);
  cr_assert_eq(line, 4);

  signal(SIGPIPE, SIG_IGN);
  int p[2];
  char buf[64];
  cr_assert_eq(pipe(p), 0);
  cr_assert_eq(tfs_transcript_copy(fx_store, tid, 2, p[1]), 0);
  close(p[1]);
  ssize_t n = read(p[0], buf, sizeof buf);
  close(p[0]);
  cr_assert_eq(n, 6);
  cr_assert_eq(memcmp(buf, "c\n\xff\0z\n", 6), 0, "byte-exact");
  cr_assert_eq(pipe(p), 0);
  cr_assert_eq(tfs_transcript_copy(fx_store, tid, -1, p[1]), 0);
  close(p[1]);
  n = read(p[0], buf, sizeof buf);
  cr_assert_eq(n, 10);
  close(p[0]);
  cr_assert_eq(pipe(p), 0);
  close(p[0]);
  cr_assert_eq(tfs_transcript_copy(fx_store, tid, -1, p[1]), -EPIPE, "the reader went away");
  close(p[1]);
  close(fd);
}

/* The tail bounded in bytes (the MCP transcript resource): whole lines
 * that fit, a final partial line counting as one, the window kept whole
 * when one line is longer than it. */
Test(transcript, tail_bytes_keeps_whole_lines) {
  fx_create("x", NULL, tid);
  char *text;
  size_t len;
  off_t size;
  cr_assert_eq(tfs_transcript_tail_bytes(fx_store, tid, 10, &text, &len, &size), 0);
  cr_assert(len == 0 && size == 0 && !strcmp(text, ""), "nothing yet");
  free(text);
  int fd = append_fd();
  append(fd, "aaa\nbbb\ncc", 0); /* 10 bytes */
  struct {
    size_t max;
    const char *want;
  } cases[] = {
      {100, "aaa\nbbb\ncc"},
      {10, "aaa\nbbb\ncc"},
      {9, "bbb\ncc"},
      {6, "bbb\ncc"},
      {5, "cc"},
      {2, "cc"},
      {1, "c"}, /* the last line does not fit: its last byte */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cr_assert_eq(tfs_transcript_tail_bytes(fx_store, tid, cases[i].max, &text, &len, &size), 0);
    cr_assert_str_eq(text, cases[i].want, "max %zu", cases[i].max);
    cr_assert_eq(len, strlen(cases[i].want));
    cr_assert_eq(size, 10);
    free(text);
  }
  append(fd, "", 1); /* "aaa\nbbb\ncc\n": 11 bytes */
  cr_assert_eq(tfs_transcript_tail_bytes(fx_store, tid, 3, &text, &len, &size), 0);
  cr_assert_str_eq(text, "cc\n", "a window that starts a line keeps it");
  free(text);
  cr_assert_eq(tfs_transcript_tail_bytes(fx_store, tid, 2, &text, &len, &size), 0);
  cr_assert_str_eq(text, "c\n", "one line longer than the window: its end");
  free(text);
  close(fd);
  cr_assert_eq(tfs_transcript_tail_bytes(fx_store, "zzzzzzzz-zzzzzz", 9, &text, &len, NULL),
               TFS_ENOTASK);
  cr_assert_null(text);
}

/* The ends lines_cb saw, through the follower it was given. */
typedef struct {
  lines_t l;
  tfs_follower_t *f;
  off_t end[64];
} ends_t;

static int ends_cb(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  ends_t *e = arg;
  if (e->l.n < 64)
    e->end[e->l.n] = tfs_follower_line_end(e->f);
  return lines_cb(lineno, line, len, partial, &e->l);
}

/* A reader that reconnects at a byte offset goes on at the next line
 * start, with the line numbers of the whole file, and each line's end is
 * the offset to reconnect at after it. */
Test(transcript, follower_from_a_byte_offset) {
  fx_create("x", NULL, tid);
  int fd = append_fd();
  append(fd, "one", 1);   /* [0,4) */
  append(fd, "two", 1);   /* [4,8) */
  append(fd, "three", 1); /* [8,14) */
  append(fd, "fo", 0);    /* [14,16): still being written */
  struct {
    off_t at;
    int64_t first;
    const char *text;
  } cases[] = {{0, 1, "one"}, {4, 2, "two"}, {5, 3, "three"}, {3, 2, "two"}, {8, 3, "three"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ends_t e = {0};
    cr_assert_eq(tfs_follower_open_at(fx_store, tid, cases[i].at, &e.f), 0);
    cr_assert_eq(tfs_follower_line_end(e.f) <= 8, 1);
    cr_assert_gt(tfs_follower_next(e.f, 0, ends_cb, &e), 0, "at %lld", (long long)cases[i].at);
    cr_assert_eq(e.l.lineno[0], cases[i].first, "at %lld", (long long)cases[i].at);
    cr_assert_str_eq(e.l.text[0], cases[i].text);
    cr_assert_eq(e.end[e.l.n - 1], 14, "the end of \"three\"");
    cr_assert_eq(tfs_follower_line_end(e.f), 14, "the partial line is held back");
    tfs_follower_close(e.f);
  }
  /* Inside the line being written, and past the end: that line is not
   * handed out when it is completed; the next one is. */
  off_t inside[] = {15, 16, 1000};
  for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
    ends_t e = {0};
    cr_assert_eq(tfs_follower_open_at(fx_store, tid, inside[i], &e.f), 0);
    cr_assert_eq(tfs_follower_next(e.f, 0, ends_cb, &e), 0);
    cr_assert_eq(tfs_follower_next(e.f, 1, ends_cb, &e), 0, "not even flushed");
    tfs_follower_close(e.f);
  }
  ends_t e = {0};
  cr_assert_eq(tfs_follower_open_at(fx_store, tid, 15, &e.f), 0);
  append(fd, "ur", 1);   /* "four\n" ends at 19 */
  append(fd, "five", 1); /* [19,24) */
  cr_assert_eq(tfs_follower_next(e.f, 0, ends_cb, &e), 1);
  cr_assert_str_eq(e.l.text[0], "five");
  cr_assert_eq(e.l.lineno[0], 5);
  cr_assert_eq(e.end[0], 24);
  append(fd, "six", 0);
  cr_assert_eq(tfs_follower_next(e.f, 1, ends_cb, &e), 1, "a final partial line is flushed");
  cr_assert_eq(e.end[1], 27, "a partial line has no newline to count");
  cr_assert_eq(e.l.partial[1], 1);
  tfs_follower_close(e.f);
  cr_assert_eq(tfs_follower_open_at(fx_store, tid, -1, &e.f), -EINVAL);
  cr_assert_eq(tfs_follower_open_at(fx_store, "zzzzzzzz-zzzzzz", 0, &e.f), TFS_ENOTASK);
  cr_assert_eq(tfs_follower_open_at(fx_store, "../x", 0, &e.f), TFS_EBADID);
  /* A task that wrote nothing yet: from its first line. */
  char t2[TFS_ID_MAX + 1];
  fx_create("y", NULL, t2);
  cr_assert_eq(tfs_follower_open_at(fx_store, t2, 10, &e.f), 0);
  cr_assert_eq(tfs_follower_line_end(e.f), 0);
  tfs_follower_close(e.f);
  close(fd);
}

/* A follower opened with a handle of its own (as `taskfs serve` opens one
 * on its thread pool) goes on with another handle of the store once that
 * first handle is closed: it holds nothing of the handle it was opened
 * with, and keeps its place and its line numbers. */
Test(transcript, follower_rebound_to_another_handle_of_the_store) {
  fx_create("x", NULL, tid);
  int fd = append_fd();
  append(fd, "one", 1);   /* [0,4) */
  append(fd, "two", 1);   /* [4,8) */
  append(fd, "three", 1); /* [8,14) */
  tfs_store_t *mine = NULL;
  cr_assert_eq(tfs_store_reopen(fx_store, &mine), 0);
  ends_t e = {0};
  cr_assert_eq(tfs_follower_open_at(mine, tid, 6, &e.f), 0);
  cr_assert_eq(tfs_follower_line_end(e.f), 8, "inside line 2: from line 3");
  tfs_follower_rebind(e.f, fx_store);
  tfs_store_close(mine);
  append(fd, "four", 1); /* [14,19) */
  cr_assert_eq(tfs_follower_next(e.f, 0, ends_cb, &e), 2);
  cr_assert_str_eq(e.l.text[0], "three");
  cr_assert_eq(e.l.lineno[0], 3);
  cr_assert_str_eq(e.l.text[1], "four");
  cr_assert_eq(e.l.lineno[1], 4);
  cr_assert_eq(e.end[1], 19);
  tfs_follower_close(e.f);
  close(fd);
}
