#include "tests/helpers/serve.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers/testutil.h"

typedef struct {
  const char *out;
} banner_t;

static int banner_in(void *arg) {
  char *text = tu_read_file(((banner_t *)arg)->out, NULL);
  int ok = text && strstr(text, "log in:");
  free(text);
  return ok;
}

/* The child: stdout and stderr to files, then the binary. */
static void exec_serve(const ts_serve_t *s, const char *const *args, const char *const *env) {
  char out[4200], err[4200], *argv[40];
  snprintf(out, sizeof out, "%s/serve.out", s->dir);
  snprintf(err, sizeof err, "%s/serve.err", s->dir);
  int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600),
      e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (o < 0 || e < 0)
    _exit(127);
  /* The server goes with the test process however that ends (a crash,
   * a Criterion timeout), not only through ts_serve_stop(). */
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() == 1)
    _exit(127);
  dup2(o, 1);
  dup2(e, 2);
  for (size_t i = 0; env && env[i]; i++)
    putenv((char *)env[i]);
  int n = 0;
  argv[n++] = (char *)tu_taskfs_bin();
  argv[n++] = "serve";
  argv[n++] = "--foreground";
  argv[n++] = "--state-dir";
  argv[n++] = s->store;
  int listen = 0;
  for (size_t i = 0; args && args[i] && n < 37; i++) {
    listen |= !strcmp(args[i], "--listen");
    argv[n++] = (char *)args[i];
  }
  if (!listen) {
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
  }
  argv[n] = NULL;
  execv(argv[0], argv);
  _exit(127);
}

void ts_serve_start(ts_serve_t *s, const char *store, const char *const *args,
                    const char *const *env) {
  memset(s, 0, sizeof *s);
  s->dir = tu_tmpdir("serve");
  if (store)
    s->store = strdup(store);
  else if (asprintf(&s->store, "%s/store", s->dir) < 0)
    abort();
  s->pid = fork();
  cr_assert(s->pid >= 0);
  if (s->pid == 0)
    exec_serve(s, args, env);
  char out[4200], tok[4200];
  snprintf(out, sizeof out, "%s/serve.out", s->dir);
  banner_t b = {out};
  int up = tu_wait_until(banner_in, &b, 30000);
  char *errs = NULL;
  if (!up) {
    snprintf(tok, sizeof tok, "%s/serve.err", s->dir);
    errs = tu_read_file(tok, NULL);
  }
  cr_assert(up, "taskfs serve did not come up: %s", errs ? errs : "");
  char *text = tu_read_file(out, NULL);
  const char *p = strstr(text, "on http://127.0.0.1:");
  cr_assert(p, "no address in: %s", text);
  s->port = atoi(p + strlen("on http://127.0.0.1:"));
  free(text);
  /* The token the server uses: --token-file's, else the store's. */
  const char *tf = NULL;
  for (size_t i = 0; args && args[i]; i++)
    if (!strcmp(args[i], "--token-file") && args[i + 1])
      tf = args[i + 1];
  if (!tf)
    snprintf(tok, sizeof tok, "%s/serve.token", s->store);
  char *t = tu_read_file(tf ? tf : tok, NULL);
  cr_assert(t);
  t[strcspn(t, "\r\n")] = '\0';
  snprintf(s->token, sizeof s->token, "%s", t);
  free(t);
}

int ts_serve_stop(ts_serve_t *s) {
  int st = 0, code = -1;
  if (s->pid > 0) {
    kill(s->pid, SIGTERM);
    if (waitpid(s->pid, &st, 0) == s->pid)
      code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  s->pid = 0;
  tu_cleanup_dir(s->dir);
  free(s->dir);
  free(s->store);
  s->dir = s->store = NULL;
  return code;
}

int ts_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  cr_assert(fd >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0, "connect: %s", strerror(errno));
  return fd;
}

