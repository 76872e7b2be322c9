/* End-to-end tests of what tsp and pueue users expect from the command
 * line (issue 30): short task numbers, the newest task when no id is
 * given, several ids at once, a default queue, re-keying, restart's
 * environment. The real binary runs real tasks in a temporary store. */
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/helpers/testutil.h"

static char *tmp;   /* per-test temporary directory */
static char *state; /* <tmp>/state: the store */

static void setup(void) {
  tmp = tu_tmpdir("clinum");
  if (asprintf(&state, "%s/state", tmp) < 0)
    abort();
}

static void teardown(void) {
  /* Whatever a test left running goes with its store. */
  tu_sh(NULL, "TASKFS_STATE_DIR='%s' '%s' cancel --all -y >/dev/null 2>&1", state, tu_taskfs_bin());
  tu_rmrf(tmp);
  free(tmp);
  free(state);
}

TestSuite(clinum, .init = setup, .fini = teardown, .timeout = 120);

/* Runs a shell fragment in which $T is the taskfs binary with the test's
 * store; stdout into *out, stderr into *err (when not NULL). */
static int sh(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char **out, char **err, const char *fmt, ...) {
  va_list ap;
  char *frag, *errpath;
  va_start(ap, fmt);
  if (vasprintf(&frag, fmt, ap) < 0)
    abort();
  va_end(ap);
  if (asprintf(&errpath, "%s/stderr", tmp) < 0)
    abort();
  int rc = tu_sh(out, "export TASKFS_STATE_DIR='%s'; T='%s'; { %s ; } 2>'%s'", state,
                 tu_taskfs_bin(), frag, errpath);
  if (err) {
    *err = tu_read_file(errpath, NULL);
    if (!*err)
      *err = strdup("");
  }
  free(frag);
  free(errpath);
  return rc;
}

/* The record of task arg (`show --json`), parsed. */
static json_t *record(const char *arg) {
  char *out = NULL;
  cr_assert_eq(sh(&out, NULL, "$T show %s", arg), 0, "show %s", arg);
  json_t *j = json_loads(out, 0, NULL);
  cr_assert(j, "show %s: %s", arg, out);
  free(out);
  return j;
}

static void chomp(char *s) {
  s[strcspn(s, "\n")] = '\0';
}

/* The store holds max tasks, numbered 1 to max, each number once. */
static void expect_numbers_one_to(int max) {
  char *out = NULL;
  cr_assert_eq(sh(&out, NULL, "$T ls --json"), 0);
  json_t *all = json_loads(out, 0, NULL);
  cr_assert(all && json_array_size(all) == (size_t)max, "%s", out);
  int seen[64] = {0};
  size_t i;
  json_t *t;
  json_array_foreach(all, i, t) {
    json_int_t n = json_integer_value(json_object_get(t, "number"));
    cr_assert(n >= 1 && n <= max && n < 64, "number %lld", (long long)n);
    cr_assert_eq(seen[n]++, 0, "number %lld given twice", (long long)n);
  }
  json_decref(all);
  free(out);
}

Test(clinum, every_task_gets_a_number_also_from_parallel_runs) {
  char *out = NULL;
  /* Eight runs at once: eight distinct numbers, 1 to 8. */
  cr_assert_eq(
      sh(NULL, NULL, "for i in 1 2 3 4 5 6 7 8; do $T run -- true >/dev/null & done; wait"), 0);
  expect_numbers_one_to(8);
  /* ls shows them in a column of their own. */
  cr_assert_eq(sh(&out, NULL, "$T ls --columns number,state"), 0);
  cr_assert(strstr(out, "#") && strstr(out, "\n8 "), "%s", out);
  free(out);
}

