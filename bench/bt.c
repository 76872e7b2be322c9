/* bt: the small timing tools the benchmarks are made of.
 *
 * Shell `date` forks a process and rounds; these subcommands take
 * CLOCK_REALTIME (comparable across processes) or CLOCK_MONOTONIC (for a
 * duration inside one process) in nanoseconds right next to the event they
 * time. Each one is tiny so that it adds as little as possible to what it
 * measures. It depends on nothing but libc, so it builds before the rest of
 * taskfs does.
 *
 *   bt now                               CLOCK_REALTIME in ns
 *   bt time OUT -- CMD...                run CMD, append its wall time (ns) to OUT,
 *                                        exit with CMD's status
 *   bt trapworker READY STAMPS           worker for the stop bench: traps SIGTERM,
 *                                        appends the time the handler ran to STAMPS
 *   bt stop file|kill|exec ARG... -- STAMPS TIMEOUT_MS
 *                                        take t0, request the stop, wait for the
 *                                        worker's stamp, print stamp - t0 (ns)
 *   bt stamper COUNT INTERVAL_US [GO]    worker for the follow bench: prints
 *                                        "STAMP <seq> <ns>" lines once GO exists
 *   bt lat COUNT OUT TIMEOUT_MS          read stamped lines on stdin, append
 *                                        arrival - stamp (ns) to OUT
 *   bt pollread PATH COUNT OUT TIMEOUT_MS  the same for a file read with poll()
 *   bt stats [DIV]                       numbers on stdin -> "n median p99 min max mean"
 *   bt waitsize PATH BYTES TIMEOUT_MS    wait until a file has at least BYTES
 *   bt cycle FILE                        write FILE to stdout again and again until
 *                                        the reader goes (`bt cycle log | head -c N`)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t real_ns(void) {
  return clock_ns(CLOCK_REALTIME);
}

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "bt: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(2);
}

/* Appends one line to a file with a single write, so concurrent writers
 * never interleave inside a line. */
static void append_line(const char *path, const char *line) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    die("cannot open %s", path);
  size_t len = strlen(line);
  if (write(fd, line, len) != (ssize_t)len)
    die("cannot write %s", path);
  close(fd);
}

/* Starts argv; with quiet, its stdout goes to /dev/null (the caller's
 * stdout carries a figure, which the child's words must not mix with). */
