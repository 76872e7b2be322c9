/* The columns of `taskfs ls` (cli/ls_columns.c). */
#ifndef TASKFS_CLI_LS_COLUMNS_H
#define TASKFS_CLI_LS_COLUMNS_H

#include "taskfs/taskfs.h"

#define LS_COLS_MAX 24
#define LS_CELL_MAX 1100 /* bytes of one cell's text, the command's "..." included */

typedef struct {
  const char *name;   /* for --columns */
  const char *header; /* the heading printed */
  int right;          /* aligned right (numbers) */
  size_t min;         /* at least this wide */
} ls_col_t;

/* Column col, or NULL. */
const ls_col_t *ls_column(int col);
/* The command column (cut to the terminal when it is last), the key one
 * (at most 32 wide). */
int ls_column_is_command(int col);
int ls_column_is_key(int col);
/* The default columns: ID STATE AGE TIME EXIT KEY COMMAND. Their count. */
int ls_columns_default(int out[LS_COLS_MAX]);
/* "id,state,cpu" into out; the count, or -1 with the bad name in bad. */
int ls_columns_parse(const char *arg, int out[LS_COLS_MAX], char *bad, size_t badlen);
/* Every name, for messages and the help. */
const char *ls_columns_names(void);
/* The text of column col for rec into buf (len >= LS_CELL_MAX); its length. */
size_t ls_column_text(int col, const tfs_record_t *rec, int64_t now, char *buf, size_t len);

#endif
