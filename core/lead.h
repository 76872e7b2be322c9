/* Internal to core/important.c and core/lead.c: the lead tracker (lead.c),
 * which important.c feeds. */
#ifndef TASKFS_CORE_LEAD_H
#define TASKFS_CORE_LEAD_H

#include "taskfs/taskfs.h"

/* Adds a context line, in line order (a line kept already is not added
 * again); -ENOSPC when TFS_CONTEXT_MAX are kept. */
int tfs__context_insert(tfs_important_t *imp, int64_t lineno, const char *text, size_t len);

/* Follows one fed line (of kind, rank and block as tfs__classify() said):
 * takes it for the lead if it is a better one, or for context, and keeps
 * it among the last few lines until the lead is final. */
int tfs__lead_feed(tfs_important_t *imp, int64_t lineno, const char *line, size_t len, int kind,
                   int rank, int block);
void tfs__lead_free(tfs_important_t *imp);

#endif
