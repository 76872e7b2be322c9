/* start_managed_task's scheduling arguments: queue, after (task ids or
 * keys), delayMs. Checked here against the core's rules (a queue name, a
 * dependency that exists and does not wait for itself or a cycle); the
 * types and bounds are the schema's (schema.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

void mcp_sched_free(mcp_sched_t *sc) {
  tfs_strv_free(sc->after);
  memset(sc, 0, sizeof *sc);
}

/* One dependency to an id: a task id of the store, or a key naming one. */
static int resolve_dep(mcp_server_t *srv, const char *arg, const char *key, char *id, char *msg,
                       size_t msglen) {
  struct stat st;
  if (key && !strcmp(arg, key)) {
    snprintf(msg, msglen, "after names '%s', the taskKey of this very task: a task cannot wait "
                          "for itself",
             key);
    return -1;
  }
  int err = tfs_task_resolve(mcp_store(srv), arg, id);
  if (!err)
    err = tfs_task_stat(mcp_store(srv), id, &st);
  if (err) {
    snprintf(msg, msglen,
             "after: '%.64s' names no task in this store (give task ids or keys from "
             "list_managed_tasks)",
             arg);
    return -1;
  }
  return 0;
}

int mcp_sched_parse(mcp_server_t *srv, json_t *args, const char *key, mcp_sched_t *sc, char *msg,
                    size_t msglen) {
  memset(sc, 0, sizeof *sc);
  const char *q = json_string_value(json_object_get(args, "queue"));
  if (q && !tfs_queue_name_valid(q)) {
    snprintf(msg, msglen,
             "queue '%.80s' is not a queue name: use 1-%d characters of A-Z a-z 0-9 . _ : - "
             "(not starting with '.')",
             q, TFS_QUEUE_NAME_MAX);
    return -1;
  }
  if (q)
    snprintf(sc->queue, sizeof sc->queue, "%s", q);
  int64_t delay = mcp_arg_i64(args, "delayMs", 0);
  sc->not_before_ms = delay > 0 ? tfs_now_ms() + delay : 0;
  json_t *after = json_object_get(args, "after");
  size_t n = json_array_size(after);
  if (!n)
    return 0;
  if (!(sc->after = calloc(n + 1, sizeof *sc->after))) {
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    char id[TFS_ID_MAX + 1];
    if (resolve_dep(srv, json_string_value(json_array_get(after, i)), key, id, msg, msglen) ||
        !(sc->after[i] = strdup(id))) {
      mcp_sched_free(sc);
      return -1;
    }
  }
  char bad[600];
  if (tfs_after_check(mcp_store(srv), sc->after, bad, sizeof bad) == TFS_ECYCLE) {
    snprintf(msg, msglen, "after: those tasks wait for each other (%.400s), so none could start",
             bad);
    mcp_sched_free(sc);
    return -1;
  }
  return 0;
}
