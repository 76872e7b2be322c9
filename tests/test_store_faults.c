/* The store's file primitives (core/fsio.c) under real faults, through the
 * calls the binary makes (tfs_task_create, tfs_task_save,
 * tfs_cancel_request, tfs_task_forget, tfs_store_acquire): a small tmpfs
 * out of blocks or out of inodes, a removed store directory, a file that
 * cannot be removed, a mount point inside a task. Each fault gives a clear
 * error and loses nothing that was there before. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "taskfs/taskfs.h"
#include "tests/helpers/testutil.h"

static char *tmp;                    /* per-test directory */
static char small[PATH_MAX];         /* a tmpfs mounted by the test, or "" */
static char sub_mnt[PATH_MAX + 64];  /* one mounted inside a task, or "" */
static char binds[2][PATH_MAX + 64]; /* files bind-mounted over, or "" */
static char state_dir[PATH_MAX + 16];
static tfs_store_t *store;

static void setup(void) {
  tmp = tu_tmpdir("faults");
  small[0] = sub_mnt[0] = binds[0][0] = binds[1][0] = 0;
}

static void teardown(void) {
  if (store)
    tfs_store_close(store);
  store = NULL;
  if (small[0])
    umount2(small, MNT_DETACH);
  if (sub_mnt[0])
    umount2(sub_mnt, MNT_DETACH);
  for (int i = 0; i < 2; i++)
    if (binds[i][0])
      umount2(binds[i], MNT_DETACH);
  tu_sh(NULL, "chattr -R -i '%s' 2>/dev/null", tmp);
  tu_cleanup_dir(tmp);
  free(tmp);
}

TestSuite(store_faults, .init = setup, .fini = teardown, .timeout = 60);

/* Mounts a tmpfs with opts at <tmp>/small and opens a store in it. */
static void store_on_tmpfs(const char *opts) {
  snprintf(small, sizeof small, "%s/small", tmp);
  cr_assert_eq(mkdir(small, 0700), 0);
  if (mount("tmpfs", small, "tmpfs", 0, opts) != 0) {
    small[0] = 0;
    cr_skip_test("cannot mount a tmpfs: %s", strerror(errno));
  }
  snprintf(state_dir, sizeof state_dir, "%s/state", small);
  int err = tfs_store_open(state_dir, &store);
  cr_assert_eq(err, 0, "tfs_store_open: %s", tfs_strerror(err));
}

static void create(char id[TFS_ID_MAX + 1]) {
  char *argv[] = {"true", NULL};
  tfs_task_spec_t spec = {
      .argv = argv, .cwd = "/", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  int existed;
  int err = tfs_task_create(store, &spec, id, &existed);
  cr_assert_eq(err, 0, "tfs_task_create: %s", tfs_strerror(err));
}

/* A task in a store under tmp that has ended in state. */
static void ended_task(char id[TFS_ID_MAX + 1], tfs_state_t state) {
  snprintf(state_dir, sizeof state_dir, "%s/state", tmp);
  cr_assert_eq(tfs_store_open(state_dir, &store), 0);
  create(id);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(store, id, &rec), 0);
  rec.state = state;
  rec.exit_code = state == TFS_COMPLETED ? 0 : 1;
  cr_assert_eq(tfs_task_save(store, &rec), 0);
  tfs_record_free(&rec);
}

/* Fills the file system at small: blocks (one big file) or inodes (empty
 * files) until it says ENOSPC. */
static void fill(int inodes) {
  char path[PATH_MAX + 64];
  if (!inodes) {
    snprintf(path, sizeof path, "%s/filler", small);
    cr_assert_neq(tu_sh(NULL, "dd if=/dev/zero of='%s' bs=4096 2>/dev/null", path), 0);
    return;
  }
  for (int i = 0;; i++) {
    snprintf(path, sizeof path, "%s/f%d", small, i);
    FILE *f = fopen(path, "w");
    if (!f) {
      cr_assert_eq(errno, ENOSPC, "filling the inodes: %s", strerror(errno));
      return;
    }
    fclose(f);
    cr_assert_lt(i, 100000, "the inodes never ran out");
  }
}

/* Names in the task's directory that start with '.' (left-over temp files). */
static int dotfiles(const char *id) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/tasks/%s", state_dir, id);
  DIR *d = opendir(path);
  cr_assert_not_null(d, "%s: %s", path, strerror(errno));
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

/* A save that cannot write keeps the record as it was and leaves no temp
 * file behind; once there is room the same save lands. */
