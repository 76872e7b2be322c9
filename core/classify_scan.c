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
#include <immintrin.h>

typedef unsigned char v16_t __attribute__((vector_size(16), aligned(1)));
typedef unsigned char v32_t __attribute__((vector_size(32), aligned(1)));

/* Candidate anchors at W positions [i, i + W): p points at byte i - 1 of
 * a window that holds bytes i - 1 .. i + W + 2. Bytes are folded to lower
 * case with | 0x20 (which maps only A-Z onto letters) and each anchor is
 * checked with the byte before or after it too ("e"+"rr", "wa"+"r",
 * "fa"+"i|t|u", "pa"+"s|n", "e"+"xc", "eb"+"a", "u"+"cc", "du"+"m"), so
 * plain words that share an anchor ("package", "was", "current",
 * "module") rarely get past this filter. Yields a vector whose bytes are
 * 0xff where an anchor may sit. Written once with GCC's vector extensions
 * for both widths: 16 bytes with SSE2 (every x86-64), 32 with AVX2 where
 * the processor has it. */
#define ANCHOR_VECTOR(V, p, any)                                                                   \
  do {                                                                                             \
    const V *q = (const V *)(const void *)(p);                                                     \
    const unsigned char *b_ = (const unsigned char *)(p);                                          \
    V fm = q[0] | 0x20, f0 = *(const V *)(const void *)(b_ + 1) | 0x20;                            \
    V f1 = *(const V *)(const void *)(b_ + 2) | 0x20,                                              \
      f2 = *(const V *)(const void *)(b_ + 3) | 0x20;                                              \
    V a1 = (V)(f1 == 'a'), c1 = (V)(f1 == 'c');                                                    \
    V r = (V)(fm == 'e') & (V)(f0 == 'r') & (V)(f1 == 'r');                                        \
    V w = (V)(f0 == 'w') & a1 & (V)(f2 == 'r');                                                    \
    V f = (V)(f0 == 'f') & a1 & ((V)(f2 == 'i') | (V)(f2 == 't') | (V)(f2 == 'u'));                \
    V pp = (V)(f0 == 'p') & a1 & ((V)(f2 == 's') | (V)(f2 == 'n'));                                \
    V x = (V)(fm == 'e') & (V)(f0 == 'x') & c1;                                                    \
    V e = (V)(f0 == 'e') & (V)(f1 == 'b') & (V)(f2 == 'a');                                        \
    V c = (V)(fm == 'u') & (V)(f0 == 'c') & c1;                                                    \
    V d = (V)(f0 == 'd') & (V)(f1 == 'u') & (V)(f2 == 'm');                                        \
    V k = (V)(f0 == 0xE2) & (V)(f1 == 0xBC);                                                       \
    (any) = r | w | f | pp | x | e | c | d | k;                                                    \
  } while (0)

__attribute__((always_inline)) static inline uint64_t block_mask16(const unsigned char *p) {
  v16_t any;
  ANCHOR_VECTOR(v16_t, p, any);
  return (unsigned)_mm_movemask_epi8((__m128i)any);
}

/* The pairs of folded bytes every anchor above starts with, as nibble
 * tables for a byte-set test with vpshufb: bit b of FIRST_LO[x & 15] &
 * FIRST_HI[x >> 4] says x may be the first byte of pair b, and likewise
 * for the second. Pairs, bit by bit: rr; w|f|p a; xc; eb; cc; du;
 * 0xE2 0xBC (the three first bytes of the second share their nibbles
 * with a few other bytes: a wider test, never a narrower one). A 32-byte
 * block where no position passes both tests has no anchor, and most
 * blocks of text and binary data are such blocks: the exact test above
 * runs only on the others. */
#define NIBBLES(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, q)                                    \
  _mm256_setr_epi8(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, q, a, b, c, d, e, f, g, h, i, j,   \
                   k, l, m, n, o, q)
