/* The kill -9 matrix (issue 7, part 2): for each process kind that touches
 * the store -- a task's supervisor, a CLI writer (`taskfs run`, `taskfs
 * cancel`), the FUSE mount and the MCP server -- SIGKILL it at random
 * moments while work is under way, and after every round check what every
 * reader relies on:
 *   - every record.json on disk parses (none is torn);
 *   - no task reads running unless its supervisor process is alive;
 *   - every line the worker wrote before the kill is in the transcript, in
 *     order, once (the worker writes "seq=N" lines and logs its own count);
 *   - a restarted mount and MCP server show every task of the store.
 *
 * Rounds: ~12 per kind by default (CI); TASKFS_FULL=1 runs 200 per kind,
 * TASKFS_KILL_ROUNDS=N any number. Random moments come from rand(), seeded
 * per run; the seed is printed so a failing round can be replayed with
 * HH_SEED=<seed>. */
#include "tests/hardening/hard.h"

#include <sys/prctl.h>
#include <sys/stat.h>

static unsigned hh_seed(void) {
  const char *s = getenv("HH_SEED");
  unsigned seed = s && *s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)(getpid() ^ time(NULL));
  srand(seed);
  cr_log_info("random seed %u (replay with HH_SEED=%u)", seed, seed);
  return seed;
}

static int rnd(int n) {
  return n > 0 ? rand() % n : 0;
}

/* Skips the test if a verb is still a placeholder (components land one by
 * one); never once the verb exists. */
static void need_verb(const char *verb) {
  hh_res_t r = hh_tfs(verb, "--help", NULL);
  int missing = strstr(r.err, "not built yet") != NULL;
  hh_res_free(&r);
  if (missing)
    cr_skip_test("taskfs %s is not built yet", verb);
}

/* Waits until no supervisor holds the task's lock. */
static void wait_not_alive(const char *id) {
  hh_idarg_t a = {id};
  cr_assert(tu_wait_until(hh_cond_not_alive, &a, hh_timeout_ms()),
            "the lock of %s is still held after its supervisor was killed: did a child "
            "inherit it?",
            id);
}

/* Waits until a process group is gone (its members died); returns 1 if it
 * is, 0 if it is still there after the timeout (then kills it: the test's
 * own worker). */
static int wait_group_gone(pid_t pgid, int64_t timeout_ms) {
  int64_t end = hh_now_ms() + timeout_ms;
  if (pgid <= 1)
    return 1;
  while (hh_now_ms() < end) {
    if (kill(-pgid, 0) < 0 && errno == ESRCH)
      return 1;
    /* The worker is the group's only member; dead but not yet reaped (by
     * whatever adopted it) counts as gone. */
    char path[64], *st;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pgid);
    if (!(st = tu_read_file(path, NULL)))
      return 1;
    char *rp = strrchr(st, ')');
    int zombie = rp && rp[1] && rp[2] == 'Z';
    free(st);
    if (zombie)
      return 1;
    hh_sleep_ms(10);
  }
  kill(-pgid, SIGKILL);
  return 0;
}

/* The count file of a worker task, from its record's command line. */
static char *count_file_of(const tfs_record_t *rec) {
  if (rec->argc >= 3 && !strcmp(rec->argv[1], "--hh-worker"))
    return strdup(rec->argv[2]);
  return NULL;
}

/* For every ended task whose worker is ours: the transcript holds seq=1..M
 * with count <= M <= count + 1 when the worker was stopped by its
 * supervisor (every line it wrote was drained), or M <= count + 1 when the
 * supervisor itself was killed (lines still in the pipe die with it). */
static void check_all_transcripts(const char *when) {
  tfs_store_t *store;
  char **ids = NULL;
  size_t n = 0;
  cr_assert_eq(tfs_store_open_existing(hh.store, &store), 0);
  cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
  for (size_t i = 0; i < n; i++) {
    tfs_record_t rec;
    tfs_record_init(&rec);
    if (tfs_task_load(store, ids[i], &rec) == 0 && tfs_state_terminal(rec.state)) {
      char *cnt = count_file_of(&rec);
      if (cnt) {
        long c = hh_count_read(cnt);
        long min = rec.state == TFS_LOST ? 0 : c;
        hh_check_seq(ids[i], min, c + 1, when);
        free(cnt);
      }
    }
    tfs_record_free(&rec);
  }
  tfs_ids_free(ids, n);
  tfs_store_close(store);
}

