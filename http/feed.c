/* Feeds: what the HTTP faces stream from the store as it changes, on the
 * server's loop. Two kinds, both riding on the MCP server's one watch of
 * the store (mcp_watch_add, mcp_watch_tasks: one tfs_watch_t under a
 * uv_poll, one tick at tfs_watch_tick_ms), never on a watch of their own:
 *
 * - A follow (http_follow_*, follow.c): one task's transcript from a byte
 *   offset, line by line as it is written, its record whenever its state
 *   changes, and the end. The transcript stream of the JSON API and A2A's
 *   SubscribeToTask are follows.
 *
 * - The task feed (http_tasks_*, here): every task that appears, changes state
 *   or goes away, for /api/events. While it has subscribers it keeps the
 *   ids of the store and the state of every task that has not ended (only
 *   those can change); each of those is listened to on the watch, tasks/
 *   itself too. The tick re-reads them (a supervisor that died changes no
 *   file: its task reads lost), and lists tasks/ again when inotify does
 *   not see it. A running task's counters that moved are told as progress,
 *   paced per task (progress.c).
 *
 * Callbacks may stop their own follow or subscription (a stream dropped
 * while it was written to): a stop only marks it, and what is marked is
 * freed on the next loop turn, never under a caller's feet. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http/feed.h"
#include "http/progress.h"

typedef struct feed_id {
  char id[TFS_ID_MAX + 1];
} feed_id_t;

/* A task that has not ended, as the task feed last read it. */
typedef struct live {
  struct live *next;
  http_feed_t *feed;
  char id[TFS_ID_MAX + 1];
  int state; /* -1: no record read yet (a task being created) */
  mcp_listener_t *l;
  int dead;
  http_pace_t pace; /* its progress events (progress.c) */
} live_t;

struct http_task_sub {
  http_task_sub_t *next;
  http_tasks_fn fn;
  void *arg;
  int dead;
};

tfs_store_t *http_feed_store(http_feed_t *fd) {
  return mcp_server_store(fd->srv->mcp);
}

static void on_soon(uv_timer_t *t);

void http_feed_soon(http_feed_t *fd) {
  if (!uv_is_active((uv_handle_t *)&fd->soon))
    uv_timer_start(&fd->soon, on_soon, 0, 0);
}

