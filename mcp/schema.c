/* The tool descriptions: name, title, description, input and output
 * schemas, execution (task support) and annotations of the four tools, as
 * tools/list gives them. Kept as one JSON text so that it reads like what
 * a client sees (the pieces three tools share are macros); parsed once per
 * server. The input schemas are also what arguments are checked against
 * (validate.c), so a bound is written here once. A nullable field is
 * {"anyOf": [{"type": T}, {"type": "null"}]}, the form strict validators
 * and function-calling models take (a type array is not portable). The
 * modern list (2026-07-28) leaves out execution, which that revision does
 * not have. */
#include <stdio.h>
#include <string.h>

#include "mcp/internal.h"

/* The state every tool returns; read and start add the output, start and
 * cancel their own flags. Unlisted properties are allowed. */
#define STATE_PROPS                                                                                \
  "\"taskId\":{\"type\":\"string\",\"description\":\"The task id: stable across server "           \
  "restarts and the same for every instance; also the MCP task id.\"},\"taskKey\":{"               \
  "\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],\"description\":\"The idempotency "       \
  "key the task was started with; null when it has none.\"},\"state\":{\"type\":\"string\","       \
  "\"enum\":[\"queued\",\"running\",\"completed\",\"failed\",\"cancelled\",\"lost\","      \
  "\"paused\"],\"description\":\"queued (being started, or waiting for its queue, a "            \
  "dependency or its start time: reason says which), running, completed (exit "                    \
  "0), failed (a non-zero exit, a signal, or it could not start), cancelled (stopped "             \
  "on request), lost (its supervisor died), paused (stopped by control_managed_task "           \
  "until resumed).\"},\"command\":{\"type\":\"array\",\"items\":{"        \
  "\"type\":\"string\"},\"description\":\"The argv the task runs (a string command "               \
  "is [\\\"/bin/sh\\\", \\\"-c\\\", command]); long arguments are shortened with '…' "           \
  "when the answer must fit maxBytes (see omitted).\"},\"cwd\":{\"anyOf\":[{\"type\":\"string\"}," \
  "{\"type\":\"null\"}],\"description\":\"The working directory the task runs in (shortened "      \
  "with '…' only to fit maxBytes).\"},\"exitCode\":{\"anyOf\":[{\"type\":\"integer\"},"          \
  "{\"type\":\"null\"}],\"description\":\"The worker's exit status once it exited; "               \
  "null while it runs or when a signal ended "                                                     \
  "it.\"},\"signal\":{\"anyOf\":[{\"type\":\"integer\"},"                                          \
  "{\"type\":\"null\"}],\"description\":\"The signal number that ended the worker; "               \
  "null otherwise.\"},\"reason\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],"          \
  "\"description\":\"Why the task ended, in words (e.g. 'exited with status 3', 'cancelled "       \
  "by mcp pid 12'); null while it runs.\"},\"createdAt\":{\"anyOf\":[{\"type\":\"string\"},"       \
  "{\"type\":\"null\"}],\"description\":\"When the task was created (RFC 3339).\"},"               \
  "\"startedAt\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],\"description\":\"When "   \
  "its worker started (RFC 3339); null before.\"},\"endedAt\":{\"anyOf\":[{\"type\":\"string\"},"  \
  "{\"type\":\"null\"}],\"description\":\"When it ended (RFC 3339); null while it runs.\"},"       \
  "\"durationMs\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}],\"description\":\"Run "  \
  "time so far, or in all once ended; null before it started.\"},\"lines\":{\"type\":\"integer\"," \
  "\"description\":\"Lines of output so far (a final line without newline counts).\"},"            \
  "\"bytes\":{\"type\":\"integer\",\"description\":\"Bytes of output so far.\"},\"restarts\":{"    \
  "\"type\":\"integer\",\"description\":\"Times the worker was started again under "               \
  "the restart policy.\"}," USAGE_PROPS

