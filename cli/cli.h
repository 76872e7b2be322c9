/* Shared pieces of the taskfs command line: exit codes, option parsing for
 * the options every verb takes, error reporting, opening the store and the
 * task an argument names (cli/common.c), and the waits (cli/follow.c). */
#ifndef TASKFS_CLI_H
#define TASKFS_CLI_H

#include "taskfs/taskfs.h"

/* Exit codes, fixed and documented in docs/cli.md. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_USAGE 100   /* bad command line */
#define CLI_EXIT_NOTASK 101  /* no task with that id or key */
#define CLI_EXIT_SYSTEM 111  /* system failure (I/O, out of memory, ...) */
#define CLI_EXIT_TIMEOUT 124 /* taskfs wait --timeout ran out */

/* How `wait`, `logs -f` and `run --wait/--follow` report a task's end:
 * completed 0; failed: the worker's exit code (at least 1), 128+N if killed
 * by signal N, 127 if it could not start, 103 if it never ran because a
 * task it starts after (--after) did not complete; cancelled 130; lost
 * 102. */
#define CLI_EXIT_SKIPPED 103
#define CLI_EXIT_CANCELLED 130
#define CLI_EXIT_LOST 102
#define CLI_EXIT_NOSTART 127
int cli_exit_for_record(const tfs_record_t *rec);

/* Each verb: int cmd_<verb>(int argc, char **argv), argv[0] is the verb. */
typedef int (*cli_verb_fn)(int argc, char **argv);

/* Prints "taskfs <verb>: <message>\n" on stderr, the message escaped
 * (cli_escape): it may hold a record's reason or an argument. */
void cli_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct cli_opts;
/* Resolves the store's path (tfs_store_resolve) into buf; an empty
 * --state-dir or TASKFS_STATE_DIR is a usage error. Prints any error and
 * returns an exit code. */
int cli_store_path(const char *verb, const char *state_dir, char *buf, size_t len);

/* `taskfs --state-dir DIR VERB ...` (and `taskfs queue --state-dir DIR ls`):
 * a --state-dir at argv[1] is moved behind the word after it, argv[2],
 * where that verb parses it. Returns 0, or CLI_EXIT_USAGE after saying
 * that a verb is missing. */
int cli_hoist_state_dir(int *argc, char ***argv);

/* Resolves and opens the store named by o's --state-dir (may be NULL),
 * checked as every open is (the caller's, writable by nobody else), or
 * with --foreign-store (o->foreign) another user's, read-only. With
 * create = 0 a missing store is reported as empty (returns 0, *out NULL)
 * for read-only verbs. A refused store is reported with what to do, exit
 * CLI_EXIT_SYSTEM. Prints the error and returns an exit code. */
int cli_open_store(const struct cli_opts *o, int create, tfs_store_t **out);

/* Resolves an ID, KEY or unique id prefix (at least TFS_ID_PREFIX_MIN
 * characters) argument; prints a clear error (with what to do; an
 * ambiguous prefix lists its candidates) and returns an exit code
 * (CLI_EXIT_NOTASK, CLI_EXIT_USAGE, ...). */
int cli_resolve_task(const char *verb, tfs_store_t *store, const char *arg,
                     char id_out[TFS_ID_MAX + 1]);

/* For verbs that take exactly one ID|KEY after their options (argv[first]):
 * checks the argument count, opens the store read-only (a missing store
 * means no such task) and resolves the task. Prints any error and returns
 * an exit code; on success *store is open and the caller closes it. */
int cli_open_one_task(const struct cli_opts *o, int argc, char **argv, int first,
                      tfs_store_t **store, char id_out[TFS_ID_MAX + 1]);

/* The tasks a verb acts on (cli/targets.c): the ids after its options
 * (argv[first..]), resolved as cli_resolve_task() does, each once. With
 * CLI_TASKS_NEWEST none means the newest task (a note on stderr names
 * it); CLI_TASKS_MANY takes several; CLI_TASKS_ALL (the verb's --all,
 * then no ids) takes every task that has not ended. Opens the store
 * read-only; prints any error and returns an exit code; on success the
 * caller frees t with cli_tasks_free(). */
#define CLI_TASKS_NEWEST 1
#define CLI_TASKS_MANY 2
#define CLI_TASKS_ALL 4
typedef struct {
  tfs_store_t *store; /* NULL for a store that does not exist (no tasks) */
  char (*ids)[TFS_ID_MAX + 1];
  size_t n, cap;
} cli_tasks_t;
int cli_open_tasks(const struct cli_opts *o, int argc, char **argv, int first, int flags,
                   cli_tasks_t *t);
void cli_tasks_free(cli_tasks_t *t);
/* The newest task (the last made) into id_out, with a note on stderr
 * ("VERB: note: WHAT the newest task: 3 (mx...)"); CLI_EXIT_NOTASK in a
 * store without tasks (store NULL: one that does not exist). */
int cli_newest_task(const char *verb, tfs_store_t *store, const char *what,
                    char id_out[TFS_ID_MAX + 1]);
