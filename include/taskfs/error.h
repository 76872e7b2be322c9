/* taskfs: the error codes of the core (part of libtaskfs.a; included by
 * taskfs.h). Every call that can fail returns 0 (or a count) or a negative
 * error: a negated errno value or one of these; tfs_strerror() names both. */
#ifndef TASKFS_ERROR_H
#define TASKFS_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes of our own, beyond errno. Like libuv's, they are negative and
 * far from any errno value. */
#define TFS_ENOTASK (-4001)      /* no task with that id or key */
#define TFS_EBADID (-4002)       /* id or key is not well formed */
#define TFS_ECORRUPT (-4003)     /* a file in the store does not parse */
#define TFS_EKEYCONFLICT (-4004) /* key already names a different command/cwd */
#define TFS_EFINISHED (-4005)    /* the task has already ended */
#define TFS_ESYMLINK (-4006)     /* a symlink was planted where a file belongs */
#define TFS_EFOREIGN (-4007)     /* the store belongs to another user */
#define TFS_EUNSAFE (-4008)      /* others may write to the store */
/* Queues, dependencies and control (include/taskfs/queue.h). */
#define TFS_EAMBIGUOUS (-4020)  /* an id prefix names more than one task */
#define TFS_ENOTRUNNING (-4021) /* the task is not running: nothing to pause, resume, signal */
#define TFS_ECYCLE (-4022)      /* dependencies that wait for each other */
#define TFS_ENOSTDIN (-4023)    /* the task was started without a stdin to write to */
#define TFS_ELIMIT (-4009)      /* a limit is malformed or cannot be applied */
#define TFS_ECONFIG (-4010)     /* the store's config file (or a key of it) is invalid */

const char *tfs_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_ERROR_H */
