/* The supervisor process (`taskfs supervise`): its state and the steps its
 * files share. One sup_t per process, owned by tfs_supervise_main() for the
 * whole run; every libuv handle in it points back at it through ->data.
 *
 *   supervise.c  the verb: options, taking the task, the loop, the end
 *   env.c        the worker's environment, read from the launcher's memfd
 *   spawn.c      forking and exec'ing a worker, its start errors
 *   sentinel.c   the child that stops the group should we die
 *   pipes.c      the worker's output pipes (one, or two with stderr split) into the capture
 *   reap.c       SIGCHLD: reaping, leftovers, the end of a generation
 *   restart.c    the restart policy: finish, restart, back off
 *   stop.c       stop requests: doorbell, poll, signals, grace, SIGKILL
 *   save.c       record saves, aliveAt, the final save
 *   sched.c      before the first worker: dependencies, start time, a
 *                queue slot; the slot's release at the end
 *   control.c    control requests: pause, resume, signals
 *   stdin.c      the worker's stdin, fed from the task's stdin FIFO
 *   command.c    short helper commands (an engine's client), bounded in time
 *   exec_*.c     the executors (executor.h): local, slurm
 *   limits.c     the worker's limits, its timeout, what each run used
 *   cgroup.c     the memory cgroup of the tree, where one can be made
 */
#ifndef TASKFS_SUPERVISOR_SUP_H
#define TASKFS_SUPERVISOR_SUP_H

#include "supervisor/executor.h"
#include "supervisor/internal.h"

#include <limits.h>
#include <sys/resource.h>
#include <uv.h>

/* Where a worker generation stands. */
typedef enum {
  PH_START,    /* no worker yet */
  PH_RUNNING,  /* a worker runs */
  PH_DRAINING, /* the worker was reaped; its tree or pipes are not done */
  PH_BACKOFF,  /* waiting to start the next worker */
  PH_DONE      /* the end is recorded; the loop runs out */
} sup_phase_t;

typedef struct sup_s {
  uv_loop_t loop;
  tfs_store_t *store;
  const char *id;
  tfs_record_t rec;
  sup_phase_t phase;
  int lock_fd, tx_fd, side_fd, devnull;
  sup_capture_t cap;

  /* pipes.c */
  uv_pipe_t pipe[2];
  int pipe_open[2]; /* initialized and not yet closed */
  int reading[2];
  uv_timer_t hold_timer, drain_timer;
  /* A line without a newline is written after PARTIAL_QUIET_MS of quiet
   * (a prompt); partial_since_ms: when the oldest unwritten byte came. */
  uv_timer_t partial_timer;
  int64_t partial_since_ms;
  int pipe_grown[2];   /* grown for a flood (FLOOD_PIPE), once */
  int pipe_closing[2]; /* close_pipe has begun */
  /* The merged stream's pipe is direct: polled, and spliced into the
   * transcript; quiet_timer: the open line's start to the classifier. */
  int direct;
  uv_poll_t direct_poll;
  uv_timer_t quiet_timer;

  /* spawn.c, sentinel.c, reap.c: the current worker */
  uv_signal_t sigchld;
  pid_t worker;
  pid_t sentinel;    /* this worker's sentinel (our child), or 0 */
  char **worker_env; /* environ plus the overrides from --env-fd, or NULL */
  char *env_buf;     /* the "NAME=VALUE\0" records worker_env points into */
  int worker_reaped;
  int worker_status;
  int exit_requested; /* a stop had been requested when the worker exited */
  int tree_empty;
  int leftovers_signalled;
  int64_t worker_started_ms, worker_ended_ms;
  tfs_memcg_t worker_memcg; /* its memory cgroup's events when it started */

  /* executor.h: the task's executor and what its spawn set up */
  const sup_executor_t *exec;
  char **spawn_argv;   /* what the worker execs */
  char **spawn_env;    /* its environment; NULL: ours */
  char **sentinel_cmd; /* argv (argv[0] a path) the sentinel runs should we die */
  int spawn_fd3;       /* the worker's fd 3 (an engine's channel back), closed here
                          once it is forked; -1: none */
  char end_note[1024]; /* describe's words on the end, or "" */
  int end_failed;      /* describe says the task failed, whatever the exit */
  int kill_round;

  /* stop.c */
  uv_signal_t sigterm, sigint;
  uv_timer_t poll_timer, kill_timer;
  uv_poll_t bell_poll;
  int bell_fd;
  int stopping;
  char stop_by[512];
  int64_t stop_at;
  int killed; /* SIGKILL was needed */

  /* restart.c */
  uv_timer_t backoff_timer;
  int quick_in_row;
  int64_t backoff_ms;
  int64_t restart_at_ms; /* the next worker starts no sooner */

  /* save.c */
  uv_timer_t save_timer, alive_timer;
  int64_t saved_lines, saved_bytes, saved_important, last_save_ms;
  int save_failed;
  int64_t last_log_ms;

  /* sched.c, control.c, stdin.c */
  struct sup_sched *sched;
  int stdin_rd; /* the worker's stdin (a pipe's read end) while it is forked, else -1 */
  /* limits.c, cgroup.c: the limits every worker gets, its timeout, and
   * what the current run used (processes reaped so far) */
  struct rlimit rlim[TFS_LIMIT_COUNT];
  int rlim_set[TFS_LIMIT_COUNT];
  char cg_dir[PATH_MAX]; /* the tree's memory cgroup, or "" */
  int cg_v2;
  int cg_procs_fd; /* its cgroup.procs, which the worker writes itself into */
  uv_timer_t timeout_timer;
  int timed_out; /* the wall-clock limit of this run ran out */
  int64_t run_user_us, run_sys_us, run_maxrss_kb, run_out_start;
  int64_t worker_cpu_ms;                     /* the worker's own (and its reaped children's) */
  int64_t live_at, live_cpu_ms, live_hwm_kb; /* the last sample of the live tree */
} sup_t;

