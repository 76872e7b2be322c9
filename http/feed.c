/* Feeds: what the HTTP faces stream from the store as it changes, on the
 * server's loop. Two kinds, both riding on the MCP server's one watch of
 * the store (mcp_watch_add, mcp_watch_tasks: one tfs_watch_t under a
 * uv_poll, one tick at tfs_watch_tick_ms), never on a watch of their own:
 *
 * - A follow (http_follow_*): one task's transcript from a byte offset,
 *   line by line as it is written (core's tfs_follower_*), its record
 *   whenever its state changes, and the end once the task has ended and
 *   every byte is handed out. The transcript stream of the JSON API and
 *   A2A's SubscribeToTask are follows. A consumer that cannot take more
 *   says so from its line callback and calls http_follow_resume() when it
 *   can: a follow reads no more than its consumer takes, so catching up
 *   on a 1 GB transcript never sits in memory. One look hands out at most
 *   FOLLOW_BUDGET bytes, then the loop turns before the next. The open
 *   itself runs on the loop's thread pool (follow_open_t): it counts the
 *   lines before the start, a read of every byte up to there, which on
 *   the loop would hold up every request of the server.
 *
 * - The task feed (http_tasks_*): every task that appears, changes state
 *   or goes away, for /api/events. While it has subscribers it keeps the
 *   ids of the store and the state of every task that has not ended (only
 *   those can change); each of those is listened to on the watch, tasks/
 *   itself too. The tick re-reads them (a supervisor that died changes no
 *   file: its task reads lost), and lists tasks/ again when inotify does
 *   not see it.
 *
 * Callbacks may stop their own follow or subscription (a stream dropped
 * while it was written to): a stop only marks it, and what is marked is
 * freed on the next loop turn, never under a caller's feet. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/internal.h"

#define FOLLOW_BUDGET (1u << 20) /* bytes one look hands out before the loop turns */

typedef struct follow_open follow_open_t;

struct http_follow {
  http_follow_t *next;
  http_feed_t *feed;
  char id[TFS_ID_MAX + 1];
  off_t from;             /* where it was asked to start */
  tfs_follower_t *f;      /* NULL until the open is done */
  follow_open_t *opening; /* the open on the thread pool, while it runs */
  mcp_listener_t *l;
  const http_follow_ops_t *ops;
  void *arg;
  int last_state; /* -1 before the first look */
  int busy;       /* a look is under way */
  int dead;       /* stopped or ended: no callback any more */
  int paused;     /* the consumer is full: no reading until it resumes */
  int want;       /* a look is due on the next loop turn */
  int cut;        /* the last look stopped before the end of what was there */
  size_t spent;   /* bytes handed out in this look */
};

typedef struct {
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
} live_t;

struct http_task_sub {
  http_task_sub_t *next;
  http_tasks_fn fn;
  void *arg;
  int dead;
};

struct http_feed {
  http_server_t *srv;
  uv_timer_t soon; /* looks due, and the sweep of what was stopped */
  http_follow_t *follows;
  int opens; /* follows being opened on the thread pool */
  /* the task feed */
  http_task_sub_t *subs;
  mcp_listener_t *dirl;
  feed_id_t *ids; /* every task id, sorted */
  size_t nids, capids;
  live_t *live;
  int telling;
};

static tfs_store_t *store_of(http_feed_t *fd) {
  return mcp_server_store(fd->srv->mcp);
}

static void on_soon(uv_timer_t *t);

static void soon(http_feed_t *fd) {
  if (!uv_is_active((uv_handle_t *)&fd->soon))
    uv_timer_start(&fd->soon, on_soon, 0, 0);
}

/* ---- follows --------------------------------------------------------- */

static int on_line(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  http_follow_t *fl = arg;
  if (fl->dead)
    return 1;
  fl->spent += len + 1;
  if (fl->ops->line(fl->arg, lineno, tfs_follower_line_end(fl->f), line, len, partial))
    fl->paused = 1;
  if (fl->dead || fl->paused || fl->spent >= FOLLOW_BUDGET) {
    fl->cut = 1;
    return 1;
  }
  return 0;
}

static void follow_finish(http_follow_t *fl, const tfs_record_t *rec, int err) {
  char *json = rec ? tfs_record_dump(rec) : NULL;
  fl->dead = 1;
  fl->ops->end(fl->arg, rec, json, err);
  free(json);
  mcp_watch_remove(fl->feed->srv->mcp, fl->l);
  fl->l = NULL;
  soon(fl->feed); /* the sweep */
}

/* One look: the record (has the task ended?), the lines written since the
 * last look (a final partial line too once it has ended), the record to
 * the consumer if its state changed, and the end when all is handed out. */
