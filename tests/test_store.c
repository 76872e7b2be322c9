/* The core store: resolving and opening, the owner record, ids and keys,
 * listing with corrupt records, liveness, forgetting and pruning, and
 * planted symlinks. */
#include "tests/core_fixture.h"
#include "core/internal.h" /* tests of the internal file helpers */

#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>

TestSuite(store, .init = fx_setup, .fini = fx_teardown, .timeout = 60);

/* ---- resolve and open ---------------------------------------------------- */

Test(store, resolve_order) {
  char buf[4096];
  setenv("HOME", "/home/h", 1);
  setenv("XDG_STATE_HOME", "/xdg", 1);
  setenv("TASKFS_STATE_DIR", "/explicit-env", 1);
  cr_assert_eq(tfs_store_resolve("/given", buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/given");
  cr_assert_eq(tfs_store_resolve(NULL, buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/explicit-env");
  unsetenv("TASKFS_STATE_DIR");
  cr_assert_eq(tfs_store_resolve(NULL, buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/xdg/taskfs");
  setenv("XDG_STATE_HOME", "relative/is/ignored", 1);
  cr_assert_eq(tfs_store_resolve(NULL, buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/home/h/.local/state/taskfs");
  unsetenv("XDG_STATE_HOME");
  cr_assert_eq(tfs_store_resolve(NULL, buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "/home/h/.local/state/taskfs");
  /* An empty name is a mistake, never the default store. */
  cr_assert_eq(tfs_store_resolve("", buf, sizeof buf), -EINVAL);
  setenv("TASKFS_STATE_DIR", "", 1);
  cr_assert_eq(tfs_store_resolve(NULL, buf, sizeof buf), -EINVAL);
  unsetenv("TASKFS_STATE_DIR");
  /* Relative explicit dirs are made absolute; nothing is created. */
  cr_assert_eq(chdir(fx_dir), 0);
  cr_assert_eq(tfs_store_resolve("rel/dir", buf, sizeof buf), 0);
  char want[4096];
  snprintf(want, sizeof want, "%s/rel/dir", fx_dir);
  cr_assert_str_eq(buf, want);
  struct stat st;
  cr_assert_neq(stat(want, &st), 0);
  cr_assert_eq(tfs_store_resolve("/xy", buf, 3), -ENAMETOOLONG);
}

Test(store, open_modes_independent_of_umask) {
  char path[4096];
  tfs_store_t *s;
  umask(0);
  snprintf(path, sizeof path, "%s/deep/er/state", fx_dir);
  cr_assert_eq(tfs_store_open_existing(path, &s), -ENOENT);
  cr_assert_eq(tfs_store_open(path, &s), 0);
  struct stat st;
  const char *subs[] = {"", "/tasks", "/keys"};
  for (int i = 0; i < 3; i++) {
    char p[4200];
    snprintf(p, sizeof p, "%s%s", path, subs[i]);
    cr_assert_eq(stat(p, &st), 0, "%s", p);
    cr_assert_eq(st.st_mode & 07777, 0700, "%s mode %o", p, st.st_mode & 07777);
  }
  cr_assert_str_eq(tfs_store_path(s), path);
  cr_assert_geq(tfs__store_fd(s), 0);
  cr_assert_geq(tfs__store_tasks_fd(s), 0);
  char id[TFS_ID_MAX + 1];
  char *argv[] = {"true", NULL};
  tfs_task_spec_t spec = {.argv = argv, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  cr_assert_eq(tfs_task_create(s, &spec, id, NULL), 0);
  cr_assert_eq(tfs_store_acquire(s, "test", NULL), 0);
  char p[4200];
  snprintf(p, sizeof p, "%s/tasks/%s/record.json", path, id);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0600);
  snprintf(p, sizeof p, "%s/tasks/%s", path, id);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0700);
  snprintf(p, sizeof p, "%s/owner.json", path);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0600);
  tfs_store_close(s);
  /* Reopening an existing store works, with or without creation. */
  cr_assert_eq(tfs_store_open_existing(path, &s), 0);
  cr_assert_eq(tfs_task_count(s), 1);
  tfs_store_close(s);
}

/* The tasks directory carries ext4's top-directory hint (core/store.c
 * spread_children), set when a writer opens the store, also on a store made
 * before. Checked where the test's filesystem takes the flag at all. */
Test(store, the_tasks_directory_spreads_its_children_where_the_filesystem_can) {
  char probe[4096], path[4096], tasks[4200];
  int flags = 0;
  snprintf(probe, sizeof probe, "%s/probe", fx_dir);
  cr_assert_eq(mkdir(probe, 0700), 0);
  int pfd = open(probe, O_RDONLY | O_DIRECTORY);
  cr_assert_geq(pfd, 0);
  int can = ioctl(pfd, FS_IOC_GETFLAGS, &flags) == 0 &&
            (flags |= FS_TOPDIR_FL, ioctl(pfd, FS_IOC_SETFLAGS, &flags) == 0);
  close(pfd);
  if (!can)
    cr_skip_test("the filesystem of %s takes no FS_TOPDIR_FL", fx_dir);
  tfs_store_t *s;
  snprintf(path, sizeof path, "%s/state", fx_dir);
  snprintf(tasks, sizeof tasks, "%s/tasks", path);
  for (int round = 0; round < 2; round++) {
    cr_assert_eq(tfs_store_open(path, &s), 0);
    tfs_store_close(s);
    int fd = open(tasks, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(fd, 0);
    flags = 0;
    cr_assert_eq(ioctl(fd, FS_IOC_GETFLAGS, &flags), 0);
    cr_assert(flags & FS_TOPDIR_FL, "round %d: tasks/ has flags %#x, no FS_TOPDIR_FL", round,
              flags);
    /* Round 1: a store whose tasks/ lacks the flag (made by an older
     * taskfs) gets it from its next writer. */
    flags &= ~FS_TOPDIR_FL;
    cr_assert_eq(ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);
    close(fd);
  }
}

Test(store, tasks_dir_symlink_refused) {
  char path[4096], target[4096];
  tfs_store_t *s;
  snprintf(path, sizeof path, "%s/evil", fx_dir);
  snprintf(target, sizeof target, "%s/elsewhere", fx_dir);
  cr_assert_eq(mkdir(path, 0700), 0);
  cr_assert_eq(mkdir(target, 0700), 0);
  char link[4200];
  snprintf(link, sizeof link, "%s/tasks", path);
  cr_assert_eq(symlink(target, link), 0);
  cr_assert_eq(tfs_store_open(path, &s), TFS_ESYMLINK);
}

/* ---- owner ---------------------------------------------------------------- */

Test(store, owner_acquire_and_query) {
  tfs_owner_t o, prev;
  cr_assert_eq(tfs_store_owner(fx_store, &o), -ENOENT);
  cr_assert_eq(tfs_store_acquire(fx_store, "mcp", &prev), 0);
  cr_assert_eq(prev.alive, 0);
  cr_assert_eq(tfs_store_owner(fx_store, &o), 0);
  cr_assert_eq(o.pid, getpid());
  cr_assert_eq(o.alive, 1);
  cr_assert_str_eq(o.role, "mcp");
  cr_assert_gt(o.start_ticks, 0);
  cr_assert_neq(o.boot_id[0], 0);
  cr_assert_neq(o.exe[0], 0);
  cr_assert_gt(o.started_ms, 0);

  /* A child takes over: it reports us as the live previous owner. */
  pid_t pid = fork();
  if (pid == 0) {
    tfs_owner_t p2;
    if (tfs_store_acquire(fx_store, "mount", &p2))
      _exit(1);
    _exit(p2.alive && p2.pid == getppid() && !strcmp(p2.role, "mcp") ? 0 : 2);
  }
  fx_track(pid);
  cr_assert_eq(fx_wait(pid), 0);
  /* The child is dead now; the read-only query says so and changes nothing. */
  cr_assert_eq(tfs_store_owner(fx_store, &o), 0);
  cr_assert_eq(o.pid, pid);
  cr_assert_eq(o.alive, 0);
  cr_assert_str_eq(o.role, "mount");
  char *text = tu_read_file(fx_path("owner.json"), NULL);
  cr_assert_eq(tfs_store_owner(fx_store, &o), 0);
  char *again = tu_read_file(fx_path("owner.json"), NULL);
  cr_assert_str_eq(text, again);
  cr_assert_null(strstr(text, "\"alive\""), "alive is never stored");
  free(text);
  free(again);
  char *dump = tfs_owner_dump(&o);
  cr_assert_not_null(strstr(dump, "\"alive\": false"));
  free(dump);
}

Test(store, owner_recycled_pid_reads_dead) {
  tfs_owner_t self, o;
  cr_assert_eq(tfs_owner_self(&self, "cli"), 0);
  self.start_ticks += 12345; /* our pid, but not our process */
  char *text = tfs_owner_dump(&self);
  fx_write("owner.json", text);
  free(text);
  cr_assert_eq(tfs_store_owner(fx_store, &o), 0);
  cr_assert_eq(o.pid, getpid());
  cr_assert_eq(o.alive, 0);
  /* Right ticks but another boot: dead too. */
  cr_assert_eq(tfs_owner_self(&self, "cli"), 0);
  memcpy(self.boot_id, "00000000-0000-0000-0000-000000000000", 37);
  text = tfs_owner_dump(&self);
  fx_write("owner.json", text);
  free(text);
  cr_assert_eq(tfs_store_owner(fx_store, &o), 0);
  cr_assert_eq(o.alive, 0);
  /* Garbage is corrupt, and acquire still works over it. */
  fx_write("owner.json", "{not json");
  cr_assert_eq(tfs_store_owner(fx_store, &o), TFS_ECORRUPT);
  tfs_owner_t prev;
  cr_assert_eq(tfs_store_acquire(fx_store, "cli", &prev), 0);
  cr_assert_eq(prev.alive, 0);
}

/* ---- ids and keys --------------------------------------------------------- */

Test(store, id_and_key_validation) {
  cr_assert(tfs_id_valid("mi4x7k2p-3fz9qa"));
  cr_assert(tfs_id_valid("00000000-000000"));
  const char *bad_ids[] = {"",
                           "..",
                           ".",
                           "a/b",
                           "../x",
                           "MI4X7K2P-3FZ9QA",
                           "mi4x7k2p3fz9qa",
                           "mi4x7k2p-3fz9qa0",
                           "mi4x7k2p-3fz9q",
                           "mi4x7k2p_3fz9qa",
                           "mi4x7k2p-3fz9q\n",
                           "mi4x7k2p/3fz9qa",
                           NULL};
  for (int i = 0; bad_ids[i]; i++)
    cr_assert_not(tfs_id_valid(bad_ids[i]), "id '%s'", bad_ids[i]);
  cr_assert_not(tfs_id_valid(NULL));

  cr_assert(tfs_key_valid("build:main"));
  cr_assert(tfs_key_valid("a.b_c-d:E9"));
  cr_assert(tfs_key_valid("x"));
  char longkey[300];
  memset(longkey, 'k', sizeof longkey);
  longkey[128] = '\0';
  cr_assert(tfs_key_valid(longkey));
  longkey[128] = 'k';
  longkey[299] = '\0';
  cr_assert_not(tfs_key_valid(longkey));
  const char *bad_keys[] = {"",      ".",    "..",          ".hidden", "a/b",         "../x", "a b",
                            "tab\t", "nl\n", "esc\x1b[31m", "del\x7f", "caf\xc3\xa9", "x\\y", NULL};
  for (int i = 0; bad_keys[i]; i++)
    cr_assert_not(tfs_key_valid(bad_keys[i]), "key '%s'", bad_keys[i]);
  cr_assert_not(tfs_key_valid(NULL));
  /* A NUL embedded in a longer buffer cuts the string: what is checked is
   * what the path would be built from. */
  const char nul_id[] = "mi4x7k2p-3fz9qa\0/../../etc";
  cr_assert(tfs_id_valid(nul_id));
  const char nul_key[] = "ab\0/../x";
  cr_assert(tfs_key_valid(nul_key));
  cr_assert_not(tfs_key_valid("\0abc"));
  /* Counted: the NUL is seen and refused. */
  cr_assert_not(tfs_id_validn(nul_id, sizeof nul_id - 1));
  cr_assert_not(tfs_id_validn(nul_id, 16));
  cr_assert(tfs_id_validn(nul_id, 15));
  cr_assert_not(tfs_key_validn(nul_key, sizeof nul_key - 1));
  cr_assert(tfs_key_validn(nul_key, 2));
  cr_assert_not(tfs_key_validn(nul_key, 0));
  cr_assert_not(tfs_key_validn("..", 2));
  cr_assert_not(tfs_key_validn(longkey, 299));
  cr_assert(tfs_key_validn(longkey, 128), "not NUL-terminated at len: still fine");
  cr_assert_not(tfs_id_validn(NULL, 15));
}

Test(store, hostile_ids_rejected_everywhere) {
  char longs[301];
  memset(longs, 'a', 300);
  longs[300] = '\0';
  const char *bad[] = {"..", "a/b", "", longs, "ctl\x01", "../x", "/etc/passwd", ".", NULL};
  tfs_record_t rec;
  char id[TFS_ID_MAX + 1], who[64];
  int64_t at;
  tfs_follower_t *f;
  for (int i = 0; bad[i]; i++) {
    const char *b = bad[i];
    cr_assert_eq(tfs_task_load(fx_store, b, &rec), TFS_EBADID, "load %s", b);
    cr_assert_eq(tfs_task_alive(fx_store, b), TFS_EBADID);
    cr_assert_eq(tfs_task_lock(fx_store, b), TFS_EBADID);
    cr_assert_eq(tfs_task_forget(fx_store, b), TFS_EBADID);
    cr_assert_eq(tfs_task_settle_lost(fx_store, b), TFS_EBADID);
    cr_assert_eq(tfs_cancel_request(fx_store, b, "t"), TFS_EBADID);
    cr_assert_eq(tfs_cancel_query(fx_store, b, who, sizeof who, &at), TFS_EBADID);
    cr_assert_eq(tfs_cancel_clear(fx_store, b), TFS_EBADID);
    cr_assert_eq(tfs_transcript_open_append(fx_store, b), TFS_EBADID);
    cr_assert_eq(tfs_transcript_read(fx_store, b, 1, -1, NULL, NULL), TFS_EBADID);
    cr_assert_eq(tfs_follower_open(fx_store, b, 0, &f), TFS_EBADID);
    cr_assert_eq(tfs__task_openat(fx_store, b, "record.json", O_RDONLY, 0), TFS_EBADID);
    cr_assert_eq(tfs_key_lookup(fx_store, b, id), TFS_EBADID);
    cr_assert_eq(tfs_task_resolve(fx_store, b, id), TFS_EBADID, "resolve %s", b);
    char *argv[] = {"true", NULL};
    tfs_task_spec_t spec = {
        .argv = argv, .key = b, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
    if (b[0])
      cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), TFS_EBADID, "key %s", b);
  }
  /* Nothing was created by any of it. */
  cr_assert_eq(tfs_task_count(fx_store), 0);
  cr_assert_neq(strlen(tfs_strerror(TFS_EBADID)), 0);
}

Test(store, strerror_and_names) {
  int codes[] = {TFS_ENOTASK,   TFS_EBADID,   TFS_ECORRUPT, TFS_EKEYCONFLICT,
                 TFS_EFINISHED, TFS_ESYMLINK, -ENOENT,      0};
  for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
    const char *s = tfs_strerror(codes[i]);
    cr_assert(s && *s);
    cr_assert_str_neq(s, "unknown error");
  }
  cr_assert_str_eq(tfs_strerror(-ENOSPC), strerror(ENOSPC));
  tfs_state_t st;
  for (int s = TFS_QUEUED; s <= TFS_LOST; s++) {
    cr_assert_eq(tfs_state_parse(tfs_state_name(s), &st), 0);
    cr_assert_eq((int)st, s);
    cr_assert_eq(tfs_state_terminal(s), s >= TFS_COMPLETED);
  }
  cr_assert_eq(tfs_state_parse("bogus", &st), TFS_EBADID);
  /* A list: every face's state filter. */
  unsigned mask = 0;
  char bad[16];
  cr_assert_eq(tfs_state_parse_list("running,failed", &mask, bad, sizeof bad), 0);
  cr_assert_eq(mask, TFS_STATE_BIT(TFS_RUNNING) | TFS_STATE_BIT(TFS_FAILED));
  cr_assert_eq(tfs_state_parse_list("paused", &mask, NULL, 0), 0);
  cr_assert(mask & TFS_STATE_BIT(TFS_PAUSED), "a list adds to the mask");
  const char *wrong[][2] = {
      {"running,bogus", "bogus"}, {"", ""},
      {"running,", ""},           {",failed", ""},
      {"lost,,queued", ""},       {"a-very-long-name-of-no-state", "a-very-long-nam"}};
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    mask = 0;
    cr_assert_eq(tfs_state_parse_list(wrong[i][0], &mask, bad, sizeof bad), TFS_EBADID, "'%s'",
                 wrong[i][0]);
    cr_assert_str_eq(bad, wrong[i][1], "'%s': the bad item", wrong[i][0]);
    cr_assert_eq(mask, 0, "'%s': a refused list changes no bit", wrong[i][0]);
  }
  tfs_restart_t r;
  for (int i = TFS_RESTART_NO; i <= TFS_RESTART_ALWAYS; i++) {
    cr_assert_eq(tfs_restart_parse(tfs_restart_name(i), &r), 0);
    cr_assert_eq((int)r, i);
  }
  cr_assert_str_eq(tfs_restart_name(TFS_RESTART_ON_FAILURE), "on-failure");
  cr_assert_eq(tfs_restart_parse("sometimes", &r), TFS_EBADID);
}

Test(store, time_format_parse) {
  char buf[TFS_TIME_BUF];
  cr_assert_str_eq(tfs_time_format(0, buf), "1970-01-01T00:00:00.000Z");
  cr_assert_str_eq(tfs_time_format(1795916208123LL, buf), "2026-11-29T01:36:48.123Z");
  int64_t ms;
  cr_assert_eq(tfs_time_parse("2026-11-29T01:36:48.123Z", &ms), 0);
  cr_assert_eq(ms, 1795916208123LL);
  cr_assert_eq(tfs_time_parse("2026-11-29T02:36:48.1+01:00", &ms), 0);
  cr_assert_eq(ms, 1795916208100LL);
  cr_assert_eq(tfs_time_parse("2026-11-29T01:36:48Z", &ms), 0);
  cr_assert_eq(ms, 1795916208000LL);
  cr_assert_neq(tfs_time_parse("2026-11-29", &ms), 0);
  cr_assert_neq(tfs_time_parse("2026-13-29T01:36:48Z", &ms), 0);
  cr_assert_neq(tfs_time_parse("2026-11-29T01:36:48.123Zjunk", &ms), 0);
  int64_t now = tfs_now_ms();
  cr_assert_eq(tfs_time_parse(tfs_time_format(now, buf), &ms), 0);
  cr_assert_eq(ms, now);
}

Test(store, ids_sort_by_creation_and_are_unique) {
  char prev[TFS_ID_MAX + 1] = "", id[TFS_ID_MAX + 1];
  for (int i = 0; i < 50; i++) {
    fx_create("true", NULL, id);
    cr_assert(tfs_id_valid(id));
    /* Strictly increasing within one process, even in one millisecond. */
    cr_assert_gt(strcmp(id, prev), 0, "%s after %s", id, prev);
    strcpy(prev, id);
  }
  cr_assert_eq(tfs_task_count(fx_store), 50);
  char **ids;
  size_t n;
  cr_assert_eq(tfs_task_ids(fx_store, &ids, &n), 0);
  cr_assert_eq(n, 50);
  for (size_t i = 1; i < n; i++)
    cr_assert_lt(strcmp(ids[i - 1], ids[i]), 0);
  tfs_ids_free(ids, n);
}

/* ---- create / keys --------------------------------------------------------- */

Test(store, create_with_key_semantics) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], c[TFS_ID_MAX + 1];
  char *argv[] = {"make", "-j4", NULL}, *other[] = {"make", "-j8", NULL};
  char *envs[] = {"PATH", "SECRET=value", NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = "/srv",
                          .key = "build:main",
                          .env_names = envs,
                          .restart = TFS_RESTART_ON_FAILURE,
                          .min_uptime_ms = 250,
                          .max_restarts = 3,
                          .grace_ms = 100,
                          .important_k = 7};
  int existed = -1;
  cr_assert_eq(tfs_task_create(fx_store, &spec, a, &existed), 0);
  cr_assert_eq(existed, 0);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, a, &rec), 0);
  cr_assert_str_eq(rec.id, a);
  cr_assert_str_eq(rec.key, "build:main");
  cr_assert_eq(rec.argc, 2);
  cr_assert_str_eq(rec.argv[1], "-j4");
  cr_assert_str_eq(rec.cwd, "/srv");
  cr_assert_eq(rec.env_count, 2);
  cr_assert_str_eq(rec.env_names[1], "SECRET", "only names are kept");
  cr_assert_eq(rec.state, TFS_QUEUED);
  cr_assert_eq(rec.restart, TFS_RESTART_ON_FAILURE);
  cr_assert_eq(rec.min_uptime_ms, 250);
  cr_assert_eq(rec.max_restarts, 3);
  cr_assert_eq(rec.grace_ms, 100);
  cr_assert_eq(rec.important.k, 7);
  cr_assert_gt(rec.created_ms, 0);
  tfs_record_free(&rec);
  char *text = tu_read_file(fx_path("tasks"), NULL);
  free(text);
  char *rj = NULL;
  char p[64];
  snprintf(p, sizeof p, "tasks/%s/record.json", a);
  rj = tu_read_file(fx_path(p), NULL);
  cr_assert_null(strstr(rj, "value"), "env values never reach the disk");
  free(rj);

  /* Same key, same command: the existing task. */
  cr_assert_eq(tfs_task_create(fx_store, &spec, b, &existed), 0);
  cr_assert_eq(existed, 1);
  cr_assert_str_eq(a, b);
  cr_assert_eq(tfs_key_lookup(fx_store, "build:main", c), 0);
  cr_assert_str_eq(c, a);
  cr_assert_eq(tfs_task_resolve(fx_store, "build:main", c), 0);
  cr_assert_str_eq(c, a);
  cr_assert_eq(tfs_task_resolve(fx_store, a, c), 0);
  cr_assert_str_eq(c, a);
  cr_assert_eq(tfs_task_resolve(fx_store, "nokey", c), TFS_ENOTASK);
  cr_assert_eq(tfs_task_resolve(fx_store, "zzzzzzzz-zzzzzz", c), TFS_ENOTASK);
  cr_assert_eq(tfs_key_lookup(fx_store, "nokey", c), TFS_ENOTASK);

  /* Same key, other command or other cwd: conflict, nothing created. */
  spec.argv = other;
  cr_assert_eq(tfs_task_create(fx_store, &spec, b, &existed), TFS_EKEYCONFLICT);
  spec.argv = argv;
  spec.cwd = "/srv/other";
  cr_assert_eq(tfs_task_create(fx_store, &spec, b, &existed), TFS_EKEYCONFLICT);
  spec.cwd = "/srv";
  cr_assert_eq(tfs_task_count(fx_store), 1);

  /* rerun on a task that has not ended: still the same task. */
  spec.rerun = 1;
  cr_assert_eq(tfs_task_create(fx_store, &spec, b, &existed), 0);
  cr_assert_eq(existed, 1);
  cr_assert_str_eq(b, a);

  /* Once it has ended: without rerun the old one, with rerun a new one. */
  cr_assert_eq(tfs_task_load(fx_store, a, &rec), 0);
  rec.state = TFS_COMPLETED;
  rec.exit_code = 0;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  spec.rerun = 0;
  cr_assert_eq(tfs_task_create(fx_store, &spec, b, &existed), 0);
  cr_assert_eq(existed, 1);
  cr_assert_str_eq(b, a);
  spec.rerun = 1;
  cr_assert_eq(tfs_task_create(fx_store, &spec, b, &existed), 0);
  cr_assert_eq(existed, 0);
  cr_assert_str_neq(b, a);
  cr_assert_eq(tfs_key_lookup(fx_store, "build:main", c), 0);
  cr_assert_str_eq(c, b);
  cr_assert_eq(tfs_task_count(fx_store), 2);

  /* Forgetting the old task leaves the key (it names the new one). */
  cr_assert_eq(tfs_task_forget(fx_store, b), -EBUSY, "queued: not forgotten");
  fx_set_state(b, TFS_COMPLETED);
  cr_assert_eq(tfs_task_forget(fx_store, a), 0);
  cr_assert_eq(tfs_key_lookup(fx_store, "build:main", c), 0);
  cr_assert_str_eq(c, b);
  cr_assert_eq(tfs_task_forget(fx_store, b), 0);
  cr_assert_eq(tfs_key_lookup(fx_store, "build:main", c), TFS_ENOTASK);
  cr_assert_eq(tfs_task_forget(fx_store, b), TFS_ENOTASK);

  /* No temp files are left behind in keys/ or tasks/. */
  char *ls = NULL;
  tu_sh(&ls, "ls -A '%s' '%s'", fx_path("keys"), fx_path("tasks"));
  cr_assert_null(strstr(ls, ".tmp"), "%s", ls);
  free(ls);
}

Test(store, create_rejects_bad_specs) {
  char id[TFS_ID_MAX + 1];
  char *empty[] = {"", NULL}, *none[] = {NULL}, *ok[] = {"x", NULL};
  tfs_task_spec_t spec = {.argv = empty};
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), -EINVAL);
  spec.argv = none;
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), -EINVAL);
  spec.argv = NULL;
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), -EINVAL);
  spec.argv = ok;
  spec.cwd = "relative";
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), -EINVAL);
  spec.cwd = NULL;
  spec.key = "";
  spec.min_uptime_ms = spec.grace_ms = -1;
  spec.max_restarts = -1;
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), 0);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  char cwd[4096];
  cr_assert_str_eq(rec.cwd, getcwd(cwd, sizeof cwd), "NULL cwd = current directory");
  cr_assert_str_eq(rec.key, "");
  cr_assert_eq(rec.min_uptime_ms, 1000);
  cr_assert_eq(rec.max_restarts, -1);
  cr_assert_eq(rec.max_quick_restarts, 5);
  cr_assert_eq(rec.grace_ms, 5000);
  cr_assert_eq(rec.important.k, TFS_IMPORTANT_K_DEFAULT);
  tfs_record_free(&rec);
}

