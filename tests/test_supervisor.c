/* Tests of the supervisor: capture on its own (two streams into one
 * transcript), then real supervisors started with tfs_launch() running real
 * workers: ends and reasons, stop requests over whole process trees, the
 * grace period, restarts and crash loops, lost tasks, signals to the
 * supervisor, environment values, byte-exact capture. */
#include "tests/sup_fixture.h"

#include "supervisor/internal.h"

#include <poll.h>
#include <sys/inotify.h>

TestSuite(capture, .init = sx_setup, .fini = sx_teardown, .timeout = 30);
TestSuite(supervisor, .init = sx_setup, .fini = sx_teardown, .timeout = 60);

/* ---- capture ---------------------------------------------------------- */

typedef struct {
  sup_capture_t cap;
  tfs_important_t imp;
  int fd, side;
  char tx[PATH_MAX], sidepath[PATH_MAX];
} capt_t;

static void capt_open(capt_t *t) {
  snprintf(t->tx, sizeof t->tx, "%s/transcript", sx_tmp);
  snprintf(t->sidepath, sizeof t->sidepath, "%s/stderr-lines", sx_tmp);
  t->fd = open(t->tx, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  t->side = open(t->sidepath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  cr_assert(t->fd >= 0 && t->side >= 0);
  cr_assert_eq(tfs_important_init(&t->imp, 5), 0);
  int rfd = open(t->tx, O_RDONLY | O_CLOEXEC);
  cr_assert(rfd >= 0);
  cr_assert_eq(sup_capture_init(&t->cap, t->fd, rfd, t->side, &t->imp, 0, 0), 0);
}

static void capt_close(capt_t *t) {
  sup_capture_free(&t->cap);
  tfs_important_free(&t->imp);
  close(t->fd);
  close(t->side);
}

/* Feeds data into stream st as reads would (in pieces that fit). */
static void feed(capt_t *t, int st, const char *data, size_t len) {
  while (len) {
    char *p;
    size_t n;
    sup_capture_space(&t->cap, st, &p, &n);
    cr_assert_gt(n, 0, "no room in stream %d", st);
    if (n > len)
      n = len;
    memcpy(p, data, n);
    sup_capture_commit(&t->cap, st, n);
    data += n;
    len -= n;
  }
}

static void pending(capt_t *t) {
  sup_capture_pending(&t->cap, 0);
  sup_capture_pending(&t->cap, 1);
}

Test(capture, lines_of_two_streams_stay_whole) {
  capt_t t;
  capt_open(&t);
  feed(&t, SUP_STDOUT, "a\nb", 3);
  feed(&t, SUP_STDERR, "e1\ne2\n", 6);
  feed(&t, SUP_STDOUT, "c\n", 2);
  feed(&t, SUP_STDERR, "error: e3\n", 10);
  sup_capture_eof(&t.cap, SUP_STDOUT);
  sup_capture_eof(&t.cap, SUP_STDERR);
  sup_capture_sync(&t.cap);
  sup_capture_flush_side(&t.cap);
  char *tx = tu_read_file(t.tx, NULL), *side = tu_read_file(t.sidepath, NULL);
  cr_assert_str_eq(tx, "a\ne1\ne2\nbc\nerror: e3\n");
  cr_assert_str_eq(side, "2-3\n5-5\n");
  cr_assert_eq(t.cap.lines, 5);
  cr_assert_eq(t.cap.bytes, (int64_t)strlen(tx));
  cr_assert_eq(t.imp.total, 1);
  cr_assert_eq(t.imp.first[0].line, 5);
  free(tx);
  free(side);
  capt_close(&t);
}

Test(capture, a_long_line_holds_the_other_stream_back) {
  capt_t t;
  capt_open(&t);
  size_t big = SUP_CAPTURE_BUF * 3 + 123;
  char *line = malloc(big);
  memset(line, 'x', big);
  memcpy(line, "error: huge", 11);
  feed(&t, SUP_STDOUT, line, big);
  cr_assert_eq(sup_capture_holder(&t.cap), SUP_STDOUT);
  /* stderr has a whole line meanwhile: it must wait. */
  feed(&t, SUP_STDERR, "late\n", 5);
  pending(&t);
  feed(&t, SUP_STDOUT, "end\nnext\n", 9);
  cr_assert_eq(sup_capture_holder(&t.cap), -1);
  pending(&t);
  sup_capture_sync(&t.cap);
  sup_capture_flush_side(&t.cap);
  size_t len;
  char *tx = tu_read_file(t.tx, &len);
  cr_assert_eq(len, big + 4 + 5 + 5);
  cr_assert_eq(memcmp(tx, line, big), 0);
  cr_assert_eq(memcmp(tx + big, "end\nnext\nlate\n", 14), 0);
  cr_assert_eq(t.cap.lines, 3);
  char *side = tu_read_file(t.sidepath, NULL);
  cr_assert_str_eq(side, "3-3\n");
  cr_assert_eq(t.imp.total, 1);
  cr_assert_eq(t.imp.first[0].line, 1);
  free(side);
  free(tx);
  free(line);
  capt_close(&t);
}

/* Lines of every short length among important ones, fed in reads of
 * every size: the 64-byte scan, which only counts blocks where no line of
 * three bytes or more ends, must number and feed exactly the lines a
 * byte-by-byte reading finds. */
Test(capture, short_lines_are_counted_and_long_ones_fed_in_every_block) {
  static const char *const pieces[] = {"", "y", "ab", "ERR", "error: x", "yy", "\r", "FAILED"};
  capt_t t;
  capt_open(&t);
  size_t cap = 1 << 20, len = 0;
  char *data = malloc(cap);
  int64_t *at = malloc(cap * sizeof *at); /* the important lines' numbers */
  int64_t lines = 0, important = 0;
  unsigned seed = 7;
  while (len < cap - 64) {
    const char *p = pieces[rand_r(&seed) % 8];
    size_t n = strlen(p);
    memcpy(data + len, p, n);
    len += n;
    data[len++] = '\n';
    lines++;
    if (tfs_classify_line(p, n) != TFS_LINE_PLAIN)
      at[important++] = lines;
  }
  for (size_t off = 0, step = 1; off < len; off += step, step = step * 7 % 1013 + 1)
    feed(&t, SUP_STDOUT, data + off, off + step > len ? len - off : step);
  sup_capture_eof(&t.cap, SUP_STDOUT);
  sup_capture_sync(&t.cap);
  cr_assert_eq(t.cap.lines, lines);
  cr_assert_eq(t.cap.bytes, (int64_t)len);
  cr_assert_eq(t.imp.total, important);
  for (size_t i = 0; i < t.imp.nfirst; i++)
    cr_assert_eq(t.imp.first[i].line, at[i]);
  for (size_t i = 0; i < t.imp.nlast; i++)
    cr_assert_eq(tfs_important_last(&t.imp, i)->line,
                 at[important - (int64_t)t.imp.nlast + (int64_t)i]);
  free(at);
  free(data);
  capt_close(&t);
}

Test(capture, final_partial_lines_are_kept) {
  capt_t t;
  capt_open(&t);
  feed(&t, SUP_STDOUT, "one\ntwo", 7);
  feed(&t, SUP_STDERR, "three", 5);
  sup_capture_eof(&t.cap, SUP_STDOUT);
  sup_capture_eof(&t.cap, SUP_STDERR);
  sup_capture_sync(&t.cap);
  char *tx = tu_read_file(t.tx, NULL);
  /* Two unterminated last lines never share a line: the first is ended. */
  cr_assert_str_eq(tx, "one\ntwo\nthree");
  cr_assert_eq(t.cap.lines, 3);
  free(tx);
  capt_close(&t);
}

/* ---- the process tree ------------------------------------------------ */

/* Forks child -> grandchild (in a session of its own) -> great-grandchild,
 * all sleeping; returns the child's pid. */
static pid_t make_tree(const char *marker) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    /* In the test's directory, where sx_procs_with() looks. */
    if (chdir(sx_tmp))
      _exit(127);
    if (fork() == 0) {
      setsid();
      if (fork() == 0)
        execlp("sleep", "sleep", marker, (char *)NULL);
      execlp("sleep", "sleep", marker, (char *)NULL);
      _exit(127);
    }
    execlp("sleep", "sleep", marker, (char *)NULL);
    _exit(127);
  }
  return pid;
}