#define FIRST_LO NIBBLES(2, 0, 1 | 0x40, 0x10, 0x20, 8, 2, 2, 4, 0, 0, 0, 0, 0, 0, 0)
#define FIRST_HI                                                                                   \
  NIBBLES(0, 0, 0, 0, 0, 0, 2 | 8 | 0x10 | 0x20, 1 | 2 | 4, 0, 0, 0, 0, 0, 0, 0x40, 0)
#define SECOND_LO NIBBLES(0, 2, 1 | 8, 4 | 0x10, 0, 0x20, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0)
#define SECOND_HI NIBBLES(0, 0, 0, 0, 0, 0, 2 | 4 | 8 | 0x10, 1 | 0x20, 0, 0, 0, 0x40, 0, 0, 0, 0)

__attribute__((target("avx2"), always_inline)) static inline int no_pair32(const unsigned char *p) {
  const __m256i fold = _mm256_set1_epi8(0x20), low = _mm256_set1_epi8(0x0f);
  __m256i f0 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(const void *)(p + 1)), fold);
  __m256i f1 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(const void *)(p + 2)), fold);
#define SET_OF(x, lo, hi)                                                                          \
  _mm256_and_si256(_mm256_shuffle_epi8(lo, _mm256_and_si256(x, low)),                              \
                   _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(x, 4), low)))
  __m256i both = _mm256_and_si256(SET_OF(f0, FIRST_LO, FIRST_HI), SET_OF(f1, SECOND_LO, SECOND_HI));
#undef SET_OF
  return _mm256_testz_si256(both, both);
}

__attribute__((target("avx2"), always_inline)) static inline uint64_t
block_mask32(const unsigned char *p) {
  if (no_pair32(p))
    return 0;
  v32_t any;
  ANCHOR_VECTOR(v32_t, p, any);
  return (unsigned)_mm256_movemask_epi8((__m256i)any);
}

/* Runs the filter over the whole line, W positions at a time. Blocks at
 * the edges are copied into a zero-padded window so that nothing outside
 * the line is read. */
#define SCAN_KEYWORDS(l, W, mask_fn)                                                               \
  do {                                                                                             \
    const unsigned char *s = (l)->s;                                                               \
    size_t n = (l)->n;                                                                             \
    for (size_t i = 0; i + 1 < n; i += (W)) {                                                      \
      uint64_t mask;                                                                               \
      if (i >= 1 && i + (W) + 2 <= n) {                                                            \
        mask = mask_fn(s + i - 1);                                                                 \
      } else {                                                                                     \
        unsigned char win[2 * (W)] = {0};                                                          \
        size_t from = i >= 1 ? i - 1 : 0, to = i + (W) + 2 <= n ? i + (W) + 2 : n;                 \
        memcpy(win + (i >= 1 ? 0 : 1), s + from, to - from);                                       \
        mask = mask_fn(win);                                                                       \
        if (n - 1 - i < (W))                                                                       \
          mask &= (1ull << (n - 1 - i)) - 1; /* a pair must start before n - 1 */                  \
      }                                                                                            \
      while (__builtin_expect(mask != 0, 0)) {                                                     \
        anchor_visit((l), i + (size_t)__builtin_ctzll(mask));                                      \
        mask &= mask - 1;                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

__attribute__((target("avx2"))) static void scan_keywords32(line_t *l) {
  SCAN_KEYWORDS(l, 32, block_mask32);
}

void tfs__cl_scan_keywords(line_t *l) {
  if (l->n < 2)
    return;
  /* Long enough for a 32-byte block to pay (most lines are). */
  if (l->n >= 34 && __builtin_cpu_supports("avx2")) {
    scan_keywords32(l);
    return;
  }
  SCAN_KEYWORDS(l, 16, block_mask16);
}
#else
void tfs__cl_scan_keywords(line_t *l) {
  for (size_t i = 0; i + 1 < l->n; i++)
    if (__builtin_expect(anchor_at(l->s + i), 0))
      anchor_visit(l, i);
}
#endif
