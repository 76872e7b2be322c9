/* taskfs mcp: serves the store to an MCP host over stdio (see docs/mcp.md).
 * Everything but protocol messages goes to stderr. */
#include <stdio.h>
#include <string.h>
#include <limits.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "mcp/mcp.h"

static const char usage_text[] =
    "usage: taskfs mcp [--state-dir DIR]\n\n"
    "Serves the task store to an MCP host (Claude Desktop, Claude Code, Cursor, ...) over\n"
    "stdio: newline-delimited JSON-RPC 2.0 on stdin/stdout, logs on stderr. Tools:\n"
    "start_managed_task, read_managed_task, list_managed_tasks, cancel_managed_task,\n"
    "control_managed_task; the MCP Tasks utility; resources\n"
    "taskfs://tasks/<id>/record and .../transcript.\n"
    "Exits when stdin ends or on SIGTERM/SIGINT. Host configurations: contrib/mcp/\n"
    "in the source, share/doc/taskfs/mcp/ once installed.\n"
    "\n"
    "  --state-dir DIR  serve the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 stdin ended or a signal stopped it, 100 usage, 111 system failure (the\n"
    "  store cannot be opened, stdin or stdout failed).\n";

int cmd_mcp(int argc, char **argv) {
  cli_opts_t o = CLI_OPTS("mcp", usage_text, "", NULL);
  o.flags = CLI_OPT_IN_ORDER;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
  }
  if (c < 0)
    return o.code;
  if ((code = cli_no_operands("mcp", argc, argv,
                              "(the server takes no arguments besides --state-dir)")))
    return code;
  char path[PATH_MAX]; /* an empty TASKFS_STATE_DIR is a usage error */
  if ((code = cli_store_path("mcp", o.state_dir, path, sizeof path)))
    return code;
  mcp_opts_t opts = {.state_dir = o.state_dir};
  return mcp_serve(&opts);
}
