/* Executors: where a task's worker runs. The supervisor always forks and
 * reads one local process (the worker); an executor decides what that
 * process is and how a stop, a kill and an end are told to the engine
 * behind it.
 *
 *   exec_local.c  local (the default): the command itself, signals to its tree
 *   exec_slurm.c  slurm: srun runs the command as a Slurm job
 *
 * Another engine (Kubernetes Jobs through kubectl, HTCondor) is one more
 * file filling a sup_executor_t, one more name in tfs_engine_t, and one line
 * in sup_executor_for().
 */
#ifndef TASKFS_SUPERVISOR_EXECUTOR_H
#define TASKFS_SUPERVISOR_EXECUTOR_H

#include <stddef.h>

struct sup_s;

typedef struct {
  /* spawn: before each worker (the first and every restart), checks the
   * engine can run it and sets s->spawn_argv and s->spawn_env (what the
   * forked worker execs) and s->sentinel_cmd (run by the sentinel should
   * the supervisor die; NULL: none). 0, or -1 with why in words. */
  int (*spawn)(struct sup_s *s, char *why, size_t whylen);
  /* The worker runs: 1 if the task runs now, 0 if the engine holds it
   * queued (the executor records running itself later). */
  int (*started)(struct sup_s *s);
  /* A stop request: ask the task to end; the grace period follows. */
  void (*stop)(struct sup_s *s);
  /* Every KILL_REPEAT_MS once the grace ran out: round 1, 2, ... */
  void (*kill)(struct sup_s *s, int round);
  /* describe: the worker was reaped and the generation is ending. May
   * replace s->worker_status with the engine's own end and set
   * s->end_note (words before the exit's) and s->end_failed. */
  void (*describe)(struct sup_s *s);
} sup_executor_t;

extern const sup_executor_t sup_exec_local, sup_exec_slurm;

/* The executor of an engine (tfs_engine_t). */
const sup_executor_t *sup_executor_for(int engine);

/* exec_slurm.c: the option rule behind tfs_engine_options_check. */
int sup_slurm_options_check(char *const *opts, char *why, size_t whylen);

#endif
