/* Nodes of the mount: what an inode number names, and its attributes.
 *
 * Every answer is computed from the store at the moment it is asked:
 * attributes of files are never cached by the kernel (attr and entry
 * timeouts are 0), so sizes and mtimes are fresh at every stat, which is
 * what `tail -f` (it polls st_size on FUSE) and `ls -l` need. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs.h"

const fs_task_file_t fs_task_files[FS_NTASKFILES] = {
    [TFS_VIEW_RECORD] = {K_RECORD, 0400, TFS_FILE_RECORD},
    [TFS_VIEW_TRANSCRIPT] = {K_TRANSCRIPT, 0400, TFS_FILE_TRANSCRIPT},
    [TFS_VIEW_CANCEL] = {K_CANCEL, 0600, TFS_FILE_CANCEL},
    [TFS_VIEW_OWNER] = {K_TOWNER, 0400, TFS_FILE_RECORD},
    [TFS_VIEW_CONTROL] = {K_CONTROL, 0600, TFS_FILE_CONTROL},
    [TFS_VIEW_STDIN] = {K_STDIN, 0600, TFS_FILE_STDIN},
};

static const fs_task_file_t *task_file(int kind) {
  return kind > K_TASKDIR && kind < K_NKINDS ? &fs_task_files[FS_KIND_VIEW(kind)] : NULL;
}

/* Splits an inode number into its node type, table index and file kind. */
node_t fs_ino_decode(mnt_t *m, fuse_ino_t ino, size_t *idx, int *kind) {
  switch (ino) {
  case INO_ROOT:
    return N_ROOT;
  case INO_OWNER:
    return N_OWNER;
  case INO_TASKS:
    return N_TASKS;
  case INO_BYKEY:
    return N_BYKEY;
  case INO_QUEUES:
    return N_QUEUES;
  }
  if (ino & INO_QUEUE_BIT) {
    uint64_t i = ((ino & ~INO_QUEUE_BIT) - INO_TASK_BASE) / Q_NKINDS;
    if ((ino & ~INO_QUEUE_BIT) < INO_TASK_BASE || i >= m->queues.n)
      return N_NONE;
    *idx = i;
    *kind = (int)(((ino & ~INO_QUEUE_BIT) - INO_TASK_BASE) % Q_NKINDS);
    return N_QUEUE;
  }
  if (ino & INO_KEY_BIT) {
    uint64_t i = (ino & ~INO_KEY_BIT) - INO_TASK_BASE;
    if ((ino & ~INO_KEY_BIT) < INO_TASK_BASE || i >= m->keys.n)
      return N_NONE;
    *idx = i;
    return N_KEY;
  }
  if (ino < INO_TASK_BASE)
    return N_NONE;
  uint64_t i = (ino - INO_TASK_BASE) / 8, k = (ino - INO_TASK_BASE) % 8;
  if (i >= m->tasks.n || k >= K_NKINDS)
    return N_NONE;
  *idx = i;
  *kind = (int)k;
  return N_TASK;
}

fuse_ino_t fs_task_ino(size_t idx, int kind) {
  return INO_TASK_BASE + (fuse_ino_t)idx * 8 + (fuse_ino_t)kind;
}

fuse_ino_t fs_key_ino(size_t idx) {
  return INO_KEY_BIT | (INO_TASK_BASE + (fuse_ino_t)idx);
}

/* The inode number of a task id (dir N_TASKS), key (dir N_BYKEY) or queue
 * name (dir N_QUEUES), given
 * a stable index in its name table on first sight. */
int fs_name_ino(mnt_t *m, node_t dir, const char *name, fuse_ino_t *ino) {
  size_t idx;
  nametab_t *t = dir == N_TASKS ? &m->tasks : dir == N_QUEUES ? &m->queues : &m->keys;
  int err = fs_tab_intern(t, name, &idx);
  if (err)
    return err;
  *ino = dir == N_TASKS    ? fs_task_ino(idx, K_TASKDIR)
         : dir == N_QUEUES ? fs_queue_ino(idx, Q_DIR)
                           : fs_key_ino(idx);
  return 0;
}

/* Maps a store error to the errno a file system caller should see. */
int fs_errno(int err) {
  switch (err) {
  case TFS_ENOTASK:
  case TFS_EBADID:
    return ENOENT;
  case TFS_ECORRUPT:
  case TFS_ESYMLINK:
    return EIO;
  case TFS_EFINISHED:
    return ESRCH;
  }
  if (err < 0 && err > -4000)
    return -err;
  return EIO;
}

/* 0 if the task is a real directory (fills st), else -ENOENT; an absent
 * store (s NULL) has no tasks. */
int fs_task_stat(tfs_store_t *s, const char *id, struct stat *st) {
  return s && tfs_task_stat(s, id, st) == 0 ? 0 : -ENOENT;
}

void fs_dir_attr(mnt_t *m, struct stat *st, fuse_ino_t ino, const struct stat *from) {
  memset(st, 0, sizeof *st);
  st->st_ino = ino;
  st->st_mode = S_IFDIR | 0500;
  st->st_nlink = 2;
  st->st_uid = m->uid;
  st->st_gid = m->gid;
  st->st_blksize = 4096;
  if (from) {
    st->st_atim = from->st_atim;
    st->st_mtim = from->st_mtim;
    st->st_ctim = from->st_ctim;
  } else {
    st->st_atim = st->st_mtim = st->st_ctim = m->mount_time;
  }
}

