/* Limits in the core: the units (durations, sizes) every face reads, the
 * limits and their words for bad input, the hard-limit check, the
 * restart policy's on-timeout, the store's defaults (<state>/config) and
 * the words for a worker a limit ended. The end-to-end side (real
 * supervisors, real signals) is tests/test_limits_run.c. */
#include "tests/sup_fixture.h"

#include <sys/resource.h>
#include <sys/wait.h>

TestSuite(units);
TestSuite(limits);
TestSuite(config, .init = sx_setup, .fini = sx_teardown, .timeout = 60);

/* ---- units ----------------------------------------------------------------- */

static int64_t dur(const char *s) {
  int64_t ms = -7;
  return tfs_duration_parse(s, &ms) ? -1 : ms;
}

Test(units, durations) {
  cr_assert_eq(dur("500ms"), 500);
  cr_assert_eq(dur("10s"), 10000);
  cr_assert_eq(dur("5m"), 300000);
  cr_assert_eq(dur("1h"), 3600000);
  cr_assert_eq(dur("7d"), 7 * 86400000LL, "one syntax everywhere: days too");
  cr_assert_eq(dur("1.5d"), 129600000);
  cr_assert_eq(dur("2"), 2000, "a bare number is seconds");
  cr_assert(tfs_duration_has_unit("5d") && tfs_duration_has_unit("1.5s"));
  cr_assert(!tfs_duration_has_unit("5") && !tfs_duration_has_unit("0.5") &&
            !tfs_duration_has_unit("5x"));
  cr_assert_eq(dur("1.5s"), 1500);
  cr_assert_eq(dur("0.25m"), 15000);
  cr_assert_eq(dur("0.0001s"), 1, "a fraction of a millisecond rounds up");
  cr_assert_eq(dur("0"), 0);
  static const char *const bad[] = {
      "", "10x", "-1", "1.", "s", "1 s", "10S", "1e3", "1h30m", "99999999999999999999", NULL};
  for (int i = 0; bad[i]; i++)
    cr_assert_eq(dur(bad[i]), -1, "'%s' read as a duration", bad[i]);
  char b[TFS_DURATION_BUF];
  static const int64_t back[] = {500, 1000, 90000, 600000, 7200000, 1500, 0};
  for (int i = 0; i < 7; i++)
    cr_assert_eq(dur(tfs_duration_format(back[i], b)), back[i], "%s", b);
  cr_assert_str_eq(tfs_duration_format(600000, b), "10m");
  cr_assert_str_eq(tfs_duration_format(90000, b), "90s");
  cr_assert_str_eq(tfs_duration_format(1500, b), "1500ms");
}

Test(units, sizes) {
  int64_t v;
  static const struct {
    const char *s;
    int64_t v;
  } good[] = {{"4096", 4096},      {"1K", 1024},      {"1k", 1024},
              {"512M", 512 << 20}, {"2G", 2LL << 30}, {"1T", 1LL << 40},
              {"1KiB", 1024},      {"3mb", 3 << 20},  {"0", 0}};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    cr_assert_eq(tfs_size_parse(good[i].s, &v), 0, "%s", good[i].s);
    cr_assert_eq(v, good[i].v, "%s", good[i].s);
  }
  static const char *const bad[] = {"", "-1", "1.5G", "2X", "G", "1 G", "1GG", "9999999999T", NULL};
  for (int i = 0; bad[i]; i++)
    cr_assert_neq(tfs_size_parse(bad[i], &v), 0, "'%s' read as a size", bad[i]);
  char b[TFS_DURATION_BUF];
  cr_assert_str_eq(tfs_size_format(2LL << 30, b), "2G");
  cr_assert_str_eq(tfs_size_format(1536 << 20, b), "1536M");
  cr_assert_str_eq(tfs_size_format(100, b), "100");
}

/* ---- limits --------------------------------------------------------------- */

