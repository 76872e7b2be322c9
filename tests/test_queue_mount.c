/* The mount's face of queues and of a running task's control (issue 18),
 * through a real mount (`taskfs mount --foreground`) of a store whose tasks
 * real supervisors run: MNT/queues/<name>/{parallel,paused,tasks},
 * MNT/tasks/<id>/control and MNT/tasks/<id>/stdin, used with plain shell
 * redirections as a user would. The fixture unmounts and stops everything
 * even when a test fails. */
#include "tests/sup_fixture.h"

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/vfs.h>

#define FUSE_MAGIC 0x65735546

static char mnt[PATH_MAX - 64];
static pid_t mount_pid = -1;

static int is_mounted(void *arg) {
  struct statfs sf;
  return statfs(mnt, &sf) == 0 && sf.f_type == FUSE_MAGIC;
}

static void unmount(void) {
  if (mount_pid > 0) {
    kill(-mount_pid, SIGTERM);
    for (int i = 0; i < 1000 && waitpid(mount_pid, NULL, WNOHANG) != mount_pid; i++)
      usleep(10000);
    kill(-mount_pid, SIGKILL);
    waitpid(mount_pid, NULL, WNOHANG);
    mount_pid = -1;
  }
  if (mnt[0])
    umount2(mnt, MNT_DETACH);
  mnt[0] = 0;
}

