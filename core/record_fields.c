/* The record.json field table: every member of the file, once, in the
 * file's order (core/record_codec.h says what a row holds).
 * tfs_record_dump() (core/record_codec.c) writes a record by walking these
 * rows with the writer (core/record_dump.c), tfs_record_parse() reads one
 * by the same rows with the reader (core/record_parse.c). Adding a field is
 * adding a row here; a member the row types cannot say is a CUSTOM row
 * whose write and read functions are in core/record_custom.c.
 *
 * Reading is strict on types (a present, non-null member must have its
 * type) and tolerant of missing members, so that older and newer writers of
 * version 1 stay readable: only v, id, state and command are required. */
#include "core/record_custom.h"
#include "core/record_rows.h"

#include <stddef.h>

#define REC(m) offsetof(tfs_record_t, m)
#define EXEC(m) offsetof(tfs_executor_t, m)
#define LIM(m) offsetof(tfs_limits_t, m)

/* Name and value of the enums, as the rows want them. */
static const char *state_name(int v) {
  return tfs_state_name((tfs_state_t)v);
}
static int state_parse(const char *s, int *out) {
  tfs_state_t v;
  return tfs_state_parse(s, &v) ? -1 : (*out = (int)v, 0);
}
static const char *restart_name(int v) {
  return tfs_restart_name((tfs_restart_t)v);
}
static int restart_parse(const char *s, int *out) {
  tfs_restart_t v;
  return tfs_restart_parse(s, &v) ? -1 : (*out = (int)v, 0);
}
static const char *stderr_name(int v) {
  return tfs_stderr_name((tfs_stderr_t)v);
}
static int stderr_parse(const char *s, int *out) {
  tfs_stderr_t v;
  return tfs_stderr_parse(s, &v) ? -1 : (*out = (int)v, 0);
}
static const char *engine_name(int v) {
  return tfs_engine_name((tfs_engine_t)v);
}
static int engine_parse(const char *s, int *out) {
  tfs_engine_t v;
  return tfs_engine_parse(s, &v) ? -1 : (*out = (int)v, 0);
}

static int id_valid(const char *s) {
  return tfs_id_valid(s);
}
static int key_valid(const char *s) {
  return tfs_key_valid(s);
}
static int queue_valid(const char *s) {
  return tfs_queue_name_valid(s);
}

/* When an object is written rather than null. */
static int has_supervisor(const void *b) {
  return ((const tfs_record_t *)b)->supervisor_pid > 0;
}
static int has_creator(const void *b) {
  return ((const tfs_record_t *)b)->creator_pid > 0;
}
static int has_worker(const void *b) {
  return ((const tfs_record_t *)b)->worker_pid > 0;
}
static int has_cancel(const void *b) {
  const tfs_record_t *r = b;
  return r->cancel_by || r->cancel_ms;
}
static int has_lost(const void *b) {
  return ((const tfs_record_t *)b)->lost_bytes > 0;
}
static int has_job(const void *b) {
  const tfs_executor_t *ex = b;
  return ex->job_id || ex->job_name;
}

static const rf_field_t supervisor_rows[] = {
    INT("pid", RF_I32, REC(supervisor_pid), 0, I32MAX, 0),
    TIME("started", REC(supervisor_started_ms)),
    STR("exe", REC(supervisor_exe), 0),
    STR("host", REC(supervisor_host), 0),
    END,
};

/* Who will launch a queued task. */
static const rf_field_t creator_rows[] = {
    INT("pid", RF_I32, REC(creator_pid), 0, I32MAX, 0),
    INT("startTicks", RF_U64, REC(creator_start_ticks), 0, I64MAX, 0),
    {.name = "bootId",
     .type = RF_BUF,
     .off = REC(creator_boot),
     .off2 = sizeof((tfs_record_t *)0)->creator_boot},
    END,
};

static const rf_field_t worker_rows[] = {
    INT("pid", RF_I32, REC(worker_pid), 0, I32MAX, 0),
    INT("pgid", RF_I32, REC(worker_pgid), 0, I32MAX, 0),
    END,
};