char *ts_read_all(int fd, int timeout_ms) {
  size_t cap = 8192, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) <= 0)
      break;
    if (cap - len < 4096)
      buf = realloc(buf, cap *= 2);
    ssize_t n = read(fd, buf + len, cap - len - 1);
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  return buf;
}

int ts_closed_by_server(int fd, int timeout_ms) {
  char buf[4096];
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) <= 0)
      return 0;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
      return 1;
    if (n < 0)
      return 0;
  }
}

static void send_all(int fd, const char *data, size_t len) {
  while (len) {
    ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
    if (n <= 0)
      return; /* the server may refuse before the body: the answer says why */
    data += n;
    len -= (size_t)n;
  }
}

char *ts_raw(int port, const char *data, size_t len) {
  int fd = ts_connect(port);
  send_all(fd, data, len);
  char *a = ts_read_all(fd, 30000);
  close(fd);
  return a;
}

int ts_status(const char *a) {
  if (!a || strncmp(a, "HTTP/1.", 7) || strlen(a) < 12)
    return -1;
  return atoi(a + 9);
}

char *ts_answer_header(const char *a, const char *name) {
  size_t n = strlen(name);
  const char *end = strstr(a, "\r\n\r\n");
  for (const char *p = strstr(a, "\r\n"); p && (!end || p < end); p = strstr(p + 2, "\r\n"))
    if (!strncasecmp(p + 2, name, n) && p[2 + n] == ':') {
      const char *v = p + 3 + n;
      while (*v == ' ')
        v++;
      return strndup(v, strcspn(v, "\r\n"));
    }
  return NULL;
}

const char *ts_body(const char *a) {
  const char *p = strstr(a, "\r\n\r\n");
  return p ? p + 4 : "";
}

char *ts_request(const ts_serve_t *s, const char *method, const char *path, const char *extra,
                 const char *body) {
  char *req, clen[64] = "";
  if (body)
    snprintf(clen, sizeof clen, "Content-Length: %zu\r\n", strlen(body));
  int n = asprintf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s%s\r\n%s",
                   method, path, s->port, extra ? extra : "", clen, body ? body : "");
  cr_assert(n > 0);
  char *a = ts_raw(s->port, req, (size_t)n);
  free(req);
  return a;
}

char *ts_post_mcp(const ts_serve_t *s, const char *token, const char *extra, const char *body) {
  char *hdrs;
  if (asprintf(&hdrs,
               "Content-Type: application/json\r\nAccept: application/json, "
               "text/event-stream\r\n%s%s%s%s",
               token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "",
               extra ? extra : "") < 0)
    abort();
  char *a = ts_request(s, "POST", "/mcp", hdrs, body);
  free(hdrs);
  return a;
}

void ts_stream_open(ts_stream_t *st, const ts_serve_t *s, const char *path, const char *extra) {
  memset(st, 0, sizeof *st);
  st->fd = ts_connect(s->port);
  char req[2000];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                   "Accept: text/event-stream\r\n%s\r\n",
                   path, s->port, s->token, extra ? extra : "");
  cr_assert_eq(send(st->fd, req, (size_t)n, MSG_NOSIGNAL), n);
}

int ts_stream_until(ts_stream_t *st, const char *needle) {
  for (;;) {
    if (st->buf && strstr(st->buf, needle))
      return 1;
    struct pollfd p = {.fd = st->fd, .events = POLLIN};
    if (poll(&p, 1, 20000 * tu_slow()) <= 0)
      return 0;
    if (st->cap - st->len < 65536 + 1) {
      st->cap = st->cap ? st->cap * 2 : 131072;
      st->buf = realloc(st->buf, st->cap);
    }
    ssize_t n = read(st->fd, st->buf + st->len, st->cap - st->len - 1);
    if (n <= 0)
      return st->buf && strstr(st->buf, needle);
    st->len += (size_t)n;
    st->buf[st->len] = '\0';
  }
}

void ts_stream_close(ts_stream_t *st) {
  close(st->fd);
  free(st->buf);
}
