/* Tool arguments checked against the tool's own inputSchema (schema.c),
 * so that the schema a client sees is the one rule: a bound, a type or an
 * enum is written once, and a wrongly typed argument is reported as
 * wrongly typed ("waitMs must be an integer from 0 to 50000 (got -1)").
 *
 * The subset of JSON Schema the tool schemas use: type (one name), enum,
 * minimum, maximum, minLength, minItems, items, properties, required,
 * additionalProperties (a schema) and anyOf. Properties the schema does
 * not name are left to the tool (unlisted ones are allowed), and null for
 * an optional property means "not given", as many clients send it.
 *
 * Numbers are checked here before anything converts them (issue 11: a
 * waitMs of 1e300 converted to int64, a sinceLine of 2^63-1 overflowed
 * the page arithmetic): an integer is a JSON integer, or a real that is
 * integral and exact (|n| <= 2^53 - 1: 1000.0 and -0.0 are integers; 1.5,
 * 1e300 and 9.3e18 are not), and every integer of every tool schema has a
 * minimum and a maximum within 2^53 (tests/test_mcp_numbers.c), so a value
 * that passes converts exactly and sums of two stay far from overflow.
 * Integers beyond int64 never get here as integers: the dispatcher reads
 * them as reals (dispatch.c). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mcp/internal.h"

/* The JSON type of v in words, and its value when short. */
static void describe_value(const json_t *v, char *out, size_t outlen) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    snprintf(out, outlen, "an object");
    break;
  case JSON_ARRAY:
    snprintf(out, outlen, "an array");
    break;
  case JSON_STRING:
    snprintf(out, outlen, "the string \"%.40s\"", json_string_value(v));
    break;
  case JSON_INTEGER:
    snprintf(out, outlen, "the number %" JSON_INTEGER_FORMAT, json_integer_value(v));
    break;
  case JSON_REAL:
    snprintf(out, outlen, "the number %g", json_real_value(v));
    break;
  case JSON_TRUE:
  case JSON_FALSE:
    snprintf(out, outlen, "%s", json_is_true(v) ? "true" : "false");
    break;
  default:
    snprintf(out, outlen, "null");
  }
}

/* What a schema accepts, in words: "an integer from 0 to 50000". */
static void describe_schema(const json_t *s, char *out, size_t outlen) {
  json_t *any = json_object_get(s, "anyOf");
  if (json_is_array(any)) {
    size_t o = 0, i;
    json_t *alt;
    json_array_foreach(any, i, alt) {
      char one[160];
      describe_schema(alt, one, sizeof one);
      o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0, "%s%s", i ? " or " : "", one);
    }
    return;
  }
  json_t *en = json_object_get(s, "enum");
  if (json_is_array(en)) {
    size_t o = (size_t)snprintf(out, outlen, "one of");
    size_t i;
    json_t *e;
    json_array_foreach(en, i, e) o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0,
                                                       "%s %s", i ? "," : "", json_string_value(e));
    return;
  }
  const char *type = json_string_value(json_object_get(s, "type"));
  json_t *min = json_object_get(s, "minimum"), *max = json_object_get(s, "maximum");
  if (type && !strcmp(type, "integer") && min && max)
    snprintf(out, outlen, "an integer from %" JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT,
             json_integer_value(min), json_integer_value(max));
  else if (type && !strcmp(type, "integer") && min)
    snprintf(out, outlen, "an integer of at least %" JSON_INTEGER_FORMAT, json_integer_value(min));
  else if (type && !strcmp(type, "array") && json_object_get(s, "items")) {
    const char *it = json_string_value(json_object_get(json_object_get(s, "items"), "type"));
    snprintf(out, outlen, "%s array of %ss", json_object_get(s, "minItems") ? "a non-empty" : "an",
             it ? it : "value");
  } else if (type && !strcmp(type, "string") && json_object_get(s, "minLength"))
    snprintf(out, outlen, "a non-empty string");
  else if (type && !strcmp(type, "object"))
    snprintf(out, outlen, "an object");
  else if (type && !strcmp(type, "boolean"))
    snprintf(out, outlen, "true or false");
  else
    snprintf(out, outlen, "%s %s", type && strchr("aeiou", type[0]) ? "an" : "a",
             type ? type : "value");
}

/* The largest integer a double holds exactly, and every one below it. */
#define EXACT_MAX 9007199254740991.0

static int is_integer(const json_t *v, json_int_t *out) {
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return 1;
  }
  if (!json_is_real(v))
    return 0;
  /* Compared first, converted after: a double outside int64 (or NaN,
   * which fails both comparisons) must never reach the conversion. */
  double d = json_real_value(v);
  if (!(d >= -EXACT_MAX && d <= EXACT_MAX) || d != (double)(json_int_t)d)
    return 0;
  *out = (json_int_t)d;
  return 1;
}

