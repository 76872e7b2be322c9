/* taskfs: controlling a running task through the store (part of
 * libtaskfs.a; included by queue.h): pause, resume and signals, and the
 * task's stdin.
 *
 * As with a stop request, nobody signals a PID read from a file: a
 * request is written into the task's directory (TFS_FILE_CONTROL, one line
 * per request, appended) and its doorbell rung; the supervisor, which
 * knows its worker's process group from memory, acts on it. Text written
 * to a task's stdin goes into a FIFO its supervisor holds open
 * (TFS_FILE_STDIN) and feeds to the worker.
 */
#ifndef TASKFS_CONTROL_H
#define TASKFS_CONTROL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TFS_CONTROL_PAUSE = 0, /* SIGSTOP to the whole tree; state paused */
  TFS_CONTROL_RESUME,    /* SIGCONT to the whole tree; state running */
  TFS_CONTROL_SIGNAL,    /* one signal to the whole tree */
  TFS_CONTROL_EOF,       /* close the worker's stdin (it reads its end) */
} tfs_control_action_t;

typedef struct {
  tfs_control_action_t action;
  int sig;       /* TFS_CONTROL_SIGNAL: 1 .. NSIG - 1 */
  int free_slot; /* TFS_CONTROL_PAUSE: give the queue slot back while paused */
  char by[256];  /* who asked (filled by the reader) */
  int64_t at_ms; /* when (filled by the reader) */
} tfs_control_t;

/* The action's name: "pause", "resume", "signal", "eof". */
const char *tfs_control_name(tfs_control_action_t a);
/* One line as the mount's control file takes it: "pause", "pause
 * free-slot", "resume", "signal SIG" (SIG as tfs_signal_parse reads it),
 * "eof"; a trailing newline is fine. 0, or -EINVAL. */
int tfs_control_parse(const char *line, size_t len, tfs_control_t *out);

/* Records a request for a task that is running or paused and rings its
 * doorbell. TFS_EFINISHED for a task that has ended, TFS_ENOTRUNNING for
 * one still queued (nothing runs yet) and for resuming a task that is not
 * paused, TFS_ENOSTDIN for eof without a stdin. */
int tfs_control_request(tfs_store_t *store, const char *id, const tfs_control_t *req,
                        const char *who);
/* For the supervisor: the next request appended after *offset (moved past
 * it). 1 and *out, 0 when there is none, or an error (a line that does not
 * parse is skipped). */
int tfs_control_next(tfs_store_t *store, const char *id, off_t *offset, tfs_control_t *out);

/* ---- the task's stdin (core/stdin.c) -------------------------------------- */

/* The supervisor's end: a new FIFO in place of whatever had the name,
 * opened for reading and writing, non-blocking (as tfs_doorbell_open). */
int tfs_stdin_open(tfs_store_t *store, const char *id);
/* Writes len bytes to the task's stdin, waiting at most timeout_ms while
 * the FIFO is full (the worker does not read). TFS_ENOSTDIN when the task
 * has none, TFS_EFINISHED when it has ended (or its supervisor is gone),
 * -ETIMEDOUT when nothing more could be written in time (*written says how
 * much was; may be NULL), -EAGAIN at once with timeout_ms 0. */
int tfs_stdin_write(tfs_store_t *store, const char *id, const void *data, size_t len,
                    int64_t timeout_ms, size_t *written);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_CONTROL_H */