Test(store, stale_key_is_taken_over) {
  char id[TFS_ID_MAX + 1], got[TFS_ID_MAX + 1];
  /* A key naming a task that no longer exists. */
  fx_write("keys/orphan", "00000001-aaaaaa\n");
  char *argv[] = {"true", NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = "/",
                          .key = "orphan",
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1};
  int existed = -1;
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, &existed), 0);
  cr_assert_eq(existed, 0);
  cr_assert_eq(tfs_key_lookup(fx_store, "orphan", got), 0);
  cr_assert_str_eq(got, id);
  /* A key naming a task dir that never got its record, created long ago
   * (its id says 1970): the creator died between mkdir and save. */
  cr_assert_eq(mkdir(fx_path("tasks/00000002-bbbbbb"), 0700), 0);
  fx_write("keys/halfmade", "00000002-bbbbbb\n");
  spec.key = "halfmade";
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, &existed), 0);
  cr_assert_eq(existed, 0);
  cr_assert_eq(tfs_key_lookup(fx_store, "halfmade", got), 0);
  cr_assert_str_eq(got, id);
}

/* ---- list and corrupt records ---------------------------------------------- */

typedef struct {
  char ids[64][TFS_ID_MAX + 1];
  int n;
  int stop_after;
} collect_t;

static int collect_cb(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  collect_t *c = arg;
  strcpy(c->ids[c->n++], rec->id);
  return c->stop_after && c->n >= c->stop_after;
}

