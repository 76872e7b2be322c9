/* taskfs: starting and running task supervisors (libtaskfs-supervisor.a).
 *
 * A supervisor is the `taskfs supervise` verb (taskfs-supervise, or a fork
 * of the CLI that runs the same code: no_exec), started detached (own
 * session, reparented away from the launcher) by tfs_launch(). It owns
 * exactly one task for its whole life.
 */
#ifndef TASKFS_SUPERVISE_H
#define TASKFS_SUPERVISE_H

#include <uv.h>

#include "taskfs/taskfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Environment overrides for the worker: "NAME=VALUE" strings. They reach
 * the worker only, not the supervisor's own environment: values are handed
 * to the supervisor in an inherited memfd (`supervise --env-fd N`) and
 * never written to disk; only the names go into the record. */
typedef struct {
  char *const *env; /* NULL-terminated or NULL */
  int64_t wait_ms;  /* how long to wait for the task to leave queued;
                       0: do not wait; < 0: 10 s */
  const char *exe;  /* the taskfs binary to run as the supervisor;
                       NULL: $TASKFS_SUPERVISOR_EXE, else /proc/self/exe
                       (tests that are not the taskfs binary set it) */
  int no_exec;      /* the supervisor is a fork of this process, without
                       an exec (a start's cost is mostly its execs): for a
                       single-threaded launcher that links the supervisor
                       (the CLI). Ignored (exec) with a thread more, or
                       with exe or $TASKFS_SUPERVISOR_EXE set */
} tfs_launch_opts_t;

/* Starts a detached supervisor for the queued task id and waits until the
 * task leaves the queued state (running, or failed to start) or wait_ms
 * passes. Initializes and fills rec_out (may be NULL; free it with
 * tfs_record_free) with the record as last seen.
 * -EINVAL if an env entry is not NAME=VALUE; -EALREADY if the task is not
 * queued. If the supervisor itself cannot be executed, the task is recorded
 * failed and the exec error is returned. */
int tfs_launch(tfs_store_t *store, const char *id, const tfs_launch_opts_t *opts,
               tfs_record_t *rec_out);

/* Starting a task, the one path for every face: create it (with a key,
 * the idempotency rules of tfs_task_create) or find it, then launch its
 * supervisor when it needs one: a new task, or an existing keyed task still
 * queued with no live supervisor (its launcher died between creating and
 * launching it: adopted, so a key is never wedged; two launches of one task
 * are safe, the second supervisor finds it taken and leaves). */
typedef struct {
  char id[TFS_ID_MAX + 1];
  int existed;      /* the key named a task already: nothing was created */
  int ended;        /* it existed and has ended: not run again (no rerun) */
  int launch;       /* a supervisor is (was) to be started for it */
  int launch_err;   /* the supervisor could not be started (the task is then
                       failed, exit code 127): why; else 0 */
  int not_started;  /* the task failed before its command ran (not found, bad
                       cwd, no supervisor): exit code 127, rec.reason says why */
  tfs_record_t rec; /* the record after (still queued: a slow supervisor) */
} tfs_start_t;

/* Step one, quick (no fork, no wait): creates or finds the task and
 * decides st->launch. Fills st (free it with tfs_start_free, also after an
 * error). Returns 0 or tfs_task_create's error (TFS_EKEYCONFLICT, ...). */
int tfs_task_start_create(tfs_store_t *store, const tfs_task_spec_t *spec, tfs_start_t *st);
/* Step two: with st->launch, tfs_launch() and the outcome in st. Returns 0
 * (also when the command itself could not start: st->not_started) or the
 * launch error (also in st->launch_err). Blocks up to opts->wait_ms: a
 * face with an event loop runs it on another thread, with its own store
 * handle (tfs_store_reopen): live_launch() of the live layer. */
int tfs_task_start_launch(tfs_store_t *store, const tfs_launch_opts_t *opts, tfs_start_t *st);
/* Both steps. */
int tfs_task_start(tfs_store_t *store, const tfs_task_spec_t *spec, const tfs_launch_opts_t *opts,
                   tfs_start_t *st);
void tfs_start_free(tfs_start_t *st);

/* Checks an engine's options (`taskfs run --slurm-opt`, MCP slurmOptions)
 * before a task is made of them: 0, or -EINVAL with why in words (an
 * option of srun's that taskfs sets itself, or one that would stop the
 * output streaming back; local takes none). The supervisor checks again. */
int tfs_engine_options_check(tfs_engine_t engine, char *const *opts, char *why, size_t whylen);

/* The body of the hidden `taskfs supervise` verb. Returns an exit code. */
int tfs_supervise_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_SUPERVISE_H */
