/* Listen addresses, and the names the server answers to.
 *
 * The Host header is checked against the names, so that a page of another
 * site whose name was made to resolve to this machine (DNS rebinding)
 * reaches nothing: its requests carry its own name. The names are the
 * listen address as given and as resolved; for a loopback address also
 * localhost, 127.0.0.1 and ::1 (what a local client may type; localhost
 * only when the server holds both loopback addresses at its port, or
 * nobody can hold the other one: issue 26.6, serve.c); for a
 * wildcard address (0.0.0.0, ::) the machine's host name and every local
 * interface address; and the names --allow-host adds. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/internal.h"

static void classify(http_addr_t *a) {
  a->loopback = a->wildcard = 0;
  if (a->sa.ss_family == AF_INET) {
    uint32_t ip = ntohl(((struct sockaddr_in *)&a->sa)->sin_addr.s_addr);
    a->loopback = (ip >> 24) == 127;
    a->wildcard = ip == 0;
  } else if (a->sa.ss_family == AF_INET6) {
    const struct in6_addr *ip = &((struct sockaddr_in6 *)&a->sa)->sin6_addr;
    a->loopback = IN6_IS_ADDR_LOOPBACK(ip);
    a->wildcard = IN6_IS_ADDR_UNSPECIFIED(ip);
    if (IN6_IS_ADDR_V4MAPPED(ip))
      a->loopback = ip->s6_addr[12] == 127;
  }
}

static void set_port(http_addr_t *a, int port) {
  if (a->sa.ss_family == AF_INET)
    ((struct sockaddr_in *)&a->sa)->sin_port = htons((uint16_t)port);
  else
    ((struct sockaddr_in6 *)&a->sa)->sin6_port = htons((uint16_t)port);
}

int http_addr_parse(const char *spec, http_addr_t *a, char *why, size_t whylen) {
  memset(a, 0, sizeof *a);
  const char *colon = strrchr(spec, ':');
  const char *host = spec;
  size_t hlen;
  if (spec[0] == '[') {
    const char *close = strchr(spec, ']');
    if (!close || close[1] != ':') {
      snprintf(why, whylen, "'%s' is not HOST:PORT ([IPv6]:PORT for an IPv6 address)", spec);
      return -EINVAL;
    }
    host = spec + 1;
    hlen = (size_t)(close - host);
    colon = close + 1;
  } else {
    if (!colon || strchr(spec, ':') != colon) {
      snprintf(why, whylen, "'%s' is not HOST:PORT ([IPv6]:PORT for an IPv6 address)", spec);
      return -EINVAL;
    }
    hlen = (size_t)(colon - spec);
  }
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (!colon[1] || *end || port < 0 || port > 65535 || !hlen || hlen >= sizeof a->host) {
    snprintf(why, whylen, "'%s' is not HOST:PORT (a port from 0 to 65535)", spec);
    return -EINVAL;
  }
  memcpy(a->host, host, hlen);
  a->host[hlen] = '\0';
  a->port = (int)port;
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
  char portbuf[8];
  snprintf(portbuf, sizeof portbuf, "%d", a->port);
  int err = getaddrinfo(a->host, portbuf, &hints, &res);
  if (err) {
    snprintf(why, whylen, "cannot resolve '%s': %s", a->host, gai_strerror(err));
    return -EINVAL;
  }
  memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
  a->salen = res->ai_addrlen;
  freeaddrinfo(res);
  classify(a);
  return 0;
}

int http_addr_listen(http_addr_t *a, char *why, size_t whylen) {
  int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    snprintf(why, whylen, "cannot make a socket: %s", strerror(errno));
    return -errno;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (a->sa.ss_family == AF_INET6)
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&a->sa, a->salen) || listen(fd, 1024)) {
    int e = errno;
    snprintf(why, whylen, "cannot listen on %s port %d: %s%s", a->host, a->port, strerror(e),
             e == EADDRINUSE ? " (another taskfs serve? choose another with --listen HOST:PORT)"
                             : "");
    close(fd);
    return -e;
  }
  struct sockaddr_storage got;
  socklen_t len = sizeof got;
  if (!getsockname(fd, (struct sockaddr *)&got, &len))
    a->port = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
                                             : ((struct sockaddr_in6 *)&got)->sin6_port);
  set_port(a, a->port);
  return fd;
}

int http_addr_from_fd(int fd, http_addr_t *a, char *why, size_t whylen) {
  memset(a, 0, sizeof *a);
  int type = 0, acc = 0;
  socklen_t l = sizeof type;
  a->salen = sizeof a->sa;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM ||
      getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &(socklen_t){sizeof acc}) || !acc ||
      getsockname(fd, (struct sockaddr *)&a->sa, &a->salen) ||
      (a->sa.ss_family != AF_INET && a->sa.ss_family != AF_INET6)) {
    snprintf(why, whylen,
             "the socket handed over (fd %d, LISTEN_FDS) is not a listening TCP socket; "
             "the .socket unit needs ListenStream=HOST:PORT",
             fd);
    return -EINVAL;
  }
  const void *ip = a->sa.ss_family == AF_INET
                       ? (const void *)&((struct sockaddr_in *)&a->sa)->sin_addr
                       : (const void *)&((struct sockaddr_in6 *)&a->sa)->sin6_addr;
  inet_ntop(a->sa.ss_family, ip, a->host, sizeof a->host);
  a->port = ntohs(a->sa.ss_family == AF_INET ? ((struct sockaddr_in *)&a->sa)->sin_port
                                             : ((struct sockaddr_in6 *)&a->sa)->sin6_port);
  classify(a);
  return 0;
}

int http_addr_twin(const http_addr_t *a, http_addr_t *twin) {
  memset(twin, 0, sizeof *twin);
  twin->port = a->port;
  if (a->sa.ss_family == AF_INET) {
    uint32_t ip = ntohl(((struct sockaddr_in *)&a->sa)->sin_addr.s_addr);
    if (ip != INADDR_LOOPBACK && ip != INADDR_ANY)
      return -1;
    struct sockaddr_in6 *t = (struct sockaddr_in6 *)&twin->sa;
    t->sin6_family = AF_INET6;
    t->sin6_addr = in6addr_loopback;
    t->sin6_port = htons((uint16_t)a->port);
    twin->salen = sizeof *t;
    snprintf(twin->host, sizeof twin->host, "::1");
  } else {
    const struct in6_addr *ip = &((const struct sockaddr_in6 *)&a->sa)->sin6_addr;
    if (!IN6_IS_ADDR_LOOPBACK(ip) && !IN6_IS_ADDR_UNSPECIFIED(ip))
      return -1;
    struct sockaddr_in *t = (struct sockaddr_in *)&twin->sa;
    t->sin_family = AF_INET;
    t->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    t->sin_port = htons((uint16_t)a->port);
    twin->salen = sizeof *t;
    snprintf(twin->host, sizeof twin->host, "127.0.0.1");
  }
  classify(twin);
  return 0;
}

void http_addr_url_host(const char *host, char *buf, size_t len) {
  snprintf(buf, len, strchr(host, ':') ? "[%s]" : "%s", host);
}

/* ---- the names ---------------------------------------------------------- */

