/* json_int.h — private to the src/json files: the byte scanners shared by the
 * reader and the writer (SQLite's btreeInt.h pattern). Nothing outside
 * src/json includes it.
 *
 * The string scanner finds the next byte that needs attention inside a
 * string — '"', '\', a control character (< 0x20) or a non-ASCII byte —
 * sixteen bytes at a time with SSE2 (x86-64 always has it), eight at a time
 * with SWAR arithmetic elsewhere.
 */
#ifndef DV_JSON_INT_H
#define DV_JSON_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "json/json.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* 1 for the bytes that stop a plain-string run: '"', '\\', < 0x20, >= 0x80. */
extern const uint8_t json__special[256];

/* First byte at or after p that json__special marks, or end. */
static inline const uint8_t *json__scan(const uint8_t *p, const uint8_t *end) {
#if defined(__SSE2__)
  const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), sp = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* signed compare: bytes >= 0x80 are negative, so "< 0x20" also
     * catches every non-ASCII byte */
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)),
                             _mm_cmplt_epi8(v, sp));
    unsigned mask = (unsigned)_mm_movemask_epi8(m);
    if (mask) return p + __builtin_ctz(mask);
    p += 16;
  }
#else
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    uint64_t xq = v ^ (ones * '"'), xb = v ^ (ones * '\\');
    uint64_t t = ((xq - ones) & ~xq) | ((xb - ones) & ~xb) | ((v - ones * 0x20) & ~v) | v;
    if (t & high) break; /* something in these 8 bytes: finish bytewise */
    p += 8;
  }
#endif
  while (p < end && !json__special[*p]) p++;
  return p;
}

/* Length (2..4) of the valid UTF-8 sequence starting at p (whose first
 * byte is >= 0x80), or 0 if it is invalid or truncated: no overlongs, no
 * surrogates (U+D800..DFFF), nothing above U+10FFFF (Unicode table 3-7). */
static inline size_t json__utf8_seq(const uint8_t *p, const uint8_t *end) {
  uint8_t c = p[0];
  size_t avail = (size_t)(end - p);
  if (c >= 0xC2 && c <= 0xDF) {
    return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (avail < 3) return 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c == 0xE0) lo = 0xA0;
    else if (c == 0xED) hi = 0x9F;
    return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (avail < 4) return 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F;
    return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
  }
  return 0;
}

/* Canonicalise the number text s[0..n) (already validated by the reader's
 * grammar; is_int says no fraction and no exponent) into out. */
int json__num_canon(const char *s, size_t n, int is_int, json_num *out);

/* SipHash-1-3 of a key under the process's random key: the parser's
 * duplicate resolution and json_obj_set's index of large objects use it,
 * so no request can choose keys that all collide. */
uint64_t json__key_hash(const char *key, size_t klen);

/* A fresh DOM node of the given type from the arena (NULL on DV_ENOMEM);
 * shared by the parser and the builders. */
static inline __attribute__((always_inline)) json_val *json__node(dv_arena *a, uint8_t type) {
  json_val *v = arena_alloc_align(a, sizeof *v, 8);
  if (v) {
    v->type = type;
    v->num = 0;
    v->b = 0;
    v->hashed = 0;
    v->len = 0;
    v->cap = 0;
    v->u.s = NULL;
  }
  return v;
}

#endif
