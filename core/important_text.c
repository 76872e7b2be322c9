/* The kept text of an important line (core/important_text.h): escape
 * sequences stripped, valid UTF-8 without control bytes but tab, cut on a
 * character boundary. Below both important.c (the first and last K) and
 * lead.c (the lead and its context), which keep such texts. */
#include <stdlib.h>
#include <string.h>

#include "core/important_text.h"

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

void tfs__text_take(tfs__text_raw_t *r, const char *line, size_t len) {
  size_t used = 0, rlen;
  size_t head = len < TFS__TEXT_PREFIX ? len : TFS__TEXT_PREFIX;
  /* Most lines hold no escape: one memchr and a copy. */
  if (!memchr(line, '\x1b', head)) {
    memcpy(r->raw, line, head);
    rlen = used = head;
  } else {
    rlen = strip_escapes(line, len, r->raw, TFS__TEXT_PREFIX, &used);
  }
  /* One trailing '\r' (CRLF output), even if a colour reset follows it. */
  if (used == len && rlen > 0 && r->raw[rlen - 1] == '\r')
    rlen--;
  r->len = (unsigned short)rlen;
  r->whole = used == len;
}

/* The second phase: made valid UTF-8 by the core's tfs_utf8_sanitize()
 * with the C0 controls other than tab also turned into U+FFFD (a terminal
 * or a JSON reader would otherwise act on them), and cut to max bytes on a
 * character boundary with "..." at the end when cut. Sanitizing never
 * shortens text, so once more than TFS_IMPORTANT_TEXT_MAX bytes are in
 * hand the result is known to be cut, and a character split by the prefix
 * end only affects bytes beyond the cut. */
char *tfs__text_finish(const tfs__text_raw_t *r, size_t max) {
  char buf[3 * TFS__TEXT_PREFIX + 1];
  size_t slen = 0;
  char *san = tfs_utf8_sanitize(r->raw, r->len, &slen);
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

  if (n > max || !r->whole) {
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

/* Builds the kept text of a line, at most max bytes (at most
 * TFS_IMPORTANT_TEXT_MAX): escapes stripped, a trailing '\r' dropped, valid
 * UTF-8 without control bytes but tab, cut with "..." (the two phases
 * above). Only a bounded prefix of the line is read. */
char *tfs__important_text(const char *line, size_t len, size_t max) {
  tfs__text_raw_t r;
  if (max > TFS_IMPORTANT_TEXT_MAX)
    max = TFS_IMPORTANT_TEXT_MAX;
  tfs__text_take(&r, line, len);
  return tfs__text_finish(&r, max);
}