Test(store, list_skips_and_counts_corrupt) {
  char good[3][TFS_ID_MAX + 1];
  for (int i = 0; i < 3; i++)
    fx_create("good", NULL, good[i]);
  const char *corrupt_ids[] = {"00000001-empty0", "00000002-trunc0", "00000003-binar0",
                               "00000004-isdir0", "00000005-versn0", "00000006-symln0",
                               "00000007-norec0", "00000008-wrong0", "00000009-types0"};
  for (int i = 0; i < 9; i++) {
    char p[64];
    snprintf(p, sizeof p, "tasks/%s", corrupt_ids[i]);
    cr_assert_eq(mkdir(fx_path(p), 0700), 0);
  }
  fx_write("tasks/00000001-empty0/record.json", "");
  fx_write("tasks/00000002-trunc0/record.json", "{\"v\":1,\"id\":\"00000002-trunc0\",\"comm");
  fx_write("tasks/00000003-binar0/record.json", "\x7f"
                                                "ELF\x01\x02\xff\xfe\x00garbage");
  cr_assert_eq(mkdir(fx_path("tasks/00000004-isdir0/record.json"), 0700), 0);
  fx_write("tasks/00000005-versn0/record.json",
           "{\"v\":2,\"id\":\"00000005-versn0\",\"command\":[\"x\"],\"state\":\"queued\"}");
  cr_assert_eq(symlink(fx_path("tasks/00000005-versn0/record.json"),
                       fx_path("tasks/00000006-symln0/record.json")),
               0);
  /* 00000007: a dir without record.json, old: counted (a creator died). */
  /* A record of another task copied into this dir. */
  fx_write("tasks/00000008-wrong0/record.json",
           "{\"v\":1,\"id\":\"00000001-empty0\",\"command\":[\"x\"],\"state\":\"queued\"}");
  fx_write("tasks/00000009-types0/record.json",
           "{\"v\":1,\"id\":\"00000009-types0\",\"command\":[\"x\"],\"state\":\"queued\","
           "\"exitCode\":\"zero\"}");
  /* Things that are not tasks at all are ignored, not counted. */
  cr_assert_eq(mkdir(fx_path("tasks/not-a-task"), 0700), 0);
  fx_write("tasks/.record.json.tmp.1.abc", "{");

  collect_t c = {0};
  cr_assert_eq(fx_list(collect_cb, &c), 9);
  cr_assert_eq(c.n, 3);
  for (int i = 0; i < 3; i++)
    cr_assert_str_eq(c.ids[i], good[i], "oldest first");
  cr_assert_eq(tfs_task_count(fx_store), 12);

  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, "00000001-empty0", &rec), TFS_ECORRUPT);
  cr_assert_eq(tfs_task_load(fx_store, "00000004-isdir0", &rec), TFS_ECORRUPT);
  cr_assert_eq(tfs_task_load(fx_store, "00000006-symln0", &rec), TFS_ESYMLINK);
  cr_assert_eq(tfs_task_load(fx_store, "00000007-norec0", &rec), TFS_ENOTASK);
  cr_assert_eq(tfs_task_load(fx_store, "zzzzzzzz-zzzzzz", &rec), TFS_ENOTASK);

  /* A fresh dir without a record is a task being created: not counted. */
  char fresh[TFS_ID_MAX + 1];
  fx_create("x", NULL, fresh);
  char p[64];
  snprintf(p, sizeof p, "tasks/%s/record.json", fresh);
  cr_assert_eq(unlink(fx_path(p)), 0);
  collect_t c2 = {.stop_after = 2};
  fx_list(collect_cb, &c2);
  cr_assert_eq(c2.n, 2, "the callback stops the listing");
  collect_t c3 = {0};
  cr_assert_eq(fx_list(collect_cb, &c3), 9);
  cr_assert_eq(c3.n, 3);
  cr_assert_eq(tfs_task_list_opts(fx_store, NULL, collect_cb, &c3, NULL), 0, "no stats");

  /* Corrupt tasks can still be forgotten, including the planted dir. */
  for (int i = 0; i < 9; i++)
    cr_assert_eq(tfs_task_forget(fx_store, corrupt_ids[i]), 0, "%s", corrupt_ids[i]);
  cr_assert_eq(tfs_task_count(fx_store), 4);
  /* The symlink's target survived the forget of the symlinked one... */
  struct stat st;
  cr_assert_neq(stat(fx_path("tasks/00000005-versn0"), &st), 0);
}

