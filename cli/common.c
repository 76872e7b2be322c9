/* Helpers shared by every verb of the taskfs command line: error reporting,
 * opening the store the way read-only verbs need it (never creating it),
 * resolving an ID or KEY argument, exit codes, and the two waits that
 * several verbs share (following a transcript, waiting for a task's end). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

/* The path cli_open_store() last resolved, so that later messages (a
 * missing store, an unknown task) can name it. */
static char last_store_path[PATH_MAX];

void cli_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  if (verb)
    fprintf(stderr, "taskfs %s: ", verb);
  else
    fputs("taskfs: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

int cli_usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "taskfs %s: ", verb);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\ntry 'taskfs %s --help'\n", verb);
  return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *verb, char **argv, int c) {
  char q[96];
  /* getopt_long() has already advanced optind past the bad element. For a
   * long option, optopt is its value (or 0 if unknown), so name the option
   * by its text, without any "=value". */
  const char *opt = optind > 0 && argv[optind - 1] ? argv[optind - 1] : "?";
  if (!strncmp(opt, "--", 2)) {
    cli_quote(opt, q, sizeof q);
    char *eq = strchr(q, '=');
    if (c == ':')
      return cli_usage_error(verb, "option '%s' needs a value", q);
    if (eq && optopt) {
      *eq = 0;
      return cli_usage_error(verb, "option '%s' takes no value", q);
    }
    if (eq)
      *eq = 0;
    return cli_usage_error(verb, "unknown option '%s'", q);
  }
  if (c == ':')
    return cli_usage_error(verb, "option '-%c' needs a value", optopt);
  if (optopt > 0x20 && optopt < 0x7f)
    return cli_usage_error(verb, "unknown option '-%c'", optopt);
  return cli_usage_error(verb, "unknown option '%s'", cli_quote(opt, q, sizeof q));
}

const char *cli_quote(const char *s, char *buf, size_t len) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0, i = 0;
  if (!len)
    return buf;
  for (; s && s[i]; i++) {
    unsigned char c = (unsigned char)s[i];
    if (o + 8 >= len || i >= 60) {
      memcpy(buf + (o + 4 < len ? o : len - 4), "...", 4);
      return buf;
    }
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      buf[o++] = '\\';
      buf[o++] = 'x';
      buf[o++] = hex[c >> 4];
      buf[o++] = hex[c & 15];
    } else {
      buf[o++] = (char)c;
    }
  }
  buf[o] = 0;
  return buf;
}

int cli_parse_i64(const char *s, int64_t *out) {
  int64_t v = 0;
  if (!s || !*s)
    return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    if (v > (INT64_MAX - (*s - '0')) / 10)
      return -1;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return 0;
}

int cli_parse_seconds(const char *s, int64_t *ms_out) {
  int64_t whole = 0, frac = 0;
  const char *dot;
  char buf[32];
  if (!s || !*s || strlen(s) >= sizeof buf)
    return -1;
  dot = strchr(s, '.');
  if (!dot) {
    if (cli_parse_i64(s, &whole) || whole > INT64_MAX / 1000)
      return -1;
    *ms_out = whole * 1000;
    return 0;
  }
  /* "1.5", ".5" and "2." are all fine; "." alone is not. */
  memcpy(buf, s, (size_t)(dot - s));
  buf[dot - s] = 0;
  if (dot == s && !dot[1])
    return -1;
  if (dot > s && cli_parse_i64(buf, &whole))
    return -1;
  if (whole > INT64_MAX / 1000 - 1)
    return -1;
  int scale = 100;
  for (const char *p = dot + 1; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    frac += (*p - '0') * scale;
    scale /= 10;
  }
  *ms_out = whole * 1000 + frac;
  return 0;
}

int cli_exit_for(int err) {
  if (err >= 0)
    return CLI_EXIT_OK;
  switch (err) {
  case TFS_ENOTASK:
    return CLI_EXIT_NOTASK;
  case TFS_EBADID:
    return CLI_EXIT_USAGE;
  default:
    return CLI_EXIT_SYSTEM;
  }
}

