/* End-to-end tests of the taskfs command line verbs ls, show, logs, cancel,
 * prune and path: the real binary (tu_taskfs_bin()) runs against temporary
 * stores that the tests populate through the core API. A "running" task is
 * a forked child holding the task lock, as a supervisor would; killing it
 * makes the task lost. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "taskfs/taskfs.h"
#include "tests/helpers/standin.h"
#include "tests/helpers/testutil.h"

static char *tmp;   /* per-test temporary directory */
static char *state; /* <tmp>/state: the store */
static tfs_store_t *store;
static pid_t kids[16];
static int nkids;

static void setup(void) {
  tmp = tu_tmpdir("cli");
  if (asprintf(&state, "%s/state", tmp) < 0)
    abort();
}

static void teardown(void) {
  for (int i = 0; i < nkids; i++) {
    if (kids[i] > 0) {
      kill(kids[i], SIGKILL);
      waitpid(kids[i], NULL, 0);
    }
  }
  nkids = 0;
  if (store)
    tfs_store_close(store);
  store = NULL;
  tu_cleanup_dir(tmp);
  free(tmp);
  free(state);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 60);

static void track(pid_t pid) {
  cr_assert_lt(nkids, 16);
  kids[nkids++] = pid;
}

static void untrack(pid_t pid) {
  for (int i = 0; i < nkids; i++)
    if (kids[i] == pid)
      kids[i] = 0;
}

/* Runs `taskfs ARGS` (a shell fragment) and returns its exit status; stdout
 * and stderr are captured when out/err are not NULL. */
static int run(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char **out, char **err, const char *fmt, ...) {
  va_list ap;
  char *args, *errpath;
  va_start(ap, fmt);
  if (vasprintf(&args, fmt, ap) < 0)
    abort();
  va_end(ap);
  if (asprintf(&errpath, "%s/stderr", tmp) < 0)
    abort();
  int rc = tu_sh(out, "'%s' %s 2>'%s'", tu_taskfs_bin(), args, errpath);
  if (err)
    *err = tu_read_file(errpath, NULL);
  free(args);
  free(errpath);
  return rc;
}

static tfs_store_t *st(void) {
  if (!store)
    cr_assert_eq(tfs_store_open(state, &store), 0, "cannot open the test store %s", state);
  return store;
}

/* Creates a task with the given key (NULL: none) and command. */
static void make_task(const char *key, const char *cmd, char id[TFS_ID_MAX + 1]) {
  char *argv[] = {"sh", "-c", (char *)cmd, NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = "/",
                          .key = key,
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1};
  int existed = -1;
  int rc = tfs_task_create(st(), &spec, id, &existed);
  cr_assert_eq(rc, 0, "tfs_task_create: %s", tfs_strerror(rc));
  cr_assert_eq(existed, 0);
  /* Ids carry the creation time in ms: keep creation order unambiguous. */
  struct timespec ts = {0, 3 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* Rewrites a task's record as ended in state s. */
static void set_end(const char *id, tfs_state_t s, int code, int sig) {
  tfs_record_t rec;
  memset(&rec, 0, sizeof rec);
  cr_assert_eq(tfs_task_load(st(), id, &rec), 0);
  int64_t now = tfs_now_ms();
  rec.state = s;
  rec.exit_code = code;
  rec.signal = sig;
  if (!rec.started_ms)
    rec.started_ms = now - 1500;
  rec.ended_ms = now;
  if (!rec.worker_pid)
    rec.worker_pid = 4242;
  tfs_record_set_reason(&rec, "set by the test");
  cr_assert_eq(tfs_task_save(st(), &rec), 0);
  tfs_record_free(&rec);
}

static void append(const char *id, const char *data, size_t len) {
  int fd = tfs_transcript_open_append(st(), id);
  cr_assert_geq(fd, 0, "open transcript: %s", tfs_strerror(fd));
  cr_assert_eq(tfs_transcript_append(fd, data, len, 0), 0);
  close(fd);
}

static char *task_file(const char *id, const char *name) {
  char *p;
  if (asprintf(&p, "%s/tasks/%s/%s", state, id, name) < 0)
    abort();
  return p;
}

/* A stand-in supervisor (tests/helpers/standin.c), tracked. */
static pid_t start_running(const char *id, int obey_cancel) {
  pid_t pid = tu_standin_supervisor(state, id, obey_cancel);
  cr_assert_gt(pid, 0, "the stand-in supervisor did not start");
  track(pid);
  return pid;
}

static void kill_running(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  untrack(pid);
}

/* Starts `taskfs ARGV...` in the background with stdout and stderr going
 * to <tmp>/bg.out and <tmp>/bg.err. */
static pid_t start_bg(char *const argv[]) {
  char *out, *err;
  if (asprintf(&out, "%s/bg.out", tmp) < 0 || asprintf(&err, "%s/bg.err", tmp) < 0)
    abort();
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0)
      _exit(99);
    dup2(o, 1);
    dup2(e, 2);
    execv(tu_taskfs_bin(), argv);
    _exit(98);
  }
  free(out);
  free(err);
  track(pid);
  return pid;
}