Test(clinum, a_bare_number_names_the_task_with_that_number) {
  char *id1 = NULL, *id2 = NULL, *out = NULL, *err = NULL;
  cr_assert_eq(sh(&id1, NULL, "$T run --wait -- echo one"), 0);
  cr_assert_eq(sh(&id2, NULL, "$T run --wait -- echo two"), 0);
  chomp(id1);
  chomp(id2);
  cr_assert_eq(sh(&out, NULL, "$T logs 2"), 0);
  cr_assert_str_eq(out, "two\n");
  free(out);
  json_t *r = record("1");
  cr_assert_str_eq(json_string_value(json_object_get(r, "id")), id1);
  cr_assert_eq(json_integer_value(json_object_get(r, "number")), 1);
  json_decref(r);
  /* ids and prefixes keep working. */
  r = record(id2);
  cr_assert_eq(json_integer_value(json_object_get(r, "number")), 2);
  json_decref(r);
  /* A number no task has: no such task, never an id prefix. */
  cr_assert_eq(sh(NULL, &err, "$T show 1234"), 101);
  cr_assert(strstr(err, "1234"), "%s", err);
  free(err);
  /* A forgotten task's number is not given again. */
  cr_assert_eq(sh(NULL, NULL, "$T rm 2"), 0);
  cr_assert_eq(sh(NULL, NULL, "$T show 2 >/dev/null"), 101);
  cr_assert_eq(sh(NULL, NULL, "$T run --wait -- echo three >/dev/null"), 0);
  r = record("3");
  cr_assert_eq(json_integer_value(json_object_get(r, "number")), 3);
  json_decref(r);
  free(id1);
  free(id2);
}

Test(clinum, a_key_of_digits_only_or_like_an_id_is_refused) {
  char *id = NULL, *err = NULL;
  cr_assert_eq(sh(NULL, &err, "$T run --key 123 -- true"), 100);
  cr_assert(strstr(err, "number"), "%s", err);
  free(err);
  cr_assert_eq(sh(&id, NULL, "$T run -- true"), 0);
  /* The start of an existing task's id would hide that id. */
  id[8] = '\0';
  cr_assert_eq(sh(NULL, &err, "$T run --key %s -- true", id), 100);
  cr_assert(strstr(err, "id"), "%s", err);
  free(err);
  free(id);
}

Test(clinum, no_id_means_the_newest_task_with_a_note) {
  char *out = NULL, *err = NULL;
  cr_assert_eq(sh(NULL, NULL, "$T run --wait -- echo old >/dev/null"), 0);
  cr_assert_eq(sh(NULL, NULL, "$T run -- sh -c 'echo new; exit 4' >/dev/null"), 0);
  cr_assert_eq(sh(NULL, &err, "$T wait"), 4);
  cr_assert(strstr(err, "newest task: 2 ("), "%s", err);
  free(err);
  cr_assert_eq(sh(&out, &err, "$T logs"), 0);
  cr_assert_str_eq(out, "new\n");
  cr_assert(strstr(err, "newest task: 2"), "%s", err);
  free(out);
  free(err);
  json_t *r = record("");
  cr_assert_eq(json_integer_value(json_object_get(r, "number")), 2);
  json_decref(r);
  cr_assert_eq(sh(&out, &err, "$T cancel"), 0);
  cr_assert(strstr(out, "already ended"), "%s", out);
  cr_assert(strstr(err, "newest task: 2"), "%s", err);
  free(out);
  free(err);
}

Test(clinum, an_empty_store_has_no_newest_task) {
  char *err = NULL;
  cr_assert_eq(sh(NULL, &err, "$T logs"), 101);
  cr_assert(strstr(err, "no task"), "%s", err);
  free(err);
}

