/* Writes to tasks/<id>/control and tasks/<id>/stdin, the task's control
 * lines and its input. A control write is one or more lines, each a
 * request as core parses them ("pause", "pause free-slot", "resume",
 * "signal SIG", "eof"): all of them must parse before any is sent, and a
 * bad one is EINVAL with nothing sent. A stdin write goes to the FIFO the
 * task's supervisor feeds to its worker, without waiting (the mount has
 * one thread): a worker that does not read makes it EAGAIN. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "fs/fs.h"

int fs_task_has_stdin(mnt_t *m, const char *id) {
  tfs_record_t rec;
  tfs_store_t *s = fs_store(m);
  int has = s && tfs_task_load(s, id, &rec) == 0 && rec.with_stdin;
  tfs_record_free(&rec);
  return has;
}

#define CONTROL_LINES_MAX 16

/* The lines of buf as requests, all checked first. */
static int control_lines(const char *buf, size_t size, tfs_control_t *req, int *n) {
  *n = 0;
  for (size_t at = 0; at < size;) {
    const char *nl = memchr(buf + at, '\n', size - at);
    size_t len = nl ? (size_t)(nl - (buf + at)) : size - at;
    if (len && (*n >= CONTROL_LINES_MAX || tfs_control_parse(buf + at, len, &req[*n]) != 0))
      return EINVAL;
    if (len)
      (*n)++;
    at += len + (nl ? 1 : 0);
  }
  return *n ? 0 : EINVAL;
}

static int control_write(mnt_t *m, const char *id, const char *buf, size_t size,
                         const struct fuse_ctx *ctx) {
  tfs_control_t req[CONTROL_LINES_MAX];
  char who[96];
  int n, err = control_lines(buf, size, req, &n);
  if (err)
    return err;
  snprintf(who, sizeof who, "mount uid %u pid %d", (unsigned)ctx->uid, (int)ctx->pid);
  tfs_store_t *s = fs_store(m);
  for (int i = 0; i < n; i++) {
    int e = s ? tfs_control_request(s, id, &req[i], who) : -ENOENT;
    if (e) {
      /* Not running (queued, not paused for a resume), no stdin: the
       * request does not fit the task, as a bad line does not. */
      if (e != TFS_EFINISHED && e != TFS_ENOTRUNNING && e != TFS_ENOSTDIN)
        fs_log(m, LOG_ERR, "task %s: cannot send %s: %s", id, tfs_control_name(req[i].action),
               tfs_strerror(e));
      return e == TFS_ENOTRUNNING || e == TFS_ENOSTDIN ? EINVAL : fs_errno(e);
    }
    fs_log(m, LOG_INFO, "task %s: %s requested by %s", id, tfs_control_name(req[i].action), who);
  }
  return 0;
}

ssize_t fs_control_write(mnt_t *m, tfile_t *f, const char *buf, size_t size,
                         const struct fuse_ctx *ctx) {
  const char *id = m->tasks.v[f->task].name;
  if (f->kind == K_CONTROL) {
    int err = control_write(m, id, buf, size, ctx);
    return err ? -err : (ssize_t)size;
  }
  tfs_store_t *s = fs_store(m);
  size_t done = 0;
  int err = s ? tfs_stdin_write(s, id, buf, size, 0, &done) : -ENOENT;
  if (err == -EAGAIN && done)
    return (ssize_t)done; /* what fit: the writer writes the rest again */
  if (err)
    return err == TFS_ENOSTDIN ? -EINVAL : -fs_errno(err);
  return (ssize_t)size;
}
