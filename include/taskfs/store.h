/* taskfs: opening the store, its checks and refresh, and its owner record
 * (core/store.c, owner.c; included by taskfs.h). The layout on disk is
 * described in taskfs.h. */
#ifndef TASKFS_STORE_H
#define TASKFS_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfs_store tfs_store_t;

/* Resolves the state directory without creating anything: explicit (may be
 * NULL), else $TASKFS_STATE_DIR, else $XDG_STATE_HOME/taskfs, else
 * $HOME/.local/state/taskfs. An explicit "" or a TASKFS_STATE_DIR set to
 * "" is -EINVAL (a mistake, never the default store). */
int tfs_store_resolve(const char *explicit_dir, char *buf, size_t len);

/* Opening a store: one path for every caller, always checked. The store's
 * directory and its tasks/ and keys/ must belong to the caller's effective
 * uid and be writable by nobody else: a directory another user owns, or
 * one others may write to, may hold records (commands to run), keys and
 * stop requests someone else planted. Such a store is refused:
 * TFS_EFOREIGN (another user's) or TFS_EUNSAFE (others may write to it),
 * with why (may be NULL) naming the directory, its owner or its mode.
 * Flags: */
/* Create what is missing (0700; a writer also takes group/other read bits
 * away). */
#define TFS_STORE_CREATE 1u
/* Another user's store, read only: its parts must all belong to its owner
 * and be writable by nobody else; every call that would write through the
 * handle is -EROFS, and a task read as lost is not settled. Never with
 * CREATE. */
#define TFS_STORE_FOREIGN 2u
int tfs_store_open_flags(const char *dir, unsigned flags, tfs_store_t **out, char *why,
                         size_t whylen);
/* Opens (creating 0700 if needed: <dir>, tasks/, keys/) the store. */
int tfs_store_open(const char *dir, tfs_store_t **out);
/* Opens an existing store without creating anything (-ENOENT if absent). */
int tfs_store_open_existing(const char *dir, tfs_store_t **out);
void tfs_store_close(tfs_store_t *store);
/* For long-lived readers: if the store's directory was removed and
 * recreated since it was opened, reopens it in place, with the checks of
 * an open; the store it holds is checked again too. Returns 1 if it
 * reopened, 0 if nothing changed, a negative error if the store is gone
 * now (the store keeps its old fds then; call again later), or
 * TFS_EFOREIGN / TFS_EUNSAFE if what the path names now fails the checks:
 * the handle is then refused (every call on it returns that error, and
 * tfs_store_refusal() says why) until a refresh finds a store that
 * passes. */
int tfs_store_refresh(tfs_store_t *store);
/* Why the handle is refused, in words (naming the directory and its owner
 * or mode), or NULL while it serves. */
const char *tfs_store_refusal(const tfs_store_t *store);
/* For the supervisor: opens tasks/<id> once (O_DIRECTORY|O_NOFOLLOW),
 * checks it as the store's directories are checked (TFS_EFOREIGN,
 * TFS_EUNSAFE, with why), and from then on reaches everything of that
 * task through this fd: a tasks/<id> replaced later (a symlink, another
 * directory) is never followed. */
int tfs_store_bind_task(tfs_store_t *store, const char *id, char *why, size_t whylen);
/* Opens a second, independent handle on the same store (same path, same
 * checks: a writer's handle stays a writer's). A store handle is not
 * shared across threads while one of them may call tfs_store_refresh()
 * (which swaps and closes the handle's directory fds): a thread that works
 * beside a refreshing one (the MCP server's launches on the libuv thread
 * pool) takes its own handle with this call and closes it when done. */
int tfs_store_reopen(const tfs_store_t *store, tfs_store_t **out);
const char *tfs_store_path(const tfs_store_t *store);
/* Stats <state>/tasks (the mount's tasks/ directory attributes). */
int tfs_store_stat(const tfs_store_t *store, struct stat *st);
/* Stats <state>/owner.json; -ENOENT if no owner was ever recorded. */
int tfs_owner_stat(const tfs_store_t *store, struct stat *st);

/* Instance record (owner.json). */
typedef struct {
  pid_t pid;
  int64_t started_ms;
  uint64_t start_ticks; /* /proc/<pid>/stat starttime: defeats PID reuse */
  char boot_id[40];
  char exe[256];
  char host[256];
  char role[32]; /* "mcp", "mount", "cli", ... */
  int alive;     /* computed on read, never stored */
} tfs_owner_t;

/* Records this process as the store's owner. Never refuses: if a live
 * previous owner existed, *previous is filled with previous->alive = 1
 * (else previous->alive = 0). previous may be NULL. */
int tfs_store_acquire(tfs_store_t *store, const char *role, tfs_owner_t *previous);
/* Read-only query; -ENOENT if no owner was ever recorded. */
int tfs_store_owner(tfs_store_t *store, tfs_owner_t *out);
/* Fills an owner for the calling process (used for supervisors too). */
int tfs_owner_self(tfs_owner_t *out, const char *role);
char *tfs_owner_dump(const tfs_owner_t *o); /* malloc'ed JSON */

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_STORE_H */
