/* The child's side of a fork (supervisor/child.c): what a program exec'ed
 * after sup_child_init() starts with, read from its own /proc/self/status
 * and its own output. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/child.h"

/* All of fd to its end, NUL-terminated in buf. */
static void read_to_end(int fd, char *buf, size_t cap) {
  size_t len = 0;
  ssize_t n;
  while (len + 1 < cap && (n = read(fd, buf + len, cap - len - 1)) > 0)
    len += (size_t)n;
  buf[len] = 0;
}

static void on_usr2(int sig) {
  (void)sig;
}

/* A child whose parent ignored, caught and blocked signals, and whose
 * stdout and stderr are to swap places, the first of them close-on-exec:
 * the program it execs sees default signals, none blocked, and each
 * output where it was asked to be. */
Test(child, signals_default_and_stdio_as_asked_even_swapped) {
  int a[2], b[2];
  cr_assert_eq(pipe(a), 0);
  cr_assert_eq(pipe(b), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGUSR2, on_usr2);
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    /* Now fd 1 is a's end (close-on-exec) and fd 2 b's. */
    if (dup3(a[1], 1, O_CLOEXEC) < 0 || dup2(b[1], 2) < 0)
      _exit(90);
    close(a[0]);
    close(b[0]);
    close(a[1]);
    close(b[1]);
    sup_child_t c = {.stdio = {-1, 2, 1}, .cloexec_from = 3};
    if (sup_child_init(&c))
      _exit(91);
    execl("/bin/sh", "sh", "-c",
          "grep -E '^Sig(Blk|Ign|Cgt)' /proc/self/status; echo to-stderr >&2", (char *)NULL);
    _exit(92);
  }
  close(a[1]);
  close(b[1]);
  char out_a[4096], out_b[4096];
  read_to_end(b[0], out_b, sizeof out_b); /* stdout, now b */
  read_to_end(a[0], out_a, sizeof out_a); /* stderr, now a */
  close(a[0]);
  close(b[0]);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x; stdout: %s; stderr: %s", st,
            out_b, out_a);
  cr_assert_str_eq(out_a, "to-stderr\n", "stderr went to what stdout was");
  cr_assert_not_null(strstr(out_b, "SigBlk:\t0000000000000000"), "a signal is blocked: %s", out_b);
  /* glibc keeps the signals between 31 and SIGRTMIN (32, 33: thread
   * cancellation, setxid) to itself, and sigaction refuses them: one the
   * environment ignored stays ignored, whoever resets. The rest must be
   * default. */
  const char *ign = strstr(out_b, "SigIgn:\t");
  cr_assert_not_null(ign, "%s", out_b);
  unsigned long long ignored = strtoull(ign + 8, NULL, 16), glibcs = 0;
  for (int sig = 32; sig < SIGRTMIN; sig++)
    glibcs |= 1ull << (sig - 1);
  cr_assert_eq(ignored & ~glibcs, 0, "a signal is ignored: %s", out_b);
}

/* With a death signal and a parent that is gone already, it fails and
 * says so: the caller must not start a program nobody supervises. */
Test(child, a_parent_gone_before_the_death_signal_is_refused) {
  int p[2];
  cr_assert_eq(pipe(p), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(p[0]);
    sup_child_t c = {.deathsig = SIGKILL, .parent = getppid() + 1, .stdio = {-1, -1, -1}};
    int r = sup_child_init(&c);
    char res[2] = {(char)('0' + r), (char)(errno == ESRCH ? 'y' : 'n')};
    (void)!write(p[1], res, 2);
    _exit(0);
  }
  close(p[1]);
  char res[3] = {0};
  read_to_end(p[0], res, sizeof res);
  close(p[0]);
  waitpid(pid, NULL, 0);
  cr_assert_eq(res[0], '0' + SUP_CHILD_PARENT);
  cr_assert_eq(res[1], 'y', "errno is ESRCH");
}
