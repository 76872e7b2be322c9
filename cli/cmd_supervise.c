/* The hidden `taskfs supervise --state-dir DIR ID` verb: the supervisor
 * that tfs_launch() starts for each task (see supervisor/supervise.c). */
#include "cli/cli.h"
#include "cli/verbs.h"
#include "taskfs/supervise.h"

int cmd_supervise(int argc, char **argv) {
  return tfs_supervise_main(argc, argv);
}
