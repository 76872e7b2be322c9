/* taskfs queue set|pause|resume|rm|ls: a queue's parallel limit and pause,
 * and every queue as it is now. The queues themselves are core's
 * (include/taskfs/queue.h): no daemon holds them, each task's supervisor
 * takes its slot through the store, so this verb only writes settings
 * (tfs_queue_set, which wakes the waiters that may start) and reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs queue set NAME --parallel N|none [--state-dir DIR]\n"
    "       taskfs queue pause NAME [--state-dir DIR]\n"
    "       taskfs queue resume NAME [--state-dir DIR]\n"
    "       taskfs queue rm NAME [--state-dir DIR]\n"
    "       taskfs queue ls [--json] [--state-dir DIR]\n"
    "\n"
    "Tasks started with 'taskfs run --queue NAME' run at most N at a time, in the\n"
    "order they were started; the others wait (state queued, with their place).\n"
    "A queue is made by its first task or setting; one without a limit runs\n"
    "everything at once, as tasks without --queue do.\n"
    "\n"
    "  set NAME --parallel N   at most N tasks of NAME run at once (1 to 1000);\n"
    "                          'none' removes the limit. Lowering it stops nothing:\n"
    "                          running tasks finish, new ones wait\n"
    "  pause NAME              no task of NAME starts until it is resumed (running\n"
    "                          ones go on; 'taskfs pause ID' stops one)\n"
    "  resume NAME             tasks of NAME start again\n"
    "  rm NAME                 forget the queue and its settings (refused while a\n"
    "                          task of it runs or waits)\n"
    "  ls [--json]             every queue: its limit, whether it is paused, how\n"
    "                          many of its tasks run and how many wait\n"
    "  --state-dir DIR         use the store in DIR\n"
    "  -h, --help              show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 ok, 100 usage (a bad name or limit; rm of a queue in use), 101 no such\n"
    "  queue (pause, resume, rm; ls of a store without queues is empty), 111 system\n"
    "  failure.\n";

void cli_say_queued(const char *verb, tfs_store_t *store, const tfs_record_t *rec) {
  char words[600];
  tfs_queue_positions_t *p = NULL;
  tfs_queue_positions_open(store, &p);
  tfs_queue_describe(p, rec, words, sizeof words);
  tfs_queue_positions_close(p);
  cli_error(verb, "task %s is queued%s%s", rec->id, words[0] ? ": " : "", words);
}

/* NAME as a queue name, or a usage error. */
static int queue_name(const char *verb, const char *name) {
  char q[96];
  if (tfs_queue_name_valid(name))
    return CLI_EXIT_OK;
  return cli_usage_error(verb,
                         "'%s' is not a queue name: use 1 to %d of A-Z a-z 0-9 . _ : - (not "
                         "starting with '.'; no '/')",
                         cli_quote(name, q, sizeof q), TFS_QUEUE_NAME_MAX);
}

/* --parallel N|none; 0 is no limit (tfs_queue_set). */
static int parse_parallel(const char *arg, int *out) {
  char q[96];
  if (tfs_queue_parallel_parse(arg, out))
    return cli_usage_error("queue set",
                           "--parallel wants a number of tasks from 1 to %d, or 'none' for no "
                           "limit, not '%s'",
                           TFS_QUEUE_PARALLEL_MAX, cli_quote(arg, q, sizeof q));
  return CLI_EXIT_OK;
}

/* A queue that does not exist: 101. */
static int no_queue(const char *verb, const char *name, tfs_store_t *store) {
  cli_error(verb,
            "no queue %s%s%s; 'taskfs queue ls' lists them, and 'taskfs queue set %s --parallel "
            "N' or a task started with --queue %s makes it",
            name, store ? " in " : "", store ? tfs_store_path(store) : "", name, name);
  return CLI_EXIT_NOTASK;
}

