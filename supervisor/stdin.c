/* The worker's stdin, for a task started with one (`taskfs run --stdin`):
 * the supervisor holds the task's stdin FIFO (tfs_stdin_open: writers are
 * `taskfs send`, the mount's stdin file) and copies what arrives into a
 * pipe whose other end is the worker's fd 0. The copy goes through one
 * 64 KiB buffer: while the worker does not read, the pipe fills, the
 * buffer fills, the FIFO is no longer read, and writers wait (or time
 * out); memory stays bounded. Text sent before the worker starts (the task
 * waits in its queue) waits in the FIFO and the buffer. The pipe is made
 * for each worker; the end of stdin (a control request) closes it. */
#include "supervisor/sched.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void feed(sup_sched_t *ss);

static void on_fifo(uv_poll_t *h, int status, int events) {
  feed(h->data);
}

static void on_writable(uv_poll_t *h, int status, int events) {
  feed(h->data);
}

/* Polls the FIFO while the buffer has room, the pipe while it has data. */
static void arm(sup_sched_t *ss) {
  int want_fifo = ss->fifo >= 0 && ss->len < sizeof ss->buf;
  if (want_fifo != ss->fifo_on) {
    if (want_fifo)
      uv_poll_start(&ss->fifo_poll, UV_READABLE, on_fifo);
    else
      uv_poll_stop(&ss->fifo_poll);
    ss->fifo_on = want_fifo;
  }
  int want_wr = ss->wr >= 0 && ss->len > 0;
  if (want_wr != ss->wr_on) {
    if (want_wr)
      uv_poll_start(ss->wr_poll, UV_WRITABLE, on_writable);
    else
      uv_poll_stop(ss->wr_poll);
    ss->wr_on = want_wr;
  }
}

static void free_handle(uv_handle_t *h) {
  free(h);
}

/* The worker's end is gone (it exited, or closed its stdin). Each pipe has
 * a poll handle of its own: the next worker's may be made before the
 * close of this one is done. */
static void close_pipe(sup_sched_t *ss) {
  if (ss->wr < 0)
    return;
  if (ss->wr_poll && !uv_is_closing((uv_handle_t *)ss->wr_poll))
    uv_close((uv_handle_t *)ss->wr_poll, free_handle);
  ss->wr_poll = NULL;
  ss->wr_on = 0;
  close(ss->wr);
  ss->wr = -1;
}

static void feed(sup_sched_t *ss) {
  for (;;) {
    if (ss->fifo >= 0 && ss->len < sizeof ss->buf) {
      ssize_t r = read(ss->fifo, ss->buf + ss->len, sizeof ss->buf - ss->len);
      if (r > 0)
        ss->len += (size_t)r;
    }
    if (ss->wr < 0 || !ss->len)
      break;
    ssize_t w = write(ss->wr, ss->buf, ss->len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno == EAGAIN)
      break;
    if (w <= 0) {
      /* EPIPE: the worker will not read what is left; the next one gets
       * what comes after. */
      ss->len = 0;
      close_pipe(ss);
      break;
    }
    memmove(ss->buf, ss->buf + w, ss->len - (size_t)w);
    ss->len -= (size_t)w;
  }
  arm(ss);
}

void sup_stdin_init(sup_t *s) {
  sup_sched_t *ss = s->sched;
  if (!s->rec.with_stdin)
    return;
  ss->fifo = tfs_stdin_open(s->store, s->id);
  if (ss->fifo < 0) {
    sup_log(s, "cannot make the task's stdin (%s); the worker reads /dev/null",
            tfs_strerror(ss->fifo));
    ss->fifo = -1;
    return;
  }
  uv_poll_init(&s->loop, &ss->fifo_poll, ss->fifo);
  ss->fifo_poll.data = ss;
  arm(ss);
}

int sup_stdin_pipe(sup_t *s, char *why, size_t whylen) {
  int p[2];
  s->stdin_rd = -1;
  if (!s->sched || s->sched->fifo < 0)
    return 0;
  if (pipe2(p, O_CLOEXEC) < 0) {
    snprintf(why, whylen, "cannot start '%s': no pipe for its stdin (%s)", s->rec.argv[0],
             strerror(errno));
    return -1;
  }
  close_pipe(s->sched); /* the last worker's, if it is still open */
  s->stdin_rd = p[0];
  s->sched->wr = p[1];
  return 0;
}

void sup_stdin_forked(sup_t *s) {
  sup_sched_t *ss = s->sched;
  if (s->stdin_rd < 0)
    return;
  close(s->stdin_rd);
  s->stdin_rd = -1;
  fcntl(ss->wr, F_SETFL, O_NONBLOCK);
  if (!(ss->wr_poll = malloc(sizeof *ss->wr_poll)) ||
      uv_poll_init(&s->loop, ss->wr_poll, ss->wr)) {
    free(ss->wr_poll);
    ss->wr_poll = NULL;
    close(ss->wr);
    ss->wr = -1;
    sup_log(s, "cannot feed the worker's stdin: it reads its end");
    return;
  }
  ss->wr_poll->data = ss;
  feed(ss);
}

void sup_stdin_eof(sup_t *s) {
  if (s->sched)
    close_pipe(s->sched);
}

void sup_stdin_close(sup_t *s) {
  sup_sched_t *ss = s->sched;
  if (!ss || ss->fifo < 0)
    return;
  close_pipe(ss);
  tfs_task_file_remove(s->store, s->id, TFS_FILE_STDIN);
}
