/* The worker's output pipes, read by libuv straight into the capture's
 * line buffers (capture.c decides what goes to the transcript when): one
 * pipe for the merged stream, two with stderr split.
 *
 * With two, while one stream is in the middle of a long line the other one is not
 * read at all, so its bytes wait in its pipe. That wait is bounded: if the
 * held stream has output waiting for HOLD_MAX_MS the long line is cut (a
 * writer blocked on the full pipe may be what keeps the long line from
 * ending). A pipe still open once the worker's tree is gone (a process
 * outside the tree holds it) is closed after DRAIN_MS. A line left without
 * its newline is written after PARTIAL_QUIET_MS of quiet (a prompt).
 *
 * The merged stream (the default: one pipe) is direct: libuv only says
 * when its pipe is readable (a uv_poll_t) and the capture splices the
 * bytes into the transcript (sup_capture_splice), without copying them
 * through this process; a prompt is there at once, and after the same
 * quiet its start goes to the classifier. When splicing cannot go on (a
 * full disk, a file system without it) the bytes are read into the line
 * buffer by hand, as libuv would.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define HOLD_MAX_MS 1000 /* a stream held back by a long line waits at most this */
#define DRAIN_MS 1000    /* pipes still open once the tree is gone */
/* A flood (a read that filled all the room it was given) grows the pipe to
 * this, once: the writer then runs ahead while the supervisor writes.
 * Only then: an unprivileged user's pipe pages are limited
 * (fs.pipe-user-pages-soft), and past the limit every new pipe of that
 * user gets one page. */
#define FLOOD_PIPE (1 << 20)
/* A line without a newline (a prompt) goes to the transcript once its
 * stream has been quiet this long, and at the latest PARTIAL_MAX_MS after
 * its first unwritten byte (dots of progress every few ms). */
#define PARTIAL_QUIET_MS 50
#define PARTIAL_MAX_MS 500

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf);
static void on_direct(uv_poll_t *h, int status, int events);
static void update_reading(sup_t *s);

static int stream_of(sup_t *s, uv_handle_t *h) {
  return h == (uv_handle_t *)&s->pipe[SUP_STDERR] ? SUP_STDERR : SUP_STDOUT;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  sup_t *s = h->data;
  char *p;
  size_t n;
  sup_capture_space(&s->cap, stream_of(s, h), &p, &n);
  buf->base = p;
  buf->len = n;
}

/* Bytes waiting for stream i: in its pipe, or kept back in its buffer. */
static int stream_waiting(sup_t *s, int i) {
  int n = 0;
  uv_os_fd_t fd;
  if (s->cap.s[i].len)
    return 1;
  if (s->pipe_open[i] && uv_fileno((uv_handle_t *)&s->pipe[i], &fd) == 0 &&
      ioctl(fd, FIONREAD, &n) == 0)
    return n > 0;
  return 0;
}

/* A stream has been held back for HOLD_MAX_MS behind the other stream's
 * long line. If it has output waiting, its writer may be blocked on the
 * full pipe, and the long line may never end because of that (one process
 * writing both): the long line is cut (a '\n' the program did not write)
 * so that the waiting stream can go on. */
static void on_hold_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  int h = sup_capture_holder(&s->cap);
  if (h < 0)
    return;
  if (!stream_waiting(s, !h)) {
    uv_timer_start(&s->hold_timer, on_hold_timer, HOLD_MAX_MS, 0);
    return;
  }
  if (!s->cap.cuts)
    sup_log(s, "a long line on %s held %s back for %d ms: cut it (more cuts are not logged)",
            h == SUP_STDERR ? "stderr" : "stdout", h == SUP_STDERR ? "stdout" : "stderr",
            HOLD_MAX_MS);
  sup_capture_cut(&s->cap);
  sup_mark_dirty(s);
  update_reading(s);
}

/* Writes what a stream kept back while the holder changes, until it stays
 * the same; returns the holder (-1: none). */
static int settle_holder(sup_t *s) {
  int h;
  for (int round = 0; round < 3; round++) {
    h = sup_capture_holder(&s->cap);
    for (int i = 0; i < 2; i++)
      if (h < 0 || h == i)
        sup_capture_pending(&s->cap, i);
    if (sup_capture_holder(&s->cap) == h)
      break;
  }
  return sup_capture_holder(&s->cap);
}

/* Reads only the streams that may write now: while one stream is in the
 * middle of a long line the other one waits, its pipe unread. Nothing
 * else pauses reading: the capture never waits for the counter. */
