/* cancel_managed_task, and the stop request tasks/cancel shares: record
 * it, then wait for the supervisor's outcome (SIGTERM, then SIGKILL after
 * the grace period). */
#include <stdio.h>
#include <stdlib.h>

#include "mcp/internal.h"

/* A cancel waits the task's grace period and this much more: the SIGKILL
 * rounds after the grace, and the final save. */
#define CANCEL_SLACK_MS 3000

typedef struct {
  int mcp_task; /* reply as tasks/cancel */
} cancel_wait_t;

static void cancel_reply(const mcp_req_t *r, const tfs_record_t *rec, int mcp_task, int already) {
  if (mcp_task) {
    mcp_reply(r, mcp_task_object(r->era, rec));
    return;
  }
  json_t *o = mcp_record_compact(rec);
  int terminal = tfs_state_terminal(rec->state);
  char m[256];
  if (already)
    snprintf(m, sizeof m, "task %s had already ended (%s); nothing was stopped", rec->id,
             tfs_state_name(rec->state));
  else if (terminal)
    snprintf(m, sizeof m, "task %s stopped: %s", rec->id, tfs_state_name(rec->state));
  else
    snprintf(m, sizeof m,
             "stop requested; task %s is still stopping (SIGKILL follows after its grace "
             "period); check it with read_managed_task",
             rec->id);
  json_object_set_new(o, "alreadyEnded", json_boolean(already));
  json_object_set_new(o, "stopped", json_boolean(!already && terminal));
  json_object_set_new(o, "message", json_string(m));
  mcp_reply(r, mcp_call_result(o, 0));
}

/* Waits for the supervisor's outcome: the end, or the grace period and
 * some slack for the SIGKILL rounds after it. */
static int check_cancel(const mcp_req_t *r, void *data, const mcp_look_t *lk) {
  cancel_wait_t *cw = data;
  if (lk->err) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "cannot read task %s: %s", lk->task_id,
                    tfs_strerror(lk->err));
    return 1;
  }
  if (!lk->ended && !lk->timed_out)
    return 0;
  cancel_reply(r, lk->rec, cw->mcp_task, 0);
  return 1;
}

int mcp_cancel_start(const mcp_req_t *r, const char *task_id, int mcp_task, tfs_record_t *rec,
                     char *msg, size_t msglen) {
  tfs_store_t *store = mcp_store(r->srv);
  int rc = tfs_task_ended(store, task_id, rec);
  if (rc < 0) {
    snprintf(msg, msglen, "cannot read task %s: %s", task_id, tfs_strerror(rc));
    tfs_record_free(rec);
    return -1;
  }
  if (rc == 1)
    return 1;
  /* The record holds the grace the supervisor will give (core's default
   * when none was asked for). */
  int64_t wait = rec->grace_ms + CANCEL_SLACK_MS;
  if (wait > MCP_WAIT_CAP_MS || wait < 0)
    wait = MCP_WAIT_CAP_MS;
  char who[160];
  snprintf(who, sizeof who, "%s%s", mcp_who(r->srv), mcp_task ? MCP_TASKS_CANCEL : "");
  int err = tfs_cancel_request(store, task_id, who);
  tfs_record_free(rec);
  if (err == TFS_EFINISHED) {
    if (tfs_task_ended(store, task_id, rec) >= 0)
      return 1; /* it ended on its own meanwhile */
    tfs_record_free(rec);
    snprintf(msg, msglen, "task %s has ended", task_id);
    return -1;
  }
  if (err) {
    snprintf(msg, msglen, "could not record the stop request for %s: %s", task_id,
             tfs_strerror(err));
    return -1;
  }
  cancel_wait_t *cw = calloc(1, sizeof *cw);
  if (!cw) {
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  cw->mcp_task = mcp_task;
  mcp_wait(r, task_id, wait, TFS_WATCH_STATE, check_cancel, cw, free);
  return 0;
}

void mcp_tool_cancel(const mcp_req_t *r, json_t *args, json_t *task, json_t *params) {
  char msg[512], task_id[TFS_ID_MAX + 1];
  if (mcp_resolve_args(r->srv, args, task_id, msg, sizeof msg)) {
    mcp_tool_error(r, "%s", msg);
    return;
  }
  tfs_record_t rec;
  int rc = mcp_cancel_start(r, task_id, 0, &rec, msg, sizeof msg);
  if (rc < 0)
    mcp_tool_error(r, "%s", msg);
  else if (rc == 1) {
    cancel_reply(r, &rec, 0, 1);
    tfs_record_free(&rec);
  }
}
