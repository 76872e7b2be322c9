/* The untilPattern scan of one waiting read, off the server's loop.
 *
 * Every read of the transcript is one of the hub's transcript scans
 * (live_scan_submit: on the loop's thread pool, capped in number, queued
 * beyond, cancellable), never a read on the loop. The first opens the
 * read's core follower (only what came since the call began, or after
 * sinceLine: the line index, the whole file where the index must be
 * rebuilt), as of the transcript's size when the call began, so no line
 * written meanwhile is missed. Each next one fills a batch of at most
 * scan_batch bytes with the new lines, each cut to its first
 * MCP_UNTIL_LINE_MAX bytes. The follower keeps a store handle of its own
 * (tfs_store_reopen) for the thread, as the loop may refresh its own.
 *
 * The batch is matched in a scan of the hub too (pattern.c), and the loop
 * is told the outcome: the first line that matched, a limit a line hit,
 * or that every line so far was matched in vain. A batch that takes more
 * than QUANTUM_MS of its thread's CPU goes back to the end of the hub's
 * queue with the rest of its lines, so one costly pattern takes its turn
 * with the others and with every tail read and follow open of the
 * process: the hub's cap on scans (LIVE_SCAN_JOBS) bounds them all
 * together, leaving the rest of the pool to launches. Memory: one batch
 * per read while it is filled or matched, none while it waits for
 * output.
 *
 * A fill that finds nothing new says "caught up": the reader's next look
 * waits for the watch, unless the reader looked while the fill ran (what
 * it was told of may have come after the fill's end of file).
 *
 * A read freed while one of its scans runs (it was answered or dropped)
 * is freed by the scan's end (the scan is cancelled: one still queued
 * ends at once); the server's end waits for the hub's scans (live_hold,
 * live_idle). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/internal.h"

#define BATCH_LINES 1024
#define QUANTUM_MS 10

typedef struct {
  int64_t lineno;
  size_t off, len;
} line_t;

struct mcp_until {
  mcp_server_t *srv;
  mcp_pattern_t *pat;
  tfs_follower_t *fol; /* bound to ostore: used on the pool only */
  int64_t last_n;      /* as the read asked (< 0: from line 1) */
  int64_t after;       /* lines up to this one are not matched */
  int64_t last_seen;   /* the last line put in a batch (a long line comes in pieces) */
  int terminal;        /* the task has ended: its last line counts without a newline */
  int fill_terminal;   /* what the running fill was given */
  int caught_up;       /* the last fill found nothing new (for that terminal) */
  int again;           /* the reader looked while a scan ran */
  int orphan;
  /* The batch, filled on the pool by a scan, matched on the pool. */
  char *buf;
  size_t blen, bcap;
  line_t *lines;
  size_t n, next;
  /* What the pool found (written there, read here after the batch). */
  int rc;
  int64_t rc_line;
  char rc_msg[400];
  /* The outcome so far. */
  int64_t match_line;
  char *match_text;
  char *error;
  void (*tell)(void *arg);
  void *tell_arg;
  live_scan_t *scan;   /* the follower's open, a fill or a match, while it runs */
  tfs_store_t *ostore; /* the thread's handle, the follower's */
  char id[TFS_ID_MAX + 1];
  off_t upto; /* the transcript's size when the call began */
};

static void destroy(mcp_until_t *u);
static void enqueue(mcp_until_t *u);

/* On the pool: the follower where the new lines start (after sinceLine:
 * from the line index's checkpoint before it; from line 1 for a task
 * this call started; else as of the size when the call began, so a line
 * finished then is not new). Without a follower (the task cannot be
 * read) nothing is scanned. */
static void open_run(void *arg) {
  mcp_until_t *u = arg;
  if (u->after > 0)
    tfs_follower_open_line(u->ostore, u->id, u->after + 1, &u->fol);
  else if (u->last_n < 0)
    tfs_follower_open(u->ostore, u->id, -1, &u->fol);
  else
    tfs_follower_open_upto(u->ostore, u->id, 0, u->upto, &u->fol);
}

