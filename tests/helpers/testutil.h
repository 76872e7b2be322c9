/* Helpers shared by the C tests: temporary stores, running the real taskfs
 * binary, and waiting for a condition without timing assertions. */
#ifndef TASKFS_TESTUTIL_H
#define TASKFS_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Creates a fresh directory under $TMPDIR (or /tmp); returns a malloc'ed
 * path. Aborts the test on failure. */
char *tu_tmpdir(const char *tag);
/* The same on tmpfs (/dev/shm, else as tu_tmpdir): for a test that makes
 * thousands of tasks, whose every create fsyncs; on a disk another job
 * keeps busy those fsyncs alone took over a minute. */
char *tu_tmpdir_mem(const char *tag);
/* How many times slower than a quiet machine's normal build this run may
 * be: $TASKFS_TEST_SLOW, else TU_SLOW_DEFAULT. Criterion's .timeout of
 * every test and suite and the bound of tu_wait_until are multiplied by
 * it (tests/README.md: waits in tests). */
#define TU_SLOW_DEFAULT 3
int tu_slow(void);
/* rm -rf path (never follows symlinks out of it). */
void tu_rmrf(const char *path);
/* Ends, with SIGKILL, every process of dir: those whose command line
 * names it (the supervisors, servers and mounts of a store in it) or that
 * run in it, and the process group of each (a supervisor's task runs in
 * a group of its own); waits until none is left (a bound of 2 s times
 * tu_slow()). Returns how many it found. For a test's teardown: a test
 * ends what it started, also when it failed (tests/README.md). */
int tu_end_procs(const char *dir);
/* tu_end_procs(path), then tu_rmrf(path): the end of a test's directory. */
void tu_cleanup_dir(const char *path);
/* Path of the taskfs binary under test ($TASKFS_BIN, else build/taskfs). */
const char *tu_taskfs_bin(void);
/* Runs a shell command line; captures stdout (malloc'ed, NUL-terminated)
 * into *out if out is not NULL; returns the exit status as the shell would
 * ($?: 128+sig for a signal). */
int tu_sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Polls cond(arg) every 10 ms until it returns non-zero or timeout_ms
 * (times tu_slow()) passes; returns the last value of cond. Generous timeouts only: tests
 * check behaviour, never speed. */
int tu_wait_until(int (*cond)(void *arg), void *arg, int64_t timeout_ms);
/* Reads a whole file; returns malloc'ed content or NULL. */
char *tu_read_file(const char *path, size_t *len);
int tu_write_file(const char *path, const void *data, size_t len);

#endif