/* ---- liveness ----------------------------------------------------------------- */

static pid_t hold_lock(const char *id) {
  int pfd[2];
  cr_assert_eq(pipe(pfd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    int fd = tfs_task_lock(fx_store, id);
    if (fd < 0)
      _exit(3);
    if (write(pfd[1], "x", 1) != 1)
      _exit(4);
    for (;;)
      pause();
  }
  fx_track(pid);
  close(pfd[1]);
  char c;
  cr_assert_eq(read(pfd[0], &c, 1), 1, "child took the lock");
  close(pfd[0]);
  return pid;
}

Test(store, liveness_lost_and_settle) {
  char id[TFS_ID_MAX + 1];
  fx_create("sleep", NULL, id);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_alive(fx_store, id), 0, "no lock file yet");
  pid_t kid = hold_lock(id);
  cr_assert_eq(tfs_task_alive(fx_store, id), 1);
  cr_assert_eq(tfs_task_alive(fx_store, id), 1, "probing twice does not disturb it");
  /* The supervisor marks it running. */
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  rec.state = TFS_RUNNING;
  rec.supervisor_pid = kid;
  rec.started_ms = tfs_now_ms();
  rec.alive_ms = 1795916208123LL;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  cr_assert_eq(rec.state, TFS_RUNNING);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_settle_lost(fx_store, id), 0, "alive: nothing to settle");
  cr_assert_eq(tfs_task_forget(fx_store, id), -EBUSY);
  cr_assert_eq(tfs_task_prune(fx_store, 0), 0);

  kill(kid, SIGKILL);
  fx_wait(kid);
  cr_assert_eq(tfs_task_alive(fx_store, id), 0);
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  cr_assert_eq(rec.state, TFS_LOST);
  cr_assert_not_null(strstr(rec.reason, "supervisor died"));
  cr_assert_not_null(strstr(rec.reason, "2026-11-29T01:36:48.123Z"));
  cr_assert_eq(rec.ended_ms, 1795916208123LL);
  tfs_record_free(&rec);
  /* Nothing was written by the load. */
  char p[64];
  snprintf(p, sizeof p, "tasks/%s/record.json", id);
  char *text = tu_read_file(fx_path(p), NULL);
  cr_assert_not_null(strstr(text, "\"running\""));
  free(text);
  cr_assert_eq(tfs_task_settle_lost(fx_store, id), 1);
  text = tu_read_file(fx_path(p), NULL);
  cr_assert_not_null(strstr(text, "\"lost\""));
  free(text);
  cr_assert_eq(tfs_task_settle_lost(fx_store, id), 0, "already settled");
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  cr_assert_eq(rec.state, TFS_LOST);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_forget(fx_store, id), 0);
}

