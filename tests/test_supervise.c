/* The supervisor at its edges, through what the binary runs: the
 * `taskfs supervise` verb refusing what it cannot supervise (usage, a
 * missing store, a corrupt record, a planted lock, a task that already has
 * a supervisor), a launcher whose supervisor binary is missing or that does
 * not wait, two starts racing for one stranded key, a large environment,
 * and stop requests over wide process trees (the children-file walk and
 * the /proc scan past their first buffers). */
#include "tests/sup_fixture.h"

#include "supervisor/internal.h"

TestSuite(supervise, .init = sx_setup, .fini = sx_teardown, .timeout = 90);

/* Runs `taskfs supervise ARGS` in the test directory; its stdout and
 * stderr together in *out (may be NULL). Returns the exit status. */
static int supervise(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int supervise(char **out, const char *fmt, ...) {
  char *args;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&args, fmt, ap) < 0)
    abort();
  va_end(ap);
  char *o = NULL;
  int rc = tu_sh(&o, "cd '%s' && '%s' supervise %s 2>&1", sx_tmp, tu_taskfs_bin(), args);
  free(args);
  if (out)
    *out = o;
  else
    free(o);
  return rc;
}

/* The raw record.json of a task. */
static char *raw_record(const char *id) {
  char *raw = sx_task_file(id, tfs_task_file_name(TFS_FILE_RECORD), NULL);
  cr_assert_not_null(raw, "task %s has no record", id);
  return raw;
}

static void assert_says(int rc, int want, const char *out, const char *needle) {
  cr_assert_eq(rc, want, "exit %d, want %d: %s", rc, want, out ? out : "");
  cr_assert(out && strstr(out, needle), "'%s' not in: %s", needle, out ? out : "");
}

/* ---- the verb ------------------------------------------------------------ */

Test(supervise, the_verb_refuses_what_it_cannot_supervise) {
  char *out, id[TFS_ID_MAX + 1], path[PATH_MAX + 64];
  int rc = supervise(&out, "--help");
  assert_says(rc, 0, out, "usage: taskfs supervise --state-dir DIR");
  free(out);
  static const char *const usage_errors[] = {"", "--bogus", "--state-dir /x not-an-id",
                                             "--state-dir /x mi4x7k2p-3fz9qa extra"};
  for (size_t i = 0; i < sizeof usage_errors / sizeof *usage_errors; i++) {
    rc = supervise(&out, "%s", usage_errors[i]);
    assert_says(rc, 100, out, "usage:");
    free(out);
  }
  rc = supervise(&out, "--state-dir '%s/no-store' mi4x7k2p-3fz9qa", sx_tmp);
  assert_says(rc, 111, out, "cannot open the store");
  free(out);

  /* A record that does not parse: nothing is run, nothing is written. */
  char *argv[] = {"sh", "-c", "echo ran > side-effect", NULL};
  sx_create(id, argv, NULL);
  snprintf(path, sizeof path, "%s/tasks/%s/record.json", sx_state, id);
  cr_assert_eq(tu_write_file(path, "{", 1), 0);
  rc = supervise(&out, "--state-dir '%s' %s", sx_state, id);
  assert_says(rc, 111, out, "cannot load the task");
  free(out);
  char *raw = raw_record(id);
  cr_assert_str_eq(raw, "{");
  free(raw);

  /* A symlink planted as the lock: refused, never followed. */
  sx_create(id, argv, NULL);
  char target[PATH_MAX];
  snprintf(target, sizeof target, "%s/elsewhere", sx_tmp);
  snprintf(path, sizeof path, "%s/tasks/%s/%s", sx_state, id, tfs_task_file_name(TFS_FILE_LOCK));
  cr_assert_eq(symlink(target, path), 0);
  rc = supervise(&out, "--state-dir '%s' %s", sx_state, id);
  assert_says(rc, 111, out, "cannot lock the task");
  free(out);
  struct stat st;
  cr_assert_eq(lstat(target, &st), -1, "the planted lock was followed");
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.state, TFS_QUEUED);
  tfs_record_free(&rec);
  snprintf(path, sizeof path, "%s/side-effect", sx_tmp);
  cr_assert_eq(lstat(path, &st), -1, "a refused task ran");
}

/* A second supervisor for a task that has one waits for the lock a
 * moment, then leaves it alone. */
Test(supervise, a_second_supervisor_leaves_the_task_to_the_first) {
  char id[TFS_ID_MAX + 1], *out;
  tfs_record_t before;
  sx_start(id, "exec sleep 300.140", NULL, NULL, &before);
  int rc = supervise(&out, "--state-dir '%s' %s", sx_state, id);
  assert_says(rc, 0, out, "another supervisor owns this task");
  free(out);
  tfs_record_t now = sx_load(id);
  cr_assert_eq(now.state, TFS_RUNNING);
  cr_assert_eq(now.supervisor_pid, before.supervisor_pid);
  tfs_record_free(&now);
  tfs_record_free(&before);
  cr_assert_eq(tfs_task_alive(sx_store, id), 1);
}

/* ---- the launcher ---------------------------------------------------------- */

Test(supervise, a_missing_supervisor_binary_fails_the_task_with_the_reason) {
  char *argv[] = {"true", NULL};
  tfs_task_spec_t spec = {
      .argv = argv, .cwd = sx_tmp, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = "/nonexistent/taskfs"};
  tfs_start_t st;
  cr_assert_eq(tfs_task_start(sx_store, &spec, &lo, &st), -ENOENT);
  cr_assert_eq(st.launch_err, -ENOENT);
  cr_assert(st.not_started);
  cr_assert_eq(st.rec.state, TFS_FAILED);
  cr_assert_eq(st.rec.exit_code, 127);
  cr_assert_not_null(strstr(st.rec.reason, "cannot start the supervisor '/nonexistent/taskfs'"),
                     "reason: %s", st.rec.reason);
  tfs_start_free(&st);
}

