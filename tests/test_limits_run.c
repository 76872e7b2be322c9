/* Limits end to end: `taskfs run --timeout / --limit` through the shipped
 * binary, real supervisors, real signals, real memory pressure. A timeout
 * with a worker that ignores SIGTERM, the policy around it, a memory
 * limit with a worker that allocates past it, CPU and file size limits, a
 * grandchild's CPU time in the total, what the worker's limits are and
 * that it cannot raise them, bad input, the store's defaults, and the
 * fields in `taskfs show` and `taskfs ls --columns`. */
#include "tests/sup_fixture.h"

#include <jansson.h>

TestSuite(limits_run, .init = sx_setup, .fini = sx_teardown, .timeout = 90);

/* `taskfs run --wait ARGS` in the test directory: its exit code, the id
 * it printed, the record once ended. */
static int run_wait(char id[TFS_ID_MAX + 1], tfs_record_t *rec, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int run_wait(char id[TFS_ID_MAX + 1], tfs_record_t *rec, const char *fmt, ...) {
  va_list ap;
  char *args, *out = NULL, *err = NULL;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&args, fmt, ap), 0);
  va_end(ap);
  int rc = sx_taskfs(&out, &err, "run --wait --state-dir '%s' %s", sx_state, args);
  sx_first_id(out, id);
  *rec = sx_wait(id, 60000);
  free(args);
  free(out);
  free(err);
  return rc;
}

/* The record as `taskfs show` prints it, parsed. */
static json_t *show(const char *id) {
  char *out = NULL;
  cr_assert_eq(sx_taskfs(&out, NULL, "show --state-dir '%s' %s", sx_state, id), 0);
  json_error_t e;
  json_t *j = json_loads(out, 0, &e);
  cr_assert_not_null(j, "show is not JSON (%s): %s", e.text, out);
  free(out);
  return j;
}

static json_int_t jint(json_t *j, const char *path) {
  char buf[256], *save = NULL;
  snprintf(buf, sizeof buf, "%s", path);
  for (char *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
    j = isdigit((unsigned char)k[0]) ? json_array_get(j, (size_t)atoi(k)) : json_object_get(j, k);
  cr_assert(json_is_integer(j), "%s is not an integer", path);
  return json_integer_value(j);
}

Test(limits_run, a_timeout_stops_a_worker_that_ignores_sigterm) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  int rc = run_wait(id, &rec,
                    "--timeout 1s --grace 300ms -- sh -c 'trap \"\" TERM; echo up; "
                    "while :; do sleep 1; done; : 300.401'");
  cr_assert_eq(rc, 124, "taskfs run --wait exits 124, as timeout(1) does (got %d)", rc);
  cr_assert_eq(rec.state, TFS_FAILED);
  cr_assert_eq(rec.exit_code, 124);
  cr_assert_eq(rec.signal, 0);
  cr_assert_str_eq(rec.reason, "timed out after 1s; the worker was killed by signal SIGKILL "
                               "after the grace period ran out");
  cr_assert_eq(rec.nexits, 1);
  cr_assert(rec.exits[0].timed_out && !rec.exits[0].requested);
  cr_assert_eq(rec.exits[0].signal, SIGKILL, "the worker's own end stays in its exit");
  cr_assert_eq(rec.limits.timeout_ms, 1000);
  cr_assert_eq(rec.limits.timeout_from, TFS_FROM_GIVEN);
  cr_assert_eq(sx_procs_with("300.401"), 0, "the tree is gone");
  cr_assert_eq(sx_taskfs(NULL, NULL, "wait --state-dir '%s' %s", sx_state, id), 124);
  tfs_record_free(&rec);
}

