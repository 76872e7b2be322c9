/* The task lock: the supervisor's flock for its lifetime, the probes that
 * tell whether a supervisor lives, and the short holds of those who change
 * a task nobody supervises (settling it lost, failing it while queued,
 * forgetting it). */
#include "core/internal.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int tfs__open_lock(tfs_store_t *store, const char *id, int flags) {
  return tfs_task_file_open(store, id, TFS_FILE_LOCK, flags | O_NONBLOCK, 0600);
}

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

/* A supervisor that finds the lock busy waits LOCK_WAIT_MS at most: the
 * others who take it (settling a lost task, failing a queued one,
 * forgetting it) hold it a moment only, so a lock still busy after that
 * belongs to another supervisor. A task may be launched twice (a
 * `run --key` adopting a task whose launcher died races with a late first
 * launch), and the second supervisor must not wait, blocked, for the
 * task's whole life. */
#define LOCK_WAIT_MS 2000
#define LOCK_RETRY_MS 50

int tfs_task_lock(tfs_store_t *store, const char *id) {
  for (int waited = 0;; waited += LOCK_RETRY_MS) {
    int fd = tfs__task_trylock(store, id);
    if (fd != -EBUSY || waited >= LOCK_WAIT_MS)
      return fd;
    tfs__sleep_ms(LOCK_RETRY_MS);
  }
}

int tfs__task_trylock(tfs_store_t *store, const char *id) {
  int fd = tfs__open_lock(store, id, O_RDWR | O_CREAT);
  if (fd < 0)
    return fd;
  if (flock(fd, LOCK_EX | LOCK_NB)) {
    int e = errno == EWOULDBLOCK ? -EBUSY : -errno;
    close(fd);
    return e;
  }
  return fd;
}