Test(clinum, several_ids_at_once_and_wait_exits_with_the_worst) {
  char *out = NULL, *err = NULL;
  cr_assert_eq(sh(NULL, NULL,
                  "$T run -- sh -c 'exit 3' >/dev/null; $T run -- true >/dev/null; "
                  "$T run -- sleep 600 >/dev/null; $T run -- sleep 600 >/dev/null"),
               0);
  cr_assert_eq(sh(NULL, NULL, "$T wait 1 2"), 3);
  cr_assert_eq(sh(&out, NULL, "$T pause 3 4"), 0);
  cr_assert_eq(
      sh(NULL, NULL, "$T show 3 | grep -q '\"paused\"' && $T show 4 | grep -q '\"paused\"'"), 0,
      "%s", out);
  free(out);
  cr_assert_eq(sh(NULL, NULL, "$T resume 3 4 >/dev/null"), 0);
  cr_assert_eq(sh(&out, NULL, "$T signal CONT 3 4"), 0);
  cr_assert(strstr(out, "SIGCONT") && strchr(strchr(out, '\n') + 1, '\n'), "%s", out);
  free(out);
  /* One that cannot be signalled makes the verb fail, after the others. */
  cr_assert_eq(sh(NULL, &err, "$T signal CONT 1 3"), 100);
  free(err);
  cr_assert_eq(sh(&out, NULL, "$T cancel -w 3 4"), 0);
  cr_assert(strstr(out, "cancelled") && strchr(strchr(strchr(out, '\n') + 1, '\n') + 1, '\n'), "%s",
            out);
  free(out);
  /* Every cancelled task is described (the first 130 is no interruption). */
  cr_assert_eq(sh(NULL, &err, "$T wait 2 3 4"), 130);
  cr_assert(strstr(strstr(err, "cancelled") + 1, "cancelled"), "%s", err);
  free(err);
  /* restart runs each again: two new ids. */
  cr_assert_eq(sh(&out, NULL, "$T restart 1 2"), 0);
  cr_assert(strchr(out, '\n') && strchr(strchr(out, '\n') + 1, '\n'), "%s", out);
  free(out);
}

Test(clinum, wait_all_and_cancel_all) {
  char *out = NULL, *err = NULL;
  cr_assert_eq(sh(NULL, NULL,
                  "$T run -- sleep 600 >/dev/null; $T run -- sleep 600 >/dev/null; "
                  "$T run -- sh -c 'sleep 1; exit 5' >/dev/null"),
               0);
  /* wait --all: every task not ended, the worst code of them. */
  cr_assert_eq(sh(NULL, NULL, "$T wait --all --timeout 0.3"), 124);
  cr_assert_eq(sh(NULL, NULL, "$T wait 3"), 5);
  /* Not a terminal to ask on: refused, nothing stopped. */
  cr_assert_eq(sh(NULL, &err, "$T cancel --all </dev/null"), 100);
  cr_assert(strstr(err, "-y"), "%s", err);
  free(err);
  cr_assert_eq(sh(&out, NULL, "$T ls --json --state running | grep -c '\"number\"'"), 0);
  cr_assert_str_eq(out, "2\n");
  free(out);
  cr_assert_eq(sh(&out, NULL, "$T cancel --all -y"), 0);
  cr_assert(strstr(out, "stop requested"), "%s", out);
  free(out);
  cr_assert_eq(sh(NULL, NULL, "$T wait --all; $T wait 1 2"), 130);
  cr_assert_eq(sh(NULL, &err, "$T wait --all"), 0);
  cr_assert(strstr(err, "nothing to wait for"), "%s", err);
  free(err);
}

Test(clinum, a_default_queue_from_the_config_and_after_last) {
  char *out = NULL, *err = NULL;
  cr_assert_eq(
      sh(NULL, NULL, "$T queue set serial --parallel 1 >/dev/null && $T config set queue serial"),
      0);
  cr_assert_eq(sh(NULL, &err, "$T config set queue .bad"), 100);
  free(err);
  cr_assert_eq(sh(NULL, NULL, "$T run -- sleep 600 >/dev/null; $T run -- true >/dev/null"), 0);
  /* Plain run went into the default queue: the second waits. */
  json_t *r = record("2");
  cr_assert_str_eq(json_string_value(json_object_get(r, "queue")), "serial");
  cr_assert_str_eq(json_string_value(json_object_get(r, "state")), "queued");
  json_decref(r);
  /* --no-queue runs at once. */
  cr_assert_eq(sh(NULL, NULL, "$T run --no-queue --wait -- true >/dev/null"), 0);
  /* --after last (and -): the newest task, named on stderr. */
  cr_assert_eq(sh(NULL, &err, "$T run --after last -- true >/dev/null"), 0);
  cr_assert(strstr(err, "newest task: 3"), "%s", err);
  free(err);
  cr_assert_eq(sh(NULL, NULL, "$T run --after - -- true >/dev/null"), 0);
  r = record("4");
  cr_assert_eq(json_array_size(json_object_get(r, "after")), 1);
  json_decref(r);
  cr_assert_eq(sh(&out, NULL, "$T show 5"), 0);
  cr_assert(strstr(out, "\"after\"") && strstr(out, "queued"), "%s", out);
  free(out);
}

