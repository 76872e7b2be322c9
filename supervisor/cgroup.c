/* The memory cgroup of a task's tree: where the machine lets this process
 * make one, `--limit mem=` is the memory limit of the whole tree (the
 * kernel's OOM killer acts inside it, and memory.events says so) instead
 * of RLIMIT_DATA on each process.
 *
 * cgroup v2 first: a child of the hierarchy's root when the supervisor
 * runs there (root can enable the memory controller for its children), or
 * a sibling of the supervisor's own cgroup when the parent is delegated to
 * this user (writable, memory enabled in its cgroup.subtree_control: the
 * "no internal processes" rule keeps a cgroup with processes, like the
 * shell's, from having children with controllers). Then cgroup v1, where
 * the memory controller is mounted there (a hybrid layout) and the
 * supervisor's own memory cgroup is writable: a child of it. Else no
 * cgroup, and the words why for the record.
 *
 * The worker enters it itself, between fork and exec (writing "0" into
 * cgroup.procs), so that everything it starts is inside from the start.
 */
#include "supervisor/sup.h"
#include "taskfs/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads a small file whole into buf (NUL-terminated); 0 or -1. */
static int slurp(const char *path, char *buf, size_t len) {
  int fd TFS_AUTOCLOSE = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, len - 1);
  if (n < 0)
    return -1;
  buf[n] = 0;
  return 0;
}

static int put(const char *path, const char *text) {
  int fd TFS_AUTOCLOSE = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  return write(fd, text, strlen(text)) < 0 ? -errno : 0;
}

/* 1 if word is an item of the space- or comma-separated list. */
static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)); p += n)
    if ((p == list || p[-1] == ' ' || p[-1] == ',') &&
        (!p[n] || p[n] == ' ' || p[n] == ',' || p[n] == '\n'))
      return 1;
  return 0;
}

/* The mount point (and its root) of cgroup v2 (v1: 0 and the hierarchy
 * with the memory controller) from /proc/self/mountinfo. 0 or -1. */
static int find_mount(int v1, char *mnt, size_t mlen, char *root, size_t rlen) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  char line[4096];
  int found = -1;
  while (f && found && fgets(line, sizeof line, f)) {
    char r[PATH_MAX], m[PATH_MAX], *sep = strstr(line, " - ");
    char fstype[32], src[256], opts[1024] = "";
    if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", r, m) != 2 ||
        sscanf(sep + 3, "%31s %255s %1023s", fstype, src, opts) < 2)
      continue;
    if (v1 ? strcmp(fstype, "cgroup") || !has_word(opts, "memory") : strcmp(fstype, "cgroup2"))
      continue;
    snprintf(mnt, mlen, "%s", m);
    snprintf(root, rlen, "%s", r);
    found = 0;
  }
  if (f)
    fclose(f);
  return found;
}

/* The directory of this process's cgroup: the mount plus its path, the
 * mount's root taken off (a hierarchy mounted from a subtree). */
