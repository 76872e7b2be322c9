/* The supervisor: the hidden `taskfs supervise --state-dir DIR ID` verb.
 *
 * One supervisor owns one task for its whole life. It holds the task lock
 * (the kernel lock every reader checks), is a child subreaper (so every
 * descendant of the worker stays below it), and runs one libuv loop for
 * everything: the worker's exit, its two output pipes, stop requests,
 * signals to itself, and timers.
 *
 * The worker is forked and exec'ed here, not with uv_spawn: libuv's own
 * SIGCHLD handling reaps only the children it spawned, while a subreaper
 * also inherits orphaned descendants that must be reaped. So SIGCHLD is a
 * plain uv_signal_t whose callback loops waitpid(-1, WNOHANG) and tells the
 * worker apart by pid. waitpid() failing with ECHILD also proves the whole
 * tree is gone: every descendant has a living parent below us or has been
 * reparented to us.
 *
 * One worker "generation" ends when the worker has been reaped, no
 * descendant is left and both pipes reached their end. Then the restart
 * policy decides: start another worker (after a back-off for quick deaths)
 * or record the end.
 *
 * This file is the verb itself: it takes the task (store, lock, record),
 * opens the output files, sets the loop up, runs it and cleans up. The
 * steps of the run are in the files sup.h lists.
 */
#include "supervisor/sup.h"
#include "taskfs/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_MAX (256 * 1024) /* supervisor.log stops growing past this */

/* Diagnostics go to stderr, which the launcher pointed at
 * tasks/<id>/supervisor.log. A task restarting for days must not fill the
 * disk with them: past LOG_MAX bytes only the final line is written. */