static void open_done(void *arg, int err) {
  mcp_until_t *u = arg;
  u->scan = NULL;
  u->again = 0;
  if (u->orphan)
    destroy(u);
  else if (u->tell)
    u->tell(u->tell_arg); /* lines can be read now */
}

mcp_until_t *mcp_until_new(mcp_server_t *srv, mcp_pattern_t *pat, const char *task_id,
                           int64_t last_n, int64_t after) {
  mcp_until_t *u = calloc(1, sizeof *u);
  if (!u) {
    mcp_pattern_free(pat);
    return NULL;
  }
  u->srv = srv;
  u->pat = pat;
  u->last_n = last_n;
  u->after = after;
  snprintf(u->id, sizeof u->id, "%s", task_id);
  struct stat st;
  if (last_n >= 0 || after > 0)
    u->upto =
        tfs_task_file_stat(mcp_store(srv), task_id, TFS_FILE_TRANSCRIPT, &st) ? 0 : st.st_size;
  if (tfs_store_reopen(mcp_store(srv), &u->ostore) == 0 &&
      !(u->scan = live_scan_submit(srv->hub, open_run, open_done, u))) {
    tfs_store_close(u->ostore);
    u->ostore = NULL;
  }
  return u;
}

static void destroy(mcp_until_t *u) {
  if (u->fol)
    tfs_follower_close(u->fol);
  tfs_store_close(u->ostore);
  mcp_pattern_free(u->pat);
  free(u->buf);
  free(u->lines);
  free(u->match_text);
  free(u->error);
  free(u);
}

void mcp_until_free(mcp_until_t *u) {
  if (!u)
    return;
  if (u->scan) {
    u->orphan = 1; /* the scan's end frees it, maybe right here */
    live_scan_cancel(u->scan);
    return;
  }
  destroy(u);
}

/* Thread CPU time in ms. */
static int64_t cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* On the pool: the batch's lines in order, until one matches or hits a
 * limit, or the quantum is used. Touches only the batch and rc*. */
static void match_run(void *arg) {
  mcp_until_t *u = arg;
  mcp_matcher_t *m = mcp_matcher_new(u->pat);
  if (!m) {
    u->rc = -1;
    u->rc_line = u->lines[u->next].lineno;
    snprintf(u->rc_msg, sizeof u->rc_msg, "out of memory");
    return;
  }
  int64_t t0 = cpu_ms();
  while (u->next < u->n) {
    const line_t *l = &u->lines[u->next++];
    u->rc = mcp_pattern_match(u->pat, m, u->buf + l->off, l->len, u->rc_msg, sizeof u->rc_msg);
    if (u->rc) {
      u->rc_line = l->lineno;
      break;
    }
    if (cpu_ms() - t0 >= QUANTUM_MS)
      break;
  }
  mcp_matcher_free(m);
}

static int collect(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  mcp_until_t *u = arg;
  if (lineno <= u->after || lineno == u->last_seen)
    return 0; /* before sinceLine, or the rest of a long line */
  u->last_seen = lineno;
  if (len > MCP_UNTIL_LINE_MAX)
    len = MCP_UNTIL_LINE_MAX;
  memcpy(u->buf + u->blen, line, len);
  u->lines[u->n++] = (line_t){lineno, u->blen, len};
  u->blen += len;
  /* Full: stop after this line (the follower resumes after it). */
  return u->n == BATCH_LINES || u->blen >= u->bcap - MCP_UNTIL_LINE_MAX;
}

static void drop_batch(mcp_until_t *u) {
  free(u->buf);
  free(u->lines);
  u->buf = NULL;
  u->lines = NULL;
}

/* On the pool: the new lines into the batch. */
static void fill_run(void *arg) {
  mcp_until_t *u = arg;
  tfs_follower_next(u->fol, u->fill_terminal, collect, u);
}