/* A restart policy does not restart a timed-out worker; on-timeout does. */
Test(limits_run, a_timed_out_worker_is_restarted_only_when_asked) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  int rc = run_wait(id, &rec, "--restart always --timeout 500ms --grace 100ms -- sleep 300.402");
  cr_assert_eq(rc, 124);
  cr_assert_eq(rec.restarts, 0, "always does not restart a timed-out worker");
  cr_assert(strstr(rec.reason, "timed out after 500ms; the worker was killed by signal SIGTERM"),
            "%s", rec.reason);
  tfs_record_free(&rec);
  /* The first run hangs, the second finishes. */
  rc = run_wait(id, &rec,
                "--restart on-timeout --timeout 1s --grace 100ms -- sh -c 'if [ -e once ]; then "
                "echo second; exit 0; fi; touch once; sleep 300.403'");
  cr_assert_eq(rc, 0, "%s", rec.reason);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  cr_assert(rec.restart_on_timeout);
  /* One restart, or more should a slow machine time out the first run
   * before it made its mark: the last run finished, the one before it
   * timed out. */
  cr_assert_geq(rec.restarts, 1);
  cr_assert(rec.nexits >= 2 && rec.exits[rec.nexits - 2].timed_out &&
            !rec.exits[rec.nexits - 1].timed_out);
  tfs_record_free(&rec);
}

/* A worker that allocates past its memory limit ends with a reason that
 * names the limit, whichever mechanism applied (the record says which). */
Test(limits_run, a_memory_limit_ends_a_worker_that_allocates_past_it) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  int rc =
      run_wait(id, &rec, "--limit mem=64M -- perl -e '$x = \"x\" x (300 * 1024 * 1024); print 1'");
  cr_assert_neq(rc, 0);
  cr_assert_eq(rec.state, TFS_FAILED);
  tfs_limit_val_t *m = &rec.limits.v[TFS_LIMIT_MEM];
  cr_assert_eq(m->value, 64 << 20);
  cr_assert(strstr(rec.reason, "mem=64M"), "the reason names the limit: %s", rec.reason);
  if (m->via == TFS_VIA_CGROUP) {
    cr_assert_not_null(rec.limits.cgroup);
    cr_assert(strstr(rec.reason, "out of memory (the kernel's OOM killer ended it when its cgroup"),
              "%s", rec.reason);
    cr_assert(access(rec.limits.cgroup, F_OK) < 0, "the task's cgroup %s is removed",
              rec.limits.cgroup);
    cr_assert_geq(rec.usage.tree_peak_kb, 32 << 10, "the tree's peak is known");
  } else {
    cr_assert_eq(m->via, TFS_VIA_RLIMIT);
    cr_assert_not_null(m->note, "the record says why no cgroup was used");
    cr_assert(strstr(rec.reason, "RLIMIT_DATA"), "%s", rec.reason);
  }
  tfs_record_free(&rec);
}

/* A limit so small that the worker is killed as it starts (its argv
 * alone is past it) is the memory cgroup's OOM kill, and says so; the
 * cgroup's events are read before the worker enters it. A limit below
 * what a shell needs is refused, by run and by config alike. */
Test(limits_run, an_oom_kill_as_the_worker_starts_is_told_and_tiny_limits_are_refused) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  /* Ten arguments of 100 KB each, made by the shell. */
  int rc = run_wait(id, &rec,
                    "--limit mem=1M -- true $(a=$(head -c 100000 /dev/zero | tr '\\0' a); "
                    "for i in 1 2 3 4 5 6 7 8 9 10; do printf '%%s ' \"$a\"; done)");
  cr_assert_neq(rc, 0);
  if (rec.limits.v[TFS_LIMIT_MEM].via == TFS_VIA_CGROUP)
    cr_assert(strstr(rec.reason, "out of memory (the kernel's OOM killer ended it"), "%s",
              rec.reason);
  tfs_record_free(&rec);
  char *err = NULL;
  cr_assert_eq(sx_taskfs(NULL, &err, "config --state-dir '%s' set limit.mem 1", sx_state), 100);
  cr_assert(err && strstr(err, "below 1M"), "%s", err);
  free(err);
}

