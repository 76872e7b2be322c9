/* What `taskfs run` hands its supervisor and its worker: none of the
 * launcher's descriptors (its terminal, its pipes: `id=$(taskfs run ...)`
 * must not wait for the task), none of its signal settings, and the
 * launcher's environment, directory and umask for the worker. The
 * supervisor shows as `taskfs supervise --state-dir DIR ID`, one argument
 * each, where ps, pgrep and the tests' process finders look. */
#include "tests/sup_fixture.h"

#include <poll.h>

TestSuite(run_clean, .init = sx_setup, .fini = sx_teardown, .timeout = 60);

/* Runs until the test opens the gate (a file in the test directory). */
#define UNTIL_GATE "until [ -e gate ]; do sleep 0.05; done"

static void open_gate(void) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/gate", sx_tmp);
  cr_assert_eq(tu_write_file(path, "", 0), 0);
}

/* The launcher's own descriptors: stdin a pipe, stdout the pipe the id is
 * read from, and a pipe at fd 7 without close-on-exec (what a shell or a
 * careless parent leaves open). The test keeps the other ends. */
typedef struct {
  int in[2], out[2], extra[2];
} launcher_fds_t;

/* 1 if st names the same object as one of the launcher's pipes. */
static int is_launchers(const launcher_fds_t *l, const struct stat *st) {
  const int mine[] = {l->in[1], l->out[0], l->extra[0]};
  for (size_t i = 0; i < sizeof mine / sizeof *mine; i++) {
    struct stat m;
    if (fstat(mine[i], &m) == 0 && m.st_dev == st->st_dev && m.st_ino == st->st_ino)
      return 1;
  }
  return 0;
}

/* Asserts that no fd of pid is one of the launcher's pipes. */
static void assert_holds_none(pid_t pid, const char *who, const launcher_fds_t *l) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d))) {
    char path[64 + sizeof e->d_name];
    struct stat st;
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) == 0)
      cr_assert(!is_launchers(l, &st), "the %s holds the launcher's pipe as fd %s", who, e->d_name);
  }
  closedir(d);
}

/* The hex mask of a "Sig...:" line of /proc/pid/status. */
static unsigned long long sig_mask(pid_t pid, const char *field) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  char *s = tu_read_file(path, NULL);
  cr_assert_not_null(s, "%s", path);
  char *p = strstr(s, field);
  cr_assert_not_null(p, "%s in %s", field, path);
  unsigned long long m = strtoull(p + strlen(field) + 1, NULL, 16);
  free(s);
  return m;
}

static int usr1_open(void *arg) {
  return !(sig_mask(*(pid_t *)arg, "SigBlk:") & (1ULL << (SIGUSR1 - 1)));
}

