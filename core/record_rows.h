/* Shorthands for writing rows of the record.json field table (a row is an
 * rf_field_t, core/record_codec.h says what it holds). Shared by the table
 * (core/record_fields.c) and the custom rows (core/record_custom.c), which
 * keep the rows of a restart.exits entry beside the functions that walk
 * them. Include it only in those files: the names are short. Private to
 * core/. */
#ifndef TASKFS_CORE_RECORD_ROWS_H
#define TASKFS_CORE_RECORD_ROWS_H

#include "core/record_codec.h"

#define END                                                                                        \
  { .name = NULL }
#define INT(n, t, o, l, h, fl)                                                                     \
  { .name = n, .type = t, .off = o, .lo = l, .hi = h, .flags = fl }
#define TIME(n, o)                                                                                 \
  { .name = n, .type = RF_TIME, .off = o }
#define STR(n, o, fl)                                                                              \
  { .name = n, .type = RF_STR, .off = o, .flags = fl }
#define BOOL(n, o)                                                                                 \
  { .name = n, .type = RF_BOOL, .off = o }
#define STRV(n, o, cnt)                                                                            \
  { .name = n, .type = RF_STRV, .off = o, .off2 = cnt }
#define ENUM(n, o, nm, ps, w)                                                                      \
  { .name = n, .type = RF_ENUM, .off = o, .name_of = nm, .parse = ps, .want = w }
#define OBJ(n, o, s, pr)                                                                           \
  { .name = n, .type = RF_OBJ, .off = o, .sub = s, .present = pr }
#define CUSTOM(n, wr, rd)                                                                          \
  { .name = n, .type = RF_CUSTOM, .write = wr, .read = rd }
#define I64MAX INT64_MAX
#define I32MAX INT32_MAX

#endif