/* As a user who may make no cgroup, mem is RLIMIT_DATA on each process,
 * and the record says why. Also: that user's worker cannot raise a hard
 * limit, and may raise a soft one up to it (cpu: soft + 1 s). */
Test(limits_run, without_a_cgroup_mem_is_rlimit_data_and_hard_limits_hold) {
  if (getuid() != 0 || access("/usr/bin/setpriv", X_OK))
    cr_skip_test("needs root and setpriv to run as another user");
  char store[PATH_MAX], id[TFS_ID_MAX + 1];
  snprintf(store, sizeof store, "%s/nobody", sx_tmp);
  cr_assert_eq(mkdir(store, 0700), 0);
  cr_assert_eq(chown(store, 65534, 65534), 0);
  chmod(sx_tmp, 0755);
  char *out = NULL;
  int rc = tu_sh(&out,
                 "cd / && /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups '%s' run "
                 "--wait --state-dir '%s' --limit mem=64M,nofile=64,cpu=5 -- sh -c 'ulimit -S -t 6 "
                 "&& echo soft-raised; ulimit -H -n 65 2>/dev/null && echo hard-raised; perl -e "
                 "\"\\$x = q(x) x (300 * 1024 * 1024)\"' 2>/dev/null",
                 tu_taskfs_bin(), store);
  chmod(sx_tmp, 0700);
  sx_first_id(out, id);
  free(out);
  tfs_store_t *st;
  char why[256];
  cr_assert_eq(tfs_store_open_flags(store, TFS_STORE_FOREIGN, &st, why, sizeof why), 0, "%s", why);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_wait_end(st, id, 60000, NULL, &rec), 0);
  cr_assert_neq(rc, 0);
  tfs_limit_val_t *m = &rec.limits.v[TFS_LIMIT_MEM];
  cr_assert_eq(m->via, TFS_VIA_RLIMIT);
  cr_assert(m->note && strstr(m->note, "no memory cgroup"), "%s", m->note ? m->note : "(none)");
  cr_assert(strstr(rec.reason, "it ran under the task's limit mem=64M (RLIMIT_DATA"), "%s",
            rec.reason);
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/tasks/%s/transcript", store, id);
  char *tx = tu_read_file(path, NULL);
  cr_assert(tx && strstr(tx, "soft-raised") && !strstr(tx, "hard-raised"), "%s", tx);
  free(tx);
  tfs_record_free(&rec);
  tfs_store_close(st);
}

Test(limits_run, a_cpu_limit_ends_a_busy_worker) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  int rc = run_wait(id, &rec, "--limit cpu=1 -- sh -c 'while :; do :; done'");
  cr_assert_eq(rc, 128 + SIGXCPU);
  cr_assert_eq(rec.signal, SIGXCPU);
  cr_assert_str_eq(rec.reason, "killed by signal SIGXCPU (CPU time limit exceeded); the task's "
                               "limit cpu=1s (RLIMIT_CPU, the CPU time of each process) was "
                               "reached");
  /* RLIMIT_CPU counts the precise runtime; rusage's user/system split is
   * sampled from ticks and under load reads as little as ~0.8 s for it. */
  cr_assert_geq(rec.usage.user_ms + rec.usage.sys_ms, 500, "it used about its second");
  tfs_record_free(&rec);
  /* One that ignores SIGXCPU is killed at the hard limit, a second on. */
  rc = run_wait(id, &rec, "--limit cpu=1 -- perl -e '$SIG{XCPU} = \"IGNORE\"; 1 while 1'");
  cr_assert_eq(rec.signal, SIGKILL, "%s", rec.reason);
  cr_assert(strstr(rec.reason, "the task's limit cpu=1s (RLIMIT_CPU) was reached: the kernel "
                               "kills a process one second past it"),
            "%s", rec.reason);
  tfs_record_free(&rec);
}