/* Cancels every task that still runs and waits for each to end. */
static void stop_all(void) {
  tfs_store_t *store;
  char **ids = NULL;
  size_t n = 0;
  if (tfs_store_open_existing(hh.store, &store))
    return;
  cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
  tfs_store_close(store);
  for (size_t i = 0; i < n; i++) {
    int s = hh_state_opt(ids[i]);
    if (s >= 0 && !tfs_state_terminal((tfs_state_t)s) && s != TFS_QUEUED) {
      hh_res_t r = hh_tfs("cancel", ids[i], NULL);
      hh_res_free(&r);
    }
  }
  for (size_t i = 0; i < n; i++) {
    int s = hh_state_opt(ids[i]);
    if (s >= 0 && s != TFS_QUEUED)
      hh_wait_ended(ids[i]);
  }
  tfs_ids_free(ids, n);
}

TestSuite(hard_kill9, .init = hh_setup, .fini = hh_teardown, .timeout = 900);

/* ---- supervisor ------------------------------------------------------------ */

Test(hard_kill9, supervisor) {
  int rounds = hh_rounds(20, 200);
  hh_seed();
  size_t lost = 0, ended = 0;
  long in_pipe = 0; /* lines written into the pipe, unread when the supervisor died */
  /* The other faces watch too: a mount and an MCP server that stay up
   * through all rounds must never show a killed task as running. */
  tfs_store_t *st0;
  cr_assert_eq(tfs_store_open(hh.store, &st0), 0);
  tfs_store_close(st0);
  char *mnt = hh_strdupf("%s/mnt", hh.root);
  hh_mount_t mt = {0};
  hh_mount_start(&mt, mnt);
  hh_mcp_t mcp;
  hh_mcp_start(&mcp);
  cr_assert_eq(hh_mcp_initialize(&mcp), 0);
  for (int r = 0; r < rounds; r++) {
    char id[TFS_ID_MAX + 1], tag[32], when[64];
    snprintf(tag, sizeof tag, "sup%d", r);
    snprintf(when, sizeof when, "supervisor round %d", r);
    int phase = rnd(5);
    if (phase == 4) {
      /* During restart back-off: a worker that ends after 20 lines under
       * --restart always, restarted with growing delays. */
      char *cnt = hh_count_path(tag);
      const char *cmd[] = {hh.self, "--hh-worker", cnt, "200", "20", NULL};
      const char *extra[] = {"--restart", "always", "--min-uptime", "60s", "--max-quick-restarts",
                             "100",       NULL};
      hh_run_task(extra, cmd, id);
      free(cnt);
      hh_sleep_ms(rnd(400));
      pid_t sup = hh_supervisor_pid(id);
      if (sup > 0)
        kill(sup, SIGKILL);
    } else if (phase == 3) {
      /* During start-up: kill as soon as the supervisor shows up. */
      char *cnt = hh_count_path(tag);
      const char *argv[] = {tu_taskfs_bin(), "run", "--", hh.self, "--hh-worker", cnt, "200", NULL};
      pid_t run = hh_spawn(argv, NULL, NULL, NULL, NULL);
      pid_t sup = 0;
      char **ids = NULL;
      size_t n = 0;
      int64_t end = hh_now_ms() + hh_timeout_ms();
      id[0] = 0;
      while (!sup && hh_now_ms() < end) {
        tfs_store_t *store;
        if (tfs_store_open_existing(hh.store, &store) == 0) {
          if (tfs_task_ids(store, &ids, &n) == 0 && n > 0) {
            snprintf(id, sizeof id, "%s", ids[n - 1]);
            tfs_record_t rec;
            char err[256];
            if (hh_record_raw(id, &rec, err, sizeof err) == 0 && count_file_of(&rec) &&
                strstr(rec.argv[2], tag) && rec.supervisor_pid > 0)
              sup = hh_supervisor_running(&rec) ? rec.supervisor_pid : 0;
            tfs_record_free(&rec);
          }
          tfs_ids_free(ids, n);
          ids = NULL;
          tfs_store_close(store);
        }
        if (!sup)
          hh_sleep_ms(1);
      }
      cr_assert(sup > 0, "%s: no supervisor showed up", when);
      kill(sup, SIGKILL);
      hh_wait(run, hh_timeout_ms());
      free(cnt);
    } else {
      hh_run_worker(tag, 200, NULL, id);
      if (phase == 2) {
        /* During a stop: the request is on disk, the supervisor acting. */
        hh_res_t c = hh_tfs("cancel", id, NULL);
        hh_res_free(&c);
        hh_sleep_ms(rnd(15));
      } else {
        hh_sleep_ms(rnd(phase ? 150 : 10));
      }
      pid_t sup = hh_supervisor_pid(id);
      if (sup > 0)
        kill(sup, SIGKILL);
    }
    wait_not_alive(id);

    /* The worker loses its reader and dies of SIGPIPE; wait for it so its
     * count is final. */
    tfs_record_t rec;
    char err[256];
    cr_assert_eq(hh_record_raw(id, &rec, err, sizeof err), 0, "%s: %s", when, err);
    pid_t pgid = rec.worker_pgid;
    tfs_record_free(&rec);
    if (!wait_group_gone(pgid, hh_timeout_ms()))
      cr_log_warn("%s: worker group %d outlived its supervisor (killed by the test)", when,
                  (int)pgid);

    hh_store_stats_t st = hh_check_store(when);
    (void)st;
    tfs_state_t s = hh_state(id);
    cr_assert(s == TFS_LOST || tfs_state_terminal(s),
              "%s: task %s reads %s after its "
              "supervisor was killed",
              when, id, tfs_state_name(s));
    if (s == TFS_LOST)
      lost++;
    else
      ended++;

    /* What a person sees says the same. */
    hh_res_t show = hh_tfs("show", id, NULL);
    cr_assert_eq(show.status, 0, "%s: taskfs show %s: %s", when, id, show.err);
    cr_assert(!strstr(show.out, "\"state\": \"running\""), "%s: taskfs show says running:\n%s",
              when, show.out);
    hh_res_free(&show);
    char *rp = hh_strdupf("%s/tasks/%s/record.json", mnt, id);
    char *rj = hh_slurp(rp, NULL);
    cr_assert(rj, "%s: cannot read %s through the mount", when, rp);
    cr_assert(!strstr(rj, "\"state\": \"running\"") && !strstr(rj, "\"state\":\"running\""),
              "%s: the mount says running:\n%s", when, rj);
    free(rj);
    free(rp);
    int is_err;
    char *msg;
    json_t *res = hh_mcp_tool(&mcp, "read_managed_task",
                              json_pack("{s:s, s:i}", "taskId", id, "waitMs", 0), &is_err, &msg);
    cr_assert(res && !is_err, "%s: read_managed_task: %s", when, msg ? msg : "no answer");
    const char *ms = json_string_value(json_object_get(res, "state"));
    cr_assert(ms && strcmp(ms, "running"), "%s: the MCP server says %s", when, ms ? ms : "nothing");
    json_decref(res);

    char *cnt = hh_count_path(tag);
    long c = hh_count_read(cnt);
    free(cnt);
    if (phase != 4) { /* (restarts repeat the numbers) */
      long m = hh_check_seq(id, s == TFS_LOST ? 0 : c, c + 1, when);
      if (m < c)
        in_pipe += c - m;
    }
  }
  hh_res_t ls = hh_tfs("ls", NULL);
  cr_assert_eq(ls.status, 0, "taskfs ls after the rounds: %s", ls.err);
  hh_res_free(&ls);
  cr_log_info("supervisor: %d rounds, %zu lost, %zu ended before the kill; %ld lines died in "
              "pipes with their supervisor",
              rounds, lost, ended, in_pipe);
  cr_assert_eq(hh_mcp_close(&mcp), 0, "the MCP server did not exit cleanly");
  cr_assert_eq(hh_mount_stop(&mt), 0, "the mount did not stop cleanly");
  free(mnt);
}

