/* libFuzzer target: the validators every id and key from outside goes
 * through before it touches a path, and the time parser used on records.
 * Whatever the bytes, a string that passes tfs_id_valid() or
 * tfs_key_valid() must be a safe single path component: not empty, not "."
 * or "..", no '/', no control or non-ASCII byte, within its length limit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/taskfs.h"

static void safe_component(const char *s, size_t max, const char *what) {
  size_t n = strlen(s);
  int ok = n > 0 && n <= max && strcmp(s, ".") && strcmp(s, "..");
  for (size_t i = 0; ok && i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '/' || c < 0x21 || c > 0x7e)
      ok = 0;
  }
  if (!ok) {
    fprintf(stderr, "%s accepted as valid but unsafe as a path component: '%s'\n", what, s);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = 0;
  if (tfs_id_valid(s)) {
    safe_component(s, TFS_ID_MAX, "id");
    /* Ids are [a-z0-9-] only. */
    for (const char *p = s; *p; p++)
      if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-')) {
        fprintf(stderr, "id with a byte outside [a-z0-9-] accepted: '%s'\n", s);
        abort();
      }
  }
  if (tfs_key_valid(s))
    safe_component(s, TFS_KEY_MAX, "key");
  int64_t ms;
  if (tfs_time_parse(s, &ms) == 0) {
    /* A parsed time formats and parses back to the same instant. */
    char buf[TFS_TIME_BUF];
    int64_t back;
    if (tfs_time_format(ms, buf) && (tfs_time_parse(buf, &back) != 0 || back != ms)) {
      fprintf(stderr, "time '%s' -> %lld -> '%s' does not round-trip\n", s, (long long)ms, buf);
      abort();
    }
  }
  free(s);
  return 0;
}
