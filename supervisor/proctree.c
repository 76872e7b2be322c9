/* The process tree below the supervisor.
 *
 * The supervisor is a child subreaper, so every process its worker starts
 * stays below it: orphans are reparented to the supervisor, never to init.
 * To stop "everything the task started" it walks /proc once, keeps the
 * processes whose chain of parents leads to the supervisor, and signals
 * those. PIDs come from this live walk only, never from a file, and each is
 * signalled right after it was seen as our descendant.
 */
#include "supervisor/internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  pid_t pid, ppid;
} proc_t;

/* Reads the parent pid from /proc/<pid>/stat. The command name in
 * parentheses may hold spaces and ')', so parse after the last ')'. */
static int read_ppid(int procfd, const char *name, pid_t *ppid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "%s/stat", name);
  int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -EIO;
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  int pp;
  char state;
  if (!p || sscanf(p + 1, " %c %d", &state, &pp) != 2)
    return -EIO;
  *ppid = pp;
  return 0;
}

int tfs_kill_descendants(int sig) {
  pid_t self = getpid();
  DIR *d = opendir("/proc");
  if (!d)
    return -errno;
  size_t n = 0, cap = 256;
  proc_t *ps = malloc(cap * sizeof *ps);
  if (!ps) {
    closedir(d);
    return -ENOMEM;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!isdigit((unsigned char)e->d_name[0]))
      continue;
    pid_t ppid;
    if (read_ppid(dirfd(d), e->d_name, &ppid) < 0)
      continue; /* it went away meanwhile */
    if (n == cap) {
      proc_t *np = realloc(ps, (cap *= 2) * sizeof *ps);
      if (!np)
        break;
      ps = np;
    }
    ps[n].pid = (pid_t)atoi(e->d_name);
    ps[n].ppid = ppid;
    n++;
  }
  closedir(d);

  /* Mark descendants: repeat until no new process joins the set. A process
   * is marked by setting its ppid to 0 once its parent is known to be ours. */
  char *mark = calloc(n ? n : 1, 1);
  if (!mark) {
    free(ps);
    return -ENOMEM;
  }
  int changed = 1, count = 0;
  while (changed) {
    changed = 0;
    for (size_t i = 0; i < n; i++) {
      if (mark[i])
        continue;
      int ours = ps[i].ppid == self;
      for (size_t j = 0; !ours && j < n; j++)
        ours = mark[j] && ps[j].pid == ps[i].ppid;
      if (ours) {
        mark[i] = 1;
        changed = 1;
      }
    }
  }
  for (size_t i = 0; i < n; i++)
    if (mark[i] && ps[i].pid != self && kill(ps[i].pid, sig) == 0)
      count++;
  free(mark);
  free(ps);
  return count;
}

const char *tfs_signal_name(int sig, char buf[32]) {
  const char *abbrev = sigabbrev_np(sig);
  if (abbrev)
    snprintf(buf, 32, "SIG%s", abbrev);
  else
    snprintf(buf, 32, "signal %d", sig);
  return buf;
}
