/* taskfs mcp: serves the store to an MCP host over stdio (see docs/mcp.md).
 * Everything but protocol messages goes to stderr. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "mcp/mcp.h"

static void mcp_usage(FILE *out) {
  fprintf(out,
          "usage: taskfs mcp [--state-dir DIR]\n\n"
          "Serves the task store to an MCP host (Claude Desktop, Claude Code, Cursor, ...) over\n"
          "stdio: newline-delimited JSON-RPC 2.0 on stdin/stdout, logs on stderr. Tools:\n"
          "start_managed_task, read_managed_task, list_managed_tasks, cancel_managed_task;\n"
          "the MCP Tasks utility; resources taskfs://tasks/<id>/record and .../transcript.\n"
          "Exits when stdin ends or on SIGTERM/SIGINT. Host configuration: contrib/mcp/.\n");
}

int cmd_mcp(int argc, char **argv) {
  static const struct option longopts[] = {
      {"state-dir", required_argument, NULL, 's'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *state_dir = NULL;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
    switch (c) {
    case 's':
      state_dir = optarg;
      break;
    case 'h':
      mcp_usage(stdout);
      return CLI_EXIT_OK;
    default:
      mcp_usage(stderr);
      return CLI_EXIT_USAGE;
    }
  }
  if (optind < argc) {
    cli_error("mcp",
              "unexpected argument '%s'; the server takes no arguments besides "
              "--state-dir (run 'taskfs mcp --help')",
              argv[optind]);
    return CLI_EXIT_USAGE;
  }
  mcp_opts_t opts = {.state_dir = state_dir};
  return mcp_serve(&opts);
}