Test(supervise, a_launch_that_does_not_wait_still_runs_the_task) {
  char id[TFS_ID_MAX + 1], *argv[] = {"sh", "-c", "echo done", NULL};
  sx_create(id, argv, NULL);
  tfs_launch_opts_t lo = {.wait_ms = 0, .exe = tu_taskfs_bin()};
  tfs_record_t rec;
  cr_assert_eq(tfs_launch(sx_store, id, &lo, &rec), 0);
  tfs_record_free(&rec);
  rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  /* Launching it again, or an id that is none, is refused. */
  cr_assert_eq(tfs_launch(sx_store, id, &lo, NULL), -EALREADY);
  cr_assert_eq(tfs_launch(sx_store, "../escape", &lo, NULL), TFS_EBADID);
}

/* Two faces adopting the same stranded key at once: both decide to launch
 * it, one supervisor runs it, the other start reports what is. */
Test(supervise, two_starts_of_a_stranded_key_run_it_once) {
  char id[TFS_ID_MAX + 1];
  char *argv[] = {"sh", "-c", "echo ran >> side-effect; sleep 0.2", NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = sx_tmp,
                          .key = "stranded",
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1};
  int existed;
  cr_assert_eq(tfs_task_create(sx_store, &spec, id, &existed), 0);
  tfs_start_t a, b;
  cr_assert_eq(tfs_task_start_create(sx_store, &spec, &a), 0);
  cr_assert_eq(tfs_task_start_create(sx_store, &spec, &b), 0);
  cr_assert(a.existed && a.launch && b.existed && b.launch);
  tfs_launch_opts_t lo = {.wait_ms = 20000, .exe = tu_taskfs_bin()};
  cr_assert_eq(tfs_task_start_launch(sx_store, &lo, &a), 0);
  cr_assert_eq(tfs_task_start_launch(sx_store, &lo, &b), 0);
  cr_assert_eq(b.launch_err, 0);
  cr_assert_neq(b.rec.state, TFS_QUEUED);
  tfs_start_free(&a);
  tfs_start_free(&b);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  sx_assert_file("side-effect", "ran\n");
}

/* Values far larger than one page travel whole. */
Test(supervise, a_large_environment_reaches_the_worker) {
  enum { BIG = 100000 };
  char id[TFS_ID_MAX + 1];
  char *big = malloc(sizeof "TFS_BIG=" + BIG);
  cr_assert_not_null(big);
  strcpy(big, "TFS_BIG=");
  memset(big + 8, 'v', BIG);
  big[8 + BIG] = 0;
  char *env[] = {big, "TFS_SMALL=1", NULL};
  sx_start(id, "printf %s \"$TFS_BIG\" | wc -c > seen; echo \"$TFS_SMALL\" >> seen", NULL, env,
           NULL);
  free(big);
  tfs_record_t rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  char *seen = sx_file("seen");
  cr_assert_eq(atol(seen), BIG, "the worker saw: %s", seen);
  cr_assert_not_null(strstr(seen, "\n1\n"), "the worker saw: %s", seen);
  free(seen);
}

/* ---- wide trees ------------------------------------------------------------ */

static const char *g_wide;
static int wide_count(void *arg) {
  return sx_procs_with(g_wide) >= (int)(intptr_t)arg;
}

/* A worker with a thousand children (a parallel build): the stop reaches
 * every one of them (its children file is longer than the first read
 * buffer, the tree longer than the first array). */
Test(supervise, a_stop_reaches_a_thousand_children, .timeout = 180) {
  enum { N = 1000 };
  char id[TFS_ID_MAX + 1];
  g_wide = "sleep 300.141";
  sx_start(id, "i=0; while [ $i -lt 1000 ]; do sleep 300.141 & i=$((i+1)); done; wait", NULL, NULL,
           NULL);
  cr_assert(tu_wait_until(wide_count, (void *)(intptr_t)N, 120000), "only %d children started",
            sx_procs_with(g_wide));
  cr_assert_eq(tfs_cancel_request(sx_store, id, "tester"), 0);
  tfs_record_t rec = sx_wait(id, 60000);
  cr_assert_eq(rec.state, TFS_CANCELLED, "%s", rec.reason);
  tfs_record_free(&rec);
  cr_assert_eq(sx_procs_with(g_wide), 0, "a child was left behind");
}

/* Forks n sleeping children of this process into pids. */
static void fork_sleepers(pid_t *pids, int n) {
  for (int i = 0; i < n; i++) {
    pids[i] = fork();
    cr_assert_geq(pids[i], 0, "fork: %s", strerror(errno));
    if (pids[i] == 0) {
      if (chdir(sx_tmp) == 0)
        execlp("sleep", "sleep", "300.142", (char *)NULL);
      _exit(127);
    }
  }
}

/* Both walks over more processes than their first buffers hold: every
 * child is found and signalled once. */
Test(supervise, both_walks_find_three_hundred_children) {
  enum { N = 300 };
  static pid_t pids[N];
  int (*walks[])(int, pid_t) = {sup_kill_descendants, sup_kill_descendants_scan};
  g_wide = "sleep 300.142";
  for (int w = 0; w < 2; w++) {
    fork_sleepers(pids, N);
    cr_assert(tu_wait_until(wide_count, (void *)(intptr_t)N, 60000), "walk %d: not all started", w);
    cr_assert_eq(walks[w](SIGKILL, 0), N, "walk %d", w);
    for (int i = 0; i < N; i++) {
      int status;
      cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
      cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "walk %d, child %d", w, i);
    }
  }
}