Test(limits, a_list_of_limits) {
  tfs_limits_t l;
  char why[512];
  tfs_limits_init(&l);
  cr_assert_eq(tfs_limits_parse("mem=2G,cpu=10m,nofile=4096,nproc=512,fsize=10G,core=0", &l, why,
                                sizeof why),
               0, "%s", why);
  cr_assert_eq(l.v[TFS_LIMIT_MEM].value, 2LL << 30);
  cr_assert_eq(l.v[TFS_LIMIT_CPU].value, 600, "cpu is kept in seconds (RLIMIT_CPU)");
  cr_assert_eq(l.v[TFS_LIMIT_NOFILE].value, 4096);
  cr_assert_eq(l.v[TFS_LIMIT_NPROC].value, 512);
  cr_assert_eq(l.v[TFS_LIMIT_FSIZE].value, 10LL << 30);
  cr_assert_eq(l.v[TFS_LIMIT_CORE].value, 0);
  for (int i = 0; i < TFS_LIMIT_COUNT; i++)
    cr_assert_eq(l.v[i].from, TFS_FROM_GIVEN);
  cr_assert_eq(tfs_limits_parse("cpu=1500ms,mem=none", &l, why, sizeof why), 0, "%s", why);
  cr_assert_eq(l.v[TFS_LIMIT_CPU].value, 2, "a fraction of a second rounds up");
  cr_assert_eq(l.v[TFS_LIMIT_MEM].value, TFS_LIMIT_NONE, "none lifts a limit");
  char sum[256];
  cr_assert_str_eq(tfs_limits_summary(&l, sum, sizeof sum),
                   "cpu=2s,nofile=4096,nproc=512,fsize=10G,core=0");
  tfs_limits_free(&l);
}

/* Each bad input gets words that say what was wrong and what is right. */
Test(limits, bad_limits_say_what_is_wrong) {
  static const struct {
    const char *spec, *words;
  } cases[] = {
      {"mem=-1", "mem=-1: the mem limit wants a size"},
      {"mem=0", "the mem limit wants a size"},
      {"cpu=0", "at least 1s"},
      {"cpu=10x", "the cpu limit wants a CPU time"},
      {"nofile=4k", "a whole number of open files"},
      {"nproc=0", "a whole number of processes"},
      {"fsize=1.5G", "the fsize limit wants a size"},
      {"bogus=1", "unknown limit 'bogus': the limits are mem, cpu, nofile, nproc, fsize, core"},
      {"mem", "'mem' is not NAME=VALUE"},
      {"", "no limit given"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tfs_limits_t l;
    char why[512] = "";
    tfs_limits_init(&l);
    cr_assert_eq(tfs_limits_parse(cases[i].spec, &l, why, sizeof why), TFS_ELIMIT, "%s",
                 cases[i].spec);
    cr_assert(strstr(why, cases[i].words), "%s: %s", cases[i].spec, why);
    tfs_limits_free(&l);
  }
  int64_t ms;
  char why[512];
  static const char *const bad[] = {"0", "-5", "10x", "", NULL};
  for (int i = 0; bad[i]; i++) {
    cr_assert_eq(tfs_timeout_parse(bad[i], &ms, why, sizeof why), TFS_ELIMIT, "%s", bad[i]);
    cr_assert(strstr(why, "a timeout is a duration above 0"), "%s", why);
  }
  cr_assert_eq(tfs_timeout_parse("none", &ms, why, sizeof why), 0);
  cr_assert_eq(ms, 0);
  cr_assert_eq(tfs_timeout_parse("10m", &ms, why, sizeof why), 0);
  cr_assert_eq(ms, 600000);
}

Test(limits, restart_on_timeout_beside_a_policy) {
  tfs_restart_t r;
  int t;
  cr_assert_eq(tfs_restart_parse_list("on-failure", &r, &t), 0);
  cr_assert(r == TFS_RESTART_ON_FAILURE && !t);
  cr_assert_eq(tfs_restart_parse_list("always,on-timeout", &r, &t), 0);
  cr_assert(r == TFS_RESTART_ALWAYS && t);
  cr_assert_eq(tfs_restart_parse_list("on-timeout", &r, &t), 0);
  cr_assert(r == TFS_RESTART_NO && t, "on-timeout alone restarts timed-out workers only");
  static const char *const bad[] = {"",  "sometimes", "no,always", ",on-timeout", "on-timeout,x",
                                    NULL};
  for (int i = 0; bad[i]; i++)
    cr_assert_eq(tfs_restart_parse_list(bad[i], &r, &t), TFS_EBADID, "%s", bad[i]);
}

/* A limit above the hard limit of the caller is refused, naming it: the
 * task would inherit that hard limit and could not raise it. */
Test(limits, a_limit_above_the_hard_limit_names_it) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    struct rlimit rl = {256, 512};
    if (setrlimit(RLIMIT_NOFILE, &rl))
      _exit(2);
    tfs_limits_t l;
    char why[1024] = "";
    tfs_limits_init(&l);
    tfs_limits_parse("nofile=1024", &l, why, sizeof why);
    int bad = tfs_limits_resolve(NULL, &l, why, sizeof why) == TFS_ELIMIT &&
              strstr(why, "the limit nofile=1024 is above the hard limit of this process, 512 "
                          "(RLIMIT_NOFILE)") &&
              strstr(why, "ask for at most 512");
    tfs_limits_parse("nofile=512", &l, why, sizeof why);
    int good = tfs_limits_resolve(NULL, &l, why, sizeof why) == 0;
    _exit(bad && good ? 0 : 1);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
}

