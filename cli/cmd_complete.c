/* taskfs __complete: the one completer behind the bash, zsh and fish
 * scripts of contrib/completion/, which only translate its answer for their
 * shell. It reads what it offers from the verbs themselves: the verb table
 * of main(), each verb's getopt table and usage text (through
 * cli_describe, cli/common.c), core's names of states, restart policies
 * and stderr modes, and the store's tasks. A verb added to main()'s table
 * is completed with its options and operands with no edit here.
 *
 *   taskfs __complete WORD... CUR
 *
 * WORDs are the words after "taskfs" before the one being completed, CUR
 * that one ("" for a new word). It prints the candidates that start with
 * CUR, one a line, "TEXT<TAB>DESCRIPTION", then one directive line:
 *   ":"           nothing more
 *   ":files"      the shell adds file names
 *   ":dirs"       the shell adds directory names
 *   ":command N"  word N (taskfs being word 0) starts a command line of
 *                 its own (run's CMD): the shell completes it as one.
 * It never prints an error (stderr goes to /dev/null) and always exits 0:
 * a completion that fails offers nothing. */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/ls_columns.h"
#include "cli/ls_view.h"
#include "cli/verbs.h"
#include "taskfs/text.h"

#define MAX_OPERANDS 8 /* per usage line */
#define MAX_USAGES 8

typedef struct {
  const char *verb;      /* the verb on the line, or NULL */
  const char *cur;       /* the word being completed (after any "--NAME=") */
  const char *state_dir; /* --state-dir given on the line, or NULL */
  char prefix[64];       /* "--NAME=" when CUR is "--NAME=VALUE", else "" */
} comp_t;

static void offer(const comp_t *c, const char *text, const char *desc) {
  if (!strncmp(text, c->cur, strlen(c->cur)))
    printf("%s%s\t%s\n", c->prefix, text, desc ? desc : "");
}

/* ---- the verb's usage text ------------------------------------------------ */

/* The help line of option `name` (its long name) in usage: the line that
 * starts, after its indent, with a '-' and names "--name" as a whole
 * word. Copies the text after "--name" up to the spec's end (the first
 * double space) into spec_rest, and the description (after that double
 * space, or on the next line) into desc. Returns 0, or -1 if not found. */
static int help_line(const char *usage, const char *name, char *spec_rest, size_t srlen, char *desc,
                     size_t dlen) {
  char needle[64];
  snprintf(needle, sizeof needle, "--%s", name);
  for (const char *l = usage; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *p = l, *end = strchr(l, '\n'), *hit;
    while (*p == ' ')
      p++;
    if (*p != '-' || p == l)
      continue;
    if (!end)
      end = l + strlen(l);
    for (hit = strstr(p, needle); hit && hit < end; hit = strstr(hit + 1, needle)) {
      char after = hit[strlen(needle)];
      if ((hit == p || hit[-1] == ' ' || hit[-1] == '|') &&
          (after == ' ' || after == ',' || after == '|' || after == '=' || after == '[' ||
           after == '\n' || !after))
        break;
    }
    if (!hit || hit >= end)
      continue;
    const char *r = hit + strlen(needle), *gap = strstr(p, "  ");
    if (!gap || gap > end)
      gap = end;
    snprintf(spec_rest, srlen, "%.*s", r < gap ? (int)(gap - r) : 0, r);
    const char *d = gap;
    while (d < end && *d == ' ')
      d++;
    if (d == end && *end == '\n') { /* the description on the next line */
      d = end + 1;
      while (*d == ' ')
        d++;
      end = strchr(d, '\n') ? strchr(d, '\n') : d + strlen(d);
    }
    snprintf(desc, dlen, "%.*s", (int)(end - d), d);
    return 0;
  }
  return -1;
}

/* The metavar of option `name` in its help line ("DIR" of "--cwd DIR",
 * "S[,S...]" of "--state S[,S...]"), "" if none. */
static void metavar(const char *usage, const char *name, char *out, size_t len) {
  char rest[128], desc[8];
  out[0] = 0;
  if (help_line(usage, name, rest, sizeof rest, desc, sizeof desc))
    return;
  const char *p = rest;
  while (*p == ' ' || *p == '=')
    p++;
  size_t n = strcspn(p, " ,|");
  if (n && p[n] == ',' && p[n + 1] != ' ') /* "S[,S...]" keeps its comma */
    n += strcspn(p + n, " |");
  snprintf(out, len, "%.*s", (int)n, p);
}

