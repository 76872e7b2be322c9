/* Shared fixture of the supervisor tests (test_supervisor.c, test_run.c): a
 * fresh store per test, and a teardown that leaves no process behind even
 * when a test fails: live tasks get a stop request, then any process still
 * working in the test's directory (workers run with cwd = the temporary
 * directory) or supervising its store is killed. */
#ifndef TASKFS_TESTS_SUP_FIXTURE_H
#define TASKFS_TESTS_SUP_FIXTURE_H

#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "taskfs/supervise.h"
#include "taskfs/taskfs.h"
#include "tests/helpers/testutil.h"

#define SX_UNUSED __attribute__((unused))

static char *sx_tmp;   /* per-test directory; workers run here */
static char *sx_state; /* <tmp>/state */
static tfs_store_t *sx_store;

/* Reads /proc/<pid>/cmdline with NULs turned into spaces. */
static SX_UNUSED int sx_cmdline(const char *pid, char *buf, size_t len) {
  char path[300]; /* room for any d_name */
  snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n < 0)
    return -1;
  for (ssize_t i = 0; i < n; i++)
    if (!buf[i])
      buf[i] = ' ';
  buf[n] = 0;
  return 0;
}

/* Calls fn for every process (not this one); stops when fn returns 1. */
static SX_UNUSED int sx_each_proc(int (*fn)(pid_t pid, const char *name, void *arg), void *arg) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int count = 0;
  if (!d)
    return 0;
  while ((e = readdir(d))) {
    if (!isdigit((unsigned char)e->d_name[0]))
      continue;
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid == getpid())
      continue;
    count += fn(pid, e->d_name, arg);
  }
  closedir(d);
  return count;
}

