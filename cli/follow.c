/* The two waits that several verbs share: waiting for a task's end
 * (`wait`, `cancel --wait`, `run --wait`) and following its transcript
 * (`logs -f`, `run --follow`). The mechanisms are core's: the end is
 * tfs_task_wait_end() (which settles a task read as lost), the follow a
 * core follower woken by a core watch (the record's renames and the
 * transcript's appends at once, a tick for what no file shows). What is
 * left here is the command line's part: SIGINT and SIGTERM are blocked
 * except inside the core's ppoll() (its signal mask), so a signal can
 * never slip in between a check and the wait, and the output. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* The handler only has to exist: a signal it takes ends the core's ppoll()
 * with EINTR, which is how a wait learns of it. No SA_RESTART. */
static void on_signal(int sig) {
  (void)sig;
}

typedef struct {
  sigset_t oldmask;
  sigset_t waitmask; /* the mask inside the waits: SIGINT and SIGTERM let through */
  struct sigaction old_int, old_term, old_pipe;
  int ignored_pipe;
} sig_guard_t;

static void sig_guard_enter(sig_guard_t *g, int ignore_pipe) {
  struct sigaction sa;
  sigset_t block;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
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

int cli_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms, tfs_record_t *rec) {
  sig_guard_t g;
  sig_guard_enter(&g, 0);
  int rc = tfs_task_wait_end(store, id, timeout_ms, &g.waitmask, rec);
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
  tfs_watch_t *w;
  tfs_follower_t *f;
  outbuf_t *o;
} follow_t;

/* A failed write of the output: a reader that went away (EPIPE) is an
 * ordinary end, anything else an error. */
static int write_failed(const outbuf_t *o, const char *id) {
  if (o->err == EPIPE)
    return CLI_EXIT_OK;
  cli_error(NULL, "cannot write the transcript of task %s: %s", id, strerror(o->err));
  return CLI_EXIT_SYSTEM;
}

/* One round of the follow loop: read the record first, then drain the
 * transcript, so that once the record reads terminal everything the
 * supervisor wrote before saving it is drained (and the final partial line
 * flushed). Returns -1 to go on, else the exit code the follow ends with. */
static int follow_round(follow_t *fl, tfs_store_t *store, const char *id) {
  tfs_record_t rec;
  int rc = tfs_task_load(store, id, &rec);
  if (rc == TFS_ENOTASK) {
    tfs_follower_next(fl->f, 1, follow_line, fl->o);
    out_flush(fl->o);
    cli_error(NULL, "task %s was deleted while following it", id);
    return CLI_EXIT_NOTASK;
  }
  if (rc < 0) {
    tfs_record_free(&rec);
    out_flush(fl->o);
    cli_error(NULL, "cannot read the record of %s: %s; 'taskfs show %s' says more", id,
              tfs_strerror(rc), id);
    return cli_exit_for(rc);
  }
  int ended = tfs_state_terminal(rec.state);
  /* While it runs, a line without its newline is shown as far as it is
   * written (a prompt: the supervisor writes one after a short quiet). */
  int64_t n = tfs_follower_next(fl->f, ended ? 1 : 2, follow_line, fl->o);
  int code = -1;
  out_flush(fl->o);
  if (fl->o->err) {
    code = write_failed(fl->o, id);
  } else if (n < 0) {
    cli_error(NULL, "cannot read the transcript of task %s: %s", id, tfs_strerror((int)n));
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

/* Follows until the task has ended and its output is drained, a signal,
 * or the reader of the output went away. */
static int follow_loop(follow_t *fl, tfs_store_t *store, const char *id, int fd_out) {
  int code;
  tfs_watch_add(fl->w, id, TFS_WATCH_STATE | TFS_WATCH_OUTPUT); /* else the tick alone */
  while ((code = follow_round(fl, store, id)) < 0) {
    int r = tfs_watch_wait(fl->w, -1, &fl->g.waitmask, fd_out, NULL, NULL);
    if (r == -EINTR)
      return CLI_EXIT_CANCELLED; /* 130, as the shell reports an interrupt */
    if (r == (int)TFS_WATCH_HANGUP)
      return CLI_EXIT_OK; /* the reader went away, like EPIPE */
  }
  return code;
}

int cli_follow(tfs_store_t *store, const char *id, int64_t last_n, int fd_out) {
  follow_t fl = {0};
  int code;
  fl.o = malloc(sizeof *fl.o);
  if (!fl.o || tfs_watch_open(store, &fl.w)) {
    free(fl.o);
    cli_error(NULL, "out of memory");
    return CLI_EXIT_SYSTEM;
  }
  fl.o->fd = fd_out;
  fl.o->err = 0;
  fl.o->len = 0;
  sig_guard_enter(&fl.g, 1);
  int rc = tfs_follower_open(store, id, last_n, &fl.f);
  if (rc < 0) {
    cli_error(NULL, "cannot read the transcript of task %s: %s", id, tfs_strerror(rc));
    code = cli_exit_for(rc);
  } else {
    code = follow_loop(&fl, store, id, fd_out);
  }
  if (fl.f)
    tfs_follower_close(fl.f);
  tfs_watch_close(fl.w);
  sig_guard_leave(&fl.g);
  free(fl.o);
  return code;
}
