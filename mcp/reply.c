/* tools/call results: the record view every tool answers with, the
 * result itself (structured content plus the same JSON as text), its size
 * as the maxBytes bound counts it, and the isError answer of a failed
 * call. A large result is assembled as text around one serialisation
 * instead of being serialised once per copy. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"
#include "taskfs/buf.h"

json_t *mcp_time_or_null(int64_t ms) {
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
  json_object_set_new(o, "number", rec->number > 0 ? json_integer(rec->number) : json_null());
  json_object_set_new(o, "state", json_string(tfs_state_name(rec->state)));
  json_object_set_new(o, "command", argv);
  json_object_set_new(o, "cwd", str_or_null(rec->cwd));
  json_object_set_new(o, "exitCode",
                      rec->exit_code >= 0 ? json_integer(rec->exit_code) : json_null());
  json_object_set_new(o, "signal", rec->signal > 0 ? json_integer(rec->signal) : json_null());
  json_object_set_new(o, "reason", str_or_null(rec->reason));
  json_object_set_new(o, "createdAt", mcp_time_or_null(rec->created_ms));
  json_object_set_new(o, "startedAt", mcp_time_or_null(rec->started_ms));
  json_object_set_new(o, "endedAt", mcp_time_or_null(rec->ended_ms));
  json_object_set_new(o, "durationMs", duration);
  json_object_set_new(o, "lines", json_integer(rec->lines));
  json_object_set_new(o, "bytes", json_integer(rec->bytes));
  json_object_set_new(o, "restarts", json_integer(rec->restarts));
  mcp_usage_fields(o, rec);
  return o;
}

void mcp_usage_fields(json_t *o, const tfs_record_t *rec) {
  json_object_set_new(o, "cpuMs", json_integer(rec->usage.user_ms + rec->usage.sys_ms));
  json_object_set_new(o, "maxRssKb", json_integer(rec->usage.maxrss_kb));
}

json_t *mcp_call_result(json_t *structured, int is_error) {
  char *text = json_dumps(structured, JSON_COMPACT);
  json_t *r = json_pack("{s:[{s:s, s:s}], s:o}", "content", "type", "text", "text",
                        text ? text : "{}", "structuredContent", structured);
  free(text);
  if (is_error)
    json_object_set_new(r, "isError", json_true());
  return r;
}

/* The pieces of a tools/call result message around its id, the text block
 * and the structured content. */
#define RESULT_HEAD "{\"jsonrpc\":\"2.0\",\"id\":"
#define RESULT_TEXT ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\""
#define RESULT_STRUCT "\"}],\"structuredContent\":"
#define RESULT_TAIL "}}"

/* The compact tools/call result as mcp_call_result() builds it, plus the
 * JSON-RPC envelope. */
size_t mcp_result_size(const char *text) {
  size_t n = strlen(text);
  return sizeof "{\"content\":[{\"type\":\"text\",\"text\":\"\"}],\"structuredContent\":}" - 1 +
         tfs_json_escaped_len(text, n) + n + 48;
}

/* The message is assembled as text around the one dump, so a result of a
 * few kilobytes is serialised once instead of once per copy (the text
 * block, structuredContent, the message). */
void mcp_reply_result(const mcp_req_t *r, json_t *structured, char *text) {
  json_t *id = r->id ? r->id : json_null();
  if (!text)
    text = json_dumps(structured, JSON_COMPACT);
  char *idt = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
  size_t n = text ? strlen(text) : 0, in = idt ? strlen(idt) : 0, en;
  const char *era = mcp_era_tail(r, &en);
  size_t len = sizeof RESULT_HEAD - 1 + in + sizeof RESULT_TEXT - 1 +
               tfs_json_escaped_len(text, n) + sizeof RESULT_STRUCT - 1 + n + en +
               sizeof RESULT_TAIL - 1;
  tfs_buf_t m = TFS_BUF_INIT;
  int whole = text && idt && !tfs_buf_reserve(&m, len);
  if (whole) {
    tfs_buf_append(&m, RESULT_HEAD, sizeof RESULT_HEAD - 1);
    tfs_buf_append(&m, idt, in);
    tfs_buf_append(&m, RESULT_TEXT, sizeof RESULT_TEXT - 1);
    tfs_buf_json(&m, text, n);
    tfs_buf_append(&m, RESULT_STRUCT, sizeof RESULT_STRUCT - 1);
    tfs_buf_append(&m, text, n);
    tfs_buf_append(&m, era, en);
    tfs_buf_append(&m, RESULT_TAIL, sizeof RESULT_TAIL - 1);
  }
  free(text);
  free(idt);
  size_t mlen;
  char *msg = whole ? tfs_buf_take(&m, &mlen) : NULL;
  if (!msg) {
    tfs_buf_free(&m);
    mcp_reply(r, mcp_call_result(structured, 0));
    return;
  }
  json_decref(structured);
  mcp_send_reply_raw(r->sess, id, msg, mlen);
}

void mcp_tool_error(const mcp_req_t *r, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char *clean = mcp_text_clean(msg, strlen(msg), 0); /* %.Ns may cut a character */
  mcp_reply(r, json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                         clean ? clean : "error", "isError", 1));
  free(clean);
}
