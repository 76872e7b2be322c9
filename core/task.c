/* Tasks in the store: creation (with atomic keys), records on disk, the
 * supervisor lock and liveness, listing, forgetting and pruning. */
#include "core/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A task dir without record.json younger than this is being created. */
#define CREATING_GRACE_MS 5000
/* How long a loser of a key race waits for the winner's record. */
#define KEY_WAIT_MS 3000

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

int tfs__record_claims_live(const tfs_record_t *rec) {
  return rec->state == TFS_RUNNING || (rec->state == TFS_QUEUED && rec->supervisor_pid > 0);
}

/* ---- records --------------------------------------------------------------- */

/* Records up to this size are read into a stack buffer with one read(). */
#define RECORD_STACK 8192

/* Set once openat2 turned out to be missing (ENOSYS: kernels before 5.6,
 * or a seccomp filter that does not know it), so it is not tried again. */
static int no_openat2;

/* Opens tasks/<id>/record.json for reading. Loading is what `taskfs ls`
 * does for every task, so the common case is one openat2() call: it refuses
 * a symlink on any component (RESOLVE_NO_SYMLINKS: the task dir or the
 * record) and any escape from tasks/ (RESOLVE_BENEATH), which is what the
 * two O_NOFOLLOW opens guarantee. Both refusals are TFS_ESYMLINK. Every
 * other failure (ENOENT above all: is the task missing, or only its
 * record?) and a kernel without openat2 take the two-step path, which
 * tells the cases apart as before. O_NONBLOCK: a planted FIFO never hangs
 * the open; the caller refuses anything but a regular file. */
static int record_open(const tfs_store_t *store, const char *id) {
  if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED)) {
    char path[TFS_ID_MAX + sizeof "/record.json"];
    struct open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
    };
    snprintf(path, sizeof path, "%s/record.json", id);
    long fd = syscall(SYS_openat2, tfs_store_tasks_fd(store), path, &how, sizeof how);
    if (fd >= 0)
      return (int)fd;
    if (errno == ELOOP || errno == EXDEV)
      return TFS_ESYMLINK;
    if (errno == ENOSYS)
      __atomic_store_n(&no_openat2, 1, __ATOMIC_RELAXED);
  }
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, id);
  if (dfd < 0)
    return dfd;
  int fd = openat(dfd, "record.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  return fd < 0 ? tfs__open_err(errno) : fd;
}

/* Reads the whole record from fd: a regular file of at most TFS_RECORD_MAX
 * bytes (anything else is TFS_ECORRUPT). A record that fits in stack (most
 * are 1-3 KiB) costs one read(): a short read of a regular file is its end,
 * and a record is never written in place (saves rename a new file over it).
 * Only when stack fills do the rest go to *heap, read until EOF.
 * On success *text points into stack or *heap, NUL-terminated. */
static int record_read(int fd, char stack[RECORD_STACK + 1], char **heap, const char **text,
                       size_t *len) {
  struct stat st;
  if (fstat(fd, &st))
    return -errno;
  if (!S_ISREG(st.st_mode) || st.st_size > TFS_RECORD_MAX)
    return TFS_ECORRUPT;
  ssize_t r;
  while ((r = read(fd, stack, RECORD_STACK)) < 0 && errno == EINTR) {
  }
  if (r < 0)
    return -errno;
  if (r < RECORD_STACK) {
    stack[r] = '\0';
    *text = stack;
    *len = (size_t)r;
    return 0;
  }
  size_t n = RECORD_STACK;
  size_t cap = (size_t)st.st_size + 1 > 2 * n ? (size_t)st.st_size + 1 : 2 * n;
  char *buf = malloc(cap + 1);
  if (!buf)
    return -ENOMEM;
  *heap = buf;
  memcpy(buf, stack, n);
  for (;;) {
    if (n > TFS_RECORD_MAX)
      return TFS_ECORRUPT;
    if (n == cap) {
      size_t ncap = cap * 2 > TFS_RECORD_MAX + 1 ? TFS_RECORD_MAX + 1 : cap * 2;
      char *nb = realloc(buf, ncap + 1);
      if (!nb)
        return -ENOMEM;
      *heap = buf = nb;
      cap = ncap;
    }
    r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -errno;
    if (r == 0)
      break;
    n += (size_t)r;
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return 0;
}

int tfs__load_raw(const tfs_store_t *store, const char *id, tfs_record_t *rec) {
  char stack[RECORD_STACK + 1];
  char *heap TFS_AUTOFREE = NULL;
  const char *text = NULL;
  size_t len = 0;
  memset(rec, 0, sizeof *rec);
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  int fd TFS_AUTOCLOSE = record_open(store, id);
  if (fd < 0)
    return fd;
  int err = record_read(fd, stack, &heap, &text, &len);
  if (err)
    return err;
  err = tfs_record_parse(text, len, rec, NULL, 0);
  if (err) {
    memset(rec, 0, sizeof *rec);
    return err;
  }
  /* A record copied into another task's directory is not that task. */
  if (strcmp(rec->id, id)) {
    tfs_record_free(rec);
    return TFS_ECORRUPT;
  }
  return 0;
}

int tfs_task_save(tfs_store_t *store, const tfs_record_t *rec) {
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, rec->id);
  if (dfd < 0)
    return dfd;
  char *text = tfs_record_dump(rec);
  if (!text)
    return -ENOMEM;
  size_t len = strlen(text);
  int err = len > TFS_RECORD_MAX ? -EFBIG : tfs_write_atomic(dfd, "record.json", text, len);
  free(text);
  return err;
}

