/* The stdio transport: one session over stdin/stdout, newline-delimited
 * JSON-RPC, logs on stderr; framing, backpressure and the process's end
 * (stdin EOF, SIGTERM, SIGINT, a stdout that fails).
 *
 * stdin and stdout are libuv streams for pipes, sockets and terminals;
 * anything else (a regular file) is read through threadpool reads
 * (uv_fs_read) and written with plain blocking writes, which never block
 * on a regular file. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/mcp.h"

/* Input is paused while more than HIGH bytes of output wait for the host
 * to read them, and resumed below LOW. */
#define OUTPUT_HIGH (8u << 20)
#define OUTPUT_LOW (1u << 20)
/* At the end, output still unwritten after this long is given up. */
#define FLUSH_TIMEOUT_MS 5000

enum { IO_STREAM, IO_FILE };

typedef struct {
  uv_loop_t *loop;
  mcp_server_t *srv;
  mcp_session_t *sess;

  int in_kind, out_kind;
  union {
    uv_pipe_t pipe;
    uv_tty_t tty;
    uv_tcp_t tcp;
    uv_stream_t stream;
  } in, out;
  uv_fs_t in_req;
  char in_buf[65536];
  int out_open;
  mcp_lines_t lines;

  size_t writes_pending;
  size_t bytes_pending; /* queued on stdout, not yet written */
  int read_paused;      /* input paused until the host reads our output */
  int file_reading;     /* a uv_fs_read on stdin is in flight */
  int failed;           /* stdout failed: input is ignored, the end follows */
  int stopping;         /* no more input is read; uv_stop once output is flushed */
  int exit_code;

  uv_signal_t sigterm, sigint;
  uv_timer_t end_timer; /* defers the end after a failed write, then bounds the flush */
} stdio_t;

static void resume_input(stdio_t *st);
static void stdio_shutdown(stdio_t *st);

static void maybe_stop(stdio_t *st) {
  if (st->stopping && st->writes_pending == 0 && mcp_server_idle(st->srv))
    uv_stop(st->loop);
}

static void on_server_idle(void *arg) {
  maybe_stop(arg);
}

/* ---- output ------------------------------------------------------------ */

static void on_deferred_end(uv_timer_t *t) {
  stdio_shutdown(t->data);
}

/* The host closed our stdout: nobody can hear us any more. The end runs
 * from the loop, not from inside the answer whose write failed. */
static void output_failed(stdio_t *st, const char *why) {
  st->out_open = 0;
  if (st->failed || st->stopping)
    return;
  fprintf(stderr, "taskfs mcp: writing to stdout failed (%s); exiting\n", why);
  st->failed = 1;
  st->exit_code = 1;
  uv_timer_start(&st->end_timer, on_deferred_end, 0, 0);
}

typedef struct {
  uv_write_t req;
  stdio_t *st;
  char *data;
  size_t len;
} write_req_t;

static void on_write(uv_write_t *req, int status) {
  write_req_t *w = (write_req_t *)req;
  stdio_t *st = w->st;
  st->bytes_pending -= w->len;
  free(w->data);
  free(w);
  st->writes_pending--;
  if (st->read_paused && st->bytes_pending <= OUTPUT_LOW)
    resume_input(st);
  if (status < 0)
    output_failed(st, uv_strerror(status));
  maybe_stop(st);
}

static void write_file(stdio_t *st, char *data, size_t len) {
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(1, data + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      output_failed(st, strerror(errno));
      break;
    }
    off += (size_t)n;
  }
  free(data);
  maybe_stop(st);
}

/* The session's way out: one message, one line. Streams take one uv_write
 * per message (libuv queues the rest under backpressure and finishes
 * partial writes). */
static void stdio_send(void *arg, const json_t *id, char *data, size_t len) {
  stdio_t *st = arg;
  if (!st->out_open) {
    free(data);
    return;
  }
  data[len++] = '\n'; /* over the NUL, which the contract lets us have */
  if (st->out_kind == IO_FILE) {
    write_file(st, data, len);
    return;
  }
  write_req_t *w = malloc(sizeof *w);
  if (!w) {
    free(data);
    return;
  }
  w->st = st;
  w->data = data;
  w->len = len;
  uv_buf_t buf = uv_buf_init(data, (unsigned int)len);
  int err = uv_write(&w->req, &st->out.stream, &buf, 1, on_write);
  if (err) {
    fprintf(stderr, "taskfs mcp: writing to stdout failed (%s)\n", uv_strerror(err));
    free(data);
    free(w);
    return;
  }
  st->writes_pending++;
  st->bytes_pending += len;
  /* Backpressure: a host that sends faster than it reads our answers
   * would otherwise grow our memory without bound. */
  if (st->bytes_pending > OUTPUT_HIGH && !st->read_paused && !st->stopping) {
    st->read_paused = 1;
    if (st->in_kind == IO_STREAM)
      uv_read_stop(&st->in.stream);
  }
}