/* After a wait that returned 130 (a cancelled task, or Ctrl-C): if the
 * task has not ended (so the wait was interrupted), says on stderr that
 * it runs on and how to cancel it, and returns 1; else 0. */
int cli_say_runs_on(const char *verb, tfs_store_t *store, const char *id);
/* cli_open_one_task(), where no task given means the newest. */
int cli_open_task_or_newest(const struct cli_opts *o, int argc, char **argv, int first,
                            tfs_store_t **store, char id_out[TFS_ID_MAX + 1]);
/* The exit code of a verb that acted on several tasks: the worst (highest)
 * of theirs, so 0 only when every one was. */
int cli_worst_code(int a, int b);
/* Asks question on the terminal ("cancel 3 tasks?"): 1 for yes (or with
 * yes set), 0 for anything else; -1 (a usage error said) when stdin is
 * not a terminal to ask and yes is not set. */
int cli_confirm(const char *verb, const char *question, int yes);

/* A task that waits (queued with its supervisor): says on stderr where it
 * stands ("task X is queued: 3rd in queue build (2 of 2 running)"). */
void cli_say_queued(const char *verb, tfs_store_t *store, const tfs_record_t *rec);

/* Forks a daemon (cli/daemon.c) running fn(arg, ready_fd) in a session of
 * its own (cwd / unless keep_cwd), and waits for its report on ready_fd:
 * "ok\n" and text for the parent to print, or "error: " and a message.
 * Returns 0 with that text, or an exit code (the child's, else
 * CLI_EXIT_SYSTEM) with the message. fn returns the child's exit code. */
#include <sys/types.h>
typedef int (*cli_daemon_fn)(void *arg, int ready_fd);
int cli_daemonize(const char *verb, cli_daemon_fn fn, void *arg, int keep_cwd, char *text,
                  size_t size, pid_t *pid);

/* Maps a library error to an exit code. */
int cli_exit_for(int err);

/* Parses a non-negative integer; returns 0 or -1. */
int cli_parse_i64(const char *s, int64_t *out);

/* ---- options ------------------------------------------------------------ */

#include <getopt.h>

/* The option parser every verb shares: getopt_long() over the verb's own
 * options plus --state-dir DIR and -h/--help, which it handles itself, with
 * one way of reporting a bad option. A verb fills the first fields
 * (CLI_OPTS below) and loops:
 *
 *   cli_opts_t o = CLI_OPTS("logs", usage_text, "n:f", opts);
 *   while ((c = cli_getopt(&o, argc, argv)) > 0)
 *     switch (c) { ... }
 *   if (c < 0)
 *     return o.code;
 *
 * after which optind names the first operand and o.state_dir holds
 * --state-dir (NULL if not given). */
#define CLI_OPT_IN_ORDER 1       /* options end at the first operand (run's CMD) */
#define CLI_OPT_NO_STATE_DIR 2   /* the verb takes no --state-dir (umount) */
#define CLI_OPT_FOREIGN 4        /* a reading verb: takes --foreign-store */
#define CLI_OPT_STATE_DIR 0x1000 /* getopt value of --state-dir (internal) */
#define CLI_OPT_FOREIGN_STORE 0x1001
typedef struct cli_opts {
  const char *verb;
  const char *usage;             /* printed on stdout for --help */
  const char *shortopts;         /* the verb's own, like "n:f"; never h */
  const struct option *longopts; /* the verb's own, NULL-terminated, or NULL */
  int flags;                     /* CLI_OPT_* */
  const char *state_dir;         /* out: --state-dir DIR, or NULL */
  int foreign;                   /* out: --foreign-store */
  int code;                      /* out: the exit code once cli_getopt returns -1 */
  char optstring[32];            /* internal */
  struct option all[32];         /* internal: longopts + state-dir + help */
} cli_opts_t;
#define CLI_OPTS(verb_, usage_, short_, long_)                                                     \
  { .verb = (verb_), .usage = (usage_), .shortopts = (short_), .longopts = (long_) }
/* The same for a verb that only reads, and so takes --foreign-store. */
#define CLI_OPTS_READ(verb_, usage_, short_, long_)                                                \
  {                                                                                                \
    .verb = (verb_), .usage = (usage_), .shortopts = (short_), .longopts = (long_),                \
    .flags = CLI_OPT_FOREIGN                                                                       \
  }

/* Returns the next of the verb's own options (its getopt value), 0 once
 * the options are read, or -1 when the verb must return o->code: 0 after
 * printing --help, CLI_EXIT_USAGE after reporting a bad option. */
int cli_getopt(cli_opts_t *o, int argc, char **argv);

/* For `taskfs __complete` (cli/cmd_complete.c): while set, cli_getopt()
 * copies the verb's filled-in cli_opts_t (its usage text and whole option
 * table) here and returns -1 with code 0, so the verb returns having done
 * nothing. The completions thus read the very table the verb parses. */
extern cli_opts_t *cli_describe;

/* For verbs that take no operands: reports the first one (with a hint
 * about what to do instead, or NULL) and returns CLI_EXIT_USAGE; 0 if
 * there is none. */
