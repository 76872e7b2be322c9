/* taskfs: a task's life in the store: making it, saving and loading its
 * record, settling one whose supervisor died, and its lock (core/create.c,
 * command_check.c, load.c, lock.c; included by taskfs.h). */
#ifndef TASKFS_TASK_H
#define TASKFS_TASK_H

#include <stddef.h>
#include <sys/types.h>

#include "taskfs/ids.h"
#include "taskfs/state.h"
#include "taskfs/limits.h"
#include "taskfs/record.h"
#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  char *const *argv;      /* required, argv[0] non-empty */
  const char *cwd;        /* absolute; NULL = current directory */
  const char *key;        /* NULL or "" for none */
  char *const *env_names; /* NULL-terminated or NULL */
  tfs_restart_t restart;
  int64_t min_uptime_ms;    /* < 0: default */
  int max_restarts;         /* restarts in all; < 0: default (no limit) */
  int64_t grace_ms;         /* < 0: default */
  int important_k;          /* <= 0: default */
  tfs_stderr_t stderr_mode; /* 0: merged, the default */
  int rerun;                /* with a key whose task has ended: make a new task
                               and point the key at it */
  int replace;              /* rerun, also when the ended task of the key ran
                               another command or directory (else
                               TFS_EKEYCONFLICT); the old task stays */
  const char *queue;        /* NULL: the store's default (config "queue"), if any;
                               "": no queue (runs at once) */
  char *const *after;       /* NULL-terminated ids it starts after, or NULL */
  int64_t not_before_ms;    /* 0: no earliest start */
  int with_stdin;           /* the worker's stdin is fed by tfs_stdin_write() */
  /* Quick exits in a row (within min_uptime) that make a crash loop and
   * end the restarts: the record's max_quick_restarts + 1, so at least 1
   * (never restart a quick exit); 0: default (6). */
  int crash_loop_exits;
  int restart_on_timeout;     /* restart a worker stopped at its timeout too */
  const tfs_limits_t *limits; /* the timeout and limits given; NULL: none
                                 (the store's defaults apply either way) */
  char *why;                  /* may be NULL: the words of a refusal that
                                 needs them (TFS_ELIMIT, TFS_ECONFIG) */
  size_t whylen;
  tfs_engine_t engine;         /* 0: local, the default */
  char *const *engine_options; /* the engine's options (srun's); NULL: none */
} tfs_task_spec_t;

/* Creates a task in state queued and writes its record. With a key:
 *  - no task has the key: this call creates it; *existed = 0.
 *  - the key names a task with the same argv and cwd: its id is returned and
 *    *existed = 1, unless that task has ended and spec->rerun is set, in
 *    which case a new task is made and the key now names it (*existed = 0).
 *  - the key names a task with a different argv or cwd: TFS_EKEYCONFLICT,
 *    unless that task has ended and spec->replace is set: then as rerun.
 * When N processes race on one key, exactly one creates the task. */
int tfs_task_create(tfs_store_t *store, const tfs_task_spec_t *spec, char id_out[TFS_ID_MAX + 1],
                    int *existed);

/* What a face checks before it makes a task (MCP's start tool, A2A's
 * SendMessage), so that all refuse the same input in the same words: a
 * command names a program, no argument is longer than the kernel takes
 * (TFS_ARG_BYTES_MAX: execve's MAX_ARG_STRLEN less its NUL), at most
 * TFS_ARGC_MAX arguments of TFS_ARGV_BYTES_MAX bytes in all (-E2BIG), and
 * cwd is an existing absolute directory. 0, or a negative error with why
 * in words (what is wrong, what to do). */
#define TFS_ARG_BYTES_MAX (128 * 1024 - 1)
#define TFS_ARGC_MAX 4096
#define TFS_ARGV_BYTES_MAX (1024 * 1024)
int tfs_command_check(char *const *argv, char *why, size_t whylen);
int tfs_cwd_check(const char *cwd, char *why, size_t whylen);

/* Saves rec atomically (temp file, rename: no reader ever sees half a
 * record); a record of an ended task also durably (the temp file fsynced
 * before the rename, the directory after it), so that it survives a power
 * loss. Earlier states are not fsynced: after a crash the task reads lost
 * whatever the record said (docs/faults.md). */
int tfs_task_save(tfs_store_t *store, const tfs_record_t *rec);
/* The same with TFS_SAVE_NOSYNC: never fsynced, even for an end. */
#define TFS_SAVE_NOSYNC 1u
int tfs_task_save_flags(tfs_store_t *store, const tfs_record_t *rec, unsigned flags);
/* Loads a record. TFS_ENOTASK if unknown, TFS_ECORRUPT if unreadable. If the
 * record says running/queued-with-supervisor but the task lock is free, the
 * returned record reads TFS_LOST (nothing is written; see
 * tfs_task_settle_lost). rec is initialized by the call, whatever it held
 * (uninitialized memory is fine; a record that still owns allocations
 * would leak them), and is left freeable on every path: tfs_record_free()
 * after any return, success or error, is right and safe. */
int tfs_task_load(tfs_store_t *store, const char *id, tfs_record_t *rec);
/* tfs_task_load(), and for a record that does not load (TFS_ECORRUPT,
 * TFS_ESYMLINK) why, in words, into why: the parser's message ("record.json:
 * field 'state': ..."), "it is a directory", "it is empty", "it is a
 * symlink", ... (`taskfs show`). why may be NULL; "" when it loads. */
int tfs_task_load_reason(tfs_store_t *store, const char *id, tfs_record_t *rec, char *why,
                         size_t whylen);
/* If the task reads running but its lock is free, takes the lock and writes
 * state lost. Returns 1 if it wrote, 0 if nothing to do. */
int tfs_task_settle_lost(tfs_store_t *store, const char *id);

/* If the task is still queued, records it failed with exit code `code`
 * (127: it could not start) and the reason, ended now. Done under the task
 * lock, taken without waiting: a supervisor that holds it owns the record
 * (-EBUSY, nothing written). Returns 1 if it wrote, 0 if the task was not
 * queued (any more). */
int tfs_task_fail_queued(tfs_store_t *store, const char *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 1 if a supervisor holds the task's lock, 0 if not, < 0 on error. */
int tfs_task_alive(tfs_store_t *store, const char *id);
/* Takes the task lock for the calling process's lifetime (the supervisor
 * does, once). Waits up to 2 s while the lock is held, by the others who
 * take it for a moment only (settling a lost task, failing a queued one,
 * forgetting it); still held then, it is another supervisor's: -EBUSY.
 * Returns the lock fd (O_CLOEXEC; closing it releases the lock). */
int tfs_task_lock(tfs_store_t *store, const char *id);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_TASK_H */
