/* taskfs umount: unmounts a taskfs mount, also a dead one whose mount
 * process died (transport endpoint not connected). */
#include <limits.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "taskfs/mount.h"

static const char usage_text[] =
    "usage: taskfs umount [--lazy|-l] [MOUNTPOINT]\n"
    "\n"
    "Unmounts a taskfs mount; the mount process then exits. A dead mount (its\n"
    "mount process was killed) is cleared too, even while files in it are open.\n"
    "Without MOUNTPOINT, the default one 'taskfs mount' uses\n"
    "($XDG_RUNTIME_DIR/taskfs, else ~/taskfs).\n"
    "\n"
    "  -l, --lazy  detach it even while files in it are open\n"
    "  -h, --help  show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 unmounted, 100 usage, 111 it could not be unmounted (busy, not a mount\n"
    "  point, fusermount3 failed).\n";

int cmd_umount(int argc, char **argv) {
  static const struct option opts[] = {{"lazy", no_argument, NULL, 'l'}, {NULL, 0, NULL, 0}};
  cli_opts_t o = CLI_OPTS("umount", usage_text, "l", opts);
  o.flags = CLI_OPT_IN_ORDER | CLI_OPT_NO_STATE_DIR;
  int lazy = 0, c;
  char msg[1024], q[96], point[PATH_MAX];
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    lazy = 1; /* -l, --lazy */
  if (c < 0)
    return o.code;
  if (argc - optind > 1)
    return cli_usage_error("umount", "one mount point at a time; unexpected '%s'",
                           cli_quote(argv[optind + 1], q, sizeof q));
  /* No argument: the mount point `taskfs mount` takes without one. */
  if (optind >= argc && fs_mount_default_point(point, sizeof point))
    return cli_usage_error("umount", "no default mount point (neither XDG_RUNTIME_DIR nor HOME "
                                     "is set); name one: taskfs umount DIR");
  if (fs_mount_unmount(optind < argc ? argv[optind] : point, lazy, msg, sizeof msg)) {
    cli_error("umount", "%s", msg);
    return CLI_EXIT_SYSTEM;
  }
  return CLI_EXIT_OK;
}
