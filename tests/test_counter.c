/* The capture's counter (supervisor/counter.c): a worker that writes
 * faster than its lines are counted and classified never waits for that.
 * The supervisor runs under tests/preload/gate_pread.so, which holds every
 * read of a file named "transcript" (the counter reads back what the
 * capture wrote) until the test lets it go: with the counter held at its
 * first read, the worker's whole output must still land in the transcript
 * and the worker must finish; the task's end waits for the counter; once
 * the reads go on, the record's lines, bytes and important lines are
 * exact. No clock: every step waits for a file or a state. */
#include "tests/sup_fixture.h"

#include <libgen.h>
#include <sys/stat.h>

TestSuite(counter, .init = sx_setup, .fini = sx_teardown, .timeout = 120);

static char gate[PATH_MAX];

static int gate_has(void *name) {
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/%s", gate, (const char *)name);
  return access(p, F_OK) == 0;
}

typedef struct {
  char path[PATH_MAX];
  off_t want;
} size_check_t;

static int size_reached(void *arg) {
  size_check_t *c = arg;
  struct stat st;
  return stat(c->path, &st) == 0 && st.st_size == c->want;
}

static int file_exists(void *path) {
  return access(path, F_OK) == 0;
}

static void gate_file(const char *name) {
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/%s", gate, name);
  cr_assert_eq(tu_write_file(p, "", 0), 0);
}

Test(counter, a_producer_faster_than_the_classifier_never_waits_for_it) {
  enum { N = 200000 };
  char exe[PATH_MAX], so[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  cr_assert_gt(n, 0);
  exe[n] = '\0';
  snprintf(so, sizeof so, "%s/preload/gate_pread.so", dirname(exe));
  cr_assert_eq(access(so, R_OK), 0, "no %s", so);
  snprintf(gate, sizeof gate, "%s/gate", sx_tmp);
  cr_assert_eq(mkdir(gate, 0700), 0);
  gate_file("each");
  /* The supervisor inherits these from the launch (its worker too, which
   * reads no transcript). */
  setenv("LD_PRELOAD", so, 1);
  setenv("TFS_GATE", gate, 1);
  char script[256];
  /* Every line important (a located diagnostic), so every line costs the
   * classifier most; then a mark that the worker wrote it all. */
  snprintf(script, sizeof script,
           "awk 'BEGIN { for (i = 1; i <= %d; i++) print \"src/a.c:\" i \": error: flood\" }'"
           " && : > wrote",
           N);
  char id[TFS_ID_MAX + 1];
  sx_start(id, script, NULL, NULL, NULL);
  unsetenv("LD_PRELOAD");
  unsetenv("TFS_GATE");

  /* The expected transcript, made the same way outside the task. */
  cr_assert_eq(tu_sh(NULL,
                     "cd '%s' && awk 'BEGIN { for (i = 1; i <= %d; i++) print \"src/a.c:\" i "
                     "\": error: flood\" }' > want",
                     sx_tmp, N),
               0);
  size_check_t c;
  struct stat st;
  char want[PATH_MAX + 8];
  snprintf(want, sizeof want, "%s/want", sx_tmp);
  cr_assert_eq(stat(want, &st), 0);
  c.want = st.st_size;
  snprintf(c.path, sizeof c.path, "%s/tasks/%s/transcript", sx_state, id);

  cr_assert(tu_wait_until(gate_has, "held", 30000),
            "the counter never read the transcript back (no thread of its own?)");
  char wrote[PATH_MAX + 8];
  snprintf(wrote, sizeof wrote, "%s/wrote", sx_tmp);
  cr_assert(tu_wait_until(size_reached, &c, 60000),
            "the worker's output did not all land while the counter was held");
  cr_assert(tu_wait_until(file_exists, wrote, 60000),
            "the worker did not finish writing while the counter was held");
  cr_assert(gate_has("held"), "the counter went on without being let go");
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.state, TFS_RUNNING, "the task ended before its lines were counted: %s",
               tfs_state_name(rec.state));
  cr_assert_lt(rec.lines, N, "the record counted lines the counter had not read");
  tfs_record_free(&rec);

  /* Let the counter go: the end is exact. */
  char each[PATH_MAX + 8];
  snprintf(each, sizeof each, "%s/each", gate);
  cr_assert_eq(unlink(each), 0);
  gate_file("go");
  rec = sx_wait(id, 60000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  cr_assert_eq(rec.lines, N);
  cr_assert_eq(rec.bytes, (int64_t)c.want);
  cr_assert_eq(rec.important.total, N, "important lines seen: %lld",
               (long long)rec.important.total);
  cr_assert_eq(rec.important.first[0].line, 1);
  cr_assert_gt(rec.important.nlast, 0);
  cr_assert_eq(tfs_important_last(&rec.important, rec.important.nlast - 1)->line, N);
  /* The last ring's lines point into the counter's block until it is
   * settled: their texts must be their own lines, not a later block's. */
  for (size_t i = 0; i < rec.important.nlast; i++) {
    const tfs_important_line_t *l = tfs_important_last(&rec.important, i);
    char line[64];
    snprintf(line, sizeof line, "src/a.c:%lld: error: flood", (long long)l->line);
    cr_assert_eq(l->line, N - (int64_t)rec.important.nlast + 1 + (int64_t)i);
    cr_assert_str_eq(l->text, line);
  }
  tfs_record_free(&rec);
  cr_assert_eq(tu_sh(NULL, "cmp -s '%s' '%s'", want, c.path), 0,
               "the transcript differs from the worker's output");
}
