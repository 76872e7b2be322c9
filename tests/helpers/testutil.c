#include "tests/helpers/testutil.h"

#include <errno.h>
#include <fcntl.h>
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
