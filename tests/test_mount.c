/* The FUSE mount, tested through a real mount of a temporary store: the
 * real taskfs binary (`taskfs mount --foreground`) serves it, and real tools
 * (tail, bash, dash, tee, ls) use it. Every test gets its own store and
 * mount point; the fixture unmounts and kills what it started even when a
 * test fails (Criterion .fini, plus an atexit handler for crashes). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "taskfs/taskfs.h"
#include "tests/helpers/standin.h"
#include "tests/helpers/testutil.h"

#define FUSE_MAGIC 0x65735546
#define MAX_KIDS 64

static char *g_dir;
static char g_state[512], g_mnt[512], g_log[512];
static pid_t g_mount_pid = -1;
static pid_t g_kids[MAX_KIDS]; /* fake supervisors and tools, each its own group */
static int g_nkids;
static tfs_store_t *g_store;

/* Stops every task the test started through `taskfs run`: a stop request
 * first (the supervisor ends its worker's whole group), then, for any that
 * still live after a generous wait, SIGKILL to the supervisor and the
 * worker's process group as the record names them. */
static int none_alive(void *arg) {
  char **ids;
  size_t n;
  int alive = 0;
  if (!g_store || tfs_task_ids(g_store, &ids, &n))
    return 1;
  for (size_t i = 0; i < n; i++)
    alive |= tfs_task_alive(g_store, ids[i]) == 1;
  tfs_ids_free(ids, n);
  return !alive;
}

static void stop_real_tasks(void) {
  char **ids;
  size_t n;
  if (!g_store || tfs_task_ids(g_store, &ids, &n))
    return;
  for (size_t i = 0; i < n; i++)
    if (tfs_task_alive(g_store, ids[i]) == 1)
      tfs_cancel_request(g_store, ids[i], "test cleanup");
  tu_wait_until(none_alive, NULL, 15000);
  for (size_t i = 0; i < n; i++) {
    tfs_record_t rec;
    if (tfs_task_load(g_store, ids[i], &rec))
      continue;
    if (tfs_task_alive(g_store, ids[i]) == 1 && rec.supervisor_pid > 0)
      kill(rec.supervisor_pid, SIGKILL);
    if (rec.worker_pgid > 0)
      kill(-rec.worker_pgid, SIGKILL);
    tfs_record_free(&rec);
  }
  tfs_ids_free(ids, n);
}

static void cleanup(void) {
  stop_real_tasks();
  if (g_mount_pid > 0) {
    kill(-g_mount_pid, SIGTERM);
    for (int i = 0; i < 1000; i++) {
      if (waitpid(g_mount_pid, NULL, WNOHANG) == g_mount_pid) {
        g_mount_pid = -1;
        break;
      }
      usleep(10000);
    }
    if (g_mount_pid > 0) {
      kill(-g_mount_pid, SIGKILL);
      waitpid(g_mount_pid, NULL, 0);
      g_mount_pid = -1;
    }
  }
  if (g_mnt[0])
    umount2(g_mnt, MNT_DETACH);
  for (int i = 0; i < g_nkids; i++) {
    if (g_kids[i] > 0) {
      kill(-g_kids[i], SIGKILL);
      kill(g_kids[i], SIGKILL);
      waitpid(g_kids[i], NULL, 0);
      g_kids[i] = 0;
    }
  }
  g_nkids = 0;
  if (g_store) {
    tfs_store_close(g_store);
    g_store = NULL;
  }
  if (g_dir) {
    /* A failed test leaves the mount log for whoever reads the output. */
    char *log = tu_read_file(g_log, NULL);
    if (log && *log && getenv("TASKFS_TEST_VERBOSE"))
      fprintf(stderr, "--- mount log ---\n%s", log);
    free(log);
    tu_cleanup_dir(g_dir);
    free(g_dir);
    g_dir = NULL;
  }
  g_mnt[0] = 0;
}

static void track(pid_t pid) {
  cr_assert_lt(g_nkids, MAX_KIDS);
  g_kids[g_nkids++] = pid;
}

static int is_mounted(void *arg) {
  struct statfs sf;
  return statfs(g_mnt, &sf) == 0 && sf.f_type == FUSE_MAGIC;
}

static int is_unmounted(void *arg) {
  return !is_mounted(arg);
}

/* Starts `taskfs mount --foreground` on g_mnt in its own process group. */
static void start_mount(void) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    /* If the test process dies (a timeout), the mount unmounts itself. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    int fd = open(g_log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
    }
    execl(tu_taskfs_bin(), "taskfs", "mount", "--foreground", "--state-dir", g_state, g_mnt,
          (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  g_mount_pid = pid;
  cr_assert(tu_wait_until(is_mounted, NULL, 20000), "the mount did not come up");
}

static void setup(void) {
  atexit(cleanup);
  g_dir = tu_tmpdir("mount");
  snprintf(g_state, sizeof g_state, "%s/state", g_dir);
  snprintf(g_mnt, sizeof g_mnt, "%s/mnt", g_dir);
  snprintf(g_log, sizeof g_log, "%s/mount.log", g_dir);
  cr_assert_eq(mkdir(g_mnt, 0700), 0);
  cr_assert_eq(tfs_store_open(g_state, &g_store), 0);
  start_mount();
}

TestSuite(mount, .init = setup, .fini = cleanup, .timeout = 60);

/* ---- helpers --------------------------------------------------------------- */

static void make_task(const char *key, char id[TFS_ID_MAX + 1]) {
  char *argv[] = {"sleep", "100", NULL};
  tfs_task_spec_t spec = {.argv = argv,
                          .cwd = "/",
                          .key = key,
                          .restart = TFS_RESTART_NO,
                          .min_uptime_ms = -1,
                          .max_restarts = -1,
                          .grace_ms = -1};
  int existed = 0;
  cr_assert_eq(tfs_task_create(g_store, &spec, id, &existed), 0);
}

static char *mpath(const char *fmt, const char *id) {
  static char bufs[4][1024];
  static int n;
  char *b = bufs[n++ % 4];
  char rel[512];
  snprintf(rel, sizeof rel, fmt, id);
  snprintf(b, 1024, "%s/%s", g_mnt, rel);
  return b;
}

static void append_line(const char *id, const char *line) {
  int fd = tfs_transcript_open_append(g_store, id);
  cr_assert_geq(fd, 0);
  cr_assert_eq(tfs_transcript_append(fd, line, strlen(line), 1), 0);
  close(fd);
}

/* Starts a real task (`taskfs run`, so a real detached supervisor) running
 * sh -c script; returns once it is running. */
static void real_task(const char *script, char id[TFS_ID_MAX + 1]) {
  char *out = NULL;
  int rc = tu_sh(&out, "'%s' run --state-dir '%s' -- sh -c '%s'", tu_taskfs_bin(), g_state, script);
  cr_assert_eq(rc, 0, "taskfs run failed (%d): %s", rc, out);
  out[strcspn(out, "\n")] = 0;
  cr_assert(tfs_id_valid(out), "taskfs run printed '%s'", out);
  snprintf(id, TFS_ID_MAX + 1, "%s", out);
  free(out);
}

