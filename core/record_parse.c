/* The reader's primitives: record.json text to a struct, by the rows of a
 * field table given to them (core/record_codec.h). Parsing is strict on
 * types (a present, non-null field must have its type) and tolerant of
 * missing optional fields, so that older or newer writers of version 1
 * stay readable. Errors name the field: "record.json: field 'state': ...".
 * These functions know no table of their own: tfs_record_parse()
 * (core/record_codec.c) gives them the record's. */
#include "core/record_codec.h"
#include "taskfs/text.h"

#include <stdio.h>
#include <string.h>

int tfs__rf_bad(rf_reader_t *p, const char *field, const char *what) {
  if (p->err && p->errlen)
    snprintf(p->err, p->errlen, "record.json: field '%s': %s", field, what);
  return TFS_ECORRUPT;
}

int tfs__rf_type(rf_reader_t *p, int i) {
  return i < 0 ? -1 : p->d->v[i].type;
}

int tfs__rf_get(rf_reader_t *p, int obj, const char *name) {
  return tfs__json_get(p->d, obj, name);
}

int tfs__rf_opt(rf_reader_t *p, int obj, const char *name) {
  int v = tfs__rf_get(p, obj, name);
  return tfs__rf_type(p, v) == TFS__J_NULL ? -1 : v;
}

/* A string as a C string, the way jansson's json_string_value() gives it
 * (it ends at the first NUL, as a decoded \u0000 makes it), in buf when it
 * fits, else in *heap (free it). NULL without memory. */
const char *tfs__rf_cstr(rf_reader_t *p, int i, char buf[128], char **heap) {
  const tfs__jnode_t *n = &p->d->v[i];
  *heap = NULL;
  if (!n->esc && n->len < 128) {
    memcpy(buf, n->s, n->len);
    buf[n->len] = '\0';
    return buf;
  }
  return *heap = tfs__json_str(p->d, i, NULL);
}

int tfs__rf_get_int(rf_reader_t *p, int obj, const char *name, int64_t lo, int64_t hi,
                    int64_t *out) {
  int v = tfs__rf_opt(p, obj, name);
  if (v < 0)
    return 0;
  if (tfs__rf_type(p, v) != TFS__J_INT)
    return tfs__rf_bad(p, name, "expected an integer");
  int64_t x = p->d->v[v].i;
  if (x < lo || x > hi)
    return tfs__rf_bad(p, name, "out of range");
  *out = x;
  return 0;
}

int tfs__rf_get_str(rf_reader_t *p, int obj, const char *name, char **out) {
  int v = tfs__rf_opt(p, obj, name);
  if (v < 0)
    return 0;
  if (tfs__rf_type(p, v) != TFS__J_STR)
    return tfs__rf_bad(p, name, "expected a string");
  return (*out = tfs__json_str(p->d, v, NULL)) ? 0 : -ENOMEM;
}

int tfs__rf_check_str(rf_reader_t *p, int v, int (*check)(const char *s, void *arg), void *arg) {
  char buf[128], *heap;
  if (tfs__rf_type(p, v) != TFS__J_STR)
    return 0;
  const char *s = tfs__rf_cstr(p, v, buf, &heap);
  int ok = s ? check(s, arg) : -1;
  free(heap);
  return ok;
}

static int get_time(rf_reader_t *p, int v, const char *name, int64_t *out) {
  char buf[128], *heap;
  if (tfs__rf_type(p, v) != TFS__J_STR)
    return tfs__rf_bad(p, name, "expected an RFC 3339 time");
  const char *s = tfs__rf_cstr(p, v, buf, &heap);
  int err = !s                       ? -ENOMEM
            : tfs_time_parse(s, out) ? tfs__rf_bad(p, name, "expected an RFC 3339 time")
                                     : 0;
  free(heap);
  return err;
}

static int get_strv(rf_reader_t *p, int v, const rf_field_t *f, char ***out, int *count) {
  if (tfs__rf_type(p, v) != TFS__J_ARR)
    return tfs__rf_bad(p, f->name, "expected an array of strings");
  size_t n = p->d->v[v].kids;
  char **a = calloc(n + 1, sizeof *a);
  if (!a)
    return -ENOMEM;
  int e = v + 1;
  for (size_t i = 0; i < n; i++, e = tfs__json_next(p->d, e)) {
    if (tfs__rf_type(p, e) != TFS__J_STR) {
      tfs_strv_free(a);
      return tfs__rf_bad(p, f->name, "expected an array of strings");
    }
    if (!(a[i] = tfs__json_str(p->d, e, NULL))) {
      tfs_strv_free(a);
      return -ENOMEM;
    }
  }
  *out = a;
  *count = (int)n;
  for (size_t i = 0; f->valid && i < n; i++)
    if (!f->valid(a[i]))
      return tfs__rf_bad(p, f->name, f->want);
  return 0;
}

