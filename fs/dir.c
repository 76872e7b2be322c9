/* Directory listings of the mount: the root, tasks/, by-key/ and each task
 * directory.
 *
 * An open directory holds a snapshot of its names taken at opendir (and
 * again at a rewind), so offsets are plain indexes that stay valid however
 * the store changes while it is read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "fs/fs.h"

typedef struct {
  node_t t;
  size_t idx;
  char **names;
  size_t n;
  int served;
} dirh_t;

static void dirh_clear(dirh_t *d) {
  tfs_ids_free(d->names, d->n);
  d->names = NULL;
  d->n = 0;
}

static void dirh_free(dirh_t *d) {
  if (!d)
    return;
  dirh_clear(d);
  free(d);
}

/* Takes the snapshot of names of tasks/ or by-key/; the other directories
 * list fixed names and need none. */
static int dirh_fill(mnt_t *m, dirh_t *d) {
  dirh_clear(d);
  tfs_store_t *s = fs_store(m);
  if (!s)
    return 0;
  /* Only real task directories, the names a lookup accepts (a symlink
   * planted in tasks/ is no task). */
  if (d->t == N_TASKS)
    return tfs_task_dirs(s, &d->names, &d->n);
  if (d->t == N_BYKEY)
    return tfs_key_list(s, &d->names, &d->n);
  return 0;
}

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mnt_t *m = fuse_req_userdata(req);
  size_t idx = 0;
  int kind = 0;
  node_t t = fs_ino_decode(m, ino, &idx, &kind);
  struct stat st;
  if (t == N_NONE || t == N_OWNER || t == N_KEY || (t == N_TASK && kind != K_TASKDIR)) {
    fuse_reply_err(req, t == N_NONE ? ENOENT : ENOTDIR);
    return;
  }
  if (t == N_TASK && fs_task_stat(fs_store(m), m->tasks.v[idx].name, &st)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  dirh_t *d = calloc(1, sizeof *d);
  if (!d) {
    fuse_reply_err(req, ENOMEM);
    return;
  }
  d->t = t;
  d->idx = idx;
  int err = dirh_fill(m, d);
  if (err) {
    fs_log(m, LOG_ERR, "cannot list the store: %s", tfs_strerror(err));
    dirh_free(d);
    fuse_reply_err(req, fs_errno(err));
    return;
  }
  fi->fh = (uintptr_t)d;
  fi->cache_readdir = 0;
  if (fuse_reply_open(req, fi) == -ENOENT)
    dirh_free(d);
}

/* Name and type of entry i of a directory (after "." and ".."): 1 if there
 * is one, 0 past the end, a negative errno if the name cannot get an
 * inode number. */
static int dirh_entry(mnt_t *m, dirh_t *d, size_t i, const char **name, struct stat *st) {
  static const char *const root_names[] = {"owner", "tasks", "by-key"};
  static const fuse_ino_t root_inos[] = {INO_OWNER, INO_TASKS, INO_BYKEY};
  memset(st, 0, sizeof *st);
  switch (d->t) {
  case N_ROOT:
    if (i >= 3)
      return 0;
    *name = root_names[i];
    st->st_ino = root_inos[i];
    st->st_mode = i == 0 ? S_IFREG : S_IFDIR;
    return 1;
  case N_TASK:
    if (i >= FS_NTASKFILES)
      return 0;
    *name = FS_KIND_NAME(fs_task_files[i].kind);
    st->st_ino = fs_task_ino(d->idx, fs_task_files[i].kind);
    st->st_mode = S_IFREG;
    return 1;
  case N_TASKS:
  case N_BYKEY:
    if (i >= d->n)
      return 0;
    *name = d->names[i];
    int err = fs_name_ino(m, d->t, *name, &st->st_ino);
    if (err)
      return err;
    st->st_mode = d->t == N_TASKS ? S_IFDIR : S_IFLNK;
    return 1;
  default:
    return 0;
  }
}

/* Fills buf with the entries from offset off on; returns the bytes used,
 * or a negative errno if not even the first entry could be named. */
static ssize_t fill_entries(fuse_req_t req, mnt_t *m, dirh_t *d, fuse_ino_t ino, char *buf,
                            size_t size, off_t off) {
  size_t pos = 0;
  for (size_t i = (size_t)off;; i++) {
    const char *name;
    struct stat st;
    if (i == 0 || i == 1) {
      memset(&st, 0, sizeof st);
      st.st_ino = ino;
      st.st_mode = S_IFDIR;
      name = i == 0 ? "." : "..";
    } else {
      int r = dirh_entry(m, d, i - 2, &name, &st);
      if (r < 0 && !pos)
        return r;
      if (r <= 0)
        break;
    }
    size_t need = fuse_add_direntry(req, buf + pos, size - pos, name, &st, (off_t)(i + 1));
    if (need > size - pos)
      break;
    pos += need;
  }
  return (ssize_t)pos;
}

void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   struct fuse_file_info *fi) {
  mnt_t *m = fuse_req_userdata(req);
  dirh_t *d = (dirh_t *)(uintptr_t)fi->fh;
  if (off == 0 && d->served) {
    /* rewinddir: see the store as it is now. */
    int err = dirh_fill(m, d);
    if (err) {
      fs_log(m, LOG_ERR, "cannot list the store: %s", tfs_strerror(err));
      fuse_reply_err(req, fs_errno(err));
      return;
    }
  }
  d->served = 1;
  char *buf = malloc(size);
  if (!buf) {
    fuse_reply_err(req, ENOMEM);
    return;
  }
  ssize_t n = fill_entries(req, m, d, ino, buf, size, off);
  if (n < 0)
    fuse_reply_err(req, (int)-n);
  else
    fuse_reply_buf(req, buf, (size_t)n);
  free(buf);
}

void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  dirh_free((dirh_t *)(uintptr_t)fi->fh);
  fuse_reply_err(req, 0);
}
