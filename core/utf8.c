/* Making outside text valid UTF-8 before it goes into JSON: jansson refuses
 * invalid UTF-8, and a record must never fail to save because a command
 * printed binary. */
#include "core/internal.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. Rejects
 * overlong forms, surrogates and code points above U+10FFFF, like jansson. */
static size_t seq_len(const unsigned char *p, size_t avail) {
  unsigned c = p[0];
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned min, cp;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
    min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
    min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  if (avail < n)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

char *tfs_utf8_sanitize(const char *s, size_t len, size_t *out_len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t bad = 0;
  for (size_t i = 0; i < len;) {
    size_t n = p[i] ? seq_len(p + i, len - i) : 0;
    if (!n) {
      bad++;
      i++;
    } else {
      i += n;
    }
  }
  char *out = malloc(len + bad * 2 + 1);
  if (!out)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    size_t n = p[i] ? seq_len(p + i, len - i) : 0;
    if (!n) {
      out[o++] = (char)0xef; /* U+FFFD */
      out[o++] = (char)0xbf;
      out[o++] = (char)0xbd;
      i++;
    } else {
      memcpy(out + o, p + i, n);
      o += n;
      i += n;
    }
  }
  out[o] = '\0';
  if (out_len)
    *out_len = o;
  return out;
}

int tfs__utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    if (p[i] && p[i] < 0x80) {
      i++;
      continue;
    }
    size_t n = p[i] ? seq_len(p + i, len - i) : 0;
    if (!n)
      return 0;
    i += n;
  }
  return 1;
}

/* Backs up from max over at most three continuation bytes to the lead
 * byte of the character max would split, and cuts before it only if that
 * is one valid character running past max: bytes that form none are no
 * character and become one U+FFFD each in tfs_utf8_sanitize, so a cut
 * between them splits nothing. */
size_t tfs_utf8_cut(const char *s, size_t len, size_t max) {
  const unsigned char *p = (const unsigned char *)s;
  if (len <= max)
    return len;
  size_t j = max;
  while (j > 0 && max - j < 3 && (p[j] & 0xc0) == 0x80)
    j--;
  if (j == max)
    return max;
  size_t n = seq_len(p + j, len - j);
  return n && j + n > max ? j : max;
}
