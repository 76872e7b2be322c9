/* Helpers shared by the hardening tests (tests/test_hard_*.c): a private
 * store per test, running the real taskfs binary and its long-lived
 * processes (mount, MCP server) with pipes, a numbered-line worker, checks
 * of the store's invariants, and a teardown that removes every process,
 * mount and directory a test made even when it failed.
 *
 * Header-only (static functions) so that each test binary carries its own
 * copy and the shared Makefile rules need no change.
 *
 * Sizes: TASKFS_FULL=1 selects the long versions (>= 200 kill rounds per
 * process kind); TASKFS_KILL_ROUNDS=N overrides the round count. */
#ifndef TASKFS_TESTS_HARD_H
#define TASKFS_TESTS_HARD_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "taskfs/taskfs.h"
#include "tests/helpers/testutil.h"

#define HH_MAX_MOUNTS 16
#define HH_UNUSED __attribute__((unused))

/* Under `make asan` LeakSanitizer checks the taskfs processes; the test
 * programs' own allocations (freed or not when a test ends) are not the
 * product's, so leak checking is off in them. */
__attribute__((used)) const char *__asan_default_options(void) {
  return "detect_leaks=0";
}

/* ---- strace fault injection -------------------------------------------- */

/* The fault tests run taskfs under strace to inject errors and kills.
 * LeakSanitizer cannot run under ptrace (it aborts with "LeakSanitizer has
 * encountered a fatal error" and a log that fails `make asan`), so a
 * process started through HH_STRACE has leak checking off; the same
 * command runs leak-checked in every other test. */
#define HH_STRACE                                                                                  \
  "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" strace -qq -o /dev/null "

static HH_UNUSED int hh_have_strace(void) {
  return access("/usr/bin/strace", X_OK) == 0;
}

/* ---- the numbered-line worker ------------------------------------------ */

/* The test binary doubles as the worker of the kill -9 matrix: run as
 * `<test> --hh-worker COUNTFILE DELAY_US [LIMIT]` it writes "seq=N\n" to
 * stdout for N = 1, 2, ... with one write() each, and after each successful
 * write appends "N\n" to COUNTFILE, so the file's last complete line is the
 * number of lines it has certainly handed to its stdout. LIMIT > 0 makes it
 * exit 0 after LIMIT lines. A failed write (the supervisor died: EPIPE)
 * ends it with status 3. glibc passes argc/argv to constructors, which lets
 * this run before Criterion's main. */
__attribute__((constructor)) static void hh_worker_ctor(int argc, char **argv, char **envp) {
  (void)envp;
  if (argc < 4 || strcmp(argv[1], "--hh-worker"))
    return;
  int cfd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  long delay = atol(argv[3]);
  long limit = argc > 4 ? atol(argv[4]) : 0;
  char buf[64];
  if (cfd < 0)
    _exit(2);
  for (long i = 1; limit <= 0 || i <= limit; i++) {
    int n = snprintf(buf, sizeof buf, "seq=%ld\n", i);
    if (write(1, buf, (size_t)n) != n)
      _exit(3);
    n = snprintf(buf, sizeof buf, "%ld\n", i);
    if (write(cfd, buf, (size_t)n) != n)
      _exit(4);
    if (delay > 0)
      usleep((useconds_t)delay);
  }
  _exit(0);
}

/* ---- context and teardown ------------------------------------------------ */

typedef struct {
  char *root;  /* private temporary directory of this test */
  char *store; /* root/store: TASKFS_STATE_DIR of everything started */
  char *self;  /* absolute path of this test binary (the worker) */
  char *mounts[HH_MAX_MOUNTS];
  int nmounts;
} hh_ctx_t;

static hh_ctx_t hh;

static HH_UNUSED int hh_full(void) {
  const char *f = getenv("TASKFS_FULL");
  return f && *f && strcmp(f, "0");
}

static HH_UNUSED int hh_rounds(int ci, int full) {
  const char *r = getenv("TASKFS_KILL_ROUNDS");
  if (r && atoi(r) > 0)
    return atoi(r);
  return hh_full() ? full : ci;
}

/* A generous per-operation timeout: sanitized builds are slower. */
static HH_UNUSED int hh_timeout_ms(void) {
  return getenv("TASKFS_SANITIZED") ? 60000 : 30000;
}

static HH_UNUSED int64_t hh_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static HH_UNUSED void hh_sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static HH_UNUSED char *hh_vstrdupf(const char *fmt, va_list ap) {
  char *s;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  return s;
}

static HH_UNUSED char *hh_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static HH_UNUSED char *hh_strdupf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = hh_vstrdupf(fmt, ap);
  va_end(ap);
  return s;
}

/* Reads a whole file into a NUL-terminated buffer (NULL if it cannot be
 * opened); *len gets its size. */
static HH_UNUSED char *hh_slurp(const char *path, size_t *len) {
  return tu_read_file(path, len);
}

/* Does /proc/<pid> belong to one of this test's processes? They all carry
 * the test's root directory in their environment (TASKFS_STATE_DIR and
 * HH_MARK) or on their command line. */
