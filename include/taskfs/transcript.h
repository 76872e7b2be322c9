/* taskfs: a task's transcript: appending, reading lines, its tail, and
 * followers (core/transcript.c, transcript_tail.c; included by taskfs.h). */
#ifndef TASKFS_TRANSCRIPT_H
#define TASKFS_TRANSCRIPT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the transcript for appending (O_APPEND|O_CREAT, 0600). */
int tfs_transcript_open_append(tfs_store_t *store, const char *id);
/* Appends data with a single write(); with add_newline, a '\n' is added in
 * the same write. Returns 0 or a negative errno (e.g. -ENOSPC). */
int tfs_transcript_append(int fd, const char *data, size_t len, int add_newline);

/* Line callback: line without its '\n' (line[len] is '\0'; the line itself
 * may hold NUL bytes); lineno 1-based; partial = 1 for a final line that has
 * no newline (only delivered when asked). A line longer than 1 MiB is
 * delivered in pieces of 1 MiB so memory stays bounded: every piece but the
 * last comes with partial = 2 and the same lineno; the last piece carries
 * partial = 0 (or 1 if the line has no newline yet). Return non-zero to
 * stop. */
typedef int (*tfs_line_cb)(int64_t lineno, const char *line, size_t len, int partial, void *arg);

/* Reads lines [from_line, from_line + max_lines) (1-based). A trailing
 * partial line is delivered with partial = 1. Returns lines delivered. */
int64_t tfs_transcript_read(tfs_store_t *store, const char *id, int64_t from_line,
                            int64_t max_lines, tfs_line_cb cb, void *arg);

/* The last N lines, one definition for every face: a final line without
 * its newline counts as one of the N, as in tail(1). For "a\nb\nc" the
 * last line is "c" and the last two are "b\nc". */

/* Where the last n lines of the transcript start (n >= 0; 0: its end) and
 * the 1-based number of the first of them; *size: the transcript's size
 * then. A task that wrote nothing yet: all 0 (lineno 1). */
int tfs_transcript_tail(tfs_store_t *store, const char *id, int64_t n, off_t *offset,
                        int64_t *first_lineno, off_t *size);
/* Writes the transcript byte for byte onto out_fd: all of it (last_n < 0)
 * or its last last_n lines, up to its size at the call (a task writing fast
 * cannot keep the copy chasing it). Returns 0, -EPIPE when the reader of
 * out_fd went away (SIGPIPE is the caller's to ignore), or another
 * negative error. */
int tfs_transcript_copy(tfs_store_t *store, const char *id, int64_t last_n, int out_fd);
/* The end of the transcript bounded in bytes, for a viewer (the MCP
 * transcript resource): its last whole lines that fit in max bytes (a
 * final line without its newline counts, as above); when even the last
 * line is longer, its last max bytes. *text: malloc'ed, NUL-terminated,
 * *len bytes as written (not sanitized; it may hold NUL bytes); *size
 * (may be NULL): the transcript's size then, so *len < *size says the
 * text was cut. A task that wrote nothing yet: "" and 0. */
int tfs_transcript_tail_bytes(tfs_store_t *store, const char *id, size_t max, char **text,
                              size_t *len, off_t *size);

/* Follower: returns only what is new since the previous call.
 * last_n >= 0: the first call starts at the last last_n lines (as
 * tfs_transcript_tail() counts them), later calls return what was appended
 * since; last_n < 0: from the start. A follower never starts inside a
 * line: with last_n = 0 and a line still being written, it starts at that
 * line, delivered whole once completed, or flushed after it grew (flushed
 * as it was at the open, it was none of the last 0 lines). A partial line
 * is held back unless flush_partial: 1 delivers it as a final line
 * (partial = 1; use it once the task has ended), 2 as a piece of the line
 * (partial = 2) whose rest comes later under the same number (a prompt the
 * supervisor wrote while the task runs). So with 0 the first call after
 * opening delivers last_n - 1 lines while the last is incomplete. A file that shrank is read again
 * from the start; a file that vanished yields nothing until it reappears. */
typedef struct tfs_follower tfs_follower_t;
int tfs_follower_open(tfs_store_t *store, const char *id, int64_t last_n, tfs_follower_t **out);
/* The same, with the transcript taken to end at upto (upto < 0: no end):
 * where a follower opened when the size was upto starts (what a face that
 * opens it later, on a thread pool, needs). */
int tfs_follower_open_upto(tfs_store_t *store, const char *id, int64_t last_n, off_t upto,
                           tfs_follower_t **out);
int64_t tfs_follower_next(tfs_follower_t *f, int flush_partial, tfs_line_cb cb, void *arg);
/* A follower from a byte offset (a reader that reconnects where it
 * stopped): it starts at the first line that starts at or after offset,
 * so an offset inside a line skips the rest of that line, also of a line
 * still being written (it is not handed out when completed). An offset
 * past the end is the end. Lines keep their numbers from the start. */
int tfs_follower_open_at(tfs_store_t *store, const char *id, off_t offset, tfs_follower_t **out);
/* A follower from line lineno (>= 1; untilPattern after sinceLine): lines
 * before it are counted, not handed out, from the line index's checkpoint
 * at or before it, so opening costs at most an interval, not the file. */
int tfs_follower_open_line(tfs_store_t *store, const char *id, int64_t lineno,
                           tfs_follower_t **out);
/* During a callback of tfs_follower_next(): the byte offset just after the
 * line (or piece) handed out, its '\n' included; between calls: where the
 * next call starts. What a reader gives tfs_follower_open_at() to go on. */
off_t tfs_follower_line_end(const tfs_follower_t *f);
/* Lets the follower go on with another handle of the same store (one
 * tfs_store_reopen() made, or the one it was reopened from): a follower
 * holds no fd of its handle, only where it stands, so one opened on a
 * thread pool with the thread's own handle (the open counts the lines
 * before its start: the line index, then up to an interval of the file,
 * or the whole file where a rebuild of the index is due) goes on with the loop's,
 * and the thread's handle can be closed. */
void tfs_follower_rebind(tfs_follower_t *f, tfs_store_t *store);
void tfs_follower_close(tfs_follower_t *f);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_TRANSCRIPT_H */
