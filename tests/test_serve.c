/* `taskfs serve`, what HTTP adds (docs/serve.md, docs/security.md "HTTP"):
 * the token on every request (no cookie is one), the Host and Origin
 * checks, and hostile input (garbage, bodies too large or never ending,
 * wrong media types, stolen session ids), each answered with a 4xx and a
 * reason while nothing reaches the store and the server keeps serving.
 * Raw sockets and curl against the real binary. The MCP conversation
 * itself is tested with the SDK clients (tests/mcp*, HTTP variants). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/helpers/serve.h"
#include "tests/helpers/testutil.h"

static ts_serve_t S;
static const char *const short_timeout[] = {"TASKFS_SERVE_TIMEOUT_MS=2000", NULL};

static void setup(void) {
  ts_serve_start(&S, NULL, NULL, short_timeout);
}

static void teardown(void) {
  int code = ts_serve_stop(&S);
  cr_expect_eq(code, 0, "taskfs serve exited %d on SIGTERM", code);
}

TestSuite(serve, .init = setup, .fini = teardown, .timeout = 120);

#define INIT                                                                                       \
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"       \
  "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"
#define LIST_MODERN                                                                                \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":{"                \
  "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                    \
  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}"
#define MODERN_HDRS "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"

/* Asserts the status of an answer, then frees it. */
#define EXPECT_STATUS(answer, code, ...)                                                           \
  do {                                                                                             \
    char *a_ = (answer);                                                                           \
    cr_expect_eq(ts_status(a_), code, __VA_ARGS__);                                                \
    cr_log_info("%.300s", a_);                                                                     \
    free(a_);                                                                                      \
  } while (0)

/* The server still answers a good request. */
static void still_serving(void) {
  char *a = ts_post_mcp(&S, S.token, MODERN_HDRS, LIST_MODERN);
  cr_assert_eq(ts_status(a), 200, "the server stopped serving: %s", a);
  cr_assert(strstr(ts_body(a), "start_managed_task"), "%s", a);
  free(a);
}

/* No task was made: tasks/ is absent or empty. */
static void store_untouched(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/tasks", S.store);
  DIR *d = opendir(path);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)))
    cr_expect(e->d_name[0] == '.', "a task appeared in the store: %s", e->d_name);
  closedir(d);
}

Test(serve, the_token_is_made_once_private_and_never_printed_to_a_log) {
  char path[4200];
  snprintf(path, sizeof path, "%s/serve.token", S.store);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0600, "serve.token has mode %o", st.st_mode & 0777);
  cr_expect_eq(strlen(S.token), 64, "token: %s", S.token);
  cr_expect_eq(strspn(S.token, "0123456789abcdef"), 64);
  snprintf(path, sizeof path, "%s/serve.out", S.dir);
  char *out = tu_read_file(path, NULL);
  char login[200];
  snprintf(login, sizeof login, "log in:       http://127.0.0.1:%d/#token=", S.port);
  cr_expect(strstr(out, login), "%s", out);
  cr_expect(!strstr(out, S.token), "a foreground server on a log printed its token: %s", out);
  free(out);
  /* A second server on the store uses the same token. */
  ts_serve_t b;
  ts_serve_start(&b, S.store, NULL, NULL);
  cr_expect_str_eq(b.token, S.token);
  /* (Its stop removes its own temp dir; the shared store stays.) */
  cr_expect_eq(ts_serve_stop(&b), 0);
}

