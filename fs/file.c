/* Open files of the mount: open, read of the small files, release.
 *
 * Small files (record.json, owner, cancel) are rendered at open and kept
 * for that open file; they are opened with direct_io, so a read never
 * stops at a stale cached size. A transcript keeps an fd on its backing
 * file instead and is read through the page cache, but for a non-blocking
 * handle while its task runs, which is direct_io (fs/transcript.c). Every
 * handle is on the mount's list until the kernel releases it, so that the
 * ones still open at unmount are freed too. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "fs/fs.h"

static void file_track(mnt_t *m, tfile_t *f) {
  f->all_prev = NULL;
  f->all_next = m->open_files;
  if (m->open_files)
    m->open_files->all_prev = f;
  m->open_files = f;
}

static void file_free(mnt_t *m, tfile_t *f) {
  if (f->all_prev)
    f->all_prev->all_next = f->all_next;
  else if (m->open_files == f)
    m->open_files = f->all_next;
  if (f->all_next)
    f->all_next->all_prev = f->all_prev;
  if (f->kind == K_TRANSCRIPT)
    fs_watch_detach(m, f);
  if (f->fd >= 0)
    close(f->fd);
  free(f->buf);
  free(f);
}

void fs_free_open_files(mnt_t *m) {
  while (m->open_files)
    file_free(m, m->open_files);
}

/* Refuses what no open may do: open a directory, or write anything but
 * cancel, or write cancel from another uid than the store owner's (the
 * kernel's permission check lets root through, this one does not). */
static int open_allowed(fuse_req_t req, mnt_t *m, node_t t, int kind, int acc) {
  if (t != N_OWNER && t != N_TASK && t != N_QUEUE)
    return t == N_NONE ? -ENOENT : -EISDIR;
  if ((t == N_TASK && kind == K_TASKDIR) || (t == N_QUEUE && kind == Q_DIR))
    return -EISDIR;
  int writable = t == N_TASK ? kind == K_CANCEL || kind == K_CONTROL || kind == K_STDIN
                 : t == N_QUEUE ? kind == Q_PARALLEL || kind == Q_PAUSED
                                : 0;
  if (acc != O_RDONLY && (!writable || fuse_req_ctx(req)->uid != m->uid))
    return -EACCES;
  /* stdin is written, or read as empty (a recursive grep opens it): what
   * the task reads is its own. Both at once is refused. */
  if (t == N_TASK && kind == K_STDIN && acc == O_RDWR)
    return -EACCES;
  return 0;
}

/* Gives a new handle what its reads need: a transcript its backing fd (or
 * none yet, if the supervisor has not made it) and a place on the watch;
 * a small file its rendered content. A write-only open (`echo 1 >
 * cancel`) never reads, so it renders nothing: rendering cancel loads
 * record.json and probes the lock, work a stop request should not wait
 * for. */
static int file_fill(mnt_t *m, tfile_t *f, node_t t, int acc) {
  if (t == N_TASK && f->kind == K_TRANSCRIPT) {
    int fd = fs_transcript_open(fs_store(m), m->tasks.v[f->task].name);
    if (fd < 0 && fd != -ENOENT)
      return fd;
    f->fd = fd < 0 ? -1 : fd;
    fs_watch_attach(m, f);
    return 0;
  }
  if (acc == O_WRONLY)
    return 0;
  int err = t == N_QUEUE ? fs_queue_render(m, f->task, f->kind - FS_QFILE, &f->buf, &f->len)
                         : fs_render(m, t, f->task, f->kind, &f->buf, &f->len);
  if (err == TFS_ECORRUPT)
    fs_log(m, LOG_ERR, "task %s: its record is corrupt; reading it gives EIO",
           m->tasks.v[f->task].name);
  return err;
}

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mnt_t *m = fuse_req_userdata(req);
  size_t idx = 0;
  int kind = 0;
  node_t t = fs_ino_decode(m, ino, &idx, &kind);
  int acc = fi->flags & O_ACCMODE;
  struct stat st;
  tfile_t *f = NULL;

  int err = open_allowed(req, m, t, kind, acc);
  if (!err && t == N_TASK && fs_task_stat(fs_store(m), m->tasks.v[idx].name, &st))
    err = -ENOENT;
  if (!err && t == N_TASK && kind == K_STDIN && !fs_task_has_stdin(m, m->tasks.v[idx].name))
    err = -ENOENT;
  if (!err && !(f = calloc(1, sizeof *f)))
    err = -ENOMEM;
  if (!err) {
    f->kind = t == N_OWNER ? -1 : t == N_QUEUE ? FS_QFILE + kind : kind;
    f->task = idx;
    f->for_write = acc != O_RDONLY;
    f->fd = -1;
    err = file_fill(m, f, t, acc);
  }
  if (err) {
    free(f); /* a render that fails allocates nothing */
    fuse_reply_err(req, fs_errno(err));
    return;
  }
  /* A transcript is read through the page cache, unless its task runs and
   * the handle is non-blocking (an event loop's, which polls and is owed
   * exact readiness); every other file stays direct_io (see
   * fs/transcript.c). */
  f->cached = f->kind == K_TRANSCRIPT && f->fd >= 0 &&
              (!(fi->flags & O_NONBLOCK) || fs_transcript_final(m, f));
  fi->direct_io = !f->cached;
  fi->keep_cache = f->cached;
  fi->fh = (uintptr_t)f;
  file_track(m, f);
  if (fuse_reply_open(req, fi) == -ENOENT) {
    /* The caller was interrupted; nobody will release this handle. */
    file_free(m, f);
  }
}

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  mnt_t *m = fuse_req_userdata(req);
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  if (f->kind == K_TRANSCRIPT) {
    fs_transcript_read(req, m, f, size, off);
    return;
  }
  if ((size_t)off >= f->len)
    fuse_reply_buf(req, NULL, 0);
  else
    fuse_reply_buf(req, f->buf + off, size < f->len - (size_t)off ? size : f->len - (size_t)off);
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mnt_t *m = fuse_req_userdata(req);
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  if (f)
    file_free(m, f);
  fuse_reply_err(req, 0);
}
