/* The supervisor as a fork of its launcher, without an exec
 * (tfs_launch_opts_t.no_exec: `taskfs run`, `taskfs restart`).
 *
 * A start used to hold three execs in series: the CLI, the supervisor and
 * the worker. The CLI links core and the supervisor whole, so the
 * grandchild of tfs_launch()'s double fork can run tfs_supervise_main()
 * itself instead of exec'ing taskfs-supervise: one exec (and one dynamic
 * load of libuv, jansson and libc) fewer on the path `run` waits for.
 *
 * What an exec gave for free is done here by hand, so that the supervisor
 * is the same process to everyone who looks at it:
 * - descriptors: every one of the launcher's is closed (its terminal, its
 *   pipes, its store and watch fds), but the env memfd it was handed;
 *   stdio is /dev/null and supervisor.log as before (launch.c);
 * - signals: dispositions and mask reset (sup_child_init, as before);
 * - stdio buffers: the launcher flushes before it forks, so nothing it
 *   printed is written twice;
 * - its name: /proc/PID/cmdline reads `taskfs supervise --state-dir DIR
 *   [--env-fd N] ID`, one string per argument as an exec would make them
 *   (ps, pgrep -f, the tests' process finders, leftovers.sh), and comm is
 *   "taskfs-supervis", what the exec of taskfs-supervise showed.
 * The command line is set with prctl(PR_SET_MM_MAP), which an unprivileged
 * process may use as long as it keeps its exe link (exe_fd -1): the kernel
 * then points the argument area at a new anonymous page. Where that fails
 * (a kernel without CONFIG_CHECKPOINT_RESTORE, a seccomp filter), the
 * caller execs as before: a supervisor is never shown under the launcher's
 * command line.
 *
 * Only a single-threaded launcher may take this path: after a fork only
 * the forking thread exists, and a lock another thread held (malloc,
 * stdio) would stay held in the supervisor for ever. The MCP server and
 * the mount launch from a thread of theirs and exec.
 */
#include "supervisor/internal.h"
#include "taskfs/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* This process's stat, read through /proc/self (right whatever pid
 * namespace /proc was mounted in). System calls only: the child side
 * calls it too. 0, or -errno. */
static int self_stat(tfs_proc_stat_t *st) {
  return tfs_proc_stat_at(AT_FDCWD, "/proc/self", st);
}

int sup_inproc_possible(void) {
  tfs_proc_stat_t st;
  return self_stat(&st) == 0 && st.threads == 1;
}

/* Points the process's argument area (/proc/PID/cmdline) at a copy of
 * argv, one NUL-ended string each, and names the thread. 0, or -1 with
 * errno (nothing changed). */
static int set_cmdline(char *const argv[]) {
  size_t len = 0;
  for (size_t i = 0; argv[i]; i++)
    len += strlen(argv[i]) + 1;
  tfs_proc_stat_t st;
  int err = self_stat(&st);
  if (err < 0 || !st.mm.start_code) {
    errno = err < 0 ? -err : ENOSYS; /* a kernel that shows no map */
    return -1;
  }
  /* Anonymous memory: the kernel reads the arguments of another process
   * only from anonymous mappings (FOLL_ANON), and this one is never
   * unmapped. */
  char *area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED)
    return -1;
  char *p = area;
  for (size_t i = 0; argv[i]; i++) {
    size_t l = strlen(argv[i]) + 1;
    memcpy(p, argv[i], l);
    p += l;
  }
  /* Every other field as it is: PR_SET_MM_MAP sets them all at once. */
  struct prctl_mm_map m = {
      .start_code = st.mm.start_code,
      .end_code = st.mm.end_code,
      .start_data = st.mm.start_data,
      .end_data = st.mm.end_data,
      .start_brk = st.mm.start_brk,
      .brk = (unsigned long)syscall(SYS_brk, 0),
      .start_stack = st.mm.start_stack,
      .arg_start = (unsigned long)area,
      .arg_end = (unsigned long)area + len,
      .env_start = st.mm.env_start,
      .env_end = st.mm.env_end,
      .exe_fd = (unsigned)-1,
  };
  if (prctl(PR_SET_MM, PR_SET_MM_MAP, (unsigned long)&m, sizeof m, 0) < 0) {
    int e = errno;
    munmap(area, len);
    errno = e;
    return -1;
  }
  prctl(PR_SET_NAME, "taskfs-supervis", 0, 0, 0);
  return 0;
}

/* Closes every fd from 3 up but keep (-1: none). */
static void close_from_3(int keep) {
  unsigned lo = 3;
  if (keep >= 3) {
    if (keep > 3 && close_range(3, (unsigned)keep - 1, 0) < 0)
      for (int fd = 3; fd < keep; fd++)
        close(fd);
    lo = (unsigned)keep + 1;
  }
  if (close_range(lo, ~0U, 0) < 0) {
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = lo; fd < (max > 0 ? max : 65536); fd++)
      close((int)fd);
  }
}

void sup_inproc_run(char *const argv[], int keep_fd) {
  if (set_cmdline(argv) < 0)
    return; /* the caller execs instead */
  close_from_3(keep_fd);
  int argc = 0;
  while (argv[argc])
    argc++;
  /* The verb's arguments, as taskfs-supervise passes them (after argv[0]).
   * exit(), not _exit(): the supervisor ends as the exec'd one did (stdio
   * flushed; a coverage build writes its counts). */
  exit(tfs_supervise_main(argc - 1, (char **)argv + 1));
}
