/* A line without a newline (a prompt that waits for its answer) reaches
 * the transcript while the task runs: the supervisor writes it after a
 * short quiet, and it is still one line when its newline comes. Real
 * supervisors, a real `printf 'Continue? '`, real `taskfs logs -f` and
 * `tail -f`; every verdict waits for the event (bounds far below the
 * task's own sleep, far above any delay a loaded machine adds). */
#include "tests/sup_fixture.h"

TestSuite(prompt, .init = sx_setup, .fini = sx_teardown, .timeout = 90);

typedef struct {
  const char *path;
  const char *want;
} has_t;

static int file_has(void *arg) {
  const has_t *h = arg;
  size_t len = 0;
  char *got = tu_read_file(h->path, &len);
  int ok = got && memmem(got, len, h->want, strlen(h->want)) != NULL;
  free(got);
  return ok;
}

Test(prompt, a_prompt_without_newline_reaches_followers_while_the_task_waits) {
  char id[TFS_ID_MAX + 1], tx[PATH_MAX], logs[PATH_MAX], tail[PATH_MAX];
  sx_start(id, "printf 'Continue? '; sleep 300.281", NULL, NULL, NULL);
  snprintf(tx, sizeof tx, "%s/tasks/%s/transcript", sx_state, id);
  snprintf(logs, sizeof logs, "%s/logs.out", sx_tmp);
  snprintf(tail, sizeof tail, "%s/tail.out", sx_tmp);
  /* Followers in the test directory: the teardown ends them. */
  cr_assert_eq(tu_sh(NULL, "cd '%s' && { '%s' logs -f --state-dir '%s' %s >'%s' 2>&1 & }", sx_tmp,
                     tu_taskfs_bin(), sx_state, id, logs),
               0);
  cr_assert_eq(tu_sh(NULL, "cd '%s' && { tail -f '%s' >'%s' 2>&1 & }", sx_tmp, tx, tail), 0);
  has_t in_tx = {tx, "Continue? "}, in_logs = {logs, "Continue? "}, in_tail = {tail, "Continue? "};
  cr_assert(tu_wait_until(file_has, &in_tx, 25000), "the prompt never reached the transcript");
  cr_assert(tu_wait_until(file_has, &in_logs, 25000), "logs -f never showed the prompt");
  cr_assert(tu_wait_until(file_has, &in_tail, 25000), "tail -f never showed the prompt");
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.state, TFS_RUNNING, "the prompt came with the task's end, not before it");
  tfs_record_free(&rec);
}

static int exists(void *arg) {
  return access(arg, F_OK) == 0;
}

Test(prompt, the_answer_continues_the_prompt_as_one_line) {
  char id[TFS_ID_MAX + 1], tx[PATH_MAX], script[PATH_MAX * 2], go[PATH_MAX];
  snprintf(go, sizeof go, "%s/go", sx_tmp);
  snprintf(script, sizeof script,
           "printf 'Continue? '; while [ ! -e '%s' ]; do sleep 0.05; done; echo yes; "
           "printf 'a\\rb\\rc\\n'",
           go);
  sx_start(id, script, NULL, NULL, NULL);
  snprintf(tx, sizeof tx, "%s/tasks/%s/transcript", sx_state, id);
  has_t in_tx = {tx, "Continue? "};
  cr_assert(tu_wait_until(file_has, &in_tx, 25000), "the prompt never reached the transcript");
  cr_assert_eq(tu_write_file(go, "", 0), 0);
  cr_assert(tu_wait_until(exists, go, 1000));
  tfs_record_t rec = sx_wait(id, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  cr_assert_eq(rec.lines, 2, "the prompt and its answer are one line, the progress one more: %lld",
               (long long)rec.lines);
  tfs_record_free(&rec);
  size_t len = 0;
  char *got = sx_task_file(id, "transcript", &len);
  cr_assert_not_null(got);
  cr_assert_eq(len, strlen("Continue? yes\na\rb\rc\n"));
  cr_assert(!memcmp(got, "Continue? yes\na\rb\rc\n", len), "transcript: %.*s", (int)len, got);
  free(got);
  /* Read back by line, the prompt and its answer are line 1. */
  char *out = NULL;
  cr_assert_eq(sx_taskfs(&out, NULL, "logs --state-dir '%s' %s", sx_state, id), 0);
  cr_assert_str_eq(out, "Continue? yes\na\rb\rc\n");
  free(out);
}
