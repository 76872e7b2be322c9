/* Creating a task: a fresh id (mkdir is the uniqueness check), its first
 * record, and its key. */
#include "core/internal.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tfs_task_create(tfs_store_t *store, const tfs_task_spec_t *spec, char id_out[TFS_ID_MAX + 1],
                    int *existed) {
  tfs_record_t rec;
  char cwd[PATH_MAX];
  int err;
  if (existed)
    *existed = 0;
  if ((err = tfs__writable(store)))
    return err;
  if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0])
    return -EINVAL;
  const char *key = spec->key && spec->key[0] ? spec->key : NULL;
  if (key && !tfs_key_valid(key))
    return TFS_EBADID;
  if (key && (err = tfs__key_shadows(store, key, spec->why, spec->whylen)))
    return err;
  if (spec->cwd) {
    if (spec->cwd[0] != '/')
      return -EINVAL;
    if (strlen(spec->cwd) >= sizeof cwd)
      return -ENAMETOOLONG;
    strcpy(cwd, spec->cwd);
  } else if (!getcwd(cwd, sizeof cwd)) {
    return -errno;
  }

  tfs_record_init(&rec);
  /* The record keeps argv and cwd byte-exact (see "commandBytes" in
   * record.c), so the key's same-command check compares exact bytes. */
  if ((err = tfs_record_set_command(&rec, spec->argv, cwd)))
    goto out;
  for (int i = 0; spec->env_names && spec->env_names[i]; i++)
    if ((err = tfs_record_add_env_name(&rec, spec->env_names[i])))
      goto out;
  rec.restart = spec->restart;
  if (spec->min_uptime_ms >= 0)
    rec.min_uptime_ms = spec->min_uptime_ms;
  if (spec->max_restarts >= 0)
    rec.max_restarts = spec->max_restarts;
  if (spec->crash_loop_exits > 0)
    rec.max_quick_restarts = spec->crash_loop_exits - 1;
  if (spec->grace_ms >= 0)
    rec.grace_ms = spec->grace_ms;
  rec.stderr_mode = spec->stderr_mode == TFS_STDERR_SPLIT ? TFS_STDERR_SPLIT : TFS_STDERR_MERGED;
  if ((err = tfs_record_set_engine(&rec, spec->engine, spec->engine_options)))
    goto out;
  if (spec->important_k > 0 && spec->important_k != rec.important.k) {
    tfs_important_free(&rec.important);
    if ((err = tfs_important_init(&rec.important, spec->important_k)))
      goto out;
  }
  if (key)
    snprintf(rec.key, sizeof rec.key, "%s", key);
  if ((err = tfs__schedule_spec(store, spec, &rec)))
    goto out;
  rec.restart_on_timeout = spec->restart_on_timeout;
  /* The limits given, and the store's defaults for the others: what the
   * record says applies, checked before anything is made. */
  if (spec->limits) {
    tfs_limits_free(&rec.limits);
    if ((err = tfs_limits_copy(&rec.limits, spec->limits)))
      goto out;
  }
  if ((err = tfs_limits_resolve(store, &rec.limits, spec->why, spec->whylen)))
    goto out;

  /* mkdir is the uniqueness check: two creators in the same millisecond
   * draw again on EEXIST. */
  for (int attempt = 0;; attempt++) {
    if ((err = tfs__id_generate(rec.id)))
      goto out;
    if (mkdirat(store->tasks_fd, rec.id, 0700) == 0)
      break;
    if (errno != EEXIST || attempt > 100) {
      err = -errno;
      goto out;
    }
  }
  /* 0700 whatever the umask; a directory that cannot be given it is not
   * kept. */
  if (fchmodat(store->tasks_fd, rec.id, 0700, 0)) {
    err = -errno;
    unlinkat(store->tasks_fd, rec.id, AT_REMOVEDIR);
    goto out;
  }
  rec.created_ms = tfs_now_ms();
  /* Who launches it: a task whose creator dies before any supervisor takes
   * it is settled lost (tfs__record_abandoned). */
  if ((err = tfs__process_self(&rec.creator_pid, &rec.creator_start_ticks, rec.creator_boot))) {
    unlinkat(store->tasks_fd, rec.id, AT_REMOVEDIR);
    goto out;
  }
  if (key) {
    err = tfs__create_keyed(store, &rec, (spec->rerun || spec->replace ? TFS__KEY_RERUN : 0) |
                                                 (spec->replace ? TFS__KEY_REPLACE : 0),
                             id_out, existed);
  } else if ((err = tfs__save_new(store, &rec))) {
    tfs__rm_tree_at(store->tasks_fd, rec.id);
  } else {
    snprintf(id_out, TFS_ID_MAX + 1, "%s", rec.id);
  }
out:
  tfs_record_free(&rec);
  return err;
}
