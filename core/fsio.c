/* File primitives of the store: atomic durable replacement, bounded reads,
 * and removal, all relative to directory fds and never following a symlink. */
#include "core/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

int tfs__open_err(int e) {
  if (e == ELOOP || e == ENOTDIR)
    return TFS_ESYMLINK;
  return -e;
}

int tfs__dir_reopen(int dirfd) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

/* Blocks in flock() until op succeeds, resuming after signals. */
int tfs__flock_wait(int fd, int op) {
  while (flock(fd, op))
    if (errno != EINTR)
      return -errno;
  return 0;
}

/* Reads a file holding "<id>\n" (a key's, a number's). */
int tfs__read_id_file(int dirfd, const char *name, char id_out[TFS_ID_MAX + 1]) {
  char *text;
  size_t len;
  int err = tfs__read_small(dirfd, name, 256, &text, &len);
  if (err == -ENOENT)
    return TFS_ENOTASK;
  if (err)
    return err == -EFBIG ? TFS_ECORRUPT : err;
  text[strcspn(text, "\n")] = '\0';
  if (!tfs_id_valid(text))
    err = TFS_ECORRUPT;
  else
    snprintf(id_out, TFS_ID_MAX + 1, "%s", text);
  free(text);
  return err;
}

/* A temp file of an atomic write (".<name>.tmp.<pid>.<rnd>") or of a key
 * (".tmp.<id>.<rnd>"): what a writer killed between creating it and its
 * rename or link leaves. */
static int is_temp_name(const char *name) {
  return name[0] == '.' && (!strncmp(name, ".tmp.", 5) || strstr(name, ".tmp."));
}

/* Removes the temp files in dir older than TFS__CREATING_GRACE_MS (one
 * younger may be a writer's, mid-write). */
void tfs__sweep_temps(int dirfd) {
  DIR *d = tfs__dir_open(dirfd);
  struct dirent *e;
  struct stat st;
  if (!d)
    return;
  int64_t now = tfs_now_ms();
  while ((e = readdir(d)))
    if (is_temp_name(e->d_name) && fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode) &&
        now - (int64_t)st.st_mtim.tv_sec * 1000 - st.st_mtim.tv_nsec / 1000000 >=
            TFS__CREATING_GRACE_MS)
      unlinkat(dirfd, e->d_name, 0);
  closedir(d);
}

DIR *tfs__dir_open(int dirfd) {
  int fd = tfs__dir_reopen(dirfd);
  if (fd < 0) {
    errno = -fd;
    return NULL;
  }
  DIR *d = fdopendir(fd);
  if (!d) {
    int e = errno;
    close(fd);
    errno = e;
  }
  return d;
}

/* Writes all of data, completing short writes and retrying EINTR. */
static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* The directory entry is made durable with an fsync of the directory. An
 * O_PATH dirfd cannot be fsynced, so it is reopened then. */
static int fsync_dir(int dirfd) {
  if (fsync(dirfd) == 0)
    return 0;
  /* Some filesystems cannot sync a directory; the rename is done anyway. */
  if (errno == EINVAL || errno == ENOTSUP)
    return 0;
  if (errno != EBADF)
    return -errno;
  int fd = tfs__dir_reopen(dirfd);
  if (fd < 0)
    return fd;
  int err = fsync(fd) && errno != EINVAL && errno != ENOTSUP ? -errno : 0;
  close(fd);
  return err;
}

/* The temp file lives in the same directory (rename is atomic only within a
 * filesystem) and starts with '.', which no id or key can, so no reader
 * mistakes it for a record, a task or a key. */
int tfs__write_atomic(int dirfd, const char *name, const void *data, size_t len) {
  return tfs__write_atomic_flags(dirfd, name, data, len, 0, NULL);
}

/* Writes data into a fresh temp file beside name (O_EXCL, 0600), fsynced
 * when sync is set; its name goes into tmp. The one body of every write
 * that puts a whole file in place. */
static int write_temp(int dirfd, const char *name, const void *data, size_t len, int sync,
                      struct stat *st_out, char tmp[300]) {
  char rnd[8];
  struct stat st;
  int err;
  if (!name || !*name || strchr(name, '/') || strlen(name) > 200)
    return -EINVAL;
  /* Refuse to replace a planted symlink: it means someone tampers with the
   * store, and the caller should hear about it. */
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
    return TFS_ESYMLINK;
  for (int attempt = 0;; attempt++) {
    if ((err = tfs__random_base36(rnd, 6)))
      return err;
    rnd[6] = '\0';
    snprintf(tmp, 300, ".%s.tmp.%d.%s", name, (int)getpid(), rnd);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST && attempt < 10)
        continue;
      return tfs__open_err(errno);
    }
    err = write_all(fd, data, len);
    if (!err && sync && fsync(fd))
      err = -errno;
    if (!err && st_out && fstat(fd, st_out))
      err = -errno;
    if (close(fd) && !err)
      err = -errno;
    if (err)
      unlinkat(dirfd, tmp, 0);
    return err;
  }
}

/* With TFS__WRITE_NOSYNC the two fsyncs are left out, and everything else
 * (symlink refusal, O_EXCL temp file, rename) stays. */
int tfs__write_atomic_flags(int dirfd, const char *name, const void *data, size_t len,
                            unsigned flags, struct stat *st_out) {
  int sync = !(flags & TFS__WRITE_NOSYNC);
  char tmp[300];
  int err = write_temp(dirfd, name, data, len, sync, st_out, tmp);
  if (err)
    return err;
  if (renameat(dirfd, tmp, dirfd, name)) {
    err = -errno;
    unlinkat(dirfd, tmp, 0);
    return err;
  }
  return sync ? fsync_dir(dirfd) : 0;
}

