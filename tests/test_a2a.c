/* What A2A stands on: core's checks of a command (the same refusals MCP
 * and A2A give), core's pager (ListTasks, MCP's lists), and the mapping
 * of a task onto an A2A Task (states, the status of an end, artifacts). */
#include "tests/core_fixture.h"

#include "http/a2a.h"

TestSuite(a2a, .init = fx_setup, .fini = fx_teardown, .timeout = 60);

Test(a2a, command_check_refuses_what_cannot_run) {
  char why[512];
  char *empty[] = {NULL};
  cr_expect_eq(tfs_command_check(empty, why, sizeof why), -EINVAL);
  char *noprog[] = {"", NULL};
  cr_expect_eq(tfs_command_check(noprog, why, sizeof why), -EINVAL);
  cr_expect(strstr(why, "must name a program"), "%s", why);
  char *big = malloc(TFS_ARG_BYTES_MAX + 2);
  memset(big, 'x', TFS_ARG_BYTES_MAX + 1);
  big[TFS_ARG_BYTES_MAX + 1] = 0;
  char *huge[] = {"echo", big, NULL};
  cr_expect_eq(tfs_command_check(huge, why, sizeof why), -E2BIG);
  cr_expect(strstr(why, "command[1] is 131072 bytes"), "%s", why);
  big[TFS_ARG_BYTES_MAX] = 0; /* exactly the most one argument may hold */
  cr_expect_eq(tfs_command_check(huge, why, sizeof why), 0, "%s", why);
  /* Many arguments, each fine, too many bytes in all. */
  char *many[12] = {"echo"};
  for (int i = 1; i < 11; i++)
    many[i] = big;
  cr_expect_eq(tfs_command_check(many, why, sizeof why), -E2BIG);
  cr_expect(strstr(why, "in all"), "%s", why);
  free(big);
  char *ok[] = {"true", NULL};
  cr_expect_eq(tfs_command_check(ok, why, sizeof why), 0);
}

Test(a2a, cwd_check_wants_an_existing_absolute_directory) {
  char why[512];
  cr_expect_eq(tfs_cwd_check("relative/dir", why, sizeof why), -EINVAL);
  cr_expect(strstr(why, "absolute"), "%s", why);
  cr_expect_eq(tfs_cwd_check("/no/such/dir/here", why, sizeof why), -ENOENT);
  cr_expect(strstr(why, "not an existing directory"), "%s", why);
  fx_write("afile", "x");
  cr_expect_eq(tfs_cwd_check(fx_path("afile"), why, sizeof why), -ENOENT);
  cr_expect_eq(tfs_cwd_check(fx_dir, why, sizeof why), 0, "%s", why);
}

static int collect(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  char *ids = arg;
  strcat(ids, rec->id);
  strcat(ids, " ");
  return 0;
}

Test(a2a, page_goes_newest_first_by_cursor) {
  char id[5][TFS_ID_MAX + 1];
  for (int i = 0; i < 5; i++)
    fx_create("true", NULL, id[i]);
  fx_set_state(id[1], TFS_COMPLETED);
  fx_set_state(id[3], TFS_COMPLETED);
  char got[512] = "", want[512], err[256];
  tfs_page_t pg = {.limit = 2};
  cr_assert_eq(tfs_task_page(fx_store, &pg, collect, got, err, sizeof err), 0, "%s", err);
  snprintf(want, sizeof want, "%s %s ", id[4], id[3]);
  cr_expect_str_eq(got, want);
  cr_expect_eq(pg.total, 5);
  cr_expect_str_eq(pg.next, id[3]);
  char next[TFS_ID_MAX + 1];
  snprintf(next, sizeof next, "%s", pg.next);
  got[0] = 0;
  pg = (tfs_page_t){.limit = 10, .cursor = next};
  cr_assert_eq(tfs_task_page(fx_store, &pg, collect, got, err, sizeof err), 0, "%s", err);
  snprintf(want, sizeof want, "%s %s %s ", id[2], id[1], id[0]);
  cr_expect_str_eq(got, want);
  cr_expect_str_eq(pg.next, "", "the last page has no next");
  got[0] = 0;
  pg = (tfs_page_t){.limit = 10, .states = TFS_STATE_BIT(TFS_COMPLETED)};
  cr_assert_eq(tfs_task_page(fx_store, &pg, collect, got, err, sizeof err), 0, "%s", err);
  snprintf(want, sizeof want, "%s %s ", id[3], id[1]);
  cr_expect_str_eq(got, want);
  pg = (tfs_page_t){.limit = 10, .cursor = "../../etc"};
  cr_expect_eq(tfs_task_page(fx_store, &pg, collect, got, err, sizeof err), TFS_ENOTASK);
  cr_expect(strstr(err, "is not a task id"), "%s", err);
  pg = (tfs_page_t){.limit = 10, .cursor = "zzzzzzzz-zzzzzz"};
  cr_expect_eq(tfs_task_page(fx_store, &pg, collect, got, err, sizeof err), TFS_ENOTASK);
  cr_expect(strstr(err, "names no task"), "%s", err);
}