/* The operands of each synopsis line of usage ("usage: taskfs VERB ..."
 * and the "       taskfs VERB ..." lines under it): the words outside
 * brackets that are neither options nor an option's value. */
typedef struct {
  char words[MAX_OPERANDS][40];
  int n;
} synopsis_t;

static int synopses(const cli_opts_t *o, synopsis_t *out) {
  int n = 0;
  const char *l = o->usage;
  for (; l && n < MAX_USAGES; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *p = l, *end = strchr(l, '\n') ? strchr(l, '\n') : l + strlen(l);
    if (!strncmp(p, "usage:", 6))
      p += 6;
    while (*p == ' ')
      p++;
    if (strncmp(p, "taskfs ", 7))
      break;
    p += 7 + strlen(o->verb);
    synopsis_t *s = &out[n++];
    int skip_value = 0;
    s->n = 0;
    while (p < end) {
      while (p < end && *p == ' ')
        p++;
      size_t w = strcspn(p, " \n");
      if (!w)
        break;
      char word[40];
      snprintf(word, sizeof word, "%.*s", (int)w, p);
      p += w;
      /* Brackets only mark what is optional: "[--lines N]", "[MOUNTPOINT]". */
      char *wp = word;
      while (*wp == '[')
        wp++;
      wp[strcspn(wp, "]")] = 0;
      if (!*wp || !strcmp(wp, "--") || !strcmp(wp, "OPTIONS"))
        continue;
      if (wp[0] == '-') {
        skip_value = 0;
        for (const struct option *op = o->all; wp[1] == '-' && op->name; op++)
          if (!strcmp(wp + 2, op->name) && op->has_arg == required_argument)
            skip_value = 1;
        const char *sh = wp[1] != '-' ? strchr(o->optstring + 1, wp[1]) : NULL;
        if (sh && sh[1] == ':')
          skip_value = 1;
        continue;
      }
      if (skip_value) {
        skip_value = 0;
        continue;
      }
      if (s->n < MAX_OPERANDS)
        snprintf(s->words[s->n++], sizeof s->words[0], "%s", wp);
    }
  }
  return n;
}

/* ---- what is offered ---------------------------------------------------- */

static const char *restart_at(unsigned i) {
  return tfs_restart_name((tfs_restart_t)i);
}
static const char *stderr_at(unsigned i) {
  return tfs_stderr_name((tfs_stderr_t)i);
}
static const char *state_at(unsigned i) {
  return tfs_state_name((tfs_state_t)i);
}

static const char *signal_at(unsigned i) {
  static char buf[TFS_SIGNAME_MAX];
  if (i + 1 >= 32) /* the standard signals; real-time ones are typed */
    return "unknown";
  tfs_signal_name((int)i + 1, buf);
  return strncmp(buf, "SIG", 3) ? buf : buf + 3; /* "TERM", as kill(1) takes it */
}

/* Options (and operands: "SIG") whose values are names that core and the
 * verbs own: read from their tables, never copied here. */
static const struct {
  const char *option;
  const char *(*name)(unsigned i); /* "unknown" past the last */
} named[] = {{"restart", restart_at},   {"stderr", stderr_at},      {"state", state_at},
             {"color", cli_color_name}, {"colour", cli_color_name}, {"columns", ls_column_name},
             {"SIG", signal_at}};

/* 1 if word is one of the comma list list[0..len) (already given). */
static int in_list(const char *list, size_t len, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p < list + len;) {
    size_t w = strcspn(p, ",");
    if (w == n && !strncmp(p, word, n))
      return 1;
    p += w + 1;
  }
  return 0;
}

/* The help text of option name in usage: its line and the lines under it
 * that continue it (indented, not an option's), into buf. */
static void help_block(const char *usage, const char *name, char *buf, size_t len) {
  char rest[128], desc[160];
  buf[0] = 0;
  if (help_line(usage, name, rest, sizeof rest, desc, sizeof desc))
    return;
  const char *at = strstr(usage, desc);
  size_t n = 0;
  for (const char *l = at; l && *l && n + 1 < len;
       l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *p = l;
    while (*p == ' ')
      p++;
    if (l != at && (p - l < 8 || *p == '-' || *p == '\n'))
      break;
    size_t w = strcspn(p, "\n");
    n += (size_t)snprintf(buf + n, len - n, "%.*s ", (int)w, p);
    if (n >= len)
      break;
  }
}

