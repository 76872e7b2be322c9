/* The listing every face uses (tfs_task_list_opts): ids from one readdir,
 * then the records, loaded in chunks of ids on up to two threads and
 * handed to the caller's callback on its own thread, in order.
 *
 * What a full listing waits on is the JSON parse of each record, not the
 * disk, so the second half of each chunk is parsed on a second thread
 * while the calling thread parses the first. Each thread parses with a
 * bump arena for jansson: a record's parse allocates dozens of small nodes
 * that are all freed before the load returns, so they are carved from one
 * buffer that is reset after each record instead of going through malloc
 * and free. The records themselves (strdup'ed fields) are ordinary heap
 * memory, kept in the chunk's slots until they are delivered. With a
 * limit, the ids are walked from the newest end and the walk stops at the
 * limit, so a small limit reads only the records it shows. */
#include "core/internal.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 2048
#define ARENA_SIZE (256 * 1024)

/* ---- the arena -------------------------------------------------------- */

/* Only the loader's threads have an arena, and only while they parse; on
 * every other thread (and for anything too big) the functions are malloc
 * and free, so installing them once for the whole process is safe. free
 * tells arena memory apart by address. */
static __thread char *arena_base;
static __thread size_t arena_used;

static void *arena_malloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (arena_base && n <= ARENA_SIZE - arena_used) {
    void *p = arena_base + arena_used;
    arena_used += n;
    return p;
  }
  return malloc(n);
}

static void arena_free(void *p) {
  if (arena_base && (char *)p >= arena_base && (char *)p < arena_base + ARENA_SIZE)
    return;
  free(p);
}

static void arena_install(void) {
  json_set_alloc_funcs(arena_malloc, arena_free);
  /* jansson seeds its hash on the first object: here, on one thread. */
  json_object_seed(0);
}

/* ---- loading a chunk -------------------------------------------------- */

enum { SLOT_SKIP, SLOT_OK, SLOT_BAD, SLOT_NOMEM };

typedef struct {
  int status;
  tfs_record_t rec;
  char *json; /* with_json */
  size_t len;
} slot_t;

typedef struct {
  tfs_store_t *store;
  const tfs__idbuf_t *ids;
  slot_t *slots; /* slots[i] is ids[from + i] */
  size_t from, to;
  unsigned states;
  int with_json;
  char *arena; /* NULL: plain malloc */
  int64_t now;
} job_t;

static void load_one(const job_t *j, const char *id, slot_t *s) {
  int rc = tfs__load_checked(j->store, id, &s->rec);
  if (rc == -ENOENT) /* no record yet: being created, unless it is old */
    s->status = j->now - tfs__id_time_ms(id) < TFS__CREATING_GRACE_MS ? SLOT_SKIP : SLOT_BAD;
  else if (rc == TFS_ENOTASK) /* forgotten while we listed */
    s->status = SLOT_SKIP;
  else if (rc)
    s->status = rc == -ENOMEM ? SLOT_NOMEM : SLOT_BAD;
  else if (!(j->states & TFS_STATE_BIT(s->rec.state)))
    s->status = SLOT_SKIP;
  else if (j->with_json && !(s->json = tfs_record_dump(&s->rec)))
    s->status = SLOT_NOMEM;
  else
    s->status = SLOT_OK;
  if (s->status == SLOT_OK && s->json)
    s->len = strlen(s->json);
  if (s->status != SLOT_OK && !rc)
    tfs_record_free(&s->rec);
}

static void slot_clear(slot_t *s) {
  if (s->status == SLOT_OK)
    tfs_record_free(&s->rec);
  free(s->json);
  memset(s, 0, sizeof *s);
}

/* Loads ids[from, to) into their slots. Runs on two threads at once over
 * the halves of a chunk: the store is only read, and each thread writes
 * only its own slots. */
static void *load_range(void *arg) {
  job_t *j = arg;
  arena_base = j->arena;
  for (size_t k = j->from; k < j->to; k++) {
    arena_used = 0;
    /* The slot's previous record, delivered by now, is freed here: on the
     * loading threads, two at a time, not on the delivering one. */
    slot_clear(&j->slots[k - j->from]);
    load_one(j, j->ids[k], &j->slots[k - j->from]);
  }
  arena_base = NULL;
  return NULL;
}

/* Loads ids[from, to) into slots[0, to - from), on two threads when there
 * are enough of them. */
static void load_chunk(job_t base, size_t from, size_t to, int threads) {
  size_t mid = threads > 1 && to - from >= 64 ? from + (to - from) / 2 : to;
  job_t a = base, b = base;
  a.from = from;
  a.to = mid;
  b.slots = base.slots + (mid - from);
  b.from = mid;
  b.to = to;
  b.arena = base.arena ? base.arena + ARENA_SIZE : NULL;
  pthread_t t;
  int spawned = mid < to && pthread_create(&t, NULL, load_range, &b) == 0;
  load_range(&a);
  if (spawned)
    pthread_join(t, NULL);
  else if (mid < to)
    load_range(&b);
}

