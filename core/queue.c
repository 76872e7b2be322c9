/* Queues: their names, directories, lock, settings and slots, what faces
 * ask of them (info, list, set) and the kick that wakes the next waiters.
 * A task's own seat in its queue is core/queue_seat.c; the layout and the
 * argument for it are in include/taskfs/queue.h and docs/ARCHITECTURE.md.
 *
 * Every look at the slots happens with the queue's lock held: a slot is
 * probed by trying its lock, and a probe that held it for a moment beside
 * a task taking a slot would make that task see the queue full. */
#include "core/queue.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SETTINGS_FILE "settings"
#define LOCK_FILE "lock"
#define SLOT_PREFIX "slot."
#define SETTINGS_MAX 4096

int tfs_queue_parallel_parse(const char *s, int *out) {
  if (!s)
    return -EINVAL;
  if (!strcmp(s, "none") || !strcmp(s, "unlimited")) {
    *out = 0;
    return 0;
  }
  /* Digits only: no sign, no blank, no base prefix, no trailing text. */
  size_t n = strspn(s, "0123456789");
  if (!n || s[n] || n > 4)
    return -EINVAL;
  int v = atoi(s);
  if (v < 1 || v > TFS_QUEUE_PARALLEL_MAX)
    return -EINVAL;
  *out = v;
  return 0;
}

int tfs__queue_open(tfs_store_t *store, const char *name, int create) {
  if (!tfs_queue_name_valid(name))
    return -EINVAL;
  int err = create ? tfs__writable(store) : tfs__usable(store);
  if (err)
    return err;
  int qs TFS_AUTOCLOSE = tfs__dir_checked(store, store->fd, TFS__QUEUES_DIR, create);
  if (qs < 0)
    return qs;
  return tfs__dir_checked(store, qs, name, create);
}

int tfs__queue_waiting(tfs_store_t *store, int qfd, int create) {
  return tfs__dir_checked(store, qfd, TFS__QUEUE_WAITING, create);
}

/* Opens a regular file of the queue (never a planted FIFO or symlink). */
static int open_file(int dfd, const char *name, int flags) {
  int fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0)
    return tfs__open_err(errno);
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    return TFS_ECORRUPT;
  }
  return fd;
}

int tfs__queue_lock(const tfs_store_t *store, int qfd) {
  /* A store only read (another user's) is looked at under its lock when
   * the lock file is there; nothing is made in it. */
  int ro = tfs__writable(store) != 0;
  return tfs__lock_or_close(open_file(qfd, LOCK_FILE, ro ? O_RDONLY : O_RDWR | O_CREAT));
}

int tfs__queue_settings(int qfd, int *parallel, int *paused) {
  char *text TFS_AUTOFREE = NULL;
  size_t len;
  *parallel = 0;
  *paused = 0;
  int err = tfs__read_small(qfd, SETTINGS_FILE, SETTINGS_MAX, &text, &len);
  if (err == -ENOENT)
    return 0;
  if (err)
    return err;
  json_t *j = json_loadb(text, len, 0, NULL);
  json_t *p = json_object_get(j, "parallel"), *z = json_object_get(j, "paused");
  int ok = json_is_object(j) && (!p || json_is_null(p) || json_is_integer(p)) &&
           (!z || json_is_boolean(z));
  if (ok && json_is_integer(p)) {
    json_int_t v = json_integer_value(p);
    ok = v >= 1 && v <= TFS_QUEUE_PARALLEL_MAX;
    *parallel = ok ? (int)v : 0;
  }
  *paused = ok && json_is_true(z);
  json_decref(j);
  return ok ? 0 : TFS_ECORRUPT;
}

/* Writes the settings atomically (a reader sees the old or the new ones). */
static int write_settings(int qfd, int parallel, int paused) {
  char text[96];
  int n = parallel > 0 ? snprintf(text, sizeof text, "{\"parallel\": %d, \"paused\": %s}\n",
                                  parallel, paused ? "true" : "false")
                       : snprintf(text, sizeof text, "{\"parallel\": null, \"paused\": %s}\n",
                                  paused ? "true" : "false");
  return tfs__write_atomic(qfd, SETTINGS_FILE, text, (size_t)n);
}

