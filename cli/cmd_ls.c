/* taskfs ls: one line per task, oldest first, newest at the bottom like a
 * log. The listing is core's (tfs_task_list_opts: ids from one readdir,
 * records parsed on two threads, states, a limit that reads only the newest
 * records it needs, the record text for --json); this verb keeps each text
 * row in a compact form only so that the KEY column can be sized, streams
 * --json as it comes, and writes through one large stdio buffer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/ls_columns.h"
#include "cli/ls_view.h"
#include "cli/verbs.h"
#include "taskfs/buf.h"
#include "taskfs/text.h"

static const char usage_text[] =
    "usage: taskfs ls [--json] [--columns C[,C...]] [--state S[,S...]] [--limit N]\n"
    "                 [--all] [--time] [--color[=auto|always|never]] [--state-dir DIR]\n"
    "                 [--foreign-store]\n"
    "\n"
    "Lists tasks, oldest first (the newest at the bottom). Columns: ID, STATE,\n"
    "STARTED and ENDED (how long ago; --time: when), EXIT (exit code, or the\n"
    "signal that killed it), KEY, REASON (why it ended; for a task that waits,\n"
    "where it stands: '2nd in queue build (2 of 2 running)'), COMMAND. On a\n"
    "terminal the row fits its width (long keys, reasons and commands are cut\n"
    "with ...) and states are coloured; into a pipe or a file nothing is cut.\n"
    "\n"
    "  --json           a JSON array of the full records, oldest first\n"
    "  --columns C,...  the columns to show, in this order: id, state, started,\n"
    "                   ended, age (since created), time (run time), exit, key,\n"
    "                   reason, command, cpu (user + system, the whole tree),\n"
    "                   cpu-user, cpu-sys, maxrss (the largest process), treepeak\n"
    "                   (the memory cgroup's peak), output (bytes), queued,\n"
    "                   restarts, timeout, limits\n"
    "  --state S        only tasks in state S: queued, running, paused, completed,\n"
    "                   failed, cancelled, lost (repeat it or use commas)\n"
    "  --time           STARTED and ENDED as local times (2026-12-01 18:04:05)\n"
    "  --color[=WHEN]   colour the states: auto (on a terminal, unless NO_COLOR is\n"
    "                   set; the default), always (also --color alone) or never;\n"
    "                   --colour is the same\n"
    "  --limit N        only the newest N tasks (after --state), still oldest first\n"
    "  --all            every task (the default; cancels an earlier --limit)\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  --foreign-store  read another user's store (root), changing nothing in it\n"
    "  -h, --help       show this help\n"
    "\n"
    "Unreadable records are skipped with a note on stderr. A store that does not\n"
    "exist yet lists as empty and is not created.\n"
    "\n"
    "EXIT STATUS\n"
    "  0 ok, 100 usage, 111 system failure (also: the store is refused, another\n"
    "  user's or writable by others).\n";

#define KEY_COL_TERM 24    /* on a terminal, longer keys are cut */
#define REASON_COL_TERM 32 /* on a terminal, longer reasons are cut */

/* One row: the offsets of its cells' texts in the pool. */
typedef struct {
  size_t cell[LS_COLS_MAX];
} row_t;

#define NO_CELL ((size_t)-1)

/* The rows, and their texts in one pool: a listing of 100,000 tasks makes
 * no allocation per row. */
typedef struct {
  row_t *rows;
  size_t n, cap;
  char *pool;
  size_t plen, pcap;
} rows_t;

static void rows_free(rows_t *r) {
  free(r->rows);
  free(r->pool);
}

/* Copies s (len bytes and a NUL) into the pool; its offset, or NO_CELL
 * without memory. */
static size_t pool_add(rows_t *r, const char *s, size_t len) {
  if (tfs_grow(&r->pool, &r->pcap, r->plen + len + 1, 1, 1 << 16))
    return NO_CELL;
  size_t at = r->plen;
  memcpy(r->pool + at, s, len);
  r->pool[at + len] = 0;
  r->plen += len + 1;
  return at;
}

