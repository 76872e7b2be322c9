/* The record codec's two entry points: a record to record.json text and
 * back, by the field table (core/record_fields.c). They sit above the
 * table, which sits above its custom rows (core/record_custom.c), which
 * sit above the writer's and reader's primitives (core/record_dump.c,
 * core/record_parse.c): each file calls only the ones below it.
 *
 * The text is read by core's strict JSON reader (core/json.c: no tree, no
 * allocation per value), which is what makes loading 100,000 records fast.
 * Whatever it refuses goes to jansson: invalid JSON gets jansson's message,
 * and valid JSON the reader does not take on (a real number, an escaped
 * key, deep nesting, a huge integer) is printed back by jansson in its
 * canonical compact form and read from that, so both roads accept the same
 * documents and give the same record. */
#include "core/record_codec.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

char *tfs_record_dump(const tfs_record_t *rec) {
  jw_t w = {0};
  tfs__jw_open(&w, '{');
  tfs__jw_fields(&w, tfs__record_fields, rec);
  tfs__jw_close(&w, '}');
  /* A trailing newline makes `cat record.json` friendly. */
  tfs__jw_put(&w, "\n", 1);
  return tfs_buf_take(&w.b, NULL);
}

/* The jansson road: its verdict on the text, and for valid JSON its
 * canonical compact form, which the reader takes in full. */
static int parse_canonical(const char *json, size_t len, rf_reader_t *p, tfs__jdoc_t *d,
                           char **canon) {
  json_error_t jerr;
  /* JSON_ALLOW_NUL: an escaped NUL from another writer must not make the
   * whole record unreadable; C strings simply end there. */
  json_t *j = json_loadb(json, len, JSON_ALLOW_NUL, &jerr);
  if (!j) {
    if (p->err && p->errlen)
      snprintf(p->err, p->errlen, "record.json: line %d: %s", jerr.line, jerr.text);
    return TFS_ECORRUPT;
  }
  *canon = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!*canon)
    return -ENOMEM;
  return tfs__json_parse(*canon, strlen(*canon), 0, d) ? tfs__rf_bad(p, "(top)", "unreadable") : 0;
}

int tfs_record_parse(const char *json, size_t len, tfs_record_t *rec, char *err, size_t errlen) {
  tfs__jdoc_t d;
  rf_reader_t p = {err, errlen, &d};
  char *canon = NULL;
  tfs_record_init(rec);
  if (err && errlen)
    err[0] = '\0';
  if (len > TFS_RECORD_MAX) {
    tfs__rf_bad(&p, "(top)", "record larger than 4 MiB");
    tfs_record_free(rec);
    return TFS_ECORRUPT;
  }
  int e = 0;
  if (tfs__json_parse(json, len, 1, &d)) {
    tfs__json_free(&d);
    e = parse_canonical(json, len, &p, &d, &canon);
  }
  if (!e)
    e = tfs__rf_type(&p, 0) == TFS__J_OBJ ? tfs__rf_fields(&p, 0, tfs__record_fields, rec)
                                          : tfs__rf_bad(&p, "(top)", "expected an object");
  tfs__json_free(&d);
  free(canon);
  if (e)
    tfs_record_free(rec);
  return e;
}