Test(store, queued_with_supervisor_reads_lost) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  fx_create("x", NULL, id);
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  cr_assert_eq(rec.state, TFS_QUEUED, "queued without a supervisor is just queued");
  rec.supervisor_pid = 1;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  cr_assert_eq(rec.state, TFS_LOST);
  cr_assert_not_null(strstr(rec.reason, "before it recorded"));
  tfs_record_free(&rec);
}

Test(store, prune_keeps_newest_and_locked) {
  char ids[10][TFS_ID_MAX + 1];
  for (int i = 0; i < 10; i++) {
    fx_create("x", i == 1 ? "keyed" : NULL, ids[i]);
    fx_set_state(ids[i], i % 2 ? TFS_FAILED : TFS_COMPLETED);
  }
  hold_lock(ids[0]); /* the oldest lives */
  cr_assert_eq(tfs_task_prune(fx_store, 3), 6);
  char **left;
  size_t n;
  cr_assert_eq(tfs_task_ids(fx_store, &left, &n), 0);
  cr_assert_eq(n, 4);
  cr_assert_str_eq(left[0], ids[0]);
  cr_assert_str_eq(left[1], ids[7]);
  cr_assert_str_eq(left[2], ids[8]);
  cr_assert_str_eq(left[3], ids[9]);
  tfs_ids_free(left, n);
  char got[TFS_ID_MAX + 1];
  cr_assert_eq(tfs_key_lookup(fx_store, "keyed", got), TFS_ENOTASK, "key went with its task");
  cr_assert_eq(tfs_task_prune(fx_store, 100), 0);
  cr_assert_eq(tfs_task_prune(fx_store, 0), 3);
  cr_assert_eq(tfs_task_count(fx_store), 1);
}

/* ---- planted symlinks ---------------------------------------------------------- */

