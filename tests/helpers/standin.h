/* A stand-in supervisor for the tests of the faces (tests/helpers/standin.c). */
#ifndef TASKFS_TESTS_STANDIN_H
#define TASKFS_TESTS_STANDIN_H

#include <sys/types.h>

/* Forks a child that takes the task lock of id in the store at state,
 * records the task running (pids: its own) and sleeps until killed; it never
 * writes the transcript. With obey_cancel it plays the supervisor's part of
 * a stop request: once a request appears it records cancelled and exits.
 * Returns its pid once the record says running, or -1 (the caller reaps it
 * either way). */
pid_t tu_standin_supervisor(const char *state, const char *id, int obey_cancel);

#endif
