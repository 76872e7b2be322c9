/* Important lines: the first K and the last K lines the classifier marks,
 * with their line numbers, so that an early failure survives a flood of
 * later output and the end of a run is still visible; and the lead, the
 * first error, with the lines around it (core/lead.c).
 *
 * Memory is bounded by 2 * K kept texts of at most TFS_IMPORTANT_TEXT_MAX
 * bytes each, the lead and TFS_CONTEXT_MAX context lines, whatever the
 * input: only a bounded prefix of a line is ever copied. Kept texts are
 * valid UTF-8 without control bytes (other than tab) so that they can go
 * into JSON and onto a terminal as they are. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/lead.h"

static const char *const kind_names[] = {
    [TFS_LINE_PLAIN] = "plain",     [TFS_LINE_ERROR] = "error",     [TFS_LINE_WARNING] = "warning",
    [TFS_LINE_FAILURE] = "failure", [TFS_LINE_SUMMARY] = "summary", [TFS_LINE_CONTEXT] = "context",
};

#define NKINDS (sizeof(kind_names) / sizeof(kind_names[0]))

const char *tfs_line_kind_name(tfs_line_kind_t k) {
  if ((unsigned)k >= NKINDS)
    return "unknown";
  return kind_names[k];
}

/* Names the kinds a kept line can have: "context" names the lines around
 * the lead, never one of the first or last K. */
int tfs_line_kind_parse(const char *name, tfs_line_kind_t *out) {
  if (!name)
    return TFS_EBADID;
  for (size_t i = 0; i < NKINDS; i++) {
    if (i == TFS_LINE_CONTEXT)
      continue;
    if (strcmp(name, kind_names[i]) == 0) {
      if (out)
        *out = (tfs_line_kind_t)i;
      return 0;
    }
  }
  return TFS_EBADID;
}

/* ---- kept texts ---------------------------------------------------------- */

/* The end of the escape sequence at line[i] == ESC, or i: CSI ("\x1b[1;31m":
 * parameter and intermediate bytes, then one final byte) and OSC
 * ("\x1b]8;;URL\x07", a terminal hyperlink, ended by BEL or ESC \\). */
static size_t escape_end(const char *line, size_t len, size_t i) {
  if (i + 1 >= len)
    return i;
  if (line[i + 1] == '[') {
    size_t j = i + 2;
    while (j < len && (unsigned char)line[j] >= 0x20 && (unsigned char)line[j] <= 0x3F)
      j++;
    return j < len && (unsigned char)line[j] >= 0x40 && (unsigned char)line[j] <= 0x7E ? j + 1 : i;
  }
  if (line[i + 1] == ']') {
    for (size_t j = i + 2; j < len; j++) {
      if (line[j] == '\x07')
        return j + 1;
      if (line[j] == '\x1b')
        return j + 1 < len && line[j + 1] == '\\' ? j + 2 : i;
    }
  }
  return i;
}

/* Copies line into dst (capacity cap) without escape sequences (colours
 * and hyperlinks carry no meaning once out of the terminal). Stops once cap
 * bytes are written; *used tells how much of line was consumed. */
static size_t strip_escapes(const char *line, size_t len, char *dst, size_t cap, size_t *used) {
  size_t i = 0, o = 0;
  while (i < len && o < cap) {
    if (line[i] == '\x1b') {
      size_t j = escape_end(line, len, i);
      if (j > i) {
        i = j;
        continue;
      }
    }
    dst[o++] = line[i++];
  }
  *used = i;
  return o;
}

/* Builds the kept text of a line, at most max bytes (at most
 * TFS_IMPORTANT_TEXT_MAX): escapes stripped, a trailing '\r' dropped,
 * made valid UTF-8 by the core's tfs_utf8_sanitize() with the C0 controls
 * other than tab also turned into U+FFFD (a terminal or a JSON reader would
 * otherwise act on them), and cut to max bytes on a character boundary
 * with "..." at the end when cut. Only a bounded prefix
 * of the line is read: sanitizing never shortens text, so once more than
 * TFS_IMPORTANT_TEXT_MAX bytes are in hand the result is known to be cut, and
 * a character split by the prefix end only affects bytes beyond the cut. */
