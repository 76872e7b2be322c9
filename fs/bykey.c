/* by-key/: one symlink per task key, pointing at ../tasks/<id>. A key is
 * resolved at every lookup, stat and readlink, so a key that now names
 * another task (a --rerun) shows the new one at once. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends a copy of name to the growing array; -ENOMEM leaves it as it
 * was. */
static int names_push(char ***names, size_t *n, size_t *cap, const char *name) {
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    char **v = realloc(*names, ncap * sizeof *v);
    if (!v)
      return -ENOMEM;
    *names = v;
    *cap = ncap;
  }
  char *copy = strdup(name);
  if (!copy)
    return -ENOMEM;
  (*names)[(*n)++] = copy;
  return 0;
}

/* The keys of the store, sorted. On failure nothing is returned (and
 * nothing leaks): a listing with names missing would be a lie. */
int fs_key_list(tfs_store_t *s, char ***names, size_t *n) {
  *names = NULL;
  *n = 0;
  int fd = openat(tfs_store_fd(s), "keys", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : -errno;
  DIR *dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return -errno;
  }
  size_t cap = 0;
  int err = 0;
  struct dirent *de;
  while (!err && (de = readdir(dir))) {
    /* A key is a regular file; anything else planted in keys/ is not one,
     * and listing it would show a name that lookup then refuses. */
    if (tfs_key_valid(de->d_name) && (de->d_type == DT_REG || de->d_type == DT_UNKNOWN))
      err = names_push(names, n, &cap, de->d_name);
  }
  closedir(dir);
  if (err) {
    tfs_ids_free(*names, *n);
    *names = NULL;
    *n = 0;
    return err;
  }
  if (*n)
    qsort(*names, *n, sizeof **names, cmp_str);
  return 0;
}
