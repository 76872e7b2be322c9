/* One function per verb, each in cli/cmd_<verb>.c. */
#ifndef TASKFS_CLI_VERBS_H
#define TASKFS_CLI_VERBS_H

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
int cmd_config(int argc, char **argv);
int cmd_supervise(int argc, char **argv);

#endif
