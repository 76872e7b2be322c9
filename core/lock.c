/* The task lock: the supervisor's flock for its lifetime, and the probes
 * that tell whether a supervisor lives. */
#include "core/internal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int tfs__open_lock(tfs_store_t *store, const char *id, int flags) {
  int fd = tfs_task_openat(store, id, "lock", flags | O_NONBLOCK, 0600);
  if (fd < 0)
    return fd;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    return TFS_ECORRUPT;
  }
  return fd;
}

/* ---- the lock ---------------------------------------------------------------- */

int tfs_task_alive(tfs_store_t *store, const char *id) {
  int fd TFS_AUTOCLOSE = tfs__open_lock(store, id, O_RDONLY);
  if (fd == -ENOENT)
    return 0;
  if (fd < 0)
    return fd;
  /* LOCK_SH: two probing readers never mistake each other for the
   * supervisor, which holds LOCK_EX. */
  if (flock(fd, LOCK_SH | LOCK_NB) == 0)
    return 0; /* the close releases it */
  return errno == EWOULDBLOCK ? 1 : -errno;
}

int tfs_task_lock(tfs_store_t *store, const char *id) {
  int fd = tfs__open_lock(store, id, O_RDWR | O_CREAT);
  if (fd < 0)
    return fd;
  while (flock(fd, LOCK_EX)) {
    if (errno != EINTR) {
      int e = -errno;
      close(fd);
      return e;
    }
  }
  return fd;
}
