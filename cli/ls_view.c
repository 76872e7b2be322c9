/* How `taskfs ls` (and `queue ls`) look on a terminal: colours (--color,
 * NO_COLOR), the terminal's width, text cut to a width with "…", and the
 * times a row shows. Only presentation: what is shown is the core's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/ls_view.h"

/* The words of --color, indexed by CLI_COLOR_*. */
static const char *const color_names[] = {"auto", "always", "never"};

const char *cli_color_name(unsigned i) {
  return i < sizeof color_names / sizeof *color_names ? color_names[i] : "unknown";
}

int cli_color_parse(const char *arg, int *mode) {
  for (unsigned i = 0; i < sizeof color_names / sizeof *color_names; i++)
    if (!strcmp(arg, color_names[i])) {
      *mode = (int)i;
      return 0;
    }
  return -1;
}

/* auto: on a terminal, unless NO_COLOR is set to anything (no-color.org);
 * always and never are the user's word, over NO_COLOR. */
int cli_color_on(int mode, int fd) {
  if (mode != CLI_COLOR_AUTO)
    return mode == CLI_COLOR_ALWAYS;
  const char *nc = getenv("NO_COLOR");
  if (nc && *nc)
    return 0;
  const char *term = getenv("TERM");
  return isatty(fd) && !(term && !strcmp(term, "dumb"));
}

size_t cli_term_cols(int fd) {
  struct winsize ws;
  if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 0;
}

const char *cli_state_color(tfs_state_t s) {
  switch (s) {
  case TFS_RUNNING:
    return "\033[36m"; /* cyan */
  case TFS_COMPLETED:
    return "\033[32m"; /* green */
  case TFS_FAILED:
    return "\033[31m"; /* red */
  case TFS_CANCELLED:
  case TFS_PAUSED:
    return "\033[33m"; /* yellow */
  case TFS_LOST:
    return "\033[35m"; /* magenta */
  default:
    return "\033[34m"; /* blue: queued */
  }
}

size_t cli_text_cols(const char *s) {
  size_t cols = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xc0) != 0x80)
      cols++;
  return cols;
}

void cli_put_cell(FILE *out, const char *s, size_t width, int pad, int right) {
  size_t cols = cli_text_cols(s);
  if (width && cols > width) {
    /* Cut on a character, one column left for the "…". */
    size_t used = 0, i = 0;
    for (; s[i]; i++)
      if (((unsigned char)s[i] & 0xc0) != 0x80 && used++ == width - 1)
        break;
    fwrite(s, 1, i, out);
    fputs("\xe2\x80\xa6", out);
    return;
  }
  size_t fill = width > cols ? width - cols : 0;
  if (right && pad)
    for (size_t i = 0; i < fill; i++)
      fputc(' ', out);
  fputs(s, out);
  if (!right && pad)
    for (size_t i = 0; i < fill; i++)
      fputc(' ', out);
}

void cli_fmt_when(int64_t ms, int64_t now, int absolute, char *buf, size_t len) {
  if (!ms) {
    snprintf(buf, len, "-");
    return;
  }
  if (absolute) {
    char t[TFS_TIME_BUF];
    snprintf(buf, len, "%s", tfs_time_format_local(ms, t));
    return;
  }
  int64_t s = now > ms ? (now - ms) / 1000 : 0;
  if (s < 60)
    snprintf(buf, len, "%llds ago", (long long)s);
  else if (s < 3600)
    snprintf(buf, len, "%lldm ago", (long long)(s / 60));
  else if (s < 86400)
    snprintf(buf, len, "%lldh ago", (long long)(s / 3600));
  else
    snprintf(buf, len, "%lldd ago", (long long)(s / 86400));
}
