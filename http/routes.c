/* The route table: what `taskfs serve` answers at which path. A face is a
 * row here and a handler; the gates (guard.c) run for every row before its
 * handler, the token too unless the row is HTTP_ROUTE_PUBLIC. */
#include <stdio.h>
#include <string.h>

#include "http/a2a.h"
#include "http/internal.h"

/* Browsers ask for it on every page; a 404 would be a console error. */
static void on_favicon(http_req_t *r) {
  http_respond(r, MHD_HTTP_NO_CONTENT, NULL, "", 0);
}

static const http_route_t routes[] = {
    /* The viewer's own files: the same bytes for everyone, nothing of the
     * store (that comes from /api with the token), and reached by a
     * navigation, which cannot carry a header; the login URL is / too. */
    {"/", HTTP_M_GET | HTTP_M_HEAD, HTTP_ROUTE_PUBLIC, http_web_index},
    {"/favicon.ico", HTTP_M_GET | HTTP_M_HEAD, HTTP_ROUTE_PUBLIC, on_favicon},
    {"/static/app.js", HTTP_M_GET | HTTP_M_HEAD, HTTP_ROUTE_PUBLIC, http_web_script},
    {"/static/style.css", HTTP_M_GET | HTTP_M_HEAD, HTTP_ROUTE_PUBLIC, http_web_style},
    {"/mcp", HTTP_M_GET | HTTP_M_POST | HTTP_M_DELETE, 0, http_mcp_handle},
    {"/.well-known/agent-card.json", HTTP_M_GET | HTTP_M_HEAD, HTTP_ROUTE_PUBLIC, http_a2a_card},
    {"/a2a", HTTP_M_POST, 0, http_a2a_handle},
    {"/api/tasks", HTTP_M_GET | HTTP_M_HEAD, 0, http_api_tasks},
    {"/api/tasks/", HTTP_M_GET | HTTP_M_HEAD | HTTP_M_POST, HTTP_ROUTE_PREFIX, http_api_task},
    {"/api/events", HTTP_M_GET, 0, http_api_events},
};

const http_route_t *http_route_find(const char *path) {
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    const http_route_t *rt = &routes[i];
    size_t n = strlen(rt->path);
    if ((rt->flags & HTTP_ROUTE_PREFIX) ? !strncmp(path, rt->path, n) : !strcmp(path, rt->path))
      return rt;
  }
  return NULL;
}

void http_route_allow(const http_route_t *rt, char *buf, size_t len) {
  static const struct {
    unsigned bit;
    const char *name;
  } names[] = {
      {HTTP_M_GET, "GET"}, {HTTP_M_HEAD, "HEAD"}, {HTTP_M_POST, "POST"}, {HTTP_M_DELETE, "DELETE"}};
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (rt->methods & names[i].bit)
      o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? ", " : "", names[i].name);
}
