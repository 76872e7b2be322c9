/* What every face checks of a command and its directory before a task is
 * made of them, in the same words: MCP's start tool and A2A's SendMessage
 * refuse the same input with the same reason. */
#include "core/internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int tfs_command_check(char *const *argv, char *why, size_t whylen) {
  if (!argv || !argv[0]) {
    snprintf(why, whylen, "command must name a program (it is empty)");
    return -EINVAL;
  }
  if (!argv[0][0]) {
    snprintf(why, whylen, "command[0] must name a program (it is empty)");
    return -EINVAL;
  }
  size_t total = 0, n = 0;
  for (; argv[n]; n++) {
    size_t len = strlen(argv[n]);
    /* The kernel refuses one argument past MAX_ARG_STRLEN (execve's
     * E2BIG): say so now rather than record a task that cannot start. */
    if (len > TFS_ARG_BYTES_MAX) {
      snprintf(why, whylen,
               "command[%zu] is %zu bytes; one argument may hold at most %d bytes (pass a long "
               "text in a file, or on stdin)",
               n, len, TFS_ARG_BYTES_MAX);
      return -E2BIG;
    }
    total += len + 1;
  }
  if (n > TFS_ARGC_MAX || total > TFS_ARGV_BYTES_MAX) {
    snprintf(why, whylen,
             "command has %zu arguments of %zu bytes in all; at most %d arguments and %d bytes "
             "are taken (pass long input in a file, or on stdin)",
             n, total, TFS_ARGC_MAX, TFS_ARGV_BYTES_MAX);
    return -E2BIG;
  }
  return 0;
}

int tfs_cwd_check(const char *cwd, char *why, size_t whylen) {
  if (!cwd || cwd[0] != '/') {
    snprintf(why, whylen, "cwd must be an absolute path (got %.200s)", cwd ? cwd : "nothing");
    return -EINVAL;
  }
  struct stat st;
  if (strlen(cwd) >= PATH_MAX || stat(cwd, &st) || !S_ISDIR(st.st_mode)) {
    snprintf(why, whylen, "cwd %.200s is not an existing directory; create it or pass another",
             cwd);
    return -ENOENT;
  }
  return 0;
}
