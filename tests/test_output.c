/* The output a task's transcript holds, through real supervisors and real
 * shells (bash and dash): one stream in the order the program wrote it
 * (the default), a worker that reopens its own output, `--stderr split`,
 * and bad input: a gigabyte without a newline, NUL bytes, invalid UTF-8,
 * progress bars drawn with '\r', a stream closed early, a pipe held by a
 * process the worker left behind or by one outside the task. */
#include "tests/sup_fixture.h"

#include <poll.h>

TestSuite(output, .init = sx_setup, .fini = sx_teardown, .timeout = 120);

static const char *const shells[] = {"bash", "dash"};

static const tfs_task_spec_t split_spec = {.restart = TFS_RESTART_NO,
                                           .min_uptime_ms = -1,
                                           .max_restarts = -1,
                                           .grace_ms = -1,
                                           .stderr_mode = TFS_STDERR_SPLIT};

/* Runs `shell -c script` (base: the spec, NULL for the defaults) to its
 * end; returns its record and, in *tx (malloc'ed, *len bytes), its
 * transcript. */
static tfs_record_t run_shell(const char *shell, const char *script, const tfs_task_spec_t *base,
                              char **tx, size_t *len) {
  char id[TFS_ID_MAX + 1];
  char *argv[] = {(char *)shell, "-c", (char *)script, NULL};
  sx_start_argv(id, argv, base, NULL, NULL);
  tfs_record_t rec = sx_wait(id, 100000);
  *tx = sx_task_file(id, "transcript", len);
  if (!*tx)
    *tx = strdup("");
  return rec;
}

static int has_shell(const char *shell) {
  return tu_sh(NULL, "command -v %s >/dev/null", shell) == 0;
}

/* ---- one stream, in order -------------------------------------------------- */

Test(output, stdout_and_stderr_are_recorded_in_the_order_written) {
  for (size_t i = 0; i < sizeof shells / sizeof *shells; i++) {
    if (!has_shell(shells[i]))
      continue;
    size_t len;
    char *tx;
    tfs_record_t rec = run_shell(shells[i], "echo a; echo oops > /dev/stderr; echo b; echo c >&2",
                                 NULL, &tx, &len);
    cr_assert_eq(rec.state, TFS_COMPLETED, "%s: %s", shells[i], rec.reason);
    cr_assert_eq(rec.stderr_mode, TFS_STDERR_MERGED);
    cr_assert_str_eq(tx, "a\noops\nb\nc\n", "%s", shells[i]);
    cr_assert_eq(rec.lines, 4);
    tfs_record_free(&rec);
    free(tx);
  }
}

/* The example: an error on stderr between stdout lines is line 2,
 * and the record's important lines and lead say so, every time. */
Test(output, important_lines_are_numbered_on_the_ordered_transcript) {
  const char *script = "echo compiling; echo 'main.c:3:1: error: x' >&2; "
                       "i=1; while [ $i -le 300 ]; do echo noise $i; i=$((i+1)); done; exit 2";
  for (size_t i = 0; i < sizeof shells / sizeof *shells; i++) {
    if (!has_shell(shells[i]))
      continue;
    for (int run = 0; run < 5; run++) {
      size_t len;
      char *tx;
      tfs_record_t rec = run_shell(shells[i], script, NULL, &tx, &len);
      cr_assert_eq(rec.state, TFS_FAILED);
      cr_assert_eq(strncmp(tx, "compiling\nmain.c:3:1: error: x\nnoise 1\n", 39), 0, "%s", tx);
      cr_assert_eq(rec.lines, 302);
      cr_assert_eq(rec.important.total, 1);
      cr_assert_eq(rec.important.first[0].line, 2, "%s run %d", shells[i], run);
      cr_assert_eq(rec.important.lead.line, 2);
      tfs_record_free(&rec);
      free(tx);
    }
  }
}

Test(output, only_split_mode_has_a_stderr_lines_file) {
  char id[TFS_ID_MAX + 1];
  sx_start(id, "echo out; echo err >&2", NULL, NULL, NULL);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.stderr_mode, TFS_STDERR_MERGED);
  tfs_record_free(&rec);
  char *side = sx_task_file(id, tfs_task_file_name(TFS_FILE_STDERR_LINES), NULL);
  cr_assert_null(side, "a merged stream has no stderr-lines file");
  sx_start(id, "echo out; echo err >&2", &split_spec, NULL, NULL);
  rec = sx_wait(id, 20000);
  cr_assert_eq(rec.stderr_mode, TFS_STDERR_SPLIT);
  tfs_record_free(&rec);
  side = sx_task_file(id, tfs_task_file_name(TFS_FILE_STDERR_LINES), NULL);
  cr_assert_not_null(side);
  free(side);
}

