/* Important lines: the first K and the last K lines the classifier marks,
 * with their line numbers, so that an early failure survives a flood of
 * later output and the end of a run is still visible.
 *
 * Memory is bounded by 2 * K kept texts of at most TFS_IMPORTANT_TEXT_MAX
 * bytes each, whatever the input: only a bounded prefix of a line is ever
 * copied. Kept texts are valid UTF-8 without control bytes (other than tab)
 * so that they can go into JSON and onto a terminal as they are. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/taskfs.h"

static const char *const kind_names[] = {
    [TFS_LINE_PLAIN] = "plain",     [TFS_LINE_ERROR] = "error",     [TFS_LINE_WARNING] = "warning",
    [TFS_LINE_FAILURE] = "failure", [TFS_LINE_SUMMARY] = "summary",
};

#define NKINDS (sizeof(kind_names) / sizeof(kind_names[0]))

const char *tfs_line_kind_name(tfs_line_kind_t k) {
  if ((unsigned)k >= NKINDS)
    return "unknown";
  return kind_names[k];
}

int tfs_line_kind_parse(const char *name, tfs_line_kind_t *out) {
  if (!name)
    return TFS_EBADID;
  for (size_t i = 0; i < NKINDS; i++) {
    if (strcmp(name, kind_names[i]) == 0) {
      if (out)
        *out = (tfs_line_kind_t)i;
      return 0;
    }
  }
  return TFS_EBADID;
}

/* ---- kept texts ---------------------------------------------------------- */

/* Copies line into dst (capacity cap) without ANSI CSI escape sequences
 * ("\x1b[1;31m" and the like: colours carry no meaning once out of the
 * terminal) and without a trailing '\r'. Stops once cap bytes are written;
 * *used tells how much of line was consumed. */
static size_t strip_escapes(const char *line, size_t len, char *dst, size_t cap, size_t *used) {
  size_t i = 0, o = 0;
  while (i < len && o < cap) {
    if (line[i] == '\x1b' && i + 1 < len && line[i + 1] == '[') {
      size_t j = i + 2;
      /* Parameter and intermediate bytes, then one final byte. */
      while (j < len && (unsigned char)line[j] >= 0x20 && (unsigned char)line[j] <= 0x3F)
        j++;
      if (j < len && (unsigned char)line[j] >= 0x40 && (unsigned char)line[j] <= 0x7E) {
        i = j + 1;
        continue;
      }
    }
    dst[o++] = line[i++];
  }
  *used = i;
  return o;
}

/* Builds the kept text of a line: escapes stripped, a trailing '\r' dropped,
 * made valid UTF-8 by the core's tfs_utf8_sanitize() with the C0 controls
 * other than tab also turned into U+FFFD (a terminal or a JSON reader would
 * otherwise act on them), and cut to TFS_IMPORTANT_TEXT_MAX bytes on a
 * character boundary with "..." at the end when cut. Only a bounded prefix
 * of the line is read: sanitizing never shortens text, so once more than
 * TFS_IMPORTANT_TEXT_MAX bytes are in hand the result is known to be cut, and
 * a character split by the prefix end only affects bytes beyond the cut. */
static char *make_text(const char *line, size_t len) {
  enum { PREFIX = TFS_IMPORTANT_TEXT_MAX + 4 };
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

  if (n > TFS_IMPORTANT_TEXT_MAX || used < len) {
    /* Cut on a character boundary (not before a continuation byte), leaving
     * room for the "..." marker. */
    n = TFS_IMPORTANT_TEXT_MAX - 3;
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
  memset(imp, 0, sizeof(*imp));
}

int tfs_important_add(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind, const char *text,
                      size_t len) {
  if (!imp->first || !imp->last || imp->k <= 0)
    return -EINVAL;
  if (!text)
    len = 0;
  char *t = make_text(text ? text : "", len);
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
  tfs_line_kind_t kind = tfs_classify_line(line, len);
  if (kind == TFS_LINE_PLAIN)
    return 0;
  return tfs_important_add(imp, lineno, kind, line, len);
}

const tfs_important_line_t *tfs_important_last(const tfs_important_t *imp, size_t i) {
  if (!imp->last || i >= imp->nlast)
    return NULL;
  size_t k = (size_t)imp->k;
  size_t oldest = (imp->last_head + k - imp->nlast) % k;
  return &imp->last[(oldest + i) % k];
}
