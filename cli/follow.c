/* The two waits that several verbs share: waiting for a task's end
 * (`wait`, `cancel --wait`, `run --wait`) and following its transcript
 * (`logs -f`, `run --follow`).
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
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cli/cli.h"

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

/* One follow in progress: where the output goes, the follower, the watch
 * and the signals. */
typedef struct {
  sig_guard_t g;
  task_watch_t w;
  tfs_follower_t *f;
  outbuf_t *o;
} follow_t;

/* A failed write of the output: a reader that went away (EPIPE) is an
 * ordinary end, anything else an error. */
static int write_failed(const outbuf_t *o, const char *id) {
  if (o->err == EPIPE)
    return CLI_EXIT_OK;
  cli_error(NULL, "cannot write the transcript of %s: %s", id, strerror(o->err));
  return CLI_EXIT_SYSTEM;
}

/* One round of the follow loop: read the record first, then drain the
 * transcript, so that once the record reads terminal everything the
 * supervisor wrote before saving it is drained (and the final partial line
 * flushed). Returns -1 to go on, else the exit code the follow ends with. */
static int follow_round(follow_t *fl, tfs_store_t *store, const char *id) {
  tfs_record_t rec;
  int rc = load_fresh(store, id, &rec);
  if (rc == TFS_ENOTASK) {
    tfs_follower_next(fl->f, 1, follow_line, fl->o);
    out_flush(fl->o);
    cli_error(NULL, "task %s was deleted while following it", id);
    return CLI_EXIT_NOTASK;
  }
  if (rc < 0) {
    out_flush(fl->o);
    cli_error(NULL, "cannot read the record of %s: %s; 'taskfs show %s' says more", id,
              tfs_strerror(rc), id);
    return cli_exit_for(rc);
  }
  int ended = tfs_state_terminal(rec.state);
  int64_t n = tfs_follower_next(fl->f, ended, follow_line, fl->o);
  int code = -1;
  out_flush(fl->o);
  if (fl->o->err) {
    code = write_failed(fl->o, id);
  } else if (n < 0) {
    cli_error(NULL, "cannot read the transcript of %s: %s", id, tfs_strerror((int)n));
    code = cli_exit_for((int)n);
  } else if (ended) {
    code = cli_exit_for_record(&rec);
    if (rec.state == TFS_LOST)
      cli_error(NULL,
                "task %s is lost: its supervisor died without recording an end; the output "
                "above is all there is",
                id);
  }
  tfs_record_free(&rec);
  return code;
}

int cli_follow(tfs_store_t *store, const char *id, int64_t last_n, int fd_out) {
  follow_t fl = {.w = {.ifd = -1}};
  int code;
  fl.o = malloc(sizeof *fl.o);
  if (!fl.o) {
    cli_error(NULL, "out of memory");
    return CLI_EXIT_SYSTEM;
  }
  fl.o->fd = fd_out;
  fl.o->err = 0;
  fl.o->len = 0;
  sig_guard_enter(&fl.g, 1);
  int rc = tfs_follower_open(store, id, last_n, &fl.f);
  if (rc < 0) {
    cli_error(NULL, "cannot read the transcript of %s: %s", id, tfs_strerror(rc));
    code = cli_exit_for(rc);
  } else {
    watch_open(store, id, WATCH_FOLLOW, &fl.w);
    while ((code = follow_round(&fl, store, id)) < 0) {
      if (got_signal) {
        code = CLI_EXIT_CANCELLED; /* 130, as the shell reports an interrupt */
        break;
      }
      if (watch_wait(&fl.w, &fl.g, 1000, fd_out)) {
        code = CLI_EXIT_OK; /* the reader went away, like EPIPE */
        break;
      }
    }
  }
  if (fl.f)
    tfs_follower_close(fl.f);
  watch_close(&fl.w);
  sig_guard_leave(&fl.g);
  free(fl.o);
  return code;
}
