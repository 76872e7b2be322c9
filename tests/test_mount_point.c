/* The mount point across a mount process's death, as a user meets it:
 * `taskfs mount M; ls M/tasks; kill -9 <mount pid>; taskfs mount M` must
 * not stack a second mount on the dead one (the kernel keeps the root's
 * attributes 60 s, so stat() of M still succeeds), and one `taskfs umount`
 * clears a dead mount, also while a file in it is open. Everything goes
 * through the real binary in its default (background) mode. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "tests/helpers/testutil.h"

static char *g_dir, g_state[600], g_mnt[600];
static pid_t g_pids[8];
static int g_npids;

static void setup(void) {
  g_dir = tu_tmpdir("mountpoint");
  snprintf(g_state, sizeof g_state, "%s/state", g_dir);
  snprintf(g_mnt, sizeof g_mnt, "%s/m", g_dir);
  if (mkdir(g_mnt, 0700))
    abort();
  g_npids = 0;
}

/* Kills every mount process the test started, then detaches whatever is
 * left on the mount point, so a failed test leaves no mount behind. */
static void teardown(void) {
  for (int i = 0; i < g_npids; i++)
    kill(g_pids[i], SIGKILL);
  for (int i = 0; i < 16; i++)
    if (tu_sh(NULL, "umount -l '%s' 2>/dev/null", g_mnt))
      break;
  tu_cleanup_dir(g_dir);
  free(g_dir);
}

TestSuite(mount_point, .init = setup, .fini = teardown, .timeout = 60);

/* How many fuse.taskfs mounts /proc/self/mounts lists on the mount point. */
static int taskfs_mounts(void) {
  char line[4096], want[700];
  int n = 0;
  snprintf(want, sizeof want, " %s fuse.taskfs ", g_mnt);
  FILE *f = fopen("/proc/self/mounts", "re");
  cr_assert_not_null(f);
  while (fgets(line, sizeof line, f))
    n += strstr(line, want) != NULL;
  fclose(f);
  return n;
}

/* `taskfs mount`: checks it mounted, records the mount process's pid from
 * its message ("... (pid N); ..."), returns stderr. */
static char *mount_it(void) {
  char *out, *err, errpath[700];
  snprintf(errpath, sizeof errpath, "%s/stderr", g_dir);
  int rc = tu_sh(&out, "'%s' mount --state-dir '%s' '%s' 2>'%s'", tu_taskfs_bin(), g_state, g_mnt,
                 errpath);
  err = tu_read_file(errpath, NULL);
  cr_assert_eq(rc, 0, "taskfs mount exited %d: %s%s", rc, out, err);
  const char *p = strstr(out, "(pid ");
  cr_assert_not_null(p, "%s", out);
  cr_assert_lt(g_npids, 8);
  g_pids[g_npids++] = (pid_t)atoi(p + 5);
  free(out);
  return err;
}

static int is_dead(void *arg) {
  struct statfs sf;
  return statfs(g_mnt, &sf) && errno == ENOTCONN;
}

/* kill -9 of the last mount process; returns once its mount is dead. */
static void kill_mount(void) {
  cr_assert_eq(kill(g_pids[g_npids - 1], SIGKILL), 0);
  cr_assert(tu_wait_until(is_dead, NULL, 20000), "the mount did not die");
}

static void ls_tasks(void) {
  cr_assert_eq(tu_sh(NULL, "ls '%s/tasks' >/dev/null", g_mnt), 0, "ls %s/tasks failed", g_mnt);
}

Test(mount_point, a_dead_mount_is_cleared_not_stacked_over) {
  free(mount_it());
  ls_tasks(); /* the root's attributes are now cached */
  struct stat st;
  cr_assert_eq(stat(g_mnt, &st), 0);
  kill_mount();
  cr_assert_eq(stat(g_mnt, &st), 0, "stat of the dead mount fails: the test no longer tests");
  char *err = mount_it();
  cr_assert(strstr(err, "cleared the dead mount"), "stderr: %s", err);
  free(err);
  cr_assert_eq(taskfs_mounts(), 1, "%d taskfs mounts on %s", taskfs_mounts(), g_mnt);
  ls_tasks();

  /* Killed again with nothing touched since: the same. */
  kill_mount();
  free(mount_it());
  cr_assert_eq(taskfs_mounts(), 1);
  ls_tasks();
  cr_assert_eq(tu_sh(NULL, "'%s' umount '%s'", tu_taskfs_bin(), g_mnt), 0);
  cr_assert_eq(taskfs_mounts(), 0);
}

Test(mount_point, one_umount_clears_a_dead_mount_with_a_file_open) {
  free(mount_it());
  char path[700];
  snprintf(path, sizeof path, "%s/owner", g_mnt);
  int fd = open(path, O_RDONLY);
  cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
  kill_mount();
  cr_assert_eq(tu_sh(NULL, "'%s' umount '%s'", tu_taskfs_bin(), g_mnt), 0);
  cr_assert_eq(taskfs_mounts(), 0);
  close(fd);
  /* The mount point is a plain directory again, and mountable. */
  struct statfs sf;
  cr_assert_eq(statfs(g_mnt, &sf), 0);
  free(mount_it());
  cr_assert_eq(taskfs_mounts(), 1);
  cr_assert_eq(tu_sh(NULL, "'%s' umount '%s'", tu_taskfs_bin(), g_mnt), 0);
}

Test(mount_point, a_live_mount_is_refused_not_stacked) {
  free(mount_it());
  char *out;
  int rc = tu_sh(&out, "'%s' mount --state-dir '%s' '%s' 2>&1", tu_taskfs_bin(), g_state, g_mnt);
  cr_assert_eq(rc, 111, "%s", out);
  cr_assert(strstr(out, "taskfs mount:") && strstr(out, "already a FUSE mount"), "%s", out);
  free(out);
  cr_assert_eq(taskfs_mounts(), 1);
  cr_assert_eq(tu_sh(NULL, "'%s' umount '%s'", tu_taskfs_bin(), g_mnt), 0);
}