/* A task that prints "before tail", then one line per file dropped into
 * g_dir/go (the line is the file's content), and otherwise sleeps; it ends
 * by itself after a few minutes should a crashed test leave it behind. */
static void talking_task(char id[TFS_ID_MAX + 1]) {
  char script[1024];
  snprintf(script, sizeof script,
           "echo before tail; i=0; while [ $i -lt 3000 ]; do if [ -e %s/go ]; then cat %s/go; "
           "rm -f %s/go; fi; sleep 0.05; i=$((i+1)); done",
           g_dir, g_dir, g_dir);
  real_task(script, id);
}

static int go_consumed(void *arg) {
  char p[600];
  snprintf(p, sizeof p, "%s/go", g_dir);
  return access(p, F_OK) != 0;
}

/* Makes the talking task print a line; returns once it has taken it. */
static void say(const char *line) {
  char p[600], tmp[600];
  snprintf(p, sizeof p, "%s/go", g_dir);
  snprintf(tmp, sizeof tmp, "%s/go.tmp", g_dir);
  cr_assert(tu_wait_until(go_consumed, NULL, 20000));
  char text[512];
  snprintf(text, sizeof text, "%s\n", line);
  cr_assert_eq(tu_write_file(tmp, text, strlen(text)), 0);
  cr_assert_eq(rename(tmp, p), 0);
}

static json_t *read_json(const char *path) {
  char *text = tu_read_file(path, NULL);
  cr_assert_not_null(text, "cannot read %s: %s", path, strerror(errno));
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  cr_assert_not_null(j, "%s is not JSON: %s\n%s", path, jerr.text, text);
  free(text);
  return j;
}

typedef struct {
  const char *path;
  const char *needle;
} contains_t;

static int file_contains(void *arg) {
  contains_t *c = arg;
  char *text = tu_read_file(c->path, NULL);
  int r = text && strstr(text, c->needle);
  free(text);
  return r;
}

static int record_state_is(const char *id, const char *state) {
  json_t *j = read_json(mpath("tasks/%s/record.json", id));
  const char *s = json_string_value(json_object_get(j, "state"));
  int r = s && !strcmp(s, state);
  json_decref(j);
  return r;
}

typedef struct {
  const char *id;
  const char *state;
} state_wait_t;

static int state_reached(void *arg) {
  state_wait_t *w = arg;
  return record_state_is(w->id, w->state);
}

typedef struct {
  const char *path;
  int alive;
} alive_wait_t;

static int owner_alive_is(void *arg) {
  alive_wait_t *w = arg;
  json_t *j = read_json(w->path);
  int r = json_is_boolean(json_object_get(j, "alive")) &&
          json_is_true(json_object_get(j, "alive")) == w->alive;
  json_decref(j);
  return r;
}

static int cancel_requested(const char *id) {
  return tfs_cancel_query(g_store, id, NULL, 0, NULL);
}

/* ---- the tree -------------------------------------------------------------- */

Test(mount, root_layout_and_owner) {
  char *out = NULL;
  cr_assert_eq(tu_sh(&out, "ls -1 '%s'", g_mnt), 0);
  cr_assert_str_eq(out, "by-key\nowner\nqueues\ntasks\n");
  free(out);
  json_t *j = read_json(mpath("owner%s", ""));
  cr_assert(json_is_boolean(json_object_get(j, "alive")));
  json_decref(j);

  /* Files belong to the store's owner, with the documented modes. */
  char id[TFS_ID_MAX + 1];
  make_task(NULL, id);
  struct stat st;
  cr_assert_eq(stat(mpath("tasks/%s", id), &st), 0);
  cr_assert_eq(st.st_mode, S_IFDIR | 0500);
  cr_assert_eq(st.st_uid, getuid());
  cr_assert_eq(stat(mpath("tasks/%s/cancel", id), &st), 0);
  cr_assert_eq(st.st_mode, S_IFREG | 0600);
  cr_assert_eq(stat(mpath("tasks/%s/record.json", id), &st), 0);
  cr_assert_eq(st.st_mode, S_IFREG | 0400);

  /* Watching the mount never made it the store's owner. */
  tfs_owner_t o;
  cr_assert_eq(tfs_store_owner(g_store, &o), -ENOENT);
}

Test(mount, tasks_list_in_creation_order_and_follow_the_store) {
  char ids[5][TFS_ID_MAX + 1];
  /* Ids order by their creation millisecond; 2 ms apart, the order of
   * creation is the only right order. */
  for (int i = 0; i < 4; i++) {
    make_task(NULL, ids[i]);
    usleep(2000);
  }
  char *out = NULL;
  cr_assert_eq(tu_sh(&out, "ls -1 -U '%s/tasks'", g_mnt), 0);
  char want[512] = "";
  for (int i = 0; i < 4; i++)
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s\n", ids[i]);
  cr_assert_str_eq(out, want);
  free(out);

  /* A task created after the mount appears; a forgotten one disappears. */
  make_task(NULL, ids[4]);
  struct stat st;
  cr_assert_eq(stat(mpath("tasks/%s", ids[4]), &st), 0);
  tfs_record_t done;
  cr_assert_eq(tfs_task_load(g_store, ids[0], &done), 0);
  done.state = TFS_COMPLETED; /* only an ended task is forgotten */
  cr_assert_eq(tfs_task_save(g_store, &done), 0);
  tfs_record_free(&done);
  cr_assert_eq(tfs_task_forget(g_store, ids[0]), 0);
  cr_assert_eq(stat(mpath("tasks/%s", ids[0]), &st), -1);
  cr_assert_eq(errno, ENOENT);
  cr_assert_eq(tu_sh(&out, "ls -1 -U '%s/tasks'", g_mnt), 0);
  want[0] = 0;
  for (int i = 1; i < 5; i++)
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s\n", ids[i]);
  cr_assert_str_eq(out, want);
  free(out);

  cr_assert_eq(tu_sh(&out, "ls -1 '%s/tasks/%s'", g_mnt, ids[1]), 0);
  cr_assert_str_eq(out, "cancel\ncontrol\nowner\nrecord.json\ntranscript\n");
  free(out);
}

Test(mount, record_json_is_the_live_record_and_stat_matches_read) {
  char id[TFS_ID_MAX + 1];
  make_task("rec-key", id);
  const char *p = mpath("tasks/%s/record.json", id);
  size_t len;
  char *text = tu_read_file(p, &len);
  cr_assert_not_null(text);
  struct stat st;
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq((size_t)st.st_size, len, "stat says %lld, read gave %zu", (long long)st.st_size,
               len);
  json_t *j = json_loads(text, 0, NULL);
  cr_assert_not_null(j);
  cr_assert_str_eq(json_string_value(json_object_get(j, "id")), id);
  cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "queued");
  json_decref(j);
  free(text);

  /* The by-key symlink resolves to the task. */
  char target[256];
  ssize_t n = readlink(mpath("by-key/%s", "rec-key"), target, sizeof target - 1);
  cr_assert_gt(n, 0);
  target[n] = 0;
  char want[128];
  snprintf(want, sizeof want, "../tasks/%s", id);
  cr_assert_str_eq(target, want);
  j = read_json(mpath("by-key/rec-key/record.json%s", ""));
  cr_assert_str_eq(json_string_value(json_object_get(j, "id")), id);
  json_decref(j);
  char *out;
  cr_assert_eq(tu_sh(&out, "ls -1 '%s/by-key'", g_mnt), 0);
  cr_assert_str_eq(out, "rec-key\n");
  free(out);
  struct stat lst;
  cr_assert_eq(lstat(mpath("by-key/%s", "no-such-key"), &lst), -1);
  cr_assert_eq(errno, ENOENT);
}

