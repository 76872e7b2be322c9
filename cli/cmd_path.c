/* Placeholder until the verb lands; replaced by its owner. */
#include <stdio.h>
#include "cli/cli.h"
#include "cli/verbs.h"

int cmd_path(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "taskfs path: not built yet\n");
  return CLI_EXIT_SYSTEM;
}
