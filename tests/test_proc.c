/* The one /proc/<pid>/stat reader (include/taskfs/proc.h): a command name
 * with spaces and parentheses, from a text and from a live process. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "taskfs/proc.h"

/* A line as the kernel writes it (proc(5)), fields 1 to 52. */
#define TAIL                                                                                       \
  " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 "       \
  "33 34 35 36\n"

Test(proc, a_name_with_spaces_and_parentheses_ends_at_the_last_paren) {
  const char *line = "4242 (a) (b c) ) S 17 4242 4200 34816 4242 4194304 100 0 0 0 "
                     "7 3 -2 5 20 0 1 0 123456 1000 2" TAIL;
  tfs_proc_stat_t st;
  cr_assert_eq(tfs_proc_stat_parse(line, strlen(line), &st), 0);
  cr_assert_eq(st.pid, 4242);
  cr_assert_str_eq(st.comm, "a) (b c) ");
  cr_assert_eq(st.state, 'S');
  cr_assert_eq(st.ppid, 17);
  cr_assert_eq(st.pgrp, 4242);
  cr_assert_eq(st.session, 4200);
  cr_assert_eq(st.utime, 7);
  cr_assert_eq(st.stime, 3);
  cr_assert_eq(st.cutime, -2);
  cr_assert_eq(st.cstime, 5);
  cr_assert_eq(st.start, 123456);
  /* Field k of TAIL holds k - 24. */
  cr_assert_eq(st.threads, 1);
  cr_assert_eq(st.mm.start_code, 2);
  cr_assert_eq(st.mm.end_code, 3);
  cr_assert_eq(st.mm.start_stack, 4);
  cr_assert_eq(st.mm.start_data, 21);
  cr_assert_eq(st.mm.start_brk, 23);
  cr_assert_eq(st.mm.arg_start, 24);
  cr_assert_eq(st.mm.env_end, 27);
}

/* A kernel before 3.5 ends the line before the memory map: it reads as 0,
 * which tells the supervisor's in-process start to exec instead. */
Test(proc, a_line_without_the_memory_map_reads_it_as_zero) {
  const char *line = "9 (sh) S 1 9 9 0 -1 0 0 0 0 0 1 2 0 0 20 0 3 0 777 1000 2 4 5\n";
  tfs_proc_stat_t st;
  cr_assert_eq(tfs_proc_stat_parse(line, strlen(line), &st), 0);
  cr_assert_eq(st.threads, 3);
  cr_assert_eq(st.start, 777);
  cr_assert_eq(st.mm.start_code, 5);
  cr_assert_eq(st.mm.end_code, 0);
  cr_assert_eq(st.mm.env_end, 0);
}

Test(proc, a_name_that_looks_like_fields_is_not_read_as_them) {
  const char *line = "7 (x) R 1 1 1 0 0 0 0 0 0 0 9 9 9 9 0 0 0 0 99) Z 2 3 4 5 6 7 8 9 10 11 12 "
                     "13 14 15 16 17 18 19 555 21";
  tfs_proc_stat_t st;
  cr_assert_eq(tfs_proc_stat_parse(line, strlen(line), &st), 0);
  cr_assert_eq(st.state, 'Z');
  cr_assert_eq(st.ppid, 2);
  cr_assert_eq(st.start, 555);
  cr_assert_eq(strncmp(st.comm, "x) R 1", 6), 0);
}

Test(proc, a_cut_or_broken_line_is_eio) {
  tfs_proc_stat_t st;
  const char *cut = "4242 (sh) S 17 4242 4200 34816";
  cr_assert_eq(tfs_proc_stat_parse(cut, strlen(cut), &st), -EIO, "fields up to 22 are needed");
  cr_assert_eq(tfs_proc_stat_parse("4242 (sh", 8, &st), -EIO);
  cr_assert_eq(tfs_proc_stat_parse("", 0, &st), -EIO);
  const char *noparen = "4242 sh S 17 4242";
  cr_assert_eq(tfs_proc_stat_parse(noparen, strlen(noparen), &st), -EIO);
}

/* The kernel's own line for a child named with spaces and parentheses. */
Test(proc, a_live_process_reads_as_the_kernel_tells_it) {
  int go[2], ready[2];
  cr_assert_eq(pipe(go), 0);
  cr_assert_eq(pipe(ready), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(go[1]);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
    prctl(PR_SET_NAME, "x) (y z) 1 2");
    setpgid(0, 0);
    (void)!write(ready[1], "r", 1);
    char c;
    (void)!read(go[0], &c, 1);
    _exit(0);
  }
  char c;
  cr_assert_eq(read(ready[0], &c, 1), 1);
  tfs_proc_stat_t st;
  int err = tfs_proc_stat(pid, &st);
  close(go[1]); /* the child ends */
  waitpid(pid, NULL, 0);
  close(go[0]);
  close(ready[0]);
  close(ready[1]);
  cr_assert_eq(err, 0);
  cr_assert_eq(st.pid, pid);
  cr_assert_str_eq(st.comm, "x) (y z) 1 2");
  cr_assert_eq(st.ppid, getpid());
  cr_assert_eq(st.pgrp, pid);
  cr_assert(strchr("RS", st.state), "state %c", st.state);
  tfs_proc_stat_t self;
  cr_assert_eq(tfs_proc_stat(getpid(), &self), 0);
  cr_assert_geq(st.start, self.start, "the child started after us");
  /* The map is our own: the environment the kernel gave us lies where it
   * says (a variable set since lives on the heap: look for any). */
  extern char **environ;
  int in_area = 0;
  for (char **e = environ; e && *e; e++)
    in_area |= (uintptr_t)*e >= self.mm.env_start && (uintptr_t)*e < self.mm.env_end;
  cr_assert(self.mm.start_code && self.mm.start_code < self.mm.end_code);
  cr_assert(in_area, "no variable in [%#lx, %#lx)", (unsigned long)self.mm.env_start,
            (unsigned long)self.mm.env_end);
  cr_assert_eq(tfs_proc_stat(pid, &st), -ENOENT, "reaped: no such process");
}
