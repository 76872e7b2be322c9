/* cancel_managed_task, and the stop request tasks/cancel shares: record
 * it, then wait for the supervisor's outcome (SIGTERM, then SIGKILL after
 * the grace period). */
#include <stdio.h>
#include <stdlib.h>

#include "mcp/internal.h"

typedef struct {
  int mcp_task; /* reply as tasks/cancel */
} cancel_wait_t;

static void cancel_reply(const mcp_req_t *r, const tfs_record_t *rec, int mcp_task, int already) {
  if (mcp_task) {
    mcp_reply(r, mcp_task_object(rec));
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

static int check_cancel(mcp_pending_t *p, int timed_out) {
  cancel_wait_t *cw = p->data;
  tfs_record_t rec;
  int err = tfs_task_load(mcp_store(p->req.srv), p->task_id, &rec);
  if (err) {
    if (!timed_out)
      return 0;
    mcp_reply_error(&p->req, MCP_RPC_INTERNAL_ERROR, "cannot read task %s: %s", p->task_id,
                    tfs_strerror(err));
    return 1;
  }
  int terminal = tfs_state_terminal(rec.state);
  if (terminal || timed_out)
    cancel_reply(&p->req, &rec, cw->mcp_task, 0);
  tfs_record_free(&rec);
  return terminal || timed_out;
}

int mcp_cancel_start(const mcp_req_t *r, const char *task_id, int mcp_task, tfs_record_t *rec,
                     char *msg, size_t msglen) {
  tfs_store_t *store = mcp_store(r->srv);
  int err = tfs_task_load(store, task_id, rec);
  if (err) {
    snprintf(msg, msglen, "cannot read task %s: %s", task_id, tfs_strerror(err));
    return -1;
  }
  if (tfs_state_terminal(rec->state))
    return 1;
  int64_t grace = rec->grace_ms > 0 ? rec->grace_ms : 5000;
  err = tfs_cancel_request(store, task_id, mcp_who(r->srv));
  if (err == TFS_EFINISHED) {
    tfs_record_free(rec);
    if (tfs_task_load(store, task_id, rec) == 0)
      return 1;
    snprintf(msg, msglen, "task %s has ended", task_id);
    return -1;
  }
  tfs_record_free(rec);
  if (err) {
    snprintf(msg, msglen, "could not record the stop request for %s: %s", task_id,
             tfs_strerror(err));
    return -1;
  }
  cancel_wait_t *cw = calloc(1, sizeof *cw);
  mcp_pending_t *p = cw ? mcp_pending_new(r, task_id, grace + 3000) : NULL;
  if (!p) {
    free(cw);
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  cw->mcp_task = mcp_task;
  p->data = cw;
  p->check = check_cancel;
  p->free_fn = mcp_pending_free_data;
  mcp_pending_start(p);
  return 0;
}

void mcp_tool_cancel(const mcp_req_t *r, json_t *args, json_t *task) {
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