Test(clinum, rekeying_an_ended_task_needs_replace) {
  char *err = NULL, *out = NULL;
  cr_assert_eq(sh(NULL, NULL, "$T run --wait --key build -- echo old >/dev/null"), 0);
  cr_assert_eq(sh(NULL, &err, "$T run --key build -- echo new"), 100);
  cr_assert(strstr(err, "--replace") && strstr(err, "taskfs rm build"), "%s", err);
  free(err);
  cr_assert_eq(sh(NULL, NULL, "$T run --wait --replace --key build -- echo new >/dev/null"), 0);
  cr_assert_eq(sh(&out, NULL, "$T logs build"), 0);
  cr_assert_str_eq(out, "new\n");
  free(out);
  /* The old task stays. */
  cr_assert_eq(sh(&out, NULL, "$T logs 1"), 0);
  cr_assert_str_eq(out, "old\n");
  free(out);
  /* A task of the key that has not ended is not replaced. */
  cr_assert_eq(sh(NULL, NULL, "$T run --key srv -- sleep 600 >/dev/null"), 0);
  cr_assert_eq(sh(NULL, &err, "$T run --replace --key srv -- sleep 601"), 100);
  cr_assert(strstr(err, "has not ended") && strstr(err, "cancel"), "%s", err);
  free(err);
}

Test(clinum, queue_pause_of_no_queue_and_queue_rm) {
  char *err = NULL, *out = NULL;
  cr_assert_eq(sh(NULL, &err, "$T queue pause nosuch"), 101);
  cr_assert(strstr(err, "no queue nosuch"), "%s", err);
  free(err);
  cr_assert_eq(sh(NULL, NULL, "$T run -- true >/dev/null"), 0);
  cr_assert_eq(sh(NULL, NULL, "$T queue resume nosuch"), 101);
  cr_assert_eq(sh(&out, NULL, "$T queue ls --json"), 0);
  cr_assert_str_eq(out, "[]\n");
  free(out);
  cr_assert_eq(sh(NULL, NULL, "$T queue set q --parallel 1 >/dev/null"), 0);
  cr_assert_eq(sh(NULL, NULL, "$T run --queue q -- sleep 600 >/dev/null"), 0);
  cr_assert_eq(sh(NULL, &err, "$T queue rm q"), 100);
  cr_assert(strstr(err, "run or wait"), "%s", err);
  free(err);
  cr_assert_eq(sh(NULL, NULL, "$T cancel -w 2 >/dev/null"), 0);
  cr_assert_eq(sh(NULL, NULL, "$T queue rm q >/dev/null"), 0);
  cr_assert_eq(sh(&out, NULL, "$T queue ls --json"), 0);
  cr_assert_str_eq(out, "[]\n");
  free(out);
  cr_assert_eq(sh(NULL, NULL, "$T queue rm q"), 101);
}

Test(clinum, restart_takes_env_names_from_here_and_says_which_it_could_not) {
  char *out = NULL, *err = NULL;
  cr_assert_eq(sh(NULL, NULL,
                  "FOO=one BAR=two $T run --wait --env FOO --env BAR -- sh -c 'echo \"$FOO $BAR\"' "
                  ">/dev/null"),
               0);
  cr_assert_eq(sh(NULL, &err, "unset BAR; FOO=three $T restart 1 >/dev/null && $T wait 2"), 0);
  cr_assert(strstr(err, "taken from this shell: FOO") && strstr(err, "not carried: BAR") &&
                strstr(err, "set them in this shell"),
            "%s", err);
  free(err);
  cr_assert_eq(sh(&out, NULL, "$T logs 2"), 0);
  cr_assert_str_eq(out, "three \n");
  free(out);
}

