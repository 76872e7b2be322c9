/* Name tables: the stable map between task ids (or keys) and the small
 * indexes that inode numbers are made of. Entries are never removed while
 * the mount lives, so an inode number never changes meaning; the cost is
 * one entry (a few dozen bytes) per task ever seen. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"
#include "taskfs/buf.h"

static uint32_t fnv1a(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* Doubles the hash array and reinserts every index; keeps the load factor
 * under one half so probes stay short. */
static int tab_rehash(nametab_t *t, size_t hcap) {
  uint32_t *h = calloc(hcap, sizeof *h);
  if (!h)
    return -ENOMEM;
  for (size_t i = 0; i < t->n; i++) {
    size_t slot = fnv1a(t->v[i].name) & (hcap - 1);
    while (h[slot])
      slot = (slot + 1) & (hcap - 1);
    h[slot] = (uint32_t)(i + 1);
  }
  free(t->hash);
  t->hash = h;
  t->hcap = hcap;
  return 0;
}

int fs_tab_find(const nametab_t *t, const char *name, size_t *idx) {
  if (!t->hcap)
    return -ENOENT;
  size_t slot = fnv1a(name) & (t->hcap - 1);
  while (t->hash[slot]) {
    size_t i = t->hash[slot] - 1;
    if (!strcmp(t->v[i].name, name)) {
      *idx = i;
      return 0;
    }
    slot = (slot + 1) & (t->hcap - 1);
  }
  return -ENOENT;
}

int fs_tab_intern(nametab_t *t, const char *name, size_t *idx) {
  if (!fs_tab_find(t, name, idx))
    return 0;
  if (t->n >= UINT32_MAX - 1)
    return -ENOSPC;
  if ((t->n + 1) * 2 > t->hcap) {
    int err = tab_rehash(t, t->hcap ? t->hcap * 2 : 64);
    if (err)
      return err;
  }
  if (tfs_grow(&t->v, &t->cap, t->n + 1, sizeof *t->v, 64))
    return -ENOMEM;
  char *copy = strdup(name);
  if (!copy)
    return -ENOMEM;
  size_t i = t->n++;
  t->v[i] = (tab_entry_t){.name = copy};
  size_t slot = fnv1a(name) & (t->hcap - 1);
  while (t->hash[slot])
    slot = (slot + 1) & (t->hcap - 1);
  t->hash[slot] = (uint32_t)(i + 1);
  *idx = i;
  return 0;
}

void fs_tab_free(nametab_t *t) {
  for (size_t i = 0; i < t->n; i++)
    free(t->v[i].name);
  free(t->v);
  free(t->hash);
  memset(t, 0, sizeof *t);
}
