/* Listing the store: ids from one readdir (no stat) and counts; the
 * records themselves are list_load.c. */
#include "core/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- listing ----------------------------------------------------------------- */

static int cmp_ids(const void *a, const void *b) {
  return memcmp(a, b, 16);
}

/* Reads tasks/ once (readdir only, no stat) and returns the well-formed
 * ids, sorted, in one flat array. */
int tfs__collect_ids(tfs_store_t *store, tfs__idbuf_t **out, size_t *n, int sort) {
  *out = NULL;
  *n = 0;
  DIR *d = tfs__dir_open(store->tasks_fd);
  if (!d)
    return -errno;
  size_t cap = 0, len = 0;
  tfs__idbuf_t *ids = NULL;
  struct dirent *de;
  int err = 0;
  while ((de = readdir(d))) {
    if (!tfs_id_valid(de->d_name))
      continue;
    if ((err = tfs__grow(&ids, &cap, len + 1, sizeof *ids, 256)))
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

int tfs_task_ids(tfs_store_t *store, char ***ids_out, size_t *n_out) {
  tfs__idbuf_t *ids;
  size_t n;
  *ids_out = NULL;
  *n_out = 0;
  int err = tfs__collect_ids(store, &ids, &n, 1);
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

void tfs_ids_free(char **ids, size_t n) {
  if (!ids)
    return;
  for (size_t i = 0; i < n; i++)
    free(ids[i]);
  free(ids);
}

int64_t tfs_task_count(tfs_store_t *store) {
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
