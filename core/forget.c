/* Forgetting tasks: one at a time, or the oldest ones (prune), and the
 * litter killed creators leave (swept by every prune).
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
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* Removes the key of rec if it still names id (a rerun, or a creator that
 * found id gone and took the key over, may have moved it). */
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
               : tfs__rm_task(store, id, TFS__FILE(RECORD));
  if (err == TFS_ENOTASK || err == -ENOMEM)
    return err;
  if (err) /* corrupt: it goes, and with it no key we could read */
    return tfs__rm_task(store, id, TFS__FILE(RECORD));
  int ended = tfs_state_terminal(rec.state) || tfs__record_lost_if_unlocked(&rec);
  if (!ended) {
    tfs_record_free(&rec);
    return -EBUSY; /* queued: its creator or a supervisor is on its way */
  }
  /* The task goes first, whole (tfs__rm_task), then its key: a forgetter
   * killed in between leaves a key naming no task, which is stale (the
   * next creator of the key takes it over; prune's sweep removes it), never
   * a task without its key, for which a second task of the same key could
   * be made. */
  err = tfs__rm_task(store, id, TFS__FILE(RECORD));
  if (!err) {
    drop_key(store, &rec, id);
    tfs__number_drop(store, rec.number, id);
  }
  tfs_record_free(&rec);
  return err;
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

/* ---- litter ------------------------------------------------------------- */

/* Removes the keys that name no task directory: a creator that linked its
 * key and then failed or died before it could keep the task (its dir went:
 * removed by itself, or later as a dir without a record). A creator links
 * its key only once its dir exists, and a dir goes only after its key
 * (drop_key), so under the key lock a key naming no dir is stale for good. */
static void sweep_keys(tfs_store_t *store) {
  char id[TFS_ID_MAX + 1];
  struct stat st;
  DIR *d = tfs__dir_open(store->keys_fd);
  struct dirent *e;
  if (!d)
    return;
  int lk = tfs__keys_lock(store);
  while (lk >= 0 && (e = readdir(d)))
    if (e->d_name[0] != '.' && tfs__key_read(store, e->d_name, id) == 0 &&
        fstatat(store->tasks_fd, id, &st, AT_SYMLINK_NOFOLLOW) && errno == ENOENT)
      unlinkat(store->keys_fd, e->d_name, 0);
  if (lk >= 0)
    tfs__keys_unlock(lk);
  closedir(d);
}

/* Removes what removers killed half way left in tasks/ (tfs__rm_task
 * renames a task out of the tasks' names first): no task any more, and
 * nobody's. */
static void sweep_gone(tfs_store_t *store) {
  DIR *d = tfs__dir_open(store->tasks_fd);
  struct dirent *e;
  if (!d)
    return;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, TFS__GONE_PREFIX, strlen(TFS__GONE_PREFIX)))
      tfs__rm_tree_at(store->tasks_fd, e->d_name);
  closedir(d);
}

int tfs__sweep_litter(tfs_store_t *store) {
  int err = tfs__writable(store);
  if (err)
    return err;
  tfs__sweep_temps(store->fd);
  tfs__sweep_temps(store->keys_fd);
  sweep_keys(store);
  tfs__number_sweep(store);
  sweep_gone(store);
  return 0;
}

int tfs__forget_ids(tfs_store_t *store, tfs__idbuf_t *ids, size_t n) {
  int removed = 0;
  for (size_t i = 0; i < n; i++) {
    int err = tfs_task_forget(store, ids[i]);
    if (err == 0)
      removed++;
    else if (err != -EBUSY && err != TFS_ENOTASK)
      return err; /* a read-only or broken store: say so, not "deleted 0" */
  }
  return removed;
}

int tfs_task_prune(tfs_store_t *store, size_t keep) {
  tfs__idbuf_t *ids;
  size_t n;
  int err = tfs__writable(store);
  if (!err)
    err = tfs__collect_ids(store, &ids, &n, 1);
  if (err)
    return err;
  int removed = tfs__forget_ids(store, ids, n > keep ? n - keep : 0);
  free(ids);
  /* After the tasks, so the keys of removed half-made tasks go too. */
  tfs__sweep_litter(store);
  return removed;
}