/* The index of a slot file's name, or -1 for any other name. */
static int slot_index(const char *name) {
  if (strncmp(name, SLOT_PREFIX, sizeof SLOT_PREFIX - 1))
    return -1;
  const char *p = name + sizeof SLOT_PREFIX - 1;
  int v = 0;
  if (!*p || (*p == '0' && p[1]))
    return -1;
  for (; *p; p++) {
    if (*p < '0' || *p > '9' || v > TFS_QUEUE_PARALLEL_MAX * 10)
      return -1;
    v = v * 10 + (*p - '0');
  }
  return v;
}

/* Makes the lowest slot file that does not exist (below the limit, if
 * any) and locks it. The queue lock keeps other takers out meanwhile. */
static int make_slot(int qfd, int parallel) {
  int max = parallel > 0 ? parallel : TFS_QUEUE_PARALLEL_MAX * 10;
  for (int i = 0; i < max; i++) {
    char name[32];
    snprintf(name, sizeof name, SLOT_PREFIX "%d", i);
    int fd = open_file(qfd, name, O_RDWR | O_CREAT | O_EXCL);
    if (fd == -EEXIST)
      continue;
    if (fd < 0)
      return fd;
    if (flock(fd, LOCK_EX | LOCK_NB)) {
      close(fd);
      return -EAGAIN;
    }
    return fd;
  }
  return -EAGAIN;
}

/* The id a held slot's holder wrote into it, into holder (may be NULL). */
static void slot_holder(int fd, char *holder) {
  char buf[TFS_ID_MAX + 1];
  if (!holder)
    return;
  ssize_t n = pread(fd, buf, 15, 0);
  buf[n == 15 ? 15 : 0] = '\0';
  snprintf(holder, TFS_ID_MAX + 1, "%s", tfs_id_valid(buf) ? buf : "");
}

/* One slot file: 1 if someone holds it (holder: who, if it says); with
 * want and a slot below the limit, a free one is kept locked in *taken. */
static int probe_slot(int qfd, const char *name, int idx, int parallel, int want, int *taken,
                      char *holder) {
  int fd = open_file(qfd, name, want ? O_RDWR : O_RDONLY);
  if (fd < 0)
    return fd == -ENOENT ? 0 : fd;
  if (flock(fd, LOCK_EX | LOCK_NB)) {
    int e = errno;
    slot_holder(fd, holder);
    close(fd);
    return e == EWOULDBLOCK ? 1 : -e;
  }
  if (want && *taken < 0 && (parallel == 0 || idx < parallel)) {
    *taken = fd; /* free, and ours now */
    return 0;
  }
  if (want && parallel > 0 && idx >= parallel)
    unlinkat(qfd, name, 0); /* left over from a higher limit, and free */
  close(fd);
  return 0;
}

int tfs__queue_slots(int qfd, int parallel, int want, int *held, int *taken) {
  return tfs__queue_holders(qfd, parallel, want, held, taken, NULL, 0);
}

int tfs__queue_holders(int qfd, int parallel, int want, int *held, int *taken,
                       char (*holders)[TFS_ID_MAX + 1], size_t max) {
  *held = 0;
  *taken = -1;
  DIR *d = tfs__dir_open(qfd);
  if (!d)
    return -errno;
  struct dirent *de;
  int err = 0;
  while (!err && (de = readdir(d))) {
    int idx = slot_index(de->d_name);
    if (idx < 0)
      continue;
    char *h = holders && (size_t)*held < max ? holders[*held] : NULL;
    int r = probe_slot(qfd, de->d_name, idx, parallel, want, taken, h);
    if (r < 0)
      err = r;
    else
      *held += r;
  }
  closedir(d);
  int full = parallel > 0 && *held >= parallel;
  if ((err || full || !want) && *taken >= 0) {
    close(*taken);
    *taken = -1;
  }
  if (!err && want && !full && *taken < 0) {
    int fd = make_slot(qfd, parallel);
    if (fd >= 0)
      *taken = fd;
    else if (fd != -EAGAIN)
      err = fd;
  }
  return err;
}

