/* taskfs: durable tasks on disk.
 *
 * This is the public API of the core store (libtaskfs.a). Every function
 * that can fail returns 0 (or a count) on success and a negative error code
 * on failure: either a negated errno value or one of the TFS_E* codes below.
 * tfs_strerror() turns either kind into words.
 *
 * The store layout on disk:
 *
 *   <state>/owner.json              instance record of the newest acquirer
 *   <state>/tasks/<id>/record.json  task record, replaced atomically
 *   <state>/tasks/<id>/transcript   append-only output
 *   <state>/tasks/<id>/cancel       present = stop requested (JSON: by, at)
 *   <state>/tasks/<id>/lock         flock()ed by the supervisor while it lives
 *   <state>/keys/<key>              task key -> task id (file content)
 *
 * Faces never open these by name: they call this API (tfs_task_file_open
 * and friends name task files by role), so the layout is core's alone.
 *
 * Every id or key that comes from outside is checked with tfs_id_valid() or
 * tfs_key_valid() before it touches a path; every file is opened relative to
 * a directory fd with O_NOFOLLOW.
 */
#ifndef TASKFS_TASKFS_H
#define TASKFS_TASKFS_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes of our own, beyond errno. Like libuv's, they are negative and
 * far from any errno value. */
#define TFS_ENOTASK (-4001)      /* no task with that id or key */
#define TFS_EBADID (-4002)       /* id or key is not well formed */
#define TFS_ECORRUPT (-4003)     /* a file in the store does not parse */
#define TFS_EKEYCONFLICT (-4004) /* key already names a different command/cwd */
#define TFS_EFINISHED (-4005)    /* the task has already ended */
#define TFS_ESYMLINK (-4006)     /* a symlink was planted where a file belongs */
#define TFS_EFOREIGN (-4007)     /* the store belongs to another user */
#define TFS_EUNSAFE (-4008)      /* others may write to the store */
/* Queues, dependencies and control (include/taskfs/queue.h). */
#define TFS_EAMBIGUOUS (-4020)  /* an id prefix names more than one task */
#define TFS_ENOTRUNNING (-4021) /* the task is not running: nothing to pause, resume, signal */
#define TFS_ECYCLE (-4022)      /* dependencies that wait for each other */
#define TFS_ENOSTDIN (-4023)    /* the task was started without a stdin to write to */
#define TFS_ELIMIT (-4009)      /* a limit is malformed or cannot be applied */
#define TFS_ECONFIG (-4010)     /* the store's config file (or a key of it) is invalid */

const char *tfs_strerror(int err);

/* The release, as every face names it (--version, MCP, A2A). */
#define TFS_VERSION "0.1.0"

/* Limits. */
#define TFS_ID_MAX 32   /* task ids are much shorter; see tfs_id_valid */
#define TFS_KEY_MAX 128 /* [A-Za-z0-9._:-], 1..128 chars, not "." / ".." */
#define TFS_RECORD_VERSION 1
#define TFS_RECORD_MAX (4 << 20) /* record.json larger than this is corrupt */
#define TFS_IMPORTANT_K_DEFAULT 20
#define TFS_IMPORTANT_TEXT_MAX 512 /* bytes kept of one important line */
#define TFS_IMPORTANT_K_MAX 1000   /* largest K tfs_important_init accepts */
#define TFS_LAST_EXITS 5           /* worker exits remembered in the record */
#define TFS_QUEUE_NAME_MAX 64 /* queue names: 1..64 of [A-Za-z0-9._:-], not starting with '.' */

/* Time: milliseconds since the Unix epoch. */
int64_t tfs_now_ms(void);
/* Formats ms as RFC 3339 UTC with milliseconds: 2026-11-30T01:50:08.123Z.
 * buf must hold TFS_TIME_BUF bytes. */
#define TFS_TIME_BUF 32
char *tfs_time_format(int64_t ms, char buf[TFS_TIME_BUF]);
/* ms as the local time, to the second, the way people read it and --at
 * is written: "2026-12-01 18:04:05". Returns buf. */
char *tfs_time_format_local(int64_t ms, char buf[TFS_TIME_BUF]);
int tfs_time_parse(const char *s, int64_t *ms);

/* Returns a malloc'ed, NUL-terminated copy of s[0..len) that is valid UTF-8:
 * each invalid byte (and each NUL byte) becomes U+FFFD. *out_len (may be
 * NULL) gets the new length. NULL only when out of memory. */
char *tfs_utf8_sanitize(const char *s, size_t len, size_t *out_len);
/* Where to cut s[0..len) to keep at most max bytes without splitting a
 * character: len if it fits, else max, or the start of the valid UTF-8
 * character that max falls inside (invalid bytes are cut anywhere: each is
 * a U+FFFD of its own once sanitized). Reads s[0..len) only. */
size_t tfs_utf8_cut(const char *s, size_t len, size_t max);

/* ---- ids and keys ---------------------------------------------------- */

/* Task ids: 8 base36 chars of creation time in ms, '-', 6 random base36
 * chars, e.g. "mi4x7k2p-3fz9qa". Lexical order is creation order. */
int tfs_id_valid(const char *id); /* 1 if well formed, else 0 */
int tfs_key_valid(const char *key);
/* The same checks for counted strings (e.g. a JSON string with its length):
 * an embedded NUL byte makes the id or key invalid. */
int tfs_id_validn(const char *id, size_t len);
int tfs_key_validn(const char *key, size_t len);

/* ---- states ----------------------------------------------------------- */

typedef enum {
  TFS_QUEUED = 0,
  TFS_RUNNING,
  TFS_COMPLETED, /* worker exited 0 */
  TFS_FAILED,    /* exited non-zero, killed by a signal, could not start, crash loop */
  TFS_CANCELLED, /* a stop request ended it */
  TFS_LOST,      /* running, but the supervisor died without recording an end */
  TFS_PAUSED     /* its process tree is stopped (SIGSTOP) on request; not an end */
} tfs_state_t;

const char *tfs_state_name(tfs_state_t s);
int tfs_state_parse(const char *name, tfs_state_t *out); /* 0 or TFS_EBADID */
int tfs_state_terminal(tfs_state_t s);                   /* completed, failed, cancelled, lost */
/* The names, in order, for messages that list them. */
#define TFS_STATE_NAMES "queued, running, paused, completed, failed, cancelled, lost"
/* A comma-separated list of state names ("running,failed") into
 * TFS_STATE_BIT()s, OR'ed into *mask: 0, or TFS_EBADID for an empty list,
 * an empty item or a name that is none (that item, cut to badlen, in bad;
 * bad may be NULL). One reading for every face's state filter. */
int tfs_state_parse_list(const char *list, unsigned *mask, char *bad, size_t badlen);

typedef enum { TFS_RESTART_NO = 0, TFS_RESTART_ON_FAILURE, TFS_RESTART_ALWAYS } tfs_restart_t;

const char *tfs_restart_name(tfs_restart_t r);
int tfs_restart_parse(const char *name, tfs_restart_t *out);
/* A policy with "on-timeout" beside it, comma-separated: "on-failure",
 * "on-failure,on-timeout", "on-timeout" (restart only a worker stopped at
 * its timeout). 0 or TFS_EBADID (an unknown name, two policies). */
