/* taskfs: the one cleanup style, for every library: a local that owns a
 * file descriptor or a heap block is declared with TFS_AUTOCLOSE or
 * TFS_AUTOFREE and released when it goes out of scope, so early returns
 * need no goto and no repeated close. To hand the resource on, set the
 * local to -1 (or NULL) after copying it.
 */
#ifndef TASKFS_CLEANUP_H
#define TASKFS_CLEANUP_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* Closes *fd if it is open, keeping errno (an error being returned must
 * not be replaced by close's). */
static inline void tfs_closep(int *fd) {
  if (*fd >= 0) {
    int e = errno;
    close(*fd);
    errno = e;
  }
}

static inline void tfs_freep(void *p) {
  free(*(void **)p);
}

#define TFS_AUTOCLOSE __attribute__((cleanup(tfs_closep)))
#define TFS_AUTOFREE __attribute__((cleanup(tfs_freep)))

#endif /* TASKFS_CLEANUP_H */