/* linkat() never replaces a name: of two creators exactly one wins, and
 * the other learns that the file exists (-EEXIST) instead of replacing
 * what the winner may already have handed out. */
int tfs__write_new(int dirfd, const char *name, const void *data, size_t len) {
  return tfs__write_new_flags(dirfd, name, data, len, 0);
}

/* With TFS__WRITE_NOSYNC the name is as exclusive as ever but not yet
 * durable; tfs__sync_name() makes it so later. */
int tfs__write_new_flags(int dirfd, const char *name, const void *data, size_t len,
                         unsigned flags) {
  int sync = !(flags & TFS__WRITE_NOSYNC);
  char tmp[300];
  int err = write_temp(dirfd, name, data, len, sync, NULL, tmp);
  if (err)
    return err;
  if (linkat(dirfd, tmp, dirfd, name, 0))
    err = -errno;
  unlinkat(dirfd, tmp, 0);
  return err ? err : sync ? fsync_dir(dirfd) : 0;
}

/* Makes a file written with TFS__WRITE_NOSYNC durable: its bytes, then
 * its name (the directory). */
int tfs__sync_name(int dirfd, const char *name) {
  int fd TFS_AUTOCLOSE = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return tfs__open_err(errno);
  if (fsync(fd))
    return -errno;
  return fsync_dir(dirfd);
}

int tfs__read_small(int dirfd, const char *name, size_t max, char **out, size_t *len) {
  *out = NULL;
  if (len)
    *len = 0;
  /* O_NONBLOCK: a FIFO planted here must not hang the reader. */
  int fd TFS_AUTOCLOSE =
      openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return tfs__open_err(errno);
  return tfs__read_fd(fd, max, out, len);
}

int tfs__read_fd(int fd, size_t max, char **out, size_t *len) {
  struct stat st;
  *out = NULL;
  if (len)
    *len = 0;
  if (fstat(fd, &st))
    return -errno;
  if (!S_ISREG(st.st_mode))
    return TFS_ECORRUPT;
  if ((size_t)st.st_size > max)
    return -EFBIG;
  /* The file may grow while we read; read until EOF but never past max. */
  tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
  size_t n;
  int err = tfs_buf_reserve(&b, (size_t)st.st_size + 1);
  if (err || (err = tfs_buf_read(&b, fd, max)))
    return err;
  char *buf = tfs_buf_take(&b, &n);
  if (!buf)
    return -ENOMEM;
  *out = buf;
  if (len)
    *len = n;
  return 0;
}

/* 1 if the directory fd is the root of a mount below parent (a mount point
 * planted in a task, or a bind mount): a removal never crosses into another
 * file system, whatever it holds. */
static int mount_root(int parent, int fd) {
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_INO, &sx) == 0 &&
      (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
    return !!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  struct stat a, b;
  return fstat(parent, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev != b.st_dev;
}

/* unlinkat() says EISDIR for a directory (POSIX allows EPERM, which is
 * also what an immutable or append-only file gets): a name that turns out
 * not to be a directory keeps the unlink's error, so a file that cannot be
 * removed is reported as such, not as a planted symlink. In the top
 * directory, last (if not NULL) goes only once everything else has. */
static int rm_tree(int dirfd, const char *name, const char *last) {
  if (unlinkat(dirfd, name, 0) == 0)
    return 0;
  if (errno == ENOENT)
    return 0;
  if (errno != EISDIR && errno != EPERM)
    return -errno;
  int unlink_err = errno;
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOTDIR ? -unlink_err : tfs__open_err(errno);
  if (mount_root(dirfd, fd)) {
    close(fd);
    return -EBUSY;
  }
  DIR *d = fdopendir(fd);
  if (!d) {
    int e = -errno;
    close(fd);
    return e;
  }
  int err = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
        (last && !strcmp(de->d_name, last)))
      continue;
    int e = rm_tree(fd, de->d_name, NULL);
    if (e && !err)
      err = e;
  }
  if (last && !err)
    err = rm_tree(fd, last, NULL); /* whatever it is: a planted dir too */
  closedir(d);
  if (unlinkat(dirfd, name, AT_REMOVEDIR) && errno != ENOENT && !err)
    err = -errno;
  return err;
}

int tfs__rm_tree_at(int dirfd, const char *name) {
  return rm_tree(dirfd, name, NULL);
}

/* A task goes whole or not at all. It is first renamed out of the tasks'
 * names (TFS__GONE_PREFIX, which no id can start with), so a remover
 * killed half way leaves no task with half its files, only a directory
 * the next prune's sweep removes. last (the record) goes last, and a removal that
 * fails (a file that cannot be removed, a mount point inside) is renamed
 * back: the task stays readable as it was, ended, and a later forget
 * finishes it. */
int tfs__rm_task(const tfs_store_t *store, const char *id, const char *last) {
  char gone[TFS_ID_MAX + sizeof TFS__GONE_PREFIX];
  int err = tfs__writable(store);
  if (err)
    return err;
  snprintf(gone, sizeof gone, "%s%s", TFS__GONE_PREFIX, id);
  if (renameat(store->tasks_fd, id, store->tasks_fd, gone))
    return rm_tree(store->tasks_fd, id, last);
  err = rm_tree(store->tasks_fd, gone, last);
  if (err)
    renameat(store->tasks_fd, gone, store->tasks_fd, id);
  return err;
}
