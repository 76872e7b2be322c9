/* libFuzzer target: untilPattern's matcher (mcp/pattern.c). The input is
 * a pattern, a newline and a line (no newline: the whole input is the
 * pattern, matched against an empty line). The pattern is compiled within the server's default
 * limits (a length cap, its memory, the GNU-escape check), then matched against the line, its first
 * MCP_UNTIL_LINE_MAX bytes, as until.c does it: the compile either succeeds or says why (a message,
 * never a crash), a match is 1, 0 or -1 with the limit named, and a pattern longer than the cap is
 * always refused. With ASan and UBSan (aborting): no read outside the pattern or the line, no leak
 * of what PCRE2 allocated through the pattern's own allocator. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"
#include "fuzz/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mcp_limits_t lim;
  mcp_limits_resolve(NULL, &lim);
  const uint8_t *nl = memchr(data, '\n', size);
  size_t plen = nl ? (size_t)(nl - data) : size;
  size_t llen = nl ? size - plen - 1 : 0;
  /* Copies of their own, so that ASan sees a read past either end. */
  char *pat = malloc(plen + 1), *line = malloc(llen + 1);
  CHECK(pat && line);
  memcpy(pat, data, plen);
  pat[plen] = 0;
  memcpy(line, data + plen + (nl ? 1 : 0), llen);
  line[llen] = 0;
  if (llen > MCP_UNTIL_LINE_MAX)
    llen = MCP_UNTIL_LINE_MAX;
  char msg[600] = "";
  mcp_pattern_t *p = NULL;
  int rc = mcp_pattern_compile(pat, plen, &lim, &p, msg, sizeof msg);
  CHECK(rc == 0 || rc == -1);
  CHECK(rc == 0 ? p != NULL : (p == NULL && msg[0]));
  CHECK(plen <= lim.pattern_max || rc == -1);
  if (p) {
    mcp_matcher_t *m = mcp_matcher_new(p);
    CHECK(m);
    msg[0] = 0;
    int mr = mcp_pattern_match(p, m, line, llen, msg, sizeof msg);
    CHECK(mr == 1 || mr == 0 || (mr == -1 && msg[0]));
    mcp_matcher_free(m);
    mcp_pattern_free(p);
  }
  free(pat);
  free(line);
  return 0;
}
