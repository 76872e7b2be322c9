/* Mount points: the default one, the checks before mounting on one, dead
 * mounts, and unmounting (umount2 as root, fusermount3 otherwise).
 *
 * A mount whose process died (kill -9) stays in the mount table, and the
 * kernel answers every request to it with ENOTCONN. But it caches the
 * root's attributes (60 s), so stat() of the mount point can still
 * succeed; statfs() is never cached and always asks the dead daemon, so it
 * is the test for a dead mount, and /proc/self/mountinfo tells whose mount
 * it is. A dead taskfs mount is cleared before mounting, never stacked
 * over. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "taskfs/mount.h"

#define FUSE_SUPER_MAGIC 0x65735546
#define DEAD_MOUNTS_MAX 16 /* dead mounts stacked by older versions, cleared in one go */

int fs_mount_default_point(char *buf, size_t len) {
  const char *rt = getenv("XDG_RUNTIME_DIR");
  const char *home = getenv("HOME");
  int n;
  if (rt && *rt == '/')
    n = snprintf(buf, len, "%s/taskfs", rt);
  else if (home && *home == '/')
    n = snprintf(buf, len, "%s/taskfs", home);
  else
    return -ENOENT;
  return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The canonical path of a mount point without touching the mount itself
 * (a dead one answers ENOTCONN): its parent resolved, then its name. */
static int canonical_point(const char *path, char out[PATH_MAX]) {
  char dir[PATH_MAX], real[PATH_MAX];
  if (realpath(path, out))
    return 0;
  snprintf(dir, sizeof dir, "%s", path);
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/')
    dir[--n] = 0;
  char *slash = strrchr(dir, '/');
  if (!slash)
    return -EINVAL;
  const char *name = slash + 1;
  *slash = 0;
  if (!realpath(dir[0] ? dir : "/", real))
    return -errno;
  return snprintf(out, PATH_MAX, "%s/%s", strcmp(real, "/") ? real : "", name) < PATH_MAX
             ? 0
             : -ENAMETOOLONG;
}

/* Undoes mountinfo's octal escapes (\040 for a space, ...) in place. */
static void unescape(char *s) {
  char *o = s;
  for (char *p = s; *p; p++) {
    if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
        p[3] <= '7') {
      *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
      p += 3;
    } else {
      *o++ = *p;
    }
  }
  *o = 0;
}

/* The file system type of the topmost mount on path ("fuse.taskfs"), from
 * /proc/self/mountinfo; "" when path is no mount point. Lines read: "ID
 * PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE ...". */
static void mount_type_at(const char *path, char *type, size_t len) {
  char want[PATH_MAX], line[2 * PATH_MAX + 512];
  type[0] = 0;
  if (canonical_point(path, want))
    return;
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return;
  while (fgets(line, sizeof line, f)) {
    char *save, *field = strtok_r(line, " ", &save);
    for (int i = 0; field && i < 4; i++)
      field = strtok_r(NULL, " ", &save);
    if (!field)
      continue;
    unescape(field);
    if (strcmp(field, want))
      continue;
    while ((field = strtok_r(NULL, " ", &save)) && strcmp(field, "-"))
      ;
    if (field && (field = strtok_r(NULL, " ", &save)))
      snprintf(type, len, "%s", field); /* a later line is a mount on top */
  }
  fclose(f);
}

/* 1 if path is a FUSE mount whose daemon is gone (statfs: ENOTCONN). */
static int is_dead(const char *path) {
  struct statfs sf;
  return statfs(path, &sf) && (errno == ENOTCONN || errno == ECONNABORTED);
}

/* Clears the dead taskfs mounts on path (all of them, should older
 * versions have stacked several); 1 if it cleared any, 0 if none was
 * there, or a negative errno with msg set. A dead mount of another file
 * system is not ours to clear: it is only reported. */
static int clear_dead(const char *path, char *msg, size_t msglen) {
  char type[64];
  int cleared = 0;
  for (int i = 0; i < DEAD_MOUNTS_MAX && is_dead(path); i++) {
    mount_type_at(path, type, sizeof type);
    if (strcmp(type, "fuse.taskfs")) {
      snprintf(msg, msglen,
               "%s is a stale %s mount (transport endpoint is not connected: its mount process "
               "died); unmount it ('taskfs umount %s' or 'fusermount3 -uz %s') and try again",
               path, type[0] ? type : "FUSE", path, path);
      return -ENOTCONN;
    }
    int err = fs_mount_unmount(path, 1, msg, msglen);
    if (err)
      return err;
    cleared = 1;
  }
  return cleared;
}

int fs_mount_check_point(const char *path, int *cleared, char *msg, size_t msglen) {
  struct stat st;
  struct statfs sf;
  int err = clear_dead(path, msg, msglen);
  if (err < 0)
    return err;
  if (cleared)
    *cleared = err;
  if (stat(path, &st)) {
    int e = errno;
    if (e == ENOENT)
      snprintf(msg, msglen, "mount point %s does not exist; create it with 'mkdir -p %s'", path,
               path);
    else
      snprintf(msg, msglen, "cannot use mount point %s: %s", path, strerror(e));
    return -e;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(msg, msglen, "mount point %s is not a directory", path);
    return -ENOTDIR;
  }
  /* Mounting over a live mount would hide it, not replace it. */
  if (!statfs(path, &sf) && sf.f_type == FUSE_SUPER_MAGIC) {
    snprintf(msg, msglen,
             "%s is already a FUSE mount (a taskfs mount still running?); run 'taskfs umount %s' "
             "first",
             path, path);
    return -EBUSY;
  }
  return 0;
}

/* One unmount of the topmost mount on path. */
static int unmount_once(const char *path, int lazy, char *msg, size_t msglen) {
  if (geteuid() == 0) {
    if (!umount2(path, lazy ? MNT_DETACH : 0))
      return 0;
    int e = errno;
    if (e == EBUSY)
      snprintf(msg, msglen,
               "%s is busy (a process has a file open in it); close it, or use "
               "'taskfs umount --lazy %s'",
               path, path);
    else if (e == EINVAL)
      snprintf(msg, msglen, "%s is not a mount point", path);
    else
      snprintf(msg, msglen, "cannot unmount %s: %s", path, strerror(e));
    return -e;
  }
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(msg, msglen, "cannot fork: %s", strerror(errno));
    return -errno;
  }
  if (pid == 0) {
    execlp("fusermount3", "fusermount3", lazy ? "-uz" : "-u", "--", path, (char *)NULL);
    fprintf(stderr, "taskfs umount: cannot run fusermount3: %s\n", strerror(errno));
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return 0;
  snprintf(msg, msglen, "fusermount3 could not unmount %s (see its message above)", path);
  return -EIO;
}

/* A dead mount has nothing left to protect: it is detached lazily, also
 * when a file in it is still open. Dead taskfs mounts left underneath
 * (stacked by older versions) go in the same call. */
int fs_mount_unmount(const char *path, int lazy, char *msg, size_t msglen) {
  int err = unmount_once(path, lazy || is_dead(path), msg, msglen);
  if (err)
    return err;
  char type[64];
  for (int i = 0; i < DEAD_MOUNTS_MAX && is_dead(path); i++) {
    mount_type_at(path, type, sizeof type);
    if (strcmp(type, "fuse.taskfs") || unmount_once(path, 1, msg, msglen))
      break;
  }
  return 0;
}
