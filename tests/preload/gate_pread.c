/* An LD_PRELOAD shim for tests/test_feed.c and tests/test_tailscan.c:
 * holds reads of a task's transcript until the test lets them go, so that
 * a test can see what the server does while a scan runs, without a clock.
 * With TFS_GATE=DIR set:
 * - the first pread of a file named "transcript" at offset 0 of 64 KiB or
 *   more (the count of the lines before a follow's start) after DIR/armed
 *   appears renames armed to DIR/held and waits until DIR/go exists, then
 *   removes go and reads;
 * - while DIR/each exists, every pread of a transcript does the same: it
 *   makes DIR/held, waits for DIR/go, removes held, then go, and reads;
 * - every pread of a transcript is counted in DIR/log ("offset length\n"
 *   appended) before it is held, so a test sees how much a scan read.
 * Any other read passes straight through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int is_transcript(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0)
    return 0;
  path[n] = '\0';
  const char *slash = strrchr(path, '/');
  return slash && !strcmp(slash + 1, "transcript");
}

static void note(const char *dir, size_t count, off_t off) {
  char log[4096], line[64];
  snprintf(log, sizeof log, "%s/log", dir);
  int n = snprintf(line, sizeof line, "%lld %zu\n", (long long)off, count);
  FILE *f = fopen(log, "a");
  if (f) {
    fwrite(line, 1, (size_t)n, f);
    fclose(f);
  }
}

static void wait_go(const char *go) {
  struct timespec ts = {0, 10 * 1000 * 1000};
  while (access(go, F_OK))
    nanosleep(&ts, NULL);
}

static void gate(int fd, size_t count, off_t off) {
  const char *dir = getenv("TFS_GATE");
  if (!dir || !is_transcript(fd))
    return;
  note(dir, count, off);
  char armed[4096], held[4096], go[4096], each[4096];
  snprintf(armed, sizeof armed, "%s/armed", dir);
  snprintf(held, sizeof held, "%s/held", dir);
  snprintf(go, sizeof go, "%s/go", dir);
  snprintf(each, sizeof each, "%s/each", dir);
  if (access(each, F_OK) == 0) {
    FILE *h = fopen(held, "w");
    if (h)
      fclose(h);
    wait_go(go);
    unlink(held);
    unlink(go);
    return;
  }
  if (off != 0 || count < 65536)
    return;
  if (rename(armed, held))
    return; /* not armed, or another read took it */
  wait_go(go);
  unlink(go);
}

ssize_t pread(int fd, void *buf, size_t count, off_t off) {
  static ssize_t (*real)(int, void *, size_t, off_t);
  if (!real)
    real = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
  gate(fd, count, off);
  return real(fd, buf, count, off);
}

ssize_t pread64(int fd, void *buf, size_t count, off_t off) {
  static ssize_t (*real)(int, void *, size_t, off_t);
  if (!real)
    real = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
  gate(fd, count, off);
  return real(fd, buf, count, off);
}
