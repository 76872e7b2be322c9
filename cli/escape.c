/* The one way text from a record, a store or a command line reaches a
 * terminal: every byte a terminal could take as a command (C0 controls,
 * DEL, the C1 controls U+0080..U+009F, which some terminals read as CSI
 * and OSC) and every byte that is not valid UTF-8 is written as \xNN, so
 * a forged record cannot set a window title, write the clipboard (OSC 52)
 * or clear the screen of whoever reads it. Printable UTF-8 is kept.
 * Messages (cli_error), ls cells, completion descriptions and the
 * transcript of a foreign store all go through cli_escape(). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* Length of the valid UTF-8 sequence at p (2..4) with avail bytes; 0 if
 * invalid; -1 if it is cut by the end of the buffer (it may be valid). */
static int utf8_len(const unsigned char *p, size_t avail) {
  unsigned c = p[0], cp, min;
  size_t n;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2, cp = c & 0x1f, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, cp = c & 0x0f, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, cp = c & 0x07, min = 0x10000;
  else
    return 0;
  for (size_t i = 1; i < n; i++) {
    if (i >= avail)
      return -1;
    if ((p[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0)
    return 0; /* overlong, surrogate, too large, or a C1 control */
  return (int)n;
}

size_t cli_escape(const char *s, size_t len, unsigned flags, char *out, size_t cap, size_t *olen) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, o = 0;
  if (!cap)
    return 0;
  while (i < len) {
    unsigned c = p[i];
    int n = 1;
    if (c >= 0x80) {
      n = utf8_len(p + i, len - i);
      if (n < 0 && (flags & CLI_ESC_PARTIAL))
        break; /* the rest comes with the next call */
      if (n < 0)
        n = 0;
    }
    int keep =
        n > 1 || (c >= 0x20 && c < 0x7f) || ((flags & CLI_ESC_LINES) && (c == '\n' || c == '\t'));
    if (keep) {
      if (o + (size_t)n >= cap)
        break;
      memcpy(out + o, p + i, (size_t)n);
      o += (size_t)n;
      i += (size_t)n;
      continue;
    }
    if (o + 4 >= cap)
      break;
    out[o++] = '\\';
    out[o++] = 'x';
    out[o++] = hex[c >> 4];
    out[o++] = hex[c & 15];
    i++;
  }
  out[o] = 0;
  if (olen)
    *olen = o;
  return i;
}

const char *cli_quote(const char *s, char *buf, size_t len) {
  size_t n = s ? strlen(s) : 0, max = n > 60 ? 60 : n;
  if (len < 8) {
    if (len)
      buf[0] = 0;
    return buf;
  }
  size_t took = cli_escape(s ? s : "", max, 0, buf, len - 3, NULL);
  if (took < n)
    strcat(buf, "...");
  return buf;
}

/* ---- a transcript through the escape ------------------------------------ */

/* The thread that copies what the verb writes into the pipe to out_fd,
 * escaped; a UTF-8 sequence cut at the end of a read waits for the next. */
struct cli_esc_pipe {
  int rfd, wfd, out_fd;
  pthread_t thread;
};

static int write_all(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

static void *esc_pump(void *arg) {
  struct cli_esc_pipe *e = arg;
  char in[8192], out[4 * sizeof in + 1];
  size_t have = 0;
  for (;;) {
    ssize_t r = read(e->rfd, in + have, sizeof in - have);
    if (r < 0 && errno == EINTR)
      continue;
    unsigned flags = CLI_ESC_LINES | (r > 0 ? CLI_ESC_PARTIAL : 0);
    size_t total = have + (r > 0 ? (size_t)r : 0), olen;
    size_t took = cli_escape(in, total, flags, out, sizeof out, &olen);
    /* A closed reader (| head): closing the pipe gives the writer EPIPE,
     * which the verb takes as an ordinary end. */
    if (write_all(e->out_fd, out, olen))
      break;
    memmove(in, in + took, total - took);
    have = total - took;
    if (r <= 0)
      break;
  }
  close(e->rfd);
  return NULL;
}

int cli_esc_pipe_open(int out_fd, cli_esc_pipe_t **out) {
  int fds[2];
  cli_esc_pipe_t *e = calloc(1, sizeof *e);
  if (!e)
    return -ENOMEM;
  if (pipe2(fds, O_CLOEXEC) < 0) {
    int err = -errno;
    free(e);
    return err;
  }
  e->rfd = fds[0];
  e->wfd = fds[1];
  e->out_fd = out_fd;
  int err = pthread_create(&e->thread, NULL, esc_pump, e);
  if (err) {
    close(fds[0]);
    close(fds[1]);
    free(e);
    return -err;
  }
  *out = e;
  return 0;
}

int cli_esc_pipe_fd(const cli_esc_pipe_t *e) {
  return e->wfd;
}

void cli_esc_pipe_close(cli_esc_pipe_t *e) {
  if (!e)
    return;
  close(e->wfd);
  pthread_join(e->thread, NULL);
  free(e);
}
