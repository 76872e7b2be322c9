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
#include "cli/verbs.h"
#include "taskfs/text.h"

static const char usage_text[] =
    "usage: taskfs ls [--json] [--state S[,S...]] [--limit N] [--all] [--state-dir DIR]\n"
    "                 [--foreign-store]\n"
    "\n"
    "Lists tasks, oldest first (the newest at the bottom). Columns: ID, STATE,\n"
    "AGE (since created), TIME (run time so far, or until it ended), EXIT (exit\n"
    "code, or the signal that killed it), KEY, COMMAND (cut to the terminal width\n"
    "when stdout is a terminal).\n"
    "\n"
    "  --json           a JSON array of the full records, oldest first\n"
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
#define CMD_MAX 1024 /* bytes of the command kept per row */
#define KEY_COL_MAX 32

typedef struct {
  char id[TFS_ID_MAX + 1];
  tfs_state_t state;
  char age[24];
  char time[32];
  char exit[TFS_SIGNAME_MAX];
  size_t key, cmd; /* offsets of the texts in the pool; key NO_KEY: none */
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
  int64_t limit; /* -1: every task */
  unsigned mask; /* the states shown (TFS_STATE_BIT), 0: all */
  int64_t now;
  rows_t rows;  /* text rows, printed at the end (the KEY column is sized on them) */
  size_t shown; /* --json records written */
  int err;      /* -ENOMEM once a row could not be kept */
  tfs_list_stats_t stats;
} listing_t;

/* Compact age: one unit, like "45s", "12m", "3h", "9d". */
static void fmt_age(int64_t ms, char *buf, size_t len) {
  int64_t s = ms < 0 ? 0 : ms / 1000;
  if (s < 60)
    snprintf(buf, len, "%llds", (long long)s);
  else if (s < 3600)
    snprintf(buf, len, "%lldm", (long long)(s / 60));
  else if (s < 86400)
    snprintf(buf, len, "%lldh", (long long)(s / 3600));
  else
    snprintf(buf, len, "%lldd", (long long)(s / 86400));
}

/* Duration with two units, like "4s", "1m05s", "2h03m", "3d04h". */
static void fmt_dur(int64_t ms, char *buf, size_t len) {
  int64_t s = ms < 0 ? 0 : ms / 1000;
  if (s < 60)
    snprintf(buf, len, "%llds", (long long)s);
  else if (s < 3600)
    snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else if (s < 86400)
    snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
  else
    snprintf(buf, len, "%lldd%02lldh", (long long)(s / 86400), (long long)(s / 3600 % 24));
}

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

static int fill_row(rows_t *r, row_t *row, const tfs_record_t *rec, int64_t now) {
  char cmd[CMD_MAX + 4];
  memcpy(row->id, rec->id, sizeof row->id);
  row->state = rec->state;
  fmt_age(now - rec->created_ms, row->age, sizeof row->age);
  if (!rec->started_ms) {
    strcpy(row->time, "-");
  } else {
    int64_t end = rec->ended_ms;
    if (!end)
      end = tfs_state_terminal(rec->state) ? rec->alive_ms : now;
    if (end >= rec->started_ms)
      fmt_dur(end - rec->started_ms, row->time, sizeof row->time);
    else
      strcpy(row->time, "-");
  }
  if (rec->signal > 0) {
    tfs_signal_name(rec->signal, row->exit);
  } else if (rec->exit_code >= 0 && tfs_state_terminal(rec->state)) {
    snprintf(row->exit, sizeof row->exit, "%d", rec->exit_code);
  } else {
    strcpy(row->exit, "-");
  }
  /* Rows are kept until the end: the pool holds only what they show. */
  row->key = rec->key[0] ? pool_add(r, rec->key, strlen(rec->key)) : NO_KEY;
  row->cmd = pool_add(r, cmd, render_cmd(rec, cmd));
  return row->cmd == NO_KEY || (rec->key[0] && row->key == NO_KEY) ? -ENOMEM : 0;
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

static void print_rows(const rows_t *r, size_t term_cols) {
  size_t keyw = 3;
  for (size_t i = 0; i < r->n; i++) {
    size_t l = r->rows[i].key != NO_KEY ? strlen(r->pool + r->rows[i].key) : 1;
    if (l > keyw)
      keyw = l > KEY_COL_MAX ? KEY_COL_MAX : l;
  }
  printf("%-15s %-9s %5s %8s %7s %-*s %s\n", "ID", "STATE", "AGE", "TIME", "EXIT", (int)keyw, "KEY",
         "COMMAND");
  for (size_t k = 0; k < r->n; k++) {
    const row_t *row = &r->rows[k];
    const char *key = row->key != NO_KEY ? r->pool + row->key : "-", *cmd = r->pool + row->cmd;
    int w = printf("%-15s %-9s %5s %8s %7s %-*s ", row->id, tfs_state_name(row->state), row->age,
                   row->time, row->exit, (int)keyw, key);
    if (term_cols && w > 0)
      put_cut(cmd, term_cols > (size_t)w + 10 ? term_cols - (size_t)w : 10);
    else
      fputs(cmd, stdout);
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
  if (fill_row(r, row, rec, l->now)) {
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
    print_rows(&l->rows, term_cols);
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
