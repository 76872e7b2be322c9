/* taskfs prune --keep N: deletes the oldest tasks so that at most N remain.
 * A task whose supervisor is alive is never deleted, so more than N may
 * remain while tasks run. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs prune --keep N [--state-dir DIR]\n"
    "\n"
    "Deletes the oldest tasks (directory, transcript, key) so that at most N remain.\n"
    "Tasks whose supervisor is alive are never deleted. Prints how many were deleted.\n"
    "\n"
    "  --keep N         how many of the newest tasks to keep (required)\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 ok, 100 usage, 111 system failure.\n";

int cmd_prune(int argc, char **argv) {
  static const struct option opts[] = {
      {"keep", required_argument, NULL, 'k'},
      {NULL, 0, NULL, 0},
  };
  cli_opts_t o = CLI_OPTS("prune", usage_text, "", opts);
  const char *keep_arg = NULL;
  int64_t keep;
  tfs_store_t *store;
  char q[96];
  int c, rc;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    keep_arg = optarg; /* --keep, the one option of the verb's own */
  if (c < 0)
    return o.code;
  if ((rc = cli_no_operands("prune", argc, argv, NULL)))
    return rc;
  if (!keep_arg)
    return cli_usage_error("prune", "--keep N is required (how many of the newest tasks to keep)");
  if (cli_parse_i64(keep_arg, &keep))
    return cli_usage_error("prune", "--keep wants a whole number >= 0, not '%s'",
                           cli_quote(keep_arg, q, sizeof q));
  rc = cli_open_store(&o, 0, &store);
  if (rc)
    return rc;
  if (!store) {
    printf("deleted 0 tasks (there is no store yet)\n");
    return cli_flush_stdout("prune", CLI_EXIT_OK);
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