static const char *g_marker;
static int marker_gone(void *arg) {
  return sx_procs_with(g_marker) == 0;
}
static int marker_count(void *arg) {
  return sx_procs_with(g_marker) >= 3;
}

/* Builds a tree marked marker and SIGKILLs our descendants with walk w,
 * sparing the tree's first process if spare is set: checks the count and
 * that the spared process lives, then that the whole tree goes. */
static void kill_tree(int w, const char *marker, int spare) {
  int (*walks[])(int, pid_t) = {sup_kill_descendants, sup_kill_descendants_scan};
  g_marker = marker;
  pid_t child = make_tree(marker);
  cr_assert(tu_wait_until(marker_count, NULL, 10000), "the tree did not start");
  cr_assert_eq(walks[w](SIGKILL, spare ? child : 0), spare ? 2 : 3, "walk %d", w);
  if (spare) {
    cr_assert_eq(waitpid(child, NULL, WNOHANG), 0, "walk %d killed the spared process", w);
    kill(child, SIGKILL);
  }
  waitpid(child, NULL, 0);
  cr_assert(tu_wait_until(marker_gone, NULL, 10000), "walk %d left a process", w);
}

Test(capture, descendants_are_found_by_both_walks) {
  kill_tree(0, "300.301", 0);
  kill_tree(1, "300.302", 0);
}

/* The sentinel is spared by the stop path: the spared process survives a
 * SIGKILL to every descendant, whichever walk finds them. */
Test(capture, the_spared_descendant_is_left_alone) {
  kill_tree(0, "300.303", 1);
  kill_tree(1, "300.304", 1);
}

/* ---- helpers for the supervised tests ---------------------------------- */

static const char *g_needle;
static int procs_present(void *arg) {
  return sx_procs_with(g_needle) >= (int)(intptr_t)arg;
}
/* Waits until at least n processes carry the needle in their command line. */
static void wait_procs(const char *needle, int n) {
  g_needle = needle;
  cr_assert(tu_wait_until(procs_present, (void *)(intptr_t)n, 20000),
            "no %d process(es) with '%s' appeared", n, needle);
}

static pid_t supervisor_pid(const char *id) {
  tfs_record_t rec = sx_load(id);
  pid_t pid = rec.supervisor_pid;
  tfs_record_free(&rec);
  cr_assert_gt(pid, 0);
  return pid;
}

static int has_stderr_line(const char *side, int64_t line) {
  long long a, b;
  int off = 0, n;
  while (sscanf(side + off, "%lld-%lld\n%n", &a, &b, &n) == 2) {
    if (line >= a && line <= b)
      return 1;
    off += n;
  }
  return 0;
}

/* ---- ends and reasons -------------------------------------------------- */

/* Tests of stderr's own pipe: `--stderr split`. */
static const tfs_task_spec_t split_spec = {.restart = TFS_RESTART_NO,
                                           .min_uptime_ms = -1,
                                           .max_restarts = -1,
                                           .grace_ms = -1,
                                           .stderr_mode = TFS_STDERR_SPLIT};

Test(supervisor, records_a_completed_task_with_its_output) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  sx_start(id, "echo out1; echo err1 >&2; echo out2", &split_spec, NULL, &rec);
  cr_assert(rec.state == TFS_RUNNING || tfs_state_terminal(rec.state));
  cr_assert_gt(rec.supervisor_pid, 0);
  cr_assert_gt(rec.worker_pid, 0);
  tfs_record_free(&rec);
  rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "state %s", tfs_state_name(rec.state));
  cr_assert_eq(rec.exit_code, 0);
  cr_assert_str_eq(rec.reason, "exited with code 0");
  cr_assert_eq(rec.lines, 3);
  cr_assert_eq(rec.bytes, 15);
  cr_assert_gt(rec.started_ms, 0);
  cr_assert_geq(rec.ended_ms, rec.started_ms);
  cr_assert_eq(rec.nexits, 1);
  cr_assert_eq(rec.exits[0].requested, 0);
  tfs_record_free(&rec);
  /* Stream attribution: exactly the "err" line came from stderr. */
  char *tx = sx_task_file(id, "transcript", NULL);
  char *side = sx_task_file(id, tfs_task_file_name(TFS_FILE_STDERR_LINES), NULL);
  cr_assert_not_null(side);
  int64_t lineno = 0;
  for (char *p = tx; *p; p = strchr(p, '\n') + 1) {
    lineno++;
    cr_assert_eq(has_stderr_line(side, lineno), !strncmp(p, "err", 3), "line %lld: %s",
                 (long long)lineno, p);
  }
  cr_assert_eq(lineno, 3);
  free(tx);
  free(side);
}

