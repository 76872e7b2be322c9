/* `taskfs serve` for the C tests (tests/helpers/serve.c): the real binary
 * in the foreground on a port the kernel picks, and raw HTTP to it, so
 * that a test can send what no HTTP client library would (garbage, half a
 * request, a body that never ends). */
#ifndef TASKFS_TESTS_SERVE_H
#define TASKFS_TESTS_SERVE_H

#include <stddef.h>
#include <sys/types.h>

typedef struct {
  char *dir;   /* the test's temp dir: store/, serve.out, serve.err */
  char *store; /* dir/store */
  pid_t pid;
  int port;
  char token[300];
} ts_serve_t;

/* Starts `taskfs serve --foreground --listen 127.0.0.1:0 --state-dir
 * DIR/store` plus args (NULL-terminated, may be NULL), with env entries
 * ("NAME=value", NULL-terminated, may be NULL) added; returns once it
 * printed its login line (the test fails if it does not come up). store
 * may name an existing store directory, else one is made in a fresh dir. */
void ts_serve_start(ts_serve_t *s, const char *store, const char *const *args,
                    const char *const *env);
/* SIGTERM, then waits; returns the exit status (128+N for a signal). Frees
 * the paths; removes the temp dir when it made it. */
int ts_serve_stop(ts_serve_t *s);

/* A connected TCP socket to 127.0.0.1:port (the test fails otherwise). */
int ts_connect(int port);
/* Reads what the server sends until it closes the connection or timeout_ms
 * passes with nothing; returns the bytes (malloc'ed, NUL-terminated). */
char *ts_read_all(int fd, int timeout_ms);
/* 1 once the server closed fd (EOF or a reset), polling up to timeout_ms. */
int ts_closed_by_server(int fd, int timeout_ms);
/* Sends raw bytes on a fresh connection and reads the whole answer
 * (the request should say "Connection: close"). Returns the answer. */
char *ts_raw(int port, const char *data, size_t len);
/* The status code of an HTTP answer, or -1. */
int ts_status(const char *answer);
/* The value of a header of an answer (malloc'ed), or NULL. */
char *ts_answer_header(const char *answer, const char *name);
/* The body of an answer (a pointer into it), or "". */
const char *ts_body(const char *answer);

/* POST /mcp with the usual MCP headers (Host, Content-Type, Accept, the
 * bearer token unless token is NULL) plus extra header lines ("Name:
 * value\r\n"..., may be NULL), and body. Returns the whole answer. */
char *ts_post_mcp(const ts_serve_t *s, const char *token, const char *extra, const char *body);
/* A request of any method and path with Host and Connection: close, plus
 * extra header lines and an optional body. */
char *ts_request(const ts_serve_t *s, const char *method, const char *path, const char *extra,
                 const char *body);

/* An SSE stream: GET path over HTTP/1.0 with the bearer token (plus extra
 * header lines, may be NULL), so that it comes unchunked until the server
 * closes it and a needle is never cut by a chunk header. */
typedef struct {
  int fd;
  char *buf; /* what came, NUL-terminated */
  size_t len, cap;
} ts_stream_t;
void ts_stream_open(ts_stream_t *st, const ts_serve_t *s, const char *path, const char *extra);
/* Reads until needle is in what came (1), the stream ends or 20 s (times
 * tu_slow()) pass with nothing (0). */
int ts_stream_until(ts_stream_t *st, const char *needle);
void ts_stream_close(ts_stream_t *st);

#endif