static int check(const json_t *s, const json_t *v, const char *path, char *msg, size_t msglen);

/* Fails with "<path> must be <what the schema accepts> (got <v>)". */
static int mismatch(const json_t *s, const json_t *v, const char *path, char *msg, size_t msglen) {
  char want[400], got[80];
  describe_schema(s, want, sizeof want);
  describe_value(v, got, sizeof got);
  snprintf(msg, msglen, "%s must be %s (got %s)", path, want, got);
  return -1;
}

static int type_ok(const char *type, const json_t *v) {
  json_int_t i;
  if (!type)
    return 1;
  if (!strcmp(type, "string"))
    return json_is_string(v);
  if (!strcmp(type, "integer"))
    return is_integer(v, &i);
  if (!strcmp(type, "number"))
    return json_is_number(v);
  if (!strcmp(type, "boolean"))
    return json_is_boolean(v);
  if (!strcmp(type, "object"))
    return json_is_object(v);
  if (!strcmp(type, "array"))
    return json_is_array(v);
  if (!strcmp(type, "null"))
    return json_is_null(v);
  return 1;
}

/* The members of an object against properties, required and
 * additionalProperties. */
static int check_object(const json_t *s, const json_t *v, const char *path, char *msg,
                        size_t msglen) {
  json_t *props = json_object_get(s, "properties");
  json_t *req = json_object_get(s, "required");
  json_t *extra = json_object_get(s, "additionalProperties");
  size_t i;
  json_t *name;
  json_array_foreach(req, i, name) {
    const json_t *m = json_object_get(v, json_string_value(name));
    if (!m || json_is_null(m)) {
      snprintf(msg, msglen, "%s%s%s is required", path, *path ? "." : "", json_string_value(name));
      return -1;
    }
  }
  const char *key;
  json_t *m;
  json_object_foreach((json_t *)v, key, m) {
    json_t *ps = json_object_get(props, key);
    if (!ps && !json_is_object(extra))
      continue;
    if (json_is_null(m) && ps)
      continue; /* an optional property sent as null: not given */
    char sub[200];
    snprintf(sub, sizeof sub, "%s%s%.64s", path, *path ? "." : "", key);
    if (check(ps ? ps : extra, m, sub, msg, msglen))
      return -1;
  }
  return 0;
}

static int check(const json_t *s, const json_t *v, const char *path, char *msg, size_t msglen) {
  json_t *any = json_object_get(s, "anyOf");
  if (json_is_array(any)) {
    size_t i;
    json_t *alt;
    json_array_foreach(any, i, alt) {
      char ignored[8];
      if (!check(alt, v, path, ignored, sizeof ignored))
        return 0;
    }
    return mismatch(s, v, path, msg, msglen);
  }
  if (!type_ok(json_string_value(json_object_get(s, "type")), v))
    return mismatch(s, v, path, msg, msglen);
  json_t *en = json_object_get(s, "enum");
  if (json_is_array(en)) {
    size_t i;
    json_t *e;
    int found = 0;
    json_array_foreach(en, i, e) found |= json_equal(e, (json_t *)v);
    if (!found)
      return mismatch(s, v, path, msg, msglen);
  }
  json_int_t n;
  json_t *min = json_object_get(s, "minimum"), *max = json_object_get(s, "maximum");
  if (is_integer(v, &n) &&
      ((min && n < json_integer_value(min)) || (max && n > json_integer_value(max))))
    return mismatch(s, v, path, msg, msglen);
  json_t *minlen = json_object_get(s, "minLength");
  if (json_is_string(v) && minlen && json_string_length(v) < (size_t)json_integer_value(minlen))
    return mismatch(s, v, path, msg, msglen);
  if (json_is_array(v)) {
    json_t *minitems = json_object_get(s, "minItems");
    if (minitems && json_array_size(v) < (size_t)json_integer_value(minitems))
      return mismatch(s, v, path, msg, msglen);
    json_t *items = json_object_get(s, "items"), *e;
    size_t i;
    json_array_foreach(v, i, e) {
      char sub[200];
      snprintf(sub, sizeof sub, "%s[%zu]", path, i);
      if (items && check(items, e, sub, msg, msglen))
        return -1;
    }
  }
  if (json_is_object(v))
    return check_object(s, v, path, msg, msglen);
  return 0;
}

int mcp_validate_args(const json_t *schema, const json_t *args, char *msg, size_t msglen) {
  return schema ? check(schema, args, "", msg, msglen) : 0;
}

int64_t mcp_arg_i64(json_t *args, const char *name, int64_t def) {
  json_int_t v;
  json_t *j = json_object_get(args, name);
  return j && is_integer(j, &v) ? (int64_t)v : def;
}