static HH_UNUSED int hh_proc_is_ours(pid_t pid) {
  char path[64], *buf;
  size_t len;
  int ours = 0;
  if (pid == getpid())
    return 0;
  for (int pass = 0; pass < 2 && !ours; pass++) {
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, pass ? "cmdline" : "environ");
    if (!(buf = tu_read_file(path, &len)))
      continue;
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
      if (strstr(buf + i, hh.root)) {
        ours = 1;
        break;
      }
    free(buf);
  }
  return ours;
}

/* 1 if /proc/<pid> (its stat text) is a zombie: gone already, its parent
 * reaps it. */
static HH_UNUSED int hh_proc_zombie(pid_t pid) {
  char st[64];
  snprintf(st, sizeof st, "/proc/%d/stat", (int)pid);
  char *s = tu_read_file(st, NULL);
  char *rp = s ? strrchr(s, ')') : NULL;
  int z = rp && rp[1] && rp[2] == 'Z';
  free(s);
  return z;
}

/* SIGKILLs every live process for which match(pid, arg) holds until none
 * is left. */
static HH_UNUSED void hh_kill_where(int (*match)(pid_t, void *), void *arg) {
  for (int pass = 0; pass < 100; pass++) {
    int found = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    if (!d)
      return;
    while ((e = readdir(d))) {
      pid_t pid = (pid_t)atoi(e->d_name);
      if (pid > 1 && match(pid, arg) && !hh_proc_zombie(pid)) {
        kill(pid, SIGKILL);
        found = 1;
      }
    }
    closedir(d);
    while (waitpid(-1, NULL, WNOHANG) > 0)
      ;
    if (!found)
      return;
    hh_sleep_ms(20);
  }
}

static HH_UNUSED int hh_match_ours(pid_t pid, void *arg) {
  return hh_proc_is_ours(pid);
}

/* SIGKILLs every process of this test (supervisors and workers included,
 * which live in sessions of their own) until none is left. */
static HH_UNUSED void hh_kill_ours(void) {
  if (hh.root)
    hh_kill_where(hh_match_ours, NULL);
}

static HH_UNUSED void hh_register_mount(const char *mnt) {
  if (hh.nmounts < HH_MAX_MOUNTS)
    hh.mounts[hh.nmounts++] = strdup(mnt);
}

/* Criterion .fini of every hardening suite: processes first (a mount
 * cannot go while its daemon is stopped in a syscall), then mounts, then
 * the directory. */
static HH_UNUSED void hh_teardown(void) {
  if (!hh.root)
    return;
  hh_kill_ours();
  for (int i = hh.nmounts - 1; i >= 0; i--) {
    umount2(hh.mounts[i], MNT_DETACH);
    free(hh.mounts[i]);
  }
  hh.nmounts = 0;
  chmod(hh.store, 0700);
  tu_cleanup_dir(hh.root);
  free(hh.root);
  free(hh.store);
  free(hh.self);
  memset(&hh, 0, sizeof hh);
}

/* A test that Criterion killed on its timeout never ran its .fini: its
 * processes, mounts and directory stay behind. Each test writes its pid to
 * <root>/.owner; this sweeps the roots whose test is gone. */
static HH_UNUSED void hh_reap_stale(void) {
  const char *base = getenv("TMPDIR");
  DIR *d = opendir(base && *base ? base : "/tmp");
  struct dirent *e;
  if (!d)
    return;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "taskfs-test-hard", 16))
      continue;
    char *root = hh_strdupf("%s/%s", base && *base ? base : "/tmp", e->d_name);
    char *own = hh_strdupf("%s/.owner", root);
    char *s = tu_read_file(own, NULL);
    pid_t pid = s ? (pid_t)atoi(s) : 0;
    free(s);
    free(own);
    if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH) {
      hh_ctx_t save = hh;
      memset(&hh, 0, sizeof hh);
      hh.root = root;
      hh.store = hh_strdupf("%s/store", root);
      hh_kill_ours();
      char *mi = tu_read_file("/proc/self/mountinfo", NULL);
      for (char *line = mi ? strtok(mi, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        char mp[4096];
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && !strncmp(mp, root, strlen(root)))
          umount2(mp, MNT_DETACH);
      }
      free(mi);
      tu_rmrf(root);
      free(hh.store);
      hh = save;
    }
    free(root);
  }
  closedir(d);
}

/* Makes the private root and store path and exports them, so that every
 * process the test starts (and every supervisor and worker those start)
 * uses this store and can be found by hh_teardown(). */
