/* A task's seat in its queue, held by its supervisor: joining the waiters,
 * taking a slot when it may, giving it back; and where a waiting task
 * stands, as faces show it (positions are computed on read).
 *
 * Joining, taking and cleaning up stale waiter entries happen under the
 * queue's lock, so two waiters never both decide they are next; the slot
 * itself is a lock of its own, held for the worker's life. */
#include "core/queue.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct tfs_queue_seat {
  tfs_store_t *store;
  char name[TFS_QUEUE_NAME_MAX + 1];
  char id[TFS_ID_MAX + 1];
  int qfd;   /* queues/<name> */
  int wfd;   /* its waiting/ */
  int entry; /* our waiting/<id>, locked while we wait; -1: not waiting */
  int slot;  /* the slot we hold; -1: none */
};

/* Makes and locks our waiter entry, with the queue lock held (so nobody
 * takes it for stale between its creation and its lock). */
static int join(tfs_queue_seat_t *q) {
  int lk TFS_AUTOCLOSE = tfs__queue_lock(q->store, q->qfd);
  if (lk < 0)
    return lk;
  int fd = openat(q->wfd, q->id, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0)
    return tfs__open_err(errno);
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || flock(fd, LOCK_EX | LOCK_NB)) {
    close(fd);
    return errno == EWOULDBLOCK ? -EBUSY : TFS_ECORRUPT;
  }
  q->entry = fd;
  return 0;
}

/* Leaves the waiters: our entry goes (a waiter that died leaves a stale
 * one, which the next take removes). */
static void leave(tfs_queue_seat_t *q) {
  if (q->entry < 0)
    return;
  unlinkat(q->wfd, q->id, 0);
  close(q->entry);
  q->entry = -1;
}

int tfs_queue_seat_open(tfs_store_t *store, const char *queue, const char *id,
                        tfs_queue_seat_t **out) {
  *out = NULL;
  if (!tfs_id_valid(id))
    return TFS_EBADID;
  tfs_queue_seat_t *q = calloc(1, sizeof *q);
  if (!q)
    return -ENOMEM;
  q->store = store;
  q->wfd = q->entry = q->slot = -1;
  snprintf(q->name, sizeof q->name, "%s", queue);
  snprintf(q->id, sizeof q->id, "%s", id);
  int err = q->qfd = tfs__queue_open(store, queue, 1);
  if (err >= 0)
    err = q->wfd = tfs__queue_waiting(store, q->qfd, 1);
  if (err >= 0)
    err = join(q);
  if (err < 0) {
    tfs_queue_seat_close(q);
    return err;
  }
  *out = q;
  return 0;
}

/* Is a live waiter older than us still waiting? Stale entries on the way
 * are removed (the queue lock is held). 1 yes, 0 no, or an error; *others
 * says whether any entry but ours is there (live or not). */
static int older_waits(tfs_queue_seat_t *q, int *others) {
  tfs__idbuf_t *ids;
  size_t n;
  int err = tfs__queue_entries(q->wfd, &ids, &n), found = 0;
  *others = !err && n > 1;
  for (size_t i = 0; !err && !found && i < n && strcmp(ids[i], q->id) < 0; i++) {
    int r = tfs__queue_entry_live(q->wfd, ids[i]);
    if (r == 0)
      unlinkat(q->wfd, ids[i], 0);
    else if (r > 0)
      found = 1;
    else
      err = r;
  }
  free(ids);
  return err ? err : found;
}

/* The decision, with the queue lock held. On a take, *ring says whether
 * the waiters after us may have a slot too: a slot is left, and someone
 * but us has an entry. */
static int take_locked(tfs_queue_seat_t *q, tfs_queue_wait_t *w, int *ring) {
  int paused, held, fd, others, err = tfs__queue_settings(q->qfd, &w->parallel, &paused);
  if (err)
    return err;
  if (paused) {
    w->why = TFS_QWAIT_PAUSED;
    return 0;
  }
  if ((err = older_waits(q, &others)) != 0) {
    w->why = TFS_QWAIT_BEHIND;
    w->ahead = 1;
    return err < 0 ? err : 0;
  }
  if ((err = tfs__queue_slots(q->qfd, w->parallel, 1, &held, &fd)))
    return err;
  if (fd < 0) {
    w->why = TFS_QWAIT_FULL;
    return 0;
  }
  /* Who holds it, for the faces that list a queue's tasks. */
  if (ftruncate(fd, 0) == 0)
    (void)!pwrite(fd, q->id, strlen(q->id), 0);
  q->slot = fd;
  leave(q);
  *ring = others && (w->parallel == 0 || held + 1 < w->parallel);
  return 1;
}

int tfs_queue_seat_take(tfs_queue_seat_t *q, tfs_queue_wait_t *wait) {
  tfs_queue_wait_t w = {TFS_QWAIT_NONE, 0, 0};
  if (q->slot >= 0)
    return 1;
  if (q->entry < 0)
    return -EINVAL; /* not waiting: rejoin first */
  int lk = tfs__queue_lock(q->store, q->qfd), ring = 0;
  if (lk < 0)
    return lk;
  int r = take_locked(q, &w, &ring);
  close(lk);
  if (wait)
    *wait = w;
  /* Slots may be left for the waiters after us (several freed at once, a
   * higher limit). When we took the last one, or nobody else waits, there
   * is no one to ring: the next release rings them, and a task that joins
   * later looks at once. This kick is on the path from a freed slot to our
   * worker's start, so it is skipped whenever it cannot matter. */
  if (r == 1 && ring)
    tfs_queue_kick(q->store, q->name);
  return r;
}

