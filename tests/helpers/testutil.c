#include "tests/helpers/testutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *tu_tmpdir(const char *tag) {
  const char *base = getenv("TMPDIR");
  char *path;
  if (!base || !*base)
    base = "/tmp";
  if (asprintf(&path, "%s/taskfs-test-%s-XXXXXX", base, tag ? tag : "t") < 0)
    abort();
  if (!mkdtemp(path)) {
    perror("mkdtemp");
    abort();
  }
  return path;
}

char *tu_tmpdir_mem(const char *tag) {
  if (access("/dev/shm", W_OK) != 0)
    return tu_tmpdir(tag);
  char *path;
  if (asprintf(&path, "/dev/shm/taskfs-test-%s-XXXXXX", tag ? tag : "t") < 0)
    abort();
  if (!mkdtemp(path)) {
    perror("mkdtemp");
    abort();
  }
  return path;
}

int tu_slow(void) {
  const char *v = getenv("TASKFS_TEST_SLOW");
  int n = v ? atoi(v) : 0;
  return n > 0 ? n : TU_SLOW_DEFAULT;
}

/* Criterion's timeouts are bounds against a hang, written in a test's
 * source for the normal build on a quiet machine. Before criterion's
 * main reads them, every test's and suite's bound is multiplied by
 * tu_slow(), so that one factor sizes them all for the run at hand (an
 * ASan build, a busy neighbour) instead of each test guessing. The
 * tests and suites are the pointers criterion keeps in the cr_tst and
 * cr_sts sections of the test binary. */
extern struct criterion_test *__start_cr_tst[] __attribute__((weak));
extern struct criterion_test *__stop_cr_tst[] __attribute__((weak));
extern struct criterion_suite *__start_cr_sts[] __attribute__((weak));
extern struct criterion_suite *__stop_cr_sts[] __attribute__((weak));

__attribute__((constructor)) static void scale_timeouts(void) {
  int k = tu_slow();
  for (struct criterion_test **t = __start_cr_tst; t && t < __stop_cr_tst; t++)
    if (*t && (*t)->data)
      (*t)->data->timeout *= k;
  for (struct criterion_suite **s = __start_cr_sts; s && s < __stop_cr_sts; s++)
    if (*s && (*s)->data)
      (*s)->data->timeout *= k;
}

/* 1 if process pid (its /proc name) belongs to dir: its command line
 * names dir (supervisors, servers, mounts of a store in it), or it runs
 * in dir or below (tasks, workers). */
static int proc_in(const char *name, const char *dir) {
  char path[64], buf[8192];
  size_t dl = strlen(dir);
  snprintf(path, sizeof path, "/proc/%s/cwd", name);
  ssize_t n = readlink(path, buf, sizeof buf - 1);
  if (n > 0) {
    buf[n] = '\0';
    if (!strncmp(buf, dir, dl) && (buf[dl] == '\0' || buf[dl] == '/'))
      return 1;
  }
  snprintf(path, sizeof path, "/proc/%s/cmdline", name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0; /* a zombie, or a kernel thread */
  for (ssize_t i = 0; i < n; i++)
    if (!buf[i])
      buf[i] = ' ';
  buf[n] = '\0';
  return strstr(buf, dir) != NULL;
}

int tu_end_procs(const char *dir) {
  int ended = 0;
  pid_t self = getpid(), parent = getppid(), group = getpgrp();
  for (int round = 0; round < 100 * tu_slow(); round++) {
    DIR *d = opendir("/proc");
    if (!d)
      return ended;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
      pid_t pid = (pid_t)atoi(e->d_name);
      if (pid <= 1 || pid == self || pid == parent || !proc_in(e->d_name, dir))
        continue;
      /* Its process group too: a supervisor runs its task in a group of
       * its own, which outlives a supervisor killed alone. */
      pid_t pg = getpgid(pid);
      if (pg > 1 && pg != group)
        kill(-pg, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, NULL, WNOHANG); /* one of our own children: reaped */
      found++;
    }
    closedir(d);
    if (!found)
      return ended;
    if (round == 0)
      ended = found;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "tu_end_procs: processes of %s still run\n", dir);
  return ended;
}

void tu_cleanup_dir(const char *path) {
  if (!path || !*path)
    return;
  tu_end_procs(path);
  tu_rmrf(path);
}

void tu_rmrf(const char *path) {
  char *cmd;
  if (!path || !*path || !strcmp(path, "/"))
    return;
  if (asprintf(&cmd, "rm -rf -- '%s'", path) < 0)
    abort();
  if (system(cmd) != 0)
    fprintf(stderr, "tu_rmrf: could not remove %s\n", path);
  free(cmd);
}

const char *tu_taskfs_bin(void) {
  const char *bin = getenv("TASKFS_BIN");
  return bin && *bin ? bin : "build/taskfs";
}

int tu_sh(char **out, const char *fmt, ...) {
  va_list ap;
  char *cmd;
  va_start(ap, fmt);
  if (vasprintf(&cmd, fmt, ap) < 0)
    abort();
  va_end(ap);
  FILE *p = popen(cmd, "r");
  free(cmd);
  if (!p)
    abort();
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (cap - len < 2)
      buf = realloc(buf, cap *= 2);
  }
  buf[len] = 0;
  int st = pclose(p);
  if (out)
    *out = buf;
  else
    free(buf);
  if (WIFEXITED(st))
    return WEXITSTATUS(st);
  if (WIFSIGNALED(st))
    return 128 + WTERMSIG(st);
  return -1;
}

int tu_wait_until(int (*cond)(void *arg), void *arg, int64_t timeout_ms) {
  struct timespec ts = {0, 10 * 1000 * 1000};
  int v = 0;
  timeout_ms *= tu_slow();
  for (int64_t waited = 0; waited <= timeout_ms; waited += 10) {
    if ((v = cond(arg)))
      return v;
    nanosleep(&ts, NULL);
  }
  return cond(arg);
}

char *tu_read_file(const char *path, size_t *lenp) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  ssize_t n;
  while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
    len += (size_t)n;
    if (cap - len < 2)
      buf = realloc(buf, cap *= 2);
  }
  close(fd);
  buf[len] = 0;
  if (lenp)
    *lenp = len;
  return buf;
}

int tu_write_file(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return -errno;
  ssize_t n = write(fd, data, len);
  close(fd);
  return n == (ssize_t)len ? 0 : -EIO;
}
