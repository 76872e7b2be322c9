/* The MCP Tasks utility of 2025-11-25 (tasks/get, tasks/result,
 * tasks/list, tasks/cancel) over the durable tasks, and the Task object
 * both eras share (the 2026-07-28 extension is tasks_ext.c): an MCP task
 * id is the taskfs task id, so it survives a server restart.
 *
 * An MCP task stands for the tools/call that made it, so its status is
 * the call's: working while the taskfs task is queued or running;
 * completed once it has ended in any way the call answers with a result
 * (completed, failed, lost: the result's state says which; tasks/result
 * returns exactly the result the plain call gives, never isError for a
 * task that ran); cancelled when it was cancelled. failed is left for a
 * call that ends in a JSON-RPC error, which a start never does once its
 * task exists. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/internal.h"

#define TASKS_PAGE 50
#define POLL_INTERVAL_MS 1000
/* What the related-task _meta adds to a tasks/result answer. */
#define RELATED_TASK_BYTES 96

static const char related_task_key[] = "io.modelcontextprotocol/related-task";

/* A stop requested through tasks/cancel names itself so (MCP_TASKS_CANCEL
 * in the record's cancel.by): the requester cancelled the call, and the
 * MCP task reads cancelled, as the spec has it after tasks/cancel. A task
 * stopped any other way (cancel_managed_task, the CLI, another client)
 * ended the call with an answer: the MCP task is completed, and its result
 * says isError with the reason (SDK 1's callToolStream turns a cancelled
 * status into an error without the result). */
int mcp_task_cancelled_by_requester(const tfs_record_t *rec) {
  return rec->state == TFS_CANCELLED && rec->cancel_by && strstr(rec->cancel_by, MCP_TASKS_CANCEL);
}

const char *mcp_task_status(const tfs_record_t *rec) {
  switch (rec->state) {
  case TFS_QUEUED:
  case TFS_RUNNING:
  case TFS_PAUSED:
    return "working";
  case TFS_CANCELLED:
    return mcp_task_cancelled_by_requester(rec) ? "cancelled" : "completed";
  default:
    return "completed";
  }
}

int mcp_task_result_is_error(const tfs_record_t *rec) {
  return rec->state == TFS_CANCELLED && !mcp_task_cancelled_by_requester(rec);
}

json_t *mcp_task_object(unsigned era, const tfs_record_t *rec) {
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
  /* Tasks are kept until pruned: no ttl. The names are the era's. */
  int modern = era == MCP_ERA_MODERN;
  json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:n, s:i}", "taskId", rec->id, "status",
                        mcp_task_status(rec), "statusMessage", clean ? clean : "",
                        "createdAt", mcp_time_or_null(rec->created_ms), "lastUpdatedAt",
                        mcp_time_or_null(updated), modern ? "ttlMs" : "ttl",
                        modern ? "pollIntervalMs" : "pollInterval", POLL_INTERVAL_MS);
  free(clean);
  return o;
}

int mcp_task_param(const mcp_req_t *r, json_t *params, tfs_record_t *rec) {
  const char *tid = json_string_value(json_object_get(params, "taskId"));
  const char *see = r->era == MCP_ERA_MODERN ? "" : "; see tasks/list";
  if (!tid) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.taskId (a string) is required");
    return -1;
  }
  if (!tfs_id_valid(tid)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "Failed to retrieve task: params.taskId '%.64s' is not a taskfs task id%s", tid,
                    see);
    return -1;
  }
  /* The record as stored, a task whose supervisor died settled lost. */
  int err = tfs_task_ended(mcp_store(r->srv), tid, rec);
  if (err < 0)
    tfs_record_free(rec); /* what the look left: nothing for the caller */
  if (err == TFS_ENOTASK) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "Failed to retrieve task: no task '%s' in this server's store (%.300s): it "
                    "was made by a server on another store, or has been pruned%s",
                    tid, tfs_store_path(mcp_store(r->srv)), see);
    return -1;
  }
  if (err < 0) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "cannot read task %s: %s", tid, tfs_strerror(err));
    return -1;
  }
  return 0;
}

/* The same when only the id is needed: the task exists, id is filled. */
static int task_id_param(const mcp_req_t *r, json_t *params, char id[TFS_ID_MAX + 1]) {
  tfs_record_t rec;
  if (mcp_task_param(r, params, &rec))
    return -1;
  snprintf(id, TFS_ID_MAX + 1, "%s", rec.id);
  tfs_record_free(&rec);
  return 0;
}

/* The bounds the call that made a task asked for (maxBytes, tailLines)
 * are kept with the task, so that its result -- tasks/result, or the
 * 2026-07-28 tasks/get, from any server on the store -- keeps them as the
 * plain call does. A task made without them answers with the defaults. */
void mcp_task_bounds_save(mcp_server_t *srv, const char *id, const mcp_read_t *ra) {
  int fd = tfs_task_file_open(mcp_store(srv), id, TFS_FILE_ANSWER, O_WRONLY | O_CREAT | O_TRUNC,
                              0644);
  if (fd < 0)
    return; /* the defaults then: a larger answer, never a wrong one */
  json_t *b = json_pack("{s:I, s:I}", "maxBytes", (json_int_t)ra->max_bytes, "tailLines",
                        (json_int_t)ra->tail_lines);
  if (b)
    json_dumpfd(b, fd, JSON_COMPACT);
  json_decref(b);
  close(fd);
}

void mcp_task_bounds_load(mcp_server_t *srv, const char *id, mcp_read_t *ra) {
  int fd = tfs_task_file_open(mcp_store(srv), id, TFS_FILE_ANSWER, O_RDONLY, 0);
  if (fd < 0)
    return;
  json_t *b = json_loadfd(fd, 0, NULL);
  close(fd);
  json_int_t mb = json_integer_value(json_object_get(b, "maxBytes"));
  json_int_t tl = json_integer_value(json_object_get(b, "tailLines"));
  /* The schema's bounds (schema.c): a file changed by hand is not trusted
   * beyond them. */
  if (mb >= 1024 && mb <= 262144)
    ra->max_bytes = mb;
  if (tl >= 0 && tl <= 1000)
    ra->tail_lines = tl;
  json_decref(b);
}

void mcp_tasks_get(const mcp_req_t *r, json_t *params) {
  tfs_record_t rec;
  if (mcp_task_param(r, params, &rec))
    return;
  mcp_reply(r, mcp_task_object(r->era, &rec));
  tfs_record_free(&rec);
}

void mcp_tasks_result(const mcp_req_t *r, json_t *params) {
  char task_id[TFS_ID_MAX + 1];
  if (task_id_param(r, params, task_id))
    return;
  mcp_read_t *ra = mcp_read_new(r);
  if (!ra) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  ra->task_result = 1;
  ra->is_start = 1;
  mcp_task_bounds_load(r->srv, task_id, ra);
  ra->extra_bytes += RELATED_TASK_BYTES;
  mcp_read_park(r, task_id, ra, -1); /* no deadline: until terminal */
}

static int add_task(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  json_array_append_new(arg, mcp_task_object(MCP_ERA_LEGACY, rec));
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
                    task_id, mcp_task_status(&rec));
    tfs_record_free(&rec);
  }
}

json_t *mcp_task_payload(json_t *structured, const tfs_record_t *rec) {
  const char *task_id = rec->id;
  json_t *res = mcp_call_result(structured, mcp_task_result_is_error(rec));
  json_object_set_new(res, "_meta", json_pack("{s:{s:s}}", related_task_key, "taskId", task_id));
  return res;
}