static pid_t spawn(char **argv, int quiet) {
  pid_t pid = fork();
  if (pid < 0)
    die("fork failed%s", "");
  if (pid == 0) {
    if (quiet) {
      int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (fd >= 0)
        dup2(fd, 1);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "bt: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  return pid;
}

static int wait_status(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return 111;
  if (WIFEXITED(st))
    return WEXITSTATUS(st);
  return 128 + WTERMSIG(st);
}

static volatile sig_atomic_t timed_out;
static volatile pid_t timed_child;

static void on_alarm(int sig) {
  timed_out = 1;
  if (timed_child > 0)
    kill(timed_child, SIGKILL);
}

/* Times CMD. $BT_TIMEOUT_S (default 600) bounds it: a hung component must
 * fail the bench, not stall it. The bound costs nothing while CMD runs (an
 * alarm, not a wrapper process), so it does not bias short timings. */
static int cmd_time(int argc, char **argv) {
  if (argc < 5 || strcmp(argv[3], "--"))
    die("usage: bt time OUT -- CMD...%s", "");
  const char *tv = getenv("BT_TIMEOUT_S");
  int timeout_s = tv ? atoi(tv) : 600;
  struct sigaction sa = {0};
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  int64_t t0 = clock_ns(CLOCK_MONOTONIC);
  pid_t pid = spawn(argv + 4, 0);
  timed_child = pid;
  alarm((unsigned)timeout_s);
  int rc = wait_status(pid);
  alarm(0);
  int64_t dt = clock_ns(CLOCK_MONOTONIC) - t0;
  if (timed_out) {
    fprintf(stderr, "bt time: %s did not finish within %d s; killed\n", argv[4], timeout_s);
    return 124;
  }
  char line[64];
  snprintf(line, sizeof line, "%" PRId64 "\n", dt);
  append_line(argv[2], line);
  return rc;
}

/* ---- stop latency ------------------------------------------------------ */

static int stamp_fd = -1;

/* The worker's SIGTERM handler: async-signal-safe only (clock_gettime,
 * write, _exit). The stamp is the first thing it does. */
static void on_term(int sig) {
  int64_t t = real_ns();
  char buf[32];
  int n = 0;
  char tmp[24];
  int k = 0;
  if (t == 0)
    tmp[k++] = '0';
  while (t > 0) {
    tmp[k++] = '0' + (char)(t % 10);
    t /= 10;
  }
  while (k > 0)
    buf[n++] = tmp[--k];
  buf[n++] = '\n';
  ssize_t w = write(stamp_fd, buf, (size_t)n);
  (void)w;
  _exit(0);
}

static __attribute__((noreturn)) int cmd_trapworker(int argc, char **argv) {
  if (argc != 4)
    die("usage: bt trapworker READY STAMPS%s", "");
  stamp_fd = open(argv[3], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (stamp_fd < 0)
    die("cannot open %s", argv[3]);
  struct sigaction sa = {0};
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTERM, &sa, NULL))
    die("sigaction failed%s", "");
  /* Tell the bench, atomically, that the handler is in place. */
  char tmp[4096], line[32];
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
  snprintf(line, sizeof line, "%d\n", (int)getpid());
  append_line(tmp, line);
  if (rename(tmp, argv[2]))
    die("cannot rename to %s", argv[2]);
  printf("trapworker %d ready\n", (int)getpid());
  fflush(stdout);
  for (;;)
    pause();
}

/* Waits until path has at least min bytes; returns 0, or -1 on timeout.
 * It checks every millisecond: the waiting never enters a figure (the
 * worker's own stamp does), so a simple loop is enough. */
static int wait_size(const char *path, off_t min, int timeout_ms) {
  int64_t deadline = clock_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
  for (;;) {
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size >= min)
      return 0;
    if (clock_ns(CLOCK_MONOTONIC) > deadline)
      return -1;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

static int64_t read_last_number(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int64_t v = -1, x;
  while (fscanf(f, "%" SCNd64, &x) == 1)
    v = x;
  fclose(f);
  return v;
}

/* bt stop MODE ARG... -- STAMPS TIMEOUT_MS. STAMPS must be empty (or
 * absent) before: the worker appends its stamp there. */
static int cmd_stop(int argc, char **argv) {
  int dd = -1;
  for (int i = 3; i < argc; i++)
    if (!strcmp(argv[i], "--")) {
      dd = i;
      break;
    }
  if (dd < 4 || dd + 3 != argc)
    die("usage: bt stop file PATH|kill PID|exec CMD... -- STAMPS TIMEOUT_MS%s", "");
  const char *mode = argv[2];
  const char *stamps = argv[dd + 1];
  int timeout_ms = atoi(argv[dd + 2]);
  argv[dd] = NULL;
  int64_t t0;
  if (!strcmp(mode, "file")) {
    /* Exactly what `echo 1 > PATH` does: open with O_TRUNC, write "1\n". */
    t0 = real_ns();
    int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
      fprintf(stderr, "bt stop: cannot open %s: %s\n", argv[3], strerror(errno));
      return 1;
    }
    if (write(fd, "1\n", 2) != 2) {
      fprintf(stderr, "bt stop: cannot write %s: %s\n", argv[3], strerror(errno));
      return 1;
    }
    if (close(fd)) {
      fprintf(stderr, "bt stop: close %s: %s\n", argv[3], strerror(errno));
      return 1;
    }
  } else if (!strcmp(mode, "kill")) {
    pid_t pid = (pid_t)atoi(argv[3]);
    if (pid <= 1)
      die("bad pid %s", argv[3]);
    t0 = real_ns();
    if (kill(pid, SIGTERM)) {
      fprintf(stderr, "bt stop: kill %d: %s\n", (int)pid, strerror(errno));
      return 1;
    }
  } else if (!strcmp(mode, "exec")) {
    t0 = real_ns();
    pid_t pid = spawn(argv + 3, 1);
    int rc = wait_status(pid);
    if (rc) {
      fprintf(stderr, "bt stop: %s exited %d\n", argv[3], rc);
      return 1;
    }
  } else {
    die("unknown stop mode %s", mode);
  }
  if (wait_size(stamps, 2, timeout_ms)) {
    fprintf(stderr, "bt stop: the worker did not see SIGTERM within %d ms (%s)\n", timeout_ms,
            mode);
    return 1;
  }
  int64_t stamp = read_last_number(stamps);
  printf("%" PRId64 "\n", stamp - t0);
  return 0;
}

/* ---- follow latency ---------------------------------------------------- */

static int cmd_stamper(int argc, char **argv) {
  if (argc != 4 && argc != 5)
    die("usage: bt stamper COUNT INTERVAL_US [GOFILE]%s", "");
  long count = atol(argv[2]);
  long interval = atol(argv[3]);
  /* With GOFILE, wait until it exists: the readers are in place by then,
   * so no line is read late because its reader was still starting. */
  if (argc == 5) {
    printf("stamper waiting for %s\n", argv[4]);
    fflush(stdout);
    while (access(argv[4], F_OK)) {
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
  }
  /* A little jitter so that the lines do not lock step with anyone's poll
   * period (tail -f on FUSE polls once a second). */
  srand((unsigned)getpid());
  for (long i = 0; i < count; i++) {
    long us = interval / 2 + (interval > 1 ? rand() % interval : 0);
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    char line[96];
    int n = snprintf(line, sizeof line, "STAMP %ld %" PRId64 "\n", i, real_ns());
    if (write(1, line, (size_t)n) != n)
      return 1;
  }
  return 0;
}

typedef struct {
  char buf[1 << 16];
  size_t len;
  long seen;
  FILE *out;
} linebuf_t;

/* Feeds bytes; for every complete "STAMP seq ns" line writes the latency.
 * Returns the number of stamped lines seen so far. */
static long feed(linebuf_t *lb, const char *data, size_t n, int64_t now) {
  while (n > 0) {
    size_t room = sizeof lb->buf - lb->len - 1;
    size_t take = n < room ? n : room;
    memcpy(lb->buf + lb->len, data, take);
    lb->len += take;
    data += take;
    n -= take;
    size_t start = 0;
    for (size_t i = 0; i < lb->len; i++) {
      if (lb->buf[i] != '\n')
        continue;
      lb->buf[i] = 0;
      char *s = strstr(lb->buf + start, "STAMP ");
      long seq;
      int64_t ts;
      if (s && sscanf(s, "STAMP %ld %" SCNd64, &seq, &ts) == 2) {
        fprintf(lb->out, "%ld %" PRId64 "\n", seq, now - ts);
        lb->seen++;
      }
      start = i + 1;
    }
    memmove(lb->buf, lb->buf + start, lb->len - start);
    lb->len -= start;
    if (lb->len == sizeof lb->buf - 1)
      lb->len = 0; /* an absurd line: drop it */
  }
  return lb->seen;
}

static int follow_loop(int fd, int use_poll, long count, const char *out, int timeout_ms) {
  static linebuf_t lb;
  lb.out = fopen(out, "w");
  if (!lb.out)
    die("cannot open %s", out);
  int64_t deadline = clock_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
  char buf[1 << 16];
  while (lb.seen < count) {
    int64_t left = (deadline - clock_ns(CLOCK_MONOTONIC)) / 1000000;
    if (left <= 0) {
      fprintf(stderr, "bt: only %ld of %ld stamped lines arrived in %d ms\n", lb.seen, count,
              timeout_ms);
      fclose(lb.out);
      return 1;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, (int)(left < 1000 ? left : 1000));
    if (r < 0 && errno != EINTR)
      die("poll failed%s", "");
    if (r <= 0)
      continue;
    /* Drain what is there: with poll on a regular file a read may return
     * 0 (no new data) and we go back to poll; on a pipe 0 means EOF. */
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      int64_t now = real_ns();
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      if (n < 0)
        die("read failed%s", "");
      if (n == 0) {
        if (!use_poll && lb.seen < count) {
          fprintf(stderr, "bt: input ended after %ld of %ld stamped lines\n", lb.seen, count);
          fclose(lb.out);
          return 1;
        }
        break;
      }
      feed(&lb, buf, (size_t)n, now);
      if (!use_poll)
        break; /* pipe: back to poll, which costs nothing when data waits */
    }
  }
  fclose(lb.out);
  return 0;
}

/* Writes this process's CPU time (ms) to OUT.cpu: a reader that spins
 * (poll always ready) shows up here even when its latency looks fine. */
static void write_cpu(const char *out) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
              (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  char path[4096], line[64];
  snprintf(path, sizeof path, "%s.cpu", out);
  snprintf(line, sizeof line, "%.1f\n", ms);
  append_line(path, line);
}

static int cmd_lat(int argc, char **argv) {
  if (argc != 5)
    die("usage: bt lat COUNT OUT TIMEOUT_MS%s", "");
  int rc = follow_loop(0, 0, atol(argv[2]), argv[3], atoi(argv[4]));
  write_cpu(argv[3]);
  return rc;
}

static int cmd_pollread(int argc, char **argv) {
  if (argc != 6)
    die("usage: bt pollread PATH COUNT OUT TIMEOUT_MS%s", "");
  int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "bt pollread: cannot open %s: %s\n", argv[2], strerror(errno));
    return 1;
  }
  int rc = follow_loop(fd, 1, atol(argv[3]), argv[4], atoi(argv[5]));
  write_cpu(argv[4]);
  return rc;
}