static HH_UNUSED void hh_setup_tag(const char *tag) {
  char self[4096];
  ssize_t n;
  memset(&hh, 0, sizeof hh);
  hh_reap_stale();
  hh.root = tu_tmpdir(tag);
  char *own = hh_strdupf("%s/.owner", hh.root), pidbuf[32];
  snprintf(pidbuf, sizeof pidbuf, "%d\n", (int)getpid());
  tu_write_file(own, pidbuf, strlen(pidbuf));
  free(own);
  hh.store = hh_strdupf("%s/store", hh.root);
  n = readlink("/proc/self/exe", self, sizeof self - 1);
  cr_assert(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
  self[n] = 0;
  hh.self = strdup(self);
  setenv("TASKFS_STATE_DIR", hh.store, 1);
  setenv("HH_MARK", hh.root, 1);
  /* A stray SIGPIPE from a dead MCP server must not kill the test. */
  signal(SIGPIPE, SIG_IGN);
  srand((unsigned)(getpid() ^ time(NULL)));
}

static HH_UNUSED void hh_setup(void) {
  hh_setup_tag("hard");
}

/* ---- processes --------------------------------------------------------- */

/* Starts argv in a process group of its own. Each of in/out/err that is not
 * NULL gets our end of a pipe to the child's stdin/stdout/stderr; the
 * others are /dev/null, except that err_path (if not NULL) receives
 * stderr. */
static HH_UNUSED pid_t hh_spawn(const char *const argv[], int *in, int *out, int *err,
                                const char *err_path) {
  int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
  if ((in && pipe2(pin, O_CLOEXEC)) || (out && pipe2(pout, O_CLOEXEC)) ||
      (err && pipe2(perr, O_CLOEXEC)))
    cr_assert_fail("pipe2: %s", strerror(errno));
  pid_t pid = fork();
  cr_assert(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    int null = open("/dev/null", O_RDWR);
    dup2(in ? pin[0] : null, 0);
    dup2(out ? pout[1] : null, 1);
    if (err)
      dup2(perr[1], 2);
    else if (err_path) {
      int fd = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(fd >= 0 ? fd : null, 2);
    } else
      dup2(null, 2);
    execv(argv[0], (char *const *)argv);
    dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  if (in) {
    close(pin[0]);
    *in = pin[1];
  }
  if (out) {
    close(pout[1]);
    *out = pout[0];
  }
  if (err) {
    close(perr[1]);
    *err = perr[0];
  }
  return pid;
}

/* Waits for pid up to timeout_ms; on timeout kills its process group and
 * returns -1. Otherwise the status as a shell shows it. */
static HH_UNUSED int hh_wait(pid_t pid, int64_t timeout_ms) {
  int st;
  int64_t end = hh_now_ms() + timeout_ms;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0)
      return -1;
    if (hh_now_ms() > end) {
      kill(-pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    hh_sleep_ms(5);
  }
}

typedef struct {
  char *buf;
  size_t len, cap;
} hh_buf_t;

static HH_UNUSED void hh_buf_add(hh_buf_t *b, const char *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    while (b->len + n + 1 > b->cap)
      b->cap = b->cap ? b->cap * 2 : 4096;
    b->buf = realloc(b->buf, b->cap);
    cr_assert(b->buf);
  }
  memcpy(b->buf + b->len, p, n);
  b->len += n;
  b->buf[b->len] = 0;
}

typedef struct {
  int status; /* exit status as a shell shows it, -1 on timeout */
  char *out, *err;
  size_t outlen, errlen;
} hh_res_t;

static HH_UNUSED void hh_res_free(hh_res_t *r) {
  free(r->out);
  free(r->err);
  memset(r, 0, sizeof *r);
}

/* Runs argv to completion with input on its stdin, capturing stdout and
 * stderr. */
static HH_UNUSED hh_res_t hh_run_argv(const char *const argv[], const char *input, size_t inlen,
                                      int64_t timeout_ms) {
  int in, out, err;
  hh_res_t r = {0};
  hh_buf_t bo = {0}, be = {0};
  pid_t pid = hh_spawn(argv, &in, &out, &err, NULL);
  size_t off = 0;
  if (!input || off >= inlen) {
    close(in);
    in = -1;
  } else
    fcntl(in, F_SETFL, O_NONBLOCK);
  int64_t end = hh_now_ms() + timeout_ms;
  while (out >= 0 || err >= 0) {
    struct pollfd p[3] = {{out, POLLIN, 0}, {err, POLLIN, 0}, {in, POLLOUT, 0}};
    int left = (int)(end - hh_now_ms());
    if (left <= 0)
      break;
    if (poll(p, 3, left) < 0 && errno != EINTR)
      break;
    char tmp[65536];
    for (int i = 0; i < 2; i++) {
      if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t n = read(p[i].fd, tmp, sizeof tmp);
      if (n <= 0) {
        close(p[i].fd);
        if (i == 0)
          out = -1;
        else
          err = -1;
      } else
        hh_buf_add(i ? &be : &bo, tmp, (size_t)n);
    }
    if (in >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = write(in, input + off, inlen - off);
      if (n > 0)
        off += (size_t)n;
      if (n < 0 && errno != EAGAIN) {
        close(in);
        in = -1;
      } else if (off >= inlen) {
        close(in);
        in = -1;
      }
    }
  }
  if (in >= 0)
    close(in);
  if (out >= 0)
    close(out);
  if (err >= 0)
    close(err);
  r.status = hh_wait(pid, end - hh_now_ms() > 0 ? end - hh_now_ms() : 1);
  hh_buf_add(&bo, "", 0);
  hh_buf_add(&be, "", 0);
  r.out = bo.buf;
  r.outlen = bo.len;
  r.err = be.buf;
  r.errlen = be.len;
  return r;
}

/* Runs `taskfs ARGS...` (NULL-terminated) to completion. */
static HH_UNUSED hh_res_t hh_tfs(const char *arg0, ...) {
  const char *argv[64];
  int n = 0;
  va_list ap;
  argv[n++] = tu_taskfs_bin();
  argv[n++] = arg0;
  va_start(ap, arg0);
  while (n < 63 && (argv[n] = va_arg(ap, const char *)))
    n++;
  va_end(ap);
  argv[n] = NULL;
  return hh_run_argv(argv, NULL, 0, hh_timeout_ms());
}

/* Runs a shell command line (sh -c) to completion. */
static HH_UNUSED hh_res_t hh_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static HH_UNUSED hh_res_t hh_sh(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *cmd = hh_vstrdupf(fmt, ap);
  va_end(ap);
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
  free(cmd);
  return r;
}

/* The stdout of a shell command line (malloc'ed). */
static HH_UNUSED char *hh_sh_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static HH_UNUSED char *hh_sh_out(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *cmd = hh_vstrdupf(fmt, ap);
  va_end(ap);
  hh_res_t r = hh_sh("%s", cmd);
  char *out = r.out;
  r.out = NULL;
  hh_res_free(&r);
  free(cmd);
  return out;
}

/* Trims trailing whitespace in place. */
static HH_UNUSED char *hh_chomp(char *s) {
  size_t n = s ? strlen(s) : 0;
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
    s[--n] = 0;
  return s;
}

/* `taskfs run [extra...] -- argv...`: returns the new task id (static
 * buffer copied by the caller) or fails the test. extra and cmd are
 * NULL-terminated arrays. */
static HH_UNUSED void hh_run_task(const char *const extra[], const char *const cmd[],
                                  char id[TFS_ID_MAX + 1]) {
  const char *argv[64];
  int n = 0;
  argv[n++] = tu_taskfs_bin();
  argv[n++] = "run";
  for (int i = 0; extra && extra[i] && n < 40; i++)
    argv[n++] = extra[i];
  argv[n++] = "--";
  for (int i = 0; cmd[i] && n < 62; i++)
    argv[n++] = cmd[i];
  argv[n] = NULL;
  hh_res_t r = hh_run_argv(argv, NULL, 0, hh_timeout_ms());
  cr_assert_eq(r.status, 0, "taskfs run %s failed with %d: %s", cmd[0], r.status, r.err);
  hh_chomp(r.out);
  cr_assert(tfs_id_valid(r.out), "taskfs run printed '%s', not a task id (stderr: %s)", r.out,
            r.err);
  snprintf(id, TFS_ID_MAX + 1, "%s", r.out);
  hh_res_free(&r);
}

/* Starts the numbered-line worker as a task; its count file is
 * root/count-<tag>. */
static HH_UNUSED char *hh_count_path(const char *tag) {
  return hh_strdupf("%s/count-%s", hh.root, tag);
}

static HH_UNUSED void hh_run_worker(const char *tag, long delay_us, const char *const extra[],
                                    char id[TFS_ID_MAX + 1]) {
  char *cnt = hh_count_path(tag), delay[32];
  snprintf(delay, sizeof delay, "%ld", delay_us);
  const char *cmd[] = {hh.self, "--hh-worker", cnt, delay, NULL};
  hh_run_task(extra, cmd, id);
  free(cnt);
}

/* The last complete number in a count file (0 if none). */
static HH_UNUSED long hh_count_read(const char *path) {
  size_t len;
  char *s = hh_slurp(path, &len);
  long v = 0;
  if (!s)
    return 0;
  while (len && s[len - 1] != '\n')
    len--; /* a torn last number does not count */
  if (len) {
    s[len - 1] = 0;
    char *nl = strrchr(s, '\n');
    v = atol(nl ? nl + 1 : s);
  }
  free(s);
  return v;
}

/* ---- the store, read directly ---------------------------------------------- */

static HH_UNUSED char *hh_task_path(const char *id, const char *name) {
  return hh_strdupf("%s/tasks/%s/%s", hh.store, id, name);
}

/* The transcript of id once it holds text (malloc'ed; what it holds, or
 * NULL, if it does not within the timeout). */
static HH_UNUSED char *hh_transcript_wait(const char *id, const char *text) {
  char *path = hh_task_path(id, "transcript"), *s = NULL;
  int64_t end = hh_now_ms() + hh_timeout_ms();
  while (hh_now_ms() < end) {
    free(s);
    s = hh_slurp(path, NULL);
    if (s && strstr(s, text))
      break;
    hh_sleep_ms(20);
  }
  free(path);
  return s;
}

/* Reads and parses a task's record.json straight from disk (no lost
 * computation). Returns 0, or a negative error with why in err. */
static HH_UNUSED int hh_record_raw(const char *id, tfs_record_t *rec, char *err, size_t errlen) {
  char *p = hh_task_path(id, "record.json");
  size_t len;
  char *s = hh_slurp(p, &len);
  int e = errno;
  free(p);
  if (!s) {
    tfs_record_init(rec);
    snprintf(err, errlen, "cannot read: %s", strerror(e));
    return -e;
  }
  /* tfs_record_parse() initializes rec itself, and leaves it empty (safe
   * to free) when it fails. */
  int rc = tfs_record_parse(s, len, rec, err, errlen);
  free(s);
  return rc;
}

/* Is the supervisor named by the record alive as a process (not a zombie)
 * running the supervise verb? Only used to check what readers report; the
 * tests never signal a PID read from a record. */
static HH_UNUSED int hh_supervisor_running(const tfs_record_t *rec) {
  char path[64], *s;
  size_t len;
  if (rec->supervisor_pid <= 0 || hh_proc_zombie(rec->supervisor_pid))
    return 0;
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)rec->supervisor_pid);
  if (!(s = tu_read_file(path, &len)))
    return 0;
  int sup = 0;
  for (size_t i = 0; i < len; i += strlen(s + i) + 1)
    if (!strcmp(s + i, "supervise"))
      sup = 1;
  free(s);
  return sup;
}

