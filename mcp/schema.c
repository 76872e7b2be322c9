/* The tool descriptions: name, title, description, input and output
 * schemas, execution (task support) and annotations of the five tools, as
 * tools/list gives them in both revisions. Kept as one JSON text so that
 * it reads like what a client sees; parsed once per server. Hosts put
 * every definition into the model's context on every turn, so the whole
 * list stays under 8 KiB (tests/mcp/tools.test.mjs, bench/tools_list.sh):
 * a description says what the tool does and when, an argument's says what
 * it is in a line; the output schemas give the members' types that a
 * client checks and leave the meaning to the names and the descriptions
 * (unlisted members are allowed). The input schemas are also what
 * arguments are checked against (validate.c), so a bound is written here
 * once. A nullable field is {"anyOf": [{"type": T}, {"type": "null"}]},
 * the form strict validators and function-calling models take (a type
 * array is not portable). */
#include <stdio.h>
#include <string.h>

#include "mcp/internal.h"

static const char tools_json[] =
    "[{\"name\":\"start_managed_task\",\"title\":\"Start a durable task\",\"description\":\"Runs "
    "a command as a durable task under its own supervisor: it goes on if this server "
    "exits. Idempotent by taskKey: the same key, command and cwd return the existing "
    "task (rerun: true runs an ended one again). Waits up to waitMs for the end or "
    "an untilPattern line, then answers as read_managed_task; follow it with that.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"taskKey\":{\"type\":\"string\","
    "\"description\":\"Stable name of this work: 1-128 of A-Za-z0-9._:-\"},\"command\":{\"anyOf\":["
    "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1},{\"type\":\"string\","
    "\"minLength\":1}],\"description\":\"argv array, or a line for /bin/sh -c.\"},\"cwd\":{\"type\""
    ":\"string\",\"description\":\"Absolute directory; default: the client's first "
    "root, else the server's.\"},\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\""
    "string\"},\"description\":\"Extra variables (values are never stored).\"},\"rerun\":{\"type\":"
    "\"boolean\",\"description\":\"Run an ended task again.\"},\"restart\":{\"type\":\"string\","
    "\"enum\":[\"no\",\"on-failure\",\"always\"],\"description\":\"Restart policy (default "
    "no).\"},\"minUptimeMs\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":86400000,"
    "\"description\":\"Quicker exits are quick deaths (1000).\"},\"maxRestarts\":{\"type\":\"intege"
    "r\",\"minimum\":0,\"maximum\":1000000,\"description\":\"Restarts in all (no limit).\"},"
    "\"maxQuickRestarts\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000000,\"description\":\""
    "Quick deaths in a row allowed (5).\"},\"graceMs\":{\"type\":\"integer\",\"minimum\":0,"
    "\"maximum\":86400000,\"description\":\"SIGTERM to SIGKILL on stop (5000).\"},\"stderr\":{\"typ"
    "e\":\"string\",\"enum\":[\"merged\",\"split\"],\"description\":\"merged (default) "
    "or split.\"},\"timeoutMs\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":2678400000,"
    "\"description\":\"Per-run limit: then failed, exitCode 124.\"},\"restartOnTimeout\":{\"type\":"
    "\"boolean\",\"description\":\"Restart a timed-out worker too.\"},\"limits\":{\"type\":\"object"
    "\",\"additionalProperties\":{\"anyOf\":[{\"type\":\"string\",\"minLength\":1},"
    "{\"type\":\"integer\",\"minimum\":0}]},\"description\":\"mem cpu nofile nproc "
    "fsize core: '2G', '10m', 'none' or a number.\"},\"queue\":{\"type\":\"string\","
    "\"minLength\":1,\"maxLength\":64,\"description\":\"Queue to wait for a slot in.\"},"
    "\"after\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1},"
    "\"description\":\"Ids or keys to complete first.\"},\"delayMs\":{\"type\":\"integer\","
    "\"minimum\":0,\"maximum\":2592000000,\"description\":\"Start no sooner than this.\"},"
    "\"executor\":{\"type\":\"string\",\"enum\":[\"local\",\"slurm\"],\"description\":\"local "
    "(default) or slurm (srun).\"},\"slurmOptions\":{\"type\":\"array\",\"items\":{\"type\":\"strin"
    "g\"},\"maxItems\":64,\"description\":\"srun options (--partition=x).\"},\"waitMs\":{\"type\":\""
    "integer\",\"minimum\":0,\"maximum\":50000,\"description\":\"Wait for the end (default "
    "1000).\"},\"untilPattern\":{\"type\":\"string\",\"description\":\"PCRE2: answer "
    "at the first new line matching.\"},\"tailLines\":{\"type\":\"integer\",\"minimum\":0,"
    "\"maximum\":1000,\"description\":\"Tail lines (default 20).\"},\"maxBytes\":{\"type\":\"intege"
    "r\",\"minimum\":1024,\"maximum\":262144,\"description\":\"Bound of the whole answer "
    "(default 4096).\"}},\"required\":[\"taskKey\",\"command\"]},\"outputSchema\":{\"type\":\"objec"
    "t\",\"properties\":{\"taskId\":{\"type\":\"string\"},\"state\":{\"type\":\"string\"},"
    "\"important\":{\"type\":\"object\"},\"tail\":{\"type\":\"array\",\"items\":{\"type\":\"string\""
    "}},\"existing\":{\"type\":\"boolean\"}},\"required\":[\"taskId\",\"state\"]},\"execution\":{\""
    "taskSupport\":\"optional\"},\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":false,"
    "\"idempotentHint\":true,\"openWorldHint\":true}}"
    ",{\"name\":\"read_managed_task\",\"title\":\"Read (and wait for) a task\",\"description\":\"A "
    "task's state, exit and important lines, most needed first (important.lead: the "
    "first error, with the failing test or file and context), then the output tail,"
    " within maxBytes (omitted says what went). waitMs (at most 50 s) long-polls for "
    "the end or a new line matching untilPattern; call again to wait longer. sinceLine "
    "pages the output (go on from nextLine). cpuMs: CPU time of the tree; maxRssKb: "
    "peak RSS, KiB.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"taskKey\":{\"type\":\""
    "string\",\"description\":\"The key given at start.\"},\"taskId\":{\"type\":\"string\","
    "\"description\":\"Or the task id.\"},\"waitMs\":{\"type\":\"integer\",\"minimum\":0,"
    "\"maximum\":50000,\"description\":\"Wait for the end (default 0).\"},\"tailLines\":{\"type\":\""
    "integer\",\"minimum\":0,\"maximum\":1000,\"description\":\"Tail lines, or the "
    "page size (default 20).\"},\"sinceLine\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":90071"
    "99254740991,\"description\":\"Return the lines after this one instead of the tail.\"},"
    "\"untilPattern\":{\"type\":\"string\",\"description\":\"PCRE2: answer at the first "
    "new line matching.\"},\"maxBytes\":{\"type\":\"integer\",\"minimum\":1024,\"maximum\":262144,"
    "\"description\":\"Bound of the whole answer (default 4096).\"}}},\"outputSchema\":{\"type\":\""
    "object\",\"properties\":{\"taskId\":{\"type\":\"string\"},\"state\":{\"type\":\"string\"},"
    "\"important\":{\"type\":\"object\"},\"tail\":{\"type\":\"array\",\"items\":{\"type\":\"string\""
    "}}},\"required\":[\"taskId\",\"state\"]},\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}"
    ",{\"name\":\"list_managed_tasks\",\"title\":\"List durable tasks\",\"description\":\"Lists "
    "the store's tasks, newest first, whoever started them. Filter by state; page with "
    "cursor = nextCursor (a filtered page may come back short).\",\"inputSchema\":{\"type\":\"objec"
    "t\",\"properties\":{\"state\":{\"type\":\"string\",\"enum\":[\"queued\",\"running\","
    "\"completed\",\"failed\",\"cancelled\",\"lost\",\"paused\"],\"description\":\"Only "
    "tasks in this state.\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500,"
    "\"description\":\"Page size (default 50).\"},\"cursor\":{\"type\":\"string\",\"description\":\""
    "nextCursor of the page before.\"}}},\"outputSchema\":{\"type\":\"object\",\"properties\":{\"ta"
    "sks\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},\"nextCursor\":{\"type\":\"string\""
    "},\"total\":{\"type\":\"integer\"}},\"required\":[\"tasks\"]},\"execution\":{\"taskSupport\":\""
    "forbidden\"},\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}"
    ",{\"name\":\"cancel_managed_task\",\"title\":\"Stop a durable task\",\"description\":\"Stops "
    "a task's whole process tree (SIGTERM, SIGKILL after its grace), waits briefly "
    "and returns its state. A task that had ended is no error (alreadyEnded: true).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"taskKey\":{\"type\":\"string\","
    "\"description\":\"The key given at start.\"},\"taskId\":{\"type\":\"string\",\"description\":\""
    "Or the task id.\"}}},\"outputSchema\":{\"type\":\"object\",\"properties\":{\"taskId\":{\"type\""
    ":\"string\"},\"state\":{\"type\":\"string\"},\"alreadyEnded\":{\"type\":\"boolean\"}},"
    "\"required\":[\"taskId\",\"state\"]},\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
    "\"openWorldHint\":false}}"
    ",{\"name\":\"control_managed_task\",\"title\":\"Pause, resume or signal a task\","
    "\"description\":\"pause stops a running task's whole tree (SIGSTOP; it keeps its "
    "queue slot unless freeSlot), resume continues it, signal sends one signal to the "
    "tree; cancel_managed_task stops a task.\",\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"taskKey\":{\"type\":\"string\",\"description\":\"The key given "
    "at start.\"},\"taskId\":{\"type\":\"string\",\"description\":\"Or the task id.\"},"
    "\"action\":{\"type\":\"string\",\"enum\":[\"pause\",\"resume\",\"signal\"],\"description\":\"W"
    "hat to do.\"},\"signal\":{\"type\":\"string\",\"description\":\"With signal: a "
    "name or number (TERM, USR1, 10).\"},\"freeSlot\":{\"type\":\"boolean\",\"description\":\"With "
    "pause: free its queue slot while paused.\"}},\"required\":[\"action\"]},\"outputSchema\":{\"ty"
    "pe\":\"object\",\"properties\":{\"taskId\":{\"type\":\"string\"},\"state\":{\"type\":\"string\""
    "}},\"required\":[\"taskId\",\"state\"]},\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,"
    "\"openWorldHint\":false}}]";

json_t *mcp_schema_tools(void) {
  json_error_t e;
  json_t *tools = json_loads(tools_json, 0, &e);
  if (!tools)
    fprintf(stderr, "taskfs mcp: internal error in the tool list: %s (column %d)\n", e.text,
            e.column);
  return tools;
}

/* 2026-07-28 lists the same tools: execution.taskSupport tells a client
 * that declared the tasks extension which calls may become tasks. */
json_t *mcp_schema_modern(const json_t *tools) {
  return tools ? json_deep_copy(tools) : NULL;
}

json_t *mcp_tool_input_schema(mcp_server_t *srv, const char *name) {
  size_t i;
  json_t *t;
  json_array_foreach(srv->tools, i, t) {
    if (!strcmp(json_string_value(json_object_get(t, "name")), name))
      return json_object_get(t, "inputSchema");
  }
  return NULL;
}

void mcp_tools_list(const mcp_req_t *r, json_t *params) {
  json_t *list = r->era == MCP_ERA_MODERN ? r->srv->tools_modern : r->srv->tools;
  json_t *tools = list ? json_deep_copy(list) : json_array();
  mcp_reply(r, json_pack("{s:o}", "tools", tools));
}
