/* Transcript scans of a server on the loop's thread pool: a tail read's
 * lines (output.c), a follow's open (http/follow.c). Each runs with a
 * cancel flag of its own set for the thread (tfs_scan_cancel_set), which
 * the core's scans check between blocks, so a scan whose client left stops
 * within a block. At most SCAN_JOBS of a server run at once, whatever the
 * number of clients: the rest wait in a queue here, in order, holding no
 * thread and costing the loop nothing, and the pool keeps threads for
 * launches and the untilPattern batches (until.c). The server's end waits
 * for those queued and running (mcp_hold). */
#include <errno.h>
#include <stdlib.h>

#include "mcp/internal.h"

#define SCAN_JOBS 2

enum { QUEUED, RUNNING };

struct mcp_scan {
  uv_work_t work;
  mcp_server_t *srv;
  mcp_scan_t *qnext;
  void (*run)(void *arg);
  void (*done)(void *arg, int err);
  void *arg;
  tfs_cancel_t cancel;
  int state;
};

static void scan_pump(mcp_server_t *srv);

static void scan_work(uv_work_t *w) {
  mcp_scan_t *sc = w->data;
  if (sc->cancel)
    return;
  tfs_cancel_t *was = tfs_scan_cancel_set(&sc->cancel);
  sc->run(sc->arg);
  tfs_scan_cancel_set(was);
}

static void scan_end(mcp_scan_t *sc, int err) {
  mcp_server_t *srv = sc->srv;
  sc->done(sc->arg, err ? err : sc->cancel ? -ECANCELED : 0);
  free(sc);
  mcp_hold(srv, -1);
}

static void scan_after(uv_work_t *w, int status) {
  mcp_scan_t *sc = w->data;
  mcp_server_t *srv = sc->srv;
  srv->scanning--;
  scan_end(sc, status);
  scan_pump(srv);
}

static void scan_pump(mcp_server_t *srv) {
  while (srv->scanning < SCAN_JOBS && srv->scan_queue) {
    mcp_scan_t *sc = srv->scan_queue;
    srv->scan_queue = sc->qnext;
    sc->state = RUNNING;
    sc->work.data = sc;
    srv->scanning++;
    if (uv_queue_work(srv->loop, &sc->work, scan_work, scan_after)) {
      /* Only for wrong arguments: it waits for the next scan's end. */
      srv->scanning--;
      sc->state = QUEUED;
      sc->qnext = srv->scan_queue;
      srv->scan_queue = sc;
      return;
    }
  }
}

mcp_scan_t *mcp_scan_submit(mcp_server_t *srv, void (*run)(void *arg),
                            void (*done)(void *arg, int err), void *arg) {
  mcp_scan_t *sc = calloc(1, sizeof *sc);
  if (!sc)
    return NULL;
  sc->srv = srv;
  sc->run = run;
  sc->done = done;
  sc->arg = arg;
  sc->state = QUEUED;
  mcp_scan_t **pp = &srv->scan_queue;
  while (*pp)
    pp = &(*pp)->qnext;
  *pp = sc;
  mcp_hold(srv, 1);
  scan_pump(srv);
  return sc;
}

void mcp_scan_cancel(mcp_scan_t *sc) {
  if (!sc)
    return;
  sc->cancel = 1;
  if (sc->state != QUEUED)
    return; /* running: it stops at its next block, and ends as usual */
  for (mcp_scan_t **pp = &sc->srv->scan_queue; *pp; pp = &(*pp)->qnext)
    if (*pp == sc) {
      *pp = sc->qnext;
      break;
    }
  scan_end(sc, -ECANCELED);
}

int mcp_scans_running(const mcp_server_t *srv) {
  return srv->scanning;
}