void sup_log(sup_t *s, const char *fmt, ...) {
  char t[TFS_TIME_BUF];
  va_list ap;
  struct stat st;
  if (s->phase != PH_DONE && fstat(2, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > LOG_MAX)
    return;
  fprintf(stderr, "%s supervisor[%d] %s: ", tfs_time_format(tfs_now_ms(), t), (int)getpid(), s->id);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static void usage(FILE *out) {
  fprintf(out, "usage: taskfs supervise --state-dir DIR [--env-fd N] ID\n"
               "       taskfs supervise --state-dir DIR --queue-kick QUEUE --slot-fd N\n\n"
               "Internal: owns one queued task (started by 'taskfs run', the MCP server or\n"
               "the mount). Not meant to be run by hand.\n");
}

/* What the command line asks for. */
typedef struct {
  const char *dir;
  const char *id;
  int env_fd;       /* -1: no overrides */
  const char *kick; /* --queue-kick QUEUE (with --slot-fd N): sched.c */
  int slot_fd;
} args_t;

/* Parses the verb's arguments. Returns -1 to go on, or the exit code. */
static int parse_args(int argc, char **argv, args_t *a) {
  static const struct option opts[] = {{"state-dir", required_argument, NULL, 'd'},
                                       {"env-fd", required_argument, NULL, 'e'},
                                       {"queue-kick", required_argument, NULL, 'q'},
                                       {"slot-fd", required_argument, NULL, 's'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  int c;
  *a = (args_t){NULL, NULL, -1, NULL, -1};
  /* 0, not 1: glibc's full reset, also of what a parse before this one
   * left (the CLI's own, when the supervisor is its fork: inproc.c). */
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
    char *end;
    long v;
    switch (c) {
    case 'd':
      a->dir = optarg;
      break;
    case 'e':
    case 's':
      v = strtol(optarg, &end, 10);
      if (*end || v < 0 || v > INT_MAX) {
        usage(stderr);
        return 100;
      }
      *(c == 'e' ? &a->env_fd : &a->slot_fd) = (int)v;
      break;
    case 'q':
      a->kick = optarg;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 100;
    }
  }
  if (a->dir && a->kick && a->slot_fd >= 0 && optind == argc)
    return sup_queue_kick_main(a->dir, a->kick, a->slot_fd);
  if (!a->dir || optind != argc - 1 || !tfs_id_valid(argv[optind])) {
    usage(stderr);
    return 100;
  }
  a->id = argv[optind];
  return -1;
}

/* Fills the record's supervisor fields for this process. */
static void claim(sup_t *s) {
  tfs_owner_t o;
  s->rec.supervisor_pid = getpid();
  s->rec.supervisor_started_ms = tfs_now_ms();
  if (tfs_owner_self(&o, "supervisor") == 0) {
    free(s->rec.supervisor_exe);
    free(s->rec.supervisor_host);
    s->rec.supervisor_exe = strdup(o.exe);
    s->rec.supervisor_host = strdup(o.host);
    if (o.started_ms)
      s->rec.supervisor_started_ms = o.started_ms;
  }
}

/* Before the loop runs: records the task failed (it never started) and
 * returns the verb's exit code. This process holds the lock, so it is the
 * one to write the end. */
static int fail_setup(sup_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_setup(sup_t *s, const char *fmt, ...) {
  char reason[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  sup_log(s, "%s", reason);
  s->rec.state = TFS_FAILED;
  s->rec.exit_code = 127;
  s->rec.ended_ms = tfs_now_ms();
  tfs_record_set_reason(&s->rec, "cannot start '%s': %s",
                        s->rec.argv && s->rec.argv[0] ? s->rec.argv[0] : "", reason);
  int err = tfs_task_save(s->store, &s->rec);
  if (err)
    sup_log(s, "cannot save the record: %s", tfs_strerror(err));
  return 111;
}

/* Not even a page was free for the final record: a worker started now
 * would run with an end nobody could record (the task would read queued,
 * then lost). It does not start; what the task holds is given back (the
 * line index, the reserve) so that this end fits, and it is saved before
 * anything is logged, which could take that room. */
static int fail_store_full(sup_t *s, int why) {
  tfs_lineidx_writer_close(s->cap.lidx);
  s->cap.lidx = NULL;
  tfs_task_file_remove(s->store, s->id, TFS_FILE_LINEIDX);
  sup_reserve_release(s);
  s->rec.state = TFS_FAILED;
  s->rec.exit_code = 127;
  s->rec.ended_ms = tfs_now_ms();
  tfs_record_set_reason(&s->rec,
                        TFS_REASON_STORE_FULL "%s to keep this task's record%s; free space "
                                              "or use another --state-dir",
                        tfs_store_path(s->store),
                        why == -EDQUOT ? " (the disk quota is reached)" : "");
  int err = tfs_task_save(s->store, &s->rec);
  sup_log(s, "%s; the task was not started", s->rec.reason);
  if (err)
    sup_log(s, "cannot save the record: %s", tfs_strerror(err));
  return 111;
}

/* Opens the store, takes the lock and loads the record. Returns -1 when
 * this process owns a queued task to run, else the exit code (0: another
 * supervisor has it, or had it). */
static int take_task(sup_t *s, const char *dir) {
  char why[512];
  int err = tfs_store_open_flags(dir, 0, &s->store, why, sizeof why);
  if (err) {
    sup_log(s, "cannot open the store %s: %s", dir, why[0] ? why : tfs_strerror(err));
    return 111;
  }
  /* The task directory, checked and held before anything of it is read:
   * no record is run from a directory this user does not own, and a
   * tasks/<id> swapped while the task runs is never followed. Nothing is
   * written into a directory that fails. */
  err = tfs_store_bind_task(s->store, s->id, why, sizeof why);
  if (err) {
    sup_log(s, "refusing the task: %s; nothing was run", why[0] ? why : tfs_strerror(err));
    return 111;
  }
  /* A lock still busy after a short wait is another supervisor's: a task
   * may be launched twice (tfs_task_start adopting a task whose launcher
   * died, beside a late first launch), and the second one leaves. */
  s->lock_fd = tfs_task_lock(s->store, s->id);
  if (s->lock_fd == -EBUSY) {
    sup_log(s, "another supervisor owns this task: nothing to do");
    return 0;
  }
  if (s->lock_fd < 0) {
    sup_log(s, "cannot lock the task: %s", tfs_strerror(s->lock_fd));
    return 111;
  }
  err = tfs_task_load(s->store, s->id, &s->rec);
  if (err) {
    sup_log(s, "cannot load the task: %s", tfs_strerror(err));
    return 111;
  }
  if (s->rec.state != TFS_QUEUED) {
    /* Launched twice: the first supervisor did the work. */
    sup_log(s, "task is %s, not queued: nothing to do", tfs_state_name(s->rec.state));
    return 0;
  }
  if (!s->rec.argv || !s->rec.argv[0] || !s->rec.argv[0][0])
    return fail_setup(s, "the task has no command");
  s->exec = sup_executor_for(s->rec.exec.engine);
  return -1;
}

/* Opens /dev/null (the worker's stdin), the transcript and, with stderr
 * split, the stderr-lines sidecar; sets the capture up. Returns -1 to go
 * on, or the exit code. */
static int open_output(sup_t *s) {
  s->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  /* A FIFO planted as either file is refused, never waited on. */
  s->tx_fd = tfs_transcript_open_append(s->store, s->id);
  /* The stderr-lines file exists only where stderr has a pipe of its own. */
  if (s->rec.stderr_mode == TFS_STDERR_SPLIT)
    s->side_fd =
        sup_open_file(s->store, s->id, TFS_FILE_STDERR_LINES, O_WRONLY | O_CREAT | O_APPEND);
  if (s->devnull < 0 || s->tx_fd < 0)
    return fail_setup(s, "cannot open the transcript: %s",
                      s->tx_fd == TFS_ECORRUPT ? "it is not a regular file"
                                               : tfs_strerror(s->tx_fd < 0 ? s->tx_fd : -errno));
  fcntl(s->tx_fd, F_SETFD, FD_CLOEXEC);
  if (s->side_fd >= 0)
    fcntl(s->side_fd, F_SETFD, FD_CLOEXEC);
  /* The counter reads back what the capture wrote: the same file, for
   * reading (a file swapped between the two opens is refused). */
  int rfd = tfs_task_file_open(s->store, s->id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
  struct stat wst, rst;
  if (rfd >= 0 && (fstat(s->tx_fd, &wst) || fstat(rfd, &rst) || wst.st_ino != rst.st_ino ||
                   wst.st_dev != rst.st_dev)) {
    close(rfd);
    rfd = -ESTALE;
  }
  if (rfd < 0)
    return fail_setup(s, "cannot open the transcript: %s", tfs_strerror(rfd));
  fcntl(rfd, F_SETFD, FD_CLOEXEC);
  int err = sup_capture_init(&s->cap, s->tx_fd, rfd, s->side_fd, &s->rec.important, s->rec.lines,
                             s->rec.bytes);
  if (err)
    return fail_setup(s, "cannot set up: %s", tfs_strerror(err));
  /* The line index is the supervisor's to write while it lives (it holds
   * the lock); without one, readers only count more. */
  err = tfs_lineidx_writer_open(s->store, s->id, s->tx_fd, 0, &s->cap.lidx);
  if (err)
    sup_log(s, "cannot keep the transcript's line index: %s", tfs_strerror(err));
  return -1;
}

/* Every handle of the loop, each set up by the file that owns it. The
 * doorbell comes before the record says running: a request made from then
 * on rings it, and one made before is seen by the check at the start. */
static int setup_loop(sup_t *s) {
  int err = uv_loop_init(&s->loop);
  if (err)
    return err;
  sup_reap_init(s);
  sup_pipes_init(s);
  sup_restart_init(s);
  sup_save_init(s);
  sup_stop_init(s);
  return 0;
}

/* Sets everything up and starts the first worker. Returns -1 when the loop
 * is to run, or the exit code. */
static int prepare(sup_t *s, const args_t *a) {
  if (a->env_fd >= 0) {
    /* First, so the values are in no fd of ours for longer than needed. */
    int e = sup_env_read(s, a->env_fd);
    if (e) {
      sup_log(s, "cannot read the worker's environment from fd %d: %s", a->env_fd, strerror(-e));
      return 111;
    }
  }
  /* Immune to the terminal closing and to a reader going away. */
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
    sup_log(s, "cannot become a child subreaper: %s", strerror(errno));
  int rc = take_task(s, a->dir);
  if (rc < 0)
    rc = open_output(s);
  if (rc >= 0)
    return rc;
  int err = sup_reserve_make(s);
  if (err)
    return fail_store_full(s, err);
  err = setup_loop(s);
  if (err)
    return fail_setup(s, "cannot set up: %s", tfs_strerror(err));
  claim(s);
  sup_limits_prepare(s);
  /* A stop requested before the start: the task never runs. */
  sup_check_cancel(s, "start");
  if (!s->stopping)
    sup_sched_start(s); /* dependencies, start time, queue slot: then the worker */
  return -1;
}

/* Runs the loop until the end is recorded: sup_finish() closes every
 * handle, and the second run lets their close callbacks run out. */
static void run(sup_t *s) {
  uv_run(&s->loop, UV_RUN_DEFAULT);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  uv_loop_close(&s->loop);
  sup_sentinel_end(s); /* normally ended with its group already */
}

/* Frees what the supervisor holds; the fds (the lock among them) are left
 * to the process's exit. */
static void cleanup(sup_t *s) {
  free(s->worker_env);
  free(s->env_buf);
  if (s->bell_fd >= 0)
    close(s->bell_fd);
  sup_capture_free(&s->cap);
  tfs_lineidx_writer_close(s->cap.lidx);
  tfs_record_free(&s->rec);
  tfs_store_close(s->store);
}

int tfs_supervise_main(int argc, char **argv) {
  args_t a;
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0)
    return rc;
  /* Static: its address stays valid in every callback. */
  static sup_t sup;
  sup_t *s = &sup;
  memset(s, 0, sizeof *s);
  s->id = a.id;
  s->lock_fd = s->tx_fd = s->side_fd = s->devnull = s->bell_fd = -1;
  s->exec = &sup_exec_local;
  s->cg_procs_fd = -1;
  s->spawn_fd3 = -1;
  rc = prepare(s, &a);
  if (rc < 0) {
    run(s);
    rc = 0;
  }
  cleanup(s);
  return rc;
}
