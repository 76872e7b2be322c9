/* Shared fixture of the core store tests: a fresh store per test, removed
 * afterwards even when the test fails, plus small helpers. Included by the
 * tests/test_*.c files of the core only. */
#ifndef TASKFS_TESTS_CORE_FIXTURE_H
#define TASKFS_TESTS_CORE_FIXTURE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "taskfs/taskfs.h"
#include "tests/helpers/testutil.h"

static char *fx_dir;
static tfs_store_t *fx_store;
/* Children the test forked; killed at teardown so none outlives a failure. */
static pid_t fx_kids[64];
static int fx_nkids;

static __attribute__((unused)) void fx_setup(void) {
  fx_dir = tu_tmpdir("core");
  char path[4096];
  snprintf(path, sizeof path, "%s/state", fx_dir);
  int err = tfs_store_open(path, &fx_store);
  cr_assert_eq(err, 0, "tfs_store_open: %s", tfs_strerror(err));
}

static __attribute__((unused)) void fx_teardown(void) {
  for (int i = 0; i < fx_nkids; i++)
    if (fx_kids[i] > 0) {
      kill(fx_kids[i], SIGKILL);
      waitpid(fx_kids[i], NULL, 0);
    }
  fx_nkids = 0;
  tfs_store_close(fx_store);
  fx_store = NULL;
  tu_cleanup_dir(fx_dir);
  free(fx_dir);
  fx_dir = NULL;
}

static __attribute__((unused)) void fx_track(pid_t pid) {
  if (fx_nkids < (int)(sizeof fx_kids / sizeof *fx_kids))
    fx_kids[fx_nkids++] = pid;
}

/* Path of something inside the store. */
static __attribute__((unused)) const char *fx_path(const char *rel) {
  static char buf[4][4096];
  static int slot;
  char *b = buf[slot++ % 4];
  snprintf(b, 4096, "%s/state/%s", fx_dir, rel);
  return b;
}

/* Creates a task running argv[0] = cmd (no key) and returns its id. */
static __attribute__((unused)) void fx_create(const char *cmd, const char *key,
                                              char id[TFS_ID_MAX + 1]) {
  char *argv[] = {(char *)cmd, (char *)"arg", NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = "/tmp",
                          .key = key,
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1};
  int existed = -1;
  int err = tfs_task_create(fx_store, &spec, id, &existed);
  cr_assert_eq(err, 0, "tfs_task_create: %s", tfs_strerror(err));
}

/* Sets a task's state as a supervisor would (an end also gets its exit
 * code and time), e.g. so that it may be forgotten or pruned: only ended
 * tasks are. */
static __attribute__((unused)) void fx_set_state(const char *id, tfs_state_t state) {
  tfs_record_t rec;
  int err = tfs_task_load(fx_store, id, &rec);
  cr_assert_eq(err, 0, "load %s: %s", id, tfs_strerror(err));
  rec.state = state;
  if (tfs_state_terminal(state)) {
    rec.exit_code = state == TFS_COMPLETED ? 0 : 1;
    rec.ended_ms = tfs_now_ms();
  }
  err = tfs_task_save(fx_store, &rec);
  cr_assert_eq(err, 0, "save %s: %s", id, tfs_strerror(err));
  tfs_record_free(&rec);
}

/* Lists every task as the faces do (tfs_task_list_opts, oldest first),
 * asserting success; returns how many records were corrupt. cb may be
 * NULL. */
static __attribute__((unused)) size_t fx_list(tfs_list_cb cb, void *arg) {
  tfs_list_stats_t st;
  int err = tfs_task_list_opts(fx_store, NULL, cb, arg, &st);
  cr_assert_eq(err, 0, "tfs_task_list_opts: %s", tfs_strerror(err));
  return st.corrupt;
}

/* Waits for a child and returns its exit status (or 128 + signal). */
static __attribute__((unused)) int fx_wait(pid_t pid) {
  int st;
  if (waitpid(pid, &st, 0) < 0)
    return -1;
  for (int i = 0; i < fx_nkids; i++)
    if (fx_kids[i] == pid)
      fx_kids[i] = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static __attribute__((unused)) void fx_write(const char *rel, const char *text) {
  cr_assert_eq(tu_write_file(fx_path(rel), text, strlen(text)), 0, "write %s", rel);
}

#endif
