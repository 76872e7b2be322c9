/* Concurrent creators: unique ids across processes, and exactly one winner
 * per key (also for reruns). */
#include "tests/core_fixture.h"

#include <dirent.h>

TestSuite(race, .init = fx_setup, .fini = fx_teardown, .timeout = 120);

static int strcmp_nl(const char *a, const char *b) {
  return strncmp(a, b, 15);
}

#define NPROC 8
#define PER 200

static int count_cb(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  (*(int *)arg)++;
  return 0;
}

/* Each child writes the ids it made to a pipe, one per line. */
Test(race, many_creators_unique_ids) {
  int pfd[2];
  cr_assert_eq(pipe(pfd), 0);
  for (int k = 0; k < NPROC; k++) {
    pid_t pid = fork();
    if (pid == 0) {
      close(pfd[0]);
      tfs_store_t *s; /* each process opens its own store, like real users */
      if (tfs_store_open(fx_path(""), &s))
        _exit(1);
      for (int i = 0; i < PER; i++) {
        char id[TFS_ID_MAX + 1], line[32];
        char *argv[] = {"echo", "hi", NULL};
        tfs_task_spec_t spec = {
            .argv = argv, .cwd = "/", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
        if (tfs_task_create(s, &spec, id, NULL))
          _exit(2);
        int n = snprintf(line, sizeof line, "%s\n", id);
        if (write(pfd[1], line, (size_t)n) != n)
          _exit(3);
      }
      tfs_store_close(s);
      _exit(0);
    }
    fx_track(pid);
  }
  close(pfd[1]);
  size_t cap = NPROC * PER * 16 + 1, len = 0;
  char *all = malloc(cap);
  ssize_t r;
  while ((r = read(pfd[0], all + len, cap - len)) > 0)
    len += (size_t)r;
  close(pfd[0]);
  for (int k = 0; k < fx_nkids; k++)
    if (fx_kids[k])
      cr_assert_eq(fx_wait(fx_kids[k]), 0);
  cr_assert_eq(len, (size_t)NPROC * PER * 16);
  char **ids;
  size_t n;
  cr_assert_eq(tfs_task_ids(fx_store, &ids, &n), 0);
  cr_assert_eq(n, (size_t)NPROC * PER, "all ids unique (one dir each)");
  for (size_t i = 1; i < n; i++)
    cr_assert_lt(strcmp(ids[i - 1], ids[i]), 0);
  /* Every id a child reported is listed: sort the reports and compare. */
  qsort(all, n, 16, (int (*)(const void *, const void *))strcmp_nl);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(strncmp(all + i * 16, ids[i], 15), 0, "reported %.15s, listed %s", all + i * 16,
                 ids[i]);
  tfs_ids_free(ids, n);
  free(all);
  int count = 0;
  cr_assert_eq(fx_list(count_cb, &count), 0);
  cr_assert_eq(count, NPROC * PER);
  cr_assert_eq(tfs_task_count(fx_store), NPROC * PER);
}

/* All children start at once (a pipe they all block on) and create the
 * same key; each reports (id, existed). */
static void race_key(int rerun, const char *key, char winner[TFS_ID_MAX + 1], int *created) {
  int go[2], out[2];
  cr_assert_eq(pipe(go), 0);
  cr_assert_eq(pipe(out), 0);
  pid_t pids[NPROC];
  for (int k = 0; k < NPROC; k++) {
    pids[k] = fork();
    if (pids[k] == 0) {
      close(go[1]);
      close(out[0]);
      tfs_store_t *s;
      if (tfs_store_open(fx_path(""), &s))
        _exit(1);
      char c, id[TFS_ID_MAX + 1], line[32];
      if (read(go[0], &c, 1) != 0) /* EOF = go */
        _exit(2);
      char *argv[] = {"make", "all", NULL};
      tfs_task_spec_t spec = {.argv = argv,
                              .cwd = "/src",
                              .key = key,
                              .rerun = rerun,
                              .min_uptime_ms = -1,
                              .max_restarts = -1,
                              .grace_ms = -1};
      int existed = -1;
      int err = tfs_task_create(s, &spec, id, &existed);
      if (err)
        _exit(3);
      int n = snprintf(line, sizeof line, "%s %d\n", id, existed);
      if (write(out[1], line, (size_t)n) != n)
        _exit(4);
      tfs_store_close(s);
      _exit(0);
    }
    fx_track(pids[k]);
  }
  close(go[0]);
  close(out[1]);
  close(go[1]); /* go */
  char buf[NPROC * 32 + 1];
  size_t len = 0;
  ssize_t r;
  while ((r = read(out[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)r;
  buf[len] = '\0';
  close(out[0]);
  for (int k = 0; k < NPROC; k++)
    cr_assert_eq(fx_wait(pids[k]), 0, "child %d", k);
  *created = 0;
  winner[0] = '\0';
  char *line = buf;
  for (int k = 0; k < NPROC; k++) {
    char id[TFS_ID_MAX + 1];
    int existed;
    cr_assert_eq(sscanf(line, "%15s %d", id, &existed), 2);
    if (!winner[0])
      strcpy(winner, id);
    cr_assert_str_eq(id, winner, "everyone got the same id");
    *created += existed == 0;
    line = strchr(line, '\n') + 1;
  }
}

Test(race, one_key_one_task) {
  char winner[TFS_ID_MAX + 1], got[TFS_ID_MAX + 1];
  int created;
  race_key(0, "race:key", winner, &created);
  cr_assert_eq(created, 1, "exactly one creator");
  cr_assert_eq(tfs_task_count(fx_store), 1, "the losers left nothing behind");
  cr_assert_eq(tfs_key_lookup(fx_store, "race:key", got), 0);
  cr_assert_str_eq(got, winner);

  /* It ends; eight reruns race: exactly one new task, all see it. */
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, winner, &rec), 0);
  rec.state = TFS_FAILED;
  rec.exit_code = 1;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  char second[TFS_ID_MAX + 1];
  race_key(1, "race:key", second, &created);
  cr_assert_eq(created, 1);
  cr_assert_str_neq(second, winner);
  cr_assert_eq(tfs_task_count(fx_store), 2);
  cr_assert_eq(tfs_key_lookup(fx_store, "race:key", got), 0);
  cr_assert_str_eq(got, second);
  /* No temp files in keys/. */
  DIR *d = opendir(fx_path("keys"));
  struct dirent *de;
  int entries = 0;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.' || strlen(de->d_name) > 2)
      entries++;
  closedir(d);
  cr_assert_eq(entries, 1);
}

Test(race, many_keys_in_parallel) {
  /* Eight children each create the same 50 keys: 50 tasks in the end. */
  for (int k = 0; k < NPROC; k++) {
    pid_t pid = fork();
    if (pid == 0) {
      tfs_store_t *s;
      if (tfs_store_open(fx_path(""), &s))
        _exit(1);
      for (int i = 0; i < 50; i++) {
        char key[32], id[TFS_ID_MAX + 1], got[TFS_ID_MAX + 1];
        snprintf(key, sizeof key, "k%d", (i + k * 7) % 50);
        char *argv[] = {"job", key, NULL};
        tfs_task_spec_t spec = {.argv = argv,
                                .cwd = "/",
                                .key = key,
                                .min_uptime_ms = -1,
                                .max_restarts = -1,
                                .grace_ms = -1};
        if (tfs_task_create(s, &spec, id, NULL))
          _exit(2);
        if (tfs_key_lookup(s, key, got) || strcmp(got, id))
          _exit(3);
      }
      tfs_store_close(s);
      _exit(0);
    }
    fx_track(pid);
  }
  for (int k = 0; k < fx_nkids; k++)
    if (fx_kids[k])
      cr_assert_eq(fx_wait(fx_kids[k]), 0);
  cr_assert_eq(tfs_task_count(fx_store), 50);
  cr_assert_eq(fx_list(NULL, NULL), 0);
}

/* ---- prune and forget beside tasks being created ------------------------ */

/* What prune and forget may remove: a task that has ended (or whose record
 * is corrupt), never one still queued (its supervisor may be on its way),
 * nor a directory still being created (no record yet), nor one whose lock
 * someone holds. */
Test(race, prune_removes_only_ended_tasks) {
  char queued[TFS_ID_MAX + 1], done[TFS_ID_MAX + 1], lost[TFS_ID_MAX + 1], bad[TFS_ID_MAX + 1];
  char held[TFS_ID_MAX + 1], p[128];
  fx_create("q", NULL, queued);
  fx_create("d", NULL, done);
  fx_set_state(done, TFS_COMPLETED);
  fx_create("l", NULL, lost); /* running, supervisor gone: reads lost */
  fx_set_state(lost, TFS_RUNNING);
  fx_create("b", NULL, bad);
  snprintf(p, sizeof p, "tasks/%s/record.json", bad);
  fx_write(p, "{not json");
  fx_create("h", NULL, held);
  fx_set_state(held, TFS_FAILED);
  /* A task dir that has no record yet: a creator is between its mkdir and
   * its first save. */
  char creating[TFS_ID_MAX + 1];
  fx_create("c", NULL, creating);
  snprintf(p, sizeof p, "tasks/%s/record.json", creating);
  cr_assert_eq(unlink(fx_path(p)), 0);
  /* A lock holder (a settler, a late supervisor): a process of its own. */
  int go[2];
  cr_assert_eq(pipe(go), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[0]);
    tfs_store_t *s;
    if (tfs_store_open(fx_path(""), &s) || tfs_task_lock(s, held) < 0)
      _exit(1);
    char c = 'x';
    if (write(go[1], &c, 1) != 1)
      _exit(2);
    pause();
    _exit(0);
  }
  fx_track(pid);
  close(go[1]);
  char c;
  cr_assert_eq(read(go[0], &c, 1), 1, "the lock holder did not start");
  close(go[0]);

  cr_assert_eq(tfs_task_forget(fx_store, queued), -EBUSY, "a queued task is not forgotten");
  cr_assert_eq(tfs_task_forget(fx_store, creating), -EBUSY, "a task being created neither");
  cr_assert_eq(tfs_task_forget(fx_store, held), -EBUSY, "nor one whose lock is held");
  cr_assert_eq(tfs_task_prune(fx_store, 0), 3, "done, lost and the corrupt one");
  char **ids;
  size_t n;
  cr_assert_eq(tfs_task_ids(fx_store, &ids, &n), 0);
  cr_assert_eq(n, 3);
  const char *kept[] = {queued, held, creating};
  for (int i = 0; i < 3; i++) {
    int found = 0;
    for (size_t k = 0; k < n; k++)
      found |= !strcmp(ids[k], kept[i]);
    cr_assert(found, "%s was pruned", kept[i]);
  }
  tfs_ids_free(ids, n);
  cr_assert_eq(tfs_task_forget(fx_store, "zzzzzzzz-zzzzzz"), TFS_ENOTASK);
}

/* The report that started it: `taskfs prune --keep 0` in a loop beside
 * `taskfs run` calls made some runs fail ("cannot create the task" or
 * "cannot start the supervisor of task X: no such task"). Every run must
 * succeed, and every task it started must still be there. */
Test(race, prune_beside_runs_never_breaks_a_run, .timeout = 180) {
  const char *bin = tu_taskfs_bin();
  char stop[4096];
  snprintf(stop, sizeof stop, "%s/stop-pruning", fx_dir);
  pid_t pruner = fork();
  if (pruner == 0) {
    char *argv[] = {(char *)bin, "prune", "--keep", "0", "--state-dir", (char *)fx_path(""), NULL};
    int devnull = open("/dev/null", O_WRONLY);
    while (access(stop, F_OK) != 0) {
      pid_t k = fork();
      if (k == 0) {
        dup2(devnull, 1);
        dup2(devnull, 2);
        execv(bin, argv);
        _exit(127);
      }
      waitpid(k, NULL, 0);
    }
    _exit(0);
  }
  fx_track(pruner);
  enum { RUNS = 30 };
  char ids[RUNS][TFS_ID_MAX + 1];
  int failed = 0;
  char first_err[512] = "";
  for (int i = 0; i < RUNS; i++) {
    char *out = NULL;
    /* Each runs until the test has judged (the gate): a task that ended on
     * its own may be pruned, rightly, and 30 runs on a slow machine can
     * take longer than any fixed sleep. */
    int rc = tu_sh(&out,
                   "'%s' run --state-dir '%s' -- sh -c 'until [ -e \"$0\" ]; do sleep 0.05; done' "
                   "'%s/gate' 2>&1",
                   bin, fx_path(""), fx_dir);
    snprintf(ids[i], sizeof ids[i], "%.15s", out ? out : "");
    if (rc != 0) {
      if (!failed++)
        snprintf(first_err, sizeof first_err, "%s", out ? out : "");
      ids[i][0] = '\0';
    }
    free(out);
  }
  fx_write("../stop-pruning", "");
  fx_wait(pruner);
  /* Stop everything that runs before judging, so nothing outlives us. */
  int missing = 0;
  for (int i = 0; i < RUNS; i++) {
    if (!ids[i][0])
      continue;
    int err = tfs_cancel_request(fx_store, ids[i], "test cleanup");
    missing += err == TFS_ENOTASK;
    if (!err)
      tfs_task_wait_end(fx_store, ids[i], 30000, NULL, NULL);
  }
  fx_write("../gate", "");
  cr_assert_eq(failed, 0, "%d of %d runs failed; the first said: %s", failed, RUNS, first_err);
  cr_assert_eq(missing, 0, "%d running tasks were pruned", missing);
}
