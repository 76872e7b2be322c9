/* taskfs: the words of a task: its states, restart policies, stderr modes
 * and engines, each with its name and parser (core/state.c; included by
 * taskfs.h). */
#ifndef TASKFS_STATE_H
#define TASKFS_STATE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- states ----------------------------------------------------------- */

typedef enum {
  TFS_QUEUED = 0,
  TFS_RUNNING,
  TFS_COMPLETED, /* worker exited 0 */
  TFS_FAILED,    /* exited non-zero, killed by a signal, could not start, crash loop */
  TFS_CANCELLED, /* a stop request ended it */
  TFS_LOST,      /* running, but the supervisor died without recording an end */
  TFS_PAUSED     /* its process tree is stopped (SIGSTOP) on request; not an end */
} tfs_state_t;

const char *tfs_state_name(tfs_state_t s);
int tfs_state_parse(const char *name, tfs_state_t *out); /* 0 or TFS_EBADID */
int tfs_state_terminal(tfs_state_t s);                   /* completed, failed, cancelled, lost */
/* The names, in order, for messages that list them. */
#define TFS_STATE_NAMES "queued, running, paused, completed, failed, cancelled, lost"
/* A comma-separated list of state names ("running,failed") into
 * TFS_STATE_BIT()s, OR'ed into *mask: 0, or TFS_EBADID for an empty list,
 * an empty item or a name that is none (that item, cut to badlen, in bad;
 * bad may be NULL). One reading for every face's state filter. */
int tfs_state_parse_list(const char *list, unsigned *mask, char *bad, size_t badlen);
/* A state as a bit of a set of states (filters, waits). */
#define TFS_STATE_BIT(s) (1u << (s))

typedef enum { TFS_RESTART_NO = 0, TFS_RESTART_ON_FAILURE, TFS_RESTART_ALWAYS } tfs_restart_t;

const char *tfs_restart_name(tfs_restart_t r);
int tfs_restart_parse(const char *name, tfs_restart_t *out);
/* A policy with "on-timeout" beside it, comma-separated: "on-failure",
 * "on-failure,on-timeout", "on-timeout" (restart only a worker stopped at
 * its timeout). 0 or TFS_EBADID (an unknown name, two policies). */
int tfs_restart_parse_list(const char *list, tfs_restart_t *out, int *on_timeout);

/* How the worker's stderr reaches the transcript. merged (the default):
 * its fd 1 and fd 2 are one pipe, so the transcript holds both streams in
 * exactly the order the program wrote them (what `cmd > file 2>&1`
 * records). split: two pipes, and the stderr-lines file says which lines
 * came from stderr; lines stay whole, but the order of lines written to
 * the two streams close together is the order the supervisor read them,
 * not always the order they were written. */
typedef enum { TFS_STDERR_MERGED = 0, TFS_STDERR_SPLIT } tfs_stderr_t;

const char *tfs_stderr_name(tfs_stderr_t m); /* "merged", "split" */
int tfs_stderr_parse(const char *name, tfs_stderr_t *out);

/* Where the worker runs: local (the default), a child of the supervisor on
 * this machine; slurm, a Slurm job the supervisor runs through srun (its
 * output, stop and exit come back through srun: supervisor/exec_slurm.c). */
typedef enum { TFS_ENGINE_LOCAL = 0, TFS_ENGINE_SLURM } tfs_engine_t;

const char *tfs_engine_name(tfs_engine_t e); /* "local", "slurm" */
int tfs_engine_parse(const char *name, tfs_engine_t *out);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_STATE_H */
