/* The MCP Tasks utility (tasks/get, tasks/result, tasks/list,
 * tasks/cancel) over the durable tasks: an MCP task id is the taskfs task
 * id, so it survives a server restart.
 *
 * State mapping (taskfs -> MCP task status): queued, running -> working;
 * completed -> completed; failed, lost -> failed; cancelled -> cancelled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define TASKS_PAGE 50
#define POLL_INTERVAL_MS 1000

static const char related_task_key[] = "io.modelcontextprotocol/related-task";

static const char *task_status(tfs_state_t s) {
  switch (s) {
  case TFS_QUEUED:
  case TFS_RUNNING:
    return "working";
  case TFS_COMPLETED:
    return "completed";
  case TFS_CANCELLED:
    return "cancelled";
  default:
    return "failed";
  }
}

json_t *mcp_task_object(const tfs_record_t *rec) {
  char m[512];
  if (tfs_state_terminal(rec->state))
    snprintf(m, sizeof m, "%s%s%s", tfs_state_name(rec->state), rec->reason ? ": " : "",
             rec->reason ? rec->reason : "");
  else
    snprintf(m, sizeof m, "%s; %lld lines of output so far", tfs_state_name(rec->state),
             (long long)rec->lines);
  int64_t updated =
      rec->ended_ms > 0 ? rec->ended_ms : (rec->started_ms > 0 ? rec->started_ms : rec->created_ms);
  if (rec->alive_ms > updated && !tfs_state_terminal(rec->state))
    updated = rec->alive_ms;
  char *clean = mcp_text_clean(m, strlen(m), 400);
  json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:n, s:i}", "taskId", rec->id, "status",
                        task_status(rec->state), "statusMessage", clean ? clean : "", "createdAt",
                        mcp_time_or_null(rec->created_ms), "lastUpdatedAt",
                        mcp_time_or_null(updated), "ttl", "pollInterval", POLL_INTERVAL_MS);
  free(clean);
  return o;
}

/* Looks up an MCP task id: it must be a taskfs id naming a task in the
 * store; anything else is -32602. */
static int task_param(const mcp_req_t *r, json_t *params, tfs_record_t *rec) {
  const char *tid = json_string_value(json_object_get(params, "taskId"));
  if (!tid) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.taskId (a string) is required");
    return -1;
  }
  if (!tfs_id_valid(tid)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "unknown task id '%.64s' (not a taskfs task id); see tasks/list", tid);
    return -1;
  }
  int err = tfs_task_load(mcp_store(r->srv), tid, rec);
  if (err == TFS_ENOTASK) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "unknown task id '%s'; see tasks/list", tid);
    return -1;
  }
  if (err) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "cannot read task %s: %s", tid, tfs_strerror(err));
    return -1;
  }
  return 0;
}

/* The same when only the id is needed: the task exists, id is filled. */
static int task_id_param(const mcp_req_t *r, json_t *params, char id[TFS_ID_MAX + 1]) {
  tfs_record_t rec;
  if (task_param(r, params, &rec))
    return -1;
  snprintf(id, TFS_ID_MAX + 1, "%s", rec.id);
  tfs_record_free(&rec);
  return 0;
}

void mcp_tasks_get(const mcp_req_t *r, json_t *params) {
  tfs_record_t rec;
  if (task_param(r, params, &rec))
    return;
  mcp_reply(r, mcp_task_object(&rec));
  tfs_record_free(&rec);
}

void mcp_tasks_result(const mcp_req_t *r, json_t *params) {
  char task_id[TFS_ID_MAX + 1];
  if (task_id_param(r, params, task_id))
    return;
  mcp_read_t *ra = mcp_read_new();
  if (!ra) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  ra->task_result = 1;
  ra->is_start = 1;
  mcp_read_park(r, task_id, ra, -1); /* no deadline: until terminal */
}

static int add_task(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  json_array_append_new(arg, mcp_task_object(rec));
  return 0;
}

void mcp_tasks_list(const mcp_req_t *r, json_t *params) {
  mcp_page_reply(r, params, "tasks", TASKS_PAGE, add_task);
}

void mcp_tasks_cancel(const mcp_req_t *r, json_t *params) {
  char task_id[TFS_ID_MAX + 1];
  if (task_id_param(r, params, task_id))
    return;
  char msg[512];
  tfs_record_t rec;
  int rc = mcp_cancel_start(r, task_id, 1, &rec, msg, sizeof msg);
  if (rc < 0) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "%s", msg);
  } else if (rc == 1) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "task %s has already ended (%s); a task in a terminal status cannot be "
                    "cancelled",
                    task_id, task_status(rec.state));
    tfs_record_free(&rec);
  }
}

/* tasks/result payload: the CallToolResult of the (start) call, with the
 * related-task _meta. */
json_t *mcp_task_payload(json_t *structured, const tfs_record_t *rec) {
  json_t *res = mcp_call_result(structured, rec->state != TFS_COMPLETED);
  json_object_set_new(res, "_meta", json_pack("{s:{s:s}}", related_task_key, "taskId", rec->id));
  return res;
}