/* What a task used: in every answer and list entry. */
#define USAGE_PROPS                                                                                \
  "\"cpuMs\":{\"type\":\"integer\",\"description\":\"CPU time (user + system) of the "              \
  "task's whole process tree in ms, every run together: each process counts once it "              \
  "has ended (taskfs show has user and system apart, per run).\"},\"maxRssKb\":{\"type\":"          \
  "\"integer\",\"description\":\"The largest peak resident memory of one process of "              \
  "the task, in KiB.\"}"

#define OUTPUT_PROPS                                                                               \
  "\"important\":{\"type\":\"object\",\"description\":\"The important lines of the "               \
  "whole output (errors, warnings, failures, summaries), so an early error survives "              \
  "any amount of later "                                                                           \
  "output.\",\"properties\":{\"total\":{\"type\":\"integer\",\"description\":\"Important "         \
  "lines in the whole output.\"},\"lead\":{\"type\":\"integer\",\"description\":"               \
  "\"The line number of the first error, shown with the lines the tool printed around it "      \
  "(kind context); absent when there is none.\"},\"first\":{\"type\":\"array\",\"items\":{\"type\":\"object\","    \
  "\"properties\":{\"line\":{\"type\":\"integer\",\"description\":\"Its line number "              \
  "(1-based).\"},\"kind\":{\"type\":\"string\",\"description\":\"What it is: error,"               \
  " warning, failure, summary, context ...\"},\"text\":{\"type\":\"string\",\"description\":\"The "        \
  "line, cut to 240 bytes.\"}}},\"description\":\"The first few (up to 5); empty when "            \
  "paging with sinceLine.\"},\"last\":{\"type\":\"array\",\"items\":{\"type\":\"object\","         \
  "\"properties\":{\"line\":{\"type\":\"integer\",\"description\":\"Its line number "              \
  "(1-based).\"},\"kind\":{\"type\":\"string\",\"description\":\"What it is: error,"               \
  " warning, failure, summary, context ...\"},\"text\":{\"type\":\"string\",\"description\":\"The "        \
  "line, cut to 240 bytes.\"}}},\"description\":\"The last few (up to 5); empty when "             \
  "paging with sinceLine.\"}}},\"tail\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"      \
  "\"description\":\"The last output lines (with sinceLine: the page after it), each "             \
  "cut to 240 bytes, invalid UTF-8 as U+FFFD.\"},\"tailFrom\":{\"anyOf\":[{\"type\":\"integer\"}," \
  "{\"type\":\"null\"}],\"description\":\"The line number of tail[0]; null when the "              \
  "tail is empty.\"},\"nextLine\":{\"type\":\"integer\",\"description\":\"The last "               \
  "line number this answer covers: pass it as sinceLine to read "                                  \
  "on.\"},\"match\":{\"type\":\"object\","                                                         \
  "\"description\":\"The first new line that matched untilPattern; absent when none "              \
  "did.\",\"properties\":{\"line\":{\"type\":\"integer\",\"description\":\"Its line "              \
  "number.\"},\"text\":{\"type\":\"string\",\"description\":\"The line, cut to 240 "               \
  "bytes.\"}}},\"timedOut\":{\"type\":\"boolean\",\"description\":\"True when the wait "           \
  "ended at waitMs (or at the server's end) rather than at the task's end or a match.\"},"         \
  "\"waitedMs\":{\"type\":\"integer\",\"description\":\"How long this call waited.\"},"            \
  "\"omitted\":{\"type\":\"object\",\"description\":\"Present when the maxBytes bound "            \
  "dropped or shortened parts of the "                                                             \
  "answer.\",\"properties\":{\"tailLines\":{\"type\":\"integer\","                                 \
  "\"description\":\"Tail lines dropped (page on with sinceLine).\"},\"importantLines\":{"         \
  "\"type\":\"integer\",\"description\":\"Important lines dropped.\"},\"shortened\":{"             \
  "\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Fields shortened "         \
  "with '…' (command, cwd, reason, match, tail, important).\"},\"fields\":{\"type\":"  \
  "\"integer\",\"description\":\"Members left out at the smallest bounds: timestamps and "  \
  "figures first.\"}}},\"hint\":{\"type\":\"string\",\"description\":\"What to do next,"               \
  " in words.\"}"

