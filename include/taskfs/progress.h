/* taskfs: a running task's progress as a live face tells it (core/progress.c,
 * part of libtaskfs.a). The counters come from the record, which the
 * supervisor saves at most every 250 ms while output flows (lines, bytes,
 * important lines seen, CPU so far): a face that re-reads the record on a
 * watch event has them without ever reading the transcript.
 *
 * tfs_progress_t is one task's pace for one feed: what was told last, and
 * when. A face asks tfs_progress_check() each time it has read the record;
 * the answer says tell now, nothing new, or hold for so many ms (at most
 * one tell per TFS_PROGRESS_INTERVAL_MS per task). Coalescing is the
 * caller's look again after the hold: whatever the record says then is
 * told, so the latest counters win and the last change is never lost.
 * Pure logic on a record and a time given by the caller, no clock and no
 * loop of its own: tests drive it with times of their choosing. */
#ifndef TASKFS_PROGRESS_H
#define TASKFS_PROGRESS_H

#include <stdint.h>

#include "taskfs/taskfs.h"

/* At most one progress event per task in this many ms (2 a second). */
#define TFS_PROGRESS_INTERVAL_MS 500
/* Important lines an event carries at most: the newest since the last. */
#define TFS_PROGRESS_NEW_MAX 5

typedef struct {
  int64_t lines, bytes; /* the transcript's */
  int64_t important;    /* important lines seen in all */
  int64_t cpu_ms;       /* user + system, every run so far */
} tfs_progress_counts_t;

typedef struct {
  tfs_progress_counts_t told;
  int64_t told_ms;   /* when told last; 0: never (a tell is due at once) */
  int64_t told_line; /* the newest important line told */
} tfs_progress_t;

void tfs_progress_counts(const tfs_record_t *rec, tfs_progress_counts_t *out);
/* The record was told whole at now_ms (a state change, or the first sight
 * of a task: now_ms 0 leaves the next tell due at once). */
void tfs_progress_told(tfs_progress_t *p, const tfs_record_t *rec, int64_t now_ms);
/* -1: its counters are those told; 0: tell now; > 0: held, look again in
 * that many ms. */
int64_t tfs_progress_check(const tfs_progress_t *p, const tfs_record_t *rec, int64_t now_ms);
/* The progress event of rec (malloc'ed JSON, NULL without memory), marked
 * told at now_ms: {"id", "state", "transcript": {"lines", "bytes"},
 * "usage": {"cpuUserMs", "cpuSystemMs"}, "important": {"total", "new":
 * [{"line", "kind", "text"}]}}, member names as in record.json; "new" holds
 * the newest important lines after the last told, at most
 * TFS_PROGRESS_NEW_MAX, oldest first. */
char *tfs_progress_dump(tfs_progress_t *p, const tfs_record_t *rec, int64_t now_ms);

#endif