/* Names the verb's help of option (or operand) `which` lists as words,
 * when it lists any: `prune --state` takes only the states of ended
 * tasks, and its help says which. */
static int help_lists(const char *block, const char *word) {
  size_t n = strlen(word);
  for (const char *p = strstr(block, word); p; p = strstr(p + 1, word))
    if ((p == block || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n]) &&
        p[n] != '-')
      return 1;
  return 0;
}

/* Offers the names of named[i] for the word being completed, a comma list
 * too ("S[,S...]": the word after the last comma, never one given). */
static void offer_named(const comp_t *c, const cli_opts_t *o, size_t i) {
  char block[1024] = "", text[256];
  const char *comma = strrchr(c->cur, ',');
  size_t keep = comma ? (size_t)(comma - c->cur) + 1 : 0;
  int filter = 0;
  if (o)
    help_block(o->usage, named[i].option, block, sizeof block);
  for (unsigned k = 0; block[0] && strcmp(named[i].name(k), "unknown"); k++)
    filter |= help_lists(block, named[i].name(k));
  for (unsigned k = 0; strcmp(named[i].name(k), "unknown"); k++) {
    const char *w = named[i].name(k);
    if ((filter && !help_lists(block, w)) || in_list(c->cur, keep, w))
      continue;
    snprintf(text, sizeof text, "%.*s%s", (int)keep, c->cur, w);
    offer(c, text, "");
  }
}

/* A task's id and key, described by its state and command, escaped
 * (cli_escape): a description holds no control byte, tab or newline. */
static int task_offer(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  const comp_t *c = arg;
  char raw[256], desc[96];
  int n = snprintf(raw, sizeof raw, "%s", tfs_state_name(rec->state));
  for (int i = 0; rec->argv && rec->argv[i] && n < (int)sizeof raw; i++)
    n += snprintf(raw + n, sizeof raw - n, " %s", rec->argv[i]);
  cli_escape(raw, strlen(raw), 0, desc, sizeof desc, NULL);
  offer(c, rec->id, desc);
  if (rec->key[0])
    offer(c, rec->key, desc);
  return 0;
}

/* The store's newest tasks, ids and keys. Read only, and opened as every
 * verb opens a store (checked: the caller's, writable by nobody else): a
 * store that is missing or refused, another user's among them, offers
 * nothing. */
static void offer_tasks(const comp_t *c) {
  cli_opts_t o = {.verb = "__complete", .state_dir = c->state_dir};
  tfs_store_t *store = NULL;
  if (cli_open_store(&o, 0, &store) || !store)
    return;
  tfs_list_opts_t lo = {.limit = 1000, .newest_first = 1};
  tfs_task_list_opts(store, &lo, task_offer, (void *)c, NULL);
  tfs_store_close(store);
}

/* The store's queues, by name (run --queue, queue set|pause|resume). */
static void offer_queues(const comp_t *c) {
  cli_opts_t o = {.verb = "__complete", .state_dir = c->state_dir};
  tfs_store_t *store = NULL;
  tfs_queue_info_t *q = NULL;
  size_t n = 0;
  if (cli_open_store(&o, 0, &store) || !store)
    return;
  if (tfs_queue_list(store, &q, &n) == 0)
    for (size_t i = 0; i < n; i++)
      offer(c, q[i].name, q[i].paused ? "paused" : "");
  free(q);
  tfs_store_close(store);
}

/* Directive for a value or operand of kind `kind` (a metavar or a
 * synopsis word), offering what it names; returns the directive. */
static const char *offer_kind(const comp_t *c, const char *kind) {
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    if (!strcmp(kind, named[i].option)) { /* signal's SIG */
      offer_named(c, NULL, i);
      return ":";
    }
  if (!strcmp(kind, "NAME") && c->verb && !strcmp(c->verb, "queue")) {
    offer_queues(c);
    return ":";
  }
  if (strstr(kind, "ID")) {
    offer_tasks(c);
    return ":";
  }
  if (strstr(kind, "DIR") || strstr(kind, "MOUNTPOINT"))
    return ":dirs";
  if (strstr(kind, "FILE"))
    return ":files";
  return ":";
}