static int own_dir(int v1, char *dir, size_t len) {
  char mnt[PATH_MAX], root[PATH_MAX], path[PATH_MAX];
  if (find_mount(v1, mnt, sizeof mnt, root, sizeof root) ||
      tfs_cgroup_of(0, !v1, path, sizeof path))
    return -1;
  const char *rel = path;
  size_t rl = strlen(root);
  if (strcmp(root, "/") && !strncmp(path, root, rl))
    rel = path + rl;
  int n = snprintf(dir, len, "%s%s", mnt, strcmp(rel, "/") ? rel : "");
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The v2 parent to make the task's cgroup in, with memory for its
 * children; or -1 and why not. */
static int v2_parent(char *parent, size_t len, char *why, size_t whylen) {
  char mnt[PATH_MAX], root[PATH_MAX], own[PATH_MAX], file[PATH_MAX + 32], buf[1024];
  if (find_mount(0, mnt, sizeof mnt, root, sizeof root) || own_dir(0, own, sizeof own)) {
    snprintf(why, whylen, "no cgroup v2 hierarchy is mounted");
    return -1;
  }
  snprintf(file, sizeof file, "%s/cgroup.controllers", mnt);
  if (slurp(file, buf, sizeof buf) || !has_word(buf, "memory")) {
    snprintf(why, whylen, "the cgroup v2 hierarchy at %.300s has no memory controller", mnt);
    return -1;
  }
  if (!strcmp(own, mnt)) {
    /* The root: it may have processes and still give its children
     * controllers. */
    snprintf(parent, len, "%s", mnt);
    snprintf(file, sizeof file, "%s/cgroup.subtree_control", mnt);
    if (slurp(file, buf, sizeof buf) == 0 && !has_word(buf, "memory") && put(file, "+memory")) {
      snprintf(why, whylen, "cannot enable the memory controller in %.300s (%.300s)", file,
               strerror(errno));
      return -1;
    }
    return 0;
  }
  char *slash = strrchr(own, '/');
  *slash = 0;
  snprintf(parent, len, "%s", own);
  snprintf(file, sizeof file, "%s/cgroup.procs", parent);
  if (access(parent, W_OK) || access(file, W_OK)) {
    snprintf(why, whylen, "the cgroup v2 subtree %.300s is not delegated to uid %d (not writable)",
             parent, (int)getuid());
    return -1;
  }
  snprintf(file, sizeof file, "%s/cgroup.subtree_control", parent);
  if (slurp(file, buf, sizeof buf) || !has_word(buf, "memory")) {
    snprintf(why, whylen, "the memory controller is not enabled for the children of %.300s",
             parent);
    return -1;
  }
  return 0;
}

/* The v1 parent: this process's own memory cgroup, when writable. */
static int v1_parent(char *parent, size_t len, char *why, size_t whylen) {
  if (own_dir(1, parent, len)) {
    snprintf(why, whylen, "no cgroup v1 memory controller either");
    return -1;
  }
  if (access(parent, W_OK)) {
    snprintf(why, whylen, "the cgroup v1 memory cgroup %.300s is not writable by uid %d", parent,
             (int)getuid());
    return -1;
  }
  return 0;
}

/* Makes dir (a leftover of a supervisor that died is taken as it is) and
 * sets its memory limit. */
static int make_one(sup_t *s, const char *parent, int v2, int64_t max, char *why, size_t whylen) {
  char file[PATH_MAX + 64], val[32];
  snprintf(s->cg_dir, sizeof s->cg_dir, "%s/taskfs-%s", parent, s->id);
  if (mkdir(s->cg_dir, 0755) && errno != EEXIST) {
    snprintf(why, whylen, "cannot make the cgroup %.300s (%.300s)", s->cg_dir, strerror(errno));
    return -1;
  }
  snprintf(file, sizeof file, "%s/%s", s->cg_dir, v2 ? "memory.max" : "memory.limit_in_bytes");
  snprintf(val, sizeof val, "%" PRId64, max);
  int err = put(file, val);
  if (!err) {
    snprintf(file, sizeof file, "%s/cgroup.procs", s->cg_dir);
    s->cg_procs_fd = open(file, O_WRONLY | O_CLOEXEC);
    err = s->cg_procs_fd < 0 ? -errno : 0;
  }
  if (err) {
    snprintf(why, whylen, "cannot set up the cgroup %.300s (%.300s: %.300s)", s->cg_dir, file,
             strerror(-err));
    rmdir(s->cg_dir);
    s->cg_dir[0] = 0;
    return -1;
  }
  s->cg_v2 = v2;
  return 0;
}

int sup_cgroup_make(sup_t *s, int64_t max, char *why, size_t whylen) {
  char parent[PATH_MAX], why2[1024], why1[1024];
  if (v2_parent(parent, sizeof parent, why2, sizeof why2) == 0)
    return make_one(s, parent, 1, max, why, whylen);
  if (v1_parent(parent, sizeof parent, why1, sizeof why1) == 0 &&
      make_one(s, parent, 0, max, why1, sizeof why1) == 0) {
    snprintf(why, whylen, "cgroup v1 (%.300s)", why2);
    return 0;
  }
  snprintf(why, whylen, "no memory cgroup: %.300s; %.300s", why2, why1);
  return -1;
}

int64_t sup_cgroup_peak_kb(const sup_t *s) {
  char file[PATH_MAX + 64], buf[64];
  if (!s->cg_dir[0])
    return -1;
  snprintf(file, sizeof file, "%s/%s", s->cg_dir,
           s->cg_v2 ? "memory.peak" : "memory.max_usage_in_bytes");
  if (slurp(file, buf, sizeof buf))
    return -1;
  return strtoll(buf, NULL, 10) / 1024;
}

int sup_cgroup_events(const sup_t *s, tfs_memcg_t *m) {
  static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
  memset(m, 0, sizeof *m);
  if (!s->cg_dir[0])
    return -1;
  /* The path as /proc/PID/cgroup names it: below the hierarchy's root. */
  const char *rel = NULL;
  if (!s->cg_v2) {
    if (!strncmp(s->cg_dir, "/sys/fs/cgroup/memory/", 22))
      rel = s->cg_dir + 21;
  } else {
    for (size_t i = 0; !rel && i < sizeof roots / sizeof *roots; i++)
      if (!strncmp(s->cg_dir, roots[i], strlen(roots[i])) && s->cg_dir[strlen(roots[i])] == '/')
        rel = s->cg_dir + strlen(roots[i]);
  }
  if (!rel)
    return -1;
  m->v2 = s->cg_v2;
  snprintf(m->path, sizeof m->path, "%s", rel);
  tfs_memcg_read(0, m);
  return m->known ? 0 : -1;
}

void sup_cgroup_remove(sup_t *s) {
  if (s->cg_procs_fd >= 0)
    close(s->cg_procs_fd);
  s->cg_procs_fd = -1;
  if (s->cg_dir[0] && rmdir(s->cg_dir) && errno != ENOENT)
    sup_log(s, "cannot remove the cgroup %s: %s", s->cg_dir, strerror(errno));
  s->cg_dir[0] = 0;
}