/* On the loop: a batch to match, or caught up (hold nothing while
 * waiting for output, and say so). */
static void fill_done(void *arg, int err) {
  mcp_until_t *u = arg;
  u->scan = NULL;
  if (u->orphan) {
    destroy(u);
    return;
  }
  if (!err && u->n) {
    enqueue(u);
    return;
  }
  drop_batch(u);
  u->caught_up = !err && !u->again;
  u->again = 0;
  if (u->tell)
    u->tell(u->tell_arg);
}

/* Starts filling a new batch from the follower, a scan of the hub;
 * returns 0 when there is nothing to read (no follower, no memory). */
static int fill(mcp_until_t *u) {
  u->n = u->next = u->blen = 0;
  if (!u->fol)
    return 0;
  if (!u->buf) {
    u->bcap = mcp_limits(u->srv)->scan_batch + MCP_UNTIL_LINE_MAX;
    u->buf = malloc(u->bcap);
    u->lines = malloc(BATCH_LINES * sizeof *u->lines);
    if (!u->buf || !u->lines) {
      drop_batch(u);
      return 0;
    }
  }
  u->fill_terminal = u->terminal;
  u->caught_up = 0;
  u->again = 0;
  if (!(u->scan = live_scan_submit(u->srv->hub, fill_run, fill_done, u))) {
    drop_batch(u);
    return 0;
  }
  return 1;
}

/* The outcome of a batch, on the loop. Returns 1 when the reader should
 * look (a result, or every line so far matched in vain). */
static int settle(mcp_until_t *u) {
  if (u->rc > 0) {
    const line_t *l = &u->lines[u->next - 1];
    u->match_line = u->rc_line;
    u->match_text = strndup(u->buf + l->off, l->len);
    return 1;
  }
  if (u->rc < 0) {
    if (asprintf(&u->error, "%s on line %lld", u->rc_msg, (long long)u->rc_line) < 0)
      u->error = NULL;
    if (!u->error)
      u->error = strdup("out of memory");
    return 1;
  }
  if (u->next < u->n) {
    enqueue(u); /* the rest of the batch */
    return 0;
  }
  return !fill(u); /* the next one: fill_done tells */
}

static void match_done(void *arg, int err) {
  mcp_until_t *u = arg;
  u->scan = NULL;
  if (u->orphan) {
    destroy(u);
    return;
  }
  if (err && !u->rc) {
    u->rc = -1; /* the pool could not run it: said as a limit would be */
    u->rc_line = u->lines[u->next].lineno;
    snprintf(u->rc_msg, sizeof u->rc_msg, "cannot match: %s", tfs_strerror(err));
  }
  if (settle(u) && u->tell)
    u->tell(u->tell_arg);
}

/* The batch (or the rest of it) is matched in a scan of the hub, queued
 * behind the others: a costly pattern takes its turn with every scan of
 * the process. */
static void enqueue(mcp_until_t *u) {
  u->rc = 0;
  if (!(u->scan = live_scan_submit(u->srv->hub, match_run, match_done, u))) {
    /* No memory for the scan: match here rather than lose it. */
    match_run(u);
    match_done(u, 0);
  }
}

int mcp_until_feed(mcp_until_t *u, int terminal, void (*tell)(void *arg), void *arg) {
  u->terminal = terminal;
  u->tell = tell;
  u->tell_arg = arg;
  if (u->match_line || u->error)
    return 0;
  if (u->scan) {
    u->again = 1; /* what this look was told of may come after the fill's end */
    return 1;     /* the scan's or the batch's end tells */
  }
  if (u->caught_up && u->fill_terminal == terminal) {
    u->caught_up = 0; /* every line so far was matched: wait for more */
    return 0;
  }
  return fill(u);
}

int64_t mcp_until_match(mcp_until_t *u, char **text) {
  if (text) {
    *text = u->match_text;
    u->match_text = NULL;
  }
  return u->match_line;
}

const char *mcp_until_error(const mcp_until_t *u) {
  return u->error;
}
