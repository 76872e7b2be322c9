/* Task numbers: the short, store-local number a user types for a task
 * ("taskfs logs 3"), as tsp and pueue users are used to.
 *
 * numbers/<n> names the task's id the way keys/<key> does. A number is
 * handed out under the numbers directory's lock: the counter numbers/next
 * says where to start, and the name is linked into place with linkat(),
 * which never replaces, so even a creator killed between the link and the
 * counter's update cannot make two tasks share a number (the next creator
 * finds the name taken and moves on). A number is never reused while its
 * task exists; its name goes when the task is forgotten.
 *
 * Neither the name nor the counter is fsynced when a task is created
 * (issue 28: a start waits for no fsync); the name is made durable with
 * the record that says the task ended (tfs__number_sync), which is what
 * must survive a power loss (docs/faults.md). */
#include "core/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NUMBERS_DIR "numbers"
#define NEXT_FILE "next"

/* numbers/, made on first use with create (stores from before have none). */
static int numbers_dir(tfs_store_t *store, int create) {
  return tfs__dir_checked(store, store->fd, NUMBERS_DIR, create);
}

int tfs_number_parse(const char *s, int64_t *out) {
  int64_t n = 0;
  if (!s || !*s || *s == '0' || strlen(s) > 12)
    return 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    n = n * 10 + (*p - '0');
  }
  *out = n;
  return 1;
}

int tfs_is_decimal(const char *s) {
  if (!s || !*s)
    return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return 0;
  return 1;
}

/* The counter, or 1 when it is missing or unreadable (the links decide). */
static int64_t next_read(int dfd) {
  char *text;
  size_t len;
  int64_t n = 1;
  if (tfs__read_small(dfd, NEXT_FILE, 32, &text, &len))
    return 1;
  text[strcspn(text, "\n")] = '\0';
  if (!tfs_number_parse(text, &n))
    n = 1;
  free(text);
  return n;
}

/* Writes the counter in place. Only creators read it, under the lock it
 * is written under, and it is a hint: a counter left behind, torn or lost
 * only costs the next creator a few taken names (linkat decides). So it
 * is not replaced by rename, which would allocate an inode and free one
 * per task (on an ext4 without a journal, freed inodes slow every later
 * creation for a minute: spread_children() in core/store.c). Numbers only
 * grow, so the new text covers the old. */
static void next_write(int dfd, const char *text, size_t len) {
  int fd = openat(dfd, NEXT_FILE, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  (void)!pwrite(fd, text, len, 0);
  close(fd);
}

int tfs__number_assign(tfs_store_t *store, tfs_record_t *rec) {
  char name[24], line[TFS_ID_MAX + 2], next[24];
  int dfd TFS_AUTOCLOSE = numbers_dir(store, 1);
  if (dfd < 0)
    return dfd;
  int lk = tfs__dir_lock(dfd);
  if (lk < 0)
    return lk;
  int64_t n = next_read(dfd);
  int len = snprintf(line, sizeof line, "%s\n", rec->id), err;
  for (;; n++) {
    snprintf(name, sizeof name, "%lld", (long long)n);
    err = tfs__write_new_flags(dfd, name, line, (size_t)len, TFS__WRITE_NOSYNC);
    if (err != -EEXIST)
      break;
  }
  if (!err) {
    int nl = snprintf(next, sizeof next, "%lld\n", (long long)(n + 1));
    next_write(dfd, next, (size_t)nl);
    rec->number = n;
  }
  close(lk);
  return err;
}

/* Makes numbers/<n> durable (its bytes and its name); called with the
 * fsynced save of a task's end. Best effort, like that save's caller:
 * the record itself is what the promise is about. */
void tfs__number_sync(tfs_store_t *store, int64_t n) {
  char name[24];
  if (n <= 0)
    return;
  int dfd TFS_AUTOCLOSE = numbers_dir(store, 0);
  if (dfd < 0)
    return;
  snprintf(name, sizeof name, "%lld", (long long)n);
  tfs__sync_name(dfd, name);
}

/* Reads numbers/<n>: the id, TFS_ENOTASK if no task has that number. */
static int number_read(int dfd, int64_t n, char id_out[TFS_ID_MAX + 1]) {
  char name[24];
  snprintf(name, sizeof name, "%lld", (long long)n);
  return tfs__read_id_file(dfd, name, id_out);
}

int tfs_number_lookup(tfs_store_t *store, int64_t n, char id_out[TFS_ID_MAX + 1]) {
  int err = tfs__usable(store);
  if (err)
    return err;
  int dfd TFS_AUTOCLOSE = numbers_dir(store, 0);
  if (dfd == -ENOENT)
    return TFS_ENOTASK;
  if (dfd < 0)
    return dfd;
  return number_read(dfd, n, id_out);
}

void tfs__number_drop(tfs_store_t *store, int64_t n, const char *id) {
  char cur[TFS_ID_MAX + 1], name[24];
  if (n <= 0)
    return;
  int dfd TFS_AUTOCLOSE = numbers_dir(store, 0);
  if (dfd < 0)
    return;
  int lk = tfs__dir_lock(dfd);
  if (lk < 0)
    return;
  snprintf(name, sizeof name, "%lld", (long long)n);
  if (number_read(dfd, n, cur) == 0 && !strcmp(cur, id))
    unlinkat(dfd, name, 0);
  close(lk);
}

/* Removes the numbers that name no task directory: a creator that failed
 * or died after taking its number, and the temp files of creators killed
 * mid-write (of a number or of the counter). Under the lock no creator is between
 * its link and its dir (the dir comes first), so such a number is stale. */
void tfs__number_sweep(tfs_store_t *store) {
  char id[TFS_ID_MAX + 1];
  int64_t n;
  struct stat st;
  int dfd TFS_AUTOCLOSE = numbers_dir(store, 0);
  if (dfd < 0)
    return;
  tfs__sweep_temps(dfd);
  DIR *d = tfs__dir_open(dfd);
  if (!d)
    return;
  int lk = tfs__dir_lock(dfd);
  struct dirent *e;
  while (lk >= 0 && (e = readdir(d)))
    if (tfs_number_parse(e->d_name, &n) && number_read(dfd, n, id) == 0 &&
        fstatat(store->tasks_fd, id, &st, AT_SYMLINK_NOFOLLOW) && errno == ENOENT)
      unlinkat(dfd, e->d_name, 0);
  if (lk >= 0)
    close(lk);
  closedir(d);
}

int tfs__save_new(tfs_store_t *store, tfs_record_t *rec) {
  int err = rec->number ? 0 : tfs__number_assign(store, rec);
  if (!err && (err = tfs_task_save(store, rec))) {
    tfs__number_drop(store, rec->number, rec->id);
    rec->number = 0;
  }
  return err;
}
