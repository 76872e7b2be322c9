/* taskfs: the names of tasks, keys and queues, and what makes one well formed
 * (core/ids.c; included by taskfs.h). Every id, key or queue name that comes
 * from outside is checked here before it touches a path. */
#ifndef TASKFS_IDS_H
#define TASKFS_IDS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFS_ID_MAX 32         /* task ids are much shorter; see tfs_id_valid */
#define TFS_KEY_MAX 128       /* [A-Za-z0-9._:-], 1..128 chars, not "." / ".." */
#define TFS_QUEUE_NAME_MAX 64 /* queue names: 1..64 of [A-Za-z0-9._:-], not starting with '.' */

/* ---- ids and keys ---------------------------------------------------- */

/* Task ids: 8 base36 chars of creation time in ms, '-', 6 random base36
 * chars, e.g. "mi4x7k2p-3fz9qa". Lexical order is creation order. */
int tfs_id_valid(const char *id); /* 1 if well formed, else 0 */
int tfs_key_valid(const char *key);
/* The same checks for counted strings (e.g. a JSON string with its length):
 * an embedded NUL byte makes the id or key invalid. */
int tfs_id_validn(const char *id, size_t len);
int tfs_key_validn(const char *key, size_t len);

/* 1 if name is a queue name: 1..TFS_QUEUE_NAME_MAX of [A-Za-z0-9._:-], not
 * starting with '.' (the rule of keys, shorter). */
int tfs_queue_name_valid(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_IDS_H */
