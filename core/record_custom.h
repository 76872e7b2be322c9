/* The CUSTOM rows of the record.json field table (core/record_fields.c):
 * members whose shape no row type says, each a write and a read function
 * (core/record_custom.c). Private to core/. */
#ifndef TASKFS_CORE_RECORD_CUSTOM_H
#define TASKFS_CORE_RECORD_CUSTOM_H

#include "core/record_codec.h"

void tfs__rf_write_version(jw_t *w, const void *rec);
int tfs__rf_read_version(rf_reader_t *p, int obj, void *rec);
void tfs__rf_write_command_bytes(jw_t *w, const void *rec);
int tfs__rf_read_command_bytes(rf_reader_t *p, int obj, void *rec);
void tfs__rf_write_cwd_bytes(jw_t *w, const void *rec);
int tfs__rf_read_cwd_bytes(rf_reader_t *p, int obj, void *rec);
void tfs__rf_write_signal_name(jw_t *w, const void *rec);
void tfs__rf_write_exits(jw_t *w, const void *rec);
int tfs__rf_read_exits(rf_reader_t *p, int obj, void *rec);
const char *tfs__rf_from_name(int v);
int tfs__rf_from_parse(const char *s, int *out);
void tfs__rf_write_limits(jw_t *w, const void *limits);
int tfs__rf_read_limits(rf_reader_t *p, int obj, void *limits);
void tfs__rf_write_important(jw_t *w, const void *imp);
/* One kept important line as an array element: {line, kind, text}. */
void tfs__rf_write_important_line(jw_t *w, const tfs_important_line_t *l);
int tfs__rf_read_important(rf_reader_t *p, int obj, void *imp);
void tfs__rf_write_step(jw_t *w, const void *exec);

#endif
