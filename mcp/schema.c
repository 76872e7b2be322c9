/* The tool descriptions: name, title, description, input and output
 * schemas, execution (task support) and annotations of the four tools, as
 * tools/list gives them. Kept as one JSON text so that it reads like what
 * a client sees; parsed once per server. */
#include <stdio.h>

#include "mcp/internal.h"

/* The state every tool returns; read adds output, start and cancel add
 * their own flags. Unlisted properties are allowed. */
#define STATE_PROPS                                                                                \
  "\"taskId\":{\"type\":\"string\"},"                                                              \
  "\"taskKey\":{\"type\":[\"string\",\"null\"]},"                                                  \
  "\"state\":{\"type\":\"string\",\"enum\":[\"queued\",\"running\",\"completed\",\"failed\","      \
  "\"cancelled\",\"lost\"]},"                                                                      \
  "\"command\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                              \
  "\"cwd\":{\"type\":[\"string\",\"null\"]},"                                                      \
  "\"exitCode\":{\"type\":[\"integer\",\"null\"]},"                                                \
  "\"signal\":{\"type\":[\"integer\",\"null\"]},"                                                  \
  "\"reason\":{\"type\":[\"string\",\"null\"]},"                                                   \
  "\"createdAt\":{\"type\":[\"string\",\"null\"]},"                                                \
  "\"startedAt\":{\"type\":[\"string\",\"null\"]},"                                                \
  "\"endedAt\":{\"type\":[\"string\",\"null\"]},"                                                  \
  "\"durationMs\":{\"type\":[\"integer\",\"null\"]},"                                              \
  "\"lines\":{\"type\":\"integer\"},"                                                              \
  "\"bytes\":{\"type\":\"integer\"},"                                                              \
  "\"restarts\":{\"type\":\"integer\"}"

#define OUTPUT_PROPS                                                                               \
  "\"important\":{\"type\":\"object\",\"properties\":{"                                            \
  "\"total\":{\"type\":\"integer\"},\"lead\":{\"type\":\"integer\"},"                              \
  "\"first\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"                  \
  "\"line\":{\"type\":\"integer\"},\"kind\":{\"type\":\"string\"},\"text\":{\"type\":\"string\"}}" \
  "}},"                                                                                            \
  "\"last\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"                   \
  "\"line\":{\"type\":\"integer\"},\"kind\":{\"type\":\"string\"},\"text\":{\"type\":\"string\"}}" \
  "}}}},"                                                                                          \
  "\"tail\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                                 \
  "\"tailFrom\":{\"type\":[\"integer\",\"null\"]},"                                                \
  "\"nextLine\":{\"type\":\"integer\"},"                                                           \
  "\"match\":{\"type\":\"object\",\"properties\":{\"line\":{\"type\":\"integer\"},"                \
  "\"text\":{\"type\":\"string\"}}},"                                                              \
  "\"timedOut\":{\"type\":\"boolean\"},"                                                           \
  "\"waitedMs\":{\"type\":\"integer\"},"                                                           \
  "\"omitted\":{\"type\":\"object\"},"                                                             \
  "\"hint\":{\"type\":\"string\"}"

#define TASK_REF_PROPS                                                                             \
  "\"taskKey\":{\"type\":\"string\",\"description\":\"The key given to start_managed_task.\"},"    \
  "\"taskId\":{\"type\":\"string\",\"description\":\"The task id (from start or list).\"}"

