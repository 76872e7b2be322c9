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
#include "taskfs/cleanup.h"
#include "taskfs/proc.h"
#include "taskfs/buf.h"

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

static int push(pid_t **v, size_t *n, size_t *cap, pid_t pid) {
  if (tfs_grow(v, cap, *n + 1, sizeof **v, 64))
    return -ENOMEM;
  (*v)[(*n)++] = pid;
  return 0;
}

/* Appends the pids listed in the children file of thread tid (in the task
 * directory dfd of the process pid) to *v. Returns 0, or -ENOENT if this
 * kernel has no such file (CONFIG_PROC_CHILDREN). */
static int add_thread_children(int dfd, const char *tid, pid_t pid, pid_t **v, size_t *n,
                               size_t *cap) {
  char path[32];
  snprintf(path, sizeof path, "%s/children", tid);
  int fd TFS_AUTOCLOSE = openat(dfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT && pid == getpid() ? -ENOENT : 0;
  tfs_buf_t list TFS_AUTOBUF = TFS_BUF_INIT;
  /* A read error ends the list early: the thread went away. */
  int err = tfs_buf_read(&list, fd, SIZE_MAX) == -ENOMEM || tfs_buf_reserve(&list, 0) ? -ENOMEM : 0;
  for (char *p = list.s, *q; !err && *p; p = q) {
    long child = strtol(p, &q, 10);
    if (q == p)
      break;
    if (child > 0)
      err = push(v, n, cap, (pid_t)child);
  }
  return err;
}

/* Appends the children of every thread of pid (from
 * /proc/<pid>/task/<tid>/children, a space-separated list) to *v. Returns
 * 0, or -ENOENT if this kernel has no such file. */
static int add_children(pid_t pid, pid_t **v, size_t *n, size_t *cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d)
    return 0; /* gone meanwhile */
  struct dirent *e;
  int err = 0;
  while (!err && (e = readdir(d)))
    if (isdigit((unsigned char)e->d_name[0]) && strlen(e->d_name) <= 12)
      err = add_thread_children(dirfd(d), e->d_name, pid, v, n, cap);
  closedir(d);
  return err;
}

int sup_descendants(pid_t **out, size_t *count) {
  size_t n = 0, cap = 0, i = 0;
  pid_t *v = NULL;
  int err = add_children(getpid(), &v, &n, &cap);
  while (!err && i < n)
    err = add_children(v[i++], &v, &n, &cap);
  if (err) {
    free(v);
    return err;
  }
  *out = v;
  *count = n;
  return 0;
}

/* The fast way: walk down from here through the children files, which
 * costs the size of our tree, not of the whole system (a thousand
 * supervisors stopping at once must not each read every /proc entry).
 * The whole tree is collected before anything is signalled. */
static int kill_walk(int sig, pid_t spare) {
  size_t n = 0;
  pid_t *v TFS_AUTOFREE = NULL;
  int err = sup_descendants(&v, &n);
  if (err)
    return err;
  int count = 0;
  for (size_t i = 0; i < n; i++)
    if (v[i] > 0 && v[i] != getpid() && v[i] != spare && kill(v[i], sig) == 0)
      count++;
  return count;
}

int sup_kill_descendants(int sig, pid_t spare) {
  int r = kill_walk(sig, spare);
  if (r != -ENOENT)
    return r;
  return sup_kill_descendants_scan(sig, spare);
}

/* Every process in /proc with its parent, in a new array in *out. Returns
 * the count or -errno. */
static ssize_t read_procs(proc_t **out) {
  DIR *d = opendir("/proc");
  if (!d)
    return -errno;
  size_t n = 0, cap = 0;
  proc_t *ps = NULL;
  int err = tfs_grow(&ps, &cap, 256, sizeof *ps, 256);
  struct dirent *e;
  while (!err && (e = readdir(d))) {
    tfs_proc_stat_t st;
    if (!isdigit((unsigned char)e->d_name[0]) || tfs_proc_stat_at(dirfd(d), e->d_name, &st))
      continue; /* not a process, or it went away meanwhile */
    if (tfs_grow(&ps, &cap, n + 1, sizeof *ps, 256))
      break;
    ps[n].pid = st.pid;
    ps[n].ppid = st.ppid;
    n++;
  }
  closedir(d);
  if (!ps)
    return -ENOMEM;
  *out = ps;
  return (ssize_t)n;
}

/* The portable way: read every /proc/<pid>/stat. */
int sup_kill_descendants_scan(int sig, pid_t spare) {
  pid_t self = getpid();
  proc_t *ps TFS_AUTOFREE = NULL;
  ssize_t got = read_procs(&ps);
  if (got < 0)
    return (int)got;
  size_t n = (size_t)got;
  /* Mark descendants: repeat until no new process joins the set. */
  char *mark TFS_AUTOFREE = calloc(n ? n : 1, 1);
  if (!mark)
    return -ENOMEM;
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
    if (mark[i] && ps[i].pid != self && ps[i].pid != spare && kill(ps[i].pid, sig) == 0)
      count++;
  return count;
}
