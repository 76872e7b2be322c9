/* Watching tasks and waiting for their end (core/watch.c, core/wait.c):
 * what a record save, a transcript append, a new task and a forgotten task
 * report; the tick without inotify; the blocking wait's signals and
 * hang-ups; tfs_task_wait_end's outcomes. Writers here do what the
 * supervisor does to the files (rename a record into place, append). */
#include "tests/core_fixture.h"

#include <poll.h>

TestSuite(watch, .init = fx_setup, .fini = fx_teardown, .timeout = 60);

typedef struct {
  char ids[16][TFS_ID_MAX + 1];
  unsigned what[16];
  int n, null_ids;
} seen_t;

static void on_change(const char *id, unsigned what, void *arg) {
  seen_t *s = arg;
  if (!id) {
    s->null_ids++;
    return;
  }
  if (s->n < 16) {
    snprintf(s->ids[s->n], sizeof s->ids[s->n], "%s", id);
    s->what[s->n++] = what;
  }
}

/* Waits (bounded) until the watch reports something, and returns it. */
static seen_t wait_report(tfs_watch_t *w) {
  seen_t s = {0};
  struct pollfd p = {.fd = tfs_watch_fd(w), .events = POLLIN};
  cr_assert_eq(poll(&p, 1, 10000), 1, "no event within 10 s");
  cr_assert_geq(tfs_watch_drain(w, on_change, &s), 0);
  return s;
}

Test(watch, state_output_and_gone) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  fx_create("x", NULL, a);
  fx_create("y", NULL, b);
  tfs_watch_t *w;
  cr_assert_eq(tfs_watch_open(fx_store, &w), 0);
  if (tfs_watch_fd(w) < 0)
    cr_skip_test("no inotify instance left for this user");
  cr_assert_eq(tfs_watch_add(w, a, TFS_WATCH_STATE | TFS_WATCH_OUTPUT), 0);
  cr_assert_eq(tfs_watch_add(w, b, TFS_WATCH_STATE), 0);
  cr_assert_eq(tfs_watch_tick_ms(w), 1000);

  fx_set_state(a, TFS_RUNNING);
  seen_t s = wait_report(w);
  cr_assert_eq(s.n, 1);
  cr_assert_str_eq(s.ids[0], a);
  cr_assert_eq(s.what[0], TFS_WATCH_STATE);

  /* A burst of appends is one report; b's transcript is not watched. */
  int fd = tfs_transcript_open_append(fx_store, a);
  cr_assert_geq(fd, 0);
  for (int i = 0; i < 100; i++)
    cr_assert_eq(tfs_transcript_append(fd, "line", 4, 1), 0);
  close(fd);
  fd = tfs_transcript_open_append(fx_store, b);
  cr_assert_eq(tfs_transcript_append(fd, "other", 5, 1), 0);
  close(fd);
  s = wait_report(w);
  cr_assert_eq(s.n, 1, "one report for a burst, none for b");
  cr_assert_str_eq(s.ids[0], a);
  cr_assert_eq(s.what[0], TFS_WATCH_OUTPUT);

  /* Changing b's mask; then forgetting it reports it gone. */
  cr_assert_eq(tfs_watch_add(w, b, TFS_WATCH_STATE | TFS_WATCH_OUTPUT), 0);
  fx_set_state(b, TFS_COMPLETED);
  s = wait_report(w);
  cr_assert_str_eq(s.ids[0], b);
  cr_assert_eq(tfs_task_forget(fx_store, b), 0);
  s = wait_report(w);
  cr_assert_eq(s.n, 1);
  cr_assert_str_eq(s.ids[0], b);
  cr_assert(s.what[0] & TFS_WATCH_GONE, "what = %u", s.what[0]);
  cr_assert_eq(tfs_watch_tick_ms(w), 250, "b is gone: the tick alone watches it now");
  cr_assert_eq(tfs_watch_remove(w, b), 0);
  cr_assert_eq(tfs_watch_remove(w, b), TFS_ENOTASK);
  cr_assert_eq(tfs_watch_tick_ms(w), 1000);

  /* A removed id is quiet. */
  cr_assert_eq(tfs_watch_remove(w, a), 0);
  fx_set_state(a, TFS_COMPLETED);
  cr_assert_eq(tfs_watch_drain(w, on_change, &s), 0);
  cr_assert_eq(tfs_watch_add(w, "zzzzzzzz-zzzzzz", TFS_WATCH_STATE), TFS_ENOTASK);
  cr_assert_eq(tfs_watch_add(w, "../etc", TFS_WATCH_STATE), TFS_EBADID);
  tfs_watch_close(w);
}

