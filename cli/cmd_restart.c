/* taskfs restart ID: a new task with the ended task's command, working
 * directory, queue, stdin, restart policy and key (the key then names the
 * new task), started as `taskfs run` starts one (tfs_task_start). The
 * record keeps environment names, never values: each name is given the
 * value it has here, and the verb says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "taskfs/supervise.h"

static const char usage_text[] =
    "usage: taskfs restart [--state-dir DIR] ID|KEY...\n"
    "\n"
    "Runs an ended task again as a new task: the same command, working directory,\n"
    "queue, stdin, restart policy and key (which then names the new task). Prints\n"
    "the new id. Environment values are never stored, only names: each name the\n"
    "task had gets the value it has in this shell (one that is not set here is\n"
    "left out, and said so). A task that has not ended is refused. Several tasks\n"
    "are run again in turn, each new id on a line.\n"
    "\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 started, 100 usage (also: the task has not ended), 101 no such task,\n"
    "  111 system failure, 127 the command could not start; with several tasks the\n"
    "  highest.\n";

/* NAME=VALUE from this environment for each name of rec; says which were
 * taken and which are missing. */
static char **env_from_here(const tfs_record_t *rec, char ***names) {
  char **env = calloc((size_t)rec->env_count + 1, sizeof *env);
  *names = calloc((size_t)rec->env_count + 1, sizeof **names);
  char taken[1024] = "", missing[1024] = "";
  size_t n = 0;
  if (!env || !*names)
    return env;
  for (int i = 0; i < rec->env_count; i++) {
    const char *v = getenv(rec->env_names[i]);
    char *list = v ? taken : missing;
    size_t l = strlen(list);
    snprintf(list + l, sizeof taken - l, "%s%s", l ? ", " : "", rec->env_names[i]);
    if (v && asprintf(&env[n], "%s=%s", rec->env_names[i], v) >= 0)
      (*names)[n++] = strdup(rec->env_names[i]);
  }
  if (rec->env_count)
    cli_error("restart", "note: environment values are not stored, only names; %s%s%s%s%s%s",
              taken[0] ? "taken from this shell: " : "", taken, taken[0] && missing[0] ? "; " : "",
              missing[0] ? "not set here, so not carried: " : "", missing,
              missing[0] ? " (set them in this shell, as in NAME=value taskfs restart ID, to "
                           "carry them)"
                         : "");
  return env;
}

/* The spec of the new task, from the old record. */
static void spec_of(const tfs_record_t *rec, char **names, tfs_task_spec_t *spec) {
  *spec = (tfs_task_spec_t){
      .argv = rec->argv,
      .cwd = rec->cwd,
      .key = rec->key[0] ? rec->key : NULL,
      .env_names = names,
      .restart = rec->restart,
      .min_uptime_ms = rec->min_uptime_ms,
      .max_restarts = rec->max_restarts,
      .grace_ms = rec->grace_ms,
      .important_k = rec->important.k,
      .rerun = 1,
      .queue = rec->queue,
      .with_stdin = rec->with_stdin,
  };
}

static int restart_task(tfs_store_t *store, const char *id) {
  tfs_record_t rec;
  char **names = NULL;
  int err = tfs_task_load(store, id, &rec), code = CLI_EXIT_OK;
  if (err) {
    cli_error("restart", "cannot read task %s: %s", id, tfs_strerror(err));
    tfs_record_free(&rec);
    return cli_exit_for(err);
  }
  if (!tfs_state_terminal(rec.state)) {
    cli_error("restart",
              "task %s is %s, not ended; 'taskfs cancel %s' stops it, then restart runs it "
              "again",
              id, tfs_state_name(rec.state), id);
    tfs_record_free(&rec);
    return CLI_EXIT_USAGE;
  }
  char **env = env_from_here(&rec, &names);
  tfs_task_spec_t spec;
  spec_of(&rec, names, &spec);
  tfs_launch_opts_t lo = {.env = env, .wait_ms = 30000, .no_exec = 1};
  tfs_start_t st;
  err = tfs_task_start(store, &spec, &lo, &st);
  if (st.id[0] && (!err || st.launch_err)) {
    printf("%s\n", st.id);
    fflush(stdout);
  }
  if (err || st.launch_err) {
    cli_error("restart", "cannot start task %s again: %s", id,
              tfs_strerror(err ? err : st.launch_err));
    code = cli_exit_for(err ? err : st.launch_err);
  } else if (st.existed) {
    cli_error("restart",
              "key '%s' names task %s now, which has not ended: not started again ('taskfs "
              "show %s' tells more)",
              rec.key, st.id, st.id);
    code = CLI_EXIT_USAGE;
  } else if (st.not_started) {
    cli_error("restart", "%s", st.rec.reason ? st.rec.reason : "the command could not start");
    code = tfs_record_skipped(&st.rec) ? CLI_EXIT_SKIPPED : CLI_EXIT_NOSTART;
  } else if (st.rec.state == TFS_QUEUED && st.rec.supervisor_pid > 0) {
    cli_say_queued("restart", store, &st.rec);
  }
  tfs_start_free(&st);
  tfs_strv_free(env);
  tfs_strv_free(names);
  tfs_record_free(&rec);
  return code;
}

int cmd_restart(int argc, char **argv) {
  cli_opts_t o = CLI_OPTS("restart", usage_text, "", NULL);
  cli_tasks_t t;
  int c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    ;
  if (c < 0)
    return o.code;
  /* A writer's store: the new tasks are made in it. */
  if ((code = cli_open_tasks(&o, argc, argv, optind, CLI_TASKS_MANY, &t)))
    return code;
  for (size_t i = 0; i < t.n; i++)
    code = cli_worst_code(code, restart_task(t.store, t.ids[i]));
  cli_tasks_free(&t);
  return code ? code : cli_flush_stdout("restart", CLI_EXIT_OK);
}
