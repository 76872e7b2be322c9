/* Starting a daemon that reports its readiness (mount, serve): the parent
 * forks, the child leaves the terminal's session and does its work, and
 * writes "ok\n" then what the parent is to print, or "error: ..." on a
 * pipe; the parent returns only once it has read the report, so every
 * error reaches the terminal and `taskfs serve && curl ...` is race-free. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

/* Reads the child's report until it closes the pipe. */
static void read_report(int fd, char *text, size_t size) {
  size_t len = 0;
  ssize_t n;
  while (len < size - 1 &&
         ((n = read(fd, text + len, size - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0)
      len += (size_t)n;
  text[len] = 0;
}

int cli_daemonize(const char *verb, cli_daemon_fn fn, void *arg, int keep_cwd, char *text,
                  size_t size, pid_t *pid_out) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC)) {
    cli_error(verb, "cannot create a pipe: %s", strerror(errno));
    return CLI_EXIT_SYSTEM;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    cli_error(verb, "cannot fork: %s", strerror(errno));
    return CLI_EXIT_SYSTEM;
  }
  if (pid == 0) {
    /* The daemon: its own session, no controlling terminal. Errors before
     * "ok" go to the parent. */
    close(pfd[0]);
    setsid();
    if (!keep_cwd && chdir("/"))
      _exit(CLI_EXIT_SYSTEM); /* "/" always exists; the parent reports the death */
    _exit(fn(arg, pfd[1]));
  }
  close(pfd[1]);
  read_report(pfd[0], text, size);
  close(pfd[0]);
  *pid_out = pid;
  if (!strncmp(text, "ok\n", 3) || !strcmp(text, "ok")) {
    size_t skip = text[2] == '\n' ? 3 : 2;
    memmove(text, text + skip, strlen(text + skip) + 1);
    return CLI_EXIT_OK;
  }
  int st, code = CLI_EXIT_SYSTEM;
  if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st))
    code = WEXITSTATUS(st);
  text[strcspn(text, "\n")] = 0;
  if (!strncmp(text, "error: ", 7))
    memmove(text, text + 7, strlen(text + 7) + 1);
  else
    snprintf(text, size, "the %s process died before it was ready", verb);
  return code;
}
