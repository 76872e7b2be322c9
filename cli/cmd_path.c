/* taskfs path: prints the state directory every other verb would use, the
 * way they resolve it. It never creates the directory, so it is safe to
 * run anywhere (`ls "$(taskfs path)"`). */
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
    "EXIT STATUS\n"
    "  0 ok, 100 usage, 111 the directory cannot be determined.\n";

int cmd_path(int argc, char **argv) {
  cli_opts_t o = CLI_OPTS("path", usage_text, "", NULL);
  char path[PATH_MAX];
  int c, rc;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
  }
  if (c < 0)
    return o.code;
  if ((rc = cli_no_operands("path", argc, argv, NULL)))
    return rc;
  if ((rc = cli_store_path("path", o.state_dir, path, sizeof path)))
    return rc;
  printf("%s\n", path);
  return cli_flush_stdout("path", CLI_EXIT_OK);
}
