/* The one reader of /proc/<pid>/stat (include/taskfs/proc.h).
 *
 * The line is "pid (comm) state ppid pgrp ...". The command name is
 * whatever the process set (prctl PR_SET_NAME, the program's file name):
 * it may hold spaces, '(' and ')', so a parse that splits on spaces or
 * stops at the first ')' reads another process's fields. The name ends at
 * the last ')' of the line: no field after it can hold one.
 *
 * Written with system calls and plain loops only (no stdio, no malloc):
 * the sentinel calls it from a forked child. */
#include "taskfs/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The line is a few hundred bytes (52 fields on 6.x); a longer one would
 * be cut, and the fields past the cut read as 0. */
#define STAT_MAX 1024

/* Reads a decimal number (a '-' allowed) at *p and moves past it and the
 * one space after. 0, or -1 if there is no number. */
static int field(const char **p, const char *end, int64_t *v) {
  const char *s = *p;
  int neg = s < end && *s == '-';
  s += neg;
  if (s >= end || *s < '0' || *s > '9')
    return -1;
  uint64_t n = 0;
  for (; s < end && *s >= '0' && *s <= '9'; s++)
    n = n * 10 + (uint64_t)(*s - '0');
  *v = neg ? -(int64_t)n : (int64_t)n;
  *p = s < end && *s == ' ' ? s + 1 : s;
  return 0;
}

int tfs_proc_stat_parse(const char *text, size_t len, tfs_proc_stat_t *out) {
  const char *end = text + len, *open = memchr(text, '(', len), *close = NULL;
  for (const char *c = end; c > text; c--)
    if (c[-1] == ')') {
      close = c - 1;
      break;
    }
  if (!open || !close || close < open || close + 3 > end || close[1] != ' ')
    return -EIO;
  memset(out, 0, sizeof *out);
  const char *p = text;
  int64_t v;
  if (field(&p, open, &v))
    return -EIO;
  out->pid = (pid_t)v;
  size_t n = (size_t)(close - open - 1);
  if (n > sizeof out->comm - 1)
    n = sizeof out->comm - 1;
  memcpy(out->comm, open + 1, n);
  out->state = close[2];
  p = close + 3;
  if (p < end && *p == ' ')
    p++;
  /* Fields 4 to 22, in order, then what the kernel has of 23 to 51; each
   * one read is kept where it belongs. */
  for (int f = 4; f <= 51; f++) {
    if (field(&p, end, &v)) {
      if (f <= 22)
        return -EIO;
      break;
    }
    uint64_t u = (uint64_t)v;
    switch (f) {
    case 4:
      out->ppid = (pid_t)v;
      break;
    case 5:
      out->pgrp = (pid_t)v;
      break;
    case 6:
      out->session = (pid_t)v;
      break;
    case 14:
      out->utime = u;
      break;
    case 15:
      out->stime = u;
      break;
    case 16:
      out->cutime = v;
      break;
    case 17:
      out->cstime = v;
      break;
    case 20:
      out->threads = v;
      break;
    case 22:
      out->start = u;
      break;
    case 26:
      out->mm.start_code = u;
      break;
    case 27:
      out->mm.end_code = u;
      break;
    case 28:
      out->mm.start_stack = u;
      break;
    case 45:
      out->mm.start_data = u;
      break;
    case 46:
      out->mm.end_data = u;
      break;
    case 47:
      out->mm.start_brk = u;
      break;
    case 48:
      out->mm.arg_start = u;
      break;
    case 49:
      out->mm.arg_end = u;
      break;
    case 50:
      out->mm.env_start = u;
      break;
    case 51:
      out->mm.env_end = u;
      break;
    }
  }
  return 0;
}

static int read_stat(int dirfd, const char *path, tfs_proc_stat_t *out) {
  char buf[STAT_MAX];
  int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) < 0 && errno == EINTR)
    ;
  int e = n < 0 ? -errno : 0;
  close(fd);
  if (e)
    return e == -ESRCH ? -ENOENT : e;
  return tfs_proc_stat_parse(buf, (size_t)n, out);
}

/* Appends the decimal digits of v (>= 0) at o; returns the end. */
static char *put_num(char *o, long v) {
  char tmp[24];
  size_t n = 0;
  do
    tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n)
    *o++ = tmp[--n];
  return o;
}

int tfs_proc_stat(pid_t pid, tfs_proc_stat_t *out) {
  char path[48] = "/proc/";
  if (pid <= 0)
    return -ENOENT;
  char *o = put_num(path + 6, pid);
  memcpy(o, "/stat", 6);
  return read_stat(AT_FDCWD, path, out);
}

int tfs_proc_stat_at(int procfd, const char *name, tfs_proc_stat_t *out) {
  char path[48];
  size_t n = strnlen(name, 32);
  memcpy(path, name, n);
  memcpy(path + n, "/stat", 6);
  return read_stat(procfd, path, out);
}
