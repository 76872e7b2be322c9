/* What lies between a freed queue slot and the next task's start, read
 * from a trace of the waiter's supervisor (strace -f of the `taskfs run
 * --queue` that joined): the waiter that takes the last free slot goes
 * straight to its worker's fork, ringing no other waiter on the way (none
 * could use a slot, so that look at the queue's waiters was pure delay).
 * The queue's behaviour itself is tests/test_queue.c. */
#include "tests/sup_fixture.h"

static void setup(void) {
  sx_setup();
  setenv("TASKFS_STATE_DIR", sx_state, 1);
  /* LeakSanitizer refuses to run under ptrace (an ASan build exits
   * non-zero at its end under strace): no leak check here. */
  const char *asan = getenv("ASAN_OPTIONS");
  char opts[1024];
  snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
}

TestSuite(queue_wake, .init = setup, .fini = sx_teardown, .timeout = 90);

static int exists(void *arg) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", sx_tmp, (const char *)arg);
  return access(path, F_OK) == 0;
}

/* The file holds a whole line. */
static int has_line(void *arg) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", sx_tmp, (const char *)arg);
  char *text = tu_read_file(path, NULL);
  int whole = text && strchr(text, '\n');
  free(text);
  return whole;
}

static void wait_file(const char *name) {
  cr_assert(tu_wait_until(exists, (void *)name, 30000), "%s never appeared", name);
}

Test(queue_wake, the_waiter_that_takes_the_last_slot_rings_nobody_before_its_worker_starts) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], path[PATH_MAX];
  char *out = NULL, *err = NULL;
  if (tu_sh(NULL, "command -v strace >/dev/null"))
    cr_skip_test("needs strace");
  cr_assert_eq(sx_taskfs(NULL, &err, "queue set q --parallel 1"), 0, "%s", err);
  free(err);
  cr_assert_eq(
      sx_taskfs(&out, NULL, "run --queue q -- sh -c 'while [ ! -e gate ]; do sleep 0.05; done'"),
      0);
  sx_first_id(out, a);
  free(out);
  sx_wait_state(a, TFS_RUNNING, NULL);
  /* B joins the full queue under strace -f, which follows its supervisor
   * to its end; b.done says the trace is complete. */
  cr_assert_eq(tu_sh(NULL,
                     "(cd '%s' && strace -f -qq -e trace=openat,pwrite64,clone,clone3 -o b.trace "
                     "'%s' run --queue q -- true >b.id 2>b.err; echo $? >b.done) "
                     "</dev/null >/dev/null 2>&1 &",
                     sx_tmp, tu_taskfs_bin()),
               0);
  /* run prints B's id before it launches B's supervisor. */
  wait_file("b.id");
  cr_assert(tu_wait_until(has_line, "b.id", 30000), "no id in b.id");
  snprintf(path, sizeof path, "%s/b.id", sx_tmp);
  char *id = tu_read_file(path, NULL);
  sx_first_id(id, b);
  free(id);
  sx_wait_state(b, TFS_QUEUED, "1st in queue q");
  snprintf(path, sizeof path, "%s/gate", sx_tmp);
  cr_assert_eq(tu_write_file(path, "", 0), 0);
  tfs_record_t rec = sx_wait(b, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  wait_file("b.done");
  /* In B's supervisor, from the write of its id into the slot it took to
   * the fork of its worker: no look at the queue's settings or waiters
   * (a kick, which reads both). */
  cr_assert_eq(
      tu_sh(&out,
            "cd '%s' && awk -v id='%s' '"
            "index($0, \"pwrite64(\") && index($0, \"\\\"\" id \"\\\"\") { p = $1; on = 1; next }"
            " on && $1 == p && (index($0, \"\\\"settings\\\"\") || index($0, \"\\\"waiting\\\"\"))"
            " { rang = 1 }"
            " on && $1 == p && index($0, \"clone\") { on = 0; forked = 1 }"
            " END { print forked ? (rang ? \"rang\" : \"quiet\") : \"no take\" }' b.trace",
            sx_tmp, b),
      0);
  cr_assert_str_eq(out, "quiet\n");
  free(out);
}
