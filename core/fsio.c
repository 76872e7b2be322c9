/* File primitives of the store: atomic durable replacement, bounded reads,
 * and removal, all relative to directory fds and never following a symlink. */
#include "core/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
int tfs_write_atomic(int dirfd, const char *name, const void *data, size_t len) {
  return tfs__write_atomic_flags(dirfd, name, data, len, 0, NULL);
}

/* The one body of both: with TFS__WRITE_NOSYNC the two fsyncs are left out,
 * and everything else (symlink refusal, O_EXCL temp file, rename) stays. */
int tfs__write_atomic_flags(int dirfd, const char *name, const void *data, size_t len,
                            unsigned flags, struct stat *st_out) {
  int sync = !(flags & TFS__WRITE_NOSYNC);
  char tmp[300], rnd[8];
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
    snprintf(tmp, sizeof tmp, ".%s.tmp.%d.%s", name, (int)getpid(), rnd);
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
    if (!err && renameat(dirfd, tmp, dirfd, name))
      err = -errno;
    if (err) {
      unlinkat(dirfd, tmp, 0);
      return err;
    }
    return sync ? fsync_dir(dirfd) : 0;
  }
}

int tfs_read_small(int dirfd, const char *name, size_t max, char **out, size_t *len) {
  struct stat st;
  *out = NULL;
  if (len)
    *len = 0;
  /* O_NONBLOCK: a FIFO planted here must not hang the reader. */
  int fd TFS_AUTOCLOSE =
      openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return tfs__open_err(errno);
  if (fstat(fd, &st))
    return -errno;
  if (!S_ISREG(st.st_mode))
    return TFS_ECORRUPT;
  if ((size_t)st.st_size > max)
    return -EFBIG;
  size_t cap = (size_t)st.st_size + 1, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf)
    return -ENOMEM;
  /* The file may grow while we read; read until EOF but never past max. */
  for (;;) {
    if (n == cap) {
      if (cap > max) {
        free(buf);
        return -EFBIG;
      }
      size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
      char *nb = realloc(buf, ncap + 1);
      if (!nb) {
        free(buf);
        return -ENOMEM;
      }
      buf = nb;
      cap = ncap;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int e = -errno;
      free(buf);
      return e;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  if (n > max) {
    free(buf);
    return -EFBIG;
  }
  buf[n] = '\0';
  *out = buf;
  if (len)
    *len = n;
  return 0;
}

int tfs__rm_tree_at(int dirfd, const char *name) {
  if (unlinkat(dirfd, name, 0) == 0)
    return 0;
  if (errno == ENOENT)
    return 0;
  if (errno != EISDIR && errno != EPERM)
    return -errno;
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return tfs__open_err(errno);
  DIR *d = fdopendir(fd);
  if (!d) {
    int e = -errno;
    close(fd);
    return e;
  }
  int err = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    int e = tfs__rm_tree_at(fd, de->d_name);
    if (e && !err)
      err = e;
  }
  closedir(d);
  if (unlinkat(dirfd, name, AT_REMOVEDIR) && errno != ENOENT && !err)
    err = -errno;
  return err;
}

int tfs__grow(void *v, size_t *cap, size_t need, size_t size, size_t first) {
  void **pv = v;
  if (need <= *cap)
    return 0;
  size_t ncap = *cap ? *cap : first;
  while (ncap < need)
    ncap *= 2;
  void *nv = realloc(*pv, ncap * size);
  if (!nv)
    return -ENOMEM;
  *pv = nv;
  *cap = ncap;
  return 0;
}
