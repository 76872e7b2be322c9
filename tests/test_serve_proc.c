/* `taskfs serve` as a process (docs/serve.md): the background start that
 * reports its readiness, the refusals of its command line (beyond loopback
 * without a token of your own, a token file others can read), socket
 * activation through LISTEN_FDS (which no task inherits), and slow clients
 * that hold connections without finishing a request: they are dropped
 * after the request timeout and never keep a real client waiting. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers/serve.h"
#include "tests/helpers/testutil.h"

static char *dir;

static void setup(void) {
  dir = tu_tmpdir("serve-proc");
}

static void teardown(void) {
  tu_cleanup_dir(dir);
  free(dir);
}

TestSuite(serve_proc, .init = setup, .fini = teardown, .timeout = 180);

#define LIST_MODERN                                                                                \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":{"                \
  "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                    \
  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}"
#define MODERN_HDRS "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"

static void serves(const ts_serve_t *s) {
  char *a = ts_post_mcp(s, s->token, MODERN_HDRS, LIST_MODERN);
  cr_expect_eq(ts_status(a), 200, "%s", a);
  free(a);
}

static int gone(void *arg) {
  return kill(*(pid_t *)arg, 0) && errno == ESRCH;
}

Test(serve_proc, background_start_reports_then_logs_to_the_store) {
  char *out = NULL;
  int rc = tu_sh(&out, "'%s' serve --listen 127.0.0.1:0 --state-dir '%s/store' 2>&1",
                 tu_taskfs_bin(), dir);
  cr_assert_eq(rc, 0, "%s", out);
  ts_serve_t s = {.store = NULL};
  const char *p = strstr(out, "on http://127.0.0.1:");
  cr_assert(p, "%s", out);
  s.port = atoi(p + strlen("on http://127.0.0.1:"));
  const char *k = strstr(out, "stop it with: kill ");
  cr_assert(k, "%s", out);
  pid_t pid = atoi(k + strlen("stop it with: kill "));
  cr_assert(pid > 1);
  char path[4200];
  snprintf(path, sizeof path, "%s/store/serve.token", dir);
  char *t = tu_read_file(path, NULL);
  cr_assert(t);
  t[strcspn(t, "\n")] = '\0';
  snprintf(s.token, sizeof s.token, "%s", t);
  /* In the background the login URL with its token goes to the terminal. */
  char login[400];
  snprintf(login, sizeof login, "http://127.0.0.1:%d/#token=%s", s.port, t);
  cr_expect(strstr(out, login), "%s", out);
  free(t);
  serves(&s);
  kill(pid, SIGTERM);
  cr_assert(tu_wait_until(gone, &pid, 30000), "the server outlived SIGTERM");
  snprintf(path, sizeof path, "%s/store/serve.log", dir);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0600);
  char *log = tu_read_file(path, NULL);
  cr_expect(strstr(log, "taskfs serve: stopped"), "%s", log);
  free(log);
  free(out);
}

Test(serve_proc, the_command_line_is_refused_with_reasons) {
  char *out = NULL;
  int rc = tu_sh(&out, "'%s' serve -f --listen 0.0.0.0:0 --state-dir '%s/store' 2>&1",
                 tu_taskfs_bin(), dir);
  cr_expect_eq(rc, 100, "%s", out);
  cr_expect(strstr(out, "not a loopback address") && strstr(out, "--token-file"), "%s", out);
  free(out);
  rc = tu_sh(&out, "'%s' serve -f --listen nowhere --state-dir '%s/store' 2>&1", tu_taskfs_bin(),
             dir);
  cr_expect_eq(rc, 100, "%s", out);
  free(out);
  rc = tu_sh(&out, "'%s' serve -f extra --state-dir '%s/store' 2>&1", tu_taskfs_bin(), dir);
  cr_expect_eq(rc, 100, "%s", out);
  free(out);
  /* A token file others may read is no secret; one too short is no token. */
  char tf[4200];
  snprintf(tf, sizeof tf, "%s/token", dir);
  static const char tok[] = "a-token-of-my-own-0123456789-0123456789\n";
  cr_assert_eq(tu_write_file(tf, tok, sizeof tok - 1), 0);
  chmod(tf, 0644);
  rc = tu_sh(&out, "'%s' serve -f --token-file '%s' --state-dir '%s/store' 2>&1", tu_taskfs_bin(),
             tf, dir);
  cr_expect_eq(rc, 100, "%s", out);
  cr_expect(strstr(out, "chmod 600"), "%s", out);
  free(out);
  cr_assert_eq(tu_write_file(tf, "short\n", 6), 0);
  chmod(tf, 0600);
  rc = tu_sh(&out, "'%s' serve -f --token-file '%s' --state-dir '%s/store' 2>&1", tu_taskfs_bin(),
             tf, dir);
  cr_expect_eq(rc, 100, "%s", out);
  free(out);
  /* Errors of a background start reach the terminal too. */
  rc = tu_sh(&out, "'%s' serve --listen 0.0.0.0:0 --state-dir '%s/store' 2>&1", tu_taskfs_bin(),
             dir);
  cr_expect_eq(rc, 100, "%s", out);
  cr_expect(strstr(out, "taskfs serve: ") && strstr(out, "--token-file"), "%s", out);
  free(out);
}