typedef struct {
  pid_t pid;
  int status;
  int done;
} waitee_t;

static int exited(void *arg) {
  waitee_t *w = arg;
  if (!w->done && waitpid(w->pid, &w->status, WNOHANG) == w->pid)
    w->done = 1;
  return w->done;
}

/* Waits (generously) for a background taskfs; returns its exit code. */
static int wait_bg(pid_t pid) {
  waitee_t w = {.pid = pid};
  cr_assert(tu_wait_until(exited, &w, 20000), "taskfs did not exit by itself");
  untrack(pid);
  cr_assert(WIFEXITED(w.status), "taskfs died of a signal: %d", w.status);
  return WEXITSTATUS(w.status);
}

typedef struct {
  const char *path;
  const char *needle;
} contains_t;

static int file_contains(void *arg) {
  contains_t *c = arg;
  char *s = tu_read_file(c->path, NULL);
  int r = s && strstr(s, c->needle) != NULL;
  free(s);
  return r;
}

static char *bg_path(const char *name) {
  char *p;
  if (asprintf(&p, "%s/%s", tmp, name) < 0)
    abort();
  return p;
}

/* A listing of every path under dir with its size and mtime, to show that
 * a command changed nothing. */
static char *snapshot(const char *dir) {
  char *out;
  tu_sh(&out, "find '%s' -printf '%%p %%s %%T@ %%m\\n' 2>&1 | sort", dir);
  return out;
}

static int exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

/* ---- help and usage ------------------------------------------------------ */

Test(cli, every_verb_has_help) {
  const char *verbs[] = {"ls", "show", "logs", "cancel", "prune", "path"};
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
    char *out, *err, want[64];
    snprintf(want, sizeof want, "usage: taskfs %s", verbs[i]);
    cr_expect_eq(run(&out, &err, "%s --help", verbs[i]), 0, "%s --help", verbs[i]);
    cr_expect(strstr(out, want), "%s --help printed: %s", verbs[i], out);
    cr_expect(strstr(out, "--state-dir"), "%s --help lacks --state-dir", verbs[i]);
    free(out);
    free(err);
    cr_expect_eq(run(&out, NULL, "%s -h", verbs[i]), 0, "%s -h", verbs[i]);
    cr_expect(strstr(out, want));
    free(out);
  }
  cr_expect(!exists(state), "--help created the store");
}

/* Every verb's help has an EXIT STATUS section; the top-level help names
 * --version, which works as -V and `version` too. */
Test(cli, every_help_has_exit_status_and_version_is_listed) {
  const char *verbs[] = {"run",   "ls",   "show",  "logs",   "cancel", "wait",
                         "prune", "path", "mount", "umount", "mcp"};
  char *out;
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
    cr_expect_eq(run(&out, NULL, "%s --help", verbs[i]), 0, "%s --help", verbs[i]);
    cr_expect(strstr(out, "\nEXIT STATUS\n"), "%s --help has no EXIT STATUS:\n%s", verbs[i], out);
    free(out);
  }
  cr_expect_eq(run(&out, NULL, "--help"), 0);
  cr_expect(strstr(out, "--version"), "%s", out);
  cr_expect(strstr(out, "EXIT STATUS"), "%s", out);
  free(out);
  const char *version[] = {"--version", "-V", "version"};
  for (size_t i = 0; i < 3; i++) {
    cr_expect_eq(run(&out, NULL, "%s", version[i]), 0, "%s", version[i]);
    cr_expect_eq(strncmp(out, "taskfs ", 7), 0, "%s printed: %s", version[i], out);
    free(out);
  }
}

