/* libFuzzer target: `taskfs serve`'s request path, from the bytes a client
 * sends to what the server answers. Each input is one client's whole side
 * of a connection (a request, pipelined requests, garbage, half a
 * request), written into a socketpair whose other end the HTTP server
 * serves (http_server_add_connection), exactly as it serves an accepted
 * TCP connection: libmicrohttpd parses it, then the gates (Host, Origin,
 * the token, header and body limits), the route table, and at /mcp the
 * Streamable HTTP rules of both revisions and the one MCP dispatcher over
 * an empty store (made once per process). Invariants: whatever comes back
 * is HTTP answers (each starting "HTTP/1.1 NNN" with a status from 100 to
 * 599), the server never holds a connection whose client has left, and no
 * task is ever made. An input naming start_managed_task or A2A's
 * SendMessage (SendStreamingMessage) is skipped: a start would fork
 * supervisors; and should one get through anyway (a method name spelled
 * with JSON escapes), TASKFS_SUPERVISOR_EXE names no program, so no
 * command ever runs (the invariant then reports the task). At /a2a the
 * A2A JSON-RPC envelope and its read methods are reached the same way.
 * The server answers to Host
 * 127.0.0.1:7077 and the token of 40 'a's (the seeds use both). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz/check.h"
#include "http/http.h"
#include "mcp/mcp.h"


static uv_loop_t loop;
static live_hub_t *hub;
static mcp_server_t *mcp;
static http_server_t *http;
static char dir[] = "/tmp/taskfs-fuzz-http-XXXXXX";

static void server_once(void) {
  if (http)
    return;
  CHECK(mkdtemp(dir));
  setenv("TASKFS_SUPERVISOR_EXE", "/nonexistent/taskfs-fuzz-never-runs", 1);
  CHECK(uv_loop_init(&loop) == 0);
  /* As `taskfs serve` does: the hub, and on it the MCP and HTTP servers. */
  live_config_t lc = {.loop = &loop, .state_dir = dir, .name = "fuzz_http"};
  CHECK(live_hub_open(&lc, &hub) == 0);
  mcp_server_config_t mc = {.hub = hub, .role = "fuzz"};
  CHECK(mcp_server_open(&mc, &mcp) == 0);
  http_server_config_t hc = {.hub = hub,
                             .mcp = mcp,
                             .token = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                             .listen_fd = -1,
                             .host = "127.0.0.1",
                             .port = 7077};
  char why[600];
  if (http_server_start(&hc, &http, why, sizeof why)) {
    fprintf(stderr, "fuzz_http: %s\n", why);
    abort();
  }
}

/* Each answer in what the server sent starts with a status line. */
static void check_answers(const char *out, size_t len) {
  if (!len)
    return; /* closed without a word: what MHD does with a line it cannot read */
  CHECK(len >= 12 && !memcmp(out, "HTTP/1.1 ", 9));
  int status = atoi(out + 9);
  CHECK(status >= 100 && status <= 599);
}

/* Runs the loop until the server has nothing more to say (the connection
 * closed, or nothing new for a while: a held request, a stream). */
static size_t pump(int fd, char **out, size_t *cap) {
  size_t len = 0;
  int idle = 0;
  for (int i = 0; i < 4000 && idle < 60; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    if (len + 4096 > *cap)
      *out = realloc(*out, *cap = *cap * 2 + 8192);
    ssize_t n = recv(fd, *out + len, *cap - len - 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
      break;
    if (n > 0) {
      len += (size_t)n;
      idle = 0;
    } else {
      idle++;
    }
  }
  (*out)[len] = '\0';
  return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  server_once();
  if (memmem(data, size, "start_managed_task", 18) || memmem(data, size, "SendMessage", 11) ||
      memmem(data, size, "SendStreamingMessage", 20))
    return 0;
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  CHECK(http_server_add_connection(http, sv[1]) == 0);
  /* The input in pieces, as a network delivers it. */
  size_t off = 0;
  static char *out;
  static size_t cap;
  size_t total = 0;
  if (!out)
    out = malloc(cap = 65536);
  while (off < size) {
    ssize_t n = send(sv[0], data + off, size - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0)
      off += (size_t)n;
    else if (n < 0 && errno != EAGAIN)
      break;
    uv_run(&loop, UV_RUN_NOWAIT);
  }
  total = pump(sv[0], &out, &cap);
  check_answers(out, total);
  /* The client leaves: the server lets go of the connection. */
  close(sv[0]);
  for (int i = 0; i < 4000 && http_server_connections(http); i++)
    uv_run(&loop, UV_RUN_NOWAIT);
  CHECK(http_server_connections(http) == 0);
  /* No task was made. */
  char tasks[64];
  struct stat st;
  snprintf(tasks, sizeof tasks, "%s/tasks", dir);
  if (!stat(tasks, &st) && S_ISDIR(st.st_mode)) {
    CHECK(st.st_nlink == 2);
  }
  return 0;
}
