/* taskfs ls: one line per task, oldest first, newest at the bottom like a
 * log. It must stay fast with 100,000 tasks: the ids come from one
 * directory listing, each record is read exactly once, rows are kept in a
 * compact form only so that the KEY column can be sized, and output goes
 * through one large stdio buffer. A full listing parses records on two
 * threads (load_all) and prints them in id order. With --limit N the ids are walked from
 * the newest end and the walk stops at the N-th match, so a small limit
 * reads only the records it shows. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs ls [--json] [--state S[,S...]] [--limit N] [--all] [--state-dir DIR]\n"
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
    "  -h, --help       show this help\n"
    "\n"
    "Unreadable records are skipped with a note on stderr. A store that does not\n"
    "exist yet lists as empty and is not created.\n"
    "Exit codes: 0 ok, 100 usage, 111 system failure.\n";

#define STATE_NAMES "queued, running, completed, failed, cancelled, lost"
#define CMD_MAX 1024 /* bytes of the command kept per row */
#define KEY_COL_MAX 32

typedef struct {
  char id[TFS_ID_MAX + 1];
  tfs_state_t state;
  char age[24];
  char time[32];
  char exit[20];
  char *key; /* NULL: none */
  char *cmd;
} row_t;

typedef struct {
  row_t *rows;
  char **json; /* --json with --limit: dumps kept to print in order */
  size_t n, cap;
} rows_t;

static int rows_grow(rows_t *r) {
  if (r->n < r->cap)
    return 0;
  size_t cap = r->cap ? r->cap * 2 : 256;
  void *a = realloc(r->rows, cap * sizeof *r->rows);
  if (!a)
    return -ENOMEM;
  r->rows = a;
  a = realloc(r->json, cap * sizeof *r->json);
  if (!a)
    return -ENOMEM;
  r->json = a;
  r->cap = cap;
  return 0;
}

static void rows_free(rows_t *r) {
  for (size_t i = 0; i < r->n; i++) {
    free(r->rows[i].key);
    free(r->rows[i].cmd);
    free(r->json[i]);
  }
  free(r->rows);
  free(r->json);
}

/* What a listing is asked for, and what it has found so far. */
typedef struct {
  int json;
  int64_t limit; /* -1: every task */
  unsigned mask; /* the states shown, 1 << state */
  int64_t now;
  rows_t rows; /* text rows, or (--json with --limit) dumps, to print at the end */
  size_t shown, corrupt;
  char first_bad[TFS_ID_MAX + 1];
} listing_t;

/* Counts an unreadable record, remembering the first for the note. */
static void note_bad(listing_t *l, const char *id) {
  if (!l->corrupt++)
    snprintf(l->first_bad, sizeof l->first_bad, "%s", id);
}

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
static char *render_cmd(const tfs_record_t *rec) {
  char out[CMD_MAX + 4];
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
  /* Rows are kept until the end: store only what the command needs. */
  return strdup(out);
}

static void fill_row(row_t *row, const tfs_record_t *rec, int64_t now) {
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
    const char *abbrev = sigabbrev_np(rec->signal);
    if (abbrev)
      snprintf(row->exit, sizeof row->exit, "SIG%s", abbrev);
    else
      snprintf(row->exit, sizeof row->exit, "sig%d", rec->signal);
  } else if (rec->exit_code >= 0 && tfs_state_terminal(rec->state)) {
    snprintf(row->exit, sizeof row->exit, "%d", rec->exit_code);
  } else {
    strcpy(row->exit, "-");
  }
  row->key = rec->key[0] ? strdup(rec->key) : NULL;
  row->cmd = render_cmd(rec);
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

static void print_rows(const rows_t *r, int reverse, size_t term_cols) {
  size_t keyw = 3;
  for (size_t i = 0; i < r->n; i++) {
    size_t l = r->rows[i].key ? strlen(r->rows[i].key) : 1;
    if (l > keyw)
      keyw = l > KEY_COL_MAX ? KEY_COL_MAX : l;
  }
  printf("%-15s %-9s %5s %8s %7s %-*s %s\n", "ID", "STATE", "AGE", "TIME", "EXIT", (int)keyw, "KEY",
         "COMMAND");
  for (size_t k = 0; k < r->n; k++) {
    const row_t *row = &r->rows[reverse ? r->n - 1 - k : k];
    int w = printf("%-15s %-9s %5s %8s %7s %-*s ", row->id, tfs_state_name(row->state), row->age,
                   row->time, row->exit, (int)keyw, row->key ? row->key : "-");
    const char *cmd = row->cmd ? row->cmd : "?";
    if (term_cols && w > 0)
      put_cut(cmd, term_cols > (size_t)w + 10 ? term_cols - (size_t)w : 10);
    else
      fputs(cmd, stdout);
    putchar('\n');
  }
}

/* Writes one dumped record without its trailing newline, so the array's
 * separators stay in their place. */
static void put_json(const char *dump) {
  size_t n = strlen(dump);
  while (n && dump[n - 1] == '\n')
    n--;
  fwrite(dump, 1, n, stdout);
}

