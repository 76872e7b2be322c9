/* Throughput of the important-line classifier, as the supervisor uses it:
 * every line of a generated 200 MB build/test log goes through
 * tfs_important_feed() with K = 20, and the rate is printed in MB/s.
 *
 * Build and run (from the top of the tree, after `make`):
 *   cc -O2 -Iinclude bench/classify_bench.c build/libtaskfs.a -ljansson -o build/classify_bench &&
 * build/classify_bench [MB]
 *
 * The log mixes the lines of compilers, make, cargo, go test, pytest, jest,
 * npm and plain application logs, with about 3% important lines; random
 * identifiers and numbers keep every line different. It is generated into
 * memory first so that only the classifier is timed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "taskfs/taskfs.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

static const char *const words[] = {
    "package", "path",      "default", "module",   "current", "parse",   "build",
    "value",   "request",   "handler", "config",   "cache",   "worker",  "session",
    "array",   "interface", "was",     "wait",     "factory", "update",  "index",
    "during",  "schedule",  "access",  "accepted", "connect", "timeout", "server",
    "client",  "webpack",   "debug",   "import",   "library", "compile", "object",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const char *word(void) {
  return words[rnd() % NWORDS];
}

/* Appends one line (with '\n') to buf at *off. */
static void gen_line(char *buf, size_t *off) {
  char *p = buf + *off;
  int n;
  uint32_t r = rnd() % 1000;
  if (r < 150)
    n = sprintf(p, "cc -O2 -g -Wall -Wextra -Iinclude -c src/%s/%s_%s.c -o build/%s_%s.o\n", word(),
                word(), word(), word(), word());
  else if (r < 250)
    n = sprintf(p, "   Compiling %s-%s v0.%u.%u (/home/dev/src/%s)\n", word(), word(), rnd() % 20,
                rnd() % 10, word());
  else if (r < 350)
    n = sprintf(p, "=== RUN   Test%s%s/%s_%u\n", word(), word(), word(), rnd() % 100);
  else if (r < 450)
    n = sprintf(p, "--- PASS: Test%s%s (0.%02us)\n", word(), word(), rnd() % 100);
  else if (r < 550)
    n = sprintf(p, "tests/test_%s.py::test_%s_%s PASSED                          [ %u%%]\n", word(),
                word(), word(), rnd() % 100);
  else if (r < 650)
    n = sprintf(p,
                "2026-11-30T01:%02u:%02u.%03uZ INFO  [%s] %s %s %s id=%u took=%ums "
                "user=%s path=/api/%s/%s\n",
                rnd() % 60, rnd() % 60, rnd() % 1000, word(), word(), word(), word(), rnd(),
                rnd() % 900, word(), word(), word());
  else if (r < 720)
    n = sprintf(p, "  \xE2\x9C\x93 %s %s the %s when %s (%u ms)\n", word(), word(), word(), word(),
                rnd() % 50);
  else if (r < 800)
    n = sprintf(p, "asset %s.%08x.js %u KiB [emitted] [immutable] [minimized] (name: %s)\n", word(),
                rnd(), rnd() % 900, word());
  else if (r < 860)
    n = sprintf(p, "    at %s.%s (/app/node_modules/%s/lib/%s.js:%u:%u)\n", word(), word(), word(),
                word(), rnd() % 900, rnd() % 80);
  else if (r < 900)
    n = sprintf(p, "make[%u]: Entering directory '/home/dev/src/%s/%s'\n", rnd() % 4, word(),
                word());
  else if (r < 935)
    n = sprintf(p, "added %u packages, and audited %u packages in %us\n", rnd() % 900, rnd() % 900,
                rnd() % 60);
  else if (r < 970)
    n = sprintf(p, "%s\n", "");
  /* About 3% important lines. */
  else if (r < 978)
    n = sprintf(p, "src/%s.c:%u:%u: warning: unused variable '%s' [-Wunused-variable]\n", word(),
                rnd() % 900, rnd() % 80, word());
  else if (r < 984)
    n = sprintf(p, "src/%s.c:%u:%u: error: '%s' undeclared (first use in this function)\n", word(),
                rnd() % 900, rnd() % 80, word());
  else if (r < 988)
    n = sprintf(p, "--- FAIL: Test%s%s (0.%02us)\n", word(), word(), rnd() % 100);
  else if (r < 992)
    n = sprintf(p, "FAILED tests/test_%s.py::test_%s - AssertionError: assert %u == %u\n", word(),
                word(), rnd() % 10, rnd() % 10);
  else if (r < 995)
    n = sprintf(p, "npm WARN deprecated %s@%u.%u.%u: use %s instead\n", word(), rnd() % 9,
                rnd() % 9, rnd() % 9, word());
  else if (r < 998)
    n = sprintf(p, "test result: ok. %u passed; 0 failed; 0 ignored; 0 measured\n", rnd() % 300);
  else
    n = sprintf(p, "make: *** [Makefile:%u: %s] Error %u\n", rnd() % 300, word(), 1 + rnd() % 2);
  *off += (size_t)n;
}

/* CPU time of this thread: the figure stays meaningful on a busy machine,
 * where wall time would also count time spent waiting for a core. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 200;
  if (mb == 0)
    mb = 200;
  size_t size = mb << 20;
  char *buf = malloc(size + 4096);
  if (!buf) {
    fprintf(stderr, "classify_bench: cannot allocate %zu MB; try a smaller size\n", mb);
    return 111;
  }
  size_t off = 0;
  while (off < size)
    gen_line(buf, &off);

  /* Three passes, each through a fresh buffer; the best one is reported,
   * since other processes on the machine can only slow a pass down. */
  tfs_important_t imp;
  int64_t lineno = 0;
  long kinds[5] = {0};
  double best = 0;
  for (int pass = 0; pass < 3; pass++) {
    if (tfs_important_init(&imp, TFS_IMPORTANT_K_DEFAULT) != 0)
      return 111;
    lineno = 0;
    double t0 = now_s();
    for (char *p = buf, *end = buf + off; p < end;) {
      char *nl = memchr(p, '\n', (size_t)(end - p));
      size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
      tfs_important_feed(&imp, ++lineno, p, len);
      p += len + 1;
    }
    double t = now_s() - t0;
    if (pass == 0 || t < best)
      best = t;
    if (pass < 2)
      tfs_important_free(&imp);
  }
  double t = best;

  /* Classify again, untimed, to report the mix. */
  for (char *p = buf, *end = buf + off; p < end;) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    kinds[tfs_classify_line(p, len)]++;
    p += len + 1;
  }
  printf("classify_bench: %.1f MB, %lld lines in %.3f s of CPU (best of 3): %.0f MB/s, %.1f M "
         "lines/s\n",
         (double)off / 1e6, (long long)lineno, t, (double)off / 1e6 / t, (double)lineno / 1e6 / t);
  printf("classify_bench: kinds: plain %ld, error %ld, warning %ld, failure %ld, summary %ld; "
         "kept %zu first + %zu last of %lld\n",
         kinds[0], kinds[1], kinds[2], kinds[3], kinds[4], imp.nfirst, imp.nlast,
         (long long)imp.total);
  tfs_important_free(&imp);
  free(buf);
  return 0;
}