/* Finds the pid of the live supervisor of id (from the record, checked
 * against /proc); 0 if none. */
static HH_UNUSED pid_t hh_supervisor_pid(const char *id) {
  tfs_record_t rec;
  char err[256];
  pid_t pid = 0;
  if (hh_record_raw(id, &rec, err, sizeof err) == 0 && hh_supervisor_running(&rec))
    pid = rec.supervisor_pid;
  tfs_record_free(&rec);
  return pid;
}

typedef struct {
  size_t tasks, running, lost, queued, ended;
  size_t incomplete; /* task directories without a record.json */
} hh_store_stats_t;

/* The invariants every reader relies on, checked over the whole store:
 * every record.json parses (none torn), and no task reads running (through
 * the library every face uses) unless its supervisor process is alive.
 * A task that ends between the two reads is re-read before failing. */
static HH_UNUSED hh_store_stats_t hh_check_store(const char *when) {
  hh_store_stats_t st = {0};
  tfs_store_t *store;
  char **ids = NULL;
  size_t n = 0;
  int rc = tfs_store_open_existing(hh.store, &store);
  if (rc == -ENOENT)
    return st;
  cr_assert_eq(rc, 0, "%s: open store: %s", when, tfs_strerror(rc));
  rc = tfs_task_ids(store, &ids, &n);
  cr_assert_eq(rc, 0, "%s: list ids: %s", when, tfs_strerror(rc));
  for (size_t i = 0; i < n; i++) {
    tfs_record_t raw, rec;
    char err[256] = "";
    rc = hh_record_raw(ids[i], &raw, err, sizeof err);
    if (rc == -ENOENT) {
      /* A creator killed between mkdir and its first save leaves a task
       * directory without a record: not torn, just never finished. Readers
       * must treat it as no task. */
      tfs_record_free(&raw);
      tfs_record_init(&rec);
      rc = tfs_task_load(store, ids[i], &rec);
      tfs_record_free(&rec);
      cr_assert(rc == TFS_ENOTASK || rc == TFS_ECORRUPT,
                "%s: task %s has no record.json, yet tfs_task_load says %s", when, ids[i],
                tfs_strerror(rc));
      st.incomplete++;
      continue;
    }
    cr_assert_eq(rc, 0, "%s: record.json of %s does not parse (%s): torn or corrupt", when, ids[i],
                 err);
    tfs_record_free(&raw);
    tfs_record_init(&rec);
    rc = tfs_task_load(store, ids[i], &rec);
    cr_assert_eq(rc, 0, "%s: tfs_task_load(%s): %s", when, ids[i], tfs_strerror(rc));
    if (rec.state == TFS_RUNNING && !hh_supervisor_running(&rec)) {
      tfs_record_free(&rec);
      tfs_record_init(&rec);
      rc = tfs_task_load(store, ids[i], &rec);
      cr_assert_eq(rc, 0);
      cr_assert(rec.state != TFS_RUNNING || hh_supervisor_running(&rec),
                "%s: task %s reads running but its supervisor (pid %d) is not alive", when, ids[i],
                (int)rec.supervisor_pid);
    }
    st.tasks++;
    if (rec.state == TFS_RUNNING)
      st.running++;
    else if (rec.state == TFS_LOST)
      st.lost++;
    else if (rec.state == TFS_QUEUED)
      st.queued++;
    else
      st.ended++;
    tfs_record_free(&rec);
  }
  tfs_ids_free(ids, n);
  tfs_store_close(store);
  return st;
}

