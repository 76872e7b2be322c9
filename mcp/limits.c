/* The server's limits (mcp_limits_t, part of its config) and the count of
 * requests in flight they bound.
 *
 * A request is in flight while something keeps it past its handler
 * (mcp_req_keep: a parked wait, a launch on the thread pool, a roots/list
 * of ours on its behalf, a listen stream), so the count is kept where
 * requests are kept and released (session.c), per session and per server.
 * A request about to become one of them is admitted here first; one that
 * already is (a start going from its launch to its wait) is not counted
 * twice. Over a limit the request gets -32000 with data {limit, max,
 * inFlight}, and what does not wait (a ping, a read without waitMs) is
 * still served. Each request in flight holds a bounded amount (its id, a
 * compiled untilPattern of at most pattern_memory, a batch of at most
 * scan_batch while it is matched), so the two counts bound the memory of
 * everything that waits. */
#include <stdio.h>

#include "mcp/internal.h"

#define DEF_PER_SESSION 64
#define DEF_PER_SERVER 256
#define DEF_PATTERN_MAX 1024
#define DEF_PATTERN_MEMORY (128u * 1024)
#define DEF_MATCH_STEPS 100000
#define DEF_MATCH_DEPTH 10000
#define DEF_MATCH_HEAP (4u << 20)
#define DEF_SCAN_BATCH (64u * 1024)

void mcp_limits_resolve(const mcp_limits_t *in, mcp_limits_t *out) {
  mcp_limits_t z = {0};
  const mcp_limits_t *l = in ? in : &z;
  out->requests_per_session = l->requests_per_session ? l->requests_per_session : DEF_PER_SESSION;
  out->requests_per_server = l->requests_per_server ? l->requests_per_server : DEF_PER_SERVER;
  out->pattern_max = l->pattern_max ? l->pattern_max : DEF_PATTERN_MAX;
  out->pattern_memory = l->pattern_memory ? l->pattern_memory : DEF_PATTERN_MEMORY;
  out->match_steps = l->match_steps ? l->match_steps : DEF_MATCH_STEPS;
  out->match_depth = l->match_depth ? l->match_depth : DEF_MATCH_DEPTH;
  out->match_heap = l->match_heap ? l->match_heap : DEF_MATCH_HEAP;
  /* A batch holds at least one line's matched part. */
  out->scan_batch = l->scan_batch > MCP_UNTIL_LINE_MAX ? l->scan_batch
                    : l->scan_batch                    ? MCP_UNTIL_LINE_MAX
                                                       : DEF_SCAN_BATCH;
}

const mcp_limits_t *mcp_limits(mcp_server_t *srv) {
  return &srv->lim;
}

void mcp_flight_count(mcp_session_t *s, int delta) {
  s->inflight += delta;
  s->srv->inflight += delta;
}

int mcp_admit_check(const mcp_req_t *r) {
  if (r->kept)
    return 0; /* already in flight, counted */
  if (r->sess->inflight >= r->srv->lim.requests_per_session)
    return MCP_OVER_SESSION;
  if (r->srv->inflight >= r->srv->lim.requests_per_server)
    return MCP_OVER_SERVER;
  return 0;
}

int mcp_admit_room(const mcp_req_t *r) {
  if (!r->kept)
    return !mcp_admit_check(r);
  /* Kept, it counts itself: one parked earlier was within the limits then
   * and stays so; one kept for its first look is over by one. */
  return r->sess->inflight <= r->srv->lim.requests_per_session &&
         r->srv->inflight <= r->srv->lim.requests_per_server;
}

void mcp_reply_over(const mcp_req_t *r, int over) {
  int session = over == MCP_OVER_SESSION;
  unsigned max = session ? r->srv->lim.requests_per_session : r->srv->lim.requests_per_server;
  unsigned now = session ? r->sess->inflight : r->srv->inflight;
  const char *name = session ? "requestsPerSession" : "requestsPerServer";
  json_t *data = json_pack("{s:s, s:I, s:I}", "limit", name, "max", (json_int_t)max, "inFlight",
                           (json_int_t)now);
  mcp_reply_error_data(r, MCP_RPC_LIMIT, data,
                       "too many requests in flight: %s already has %u waiting, starting or "
                       "listening, the most it may have (%s = %u); wait for one to be answered, "
                       "cancel one (notifications/cancelled), or ask without waiting (waitMs 0)",
                       session ? "this session" : "this server (over all its sessions)", now, name,
                       max);
}

int mcp_admit(const mcp_req_t *r) {
  int over = mcp_admit_check(r);
  if (over)
    mcp_reply_over(r, over);
  return over ? -1 : 0;
}