static void setup(void) {
  sx_setup();
  setenv("TASKFS_STATE_DIR", sx_state, 1);
  atexit(unmount);
  snprintf(mnt, sizeof mnt, "%s/mnt", sx_tmp);
  cr_assert_eq(mkdir(mnt, 0700), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* a test that dies takes the mount along */
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    dup2(fd, 2);
    /* The mount runs in / so that the fixture's sweep of processes in the
     * test directory leaves it to unmount(). */
    if (chdir("/") < 0)
      _exit(126);
    execl(tu_taskfs_bin(), "taskfs", "mount", "--foreground", "--state-dir", sx_state, mnt,
          (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  mount_pid = pid;
  cr_assert(tu_wait_until(is_mounted, NULL, 20000), "the mount did not come up");
}

static void teardown(void) {
  unmount();
  sx_teardown();
}

TestSuite(qmount, .init = setup, .fini = teardown, .timeout = 90);

/* `cd TMP && SCRIPT` in sh; its exit status; stdout into *out if asked. */
static int sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(char **out, const char *fmt, ...) {
  va_list ap;
  char *script;
  va_start(ap, fmt);
  if (vasprintf(&script, fmt, ap) < 0)
    abort();
  va_end(ap);
  int rc = tu_sh(out, "cd '%s' && %s", sx_tmp, script);
  free(script);
  return rc;
}

static void run_task(char id[TFS_ID_MAX + 1], const char *args) {
  char *out = NULL;
  cr_assert_eq(sh(&out, "'%s' run %s 2>/dev/null", tu_taskfs_bin(), args), 0, "run %s", args);
  size_t n = strcspn(out, "\n");
  cr_assert(n > 0 && n <= TFS_ID_MAX, "no id in: %s", out);
  memcpy(id, out, n);
  id[n] = 0;
  free(out);
}

/* The content of MNT/path. */
static char *mread(const char *path) {
  char full[PATH_MAX * 2];
  snprintf(full, sizeof full, "%s/%s", mnt, path);
  return tu_read_file(full, NULL);
}

/* Writes text to MNT/path as `echo text > path` does (one write); the
 * errno of a failed write, or 0. */
static int mwrite(const char *path, const char *text) {
  char full[PATH_MAX * 2];
  snprintf(full, sizeof full, "%s/%s", mnt, path);
  int fd = open(full, O_WRONLY | O_TRUNC);
  if (fd < 0)
    return errno;
  ssize_t n = write(fd, text, strlen(text));
  int err = n < 0 ? errno : 0;
  close(fd);
  return err;
}

typedef struct {
  const char *path, *want;
} file_t;

static int holds(void *arg) {
  file_t *f = arg;
  char *got = mread(f->path);
  int ok = got && !strcmp(got, f->want);
  free(got);
  return ok;
}

static void wait_file(const char *path, const char *want) {
  file_t f = {path, want};
  if (tu_wait_until(holds, &f, 30000))
    return;
  char *got = mread(path);
  cr_assert_fail("%s holds '%s', not '%s'", path, got ? got : "(nothing)", want);
}

static int exists(void *arg) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", sx_tmp, (const char *)arg);
  return access(path, F_OK) == 0;
}

Test(qmount, queue_files_read_and_change_the_queue) {
  char a[TFS_ID_MAX + 1], b[TFS_ID_MAX + 1], want[128];
  cr_assert_eq(sh(NULL, "'%s' queue set q --parallel 1 >/dev/null", tu_taskfs_bin()), 0);
  run_task(a, "--queue q -- sh -c 'while [ ! -e gate ]; do sleep 0.05; done'");
  run_task(b, "--queue q -- sh -c 'echo b > b.ran'");
  sx_wait_state(a, TFS_RUNNING, NULL);
  char *names = NULL;
  cr_assert_eq(sh(&names, "ls '%s/queues'", mnt), 0);
  cr_assert_str_eq(names, "q\n");
  free(names);
  wait_file("queues/q/parallel", "1\n");
  wait_file("queues/q/paused", "0\n");
  /* tasks: the running ones, then the waiting ones with their place. */
  snprintf(want, sizeof want, "%s running\n%s waiting 1\n", a, b);
  wait_file("queues/q/tasks", want);
  /* Bad lines change nothing. */
  const char *bad[] = {"0\n", "-1\n", "99999\n", "two\n", "\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(mwrite("queues/q/parallel", bad[i]), EINVAL, "parallel '%s'", bad[i]);
  cr_assert_eq(mwrite("queues/q/paused", "yes\n"), EINVAL);
  wait_file("queues/q/parallel", "1\n");
  /* A larger limit starts the waiter. */
  cr_assert_eq(sh(NULL, "echo 2 > '%s/queues/q/parallel'", mnt), 0);
  wait_file("queues/q/parallel", "2\n");
  tfs_record_t rec = sx_wait(b, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  /* Paused: a new task waits until paused is 0 again. */
  cr_assert_eq(sh(NULL, "echo 1 > '%s/queues/q/paused'", mnt), 0);
  wait_file("queues/q/paused", "1\n");
  char c[TFS_ID_MAX + 1];
  run_task(c, "--queue q -- sh -c 'echo c > c.ran'");
  snprintf(want, sizeof want, "%s running\n%s waiting 1\n", a, c);
  wait_file("queues/q/tasks", want);
  cr_assert(!exists("c.ran"));
  cr_assert_eq(sh(NULL, "echo 0 > '%s/queues/q/paused'", mnt), 0);
  rec = sx_wait(c, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  cr_assert_eq(sh(NULL, "echo none > '%s/queues/q/parallel'", mnt), 0);
  wait_file("queues/q/parallel", "none\n");
  cr_assert_eq(sh(NULL, "touch gate"), 0);
  rec = sx_wait(a, 30000);
  tfs_record_free(&rec);
  cr_assert_neq(sh(NULL, "cat '%s/queues/nosuch/parallel' 2>/dev/null", mnt), 0);
}

static int stopped(void *arg) {
  return sx_proc_state(*(pid_t *)arg) == 'T';
}

static int not_stopped(void *arg) {
  return !stopped(arg);
}

Test(qmount, control_pauses_resumes_and_signals_a_task) {
  char a[TFS_ID_MAX + 1], path[128];
  /* The worker waits in `wait` for a background sleep, so that a pause
   * finds it where SIGSTOP shows as 'T'. A loop of foreground sleeps would
   * not: dash starts each with vfork, and a pause that stops the child
   * before its exec leaves the parent in 'D' (waiting for that exec) for as
   * long as the pause lasts (seen: 1 run in 8 beside a CPU hog). */
  run_task(a, "-- sh -c 'trap \"kill \\$!; echo usr1 > got; exit 0\" USR1; "
              "sleep 300.207 & touch ready; wait'");
  cr_assert(tu_wait_until(exists, "ready", 20000));
  tfs_record_t rec = sx_load(a);
  pid_t worker = rec.worker_pgid;
  tfs_record_free(&rec);
  snprintf(path, sizeof path, "tasks/%s/control", a);
  cr_assert_eq(mwrite(path, "pause\n"), 0);
  sx_wait_state(a, TFS_PAUSED, NULL);
  cr_assert(tu_wait_until(stopped, &worker, 10000));
  cr_assert_eq(sh(NULL, "echo resume > '%s/%s'", mnt, path), 0);
  sx_wait_state(a, TFS_RUNNING, NULL);
  cr_assert(tu_wait_until(not_stopped, &worker, 10000));
  /* Bad lines: EINVAL, nothing sent (a good line before a bad one too). */
  const char *bad[] = {"stop\n", "signal NOPE\n", "signal\n", "pause now\n", "resume\nbogus\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(mwrite(path, bad[i]), EINVAL, "control '%s'", bad[i]);
  cr_assert_eq(sh(NULL, "echo 'signal USR1' > '%s/%s'", mnt, path), 0);
  rec = sx_wait(a, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
  sx_assert_file("got", "usr1\n");
  /* The task has ended: a request is refused. */
  cr_assert_neq(mwrite(path, "pause\n"), 0);
}

Test(qmount, stdin_is_there_for_a_task_that_has_one) {
  char a[TFS_ID_MAX + 1], n[TFS_ID_MAX + 1], path[PATH_MAX + 64];
  run_task(a, "--stdin -- sh -c 'while read l; do echo \"got $l\"; done'");
  run_task(n, "-- sleep 300.191");
  sx_wait_state(a, TFS_RUNNING, NULL);
  snprintf(path, sizeof path, "%s/tasks/%s/stdin", mnt, n);
  cr_assert_neq(access(path, F_OK), 0, "a task without stdin has no stdin file");
  snprintf(path, sizeof path, "%s/tasks/%s/stdin", mnt, a);
  cr_assert_eq(access(path, F_OK), 0);
  /* A recursive grep passes it by: readable, and empty (grep exits 1 for
   * no match, 2 for an error such as EACCES). */
  cr_assert_eq(sh(NULL, "test -r '%s' && test \"$(cat '%s')\" = ''", path, path), 0);
  cr_assert_eq(sh(NULL, "grep -r no-such-text-anywhere '%s/tasks/%s' >/dev/null", mnt, a), 1);
  cr_assert_eq(sh(NULL, "echo hello > '%s'", path), 0);
  cr_assert_eq(sh(NULL, "printf 'a\\nb\\n' > '%s'", path), 0);
  char tx[PATH_MAX];
  snprintf(tx, sizeof tx, "tasks/%s/transcript", a);
  wait_file(tx, "got hello\ngot a\ngot b\n");
  snprintf(path, sizeof path, "tasks/%s/control", a);
  cr_assert_eq(mwrite(path, "eof\n"), 0);
  tfs_record_t rec = sx_wait(a, 30000);
  cr_assert_eq(rec.state, TFS_COMPLETED, "%s", rec.reason);
  tfs_record_free(&rec);
}