Test(limits_run, a_file_size_limit_names_itself) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  int rc = run_wait(id, &rec, "--limit fsize=1K -- sh -c 'head -c 8192 /dev/zero > big'");
  cr_assert_eq(rc, 128 + SIGXFSZ, "the shell reports its command's SIGXFSZ (got %d)", rc);
  cr_assert(strstr(rec.reason, "SIGXFSZ") &&
                strstr(rec.reason, "the task's limit fsize=1K (RLIMIT_FSIZE"),
            "%s", rec.reason);
  tfs_record_free(&rec);
}

/* A grandchild orphaned to the supervisor burns half a second of CPU by
 * its own clock; the worker only waits: the run and the task count it. */
Test(limits_run, a_grandchilds_cpu_time_counts) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  int rc = run_wait(id, &rec,
                    "-- sh -c '( (perl -e \"1 while (times)[0] < 0.5\"; touch burnt) & ); "
                    "while [ ! -e burnt ]; do sleep 0.05; done'");
  cr_assert_eq(rc, 0, "%s", rec.reason);
  cr_assert_geq(rec.usage.user_ms, 500, "the grandchild's 0.5 s: %lld ms",
                (long long)rec.usage.user_ms);
  cr_assert_geq(rec.exits[0].use.user_ms, 500);
  cr_assert_gt(rec.usage.maxrss_kb, 0);
  json_t *j = show(id);
  cr_assert_geq(jint(j, "usage.cpuUserMs"), 500);
  cr_assert_geq(jint(j, "restart.exits.0.cpuUserMs"), 500);
  cr_assert_gt(jint(j, "usage.maxRssKb"), 0);
  cr_assert_geq(jint(j, "usage.queuedMs"), 0);
  json_decref(j);
  /* ls --columns shows it: CPU at least 0.50s. */
  char *out = NULL;
  cr_assert_eq(
      sx_taskfs(&out, NULL, "ls --state-dir '%s' --columns id,cpu,maxrss,output", sx_state), 0);
  cr_assert(!strncmp(out, "ID ", 3) && strstr(out, "CPU MAXRSS OUTPUT\n"), "%s", out);
  char *row = strstr(out, id);
  cr_assert_not_null(row, "%s", out);
  double cpu = 0;
  cr_assert_eq(sscanf(row + strlen(id), " %lfs", &cpu), 1, "%s", row);
  cr_assert_geq(cpu, 0.5, "%s", row);
  free(out);
  tfs_record_free(&rec);
}

/* What the worker runs under: soft and hard, the cpu hard limit a second
 * above; the record says how each applied. */
Test(limits_run, the_worker_runs_under_its_limits) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  int rc = run_wait(
      id, &rec, "--limit cpu=10m,nofile=4096,nproc=512,fsize=10G,core=0 -- cat /proc/self/limits");
  cr_assert_eq(rc, 0, "%s", rec.reason);
  char *tx = sx_task_file(id, "transcript", NULL);
  static const char *const rows[] = {
      "Max cpu time              600                  601                  seconds",
      "Max file size             10737418240          10737418240          bytes",
      "Max core file size        0                    0                    bytes",
      "Max processes             512                  512                  processes",
      "Max open files            4096                 4096                 files",
      NULL};
  for (int i = 0; rows[i]; i++)
    cr_assert(strstr(tx, rows[i]), "missing '%s' in\n%s", rows[i], tx);
  free(tx);
  for (int i = TFS_LIMIT_CPU; i < TFS_LIMIT_COUNT; i++)
    cr_assert_eq(rec.limits.v[i].via, TFS_VIA_RLIMIT, "%s", tfs_limit_name((tfs_limit_t)i));
  json_t *j = show(id);
  cr_assert_str_eq(json_string_value(json_object_get(
                       json_object_get(json_object_get(j, "limits"), "nofile"), "via")),
                   "RLIMIT_NOFILE");
  json_decref(j);
  char *out = NULL;
  cr_assert_eq(sx_taskfs(&out, NULL, "ls --state-dir '%s' --columns limits,timeout", sx_state), 0);
  cr_assert(strstr(out, "cpu=10m,nofile=4096,nproc=512,fsize=10G,core=0       -"), "%s", out);
  free(out);
  tfs_record_free(&rec);
}