static void follow_look(http_follow_t *fl) {
  if (fl->dead || fl->busy || fl->paused || !fl->f)
    return;
  fl->busy = 1;
  fl->want = 0;
  tfs_record_t rec;
  int ended = tfs_task_ended(store_of(fl->feed), fl->id, &rec);
  if (ended == -EAGAIN)
    ended = -1; /* no record yet: lines only */
  else if (ended < 0) {
    follow_finish(fl, NULL, ended); /* gone, or its record unreadable */
    goto out;
  }
  fl->cut = 0;
  fl->spent = 0;
  int64_t n = tfs_follower_next(fl->f, ended == 1, on_line, fl);
  if (fl->dead)
    goto out;
  if (n < 0 && n != TFS_ENOTASK) {
    follow_finish(fl, ended >= 0 ? &rec : NULL, (int)n);
    goto out;
  }
  if (ended >= 0 && (int)rec.state != fl->last_state) {
    fl->last_state = (int)rec.state;
    char *json = tfs_record_dump(&rec);
    if (json)
      fl->ops->state(fl->arg, &rec, json);
    free(json);
    if (fl->dead)
      goto out;
  }
  if (fl->cut) {
    if (!fl->paused) {
      fl->want = 1; /* the budget: more on the next turn */
      soon(fl->feed);
    }
  } else if (ended == 1) {
    follow_finish(fl, &rec, 0);
  }
out:
  tfs_record_free(&rec);
  fl->busy = 0;
}

static void on_follow_watch(void *arg, unsigned what) {
  follow_look(arg);
}

/* A follow's open, on the loop's thread pool with a store handle of its
 * own (the loop may refresh its handle meanwhile, which a thread must not
 * see). Done, the follower goes on with the loop's handle. fl is NULL
 * once the feed let go of the follow (http_feed_close): the job then
 * touches nothing but itself. */
struct follow_open {
  uv_work_t work;
  http_follow_t *fl;
  tfs_store_t *store;
  char id[TFS_ID_MAX + 1];
  off_t from;
  tfs_follower_t *f;
  int err;
};

static void open_work(uv_work_t *w) {
  follow_open_t *job = w->data;
  job->err = tfs_follower_open_at(job->store, job->id, job->from, &job->f);
}

/* On the loop again: the follow gets its follower and its first look, or
 * ends with the open's error (the task went away since the start); one
 * stopped meanwhile is swept. */
static void open_done(uv_work_t *w, int status) {
  follow_open_t *job = w->data;
  http_follow_t *fl = job->fl;
  if (status && !job->err)
    job->err = status;
  if (fl) {
    fl->opening = NULL;
    fl->feed->opens--;
    if (!fl->dead && !job->err) {
      tfs_follower_rebind(job->f, store_of(fl->feed));
      fl->f = job->f;
      job->f = NULL;
      fl->want = 1;
    } else if (!fl->dead) {
      follow_finish(fl, NULL, job->err);
    }
    soon(fl->feed);
  }
  tfs_follower_close(job->f);
  tfs_store_close(job->store);
  free(job);
}

/* What the open would refuse at once (a bad id, no such task, a
 * transcript that is no regular file) is refused here, so that the
 * caller can answer with an error before it starts a stream; the open
 * itself (the count of the lines before from) goes to the thread pool. */
