/* Prompts and completion: one prompt, diagnose_task, which hands the
 * model a task's state, important lines and tail (the read answer) with
 * the question of what happened; and completion of task ids and keys for
 * its argument and for the resource templates' {taskId}. Both are
 * declared (prompts, completions) in both eras, so what the capabilities
 * say and what is answered agree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define PROMPT_NAME "diagnose_task"
#define COMPLETE_MAX 100 /* values in one completion (the spec's cap) */
#define COMPLETE_SCAN 5000

void mcp_prompts_list(const mcp_req_t *r, json_t *params) {
  mcp_reply(r, json_pack("{s:[{s:s, s:s, s:s, s:[{s:s, s:s, s:b}]}]}", "prompts", "name",
                         PROMPT_NAME, "title", "Diagnose a task", "description",
                         "Explain what a task did and, when it failed, why and what to change, "
                         "from its state, the important lines of its whole output and its tail",
                         "arguments", "name", "task", "description",
                         "The task id or key (completion offers the store's)", "required", 1));
}

void mcp_prompts_get(const mcp_req_t *r, json_t *params) {
  const char *name = json_string_value(json_object_get(params, "name"));
  if (!name || strcmp(name, PROMPT_NAME)) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "unknown prompt '%.100s'; the prompts are: " PROMPT_NAME " (see prompts/list)",
                    name ? name : "(params.name missing)");
    return;
  }
  const char *task =
      json_string_value(json_object_get(json_object_get(params, "arguments"), "task"));
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  if (!task) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "prompt " PROMPT_NAME " needs params.arguments.task (a task id or key)");
    return;
  }
  int err = tfs_task_resolve(mcp_store(r->srv), task, id);
  if (!err && (err = tfs_task_ended(mcp_store(r->srv), id, &rec)) < 0)
    tfs_record_free(&rec);
  if (err < 0) {
    mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                    "params.arguments.task '%.100s' names no task in this store (an id or key; "
                    "list_managed_tasks shows them)",
                    task);
    return;
  }
  mcp_read_t *ra = mcp_read_new(r);
  char *text = NULL;
  json_t *o = ra ? mcp_output_build(r->srv, &rec, ra, 0, 0, &text) : NULL;
  mcp_read_free(ra);
  json_decref(o);
  char *msg = NULL;
  int n = text ? asprintf(&msg,
                          "Here is the taskfs task %s as read_managed_task reports it (state, "
                          "exit code, the important lines of its whole output with line numbers, "
                          "and the last lines):\n\n%s\n\nExplain what the task did. If it failed "
                          "or was lost, say why from the important lines and what to change; "
                          "read_managed_task with sinceLine pages through the full output.",
                          id, text)
               : -1;
  free(text);
  tfs_record_free(&rec);
  if (n < 0) {
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  mcp_reply(r, json_pack("{s:s, s:[{s:s, s:{s:s, s:s}}]}", "description", "Diagnose a task",
                         "messages", "role", "user", "content", "type", "text", "text", msg));
  free(msg);
}

/* Ids (and, for the prompt, keys) that start with what was typed. */
typedef struct {
  const char *prefix;
  size_t plen;
  int keys;
  json_t *values;
  size_t total;
} complete_t;

static int complete_one(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  complete_t *c = arg;
  const char *cand[2] = {rec->id, c->keys && rec->key[0] ? rec->key : NULL};
  for (int i = 0; i < 2; i++)
    if (cand[i] && !strncmp(cand[i], c->prefix, c->plen)) {
      if (json_array_size(c->values) < COMPLETE_MAX)
        json_array_append_new(c->values, json_string(cand[i]));
      c->total++;
    }
  return 0;
}

/* Which argument of which reference can be completed: the prompt's task,
 * the templates' taskId. Replies -32602 for anything else and returns -1. */
static int complete_target(const mcp_req_t *r, json_t *ref, const char *arg, int *keys) {
  const char *type = json_string_value(json_object_get(ref, "type"));
  const char *name = json_string_value(json_object_get(ref, "name"));
  const char *uri = json_string_value(json_object_get(ref, "uri"));
  *keys = 0;
  if (type && !strcmp(type, "ref/prompt") && name && !strcmp(name, PROMPT_NAME) && arg &&
      !strcmp(arg, "task")) {
    *keys = 1;
    return 0;
  }
  if (type && !strcmp(type, "ref/resource") && uri &&
      !strncmp(uri, "taskfs://tasks/{taskId}/", 24) && arg && !strcmp(arg, "taskId"))
    return 0;
  mcp_reply_error(r, MCP_RPC_INVALID_PARAMS,
                  "nothing to complete for %.40s %.100s argument %.64s: this server completes "
                  "the task argument of prompt " PROMPT_NAME " and {taskId} of the "
                  "taskfs://tasks/{taskId}/... templates",
                  type ? type : "(params.ref.type missing)", name ? name : (uri ? uri : ""),
                  arg ? arg : "(params.argument.name missing)");
  return -1;
}

void mcp_completion(const mcp_req_t *r, json_t *params) {
  json_t *argument = json_object_get(params, "argument");
  const char *arg = json_string_value(json_object_get(argument, "name"));
  const char *value = json_string_value(json_object_get(argument, "value"));
  int keys;
  if (complete_target(r, json_object_get(params, "ref"), arg, &keys))
    return;
  complete_t c = {.prefix = value ? value : "", .keys = keys, .values = json_array()};
  c.plen = strlen(c.prefix);
  tfs_list_opts_t o = {.newest_first = 1, .scan_max = COMPLETE_SCAN};
  tfs_list_stats_t st;
  if (tfs_task_list_opts(mcp_store(r->srv), &o, complete_one, &c, &st))
    memset(&st, 0, sizeof st);
  mcp_reply(r, json_pack("{s:{s:o, s:I, s:b}}", "completion", "values", c.values, "total",
                         (json_int_t)c.total, "hasMore", c.total > COMPLETE_MAX || st.left > 0));
}
