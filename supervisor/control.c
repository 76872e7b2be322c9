/* Control requests (core/control.c): pause, resume, a signal, the end of
 * stdin. Read on each doorbell ring from where the last look stopped; each
 * acts on the tree this supervisor knows from memory (the worker's
 * process group while its zombie pins the id, and every descendant), never
 * on a PID read from a file.
 *
 * Pausing stops the whole tree with SIGSTOP and the record says paused;
 * the sentinel, a member of the group, is woken again at once (a stopped
 * sentinel could not stop the group should this supervisor die). With
 * free-slot the queue slot goes back while the task is paused, and a
 * resume first takes a slot again, waiting as a waiter of its own age. */
#include "supervisor/sched.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "taskfs/text.h"

/* sig to the worker's group (while it pins the id) and every descendant;
 * the sentinel is spared where it can be, and woken if it was stopped. */
static void signal_tree(sup_t *s, int sig) {
  if (s->worker > 0 && !s->worker_reaped)
    kill(-s->worker, sig);
  sup_kill_descendants(sig, s->sentinel);
  if (s->sentinel > 0)
    kill(s->sentinel, SIGCONT);
}

/* A new sentinel for the slot taken again: the old one holds no slot. */
static void renew_sentinel(sup_t *s) {
  if (s->sentinel <= 0 || s->worker_reaped)
    return;
  sup_sentinel_end(s);
  sup_sentinel_start(s);
}

static void pause_tree(sup_t *s, const tfs_control_t *c) {
  sup_sched_t *ss = s->sched;
  if (s->phase != PH_RUNNING || s->rec.state == TFS_PAUSED) {
    sup_log(s, "pause by %s: %s", c->by,
            s->rec.state == TFS_PAUSED ? "already paused" : "no worker is running");
    return;
  }
  signal_tree(s, SIGSTOP);
  s->rec.state = TFS_PAUSED;
  if (c->free_slot && tfs_queue_seat_fd(ss->seat) >= 0) {
    tfs_queue_seat_release(ss->seat);
    ss->slot_freed = 1;
    sup_sched_say(ss, "paused by %s; its slot in queue %s went back", c->by, s->rec.queue);
  } else {
    sup_sched_say(ss, "paused by %s", c->by);
  }
}

/* The tree goes on: SIGCONT, state running. */
static void continue_tree(sup_t *s, const char *by) {
  sup_sched_t *ss = s->sched;
  signal_tree(s, SIGCONT);
  s->rec.state = TFS_RUNNING;
  ss->said[0] = '\0';
  tfs_record_set_reason(&s->rec, NULL);
  sup_log(s, "resumed by %s", by);
  sup_save_flags(s, TFS_SAVE_NOSYNC);
}

void sup_control_resumed(sup_t *s) {
  sup_sched_t *ss = s->sched;
  ss->resuming = 0;
  ss->slot_freed = 0;
  renew_sentinel(s);
  continue_tree(s, ss->resume_by);
}

static void resume_tree(sup_t *s, const tfs_control_t *c) {
  sup_sched_t *ss = s->sched;
  if (s->rec.state != TFS_PAUSED || ss->resuming) {
    sup_log(s, "resume by %s: %s", c->by, ss->resuming ? "already waiting for a slot" : "not paused");
    return;
  }
  if (!ss->slot_freed) {
    continue_tree(s, c->by);
    return;
  }
  /* The slot went back: take one again, in turn with the waiters. */
  snprintf(ss->resume_by, sizeof ss->resume_by, "%s", c->by);
  ss->resuming = 1;
  int r = tfs_queue_seat_rejoin(ss->seat);
  if (r == 0)
    r = tfs_queue_seat_take(ss->seat, NULL);
  if (r == 1) {
    sup_control_resumed(s);
    return;
  }
  sup_sched_say(ss, "resume requested by %s; waiting for a slot in queue %s", c->by,
                s->rec.queue);
  sup_sched_advance(ss); /* arms the look again */
}

static void send_signal(sup_t *s, const tfs_control_t *c) {
  char name[TFS_SIGNAME_MAX];
  if (s->phase != PH_RUNNING) {
    sup_log(s, "signal %s by %s: no worker is running", tfs_signal_name(c->sig, name), c->by);
    return;
  }
  sup_log(s, "signal %s to the tree, requested by %s", tfs_signal_name(c->sig, name), c->by);
  signal_tree(s, c->sig);
}

void sup_control_check(sup_t *s) {
  sup_sched_t *ss = s->sched;
  tfs_control_t c;
  int r;
  while (s->phase != PH_DONE && !s->stopping &&
         (r = tfs_control_next(s->store, s->id, &ss->control_off, &c)) == 1) {
    switch (c.action) {
    case TFS_CONTROL_PAUSE:
      pause_tree(s, &c);
      break;
    case TFS_CONTROL_RESUME:
      resume_tree(s, &c);
      break;
    case TFS_CONTROL_SIGNAL:
      send_signal(s, &c);
      break;
    case TFS_CONTROL_EOF:
      sup_log(s, "end of stdin, requested by %s", c.by);
      sup_stdin_eof(s);
      break;
    }
  }
}
