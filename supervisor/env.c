/* The worker's environment. The launcher hands the overrides over as
 * "NAME=VALUE\0" records in an anonymous memfd (see launch.c) whose number
 * `--env-fd N` names; they are read once, first thing, and the fd closed.
 * The worker's environment is ours with them applied (tfs_env_merge); only
 * the forked worker switches environ to it, so the supervisor itself never
 * runs with an LD_PRELOAD or a TASKFS_* meant for the user's program.
 */
#include "supervisor/sup.h"
#include "taskfs/buf.h"
#include "taskfs/cleanup.h"
#include "taskfs/text.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

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
  /* From its start: the launcher's writes left the shared offset at the end. */
  tfs_buf_t text TFS_AUTOBUF = TFS_BUF_INIT;
  int err = lseek(fd, 0, SEEK_SET) < 0 ? -errno : tfs_buf_read(&text, fd, SIZE_MAX);
  close(fd);
  size_t len = 0;
  char *buf TFS_AUTOFREE = err ? NULL : tfs_buf_take(&text, &len);
  if (err || !buf)
    return err ? err : -ENOMEM;
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
