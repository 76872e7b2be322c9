/* taskfs: the command line. Each verb lives in cli/cmd_<verb>.c; this file
 * only dispatches. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"

#define TASKFS_VERSION "0.1.0"

typedef struct {
  const char *name;
  cli_verb_fn fn;
  const char *summary; /* NULL: internal, not listed */
} verb_t;

static const verb_t verbs[] = {
    {"run", cmd_run, "start a task under its own supervisor"},
    {"ls", cmd_ls, "list tasks"},
    {"show", cmd_show, "print a task's record as JSON"},
    {"logs", cmd_logs, "print (or follow) a task's transcript"},
    {"cancel", cmd_cancel, "request a stop of a running task"},
    {"wait", cmd_wait, "wait for a task to end; exit with its exit code"},
    {"prune", cmd_prune, "delete old finished tasks"},
    {"path", cmd_path, "print the resolved state directory"},
    {"mount", cmd_mount, "mount the store as a FUSE filesystem"},
    {"umount", cmd_umount, "unmount a taskfs mount"},
    {"mcp", cmd_mcp, "serve the store to an MCP host over stdio"},
    {"serve", cmd_serve, "serve the store over HTTP (MCP at /mcp), with a token"},
    {"supervise", cmd_supervise, NULL},
};

static void usage(FILE *out) {
  fprintf(out, "usage: taskfs VERB [OPTIONS] [ARGS]\n\n"
               "Durable tasks: every task lives in a store on disk, readable and stoppable\n"
               "from any process.\n\nverbs:\n");
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (verbs[i].summary)
      fprintf(out, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
  fprintf(out, "\nEvery verb takes --state-dir DIR and --help. Exit codes: 0 ok, 100 usage,\n"
               "101 no such task, 111 system failure (see docs/cli.md).\n");
}

/* `taskfs --state-dir DIR VERB ...` is accepted too: the option is moved
 * behind the verb, where every verb parses it. */
static int hoist_state_dir(int *argc, char ***argv) {
  char **av = *argv;
  if (*argc < 2)
    return 0;
  const char *dir = NULL;
  int skip = 0;
  if (!strcmp(av[1], "--state-dir") && *argc >= 3) {
    dir = av[2];
    skip = 2;
  } else if (!strncmp(av[1], "--state-dir=", 12)) {
    dir = av[1] + 12;
    skip = 1;
  }
  if (!dir)
    return 0;
  if (*argc - skip < 2) {
    fprintf(stderr, "taskfs: --state-dir needs a verb after it; run 'taskfs --help'\n");
    return -1;
  }
  static char *out[4096];
  int n = 0;
  if (*argc + 2 > (int)(sizeof out / sizeof out[0]))
    return -1;
  out[n++] = av[0];
  out[n++] = av[1 + skip];
  out[n++] = "--state-dir";
  out[n++] = (char *)dir;
  for (int i = 2 + skip; i < *argc; i++)
    out[n++] = av[i];
  out[n] = NULL;
  *argc = n;
  *argv = out;
  return 0;
}

int main(int argc, char **argv) {
  if (hoist_state_dir(&argc, &argv) < 0)
    return CLI_EXIT_USAGE;
  if (argc < 2) {
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("taskfs %s\n", TASKFS_VERSION);
    return CLI_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (!strcmp(argv[1], verbs[i].name))
      return verbs[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "taskfs: unknown verb '%s'; run 'taskfs --help' for the list\n", argv[1]);
  return CLI_EXIT_USAGE;
}
