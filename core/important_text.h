/* Internal to core: the kept text of an important line
 * (core/important_text.c), for important.c and lead.c. */
#ifndef TASKFS_CORE_IMPORTANT_TEXT_H
#define TASKFS_CORE_IMPORTANT_TEXT_H

#include "taskfs/taskfs.h"

/* The part of a line its kept text is made from (the first phase of
 * tfs__important_text): at most TFS__TEXT_PREFIX bytes without escape sequences and
 * without one trailing '\r', and whether that was the whole line. */
enum { TFS__TEXT_PREFIX = TFS_IMPORTANT_TEXT_MAX + 4 };

typedef struct {
  unsigned short len;    /* bytes in raw */
  unsigned char whole;   /* raw is the whole line (nothing was left after it) */
  unsigned char pending; /* in the last ring: its text is still to be made */
  char raw[TFS__TEXT_PREFIX];
} tfs__text_raw_t;

/* The first phase: the prefix of line into r. */
void tfs__text_take(tfs__text_raw_t *r, const char *line, size_t len);
/* The second phase: the text of r, at most max bytes, malloc'ed (NULL
 * without memory). */
char *tfs__text_finish(const tfs__text_raw_t *r, size_t max);
/* Both phases: the kept text of a line, at most max bytes (at most
 * TFS_IMPORTANT_TEXT_MAX). */
char *tfs__important_text(const char *line, size_t len, size_t max);

#endif