/* supervise.c: a line in supervisor.log (the supervisor's stderr). */
void sup_log(sup_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* env.c: reads the "NAME=VALUE\0" records from fd (then closes it) and
 * builds the worker's environment: ours with them applied, in
 * s->worker_env (pointing into s->env_buf). 0 or a negative errno. */
int sup_env_read(sup_t *s, int fd);

/* spawn.c: fork() with every signal blocked across it: until a child has
 * reset the handlers, a signal would run libuv's handler there and write
 * into the pipe libuv shares with this process. The parent's mask is
 * restored (errno kept); the child returns 0 with every signal blocked
 * and sets its own mask. */
pid_t sup_fork(void);
/* spawn.c: starts a worker (the first or a restart) and records it
 * running; a worker that cannot start ends the task failed. */
void sup_start_worker(sup_t *s);

/* command.c: runs argv (argv[0] a path) with env (NULL: ours), its stdout
 * and stderr into out (NUL-terminated, cut to outlen), for at most
 * timeout_ms. Returns its exit code (128+N for signal N), -ETIMEDOUT (it
 * was killed), or another negative errno. */
int sup_command(char *const argv[], char *const env[], int timeout_ms, char *out, size_t outlen);
/* Finds name on the PATH of env (NULL: ours) into out; 0 or -ENOENT. */
int sup_find_program(const char *name, char *const *env, char *out, size_t len);

/* stop.c: signals the worker's group (while unreaped) and every
 * descendant but the sentinel. */
void sup_signal_tree(sup_t *s, int sig);

/* sentinel.c */
void sup_sentinel_start(sup_t *s);
void sup_sentinel_end(sup_t *s);

/* pipes.c */
void sup_pipes_init(sup_t *s);
/* Takes the read ends of the worker's stdout and stderr (err_fd -1: the
 * merged stream, stdout's pipe carries both). */
void sup_pipes_open(sup_t *s, int out_fd, int err_fd);
/* 1 while a pipe is still open; arms the drain timer that closes it. */
int sup_pipes_wait(sup_t *s);
/* Ends both streams in the capture (the task is ending). */
void sup_pipes_eof(sup_t *s);

/* reap.c */
void sup_reap_init(sup_t *s);
/* Ends the generation once the worker is reaped, no descendant is left
 * and both pipes are done. */
void sup_check_generation_end(sup_t *s);

/* restart.c */
void sup_restart_init(sup_t *s);
/* The generation is over: records the exit, then finishes the task or
 * schedules the next worker. */
void sup_generation_end(sup_t *s);

/* stop.c */
/* Sets up stop requests: SIGTERM/SIGINT to us, the doorbell, the poll. */
void sup_stop_init(sup_t *s);
/* Looks for a stop request; via names the path that looked. */
void sup_check_cancel(sup_t *s, const char *via);
/* Starts the grace period, then SIGKILL rounds until the tree is gone. */
void sup_arm_kill(sup_t *s);
/* SIGTERM and SIGCONT to the whole tree, then the grace period. */
void sup_stop_tree(sup_t *s);
void sup_doorbell_close(sup_t *s);

/* sched.c: what comes before the first worker, and the queue slot. */
/* Waits for the dependencies, the start time and a slot of the task's
 * queue (each only if it has one), then starts the first worker. */
void sup_sched_start(sup_t *s);
/* The doorbell rang (or the poll ticked without one): control requests,
 * and another look at whatever the task waits for. */
void sup_sched_bell(sup_t *s, int poll);
/* The task ends: the slot goes back to its queue (the next waiter is
 * rung), the stdin FIFO goes. */
void sup_sched_finish(sup_t *s);
/* The slot fd a sentinel keeps (-1: none), and the kicker it leaves
 * behind: argv of `taskfs supervise --queue-kick` (NULL: none). */
int sup_sched_slot_fd(sup_t *s);
char *const *sup_sched_kick_argv(sup_t *s);
/* `taskfs supervise --queue-kick NAME --slot-fd N`: waits until the slot
 * is free (its sentinel gone), then rings the queue's next waiters. */
int sup_queue_kick_main(const char *dir, const char *queue, int fd);

/* control.c */
/* Acts on the control requests appended since the last look. */
void sup_control_check(sup_t *s);
/* A paused task whose slot went back: the slot is ours again. */
void sup_control_resumed(sup_t *s);

/* stdin.c */
void sup_stdin_init(sup_t *s);
/* Before a worker's fork: its stdin pipe (s->stdin_rd), if the task has
 * a stdin. 0, or -1 with why. */
int sup_stdin_pipe(sup_t *s, char *why, size_t whylen);
/* After the fork (whether the exec worked or not): our end feeds it. */
void sup_stdin_forked(sup_t *s);
/* Closes the worker's stdin (it reads its end). */
void sup_stdin_eof(sup_t *s);
void sup_stdin_close(sup_t *s);
/* limits.c */
/* Before the first worker: the rlimits to set, the memory cgroup (or why
 * not), the timeout timer; the record says how each limit applies. */
void sup_limits_prepare(sup_t *s);
/* In the forked worker, before exec (async-signal-safe): enters the
 * memory cgroup and sets the rlimits. -1, or what failed (a limit, or
 * TFS_LIMIT_COUNT for the cgroup) with errno set. */
int sup_limits_child(const sup_t *s);
/* The start error of sup_limits_child() in words. */
void sup_limits_describe(const sup_t *s, int which, int err, char *why, size_t len);
/* A worker started: a new run to count, its timeout armed. */
void sup_limits_worker_started(sup_t *s);
/* A process of the tree (pid) was reaped with this use. */
void sup_usage_reaped(sup_t *s, pid_t pid, const struct rusage *ru);
/* While a run goes on: total plus what it used so far (the processes that
 * ended, and a sample of the live ones), for a record save. */
void sup_usage_live(sup_t *s, tfs_usage_t *total);
/* The run is over: what it used, added to the task's total. */
void sup_usage_run_end(sup_t *s, tfs_usage_t *run);
/* The task ends (its tree is gone): the cgroup's peak, and the cgroup
 * removed. */
void sup_limits_finish(sup_t *s);

/* cgroup.c: the tree's memory cgroup with memory limit max (bytes): 0
 * (why: which hierarchy, when not v2) or -1 and why not. */
int sup_cgroup_make(sup_t *s, int64_t max, char *why, size_t whylen);
/* The memory events of the tree's cgroup now (the "before" of an OOM
 * verdict), read before the worker is forked: a limit so small that the
 * worker is killed during its exec still counts as the OOM kill it is.
 * 0, or -1 without a cgroup (m unknown). */
int sup_cgroup_events(const sup_t *s, tfs_memcg_t *m);
int64_t sup_cgroup_peak_kb(const sup_t *s);
void sup_cgroup_remove(sup_t *s);

/* save.c */
void sup_save_init(sup_t *s);
/* Saves the record now (a failed save is retried by the save timer). */
void sup_save(sup_t *s);
/* The same with tfs_task_save_flags() flags (TFS_SAVE_NOSYNC: a wait or a
 * pause, which a crash makes moot). */
void sup_save_flags(sup_t *s, unsigned flags);
/* Output arrived: a save is due within the save tick. */
void sup_mark_dirty(sup_t *s);
/* Holds room for the final record (TFS_FILE_SPACE_RESERVE). 0, or
 * -ENOSPC (-EDQUOT) when not even a page is free: the end could not be
 * recorded, so the task must not start. */
int sup_reserve_make(sup_t *s);
void sup_reserve_release(sup_t *s);
/* Records the task's end and lets the loop run out. */
void sup_finish(sup_t *s, tfs_state_t state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