/* The policy (maxRestarts null: no limit) and the runs so far. */
static const rf_field_t restart_rows[] = {
    ENUM("policy", REC(restart), restart_name, restart_parse, "expected no|on-failure|always"),
    INT("minUptimeMs", RF_I64, REC(min_uptime_ms), 0, I64MAX, 0),
    INT("maxRestarts", RF_I32, REC(max_restarts), 0, I32MAX, RF_NULL_NEG),
    INT("maxQuickRestarts", RF_I32, REC(max_quick_restarts), 0, I32MAX, 0),
    INT("graceMs", RF_I64, REC(grace_ms), 0, I64MAX, 0),
    BOOL("onTimeout", REC(restart_on_timeout)),
    INT("count", RF_I32, REC(restarts), 0, I32MAX, 0),
    CUSTOM("exits", tfs__rf_write_exits, tfs__rf_read_exits),
    END,
};

static const rf_field_t timeout_rows[] = {
    INT("ms", RF_I64, LIM(timeout_ms), 1, I64MAX, RF_NULL_NONPOS),
    ENUM("from", LIM(timeout_from), tfs__rf_from_name, tfs__rf_from_parse,
         "expected given|config|none"),
    END,
};

/* The timeout always; a resource limit when given or a default. */
static const rf_field_t limits_rows[] = {
    OBJ("timeout", 0, timeout_rows, NULL),
    CUSTOM("(each resource)", tfs__rf_write_limits, tfs__rf_read_limits),
    STR("cgroup", LIM(cgroup), RF_OMIT),
    END,
};

static const rf_field_t cancel_rows[] = {
    STR("by", REC(cancel_by), RF_NULL_EMPTY),
    TIME("at", REC(cancel_ms)),
    END,
};

/* Counters as of the last save; the lost output only when some was. */
static const rf_field_t transcript_rows[] = {
    INT("lines", RF_I64, REC(lines), 0, I64MAX, 0),
    INT("bytes", RF_I64, REC(bytes), 0, I64MAX, 0),
    /* Records from before the merged stream had two pipes: split. */
    {.name = "stderr",
     .type = RF_ENUM,
     .off = REC(stderr_mode),
     .name_of = stderr_name,
     .parse = stderr_parse,
     .want = "expected merged|split",
     .flags = RF_DEFAULT,
     .dflt = TFS_STDERR_SPLIT},
    {.name = "lostBytes",
     .type = RF_I64,
     .off = REC(lost_bytes),
     .hi = I64MAX,
     .flags = RF_OMIT,
     .present = has_lost},
    {.name = "lostLines",
     .type = RF_I64,
     .off = REC(lost_lines),
     .hi = I64MAX,
     .flags = RF_OMIT,
     .present = has_lost},
    {.name = "lostFirst",
     .type = RF_TIME,
     .off = REC(lost_first_ms),
     .flags = RF_OMIT,
     .present = has_lost},
    {.name = "lostLast",
     .type = RF_TIME,
     .off = REC(lost_last_ms),
     .flags = RF_OMIT,
     .present = has_lost},
    END,
};

/* Every run together; the tree's peak only with a cgroup. */
static const rf_field_t usage_rows[] = {
    INT("cpuUserMs", RF_I64, REC(usage.user_ms), 0, I64MAX, 0),
    INT("cpuSystemMs", RF_I64, REC(usage.sys_ms), 0, I64MAX, 0),
    INT("maxRssKb", RF_I64, REC(usage.maxrss_kb), 0, I64MAX, 0),
    INT("outputBytes", RF_I64, REC(usage.output_bytes), 0, I64MAX, 0),
    INT("treePeakKb", RF_I64, REC(usage.tree_peak_kb), 0, I64MAX, RF_NULL_NEG),
    INT("queuedMs", RF_I64, REC(queued_ms), 0, I64MAX, 0),
    END,
};

static const rf_field_t important_rows[] = {
    CUSTOM("(kept lines)", tfs__rf_write_important, tfs__rf_read_important),
    END,
};

