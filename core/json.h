/* The strict JSON reader of core (core/json.c), for record.json. Private
 * to core/. */
#ifndef TASKFS_CORE_JSON_H
#define TASKFS_CORE_JSON_H

#include "core/internal.h"

#include <stdint.h>

enum {
  TFS__J_NULL,
  TFS__J_FALSE,
  TFS__J_TRUE,
  TFS__J_INT,
  TFS__J_REAL,
  TFS__J_STR,
  TFS__J_OBJ,
  TFS__J_ARR
};

typedef struct {
  uint8_t type;
  uint8_t esc;   /* a string with escapes (tfs__json_str decodes them) */
  uint32_t kids; /* members of an object, elements of an array */
  uint32_t end;  /* containers: the index just past the subtree */
  uint32_t len;  /* strings: raw bytes between the quotes */
  const char *s;
  int64_t i; /* integers */
} tfs__jnode_t;

/* Nodes in document order; an object's members are key, value, key, ... */
typedef struct {
  tfs__jnode_t *v;
  size_t n, cap;
  tfs__jnode_t stack[384]; /* a record needs a few hundred */
} tfs__jdoc_t;

/* Parses text into d (the text must outlive d). strict: refuse what only
 * jansson should judge (see json.c). 0, or -1 when refused. Free d with
 * tfs__json_free() either way. */
int tfs__json_parse(const char *text, size_t len, int strict, tfs__jdoc_t *d);
void tfs__json_free(tfs__jdoc_t *d);
/* The value of key in object obj (the last one if repeated), or -1. */
int tfs__json_get(const tfs__jdoc_t *d, int obj, const char *key);
/* Element i of array arr, or -1. */
int tfs__json_at(const tfs__jdoc_t *d, int arr, size_t i);
/* The element after elem in its array. */
int tfs__json_next(const tfs__jdoc_t *d, int elem);
/* A string's value, unescaped and NUL-terminated (it may hold NUL bytes:
 * *len counts them), malloc'ed; NULL without memory. */
char *tfs__json_str(const tfs__jdoc_t *d, int i, size_t *len);

#endif