static void file_attr(mnt_t *m, struct stat *st, fuse_ino_t ino, mode_t mode, off_t size,
                      const struct stat *from) {
  fs_dir_attr(m, st, ino, from);
  st->st_mode = S_IFREG | mode;
  st->st_nlink = 1;
  st->st_size = size;
  st->st_blocks = (size + 511) / 512;
}

/* The size a read of a fresh open of a small file will give; a file that
 * does not render (a corrupt record) has size 0, so it still stats and
 * its task keeps listing, while opening it fails. */
static off_t rendered_size(mnt_t *m, node_t t, size_t idx, int kind) {
  char *buf = NULL;
  size_t len = 0;
  int err = fs_render(m, t, idx, kind, &buf, &len);
  free(buf);
  return err ? 0 : (off_t)len;
}

/* The attributes of a task directory or of one of its files. */
static int task_node_attr(mnt_t *m, tfs_store_t *s, fuse_ino_t ino, size_t idx, int kind,
                          struct stat *st) {
  const char *id = m->tasks.v[idx].name;
  const fs_task_file_t *tf = task_file(kind);
  struct stat tst, bst;
  if (fs_task_stat(s, id, &tst))
    return -ENOENT;
  if (!tf) {
    fs_dir_attr(m, st, ino, &tst);
    return 0;
  }
  if (kind == K_STDIN && !fs_task_has_stdin(m, id))
    return -ENOENT;
  /* A transcript has the backing file's size and mtime, every time: tail
   * -f reads up to st_size; one not created yet reads as empty. A small
   * file has the size a fresh open renders, the backing file's times. */
  int missing = tfs_task_file_stat(s, id, tf->backing, &bst) != 0;
  off_t size = kind != K_TRANSCRIPT ? rendered_size(m, N_TASK, idx, kind)
               : missing            ? 0
                                    : bst.st_size;
  file_attr(m, st, ino, tf->mode, size, missing ? &tst : &bst);
  /* Readers that size their buffers by st_blksize (cat, cp) then ask for
   * one full request per read (fs/transcript.c). */
  if (kind == K_TRANSCRIPT && m->io_size)
    st->st_blksize = m->io_size;
  return 0;
}

/* Fills the attributes of any node from the store as it is now. */
int fs_node_attr(mnt_t *m, fuse_ino_t ino, struct stat *st) {
  size_t idx = 0;
  int kind = 0;
  node_t t = fs_ino_decode(m, ino, &idx, &kind);
  tfs_store_t *s = fs_store(m);
  struct stat bst;

  switch (t) {
  case N_NONE:
    return -ENOENT;
  case N_ROOT:
  case N_BYKEY:
  case N_QUEUES:
    fs_dir_attr(m, st, ino, NULL);
    return 0;
  case N_QUEUE:
    return fs_queue_attr(m, idx, kind, ino, st);
  case N_TASKS:
    fs_dir_attr(m, st, ino, s && !tfs_store_stat(s, &bst) ? &bst : NULL);
    return 0;
  case N_OWNER:
    file_attr(m, st, ino, 0400, rendered_size(m, t, 0, 0),
              s && !tfs_owner_stat(s, &bst) ? &bst : NULL);
    return 0;
  case N_KEY:
    return fs_key_attr(m, idx, ino, st);
  case N_TASK:
    return task_node_attr(m, s, ino, idx, kind, st);
  }
  return -ENOENT;
}

/* How long the kernel may trust what we said. Sizes and mtimes of files
 * must be fresh at every stat (tail -f reads up to st_size), so files get
 * 0. Directories only carry permissions, and with default_permissions every
 * path walk checks them: caching them saves a GETATTR per component. The
 * fixed top-level nodes never change; a task directory is cached for a
 * second, which is safe because its name is looked up again at every walk
 * (entry timeout 0), so a pruned task vanishes at once. The four names
 * inside a task directory never change either. */
double fs_attr_timeout(mnt_t *m, fuse_ino_t ino) {
  size_t idx = 0;
  int kind = 0;
  switch (fs_ino_decode(m, ino, &idx, &kind)) {
  case N_ROOT:
  case N_TASKS:
  case N_BYKEY:
    return 60.0;
  case N_TASK:
    return kind == K_TASKDIR ? 1.0 : 0.0;
  case N_QUEUES:
    return 1.0;
  case N_QUEUE:
    return kind == Q_DIR ? 1.0 : 0.0;
  default:
    return 0.0;
  }
}

void fs_reply_entry(fuse_req_t req, mnt_t *m, fuse_ino_t ino, double entry_timeout) {
  struct fuse_entry_param e;
  memset(&e, 0, sizeof e);
  int err = fs_node_attr(m, ino, &e.attr);
  if (err) {
    fuse_reply_err(req, -err);
    return;
  }
  e.ino = ino;
  e.attr_timeout = fs_attr_timeout(m, ino);
  e.entry_timeout = entry_timeout;
  fuse_reply_entry(req, &e);
}
