/* Mount points: the default one, the checks before mounting on one, and
 * unmounting (umount2 as root, fusermount3 otherwise). */
#include <errno.h>
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

int fs_mount_check_point(const char *path, char *msg, size_t msglen) {
  struct stat st;
  if (stat(path, &st)) {
    int e = errno;
    if (e == ENOTCONN || e == ECONNABORTED)
      snprintf(msg, msglen,
               "%s is a stale mount (transport endpoint is not connected: its mount process "
               "died); run 'taskfs umount %s' and try again",
               path, path);
    else if (e == ENOENT)
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
  struct statfs sf;
  if (!statfs(path, &sf) && sf.f_type == FUSE_SUPER_MAGIC) {
    snprintf(msg, msglen,
             "%s is already a FUSE mount (a taskfs mount still running?); run 'taskfs umount %s' "
             "first",
             path, path);
    return -EBUSY;
  }
  return 0;
}

int fs_mount_unmount(const char *path, int lazy, char *msg, size_t msglen) {
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
