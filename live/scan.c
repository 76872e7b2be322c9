/* Transcript scans of a hub on the loop's thread pool: a tail read's
 * lines (mcp/output.c), an untilPattern wait's follower open, each batch
 * of its new lines and each match of a batch (mcp/until.c), a follow's
 * open (follow.c). Each runs with a cancel flag of its own set for the
 * thread (tfs_scan_cancel_set), which the core's scans check between
 * blocks, so a scan whose client left stops within a block. At most
 * LIVE_SCAN_JOBS of a hub run at once, whatever the number of clients
 * and faces: the rest wait in a queue here, in order, holding no thread
 * and costing the loop nothing, and the pool keeps threads for launches.
 * The end waits for those queued and running (live_hold). */
#include <errno.h>
#include <stdlib.h>

#include "live/internal.h"

enum { QUEUED, RUNNING };

struct live_scan {
  uv_work_t work;
  live_hub_t *hub;
  live_scan_t *qnext;
  void (*run)(void *arg);
  void (*done)(void *arg, int err);
  void *arg;
  tfs_cancel_t cancel;
  int state;
};

static void scan_pump(live_hub_t *hub);

static void scan_work(uv_work_t *w) {
  live_scan_t *sc = w->data;
  if (sc->cancel)
    return;
  tfs_cancel_t *was = tfs_scan_cancel_set(&sc->cancel);
  sc->run(sc->arg);
  tfs_scan_cancel_set(was);
}

static void scan_end(live_scan_t *sc, int err) {
  live_hub_t *hub = sc->hub;
  sc->done(sc->arg, err ? err : sc->cancel ? -ECANCELED : 0);
  free(sc);
  live_hold(hub, -1);
}

static void scan_after(uv_work_t *w, int status) {
  live_scan_t *sc = w->data;
  live_hub_t *hub = sc->hub;
  hub->scanning--;
  scan_end(sc, status);
  scan_pump(hub);
}

static void scan_pump(live_hub_t *hub) {
  while (hub->scanning < LIVE_SCAN_JOBS && hub->scan_queue) {
    live_scan_t *sc = hub->scan_queue;
    hub->scan_queue = sc->qnext;
    sc->state = RUNNING;
    sc->work.data = sc;
    hub->scanning++;
    if (uv_queue_work(hub->loop, &sc->work, scan_work, scan_after)) {
      /* Only for wrong arguments: it waits for the next scan's end. */
      hub->scanning--;
      sc->state = QUEUED;
      sc->qnext = hub->scan_queue;
      hub->scan_queue = sc;
      return;
    }
  }
}

live_scan_t *live_scan_submit(live_hub_t *hub, void (*run)(void *arg),
                              void (*done)(void *arg, int err), void *arg) {
  live_scan_t *sc = calloc(1, sizeof *sc);
  if (!sc)
    return NULL;
  sc->hub = hub;
  sc->run = run;
  sc->done = done;
  sc->arg = arg;
  sc->state = QUEUED;
  live_scan_t **pp = &hub->scan_queue;
  while (*pp)
    pp = &(*pp)->qnext;
  *pp = sc;
  live_hold(hub, 1);
  scan_pump(hub);
  return sc;
}

void live_scan_cancel(live_scan_t *sc) {
  if (!sc)
    return;
  sc->cancel = 1;
  if (sc->state != QUEUED)
    return; /* running: it stops at its next block, and ends as usual */
  for (live_scan_t **pp = &sc->hub->scan_queue; *pp; pp = &(*pp)->qnext)
    if (*pp == sc) {
      *pp = sc->qnext;
      break;
    }
  scan_end(sc, -ECANCELED);
}
