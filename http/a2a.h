/* The A2A face of `taskfs serve` (A2A 1.0, the JSON-RPC binding): what its
 * modules share. a2a.c the route (the envelope, the version, the
 * methods that read and cancel), a2a_card.c the agent card, a2a_task.c a
 * taskfs task as an A2A Task, a2a_send.c SendMessage (a task started
 * through the one start path), a2a_stream.c SubscribeToTask. */
#ifndef TASKFS_HTTP_A2A_H
#define TASKFS_HTTP_A2A_H

#include <jansson.h>

#include "http/internal.h"

#define A2A_PROTOCOL_VERSION "1.0"
#define A2A_TAIL_BYTES (16u * 1024) /* the tail artifact: the transcript's last bytes */

/* The error codes (A2A 1.0, section 5.4, and JSON-RPC 2.0's). */
enum {
  A2A_PARSE_ERROR = -32700,
  A2A_INVALID_REQUEST = -32600,
  A2A_METHOD_NOT_FOUND = -32601,
  A2A_INVALID_PARAMS = -32602,
  A2A_INTERNAL_ERROR = -32603,
  A2A_TASK_NOT_FOUND = -32001,
  A2A_TASK_NOT_CANCELABLE = -32002,
  A2A_PUSH_NOT_SUPPORTED = -32003,
  A2A_UNSUPPORTED_OPERATION = -32004,
  A2A_CONTENT_TYPE_NOT_SUPPORTED = -32005,
  A2A_VERSION_NOT_SUPPORTED = -32009,
};

/* The routes (routes.c). */
void http_a2a_card(http_req_t *r);
void http_a2a_handle(http_req_t *r);

/* Answers (a2a.c): a JSON-RPC result (taken) or error for the call id. */
void a2a_reply(http_req_t *r, json_t *id, json_t *result);
void a2a_error(http_req_t *r, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* One JSON-RPC response as an SSE event (a stream's next message; takes
 * result). */
void a2a_stream_event(http_req_t *r, json_t *id, json_t *result);
/* An error as a stream's last event. */
void a2a_stream_error(http_req_t *r, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The store the server serves (the MCP server's refreshed handle). */
tfs_store_t *a2a_store(http_req_t *r);
/* A task id from params.id: 0, or answered (-32602 not a string,
 * -32001 no such task) and -1. */
int a2a_param_id(http_req_t *r, json_t *id, json_t *params, char out[TFS_ID_MAX + 1]);

/* Tasks (a2a_task.c). */
/* A JSON string of s[0..len), valid UTF-8 whatever the task wrote. */
json_t *a2a_text(const char *s, size_t len);
const char *a2a_state_wire(tfs_state_t s);
/* A TaskState name as a filter of taskfs states: 0 with *bits (0 for a
 * state no taskfs task is ever in), or -1 for a name A2A does not have. */
int a2a_state_filter(const char *name, unsigned *bits, int *none);
/* When the task last changed state (its status timestamp). */
int64_t a2a_status_ms(const tfs_record_t *rec);
/* The TaskStatus of a record: its state, when, and for an end the reason
 * in a message. */
json_t *a2a_status_json(const tfs_record_t *rec);
/* The Task: id, contextId (the id: every task is its own context),
 * status, metadata.taskfs, and with artifacts the important lines and the
 * transcript's tail (read from the store). */
json_t *a2a_task_json(tfs_store_t *store, const tfs_record_t *rec, int artifacts);
/* The same with artifacts, for a stream that goes on from its tail: the
 * tail ends at a line's end (a last line still being written is left to
 * the stream), and *end gets the transcript offset where it ends, where
 * the stream's first chunk begins. */
json_t *a2a_task_json_at(tfs_store_t *store, const tfs_record_t *rec, off_t *end);

/* The methods that start or stream (a2a_send.c, a2a_stream.c); id is
 * borrowed: a method that answers later keeps its own reference. */
void a2a_send_message(http_req_t *r, json_t *id, json_t *params, int stream);
void a2a_subscribe(http_req_t *r, json_t *id, json_t *params);
/* Follows a task that has not ended on the server's feed: STREAM answers
 * with an SSE stream (the Task, then status and artifact updates with its
 * new output lines, ending with the final status), REPLY holds the call
 * and answers {task} once the task has ended (a blocking SendMessage),
 * CANCEL the same with the bare Task (CancelTask). */
enum {
  A2A_FOLLOW_STREAM = 1,
  A2A_FOLLOW_REPLY,
  A2A_FOLLOW_CANCEL /* REPLY with the Task itself */
};
void a2a_follow(http_req_t *r, json_t *id, const tfs_record_t *rec, int mode);

#endif /* TASKFS_HTTP_A2A_H */
