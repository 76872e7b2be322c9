/* Follows (live_follow_*): one task's transcript from a byte offset, line
 * by line as it is written (core's tfs_follower_*), its record whenever
 * its state changes, and the end once the task has ended and every byte
 * is handed out, on the hub's loop and its one watch of the store
 * (feed.c tells the whole of the feeds). The transcript stream
 * of the JSON API and A2A's SubscribeToTask are follows. A consumer that
 * cannot take more says so from its line callback and calls
 * live_follow_resume() when it can: a follow reads no more than its
 * consumer takes, so catching up on a 1 GB transcript never sits in
 * memory. One look hands out at most FOLLOW_BUDGET bytes, then the loop
 * turns before the next. The open itself is a scan on the loop's thread
 * pool (follow_open_t, live_scan_*: capped in number, queued beyond): it
 * counts the lines before its start from the line index's checkpoint (the
 * whole file where the index must be rebuilt), which on the loop would
 * hold up every request of the server; a follow stopped while it opens
 * (its client left) cancels that scan. A stop only marks a follow (a
 * callback may stop its own); what is marked is freed on the next loop
 * turn. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live/feed.h"

#define FOLLOW_BUDGET (1u << 20) /* bytes one look hands out before the loop turns */

typedef struct follow_open follow_open_t;

struct live_follow {
  live_follow_t *next;
  live_feed_t *feed;
  char id[TFS_ID_MAX + 1];
  off_t from;             /* where it was asked to start */
  tfs_follower_t *f;      /* NULL until the open is done */
  follow_open_t *opening; /* the open on the thread pool, while it runs */
  live_listener_t *l;
  const live_follow_ops_t *ops;
  void *arg;
  int last_state; /* -1 before the first look */
  int busy;       /* a look is under way */
  int dead;       /* stopped or ended: no callback any more */
  int paused;     /* the consumer is full: no reading until it resumes */
  int want;       /* a look is due on the next loop turn */
  int cut;        /* the last look stopped before the end of what was there */
  size_t spent;   /* bytes handed out in this look */
};

