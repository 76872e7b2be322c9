/* taskfs: the command line. Each verb lives in cli/cmd_<verb>.c; this file
 * only dispatches. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"

#define TASKFS_VERSION TFS_VERSION

/* Adding a verb: a line here, a section in man/taskfs.1; the completions
 * learn it from `taskfs __complete` (cli/cmd_complete.c). */
typedef cli_verb_t verb_t;

static const verb_t verbs[] = {
    {"run", cmd_run, "start a task under its own supervisor"},
    {"ls", cmd_ls, "list tasks"},
    {"show", cmd_show, "print a task's record as JSON"},
    {"logs", cmd_logs, "print (or follow) a task's transcript"},
    {"cancel", cmd_cancel, "request a stop of a running task"},
    {"wait", cmd_wait, "wait for a task to end; exit with its exit code"},
    {"prune", cmd_prune, "delete old finished tasks"},
    {"rm", cmd_rm, "delete tasks that have ended"},
    {"restart", cmd_restart, "run an ended task again as a new task"},
    {"queue", cmd_queue, "queues: parallel limits, pause, list"},
    {"pause", cmd_pause, "stop a running task's tree (SIGSTOP) until resume"},
    {"resume", cmd_resume, "continue a paused task"},
    {"signal", cmd_signal, "send a signal to a task's process tree"},
    {"send", cmd_send, "write to the stdin of a task run with --stdin"},
    {"path", cmd_path, "print the resolved state directory"},
    {"config", cmd_config, "the store's default timeout and limits"},
    {"mount", cmd_mount, "mount the store as a FUSE filesystem"},
    {"umount", cmd_umount, "unmount a taskfs mount"},
    {"mcp", cmd_mcp, "serve the store to an MCP host over stdio"},
    {"serve", cmd_serve, "serve the store over HTTP (MCP at /mcp), with a token"},
    {"supervise", cmd_supervise, NULL},
};

static void usage(FILE *out) {
  fprintf(out, "usage: taskfs VERB [OPTIONS] [ARGS]\n"
               "       taskfs --help | -h | help [VERB]\n"
               "       taskfs --version | -V | version\n\n"
               "Durable tasks: every task lives in a store on disk, readable and stoppable\n"
               "from any process.\n\nverbs:\n");
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (verbs[i].summary)
      fprintf(out, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
  fprintf(out,
          "\nEvery verb takes --help; all but umount take --state-dir DIR. 'taskfs VERB\n"
          "--help' (or 'taskfs help VERB') describes a verb.\n\n"
          "EXIT STATUS\n"
          "  0 ok, 100 usage, 101 no such task, 111 system failure, 124 a --timeout ran\n"
          "  out; verbs that wait for a task exit with its code (see 'taskfs wait --help').\n");
}

/* The edit distance of a and b (insertions, deletions, substitutions and
 * swaps of neighbours), for "did you mean"; names are short. */
static size_t distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), d[18][18];
  if (la > 16 || lb > 16)
    return 99;
  for (size_t i = 0; i <= la; i++)
    for (size_t j = 0; j <= lb; j++) {
      if (!i || !j) {
        d[i][j] = i + j;
        continue;
      }
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best)
        best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

/* An unknown verb: names the closest listed verb when it is one or two
 * edits away (one for short names, so that 'x' suggests nothing). */
static int unknown_verb(const char *name) {
  const char *best = NULL;
  size_t best_d = 3;
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
    size_t d = distance(name, verbs[i].name);
    if (verbs[i].summary && d < best_d && d <= (strlen(verbs[i].name) > 3 ? 2u : 1u)) {
      best = verbs[i].name;
      best_d = d;
    }
  }
  char q[96];
  if (best)
    fprintf(stderr, "taskfs: unknown verb '%s'; did you mean '%s'? ('taskfs --help' lists them)\n",
            cli_quote(name, q, sizeof q), best);
  else
    fprintf(stderr, "taskfs: unknown verb '%s'; run 'taskfs --help' for the list\n",
            cli_quote(name, q, sizeof q));
  return CLI_EXIT_USAGE;
}

int main(int argc, char **argv) {
  if (cli_hoist_state_dir(&argc, &argv))
    return CLI_EXIT_USAGE;
  if (argc < 2) {
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  /* `taskfs help VERB` is `taskfs VERB --help`. */
  if (!strcmp(argv[1], "help") && argc > 2) {
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
      if (verbs[i].summary && !strcmp(argv[2], verbs[i].name)) {
        char *args[] = {argv[2], "--help", NULL};
        return verbs[i].fn(2, args);
      }
    return unknown_verb(argv[2]);
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
    printf("taskfs %s\n", TASKFS_VERSION);
    return CLI_EXIT_OK;
  }
  if (!strcmp(argv[1], "__complete"))
    return cli_complete(argc - 1, argv + 1, verbs, sizeof verbs / sizeof verbs[0]);
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (!strcmp(argv[1], verbs[i].name))
      return verbs[i].fn(argc - 1, argv + 1);
  return unknown_verb(argv[1]);
}
