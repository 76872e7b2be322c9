/* The store's defaults, <state>/config: "key = value" lines, so that an
 * agent (or a person) who forgets a timeout or a limit still gets one.
 *
 *   # taskfs defaults
 *   timeout = 30m
 *   limit.mem = 4G
 *
 * Keys: timeout, limit.NAME and queue (TFS_CONFIG_KEYS); queue.QUEUE.KEY (a key
 * of the same set, for a named queue) is reserved for the queues to come:
 * accepted and kept, not applied yet. Values are checked with the parsers
 * taskfs run uses, when set and when read. A set keeps every other line
 * (comments too) and replaces the file atomically and durably, under an
 * flock of the state directory so that two sets never lose one. */
#include "core/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define CONFIG_FILE "config"
#define CONFIG_MAX (64 * 1024)

/* 1 if key names a setting of the file: "timeout", "limit.NAME", or
 * "queue" (the queue of a task started without one). */
static int plain_key(const char *key) {
  if (!strcmp(key, "timeout") || !strcmp(key, "queue"))
    return 1;
  return !strncmp(key, "limit.", 6) && tfs_limit_lookup(key + 6, strlen(key + 6)) >= 0;
}

/* The key a value is checked as: "queue.QUEUE.limit.mem" is "limit.mem". */
static const char *base_key(const char *key) {
  if (strncmp(key, "queue.", 6))
    return key;
  const char *name = key + 6, *dot = strchr(name, '.');
  if (!dot || dot == name || dot - name > 64 ||
      strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
                   "klmnopqrstuvwxyz0123456789_-") != (size_t)(dot - name))
    return NULL;
  return dot + 1;
}

int tfs_config_check(const char *key, const char *value, char *why, size_t whylen) {
  const char *base = key ? base_key(key) : NULL;
  if (!base || !plain_key(base)) {
    if (why && whylen)
      snprintf(why, whylen,
               "unknown key '%.64s': the keys are " TFS_CONFIG_KEYS
               " (and queue.QUEUE.KEY for a queue)",
               key ? key : "");
    return TFS_ECONFIG;
  }
  if (!value)
    return 0;
  if (!strcmp(key, "queue")) {
    if (tfs_queue_name_valid(value))
      return 0;
    if (why && whylen)
      snprintf(why, whylen,
               "queue = %.64s: not a queue name (1 to %d of A-Z a-z 0-9 . _ : -, not starting "
               "with '.')",
               value, TFS_QUEUE_NAME_MAX);
    return TFS_ECONFIG;
  }
  if (!strcmp(base, "queue")) {
    if (why && whylen)
      snprintf(why, whylen, "unknown key '%.64s': a queue has no default queue", key);
    return TFS_ECONFIG;
  }
  int64_t v;
  char msg[512] = "";
  int err = !strcmp(base, "timeout")
                ? tfs_timeout_parse(value, &v, msg, sizeof msg)
                : tfs_limit_parse((tfs_limit_t)tfs_limit_lookup(base + 6, strlen(base + 6)), value,
                                  &v, msg, sizeof msg);
  if (err && why && whylen) {
    /* The parser names the value as a command gives it; name the key. */
    const char *rest = strstr(msg, ": ");
    snprintf(why, whylen, "%.64s = %.64s: %s", key, value, rest ? rest + 2 : msg);
  }
  return err ? TFS_ECONFIG : 0;
}

/* One line of the file: a setting (key and value point into the line,
 * trimmed and NUL-terminated) or anything else, kept as it is. */
typedef struct {
  char *text; /* the line as read */
  char *key, *value;
  char *mem; /* the copy key and value point into */
} cline_t;

typedef struct {
  char *buf; /* the file, cut into lines */
  cline_t *v;
  size_t n, cap;
} config_t;

static void config_free(config_t *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->v[i].mem);
  free(c->v);
  free(c->buf);
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    s[--n] = 0;
  return s;
}

/* Splits "key = value" into l (a copy, trimmed). 0, -1 if the line is
 * not of that form, -ENOMEM. */