Test(cli, an_unknown_verb_gets_a_suggestion) {
  struct {
    const char *typed, *meant;
  } cases[] = {{"lss", "ls"}, {"sohw", "show"}, {"cancle", "cancel"}, {"umonut", "umount"}};
  char *err, want[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cr_expect_eq(run(NULL, &err, "%s", cases[i].typed), 100);
    snprintf(want, sizeof want, "did you mean '%s'?", cases[i].meant);
    cr_expect(strstr(err, want), "%s: %s", cases[i].typed, err);
    free(err);
  }
  cr_expect_eq(run(NULL, &err, "frobnicate"), 100);
  cr_expect(!strstr(err, "did you mean") && strstr(err, "unknown verb 'frobnicate'"), "%s", err);
  free(err);
  /* umount acts on a mount point: --state-dir is refused in its words. */
  cr_expect_eq(run(NULL, &err, "umount --state-dir /tmp /nowhere"), 100);
  cr_expect(!strncmp(err, "taskfs umount: umount takes no --state-dir", 42), "%s", err);
  free(err);
}

Test(cli, usage_errors_exit_100_with_a_message) {
  struct {
    const char *args;
    const char *needle;
  } cases[] = {
      {"ls --bogus", "unknown option '--bogus'"},
      {"ls -x", "unknown option '-x'"},
      {"ls --limit", "needs a value"},
      {"ls --limit many", "--limit wants a whole number"},
      {"ls --state sleeping", "queued, running, paused, completed, failed, cancelled, lost"},
      {"ls extra", "unexpected argument"},
      {"pause", "which task?"},
      {"show a b", "one task at a time"},
      {"logs -n -3 abc", "-n wants a whole number"},
      {"logs -n", "needs a value"},
      {"restart", "which task?"},
      {"wait --all abc", "exclude each other"},
      {"cancel -y abc", "only makes sense with --all"},
      {"cancel --timeout 5 abc", "only makes sense with --wait"},
      {"cancel --wait --timeout soon abc", "--timeout wants a duration"},
      {"prune", "give --keep N"},
      {"prune --older-than soon", "--older-than wants a duration"},
      {"prune --state running", "states of ended tasks"},
      {"prune --keep ten", "--keep wants a whole number"},
      {"prune --keep -1", "--keep wants a whole number"},
      {"path extra", "unexpected argument"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *err;
    /* The verb comes first: taskfs VERB --state-dir DIR REST. */
    int vl = (int)strcspn(cases[i].args, " ");
    int rc =
        run(NULL, &err, "%.*s --state-dir '%s'%s", vl, cases[i].args, state, cases[i].args + vl);
    cr_expect_eq(rc, 100, "'%s' exited %d", cases[i].args, rc);
    cr_expect(strstr(err, cases[i].needle), "'%s' said: %s", cases[i].args, err);
    cr_expect(strstr(err, "--help'"), "'%s' does not point to --help: %s", cases[i].args, err);
    free(err);
  }
  cr_expect(!exists(state), "a usage error created the store");
}

/* ---- ids ----------------------------------------------------------------- */

Test(cli, unknown_and_hostile_ids) {
  char id[TFS_ID_MAX + 1];
  make_task("known", "true", id);
  char *before = snapshot(state);
  const char *verbs[] = {"show", "logs", "logs -f", "cancel"};
  for (size_t v = 0; v < 4; v++) {
    char *err;
    /* Well formed but unknown: 101, and the message says how to list. */
    int rc = run(NULL, &err, "%s --state-dir '%s' zz000000-aaaaaa", verbs[v], state);
    cr_expect_eq(rc, 101, "%s unknown id: %d", verbs[v], rc);
    cr_expect(strstr(err, "taskfs ls"), "%s: %s", verbs[v], err);
    free(err);
    rc = run(NULL, &err, "%s --state-dir '%s' no-such-key", verbs[v], state);
    cr_expect_eq(rc, 101, "%s unknown key: %d", verbs[v], rc);
    free(err);

    char big[301];
    memset(big, 'a', 300);
    big[300] = 0;
    const char *hostile[] = {"../x", "", "a/b", "..", big, "tab\there", "-- -rf"};
    for (size_t h = 0; h < sizeof hostile / sizeof hostile[0]; h++) {
      rc = run(NULL, &err, "%s --state-dir '%s' -- '%s'", verbs[v], state, hostile[h]);
      cr_expect_eq(rc, 100, "%s '%s': %d", verbs[v], hostile[h], rc);
      cr_expect(strstr(err, "task id") || strstr(err, "empty"), "%s '%s': %s", verbs[v], hostile[h],
                err);
      cr_expect_lt(strlen(err), 400, "the message quotes too much: %s", err);
      free(err);
    }
  }
  char *after = snapshot(state);
  cr_expect_str_eq(after, before, "the store changed");
  free(before);
  free(after);
}

Test(cli, options_after_arguments_and_double_dash) {
  char id[TFS_ID_MAX + 1];
  make_task("k1", "true", id);
  append(id, "one\ntwo\nthree\n", 14);
  char *out;
  cr_assert_eq(run(&out, NULL, "logs k1 -n 1 --state-dir '%s'", state), 0);
  cr_expect_str_eq(out, "three\n");
  free(out);
  cr_assert_eq(run(&out, NULL, "show --state-dir '%s' -- %s", state, id), 0);
  cr_expect(strstr(out, id));
  free(out);
}

/* ---- ls ------------------------------------------------------------------ */

Test(cli, ls_text_json_and_state_filter) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], c[TFS_ID_MAX + 1];
  make_task("build", "make all", a);
  make_task(NULL, "false", b);
  make_task("server", "sleep 1000", c);
  set_end(a, TFS_COMPLETED, 0, 0);
  set_end(b, TFS_FAILED, 3, 0);
  pid_t sup = start_running(c, 0);
  (void)sup;

  char *out, *err;
  cr_assert_eq(run(&out, &err, "ls --state-dir '%s'", state), 0, "%s", err);
  /* Header, then oldest first. */
  cr_expect(!strncmp(out, "# ID", 4), "no header: %s", out);
  char *pa = strstr(out, a), *pb = strstr(out, b), *pc = strstr(out, c);
  cr_assert(pa && pb && pc, "missing tasks: %s", out);
  cr_expect(pa < pb && pb < pc, "not oldest first: %s", out);
  cr_expect(strstr(pa, "completed") < pb);
  cr_expect(strstr(pb, "failed") < pc);
  cr_expect(strstr(pc, "running"));
  cr_expect(strstr(out, "make all"));
  cr_expect(strstr(out, "build"));
  cr_expect(strstr(out, "'sleep 1000'"), "quoted argument: %s", out);
  char line[256];
  snprintf(line, sizeof line, "%s failed", b);
  cr_expect(strstr(out, line), "%s", out);
  free(out);
  free(err);

  cr_assert_eq(run(&out, NULL, "ls --state failed --state-dir '%s'", state), 0);
  cr_expect(strstr(out, b) && !strstr(out, a) && !strstr(out, c), "%s", out);
  free(out);
  cr_assert_eq(run(&out, NULL, "ls --state completed,running --state-dir '%s'", state), 0);
  cr_expect(strstr(out, a) && !strstr(out, b) && strstr(out, c), "%s", out);
  free(out);
  cr_assert_eq(run(&out, NULL, "ls --limit 2 --state-dir '%s'", state), 0);
  cr_expect(!strstr(out, a) && strstr(out, b) && strstr(out, c), "%s", out);
  cr_expect(strstr(out, b) < strstr(out, c), "--limit is not oldest first: %s", out);
  free(out);
  cr_assert_eq(run(&out, NULL, "ls --limit 1 --all --state-dir '%s'", state), 0);
  cr_expect(strstr(out, a) && strstr(out, b) && strstr(out, c), "%s", out);
  free(out);

  /* --json: the full records, oldest first. */
  cr_assert_eq(run(&out, NULL, "ls --json --state-dir '%s'", state), 0);
  json_error_t jerr;
  json_t *arr = json_loads(out, 0, &jerr);
  cr_assert(arr, "ls --json is not JSON (%s): %s", jerr.text, out);
  cr_assert(json_is_array(arr));
  cr_assert_eq(json_array_size(arr), 3);
  const char *want_ids[] = {a, b, c};
  const char *want_states[] = {"completed", "failed", "running"};
  for (size_t i = 0; i < 3; i++) {
    json_t *r = json_array_get(arr, i);
    cr_expect_str_eq(json_string_value(json_object_get(r, "id")), want_ids[i]);
    cr_expect_str_eq(json_string_value(json_object_get(r, "state")), want_states[i]);
    cr_expect(json_is_array(json_object_get(r, "command")));
  }
  json_decref(arr);
  free(out);

  cr_assert_eq(
      run(&out, NULL, "ls --json --limit 2 --state failed,completed --state-dir '%s'", state), 0);
  arr = json_loads(out, 0, &jerr);
  cr_assert(arr, "%s", out);
  cr_assert_eq(json_array_size(arr), 2);
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(arr, 0), "id")), a);
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(arr, 1), "id")), b);
  json_decref(arr);
  free(out);

  /* Kill the stand-in supervisor: the task now lists as lost. */
  kill_running(sup);
  cr_assert_eq(run(&out, NULL, "ls --state lost --state-dir '%s'", state), 0);
  cr_expect(strstr(out, c) && strstr(out, "lost"), "%s", out);
  free(out);
}