static int cmp_ids(const void *a, const void *b) {
  return memcmp(a, b, 16);
}

int tfs__queue_entries(int wfd, tfs__idbuf_t **ids, size_t *n) {
  *ids = NULL;
  *n = 0;
  DIR *d = tfs__dir_open(wfd);
  if (!d)
    return -errno;
  size_t cap = 0;
  struct dirent *de;
  int err = 0;
  while (!err && (de = readdir(d)))
    if (tfs_id_valid(de->d_name) && !(err = tfs_grow(ids, &cap, *n + 1, sizeof **ids, 64)))
      memcpy((*ids)[(*n)++], de->d_name, 16);
  closedir(d);
  if (err) {
    free(*ids);
    *ids = NULL;
    *n = 0;
    return err;
  }
  if (*n > 1)
    qsort(*ids, *n, sizeof **ids, cmp_ids);
  return 0;
}

int tfs__queue_entry_live(int wfd, const char *id) {
  int fd TFS_AUTOCLOSE = open_file(wfd, id, O_RDONLY);
  if (fd < 0)
    return fd == -ENOENT ? 0 : fd;
  /* LOCK_SH: two probers never take each other for the waiter. */
  if (flock(fd, LOCK_SH | LOCK_NB) == 0)
    return 0;
  return errno == EWOULDBLOCK ? 1 : -errno;
}

int tfs__queue_live(tfs_store_t *store, int qfd, tfs__idbuf_t **live, size_t *n) {
  *live = NULL;
  *n = 0;
  int wfd TFS_AUTOCLOSE = tfs__queue_waiting(store, qfd, 0);
  if (wfd == -ENOENT)
    return 0;
  if (wfd < 0)
    return wfd;
  tfs__idbuf_t *ids;
  size_t nids;
  int err = tfs__queue_entries(wfd, &ids, &nids);
  for (size_t i = 0; !err && i < nids; i++) {
    int r = tfs__queue_entry_live(wfd, ids[i]);
    if (r > 0)
      memcpy(ids[(*n)++], ids[i], 16);
    else if (r < 0)
      err = r;
  }
  if (err) {
    free(ids);
    *n = 0;
    return err;
  }
  *live = ids;
  return 0;
}

int tfs__queue_info_at(tfs_store_t *store, int qfd, const char *name, tfs_queue_info_t *out,
                       tfs__idbuf_t **keep, size_t *nkeep) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", name);
  int err = tfs__queue_settings(qfd, &out->parallel, &out->paused);
  if (err)
    return err;
  int lk TFS_AUTOCLOSE = tfs__queue_lock(store, qfd);
  if (lk < 0 && lk != -ENOENT)
    return lk;
  int taken;
  if ((err = tfs__queue_slots(qfd, out->parallel, 0, &out->running, &taken)))
    return err;
  tfs__idbuf_t *live;
  size_t n;
  if ((err = tfs__queue_live(store, qfd, &live, &n)))
    return err;
  out->waiting = (int)n;
  if (keep) {
    *keep = live;
    *nkeep = n;
  } else {
    free(live);
  }
  return 0;
}

int tfs_queue_info(tfs_store_t *store, const char *name, tfs_queue_info_t *out) {
  int qfd TFS_AUTOCLOSE = tfs__queue_open(store, name, 0);
  if (qfd < 0)
    return qfd == TFS_ESYMLINK ? -ENOENT : qfd;
  return tfs__queue_info_at(store, qfd, name, out, NULL, NULL);
}

static int cmp_info(const void *a, const void *b) {
  return strcmp(((const tfs_queue_info_t *)a)->name, ((const tfs_queue_info_t *)b)->name);
}