Test(store_faults, a_full_disk_keeps_the_old_record) {
  char id[TFS_ID_MAX + 1];
  store_on_tmpfs("size=256k,mode=0700");
  create(id);
  fill(0);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(store, id, &rec), 0);
  rec.state = TFS_COMPLETED;
  rec.exit_code = 0;
  rec.ended_ms = tfs_now_ms();
  cr_assert_eq(tfs_task_save(store, &rec), -ENOSPC);
  cr_assert_eq(dotfiles(id), 0, "a temp file was left behind");
  tfs_record_t again;
  cr_assert_eq(tfs_task_load(store, id, &again), 0);
  cr_assert_eq(again.state, TFS_QUEUED, "the old record is gone");
  tfs_record_free(&again);

  char filler[PATH_MAX + 64];
  snprintf(filler, sizeof filler, "%s/filler", small);
  cr_assert_eq(unlink(filler), 0);
  cr_assert_eq(tfs_task_save(store, &rec), 0);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_load(store, id, &again), 0);
  cr_assert_eq(again.state, TFS_COMPLETED);
  tfs_record_free(&again);
}

/* Out of inodes: no new task, no stop request, no save (each needs a new
 * file), each with ENOSPC; the task that was there reads as before. */
Test(store_faults, no_inodes_left_is_enospc_and_changes_nothing) {
  char id[TFS_ID_MAX + 1], got[TFS_ID_MAX + 1];
  store_on_tmpfs("size=4m,nr_inodes=64,mode=0700");
  create(id);
  fill(1);
  char *argv[] = {"true", NULL};
  tfs_task_spec_t spec = {
      .argv = argv, .cwd = "/", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
  int existed;
  cr_assert_eq(tfs_task_create(store, &spec, got, &existed), -ENOSPC);
  cr_assert_eq(tfs_task_count(store), 1);
  cr_assert_eq(tfs_cancel_request(store, id, "tester"), -ENOSPC);
  cr_assert_eq(tfs_cancel_query(store, id, NULL, 0, NULL), 0);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(store, id, &rec), 0);
  cr_assert_eq(tfs_task_save(store, &rec), -ENOSPC);
  tfs_record_free(&rec);
  cr_assert_eq(dotfiles(id), 0);
  cr_assert_eq(tfs_task_load(store, id, &rec), 0);
  cr_assert_eq(rec.state, TFS_QUEUED);
  tfs_record_free(&rec);
}

/* The store's directory removed under an open handle: recording an owner
 * fails with ENOENT instead of writing anywhere else. */
Test(store_faults, a_removed_store_is_enoent) {
  snprintf(state_dir, sizeof state_dir, "%s/state", tmp);
  cr_assert_eq(tfs_store_open(state_dir, &store), 0);
  tu_rmrf(state_dir);
  cr_assert_eq(tfs_store_acquire(store, "test", NULL), -ENOENT);
  tfs_owner_t o;
  cr_assert_eq(tfs_store_owner(store, &o), -ENOENT);
  struct stat st;
  cr_assert_eq(lstat(state_dir, &st), -1, "the store came back");
}

/* A file that cannot be removed (immutable) keeps its task: forgetting
 * says EPERM (not "a symlink was planted"), and works once it can. */
Test(store_faults, a_file_that_cannot_go_keeps_its_task) {
  char id[TFS_ID_MAX + 1], path[PATH_MAX + 64];
  tfs_record_t rec;
  ended_task(id, TFS_COMPLETED);
  snprintf(path, sizeof path, "%s/tasks/%s/stuck", state_dir, id);
  cr_assert_eq(tu_write_file(path, "x", 1), 0);
  if (tu_sh(NULL, "chattr +i '%s' 2>/dev/null", path) != 0)
    cr_skip_test("no immutable files here (chattr)");
  cr_assert_eq(tfs_task_forget(store, id), -EPERM);
  cr_assert_eq(tfs_task_load(store, id, &rec), 0, "the task is no longer readable");
  cr_assert_eq(rec.state, TFS_COMPLETED);
  tfs_record_free(&rec);
  cr_assert_eq(tu_sh(NULL, "chattr -i '%s'", path), 0);
  cr_assert_eq(tfs_task_forget(store, id), 0);
  cr_assert_eq(tfs_task_count(store), 0);
}

/* A mount point inside a task's directory: forgetting says EBUSY, never
 * descends into the other file system (it could be anyone's files), and
 * keeps the task readable; after the unmount the task goes. */