Test(supervisor, failures_say_why) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  sx_start(a, "exit 3", NULL, NULL, NULL);
  sx_start(b, "kill -SEGV $$", NULL, NULL, NULL);
  /* A signal glibc has no abbreviation for is named as kill -l names it. */
  char c[TFS_ID_MAX + 1], cmd[64];
  snprintf(cmd, sizeof cmd, "kill -%d $$", SIGRTMIN + 2);
  sx_start(c, cmd, NULL, NULL, NULL);
  tfs_record_t ra = sx_wait(a, 20000), rb = sx_wait(b, 20000), rc = sx_wait(c, 20000);
  cr_assert_eq(ra.state, TFS_FAILED);
  cr_assert_eq(ra.exit_code, 3);
  cr_assert_str_eq(ra.reason, "exited with code 3");
  cr_assert_eq(rb.state, TFS_FAILED);
  cr_assert_eq(rb.signal, SIGSEGV);
  /* The core words what a signal means (and "; core dumped" where the
   * limits let the kernel write one). */
  cr_assert(strncmp(rb.reason, "killed by signal SIGSEGV (segmentation fault: ", 46) == 0,
            "reason: %s", rb.reason);
  cr_assert_eq(rc.signal, SIGRTMIN + 2);
  cr_assert_str_eq(rc.reason, "killed by signal SIGRTMIN+2");
  tfs_record_free(&ra);
  tfs_record_free(&rb);
  tfs_record_free(&rc);
}