Test(cli, corrupt_record_is_skipped_by_ls_and_reported_by_show) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], c[TFS_ID_MAX + 1];
  make_task(NULL, "echo a", a);
  make_task(NULL, "echo b", b);
  make_task(NULL, "echo c", c);
  char *p = task_file(b, "record.json");
  cr_assert_eq(tu_write_file(p, "{\"v\": 1, \"id\": tru", 18), 0);
  free(p);

  char *out, *err;
  cr_assert_eq(run(&out, &err, "ls --state-dir '%s'", state), 0, "%s", err);
  cr_expect(strstr(out, a) && strstr(out, c) && !strstr(out, b), "%s", out);
  cr_expect(strstr(err, "1 unreadable record skipped"), "%s", err);
  cr_expect(strstr(err, "taskfs show"), "%s", err);
  free(out);
  free(err);
  cr_assert_eq(run(&out, &err, "ls --json --state-dir '%s'", state), 0);
  json_t *arr = json_loads(out, 0, NULL);
  cr_assert(arr, "%s", out);
  cr_expect_eq(json_array_size(arr), 2);
  json_decref(arr);
  cr_expect(strstr(err, "1 unreadable record skipped"), "%s", err);
  free(out);
  free(err);

  int rc = run(&out, &err, "show --state-dir '%s' %s", state, b);
  cr_expect_eq(rc, 111);
  cr_expect(strstr(err, "is corrupt"), "%s", err);
  cr_expect(strstr(err, "record.json: line 1"), "the parser's words: %s", err);
  cr_expect(strstr(err, "taskfs prune"), "%s", err);
  cr_expect_str_eq(out, "");
  free(out);
  free(err);

  /* A directory where record.json belongs. */
  p = task_file(c, "record.json");
  cr_assert_eq(unlink(p), 0);
  cr_assert_eq(mkdir(p, 0700), 0);
  free(p);
  cr_assert_eq(run(&out, &err, "ls --state-dir '%s'", state), 0);
  cr_expect(strstr(out, a) && !strstr(out, c), "%s", out);
  cr_expect(strstr(err, "2 unreadable records skipped"), "%s", err);
  free(out);
  free(err);
  cr_expect_eq(run(NULL, &err, "show --state-dir '%s' %s", state, c), 111);
  cr_expect(strstr(err, "corrupt: it is a directory"), "%s", err);
  free(err);
}

