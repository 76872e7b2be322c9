/* taskfs run's options for where and when a task starts: its queue, the
 * tasks it starts after, its earliest start, and a stdin. The mechanisms
 * are core's (include/taskfs/queue.h) and the supervisor's; this file only
 * reads the command line and says what is wrong with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/sched.h"
#include "taskfs/buf.h"

int cli_sched_option(cli_sched_t *sc, int c, const char *arg) {
  char q[96];
  int64_t ms;
  int code;
  if (c == CLI_OPT_DELAY || c == CLI_OPT_AT) {
    /* One start time: the second option would silently replace the first. */
    const char *opt = c == CLI_OPT_AT ? "--at" : "--delay";
    if (sc->when && strcmp(sc->when, opt))
      return cli_usage_error("run", "--delay and --at exclude each other: give one start time");
    sc->when = opt;
  }
  switch (c) {
  case CLI_OPT_QUEUE:
    if (!tfs_queue_name_valid(arg))
      return cli_usage_error("run",
                             "'%s' is not a queue name: use 1 to %d of A-Z a-z 0-9 . _ : - "
                             "(not starting with '.'; no '/')",
                             cli_quote(arg, q, sizeof q), TFS_QUEUE_NAME_MAX);
    sc->queue = arg;
    return CLI_EXIT_OK;
  case CLI_OPT_NO_QUEUE:
    sc->queue = ""; /* none, not the store's default */
    return CLI_EXIT_OK;
  case CLI_OPT_AFTER:
    if (tfs_grow(&sc->after, &sc->cap, sc->nafter + 2, sizeof *sc->after, 8)) {
      cli_error("run", "out of memory");
      return CLI_EXIT_SYSTEM;
    }
    sc->after[sc->nafter++] = arg;
    return CLI_EXIT_OK;
  case CLI_OPT_DELAY:
    if ((code = cli_duration_opt("run", "--delay", arg, &ms)))
      return code;
    sc->not_before_ms = tfs_now_ms() + ms;
    return CLI_EXIT_OK;
  case CLI_OPT_AT:
    if (tfs_at_parse(arg, tfs_now_ms(), &sc->not_before_ms))
      return cli_usage_error("run",
                             "--at wants HH:MM (local time, the next one) or an RFC 3339 time "
                             "like 2026-12-01T18:00:00Z, not '%s'",
                             cli_quote(arg, q, sizeof q));
    return CLI_EXIT_OK;
  case CLI_OPT_STDIN:
    sc->with_stdin = 1;
    return CLI_EXIT_OK;
  }
  return CLI_EXIT_OK;
}

/* One --after argument to an id, with run's words for what is wrong. */
static int resolve_after(tfs_store_t *store, const char *arg, const char *key,
                         char id[TFS_ID_MAX + 1]) {
  char q[96];
  if (key && !strcmp(arg, key))
    return cli_usage_error("run",
                           "--after %s names the task being started (its own key); a "
                           "task cannot wait for itself",
                           cli_quote(arg, q, sizeof q));
  /* "-" and "last": the newest task, as tsp -d waits for the last job. */
  if (!strcmp(arg, "-") || !strcmp(arg, "last"))
    return cli_newest_task("run", store, "--after", id);
  return cli_resolve_task("run", store, arg, id);
}

int cli_sched_apply(cli_sched_t *sc, tfs_store_t *store, tfs_task_spec_t *spec) {
  char bad[600];
  spec->queue = sc->queue;
  spec->not_before_ms = sc->not_before_ms;
  spec->with_stdin = sc->with_stdin;
  if (!sc->nafter)
    return CLI_EXIT_OK;
  if (!(sc->ids = calloc(sc->nafter + 1, sizeof *sc->ids))) {
    cli_error("run", "out of memory");
    return CLI_EXIT_SYSTEM;
  }
  for (size_t i = 0; i < sc->nafter; i++) {
    char id[TFS_ID_MAX + 1];
    int code = resolve_after(store, sc->after[i], spec->key, id);
    if (code)
      return code;
    if (!(sc->ids[i] = strdup(id))) {
      cli_error("run", "out of memory");
      return CLI_EXIT_SYSTEM;
    }
  }
  int err = tfs_after_check(store, sc->ids, bad, sizeof bad);
  if (err == TFS_ECYCLE)
    return cli_usage_error("run",
                           "the tasks named by --after wait for each other (%s), so none "
                           "of them could ever start; nothing was started",
                           bad);
  if (err) {
    cli_error("run", "cannot check the tasks named by --after: %s", tfs_strerror(err));
    return cli_exit_for(err);
  }
  spec->after = sc->ids;
  return CLI_EXIT_OK;
}

void cli_sched_free(cli_sched_t *sc) {
  free(sc->after);
  tfs_strv_free(sc->ids);
}
