/* End-to-end tests of queues, dependencies, start times and the control of
 * a running task (issue 18): the real binary starts real supervisors
 * (`taskfs run --queue/--after/--delay/--stdin`), and the verbs people use
 * (queue, pause, resume, signal, send, rm, restart, prune, ls) act on
 * them; supervisors are killed with SIGKILL while they wait for a slot and
 * while they hold one. The mount's queues/ and control files are in
 * test_queue_mount.c. */
#include "tests/sup_fixture.h"

#include <jansson.h>

static void setup(void) {
  sx_setup();
  setenv("TASKFS_STATE_DIR", sx_state, 1);
  unsetenv("NO_COLOR");
}

TestSuite(queue, .init = setup, .fini = sx_teardown, .timeout = 90);

/* taskfs ARGS in the test directory, the store from the environment. */
#define tq sx_taskfs

/* `taskfs run ARGS`, asserted to succeed; the id it printed. */
static void run_task(char id[TFS_ID_MAX + 1], const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void run_task(char id[TFS_ID_MAX + 1], const char *fmt, ...) {
  va_list ap;
  char *args, *out = NULL, *err = NULL;
  va_start(ap, fmt);
  if (vasprintf(&args, fmt, ap) < 0)
    abort();
  va_end(ap);
  int rc = tq(&out, &err, "run %s", args);
  cr_assert_eq(rc, 0, "taskfs run %s: rc %d: %s", args, rc, err);
  size_t n = strcspn(out, "\n");
  cr_assert(n > 0 && n <= TFS_ID_MAX, "no id in: %s", out);
  memcpy(id, out, n);
  id[n] = 0;
  cr_assert(tfs_id_valid(id), "not an id: %s", id);
  free(args);
  free(out);
  free(err);
}

#define wait_state sx_wait_state

/* The queue's row of `taskfs queue ls --json`, as a new reference. */
static json_t *queue_row(const char *name) {
  char *out = NULL;
  cr_assert_eq(tq(&out, NULL, "queue ls --json"), 0);
  json_t *all = json_loads(out, 0, NULL);
  cr_assert(json_is_array(all), "not a JSON array: %s", out);
  json_t *row = NULL, *x;
  size_t i;
  json_array_foreach(all, i, x) {
    if (!strcmp(json_string_value(json_object_get(x, "name")), name))
      row = json_incref(x);
  }
  json_decref(all);
  free(out);
  cr_assert(row, "no queue %s", name);
  return row;
}

static int qint(const char *name, const char *field) {
  json_t *row = queue_row(name);
  json_t *v = json_object_get(row, field);
  int n = json_is_boolean(v) ? json_is_true(v) : (int)json_integer_value(v);
  json_decref(row);
  return n;
}

typedef struct {
  const char *q;
  int running, waiting;
} counts_t;

static int has_counts(void *arg) {
  counts_t *c = arg;
  return qint(c->q, "running") == c->running && qint(c->q, "waiting") == c->waiting;
}

static void wait_counts(const char *q, int running, int waiting) {
  counts_t c = {q, running, waiting};
  cr_assert(tu_wait_until(has_counts, &c, 30000), "queue %s: %d running, %d waiting, not %d, %d", q,
            qint(q, "running"), qint(q, "waiting"), running, waiting);
}

static int exists(void *arg) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", sx_tmp, (const char *)arg);
  return access(path, F_OK) == 0;
}

static void touch(const char *name) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", sx_tmp, name);
  cr_assert_eq(tu_write_file(path, "", 0), 0);
}

/* A command that waits (no CPU to speak of) until the file gate exists in
 * the test directory, then appends its name to the file order. */
#define GATED(gate, name)                                                                          \
  "-- sh -c 'while [ ! -e " gate " ]; do sleep 0.05; done; echo " name " >> order'"

/* ---- queues ------------------------------------------------------------------ */