/* What a listing is asked for, and what it has found so far. */
typedef struct {
  int json;
  int64_t limit;         /* -1: every task */
  unsigned mask;         /* the states shown (TFS_STATE_BIT), 0: all */
  int color;             /* CLI_COLOR_* */
  ls_ctx_t ctx;          /* now, --time, where waiting tasks stand */
  int cols[LS_COLS_MAX]; /* the columns, in order */
  int ncols;
  rows_t rows;  /* text rows, printed at the end (the columns are sized on them) */
  size_t shown; /* --json records written */
  int err;      /* -ENOMEM once a row could not be kept */
  tfs_list_stats_t stats;
} listing_t;

/* Each cell whole, however long (a command of 100 KB included): the text
 * buffer grows to what the cell may need (ls_column_room). */
static int fill_row(rows_t *r, row_t *row, const listing_t *l, const tfs_record_t *rec) {
  static char *text;
  static size_t cap;
  for (int c = 0; c < l->ncols; c++) {
    size_t need = ls_column_room(l->cols[c], rec);
    if (tfs_grow(&text, &cap, need, 1, need))
      return -ENOMEM;
    size_t len = ls_column_text(l->cols[c], rec, &l->ctx, text, cap);
    if ((row->cell[c] = pool_add(r, text, len)) == NO_CELL)
      return -ENOMEM;
  }
  return 0;
}

/* The width of each column: its heading, its minimum, its widest cell.
 * Into a pipe or a file that is all: nothing is cut. On a terminal KEY is
 * at most KEY_COL_TERM and REASON REASON_COL_TERM wide (unless last: the
 * last column gets the rest of the line), and when a last COMMAND would
 * get fewer than 20 columns the reason gives some up, then the key, down
 * to their floors (10 and 8, then their headings), so that an 80-column
 * terminal still gets whole rows. */
static void col_widths(const listing_t *l, size_t term_cols, size_t w[LS_COLS_MAX]) {
  const rows_t *r = &l->rows;
  int key = -1, why = -1;
  size_t used = 0;
  for (int c = 0; c < l->ncols; c++) {
    const ls_col_t *col = ls_column(l->cols[c]);
    int last = c == l->ncols - 1;
    size_t cap = !term_cols || last                ? 0
                 : ls_column_is_key(l->cols[c])    ? KEY_COL_TERM
                 : ls_column_is_reason(l->cols[c]) ? REASON_COL_TERM
                                                   : 0;
    w[c] = strlen(col->header) > col->min ? strlen(col->header) : col->min;
    for (size_t i = 0; i < r->n; i++) {
      size_t len = cli_text_cols(r->pool + r->rows[i].cell[c]);
      if (len > w[c])
        w[c] = cap && len > cap ? cap : len;
    }
    key = ls_column_is_key(l->cols[c]) ? c : key;
    why = ls_column_is_reason(l->cols[c]) ? c : why;
    used += !last ? w[c] + 1 : 0;
  }
  if (!term_cols || !ls_column_is_command(l->cols[l->ncols - 1]))
    return;
  static const struct {
    int key;
    size_t floor;
  } give[] = {{0, 10}, {1, 8}, {0, 6}, {1, 3}};
  for (size_t i = 0; i < sizeof give / sizeof *give && used + 20 > term_cols; i++) {
    int c = give[i].key ? key : why;
    if (c < 0 || c == l->ncols - 1 || w[c] <= give[i].floor)
      continue;
    size_t over = used + 20 - term_cols,
           less = w[c] - give[i].floor > over ? over : w[c] - give[i].floor;
    w[c] -= less;
    used -= less;
  }
}

/* The colour of a cell on a terminal, or NULL: the state's, and red for
 * an exit that is not 0. */
