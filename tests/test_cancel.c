/* Stop requests through the store: request, query, clear. */
#include "tests/core_fixture.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>

TestSuite(cancel, .init = fx_setup, .fini = fx_teardown, .timeout = 30);

Test(cancel, request_query_clear) {
  char id[TFS_ID_MAX + 1], who[128];
  int64_t at = -1;
  fx_create("x", NULL, id);
  cr_assert_eq(tfs_cancel_query(fx_store, id, who, sizeof who, &at), 0);
  cr_assert_str_eq(who, "");
  cr_assert_eq(at, 0);
  int64_t before = tfs_now_ms();
  cr_assert_eq(tfs_cancel_request(fx_store, id, "cli pid 123 uid 0 \xff"), 0);
  cr_assert_eq(tfs_cancel_query(fx_store, id, who, sizeof who, &at), 1);
  cr_assert_str_eq(who, "cli pid 123 uid 0 \xef\xbf\xbd");
  cr_assert_geq(at, before - 1000);
  cr_assert_leq(at, tfs_now_ms() + 1000);
  cr_assert_eq(tfs_cancel_query(fx_store, id, NULL, 0, NULL), 1);
  /* Short buffers are cut, never overrun. */
  char tiny[4];
  cr_assert_eq(tfs_cancel_query(fx_store, id, tiny, sizeof tiny, NULL), 1);
  cr_assert_str_eq(tiny, "cli");
  struct stat st;
  char p[64];
  snprintf(p, sizeof p, "tasks/%s/cancel", id);
  cr_assert_eq(stat(fx_path(p), &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600);
  /* A second request replaces the first. */
  cr_assert_eq(tfs_cancel_request(fx_store, id, NULL), 0);
  cr_assert_eq(tfs_cancel_query(fx_store, id, who, sizeof who, &at), 1);
  cr_assert_str_eq(who, "");
  cr_assert_eq(tfs_cancel_clear(fx_store, id), 0);
  cr_assert_eq(tfs_cancel_query(fx_store, id, who, sizeof who, &at), 0);
  cr_assert_eq(tfs_cancel_clear(fx_store, id), 0, "clearing twice is fine");
  /* A hand-made file (any content) is a request too. */
  fx_write(p, "1\n");
  cr_assert_eq(tfs_cancel_query(fx_store, id, who, sizeof who, &at), 1);
  cr_assert_eq(at, 0);
}

Test(cancel, finished_and_unknown) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  fx_create("x", NULL, id);
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  rec.state = TFS_CANCELLED;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_cancel_request(fx_store, id, "me"), TFS_EFINISHED);
  cr_assert_eq(tfs_cancel_query(fx_store, id, NULL, 0, NULL), 0, "nothing was written");
  cr_assert_eq(tfs_cancel_request(fx_store, "zzzzzzzz-zzzzzz", "me"), TFS_ENOTASK);
  cr_assert_eq(tfs_cancel_query(fx_store, "zzzzzzzz-zzzzzz", NULL, 0, NULL), TFS_ENOTASK);
  cr_assert_eq(tfs_cancel_clear(fx_store, "zzzzzzzz-zzzzzz"), TFS_ENOTASK);
  /* A running task whose supervisor died reads lost: finished too. */
  char id2[TFS_ID_MAX + 1];
  fx_create("y", NULL, id2);
  cr_assert_eq(tfs_task_load(fx_store, id2, &rec), 0);
  rec.state = TFS_RUNNING;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_cancel_request(fx_store, id2, "me"), TFS_EFINISHED);
}

/* The doorbell: a request writes one byte into a FIFO that has a reader,
 * and never writes into anything else that has the name. */
Test(cancel, rings_only_a_fifo) {
  char id[TFS_ID_MAX + 1], p[64], target[PATH_MAX], buf[8];
  struct stat st;
  fx_create("x", NULL, id);
  snprintf(p, sizeof p, "tasks/%s/%s", id, tfs_task_file_name(TFS_FILE_DOORBELL));

  /* No doorbell, or a FIFO nobody reads: the request still succeeds. */
  cr_assert_eq(tfs_cancel_request(fx_store, id, "a"), 0);
  cr_assert_eq(mkfifo(fx_path(p), 0600), 0);
  cr_assert_eq(tfs_cancel_request(fx_store, id, "b"), 0, "ENXIO must be ignored");

  /* A FIFO with a reader gets rung; a full one (EAGAIN) is fine. */
  int fd = open(fx_path(p), O_RDWR | O_NONBLOCK);
  cr_assert_geq(fd, 0);
  cr_assert_eq(tfs_cancel_request(fx_store, id, "c"), 0);
  cr_assert_eq(read(fd, buf, sizeof buf), 1, "the doorbell was not rung");
  cr_assert_eq(fcntl(fd, F_SETPIPE_SZ, 4096) >= 0, 1);
  while (write(fd, "x", 1) == 1)
    ;
  cr_assert_eq(tfs_cancel_request(fx_store, id, "d"), 0, "EAGAIN must be ignored");
  close(fd);

  /* A regular file in its place stays untouched. */
  cr_assert_eq(unlink(fx_path(p)), 0);
  fx_write(p, "");
  cr_assert_eq(tfs_cancel_request(fx_store, id, "e"), 0);
  cr_assert_eq(stat(fx_path(p), &st), 0);
  cr_assert(S_ISREG(st.st_mode) && st.st_size == 0, "a regular file named doorbell was written");

  /* A symlink in its place is not followed. */
  cr_assert_eq(unlink(fx_path(p)), 0);
  snprintf(target, sizeof target, "%s", fx_path("outside"));
  fx_write("outside", "");
  cr_assert_eq(symlink(target, fx_path(p)), 0);
  cr_assert_eq(tfs_cancel_request(fx_store, id, "f"), 0);
  cr_assert_eq(stat(target, &st), 0);
  cr_assert_eq(st.st_size, 0, "the doorbell symlink was followed");
}

