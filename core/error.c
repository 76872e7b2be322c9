/* Error codes to words. */
#include "core/internal.h"

#include <string.h>

const char *tfs_strerror(int err) {
  switch (err) {
  case 0:
    return "success";
  case TFS_ENOTASK:
    return "no such task";
  case TFS_EBADID:
    return "malformed task id or key (ids look like mi4x7k2p-3fz9qa; keys are 1-128 of "
           "[A-Za-z0-9._:-], not starting with '.')";
  case TFS_ECORRUPT:
    return "a file in the store does not parse (corrupt record)";
  case TFS_EKEYCONFLICT:
    return "the task key already names a task with a different command or directory";
  case TFS_EFINISHED:
    return "the task has already ended";
  case TFS_EFOREIGN:
    return "the store belongs to another user, so it is refused; use a store of your own "
           "(--state-dir)";
  case TFS_EUNSAFE:
    return "other users may write to the store, so it is refused; make it private (chmod 700) "
           "or use another (--state-dir)";
  case TFS_ELIMIT:
    return "a limit is malformed or cannot be applied";
  case TFS_ECONFIG:
    return "the store's config file (or a key or value for it) is invalid";
  case TFS_ESYMLINK:
    return "a symlink or foreign file was found where a store file belongs; refusing to follow "
           "it";
  }
  if (err < 0 && err > -4000)
    return strerror(-err);
  return "unknown error";
}