Test(serve, every_request_needs_the_token) {
  char *a = ts_post_mcp(&S, NULL, NULL, INIT);
  cr_expect_eq(ts_status(a), 401, "%s", a);
  /* Issue 29.5: the 401 says where the token is and how to send it, and
   * its challenge is no Bearer one, which MCP clients take for OAuth. */
  char path[4200];
  snprintf(path, sizeof path, "%s/serve.token", S.store);
  cr_expect(strstr(ts_body(a), path), "the 401 names %s: %s", path, a);
  cr_expect(strstr(ts_body(a), "Authorization: Bearer"), "%s", a);
  char *www = ts_answer_header(a, "WWW-Authenticate");
  cr_expect(www && strncasecmp(www, "Bearer", 6),
            "a Bearer challenge starts OAuth in MCP clients: %s", a);
  free(www);
  free(a);
  char wrong[400];
  snprintf(wrong, sizeof wrong, "%s", S.token);
  wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
  EXPECT_STATUS(ts_post_mcp(&S, wrong, NULL, INIT), 401, "a wrong token of the right length");
  EXPECT_STATUS(ts_post_mcp(&S, "short", NULL, INIT), 401, "a short token");
  EXPECT_STATUS(ts_request(&S, "GET", "/api/tasks", NULL, NULL), 401, "the API without the token");
  EXPECT_STATUS(ts_post_mcp(&S, S.token, NULL, INIT), 200, "the right token");
  store_untouched();
}

/* 1 if an answer sets a cookie. */
static int sets_cookie(const char *a) {
  char *c = ts_answer_header(a, "Set-Cookie");
  free(c);
  return c != NULL;
}

/* Issue 26.1: a browser sends a cookie to every port of a host, so
 * another local user's server on 127.0.0.1:OTHER would get it. No cookie
 * is a credential: the login URL sets none, and a request that carries
 * only the cookie (from our own page, as a browser would mark it) gets
 * 401 on every route that holds anything. */
Test(serve, no_cookie_is_a_credential_on_any_route) {
  char path[400];
  snprintf(path, sizeof path, "/?token=%s", S.token);
  char *a = ts_request(&S, "GET", path, NULL, NULL);
  cr_assert_eq(ts_status(a), 200, "%s", a);
  cr_expect(!sets_cookie(a), "the login URL set a cookie: %.400s", a);
  cr_expect(strstr(ts_body(a), "/static/app.js"), "the login URL is the viewer's page: %.400s", a);
  char *ref = ts_answer_header(a, "Referrer-Policy");
  cr_expect(ref && !strcmp(ref, "no-referrer"));
  free(ref);
  free(a);
  char hdr[800];
  snprintf(hdr, sizeof hdr,
           "Cookie: taskfs_token=%s\r\nSec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: "
           "cors\r\nOrigin: http://127.0.0.1:%d\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\n",
           S.token, S.port);
  static const struct {
    const char *method, *path, *body;
  } routes[] = {
      {"GET", "/api/tasks", NULL},
      {"GET", "/api/events", NULL},
      {"GET", "/api/tasks/0123456789abcdef", NULL},
      {"GET", "/api/tasks/0123456789abcdef/transcript", NULL},
      {"GET", "/api/tasks/0123456789abcdef/transcript?follow=1", NULL},
      {"POST", "/api/tasks/0123456789abcdef/cancel", ""},
      {"POST", "/mcp", INIT},
      {"GET", "/mcp", NULL},
      {"DELETE", "/mcp", NULL},
      {"POST", "/a2a", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{}}"},
  };
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    a = ts_request(&S, routes[i].method, routes[i].path, hdr, routes[i].body);
    cr_expect_eq(ts_status(a), 401, "%s %s with only the cookie: %.300s", routes[i].method,
                 routes[i].path, a);
    cr_expect(!sets_cookie(a), "%.300s", a);
    free(a);
  }
  /* The viewer's own files hold nothing of the store: they come without a
   * token (a browser's navigation cannot send one), and set no cookie. */
  static const char *const pub[] = {"/", "/static/app.js", "/static/style.css"};
  for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++) {
    a = ts_request(&S, "GET", pub[i], NULL, NULL);
    cr_expect_eq(ts_status(a), 200, "%s: %.300s", pub[i], a);
    cr_expect(!sets_cookie(a), "%.300s", a);
    free(a);
  }
  store_untouched();
}