static const char *cell_color(const listing_t *l, int c, const char *text) {
  int col = l->cols[c];
  tfs_state_t st;
  if (ls_column_is_state(col) && tfs_state_parse(text, &st) == 0)
    return cli_state_color(st);
  if (ls_column_is_exit(col) && strcmp(text, "-") && strcmp(text, "0"))
    return "\033[31m";
  return NULL;
}

/* One cell in width w (cut with "…" when longer, padded unless it is the
 * last); the last one is cut only on a terminal, to what is left of the
 * line. Returns the columns written. */
static size_t put_cell(const listing_t *l, int c, const char *text, size_t w, size_t used,
                       size_t term_cols, int color) {
  const ls_col_t *col = ls_column(l->cols[c]);
  int last = c == l->ncols - 1;
  const char *on = color ? cell_color(l, c, text) : NULL;
  if (last) {
    size_t room = term_cols ? (term_cols > used + 10 ? term_cols - used : 10) : 0;
    w = col->right ? (room && room < w ? room : w) : room;
  }
  if (on)
    fputs(on, stdout);
  cli_put_cell(stdout, text, w, !last || col->right, col->right);
  if (on)
    fputs(CLI_COLOR_OFF, stdout);
  return w;
}

static void print_rows(const listing_t *l, size_t term_cols) {
  const rows_t *r = &l->rows;
  size_t w[LS_COLS_MAX];
  int color = cli_color_on(l->color, STDOUT_FILENO);
  col_widths(l, term_cols, w);
  for (int c = 0; c < l->ncols; c++) {
    if (c)
      putchar(' ');
    put_cell(l, c, ls_column(l->cols[c])->header, w[c], 0, 0, 0);
  }
  putchar('\n');
  for (size_t k = 0; k < r->n; k++) {
    size_t used = 0;
    for (int c = 0; c < l->ncols; c++) {
      if (c) {
        putchar(' ');
        used++;
      }
      used += put_cell(l, c, r->pool + r->rows[k].cell[c], w[c], used, term_cols, color);
    }
    putchar('\n');
  }
}

/* One record of the listing, oldest first: --json writes its text at once
 * (without the final newline, so the array's separators stay in their
 * place), the text listing keeps its row. */
static int take_record(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  listing_t *l = arg;
  if (l->json) {
    fputs(l->shown++ ? ",\n" : "\n", stdout);
    fwrite(json, 1, len && json[len - 1] == '\n' ? len - 1 : len, stdout);
    return 0;
  }
  rows_t *r = &l->rows;
  if (tfs_grow(&r->rows, &r->cap, r->n + 1, sizeof *r->rows, 256)) {
    l->err = -ENOMEM;
    return 1;
  }
  row_t *row = &r->rows[r->n];
  memset(row, 0, sizeof *row);
  if (fill_row(r, row, l, rec)) {
    l->err = -ENOMEM;
    return 1;
  }
  r->n++;
  return 0;
}

/* Takes one of the verb's own options into the listing; returns an exit
 * code (0: go on). */
static int ls_option(listing_t *l, int c, const char *arg) {
  char q[96], bad[64];
  switch (c) {
  case 'j':
    l->json = 1;
    break;
  case 's':
    if (tfs_state_parse_list(arg, &l->mask, bad, sizeof bad))
      return cli_usage_error("ls", "unknown state '%s' in --state; the states are " TFS_STATE_NAMES,
                             cli_quote(bad, q, sizeof q));
    break;
  case 'l':
    if (cli_parse_i64(arg, &l->limit))
      return cli_usage_error("ls", "--limit wants a whole number >= 0, not '%s'",
                             cli_quote(arg, q, sizeof q));
    break;
  case 'a':
    l->limit = -1;
    break;
  case 't':
    l->ctx.absolute = 1;
    break;
  case 'K':
    if (!arg) /* --color alone is always, as in GNU ls */
      arg = "always";
    if (cli_color_parse(arg, &l->color))
      return cli_usage_error("ls", "--color is auto, always or never, not '%s'",
                             cli_quote(arg, q, sizeof q));
    break;
  case 'c': {
    char bad[80];
    if ((l->ncols = ls_columns_parse(arg, l->cols, bad, sizeof bad)) < 0)
      return cli_usage_error("ls", "unknown column '%s'; the columns are %s",
                             cli_quote(bad, q, sizeof q), ls_columns_names());
    break;
  }
  }
  return CLI_EXIT_OK;
}