static void update_reading(sup_t *s) {
  int h = settle_holder(s);
  /* Only a stream that may have output waits behind the holder: with the
   * merged stream there is none, and no hold to time. */
  if (h < 0 || (!s->pipe_open[!h] && !s->cap.s[!h].len))
    uv_timer_stop(&s->hold_timer);
  else if (!uv_is_active((uv_handle_t *)&s->hold_timer))
    uv_timer_start(&s->hold_timer, on_hold_timer, HOLD_MAX_MS, 0);
  for (int i = 0; i < 2; i++) {
    if (!s->pipe_open[i] || s->pipe_closing[i])
      continue;
    int want = h < 0 || h == i;
    if (i == SUP_STDOUT && s->direct) {
      if (want && !s->reading[i])
        uv_poll_start(&s->direct_poll, UV_READABLE, on_direct);
      else if (!want && s->reading[i])
        uv_poll_stop(&s->direct_poll);
    } else if (want && !s->reading[i]) {
      uv_read_start((uv_stream_t *)&s->pipe[i], on_alloc, on_read);
    } else if (!want && s->reading[i]) {
      uv_read_stop((uv_stream_t *)&s->pipe[i]);
    }
    s->reading[i] = want;
  }
}

static void on_pipe_closed(uv_handle_t *h) {
  sup_t *s = h->data;
  s->pipe_open[stream_of(s, h)] = 0;
  sup_check_generation_end(s);
}

/* The direct pipe's poll is closed before the pipe (which closes the fd),
 * and the pipe counts as closed only then: the next worker's poll reuses
 * the handle. */
static void on_poll_closed(uv_handle_t *h) {
  sup_t *s = h->data;
  uv_close((uv_handle_t *)&s->pipe[SUP_STDOUT], on_pipe_closed);
}

static void close_pipe(sup_t *s, int i) {
  if (!s->pipe_open[i] || s->pipe_closing[i])
    return;
  s->pipe_closing[i] = 1;
  s->reading[i] = 0;
  if (i == SUP_STDOUT && s->direct) {
    uv_poll_stop(&s->direct_poll);
    sup_capture_eof(&s->cap, i);
    uv_close((uv_handle_t *)&s->direct_poll, on_poll_closed);
    return;
  }
  uv_read_stop((uv_stream_t *)&s->pipe[i]);
  sup_capture_eof(&s->cap, i);
  uv_close((uv_handle_t *)&s->pipe[i], on_pipe_closed);
}

/* After a read that filled the room it was given: grows pipe i to
 * FLOOD_PIPE, once per pipe (best effort). */
static void grow_pipe(sup_t *s, int i) {
  uv_os_fd_t fd;
  if (s->pipe_grown[i])
    return;
  s->pipe_grown[i] = 1;
  if (uv_fileno((uv_handle_t *)&s->pipe[i], &fd) == 0)
    (void)fcntl(fd, F_SETPIPE_SZ, FLOOD_PIPE);
}

/* Writes what each stream holds of an unfinished line: the followers, the
 * mount and the viewer see a prompt that waits for its answer. */
static void on_partial_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  int wrote = 0;
  s->partial_since_ms = 0;
  for (int i = 0; i < 2; i++)
    wrote |= sup_capture_flush_partial(&s->cap, i);
  if (wrote)
    sup_mark_dirty(s);
  update_reading(s);
}

/* After a read: (re)arms the quiet timer while a stream holds part of a
 * line, PARTIAL_QUIET_MS from now but no later than PARTIAL_MAX_MS after
 * the first byte still waiting. */
static void arm_partial(sup_t *s) {
  const sup_cap_stream_t *c = s->cap.s;
  if (!(c[0].len && c[1].eof) && !(c[1].len && c[0].eof)) {
    s->partial_since_ms = 0;
    uv_timer_stop(&s->partial_timer);
    return;
  }
  int64_t now = (int64_t)uv_now(&s->loop);
  if (!s->partial_since_ms)
    s->partial_since_ms = now;
  int64_t due = now + PARTIAL_QUIET_MS;
  if (due > s->partial_since_ms + PARTIAL_MAX_MS)
    due = s->partial_since_ms + PARTIAL_MAX_MS;
  uv_timer_start(&s->partial_timer, on_partial_timer, (uint64_t)(due > now ? due - now : 0), 0);
}

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf) {
  sup_t *s = h->data;
  int i = stream_of(s, (uv_handle_t *)h);
  if (nread > 0) {
    if ((size_t)nread == buf->len)
      grow_pipe(s, i);
    sup_capture_commit(&s->cap, i, (size_t)nread);
    sup_mark_dirty(s);
    arm_partial(s);
  } else if (nread == UV_ENOBUFS)
    ; /* held back: update_reading stops this pipe */
  else if (nread < 0) {
    close_pipe(s, i);
    sup_mark_dirty(s); /* a final partial line may have been written */
  }
  update_reading(s);
}