/* The value of option op of a verb described by o. */
static const char *offer_value(const comp_t *c, const cli_opts_t *o, const struct option *op) {
  char mv[64];
  metavar(o->usage, op->name, mv, sizeof mv);
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    if (!strcmp(op->name, named[i].option)) {
      offer_named(c, o, i);
      return ":";
    }
  if (!strcmp(op->name, "queue")) { /* run --queue NAME */
    offer_queues(c);
    return ":";
  }
  return offer_kind(c, mv);
}

static void offer_options(const comp_t *c, const cli_opts_t *o) {
  for (const struct option *op = o->all; op->name; op++) {
    char rest[128], desc[160] = "", text[80];
    if ((o->flags & CLI_OPT_NO_STATE_DIR) && !strcmp(op->name, "state-dir"))
      continue;
    /* An alias (--colour) has no help line of its own: it says what the
     * option it shares its value with says. */
    if (help_line(o->usage, op->name, rest, sizeof rest, desc, sizeof desc))
      for (const struct option *al = o->all; al < op; al++)
        if (!al->flag && al->val == op->val &&
            !help_line(o->usage, al->name, rest, sizeof rest, desc, sizeof desc))
          break;
    snprintf(text, sizeof text, "--%s", op->name);
    offer(c, text, desc);
    /* The short form, when the verb's optstring has the option's value. */
    if (op->val > 0 && op->val < 128 && strchr(o->optstring + 1, op->val) && c->cur[0] == '-' &&
        c->cur[1] != '-') {
      snprintf(text, sizeof text, "-%c", op->val);
      offer(c, text, desc);
    }
  }
}

/* The operand at position k (operands[0..k-1] before it) from the verb's
 * synopses: a literal (a sub-verb) where the earlier literals match, else
 * a kind. The last word of a synopsis ending in "..." repeats. */
static const char *offer_operand(const comp_t *c, const cli_opts_t *o, char **operands, int k) {
  synopsis_t syn[MAX_USAGES];
  int n = synopses(o, syn);
  const char *directive = ":";
  for (int s = 0; s < n; s++) {
    int ok = 1;
    for (int j = 0; j < k && j < syn[s].n && ok; j++)
      if (islower((unsigned char)syn[s].words[j][0]) && strcmp(syn[s].words[j], operands[j]))
        ok = 0;
    if (!ok || !syn[s].n)
      continue;
    const char *w = k < syn[s].n ? syn[s].words[k] : syn[s].words[syn[s].n - 1];
    if (k >= syn[s].n && !strstr(w, "..."))
      continue;
    if (islower((unsigned char)w[0]))
      offer(c, w, "");
    else if (strcmp(directive, ":") == 0)
      directive = offer_kind(c, w);
  }
  return directive;
}

/* Reads a verb's words (words[0] the verb, words[n] the one completed):
 * which option waits for its value, the operands so far (moved to the
 * front of words), --state-dir. Returns the option whose value is
 * completed, or NULL; *k is the number of operands, *first the position
 * of the first, *options_end whether options can no longer come. */
static const struct option *read_words(comp_t *c, const cli_opts_t *o, char **words, int n, int *k,
                                       int *first, int *options_end) {
  const struct option *pending = NULL;
  *k = 0;
  *first = n;
  *options_end = 0;
  for (int i = 1; i < n; i++) {
    const char *w = words[i];
    if (pending) {
      if (!strcmp(pending->name, "state-dir"))
        c->state_dir = w;
      pending = NULL;
    } else if (*options_end || w[0] != '-' || !w[1]) {
      if (!*k)
        *first = i;
      words[(*k)++] = (char *)w;
      if (o->flags & CLI_OPT_IN_ORDER)
        *options_end = 1;
    } else if (!strcmp(w, "--")) {
      *options_end = 1;
    } else if (w[1] == '-') {
      size_t len = strcspn(w + 2, "=");
      for (const struct option *op = o->all; op->name; op++) {
        if (strlen(op->name) != len || strncmp(op->name, w + 2, len))
          continue;
        if (w[2 + len] == '=' && !strcmp(op->name, "state-dir"))
          c->state_dir = w + 3 + len;
        else if (!w[2 + len] && op->has_arg == required_argument)
          pending = op;
        else if (!w[2 + len] && op->has_arg == optional_argument && i == n - 1)
          pending = op; /* `ls --color ''`: the value as a word of its own */
      }
    } else {
      /* Short options: the first that takes a value takes the rest. */
      for (const char *p = w + 1; *p; p++) {
        const char *s = strchr(o->optstring + 1, *p);
        if (!s || s[1] != ':')
          continue;
        for (const struct option *op = o->all; !p[1] && op->name; op++)
          if (op->val == *p)
            pending = op;
        break;
      }
    }
  }
  return pending;
}

