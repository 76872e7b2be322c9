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

/* Environment overrides for the worker: "NAME=VALUE" strings. Values are
 * handed to the supervisor through its own environment and never written
 * to disk; only the names go into the record. */
typedef struct {
  char *const *env;       /* NULL-terminated or NULL */
  int64_t wait_ms;        /* how long to wait for the task to leave queued */
} tfs_launch_opts_t;

/* Starts a detached supervisor for the queued task id and waits until the
 * task leaves the queued state (running, or failed to start) or wait_ms
 * passes. Fills rec_out (may be NULL) with the record as last seen. */
int tfs_launch(tfs_store_t *store, const char *id, const tfs_launch_opts_t *opts,
               tfs_record_t *rec_out);

/* The body of the hidden `taskfs supervise` verb. Returns an exit code. */
int tfs_supervise_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_SUPERVISE_H */