/* Rewrites the in-memory record as lost: the supervisor died without
 * recording an end. The end time is the last moment it was known alive. */
static void mark_lost(tfs_record_t *rec) {
  char t[TFS_TIME_BUF];
  rec->state = TFS_LOST;
  if (!rec->ended_ms)
    rec->ended_ms = rec->alive_ms ? rec->alive_ms : tfs_now_ms();
  if (rec->alive_ms)
    tfs_record_set_reason(rec, "supervisor died; last known alive at %s",
                          tfs_time_format(rec->alive_ms, t));
  else
    tfs_record_set_reason(rec, "supervisor died before it recorded being alive");
}

/* Loads with the liveness check. -ENOENT: the dir has no record yet. */
static int load_checked(tfs_store_t *store, const char *id, tfs_record_t *rec) {
  int err = tfs__load_raw(store, id, rec);
  if (err || !tfs__record_claims_live(rec))
    return err;
  int alive = tfs_task_alive(store, id);
  if (alive != 0)
    return 0; /* alive, or we cannot tell: report what the record says */
  /* The supervisor writes its final record before its lock goes away, so a
   * second read after seeing the lock free tells a clean end from a death. */
  tfs_record_free(rec);
  if ((err = tfs__load_raw(store, id, rec)))
    return err;
  if (tfs__record_claims_live(rec))
    mark_lost(rec);
  return 0;
}

int tfs_task_load(tfs_store_t *store, const char *id, tfs_record_t *rec) {
  int err = load_checked(store, id, rec);
  return err == -ENOENT ? TFS_ENOTASK : err;
}

/* Opens a task's lock file without ever blocking: O_NONBLOCK so that a FIFO
 * planted in its place cannot hang a reader, and anything but a regular file
 * is refused. */
static int open_lock(tfs_store_t *store, const char *id, int flags) {
  int fd = tfs_task_openat(store, id, "lock", flags | O_NONBLOCK, 0600);
  if (fd < 0)
    return fd;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    return TFS_ECORRUPT;
  }
  return fd;
}

int tfs_task_settle_lost(tfs_store_t *store, const char *id) {
  tfs_record_t rec;
  int fd TFS_AUTOCLOSE = open_lock(store, id, O_RDWR | O_CREAT);
  if (fd < 0)
    return fd;
  if (flock(fd, LOCK_EX | LOCK_NB))
    return errno == EWOULDBLOCK ? 0 : -errno;
  /* Holding the lock, nobody else can be the supervisor: re-read and
   * settle. Closing fd releases the lock. */
  int err = tfs__load_raw(store, id, &rec);
  if (err)
    return err == -ENOENT ? 0 : err;
  int wrote = 0;
  if (tfs__record_claims_live(&rec)) {
    mark_lost(&rec);
    err = tfs_task_save(store, &rec);
    wrote = !err;
  }
  tfs_record_free(&rec);
  return err ? err : wrote;
}

/* ---- the lock ---------------------------------------------------------------- */

int tfs_task_alive(tfs_store_t *store, const char *id) {
  int fd TFS_AUTOCLOSE = open_lock(store, id, O_RDONLY);
  if (fd == -ENOENT)
    return 0;
  if (fd < 0)
    return fd;
  /* LOCK_SH: two probing readers never mistake each other for the
   * supervisor, which holds LOCK_EX. */
  if (flock(fd, LOCK_SH | LOCK_NB) == 0)
    return 0; /* the close releases it */
  return errno == EWOULDBLOCK ? 1 : -errno;
}