/* The cgroup of a process, as /proc/PID/cgroup names it: the v2 line
 * ("0::PATH") and the v1 line with the memory controller. */
Test(limits, the_cgroup_of_a_process) {
  char *text = tu_read_file("/proc/self/cgroup", NULL), path[4096];
  cr_assert_not_null(text);
  char *v2 = strstr(text, "0::"), *mem = strstr(text, ":memory:");
  if (v2 && (v2 == text || v2[-1] == '\n')) {
    cr_assert_eq(tfs_cgroup_of(0, 1, path, sizeof path), 0);
    cr_assert(!strncmp(v2 + 3, path, strlen(path)) && v2[3 + strlen(path)] == '\n', "%s", path);
  } else {
    cr_assert_eq(tfs_cgroup_of(0, 1, path, sizeof path), -1);
  }
  if (mem) {
    cr_assert_eq(tfs_cgroup_of(getpid(), 0, path, sizeof path), 0);
    cr_assert(!strncmp(mem + 8, path, strlen(path)), "%s", path);
  }
  free(text);
}

/* ---- the words for an end a limit caused ----------------------------------- */

static const char *ended(int status, const tfs_limits_t *l, int64_t cpu_ms, int killed) {
  static char buf[1024];
  return tfs_exit_describe_limits(status, NULL, NULL, l, cpu_ms, killed, buf, sizeof buf);
}

Test(limits, an_end_names_the_limit_that_caused_it) {
  tfs_limits_t l;
  char why[256];
  tfs_limits_init(&l);
  cr_assert_eq(tfs_limits_parse("cpu=10m,fsize=1K,mem=64M", &l, why, sizeof why), 0);
  for (int i = 0; i < TFS_LIMIT_COUNT; i++)
    l.v[i].via = TFS_VIA_RLIMIT;
  cr_assert_str_eq(ended(W_EXITCODE(0, SIGXCPU), &l, 0, 0),
                   "killed by signal SIGXCPU (CPU time limit exceeded); the task's limit cpu=10m "
                   "(RLIMIT_CPU, the CPU time of each process) was reached");
  cr_assert(strstr(ended(W_EXITCODE(128 + SIGXCPU, 0), &l, 0, 0),
                   "exited with code 152 (128 + SIGXCPU: a process it ran ended: CPU time limit "
                   "exceeded); the task's limit cpu=10m"));
  /* Past the hard limit (one second above) the kernel sends SIGKILL. */
  cr_assert(strstr(ended(W_EXITCODE(0, SIGKILL), &l, 601000, 0),
                   "the task's limit cpu=10m (RLIMIT_CPU) was reached: the kernel kills"));
  cr_assert_str_eq(ended(W_EXITCODE(0, SIGXFSZ), &l, 0, 0),
                   "killed by signal SIGXFSZ (file size limit exceeded); the task's limit "
                   "fsize=1K (RLIMIT_FSIZE, the size of a file it writes) was reached");
  cr_assert(strstr(ended(W_EXITCODE(1, 0), &l, 0, 0),
                   "exited with code 1; it ran under the task's limit mem=64M (RLIMIT_DATA"));
  cr_assert_str_eq(ended(W_EXITCODE(0, 0), &l, 0, 0), "exited with code 0");
  /* The supervisor's own SIGKILL (a stop, a timeout) is just that. */
  cr_assert_str_eq(ended(W_EXITCODE(0, SIGKILL), &l, 0, 1), "killed by signal SIGKILL");
  /* A limit the supervisor did not apply says nothing. */
  l.v[TFS_LIMIT_CPU].via = TFS_VIA_NONE;
  cr_assert_str_eq(ended(W_EXITCODE(0, SIGXCPU), &l, 0, 0),
                   "killed by signal SIGXCPU (CPU time limit exceeded)");
  tfs_limits_free(&l);
}

/* ---- the store's defaults ---------------------------------------------------- */

static char *config_text(void) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config", sx_state);
  return tu_read_file(path, NULL);
}

