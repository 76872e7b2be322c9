/* A task's limits as every face gives them: the names, the values in
 * their units (core/units.c), "NAME=VALUE,..." lists, the store's defaults
 * merged in, and the check against the hard limits of the process that
 * starts the task (its supervisor and worker inherit them, and a process
 * cannot raise a hard limit). The supervisor applies them
 * (supervisor/limits.c); the words for a worker a limit ended are
 * core/exitdesc.c's. */
#include "core/internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static const char *const names[TFS_LIMIT_COUNT] = {"mem",   "cpu",   "nofile",
                                                   "nproc", "fsize", "core"};
static const char *const rlimit_names[TFS_LIMIT_COUNT] = {
    "RLIMIT_DATA", "RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_CORE"};
static const int resources[TFS_LIMIT_COUNT] = {RLIMIT_DATA,  RLIMIT_CPU,   RLIMIT_NOFILE,
                                               RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CORE};

const char *tfs_limit_name(tfs_limit_t which) {
  return (unsigned)which < TFS_LIMIT_COUNT ? names[which] : NULL;
}

const char *tfs_limit_rlimit_name(tfs_limit_t which) {
  return (unsigned)which < TFS_LIMIT_COUNT ? rlimit_names[which] : NULL;
}

int tfs_limit_lookup(const char *name, size_t len) {
  for (int i = 0; i < TFS_LIMIT_COUNT; i++)
    if (strlen(names[i]) == len && !strncmp(names[i], name, len))
      return i;
  return -1;
}

void tfs_limits_init(tfs_limits_t *l) {
  memset(l, 0, sizeof *l);
  for (int i = 0; i < TFS_LIMIT_COUNT; i++)
    l->v[i].value = TFS_LIMIT_NONE;
}

void tfs_limits_free(tfs_limits_t *l) {
  if (!l)
    return;
  for (int i = 0; i < TFS_LIMIT_COUNT; i++) {
    free(l->v[i].note);
    l->v[i].note = NULL;
  }
  free(l->cgroup);
  l->cgroup = NULL;
}

int tfs_limits_copy(tfs_limits_t *dst, const tfs_limits_t *src) {
  *dst = *src;
  dst->cgroup = NULL;
  for (int i = 0; i < TFS_LIMIT_COUNT; i++)
    dst->v[i].note = NULL;
  int oom = src->cgroup && !(dst->cgroup = strdup(src->cgroup));
  for (int i = 0; i < TFS_LIMIT_COUNT; i++)
    oom |= src->v[i].note && !(dst->v[i].note = strdup(src->v[i].note));
  if (!oom)
    return 0;
  tfs_limits_free(dst);
  return -ENOMEM;
}

/* What each limit wants, for the message of a bad value. */
static const char *const wants[TFS_LIMIT_COUNT] = {
    "a size: a whole number of bytes with an optional K, M, G or T (powers of 1024), like 512M "
    "or 2G",
    "a CPU time: a number with an optional unit " TFS_DURATION_UNITS " (a bare number is "
    "seconds), at least 1s, like 90s or 10m",
    "a whole number of open files, at least 1",
    "a whole number of processes, at least 1",
    "a size: a whole number of bytes with an optional K, M, G or T (powers of 1024), like 10G",
    "a size: a whole number of bytes with an optional K, M, G or T (powers of 1024); 0 turns core "
    "dumps off",
};

int tfs_limit_parse(tfs_limit_t which, const char *text, int64_t *value, char *why, size_t whylen) {
  int64_t v = -1;
  int ok;
  if ((unsigned)which >= TFS_LIMIT_COUNT)
    return TFS_ELIMIT;
  if (text && !strcmp(text, "none")) {
    *value = TFS_LIMIT_NONE;
    return 0;
  }
  switch (which) {
  case TFS_LIMIT_CPU:
    /* RLIMIT_CPU counts whole seconds: a fraction rounds up. */
    ok = tfs_duration_parse(text, &v) == 0 && v > 0;
    v = (v + 999) / 1000;
    break;
  case TFS_LIMIT_NOFILE:
  case TFS_LIMIT_NPROC:
    ok = text && *text && strspn(text, "0123456789") == strlen(text) &&
         tfs_size_parse(text, &v) == 0 && v > 0;
    break;
  case TFS_LIMIT_MEM:
    ok = tfs_size_parse(text, &v) == 0 && v > 0;
    break;
  default:
    ok = tfs_size_parse(text, &v) == 0;
  }
  if (!ok) {
    if (why && whylen)
      snprintf(why, whylen, "%s=%.64s: the %s limit wants %s, or none", names[which],
               text ? text : "", names[which], wants[which]);
    return TFS_ELIMIT;
  }
  /* Below what a shell needs to start, every worker would be killed as
   * it starts (the memory cgroup's OOM killer): refused, not applied. */
  if (which == TFS_LIMIT_MEM && v < TFS_LIMIT_MEM_MIN) {
    if (why && whylen)
      snprintf(why, whylen,
               "mem=%.64s: below 1M, less than a shell needs to start (its every run would be "
               "killed at once); give at least 1M, or none",
               text);
    return TFS_ELIMIT;
  }
  *value = v;
  return 0;
}

