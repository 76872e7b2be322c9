/* Environment variables: what a name is, how overrides are laid over an
 * environment, and how a switch is read. Every face that takes
 * `--env NAME=VALUE` (the CLI, the MCP server) checks names here, and the
 * supervisor builds the worker's environment here, so a name accepted by
 * one is accepted by all.
 */
#include "core/internal.h"
#include "taskfs/text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int name_start(char c) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}

/* Length of the shell name at the start of s (0 if there is none). */
static size_t name_prefix(const char *s) {
  size_t i = 0;
  if (!s || !name_start(s[0]))
    return 0;
  while (name_char(s[i]))
    i++;
  return i;
}

size_t tfs_env_name_len(const char *s) {
  size_t n = name_prefix(s);
  return n && s[n] == '=' ? n : 0;
}

int tfs_env_name_valid(const char *name) {
  size_t n = name_prefix(name);
  return n && !name[n];
}

/* 1 if a later override than over[j] sets the same name. */
static int overridden_later(char *const *over, size_t j, size_t nover) {
  size_t l = tfs_env_name_len(over[j]);
  for (size_t k = j + 1; k < nover; k++)
    if (!strncmp(over[k], over[j], l + 1))
      return 1;
  return 0;
}

/* 1 if one of the overrides sets the name of the "NAME=VALUE" entry. */
static int replaced(const char *entry, char *const *over, size_t nover) {
  for (size_t j = 0; j < nover; j++)
    if (!strncmp(entry, over[j], tfs_env_name_len(over[j]) + 1))
      return 1;
  return 0;
}

int tfs_env_merge(char *const *base, char *const *over, char ***out) {
  size_t n = 0, nover = 0, m = 0;
  while (base && base[n])
    n++;
  for (; over && over[nover]; nover++)
    if (!tfs_env_name_len(over[nover]))
      return -EINVAL;
  char **env = calloc(n + nover + 1, sizeof *env);
  if (!env)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (!replaced(base[i], over, nover))
      env[m++] = base[i];
  for (size_t j = 0; j < nover; j++)
    if (!overridden_later(over, j, nover))
      env[m++] = over[j];
  env[m] = NULL;
  *out = env;
  return 0;
}

int tfs_env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}
