/* Important lines: the first K and the last K lines the classifier marks,
 * with their line numbers, so that an early failure survives a flood of
 * later output and the end of a run is still visible; and the lead, the
 * first error, with the lines around it (core/lead.c).
 *
 * Memory is bounded by 2 * K kept texts of at most TFS_IMPORTANT_TEXT_MAX
 * bytes each, the lead and TFS_CONTEXT_MAX context lines, whatever the
 * input: only a bounded prefix of a line is ever copied. Kept texts are
 * valid UTF-8 without control bytes (other than tab) so that they can go
 * into JSON and onto a terminal as they are. */
#include <errno.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/important_text.h"
#include "core/lead.h"

static const char *const kind_names[] = {
    [TFS_LINE_PLAIN] = "plain",     [TFS_LINE_ERROR] = "error",     [TFS_LINE_WARNING] = "warning",
    [TFS_LINE_FAILURE] = "failure", [TFS_LINE_SUMMARY] = "summary", [TFS_LINE_CONTEXT] = "context",
};

#define NKINDS (sizeof(kind_names) / sizeof(kind_names[0]))

const char *tfs_line_kind_name(tfs_line_kind_t k) {
  if ((unsigned)k >= NKINDS)
    return "unknown";
  return kind_names[k];
}

/* Names the kinds a kept line can have: "context" names the lines around
 * the lead, never one of the first or last K. */
int tfs_line_kind_parse(const char *name, tfs_line_kind_t *out) {
  if (!name)
    return TFS_EBADID;
  for (size_t i = 0; i < NKINDS; i++) {
    if (i == TFS_LINE_CONTEXT)
      continue;
    if (strcmp(name, kind_names[i]) == 0) {
      if (out)
        *out = (tfs_line_kind_t)i;
      return 0;
    }
  }
  return TFS_EBADID;
}

/* ---- feeding state ------------------------------------------------------ */

/* The last important line fed, as it came, with what the classifier said
 * of it: the same line again (a warning printed in a loop, a compiler
 * repeating one diagnostic, a retry message) is not classified again. */
enum { MEMO_MAX = 512 };
typedef struct {
  size_t len; /* 0: none */
  int kind, rank, block;
  char line[MEMO_MAX];
} memo_t;

/* A fed line of the last ring: its prefix (pending RAW_TAKEN), or, fed by
 * tfs_important_feed_ref() and not yet settled, only where the line is
 * (RAW_REF). */
enum { RAW_NONE = 0, RAW_TAKEN = 1, RAW_REF = 2 };
typedef struct {
  tfs__text_raw_t t; /* t.pending: RAW_* */
  const char *ref;
  size_t ref_len;
} ring_raw_t;

/* What feeding keeps beside the public struct (tfs_important_t.raw): the
 * memo, the last ring's fed lines, and how many of the newest of them may
 * still be references (fed since the last settle). */
struct tfs__important_raw {
  memo_t memo;
  size_t nref;
  ring_raw_t ring[]; /* k */
};

/* ---- first K / last K ----------------------------------------------------- */

int tfs_important_init(tfs_important_t *imp, int k) {
  memset(imp, 0, sizeof(*imp));
  if (k <= 0)
    k = TFS_IMPORTANT_K_DEFAULT;
  if (k > TFS_IMPORTANT_K_MAX)
    return -EINVAL;
  imp->first = calloc((size_t)k, sizeof(*imp->first));
  imp->last = calloc((size_t)k, sizeof(*imp->last));
  if (!imp->first || !imp->last) {
    free(imp->first);
    free(imp->last);
    memset(imp, 0, sizeof(*imp));
    return -ENOMEM;
  }
  imp->k = k;
  return 0;
}

void tfs_important_free(tfs_important_t *imp) {
  if (!imp)
    return;
  if (imp->first)
    for (size_t i = 0; i < imp->nfirst; i++)
      free(imp->first[i].text);
  if (imp->last)
    for (size_t i = 0; i < (size_t)imp->k; i++)
      free(imp->last[i].text);
  free(imp->first);
  free(imp->last);
  free(imp->lead.text);
  for (size_t i = 0; i < imp->ncontext; i++)
    free(imp->context[i].text);
  free(imp->context);
  free(imp->raw);
  tfs__lead_free(imp);
  memset(imp, 0, sizeof(*imp));
}

/* The slot the next important line goes to: one of the first K, else the
 * ring's next one (the oldest line, whose text is freed). *ring is the
 * ring's index, or -1 for one of the first K. */
