/* taskfs: a task's record, record.json, in memory and as JSON
 * (core/record*.c; included by taskfs.h). Saving and loading one is
 * taskfs/task.h's. */
#ifndef TASKFS_RECORD_H
#define TASKFS_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "taskfs/ids.h"
#include "taskfs/state.h"
#include "taskfs/important.h"
#include "taskfs/limits.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TFS_RECORD_VERSION 1
#define TFS_RECORD_MAX (4 << 20) /* record.json larger than this is corrupt */
#define TFS_LAST_EXITS 5         /* worker exits remembered in the record */

typedef struct {
  int64_t started_ms;
  int64_t ended_ms;
  int exit_code;   /* -1 if killed by a signal */
  int signal;      /* 0 if it exited */
  int requested;   /* 1 if a stop request caused this exit */
  int timed_out;   /* 1 if its wall-clock limit ran out and it was stopped */
  tfs_usage_t use; /* what this run used */
} tfs_exit_t;

/* The executor of a task and, for a cluster engine, its current (or last)
 * job: record.json's "executor". Strings are NULL while unknown. */
typedef struct {
  tfs_engine_t engine;
  char **options; /* the engine's options (srun's), NULL-terminated or NULL */
  int noptions;
  char *job_id;     /* Slurm's job id */
  char *job_name;   /* the name it was submitted under */
  char *job_state;  /* Slurm's JobState: PENDING, RUNNING, COMPLETED, TIMEOUT, ... */
  char *job_reason; /* Slurm's reason: why it pends, or why it ended */
  char *partition;
  char *nodes;           /* node list */
  int64_t queue_wait_ms; /* start minus submit time; -1 until it started */
} tfs_executor_t;

typedef struct {
  char id[TFS_ID_MAX + 1];
  char key[TFS_KEY_MAX + 1]; /* "" if none */
  int64_t number;            /* the store-local task number (1, 2, ...); 0: none (older records) */
  char **argv;               /* NULL-terminated */
  int argc;
  char *cwd;
  char **env_names; /* names only, never values; NULL-terminated */
  int env_count;
  tfs_state_t state;
  int exit_code;                            /* -1 if none (yet) */
  int signal;                               /* 0 if none */
  char *reason;                             /* why it ended, in words; NULL while running */
  int64_t created_ms, started_ms, ended_ms; /* 0 = not yet */
  int64_t alive_ms;                         /* last time the supervisor was known alive */

  /* The supervisor. */
  pid_t supervisor_pid;
  int64_t supervisor_started_ms;
  char *supervisor_exe;
  char *supervisor_host;

  /* The current (or last) worker. */
  pid_t worker_pid;
  pid_t worker_pgid;

  /* Policy. */
  tfs_restart_t restart;
  int64_t min_uptime_ms;  /* a worker exiting sooner is a quick exit */
  int max_restarts;       /* restarts in all, whatever the uptime; -1: no limit */
  int max_quick_restarts; /* restarts after quick exits in a row (crash loop) */
  int64_t grace_ms;
  int restart_on_timeout; /* a worker stopped at its timeout is restarted too */
  int restarts;           /* workers started after the first */
  int nexits;             /* newest last, at most TFS_LAST_EXITS */
  tfs_exit_t exits[TFS_LAST_EXITS];

  /* The wall-clock and resource limits, and what the task used. */
  tfs_limits_t limits;
  tfs_usage_t usage; /* every run together */
  int64_t queued_ms; /* from creation to the first worker's start */

  /* Stop request that ended the task, if any. */
  char *cancel_by;
  int64_t cancel_ms;

  /* The process that created the task (tfs_task_create): while the task
   * is queued and no supervisor has taken it, this is who will launch it.
   * pid 0: not recorded (records from before). */
  pid_t creator_pid;
  uint64_t creator_start_ticks; /* its start time (/proc/<pid>/stat) */
  char creator_boot[40];        /* the boot id it ran under */

  /* Transcript counters, as of the last record save. */
  int64_t lines;
  int64_t bytes;
  /* Output the transcript could not keep (a full disk): whole lines are
   * dropped, never a part of one. 0 when nothing was lost. */
  int64_t lost_bytes, lost_lines;
  int64_t lost_first_ms, lost_last_ms;
  tfs_stderr_t stderr_mode; /* how stderr was captured (records without it: split) */
  tfs_important_t important;

  /* Scheduling (include/taskfs/queue.h): the queue it runs in ("": none,
   * no limit), the tasks it starts after, the earliest start, and whether
   * its worker's stdin is fed from the store (TFS_FILE_STDIN). */
  char queue[TFS_QUEUE_NAME_MAX + 1];
  char **after; /* task ids, NULL-terminated, or NULL */
  int nafter;
  int64_t not_before_ms; /* 0: none */
  int with_stdin;
  tfs_executor_t exec; /* records without it: local */
} tfs_record_t;

/* Initializes an empty record (state queued, exit_code -1, default policy:
 * restart no, min_uptime 1000 ms, max_restarts -1 (no limit),
 * max_quick_restarts 5, grace 5000 ms, K 20). */
void tfs_record_init(tfs_record_t *rec);
/* The reason of a task that never ran because a task it starts after
 * (--after) did not complete begins with this; tfs_record_skipped() says
 * 1 for such a task (failed, no worker ever started). */
#define TFS_REASON_NOT_RUN "not run: "
int tfs_record_skipped(const tfs_record_t *rec);
/* The reason of a task that never ran because its store had no room left
 * for its record (not even for the end) begins with this;
 * tfs_record_store_full() says 1 for such a task. */
#define TFS_REASON_STORE_FULL "no space left on the store "
int tfs_record_store_full(const tfs_record_t *rec);
void tfs_record_free(tfs_record_t *rec);
/* Record <-> JSON text. tfs_record_parse() returns TFS_ECORRUPT with a
 * message in err (if not NULL) when the JSON is not a valid v1 record. */
char *tfs_record_dump(const tfs_record_t *rec); /* malloc'ed JSON, or NULL */
int tfs_record_parse(const char *json, size_t len, tfs_record_t *rec, char *err, size_t errlen);
/* Sets argv/cwd/env names (copies). */
int tfs_record_set_command(tfs_record_t *rec, char *const argv[], const char *cwd);
int tfs_record_add_env_name(tfs_record_t *rec, const char *name);
/* Sets the ids the task starts after (copies; NULL or empty: none). */
int tfs_record_set_after(tfs_record_t *rec, char *const after[]);
/* Sets the executor's engine and its options (copies; NULL: none). */
int tfs_record_set_engine(tfs_record_t *rec, tfs_engine_t engine, char *const options[]);
/* Forgets the job fields of an executor (a new job is on its way). */
void tfs_executor_clear_job(tfs_executor_t *ex);
int tfs_record_set_reason(tfs_record_t *rec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Frees a NULL-terminated vector of malloc'ed strings (NULL is fine): a
 * record's argv and env names, and a face's own vectors. */
void tfs_strv_free(char **v);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_RECORD_H */
