/* libFuzzer target: the mount's name -> node map. The lookup (fs/lookup.c)
 * and inode decoding (fs/node.c) need a live FUSE request and mount, so
 * this target drives the separable part: the name tables (fs/nametab.c)
 * that turn a task id or key met in a lookup into the stable index inode
 * numbers are made of, behind the same validity gate the lookup applies
 * (tfs_id_valid / tfs_key_valid). The input is a list of names separated by
 * '\n' or NUL; each name's first byte picks the table and the operation. A
 * naive linear list is the model: intern returns the same index for the
 * same name every time, distinct names get distinct indexes, find agrees
 * with the model, and no name that fails the gate is ever interned. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"
#include "fuzz/check.h"

typedef struct {
  char **names;
  size_t n;
} model_t;

static long model_find(const model_t *m, const char *name) {
  for (size_t i = 0; i < m->n; i++)
    if (!strcmp(m->names[i], name))
      return (long)i;
  return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nametab_t tabs[2];
  model_t model[2] = {{NULL, 0}, {NULL, 0}};
  memset(tabs, 0, sizeof tabs);
  const char *p = (const char *)data, *end = p + size;
  while (p < end) {
    const char *q = p;
    while (q < end && *q != '\n' && *q != '\0')
      q++;
    size_t len = (size_t)(q - p);
    if (len >= 1) {
      unsigned op = (unsigned char)p[0];
      int t = op & 1;      /* 0: tasks/, 1: by-key/ */
      int intern = op & 2; /* else a plain find */
      int nogate = op & 4; /* exercise the table beyond the gate */
      char *name = strndup(p + 1, len - 1);
      int valid = t == 0 ? tfs_id_valid(name) : tfs_key_valid(name);
      size_t idx = (size_t)-1;
      long want = model_find(&model[t], name);
      if (intern && (valid || nogate)) {
        CHECK(fs_tab_intern(&tabs[t], name, &idx) == 0);
        if (want >= 0)
          CHECK(idx == (size_t)want);
        else {
          CHECK(idx == model[t].n);
          model[t].names = realloc(model[t].names, (model[t].n + 1) * sizeof(char *));
          model[t].names[model[t].n++] = strdup(name);
        }
        CHECK(!strcmp(tabs[t].v[idx].name, name));
      } else {
        int rc = fs_tab_find(&tabs[t], name, &idx);
        CHECK((rc == 0) == (want >= 0));
        if (rc == 0)
          CHECK(idx == (size_t)want);
      }
      CHECK(tabs[t].n == model[t].n);
      /* Any name the mount shows as a directory entry is one safe path
       * component. */
      if (valid)
        CHECK(!strchr(name, '/') && strcmp(name, ".") && strcmp(name, ".."));
      free(name);
    }
    p = q + 1;
  }
  for (int t = 0; t < 2; t++) {
    for (size_t i = 0; i < model[t].n; i++) {
      size_t idx;
      CHECK(fs_tab_find(&tabs[t], model[t].names[i], &idx) == 0 && idx == i);
      free(model[t].names[i]);
    }
    free(model[t].names);
    fs_tab_free(&tabs[t]);
  }
  return 0;
}
