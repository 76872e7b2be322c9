/* The hub's watch of the tasks its faces wait on (MCP's requests and
 * subscriptions, the feeds' follows and task feed, the mount's pollers):
 * one core watch (tfs_watch_t: one inotify instance for any number of
 * tasks) under a uv_poll_t, and one tick at tfs_watch_tick_ms() for what
 * inotify cannot see (a supervisor that died changes no file; with
 * TASKFS_NO_INOTIFY, or the user's inotify instances used up, the tick
 * alone). Listeners name a task and what they want to hear of; the watch
 * only ever says "look again", never what they will find.
 *
 * The loop's handles exist while anything is watched, so an idle hub
 * (and a hub at its end) holds none; they live in a block of their own
 * that their close callbacks free, never in the hub. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/internal.h"

typedef struct watched watched_t;

struct live_listener {
  live_listener_t *next;
  watched_t *task;
  unsigned what;
  live_watch_fn fn;
  live_tasks_dir_fn tfn; /* a listener of tasks/ (task NULL) */
  void *arg;
  int dead; /* removed while listeners were being told */
};

struct watched {
  watched_t *next;
  char id[TFS_ID_MAX + 1];
  unsigned what; /* what the core watch is asked for: its listeners' union */
  live_listener_t *listeners;
};

typedef struct {
  uv_poll_t poll; /* on the inotify fd, when there is one */
  uv_timer_t tick;
  int has_poll;
  int handles; /* still open; the block is freed at 0 */
  int tick_ms;
} uvside_t;

struct live_watch {
  tfs_watch_t *tw;
  watched_t *tasks;
  live_listener_t *dir; /* listeners of tasks/ itself */
  int dir_on;           /* tfs_watch_tasks() was asked */
  int dir_seen;         /* and inotify watches it */
  uvside_t *uv;
  int telling; /* listeners are being called: removals only mark them */
  int dead;    /* some listener is marked */
  int said;    /* the watch limit was reported on stderr */
};

static void on_uv_closed(uv_handle_t *h) {
  uvside_t *u = h->data;
  if (--u->handles == 0)
    free(u);
}

static void uv_side_close(live_watch_t *w) {
  uvside_t *u = w->uv;
  if (!u)
    return;
  w->uv = NULL;
  u->handles = 1 + u->has_poll;
  u->tick.data = u->poll.data = u;
  if (u->has_poll)
    uv_close((uv_handle_t *)&u->poll, on_uv_closed);
  uv_close((uv_handle_t *)&u->tick, on_uv_closed);
}

/* ---- telling the listeners ------------------------------------------- */

static void tell(live_watch_t *w, watched_t *t, unsigned what) {
  w->telling++;
  for (live_listener_t *l = t->listeners; l; l = l->next)
    if (!l->dead && (what & (l->what | TFS_WATCH_GONE | LIVE_WATCH_TICK)))
      l->fn(l->arg, what);
  w->telling--;
}

static void tell_dir(live_watch_t *w, const char *id, unsigned what) {
  w->telling++;
  for (live_listener_t *l = w->dir; l; l = l->next)
    if (!l->dead)
      l->tfn(l->arg, id, what);
  w->telling--;
}

static watched_t *find(live_watch_t *w, const char *id) {
  for (watched_t *t = w->tasks; t; t = t->next)
    if (!strcmp(t->id, id))
      return t;
  return NULL;
}

static void sweep(live_hub_t *hub);
static void tick_update(live_hub_t *hub);

static void on_drained(const char *id, unsigned what, void *arg) {
  live_watch_t *w = arg;
  if (!id || (what & (TFS_WATCH_CREATED | TFS_WATCH_DELETED))) {
    if (!id && what == TFS_WATCH_DELETED)
      w->dir_seen = 0; /* tasks/ itself went (not an overflow): from now, by the tick */
    tell_dir(w, id, what);
    return;
  }
  watched_t *t = find(w, id);
  if (t)
    tell(w, t, what);
}

static void on_poll(uv_poll_t *h, int status, int events) {
  live_hub_t *hub = h->data;
  tfs_watch_drain(hub->watch->tw, on_drained, hub->watch);
  sweep(hub);
  /* A task dir that went away is watched by the tick alone from now. */
  tick_update(hub);
}

static void on_tick(uv_timer_t *h) {
  live_hub_t *hub = h->data;
  live_watch_t *w = hub->watch;
  w->telling++;
  for (watched_t *t = w->tasks; t; t = t->next)
    tell(w, t, LIVE_WATCH_TICK);
  w->telling--;
  tell_dir(w, NULL, LIVE_WATCH_TICK);
  sweep(hub);
}

/* The tick follows the core watch: 1 s while inotify sees every task,
 * faster while some task is watched by the tick alone. */
static void tick_update(live_hub_t *hub) {
  live_watch_t *w = hub->watch;
  int ms = tfs_watch_tick_ms(w->tw);
  if (w->uv && ms != w->uv->tick_ms) {
    w->uv->tick_ms = ms;
    uv_timer_start(&w->uv->tick, on_tick, (uint64_t)ms, (uint64_t)ms);
  }
}

static int uv_side_open(live_hub_t *hub) {
  live_watch_t *w = hub->watch;
  if (w->uv)
    return 0;
  uvside_t *u = calloc(1, sizeof *u);
  if (!u)
    return -ENOMEM;
  uv_timer_init(hub->loop, &u->tick);
  u->tick.data = hub;
  int fd = tfs_watch_fd(w->tw);
  if (fd >= 0 && uv_poll_init(hub->loop, &u->poll, fd) == 0) {
    u->has_poll = 1;
    u->poll.data = hub;
    uv_poll_start(&u->poll, UV_READABLE, on_poll);
  }
  w->uv = u;
  return 0;
}