/* The exit code that stands for a task's end; see cli.h and docs/cli.md.
 * A record that has not ended yet has no such code: 111 marks the misuse. */
int cli_exit_for_record(const tfs_record_t *rec) {
  switch (rec->state) {
  case TFS_COMPLETED:
    return CLI_EXIT_OK;
  case TFS_CANCELLED:
    return CLI_EXIT_CANCELLED;
  case TFS_LOST:
    return CLI_EXIT_LOST;
  case TFS_FAILED:
    if (rec->signal > 0)
      return 128 + (rec->signal & 127);
    if (rec->exit_code >= 1)
      return rec->exit_code > 255 ? 255 : rec->exit_code;
    if (rec->worker_pid <= 0 && rec->nexits == 0)
      return CLI_EXIT_NOSTART;
    return 1;
  default:
    return CLI_EXIT_SYSTEM;
  }
}

int cli_open_store(const char *verb, const char *state_dir, int create, tfs_store_t **out) {
  char q[96];
  int rc;
  *out = NULL;
  rc = tfs_store_resolve(state_dir, last_store_path, sizeof last_store_path);
  if (rc < 0) {
    last_store_path[0] = 0;
    if (rc == -ENAMETOOLONG) {
      cli_error(verb, "the state directory path is too long; pass a shorter --state-dir");
      return CLI_EXIT_USAGE;
    }
    cli_error(verb,
              "cannot tell where the store is (%s): pass --state-dir DIR or set "
              "TASKFS_STATE_DIR, XDG_STATE_HOME or HOME",
              tfs_strerror(rc));
    return CLI_EXIT_SYSTEM;
  }
  rc =
      create ? tfs_store_open(last_store_path, out) : tfs_store_open_existing(last_store_path, out);
  if (rc == -ENOENT && !create) {
    *out = NULL;
    return CLI_EXIT_OK;
  }
  if (rc < 0) {
    *out = NULL;
    cli_error(verb, "cannot open the store %s: %s; check that it is a directory you may %s",
              cli_quote(last_store_path, q, sizeof q), tfs_strerror(rc), create ? "write" : "read");
    return CLI_EXIT_SYSTEM;
  }
  return CLI_EXIT_OK;
}

int cli_resolve_task(const char *verb, tfs_store_t *store, const char *arg,
                     char id_out[TFS_ID_MAX + 1]) {
  char q[96];
  struct stat st;
  int rc;
  if (!arg || !*arg)
    return cli_usage_error(verb, "the task id or key is empty");
  /* Check the shape first, so a hostile argument never reaches a path and
   * gets the same answer whether or not the store exists. */
  if (!tfs_id_valid(arg) && !tfs_key_valid(arg))
    return cli_usage_error(verb,
                           "'%s' is neither a task id (like mi4x7k2p-3fz9qa) nor a task key "
                           "(1 to %d of A-Z a-z 0-9 . _ : -)",
                           cli_quote(arg, q, sizeof q), TFS_KEY_MAX);
  if (!store) {
    cli_error(verb, "no task '%s': the store %s does not exist yet; 'taskfs ls' lists tasks", arg,
              last_store_path);
    return CLI_EXIT_NOTASK;
  }
  rc = tfs_task_resolve(store, arg, id_out);
  /* The task directory must exist, whatever the resolver did with an
   * id-shaped argument. */
  if (rc == 0 && fstatat(tfs_store_tasks_fd(store), id_out, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    rc = errno == ENOENT ? TFS_ENOTASK : -errno;
  } else if (rc == 0 && !S_ISDIR(st.st_mode)) {
    rc = TFS_ENOTASK;
  }
  if (rc == 0)
    return CLI_EXIT_OK;
  if (rc == TFS_ENOTASK) {
    cli_error(verb, "no task with id or key '%s' in %s; 'taskfs ls' lists tasks", arg,
              tfs_store_path(store));
    return CLI_EXIT_NOTASK;
  }
  if (rc == TFS_EBADID)
    return cli_usage_error(verb, "'%s' is not a valid task id or key", cli_quote(arg, q, sizeof q));
  cli_error(verb, "cannot look up '%s' in %s: %s", arg, tfs_store_path(store), tfs_strerror(rc));
  return cli_exit_for(rc);
}

/* ---- waiting on a task ---------------------------------------------------
 *
 * Both waits watch the task directory with inotify: the supervisor appends
 * to transcript (IN_MODIFY) and replaces record.json by rename (IN_MOVED_TO).
 * Each wait asks only for the events it acts on: the end of a task is always
 * a rename of record.json, so cli_wait_end() does not listen to transcript
 * writes (during a flood of output they would wake it, and make it reparse
 * the record, a thousand times a second); cli_follow() needs them.
 * A 1 s poll covers what inotify cannot see (network file systems, a full
 * inotify queue, a watch limit). SIGINT and SIGTERM are blocked except
 * inside ppoll(), so a signal can never slip in between the check of the
 * flag and the wait. */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) {
  got_signal = sig;
}

