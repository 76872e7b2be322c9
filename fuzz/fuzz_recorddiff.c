/* libFuzzer target: record.json's strict reader against jansson, the
 * reader it falls back to (core/record_codec.c). For any bytes:
 *
 * - JSON: when core's strict JSON reader (core/json.c) takes the text,
 *   jansson must parse it too and agree on every value: types, integers,
 *   strings byte for byte (with their NULs), members (the last of a
 *   repeated key, as both keep) and elements.
 * - Record: when tfs_record_parse() takes the text, every member the field
 *   table (core/record_fields.c) reads must hold, in jansson's tree, the
 *   value the record got: the table's rows are walked over jansson's tree.
 * - Both roads: when jansson takes the text, the record read from the text
 *   and the record read from jansson's canonical compact and indented
 *   forms of it must be the same: the same verdict, the same message and
 *   the same dump. The strict road and the jansson road of the reader thus
 *   accept the same documents and give the same record.
 *
 * Known differences, by design: "command" and "cwd" are replaced by
 * "commandBytes" and "cwdBytes" when those are given (their display forms
 * are not compared then); an RF_BUF member longer than its buffer (the
 * creator's bootId) is cut, so only its kept prefix is compared; a member
 * the reader does not take back (signalName, a job's step: derived) is
 * not compared. Run: make fuzz (see docs/security.md). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/record_codec.h"
#include "fuzz/check.h"

/* A strict-reader node and a jansson value are the same JSON value. */
static void same_value(const tfs__jdoc_t *d, int i, const json_t *j) {
  const tfs__jnode_t *n = &d->v[i];
  CHECK(j);
  switch (n->type) {
  case TFS__J_NULL:
    CHECK(json_is_null(j));
    break;
  case TFS__J_TRUE:
    CHECK(json_is_true(j));
    break;
  case TFS__J_FALSE:
    CHECK(json_is_false(j));
    break;
  case TFS__J_INT:
    CHECK(json_is_integer(j) && json_integer_value(j) == n->i);
    break;
  case TFS__J_REAL:
    CHECK(json_is_number(j));
    break;
  case TFS__J_STR: {
    size_t len;
    char *s = tfs__json_str(d, i, &len);
    CHECK(s && json_is_string(j));
    CHECK(len == json_string_length(j) && !memcmp(s, json_string_value(j), len));
    free(s);
    break;
  }
  case TFS__J_ARR: {
    CHECK(json_is_array(j) && json_array_size(j) == n->kids);
    int e = i + 1;
    for (size_t k = 0; k < n->kids; k++, e = tfs__json_next(d, e))
      same_value(d, e, json_array_get(j, k));
    break;
  }
  case TFS__J_OBJ: {
    /* Members are key, value, ...; a repeated key: both keep the last. */
    CHECK(json_is_object(j) && json_object_size(j) <= n->kids);
    int e = i + 1;
    for (size_t k = 0; k < n->kids; k++) {
      size_t klen;
      char *key = tfs__json_str(d, e, &klen);
      CHECK(key);
      int v = tfs__json_get(d, i, key);
      if (strlen(key) == klen) {
        CHECK(v >= 0);
        same_value(d, v, json_object_get(j, key));
      }
      free(key);
      e = tfs__json_next(d, e); /* the value */
      e = tfs__json_next(d, e); /* the next key */
    }
    break;
  }
  }
}

/* The rows of table, over jansson's object j, agree with the struct at
 * base (members present and not null; absent ones keep their defaults). */