int tfs_limits_parse(const char *spec, tfs_limits_t *l, char *why, size_t whylen) {
  char item[256];
  const char *p = spec ? spec : "";
  if (!*p) {
    if (why && whylen)
      snprintf(why, whylen, "no limit given: use NAME=VALUE[,NAME=VALUE...] with NAME one of %s",
               TFS_LIMIT_NAMES);
    return TFS_ELIMIT;
  }
  while (*p) {
    size_t n = strcspn(p, ",");
    const char *eq = memchr(p, '=', n);
    int which = eq ? tfs_limit_lookup(p, (size_t)(eq - p)) : -1;
    snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item ? n : sizeof item - 1), p);
    if (which < 0) {
      int nl = (int)(eq ? (size_t)(eq - p) : n);
      if (why && whylen && eq)
        snprintf(why, whylen, "unknown limit '%.*s': the limits are " TFS_LIMIT_NAMES,
                 nl > 64 ? 64 : nl, p);
      else if (why && whylen)
        snprintf(why, whylen, "'%.*s' is not NAME=VALUE (NAME one of " TFS_LIMIT_NAMES ")",
                 nl > 64 ? 64 : nl, p);
      return TFS_ELIMIT;
    }
    int err =
        tfs_limit_parse((tfs_limit_t)which, item + (eq - p) + 1, &l->v[which].value, why, whylen);
    if (err)
      return err;
    l->v[which].from = TFS_FROM_GIVEN;
    p += n;
    if (*p == ',' && !*++p)
      break; /* a trailing comma is harmless */
  }
  return 0;
}

int tfs_timeout_parse(const char *text, int64_t *ms, char *why, size_t whylen) {
  if (text && !strcmp(text, "none")) {
    *ms = 0;
    return 0;
  }
  if (tfs_duration_parse(text, ms) == 0 && *ms > 0)
    return 0;
  if (why && whylen)
    snprintf(
        why, whylen,
        "timeout '%.64s': a timeout is a duration above 0 with an optional unit " TFS_DURATION_UNITS
        " (a bare number is seconds), like 90s, 10m or 1d; or none",
        text ? text : "");
  return TFS_ELIMIT;
}

/* A limit above the hard limit this process (and so the worker) has. The
 * cpu limit's hard value is one second above the soft one (SIGXCPU
 * first, SIGKILL a second later). */
static int check_hard(const tfs_limits_t *l, int which, char *why, size_t whylen) {
  struct rlimit rl;
  int64_t v = l->v[which].value, need = which == TFS_LIMIT_CPU ? v + 1 : v;
  if (v == TFS_LIMIT_NONE || getrlimit(resources[which], &rl) || rl.rlim_max == RLIM_INFINITY ||
      (uint64_t)need <= (uint64_t)rl.rlim_max)
    return 0;
  if (why && whylen) {
    char given[64];
    if (l->v[which].from == TFS_FROM_CONFIG)
      snprintf(given, sizeof given, "the store's default limit.%s=%" PRId64, names[which], v);
    else
      snprintf(given, sizeof given, "the limit %s=%" PRId64, names[which], v);
    int64_t most = (int64_t)rl.rlim_max - (which == TFS_LIMIT_CPU);
    snprintf(why, whylen,
             "%s is above the hard limit of this process, %" PRIu64 " (%s%s): a process cannot "
             "raise its hard limit, and the task inherits it; ask for at most %" PRId64
             ", or raise the hard limit where taskfs is started (ulimit -H, systemd Limit*=)",
             given, (uint64_t)rl.rlim_max, rlimit_names[which],
             which == TFS_LIMIT_CPU ? ", in seconds; taskfs sets the hard limit one second "
                                      "above the soft one"
                                    : "",
             most);
  }
  return TFS_ELIMIT;
}

char *tfs_limits_summary(const tfs_limits_t *l, char *buf, size_t len) {
  char v[TFS_DURATION_BUF];
  size_t o = 0;
  buf[0] = 0;
  if (l->timeout_ms > 0)
    o += (size_t)snprintf(buf, len, "timeout=%s", tfs_duration_format(l->timeout_ms, v));
  for (int w = 0; w < TFS_LIMIT_COUNT && o < len; w++) {
    int64_t x = l->v[w].value;
    if (x == TFS_LIMIT_NONE)
      continue;
    if (w == TFS_LIMIT_CPU)
      tfs_duration_format(x * 1000, v);
    else if (w == TFS_LIMIT_NOFILE || w == TFS_LIMIT_NPROC)
      snprintf(v, sizeof v, "%" PRId64, x);
    else
      tfs_size_format(x, v);
    o += (size_t)snprintf(buf + o, len - o, "%s%s=%s", o ? "," : "", names[w], v);
  }
  return buf;
}

void tfs_usage_init(tfs_usage_t *u) {
  memset(u, 0, sizeof *u);
  u->tree_peak_kb = -1;
}

void tfs_usage_add(tfs_usage_t *total, const tfs_usage_t *run) {
  total->user_ms += run->user_ms;
  total->sys_ms += run->sys_ms;
  total->output_bytes += run->output_bytes;
  if (run->maxrss_kb > total->maxrss_kb)
    total->maxrss_kb = run->maxrss_kb;
  if (run->tree_peak_kb > total->tree_peak_kb)
    total->tree_peak_kb = run->tree_peak_kb;
}

int tfs__limits_check_hard(const tfs_limits_t *l, char *why, size_t whylen) {
  int err = 0;
  for (int w = 0; !err && w < TFS_LIMIT_COUNT; w++)
    err = check_hard(l, w, why, whylen);
  return err;
}
