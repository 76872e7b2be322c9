/* taskfs logs [-n N] [-f] [ID|KEY] (the newest without one): prints a task's transcript byte for byte
 * (binary output included), its last N lines, or follows it until the task
 * ends. Without -f the transcript is copied as it is (tfs_transcript_copy),
 * so nothing is lost or re-encoded; -f goes through cli_follow(), which
 * `taskfs run --follow` shares. */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs logs [-n N] [-f] [--raw] [--state-dir DIR] [--foreign-store] [ID|KEY]\n"
    "\n"
    "Prints the task's transcript (its stdout and stderr, as captured) exactly;\n"
    "another user's (--foreign-store) with control bytes as \\xNN, unless --raw.\n"
    "Without a task, the newest (a note on stderr names it).\n"
    "\n"
    "  -n, --lines N    only the last N lines (default: all)\n"
    "  -f, --follow     keep printing new lines until the task ends, then exit\n"
    "                   with the task's exit code (completed 0, failed: its code,\n"
    "                   128+N for signal N, 127 never started, 103 not run as a\n"
    "                   task it starts after did not complete; cancelled 130;\n"
    "                   lost 102)\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  --raw            with --foreign-store: the bytes as they are, escapes too\n"
    "  --foreign-store  read another user's store (root), changing nothing in it\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 ok, 100 usage, 101 no such task, 111 system failure; with -f the task's\n"
    "  exit code as above (130 also on Ctrl-C). A closed pipe (| head) ends it\n"
    "  quietly with 0.\n";

/* Prints the whole transcript, or its last last_n lines (last_n >= 0),
 * byte for byte: tfs_transcript_copy, which counts the last lines as every
 * face does (a final line without its newline is one of them). */
static int print_transcript(tfs_store_t *store, const char *id, int64_t last_n, int out_fd) {
  int rc = tfs_transcript_copy(store, id, last_n, out_fd);
  if (rc == 0 || rc == -EPIPE)
    return CLI_EXIT_OK; /* a closed pipe (| head) is an ordinary end */
  cli_error("logs", "cannot print the transcript of task %s: %s", id, tfs_strerror(rc));
  return CLI_EXIT_SYSTEM;
}

int cmd_logs(int argc, char **argv) {
  static const struct option opts[] = {
      {"lines", required_argument, NULL, 'n'},
      {"follow", no_argument, NULL, 'f'},
      {"raw", no_argument, NULL, 'r'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS_READ("logs", usage_text, "n:f", opts);
  int64_t last_n = -1;
  int follow = 0, raw = 0, out_fd = STDOUT_FILENO;
  cli_esc_pipe_t *esc = NULL;
  char id[TFS_ID_MAX + 1];
  char q[96];
  tfs_store_t *store;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 'f')
      follow = 1;
    else if (c == 'r')
      raw = 1;
    else if (cli_parse_i64(optarg, &last_n)) /* -n */
      return cli_usage_error("logs", "-n wants a whole number of lines >= 0, not '%s'",
                             cli_quote(optarg, q, sizeof q));
  }
  if (c < 0)
    return o.code;
  code = cli_open_task_or_newest(&o, argc, argv, optind, &store, id);
  if (code)
    goto out;
  /* A closed pipe is an ordinary end for a log printer: see EPIPE, not
   * SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  /* Another user's transcript may hold escapes meant for our terminal. */
  if (o.foreign && !raw) {
    int err = cli_esc_pipe_open(STDOUT_FILENO, &esc);
    if (err) {
      cli_error("logs", "cannot start the escaping of the transcript: %s", tfs_strerror(err));
      code = CLI_EXIT_SYSTEM;
      goto out;
    }
    out_fd = cli_esc_pipe_fd(esc);
  }
  if (follow)
    code = cli_follow(store, id, last_n, out_fd);
  else
    code = print_transcript(store, id, last_n, out_fd);
  cli_esc_pipe_close(esc);
out:
  if (store)
    tfs_store_close(store);
  return code;
}
