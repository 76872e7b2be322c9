/* taskfs show [ID|KEY] (the newest without one): prints one task's record as indented JSON, with the
 * lost state computed (a record that says running while nobody holds the
 * task lock reads lost). A corrupt record is reported with what is wrong
 * and what to do about it. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs show [--state-dir DIR] [--foreign-store] [ID|KEY]\n"
    "\n"
    "Prints the task's record (record.json) as indented JSON. A task whose\n"
    "supervisor died without recording an end reads \"state\": \"lost\".\n"
    "Without a task, the newest (a note on stderr names it).\n"
    "\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  --foreign-store  read another user's store (root), changing nothing in it\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 ok, 100 usage, 101 no such task, 111 unreadable record or system failure.\n";

/* Re-indents the dumped JSON so the output is stable whatever layout the
 * core's dumper picks. */
static char *pretty(const char *json) {
  json_error_t jerr;
  json_t *v = json_loads(json, JSON_ALLOW_NUL, &jerr);
  if (!v)
    return NULL;
  char *out = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(v);
  return out;
}

int cmd_show(int argc, char **argv) {
  cli_opts_t o = CLI_OPTS_READ("show", usage_text, "", NULL);
  char id[TFS_ID_MAX + 1];
  tfs_store_t *store;
  tfs_record_t rec;
  int c, rc, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
  }
  if (c < 0)
    return o.code;
  code = cli_open_task_or_newest(&o, argc, argv, optind, &store, id);
  if (code)
    return code;
  char why[320];
  rc = tfs_task_load_reason(store, id, &rec, why, sizeof why);
  if (rc == TFS_ECORRUPT) {
    char dir[PATH_MAX];
    if (tfs_task_path(store, id, dir, sizeof dir))
      snprintf(dir, sizeof dir, "its directory");
    cli_error("show",
              "the record of task %s is corrupt: %s; 'taskfs prune' or deleting %s removes it", id,
              why, dir);
    tfs_store_close(store);
    return CLI_EXIT_SYSTEM;
  }
  if (rc < 0) {
    code = cli_exit_for(rc);
    if (rc == TFS_ENOTASK)
      cli_error("show", "no task %s (it was just deleted?); 'taskfs ls' lists tasks", id);
    else
      cli_error("show", "cannot read the record of task %s: %s", id,
                why[0] ? why : tfs_strerror(rc));
    tfs_store_close(store);
    return code;
  }
  char *json = tfs_record_dump(&rec);
  char *text = json ? pretty(json) : NULL;
  tfs_record_free(&rec);
  tfs_store_close(store);
  if (!text) {
    free(json);
    cli_error("show", "cannot format the record of %s: out of memory", id);
    return CLI_EXIT_SYSTEM;
  }
  fputs(text, stdout);
  fputc('\n', stdout);
  free(json);
  free(text);
  return cli_flush_stdout("show", CLI_EXIT_OK);
}
