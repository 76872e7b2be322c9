/* Names of task states, restart policies, stderr modes and engines, as written in
 * record.json. One table per kind, one lookup for all. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

static const char *const state_names[] = {"queued",    "running", "completed", "failed",
                                          "cancelled", "lost",    "paused"};
static const char *const restart_names[] = {"no", "on-failure", "always"};
static const char *const stderr_names[] = {"merged", "split"};
static const char *const engine_names[] = {"local", "slurm"};

static const char *name_of(const char *const *names, size_t n, unsigned i) {
  return i < n ? names[i] : "unknown";
}

/* The index of name in names, or -1. */
static int index_of(const char *const *names, size_t n, const char *name) {
  for (size_t i = 0; name && i < n; i++)
    if (!strcmp(name, names[i]))
      return (int)i;
  return -1;
}

/* tfs_<what>_name() and tfs_<what>_parse() of a table: "unknown" for a
 * value out of range, TFS_EBADID for a name not in it. */
#define NAMED(type, what, table)                                                                   \
  const char *tfs_##what##_name(type v) {                                                          \
    return name_of(table, sizeof table / sizeof *table, (unsigned)v);                              \
  }                                                                                                \
  int tfs_##what##_parse(const char *name, type *out) {                                            \
    int i = index_of(table, sizeof table / sizeof *table, name);                                   \
    if (i < 0)                                                                                     \
      return TFS_EBADID;                                                                           \
    *out = (type)i;                                                                                \
    return 0;                                                                                      \
  }

NAMED(tfs_state_t, state, state_names)
NAMED(tfs_restart_t, restart, restart_names)
NAMED(tfs_stderr_t, stderr, stderr_names)
NAMED(tfs_engine_t, engine, engine_names)

int tfs_state_terminal(tfs_state_t s) {
  return s == TFS_COMPLETED || s == TFS_FAILED || s == TFS_CANCELLED || s == TFS_LOST;
}

int tfs_state_parse_list(const char *list, unsigned *mask, char *bad, size_t badlen) {
  char name[32];
  unsigned bits = 0;
  const char *p = list ? list : "";
  do {
    size_t n = strcspn(p, ",");
    tfs_state_t st;
    if (n && n < sizeof name) {
      memcpy(name, p, n);
      name[n] = 0;
    }
    if (!n || n >= sizeof name || tfs_state_parse(name, &st)) {
      if (bad)
        snprintf(bad, badlen, "%.*s", (int)n, p);
      return TFS_EBADID;
    }
    bits |= TFS_STATE_BIT(st);
    p += n;
  } while (*p++ == ',');
  *mask |= bits;
  return 0;
}

int tfs_restart_parse_list(const char *list, tfs_restart_t *out, int *on_timeout) {
  tfs_restart_t policy = TFS_RESTART_NO;
  int timeout = 0, policies = 0;
  char name[32];
  for (const char *p = list ? list : ""; *p;) {
    size_t n = strcspn(p, ",");
    if (!n || n >= sizeof name)
      return TFS_EBADID;
    memcpy(name, p, n);
    name[n] = 0;
    if (!strcmp(name, "on-timeout"))
      timeout = 1;
    else if (tfs_restart_parse(name, &policy) || policies++)
      return TFS_EBADID;
    p += n + (p[n] == ',');
  }
  if (!policies && !timeout)
    return TFS_EBADID;
  *out = policy;
  *on_timeout = timeout;
  return 0;
}
