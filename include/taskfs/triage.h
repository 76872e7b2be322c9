/* taskfs triage: what a small answer shows of a task's important lines,
 * and why a worker ended, in words. Part of the core library (libtaskfs);
 * included by taskfs/taskfs.h. See docs/ARCHITECTURE.md, "Important
 * lines". */
#ifndef TASKFS_TRIAGE_H
#define TASKFS_TRIAGE_H

#include <stddef.h>

#include "taskfs/important.h"
#include "taskfs/record.h"

/* ---- triage: what a small answer shows -------------------------------- */

/* One line an answer may show: the lead, a context line, or another
 * important line. */
typedef enum { TFS_PICK_LEAD = 0, TFS_PICK_CONTEXT, TFS_PICK_OTHER } tfs_pick_role_t;

typedef struct {
  const tfs_important_line_t *line; /* into the tfs_important_t it came from */
  tfs_pick_role_t role;
  int from_last; /* an "other" line of the last K (0: of the first K) */
} tfs_pick_t;

typedef struct {
  tfs_pick_t *v; /* most needed first */
  size_t n;
} tfs_triage_t;

/* Orders the important lines for a reader with little room, most needed
 * first: the lead, its context lines, then the other important lines,
 * errors before failures before warnings before summaries, a cause before
 * a verdict, earlier before later; a line is listed once. A reader that
 * must fit a size drops picks from the end (after its own tail: the tail
 * shrinks first). With budget > 0, only the picks whose texts (each
 * costing its length plus per_line) fit in budget bytes are listed; the
 * lead always is. Returns 0 or -ENOMEM. */
int tfs_triage_select(const tfs_important_t *imp, size_t budget, size_t per_line,
                      tfs_triage_t *out);
void tfs_triage_free(tfs_triage_t *t);

/* ---- why a worker ended ------------------------------------------------ */

/* A cgroup's memory events, read where the kernel keeps them (cgroup v2
 * memory.events, v1 memory.oom_control and memory.failcnt). */
typedef struct {
  int known;        /* 0: no memory controller could be read */
  int v2;           /* 1: cgroup v2 */
  int64_t oom;      /* v2: times the limit was hit and reclaim failed */
  int64_t oom_kill; /* processes the OOM killer killed in the cgroup */
  int64_t failcnt;  /* v1: times usage hit the limit */
  int64_t peak;     /* v1: the highest usage yet, bytes */
  int64_t limit;    /* bytes; -1: none */
  char path[256];   /* the cgroup, as /proc/PID/cgroup names it */
} tfs_memcg_t;

/* The cgroup of pid (0: this process) from /proc/PID/cgroup: in the v2
 * hierarchy ("0::PATH"), or (v2 = 0) in the v1 one with the memory
 * controller. 0, or -1 when there is none. */
int tfs_cgroup_of(pid_t pid, int v2, char *path, size_t len);
/* Reads the memory events of the cgroup of pid (0: this process); with
 * path already set (a previous read), of that cgroup. */
void tfs_memcg_read(pid_t pid, tfs_memcg_t *m);

/* A worker's end in words, from its wait status and the memory events of
 * its cgroup before it started and after it ended (either may be NULL or
 * unknown): "exited with code 1", "exited with code 137 (128 + SIGKILL): a
 * process of the task was killed by the kernel's OOM killer: its cgroup
 * reached its memory limit (256 MiB)", "killed by signal SIGSEGV
 * (segmentation fault: an invalid memory access)". Returns buf. */
char *tfs_exit_describe(int status, const tfs_memcg_t *before, const tfs_memcg_t *after, char *buf,
                        size_t len);
/* tfs_exit_describe(), and the limit of the task's that ended the worker
 * (applied ones only: via set; lim may be NULL): RLIMIT_CPU (SIGXCPU, or
 * SIGKILL once its own CPU time, worker_cpu_ms, passed the hard limit),
 * RLIMIT_FSIZE (SIGXFSZ), the memory cgroup's OOM kill, and for a failure
 * under RLIMIT_DATA that the limit may be why. killed: the supervisor
 * sent SIGKILL itself (a stop's grace ran out), so a SIGKILL is just
 * that. Returns buf. */
char *tfs_exit_describe_limits(int status, const tfs_memcg_t *before, const tfs_memcg_t *after,
                               const tfs_limits_t *lim, int64_t worker_cpu_ms, int killed,
                               char *buf, size_t len);

#endif
