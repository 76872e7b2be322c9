/* A running task's progress for live faces (include/taskfs/progress.h):
 * the counters a record carries, the rate of one task's progress events,
 * and the event's JSON. The record is the one source: the supervisor
 * saves it as output flows (supervisor/save.c), so a feed that reads it on
 * a watch event counts nothing itself and never reads the transcript. */
#include "taskfs/progress.h"
#include "core/record_custom.h"
#include "taskfs/buf.h"

#include <stdlib.h>

void tfs_progress_counts(const tfs_record_t *rec, tfs_progress_counts_t *out) {
  out->lines = rec->lines;
  out->bytes = rec->bytes;
  out->important = rec->important.total;
  out->cpu_ms = rec->usage.user_ms + rec->usage.sys_ms;
}

static int same_counts(const tfs_progress_counts_t *a, const tfs_progress_counts_t *b) {
  return a->lines == b->lines && a->bytes == b->bytes && a->important == b->important &&
         a->cpu_ms == b->cpu_ms;
}

/* The kept important lines in line order: the first K, then the ring of
 * the last K (which never repeats a line of the first). i counts both. */
static const tfs_important_line_t *kept_line(const tfs_important_t *imp, size_t i) {
  if (i < imp->nfirst)
    return imp->first ? &imp->first[i] : NULL;
  return tfs_important_last(imp, i - imp->nfirst);
}

static int64_t newest_line(const tfs_important_t *imp) {
  size_t n = imp->nfirst + imp->nlast;
  const tfs_important_line_t *l = n ? kept_line(imp, n - 1) : NULL;
  return l ? l->line : 0;
}

void tfs_progress_told(tfs_progress_t *p, const tfs_record_t *rec, int64_t now_ms) {
  tfs_progress_counts(rec, &p->told);
  p->told_ms = now_ms;
  p->told_line = newest_line(&rec->important);
}

int64_t tfs_progress_check(const tfs_progress_t *p, const tfs_record_t *rec, int64_t now_ms) {
  tfs_progress_counts_t c;
  tfs_progress_counts(rec, &c);
  if (same_counts(&c, &p->told))
    return -1;
  int64_t wait = p->told_ms + TFS_PROGRESS_INTERVAL_MS - now_ms;
  if (!p->told_ms || wait <= 0)
    return 0;
  /* A clock stepped back holds no longer than one interval. */
  return wait > TFS_PROGRESS_INTERVAL_MS ? TFS_PROGRESS_INTERVAL_MS : wait;
}

/* "new": the kept important lines after the last told, the newest
 * TFS_PROGRESS_NEW_MAX of them. */
static void write_new(jw_t *w, const tfs_important_t *imp, int64_t after) {
  size_t n = imp->nfirst + imp->nlast, fresh = 0;
  for (size_t i = 0; i < n; i++) {
    const tfs_important_line_t *l = kept_line(imp, i);
    fresh += l && l->line > after;
  }
  size_t skip = fresh > TFS_PROGRESS_NEW_MAX ? fresh - TFS_PROGRESS_NEW_MAX : 0;
  tfs__jw_key(w, "new");
  tfs__jw_open(w, '[');
  for (size_t i = 0; i < n; i++) {
    const tfs_important_line_t *l = kept_line(imp, i);
    if (!l || l->line <= after || (skip && skip--))
      continue;
    tfs__rf_write_important_line(w, l);
  }
  tfs__jw_close(w, ']');
}

char *tfs_progress_dump(tfs_progress_t *p, const tfs_record_t *rec, int64_t now_ms) {
  jw_t w = {0};
  tfs__jw_open(&w, '{');
  tfs__jw_key(&w, "id");
  tfs__jw_str(&w, rec->id);
  tfs__jw_key(&w, "state");
  tfs__jw_str(&w, tfs_state_name(rec->state));
  tfs__jw_key(&w, "transcript");
  tfs__jw_open(&w, '{');
  tfs__jw_key(&w, "lines");
  tfs__jw_num(&w, rec->lines);
  tfs__jw_key(&w, "bytes");
  tfs__jw_num(&w, rec->bytes);
  tfs__jw_close(&w, '}');
  tfs__jw_key(&w, "usage");
  tfs__jw_open(&w, '{');
  tfs__jw_key(&w, "cpuUserMs");
  tfs__jw_num(&w, rec->usage.user_ms);
  tfs__jw_key(&w, "cpuSystemMs");
  tfs__jw_num(&w, rec->usage.sys_ms);
  tfs__jw_close(&w, '}');
  tfs__jw_key(&w, "important");
  tfs__jw_open(&w, '{');
  tfs__jw_key(&w, "total");
  tfs__jw_num(&w, rec->important.total);
  write_new(&w, &rec->important, p->told_line);
  tfs__jw_close(&w, '}');
  tfs__jw_close(&w, '}');
  char *json = tfs_buf_take(&w.b, NULL);
  if (json)
    tfs_progress_told(p, rec, now_ms);
  return json;
}