/* ---- the end ------------------------------------------------------------ */

static void on_flush_timeout(uv_timer_t *t) {
  stdio_t *st = t->data;
  if (!mcp_server_idle(st->srv)) {
    /* A launch is still in flight (bounded by its own wait): exiting now
     * could leave its task queued. Look again in a second. */
    uv_timer_start(&st->end_timer, on_flush_timeout, 1000, 0);
    return;
  }
  fprintf(stderr,
          "taskfs mcp: the host is not reading our output; exiting without flushing %zu "
          "message(s)\n",
          st->writes_pending);
  st->exit_code = 1;
  uv_stop(st->loop);
}

/* Stops reading, has the server answer every waiting request with what it
 * has, and stops the loop once the output is flushed. */
static void stdio_shutdown(stdio_t *st) {
  if (st->stopping)
    return;
  /* A host that stopped reading stdout must not keep us alive forever. */
  uv_timer_start(&st->end_timer, on_flush_timeout, FLUSH_TIMEOUT_MS, 0);
  st->stopping = 1;
  if (st->in_kind == IO_STREAM)
    uv_read_stop(&st->in.stream);
  mcp_server_shutdown(st->srv);
  maybe_stop(st);
}

static void on_signal(uv_signal_t *s, int signum) {
  stdio_t *st = s->data;
  if (st->stopping) {
    fprintf(stderr, "taskfs mcp: %s again; exiting now\n", strsignal(signum));
    uv_stop(st->loop);
    return;
  }
  fprintf(stderr, "taskfs mcp: %s; finishing pending output and exiting\n", strsignal(signum));
  stdio_shutdown(st);
}

/* ---- input ---------------------------------------------------------------- */

/* One line of input: exactly one reply for a request (or for input that
 * is not even a valid message), none for a notification. */
static void on_line(void *arg, const char *line, size_t len, size_t oversize) {
  stdio_t *st = arg;
  if (st->stopping || st->failed)
    return;
  if (oversize) {
    mcp_session_error(st->sess, MCP_RPC_INVALID_REQUEST,
                      "message too large: %zu bytes; the limit is %u bytes (send smaller "
                      "requests)",
                      oversize, MCP_LINE_MAX);
    return;
  }
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
    i++;
  if (i == len)
    return; /* blank lines are harmless keep-alives */
  mcp_dispatch_text(st->sess, line, len);
}