Test(queue, a_queue_runs_its_tasks_one_at_a_time_in_the_order_they_were_started) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], c[TFS_ID_MAX + 1], d[TFS_ID_MAX + 1];
  char *out = NULL, *err = NULL;
  cr_assert_eq(tq(&out, &err, "queue set q --parallel 1"), 0, "%s", err);
  cr_assert_str_eq(out, "queue q runs at most 1 task at once\n");
  run_task(a, "--queue q " GATED("gate", "a"));
  run_task(b, "--queue q -- sh -c 'echo b >> order'");
  run_task(c, "--queue q -- sh -c 'echo c >> order'");
  run_task(d, "--queue q -- sh -c 'echo d >> order'");
  wait_state(a, TFS_RUNNING, NULL);
  wait_counts("q", 1, 3);
  /* Each waiter says where it stands, in the record and in ls. */
  wait_state(b, TFS_QUEUED, "1st in queue q");
  wait_state(c, TFS_QUEUED, "2nd in queue q");
  wait_state(d, TFS_QUEUED, "3rd in queue q");
  free(out);
  cr_assert_eq(tq(&out, NULL, "ls --color=never"), 0);
  cr_assert(strstr(out, "2nd in queue q (1 of 1 running)"), "%s", out);
  free(out);
  touch("gate");
  tfs_record_t rec = sx_wait(d, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  sx_assert_file("order", "a\nb\nc\nd\n");
  wait_counts("q", 0, 0);
  free(err);
}

Test(queue, never_more_tasks_of_a_queue_run_than_its_limit) {
  char ids[6][TFS_ID_MAX + 1];
  cr_assert_eq(tq(NULL, NULL, "queue set two --parallel 2"), 0);
  /* Each task counts the tasks of the queue alive while it runs. */
  for (int i = 0; i < 6; i++)
    run_task(ids[i],
             "--queue two -- sh -c 'touch run.%d; ls run.* | wc -l >> counts; sleep 0.2; "
             "rm run.%d'",
             i, i);
  for (int i = 0; i < 6; i++) {
    tfs_record_t rec = sx_wait(ids[i], 30000);
    cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
    tfs_record_free(&rec);
  }
  char *counts = sx_file("counts");
  int lines = 0;
  for (char *p = counts; *p; p++) {
    if (*p == '\n')
      lines++;
    else if (*p != ' ')
      cr_assert(*p == '1' || *p == '2', "more than 2 at once: %s", counts);
  }
  cr_assert_eq(lines, 6);
  free(counts);
}

Test(queue, without_a_queue_or_limit_every_task_runs_at_once) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], c[TFS_ID_MAX + 1];
  run_task(a, GATED("gate", "a"));
  run_task(b, "--queue open " GATED("gate", "b"));
  run_task(c, "--queue open " GATED("gate", "c"));
  wait_state(a, TFS_RUNNING, NULL);
  wait_state(b, TFS_RUNNING, NULL);
  wait_state(c, TFS_RUNNING, NULL);
  cr_assert_eq(qint("open", "parallel"), 0);
  cr_assert_eq(qint("open", "running"), 2);
  touch("gate");
  tfs_record_free((tfs_record_t[]){sx_wait(c, 30000)});
}

Test(queue, a_paused_queue_starts_nothing_until_it_is_resumed) {
  char a[TFS_ID_MAX + 1];
  char *out = NULL;
  cr_assert_eq(tq(NULL, NULL, "queue set p --parallel 3"), 0);
  cr_assert_eq(tq(&out, NULL, "queue pause p"), 0);
  free(out);
  run_task(a, "--queue p -- sh -c 'echo ran > ran'");
  wait_state(a, TFS_QUEUED, "in queue p, which is paused");
  cr_assert_eq(qint("p", "paused"), 1);
  cr_assert_eq(qint("p", "waiting"), 1);
  /* A waiting supervisor sleeps: no CPU to speak of, and nothing ran. */
  tfs_record_t rec = sx_load(a);
  char stat[64];
  snprintf(stat, sizeof stat, "/proc/%d/stat", (int)rec.supervisor_pid);
  tfs_record_free(&rec);
  char *before = tu_read_file(stat, NULL);
  cr_assert(before);
  usleep(300 * 1000);
  cr_assert(!exists("ran"));
  char *after = tu_read_file(stat, NULL);
  /* utime and stime (fields 14, 15) after the command's ')'. */
  long t[2][2];
  char *texts[2] = {before, after};
  for (int i = 0; i < 2; i++) {
    char *p = strrchr(texts[i], ')');
    cr_assert(p);
    cr_assert_eq(
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &t[i][0], &t[i][1]),
        2);
  }
  cr_assert_leq(t[1][0] + t[1][1] - t[0][0] - t[0][1], 2, "the waiter used CPU");
  free(before);
  free(after);
  cr_assert_eq(tq(&out, NULL, "queue resume p"), 0);
  free(out);
  rec = sx_wait(a, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  cr_assert_eq(qint("p", "paused"), 0);
}