/* ---- the task feed ----------------------------------------------------- */

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Where id is in the sorted ids, or where it would go; *found says which. */
static size_t id_find(http_feed_t *fd, const char *id, int *found) {
  size_t lo = 0, hi = fd->nids;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(fd->ids[mid].id, id);
    if (!c) {
      *found = 1;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = 0;
  return lo;
}

static int id_insert(http_feed_t *fd, const char *id) {
  int found;
  size_t at = id_find(fd, id, &found);
  if (found)
    return 0;
  if (fd->nids == fd->capids) {
    size_t cap = fd->capids ? fd->capids * 2 : 256;
    feed_id_t *n = realloc(fd->ids, cap * sizeof *n);
    if (!n)
      return -ENOMEM;
    fd->ids = n;
    fd->capids = cap;
  }
  memmove(fd->ids + at + 1, fd->ids + at, (fd->nids - at) * sizeof *fd->ids);
  snprintf(fd->ids[at].id, sizeof fd->ids[at].id, "%s", id);
  fd->nids++;
  return 1;
}

static int id_delete(http_feed_t *fd, const char *id) {
  int found;
  size_t at = id_find(fd, id, &found);
  if (!found)
    return 0;
  memmove(fd->ids + at, fd->ids + at + 1, (fd->nids - at - 1) * sizeof *fd->ids);
  fd->nids--;
  return 1;
}

/* Subscribers get (id, rec, json) for a record, (id, NULL, json) for a
 * progress event, (id, NULL, NULL) for a task gone; json is freed. */
static void tell_json(http_feed_t *fd, const char *id, const tfs_record_t *rec, char *json) {
  fd->telling++;
  for (http_task_sub_t *s = fd->subs; s; s = s->next)
    if (!s->dead)
      s->fn(s->arg, id, rec, json);
  fd->telling--;
  free(json);
}

static void tell_subs(http_feed_t *fd, const char *id, const tfs_record_t *rec) {
  char *json = rec ? tfs_record_dump(rec) : NULL;
  if (!rec || json)
    tell_json(fd, id, rec, json);
}

/* A progress event (NULL: none to tell). */
static void tell_progress(http_feed_t *fd, const char *id, char *json) {
  if (json)
    tell_json(fd, id, NULL, json);
}

static void live_drop(live_t *lv) {
  if (lv->dead)
    return;
  lv->dead = 1;
  http_pace_drop(lv->feed->pacer, &lv->pace);
  mcp_watch_remove(lv->feed->srv->mcp, lv->l);
  lv->l = NULL;
  http_feed_soon(lv->feed);
}

static live_t *live_find(http_feed_t *fd, const char *id) {
  for (live_t *lv = fd->live; lv; lv = lv->next)
    if (!lv->dead && !strcmp(lv->id, id))
      return lv;
  return NULL;
}

static void gone_task(http_feed_t *fd, const char *id);

/* Reads a task that has not ended again: a state it had not is told
 * (after the progress it made since the last told: an end flushes it),
 * and an end makes it one that never changes again; counters that moved
 * are told as progress, paced (progress.c). */
static void live_look(live_t *lv) {
  if (lv->dead)
    return;
  http_feed_t *fd = lv->feed;
  tfs_record_t rec;
  struct stat st;
  int err = tfs_task_ended(http_feed_store(fd), lv->id, &rec);
  if (err == TFS_ENOTASK) {
    char id[TFS_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", lv->id);
    if (tfs_task_stat(http_feed_store(fd), id, &st))
      gone_task(fd, id);
    else
      live_drop(lv); /* a directory that never got a record: no task to tell of */
  } else if (err >= 0 && (int)rec.state != lv->state) {
    if (lv->state < 0)
      http_pace_init(&lv->pace, &rec, tfs_now_ms());
    else
      tell_progress(fd, lv->id, http_pace_flush(fd->pacer, &lv->pace, &rec));
    lv->state = (int)rec.state;
    if (tfs_state_terminal(rec.state))
      live_drop(lv);
    tell_subs(fd, lv->id, &rec);
  } else if (err == 0) {
    tell_progress(fd, lv->id, http_pace_look(fd->pacer, &lv->pace, &rec));
  }
  tfs_record_free(&rec);
}

static void on_live_watch(void *arg, unsigned what) {
  live_look(arg);
}

static void on_pace_over(http_pace_t *pc) {
  live_look((live_t *)((char *)pc - offsetof(live_t, pace)));
}

static live_t *live_add(http_feed_t *fd, const char *id, int state) {
  live_t *lv = calloc(1, sizeof *lv);
  if (!lv)
    return NULL;
  lv->feed = fd;
  snprintf(lv->id, sizeof lv->id, "%s", id);
  lv->state = state;
  lv->l = mcp_watch_add(fd->srv->mcp, id, TFS_WATCH_STATE, on_live_watch, lv);
  lv->next = fd->live;
  fd->live = lv;
  return lv;
}

/* A task appeared: known from now, and told once its record reads. */
static void new_task(http_feed_t *fd, const char *id) {
  if (id_insert(fd, id) != 1)
    return;
  live_t *lv = live_add(fd, id, -1);
  if (lv)
    live_look(lv);
}

static void gone_task(http_feed_t *fd, const char *id) {
  live_t *lv = live_find(fd, id);
  if (lv)
    live_drop(lv);
  if (id_delete(fd, id) != 1)
    return;
  tell_subs(fd, id, NULL);
}

/* tasks/ again, for what no event named: ids that came and went. */
static void rescan(http_feed_t *fd) {
  char **ids = NULL;
  size_t n = 0;
  if (tfs_task_ids(http_feed_store(fd), &ids, &n))
    return;
  qsort(ids, n, sizeof *ids, str_cmp);
  /* What is known and no longer there (both lists are sorted). */
  char(*gone)[TFS_ID_MAX + 1] = NULL;
  size_t ngone = 0;
  for (size_t i = 0, j = 0; i < fd->nids; i++) {
    while (j < n && strcmp(ids[j], fd->ids[i].id) < 0)
      j++;
    if (j < n && !strcmp(ids[j], fd->ids[i].id))
      continue;
    void *g = realloc(gone, (ngone + 1) * sizeof *gone);
    if (!g)
      break;
    gone = g;
    snprintf(gone[ngone++], TFS_ID_MAX + 1, "%s", fd->ids[i].id);
  }
  for (size_t i = 0; i < ngone; i++)
    gone_task(fd, gone[i]);
  free(gone);
  for (size_t i = 0; i < n; i++)
    if (tfs_id_valid(ids[i]))
      new_task(fd, ids[i]);
  tfs_ids_free(ids, n);
}

static void on_dir_watch(void *arg, const char *id, unsigned what) {
  http_feed_t *fd = arg;
  if (!fd->subs)
    return;
  if (what == MCP_WATCH_TICK) {
    if (!mcp_watch_sees_tasks(fd->srv->mcp))
      rescan(fd);
  } else if (!id) {
    rescan(fd);
  } else if (what & TFS_WATCH_CREATED) {
    new_task(fd, id);
  } else if (what & TFS_WATCH_DELETED) {
    gone_task(fd, id);
  }
}

static int on_listed_live(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  live_t *lv = live_add(arg, rec->id, (int)rec->state);
  if (lv)
    http_pace_init(&lv->pace, rec, 0);
  return 0;
}

/* The task feed starts: tasks/ is listened to first (nothing made
 * meanwhile is missed), then its ids are read, and the tasks that have
 * not ended are listened to. */
static int tasks_open(http_feed_t *fd) {
  fd->dirl = mcp_watch_tasks(fd->srv->mcp, on_dir_watch, fd);
  fd->pacer = http_pacer_open(fd->srv, on_pace_over);
  if (!fd->dirl)
    return -ENOMEM;
  char **ids = NULL;
  size_t n = 0;
  int err = tfs_task_ids(http_feed_store(fd), &ids, &n);
  if (err && err != -ENOENT)
    return err;
  qsort(ids, n, sizeof *ids, str_cmp);
  for (size_t i = 0; i < n; i++)
    if (tfs_id_valid(ids[i]) && id_insert(fd, ids[i]) < 0) {
      tfs_ids_free(ids, n);
      return -ENOMEM;
    }
  tfs_ids_free(ids, n);
  tfs_list_opts_t o = {.states = TFS_STATE_BIT(TFS_QUEUED) | TFS_STATE_BIT(TFS_RUNNING) |
                                 TFS_STATE_BIT(TFS_PAUSED)};
  return tfs_task_list_opts(http_feed_store(fd), &o, on_listed_live, fd, NULL);
}

static void tasks_close(http_feed_t *fd) {
  mcp_watch_remove(fd->srv->mcp, fd->dirl);
  fd->dirl = NULL;
  for (live_t *lv = fd->live; lv; lv = lv->next)
    live_drop(lv);
  http_pacer_close(fd->pacer);
  fd->pacer = NULL;
  free(fd->ids);
  fd->ids = NULL;
  fd->nids = fd->capids = 0;
}

int http_tasks_subscribe(http_server_t *srv, http_tasks_fn fn, void *arg, http_task_sub_t **out) {
  *out = NULL;
  http_feed_t *fd = http_feed_get(srv);
  if (!fd)
    return -ENOMEM;
  int first = !fd->dirl;
  if (first) {
    int err = tasks_open(fd);
    if (err) {
      tasks_close(fd);
      return err;
    }
  }
  http_task_sub_t *s = calloc(1, sizeof *s);
  if (!s) {
    if (first && !fd->subs)
      tasks_close(fd);
    return -ENOMEM;
  }
  s->fn = fn;
  s->arg = arg;
  s->next = fd->subs;
  fd->subs = s;
  *out = s;
  return 0;
}

void http_tasks_unsubscribe(http_server_t *srv, http_task_sub_t *s) {
  if (!s || s->dead)
    return;
  s->dead = 1;
  http_feed_soon(srv->feed);
}

/* ---- the feed's life ----------------------------------------------------- */

/* What was stopped is freed; the task feed ends with its last
 * subscriber. */
static void sweep(http_feed_t *fd) {
  http_follows_sweep(fd);
  if (fd->telling)
    return;
  for (http_task_sub_t **pp = &fd->subs; *pp;) {
    http_task_sub_t *s = *pp;
    if (s->dead) {
      *pp = s->next;
      free(s);
    } else {
      pp = &s->next;
    }
  }
  if (!fd->subs && fd->dirl)
    tasks_close(fd);
  for (live_t **pp = &fd->live; *pp;) {
    live_t *lv = *pp;
    if (lv->dead) {
      *pp = lv->next;
      free(lv);
    } else {
      pp = &lv->next;
    }
  }
}

static void on_soon(uv_timer_t *t) {
  http_feed_t *fd = t->data;
  http_follows_look(fd);
  sweep(fd);
}

http_feed_t *http_feed_get(http_server_t *srv) {
  if (srv->feed)
    return srv->feed;
  http_feed_t *fd = calloc(1, sizeof *fd);
  if (!fd)
    return NULL;
  fd->srv = srv;
  uv_timer_init(srv->loop, &fd->soon);
  fd->soon.data = fd;
  srv->handles++;
  srv->feed = fd;
  return fd;
}

void http_feed_stop(http_server_t *srv) {
  http_feed_t *fd = srv->feed;
  if (!fd)
    return;
  http_follows_end(fd);
  fd->telling++;
  for (http_task_sub_t *s = fd->subs; s; s = s->next)
    if (!s->dead) {
      s->dead = 1;
      s->fn(s->arg, NULL, NULL, NULL);
    }
  fd->telling--;
  http_feed_soon(fd);
}

static void on_feed_closed(uv_handle_t *h) {
  http_feed_t *fd = h->data;
  http_server_t *srv = fd->srv;
  free(fd);
  http_handle_closed(srv);
}

void http_feed_close(http_server_t *srv) {
  http_feed_t *fd = srv->feed;
  if (!fd)
    return;
  http_follows_let_go(fd);
  for (http_task_sub_t *s = fd->subs; s; s = s->next)
    s->dead = 1;
  fd->telling = 0;
  sweep(fd);
  srv->feed = NULL;
  uv_close((uv_handle_t *)&fd->soon, on_feed_closed);
}
