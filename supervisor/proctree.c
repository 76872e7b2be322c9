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

/* The one descendant never signalled: the supervisor's sentinel, which
 * must outlive the group it guards until the supervisor ends it. */
static pid_t spared;

void tfs_proctree_spare(pid_t pid) {
  spared = pid;
}

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

static int push(pid_t **v, size_t *n, size_t *cap, pid_t pid) {
  if (*n == *cap) {
    pid_t *nv = realloc(*v, (*cap *= 2) * sizeof **v);
    if (!nv)
      return -ENOMEM;
    *v = nv;
  }
  (*v)[(*n)++] = pid;
  return 0;
}

/* Appends the children of every thread of pid (from
 * /proc/<pid>/task/<tid>/children, a space-separated list) to *v. Returns
 * 0, or -ENOENT if this kernel has no such file (CONFIG_PROC_CHILDREN). */
static int add_children(pid_t pid, pid_t **v, size_t *n, size_t *cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d)
    return 0; /* gone meanwhile */
  struct dirent *e;
  int err = 0;
  while (!err && (e = readdir(d))) {
    if (!isdigit((unsigned char)e->d_name[0]) || strlen(e->d_name) > 12)
      continue;
    char cpath[32];
    snprintf(cpath, sizeof cpath, "%s/children", e->d_name);
    int fd = openat(dirfd(d), cpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT && pid == getpid())
        err = -ENOENT;
      continue;
    }
    size_t len = 0, bcap = 4096;
    char *buf = malloc(bcap);
    ssize_t r = 0;
    while (buf && (r = read(fd, buf + len, bcap - len - 1)) > 0) {
      len += (size_t)r;
      if (bcap - len < 2) {
        char *nb = realloc(buf, bcap *= 2);
        if (!nb) {
          free(buf);
          buf = NULL;
        } else {
          buf = nb;
        }
      }
    }
    close(fd);
    if (!buf) {
      err = -ENOMEM;
      break;
    }
    buf[len] = 0;
    for (char *p = buf, *q; !err && *p; p = q) {
      long child = strtol(p, &q, 10);
      if (q == p)
        break;
      if (child > 0)
        err = push(v, n, cap, (pid_t)child);
    }
    free(buf);
  }
  closedir(d);
  return err;
}

/* The fast way: walk down from here through the children files, which
 * costs the size of our tree, not of the whole system (a thousand
 * supervisors stopping at once must not each read every /proc entry).
 * The whole tree is collected before anything is signalled. */
static int kill_walk(int sig) {
  size_t n = 0, cap = 64, i = 0;
  pid_t *v = malloc(cap * sizeof *v);
  if (!v)
    return -ENOMEM;
  int err = add_children(getpid(), &v, &n, &cap);
  while (!err && i < n)
    err = add_children(v[i++], &v, &n, &cap);
  int count = 0;
  if (!err)
    for (i = 0; i < n; i++)
      if (v[i] > 0 && v[i] != getpid() && v[i] != spared && kill(v[i], sig) == 0)
        count++;
  free(v);
  return err ? err : count;
}

int tfs_kill_descendants(int sig) {
  int r = kill_walk(sig);
  if (r != -ENOENT)
    return r;
  return tfs_kill_descendants_scan(sig);
}

/* The portable way: read every /proc/<pid>/stat. */
int tfs_kill_descendants_scan(int sig) {
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
    if (mark[i] && ps[i].pid != self && ps[i].pid != spared && kill(ps[i].pid, sig) == 0)
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