Test(store, planted_symlinks_refused) {
  char id[TFS_ID_MAX + 1], p[64], victim[4096];
  tfs_record_t rec;
  fx_create("x", NULL, id);
  snprintf(victim, sizeof victim, "%s/victim", fx_dir);
  fx_write("../victim", "precious\n");
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);

  /* record.json */
  snprintf(p, sizeof p, "tasks/%s/record.json", id);
  cr_assert_eq(unlink(fx_path(p)), 0);
  cr_assert_eq(symlink(victim, fx_path(p)), 0);
  tfs_record_t rec2;
  cr_assert_eq(tfs_task_load(fx_store, id, &rec2), TFS_ESYMLINK);
  cr_assert_eq(tfs_task_save(fx_store, &rec), TFS_ESYMLINK);
  /* transcript */
  snprintf(p, sizeof p, "tasks/%s/transcript", id);
  cr_assert_eq(symlink(victim, fx_path(p)), 0);
  cr_assert_eq(tfs_transcript_open_append(fx_store, id), TFS_ESYMLINK);
  cr_assert_eq(tfs_transcript_read(fx_store, id, 1, -1, NULL, NULL), TFS_ESYMLINK);
  tfs_follower_t *f;
  cr_assert_eq(tfs_follower_open(fx_store, id, 5, &f), TFS_ESYMLINK);
  cr_assert_eq(tfs_follower_open(fx_store, id, -1, &f), 0);
  cr_assert_eq(tfs_follower_next(f, 1, NULL, NULL), TFS_ESYMLINK);
  tfs_follower_close(f);
  /* cancel */
  snprintf(p, sizeof p, "tasks/%s/cancel", id);
  cr_assert_eq(symlink(victim, fx_path(p)), 0);
  cr_assert_eq(tfs_cancel_query(fx_store, id, NULL, 0, NULL), TFS_ESYMLINK);
  /* lock */
  snprintf(p, sizeof p, "tasks/%s/lock", id);
  cr_assert_eq(symlink(victim, fx_path(p)), 0);
  cr_assert_eq(tfs_task_lock(fx_store, id), TFS_ESYMLINK);
  cr_assert_eq(tfs_task_alive(fx_store, id), TFS_ESYMLINK);
  cr_assert_eq(tfs__task_openat(fx_store, id, "lock", O_RDONLY, 0), TFS_ESYMLINK);

  /* tasks/<id> itself */
  char id2[TFS_ID_MAX + 1], vdir[4096];
  fx_create("y", NULL, id2);
  snprintf(vdir, sizeof vdir, "%s/vdir", fx_dir);
  cr_assert_eq(mkdir(vdir, 0700), 0);
  fx_write("../vdir/record.json", "precious\n");
  snprintf(p, sizeof p, "tasks/%s", id2);
  tu_rmrf(fx_path(p));
  cr_assert_eq(symlink(vdir, fx_path(p)), 0);
  cr_assert_eq(tfs_task_load(fx_store, id2, &rec2), TFS_ESYMLINK);
  strcpy(rec.id, id2);
  cr_assert_eq(tfs_task_save(fx_store, &rec), TFS_ESYMLINK);
  cr_assert_eq(tfs_transcript_open_append(fx_store, id2), TFS_ESYMLINK);
  cr_assert_eq(tfs_cancel_request(fx_store, id2, "me"), TFS_ESYMLINK);
  cr_assert_eq(tfs_task_lock(fx_store, id2), TFS_ESYMLINK);
  char got[TFS_ID_MAX + 1];
  cr_assert_eq(tfs_task_resolve(fx_store, id2, got), TFS_ESYMLINK);
  /* Listing counts both as corrupt, and forget removes the links only. */
  cr_assert_eq(fx_list(NULL, NULL), 2);
  cr_assert_eq(tfs_task_forget(fx_store, id), 0);
  cr_assert_eq(tfs_task_forget(fx_store, id2), 0);
  tfs_record_free(&rec);

  /* keys/<key> */
  cr_assert_eq(symlink(victim, fx_path("keys/planted")), 0);
  cr_assert_eq(tfs_key_lookup(fx_store, "planted", got), TFS_ESYMLINK);
  cr_assert_eq(tfs_task_resolve(fx_store, "planted", got), TFS_ESYMLINK);
  char *argv[] = {"x", NULL};
  tfs_task_spec_t spec = {
      .argv = argv, .key = "planted", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  cr_assert_eq(tfs_task_create(fx_store, &spec, got, NULL), TFS_ESYMLINK);
  cr_assert_eq(tfs_task_count(fx_store), 0, "the failed create left nothing");

  char *text = tu_read_file(victim, NULL);
  cr_assert_str_eq(text, "precious\n", "the target is untouched");
  free(text);
  char vrec[4200];
  snprintf(vrec, sizeof vrec, "%s/record.json", vdir);
  text = tu_read_file(vrec, NULL);
  cr_assert_str_eq(text, "precious\n");
  free(text);
  struct stat st;
  cr_assert_eq(stat(victim, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600, "mode untouched too");
}

Test(store, task_openat_and_io_helpers) {
  char id[TFS_ID_MAX + 1];
  fx_create("x", NULL, id);
  cr_assert_eq(tfs__task_openat(fx_store, id, "../escape", O_RDONLY, 0), -EINVAL);
  cr_assert_eq(tfs__task_openat(fx_store, id, "..", O_RDONLY, 0), -EINVAL);
  cr_assert_eq(tfs__task_openat(fx_store, id, "nothere", O_RDONLY, 0), -ENOENT);
  cr_assert_eq(tfs__task_openat(fx_store, "zzzzzzzz-zzzzzz", "x", O_RDONLY, 0), TFS_ENOTASK);
  int fd = tfs__task_openat(fx_store, id, "record.json", O_RDONLY, 0);
  cr_assert_geq(fd, 0);
  cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  close(fd);

  int dfd = open(fx_dir, O_RDONLY | O_DIRECTORY);
  cr_assert_eq(tfs__write_atomic(dfd, "f.txt", "hello", 5), 0);
  char *out;
  size_t len;
  cr_assert_eq(tfs__read_small(dfd, "f.txt", 100, &out, &len), 0);
  cr_assert_eq(len, 5);
  cr_assert_str_eq(out, "hello");
  free(out);
  cr_assert_eq(tfs__read_small(dfd, "f.txt", 4, &out, &len), -EFBIG);
  cr_assert_eq(tfs__write_atomic(dfd, "f.txt", "", 0), 0);
  cr_assert_eq(tfs__read_small(dfd, "f.txt", 4, &out, &len), 0);
  cr_assert_eq(len, 0);
  free(out);
  cr_assert_eq(tfs__write_atomic(dfd, "a/b", "x", 1), -EINVAL);
  cr_assert_eq(mkfifo("/dev/null/x", 0600), -1);
  char fifo[4200];
  snprintf(fifo, sizeof fifo, "%s/fifo", fx_dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  cr_assert_eq(tfs__read_small(dfd, "fifo", 100, &out, &len), TFS_ECORRUPT, "a FIFO never hangs");
  /* O_PATH directory fds work for the atomic write too. */
  int pfd = open(fx_dir, O_PATH | O_DIRECTORY);
  cr_assert_eq(tfs__write_atomic(pfd, "g.txt", "x", 1), 0);
  close(pfd);
  close(dfd);
  char *ls = NULL;
  tu_sh(&ls, "ls -A '%s'", fx_dir);
  cr_assert_null(strstr(ls, ".tmp"), "%s", ls);
  free(ls);
}

/* The generator itself (internal to the core): thousands of ids within a
 * few milliseconds still come out strictly increasing and well formed. */
int tfs__id_generate(char buf[TFS_ID_MAX + 1]);

Test(store, id_generator_monotonic) {
  char prev[TFS_ID_MAX + 1] = "", id[TFS_ID_MAX + 1];
  for (int i = 0; i < 20000; i++) {
    cr_assert_eq(tfs__id_generate(id), 0);
    cr_assert(tfs_id_valid(id), "%s", id);
    cr_assert_gt(strcmp(id, prev), 0, "%s after %s", id, prev);
    strcpy(prev, id);
  }
}

Test(store, key_idempotent_with_invalid_utf8) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1];
  char *argv[] = {"printf", "\xff\xfe", NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = "/tmp/\xc3",
                          .key = "bin",
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1};
  int existed = -1;
  cr_assert_eq(tfs_task_create(fx_store, &spec, a, &existed), 0);
  cr_assert_eq(existed, 0);
  cr_assert_eq(tfs_task_create(fx_store, &spec, b, &existed), 0);
  cr_assert_eq(existed, 1, "the same bytes twice are the same command");
  cr_assert_str_eq(a, b);
  char *other[] = {"printf", "\xfe\xff", NULL};
  spec.argv = other;
  /* Both display as the same text (U+FFFD twice), but the record keeps the
   * exact bytes: they are different commands, and the key says so. */
  cr_assert_eq(tfs_task_create(fx_store, &spec, b, &existed), TFS_EKEYCONFLICT);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, a, &rec), 0);
  cr_assert_str_eq(rec.argv[1], "\xff\xfe");
  cr_assert_str_eq(rec.cwd, "/tmp/\xc3");
  tfs_record_free(&rec);
}

