/* The last resort of the maxBytes bound (output.c): once lines have been
 * dropped, the answer's own long strings -- the command, cwd, reason, the
 * match, at the end even the key and the hint -- are shortened with an
 * ellipsis, and the answer's omitted.shortened names each one, so that
 * the bound holds for any task (a 3000-byte command, a cwd deep in a
 * tree). The members an answer can lose are output.c's lists, in
 * triage order; these are the steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define ELLIPSIS "\xe2\x80\xa6" /* U+2026, 3 bytes */
/* An argv longer than this is first cut to its first arguments and a
 * count of the rest. */
#define ARGV_KEPT 3

/* The string slot of a field: a top-level member, match.text, or (for
 * "command") the argv's elements, from the longest. */
static json_t *longest_in(json_t *arr) {
  json_t *best = NULL, *e;
  size_t i;
  json_array_foreach(arr, i, e) {
    if (json_is_string(e) && (!best || json_string_length(e) > json_string_length(best)))
      best = e;
  }
  return best;
}

static json_t *field_string(json_t *o, const char *field) {
  if (!strcmp(field, "command"))
    return longest_in(json_object_get(o, "command"));
  if (!strcmp(field, "match"))
    return json_object_get(json_object_get(o, "match"), "text");
  json_t *v = json_object_get(o, field);
  return json_is_string(v) ? v : NULL;
}

static void note(json_t *shortened, const char *field) {
  size_t i;
  json_t *e;
  json_array_foreach(shortened, i, e) {
    if (!strcmp(json_string_value(e), field))
      return;
  }
  json_array_append_new(shortened, json_string(field));
}

/* A long argv becomes its first ARGV_KEPT arguments and "… (N more
 * arguments)". */
static int collapse_argv(json_t *o, json_t *shortened) {
  json_t *argv = json_object_get(o, "command");
  size_t n = json_array_size(argv);
  if (n <= ARGV_KEPT + 1)
    return 0;
  char more[64];
  snprintf(more, sizeof more, ELLIPSIS " (%zu more arguments)", n - ARGV_KEPT);
  while (json_array_size(argv) > ARGV_KEPT)
    json_array_remove(argv, json_array_size(argv) - 1);
  json_array_append_new(argv, json_string(more));
  note(shortened, "command");
  return 1;
}

/* Cuts s to about keep bytes (at a character boundary) and an ellipsis. */
static void cut_string(json_t *s, size_t keep) {
  const char *v = json_string_value(s);
  size_t at = tfs_utf8_cut(v, json_string_length(s), keep);
  char *c = malloc(at + sizeof ELLIPSIS);
  if (!c)
    return;
  memcpy(c, v, at);
  memcpy(c + at, ELLIPSIS, sizeof ELLIPSIS);
  json_string_set(s, c);
  free(c);
}

int mcp_shorten(json_t *o, const char *const *fields, size_t need, size_t keep, json_t *shortened) {
  for (const char *const *f = fields; *f; f++)
    if (!strcmp(*f, "command") && collapse_argv(o, shortened))
      return 1;
  /* The longest string of the fields, if it is longer than keep. */
  json_t *best = NULL;
  const char *best_field = NULL;
  for (const char *const *f = fields; *f; f++) {
    json_t *s = field_string(o, *f);
    if (s && json_string_length(s) > keep + sizeof ELLIPSIS - 1 &&
        (!best || json_string_length(s) > json_string_length(best))) {
      best = s;
      best_field = *f;
    }
  }
  if (!best)
    return 0;
  /* Each byte cut leaves both copies (structured and text): at least two
   * bytes of result. */
  size_t len = json_string_length(best), cut = need / 2 + sizeof ELLIPSIS;
  cut_string(best, len > keep + cut ? len - cut : keep);
  note(shortened, best_field);
  return 1;
}

int mcp_shorten_nulls(json_t *o) {
  int changed = 0;
  const char *key;
  json_t *v, *tmp;
  json_object_foreach_safe(o, tmp, key, v) {
    if (json_is_null(v)) {
      json_object_del(o, key);
      changed = 1;
    }
  }
  json_t *imp = json_object_get(o, "important");
  static const char *const lists[] = {"first", "last"};
  for (int j = 0; j < 2; j++) {
    json_t *in = j ? o : imp;
    for (int i = 0; i < 2; i++)
      if (json_is_array(json_object_get(in, lists[i])) &&
          !json_array_size(json_object_get(in, lists[i]))) {
        json_object_del(in, lists[i]);
        changed = 1;
      }
  }
  return changed;
}

int mcp_shorten_drop(json_t *o, const char *const *members) {
  for (const char *const *f = members; *f; f++)
    if (json_object_get(o, *f)) {
      json_object_del(o, *f);
      return 1;
    }
  return 0;
}
