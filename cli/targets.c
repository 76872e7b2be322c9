/* The tasks a verb acts on, as tsp and pueue users expect: no id means the
 * newest task (said on stderr, so nobody acts on a task they did not
 * mean), several ids act on each in turn, and --all on every task that has
 * not ended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "taskfs/buf.h"

/* Appends id unless it is there already (the same task named twice, by
 * number and by key, is acted on once). */
static int add_id(cli_tasks_t *t, const char *id) {
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->ids[i], id))
      return 0;
  if (tfs_grow(&t->ids, &t->cap, t->n + 1, sizeof *t->ids, 8))
    return -1;
  snprintf(t->ids[t->n++], TFS_ID_MAX + 1, "%s", id);
  return 0;
}

static int take_newest(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  tfs_record_t *out = arg;
  snprintf(out->id, sizeof out->id, "%s", rec->id);
  out->number = rec->number;
  return 1;
}

static int take_all(const tfs_record_t *rec, const char *json, size_t len, void *arg) {
  return add_id(arg, rec->id) ? -1 : 0;
}

int cli_newest_task(const char *verb, tfs_store_t *store, const char *what,
                    char id_out[TFS_ID_MAX + 1]) {
  tfs_list_opts_t lo = {.limit = 1, .newest_first = 1};
  tfs_record_t rec = {.id = ""};
  int err = store ? tfs_task_list_opts(store, &lo, take_newest, &rec, NULL) : 0;
  if (err) {
    cli_error(verb, "cannot list the tasks of %s: %s", tfs_store_path(store), tfs_strerror(err));
    return cli_exit_for(err);
  }
  if (!rec.id[0]) {
    cli_error(verb, "there is no task yet; 'taskfs run -- CMD' starts one");
    return CLI_EXIT_NOTASK;
  }
  if (rec.number > 0)
    cli_error(verb, "note: %s the newest task: %lld (%s)", what, (long long)rec.number, rec.id);
  else
    cli_error(verb, "note: %s the newest task: %s", what, rec.id);
  snprintf(id_out, TFS_ID_MAX + 1, "%s", rec.id);
  return CLI_EXIT_OK;
}

/* No task given: the newest (the last made), with a note naming it. */
static int newest(const char *verb, cli_tasks_t *t) {
  char id[TFS_ID_MAX + 1];
  int code = cli_newest_task(verb, t->store, "no task given, so", id);
  if (!code && add_id(t, id))
    code = CLI_EXIT_SYSTEM;
  return code;
}

/* --all: every task that has not ended (queued, running, paused). */
static int all_live(const char *verb, cli_tasks_t *t) {
  tfs_list_opts_t lo = {.states = TFS_STATE_BIT(TFS_QUEUED) | TFS_STATE_BIT(TFS_RUNNING) |
                                  TFS_STATE_BIT(TFS_PAUSED)};
  int err = t->store ? tfs_task_list_opts(t->store, &lo, take_all, t, NULL) : 0;
  if (err) {
    cli_error(verb, "cannot list the tasks of %s: %s", tfs_store_path(t->store), tfs_strerror(err));
    return cli_exit_for(err);
  }
  return CLI_EXIT_OK;
}

int cli_open_tasks(const cli_opts_t *o, int argc, char **argv, int first, int flags,
                   cli_tasks_t *t) {
  const char *verb = o->verb;
  char id[TFS_ID_MAX + 1], q[96];
  int code;
  memset(t, 0, sizeof *t);
  if ((flags & CLI_TASKS_ALL) && first < argc)
    return cli_usage_error(verb, "--all and task ids exclude each other; unexpected '%s'",
                           cli_quote(argv[first], q, sizeof q));
  if (first >= argc && !(flags & (CLI_TASKS_NEWEST | CLI_TASKS_ALL)))
    return cli_usage_error(verb, "which task? give an ID or KEY ('taskfs ls' lists them)");
  if (argc - first > 1 && !(flags & CLI_TASKS_MANY))
    return cli_usage_error(verb, "one task at a time; unexpected '%s'",
                           cli_quote(argv[first + 1], q, sizeof q));
  if ((code = cli_open_store(o, 0, &t->store)))
    return code;
  if (flags & CLI_TASKS_ALL)
    code = all_live(verb, t);
  else if (first >= argc)
    code = newest(verb, t);
  for (int i = first; i < argc && !code; i++)
    if (!(code = cli_resolve_task(verb, t->store, argv[i], id)) && add_id(t, id))
      code = CLI_EXIT_SYSTEM;
  if (code)
    cli_tasks_free(t);
  return code;
}

int cli_open_task_or_newest(const cli_opts_t *o, int argc, char **argv, int first,
                            tfs_store_t **store, char id_out[TFS_ID_MAX + 1]) {
  cli_tasks_t t;
  *store = NULL;
  int code = cli_open_tasks(o, argc, argv, first, CLI_TASKS_NEWEST, &t);
  if (code)
    return code;
  snprintf(id_out, TFS_ID_MAX + 1, "%s", t.ids[0]);
  *store = t.store;
  t.store = NULL;
  cli_tasks_free(&t);
  return CLI_EXIT_OK;
}

void cli_tasks_free(cli_tasks_t *t) {
  if (t->store)
    tfs_store_close(t->store);
  free(t->ids);
  memset(t, 0, sizeof *t);
}

int cli_worst_code(int a, int b) {
  return a > b ? a : b;
}

int cli_confirm(const char *verb, const char *question, int yes) {
  char line[16];
  if (yes)
    return 1;
  if (!isatty(STDIN_FILENO)) {
    cli_usage_error(verb, "%s: stdin is not a terminal to ask; add -y (--yes) to go ahead",
                    question);
    return -1;
  }
  fprintf(stderr, "%s [y/N] ", question);
  fflush(stderr);
  if (!fgets(line, sizeof line, stdin))
    return 0;
  return line[0] == 'y' || line[0] == 'Y';
}

int cli_say_runs_on(const char *verb, tfs_store_t *store, const char *id) {
  char name[32];
  tfs_record_t rec;
  int said = 0;
  if (tfs_task_load(store, id, &rec) == 0 && !tfs_state_terminal(rec.state)) {
    said = 1;
    if (rec.number > 0)
      snprintf(name, sizeof name, "%lld", (long long)rec.number);
    else
      snprintf(name, sizeof name, "%s", id);
    cli_error(verb,
              "interrupted: only the waiting stopped; task %s (%s) is %s and runs on. 'taskfs "
              "cancel %s' stops it, 'taskfs wait %s' waits again",
              name, id, tfs_state_name(rec.state), name, name);
  }
  tfs_record_free(&rec);
  return said;
}
