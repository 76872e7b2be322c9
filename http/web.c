/* The web viewer (docs/web.md, "The viewer"): the page at / and its script
 * and style sheet, plain files compiled into the binary (web_assets.c). The
 * page itself is only a client of the JSON API (/api/..., docs/web.md): it
 * reads the store through it and nothing else, so this file only hands
 * out bytes, the same to everyone: these routes need no token (a browser's
 * navigation cannot send one; the page's script sends it on each API
 * request, app.js "the token").
 *
 * Every answer carries a strict Content-Security-Policy: scripts, styles
 * and connections from this origin only, no inline script or style (the
 * page has none: task output is inserted as text, never as markup, so even
 * a transcript that holds HTML cannot run anything), no framing, no
 * plugin, no form posted elsewhere. The files are served no-store like
 * every other answer (respond.c): they are small, come over loopback, and a
 * new binary must never run beside a cached old page. */
#include <string.h>

#include "http/internal.h"

/* The labels web_assets.c defines around each file. */
#define WEB_EXTERN(sym)                                                                            \
  extern const char sym##_start[] __attribute__((visibility("hidden")));                           \
  extern const char sym##_end[] __attribute__((visibility("hidden")))
WEB_EXTERN(http_web_index_html);
WEB_EXTERN(http_web_app_js);
WEB_EXTERN(http_web_style_css);

#define WEB_CSP                                                                                    \
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "  \
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

typedef struct {
  const char *start, *end;
  const char *ctype;
} web_asset_t;

static void web_send(http_req_t *r, const web_asset_t *a) {
  http_add_header(r, "Content-Security-Policy", WEB_CSP);
  http_add_header(r, "Referrer-Policy", "no-referrer");
  http_add_header(r, "X-Frame-Options", "DENY");
  http_respond(r, MHD_HTTP_OK, a->ctype, a->start, a->end - a->start);
}

void http_web_index(http_req_t *r) {
  static const web_asset_t a = {http_web_index_html_start, http_web_index_html_end,
                                "text/html; charset=utf-8"};
  web_send(r, &a);
}

void http_web_script(http_req_t *r) {
  static const web_asset_t a = {http_web_app_js_start, http_web_app_js_end,
                                "text/javascript; charset=utf-8"};
  web_send(r, &a);
}

void http_web_style(http_req_t *r) {
  static const web_asset_t a = {http_web_style_css_start, http_web_style_css_end,
                                "text/css; charset=utf-8"};
  web_send(r, &a);
}