/* The process group of id's worker, from its record; fails the test if it
 * has none. */
static HH_UNUSED pid_t hh_worker_pgid(const char *id) {
  tfs_record_t rec;
  char err[256];
  cr_assert_eq(hh_record_raw(id, &rec, err, sizeof err), 0, "%s", err);
  pid_t pgid = rec.worker_pgid;
  tfs_record_free(&rec);
  cr_assert(pgid > 1, "task %s has no worker group", id);
  return pgid;
}

/* Mounts a tmpfs with the given options at root/fs (unmounted by the
 * teardown, even when the test fails) and puts the store on it. Returns
 * the mount point (malloc'ed). */
static HH_UNUSED char *hh_store_on_tmpfs(const char *opts) {
  char *fs = hh_strdupf("%s/fs", hh.root);
  cr_assert_eq(mkdir(fs, 0700), 0);
  cr_assert_eq(mount("tmpfs", fs, "tmpfs", 0, opts), 0, "mount tmpfs %s: %s", opts,
               strerror(errno));
  hh_register_mount(fs);
  free(hh.store);
  hh.store = hh_strdupf("%s/store", fs);
  setenv("TASKFS_STATE_DIR", hh.store, 1);
  return fs;
}

/* Loads one task through the library (lost computed); -1 if there is no
 * such task (or no record yet). */
