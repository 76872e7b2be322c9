/* Internal helpers of the core store, shared by the files in core/ only. */
#ifndef TASKFS_CORE_INTERNAL_H
#define TASKFS_CORE_INTERNAL_H

#include "taskfs/taskfs.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct tfs_store {
  char *path;   /* absolute path of <state> */
  int fd;       /* <state>, O_RDONLY|O_DIRECTORY */
  int tasks_fd; /* <state>/tasks */
  int keys_fd;  /* <state>/keys */
};

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

/* tfs_write_atomic() with flags (0: the same as tfs_write_atomic). */
int tfs__write_atomic_flags(int dirfd, const char *name, const void *data, size_t len,
                            unsigned flags);

/* Removes name inside dirfd, recursing into directories, never following
 * a symlink. */
int tfs__rm_tree_at(int dirfd, const char *name);

/* Takes / releases the store-wide key lock (flock on keys/). */
int tfs__keys_lock(const tfs_store_t *store);
void tfs__keys_unlock(int fd);

/* Reads a key file: 0 and the id, TFS_ENOTASK if absent. */
int tfs__key_read(const tfs_store_t *store, const char *key, char id_out[TFS_ID_MAX + 1]);

/* 1 if the record claims a live supervisor (running, or queued with a
 * supervisor pid). */
int tfs__record_claims_live(const tfs_record_t *rec);

static inline void tfs__closep(int *fd) {
  if (*fd >= 0) {
    int e = errno;
    close(*fd);
    errno = e;
  }
}
static inline void tfs__freep(void *p) {
  free(*(void **)p);
}
#define TFS_AUTOCLOSE __attribute__((cleanup(tfs__closep)))
#define TFS_AUTOFREE __attribute__((cleanup(tfs__freep)))

#endif
