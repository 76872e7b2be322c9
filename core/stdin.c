/* A task's stdin: a FIFO in its directory (TFS_FILE_STDIN) that its
 * supervisor holds open for reading and writing (so writers never get
 * ENXIO while it lives, and it never reads an end) and feeds to the
 * worker through a pipe. Writers open it without blocking: no reader
 * means no live supervisor, so the task has ended. */
#include "core/internal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tfs_stdin_open(tfs_store_t *store, const char *id) {
  return tfs__fifo_make(store, id, TFS_FILE_STDIN);
}

/* Writes what fits now; waits for room at most until deadline. */
static int write_some(int fd, const char *p, size_t len, int64_t deadline, size_t *done) {
  while (*done < len) {
    ssize_t w = write(fd, p + *done, len - *done);
    if (w > 0) {
      *done += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno != EAGAIN)
      return errno == EPIPE ? TFS_EFINISHED : -errno;
    int64_t left = deadline - tfs_now_ms();
    if (left <= 0)
      return deadline ? -ETIMEDOUT : -EAGAIN;
    struct pollfd pfd = {fd, POLLOUT, 0};
    if (poll(&pfd, 1, left > 1000 ? 1000 : (int)left) < 0 && errno != EINTR)
      return -errno;
    if (pfd.revents & (POLLERR | POLLHUP))
      return TFS_EFINISHED;
  }
  return 0;
}

int tfs_stdin_write(tfs_store_t *store, const char *id, const void *data, size_t len,
                    int64_t timeout_ms, size_t *written) {
  tfs_record_t rec;
  size_t done = 0;
  if (written)
    *written = 0;
  int err = tfs__writable(store);
  if (err)
    return err;
  if ((err = tfs_task_load(store, id, &rec)) == 0)
    err = !rec.with_stdin                  ? TFS_ENOSTDIN
          : tfs_state_terminal(rec.state) ? TFS_EFINISHED
                                           : 0;
  tfs_record_free(&rec);
  if (err)
    return err;
  int fd TFS_AUTOCLOSE = tfs_task_file_open(store, id, TFS_FILE_STDIN, O_WRONLY | O_NONBLOCK, 0);
  /* No FIFO yet (a supervisor on its way) or no reader (none alive). */
  if (fd == -ENOENT || fd == TFS_ECORRUPT)
    return tfs_task_alive(store, id) == 1 ? -EAGAIN : TFS_EFINISHED;
  if (fd < 0)
    return fd;
  /* The supervisor may end between the open and the write: SIGPIPE must
   * not end the writer (the MCP server, the mount). */
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  int64_t deadline = timeout_ms > 0 ? tfs_now_ms() + timeout_ms : 0;
  err = write_some(fd, data, len, deadline, &done);
  if (err == TFS_EFINISHED) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (written)
    *written = done;
  return err;
}
