/* list_managed_tasks, and the pager the three lists share (the tool,
 * tasks/list, resources/list): ids newest first, the cursor is the last id
 * of the previous page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define LIST_DEFAULT 50
#define LIST_MAX 500
#define LIST_SCAN_MAX 5000 /* records read by one filtered list call */

int mcp_idpage_open(mcp_server_t *srv, const char *cursor, mcp_idpage_t *pg, char *err,
                    size_t errlen) {
  memset(pg, 0, sizeof *pg);
  if (cursor && !tfs_id_valid(cursor)) {
    snprintf(err, errlen,
             "cursor '%.64s' is not one this server handed out; omit it to start "
             "from the newest task",
             cursor);
    return -1;
  }
  int rc = tfs_task_ids(mcp_store(srv), &pg->all, &pg->nall);
  if (rc) {
    snprintf(err, errlen, "cannot list the store: %s", tfs_strerror(rc));
    return -1;
  }
  /* Page starts at the newest id strictly older than the cursor. */
  size_t lo = 0, hi = pg->nall;
  if (cursor) {
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (strcmp(pg->all[mid], cursor) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    pg->start = lo; /* ids [0, lo) are older than the cursor */
  } else {
    pg->start = pg->nall;
  }
  return 0;
}

int mcp_idpage_param(const mcp_req_t *r, json_t *params, mcp_idpage_t *pg) {
  json_t *jcur = json_object_get(params, "cursor");
  if (jcur && !json_is_string(jcur)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.cursor must be a string");
    return -1;
  }
  char msg[256];
  if (mcp_idpage_open(r->srv, json_string_value(jcur), pg, msg, sizeof msg)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "%s", msg);
    return -1;
  }
  return 0;
}

void mcp_idpage_close(mcp_idpage_t *pg) {
  tfs_ids_free(pg->all, pg->nall);
  memset(pg, 0, sizeof *pg);
}

/* One line of the list: the fields an agent scans for, with long
 * arguments cut, so that a page of 50 stays a few KiB. */
static json_t *list_entry(const tfs_record_t *rec) {
  json_t *argv = json_array();
  for (int i = 0; i < rec->argc && rec->argv && rec->argv[i]; i++) {
    char *c = mcp_text_clean(rec->argv[i], strlen(rec->argv[i]), 120);
    json_array_append_new(argv, json_string(c ? c : ""));
    free(c);
  }
  int64_t duration = -1;
  if (rec->started_ms > 0)
    duration = (rec->ended_ms > 0 ? rec->ended_ms : tfs_now_ms()) - rec->started_ms;
  char when[TFS_TIME_BUF];
  return json_pack(
      "{s:s, s:o, s:s, s:o, s:o, s:o, s:s, s:o, s:I}", "taskId", rec->id, "taskKey",
      rec->key[0] ? json_string(rec->key) : json_null(), "state", tfs_state_name(rec->state),
      "command", argv, "exitCode", rec->exit_code >= 0 ? json_integer(rec->exit_code) : json_null(),
      "signal", rec->signal > 0 ? json_integer(rec->signal) : json_null(), "createdAt",
      tfs_time_format(rec->created_ms, when), "durationMs",
      duration >= 0 ? json_integer(duration) : json_null(), "lines", (json_int_t)rec->lines);
}

void mcp_tool_list(const mcp_req_t *r, json_t *args, json_t *task) {
  mcp_server_t *srv = r->srv;
  char msg[512];
  int64_t limit;
  if (mcp_arg_int(args, "limit", LIST_DEFAULT, 1, LIST_MAX, &limit, msg, sizeof msg)) {
    mcp_tool_error(r, "%s", msg);
    return;
  }
  json_t *jstate = json_object_get(args, "state");
  tfs_state_t want = TFS_QUEUED;
  int filter = 0;
  if (jstate && !json_is_null(jstate)) {
    if (!json_is_string(jstate) || tfs_state_parse(json_string_value(jstate), &want)) {
      mcp_tool_error(r, "state must be one of queued, running, completed, failed, cancelled, lost");
      return;
    }
    filter = 1;
  }
  json_t *jcur = json_object_get(args, "cursor");
  if (jcur && !json_is_null(jcur) && !json_is_string(jcur)) {
    mcp_tool_error(r, "cursor must be the nextCursor string of a previous answer");
    return;
  }
  mcp_idpage_t pg;
  if (mcp_idpage_open(srv, json_string_value(jcur), &pg, msg, sizeof msg)) {
    mcp_tool_error(r, "%s", msg);
    return;
  }
  /* A filtered scan looks at no more than LIST_SCAN_MAX records per call
   * (each is a file read), so one call never holds the loop for long; the
   * cursor continues it. */
  json_t *tasks = json_array();
  size_t i = pg.start, scanned = 0;
  const char *last = NULL;
  while (i > 0 && (int64_t)json_array_size(tasks) < limit && scanned < LIST_SCAN_MAX) {
    i--;
    scanned++;
    tfs_record_t rec;
    last = pg.all[i];
    if (tfs_task_load(mcp_store(srv), pg.all[i], &rec))
      continue; /* vanished or corrupt: costs that task only */
    if (!filter || rec.state == want)
      json_array_append_new(tasks, list_entry(&rec));
    tfs_record_free(&rec);
  }
  json_t *o = json_pack("{s:o, s:I}", "tasks", tasks, "total", (json_int_t)pg.nall);
  if (i > 0 && last)
    json_object_set_new(o, "nextCursor", json_string(last));
  if (i > 0 && scanned >= LIST_SCAN_MAX && (int64_t)json_array_size(tasks) < limit)
    json_object_set_new(o, "hint",
                        json_string("the state filter scanned its share of older tasks for this "
                                    "call; pass nextCursor to go on"));
  mcp_idpage_close(&pg);
  mcp_reply(r, mcp_call_result(o, 0));
}
