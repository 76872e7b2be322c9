/* taskfs: starting and running task supervisors (libtaskfs-supervisor.a).
 *
 * A supervisor is the `taskfs supervise` verb of the taskfs binary, started
 * detached (own session, reparented away from the launcher) by
 * tfs_launch(). It owns exactly one task for its whole life.
 */
#ifndef TASKFS_SUPERVISE_H
#define TASKFS_SUPERVISE_H

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

/* Creates the task (tfs_task_create: with a key, the idempotency rules) and
 * makes sure it runs: a new task is launched with opts; an existing keyed
 * task that is still queued with no live supervisor (its launcher died
 * between creating and launching it) is launched too, so a key is never
 * wedged (two launches of one task are safe: the second supervisor finds
 * it taken and leaves). *existed (may be NULL) as tfs_task_create sets it.
 * Initializes and fills rec_out (may be NULL) with the record after. */
int tfs_task_start(tfs_store_t *store, const tfs_task_spec_t *spec, const tfs_launch_opts_t *opts,
                   char id_out[TFS_ID_MAX + 1], int *existed, tfs_record_t *rec_out);

/* Waits until the task has ended (completed, failed, cancelled or lost) or
 * timeout_ms passes (< 0: no limit). A task read as lost is settled (written
 * as lost) on the way. Uses inotify on the task directory, with a 250 ms
 * re-check because a supervisor's death changes no file. Initializes and
 * fills rec_out (may be NULL) with the record as last read. Returns 0 once ended, -ETIMEDOUT,
 * or another error (TFS_ENOTASK, ...). */
int tfs_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms, tfs_record_t *rec_out);

/* The body of the hidden `taskfs supervise` verb. Returns an exit code. */
int tfs_supervise_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_SUPERVISE_H */
