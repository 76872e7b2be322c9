/* The anchor scan of the classifier: 16 positions at a time with SSE2 (a
 * bitset of byte pairs elsewhere), visiting a keyword family only where an
 * anchor sits. */
#include "core/classify.h"

/* ---- the anchor table ------------------------------------------------------ */

#if !defined(__SSE2__)

/* Bit (a | b << 8) is set for every byte pair that may anchor a keyword, in
 * every mix of case. Indexing by a 16-bit little-endian load of two bytes
 * makes the scan one load and one bit test per byte. */
static uint8_t anchors[65536 / 8];

static void anchor_set(unsigned a, unsigned b) {
  unsigned idx = a | b << 8;
  anchors[idx >> 3] |= (uint8_t)(1u << (idx & 7));
}

static void anchor_ci(const char *pair) {
  unsigned a = (unsigned char)pair[0], b = (unsigned char)pair[1];
  unsigned au = a >= 'a' && a <= 'z' ? a - 32 : a, bu = b >= 'a' && b <= 'z' ? b - 32 : b;
  anchor_set(a, b);
  anchor_set(au, b);
  anchor_set(a, bu);
  anchor_set(au, bu);
}

__attribute__((constructor)) static void anchors_init(void) {
  static const char *const pairs[] = {"rr", "wa", "fa", "pa", "xc", "eb", "cc", "du"};
  for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
    anchor_ci(pairs[i]);
  anchor_set(0xE2, 0x9C);
}

static inline int anchor_at(const unsigned char *p) {
  uint16_t w;
  memcpy(&w, p, 2);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = (uint16_t)(w >> 8 | w << 8);
#endif
  return anchors[w >> 3] & (1u << (w & 7));
}
#endif

/* The byte at p folded to lower case (letters only). */
#define LC(p) lower(*(p))

/* Looks at the keyword anchored at i, if any. A check of the next byte or
 * two comes first, so that the many plain words sharing an anchor
 * ("package", "default", "was", "current") cost next to nothing. */
static void anchor_visit(line_t *l, size_t i) {
  const unsigned char *s = l->s;
  size_t n = l->n;
  if (i + 1 >= n)
    return;
  unsigned char c1 = lower(s[i + 1]);
  unsigned char c2 = i + 2 < n ? lower(s[i + 2]) : 0;
  switch (lower(s[i])) {
  case 'r':
    if (c1 == 'r' && i > 0 && LC(s + i - 1) == 'e')
      tfs__cl_error(l, i);
    break;
  case 'w':
    if (c1 == 'a' && c2 == 'r')
      tfs__cl_warning(l, i);
    break;
  case 'f':
    if (c1 == 'a' && (c2 == 'i' || c2 == 't' || c2 == 'u'))
      tfs__cl_fa(l, i);
    break;
  case 'p':
    if (c1 == 'a' && (c2 == 's' || c2 == 'n'))
      tfs__cl_pa(l, i);
    break;
  case 'x':
    if (c1 == 'c' && c2 == 'e')
      tfs__cl_exception(l, i);
    break;
  case 'e':
    if (c1 == 'b' && i >= 4 && LC(s + i - 4) == 't')
      tfs__cl_traceback(l, i);
    break;
  case 'c':
    if (c1 == 'c' && i >= 2 && LC(s + i - 1) == 'u')
      tfs__cl_success(l, i);
    break;
  case 'd':
    if (c1 == 'u' && c2 == 'm')
      tfs__cl_dumped(l, i);
    break;
  case 0xE2:
    if (s[i + 1] == 0x9C)
      tfs__cl_cross(l, i);
    break;
  }
}

#if defined(__SSE2__)
#include <emmintrin.h>