Test(cli, show_prints_the_record_with_lost_computed) {
  char id[TFS_ID_MAX + 1];
  make_task("svc", "sleep 100", id);
  pid_t sup = start_running(id, 0);
  char *out;
  cr_assert_eq(run(&out, NULL, "show --state-dir '%s' svc", state), 0);
  json_t *r = json_loads(out, 0, NULL);
  cr_assert(r, "%s", out);
  cr_expect_str_eq(json_string_value(json_object_get(r, "state")), "running");
  cr_expect_str_eq(json_string_value(json_object_get(r, "id")), id);
  json_decref(r);
  cr_expect(strstr(out, "\n  \""), "not indented: %s", out);
  free(out);
  kill_running(sup);
  cr_assert_eq(run(&out, NULL, "show --state-dir '%s' %s", state, id), 0);
  r = json_loads(out, 0, NULL);
  cr_assert(r, "%s", out);
  cr_expect_str_eq(json_string_value(json_object_get(r, "state")), "lost");
  json_decref(r);
  free(out);
}

/* ---- logs ---------------------------------------------------------------- */

Test(cli, logs_is_byte_exact_with_binary_content) {
  char id[TFS_ID_MAX + 1];
  make_task("bin", "cat /dev/urandom", id);
  char data[4096];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (char)((i * 131 + 7) & 0xff);
  memcpy(data, "first\r\n\0nul\n\xff\xfe", 15);
  append(id, data, sizeof data); /* ends without a newline */
  char *outp = bg_path("logs.out");
  cr_assert_eq(tu_sh(NULL, "'%s' logs --state-dir '%s' bin > '%s'", tu_taskfs_bin(), state, outp),
               0);
  size_t len;
  char *got = tu_read_file(outp, &len);
  cr_assert_eq(len, sizeof data);
  cr_expect_eq(memcmp(got, data, sizeof data), 0, "logs changed the bytes");
  free(got);
  free(outp);
}

