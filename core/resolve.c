/* What a user types for a task: its id, its key, or the start of its id
 * ("mx45bwq6"), as long as that names one task only. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

/* A prefix of an id's shape: [0-9a-z], with '-' only where an id has it. */
static int prefix_shape(const char *s) {
  size_t n = strlen(s);
  if (n < TFS_ID_PREFIX_MIN || n >= 15 || tfs_is_decimal(s))
    return 0; /* a bare number is a task number, never an id prefix */
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = i == 8 ? c == '-' : (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
    if (!ok)
      return 0;
  }
  return 1;
}

/* The candidates (ids in [from, to) of ids) as strings for the caller. */
static int list_cands(tfs__idbuf_t *ids, size_t from, size_t to, size_t max, char ***cands,
                      size_t *ncands) {
  size_t n = to - from < max ? to - from : max;
  *cands = calloc(n + 1, sizeof **cands);
  if (!*cands)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (!((*cands)[i] = strdup(ids[to - n + i]))) {
      tfs_ids_free(*cands, i);
      *cands = NULL;
      return -ENOMEM;
    }
  *ncands = n;
  return 0;
}

int tfs_task_resolve_prefix(tfs_store_t *store, const char *arg, char id_out[TFS_ID_MAX + 1],
                            char ***cands, size_t *ncands, size_t max_cands) {
  if (cands)
    *cands = NULL;
  if (ncands)
    *ncands = 0;
  int err = tfs_task_resolve(store, arg, id_out);
  if (err != TFS_ENOTASK && err != TFS_EBADID)
    return err;
  if (!prefix_shape(arg))
    return err == TFS_EBADID && !tfs_key_valid(arg) ? TFS_EBADID : TFS_ENOTASK;
  tfs__idbuf_t *ids;
  size_t n, len = strlen(arg);
  if ((err = tfs__collect_ids(store, &ids, &n, 1)))
    return err;
  /* Sorted: the matches are one run. */
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strncmp(ids[mid], arg, len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  size_t end = lo;
  while (end < n && !strncmp(ids[end], arg, len))
    end++;
  if (end - lo == 1) {
    snprintf(id_out, TFS_ID_MAX + 1, "%s", ids[lo]);
    err = 0;
  } else if (end == lo) {
    err = TFS_ENOTASK;
  } else {
    err = TFS_EAMBIGUOUS;
    if (cands && ncands && list_cands(ids, lo, end, max_cands, cands, ncands))
      err = -ENOMEM;
  }
  free(ids);
  return err;
}

int tfs__key_shadows(tfs_store_t *store, const char *key, char *why, size_t whylen) {
  char w[200];
  if (!why || !whylen) {
    why = w;
    whylen = sizeof w;
  }
  if (tfs_is_decimal(key)) {
    snprintf(why, whylen,
             "key '%s' is only digits, which name a task by its number ('taskfs logs 3'); "
             "use a key with a letter in it",
             key);
    return TFS_EBADID;
  }
  if (tfs_id_valid(key)) {
    snprintf(why, whylen, "key '%s' has the shape of a task id; use a key that does not", key);
    return TFS_EBADID;
  }
  if (!prefix_shape(key))
    return 0;
  tfs__idbuf_t *ids;
  size_t n, len = strlen(key);
  int err = tfs__collect_ids(store, &ids, &n, 0);
  if (err)
    return err;
  for (size_t i = 0; i < n && !err; i++)
    if (!strncmp(ids[i], key, len)) {
      snprintf(why, whylen,
               "key '%s' is the start of the id of task %s, which the key would hide; use "
               "another key",
               key, ids[i]);
      err = TFS_EBADID;
    }
  free(ids);
  return err;
}
