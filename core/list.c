/* Listing the store: ids from one readdir (no stat) and counts; the
 * records themselves are list_load.c. */
#include "core/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- listing ----------------------------------------------------------------- */

static int cmp_ids(const void *a, const void *b) {
  return memcmp(a, b, 16);
}

/* A directory entry of tasks/ that is a real directory (what
 * tfs_task_stat accepts): d_type tells without a stat on most file
 * systems. */
static int is_task_dir(DIR *d, const struct dirent *de) {
  struct stat st;
  if (de->d_type != DT_UNKNOWN)
    return de->d_type == DT_DIR;
  return fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Reads tasks/ once (readdir only; a stat only where d_type is unknown and
 * dirs_only asks) and returns the well-formed ids, sorted, in one flat
 * array. */
static int collect(tfs_store_t *store, tfs__idbuf_t **out, size_t *n, int sort, int dirs_only) {
  *out = NULL;
  *n = 0;
  int err = tfs__usable(store);
  if (err)
    return err;
  DIR *d = tfs__dir_open(store->tasks_fd);
  if (!d)
    return -errno;
  size_t cap = 0, len = 0;
  tfs__idbuf_t *ids = NULL;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!tfs_id_valid(de->d_name) || (dirs_only && !is_task_dir(d, de)))
      continue;
    if ((err = tfs_grow(&ids, &cap, len + 1, sizeof *ids, 256)))
      break;
    memcpy(ids[len++], de->d_name, 16);
  }
  closedir(d);
  if (err) {
    free(ids);
    return err;
  }
  if (sort && len > 1)
    qsort(ids, len, sizeof *ids, cmp_ids);
  *out = ids;
  *n = len;
  return 0;
}

int tfs__collect_ids(tfs_store_t *store, tfs__idbuf_t **out, size_t *n, int sort) {
  return collect(store, out, n, sort, 0);
}

/* The ids as a malloc'ed array of malloc'ed strings. */
static int ids_strv(tfs_store_t *store, int dirs_only, char ***ids_out, size_t *n_out) {
  tfs__idbuf_t *ids;
  size_t n;
  *ids_out = NULL;
  *n_out = 0;
  int err = collect(store, &ids, &n, 1, dirs_only);
  if (err)
    return err;
  char **v = calloc(n + 1, sizeof *v);
  if (!v) {
    free(ids);
    return -ENOMEM;
  }
  for (size_t i = 0; i < n; i++)
    if (!(v[i] = strdup(ids[i]))) {
      tfs_ids_free(v, i);
      free(ids);
      return -ENOMEM;
    }
  free(ids);
  *ids_out = v;
  *n_out = n;
  return 0;
}

int tfs_task_ids(tfs_store_t *store, char ***ids, size_t *n) {
  return ids_strv(store, 0, ids, n);
}

int tfs_task_dirs(tfs_store_t *store, char ***ids, size_t *n) {
  return ids_strv(store, 1, ids, n);
}

void tfs_ids_free(char **ids, size_t n) {
  if (!ids)
    return;
  for (size_t i = 0; i < n; i++)
    free(ids[i]);
  free(ids);
}

int64_t tfs_task_count(tfs_store_t *store) {
  if (tfs__usable(store))
    return tfs__usable(store);
  DIR *d = tfs__dir_open(store->tasks_fd);
  if (!d)
    return -errno;
  int64_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (tfs_id_valid(de->d_name))
      n++;
  closedir(d);
  return n;
}