/* ---- the walk ---------------------------------------------------------- */

typedef struct {
  const tfs_list_opts_t *o;
  tfs_list_cb cb;
  void *arg;
  tfs_list_stats_t *st;
  slot_t *kept; /* with a limit, oldest first: kept until the walk ends */
  size_t nkept, capkept;
  size_t examined;
  int stopped;
  int err;
} walk_t;

/* One examined slot, in walk order: counted, then delivered (or kept to be
 * delivered oldest first at the end). */
static void take(walk_t *w, const char *id, slot_t *s) {
  snprintf(w->st->last_examined, sizeof w->st->last_examined, "%s", id);
  w->examined++;
  if (s->status == SLOT_NOMEM) {
    w->err = -ENOMEM;
  } else if (s->status == SLOT_BAD) {
    /* The oldest one is named, whatever the walk's direction. */
    if (!w->st->corrupt++ || strcmp(id, w->st->first_corrupt) < 0)
      snprintf(w->st->first_corrupt, sizeof w->st->first_corrupt, "%s", id);
  } else if (s->status == SLOT_OK && w->o->limit && !w->o->newest_first) {
    if (tfs_grow(&w->kept, &w->capkept, w->nkept + 1, sizeof *w->kept, 64)) {
      w->err = -ENOMEM;
      return;
    }
    w->kept[w->nkept++] = *s;
    memset(s, 0, sizeof *s);
    w->st->shown++;
  } else if (s->status == SLOT_OK) {
    w->st->shown++;
    w->stopped = w->cb && w->cb(&s->rec, s->json, s->len, w->arg);
  }
  if ((w->o->limit && w->st->shown >= w->o->limit) ||
      (w->o->scan_max && w->examined >= w->o->scan_max))
    w->stopped = 1;
}

static int threads_for(const tfs_list_opts_t *o) {
  if (o->threads == 1)
    return 1;
  return sysconf(_SC_NPROCESSORS_ONLN) < 2 ? 1 : 2;
}

/* Walks ids[0, n) (oldest first) in the opts' direction, a chunk at a
 * time. */
static void walk(tfs_store_t *store, const tfs__idbuf_t *ids, size_t n, walk_t *w) {
  const tfs_list_opts_t *o = w->o;
  int backwards = o->newest_first || o->limit;
  size_t chunk = o->limit ? (o->limit < 64 ? 64 : o->limit > CHUNK ? CHUNK : o->limit) : CHUNK;
  if (o->scan_max && o->scan_max < chunk)
    chunk = o->scan_max;
  slot_t *slots = calloc(chunk, sizeof *slots);
  char *arenas = malloc(2 * (size_t)ARENA_SIZE);
  if (!slots) {
    free(arenas);
    w->err = -ENOMEM;
    return;
  }
  job_t base = {store,        ids,    slots,       0, 0, o->states ? o->states : ~0u,
                o->with_json, arenas, tfs_now_ms()};
  for (size_t done = 0; done < n && !w->stopped && !w->err;) {
    size_t len = n - done < chunk ? n - done : chunk;
    size_t from = backwards ? n - done - len : done;
    load_chunk(base, from, from + len, threads_for(o));
    for (size_t i = 0; i < len; i++) {
      size_t k = backwards ? len - 1 - i : i;
      if (!w->stopped && !w->err)
        take(w, ids[from + k], &slots[k]);
    }
    done += len;
  }
  for (size_t i = 0; i < chunk; i++)
    slot_clear(&slots[i]);
  free(slots);
  free(arenas);
}

int tfs_task_list_opts(tfs_store_t *store, const tfs_list_opts_t *opts, tfs_list_cb cb, void *arg,
                       tfs_list_stats_t *stats) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  static const tfs_list_opts_t all = {0};
  tfs_list_stats_t local;
  tfs__idbuf_t *ids;
  size_t n;
  walk_t w = {.o = opts ? opts : &all, .cb = cb, .arg = arg, .st = stats ? stats : &local};
  memset(w.st, 0, sizeof *w.st);
  int err = tfs__collect_ids(store, &ids, &n, 1);
  if (err)
    return err;
  w.st->ids = n;
  if (w.o->before) {
    size_t lo = 0, hi = n; /* ids [0, lo) are older than the cursor */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (strcmp(ids[mid], w.o->before) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    n = lo;
  }
  pthread_once(&once, arena_install);
  walk(store, ids, n, &w);
  w.st->left = n - w.examined;
  /* With a limit, oldest first: the kept records, in that order. */
  int stop = 0;
  for (size_t i = w.nkept; i-- > 0;) {
    slot_t *s = &w.kept[i];
    if (!w.err && !stop && cb)
      stop = cb(&s->rec, s->json, s->len, arg);
    slot_clear(s);
  }
  free(w.kept);
  free(ids);
  return w.err;
}
