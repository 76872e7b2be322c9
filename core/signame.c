/* Signal names, both ways: one spelling for every face (the record's
 * reasons, `taskfs ls`, record.json), and one parser for every place that
 * takes a signal from a person (`taskfs signal SIG ID`).
 *
 * glibc's sigabbrev_np() names the classic signals only; the real-time ones
 * are spelled as kill -l spells them (SIGRTMIN+n up to half the range,
 * SIGRTMAX-n above), and a number with no name at all as "SIG<n>", so that
 * every name printed reads back to its number.
 */
#include "core/internal.h"
#include "taskfs/text.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *tfs_signal_name(int sig, char buf[TFS_SIGNAME_MAX]) {
  const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
  int lo = SIGRTMIN, hi = SIGRTMAX;
  if (abbrev)
    snprintf(buf, TFS_SIGNAME_MAX, "SIG%s", abbrev);
  else if (sig == lo)
    snprintf(buf, TFS_SIGNAME_MAX, "SIGRTMIN");
  else if (sig == hi)
    snprintf(buf, TFS_SIGNAME_MAX, "SIGRTMAX");
  else if (sig > lo && sig - lo <= (hi - lo) / 2)
    snprintf(buf, TFS_SIGNAME_MAX, "SIGRTMIN+%d", sig - lo);
  else if (sig > lo && sig < hi)
    snprintf(buf, TFS_SIGNAME_MAX, "SIGRTMAX-%d", hi - sig);
  else
    snprintf(buf, TFS_SIGNAME_MAX, "SIG%d", sig);
  return buf;
}

/* A decimal number of at most 3 digits that fills s, or -1. */
static int small_number(const char *s) {
  size_t n = strspn(s, "0123456789");
  if (n == 0 || n > 3 || s[n])
    return -1;
  return atoi(s);
}

/* "RTMIN", "RTMIN+n", "RTMAX", "RTMAX-n" (after "SIG"): the number, or -1. */
static int realtime(const char *s) {
  int lo = SIGRTMIN, hi = SIGRTMAX, base, sign, k = 0;
  if (!strncasecmp(s, "RTMIN", 5)) {
    base = lo;
    sign = '+';
  } else if (!strncasecmp(s, "RTMAX", 5)) {
    base = hi;
    sign = '-';
  } else {
    return -1;
  }
  s += 5;
  if (*s && (*s != sign || (k = small_number(s + 1)) < 0))
    return -1;
  int sig = sign == '+' ? base + k : base - k;
  return sig >= lo && sig <= hi ? sig : -1;
}

int tfs_signal_parse(const char *s) {
  /* Other names glibc knows for a signal it abbreviates differently. */
  static const struct {
    const char *name;
    int sig;
  } aliases[] = {{"IOT", SIGIOT}, {"CLD", SIGCHLD}, {"IO", SIGIO}, {"POLL", SIGPOLL}};
  if (!s)
    return -EINVAL;
  if (!strncasecmp(s, "SIG", 3))
    s += 3;
  int sig = small_number(s);
  if (sig < 0)
    sig = realtime(s);
  for (int i = 1; sig < 0 && i < NSIG; i++) {
    const char *abbrev = sigabbrev_np(i);
    if (abbrev && !strcasecmp(s, abbrev))
      sig = i;
  }
  for (size_t i = 0; sig < 0 && i < sizeof aliases / sizeof aliases[0]; i++)
    if (!strcasecmp(s, aliases[i].name))
      sig = aliases[i].sig;
  return sig >= 1 && sig < NSIG ? sig : -EINVAL;
}
