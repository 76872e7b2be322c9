/* The writer's primitives: record.json text from a struct, by the rows of
 * a field table given to them (core/record_codec.h); tfs_record_dump()
 * (core/record_codec.c) gives them the record's, whose order is the file's.
 *
 * The text is written straight into one growing buffer instead of being
 * built as a jansson tree and serialized: a record is dumped at every save
 * of a supervisor and once per task by `taskfs ls --json`, and the tree
 * cost more than the parse. The bytes are exactly what jansson's
 * json_dumps(JSON_INDENT(2) | JSON_PRESERVE_ORDER) gives for the same
 * values (tests/test_record.c checks it), so files written before and
 * after read the same: strings are valid UTF-8 (tfs_utf8_sanitize), and
 * only '"', '\\' and C0 controls are escaped (\b \f \n \r \t, else
 * \u00XX in upper-case hex), by tfs_buf_json(), the one escaper. */
#include "core/record_codec.h"
#include "taskfs/text.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

void tfs__jw_put(jw_t *w, const char *s, size_t n) {
  tfs_buf_append(&w->b, s, n);
}

void tfs__jw_raw(jw_t *w, const char *s) {
  tfs__jw_put(w, s, strlen(s));
}

static void newline(jw_t *w) {
  static const char spaces[] = "                ";
  tfs__jw_put(w, "\n", 1);
  tfs__jw_put(w, spaces,
              (size_t)(2 * w->depth) < sizeof spaces - 1 ? (size_t)(2 * w->depth)
                                                         : sizeof spaces - 1);
}

/* Starts the next value of the current array or object. */
void tfs__jw_item(jw_t *w) {
  if (!w->first[w->depth])
    tfs__jw_put(w, ",", 1);
  w->first[w->depth] = 0;
  newline(w);
}

/* Keys are our own ASCII names: no escaping needed. */
void tfs__jw_key(jw_t *w, const char *k) {
  tfs__jw_item(w);
  tfs__jw_put(w, "\"", 1);
  tfs__jw_raw(w, k);
  tfs__jw_put(w, "\": ", 3);
}

void tfs__jw_open(jw_t *w, char c) {
  tfs__jw_put(w, &c, 1);
  w->depth++;
  w->first[w->depth] = 1;
}

void tfs__jw_close(jw_t *w, char c) {
  int empty = w->first[w->depth];
  w->depth--;
  if (!empty)
    newline(w);
  tfs__jw_put(w, &c, 1);
}

/* A string value (outside bytes are made valid UTF-8 first), or null. */
void tfs__jw_str(jw_t *w, const char *s) {
  if (!s) {
    tfs__jw_raw(w, "null");
    return;
  }
  size_t len = strlen(s);
  char *clean = NULL;
  if (!tfs__utf8_valid(s, len)) {
    if (!(clean = tfs_utf8_sanitize(s, len, &len))) {
      w->b.oom = 1;
      return;
    }
    s = clean;
  }
  tfs__jw_put(w, "\"", 1);
  tfs_buf_json(&w->b, s, len);
  tfs__jw_put(w, "\"", 1);
  free(clean);
}

void tfs__jw_num(jw_t *w, int64_t v) {
  char b[24];
  int n = snprintf(b, sizeof b, "%" PRId64, v);
  tfs__jw_put(w, b, (size_t)n);
}

void tfs__jw_num_or_null(jw_t *w, int present, int64_t v) {
  if (present)
    tfs__jw_num(w, v);
  else
    tfs__jw_raw(w, "null");
}

void tfs__jw_time(jw_t *w, int64_t ms) {
  char b[TFS_TIME_BUF];
  if (!ms) {
    tfs__jw_raw(w, "null");
    return;
  }
  tfs__jw_put(w, "\"", 1);
  tfs__jw_raw(w, tfs_time_format(ms, b));
  tfs__jw_put(w, "\"", 1);
}

void tfs__jw_strv(jw_t *w, char *const *v) {
  tfs__jw_open(w, '[');
  for (int i = 0; v && v[i]; i++) {
    tfs__jw_item(w);
    tfs__jw_str(w, v[i]);
  }
  tfs__jw_close(w, ']');
}

/* The value of an integer-like row (int, bool, enum, u64, int64, time)
 * at its place in the struct. */
int64_t tfs__rf_int_at(const rf_field_t *f, const char *at) {
  switch (f->type) {
  case RF_I32:
  case RF_BOOL:
  case RF_ENUM:
    return *(const int *)at;
  case RF_U64:
    return (int64_t) * (const uint64_t *)at;
  default:
    return *(const int64_t *)at;
  }
}

/* Whether a member has a value, or is written null (left out: RF_OMIT). */
static int has_value(const rf_field_t *f, const void *base, const char *at) {
  if (f->present)
    return f->present(base);
  switch (f->type) {
  case RF_STR:
    return *(char *const *)at || (f->flags & RF_NULL_EMPTY);
  case RF_BUF:
    return !(f->flags & RF_EMPTY_NULL) || at[0];
  case RF_TIME:
    return tfs__rf_int_at(f, at) != 0;
  case RF_I64:
  case RF_I32:
  case RF_U64: {
    int64_t v = tfs__rf_int_at(f, at);
    return !((f->flags & RF_NULL_NEG && v < 0) || (f->flags & RF_NULL_ZERO && v == 0) ||
             (f->flags & RF_NULL_NONPOS && v <= 0));
  }
  default:
    return 1;
  }
}

void tfs__jw_fields(jw_t *w, const rf_field_t *table, const void *base) {
  for (const rf_field_t *f = table; f->name; f++) {
    const char *at = (const char *)base + f->off;
    if (f->flags & RF_NOWRITE)
      continue;
    if (f->type == RF_CUSTOM) {
      f->write(w, base);
      continue;
    }
    int has = has_value(f, base, at);
    if (!has && f->flags & RF_OMIT)
      continue;
    tfs__jw_key(w, f->name);
    if (!has) {
      tfs__jw_raw(w, "null");
      continue;
    }
    switch (f->type) {
    case RF_I64:
    case RF_I32:
    case RF_U64:
      tfs__jw_num(w, tfs__rf_int_at(f, at));
      break;
    case RF_TIME:
      tfs__jw_time(w, tfs__rf_int_at(f, at));
      break;
    case RF_STR: {
      const char *s = *(char *const *)at;
      tfs__jw_str(w, s ? s : "");
      break;
    }
    case RF_BUF:
      tfs__jw_str(w, at);
      break;
    case RF_STRV:
      tfs__jw_strv(w, *(char *const *const *)at);
      break;
    case RF_BOOL:
      tfs__jw_raw(w, tfs__rf_int_at(f, at) ? "true" : "false");
      break;
    case RF_ENUM:
      tfs__jw_str(w, f->name_of((int)tfs__rf_int_at(f, at)));
      break;
    case RF_OBJ:
      tfs__jw_open(w, '{');
      tfs__jw_fields(w, f->sub, at);
      tfs__jw_close(w, '}');
      break;
    case RF_CUSTOM:
      break;
    }
  }
}
