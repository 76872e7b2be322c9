/* The gates every request passes (docs/security.md, "HTTP"):
 *
 * - Host must name this server (421 otherwise): a page of another site
 *   whose name was made to resolve to 127.0.0.1 (DNS rebinding) sends its
 *   own name, and gets nothing.
 * - A present Origin must be this server's own (403): a page of another
 *   site, or of another local web server on another port, cannot make the
 *   browser do anything here. No CORS header is ever sent, so no other
 *   origin may read an answer either.
 * - The token, always (401 without it), loopback included: another local
 *   user can reach 127.0.0.1 as well as we can. Only as "Authorization:
 *   Bearer TOKEN", from MCP hosts, scripts and the viewer's own script
 *   alike; compared in constant time. The 401 says where the token is
 *   and how to send it (issue 29.5): MCP clients show its body. Its
 *   challenge is not "Bearer": MCP clients take a Bearer challenge for the
 *   start of MCP's OAuth authorization (RFC 9728 discovery), which this
 *   server does not do (its token is set up out of band, an option the
 *   MCP spec leaves open: authorization is OPTIONAL there). RFC 9110 wants
 *   a challenge on every 401, so it names a scheme of its own.
 * - No cookie is a credential (issue 26.1): a browser sends a cookie of
 *   127.0.0.1 to every port of it, so another local user's web server
 *   would receive it, whatever its flags. The viewer keeps the token in
 *   sessionStorage (per origin, port included) and sends it as a header;
 *   the server never sets a cookie and never reads one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/internal.h"

int http_secret_equal(const char *a, size_t alen, const char *b, size_t blen) {
  volatile unsigned char diff = (unsigned char)(alen != blen);
  for (size_t i = 0; i < blen; i++)
    diff |= (unsigned char)((i < alen ? (unsigned char)a[i] : 0) ^ (unsigned char)b[i]);
  return diff == 0;
}

int http_guard_reach(http_req_t *r) {
  http_server_t *srv = r->srv;
  const char *host = http_header(r, "Host");
  if (host && srv->names.no_localhost && !strncasecmp(host, "localhost", 9) &&
      (!host[9] || host[9] == ':')) {
    http_respond_text(r, MHD_HTTP_MISDIRECTED_REQUEST,
                      "misdirected request: the name localhost is refused here, since another "
                      "process holds the other loopback address (127.0.0.1 or [::1]) at port %d "
                      "and a browser may resolve localhost to it; use %s:%d (the address taskfs "
                      "serve printed)",
                      srv->names.port, srv->names.n ? srv->names.names[0] : "?", srv->names.port);
    return -1;
  }
  if (!http_names_host_ok(&srv->names, host)) {
    http_respond_text(r, MHD_HTTP_MISDIRECTED_REQUEST,
                      "misdirected request: Host %s%.200s%s is not this server (taskfs serve "
                      "answers to %s:%d); a page whose name was made to point here (DNS "
                      "rebinding) is refused",
                      host ? "'" : "", host ? host : "(none)", host ? "'" : "",
                      srv->names.n ? srv->names.names[0] : "?", srv->names.port);
    return -1;
  }
  const char *origin = http_header(r, "Origin");
  if (origin && !http_names_origin_ok(&srv->names, origin)) {
    http_respond_text(r, MHD_HTTP_FORBIDDEN,
                      "forbidden: a request from the page of another origin (%.200s) is refused",
                      origin);
    return -1;
  }
  return 0;
}

/* The token of an "Authorization: Bearer TOKEN" header, or NULL. */
static const char *bearer(const char *v, size_t *len) {
  if (!v || strncasecmp(v, "Bearer ", 7))
    return NULL;
  v += 7;
  while (*v == ' ')
    v++;
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
    n--;
  *len = n;
  return v;
}

int http_guard_token(http_req_t *r) {
  http_server_t *srv = r->srv;
  size_t len = 0;
  const char *t = bearer(http_header(r, "Authorization"), &len);
  if (t && http_secret_equal(t, len, srv->token, srv->token_len))
    return 0;
  http_add_header(r, "WWW-Authenticate", "taskfs-token realm=\"taskfs\"");
  http_respond_text(r, MHD_HTTP_UNAUTHORIZED,
                    "unauthorized: %s. Send the header \"Authorization: Bearer TOKEN\" with the "
                    "token in %s%s (the one `taskfs serve` uses; e.g. curl -H "
                    "\"Authorization: Bearer $(cat FILE)\"); in a browser, open the login URL "
                    "`taskfs serve` printed (http://HOST:PORT/#token=...)",
                    t ? "wrong token" : "no token", srv->token_path ? "the file " : "",
                    srv->token_path ? srv->token_path
                                    : "the file given to `taskfs serve --token-file`");
  return -1;
}
