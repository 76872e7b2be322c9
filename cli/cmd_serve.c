/* taskfs serve: the store over HTTP (docs/serve.md): MCP Streamable HTTP
 * at /mcp, a token always.
 *
 * Without --foreground the verb forks the server, which reports once it
 * listens (or why it cannot), so that every error is printed here and
 * `taskfs serve && curl ...` is race-free; the server then logs to the
 * store's serve.log. A listening socket handed over by systemd (socket
 * activation: LISTEN_PID, LISTEN_FDS) is used instead of --listen. */
#include <stdio.h>
#include <string.h>

#include <limits.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "http/http.h"

static const char usage_text[] =
    "usage: taskfs serve [--listen HOST:PORT] [--token-file FILE]\n"
    "                    [--allow-host NAME]... [--foreground|-f] [--state-dir DIR]\n"
    "\n"
    "Serves the store over HTTP: MCP (Streamable HTTP, revisions 2025-11-25 and\n"
    "2026-07-28) at /mcp. Every request needs the token, as \"Authorization: Bearer\n"
    "TOKEN\" (no cookie is one; the viewer sends the header too). The token is\n"
    "<state>/serve.token (made on the first start, mode 0600) unless --token-file\n"
    "names your own.\n"
    "\n"
    "  --listen HOST:PORT   where to listen (default " HTTP_DEFAULT_LISTEN "; port 0:\n"
    "                       any free port). Beyond loopback only with --token-file.\n"
    "  --token-file FILE    the token: a file of yours, mode 0600, one line of 32\n"
    "                       to 256 characters of A-Z a-z 0-9 . _ ~ -\n"
    "  --allow-host NAME    one more name the Host header may give (a DNS name\n"
    "                       that points here; repeatable)\n"
    "  --foreground, -f     stay in the foreground, logging to stderr (systemd)\n"
    "  --state-dir DIR      serve the store in DIR\n"
    "  -h, --help           show this help\n"
    "\n"
    "It prints where it listens and a login URL (http://HOST:PORT/#token=...).\n"
    "Stop it with SIGTERM (kill PID): waiting requests are answered, tasks keep\n"
    "running.\n"
    "\n"
    "EXIT STATUS\n"
    "  0 it listens (in the background: the server's report said so; in the\n"
    "  foreground: it stopped cleanly on a signal), 100 usage (also an address\n"
    "  it cannot parse, a --token-file it cannot take, or listening beyond\n"
    "  loopback without --token-file), 111 system failure (the store, the\n"
    "  token, the port in use).\n";

#define ALLOW_MAX 16

static int serve_child(void *arg, int ready_fd) {
  http_serve_opts_t *o = arg;
  o->ready_fd = ready_fd;
  return http_serve(o);
}

int cmd_serve(int argc, char **argv) {
  static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
                                       {"token-file", required_argument, NULL, 't'},
                                       {"allow-host", required_argument, NULL, 'a'},
                                       {"foreground", no_argument, NULL, 'f'},
                                       {NULL, 0, NULL, 0}};
  cli_opts_t o = CLI_OPTS("serve", usage_text, "f", opts);
  const char *allow[ALLOW_MAX];
  http_serve_opts_t so = {.listen_fd = -1, .ready_fd = -1, .allow_hosts = allow};
  int foreground = 0, c, code;
  while ((c = cli_getopt(&o, argc, argv)) > 0) {
    if (c == 'l')
      so.listen = optarg;
    else if (c == 't')
      so.token_file = optarg;
    else if (c == 'f')
      foreground = 1;
    else if (so.n_allow_hosts == ALLOW_MAX)
      return cli_usage_error("serve", "at most %d --allow-host names", ALLOW_MAX);
    else
      allow[so.n_allow_hosts++] = optarg;
  }
  if (c < 0)
    return o.code;
  if ((code = cli_no_operands("serve", argc, argv, "(give the address with --listen HOST:PORT)")))
    return code;
  char path[PATH_MAX]; /* an empty TASKFS_STATE_DIR is a usage error */
  if ((code = cli_store_path("serve", o.state_dir, path, sizeof path)))
    return code;
  so.state_dir = o.state_dir;
  so.listen_fd = http_listen_fds();
  if (so.listen_fd >= 0 && so.listen)
    fprintf(stderr,
            "taskfs serve: a socket was handed over (LISTEN_FDS); --listen %s is not "
            "used\n",
            so.listen);
  if (foreground)
    return http_serve(&so);
  char text[8192];
  pid_t pid;
  code = cli_daemonize("serve", serve_child, &so, 1, text, sizeof text, &pid);
  if (code) {
    cli_error("serve", "%s", text);
    return code;
  }
  fputs(text, stdout);
  printf("  stop it with: kill %d\n", (int)pid);
  return cli_flush_stdout("serve", CLI_EXIT_OK);
}
