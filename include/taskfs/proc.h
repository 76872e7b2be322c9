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
 * cutime, 17 cstime, 22 starttime). Times are in clock ticks
 * (sysconf(_SC_CLK_TCK)); starttime counts from boot. */
typedef struct {
  pid_t pid;
  char comm[64]; /* the command name, cut to fit (the kernel's is 16 bytes) */
  char state;    /* R S D Z T t X I ...; Z and X: the process lives no more */
  pid_t ppid, pgrp, session;
  uint64_t utime, stime;
  int64_t cutime, cstime; /* of its children it reaped */
  uint64_t start;
} tfs_proc_stat_t;

/* Parses the text of a stat file (len bytes). The command name may hold
 * any byte, spaces and ')' included: it ends at the last ')' of the line.
 * 0, or -EIO for a text that is not one. */
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