static int split(const char *line, cline_t *l) {
  const char *eq = strchr(line, '=');
  if (!eq)
    return -1;
  size_t kl = (size_t)(eq - line);
  if (!(l->mem = malloc(strlen(line) + 2)))
    return -ENOMEM;
  memcpy(l->mem, line, kl);
  l->mem[kl] = 0;
  strcpy(l->mem + kl + 1, eq + 1);
  l->key = trim(l->mem);
  l->value = trim(l->mem + kl + 1);
  return 0;
}

/* Reads the file into c (empty when absent). A line that is no setting,
 * no comment and not blank, an unknown key or a bad value is an error
 * naming its line. */
static int config_read(tfs_store_t *store, config_t *c, char *why, size_t whylen) {
  size_t len;
  memset(c, 0, sizeof *c);
  int err = tfs__read_small(store->fd, CONFIG_FILE, CONFIG_MAX, &c->buf, &len);
  if (err == -ENOENT)
    return 0;
  if (err) {
    if (why && whylen)
      snprintf(why, whylen, "cannot read the store's config %s/%s: %s", tfs_store_path(store),
               CONFIG_FILE, tfs_strerror(err));
    return err == TFS_ECORRUPT ? TFS_ECONFIG : err;
  }
  int lineno = 0;
  for (char *p = c->buf, *nl; p && *p; p = nl) {
    nl = strchr(p, '\n');
    if (nl)
      *nl++ = 0;
    lineno++;
    if ((err = tfs_grow(&c->v, &c->cap, c->n + 1, sizeof *c->v, 16)))
      return err;
    cline_t *l = &c->v[c->n++];
    memset(l, 0, sizeof *l);
    l->text = p;
    char *t = trim(p);
    if (!*t || *t == '#')
      continue;
    char msg[400] = "";
    int bad = split(t, l);
    if (bad == -ENOMEM)
      return bad;
    if (bad)
      snprintf(msg, sizeof msg, "'%.64s' is not 'key = value'", t);
    else
      bad = tfs_config_check(l->key, l->value, msg, sizeof msg);
    if (bad) {
      if (why && whylen)
        snprintf(why, whylen, "the store's config %s/%s, line %d: %s; fix or remove that line",
                 tfs_store_path(store), CONFIG_FILE, lineno, msg);
      return TFS_ECONFIG;
    }
  }
  return 0;
}

/* The setting of key: its line, or NULL. */
static cline_t *find(config_t *c, const char *key) {
  for (size_t i = 0; i < c->n; i++)
    if (c->v[i].key && !strcmp(c->v[i].key, key))
      return &c->v[i];
  return NULL;
}

int tfs_config_get(tfs_store_t *store, const char *key, char **value, char *why, size_t whylen) {
  config_t c;
  *value = NULL;
  int err = tfs_config_check(key, NULL, why, whylen);
  if (!err)
    err = config_read(store, &c, why, whylen);
  else
    memset(&c, 0, sizeof c);
  cline_t *l = err ? NULL : find(&c, key);
  if (l && !(*value = strdup(l->value)))
    err = -ENOMEM;
  config_free(&c);
  return err;
}

int tfs_config_list(tfs_store_t *store, char ***keys, char ***values, char *why, size_t whylen) {
  config_t c;
  *keys = *values = NULL;
  int err = config_read(store, &c, why, whylen);
  size_t n = 0;
  for (size_t i = 0; i < c.n; i++)
    n += c.v[i].key != NULL;
  char **k = err ? NULL : calloc(n + 1, sizeof *k), **v = err ? NULL : calloc(n + 1, sizeof *v);
  if (!err && (!k || !v))
    err = -ENOMEM;
  for (size_t i = 0, j = 0; !err && i < c.n; i++) {
    if (!c.v[i].key)
      continue;
    if (!(k[j] = strdup(c.v[i].key)) || !(v[j] = strdup(c.v[i].value)))
      err = -ENOMEM;
    j++;
  }
  config_free(&c);
  if (err) {
    tfs_strv_free(k);
    tfs_strv_free(v);
    return err;
  }
  *keys = k;
  *values = v;
  return 0;
}