Test(queue, queue_ls_prints_a_table_and_json) {
  char *out = NULL;
  cr_assert_eq(tq(NULL, NULL, "queue set build --parallel 2"), 0);
  cr_assert_eq(tq(NULL, NULL, "queue set free --parallel none"), 0);
  cr_assert_eq(tq(&out, NULL, "queue ls"), 0);
  cr_assert(strstr(out, "QUEUE"), "%s", out);
  cr_assert(strstr(out, "build"), "%s", out);
  free(out);
  json_t *row = queue_row("build");
  cr_assert_eq(json_integer_value(json_object_get(row, "parallel")), 2);
  cr_assert(json_is_false(json_object_get(row, "paused")));
  cr_assert_eq(json_integer_value(json_object_get(row, "running")), 0);
  cr_assert_eq(json_integer_value(json_object_get(row, "waiting")), 0);
  json_decref(row);
  cr_assert_eq(qint("free", "parallel"), 0);
}

Test(queue, bad_queue_settings_are_refused_and_change_nothing) {
  char *err = NULL;
  cr_assert_eq(tq(NULL, NULL, "queue set q --parallel 2"), 0);
  const char *bad[] = {"--parallel 0", "--parallel -1", "--parallel 99999", "--parallel two",
                       "--parallel 1x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(tq(NULL, &err, "queue set q %s", bad[i]), 100, "%s", bad[i]);
    cr_assert(strstr(err, "taskfs queue set: --parallel wants"), "%s", err);
    free(err);
  }
  cr_assert_eq(qint("q", "parallel"), 2);
  cr_assert_eq(tq(NULL, &err, "queue set a/b --parallel 1"), 100);
  cr_assert(strstr(err, "is not a queue name"), "%s", err);
  free(err);
  char long_name[301];
  memset(long_name, 'q', 300);
  long_name[300] = 0;
  cr_assert_eq(tq(NULL, &err, "queue set %s --parallel 1", long_name), 100);
  cr_assert(strstr(err, "is not a queue name"), "%s", err);
  free(err);
  cr_assert_eq(tq(NULL, &err, "run --queue %s -- true", long_name), 100);
  cr_assert(strstr(err, "is not a queue name"), "%s", err);
  free(err);
  cr_assert_eq(tq(NULL, &err, "run --queue a/b -- true"), 100);
  free(err);
  sx_assert_tasks(0);
  cr_assert_eq(tq(NULL, &err, "queue pause nosuch/x"), 100);
  free(err);
}

/* ---- kill -9 ------------------------------------------------------------------ */

static void kill_supervisor(const char *id) {
  tfs_record_t rec = sx_load(id);
  cr_assert_gt(rec.supervisor_pid, 0);
  cr_assert_eq(kill(rec.supervisor_pid, SIGKILL), 0);
  tfs_record_free(&rec);
}

Test(queue, a_waiter_killed_9_loses_no_slot_and_blocks_nobody) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], c[TFS_ID_MAX + 1];
  cr_assert_eq(tq(NULL, NULL, "queue set q --parallel 1"), 0);
  run_task(a, "--queue q " GATED("gate", "a"));
  run_task(b, "--queue q -- sh -c 'echo b >> order'");
  run_task(c, "--queue q -- sh -c 'echo c >> order'");
  wait_state(a, TFS_RUNNING, NULL);
  wait_counts("q", 1, 2);
  kill_supervisor(b);
  wait_state(b, TFS_LOST, NULL);
  wait_counts("q", 1, 1);
  wait_state(c, TFS_QUEUED, "1st in queue q");
  touch("gate");
  tfs_record_t rec = sx_wait(c, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  sx_assert_file("order", "a\nc\n");
  wait_counts("q", 0, 0);
}

