/* taskfs prune --keep N: deletes the oldest tasks so that at most N remain;
 * --older-than AGE and --state S delete by rule instead (core's
 * tfs_task_prune_opts). A task whose supervisor is alive is never deleted,
 * so more than N may remain while tasks run. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs prune [--keep N] [--older-than AGE] [--state S[,S...]] [--state-dir DIR]\n"
    "\n"
    "Deletes the oldest tasks (directory, transcript, key) so that at most N remain,\n"
    "or the ended tasks that match every rule given. Tasks whose supervisor is\n"
    "alive are never deleted. Prints how many were deleted.\n"
    "\n"
    "  --keep N         how many of the newest (matching) tasks to keep\n"
    "  --older-than AGE  only tasks that ended longer ago than AGE (30m, 12h, 7d)\n"
    "  --state S        only tasks in state S: completed, failed, cancelled, lost\n"
    "                   (repeat it or use commas for several)\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 ok, 100 usage, 111 system failure.\n";

/* --state S[,S...]: ended states only. */
static int parse_states(const char *arg, unsigned *mask) {
  char bad[64], q[96];
  const unsigned ended = TFS_STATE_BIT(TFS_COMPLETED) | TFS_STATE_BIT(TFS_FAILED) |
                         TFS_STATE_BIT(TFS_CANCELLED) | TFS_STATE_BIT(TFS_LOST);
  int err = tfs_state_parse_list(arg, mask, bad, sizeof bad);
  if (err || (*mask & ~ended))
    return cli_usage_error("prune",
                           "--state takes the states of ended tasks (completed, failed, "
                           "cancelled, lost), not '%s'",
                           cli_quote(err ? bad : arg, q, sizeof q));
  return CLI_EXIT_OK;
}

/* By rules: --older-than, --state (and --keep among the matches). */
static int prune_rules(tfs_store_t *store, const tfs_prune_opts_t *po) {
  int rc = tfs_task_prune_opts(store, po);
  if (rc < 0) {
    cli_error("prune", "cannot prune %s: %s", tfs_store_path(store), tfs_strerror(rc));
    return CLI_EXIT_SYSTEM;
  }
  printf("deleted %d task%s; %lld remain\n", rc, rc == 1 ? "" : "s",
         (long long)tfs_task_count(store));
  return cli_flush_stdout("prune", CLI_EXIT_OK);
}

int cmd_prune(int argc, char **argv) {
  static const struct option opts[] = {
      {"keep", required_argument, NULL, 'k'},
      {"older-than", required_argument, NULL, 'o'},
      {"state", required_argument, NULL, 's'},
      {NULL, 0, NULL, 0},
  };
  tfs_prune_opts_t po = {.keep = SIZE_MAX};
  cli_opts_t o = CLI_OPTS("prune", usage_text, "", opts);
  const char *keep_arg = NULL;
  int64_t keep;
  tfs_store_t *store;
  char q[96];
  int c, rc;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 'k')
      keep_arg = optarg;
    else if (c == 's' && (rc = parse_states(optarg, &po.states)))
      return rc;
    else if (c == 'o' &&
             (rc = cli_duration_opt("prune", "--older-than", optarg, &po.older_than_ms)))
      return rc;
    else if (c == 'o' && (!po.older_than_ms || !tfs_duration_has_unit(optarg)))
      return cli_usage_error("prune",
                             "--older-than wants an age above 0 with its unit (" TFS_DURATION_UNITS
                             "), like 30m, 12h or 7d: '%s' could be seconds or days",
                             cli_quote(optarg, q, sizeof q));
  }
  if (c < 0)
    return o.code;
  if ((rc = cli_no_operands("prune", argc, argv, NULL)))
    return rc;
  int rules = po.states || po.older_than_ms;
  if (!keep_arg && !rules)
    return cli_usage_error("prune", "which tasks? give --keep N (how many of the newest tasks to "
                                    "keep), --older-than AGE or --state S");
  if (keep_arg && cli_parse_i64(keep_arg, &keep))
    return cli_usage_error("prune", "--keep wants a whole number >= 0, not '%s'",
                           cli_quote(keep_arg, q, sizeof q));
  rc = cli_open_store(&o, 0, &store);
  if (rc)
    return rc;
  if (!store) {
    printf("deleted 0 tasks (there is no store yet)\n");
    return cli_flush_stdout("prune", CLI_EXIT_OK);
  }
  if (rules) {
    po.keep = keep_arg ? (size_t)keep : SIZE_MAX;
    rc = prune_rules(store, &po);
    tfs_store_close(store);
    return rc;
  }
  rc = tfs_task_prune(store, (size_t)keep);
  if (rc < 0) {
    cli_error("prune", "cannot prune %s: %s", tfs_store_path(store), tfs_strerror(rc));
    tfs_store_close(store);
    return CLI_EXIT_SYSTEM;
  }
  int64_t left = tfs_task_count(store);
  if (left >= 0)
    printf("deleted %d task%s; %lld remain%s%s\n", rc, rc == 1 ? "" : "s", (long long)left,
           left == 1 ? "s" : "", left > keep ? " (tasks whose supervisor is alive are kept)" : "");
  else
    printf("deleted %d task%s\n", rc, rc == 1 ? "" : "s");
  tfs_store_close(store);
  return cli_flush_stdout("prune", CLI_EXIT_OK);
}