/* Candidate anchors at 16 positions [i, i + 16): p points at byte i - 1 of
 * a window that holds bytes i - 1 .. i + 18. Bytes are folded to lower case
 * with | 0x20 (which maps only A-Z onto letters) and each anchor is checked
 * with the byte before or after it too ("e"+"rr", "wa"+"r", "fa"+"i|t|u",
 * "pa"+"s|n", "e"+"xc", "eb"+"a", "u"+"cc", "du"+"m"), so plain words that
 * share an anchor ("package", "was", "current", "module") rarely get past
 * this filter. Returns a bit per position. */
static inline unsigned block_mask(const unsigned char *p) {
  const __m128i fold = _mm_set1_epi8(0x20);
#define B(c) _mm_set1_epi8((char)(c))
#define EQ(v, c) _mm_cmpeq_epi8(v, B(c))
#define OR _mm_or_si128
#define AND _mm_and_si128
  __m128i fm = OR(_mm_loadu_si128((const __m128i *)p), fold);
  __m128i f0 = OR(_mm_loadu_si128((const __m128i *)(p + 1)), fold);
  __m128i f1 = OR(_mm_loadu_si128((const __m128i *)(p + 2)), fold);
  __m128i f2 = OR(_mm_loadu_si128((const __m128i *)(p + 3)), fold);
  __m128i a1 = EQ(f1, 'a');
  __m128i r = AND(AND(EQ(fm, 'e'), EQ(f0, 'r')), EQ(f1, 'r'));
  __m128i w = AND(AND(EQ(f0, 'w'), a1), EQ(f2, 'r'));
  __m128i f = AND(AND(EQ(f0, 'f'), a1), OR(OR(EQ(f2, 'i'), EQ(f2, 't')), EQ(f2, 'u')));
  __m128i pp = AND(AND(EQ(f0, 'p'), a1), OR(EQ(f2, 's'), EQ(f2, 'n')));
  __m128i c1 = EQ(f1, 'c');
  __m128i x = AND(AND(EQ(fm, 'e'), EQ(f0, 'x')), c1);
  __m128i e = AND(AND(EQ(f0, 'e'), EQ(f1, 'b')), EQ(f2, 'a'));
  __m128i c = AND(AND(EQ(fm, 'u'), EQ(f0, 'c')), c1);
  __m128i d = AND(AND(EQ(f0, 'd'), EQ(f1, 'u')), EQ(f2, 'm'));
  __m128i k = AND(EQ(f0, 0xE2), EQ(f1, 0xBC));
  __m128i any = OR(OR(OR(r, w), OR(f, pp)), OR(OR(x, e), OR(OR(c, d), k)));
#undef B
#undef EQ
#undef OR
#undef AND
  return (unsigned)_mm_movemask_epi8(any);
}

/* Runs the filter over the whole line. Blocks at the edges are copied into
 * a zero-padded window so that nothing outside the line is read. */
void tfs__cl_scan_keywords(line_t *l) {
  const unsigned char *s = l->s;
  size_t n = l->n;
  if (n < 2)
    return;
  for (size_t i = 0; i + 1 < n; i += 16) {
    unsigned mask;
    if (i >= 1 && i + 18 <= n) {
      mask = block_mask(s + i - 1);
    } else {
      unsigned char win[32] = {0};
      size_t from = i >= 1 ? i - 1 : 0, to = i + 18 <= n ? i + 18 : n;
      memcpy(win + (i >= 1 ? 0 : 1), s + from, to - from);
      mask = block_mask(win);
      if (n - 1 - i < 16)
        mask &= (1u << (n - 1 - i)) - 1; /* a pair must start before n - 1 */
    }
    while (__builtin_expect(mask != 0, 0)) {
      anchor_visit(l, i + (size_t)__builtin_ctz(mask));
      mask &= mask - 1;
    }
  }
}
#else
void tfs__cl_scan_keywords(line_t *l) {
  for (size_t i = 0; i + 1 < l->n; i++)
    if (__builtin_expect(anchor_at(l->s + i), 0))
      anchor_visit(l, i);
}
#endif
