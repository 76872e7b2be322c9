/* Internal pieces of the supervisor library, shared by the files in
 * supervisor/ (and its tests) only. */
#ifndef TASKFS_SUPERVISOR_INTERNAL_H
#define TASKFS_SUPERVISOR_INTERNAL_H

#include "taskfs/supervise.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* launch.c: a helper binary installed with the running one, beside it
 * (the build tree, LIBEXECDIR/taskfs) or in ../libexec/taskfs/ from it
 * (bin/), into buf; 0 or -ENOENT. Where the running binary is, never the
 * environment, says where to look. */
int sup_libexec_find(const char *name, char *buf, size_t size);

/* ---- capture: one output stream (merged) or two (stderr split) into one
 * transcript ------------------------------------------------------------ */

/* Size of each stream's line buffer. A line longer than this is written in
 * pieces of this size while the other stream waits. */
#define SUP_CAPTURE_BUF (64 * 1024)
/* Bytes of a line that are given to the important-line classifier. */
#define SUP_CAPTURE_FEED_MAX 4096
/* Transcript blocks reserved ahead of the output (see reserve() in
 * capture.c), given back when the task ends. */
#define SUP_CAPTURE_AHEAD (64 * 1024)

enum { SUP_STDOUT = 0, SUP_STDERR = 1 };

typedef struct {
  char *buf; /* SUP_CAPTURE_BUF bytes: an incomplete line, never a '\n' */
  size_t len;
  size_t clean; /* the first clean bytes are known to hold no '\n' */
  int eof;
  int skip; /* the start of the current line was lost: drop to its end */
} sup_cap_stream_t;

/* ---- the counter (counter.c): lines, important lines, the line index
 * and stderr's line ranges, found on a thread of its own from what landed
 * in the transcript ---------------------------------------------------- */

/* Stretches of the two streams' writes the counter keeps apart (stderr
 * split); a full ring makes the capture wait for the counter. */
#define SUP_COUNTER_SEGS 256

typedef struct {
  int64_t end; /* the stretch ends here (its start: the one before's end) */
  int st;
} sup_counter_seg_t;

typedef struct {
  int ready, started, inline_work; /* inline: no thread (its start failed) */
  pthread_t th;
  int rfd;     /* the transcript, read-only: what landed is read back */
  int side_fd; /* the stderr-lines sidecar, or -1 */
  /* q guards what the capture publishes and the thread's progress. */
  pthread_mutex_t q;
  pthread_cond_t more, caught_up;
  int64_t end;  /* bytes landed in the transcript */
  int64_t done; /* bytes read back and worked on */
  int flush;    /* the open line goes to the tracker once done >= flush_at */
  int64_t flush_at;
  int quit, broken;
  sup_counter_seg_t seg[SUP_COUNTER_SEGS];
  unsigned seg_head, nseg;
  /* data guards the rest: the thread holds it while it works on a block,
   * the saver while it writes the record. */
  pthread_mutex_t data;
  tfs_important_t *imp;
  tfs_lineidx_writer_t *lidx;
  int64_t lines;    /* lines in the transcript up to counted (an open one counts) */
  int64_t counted;  /* bytes those lines are of */
  int64_t line_end; /* offset after the last '\n' counted */
  int open, fed;    /* a line is open at counted; its prefix was fed */
  char *buf;        /* a block read back */
  char *pre;        /* the open line's first bytes (SUP_CAPTURE_FEED_MAX) */
  size_t pre_len;
  int64_t err_first, err_last; /* stderr line range not yet in the sidecar */
  int side_err;
} sup_counter_t;

int sup_counter_init(sup_counter_t *k, int rfd, int side_fd, tfs_important_t *imp, int64_t lines,
                     int64_t bytes);
/* Stops the thread (after it worked on everything landed) and frees. */
void sup_counter_free(sup_counter_t *k);
/* The transcript now holds end bytes; those since the last call were
 * written by stream st. Never waits on the counter's work (only on a full
 * ring of stretches: alternating streams faster than it). */
void sup_counter_landed(sup_counter_t *k, int64_t end, int st);
/* The open line's start goes to the tracker once what landed is worked
 * on (a prompt that waits, the last line). */
void sup_counter_flush(sup_counter_t *k);
/* Waits until everything landed (and a flush asked for) is worked on. */
void sup_counter_drain(sup_counter_t *k);
/* After a drain: the offset after the last '\n', and the transcript cut
 * back to to (its open line, if any, is gone). */
int64_t sup_counter_line_end(sup_counter_t *k);
void sup_counter_truncated(sup_counter_t *k, int64_t to);
/* Holds the data lock: lines, counted and the tracker stay as they are. */
void sup_counter_lock(sup_counter_t *k);
void sup_counter_unlock(sup_counter_t *k);
/* Writes the pending stderr range to the sidecar. */
void sup_counter_flush_side(sup_counter_t *k);

