/* `taskfs ls` over many tasks: the full listing loads records on two
 * threads, and must still print every task once, in creation order, with
 * the same bytes as a one-thread listing (TASKFS_LS_THREADS=1). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "taskfs/taskfs.h"
#include "taskfs/text.h"
#include "tests/helpers/testutil.h"

#define NTASKS 500

static char *tmp, *state;
static tfs_store_t *store;

static void setup(void) {
  tmp = tu_tmpdir_mem("lsmany"); /* 5,000 creates: their fsyncs cost nothing on tmpfs */
  if (asprintf(&state, "%s/state", tmp) < 0)
    abort();
}

static void teardown(void) {
  if (store)
    tfs_store_close(store);
  store = NULL;
  tu_cleanup_dir(tmp);
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
    /* The row: the task's number (the # column, right-aligned), then
     * its id. */
    const char *id_at = line + strspn(line, " ");
    id_at += strspn(id_at, "0123456789");
    id_at += strspn(id_at, " ");
    cr_assert(!strncmp(id_at, ids[i], strlen(ids[i])), "row %d is not task %s: %.80s", i, ids[i],
              line);
    char *eol = strchr(line, '\n');
    cr_assert(eol, "row %d is cut", i);
    cr_expect(eol + 1 - strlen(want) >= line &&
                  !strncmp(eol + 1 - strlen(want), want, strlen(want)),
              "row %d has the wrong command: %.*s", i, (int)(eol - line), line);
    line = eol + 1;
  }
  cr_expect_eq(*line, '\0', "extra rows: %.200s", line);

  /* The same listing on one thread: the same rows. With --time the times
   * are the records' own (an age could tick between the two runs), so the
   * two listings are the same to the byte. */
  char *two = ls("", "--time");
  char *one = ls("TASKFS_LS_THREADS=1", "--time");
  char *p = two, *q = one;
  int n = 0;
  while (*p && *q) {
    char *pe = strchr(p, '\n'), *qe = strchr(q, '\n');
    cr_assert(pe && qe);
    cr_expect(pe - p == qe - q && !strncmp(p, q, (size_t)(pe - p)), "line %d differs: %.*s | %.*s",
              n, (int)(pe - p), p, (int)(qe - q), q);
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
  free(two);
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
    cr_assert_eq(st.left, 97, "stopped by cb: 97 older ids left");

    /* A page of an event loop: completed ones, at most 10 records read. */
    got_t c = {.ids = out};
    o = (tfs_list_opts_t){.threads = threads,
                          .newest_first = 1,
                          .states = TFS_STATE_BIT(TFS_COMPLETED),
                          .limit = 50,
                          .before = ids[3000],
                          .scan_max = 10};
    cr_assert_eq(tfs_task_list_opts(store, &o, got_cb, &c, &st), 0);
    cr_assert_eq(c.n, 3, "ids 2997, 2994 and 2991 of 2999..2990");
    cr_assert_str_eq(out[0], ids[2997]);
    cr_assert_str_eq(st.last_examined, ids[2990]);
    cr_assert_eq(st.left, 2990);
    char cursor[TFS_ID_MAX + 1];
    snprintf(cursor, sizeof cursor, "%s", st.last_examined); /* st is rewritten */
    o.before = cursor;
    o.scan_max = 0;
    o.limit = 1000;
    c.n = 0;
    cr_assert_eq(tfs_task_list_opts(store, &o, got_cb, &c, &st), 0);
    cr_assert_eq(c.n, 997, "the rest: 2988, 2985, ... 0");
    cr_assert_eq(st.left, 0, "walked to the oldest");
  }
}

/* ---- `ls --json` is the core listing ----------------------------------- */

/* What `ls --json` printed before it moved onto tfs_task_list_opts, built
 * here from the records one load at a time: the dumps of the tasks whose
 * state is in mask, oldest first (the newest `limit` of them when limit >
 * 0), one per array element. */
static char *expected_json(unsigned mask, size_t limit) {
  char **ids;
  size_t n, kept = 0, len = 0;
  char **dumps;
  cr_assert_eq(tfs_task_ids(store, &ids, &n), 0);
  dumps = calloc(n + 1, sizeof *dumps);
  for (size_t k = n; k-- > 0 && (!limit || kept < limit);) {
    tfs_record_t rec;
    if (tfs_task_load(store, ids[k], &rec) == 0 && (mask & TFS_STATE_BIT(rec.state)))
      dumps[kept++] = tfs_record_dump(&rec);
    tfs_record_free(&rec);
  }
  for (size_t i = 0; i < kept; i++)
    len += strlen(dumps[i]) + 2;
  char *out = malloc(len + 8), *p = out;
  p += sprintf(p, "[");
  for (size_t i = kept; i-- > 0;) {
    size_t l = strlen(dumps[i]);
    p += sprintf(p, "%s", i == kept - 1 ? "\n" : ",\n");
    memcpy(p, dumps[i], l - 1); /* without its final newline */
    p += l - 1;
    free(dumps[i]);
  }
  sprintf(p, kept ? "\n]\n" : "]\n");
  free(dumps);
  tfs_ids_free(ids, n);
  return out;
}

