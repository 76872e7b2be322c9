/* `taskfs serve`: the process. In steps: the store and its token, the
 * listening socket (its own, or one systemd handed over), the live hub
 * (live/live.h: the store, its watch, the feeds) and on it, side by side,
 * the MCP server and the HTTP server, on one libuv loop, the report (to the waiting
 * parent in the background, to stdout in the foreground), then serving
 * until a signal, and the end: the MCP server answers every waiting
 * request, the HTTP server finishes what is in flight (at most 5 s), and
 * the process exits 0. Tasks are never touched. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "http/internal.h"
#include "mcp/mcp.h"

/* An HTTP body at /mcp holds one MCP message, bounded as a stdio line is;
 * http/ keeps its own number, so that only this file and the /mcp route
 * include mcp/. */
_Static_assert(HTTP_BODY_MAX == MCP_LINE_MAX, "HTTP_BODY_MAX is MCP_LINE_MAX");

#define STOP_GRACE_MS 5000
#define EXIT_USAGE 100
#define EXIT_SYSTEM 111

typedef struct {
  uv_loop_t *loop;
  live_hub_t *hub;
  mcp_server_t *mcp;
  http_server_t *http;
  uv_signal_t sig[3];
  int stopping, http_done;
  char token[TFS_TOKEN_MAX + 1];
} serve_t;

int http_listen_fds(void) {
  const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
  int fd = -1;
  if (pid && fds && atol(pid) == (long)getpid() && atoi(fds) >= 1) {
    for (int i = 0; i < atoi(fds) && i < 64; i++)
      fcntl(3 + i, F_SETFD, FD_CLOEXEC); /* no task inherits one */
    fd = 3;
  }
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return fd;
}

