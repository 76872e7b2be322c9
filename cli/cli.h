/* Shared pieces of the taskfs command line: exit codes, option parsing for
 * the options every verb takes, and error reporting. */
#ifndef TASKFS_CLI_H
#define TASKFS_CLI_H

#include "taskfs/taskfs.h"

/* Exit codes, fixed and documented in docs/cli.md. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_USAGE 100     /* bad command line */
#define CLI_EXIT_NOTASK 101    /* no task with that id or key */
#define CLI_EXIT_SYSTEM 111    /* system failure (I/O, out of memory, ...) */
#define CLI_EXIT_TIMEOUT 124   /* taskfs wait --timeout ran out */

/* How `wait`, `logs -f` and `run --wait/--follow` report a task's end:
 * completed 0; failed: the worker's exit code (at least 1), 128+N if killed
 * by signal N, 127 if it could not start; cancelled 130; lost 102. */
#define CLI_EXIT_CANCELLED 130
#define CLI_EXIT_LOST 102
#define CLI_EXIT_NOSTART 127
int cli_exit_for_record(const tfs_record_t *rec);

/* Each verb: int cmd_<verb>(int argc, char **argv), argv[0] is the verb. */
typedef int (*cli_verb_fn)(int argc, char **argv);

/* Prints "taskfs <verb>: <message>\n" on stderr. */
void cli_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Resolves and opens the store named by --state-dir (may be NULL). With
 * create = 0 a missing store is reported as empty (returns 0, *out NULL)
 * for read-only verbs. Prints the error and returns an exit code. */
int cli_open_store(const char *verb, const char *state_dir, int create, tfs_store_t **out);

/* Resolves an ID or KEY argument; prints a clear error (with what to do)
 * and returns an exit code (CLI_EXIT_NOTASK, CLI_EXIT_USAGE, ...). */
int cli_resolve_task(const char *verb, tfs_store_t *store, const char *arg,
                     char id_out[TFS_ID_MAX + 1]);

/* Maps a library error to an exit code. */
int cli_exit_for(int err);

/* Parses a non-negative integer; returns 0 or -1. */
int cli_parse_i64(const char *s, int64_t *out);

#endif /* TASKFS_CLI_H */