Test(cli, logs_last_n_lines) {
  char id[TFS_ID_MAX + 1];
  make_task(NULL, "seq 4", id);
  append(id, "1\n2\n3\n4\n", 8);
  char *out;
  cr_assert_eq(run(&out, NULL, "logs -n 2 --state-dir '%s' %s", state, id), 0);
  cr_expect_str_eq(out, "3\n4\n");
  free(out);
  cr_assert_eq(run(&out, NULL, "logs -n 0 --state-dir '%s' %s", state, id), 0);
  cr_expect_str_eq(out, "");
  free(out);
  cr_assert_eq(run(&out, NULL, "logs -n 10 --state-dir '%s' %s", state, id), 0);
  cr_expect_str_eq(out, "1\n2\n3\n4\n");
  free(out);
  append(id, "5", 1); /* a partial last line counts, as in tail(1) */
  cr_assert_eq(run(&out, NULL, "logs --lines 2 --state-dir '%s' %s", state, id), 0);
  cr_expect_str_eq(out, "4\n5");
  free(out);

  char other[TFS_ID_MAX + 1];
  make_task(NULL, "true", other); /* no transcript yet */
  cr_assert_eq(run(&out, NULL, "logs --state-dir '%s' %s", state, other), 0);
  cr_expect_str_eq(out, "");
  free(out);
}

Test(cli, logs_follow_prints_new_lines_and_exits_with_the_task_code) {
  char id[TFS_ID_MAX + 1];
  make_task("follow", "make", id);
  append(id, "old 1\nold 2\n", 12);
  start_running(id, 0);
  char *argv[] = {"taskfs", "logs", "-f", "-n", "1", "--state-dir", state, "follow", NULL};
  pid_t pid = start_bg(argv);
  char *outp = bg_path("bg.out");
  contains_t c1 = {outp, "old 2\n"};
  cr_assert(tu_wait_until(file_contains, &c1, 20000), "logs -f printed nothing");
  append(id, "new line 3\n", 11);
  contains_t c2 = {outp, "new line 3\n"};
  cr_assert(tu_wait_until(file_contains, &c2, 20000), "logs -f missed an appended line");
  append(id, "last without newline", 20);
  set_end(id, TFS_FAILED, 3, 0);
  cr_expect_eq(wait_bg(pid), 3, "logs -f should exit with the task's code");
  char *got = tu_read_file(outp, NULL);
  cr_expect_str_eq(got, "old 2\nnew line 3\nlast without newline");
  free(got);
  free(outp);
}

Test(cli, logs_follow_waits_for_the_transcript_to_appear) {
  char id[TFS_ID_MAX + 1];
  make_task("quiet", "sleep 1; echo hi", id); /* no transcript yet */
  start_running(id, 0);
  char *argv[] = {"taskfs", "logs", "--follow", "--state-dir", state, "quiet", NULL};
  pid_t pid = start_bg(argv);
  char *outp = bg_path("bg.out");
  append(id, "hi\n", 3);
  contains_t c1 = {outp, "hi\n"};
  cr_assert(tu_wait_until(file_contains, &c1, 20000), "logs -f missed the first line");
  set_end(id, TFS_COMPLETED, 0, 0);
  cr_expect_eq(wait_bg(pid), 0);
  char *got = tu_read_file(outp, NULL);
  cr_expect_str_eq(got, "hi\n");
  free(got);
  free(outp);
}

Test(cli, logs_follow_on_a_completed_task_drains_and_exits_0) {
  char id[TFS_ID_MAX + 1];
  make_task(NULL, "true", id);
  append(id, "a\nb", 3);
  set_end(id, TFS_COMPLETED, 0, 0);
  char *out;
  cr_expect_eq(run(&out, NULL, "logs -f --state-dir '%s' %s", state, id), 0);
  cr_expect_str_eq(out, "a\nb");
  free(out);
  set_end(id, TFS_FAILED, -1, 9);
  cr_expect_eq(run(NULL, NULL, "logs -f --state-dir '%s' %s", state, id), 128 + 9);
  set_end(id, TFS_CANCELLED, -1, 15);
  cr_expect_eq(run(NULL, NULL, "logs -f --state-dir '%s' %s", state, id), 130);
}

Test(cli, logs_follow_on_a_lost_task_exits_102) {
  char id[TFS_ID_MAX + 1];
  make_task(NULL, "sleep 100", id);
  append(id, "before the crash\npartial", 24);
  pid_t sup = start_running(id, 0);
  char *argv[] = {"taskfs", "logs", "-f", "--state-dir", state, id, NULL};
  pid_t pid = start_bg(argv);
  char *outp = bg_path("bg.out");
  contains_t c1 = {outp, "before the crash\n"};
  cr_assert(tu_wait_until(file_contains, &c1, 20000));
  kill_running(sup); /* the supervisor dies without recording an end */
  cr_expect_eq(wait_bg(pid), 102);
  char *got = tu_read_file(outp, NULL);
  cr_expect_str_eq(got, "before the crash\npartial");
  free(got);
  char *errp = bg_path("bg.err");
  got = tu_read_file(errp, NULL);
  cr_expect(strstr(got, "lost"), "%s", got);
  free(got);
  free(errp);
  free(outp);
}

