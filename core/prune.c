/* Pruning by rules (`taskfs prune --older-than 7d --state failed`): the
 * records are read by the listing to tell state and age, and each task that
 * matches goes through tfs_task_forget(), whose rules decide (a task that
 * has not ended never goes). tfs_task_prune() (forget.c) is the count-only
 * rule, which reads no record. */
#include "core/internal.h"

#include <stdint.h>
#include <string.h>

typedef struct {
  const tfs_prune_opts_t *o;
  int64_t now;
  tfs__idbuf_t *ids; /* the matches, oldest first */
  size_t n, cap;
  int err;
} prune_t;

static int match(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  prune_t *p = arg;
  if (!tfs_state_terminal(rec->state))
    return 0;
  if (p->o->older_than_ms > 0) {
    int64_t when = rec->ended_ms ? rec->ended_ms : rec->created_ms;
    if (p->now - when <= p->o->older_than_ms)
      return 0;
  }
  if ((p->err = tfs_grow(&p->ids, &p->cap, p->n + 1, sizeof *p->ids, 256)))
    return 1;
  memcpy(p->ids[p->n++], rec->id, 16);
  return 0;
}

int tfs_task_prune_opts(tfs_store_t *store, const tfs_prune_opts_t *o) {
  int err = tfs__writable(store);
  if (err)
    return err;
  prune_t p = {.o = o, .now = tfs_now_ms()};
  unsigned ended = TFS_STATE_BIT(TFS_COMPLETED) | TFS_STATE_BIT(TFS_FAILED) |
                   TFS_STATE_BIT(TFS_CANCELLED) | TFS_STATE_BIT(TFS_LOST);
  tfs_list_opts_t lo = {.states = o->states ? o->states : ended};
  if ((err = tfs_task_list_opts(store, &lo, match, &p, NULL)) || (err = p.err)) {
    free(p.ids);
    return err;
  }
  size_t go = o->keep == SIZE_MAX ? p.n : p.n > o->keep ? p.n - o->keep : 0;
  int removed = tfs__forget_ids(store, p.ids, go);
  free(p.ids);
  /* As tfs_task_prune(): after the tasks, so their litter goes too. */
  tfs__sweep_litter(store);
  return removed;
}
