/* Dependencies and start times: what a new task starts after, checked at
 * its creation (every dependency exists; no cycle), where a dependency
 * stands for the task that waits on it, and the times `--at` takes.
 *
 * Dependencies are task ids, fixed when the task is created: a task can
 * only name tasks older than itself, so a cycle cannot be made through the
 * faces. The walk below still refuses one (a record edited by hand could
 * hold it), since a task waiting on a cycle would wait for ever. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Tasks the cycle walk visits at most: deeper graphs are refused too. */
#define WALK_MAX 10000

typedef struct {
  tfs_store_t *store;
  char (*path)[TFS_ID_MAX + 1]; /* the ids from the start to here */
  int depth;
  char (*done)[TFS_ID_MAX + 1]; /* ids whose dependencies have been walked */
  size_t ndone, cap;
  char *bad;
  size_t badlen;
} walk_t;

static int seen(const walk_t *w, const char *id) {
  for (size_t i = 0; i < w->ndone; i++)
    if (!strcmp(w->done[i], id))
      return 1;
  return 0;
}

/* "a -> b -> a" from where id first appears on the path. */
static void name_cycle(walk_t *w, const char *id) {
  size_t o = 0;
  int from = 0;
  while (from < w->depth && strcmp(w->path[from], id))
    from++;
  for (int i = from; i < w->depth && o + 24 < w->badlen; i++)
    o += (size_t)snprintf(w->bad + o, w->badlen - o, "%s -> ", w->path[i]);
  if (o < w->badlen)
    snprintf(w->bad + o, w->badlen - o, "%s", id);
}

/* Depth first from id: a dependency that is on the path is a cycle. */
static int walk(walk_t *w, const char *id) {
  for (int i = 0; i < w->depth; i++)
    if (!strcmp(w->path[i], id)) {
      if (w->bad)
        name_cycle(w, id);
      return TFS_ECYCLE;
    }
  if (seen(w, id))
    return 0;
  if (w->depth >= WALK_MAX || w->ndone >= WALK_MAX)
    return TFS_ECYCLE;
  tfs_record_t rec;
  int err = tfs__load_raw(w->store, id, &rec);
  if (err) {
    tfs_record_free(&rec);
    /* A dependency of a dependency that is gone (pruned) ended long ago. */
    return err == TFS_ENOTASK || err == -ENOENT ? 0 : err;
  }
  /* A task that has ended waits for nothing: the walk stops there, so a
   * long chain of finished tasks costs one read per unfinished one. */
  int nafter = tfs_state_terminal(rec.state) ? 0 : rec.nafter;
  snprintf(w->path[w->depth++], TFS_ID_MAX + 1, "%s", id);
  for (int i = 0; !err && i < nafter; i++)
    err = walk(w, rec.after[i]);
  w->depth--;
  tfs_record_free(&rec);
  if (!err && !(err = tfs_grow(&w->done, &w->cap, w->ndone + 1, sizeof *w->done, 64)))
    snprintf(w->done[w->ndone++], TFS_ID_MAX + 1, "%s", id);
  return err;
}

int tfs_after_check(tfs_store_t *store, char *const *after, char *bad, size_t badlen) {
  struct stat st;
  if (bad && badlen)
    bad[0] = '\0';
  for (int i = 0; after && after[i]; i++) {
    int err = tfs_id_valid(after[i]) ? tfs_task_stat(store, after[i], &st) : TFS_EBADID;
    if (err) {
      if (bad && badlen)
        snprintf(bad, badlen, "%s", after[i]);
      return err == TFS_EBADID ? err : TFS_ENOTASK;
    }
  }
  walk_t w = {.store = store, .bad = bad, .badlen = badlen};
  if (!(w.path = calloc(WALK_MAX, sizeof *w.path)))
    return -ENOMEM;
  int err = 0;
  for (int i = 0; !err && after && after[i]; i++)
    err = walk(&w, after[i]);
  free(w.path);
  free(w.done);
  return err;
}