Test(run_clean, the_supervisor_and_the_worker_hold_nothing_of_the_launcher) {
  launcher_fds_t l;
  cr_assert(pipe(l.in) == 0 && pipe(l.out) == 0 && pipe(l.extra) == 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    /* Blocked and ignored in the launcher: a supervisor that kept them
     * would not take a SIGUSR1 and would never see a SIGUSR2. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    signal(SIGUSR2, SIG_IGN);
    if (dup2(l.in[0], 0) < 0 || dup2(l.out[1], 1) < 0 || dup2(l.extra[1], 7) < 0 ||
        chdir(sx_tmp) < 0)
      _exit(126);
    close_range(3, 6, 0);
    close_range(8, ~0U, 0);
    execl(tu_taskfs_bin(), "taskfs", "run", "--state-dir", sx_state, "--", "sh", "-c", UNTIL_GATE,
          (char *)NULL);
    _exit(127);
  }
  close(l.in[0]);
  close(l.out[1]);
  close(l.extra[1]);
  char buf[128];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof buf - 1 && !memchr(buf, '\n', len) &&
         (n = read(l.out[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)n;
  buf[len] = 0;
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "run: status %#x", status);
  char id[TFS_ID_MAX + 1];
  sx_first_id(buf, id);
  /* run has returned: nobody holds its stdout or its fd 7 any more
   * (`id=$(taskfs run ...)` returns). */
  struct pollfd pfd[2] = {{.fd = l.out[0], .events = POLLIN}, {.fd = l.extra[0], .events = POLLIN}};
  cr_assert_eq(poll(pfd, 2, 0), 2, "a process of the task holds the launcher's stdout or fd 7");
  cr_assert(pfd[0].revents & POLLHUP, "a process of the task holds the launcher's stdout");
  cr_assert(pfd[1].revents & POLLHUP, "a process of the task holds the launcher's fd 7");

  tfs_record_t rec = sx_load(id);
  cr_assert_eq(rec.state, TFS_RUNNING, "%s", tfs_state_name(rec.state));
  pid_t sup = rec.supervisor_pid, worker = rec.worker_pid;
  tfs_record_free(&rec);
  assert_holds_none(sup, "supervisor", &l);
  assert_holds_none(worker, "worker", &l);
  /* The supervisor blocks every signal for a moment around each fork
   * (sup_fork): the launcher's mask is gone once SIGUSR1 is seen open. */
  cr_assert(tu_wait_until(usr1_open, &sup, 10000),
            "the supervisor keeps the launcher's blocked SIGUSR1");
  cr_assert_eq(sig_mask(sup, "SigIgn:") & (1ULL << (SIGUSR2 - 1)), 0,
               "the supervisor keeps the launcher's ignored SIGUSR2");
  close(l.in[1]);
  close(l.out[0]);
  close(l.extra[0]);
  open_gate();
  rec = sx_wait(id, 20000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
}

Test(run_clean, ps_shows_the_supervisor_as_taskfs_supervise) {
  char *out, *err, id[TFS_ID_MAX + 1];
  int rc = sx_taskfs(&out, &err, "run --state-dir '%s' -- sh -c '" UNTIL_GATE "'", sx_state);
  cr_assert_eq(rc, 0, "rc %d: %s", rc, err);
  sx_first_id(out, id);
  free(out);
  free(err);
  tfs_record_t rec = sx_load(id);
  char path[64], want[PATH_MAX + 64];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)rec.supervisor_pid);
  tfs_record_free(&rec);
  size_t len;
  char *got = tu_read_file(path, &len);
  cr_assert_not_null(got, "%s", path);
  int wlen = snprintf(want, sizeof want, "taskfs%csupervise%c--state-dir%c%s%c%s", 0, 0, 0,
                      sx_state, 0, id) +
             1;
  for (size_t i = 0; i + 1 < len; i++)
    if (!got[i])
      got[i] = '|'; /* readable in the message */
  for (int i = 0; i + 1 < wlen; i++)
    if (!want[i])
      want[i] = '|';
  cr_assert(len == (size_t)wlen && !strcmp(got, want), "cmdline '%.*s', not '%s'", (int)len, got,
            want);
  free(got);
  open_gate();
  rec = sx_wait(id, 20000);
  tfs_record_free(&rec);
}

Test(run_clean, the_worker_gets_the_launchers_environment_cwd_and_umask) {
  char dir[PATH_MAX], *out = NULL;
  snprintf(dir, sizeof dir, "%s/a dir", sx_tmp);
  cr_assert_eq(mkdir(dir, 0700), 0);
  int rc = tu_sh(&out,
                 "cd '%s' && umask 027 && TFS_T_MARK='a  b' '%s' run --wait --state-dir '%s' -- "
                 "sh -c 'umask; pwd; printf \"%%s\\n\" \"$TFS_T_MARK\"'",
                 dir, tu_taskfs_bin(), sx_state);
  cr_assert_eq(rc, 0, "rc %d", rc);
  char id[TFS_ID_MAX + 1];
  sx_first_id(out, id);
  free(out);
  char *tx = sx_task_file(id, "transcript", NULL), want[PATH_MAX * 2];
  snprintf(want, sizeof want, "0027\n%s\na  b\n", dir);
  cr_assert_str_eq(tx, want);
  free(tx);
}
