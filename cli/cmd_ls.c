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
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/ls_columns.h"
#include "cli/verbs.h"
#include "taskfs/text.h"

static const char usage_text[] =
    "usage: taskfs ls [--json] [--columns C[,C...]] [--state S[,S...]] [--limit N]\n"
    "                 [--all] [--state-dir DIR] [--foreign-store]\n"
    "\n"
    "Lists tasks, oldest first (the newest at the bottom). Columns: ID, STATE,\n"
    "AGE (since created), TIME (run time so far, or until it ended), EXIT (exit\n"
    "code, or the signal that killed it), KEY, COMMAND (cut to the terminal width\n"
    "when stdout is a terminal).\n"
    "\n"
    "  --json           a JSON array of the full records, oldest first\n"
    "  --columns C,...  the columns to show, in this order: id, state, age, time,\n"
    "                   exit, key, command, cpu (user + system, the whole tree),\n"
    "                   cpu-user, cpu-sys, maxrss (the largest process), treepeak\n"
    "                   (the memory cgroup's peak), output (bytes), queued,\n"
    "                   restarts, timeout, limits\n"
    "  --state S        only tasks in state S: queued, running, completed, failed,\n"
    "                   cancelled, lost (repeat it or use commas for several)\n"
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

#define STATE_NAMES "queued, running, completed, failed, cancelled, lost"
#define KEY_COL_MAX 32

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
  if (r->pcap - r->plen < len + 1) {
    size_t cap = r->pcap ? r->pcap : 1 << 16;
    while (cap - r->plen < len + 1)
      cap *= 2;
    char *p = realloc(r->pool, cap);
    if (!p)
      return NO_CELL;
    r->pool = p;
    r->pcap = cap;
  }
  size_t at = r->plen;
  memcpy(r->pool + at, s, len);
  r->pool[at + len] = 0;
  r->plen += len + 1;
  return at;
}

/* What a listing is asked for, and what it has found so far. */
typedef struct {
  int json;
  int64_t limit; /* -1: every task */
  unsigned mask; /* the states shown (TFS_STATE_BIT), 0: all */
  int64_t now;
  int cols[LS_COLS_MAX]; /* the columns, in order */
  int ncols;
  rows_t rows;  /* text rows, printed at the end (the columns are sized on them) */
  size_t shown; /* --json records written */
  int err;      /* -ENOMEM once a row could not be kept */
  tfs_list_stats_t stats;
} listing_t;

static int fill_row(rows_t *r, row_t *row, const listing_t *l, const tfs_record_t *rec) {
  char text[LS_CELL_MAX];
  for (int c = 0; c < l->ncols; c++) {
    size_t len = ls_column_text(l->cols[c], rec, l->now, text, sizeof text);
    if ((row->cell[c] = pool_add(r, text, len)) == NO_CELL)
      return -ENOMEM;
  }
  return 0;
}

/* Display width of a UTF-8 string, roughly: one column per code point. */
static size_t text_cols(const char *s, size_t bytes) {
  size_t cols = 0;
  for (size_t i = 0; i < bytes; i++)
    if (((unsigned char)s[i] & 0xc0) != 0x80)
      cols++;
  return cols;
}

/* Prints cmd within cols columns, ending in "..." when cut. */
static void put_cut(const char *cmd, size_t cols) {
  size_t len = strlen(cmd);
  if (text_cols(cmd, len) <= cols) {
    fputs(cmd, stdout);
    return;
  }
  if (cols < 4) {
    fputs("...", stdout);
    return;
  }
  size_t used = 0, i = 0;
  for (; i < len; i++) {
    if (((unsigned char)cmd[i] & 0xc0) != 0x80) {
      if (used == cols - 3)
        break;
      used++;
    }
  }
  fwrite(cmd, 1, i, stdout);
  fputs("...", stdout);
}

/* The width of each column: its heading, its minimum, its widest cell
 * (KEY at most KEY_COL_MAX; the last column is not padded). */