int tfs_queue_seat_fd(const tfs_queue_seat_t *q) {
  return q ? q->slot : -1;
}

int tfs_queue_seat_release(tfs_queue_seat_t *q) {
  if (!q || q->slot < 0)
    return 0;
  /* LOCK_UN on the open file: every process that shares it (the
   * sentinel) lets go too. */
  flock(q->slot, LOCK_UN);
  close(q->slot);
  q->slot = -1;
  return tfs_queue_kick(q->store, q->name);
}

int tfs_queue_seat_rejoin(tfs_queue_seat_t *q) {
  if (q->entry >= 0)
    return 0;
  return join(q);
}

void tfs_queue_seat_close(tfs_queue_seat_t *q) {
  if (!q)
    return;
  int waited = q->entry >= 0;
  tfs_queue_seat_release(q);
  leave(q);
  /* A waiter that leaves may have been the one the next were behind. */
  if (waited && q->qfd >= 0)
    tfs_queue_kick(q->store, q->name);
  if (q->wfd >= 0)
    close(q->wfd);
  if (q->qfd >= 0)
    close(q->qfd);
  free(q);
}

/* ---- positions ------------------------------------------------------------ */

typedef struct {
  char name[TFS_QUEUE_NAME_MAX + 1];
  tfs__idbuf_t *live; /* live waiters, oldest first */
  size_t n;
  tfs_queue_info_t info;
  int err; /* the queue could not be read */
} qcache_t;

struct tfs_queue_positions {
  tfs_store_t *store;
  qcache_t *q;
  size_t n, cap;
};

int tfs_queue_positions_open(tfs_store_t *store, tfs_queue_positions_t **out) {
  *out = calloc(1, sizeof **out);
  if (!*out)
    return -ENOMEM;
  (*out)->store = store;
  return 0;
}

void tfs_queue_positions_close(tfs_queue_positions_t *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->n; i++)
    free(p->q[i].live);
  free(p->q);
  free(p);
}

/* Reads one queue's info and live waiters, once per table (the waiters
 * listed once: a join into a long queue says its place). */
static void load_queue(tfs_queue_positions_t *p, qcache_t *c) {
  int qfd TFS_AUTOCLOSE = tfs__queue_open(p->store, c->name, 0);
  c->err = qfd < 0 ? qfd : tfs__queue_info_at(p->store, qfd, c->name, &c->info, &c->live, &c->n);
}

static qcache_t *queue_of(tfs_queue_positions_t *p, const char *name) {
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->q[i].name, name))
      return &p->q[i];
  if (tfs_grow(&p->q, &p->cap, p->n + 1, sizeof *p->q, 4))
    return NULL;
  qcache_t *c = &p->q[p->n++];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  load_queue(p, c);
  return c;
}

int tfs_queue_position(tfs_queue_positions_t *p, const tfs_record_t *rec) {
  if (!p || rec->state != TFS_QUEUED || !rec->queue[0])
    return 0;
  qcache_t *c = queue_of(p, rec->queue);
  if (!c || c->err)
    return 0;
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->live[i], rec->id))
      return (int)i + 1;
  return 0;
}

/* "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st". */
static void ordinal(int n, char *buf, size_t len) {
  const char *sfx = "th";
  if (n % 100 < 11 || n % 100 > 13)
    sfx = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  snprintf(buf, len, "%d%s", n, sfx);
}

void tfs_queue_describe(tfs_queue_positions_t *p, const tfs_record_t *rec, char *buf, size_t len) {
  char nth[24];
  if (!len)
    return;
  buf[0] = '\0';
  int pos = tfs_queue_position(p, rec);
  qcache_t *c = pos ? queue_of(p, rec->queue) : NULL;
  if (c && c->info.paused) {
    ordinal(pos, nth, sizeof nth);
    snprintf(buf, len, "%s in queue %s, which is paused", nth, rec->queue);
  } else if (c) {
    ordinal(pos, nth, sizeof nth);
    if (c->info.parallel > 0)
      snprintf(buf, len, "%s in queue %s (%d of %d running)", nth, rec->queue, c->info.running,
               c->info.parallel);
    else
      snprintf(buf, len, "%s in queue %s", nth, rec->queue);
  } else if (!tfs_state_terminal(rec->state) && rec->reason && rec->not_before_ms > 0 &&
             !strncmp(rec->reason, "waiting until ", 14)) {
    /* The supervisor's words carry UTC (a record is read everywhere); a
     * reader is shown its own local time, as --at is written. */
    char t[TFS_TIME_BUF];
    snprintf(buf, len, "waiting until %s", tfs_time_format_local(rec->not_before_ms, t));
  } else if (!tfs_state_terminal(rec->state) && rec->reason) {
    snprintf(buf, len, "%s", rec->reason);
  }
}
