/* taskfs limits: a task's wall-clock limit and the resource limits of its
 * worker, what they cost it (resource use), the units they are written in,
 * and the store's defaults (<state>/config). Part of the core library
 * (libtaskfs); included by taskfs/taskfs.h. See docs/supervisor.md,
 * "Limits", and docs/cli.md, "taskfs config".
 */
#ifndef TASKFS_LIMITS_H
#define TASKFS_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfs_store tfs_store_t;

/* ---- units (core/units.c) --------------------------------------------- */

/* A duration, the one syntax of every face (--timeout, --delay, --grace,
 * prune --older-than, config timeout, limit cpu, the MCP tools): a whole
 * or decimal number with an optional unit, ms, s, m, h or d ("500ms",
 * "10s", "1.5m", "2h", "7d"); a bare number is seconds. Into milliseconds
 * (a fraction of a millisecond rounds up). Returns 0 or -1 (empty,
 * negative, another unit, trailing bytes, overflow). */
int tfs_duration_parse(const char *s, int64_t *ms);
/* The units of tfs_duration_parse, for messages and help: "ms, s, m, h or
 * d" (tests/test_man.sh holds the man page's DURATIONS to it). */
#define TFS_DURATION_UNITS "ms, s, m, h or d"
/* 1 if s is a duration with a unit (not a bare number): what an option
 * whose help says so needs (prune --older-than 5 is refused). */
int tfs_duration_has_unit(const char *s);
/* A duration the way the parser reads it, as short as it is exact: "10m",
 * "90s", "1500ms", "2h". Returns buf. */
#define TFS_DURATION_BUF 24
char *tfs_duration_format(int64_t ms, char buf[TFS_DURATION_BUF]);
/* A size in bytes: a whole number with an optional K, M, G or T (powers
 * of 1024, either case, an optional "B" or "iB" after it): "512M", "2G",
 * "4096". Returns 0 or -1. */
int tfs_size_parse(const char *s, int64_t *bytes);
/* A size the way the parser reads it, exact: "2G", "1536M", "100". */
char *tfs_size_format(int64_t bytes, char buf[TFS_DURATION_BUF]);

/* ---- limits (core/limits.c) ------------------------------------------- */

/* The resource limits a worker can be given, each applied with
 * setrlimit() (soft and hard) in the forked worker before exec, so its
 * whole tree inherits them; mem may use a memory cgroup instead. */
typedef enum {
  TFS_LIMIT_MEM = 0, /* bytes: RLIMIT_DATA, or the tree's memory cgroup */
  TFS_LIMIT_CPU,     /* seconds of CPU time per process: RLIMIT_CPU */
  TFS_LIMIT_NOFILE,  /* open files per process: RLIMIT_NOFILE */
  TFS_LIMIT_NPROC,   /* processes of the user: RLIMIT_NPROC */
  TFS_LIMIT_FSIZE,   /* bytes of one file written: RLIMIT_FSIZE */
  TFS_LIMIT_CORE,    /* bytes of a core dump: RLIMIT_CORE */
  TFS_LIMIT_COUNT
} tfs_limit_t;

/* Where a limit came from. */
typedef enum {
  TFS_FROM_NONE = 0, /* nobody asked for one */
  TFS_FROM_GIVEN,    /* the command (taskfs run --limit, MCP limits) */
  TFS_FROM_CONFIG,   /* the store's default (<state>/config) */
} tfs_from_t;

/* How a limit was applied (the supervisor says, when the worker starts). */
typedef enum {
  TFS_VIA_NONE = 0, /* not applied (yet) */
  TFS_VIA_RLIMIT,   /* setrlimit() in the worker, inherited by its tree */
  TFS_VIA_CGROUP,   /* the memory cgroup of the whole tree */
} tfs_via_t;

#define TFS_LIMIT_NONE (-1) /* value: no limit (also "none" given over a default) */

typedef struct {
  int64_t value; /* in the limit's unit; TFS_LIMIT_NONE: unlimited */
  tfs_from_t from;
  tfs_via_t via;
  char *note; /* why the cgroup was not used for mem, in words; NULL */
} tfs_limit_val_t;

typedef struct {
  int64_t timeout_ms; /* wall-clock limit of each worker run; 0: none */
  tfs_from_t timeout_from;
  tfs_limit_val_t v[TFS_LIMIT_COUNT];
  char *cgroup; /* the memory cgroup the tree ran in, when one was used */
} tfs_limits_t;

/* "mem", "cpu", "nofile", "nproc", "fsize", "core" (NULL if out of range). */
const char *tfs_limit_name(tfs_limit_t which);
/* The setrlimit() resource of a limit ("RLIMIT_DATA" for mem). */
const char *tfs_limit_rlimit_name(tfs_limit_t which);
/* The limit named name[0..len), or -1. */
int tfs_limit_lookup(const char *name, size_t len);
/* The names in a list for a message: "mem, cpu, nofile, nproc, fsize, core". */
#define TFS_LIMIT_NAMES "mem, cpu, nofile, nproc, fsize, core"