Test(queue, a_slot_holder_killed_9_frees_its_slot_once_its_tree_is_gone) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  cr_assert_eq(tq(NULL, NULL, "queue set q --parallel 1"), 0);
  run_task(a, "--queue q -- sleep 300.181");
  /* The next task records whether the first one's worker still lived
   * when it started: two tasks in one slot would say so. */
  run_task(b, "--queue q -- sh -c 'if pgrep -f \"sleep 300[.]181\" >/dev/null; then echo two; "
              "else echo one; fi > alone'");
  wait_state(a, TFS_RUNNING, NULL);
  wait_state(b, TFS_QUEUED, "1st in queue q");
  kill_supervisor(a);
  tfs_record_t rec = sx_wait(b, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  sx_assert_file("alone", "one\n");
  wait_state(a, TFS_LOST, NULL);
  wait_counts("q", 0, 0);
  cr_assert_eq(sx_procs_with("sleep 300.181"), 0);
}

/* ---- dependencies and start times ------------------------------------------- */

Test(queue, a_task_starts_after_its_dependencies_complete) {
  char a[TFS_ID_MAX + 1], k[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  run_task(a, GATED("gate", "a"));
  run_task(k, "--key first -- sh -c 'echo k >> order'");
  tfs_record_free((tfs_record_t[]){sx_wait(k, 30000)});
  char pre[9];
  snprintf(pre, sizeof pre, "%.8s", a);
  run_task(b, "--after %s --after first -- sh -c 'echo b >> order'", pre);
  char words[64];
  snprintf(words, sizeof words, "waiting for task %s to complete", a);
  wait_state(b, TFS_QUEUED, words);
  tfs_record_t rec = sx_load(b);
  cr_assert_eq(rec.nafter, 2);
  cr_assert_str_eq(rec.after[0], a);
  cr_assert_str_eq(rec.after[1], k);
  tfs_record_free(&rec);
  touch("gate");
  rec = sx_wait(b, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  sx_assert_file("order", "k\na\nb\n");
}

Test(queue, a_task_after_one_that_failed_or_was_cancelled_never_runs) {
  char f[TFS_ID_MAX + 1], x[TFS_ID_MAX + 1], g[TFS_ID_MAX + 1], y[TFS_ID_MAX + 1];
  run_task(f, "-- sh -c 'while [ ! -e gate ]; do sleep 0.05; done; exit 3'");
  run_task(x, "--after %s -- sh -c 'echo x > ran'", f);
  run_task(g, "-- sleep 300.182");
  run_task(y, "--after %s -- sh -c 'echo y > ran'", g);
  wait_state(x, TFS_QUEUED, f);
  touch("gate");
  tfs_record_t rec = sx_wait(x, 30000);
  cr_assert_eq(rec.state, TFS_FAILED);
  cr_assert(strstr(rec.reason, f) && strstr(rec.reason, "not run"), "%s", rec.reason);
  cr_assert(strstr(rec.reason, "code 3"), "%s", rec.reason);
  tfs_record_free(&rec);
  cr_assert_eq(tq(NULL, NULL, "cancel %s", g), 0);
  rec = sx_wait(y, 30000);
  cr_assert_eq(rec.state, TFS_FAILED);
  cr_assert(strstr(rec.reason, g) && strstr(rec.reason, "cancelled"), "%s", rec.reason);
  tfs_record_free(&rec);
  cr_assert(!exists("ran"), "a task ran after a dependency that did not complete");
}

Test(queue, unknown_self_and_cyclic_dependencies_are_refused_at_run) {
  char *err = NULL, a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  cr_assert_eq(tq(NULL, &err, "run --after nosuch -- true"), 101);
  cr_assert(strstr(err, "no task with id or key 'nosuch'"), "%s", err);
  free(err);
  cr_assert_eq(tq(NULL, &err, "run --key self --after self -- true"), 100);
  cr_assert(strstr(err, "cannot wait for itself"), "%s", err);
  free(err);
  /* A cycle cannot be made through the faces (a task names older ones
   * only); a record edited by hand can hold one, and a task after it is
   * refused. */
  char *cmd[] = {"true", NULL};
  sx_create(a, cmd, NULL);
  usleep(3000);
  tfs_task_spec_t spec = sx_spec(cmd, NULL);
  char *after_a[] = {a, NULL};
  spec.after = after_a;
  int existed;
  cr_assert_eq(tfs_task_create(sx_store, &spec, b, &existed), 0);
  tfs_record_t rec = sx_load(a);
  char *after_b[] = {b, NULL};
  cr_assert_eq(tfs_record_set_after(&rec, after_b), 0);
  cr_assert_eq(tfs_task_save(sx_store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tq(NULL, &err, "run --after %s -- true", b), 100);
  cr_assert(strstr(err, "wait for each other") && strstr(err, " -> "), "%s", err);
  free(err);
  sx_assert_tasks(2);
}

Test(queue, delay_and_at_hold_a_task_until_its_time) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], *err = NULL;
  int64_t before = tfs_now_ms();
  run_task(a, "--delay 1s -- true");
  tfs_record_t rec = sx_load(a);
  cr_assert_geq(rec.not_before_ms, before + 1000);
  tfs_record_free(&rec);
  rec = sx_wait(a, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  cr_assert_geq(rec.started_ms, rec.not_before_ms);
  tfs_record_free(&rec);
  /* An hour ahead: it waits, saying until when. */
  time_t later = time(NULL) + 3600;
  struct tm tm;
  char at[32];
  gmtime_r(&later, &tm);
  strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
  run_task(b, "--at %s -- true", at);
  wait_state(b, TFS_QUEUED, "waiting until");
  rec = sx_load(b);
  cr_assert_eq(rec.not_before_ms / 1000, (int64_t)later);
  tfs_record_free(&rec);
  cr_assert_eq(tq(NULL, &err, "run --delay soon -- true"), 100);
  cr_assert(strstr(err, "--delay"), "%s", err);
  free(err);
  cr_assert_eq(tq(NULL, &err, "run --at 25:99 -- true"), 100);
  cr_assert(strstr(err, "--at"), "%s", err);
  free(err);
}

/* ---- control of a running task ------------------------------------------------- */

typedef struct {
  pid_t pid;
  int stopped;
} stopped_t;

static int is_stopped(void *arg) {
  stopped_t *s = arg;
  return (sx_proc_state(s->pid) == 'T') == s->stopped;
}

Test(queue, pause_stops_the_whole_tree_and_resume_continues_it) {
  char a[TFS_ID_MAX + 1], *out = NULL, *err = NULL;
  run_task(a, "-- sh -c 'sleep 300.183 & wait'");
  wait_state(a, TFS_RUNNING, NULL);
  tfs_record_t rec = sx_load(a);
  pid_t worker = rec.worker_pgid;
  tfs_record_free(&rec);
  cr_assert_eq(tq(&out, &err, "pause %.6s", a), 0, "%s", err);
  free(out);
  free(err);
  wait_state(a, TFS_PAUSED, "paused by");
  stopped_t s = {worker, 1};
  cr_assert(tu_wait_until(is_stopped, &s, 10000), "the worker is not stopped");
  cr_assert_eq(tq(&out, NULL, "ls --state paused --color=never"), 0);
  cr_assert(strstr(out, a), "%s", out);
  free(out);
  cr_assert_eq(tq(&out, NULL, "pause %s", a), 0, "pausing a paused task says so");
  cr_assert(strstr(out, "paused"), "%s", out);
  free(out);
  cr_assert_eq(tq(NULL, &err, "resume %s", a), 0);
  free(err);
  wait_state(a, TFS_RUNNING, NULL);
  s.stopped = 0;
  cr_assert(tu_wait_until(is_stopped, &s, 10000), "the worker is still stopped");
  cr_assert_eq(tq(NULL, &err, "resume %s", a), 100, "resuming a running task");
  cr_assert(strstr(err, "not paused"), "%s", err);
  free(err);
  /* A stop request ends a paused task too. */
  cr_assert_eq(tq(NULL, NULL, "pause %s", a), 0);
  wait_state(a, TFS_PAUSED, NULL);
  cr_assert_eq(tq(NULL, NULL, "cancel %s", a), 0);
  rec = sx_wait(a, 30000);
  cr_assert_eq(rec.state, TFS_CANCELLED);
  tfs_record_free(&rec);
  cr_assert_eq(sx_procs_with("sleep 300.183"), 0);
}

Test(queue, a_paused_task_keeps_its_slot_unless_it_frees_it) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  cr_assert_eq(tq(NULL, NULL, "queue set q --parallel 1"), 0);
  run_task(a, "--queue q " GATED("gate", "a"));
  run_task(b, "--queue q -- sh -c 'echo b >> order'");
  wait_state(a, TFS_RUNNING, NULL);
  cr_assert_eq(tq(NULL, NULL, "pause %s", a), 0);
  wait_state(a, TFS_PAUSED, NULL);
  wait_state(b, TFS_QUEUED, "1st in queue q");
  cr_assert_eq(tq(NULL, NULL, "resume %s", a), 0);
  wait_state(a, TFS_RUNNING, NULL);
  /* With --free-slot the next task takes the slot; resume then waits for
   * it to come back. */
  cr_assert_eq(tq(NULL, NULL, "pause --free-slot %s", a), 0);
  tfs_record_t rec = sx_wait(b, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  cr_assert_eq(tq(NULL, NULL, "resume %s", a), 0);
  wait_state(a, TFS_RUNNING, NULL);
  touch("gate");
  rec = sx_wait(a, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  sx_assert_file("order", "b\na\n");
  wait_counts("q", 0, 0);
}

Test(queue, signal_sends_a_signal_to_the_tree) {
  char a[TFS_ID_MAX + 1], *out = NULL, *err = NULL;
  run_task(a, "-- sh -c 'trap \"echo usr1 > got; exit 0\" USR1; touch ready; "
              "while :; do sleep 0.05; done'");
  cr_assert(tu_wait_until(exists, "ready", 20000));
  cr_assert_eq(tq(NULL, &err, "signal NOPE %s", a), 100);
  cr_assert(strstr(err, "'NOPE' is not a signal"), "%s", err);
  free(err);
  cr_assert_eq(tq(&out, &err, "signal USR1 %s", a), 0, "%s", err);
  cr_assert(strstr(out, "SIGUSR1 sent"), "%s", out);
  free(out);
  free(err);
  tfs_record_t rec = sx_wait(a, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  sx_assert_file("got", "usr1\n");
  cr_assert_eq(tq(NULL, &err, "signal TERM %s", a), 100, "a signal to an ended task");
  free(err);
}

Test(queue, send_writes_to_the_stdin_of_a_task_run_with_stdin) {
  char a[TFS_ID_MAX + 1], n[TFS_ID_MAX + 1], *err = NULL;
  cr_assert_eq(tq(NULL, NULL, "queue set q --parallel 1"), 0);
  run_task(n, "--queue q " GATED("gate", "n"));
  /* Text sent while the task waits for its slot reaches it when it runs. */
  run_task(a, "--queue q --stdin -- sh -c 'while read l; do echo \"got $l\"; done; echo eof'");
  wait_state(a, TFS_QUEUED, "1st in queue q");
  cr_assert_eq(tq(NULL, &err, "send %s early bird", a), 0, "%s", err);
  free(err);
  touch("gate");
  wait_state(a, TFS_RUNNING, NULL);
  cr_assert_eq(tq(NULL, &err, "send -n %s 'second '", a), 0, "%s", err);
  free(err);
  cr_assert_eq(tq(NULL, &err, "send %s line", a), 0, "%s", err);
  free(err);
  cr_assert_eq(tq(NULL, &err, "send --eof %s", a), 0, "%s", err);
  free(err);
  tfs_record_t rec = sx_wait(a, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  cr_assert(rec.with_stdin);
  tfs_record_free(&rec);
  char *tx = sx_task_file(a, "transcript", NULL);
  cr_assert_str_eq(tx, "got early bird\ngot second line\neof\n");
  free(tx);
  cr_assert_eq(tq(NULL, &err, "send %s late", a), 100, "send to an ended task");
  cr_assert(strstr(err, "ended"), "%s", err);
  free(err);
  cr_assert_eq(tq(NULL, &err, "send %s hello", n), 100, "send to a task without stdin");
  cr_assert(strstr(err, "has no stdin"), "%s", err);
  free(err);
}

/* ---- rm, restart, prune --------------------------------------------------------- */

Test(queue, rm_deletes_ended_tasks_and_refuses_live_ones) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], *out = NULL, *err = NULL;
  run_task(a, "--key gone -- true");
  tfs_record_free((tfs_record_t[]){sx_wait(a, 30000)});
  run_task(b, "-- sleep 300.184");
  cr_assert_eq(tq(&out, &err, "rm %s", b), 100);
  cr_assert(strstr(err, "not ended"), "%s", err);
  free(out);
  free(err);
  cr_assert_eq(tq(&out, &err, "rm %s", a), 0, "%s", err);
  cr_assert(strstr(out, a), "%s", out);
  free(out);
  free(err);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(sx_store, a, &rec), TFS_ENOTASK);
  cr_assert_eq(tq(NULL, &err, "show gone"), 101, "the key went with its task");
  free(err);
  cr_assert_eq(tfs_task_load(sx_store, b, &rec), 0);
  cr_assert_eq(rec.state, TFS_RUNNING);
  tfs_record_free(&rec);
}

Test(queue, restart_runs_an_ended_task_again_as_a_new_one) {
  char a[TFS_ID_MAX + 1], r[TFS_ID_MAX + 1], *out = NULL, *err = NULL;
  cr_assert_eq(tq(NULL, NULL, "queue set q --parallel 2"), 0);
  setenv("TQ_SECRET", "s", 1);
  run_task(a, "--queue q --env TQ_SECRET -- sh -c 'echo \"v=$TQ_SECRET\" >> ran'");
  unsetenv("TQ_SECRET");
  tfs_record_free((tfs_record_t[]){sx_wait(a, 30000)});
  cr_assert_eq(tq(&out, &err, "restart %s", a), 0, "%s", err);
  cr_assert(strstr(err, "environment values are not stored") && strstr(err, "TQ_SECRET"), "%s",
            err);
  size_t n = strcspn(out, "\n");
  cr_assert(n > 0 && n <= TFS_ID_MAX);
  memcpy(r, out, n);
  r[n] = 0;
  free(out);
  free(err);
  cr_assert_str_neq(r, a);
  tfs_record_t rec = sx_wait(r, 30000), old = sx_load(a);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  cr_assert_str_eq(rec.queue, "q");
  cr_assert_str_eq(rec.cwd, old.cwd);
  cr_assert_str_eq(rec.argv[2], old.argv[2]);
  tfs_record_free(&rec);
  tfs_record_free(&old);
  /* A task that runs is refused; with the variable set here, the new
   * task gets its value. */
  char l[TFS_ID_MAX + 1];
  run_task(l, "-- sleep 300.185");
  cr_assert_eq(tq(NULL, &err, "restart %s", l), 100, "restart of a running task");
  cr_assert(strstr(err, "not ended"), "%s", err);
  free(err);
  cr_assert_eq(
      tu_sh(&out, "cd '%s' && TQ_SECRET=x '%s' restart %s 2>/dev/null", sx_tmp, tu_taskfs_bin(), a),
      0);
  n = strcspn(out, "\n");
  memcpy(r, out, n);
  r[n] = 0;
  free(out);
  tfs_record_free((tfs_record_t[]){sx_wait(r, 30000)});
  sx_assert_file("ran", "v=s\nv=\nv=x\n");
}

Test(queue, prune_by_age_and_state) {
  char ok[TFS_ID_MAX + 1], bad[TFS_ID_MAX + 1], *out = NULL, *err = NULL;
  run_task(ok, "-- true");
  run_task(bad, "-- false");
  tfs_record_free((tfs_record_t[]){sx_wait(ok, 30000)});
  tfs_record_t rec = sx_wait(bad, 30000);
  /* Ended eight days ago, as the record says. */
  rec.ended_ms -= 8LL * 24 * 3600 * 1000;
  cr_assert_eq(tfs_task_save(sx_store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tq(&out, &err, "prune --older-than 7d --state completed"), 0, "%s", err);
  cr_assert(strstr(out, "deleted 0"), "%s", out);
  free(out);
  free(err);
  cr_assert_eq(tq(&out, &err, "prune --older-than 7d --state failed"), 0, "%s", err);
  cr_assert(strstr(out, "deleted 1"), "%s", out);
  free(out);
  free(err);
  cr_assert_eq(tfs_task_load(sx_store, bad, &rec), TFS_ENOTASK);
  cr_assert_eq(tfs_task_load(sx_store, ok, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tq(NULL, &err, "prune --older-than soon"), 100);
  free(err);
  cr_assert_eq(tq(NULL, &err, "prune --state running"), 100);
  free(err);
}

/* ---- ids and listing ----------------------------------------------------------- */

Test(queue, verbs_take_unique_id_prefixes_of_four_characters_or_more) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], *out = NULL, *err = NULL;
  run_task(a, "-- true");
  run_task(b, "-- true");
  tfs_record_free((tfs_record_t[]){sx_wait(a, 30000)});
  tfs_record_free((tfs_record_t[]){sx_wait(b, 30000)});
  /* The ids share their first characters (the creation time). */
  size_t common = 0;
  while (a[common] == b[common])
    common++;
  cr_assert_geq(common, 4);
  cr_assert_eq(tq(&out, &err, "show %.*s", (int)common + 1, a), 0, "%s", err);
  cr_assert(strstr(out, a), "%s", out);
  free(out);
  free(err);
  cr_assert_eq(tq(NULL, &err, "show %.*s", (int)common, a), 100);
  cr_assert(strstr(err, "more than one task") && strstr(err, a) && strstr(err, b), "%s", err);
  free(err);
  cr_assert_eq(tq(NULL, &err, "show %.3s", a), 101);
  cr_assert(strstr(err, "at least 4 characters"), "%s", err);
  free(err);
  cr_assert_eq(tq(&out, NULL, "logs %.*s", (int)common + 1, b), 0);
  free(out);
}

Test(queue, ls_shows_times_reasons_colours_and_fits_long_keys) {
  char a[TFS_ID_MAX + 1], *out = NULL;
  char key[101];
  memset(key, 'k', 100);
  key[100] = 0;
  run_task(a, "--key %s -- false", key);
  tfs_record_free((tfs_record_t[]){sx_wait(a, 30000)});
  cr_assert_eq(tq(&out, NULL, "ls --color=never"), 0);
  cr_assert(strstr(out, "STARTED") && strstr(out, "ENDED") && strstr(out, "REASON"), "%s", out);
  cr_assert(strstr(out, "exited with code 1"), "%s", out);
  cr_assert(strstr(out, " ago"), "%s", out);
  cr_assert(!strchr(out, '\033'), "no colour asked: %s", out);
  free(out);
  cr_assert_eq(tq(&out, NULL, "ls --time --color=never"), 0);
  time_t now = time(NULL);
  struct tm tm;
  char day[16];
  localtime_r(&now, &tm);
  strftime(day, sizeof day, "%Y-%m-%d", &tm);
  cr_assert(strstr(out, day), "%s", out);
  free(out);
  cr_assert_eq(tq(&out, NULL, "ls --color=always"), 0);
  cr_assert(strstr(out, "\033["), "%s", out);
  free(out);
  /* On a terminal of 80 columns: colours unless NO_COLOR, the long key
   * cut, and every line fits. */
  const char *term = "script -qec \"stty cols 80 rows 24; %s'%s' ls\" /dev/null";
  cr_assert_eq(tu_sh(&out, term, "", tu_taskfs_bin()), 0);
  cr_assert(strstr(out, "\033["), "%s", out);
  free(out);
  cr_assert_eq(tu_sh(&out, term, "NO_COLOR=1 ", tu_taskfs_bin()), 0);
  cr_assert(!strchr(out, '\033'), "%s", out);
  cr_assert(strstr(out, "…"), "%s", out);
  for (char *line = out; *line;) {
    size_t len = strcspn(line, "\r\n"), cols = 0;
    for (size_t i = 0; i < len; i++)
      cols += ((unsigned char)line[i] & 0xC0) != 0x80;
    cr_assert_leq(cols, 80, "a line wider than the terminal: %.*s", (int)len, line);
    line += len;
    line += strspn(line, "\r\n");
  }
  free(out);
}
