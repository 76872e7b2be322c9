/* taskfs-supervise: the supervisor on its own, the binary tfs_launch()
 * execs for each task (`taskfs-supervise supervise --state-dir DIR ID`,
 * argv[0] "taskfs", so `ps` shows "taskfs supervise ..." as before).
 *
 * The same code as the hidden `taskfs supervise` verb, linked against core
 * and the supervisor only (libuv, jansson, libc): the CLI links the faces'
 * stacks (FUSE, libmicrohttpd with GnuTLS, PCRE2: 17 shared objects), and
 * loading them again in every supervisor was most of a start's cost after
 * the fsyncs (docs/ARCHITECTURE.md, "Starting a task").
 */
#include <stdio.h>
#include <string.h>

#include "taskfs/supervise.h"

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "supervise")) {
    fprintf(stderr, "usage: taskfs-supervise supervise --state-dir DIR [--env-fd N] ID\n"
                    "Internal: the per-task supervisor that 'taskfs run', the MCP server and\n"
                    "the mount start. Not meant to be run by hand.\n");
    return 100;
  }
  return tfs_supervise_main(argc - 1, argv + 1);
}
