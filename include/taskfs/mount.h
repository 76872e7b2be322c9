/* taskfs: the FUSE view of a store (libtaskfs-fs.a).
 *
 * The mount is a read-mostly window onto the store: every task as a
 * directory of files, with `cancel` as the one writable file. It never takes
 * ownership of the store and never starts or owns tasks.
 */
#ifndef TASKFS_MOUNT_H
#define TASKFS_MOUNT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *state_dir;  /* absolute path of the store (created if absent) */
  const char *mountpoint; /* absolute path of an existing directory */
  int allow_other;        /* mount with -o allow_other */
  int use_syslog;         /* log to syslog instead of stderr */
  /* If >= 0: once mounted (or on failure) one line is written here, "ok\n"
   * or "error: <message>\n", and the fd is closed. Used by `taskfs mount`
   * to report errors before it returns to the shell. */
  int ready_fd;
  /* With ready_fd and detach: after "ok", stdin/stdout/stderr go to
   * /dev/null. */
  int detach;
} fs_mount_opts_t;

/* Mounts the store and serves it until unmounted or until SIGTERM, SIGINT
 * or SIGHUP, then unmounts. Returns 0 on a clean end, else a negative
 * error (after logging what went wrong). */
int fs_mount_run(const fs_mount_opts_t *opts);

/* The default mount point: $XDG_RUNTIME_DIR/taskfs, else $HOME/taskfs.
 * Returns 0 or -ENAMETOOLONG / -ENOENT (no HOME). */
int fs_mount_default_point(char *buf, size_t len);

/* Checks that path can be mounted on: an existing directory, no live FUSE
 * mount. A dead taskfs mount there (its mount process died: statfs says
 * ENOTCONN) is cleared first, never stacked over, and *cleared (if not
 * NULL) set to 1; a dead mount of another file system is refused. On
 * failure writes a message saying what to do into msg and returns a
 * negative errno. */
int fs_mount_check_point(const char *path, int *cleared, char *msg, size_t msglen);

/* Unmounts a taskfs (or any FUSE) mount point; lazy detaches even if busy,
 * and a dead mount is always detached lazily. Dead taskfs mounts left
 * underneath go too, so one call clears the mount point. Uses umount2() as
 * root, fusermount3 -u otherwise. */
int fs_mount_unmount(const char *path, int lazy, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_MOUNT_H */
