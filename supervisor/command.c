/* Running a short helper command (an engine's client: squeue, scancel,
 * scontrol) from the supervisor and reading what it prints.
 *
 * The call blocks, bounded by a timeout: the helpers answer in a few
 * milliseconds, and one that hangs (a controller that stopped answering)
 * is killed when the time is up. Blocking keeps the helper out of the
 * loop's reaping: it is waited for by pid before the loop runs again, so
 * the SIGCHLD reaper never sees it and the tree is never left with it.
 */
#include "supervisor/sup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int sup_find_program(const char *name, char *const *env, char *out, size_t len) {
  const char *path = NULL;
  for (char *const *e = env ? env : environ; e && *e; e++)
    if (!strncmp(*e, "PATH=", 5))
      path = *e + 5;
  if (!path)
    path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    size_t n = strcspn(path, ":");
    if (n && (size_t)snprintf(out, len, "%.*s/%s", (int)n, path, name) < len &&
        access(out, X_OK) == 0)
      return 0;
    path += n + (path[n] == ':');
  }
  return -ENOENT;
}

/* The helper between fork and exec: default signals, both outputs on the
 * pipe, stdin /dev/null; it dies with us. */
static void __attribute__((noreturn)) helper_child(char *const argv[], char *const env[], int out) {
  struct sigaction dfl = {.sa_handler = SIG_DFL};
  for (int sig = 1; sig < NSIG; sig++)
    sigaction(sig, &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int null = open("/dev/null", O_RDONLY);
  if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
    _exit(127);
  execve(argv[0], argv, env ? env : environ);
  _exit(127);
}

/* Reads the helper's output into out until EOF or the deadline; returns 1
 * if the deadline passed first. */
static int read_output(int fd, int64_t deadline, char *out, size_t outlen) {
  size_t len = 0;
  for (;;) {
    int64_t left = deadline - tfs_now_ms();
    if (left <= 0)
      return 1;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, (int)left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r == 0;
    char sink[512];
    char *dst = len + 1 < outlen ? out + len : sink;
    size_t room = len + 1 < outlen ? outlen - len - 1 : sizeof sink;
    ssize_t n = read(fd, dst, room);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return 0;
    if (dst != sink)
      len += (size_t)n;
    out[len] = 0;
  }
}

int sup_command(char *const argv[], char *const env[], int timeout_ms, char *out,
                size_t outlen) {
  int p[2];
  if (outlen)
    out[0] = 0;
  if (pipe2(p, O_CLOEXEC) < 0)
    return -errno;
  pid_t pid = sup_fork();
  if (pid == 0) {
    close(p[0]);
    helper_child(argv, env, p[1]);
  }
  close(p[1]);
  if (pid < 0) {
    close(p[0]);
    return -errno;
  }
  int timed_out = read_output(p[0], tfs_now_ms() + timeout_ms, out, outlen);
  close(p[0]);
  if (timed_out)
    kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (timed_out)
    return -ETIMEDOUT;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