/* ---- a worker that reopens its output ----------------------------------------- */

/* Each way a script reopens its own output, after earlier output: none may
 * truncate or overwrite what was written (a pipe holds; a redirect into
 * the transcript itself would not). */
Test(output, a_worker_reopening_its_output_cannot_destroy_the_transcript) {
  static const char *const scripts[] = {
      "echo one; echo two; echo x > /dev/stderr; echo three",
      "echo one; echo two; exec >/dev/stdout; echo x; echo three",
      "echo one; echo two; : > /proc/self/fd/1; echo x; : > /proc/self/fd/2; echo three",
      "echo one; echo two; exec 2>/dev/stderr; echo x >&2; : > /dev/stdout; echo three",
  };
  for (size_t i = 0; i < sizeof shells / sizeof *shells; i++) {
    if (!has_shell(shells[i]))
      continue;
    for (size_t j = 0; j < sizeof scripts / sizeof *scripts; j++) {
      for (int split = 0; split < 2; split++) {
        size_t len;
        char *tx;
        tfs_record_t rec = run_shell(shells[i], scripts[j], split ? &split_spec : NULL, &tx, &len);
        cr_assert_eq(rec.state, TFS_COMPLETED, "%s '%s': %s", shells[i], scripts[j], rec.reason);
        if (!split)
          cr_assert_str_eq(tx, "one\ntwo\nx\nthree\n", "%s '%s'", shells[i], scripts[j]);
        else /* two pipes: "x" may come before or after its neighbours */
          cr_assert(!strncmp(tx, "one\ntwo\n", 8) && strstr(tx, "x\n") && strstr(tx, "three\n") &&
                        len == 16,
                    "%s '%s' split: %s", shells[i], scripts[j], tx);
        tfs_record_free(&rec);
        free(tx);
      }
    }
  }
}

/* ---- bad input ---------------------------------------------------------------- */

/* Waits for task id to complete; its transcript must be exactly want. */
static void assert_completed_with(const char *id, const char *want) {
  tfs_record_t rec = sx_wait(id, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  char *tx = sx_task_file(id, "transcript", NULL);
  cr_assert_str_eq(tx, want);
  free(tx);
}

typedef struct {
  const char *id;
  long hwm_kb; /* the supervisor's peak resident memory, last seen */
} mem_watch_t;

/* Samples the supervisor's VmHWM until the task ends. */
static int sample_memory(void *arg) {
  mem_watch_t *w = arg;
  tfs_record_t rec = sx_load(w->id);
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)rec.supervisor_pid);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6))
      w->hwm_kb = atol(line + 6);
  if (f)
    fclose(f);
  int ended = tfs_state_terminal(rec.state);
  tfs_record_free(&rec);
  return ended;
}

Test(output, a_gigabyte_without_a_newline_is_exact_in_bounded_memory, .timeout = 300) {
  char id[TFS_ID_MAX + 1];
  sx_start(id, "head -c 1000000000 /dev/zero | tr '\\0' x", NULL, NULL, NULL);
  mem_watch_t w = {id, 0};
  cr_assert(tu_wait_until(sample_memory, &w, 240000), "a gigabyte line did not end");
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  cr_assert_eq(rec.bytes, 1000000000);
  cr_assert_eq(rec.lines, 1);
  tfs_record_free(&rec);
  /* Resident memory stays at the supervisor's usual few MB. */
  cr_assert_lt(w.hwm_kb, 16 * 1024, "the supervisor grew to %ld kB", w.hwm_kb);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/tasks/%s/transcript", sx_state, id);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  cr_assert_geq(fd, 0);
  static char buf[1 << 20];
  ssize_t n;
  int64_t total = 0;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; i++)
      if (buf[i] != 'x')
        cr_assert_fail("byte %lld is %d", (long long)(total + i), buf[i]);
    total += n;
  }
  close(fd);
  cr_assert_eq(total, 1000000000);
}

/* NUL bytes, invalid UTF-8, a progress bar redrawn with '\r' only (one
 * long line of 1,000 frames), CRLF: all kept byte for byte; the important
 * line among them is kept as valid UTF-8, with its line number. */