char *tfs__important_text(const char *line, size_t len, size_t max) {
  enum { PREFIX = TFS_IMPORTANT_TEXT_MAX + 4 };
  if (max > TFS_IMPORTANT_TEXT_MAX)
    max = TFS_IMPORTANT_TEXT_MAX;
  char raw[PREFIX];
  char buf[3 * PREFIX + 1];
  size_t used = 0, slen = 0;

  size_t rlen = strip_escapes(line, len, raw, sizeof(raw), &used);
  /* One trailing '\r' (CRLF output), even if a colour reset follows it. */
  if (used == len && rlen > 0 && raw[rlen - 1] == '\r')
    rlen--;

  char *san = tfs_utf8_sanitize(raw, rlen, &slen);
  if (!san)
    return NULL;
  /* Each raw byte became at most 3 bytes, so buf cannot overflow. */
  size_t n = 0;
  for (size_t i = 0; i < slen; i++) {
    unsigned char c = (unsigned char)san[i];
    if (c < 0x20 && c != '\t') {
      memcpy(buf + n, "\xEF\xBF\xBD", 3);
      n += 3;
    } else {
      buf[n++] = (char)c;
    }
  }
  free(san);

  if (n > max || used < len) {
    /* Cut on a character boundary (not before a continuation byte), leaving
     * room for the "..." marker. */
    n = max - 3;
    while (n > 0 && ((unsigned char)buf[n] & 0xC0) == 0x80)
      n--;
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  char *text = malloc(n + 1);
  if (!text)
    return NULL;
  memcpy(text, buf, n);
  text[n] = '\0';
  return text;
}

/* ---- first K / last K ----------------------------------------------------- */

int tfs_important_init(tfs_important_t *imp, int k) {
  memset(imp, 0, sizeof(*imp));
  if (k <= 0)
    k = TFS_IMPORTANT_K_DEFAULT;
  if (k > TFS_IMPORTANT_K_MAX)
    return -EINVAL;
  imp->first = calloc((size_t)k, sizeof(*imp->first));
  imp->last = calloc((size_t)k, sizeof(*imp->last));
  if (!imp->first || !imp->last) {
    free(imp->first);
    free(imp->last);
    memset(imp, 0, sizeof(*imp));
    return -ENOMEM;
  }
  imp->k = k;
  return 0;
}

void tfs_important_free(tfs_important_t *imp) {
  if (!imp)
    return;
  if (imp->first)
    for (size_t i = 0; i < imp->nfirst; i++)
      free(imp->first[i].text);
  if (imp->last)
    for (size_t i = 0; i < (size_t)imp->k; i++)
      free(imp->last[i].text);
  free(imp->first);
  free(imp->last);
  free(imp->lead.text);
  for (size_t i = 0; i < imp->ncontext; i++)
    free(imp->context[i].text);
  free(imp->context);
  tfs__lead_free(imp);
  memset(imp, 0, sizeof(*imp));
}

int tfs_important_add(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind, const char *text,
                      size_t len) {
  if (!imp->first || !imp->last || imp->k <= 0)
    return -EINVAL;
  if (!text)
    len = 0;
  char *t = tfs__important_text(text ? text : "", len, TFS_IMPORTANT_TEXT_MAX);
  if (!t)
    return -ENOMEM;

  tfs_important_line_t *slot;
  size_t k = (size_t)imp->k;
  if (imp->nfirst < k) {
    slot = &imp->first[imp->nfirst++];
  } else {
    /* The ring: last_head is the slot written next, which holds the oldest
     * line once the ring is full. */
    slot = &imp->last[imp->last_head];
    free(slot->text);
    imp->last_head = (imp->last_head + 1) % k;
    if (imp->nlast < k)
      imp->nlast++;
  }
  slot->line = lineno;
  slot->kind = kind;
  slot->text = t;
  imp->total++;
  return 0;
}

int tfs_important_feed(tfs_important_t *imp, int64_t lineno, const char *line, size_t len) {
  int rank = 0, block = 0, err = 0;
  /* The rank only matters while the lead may change. */
  tfs_line_kind_t kind =
      imp->lead_final ? tfs_classify_line(line, len) : tfs__classify(line, len, &rank, &block);
  if (kind != TFS_LINE_PLAIN)
    err = tfs_important_add(imp, lineno, kind, line, len);
  /* The lead and its context: only until they are final, so that the
   * flood after a failure costs no more than the classifier. */
  if (!imp->lead_final && !err)
    err = tfs__lead_feed(imp, lineno, line, len, kind, rank, block);
  return err;
}

int tfs_important_set_lead(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind,
                           const char *text, size_t len) {
  char *t = tfs__important_text(text ? text : "", text ? len : 0, TFS_IMPORTANT_TEXT_MAX);
  if (!t)
    return -ENOMEM;
  free(imp->lead.text);
  imp->lead = (tfs_important_line_t){.line = lineno, .kind = kind, .text = t};
  imp->lead_final = 1;
  return 0;
}

int tfs__context_insert(tfs_important_t *imp, int64_t lineno, const char *text, size_t len) {
  for (size_t i = 0; i < imp->ncontext; i++)
    if (imp->context[i].line == lineno)
      return 0; /* kept already */
  if (imp->ncontext >= TFS_CONTEXT_MAX)
    return -ENOSPC;
  if (!imp->context && !(imp->context = calloc(TFS_CONTEXT_MAX, sizeof *imp->context)))
    return -ENOMEM;
  char *t = tfs__important_text(text ? text : "", text ? len : 0, TFS_CONTEXT_TEXT_MAX);
  if (!t)
    return -ENOMEM;
  /* In line order: a line before the ones kept goes in front. */
  size_t at = imp->ncontext;
  while (at > 0 && imp->context[at - 1].line > lineno)
    at--;
  memmove(imp->context + at + 1, imp->context + at, (imp->ncontext - at) * sizeof *imp->context);
  imp->context[at] = (tfs_important_line_t){.line = lineno, .kind = TFS_LINE_CONTEXT, .text = t};
  imp->ncontext++;
  return 0;
}

int tfs_important_add_context(tfs_important_t *imp, int64_t lineno, const char *text, size_t len) {
  int err = tfs__context_insert(imp, lineno, text, len);
  if (!err)
    imp->lead_final = 1;
  return err;
}

const tfs_important_line_t *tfs_important_last(const tfs_important_t *imp, size_t i) {
  if (!imp->last || i >= imp->nlast)
    return NULL;
  size_t k = (size_t)imp->k;
  size_t oldest = (imp->last_head + k - imp->nlast) % k;
  return &imp->last[(oldest + i) % k];
}