/* Bad input is a usage error with words, and makes no task. */
Test(limits_run, bad_limits_are_refused_before_a_task_exists) {
  static const struct {
    const char *args, *words;
  } cases[] = {
      {"--timeout 0", "a timeout is a duration above 0"},
      {"--timeout -5", "a timeout is a duration above 0"},
      {"--timeout 10x", "timeout '10x'"},
      {"--limit mem=-1", "mem=-1: the mem limit wants a size"},
      {"--limit mem=64K", "mem=64K: below 1M, less than a shell needs to start"},
      {"--limit mem=1", "mem=1: below 1M"},
      {"--limit swap=1G", "unknown limit 'swap'"},
      {"--restart sometimes", "--restart is no, on-failure or always"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *err = NULL;
    int rc = sx_taskfs(NULL, &err, "run --state-dir '%s' %s -- true", sx_state, cases[i].args);
    cr_assert_eq(rc, 100, "%s: %d", cases[i].args, rc);
    cr_assert(err && strstr(err, cases[i].words), "%s: %s", cases[i].args, err);
    free(err);
  }
  /* Above the caller's hard limit (prlimit lowers it for the launcher). */
  char errpath[PATH_MAX];
  snprintf(errpath, sizeof errpath, "%s/prlimit.err", sx_tmp);
  int rc = tu_sh(NULL,
                 "prlimit --nofile=1024:2048 '%s' run --state-dir '%s' --limit nofile=4096 "
                 "-- true 2>'%s'",
                 tu_taskfs_bin(), sx_state, errpath);
  char *err = tu_read_file(errpath, NULL);
  cr_assert_eq(rc, 100, "%d: %s", rc, err);
  cr_assert(err && strstr(err, "the limit nofile=4096 is above the hard limit of this process, "
                               "2048 (RLIMIT_NOFILE)"),
            "%s", err);
  free(err);
  cr_assert_eq(tfs_task_count(sx_store), 0, "no task was made");
}

/* The store's defaults reach a run that gives none, through the CLI. */
Test(limits_run, the_stores_defaults_apply) {
  cr_assert_eq(sx_taskfs(NULL, NULL, "config --state-dir '%s' set timeout 700ms", sx_state), 0);
  cr_assert_eq(sx_taskfs(NULL, NULL, "config --state-dir '%s' set limit.core 0", sx_state), 0);
  char *out = NULL;
  cr_assert_eq(sx_taskfs(&out, NULL, "config --state-dir '%s' ls", sx_state), 0);
  cr_assert_str_eq(out, "timeout = 700ms\nlimit.core = 0\n");
  free(out);
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  int rc = run_wait(id, &rec, "--grace 100ms -- sleep 300.404");
  cr_assert_eq(rc, 124, "the default timeout stopped it");
  cr_assert_eq(rec.limits.timeout_from, TFS_FROM_CONFIG);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_CORE].from, TFS_FROM_CONFIG);
  cr_assert_str_eq(rec.reason, "timed out after 700ms; the worker was killed by signal SIGTERM "
                               "(terminated)");
  tfs_record_free(&rec);
  rc = run_wait(id, &rec, "--timeout none -- true");
  cr_assert_eq(rc, 0);
  cr_assert(rec.limits.timeout_ms == 0 && rec.limits.timeout_from == TFS_FROM_GIVEN);
  tfs_record_free(&rec);
  cr_assert_eq(sx_taskfs(NULL, NULL, "config --state-dir '%s' get limit.mem", sx_state), 1);
  cr_assert_eq(sx_taskfs(NULL, NULL, "config --state-dir '%s' set limit.swap 1G", sx_state), 100);
}
