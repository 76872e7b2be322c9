/* taskfs send ID TEXT: writes TEXT (and a newline) to the stdin of a task
 * started with `taskfs run --stdin`, through the FIFO its supervisor holds
 * (tfs_stdin_write); --eof closes the worker's stdin instead. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

#define SEND_TIMEOUT_MS 10000 /* while the worker does not read */

static const char usage_text[] =
    "usage: taskfs send [-n] [--state-dir DIR] ID|KEY TEXT...\n"
    "       taskfs send --eof [--state-dir DIR] ID|KEY\n"
    "\n"
    "Writes TEXT to the stdin of a task started with 'taskfs run --stdin'\n"
    "(several TEXT arguments are joined by spaces, as echo does), followed by a\n"
    "newline. Text sent while the task waits for its queue reaches it when it\n"
    "starts. The same as 'echo TEXT > MNT/tasks/ID/stdin' on a mount.\n"
    "\n"
    "  -n               no newline after TEXT\n"
    "  --eof            close the task's stdin: the command reads its end\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 written, 100 usage (also: the task has no stdin, or has ended), 101 no\n"
    "  such task, 111 system failure, 124 the command did not read for 10 s.\n";

/* TEXT... joined by spaces, and a newline unless -n. */
static char *join(int argc, char **argv, int first, int newline, size_t *len) {
  size_t n = 1;
  for (int i = first; i < argc; i++)
    n += strlen(argv[i]) + 1;
  char *s = malloc(n + 1), *p = s;
  if (!s)
    return NULL;
  for (int i = first; i < argc; i++) {
    size_t l = strlen(argv[i]);
    if (i > first)
      *p++ = ' ';
    memcpy(p, argv[i], l);
    p += l;
  }
  if (newline)
    *p++ = '\n';
  *len = (size_t)(p - s);
  return s;
}

/* The words for what send could not do; an exit code. */
static int refused(tfs_store_t *store, const char *id, int err, size_t written) {
  if (err == TFS_ENOSTDIN)
    cli_error("send",
              "task %s has no stdin: it was started without --stdin (its command reads "
              "/dev/null)",
              id);
  else if (err == TFS_EFINISHED)
    cli_error("send", "task %s has ended; nothing reads its stdin any more", id);
  else if (err == -ETIMEDOUT || err == -EAGAIN)
    cli_error("send", "task %s did not read its stdin for %d s; %zu bytes were written", id,
              SEND_TIMEOUT_MS / 1000, written);
  else
    cli_error("send", "cannot write to the stdin of task %s in %s: %s", id, tfs_store_path(store),
              tfs_strerror(err));
  if (err == TFS_ENOSTDIN || err == TFS_EFINISHED)
    return CLI_EXIT_USAGE;
  return err == -ETIMEDOUT || err == -EAGAIN ? CLI_EXIT_TIMEOUT : cli_exit_for(err);
}

int cmd_send(int argc, char **argv) {
  static const struct option opts[] = {{"eof", no_argument, NULL, 'e'}, {NULL, 0, NULL, 0}};
  cli_opts_t o = CLI_OPTS("send", usage_text, "n", opts);
  char id[TFS_ID_MAX + 1], who[96];
  int c, code, newline = 1, eof = 0;
  /* In order: TEXT may begin with '-'. */
  o.flags = CLI_OPT_IN_ORDER;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    if (c == 'n')
      newline = 0;
    else
      eof = 1;
  if (c < 0)
    return o.code;
  int first = optind;
  if (first >= argc)
    return cli_usage_error("send", "which task? give ID and TEXT: taskfs send ID 'yes'");
  if (!eof && first + 1 >= argc)
    return cli_usage_error("send", "what to send? give TEXT after the task (or --eof)");
  if (eof && first + 1 < argc)
    return cli_usage_error("send", "--eof sends no TEXT");
  tfs_store_t *store;
  if ((code = cli_open_one_task(&o, first + 1, argv, first, &store, id)))
    return code;
  size_t len = 0, written = 0;
  int err;
  if (eof) {
    tfs_control_t ctl = {.action = TFS_CONTROL_EOF};
    snprintf(who, sizeof who, "cli pid %ld uid %ld", (long)getpid(), (long)getuid());
    err = tfs_control_request(store, id, &ctl, who);
  } else {
    char *text = join(argc, argv, first + 1, newline, &len);
    err = text ? tfs_stdin_write(store, id, text, len, SEND_TIMEOUT_MS, &written) : -ENOMEM;
    free(text);
  }
  code = err ? refused(store, id, err, written) : CLI_EXIT_OK;
  tfs_store_close(store);
  return code;
}
