/* A strict JSON reader for record.json: the text becomes a flat array of
 * nodes (no allocation per value, no hashing), which the record parser
 * walks. Loading records is what a listing does 100,000 times, and a
 * jansson tree cost most of it.
 *
 * It accepts only what jansson accepts too, and gives the same values: in
 * strict mode anything unusual (a real number, an escaped key, nesting
 * deeper than 64, an integer of more than 18 digits) is refused, and the
 * caller lets jansson decide (record_parse.c). Duplicate keys are allowed,
 * the last one counting, as in jansson. Strings keep their raw bytes;
 * tfs__json_str() unescapes on demand. */
#include "core/json.h"

#include <string.h>

typedef struct {
  const char *p, *end;
  tfs__jdoc_t *d;
  int strict;
} jr_t;

static int ws(jr_t *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
  return r->p < r->end;
}

static int push(jr_t *r, int type) {
  tfs__jdoc_t *d = r->d;
  if (d->n == d->cap) {
    size_t cap = d->cap * 2;
    tfs__jnode_t *v = d->v == d->stack ? malloc(cap * sizeof *v) : realloc(d->v, cap * sizeof *v);
    if (!v)
      return -1;
    if (d->v == d->stack)
      memcpy(v, d->stack, d->n * sizeof *v);
    d->v = v;
    d->cap = cap;
  }
  tfs__jnode_t *n = &d->v[d->n];
  memset(n, 0, sizeof *n);
  n->type = (uint8_t)type;
  return (int)d->n++;
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (unsigned)(c - '0');
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
      v |= (unsigned)((c | 0x20) - 'a' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

/* Checks a \uXXXX escape at p (after the backslash), surrogate pairs
 * included; returns the bytes it spans, or -1. */
static int check_u(const char *p, const char *end) {
  unsigned cp, lo;
  if (end - p < 5 || hex4(p + 1, &cp))
    return -1;
  if (cp >= 0xdc00 && cp <= 0xdfff)
    return -1; /* a low surrogate alone */
  if (cp < 0xd800 || cp > 0xdbff)
    return 5;
  if (end - p < 11 || p[5] != '\\' || p[6] != 'u' || hex4(p + 7, &lo) || lo < 0xdc00 || lo > 0xdfff)
    return -1;
  return 11;
}

/* A string at r->p (its opening quote). */
static int string(jr_t *r, int *idx) {
  const char *s = ++r->p;
  int esc = 0, high = 0;
  while (r->p < r->end && *r->p != '"') {
    unsigned char c = (unsigned char)*r->p;
    if (c < 0x20)
      return -1;
    high |= c >= 0x80;
    if (c != '\\') {
      r->p++;
      continue;
    }
    esc = 1;
    if (r->end - r->p < 2)
      return -1;
    /* \" \\ \/ \b \f \n \r \t, or \uXXXX (a surrogate pair whole). */
    char e = r->p[1];
    int span = e && strchr("\"\\/bfnrt", e) ? 2 : e == 'u' ? check_u(r->p + 1, r->end) + 1 : 0;
    if (span <= 0)
      return -1;
    r->p += span;
  }
  if (r->p >= r->end || (high && !tfs__utf8_valid(s, (size_t)(r->p - s))))
    return -1;
  if ((*idx = push(r, TFS__J_STR)) < 0)
    return -1;
  tfs__jnode_t *n = &r->d->v[*idx];
  n->s = s;
  n->len = (uint32_t)(r->p - s);
  n->esc = (uint8_t)esc;
  r->p++;
  return 0;
}

/* A number: an integer of at most 18 digits (strict), or, outside strict
 * mode, any JSON number (a real is kept as such, its value unused). */
static int number(jr_t *r, int *idx) {
  const char *s = r->p;
  int neg = *r->p == '-';
  if (neg)
    r->p++;
  const char *digits = r->p;
  while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
    r->p++;
  size_t nd = (size_t)(r->p - digits);
  if (nd == 0 || (nd > 1 && *digits == '0'))
    return -1;
  int real = r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E');
  if (real && r->strict)
    return -1;
  if (real) {
    if (*r->p == '.' && (++r->p >= r->end || *r->p < '0' || *r->p > '9'))
      return -1;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
      r->p++;
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
      if (++r->p < r->end && (*r->p == '+' || *r->p == '-'))
        r->p++;
      if (r->p >= r->end || *r->p < '0' || *r->p > '9')
        return -1;
      while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
        r->p++;
    }
  } else if (nd > 18) {
    return -1; /* jansson decides about the big ones */
  }
  if ((*idx = push(r, real ? TFS__J_REAL : TFS__J_INT)) < 0)
    return -1;
  tfs__jnode_t *n = &r->d->v[*idx];
  n->s = s;
  n->len = (uint32_t)(r->p - s);
  int64_t v = 0;
  for (const char *q = digits; !real && q < digits + nd; q++)
    v = v * 10 + (*q - '0');
  n->i = neg ? -v : v;
  return 0;
}

static int literal(jr_t *r, int *idx) {
  static const struct {
    const char *w;
    int type;
  } lits[] = {{"null", TFS__J_NULL}, {"true", TFS__J_TRUE}, {"false", TFS__J_FALSE}};
  for (size_t i = 0; i < 3; i++) {
    size_t k = strlen(lits[i].w);
    if ((size_t)(r->end - r->p) >= k && !memcmp(r->p, lits[i].w, k)) {
      r->p += k;
      return (*idx = push(r, lits[i].type)) < 0 ? -1 : 0;
    }
  }
  return -1;
}

/* A scalar value at r->p; containers are handled by the caller's loop. */
static int scalar(jr_t *r, int *idx) {
  char c = *r->p;
  if (c == '"')
    return string(r, idx);
  if (c == '-' || (c >= '0' && c <= '9'))
    return number(r, idx);
  return literal(r, idx);
}

/* Opens a container: its node, and its place on the stack. */
static int open_container(jr_t *r, int *stack, int *depth, int max) {
  int idx = push(r, *r->p == '{' ? TFS__J_OBJ : TFS__J_ARR);
  if (idx < 0 || *depth >= max)
    return -1;
  stack[(*depth)++] = idx;
  r->p++;
  return 0;
}

/* The next value of the open container: "key": value in an object. */
static int member(jr_t *r, int *stack, int *depth, int max) {
  tfs__jnode_t *top = &r->d->v[stack[*depth - 1]];
  int idx;
  if (top->type == TFS__J_OBJ) {
    if (!ws(r) || *r->p != '"' || string(r, &idx))
      return -1;
    top = &r->d->v[stack[*depth - 1]];
    if (r->strict && r->d->v[idx].esc)
      return -1; /* an escaped key: jansson decides */
    if (!ws(r) || *r->p++ != ':')
      return -1;
  }
  if (!ws(r))
    return -1;
  top->kids++;
  if (*r->p == '{' || *r->p == '[')
    return open_container(r, stack, depth, max);
  return scalar(r, &idx);
}

int tfs__json_parse(const char *text, size_t len, int strict, tfs__jdoc_t *d) {
  enum { MAX_DEPTH = 4096 };
  int stack[MAX_DEPTH], depth = 0, max = strict ? 64 : MAX_DEPTH;
  jr_t r = {text, text + len, d, strict};
  d->v = d->stack;
  d->n = 0;
  d->cap = sizeof d->stack / sizeof *d->stack;
  if (!ws(&r) || (*r.p != '{' && *r.p != '['))
    return -1;
  if (open_container(&r, stack, &depth, max))
    return -1;
  while (depth > 0) {
    tfs__jnode_t *top = &d->v[stack[depth - 1]];
    char close = top->type == TFS__J_OBJ ? '}' : ']';
    if (!ws(&r))
      return -1;
    if (*r.p == close) {
      r.p++;
      top->end = (uint32_t)d->n;
      depth--;
      continue;
    }
    if (top->kids && *r.p++ != ',')
      return -1;
    if (member(&r, stack, &depth, max))
      return -1;
  }
  return ws(&r) ? -1 : 0; /* nothing but blanks after the top */
}

void tfs__json_free(tfs__jdoc_t *d) {
  if (d->v != d->stack)
    free(d->v);
  d->v = NULL;
}

/* Index just past the value at i (its subtree). */
static size_t skip(const tfs__jdoc_t *d, size_t i) {
  const tfs__jnode_t *n = &d->v[i];
  return n->type == TFS__J_OBJ || n->type == TFS__J_ARR ? n->end : i + 1;
}

int tfs__json_get(const tfs__jdoc_t *d, int obj, const char *key) {
  if (obj < 0 || d->v[obj].type != TFS__J_OBJ)
    return -1;
  size_t k = strlen(key);
  int found = -1;
  for (size_t i = (size_t)obj + 1; i < d->v[obj].end;) {
    const tfs__jnode_t *kn = &d->v[i];
    /* An escaped key can never be one of ours (strict mode refuses them;
     * jansson writes only special characters escaped). Last one wins. */
    if (!kn->esc && kn->len == k && !memcmp(kn->s, key, k))
      found = (int)i + 1;
    i = skip(d, i + 1);
  }
  return found;
}

int tfs__json_at(const tfs__jdoc_t *d, int arr, size_t i) {
  if (arr < 0 || d->v[arr].type != TFS__J_ARR || i >= d->v[arr].kids)
    return -1;
  size_t at = (size_t)arr + 1;
  while (i-- > 0)
    at = skip(d, at);
  return (int)at;
}

int tfs__json_next(const tfs__jdoc_t *d, int elem) {
  return (int)skip(d, (size_t)elem);
}

/* Decodes one \uXXXX (and its low surrogate) at p into out; returns the
 * input bytes used. */
static size_t put_u(const char *p, char *out, size_t *o) {
  unsigned cp, lo;
  hex4(p + 2, &cp);
  size_t used = 6;
  if (cp >= 0xd800 && cp <= 0xdbff) {
    hex4(p + 8, &lo);
    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    used = 12;
  }
  if (cp < 0x80) {
    out[(*o)++] = (char)cp;
  } else if (cp < 0x800) {
    out[(*o)++] = (char)(0xc0 | cp >> 6);
    out[(*o)++] = (char)(0x80 | (cp & 63));
  } else if (cp < 0x10000) {
    out[(*o)++] = (char)(0xe0 | cp >> 12);
    out[(*o)++] = (char)(0x80 | (cp >> 6 & 63));
    out[(*o)++] = (char)(0x80 | (cp & 63));
  } else {
    out[(*o)++] = (char)(0xf0 | cp >> 18);
    out[(*o)++] = (char)(0x80 | (cp >> 12 & 63));
    out[(*o)++] = (char)(0x80 | (cp >> 6 & 63));
    out[(*o)++] = (char)(0x80 | (cp & 63));
  }
  return used;
}

char *tfs__json_str(const tfs__jdoc_t *d, int i, size_t *len) {
  const tfs__jnode_t *n = &d->v[i];
  char *out = malloc((size_t)n->len + 1);
  if (!out)
    return NULL;
  size_t o = 0;
  for (size_t k = 0; k < n->len;) {
    char c = n->s[k];
    if (c != '\\') {
      out[o++] = c;
      k++;
      continue;
    }
    char e = n->s[k + 1];
    if (e == 'u') {
      k += put_u(n->s + k, out, &o);
      continue;
    }
    out[o++] = e == 'b'   ? '\b'
               : e == 'f' ? '\f'
               : e == 'n' ? '\n'
               : e == 'r' ? '\r'
               : e == 't' ? '\t'
                          : e;
    k += 2;
  }
  out[o] = '\0';
  if (len)
    *len = o;
  return out;
}
