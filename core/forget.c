/* Forgetting tasks: one at a time, or the oldest ones (prune). */
#include "core/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- forgetting -------------------------------------------------------------- */

int tfs_task_forget(tfs_store_t *store, const char *id) {
  struct stat st;
  tfs_record_t rec;
  char cur[TFS_ID_MAX + 1];
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  if (fstatat(store->tasks_fd, id, &st, AT_SYMLINK_NOFOLLOW))
    return errno == ENOENT ? TFS_ENOTASK : -errno;
  int alive = S_ISDIR(st.st_mode) ? tfs_task_alive(store, id) : 0;
  if (alive == 1)
    return -EBUSY;
  /* The key goes first (only if it still names this task: a rerun may have
   * moved it), so no key ever names a half-deleted task. */
  if (S_ISDIR(st.st_mode) && tfs__load_raw(store, id, &rec) == 0) {
    if (rec.key[0]) {
      int lk = tfs__keys_lock(store);
      if (lk >= 0) {
        if (tfs__key_read(store, rec.key, cur) == 0 && !strcmp(cur, id))
          unlinkat(store->keys_fd, rec.key, 0);
        tfs__keys_unlock(lk);
      }
    }
    tfs_record_free(&rec);
  }
  return tfs__rm_tree_at(store->tasks_fd, id);
}

int tfs_task_prune(tfs_store_t *store, size_t keep) {
  tfs__idbuf_t *ids;
  size_t n;
  int err = tfs__collect_ids(store, &ids, &n, 1);
  if (err)
    return err;
  int removed = 0;
  for (size_t i = 0; i + keep < n; i++) {
    if (tfs_task_alive(store, ids[i]) == 1)
      continue;
    if (tfs_task_forget(store, ids[i]) == 0)
      removed++;
  }
  free(ids);
  return removed;
}
