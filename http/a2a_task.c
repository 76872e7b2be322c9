/* A taskfs task as an A2A Task: the state mapping, the status with the
 * reason of an end, and the artifacts (the important lines, the tail of
 * the transcript). Every task is its own context: contextId is its id. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/a2a.h"
#include "taskfs/text.h"

/* queued -> submitted, running (and paused: still a live task that will
 * go on) -> working, completed, failed and lost -> failed (a lost task
 * says why in its status message), cancelled -> canceled. */
const char *a2a_state_wire(tfs_state_t s) {
  switch (s) {
  case TFS_QUEUED:
    return "TASK_STATE_SUBMITTED";
  case TFS_RUNNING:
  case TFS_PAUSED:
    return "TASK_STATE_WORKING";
  case TFS_COMPLETED:
    return "TASK_STATE_COMPLETED";
  case TFS_FAILED:
  case TFS_LOST:
    return "TASK_STATE_FAILED";
  case TFS_CANCELLED:
    return "TASK_STATE_CANCELED";
  }
  return "TASK_STATE_UNSPECIFIED";
}

int a2a_state_filter(const char *name, unsigned *bits, int *none) {
  static const struct {
    const char *name;
    unsigned bits;
  } map[] = {
      {"TASK_STATE_SUBMITTED", TFS_STATE_BIT(TFS_QUEUED)},
      {"TASK_STATE_WORKING", TFS_STATE_BIT(TFS_RUNNING) | TFS_STATE_BIT(TFS_PAUSED)},
      {"TASK_STATE_COMPLETED", TFS_STATE_BIT(TFS_COMPLETED)},
      {"TASK_STATE_FAILED", TFS_STATE_BIT(TFS_FAILED) | TFS_STATE_BIT(TFS_LOST)},
      {"TASK_STATE_CANCELED", TFS_STATE_BIT(TFS_CANCELLED)},
      {"TASK_STATE_INPUT_REQUIRED", 0},
      {"TASK_STATE_REJECTED", 0},
      {"TASK_STATE_AUTH_REQUIRED", 0},
  };
  *bits = 0;
  *none = 0;
  if (!name || !*name || !strcmp(name, "TASK_STATE_UNSPECIFIED"))
    return 0; /* no filter */
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(name, map[i].name)) {
      *bits = map[i].bits;
      *none = !map[i].bits;
      return 0;
    }
  return -1;
}

int64_t a2a_status_ms(const tfs_record_t *rec) {
  return rec->ended_ms ? rec->ended_ms : rec->started_ms ? rec->started_ms : rec->created_ms;
}

json_t *a2a_text(const char *s, size_t len) {
  size_t n;
  char *clean = tfs_utf8_sanitize(s, len, &n);
  json_t *j = clean ? json_stringn(clean, n) : json_string("");
  free(clean);
  return j;
}

/* What the status message says: why a task ended (a lost one that it was
 * lost, and why), or that a paused one waits. NULL while nothing is to be
 * said (queued, running). */
static char *status_text(const tfs_record_t *rec) {
  char *t = NULL;
  const char *why = rec->reason && *rec->reason ? rec->reason : NULL;
  int n = 0;
  switch (rec->state) {
  case TFS_LOST:
    n = asprintf(&t, "lost: %s",
                 why ? why : "its supervisor died without recording an end (taskfs state lost)");
    break;
  case TFS_PAUSED:
    n = asprintf(&t, "paused: its processes are stopped until resumed (taskfs state paused)");
    break;
  case TFS_COMPLETED:
  case TFS_FAILED:
  case TFS_CANCELLED:
    if (why)
      n = asprintf(&t, "%s", why);
    else if (rec->exit_code >= 0)
      n = asprintf(&t, "%s, exit code %d", tfs_state_name(rec->state), rec->exit_code);
    else
      n = asprintf(&t, "%s", tfs_state_name(rec->state));
    break;
  default:
    break;
  }
  return n < 0 ? NULL : t;
}

json_t *a2a_status_json(const tfs_record_t *rec) {
  char when[TFS_TIME_BUF];
  json_t *st = json_pack("{s:s, s:s}", "state", a2a_state_wire(rec->state), "timestamp",
                         tfs_time_format(a2a_status_ms(rec), when));
  char *text = status_text(rec);
  if (text) {
    char mid[TFS_ID_MAX + 32];
    snprintf(mid, sizeof mid, "%s-status-%s", rec->id, tfs_state_name(rec->state));
    json_t *part = json_object();
    json_object_set_new(part, "text", a2a_text(text, strlen(text)));
    json_object_set_new(st, "message",
                        json_pack("{s:s, s:s, s:s, s:s, s:[o]}", "messageId", mid, "role",
                                  "ROLE_AGENT", "taskId", rec->id, "contextId", rec->id, "parts",
                                  part));
    free(text);
  }
  return st;
}