typedef struct {
  int fd;             /* transcript, O_APPEND */
  int64_t lines;      /* lines counted, as of the last sup_capture_sync() */
  int64_t bytes;      /* bytes in the transcript (landed writes) */
  int64_t alloc_end;  /* blocks are reserved up to here (fallocate) */
  int no_fallocate;   /* the file system has no fallocate */
  int64_t lost_bytes; /* output lost to write errors, in whole lines */
  int64_t lost_lines;
  int64_t lost_first_ms, lost_last_ms;
  /* The transcript's line index (core/lineidx.c), fed by the counter with
   * every byte that lands, in order; NULL: none is kept. Set before the
   * first write. */
  tfs_lineidx_writer_t *lidx;
  int last_err;    /* the last write error (negative errno), 0 if none */
  int open_stream; /* stream whose line is open at the transcript's end, or -1 */
  int64_t cuts;    /* long lines ended early by sup_capture_cut */
  /* The merged stream is spliced from its pipe into the transcript (no
   * copy through this process) while splice is on; sfd is the transcript
   * open for that (splice refuses O_APPEND), -1 before the first. */
  int splice;
  int sfd;
  int spliced; /* bytes were spliced since the last restart */
  sup_cap_stream_t s[2];
  sup_counter_t cnt;
} sup_capture_t;

/* Sets up a capture writing to the transcript fd and the sidecar fd (may be
 * -1); rfd is the same transcript open for reading (the counter reads back
 * what landed; the capture closes it). lines/bytes start from the given
 * counts (a task's transcript is continued across restarts). */
int sup_capture_init(sup_capture_t *c, int fd, int rfd, int side_fd, tfs_important_t *imp,
                     int64_t lines, int64_t bytes);
void sup_capture_free(sup_capture_t *c);
/* Moves what the pipe fd (the merged stream's, non-blocking) holds into
 * the transcript with splice(2). Returns the bytes moved, 0 at the pipe's
 * end, -EAGAIN when it is empty, or -ENOTSUP: the bytes go through the line
 * buffer from now on (read them into sup_capture_space and commit), for
 * this worker: no splice on this file system or pipe, or room for the
 * next bytes could not be reserved (a full disk, whose rules only the
 * line buffer keeps). */
ssize_t sup_capture_splice(sup_capture_t *c, int fd);
/* Where the next read of stream st should go; *n is never 0 while the
 * stream is not held back (see sup_capture_holder). */
void sup_capture_space(sup_capture_t *c, int st, char **p, size_t *n);
/* n bytes were read into the space given by sup_capture_space: writes every
 * complete line, or a piece of a long line. */
void sup_capture_commit(sup_capture_t *c, int st, size_t n);
/* Stream st reached its end: what is left is written as is (no newline),
 * at once or, if the other stream is mid-line, once it is done. */
void sup_capture_eof(sup_capture_t *c, int st);
/* Writes what stream st kept back while the other stream was mid-line. Call
 * for both streams whenever the holder may have changed. */
void sup_capture_pending(sup_capture_t *c, int st);
/* Writes the incomplete line stream st holds as the start of an open line
 * (a prompt that waits for its answer): the line counts now, its rest
 * continues it when it comes. Only for the one stream left: the merged
 * stream (the default), or with stderr split once the other one ended.
 * Returns 1 if it wrote. */
int sup_capture_flush_partial(sup_capture_t *c, int st);
/* The stream in the middle of a long line (the other one must not be read
 * until it ends), or -1. */
int sup_capture_holder(const sup_capture_t *c);
/* Ends the open long line with a '\n' the program did not write, so the
 * held-back stream can go on: used when the other stream has waited too
 * long (its writer may be blocked on a full pipe, and the long line may be
 * waiting for it: a deadlock). The rest of the line becomes a new line. */
void sup_capture_cut(sup_capture_t *c);
/* Before a new worker starts: ends an open last line with a '\n' so the next
 * worker's first line is a line of its own; resets both streams. */
void sup_capture_restart(sup_capture_t *c);
/* Gives back the blocks reserved past the transcript's end. */
void sup_capture_release(sup_capture_t *c);
/* Writes the pending stderr range to the sidecar. */
void sup_capture_flush_side(sup_capture_t *c);
/* Waits until the counter has worked on everything written (the open last
 * line fed to the tracker too) and sets c->lines: the end of a task. */
void sup_capture_sync(sup_capture_t *c);

/* ---- files ------------------------------------------------------------ */

/* Opens a task file (mode 0600 if created) as tfs_task_file_open() does:
 * never hanging on a planted FIFO and refusing anything but a regular
 * file, which is -EINVAL here ("not a regular file" in its messages). */
int sup_open_file(tfs_store_t *store, const char *id, tfs_task_file_t which, int flags);

/* ---- the supervisor as a fork of its launcher (inproc.c) -------------- */

/* 1 if this process may run a supervisor in a fork of itself: it has one
 * thread (tfs_launch_opts_t.no_exec). */
int sup_inproc_possible(void);
/* In the launcher's grandchild, after sup_child_init() and chdir("/"):
 * takes argv ("taskfs", "supervise", ...) as its command line, closes every
 * fd from 3 up but keep_fd (-1: none), and runs the supervisor; never
 * returns, but when the command line cannot be set (then nothing was
 * changed, and the caller execs). */
void sup_inproc_run(char *const argv[], int keep_fd);

/* ---- the process tree ------------------------------------------------ */

/* Sends sig to every descendant of the calling process (found by walking
 * /proc: processes whose parent chain leads here) but spare (0: none; the
 * sentinel, which must outlive the group it guards). Returns how many were
 * signalled, or a negative errno. */
int sup_kill_descendants(int sig, pid_t spare);
/* The same by reading every /proc/<pid>/stat: the fallback when the kernel
 * has no /proc/<pid>/task/<tid>/children files. */
int sup_kill_descendants_scan(int sig, pid_t spare);
/* Every descendant of the calling process, from a walk down the children
 * files, in a new array (free it). 0, -ENOENT without those files, or
 * -ENOMEM. */
int sup_descendants(pid_t **out, size_t *n);

#endif
