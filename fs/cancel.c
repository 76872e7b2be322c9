/* Writes to tasks/<id>/cancel: the one writable file of the mount. A
 * write records a stop request through the core (tfs_cancel_request); the
 * task's supervisor acts on it. Only the store owner's uid may write. */
#include <errno.h>
#include <stdio.h>
#include <syslog.h>

#include "fs/fs.h"

/* Writes to cancel: exactly "1" or "1\n" in one write records a stop
 * request; a lone "\n" after an accepted "1" is accepted too (a writer that
 * splits the line). Anything else is EINVAL and records nothing. A task
 * that has already ended gives ESRCH ("No such process"). */
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                 struct fuse_file_info *fi) {
  mnt_t *m = fuse_req_userdata(req);
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  const struct fuse_ctx *ctx = fuse_req_ctx(req);
  if (f->kind != K_CANCEL || ctx->uid != m->uid) {
    fuse_reply_err(req, EACCES);
    return;
  }
  f->wrote = 1;
  int one = (size == 1 && buf[0] == '1') || (size == 2 && buf[0] == '1' && buf[1] == '\n');
  if (!one) {
    if (size == 1 && buf[0] == '\n' && f->accepted)
      fuse_reply_write(req, size);
    else
      fuse_reply_err(req, EINVAL);
    return;
  }
  tfs_store_t *s = fs_store(m);
  const char *id = m->tasks.v[f->task].name;
  char who[96];
  snprintf(who, sizeof who, "mount uid %u pid %d", (unsigned)ctx->uid, (int)ctx->pid);
  int err = s ? tfs_cancel_request(s, id, who) : -ENOENT;
  if (err) {
    if (err != TFS_EFINISHED)
      fs_log(m, LOG_ERR, "task %s: cannot record the stop request: %s", id, tfs_strerror(err));
    fuse_reply_err(req, fs_errno(err));
    return;
  }
  fs_log(m, LOG_INFO, "task %s: stop requested by %s", id, who);
  f->accepted = 1;
  fuse_reply_write(req, size);
}

/* A cancel opened for writing and closed before anything was written
 * (`: > cancel`) is empty input: close() reports EINVAL, and nothing is
 * recorded. A shell that dup2()s the fd closes the original before writing
 * through the copy; that early close fails too, but shells ignore it and the
 * write that follows is judged on its own. */
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  fuse_reply_err(req, f && f->kind == K_CANCEL && f->for_write && !f->wrote ? EINVAL : 0);
}
