/* taskfs: the listing every face uses, its pages, and the ids of a store
 * (core/list.c, list_load.c, page.c; included by taskfs.h). */
#ifndef TASKFS_LIST_H
#define TASKFS_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "taskfs/ids.h"
#include "taskfs/state.h"
#include "taskfs/record.h"
#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The listing every face uses (`taskfs ls`, MCP lists, the mount, the
 * viewers): ids from one readdir, records loaded on up to two threads in
 * chunks (the JSON parse is the cost), handed to cb on the calling thread
 * in order. */
typedef struct {
  unsigned states;    /* TFS_STATE_BIT()s to keep; 0: every state */
  size_t limit;       /* 0: all; else only the newest `limit` kept tasks */
  int newest_first;   /* order of delivery; default oldest first */
  const char *before; /* only ids older than this one (a page cursor) */
  int with_json;      /* also hand cb each record as record.json text */
  int threads;        /* 0: two when the machine has two CPUs; 1: one */
  size_t scan_max;    /* 0: no cap; else read at most this many records, so
                         that one call stays short (an event loop's page):
                         stats say where it stopped */
} tfs_list_opts_t;

/* Counts of a listing. */
typedef struct {
  size_t ids;                         /* ids in tasks/ */
  size_t shown;                       /* records handed to cb */
  size_t corrupt;                     /* unreadable records skipped */
  char first_corrupt[TFS_ID_MAX + 1]; /* the oldest of them */
  char last_examined[TFS_ID_MAX + 1]; /* with a limit: where the walk stopped */
  size_t left;                        /* ids the walk did not reach (stopped by
                                         the limit, scan_max or cb): newest
                                         first, the next page is before =
                                         last_examined */
} tfs_list_stats_t;

/* rec as tfs_task_load() reads it (a dead supervisor's task reads lost);
 * json (with opts->with_json; else NULL) is tfs_record_dump() of it, len
 * bytes, ending in '\n'. Both are valid during the call only. Return
 * non-zero to stop. */
typedef int (*tfs_list_cb)(const tfs_record_t *rec, const char *json, size_t len, void *arg);
/* opts may be NULL (every task, oldest first). stats may be NULL. A task
 * being created (no record yet, younger than 5 s) or forgotten meanwhile is
 * skipped silently. Returns 0, or a negative error (-ENOMEM, a failed
 * readdir). */
int tfs_task_list_opts(tfs_store_t *store, const tfs_list_opts_t *opts, tfs_list_cb cb, void *arg,
                       tfs_list_stats_t *stats);
/* One page of the listing for a face that pages (MCP's lists, the JSON
 * API, A2A's ListTasks): newest first, older than cursor (the last id the
 * previous page examined; NULL or "": from the newest), at most limit
 * records kept, at most scan_max (0: TFS_PAGE_SCAN_MAX) read, so that a
 * state filter over a large store never holds an event loop for long: the
 * cursor goes on. */
#define TFS_PAGE_SCAN_MAX 5000
typedef struct {
  unsigned states;    /* TFS_STATE_BIT()s; 0: every state */
  size_t limit;       /* records kept */
  const char *cursor; /* the previous page's next, or NULL */
  size_t scan_max;
  int with_json; /* hand cb each record's text too (tfs_list_opts_t) */
  /* filled by the page */
  size_t total;              /* tasks in the store */
  int capped;                /* the scan cap ended the page before limit */
  char next[TFS_ID_MAX + 1]; /* the next page's cursor; "" after the last */
} tfs_page_t;
/* Returns 0; TFS_ENOTASK for a cursor that names no task here (not handed
 * out by this store, or its task removed since), or the listing's error,
 * with what was wrong in err. */
int tfs_task_page(tfs_store_t *store, tfs_page_t *pg, tfs_list_cb cb, void *arg, char *err,
                  size_t errlen);
/* All task ids, oldest first, without reading any record. *ids is a
 * malloc'ed array of malloc'ed strings; free with tfs_ids_free. */
int tfs_task_ids(tfs_store_t *store, char ***ids, size_t *n);
/* As tfs_task_ids(), only the ids that are real directories (what
 * tfs_task_stat() accepts: a symlink or a file planted under an id is left
 * out), from d_type where the file system gives it (the mount's tasks/). */
int tfs_task_dirs(tfs_store_t *store, char ***ids, size_t *n);
void tfs_ids_free(char **ids, size_t n);
/* Number of tasks, without reading records. */
int64_t tfs_task_count(tfs_store_t *store);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_LIST_H */
