/* `taskfs serve` and who can connect to it. Issue 26.6: `localhost` may
 * resolve to ::1 as well as 127.0.0.1, so a server on 127.0.0.1 also holds
 * [::1] at its port, or refuses the name localhost when another process
 * holds it. Issue 26.2 (docs/serve.md "Limits"): connections that have not
 * shown the token: another local user who opens thousands
 * of idle connections must not starve the owner. Those connections have
 * a budget of their own (the oldest is dropped for a new one, never an
 * authenticated one) and a short deadline for their header. Verdicts are
 * what is answered and what is closed, each with a generous bound; the
 * owner's latency beside 4,100 idle sockets is a bench figure
 * (bench/serve_idle.sh), not a verdict here. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/helpers/serve.h"
#include "tests/helpers/testutil.h"

TestSuite(serve_conns, .timeout = 300);

enum { IDLE = 4100 };

#define LIST                                                                                       \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":{"                \
  "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                    \
  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}"

/* The owner's request: tools/list with the token, answered 200. */
static void owner_is_served(const ts_serve_t *s) {
  char *a = ts_post_mcp(s, s->token,
                        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n", LIST);
  cr_assert_eq(ts_status(a), 200, "the owner's request was not answered: %.300s", a);
  free(a);
}

/* 1 while the server has not closed fd (nothing to read, no hang-up). */
static int still_open(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 0) == 0;
}

Test(serve_conns, thousands_of_idle_connections_never_starve_the_owner) {
  struct rlimit rl;
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur < IDLE + 200) {
    rl.rlim_cur = rl.rlim_max < IDLE + 200 ? rl.rlim_max : IDLE + 200;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < IDLE + 200)
    cr_skip_test("RLIMIT_NOFILE's hard limit is %llu: %d idle sockets need more",
                 (unsigned long long)rl.rlim_max, IDLE);
  /* Long deadlines: only the budget can make room here. */
  const char *env[] = {"TASKFS_SERVE_TIMEOUT_MS=600000", "TASKFS_SERVE_HEADER_TIMEOUT_MS=600000",
                       NULL};
  ts_serve_t s;
  ts_serve_start(&s, NULL, NULL, env);
  owner_is_served(&s);
  int *fds = calloc(IDLE, sizeof *fds);
  for (int i = 0; i < IDLE; i++)
    fds[i] = ts_connect(s.port);
  /* The owner, beside them, is answered (on main it waited in the
   * kernel's backlog until idle connections timed out). */
  owner_is_served(&s);
  owner_is_served(&s);
  /* The oldest idle ones made room; the newest are still held (their
   * deadline is far off), so nothing but the budget closed them. */
  int closed = 0;
  for (int i = 0; i < 100; i++)
    closed += ts_closed_by_server(fds[i], 30000);
  cr_expect_eq(closed, 100, "only %d of the 100 oldest idle connections were closed", closed);
  cr_expect(still_open(fds[IDLE - 1]), "the newest idle connection was closed");
  for (int i = 0; i < IDLE; i++)
    close(fds[i]);
  free(fds);
  owner_is_served(&s);
  cr_expect_eq(ts_serve_stop(&s), 0);
}

/* Reads one answer of a keep-alive connection: its header block and a
 * Content-Length body. */
static char *read_answer(int fd) {
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    buf[len] = '\0';
    const char *end = strstr(buf, "\r\n\r\n");
    if (end) {
      char *cl = ts_answer_header(buf, "Content-Length");
      size_t want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl, NULL, 10) : 0);
      free(cl);
      if (len >= want)
        return buf;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (len + 1 >= cap || poll(&p, 1, 30000) <= 0)
      return buf;
    ssize_t n = read(fd, buf + len, cap - len - 1);
    if (n <= 0)
      return buf;
    len += (size_t)n;
  }
}

