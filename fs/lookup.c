/* Walking the mount's names: lookup, getattr and setattr. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs.h"

/* The three names at the top of the mount. */
static void lookup_root(fuse_req_t req, mnt_t *m, const char *name) {
  if (!strcmp(name, "owner"))
    fs_reply_entry(req, m, INO_OWNER, 60.0);
  else if (!strcmp(name, "tasks"))
    fs_reply_entry(req, m, INO_TASKS, 60.0);
  else if (!strcmp(name, "by-key"))
    fs_reply_entry(req, m, INO_BYKEY, 60.0);
  else
    fuse_reply_err(req, ENOENT);
}

/* A task id in tasks/: only a well-formed id whose directory is a real
 * directory is a task; it gets a stable inode number in the task table. */
static void lookup_task(fuse_req_t req, mnt_t *m, const char *name) {
  struct stat st;
  fuse_ino_t ino;
  int err = !tfs_id_valid(name) || fs_task_stat(fs_store(m), name, &st) ? -ENOENT : 0;
  if (!err)
    err = fs_name_ino(m, N_TASKS, name, &ino);
  if (err)
    fuse_reply_err(req, -err);
  else
    fs_reply_entry(req, m, ino, 0.0);
}

/* A file inside a task directory; the names never change. */
static void lookup_task_file(fuse_req_t req, mnt_t *m, size_t idx, const char *name) {
  for (size_t i = 0; i < FS_NTASKFILES; i++) {
    if (!strcmp(name, FS_KIND_NAME(fs_task_files[i].kind))) {
      fs_reply_entry(req, m, fs_task_ino(idx, fs_task_files[i].kind), 60.0);
      return;
    }
  }
  fuse_reply_err(req, ENOENT);
}

void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  mnt_t *m = fuse_req_userdata(req);
  size_t idx = 0;
  int kind = 0;
  node_t t = fs_ino_decode(m, parent, &idx, &kind);

  if (strlen(name) > 255) {
    fuse_reply_err(req, ENAMETOOLONG);
    return;
  }
  switch (t) {
  case N_ROOT:
    lookup_root(req, m, name);
    return;
  case N_TASKS:
    lookup_task(req, m, name);
    return;
  case N_BYKEY:
    fs_bykey_lookup(req, m, name);
    return;
  case N_TASK:
    if (kind == K_TASKDIR)
      lookup_task_file(req, m, idx, name);
    else
      fuse_reply_err(req, ENOTDIR);
    return;
  case N_OWNER:
  case N_KEY:
    fuse_reply_err(req, ENOTDIR);
    return;
  default:
    fuse_reply_err(req, ENOENT);
  }
}

void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mnt_t *m = fuse_req_userdata(req);
  struct stat st;
  int err = fs_node_attr(m, ino, &st);
  if (err)
    fuse_reply_err(req, -err);
  else
    fuse_reply_attr(req, &st, fs_attr_timeout(m, ino));
}

/* Only `cancel` may be truncated to zero (by its owner), which is what a
 * shell's `>` becomes when atomic O_TRUNC is off; every other attribute
 * change is refused. */
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                   struct fuse_file_info *fi) {
  mnt_t *m = fuse_req_userdata(req);
  size_t idx = 0;
  int kind = 0;
  node_t t = fs_ino_decode(m, ino, &idx, &kind);
  int times = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
              FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
  if (!(to_set & FUSE_SET_ATTR_SIZE)) {
    fuse_reply_err(req, EPERM);
    return;
  }
  if (t == N_TASK && kind == K_CANCEL && attr->st_size == 0 &&
      !(to_set & ~(FUSE_SET_ATTR_SIZE | times)) && fuse_req_ctx(req)->uid == m->uid) {
    fs_op_getattr(req, ino, fi);
    return;
  }
  int dir = (t == N_TASK && kind == K_TASKDIR) || t == N_ROOT || t == N_TASKS || t == N_BYKEY;
  fuse_reply_err(req, dir ? EISDIR : EACCES);
}
