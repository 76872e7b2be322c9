/* The child's side of every fork of the supervisor library, before exec
 * (supervisor/child.c). Private to supervisor/. */
#ifndef TASKFS_SUPERVISOR_CHILD_H
#define TASKFS_SUPERVISOR_CHILD_H

#include <sys/types.h>

/* What a child sets up between fork and exec. */
typedef struct {
  int deathsig;     /* sent when the parent dies (PR_SET_PDEATHSIG); 0: none */
  pid_t parent;     /* with deathsig: the parent forked from; if it is gone already, fail */
  int stdio[3];     /* what fds 0, 1 and 2 become; -1: left as they are */
  int cloexec_from; /* > 2: every fd from this one up is closed at exec; 0: none */
} sup_child_t;

/* What sup_child_init() could not do (errno says why). */
enum { SUP_CHILD_PARENT = 1, SUP_CHILD_STDIO = 2 };

/* The child's clean slate, as libuv's uv__process_child_init: the death
 * signal, every signal disposition back to its default and then nothing
 * blocked (in that order: a signal that was held across fork is taken
 * with the default action, never by a handler of the parent's), stdio
 * set, the rest close-on-exec. Async-signal-safe: system calls only.
 * 0, or SUP_CHILD_* with errno. */
int sup_child_init(const sup_child_t *c);

#endif