typedef struct {
  sigset_t oldmask;
  sigset_t waitmask;
  struct sigaction old_int, old_term, old_pipe;
  int ignored_pipe;
} sig_guard_t;

static void sig_guard_enter(sig_guard_t *g, int ignore_pipe) {
  struct sigaction sa;
  sigset_t block;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal; /* no SA_RESTART: ppoll must return */
  sigemptyset(&sa.sa_mask);
  got_signal = 0;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, &g->oldmask);
  g->waitmask = g->oldmask;
  sigdelset(&g->waitmask, SIGINT);
  sigdelset(&g->waitmask, SIGTERM);
  sigaction(SIGINT, &sa, &g->old_int);
  sigaction(SIGTERM, &sa, &g->old_term);
  g->ignored_pipe = ignore_pipe;
  if (ignore_pipe) {
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &g->old_pipe);
  }
}

static void sig_guard_leave(sig_guard_t *g) {
  /* Unblock first: a pending signal then reaches our handler, not the
   * default action, since it has already been answered. */
  sigprocmask(SIG_SETMASK, &g->oldmask, NULL);
  sigaction(SIGINT, &g->old_int, NULL);
  sigaction(SIGTERM, &g->old_term, NULL);
  if (g->ignored_pipe)
    sigaction(SIGPIPE, &g->old_pipe, NULL);
}

typedef struct {
  int ifd; /* inotify fd, -1 if unavailable: poll only */
} task_watch_t;

/* What cli_wait_end() watches: every state change renames a new
 * record.json into place (IN_MOVED_TO; its temp file's IN_CREATE comes just
 * before), and a pruned or moved task directory ends the wait. */
#define WATCH_STATE (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
/* What cli_follow() watches: the transcript's appends as well. */
#define WATCH_FOLLOW (WATCH_STATE | IN_MODIFY | IN_CLOSE_WRITE)

static void watch_open(tfs_store_t *store, const char *id, uint32_t mask, task_watch_t *w) {
  char path[PATH_MAX];
  w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (w->ifd < 0)
    return;
  if (snprintf(path, sizeof path, "%s/tasks/%s", tfs_store_path(store), id) >= (int)sizeof path ||
      inotify_add_watch(w->ifd, path, mask | IN_DONT_FOLLOW | IN_ONLYDIR) < 0) {
    close(w->ifd);
    w->ifd = -1;
  }
}

static void watch_close(task_watch_t *w) {
  if (w->ifd >= 0)
    close(w->ifd);
  w->ifd = -1;
}

/* Sleeps until the task directory changes, timeout_ms passes, a signal
 * arrives, or (out_fd >= 0) the reader of out_fd goes away. Returns 1 if
 * out_fd reported an error or hang-up, else 0. */