/* One loaded id of a chunk: what the loader found, in id order, so that
 * the chunk can be printed in order whatever thread loaded it. */
enum { SLOT_SKIP, SLOT_OK, SLOT_BAD, SLOT_NOMEM };

typedef struct {
  int status;
  row_t row;  /* text listing */
  char *dump; /* --json */
} slot_t;

/* A per-thread bump arena for jansson while the text listing parses: a
 * record's parse allocates dozens of small nodes that are all freed before
 * tfs_task_load returns, so they are carved from one buffer that is reset
 * after each record instead of going through malloc and free. Anything
 * bigger than what is left goes to malloc; free tells the two apart by
 * address. Only for the text listing: --json hands out json_dumps strings
 * that callers free() themselves. */
#define ARENA_SIZE (256 * 1024)

static __thread char *arena_base;
static __thread size_t arena_used;

static void *arena_malloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (arena_base && n <= ARENA_SIZE - arena_used) {
    void *p = arena_base + arena_used;
    arena_used += n;
    return p;
  }
  return malloc(n);
}

static void arena_free(void *p) {
  if (arena_base && (char *)p >= arena_base && (char *)p < arena_base + ARENA_SIZE)
    return;
  free(p);
}

typedef struct {
  char *arena; /* NULL: plain malloc */
  tfs_store_t *store;
  char **ids;
  slot_t *slots;
  size_t from, to;
  unsigned mask;
  int json;
  int64_t now;
} job_t;

/* Loads ids[from, to) into their slots. Runs on two threads at once over
 * the halves of a chunk: the store is only read, and each thread writes
 * only its own slots. */
static void *load_range(void *arg) {
  job_t *j = arg;
  arena_base = j->arena;
  for (size_t k = j->from; k < j->to; k++) {
    arena_used = 0;
    slot_t *s = &j->slots[k - j->from];
    tfs_record_t rec;
    memset(&rec, 0, sizeof rec);
    int rc = tfs_task_load(j->store, j->ids[k], &rec);
    if (rc == TFS_ENOTASK || (rc >= 0 && !(j->mask & (1u << rec.state))))
      s->status = SLOT_SKIP; /* pruned while we listed, or filtered out */
    else if (rc < 0)
      s->status = SLOT_BAD;
    else if (j->json)
      s->status = (s->dump = tfs_record_dump(&rec)) ? SLOT_OK : SLOT_NOMEM;
    else {
      fill_row(&s->row, &rec, j->now);
      s->status = SLOT_OK;
    }
    tfs_record_free(&rec);
  }
  arena_base = NULL;
  return NULL;
}

#define LS_CHUNK 2048

/* Takes the loaded slots [base, end) of a chunk in id order: text rows
 * are kept, --json dumps are streamed out. Returns -ENOMEM once a record
 * could not be kept (the rest of the listing is then dropped). */
static int take_slots(listing_t *l, slot_t *slots, char **ids, size_t base, size_t end, int err) {
  for (size_t k = base; k < end; k++) {
    slot_t *s = &slots[k - base];
    if (s->status == SLOT_BAD)
      note_bad(l, ids[k]);
    if (s->status == SLOT_NOMEM ||
        (s->status == SLOT_OK && !err && !l->json && (err = rows_grow(&l->rows)) < 0)) {
      err = -ENOMEM;
    } else if (s->status == SLOT_OK && !err) {
      if (l->json) {
        fputs(l->shown ? ",\n" : "\n", stdout);
        put_json(s->dump);
      } else {
        l->rows.json[l->rows.n] = NULL;
        l->rows.rows[l->rows.n++] = s->row;
        s->row.key = s->row.cmd = NULL;
      }
      l->shown++;
    }
    free(s->dump);
    free(s->row.key);
    free(s->row.cmd);
    memset(s, 0, sizeof *s);
  }
  return err;
}

/* Loads every id in order, in chunks of LS_CHUNK: the second half of each
 * chunk on a second thread while this one loads the first half, since the
 * JSON parse, not the disk, is what a full listing waits on. Memory stays
 * bounded by a chunk of dumps for --json; text rows are kept compact.
 * TASKFS_LS_THREADS=1 forces one thread (the tests compare both). */
static int load_all(listing_t *l, tfs_store_t *store, char **ids, size_t nids) {
  if (!nids)
    return 0;
  const char *env = getenv("TASKFS_LS_THREADS");
  int threads = (env && !strcmp(env, "1")) || sysconf(_SC_NPROCESSORS_ONLN) < 2 ? 1 : 2;
  slot_t *slots = calloc(LS_CHUNK, sizeof *slots);
  if (!slots)
    return -ENOMEM;
  /* Set before the worker threads exist and kept: the arena functions fall
   * back to malloc on any thread that has no arena. */
  char *arenas = l->json ? NULL : malloc(2 * (size_t)ARENA_SIZE);
  if (arenas)
    json_set_alloc_funcs(arena_malloc, arena_free);
  /* jansson seeds its hash on the first object; do it here, on one thread. */
  json_object_seed(0);
  int err = 0;
  for (size_t base = 0; base < nids && !err; base += LS_CHUNK) {
    size_t end = nids - base > LS_CHUNK ? base + LS_CHUNK : nids;
    size_t mid = threads > 1 && end - base >= 64 ? base + (end - base) / 2 : end;
    job_t a = {arenas, store, ids, slots, base, mid, l->mask, l->json, l->now};
    job_t b = {arenas ? arenas + ARENA_SIZE : NULL,
               store,
               ids,
               slots + (mid - base),
               mid,
               end,
               l->mask,
               l->json,
               l->now};
    pthread_t t;
    int spawned = mid < end && pthread_create(&t, NULL, load_range, &b) == 0;
    load_range(&a);
    if (spawned)
      pthread_join(t, NULL);
    else if (mid < end)
      load_range(&b);
    err = take_slots(l, slots, ids, base, end, err);
  }
  free(slots);
  free(arenas); /* the arena functions stay set but see no arena from now on */
  return err;
}

