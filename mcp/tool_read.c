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

void mcp_read_free(mcp_read_t *ra) {
  if (!ra)
    return;
  mcp_pattern_free(ra->pattern);
  mcp_until_free(ra->until);
  mcp_output_tail_free(ra->tail);
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

static void tell_wait(void *arg) {
  mcp_wait_poke(arg);
}

/* The untilPattern part of a look: the new lines go to the matcher (off
 * the loop, until.c), which pokes the request when it has an outcome.
 * Returns 1 while lines are being matched. */
static int read_scan(mcp_read_t *ra, const mcp_look_t *lk) {
  if (!ra->until || ra->match_line)
    return 0;
  int busy = mcp_until_feed(ra->until, lk->ended, tell_wait, lk->wait);
  ra->match_line = mcp_until_match(ra->until, &ra->match_text);
  return busy && !ra->match_line;
}

/* A line made the pattern hit a limit: the caller is told which, and what
 * to do; a task this call started is named, since the answer that would
 * have named it does not come. */
static void reply_limit(const mcp_req_t *r, const mcp_read_t *ra, const mcp_look_t *lk,
                        const char *what) {
  char started[200] = "";
  if (ra->is_start && !ra->existing)
    snprintf(started, sizeof started,
             "task %s was started and runs on (read it with read_managed_task, stop it with "
             "cancel_managed_task), but its ",
             lk->task_id);
  mcp_tool_error(r, "%suntilPattern hit %s of task %s: %s The task is not affected.",
                 *started ? started : "", what, lk->task_id, mcp_pattern_hint());
}

/* Answers a read (or the answer of a start, or tasks/result) once it can:
 * the task has ended (and every line it wrote was matched), the pattern
 * matched, or the wait is over -- or, while lines are still being
 * matched past it, once they are (at the latest when the look is final). */
static int check_read(const mcp_req_t *r, void *data, const mcp_look_t *lk) {
  mcp_read_t *ra = data;
  if (lk->err) {
    reply_unreadable(r, ra, lk);
    return MCP_CHECK_DONE;
  }
  int busy = read_scan(ra, lk);
  const char *hit = ra->until ? mcp_until_error(ra->until) : NULL;
  if (hit) {
    reply_limit(r, ra, lk, hit);
    return MCP_CHECK_DONE;
  }
  int done = (lk->ended && !busy) || ra->match_line > 0;
  if (!done && !lk->timed_out)
    return MCP_CHECK_WAIT;
  if (!done && busy && !lk->final)
    return MCP_CHECK_LATER;
  if (ra->task_result && !lk->ended) {
    /* Shutting down while tasks/result waits: the task goes on; say so. */
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR,
                    "the server is shutting down; task %s is still running: call tasks/result "
                    "again after reconnecting",
                    lk->task_id);
    return MCP_CHECK_DONE;
  }
  /* The lines of the answer are read on the thread pool, never here;
   * only a final look (the server ends) or one with no room to wait (the
   * limits on requests in flight) reads them at once. */
  if (!lk->final && mcp_admit_room(r) &&
      mcp_output_prepare(r->srv, ra, lk->rec, tell_wait, lk->wait))
    return MCP_CHECK_LATER;
  char *text;
  json_t *o = mcp_output_build(r->srv, lk->rec, ra, lk->waited_ms, !done, &text);
  if (ra->task_result) {
    free(text);
    mcp_reply(r, mcp_task_payload(o, lk->rec));
  } else {
    mcp_reply_result(r, o, text);
  }
  return MCP_CHECK_DONE;
}

int mcp_read_parse(const mcp_req_t *r, json_t *args, mcp_read_t *ra, int64_t *wait_ms,
                   int64_t wait_def, char *msg, size_t msglen) {
  /* The arguments fit the schema (bounds included): only defaults here.
   * sinceLine is read's own (mcp_tool_read): start does not have it. */
  *wait_ms = mcp_arg_i64(args, "waitMs", wait_def);
  ra->tail_lines = mcp_arg_i64(args, "tailLines", TAIL_DEFAULT);
  ra->max_bytes = mcp_arg_i64(args, "maxBytes", READ_BUDGET_DEFAULT);
  json_t *pat = json_object_get(args, "untilPattern");
  if (json_is_string(pat) && mcp_pattern_compile(json_string_value(pat), json_string_length(pat),
                                                 mcp_limits(r->srv), &ra->pattern, msg, msglen))
    return -1;
  return 0;
}

void mcp_read_park(const mcp_req_t *r, const char *task_id, mcp_read_t *ra, int64_t wait_ms) {
  if (ra->pattern) {
    /* Only new lines count: those written after the call began, after
     * sinceLine, or -- for a task this call just started -- every line
     * (scanned from line 1, so that none written before the follower
     * opens is missed). */
    int64_t last_n = (ra->since_line >= 0 || (ra->is_start && !ra->existing)) ? -1 : 0;
    ra->until = mcp_until_new(r->srv, ra->pattern, task_id, last_n,
                              ra->since_line >= 0 ? ra->since_line : 0);
    ra->pattern = NULL; /* taken */
  }
  /* Output matters only to a pattern; the end to every read. */
  unsigned what = TFS_WATCH_STATE | (ra->until ? TFS_WATCH_OUTPUT : 0);
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
  if (!ra || mcp_read_parse(r, args, ra, &wait_ms, 0, msg, sizeof msg)) {
    mcp_tool_error(r, "%s", ra ? msg : "out of memory");
    mcp_read_free(ra);
    return;
  }
  ra->since_line = mcp_arg_i64(args, "sinceLine", -1);
  mcp_read_park(r, task_id, ra, wait_ms);
}