Test(cli, logs_into_a_closed_pipe_ends_promptly) {
  char id[TFS_ID_MAX + 1];
  make_task("big", "yes", id);
  /* 2 MB of output: far more than a pipe holds. */
  char *chunk = malloc(1 << 16);
  for (int i = 0; i < (1 << 16); i++)
    chunk[i] = (i % 64 == 63) ? '\n' : 'y';
  for (int i = 0; i < 32; i++)
    append(id, chunk, 1 << 16);
  free(chunk);
  start_running(id, 0);
  char *out;
  /* PIPESTATUS[0] is taskfs's own status; timeout(1) would say 124. */
  int rc = tu_sh(&out,
                 "bash -c \"timeout %d '%s' logs --state-dir '%s' big | head -1 >/dev/null; "
                 "echo \\${PIPESTATUS[0]}\"",
                 20 * tu_slow(), tu_taskfs_bin(), state);
  cr_assert_eq(rc, 0);
  cr_expect_str_eq(out, "0\n", "logs | head: taskfs status %s", out);
  free(out);
  /* Following an idle task with little output: no write ever fails, so
   * the closed reader alone must end it. */
  char small[TFS_ID_MAX + 1];
  make_task("small", "sleep 100", small);
  append(small, "one line\n", 9);
  start_running(small, 0);
  rc = tu_sh(&out,
             "bash -c \"timeout %d '%s' logs -f --state-dir '%s' small | head -1 >/dev/null; "
             "echo \\${PIPESTATUS[0]}\"",
             20 * tu_slow(), tu_taskfs_bin(), state);
  cr_assert_eq(rc, 0);
  cr_expect_str_eq(out, "0\n", "logs -f | head: taskfs status %s", out);
  free(out);
}

Test(cli, logs_follow_ends_on_sigint) {
  char id[TFS_ID_MAX + 1];
  make_task(NULL, "sleep 100", id);
  start_running(id, 0);
  append(id, "x\n", 2);
  char *argv[] = {"taskfs", "logs", "-f", "--state-dir", state, id, NULL};
  pid_t pid = start_bg(argv);
  char *outp = bg_path("bg.out");
  contains_t c1 = {outp, "x\n"};
  cr_assert(tu_wait_until(file_contains, &c1, 20000));
  kill(pid, SIGINT);
  cr_expect_eq(wait_bg(pid), 130);
  free(outp);
}

/* ---- cancel -------------------------------------------------------------- */

Test(cli, cancel_records_a_request_and_reports_a_finished_task) {
  char run_id[TFS_ID_MAX + 1], done_id[TFS_ID_MAX + 1];
  make_task("svc", "sleep 100", run_id);
  make_task("done", "true", done_id);
  set_end(done_id, TFS_COMPLETED, 0, 0);
  start_running(run_id, 0);

  char *out, *err;
  cr_assert_eq(run(&out, &err, "cancel --state-dir '%s' svc", state), 0, "%s", err);
  char want[128];
  snprintf(want, sizeof want, "stop requested for %s\n", run_id);
  cr_expect_str_eq(out, want);
  free(out);
  free(err);
  char who[128] = "";
  int64_t at = 0;
  cr_assert_eq(tfs_cancel_query(st(), run_id, who, sizeof who, &at), 1);
  cr_expect(strstr(who, "cli pid "), "who = %s", who);
  cr_expect(strstr(who, " uid "), "who = %s", who);
  cr_expect_gt(at, 0);

  cr_assert_eq(run(&out, NULL, "cancel --state-dir '%s' done", state), 0);
  snprintf(want, sizeof want, "%s already ended (completed); nothing to stop\n", done_id);
  cr_expect_str_eq(out, want);
  free(out);
  cr_expect_eq(tfs_cancel_query(st(), done_id, NULL, 0, NULL), 0);

  /* --wait with nobody acting on the request times out with 124. */
  cr_expect_eq(run(NULL, &err, "cancel --wait --timeout 0.3 --state-dir '%s' svc", state), 124);
  cr_expect(strstr(err, "still running"), "%s", err);
  free(err);
}

Test(cli, cancel_wait_prints_the_final_state) {
  char id[TFS_ID_MAX + 1];
  make_task("svc", "sleep 100", id);
  start_running(id, 1);
  char *out, *err;
  int rc =
      run(&out, &err, "cancel --wait --timeout %d --state-dir '%s' %s", 20 * tu_slow(), state, id);
  cr_expect_eq(rc, 0, "%s", err);
  char want[128];
  snprintf(want, sizeof want, "stop requested for %s\n%s cancelled: stopped on request\n", id, id);
  cr_expect_str_eq(out, want);
  free(out);
  free(err);
}