/* Keeps one record of a --limit listing: its row, or its dump. */
static int keep_record(listing_t *l, const tfs_record_t *rec) {
  char *dump = NULL;
  if (l->json && !(dump = tfs_record_dump(rec)))
    return -ENOMEM;
  if (rows_grow(&l->rows) < 0) {
    free(dump);
    return -ENOMEM;
  }
  memset(&l->rows.rows[l->rows.n], 0, sizeof l->rows.rows[0]);
  if (!l->json)
    fill_row(&l->rows.rows[l->rows.n], rec, l->now);
  l->rows.json[l->rows.n++] = dump;
  l->shown++;
  return 0;
}

/* --limit N: walks the ids from the newest end and stops at the N-th task
 * shown, so a small limit reads only the records it shows. The rows are
 * kept newest first. */
static int load_newest(listing_t *l, tfs_store_t *store, char **ids, size_t nids) {
  int err = 0;
  for (size_t k = 0; k < nids && !err && l->shown < (size_t)l->limit; k++) {
    const char *id = ids[nids - 1 - k];
    tfs_record_t rec;
    memset(&rec, 0, sizeof rec); /* the loader initializes it */
    int rc = tfs_task_load(store, id, &rec);
    if (rc == TFS_ENOTASK)
      ; /* pruned while we listed */
    else if (rc < 0)
      note_bad(l, id);
    else if (l->mask & (1u << rec.state))
      err = keep_record(l, &rec);
    tfs_record_free(&rec);
  }
  return err;
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
    *mask |= 1u << s;
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

/* Loads and prints the listing. Without a limit --json streams (nothing
 * is kept); with one, the rows come newest first and print reversed. */
static int ls_print(listing_t *l, tfs_store_t *store, char **ids, size_t nids) {
  static char obuf[1 << 16];
  setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
  size_t term_cols = l->json ? 0 : terminal_cols();
  int stream_json = l->json && l->limit < 0, code = CLI_EXIT_OK;
  l->now = tfs_now_ms();
  if (stream_json)
    fputs("[", stdout);
  if ((l->limit < 0 ? load_all(l, store, ids, nids) : load_newest(l, store, ids, nids)) < 0) {
    code = CLI_EXIT_SYSTEM;
    cli_error("ls", "out of memory");
  }
  if (stream_json) {
    fputs(l->shown ? "\n]\n" : "]\n", stdout);
  } else if (l->json) {
    fputs("[", stdout);
    for (size_t k = 0; k < l->rows.n; k++) {
      fputs(k ? ",\n" : "\n", stdout);
      put_json(l->rows.json[l->rows.n - 1 - k]);
    }
    fputs(l->rows.n ? "\n]\n" : "]\n", stdout);
  } else {
    print_rows(&l->rows, l->limit >= 0, term_cols);
  }
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
  cli_opts_t o = CLI_OPTS("ls", usage_text, "", opts);
  listing_t l = {.limit = -1};
  tfs_store_t *store = NULL;
  char **ids = NULL;
  size_t nids = 0;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    if ((code = ls_option(&l, c, optarg)))
      return code;
  if (c < 0)
    return o.code;
  if ((code = cli_no_operands("ls", argc, argv, "('taskfs show ID' shows one task)")))
    return code;
  if (!l.mask)
    l.mask = ~0u;
  code = cli_open_store("ls", o.state_dir, 0, &store);
  if (code)
    return code;
  int rc = store ? tfs_task_ids(store, &ids, &nids) : 0;
  if (rc < 0) {
    cli_error("ls", "cannot list %s/tasks: %s", tfs_store_path(store), tfs_strerror(rc));
    tfs_store_close(store);
    return CLI_EXIT_SYSTEM;
  }
  code = ls_print(&l, store, ids, nids);
  if (l.corrupt)
    cli_error("ls",
              "%zu unreadable record%s skipped; run 'taskfs show %s' to see what is wrong; "
              "'taskfs prune' or deleting the task directory removes %s",
              l.corrupt, l.corrupt == 1 ? "" : "s", l.first_bad, l.corrupt == 1 ? "it" : "them");
  rows_free(&l.rows);
  tfs_ids_free(ids, nids);
  if (store)
    tfs_store_close(store);
  return code;
}