/* metadata.taskfs: what A2A's Task has no field for. */
static json_t *task_meta(const tfs_record_t *rec) {
  char t[TFS_TIME_BUF];
  json_t *argv = json_array();
  for (int i = 0; i < rec->argc; i++)
    json_array_append_new(argv, a2a_text(rec->argv[i], strlen(rec->argv[i])));
  const char *cwd = rec->cwd ? rec->cwd : "";
  json_t *m = json_pack("{s:s, s:o, s:o, s:s, s:I, s:I}", "state", tfs_state_name(rec->state),
                        "command", argv, "cwd", a2a_text(cwd, strlen(cwd)), "created",
                        tfs_time_format(rec->created_ms, t), "lines", (json_int_t)rec->lines,
                        "bytes", (json_int_t)rec->bytes);
  if (rec->key[0])
    json_object_set_new(m, "key", json_string(rec->key));
  if (rec->started_ms)
    json_object_set_new(m, "started", json_string(tfs_time_format(rec->started_ms, t)));
  if (rec->ended_ms)
    json_object_set_new(m, "ended", json_string(tfs_time_format(rec->ended_ms, t)));
  if (tfs_state_terminal(rec->state) && rec->exit_code >= 0)
    json_object_set_new(m, "exitCode", json_integer(rec->exit_code));
  if (rec->signal) {
    char sig[TFS_SIGNAME_MAX];
    json_object_set_new(m, "signal", json_string(tfs_signal_name(rec->signal, sig)));
  }
  if (rec->reason)
    json_object_set_new(m, "reason", a2a_text(rec->reason, strlen(rec->reason)));
  return json_pack("{s:o}", "taskfs", m);
}

/* The important lines, as data ({lead, lines: [{line, kind, text}],
 * total}) and as text ("LINE: text" each) for a client that shows text
 * only. */
static void add_line(json_t *lines, char **text, size_t *tlen, const tfs_important_line_t *l) {
  if (!l || !l->text)
    return;
  json_array_append_new(lines, json_pack("{s:I, s:s, s:s}", "line", (json_int_t)l->line, "kind",
                                         tfs_line_kind_name(l->kind), "text", l->text));
  char head[32];
  int hn = snprintf(head, sizeof head, "%" PRId64 ": ", l->line);
  size_t n = strlen(l->text);
  char *t = realloc(*text, *tlen + (size_t)hn + n + 2);
  if (!t)
    return;
  memcpy(t + *tlen, head, (size_t)hn);
  memcpy(t + *tlen + hn, l->text, n);
  *tlen += (size_t)hn + n;
  t[(*tlen)++] = '\n';
  t[*tlen] = '\0';
  *text = t;
}

static json_t *important_artifact(const tfs_record_t *rec) {
  const tfs_important_t *imp = &rec->important;
  json_t *lines = json_array();
  char *text = NULL;
  size_t tlen = 0;
  for (size_t i = 0; i < imp->nfirst; i++)
    add_line(lines, &text, &tlen, &imp->first[i]);
  for (size_t i = 0; i < imp->nlast; i++)
    add_line(lines, &text, &tlen, tfs_important_last(imp, i));
  json_t *data = json_pack("{s:o, s:I}", "lines", lines, "total", (json_int_t)imp->total);
  if (imp->lead.line && imp->lead.text)
    json_object_set_new(data, "lead",
                        json_pack("{s:I, s:s, s:s}", "line", (json_int_t)imp->lead.line, "kind",
                                  tfs_line_kind_name(imp->lead.kind), "text", imp->lead.text));
  json_t *parts = json_array();
  json_array_append_new(parts,
                        json_pack("{s:o, s:s}", "data", data, "mediaType", "application/json"));
  if (tlen)
    json_array_append_new(
        parts, json_pack("{s:o, s:s}", "text", a2a_text(text, tlen), "mediaType", "text/plain"));
  free(text);
  return json_pack("{s:s, s:s, s:s, s:o}", "artifactId", "important", "name", "important lines",
                   "description",
                   "the first and last lines that say what happened (errors, warnings, failures, "
                   "summaries), with their line numbers in the transcript",
                   "parts", parts);
}

/* The transcript's last whole lines within A2A_TAIL_BYTES; with end, only
 * lines that are whole (ending in a newline), and *end the offset after
 * the last of them. */
static json_t *tail_artifact(tfs_store_t *store, const tfs_record_t *rec, off_t *end) {
  char *tail = NULL;
  size_t len = 0;
  off_t size = 0;
  if (tfs_transcript_tail_bytes(store, rec->id, A2A_TAIL_BYTES, &tail, &len, &size))
    len = size = 0;
  if (end) {
    /* A line still being written goes out whole, in the stream. */
    size_t whole = len;
    while (whole && tail[whole - 1] != '\n')
      whole--;
    *end = size - (off_t)(len - whole);
    len = whole;
  }
  json_t *part =
      json_pack("{s:o, s:s}", "text", a2a_text(tail ? tail : "", len), "mediaType", "text/plain");
  free(tail);
  return json_pack("{s:s, s:s, s:s, s:[o], s:{s:I, s:I}}", "artifactId", "tail", "name",
                   "transcript tail", "description",
                   "the end of the task's output (stdout and stderr), whole lines", "parts", part,
                   "metadata", "transcriptBytes", (json_int_t)size, "tailBytes", (json_int_t)len);
}

json_t *a2a_task_json(tfs_store_t *store, const tfs_record_t *rec, int artifacts) {
  json_t *t = json_pack("{s:s, s:s, s:o, s:o}", "id", rec->id, "contextId", rec->id, "status",
                        a2a_status_json(rec), "metadata", task_meta(rec));
  if (artifacts)
    json_object_set_new(t, "artifacts",
                        json_pack("[o, o]", important_artifact(rec), tail_artifact(store, rec, NULL)));
  return t;
}

json_t *a2a_task_json_at(tfs_store_t *store, const tfs_record_t *rec, off_t *end) {
  json_t *t = a2a_task_json(store, rec, 0);
  json_object_set_new(t, "artifacts",
                      json_pack("[o, o]", important_artifact(rec), tail_artifact(store, rec, end)));
  return t;
}