Test(config, set_get_unset_and_list_keep_the_other_lines) {
  char why[1024], *v = NULL, path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config", sx_state);
  const char *hand = "# our defaults\ntimeout = 30m\n\n# memory\nlimit.mem = 4G\n";
  cr_assert_eq(tu_write_file(path, hand, strlen(hand)), 0);
  cr_assert_eq(tfs_config_set(sx_store, "timeout", "20m", why, sizeof why), 0, "%s", why);
  cr_assert_eq(tfs_config_set(sx_store, "limit.cpu", "1h", why, sizeof why), 0, "%s", why);
  cr_assert_eq(tfs_config_set(sx_store, "queue.gpu.timeout", "2h", why, sizeof why), 0, "%s", why);
  char *text = config_text();
  cr_assert_str_eq(text, "# our defaults\ntimeout = 20m\n\n# memory\nlimit.mem = 4G\n"
                         "limit.cpu = 1h\nqueue.gpu.timeout = 2h\n");
  free(text);
  cr_assert_eq(tfs_config_get(sx_store, "timeout", &v, why, sizeof why), 0);
  cr_assert_str_eq(v, "20m");
  free(v);
  cr_assert_eq(tfs_config_get(sx_store, "limit.nofile", &v, why, sizeof why), 0);
  cr_assert_null(v, "a key not set reads as NULL");
  cr_assert_eq(tfs_config_set(sx_store, "limit.mem", NULL, why, sizeof why), 0);
  char **keys, **values;
  cr_assert_eq(tfs_config_list(sx_store, &keys, &values, why, sizeof why), 0);
  cr_assert(keys[0] && !strcmp(keys[0], "timeout") && !strcmp(keys[1], "limit.cpu") &&
            !strcmp(keys[2], "queue.gpu.timeout") && !keys[3]);
  cr_assert_str_eq(values[1], "1h");
  tfs_strv_free(keys);
  tfs_strv_free(values);
  /* Bad keys and values change nothing, and say why. */
  text = config_text();
  cr_assert_eq(tfs_config_set(sx_store, "limits.mem", "1G", why, sizeof why), TFS_ECONFIG);
  cr_assert(strstr(why, "unknown key 'limits.mem': the keys are timeout, limit.mem"), "%s", why);
  cr_assert_eq(tfs_config_set(sx_store, "timeout", "0", why, sizeof why), TFS_ECONFIG);
  cr_assert(strstr(why, "a timeout is a duration above 0"), "%s", why);
  cr_assert_eq(tfs_config_set(sx_store, "queue..timeout", "1m", why, sizeof why), TFS_ECONFIG);
  char *after = config_text();
  cr_assert_str_eq(after, text);
  free(text);
  free(after);
}

Test(config, a_bad_line_is_named) {
  char path[PATH_MAX], why[1024], *v;
  snprintf(path, sizeof path, "%s/config", sx_state);
  const char *hand = "timeout = 5m\nlimit.mem = lots\n";
  cr_assert_eq(tu_write_file(path, hand, strlen(hand)), 0);
  cr_assert_eq(tfs_config_get(sx_store, "timeout", &v, why, sizeof why), TFS_ECONFIG);
  cr_assert(strstr(why, "/config, line 2: limit.mem = lots: the mem limit wants a size"), "%s",
            why);
  /* A task cannot start under defaults that do not read: it says why. */
  char id[TFS_ID_MAX + 1], *argv[] = {"true", NULL};
  tfs_task_spec_t spec = sx_spec(argv, NULL);
  spec.why = why;
  spec.whylen = sizeof why;
  cr_assert_eq(tfs_task_create(sx_store, &spec, id, NULL), TFS_ECONFIG);
  cr_assert(strstr(why, "line 2"), "%s", why);
  cr_assert_eq(tfs_task_count(sx_store), 0, "nothing was made");
}

/* A task gets the defaults for what its command did not give, and its
 * record says which applied. */
