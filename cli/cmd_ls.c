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
#include "cli/ls_view.h"
#include "cli/verbs.h"
#include "taskfs/text.h"

static const char usage_text[] =
    "usage: taskfs ls [--json] [--state S[,S...]] [--limit N] [--all] [--time]\n"
    "                 [--color=auto|always|never] [--state-dir DIR] [--foreign-store]\n"
    "\n"
    "Lists tasks, oldest first (the newest at the bottom). Columns: ID, STATE,\n"
    "STARTED and ENDED (how long ago; --time: when), EXIT (exit code, or the\n"
    "signal that killed it), KEY, REASON (why it ended; for a task that waits,\n"
    "where it stands: '2nd in queue build (2 of 2 running)'), COMMAND. On a\n"
    "terminal the row fits its width (long keys, reasons and commands are cut\n"
    "with ...) and states are coloured.\n"
    "\n"
    "  --json           a JSON array of the full records, oldest first\n"
    "  --state S        only tasks in state S: queued, running, paused, completed,\n"
    "                   failed, cancelled, lost (repeat it or use commas)\n"
    "  --time           STARTED and ENDED as local times (2026-12-01 18:04:05)\n"
    "  --color=WHEN     colour the states: auto (on a terminal, unless NO_COLOR is\n"
    "                   set; the default), always or never\n"
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

#define STATE_NAMES "queued, running, paused, completed, failed, cancelled, lost"
#define CMD_MAX 1024   /* bytes of the command kept per row */
#define REASON_MAX 600 /* bytes of the reason kept per row */
#define KEY_COL_TERM 24    /* on a terminal, longer keys are cut */
#define REASON_COL_MAX 40  /* the REASON column is at most this wide */
#define REASON_COL_TERM 32 /* on a terminal */

typedef struct {
  char id[TFS_ID_MAX + 1];
  tfs_state_t state;
  char started[24];
  char ended[24];
  char exit[TFS_SIGNAME_MAX];
  size_t key, cmd, reason; /* offsets of the texts in the pool; key NO_KEY: none */
} row_t;

#define NO_KEY ((size_t)-1)

/* The rows, and their key and command texts in one pool: a listing of
 * 100,000 tasks makes no allocation per row. */
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

/* Copies s (len bytes and a NUL) into the pool; its offset, or NO_KEY
 * without memory. */
