/* Internal helpers of the core store, shared by the files in core/ only. */
#ifndef TASKFS_CORE_INTERNAL_H
#define TASKFS_CORE_INTERNAL_H

#include "taskfs/cleanup.h"
#include "taskfs/buf.h"
#include "taskfs/taskfs.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

struct tfs_store {
  char *path;     /* absolute path of <state> */
  int fd;         /* <state>, O_RDONLY|O_DIRECTORY; -1 once refused */
  int tasks_fd;   /* <state>/tasks */
  int keys_fd;    /* <state>/keys */
  unsigned flags; /* TFS_STORE_* it was opened with */
  uid_t owner;    /* whose it is: our euid, or a foreign store's owner */
  int refused;    /* 0, or why a refresh stopped serving it (TFS_EFOREIGN, TFS_EUNSAFE) */
  char why[512];  /* ... in words */
  int task_fd;    /* tfs_store_bind_task(): the one task dir this handle uses */
  char task_id[TFS_ID_MAX + 1];
};

/* 0 while the handle serves, else why it does not (a refused store). Every
 * call that reaches the store's directories starts here. */
static inline int tfs__usable(const tfs_store_t *store) {
  return store->refused;
}
/* The same for a call that writes: a foreign store (TFS_STORE_FOREIGN) is
 * only ever read, -EROFS. */
static inline int tfs__writable(const tfs_store_t *store) {
  if (store->refused)
    return store->refused;
  return store->flags & TFS_STORE_FOREIGN ? -EROFS : 0;
}

/* The store's own names (task files: tfs_task_file_name()). */
#define TFS__TASKS_DIR "tasks"
#define TFS__KEYS_DIR "keys"
#define TFS__OWNER_FILE "owner.json"
#define TFS__TOKEN_FILE "serve.token"
#define TFS__SERVE_LOG "serve.log"
#define TFS__FILE(which) tfs_task_file_name(TFS_FILE_##which)

/* Opens tasks/<id>/<name>: never blocking, never following a symlink, and
 * only a regular file (a FIFO with want_fifo); see tfs_task_file_open. */
int tfs__open_in_task(tfs_store_t *store, const char *id, const char *name, int flags, mode_t mode,
                      int want_fifo);

/* "<store>/tasks/<id>" (id NULL: "<store>/tasks") into buf, for the calls
 * that take a path (inotify). */
int tfs__task_path(const tfs_store_t *store, const char *id, char *buf, size_t len);

/* Transcript reading shared by core/transcript.c and transcript_tail.c:
 * the transcript open for reading with its stat (fd -1 and a zero stat
 * when the task has written nothing yet), and where the last n lines of
 * [0, size) start, a final line without its newline counting as one. */
int tfs__transcript_open_read(tfs_store_t *store, const char *id, int *fd, struct stat *st);
int tfs__tail_start(int fd, off_t size, int64_t n, off_t *start);

/* The reader's piece size: a line longer than this is delivered in pieces
 * (partial = 2 for each non-final piece). */
#define TFS__PIECE_MAX (1 << 20)

/* Maps the errno of an O_NOFOLLOW open to our error: a planted symlink (or a
 * non-directory where a directory belongs) becomes TFS_ESYMLINK. */
int tfs__open_err(int e);

/* Opens tasks/<id> as a directory without following a symlink. Returns the
 * fd, TFS_ENOTASK if absent, TFS_EBADID if id is malformed. */
int tfs__task_dir(const tfs_store_t *store, const char *id);

/* Opens dirfd itself again for reading entries (readdir). */
int tfs__dir_reopen(int dirfd);
/* The same as a DIR stream (NULL and errno on failure). */
DIR *tfs__dir_open(int dirfd);

/* Fills buf with n random base36 characters (getrandom). */
int tfs__random_base36(char *buf, size_t n);
/* Makes a fresh id from the current time; buf holds TFS_ID_MAX + 1. */
int tfs__id_generate(char buf[TFS_ID_MAX + 1]);

/* Loads the record as stored, without the "lost" reinterpretation.
 * Returns TFS_ENOTASK if the task dir is absent and -ENOENT if the dir exists
 * but has no record.json (a task being created). */
int tfs__load_raw(const tfs_store_t *store, const char *id, tfs_record_t *rec);