/* tasks/ itself: a task appearing (its dir, before its record) and going. */
Test(watch, tasks_appear_and_go) {
  tfs_watch_t *w;
  cr_assert_eq(tfs_watch_open(fx_store, &w), 0);
  if (tfs_watch_fd(w) < 0)
    cr_skip_test("no inotify instance left for this user");
  cr_assert_eq(tfs_watch_tasks(w), 0);
  char id[TFS_ID_MAX + 1];
  fx_create("x", NULL, id);
  seen_t s = wait_report(w);
  cr_assert_geq(s.n, 1);
  cr_assert_str_eq(s.ids[0], id);
  cr_assert_eq(s.what[0], TFS_WATCH_CREATED);
  fx_set_state(id, TFS_COMPLETED);
  cr_assert_eq(tfs_task_forget(fx_store, id), 0);
  s = wait_report(w);
  cr_assert_str_eq(s.ids[s.n - 1], id);
  cr_assert_eq(s.what[s.n - 1], TFS_WATCH_DELETED);
  tfs_watch_close(w);
}

/* TASKFS_NO_INOTIFY: no fd, the tick alone, shorter; the wait still waits. */
Test(watch, disabled_by_the_environment) {
  char id[TFS_ID_MAX + 1];
  fx_create("x", NULL, id);
  setenv("TASKFS_NO_INOTIFY", "0", 1);
  cr_assert_eq(tfs_watch_disabled(), 0, "\"0\" does not disable");
  setenv("TASKFS_NO_INOTIFY", "1", 1);
  cr_assert_eq(tfs_watch_disabled(), 1);
  tfs_watch_t *w;
  cr_assert_eq(tfs_watch_open(fx_store, &w), 0);
  unsetenv("TASKFS_NO_INOTIFY");
  cr_assert_eq(tfs_watch_fd(w), -1);
  cr_assert_eq(tfs_watch_add(w, id, TFS_WATCH_STATE), -ENOSYS);
  cr_assert_eq(tfs_watch_tick_ms(w), 250);
  cr_assert_eq(tfs_watch_drain(w, NULL, NULL), 0);
  int64_t t0 = tfs_now_ms();
  cr_assert_eq(tfs_watch_wait(w, 30, NULL, -1, NULL, NULL), 0);
  cr_assert_geq(tfs_now_ms() - t0, 25, "the wait returned before its timeout");
  cr_assert_eq(tfs_watch_remove(w, id), 0);
  tfs_watch_close(w);
}

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig) {
  got_usr1 = sig;
}

/* Blocks SIGUSR1 with a handler, raises it (pending: it is delivered
 * inside the next wait that lets it through), and fills *during with the
 * mask that does; *old is the mask to put back. */
static void usr1_pending(sigset_t *old, sigset_t *during) {
  struct sigaction sa = {.sa_handler = on_usr1};
  sigset_t block;
  sigaction(SIGUSR1, &sa, NULL);
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigprocmask(SIG_BLOCK, &block, old);
  *during = *old;
  sigdelset(during, SIGUSR1);
  got_usr1 = 0;
  raise(SIGUSR1);
}

/* The blocking wait: a signal let through by the mask interrupts it (the
 * signal is pending before the call: delivered inside ppoll, never lost);
 * a pipe whose reader went away is a hang-up. */
Test(watch, wait_signals_and_hangups) {
  tfs_watch_t *w;
  cr_assert_eq(tfs_watch_open(fx_store, &w), 0);
  sigset_t old, during;
  usr1_pending(&old, &during);
  cr_assert_eq(got_usr1, 0, "blocked");
  cr_assert_eq(tfs_watch_wait(w, 10000, &during, -1, NULL, NULL), -EINTR);
  cr_assert_eq(got_usr1, SIGUSR1);
  sigprocmask(SIG_SETMASK, &old, NULL);

  int p[2];
  cr_assert_eq(pipe(p), 0);
  cr_assert_eq(tfs_watch_wait(w, 20, NULL, p[1], NULL, NULL), 0, "a live reader: no hang-up");
  close(p[0]);
  cr_assert_eq(tfs_watch_wait(w, 10000, NULL, p[1], NULL, NULL), TFS_WATCH_HANGUP);
  close(p[1]);
  tfs_watch_close(w);
}

/* tfs_task_wait_end: an end written by another process, a timeout, a
 * signal, a task that is gone, and a dead supervisor's task settled lost. */