/* ---- the listeners' tasks --------------------------------------------- */

/* Asks the core watch for what t's live listeners want, or drops t when
 * none is left. */
static void task_update(live_hub_t *hub, watched_t *t) {
  live_watch_t *w = hub->watch;
  unsigned what = 0;
  for (live_listener_t *l = t->listeners; l; l = l->next)
    what |= l->dead ? 0 : l->what;
  if (!t->listeners) {
    tfs_watch_remove(w->tw, t->id);
    for (watched_t **pp = &w->tasks; *pp; pp = &(*pp)->next)
      if (*pp == t) {
        *pp = t->next;
        break;
      }
    free(t);
    return;
  }
  if (what == t->what)
    return;
  t->what = what;
  int err = tfs_watch_add(w->tw, t->id, what);
  if (err == -ENOSPC && !w->said) {
    w->said = 1;
    live_log(hub, LOG_WARNING,
             "the inotify watch limit is reached (fs.inotify.max_user_watches); "
             "tasks beyond it are checked every %d ms",
             tfs_watch_tick_ms(w->tw));
  }
}

/* Unlinks and frees the listeners marked while they were being told. */
static void sweep(live_hub_t *hub) {
  live_watch_t *w = hub->watch;
  if (w->telling || !w->dead)
    return;
  w->dead = 0;
  for (live_listener_t **pp = &w->dir; *pp;) {
    live_listener_t *l = *pp;
    if (l->dead) {
      *pp = l->next;
      free(l);
    } else {
      pp = &l->next;
    }
  }
  for (watched_t *t = w->tasks, *next; t; t = next) {
    next = t->next;
    int any = 0;
    for (live_listener_t **pp = &t->listeners; *pp;) {
      live_listener_t *l = *pp;
      if (l->dead) {
        *pp = l->next;
        free(l);
        any = 1;
      } else {
        pp = &l->next;
      }
    }
    if (any)
      task_update(hub, t);
  }
  if (!w->tasks && !w->dir)
    uv_side_close(w);
  else
    tick_update(hub);
}

live_listener_t *live_watch_add(live_hub_t *hub, const char *id, unsigned what, live_watch_fn fn,
                                void *arg) {
  live_watch_t *w = hub->watch;
  if (!w || uv_side_open(hub))
    return NULL;
  watched_t *t = find(w, id);
  if (!t && (t = calloc(1, sizeof *t))) {
    snprintf(t->id, sizeof t->id, "%s", id);
    t->next = w->tasks;
    w->tasks = t;
  }
  live_listener_t *l = t ? calloc(1, sizeof *l) : NULL;
  if (l) {
    l->task = t;
    l->what = what;
    l->fn = fn;
    l->arg = arg;
    l->next = t->listeners;
    t->listeners = l;
  }
  if (t)
    task_update(hub, t); /* frees t if the listener could not be made */
  if (w->tasks || w->dir)
    tick_update(hub);
  else
    uv_side_close(w);
  return l;
}

live_listener_t *live_watch_tasks(live_hub_t *hub, live_tasks_dir_fn fn, void *arg) {
  live_watch_t *w = hub->watch;
  if (!w || uv_side_open(hub))
    return NULL;
  live_listener_t *l = calloc(1, sizeof *l);
  if (!l) {
    if (!w->tasks && !w->dir)
      uv_side_close(w);
    return NULL;
  }
  l->tfn = fn;
  l->arg = arg;
  l->next = w->dir;
  w->dir = l;
  if (!w->dir_on) {
    /* Asked once: the core watch has no way back, and events nobody
     * listens to cost a read. */
    w->dir_on = 1;
    w->dir_seen = tfs_watch_tasks(w->tw) == 0;
  }
  tick_update(hub);
  return l;
}

int live_watch_sees_tasks(live_hub_t *hub) {
  return hub->watch && hub->watch->dir_seen;
}

void live_watch_remove(live_hub_t *hub, live_listener_t *l) {
  if (!l)
    return;
  l->dead = 1;
  hub->watch->dead = 1;
  sweep(hub);
}

int live_watch_tick_ms(live_hub_t *hub) {
  return hub->watch ? tfs_watch_tick_ms(hub->watch->tw) : 1000;
}

int live_watch_open(live_hub_t *hub) {
  live_watch_t *w = calloc(1, sizeof *w);
  if (!w || tfs_watch_open(hub->store, &w->tw)) {
    free(w);
    return -ENOMEM;
  }
  if (tfs_watch_fd(w->tw) < 0 && !tfs_watch_disabled())
    live_log(hub, LOG_WARNING,
             "no inotify instance is left for this user (fs.inotify.max_user_instances); "
             "what waits for a task is checked every %d ms",
             tfs_watch_tick_ms(w->tw));
  hub->watch = w;
  return 0;
}

void live_watch_close(live_hub_t *hub) {
  live_watch_t *w = hub->watch;
  if (!w)
    return;
  uv_side_close(w);
  while (w->dir) {
    live_listener_t *l = w->dir;
    w->dir = l->next;
    free(l);
  }
  while (w->tasks) {
    watched_t *t = w->tasks;
    w->tasks = t->next;
    while (t->listeners) {
      live_listener_t *l = t->listeners;
      t->listeners = l->next;
      free(l);
    }
    free(t);
  }
  tfs_watch_close(w->tw);
  free(w);
  hub->watch = NULL;
}