/* The record as the mount shows it has the task's limits, how they
 * applied, and what it used: a run that burns 0.2 s of CPU by its own
 * clock. */
Test(mount, record_json_shows_limits_and_use) {
  char *out = NULL;
  int rc = tu_sh(&out,
                 "'%s' run --wait --state-dir '%s' --timeout 1h --limit cpu=60 -- sh -c 'perl -e "
                 "\"1 while (times)[0] < 0.2\"; exit 3' 2>/dev/null",
                 tu_taskfs_bin(), g_state);
  cr_assert_eq(rc, 3, "taskfs run --wait: %d", rc);
  out[strcspn(out, "\n")] = 0;
  json_t *j = read_json(mpath("tasks/%s/record.json", out));
  json_t *lim = json_object_get(j, "limits"), *use = json_object_get(j, "usage");
  json_t *ex = json_array_get(json_object_get(json_object_get(j, "restart"), "exits"), 0);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(lim, "timeout"), "ms")), 3600000);
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(lim, "timeout"), "from")),
                   "given");
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(lim, "cpu"), "via")),
                   "RLIMIT_CPU");
  cr_assert_geq(json_integer_value(json_object_get(use, "cpuUserMs")), 200);
  cr_assert_gt(json_integer_value(json_object_get(use, "maxRssKb")), 0);
  cr_assert(json_is_false(json_object_get(ex, "timedOut")));
  cr_assert_geq(json_integer_value(json_object_get(ex, "cpuUserMs")), 200);
  json_decref(j);
  free(out);
}

Test(mount, transcript_cat_and_sizes_grow) {
  char id[TFS_ID_MAX + 1];
  make_task(NULL, id);
  const char *p = mpath("tasks/%s/transcript", id);
  struct stat st0, st1;
  cr_assert_eq(stat(p, &st0), 0);
  cr_assert_eq(st0.st_size, 0);
  append_line(id, "first line");
  cr_assert_eq(stat(p, &st1), 0);
  cr_assert_eq(st1.st_size, 11);
  /* A transcript larger than one read request streams whole. */
  char big[3000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  for (int i = 0; i < 400; i++)
    append_line(id, big);
  char *out;
  cr_assert_eq(tu_sh(&out, "ls -l '%s' | awk '{print $5}'", p), 0);
  cr_assert_eq(atoll(out), 11 + 400LL * 3000);
  free(out);
  cr_assert_eq(tu_sh(&out, "cat '%s' | wc -c", p), 0);
  cr_assert_eq(atoll(out), 11 + 400LL * 3000);
  free(out);
  cr_assert_eq(tu_sh(&out, "cmp '%s' '%s/tasks/%s/transcript' && echo same", p, g_state, id), 0);
  cr_assert_str_eq(out, "same\n");
  free(out);
}

typedef struct {
  const char *path;
  off_t size;
} size_wait_t;

static int backing_reached(void *arg) {
  size_wait_t *w = arg;
  struct stat st;
  return stat(w->path, &st) == 0 && st.st_size >= w->size;
}

/* A running task's transcript is read in requests as large as a reply can
 * be spliced, and says so in st_blksize (cat reads in such blocks); reads
 * of any size at any offset, across the edges of those requests, give the
 * backing file's bytes while the task still writes. */
Test(mount, large_reads_of_a_growing_transcript_equal_the_backing_file) {
  char id[TFS_ID_MAX + 1], bpath[1024];
  real_task("seq 1 1500000; i=0; while [ $i -lt 3000 ]; do echo tick $i; sleep 0.05; "
            "i=$((i+1)); done",
            id);
  snprintf(bpath, sizeof bpath, "%s/tasks/%s/transcript", g_state, id);
  size_wait_t w = {bpath, 10 << 20};
  cr_assert(tu_wait_until(backing_reached, &w, 60000), "the task did not write 10 MiB");
  struct stat st;
  cr_assert_eq(stat(mpath("tasks/%s/transcript", id), &st), 0);
  off_t R = st.st_blksize;
  cr_assert_geq(R, 128 << 10, "st_blksize %ld: readers would ask in small requests", (long)R);
  cr_assert_eq(R & (R - 1), 0, "st_blksize %ld is no power of two", (long)R);
  int fd = open(mpath("tasks/%s/transcript", id), O_RDONLY);
  int bfd = open(bpath, O_RDONLY);
  cr_assert(fd >= 0 && bfd >= 0);
  const off_t at[][2] = {{0, R},
                         {R - 1, R + 2},
                         {2 * R - 4097, (1 << 20) + 4097},
                         {(1 << 20) - 16385, 1 << 20},
                         {(3 << 20) + 7, (2 << 20) + 1},
                         {(5 << 20) - 1, 3 << 20}};
  char *a = malloc(3 << 20), *b = malloc(3 << 20);
  cr_assert(a && b);
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    ssize_t n = pread(fd, a, (size_t)at[i][1], at[i][0]);
    cr_assert_eq(n, at[i][1], "read of %ld at %ld gave %zd", (long)at[i][1], (long)at[i][0], n);
    cr_assert_eq(pread(bfd, b, (size_t)n, at[i][0]), n);
    cr_assert_eq(memcmp(a, b, (size_t)n), 0, "bytes differ in the read of %ld at %ld",
                 (long)at[i][1], (long)at[i][0]);
  }
  /* Sequentially, in st_blksize blocks, as cat reads it. */
  off_t off = 0;
  ssize_t n;
  while (off < w.size && (n = pread(fd, a, (size_t)R, off)) > 0) {
    cr_assert_eq(pread(bfd, b, (size_t)n, off), n);
    cr_assert_eq(memcmp(a, b, (size_t)n), 0, "bytes differ at %ld", (long)off);
    off += n;
  }
  cr_assert_geq(off, w.size);
  free(a);
  free(b);
  close(fd);
  close(bfd);
}

/* ---- following --------------------------------------------------------------- */