Test(output, nul_invalid_utf8_and_carriage_returns_are_exact) {
  const char *script =
      "printf 'a\\000b\\377\\376\\r\\n'; "
      "i=1; while [ $i -le 1000 ]; do printf '\\r[%4d/1000]' $i; i=$((i+1)); done; printf '\\n'; "
      "printf 'error: \\377\\300 broken\\r\\n' >&2; printf '\\000\\000\\n'; printf 'tail\\r'";
  for (size_t s = 0; s < sizeof shells / sizeof *shells; s++) {
    if (!has_shell(shells[s]))
      continue;
    size_t len;
    char *tx;
    tfs_record_t rec = run_shell(shells[s], script, NULL, &tx, &len);
    cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
    char want[32768];
    size_t w = 0;
    memcpy(want + w, "a\0b\377\376\r\n", 7);
    w += 7;
    for (int i = 1; i <= 1000; i++)
      w += (size_t)sprintf(want + w, "\r[%4d/1000]", i);
    want[w++] = '\n';
    static const char end[] = "error: \377\300 broken\r\n\0\0\ntail\r";
    memcpy(want + w, end, sizeof end - 1);
    w += sizeof end - 1;
    cr_assert_eq(len, w, "%s: %zu bytes, want %zu", shells[s], len, w);
    cr_assert_eq(memcmp(tx, want, w), 0, "%s", shells[s]);
    cr_assert_eq(rec.lines, 5);
    cr_assert_eq(rec.important.total, 1);
    cr_assert_eq(rec.important.first[0].line, 3);
    cr_assert_str_eq(rec.important.first[0].text, "error: \xEF\xBF\xBD\xEF\xBF\xBD broken");
    tfs_record_free(&rec);
    free(tx);
  }
}

/* With stderr split, one stream closed at once while the other writes on:
 * every line of the open one arrives and the task ends. */
Test(output, a_stream_closed_early_while_the_other_keeps_writing) {
  static const char *const scripts[] = {
      "exec 1>&-; i=1; while [ $i -le 3000 ]; do echo \"err $i\" >&2; i=$((i+1)); done",
      "exec 2>&-; i=1; while [ $i -le 3000 ]; do echo \"out $i\"; i=$((i+1)); done",
  };
  for (size_t j = 0; j < 2; j++) {
    size_t len;
    char *tx;
    tfs_record_t rec = run_shell("sh", scripts[j], &split_spec, &tx, &len);
    cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
    cr_assert_eq(rec.lines, 3000);
    const char *word = j ? "out" : "err";
    char *p = tx;
    for (int i = 1; i <= 3000; i++) {
      char want[32];
      int n = snprintf(want, sizeof want, "%s %d\n", word, i);
      cr_assert_eq(strncmp(p, want, (size_t)n), 0, "line %d", i);
      p += n;
    }
    cr_assert_eq((size_t)(p - tx), len);
    tfs_record_free(&rec);
    free(tx);
  }
}

/* The worker exits while a process it started still holds the pipe: that
 * process is stopped as a leftover of the task, the pipe ends, the task
 * ends with the worker's own exit. */
Test(output, a_grandchild_holding_the_pipe_does_not_hang_the_task) {
  for (int split = 0; split < 2; split++) {
    char id[TFS_ID_MAX + 1];
    sx_start(id, "(sleep 300.4 ; echo never) & echo done", split ? &split_spec : NULL, NULL, NULL);
    assert_completed_with(id, "done\n");
    cr_assert_eq(sx_procs_with("sleep 300.4"), 0, "the grandchild outlived its task");
  }
}

typedef struct {
  const char *path;
  int fd;
} holder_t;

static int file_exists(void *arg) {
  return access(arg, F_OK) == 0;
}

static int open_holder(void *arg) {
  holder_t *h = arg;
  h->fd = open(h->path, O_WRONLY | O_CLOEXEC);
  return h->fd >= 0;
}

/* A process outside the task (this test) opens the worker's pipe through
 * /proc and keeps it open after the whole tree is gone: the supervisor
 * stops waiting for it (its drain) and records the end. */
Test(output, a_pipe_held_from_outside_the_task_does_not_hang_it) {
  char id[TFS_ID_MAX + 1], pidfile[PATH_MAX + 16];
  snprintf(pidfile, sizeof pidfile, "%s/worker.pid", sx_tmp);
  signal(SIGPIPE, SIG_IGN);
  sx_start(id,
           "echo hello; echo $$ > worker.pid.tmp; mv worker.pid.tmp worker.pid; "
           "while [ ! -e go ]; do sleep 0.05; done; echo bye",
           NULL, NULL, NULL);
  cr_assert(tu_wait_until(file_exists, pidfile, 20000));
  char *pid = sx_file("worker.pid");
  char path[128];
  snprintf(path, sizeof path, "/proc/%d/fd/1", atoi(pid));
  free(pid);
  holder_t h = {path, -1};
  cr_assert(tu_wait_until(open_holder, &h, 20000), "cannot open %s: %s", path, strerror(errno));
  cr_assert_eq(tu_sh(NULL, "touch '%s/go'", sx_tmp), 0);
  assert_completed_with(id, "hello\nbye\n");
  /* Our end of the pipe still works: nobody reads it any more. */
  cr_assert_eq(write(h.fd, "x\n", 2), -1);
  cr_assert_eq(errno, EPIPE);
  close(h.fd);
}