Test(serve_conns, a_connection_without_the_token_has_seconds_for_its_header) {
  const char *env[] = {"TASKFS_SERVE_TIMEOUT_MS=600000", NULL};
  ts_serve_t s;
  ts_serve_start(&s, NULL, NULL, env);
  /* An authenticated keep-alive connection, then idle. */
  int owner = ts_connect(s.port);
  char req[1000];
  int n =
      snprintf(req, sizeof req,
               "GET /api/tasks HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n\r\n",
               s.port, s.token);
  cr_assert_eq(write(owner, req, (size_t)n), n);
  char *a = read_answer(owner);
  cr_assert_eq(ts_status(a), 200, "%.300s", a);
  free(a);
  /* Without the token: one that sends nothing, one that sends half a
   * header. */
  int idle = ts_connect(s.port), half = ts_connect(s.port);
  static const char part[] = "GET /api/tasks HTTP/1.1\r\nHost: 127.0";
  cr_assert_eq(write(half, part, sizeof part - 1), (ssize_t)sizeof part - 1);
  /* Both go after the header deadline (5 s), long before the request
   * timeout (600 s here). */
  cr_expect(ts_closed_by_server(idle, 120000), "an idle connection without a token was kept");
  cr_expect(ts_closed_by_server(half, 120000), "half a header without a token was kept");
  close(idle);
  close(half);
  /* The owner's connection, idle as long, is still there and serves. */
  cr_expect(still_open(owner), "the authenticated connection was closed");
  cr_assert_eq(write(owner, req, (size_t)n), n);
  a = read_answer(owner);
  cr_expect_eq(ts_status(a), 200, "%.300s", a);
  free(a);
  close(owner);
  cr_expect_eq(ts_serve_stop(&s), 0);
}

/* ---- localhost (issue 26.6) ---------------------------------------------- */

/* A listening socket on [::1]:port (0: any), or -1 when this machine has
 * no IPv6 loopback. */
static int listen6(int port, int *got) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
                            .sin6_port = htons((uint16_t)port),
                            .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 8)) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  socklen_t len = sizeof sa;
  getsockname(fd, (struct sockaddr *)&sa, &len);
  *got = ntohs(sa.sin6_port);
  return fd;
}

/* GET /api/tasks with the token and Host: NAME:port, over IPv6 (v6) or
 * IPv4 loopback; the answer, or "" when nothing listens there. */
static char *get_as(const ts_serve_t *s, int v6, const char *name) {
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6,
                             .sin6_port = htons((uint16_t)s->port),
                             .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  struct sockaddr_in sa4 = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)s->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int ok = v6 ? connect(fd, (struct sockaddr *)&sa6, sizeof sa6)
              : connect(fd, (struct sockaddr *)&sa4, sizeof sa4);
  if (ok) {
    cr_log_info("connect over IPv%d: %s", v6 ? 6 : 4, strerror(errno));
    close(fd);
    return strdup("");
  }
  char req[1000];
  int n = snprintf(req, sizeof req,
                   "GET /api/tasks HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer "
                   "%s\r\nConnection: close\r\n\r\n",
                   name, s->port, s->token);
  cr_assert_eq(write(fd, req, (size_t)n), n);
  char *a = ts_read_all(fd, 30000);
  close(fd);
  return a;
}

#define EXPECT_GET(s, v6, name, status)                                                            \
  do {                                                                                             \
    char *a_ = get_as(s, v6, name);                                                                \
    cr_expect_eq(ts_status(a_), status, "Host %s over IPv%d: %.300s", name, v6 ? 6 : 4, a_);       \
    free(a_);                                                                                      \
  } while (0)

Test(serve_conns, localhost_reaches_this_server_on_both_loopbacks_or_is_refused) {
  int port6 = 0, probe = listen6(0, &port6);
  int v6 = probe >= 0;
  if (v6)
    close(probe);
  ts_serve_t s;
  ts_serve_start(&s, NULL, NULL, NULL);
  EXPECT_GET(&s, 0, "127.0.0.1", 200);
  EXPECT_GET(&s, 0, "localhost", 200);
  if (v6) {
    /* A browser that resolves localhost to ::1 reaches this server too. */
    EXPECT_GET(&s, 1, "localhost", 200);
    EXPECT_GET(&s, 1, "[::1]", 200);
  }
  cr_expect_eq(ts_serve_stop(&s), 0);
  if (!v6) {
    cr_log_warn("no IPv6 loopback here: nobody can hold [::1], localhost is this server's");
    return;
  }
  /* Another process holds [::1] at the port: localhost would reach it, so
   * the name is refused (421, saying why) and the log says so. */
  int port = 0, hold = listen6(0, &port);
  cr_assert(hold >= 0);
  char listen[64];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
  const char *args[] = {"--listen", listen, NULL};
  ts_serve_start(&s, NULL, args, NULL);
  EXPECT_GET(&s, 0, "127.0.0.1", 200);
  char *a = get_as(&s, 0, "localhost");
  cr_expect_eq(ts_status(a), 421, "%.300s", a);
  cr_expect(strstr(ts_body(a), "::1"), "the refusal says why: %.300s", a);
  free(a);
  char path[4200];
  snprintf(path, sizeof path, "%s/serve.err", s.dir);
  char *err = tu_read_file(path, NULL);
  cr_expect(err && strstr(err, "[::1]"), "the log says why: %s", err);
  free(err);
  cr_expect_eq(ts_serve_stop(&s), 0);
  close(hold);
}
