/* Records on disk: loading (one openat2 on the common path), durable
 * saves, the "lost" reading of a record whose supervisor died, and settling
 * it. */
#include "core/internal.h"

#include <stdarg.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int tfs__record_claims_live(const tfs_record_t *rec) {
  return rec->state == TFS_RUNNING || rec->state == TFS_PAUSED ||
         (rec->state == TFS_QUEUED && rec->supervisor_pid > 0);
}

/* A task no supervisor ever took is launched by its creator: between
 * tfs_task_create() and the supervisor's lock, nothing but the creator
 * stands for it. When that process is gone (its start time and the boot id
 * tell a recycled pid apart) and the task is older than the grace, the
 * launch cannot come any more. The grace covers a creator killed just
 * after it forked the supervisor, which then takes the lock within it. */
int tfs__record_abandoned(const tfs_record_t *rec) {
  if (rec->state != TFS_QUEUED || rec->supervisor_pid > 0)
    return 0;
  if (tfs_now_ms() - rec->created_ms < TFS__QUEUED_GRACE_MS)
    return 0;
  return !tfs__process_alive(rec->creator_pid, rec->creator_start_ticks, rec->creator_boot);
}

int tfs__record_lost_if_unlocked(const tfs_record_t *rec) {
  return tfs__record_claims_live(rec) || tfs__record_abandoned(rec);
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
  /* A handle bound to its task (the supervisor) reads through that fd. */
  int bound = store->task_fd >= 0 && !strcmp(id, store->task_id);
  if (!bound && !store->refused && !__atomic_load_n(&no_openat2, __ATOMIC_RELAXED)) {
    char path[TFS_ID_MAX + 32];
    struct open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
    };
    snprintf(path, sizeof path, "%s/%s", id, TFS__FILE(RECORD));
    long fd = syscall(SYS_openat2, store->tasks_fd, path, &how, sizeof how);
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
  int fd =
      openat(dfd, TFS__FILE(RECORD), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  return fd < 0 ? tfs__open_err(errno) : fd;
}

/* Reads the whole record from fd: a regular file of at most TFS_RECORD_MAX
 * bytes (anything else is TFS_ECORRUPT). A record that fits in stack (most
 * are 1-3 KiB) costs one read(): a short read of a regular file is its end,
 * and a record is never written in place (saves rename a new file over it).
 * Only when stack fills do the rest go to *heap, read until EOF.
 * On success *text points into stack or *heap, NUL-terminated; on
 * TFS_ECORRUPT *why says what is wrong, in words. */
static int record_read(int fd, char stack[RECORD_STACK + 1], char **heap, const char **text,
                       size_t *len, const char **why) {
  struct stat st;
  if (fstat(fd, &st))
    return -errno;
  if (!S_ISREG(st.st_mode)) {
    *why = S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file";
    return TFS_ECORRUPT;
  }
  *why = "it is larger than 4 MiB";
  if (st.st_size > TFS_RECORD_MAX)
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
  tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
  size_t n = (size_t)st.st_size + 1 > 2 * RECORD_STACK ? (size_t)st.st_size + 1 : 2 * RECORD_STACK;
  int err = tfs_buf_reserve(&b, n);
  if (!err)
    err = tfs_buf_append(&b, stack, RECORD_STACK);
  if (!err && (err = tfs_buf_read(&b, fd, TFS_RECORD_MAX - RECORD_STACK)) == -EFBIG)
    return TFS_ECORRUPT;
  char *buf = err ? NULL : tfs_buf_take(&b, &n);
  if (err || !buf)
    return err ? err : -ENOMEM;
  *heap = buf;
  *text = buf;
  *len = n;
  return 0;
}

/* Reads and parses the record; with why (whylen > 0), a record that does
 * not load is described in words (the parser's message, "it is a
 * directory", ...). */
static int load_raw(const tfs_store_t *store, const char *id, tfs_record_t *rec, char *why,
                    size_t whylen) {
  char stack[RECORD_STACK + 1];
  char *heap TFS_AUTOFREE = NULL;
  const char *text = NULL, *what = NULL;
  size_t len = 0;
  memset(rec, 0, sizeof *rec);
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  int fd TFS_AUTOCLOSE = record_open(store, id);
  if (fd == TFS_ESYMLINK)
    what = "it is a symlink";
  int err = fd < 0 ? fd : record_read(fd, stack, &heap, &text, &len, &what);
  if (!err) {
    what = len ? NULL : "it is empty";
    if ((err = tfs_record_parse(text, len, rec, why, whylen)))
      memset(rec, 0, sizeof *rec);
  }
  /* A record copied into another task's directory is not that task. */
  if (!err && strcmp(rec->id, id)) {
    if (why && whylen)
      snprintf(why, whylen, "it is the record of another task, %s", rec->id);
    tfs_record_free(rec);
    err = TFS_ECORRUPT;
  }
  if ((err == TFS_ECORRUPT || err == TFS_ESYMLINK) && what && why && whylen)
    snprintf(why, whylen, "%s", what);
  return err;
}

int tfs__load_raw(const tfs_store_t *store, const char *id, tfs_record_t *rec) {
  return load_raw(store, id, rec, NULL, 0);
}

int tfs_task_save(tfs_store_t *store, const tfs_record_t *rec) {
  return tfs_task_save_flags(store, rec, 0);
}

int tfs_task_save_flags(tfs_store_t *store, const tfs_record_t *rec, unsigned flags) {
  int err = tfs__writable(store);
  if (err)
    return err;
  int dfd TFS_AUTOCLOSE = tfs__task_dir(store, rec->id);
  if (dfd < 0)
    return dfd;
  char *text = tfs_record_dump(rec);
  if (!text)
    return -ENOMEM;
  size_t len = strlen(text);
  /* Only an end is fsynced (the file before the rename, then the task
   * directory after it): that is what must survive a power loss. Every
   * earlier state is moot after one (the supervisor is gone: the task
   * reads lost whatever the record said), so those saves are atomic and
   * visible at once but leave the disk to its own pace. */
  int sync = tfs_state_terminal(rec->state) && !(flags & TFS_SAVE_NOSYNC);
  err = len > TFS_RECORD_MAX ? -EFBIG
                             : tfs__write_atomic_flags(dfd, TFS__FILE(RECORD), text, len,
                                                       sync ? 0 : TFS__WRITE_NOSYNC, NULL);
  free(text);
  if (!err && sync)
    tfs__number_sync(store, rec->number);
  return err;
}

/* Rewrites the in-memory record as lost: the supervisor died without
 * recording an end. The end time is the last moment it was known alive. */
static void mark_lost(tfs_record_t *rec) {
  char t[TFS_TIME_BUF];
  if (rec->state == TFS_QUEUED && rec->supervisor_pid <= 0) {
    rec->state = TFS_LOST;
    rec->ended_ms = rec->created_ms + TFS__QUEUED_GRACE_MS;
    tfs_record_set_reason(rec, "its launcher died before starting it");
    return;
  }
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
int tfs__load_checked(tfs_store_t *store, const char *id, tfs_record_t *rec) {
  int err = tfs__load_raw(store, id, rec);
  if (err || !tfs__record_lost_if_unlocked(rec))
    return err;
  int alive = tfs_task_alive(store, id);
  if (alive != 0)
    return 0; /* alive, or we cannot tell: report what the record says */
  /* The supervisor writes its final record before its lock goes away, so a
   * second read after seeing the lock free tells a clean end from a death. */
  tfs_record_free(rec);
  if ((err = tfs__load_raw(store, id, rec)))
    return err;
  if (tfs__record_lost_if_unlocked(rec))
    mark_lost(rec);
  return 0;
}

int tfs_task_load(tfs_store_t *store, const char *id, tfs_record_t *rec) {
  int err = tfs__load_checked(store, id, rec);
  return err == -ENOENT ? TFS_ENOTASK : err;
}

int tfs_task_load_reason(tfs_store_t *store, const char *id, tfs_record_t *rec, char *why,
                         size_t whylen) {
  if (why && whylen)
    why[0] = '\0';
  int err = tfs_task_load(store, id, rec);
  if ((err != TFS_ECORRUPT && err != TFS_ESYMLINK) || !why || !whylen)
    return err;
  /* The reading again is the error path only: the listing never pays for
   * the words. */
  tfs_record_t again;
  if (!load_raw(store, id, &again, why, whylen))
    tfs_record_free(&again); /* mended meanwhile: no words to give */
  if (!why[0])
    snprintf(why, whylen, "%s", tfs_strerror(err));
  return err;
}

/* Opens a task's lock file without ever blocking: O_NONBLOCK so that a FIFO
 * planted in its place cannot hang a reader, and anything but a regular file
 * is refused. */
int tfs_task_settle_lost(tfs_store_t *store, const char *id) {
  tfs_record_t rec;
  int w = tfs__writable(store);
  if (w)
    return w == -EROFS ? 0 : w; /* a foreign store is read, never settled */
  int fd TFS_AUTOCLOSE = tfs__task_trylock(store, id);
  if (fd == -EBUSY)
    return 0; /* a supervisor, or another settler: nothing to do here */
  if (fd < 0)
    return fd;
  /* Holding the lock, nobody else can be the supervisor: re-read and
   * settle. Closing fd releases the lock. */
  int err = tfs__load_raw(store, id, &rec);
  if (err)
    return err == -ENOENT ? 0 : err;
  int wrote = 0;
  if (tfs__record_lost_if_unlocked(&rec)) {
    mark_lost(&rec);
    err = tfs_task_save(store, &rec);
    wrote = !err;
  }
  tfs_record_free(&rec);
  return err ? err : wrote;
}

/* Holding the lock, nobody else can be the supervisor, and a supervisor
 * that comes later finds the task ended and leaves it alone. */
int tfs_task_fail_queued(tfs_store_t *store, const char *id, int code, const char *fmt, ...) {
  tfs_record_t rec;
  int fd TFS_AUTOCLOSE = tfs__task_trylock(store, id);
  if (fd < 0)
    return fd;
  int err = tfs__load_raw(store, id, &rec);
  if (err)
    return err == -ENOENT ? TFS_ENOTASK : err;
  int wrote = 0;
  if (rec.state == TFS_QUEUED) {
    char reason[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    rec.state = TFS_FAILED;
    rec.exit_code = code;
    rec.ended_ms = tfs_now_ms();
    if (!(err = tfs_record_set_reason(&rec, "%s", reason)))
      err = tfs_task_save(store, &rec);
    wrote = !err;
  }
  tfs_record_free(&rec);
  return err ? err : wrote;
}
