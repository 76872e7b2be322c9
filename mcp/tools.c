/* tools/call: which tool a call names, its arguments checked against the
 * tool's inputSchema (validate.c), whether it may run task-augmented, and
 * the task reference the tools share. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "mcp/internal.h"

int mcp_resolve_args(mcp_server_t *srv, json_t *args, char id[TFS_ID_MAX + 1], char *msg,
                     size_t msglen) {
  /* Types were checked against the schema; null means not given. */
  json_t *jid =
      json_is_string(json_object_get(args, "taskId")) ? json_object_get(args, "taskId") : NULL;
  json_t *jkey =
      json_is_string(json_object_get(args, "taskKey")) ? json_object_get(args, "taskKey") : NULL;
  if (!jid && !jkey) {
    snprintf(msg, msglen,
             "give taskId or taskKey (list_managed_tasks shows the tasks in the store)");
    return TFS_EBADID;
  }
  tfs_store_t *store = mcp_store(srv);
  if (jid) {
    const char *s = json_string_value(jid);
    if (!tfs_id_valid(s)) {
      snprintf(msg, msglen,
               "taskId '%.64s' is not a task id (ids look like mi4x7k2p-3fz9qa); "
               "use list_managed_tasks to find it",
               s);
      return TFS_EBADID;
    }
    /* Only whether the task exists is asked here; the tool reads the
     * record itself (and says what is wrong with one it cannot read). */
    struct stat st;
    if (tfs_task_stat(store, s, &st) == TFS_ENOTASK) {
      snprintf(msg, msglen, "no task with id %s in this store; use list_managed_tasks", s);
      return TFS_ENOTASK;
    }
    snprintf(id, TFS_ID_MAX + 1, "%s", s);
    return 0;
  }
  const char *key = json_string_value(jkey);
  if (!tfs_key_valid(key)) {
    snprintf(msg, msglen,
             "taskKey '%.64s' is not valid: use 1-128 characters of A-Z a-z 0-9 . _ : -", key);
    return TFS_EBADID;
  }
  int err = tfs_key_lookup(store, key, id);
  if (err == TFS_ENOTASK)
    snprintf(msg, msglen,
             "no task has the key '%s'; start it with start_managed_task or see "
             "list_managed_tasks",
             key);
  else if (err)
    snprintf(msg, msglen, "looking up key '%s' failed: %s", key, tfs_strerror(err));
  return err;
}

static const struct {
  const char *name;
  mcp_tool_fn fn;
  int task_support; /* execution.taskSupport is "optional" (else "forbidden") */
} tools[] = {
    {"start_managed_task", mcp_tool_start, 1},
    {"read_managed_task", mcp_tool_read, 0},
    {"list_managed_tasks", mcp_tool_list, 0},
    {"cancel_managed_task", mcp_tool_cancel, 0},
};

/* Runs the tool name with args (an object) and the legacy params.task
 * (or NULL), once the arguments fit the tool's schema: a call that does
 * not gets the isError result that says what to fix, task-augmented or
 * not (no task is made for it). */
static void call_tool(const mcp_req_t *r, json_t *params, const char *name, json_t *args,
                      json_t *task) {
  for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
    if (strcmp(name, tools[i].name))
      continue;
    if (task && !tools[i].task_support) {
      mcp_reply_error(r, MCP_RPC_METHOD_NOT_FOUND,
                      "tool %s does not support task-augmented execution (execution.taskSupport "
                      "is forbidden); call it without params.task",
                      name);
      return;
    }
    char msg[600];
    if (mcp_validate_args(mcp_tool_input_schema(r->srv, name), args, msg, sizeof msg)) {
      mcp_tool_error(r, "invalid arguments for %s: %s (see its inputSchema in tools/list)", name,
                     msg);
      return;
    }
    tools[i].fn(r, args, task, params);
    return;
  }
  mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                  "unknown tool '%.100s'; the tools are start_managed_task, read_managed_task, "
                  "list_managed_tasks, cancel_managed_task",
                  name);
}

void mcp_tools_call(const mcp_req_t *r, json_t *params) {
  const char *name = json_string_value(json_object_get(params, "name"));
  json_t *args = json_object_get(params, "arguments");
  /* params.task is the legacy Tasks utility; in 2026-07-28 the server
   * decides (tool_start.c), from the request's capabilities. */
  json_t *task = r->era == MCP_ERA_LEGACY ? json_object_get(params, "task") : NULL;
  if (!name) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "tools/call needs params.name (see tools/list)");
    return;
  }
  if (args && !json_is_null(args) && !json_is_object(args)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.arguments must be an object");
    return;
  }
  if (task && !json_is_null(task) && !json_is_object(task)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS, "params.task must be an object");
    return;
  }
  if (task && json_is_null(task))
    task = NULL;
  json_t *empty = NULL;
  if (!args || json_is_null(args))
    args = empty = json_object();
  call_tool(r, params, name, args, task);
  json_decref(empty);
}
