/* The units limits are written in, one grammar for every face (taskfs run,
 * taskfs config, <state>/config, the MCP server): durations ("500ms",
 * "10s", "5m", "1h", "7d", a bare number is seconds) and sizes ("512M", "2G",
 * powers of 1024). Each formatter writes what its parser reads back. */
#include "core/internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Reads digits[.digits] at *p: the whole part, and the fraction as
 * millionths (more digits are cut). Returns 0 or -1 (no digit, overflow). */
static int number(const char **p, int64_t *whole, int64_t *micro) {
  const char *s = *p;
  int digits = 0;
  *whole = *micro = 0;
  for (; *s >= '0' && *s <= '9'; s++, digits++) {
    if (*whole > (INT64_MAX - (*s - '0')) / 10)
      return -1;
    *whole = *whole * 10 + (*s - '0');
  }
  if (*s == '.') {
    int64_t scale = 100000;
    int frac = 0;
    for (s++; *s >= '0' && *s <= '9'; s++, frac++) {
      *micro += (*s - '0') * scale;
      scale /= 10;
    }
    if (!frac)
      return -1; /* "2." */
    digits += frac;
  }
  *p = s;
  return digits ? 0 : -1;
}

/* whole.micro * unit, rounded up; -1 on overflow. */
static int64_t scaled(int64_t whole, int64_t micro, int64_t unit) {
  if (whole > INT64_MAX / unit)
    return -1;
  int64_t frac = (micro * unit + 999999) / 1000000;
  if (whole * unit > INT64_MAX - frac)
    return -1;
  return whole * unit + frac;
}

int tfs_duration_parse(const char *s, int64_t *ms) {
  static const struct {
    const char *name;
    int64_t ms;
  } units[] = {{"ms", 1},      {"s", 1000},     {"m", 60000},
               {"h", 3600000}, {"d", 86400000}, {"", 1000}}; /* as TFS_DURATION_UNITS says */
  int64_t whole, micro;
  if (!s || number(&s, &whole, &micro))
    return -1;
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (!strcmp(s, units[i].name)) {
      int64_t v = scaled(whole, micro, units[i].ms);
      if (v < 0)
        return -1;
      *ms = v;
      return 0;
    }
  return -1;
}

int tfs_duration_has_unit(const char *s) {
  int64_t ms;
  size_t n = s ? strlen(s) : 0;
  return tfs_duration_parse(s, &ms) == 0 && n && (s[n - 1] < '0' || s[n - 1] > '9');
}

char *tfs_duration_format(int64_t ms, char buf[TFS_DURATION_BUF]) {
  if (ms > 0 && ms % 3600000 == 0)
    snprintf(buf, TFS_DURATION_BUF, "%" PRId64 "h", ms / 3600000);
  else if (ms > 0 && ms % 60000 == 0)
    snprintf(buf, TFS_DURATION_BUF, "%" PRId64 "m", ms / 60000);
  else if (ms % 1000 == 0)
    snprintf(buf, TFS_DURATION_BUF, "%" PRId64 "s", ms / 1000);
  else
    snprintf(buf, TFS_DURATION_BUF, "%" PRId64 "ms", ms);
  return buf;
}

int tfs_size_parse(const char *s, int64_t *bytes) {
  static const char units[] = "KMGT";
  int64_t whole, micro, unit = 1;
  if (!s || number(&s, &whole, &micro) || micro)
    return -1;
  if (*s) {
    const char *u = strchr(units, *s >= 'a' ? *s - 32 : *s);
    if (!u || !*u)
      return -1;
    for (const char *q = units; q <= u; q++)
      unit *= 1024;
    s++;
    if (*s && strcasecmp(s, "B") && strcasecmp(s, "iB"))
      return -1;
  }
  if (whole > INT64_MAX / unit)
    return -1;
  *bytes = whole * unit;
  return 0;
}

char *tfs_size_format(int64_t bytes, char buf[TFS_DURATION_BUF]) {
  static const char units[] = "TGMK";
  for (int i = 0; i < 4; i++) {
    int64_t unit = INT64_C(1) << (10 * (4 - i));
    if (bytes > 0 && bytes % unit == 0) {
      snprintf(buf, TFS_DURATION_BUF, "%" PRId64 "%c", bytes / unit, units[i]);
      return buf;
    }
  }
  snprintf(buf, TFS_DURATION_BUF, "%" PRId64, bytes);
  return buf;
}
