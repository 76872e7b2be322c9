/* Requests that wait for a task: the one wait of the server, under a
 * read's long-poll, the answer of a start, a cancel's wait for the end
 * and tasks/result.
 *
 * Each look is the core's (tfs_task_ended: the record as stored, a task
 * whose supervisor died settled as lost), and the kind of request decides
 * from it whether to answer. A request that cannot be answered at once is
 * parked: a listener on the hub's watch (live/watch.c) and a timer. A change
 * the watch reports, or its tick, schedules a look: at once (on the loop's
 * next turn) when the last look is LOOK_DELAY_MS old, else when it will
 * be, so that a line a long-poll waits for is answered within a
 * millisecond while a flood of appends still costs at most one look per
 * LOOK_DELAY_MS; the timer also ends the wait at its deadline. A check
 * may have work of its own in flight (a read's untilPattern batches,
 * until.c): it then answers MCP_CHECK_LATER, even past the deadline, and
 * pokes the request when done -- up to MCP_WAIT_CAP_MS
 * after the request came, when every look is final and must answer.
 * Parking is where the limits on requests in flight apply (limits.c): a
 * request answered at its first look never counts against them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define LOOK_DELAY_MS 2

struct mcp_pending {
  mcp_pending_t *next;
  mcp_req_t req; /* kept */
  char task_id[TFS_ID_MAX + 1];
  int64_t started_ms;
  int64_t deadline_ms; /* 0: none */
  mcp_check_fn check;
  void *data;
  void (*free_fn)(void *data);
  uv_timer_t timer; /* initialized once parked */
  live_listener_t *listener;
  int soon;          /* a look is scheduled */
  int64_t looked_ms; /* when the last look a change asked for was taken */
  int parked;        /* past the first look: on the list, listening */
  int done;
};

static void pending_free(mcp_pending_t *p) {
  if (p->free_fn)
    p->free_fn(p->data);
  mcp_req_release(&p->req);
  free(p);
}

static void on_pending_closed(uv_handle_t *h) {
  pending_free(h->data);
}

/* One look: what the core says, handed to the kind's check. A task that
 * cannot be read (caught being created, a record written by hand and not
 * yet whole) is looked at again unless the wait is over; only a task that
 * is not there is answered at once. Returns MCP_CHECK_DONE once the
 * request is answered, MCP_CHECK_WAIT, or MCP_CHECK_LATER when the check
 * has work in flight that will poke the request (never once final). */
static int look(mcp_pending_t *p, int timed_out) {
  tfs_record_t rec;
  int rc = tfs_task_ended(mcp_store(p->req.srv), p->task_id, &rec);
  int again = rc < 0 && rc != TFS_ENOTASK && rc != TFS_EBADID;
  int64_t waited = tfs_now_ms() - p->started_ms;
  /* A request with a deadline is answered by the cap at the latest. */
  int final = mcp_closing(p->req.srv) || (p->deadline_ms && waited >= MCP_WAIT_CAP_MS);
  int out = MCP_CHECK_WAIT;
  if (!again || timed_out || final) {
    mcp_look_t lk = {.task_id = p->task_id,
                     .err = rc < 0 ? rc : 0,
                     .rec = &rec,
                     .ended = rc == 1,
                     .timed_out = timed_out || final,
                     .final = final,
                     .waited_ms = waited,
                     .wait = p};
    out = p->check(&p->req, p->data, &lk);
    if (out == MCP_CHECK_WAIT && (lk.timed_out || rc < 0))
      out = MCP_CHECK_DONE; /* it had to answer */
  }
  tfs_record_free(&rec);
  return out;
}

