/* Feeds: what the faces stream from the store as it changes, on the
 * hub's loop. Two kinds, both riding on the hub's one watch of the store
 * (live_watch_add, live_watch_tasks: one tfs_watch_t under a uv_poll, one
 * tick at tfs_watch_tick_ms), never on a watch of their own:
 *
 * - A follow (live_follow_*, follow.c): one task's transcript from a byte
 *   offset, line by line as it is written, its record whenever its state
 *   changes, and the end. The transcript stream of the JSON API and A2A's
 *   SubscribeToTask are follows.
 *
 * - The task feed (live_tasks_*, here): every task that appears, changes state
 *   or goes away, for /api/events. While it has subscribers it keeps the
 *   ids of the store and the state of every task that has not ended (only
 *   those can change); each of those is listened to on the watch, tasks/
 *   itself too. The tick re-reads them (a supervisor that died changes no
 *   file: its task reads lost), and lists tasks/ again when inotify does
 *   not see it. A running task's counters that moved are told as progress,
 *   paced per task (live/progress.c).
 *
 * A feed (live_feed_t) is one face's set of them, so that the face ends
 * its own at its stop. Callbacks may stop their own follow or
 * subscription (a stream dropped while it was written to): a stop only
 * marks it, and what is marked is freed on the next loop turn, never
 * under a caller's feet. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "live/feed.h"
#include "live/progress.h"
#include "taskfs/buf.h"

typedef struct feed_id {
  char id[TFS_ID_MAX + 1];
} feed_id_t;

/* A task that has not ended, as the task feed last read it. */
typedef struct live {
  struct live *next;
  live_feed_t *feed;
  char id[TFS_ID_MAX + 1];
  int state; /* -1: no record read yet (a task being created) */
  live_listener_t *l;
  int dead;
  live_pace_t pace; /* its progress events (live/progress.c) */
} live_t;

struct live_task_sub {
  live_task_sub_t *next;
  live_tasks_fn fn;
  void *arg;
  int dead;
};

tfs_store_t *live_feed_store(live_feed_t *fd) {
  return live_store(fd->hub);
}

static void on_soon(uv_timer_t *t);

void live_feed_soon(live_feed_t *fd) {
  if (!uv_is_active((uv_handle_t *)&fd->soon))
    uv_timer_start(&fd->soon, on_soon, 0, 0);
}