int tfs__schedule_spec(tfs_store_t *store, const tfs_task_spec_t *spec, tfs_record_t *rec) {
  if (spec->queue && spec->queue[0]) {
    if (!tfs_queue_name_valid(spec->queue))
      return -EINVAL;
    snprintf(rec->queue, sizeof rec->queue, "%s", spec->queue);
  } else if (!spec->queue) {
    /* No queue given (NULL; "" is "none"): the store's default queue, so a
     * tsp user gets one task at a time without --queue each time. */
    char *q = NULL;
    int err = tfs_config_get(store, "queue", &q, spec->why, spec->whylen);
    if (err)
      return err;
    if (q)
      snprintf(rec->queue, sizeof rec->queue, "%s", q);
    free(q);
  }
  if (spec->not_before_ms < 0)
    return -EINVAL;
  rec->not_before_ms = spec->not_before_ms;
  rec->with_stdin = spec->with_stdin != 0;
  int err = tfs_after_check(store, spec->after, NULL, 0);
  return err ? err : tfs_record_set_after(rec, spec->after);
}

int tfs_after_state(tfs_store_t *store, const char *id, char *why, size_t whylen) {
  tfs_record_t rec;
  if (why && whylen)
    why[0] = '\0';
  int err = tfs_task_ended(store, id, &rec);
  if (err == TFS_ENOTASK) {
    /* Removed (rm, prune) after the task was made: nobody can tell how it
     * ended, so the waiter must not run as if it had completed. */
    tfs_record_free(&rec);
    if (why && whylen)
      snprintf(why, whylen, "was removed before it was seen to end");
    return TFS_EFINISHED;
  }
  if (err < 0 || err == 0) {
    tfs_record_free(&rec);
    return err == -EAGAIN ? 0 : err;
  }
  int ok = rec.state == TFS_COMPLETED;
  if (!ok && why && whylen)
    snprintf(why, whylen, "%s%s%s", tfs_state_name(rec.state), rec.reason ? ": " : "",
             rec.reason ? rec.reason : "");
  tfs_record_free(&rec);
  return ok ? 1 : TFS_EFINISHED;
}

/* n digits at *p into *out (moving *p); -1 if they are not there. */
static int num(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++, (*p)++) {
    if (**p < '0' || **p > '9')
      return -1;
    v = v * 10 + (**p - '0');
  }
  *out = v;
  return 0;
}

/* "HH:MM" or "HH:MM:SS" at p, to the end of the string. */
static int clock_part(const char *p, struct tm *tm) {
  tm->tm_sec = 0;
  if (num(&p, 2, &tm->tm_hour) || *p++ != ':' || num(&p, 2, &tm->tm_min))
    return -EINVAL;
  if (*p == ':' && (p++, num(&p, 2, &tm->tm_sec)))
    return -EINVAL;
  return *p || tm->tm_hour > 23 || tm->tm_min > 59 || tm->tm_sec > 59 ? -EINVAL : 0;
}

/* A local time in *tm to ms; -EINVAL if the system cannot place it. */
static int local_ms(struct tm *tm, int64_t *ms) {
  tm->tm_isdst = -1;
  time_t t = mktime(tm);
  if (t == (time_t)-1)
    return -EINVAL;
  *ms = (int64_t)t * 1000;
  return 0;
}

/* "HH:MM[:SS]": the next such moment in local time (today, else
 * tomorrow). */
static int at_clock(const char *s, int64_t now_ms, int64_t *ms) {
  time_t now = (time_t)(now_ms / 1000);
  struct tm tm;
  localtime_r(&now, &tm);
  if (clock_part(s, &tm) || local_ms(&tm, ms))
    return -EINVAL;
  if (*ms <= now_ms) {
    tm.tm_mday++;
    return local_ms(&tm, ms);
  }
  return 0;
}

/* "YYYY-MM-DD HH:MM[:SS]" (or with a T) without a zone: local time. */
static int at_local(const char *s, int64_t *ms) {
  struct tm tm = {0};
  const char *p = s;
  if (num(&p, 4, &tm.tm_year) || *p++ != '-' || num(&p, 2, &tm.tm_mon) || *p++ != '-' ||
      num(&p, 2, &tm.tm_mday) || (*p != ' ' && *p != 'T') || clock_part(p + 1, &tm))
    return -EINVAL;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31)
    return -EINVAL;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return local_ms(&tm, ms);
}

int tfs_at_parse(const char *s, int64_t now_ms, int64_t *ms) {
  if (!s || !*s || strlen(s) > 40)
    return -EINVAL;
  if (strlen(s) <= 8)
    return at_clock(s, now_ms, ms);
  if (tfs_time_parse(s, ms) == 0)
    return 0;
  return at_local(s, ms);
}
