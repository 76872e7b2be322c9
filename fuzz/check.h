/* What every fuzz target shares: CHECK aborts on a broken invariant, so
 * that libFuzzer counts it as a crash and keeps the input. */
#ifndef TASKFS_FUZZ_CHECK_H
#define TASKFS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "invariant failed: %s (line %d)\n", #c, __LINE__);                           \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#endif /* TASKFS_FUZZ_CHECK_H */
