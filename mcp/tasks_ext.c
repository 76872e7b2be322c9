/* The 2026-07-28 tasks extension (io.modelcontextprotocol/tasks): tasks/get
 * with the result inline, tasks/update, tasks/cancel. A task is made by
 * tool_start.c when a request that declared the extension launches one;
 * the methods need the extension declared in the request too (the
 * dispatcher's -32021 otherwise). Tasks are the store's, so any instance
 * on the store answers for them, and the ids are the taskfs ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

/* What "resultType":"complete" adds to the nested result, which maxBytes
 * bounds as it bounds the plain call's. */
#define NESTED_TYPE_BYTES 24

/* The CallToolResult the start call gives at the task's end, exactly as
 * the plain call answers it (never isError for a task that ran), marked
 * complete as the extension's reference client requires of a nested
 * result. */
static json_t *final_result(const mcp_req_t *r, const tfs_record_t *rec) {
  mcp_read_t *ra = mcp_read_new(r);
  if (!ra)
    return NULL;
  ra->is_start = 1;
  mcp_task_bounds_load(r->srv, rec->id, ra);
  ra->extra_bytes = NESTED_TYPE_BYTES; /* not the era's tail: the task wraps it */
  char *text = NULL;
  json_t *o = mcp_output_build(r->srv, rec, ra, 0, 0, &text);
  free(text);
  mcp_read_free(ra);
  json_t *res = mcp_call_result(o, mcp_task_result_is_error(rec));
  json_object_set_new(res, "resultType", json_string("complete"));
  return res;
}

json_t *mcp_task_detailed(const mcp_req_t *r, const tfs_record_t *rec) {
  json_t *t = mcp_task_object(MCP_ERA_MODERN, rec);
  if (strcmp(mcp_task_status(rec), "completed"))
    return t;
  json_t *res = final_result(r, rec);
  if (!res) {
    json_decref(t);
    return NULL;
  }
  json_object_set_new(t, "result", res);
  return t;
}

void mcp_tasks_get_ext(const mcp_req_t *r, json_t *params) {
  tfs_record_t rec;
  if (mcp_task_param(r, params, &rec))
    return;
  json_t *t = mcp_task_detailed(r, &rec);
  tfs_record_free(&rec);
  if (t)
    mcp_reply(r, t); /* resultType "complete": the standard tasks/get result */
  else
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
}

/* Cooperative: the stop request is recorded and acknowledged at once;
 * tasks/get shows the outcome. A task that has ended is acknowledged
 * too (nothing to stop). */
void mcp_tasks_cancel_ext(const mcp_req_t *r, json_t *params) {
  tfs_record_t rec;
  if (mcp_task_param(r, params, &rec))
    return;
  int ended = tfs_state_terminal(rec.state);
  tfs_record_free(&rec);
  const char *id = json_string_value(json_object_get(params, "taskId"));
  char who[160];
  snprintf(who, sizeof who, "%s" MCP_TASKS_CANCEL, mcp_who(r->srv));
  int err = ended ? 0 : tfs_cancel_request(mcp_store(r->srv), id, who);
  if (err && err != TFS_EFINISHED) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "could not record the stop request: %s",
                    tfs_strerror(err));
    return;
  }
  mcp_reply(r, json_object());
}

/* taskfs tasks never wait for input, so no response is outstanding: the
 * update is acknowledged and its inputResponses ignored, as the extension
 * says of keys that are not outstanding. */
void mcp_tasks_update_ext(const mcp_req_t *r, json_t *params) {
  tfs_record_t rec;
  if (mcp_task_param(r, params, &rec))
    return;
  tfs_record_free(&rec);
  json_t *in = json_object_get(params, "inputResponses");
  if (in && !json_is_object(in)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.inputResponses must be an object");
    return;
  }
  mcp_reply(r, json_object());
}