int tfs_restart_parse_list(const char *list, tfs_restart_t *out, int *on_timeout);

/* How the worker's stderr reaches the transcript. merged (the default):
 * its fd 1 and fd 2 are one pipe, so the transcript holds both streams in
 * exactly the order the program wrote them (what `cmd > file 2>&1`
 * records). split: two pipes, and the stderr-lines file says which lines
 * came from stderr; lines stay whole, but the order of lines written to
 * the two streams close together is the order the supervisor read them,
 * not always the order they were written. */
typedef enum { TFS_STDERR_MERGED = 0, TFS_STDERR_SPLIT } tfs_stderr_t;

const char *tfs_stderr_name(tfs_stderr_t m); /* "merged", "split" */
int tfs_stderr_parse(const char *name, tfs_stderr_t *out);

/* Where the worker runs: local (the default), a child of the supervisor on
 * this machine; slurm, a Slurm job the supervisor runs through srun (its
 * output, stop and exit come back through srun: supervisor/exec_slurm.c). */
typedef enum { TFS_ENGINE_LOCAL = 0, TFS_ENGINE_SLURM } tfs_engine_t;

const char *tfs_engine_name(tfs_engine_t e); /* "local", "slurm" */
int tfs_engine_parse(const char *name, tfs_engine_t *out);

/* ---- important lines --------------------------------------------------- */

/* What made a line important. 0 means "not important". */
typedef enum {
  TFS_LINE_PLAIN = 0,
  TFS_LINE_ERROR, /* error:, fatal, panic, Traceback, exception, segfault */
  TFS_LINE_WARNING,
  TFS_LINE_FAILURE, /* a test or build failure marker */
  TFS_LINE_SUMMARY, /* a test runner's or build tool's summary / success */
  TFS_LINE_CONTEXT, /* never from the classifier: a line shown around the lead */
} tfs_line_kind_t;

const char *tfs_line_kind_name(tfs_line_kind_t k);
int tfs_line_kind_parse(const char *name, tfs_line_kind_t *out);

/* Classifies one line (no trailing newline). Linear in len; never allocates;
 * examines at most the first 4 KiB. See docs/ARCHITECTURE.md. */
tfs_line_kind_t tfs_classify_line(const char *line, size_t len);

/* Lines shorter than this many bytes always classify as TFS_LINE_PLAIN (the
 * shortest markers, "ERR" and the UTF-8 crosses, take three), so a caller
 * feeding floods of short lines may skip tfs_classify_line() for them. */
#define TFS_CLASSIFY_MIN_LEN 3

typedef struct {
  int64_t line; /* 1-based line number in the transcript */
  tfs_line_kind_t kind;
  char *text; /* NUL-terminated, at most TFS_IMPORTANT_TEXT_MAX bytes,
                 cut lines end in "..."; ANSI colour sequences and a
                 trailing '\r' removed; valid UTF-8 (tfs_utf8_sanitize)
                 with C0 controls but tab also as U+FFFD */
} tfs_important_line_t;

#define TFS_CONTEXT_MAX 8        /* context lines kept around the lead */
#define TFS_CONTEXT_TEXT_MAX 240 /* bytes kept of one context line */

struct tfs__lead_tracker;
struct tfs__important_raw;

/* First K and last K important lines. "last" never repeats a line that is
 * in "first"; last is kept in order, oldest first, once finalized by
 * tfs_important_last().
 *
 * The lead is the first error: the important line that best says what went
 * wrong, chosen as the output goes by (core/lead.c): the first error or
 * failure, replaced by a line that says more within the next lines (the
 * exception after "Traceback", the assertion after "--- FAIL:"); context
 * holds the lines the tool printed around it (the traceback's last frame,
 * a caret's message, Expected/Received, "-->", javac's "symbol:"), in line
 * order, at most TFS_CONTEXT_MAX. Both are kept whatever the first/last K
 * rings drop. */
typedef struct {
  int k;
  int64_t total; /* important lines seen in all */
  size_t nfirst;
  tfs_important_line_t *first; /* k slots */
  size_t nlast;                /* ring buffer of k slots */
  size_t last_head;
  tfs_important_line_t *last;
  tfs_important_line_t lead; /* lead.line 0: none (yet) */
  size_t ncontext;
  tfs_important_line_t *context;     /* TFS_CONTEXT_MAX slots, kind TFS_LINE_CONTEXT */
  int lead_final;                    /* the lead and its context no longer change */
  struct tfs__lead_tracker *tracker; /* capture state while they may */
  struct tfs__important_raw *raw;    /* feeding state: a memo, the last ring's fed lines */
} tfs_important_t;

/* k <= 0: TFS_IMPORTANT_K_DEFAULT; k > TFS_IMPORTANT_K_MAX: -EINVAL. A zeroed
 * struct may be freed. */
int tfs_important_init(tfs_important_t *imp, int k);
void tfs_important_free(tfs_important_t *imp);
/* Feeds one line; classifies it and keeps it if important. */
int tfs_important_feed(tfs_important_t *imp, int64_t lineno, const char *line, size_t len);
/* Adds an already classified line (used when loading a record). */
int tfs_important_add(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind, const char *text,
                      size_t len);
/* The i-th of the last lines, oldest first (0 <= i < nlast). A line fed
 * into the ring gets its kept text here, when it is first read: a flood of
 * important lines costs a copy of each, not a text each (its text is NULL
 * only if that allocation failed). */
const tfs_important_line_t *tfs_important_last(const tfs_important_t *imp, size_t i);
/* Sets the lead and adds a context line (used when loading a record): the
 * lead no longer changes when more lines are fed. */
int tfs_important_set_lead(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind,
                           const char *text, size_t len);
int tfs_important_add_context(tfs_important_t *imp, int64_t lineno, const char *text, size_t len);

/* ---- the record -------------------------------------------------------- */

#include "taskfs/limits.h"

typedef struct {
  int64_t started_ms;
  int64_t ended_ms;
  int exit_code;   /* -1 if killed by a signal */
  int signal;      /* 0 if it exited */
  int requested;   /* 1 if a stop request caused this exit */
  int timed_out;   /* 1 if its wall-clock limit ran out and it was stopped */
  tfs_usage_t use; /* what this run used */
} tfs_exit_t;

/* The executor of a task and, for a cluster engine, its current (or last)
 * job: record.json's "executor". Strings are NULL while unknown. */
typedef struct {
  tfs_engine_t engine;
  char **options; /* the engine's options (srun's), NULL-terminated or NULL */
  int noptions;
  char *job_id;     /* Slurm's job id */
  char *job_name;   /* the name it was submitted under */
  char *job_state;  /* Slurm's JobState: PENDING, RUNNING, COMPLETED, TIMEOUT, ... */
  char *job_reason; /* Slurm's reason: why it pends, or why it ended */
  char *partition;
  char *nodes;           /* node list */
  int64_t queue_wait_ms; /* start minus submit time; -1 until it started */
} tfs_executor_t;

