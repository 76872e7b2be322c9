/* The columns of `taskfs ls` (cli/ls_columns.c). */
#ifndef TASKFS_CLI_LS_COLUMNS_H
#define TASKFS_CLI_LS_COLUMNS_H

#include "taskfs/taskfs.h"

#define LS_COLS_MAX 24
#define LS_CELL_MAX 1100 /* bytes of a cell's text, but for a command or reason */

/* What every cell of one listing is made with. */
typedef struct {
  int64_t now;
  int absolute;                     /* --time: STARTED and ENDED as local times */
  tfs_queue_positions_t *positions; /* where waiting tasks stand (REASON); may be NULL */
} ls_ctx_t;

typedef struct {
  const char *name;   /* for --columns */
  const char *header; /* the heading printed */
  int right;          /* aligned right (numbers) */
  size_t min;         /* at least this wide */
} ls_col_t;

/* Column col, or NULL. */
const ls_col_t *ls_column(int col);
/* The command column, the key one (cut on a terminal). */
int ls_column_is_command(int col);
int ls_column_is_key(int col);
/* The reason column (capped, and cut first on a narrow terminal); the
 * state and exit ones (coloured on a terminal). */
int ls_column_is_reason(int col);
int ls_column_is_state(int col);
int ls_column_is_exit(int col);
/* The default columns: # ID STATE STARTED ENDED EXIT KEY REASON COMMAND.
 * Their count. */
int ls_columns_default(int out[LS_COLS_MAX]);
/* "id,state,cpu" into out; the count, or -1 with the bad name in bad. */
int ls_columns_parse(const char *arg, int out[LS_COLS_MAX], char *bad, size_t badlen);
/* The name of column i for --columns, "unknown" past the last (the
 * completions offer them). */
const char *ls_column_name(unsigned i);
/* Every name, for messages and the help. */
const char *ls_columns_names(void);
/* The bytes column col's text for rec may need (a command or a reason
 * is never cut), at least LS_CELL_MAX. */
size_t ls_column_room(int col, const tfs_record_t *rec);
/* The text of column col for rec into buf (len >= ls_column_room());
 * its length. */
size_t ls_column_text(int col, const tfs_record_t *rec, const ls_ctx_t *ctx, char *buf, size_t len);

#endif
