/* control_managed_task {taskKey|taskId, action, signal?, freeSlot?}:
 * pause, resume or signal a running task through the store (core's
 * control requests, as a stop request is), then, for pause and resume,
 * wait briefly (event-driven, as every wait) until the record says it
 * happened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"
#include "taskfs/text.h"

#define CONTROL_WAIT_MS 5000

typedef struct {
  tfs_state_t want; /* paused, running */
  char action[16];
} control_wait_t;

static void control_reply(const mcp_req_t *r, const tfs_record_t *rec, const char *action,
                          const char *message) {
  json_t *o = mcp_record_compact(rec);
  json_object_set_new(o, "action", json_string(action));
  json_object_set_new(o, "message", json_string(message));
  mcp_reply(r, mcp_call_result(o, 0));
}

static int check_control(const mcp_req_t *r, void *data, const mcp_look_t *lk) {
  control_wait_t *cw = data;
  char m[256];
  if (lk->err) {
    mcp_tool_error(r, "cannot read task %s: %s", lk->task_id, tfs_strerror(lk->err));
    return 1;
  }
  if (!lk->ended && lk->rec->state != cw->want && !lk->timed_out)
    return 0;
  if (lk->rec->state == cw->want)
    snprintf(m, sizeof m, "task %s is %s", lk->task_id, tfs_state_name(cw->want));
  else
    snprintf(m, sizeof m, "%s requested; task %s is %s", cw->action, lk->task_id,
             tfs_state_name(lk->rec->state));
  control_reply(r, lk->rec, cw->action, m);
  return 1;
}

/* The request from the arguments: 0, or -1 with msg. */
static int control_args(json_t *args, tfs_control_t *c, char *msg, size_t msglen) {
  const char *action = json_string_value(json_object_get(args, "action")); /* required, enum */
  json_t *sig = json_object_get(args, "signal");
  memset(c, 0, sizeof *c);
  c->action = !strcmp(action, "pause")    ? TFS_CONTROL_PAUSE
              : !strcmp(action, "resume") ? TFS_CONTROL_RESUME
                                          : TFS_CONTROL_SIGNAL;
  c->free_slot = json_is_true(json_object_get(args, "freeSlot"));
  if (c->action != TFS_CONTROL_SIGNAL)
    return 0;
  if (!json_is_string(sig)) {
    snprintf(msg, msglen, "action signal needs signal: a name or number as kill -l lists them "
                          "(\"TERM\", \"SIGUSR1\", \"HUP\", \"10\")");
    return -1;
  }
  if ((c->sig = tfs_signal_parse(json_string_value(sig))) < 0) {
    snprintf(msg, msglen, "signal '%.40s' is not a signal: give a name or number as kill -l "
                          "lists them (\"TERM\", \"SIGUSR1\", \"HUP\", \"10\")",
             json_string_value(sig));
    return -1;
  }
  return 0;
}

/* The words for a request that does not fit the task. */
static void refused(const tfs_record_t *rec, const char *action, int err, char *msg,
                    size_t msglen) {
  const char *state = tfs_state_name(rec->state);
  if (err == TFS_EFINISHED)
    snprintf(msg, msglen, "task %s has ended (%s); there is nothing to %s", rec->id, state,
             action);
  else if (err == TFS_ENOTRUNNING && !strcmp(action, "resume"))
    snprintf(msg, msglen, "task %s is %s, not paused; there is nothing to resume", rec->id,
             state);
  else if (err == TFS_ENOTRUNNING)
    snprintf(msg, msglen, "task %s is %s: nothing of it runs yet (cancel_managed_task stops it)",
             rec->id, state);
  else
    snprintf(msg, msglen, "could not send %s to task %s: %s", action, rec->id,
             tfs_strerror(err));
}

void mcp_tool_control(const mcp_req_t *r, json_t *args, json_t *task, json_t *params) {
  char msg[512], id[TFS_ID_MAX + 1], name[TFS_SIGNAME_MAX];
  tfs_control_t c;
  if (mcp_resolve_args(r->srv, args, id, msg, sizeof msg) ||
      control_args(args, &c, msg, sizeof msg)) {
    mcp_tool_error(r, "%s", msg);
    return;
  }
  const char *action = json_string_value(json_object_get(args, "action"));
  int err = tfs_control_request(mcp_store(r->srv), id, &c, mcp_who(r->srv));
  tfs_record_t rec;
  int lr = tfs_task_ended(mcp_store(r->srv), id, &rec);
  if (err || lr < 0) {
    if (lr < 0)
      snprintf(msg, sizeof msg, "cannot read task %s: %s", id, tfs_strerror(lr));
    else
      refused(&rec, action, err, msg, sizeof msg);
    tfs_record_free(&rec);
    mcp_tool_error(r, "%s", msg);
    return;
  }
  if (c.action == TFS_CONTROL_SIGNAL) {
    snprintf(msg, sizeof msg, "%s sent to the process tree of task %s", tfs_signal_name(c.sig, name),
             id);
    control_reply(r, &rec, action, msg);
    tfs_record_free(&rec);
    return;
  }
  tfs_record_free(&rec);
  control_wait_t *cw = calloc(1, sizeof *cw);
  if (!cw) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  cw->want = c.action == TFS_CONTROL_PAUSE ? TFS_PAUSED : TFS_RUNNING;
  snprintf(cw->action, sizeof cw->action, "%s", action);
  mcp_wait(r, id, CONTROL_WAIT_MS, TFS_WATCH_STATE, check_control, cw, free);
}
