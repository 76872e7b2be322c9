/* The files of a task by role, the names faces show, and the stats a face
 * needs: the one place that knows what a task directory holds and checks
 * that each file is what it should be (a regular file; the doorbell a
 * FIFO) before anyone reads or writes it. */
#include "core/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const file_names[TFS_FILE_COUNT] = {
    [TFS_FILE_RECORD] = "record.json",
    [TFS_FILE_TRANSCRIPT] = "transcript",
    [TFS_FILE_CANCEL] = "cancel",
    [TFS_FILE_LOCK] = "lock",
    [TFS_FILE_DOORBELL] = "doorbell",
    [TFS_FILE_SUPERVISOR_LOG] = "supervisor.log",
    [TFS_FILE_STDERR_LINES] = "stderr-lines",
    [TFS_FILE_SPACE_RESERVE] = "space-reserve",
    [TFS_FILE_CONTROL] = "control",
    [TFS_FILE_STDIN] = "stdin",
    [TFS_FILE_LINEIDX] = "lines.idx",
    [TFS_FILE_ANSWER] = "answer.json",
};

static const char *const view_names[TFS_VIEW_COUNT] = {
    [TFS_VIEW_RECORD] = "record.json",
    [TFS_VIEW_TRANSCRIPT] = "transcript",
    [TFS_VIEW_CANCEL] = "cancel",
    [TFS_VIEW_OWNER] = "owner",
    [TFS_VIEW_CONTROL] = "control",
    [TFS_VIEW_STDIN] = "stdin",
};

/* The doorbell and the stdin are FIFOs by design; every other file must be
 * a regular file. */
static int file_is_fifo(tfs_task_file_t which) {
  return which == TFS_FILE_DOORBELL || which == TFS_FILE_STDIN;
}

const char *tfs_task_file_name(tfs_task_file_t which) {
  return (unsigned)which < TFS_FILE_COUNT ? file_names[which] : NULL;
}

const char *tfs_view_name(tfs_view_t which) {
  return (unsigned)which < TFS_VIEW_COUNT ? view_names[which] : NULL;
}

/* The one check: O_NONBLOCK so that a FIFO planted in the store cannot hang
 * the open (ENXIO, a FIFO opened for writing without a reader, is such a
 * plant too), then the type, then the caller's blocking mode back. */
int tfs__open_in_task(tfs_store_t *store, const char *id, const char *name, int flags, mode_t mode,
                      int want_fifo) {
  int err = flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND) ? tfs__writable(store) : 0;
  if (err)
    return err;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  int fd = openat(dfd, name, flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
  if (fd < 0)
    return errno == ENXIO ? TFS_ECORRUPT : tfs__open_err(errno);
  struct stat st;
  if (fstat(fd, &st) || !(want_fifo ? S_ISFIFO(st.st_mode) : S_ISREG(st.st_mode))) {
    close(fd);
    return TFS_ECORRUPT;
  }
  int fl = fcntl(fd, F_GETFL);
  if (!(flags & O_NONBLOCK) && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))) {
    int e = -errno;
    close(fd);
    return e;
  }
  return fd;
}

int tfs_task_file_open(tfs_store_t *store, const char *id, tfs_task_file_t which, int flags,
                       mode_t mode) {
  const char *name = tfs_task_file_name(which);
  if (!name)
    return -EINVAL;
  return tfs__open_in_task(store, id, name, flags, mode, file_is_fifo(which));
}

int tfs__task_openat(tfs_store_t *store, const char *id, const char *name, int flags, mode_t mode) {
  if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
    return -EINVAL;
  /* The doorbell and stdin, FIFOs by design, are checked by their users. */
  if (!strcmp(name, file_names[TFS_FILE_DOORBELL]))
    return tfs_task_file_open(store, id, TFS_FILE_DOORBELL, flags, mode);
  if (!strcmp(name, file_names[TFS_FILE_STDIN]))
    return tfs_task_file_open(store, id, TFS_FILE_STDIN, flags, mode);
  return tfs__open_in_task(store, id, name, flags, mode, 0);
}

int tfs_task_stat(tfs_store_t *store, const char *id, struct stat *st) {
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  int err = tfs__usable(store);
  if (err)
    return err;
  if (store->task_fd >= 0 && !strcmp(id, store->task_id))
    return fstat(store->task_fd, st) ? -errno : 0;
  if (fstatat(store->tasks_fd, id, st, AT_SYMLINK_NOFOLLOW))
    return errno == ENOENT || errno == ENOTDIR ? TFS_ENOTASK : -errno;
  return S_ISDIR(st->st_mode) ? 0 : TFS_ENOTASK;
}

int tfs_task_file_stat(tfs_store_t *store, const char *id, tfs_task_file_t which, struct stat *st) {
  const char *name = tfs_task_file_name(which);
  if (!name)
    return -EINVAL;
  /* Relative to the task dir, opened without following a symlink: a
   * symlink planted as the dir is no task. */
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd == TFS_ESYMLINK ? TFS_ENOTASK : dfd;
  if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW))
    return -errno;
  int ok = file_is_fifo(which) ? S_ISFIFO(st->st_mode) : S_ISREG(st->st_mode);
  return ok ? 0 : -ENOENT;
}

int tfs_task_file_remove(tfs_store_t *store, const char *id, tfs_task_file_t which) {
  const char *name = tfs_task_file_name(which);
  if (!name)
    return -EINVAL;
  int err = tfs__writable(store);
  if (err)
    return err;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  if (unlinkat(dfd, name, 0) && errno != ENOENT)
    return -errno;
  return 0;
}

int tfs_store_stat(const tfs_store_t *store, struct stat *st) {
  int err = tfs__usable(store);
  if (err)
    return err;
  return fstat(store->tasks_fd, st) ? -errno : 0;
}

int tfs_owner_stat(const tfs_store_t *store, struct stat *st) {
  int err = tfs__usable(store);
  if (err)
    return err;
  if (fstatat(store->fd, TFS__OWNER_FILE, st, AT_SYMLINK_NOFOLLOW))
    return -errno;
  return S_ISREG(st->st_mode) ? 0 : -ENOENT;
}

int tfs__task_path(const tfs_store_t *store, const char *id, char *buf, size_t len) {
  int n = id ? snprintf(buf, len, "%s/tasks/%s", store->path, id)
             : snprintf(buf, len, "%s/tasks", store->path);
  return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int tfs_task_path(const tfs_store_t *store, const char *id, char *buf, size_t len) {
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  return tfs__task_path(store, id, buf, len);
}