/* ---- statistics -------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *v, size_t n, double p) {
  if (n == 0)
    return 0;
  size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return v[rank - 1];
}

static int cmd_stats(int argc, char **argv) {
  double div = argc > 2 ? atof(argv[2]) : 1.0;
  size_t n = 0, cap = 1024;
  double *v = malloc(cap * sizeof *v), x, sum = 0;
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    /* The last number on the line: "seq lat" and "lat" both work. */
    char *p = line, *last = NULL, *tok;
    while ((tok = strtok(p, " \t\n"))) {
      last = tok;
      p = NULL;
    }
    if (!last)
      continue;
    /* Only numbers count: a stray word must never pass for a zero. */
    char *end;
    x = strtod(last, &end);
    if (end == last || *end) {
      fprintf(stderr, "bt stats: ignoring a line that does not end in a number: %s\n", last);
      continue;
    }
    x /= div;
    if (n == cap)
      v = realloc(v, (cap *= 2) * sizeof *v);
    v[n++] = x;
    sum += x;
  }
  if (n == 0) {
    printf("0 nan nan nan nan nan\n");
    return 1;
  }
  qsort(v, n, sizeof *v, cmp_dbl);
  double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  printf("%zu %.6g %.6g %.6g %.6g %.6g\n", n, med, pct(v, n, 99), v[0], v[n - 1], sum / n);
  free(v);
  return 0;
}