static void tail_follows(const char *flag) {
  char id[TFS_ID_MAX + 1];
  talking_task(id);
  char outpath[600];
  snprintf(outpath, sizeof outpath, "%s/tail.out", g_dir);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    execlp("tail", "tail", flag, "-n", "+1", mpath("tasks/%s/transcript", id), (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  track(pid);
  contains_t c = {outpath, "before tail"};
  cr_assert(tu_wait_until(file_contains, &c, 20000), "tail did not print the existing line");
  say("appended while tail runs");
  c.needle = "appended while tail runs";
  cr_assert(tu_wait_until(file_contains, &c, 20000), "tail %s did not see the appended line", flag);
  say("and another");
  c.needle = "and another";
  cr_assert(tu_wait_until(file_contains, &c, 20000));
}

Test(mount, tail_f_follows_a_running_task) {
  tail_follows("-f");
}

Test(mount, tail_F_follows_a_running_task) {
  tail_follows("-F");
}

/* less +F keeps reading at EOF; run under script(1) for a terminal. */
Test(mount, less_F_follows_a_running_task) {
  if (tu_sh(NULL, "command -v less && command -v script") != 0)
    cr_skip_test("less or script(1) is not installed");
  char id[TFS_ID_MAX + 1];
  talking_task(id);
  contains_t c0 = {mpath("tasks/%s/transcript", id), "before tail"};
  cr_assert(tu_wait_until(file_contains, &c0, 20000));
  char ts[600];
  snprintf(ts, sizeof ts, "%s/less.typescript", g_dir);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int nul = open("/dev/null", O_RDWR);
    dup2(nul, 0);
    dup2(nul, 1);
    dup2(nul, 2);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "less +F '%s'", mpath("tasks/%s/transcript", id));
    setenv("TERM", "xterm", 1);
    execlp("script", "script", "-qfc", cmd, ts, (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  track(pid);
  contains_t c = {ts, "before tail"};
  cr_assert(tu_wait_until(file_contains, &c, 20000), "less did not show the transcript");
  say("seen by less");
  c.needle = "seen by less";
  cr_assert(tu_wait_until(file_contains, &c, 20000), "less +F did not follow");
}

/* A child that makes the talking task print a line after a pause, while
 * the parent waits in poll() or epoll_wait(); without a wake-up from the
 * mount the wait would run out. */
static void say_later(const char *line) {
  cr_assert(tu_wait_until(go_consumed, NULL, 20000));
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    usleep(300 * 1000);
    char p[600], tmp[600], text[512];
    snprintf(p, sizeof p, "%s/go", g_dir);
    snprintf(tmp, sizeof tmp, "%s/go.tmp", g_dir);
    snprintf(text, sizeof text, "%s\n", line);
    _exit(tu_write_file(tmp, text, strlen(text)) || rename(tmp, p) ? 1 : 0);
  }
  track(pid);
}

static void read_to_eof(int fd) {
  char buf[65536];
  while (read(fd, buf, sizeof buf) > 0)
    ;
}

/* Opens a running task's transcript through the mount, non-blocking as an
 * event loop does (such a handle is owed exact readiness: every read of it
 * reaches the mount), and reads it to its end: a poll then finds nothing
 * to read. */
static int open_read_to_end(const char *id) {
  int fd = open(mpath("tasks/%s/transcript", id), O_RDONLY | O_NONBLOCK);
  cr_assert_geq(fd, 0);
  read_to_eof(fd);
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  cr_assert_eq(poll(&pfd, 1, 0), 0, "a running task's read transcript is not readable");
  return fd;
}

/* Starts the talking task and opens its transcript through the mount with
 * flags once its first line is there. */
static int talking_transcript(char id[TFS_ID_MAX + 1], int flags) {
  talking_task(id);
  contains_t c = {mpath("tasks/%s/transcript", id), "before tail"};
  cr_assert(tu_wait_until(file_contains, &c, 20000));
  int fd = open(mpath("tasks/%s/transcript", id), flags);
  cr_assert_geq(fd, 0);
  return fd;
}

/* An epoll on fd (read to its end) finds nothing now, and wakes once the
 * talking task prints line. */
static void epoll_wakes_on_append(int fd, const char *line) {
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
  cr_assert_eq(epoll_wait(ep, &ev, 1, 0), 0, "nothing new: epoll finds nothing");
  say_later(line);
  cr_assert_eq(epoll_wait(ep, &ev, 1, 20000), 1, "epoll did not wake on append");
  close(ep);
}

Test(mount, poll_and_epoll_wake_on_append) {
  char id[TFS_ID_MAX + 1];
  int fd = talking_transcript(id, O_RDONLY | O_NONBLOCK);
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  cr_assert_eq(poll(&pfd, 1, 0), 1, "unread data must be readable");
  read_to_eof(fd);
  cr_assert_eq(poll(&pfd, 1, 0), 0, "nothing new: a running task's transcript is not readable");

  say_later("two");
  cr_assert_eq(poll(&pfd, 1, 20000), 1, "poll did not wake on append");
  cr_assert(pfd.revents & POLLIN);
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf);
  cr_assert_eq(n, 4);
  cr_assert_eq(memcmp(buf, "two\n", 4), 0);

  epoll_wakes_on_append(fd, "three");
  close(fd);
}

/* Reads fd to its end into buf (cap bytes at most) in pieces of step bytes,
 * by read() or, with at >= 0, by pread() from offset at on. */
static size_t read_all(int fd, off_t at, char *buf, size_t cap, size_t step) {
  size_t got = 0;
  ssize_t n;
  while (got < cap) {
    size_t want = cap - got < step ? cap - got : step;
    n = at >= 0 ? pread(fd, buf + got, want, at + (off_t)got) : read(fd, buf + got, want);
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  return got;
}

typedef struct {
  const char *path;
  size_t past, cap;
} grew_t;

/* The file at g->path holds more than g->past bytes (or at least g->cap,
 * past which a round reads no more). */
static int backing_grew(void *arg) {
  grew_t *g = arg;
  struct stat st;
  return !stat(g->path, &st) && ((size_t)st.st_size > g->past || (size_t)st.st_size >= g->cap);
}

/* The page cache never serves a growing transcript stale: while a task
 * writes lines as fast as it can, what a fresh open reads and what one
 * handle kept open across the growth reads again from the start (both in
 * pieces that end mid-page) are always a prefix of the backing file: no
 * zeros of an old last page, no byte that is not there. Each round waits
 * until the transcript has grown past what the one before read. */
Test(mount, cached_reads_of_a_growing_transcript_are_a_prefix_of_the_backing_file) {
  char id[TFS_ID_MAX + 1], script[1024], stop[600], p[1024], bpath[1024];
  snprintf(stop, sizeof stop, "%s/stop-writing", g_dir);
  snprintf(script, sizeof script,
           "i=0; while [ ! -e %s ] && [ $i -lt 3000000 ]; do echo \"line $i of a growing "
           "transcript\"; i=$((i+1)); done",
           stop);
  real_task(script, id);
  snprintf(p, sizeof p, "%s", mpath("tasks/%s/transcript", id));
  snprintf(bpath, sizeof bpath, "%s/tasks/%s/transcript", g_state, id);
  contains_t c = {p, "line 1 "};
  cr_assert(tu_wait_until(file_contains, &c, 20000), "the task did not write");
  size_t cap = 8u << 20;
  char *got = malloc(cap), *back = malloc(cap);
  cr_assert(got && back);
  int kept = open(p, O_RDONLY);
  cr_assert_geq(kept, 0);
  size_t last = 0;
  for (int round = 0; round < 40; round++) {
    int fd = open(p, O_RDONLY);
    cr_assert_geq(fd, 0);
    size_t steps[2] = {3001, 65537};
    for (int k = 0; k < 2; k++) {
      size_t n = k ? read_all(kept, 0, got, cap, steps[k]) : read_all(fd, -1, got, cap, steps[k]);
      int bfd = open(bpath, O_RDONLY);
      cr_assert_geq(bfd, 0);
      size_t b = read_all(bfd, 0, back, n, 1 << 20);
      close(bfd);
      cr_assert_eq(b, n, "round %d: the mount read %zu bytes, the backing file holds %zu", round, n,
                   b);
      cr_assert_eq(memcmp(got, back, n), 0, "round %d: the mount read bytes the file does not hold",
                   round);
      last = n;
    }
    close(fd);
    /* The next round reads a longer transcript: its growth is awaited (an
     * event), never assumed from the time a round takes. */
    grew_t g = {bpath, last, cap};
    cr_assert(tu_wait_until(backing_grew, &g, 20000), "round %d: the task stopped writing", round);
  }
  cr_assert_eq(tu_write_file(stop, "", 0), 0);
  state_wait_t w = {id, "completed"};
  cr_assert(tu_wait_until(state_reached, &w, 60000), "the task did not end");
  size_t n = read_all(kept, 0, got, cap, 3001), blen;
  char *whole = tu_read_file(bpath, &blen);
  cr_assert_not_null(whole);
  if (blen <= cap) {
    cr_assert_eq(n, blen, "the kept handle reads %zu of %zu bytes at the end", n, blen);
    cr_assert_eq(memcmp(got, whole, n), 0);
  }
  free(whole);
  close(kept);
  free(got);
  free(back);
}

/* A blocking handle (cat, less, a script's open()) reads through the page
 * cache, whose answers never reach the mount: poll cannot know how far it
 * has read, so it says readable once per growth. A follower that reads to
 * the end after each wake-up misses nothing and never spins there. */
Test(mount, a_blocking_handle_polls_readable_once_per_growth) {
  char id[TFS_ID_MAX + 1];
  int fd = talking_transcript(id, O_RDONLY);
  read_to_eof(fd);
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  (void)poll(&pfd, 1, 0); /* readable or not: the page cache may have answered the reads */
  cr_assert_eq(poll(&pfd, 1, 0), 0, "nothing new since poll last answered: not readable");

  say_later("two");
  cr_assert_eq(poll(&pfd, 1, 20000), 1, "poll did not wake on append");
  char buf[64];
  cr_assert_eq(read(fd, buf, sizeof buf), 4);
  cr_assert_eq(memcmp(buf, "two\n", 4), 0);
  cr_assert_eq(read(fd, buf, sizeof buf), 0);
  cr_assert_eq(poll(&pfd, 1, 0), 0, "read to the end: not readable");

  epoll_wakes_on_append(fd, "three");
  cr_assert_eq(read(fd, buf, sizeof buf), 6);
  cr_assert_eq(memcmp(buf, "three\n", 6), 0);
  close(fd);
}

/* Reads fd from off to its end into buf (cap bytes at most); returns the
 * count. */
static size_t read_from(int fd, off_t off, char *buf, size_t cap) {
  return read_all(fd, off, buf, cap, cap);
}

typedef struct {
  int fd;
  const char *want;
} grown_t;

static int fd_shows(void *arg) {
  grown_t *g = arg;
  char buf[4096];
  size_t n = read_from(g->fd, 0, buf, sizeof buf - 1);
  buf[n] = 0;
  return strstr(buf, g->want) != NULL;
}

/* A transcript is read through the page cache, and never stale: while the
 * task runs it grows under the reader (a read past the size the kernel
 * knows asks again, and a new size drops the cached pages) and stat
 * follows it; once the task has ended it no longer changes: the pages a
 * read brought in stay resident, and every handle reads the backing
 * file's bytes. */
Test(mount, transcript_is_cached_yet_fresh_while_it_grows_and_once_ended) {
  char id[TFS_ID_MAX + 1], p[1024], bpath[1024];
  talking_task(id);
  snprintf(p, sizeof p, "%s", mpath("tasks/%s/transcript", id));
  snprintf(bpath, sizeof bpath, "%s/tasks/%s/transcript", g_state, id);
  contains_t c = {p, "before tail"};
  cr_assert(tu_wait_until(file_contains, &c, 20000));
  int running = open(p, O_RDONLY);
  cr_assert_geq(running, 0);
  char buf[8192];
  cr_assert_eq(read_from(running, 0, buf, sizeof buf), 12);
  /* A blocking handle reads through the page cache while the task runs. */
  void *rmap = mmap(NULL, 12, PROT_READ, MAP_SHARED, running, 0);
  cr_assert_neq(rmap, MAP_FAILED, "a running transcript read by a blocking handle is not cached");
  unsigned char rres = 0;
  cr_assert_eq(mincore(rmap, 12, &rres), 0);
  cr_assert(rres & 1, "the running transcript's page is not in the page cache");
  munmap(rmap, 12);
  /* It grows while this handle is open: the same handle sees the new
   * bytes (the last page is never served stale), stat agrees. */
  for (int i = 0; i < 3; i++) {
    char line[64];
    snprintf(line, sizeof line, "grown %d", i);
    say(line);
    grown_t g = {running, line};
    cr_assert(tu_wait_until(fd_shows, &g, 20000), "the open handle did not see '%s'", line);
    struct stat st, back;
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(stat(bpath, &back), 0);
    cr_assert_eq(st.st_size, back.st_size);
  }
  tfs_cancel_request(g_store, id, "test");
  state_wait_t w = {id, "cancelled"};
  cr_assert(tu_wait_until(state_reached, &w, 20000), "the task did not end");

  size_t blen;
  char *backing = tu_read_file(bpath, &blen);
  cr_assert_not_null(backing);
  int ended = open(p, O_RDONLY);
  cr_assert_geq(ended, 0);
  for (int round = 0; round < 2; round++) { /* the second from the cache */
    cr_assert_eq(read_from(ended, 0, buf, sizeof buf), blen);
    cr_assert_eq(memcmp(buf, backing, blen), 0);
  }
  cr_assert_eq(read_from(running, 0, buf, sizeof buf), blen, "the older handle reads it all");
  cr_assert_eq(memcmp(buf, backing, blen), 0);
  struct pollfd epfd = {.fd = ended, .events = POLLIN};
  cr_assert_eq(poll(&epfd, 1, 0), 1, "an ended task's transcript polls readable");
  void *map = mmap(NULL, blen, PROT_READ, MAP_SHARED, ended, 0);
  cr_assert_neq(map, MAP_FAILED, "%s", strerror(errno));
  unsigned char resident = 0;
  cr_assert_eq(mincore(map, blen, &resident), 0);
  cr_assert(resident & 1, "the ended transcript's page is not in the page cache");
  cr_assert_eq(memcmp(map, backing, blen), 0);
  munmap(map, blen);
  free(backing);
  close(ended);
  close(running);
}

/* ---- cancel --------------------------------------------------------------- */

static void cancel_by_shell(const char *cmdline_fmt) {
  char id[TFS_ID_MAX + 1];
  real_task("sleep infinity", id);
  char *out;
  cr_assert_eq(tu_sh(&out, "cat '%s'", mpath("tasks/%s/cancel", id)), 0);
  cr_assert_str_eq(out, "0\n");
  free(out);
  int rc = tu_sh(NULL, cmdline_fmt, mpath("tasks/%s/cancel", id));
  cr_assert_eq(rc, 0, "the shell command failed (%d)", rc);
  state_wait_t w = {id, "cancelled"};
  cr_assert(tu_wait_until(state_reached, &w, 20000), "the task did not end cancelled");
  alive_wait_t aw = {mpath("tasks/%s/owner", id), 0};
  cr_assert(tu_wait_until(owner_alive_is, &aw, 20000), "the supervisor should have ended");
  cr_assert_eq(tu_sh(&out, "cat '%s'", mpath("tasks/%s/cancel", id)), 0);
  cr_assert_eq(strncmp(out, "1 ", 2), 0, "cancel reads '%s'", out);
  cr_assert(strstr(out, "mount uid"), "cancel reads '%s'", out);
  free(out);
}

Test(mount, cancel_echo_from_bash) {
  cancel_by_shell("bash -c 'echo 1 > \"$0\"' '%s'");
}

Test(mount, cancel_echo_from_dash) {
  cancel_by_shell("dash -c 'echo 1 > \"$0\"' '%s'");
}

Test(mount, cancel_printf) {
  cancel_by_shell("bash -c 'printf 1 > \"$0\"' '%s'");
}

Test(mount, cancel_tee) {
  cancel_by_shell("bash -c 'echo 1 | tee \"$0\" >/dev/null' '%s'");
}

Test(mount, cancel_append) {
  cancel_by_shell("bash -c 'echo 1 >> \"$0\"' '%s'");
}

Test(mount, cancel_garbage_is_einval_and_records_nothing) {
  char id[TFS_ID_MAX + 1];
  real_task("sleep infinity", id);
  const char *p = mpath("tasks/%s/cancel", id);
  const char *bad[] = {"0", "0\n", "yes", "yes\n", "11", "1 ", "\n", "1\n\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int fd = open(p, O_WRONLY | O_TRUNC);
    cr_assert_geq(fd, 0);
    errno = 0;
    cr_assert_eq(write(fd, bad[i], strlen(bad[i])), -1, "'%s' was accepted", bad[i]);
    cr_assert_eq(errno, EINVAL);
    close(fd);
  }
  int fd = open(p, O_WRONLY | O_TRUNC);
  const unsigned char bin[] = {0x31, 0x00, 0xff};
  cr_assert_eq(write(fd, bin, sizeof bin), -1);
  cr_assert_eq(errno, EINVAL);
  close(fd);
  /* Empty: open and close without a write fails at close(). */
  fd = open(p, O_WRONLY | O_TRUNC);
  cr_assert_geq(fd, 0);
  cr_assert_eq(close(fd), -1);
  cr_assert_eq(errno, EINVAL);
  cr_assert_neq(tu_sh(NULL, "bash -c 'echo yes > \"$0\"' '%s' 2>/dev/null", p), 0);
  cr_assert_eq(cancel_requested(id), 0, "garbage recorded a stop request");
  cr_assert(record_state_is(id, "running"));
}

Test(mount, cancel_of_a_finished_task_is_esrch) {
  char id[TFS_ID_MAX + 1];
  make_task(NULL, id);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(g_store, id, &rec), 0);
  rec.state = TFS_COMPLETED;
  rec.exit_code = 0;
  rec.ended_ms = tfs_now_ms();
  cr_assert_eq(tfs_task_save(g_store, &rec), 0);
  tfs_record_free(&rec);
  int fd = open(mpath("tasks/%s/cancel", id), O_WRONLY | O_TRUNC);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "1\n", 2), -1);
  cr_assert_eq(errno, ESRCH);
  close(fd);
  cr_assert_eq(cancel_requested(id), 0);
}

