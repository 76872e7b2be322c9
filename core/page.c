/* One page of the task list for a face that pages (MCP's three lists, the
 * JSON API, A2A's ListTasks): the core listing, newest first, older than a
 * cursor that is the last id the previous page examined. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int tfs_task_page(tfs_store_t *store, tfs_page_t *pg, tfs_list_cb cb, void *arg, char *err,
                  size_t errlen) {
  /* A cursor that names no task in the store was not handed out here (or
   * that task was removed since: the list starts again from the top). */
  const char *cursor = pg->cursor && *pg->cursor ? pg->cursor : NULL;
  struct stat cst;
  if (cursor && !tfs_id_valid(cursor)) {
    snprintf(err, errlen,
             "cursor '%.64s' is not a task id: give the cursor the previous page handed out, or "
             "omit it to start from the newest task",
             cursor);
    return TFS_ENOTASK;
  }
  if (cursor && tfs_task_stat(store, cursor, &cst) == TFS_ENOTASK) {
    snprintf(err, errlen,
             "cursor '%.64s' names no task in this store: it was not handed out here, or its "
             "task was removed since; omit it to start from the newest task",
             cursor);
    return TFS_ENOTASK;
  }
  tfs_list_opts_t o = {.states = pg->states,
                       .limit = pg->limit,
                       .newest_first = 1,
                       .before = cursor,
                       .with_json = pg->with_json,
                       .scan_max = pg->scan_max ? pg->scan_max : TFS_PAGE_SCAN_MAX};
  tfs_list_stats_t st;
  int rc = tfs_task_list_opts(store, &o, cb, arg, &st);
  if (rc) {
    snprintf(err, errlen, "cannot list the store: %s", tfs_strerror(rc));
    return rc;
  }
  pg->total = st.ids;
  pg->capped = st.left > 0 && st.shown < pg->limit;
  snprintf(pg->next, sizeof pg->next, "%s", st.left > 0 ? st.last_examined : "");
  return 0;
}