static inline tfs_important_line_t *next_slot(tfs_important_t *imp, ptrdiff_t *ring) {
  size_t k = (size_t)imp->k;
  *ring = -1;
  if (imp->nfirst < k)
    return &imp->first[imp->nfirst++];
  /* last_head is the slot written next, which holds the oldest line once
   * the ring is full. */
  tfs_important_line_t *slot = &imp->last[imp->last_head];
  if (slot->text) { /* a fed line's is made only when it is read */
    free(slot->text);
    slot->text = NULL;
  }
  if (imp->raw)
    imp->raw->ring[imp->last_head].t.pending = RAW_NONE;
  *ring = (ptrdiff_t)imp->last_head;
  imp->last_head = imp->last_head + 1 == k ? 0 : imp->last_head + 1; /* no division per line */
  if (imp->nlast < k)
    imp->nlast++;
  return slot;
}

int tfs_important_add(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind, const char *text,
                      size_t len) {
  if (!imp->first || !imp->last || imp->k <= 0)
    return -EINVAL;
  if (!text)
    len = 0;
  char *t = tfs__important_text(text ? text : "", len, TFS_IMPORTANT_TEXT_MAX);
  if (!t)
    return -ENOMEM;
  ptrdiff_t ring;
  tfs_important_line_t *slot = next_slot(imp, &ring);
  *slot = (tfs_important_line_t){.line = lineno, .kind = kind, .text = t};
  imp->total++;
  return 0;
}

/* A fed line for the last ring keeps only the prefix its text is made
 * from; tfs_important_last() makes the text when the line is read. Of a
 * flood of important lines (every line of a compiler's output can be a
 * located diagnostic) nearly all are pushed out of the ring before anyone
 * reads them, so they cost a copy, not a text; fed by reference (ref), not
 * even the copy: the slot points at the line until the caller settles. */
static inline int keep_fed(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind,
                           const char *line, size_t len, int ref) {
  if (!imp->first || !imp->last || imp->k <= 0)
    return -EINVAL;
  if (imp->nfirst < (size_t)imp->k)
    return tfs_important_add(imp, lineno, kind, line, len);
  if (!imp->raw)
    return -ENOMEM;
  ptrdiff_t ring;
  tfs_important_line_t *slot = next_slot(imp, &ring);
  *slot = (tfs_important_line_t){.line = lineno, .kind = kind, .text = NULL};
  ring_raw_t *r = &imp->raw->ring[ring];
  if (ref) {
    r->ref = line;
    r->ref_len = len;
    r->t.pending = RAW_REF;
    imp->raw->nref++;
  } else {
    tfs__text_take(&r->t, line, len);
    r->t.pending = RAW_TAKEN;
  }
  imp->total++;
  return 0;
}

/* a and b hold the same n bytes. Inline, 16 bytes at a time with the last
 * 16 overlapping, since it runs once per line of a flood (libc's memcmp
 * was a call and 6 ns of each 80-byte line). */
static inline int same_bytes(const char *a, const char *b, size_t n) {
#if defined(__SSE2__)
  if (n >= 16) {
    for (size_t i = 0; i + 16 < n; i += 16)
      if (_mm_movemask_epi8(
              _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(a + i)),
                             _mm_loadu_si128((const __m128i *)(const void *)(b + i)))) != 0xffff)
        return 0;
    return _mm_movemask_epi8(_mm_cmpeq_epi8(
               _mm_loadu_si128((const __m128i *)(const void *)(a + n - 16)),
               _mm_loadu_si128((const __m128i *)(const void *)(b + n - 16)))) == 0xffff;
  }
#endif
  return memcmp(a, b, n) == 0;
}

/* Classifies a line, or takes the memo's verdict when it is the memo's
 * line (the classifier is a function of the bytes alone). An important
 * line becomes the memo; the feeding state is made for the first. */
