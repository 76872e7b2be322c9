/* The managed-task tools (start, read, list, cancel) and the MCP Tasks
 * utility (tasks/get, tasks/result, tasks/list, tasks/cancel) over the same
 * durable tasks: an MCP task id is the taskfs task id, so it survives a
 * server restart.
 *
 * State mapping (taskfs -> MCP task status): queued, running -> working;
 * completed -> completed; failed, lost -> failed; cancelled -> cancelled. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp/mcp.h"
#include "taskfs/supervise.h"

#define READ_BUDGET_DEFAULT 4096 /* bytes of the whole tools/call result */
#define READ_BUDGET_MIN 1024
#define READ_BUDGET_MAX (256 * 1024)
#define TAIL_DEFAULT 20
#define TAIL_MAX 1000
#define LINE_CUT 240      /* bytes kept of one output line */
#define IMPORTANT_SHOWN 5 /* first / last important lines in a response */
#define START_WAIT_DEFAULT 1000
#define LIST_DEFAULT 50
#define LIST_MAX 500
#define LIST_SCAN_MAX 5000 /* records read by one filtered list call */
#define TASKS_PAGE 50
#define POLL_INTERVAL_MS 1000

static const char related_task_key[] = "io.modelcontextprotocol/related-task";

/* ---- tool descriptions -------------------------------------------------- */

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
  "\"total\":{\"type\":\"integer\"},"                                                              \
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
    "important lines of its whole output (errors, failures, summaries: the first and last few, "
    "with line numbers, so an early error survives any amount of later noise) and a short tail. "
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

json_t *mcp_tools_list(void) {
  static json_t *tools;
  if (!tools) {
    json_error_t e;
    tools = json_loads(tools_json, 0, &e);
    if (!tools) {
      fprintf(stderr, "taskfs mcp: internal error in the tool list: %s (column %d)\n", e.text,
              e.column);
      return json_array();
    }
  }
  return json_deep_copy(tools);
}

/* ---- small helpers ------------------------------------------------------- */

static json_t *time_or_null(int64_t ms) {
  char buf[TFS_TIME_BUF];
  return ms > 0 ? json_string(tfs_time_format(ms, buf)) : json_null();
}

static json_t *str_or_null(const char *s) {
  if (!s || !*s)
    return json_null();
  char *c = mcp_text_clean(s, strlen(s), 0);
  json_t *j = c ? json_string(c) : json_null();
  free(c);
  return j ? j : json_null();
}

json_t *mcp_record_compact(const tfs_record_t *rec) {
  json_t *o = json_object();
  json_t *argv = json_array();
  for (int i = 0; i < rec->argc && rec->argv && rec->argv[i]; i++)
    json_array_append_new(argv, str_or_null(rec->argv[i]));
  int terminal = tfs_state_terminal(rec->state);
  json_t *duration = json_null();
  if (rec->started_ms > 0) {
    int64_t end = rec->ended_ms > 0 ? rec->ended_ms : (terminal ? rec->started_ms : tfs_now_ms());
    duration = json_integer(end - rec->started_ms);
  }
  json_object_set_new(o, "taskId", json_string(rec->id));
  json_object_set_new(o, "taskKey", rec->key[0] ? json_string(rec->key) : json_null());
  json_object_set_new(o, "state", json_string(tfs_state_name(rec->state)));
  json_object_set_new(o, "command", argv);
  json_object_set_new(o, "cwd", str_or_null(rec->cwd));
  json_object_set_new(o, "exitCode",
                      rec->exit_code >= 0 ? json_integer(rec->exit_code) : json_null());
  json_object_set_new(o, "signal", rec->signal > 0 ? json_integer(rec->signal) : json_null());
  json_object_set_new(o, "reason", str_or_null(rec->reason));
  json_object_set_new(o, "createdAt", time_or_null(rec->created_ms));
  json_object_set_new(o, "startedAt", time_or_null(rec->started_ms));
  json_object_set_new(o, "endedAt", time_or_null(rec->ended_ms));
  json_object_set_new(o, "durationMs", duration);
  json_object_set_new(o, "lines", json_integer(rec->lines));
  json_object_set_new(o, "bytes", json_integer(rec->bytes));
  json_object_set_new(o, "restarts", json_integer(rec->restarts));
  return o;
}

/* A tools/call result: the structured content and the same JSON as text. */
static json_t *call_result(json_t *structured, int is_error) {
  char *text = json_dumps(structured, JSON_COMPACT);
  json_t *r = json_pack("{s:[{s:s, s:s}], s:o}", "content", "type", "text", "text",
                        text ? text : "{}", "structuredContent", structured);
  free(text);
  if (is_error)
    json_object_set_new(r, "isError", json_true());
  return r;
}

/* Bytes that n bytes of s take inside a JSON string as json_escape()
 * writes them: quote and backslash take two, the control characters two
 * (\b \f \n \r \t) or six (\u00XX), every other byte (UTF-8 included) one,
 * as in jansson's compact dump. */
static size_t json_escaped_len(const char *s, size_t n) {
  size_t len = n;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
      len += 1;
    else if (c < 0x20)
      len += 5;
  }
  return len;
}

/* Writes n bytes of s escaped for a JSON string at o; returns the end. */
static char *json_escape(char *o, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char e = 0;
    switch (c) {
    case '"':
      e = '"';
      break;
    case '\\':
      e = '\\';
      break;
    case '\b':
      e = 'b';
      break;
    case '\f':
      e = 'f';
      break;
    case '\n':
      e = 'n';
      break;
    case '\r':
      e = 'r';
      break;
    case '\t':
      e = 't';
      break;
    default:
      if (c >= 0x20) {
        *o++ = (char)c;
        continue;
      }
      memcpy(o, "\\u00", 4);
      o[4] = hex[c >> 4];
      o[5] = hex[c & 15];
      o += 6;
      continue;
    }
    *o++ = '\\';
    *o++ = e;
  }
  return o;
}

/* The pieces of a tools/call result message around its id, the text block
 * and the structured content. */
#define RESULT_HEAD "{\"jsonrpc\":\"2.0\",\"id\":"
#define RESULT_TEXT ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\""
#define RESULT_STRUCT "\"}],\"structuredContent\":"
#define RESULT_TAIL "}}\n"

/* Bytes of the compact tools/call result (as call_result() builds it) for
 * a structured content whose compact dump is text, plus the JSON-RPC
 * envelope: what the maxBytes bound is checked against. */
static size_t result_size(const char *text) {
  size_t n = strlen(text);
  return sizeof "{\"content\":[{\"type\":\"text\",\"text\":\"\"}],\"structuredContent\":}" - 1 +
         json_escaped_len(text, n) + n + 48;
}