static int cmd_waitsize(int argc, char **argv) {
  if (argc != 5)
    die("usage: bt waitsize PATH BYTES TIMEOUT_MS%s", "");
  if (wait_size(argv[2], (off_t)atoll(argv[3]), atoi(argv[4]))) {
    fprintf(stderr, "bt waitsize: %s did not reach %s bytes in %s ms\n", argv[2], argv[3], argv[4]);
    return 1;
  }
  return 0;
}

/* The producer of the replay rows: FILE's bytes, over and over, in writes
 * of whole copies of it (at least 64 KiB each), until the reader closes
 * the pipe. The output is then cut by `head -c N`, as `yes` is. */
static int cmd_cycle(int argc, char **argv) {
  if (argc != 3)
    die("usage: bt cycle FILE%s", "");
  int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || st.st_size <= 0 || st.st_size > (64 << 20))
    die("cannot read %s (or it is empty or over 64 MiB)", argv[2]);
  size_t unit = (size_t)st.st_size, copies = unit >= 65536 ? 1 : 65536 / unit + 1;
  char *buf = malloc(unit * copies);
  if (!buf)
    die("out of memory for %s", argv[2]);
  for (size_t got = 0; got < unit;) {
    ssize_t r = read(fd, buf + got, unit - got);
    if (r <= 0)
      die("cannot read %s", argv[2]);
    got += (size_t)r;
  }
  close(fd);
  for (size_t i = 1; i < copies; i++)
    memcpy(buf + i * unit, buf, unit);
  signal(SIGPIPE, SIG_DFL);
  for (;;)
    for (size_t off = 0, len = unit * copies; off < len;) {
      ssize_t w = write(1, buf + off, len - off);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        return 0; /* the reader is gone */
      off += (size_t)w;
    }
}

int main(int argc, char **argv) {
  if (argc < 2)
    die("usage: bt now|time|trapworker|stop|stamper|lat|pollread|stats|waitsize|cycle ...%s", "");
  const char *c = argv[1];
  if (!strcmp(c, "now")) {
    printf("%" PRId64 "\n", real_ns());
    return 0;
  }
  if (!strcmp(c, "time"))
    return cmd_time(argc, argv);
  if (!strcmp(c, "trapworker"))
    return cmd_trapworker(argc, argv);
  if (!strcmp(c, "stop"))
    return cmd_stop(argc, argv);
  if (!strcmp(c, "stamper"))
    return cmd_stamper(argc, argv);
  if (!strcmp(c, "lat"))
    return cmd_lat(argc, argv);
  if (!strcmp(c, "pollread"))
    return cmd_pollread(argc, argv);
  if (!strcmp(c, "stats"))
    return cmd_stats(argc, argv);
  if (!strcmp(c, "waitsize"))
    return cmd_waitsize(argc, argv);
  if (!strcmp(c, "cycle"))
    return cmd_cycle(argc, argv);
  die("unknown subcommand %s", c);
  return 2;
}
