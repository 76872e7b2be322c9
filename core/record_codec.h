/* The record.json field table (core/record_fields.c) and the two codecs it
 * drives: the writer (core/record_dump.c) and the strict reader
 * (core/record_parse.c), entered by tfs_record_dump() and
 * tfs_record_parse() (core/record_codec.c). Private to core/.
 *
 * Each member of record.json is one row: its name, its type, where it
 * lives in the C struct, and how it is null or absent. The writer walks the
 * rows in order (the order is the file's member order), the reader walks
 * the same rows and reads each member by name, so a field is declared once
 * and both sides follow. What no row type covers (the exact bytes of the
 * command, the per-resource limits, the kept lines, the restart history)
 * is a CUSTOM row with its own write and read functions (core/record_custom.c).
 *
 * The files are layers, each calling only the ones below it: the writer's
 * and reader's primitives (tfs__jw_*, tfs__rf_*), which walk whatever table
 * they are given; the custom rows; the table; the two entry points. */
#ifndef TASKFS_CORE_RECORD_CODEC_H
#define TASKFS_CORE_RECORD_CODEC_H

#include "core/json.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
  RF_I64,  /* int64_t */
  RF_I32,  /* int (or pid_t) */
  RF_U64,  /* uint64_t, read in 0..INT64_MAX */
  RF_TIME, /* int64_t ms as RFC 3339; 0 is null */
  RF_STR,  /* char *, malloc'ed; NULL is null */
  RF_BUF,  /* char[size] in the struct */
  RF_STRV, /* char ** NULL-terminated, its count an int at off2 */
  RF_BOOL, /* int, 0 or 1 */
  RF_ENUM, /* an int-sized enum, by name */
  RF_OBJ,  /* a nested object: the rows in sub, at base + off */
  RF_CUSTOM
} rf_type_t;

enum {
  RF_NULL_NEG = 1 << 0,    /* ints: null when < 0 */
  RF_NULL_ZERO = 1 << 1,   /* ints: null when == 0 */
  RF_NULL_NONPOS = 1 << 2, /* ints: null when <= 0 */
  RF_EMPTY_NULL = 1 << 3,  /* BUF: "" is written null */
  RF_NULL_EMPTY = 1 << 4,  /* STR: NULL is written "" */
  RF_OMIT = 1 << 5,        /* not present: the member is left out, not null */
  RF_REQUIRED = 1 << 6,    /* the reader refuses it absent or null (with want) */
  RF_DEFAULT = 1 << 7,     /* the reader sets dflt when absent or null */
  RF_NOREAD = 1 << 8,      /* derived: written, never read back */
  RF_NOWRITE = 1 << 9      /* read from older writers, no longer written here */
};

typedef struct jw jw_t;
typedef struct rf_reader rf_reader_t;
typedef struct rf_field rf_field_t;

struct rf_field {
  const char *name;
  rf_type_t type;
  unsigned flags;
  size_t off;  /* of the value from the base (RF_OBJ: of the sub rows' base) */
  size_t off2; /* RF_STRV: of its int count; RF_BUF: the buffer's size */
  int64_t lo, hi;
  int64_t dflt;
  /* Written null (or left out with RF_OMIT) when this says no. */
  int (*present)(const void *base);
  /* RF_ENUM: the name of a value, and name to value (0 or -1). RF_BUF and
   * RF_STRV: a check of each string (nonzero: good). */
  const char *(*name_of)(int v);
  int (*parse)(const char *s, int *out);
  int (*valid)(const char *s);
  const char *want; /* the reader's message for a refused value */
  const rf_field_t *sub;
  void (*write)(jw_t *w, const void *base);
  int (*read)(rf_reader_t *p, int obj, void *base);
};

/* The record's rows (core/record_fields.c), ending with a NULL name. */
extern const rf_field_t tfs__record_fields[];

/* The writer: one growing buffer, two-space indent, exactly jansson's
 * json_dumps(JSON_INDENT(2) | JSON_PRESERVE_ORDER) bytes. */
#define RF_DEPTH_MAX 8
struct jw {
  tfs_buf_t b; /* b.oom: an allocation failed */
  int depth;
  int first[RF_DEPTH_MAX]; /* nothing written yet at this depth */
};

void tfs__jw_put(jw_t *w, const char *s, size_t n);
void tfs__jw_raw(jw_t *w, const char *s); /* a literal: null, true, ... */
void tfs__jw_item(jw_t *w);               /* the next array element */
void tfs__jw_key(jw_t *w, const char *k); /* the next member's key */
void tfs__jw_open(jw_t *w, char c);
void tfs__jw_close(jw_t *w, char c);
void tfs__jw_str(jw_t *w, const char *s); /* made valid UTF-8; NULL: null */
void tfs__jw_num(jw_t *w, int64_t v);
void tfs__jw_num_or_null(jw_t *w, int present, int64_t v);
void tfs__jw_time(jw_t *w, int64_t ms); /* 0: null */
void tfs__jw_strv(jw_t *w, char *const *v);
/* Writes the rows of table for the struct at base, as members. */
void tfs__jw_fields(jw_t *w, const rf_field_t *table, const void *base);

/* The reader: a parsed document and where its error goes. */
struct rf_reader {
  char *err;
  size_t errlen;
  const tfs__jdoc_t *d;
};

int tfs__rf_bad(rf_reader_t *p, const char *field, const char *what);
int tfs__rf_type(rf_reader_t *p, int i);
int tfs__rf_get(rf_reader_t *p, int obj, const char *name); /* -1: absent */
int tfs__rf_opt(rf_reader_t *p, int obj, const char *name); /* -1: absent or null */
/* A string node as a C string, in buf when it fits, else in *heap. */
const char *tfs__rf_cstr(rf_reader_t *p, int i, char buf[128], char **heap);
int tfs__rf_get_int(rf_reader_t *p, int obj, const char *name, int64_t lo, int64_t hi,
                    int64_t *out);
int tfs__rf_get_str(rf_reader_t *p, int obj, const char *name, char **out);
/* check_str: 1 if node v is a string that check takes, 0 if not, -1 OOM. */
int tfs__rf_check_str(rf_reader_t *p, int v, int (*check)(const char *s, void *arg), void *arg);
/* The value of an integer-like row at its place in the struct (the writer's
 * view of it: the fuzzer compares the reader's result through it). */
int64_t tfs__rf_int_at(const rf_field_t *f, const char *at);
/* Reads the rows of table from object obj into the struct at base. */
int tfs__rf_fields(rf_reader_t *p, int obj, const rf_field_t *table, void *base);

#endif