static int add_name(http_names_t *h, const char *name, size_t len) {
  if (!len || len > 255)
    return 0;
  for (size_t i = 0; i < h->n; i++)
    if (strlen(h->names[i]) == len && !strncasecmp(h->names[i], name, len))
      return 0;
  char **nv = realloc(h->names, (h->n + 1) * sizeof *nv);
  if (!nv)
    return -ENOMEM;
  h->names = nv;
  char *s = strndup(name, len);
  if (!s)
    return -ENOMEM;
  for (char *p = s; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  h->names[h->n++] = s;
  return 0;
}

static int add_str(http_names_t *h, const char *name) {
  return add_name(h, name, strlen(name));
}

/* The machine's names, for a wildcard address: its host name and every
 * interface address. */
static int add_local(http_names_t *h) {
  char name[256];
  int err = 0;
  if (!gethostname(name, sizeof name))
    err = add_str(h, name);
  struct ifaddrs *ifs, *i;
  if (getifaddrs(&ifs))
    return err;
  for (i = ifs; i && !err; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
      continue;
    char ip[INET6_ADDRSTRLEN];
    const void *p = i->ifa_addr->sa_family == AF_INET
                        ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
                        : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
    if (inet_ntop(i->ifa_addr->sa_family, p, ip, sizeof ip))
      err = add_str(h, ip);
  }
  freeifaddrs(ifs);
  return err;
}

int http_names_build(http_names_t *h, const char *host, int port, int localhost,
                     const char *const *allow, size_t nallow) {
  memset(h, 0, sizeof *h);
  h->port = port;
  h->no_localhost = !localhost;
  http_addr_t a;
  char why[256], spec[300];
  snprintf(spec, sizeof spec, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
  int err = add_str(h, host);
  if (!err && !http_addr_parse(spec, &a, why, sizeof why)) {
    char ip[INET6_ADDRSTRLEN] = "";
    const void *p = a.sa.ss_family == AF_INET
                        ? (const void *)&((struct sockaddr_in *)&a.sa)->sin_addr
                        : (const void *)&((struct sockaddr_in6 *)&a.sa)->sin6_addr;
    if (inet_ntop(a.sa.ss_family, p, ip, sizeof ip))
      err = add_str(h, ip);
    static const char *const local[] = {"localhost", "127.0.0.1", "::1"};
    for (size_t i = !localhost; !err && (a.loopback || a.wildcard) && i < 3; i++)
      err = add_str(h, local[i]);
    if (!err && a.wildcard)
      err = add_local(h);
  }
  for (size_t i = 0; !err && i < nallow; i++)
    err = add_str(h, allow[i]);
  if (err)
    http_names_free(h);
  return err;
}

void http_names_free(http_names_t *h) {
  for (size_t i = 0; i < h->n; i++)
    free(h->names[i]);
  free(h->names);
  memset(h, 0, sizeof *h);
}

/* Splits HOST[:PORT] / [V6][:PORT]; returns 0, or -1 when malformed. */
static int split_authority(const char *v, size_t vlen, const char **name, size_t *nlen,
                           long *port) {
  const char *end = v + vlen, *colon;
  *port = -1;
  if (vlen && v[0] == '[') {
    const char *close = memchr(v, ']', vlen);
    if (!close)
      return -1;
    *name = v + 1;
    *nlen = (size_t)(close - v - 1);
    colon = close + 1 < end ? close + 1 : NULL;
    if (colon && *colon != ':')
      return -1;
  } else {
    colon = memchr(v, ':', vlen);
    *name = v;
    *nlen = colon ? (size_t)(colon - v) : vlen;
    if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))
      return -1;
  }
  if (colon) {
    long p = 0;
    if (colon + 1 == end || end - colon > 6)
      return -1;
    for (const char *c = colon + 1; c < end; c++) {
      if (*c < '0' || *c > '9')
        return -1;
      p = p * 10 + (*c - '0');
    }
    *port = p;
  }
  return 0;
}

static int authority_ok(const http_names_t *h, const char *v, size_t vlen) {
  const char *name;
  size_t nlen;
  long port;
  if (split_authority(v, vlen, &name, &nlen, &port))
    return 0;
  if (port < 0 ? h->port != 80 : port != h->port)
    return 0;
  for (size_t i = 0; i < h->n; i++)
    if (strlen(h->names[i]) == nlen && !strncasecmp(h->names[i], name, nlen))
      return 1;
  return 0;
}

int http_names_host_ok(const http_names_t *h, const char *value) {
  return value && authority_ok(h, value, strlen(value));
}

int http_names_origin_ok(const http_names_t *h, const char *value) {
  if (!value || strncasecmp(value, "http://", 7))
    return 0;
  const char *a = value + 7;
  size_t len = strlen(a);
  if (len && a[len - 1] == '/')
    len--; /* not sent by browsers, but harmless */
  return memchr(a, '/', len) == NULL && authority_ok(h, a, len);
}