/* A cluster engine's job, once submitted (step is derived from the id). */
static const rf_field_t job_rows[] = {
    STR("id", EXEC(job_id), 0),
    STR("name", EXEC(job_name), 0),
    CUSTOM("step", tfs__rf_write_step, NULL),
    STR("state", EXEC(job_state), 0),
    STR("reason", EXEC(job_reason), 0),
    STR("partition", EXEC(partition), 0),
    STR("nodes", EXEC(nodes), 0),
    INT("queueWaitMs", RF_I64, EXEC(queue_wait_ms), 0, I64MAX, RF_NULL_NEG),
    END,
};

static const rf_field_t executor_rows[] = {
    ENUM("engine", EXEC(engine), engine_name, engine_parse, "expected local|slurm"),
    STRV("options", EXEC(options), EXEC(noptions)),
    OBJ("job", 0, job_rows, has_job),
    END,
};

const rf_field_t tfs__record_fields[] = {
    CUSTOM("v", tfs__rf_write_version, tfs__rf_read_version),
    {.name = "id",
     .type = RF_BUF,
     .off = REC(id),
     .off2 = TFS_ID_MAX + 1,
     .valid = id_valid,
     .flags = RF_REQUIRED,
     .want = "expected a task id"},
    {.name = "key",
     .type = RF_BUF,
     .off = REC(key),
     .off2 = TFS_KEY_MAX + 1,
     .valid = key_valid,
     .flags = RF_EMPTY_NULL,
     .want = "expected a task key or null"},
    /* Records from before numbers have none. */
    INT("number", RF_I64, REC(number), 1, I64MAX, RF_NULL_NONPOS),
    {.name = "command",
     .type = RF_STRV,
     .off = REC(argv),
     .off2 = REC(argc),
     .flags = RF_REQUIRED,
     .want = "expected a non-empty array of strings"},
    CUSTOM("commandBytes", tfs__rf_write_command_bytes, tfs__rf_read_command_bytes),
    STR("cwd", REC(cwd), 0),
    CUSTOM("cwdBytes", tfs__rf_write_cwd_bytes, tfs__rf_read_cwd_bytes),
    STRV("env", REC(env_names), REC(env_count)),
    {.name = "queue",
     .type = RF_BUF,
     .off = REC(queue),
     .off2 = TFS_QUEUE_NAME_MAX + 1,
     .valid = queue_valid,
     .flags = RF_EMPTY_NULL,
     .want = "expected a queue name or null"},
    {.name = "after",
     .type = RF_STRV,
     .off = REC(after),
     .off2 = REC(nafter),
     .valid = id_valid,
     .want = "expected an array of task ids"},
    TIME("notBefore", REC(not_before_ms)),
    BOOL("stdin", REC(with_stdin)),
    {.name = "state",
     .type = RF_ENUM,
     .off = REC(state),
     .name_of = state_name,
     .parse = state_parse,
     .flags = RF_REQUIRED,
     .want = "expected queued|running|completed|failed|cancelled|lost|paused"},
    INT("exitCode", RF_I32, REC(exit_code), 0, 255, RF_NULL_NEG),
    INT("signal", RF_I32, REC(signal), 0, 128, RF_NULL_ZERO),
    CUSTOM("signalName", tfs__rf_write_signal_name, NULL),
    STR("reason", REC(reason), 0),
    TIME("created", REC(created_ms)),
    TIME("started", REC(started_ms)),
    TIME("ended", REC(ended_ms)),
    TIME("aliveAt", REC(alive_ms)),
    OBJ("supervisor", 0, supervisor_rows, has_supervisor),
    OBJ("creator", 0, creator_rows, has_creator),
    OBJ("worker", 0, worker_rows, has_worker),
    OBJ("restart", 0, restart_rows, NULL),
    OBJ("limits", REC(limits), limits_rows, NULL),
    OBJ("cancel", 0, cancel_rows, has_cancel),
    OBJ("transcript", 0, transcript_rows, NULL),
    OBJ("usage", 0, usage_rows, NULL),
    OBJ("important", REC(important), important_rows, NULL),
    OBJ("executor", REC(exec), executor_rows, NULL),
    END,
};
