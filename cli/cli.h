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

/* For verbs that take exactly one ID|KEY after their options (argv[first]):
 * checks the argument count, opens the store read-only (a missing store
 * means no such task) and resolves the task. Prints any error and returns
 * an exit code; on success *store is open and the caller closes it. */
int cli_open_one_task(const char *verb, const char *state_dir, int argc, char **argv, int first,
                      tfs_store_t **store, char id_out[TFS_ID_MAX + 1]);

/* Maps a library error to an exit code. */
int cli_exit_for(int err);

/* Parses a non-negative integer; returns 0 or -1. */
int cli_parse_i64(const char *s, int64_t *out);

/* ---- added by the cli engineer (additive) ------------------------------ */

/* Prints "taskfs <verb>: <message>" and "try 'taskfs <verb> --help'" on
 * stderr; returns CLI_EXIT_USAGE so a verb can `return cli_usage_error(...)`. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports a getopt_long() failure (c is '?' or ':' from an optstring that
 * starts with ':'); prints the option and returns CLI_EXIT_USAGE. */
int cli_bad_option(const char *verb, char **argv, int c);

/* Parses seconds, integer or decimal ("30", "0.5"), into milliseconds;
 * returns 0 or -1 (negative, empty, trailing junk, overflow). */
int cli_parse_seconds(const char *s, int64_t *ms_out);

/* Copies s into buf for an error message: control and non-ASCII bytes as
 * \xNN, cut with "..." at about 60 bytes. Returns buf. */
const char *cli_quote(const char *s, char *buf, size_t len);

/* Follows a task's transcript onto fd_out, like `taskfs logs -f`: prints
 * the last last_n complete lines (all of them if last_n < 0), then every
 * new line as it is written (inotify on the task directory, 1 s poll as a
 * fallback). Returns once the task has ended and its transcript is drained
 * (the final partial line included), with cli_exit_for_record() of the
 * final record (a lost task: a note on stderr and CLI_EXIT_LOST); on
 * EPIPE/a closed reader of fd_out with 0; on SIGINT/SIGTERM with 130;
 * on errors with an exit code after printing the error. SIGPIPE is
 * ignored while it runs. */
int cli_follow(tfs_store_t *store, const char *id, int64_t last_n, int fd_out);

/* Waits until task id is in a terminal state (inotify on the task
 * directory, 1 s poll fallback), filling *rec (caller frees with
 * tfs_record_free). timeout_ms < 0: no limit. Returns 0 when ended,
 * 1 on timeout (rec holds the last record seen), 2 if SIGINT/SIGTERM
 * arrived, or a negative error (TFS_ENOTASK if the task vanished,
 * TFS_ECORRUPT, -errno). Prints nothing. */
int cli_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms, tfs_record_t *rec);

#endif /* TASKFS_CLI_H */
