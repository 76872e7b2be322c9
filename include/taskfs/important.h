/* taskfs: important lines: what makes an output line important, and the
 * first and last K of them with the lead, as a task's record keeps them
 * (core/important.c, lead.c, classify*.c; included by taskfs.h). See
 * docs/ARCHITECTURE.md, "Important lines". */
#ifndef TASKFS_IMPORTANT_H
#define TASKFS_IMPORTANT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFS_IMPORTANT_K_DEFAULT 20
#define TFS_IMPORTANT_TEXT_MAX 512 /* bytes kept of one important line */
#define TFS_IMPORTANT_K_MAX 1000   /* largest K tfs_important_init accepts */

/* What made a line important. 0 means "not important". */
typedef enum {
  TFS_LINE_PLAIN = 0,
  TFS_LINE_ERROR, /* error:, fatal, panic, Traceback, exception, segfault */
  TFS_LINE_WARNING,
  TFS_LINE_FAILURE, /* a test or build failure marker */
  TFS_LINE_SUMMARY, /* a test runner's or build tool's summary / success */
  TFS_LINE_CONTEXT, /* never from the classifier: a line shown around the lead */
} tfs_line_kind_t;

const char *tfs_line_kind_name(tfs_line_kind_t k);
int tfs_line_kind_parse(const char *name, tfs_line_kind_t *out);

/* Classifies one line (no trailing newline). Linear in len; never allocates;
 * examines at most the first 4 KiB. See docs/ARCHITECTURE.md. */
tfs_line_kind_t tfs_classify_line(const char *line, size_t len);

/* Lines shorter than this many bytes always classify as TFS_LINE_PLAIN (the
 * shortest markers, "ERR" and the UTF-8 crosses, take three), so a caller
 * feeding floods of short lines may skip tfs_classify_line() for them. */
#define TFS_CLASSIFY_MIN_LEN 3

typedef struct {
  int64_t line; /* 1-based line number in the transcript */
  tfs_line_kind_t kind;
  char *text; /* NUL-terminated, at most TFS_IMPORTANT_TEXT_MAX bytes,
                 cut lines end in "..."; ANSI colour sequences and a
                 trailing '\r' removed; valid UTF-8 (tfs_utf8_sanitize)
                 with C0 controls but tab also as U+FFFD */
} tfs_important_line_t;

#define TFS_CONTEXT_MAX 8        /* context lines kept around the lead */
#define TFS_CONTEXT_TEXT_MAX 240 /* bytes kept of one context line */

struct tfs__lead_tracker;
struct tfs__important_raw;

/* First K and last K important lines. "last" never repeats a line that is
 * in "first"; last is kept in order, oldest first, once finalized by
 * tfs_important_last().
 *
 * The lead is the first error: the important line that best says what went
 * wrong, chosen as the output goes by (core/lead.c): the first error or
 * failure, replaced by a line that says more within the next lines (the
 * exception after "Traceback", the assertion after "--- FAIL:"); context
 * holds the lines the tool printed around it (the traceback's last frame,
 * a caret's message, Expected/Received, "-->", javac's "symbol:"), in line
 * order, at most TFS_CONTEXT_MAX. Both are kept whatever the first/last K
 * rings drop. */
typedef struct {
  int k;
  int64_t total; /* important lines seen in all */
  size_t nfirst;
  tfs_important_line_t *first; /* k slots */
  size_t nlast;                /* ring buffer of k slots */
  size_t last_head;
  tfs_important_line_t *last;
  tfs_important_line_t lead; /* lead.line 0: none (yet) */
  size_t ncontext;
  tfs_important_line_t *context;     /* TFS_CONTEXT_MAX slots, kind TFS_LINE_CONTEXT */
  int lead_final;                    /* the lead and its context no longer change */
  struct tfs__lead_tracker *tracker; /* capture state while they may */
  struct tfs__important_raw *raw;    /* feeding state: a memo, the last ring's fed lines */
} tfs_important_t;

/* k <= 0: TFS_IMPORTANT_K_DEFAULT; k > TFS_IMPORTANT_K_MAX: -EINVAL. A zeroed
 * struct may be freed. */
int tfs_important_init(tfs_important_t *imp, int k);
void tfs_important_free(tfs_important_t *imp);
/* Feeds one line; classifies it and keeps it if important. */
int tfs_important_feed(tfs_important_t *imp, int64_t lineno, const char *line, size_t len);
/* Feeds one line as tfs_important_feed() does, except that a line kept in
 * the last ring is only pointed at until tfs_important_settle(): line must
 * stay valid and unchanged until then. A reader of a block of lines feeds
 * each by reference and settles once per block, so that only the K lines
 * still in the ring are copied, not every important line. */
int tfs_important_feed_ref(tfs_important_t *imp, int64_t lineno, const char *line, size_t len);
/* Copies the lines fed by reference that the ring still holds. */
void tfs_important_settle(tfs_important_t *imp);
/* Adds an already classified line (used when loading a record). */
int tfs_important_add(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind, const char *text,
                      size_t len);
/* The i-th of the last lines, oldest first (0 <= i < nlast). A line fed
 * into the ring gets its kept text here, when it is first read: a flood of
 * important lines costs a copy of each, not a text each (its text is NULL
 * only if that allocation failed). */
const tfs_important_line_t *tfs_important_last(const tfs_important_t *imp, size_t i);
/* Sets the lead and adds a context line (used when loading a record): the
 * lead no longer changes when more lines are fed. */
int tfs_important_set_lead(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind,
                           const char *text, size_t len);
int tfs_important_add_context(tfs_important_t *imp, int64_t lineno, const char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_IMPORTANT_H */
