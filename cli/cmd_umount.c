/* taskfs umount: unmounts a taskfs mount, also a stale one whose mount
 * process died (transport endpoint not connected). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "taskfs/mount.h"

static void usage(FILE *out) {
  fprintf(out, "usage: taskfs umount [--lazy|-l] MOUNTPOINT\n"
               "\n"
               "Unmounts a taskfs mount; the mount process then exits. --lazy detaches it\n"
               "even while files in it are open.\n");
}

int cmd_umount(int argc, char **argv) {
  static const struct option longopts[] = {
      {"lazy", no_argument, NULL, 'l'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int lazy = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+lh", longopts, NULL)) != -1) {
    switch (c) {
    case 'l':
      lazy = 1;
      break;
    case 'h':
      usage(stdout);
      return CLI_EXIT_OK;
    default:
      usage(stderr);
      return CLI_EXIT_USAGE;
    }
  }
  if (argc - optind != 1) {
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  char msg[1024];
  if (tfs_mount_unmount(argv[optind], lazy, msg, sizeof msg)) {
    fprintf(stderr, "taskfs umount: %s\n", msg);
    return CLI_EXIT_SYSTEM;
  }
  return CLI_EXIT_OK;
}
