/* Requests that wait, and the task-directory watches they ride on.
 *
 * A pending request is a uv_timer plus a listener on a shared per-task
 * uv_fs_event watch of tasks/<id>/ (inotify: transcript appends and record
 * renames). An event schedules a check 15 ms later (coalescing bursts); a
 * 1 s fallback tick catches what inotify cannot see (a supervisor that died
 * without writing, or a watch that could not be set). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

struct mcp_listener {
  mcp_listener_t *next;
  mcp_watch_t *watch;
  mcp_watch_fn fn;
  void *arg;
};

struct mcp_watch {
  mcp_watch_t *next;
  mcp_server_t *srv;
  uv_fs_event_t ev;
  mcp_listener_t *listeners;
  int live; /* the inotify watch is in place */
  char id[TFS_ID_MAX + 1];
};

/* ---- watches ------------------------------------------------------------ */

static void on_watch_closed(uv_handle_t *h) {
  free(h->data);
}

static void on_fs_event(uv_fs_event_t *ev, const char *filename, int events, int status) {
  mcp_watch_t *w = ev->data;
  for (mcp_listener_t *l = w->listeners; l; l = l->next)
    l->fn(l->arg, filename ? filename : "");
}

static mcp_watch_t *watch_get(mcp_server_t *srv, const char *id) {
  mcp_watch_t *w;
  for (w = srv->watches; w; w = w->next)
    if (!strcmp(w->id, id))
      return w;
  w = calloc(1, sizeof *w);
  if (!w)
    return NULL;
  w->srv = srv;
  snprintf(w->id, sizeof w->id, "%s", id);
  char path[4096];
  snprintf(path, sizeof path, "%s/tasks/%s", tfs_store_path(srv->store), id);
  uv_fs_event_init(srv->loop, &w->ev);
  w->ev.data = w;
  int err = uv_fs_event_start(&w->ev, on_fs_event, path, 0);
  w->live = !err;
  if (err)
    /* Without the watch we still have the fallback tick; say why once. */
    fprintf(stderr, "taskfs mcp: cannot watch %s (%s); falling back to a 1 s check\n", path,
            uv_strerror(err));
  w->next = srv->watches;
  srv->watches = w;
  return w;
}

mcp_listener_t *mcp_watch_add(mcp_server_t *srv, const char *id, mcp_watch_fn fn, void *arg) {
  mcp_watch_t *w = watch_get(srv, id);
  mcp_listener_t *l = w ? calloc(1, sizeof *l) : NULL;
  if (!l)
    return NULL;
  l->watch = w;
  l->fn = fn;
  l->arg = arg;
  l->next = w->listeners;
  w->listeners = l;
  return l;
}

int mcp_listener_live(const mcp_listener_t *l) {
  return l && l->watch->live;
}

void mcp_watch_remove(mcp_server_t *srv, mcp_listener_t *l) {
  if (!l)
    return;
  mcp_watch_t *w = l->watch;
  for (mcp_listener_t **pp = &w->listeners; *pp; pp = &(*pp)->next)
    if (*pp == l) {
      *pp = l->next;
      break;
    }
  free(l);
  if (w->listeners)
    return;
  for (mcp_watch_t **pp = &srv->watches; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      break;
    }
  uv_fs_event_stop(&w->ev);
  w->ev.data = w;
  uv_close((uv_handle_t *)&w->ev, on_watch_closed);
}

/* ---- pending requests --------------------------------------------------- */

static void pending_arm(mcp_pending_t *p);

static void on_pending_closed(uv_handle_t *h) {
  mcp_pending_t *p = h->data;
  if (p->free_fn)
    p->free_fn(p);
  mcp_req_release(&p->req);
  free(p);
}

static void pending_finish(mcp_pending_t *p) {
  mcp_server_t *srv = p->req.srv;
  p->done = 1;
  for (mcp_pending_t **pp = &srv->pending; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  mcp_watch_remove(srv, p->listener);
  p->listener = NULL;
  uv_timer_stop(&p->timer);
  uv_close((uv_handle_t *)&p->timer, on_pending_closed);
  mcp_server_check_idle(srv);
}

static void pending_run(mcp_pending_t *p) {
  int64_t now = tfs_now_ms();
  int timed_out = p->req.srv->closing || (p->deadline_ms && now >= p->deadline_ms);
  if (p->check(p, timed_out) || timed_out) {
    pending_finish(p);
    return;
  }
  pending_arm(p);
}

static void on_pending_timer(uv_timer_t *t) {
  mcp_pending_t *p = t->data;
  p->soon = 0;
  pending_run(p);
}

/* Arms the timer for the next fallback tick or the deadline, whichever
 * comes first. */
static void pending_arm(mcp_pending_t *p) {
  int64_t delay = MCP_FALLBACK_TICK_MS;
  if (p->deadline_ms) {
    int64_t left = p->deadline_ms - tfs_now_ms();
    if (left < 0)
      left = 0;
    if (left < delay)
      delay = left;
  }
  uv_timer_start(&p->timer, on_pending_timer, (uint64_t)delay, 0);
}

/* A change in the task directory: look again soon. The short delay
 * coalesces the burst of events a chatty task produces. */
static void on_pending_change(void *arg, const char *filename) {
  mcp_pending_t *p = arg;
  if (p->soon || p->done)
    return;
  p->soon = 1;
  uv_timer_start(&p->timer, on_pending_timer, 15, 0);
}

mcp_pending_t *mcp_pending_new(const mcp_req_t *r, const char *task_id, int64_t wait_ms) {
  mcp_pending_t *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  mcp_req_keep(&p->req, r);
  snprintf(p->task_id, sizeof p->task_id, "%s", task_id);
  p->started_ms = tfs_now_ms();
  p->deadline_ms = wait_ms > 0 ? p->started_ms + wait_ms : (wait_ms == 0 ? p->started_ms : 0);
  uv_timer_init(r->srv->loop, &p->timer);
  p->timer.data = p;
  return p;
}

void mcp_pending_start(mcp_pending_t *p) {
  mcp_server_t *srv = p->req.srv;
  p->next = srv->pending;
  srv->pending = p;
  /* Watch first, then look: a change between the two is not missed. */
  if (!srv->closing)
    p->listener = mcp_watch_add(srv, p->task_id, on_pending_change, p);
  pending_run(p);
}

void mcp_pending_free_data(mcp_pending_t *p) {
  free(p->data);
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