static void on_input_eof(stdio_t *st) {
  mcp_lines_finish(&st->lines, on_line, st);
  stdio_shutdown(st);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  stdio_t *st = h->data;
  *buf = uv_buf_init(st->in_buf, sizeof st->in_buf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  stdio_t *st = s->data;
  if (n > 0) {
    if (mcp_lines_feed(&st->lines, buf->base, (size_t)n, on_line, st)) {
      fprintf(stderr, "taskfs mcp: out of memory reading input\n");
      st->exit_code = 1;
      on_input_eof(st);
    }
  } else if (n < 0) {
    if (n != UV_EOF) {
      fprintf(stderr, "taskfs mcp: reading stdin failed (%s)\n", uv_strerror((int)n));
      st->exit_code = 1;
    }
    uv_read_stop(s);
    on_input_eof(st);
  }
}

static void file_read_next(stdio_t *st);

static void on_file_read(uv_fs_t *req) {
  stdio_t *st = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  st->file_reading = 0;
  if (st->stopping)
    return;
  if (n > 0) {
    mcp_lines_feed(&st->lines, st->in_buf, (size_t)n, on_line, st);
    if (!st->stopping && !st->read_paused)
      file_read_next(st);
    return;
  }
  if (n < 0 && n != UV_EOF) {
    fprintf(stderr, "taskfs mcp: reading stdin failed (%s)\n", uv_strerror((int)n));
    st->exit_code = 1;
  }
  on_input_eof(st);
}

static void file_read_next(stdio_t *st) {
  if (st->file_reading)
    return;
  uv_buf_t buf = uv_buf_init(st->in_buf, sizeof st->in_buf);
  st->in_req.data = st;
  st->file_reading = 1;
  int err = uv_fs_read(st->loop, &st->in_req, 0, &buf, 1, -1, on_file_read);
  if (err) {
    st->file_reading = 0;
    fprintf(stderr, "taskfs mcp: reading stdin failed (%s)\n", uv_strerror(err));
    on_input_eof(st);
  }
}

static void resume_input(stdio_t *st) {
  st->read_paused = 0;
  if (st->stopping)
    return;
  if (st->in_kind == IO_STREAM)
    uv_read_start(&st->in.stream, on_alloc, on_read);
  else
    file_read_next(st);
}

/* ---- setup and teardown --------------------------------------------------- */

/* Opens fd as a libuv stream if it is one; returns IO_STREAM or IO_FILE. */
static int open_stdio(stdio_t *st, int fd, void *handle, int readable) {
  uv_handle_type t = uv_guess_handle(fd);
  int err = -1;
  if (t == UV_NAMED_PIPE) {
    uv_pipe_init(st->loop, handle, 0);
    err = uv_pipe_open(handle, fd);
  } else if (t == UV_TTY) {
    err = uv_tty_init(st->loop, handle, fd, readable);
  } else if (t == UV_TCP) {
    uv_tcp_init(st->loop, handle);
    err = uv_tcp_open(handle, fd);
  } else {
    return IO_FILE;
  }
  if (err) {
    /* An opened-but-failed handle still needs closing; fall back to
     * plain file I/O, which works on any fd. */
    uv_close(handle, NULL);
    return IO_FILE;
  }
  ((uv_handle_t *)handle)->data = st;
  return IO_STREAM;
}

static int stdio_start(stdio_t *st) {
  mcp_lines_init(&st->lines, MCP_LINE_MAX);
  st->in_kind = open_stdio(st, 0, &st->in, 1);
  st->out_kind = open_stdio(st, 1, &st->out, 0);
  st->out_open = 1;
  uv_timer_init(st->loop, &st->end_timer);
  st->end_timer.data = st;
  uv_unref((uv_handle_t *)&st->end_timer);
  uv_signal_init(st->loop, &st->sigterm);
  uv_signal_init(st->loop, &st->sigint);
  st->sigterm.data = st->sigint.data = st;
  uv_signal_start(&st->sigterm, on_signal, SIGTERM);
  uv_signal_start(&st->sigint, on_signal, SIGINT);
  if (st->in_kind == IO_FILE) {
    file_read_next(st);
    return 0;
  }
  int err = uv_read_start(&st->in.stream, on_alloc, on_read);
  if (err)
    fprintf(stderr, "taskfs mcp: cannot read stdin (%s)\n", uv_strerror(err));
  return err;
}

/* After the loop stopped with every reply flushed: closes what is left and
 * frees it all. A launch (or a read of stdin) still on the thread pool
 * uses the store and the buffers, so then everything is left to the
 * process's exit. */
static void stdio_free(stdio_t *st) {
  if (!mcp_server_idle(st->srv) || st->file_reading)
    return;
  mcp_session_close(st->sess);
  if (st->in_kind == IO_STREAM)
    uv_close((uv_handle_t *)&st->in, NULL);
  if (st->out_kind == IO_STREAM)
    uv_close((uv_handle_t *)&st->out, NULL);
  uv_close((uv_handle_t *)&st->sigterm, NULL);
  uv_close((uv_handle_t *)&st->sigint, NULL);
  uv_close((uv_handle_t *)&st->end_timer, NULL);
  uv_run(st->loop, UV_RUN_NOWAIT); /* the close callbacks */
  if (uv_loop_close(st->loop))
    return; /* a handle is still open: it may point into st */
  mcp_lines_free(&st->lines);
  mcp_server_free(st->srv);
  free(st);
}

int mcp_serve(const mcp_opts_t *opts) {
  signal(SIGPIPE, SIG_IGN);
  stdio_t *st = calloc(1, sizeof *st);
  if (!st) {
    fprintf(stderr, "taskfs mcp: out of memory\n");
    return 111;
  }
  /* The process's one loop; the server runs on whichever it is given. */
  st->loop = uv_default_loop();
  mcp_server_config_t cfg = {.loop = st->loop,
                             .state_dir = opts->state_dir,
                             .role = "mcp",
                             .on_idle = on_server_idle,
                             .arg = st};
  if (mcp_server_open(&cfg, &st->srv)) {
    free(st);
    return 111;
  }
  st->sess = mcp_session_new(st->srv, stdio_send, st);
  if (!st->sess) {
    fprintf(stderr, "taskfs mcp: out of memory\n");
    mcp_server_free(st->srv);
    free(st);
    return 111;
  }
  if (stdio_start(st))
    return 111; /* handles are open on the loop: left to the exit */
  uv_run(st->loop, UV_RUN_DEFAULT);
  int code = st->exit_code;
  stdio_free(st);
  return code;
}
