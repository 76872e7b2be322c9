/* libFuzzer target: the MCP server's input framing and text hygiene
 * (mcp/text.c). The dispatcher (mcp_dispatch_text in mcp/dispatch.c)
 * needs an open server over a store, so this target
 * covers what stands between stdin and it: the bounded line splitter, fed
 * the input in fuzzer-chosen chunk sizes, must deliver exactly the lines a
 * naive split gives (a trailing '\r' dropped), report each line longer than
 * the limit once with its length and never buffer more than the limit; and
 * the sanitiser every transcript line passes before it goes into JSON must
 * give NUL-free valid UTF-8 (jansson accepts it) within its size bound.
 * Each message-sized line is also parsed the way the server parses one
 * (json_loadb, no flags), to keep jansson itself under the sanitizers. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "invariant failed: %s (line %d)\n", #c, __LINE__);                           \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

typedef struct {
  const char *in; /* the whole input after the header bytes */
  size_t inlen;
  size_t pos; /* where the next expected line starts */
  size_t limit;
  size_t ndelivered;
  size_t maxclean;
} ctx_t;

static void check_clean(const char *s, size_t len, size_t max) {
  char *c = mcp_text_clean(s, len, max);
  CHECK(c);
  size_t n = strlen(c);
  /* Each byte kept becomes at most 3, plus the cut marker. */
  CHECK(n <= (max && len > max ? max : len) * 3 + 64);
  json_t *j = json_stringn(c, n);
  CHECK(j); /* valid UTF-8, or jansson would refuse it */
  json_decref(j);
  free(c);
}

static void on_line(void *arg, const char *line, size_t len, size_t oversize) {
  ctx_t *c = arg;
  CHECK(c->pos <= c->inlen);
  const char *start = c->in + c->pos;
  const char *nl = memchr(start, '\n', c->inlen - c->pos);
  size_t want = nl ? (size_t)(nl - start) : c->inlen - c->pos;
  if (line == NULL) {
    CHECK(oversize == want);
    CHECK(want > c->limit);
  } else {
    CHECK(oversize == 0);
    size_t w = want;
    if (w && start[w - 1] == '\r')
      w--;
    CHECK(want <= c->limit);
    CHECK(len == w && memcmp(line, start, len) == 0);
    check_clean(line, len, c->maxclean);
    json_error_t e;
    json_t *j = json_loadb(line, len, 0, &e);
    json_decref(j);
  }
  c->pos += want + (nl ? 1 : 0);
  c->ndelivered++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  ctx_t c = {(const char *)data + 3,   size - 3, 0,
             (size_t)data[0] * 16 + 1, 0,        (size_t)data[1] % 128};
  size_t chunk = (size_t)data[2] + 1;
  mcp_lines_t l;
  mcp_lines_init(&l, c.limit);
  for (size_t off = 0; off < c.inlen; off += chunk) {
    size_t n = c.inlen - off < chunk ? c.inlen - off : chunk;
    CHECK(mcp_lines_feed(&l, c.in + off, n, on_line, &c) == 0);
    CHECK(l.len <= c.limit);
  }
  mcp_lines_finish(&l, on_line, &c);
  CHECK(c.pos == c.inlen);
  mcp_lines_free(&l);
  return 0;
}