Test(supervisor, a_command_that_cannot_start_fails_with_a_reason) {
  char id[TFS_ID_MAX + 1];
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/not-executable", sx_tmp);
  tu_write_file(path, "#!/bin/sh\n", 10);
  struct {
    char *argv0;
    const char *cwd;
    const char *expect;
  } cases[] = {
      {"taskfs-no-such-command-xyz", NULL, "command not found"},
      {"true", "/nonexistent/dir/xyz", "working directory '/nonexistent/dir/xyz' is not usable"},
      {path, NULL, "not executable"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *argv[] = {cases[i].argv0, NULL};
    tfs_task_spec_t spec = {
        .cwd = cases[i].cwd, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
    sx_create(id, argv, &spec);
    tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
    tfs_record_t rec;
    cr_assert_eq(tfs_launch(sx_store, id, &lo, &rec), 0);
    /* tfs_launch returns once the task left queued: here, with the end. */
    cr_assert_eq(rec.state, TFS_FAILED, "case %zu: %s", i, tfs_state_name(rec.state));
    cr_assert_eq(rec.exit_code, 127);
    cr_assert_eq(rec.nexits, 0);
    cr_assert_not_null(strstr(rec.reason, "cannot start"), "reason: %s", rec.reason);
    cr_assert_not_null(strstr(rec.reason, cases[i].expect), "reason: %s", rec.reason);
    tfs_record_free(&rec);
  }
}

/* The worker's child looks its command up itself (supervisor/spawn.c,
 * exec_search): in the PATH of the worker's environment, not the
 * supervisor's; an entry that is not executable is passed over for a
 * later one that is, as execvp does, and reported only if none runs; a
 * file without a format the kernel knows runs as a shell script. */
Test(supervisor, the_command_is_looked_up_in_the_workers_own_path) {
  char d1[PATH_MAX], d2[PATH_MAX], f[PATH_MAX + 32], pathvar[3 * PATH_MAX];
  snprintf(d1, sizeof d1, "%s/bin1", sx_tmp);
  snprintf(d2, sizeof d2, "%s/bin2", sx_tmp);
  cr_assert_eq(mkdir(d1, 0700), 0);
  cr_assert_eq(mkdir(d2, 0700), 0);
  /* bin1/tfs-lookup is not executable; bin2/tfs-lookup is a script with
   * no #! line; bin1/tfs-only-bad exists nowhere else. */
  snprintf(f, sizeof f, "%s/tfs-lookup", d1);
  tu_write_file(f, "echo wrong\n", 11);
  chmod(f, 0600);
  snprintf(f, sizeof f, "%s/tfs-only-bad", d1);
  tu_write_file(f, "echo wrong\n", 11);
  chmod(f, 0600);
  snprintf(f, sizeof f, "%s/tfs-lookup", d2);
  tu_write_file(f, "echo \"found $1\" > seen\n", 23);
  chmod(f, 0700);
  snprintf(pathvar, sizeof pathvar, "PATH=%s:%s:/usr/bin:/bin", d1, d2);
  char *env[] = {pathvar, NULL};
  char *names[] = {"PATH", NULL};
  tfs_task_spec_t spec = {
      .env_names = names, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  char id[TFS_ID_MAX + 1];
  char *argv[] = {"tfs-lookup", "it", NULL};
  sx_start_argv(id, argv, &spec, env, NULL);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  snprintf(f, sizeof f, "%s/seen", sx_tmp);
  char *seen = tu_read_file(f, NULL);
  cr_assert_str_eq(seen, "found it\n");
  free(seen);
  /* Not in the supervisor's PATH: without the override it is not found. */
  sx_start_argv(id, argv, NULL, NULL, NULL);
  rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_FAILED);
  cr_assert_not_null(strstr(rec.reason, "command not found"), "reason: %s", rec.reason);
  tfs_record_free(&rec);
  char *bad[] = {"tfs-only-bad", NULL};
  sx_start_argv(id, bad, &spec, env, NULL);
  rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_FAILED);
  cr_assert_eq(rec.exit_code, 127);
  cr_assert_not_null(strstr(rec.reason, "not executable"), "reason: %s", rec.reason);
  tfs_record_free(&rec);
}

Test(supervisor, a_supervisor_that_dies_before_starting_fails_the_task) {
  char id[TFS_ID_MAX + 1];
  char *argv[] = {"true", NULL};
  sx_create(id, argv, NULL);
  /* "true" execs fine but never takes the task: the launcher notices. */
  tfs_launch_opts_t lo = {.wait_ms = 30000, .exe = "/bin/true"};
  tfs_record_t rec;
  cr_assert_eq(tfs_launch(sx_store, id, &lo, &rec), 0);
  cr_assert_eq(rec.state, TFS_FAILED, "state %s", tfs_state_name(rec.state));
  cr_assert_not_null(strstr(rec.reason, "supervisor exited before starting"), "%s", rec.reason);
  tfs_record_free(&rec);
}

/* ---- capture through real pipes ------------------------------------------ */

Test(supervisor, binary_output_and_a_last_line_without_newline_are_exact) {
  char id[TFS_ID_MAX + 1];
  sx_start(id, "printf 'a\\000b\\377\\376\\r\\n\\n\\300last'", NULL, NULL, NULL);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  cr_assert_eq(rec.lines, 3);
  tfs_record_free(&rec);
  size_t len;
  char *tx = sx_task_file(id, "transcript", &len);
  const char want[] = "a\0b\377\376\r\n\n\300last";
  cr_assert_eq(len, sizeof want - 1);
  cr_assert_eq(memcmp(tx, want, len), 0);
  free(tx);
}

Test(supervisor, two_hundred_megabytes_are_captured_byte_exact, .timeout = 120) {
  char id[TFS_ID_MAX + 1];
  /* A fixed file, so the task's output can be compared to it directly. */
  cr_assert_eq(tu_sh(NULL, "head -c 200M /dev/urandom > '%s/data'", sx_tmp), 0);
  sx_start(id, "cat data", NULL, NULL, NULL);
  tfs_record_t rec = sx_wait(id, 100000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  cr_assert_eq(rec.bytes, 200 << 20);
  tfs_record_free(&rec);
  cr_assert_eq(tu_sh(NULL, "cmp -s '%s/data' '%s/tasks/%s/transcript'", sx_tmp, sx_state, id), 0,
               "transcript differs from the data");
}

Test(supervisor, early_errors_survive_a_million_later_lines, .timeout = 60) {
  char id[TFS_ID_MAX + 1];
  sx_start(id,
           "awk 'BEGIN { for (i = 1; i <= 1000; i++) print \"error: early failure \" i;"
           " for (i = 0; i < 1000000; i++) print \"progress \" i }'",
           NULL, NULL, NULL);
  tfs_record_t rec = sx_wait(id, 50000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  cr_assert_eq(rec.lines, 1001000);
  cr_assert_geq(rec.important.total, 1000);
  cr_assert_eq(rec.important.nfirst, (size_t)rec.important.k);
  for (size_t i = 0; i < rec.important.nfirst; i++) {
    char want[64];
    snprintf(want, sizeof want, "error: early failure %zu", i + 1);
    cr_assert_eq(rec.important.first[i].line, (int64_t)i + 1);
    cr_assert_str_eq(rec.important.first[i].text, want);
  }
  tfs_record_free(&rec);
}

Test(supervisor, a_huge_line_does_not_swallow_the_other_stream) {
  char id[TFS_ID_MAX + 1];
  sx_start(id, "echo before >&2; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo after >&2",
           &split_spec, NULL, NULL);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  cr_assert_eq(rec.lines, 3);
  tfs_record_free(&rec);
  size_t len;
  char *tx = sx_task_file(id, "transcript", &len);
  cr_assert_eq(len, 7 + 3000001 + 6);
  /* "before" and the long line come from two pipes: either order is right,
   * as long as no line is split. "after" is written once the long line has
   * ended, and stderr waits while it is open, so it comes last. */
  size_t x = !memcmp(tx, "before\n", 7) ? 7 : 0;
  int64_t before_line = x ? 1 : 2;
  for (size_t i = x; i < x + 3000000; i++)
    if (tx[i] != 'x')
      cr_assert_fail("byte %zu is %d", i, tx[i]);
  if (x)
    cr_assert_eq(memcmp(tx + x + 3000000, "\nafter\n", 7), 0);
  else
    cr_assert_eq(memcmp(tx + 3000000, "\nbefore\nafter\n", 14), 0);
  free(tx);
  char *side = sx_task_file(id, tfs_task_file_name(TFS_FILE_STDERR_LINES), NULL);
  cr_assert(has_stderr_line(side, before_line) && !has_stderr_line(side, 3 - before_line) &&
                has_stderr_line(side, 3),
            "stderr-lines: %s", side);
  free(side);
}

Test(supervisor, a_flood_of_output_saves_the_record_at_a_bounded_rate) {
  char id[TFS_ID_MAX + 1], dir[PATH_MAX + 64];
  char *argv[] = {"sh", "-c", "yes | head -c 200M", NULL};
  sx_create(id, argv, NULL);
  snprintf(dir, sizeof dir, "%s/tasks/%s", sx_state, id);
  int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (ino < 0)
    cr_skip_test("no inotify instance left for this user (%s)", strerror(errno));
  cr_assert_geq(inotify_add_watch(ino, dir, IN_MOVED_TO), 0, "%s", strerror(errno));
  int64_t t0 = tfs_now_ms();
  tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
  tfs_record_t rec;
  cr_assert_eq(tfs_launch(sx_store, id, &lo, &rec), 0);
  tfs_record_free(&rec);
  /* Every save is a rename onto record.json. inotify merges identical
   * unread events (the rename cookie is not compared), so read them as
   * they come. */
  char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
  int saves = 0;
  int64_t t1;
  for (;;) {
    struct pollfd pfd = {.fd = ino, .events = POLLIN};
    poll(&pfd, 1, 20);
    ssize_t n;
    while ((n = read(ino, buf, sizeof buf)) > 0)
      for (char *p = buf; p < buf + n;) {
        struct inotify_event *ev = (struct inotify_event *)p;
        saves += ev->len && !strcmp(ev->name, "record.json");
        p += sizeof *ev + ev->len;
      }
    rec = sx_load(id);
    int ended = tfs_state_terminal(rec.state);
    t1 = tfs_now_ms();
    if (ended) {
      cr_assert_eq(rec.state, TFS_COMPLETED);
      cr_assert_eq(rec.lines, 100 << 20);
    }
    tfs_record_free(&rec);
    if (ended)
      break;
    cr_assert_lt(t1 - t0, 50000, "the flood did not end");
  }
  close(ino);
  /* At most one counter save per 250 ms tick, plus the state changes
   * (running, the end) and slack for a tick at each edge. */
  int64_t bound = (t1 - t0) / 250 + 6;
  cr_assert_leq(saves, bound, "%d saves in %lld ms", saves, (long long)(t1 - t0));
  cr_assert_geq(saves, 2, "%d saves in %lld ms", saves, (long long)(t1 - t0));
}

Test(supervisor, a_long_line_waiting_for_the_other_stream_does_not_deadlock) {
  char id[TFS_ID_MAX + 1];
  /* One process: a 600 kB stdout line left open (more than the line
   * buffer), then 2 MB on stderr (more than a pipe holds, even grown),
   * then the end of the line. Holding stderr back until the stdout line
   * ends would block the writer for ever. */
  sx_start(id, "head -c 600000 /dev/zero | tr '\\0' x; yes e | head -c 2000000 >&2; echo end",
           &split_spec, NULL, NULL);
  tfs_record_t rec = sx_wait(id, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  size_t len;
  char *tx = sx_task_file(id, "transcript", &len);
  /* Every byte is there, plus the one '\n' that cut the long line. */
  cr_assert_eq(len, 600000 + 1 + 2000000 + 4);
  size_t x = 0, e = 0, nl = 0;
  for (size_t i = 0; i < len; i++) {
    x += tx[i] == 'x';
    e += tx[i] == 'e';
    nl += tx[i] == '\n';
  }
  cr_assert_eq(x, 600000);
  cr_assert_eq(e, 1000000 + 1); /* and the one of "end" */
  cr_assert_eq(nl, 1000000 + 2);
  cr_assert_eq(memcmp(tx + len - 4, "end\n", 4), 0);
  /* stderr's lines stayed whole: no "e" line was split by x bytes. */
  cr_assert_null(strstr(tx, "ex"));
  cr_assert_eq(strstr(tx, "xe"), tx + len - 5, "only the line's own end: ...xend");
  free(tx);
}

/* ---- stop requests ----------------------------------------------------- */

static const char *g_id;
static int cancel_cleared(void *arg) {
  return tfs_cancel_query(sx_store, g_id, NULL, 0, NULL) == 0;
}

Test(supervisor, a_stop_request_ends_the_whole_tree) {
  char id[TFS_ID_MAX + 1];
  sx_start(id, "(sleep 300.123 &); sleep 300.123", NULL, NULL, NULL);
  wait_procs("sleep 300.123", 2);
  cr_assert_eq(tfs_cancel_request(sx_store, id, "tester 1"), 0);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_CANCELLED, "state %s", tfs_state_name(rec.state));
  cr_assert_str_eq(rec.cancel_by, "tester 1");
  cr_assert_gt(rec.cancel_ms, 0);
  cr_assert_not_null(strstr(rec.reason, "tester 1"), "reason: %s", rec.reason);
  cr_assert_eq(rec.exits[rec.nexits - 1].requested, 1);
  tfs_record_free(&rec);
  cr_assert_eq(sx_procs_with("sleep 300.123"), 0, "a process was left behind");
  /* Acted on, so cleared (right after the final record is saved); and a
   * finished task takes no new request. */
  g_id = id;
  cr_assert(tu_wait_until(cancel_cleared, NULL, 10000), "the stop request was not cleared");
  cr_assert_eq(tfs_cancel_request(sx_store, id, "late"), TFS_EFINISHED);
}

Test(supervisor, processes_left_behind_by_a_finished_worker_are_stopped) {
  char id[TFS_ID_MAX + 1];
  sx_start(id, "(sleep 300.128 &); sleep 0.2; echo hi", NULL, NULL, NULL);
  tfs_record_t rec = sx_wait(id, 20000);
  /* The worker's own end decides the state; its leftovers are gone. */
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s: %s", tfs_state_name(rec.state), rec.reason);
  tfs_record_free(&rec);
  cr_assert_eq(sx_procs_with("sleep 300.128"), 0, "a process was left behind");
}

Test(supervisor, a_worker_ignoring_sigterm_is_killed_after_the_grace_period) {
  char id[TFS_ID_MAX + 1];
  tfs_task_spec_t spec = {.min_uptime_ms = -1, .max_restarts = -1, .grace_ms = 300};
  sx_start(id, "trap '' TERM; sleep 300.124; sleep 300.124", &spec, NULL, NULL);
  /* Two: the shell (its command line names the marker from its start)
   * and its first sleep, which runs only once the trap is set. One would
   * let the stop arrive before the trap, and the shell die of SIGTERM. */
  wait_procs("sleep 300.124", 2);
  cr_assert_eq(tfs_cancel_request(sx_store, id, "tester"), 0);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_CANCELLED);
  cr_assert_eq(rec.signal, SIGKILL);
  cr_assert_not_null(strstr(rec.reason, "grace period"), "reason: %s", rec.reason);
  tfs_record_free(&rec);
  cr_assert_eq(sx_procs_with("sleep 300.124"), 0, "a process was left behind");
}

Test(supervisor, sighup_does_not_stop_the_supervisor_but_sigterm_does) {
  char id[TFS_ID_MAX + 1];
  sx_start(id, "sleep 300.126", NULL, NULL, NULL);
  wait_procs("sleep 300.126", 1);
  pid_t sup = supervisor_pid(id);
  cr_assert_eq(kill(sup, SIGHUP), 0);
  usleep(300 * 1000);
  cr_assert_eq(tfs_task_alive(sx_store, id), 1);
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.state, TFS_RUNNING);
  tfs_record_free(&rec);
  cr_assert_geq(sx_procs_with("sleep 300.126"), 1);

  cr_assert_eq(kill(sup, SIGTERM), 0);
  rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_CANCELLED);
  cr_assert_not_null(strstr(rec.reason, "SIGTERM to the supervisor"), "reason: %s", rec.reason);
  tfs_record_free(&rec);
  cr_assert_eq(sx_procs_with("sleep 300.126"), 0);
}