/* tfs__write_atomic_flags() flags. TFS__WRITE_NOSYNC replaces the file
 * atomically (temp file and rename: a reader sees the old or the new content,
 * never a part) but skips the fsync of the file and of the directory, for
 * files that must be visible at once but need not survive a crash. */
#define TFS__WRITE_NOSYNC 1u

/* tfs__write_atomic() with flags (0: the same as tfs__write_atomic). st (may
 * be NULL) gets the identity of the file written, so that its writer can
 * tell later whether the name still holds its own file. */
int tfs__write_atomic_flags(int dirfd, const char *name, const void *data, size_t len,
                            unsigned flags, struct stat *st);

/* Removes name inside dirfd, recursing into directories, never following
 * a symlink. */
int tfs__rm_tree_at(int dirfd, const char *name);
/* Removes tasks/<id> whole (renamed out of the tasks' names first), the
 * file named last (its record, which the caller names: file I/O knows no
 * task file) after everything else: a removal that fails half way leaves
 * the task as it was (readable, ended). */
int tfs__rm_task(const tfs_store_t *store, const char *id, const char *last);
/* What a task dir is renamed to while it is removed (tfs__rm_task). */
#define TFS__GONE_PREFIX ".gone."

/* Opens (with create: makes, 0700) the directory name inside dirfd
 * without following a symlink, checked as the store's own directories are
 * (the caller's, writable by nobody else): the queues. */
int tfs__dir_checked(const tfs_store_t *store, int dirfd, const char *name, int create);

/* Makes the FIFO which (the doorbell, the stdin) in place of whatever had
 * the name and opens it for reading and writing, non-blocking: the fd of
 * the supervisor's end. */
int tfs__fifo_make(tfs_store_t *store, const char *id, tfs_task_file_t which);
/* Rings a task's doorbell (TFS_FILE_DOORBELL): one byte into the FIFO its
 * supervisor reads, best effort (no doorbell, no reader, already rung are
 * all fine), never into anything but a FIFO. Stop and control requests and
 * queues use it. */
void tfs__doorbell_ring(tfs_store_t *store, const char *id);
/* Appends one line (a single write, O_APPEND) to a task file, opened and
 * checked by role; -EFBIG once the file holds max bytes. */
int tfs__append_line(tfs_store_t *store, const char *id, tfs_task_file_t which, const char *line,
                     size_t len, off_t max);

/* Takes / releases the store-wide key lock (flock on keys/). */
int tfs__keys_lock(const tfs_store_t *store);
void tfs__keys_unlock(int fd);
/* An exclusive flock of the directory dirfd on a fresh fd of its own
 * (waiting for it): the fd, closing it releases the lock. */
/* Takes fd (or passes on its negative errno) and waits for its exclusive
 * flock; returns fd, or the error with fd closed. */
int tfs__lock_or_close(int fd);
int tfs__dir_lock(int dirfd);

/* Reads a file holding "<id>\n" (a key's, a number's): 0 and the id,
 * TFS_ENOTASK if absent, TFS_ECORRUPT if it holds anything else. */
int tfs__read_id_file(int dirfd, const char *name, char id_out[TFS_ID_MAX + 1]);
/* Reads a key file: 0 and the id, TFS_ENOTASK if absent. */
int tfs__key_read(const tfs_store_t *store, const char *key, char id_out[TFS_ID_MAX + 1]);

/* 1 if the record claims a live supervisor (running, paused, or queued
 * with a supervisor pid: one waiting for its queue, a dependency or its
 * start time). */
int tfs__record_claims_live(const tfs_record_t *rec);
/* 1 if the record is queued, no supervisor ever took it, it is older than
 * TFS__QUEUED_GRACE_MS and its creator no longer lives: nobody will launch
 * it. */
int tfs__record_abandoned(const tfs_record_t *rec);
/* 1 if the record reads lost once its lock is found free: it claims a
 * supervisor, or it is abandoned. The one rule of every settler. */
int tfs__record_lost_if_unlocked(const tfs_record_t *rec);
/* A queued task whose creator died is abandoned after this long. */
#define TFS__QUEUED_GRACE_MS 5000

/* 1 if the process pid, started at start_ticks (clock ticks after boot,
 * /proc/<pid>/stat) under the boot id boot, still lives: a recycled pid or
 * another boot never reads as alive. */
