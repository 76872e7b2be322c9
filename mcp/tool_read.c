/* read_managed_task: its arguments, the untilPattern scan over new lines,
 * and the long-poll that parks a read until the task ends, a line matches
 * or the wait is over. start_managed_task and tasks/result answer through
 * the same path. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

/* Defaults; the bounds are the schema's (schema.c). */
#define READ_BUDGET_DEFAULT 4096 /* bytes of the whole tools/call result */
#define TAIL_DEFAULT 20

mcp_read_t *mcp_read_new(const mcp_req_t *r) {
  mcp_read_t *ra = calloc(1, sizeof *ra);
  if (!ra)
    return NULL;
  ra->tail_lines = TAIL_DEFAULT;
  ra->since_line = -1;
  ra->max_bytes = READ_BUDGET_DEFAULT;
  mcp_era_tail(r, &ra->extra_bytes); /* what the era adds to the result */
  return ra;
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
  mcp_read_t *ra;
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
    s->ra->match_text = s->buf; /* the line as matched: no copy to fail */
    s->buf = NULL;
    s->cap = 0;
    return 1;
  }
  return 0;
}

static void read_scan(mcp_read_t *ra, int terminal) {
  if (!ra->has_re || ra->match_line || !ra->fol)
    return;
  scan_t s = {.ra = ra, .after = ra->since_line >= 0 ? ra->since_line : 0};
  tfs_follower_next(ra->fol, terminal, scan_line, &s);
  free(s.buf);
}

void mcp_read_free(mcp_read_t *ra) {
  if (!ra)
    return;
  if (ra->has_re)
    regfree(&ra->re);
  if (ra->fol)
    tfs_follower_close(ra->fol);
  free(ra->match_text);
  free(ra);
}

static void read_free(void *data) {
  mcp_read_free(data);
}

static void reply_unreadable(const mcp_req_t *r, const mcp_read_t *ra, const mcp_look_t *lk) {
  char m[256];
  if (lk->err == -EAGAIN)
    snprintf(m, sizeof m, "task %s is still being created; read it again in a moment", lk->task_id);
  else
    snprintf(m, sizeof m, "cannot read task %s: %s", lk->task_id, tfs_strerror(lk->err));
  if (ra->task_result)
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "%s", m);
  else
    mcp_tool_error(r, "%s", m);
}

/* Answers a read (or the answer of a start, or tasks/result) once it can:
 * the task has ended, the pattern matched, or the wait is over. */
static int check_read(const mcp_req_t *r, void *data, const mcp_look_t *lk) {
  mcp_read_t *ra = data;
  if (lk->err) {
    reply_unreadable(r, ra, lk);
    return 1;
  }
  read_scan(ra, lk->ended);
  int done = lk->ended || ra->match_line > 0;
  if (!done && !lk->timed_out)
    return 0;
  if (ra->task_result && !lk->ended) {
    /* Shutting down while tasks/result waits: the task goes on; say so. */
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR,
                    "the server is shutting down; task %s is still running: call tasks/result "
                    "again after reconnecting",
                    lk->task_id);
    return 1;
  }
  char *text;
  json_t *o = mcp_output_build(r->srv, lk->rec, ra, lk->waited_ms, !done, &text);
  if (ra->task_result) {
    free(text);
    mcp_reply(r, mcp_task_payload(o, lk->rec->id));
  } else {
    mcp_reply_result(r, o, text);
  }
  return 1;
}

int mcp_read_parse(json_t *args, mcp_read_t *ra, int64_t *wait_ms, int64_t wait_def, char *msg,
                   size_t msglen) {
  /* The arguments fit the schema (bounds included): only defaults here. */
  *wait_ms = mcp_arg_i64(args, "waitMs", wait_def);
  ra->tail_lines = mcp_arg_i64(args, "tailLines", TAIL_DEFAULT);
  ra->since_line = mcp_arg_i64(args, "sinceLine", -1);
  ra->max_bytes = mcp_arg_i64(args, "maxBytes", READ_BUDGET_DEFAULT);
  json_t *pat = json_object_get(args, "untilPattern");
  if (json_is_string(pat)) {
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

void mcp_read_park(const mcp_req_t *r, const char *task_id, mcp_read_t *ra, int64_t wait_ms) {
  if (ra->has_re) {
    /* A task this call just started: every line is new, scan from line 1
     * (lines written before the follower opens must not be missed). */
    int64_t last_n = (ra->since_line >= 0 || (ra->is_start && !ra->existing)) ? -1 : 0;
    if (tfs_follower_open(mcp_store(r->srv), task_id, last_n, &ra->fol) == 0 && last_n == 0)
      tfs_follower_next(ra->fol, 0, scan_line, &(scan_t){.ra = ra, .after = INT64_MAX});
  }
  /* Output matters only to a pattern; the end to every read. */
  unsigned what = TFS_WATCH_STATE | (ra->has_re ? TFS_WATCH_OUTPUT : 0);
  mcp_wait(r, task_id, wait_ms, what, check_read, ra, read_free);
}

void mcp_tool_read(const mcp_req_t *r, json_t *args, json_t *task, json_t *params) {
  char msg[512], task_id[TFS_ID_MAX + 1];
  if (mcp_resolve_args(r->srv, args, task_id, msg, sizeof msg)) {
    mcp_tool_error(r, "%s", msg);
    return;
  }
  mcp_read_t *ra = mcp_read_new(r);
  int64_t wait_ms;
  if (!ra || mcp_read_parse(args, ra, &wait_ms, 0, msg, sizeof msg)) {
    mcp_tool_error(r, "%s", ra ? msg : "out of memory");
    mcp_read_free(ra);
    return;
  }
  mcp_read_park(r, task_id, ra, wait_ms);
}