Test(store_faults, a_mount_point_in_a_task_is_ebusy) {
  char id[TFS_ID_MAX + 1], sub[PATH_MAX + 64], inner[PATH_MAX + 80];
  tfs_record_t rec;
  ended_task(id, TFS_FAILED);
  snprintf(sub, sizeof sub, "%s/tasks/%s/sub", state_dir, id);
  cr_assert_eq(mkdir(sub, 0700), 0);
  if (mount("tmpfs", sub, "tmpfs", 0, "size=64k") != 0)
    cr_skip_test("cannot mount a tmpfs: %s", strerror(errno));
  snprintf(sub_mnt, sizeof sub_mnt, "%s", sub); /* unmounted by the teardown */
  snprintf(inner, sizeof inner, "%s/kept", sub);
  cr_assert_eq(mkdir(inner, 0700), 0);
  cr_assert_eq(tfs_task_forget(store, id), -EBUSY);
  struct stat st;
  cr_assert_eq(stat(inner, &st), 0, "the mounted file system was emptied");
  cr_assert_eq(tfs_task_load(store, id, &rec), 0, "the task is no longer readable");
  cr_assert_eq(rec.state, TFS_FAILED);
  tfs_record_free(&rec);
  cr_assert_eq(umount2(sub, 0), 0);
  sub_mnt[0] = 0;
  cr_assert_eq(tfs_task_forget(store, id), 0);
  cr_assert_eq(tfs_task_count(store), 0);
}

/* A directory planted where a file is replaced: the save and the stop
 * request fail (EISDIR), the directory stays, and no temp file is left. */
Test(store_faults, a_directory_planted_as_a_file_is_refused) {
  char id[TFS_ID_MAX + 1], path[PATH_MAX + 96];
  snprintf(state_dir, sizeof state_dir, "%s/state", tmp);
  cr_assert_eq(tfs_store_open(state_dir, &store), 0);
  create(id);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(store, id, &rec), 0);
  snprintf(path, sizeof path, "%s/tasks/%s/cancel", state_dir, id);
  cr_assert_eq(mkdir(path, 0700), 0);
  cr_assert_eq(tfs_cancel_request(store, id, "tester"), -EISDIR);
  snprintf(path, sizeof path, "%s/tasks/%s/record.json", state_dir, id);
  char moved[PATH_MAX + 128];
  snprintf(moved, sizeof moved, "%s.kept", path);
  cr_assert_eq(rename(path, moved), 0);
  cr_assert_eq(mkdir(path, 0700), 0);
  cr_assert_eq(tfs_task_save(store, &rec), -EISDIR);
  tfs_record_free(&rec);
  cr_assert_eq(dotfiles(id), 0, "a temp file was left behind");
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert(S_ISDIR(st.st_mode));
}

/* Bind-mounts the file src over dst (created empty) in slot i. */
static void bind_over(int i, const char *src, const char *dst) {
  cr_assert_eq(tu_write_file(dst, "", 0), 0);
  if (mount(src, dst, NULL, MS_BIND, NULL) != 0)
    cr_skip_test("cannot bind-mount %s: %s", src, strerror(errno));
  snprintf(binds[i], sizeof binds[i], "%s", dst);
}

/* A file whose size says 0 but holds bytes (what procfs, sysfs and some
 * network or FUSE file systems report) is read to its end; one longer than
 * a key can be is refused. Here: this process's /proc comm, named after the
 * task, bind-mounted over a key file, and its /proc maps over another. */
Test(store_faults, a_file_whose_size_lies_is_read_to_its_end) {
  char id[TFS_ID_MAX + 1], got[TFS_ID_MAX + 1], src[64], path[PATH_MAX + 64];
  snprintf(state_dir, sizeof state_dir, "%s/state", tmp);
  cr_assert_eq(tfs_store_open(state_dir, &store), 0);
  create(id);
  cr_assert_eq(prctl(PR_SET_NAME, id), 0);
  snprintf(src, sizeof src, "/proc/%d/comm", (int)getpid());
  snprintf(path, sizeof path, "%s/keys/sized-zero", state_dir);
  bind_over(0, src, path);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_size, 0, "comm has a size here: the test proves nothing");
  cr_assert_eq(tfs_key_lookup(store, "sized-zero", got), 0);
  cr_assert_str_eq(got, id);
  snprintf(src, sizeof src, "/proc/%d/maps", (int)getpid());
  snprintf(path, sizeof path, "%s/keys/too-long", state_dir);
  bind_over(1, src, path);
  cr_assert_eq(tfs_key_lookup(store, "too-long", got), TFS_ECORRUPT);
}