static int watch_wait(task_watch_t *w, const sig_guard_t *g, int64_t timeout_ms, int out_fd) {
  struct pollfd pfd[2];
  struct timespec ts;
  int n = 0, out_i = -1;
  char evbuf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  if (w->ifd >= 0) {
    pfd[n].fd = w->ifd;
    pfd[n].events = POLLIN;
    n++;
  }
  if (out_fd >= 0) {
    /* events = 0: only POLLERR/POLLHUP, which a pipe's write end reports
     * once its reader has closed; a tty or a file reports nothing. */
    pfd[n].fd = out_fd;
    pfd[n].events = 0;
    out_i = n++;
  }
  if (timeout_ms < 0)
    timeout_ms = 0;
  ts.tv_sec = timeout_ms / 1000;
  ts.tv_nsec = (timeout_ms % 1000) * 1000000;
  int rc = ppoll(pfd, (nfds_t)n, &ts, &g->waitmask);
  if (rc <= 0)
    return 0;
  if (w->ifd >= 0 && (pfd[0].revents & POLLIN)) {
    /* Drain the queue: the events only mean "look again". */
    while (read(w->ifd, evbuf, sizeof evbuf) > 0) {
    }
  }
  if (out_i >= 0 && (pfd[out_i].revents & (POLLERR | POLLHUP)))
    return 1;
  return 0;
}

/* Loads a record into *rec. The loader initializes the record itself (an
 * init before it would leak); zeroing first keeps tfs_record_free() safe
 * whatever point the loader failed at. On failure *rec is left empty. */
static int load_fresh(tfs_store_t *store, const char *id, tfs_record_t *rec) {
  memset(rec, 0, sizeof *rec);
  int rc = tfs_task_load(store, id, rec);
  if (rc < 0) {
    tfs_record_free(rec);
    memset(rec, 0, sizeof *rec);
  }
  return rc;
}

int cli_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms, tfs_record_t *rec) {
  sig_guard_t g;
  task_watch_t w;
  int64_t deadline = timeout_ms >= 0 ? tfs_now_ms() + timeout_ms : 0;
  int rc;
  sig_guard_enter(&g, 0);
  watch_open(store, id, WATCH_STATE, &w);
  for (;;) {
    rc = load_fresh(store, id, rec);
    if (rc < 0)
      break;
    if (tfs_state_terminal(rec->state)) {
      rc = 0;
      break;
    }
    if (got_signal) {
      rc = 2;
      break;
    }
    int64_t wait_ms = 1000;
    if (timeout_ms >= 0) {
      int64_t left = deadline - tfs_now_ms();
      if (left <= 0) {
        rc = 1;
        break;
      }
      if (left < wait_ms)
        wait_ms = left;
    }
    tfs_record_free(rec);
    watch_wait(&w, &g, wait_ms, -1);
  }
  watch_close(&w);
  sig_guard_leave(&g);
  return rc;
}

/* Buffered output to a file descriptor that remembers the first error
 * (EPIPE included) instead of raising SIGPIPE. */
typedef struct {
  int fd;
  int err; /* 0 or a positive errno */
  size_t len;
  char buf[1 << 16];
} outbuf_t;

static void out_flush(outbuf_t *o) {
  size_t off = 0;
  while (!o->err && off < o->len) {
    ssize_t n = write(o->fd, o->buf + off, o->len - off);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN) {
        struct pollfd p = {.fd = o->fd, .events = POLLOUT};
        poll(&p, 1, 1000);
        continue;
      }
      o->err = errno;
      break;
    }
    off += (size_t)n;
  }
  o->len = 0;
}

static void out_write(outbuf_t *o, const char *data, size_t len) {
  while (len && !o->err) {
    size_t room = sizeof o->buf - o->len;
    size_t n = len < room ? len : room;
    memcpy(o->buf + o->len, data, n);
    o->len += n;
    data += n;
    len -= n;
    if (o->len == sizeof o->buf)
      out_flush(o);
  }
}

static int follow_line(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  outbuf_t *o = arg;
  (void)lineno;
  out_write(o, line, len);
  if (!partial)
    out_write(o, "\n", 1);
  return o->err != 0;
}