/* Completes after a verb; base is the verb's position on the line. */
static void complete_verb(comp_t *c, const cli_verb_t *v, char **words, int n, int base) {
  cli_opts_t o;
  memset(&o, 0, sizeof o);
  c->verb = v->name;
  cli_describe = &o;
  char *argv[] = {(char *)v->name, NULL};
  v->fn(1, argv);
  cli_describe = NULL;
  if (!o.verb) { /* the verb did not describe itself */
    puts(":");
    return;
  }
  int k, first, options_end;
  const struct option *pending = read_words(c, &o, words, n, &k, &first, &options_end);
  if (!pending && !options_end && !strncmp(c->cur, "--", 2) && strchr(c->cur, '=')) {
    /* "--NAME=VALUE": VALUE is completed, offered with "--NAME=" before it. */
    size_t len = strcspn(c->cur + 2, "=");
    for (const struct option *op = o.all; op->name; op++)
      if (strlen(op->name) == len && !strncmp(op->name, c->cur + 2, len) &&
          op->has_arg != no_argument && len + 4 <= sizeof c->prefix)
        pending = op;
    if (pending) {
      snprintf(c->prefix, sizeof c->prefix, "%.*s", (int)len + 3, c->cur);
      c->cur += len + 3;
    }
  }
  if (pending) {
    puts(offer_value(c, &o, pending));
    return;
  }
  if (!options_end && c->cur[0] == '-') {
    offer_options(c, &o);
    puts(":");
    return;
  }
  /* A command operand (run's CMD): it and what follows are a command line. */
  synopsis_t syn[MAX_USAGES];
  if (synopses(&o, syn) > 0 && syn[0].n && !strcmp(syn[0].words[0], "CMD")) {
    printf(":command %d\n", base + (k ? first : n));
    return;
  }
  puts(offer_operand(c, &o, words, k));
}

int cli_complete(int argc, char **argv, const cli_verb_t *verbs, size_t nverbs) {
  /* argv[0] is "__complete"; the line's words follow, the last is CUR. */
  comp_t c = {.cur = argc > 1 ? argv[argc - 1] : ""};
  /* The checked open (cli_open_store) reports a refused store: not here. */
  if (!freopen("/dev/null", "w", stderr))
    fclose(stderr);
  char **words = argv + 1;
  int n = argc > 1 ? argc - 2 : 0, base = 1;
  /* `taskfs --state-dir DIR VERB ...` (main() moves it behind the verb). */
  if (n >= 1 && !strcmp(words[0], "--state-dir")) {
    if (n == 1) {
      puts(":dirs");
      return 0;
    }
    c.state_dir = words[1];
    words += 2, n -= 2, base += 2;
  } else if (n >= 1 && !strncmp(words[0], "--state-dir=", 12)) {
    c.state_dir = words[0] + 12;
    words++, n--, base++;
  }
  if (n == 0) {
    if (c.cur[0] == '-') {
      offer(&c, "--help", "show the verbs");
      offer(&c, "--version", "print the version");
      offer(&c, "--state-dir", "use the store in DIR");
    } else {
      for (size_t i = 0; i < nverbs; i++)
        if (verbs[i].summary)
          offer(&c, verbs[i].name, verbs[i].summary);
    }
    puts(":");
    return 0;
  }
  for (size_t i = 0; i < nverbs; i++)
    if (verbs[i].summary && !strcmp(verbs[i].name, words[0])) {
      complete_verb(&c, &verbs[i], words, n, base);
      return 0;
    }
  puts(":");
  return 0;
}