/* What untilPattern is, for both tools that take it (pattern.c). */
#define UNTIL_SYNTAX                                                                               \
  "PCRE2 syntax: a POSIX extended regex works as written, and so do \\\\d, \\\\b, (?i) and "      \
  "back-references; GNU's \\\\< \\\\> are refused (write \\\\b). At most 1 KiB, matched against "    \
  "the first 4 KiB of each line; a pattern that backtracks past the match limits is an error "     \
  "naming the limit."

/* start_managed_task's limits: the timeout, restarting at it, and the
 * worker's resource limits, each as taskfs run --timeout / --restart
 * on-timeout / --limit gives them. */
#define LIMIT_VALUE(what)                                                                          \
  "{\"anyOf\":[{\"type\":\"string\",\"minLength\":1},{\"type\":\"integer\",\"minimum\":0}],"         \
  "\"description\":\"" what "\"}"
#define LIMIT_INPUTS                                                                               \
  "\"timeoutMs\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":2678400000,\"description\":"      \
  "\"Wall-clock limit of each worker run, in ms (at most 31 days), counted from the "              \
  "worker's start (not while queued): at it the process tree is stopped as a cancel "              \
  "stops it (SIGTERM, graceMs, SIGKILL) and the task ends failed, exitCode 124, reason "           \
  "'timed out after ...'. Default: the store's default (taskfs config set timeout), "             \
  "else none; the record says which (limits.timeout.from).\"},\"restartOnTimeout\":{\"type\":"      \
  "\"boolean\",\"description\":\"Restart a worker stopped at timeoutMs too (as "                   \
  "restart: on-failure restarts a failed one, within maxRestarts); default false: a "              \
  "timed-out task ends failed.\"},\"limits\":{\"type\":\"object\",\"description\":\"Resource "      \
  "limits of the worker and every process it starts, set with setrlimit (soft and hard, "          \
  "so the task cannot raise them); mem is the memory cgroup of the whole tree where one "          \
  "can be made. A string as taskfs run --limit takes it ('2G', '10m', 'none' lifts the "           \
  "store's default) or an integer in the limit's unit. Limits not given come from the "            \
  "store's defaults; the record says which applied and how (limits.NAME.from, "                    \
  ".via).\",\"properties\":{\"mem\":" LIMIT_VALUE(                                                   \
      "Memory: bytes, or 512M, 2G (powers of 1024).") ",\"cpu\":" LIMIT_VALUE(                    \
      "CPU time of each process: seconds, or 90s, 10m; SIGXCPU at it, SIGKILL a second "           \
      "later.") ",\"nofile\":" LIMIT_VALUE("Open files per process.") ",\"nproc\":" LIMIT_VALUE(  \
      "Processes of the user (the kernel counts them per user).") ",\"fsize\":" LIMIT_VALUE(      \
      "The size of a file it writes: bytes, or 10G; SIGXFSZ past it.") ",\"core\":" LIMIT_VALUE(  \
      "The size of a core dump: bytes; 0 turns them off.") "}}"

#define TASK_REF_PROPS                                                                             \
  "\"taskKey\":{\"type\":\"string\",\"description\":\"The key given to start_managed_task.\"},"    \
  "\"taskId\":{\"type\":\"string\",\"description\":\"The task id (from start or list).\"}"