static size_t pool_add(rows_t *r, const char *s, size_t len) {
  if (r->pcap - r->plen < len + 1) {
    size_t cap = r->pcap ? r->pcap : 1 << 16;
    while (cap - r->plen < len + 1)
      cap *= 2;
    char *p = realloc(r->pool, cap);
    if (!p)
      return NO_KEY;
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
  int absolute; /* --time */
  int color;    /* CLI_COLOR_* */
  tfs_queue_positions_t *positions; /* where queued tasks stand */
  int64_t limit; /* -1: every task */
  unsigned mask; /* the states shown (TFS_STATE_BIT), 0: all */
  int64_t now;
  rows_t rows;  /* text rows, printed at the end (the KEY column is sized on them) */
  size_t shown; /* --json records written */
  int err;      /* -ENOMEM once a row could not be kept */
  tfs_list_stats_t stats;
} listing_t;

/* The command on one line: arguments joined by spaces, quoted with '...'
 * when they hold spaces or shell characters, control bytes shown as '?'. */
static size_t render_cmd(const tfs_record_t *rec, char out[CMD_MAX + 4]) {
  size_t o = 0;
  for (int i = 0; i < rec->argc && rec->argv && rec->argv[i]; i++) {
    const char *a = rec->argv[i];
    int quote = !*a || strpbrk(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") != NULL;
    if (i && o < CMD_MAX)
      out[o++] = ' ';
    if (quote && o < CMD_MAX)
      out[o++] = '\'';
    for (; *a && o < CMD_MAX; a++) {
      unsigned char c = (unsigned char)*a;
      if (c == '\'' && quote) {
        if (o + 4 >= CMD_MAX)
          break;
        memcpy(out + o, "'\\''", 4);
        o += 4;
      } else {
        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
      }
    }
    if (quote && o < CMD_MAX)
      out[o++] = '\'';
    if (o >= CMD_MAX) {
      memcpy(out + CMD_MAX, "...", 3);
      o = CMD_MAX + 3;
      break;
    }
  }
  out[o] = 0;
  return o;
}

static int fill_row(listing_t *l, row_t *row, const tfs_record_t *rec) {
  rows_t *r = &l->rows;
  char cmd[CMD_MAX + 4], reason[REASON_MAX];
  memcpy(row->id, rec->id, sizeof row->id);
  row->state = rec->state;
  cli_fmt_when(rec->started_ms, l->now, l->absolute, row->started, sizeof row->started);
  cli_fmt_when(tfs_state_terminal(rec->state) ? rec->ended_ms : 0, l->now, l->absolute,
               row->ended, sizeof row->ended);
  if (rec->signal > 0) {
    tfs_signal_name(rec->signal, row->exit);
  } else if (rec->exit_code >= 0 && tfs_state_terminal(rec->state)) {
    snprintf(row->exit, sizeof row->exit, "%d", rec->exit_code);
  } else {
    strcpy(row->exit, "-");
  }
  /* An end's reason as recorded; a waiting task's place, computed now. */
  if (tfs_state_terminal(rec->state))
    snprintf(reason, sizeof reason, "%s", rec->reason ? rec->reason : "");
  else
    tfs_queue_describe(l->positions, rec, reason, sizeof reason);
  for (char *p = reason; *p; p++)
    if ((unsigned char)*p < 0x20)
      *p = ' ';
  /* Rows are kept until the end: the pool holds only what they show. */
  row->key = rec->key[0] ? pool_add(r, rec->key, strlen(rec->key)) : NO_KEY;
  row->cmd = pool_add(r, cmd, render_cmd(rec, cmd));
  row->reason = pool_add(r, reason[0] ? reason : "-", reason[0] ? strlen(reason) : 1);
  return row->cmd == NO_KEY || row->reason == NO_KEY || (rec->key[0] && row->key == NO_KEY)
             ? -ENOMEM
             : 0;
}

/* The widths of the columns that vary: KEY as wide as the longest key
 * (on a terminal at most KEY_COL_TERM), REASON as the longest reason up to
 * its cap, COMMAND what is left of the terminal (0: no limit). */
typedef struct {
  size_t key, reason, cmd;
} widths_t;

#define FIXED_COLS 15 + 1 + 9 + 1 + 8 + 1 + 8 + 1 + 7 + 1 /* ID STATE STARTED ENDED EXIT */

static widths_t size_columns(const rows_t *r, size_t term, int absolute) {
  widths_t w = {3, 6, 0};
  size_t fixed = FIXED_COLS + (absolute ? 2 * 11 : 0);
  for (size_t i = 0; i < r->n; i++) {
    size_t k = r->rows[i].key != NO_KEY ? cli_text_cols(r->pool + r->rows[i].key) : 1;
    size_t why = cli_text_cols(r->pool + r->rows[i].reason);
    w.key = k > w.key ? k : w.key;
    w.reason = why > w.reason ? why : w.reason;
  }
  if (w.reason > REASON_COL_MAX)
    w.reason = REASON_COL_MAX;
  if (!term)
    return w;
  if (w.key > KEY_COL_TERM)
    w.key = KEY_COL_TERM;
  if (w.reason > REASON_COL_TERM)
    w.reason = REASON_COL_TERM;
  /* What is left goes to the command. When that is not even 20 columns,
   * the reason gives some up, then the key, down to their floors (10 and
   * 8, then their headers), in that order, so that an 80-column terminal
   * still gets whole rows. */
  static const struct {
    int key;
    size_t floor;
  } give[] = {{0, 10}, {1, 8}, {0, 6}, {1, 3}};
  size_t avail = term > fixed + 2 ? term - fixed - 2 : 0;
  for (size_t i = 0; i < sizeof give / sizeof *give && w.key + w.reason + 20 > avail; i++) {
    size_t *c = give[i].key ? &w.key : &w.reason;
    size_t over = w.key + w.reason + 20 - avail;
    if (*c > give[i].floor)
      *c = *c - give[i].floor > over ? *c - over : give[i].floor;
  }
  w.cmd = avail > w.key + w.reason + 10 ? avail - w.key - w.reason : 10;
  return w;
}

static void print_rows(const listing_t *l, size_t term) {
  const rows_t *r = &l->rows;
  int color = cli_color_on(l->color, STDOUT_FILENO);
  size_t tw = l->absolute ? 19 : 8;
  widths_t w = size_columns(r, term, l->absolute);
  printf("%-15s %-9s %-*s %-*s %7s ", "ID", "STATE", (int)tw, "STARTED", (int)tw, "ENDED", "EXIT");
  cli_put_cell(stdout, "KEY", w.key, 1, 0);
  putchar(' ');
  cli_put_cell(stdout, "REASON", w.reason, 1, 0);
  puts(" COMMAND");
  for (size_t k = 0; k < r->n; k++) {
    const row_t *row = &r->rows[k];
    const char *state = tfs_state_name(row->state);
    int bad = row->exit[0] != '-' && strcmp(row->exit, "0");
    printf("%-15s ", row->id);
    printf("%s%-9s%s ", color ? cli_state_color(row->state) : "", state, color ? CLI_COLOR_OFF : "");
    printf("%-*s %-*s ", (int)tw, row->started, (int)tw, row->ended);
    printf("%s%7s%s ", color && bad ? "\033[31m" : "", row->exit, color && bad ? CLI_COLOR_OFF : "");
    cli_put_cell(stdout, row->key != NO_KEY ? r->pool + row->key : "-", w.key, 1, 0);
    putchar(' ');
    cli_put_cell(stdout, r->pool + row->reason, w.reason, 1, 0);
    putchar(' ');
    cli_put_cell(stdout, r->pool + row->cmd, w.cmd, 0, 0);
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
  if (fill_row(l, row, rec)) {
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
  case 't':
    l->absolute = 1;
    break;
  case 'c':
    if (cli_color_parse(arg, &l->color))
      return cli_usage_error("ls", "--color is auto, always or never, not '%s'",
                             cli_quote(arg, q, sizeof q));
    break;
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
  if (!l->json && store)
    tfs_queue_positions_open(store, &l->positions);
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
  tfs_queue_positions_close(l->positions);
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
      {"time", no_argument, NULL, 't'},
      {"color", required_argument, NULL, 'c'},
      {"colour", required_argument, NULL, 'c'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS_READ("ls", usage_text, "", opts);
  listing_t l = {.limit = -1};
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
