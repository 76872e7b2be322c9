/* Base64 for the exact bytes of argv and cwd in a record ("commandBytes",
 * "cwdBytes"): standard alphabet, padded, strict on decode. */
#include "core/internal.h"

#include <string.h>

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *tfs__b64_encode(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t o = 0;
  char *out = malloc((len + 2) / 3 * 4 + 1);
  if (!out)
    return NULL;
  for (size_t i = 0; i < len; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) |
                 (i + 2 < len ? p[i + 2] : 0);
    out[o++] = b64chars[v >> 18 & 63];
    out[o++] = b64chars[v >> 12 & 63];
    out[o++] = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
    out[o++] = i + 2 < len ? b64chars[v & 63] : '=';
  }
  out[o] = '\0';
  return out;
}

/* A decoded NUL is refused: no argument or path can hold one. */
char *tfs__b64_decode(const char *s) {
  size_t len = strlen(s), o = 0;
  if (len % 4)
    return NULL;
  char *out = malloc(len / 4 * 3 + 1);
  if (!out)
    return NULL;
  for (size_t i = 0; i < len; i += 4) {
    unsigned v = 0;
    int pad = 0;
    for (int k = 0; k < 4; k++) {
      const char *c = s[i + k] ? strchr(b64chars, s[i + k]) : NULL;
      if (s[i + k] == '=' && i + 4 == len && k >= 2 && (k == 3 || s[i + 3] == '=')) {
        pad++;
        v <<= 6;
      } else if (c && !pad) {
        v = v << 6 | (unsigned)(c - b64chars);
      } else {
        free(out);
        return NULL;
      }
    }
    unsigned char b[3] = {v >> 16 & 255, v >> 8 & 255, v & 255};
    for (int k = 0; k < 3 - pad; k++) {
      if (!b[k]) {
        free(out);
        return NULL;
      }
      out[o++] = (char)b[k];
    }
  }
  out[o] = '\0';
  return out;
}