/* Files belong to the mount's user, whose store it is; a store that stops
 * being theirs while mounted (here chowned away) is refused: nothing of it
 * shows, no stop request reaches it, until it is theirs again. */
Test(mount, a_store_that_stops_being_ours_is_refused_until_it_is_again) {
  char id[TFS_ID_MAX + 1];
  real_task("sleep infinity", id);
  struct stat st;
  cr_assert_eq(stat(mpath("tasks/%s/cancel", id), &st), 0);
  cr_assert_eq(st.st_uid, geteuid());
  char tasks[600];
  snprintf(tasks, sizeof tasks, "%s/tasks", g_state);
  cr_assert_eq(chown(tasks, 65534, 65534), 0);
  errno = 0;
  cr_assert_eq(open(mpath("tasks/%s/cancel", id), O_WRONLY | O_TRUNC), -1);
  cr_assert_eq(errno, ENOENT);
  cr_assert_neq(
      tu_sh(NULL, "bash -c 'echo 1 > \"$0\"' '%s' 2>/dev/null", mpath("tasks/%s/cancel", id)), 0);
  cr_assert_eq(cancel_requested(id), 0);
  cr_assert_eq(chown(tasks, getuid(), getgid()), 0);
  int fd = open(mpath("tasks/%s/cancel", id), O_WRONLY | O_TRUNC);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "1", 1), 1);
  close(fd);
  state_wait_t w = {id, "cancelled"};
  cr_assert(tu_wait_until(state_reached, &w, 20000));
}