/* Loading reads a record of up to 8 KiB with one read() into a stack buffer
 * and only larger ones in more reads: records around that size (one byte
 * short, exactly, one byte past, much larger) load the same, one past
 * TFS_RECORD_MAX is corrupt, and a FIFO in the record's place is refused
 * without hanging. The padding is JSON whitespace, so the record is the
 * same one. */
Test(store, load_records_of_every_size) {
  char id[TFS_ID_MAX + 1], p[128];
  fx_create("sized", NULL, id);
  snprintf(p, sizeof p, "tasks/%s/record.json", id);
  size_t base_len;
  char *base = tu_read_file(fx_path(p), &base_len);
  cr_assert_not_null(base);
  while (base_len > 0 && base[base_len - 1] != '}')
    base_len--;
  cr_assert_gt(base_len, 1);
  size_t sizes[] = {8191, 8192, 8193, 16384, 100000, (size_t)TFS_RECORD_MAX};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t want = sizes[i];
    cr_assert_gt(want, base_len);
    char *text = malloc(want + 1);
    cr_assert_not_null(text);
    memcpy(text, base, base_len - 1);
    memset(text + base_len - 1, ' ', want - base_len);
    text[want - 1] = '}';
    text[want] = '\0';
    fx_write(p, text);
    tfs_record_t rec;
    cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0, "size %zu", want);
    cr_assert_str_eq(rec.id, id);
    cr_assert_str_eq(rec.argv[0], "sized");
    tfs_record_free(&rec);
    free(text);
  }
  /* One byte over the limit. */
  char *text = malloc((size_t)TFS_RECORD_MAX + 2);
  cr_assert_not_null(text);
  memcpy(text, base, base_len - 1);
  memset(text + base_len - 1, ' ', (size_t)TFS_RECORD_MAX + 1 - base_len);
  text[TFS_RECORD_MAX] = '}';
  text[TFS_RECORD_MAX + 1] = '\0';
  fx_write(p, text);
  free(text);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), TFS_ECORRUPT);
  cr_assert_eq(unlink(fx_path(p)), 0);
  cr_assert_eq(mkfifo(fx_path(p), 0600), 0);
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), TFS_ECORRUPT, "a FIFO never hangs");
  free(base);
}

/* Task files by role: the names, the one type check (a regular file; the
 * doorbell a FIFO), stats and removal, and what the mount stats. */
Test(store, task_files_by_role) {
  char id[TFS_ID_MAX + 1], p[256];
  fx_create("x", NULL, id);
  cr_assert_str_eq(tfs_task_file_name(TFS_FILE_RECORD), "record.json");
  cr_assert_str_eq(tfs_task_file_name(TFS_FILE_SUPERVISOR_LOG), "supervisor.log");
  cr_assert_null(tfs_task_file_name(TFS_FILE_COUNT));
  cr_assert_str_eq(tfs_view_name(TFS_VIEW_OWNER), "owner");
  cr_assert_str_eq(tfs_view_name(TFS_VIEW_RECORD), "record.json");
  cr_assert_null(tfs_view_name(TFS_VIEW_COUNT));

  int fd = tfs_task_file_open(fx_store, id, TFS_FILE_RECORD, O_RDONLY, 0);
  cr_assert_geq(fd, 0);
  cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "the caller's blocking mode is back");
  close(fd);
  cr_assert_eq(tfs_task_file_open(fx_store, id, TFS_FILE_TRANSCRIPT, O_RDONLY, 0), -ENOENT);
  cr_assert_eq(tfs_task_file_open(fx_store, "zzzzzzzz-zzzzzz", TFS_FILE_RECORD, O_RDONLY, 0),
               TFS_ENOTASK);
  cr_assert_eq(tfs_task_file_open(fx_store, "../x", TFS_FILE_RECORD, O_RDONLY, 0), TFS_EBADID);
  cr_assert_eq(tfs_task_file_open(fx_store, id, TFS_FILE_COUNT, O_RDONLY, 0), -EINVAL);

  /* A FIFO where a regular file belongs: refused at once, for reading and
   * for writing (no reader: ENXIO would otherwise leak out). */
  snprintf(p, sizeof p, "tasks/%s/transcript", id);
  cr_assert_eq(mkfifo(fx_path(p), 0600), 0);
  cr_assert_eq(tfs_task_file_open(fx_store, id, TFS_FILE_TRANSCRIPT, O_RDONLY, 0), TFS_ECORRUPT);
  cr_assert_eq(tfs_task_file_open(fx_store, id, TFS_FILE_TRANSCRIPT, O_WRONLY, 0), TFS_ECORRUPT);
  struct stat st;
  cr_assert_eq(tfs_task_file_stat(fx_store, id, TFS_FILE_TRANSCRIPT, &st), -ENOENT);
  cr_assert_eq(tfs_task_file_remove(fx_store, id, TFS_FILE_TRANSCRIPT), 0);
  cr_assert_eq(tfs_task_file_remove(fx_store, id, TFS_FILE_TRANSCRIPT), 0, "absent is fine");
  /* The doorbell is the one FIFO, and only a FIFO. */
  snprintf(p, sizeof p, "tasks/%s/doorbell", id);
  fx_write(p, "planted");
  cr_assert_eq(tfs_task_file_open(fx_store, id, TFS_FILE_DOORBELL, O_WRONLY, 0), TFS_ECORRUPT);
  cr_assert_eq(tfs_task_file_stat(fx_store, id, TFS_FILE_DOORBELL, &st), -ENOENT);
  cr_assert_eq(unlink(fx_path(p)), 0);
  cr_assert_eq(mkfifo(fx_path(p), 0600), 0);
  cr_assert_eq(tfs_task_file_stat(fx_store, id, TFS_FILE_DOORBELL, &st), 0);
  fd = tfs_task_file_open(fx_store, id, TFS_FILE_DOORBELL, O_RDWR, 0);
  cr_assert_geq(fd, 0);
  close(fd);

  cr_assert_eq(tfs_task_file_stat(fx_store, id, TFS_FILE_RECORD, &st), 0);
  cr_assert(S_ISREG(st.st_mode) && st.st_size > 0);
  cr_assert_eq(tfs_task_stat(fx_store, id, &st), 0);
  cr_assert(S_ISDIR(st.st_mode));
  cr_assert_eq(tfs_task_stat(fx_store, "zzzzzzzz-zzzzzz", &st), TFS_ENOTASK);
  cr_assert_eq(tfs_task_stat(fx_store, "nope", &st), TFS_EBADID);
  cr_assert_eq(tfs_store_stat(fx_store, &st), 0);
  cr_assert(S_ISDIR(st.st_mode));
  cr_assert_eq(tfs_owner_stat(fx_store, &st), -ENOENT);
  cr_assert_eq(tfs_store_acquire(fx_store, "test", NULL), 0);
  cr_assert_eq(tfs_owner_stat(fx_store, &st), 0);

  /* A symlink planted as a task dir is no task. */
  char id2[TFS_ID_MAX + 1];
  fx_create("y", NULL, id2);
  snprintf(p, sizeof p, "tasks/%s", id2);
  tu_rmrf(fx_path(p));
  cr_assert_eq(symlink(fx_path("keys"), fx_path(p)), 0);
  cr_assert_eq(tfs_task_stat(fx_store, id2, &st), TFS_ENOTASK);
  cr_assert_eq(tfs_task_file_stat(fx_store, id2, TFS_FILE_RECORD, &st), TFS_ENOTASK);
}