Test(clinum, a_task_skipped_for_a_failed_dependency_has_its_own_exit_code) {
  char *err = NULL;
  /* The dependency fails after the task was queued behind it: it waits
   * for its gate, made once the second run returned, so that "after"
   * does not depend on how fast that run was. */
  cr_assert_eq(sh(NULL, NULL,
                  "$T run -- sh -c 'until [ -e \"$0\" ]; do sleep 0.05; done; exit 1' "
                  "\"$TASKFS_STATE_DIR.gate\" >/dev/null; "
                  "$T run --after 1 -- true >/dev/null && : > \"$TASKFS_STATE_DIR.gate\""),
               0);
  cr_assert_eq(sh(NULL, &err, "$T wait 2"), 103);
  cr_assert(strstr(err, "not run"), "%s", err);
  free(err);
  /* ... or before it was started. */
  cr_assert_eq(sh(NULL, &err, "$T run --after 1 -- true >/dev/null"), 103);
  free(err);
  cr_assert_eq(sh(NULL, NULL, "$T wait 3"), 103);
  /* A command that cannot start keeps 127. */
  cr_assert_eq(sh(NULL, NULL, "$T run -- /nonexistent/cmd >/dev/null; $T wait 4"), 127);
}

Test(clinum, an_interrupted_run_wait_says_the_task_runs_on) {
  char *out = NULL, *err = NULL;
  cr_assert_eq(sh(&out, &err,
                  "$T run --wait -- sleep 600 >/dev/null 2>\"$TASKFS_STATE_DIR.err\" & p=$!; "
                  "until $T show 1 2>/dev/null | grep -q '\"running\"'; do sleep 0.05; done; "
                  "kill -TERM $p; wait $p; echo $?; cat \"$TASKFS_STATE_DIR.err\""),
               0);
  cr_assert(!strncmp(out, "130\n", 4), "%s", out);
  cr_assert(strstr(out, "runs on") && strstr(out, "taskfs cancel 1"), "%s", out);
  free(out);
  free(err);
  cr_assert_eq(sh(&out, NULL, "$T show 1 | grep -c '\"running\"'"), 0);
  free(out);
}

/* Issue 28: `run` returns without waiting for an fsync (the number is
 * linked without one), and the end of the task makes its number durable:
 * the supervisor opens numbers/<n> and fsyncs it with the end record. */
Test(clinum, a_start_waits_for_no_fsync_and_the_end_makes_the_number_durable) {
  char *out = NULL;
  if (sh(NULL, NULL, "command -v strace >/dev/null"))
    cr_skip_test("needs strace");
  /* LeakSanitizer refuses to run under ptrace (an ASan build exits
   * non-zero at its end under strace): no leak check here. */
  const char *asan = getenv("ASAN_OPTIONS");
  char opts[1024];
  snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  /* Without -f: the CLI alone, up to where `run` returns (and both the
   * run and the wait succeed: grep's 1 is "no fsync", never a failed
   * start). */
  cr_assert_eq(sh(&out, NULL,
                  "strace -qq -e trace=fsync,fdatasync,sync,syncfs -o '%s/cli' $T run -- true "
                  ">/dev/null || exit 9; $T wait 1 >/dev/null || exit 9; grep -c sync '%s/cli'",
                  tmp, tmp),
               1, "grep found fsyncs: %s", out);
  cr_assert_str_eq(out, "0\n");
  free(out);
  /* With -f: the supervisor too; task 2's number is opened and fsynced. */
  cr_assert_eq(sh(&out, NULL,
                  "strace -f -qq -e trace=openat,fsync -o '%s/all' $T run --wait -- true >/dev/null"
                  " && awk '/openat\\(.*\"2\", O_RDONLY/ { fd[$1 \" \" $NF] = 1 }"
                  " /fsync\\(/ { n = $2; sub(/^fsync\\(/, \"\", n); sub(/\\).*/, \"\", n);"
                  " if (($1 \" \" n) in fd) ok = 1 } END { print ok ? \"synced\" : \"not\" }'"
                  " '%s/all'",
                  tmp, tmp),
               0);
  cr_assert_str_eq(out, "synced\n");
  free(out);
}

