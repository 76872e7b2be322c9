/* `taskfs ls` over many tasks: the full listing loads records on two
 * threads, and must still print every task once, in creation order, with
 * the same bytes as a one-thread listing (TASKFS_LS_THREADS=1). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "taskfs/taskfs.h"
#include "tests/helpers/testutil.h"

#define NTASKS 500

static char *tmp, *state;
static tfs_store_t *store;

static void setup(void) {
  tmp = tu_tmpdir("lsmany");
  if (asprintf(&state, "%s/state", tmp) < 0)
    abort();
}

static void teardown(void) {
  if (store)
    tfs_store_close(store);
  store = NULL;
  tu_rmrf(tmp);
  free(tmp);
  free(state);
}

TestSuite(ls_many, .init = setup, .fini = teardown, .timeout = 60);

/* Runs taskfs ls with extra environment and arguments; returns stdout. */
static char *ls(const char *env, const char *args) {
  char *out = NULL;
  int rc = tu_sh(&out, "%s '%s' ls %s --state-dir '%s'", env, tu_taskfs_bin(), args, state);
  cr_assert_eq(rc, 0, "taskfs ls %s failed (%d): %s", args, rc, out ? out : "");
  return out;
}

Test(ls_many, creation_order_matches_one_thread) {
  static char ids[NTASKS][TFS_ID_MAX + 1];
  cr_assert_eq(tfs_store_open(state, &store), 0);
  for (int i = 0; i < NTASKS; i++) {
    char cmd[32];
    snprintf(cmd, sizeof cmd, "echo task-%d", i);
    char *argv[] = {"sh", "-c", cmd, NULL};
    tfs_task_spec_t spec = {
        .argv = argv, .cwd = "/", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
    int existed = -1;
    cr_assert_eq(tfs_task_create(store, &spec, ids[i], &existed), 0);
    /* Ids carry the creation time in ms: keep creation order unambiguous. */
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }

  /* Text: header, then every task once, oldest first. */
  char *text = ls("", "");
  char *line = strchr(text, '\n');
  cr_assert(line, "no header: %s", text);
  line++;
  for (int i = 0; i < NTASKS; i++) {
    char want[48];
    snprintf(want, sizeof want, "'echo task-%d'\n", i);
    cr_assert(!strncmp(line, ids[i], strlen(ids[i])), "row %d is not task %s: %.80s", i, ids[i],
              line);
    char *eol = strchr(line, '\n');
    cr_assert(eol, "row %d is cut", i);
    cr_expect(eol + 1 - strlen(want) >= line &&
                  !strncmp(eol + 1 - strlen(want), want, strlen(want)),
              "row %d has the wrong command: %.*s", i, (int)(eol - line), line);
    line = eol + 1;
  }
  cr_expect_eq(*line, '\0', "extra rows: %.200s", line);

  /* The same listing on one thread: same rows (AGE can tick between the
   * two runs, so compare up to and after it per line: the id and state
   * before it, and everything from TIME on, are fixed). */
  char *one = ls("TASKFS_LS_THREADS=1", "");
  char *p = text, *q = one;
  int n = 0;
  while (*p && *q) {
    char *pe = strchr(p, '\n'), *qe = strchr(q, '\n');
    cr_assert(pe && qe);
    cr_assert_geq(pe - p, 31);
    cr_expect(!strncmp(p, q, 26), "line %d differs: %.*s | %.*s", n, (int)(pe - p), p,
              (int)(qe - q), q);
    cr_expect(pe - p == qe - q && !strncmp(p + 31, q + 31, (size_t)(pe - p) - 31),
              "line %d differs: %.*s | %.*s", n, (int)(pe - p), p, (int)(qe - q), q);
    p = pe + 1;
    q = qe + 1;
    n++;
  }
  cr_expect(!*p && !*q && n == NTASKS + 1, "listings differ in length (%d lines)", n);

  /* --json has no clock-dependent field: byte for byte. */
  char *j2 = ls("", "--json"), *j1 = ls("TASKFS_LS_THREADS=1", "--json");
  cr_expect_str_eq(j2, j1);
  const char *at = j2;
  for (int i = 0; i < NTASKS; i++) {
    at = strstr(at, ids[i]);
    cr_assert(at, "--json lacks task %d (%s) in order", i, ids[i]);
  }
  free(text);
  free(one);
  free(j1);
  free(j2);
}

/* ---- the core listing (tfs_task_list_opts) -------------------------------- */

#define NCORE 5000 /* more than two chunks of 2,048 ids */

typedef struct {
  int n;
  char (*ids)[TFS_ID_MAX + 1];
  int bad_json;
  int stop_at;
} got_t;

static int got_cb(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  got_t *g = arg;
  if (json) {
    char *want = tfs_record_dump(rec);
    g->bad_json += !want || strlen(want) != len || strcmp(want, json);
    free(want);
  }
  snprintf(g->ids[g->n++], TFS_ID_MAX + 1, "%s", rec->id);
  return g->stop_at && g->n >= g->stop_at;
}

/* Every option, on two threads and on one: the same tasks, in order. */
Test(ls_many, core_listing_options) {
  static char ids[NCORE][TFS_ID_MAX + 1], out[NCORE][TFS_ID_MAX + 1];
  cr_assert_eq(tfs_store_open(state, &store), 0);
  for (int i = 0; i < NCORE; i++) {
    char *argv[] = {"true", NULL};
    tfs_task_spec_t spec = {
        .argv = argv, .cwd = "/", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
    cr_assert_eq(tfs_task_create(store, &spec, ids[i], NULL), 0);
    if (i % 3 == 0) { /* every third ends */
      tfs_record_t rec;
      cr_assert_eq(tfs_task_load(store, ids[i], &rec), 0);
      rec.state = TFS_COMPLETED;
      cr_assert_eq(tfs_task_save(store, &rec), 0);
      tfs_record_free(&rec);
    }
  }
  /* Ids made by one process are strictly increasing: ids[] is sorted. */
  char p[4096];
  snprintf(p, sizeof p, "%s/tasks/%s/record.json", state, ids[10]);
  cr_assert_eq(tu_write_file(p, "{", 1), 0);
  for (int threads = 1; threads <= 2; threads++) {
    tfs_list_stats_t st;
    got_t g = {.ids = out};
    tfs_list_opts_t o = {.threads = threads, .with_json = 1};
    cr_assert_eq(tfs_task_list_opts(store, &o, got_cb, &g, &st), 0);
    cr_assert_eq(g.n, NCORE - 1);
    cr_assert_eq(g.bad_json, 0, "json is tfs_record_dump of rec");
    cr_assert_eq(st.ids, NCORE);
    cr_assert_eq(st.shown, NCORE - 1);
    cr_assert_eq(st.corrupt, 1);
    cr_assert_str_eq(st.first_corrupt, ids[10]);
    for (int i = 0, k = 0; i < NCORE; i++)
      if (i != 10)
        cr_assert_str_eq(out[k++], ids[i], "threads %d, row %d", threads, k);

    /* Completed only, the newest 5, oldest first. */
    got_t h = {.ids = out};
    o = (tfs_list_opts_t){.threads = threads, .states = TFS_STATE_BIT(TFS_COMPLETED), .limit = 5};
    cr_assert_eq(tfs_task_list_opts(store, &o, got_cb, &h, &st), 0);
    cr_assert_eq(h.n, 5);
    int last = (NCORE - 1) / 3 * 3;
    for (int k = 0; k < 5; k++)
      cr_assert_str_eq(out[k], ids[last - 3 * (4 - k)]);
    cr_assert_eq(st.shown, 5);

    /* Newest first, a page before a cursor, stopped early. */
    got_t q = {.ids = out, .stop_at = 3};
    o = (tfs_list_opts_t){.threads = threads, .newest_first = 1, .before = ids[100]};
    cr_assert_eq(tfs_task_list_opts(store, &o, got_cb, &q, &st), 0);
    cr_assert_eq(q.n, 3);
    cr_assert_str_eq(out[0], ids[99]);
    cr_assert_str_eq(out[2], ids[97]);
  }
}
