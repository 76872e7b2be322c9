/* taskfs: from what a user types to a task id: keys, task numbers, ids and
 * their prefixes (core/key.c, number.c, resolve.c; included by taskfs.h). */
#ifndef TASKFS_RESOLVE_H
#define TASKFS_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "taskfs/ids.h"
#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Looks a key up: fills id_out, or TFS_ENOTASK. */
int tfs_key_lookup(tfs_store_t *store, const char *key, char id_out[TFS_ID_MAX + 1]);
/* Task numbers (core/number.c): every task gets one at creation, 1, 2,
 * 3, ..., never reused while it exists. tfs_number_parse: 1 and *out if s
 * is a bare decimal number without a leading zero; tfs_is_decimal: 1 if s
 * is only digits (a bare number, never an id prefix or a new key).
 * tfs_number_lookup: the id of the task with number n, or TFS_ENOTASK. */
int tfs_number_parse(const char *s, int64_t *out);
int tfs_is_decimal(const char *s);
int tfs_number_lookup(tfs_store_t *store, int64_t n, char id_out[TFS_ID_MAX + 1]);
/* Accepts an id, a task number (a bare decimal: the number, else a key
 * of only digits from before numbers) or a key (ids are tried first). */
int tfs_task_resolve(tfs_store_t *store, const char *id_or_key, char id_out[TFS_ID_MAX + 1]);
/* tfs_task_resolve(), then a unique prefix of an id, of at least
 * TFS_ID_PREFIX_MIN characters (a user types "mx45bwq6"): TFS_EAMBIGUOUS
 * when it names several tasks, with the candidates (newest last, at most
 * max_cands; free with tfs_ids_free) in *cands if not NULL; TFS_ENOTASK
 * when it names none (a shorter prefix names none either). */
#define TFS_ID_PREFIX_MIN 4
int tfs_task_resolve_prefix(tfs_store_t *store, const char *arg, char id_out[TFS_ID_MAX + 1],
                            char ***cands, size_t *ncands, size_t max_cands);
/* Every key in the store (well-formed names of regular files in keys/),
 * sorted; *keys is a malloc'ed array of malloc'ed strings (free with
 * tfs_ids_free). A key may name a task that is gone meanwhile:
 * tfs_key_lookup() then tfs_task_stat() tell. */
int tfs_key_list(tfs_store_t *store, char ***keys, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_RESOLVE_H */