/* A row's string check, as tfs__rf_check_str wants it. */
typedef struct {
  const rf_field_t *f;
  char *at;
} check_t;

static int check_buf(const char *s, void *arg) {
  check_t *c = arg;
  if (c->f->valid && !c->f->valid(s))
    return 0;
  snprintf(c->at, c->f->off2, "%s", s);
  return 1;
}

static int check_enum(const char *s, void *arg) {
  check_t *c = arg;
  return c->f->parse(s, (int *)c->at) == 0;
}

/* Sets the defaults of the rows (and of nested rows) of an absent object. */
static void defaults(const rf_field_t *table, char *base) {
  for (const rf_field_t *f = table; f->name; f++)
    if (f->flags & RF_DEFAULT)
      *(int *)(base + f->off) = (int)f->dflt;
    else if (f->type == RF_OBJ)
      defaults(f->sub, base + f->off);
}

static int read_one(rf_reader_t *p, int obj, const rf_field_t *f, void *base) {
  char *at = (char *)base + f->off;
  int64_t x;
  if (f->type == RF_CUSTOM)
    return f->read ? f->read(p, obj, base) : 0;
  int v = tfs__rf_opt(p, obj, f->name), ok, err;
  if (f->flags & RF_DEFAULT)
    *(int *)at = (int)f->dflt;
  if (v < 0) {
    if (f->type == RF_OBJ)
      defaults(f->sub, at);
    return f->flags & RF_REQUIRED ? tfs__rf_bad(p, f->name, f->want) : 0;
  }
  check_t c = {f, at};
  switch (f->type) {
  case RF_I64:
  case RF_I32:
  case RF_U64:
    if ((err = tfs__rf_get_int(p, obj, f->name, f->lo, f->hi, &x)))
      return err;
    if (f->type == RF_I32)
      *(int *)at = (int)x;
    else if (f->type == RF_U64)
      *(uint64_t *)at = (uint64_t)x;
    else
      *(int64_t *)at = x;
    return 0;
  case RF_TIME:
    return get_time(p, v, f->name, (int64_t *)at);
  case RF_STR:
    return tfs__rf_get_str(p, obj, f->name, (char **)at);
  case RF_BUF:
    if (!f->valid && tfs__rf_type(p, v) != TFS__J_STR)
      return tfs__rf_bad(p, f->name, "expected a string");
    if ((ok = tfs__rf_check_str(p, v, check_buf, &c)) <= 0)
      return ok < 0 ? -ENOMEM : tfs__rf_bad(p, f->name, f->want);
    return 0;
  case RF_ENUM:
    if ((ok = tfs__rf_check_str(p, v, check_enum, &c)) <= 0)
      return ok < 0 ? -ENOMEM : tfs__rf_bad(p, f->name, f->want);
    return 0;
  case RF_STRV:
    if ((err = get_strv(p, v, f, (char ***)at, (int *)((char *)base + f->off2))))
      return err;
    return f->flags & RF_REQUIRED && *(int *)((char *)base + f->off2) < 1
               ? tfs__rf_bad(p, f->name, f->want)
               : 0;
  case RF_BOOL:
    if (tfs__rf_type(p, v) != TFS__J_TRUE && tfs__rf_type(p, v) != TFS__J_FALSE)
      return tfs__rf_bad(p, f->name, "expected a boolean");
    *(int *)at = tfs__rf_type(p, v) == TFS__J_TRUE;
    return 0;
  case RF_OBJ:
    if (tfs__rf_type(p, v) != TFS__J_OBJ)
      return tfs__rf_bad(p, f->name, "expected an object");
    return tfs__rf_fields(p, v, f->sub, at);
  case RF_CUSTOM:
    break;
  }
  return 0;
}

int tfs__rf_fields(rf_reader_t *p, int obj, const rf_field_t *table, void *base) {
  for (const rf_field_t *f = table; f->name; f++) {
    if (f->flags & RF_NOREAD)
      continue;
    int err = read_one(p, obj, f, base);
    if (err)
      return err;
  }
  return 0;
}