/* Lists through the core and prints. --limit 0 shows nothing. */
static int ls_load(listing_t *l, tfs_store_t *store) {
  const char *env = getenv("TASKFS_LS_THREADS"); /* 1: one thread (the tests compare) */
  tfs_list_opts_t o = {
      .states = l->mask,
      .limit = l->limit > 0 ? (size_t)l->limit : 0,
      .with_json = l->json,
      .threads = env && !strcmp(env, "1") ? 1 : 0,
  };
  if (!store || l->limit == 0)
    return 0;
  int err = tfs_task_list_opts(store, &o, take_record, l, &l->stats);
  return err ? err : l->err;
}

static int ls_print(listing_t *l, tfs_store_t *store) {
  static char obuf[1 << 16];
  setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
  size_t term_cols = l->json ? 0 : cli_term_cols(STDOUT_FILENO);
  int code = CLI_EXIT_OK;
  l->ctx.now = tfs_now_ms();
  /* Where waiting tasks stand, each queue read once for the listing. */
  if (!l->json && store)
    tfs_queue_positions_open(store, &l->ctx.positions);
  if (l->json)
    fputs("[", stdout);
  int err = ls_load(l, store);
  if (err) {
    code = CLI_EXIT_SYSTEM;
    cli_error("ls", "cannot list the tasks of %s: %s", tfs_store_path(store), tfs_strerror(err));
  }
  if (l->json)
    fputs(l->shown ? "\n]\n" : "]\n", stdout);
  else
    print_rows(l, term_cols);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    cli_error("ls", "cannot write the listing: %s", strerror(errno));
    code = CLI_EXIT_SYSTEM;
  }
  return code;
}

int cmd_ls(int argc, char **argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'},
      {"state", required_argument, NULL, 's'},
      {"limit", required_argument, NULL, 'l'},
      {"all", no_argument, NULL, 'a'},
      {"columns", required_argument, NULL, 'c'},
      {"time", no_argument, NULL, 't'},
      {"color", optional_argument, NULL, 'K'},
      {"colour", optional_argument, NULL, 'K'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS_READ("ls", usage_text, "", opts);
  listing_t l = {.limit = -1};
  l.ncols = ls_columns_default(l.cols);
  tfs_store_t *store = NULL;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    const char *arg = optarg;
    int mode;
    /* `--color WHEN` as a separate word, as taskfs always read it: ls takes
     * no operand that could be mistaken for it. */
    if (c == 'K' && !arg && optind < argc && !cli_color_parse(argv[optind], &mode))
      arg = argv[optind++];
    if ((code = ls_option(&l, c, arg)))
      return code;
  }
  if (c < 0)
    return o.code;
  if ((code = cli_no_operands("ls", argc, argv, "('taskfs show ID' shows one task)")))
    return code;
  code = cli_open_store(&o, 0, &store);
  if (code)
    return code;
  code = ls_print(&l, store);
  if (l.stats.corrupt)
    cli_error("ls",
              "%zu unreadable record%s skipped; run 'taskfs show %s' to see what is wrong; "
              "'taskfs prune' or deleting the task directory removes %s",
              l.stats.corrupt, l.stats.corrupt == 1 ? "" : "s", l.stats.first_corrupt,
              l.stats.corrupt == 1 ? "it" : "them");
  rows_free(&l.rows);
  tfs_queue_positions_close(l.ctx.positions);
  if (store)
    tfs_store_close(store);
  return code;
}