static HH_UNUSED int hh_state_opt(const char *id) {
  tfs_store_t *store;
  tfs_record_t rec;
  int rc = tfs_store_open_existing(hh.store, &store);
  cr_assert_eq(rc, 0, "open store: %s", tfs_strerror(rc));
  tfs_record_init(&rec);
  rc = tfs_task_load(store, id, &rec);
  int s = rc == 0 ? (int)rec.state : -1;
  tfs_record_free(&rec);
  tfs_store_close(store);
  return s;
}

/* Loads one task through the library (lost computed). */
static HH_UNUSED tfs_state_t hh_state(const char *id) {
  tfs_store_t *store;
  tfs_record_t rec;
  int rc = tfs_store_open_existing(hh.store, &store);
  cr_assert_eq(rc, 0, "open store: %s", tfs_strerror(rc));
  tfs_record_init(&rec);
  rc = tfs_task_load(store, id, &rec);
  cr_assert_eq(rc, 0, "load %s: %s", id, tfs_strerror(rc));
  tfs_state_t s = rec.state;
  tfs_record_free(&rec);
  tfs_store_close(store);
  return s;
}

typedef struct {
  const char *id;
} hh_idarg_t;

static HH_UNUSED int hh_cond_ended(void *arg) {
  tfs_state_t s = hh_state(((hh_idarg_t *)arg)->id);
  return tfs_state_terminal(s) ? 1 : 0;
}

static HH_UNUSED int hh_cond_running(void *arg) {
  tfs_state_t s = hh_state(((hh_idarg_t *)arg)->id);
  return s == TFS_RUNNING ? 1 : (tfs_state_terminal(s) ? -1 : 0);
}

static HH_UNUSED int hh_cond_not_alive(void *arg) {
  tfs_store_t *store;
  if (tfs_store_open_existing(hh.store, &store))
    return 1;
  int a = tfs_task_alive(store, ((hh_idarg_t *)arg)->id);
  tfs_store_close(store);
  return a == 0;
}

static HH_UNUSED tfs_state_t hh_wait_ended(const char *id) {
  hh_idarg_t a = {id};
  cr_assert(tu_wait_until(hh_cond_ended, &a, hh_timeout_ms()), "task %s did not end", id);
  return hh_state(id);
}

static HH_UNUSED void hh_wait_running(const char *id) {
  hh_idarg_t a = {id};
  int v = tu_wait_until(hh_cond_running, &a, hh_timeout_ms());
  cr_assert(v == 1, "task %s did not reach running (state %s)", id, tfs_state_name(hh_state(id)));
}

/* Checks a worker's transcript: lines "seq=1" .. "seq=M" in order, each
 * once, nothing torn (the file ends in '\n'), with min <= M <= max.
 * Returns M. */
static HH_UNUSED long hh_check_seq(const char *id, long min, long max, const char *when) {
  char *p = hh_task_path(id, "transcript");
  size_t len;
  char *s = hh_slurp(p, &len);
  free(p);
  if (!s)
    s = strdup(""), len = 0;
  long want = 1;
  size_t off = 0;
  while (off < len) {
    char *nl = memchr(s + off, '\n', len - off);
    cr_assert(nl, "%s: transcript of %s ends in a torn line '%.40s' after seq=%ld", when, id,
              s + off, want - 1);
    *nl = 0;
    long got = -1;
    if (!strncmp(s + off, "seq=", 4))
      got = atol(s + off + 4);
    cr_assert_eq(got, want, "%s: transcript of %s: line %ld is '%.60s', want seq=%ld", when, id,
                 want, s + off, want);
    want++;
    off = (size_t)(nl - s) + 1;
  }
  free(s);
  long m = want - 1;
  cr_assert(m >= min && m <= max,
            "%s: transcript of %s has %ld lines; the worker wrote between %ld and %ld", when, id, m,
            min, max);
  return m;
}

/* ---- FUSE mount ------------------------------------------------------------- */