Test(serve, host_and_origin_must_name_this_server) {
  char h[200];
  snprintf(h, sizeof h, "Host: evil.example.com:%d\r\n", S.port);
  char *req;
  int n = asprintf(&req,
                   "POST /mcp HTTP/1.1\r\nHost: evil.example.com:%d\r\nAuthorization: Bearer "
                   "%s\r\nContent-Type: application/json\r\nAccept: application/json, "
                   "text/event-stream\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                   S.port, S.token, strlen(INIT), INIT);
  char *a = ts_raw(S.port, req, (size_t)n);
  cr_expect_eq(ts_status(a), 421, "DNS rebinding: %s", a);
  cr_expect(strstr(ts_body(a), "DNS rebinding"), "%s", a);
  free(a);
  free(req);
  n = asprintf(&req, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
               S.port + 1 > 65535 ? 1 : S.port + 1);
  EXPECT_STATUS(ts_raw(S.port, req, (size_t)n), 421, "another port in Host");
  free(req);
  n = asprintf(&req, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_STATUS(ts_raw(S.port, req, (size_t)n), 400, "no Host at all (HTTP/1.1 requires one)");
  free(req);
  char o[300];
  snprintf(o, sizeof o, "Origin: http://evil.example.com\r\n");
  a = ts_post_mcp(&S, S.token, o, INIT);
  cr_expect_eq(ts_status(a), 403, "a foreign Origin: %s", a);
  cr_expect(!ts_answer_header(a, "Access-Control-Allow-Origin"), "no CORS ever");
  free(a);
  snprintf(o, sizeof o, "Origin: http://127.0.0.1:%d\r\n", S.port + 1);
  EXPECT_STATUS(ts_post_mcp(&S, S.token, o, INIT), 403, "a page of another local port");
  snprintf(o, sizeof o, "Origin: null\r\n");
  EXPECT_STATUS(ts_post_mcp(&S, S.token, o, INIT), 403, "an opaque origin");
  snprintf(o, sizeof o, "Origin: http://localhost:%d\r\n", S.port);
  EXPECT_STATUS(ts_post_mcp(&S, S.token, o, INIT), 200, "our own origin, as localhost");
  still_serving();
}

Test(serve, bad_input_gets_a_4xx_with_a_reason_and_the_server_goes_on) {
  static const char garbage[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 hello\r\n\r\n";
  EXPECT_STATUS(ts_raw(S.port, garbage, sizeof garbage - 1), 400, "a TLS hello");
  static const char junk[] = "GARBAGE GARBAGE\r\nGET / HTTP/1.1\r\n\r\n";
  EXPECT_STATUS(ts_raw(S.port, junk, sizeof junk - 1), 400, "garbage before the request line");
  /* A line without a single space is no request line at all: libmicrohttpd
   * closes the connection without a word. */
  static const char word[] = "GARBAGE\r\n\r\n";
  char *a = ts_raw(S.port, word, sizeof word - 1);
  cr_expect(ts_status(a) == 400 || !*a, "one word: %s", a);
  free(a);
  a = ts_post_mcp(&S, S.token, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,");
  cr_expect_eq(ts_status(a), 400, "invalid JSON: %s", a);
  cr_expect(strstr(ts_body(a), "-32700"), "%s", a);
  free(a);
  char *hdrs;
  cr_assert(asprintf(&hdrs,
                     "Authorization: Bearer %s\r\nContent-Type: text/plain\r\nAccept: "
                     "application/json, text/event-stream\r\n",
                     S.token) > 0);
  EXPECT_STATUS(ts_request(&S, "POST", "/mcp", hdrs, INIT), 415, "a wrong Content-Type");
  free(hdrs);
  cr_assert(asprintf(&hdrs,
                     "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     "Accept: text/html\r\n",
                     S.token) > 0);
  EXPECT_STATUS(ts_request(&S, "POST", "/mcp", hdrs, INIT), 406, "a wrong Accept");
  free(hdrs);
  EXPECT_STATUS(ts_request(&S, "GET", "/nothing-here", NULL, NULL), 404, "an unknown path");
  a = ts_request(&S, "PUT", "/mcp", NULL, "{}");
  cr_expect_eq(ts_status(a), 405, "%s", a);
  char *allow = ts_answer_header(a, "Allow");
  cr_expect(allow && strstr(allow, "POST"), "%s", a);
  free(allow);
  free(a);
  /* A header block too large, and too many header fields. */
  char *big = malloc(70000);
  memset(big, 'x', 69999);
  big[69999] = '\0';
  char *h2;
  cr_assert(asprintf(&h2, "X-Big: %s\r\n", big) > 0);
  a = ts_request(&S, "GET", "/", h2, NULL);
  cr_expect(ts_status(a) == 431 || ts_status(a) == 413 || !*a, "a 70 KB header: %.200s", a);
  free(a);
  free(h2);
  free(big);
  char many[8000] = "";
  for (int i = 0; i < 100; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "X-H%d: v\r\n", i);
  EXPECT_STATUS(ts_post_mcp(&S, S.token, many, INIT), 431, "100 header fields");
  still_serving();
  store_untouched();
}

Test(serve, a_20_MB_body_is_refused_unread) {
  char *out = NULL;
  int rc =
      tu_sh(&out,
            "head -c 20000000 /dev/zero | tr '\\0' ' ' | curl -sS -o /dev/null -w '%%{http_code}' "
            "-H 'Authorization: Bearer %s' -H 'Content-Type: application/json' "
            "-H 'Accept: application/json, text/event-stream' --data-binary @- "
            "http://127.0.0.1:%d/mcp",
            S.token, S.port);
  cr_expect(!strcmp(out, "413"), "curl exit %d, status %s", rc, out);
  free(out);
  /* The same body sent chunked (no length to refuse up front): thrown
   * away as it comes, then refused. */
  rc = tu_sh(&out,
             "head -c 20000000 /dev/zero | tr '\\0' ' ' | curl -sS -o /dev/null -w '%%{http_code}' "
             "-H 'Transfer-Encoding: chunked' -H 'Authorization: Bearer %s' "
             "-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' "
             "--data-binary @- http://127.0.0.1:%d/mcp",
             S.token, S.port);
  cr_expect(!strcmp(out, "413"), "chunked: curl exit %d, status %s", rc, out);
  free(out);
  still_serving();
  store_untouched();
}

Test(serve, a_chunked_body_that_never_ends_is_cut_off) {
  int fd = ts_connect(S.port);
  char *req;
  int n = asprintf(
      &req,
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
      "Content-Type: application/json\r\nAccept: application/json, "
      "text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"jsonrpc\":\"2.0\"\r\n",
      S.port, S.token);
  cr_assert_eq(write(fd, req, (size_t)n), n);
  free(req);
  /* Then nothing more: the request deadline (2 s here) ends it. */
  cr_expect(ts_closed_by_server(fd, 60000), "the server still holds a body that never ends");
  close(fd);
  still_serving();
  store_untouched();
}

Test(serve, sessions_belong_to_their_server_and_end_with_delete) {
  char *a = ts_post_mcp(&S, S.token, NULL, INIT);
  cr_assert_eq(ts_status(a), 200, "%s", a);
  char *sid = ts_answer_header(a, "Mcp-Session-Id");
  cr_assert(sid && strlen(sid) == 32, "%s", a);
  free(a);
  /* A session of another server (another token) is not one of ours. */
  char tf[4200];
  snprintf(tf, sizeof tf, "%s/other.token", S.dir);
  static const char other_token[] = "other-token-0123456789-0123456789-abcdef\n";
  cr_assert_eq(tu_write_file(tf, other_token, sizeof other_token - 1), 0);
  const char *args[] = {"--token-file", tf, NULL};
  ts_serve_t b;
  ts_serve_start(&b, NULL, args, NULL);
  a = ts_post_mcp(&b, b.token, NULL, INIT);
  char *stolen = ts_answer_header(a, "Mcp-Session-Id");
  cr_assert(stolen, "%s", a);
  free(a);
  char h[1000];
  snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", stolen);
  static const char list[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
  EXPECT_STATUS(ts_post_mcp(&S, S.token, h, list), 404, "a session id of another server");
  snprintf(h, sizeof h,
           "Mcp-Session-Id: %s\r\nAccept: text/event-stream\r\nAuthorization: "
           "Bearer %s\r\n",
           stolen, S.token);
  EXPECT_STATUS(ts_request(&S, "GET", "/mcp", h, NULL), 404, "another server's session stream");
  free(stolen);
  cr_expect_eq(ts_serve_stop(&b), 0);
  /* Without a session id: 400 for POST, 405 for GET (2026-07-28 is POST only). */
  EXPECT_STATUS(ts_post_mcp(&S, S.token, "MCP-Protocol-Version: 2025-11-25\r\n", list), 400,
                "a 2025-11-25 request without its session");
  snprintf(h, sizeof h, "Accept: text/event-stream\r\nAuthorization: Bearer %s\r\n", S.token);
  EXPECT_STATUS(ts_request(&S, "GET", "/mcp", h, NULL), 405, "GET without a session");
  /* Ours works, then DELETE ends it. */
  snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", sid);
  EXPECT_STATUS(ts_post_mcp(&S, S.token, h, list), 200, "our session");
  snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\nAuthorization: Bearer %s\r\n", sid, S.token);
  EXPECT_STATUS(ts_request(&S, "DELETE", "/mcp", h, NULL), 204, "DELETE ends the session");
  snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", sid);
  EXPECT_STATUS(ts_post_mcp(&S, S.token, h, list), 404, "an ended session");
  free(sid);
  still_serving();
}

Test(serve, one_get_stream_per_session) {
  char *a = ts_post_mcp(&S, S.token, NULL, INIT);
  char *sid = ts_answer_header(a, "Mcp-Session-Id");
  cr_assert(sid, "%s", a);
  free(a);
  int fd = ts_connect(S.port);
  char *req;
  int n = asprintf(&req,
                   "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                   "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n",
                   S.port, S.token, sid);
  cr_assert_eq(write(fd, req, (size_t)n), n);
  free(req);
  /* The header block, however long the server takes to send it (a read
   * until 1 s of silence came back empty on a slow machine). */
  ts_stream_t st = {.fd = fd};
  cr_expect(ts_stream_until(&st, "\r\n\r\n"), "no header block: %s", st.buf ? st.buf : "");
  char *head = st.buf ? st.buf : "";
  cr_expect_eq(ts_status(head), 200, "%s", head);
  char *ct = ts_answer_header(head, "Content-Type");
  cr_expect(ct && !strcmp(ct, "text/event-stream"), "%s", head);
  free(ct);
  free(st.buf);
  char h[1000];
  snprintf(h, sizeof h,
           "Mcp-Session-Id: %s\r\nAccept: text/event-stream\r\nAuthorization: "
           "Bearer %s\r\n",
           sid, S.token);
  EXPECT_STATUS(ts_request(&S, "GET", "/mcp", h, NULL), 409, "a second stream for the session");
  /* DELETE ends the session and its stream. */
  snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\nAuthorization: Bearer %s\r\n", sid, S.token);
  EXPECT_STATUS(ts_request(&S, "DELETE", "/mcp", h, NULL), 204, "DELETE");
  char *rest = ts_read_all(fd, 30000);
  cr_expect(strstr(rest, "0\r\n\r\n"), "the stream ends with the session: %s", rest);
  free(rest);
  close(fd);
  free(sid);
}
