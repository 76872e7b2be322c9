/* tools/call: which tool a call names, whether it may run task-augmented,
 * and the argument helpers the tools share. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "mcp/internal.h"

int mcp_arg_int(json_t *args, const char *name, int64_t def, int64_t min, int64_t max, int64_t *out,
                char *msg, size_t msglen) {
  json_t *v = json_object_get(args, name);
  *out = def;
  if (!v || json_is_null(v))
    return 0;
  if (json_is_real(v) && json_real_value(v) == (double)(int64_t)json_real_value(v))
    *out = (int64_t)json_real_value(v);
  else if (json_is_integer(v))
    *out = json_integer_value(v);
  else {
    snprintf(msg, msglen, "%s must be an integer", name);
    return -1;
  }
  if (*out < min || *out > max) {
    snprintf(msg, msglen, "%s must be between %lld and %lld (got %lld)", name, (long long)min,
             (long long)max, (long long)*out);
    return -1;
  }
  return 0;
}

int mcp_resolve_args(mcp_server_t *srv, json_t *args, char id[TFS_ID_MAX + 1], char *msg,
                     size_t msglen) {
  json_t *jid = json_object_get(args, "taskId");
  json_t *jkey = json_object_get(args, "taskKey");
  if ((jid && !json_is_string(jid)) || (jkey && !json_is_string(jkey))) {
    snprintf(msg, msglen, "taskId and taskKey must be strings");
    return TFS_EBADID;
  }
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

/* Runs the tool name with args (an object) and params.task (or NULL). */
static void call_tool(const mcp_req_t *r, const char *name, json_t *args, json_t *task) {
  for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
    if (strcmp(name, tools[i].name))
      continue;
    if (task && !tools[i].task_support)
      mcp_reply_error(r, MCP_RPC_METHOD_NOT_FOUND,
                      "tool %s does not support task-augmented execution (execution.taskSupport "
                      "is forbidden); call it without params.task",
                      name);
    else
      tools[i].fn(r, args, task);
    return;
  }
  mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                  "unknown tool '%s'; the tools are start_managed_task, read_managed_task, "
                  "list_managed_tasks, cancel_managed_task",
                  name);
}

void mcp_tools_call(const mcp_req_t *r, json_t *params) {
  const char *name = json_string_value(json_object_get(params, "name"));
  json_t *args = json_object_get(params, "arguments");
  json_t *task = json_object_get(params, "task");
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
  call_tool(r, name, args, task);
  json_decref(empty);
}
