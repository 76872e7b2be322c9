/* The options of `taskfs run` that say where and when a task starts
 * (cli/run_sched.c): --queue, --after, --delay, --at, --stdin. */
#ifndef TASKFS_CLI_SCHED_H
#define TASKFS_CLI_SCHED_H

#include <getopt.h>

#include "cli/cli.h"

enum {
  CLI_OPT_QUEUE = 0x2000,
  CLI_OPT_AFTER,
  CLI_OPT_DELAY,
  CLI_OPT_AT,
  CLI_OPT_STDIN,
  CLI_OPT_NO_QUEUE,
};

/* For run's option table. */
#define CLI_SCHED_OPTIONS                                                                          \
  {"queue", required_argument, NULL, CLI_OPT_QUEUE},                                               \
      {"after", required_argument, NULL, CLI_OPT_AFTER},                                           \
      {"delay", required_argument, NULL, CLI_OPT_DELAY},                                           \
      {"at", required_argument, NULL, CLI_OPT_AT}, {"stdin", no_argument, NULL, CLI_OPT_STDIN},   \
      {"no-queue", no_argument, NULL, CLI_OPT_NO_QUEUE}

#define CLI_SCHED_USAGE                                                                            \
  "  --queue NAME          run in queue NAME: it starts when the queue has a free\n"             \
  "                        slot ('taskfs queue set NAME --parallel N'), in order;\n"           \
  "                        without it, the store's default ('taskfs config set\n"             \
  "                        queue NAME'), if any\n"                                             \
  "  --no-queue            run at once, whatever the store's default queue\n"                  \
  "  --after ID|KEY        start once that task completed (repeatable; - or last:\n"          \
  "                        the newest task); if it failed, was cancelled or lost,\n"           \
  "                        this one never runs\n"                                              \
  "  --delay DURATION      start no sooner than DURATION from now (10s, 5m, 1h)\n"            \
  "  --at TIME             start no sooner than TIME: HH:MM (local, the next one)\n"            \
  "                        or RFC 3339 (2026-12-01T18:00:00Z)\n"                                   \
  "  --stdin               give CMD a stdin that 'taskfs send ID TEXT' writes to\n"

typedef struct {
  const char *queue;
  const char **after; /* as given */
  size_t nafter, cap;
  char **ids; /* resolved, NULL-terminated */
  int64_t not_before_ms;
  const char *when; /* "--delay" or "--at", whichever was given */
  int with_stdin;
} cli_sched_t;

/* Takes one of the options above; returns an exit code (0: go on). */
int cli_sched_option(cli_sched_t *sc, int c, const char *arg);
/* Once the store is open: resolves --after (ids, keys, prefixes; the key
 * being started is refused) and fills spec. Prints errors; an exit code. */
int cli_sched_apply(cli_sched_t *sc, tfs_store_t *store, tfs_task_spec_t *spec);
void cli_sched_free(cli_sched_t *sc);

#endif
