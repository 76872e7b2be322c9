/* The FUSE operations of the mount (low-level API): the table libfuse
 * calls, the session's init, and the refusal of every change to the
 * namespace. Each operation lives in the file of its job (see fs/fs.h).
 *
 * Every answer is computed from the store at the moment it is asked:
 * nothing is cached by the kernel but the permissions of directories
 * (fs/node.c says for how long) and transcripts, which only grow (a byte
 * once written never changes; fs/transcript.c says why a cached read is
 * never stale); every other file is opened with direct_io, so a read
 * never stops at a stale cached size. */
#include <errno.h>

#include "fs/fs.h"

/* Nothing can be created, removed or renamed through the mount. EACCES is
 * what a non-root caller already gets from the kernel (directories are
 * 0500); root gets the same answer from here. */
static void op_refuse_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                            dev_t rdev) {
  fuse_reply_err(req, EACCES);
}
static void op_refuse_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  fuse_reply_err(req, EACCES);
}
static void op_refuse_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
  fuse_reply_err(req, EACCES);
}
static void op_refuse_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                              const char *name) {
  fuse_reply_err(req, EACCES);
}
static void op_refuse_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                             fuse_ino_t newparent, const char *newname, unsigned int flags) {
  fuse_reply_err(req, EACCES);
}
static void op_refuse_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                           const char *newname) {
  fuse_reply_err(req, EACCES);
}
static void op_refuse_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                             struct fuse_file_info *fi) {
  fuse_reply_err(req, EACCES);
}

static void op_init(void *userdata, struct fuse_conn_info *conn) {
  mnt_t *m = userdata;
  /* `echo 1 > cancel` should arrive as one open(O_TRUNC), not a truncate. */
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
    conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  /* What is cached (a transcript) only grows, and the kernel drops its
   * pages when it learns a new size (a read past the cached size asks for
   * it): without this it would also ask for the attributes before every
   * cached read. */
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  /* Transcript reads are answered from the backing fd (fuse_reply_data);
   * splice lets those bytes go to /dev/fuse without a copy through our
   * memory. */
  if (conn->capable & FUSE_CAP_SPLICE_WRITE)
    conn->want |= FUSE_CAP_SPLICE_WRITE;
  if (conn->capable & FUSE_CAP_SPLICE_MOVE)
    conn->want |= FUSE_CAP_SPLICE_MOVE;
  /* Each read that reaches us is one round trip, so requests are as large
   * as a reply can be spliced: libfuse derives max_pages (the largest request)
   * from max_write, and the only writes (cancel, control, stdin) are a
   * line each. */
  fs_transcript_sizes(&m->read_max, &m->io_size);
  if (conn->max_write > m->read_max)
    conn->max_write = (unsigned)m->read_max;
}

const struct fuse_lowlevel_ops fs_ops = {
    .init = op_init,
    .lookup = fs_op_lookup,
    .getattr = fs_op_getattr,
    .setattr = fs_op_setattr,
    .readlink = fs_op_readlink,
    .mknod = op_refuse_mknod,
    .mkdir = op_refuse_mkdir,
    .unlink = op_refuse_unlink,
    .rmdir = op_refuse_unlink,
    .symlink = op_refuse_symlink,
    .rename = op_refuse_rename,
    .link = op_refuse_link,
    .open = fs_op_open,
    .read = fs_op_read,
    .write = fs_op_write,
    .release = fs_op_release,
    .flush = fs_op_flush,
    .opendir = fs_op_opendir,
    .readdir = fs_op_readdir,
    .releasedir = fs_op_releasedir,
    .create = op_refuse_create,
    .poll = fs_op_poll,
};