int cli_no_operands(const char *verb, int argc, char **argv, const char *hint);

/* Flushes stdout; on failure says so and returns CLI_EXIT_SYSTEM, else
 * code. */
int cli_flush_stdout(const char *verb, int code);

/* What `wait` and `run --wait` do: waits for the end of task id, settles
 * a task read as lost, describes on stderr a task that did not complete,
 * and returns the task's exit code (cli_exit_for_record); CLI_EXIT_TIMEOUT
 * after timeout_ms, 130 if interrupted (only the wait stops; the task runs
 * on). */
int cli_wait_report(const char *verb, tfs_store_t *store, const char *id, int64_t timeout_ms);

/* The one report of a --timeout that ran out (wait, cancel --wait): "task
 * ID is still STATE after 1s (--timeout); THEN". */
void cli_timeout_error(const char *verb, const char *id, const tfs_record_t *rec,
                       int64_t timeout_ms, const char *then);

/* ---- errors and arguments ------------------------------------------------ */

/* Prints "taskfs <verb>: <message>" (escaped) and "try 'taskfs <verb>
 * --help'" on stderr; returns CLI_EXIT_USAGE so a verb can `return cli_usage_error(...)`. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports a getopt_long() failure (c is '?' or ':' from an optstring that
 * starts with ':'); prints the option and returns CLI_EXIT_USAGE. */
int cli_bad_option(const char *verb, char **argv, int c);

/* A duration option (--timeout, --min-uptime, --grace, --delay,
 * --older-than ...) read by core's one parser, tfs_duration_parse ("500ms",
 * "10s", "1.5s", "5m", "1h", "7d", "30"). Fills *ms_out and returns 0; on
 * bad input reports "VERB: OPT wants a duration ..." and returns
 * CLI_EXIT_USAGE. */
int cli_duration_opt(const char *verb, const char *opt, const char *arg, int64_t *ms_out);

/* Writes ms in the syntax the parser reads ("500ms", "1.5s", "10s", "5m",
 * "1h"); returns buf. */
const char *cli_format_duration(int64_t ms, char *buf, size_t len);

/* ---- text for a terminal (cli/escape.c) --------------------------------- */

/* Writes s[0..len) into out (cap bytes, NUL-terminated, *olen its length
 * if olen is not NULL) for a terminal: C0 controls, DEL, C1 controls and
 * bytes that are not valid UTF-8 as \xNN, printable UTF-8 as it is. With
 * CLI_ESC_LINES newlines and tabs are kept (a transcript); with
 * CLI_ESC_PARTIAL a UTF-8 sequence cut at the end of s is left for the
 * next call. Returns the input bytes taken: len, unless out filled up or
 * a sequence was left. The one escape of everything from a record, a store
 * or a command line on its way to a terminal. */
#define CLI_ESC_LINES 1u
#define CLI_ESC_PARTIAL 2u
size_t cli_escape(const char *s, size_t len, unsigned flags, char *out, size_t cap, size_t *olen);

/* Copies s into buf for a message, escaped as cli_escape() does, cut with
 * "..." at 60 bytes. Returns buf. */
const char *cli_quote(const char *s, char *buf, size_t len);

/* A pipe whose bytes reach out_fd through cli_escape(CLI_ESC_LINES), by a
 * thread: `logs` of another user's store writes the transcript into
 * cli_esc_pipe_fd(). Closing it waits until everything is written. A
 * closed out_fd closes the pipe (the writer gets EPIPE). Open returns 0 or
 * a negative errno. */
typedef struct cli_esc_pipe cli_esc_pipe_t;
int cli_esc_pipe_open(int out_fd, cli_esc_pipe_t **out);
int cli_esc_pipe_fd(const cli_esc_pipe_t *e);
void cli_esc_pipe_close(cli_esc_pipe_t *e);

/* ---- waiting on a task (cli/follow.c) ------------------------------------ */

/* Follows a task's transcript onto fd_out, like `taskfs logs -f`: prints
 * the last last_n lines (all of them if last_n < 0; a line still being
 * written is printed once complete), then every new line as it is written
 * (a core watch and follower). Returns once the task has ended and its
 * transcript is drained (the final partial line included), with
 * cli_exit_for_record() of the final record (a lost task: a note on stderr
 * and CLI_EXIT_LOST); on EPIPE/a closed reader of fd_out with 0; on
 * SIGINT/SIGTERM with 130; on errors with an exit code after printing the
 * error. SIGPIPE is ignored while it runs. */
int cli_follow(tfs_store_t *store, const char *id, int64_t last_n, int fd_out);

/* tfs_task_wait_end() with SIGINT and SIGTERM let through only while it
 * sleeps: fills *rec (initialized by the call; free it with
 * tfs_record_free on every path) with the record as last read, a lost
 * task settled. Returns 0 when ended, -ETIMEDOUT, -EINTR after
 * SIGINT/SIGTERM, or another negative error (TFS_ENOTASK if the task
 * vanished). Prints nothing. */
int cli_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms, tfs_record_t *rec);

#endif /* TASKFS_CLI_H */
