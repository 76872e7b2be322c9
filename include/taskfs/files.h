/* taskfs: the files of a task directory by role, and the views a face shows
 * of a task (core/files.c; included by taskfs.h). Faces name task files
 * by these enums, never by their file names: the layout is core's. */
#ifndef TASKFS_FILES_H
#define TASKFS_FILES_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The files of a task directory, by role. Faces name them by this enum,
 * never by their file names (the disk layout is core's). */
typedef enum {
  TFS_FILE_RECORD = 0,     /* the record, replaced atomically */
  TFS_FILE_TRANSCRIPT,     /* append-only output */
  TFS_FILE_CANCEL,         /* present = stop requested */
  TFS_FILE_LOCK,           /* flock()ed by the supervisor while it lives */
  TFS_FILE_DOORBELL,       /* FIFO a stop request rings */
  TFS_FILE_SUPERVISOR_LOG, /* the supervisor's stderr */
  TFS_FILE_STDERR_LINES,   /* which transcript lines came from stderr */
  TFS_FILE_SPACE_RESERVE,  /* room kept for the final record on a full disk */
  TFS_FILE_CONTROL,        /* appended control requests: pause, resume, signal */
  TFS_FILE_STDIN,          /* FIFO the supervisor feeds to the worker's stdin */
  TFS_FILE_LINEIDX,        /* checkpoints of the transcript's lines (taskfs/lineidx.h) */
  TFS_FILE_ANSWER,         /* the answer's bounds a face was asked for (MCP tasks/result) */
  TFS_FILE_COUNT
} tfs_task_file_t;

/* The file's name inside tasks/<id>/ (for messages and diagnostics). */
const char *tfs_task_file_name(tfs_task_file_t which);
/* The path of the task's directory, for a message that tells a user what
 * to look at or remove; faces never open it. 0 or -ENAMETOOLONG. */
int tfs_task_path(const tfs_store_t *store, const char *id, char *buf, size_t len);
/* Opens the file with flags | O_NOFOLLOW | O_CLOEXEC (mode for O_CREAT).
 * The open never blocks, and the file must be what it should be: a regular
 * file, the doorbell a FIFO; anything else (a planted FIFO, device,
 * directory) is TFS_ECORRUPT, a planted symlink TFS_ESYMLINK. The caller's
 * blocking mode is restored. TFS_ENOTASK if the task dir is absent, -ENOENT
 * if only the file is. */
int tfs_task_file_open(tfs_store_t *store, const char *id, tfs_task_file_t which, int flags,
                       mode_t mode);
/* Stats the file without following a symlink; anything but a regular file
 * (a FIFO for the doorbell) is -ENOENT, as if absent. */
int tfs_task_file_stat(tfs_store_t *store, const char *id, tfs_task_file_t which, struct stat *st);
/* Removes the file; 0 if it was absent. */
int tfs_task_file_remove(tfs_store_t *store, const char *id, tfs_task_file_t which);
/* Stats the task directory: TFS_ENOTASK unless tasks/<id> is a real
 * directory (a symlink or a file planted under the id is no task). */
int tfs_task_stat(tfs_store_t *store, const char *id, struct stat *st);

/* What a face shows of a task (the mount's tasks/<id>/ entries), in this
 * order. Rendered views, not files: record.json is the record as loaded (a
 * dead supervisor's task reads lost), owner is the supervisor as an
 * instance record. */
typedef enum {
  TFS_VIEW_RECORD = 0, /* "record.json" */
  TFS_VIEW_TRANSCRIPT, /* "transcript" */
  TFS_VIEW_CANCEL,     /* "cancel" */
  TFS_VIEW_OWNER,      /* "owner" */
  TFS_VIEW_CONTROL,    /* "control": write pause, resume, signal SIG */
  TFS_VIEW_STDIN,      /* "stdin": only for a task started with a stdin */
  TFS_VIEW_COUNT
} tfs_view_t;
const char *tfs_view_name(tfs_view_t which);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_FILES_H */