/* Empty limits (no timeout, nothing set); free with tfs_limits_free. */
void tfs_limits_init(tfs_limits_t *l);
void tfs_limits_free(tfs_limits_t *l);
/* A deep copy of src into dst (dst is overwritten, not freed). 0 or
 * -ENOMEM. */
int tfs_limits_copy(tfs_limits_t *dst, const tfs_limits_t *src);

/* The smallest memory limit taken: a shell needs about 600 KiB to start. */
#define TFS_LIMIT_MEM_MIN (1024 * 1024)
/* The value of limit which from text: a size for mem (at least
 * TFS_LIMIT_MEM_MIN), fsize and core, a duration for cpu (whole seconds, a
 * fraction rounds up), a count for nofile and nproc; "none" is
 * TFS_LIMIT_NONE (no limit, also over the store's default). On a bad
 * value, the words in why ("mem=-1: a size is ..."). Returns 0 or
 * TFS_ELIMIT. */
int tfs_limit_parse(tfs_limit_t which, const char *text, int64_t *value, char *why, size_t whylen);
/* "mem=2G,cpu=10m,nofile=4096": each NAME=VALUE into l, from = given (a
 * name given twice: the later wins). Returns 0, or TFS_ELIMIT with the
 * words in why (an unknown name, a bad value). */
int tfs_limits_parse(const char *spec, tfs_limits_t *l, char *why, size_t whylen);
/* The timeout from text (a duration above 0, or "none"): 0 or TFS_ELIMIT
 * with the words. *ms: 0 for none. */
int tfs_timeout_parse(const char *text, int64_t *ms, char *why, size_t whylen);

/* What a task gets (core/config.c): the limits given, the store's defaults
 * (<state>/config) for the ones not given (from = config), each checked
 * against the hard limit of this process, which the supervisor and the
 * worker inherit (a process cannot raise its hard limit). Returns 0,
 * TFS_ELIMIT (a limit above the hard one) or TFS_ECONFIG (the config file
 * does not read), with the words in why (may be NULL). tfs_task_create()
 * calls it; a face may call it first for the words. */
int tfs_limits_resolve(tfs_store_t *store, tfs_limits_t *l, char *why, size_t whylen);

/* The limits as text for a listing: "timeout=10m,mem=2G,cpu=10m", "" for
 * none. Returns buf. */
char *tfs_limits_summary(const tfs_limits_t *l, char *buf, size_t len);

/* ---- resource use ------------------------------------------------------- */

/* What a worker run (or all of them) used: CPU time and the largest peak
 * RSS of its processes from wait4() of every process of the tree (the
 * supervisor is their subreaper), its output, and with a memory cgroup
 * the peak memory of the tree as a whole. */
typedef struct {
  int64_t user_ms, sys_ms; /* CPU time, user and system */
  int64_t maxrss_kb;       /* the largest peak RSS of one process */
  int64_t output_bytes;    /* bytes written to the transcript */
  int64_t tree_peak_kb;    /* the memory cgroup's peak (cache too); -1: none */
} tfs_usage_t;

void tfs_usage_init(tfs_usage_t *u);
/* Adds a run's use to a total: times and output add, peaks take the max. */
void tfs_usage_add(tfs_usage_t *total, const tfs_usage_t *run);

/* ---- the store's defaults: <state>/config (core/config.c) ---------------- */

/* The file holds "key = value" lines; '#' starts a comment line. Keys:
 * timeout, limit.mem, limit.cpu, limit.nofile, limit.nproc, limit.fsize,
 * limit.core; values as taskfs run takes them ("10m", "2G", "none"). Keys
 * of the form queue.NAME.KEY are for the queues to come and are kept but
 * not applied. Written atomically by core (temp file, fsync, rename). */

/* 0 if key is a key of the file and value (when not NULL) a valid value
 * for it; else TFS_ECONFIG with the words in why. */
int tfs_config_check(const char *key, const char *value, char *why, size_t whylen);
/* Sets key to value (NULL: removes it), checked as tfs_config_check does,
 * keeping the other lines and comments as they are. Returns 0 (also when
 * removing a key that was not set), TFS_ECONFIG with the words, or an I/O
 * error. */
int tfs_config_set(tfs_store_t *store, const char *key, const char *value, char *why,
                   size_t whylen);
/* The value of key (malloc'ed) in *value, or NULL when not set. Returns 0,
 * TFS_ECONFIG (the file does not read: why says where), or an I/O error. */
int tfs_config_get(tfs_store_t *store, const char *key, char **value, char *why, size_t whylen);
/* Every key that is set, in file order: parallel NULL-terminated vectors
 * of malloc'ed strings (free each with tfs_strv_free). Same returns. */
int tfs_config_list(tfs_store_t *store, char ***keys, char ***values, char *why, size_t whylen);
/* Every key the file knows, for help texts: "timeout, limit.mem, ...". */
#define TFS_CONFIG_KEYS                                                                            \
  "timeout, limit.mem, limit.cpu, limit.nofile, limit.nproc, limit.fsize, limit.core, queue"

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_LIMITS_H */
