/* The local executor (the default): the worker is the command itself, in
 * a process group of its own below the supervisor; a stop is SIGTERM (and
 * SIGCONT) to its whole tree, the kill is SIGKILL rounds, and its end is
 * its own wait status. */
#include "supervisor/sup.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>

static int local_spawn(sup_t *s, char *why, size_t whylen) {
  s->spawn_argv = s->rec.argv;
  s->spawn_env = s->worker_env;
  s->sentinel_cmd = NULL;
  return 0;
}

static int local_started(sup_t *s) {
  return 1;
}

static void local_stop(sup_t *s) {
  sup_signal_tree(s, SIGTERM);
  sup_signal_tree(s, SIGCONT); /* a stopped process would not see SIGTERM */
}

static void local_kill(sup_t *s, int round) {
  sup_signal_tree(s, SIGKILL);
}

static void local_describe(sup_t *s) {
}

const sup_executor_t sup_exec_local = {local_spawn, local_started, local_stop, local_kill,
                                       local_describe};

const sup_executor_t *sup_executor_for(int engine) {
  return engine == TFS_ENGINE_SLURM ? &sup_exec_slurm : &sup_exec_local;
}

int tfs_engine_options_check(tfs_engine_t engine, char *const *opts, char *why, size_t whylen) {
  if (engine == TFS_ENGINE_SLURM)
    return sup_slurm_options_check(opts, why, whylen);
  if (opts && opts[0]) {
    snprintf(why, whylen, "the local executor takes no engine options (got '%.100s')", opts[0]);
    return -EINVAL;
  }
  return 0;
}
