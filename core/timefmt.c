/* Wall-clock time in milliseconds and RFC 3339 formatting. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t tfs_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes v as exactly n digits. */
static void put_digits(char *p, int v, int n) {
  for (int i = n - 1; i >= 0; i--, v /= 10)
    p[i] = (char)('0' + v % 10);
}

/* Every record save and every `ls --json` formats several times, so the
 * common case (years 1970-9999) is done by hand: the civil date from days
 * since the epoch (H. Hinnant's algorithm), then fixed-width digits. */
char *tfs_time_format(int64_t ms, char buf[TFS_TIME_BUF]) {
  int64_t sec = ms / 1000, rem = ms % 1000;
  if (rem < 0) {
    rem += 1000;
    sec -= 1;
  }
  if (sec >= 0 && sec < 253402300800LL) { /* 9999-12-31T23:59:59Z */
    int64_t days = sec / 86400, tod = sec % 86400;
    int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1), m = (int)(mp < 10 ? mp + 3 : mp - 9);
    int y = (int)(yoe + era * 400 + (m <= 2));
    memcpy(buf, "0000-00-00T00:00:00.000Z", 25);
    put_digits(buf, y, 4);
    put_digits(buf + 5, m, 2);
    put_digits(buf + 8, d, 2);
    put_digits(buf + 11, (int)(tod / 3600), 2);
    put_digits(buf + 14, (int)(tod / 60 % 60), 2);
    put_digits(buf + 17, (int)(tod % 60), 2);
    put_digits(buf + 20, (int)rem, 3);
    return buf;
  }
  time_t t = (time_t)sec;
  struct tm tm;
  if (!gmtime_r(&t, &tm)) {
    snprintf(buf, TFS_TIME_BUF, "1970-01-01T00:00:00.000Z");
    return buf;
  }
  /* The wide scratch buffer keeps the compiler's truncation check quiet for
   * years that cannot occur. */
  char tmp[96];
  snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)rem);
  snprintf(buf, TFS_TIME_BUF, "%.31s", tmp);
  return buf;
}

/* Reads exactly n digits. */
static int digits(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9')
      return -1;
    v = v * 10 + (c - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

/* Accepts YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), which covers
 * everything we write and what other RFC 3339 writers produce. */
int tfs_time_parse(const char *s, int64_t *ms) {
  int Y, M, D, h, m, sec, frac = 0;
  const char *p = s;
  if (!s)
    return -EINVAL;
  if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' || digits(&p, 2, &D) ||
      (*p != 'T' && *p != 't' && *p != ' '))
    return -EINVAL;
  p++;
  if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' || digits(&p, 2, &sec))
    return -EINVAL;
  if (*p == '.') {
    int n = 0;
    p++;
    if (*p < '0' || *p > '9')
      return -EINVAL;
    while (*p >= '0' && *p <= '9') {
      if (n < 3)
        frac = frac * 10 + (*p - '0');
      n++;
      p++;
    }
    while (n < 3) {
      frac *= 10;
      n++;
    }
  }
  int off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p == '-' ? -1 : 1, oh, om;
    p++;
    if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om))
      return -EINVAL;
    off = sign * (oh * 60 + om);
  } else {
    return -EINVAL;
  }
  if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
    return -EINVAL;
  struct tm tm = {0};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  *ms = ((int64_t)t - (int64_t)off * 60) * 1000 + frac;
  return 0;
}

void tfs__sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

char *tfs_time_format_local(int64_t ms, char buf[TFS_TIME_BUF]) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  if (!localtime_r(&t, &tm) || !strftime(buf, TFS_TIME_BUF, "%Y-%m-%d %H:%M:%S", &tm))
    return tfs_time_format(ms, buf);
  return buf;
}