/* ---- restarts ---------------------------------------------------------- */

Test(supervisor, on_failure_restarts_end_in_a_crash_loop) {
  char id[TFS_ID_MAX + 1];
  char *argv[] = {"false", NULL};
  tfs_task_spec_t spec = {.restart = TFS_RESTART_ON_FAILURE,
                          .min_uptime_ms = 10000,
                          .max_restarts = -1,
                          .grace_ms = -1,
                          .crash_loop_exits = 6};
  sx_create(id, argv, &spec);
  tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
  tfs_record_t rec;
  cr_assert_eq(tfs_launch(sx_store, id, &lo, &rec), 0);
  tfs_record_free(&rec);
  rec = sx_wait(id, 30000);
  cr_assert_eq(rec.state, TFS_FAILED);
  cr_assert_str_eq(rec.reason,
                   "crash loop: 6 exits within min-uptime 10000 ms in a row (last: exit code 1)");
  cr_assert_eq(rec.restarts, 5);
  /* The record keeps the last TFS_LAST_EXITS of the six: workers 2 to 6. */
  cr_assert_eq(rec.nexits, TFS_LAST_EXITS);
  for (int i = 0; i < rec.nexits; i++) {
    cr_assert_eq(rec.exits[i].exit_code, 1);
    cr_assert_eq(rec.exits[i].requested, 0);
  }
  /* Backing off, 100 ms doubling: the record shows each restart at least
   * its back-off after the exit before it (both times are the
   * supervisor's, so this holds however loaded the machine is). exits[i]
   * is worker i + 2, started after the back-off 100 << i. */
  for (int i = 1; i < rec.nexits; i++) {
    int64_t gap = rec.exits[i].started_ms - rec.exits[i - 1].ended_ms;
    cr_assert_geq(gap, 100 << i, "worker %d came %lld ms after the exit before it", i + 2,
                  (long long)gap);
  }
  tfs_record_free(&rec);
}