static inline tfs_line_kind_t classify_fed(tfs_important_t *imp, const char *line, size_t len,
                                           int *rank, int *block) {
  memo_t *m = imp->raw ? &imp->raw->memo : NULL;
  /* kind PLAIN: no memo (none yet, or its line was too long to keep). */
  if (m && m->kind != TFS_LINE_PLAIN && m->len == len && same_bytes(m->line, line, len)) {
    *rank = m->rank;
    *block = m->block;
    return (tfs_line_kind_t)m->kind;
  }
  /* The rank only matters while the lead may change: a memo made once it
   * is final is only used while it stays final. */
  tfs_line_kind_t kind =
      imp->lead_final ? tfs_classify_line(line, len) : tfs__classify(line, len, rank, block);
  if (kind == TFS_LINE_PLAIN || imp->k <= 0)
    return kind;
  if (!imp->raw && !(imp->raw = calloc(1, sizeof *imp->raw + (size_t)imp->k * sizeof(ring_raw_t))))
    return kind;
  m = &imp->raw->memo;
  m->len = 0;
  m->kind = TFS_LINE_PLAIN;
  if (len <= MEMO_MAX) {
    memcpy(m->line, line, len);
    m->len = len;
    m->kind = (int)kind;
    m->rank = *rank;
    m->block = *block;
  }
  return kind;
}

/* Inlined into both feeds, so that a flood of the memo's line costs the
 * compare and a slot of the ring, without a call between. */
__attribute__((always_inline)) static inline int feed(tfs_important_t *imp, int64_t lineno,
                                                      const char *line, size_t len, int ref) {
  int rank = 0, block = 0, err = 0;
  tfs_line_kind_t kind = classify_fed(imp, line, len, &rank, &block);
  if (kind != TFS_LINE_PLAIN)
    err = keep_fed(imp, lineno, kind, line, len, ref);
  /* The lead and its context: only until they are final, so that the
   * flood after a failure costs no more than the classifier. */
  if (!imp->lead_final && !err)
    err = tfs__lead_feed(imp, lineno, line, len, kind, rank, block);
  return err;
}

int tfs_important_feed(tfs_important_t *imp, int64_t lineno, const char *line, size_t len) {
  return feed(imp, lineno, line, len, 0);
}

int tfs_important_feed_ref(tfs_important_t *imp, int64_t lineno, const char *line, size_t len) {
  return feed(imp, lineno, line, len, 1);
}

/* Copies the prefix of a ring line still fed by reference. */
static void take_ref(ring_raw_t *r) {
  if (r->t.pending != RAW_REF)
    return;
  tfs__text_take(&r->t, r->ref, r->ref_len);
  r->t.pending = RAW_TAKEN;
  r->ref = NULL;
}

/* The references are the newest nref ring lines (each fed line takes the
 * next slot), or the whole ring when more were fed: at most K copies
 * however many lines came since the last settle. */
void tfs_important_settle(tfs_important_t *imp) {
  if (!imp->raw || !imp->raw->nref || imp->k <= 0)
    return;
  size_t k = (size_t)imp->k, n = imp->raw->nref < imp->nlast ? imp->raw->nref : imp->nlast;
  for (size_t i = 1; i <= n; i++)
    take_ref(&imp->raw->ring[(imp->last_head + k - i) % k]);
  imp->raw->nref = 0;
}

int tfs_important_set_lead(tfs_important_t *imp, int64_t lineno, tfs_line_kind_t kind,
                           const char *text, size_t len) {
  char *t = tfs__important_text(text ? text : "", text ? len : 0, TFS_IMPORTANT_TEXT_MAX);
  if (!t)
    return -ENOMEM;
  free(imp->lead.text);
  imp->lead = (tfs_important_line_t){.line = lineno, .kind = kind, .text = t};
  imp->lead_final = 1;
  return 0;
}

int tfs_important_add_context(tfs_important_t *imp, int64_t lineno, const char *text, size_t len) {
  int err = tfs__context_insert(imp, lineno, text, len);
  if (!err)
    imp->lead_final = 1;
  return err;
}

/* The text of a fed ring line is made on its first read: a cache filled
 * behind a const pointer, which changes nothing a reader can tell apart
 * (the line reads the same before and after). */
const tfs_important_line_t *tfs_important_last(const tfs_important_t *imp, size_t i) {
  if (!imp->last || i >= imp->nlast)
    return NULL;
  size_t k = (size_t)imp->k;
  size_t j = (imp->last_head + k - imp->nlast + i) % k;
  tfs_important_line_t *l = &imp->last[j];
  ring_raw_t *r = imp->raw ? &imp->raw->ring[j] : NULL;
  if (r)
    take_ref(r); /* read before the settle: the line is still there */
  if (r && r->t.pending && (l->text = tfs__text_finish(&r->t, TFS_IMPORTANT_TEXT_MAX)))
    r->t.pending = RAW_NONE;
  return l;
}