typedef struct {
  char id[TFS_ID_MAX + 1];
  char key[TFS_KEY_MAX + 1]; /* "" if none */
  int64_t number;            /* the store-local task number (1, 2, ...); 0: none (older records) */
  char **argv;               /* NULL-terminated */
  int argc;
  char *cwd;
  char **env_names; /* names only, never values; NULL-terminated */
  int env_count;
  tfs_state_t state;
  int exit_code;                            /* -1 if none (yet) */
  int signal;                               /* 0 if none */
  char *reason;                             /* why it ended, in words; NULL while running */
  int64_t created_ms, started_ms, ended_ms; /* 0 = not yet */
  int64_t alive_ms;                         /* last time the supervisor was known alive */

  /* The supervisor. */
  pid_t supervisor_pid;
  int64_t supervisor_started_ms;
  char *supervisor_exe;
  char *supervisor_host;

  /* The current (or last) worker. */
  pid_t worker_pid;
  pid_t worker_pgid;

  /* Policy. */
  tfs_restart_t restart;
  int64_t min_uptime_ms;  /* a worker exiting sooner is a quick exit */
  int max_restarts;       /* restarts in all, whatever the uptime; -1: no limit */
  int max_quick_restarts; /* restarts after quick exits in a row (crash loop) */
  int64_t grace_ms;
  int restart_on_timeout; /* a worker stopped at its timeout is restarted too */
  int restarts;           /* workers started after the first */
  int nexits;             /* newest last, at most TFS_LAST_EXITS */
  tfs_exit_t exits[TFS_LAST_EXITS];

  /* The wall-clock and resource limits, and what the task used. */
  tfs_limits_t limits;
  tfs_usage_t usage; /* every run together */
  int64_t queued_ms; /* from creation to the first worker's start */

  /* Stop request that ended the task, if any. */
  char *cancel_by;
  int64_t cancel_ms;

  /* The process that created the task (tfs_task_create): while the task
   * is queued and no supervisor has taken it, this is who will launch it.
   * pid 0: not recorded (records from before). */
  pid_t creator_pid;
  uint64_t creator_start_ticks; /* its start time (/proc/<pid>/stat) */
  char creator_boot[40];        /* the boot id it ran under */

  /* Transcript counters, as of the last record save. */
  int64_t lines;
  int64_t bytes;
  /* Output the transcript could not keep (a full disk): whole lines are
   * dropped, never a part of one. 0 when nothing was lost. */
  int64_t lost_bytes, lost_lines;
  int64_t lost_first_ms, lost_last_ms;
  tfs_stderr_t stderr_mode; /* how stderr was captured (records without it: split) */
  tfs_important_t important;

  /* Scheduling (include/taskfs/queue.h): the queue it runs in ("": none,
   * no limit), the tasks it starts after, the earliest start, and whether
   * its worker's stdin is fed from the store (TFS_FILE_STDIN). */
  char queue[TFS_QUEUE_NAME_MAX + 1];
  char **after; /* task ids, NULL-terminated, or NULL */
  int nafter;
  int64_t not_before_ms; /* 0: none */
  int with_stdin;
  tfs_executor_t exec; /* records without it: local */
} tfs_record_t;

/* Initializes an empty record (state queued, exit_code -1, default policy:
 * restart no, min_uptime 1000 ms, max_restarts -1 (no limit),
 * max_quick_restarts 5, grace 5000 ms, K 20). */
void tfs_record_init(tfs_record_t *rec);
/* The reason of a task that never ran because a task it starts after
 * (--after) did not complete begins with this; tfs_record_skipped() says
 * 1 for such a task (failed, no worker ever started). */
#define TFS_REASON_NOT_RUN "not run: "
int tfs_record_skipped(const tfs_record_t *rec);
/* The reason of a task that never ran because its store had no room left
 * for its record (not even for the end) begins with this;
 * tfs_record_store_full() says 1 for such a task. */
#define TFS_REASON_STORE_FULL "no space left on the store "
int tfs_record_store_full(const tfs_record_t *rec);
void tfs_record_free(tfs_record_t *rec);
/* Record <-> JSON text. tfs_record_parse() returns TFS_ECORRUPT with a
 * message in err (if not NULL) when the JSON is not a valid v1 record. */