/* Replies to id with the tools/call result for structured (stolen), whose
 * compact dump is text (malloc'd and stolen; NULL to dump it here). The
 * message is assembled as text around that one dump, so a result of a few
 * kilobytes is serialised once instead of once per copy (the text block,
 * structuredContent, the message). */
static void reply_result(mcp_server_t *srv, json_t *id, json_t *structured, char *text) {
  if (!text)
    text = json_dumps(structured, JSON_COMPACT);
  char *idt = json_dumps(id ? id : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
  size_t n = text ? strlen(text) : 0, in = idt ? strlen(idt) : 0;
  size_t len = sizeof RESULT_HEAD - 1 + in + sizeof RESULT_TEXT - 1 + json_escaped_len(text, n) +
               sizeof RESULT_STRUCT - 1 + n + sizeof RESULT_TAIL - 1;
  char *m = text && idt ? malloc(len + 1) : NULL;
  if (!m) {
    free(text);
    free(idt);
    mcp_reply(srv, id, call_result(structured, 0));
    return;
  }
  char *o = m;
  memcpy(o, RESULT_HEAD, sizeof RESULT_HEAD - 1);
  o += sizeof RESULT_HEAD - 1;
  memcpy(o, idt, in);
  o += in;
  memcpy(o, RESULT_TEXT, sizeof RESULT_TEXT - 1);
  o += sizeof RESULT_TEXT - 1;
  o = json_escape(o, text, n);
  memcpy(o, RESULT_STRUCT, sizeof RESULT_STRUCT - 1);
  o += sizeof RESULT_STRUCT - 1;
  memcpy(o, text, n);
  o += n;
  memcpy(o, RESULT_TAIL, sizeof RESULT_TAIL - 1);
  o += sizeof RESULT_TAIL - 1;
  *o = 0;
  free(text);
  free(idt);
  json_decref(structured);
  mcp_send_raw(srv, m, (size_t)(o - m));
}

/* A tool failure: an isError result whose text says what to do. */
static void tool_error(mcp_server_t *srv, json_t *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tool_error(mcp_server_t *srv, json_t *id, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char *clean = mcp_text_clean(msg, strlen(msg), 0); /* %.Ns may cut a character */
  mcp_reply(srv, id,
            json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                      clean ? clean : "error", "isError", 1));
  free(clean);
}

/* Reads an optional integer argument within [min, max]. Returns 0, or -1
 * with msg filled. */
static int arg_int(json_t *args, const char *name, int64_t def, int64_t min, int64_t max,
                   int64_t *out, char *msg, size_t msglen) {
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
    /* Only whether the task exists is asked here; the tool loads the
     * record itself. One fstatat instead of a load (open, read, parse) that
     * would be thrown away. A task dir without record.json yet is no task,
     * as tfs_task_load says; anything else (a planted symlink, a corrupt
     * record) is left for the tool's own load to report. */
    char rel[TFS_ID_MAX + 16];
    struct stat st;
    snprintf(rel, sizeof rel, "%s/record.json", s);
    if (fstatat(tfs_store_tasks_fd(store), rel, &st, AT_SYMLINK_NOFOLLOW) && errno == ENOENT) {
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

/* ---- output of a task: tail, pages, pattern ---------------------------- */

typedef struct {
  int64_t line;
  size_t total; /* bytes of the whole line */
  size_t len;   /* bytes kept in text */
  char text[LINE_CUT + 8];
} out_line_t;

typedef struct {
  out_line_t *v;
  size_t n, cap;
  int keep_partial; /* deliver a final line without newline */
} out_lines_t;

static int collect_line(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  out_lines_t *o = arg;
  if (partial == 1 && !o->keep_partial)
    return 0;
  if (o->n && o->v[o->n - 1].line == lineno) {
    /* Another piece of a line longer than the reader's piece size. */
    o->v[o->n - 1].total += len;
    return 0;
  }
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 32;
    out_line_t *v = realloc(o->v, cap * sizeof *v);
    if (!v)
      return 1;
    o->v = v;
    o->cap = cap;
  }
  out_line_t *l = &o->v[o->n++];
  l->line = lineno;
  l->total = len;
  l->len = len < sizeof l->text ? len : sizeof l->text;
  memcpy(l->text, line, l->len);
  return 0;
}

static json_t *line_text(const out_line_t *l) {
  char *c = mcp_text_clean_prefix(l->text, l->len, l->total, LINE_CUT);
  json_t *j = json_string(c ? c : "");
  free(c);
  return j;
}

static json_t *important_entry(const tfs_important_line_t *il) {
  size_t len = il->text ? strlen(il->text) : 0;
  char *c = mcp_text_clean(il->text ? il->text : "", len, LINE_CUT);
  json_t *j = json_pack("{s:I, s:s, s:s}", "line", (json_int_t)il->line, "kind",
                        tfs_line_kind_name(il->kind), "text", c ? c : "");
  free(c);
  return j;
}

typedef struct {
  int64_t tail_lines;
  int64_t since_line; /* -1: tail mode */
  int64_t max_bytes;
  int has_re;
  regex_t re;
  tfs_follower_t *fol;
  int64_t match_line;
  char *match_text;
  /* start_managed_task only */
  int is_start;
  int existing;
  /* task-augmented result (tasks/result) */
  int task_result;
} read_args_t;

/* Builds the read/start answer: compact state, important lines, tail or
 * page, then trims it until the whole tools/call result fits max_bytes:
 * first the oldest tail lines (newest page lines when paging), then the
 * important lines, keeping the very first one (usually the root cause).
 * *text gets the compact dump of the answer (malloc'd, or NULL), made for
 * the size check and reused for the reply. */
static json_t *build_output(mcp_server_t *srv, const tfs_record_t *rec, read_args_t *ra,
                            int64_t waited_ms, int timed_out, char **text) {
  tfs_store_t *store = mcp_store(srv);
  json_t *o = mcp_record_compact(rec);
  int terminal = tfs_state_terminal(rec->state);
  out_lines_t out = {.keep_partial = terminal};
  int paging = ra->since_line >= 0;
  if (ra->tail_lines > 0) {
    if (paging) {
      tfs_transcript_read(store, rec->id, ra->since_line + 1, ra->tail_lines, collect_line, &out);
    } else {
      tfs_follower_t *f = NULL;
      if (tfs_follower_open(store, rec->id, ra->tail_lines, &f) == 0) {
        tfs_follower_next(f, terminal, collect_line, &out);
        tfs_follower_close(f);
      }
      /* A line longer than the reader's piece may arrive as pieces that
       * make it look like several lines; keep only the last tail_lines. */
      if ((int64_t)out.n > ra->tail_lines) {
        size_t drop = out.n - (size_t)ra->tail_lines;
        memmove(out.v, out.v + drop, (out.n - drop) * sizeof *out.v);
        out.n -= drop;
      }
    }
  }
  json_t *first = json_array(), *last = json_array();
  const tfs_important_t *imp = &rec->important;
  if (!paging) {
    for (size_t i = 0; i < imp->nfirst && i < IMPORTANT_SHOWN; i++)
      json_array_append_new(first, important_entry(&imp->first[i]));
    size_t from = imp->nlast > IMPORTANT_SHOWN ? imp->nlast - IMPORTANT_SHOWN : 0;
    for (size_t i = from; i < imp->nlast; i++)
      json_array_append_new(last, important_entry(tfs_important_last(imp, i)));
  }
  json_object_set_new(
      o, "important",
      json_pack("{s:I, s:o, s:o}", "total", (json_int_t)imp->total, "first", first, "last", last));
  json_t *tail = json_array();
  for (size_t i = 0; i < out.n; i++)
    json_array_append_new(tail, line_text(&out.v[i]));
  json_object_set_new(o, "tail", tail);
  int64_t tail_from = out.n ? out.v[0].line : 0;
  int64_t next_line = out.n ? out.v[out.n - 1].line : (paging ? ra->since_line : rec->lines);
  if (ra->match_line > 0) {
    char *c = mcp_text_clean(ra->match_text ? ra->match_text : "",
                             ra->match_text ? strlen(ra->match_text) : 0, LINE_CUT);
    json_object_set_new(
        o, "match",
        json_pack("{s:I, s:s}", "line", (json_int_t)ra->match_line, "text", c ? c : ""));
    free(c);
  }
  json_object_set_new(o, "timedOut", json_boolean(timed_out));
  json_object_set_new(o, "waitedMs", json_integer(waited_ms));
  if (ra->is_start) {
    json_object_set_new(o, "existing", json_boolean(ra->existing));
    json_object_set_new(o, "started", json_boolean(!ra->existing));
  }
  const char *hint = NULL;
  if (!terminal)
    hint = "still running: call read_managed_task with waitMs to wait for it (or untilPattern for "
           "a line)";
  else if (ra->is_start && ra->existing)
    hint = "this key names a task that has already ended; nothing ran now: pass restart: true to "
           "run it again";
  if (hint)
    json_object_set_new(o, "hint", json_string(hint));

  /* Trim to the bound. */
  size_t dropped_tail = 0, dropped_imp = 0;
  json_t *impo = json_object_get(o, "important");
  *text = NULL;
  for (;;) {
    json_object_set_new(o, "tailFrom", out.n ? json_integer(tail_from) : json_null());
    json_object_set_new(o, "nextLine", json_integer(next_line));
    if (dropped_tail || dropped_imp)
      json_object_set_new(o, "omitted",
                          json_pack("{s:I, s:I, s:s}", "tailLines", (json_int_t)dropped_tail,
                                    "importantLines", (json_int_t)dropped_imp, "why",
                                    "response size bound (maxBytes); page with sinceLine"));
    free(*text);
    *text = json_dumps(o, JSON_COMPACT);
    if (!*text || result_size(*text) <= (size_t)ra->max_bytes)
      break;
    size_t ntail = json_array_size(tail);
    json_t *jfirst = json_object_get(impo, "first"), *jlast = json_object_get(impo, "last");
    if (ntail > 3 || (ntail > 0 && !json_array_size(jlast) && json_array_size(jfirst) <= 1)) {
      if (paging) {
        json_array_remove(tail, ntail - 1);
        next_line = ntail > 1 ? next_line - 1 : ra->since_line;
      } else {
        json_array_remove(tail, 0);
        tail_from++;
      }
      dropped_tail++;
    } else if (json_array_size(jlast)) {
      json_array_remove(jlast, 0);
      dropped_imp++;
    } else if (json_array_size(jfirst) > 1) {
      json_array_remove(jfirst, json_array_size(jfirst) - 1);
      dropped_imp++;
    } else {
      break; /* as small as it gets */
    }
  }
  free(out.v);
  return o;
}

/* Bytes of each output line that untilPattern is matched against. */
#define UNTIL_MATCH_MAX 4096

/* Whether an untilPattern holds a back-reference (\1..\9). glibc matches
 * those by backtracking, exponential in the line length ('(a*)*\1b' over
 * 2000 'a's never ends), which would freeze the server's loop. A backslash
 * inside a bracket expression is literal in an ERE, but such a pattern is
 * refused too: rare, and '[1]' says the same. */
static int has_backref(const char *p) {
  for (; *p; p++) {
    if (*p != '\\')
      continue;
    if (p[1] >= '1' && p[1] <= '9')
      return 1;
    if (p[1])
      p++; /* an escaped character, e.g. "\\\\1" is a backslash then '1' */
  }
  return 0;
}

/* Scans the lines that are new since the previous call for the pattern. */
typedef struct {
  read_args_t *ra;
  int64_t after; /* ignore lines up to this one */
  char *buf;
  size_t cap;
} scan_t;

static int scan_line(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  scan_t *s = arg;
  if (lineno <= s->after)
    return 0;
  /* Only a line's first UNTIL_MATCH_MAX bytes are matched: the matcher runs
   * in the server's one loop, so its cost per line must stay bounded. */
  if (len > UNTIL_MATCH_MAX)
    len = UNTIL_MATCH_MAX;
  if (len + 1 > s->cap) {
    char *b = realloc(s->buf, len + 1);
    if (!b)
      return 1;
    s->buf = b;
    s->cap = len + 1;
  }
  memcpy(s->buf, line, len);
  s->buf[len] = 0;
  if (regexec(&s->ra->re, s->buf, 0, NULL, 0) == 0) {
    s->ra->match_line = lineno;
    free(s->ra->match_text);
    s->ra->match_text = strndup(s->buf, len < 4096 ? len : 4096);
    return 1;
  }
  return 0;
}

static void read_scan(mcp_server_t *srv, read_args_t *ra, int terminal) {
  if (!ra->has_re || ra->match_line || !ra->fol)
    return;
  scan_t s = {.ra = ra, .after = ra->since_line >= 0 ? ra->since_line : 0};
  tfs_follower_next(ra->fol, terminal, scan_line, &s);
  free(s.buf);
}

static void read_args_free(read_args_t *ra) {
  if (ra->has_re)
    regfree(&ra->re);
  if (ra->fol)
    tfs_follower_close(ra->fol);
  free(ra->match_text);
  free(ra);
}

static void pending_read_free(mcp_pending_t *p) {
  read_args_free(p->data);
}

/* tasks/result payload: the CallToolResult of the (start) call, with the
 * related-task _meta. */
static json_t *task_payload(json_t *structured, const tfs_record_t *rec) {
  json_t *r = call_result(structured, rec->state != TFS_COMPLETED);
  json_object_set_new(r, "_meta", json_pack("{s:{s:s}}", related_task_key, "taskId", rec->id));
  return r;
}

/* Answers a read (or the answer of a start) if it can be answered now: the
 * task has ended, the pattern matched, or the wait is over (timed_out).
 * Returns 1 if it replied, 0 to look again later. */
static int read_answer(mcp_server_t *srv, json_t *id, const char *task_id, read_args_t *ra,
                       int64_t started_ms, int timed_out) {
  tfs_record_t rec;
  int err = tfs_task_load(mcp_store(srv), task_id, &rec);
  if (err) {
    if (!timed_out && err != TFS_ENOTASK)
      return 0; /* e.g. caught mid-write by a non-atomic reader: look again */
    if (ra->task_result)
      mcp_reply_error(srv, id, RPC_INTERNAL_ERROR, "cannot read task %s: %s", task_id,
                      tfs_strerror(err));
    else
      tool_error(srv, id, "cannot read task %s: %s", task_id, tfs_strerror(err));
    return 1;
  }
  int terminal = tfs_state_terminal(rec.state);
  read_scan(srv, ra, terminal);
  int done = terminal || ra->match_line > 0;
  if (!done && !timed_out) {
    tfs_record_free(&rec);
    return 0;
  }
  if (ra->task_result && !terminal) {
    /* Shutting down while tasks/result waits: the task goes on; say so. */
    mcp_reply_error(srv, id, RPC_INTERNAL_ERROR,
                    "the server is shutting down; task %s is still running: call tasks/result "
                    "again after reconnecting",
                    task_id);
    tfs_record_free(&rec);
    return 1;
  }
  char *text;
  json_t *o = build_output(srv, &rec, ra, tfs_now_ms() - started_ms, !done, &text);
  if (ra->task_result) {
    free(text);
    mcp_reply(srv, id, task_payload(o, &rec));
  } else {
    reply_result(srv, id, o, text);
  }
  tfs_record_free(&rec);
  return 1;
}

static int check_read(mcp_pending_t *p, int timed_out) {
  return read_answer(p->srv, p->id, p->task_id, p->data, p->started_ms, timed_out);
}

/* Parses the read arguments shared by read_managed_task and the answer of
 * start_managed_task. Returns 0 or -1 with msg. */
static int read_args_parse(json_t *args, read_args_t *ra, int64_t *wait_ms, int64_t wait_def,
                           char *msg, size_t msglen) {
  int64_t v;
  if (arg_int(args, "waitMs", wait_def, 0, INT64_MAX, wait_ms, msg, msglen))
    return -1;
  if (*wait_ms > MCP_WAIT_CAP_MS)
    *wait_ms = MCP_WAIT_CAP_MS; /* the documented cap, not an error */
  if (arg_int(args, "tailLines", TAIL_DEFAULT, 0, TAIL_MAX, &ra->tail_lines, msg, msglen))
    return -1;
  if (arg_int(args, "sinceLine", -1, 0, INT64_MAX, &v, msg, msglen))
    return -1;
  ra->since_line = v;
  if (arg_int(args, "maxBytes", READ_BUDGET_DEFAULT, READ_BUDGET_MIN, READ_BUDGET_MAX,
              &ra->max_bytes, msg, msglen))
    return -1;
  json_t *pat = json_object_get(args, "untilPattern");
  if (pat && !json_is_null(pat)) {
    if (!json_is_string(pat)) {
      snprintf(msg, msglen, "untilPattern must be a string (a POSIX extended regex)");
      return -1;
    }
    if (has_backref(json_string_value(pat))) {
      snprintf(msg, msglen,
               "untilPattern: back-references (\\1..\\9) are not supported; their matching "
               "time can grow exponentially with the line length. Use a pattern without them "
               "(e.g. 'listening on [0-9]+')");
      return -1;
    }
    int rc = regcomp(&ra->re, json_string_value(pat), REG_EXTENDED | REG_NOSUB);
    if (rc) {
      char ebuf[256];
      regerror(rc, &ra->re, ebuf, sizeof ebuf);
      snprintf(msg, msglen,
               "untilPattern '%.200s' is not a valid POSIX extended regex: %s; fix the pattern "
               "(e.g. 'listening on [0-9]+')",
               json_string_value(pat), ebuf);
      return -1;
    }
    ra->has_re = 1;
  }
  return 0;
}

/* Parks a read (or the answer of a start) on the task. */
static void read_park(mcp_server_t *srv, json_t *id, const char *task_id, read_args_t *ra,
                      int64_t wait_ms) {
  if (ra->has_re) {
    /* A task this call just started: every line is new, scan from line 1
     * (lines written before the follower opens must not be missed). */
    int64_t last_n = (ra->since_line >= 0 || (ra->is_start && !ra->existing)) ? -1 : 0;
    if (tfs_follower_open(mcp_store(srv), task_id, last_n, &ra->fol) == 0 && last_n == 0)
      tfs_follower_next(ra->fol, 0, scan_line, &(scan_t){.ra = ra, .after = INT64_MAX});
  }
  /* Most reads are answered at once (no waitMs, or the task has ended):
   * answer those here, without the pending request and its inotify watch
   * (an inotify_add_watch and rm_watch per call). Only a read that has to
   * wait is parked; parking watches first and then looks again, so a change
   * after this look is not missed. */
  if (read_answer(srv, id, task_id, ra, tfs_now_ms(), wait_ms == 0 || mcp_closing(srv))) {
    read_args_free(ra);
    return;
  }
  mcp_pending_t *p = mcp_pending_new(srv, id, task_id, wait_ms);
  if (!p) {
    read_args_free(ra);
    mcp_reply_error(srv, id, RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  p->data = ra;
  p->check = check_read;
  p->free_fn = pending_read_free;
  mcp_pending_start(p);
}

/* ---- the tools ------------------------------------------------------------ */

static void tool_read(mcp_server_t *srv, json_t *id, json_t *args) {
  char msg[512], task_id[TFS_ID_MAX + 1];
  if (mcp_resolve_args(srv, args, task_id, msg, sizeof msg)) {
    tool_error(srv, id, "%s", msg);
    return;
  }
  read_args_t *ra = calloc(1, sizeof *ra);
  int64_t wait_ms;
  if (!ra || read_args_parse(args, ra, &wait_ms, 0, msg, sizeof msg)) {
    tool_error(srv, id, "%s", ra ? msg : "out of memory");
    free(ra);
    return;
  }
  read_park(srv, id, task_id, ra, wait_ms);
}

static int env_name_ok(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9'))
    return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return 0;
  return 1;
}

static void free_strv(char **v) {
  if (!v)
    return;
  for (char **p = v; *p; p++)
    free(*p);
  free(v);
}

/* What start needs, parsed and checked. */
typedef struct {
  const char *key;
  char **argv;
  char cwd[PATH_MAX];
  char **env;       /* NAME=VALUE */
  char **env_names; /* NAME */
  int restart;
} start_args_t;

static void start_args_free(start_args_t *sa) {
  free_strv(sa->argv);
  free_strv(sa->env);
  free_strv(sa->env_names);
}

static int start_args_parse(json_t *args, start_args_t *sa, char *msg, size_t msglen) {
  memset(sa, 0, sizeof *sa);
  json_t *jkey = json_object_get(args, "taskKey");
  if (!json_is_string(jkey)) {
    snprintf(msg, msglen,
             "taskKey is required: a stable name for this work (1-128 characters "
             "of A-Z a-z 0-9 . _ : -)");
    return -1;
  }
  sa->key = json_string_value(jkey);
  if (!tfs_key_valid(sa->key)) {
    snprintf(msg, msglen,
             "taskKey '%.64s' is not valid: use 1-128 characters of A-Z a-z 0-9 . _ : -", sa->key);
    return -1;
  }
  json_t *cmd = json_object_get(args, "command");
  if (json_is_string(cmd)) {
    if (!*json_string_value(cmd)) {
      snprintf(msg, msglen, "command must not be empty");
      return -1;
    }
    sa->argv = calloc(4, sizeof *sa->argv);
    if (sa->argv) {
      sa->argv[0] = strdup("/bin/sh");
      sa->argv[1] = strdup("-c");
      sa->argv[2] = strdup(json_string_value(cmd));
    }
  } else if (json_is_array(cmd) && json_array_size(cmd) > 0) {
    size_t n = json_array_size(cmd);
    sa->argv = calloc(n + 1, sizeof *sa->argv);
    for (size_t i = 0; sa->argv && i < n; i++) {
      json_t *a = json_array_get(cmd, i);
      if (!json_is_string(a) || (i == 0 && !*json_string_value(a))) {
        snprintf(msg, msglen, "command[%zu] must be a%s string", i, i ? "" : " non-empty");
        return -1;
      }
      sa->argv[i] = strdup(json_string_value(a));
    }
  } else {
    snprintf(msg, msglen,
             "command is required: an array of strings (argv) or a string (run "
             "with /bin/sh -c)");
    return -1;
  }
  if (!sa->argv) {
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  json_t *cwd = json_object_get(args, "cwd");
  if (cwd && !json_is_null(cwd)) {
    const char *c = json_string_value(cwd);
    if (!c || c[0] != '/') {
      snprintf(msg, msglen, "cwd must be an absolute path (got %.200s)", c ? c : "a non-string");
      return -1;
    }
    struct stat st;
    if (stat(c, &st) || !S_ISDIR(st.st_mode)) {
      snprintf(msg, msglen, "cwd %.200s is not an existing directory; create it or pass another",
               c);
      return -1;
    }
    snprintf(sa->cwd, sizeof sa->cwd, "%s", c);
  } else if (!getcwd(sa->cwd, sizeof sa->cwd)) {
    snprintf(msg, msglen, "cannot determine the server's working directory; pass cwd");
    return -1;
  }
  json_t *env = json_object_get(args, "env");
  if (env && !json_is_null(env)) {
    if (!json_is_object(env)) {
      snprintf(msg, msglen, "env must be an object of NAME: VALUE strings");
      return -1;
    }
    size_t n = json_object_size(env), i = 0;
    sa->env = calloc(n + 1, sizeof *sa->env);
    sa->env_names = calloc(n + 1, sizeof *sa->env_names);
    const char *name;
    json_t *val;
    json_object_foreach(env, name, val) {
      if (!env_name_ok(name)) {
        snprintf(msg, msglen, "env name '%.64s' is not valid: use letters, digits and _", name);
        return -1;
      }
      if (!json_is_string(val)) {
        snprintf(msg, msglen, "env value of %.64s must be a string", name);
        return -1;
      }
      if (asprintf(&sa->env[i], "%s=%s", name, json_string_value(val)) < 0)
        sa->env[i] = NULL;
      sa->env_names[i] = strdup(name);
      i++;
    }
  }
  json_t *restart = json_object_get(args, "restart");
  if (restart && !json_is_null(restart) && !json_is_boolean(restart)) {
    snprintf(msg, msglen, "restart must be true or false");
    return -1;
  }
  sa->restart = json_is_true(restart);
  return 0;
}

static void describe_conflict(mcp_server_t *srv, const char *key, char *msg, size_t msglen) {
  char id[TFS_ID_MAX + 1];
  tfs_record_t rec;
  char cmd[300] = "";
  if (tfs_key_lookup(mcp_store(srv), key, id) == 0 &&
      tfs_task_load(mcp_store(srv), id, &rec) == 0) {
    size_t o = 0;
    for (int i = 0; i < rec.argc && o < sizeof cmd - 4; i++)
      o += (size_t)snprintf(cmd + o, sizeof cmd - o, "%s%s", i ? " " : "", rec.argv[i]);
    snprintf(msg, msglen,
             "taskKey '%s' already names a different command or cwd (task %s: `%.200s` in %.200s); "
             "choose another key, or read that task with read_managed_task",
             key, id, cmd, rec.cwd ? rec.cwd : "?");
    tfs_record_free(&rec);
    return;
  }
  snprintf(msg, msglen, "taskKey '%s' already names a different command or cwd; choose another key",
           key);
}

static json_t *task_object(const tfs_record_t *rec);

/* Creates (or finds) the task. Returns 0 and the id, with *existed; or -1
 * with msg. */
static int create_task(mcp_server_t *srv, start_args_t *sa, char id[TFS_ID_MAX + 1], int *existed,
                       char *msg, size_t msglen) {
  tfs_store_t *store = mcp_store(srv);
  tfs_task_spec_t spec = {
      .argv = sa->argv,
      .cwd = sa->cwd,
      .key = sa->key,
      .env_names = sa->env_names,
      .restart = TFS_RESTART_NO,
      .min_uptime_ms = -1,
      .max_restarts = -1,
      .grace_ms = -1,
      .important_k = 0,
      .rerun = sa->restart,
  };
  int err = tfs_task_create(store, &spec, id, existed);
  if (err == TFS_EKEYCONFLICT) {
    describe_conflict(srv, sa->key, msg, msglen);
    return -1;
  }
  if (err == -ENOSPC || err == -EDQUOT) {
    /* Say which disk: the store's, not the cwd's or the server's. */
    snprintf(msg, msglen,
             "could not create the task: %s in %.300s (the store's file system is full); free "
             "some space there and start it again",
             err == -ENOSPC ? "no space left on device" : "disk quota exceeded",
             tfs_store_path(store));
    return -1;
  }
  if (err) {
    snprintf(msg, msglen, "could not create the task in %.300s: %s", tfs_store_path(store),
             tfs_strerror(err));
    return -1;
  }
  return 0;
}

/* tfs_launch runs on the libuv threadpool: it forks (async-signal-safe
 * between fork and exec, so a threaded caller is fine) and waits until the
 * task leaves `queued`, recording a supervisor that could not start or
 * died early as `failed` — waits the loop must not sit through. */
#define LAUNCH_WAIT_MS 10000
typedef struct {
  uv_work_t req;
  mcp_server_t *srv;
  json_t *id;      /* NULL when the reply was already sent (task-augmented) */
  start_args_t sa; /* owns the environment until the launch is done */
  read_args_t *ra;
  int64_t wait_ms, t0;
  char task_id[TFS_ID_MAX + 1];
  int err;
} launch_t;

static void launch_work(uv_work_t *req) {
  launch_t *l = req->data;
  tfs_launch_opts_t lo = {.env = l->sa.env, .wait_ms = LAUNCH_WAIT_MS};
  l->err = tfs_launch(mcp_store(l->srv), l->task_id, &lo, NULL);
  /* Adopting a stranded task can race with another adopter (a second
   * server, `taskfs run --key`): whoever launched it, it runs. */
  if (l->err == -EALREADY)
    l->err = 0;
}

/* A keyed task that exists but is still queued with no live supervisor was
 * stranded: its creator died between creating and launching it. Like
 * tfs_task_start(), a start under its key launches it, so the key is never
 * wedged (a second launch of one task is harmless: the later supervisor
 * finds the task taken and leaves). */
static int stranded(mcp_server_t *srv, const char *task_id) {
  tfs_record_t rec;
  if (tfs_task_load(mcp_store(srv), task_id, &rec))
    return 0;
  int queued = rec.state == TFS_QUEUED;
  tfs_record_free(&rec);
  return queued && tfs_task_alive(mcp_store(srv), task_id) == 0;
}

static void launch_done(uv_work_t *req, int status) {
  launch_t *l = req->data;
  mcp_server_t *srv = l->srv;
  if (l->err)
    fprintf(stderr, "taskfs mcp: starting the supervisor of %s failed: %s\n", l->task_id,
            tfs_strerror(l->err));
  if (l->id && l->err) {
    tool_error(srv, l->id, "task %s was created but its supervisor could not be started: %s",
               l->task_id, tfs_strerror(l->err));
    read_args_free(l->ra);
  } else if (l->id) {
    int64_t left = l->wait_ms - (tfs_now_ms() - l->t0);
    read_park(srv, l->id, l->task_id, l->ra, left > 0 ? left : 0);
  }
  json_decref(l->id);
  start_args_free(&l->sa);
  free(l);
  mcp_hold(srv, -1);
}

static void tool_start(mcp_server_t *srv, json_t *id, json_t *args, json_t *task_meta) {
  char msg[1024];
  launch_t *l = calloc(1, sizeof *l);
  if (!l) {
    mcp_reply_error(srv, id, RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  l->srv = srv;
  l->t0 = tfs_now_ms();
  l->ra = calloc(1, sizeof *l->ra);
  int rc = start_args_parse(args, &l->sa, msg, sizeof msg);
  if (!rc &&
      (!l->ra || read_args_parse(args, l->ra, &l->wait_ms, START_WAIT_DEFAULT, msg, sizeof msg)))
    rc = -1;
  int existed = 0;
  if (!rc)
    rc = create_task(srv, &l->sa, l->task_id, &existed, msg, sizeof msg);
  if (rc) {
    if (task_meta)
      mcp_reply_error(srv, id, RPC_INVALID_PARAMS, "%s", l->ra ? msg : "out of memory");
    else
      tool_error(srv, id, "%s", l->ra ? msg : "out of memory");
    goto out;
  }
  l->ra->is_start = 1;
  l->ra->existing = existed;
  int adopt = existed && stranded(srv, l->task_id);
  if (task_meta) {
    /* Task-augmented: answer at once with the durable id. */
    tfs_record_t rec;
    int err = tfs_task_load(mcp_store(srv), l->task_id, &rec);
    if (err) {
      mcp_reply_error(srv, id, RPC_INTERNAL_ERROR, "task %s was created but cannot be read: %s",
                      l->task_id, tfs_strerror(err));
    } else {
      mcp_reply(srv, id, json_pack("{s:o}", "task", task_object(&rec)));
      tfs_record_free(&rec);
    }
    if (existed && !adopt)
      goto out;
    read_args_free(l->ra);
    l->ra = NULL;
  } else if (existed && !adopt) {
    read_park(srv, id, l->task_id, l->ra, 0);
    l->ra = NULL;
    goto out;
  } else {
    l->id = json_incref(id);
  }
  l->req.data = l;
  mcp_hold(srv, 1);
  if (uv_queue_work(mcp_loop(srv), &l->req, launch_work, launch_done)) {
    /* Cannot happen with valid arguments; run it here rather than lose it. */
    launch_work(&l->req);
    launch_done(&l->req, 0);
  }
  return;
out:
  if (l->ra)
    read_args_free(l->ra);
  start_args_free(&l->sa);
  free(l);
}

/* list_managed_tasks and tasks/list share the pager: ids newest first,
 * cursor = the last id of the previous page. */
int mcp_idpage_open(mcp_server_t *srv, const char *cursor, mcp_idpage_t *pg, char *err,
                    size_t errlen) {
  memset(pg, 0, sizeof *pg);
  if (cursor && !tfs_id_valid(cursor)) {
    snprintf(err, errlen,
             "cursor '%.64s' is not one this server handed out; omit it to start "
             "from the newest task",
             cursor);
    return -1;
  }
  int rc = tfs_task_ids(mcp_store(srv), &pg->all, &pg->nall);
  if (rc) {
    snprintf(err, errlen, "cannot list the store: %s", tfs_strerror(rc));
    return -1;
  }
  /* Page starts at the newest id strictly older than the cursor. */
  size_t lo = 0, hi = pg->nall;
  if (cursor) {
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (strcmp(pg->all[mid], cursor) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    pg->start = lo; /* ids [0, lo) are older than the cursor */
  } else {
    pg->start = pg->nall;
  }
  return 0;
}

void mcp_idpage_close(mcp_idpage_t *pg) {
  tfs_ids_free(pg->all, pg->nall);
  memset(pg, 0, sizeof *pg);
}

/* One line of the list: the fields an agent scans for, with long
 * arguments cut, so that a page of 50 stays a few KiB. */
static json_t *list_entry(const tfs_record_t *rec) {
  json_t *argv = json_array();
  for (int i = 0; i < rec->argc && rec->argv && rec->argv[i]; i++) {
    char *c = mcp_text_clean(rec->argv[i], strlen(rec->argv[i]), 120);
    json_array_append_new(argv, json_string(c ? c : ""));
    free(c);
  }
  int64_t duration = -1;
  if (rec->started_ms > 0)
    duration = (rec->ended_ms > 0 ? rec->ended_ms : tfs_now_ms()) - rec->started_ms;
  char when[TFS_TIME_BUF];
  return json_pack(
      "{s:s, s:o, s:s, s:o, s:o, s:o, s:s, s:o, s:I}", "taskId", rec->id, "taskKey",
      rec->key[0] ? json_string(rec->key) : json_null(), "state", tfs_state_name(rec->state),
      "command", argv, "exitCode", rec->exit_code >= 0 ? json_integer(rec->exit_code) : json_null(),
      "signal", rec->signal > 0 ? json_integer(rec->signal) : json_null(), "createdAt",
      tfs_time_format(rec->created_ms, when), "durationMs",
      duration >= 0 ? json_integer(duration) : json_null(), "lines", (json_int_t)rec->lines);
}

static void tool_list(mcp_server_t *srv, json_t *id, json_t *args) {
  char msg[512];
  int64_t limit;
  if (arg_int(args, "limit", LIST_DEFAULT, 1, LIST_MAX, &limit, msg, sizeof msg)) {
    tool_error(srv, id, "%s", msg);
    return;
  }
  json_t *jstate = json_object_get(args, "state");
  tfs_state_t want = TFS_QUEUED;
  int filter = 0;
  if (jstate && !json_is_null(jstate)) {
    if (!json_is_string(jstate) || tfs_state_parse(json_string_value(jstate), &want)) {
      tool_error(srv, id,
                 "state must be one of queued, running, completed, failed, cancelled, lost");
      return;
    }
    filter = 1;
  }
  json_t *jcur = json_object_get(args, "cursor");
  if (jcur && !json_is_null(jcur) && !json_is_string(jcur)) {
    tool_error(srv, id, "cursor must be the nextCursor string of a previous answer");
    return;
  }
  mcp_idpage_t pg;
  if (mcp_idpage_open(srv, json_string_value(jcur), &pg, msg, sizeof msg)) {
    tool_error(srv, id, "%s", msg);
    return;
  }
  /* A filtered scan looks at no more than LIST_SCAN_MAX records per call
   * (each is a file read), so one call never holds the loop for long; the
   * cursor continues it. */
  json_t *tasks = json_array();
  size_t i = pg.start, scanned = 0;
  const char *last = NULL;
  while (i > 0 && (int64_t)json_array_size(tasks) < limit && scanned < LIST_SCAN_MAX) {
    i--;
    scanned++;
    tfs_record_t rec;
    last = pg.all[i];
    if (tfs_task_load(mcp_store(srv), pg.all[i], &rec))
      continue; /* vanished or corrupt: costs that task only */
    if (!filter || rec.state == want)
      json_array_append_new(tasks, list_entry(&rec));
    tfs_record_free(&rec);
  }
  json_t *o = json_pack("{s:o, s:I}", "tasks", tasks, "total", (json_int_t)pg.nall);
  if (i > 0 && last)
    json_object_set_new(o, "nextCursor", json_string(last));
  if (i > 0 && scanned >= LIST_SCAN_MAX && (int64_t)json_array_size(tasks) < limit)
    json_object_set_new(o, "hint",
                        json_string("the state filter scanned its share of older tasks for this "
                                    "call; pass nextCursor to go on"));
  mcp_idpage_close(&pg);
  mcp_reply(srv, id, call_result(o, 0));
}

/* cancel_managed_task and tasks/cancel wait for the supervisor's outcome. */
typedef struct {
  int mcp_task; /* reply as tasks/cancel */
} cancel_wait_t;

static void cancel_reply(mcp_server_t *srv, json_t *id, const tfs_record_t *rec, int mcp_task,
                         int already) {
  if (mcp_task) {
    mcp_reply(srv, id, task_object(rec));
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
  mcp_reply(srv, id, call_result(o, 0));
}

static int check_cancel(mcp_pending_t *p, int timed_out) {
  cancel_wait_t *cw = p->data;
  tfs_record_t rec;
  int err = tfs_task_load(mcp_store(p->srv), p->task_id, &rec);
  if (err) {
    if (!timed_out)
      return 0;
    mcp_reply_error(p->srv, p->id, RPC_INTERNAL_ERROR, "cannot read task %s: %s", p->task_id,
                    tfs_strerror(err));
    return 1;
  }
  int terminal = tfs_state_terminal(rec.state);
  if (terminal || timed_out)
    cancel_reply(p->srv, p->id, &rec, cw->mcp_task, 0);
  tfs_record_free(&rec);
  return terminal || timed_out;
}

static void pending_free_data(mcp_pending_t *p) {
  free(p->data);
}

/* Records the stop request and parks until the task is terminal. Returns
 * 1 if the task had already ended (rec filled), 0 if parked, -1 on error
 * (msg filled). */
static int cancel_start(mcp_server_t *srv, json_t *id, const char *task_id, int mcp_task,
                        tfs_record_t *rec, char *msg, size_t msglen) {
  tfs_store_t *store = mcp_store(srv);
  int err = tfs_task_load(store, task_id, rec);
  if (err) {
    snprintf(msg, msglen, "cannot read task %s: %s", task_id, tfs_strerror(err));
    return -1;
  }
  if (tfs_state_terminal(rec->state))
    return 1;
  int64_t grace = rec->grace_ms > 0 ? rec->grace_ms : 5000;
  err = tfs_cancel_request(store, task_id, mcp_who(srv));
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
  mcp_pending_t *p = cw ? mcp_pending_new(srv, id, task_id, grace + 3000) : NULL;
  if (!p) {
    free(cw);
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  cw->mcp_task = mcp_task;
  p->data = cw;
  p->check = check_cancel;
  p->free_fn = pending_free_data;
  mcp_pending_start(p);
  return 0;
}

static void tool_cancel(mcp_server_t *srv, json_t *id, json_t *args) {
  char msg[512], task_id[TFS_ID_MAX + 1];
  if (mcp_resolve_args(srv, args, task_id, msg, sizeof msg)) {
    tool_error(srv, id, "%s", msg);
    return;
  }
  tfs_record_t rec;
  int rc = cancel_start(srv, id, task_id, 0, &rec, msg, sizeof msg);
  if (rc < 0)
    tool_error(srv, id, "%s", msg);
  else if (rc == 1) {
    cancel_reply(srv, id, &rec, 0, 1);
    tfs_record_free(&rec);
  }
}

void mcp_tools_call(mcp_server_t *srv, json_t *id, json_t *params) {
  const char *name = json_string_value(json_object_get(params, "name"));
  json_t *args = json_object_get(params, "arguments");
  json_t *task = json_object_get(params, "task");
  if (!name) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS, "tools/call needs params.name (see tools/list)");
    return;
  }
  if (args && !json_is_null(args) && !json_is_object(args)) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS, "params.arguments must be an object");
    return;
  }
  if (task && !json_is_null(task) && !json_is_object(task)) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS, "params.task must be an object");
    return;
  }
  if (task && json_is_null(task))
    task = NULL;
  json_t *empty = NULL;
  if (!args || json_is_null(args))
    args = empty = json_object();
  if (!strcmp(name, "start_managed_task")) {
    tool_start(srv, id, args, task);
  } else if (!strcmp(name, "read_managed_task") || !strcmp(name, "list_managed_tasks") ||
             !strcmp(name, "cancel_managed_task")) {
    if (task)
      mcp_reply_error(srv, id, RPC_METHOD_NOT_FOUND,
                      "tool %s does not support task-augmented execution (execution.taskSupport "
                      "is forbidden); call it without params.task",
                      name);
    else if (name[0] == 'r')
      tool_read(srv, id, args);
    else if (name[0] == 'l')
      tool_list(srv, id, args);
    else
      tool_cancel(srv, id, args);
  } else {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS,
                    "unknown tool '%s'; the tools are start_managed_task, read_managed_task, "
                    "list_managed_tasks, cancel_managed_task",
                    name);
  }
  json_decref(empty);
}

/* ---- the MCP Tasks utility ---------------------------------------------- */

static const char *mcp_status(tfs_state_t s) {
  switch (s) {
  case TFS_QUEUED:
  case TFS_RUNNING:
    return "working";
  case TFS_COMPLETED:
    return "completed";
  case TFS_CANCELLED:
    return "cancelled";
  default:
    return "failed";
  }
}

static json_t *task_object(const tfs_record_t *rec) {
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
  json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:n, s:i}", "taskId", rec->id, "status",
                        mcp_status(rec->state), "statusMessage", clean ? clean : "", "createdAt",
                        time_or_null(rec->created_ms), "lastUpdatedAt", time_or_null(updated),
                        "ttl", "pollInterval", POLL_INTERVAL_MS);
  free(clean);
  return o;
}

/* Looks up an MCP task id: it must be a taskfs id naming a task in the
 * store; anything else is -32602. */
static int task_param(mcp_server_t *srv, json_t *id, json_t *params, tfs_record_t *rec) {
  const char *tid = json_string_value(json_object_get(params, "taskId"));
  if (!tid) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS, "params.taskId (a string) is required");
    return -1;
  }
  if (!tfs_id_valid(tid)) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS,
                    "unknown task id '%.64s' (not a taskfs task id); see tasks/list", tid);
    return -1;
  }
  int err = tfs_task_load(mcp_store(srv), tid, rec);
  if (err == TFS_ENOTASK) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS, "unknown task id '%s'; see tasks/list", tid);
    return -1;
  }
  if (err) {
    mcp_reply_error(srv, id, RPC_INTERNAL_ERROR, "cannot read task %s: %s", tid, tfs_strerror(err));
    return -1;
  }
  return 0;
}

