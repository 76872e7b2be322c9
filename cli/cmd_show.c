/* taskfs show ID|KEY: prints one task's record as indented JSON, with the
 * lost state computed (a record that says running while nobody holds the
 * task lock reads lost). A corrupt record is reported with what is wrong
 * and what to do about it. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs show [--state-dir DIR] ID|KEY\n"
    "\n"
    "Prints the task's record (record.json) as indented JSON. A task whose\n"
    "supervisor died without recording an end reads \"state\": \"lost\".\n"
    "\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "Exit codes: 0 ok, 100 usage, 101 no such task, 111 unreadable record or\n"
    "system failure.\n";

/* Says precisely why record.json of id does not load: reads it again and
 * runs the parser with an error buffer. */
static void describe_corrupt(tfs_store_t *store, const char *id, char *msg, size_t len) {
  char *buf = NULL;
  size_t cap = 0, n = 0;
  ssize_t r;
  int fd = tfs_task_openat(store, id, "record.json", O_RDONLY, 0);
  if (fd < 0) {
    snprintf(msg, len, "%s",
             fd == -ELOOP || fd == TFS_ESYMLINK ? "it is a symlink" : tfs_strerror(fd));
    return;
  }
  for (;;) {
    if (cap - n < 4096) {
      if (cap >= TFS_RECORD_MAX + 8192) {
        snprintf(msg, len, "it is larger than %d bytes", TFS_RECORD_MAX);
        goto done;
      }
      char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);
      if (!nb) {
        snprintf(msg, len, "out of memory");
        goto done;
      }
      buf = nb;
    }
    r = read(fd, buf + n, cap - n - 1);
    if (r < 0) {
      snprintf(msg, len, "%s", errno == EISDIR ? "it is a directory" : strerror(errno));
      goto done;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  if (n == 0) {
    snprintf(msg, len, "it is empty");
    goto done;
  }
  {
    tfs_record_t rec;
    char err[256] = "";
    memset(&rec, 0, sizeof rec); /* the loader initializes it */
    int rc = tfs_record_parse(buf, n, &rec, err, sizeof err);
    tfs_record_free(&rec);
    if (rc < 0)
      snprintf(msg, len, "%s", err[0] ? err : tfs_strerror(rc));
    else
      snprintf(msg, len, "it could not be loaded");
  }
done:
  free(buf);
  close(fd);
}

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
  cli_opts_t o = CLI_OPTS("show", usage_text, "", NULL);
  char id[TFS_ID_MAX + 1];
  tfs_store_t *store;
  tfs_record_t rec;
  int c, rc, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
  }
  if (c < 0)
    return o.code;
  code = cli_open_one_task("show", o.state_dir, argc, argv, optind, &store, id);
  if (code)
    return code;
  memset(&rec, 0, sizeof rec); /* the loader initializes it */
  rc = tfs_task_load(store, id, &rec);
  if (rc == TFS_ECORRUPT) {
    char why[320];
    describe_corrupt(store, id, why, sizeof why);
    cli_error("show",
              "record.json of %s is corrupt: %s; 'taskfs prune' or deleting %s/tasks/%s "
              "removes it",
              id, why, tfs_store_path(store), id);
    tfs_store_close(store);
    return CLI_EXIT_SYSTEM;
  }
  if (rc < 0) {
    code = cli_exit_for(rc);
    if (rc == TFS_ENOTASK)
      cli_error("show", "no task %s (it was just deleted?); 'taskfs ls' lists tasks", id);
    else
      cli_error("show", "cannot read %s/tasks/%s/record.json: %s", tfs_store_path(store), id,
                tfs_strerror(rc));
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
