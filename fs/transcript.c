/* Transcripts through the mount: reads straight from the backing file, and
 * poll readiness.
 *
 * A transcript is read through an fd opened at open(): each read that
 * reaches the mount is answered with fuse_reply_data() on that fd, which
 * splices the bytes into /dev/fuse when the kernel allows it.
 *
 * Two kinds of handle (decided at open, fs/file.c):
 *   - cached (keep_cache): every blocking handle (cat, grep, less, tail),
 *     and every handle once the task has ended. Reads within the size the
 *     kernel knows are served from the page cache without a round trip (a
 *     second `cat` runs at the speed of the backing file); a read past it
 *     makes the kernel ask for the attributes (attr timeout 0), and a size
 *     that changed drops the file's cached pages, so the last page is never
 *     served stale and `tail -f` sees every byte. That is sound because a
 *     transcript only grows: a byte once written never changes (but for a
 *     line a full disk cut short, docs/ARCHITECTURE.md "Fresh, and
 *     cached").
 *   - direct_io: a non-blocking handle (an event loop's) while its task
 *     runs. Every read reaches us, so poll can be exact for it.
 * Poll says readable when the handle has bytes past the furthest point it
 * has read, or the task has ended. A cached handle's reads that the page
 * cache answers never reach the mount, so for it "read" also counts what
 * poll has already told it: once poll said readable, the next poll waits
 * for new bytes (a follower that reads to EOF after each wake-up misses
 * nothing and never spins; one that reads less before polling again waits
 * for the next line). Otherwise the store watch (fs/watch.c) wakes the
 * poller later.
 *
 * A direct_io read costs one round trip through the mount per request, so
 * requests are made as large as a reply can be spliced (fs_transcript_sizes):
 * the kernel asks for at most that much, and st_blksize tells readers such
 * as cat to read in blocks that large. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"

/* The sizes of transcript reads (see fs/fs.h). libfuse splices a reply
 * through a pipe it grows to hold the whole reply plus three pages
 * (fuse_send_data_iov); a pipe larger than /proc/sys/fs/pipe-max-size needs
 * CAP_SYS_RESOURCE, and without it every larger reply falls back to a
 * malloc, a pread and a write per request (measured: a 1 MiB request at
 * 0.04x the speed of the backing file). So a reply holds at most the
 * largest pipe minus four pages (1 MiB - 16 KiB with the default), never
 * less than the 128 KiB the kernel asks for without max_pages, never more
 * than the 1 MiB of FUSE's 256 pages. The block size readers are told is
 * the largest power of two that fits, since coreutils rounds st_blksize up
 * to one (a 1 MiB block would be one request of 1 MiB - 16 KiB and one of
 * 16 KiB). */
void fs_transcript_sizes(size_t *read_max, blksize_t *io_size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), pipe_max = 1u << 20;
  FILE *f = fopen("/proc/sys/fs/pipe-max-size", "re");
  unsigned long v;
  if (f && fscanf(f, "%lu", &v) == 1 && v >= page)
    pipe_max = v;
  if (f)
    fclose(f);
  size_t pages = pipe_max / page;
  pages = pages < 32 + 4 ? 32 : pages - 4 > 256 ? 256 : pages - 4;
  *read_max = pages * page;
  blksize_t b = (blksize_t)page;
  while ((size_t)b * 2 <= *read_max)
    b *= 2;
  *io_size = b;
}

/* Opens a task's transcript for reading (the core refuses anything but a
 * regular file, and never blocks in the open). O_NONBLOCK stays on: every
 * request is served on one thread. */