/* Is path a mount point (listed in /proc/self/mountinfo)? */
static HH_UNUSED int hh_is_mounted(const char *path) {
  char *mi = tu_read_file("/proc/self/mountinfo", NULL);
  int found = 0;
  if (!mi)
    return 0;
  for (char *line = strtok(mi, "\n"); line && !found; line = strtok(NULL, "\n")) {
    char mp[4096];
    if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && !strcmp(mp, path))
      found = 1;
  }
  free(mi);
  return found;
}

typedef struct {
  pid_t pid;
  char *mnt;
  char *log;
} hh_mount_t;

typedef struct {
  hh_mount_t *m;
} hh_mountarg_t;

static HH_UNUSED int hh_cond_mounted(void *arg) {
  hh_mount_t *m = arg;
  if (waitpid(m->pid, NULL, WNOHANG) == m->pid) {
    m->pid = 0;
    return -1;
  }
  return hh_is_mounted(m->mnt);
}

/* Starts `taskfs mount --foreground MNT` (stderr to root/mount.log) and
 * waits until the mount is there. Extra argv (NULL-terminated, may be NULL)
 * goes before the mount point; wrap (may be NULL) is a prefix argv such as
 * setpriv. Returns 0, or -1 if the daemon exited. */
static HH_UNUSED int hh_mount_start_ex(hh_mount_t *m, const char *mnt, const char *const wrap[]) {
  const char *argv[32];
  int n = 0;
  for (int i = 0; wrap && wrap[i]; i++)
    argv[n++] = wrap[i];
  argv[n++] = tu_taskfs_bin();
  argv[n++] = "mount";
  argv[n++] = "--foreground";
  argv[n++] = mnt;
  argv[n] = NULL;
  mkdir(mnt, 0700);
  if (!m->mnt) {
    m->mnt = strdup(mnt);
    m->log = hh_strdupf("%s/mount.log", hh.root);
    hh_register_mount(mnt);
  }
  m->pid = hh_spawn(argv, NULL, NULL, NULL, m->log);
  int v = tu_wait_until(hh_cond_mounted, m, hh_timeout_ms());
  return v == 1 ? 0 : -1;
}

static HH_UNUSED void hh_mount_start(hh_mount_t *m, const char *mnt) {
  int rc = hh_mount_start_ex(m, mnt, NULL);
  if (rc) {
    char *log = hh_slurp(m->log, NULL);
    cr_assert_fail("taskfs mount %s did not come up; its log:\n%s", mnt, log ? log : "");
  }
}

/* kill -9 the mount daemon, then detach the dead mount. */
static HH_UNUSED void hh_mount_kill9(hh_mount_t *m) {
  if (m->pid > 0) {
    kill(m->pid, SIGKILL);
    waitpid(m->pid, NULL, 0);
    m->pid = 0;
  }
  umount2(m->mnt, MNT_DETACH);
}

/* Stops the mount with SIGTERM; returns its exit status (-1 if it had to be
 * killed). The mount point must be gone afterwards. */
static HH_UNUSED int hh_mount_stop(hh_mount_t *m) {
  int st = 0;
  if (m->pid > 0) {
    kill(m->pid, SIGTERM);
    st = hh_wait(m->pid, hh_timeout_ms());
    m->pid = 0;
  }
  if (hh_is_mounted(m->mnt)) {
    umount2(m->mnt, MNT_DETACH);
    st = st ? st : -2;
  }
  return st;
}

/* ---- MCP client ----------------------------------------------------------- */

typedef struct {
  pid_t pid;
  int in, out;
  hh_buf_t rbuf;
  size_t roff;
  int next_id;
  char *log;
} hh_mcp_t;

static HH_UNUSED void hh_mcp_start_ex(hh_mcp_t *m, const char *const wrap[]) {
  const char *argv[32];
  int n = 0;
  for (int i = 0; wrap && wrap[i]; i++)
    argv[n++] = wrap[i];
  argv[n++] = tu_taskfs_bin();
  argv[n++] = "mcp";
  argv[n] = NULL;
  memset(m, 0, sizeof *m);
  m->log = hh_strdupf("%s/mcp.log", hh.root);
  m->pid = hh_spawn(argv, &m->in, &m->out, NULL, m->log);
  m->next_id = 1;
}

static HH_UNUSED void hh_mcp_start(hh_mcp_t *m) {
  hh_mcp_start_ex(m, NULL);
}