Test(config, defaults_apply_and_the_record_says_which) {
  char why[1024], id[TFS_ID_MAX + 1], *argv[] = {"true", NULL};
  cr_assert_eq(tfs_config_set(sx_store, "timeout", "10m", why, sizeof why), 0);
  cr_assert_eq(tfs_config_set(sx_store, "limit.cpu", "1h", why, sizeof why), 0);
  cr_assert_eq(tfs_config_set(sx_store, "limit.nofile", "1000", why, sizeof why), 0);
  tfs_limits_t given;
  tfs_limits_init(&given);
  cr_assert_eq(tfs_limits_parse("nofile=none,mem=1G", &given, why, sizeof why), 0);
  tfs_task_spec_t spec = sx_spec(argv, NULL);
  spec.limits = &given;
  sx_create(id, argv, &spec);
  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.limits.timeout_ms, 600000);
  cr_assert_eq(rec.limits.timeout_from, TFS_FROM_CONFIG);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_CPU].value, 3600);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_CPU].from, TFS_FROM_CONFIG);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_NOFILE].value, TFS_LIMIT_NONE, "none over a default");
  cr_assert_eq(rec.limits.v[TFS_LIMIT_NOFILE].from, TFS_FROM_GIVEN);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_MEM].from, TFS_FROM_GIVEN);
  cr_assert_eq(rec.limits.v[TFS_LIMIT_FSIZE].from, TFS_FROM_NONE);
  char *json = tfs_record_dump(&rec);
  cr_assert(strstr(json, "\"timeout\": {\n      \"ms\": 600000,\n      \"from\": \"config\""), "%s",
            json);
  cr_assert(strstr(json, "\"nofile\": {\n      \"value\": null,\n      \"from\": \"given\""), "%s",
            json);
  cr_assert_null(strstr(json, "\"fsize\""), "a limit nobody asked for is not listed");
  free(json);
  tfs_record_free(&rec);
  tfs_limits_free(&given);
  /* Without a default or a timeout given: from none. */
  cr_assert_eq(tfs_config_set(sx_store, "timeout", NULL, why, sizeof why), 0);
  sx_create(id, argv, NULL);
  rec = sx_load(id);
  cr_assert_eq(rec.limits.timeout_ms, 0);
  cr_assert_eq(rec.limits.timeout_from, TFS_FROM_NONE);
  tfs_record_free(&rec);
}

/* A store default above the hard limit is refused as the default it is. */
Test(config, a_default_above_the_hard_limit_says_so) {
  char why[1024];
  cr_assert_eq(tfs_config_set(sx_store, "limit.nofile", "100000", why, sizeof why), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    struct rlimit rl = {256, 512};
    char id[TFS_ID_MAX + 1], *argv[] = {"true", NULL};
    tfs_task_spec_t spec = sx_spec(argv, NULL);
    spec.why = why;
    spec.whylen = sizeof why;
    _exit(setrlimit(RLIMIT_NOFILE, &rl) == 0 &&
                  tfs_task_create(sx_store, &spec, id, NULL) == TFS_ELIMIT &&
                  strstr(why, "the store's default limit.nofile=100000 is above the hard limit "
                              "of this process, 512")
              ? 0
              : 1);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
}

/* The record keeps limits, use and exits across a save and a load. */
Test(config, the_record_keeps_limits_and_use) {
  char id[TFS_ID_MAX + 1], *argv[] = {"true", NULL};
  sx_create(id, argv, NULL);
  tfs_record_t rec = sx_load(id);
  rec.limits.v[TFS_LIMIT_MEM] = (tfs_limit_val_t){64 << 20, TFS_FROM_GIVEN, TFS_VIA_RLIMIT,
                                                  strdup("no memory cgroup: none here")};
  rec.limits.cgroup = NULL;
  rec.restart_on_timeout = 1;
  rec.usage = (tfs_usage_t){1200, 300, 20480, 4096, 30000};
  rec.queued_ms = 40;
  rec.nexits = 1;
  rec.exits[0] = (tfs_exit_t){.started_ms = 1000,
                              .ended_ms = 2000,
                              .exit_code = -1,
                              .signal = SIGKILL,
                              .timed_out = 1,
                              .use = {1200, 300, 20480, 4096, -1}};
  cr_assert_eq(tfs_task_save(sx_store, &rec), 0);
  tfs_record_t back = sx_load(id);
  cr_assert_eq(back.limits.v[TFS_LIMIT_MEM].value, 64 << 20);
  cr_assert_eq(back.limits.v[TFS_LIMIT_MEM].via, TFS_VIA_RLIMIT);
  cr_assert_str_eq(back.limits.v[TFS_LIMIT_MEM].note, "no memory cgroup: none here");
  cr_assert(back.restart_on_timeout);
  cr_assert_eq(back.usage.user_ms, 1200);
  cr_assert_eq(back.usage.sys_ms, 300);
  cr_assert_eq(back.usage.maxrss_kb, 20480);
  cr_assert_eq(back.usage.output_bytes, 4096);
  cr_assert_eq(back.usage.tree_peak_kb, 30000);
  cr_assert_eq(back.queued_ms, 40);
  cr_assert(back.exits[0].timed_out);
  cr_assert_eq(back.exits[0].use.user_ms, 1200);
  char *a = tfs_record_dump(&rec), *b = tfs_record_dump(&back);
  cr_assert_str_eq(a, b);
  free(a);
  free(b);
  tfs_record_free(&rec);
  tfs_record_free(&back);
}
