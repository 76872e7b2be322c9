/* Names of task states and restart policies, as written in record.json. */
#include "core/internal.h"

#include <string.h>

static const char *const state_names[] = {"queued",    "running", "completed", "failed",
                                          "cancelled", "lost",    "paused"};
static const char *const restart_names[] = {"no", "on-failure", "always"};

const char *tfs_state_name(tfs_state_t s) {
  if ((unsigned)s < sizeof state_names / sizeof *state_names)
    return state_names[s];
  return "unknown";
}

int tfs_state_parse(const char *name, tfs_state_t *out) {
  for (size_t i = 0; name && i < sizeof state_names / sizeof *state_names; i++)
    if (!strcmp(name, state_names[i])) {
      *out = (tfs_state_t)i;
      return 0;
    }
  return TFS_EBADID;
}

int tfs_state_terminal(tfs_state_t s) {
  return s == TFS_COMPLETED || s == TFS_FAILED || s == TFS_CANCELLED || s == TFS_LOST;
}

const char *tfs_restart_name(tfs_restart_t r) {
  if ((unsigned)r < sizeof restart_names / sizeof *restart_names)
    return restart_names[r];
  return "unknown";
}

int tfs_restart_parse(const char *name, tfs_restart_t *out) {
  for (size_t i = 0; name && i < sizeof restart_names / sizeof *restart_names; i++)
    if (!strcmp(name, restart_names[i])) {
      *out = (tfs_restart_t)i;
      return 0;
    }
  return TFS_EBADID;
}