/* ---- CLI writers ------------------------------------------------------------ */

static const char *const cli_keys[] = {"kill9-a", "kill9-b", "kill9-c"};

Test(hard_kill9, cli_writer) {
  int rounds = hh_rounds(20, 200);
  hh_seed();
  for (int r = 0; r < rounds; r++) {
    char when[64];
    snprintf(when, sizeof when, "cli round %d", r);
    int kind = rnd(5);
    pid_t pid;
    if (kind == 4) {
      /* A prune deleting finished tasks, killed half-way through one. */
      char keep[16];
      snprintf(keep, sizeof keep, "%d", rnd(4));
      const char *argv[] = {tu_taskfs_bin(), "prune", "--keep", keep, NULL};
      pid = hh_spawn(argv, NULL, NULL, NULL, NULL);
      hh_sleep_ms(rnd(10));
      kill(pid, SIGKILL);
      hh_wait(pid, hh_timeout_ms());
      hh_check_store(when);
      hh_res_t ls = hh_tfs("ls", NULL);
      cr_assert_eq(ls.status, 0, "%s: taskfs ls after a killed prune: %s", when, ls.err);
      hh_res_free(&ls);
      /* A task is deleted whole or not at all: one that still lists with
       * output recorded still has its transcript. */
      tfs_store_t *store;
      char **ids = NULL;
      size_t n = 0;
      if (tfs_store_open_existing(hh.store, &store))
        continue; /* no store yet: nothing to prune */
      cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
      for (size_t i = 0; i < n; i++) {
        tfs_record_t rec;
        char err[256];
        if (hh_record_raw(ids[i], &rec, err, sizeof err) == 0 && rec.bytes > 0 &&
            tfs_state_terminal(rec.state)) {
          char *t = hh_task_path(ids[i], "transcript");
          cr_expect(access(t, F_OK) == 0,
                    "%s: task %s still lists (its record says %lld bytes of output) but a killed "
                    "prune deleted its transcript: a task must go whole or not at all",
                    when, ids[i], (long long)rec.bytes);
          free(t);
        }
        tfs_record_free(&rec);
      }
      tfs_ids_free(ids, n);
      tfs_store_close(store);
      continue;
    }
    if (kind == 3) {
      /* A keyed run killed the moment its key exists: the window between
       * creating the task and starting its supervisor. */
      char key[32], tag[32];
      snprintf(key, sizeof key, "fresh-%d", r);
      snprintf(tag, sizeof tag, "fresh%d", r);
      char *cnt = hh_count_path(tag);
      char *keyfile = hh_strdupf("%s/keys/%s", hh.store, key);
      const char *argv[] = {tu_taskfs_bin(), "run",         "--key", key,    "--",
                            hh.self,         "--hh-worker", cnt,     "2000", NULL};
      pid = hh_spawn(argv, NULL, NULL, NULL, NULL);
      int64_t end = hh_now_ms() + hh_timeout_ms();
      /* Spin until the key names a task whose record is on disk. */
      for (;;) {
        char *kid = hh_slurp(keyfile, NULL);
        int ready = 0;
        if (kid) {
          hh_chomp(kid);
          char *rec = hh_task_path(kid, "record.json");
          ready = tfs_id_valid(kid) && access(rec, F_OK) == 0;
          free(rec);
          free(kid);
        }
        if (ready || waitpid(pid, NULL, WNOHANG) != 0 || hh_now_ms() > end)
          break;
      }
      kill(pid, SIGKILL);
      hh_wait(pid, hh_timeout_ms());
      hh_check_store(when);
      /* The same start again must end up with a task that runs. */
      char id[TFS_ID_MAX + 1];
      const char *cmd[] = {hh.self, "--hh-worker", cnt, "2000", NULL};
      const char *extra[] = {"--key", key, NULL};
      hh_run_task(extra, cmd, id);
      hh_idarg_t a = {id};
      int v = tu_wait_until(hh_cond_running, &a, 10000);
      cr_assert(v != 0,
                "%s: taskfs run --key %s was killed after creating task %s and before its "
                "supervisor started; running the same key again returns %s, which stays %s "
                "for ever with no supervisor (the key is wedged)",
                when, key, id, id, tfs_state_name(hh_state(id)));
      free(cnt);
      free(keyfile);
      continue;
    }
    if (kind == 0) {
      /* A keyed run: the same key and command each time, so that a run
       * killed half-way must not wedge the key. */
      const char *key = cli_keys[rnd(3)];
      char *cnt = hh_count_path(key);
      const char *argv[] = {tu_taskfs_bin(), "run",         "--key", key,    "--",
                            hh.self,         "--hh-worker", cnt,     "2000", NULL};
      pid = hh_spawn(argv, NULL, NULL, NULL, NULL);
      free(cnt);
    } else if (kind == 1) {
      char tag[32];
      snprintf(tag, sizeof tag, "cli%d", r);
      char *cnt = hh_count_path(tag);
      const char *argv[] = {tu_taskfs_bin(), "run", "--",   hh.self,
                            "--hh-worker",   cnt,   "2000", NULL};
      pid = hh_spawn(argv, NULL, NULL, NULL, NULL);
      free(cnt);
    } else {
      /* A stop request on a random task. */
      tfs_store_t *store;
      char **ids = NULL, victim[TFS_ID_MAX + 1] = "none";
      size_t n = 0;
      if (tfs_store_open_existing(hh.store, &store) == 0) {
        if (tfs_task_ids(store, &ids, &n) == 0 && n)
          snprintf(victim, sizeof victim, "%s", ids[rnd((int)n)]);
        tfs_ids_free(ids, n);
        tfs_store_close(store);
      }
      const char *argv[] = {tu_taskfs_bin(), "cancel", victim, NULL};
      pid = hh_spawn(argv, NULL, NULL, NULL, NULL);
    }
    hh_sleep_ms(rnd(40));
    kill(pid, SIGKILL);
    hh_wait(pid, hh_timeout_ms());
    hh_check_store(when);
  }

  /* A key whose run was killed half-way still starts (or names) a task
   * that runs: it must not stay queued for ever with nobody to run it. */
  for (int k = 0; k < 3; k++) {
    char id[TFS_ID_MAX + 1];
    char *cnt = hh_count_path(cli_keys[k]);
    const char *cmd[] = {hh.self, "--hh-worker", cnt, "2000", NULL};
    const char *extra[] = {"--key", cli_keys[k], NULL};
    hh_run_task(extra, cmd, id);
    free(cnt);
    tfs_state_t s = hh_state(id);
    cr_assert(s != TFS_QUEUED,
              "taskfs run --key %s returned task %s, which is queued with no supervisor to run "
              "it (a launcher killed before it started one left the key wedged)",
              cli_keys[k], id);
  }
  stop_all();
  hh_check_store("cli: after stopping everything");
  check_all_transcripts("cli: after stopping everything");
}