static int on_line(int64_t lineno, const char *line, size_t len, int partial, void *arg) {
  live_follow_t *fl = arg;
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

static void follow_finish(live_follow_t *fl, const tfs_record_t *rec, int err) {
  char *json = rec ? tfs_record_dump(rec) : NULL;
  fl->dead = 1;
  fl->ops->end(fl->arg, rec, json, err);
  free(json);
  live_watch_remove(fl->feed->hub, fl->l);
  fl->l = NULL;
  live_feed_soon(fl->feed); /* the sweep */
}

/* One look: the record (has the task ended?), the lines written since the
 * last look (a final partial line too once it has ended), the record to
 * the consumer if its state changed, and the end when all is handed out. */
static void follow_look(live_follow_t *fl) {
  if (fl->dead || fl->busy || fl->paused || !fl->f)
    return;
  fl->busy = 1;
  fl->want = 0;
  tfs_record_t rec;
  int ended = tfs_task_ended(live_feed_store(fl->feed), fl->id, &rec);
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
      live_feed_soon(fl->feed);
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
 * once the feed let go of the follow (live_feed_close): the job then
 * touches nothing but itself. */
struct follow_open {
  live_scan_t *sc;
  live_follow_t *fl;
  tfs_store_t *store;
  char id[TFS_ID_MAX + 1];
  off_t from;
  tfs_follower_t *f;
  int err;
};

static void open_work(void *arg) {
  follow_open_t *job = arg;
  job->err = tfs_follower_open_at(job->store, job->id, job->from, &job->f);
}

/* On the loop again: the follow gets its follower and its first look, or
 * ends with the open's error (the task went away since the start); one
 * stopped meanwhile is swept. */
static void open_done(void *arg, int status) {
  follow_open_t *job = arg;
  live_follow_t *fl = job->fl;
  job->sc = NULL;
  if (status && !job->err)
    job->err = status;
  if (fl) {
    fl->opening = NULL;
    fl->feed->opens--;
    if (!fl->dead && !job->err) {
      tfs_follower_rebind(job->f, live_feed_store(fl->feed));
      fl->f = job->f;
      job->f = NULL;
      fl->want = 1;
    } else if (!fl->dead) {
      follow_finish(fl, NULL, job->err);
    }
    live_feed_soon(fl->feed);
  }
  tfs_follower_close(job->f);
  tfs_store_close(job->store);
  free(job);
}

/* What the open would refuse at once (a bad id, no such task, a
 * transcript that is no regular file) is refused here, so that the
 * caller can answer with an error before it starts a stream; the open
 * itself (the count of the lines before from) goes to the thread pool. */
int live_follow_start(live_feed_t *fd, const char *id, off_t from, const live_follow_ops_t *ops,
                      void *arg, live_follow_t **out) {
  *out = NULL;
  if (!fd)
    return -ENOMEM;
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  if (from < 0)
    return -EINVAL;
  int tf =
      tfs_task_file_open(live_feed_store(fd), id, TFS_FILE_TRANSCRIPT, O_RDONLY | O_NONBLOCK, 0);
  if (tf < 0 && tf != -ENOENT)
    return tf;
  if (tf >= 0)
    close(tf);
  live_follow_t *fl = calloc(1, sizeof *fl);
  follow_open_t *job = calloc(1, sizeof *job);
  int err = fl && job ? tfs_store_reopen(live_feed_store(fd), &job->store) : -ENOMEM;
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
  fl->l = live_watch_add(fd->hub, id, TFS_WATCH_STATE | TFS_WATCH_OUTPUT, on_follow_watch, fl);
  if (!fl->l) {
    tfs_store_close(job->store);
    free(job);
    free(fl);
    return -ENOMEM;
  }
  snprintf(job->id, sizeof job->id, "%s", id);
  job->from = from;
  job->fl = fl;
  if (!(job->sc = live_scan_submit(fd->hub, open_work, open_done, job))) {
    live_watch_remove(fd->hub, fl->l);
    tfs_store_close(job->store);
    free(job);
    free(fl);
    return -ENOMEM;
  }
  fl->opening = job;
  fd->opens++;
  fl->next = fd->follows;
  fd->follows = fl;
  *out = fl;
  return 0;
}

void live_follow_resume(live_follow_t *fl) {
  if (!fl || fl->dead || !fl->paused)
    return;
  fl->paused = 0;
  fl->want = 1;
  live_feed_soon(fl->feed);
}

void live_follow_stop(live_follow_t *fl) {
  if (!fl || fl->dead)
    return;
  fl->dead = 1;
  live_watch_remove(fl->feed->hub, fl->l);
  fl->l = NULL;
  live_feed_soon(fl->feed);
  /* Its client left while it opens: the scan stops (open_done, maybe
   * right here, sweeps it). */
  if (fl->opening)
    live_scan_cancel(fl->opening->sc);
}

void live_follows_look(live_feed_t *fd) {
  for (live_follow_t *fl = fd->follows; fl; fl = fl->next)
    if (fl->want)
      follow_look(fl);
}

void live_follows_sweep(live_feed_t *fd) {
  for (live_follow_t **pp = &fd->follows; *pp;) {
    live_follow_t *fl = *pp;
    if (fl->dead && !fl->busy && !fl->opening) {
      *pp = fl->next;
      tfs_follower_close(fl->f);
      free(fl);
    } else {
      pp = &fl->next;
    }
  }
}

void live_follows_end(live_feed_t *fd) {
  for (live_follow_t *fl = fd->follows; fl; fl = fl->next)
    if (!fl->dead)
      follow_finish(fl, NULL, -ESHUTDOWN);
}

void live_follows_let_go(live_feed_t *fd) {
  for (live_follow_t *fl = fd->follows; fl; fl = fl->next) {
    live_follow_stop(fl);
    if (fl->opening) {
      /* Its open is still on the thread pool (cancelled by the stop): the
       * job ends on its own. */
      fl->opening->fl = NULL;
      fl->opening = NULL;
      fd->opens--;
    }
  }
}

int live_feed_opening(const live_feed_t *fd) {
  return fd ? fd->opens : 0;
}
