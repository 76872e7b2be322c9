/* by-key/: one symlink per task key, pointing at ../tasks/<id>. A key is
 * resolved at every lookup, stat and readlink, so a key that now names
 * another task (a --rerun) shows the new one at once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"

/* Looks NAME up in by-key/: a valid key that names a task gets a stable
 * inode number in the key table. */
void fs_bykey_lookup(fuse_req_t req, mnt_t *m, const char *name) {
  char id[TFS_ID_MAX + 1];
  fuse_ino_t ino;
  tfs_store_t *s = fs_store(m);
  int err = !s || !tfs_key_valid(name) || tfs_key_lookup(s, name, id) ? -ENOENT : 0;
  if (!err)
    err = fs_name_ino(m, N_BYKEY, name, &ino);
  if (err)
    fuse_reply_err(req, -err);
  else
    fs_reply_entry(req, m, ino, 0.0);
}

/* The attributes of by-key/<key>: a symlink as long as its target's
 * text, or ENOENT once the key names nothing. */
int fs_key_attr(mnt_t *m, size_t idx, fuse_ino_t ino, struct stat *st) {
  char id[TFS_ID_MAX + 1];
  tfs_store_t *s = fs_store(m);
  if (!s || tfs_key_lookup(s, m->keys.v[idx].name, id))
    return -ENOENT;
  fs_dir_attr(m, st, ino, NULL);
  st->st_mode = S_IFLNK | 0777;
  st->st_nlink = 1;
  st->st_size = (off_t)(strlen("../tasks/") + strlen(id));
  return 0;
}

void fs_op_readlink(fuse_req_t req, fuse_ino_t ino) {
  mnt_t *m = fuse_req_userdata(req);
  size_t idx = 0;
  int kind = 0;
  char id[TFS_ID_MAX + 1], target[TFS_ID_MAX + 16];
  tfs_store_t *s = fs_store(m);
  if (fs_ino_decode(m, ino, &idx, &kind) != N_KEY) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  if (!s || tfs_key_lookup(s, m->keys.v[idx].name, id)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  snprintf(target, sizeof target, "../tasks/%s", id);
  fuse_reply_readlink(req, target);
}
