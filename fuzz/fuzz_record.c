/* libFuzzer target: the record loader. Any bytes given to tfs_record_parse()
 * must either be refused with TFS_ECORRUPT or give a record that dumps to
 * JSON which parses again to the same dump (a record that loads must
 * survive being saved). Run: make fuzz (see docs/security.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/taskfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tfs_record_t rec, again;
  char err[256];
  /* tfs_record_parse() initializes rec itself (and frees it on failure). */
  int rc = tfs_record_parse((const char *)data, size, &rec, err, sizeof err);
  if (rc < 0) {
    if (rc != TFS_ECORRUPT) {
      fprintf(stderr, "tfs_record_parse returned %d (%s), want 0 or TFS_ECORRUPT\n", rc,
              tfs_strerror(rc));
      abort();
    }
    return 0;
  }
  /* The loaded record keeps its own promises. */
  if (!tfs_id_valid(rec.id) || (rec.key[0] && !tfs_key_valid(rec.key))) {
    fprintf(stderr, "a record with an invalid id or key loaded: '%s' '%s'\n", rec.id, rec.key);
    abort();
  }
  char *dump = tfs_record_dump(&rec);
  if (!dump) {
    fprintf(stderr, "a record that parsed does not dump\n");
    abort();
  }
  rc = tfs_record_parse(dump, strlen(dump), &again, err, sizeof err);
  if (rc < 0) {
    fprintf(stderr, "the dump of a parsed record does not parse: %s\n%s\n", err, dump);
    abort();
  }
  char *dump2 = tfs_record_dump(&again);
  if (!dump2 || strcmp(dump, dump2)) {
    fprintf(stderr, "dump(parse(dump(r))) != dump(r):\n%s\n%s\n", dump, dump2 ? dump2 : "(null)");
    abort();
  }
  free(dump);
  free(dump2);
  tfs_record_free(&again);
  tfs_record_free(&rec);
  return 0;
}
