/* The record codec against a golden file: the bytes tfs_record_dump()
 * writes for records of many shapes, and what tfs_record_parse() makes of
 * every seed of the record fuzzer (its verdict, its message and the dump of
 * what it read), must stay what tests/golden/record_codec.txt holds.
 * Readers in other languages depend on these bytes; the golden file was
 * made by the hand-written codec before the field table (core/record_fields.c)
 * replaced it. After a deliberate format change, regenerate with
 * TFS_GOLDEN_WRITE=1 build/tests/test_record_codec and review the diff. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/taskfs.h"

#define GOLDEN "tests/golden/record_codec.txt"
#define SEEDS "fuzz/corpus/record"

typedef struct {
  char *buf;
  size_t len;
  FILE *f;
} out_t;

/* A record with every optional part present. */
static void full(tfs_record_t *r) {
  char *argv[] = {"sh", "-c", "echo \xff\xfe \"q\" \\ \t\x01 done", NULL};
  tfs_record_init(r);
  strcpy(r->id, "mi4x7k2p-3fz9qa");
  strcpy(r->key, "ci:run-1");
  r->number = 42;
  cr_assert_eq(tfs_record_set_command(r, argv, "/home/u/caf\xc3\xa9/\xff"), 0);
  cr_assert_eq(tfs_record_add_env_name(r, "PATH"), 0);
  cr_assert_eq(tfs_record_add_env_name(r, "LANG"), 0);
  strcpy(r->queue, "gpu");
  r->after = calloc(3, sizeof *r->after);
  r->after[0] = strdup("mi4x7k2p-aaaaaa");
  r->after[1] = strdup("mi4x7k2p-bbbbbb");
  r->nafter = 2;
  r->not_before_ms = 1795916200000LL;
  r->with_stdin = 1;
  r->state = TFS_FAILED;
  r->exit_code = 3;
  r->signal = 40;
  r->reason = strdup("exited \xe2\x80\x94 code 3\n");
  r->created_ms = 1795916208001LL;
  r->started_ms = 1795916208002LL;
  r->ended_ms = 1795916209003LL;
  r->alive_ms = 1795916209000LL;
  r->supervisor_pid = 4242;
  r->supervisor_started_ms = 1795916208002LL;
  r->supervisor_exe = strdup("/usr/bin/taskfs");
  r->supervisor_host = strdup("box");
  r->creator_pid = 77;
  r->creator_start_ticks = 123456789ULL;
  strcpy(r->creator_boot, "0b1c2d3e-aaaa-bbbb-cccc-0123456789ab");
  r->worker_pid = 4243;
  r->worker_pgid = 4243;
  r->restart = TFS_RESTART_ON_FAILURE;
  r->min_uptime_ms = 10;
  r->max_restarts = 2;
  r->max_quick_restarts = 7;
  r->grace_ms = 50;
  r->restart_on_timeout = 1;
  r->restarts = 2;
  r->nexits = 3;
  for (int i = 0; i < 3; i++) {
    tfs_exit_t *e = &r->exits[i];
    e->started_ms = i == 1 ? 0 : 1795916208000LL + i * 100;
    e->ended_ms = 1795916208050LL + i * 100;
    e->exit_code = i == 2 ? -1 : i + 1;
    e->signal = i == 2 ? 9 : 0;
    e->requested = i == 2;
    e->timed_out = i == 1;
    e->use.user_ms = 10 + i;
    e->use.sys_ms = 20 + i;
    e->use.maxrss_kb = 3000 + i;
    e->use.output_bytes = 400 + i;
    e->use.tree_peak_kb = 999;
  }
  r->limits.timeout_ms = 60000;
  r->limits.timeout_from = TFS_FROM_CONFIG;
  for (int i = 0; i < TFS_LIMIT_COUNT; i++) {
    tfs_limit_val_t *v = &r->limits.v[i];
    v->from = i % 3 == 0 ? TFS_FROM_GIVEN : i % 3 == 1 ? TFS_FROM_CONFIG : TFS_FROM_NONE;
    v->value = i == 1 ? TFS_LIMIT_NONE : 1000 * (i + 1);
    v->via = i % 2 ? TFS_VIA_CGROUP : TFS_VIA_RLIMIT;
    if (i == 0)
      v->note = strdup("capped by the \"hard\" limit");
  }
  r->limits.cgroup = strdup("/sys/fs/cgroup/user.slice/taskfs-x");
  r->usage.user_ms = 1;
  r->usage.sys_ms = 2;
  r->usage.maxrss_kb = 3;
  r->usage.output_bytes = 4;
  r->usage.tree_peak_kb = 5;
  r->queued_ms = 6;
  r->cancel_by = strdup("cli pid 1 uid 0");
  r->cancel_ms = 1795916208999LL;
  r->lines = 12345;
  r->bytes = 678901;
  r->lost_bytes = 100;
  r->lost_lines = 2;
  r->lost_first_ms = 1795916208500LL;
  r->lost_last_ms = 1795916208600LL;
  r->stderr_mode = TFS_STDERR_MERGED;
  cr_assert_eq(tfs_important_add(&r->important, 3, TFS_LINE_ERROR, "error: \xff boom", 13), 0);
  cr_assert_eq(tfs_important_add(&r->important, 9, TFS_LINE_SUMMARY, "1 failed", 8), 0);
  cr_assert_eq(tfs_important_set_lead(&r->important, 3, TFS_LINE_ERROR, "error: boom", 11), 0);
  cr_assert_eq(tfs_important_add_context(&r->important, 2, "before", 6), 0);
  cr_assert_eq(tfs_important_add_context(&r->important, 4, "", 0), 0);
  r->exec.engine = TFS_ENGINE_SLURM;
  r->exec.options = calloc(3, sizeof *r->exec.options);
  r->exec.options[0] = strdup("--partition=gpu");
  r->exec.options[1] = strdup("-N2");
  r->exec.noptions = 2;
  r->exec.job_id = strdup("12345");
  r->exec.job_name = strdup("taskfs-x");
  r->exec.job_state = strdup("RUNNING");
  r->exec.job_reason = strdup("None");
  r->exec.partition = strdup("gpu");
  r->exec.nodes = strdup("n[1-2]");
  r->exec.queue_wait_ms = 1500;
}

