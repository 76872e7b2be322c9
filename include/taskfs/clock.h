/* taskfs: time as the store keeps it, milliseconds since the Unix epoch,
 * and its one written form (core/timefmt.c; included by taskfs.h). */
#ifndef TASKFS_CLOCK_H
#define TASKFS_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Time: milliseconds since the Unix epoch. */
int64_t tfs_now_ms(void);
/* Formats ms as RFC 3339 UTC with milliseconds: 2026-11-30T01:50:08.123Z.
 * buf must hold TFS_TIME_BUF bytes. */
#define TFS_TIME_BUF 32
char *tfs_time_format(int64_t ms, char buf[TFS_TIME_BUF]);
/* ms as the local time, to the second, the way people read it and --at
 * is written: "2026-12-01 18:04:05". Returns buf. */
char *tfs_time_format_local(int64_t ms, char buf[TFS_TIME_BUF]);
int tfs_time_parse(const char *s, int64_t *ms);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_CLOCK_H */