char *tfs_record_dump(const tfs_record_t *rec); /* malloc'ed JSON, or NULL */
int tfs_record_parse(const char *json, size_t len, tfs_record_t *rec, char *err, size_t errlen);
/* Sets argv/cwd/env names (copies). */
int tfs_record_set_command(tfs_record_t *rec, char *const argv[], const char *cwd);
int tfs_record_add_env_name(tfs_record_t *rec, const char *name);
/* Sets the ids the task starts after (copies; NULL or empty: none). */
int tfs_record_set_after(tfs_record_t *rec, char *const after[]);
/* Sets the executor's engine and its options (copies; NULL: none). */
int tfs_record_set_engine(tfs_record_t *rec, tfs_engine_t engine, char *const options[]);
/* Forgets the job fields of an executor (a new job is on its way). */
void tfs_executor_clear_job(tfs_executor_t *ex);
int tfs_record_set_reason(tfs_record_t *rec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Frees a NULL-terminated vector of malloc'ed strings (NULL is fine): a
 * record's argv and env names, and a face's own vectors. */
void tfs_strv_free(char **v);

/* ---- the store ---------------------------------------------------------- */

typedef struct tfs_store tfs_store_t;

/* Resolves the state directory without creating anything: explicit (may be
 * NULL), else $TASKFS_STATE_DIR, else $XDG_STATE_HOME/taskfs, else
 * $HOME/.local/state/taskfs. An explicit "" or a TASKFS_STATE_DIR set to
 * "" is -EINVAL (a mistake, never the default store). */
int tfs_store_resolve(const char *explicit_dir, char *buf, size_t len);

/* Opening a store: one path for every caller, always checked. The store's
 * directory and its tasks/ and keys/ must belong to the caller's effective
 * uid and be writable by nobody else: a directory another user owns, or
 * one others may write to, may hold records (commands to run), keys and
 * stop requests someone else planted. Such a store is refused:
 * TFS_EFOREIGN (another user's) or TFS_EUNSAFE (others may write to it),
 * with why (may be NULL) naming the directory, its owner or its mode.
 * Flags: */
/* Create what is missing (0700; a writer also takes group/other read bits
 * away). */
#define TFS_STORE_CREATE 1u
/* Another user's store, read only: its parts must all belong to its owner
 * and be writable by nobody else; every call that would write through the
 * handle is -EROFS, and a task read as lost is not settled. Never with
 * CREATE. */
#define TFS_STORE_FOREIGN 2u
int tfs_store_open_flags(const char *dir, unsigned flags, tfs_store_t **out, char *why,
                         size_t whylen);
/* Opens (creating 0700 if needed: <dir>, tasks/, keys/) the store. */
int tfs_store_open(const char *dir, tfs_store_t **out);
/* Opens an existing store without creating anything (-ENOENT if absent). */
int tfs_store_open_existing(const char *dir, tfs_store_t **out);
void tfs_store_close(tfs_store_t *store);
/* For long-lived readers: if the store's directory was removed and
 * recreated since it was opened, reopens it in place, with the checks of
 * an open; the store it holds is checked again too. Returns 1 if it
 * reopened, 0 if nothing changed, a negative error if the store is gone
 * now (the store keeps its old fds then; call again later), or
 * TFS_EFOREIGN / TFS_EUNSAFE if what the path names now fails the checks:
 * the handle is then refused (every call on it returns that error, and
 * tfs_store_refusal() says why) until a refresh finds a store that
 * passes. */
int tfs_store_refresh(tfs_store_t *store);
/* Why the handle is refused, in words (naming the directory and its owner
 * or mode), or NULL while it serves. */
const char *tfs_store_refusal(const tfs_store_t *store);
/* For the supervisor: opens tasks/<id> once (O_DIRECTORY|O_NOFOLLOW),
 * checks it as the store's directories are checked (TFS_EFOREIGN,
 * TFS_EUNSAFE, with why), and from then on reaches everything of that
 * task through this fd: a tasks/<id> replaced later (a symlink, another
 * directory) is never followed. */
int tfs_store_bind_task(tfs_store_t *store, const char *id, char *why, size_t whylen);
/* Opens a second, independent handle on the same store (same path, same
 * checks: a writer's handle stays a writer's). A store handle is not
 * shared across threads while one of them may call tfs_store_refresh()
 * (which swaps and closes the handle's directory fds): a thread that works
 * beside a refreshing one (the MCP server's launches on the libuv thread
 * pool) takes its own handle with this call and closes it when done. */
int tfs_store_reopen(const tfs_store_t *store, tfs_store_t **out);
const char *tfs_store_path(const tfs_store_t *store);
/* Stats <state>/tasks (the mount's tasks/ directory attributes). */
int tfs_store_stat(const tfs_store_t *store, struct stat *st);
/* Stats <state>/owner.json; -ENOENT if no owner was ever recorded. */
int tfs_owner_stat(const tfs_store_t *store, struct stat *st);

/* Instance record (owner.json). */
typedef struct {
  pid_t pid;
  int64_t started_ms;
  uint64_t start_ticks; /* /proc/<pid>/stat starttime: defeats PID reuse */
  char boot_id[40];
  char exe[256];
  char host[256];
  char role[32]; /* "mcp", "mount", "cli", ... */
  int alive;     /* computed on read, never stored */
} tfs_owner_t;

/* Records this process as the store's owner. Never refuses: if a live
 * previous owner existed, *previous is filled with previous->alive = 1
 * (else previous->alive = 0). previous may be NULL. */
int tfs_store_acquire(tfs_store_t *store, const char *role, tfs_owner_t *previous);
/* Read-only query; -ENOENT if no owner was ever recorded. */
int tfs_store_owner(tfs_store_t *store, tfs_owner_t *out);
/* Fills an owner for the calling process (used for supervisors too). */
int tfs_owner_self(tfs_owner_t *out, const char *role);
char *tfs_owner_dump(const tfs_owner_t *o); /* malloc'ed JSON */

/* ---- what `taskfs serve` keeps in the store (core/serve.c) ------------ */

/* A token is TFS_TOKEN_MIN to TFS_TOKEN_MAX characters of A-Z a-z 0-9 . _
 * ~ - (URL-safe: it goes into a login URL as it is). */
#define TFS_TOKEN_MIN 32
#define TFS_TOKEN_MAX 256
int tfs_token_valid(const char *s, size_t len);
/* The store's serve token (<state>/serve.token) into out (TFS_TOKEN_MAX +
 * 1 bytes): read when the file exists, else made (32 random bytes, hex,
 * mode 0600, written durably; of two servers starting at once one token
 * wins and both read it) with *created = 1. A token file is used only if
 * it is a regular file of the caller's that nobody else may read or write
 * (else TFS_EFOREIGN / TFS_EUNSAFE) holding one token line (else
 * TFS_ECORRUPT); why says what is wrong and what to do. */
int tfs_serve_token(tfs_store_t *store, char *out, size_t outlen, int *created, char *why,
                    size_t whylen);
/* The same checks and format for a token file the user names
 * (--token-file); the path may be anywhere. */
int tfs_token_file_read(const char *path, char *out, size_t outlen, char *why, size_t whylen);
/* The path of the store's token file, for messages. */
int tfs_serve_token_path(const tfs_store_t *store, char *buf, size_t len);
/* Opens <state>/serve.log for appending (0600; started afresh once past
 * 1 MiB): where a server in the background writes what it would say on
 * stderr. Returns the fd or a negative error. */
int tfs_serve_log_open(tfs_store_t *store);

/* ---- tasks ----------------------------------------------------------- */

typedef struct {
  char *const *argv;      /* required, argv[0] non-empty */
  const char *cwd;        /* absolute; NULL = current directory */
  const char *key;        /* NULL or "" for none */
  char *const *env_names; /* NULL-terminated or NULL */
  tfs_restart_t restart;
  int64_t min_uptime_ms;    /* < 0: default */
  int max_restarts;         /* restarts in all; < 0: default (no limit) */
  int64_t grace_ms;         /* < 0: default */
  int important_k;          /* <= 0: default */
  tfs_stderr_t stderr_mode; /* 0: merged, the default */
  int rerun;                /* with a key whose task has ended: make a new task
                               and point the key at it */
  int replace;              /* rerun, also when the ended task of the key ran
                               another command or directory (else
                               TFS_EKEYCONFLICT); the old task stays */
  const char *queue;        /* NULL: the store's default (config "queue"), if any;
                               "": no queue (runs at once) */
  char *const *after;       /* NULL-terminated ids it starts after, or NULL */
  int64_t not_before_ms;    /* 0: no earliest start */
  int with_stdin;           /* the worker's stdin is fed by tfs_stdin_write() */
  /* Quick exits in a row (within min_uptime) that make a crash loop and
   * end the restarts: the record's max_quick_restarts + 1, so at least 1
   * (never restart a quick exit); 0: default (6). */
  int crash_loop_exits;
  int restart_on_timeout;     /* restart a worker stopped at its timeout too */
  const tfs_limits_t *limits; /* the timeout and limits given; NULL: none
                                 (the store's defaults apply either way) */
  char *why;                  /* may be NULL: the words of a refusal that
                                 needs them (TFS_ELIMIT, TFS_ECONFIG) */
  size_t whylen;
  tfs_engine_t engine;         /* 0: local, the default */
  char *const *engine_options; /* the engine's options (srun's); NULL: none */
} tfs_task_spec_t;

/* Creates a task in state queued and writes its record. With a key:
 *  - no task has the key: this call creates it; *existed = 0.
 *  - the key names a task with the same argv and cwd: its id is returned and
 *    *existed = 1, unless that task has ended and spec->rerun is set, in
 *    which case a new task is made and the key now names it (*existed = 0).
 *  - the key names a task with a different argv or cwd: TFS_EKEYCONFLICT,
 *    unless that task has ended and spec->replace is set: then as rerun.
 * When N processes race on one key, exactly one creates the task. */
int tfs_task_create(tfs_store_t *store, const tfs_task_spec_t *spec, char id_out[TFS_ID_MAX + 1],
                    int *existed);

/* What a face checks before it makes a task (MCP's start tool, A2A's
 * SendMessage), so that all refuse the same input in the same words: a
 * command names a program, no argument is longer than the kernel takes
 * (TFS_ARG_BYTES_MAX: execve's MAX_ARG_STRLEN less its NUL), at most
 * TFS_ARGC_MAX arguments of TFS_ARGV_BYTES_MAX bytes in all (-E2BIG), and
 * cwd is an existing absolute directory. 0, or a negative error with why
 * in words (what is wrong, what to do). */
#define TFS_ARG_BYTES_MAX (128 * 1024 - 1)
#define TFS_ARGC_MAX 4096
#define TFS_ARGV_BYTES_MAX (1024 * 1024)
int tfs_command_check(char *const *argv, char *why, size_t whylen);
int tfs_cwd_check(const char *cwd, char *why, size_t whylen);

/* Looks a key up: fills id_out, or TFS_ENOTASK. */
int tfs_key_lookup(tfs_store_t *store, const char *key, char id_out[TFS_ID_MAX + 1]);
/* Task numbers (core/number.c): every task gets one at creation, 1, 2,
 * 3, ..., never reused while it exists. tfs_number_parse: 1 and *out if s
 * is a bare decimal number without a leading zero; tfs_is_decimal: 1 if s
 * is only digits (a bare number, never an id prefix or a new key).
 * tfs_number_lookup: the id of the task with number n, or TFS_ENOTASK. */
int tfs_number_parse(const char *s, int64_t *out);
int tfs_is_decimal(const char *s);
int tfs_number_lookup(tfs_store_t *store, int64_t n, char id_out[TFS_ID_MAX + 1]);
/* Accepts an id, a task number (a bare decimal: the number, else a key
 * of only digits from before numbers) or a key (ids are tried first). */
int tfs_task_resolve(tfs_store_t *store, const char *id_or_key, char id_out[TFS_ID_MAX + 1]);
/* tfs_task_resolve(), then a unique prefix of an id, of at least
 * TFS_ID_PREFIX_MIN characters (a user types "mx45bwq6"): TFS_EAMBIGUOUS
 * when it names several tasks, with the candidates (newest last, at most
 * max_cands; free with tfs_ids_free) in *cands if not NULL; TFS_ENOTASK
 * when it names none (a shorter prefix names none either). */
#define TFS_ID_PREFIX_MIN 4
int tfs_task_resolve_prefix(tfs_store_t *store, const char *arg, char id_out[TFS_ID_MAX + 1],
                            char ***cands, size_t *ncands, size_t max_cands);
/* Every key in the store (well-formed names of regular files in keys/),
 * sorted; *keys is a malloc'ed array of malloc'ed strings (free with
 * tfs_ids_free). A key may name a task that is gone meanwhile:
 * tfs_key_lookup() then tfs_task_stat() tell. */
int tfs_key_list(tfs_store_t *store, char ***keys, size_t *n);

/* Saves rec atomically (temp file, rename: no reader ever sees half a
 * record); a record of an ended task also durably (the temp file fsynced
 * before the rename, the directory after it), so that it survives a power
 * loss. Earlier states are not fsynced: after a crash the task reads lost
 * whatever the record said (docs/faults.md). */
int tfs_task_save(tfs_store_t *store, const tfs_record_t *rec);
/* The same with TFS_SAVE_NOSYNC: never fsynced, even for an end. */
#define TFS_SAVE_NOSYNC 1u
int tfs_task_save_flags(tfs_store_t *store, const tfs_record_t *rec, unsigned flags);
/* Loads a record. TFS_ENOTASK if unknown, TFS_ECORRUPT if unreadable. If the
 * record says running/queued-with-supervisor but the task lock is free, the
 * returned record reads TFS_LOST (nothing is written; see
 * tfs_task_settle_lost). rec is initialized by the call, whatever it held
 * (uninitialized memory is fine; a record that still owns allocations
 * would leak them), and is left freeable on every path: tfs_record_free()
 * after any return, success or error, is right and safe. */
int tfs_task_load(tfs_store_t *store, const char *id, tfs_record_t *rec);
/* tfs_task_load(), and for a record that does not load (TFS_ECORRUPT,
 * TFS_ESYMLINK) why, in words, into why: the parser's message ("record.json:
 * field 'state': ..."), "it is a directory", "it is empty", "it is a
 * symlink", ... (`taskfs show`). why may be NULL; "" when it loads. */
int tfs_task_load_reason(tfs_store_t *store, const char *id, tfs_record_t *rec, char *why,
                         size_t whylen);
/* If the task reads running but its lock is free, takes the lock and writes
 * state lost. Returns 1 if it wrote, 0 if nothing to do. */
int tfs_task_settle_lost(tfs_store_t *store, const char *id);

/* If the task is still queued, records it failed with exit code `code`
 * (127: it could not start) and the reason, ended now. Done under the task
 * lock, taken without waiting: a supervisor that holds it owns the record
 * (-EBUSY, nothing written). Returns 1 if it wrote, 0 if the task was not
 * queued (any more). */
int tfs_task_fail_queued(tfs_store_t *store, const char *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 1 if a supervisor holds the task's lock, 0 if not, < 0 on error. */
int tfs_task_alive(tfs_store_t *store, const char *id);
/* Takes the task lock for the calling process's lifetime (the supervisor
 * does, once). Waits up to 2 s while the lock is held, by the others who
 * take it for a moment only (settling a lost task, failing a queued one,
 * forgetting it); still held then, it is another supervisor's: -EBUSY.
 * Returns the lock fd (O_CLOEXEC; closing it releases the lock). */
int tfs_task_lock(tfs_store_t *store, const char *id);

/* The listing every face uses (`taskfs ls`, MCP lists, the mount, the
 * viewers): ids from one readdir, records loaded on up to two threads in
 * chunks (the JSON parse is the cost), handed to cb on the calling thread
 * in order. */
#define TFS_STATE_BIT(s) (1u << (s))
typedef struct {
  unsigned states;    /* TFS_STATE_BIT()s to keep; 0: every state */
  size_t limit;       /* 0: all; else only the newest `limit` kept tasks */
  int newest_first;   /* order of delivery; default oldest first */
  const char *before; /* only ids older than this one (a page cursor) */
  int with_json;      /* also hand cb each record as record.json text */
  int threads;        /* 0: two when the machine has two CPUs; 1: one */
  size_t scan_max;    /* 0: no cap; else read at most this many records, so
                         that one call stays short (an event loop's page):
                         stats say where it stopped */
} tfs_list_opts_t;

/* Counts of a listing. */
typedef struct {
  size_t ids;                         /* ids in tasks/ */
  size_t shown;                       /* records handed to cb */
  size_t corrupt;                     /* unreadable records skipped */
  char first_corrupt[TFS_ID_MAX + 1]; /* the oldest of them */
  char last_examined[TFS_ID_MAX + 1]; /* with a limit: where the walk stopped */
  size_t left;                        /* ids the walk did not reach (stopped by
                                         the limit, scan_max or cb): newest
                                         first, the next page is before =
                                         last_examined */
} tfs_list_stats_t;

/* rec as tfs_task_load() reads it (a dead supervisor's task reads lost);
 * json (with opts->with_json; else NULL) is tfs_record_dump() of it, len
 * bytes, ending in '\n'. Both are valid during the call only. Return
 * non-zero to stop. */
typedef int (*tfs_list_cb)(const tfs_record_t *rec, const char *json, size_t len, void *arg);
/* opts may be NULL (every task, oldest first). stats may be NULL. A task
 * being created (no record yet, younger than 5 s) or forgotten meanwhile is
 * skipped silently. Returns 0, or a negative error (-ENOMEM, a failed
 * readdir). */
int tfs_task_list_opts(tfs_store_t *store, const tfs_list_opts_t *opts, tfs_list_cb cb, void *arg,
                       tfs_list_stats_t *stats);
/* One page of the listing for a face that pages (MCP's lists, the JSON
 * API, A2A's ListTasks): newest first, older than cursor (the last id the
 * previous page examined; NULL or "": from the newest), at most limit
 * records kept, at most scan_max (0: TFS_PAGE_SCAN_MAX) read, so that a
 * state filter over a large store never holds an event loop for long: the
 * cursor goes on. */
#define TFS_PAGE_SCAN_MAX 5000
typedef struct {
  unsigned states;    /* TFS_STATE_BIT()s; 0: every state */
  size_t limit;       /* records kept */
  const char *cursor; /* the previous page's next, or NULL */
  size_t scan_max;
  int with_json; /* hand cb each record's text too (tfs_list_opts_t) */
  /* filled by the page */
  size_t total;              /* tasks in the store */
  int capped;                /* the scan cap ended the page before limit */
  char next[TFS_ID_MAX + 1]; /* the next page's cursor; "" after the last */
} tfs_page_t;
/* Returns 0; TFS_ENOTASK for a cursor that names no task here (not handed
 * out by this store, or its task removed since), or the listing's error,
 * with what was wrong in err. */
int tfs_task_page(tfs_store_t *store, tfs_page_t *pg, tfs_list_cb cb, void *arg, char *err,
                  size_t errlen);
/* All task ids, oldest first, without reading any record. *ids is a
 * malloc'ed array of malloc'ed strings; free with tfs_ids_free. */
int tfs_task_ids(tfs_store_t *store, char ***ids, size_t *n);
/* As tfs_task_ids(), only the ids that are real directories (what
 * tfs_task_stat() accepts: a symlink or a file planted under an id is left
 * out), from d_type where the file system gives it (the mount's tasks/). */
int tfs_task_dirs(tfs_store_t *store, char ***ids, size_t *n);
void tfs_ids_free(char **ids, size_t n);
/* Number of tasks, without reading records. */
int64_t tfs_task_count(tfs_store_t *store);

/* Deletes a task's directory and its key. Only a task that has ended
 * (completed, failed, cancelled, lost) or whose record is corrupt is
 * deleted, and only while this call holds its lock (taken without
 * waiting): -EBUSY for a live supervisor, a task still queued (its
 * supervisor may be on its way) and a directory still being created (no
 * record yet, younger than 5 s). TFS_ENOTASK if there is no such task. */
int tfs_task_forget(tfs_store_t *store, const char *id);
/* Deletes the oldest tasks so that at most keep remain, by the rules of
 * tfs_task_forget(): a task that has not ended is never deleted, so more
 * than keep remain while tasks run or wait. Returns the number deleted. */
int tfs_task_prune(tfs_store_t *store, size_t keep);
/* Prune by rules: the tasks that match every rule given go, by the rules
 * of tfs_task_forget() (a live task never does). */
typedef struct {
  unsigned states;       /* TFS_STATE_BIT()s; 0: any state that has ended */
  int64_t older_than_ms; /* > 0: only tasks that ended (else were created)
                            longer ago than this */
  size_t keep;           /* of the matching tasks the newest keep stay; SIZE_MAX: none */
} tfs_prune_opts_t;
int tfs_task_prune_opts(tfs_store_t *store, const tfs_prune_opts_t *opts);

/* ---- stop requests ---------------------------------------------------- */

/* The doorbell (TFS_FILE_DOORBELL) is a FIFO the supervisor reads; a stop
 * request writes one byte into it after the cancel file, so that no
 * inotify watch is needed to notice the request at once. */

/* Records a stop request (who: free text, e.g. "cli pid 123 uid 0"), then
 * rings the task's doorbell (never writing to anything but a FIFO).
 * TFS_EFINISHED if the task has already ended: nothing is left written,
 * also when it ended on its own between the check and the write (the
 * request then removes the file it wrote, if it is still its own). */
int tfs_cancel_request(tfs_store_t *store, const char *id, const char *who);
/* 1 if a stop is requested (fills who/when if not NULL), 0 if not. For a
 * task that has ended, only the request the record says ended it counts:
 * a stale cancel file beside an end of its own reads as 0. */
int tfs_cancel_query(tfs_store_t *store, const char *id, char *who, size_t wholen, int64_t *at_ms);
/* What a face shows as the task's stop request: 1 if one is pending (as
 * tfs_cancel_query), or the task has ended by one (the request its record
 * names, also once the supervisor has consumed the cancel file), else 0. */
int tfs_cancel_status(tfs_store_t *store, const char *id, char *who, size_t wholen, int64_t *at_ms);
int tfs_cancel_clear(tfs_store_t *store, const char *id);
/* The supervisor's end of the doorbell: a new FIFO in place of whatever
 * had the name, opened for reading and writing, non-blocking. Returns the
 * fd, or a negative error (then stop requests are noticed by a poll). The
 * supervisor removes it at its end (tfs_task_file_remove). */
int tfs_doorbell_open(tfs_store_t *store, const char *id);

/* ---- transcript -------------------------------------------------------- */

/* Opens the transcript for appending (O_APPEND|O_CREAT, 0600). */
int tfs_transcript_open_append(tfs_store_t *store, const char *id);
/* Appends data with a single write(); with add_newline, a '\n' is added in
 * the same write. Returns 0 or a negative errno (e.g. -ENOSPC). */
int tfs_transcript_append(int fd, const char *data, size_t len, int add_newline);

/* Line callback: line without its '\n' (line[len] is '\0'; the line itself
 * may hold NUL bytes); lineno 1-based; partial = 1 for a final line that has
 * no newline (only delivered when asked). A line longer than 1 MiB is
 * delivered in pieces of 1 MiB so memory stays bounded: every piece but the
 * last comes with partial = 2 and the same lineno; the last piece carries
 * partial = 0 (or 1 if the line has no newline yet). Return non-zero to
 * stop. */
typedef int (*tfs_line_cb)(int64_t lineno, const char *line, size_t len, int partial, void *arg);

/* Reads lines [from_line, from_line + max_lines) (1-based). A trailing
 * partial line is delivered with partial = 1. Returns lines delivered. */
int64_t tfs_transcript_read(tfs_store_t *store, const char *id, int64_t from_line,
                            int64_t max_lines, tfs_line_cb cb, void *arg);

/* The last N lines, one definition for every face: a final line without
 * its newline counts as one of the N, as in tail(1). For "a\nb\nc" the
 * last line is "c" and the last two are "b\nc". */

/* Where the last n lines of the transcript start (n >= 0; 0: its end) and
 * the 1-based number of the first of them; *size: the transcript's size
 * then. A task that wrote nothing yet: all 0 (lineno 1). */
int tfs_transcript_tail(tfs_store_t *store, const char *id, int64_t n, off_t *offset,
                        int64_t *first_lineno, off_t *size);
/* Writes the transcript byte for byte onto out_fd: all of it (last_n < 0)
 * or its last last_n lines, up to its size at the call (a task writing fast
 * cannot keep the copy chasing it). Returns 0, -EPIPE when the reader of
 * out_fd went away (SIGPIPE is the caller's to ignore), or another
 * negative error. */
int tfs_transcript_copy(tfs_store_t *store, const char *id, int64_t last_n, int out_fd);
/* The end of the transcript bounded in bytes, for a viewer (the MCP
 * transcript resource): its last whole lines that fit in max bytes (a
 * final line without its newline counts, as above); when even the last
 * line is longer, its last max bytes. *text: malloc'ed, NUL-terminated,
 * *len bytes as written (not sanitized; it may hold NUL bytes); *size
 * (may be NULL): the transcript's size then, so *len < *size says the
 * text was cut. A task that wrote nothing yet: "" and 0. */
int tfs_transcript_tail_bytes(tfs_store_t *store, const char *id, size_t max, char **text,
                              size_t *len, off_t *size);

/* Follower: returns only what is new since the previous call.
 * last_n >= 0: the first call starts at the last last_n lines (as
 * tfs_transcript_tail() counts them), later calls return what was appended
 * since; last_n < 0: from the start. A follower never starts inside a
 * line: with last_n = 0 and a line still being written, it starts at that
 * line, delivered whole once completed, or flushed after it grew (flushed
 * as it was at the open, it was none of the last 0 lines). A partial line
 * is held back unless flush_partial: 1 delivers it as a final line
 * (partial = 1; use it once the task has ended), 2 as a piece of the line
 * (partial = 2) whose rest comes later under the same number (a prompt the
 * supervisor wrote while the task runs). So with 0 the first call after
 * opening delivers last_n - 1 lines while the last is incomplete. A file that shrank is read again from the start; a file that
 * vanished yields nothing until it reappears. */
typedef struct tfs_follower tfs_follower_t;
int tfs_follower_open(tfs_store_t *store, const char *id, int64_t last_n, tfs_follower_t **out);
/* The same, with the transcript taken to end at upto (upto < 0: no end):
 * where a follower opened when the size was upto starts (what a face that
 * opens it later, on a thread pool, needs). */
int tfs_follower_open_upto(tfs_store_t *store, const char *id, int64_t last_n, off_t upto,
                           tfs_follower_t **out);
int64_t tfs_follower_next(tfs_follower_t *f, int flush_partial, tfs_line_cb cb, void *arg);
/* A follower from a byte offset (a reader that reconnects where it
 * stopped): it starts at the first line that starts at or after offset,
 * so an offset inside a line skips the rest of that line, also of a line
 * still being written (it is not handed out when completed). An offset
 * past the end is the end. Lines keep their numbers from the start. */
int tfs_follower_open_at(tfs_store_t *store, const char *id, off_t offset, tfs_follower_t **out);
/* A follower from line lineno (>= 1; untilPattern after sinceLine): lines
 * before it are counted, not handed out, from the line index's checkpoint
 * at or before it, so opening costs at most an interval, not the file. */
int tfs_follower_open_line(tfs_store_t *store, const char *id, int64_t lineno,
                           tfs_follower_t **out);
/* During a callback of tfs_follower_next(): the byte offset just after the
 * line (or piece) handed out, its '\n' included; between calls: where the
 * next call starts. What a reader gives tfs_follower_open_at() to go on. */
off_t tfs_follower_line_end(const tfs_follower_t *f);
/* Lets the follower go on with another handle of the same store (one
 * tfs_store_reopen() made, or the one it was reopened from): a follower
 * holds no fd of its handle, only where it stands, so one opened on a
 * thread pool with the thread's own handle (the open counts the lines
 * before its start: the line index, then up to an interval of the file,
 * or the whole file where a rebuild of the index is due) goes on with the loop's,
 * and the thread's handle can be closed. */
void tfs_follower_rebind(tfs_follower_t *f, tfs_store_t *store);
void tfs_follower_close(tfs_follower_t *f);

/* ---- watching and waiting -------------------------------------------------- */

/* One watch serves any number of tasks: "tell me when task X changes".
 * It is an inotify instance behind an fd that a face puts under ppoll() or
 * a uv_poll_t, so core stays free of any event loop. Events only say "look
 * again": a watcher re-reads the record or the transcript. A supervisor
 * that dies changes no file, so every watcher also re-checks every
 * tfs_watch_tick_ms(). Without inotify (TASKFS_NO_INOTIFY=1, or the user's
 * inotify instances or watches used up) the watch still works, by the tick
 * alone. */
typedef struct tfs_watch tfs_watch_t;

/* What changed (tfs_watch_add() masks and callback bits). */
#define TFS_WATCH_STATE 1u    /* the record was replaced: any state change */
#define TFS_WATCH_OUTPUT 2u   /* the transcript grew */
#define TFS_WATCH_GONE 4u     /* reported only: the task dir was removed or moved */
#define TFS_WATCH_CREATED 8u  /* reported only, for tfs_watch_tasks(): a task appeared */
#define TFS_WATCH_DELETED 16u /* reported only, for tfs_watch_tasks(): a task went away */
/* tfs_watch_wait() result bit: extra_fd reported POLLHUP or POLLERR. */
#define TFS_WATCH_HANGUP 32u

/* 1 if TASKFS_NO_INOTIFY asks for no instant paths (no inotify, and no
 * supervisor doorbell): set to anything but "" or "0". The one place that
 * reads it. */
int tfs_watch_disabled(void);

/* Opens a watch on the store (no task yet). Fails only without memory. */
int tfs_watch_open(tfs_store_t *store, tfs_watch_t **out);
void tfs_watch_close(tfs_watch_t *w);
/* The inotify fd (readable when something changed; call
 * tfs_watch_drain()), or -1 when there is none (tick only). */
int tfs_watch_fd(const tfs_watch_t *w);
/* Watches task id for what (TFS_WATCH_STATE | TFS_WATCH_OUTPUT); adding an
 * id again changes its mask. The id is watched by the tick in any case;
 * the return tells whether inotify watches it too: 0 yes, else why not
 * (TFS_ENOTASK, -ENOSPC for the watch limit, -ENOSYS without inotify). */
int tfs_watch_add(tfs_watch_t *w, const char *id, unsigned what);
/* Stops watching id. 0, or TFS_ENOTASK if it was not watched. */
int tfs_watch_remove(tfs_watch_t *w, const char *id);
/* Also watches tasks/ itself: ids that appear (TFS_WATCH_CREATED) or go
 * (TFS_WATCH_DELETED). 0, or why inotify cannot (as tfs_watch_add). */
int tfs_watch_tasks(tfs_watch_t *w);

/* Called once per task id that changed, with the bits of what changed,
 * after the queue is read (a burst of appends is one call). After an event
 * queue overflow every watched id is reported with every bit it watches.
 * id NULL (with tfs_watch_tasks() only): tasks/ changed in a way no event
 * names (an overflow, the store itself removed): list it again. A task
 * appears (TFS_WATCH_CREATED) when its directory is made, before its
 * record: add it to the watch, then read it. */
typedef void (*tfs_watch_cb)(const char *id, unsigned what, void *arg);
/* Reads the events waiting on the fd without blocking and reports them (cb
 * may be NULL: discard). Returns the number of ids reported, or a negative
 * error. */
int tfs_watch_drain(tfs_watch_t *w, tfs_watch_cb cb, void *arg);
/* How often a watcher should re-check even without events: 1000 ms while
 * inotify watches every id, 250 ms when any is watched by the tick alone. */
int tfs_watch_tick_ms(const tfs_watch_t *w);
/* For blocking callers: sleeps until a watched task changes (the events
 * are drained into cb), timeout_ms passes (< 0: the tick), a signal
 * arrives, or extra_fd (>= 0) reports POLLHUP/POLLERR (a pipe's reader went
 * away). sigmask: the signal mask during the sleep (ppoll), so a caller
 * that blocks SIGINT/SIGTERM elsewhere is woken by them only here, without
 * a race; NULL keeps the current mask. Returns 0 (woken or timed out:
 * look again), TFS_WATCH_HANGUP, or -EINTR after a signal. */
int tfs_watch_wait(tfs_watch_t *w, int64_t timeout_ms, const sigset_t *sigmask, int extra_fd,
                   tfs_watch_cb cb, void *arg);

/* Waits until the task has ended (completed, failed, cancelled or lost)
 * and fills rec_out (may be NULL; initialized by the call, free it with
 * tfs_record_free) with the record as last read. A task read as lost is
 * settled on the way (written as lost once), so the record returned is
 * what is stored. timeout_ms < 0: no limit. sigmask as for
 * tfs_watch_wait(): a signal it lets through ends the wait with -EINTR.
 * Returns 0 once ended, -ETIMEDOUT, -EINTR, or another error (TFS_ENOTASK:
 * the task is gone). */
int tfs_task_wait_end(tfs_store_t *store, const char *id, int64_t timeout_ms,
                      const sigset_t *sigmask, tfs_record_t *rec_out);
/* The same, also returning 0 as soon as the task is in one of states
 * (TFS_STATE_BIT()s: a pause or a resume taking effect). */
int tfs_task_wait_state(tfs_store_t *store, const char *id, unsigned states, int64_t timeout_ms,
                        const sigset_t *sigmask, tfs_record_t *rec_out);
/* The look tfs_task_wait_end() takes each time, without waiting, for a
 * face that waits on its own event loop (a watch under a uv_poll_t): the
 * record as stored, a task read as lost settled on the way. rec_out (may
 * be NULL; initialized by the call, free it with tfs_record_free) gets it.
 * Returns 1 if the task has ended, 0 if not yet, -EAGAIN for a task dir
 * still being created (no record yet: look again), or another error
 * (TFS_ENOTASK: no such task, TFS_ECORRUPT). */
int tfs_task_ended(tfs_store_t *store, const char *id, tfs_record_t *rec_out);

/* ---- task files ---------------------------------------------------------- */

/* The files of a task directory, by role. Faces name them by this enum,
 * never by their file names (the disk layout is core's). */
typedef enum {
  TFS_FILE_RECORD = 0,     /* the record, replaced atomically */
  TFS_FILE_TRANSCRIPT,     /* append-only output */
  TFS_FILE_CANCEL,         /* present = stop requested */
  TFS_FILE_LOCK,           /* flock()ed by the supervisor while it lives */
  TFS_FILE_DOORBELL,       /* FIFO a stop request rings */
  TFS_FILE_SUPERVISOR_LOG, /* the supervisor's stderr */
  TFS_FILE_STDERR_LINES,   /* which transcript lines came from stderr */
  TFS_FILE_SPACE_RESERVE,  /* room kept for the final record on a full disk */
  TFS_FILE_CONTROL,        /* appended control requests: pause, resume, signal */
  TFS_FILE_STDIN,          /* FIFO the supervisor feeds to the worker's stdin */
  TFS_FILE_LINEIDX,        /* checkpoints of the transcript's lines (taskfs/lineidx.h) */
  TFS_FILE_ANSWER,         /* the answer's bounds a face was asked for (MCP tasks/result) */
  TFS_FILE_COUNT
} tfs_task_file_t;

/* The file's name inside tasks/<id>/ (for messages and diagnostics). */
const char *tfs_task_file_name(tfs_task_file_t which);
/* The path of the task's directory, for a message that tells a user what
 * to look at or remove; faces never open it. 0 or -ENAMETOOLONG. */
int tfs_task_path(const tfs_store_t *store, const char *id, char *buf, size_t len);
/* Opens the file with flags | O_NOFOLLOW | O_CLOEXEC (mode for O_CREAT).
 * The open never blocks, and the file must be what it should be: a regular
 * file, the doorbell a FIFO; anything else (a planted FIFO, device,
 * directory) is TFS_ECORRUPT, a planted symlink TFS_ESYMLINK. The caller's
 * blocking mode is restored. TFS_ENOTASK if the task dir is absent, -ENOENT
 * if only the file is. */
int tfs_task_file_open(tfs_store_t *store, const char *id, tfs_task_file_t which, int flags,
                       mode_t mode);
/* Stats the file without following a symlink; anything but a regular file
 * (a FIFO for the doorbell) is -ENOENT, as if absent. */
int tfs_task_file_stat(tfs_store_t *store, const char *id, tfs_task_file_t which, struct stat *st);
/* Removes the file; 0 if it was absent. */
int tfs_task_file_remove(tfs_store_t *store, const char *id, tfs_task_file_t which);
/* Stats the task directory: TFS_ENOTASK unless tasks/<id> is a real
 * directory (a symlink or a file planted under the id is no task). */
int tfs_task_stat(tfs_store_t *store, const char *id, struct stat *st);

/* What a face shows of a task (the mount's tasks/<id>/ entries), in this
 * order. Rendered views, not files: record.json is the record as loaded (a
 * dead supervisor's task reads lost), owner is the supervisor as an
 * instance record. */
typedef enum {
  TFS_VIEW_RECORD = 0, /* "record.json" */
  TFS_VIEW_TRANSCRIPT, /* "transcript" */
  TFS_VIEW_CANCEL,     /* "cancel" */
  TFS_VIEW_OWNER,      /* "owner" */
  TFS_VIEW_CONTROL,    /* "control": write pause, resume, signal SIG */
  TFS_VIEW_STDIN,      /* "stdin": only for a task started with a stdin */
  TFS_VIEW_COUNT
} tfs_view_t;
const char *tfs_view_name(tfs_view_t which);

#ifdef __cplusplus
}
#endif

#include "taskfs/triage.h"
#include "taskfs/queue.h"
#include "taskfs/lineidx.h"

#endif /* TASKFS_TASKFS_H */