int tfs__process_alive(pid_t pid, uint64_t start_ticks, const char *boot);
/* The calling process as tfs__process_alive() identifies it. */
int tfs__process_self(pid_t *pid, uint64_t *start_ticks, char boot[40]);

/* 1 if s[0..len) is valid UTF-8 without NUL bytes: what
 * tfs_utf8_sanitize() would return unchanged. */
int tfs__utf8_valid(const char *s, size_t len);

/* Removes what killed writers left: temp files older than
 * TFS__CREATING_GRACE_MS in the store's root and keys/, keys naming no
 * task dir, and task dirs a killed remover left half removed. Every prune
 * ends with it. */
int tfs__sweep_litter(tfs_store_t *store);
/* Removes dir's temp files of atomic writes older than the creating grace:
 * what a writer killed before its rename or link left. */
void tfs__sweep_temps(int dirfd);

/* A task dir without record.json younger than this is being created. */
#define TFS__CREATING_GRACE_MS 5000
/* How long a loser of a key race waits for the winner's record. */
#define TFS__KEY_WAIT_MS 3000

/* The creation time (ms) encoded in a well-formed id. */
int64_t tfs__id_time_ms(const char *id);
/* Sleeps ms milliseconds (EINTR resumes the sleep). */
void tfs__sleep_ms(int ms);

/* Loads with the liveness check (a dead supervisor's record reads lost).
 * -ENOENT: the dir has no record yet; TFS_ENOTASK: no such task dir. */
int tfs__load_checked(tfs_store_t *store, const char *id, tfs_record_t *rec);

/* Opens the task's lock file without ever blocking (a planted FIFO cannot
 * hang it) and refuses anything but a regular file. */
int tfs__open_lock(tfs_store_t *store, const char *id, int flags);
/* Takes the task lock without waiting: the fd (closing it releases the
 * lock), -EBUSY if someone (a supervisor) holds it, or another error. */
int tfs__task_trylock(tfs_store_t *store, const char *id);
/* flock(fd, op) that waits, resuming after signals. 0 or -errno. */
int tfs__flock_wait(int fd, int op);

/* 0 if no limit of l is above the hard limit this process (and so the
 * worker) has, else TFS_ELIMIT with why in words (core/limits.c; the
 * store's defaults are merged before, in core/config.c). */
int tfs__limits_check_hard(const tfs_limits_t *l, char *why, size_t whylen);

/* tfs_task_create(): the queue, dependencies, start time and stdin of
 * spec into rec, checked (a bad queue name -EINVAL, an unknown dependency
 * TFS_ENOTASK, a cycle TFS_ECYCLE). core/after.c. */
int tfs__schedule_spec(tfs_store_t *store, const tfs_task_spec_t *spec, tfs_record_t *rec);

/* Task numbers (core/number.c): gives rec the next free number, its
 * numbers/<n> linked to rec->id (the task dir exists already); drops the
 * name of number n if it still names id (a forgotten task); removes the
 * names of tasks whose dir is gone (prune's sweep). */
int tfs__number_assign(tfs_store_t *store, tfs_record_t *rec);
void tfs__number_drop(tfs_store_t *store, int64_t n, const char *id);
void tfs__number_sync(tfs_store_t *store, int64_t n);
void tfs__number_sweep(tfs_store_t *store);
/* The first save of a new task: its number, then its record (the number
 * dropped again if the save fails). */
int tfs__save_new(tfs_store_t *store, tfs_record_t *rec);

/* 0 if key may name a new task; TFS_EBADID with why in words if it would
 * hide a task number (digits only), an id (an id's shape) or the start of
 * an existing task's id (core/resolve.c). */
int tfs__key_shadows(tfs_store_t *store, const char *key, char *why, size_t whylen);

/* tfs_task_create() for a keyed task whose dir and record are made. how:
 * TFS__KEY_RERUN takes the key over from an ended task of the same
 * command, TFS__KEY_REPLACE from one of another command too. */
#define TFS__KEY_RERUN 1
#define TFS__KEY_REPLACE 2
int tfs__create_keyed(tfs_store_t *store, tfs_record_t *rec, int how, char id_out[TFS_ID_MAX + 1],
                      int *existed);

/* Ids as a flat array of 16-byte slots (15 chars and a NUL). */
typedef char tfs__idbuf_t[16];
/* Reads tasks/ once (readdir only, no stat) and returns the well-formed
 * ids, sorted when sort is set, in one malloc'ed array. */
