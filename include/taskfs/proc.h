/* taskfs: the one reader of /proc/<pid>/stat (core/procstat.c, part of
 * libtaskfs.a), for every library that asks the kernel about a process:
 * its state, parent, group, CPU times and start time. */
#ifndef TASKFS_PROC_H
#define TASKFS_PROC_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The fields of /proc/<pid>/stat that taskfs uses (proc(5) numbers them:
 * 2 comm, 3 state, 4 ppid, 5 pgrp, 6 session, 14 utime, 15 stime, 16
 * cutime, 17 cstime, 20 num_threads, 22 starttime; the memory map from 26
 * on). Times are in clock ticks (sysconf(_SC_CLK_TCK)); starttime counts
 * from boot. */
typedef struct {
  pid_t pid;
  char comm[64]; /* the command name, cut to fit (the kernel's is 16 bytes) */
  char state;    /* R S D Z T t X I ...; Z and X: the process lives no more */
  pid_t ppid, pgrp, session;
  uint64_t utime, stime;
  int64_t cutime, cstime; /* of its children it reaped */
  uint64_t start;
  int64_t threads;
  /* Where the kernel put the process's code, data, heap, stack and
   * environment (fields 26-28 and 45-51): what prctl(PR_SET_MM_MAP) must
   * be given back when a process moves its argument area (the supervisor
   * forked without an exec, supervisor/inproc.c). The kernel shows them
   * to the process itself and to one that may ptrace it, 0 to others, and
   * a kernel older than 3.5 not at all (0). */
  struct {
    uint64_t start_code, end_code, start_stack;
    uint64_t start_data, end_data, start_brk;
    uint64_t arg_start, arg_end, env_start, env_end;
  } mm;
} tfs_proc_stat_t;

/* Parses the text of a stat file (len bytes). The command name may hold
 * any byte, spaces and ')' included: it ends at the last ')' of the line.
 * Fields 4 to 22 must be there; later ones are read where the line has
 * them (0 otherwise). 0, or -EIO for a text that is not one. */
int tfs_proc_stat_parse(const char *text, size_t len, tfs_proc_stat_t *out);
/* Reads /proc/<pid>/stat. 0, -ENOENT (no such process, or it was reaped),
 * another -errno, or -EIO. Only system calls, no allocation: safe in a
 * child between fork and exec and in a signal handler. */
int tfs_proc_stat(pid_t pid, tfs_proc_stat_t *out);
/* The same for <name>/stat below procfd, an open /proc (a walk of /proc
 * by its entries' names). */
int tfs_proc_stat_at(int procfd, const char *name, tfs_proc_stat_t *out);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_PROC_H */