/* ---- prune and path ------------------------------------------------------ */

Test(cli, prune_keeps_the_newest) {
  char ids[4][TFS_ID_MAX + 1];
  for (int i = 0; i < 4; i++) {
    make_task(NULL, "true", ids[i]);
    set_end(ids[i], TFS_COMPLETED, 0, 0);
  }
  char *out;
  cr_assert_eq(run(&out, NULL, "prune --keep 1 --state-dir '%s'", state), 0);
  cr_expect(!strncmp(out, "deleted 3 tasks", 15), "%s", out);
  free(out);
  cr_assert_eq(run(&out, NULL, "ls --state-dir '%s'", state), 0);
  cr_expect(strstr(out, ids[3]) && !strstr(out, ids[0]) && !strstr(out, ids[2]), "%s", out);
  free(out);
  cr_assert_eq(run(&out, NULL, "prune --keep 5 --state-dir '%s'", state), 0);
  cr_expect(!strncmp(out, "deleted 0 tasks", 15), "%s", out);
  free(out);
}

Test(cli, path_resolves_without_creating) {
  char *out, *want;
  cr_assert_eq(run(&out, NULL, "path --state-dir '%s/explicit'", tmp), 0);
  cr_assert(asprintf(&want, "%s/explicit\n", tmp) > 0);
  cr_expect_str_eq(out, want);
  free(out);
  free(want);

  const char *bin = tu_taskfs_bin();
  cr_assert_eq(
      tu_sh(&out, "env TASKFS_STATE_DIR='%s/env' XDG_STATE_HOME='%s/xdg' '%s' path", tmp, tmp, bin),
      0);
  cr_assert(asprintf(&want, "%s/env\n", tmp) > 0);
  cr_expect_str_eq(out, want);
  free(out);
  free(want);

  cr_assert_eq(tu_sh(&out, "env -u TASKFS_STATE_DIR XDG_STATE_HOME='%s/xdg' '%s' path", tmp, bin),
               0);
  cr_assert(asprintf(&want, "%s/xdg/taskfs\n", tmp) > 0);
  cr_expect_str_eq(out, want);
  free(out);
  free(want);

  cr_assert_eq(
      tu_sh(&out, "env -u TASKFS_STATE_DIR -u XDG_STATE_HOME HOME='%s/home' '%s' path", tmp, bin),
      0);
  cr_assert(asprintf(&want, "%s/home/.local/state/taskfs\n", tmp) > 0);
  cr_expect_str_eq(out, want);
  free(out);
  free(want);

  /* --state-dir wins over the environment. */
  cr_assert_eq(
      tu_sh(&out, "env TASKFS_STATE_DIR='%s/env' '%s' path --state-dir '%s/flag'", tmp, bin, tmp),
      0);
  cr_assert(asprintf(&want, "%s/flag\n", tmp) > 0);
  cr_expect_str_eq(out, want);
  free(out);
  free(want);

  char *listing;
  tu_sh(&listing, "ls -A '%s'", tmp);
  cr_expect_str_eq(listing, "stderr\n", "path created something: %s", listing);
  free(listing);
}

Test(cli, read_only_verbs_on_a_missing_store_create_nothing) {
  char *out, *err;
  cr_expect_eq(run(&out, &err, "ls --state-dir '%s'", state), 0, "%s", err);
  cr_expect(!strncmp(out, "# ID", 4), "%s", out);
  cr_expect(!strchr(out, '\n') || !strchr(strchr(out, '\n') + 1, '\n'), "rows: %s", out);
  free(out);
  free(err);
  cr_expect_eq(run(&out, NULL, "ls --json --state-dir '%s'", state), 0);
  cr_expect_str_eq(out, "[]\n");
  free(out);
  const char *verbs[] = {"show", "logs", "logs -f", "cancel", "cancel --wait"};
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
    cr_expect_eq(run(NULL, &err, "%s --state-dir '%s' zz000000-aaaaaa", verbs[i], state), 101, "%s",
                 verbs[i]);
    cr_expect(strstr(err, "does not exist"), "%s: %s", verbs[i], err);
    free(err);
  }
  cr_expect_eq(run(&out, NULL, "prune --keep 0 --state-dir '%s'", state), 0);
  cr_expect(!strncmp(out, "deleted 0 tasks", 15), "%s", out);
  free(out);
  cr_expect(!exists(state), "a read-only verb created the store");
}