/* ---- the task feed ----------------------------------------------------- */

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Where id is in the sorted ids, or where it would go; *found says which. */
static size_t id_find(live_feed_t *fd, const char *id, int *found) {
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

static int id_insert(live_feed_t *fd, const char *id) {
  int found;
  size_t at = id_find(fd, id, &found);
  if (found)
    return 0;
  if (tfs_grow(&fd->ids, &fd->capids, fd->nids + 1, sizeof *fd->ids, 256))
    return -ENOMEM;
  memmove(fd->ids + at + 1, fd->ids + at, (fd->nids - at) * sizeof *fd->ids);
  snprintf(fd->ids[at].id, sizeof fd->ids[at].id, "%s", id);
  fd->nids++;
  return 1;
}

static int id_delete(live_feed_t *fd, const char *id) {
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
static void tell_json(live_feed_t *fd, const char *id, const tfs_record_t *rec, char *json) {
  fd->telling++;
  for (live_task_sub_t *s = fd->subs; s; s = s->next)
    if (!s->dead)
      s->fn(s->arg, id, rec, json);
  fd->telling--;
  free(json);
}

static void tell_subs(live_feed_t *fd, const char *id, const tfs_record_t *rec) {
  char *json = rec ? tfs_record_dump(rec) : NULL;
  if (!rec || json)
    tell_json(fd, id, rec, json);
}

/* A progress event (NULL: none to tell). */
static void tell_progress(live_feed_t *fd, const char *id, char *json) {
  if (json)
    tell_json(fd, id, NULL, json);
}

static void live_drop(live_t *lv) {
  if (lv->dead)
    return;
  lv->dead = 1;
  live_pace_drop(lv->feed->pacer, &lv->pace);
  live_watch_remove(lv->feed->hub, lv->l);
  lv->l = NULL;
  live_feed_soon(lv->feed);
}

static live_t *live_find(live_feed_t *fd, const char *id) {
  for (live_t *lv = fd->live; lv; lv = lv->next)
    if (!lv->dead && !strcmp(lv->id, id))
      return lv;
  return NULL;
}

static void gone_task(live_feed_t *fd, const char *id);

/* Reads a task that has not ended again: a state it had not is told
 * (after the progress it made since the last told: an end flushes it),
 * and an end makes it one that never changes again; counters that moved
 * are told as progress, paced (live/progress.c). */
static void live_look(live_t *lv) {
  if (lv->dead)
    return;
  live_feed_t *fd = lv->feed;
  tfs_record_t rec;
  struct stat st;
  int err = tfs_task_ended(live_feed_store(fd), lv->id, &rec);
  if (err == TFS_ENOTASK) {
    char id[TFS_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", lv->id);
    if (tfs_task_stat(live_feed_store(fd), id, &st))
      gone_task(fd, id);
    else
      live_drop(lv); /* a directory that never got a record: no task to tell of */
  } else if (err >= 0 && (int)rec.state != lv->state) {
    if (lv->state < 0)
      live_pace_init(&lv->pace, &rec, tfs_now_ms());
    else
      tell_progress(fd, lv->id, live_pace_flush(fd->pacer, &lv->pace, &rec));
    lv->state = (int)rec.state;
    if (tfs_state_terminal(rec.state))
      live_drop(lv);
    tell_subs(fd, lv->id, &rec);
  } else if (err == 0) {
    tell_progress(fd, lv->id, live_pace_look(fd->pacer, &lv->pace, &rec));
  }
  tfs_record_free(&rec);
}

static void on_live_watch(void *arg, unsigned what) {
  live_look(arg);
}

static void on_pace_over(live_pace_t *pc) {
  live_look((live_t *)((char *)pc - offsetof(live_t, pace)));
}

static live_t *live_add(live_feed_t *fd, const char *id, int state) {
  live_t *lv = calloc(1, sizeof *lv);
  if (!lv)
    return NULL;
  lv->feed = fd;
  snprintf(lv->id, sizeof lv->id, "%s", id);
  lv->state = state;
  lv->l = live_watch_add(fd->hub, id, TFS_WATCH_STATE, on_live_watch, lv);
  lv->next = fd->live;
  fd->live = lv;
  return lv;
}

/* A task appeared: known from now, and told once its record reads. */
static void new_task(live_feed_t *fd, const char *id) {
  if (id_insert(fd, id) != 1)
    return;
  live_t *lv = live_add(fd, id, -1);
  if (lv)
    live_look(lv);
}

static void gone_task(live_feed_t *fd, const char *id) {
  live_t *lv = live_find(fd, id);
  if (lv)
    live_drop(lv);
  if (id_delete(fd, id) != 1)
    return;
  tell_subs(fd, id, NULL);
}

/* tasks/ again, for what no event named: ids that came and went. */
static void rescan(live_feed_t *fd) {
  char **ids = NULL;
  size_t n = 0;
  if (tfs_task_ids(live_feed_store(fd), &ids, &n))
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
  live_feed_t *fd = arg;
  if (!fd->subs)
    return;
  if (what == LIVE_WATCH_TICK) {
    if (!live_watch_sees_tasks(fd->hub))
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
    live_pace_init(&lv->pace, rec, 0);
  return 0;
}

/* The task feed starts: tasks/ is listened to first (nothing made
 * meanwhile is missed), then its ids are read, and the tasks that have
 * not ended are listened to. */
static int tasks_open(live_feed_t *fd) {
  fd->dirl = live_watch_tasks(fd->hub, on_dir_watch, fd);
  fd->pacer = live_pacer_open(live_loop(fd->hub), on_pace_over);
  if (!fd->dirl)
    return -ENOMEM;
  char **ids = NULL;
  size_t n = 0;
  int err = tfs_task_ids(live_feed_store(fd), &ids, &n);
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
  return tfs_task_list_opts(live_feed_store(fd), &o, on_listed_live, fd, NULL);
}

static void tasks_close(live_feed_t *fd) {
  live_watch_remove(fd->hub, fd->dirl);
  fd->dirl = NULL;
  for (live_t *lv = fd->live; lv; lv = lv->next)
    live_drop(lv);
  live_pacer_close(fd->pacer);
  fd->pacer = NULL;
  free(fd->ids);
  fd->ids = NULL;
  fd->nids = fd->capids = 0;
}

int live_tasks_subscribe(live_feed_t *fd, live_tasks_fn fn, void *arg, live_task_sub_t **out) {
  *out = NULL;
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
  live_task_sub_t *s = calloc(1, sizeof *s);
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

void live_tasks_unsubscribe(live_feed_t *fd, live_task_sub_t *s) {
  if (!s || s->dead)
    return;
  s->dead = 1;
  live_feed_soon(fd);
}

/* ---- the feed's life ----------------------------------------------------- */

/* What was stopped is freed; the task feed ends with its last
 * subscriber. */
static void sweep(live_feed_t *fd) {
  live_follows_sweep(fd);
  if (fd->telling)
    return;
  for (live_task_sub_t **pp = &fd->subs; *pp;) {
    live_task_sub_t *s = *pp;
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
  live_feed_t *fd = t->data;
  live_follows_look(fd);
  sweep(fd);
}

live_feed_t *live_feed_open(live_hub_t *hub) {
  live_feed_t *fd = calloc(1, sizeof *fd);
  if (!fd)
    return NULL;
  fd->hub = hub;
  uv_timer_init(hub->loop, &fd->soon);
  fd->soon.data = fd;
  return fd;
}

void live_feed_stop(live_feed_t *fd) {
  if (!fd)
    return;
  live_follows_end(fd);
  fd->telling++;
  for (live_task_sub_t *s = fd->subs; s; s = s->next)
    if (!s->dead) {
      s->dead = 1;
      s->fn(s->arg, NULL, NULL, NULL);
    }
  fd->telling--;
  live_feed_soon(fd);
}

static void on_feed_closed(uv_handle_t *h) {
  free(h->data);
}

void live_feed_close(live_feed_t *fd) {
  if (!fd)
    return;
  live_follows_let_go(fd);
  for (live_task_sub_t *s = fd->subs; s; s = s->next)
    s->dead = 1;
  fd->telling = 0;
  sweep(fd);
  uv_close((uv_handle_t *)&fd->soon, on_feed_closed);
}
