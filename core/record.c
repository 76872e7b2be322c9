/* The task record in memory: initial values, freeing, and the setters that
 * copy outside data in. Its JSON form is record_dump.c and record_parse.c;
 * field names are camelCase and shared with every face (see
 * docs/ARCHITECTURE.md). */
#include "core/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tfs_record_init(tfs_record_t *rec) {
  memset(rec, 0, sizeof *rec);
  rec->state = TFS_QUEUED;
  rec->exit_code = -1;
  rec->restart = TFS_RESTART_NO;
  rec->min_uptime_ms = 1000;
  rec->max_restarts = -1;
  rec->max_quick_restarts = 5;
  rec->grace_ms = 5000;
  tfs_limits_init(&rec->limits);
  tfs_usage_init(&rec->usage);
  for (int i = 0; i < TFS_LAST_EXITS; i++)
    tfs_usage_init(&rec->exits[i].use);
  rec->exec.queue_wait_ms = -1;
  tfs_important_init(&rec->important, TFS_IMPORTANT_K_DEFAULT);
}

void tfs_strv_free(char **v) {
  if (!v)
    return;
  for (char **p = v; *p; p++)
    free(*p);
  free(v);
}

void tfs_record_free(tfs_record_t *rec) {
  if (!rec)
    return;
  tfs_strv_free(rec->argv);
  free(rec->cwd);
  tfs_strv_free(rec->env_names);
  tfs_strv_free(rec->after);
  free(rec->reason);
  free(rec->supervisor_exe);
  free(rec->supervisor_host);
  free(rec->cancel_by);
  tfs_important_free(&rec->important);
  tfs_limits_free(&rec->limits);
  tfs_executor_clear_job(&rec->exec);
  tfs_strv_free(rec->exec.options);
  rec->exec.options = NULL;
  rec->exec.noptions = 0;
  rec->argv = rec->env_names = rec->after = NULL;
  rec->nafter = 0;
  rec->cwd = rec->reason = rec->supervisor_exe = rec->supervisor_host = rec->cancel_by = NULL;
  rec->argc = rec->env_count = 0;
  memset(&rec->important, 0, sizeof rec->important);
}

/* Copies a NULL-terminated vector. */
static int dup_strv(char *const src[], char ***out, int *count) {
  int n = 0;
  while (src && src[n])
    n++;
  char **v = calloc((size_t)n + 1, sizeof *v);
  if (!v)
    return -ENOMEM;
  for (int i = 0; i < n; i++)
    if (!(v[i] = strdup(src[i]))) {
      tfs_strv_free(v);
      return -ENOMEM;
    }
  *out = v;
  *count = n;
  return 0;
}

int tfs_record_set_command(tfs_record_t *rec, char *const argv[], const char *cwd) {
  char **v;
  int n, err;
  char *c = NULL;
  if (!argv || !argv[0] || !argv[0][0])
    return -EINVAL;
  if ((err = dup_strv(argv, &v, &n)))
    return err;
  if (cwd && !(c = strdup(cwd))) {
    tfs_strv_free(v);
    return -ENOMEM;
  }
  tfs_strv_free(rec->argv);
  free(rec->cwd);
  rec->argv = v;
  rec->argc = n;
  rec->cwd = c;
  return 0;
}

int tfs_record_set_after(tfs_record_t *rec, char *const after[]) {
  char **v = NULL;
  int n = 0, err = after && after[0] ? dup_strv(after, &v, &n) : 0;
  if (err)
    return err;
  tfs_strv_free(rec->after);
  rec->after = v;
  rec->nafter = n;
  return 0;
}

int tfs_record_set_engine(tfs_record_t *rec, tfs_engine_t engine, char *const options[]) {
  char **v = NULL;
  int n = 0, err;
  if (engine != TFS_ENGINE_LOCAL && engine != TFS_ENGINE_SLURM)
    return -EINVAL;
  if (options && options[0] && (err = dup_strv(options, &v, &n)))
    return err;
  tfs_strv_free(rec->exec.options);
  rec->exec.engine = engine;
  rec->exec.options = v;
  rec->exec.noptions = n;
  return 0;
}

void tfs_executor_clear_job(tfs_executor_t *ex) {
  char **f[] = {&ex->job_id,     &ex->job_name,  &ex->job_state,
                &ex->job_reason, &ex->partition, &ex->nodes};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
    free(*f[i]);
    *f[i] = NULL;
  }
  ex->queue_wait_ms = -1;
}

int tfs_record_add_env_name(tfs_record_t *rec, const char *name) {
  if (!name || !*name)
    return -EINVAL;
  char **v = realloc(rec->env_names, ((size_t)rec->env_count + 2) * sizeof *v);
  if (!v)
    return -ENOMEM;
  rec->env_names = v;
  /* Only the name is ever kept: cut at '=' in case a caller passed NAME=VALUE. */
  size_t n = strcspn(name, "=");
  if (!(v[rec->env_count] = strndup(name, n))) {
    v[rec->env_count] = NULL;
    return -ENOMEM;
  }
  v[++rec->env_count] = NULL;
  return 0;
}

int tfs_record_set_reason(tfs_record_t *rec, const char *fmt, ...) {
  va_list ap;
  char *s = NULL;
  if (fmt) {
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
      return -ENOMEM;
  }
  free(rec->reason);
  rec->reason = s;
  return 0;
}

int tfs_record_skipped(const tfs_record_t *rec) {
  return rec->state == TFS_FAILED && rec->worker_pid <= 0 && rec->nexits == 0 && rec->reason &&
         !strncmp(rec->reason, TFS_REASON_NOT_RUN, strlen(TFS_REASON_NOT_RUN));
}

int tfs_record_store_full(const tfs_record_t *rec) {
  return rec->state == TFS_FAILED && rec->worker_pid <= 0 && rec->nexits == 0 && rec->reason &&
         !strncmp(rec->reason, TFS_REASON_STORE_FULL, strlen(TFS_REASON_STORE_FULL));
}
