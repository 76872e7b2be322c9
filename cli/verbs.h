/* One function per verb, each in cli/cmd_<verb>.c. */
#ifndef TASKFS_CLI_VERBS_H
#define TASKFS_CLI_VERBS_H

#include <stddef.h>

int cmd_run(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_path(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_supervise(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_signal(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_restart(int argc, char **argv);

/* A verb of main()'s table (cli/main.c); a NULL summary marks an internal
 * one, which --help and the completions leave out. */
typedef struct {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
} cli_verb_t;

/* `taskfs __complete WORD...` (cli/cmd_complete.c), for the shell
 * completions: what may come at the last WORD, from the verbs' own tables. */
int cli_complete(int argc, char **argv, const cli_verb_t *verbs, size_t n);

#endif