Test(watch, wait_end_outcomes) {
  char id[TFS_ID_MAX + 1];
  fx_create("x", NULL, id);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_wait_end(fx_store, id, 50, NULL, &rec), -ETIMEDOUT);
  cr_assert_eq(rec.state, TFS_QUEUED, "the record as last read");
  tfs_record_free(&rec);

  pid_t pid = fork();
  if (pid == 0) {
    /* Ends the task once the parent waits (its watch is in place when it
     * has read the queued record, but the end is found either way). */
    tfs_store_t *s;
    if (tfs_store_open(fx_path(""), &s))
      _exit(1);
    tfs_record_t r;
    if (tfs_task_load(s, id, &r))
      _exit(2);
    r.state = TFS_COMPLETED;
    r.exit_code = 0;
    _exit(tfs_task_save(s, &r) ? 3 : 0);
  }
  fx_track(pid);
  cr_assert_eq(tfs_task_wait_end(fx_store, id, 20000, NULL, &rec), 0);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  cr_assert_eq(fx_wait(pid), 0);
  cr_assert_eq(tfs_task_wait_end(fx_store, id, 0, NULL, NULL), 0, "ended: at once");

  /* A signal the mask lets through ends the wait. */
  char id2[TFS_ID_MAX + 1];
  fx_create("y", NULL, id2);
  sigset_t old, during;
  usr1_pending(&old, &during);
  cr_assert_eq(tfs_task_wait_end(fx_store, id2, -1, &during, NULL), -EINTR);
  sigprocmask(SIG_SETMASK, &old, NULL);

  /* Running with a supervisor pid but no lock holder: lost, and written. */
  cr_assert_eq(tfs_task_load(fx_store, id2, &rec), 0);
  rec.state = TFS_RUNNING;
  rec.supervisor_pid = 1;
  rec.alive_ms = tfs_now_ms();
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_wait_end(fx_store, id2, 5000, NULL, &rec), 0);
  cr_assert_eq(rec.state, TFS_LOST);
  tfs_record_free(&rec);
  char p[128];
  snprintf(p, sizeof p, "tasks/%s/record.json", id2);
  char *text = tu_read_file(fx_path(p), NULL);
  cr_assert(text && strstr(text, "\"state\": \"lost\""), "settled on disk: %s", text);
  free(text);

  cr_assert_eq(tfs_task_wait_end(fx_store, "zzzzzzzz-zzzzzz", 1000, NULL, NULL), TFS_ENOTASK);
  cr_assert_eq(tfs_task_wait_end(fx_store, "bad", 1000, NULL, NULL), TFS_EBADID);
}

/* tfs_task_ended, the look without the wait: not yet, an end, a lost task
 * settled on disk, a dir still being created, no task. */
Test(watch, ended_looks_once) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  fx_create("x", NULL, id);
  cr_assert_eq(tfs_task_ended(fx_store, id, &rec), 0);
  cr_assert_eq(rec.state, TFS_QUEUED);
  tfs_record_free(&rec);
  fx_set_state(id, TFS_FAILED);
  cr_assert_eq(tfs_task_ended(fx_store, id, &rec), 1);
  cr_assert_eq(rec.state, TFS_FAILED);
  tfs_record_free(&rec);

  /* Running, a supervisor pid, no lock holder: lost, and written. */
  char id2[TFS_ID_MAX + 1];
  fx_create("y", NULL, id2);
  cr_assert_eq(tfs_task_load(fx_store, id2, &rec), 0);
  rec.state = TFS_RUNNING;
  rec.supervisor_pid = 1;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_ended(fx_store, id2, NULL), 1);
  char p[128];
  snprintf(p, sizeof p, "tasks/%s/record.json", id2);
  char *text = tu_read_file(fx_path(p), NULL);
  cr_assert(text && strstr(text, "\"state\": \"lost\""), "settled on disk: %s", text);
  free(text);

  /* A dir without its record yet: being created while young. */
  snprintf(p, sizeof p, "tasks/%s/record.json", id);
  cr_assert_eq(unlink(fx_path(p)), 0);
  cr_assert_eq(tfs_task_ended(fx_store, id, &rec), -EAGAIN);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_ended(fx_store, "zzzzzzzz-zzzzzz", &rec), TFS_ENOTASK);
  cr_assert_eq(mkdir(fx_path("tasks/0000000a-aaaaaa"), 0700), 0);
  cr_assert_eq(tfs_task_ended(fx_store, "0000000a-aaaaaa", NULL), TFS_ENOTASK,
               "an old dir that never got its record is no task");
  cr_assert_eq(tfs_task_ended(fx_store, "bad", NULL), TFS_EBADID);
}
