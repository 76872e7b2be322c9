/* taskfs config set|get|unset|ls: the store's defaults (<state>/config),
 * the timeout and limits a task gets when its command gives none. The file
 * and its checks are core's (tfs_config_*); this verb only translates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"

static const char usage_text[] =
    "usage: taskfs config set KEY VALUE\n"
    "       taskfs config get KEY\n"
    "       taskfs config unset KEY\n"
    "       taskfs config ls\n"
    "\n"
    "The store's defaults: a task started without --timeout or a --limit of its own\n"
    "gets these (taskfs run and the MCP server alike), and its record says so\n"
    "(\"from\": \"config\"). Keys: timeout, limit.mem, limit.cpu, limit.nofile,\n"
    "limit.nproc, limit.fsize, limit.core, queue (the queue of a task started\n"
    "without --queue; queue.QUEUE.KEY: for the queues to come).\n"
    "Values as taskfs run takes them: timeout = 10m, limit.mem = 2G, limit.cpu = 1h,\n"
    "limit.nofile = 4096; none for no limit. The file is <state>/config, one\n"
    "'key = value' a line ('#' starts a comment), replaced atomically.\n"
    "\n"
    "  --state-dir DIR  use the store in DIR\n"
    "  -h, --help       show this help\n"
    "\n"
    "EXIT STATUS\n"
    "  0 ok, 1 (get) the key is not set, 100 usage (also an unknown key or a bad\n"
    "  value), 111 system failure (also a config file that does not read).\n";

/* A bad key or value (usage) or a store whose file does not read or
 * write (system): the words on stderr, the exit code back. */
static int failed(int usage, int err, const char *why) {
  cli_error("config", "%s", why[0] ? why : tfs_strerror(err));
  return usage ? CLI_EXIT_USAGE : CLI_EXIT_SYSTEM;
}

static int config_ls(tfs_store_t *store) {
  char **keys = NULL, **values = NULL, why[1024] = "";
  int err = store ? tfs_config_list(store, &keys, &values, why, sizeof why) : 0;
  if (err)
    return failed(0, err, why);
  for (size_t i = 0; keys && keys[i]; i++)
    printf("%s = %s\n", keys[i], values[i]);
  tfs_strv_free(keys);
  tfs_strv_free(values);
  return cli_flush_stdout("config", CLI_EXIT_OK);
}

static int config_get(tfs_store_t *store, const char *key) {
  char *value = NULL, why[1024] = "";
  int err = tfs_config_check(key, NULL, why, sizeof why);
  if (err)
    return failed(1, err, why);
  if (store && (err = tfs_config_get(store, key, &value, why, sizeof why)))
    return failed(0, err, why);
  if (!value)
    return 1;
  printf("%s\n", value);
  free(value);
  return cli_flush_stdout("config", CLI_EXIT_OK);
}

/* set (value) and unset (NULL). */
static int config_set(const cli_opts_t *o, const char *key, const char *value) {
  char why[1024] = "";
  tfs_store_t *store = NULL;
  /* Checked before the store is made, so a typo creates nothing. */
  int err = tfs_config_check(key, value, why, sizeof why);
  if (err)
    return failed(1, err, why);
  int code = cli_open_store(o, 1, &store);
  if (code)
    return code;
  err = tfs_config_set(store, key, value, why, sizeof why);
  tfs_store_close(store);
  return err ? failed(0, err, why) : CLI_EXIT_OK;
}

int cmd_config(int argc, char **argv) {
  cli_opts_t o = CLI_OPTS("config", usage_text, "", NULL);
  int c;
  while ((c = cli_getopt(&o, argc, argv)) > 0)
    ;
  if (c < 0)
    return o.code;
  const char *sub = optind < argc ? argv[optind] : NULL;
  int n = argc - optind - 1; /* operands after the subcommand */
  static const struct {
    const char *name;
    int operands;
  } subs[] = {{"set", 2}, {"get", 1}, {"unset", 1}, {"ls", 0}};
  size_t i = 0;
  for (; sub && i < sizeof subs / sizeof *subs; i++)
    if (!strcmp(sub, subs[i].name))
      break;
  if (!sub || i == sizeof subs / sizeof *subs)
    return cli_usage_error("config", "what should it do? set KEY VALUE, get KEY, unset KEY or ls");
  if (n != subs[i].operands)
    return cli_usage_error("config", "'config %s' takes %s", sub,
                           subs[i].operands == 2   ? "KEY VALUE"
                           : subs[i].operands == 1 ? "one KEY"
                                                   : "no arguments");
  char **args = argv + optind + 1;
  if (i == 0)
    return config_set(&o, args[0], args[1]);
  if (i == 2)
    return config_set(&o, args[0], NULL);
  tfs_store_t *store = NULL;
  int code = cli_open_store(&o, 0, &store);
  if (code)
    return code;
  code = i == 1 ? config_get(store, args[0]) : config_ls(store);
  if (store)
    tfs_store_close(store);
  return code;
}