/* ---- the mount ------------------------------------------------------------ */

/* A reader that works the mount until it is killed: lists tasks, reads
 * records and transcripts, sometimes requests a stop. Runs in a child. */
static void mount_reader(const char *mnt, unsigned seed) {
  /* It loops until killed: a failed check before the kill takes it along. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
    _exit(1);
  srand(seed);
  char path[4096];
  for (;;) {
    snprintf(path, sizeof path, "%s/tasks", mnt);
    DIR *d = opendir(path);
    if (!d)
      _exit(0);
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.')
        continue;
      const char *files[] = {"record.json", "transcript", "owner", "cancel"};
      for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/tasks/%s/%s", mnt, e->d_name, files[i]);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
          continue;
        char buf[65536];
        while (read(fd, buf, sizeof buf) > 0)
          ;
        close(fd);
      }
      if (rand() % 400 == 0) {
        snprintf(path, sizeof path, "%s/tasks/%s/cancel", mnt, e->d_name);
        int fd = open(path, O_WRONLY | O_TRUNC);
        if (fd >= 0) {
          if (write(fd, "1\n", 2) < 0) {
          }
          close(fd);
        }
      }
    }
    closedir(d);
  }
}

/* The set of task ids the store holds, compared with a directory listing. */
static void check_listing_matches(const char *dir, const char *when) {
  tfs_store_t *store;
  char **ids = NULL;
  size_t n = 0, seen = 0;
  cr_assert_eq(tfs_store_open_existing(hh.store, &store), 0);
  cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
  tfs_store_close(store);
  DIR *d = opendir(dir);
  cr_assert(d, "%s: opendir %s: %s", when, dir, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    int found = 0;
    for (size_t i = 0; i < n; i++)
      if (!strcmp(ids[i], e->d_name))
        found = 1;
    cr_assert(found, "%s: the mount lists %s, which the store does not hold", when, e->d_name);
    seen++;
  }
  closedir(d);
  /* Every id the store held before the listing is listed (none is pruned
   * in this test). */
  cr_assert(seen >= n, "%s: the mount lists %zu tasks, the store holds %zu", when, seen, n);
  for (size_t i = 0; i < n; i++) {
    char *raw = hh_task_path(ids[i], "record.json");
    int exists = access(raw, F_OK) == 0;
    free(raw);
    if (!exists)
      continue; /* an unfinished creation (see hh_check_store) */
    char *p = hh_strdupf("%s/%s/record.json", dir, ids[i]);
    size_t len;
    char *s = hh_slurp(p, &len);
    cr_assert(s, "%s: cannot read %s through the mount: %s", when, p, strerror(errno));
    tfs_record_t rec;
    char err[256];
    int rc = tfs_record_parse(s, len, &rec, err, sizeof err);
    cr_assert_eq(rc, 0, "%s: %s through the mount does not parse: %s", when, p, err);
    tfs_record_free(&rec);
    free(s);
    free(p);
  }
  tfs_ids_free(ids, n);
}

/* Keeps at least two worker tasks running. */
static void keep_two_running(int r) {
  tfs_store_t *store;
  char **ids = NULL;
  size_t n = 0, running = 0;
  cr_assert_eq(tfs_store_open(hh.store, &store), 0);
  cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
  tfs_store_close(store);
  for (size_t i = 0; i < n; i++)
    if (hh_state_opt(ids[i]) == TFS_RUNNING)
      running++;
  tfs_ids_free(ids, n);
  for (int i = 0; running < 2; i++, running++) {
    char id[TFS_ID_MAX + 1], tag[32];
    snprintf(tag, sizeof tag, "mnt%d-%d", r, i);
    hh_run_worker(tag, 1000, NULL, id);
  }
}

Test(hard_kill9, mount) {
  need_verb("mount");
  int rounds = hh_rounds(10, 200);
  unsigned seed = hh_seed();
  char *mnt = hh_strdupf("%s/mnt", hh.root);
  hh_mount_t m = {0};
  for (int r = 0; r < rounds; r++) {
    char when[64];
    snprintf(when, sizeof when, "mount round %d", r);
    keep_two_running(r);
    hh_mount_start(&m, mnt);
    pid_t readers[2];
    for (int i = 0; i < 2; i++) {
      readers[i] = fork();
      cr_assert(readers[i] >= 0);
      if (readers[i] == 0)
        mount_reader(mnt, seed + (unsigned)r * 2 + (unsigned)i);
    }
    hh_sleep_ms(20 + rnd(200));
    hh_mount_kill9(&m);
    for (int i = 0; i < 2; i++) {
      kill(readers[i], SIGKILL);
      waitpid(readers[i], NULL, 0);
    }
    hh_check_store(when);
    /* Restarted, the mount shows every task. */
    hh_mount_start(&m, mnt);
    char *tasks = hh_strdupf("%s/tasks", mnt);
    check_listing_matches(tasks, when);
    free(tasks);
    if (r % 2)
      hh_mount_kill9(&m);
    else
      cr_assert_eq(hh_mount_stop(&m), 0, "%s: the mount did not stop cleanly on SIGTERM", when);
  }
  stop_all();
  hh_check_store("mount: after stopping everything");
  check_all_transcripts("mount: after stopping everything");
  free(mnt);
}

/* ---- the MCP server ----------------------------------------------------------- */

/* Every task id the server lists (following cursors). */
static size_t mcp_list_all(hh_mcp_t *m, char ***out) {
  char **ids = NULL;
  size_t n = 0;
  json_t *cursor = NULL;
  for (int page = 0; page < 1000; page++) {
    json_t *args = json_object();
    json_object_set_new(args, "limit", json_integer(100));
    if (cursor)
      json_object_set(args, "cursor", cursor);
    int is_err;
    char *msg;
    json_t *res = hh_mcp_tool(m, "list_managed_tasks", args, &is_err, &msg);
    cr_assert(res && !is_err, "list_managed_tasks failed: %s", msg ? msg : "no answer");
    json_t *tasks = json_object_get(res, "tasks");
    cr_assert(json_is_array(tasks), "list_managed_tasks: no tasks array");
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t) {
      const char *id = json_string_value(json_object_get(t, "taskId"));
      if (!id)
        id = json_string_value(json_object_get(t, "id"));
      cr_assert(id, "a listed task has no id");
      ids = realloc(ids, (n + 1) * sizeof *ids);
      ids[n++] = strdup(id);
    }
    json_decref(cursor);
    cursor = json_incref(json_object_get(res, "nextCursor"));
    json_decref(res);
    if (!json_is_string(cursor))
      break;
  }
  json_decref(cursor);
  *out = ids;
  return n;
}