int tfs_queue_list(tfs_store_t *store, tfs_queue_info_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int err = tfs__usable(store);
  if (err)
    return err;
  int qs TFS_AUTOCLOSE = tfs__dir_checked(store, store->fd, TFS__QUEUES_DIR, 0);
  if (qs == -ENOENT)
    return 0;
  if (qs < 0)
    return qs;
  DIR *d = tfs__dir_open(qs);
  if (!d)
    return -errno;
  size_t cap = 0;
  struct dirent *de;
  while (!err && (de = readdir(d))) {
    if (!tfs_queue_name_valid(de->d_name))
      continue;
    int qfd TFS_AUTOCLOSE = tfs__dir_checked(store, qs, de->d_name, 0);
    if (qfd < 0)
      continue; /* not a queue of ours (a file, a symlink): not listed */
    if (!(err = tfs_grow(out, &cap, *n + 1, sizeof **out, 8)) &&
        !(err = tfs__queue_info_at(store, qfd, de->d_name, &(*out)[*n], NULL, NULL)))
      (*n)++;
  }
  closedir(d);
  if (err) {
    free(*out);
    *out = NULL;
    *n = 0;
    return err;
  }
  if (*n > 1)
    qsort(*out, *n, sizeof **out, cmp_info);
  return 0;
}

int tfs_queue_set(tfs_store_t *store, const char *name, int parallel, int paused) {
  return tfs_queue_change(store, name, parallel, paused, 1);
}

int tfs_queue_change(tfs_store_t *store, const char *name, int parallel, int paused, int create) {
  if (parallel != TFS_QUEUE_KEEP && (parallel < 0 || parallel > TFS_QUEUE_PARALLEL_MAX))
    return -EINVAL;
  int qfd TFS_AUTOCLOSE = tfs__queue_open(store, name, create);
  if (qfd < 0)
    return qfd == TFS_ESYMLINK ? -ENOENT : qfd;
  int lk = tfs__queue_lock(store, qfd), p, z;
  if (lk < 0)
    return lk;
  int err = tfs__queue_settings(qfd, &p, &z);
  if (err == TFS_ECORRUPT)
    err = 0; /* settings that do not parse are replaced */
  if (!err)
    err = write_settings(qfd, parallel == TFS_QUEUE_KEEP ? p : parallel,
                         paused == TFS_QUEUE_KEEP ? z : paused != 0);
  close(lk);
  return err ? err : tfs_queue_kick(store, name);
}

int tfs_queue_remove(tfs_store_t *store, const char *name) {
  char gone[TFS_QUEUE_NAME_MAX + 32], rnd[7];
  tfs__idbuf_t *live = NULL;
  size_t nlive = 0;
  int parallel = 0, paused, running = 0, taken;
  int err = tfs__writable(store);
  if (err)
    return err;
  int qs TFS_AUTOCLOSE = tfs__dir_checked(store, store->fd, TFS__QUEUES_DIR, 0);
  if (qs < 0)
    return qs == TFS_ESYMLINK ? -ENOENT : qs;
  int qfd TFS_AUTOCLOSE = tfs__dir_checked(store, qs, name, 0);
  if (qfd < 0)
    return qfd == TFS_ESYMLINK ? -ENOENT : qfd;
  /* Under the queue's lock no seat is taken or given back: a queue with
   * no slot held and no waiter can go. A task started later in it makes
   * the queue again, without a limit. */
  int lk = tfs__queue_lock(store, qfd);
  if (lk < 0)
    return lk;
  if (tfs__queue_settings(qfd, &parallel, &paused))
    parallel = 0; /* settings that do not parse go with the queue */
  if (!(err = tfs__queue_slots(qfd, parallel, 0, &running, &taken)) &&
      !(err = tfs__queue_live(store, qfd, &live, &nlive)) && (running || nlive))
    err = -EBUSY;
  free(live);
  if (!err && !(err = tfs__random_base36(rnd, 6))) {
    rnd[6] = '\0';
    /* Out of the queues' names first, so the name goes at once. */
    snprintf(gone, sizeof gone, ".gone.%s.%s", name, rnd);
    if (renameat(qs, name, qs, gone))
      err = -errno;
    else
      err = tfs__rm_tree_at(qs, gone);
  }
  close(lk);
  return err;
}