Test(serve_proc, beyond_loopback_with_a_token_of_your_own) {
  char tf[4200];
  snprintf(tf, sizeof tf, "%s/token", dir);
  static const char tok[] = "a-token-of-my-own-0123456789-0123456789\n";
  cr_assert_eq(tu_write_file(tf, tok, sizeof tok - 1), 0);
  const char *args[] = {"--listen", "0.0.0.0:0", "--token-file", tf, NULL};
  ts_serve_t s;
  ts_serve_start(&s, NULL, args, NULL);
  cr_expect_str_eq(s.token, "a-token-of-my-own-0123456789-0123456789");
  serves(&s);
  cr_expect_eq(ts_serve_stop(&s), 0);
}

/* A listening socket handed over as systemd does: fd 3, LISTEN_PID,
 * LISTEN_FDS. */
static pid_t start_activated(int *port, const char *store, const char *out) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
  cr_assert_eq(listen(lfd, 64), 0);
  socklen_t len = sizeof sa;
  getsockname(lfd, (struct sockaddr *)&sa, &len);
  *port = ntohs(sa.sin_port);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(o, 1);
    dup2(o, 2);
    dup2(lfd, 3);
    char pidv[32];
    snprintf(pidv, sizeof pidv, "%d", (int)getpid());
    setenv("LISTEN_PID", pidv, 1);
    setenv("LISTEN_FDS", "1", 1);
    setenv("LISTEN_FDNAMES", "taskfs-serve.socket", 1);
    execl(tu_taskfs_bin(), tu_taskfs_bin(), "serve", "--foreground", "--state-dir", store, NULL);
    _exit(127);
  }
  close(lfd);
  return pid;
}

static int banner(void *arg) {
  char *t = tu_read_file(arg, NULL);
  int ok = t && strstr(t, "log in:");
  free(t);
  return ok;
}

Test(serve_proc, socket_activation_and_no_task_inherits_it) {
  char store[4200], out[4200], path[4300];
  snprintf(store, sizeof store, "%s/store", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  ts_serve_t s = {.store = store};
  pid_t pid = start_activated(&s.port, store, out);
  cr_assert(tu_wait_until(banner, out, 30000), "no banner");
  snprintf(path, sizeof path, "%s/serve.token", store);
  char *t = tu_read_file(path, NULL);
  t[strcspn(t, "\n")] = '\0';
  snprintf(s.token, sizeof s.token, "%s", t);
  free(t);
  serves(&s);
  /* A task started through it sees none of systemd's variables. */
  static const char call[] =
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"start_managed_task\",\"arguments\":{\"taskKey\":\"env\",\"command\":[\"sh\",\"-c\","
      "\"echo fds=${LISTEN_FDS:-none} pid=${LISTEN_PID:-none}\"],\"waitMs\":30000},\"_meta\":{"
      "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
      "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
  char *a = ts_post_mcp(&s, s.token,
                        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                        "Mcp-Name: start_managed_task\r\n",
                        call);
  cr_expect_eq(ts_status(a), 200, "%s", a);
  cr_expect(strstr(a, "fds=none pid=none"), "%s", a);
  free(a);
  kill(pid, SIGTERM);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

Test(serve_proc, slow_clients_are_dropped_and_never_delay_a_real_one) {
  enum { SLOW = 300 };
  const char *env[] = {"TASKFS_SERVE_TIMEOUT_MS=4000", NULL};
  ts_serve_t s;
  ts_serve_start(&s, NULL, NULL, env);
  int fds[SLOW];
  char half[200];
  int n =
      snprintf(half, sizeof half, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Ty", s.port);
  for (int i = 0; i < SLOW; i++) {
    fds[i] = ts_connect(s.port);
    cr_assert_eq(write(fds[i], half, (size_t)n), n);
  }
  /* A real client beside them is answered (while they are still held:
   * the request timeout is 4 s). */
  serves(&s);
  /* Then every one of them is dropped (they sent half a request and
   * stopped), and the server goes on. */
  int dropped = 0;
  for (int i = 0; i < SLOW; i++) {
    dropped += ts_closed_by_server(fds[i], 60000);
    close(fds[i]);
  }
  cr_expect_eq(dropped, SLOW, "only %d of %d slow clients were dropped", dropped, SLOW);
  /* A client that trickles a byte at a time is dropped too: its request
   * must be whole within the timeout, however busy it keeps the line. */
  int fd = ts_connect(s.port);
  int closed = 0;
  for (int i = 0; i < 200 && !closed; i++) {
    if (send(fd, "X", 1, MSG_NOSIGNAL) != 1)
      closed = 1;
    else
      closed = ts_closed_by_server(fd, 100);
  }
  cr_expect(closed, "a trickling client was never dropped");
  close(fd);
  serves(&s);
  cr_expect_eq(ts_serve_stop(&s), 0);
}