static void check_mcp_lists_all(hh_mcp_t *m, const char *when) {
  tfs_store_t *store;
  char **ids = NULL, **listed = NULL;
  size_t n = 0;
  cr_assert_eq(tfs_store_open_existing(hh.store, &store), 0);
  cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
  tfs_store_close(store);
  size_t nl = mcp_list_all(m, &listed);
  for (size_t i = 0; i < n; i++) {
    int found = 0;
    char *raw = hh_task_path(ids[i], "record.json");
    if (access(raw, F_OK))
      found = 1; /* an unfinished creation (see hh_check_store) */
    free(raw);
    for (size_t j = 0; j < nl && !found; j++)
      found = !strcmp(ids[i], listed[j]);
    cr_assert(found, "%s: the restarted MCP server does not list task %s", when, ids[i]);
  }
  for (size_t j = 0; j < nl; j++)
    free(listed[j]);
  free(listed);
  tfs_ids_free(ids, n);
}

static json_t *worker_command(const char *tag) {
  char *cnt = hh_count_path(tag);
  json_t *cmd = json_pack("[s, s, s, s]", hh.self, "--hh-worker", cnt, "2000");
  free(cnt);
  return cmd;
}

Test(hard_kill9, mcp_server) {
  need_verb("mcp");
  int rounds = hh_rounds(10, 200);
  hh_seed();
  char prev_key[64] = "";
  for (int r = 0; r < rounds; r++) {
    char when[64], key[64];
    snprintf(when, sizeof when, "mcp round %d", r);
    snprintf(key, sizeof key, "mcp-%d", r);
    hh_mcp_t m;
    hh_mcp_start(&m);
    cr_assert_eq(hh_mcp_initialize(&m), 0, "%s: initialize failed", when);
    if (r > 0)
      check_mcp_lists_all(&m, when);
    /* Work under way: stop the previous round's task, start this one's,
     * read it; the kill lands somewhere in this burst. */
    char *line;
    if (prev_key[0]) {
      line = hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":1001,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"cancel_managed_task\",\"arguments\":{\"taskKey\":\"%s\"}}}\n",
                        prev_key);
      hh_mcp_send_raw(&m, line, strlen(line));
      free(line);
    }
    json_t *cmd = worker_command(key);
    json_t *req = json_pack("{s:s, s:i, s:s, s:{s:s, s:{s:s, s:o, s:i}}}", "jsonrpc", "2.0", "id",
                            1002, "method", "tools/call", "params", "name", "start_managed_task",
                            "arguments", "taskKey", key, "command", cmd, "waitMs", 200);
    char *s = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    line = hh_strdupf("%s\n", s);
    free(s);
    hh_mcp_send_raw(&m, line, strlen(line));
    free(line);
    line = hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":1003,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"read_managed_task\",\"arguments\":{\"taskKey\":\"%s\","
                      "\"waitMs\":300}}}\n",
                      key);
    hh_mcp_send_raw(&m, line, strlen(line));
    free(line);
    if (rnd(3) == 0) {
      /* Aim at the window between creating the task and launching its
       * supervisor: kill the moment the key names a task with a record. */
      char *keyfile = hh_strdupf("%s/keys/%s", hh.store, key);
      int64_t end = hh_now_ms() + hh_timeout_ms();
      while (hh_now_ms() < end) {
        char *kid = hh_slurp(keyfile, NULL);
        int ready = 0;
        if (kid) {
          hh_chomp(kid);
          char *rec = hh_task_path(kid, "record.json");
          ready = tfs_id_valid(kid) && access(rec, F_OK) == 0;
          free(rec);
          free(kid);
        }
        if (ready)
          break;
      }
      free(keyfile);
    } else {
      hh_sleep_ms(rnd(250));
    }
    hh_mcp_kill9(&m);
    hh_check_store(when);
    snprintf(prev_key, sizeof prev_key, "%s", key);
  }
  /* The last restart lists every task, and starting a key again returns
   * the same task instead of running it twice. */
  hh_store_stats_t st = hh_check_store("mcp: after the rounds");
  cr_assert(st.tasks > 0, "no round got as far as starting a task: the matrix tested nothing");
  cr_log_info("mcp: %d rounds, %zu tasks started", rounds, st.tasks);
  hh_mcp_t m;
  hh_mcp_start(&m);
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  check_mcp_lists_all(&m, "mcp: after the last kill");
  for (int r = 0; r < rounds; r++) {
    char key[64];
    snprintf(key, sizeof key, "mcp-%d", r);
    tfs_store_t *store;
    char id[TFS_ID_MAX + 1];
    cr_assert_eq(tfs_store_open_existing(hh.store, &store), 0);
    int rc = tfs_key_lookup(store, key, id);
    tfs_store_close(store);
    if (rc)
      continue; /* the kill landed before the start */
    int is_err;
    char *msg;
    json_t *res = hh_mcp_tool(
        &m, "start_managed_task",
        json_pack("{s:s, s:o}", "taskKey", key, "command", worker_command(key)), &is_err, &msg);
    cr_assert(res && !is_err, "start_managed_task %s again: %s", key, msg ? msg : "no answer");
    const char *got = json_string_value(json_object_get(res, "taskId"));
    cr_assert(got && tfs_id_valid(got), "start_managed_task %s again: no taskId", key);
    /* A key whose task never got a record (the kill landed between the
     * two) may be given a new task; a task with a record must be reused,
     * not run a second time. */
    char *orig = hh_task_path(id, "record.json");
    if (access(orig, F_OK) == 0)
      cr_assert(!strcmp(got, id), "start_managed_task %s again gave %s, want %s (run twice)", key,
                got, id);
    free(orig);
    /* Whatever it names must run (or have run): a task left queued by a
     * killed server must not stay queued for ever under its key. */
    hh_idarg_t a = {got};
    cr_assert(tu_wait_until(hh_cond_running, &a, 10000) != 0,
              "start_managed_task %s again returned task %s, which stays %s with no supervisor "
              "(a server killed between creating and launching it wedged the key)",
              key, got, tfs_state_name(hh_state(got)));
    json_decref(res);
  }
  cr_assert_eq(hh_mcp_close(&m), 0, "the MCP server did not exit cleanly on stdin EOF");
  stop_all();
  hh_check_store("mcp: after stopping everything");
  check_all_transcripts("mcp: after stopping everything");
}

