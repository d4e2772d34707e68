/* md5.c — MD5 as RFC 1321 specifies it (md5.h).
 *
 * A straightforward transcription of the RFC's four rounds, unrolled with
 * macros; the per-step constants are the RFC's table T[i] =
 * floor(2^32 * |sin(i)|). Input words are read little-endian byte by byte,
 * so it works on any host byte order and any alignment.
 */
#include <string.h>

#include "util/md5.h"

#define ROL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))
#define F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define H(x, y, z) ((x) ^ (y) ^ (z))
#define I(x, y, z) ((y) ^ ((x) | ~(z)))
#define STEP(f, a, b, c, d, x, t, s) \
  do {                               \
    (a) += f((b), (c), (d)) + (x) + (uint32_t)(t); \
    (a) = ROL((a), (s));             \
    (a) += (b);                      \
  } while (0)

static inline uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One 64-byte block. */
static void block(uint32_t h[4], const uint8_t *p) {
  uint32_t x[16];
  for (int i = 0; i < 16; i++) x[i] = le32(p + 4 * i);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];

  STEP(F, a, b, c, d, x[0], 0xd76aa478, 7);
  STEP(F, d, a, b, c, x[1], 0xe8c7b756, 12);
  STEP(F, c, d, a, b, x[2], 0x242070db, 17);
  STEP(F, b, c, d, a, x[3], 0xc1bdceee, 22);
  STEP(F, a, b, c, d, x[4], 0xf57c0faf, 7);
  STEP(F, d, a, b, c, x[5], 0x4787c62a, 12);
  STEP(F, c, d, a, b, x[6], 0xa8304613, 17);
  STEP(F, b, c, d, a, x[7], 0xfd469501, 22);
  STEP(F, a, b, c, d, x[8], 0x698098d8, 7);
  STEP(F, d, a, b, c, x[9], 0x8b44f7af, 12);
  STEP(F, c, d, a, b, x[10], 0xffff5bb1, 17);
  STEP(F, b, c, d, a, x[11], 0x895cd7be, 22);
  STEP(F, a, b, c, d, x[12], 0x6b901122, 7);
  STEP(F, d, a, b, c, x[13], 0xfd987193, 12);
  STEP(F, c, d, a, b, x[14], 0xa679438e, 17);
  STEP(F, b, c, d, a, x[15], 0x49b40821, 22);

  STEP(G, a, b, c, d, x[1], 0xf61e2562, 5);
  STEP(G, d, a, b, c, x[6], 0xc040b340, 9);
  STEP(G, c, d, a, b, x[11], 0x265e5a51, 14);
  STEP(G, b, c, d, a, x[0], 0xe9b6c7aa, 20);
  STEP(G, a, b, c, d, x[5], 0xd62f105d, 5);
  STEP(G, d, a, b, c, x[10], 0x02441453, 9);
  STEP(G, c, d, a, b, x[15], 0xd8a1e681, 14);
  STEP(G, b, c, d, a, x[4], 0xe7d3fbc8, 20);
  STEP(G, a, b, c, d, x[9], 0x21e1cde6, 5);
  STEP(G, d, a, b, c, x[14], 0xc33707d6, 9);
  STEP(G, c, d, a, b, x[3], 0xf4d50d87, 14);
  STEP(G, b, c, d, a, x[8], 0x455a14ed, 20);
  STEP(G, a, b, c, d, x[13], 0xa9e3e905, 5);
  STEP(G, d, a, b, c, x[2], 0xfcefa3f8, 9);
  STEP(G, c, d, a, b, x[7], 0x676f02d9, 14);
  STEP(G, b, c, d, a, x[12], 0x8d2a4c8a, 20);

  STEP(H, a, b, c, d, x[5], 0xfffa3942, 4);
  STEP(H, d, a, b, c, x[8], 0x8771f681, 11);
  STEP(H, c, d, a, b, x[11], 0x6d9d6122, 16);
  STEP(H, b, c, d, a, x[14], 0xfde5380c, 23);
  STEP(H, a, b, c, d, x[1], 0xa4beea44, 4);
  STEP(H, d, a, b, c, x[4], 0x4bdecfa9, 11);
  STEP(H, c, d, a, b, x[7], 0xf6bb4b60, 16);
  STEP(H, b, c, d, a, x[10], 0xbebfbc70, 23);
  STEP(H, a, b, c, d, x[13], 0x289b7ec6, 4);
  STEP(H, d, a, b, c, x[0], 0xeaa127fa, 11);
  STEP(H, c, d, a, b, x[3], 0xd4ef3085, 16);
  STEP(H, b, c, d, a, x[6], 0x04881d05, 23);
  STEP(H, a, b, c, d, x[9], 0xd9d4d039, 4);
  STEP(H, d, a, b, c, x[12], 0xe6db99e5, 11);
  STEP(H, c, d, a, b, x[15], 0x1fa27cf8, 16);
  STEP(H, b, c, d, a, x[2], 0xc4ac5665, 23);

  STEP(I, a, b, c, d, x[0], 0xf4292244, 6);
  STEP(I, d, a, b, c, x[7], 0x432aff97, 10);
  STEP(I, c, d, a, b, x[14], 0xab9423a7, 15);
  STEP(I, b, c, d, a, x[5], 0xfc93a039, 21);
  STEP(I, a, b, c, d, x[12], 0x655b59c3, 6);
  STEP(I, d, a, b, c, x[3], 0x8f0ccc92, 10);
  STEP(I, c, d, a, b, x[10], 0xffeff47d, 15);
  STEP(I, b, c, d, a, x[1], 0x85845dd1, 21);
  STEP(I, a, b, c, d, x[8], 0x6fa87e4f, 6);
  STEP(I, d, a, b, c, x[15], 0xfe2ce6e0, 10);
  STEP(I, c, d, a, b, x[6], 0xa3014314, 15);
  STEP(I, b, c, d, a, x[13], 0x4e0811a1, 21);
  STEP(I, a, b, c, d, x[4], 0xf7537e82, 6);
  STEP(I, d, a, b, c, x[11], 0xbd3af235, 10);
  STEP(I, c, d, a, b, x[2], 0x2ad7d2bb, 15);
  STEP(I, b, c, d, a, x[9], 0xeb86d391, 21);

  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
}