int http_follow_start(http_server_t *srv, const char *id, off_t from, const http_follow_ops_t *ops,
                      void *arg, http_follow_t **out) {
  *out = NULL;
  http_feed_t *fd = http_feed_get(srv);
  if (!fd)
    return -ENOMEM;
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  if (from < 0)
    return -EINVAL;
  int tf = tfs_task_file_open(store_of(fd), id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
  if (tf < 0 && tf != -ENOENT)
    return tf;
  if (tf >= 0)
    close(tf);
  http_follow_t *fl = calloc(1, sizeof *fl);
  follow_open_t *job = calloc(1, sizeof *job);
  int err = fl && job ? tfs_store_reopen(store_of(fd), &job->store) : -ENOMEM;
  if (err) {
    free(job);
    free(fl);
    return err;
  }
  snprintf(fl->id, sizeof fl->id, "%s", id);
  fl->feed = fd;
  fl->from = from;
  fl->ops = ops;
  fl->arg = arg;
  fl->last_state = -1;
  /* Without a listener (no memory) the follow would hear nothing: refuse. */
  fl->l = mcp_watch_add(srv->mcp, id, TFS_WATCH_STATE | TFS_WATCH_OUTPUT, on_follow_watch, fl);
  if (!fl->l) {
    tfs_store_close(job->store);
    free(job);
    free(fl);
    return -ENOMEM;
  }
  snprintf(job->id, sizeof job->id, "%s", id);
  job->from = from;
  job->fl = fl;
  job->work.data = job;
  /* uv_queue_work fails only for arguments that are wrong. */
  if ((err = uv_queue_work(srv->loop, &job->work, open_work, open_done))) {
    mcp_watch_remove(srv->mcp, fl->l);
    tfs_store_close(job->store);
    free(job);
    free(fl);
    return err;
  }
  fl->opening = job;
  fd->opens++;
  fl->next = fd->follows;
  fd->follows = fl;
  *out = fl;
  return 0;
}

off_t http_follow_offset(const http_follow_t *fl) {
  return fl->f ? tfs_follower_line_end(fl->f) : fl->from;
}

void http_follow_resume(http_follow_t *fl) {
  if (!fl || fl->dead || !fl->paused)
    return;
  fl->paused = 0;
  fl->want = 1;
  soon(fl->feed);
}

void http_follow_stop(http_follow_t *fl) {
  if (!fl || fl->dead)
    return;
  fl->dead = 1;
  mcp_watch_remove(fl->feed->srv->mcp, fl->l);
  fl->l = NULL;
  soon(fl->feed);
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

static void tell_subs(http_feed_t *fd, const char *id, const tfs_record_t *rec) {
  char *json = rec ? tfs_record_dump(rec) : NULL;
  if (rec && !json)
    return;
  fd->telling++;
  for (http_task_sub_t *s = fd->subs; s; s = s->next)
    if (!s->dead)
      s->fn(s->arg, id, rec, json);
  fd->telling--;
  free(json);
}

static void live_drop(live_t *lv) {
  if (lv->dead)
    return;
  lv->dead = 1;
  mcp_watch_remove(lv->feed->srv->mcp, lv->l);
  lv->l = NULL;
  soon(lv->feed);
}

static live_t *live_find(http_feed_t *fd, const char *id) {
  for (live_t *lv = fd->live; lv; lv = lv->next)
    if (!lv->dead && !strcmp(lv->id, id))
      return lv;
  return NULL;
}

static void gone_task(http_feed_t *fd, const char *id);

/* Reads a task that has not ended again: a state it had not is told,
 * and an end makes it one that never changes again. */
static void live_look(live_t *lv) {
  if (lv->dead)
    return;
  http_feed_t *fd = lv->feed;
  tfs_record_t rec;
  struct stat st;
  int err = tfs_task_ended(store_of(fd), lv->id, &rec);
  if (err == TFS_ENOTASK) {
    char id[TFS_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", lv->id);
    if (tfs_task_stat(store_of(fd), id, &st))
      gone_task(fd, id);
    else
      live_drop(lv); /* a directory that never got a record: no task to tell of */
  } else if (err >= 0 && (int)rec.state != lv->state) {
    lv->state = (int)rec.state;
    if (tfs_state_terminal(rec.state))
      live_drop(lv);
    tell_subs(fd, lv->id, &rec);
  }
  tfs_record_free(&rec);
}

static void on_live_watch(void *arg, unsigned what) {
  live_look(arg);
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
  if (tfs_task_ids(store_of(fd), &ids, &n))
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
  live_add(arg, rec->id, (int)rec->state);
  return 0;
}

/* The task feed starts: tasks/ is listened to first (nothing made
 * meanwhile is missed), then its ids are read, and the tasks that have
 * not ended are listened to. */
static int tasks_open(http_feed_t *fd) {
  fd->dirl = mcp_watch_tasks(fd->srv->mcp, on_dir_watch, fd);
  if (!fd->dirl)
    return -ENOMEM;
  char **ids = NULL;
  size_t n = 0;
  int err = tfs_task_ids(store_of(fd), &ids, &n);
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
  return tfs_task_list_opts(store_of(fd), &o, on_listed_live, fd, NULL);
}

static void tasks_close(http_feed_t *fd) {
  mcp_watch_remove(fd->srv->mcp, fd->dirl);
  fd->dirl = NULL;
  for (live_t *lv = fd->live; lv; lv = lv->next)
    live_drop(lv);
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
  soon(srv->feed);
}

/* ---- the feed's life ----------------------------------------------------- */

/* What was stopped is freed; the task feed ends with its last
 * subscriber. */
static void sweep(http_feed_t *fd) {
  for (http_follow_t **pp = &fd->follows; *pp;) {
    http_follow_t *fl = *pp;
    if (fl->dead && !fl->busy && !fl->opening) {
      *pp = fl->next;
      tfs_follower_close(fl->f);
      free(fl);
    } else {
      pp = &fl->next;
    }
  }
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
  for (http_follow_t *fl = fd->follows; fl; fl = fl->next)
    if (fl->want)
      follow_look(fl);
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
  for (http_follow_t *fl = fd->follows; fl; fl = fl->next)
    if (!fl->dead)
      follow_finish(fl, NULL, -ESHUTDOWN);
  fd->telling++;
  for (http_task_sub_t *s = fd->subs; s; s = s->next)
    if (!s->dead) {
      s->dead = 1;
      s->fn(s->arg, NULL, NULL, NULL);
    }
  fd->telling--;
  soon(fd);
}

int http_feed_opening(const http_server_t *srv) {
  return srv->feed ? srv->feed->opens : 0;
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
  for (http_follow_t *fl = fd->follows; fl; fl = fl->next) {
    http_follow_stop(fl);
    if (fl->opening) {
      /* Its open is still on the thread pool: the job ends on its own. */
      fl->opening->fl = NULL;
      fl->opening = NULL;
      fd->opens--;
    }
  }
  for (http_task_sub_t *s = fd->subs; s; s = s->next)
    s->dead = 1;
  fd->telling = 0;
  sweep(fd);
  srv->feed = NULL;
  uv_close((uv_handle_t *)&fd->soon, on_feed_closed);
}