/* The keys as the mount's by-key/ lists them: sorted, well-formed regular
 * files only. */
Test(store, key_list) {
  char id[TFS_ID_MAX + 1];
  fx_create("x", "b-key", id);
  fx_create("y", "a-key", id);
  fx_write("keys/.tmp.x", "junk");
  cr_assert_eq(mkdir(fx_path("keys/dir-key"), 0700), 0);
  cr_assert_eq(symlink("/etc/passwd", fx_path("keys/link-key")), 0);
  char **keys;
  size_t n;
  cr_assert_eq(tfs_key_list(fx_store, &keys, &n), 0);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(keys[0], "a-key");
  cr_assert_str_eq(keys[1], "b-key");
  tfs_ids_free(keys, n);
}

/* A handle per thread: a reopened handle is independent of the original,
 * which may be refreshed (its fds swapped and closed) or closed. */
Test(store, reopened_handle_survives_the_originals_refresh) {
  char id[TFS_ID_MAX + 1], got[TFS_ID_MAX + 1];
  fx_create("x", "k", id);
  tfs_store_t *copy;
  cr_assert_eq(tfs_store_reopen(fx_store, &copy), 0);
  cr_assert_str_eq(tfs_store_path(copy), tfs_store_path(fx_store));
  /* Remove and recreate the store under both: the original refreshes onto
   * the new one, closing its old fds; the copy keeps working on its own. */
  char moved[4096];
  snprintf(moved, sizeof moved, "%s/moved", fx_dir);
  cr_assert_eq(rename(fx_path(""), moved), 0);
  tfs_store_t *fresh;
  cr_assert_eq(tfs_store_open(fx_path(""), &fresh), 0);
  tfs_store_close(fresh);
  cr_assert_eq(tfs_store_refresh(fx_store), 1);
  cr_assert_eq(tfs_key_lookup(fx_store, "k", got), TFS_ENOTASK, "the original sees the new store");
  cr_assert_eq(tfs_key_lookup(copy, "k", got), 0, "the copy still reads its own");
  cr_assert_str_eq(got, id);
  tfs_store_close(fx_store);
  fx_store = NULL;
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(copy, id, &rec), 0, "closing the original leaves the copy working");
  tfs_record_free(&rec);
  /* A writer's copy is a writer: it creates. */
  char id2[TFS_ID_MAX + 1];
  char *argv[] = {"z", NULL};
  tfs_task_spec_t spec = {
      .argv = argv, .cwd = "/", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  cr_assert_eq(tfs_task_create(copy, &spec, id2, NULL), 0);
  tfs_store_close(copy);
  cr_assert_eq(tfs_store_open(fx_path(""), &fx_store), 0);
}

/* tfs_task_load leaves the record freeable on every path, whatever the
 * caller's memory held before; tfs_task_load_reason says in words why a
 * record does not load (what `taskfs show` prints). */
Test(store, a_failed_load_is_freeable_and_says_why) {
  char id[TFS_ID_MAX + 1], other[TFS_ID_MAX + 1], p[128], why[256];
  tfs_record_t rec;
  fx_create("x", NULL, id);
  fx_create("y", NULL, other);
  snprintf(p, sizeof p, "tasks/%s/record.json", id);
  const char *bad_ids[] = {"zzzzzzzz-zzzzzz", "../x", id};
  fx_write(p, "{\"v\": 1, \"id\": tru");
  for (size_t i = 0; i < 3; i++) {
    memset(&rec, 0xa5, sizeof rec); /* garbage, as an uninitialized local */
    cr_assert_lt(tfs_task_load(fx_store, bad_ids[i], &rec), 0);
    tfs_record_free(&rec);
  }
  cr_assert_eq(tfs_task_load_reason(fx_store, id, &rec, why, sizeof why), TFS_ECORRUPT);
  cr_assert(strstr(why, "record.json: line 1"), "%s", why);
  tfs_record_free(&rec);

  struct {
    const char *what, *want;
  } cases[] = {{"empty", "it is empty"},
               {"dir", "it is a directory"},
               {"fifo", "it is not a regular file"},
               {"other", "it is the record of another task"},
               {"symlink", "it is a symlink"}};
  char target[4096];
  snprintf(target, sizeof target, "%s", fx_path(p));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    unlink(target);
    rmdir(target);
    const char *w = cases[i].what;
    if (!strcmp(w, "empty"))
      fx_write(p, "");
    else if (!strcmp(w, "dir"))
      cr_assert_eq(mkdir(target, 0700), 0);
    else if (!strcmp(w, "fifo"))
      cr_assert_eq(mkfifo(target, 0600), 0);
    else if (!strcmp(w, "symlink"))
      cr_assert_eq(symlink("/etc/passwd", target), 0);
    else {
      char from[128], *text;
      size_t len;
      snprintf(from, sizeof from, "tasks/%s/record.json", other);
      cr_assert_not_null(text = tu_read_file(fx_path(from), &len));
      cr_assert_eq(tu_write_file(target, text, len), 0);
      free(text);
    }
    int err = tfs_task_load_reason(fx_store, id, &rec, why, sizeof why);
    cr_assert(err == TFS_ECORRUPT || err == TFS_ESYMLINK, "%s: %s", w, tfs_strerror(err));
    cr_assert(strstr(why, cases[i].want), "%s: '%s'", w, why);
    tfs_record_free(&rec);
  }
  cr_assert_eq(tfs_task_load_reason(fx_store, other, &rec, why, sizeof why), 0);
  cr_assert_str_eq(why, "", "a record that loads has no reason");
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_load_reason(fx_store, "zzzzzzzz-zzzzzz", &rec, NULL, 0), TFS_ENOTASK);
}

/* tfs_task_dirs lists only real task directories: what tfs_task_stat and
 * a lookup through the mount accept. */
Test(store, task_dirs_are_the_real_directories) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], path[4096];
  fx_create("x", NULL, a);
  fx_create("y", NULL, b);
  cr_assert_eq(symlink(fx_path("tasks"), fx_path("tasks/zzzzzzzz-symlnk")), 0);
  fx_write("tasks/zzzzzzzz-afile0", "x");
  char **ids;
  size_t n;
  cr_assert_eq(tfs_task_ids(fx_store, &ids, &n), 0);
  cr_assert_eq(n, 4, "every well-formed name");
  tfs_ids_free(ids, n);
  cr_assert_eq(tfs_task_dirs(fx_store, &ids, &n), 0);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(ids[0], a);
  cr_assert_str_eq(ids[1], b);
  cr_assert_null(ids[2]);
  tfs_ids_free(ids, n);
  struct stat st;
  cr_assert_eq(tfs_task_stat(fx_store, "zzzzzzzz-symlnk", &st), TFS_ENOTASK);
  cr_assert_eq(tfs_task_path(fx_store, a, path, sizeof path), 0);
  cr_assert_eq(stat(path, &st), 0);
  cr_assert(S_ISDIR(st.st_mode));
  cr_assert_eq(tfs_task_path(fx_store, "../etc", path, sizeof path), TFS_EBADID);
  cr_assert_eq(tfs_task_path(fx_store, a, path, 8), -ENAMETOOLONG);
}