static int restarts_at_least(void *arg) {
  tfs_record_t rec;
  memset(&rec, 0, sizeof rec);
  if (tfs_task_load(sx_store, g_id, &rec))
    return 0;
  int ok = rec.restarts >= (int)(intptr_t)arg;
  tfs_record_free(&rec);
  return ok;
}

Test(supervisor, a_stop_request_during_back_off_is_a_cancel_not_a_crash) {
  char id[TFS_ID_MAX + 1];
  tfs_task_spec_t spec = {.restart = TFS_RESTART_ON_FAILURE,
                          .min_uptime_ms = 60000,
                          .max_restarts = -1,
                          .crash_loop_exits = 101,
                          .grace_ms = -1};
  sx_start(id, "exit 1", &spec, NULL, NULL);
  g_id = id;
  /* After 4 restarts the back-off is 1.6 s: nearly all the time is spent
   * waiting between workers. */
  cr_assert(tu_wait_until(restarts_at_least, (void *)4, 20000));
  cr_assert_eq(tfs_cancel_request(sx_store, id, "tester"), 0);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_CANCELLED, "state %s: %s", tfs_state_name(rec.state), rec.reason);
  cr_assert_null(strstr(rec.reason, "crash"), "reason: %s", rec.reason);
  cr_assert_str_eq(rec.cancel_by, "tester");
  tfs_record_free(&rec);
}

Test(supervisor, a_worker_outliving_min_uptime_resets_the_crash_count) {
  char id[TFS_ID_MAX + 1];
  tfs_task_spec_t spec = {.restart = TFS_RESTART_ALWAYS,
                          .min_uptime_ms = 100,
                          .max_restarts = -1,
                          .grace_ms = -1,
                          .crash_loop_exits = 2};
  sx_start(id, "sleep 0.25; exit 1", &spec, NULL, NULL);
  g_id = id;
  /* With max-quick-restarts 1, three restarts prove the count was reset. */
  cr_assert(tu_wait_until(restarts_at_least, (void *)3, 20000));
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.state, TFS_RUNNING);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_cancel_request(sx_store, id, "tester"), 0);
  rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_CANCELLED);
  tfs_record_free(&rec);
}

/* ---- lost tasks -------------------------------------------------------- */

static int not_alive(void *arg) {
  return tfs_task_alive(sx_store, arg) == 0;
}

/* The worker itself dies with its supervisor (its death signal, and the
 * sentinel for its process group), but a process that left the group and
 * the session (setsid, as a daemon does) is out of reach of both and runs
 * on: the task must read lost all the same, because no process of the task
 * ever held the lock. */
/* Counts processes that are the escaped sleep itself, in a session of their
 * own: until setsid(1) has called setsid() and exec'd, the process still
 * belongs to the worker's group, and the sentinel would rightly take it. */
static int escaped_cmd(pid_t pid, const char *name, void *arg) {
  char buf[4096];
  if (sx_cmdline(name, buf, sizeof buf) || sx_zombie(name) || !in_test_dir(name))
    return 0;
  return !strncmp(buf, (const char *)arg, strlen(arg)) && getsid(pid) == pid;
}
static int escaped_present(void *arg) {
  return sx_each_proc(escaped_cmd, arg) >= 1;
}

Test(supervisor, a_killed_supervisor_leaves_a_lost_task_even_if_its_worker_lives) {
  char id[TFS_ID_MAX + 1];
  sx_start(id, "setsid sleep 300.125 & wait", NULL, NULL, NULL);
  wait_procs("sleep 300.125", 1);
  cr_assert(tu_wait_until(escaped_present, "sleep 300.125", 20000),
            "the escaped sleep never ran in a session of its own");
  cr_assert_eq(tfs_task_alive(sx_store, id), 1);
  cr_assert_eq(kill(supervisor_pid(id), SIGKILL), 0);
  /* The escaped process keeps running, but it never held the lock. */
  cr_assert(tu_wait_until(not_alive, id, 20000), "the task still reads alive");
  cr_assert_geq(sx_procs_with("sleep 300.125"), 1, "the escaped process should still run");
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.state, TFS_LOST);
  cr_assert_gt(rec.alive_ms, 0);
  tfs_record_free(&rec);
  char *raw = sx_task_file(id, "record.json", NULL);
  cr_assert_not_null(strstr(raw, "\"running\""), "nothing is written by a reader");
  free(raw);
  cr_assert_eq(tfs_task_settle_lost(sx_store, id), 1);
  cr_assert_eq(tfs_task_settle_lost(sx_store, id), 0);
  raw = sx_task_file(id, "record.json", NULL);
  cr_assert_not_null(strstr(raw, "\"lost\""));
  free(raw);
  sx_kill_procs_with("sleep 300.125");
}

/* ---- environment ------------------------------------------------------- */

