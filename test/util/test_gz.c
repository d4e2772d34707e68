/* test_gz.c — util/gz.c: round trips whole and in pieces, the output cap
 * at the limit and one byte past it, broken and trailing input, the
 * callback's error passed through, and the fuzz smoke run. */
#include <string.h>

#include "test.h"
#include "util/err.h"
#include "util/gz.h"

static int to_buf(void *arg, const uint8_t *p, size_t n) {
  dv_buf *b = arg;
  buf_append(b, p, n);
  return buf_error(b) ? DV_ENOMEM : 0;
}

static int refuse(void *arg, const uint8_t *p, size_t n) {
  (void)arg, (void)p, (void)n;
  return DV_EIO;
}

TEST(gz_roundtrip) {
  size_t sizes[] = {0, 1, 1000, DV_GZ_OUT - 1, DV_GZ_OUT, DV_GZ_OUT + 1, 3000000};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    dv_buf in, enc, out;
    buf_init(&in);
    buf_init(&enc);
    buf_init(&out);
    uint32_t x = 12345u + (uint32_t)k;
    for (size_t i = 0; i < n; i++) { /* half compressible */
      x = x * 1103515245u + 12345u;
      buf_putc(&in, i % 2 ? (uint8_t)(x >> 24) : 'a');
    }
    /* encode in pieces of 777 bytes */
    dv_gz *z;
    ASSERT_OK(dv_gz_open(1, DV_GZ_LEVEL, 0, &z));
    size_t off = 0;
    do {
      size_t take = n - off < 777 ? n - off : 777;
      ASSERT_OK(dv_gz_write(z, in.p + off, take, off + take == n, to_buf, &enc));
      off += take;
    } while (off < n);
    ASSERT_EQ(dv_gz_total_out(z), enc.len);
    dv_gz_close(z);
    ASSERT_OK(dv_gz_decode(enc.p, enc.len, 0, &out));
    ASSERT_EQ(out.len, n);
    ASSERT(!n || !memcmp(out.p, in.p, n));
    /* what gzip(1) would accept: the magic bytes */
    ASSERT(enc.len > 10 && enc.p[0] == 0x1f && enc.p[1] == 0x8b);
    buf_free(&in);
    buf_free(&enc);
    buf_free(&out);
  }
}

TEST(gz_cap_and_errors) {
  dv_buf in, enc, out;
  buf_init(&in);
  buf_init(&enc);
  buf_init(&out);
  for (int i = 0; i < 1000000; i++) buf_putc(&in, 0);
  ASSERT_OK(dv_gz_encode(in.p, in.len, 9, &enc));
  ASSERT(enc.len < 5000);
  /* at the cap, and one byte under it */
  ASSERT_OK(dv_gz_decode(enc.p, enc.len, 1000000, &out));
  ASSERT_EQ(out.len, 1000000);
  buf_reset(&out);
  ASSERT_EQ(dv_gz_decode(enc.p, enc.len, 999999, &out), DV_ERANGE);
  /* truncated, trailing garbage, not gzip, a flipped byte */
  buf_reset(&out);
  ASSERT_EQ(dv_gz_decode(enc.p, enc.len - 1, 0, &out), DV_EINVAL);
  buf_reset(&out);
  buf_putc(&enc, 'x');
  ASSERT_EQ(dv_gz_decode(enc.p, enc.len, 0, &out), DV_EINVAL);
  enc.len--;
  buf_reset(&out);
  ASSERT_EQ(dv_gz_decode("hello", 5, 0, &out), DV_EINVAL);
  buf_reset(&out);
  enc.p[enc.len - 3] ^= 0x55; /* the length in the trailer */
  ASSERT_EQ(dv_gz_decode(enc.p, enc.len, 0, &out), DV_EINVAL);
  buf_reset(&out);
  ASSERT_EQ(dv_gz_decode("", 0, 0, &out), DV_EINVAL);
  /* the callback's error comes back */
  dv_gz *z;
  ASSERT_OK(dv_gz_open(1, 1, 0, &z));
  ASSERT_EQ(dv_gz_write(z, in.p, in.len, 1, refuse, NULL), DV_EIO);
  dv_gz_close(z);
  dv_gz_close(NULL);
  buf_free(&in);
  buf_free(&enc);
  buf_free(&out);
}

TEST(gz_fuzz_smoke) { test_fuzz_smoke("fuzz_gz"); }