static void same_fields(const json_t *j, const rf_field_t *table, const char *base) {
  for (const rf_field_t *f = table; f->name; f++) {
    const json_t *v = json_object_get(j, f->name);
    const char *at = base + f->off;
    if (f->type == RF_CUSTOM || f->flags & RF_NOREAD || !v || json_is_null(v))
      continue;
    if ((!strcmp(f->name, "command") && json_object_get(j, "commandBytes")) ||
        (!strcmp(f->name, "cwd") && json_object_get(j, "cwdBytes")))
      continue;
    switch (f->type) {
    case RF_I64:
    case RF_I32:
    case RF_U64:
      CHECK(json_is_integer(v) && json_integer_value(v) == tfs__rf_int_at(f, at));
      break;
    case RF_TIME: {
      int64_t ms = -1;
      CHECK(json_is_string(v) && !tfs_time_parse(json_string_value(v), &ms));
      CHECK(ms == tfs__rf_int_at(f, at));
      break;
    }
    case RF_STR:
      CHECK(json_is_string(v) && *(char *const *)at);
      CHECK(!strcmp(*(char *const *)at, json_string_value(v)));
      break;
    case RF_BUF:
      CHECK(json_is_string(v) && !strncmp(at, json_string_value(v), f->off2 - 1));
      break;
    case RF_STRV: {
      char *const *sv = *(char *const *const *)at;
      CHECK(json_is_array(v) && sv);
      size_t n = json_array_size(v);
      CHECK(*(const int *)(base + f->off2) == (int)n);
      for (size_t k = 0; k < n; k++)
        CHECK(sv[k] && !strcmp(sv[k], json_string_value(json_array_get(v, k))));
      break;
    }
    case RF_BOOL:
      CHECK(json_is_boolean(v) && json_is_true(v) == !!tfs__rf_int_at(f, at));
      break;
    case RF_ENUM:
      CHECK(json_is_string(v) &&
            !strcmp(f->name_of((int)tfs__rf_int_at(f, at)), json_string_value(v)));
      break;
    case RF_OBJ:
      CHECK(json_is_object(v));
      same_fields(v, f->sub, at);
      break;
    case RF_CUSTOM:
      break;
    }
  }
}

/* The verdict, message and dump of tfs_record_parse() on text. */
typedef struct {
  int rc;
  char err[256];
  char *dump;
} verdict_t;

static void judge(const char *text, size_t len, verdict_t *out, tfs_record_t *keep) {
  tfs_record_t rec;
  out->rc = tfs_record_parse(text, len, &rec, out->err, sizeof out->err);
  out->dump = NULL;
  if (out->rc)
    return;
  out->dump = tfs_record_dump(&rec);
  CHECK(out->dump);
  if (keep)
    *keep = rec;
  else
    tfs_record_free(&rec);
}

static void same_verdict(const verdict_t *a, const verdict_t *b) {
  if (a->rc != b->rc || strcmp(a->err, b->err) || (a->dump && strcmp(a->dump, b->dump))) {
    fprintf(stderr, "text: %d %s\ncanonical: %d %s\n%s\n%s\n", a->rc, a->err, b->rc, b->err,
            a->dump ? a->dump : "", b->dump ? b->dump : "");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  json_error_t jerr;
  json_t *j = json_loadb(text, size, JSON_ALLOW_NUL, &jerr);
  tfs__jdoc_t d;
  if (!tfs__json_parse(text, size, 1, &d)) {
    if (!j) {
      fprintf(stderr, "the strict reader took what jansson refuses: %s\n", jerr.text);
      abort();
    }
    same_value(&d, 0, j);
  }
  tfs__json_free(&d);

  tfs_record_t rec;
  verdict_t v;
  judge(text, size, &v, &rec);
  if (!v.rc) {
    CHECK(j);
    same_fields(j, tfs__record_fields, (const char *)&rec);
    tfs_record_free(&rec);
  }
  if (j) {
    static const size_t flags[] = {JSON_COMPACT, JSON_INDENT(2) | JSON_PRESERVE_ORDER};
    for (size_t k = 0; k < 2; k++) {
      char *canon = json_dumps(j, flags[k] | JSON_ENCODE_ANY);
      verdict_t c;
      CHECK(canon);
      judge(canon, strlen(canon), &c, NULL);
      /* The text's own line numbers only show in JSON errors, and
       * jansson took both texts. */
      same_verdict(&v, &c);
      free(c.dump);
      free(canon);
    }
  }
  free(v.dump);
  json_decref(j);
  return 0;
}