static void col_widths(const listing_t *l, size_t w[LS_COLS_MAX]) {
  const rows_t *r = &l->rows;
  for (int c = 0; c < l->ncols; c++) {
    const ls_col_t *col = ls_column(l->cols[c]);
    w[c] = strlen(col->header) > col->min ? strlen(col->header) : col->min;
    for (size_t i = 0; i < r->n && c < l->ncols - 1; i++) {
      size_t len = text_cols(r->pool + r->rows[i].cell[c], strlen(r->pool + r->rows[i].cell[c]));
      if (len > w[c])
        w[c] = ls_column_is_key(l->cols[c]) && len > KEY_COL_MAX ? KEY_COL_MAX : len;
    }
  }
}

/* One cell padded to width w; the last one is cut to the terminal when it
 * is the command. Returns the columns written. */
static size_t put_cell(const listing_t *l, int c, const char *text, size_t w, size_t used,
                       size_t term_cols) {
  const ls_col_t *col = ls_column(l->cols[c]);
  int last = c == l->ncols - 1;
  if (last && ls_column_is_command(l->cols[c]) && term_cols) {
    put_cut(text, term_cols > used + 10 ? term_cols - used : 10);
    return 0;
  }
  if (last && !col->right) {
    fputs(text, stdout);
    return 0;
  }
  int n = printf(col->right ? "%*s" : "%-*s", (int)w, text);
  return n > 0 ? (size_t)n : 0;
}

static void print_rows(const listing_t *l, size_t term_cols) {
  const rows_t *r = &l->rows;
  size_t w[LS_COLS_MAX];
  col_widths(l, w);
  for (int c = 0; c < l->ncols; c++) {
    if (c)
      putchar(' ');
    put_cell(l, c, ls_column(l->cols[c])->header, w[c], 0, 0);
  }
  putchar('\n');
  for (size_t k = 0; k < r->n; k++) {
    size_t used = 0;
    for (int c = 0; c < l->ncols; c++) {
      if (c) {
        putchar(' ');
        used++;
      }
      used += put_cell(l, c, r->pool + r->rows[k].cell[c], w[c], used, term_cols);
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
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 256;
    row_t *v = realloc(r->rows, cap * sizeof *v);
    if (!v) {
      l->err = -ENOMEM;
      return 1;
    }
    r->rows = v;
    r->cap = cap;
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

static int parse_states(const char *arg, unsigned *mask) {
  char *copy = strdup(arg), *save = NULL, *tok;
  int rc = 0, n = 0;
  if (!copy)
    return -1;
  for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    tfs_state_t s;
    if (tfs_state_parse(tok, &s) != 0) {
      rc = -1;
      break;
    }
    *mask |= TFS_STATE_BIT(s);
    n++;
  }
  if (!n)
    rc = -1;
  free(copy);
  return rc;
}

/* Takes one of the verb's own options into the listing; returns an exit
 * code (0: go on). */
static int ls_option(listing_t *l, int c, const char *arg) {
  char q[96];
  switch (c) {
  case 'j':
    l->json = 1;
    break;
  case 's':
    if (parse_states(arg, &l->mask))
      return cli_usage_error("ls", "unknown state '%s'; the states are " STATE_NAMES,
                             cli_quote(arg, q, sizeof q));
    break;
  case 'l':
    if (cli_parse_i64(arg, &l->limit))
      return cli_usage_error("ls", "--limit wants a whole number >= 0, not '%s'",
                             cli_quote(arg, q, sizeof q));
    break;
  case 'a':
    l->limit = -1;
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

/* The width to cut the COMMAND column at, 0 when stdout is no terminal. */
static size_t terminal_cols(void) {
  struct winsize ws;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 0;
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
  size_t term_cols = l->json ? 0 : terminal_cols();
  int code = CLI_EXIT_OK;
  l->now = tfs_now_ms();
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
      {"json", no_argument, NULL, 'j'},          {"state", required_argument, NULL, 's'},
      {"limit", required_argument, NULL, 'l'},   {"all", no_argument, NULL, 'a'},
      {"columns", required_argument, NULL, 'c'}, {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS_READ("ls", usage_text, "", opts);
  listing_t l = {.limit = -1};
  l.ncols = ls_columns_default(l.cols);
  tfs_store_t *store = NULL;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    if ((code = ls_option(&l, c, optarg)))
      return code;
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
  if (store)
    tfs_store_close(store);
  return code;
}