/* ---- a killed supervisor's worker ---------------------------------------------------------- */

/* When a supervisor is killed -9 its task reads lost, and from then on
 * nothing in taskfs can stop the worker: `taskfs cancel` says "already
 * ended (lost); nothing to stop", and no PID from the record is ever
 * signalled. A worker that does not write (a dev server, `sleep`) would run
 * on unsupervised for ever, holding its ports and files. So the worker must
 * not outlive its supervisor: checked for a quiet worker, and for one that
 * left a grandchild in its process group. */
Test(hard_kill9, a_killed_supervisor_takes_its_worker_along) {
  static const char *const cmds[][4] = {
      {"/bin/sleep", "300", NULL, NULL},
      {"/bin/sh", "-c", "(sleep 300 &); sleep 300", NULL},
  };
  for (int i = 0; i < 2; i++) {
    char id[TFS_ID_MAX + 1];
    hh_run_task(NULL, cmds[i], id);
    pid_t sup = hh_supervisor_pid(id);
    cr_assert(sup > 0);
    pid_t pgid = hh_worker_pgid(id);
    kill(sup, SIGKILL);
    wait_not_alive(id);
    cr_assert_eq(hh_state(id), TFS_LOST);
    int gone = wait_group_gone(pgid, hh_timeout_ms());
    cr_expect(gone,
              "%s: the worker (process group %d) outlived its killed supervisor; the task reads "
              "lost and `taskfs cancel` can no longer stop it",
              cmds[i][2] ? cmds[i][2] : cmds[i][0], (int)pgid);
  }
}

