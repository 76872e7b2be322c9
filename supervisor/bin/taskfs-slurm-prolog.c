/* taskfs-slurm-prolog: the srun prolog of a task's job (`srun
 * --prolog=THIS`, supervisor/exec_slurm.c), which tells the supervisor the
 * job's id the moment Slurm has allocated the job, so that the supervisor
 * learns it, and that the job runs, without asking squeue.
 *
 * srun runs its prolog on the submit host, once the allocation is granted
 * and just before it launches the step, with the job's SLURM_* variables in
 * the environment, and waits for it. The supervisor gave srun a pipe as
 * fd 3, which srun's children inherit: one line "JOBID|PARTITION|NODES\n"
 * goes there, in one write (shorter than PIPE_BUF, so whole). Nothing
 * else: stdout and stderr are the task's output, and the exit is 0
 * whatever happened (srun ignores its prolog's status; a line that does
 * not come only means the supervisor asks squeue, as it does for a job
 * that pends).
 *
 * Linked against libc only: it is on srun's path to the step, so it should
 * cost no more than an exec.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *env_or(const char *name, const char *other) {
  const char *v = getenv(name);
  if (!v && other)
    v = getenv(other);
  return v ? v : "";
}

int main(void) {
  struct stat st;
  const char *id = env_or("SLURM_JOB_ID", "SLURM_JOBID");
  /* Only the pipe the supervisor gave: run by hand, or by an srun that did
   * not get one, it says nothing. */
  if (!*id || fstat(3, &st) < 0 || !S_ISFIFO(st.st_mode))
    return 0;
  char line[512];
  int n = snprintf(line, sizeof line, "%s|%s|%s\n", id, env_or("SLURM_JOB_PARTITION", NULL),
                   env_or("SLURM_JOB_NODELIST", "SLURM_NODELIST"));
  if (n > 0 && (size_t)n < sizeof line)
    (void)!write(3, line, (size_t)n);
  return 0;
}
