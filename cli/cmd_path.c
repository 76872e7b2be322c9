/* taskfs path: prints the state directory every other verb would use, the
 * way they resolve it. It never creates the directory, so it is safe to
 * run anywhere (`ls "$(taskfs path)"`). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs path [--state-dir DIR]\n"
    "\n"
    "Prints the resolved state directory: --state-dir DIR, else $TASKFS_STATE_DIR,\n"
    "else $XDG_STATE_HOME/taskfs, else $HOME/.local/state/taskfs. Creates nothing.\n"
    "\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit codes: 0 ok, 100 usage, 111 the directory cannot be determined.\n";

int cmd_path(int argc, char **argv) {
  static const struct option opts[] = {
      {"state-dir", required_argument, NULL, 'S'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *state_dir = NULL;
  char path[PATH_MAX];
  int c, rc;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'S':
      state_dir = optarg;
      break;
    case 'h':
      fputs(usage_text, stdout);
      return CLI_EXIT_OK;
    default:
      return cli_bad_option("path", argv, c);
    }
  }
  if (optind < argc)
    return cli_usage_error("path", "unexpected argument '%s'", argv[optind]);
  rc = tfs_store_resolve(state_dir, path, sizeof path);
  if (rc < 0) {
    cli_error("path",
              "cannot tell where the store is (%s): pass --state-dir DIR or set "
              "TASKFS_STATE_DIR, XDG_STATE_HOME or HOME",
              tfs_strerror(rc));
    return CLI_EXIT_SYSTEM;
  }
  printf("%s\n", path);
  if (fflush(stdout) != 0) {
    cli_error("path", "cannot write to stdout: %m");
    return CLI_EXIT_SYSTEM;
  }
  return CLI_EXIT_OK;
}