/* A long-poll on a task whose supervisor is killed in the middle: nothing
 * is written (a dead supervisor writes no record), yet read_managed_task
 * and tasks/result must come back with `lost` soon after, not at the end
 * of their wait. */
Test(hard_kill9, a_long_poll_sees_its_supervisor_die) {
  char id[TFS_ID_MAX + 1];
  const char *cmd[] = {"/bin/sleep", "300", NULL};
  hh_run_task(NULL, cmd, id);
  hh_mcp_t m;
  hh_mcp_start(&m);
  cr_assert_eq(hh_mcp_initialize(&m), 0);
  char *req = hh_strdupf("{\"jsonrpc\":\"2.0\",\"id\":51,\"method\":\"tools/call\",\"params\":{"
                         "\"name\":\"read_managed_task\",\"arguments\":{\"taskId\":\"%s\","
                         "\"waitMs\":45000}}}\n"
                         "{\"jsonrpc\":\"2.0\",\"id\":52,\"method\":\"tasks/result\",\"params\":{"
                         "\"taskId\":\"%s\"}}\n",
                         id, id);
  cr_assert_eq(hh_mcp_send_raw(&m, req, strlen(req)), 0);
  free(req);
  hh_sleep_ms(300);
  tfs_record_t rec;
  char err[256];
  cr_assert_eq(hh_record_raw(id, &rec, err, sizeof err), 0, "%s", err);
  pid_t pgid = rec.worker_pgid;
  tfs_record_free(&rec);
  pid_t sup = hh_supervisor_pid(id);
  cr_assert(sup > 0);
  int64_t t0 = hh_now_ms();
  kill(sup, SIGKILL);
  int got = 0;
  const char *state51 = NULL;
  json_t *keep[2] = {NULL, NULL};
  while (got < 2 && hh_now_ms() - t0 < 40000) { /* under the read's 45 s: the bound it sets */
    json_t *v = hh_mcp_read(&m, 40000 - (hh_now_ms() - t0));
    if (!v)
      break;
    json_t *vid = json_object_get(v, "id");
    if (json_is_integer(vid) && (json_integer_value(vid) == 51 || json_integer_value(vid) == 52)) {
      keep[json_integer_value(vid) - 51] = v;
      got++;
      continue;
    }
    json_decref(v);
  }
  int64_t took = hh_now_ms() - t0;
  cr_expect(keep[0], "read_managed_task did not come back within 40 s of its task's supervisor "
                     "dying (it waits for 45 s)");
  if (keep[0]) {
    json_t *sc = json_object_get(json_object_get(keep[0], "result"), "structuredContent");
    state51 = json_string_value(json_object_get(sc, "state"));
    cr_expect(state51 && !strcmp(state51, "lost"), "read_managed_task says %s, want lost",
              state51 ? state51 : json_dumps(keep[0], JSON_COMPACT));
  }
  cr_expect(keep[1], "tasks/result did not come back within 40 s of its task's supervisor dying");
  cr_log_info("a long-poll saw its supervisor die after %lld ms", (long long)took);
  json_decref(keep[0]);
  json_decref(keep[1]);
  hh_mcp_kill9(&m);
  wait_group_gone(pgid, 1);
}