/* A thousand idle connections need a thousand descriptors. */
static void raise_nofile(void) {
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

/* Says what went wrong: on the parent's pipe (background) or stderr. */
static int fail(const http_serve_opts_t *o, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const http_serve_opts_t *o, int code, const char *fmt, ...) {
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (o->ready_fd >= 0)
    dprintf(o->ready_fd, "error: %s\n", msg);
  else
    fprintf(stderr, "taskfs serve: %s\n", msg);
  return code;
}

/* The store and its token (or the one --token-file names). */
static int open_store(const http_serve_opts_t *o, serve_t *sv, tfs_store_t **store, char *tokpath,
                      size_t tplen) {
  char dir[4096], why[1024];
  int err = tfs_store_resolve(o->state_dir, dir, sizeof dir);
  if (err)
    return fail(o, EXIT_USAGE, "cannot resolve the state directory (%s); pass --state-dir DIR",
                tfs_strerror(err));
  if ((err = tfs_store_open_flags(dir, TFS_STORE_CREATE, store, why, sizeof why)))
    return fail(o, EXIT_SYSTEM, "cannot open the store %s: %s", dir,
                err == TFS_EFOREIGN || err == TFS_EUNSAFE ? why : tfs_strerror(err));
  if (o->token_file) {
    snprintf(tokpath, tplen, "%s", o->token_file);
    if ((err = tfs_token_file_read(o->token_file, sv->token, sizeof sv->token, why, sizeof why)))
      return fail(o, EXIT_USAGE, "--token-file: %s", why);
    return 0;
  }
  int created;
  tfs_serve_token_path(*store, tokpath, tplen);
  if ((err = tfs_serve_token(*store, sv->token, sizeof sv->token, &created, why, sizeof why)))
    return fail(o, EXIT_SYSTEM, "the store's token: %s", why);
  return 0;
}

/* The loopback address of the other family at the port (issue 26.6): a
 * browser may resolve localhost to ::1 as well as to 127.0.0.1, and
 * whoever held the other one would get what the user meant for us (the
 * viewer's login URL with its token). So a server on 127.0.0.1 (or
 * 0.0.0.0) listens on [::1] too, and one on ::1 (or ::) on 127.0.0.1.
 * Returns the socket, or -1 with *localhost telling whether the name is
 * still safe: yes when this machine has no such address (nobody can hold
 * it), no when another process holds it (then it is refused, and said). */
static int listen_twin(const http_addr_t *a, int *localhost, int quiet) {
  http_addr_t twin;
  char why[600];
  *localhost = 1;
  if (http_addr_twin(a, &twin))
    return -1;
  int fd = http_addr_listen(&twin, why, sizeof why);
  if (fd >= 0 || fd == -EADDRNOTAVAIL || fd == -EAFNOSUPPORT)
    return fd;
  *localhost = 0;
  char host[300];
  http_addr_url_host(twin.host, host, sizeof host);
  if (!quiet)
    fprintf(stderr,
            "taskfs serve: cannot listen on %s:%d too (%s): the name localhost is refused, "
            "since a browser may resolve it to %s and reach whoever holds that\n",
            host, twin.port, strerror(-fd), host);
  return -1;
}

/* The listening sockets. Beyond loopback only with a token the user
 * chose: the generated one is fine on this machine, but a network
 * deserves a decision. */
static int open_listener(const http_serve_opts_t *o, http_addr_t *a, int *fd, int *twin_fd,
                         int *localhost) {
  char why[600];
  int err = o->listen_fd >= 0
                ? http_addr_from_fd(o->listen_fd, a, why, sizeof why)
                : http_addr_parse(o->listen ? o->listen : HTTP_DEFAULT_LISTEN, a, why, sizeof why);
  if (err)
    return fail(o, EXIT_USAGE, "%s", why);
  if (!a->loopback && !o->token_file)
    return fail(o, EXIT_USAGE,
                "%s is not a loopback address: serving beyond this machine needs a token you "
                "chose, --token-file FILE (a file of yours, mode 0600, one line of at least %d "
                "URL-safe characters); or listen on 127.0.0.1",
                a->host, TFS_TOKEN_MIN);
  if (o->listen_fd >= 0) {
    *fd = o->listen_fd;
    *twin_fd = listen_twin(a, localhost, 0);
    return 0;
  }
  /* Port 0: a port free on both addresses (the kernel picks on one). */
  int any = a->port == 0;
  for (int tries = 0;; tries++) {
    if ((*fd = http_addr_listen(a, why, sizeof why)) < 0)
      return fail(o, EXIT_SYSTEM, "%s", why);
    int last = !any || tries == 20;
    *twin_fd = listen_twin(a, localhost, !last);
    if (*twin_fd >= 0 || *localhost || last)
      return 0;
    close(*fd);
    http_addr_parse(o->listen ? o->listen : HTTP_DEFAULT_LISTEN, a, why, sizeof why);
  }
}

/* What the user reads: where it listens, how to reach /mcp and A2A, how
 * to log in. The token is printed on a terminal or to the parent that started us;
 * a foreground server writing to a log (systemd's journal, which others
 * in the adm group may read) names the token file instead. */
static void banner(const http_serve_opts_t *o, const http_addr_t *a, const serve_t *sv,
                   const char *store, const char *tokpath, char *out, size_t len) {
  char host[300], url[400];
  http_addr_url_host(a->wildcard ? "127.0.0.1" : a->host, host, sizeof host);
  snprintf(url, sizeof url, "http://%s:%d", host, a->port);
  int show = o->ready_fd >= 0 || isatty(1);
  snprintf(out, len,
           "taskfs serve: serving %s on %s (pid %d)\n"
           "  MCP endpoint: %s/mcp (Authorization: Bearer <the token in %s>)\n"
           "  A2A agent:    %s/.well-known/agent-card.json (JSON-RPC at /a2a, the same token)\n"
           "  log in:       %s/#token=%s\n",
           store, url, (int)getpid(), url, tokpath, url, url,
           show ? sv->token : "<the token in that file>");
}

/* ---- the end --------------------------------------------------------------- */

/* The end waits for the MCP server's requests and for the hub's work on
 * the thread pool (launches, scans), which mcp_server_idle counts too. */
static void maybe_exit(serve_t *sv) {
  if (sv->stopping && sv->http_done && mcp_server_idle(sv->mcp))
    uv_stop(sv->loop);
}

static void on_idle(void *arg) {
  maybe_exit(arg);
}

static void on_http_stopped(void *arg) {
  serve_t *sv = arg;
  sv->http_done = 1;
  maybe_exit(sv);
}

static void on_signal(uv_signal_t *s, int signum) {
  serve_t *sv = s->data;
  if (sv->stopping) {
    fprintf(stderr, "taskfs serve: %s again; exiting now\n", strsignal(signum));
    uv_stop(sv->loop);
    return;
  }
  fprintf(stderr, "taskfs serve: %s; answering what waits and exiting\n", strsignal(signum));
  sv->stopping = 1;
  mcp_server_shutdown(sv->mcp);
  http_server_stop(sv->http, STOP_GRACE_MS);
  maybe_exit(sv);
}

static void close_walk(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void teardown(serve_t *sv) {
  for (int i = 0; i < 3; i++)
    uv_close((uv_handle_t *)&sv->sig[i], NULL);
  http_server_free(sv->http);
  uv_run(sv->loop, UV_RUN_NOWAIT);
  if (!mcp_server_idle(sv->mcp))
    return; /* a launch still runs on the thread pool: the exit ends it */
  mcp_server_free(sv->mcp);
  live_hub_free(sv->hub);
  uv_walk(sv->loop, close_walk, NULL);
  uv_run(sv->loop, UV_RUN_DEFAULT);
  uv_loop_close(sv->loop);
}

/* After the report, a background server writes its log to the store. */
static void detach(tfs_store_t *store, int ready_fd) {
  int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
  int log = tfs_serve_log_open(store);
  if (nul >= 0) {
    dup2(nul, 0);
    dup2(nul, 1);
    dup2(log >= 0 ? log : nul, 2);
    close(nul);
  }
  if (log >= 0)
    close(log);
  close(ready_fd);
}

static int start(const http_serve_opts_t *o, serve_t *sv, const http_addr_t *a, const char *tokpath,
                 int fd, int twin_fd, int localhost, const char *dir) {
  char why[600];
  live_config_t lc = {
      .loop = sv->loop, .state_dir = dir, .name = "taskfs serve", .on_idle = on_idle, .arg = sv};
  int err = live_hub_open(&lc, &sv->hub);
  mcp_server_config_t mc = {.hub = sv->hub, .role = "serve", .on_idle = on_idle, .arg = sv};
  if (err || mcp_server_open(&mc, &sv->mcp)) {
    live_hub_free(sv->hub);
    if (twin_fd >= 0)
      close(twin_fd);
    return fail(o, EXIT_SYSTEM, "cannot serve the store %s (see above)", dir);
  }
  http_server_config_t hc = {.hub = sv->hub,
                             .mcp = sv->mcp,
                             .token = sv->token,
                             /* Beyond loopback, a stranger's 401 does not
                              * learn the path (--token-file). */
                             .token_path = a->loopback ? tokpath : NULL,
                             .listen_fd = fd,
                             .twin_fd = twin_fd,
                             .no_localhost = !localhost,
                             .host = a->host,
                             .port = a->port,
                             .allow_hosts = o->allow_hosts,
                             .n_allow_hosts = o->n_allow_hosts,
                             .on_stopped = on_http_stopped,
                             .arg = sv};
  if (http_server_start(&hc, &sv->http, why, sizeof why)) {
    mcp_server_free(sv->mcp);
    live_hub_free(sv->hub);
    return fail(o, EXIT_SYSTEM, "%s", why);
  }
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(sv->loop, &sv->sig[i]);
    sv->sig[i].data = sv;
    uv_signal_start(&sv->sig[i], on_signal, sigs[i]);
  }
  return 0;
}

int http_serve(const http_serve_opts_t *o) {
  signal(SIGPIPE, SIG_IGN);
  raise_nofile();
  serve_t *sv = calloc(1, sizeof *sv);
  tfs_store_t *store = NULL;
  http_addr_t a;
  char tokpath[4200], text[7000];
  int fd = -1, twin_fd = -1, localhost = 1, code;
  if (!sv)
    return fail(o, EXIT_SYSTEM, "out of memory");
  if ((code = open_store(o, sv, &store, tokpath, sizeof tokpath)) ||
      (code = open_listener(o, &a, &fd, &twin_fd, &localhost))) {
    tfs_store_close(store);
    free(sv);
    return code;
  }
  sv->loop = uv_default_loop();
  if ((code = start(o, sv, &a, tokpath, fd, twin_fd, localhost, tfs_store_path(store)))) {
    close(fd);
    tfs_store_close(store);
    free(sv);
    return code;
  }
  banner(o, &a, sv, tfs_store_path(store), tokpath, text, sizeof text);
  if (o->ready_fd >= 0) {
    dprintf(o->ready_fd, "ok\n%s", text);
    detach(store, o->ready_fd);
  } else {
    fputs(text, stdout);
    fflush(stdout);
  }
  tfs_store_close(store);
  uv_run(sv->loop, UV_RUN_DEFAULT);
  fprintf(stderr, "taskfs serve: stopped\n");
  teardown(sv);
  explicit_bzero(sv->token, sizeof sv->token);
  free(sv);
  return 0;
}
