/* taskfs: the line index of a transcript (core/lineidx.c, part of
 * libtaskfs.a). Checkpoints "line L starts at byte B" kept beside the
 * transcript (tasks/<id>/lines.idx), so that "where does line L start" and
 * "what is the number of the line at byte B" cost a read of the index and
 * at most one checkpoint interval of the transcript, not the whole file.
 *
 * Who writes when:
 * - while a supervisor lives (it holds the task lock), it alone writes the
 *   index: it appends a checkpoint as its capture writes cross an interval
 *   (tfs_lineidx_feed, called from the capture's one write path);
 * - when no supervisor lives (an ended task, a task of an older taskfs, a
 *   supervisor that died), a reader that finds the index missing or far
 *   behind the transcript rebuilds it: it scans what the index lacks, then,
 *   holding the task lock for a moment (so no supervisor can start
 *   meanwhile), replaces the file whole (temp file, rename). A reader of a
 *   foreign store, or one that finds a supervisor alive, writes nothing
 *   and scans from the last checkpoint instead.
 * Every checkpoint is a fact that stays true: it sits at a line boundary
 * (the byte before it is a '\n'), which the capture never truncates away.
 * The file is append-only between rebuilds; each entry carries a check
 * word, so a torn or corrupt entry (and all after it) is ignored, and a
 * header naming the transcript's inode makes an index of another
 * transcript count as none.
 */
#ifndef TASKFS_LINEIDX_H
#define TASKFS_LINEIDX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tfs_store;

/* Bytes of transcript between two checkpoints (at least; a checkpoint
 * waits for the next line boundary). */
#define TFS_LINEIDX_INTERVAL (1 << 20)

/* A checkpoint: off is a line start, lines the number of '\n' before it
 * (so the line starting at off is number lines + 1). */
typedef struct {
  int64_t off, lines;
} tfs_lineidx_cp_t;

/* A flag a long scan checks between blocks: nonzero stops it with
 * -ECANCELED (set by the loop when the scan's client has left). NULL:
 * never cancelled. */
typedef volatile int tfs_cancel_t;

/* The flag the transcript scans of this thread check (tfs_transcript_*,
 * tfs_follower_open*): a face's work function on the thread pool sets it
 * around its core call and sets it back (NULL: none) after. Returns the
 * flag that was set before. */
tfs_cancel_t *tfs_scan_cancel_set(tfs_cancel_t *flag);
tfs_cancel_t *tfs_scan_cancel_get(void);

/* The number of '\n' bytes in p[0, n), 16 bytes at a time (SSE2). */
int64_t tfs_lineidx_count_newlines(const char *p, size_t n);

/* Reads the index of task id whose transcript has the stat tx (size and
 * inode): its valid checkpoints at or below tx->st_size, into *v (malloc'd;
 * v[0] is always {0, 0}, offsets grow strictly). When the index is
 * missing or lags more than a few intervals behind and no supervisor lives,
 * it is rebuilt first (see above) from the transcript open as tx_fd.
 * Returns 0 (an empty index is one checkpoint, {0, 0}) or a negative
 * errno; an unreadable index is no error, only slower. */
int tfs_lineidx_load(struct tfs_store *store, const char *id, int tx_fd, const struct stat *tx,
                     tfs_lineidx_cp_t **v, size_t *n, tfs_cancel_t *cancel);

/* The last checkpoint at or before byte off / whose line is at or before
 * line lineno. */
const tfs_lineidx_cp_t *tfs_lineidx_at_off(const tfs_lineidx_cp_t *v, size_t n, int64_t off);
const tfs_lineidx_cp_t *tfs_lineidx_at_line(const tfs_lineidx_cp_t *v, size_t n, int64_t lineno);

/* The number of '\n' in [0, off) of the transcript open as fd (stat st):
 * the index, then a count from its checkpoint. */
int tfs_lineidx_count(struct tfs_store *store, const char *id, int fd, const struct stat *st,
                      off_t off, int64_t *lines, tfs_cancel_t *cancel);

/* A line start at or before the start of line lineno (>= 1), and its
 * number: where a scan for that line begins. */
int tfs_lineidx_seek(struct tfs_store *store, const char *id, int fd, const struct stat *st,
                     int64_t lineno, off_t *at, int64_t *at_lineno, tfs_cancel_t *cancel);

/* Rebuilds the index of task id from its transcript now (interval bytes
 * between checkpoints, 0: TFS_LINEIDX_INTERVAL), if no supervisor lives:
 * 0, -EBUSY (one lives), -EROFS (a foreign store), or another error. */
int tfs_lineidx_rebuild(struct tfs_store *store, const char *id, int64_t interval,
                        tfs_cancel_t *cancel);

/* ---- the supervisor's side ------------------------------------------- */

typedef struct tfs_lineidx_writer tfs_lineidx_writer_t;

/* Opens task id's index for the supervisor that holds its lock, whose
 * transcript is open as tx_fd: an index that does not match the
 * transcript, or has a torn or bad tail, is rewritten with its good part,
 * and the lines since its last checkpoint are counted. interval 0:
 * TFS_LINEIDX_INTERVAL. */
int tfs_lineidx_writer_open(struct tfs_store *store, const char *id, int tx_fd, int64_t interval,
                            tfs_lineidx_writer_t **out);
/* The capture wrote data (len bytes) at transcript offset at. Bytes fed
 * before and cut away since (at below the end fed) held no '\n'. A
 * checkpoint is appended when data ends a line an interval after the
 * last one. Never fails: on a write error the index just stops growing. */
void tfs_lineidx_feed(tfs_lineidx_writer_t *w, int64_t at, const char *data, size_t len);
/* The same, from a caller that has counted data's newlines already. */
void tfs_lineidx_feed_counted(tfs_lineidx_writer_t *w, int64_t at, const char *data, size_t len,
                              int64_t newlines);
void tfs_lineidx_writer_close(tfs_lineidx_writer_t *w);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_LINEIDX_H */