void mcp_tasks_get(mcp_server_t *srv, json_t *id, json_t *params) {
  tfs_record_t rec;
  if (task_param(srv, id, params, &rec))
    return;
  mcp_reply(srv, id, task_object(&rec));
  tfs_record_free(&rec);
}

void mcp_tasks_result(mcp_server_t *srv, json_t *id, json_t *params) {
  tfs_record_t rec;
  if (task_param(srv, id, params, &rec))
    return;
  char task_id[TFS_ID_MAX + 1];
  snprintf(task_id, sizeof task_id, "%s", rec.id);
  tfs_record_free(&rec);
  read_args_t *ra = calloc(1, sizeof *ra);
  if (!ra) {
    mcp_reply_error(srv, id, RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  ra->tail_lines = TAIL_DEFAULT;
  ra->since_line = -1;
  ra->max_bytes = READ_BUDGET_DEFAULT;
  ra->task_result = 1;
  ra->is_start = 1;
  read_park(srv, id, task_id, ra, -1); /* no deadline: until terminal */
}

void mcp_tasks_list(mcp_server_t *srv, json_t *id, json_t *params) {
  json_t *jcur = json_object_get(params, "cursor");
  if (jcur && !json_is_string(jcur)) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS, "params.cursor must be a string");
    return;
  }
  char msg[256];
  mcp_idpage_t pg;
  if (mcp_idpage_open(srv, json_string_value(jcur), &pg, msg, sizeof msg)) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS, "%s", msg);
    return;
  }
  json_t *tasks = json_array();
  size_t i = pg.start;
  const char *last = NULL;
  while (i > 0 && json_array_size(tasks) < TASKS_PAGE) {
    i--;
    last = pg.all[i];
    tfs_record_t rec;
    if (tfs_task_load(mcp_store(srv), pg.all[i], &rec))
      continue;
    json_array_append_new(tasks, task_object(&rec));
    tfs_record_free(&rec);
  }
  json_t *o = json_pack("{s:o}", "tasks", tasks);
  if (i > 0 && last)
    json_object_set_new(o, "nextCursor", json_string(last));
  mcp_idpage_close(&pg);
  mcp_reply(srv, id, o);
}

void mcp_tasks_cancel(mcp_server_t *srv, json_t *id, json_t *params) {
  tfs_record_t rec;
  if (task_param(srv, id, params, &rec))
    return;
  char task_id[TFS_ID_MAX + 1];
  snprintf(task_id, sizeof task_id, "%s", rec.id);
  tfs_record_free(&rec);
  char msg[512];
  int rc = cancel_start(srv, id, task_id, 1, &rec, msg, sizeof msg);
  if (rc < 0) {
    mcp_reply_error(srv, id, RPC_INTERNAL_ERROR, "%s", msg);
  } else if (rc == 1) {
    mcp_reply_error(srv, id, RPC_INVALID_PARAMS,
                    "task %s has already ended (%s); a task in a terminal status cannot be "
                    "cancelled",
                    task_id, mcp_status(rec.state));
    tfs_record_free(&rec);
  }
}
