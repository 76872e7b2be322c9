/* Task keys: keys/<key> names a task id. A key is created with linkat()
 * (exactly one racer wins) and moved with a rename under the store's key
 * lock; see docs/ARCHITECTURE.md. */
#include "core/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- keys -------------------------------------------------------------------- */
int tfs__key_read(const tfs_store_t *store, const char *key, char id_out[TFS_ID_MAX + 1]) {
  if (!tfs_key_valid(key))
    return TFS_EBADID;
  int err = tfs__usable(store);
  if (err)
    return err;
  return tfs__read_id_file(store->keys_fd, key, id_out);
}

int tfs_key_lookup(tfs_store_t *store, const char *key, char id_out[TFS_ID_MAX + 1]) {
  return tfs__key_read(store, key, id_out);
}

int tfs_task_resolve(tfs_store_t *store, const char *id_or_key, char id_out[TFS_ID_MAX + 1]) {
  struct stat st;
  int err = tfs__usable(store);
  if (err)
    return err;
  if (tfs_id_valid(id_or_key)) {
    if (fstatat(store->tasks_fd, id_or_key, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (!S_ISDIR(st.st_mode))
        return TFS_ESYMLINK;
      snprintf(id_out, TFS_ID_MAX + 1, "%s", id_or_key);
      return 0;
    }
    if (errno != ENOENT)
      return -errno;
  }
  if (!tfs_key_valid(id_or_key))
    return TFS_EBADID;
  /* A bare number is the task with that number; a key of digits only
   * (made before numbers) is still found when no task has the number. */
  int64_t n;
  if (tfs_number_parse(id_or_key, &n) && (err = tfs_number_lookup(store, n, id_out)) != TFS_ENOTASK)
    return err;
  return tfs__key_read(store, id_or_key, id_out);
}

/* Writes "<id>\n" into a fresh temp file in keys/ (names starting with '.'
 * are never keys) and returns its name in tmp. */
static int key_temp(tfs_store_t *store, const char *id, char tmp[64]) {
  char rnd[7], line[TFS_ID_MAX + 2];
  int err;
  for (int attempt = 0;; attempt++) {
    if ((err = tfs__random_base36(rnd, 6)))
      return err;
    rnd[6] = '\0';
    snprintf(tmp, 64, ".tmp.%s.%s", id, rnd);
    int fd =
        openat(store->keys_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST && attempt < 10)
        continue;
      return -errno;
    }
    int n = snprintf(line, sizeof line, "%s\n", id);
    ssize_t w = write(fd, line, (size_t)n);
    err = w == n ? 0 : w < 0 ? -errno : -ENOSPC; /* a short write means a full disk */
    if (!err && fsync(fd))
      err = -errno;
    close(fd);
    if (err)
      unlinkat(store->keys_fd, tmp, 0);
    return err;
  }
}

/* Creates keys/<key> naming id if no such key exists: 0 if we won,
 * -EEXIST if the key already exists. linkat() never replaces a name, which
 * is what makes exactly one racer win. */
static int key_link(tfs_store_t *store, const char *key, const char *id) {
  char tmp[64];
  int err = key_temp(store, id, tmp);
  if (err)
    return err;
  if (linkat(store->keys_fd, tmp, store->keys_fd, key, 0))
    err = -errno;
  unlinkat(store->keys_fd, tmp, 0);
  if (!err)
    fsync(store->keys_fd);
  return err;
}

/* Points key at id, but only if it still names expect (or nothing): used
 * for reruns and stale keys, under the store's key lock so two replacers
 * serialize. Returns 0 if replaced, -EAGAIN if the key moved meanwhile. */
static int key_replace(tfs_store_t *store, const char *key, const char *expect, const char *id) {
  char tmp[64], cur[TFS_ID_MAX + 1];
  int lk = tfs__keys_lock(store);
  if (lk < 0)
    return lk;
  int err = tfs__key_read(store, key, cur);
  if (err == TFS_ENOTASK) {
    err = key_link(store, key, id);
  } else if (!err && !strcmp(cur, expect)) {
    if (!(err = key_temp(store, id, tmp))) {
      if (renameat(store->keys_fd, tmp, store->keys_fd, key)) {
        err = -errno;
        unlinkat(store->keys_fd, tmp, 0);
      } else {
        fsync(store->keys_fd);
      }
    }
  } else if (!err) {
    err = -EAGAIN;
  }
  tfs__keys_unlock(lk);
  return err == -EEXIST ? -EAGAIN : err;
}

static int same_command(const tfs_record_t *a, const tfs_record_t *b) {
  if (a->argc != b->argc || !a->cwd || !b->cwd || strcmp(a->cwd, b->cwd))
    return 0;
  for (int i = 0; i < a->argc; i++)
    if (strcmp(a->argv[i], b->argv[i]))
      return 0;
  return 1;
}

enum { KEY_EXISTING, KEY_CONFLICT, KEY_REPLACE, KEY_RETRY };