int fs_transcript_open(tfs_store_t *s, const char *id) {
  if (!s)
    return -ENOENT;
  return tfs_task_file_open(s, id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
}

/* A handle opened before the supervisor made the transcript tries again. */
static void backing_retry(mnt_t *m, tfile_t *f) {
  if (f->fd >= 0)
    return;
  int fd = fs_transcript_open(fs_store(m), m->tasks.v[f->task].name);
  if (fd >= 0)
    f->fd = fd;
}

/* The reply names the transcript's fd and offset instead of carrying the
 * bytes: libfuse splices them from the page cache into /dev/fuse when the
 * kernel allows it (one copy instead of two), and otherwise reads them
 * itself. The size is clipped to what the file holds now, so the reply
 * never promises bytes that are not there (the transcript only grows), and
 * a read at the end gets an empty reply (EOF). */
void fs_transcript_read(fuse_req_t req, mnt_t *m, tfile_t *f, size_t size, off_t off) {
  backing_retry(m, f);
  if (f->fd < 0) {
    fuse_reply_buf(req, NULL, 0);
    return;
  }
  if (size > m->read_max)
    size = m->read_max; /* what the kernel asks never exceeds it */
  struct stat st;
  if (fstat(f->fd, &st)) {
    fuse_reply_err(req, errno);
    return;
  }
  if (off < 0 || off >= st.st_size) {
    fuse_reply_buf(req, NULL, 0);
    return;
  }
  if ((uint64_t)size > (uint64_t)(st.st_size - off))
    size = (size_t)(st.st_size - off);
  if ((uint64_t)off + size > f->seen)
    f->seen = (uint64_t)off + size;
  struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);
  bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
  bv.buf[0].fd = f->fd;
  bv.buf[0].pos = off;
  fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
}

/* The record says the task ended (a supervisor that died reads lost): it
 * is saved after the supervisor's last write to the transcript, so from
 * then on the transcript is final. A store or record that cannot be read
 * counts as ended too: the reader will see what there is and its end. */
int fs_transcript_final(mnt_t *m, tfile_t *f) {
  tfs_store_t *s = fs_store(m);
  if (!s)
    return 1;
  tfs_record_t rec;
  int err = tfs_task_load(s, m->tasks.v[f->task].name, &rec);
  int final = err || tfs_state_terminal(rec.state);
  tfs_record_free(&rec);
  return final;
}

/* Whether a poll on the transcript should report it readable now: bytes
 * past the furthest point this handle has read, or a task that has ended
 * (the reader will see EOF), or one that cannot be read at all. */
static int ready_at(mnt_t *m, tfile_t *f, uint64_t *size) {
  struct stat st;
  backing_retry(m, f);
  *size = f->fd >= 0 && !fstat(f->fd, &st) ? (uint64_t)st.st_size : 0;
  return *size > f->seen || fs_transcript_final(m, f);
}

int fs_transcript_ready(mnt_t *m, tfile_t *f) {
  uint64_t size;
  return ready_at(m, f, &size);
}

/* Readiness of an open file. A transcript that is not ready keeps the
 * poll handle, and the hub's watch (or its tick) wakes it (fs/watch.c). Small files are
 * always readable. Never ENOSYS: one ENOSYS turns poll off for the whole
 * mount. */
void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                struct fuse_pollhandle *ph) {
  mnt_t *m = fuse_req_userdata(req);
  tfile_t *f = (tfile_t *)(uintptr_t)fi->fh;
  if (f->kind != K_TRANSCRIPT) {
    if (ph)
      fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, POLLIN | POLLRDNORM | (f->kind == K_CANCEL ? POLLOUT | POLLWRNORM : 0));
    return;
  }
  if (ph) {
    if (f->ph)
      fuse_pollhandle_destroy(f->ph);
    f->ph = ph;
  }
  uint64_t size;
  int ready = ready_at(m, f, &size);
  if (ready && f->cached && size > f->seen)
    f->seen = size; /* told: see the top of this file */
  if (ready && f->ph) {
    fuse_pollhandle_destroy(f->ph);
    f->ph = NULL;
  }
  fuse_reply_poll(req, ready ? POLLIN | POLLRDNORM : 0);
}