int tfs_task_lock(tfs_store_t *store, const char *id) {
  int fd = open_lock(store, id, O_RDWR | O_CREAT);
  if (fd < 0)
    return fd;
  while (flock(fd, LOCK_EX)) {
    if (errno != EINTR) {
      int e = -errno;
      close(fd);
      return e;
    }
  }
  return fd;
}

/* ---- keys -------------------------------------------------------------------- */

int tfs__key_read(const tfs_store_t *store, const char *key, char id_out[TFS_ID_MAX + 1]) {
  char *text;
  size_t len;
  if (!tfs_key_valid(key))
    return TFS_EBADID;
  int err = tfs_read_small(store->keys_fd, key, 256, &text, &len);
  if (err == -ENOENT)
    return TFS_ENOTASK;
  if (err)
    return err == -EFBIG ? TFS_ECORRUPT : err;
  text[strcspn(text, "\n")] = '\0';
  if (!tfs_id_valid(text))
    err = TFS_ECORRUPT;
  else
    snprintf(id_out, TFS_ID_MAX + 1, "%s", text);
  free(text);
  return err;
}

int tfs_key_lookup(tfs_store_t *store, const char *key, char id_out[TFS_ID_MAX + 1]) {
  return tfs__key_read(store, key, id_out);
}

int tfs_task_resolve(tfs_store_t *store, const char *id_or_key, char id_out[TFS_ID_MAX + 1]) {
  struct stat st;
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

static int64_t id_time_ms(const char *id) {
  int64_t ms = 0;
  for (int i = 0; i < 8; i++) {
    char c = id[i];
    ms = ms * 36 + (c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return ms;
}

enum { KEY_EXISTING, KEY_CONFLICT, KEY_REPLACE, KEY_RETRY };

/* Decides what to do about a key that someone else holds. Waits (bounded)
 * for the holder's record: the holder links the key before it writes its
 * record. */
static int key_examine(tfs_store_t *store, const tfs_record_t *mine, const char *key, int rerun,
                       char holder[TFS_ID_MAX + 1]) {
  tfs_record_t other;
  int err = tfs__key_read(store, key, holder);
  if (err == TFS_ENOTASK)
    return KEY_RETRY; /* forgotten meanwhile: race for it again */
  if (err)
    return err;
  int64_t deadline = tfs_now_ms() + KEY_WAIT_MS;
  for (;;) {
    err = load_checked(store, holder, &other);
    if (err == TFS_ENOTASK)
      return KEY_REPLACE; /* the key names a task that is gone: stale */
    if (err != -ENOENT)
      break;
    if (tfs_now_ms() >= deadline) {
      /* The holder made its dir but never its record: it died between the
       * two steps. Its id tells how old the attempt is. */
      if (tfs_now_ms() - id_time_ms(holder) >= KEY_WAIT_MS)
        return KEY_REPLACE;
      deadline = tfs_now_ms() + 100;
    }
    sleep_ms(10);
  }
  if (err)
    return err;
  int decision;
  if (!same_command(mine, &other))
    decision = KEY_CONFLICT;
  else if (rerun && tfs_state_terminal(other.state))
    decision = KEY_REPLACE;
  else
    decision = KEY_EXISTING;
  tfs_record_free(&other);
  return decision;
}

static int create_keyed(tfs_store_t *store, tfs_record_t *rec, int rerun,
                        char id_out[TFS_ID_MAX + 1], int *existed) {
  char holder[TFS_ID_MAX + 1];
  int saved = 0, err = 0;
  for (int attempt = 0; attempt < 64; attempt++) {
    err = key_link(store, rec->key, rec->id);
    if (err == 0) {
      if (!saved && (err = tfs_task_save(store, rec)))
        break;
      snprintf(id_out, TFS_ID_MAX + 1, "%s", rec->id);
      return 0;
    }
    if (err != -EEXIST)
      break;
    int d = key_examine(store, rec, rec->key, rerun, holder);
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
      tfs__rm_tree_at(store->tasks_fd, rec->id);
      snprintf(id_out, TFS_ID_MAX + 1, "%s", holder);
      if (existed)
        *existed = 1;
      return 0;
    }
    /* KEY_REPLACE: our record goes first, so the key never names a task
     * without one. */
    if (!saved) {
      if ((err = tfs_task_save(store, rec)))
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
  tfs__rm_tree_at(store->tasks_fd, rec->id);
  return err;
}

int tfs_task_create(tfs_store_t *store, const tfs_task_spec_t *spec, char id_out[TFS_ID_MAX + 1],
                    int *existed) {
  tfs_record_t rec;
  char cwd[PATH_MAX];
  int err;
  if (existed)
    *existed = 0;
  if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0])
    return -EINVAL;
  const char *key = spec->key && spec->key[0] ? spec->key : NULL;
  if (key && !tfs_key_valid(key))
    return TFS_EBADID;
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
  if (spec->grace_ms >= 0)
    rec.grace_ms = spec->grace_ms;
  if (spec->important_k > 0 && spec->important_k != rec.important.k) {
    tfs_important_free(&rec.important);
    if ((err = tfs_important_init(&rec.important, spec->important_k)))
      goto out;
  }
  if (key)
    snprintf(rec.key, sizeof rec.key, "%s", key);

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
  fchmodat(store->tasks_fd, rec.id, 0700, 0);
  rec.created_ms = tfs_now_ms();
  if (key) {
    err = create_keyed(store, &rec, spec->rerun, id_out, existed);
  } else if ((err = tfs_task_save(store, &rec))) {
    tfs__rm_tree_at(store->tasks_fd, rec.id);
  } else {
    snprintf(id_out, TFS_ID_MAX + 1, "%s", rec.id);
  }
out:
  tfs_record_free(&rec);
  return err;
}

/* ---- listing ----------------------------------------------------------------- */

typedef char idbuf_t[16];

static int cmp_ids(const void *a, const void *b) {
  return memcmp(a, b, 16);
}

/* Reads tasks/ once (readdir only, no stat) and returns the well-formed
 * ids, sorted, in one flat array. */
static int collect_ids(tfs_store_t *store, idbuf_t **out, size_t *n, int sort) {
  int fd = tfs__dir_reopen(store->tasks_fd);
  *out = NULL;
  *n = 0;
  if (fd < 0)
    return fd;
  DIR *d = fdopendir(fd);
  if (!d) {
    int e = -errno;
    close(fd);
    return e;
  }
  size_t cap = 0, len = 0;
  idbuf_t *ids = NULL;
  struct dirent *de;
  int err = 0;
  while ((de = readdir(d))) {
    if (!tfs_id_valid(de->d_name))
      continue;
    if (len == cap) {
      cap = cap ? cap * 2 : 256;
      idbuf_t *nids = realloc(ids, cap * sizeof *ids);
      if (!nids) {
        err = -ENOMEM;
        break;
      }
      ids = nids;
    }
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

int tfs_task_list(tfs_store_t *store, tfs_task_cb cb, void *arg, size_t *corrupt) {
  idbuf_t *ids;
  size_t n, bad = 0;
  int err = collect_ids(store, &ids, &n, 1);
  if (corrupt)
    *corrupt = 0;
  if (err)
    return err;
  int64_t now = tfs_now_ms();
  for (size_t i = 0; i < n; i++) {
    tfs_record_t rec;
    int e = load_checked(store, ids[i], &rec);
    if (e == 0) {
      int stop = cb ? cb(&rec, arg) : 0;
      tfs_record_free(&rec);
      if (stop)
        break;
    } else if (e == -ENOENT) {
      /* No record yet: being created, unless the attempt is old. */
      if (now - id_time_ms(ids[i]) >= CREATING_GRACE_MS)
        bad++;
    } else if (e == -ENOMEM) {
      err = e;
      break;
    } else if (e != TFS_ENOTASK) { /* ENOTASK: forgotten meanwhile */
      bad++;
    }
  }
  free(ids);
  if (corrupt)
    *corrupt = bad;
  return err;
}

int tfs_task_ids(tfs_store_t *store, char ***ids_out, size_t *n_out) {
  idbuf_t *ids;
  size_t n;
  *ids_out = NULL;
  *n_out = 0;
  int err = collect_ids(store, &ids, &n, 1);
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
  int fd = tfs__dir_reopen(store->tasks_fd);
  if (fd < 0)
    return fd;
  DIR *d = fdopendir(fd);
  if (!d) {
    int e = -errno;
    close(fd);
    return e;
  }
  int64_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (tfs_id_valid(de->d_name))
      n++;
  closedir(d);
  return n;
}

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
  idbuf_t *ids;
  size_t n;
  int err = collect_ids(store, &ids, &n, 1);
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