/* 1 if the process is a zombie (dead, only not reaped yet). */
static SX_UNUSED int sx_zombie(const char *name) {
  char path[300], buf[512];
  snprintf(path, sizeof path, "/proc/%s/stat", name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 1;
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && p[2] == 'Z';
}

/* 1 if the process runs in this test's directory (workers do), so that
 * another checkout running the same tests at the same time is not
 * counted. */
static SX_UNUSED int in_test_dir(const char *name) {
  char path[300], cwd[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%s/cwd", name);
  ssize_t n = readlink(path, cwd, sizeof cwd - 1);
  if (n <= 0)
    return 0;
  cwd[n] = 0;
  return !strncmp(cwd, sx_tmp, strlen(sx_tmp));
}

static int count_cmd(pid_t pid, const char *name, void *arg) {
  char buf[4096];
  if (sx_cmdline(name, buf, sizeof buf) || sx_zombie(name) || !in_test_dir(name))
    return 0;
  return strstr(buf, (const char *)arg) != NULL;
}

/* Number of live processes of this test whose command line contains
 * needle. */
static SX_UNUSED int sx_procs_with(const char *needle) {
  return sx_each_proc(count_cmd, (void *)needle);
}

/* Kills every process whose command line contains arg: used with the
 * test's store path, which only its supervisors name (they run in /). */
static int kill_cmd(pid_t pid, const char *name, void *arg) {
  char buf[4096];
  if (sx_cmdline(name, buf, sizeof buf) == 0 && strstr(buf, (const char *)arg))
    kill(pid, SIGKILL);
  return 0;
}

/* The same for this test's processes only (a marker like "sleep 300.125"
 * may run in another checkout's test too). */
static int kill_cmd_here(pid_t pid, const char *name, void *arg) {
  return in_test_dir(name) ? kill_cmd(pid, name, arg) : 0;
}

static SX_UNUSED void sx_kill_procs_with(const char *needle) {
  sx_each_proc(kill_cmd_here, (void *)needle);
}

static int none_alive(void *arg) {
  char **ids = NULL;
  size_t n = 0;
  int alive = 0;
  if (tfs_task_ids(sx_store, &ids, &n) < 0)
    return 1;
  for (size_t i = 0; i < n; i++)
    alive += tfs_task_alive(sx_store, ids[i]) == 1;
  tfs_ids_free(ids, n);
  return alive == 0;
}

static void sx_setup(void) {
  sx_tmp = tu_tmpdir("sup");
  if (asprintf(&sx_state, "%s/state", sx_tmp) < 0)
    abort();
  int err = tfs_store_open(sx_state, &sx_store);
  cr_assert_eq(err, 0, "tfs_store_open: %s", tfs_strerror(err));
}

static void sx_teardown(void) {
  char **ids = NULL;
  size_t n = 0;
  if (sx_store && tfs_task_ids(sx_store, &ids, &n) == 0) {
    for (size_t i = 0; i < n; i++)
      if (tfs_task_alive(sx_store, ids[i]) == 1)
        tfs_cancel_request(sx_store, ids[i], "test teardown");
    tfs_ids_free(ids, n);
    tu_wait_until(none_alive, NULL, 10000);
  }
  /* A test may have mounted a small file system here. */
  tu_sh(NULL, "umount -l '%s/small' 2>/dev/null", sx_tmp);
  if (sx_store)
    tfs_store_close(sx_store);
  sx_store = NULL;
  /* Whatever is left: supervisors of this store, their tasks, workers in
   * this dir. */
  tu_cleanup_dir(sx_tmp);
  free(sx_tmp);
  free(sx_state);
}

/* base (defaults if NULL) running argv, in the test directory unless base
 * names another. */
static tfs_task_spec_t sx_spec(char *const argv[], const tfs_task_spec_t *base) {
  tfs_task_spec_t spec = {
      .restart = TFS_RESTART_NO, .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  if (base)
    spec = *base;
  spec.argv = argv;
  if (!spec.cwd)
    spec.cwd = sx_tmp;
  return spec;
}

/* Creates a queued task running argv in the test directory. */
static SX_UNUSED void sx_create(char id[TFS_ID_MAX + 1], char *const argv[],
                                const tfs_task_spec_t *base) {
  tfs_task_spec_t spec = sx_spec(argv, base);
  int existed = 0;
  int err = tfs_task_create(sx_store, &spec, id, &existed);
  cr_assert_eq(err, 0, "tfs_task_create: %s", tfs_strerror(err));
}

/* Starts argv in the test directory the way every face does
 * (tfs_task_start); returns the record after the launch in *rec if not
 * NULL. */
static SX_UNUSED void sx_start_argv(char id[TFS_ID_MAX + 1], char *const argv[],
                                    const tfs_task_spec_t *base, char *const *env,
                                    tfs_record_t *rec) {
  tfs_task_spec_t spec = sx_spec(argv, base);
  tfs_launch_opts_t lo = {.env = env, .wait_ms = 20000, .exe = tu_taskfs_bin()};
  tfs_start_t st;
  int err = tfs_task_start(sx_store, &spec, &lo, &st);
  cr_assert_eq(err, 0, "tfs_task_start: %s", tfs_strerror(err));
  cr_assert(st.launch && !st.existed, "a new task that was not launched");
  cr_assert_neq(st.rec.state, TFS_QUEUED, "the task did not leave queued");
  memcpy(id, st.id, sizeof st.id);
  if (rec) {
    *rec = st.rec;
    tfs_record_init(&st.rec);
  }
  tfs_start_free(&st);
}

/* Starts `sh -c script`, as sx_start_argv. */
static SX_UNUSED void sx_start(char id[TFS_ID_MAX + 1], const char *script,
                               const tfs_task_spec_t *base, char *const *env, tfs_record_t *rec) {
  char *argv[] = {"sh", "-c", (char *)script, NULL};
  sx_start_argv(id, argv, base, env, rec);
}

/* Waits (generously) for the task to end; returns its record. */
static SX_UNUSED tfs_record_t sx_wait(const char *id, int64_t timeout_ms) {
  tfs_record_t rec;
  int err = tfs_task_wait_end(sx_store, id, timeout_ms, NULL, &rec);
  cr_assert_eq(err, 0, "task %s did not end: %s", id, tfs_strerror(err));
  return rec;
}

/* Loads a record, asserting success. */
static SX_UNUSED tfs_record_t sx_load(const char *id) {
  tfs_record_t rec;
  memset(&rec, 0, sizeof rec);
  int err = tfs_task_load(sx_store, id, &rec);
  cr_assert_eq(err, 0, "tfs_task_load: %s", tfs_strerror(err));
  return rec;
}

/* The content of the file name in the test directory (where workers run),
 * malloc'ed; asserts that it exists. */
static char *sx_file(const char *name) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", sx_tmp, name);
  char *got = tu_read_file(path, NULL);
  cr_assert_not_null(got, "%s: %s", path, strerror(errno));
  return got;
}

/* Asserts that the file name in the test directory holds exactly want. */
static SX_UNUSED void sx_assert_file(const char *name, const char *want) {
  char *got = sx_file(name);
  cr_assert_str_eq(got, want, "%s", name);
  free(got);
}

static SX_UNUSED char *sx_task_file(const char *id, const char *name, size_t *len) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/tasks/%s/%s", sx_state, id, name);
  return tu_read_file(path, len);
}

/* Runs `cd TMP && taskfs ARGS` (a shell fragment); captures stdout and
 * stderr when asked; returns the exit status. */
static SX_UNUSED int sx_taskfs(char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static SX_UNUSED int sx_taskfs(char **out, char **err, const char *fmt, ...) {
  va_list ap;
  char *args, errpath[PATH_MAX];
  va_start(ap, fmt);
  if (vasprintf(&args, fmt, ap) < 0)
    abort();
  va_end(ap);
  snprintf(errpath, sizeof errpath, "%s/stderr.txt", sx_tmp);
  int rc = tu_sh(out, "cd '%s' && '%s' %s 2>'%s'", sx_tmp, tu_taskfs_bin(), args, errpath);
  if (err)
    *err = tu_read_file(errpath, NULL);
  free(args);
  return rc;
}

/* The id on the first line of out, checked. */
static SX_UNUSED void sx_first_id(const char *out, char id[TFS_ID_MAX + 1]) {
  size_t n = strcspn(out, "\n");
  cr_assert(n > 0 && n <= TFS_ID_MAX, "no id in: %s", out);
  memcpy(id, out, n);
  id[n] = 0;
  cr_assert(tfs_id_valid(id), "not an id: %s", id);
}

/* The state letter of /proc/<pid>/stat (R, S, T, Z, ...), '?' if gone. */
static SX_UNUSED char sx_proc_state(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  char *s = tu_read_file(path, NULL);
  char *p = s ? strrchr(s, ')') : NULL;
  char c = p && p[1] ? p[2] : '?';
  free(s);
  return c;
}

/* Asserts that the store holds exactly n tasks (a refused start made none). */
static SX_UNUSED void sx_assert_tasks(size_t n) {
  char **ids;
  size_t have;
  cr_assert_eq(tfs_task_ids(sx_store, &ids, &have), 0);
  cr_assert_eq(have, n, "%zu tasks, not %zu", have, n);
  tfs_ids_free(ids, have);
}

typedef struct {
  const char *id;
  tfs_state_t state;
  const char *reason; /* a part of the reason it must have, or NULL */
} sx_want_t;

static int sx_reads(void *arg) {
  sx_want_t *w = arg;
  tfs_record_t rec;
  if (tfs_task_load(sx_store, w->id, &rec))
    return 0;
  /* The words every face shows: a waiter's place is computed on read. */
  char words[600] = "";
  tfs_queue_positions_t *p;
  if (w->reason && tfs_queue_positions_open(sx_store, &p) == 0) {
    tfs_queue_describe(p, &rec, words, sizeof words);
    tfs_queue_positions_close(p);
  }
  int ok = rec.state == w->state && (!w->reason || (rec.reason && strstr(rec.reason, w->reason)) ||
                                     strstr(words, w->reason));
  tfs_record_free(&rec);
  return ok;
}

/* Waits until the task reads state (and, if reason is not NULL, with
 * reason in its reason or in the words every face shows for it). */
static SX_UNUSED void sx_wait_state(const char *id, tfs_state_t state, const char *reason) {
  sx_want_t w = {id, state, reason};
  if (tu_wait_until(sx_reads, &w, 30000))
    return;
  tfs_record_t rec = sx_load(id);
  cr_assert_fail("task %s is %s (%s), not %s%s%s", id, tfs_state_name(rec.state),
                 rec.reason ? rec.reason : "no reason", tfs_state_name(state),
                 reason ? " with " : "", reason ? reason : "");
}

#endif