/* ---- a stop request racing the supervisor's final save ------------------ */

/* The interleaving of the race, made deterministic: this test binary
 * interposes renameat(), which core's atomic writes use to put a file in
 * place. Armed with a task id, just before that task's cancel file lands
 * it plays the supervisor finishing on its own: the final save (completed)
 * and the clear of the cancel file, both done before the request's file
 * arrives. */
static const char *g_finish_first;

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
  if (g_finish_first && !strcmp(newpath, "cancel")) {
    const char *id = g_finish_first;
    g_finish_first = NULL; /* the saves below rename too */
    fx_set_state(id, TFS_COMPLETED);
    tfs_cancel_clear(fx_store, id);
  }
  return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 0);
}

/* The task reads running (a live supervisor holds the lock) when the
 * request checks it, and has ended on its own by the time the request's
 * file is written: the request says so, and leaves no stop request behind
 * (the mount would show one, and the MCP cancel answered stopped: true). */
Test(cancel, request_after_the_final_save_leaves_nothing) {
  char id[TFS_ID_MAX + 1], p[128];
  fx_create("x", NULL, id);
  fx_set_state(id, TFS_RUNNING);
  int lock = tfs_task_lock(fx_store, id); /* the supervisor lives */
  cr_assert_geq(lock, 0);
  g_finish_first = id;
  cr_assert_eq(tfs_cancel_request(fx_store, id, "late requester"), TFS_EFINISHED);
  cr_assert_null(g_finish_first, "the interleaving did not happen");
  cr_assert_eq(tfs_cancel_query(fx_store, id, NULL, 0, NULL), 0);
  struct stat st;
  snprintf(p, sizeof p, "tasks/%s/cancel", id);
  cr_assert_neq(stat(fx_path(p), &st), 0, "the request's file stayed");
  close(lock);
}

/* Records the task cancelled by a request of by, at ms, as its supervisor
 * does when the request ends it. */
static void end_by_request(const char *id, const char *by, int64_t ms) {
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  rec.state = TFS_CANCELLED;
  rec.cancel_by = strdup(by);
  rec.cancel_ms = ms;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
}

/* For an ended task only the request that ended it counts: a stale cancel
 * file beside an end of its own reads as no request; the one the record
 * names reads as itself. */
Test(cancel, ended_tasks_report_only_the_request_that_ended_them) {
  char id[TFS_ID_MAX + 1], p[128], who[64];
  int64_t at;
  fx_create("x", NULL, id);
  fx_set_state(id, TFS_COMPLETED);
  snprintf(p, sizeof p, "tasks/%s/cancel", id);
  fx_write(p, "{\"by\":\"stale\",\"at\":\"2026-01-01T00:00:00.000Z\"}\n");
  cr_assert_eq(tfs_cancel_query(fx_store, id, who, sizeof who, &at), 0);

  end_by_request(id, "cli pid 7", 1795916208999LL);
  cr_assert_eq(tfs_cancel_query(fx_store, id, who, sizeof who, &at), 1);
  cr_assert_str_eq(who, "cli pid 7", "the record's request, not the file's");
  cr_assert_eq(at, 1795916208999LL);
}

/* What a face shows as a task's stop request (tfs_cancel_status): a
 * pending request, or the one that ended the task after the supervisor
 * has consumed its file; never a stale file beside an end of its own. */
Test(cancel, status_is_pending_or_the_request_that_ended_the_task) {
  char id[TFS_ID_MAX + 1], p[128], who[64];
  int64_t at = -1;
  fx_create("x", NULL, id);
  cr_assert_eq(tfs_cancel_status(fx_store, id, who, sizeof who, &at), 0);
  cr_assert_str_eq(who, "");
  cr_assert_eq(at, 0);
  cr_assert_eq(tfs_cancel_request(fx_store, id, "cli pid 9"), 0);
  cr_assert_eq(tfs_cancel_status(fx_store, id, who, sizeof who, &at), 1, "pending");
  cr_assert_str_eq(who, "cli pid 9");

  /* The supervisor acts on it: records it, clears the file. */
  end_by_request(id, "cli pid 9", 1795916208123LL);
  cr_assert_eq(tfs_cancel_clear(fx_store, id), 0);
  cr_assert_eq(tfs_cancel_query(fx_store, id, NULL, 0, NULL), 0, "nothing pending");
  cr_assert_eq(tfs_cancel_status(fx_store, id, who, sizeof who, &at), 1,
               "the request that ended it");
  cr_assert_str_eq(who, "cli pid 9");
  cr_assert_eq(at, 1795916208123LL);

  /* An end of its own with a stale file beside it: no request. */
  char id2[TFS_ID_MAX + 1];
  fx_create("y", NULL, id2);
  fx_set_state(id2, TFS_COMPLETED);
  snprintf(p, sizeof p, "tasks/%s/cancel", id2);
  fx_write(p, "{\"by\":\"stale\",\"at\":\"2026-01-01T00:00:00.000Z\"}\n");
  cr_assert_eq(tfs_cancel_status(fx_store, id2, who, sizeof who, &at), 0);
  cr_assert_eq(tfs_cancel_status(fx_store, "zzzzzzzz-zzzzzz", NULL, 0, NULL), TFS_ENOTASK);
}