static const char tools_json[] =
    "["
    "{\"name\":\"start_managed_task\",\"title\":\"Start a durable task\","
    "\"description\":\"Starts a command as a durable task under its own supervisor: it keeps "
    "running, and stays visible, if this server exits or is restarted. Idempotent by taskKey: "
    "calling again with the same key and the same command and cwd returns the existing task and "
    "runs nothing; a task that has ended is run again only with restart: true; a key already used "
    "for a different command or cwd is rejected. command is an array (argv, no shell) or a "
    "string, which runs as [\\\"/bin/sh\\\", \\\"-c\\\", string]. env values go to the process "
    "only and are never written to disk. Waits up to waitMs (default 1000, at most 50000) for the "
    "task to end (or, with untilPattern, for a matching output line), then returns its state, "
    "important lines and a short output tail; follow it with read_managed_task.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"taskKey\":{\"type\":\"string\",\"description\":\"Stable name for this piece of work: "
    "1-128 characters of A-Z a-z 0-9 . _ : -\"},"
    "\"command\":{\"anyOf\":[{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1},"
    "{\"type\":\"string\",\"minLength\":1}],\"description\":\"argv array, or a shell command "
    "line run with /bin/sh -c\"},"
    "\"cwd\":{\"type\":\"string\",\"description\":\"Absolute working directory (default: the "
    "server's)\"},"
    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
    "\"description\":\"Extra environment variables, NAME: VALUE\"},"
    "\"restart\":{\"type\":\"boolean\",\"description\":\"Run an ended task with this key "
    "again\"},"
    "\"stderr\":{\"enum\":[\"merged\",\"split\"],\"description\":\"merged (default): stdout "
    "and stderr in one transcript in the order written; split: stderr on its own pipe, its "
    "lines listed in stderr-lines (lines written close together to both may then be "
    "reordered)\"},"
    "\"waitMs\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":50000},"
    "\"untilPattern\":{\"type\":\"string\",\"description\":\"POSIX extended regex: answer "
    "as soon as an output line matches (e.g. a dev server's 'listening on'); matched against "
    "the first 4 KiB of each line; back-references (\\\\1..\\\\9) are refused\"}},"
    "\"required\":[\"taskKey\",\"command\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{" STATE_PROPS "," OUTPUT_PROPS ","
    "\"existing\":{\"type\":\"boolean\"},\"started\":{\"type\":\"boolean\"}},"
    "\"required\":[\"taskId\",\"state\"]},"
    "\"execution\":{\"taskSupport\":\"optional\"},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":true,"
    "\"openWorldHint\":true}},"

    "{\"name\":\"read_managed_task\",\"title\":\"Read (and wait for) a task\","
    "\"description\":\"Returns a task's state, exit code, duration, line and byte counts, the "
    "important lines of its whole output with line numbers, chosen most needed first (listed "
    "in line order): the first error "
    "(important.lead names its line) with the lines the tool printed around it as context (kind "
    "'context': the traceback's last frame, Expected/Received, a caret's message), then other "
    "errors, failures, warnings and summaries, so an early error survives any amount of later "
    "noise; and a short tail. "
    "The response stays small (about 4 KiB, maxBytes) whatever the output size: long lines are "
    "cut and marked, the tail is trimmed to fit. Long-poll: with waitMs it returns as soon as the "
    "task ends or a NEW output line matches untilPattern (POSIX extended regex, e.g. "
    "'listening on'), else after waitMs; waitMs is capped at 50000 (50 s, below common client "
    "timeouts): call again to keep waiting. sinceLine N returns the lines after line N instead "
    "of the tail (a page; continue with sinceLine = nextLine).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{" TASK_REF_PROPS ","
    "\"waitMs\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":50000,\"description\":\"Wait "
    "up to this long (default 0: answer at once)\"},"
    "\"tailLines\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000,\"description\":\"Lines "
    "of tail (or page size with sinceLine), default 20\"},"
    "\"sinceLine\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Return the lines after "
    "this line number (0: from the start)\"},"
    "\"untilPattern\":{\"type\":\"string\",\"description\":\"POSIX extended regex; return when "
    "a new line matches (only the first 4 KiB of each line is matched; back-references "
    "\\\\1..\\\\9 are refused)\"},"
    "\"maxBytes\":{\"type\":\"integer\",\"minimum\":1024,\"maximum\":262144,\"description\":"
    "\"Size bound of the response, default 4096\"}}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{" STATE_PROPS "," OUTPUT_PROPS "},"
    "\"required\":[\"taskId\",\"state\"]},"
    "\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"

    "{\"name\":\"list_managed_tasks\",\"title\":\"List durable tasks\","
    "\"description\":\"Lists every task in the store, whichever instance or program started it, "
    "newest first. Paginated: pass nextCursor back as cursor. state filters (queued, running, "
    "completed, failed, cancelled, lost); a filtered call examines at most 5,000 tasks, so it may "
    "return fewer than limit with a nextCursor to go on.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"state\":{\"type\":\"string\",\"enum\":[\"queued\",\"running\",\"completed\",\"failed\","
    "\"cancelled\",\"lost\"]},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500,\"description\":\"Page size, "
    "default 50\"},"
    "\"cursor\":{\"type\":\"string\"}}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"tasks\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" STATE_PROPS
    "}}},"
    "\"nextCursor\":{\"type\":\"string\"},\"total\":{\"type\":\"integer\"},"
    "\"hint\":{\"type\":\"string\"}},"
    "\"required\":[\"tasks\"]},"
    "\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"

    "{\"name\":\"cancel_managed_task\",\"title\":\"Stop a durable task\","
    "\"description\":\"Records a stop request for a task (its supervisor stops the whole process "
    "tree: SIGTERM, then SIGKILL after the grace period) and waits briefly for the outcome; "
    "returns the resulting state. A task that had already ended is not an error: the result says "
    "alreadyEnded: true and nothing is stopped.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{" TASK_REF_PROPS "}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{" STATE_PROPS ","
    "\"alreadyEnded\":{\"type\":\"boolean\"},\"stopped\":{\"type\":\"boolean\"},"
    "\"message\":{\"type\":\"string\"}},"
    "\"required\":[\"taskId\",\"state\"]},"
    "\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
    "\"openWorldHint\":false}}"
    "]";

json_t *mcp_schema_tools(void) {
  json_error_t e;
  json_t *tools = json_loads(tools_json, 0, &e);
  if (!tools)
    fprintf(stderr, "taskfs mcp: internal error in the tool list: %s (column %d)\n", e.text,
            e.column);
  return tools;
}

void mcp_tools_list(const mcp_req_t *r, json_t *params) {
  json_t *tools = r->srv->tools ? json_deep_copy(r->srv->tools) : json_array();
  mcp_reply(r, json_pack("{s:o}", "tools", tools));
}
