/* The gates every request passes (docs/security.md, "HTTP"):
 *
 * - Host must name this server (421 otherwise): a page of another site
 *   whose name was made to resolve to 127.0.0.1 (DNS rebinding) sends its
 *   own name, and gets nothing.
 * - A present Origin must be this server's own (403): a page of another
 *   site, or of another local web server on another port (a port is no
 *   boundary for cookies, see below), cannot make the browser do
 *   anything here. No CORS header is ever sent, so no other origin may
 *   read an answer either.
 * - The token, always (401 without it), loopback included: another local
 *   user can reach 127.0.0.1 as well as we can. Either "Authorization:
 *   Bearer TOKEN" (MCP hosts, scripts) or the cookie that the login page
 *   sets (browsers). The token is compared in constant time.
 * - The cookie is SameSite=Strict and HttpOnly, but SameSite ignores the
 *   port: a page on http://127.0.0.1:OTHER gets our cookie sent along.
 *   The Origin check stops its POSTs and fetches; a request it makes
 *   without an Origin (an <img>, a <script src>) is stopped by
 *   Sec-Fetch-Site, which browsers send: a cookie is honoured only on a
 *   request from our own pages (same-origin), one the user typed or opened
 *   (none), or a top-level navigation by GET. */
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

/* Whether a browser says the request comes from our own pages, from the
 * user, or is a top-level navigation by GET (see above). No header: not
 * a browser, or an old one; the Origin check stands alone then. */
static int cookie_context_ok(http_req_t *r) {
  const char *site = http_header(r, "Sec-Fetch-Site");
  if (!site || !strcasecmp(site, "same-origin") || !strcasecmp(site, "none"))
    return 1;
  const char *mode = http_header(r, "Sec-Fetch-Mode");
  return (r->m & (HTTP_M_GET | HTTP_M_HEAD)) && mode && !strcasecmp(mode, "navigate");
}

int http_guard_token(http_req_t *r) {
  http_server_t *srv = r->srv;
  size_t len = 0;
  const char *t = bearer(http_header(r, "Authorization"), &len);
  if (t) {
    if (http_secret_equal(t, len, srv->token, srv->token_len))
      return 0;
  } else if ((t = http_cookie(r, HTTP_COOKIE))) {
    if (http_secret_equal(t, strlen(t), srv->token, srv->token_len)) {
      if (cookie_context_ok(r)) {
        r->cookie_auth = 1;
        return 0;
      }
      http_respond_text(r, MHD_HTTP_FORBIDDEN,
                        "forbidden: the login cookie is honoured only on requests from this "
                        "server's own pages (Sec-Fetch-Site: %.40s)",
                        http_header(r, "Sec-Fetch-Site"));
      return -1;
    }
  }
  http_add_header(r, "WWW-Authenticate", "Bearer realm=\"taskfs\"");
  http_respond_text(r, MHD_HTTP_UNAUTHORIZED,
                    "unauthorized: %s; send \"Authorization: Bearer TOKEN\" with the token of "
                    "`taskfs serve` (its token file), or log in with the URL it printed",
                    t ? "wrong token" : "no token");
  return -1;
}

/* The login page: a 200 that sets the cookie and moves on to / by a meta
 * refresh, so the token leaves the address bar and the history entry the
 * browser shows. A redirect would not do: after a login link clicked on
 * another site, the redirected request still counts as cross-site and a
 * SameSite=Strict cookie just set is not sent with it; the refresh is a
 * navigation of our own page. */
static const char login_page[] =
    "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
    "<meta http-equiv=\"refresh\" content=\"0;url=/\"><title>taskfs</title></head>"
    "<body><p>Logged in. <a href=\"/\">Continue</a>.</p></body></html>\n";

void http_login(http_req_t *r) {
  http_server_t *srv = r->srv;
  const char *t = http_query(r, "token");
  if (!t || !http_secret_equal(t, strlen(t), srv->token, srv->token_len)) {
    http_respond_text(r, MHD_HTTP_UNAUTHORIZED,
                      "unauthorized: wrong token in the login URL; use the URL `taskfs serve` "
                      "printed (the token is in its token file)");
    return;
  }
  char cookie[TFS_TOKEN_MAX + 80];
  snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict", HTTP_COOKIE,
           srv->token);
  http_add_header(r, "Set-Cookie", cookie);
  http_add_header(r, "Referrer-Policy", "no-referrer");
  http_add_header(r, "Content-Security-Policy", "default-src 'none'");
  http_respond(r, MHD_HTTP_OK, "text/html; charset=utf-8", login_page, sizeof login_page - 1);
}