int tfs__collect_ids(tfs_store_t *store, tfs__idbuf_t **out, size_t *n, int sort);

/* tfs_task_forget() on each of ids[0..n): the number removed (a task that
 * runs, or is already gone, stays counted out), or the first other error
 * (-EROFS, -EACCES, -EIO ...), at which it stops. */
int tfs__forget_ids(tfs_store_t *store, tfs__idbuf_t *ids, size_t n);

/* The store's directory fds and files by name: the disk layout, for core
 * (and its tests and the bench's store generator) only; faces use the
 * calls of taskfs.h. */
int tfs__store_fd(const tfs_store_t *store);       /* <state> dir fd */
int tfs__store_tasks_fd(const tfs_store_t *store); /* <state>/tasks dir fd */
/* Opens <store>/tasks/<id>/<name> by name, with the checks of
 * tfs_task_file_open(). */
int tfs__task_openat(tfs_store_t *store, const char *id, const char *name, int flags, mode_t mode);
/* Writes data to dirfd/name atomically and durably (temp, fsync, rename,
 * fsync dir). */
int tfs__write_atomic(int dirfd, const char *name, const void *data, size_t len);
/* Reads a whole small file (at most max bytes) relative to dirfd with
 * O_NOFOLLOW; *out is malloc'ed and NUL-terminated. */
int tfs__read_small(int dirfd, const char *name, size_t max, char **out, size_t *len);
/* The same for an open fd (a regular file, at most max bytes). */
int tfs__read_fd(int fd, size_t max, char **out, size_t *len);
/* Creates dirfd/name with data, durably, only if no such name exists
 * (-EEXIST): a temp file linked into place, which never replaces. */
int tfs__write_new(int dirfd, const char *name, const void *data, size_t len);
int tfs__write_new_flags(int dirfd, const char *name, const void *data, size_t len, unsigned flags);
int tfs__sync_name(int dirfd, const char *name);

/* ---- the classifier's ranks (core/classify*.c, important.c, triage.c) ----- */

/* How well an important line says what went wrong, for choosing the lead
 * (the first error an answer shows first). Higher is better. */
enum {
  TFS__RANK_NONE = 0,    /* warnings, summaries, plain lines */
  TFS__RANK_VERDICT = 1, /* "make: *** [x] Error 1", "Build FAILED", "FAIL\tpkg" */
  TFS__RANK_ERROR = 2,   /* an error or failure in words ("error: ...", "ERROR ...") */
  TFS__RANK_HEADING = 3, /* a failing test named ("--- FAIL: TestX", "\u25cf a \u203a b") */
  TFS__RANK_CAUSE = 4,   /* the cause itself: a located diagnostic, an exception, a panic */
};

/* tfs_classify_line() that also says the line's rank (TFS__RANK_*) and,
 * with block, whether the line starts a report of its own (a located
 * diagnostic, a test heading: the end of the previous one's context). */
tfs_line_kind_t tfs__classify(const char *line, size_t len, int *rank, int *block);

/* What a line near the lead is to the reader (core/classify_context.c). */
enum {
  TFS__CX_EMPTY = 0, /* nothing to read: blank, a bare gutter, a prefix only */
  TFS__CX_OTHER,     /* text that goes on from the line before */
  TFS__CX_FORM,      /* context by its form: Expected/Received, "-->", symbol:, a caret with text */
  TFS__CX_LOCATION,  /* where: "File \"x\", line 3", a bare path, "x.c: In function" */
  TFS__CX_PLACE,     /* a source location alone, "a.js:6", "a.f90:10:6:": above its report */
  TFS__CX_CODE,      /* a source line the tool quotes, or a caret under it */
  TFS__CX_FRAME,     /* a stack frame of the program's own code */
  TFS__CX_LIBFRAME,  /* a frame in a library, the runtime or the test framework */
  TFS__CX_FRAMES,    /* the heading of a trace ("goroutine 1 [running]:", "Stack Trace:") */
  TFS__CX_HINT,      /* advice of the tool ("note: run with RUST_BACKTRACE=1") */
  TFS__CX_HEADER,    /* a numbered failure header naming the test: "1) Suite::test_x" */
};
int tfs__context_form(const char *line, size_t len);

#endif
