/* list_managed_tasks, and the pager the three lists share (the tool,
 * tasks/list, resources/list): the core listing, newest first; the cursor
 * is the last id the previous page examined. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define LIST_DEFAULT 50 /* the bounds are the schema's (schema.c) */
int mcp_page_run(mcp_server_t *srv, const char *cursor, mcp_page_t *pg, char *err, size_t errlen) {
  tfs_page_t p = {.states = pg->states, .limit = pg->limit, .cursor = cursor};
  if (tfs_task_page(mcp_store(srv), &p, pg->cb, pg->arg, err, errlen))
    return -1;
  pg->total = p.total;
  pg->capped = p.capped;
  snprintf(pg->next, sizeof pg->next, "%s", p.next);
  return 0;
}

void mcp_page_reply(const mcp_req_t *r, json_t *params, const char *field, size_t limit,
                    tfs_list_cb cb) {
  json_t *jcur = json_object_get(params, "cursor");
  if (jcur && !json_is_string(jcur)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.cursor must be a string");
    return;
  }
  char msg[256];
  json_t *list = json_array();
  mcp_page_t pg = {.limit = limit, .cb = cb, .arg = list};
  if (mcp_page_run(r->srv, json_string_value(jcur), &pg, msg, sizeof msg)) {
    json_decref(list);
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "%s", msg);
    return;
  }
  json_t *o = json_pack("{s:o}", field, list);
  if (pg.next[0])
    json_object_set_new(o, "nextCursor", json_string(pg.next));
  mcp_reply(r, o);
}

/* One line of the list: the fields an agent scans for, with long
 * arguments cut, so that a page of 50 stays a few KiB. */
static json_t *list_entry(const tfs_record_t *rec, tfs_queue_positions_t *pos) {
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
  char *cwd = rec->cwd ? mcp_text_clean(rec->cwd, strlen(rec->cwd), 240) : NULL;
  json_t *e = json_pack(
      "{s:s, s:o, s:s, s:o, s:o, s:o, s:o, s:s, s:o, s:I}", "taskId", rec->id, "taskKey",
      rec->key[0] ? json_string(rec->key) : json_null(), "state", tfs_state_name(rec->state),
      "command", argv, "cwd", cwd ? json_string(cwd) : json_null(), "exitCode",
      rec->exit_code >= 0 ? json_integer(rec->exit_code) : json_null(), "signal",
      rec->signal > 0 ? json_integer(rec->signal) : json_null(), "createdAt",
      tfs_time_format(rec->created_ms, when), "durationMs",
      duration >= 0 ? json_integer(duration) : json_null(), "lines", (json_int_t)rec->lines);
  mcp_usage_fields(e, rec);
  json_object_set_new(e, "number", rec->number > 0 ? json_integer(rec->number) : json_null());
  free(cwd);
  /* Its queue and, while it waits for a slot, its place (computed now). */
  int at = tfs_queue_position(pos, rec);
  json_object_set_new(e, "queue", rec->queue[0] ? json_string(rec->queue) : json_null());
  json_object_set_new(e, "position", at > 0 ? json_integer(at) : json_null());
  return e;
}

typedef struct {
  json_t *tasks;
  tfs_queue_positions_t *pos;
} entries_t;

static int add_entry(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  entries_t *en = arg;
  json_array_append_new(en->tasks, list_entry(rec, en->pos));
  return 0;
}

void mcp_tool_list(const mcp_req_t *r, json_t *args, json_t *task, json_t *params) {
  char msg[512];
  int64_t limit = mcp_arg_i64(args, "limit", LIST_DEFAULT);
  const char *state = json_string_value(json_object_get(args, "state"));
  tfs_state_t want = TFS_QUEUED;
  unsigned states = 0;
  if (state && !tfs_state_parse(state, &want))
    states = TFS_STATE_BIT(want);
  json_t *tasks = json_array();
  entries_t en = {tasks, NULL};
  tfs_queue_positions_open(mcp_store(r->srv), &en.pos);
  mcp_page_t pg = {.states = states, .limit = (size_t)limit, .cb = add_entry, .arg = &en};
  int failed = mcp_page_run(r->srv, json_string_value(json_object_get(args, "cursor")), &pg, msg,
                            sizeof msg);
  tfs_queue_positions_close(en.pos);
  if (failed) {
    json_decref(tasks);
    mcp_tool_error(r, "%s", msg);
    return;
  }
  json_t *o = json_pack("{s:o, s:I}", "tasks", tasks, "total", (json_int_t)pg.total);
  if (pg.next[0])
    json_object_set_new(o, "nextCursor", json_string(pg.next));
  if (pg.capped)
    json_object_set_new(o, "hint",
                        json_string("the state filter scanned its share of older tasks for this "
                                    "call; pass nextCursor to go on"));
  mcp_reply(r, mcp_call_result(o, 0));
}