Test(a2a, states_map_onto_a2a_and_back) {
  cr_expect_str_eq(a2a_state_wire(TFS_QUEUED), "TASK_STATE_SUBMITTED");
  cr_expect_str_eq(a2a_state_wire(TFS_RUNNING), "TASK_STATE_WORKING");
  cr_expect_str_eq(a2a_state_wire(TFS_PAUSED), "TASK_STATE_WORKING");
  cr_expect_str_eq(a2a_state_wire(TFS_COMPLETED), "TASK_STATE_COMPLETED");
  cr_expect_str_eq(a2a_state_wire(TFS_FAILED), "TASK_STATE_FAILED");
  cr_expect_str_eq(a2a_state_wire(TFS_LOST), "TASK_STATE_FAILED");
  cr_expect_str_eq(a2a_state_wire(TFS_CANCELLED), "TASK_STATE_CANCELED");
  unsigned bits;
  int none;
  cr_expect_eq(a2a_state_filter("TASK_STATE_FAILED", &bits, &none), 0);
  cr_expect_eq(bits, TFS_STATE_BIT(TFS_FAILED) | TFS_STATE_BIT(TFS_LOST));
  cr_expect_eq(none, 0);
  cr_expect_eq(a2a_state_filter("TASK_STATE_REJECTED", &bits, &none), 0);
  cr_expect_eq(none, 1, "no taskfs task is ever rejected");
  cr_expect_eq(a2a_state_filter("TASK_STATE_UNSPECIFIED", &bits, &none), 0);
  cr_expect_eq(bits, 0);
  cr_expect_eq(none, 0, "unspecified: no filter");
  cr_expect_eq(a2a_state_filter("TASK_STATE_RUNNING", &bits, &none), -1);
  cr_expect_eq(a2a_state_filter("working", &bits, &none), -1);
}

Test(a2a, task_says_why_it_ended_and_carries_its_lines) {
  char id[TFS_ID_MAX + 1];
  fx_create("make", NULL, id);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  rec.state = TFS_LOST;
  rec.started_ms = 1000;
  tfs_important_add(&rec.important, 7, TFS_LINE_ERROR, "error: it broke", 15);
  json_t *t = a2a_task_json(fx_store, &rec, 1);
  cr_assert(t);
  json_t *st = json_object_get(t, "status");
  cr_expect_str_eq(json_string_value(json_object_get(st, "state")), "TASK_STATE_FAILED");
  const char *msg = json_string_value(json_object_get(
      json_array_get(json_object_get(json_object_get(st, "message"), "parts"), 0), "text"));
  cr_expect(msg && !strncmp(msg, "lost: ", 6), "%s", msg ? msg : "(none)");
  cr_expect_str_eq(json_string_value(json_object_get(st, "timestamp")), "1970-01-01T00:00:01.000Z");
  cr_expect_str_eq(json_string_value(json_object_get(t, "contextId")), id);
  json_t *imp = json_array_get(json_object_get(t, "artifacts"), 0);
  cr_expect_str_eq(json_string_value(json_object_get(imp, "artifactId")), "important");
  json_t *line = json_array_get(
      json_object_get(json_object_get(json_array_get(json_object_get(imp, "parts"), 0), "data"),
                      "lines"),
      0);
  cr_expect_eq(json_integer_value(json_object_get(line, "line")), 7);
  cr_expect_str_eq(json_string_value(json_object_get(line, "kind")), "error");
  json_t *tail = json_array_get(json_object_get(t, "artifacts"), 1);
  cr_expect_str_eq(json_string_value(json_object_get(tail, "artifactId")), "tail");
  json_t *meta = json_object_get(json_object_get(t, "metadata"), "taskfs");
  cr_expect_str_eq(json_string_value(json_object_get(meta, "state")), "lost");
  json_decref(t);
  /* No artifacts unless asked (ListTasks' default). */
  t = a2a_task_json(fx_store, &rec, 0);
  cr_expect_null(json_object_get(t, "artifacts"));
  json_decref(t);
  tfs_record_free(&rec);
}