/* ---- errors --------------------------------------------------------------- */

Test(mount, every_forbidden_operation_has_its_errno) {
  char id[TFS_ID_MAX + 1];
  make_task(NULL, id);
  errno = 0;
  cr_assert_eq(open(mpath("tasks/%s/record.json", id), O_WRONLY), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(open(mpath("tasks/%s/transcript", id), O_RDWR), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(open(mpath("tasks/%s/owner", id), O_WRONLY | O_APPEND), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(open(mpath("owner%s", ""), O_WRONLY), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(open(mpath("tasks/%s/newfile", id), O_WRONLY | O_CREAT, 0600), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(unlink(mpath("tasks/%s/record.json", id)), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(rmdir(mpath("tasks/%s", id)), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(rename(mpath("tasks/%s/record.json", id), mpath("tasks/%s/x", id)), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(mkdir(mpath("tasks/%s/d", id), 0700), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(mkdir(mpath("tasks/%s", "newdir"), 0700), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(symlink("x", mpath("tasks/%s/l", id)), -1);
  cr_assert_eq(errno, EACCES);
  cr_assert_eq(chmod(mpath("tasks/%s/record.json", id), 0644), -1);
  cr_assert_eq(errno, EPERM);
  cr_assert_eq(truncate(mpath("tasks/%s/transcript", id), 0), -1);
  cr_assert_eq(errno, EACCES);

  /* Unknown and hostile names. */
  struct stat st;
  cr_assert_eq(stat(mpath("tasks/%s", "zzzzzzzz-zzzzzz"), &st), -1);
  cr_assert_eq(errno, ENOENT);
  cr_assert_eq(open(mpath("tasks/%s/record.json", "zzzzzzzz-zzzzzz"), O_RDONLY), -1);
  cr_assert_eq(errno, ENOENT);
  cr_assert_eq(stat(mpath("tasks/%s/nope", id), &st), -1);
  cr_assert_eq(errno, ENOENT);
  cr_assert_eq(stat(mpath("tasks/%s", "..%2f"), &st), -1);
  cr_assert_eq(errno, ENOENT);
  cr_assert_eq(stat(mpath("by-key/%s", "bad key"), &st), -1);
  cr_assert_eq(errno, ENOENT);
  char longname[300];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  cr_assert_eq(stat(mpath("tasks/%s", longname), &st), -1);
  cr_assert_eq(errno, ENAMETOOLONG);
  cr_assert_eq(stat(mpath("nothing%s", ""), &st), -1);
  cr_assert_eq(errno, ENOENT);
}

/* ---- owner and liveness ------------------------------------------------------ */

Test(mount, owner_is_decided_by_the_lock_and_a_supervisor_killed_mid_write_reads_lost) {
  char id[TFS_ID_MAX + 1], id2[TFS_ID_MAX + 1];
  /* It floods until the test is done with it (the file flood-done), not
   * for a count of lines: a fast machine finished 3 million of them
   * before the kill. The teardown ends its group should the test fail. */
  char script[1024];
  snprintf(script, sizeof script,
           "i=0; while [ ! -e %s/flood-done ]; do echo line $i; i=$((i+1)); done", g_dir);
  real_task(script, id);
  real_task("sleep infinity", id2);
  json_t *j = read_json(mpath("tasks/%s/owner", id));
  json_int_t sup = json_integer_value(json_object_get(j, "pid"));
  cr_assert_gt(sup, 1);
  cr_assert(json_is_string(json_object_get(j, "host")));
  cr_assert(strstr(json_string_value(json_object_get(j, "exe")), "taskfs"));
  cr_assert(json_is_true(json_object_get(j, "alive")));
  cr_assert(json_is_string(json_object_get(j, "started")));
  json_decref(j);
  cr_assert(record_state_is(id, "running"));

  /* Killed while its worker floods the transcript. */
  struct stat st;
  cr_assert_eq(stat(mpath("tasks/%s/transcript", id), &st), 0);
  cr_assert_eq(kill((pid_t)sup, SIGKILL), 0);
  alive_wait_t w = {mpath("tasks/%s/owner", id), 0};
  cr_assert(tu_wait_until(owner_alive_is, &w, 20000), "owner still reads alive");
  cr_assert(record_state_is(id, "lost"));
  cr_assert(record_state_is(id2, "running"), "the other task is untouched");
  char *out;
  cr_assert_eq(tu_sh(&out, "grep -c '^line ' '%s'", mpath("tasks/%s/transcript", id)), 0);
  cr_assert_gt(atol(out), 0);
  free(out);
  /* A lost task's transcript polls readable (the reader will see EOF). */
  int fd = open(mpath("tasks/%s/transcript", id), O_RDONLY);
  cr_assert_geq(fd, 0);
  read_to_eof(fd);
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  cr_assert_eq(poll(&pfd, 1, 20000), 1, "an ended task's transcript must poll readable");
  close(fd);
  char done[600];
  snprintf(done, sizeof done, "%s/flood-done", g_dir);
  cr_assert_eq(tu_write_file(done, "", 0), 0);
}

/* Kills pid after a pause, from a child, while the test sleeps in poll(). */
static void kill_later(pid_t pid) {
  pid_t k = fork();
  cr_assert_geq(k, 0);
  if (k == 0) {
    usleep(300 * 1000);
    _exit(kill(pid, SIGKILL) ? 1 : 0);
  }
  track(k);
}

/* A supervisor that dies without a word (no record, no output) leaves its
 * task lost: a poller on its transcript is woken by the watch's tick and
 * sees EOF. */
Test(mount, poll_wakes_when_a_supervisor_dies_without_a_word) {
  char id[TFS_ID_MAX + 1];
  make_task(NULL, id);
  append_line(id, "said before");
  pid_t sup = tu_standin_supervisor(g_state, id, 0); /* it never writes a byte */
  cr_assert_gt(sup, 0);
  track(sup);
  int fd = open_read_to_end(id);
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  kill_later(sup);
  /* When its timeout runs out, poll() asks the file once more, and the
   * task reads lost by then: only a return well before the timeout shows
   * that the mount woke the poller. */
  int64_t t0 = tfs_now_ms();
  cr_assert_eq(poll(&pfd, 1, 30000), 1, "poll did not wake when the supervisor died");
  cr_assert_lt(tfs_now_ms() - t0, 25000, "poll was not woken, it timed out");
  char buf[16];
  cr_assert_eq(read(fd, buf, sizeof buf), 0, "a lost task's transcript is at its end");
  cr_assert(record_state_is(id, "lost"));
  close(fd);
}

/* How many inotify instances process pid holds. */
static int inotify_fds(pid_t pid) {
  char path[64], target[64];
  int n = 0;
  for (int fd = 0; fd < 1024; fd++) {
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    ssize_t len = readlink(path, target, sizeof target - 1);
    if (len > 0) {
      target[len] = 0;
      n += strcmp(target, "anon_inode:inotify") == 0;
    }
  }
  return n;
}

/* TASKFS_NO_INOTIFY is read by the mount as by every other face: it keeps
 * no inotify instance, and a poll is still woken, by the tick. */
Test(mount, without_inotify_poll_still_wakes_on_append) {
  cr_expect_eq(inotify_fds(g_mount_pid), 1, "the mount's one store watch");
  kill(-g_mount_pid, SIGTERM);
  waitpid(g_mount_pid, NULL, 0);
  g_mount_pid = -1;
  cr_assert(tu_wait_until(is_unmounted, NULL, 20000));
  setenv("TASKFS_NO_INOTIFY", "1", 1);
  start_mount();
  unsetenv("TASKFS_NO_INOTIFY");
  cr_expect_eq(inotify_fds(g_mount_pid), 0, "TASKFS_NO_INOTIFY=1, yet the mount uses inotify");

  char id[TFS_ID_MAX + 1];
  talking_task(id);
  contains_t c = {mpath("tasks/%s/transcript", id), "before tail"};
  cr_assert(tu_wait_until(file_contains, &c, 20000));
  int fd = open_read_to_end(id);
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  say_later("late");
  cr_assert_eq(poll(&pfd, 1, 20000), 1, "poll did not wake on append without inotify");
  char buf[64];
  cr_assert_eq(read(fd, buf, sizeof buf), 5);
  cr_assert_eq(memcmp(buf, "late\n", 5), 0);
  close(fd);
}

/* ---- hostile stores ------------------------------------------------------------ */

Test(mount, a_corrupt_record_is_eio_and_still_listed) {
  char id[TFS_ID_MAX + 1], good[TFS_ID_MAX + 1];
  make_task(NULL, id);
  make_task(NULL, good);
  char p[1024];
  snprintf(p, sizeof p, "%s/tasks/%s/record.json", g_state, id);
  cr_assert_eq(tu_write_file(p, "{\"v\": 1, \"id\": tru", 18), 0);
  char *out;
  cr_assert_eq(tu_sh(&out, "ls -1 '%s/tasks'", g_mnt), 0);
  cr_assert(strstr(out, id), "a corrupt task must still list");
  free(out);
  cr_assert_eq(open(mpath("tasks/%s/record.json", id), O_RDONLY), -1);
  cr_assert_eq(errno, EIO);
  cr_assert_eq(tu_sh(NULL, "ls -l '%s/tasks/%s' >/dev/null", g_mnt, id), 0);
  cr_assert(record_state_is(good, "queued"), "the mount must stay up");
  /* A FIFO planted as a transcript must not hang the mount. */
  snprintf(p, sizeof p, "%s/tasks/%s/transcript", g_state, good);
  cr_assert_eq(mkfifo(p, 0600), 0);
  cr_assert_eq(open(mpath("tasks/%s/transcript", good), O_RDONLY), -1);
  cr_assert_eq(errno, EIO);
  cr_assert(record_state_is(good, "queued"), "the mount must stay up");
  contains_t c = {g_log, "corrupt"};
  cr_assert(tu_wait_until(file_contains, &c, 5000), "no log line about the corrupt record");
}

Test(mount, the_store_removed_and_recreated_under_the_mount) {
  char id[TFS_ID_MAX + 1], id2[TFS_ID_MAX + 1];
  make_task(NULL, id);
  struct stat st;
  cr_assert_eq(stat(mpath("tasks/%s", id), &st), 0);
  tfs_store_close(g_store);
  g_store = NULL;
  tu_rmrf(g_state);
  char *out;
  cr_assert_eq(tu_sh(&out, "ls -A '%s/tasks'", g_mnt), 0);
  cr_assert_str_eq(out, "");
  free(out);
  cr_assert_eq(stat(mpath("tasks/%s", id), &st), -1);
  cr_assert_eq(tfs_store_open(g_state, &g_store), 0);
  make_task(NULL, id2);
  cr_assert_eq(tu_sh(&out, "ls -1 '%s/tasks'", g_mnt), 0);
  char want[64];
  snprintf(want, sizeof want, "%s\n", id2);
  cr_assert_str_eq(out, want);
  free(out);
  cr_assert(record_state_is(id2, "queued"));
}

Test(mount, thousands_of_tasks_list_whole_and_in_order, .timeout = 120) {
  enum { N = 2000 };
  for (int i = 0; i < N; i++) {
    char id[TFS_ID_MAX + 1];
    make_task(NULL, id);
  }
  char **ids;
  size_t n;
  cr_assert_eq(tfs_task_ids(g_store, &ids, &n), 0);
  cr_assert_eq(n, N);
  char *out;
  cr_assert_eq(tu_sh(&out, "ls -1 -U '%s/tasks'", g_mnt), 0);
  char *p = out;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(ids[i]);
    cr_assert_eq(strncmp(p, ids[i], l), 0, "entry %zu out of order", i);
    cr_assert_eq(p[l], '\n');
    p += l + 1;
  }
  cr_assert_eq(*p, 0);
  free(out);
  cr_assert(record_state_is(ids[n / 2], "queued"));
  tfs_ids_free(ids, n);
}

/* ---- the verb ------------------------------------------------------------------ */

Test(mount, daemon_mode_reports_mounted_and_umount_works) {
  char other[600];
  snprintf(other, sizeof other, "%s/other", g_dir);
  cr_assert_eq(mkdir(other, 0700), 0);
  char *out;
  int rc = tu_sh(&out, "'%s' mount --state-dir '%s' '%s' && ls -A '%s/tasks' && echo listed",
                 tu_taskfs_bin(), g_state, other, other);
  cr_assert_eq(rc, 0);
  cr_assert(strstr(out, "listed"));
  free(out);
  /* A second mount on a live one is refused, not stacked. */
  rc = tu_sh(&out, "'%s' mount --state-dir '%s' '%s' 2>&1", tu_taskfs_bin(), g_state, other);
  cr_assert_neq(rc, 0);
  cr_assert(strstr(out, "already"), "%s", out);
  free(out);
  cr_assert_eq(tu_sh(NULL, "'%s' umount '%s'", tu_taskfs_bin(), other), 0);
  struct statfs sf;
  cr_assert_eq(statfs(other, &sf), 0);
  cr_assert_neq(sf.f_type, FUSE_MAGIC);

  /* A missing mount point is reported before returning. */
  rc = tu_sh(&out, "'%s' mount --state-dir '%s' '%s/none' 2>&1", tu_taskfs_bin(), g_state, g_dir);
  cr_assert_neq(rc, 0);
  cr_assert(strstr(out, "does not exist"), "%s", out);
  free(out);
}

Test(mount, sigterm_unmounts_and_one_umount_clears_a_dead_mount) {
  kill(g_mount_pid, SIGTERM);
  cr_assert_eq(waitpid(g_mount_pid, NULL, 0), g_mount_pid);
  g_mount_pid = -1;
  cr_assert(tu_wait_until(is_unmounted, NULL, 5000), "SIGTERM did not unmount");

  /* A mount whose process was killed leaves a dead mount (a new mount
   * clears it: tests/test_mount_point.c); one umount clears it too. */
  start_mount();
  kill(g_mount_pid, SIGKILL);
  waitpid(g_mount_pid, NULL, 0);
  g_mount_pid = -1;
  cr_assert_eq(tu_sh(NULL, "'%s' umount '%s'", tu_taskfs_bin(), g_mnt), 0);
  struct stat st;
  cr_assert_eq(stat(g_mnt, &st), 0);
  start_mount();
}

/* `make run`: the main job mounts the default store at the default mount
 * point (here under a temporary XDG_RUNTIME_DIR) and tells what to try. */
Test(mount, run_main_script_mounts_the_default_store) {
  char *out;
  int rc = tu_sh(&out,
                 "XDG_RUNTIME_DIR='%s' TASKFS_STATE_DIR='%s' sh scripts/run-main.sh '%s' 2>&1 && "
                 "ls -A '%s/taskfs/tasks' && echo listed",
                 g_dir, g_state, tu_taskfs_bin(), g_dir);
  char mnt2[600];
  snprintf(mnt2, sizeof mnt2, "%s/taskfs", g_dir);
  struct statfs sf;
  int mounted = statfs(mnt2, &sf) == 0 && sf.f_type == FUSE_MAGIC;
  tu_sh(NULL, "'%s' umount '%s'", tu_taskfs_bin(), mnt2);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(mounted);
  cr_assert(strstr(out, "tail -f"), "%s", out);
  cr_assert(strstr(out, "/cancel"), "%s", out);
  cr_assert(strstr(out, "umount"), "%s", out);
  cr_assert(strstr(out, "listed"), "%s", out);
  free(out);
}
