/* Forgetting tasks: one at a time, or the oldest ones (prune).
 *
 * Only a task that has ended goes, and only while the forgetter holds its
 * lock. A task still queued may have a supervisor on its way (exec'ed, not
 * yet holding the lock), and a directory without a record is a task being
 * created (between its mkdir and its first save): removing either made
 * `taskfs run` fail beside a `taskfs prune` ("cannot create the task", "no
 * such task"). Holding the lock through the removal keeps a supervisor
 * from taking the task in between; one that opened the lock file before
 * and gets it after finds its task gone and leaves. */
#include "core/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Removes the key of rec if it still names id (a rerun may have moved it).
 * The key goes before the directory, so no key ever names a half-deleted
 * task. */
static void drop_key(tfs_store_t *store, const tfs_record_t *rec, const char *id) {
  char cur[TFS_ID_MAX + 1];
  if (!rec->key[0])
    return;
  int lk = tfs__keys_lock(store);
  if (lk < 0)
    return;
  if (tfs__key_read(store, rec->key, cur) == 0 && !strcmp(cur, id))
    unlinkat(store->keys_fd, rec->key, 0);
  tfs__keys_unlock(lk);
}

/* With the lock held (or no lock file that any supervisor could hold):
 * removes the task if it has ended, else -EBUSY. A record that claims a
 * live supervisor while we hold the lock is lost, which is an end. A
 * corrupt record goes: nothing can tell its state, and the listing tells
 * the user that forgetting removes it. */
static int remove_ended(tfs_store_t *store, const char *id) {
  tfs_record_t rec;
  int err = tfs__load_raw(store, id, &rec);
  if (err == -ENOENT) /* no record yet: being created, unless that is old */
    return tfs_now_ms() - tfs__id_time_ms(id) < TFS__CREATING_GRACE_MS
               ? -EBUSY
               : tfs__rm_task(store, id);
  if (err == TFS_ENOTASK || err == -ENOMEM)
    return err;
  if (!err) {
    int ended = tfs_state_terminal(rec.state) || tfs__record_claims_live(&rec);
    if (ended)
      drop_key(store, &rec, id);
    tfs_record_free(&rec);
    if (!ended)
      return -EBUSY; /* queued: a supervisor may be on its way */
  }
  return tfs__rm_task(store, id);
}

int tfs_task_forget(tfs_store_t *store, const char *id) {
  struct stat st;
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  int err = tfs__writable(store);
  if (err)
    return err;
  if (fstatat(store->tasks_fd, id, &st, AT_SYMLINK_NOFOLLOW))
    return errno == ENOENT ? TFS_ENOTASK : -errno;
  /* Something planted under a task's name (a symlink, a file) is no task
   * and no supervisor's: it just goes (never followed). */
  if (!S_ISDIR(st.st_mode))
    return tfs__rm_tree_at(store->tasks_fd, id);
  int lock TFS_AUTOCLOSE = tfs__task_trylock(store, id);
  /* A lock that is not a regular file (a planted symlink or FIFO) cannot be
   * any supervisor's either: the supervisor refuses it as we do. */
  if (lock < 0 && lock != TFS_ESYMLINK && lock != TFS_ECORRUPT)
    return lock;                  /* -EBUSY: a supervisor (or a settler) holds it */
  return remove_ended(store, id); /* the lock goes with the directory */
}

int tfs_task_prune(tfs_store_t *store, size_t keep) {
  tfs__idbuf_t *ids;
  size_t n;
  int err = tfs__writable(store);
  if (!err)
    err = tfs__collect_ids(store, &ids, &n, 1);
  if (err)
    return err;
  int removed = 0;
  for (size_t i = 0; i + keep < n; i++)
    if (tfs_task_forget(store, ids[i]) == 0)
      removed++;
  free(ids);
  return removed;
}