static void end_task(const char *id, tfs_state_t s, int code, int sig) {
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(store, id, &rec), 0);
  rec.state = s;
  rec.exit_code = code;
  rec.signal = sig;
  rec.started_ms = tfs_now_ms() - 2000;
  rec.ended_ms = tfs_now_ms();
  rec.worker_pid = 4242;
  cr_assert_eq(tfs_task_save(store, &rec), 0);
  tfs_record_free(&rec);
}

/* Corrupt records of three kinds (garbage, a directory in the record's
 * place, another task's record), tasks in four states, a state filter and
 * a limit: `ls --json` gives byte for byte what the one-at-a-time listing
 * gives, on two threads and on one, and names the oldest unreadable record
 * once. The text listing names signals as tfs_signal_name does. */
Test(ls_many, ls_json_is_the_core_listing) {
  enum { N = 3000 };
  static char ids[N][TFS_ID_MAX + 1];
  cr_assert_eq(tfs_store_open(state, &store), 0);
  for (int i = 0; i < N; i++) {
    char *argv[] = {"sh", "-c", i % 2 ? "make test" : "echo 'a b'", NULL};
    tfs_task_spec_t spec = {
        .argv = argv, .cwd = "/", .min_uptime_ms = -1, .max_restarts = -1, .grace_ms = -1};
    cr_assert_eq(tfs_task_create(store, &spec, ids[i], NULL), 0);
    if (i % 4 == 1)
      end_task(ids[i], TFS_COMPLETED, 0, 0);
    else if (i % 4 == 2)
      end_task(ids[i], TFS_FAILED, i % 8 == 2 ? -1 : 3, i % 8 == 2 ? SIGKILL : 0);
    else if (i % 4 == 3)
      end_task(ids[i], TFS_CANCELLED, -1, 40); /* a real-time signal */
  }
  char p[4096];
  snprintf(p, sizeof p, "%s/tasks/%s/record.json", state, ids[5]);
  cr_assert_eq(tu_write_file(p, "{\"v\": 1, \"id\": tru", 18), 0);
  snprintf(p, sizeof p, "%s/tasks/%s/record.json", state, ids[2500]);
  cr_assert_eq(unlink(p), 0);
  cr_assert_eq(mkdir(p, 0700), 0);
  char from[4096];
  snprintf(from, sizeof from, "%s/tasks/%s/record.json", state, ids[0]);
  snprintf(p, sizeof p, "%s/tasks/%s/record.json", state, ids[2999]);
  char *other = tu_read_file(from, NULL);
  cr_assert_eq(tu_write_file(p, other, strlen(other)), 0);
  free(other);

  struct {
    const char *args;
    unsigned mask;
    size_t limit;
  } cases[] = {
      {"--json", ~0u, 0},
      {"--json --state failed,cancelled", TFS_STATE_BIT(TFS_FAILED) | TFS_STATE_BIT(TFS_CANCELLED),
       0},
      {"--json --state completed --limit 7", TFS_STATE_BIT(TFS_COMPLETED), 7},
      {"--json --limit 1", ~0u, 1},
      {"--json --state lost", TFS_STATE_BIT(TFS_LOST), 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char *want = expected_json(cases[c].mask, cases[c].limit);
    for (int one = 0; one <= 1; one++) {
      char *got = ls(one ? "TASKFS_LS_THREADS=1" : "", cases[c].args);
      cr_expect(!strcmp(got, want), "ls %s (one thread: %d) differs from the record dumps",
                cases[c].args, one);
      free(got);
    }
    free(want);
  }

  /* The note names the oldest unreadable record and counts all three. */
  char *out = NULL;
  cr_assert_eq(
      tu_sh(&out, "'%s' ls --json --state-dir '%s' 2>&1 >/dev/null", tu_taskfs_bin(), state), 0);
  cr_expect(strstr(out, "3 unreadable records skipped"), "%s", out);
  snprintf(p, sizeof p, "taskfs show %s", ids[5]);
  cr_expect(strstr(out, p), "%s", out);
  free(out);

  /* EXIT: SIGKILL, the real-time signal as kill -l spells it, codes. */
  char sig40[TFS_SIGNAME_MAX], row[128];
  tfs_signal_name(40, sig40);
  char *text = ls("", "");
  snprintf(row, sizeof row, "%s failed", ids[2]);
  char *r = strstr(text, row);
  cr_assert(r, "%.300s", text);
  cr_expect(strstr(r, "SIGKILL") && strstr(r, "SIGKILL") < strchr(r, '\n'), "%.100s", r);
  snprintf(row, sizeof row, "%s cancelled", ids[3]);
  r = strstr(text, row);
  cr_assert(r);
  cr_expect(strstr(r, sig40) && strstr(r, sig40) < strchr(r, '\n'), "%.100s (want %s)", r, sig40);
  cr_expect(!strstr(text, "sig40"));
  free(text);
}