/* Decides what to do about a key that someone else holds. Waits (bounded)
 * for the holder's record: the holder links the key before it writes its
 * record. */
static int key_examine(tfs_store_t *store, const tfs_record_t *mine, const char *key, int how,
                       char holder[TFS_ID_MAX + 1]) {
  tfs_record_t other;
  int err = tfs__key_read(store, key, holder);
  if (err == TFS_ENOTASK)
    return KEY_RETRY; /* forgotten meanwhile: race for it again */
  if (err)
    return err;
  int64_t deadline = tfs_now_ms() + TFS__KEY_WAIT_MS;
  for (;;) {
    err = tfs__load_checked(store, holder, &other);
    if (err == TFS_ENOTASK)
      return KEY_REPLACE; /* the key names a task that is gone: stale */
    if (err != -ENOENT)
      break;
    if (tfs_now_ms() >= deadline) {
      /* The holder made its dir but never its record: it died between the
       * two steps. Its id tells how old the attempt is. */
      if (tfs_now_ms() - tfs__id_time_ms(holder) >= TFS__KEY_WAIT_MS)
        return KEY_REPLACE;
      deadline = tfs_now_ms() + 100;
    }
    tfs__sleep_ms(10);
  }
  if (err)
    return err;
  int decision;
  int ended = tfs_state_terminal(other.state);
  if (!same_command(mine, &other))
    decision = (how & TFS__KEY_REPLACE) && ended ? KEY_REPLACE : KEY_CONFLICT;
  else if ((how & TFS__KEY_RERUN) && ended)
    decision = KEY_REPLACE;
  else
    decision = KEY_EXISTING;
  tfs_record_free(&other);
  return decision;
}

int tfs__create_keyed(tfs_store_t *store, tfs_record_t *rec, int how, char id_out[TFS_ID_MAX + 1],
                      int *existed) {
  char holder[TFS_ID_MAX + 1];
  int saved = 0, err = 0;
  for (int attempt = 0; attempt < 64; attempt++) {
    err = key_link(store, rec->key, rec->id);
    if (err == 0) {
      if (!saved && (err = tfs__save_new(store, rec)))
        break;
      snprintf(id_out, TFS_ID_MAX + 1, "%s", rec->id);
      return 0;
    }
    if (err != -EEXIST)
      break;
    int d = key_examine(store, rec, rec->key, how, holder);
    if (d < 0) {
      err = d;
      break;
    }
    if (d == KEY_RETRY)
      continue;
    if (d == KEY_CONFLICT) {
      err = TFS_EKEYCONFLICT;
      break;
    }
    if (d == KEY_EXISTING) {
      tfs__number_drop(store, rec->number, rec->id);
      tfs__rm_tree_at(store->tasks_fd, rec->id);
      snprintf(id_out, TFS_ID_MAX + 1, "%s", holder);
      if (existed)
        *existed = 1;
      return 0;
    }
    /* KEY_REPLACE: our record goes first, so the key never names a task
     * without one. */
    if (!saved) {
      if ((err = tfs__save_new(store, rec)))
        break;
      saved = 1;
    }
    err = key_replace(store, rec->key, holder, rec->id);
    if (err == 0) {
      snprintf(id_out, TFS_ID_MAX + 1, "%s", rec->id);
      return 0;
    }
    if (err != -EAGAIN)
      break;
  }
  if (err == -EEXIST || err == -EAGAIN)
    err = -EAGAIN; /* lost 64 races in a row: give up rather than spin */
  tfs__number_drop(store, rec->number, rec->id);
  tfs__rm_tree_at(store->tasks_fd, rec->id);
  return err;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A key is a regular file; anything else planted in keys/ is not one, and
 * listing it would show a name that a lookup then refuses. */
static int is_key_entry(const tfs_store_t *store, const struct dirent *de) {
  struct stat st;
  if (!tfs_key_valid(de->d_name))
    return 0;
  if (de->d_type != DT_UNKNOWN)
    return de->d_type == DT_REG;
  return fstatat(store->keys_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int tfs_key_list(tfs_store_t *store, char ***keys, size_t *n) {
  *keys = NULL;
  *n = 0;
  int err = tfs__usable(store);
  if (err)
    return err;
  DIR *d = tfs__dir_open(store->keys_fd);
  if (!d)
    return -errno;
  size_t cap = 0, len = 0;
  char **v = NULL;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!is_key_entry(store, de))
      continue;
    if ((err = tfs_grow(&v, &cap, len + 2, sizeof *v, 64)))
      break;
    if (!(v[len] = strdup(de->d_name))) {
      err = -ENOMEM;
      break;
    }
    v[++len] = NULL;
  }
  closedir(d);
  if (err) {
    tfs_ids_free(v, len);
    return err;
  }
  if (len > 1)
    qsort(v, len, sizeof *v, cmp_str);
  *keys = v;
  *n = len;
  return 0;
}