/* numbers/next is a hint written in place (no inode made and freed per
 * task); a counter that is garbage or a planted symlink costs only probes:
 * the numbers still count on without a gap or a repeat. */
Test(clinum, the_counter_is_written_in_place_and_a_bad_one_costs_nothing_but_probes) {
  char *out = NULL;
  cr_assert_eq(
      sh(NULL, NULL, "$T run --wait -- true >/dev/null && $T run --wait -- true >/dev/null"), 0);
  cr_assert_eq(sh(&out, NULL,
                  "cd \"$TASKFS_STATE_DIR/numbers\" && a=$(stat -c %%i next) &&"
                  " $T run --wait -- true >/dev/null && b=$(stat -c %%i next) &&"
                  " echo \"$a $b $(cat next)\""),
               0);
  unsigned long a = 0, b = 0, next = 0;
  cr_assert_eq(sscanf(out, "%lu %lu %lu", &a, &b, &next), 3, "%s", out);
  cr_assert_eq(a, b, "numbers/next was replaced (inode %lu, then %lu)", a, b);
  cr_assert_eq(next, 4, "%s", out);
  free(out);
  /* Garbage longer than any number: task 4 all the same, and next reads 5. */
  cr_assert_eq(sh(&out, NULL,
                  "cd \"$TASKFS_STATE_DIR/numbers\" && printf 'zz-not-a-number-at-all-zz' > next &&"
                  " $T run --wait -- true >/dev/null && head -n 1 next"),
               0);
  cr_assert_str_eq(out, "5\n");
  free(out);
  /* A symlink in its place is neither followed nor written through. */
  cr_assert_eq(sh(&out, NULL,
                  "cd \"$TASKFS_STATE_DIR/numbers\" && printf 'keep\\n' > ../../elsewhere &&"
                  " rm next && ln -s ../../elsewhere next && $T run --wait -- true >/dev/null &&"
                  " cat ../../elsewhere"),
               0);
  cr_assert_str_eq(out, "keep\n");
  free(out);
  expect_numbers_one_to(5);
}

/* `wait` returns at the record that says the task ended; the supervisor
 * still holds the task's lock for its last steps (the number's fsyncs).
 * strace holds each of those 1 s, so `rm` meets a completed task whose
 * lock is held: it waits for the lock and deletes, never "completed, not
 * ended" (seen under load in test_serve_api as a flake). */
Test(clinum, rm_right_after_wait_waits_for_the_supervisor_to_finish) {
  char *out = NULL, *err = NULL;
  if (sh(NULL, NULL, "command -v strace >/dev/null"))
    cr_skip_test("needs strace");
  const char *asan = getenv("ASAN_OPTIONS"); /* LeakSanitizer refuses ptrace */
  char opts[1024];
  snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  int rc = sh(&out, &err,
              "(strace -f -qq -o /dev/null -e trace=fsync "
              "-e inject=fsync:delay_enter=1000000:when=3+ $T run -- true >'%s/id' 2>&1 &); "
              "until [ -s '%s/id' ]; do sleep 0.05; done; id=$(cat '%s/id'); "
              "$T wait \"$id\" >/dev/null && $T rm \"$id\"",
              tmp, tmp, tmp);
  cr_assert_eq(rc, 0, "rm after wait: %s %s", out, err);
  cr_assert(strstr(out, "deleted "), "%s", out);
  free(out);
  free(err);
}
