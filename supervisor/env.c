/* The worker's environment. The launcher hands the overrides over as
 * "NAME=VALUE\0" records in an anonymous memfd (see launch.c) whose number
 * `--env-fd N` names; they are read once, first thing, and the fd closed.
 * The worker's environment is ours with them applied (tfs_env_merge); only
 * the forked worker switches environ to it, so the supervisor itself never
 * runs with an LD_PRELOAD or a TASKFS_* meant for the user's program.
 */
#include "supervisor/sup.h"
#include "taskfs/cleanup.h"
#include "taskfs/text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* Reads the whole of fd from its start into a new NUL-terminated buffer.
 * Returns 0 with *out and *len, or a negative errno. */
static int read_fd(int fd, char **out, size_t *len_out) {
  size_t len = 0, cap = 4096;
  char *buf TFS_AUTOFREE = malloc(cap);
  if (!buf)
    return -ENOMEM;
  for (;;) {
    if (cap - len < 2) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb)
        return -ENOMEM;
      buf = nb;
    }
    ssize_t n = pread(fd, buf + len, cap - len - 1, (off_t)len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)
      break;
    len += (size_t)n;
  }
  buf[len] = 0;
  *out = buf;
  *len_out = len;
  buf = NULL;
  return 0;
}

/* The non-empty records of buf (len bytes), as a new NULL-terminated array
 * of pointers into it, or NULL (out of memory). */
static char **split_records(char *buf, size_t len) {
  size_t nrec = 0, k = 0;
  for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
    nrec++;
  char **over = calloc(nrec + 1, sizeof *over);
  if (!over)
    return NULL;
  for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
    if (buf[i])
      over[k++] = buf + i;
  return over;
}

int sup_env_read(sup_t *s, int fd) {
  char *buf TFS_AUTOFREE = NULL;
  size_t len = 0;
  int err = read_fd(fd, &buf, &len);
  close(fd);
  if (err)
    return err;
  char **over TFS_AUTOFREE = split_records(buf, len);
  if (!over)
    return -ENOMEM;
  err = tfs_env_merge(environ, over, &s->worker_env);
  if (err)
    return err;
  s->env_buf = buf;
  buf = NULL;
  return 0;
}