/* The follow loop: read the record first, then drain the transcript, so
 * that once the record reads terminal everything the supervisor wrote
 * before saving it is drained (and the final partial line flushed). */
int cli_follow(tfs_store_t *store, const char *id, int64_t last_n, int fd_out) {
  sig_guard_t g;
  task_watch_t w = {.ifd = -1};
  tfs_follower_t *f = NULL;
  tfs_record_t rec;
  outbuf_t *o;
  int code, rc;

  o = malloc(sizeof *o);
  if (!o) {
    cli_error(NULL, "out of memory");
    return CLI_EXIT_SYSTEM;
  }
  o->fd = fd_out;
  o->err = 0;
  o->len = 0;
  sig_guard_enter(&g, 1);
  rc = tfs_follower_open(store, id, last_n, &f);
  if (rc < 0) {
    cli_error(NULL, "cannot read the transcript of %s: %s", id, tfs_strerror(rc));
    code = cli_exit_for(rc);
    goto out;
  }
  watch_open(store, id, WATCH_FOLLOW, &w);
  for (;;) {
    rc = load_fresh(store, id, &rec);
    if (rc == TFS_ENOTASK) {
      tfs_follower_next(f, 1, follow_line, o);
      out_flush(o);
      cli_error(NULL, "task %s was deleted while following it", id);
      code = CLI_EXIT_NOTASK;
      goto out;
    }
    if (rc < 0) {
      out_flush(o);
      cli_error(NULL, "cannot read the record of %s: %s; 'taskfs show %s' says more", id,
                tfs_strerror(rc), id);
      code = cli_exit_for(rc);
      goto out;
    }
    int ended = tfs_state_terminal(rec.state);
    int64_t n = tfs_follower_next(f, ended, follow_line, o);
    out_flush(o);
    if (o->err) {
      tfs_record_free(&rec);
      if (o->err == EPIPE) {
        code = CLI_EXIT_OK;
      } else {
        cli_error(NULL, "cannot write the transcript of %s: %s", id, strerror(o->err));
        code = CLI_EXIT_SYSTEM;
      }
      goto out;
    }
    if (n < 0) {
      tfs_record_free(&rec);
      cli_error(NULL, "cannot read the transcript of %s: %s", id, tfs_strerror((int)n));
      code = cli_exit_for((int)n);
      goto out;
    }
    if (ended) {
      code = cli_exit_for_record(&rec);
      if (rec.state == TFS_LOST)
        cli_error(NULL,
                  "task %s is lost: its supervisor died without recording an end; the output "
                  "above is all there is",
                  id);
      tfs_record_free(&rec);
      goto out;
    }
    tfs_record_free(&rec);
    if (got_signal) {
      code = CLI_EXIT_CANCELLED; /* 130, as the shell reports an interrupt */
      goto out;
    }
    if (watch_wait(&w, &g, 1000, fd_out)) {
      code = CLI_EXIT_OK; /* the reader went away, like EPIPE */
      goto out;
    }
  }
out:
  if (f)
    tfs_follower_close(f);
  watch_close(&w);
  sig_guard_leave(&g);
  free(o);
  return code;
}

int cli_open_one_task(const char *verb, const char *state_dir, int argc, char **argv, int first,
                      tfs_store_t **store, char id_out[TFS_ID_MAX + 1]) {
  char q[96];
  int code;
  *store = NULL;
  if (first >= argc)
    return cli_usage_error(verb, "which task? give an ID or KEY ('taskfs ls' lists them)");
  if (argc - first > 1)
    return cli_usage_error(verb, "one task at a time; unexpected '%s'",
                           cli_quote(argv[first + 1], q, sizeof q));
  code = cli_open_store(verb, state_dir, 0, store);
  if (code)
    return code;
  code = cli_resolve_task(verb, *store, argv[first], id_out);
  if (code && *store) {
    tfs_store_close(*store);
    *store = NULL;
  }
  return code;
}