static void pending_finish(mcp_pending_t *p) {
  mcp_server_t *srv = p->req.srv;
  p->done = 1;
  for (mcp_pending_t **pp = &srv->pending; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  live_watch_remove(srv->hub, p->listener);
  p->listener = NULL;
  /* No longer in flight (limits.c), though the timer closes later. */
  mcp_req_release(&p->req);
  uv_timer_stop(&p->timer);
  uv_close((uv_handle_t *)&p->timer, on_pending_closed);
  mcp_server_check_idle(srv);
}

static void on_pending_timer(uv_timer_t *t);

/* Arms the timer for the deadline (or, while the check's own work goes
 * on past it, for the hard cap); without a listener (out of memory) for
 * the tick as well. */
static void pending_arm(mcp_pending_t *p, int later) {
  int64_t delay = p->listener ? -1 : live_watch_tick_ms(p->req.srv->hub);
  int64_t deadline = later ? p->started_ms + MCP_WAIT_CAP_MS : p->deadline_ms;
  if (deadline) {
    int64_t left = deadline - tfs_now_ms();
    if (left < 0)
      left = 0;
    if (delay < 0 || left < delay)
      delay = left;
  }
  if (delay >= 0)
    uv_timer_start(&p->timer, on_pending_timer, (uint64_t)delay, 0);
}

static void pending_run(mcp_pending_t *p) {
  int timed_out = p->deadline_ms && tfs_now_ms() >= p->deadline_ms;
  int out = look(p, timed_out);
  if (out == MCP_CHECK_DONE)
    pending_finish(p);
  else
    pending_arm(p, out == MCP_CHECK_LATER && timed_out);
}

static void on_pending_timer(uv_timer_t *t) {
  mcp_pending_t *p = t->data;
  p->soon = 0;
  p->looked_ms = tfs_now_ms();
  pending_run(p);
}

/* The watch says the task changed, or ticked: look again soon. */
static void on_pending_change(void *arg, unsigned what) {
  mcp_pending_t *p = arg;
  if (p->soon || p->done)
    return;
  p->soon = 1;
  int64_t since = tfs_now_ms() - p->looked_ms;
  uint64_t delay = since >= LOOK_DELAY_MS || since < 0 ? 0 : (uint64_t)(LOOK_DELAY_MS - since);
  uv_timer_start(&p->timer, on_pending_timer, delay, 0);
}

void mcp_wait_poke(mcp_pending_t *p) {
  if (!p || p->done || !p->parked)
    return;
  p->soon = 1;
  uv_timer_start(&p->timer, on_pending_timer, 0, 0);
}

void mcp_wait(const mcp_req_t *r, const char *task_id, int64_t wait_ms, unsigned what,
              mcp_check_fn check, void *data, void (*free_fn)(void *data)) {
  mcp_server_t *srv = r->srv;
  mcp_pending_t *p = calloc(1, sizeof *p);
  if (!p) {
    if (free_fn)
      free_fn(data);
    mcp_reply_error(r, MCP_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  /* Whether it may wait is known before it is kept (and counted). */
  int over = mcp_admit_check(r);
  mcp_req_keep(&p->req, r);
  snprintf(p->task_id, sizeof p->task_id, "%s", task_id);
  p->started_ms = tfs_now_ms();
  p->check = check;
  p->data = data;
  p->free_fn = free_fn;
  /* Most requests are answered at the first look (no wait asked, the task
   * has ended): no listener, no timer for those, and they count against
   * no limit. */
  int out = look(p, wait_ms == 0);
  if (out == MCP_CHECK_DONE || over) {
    pending_free(p); /* no longer counted */
    if (out != MCP_CHECK_DONE)
      mcp_reply_over(r, over);
    return;
  }
  p->parked = 1;
  /* waitMs 0 parks only while the check's own work goes on: its deadline
   * has passed already. */
  p->deadline_ms = wait_ms >= 0 ? p->started_ms + wait_ms : 0;
  uv_timer_init(srv->loop, &p->timer);
  p->timer.data = p;
  p->next = srv->pending;
  srv->pending = p;
  /* Watch first, then look again: a change between the two looks is not
   * missed. */
  p->listener = live_watch_add(srv->hub, task_id, what, on_pending_change, p);
  pending_run(p);
}

void mcp_pending_drop(mcp_session_t *s, const json_t *id) {
  for (mcp_pending_t *p = s->srv->pending; p; p = p->next)
    if (p->req.sess == s && json_equal(p->req.id, (json_t *)id)) {
      pending_finish(p);
      return;
    }
}

void mcp_pending_drop_session(mcp_session_t *s) {
  mcp_pending_t **pp = &s->srv->pending;
  while (*pp) {
    if ((*pp)->req.sess == s)
      pending_finish(*pp); /* unlinks it */
    else
      pp = &(*pp)->next;
  }
}

void mcp_pending_flush(mcp_server_t *srv) {
  while (srv->pending)
    pending_run(srv->pending);
}