/* Writes raw bytes to the server's stdin (all of them, or fails). */
static HH_UNUSED int hh_mcp_send_raw(hh_mcp_t *m, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = write(m->in, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -errno;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* The next line the server writes on stdout, as JSON: NULL on EOF or
 * timeout. A line that is not JSON fails the test (stdout is for protocol
 * messages only). */
static HH_UNUSED json_t *hh_mcp_read(hh_mcp_t *m, int64_t timeout_ms) {
  int64_t end = hh_now_ms() + timeout_ms;
  for (;;) {
    char *start = m->rbuf.buf ? m->rbuf.buf + m->roff : NULL;
    char *nl = start ? memchr(start, '\n', m->rbuf.len - m->roff) : NULL;
    if (nl) {
      json_error_t jerr;
      size_t l = (size_t)(nl - start);
      json_t *v = json_loadb(start, l, 0, &jerr);
      cr_assert(v, "MCP server wrote a line that is not JSON (%s): '%.200s'", jerr.text, start);
      m->roff += l + 1;
      if (m->roff == m->rbuf.len)
        m->roff = m->rbuf.len = 0;
      return v;
    }
    int left = (int)(end - hh_now_ms());
    if (left <= 0)
      return NULL;
    struct pollfd p = {m->out, POLLIN, 0};
    if (poll(&p, 1, left) <= 0)
      continue;
    char tmp[65536];
    ssize_t n = read(m->out, tmp, sizeof tmp);
    if (n <= 0)
      return NULL;
    hh_buf_add(&m->rbuf, tmp, (size_t)n);
  }
}

/* Sends a request and returns the response with its id (notifications in
 * between are skipped); NULL if the server died or did not answer. */
static HH_UNUSED json_t *hh_mcp_request(hh_mcp_t *m, const char *method, json_t *params,
                                        int64_t timeout_ms) {
  int id = m->next_id++;
  json_t *req = json_pack("{s:s, s:i, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
  if (params)
    json_object_set_new(req, "params", params);
  char *line = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  size_t l = strlen(line);
  line = realloc(line, l + 2);
  line[l] = '\n';
  int rc = hh_mcp_send_raw(m, line, l + 1);
  free(line);
  if (rc)
    return NULL;
  int64_t end = hh_now_ms() + timeout_ms;
  for (;;) {
    int64_t left = end - hh_now_ms();
    if (left <= 0)
      return NULL;
    json_t *v = hh_mcp_read(m, left);
    if (!v)
      return NULL;
    json_t *vid = json_object_get(v, "id");
    if (json_is_integer(vid) && json_integer_value(vid) == id)
      return v;
    json_decref(v);
  }
}

static HH_UNUSED void hh_mcp_notify(hh_mcp_t *m, const char *method) {
  char *line = hh_strdupf("{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}\n", method);
  hh_mcp_send_raw(m, line, strlen(line));
  free(line);
}

static HH_UNUSED int hh_mcp_initialize(hh_mcp_t *m) {
  json_t *r = hh_mcp_request(m, "initialize",
                             json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", "2025-06-18",
                                       "capabilities", "clientInfo", "name", "taskfs-hardening",
                                       "version", "1"),
                             hh_timeout_ms());
  if (!r)
    return -1;
  int ok = json_object_get(r, "result") != NULL;
  json_decref(r);
  hh_mcp_notify(m, "notifications/initialized");
  return ok ? 0 : -1;
}

/* Calls a tool. Returns the result object (structuredContent if present,
 * else the whole result) with *is_error set, or NULL on a protocol error
 * (then *is_error = -1 and *errmsg, if given, gets the error message). */
static HH_UNUSED json_t *hh_mcp_tool(hh_mcp_t *m, const char *tool, json_t *args, int *is_error,
                                     char **errmsg) {
  json_t *r = hh_mcp_request(
      m, "tools/call", json_pack("{s:s, s:o}", "name", tool, "arguments", args), hh_timeout_ms());
  *is_error = -1;
  if (errmsg)
    *errmsg = NULL;
  if (!r)
    return NULL;
  json_t *res = json_object_get(r, "result");
  if (!res) {
    if (errmsg)
      *errmsg = json_dumps(json_object_get(r, "error"), JSON_COMPACT);
    json_decref(r);
    return NULL;
  }
  *is_error = json_is_true(json_object_get(res, "isError"));
  json_t *sc = json_object_get(res, "structuredContent");
  json_t *out = json_incref(sc ? sc : res);
  if (errmsg && *is_error)
    *errmsg = json_dumps(res, JSON_COMPACT);
  json_decref(r);
  return out;
}

/* Closes stdin and waits for the server to exit; returns its status. */
static HH_UNUSED int hh_mcp_close(hh_mcp_t *m) {
  int st = 0;
  if (m->in >= 0)
    close(m->in);
  m->in = -1;
  if (m->pid > 0)
    st = hh_wait(m->pid, hh_timeout_ms());
  m->pid = 0;
  if (m->out >= 0)
    close(m->out);
  m->out = -1;
  free(m->rbuf.buf);
  free(m->log);
  memset(&m->rbuf, 0, sizeof m->rbuf);
  m->log = NULL;
  return st;
}

static HH_UNUSED void hh_mcp_kill9(hh_mcp_t *m) {
  if (m->pid > 0) {
    kill(m->pid, SIGKILL);
    waitpid(m->pid, NULL, 0);
    m->pid = 0;
  }
  hh_mcp_close(m);
}

/* The memory high-water mark of a live process, in KiB (VmHWM). */
static HH_UNUSED long hh_vmhwm_kib(pid_t pid) {
  char path[64], *s;
  long v = -1;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  if (!(s = tu_read_file(path, NULL)))
    return -1;
  char *p = strstr(s, "VmHWM:");
  if (p)
    v = atol(p + 6);
  free(s);
  return v;
}

#endif /* TASKFS_TESTS_HARD_H */