/* The variants: each takes one part of full() away or to an edge. */
static void variant(tfs_record_t *r, int v) {
  switch (v) {
  case 0:
    break;
  case 1:
    r->key[0] = '\0';
    r->number = 0;
    break;
  case 2:
    r->queue[0] = '\0';
    tfs_strv_free(r->after);
    r->after = NULL;
    r->nafter = 0;
    break;
  case 3:
    r->not_before_ms = 0;
    r->with_stdin = 0;
    r->exit_code = -1;
    r->signal = 0;
    break;
  case 4:
    free(r->reason);
    r->reason = NULL;
    r->created_ms = r->started_ms = r->ended_ms = 0;
    break;
  case 5:
    r->supervisor_pid = 0;
    r->creator_pid = 0;
    r->worker_pid = 0;
    break;
  case 6:
    free(r->supervisor_exe);
    r->supervisor_exe = NULL;
    r->creator_boot[0] = '\0';
    break;
  case 7:
    r->max_restarts = -1;
    r->nexits = 0;
    r->restart = TFS_RESTART_ALWAYS;
    break;
  case 8:
    tfs_limits_free(&r->limits);
    tfs_limits_init(&r->limits);
    break;
  case 9:
    r->limits.timeout_ms = 0;
    r->limits.timeout_from = TFS_FROM_NONE;
    break;
  case 10:
    free(r->cancel_by);
    r->cancel_by = NULL;
    break;
  case 11:
    free(r->cancel_by);
    r->cancel_by = NULL;
    r->cancel_ms = 0;
    break;
  case 12:
    r->lost_bytes = 0;
    r->usage.tree_peak_kb = -1;
    break;
  case 13:
    tfs_important_free(&r->important);
    tfs_important_init(&r->important, 3);
    break;
  case 14:
    free(r->exec.job_id);
    r->exec.job_id = NULL;
    break;
  case 15:
    free(r->exec.job_id);
    free(r->exec.job_name);
    r->exec.job_id = r->exec.job_name = NULL;
    break;
  case 16:
    tfs_strv_free(r->exec.options);
    r->exec.options = NULL;
    r->exec.engine = TFS_ENGINE_LOCAL;
    break;
  case 17:
    r->exec.queue_wait_ms = -1;
    r->nexits = TFS_LAST_EXITS;
    break;
  case 18:
    free(r->cwd);
    r->cwd = NULL;
    tfs_strv_free(r->env_names);
    r->env_names = NULL;
    break;
  case 19:
    r->state = TFS_RUNNING;
    r->signal = 0;
    r->stderr_mode = TFS_STDERR_SPLIT;
    break;
  }
}
#define NVARIANTS 20

