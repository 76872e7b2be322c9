/* taskfs logs [-n N] [-f] ID|KEY: prints a task's transcript byte for byte
 * (binary output included), its last N lines, or follows it until the task
 * ends. Without -f the transcript file is copied as it is, so nothing is
 * lost or re-encoded; -f goes through cli_follow(), which `taskfs run
 * --follow` shares. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs logs [-n N] [-f] [--state-dir DIR] ID|KEY\n"
    "\n"
    "Prints the task's transcript (its stdout and stderr, as captured) exactly.\n"
    "\n"
    "  -n, --lines N    only the last N lines (default: all)\n"
    "  -f, --follow     keep printing new lines until the task ends, then exit\n"
    "                   with the task's exit code (completed 0, failed: its code,\n"
    "                   128+N for signal N, 127 never started; cancelled 130;\n"
    "                   lost 102)\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit codes: 0 ok, 100 usage, 101 no such task, 111 system failure; with -f\n"
    "the task's exit code as above (130 also on Ctrl-C). A closed pipe (| head)\n"
    "ends it quietly with 0.\n";

/* Returns the offset where the last n lines of the open file start; a final
 * line without a newline counts as a line, as in tail(1). */
static int tail_offset(int fd, off_t size, int64_t n, off_t *start) {
  char buf[65536];
  off_t end = size;
  int64_t found = 0;
  if (n == 0 || size == 0) {
    *start = size;
    return 0;
  }
  /* A trailing newline ends the last line; it does not start a new one. */
  char last;
  if (pread(fd, &last, 1, size - 1) != 1)
    return -EIO;
  if (last == '\n')
    end = size - 1;
  while (end > 0) {
    size_t chunk = end < (off_t)sizeof buf ? (size_t)end : sizeof buf;
    off_t at = end - (off_t)chunk;
    ssize_t r = pread(fd, buf, chunk, at);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if ((size_t)r != chunk)
      return -EIO; /* shrank under us */
    for (size_t i = chunk; i-- > 0;) {
      if (buf[i] == '\n' && ++found == n) {
        *start = at + (off_t)i + 1;
        return 0;
      }
    }
    end = at;
  }
  *start = 0;
  return 0;
}

/* Copies the file from start to end (its size when we opened it, so a
 * task writing fast cannot keep us chasing its output) onto stdout.
 * Returns 0, 1 if the reader of stdout went away, or a negative errno. */
static int copy_out(int fd, off_t start, off_t end) {
  static char buf[1 << 17];
  off_t at = start;
  while (at < end) {
    size_t want = end - at < (off_t)sizeof buf ? (size_t)(end - at) : sizeof buf;
    ssize_t r = pread(fd, buf, want, at);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (r == 0)
      return 0;
    at += r;
    for (ssize_t off = 0; off < r;) {
      ssize_t w = write(STDOUT_FILENO, buf + off, (size_t)(r - off));
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return errno == EPIPE ? 1 : -errno;
      }
      off += w;
    }
  }
  return 0;
}

/* Prints the whole transcript, or its last last_n lines (last_n >= 0).
 * tfs_task_openat refuses anything but a regular file. */
static int print_transcript(tfs_store_t *store, const char *id, int64_t last_n) {
  struct stat st;
  off_t start = 0;
  int rc;
  int fd = tfs_task_openat(store, id, "transcript", O_RDONLY, 0);
  if (fd == -ENOENT)
    return CLI_EXIT_OK; /* nothing written yet */
  if (fd < 0) {
    cli_error("logs", "cannot open %s/tasks/%s/transcript: %s", tfs_store_path(store), id,
              tfs_strerror(fd));
    return CLI_EXIT_SYSTEM;
  }
  rc = fstat(fd, &st) ? -errno : 0;
  if (!rc && last_n >= 0)
    rc = tail_offset(fd, st.st_size, last_n, &start);
  if (rc < 0) {
    close(fd);
    cli_error("logs", "cannot read %s/tasks/%s/transcript: %s", tfs_store_path(store), id,
              strerror(-rc));
    return CLI_EXIT_SYSTEM;
  }
  rc = copy_out(fd, start, st.st_size);
  close(fd);
  if (rc < 0) {
    cli_error("logs", "cannot print the transcript of %s: %s", id, strerror(-rc));
    return CLI_EXIT_SYSTEM;
  }
  return CLI_EXIT_OK;
}

int cmd_logs(int argc, char **argv) {
  static const struct option opts[] = {
      {"lines", required_argument, NULL, 'n'},
      {"follow", no_argument, NULL, 'f'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS("logs", usage_text, "n:f", opts);
  int64_t last_n = -1;
  int follow = 0;
  char id[TFS_ID_MAX + 1];
  char q[96];
  tfs_store_t *store;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 'f')
      follow = 1;
    else if (cli_parse_i64(optarg, &last_n)) /* -n */
      return cli_usage_error("logs", "-n wants a whole number of lines >= 0, not '%s'",
                             cli_quote(optarg, q, sizeof q));
  }
  if (c < 0)
    return o.code;
  code = cli_open_one_task("logs", o.state_dir, argc, argv, optind, &store, id);
  if (code)
    goto out;
  if (follow) {
    code = cli_follow(store, id, last_n, STDOUT_FILENO);
  } else {
    /* A closed pipe is an ordinary end for a log printer: see EPIPE, not
     * SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    code = print_transcript(store, id, last_n);
  }
out:
  if (store)
    tfs_store_close(store);
  return code;
}
