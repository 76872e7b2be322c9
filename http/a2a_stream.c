/* SubscribeToTask, and following a task for a streaming or blocking
 * SendMessage. (Interim: until the server's feed (feed.c) lands, a follow
 * answers with the task as it stands.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/a2a.h"

void a2a_follow(http_req_t *r, json_t *id, const tfs_record_t *rec, int mode) {
  tfs_store_t *store = a2a_store(r);
  if (mode == A2A_FOLLOW_REPLY) {
    a2a_reply(r, id, json_pack("{s:o}", "task", a2a_task_json(store, rec, 1)));
    return;
  }
  http_stream_start(r, MHD_HTTP_OK, "text/event-stream", NULL, NULL);
  a2a_stream_event(r, id, json_pack("{s:o}", "task", a2a_task_json(store, rec, 1)));
  http_stream_end(r);
}

void a2a_subscribe(http_req_t *r, json_t *id, json_t *params) {
  char tid[TFS_ID_MAX + 1];
  if (a2a_param_id(r, id, params, tid))
    return;
  tfs_record_t rec;
  int err = tfs_task_load(a2a_store(r), tid, &rec);
  if (err)
    a2a_error(r, id, err == TFS_ENOTASK ? A2A_TASK_NOT_FOUND : A2A_INTERNAL_ERROR, "task %s: %s",
              tid, tfs_strerror(err));
  else if (tfs_state_terminal(rec.state))
    a2a_error(r, id, A2A_UNSUPPORTED_OPERATION,
              "task %s has already ended (%s): there is nothing to subscribe to; GetTask reads "
              "its end",
              tid, tfs_state_name(rec.state));
  else
    a2a_follow(r, id, &rec, A2A_FOLLOW_STREAM);
  tfs_record_free(&rec);
}