/* set, pause, resume, rm: one queue. */
static int queue_change(const char *sub, int argc, char **argv) {
  static const struct option opts[] = {{"parallel", required_argument, NULL, 'p'},
                                       {NULL, 0, NULL, 0}};
  char verb[32];
  snprintf(verb, sizeof verb, "queue %s", sub);
  cli_opts_t o = CLI_OPTS(verb, usage_text, "", !strcmp(sub, "set") ? opts : NULL);
  const char *parallel_arg = NULL;
  int c, code, parallel = TFS_QUEUE_KEEP;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    parallel_arg = optarg;
  if (c < 0)
    return o.code;
  if (optind >= argc)
    return cli_usage_error(verb, "which queue? give its NAME ('taskfs queue ls' lists them)");
  if (argc - optind > 1)
    return cli_usage_error(verb, "one queue at a time");
  const char *name = argv[optind];
  if ((code = queue_name(verb, name)))
    return code;
  if (!strcmp(sub, "set") && !parallel_arg)
    return cli_usage_error(verb, "what to set? give --parallel N (or --parallel none)");
  if (parallel_arg && (code = parse_parallel(parallel_arg, &parallel)))
    return code;
  tfs_store_t *store;
  int set = !strcmp(sub, "set"), rm = !strcmp(sub, "rm");
  /* Only set makes a queue (and the store): pause, resume and rm of a
   * queue that does not exist change nothing. */
  if ((code = cli_open_store(&o, set, &store)))
    return code;
  if (!store)
    return no_queue(verb, name, NULL);
  int paused = !strcmp(sub, "pause") ? 1 : !strcmp(sub, "resume") ? 0 : TFS_QUEUE_KEEP;
  int err = rm ? tfs_queue_remove(store, name) : tfs_queue_change(store, name, parallel, paused, set);
  if (err == -ENOENT) {
    code = no_queue(verb, name, store);
    tfs_store_close(store);
    return code;
  }
  if (err == -EBUSY)
    cli_error(verb,
              "queue %s has tasks that run or wait ('taskfs queue ls' counts them); cancel "
              "them or let them end, then remove it",
              name);
  else if (rm && !err)
    printf("queue %s removed\n", name);
  else if (err)
    cli_error(verb, "cannot change queue %s in %s: %s", name, tfs_store_path(store),
              tfs_strerror(err));
  else if (paused == 1)
    printf("queue %s paused: none of its tasks starts until 'taskfs queue resume %s'\n", name,
           name);
  else if (paused == 0)
    printf("queue %s resumed\n", name);
  else if (parallel > 0)
    printf("queue %s runs at most %d task%s at once\n", name, parallel, parallel == 1 ? "" : "s");
  else
    printf("queue %s has no limit\n", name);
  tfs_store_close(store);
  if (err == -EBUSY)
    return CLI_EXIT_USAGE;
  return err ? cli_exit_for(err) : cli_flush_stdout(verb, CLI_EXIT_OK);
}

static void print_queues(const tfs_queue_info_t *q, size_t n, int json) {
  if (json) {
    fputs("[", stdout);
    for (size_t i = 0; i < n; i++) {
      printf("%s\n  {\"name\": \"%s\", \"parallel\": ", i ? "," : "", q[i].name);
      if (q[i].parallel)
        printf("%d", q[i].parallel);
      else
        fputs("null", stdout);
      printf(", \"paused\": %s, \"running\": %d, \"waiting\": %d}", q[i].paused ? "true" : "false",
             q[i].running, q[i].waiting);
    }
    fputs(n ? "\n]\n" : "]\n", stdout);
    return;
  }
  int w = 5;
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(q[i].name) > w)
      w = (int)strlen(q[i].name);
  printf("%-*s %8s %6s %7s %7s\n", w, "QUEUE", "PARALLEL", "PAUSED", "RUNNING", "WAITING");
  for (size_t i = 0; i < n; i++) {
    char par[16];
    if (q[i].parallel)
      snprintf(par, sizeof par, "%d", q[i].parallel);
    else
      snprintf(par, sizeof par, "none");
    printf("%-*s %8s %6s %7d %7d\n", w, q[i].name, par, q[i].paused ? "yes" : "no", q[i].running,
           q[i].waiting);
  }
}

static int queue_ls(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
  cli_opts_t o = CLI_OPTS_READ("queue ls", usage_text, "", opts);
  int c, code, json = 0;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    json = 1;
  if (c < 0)
    return o.code;
  if ((code = cli_no_operands("queue ls", argc, argv, NULL)))
    return code;
  tfs_store_t *store;
  if ((code = cli_open_store(&o, 0, &store)))
    return code;
  tfs_queue_info_t *q = NULL;
  size_t n = 0;
  int err = store ? tfs_queue_list(store, &q, &n) : 0;
  if (err) {
    cli_error("queue ls", "cannot list the queues of %s: %s", tfs_store_path(store),
              tfs_strerror(err));
    code = cli_exit_for(err);
  } else {
    print_queues(q, n, json);
    code = cli_flush_stdout("queue ls", CLI_EXIT_OK);
  }
  free(q);
  if (store)
    tfs_store_close(store);
  return code;
}

int cmd_queue(int argc, char **argv) {
  char q[96];
  if (cli_describe) { /* the completer asks what queue takes (cmd_complete.c) */
    cli_opts_t o = CLI_OPTS("queue", usage_text, "", NULL);
    cli_getopt(&o, argc, argv);
    return o.code;
  }
  /* `queue --state-dir DIR ls`, as `taskfs --state-dir DIR queue ls`
   * arrives here: the option goes behind the queue verb. */
  if (cli_hoist_state_dir(&argc, &argv))
    return CLI_EXIT_USAGE;
  if (argc < 2)
    return cli_usage_error("queue", "what about queues? set, pause, resume, rm or ls");
  const char *sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
    fputs(usage_text, stdout);
    return CLI_EXIT_OK;
  }
  if (!strcmp(sub, "ls"))
    return queue_ls(argc - 1, argv + 1);
  if (!strcmp(sub, "set") || !strcmp(sub, "pause") || !strcmp(sub, "resume") ||
      !strcmp(sub, "rm"))
    return queue_change(sub, argc - 1, argv + 1);
  return cli_usage_error("queue",
                         "unknown 'queue %s'; the queue verbs are set, pause, resume, rm, ls",
                         cli_quote(sub, q, sizeof q));
}