/* The file with key set to value (NULL: without it): every other line as
 * it was, the setting in the place of its first line or appended. */
static char *render(config_t *c, const char *key, const char *value) {
  size_t cap = 64 + strlen(key) + (value ? strlen(value) : 0);
  for (size_t i = 0; i < c->n; i++)
    cap += strlen(c->v[i].text) + 1 + (c->v[i].key ? strlen(c->v[i].key) + 4 : 0);
  char *out = malloc(cap), *o = out;
  int done = 0;
  if (!out)
    return NULL;
  for (size_t i = 0; i < c->n; i++) {
    cline_t *l = &c->v[i];
    if (l->key && !strcmp(l->key, key)) {
      if (value && !done)
        o += sprintf(o, "%s = %s\n", key, value);
      done = 1;
      continue;
    }
    o += sprintf(o, "%s\n", l->text);
  }
  if (value && !done)
    o += sprintf(o, "%s = %s\n", key, value);
  *o = 0;
  return out;
}

int tfs_config_set(tfs_store_t *store, const char *key, const char *value, char *why,
                   size_t whylen) {
  int err = tfs_config_check(key, value, why, whylen);
  if (err)
    return err;
  /* The state directory's flock around the read-modify-write, so that two
   * sets never lose one. */
  int lock TFS_AUTOCLOSE = tfs__dir_lock(store->fd);
  if (lock < 0)
    return lock;
  config_t c;
  err = config_read(store, &c, why, whylen);
  char *text = err ? NULL : render(&c, key, value);
  if (!err && !text)
    err = -ENOMEM;
  if (!err)
    err = tfs__write_atomic(store->fd, CONFIG_FILE, text, strlen(text));
  if (err && err != TFS_ECONFIG && why && whylen)
    snprintf(why, whylen, "cannot write the store's config %s/%s: %s", tfs_store_path(store),
             CONFIG_FILE, tfs_strerror(err));
  free(text);
  config_free(&c);
  return err;
}

/* ---- the store's defaults of a task's limits ----------------------------- */

/* The config key of a limit: "limit.mem". */
static void config_key(int which, char *buf, size_t len) {
  snprintf(buf, len, "limit.%s", tfs_limit_name((tfs_limit_t)which));
}

/* Takes the store's defaults for what was not given. The file's values
 * were checked when they were set; one edited by hand is checked here. */
static int merge_defaults(tfs_store_t *store, tfs_limits_t *l, char *why, size_t whylen) {
  char **keys = NULL, **values = NULL, key[32];
  int err = tfs_config_list(store, &keys, &values, why, whylen);
  for (size_t i = 0; !err && keys && keys[i]; i++) {
    if (!strcmp(keys[i], "timeout") && l->timeout_from == TFS_FROM_NONE) {
      err = tfs_timeout_parse(values[i], &l->timeout_ms, why, whylen);
      l->timeout_from = TFS_FROM_CONFIG;
      continue;
    }
    for (int w = 0; w < TFS_LIMIT_COUNT && !err; w++) {
      config_key(w, key, sizeof key);
      if (!strcmp(keys[i], key) && l->v[w].from == TFS_FROM_NONE) {
        err = tfs_limit_parse((tfs_limit_t)w, values[i], &l->v[w].value, why, whylen);
        l->v[w].from = TFS_FROM_CONFIG;
      }
    }
  }
  if (err == TFS_ELIMIT) {
    /* A value edited by hand: say where it came from. */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", why ? why : "");
    if (why && whylen)
      snprintf(why, whylen, "the store's config %s/config holds a bad default: %s",
               tfs_store_path(store), msg);
    err = TFS_ECONFIG;
  }
  tfs_strv_free(keys);
  tfs_strv_free(values);
  return err;
}

/* The store's defaults for what was not given, then the hard limits this
 * process has (core/limits.c). */
int tfs_limits_resolve(tfs_store_t *store, tfs_limits_t *l, char *why, size_t whylen) {
  int err = store ? merge_defaults(store, l, why, whylen) : 0;
  return err ? err : tfs__limits_check_hard(l, why, whylen);
}