/* After PARTIAL_QUIET_MS without output on the direct pipe: a line left
 * open in the transcript (a prompt) goes to the classifier as it stands. */
static void on_quiet_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  sup_counter_flush(&s->cap.cnt);
}

/* One read of the direct pipe through the line buffer (splicing is off):
 * what on_read does with libuv's reads. */
static ssize_t read_buffered(sup_t *s, int fd) {
  char *p;
  size_t n;
  sup_capture_space(&s->cap, SUP_STDOUT, &p, &n);
  ssize_t r = read(fd, p, n);
  if (r < 0)
    return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
  if (r > 0) {
    if ((size_t)r == n)
      grow_pipe(s, SUP_STDOUT);
    sup_capture_commit(&s->cap, SUP_STDOUT, (size_t)r);
  }
  return r;
}

/* The direct pipe is readable: moves what it holds, a bounded number of
 * rounds so that other events get their turn, until it is empty or ends. */
static void on_direct(uv_poll_t *h, int status, int events) {
  sup_t *s = h->data;
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&s->pipe[SUP_STDOUT], &fd))
    return;
  ssize_t n = -EAGAIN;
  for (int round = 0; round < 64; round++) {
    n = sup_capture_splice(&s->cap, fd);
    if (n == -ENOTSUP)
      n = read_buffered(s, fd);
    if (n >= 64 * 1024)
      grow_pipe(s, SUP_STDOUT);
    if (n <= 0)
      break;
  }
  sup_mark_dirty(s);
  if (n != -EAGAIN && n <= 0) {
    close_pipe(s, SUP_STDOUT); /* its end, or an error reading it */
  } else if (s->cap.spliced) {
    uv_timer_start(&s->quiet_timer, on_quiet_timer, PARTIAL_QUIET_MS, 0);
  }
  arm_partial(s);
  update_reading(s);
}

static void on_drain_timer(uv_timer_t *t) {
  sup_t *s = t->data;
  /* Some process outside the tree still holds a pipe: stop waiting. */
  for (int i = 0; i < 2; i++)
    close_pipe(s, i);
  update_reading(s);
}

void sup_pipes_init(sup_t *s) {
  uv_timer_init(&s->loop, &s->hold_timer);
  uv_timer_init(&s->loop, &s->drain_timer);
  uv_timer_init(&s->loop, &s->partial_timer);
  uv_timer_init(&s->loop, &s->quiet_timer);
  s->hold_timer.data = s->drain_timer.data = s->partial_timer.data = s->quiet_timer.data = s;
}

void sup_pipes_open(sup_t *s, int out_fd, int err_fd) {
  int fds[2] = {out_fd, err_fd};
  s->direct = 0;
  for (int i = 0; i < 2; i++) {
    s->pipe_open[i] = s->reading[i] = s->pipe_grown[i] = s->pipe_closing[i] = 0;
    if (fds[i] < 0) {
      /* The merged stream: stderr has no pipe of its own. */
      s->cap.s[i].eof = 1;
      continue;
    }
    uv_pipe_init(&s->loop, &s->pipe[i], 0);
    s->pipe[i].data = s;
    uv_pipe_open(&s->pipe[i], fds[i]);
    s->pipe_open[i] = 1;
    s->reading[i] = 0;
  }
  /* The merged stream alone: direct (see the top). */
  if (err_fd < 0 && out_fd >= 0 && uv_poll_init(&s->loop, &s->direct_poll, out_fd) == 0) {
    s->direct_poll.data = s;
    s->direct = 1;
  }
  update_reading(s);
}

int sup_pipes_wait(sup_t *s) {
  if (!s->pipe_open[0] && !s->pipe_open[1])
    return 0;
  if (!uv_is_active((uv_handle_t *)&s->drain_timer))
    uv_timer_start(&s->drain_timer, on_drain_timer, DRAIN_MS, 0);
  return 1;
}

void sup_pipes_eof(sup_t *s) {
  for (int i = 0; i < 2; i++)
    if (s->pipe_open[i])
      sup_capture_eof(&s->cap, i);
}