/* Rings the live waiters of the queue, oldest first, at most max (< 0:
 * all). */
static int ring_waiters(tfs_store_t *store, int qfd, int max) {
  tfs__idbuf_t *live;
  size_t n;
  int err = tfs__queue_live(store, qfd, &live, &n);
  for (size_t i = 0; !err && i < n && (max < 0 || (int)i < max); i++)
    tfs__doorbell_ring(store, live[i]);
  free(live);
  return err;
}

int tfs_queue_kick(tfs_store_t *store, const char *name) {
  int qfd TFS_AUTOCLOSE = tfs__queue_open(store, name, 0);
  if (qfd < 0)
    return qfd == -ENOENT ? 0 : qfd;
  int parallel, paused, held, taken;
  int err = tfs__queue_settings(qfd, &parallel, &paused);
  if (err || paused)
    return err;
  int lk = tfs__queue_lock(store, qfd);
  if (lk < 0)
    return lk;
  err = tfs__queue_slots(qfd, parallel, 0, &held, &taken);
  close(lk);
  if (err)
    return err;
  if (parallel > 0 && held >= parallel)
    return 0;
  return ring_waiters(store, qfd, parallel > 0 ? parallel - held : -1);
}

/* The ids of an open queue's live waiters, oldest first, as strings. */
static int live_waiters(tfs_store_t *store, int qfd, char ***out, size_t *n) {
  tfs__idbuf_t *live;
  size_t nl, cap = 0;
  int err = tfs__queue_live(store, qfd, &live, &nl);
  for (size_t i = 0; !err && i < nl; i++)
    if (!(err = tfs_grow(out, &cap, *n + 2, sizeof **out, 16)) &&
        !((*out)[(*n)++] = strdup(live[i])))
      err = -ENOMEM;
  free(live);
  return err;
}

int tfs_queue_tasks(tfs_store_t *store, const char *name, char ***running, size_t *nrunning,
                    char ***waiting, size_t *nwaiting) {
  *running = *waiting = NULL;
  *nrunning = *nwaiting = 0;
  int qfd TFS_AUTOCLOSE = tfs__queue_open(store, name, 0);
  if (qfd < 0)
    return qfd == TFS_ESYMLINK ? -ENOENT : qfd;
  int parallel, paused, held, taken;
  int err = tfs__queue_settings(qfd, &parallel, &paused);
  size_t max = TFS_QUEUE_PARALLEL_MAX * 10;
  char(*holders)[TFS_ID_MAX + 1] = err ? NULL : calloc(max, sizeof *holders);
  if (!err && !holders)
    err = -ENOMEM;
  if (!err) {
    int lk TFS_AUTOCLOSE = tfs__queue_lock(store, qfd);
    err = lk < 0 && lk != -ENOENT
              ? lk
              : tfs__queue_holders(qfd, parallel, 0, &held, &taken, holders, max);
  }
  size_t cap = 0;
  for (int i = 0; !err && i < held && (size_t)i < max; i++)
    if (holders[i][0] && !(err = tfs_grow(running, &cap, *nrunning + 2, sizeof **running, 8)) &&
        !((*running)[(*nrunning)++] = strdup(holders[i])))
      err = -ENOMEM;
  free(holders);
  if (!err)
    err = live_waiters(store, qfd, waiting, nwaiting);
  if (err) {
    tfs_ids_free(*running, *nrunning);
    tfs_ids_free(*waiting, *nwaiting);
    *running = *waiting = NULL;
    *nrunning = *nwaiting = 0;
  }
  return err;
}
