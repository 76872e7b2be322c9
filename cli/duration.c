/* Durations for options (`run --delay 5m`, `prune --older-than 7d`): a
 * number, whole or decimal, and a unit, ms, s, m, h or d; a bare number is
 * seconds ("500ms", "10s", "1.5s", "5m", "1h", "7d", "30").
 *
 * The minimal form of the parser issue 20 brings into cli/common.c with
 * the same name and signature (there without days, which prune needs):
 * when both are in one tree, this file goes and the shared one gains
 * "d". */
#include <stdint.h>
#include <string.h>

#include "cli/cli.h"

int cli_parse_duration(const char *s, int64_t *ms_out) {
  static const struct {
    const char *name;
    int64_t ms;
  } units[] = {{"ms", 1},    {"s", 1000},     {"", 1000},
               {"m", 60000}, {"h", 3600000},  {"d", 86400000}};
  int64_t whole = 0, frac = 0, scale = 1;
  const char *p = s;
  int digits = 0;
  if (!s)
    return -1;
  for (; *p >= '0' && *p <= '9'; p++, digits++) {
    if (whole > (INT64_MAX - 9) / 10)
      return -1;
    whole = whole * 10 + (*p - '0');
  }
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++, digits++)
      if (scale < 1000000000) {
        frac = frac * 10 + (*p - '0');
        scale *= 10;
      }
  if (!digits)
    return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(p, units[i].name))
      continue;
    if (whole > INT64_MAX / units[i].ms - 1)
      return -1;
    *ms_out = whole * units[i].ms + frac * units[i].ms / scale;
    return 0;
  }
  return -1;
}