static const char tools_json[] =
    "[{\"name\":\"start_managed_task\",\"title\":\"Start a durable task\",\"description\":\"Starts "
    "a command as a durable task under its own supervisor: it keeps running, and stays "
    "visible, if this server exits or is restarted. Idempotent by taskKey: calling again "
    "with the same key and the same command and cwd returns the existing task and runs "
    "nothing; a task that has ended is run again only with rerun: true; a key already "
    "used for a different command or cwd is rejected. command is an array (argv, no shell) "
    "or a string, which runs as [\\\"/bin/sh\\\", \\\"-c\\\", string]. restart, minUptimeMs,"
    " maxRestarts, maxQuickRestarts and graceMs set the supervision policy as taskfs run does;"
    " timeoutMs and limits bound the run (defaults from the store's config). env values "
    "go to the process only and are never written to disk. Waits up to waitMs (default "
    "1000, at most 50000) for the task to end (or, with untilPattern, for a matching "
    "output line), then returns its state, important lines and a short output tail within "
    "maxBytes; follow it with read_managed_task.\",\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"taskKey\":{\"type\":\"string\",\"description\":\"A stable name "
    "for this piece of work, 1-128 characters of A-Z a-z 0-9 . _ : - (starting again "
    "with the same key returns the same task).\"},\"command\":{\"anyOf\":[{\"type\":\"array\","
    "\"items\":{\"type\":\"string\"},\"minItems\":1},{\"type\":\"string\",\"minLength\":1}],"
    "\"description\":\"An argv array (run as is, no shell), or a command line run with "
    "/bin/sh -c.\"},\"cwd\":{\"type\":\"string\",\"description\":\"Absolute working directory. "
    "Default: the client's first root (when the client offers roots and it is a local "
    "directory), else the server's working directory; the answer says which (cwdFrom).\"},"
    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},\"description\":"
    "\"Extra "
    "environment variables, NAME: VALUE. Values reach the process only; the record keeps "
    "the names.\"},\"rerun\":{\"type\":\"boolean\",\"description\":\"When the key names "
    "a task that has ended: run it again as a new task under the same key (default false: "
    "return the ended task).\"},\"restart\":{\"type\":\"string\",\"enum\":[\"no\",\"on-failure\","
    "\"always\"],\"description\":\"Restart policy of the worker: no (default), on-failure "
    "(a non-zero exit or a signal), always.\"},\"minUptimeMs\":{\"type\":\"integer\","
    "\"minimum\":0,\"maximum\":86400000,\"description\":\"A worker that exits sooner "
    "than this counts as a quick death (default 1000).\"},\"maxRestarts\":{\"type\":\"integer\","
    "\"minimum\":0,\"maximum\":1000000,\"description\":\"Restarts allowed in all, "
    "whatever the uptime (default: no limit); at the limit the task ends as its last worker "
    "did.\"},\"maxQuickRestarts\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000000,"
    "\"description\":\"Restarts allowed after quick deaths in a row (within minUptimeMs); "
    "one more quick death ends the task failed ('crash loop'); default 5.\"},\"graceMs\":{\"type\":\"integer\","
    "\"minimum\":0,\"maximum\":86400000,\"description\":\"After a stop request: SIGTERM,"
    " then SIGKILL after this long (default 5000).\"},"
    "\"stderr\":{\"type\":\"string\",\"enum\":[\"merged\",\"split\"],\"description\":\"merged (default): stdout "
    "and stderr in one transcript in the order written; split: stderr on its own pipe, its "
    "lines listed in stderr-lines (lines written close together to both may then be "
    "reordered).\"}," LIMIT_INPUTS ","
    "\"queue\":{\"type\":\"string\","
    "\"minLength\":1,\"maxLength\":64,\"description\":\"Run in this queue: at most its "
    "parallel limit of its tasks run at once, in the order they were started (taskfs queue "
    "set NAME --parallel N); the others wait, state queued. Without it the task runs at "
    "once.\"},\"after\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1},"
    "\"description\":\"Task ids or keys this task starts after: it waits until each has "
    "completed; if one fails, is cancelled or is lost, this task ends failed and never "
    "runs.\"},\"delayMs\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2592000000,"
    "\"description\":\"Start no sooner than this long from now (at most 30 days).\"},"
    "\"executor\":{\"type\":\"string\",\"enum\":[\"local\",\"slurm\"],"
    "\"description\":\"Where the command runs: local (default), or slurm: as a Slurm job "
    "through srun, its output streamed back; the record's executor.job names the job.\"},"
    "\"slurmOptions\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":64,"
    "\"description\":\"With executor slurm: srun options, one per item with its value "
    "(\\\"--partition=debug\\\", \\\"--time=10\\\").\"},\"waitMs\":{\"type\":\"integer\","
    "\"minimum\":0,\"maximum\":50000,\"description\":\"Wait up to this long for the task "
    "to end (or for untilPattern) before answering; default 1000. Follow a longer task "
    "with read_managed_task.\"},\"untilPattern\":{\"type\":\"string\",\"description\":\"Answer "
    "as soon as an output line of the new task matches (e.g. a dev server's 'listening on'). " UNTIL_SYNTAX
    "\"},\"tailLines\":{\"type\":\"integer\",\"minimum\":0,"
    "\"maximum\":1000,\"description\":\"Lines of output tail in the answer, default 20 "
    "(within maxBytes).\"},\"maxBytes\":{\"type\":\"integer\",\"minimum\":1024,\"maximum\":262144,"
    "\"description\":\"Size bound of the whole answer, default 4096.\"}},\"required\":["
    "\"taskKey\",\"command\"]},\"outputSchema\":{\"type\":\"object\",\"properties\":{" STATE_PROPS
    "," OUTPUT_PROPS
    ",\"existing\":{\"type\":\"boolean\",\"description\":\"True when the key already "
    "named this task and nothing was started now.\"},\"started\":{\"type\":\"boolean\","
    "\"description\":\"True when this call created the task.\"},\"cwdFrom\":{\"type\":\"string\","
    "\"enum\":[\"argument\",\"root\",\"server\",\"task\"],\"description\":\"Where cwd "
    "came from: the cwd argument, the client's first root, the server's working directory,"
    " or (existing: true) the task as it was started.\"},\"cwdNote\":{\"type\":\"string\","
    "\"description\":\"Why the client's first root was not used, when it was asked for.\"}},"
    "\"required\":[\"taskId\",\"state\"]},\"execution\":{\"taskSupport\":\"optional\"},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":true,"
    "\"openWorldHint\":true}},{\"name\":\"read_managed_task\",\"title\":\"Read (and wait "
    "for) a task\",\"description\":\"Returns a task's state, exit code, duration, line "
    "and byte counts, the important lines of its whole output with line numbers, chosen most needed first "
    "(listed in line order): the first error (important.lead names its line) with the lines "
    "the tool printed around it as context (kind 'context': the traceback's last frame, "
    "Expected/Received, a caret's message), then other errors, failures, warnings and "
    "summaries, so an early error survives any amount of later noise; and a short tail. Name the task by taskKey or taskId (one of them "
    "is required). The answer stays within maxBytes (default 4096) whatever the output: "
    "long lines are cut and marked, the tail and then the important lines are trimmed,"
    " long fields shortened with '…'. Long-poll: with waitMs it returns as soon as the "
    "task ends or a NEW output line matches untilPattern (a regular expression, e.g. "
    "'listening on'), else after waitMs; waitMs is at most 50000 (50 s, below common "
    "client timeouts): call again to keep waiting. sinceLine N returns the lines after "
    "line N instead of the tail (a page; continue with sinceLine = nextLine).\",\"inputSchema\":{"
    "\"type\":\"object\",\"properties\":{\"taskKey\":{\"type\":\"string\",\"description\":\"The "
    "key given to start_managed_task (one of taskKey or taskId is required).\"},\"taskId\":{"
    "\"type\":\"string\",\"description\":\"The task id, from start_managed_task or "
    "list_managed_tasks "
    "(one of taskKey or taskId is required).\"},\"waitMs\":{\"type\":\"integer\",\"minimum\":0,"
    "\"maximum\":50000,\"description\":\"Wait up to this long for the task to end (or "
    "for untilPattern); default 0: answer at once. Call again to keep waiting.\"},\"tailLines\":{"
    "\"type\":\"integer\",\"minimum\":0,\"maximum\":1000,\"description\":\"Lines of tail,"
    " or the page size with sinceLine; default 20 (within maxBytes).\"},\"sinceLine\":{"
    "\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991,\"description\":"
    "\"Return the lines after this "
    "line number (0: from the start) instead of the tail; continue with sinceLine = nextLine.\"},"
    "\"untilPattern\":{\"type\":\"string\",\"description\":\"Return as soon as a new "
    "output line matches. " UNTIL_SYNTAX "\"},\"maxBytes\":{\"type\":\"integer\","
    "\"minimum\":1024,\"maximum\":262144,\"description\":\"Size bound of the whole answer,"
    " default 4096.\"}}},\"outputSchema\":{\"type\":\"object\",\"properties\":{" STATE_PROPS
    "," OUTPUT_PROPS
    "},\"required\":[\"taskId\",\"state\"]},\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},{\"name\":\"list_managed_"
    "tasks\","
    "\"title\":\"List durable tasks\",\"description\":\"Lists every task in the store,"
    " whichever instance or program started it, newest first. Paginated: pass nextCursor "
    "back as cursor. state filters (queued, running, completed, failed, cancelled, lost); "
    "a filtered call examines at most 5,000 tasks, so it may return fewer than limit "
    "with a nextCursor to go on.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"state\":{\"type\":\"string\",\"enum\":[\"queued\",\"running\",\"completed\",\"failed\","
    "\"cancelled\",\"lost\",\"paused\"],\"description\":\"Only tasks in this state.\"},"
    "\"limit\":{"
    "\"type\":\"integer\",\"minimum\":1,\"maximum\":500,\"description\":\"Page size, "
    "default 50.\"},\"cursor\":{\"type\":\"string\",\"description\":\"The nextCursor "
    "of the previous page.\"}}},\"outputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"tasks\":{\"type\":\"array\",\"description\":\"The page, newest first.\",\"items\":{"
    "\"type\":\"object\",\"properties\":{\"taskId\":{\"type\":\"string\",\"description\":\"The "
    "task id: stable across server restarts and the same for every instance; also the "
    "MCP task id.\"},\"taskKey\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],"
    "\"description\":\"The idempotency key the task was started with; null when it has "
    "none.\"},\"state\":{\"type\":\"string\",\"enum\":[\"queued\",\"running\",\"completed\","
    "\"failed\",\"cancelled\",\"lost\",\"paused\"],\"description\":\"queued (being started, "
    "or waiting for its queue, a dependency or its start time), running, completed (exit 0), "
    "failed (a non-zero exit, a signal, or it could not start), cancelled (stopped on "
    "request), lost (its supervisor died), paused (stopped until resumed).\"},\"command\":{"
    "\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"The argv, each "
    "argument cut to 120 bytes.\"},\"cwd\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],"
    "\"description\":\"The working directory the task runs in (shortened with '…' only "
    "to fit maxBytes).\"},\"exitCode\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}],"
    "\"description\":\"The worker's exit status once it exited; null while it runs or "
    "when a signal ended it.\"},\"signal\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}],"
    "\"description\":\"The signal number that ended the worker; null otherwise.\"},\"createdAt\":{"
    "\"type\":\"string\",\"description\":\"When the task was created (RFC "
    "3339).\"},\"durationMs\":{"
    "\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}],\"description\":\"Run time "
    "so far, or in all once ended; null before it started.\"},\"lines\":{\"type\":\"integer\","
    "\"description\":\"Lines of output so far (a final line without newline counts).\"},"
    "\"queue\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],\"description\":"
    "\"The queue the task runs in (start_managed_task's queue); null: none.\"},\"position\":{"
    "\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}],\"description\":\"While it "
    "waits for a slot of its queue: its place, 1 = next to start; null otherwise.\"},"
    USAGE_PROPS "}}},"
    "\"nextCursor\":{\"type\":\"string\",\"description\":\"Present when more tasks remain: "
    "pass it as cursor.\"},\"total\":{\"type\":\"integer\",\"description\":\"Tasks in "
    "the store.\"},\"hint\":{\"type\":\"string\",\"description\":\"Present when the state "
    "filter stopped at its scan "
    "limit.\"}},\"required\":[\"tasks\"]},\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},{\"name\":\"cancel_managed_"
    "task\","
    "\"title\":\"Stop a durable task\",\"description\":\"Records a stop request for a "
    "task (its supervisor stops the whole process tree: SIGTERM, then SIGKILL after the "
    "grace period) and waits briefly for the outcome; returns the resulting state. Name "
    "the task by taskKey or taskId (one of them is required). A task that had already "
    "ended is not an error: the result says alreadyEnded: true and nothing is stopped.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"taskKey\":{\"type\":\"string\","
    "\"description\":\"The key given to start_managed_task (one of taskKey or taskId "
    "is required).\"},\"taskId\":{\"type\":\"string\",\"description\":\"The task id, "
    "from start_managed_task or list_managed_tasks (one of taskKey or taskId is required).\"}}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{" STATE_PROPS
    ",\"alreadyEnded\":{\"type\":\"boolean\",\"description\":\"True when the task had "
    "ended before this call: nothing was stopped.\"},\"stopped\":{\"type\":\"boolean\","
    "\"description\":\"True when this call stopped it and it now reads cancelled.\"},"
    "\"message\":{\"type\":\"string\",\"description\":\"What happened, in words.\"}},"
    "\"required\":[\"taskId\",\"state\"]},\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,"
    "\"openWorldHint\":false}},{\"name\":\"control_managed_task\",\"title\":\"Pause, resume "
    "or signal a task\",\"description\":\"Controls a running task through its supervisor: "
    "pause stops its whole process tree (SIGSTOP; state paused, no CPU used), resume continues "
    "it (SIGCONT), signal sends one signal to the whole tree (its supervisor goes on "
    "supervising; use cancel_managed_task to stop a task). Name the task by taskKey or taskId "
    "(one of them is required). A paused task keeps its queue slot unless freeSlot is true. "
    "pause and resume wait briefly until the task reads paused or running.\",\"inputSchema\":{"
    "\"type\":\"object\",\"properties\":{\"taskKey\":{\"type\":\"string\",\"description\":"
    "\"The key given to start_managed_task (one of taskKey or taskId is required).\"},"
    "\"taskId\":{\"type\":\"string\",\"description\":\"The task id, from "
    "start_managed_task or list_managed_tasks (one of taskKey or taskId is required).\"},"
    "\"action\":{\"type\":\"string\",\"enum\":[\"pause\",\"resume\",\"signal\"],"
    "\"description\":\"What to do.\"},\"signal\":{\"type\":\"string\",\"description\":"
    "\"With action signal: a name or number as kill -l lists them (TERM, SIGUSR1, HUP, 10, "
    "RTMIN+2).\"},\"freeSlot\":{\"type\":\"boolean\",\"description\":\"With pause: the "
    "task counts as not running for its queue's limit while paused (resume then waits for "
    "a slot).\"}},\"required\":[\"action\"]},\"outputSchema\":{\"type\":\"object\","
    "\"properties\":{" STATE_PROPS
    ",\"action\":{\"type\":\"string\",\"description\":\"The action asked for.\"},"
    "\"message\":{\"type\":\"string\",\"description\":\"What happened, in words.\"}},"
    "\"required\":[\"taskId\",\"state\"]},\"execution\":{\"taskSupport\":\"forbidden\"},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":"
    "false,\"openWorldHint\":false}}]";

json_t *mcp_schema_tools(void) {
  json_error_t e;
  json_t *tools = json_loads(tools_json, 0, &e);
  if (!tools)
    fprintf(stderr, "taskfs mcp: internal error in the tool list: %s (column %d)\n", e.text,
            e.column);
  return tools;
}

json_t *mcp_schema_modern(const json_t *tools) {
  json_t *m = tools ? json_deep_copy(tools) : NULL;
  size_t i;
  json_t *t;
  json_array_foreach(m, i, t) json_object_del(t, "execution");
  return m;
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