/* FNV-1a: the mutants' dumps are kept as a hash, to keep the file small. */
static unsigned long long fnv(const char *s) {
  unsigned long long h = 14695981039346656037ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static void emit_as(out_t *o, const char *name, const char *text, size_t len, int whole) {
  tfs_record_t r;
  char err[256];
  int rc = tfs_record_parse(text, len, &r, err, sizeof err);
  fprintf(o->f, "== %s\nrc %d %s\n", name, rc, rc ? err : "");
  if (!rc) {
    char *d = tfs_record_dump(&r);
    cr_assert_not_null(d);
    if (whole)
      fputs(d, o->f);
    else
      fprintf(o->f, "dump %016llx\n", fnv(d));
    free(d);
    tfs_record_free(&r);
  }
}

static void emit(out_t *o, const char *name, const char *text, size_t len) {
  emit_as(o, name, text, len, 1);
}

/* Every scalar member line of a dump, replaced by each of a set of values
 * of other types and edges, then removed: what the reader accepts and
 * refuses, field by field. */
static void mutants(out_t *o, int v, const char *dump) {
  static const char *const alt[] = {"null",
                                    "\"x\"",
                                    "0",
                                    "-1",
                                    "1",
                                    "true",
                                    "{}",
                                    "[]",
                                    "1.5",
                                    "99999999999999999999",
                                    "\"2026-01-02T03:04:05.006Z\"",
                                    "\"mi4x7k2p-3fz9qa\"",
                                    "[\"a\"]",
                                    "{\"b64\": \"eA==\"}"};
  size_t n = strlen(dump), at = 0;
  int line = 0;
  while (at < n) {
    const char *nl = strchr(dump + at, '\n');
    size_t end = nl ? (size_t)(nl - dump) : n;
    const char *colon = strstr(dump + at, "\": ");
    line++;
    if (colon && (size_t)(colon - dump) < end && colon[3] != '{' && colon[3] != '[') {
      size_t vs = (size_t)(colon - dump) + 3, ve = end;
      int comma = dump[ve - 1] == ',';
      if (comma)
        ve--;
      for (size_t a = 0; a < sizeof alt / sizeof *alt + 1; a++) {
        char *m = NULL, name[64];
        size_t ml = 0;
        FILE *f = open_memstream(&m, &ml);
        if (a < sizeof alt / sizeof *alt) {
          fwrite(dump, 1, vs, f);
          fputs(alt[a], f);
          fputs(dump + ve, f);
        } else if (comma) {
          fwrite(dump, 1, at, f);
          fputs(dump + end + 1, f);
        } else {
          fclose(f);
          free(m);
          continue;
        }
        fclose(f);
        snprintf(name, sizeof name, "built %d line %d alt %zu", v, line, a);
        emit_as(o, name, m, ml, 0);
        free(m);
      }
    }
    at = end + 1;
  }
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

Test(record_codec, golden) {
  out_t o = {0};
  o.f = open_memstream(&o.buf, &o.len);
  cr_assert_not_null(o.f);
  for (int v = 0; v < NVARIANTS; v++) {
    tfs_record_t r;
    char name[32];
    full(&r);
    variant(&r, v);
    char *d = tfs_record_dump(&r);
    cr_assert_not_null(d);
    fprintf(o.f, "== built %d\n", v);
    fputs(d, o.f);
    snprintf(name, sizeof name, "built %d parsed", v);
    emit(&o, name, d, strlen(d));
    if (v == 0 || v == 5 || v == 13 || v == 19)
      mutants(&o, v, d);
    free(d);
    tfs_record_free(&r);
  }
  struct dirent **ents;
  int n = scandir(SEEDS, &ents, NULL, by_name);
  cr_assert_gt(n, 2, "run from the source tree (%s)", SEEDS);
  for (int i = 0; i < n; i++) {
    if (ents[i]->d_name[0] != '.') {
      char path[512], *text = NULL;
      size_t len = 0;
      snprintf(path, sizeof path, SEEDS "/%s", ents[i]->d_name);
      FILE *f = fopen(path, "r");
      cr_assert_not_null(f);
      FILE *m = open_memstream(&text, &len);
      char b[4096];
      size_t k;
      while ((k = fread(b, 1, sizeof b, f)) > 0)
        fwrite(b, 1, k, m);
      fclose(m);
      fclose(f);
      emit(&o, ents[i]->d_name, text, len);
      free(text);
    }
    free(ents[i]);
  }
  free(ents);
  fclose(o.f);
  if (getenv("TFS_GOLDEN_WRITE")) {
    FILE *g = fopen(GOLDEN, "w");
    cr_assert_not_null(g);
    fwrite(o.buf, 1, o.len, g);
    fclose(g);
  }
  FILE *g = fopen(GOLDEN, "r");
  cr_assert_not_null(g, "%s missing (TFS_GOLDEN_WRITE=1 makes it)", GOLDEN);
  char *want = NULL;
  size_t wlen = 0;
  FILE *m = open_memstream(&want, &wlen);
  char b[4096];
  size_t k;
  while ((k = fread(b, 1, sizeof b, g)) > 0)
    fwrite(b, 1, k, m);
  fclose(m);
  fclose(g);
  /* On a difference, the first differing line says where. */
  size_t at = 0, line = 1;
  while (at < wlen && at < o.len && want[at] == o.buf[at])
    line += want[at++] == '\n';
  cr_assert(wlen == o.len && at == wlen, "codec output differs from %s at line %zu", GOLDEN, line);
  free(want);
  free(o.buf);
}