void dv_md5_init(dv_md5 *c) {
  c->h[0] = 0x67452301;
  c->h[1] = 0xefcdab89;
  c->h[2] = 0x98badcfe;
  c->h[3] = 0x10325476;
  c->n = 0;
}

void dv_md5_update(dv_md5 *c, const void *data, size_t n) {
  const uint8_t *p = data;
  size_t have = (size_t)(c->n & 63);
  if (!n) return; /* p may be NULL */
  c->n += n;
  if (have) {
    size_t take = 64 - have < n ? 64 - have : n;
    memcpy(c->buf + have, p, take);
    p += take;
    n -= take;
    if (have + take < 64) return;
    block(c->h, c->buf);
  }
  for (; n >= 64; p += 64, n -= 64) block(c->h, p);
  if (n) memcpy(c->buf, p, n);
}

void dv_md5_final(dv_md5 *c, uint8_t out[DV_MD5_LEN]) {
  uint64_t bits = c->n << 3;
  size_t have = (size_t)(c->n & 63);
  c->buf[have++] = 0x80;
  if (have > 56) {
    memset(c->buf + have, 0, 64 - have);
    block(c->h, c->buf);
    have = 0;
  }
  memset(c->buf + have, 0, 56 - have);
  for (int i = 0; i < 8; i++) c->buf[56 + i] = (uint8_t)(bits >> (8 * i));
  block(c->h, c->buf);
  for (int i = 0; i < 4; i++) {
    out[4 * i] = (uint8_t)c->h[i];
    out[4 * i + 1] = (uint8_t)(c->h[i] >> 8);
    out[4 * i + 2] = (uint8_t)(c->h[i] >> 16);
    out[4 * i + 3] = (uint8_t)(c->h[i] >> 24);
  }
}
