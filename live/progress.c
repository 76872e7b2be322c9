/* The task feed's progress events (live/progress.h): core says, for a
 * record just read, tell now, nothing new, or hold (tfs_progress_check);
 * this file keeps the holds. One timer per feed, armed for the earliest
 * hold, so a task whose output stops within its interval still has its
 * last counters told at the end of it, not at the next tick of the
 * watch. A look that finds nothing new (the counters went back to what
 * was told) tells nothing. */
#include <errno.h>
#include <stdlib.h>

#include "live/progress.h"

struct live_pacer {
  uv_timer_t timer;
  live_pace_t *held;
  void (*look)(live_pace_t *pc);
};

static void on_pacer_timer(uv_timer_t *t);

static void unhold(live_pacer_t *p, live_pace_t *pc) {
  if (!pc->held)
    return;
  pc->held = 0;
  for (live_pace_t **pp = p ? &p->held : NULL; pp && *pp; pp = &(*pp)->next)
    if (*pp == pc) {
      *pp = pc->next;
      break;
    }
  pc->next = NULL;
}

static void arm(live_pacer_t *p, int64_t now) {
  int64_t due = 0;
  for (live_pace_t *pc = p->held; pc; pc = pc->next)
    if (!due || pc->due_ms < due)
      due = pc->due_ms;
  if (!due) {
    uv_timer_stop(&p->timer);
    return;
  }
  uv_timer_start(&p->timer, on_pacer_timer, (uint64_t)(due > now ? due - now : 0), 0);
}

/* The holds that are over are looked at again, each on its own (a look
 * only touches its own pace: it may hold it again, or drop it). */
static void on_pacer_timer(uv_timer_t *t) {
  live_pacer_t *p = t->data;
  int64_t now = tfs_now_ms();
  live_pace_t *due = NULL;
  for (live_pace_t **pp = &p->held; *pp;) {
    live_pace_t *pc = *pp;
    if (pc->due_ms <= now) {
      *pp = pc->next;
      pc->held = 0;
      pc->next = due;
      due = pc;
    } else {
      pp = &pc->next;
    }
  }
  while (due) {
    live_pace_t *pc = due;
    due = pc->next;
    pc->next = NULL;
    p->look(pc);
  }
  arm(p, tfs_now_ms());
}

live_pacer_t *live_pacer_open(uv_loop_t *loop, void (*look)(live_pace_t *pc)) {
  live_pacer_t *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->look = look;
  uv_timer_init(loop, &p->timer);
  p->timer.data = p;
  return p;
}

static void on_pacer_closed(uv_handle_t *h) {
  free(h->data);
}

void live_pacer_close(live_pacer_t *p) {
  if (!p)
    return;
  while (p->held)
    unhold(p, p->held);
  uv_close((uv_handle_t *)&p->timer, on_pacer_closed);
}

void live_pace_init(live_pace_t *pc, const tfs_record_t *rec, int64_t now_ms) {
  pc->next = NULL;
  pc->held = 0;
  pc->due_ms = 0;
  tfs_progress_told(&pc->prog, rec, now_ms);
}

char *live_pace_look(live_pacer_t *p, live_pace_t *pc, const tfs_record_t *rec) {
  int64_t now = tfs_now_ms();
  int64_t wait = tfs_progress_check(&pc->prog, rec, now);
  if (wait < 0) {
    unhold(p, pc);
    return NULL;
  }
  if (wait == 0) {
    unhold(p, pc);
    return tfs_progress_dump(&pc->prog, rec, now);
  }
  if (!pc->held) {
    pc->held = 1;
    pc->due_ms = now + wait;
    if (p) {
      pc->next = p->held;
      p->held = pc;
      arm(p, now);
    }
  }
  return NULL;
}

char *live_pace_flush(live_pacer_t *p, live_pace_t *pc, const tfs_record_t *rec) {
  int64_t now = tfs_now_ms();
  unhold(p, pc);
  char *json = NULL;
  if (tfs_progress_check(&pc->prog, rec, now) >= 0)
    json = tfs_progress_dump(&pc->prog, rec, now);
  tfs_progress_told(&pc->prog, rec, now);
  return json;
}

void live_pace_drop(live_pacer_t *p, live_pace_t *pc) {
  unhold(p, pc);
}