Test(supervisor, env_values_reach_the_worker_but_never_the_disk) {
  char id[TFS_ID_MAX + 1];
  char *env[] = {"TFS_TEST_SECRET=s3cr3t-v4lue-9876", "TFS_OTHER=1", NULL};
  char *names[] = {"TFS_TEST_SECRET", "TFS_OTHER", NULL};
  tfs_task_spec_t spec = {
      .env_names = names, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  /* The worker writes what it sees outside the store (its cwd is the test
   * directory); the script itself must not contain the value. */
  sx_start(id, "printf '%s %s' \"$TFS_TEST_SECRET\" \"$TFS_OTHER\" > seen", &spec, env, NULL);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/seen", sx_tmp);
  char *seen = tu_read_file(path, NULL);
  cr_assert_str_eq(seen, "s3cr3t-v4lue-9876 1", "the worker did not see the values");
  free(seen);
  cr_assert_eq(rec.env_count, 2);
  cr_assert_str_eq(rec.env_names[0], "TFS_TEST_SECRET");
  tfs_record_free(&rec);
  cr_assert_eq(tu_sh(NULL, "grep -r -q -a s3cr3t-v4lue '%s'", sx_state), 1,
               "the secret value was written into the store");
}

/* ---- a full disk ------------------------------------------------------- */

Test(supervisor, a_full_disk_drops_output_but_the_end_is_recorded) {
  char small[PATH_MAX], dir[PATH_MAX + 16], id[TFS_ID_MAX + 1];
  snprintf(small, sizeof small, "%s/small", sx_tmp);
  snprintf(dir, sizeof dir, "%s/state", small);
  mkdir(small, 0700);
  if (tu_sh(NULL, "mount -t tmpfs -o size=1m tmpfs '%s' 2>/dev/null", small) != 0)
    cr_skip_test("cannot mount a small tmpfs (not root?)");
  tfs_store_t *st;
  cr_assert_eq(tfs_store_open(dir, &st), 0);
  char *argv[] = {"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a | fold -w 99; echo done",
                  NULL};
  tfs_task_spec_t spec = {
      .argv = argv, .cwd = sx_tmp, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  int existed;
  cr_assert_eq(tfs_task_create(st, &spec, id, &existed), 0);
  tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
  tfs_record_t rec;
  cr_assert_eq(tfs_launch(st, id, &lo, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_wait_end(st, id, 30000, NULL, &rec), 0);
  /* The worker ran to its end; the record says what was lost and why. */
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s: %s", tfs_state_name(rec.state), rec.reason);
  cr_assert_not_null(strstr(rec.reason, "the disk is full"), "reason: %s", rec.reason);
  char path[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s/tasks/%s/transcript", dir, id);
  struct stat sb;
  cr_assert_eq(stat(path, &sb), 0);
  cr_assert_eq(rec.bytes, (int64_t)sb.st_size, "bytes counted %lld, file %lld",
               (long long)rec.bytes, (long long)sb.st_size);
  cr_assert_lt(rec.bytes, 3000000);
  tfs_record_free(&rec);
  tfs_store_close(st);
  tu_sh(NULL, "umount -l '%s'", small);
}

/* ---- a hostile store ------------------------------------------------------ */

Test(supervisor, fifos_planted_as_its_files_never_hang_it) {
  static const tfs_task_file_t files[] = {TFS_FILE_SUPERVISOR_LOG, TFS_FILE_TRANSCRIPT,
                                          TFS_FILE_STDERR_LINES};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    const char *name = tfs_task_file_name(files[i]);
    char id[TFS_ID_MAX + 1], path[PATH_MAX + 64];
    char *argv[] = {"true", NULL};
    sx_create(id, argv, NULL);
    snprintf(path, sizeof path, "%s/tasks/%s/%s", sx_state, id, name);
    cr_assert_eq(mkfifo(path, 0600), 0);
    tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
    tfs_record_t rec;
    int err = tfs_launch(sx_store, id, &lo, &rec);
    /* Refused at once (the log), or the supervisor runs (stderr-lines is
     * optional) or gives up without starting the task (the transcript):
     * what matters is that nothing hangs. */
    if (i == 1)
      cr_assert(err == 0 && rec.state == TFS_FAILED && strstr(rec.reason, "not a regular file"),
                "transcript as a FIFO: %s", rec.reason ? rec.reason : tfs_state_name(rec.state));
    if (err == 0 && !tfs_state_terminal(rec.state)) {
      tfs_record_free(&rec);
      cr_assert_eq(tfs_task_wait_end(sx_store, id, 20000, NULL, &rec), 0, "%s as a FIFO: hung",
                   name);
    }
    tfs_record_free(&rec);
  }
}

/* ---- tfs_task_start -------------------------------------------------------- */

Test(supervisor, task_start_runs_a_key_once_and_unwedges_it) {
  char id1[TFS_ID_MAX + 1], id2[TFS_ID_MAX + 1];
  char *argv[] = {"sh", "-c", "echo ran >> side-effect", NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = sx_tmp,
                          .key = "start-key",
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1};
  /* A launcher that died after creating: a queued task under the key. */
  int existed;
  cr_assert_eq(tfs_task_create(sx_store, &spec, id1, &existed), 0);
  tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
  tfs_start_t st;
  cr_assert_eq(tfs_task_start(sx_store, &spec, &lo, &st), 0);
  cr_assert_str_eq(st.id, id1);
  cr_assert_eq(st.existed, 1);
  cr_assert_neq(st.rec.state, TFS_QUEUED, "the wedged task was not launched");
  tfs_start_free(&st);
  tfs_record_t rec = sx_wait(id1, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  /* Ended: starting the same again runs nothing. */
  cr_assert_eq(tfs_task_start(sx_store, &spec, &lo, &st), 0);
  cr_assert_str_eq(st.id, id1);
  cr_assert_eq(st.rec.state, TFS_COMPLETED);
  cr_assert(st.ended && !st.launch);
  tfs_start_free(&st);
  (void)id2;
  sx_assert_file("side-effect", "ran\n");
}

/* ---- the doorbell ----------------------------------------------------- */

/* How many inotify instances pid holds (its fds that read anon_inode:inotify). */
static int inotify_fds(pid_t pid) {
  char dir[64], link[PATH_MAX + 64], target[256];
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    snprintf(link, sizeof link, "%s/%s", dir, de->d_name);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len > 0) {
      target[len] = '\0';
      n += strstr(target, "inotify") != NULL;
    }
  }
  closedir(d);
  return n;
}

static char g_log_needle[64];
static const char *g_log_id;
static int log_says(void *arg) {
  char *log = sx_task_file(g_log_id, "supervisor.log", NULL);
  int hit = log && strstr(log, g_log_needle);
  free(log);
  return hit;
}

/* Asserts that supervisor.log of id says how the stop request was noticed. */
static void assert_noticed_via(const char *id, const char *via) {
  g_log_id = id;
  snprintf(g_log_needle, sizeof g_log_needle, "noticed via %s", via);
  char *log = NULL;
  if (!tu_wait_until(log_says, NULL, 10000))
    log = sx_task_file(id, tfs_task_file_name(TFS_FILE_SUPERVISOR_LOG), NULL);
  cr_assert_null(log, "supervisor.log of %s does not say '%s': %s", id, g_log_needle, log);
}

static int doorbell_mode(const char *id, mode_t *mode) {
  char path[PATH_MAX];
  struct stat st;
  snprintf(path, sizeof path, "%s/tasks/%s/%s", sx_state, id,
           tfs_task_file_name(TFS_FILE_DOORBELL));
  if (lstat(path, &st) < 0)
    return -errno;
  *mode = st.st_mode;
  return 0;
}

/* TASKFS_NO_INOTIFY in the supervisor's own environment (the launcher's:
 * a --env override reaches only the worker) leaves the poll alone. */
Test(supervisor, without_the_doorbell_the_poll_still_stops_the_task) {
  char id[TFS_ID_MAX + 1];
  setenv("TASKFS_NO_INOTIFY", "1", 1);
  sx_start(id, "sleep 300.127", NULL, NULL, NULL);
  unsetenv("TASKFS_NO_INOTIFY");
  wait_procs("sleep 300.127", 1);
  mode_t m;
  cr_assert_eq(doorbell_mode(id, &m), -ENOENT, "a doorbell was made");
  cr_assert_eq(tfs_cancel_request(sx_store, id, "poller"), 0);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_CANCELLED);
  tfs_record_free(&rec);
  assert_noticed_via(id, "poll");
}

/* More supervisors than the default per-user inotify limit (128), with that
 * limit left as it is: none holds an inotify instance, and a stop request to the last one wakes it
 * through its doorbell (the poll is made too slow to be the one that notices). */
Test(supervisor, two_hundred_supervisors_hold_no_inotify_and_wake_by_doorbell, .timeout = 180) {
  enum { N = 200 };
  static char ids[N][TFS_ID_MAX + 1];
  /* In our environment, which the supervisors inherit (a --env override
   * would reach only the workers). */
  setenv("TASKFS_CANCEL_POLL_MS", "3600000", 1);
  for (int i = 0; i < N; i++)
    sx_start(ids[i], "exec sleep 300.133", NULL, NULL, NULL);
  unsetenv("TASKFS_CANCEL_POLL_MS");
  for (int i = 0; i < N; i++) {
    pid_t sup = supervisor_pid(ids[i]);
    cr_assert_eq(inotify_fds(sup), 0, "the supervisor of task %d (pid %d) holds inotify", i,
                 (int)sup);
    mode_t m;
    cr_assert_eq(doorbell_mode(ids[i], &m), 0);
    cr_assert(S_ISFIFO(m), "task %d: the doorbell is not a FIFO", i);
  }
  /* Not asserted: other programs of this user (other test runs, mounts)
   * share the budget. What is asserted above is that ours take none of it. */
  int ino = inotify_init1(IN_CLOEXEC);
  cr_log_info("with %d supervisors running, this user %s make an inotify instance", N,
              ino >= 0 ? "can still" : "cannot");
  if (ino >= 0)
    close(ino);

  const char *last = ids[N - 1];
  cr_assert_eq(tfs_cancel_request(sx_store, last, "doorbell test"), 0);
  tfs_record_t rec = sx_wait(last, 30000);
  cr_assert_eq(rec.state, TFS_CANCELLED, "state %s", tfs_state_name(rec.state));
  tfs_record_free(&rec);
  assert_noticed_via(last, "doorbell");
  mode_t m;
  cr_assert_eq(doorbell_mode(last, &m), -ENOENT, "the doorbell outlived its supervisor");

  for (int i = 0; i < N - 1; i++)
    cr_assert_eq(tfs_cancel_request(sx_store, ids[i], "cleanup"), 0);
  for (int i = 0; i < N - 1; i++) {
    rec = sx_wait(ids[i], 60000);
    cr_assert_eq(rec.state, TFS_CANCELLED);
    tfs_record_free(&rec);
  }
  cr_assert_eq(sx_procs_with("sleep 300.133"), 0);
}

/* A regular file or a symlink put in the doorbell's place is never written
 * to; the stop request still lands (the poll finds the cancel file). */
Test(supervisor, a_planted_doorbell_is_never_written) {
  char id[TFS_ID_MAX + 1], id2[TFS_ID_MAX + 1], path[PATH_MAX], tmp[PATH_MAX], target[PATH_MAX];
  sx_start(id, "exec sleep 300.134", NULL, NULL, NULL);
  sx_start(id2, "exec sleep 300.134", NULL, NULL, NULL);

  /* A regular file renamed over the FIFO. */
  snprintf(path, sizeof path, "%s/tasks/%s/%s", sx_state, id,
           tfs_task_file_name(TFS_FILE_DOORBELL));
  snprintf(tmp, sizeof tmp, "%s/planted", sx_tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  cr_assert_geq(fd, 0);
  close(fd);
  cr_assert_eq(rename(tmp, path), 0, "%s", strerror(errno));
  cr_assert_eq(tfs_cancel_request(sx_store, id, "planted file"), 0);
  tfs_record_t rec = sx_wait(id, 30000);
  cr_assert_eq(rec.state, TFS_CANCELLED);
  tfs_record_free(&rec);
  assert_noticed_via(id, "poll");

  /* A symlink to a file outside the store. */
  snprintf(path, sizeof path, "%s/tasks/%s/%s", sx_state, id2,
           tfs_task_file_name(TFS_FILE_DOORBELL));
  snprintf(target, sizeof target, "%s/target", sx_tmp);
  fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
  cr_assert_geq(fd, 0);
  close(fd);
  cr_assert_eq(symlink(target, tmp), 0);
  cr_assert_eq(rename(tmp, path), 0, "%s", strerror(errno));
  cr_assert_eq(tfs_cancel_request(sx_store, id2, "planted symlink"), 0);
  rec = sx_wait(id2, 30000);
  cr_assert_eq(rec.state, TFS_CANCELLED);
  tfs_record_free(&rec);
  assert_noticed_via(id2, "poll");
  struct stat st;
  cr_assert_eq(stat(target, &st), 0);
  cr_assert_eq(st.st_size, 0, "the symlink's target was written to");
  cr_assert_eq(sx_procs_with("sleep 300.134"), 0);
}

/* A file planted before the supervisor starts is replaced by the FIFO; a
 * doorbell left by a supervisor killed with SIGKILL does not stop the task
 * from being forgotten. */
Test(supervisor, the_doorbell_replaces_a_planted_file_and_is_forgotten_with_the_task) {
  char id[TFS_ID_MAX + 1], path[PATH_MAX];
  char *argv[] = {"sh", "-c", "exec sleep 300.135", NULL};
  sx_create(id, argv, NULL);
  snprintf(path, sizeof path, "%s/tasks/%s/%s", sx_state, id,
           tfs_task_file_name(TFS_FILE_DOORBELL));
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "x", 1), 1);
  close(fd);
  tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
  cr_assert_eq(tfs_launch(sx_store, id, &lo, NULL), 0);
  mode_t m;
  cr_assert_eq(doorbell_mode(id, &m), 0);
  cr_assert(S_ISFIFO(m), "the planted file was not replaced by the FIFO");

  pid_t sup = supervisor_pid(id);
  cr_assert_eq(kill(sup, SIGKILL), 0);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_LOST);
  tfs_record_free(&rec);
  sx_kill_procs_with("sleep 300.135");
  cr_assert_eq(doorbell_mode(id, &m), 0, "the killed supervisor's FIFO should still be there");
  cr_assert_eq(tfs_cancel_request(sx_store, id, "late"), TFS_EFINISHED);
  cr_assert_eq(tfs_task_forget(sx_store, id), 0);
  struct stat st;
  snprintf(path, sizeof path, "%s/tasks/%s", sx_state, id);
  cr_assert_eq(lstat(path, &st), -1, "the task dir with a FIFO in it was not removed");
}
