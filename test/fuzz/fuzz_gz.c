/* fuzz_gz.c — libFuzzer target for the gzip streams of src/util/gz.c,
 * which decode attachment parts sent with Content-Encoding: gzip.
 *
 * The input is decoded twice, once in one piece and once in pieces whose
 * sizes come from its first byte: both must agree (the same bytes, the
 * same verdict), the output must stay under the cap given (a gzip bomb is
 * DV_ERANGE, never an allocation of its size), and anything decoded must
 * encode and decode back to itself. The input is also encoded and decoded
 * as plain bytes: that must round-trip. Any failed check aborts.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/gz.h"

#define CAP (1 << 20)

static int to_buf(void *arg, const uint8_t *p, size_t n) {
  dv_buf *b = arg;
  buf_append(b, p, n);
  return buf_error(b) ? DV_ENOMEM : 0;
}

/* Decode in pieces of `step` bytes. */
static int decode_pieces(const uint8_t *p, size_t n, size_t step, dv_buf *out) {
  dv_gz *z;
  int rc = dv_gz_open(0, 0, CAP, &z);
  assert(rc == 0);
  size_t off = 0;
  do {
    size_t take = n - off < step ? n - off : step;
    rc = dv_gz_write(z, p + off, take, off + take == n, to_buf, out);
    off += take;
  } while (!rc && off < n);
  assert(dv_gz_total_out(z) <= (uint64_t)CAP + DV_GZ_OUT);
  dv_gz_close(z);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_buf a, b, enc, back;
  buf_init(&a);
  buf_init(&b);
  buf_init(&enc);
  buf_init(&back);
  int r1 = dv_gz_decode(data, size, CAP, &a);
  int r2 = decode_pieces(data, size, size ? (size_t)data[0] % 17 + 1 : 1, &b);
  /* the same verdict; only where corrupt data follows more output than
   * the cap may one say "too big" and the other "broken" */
  assert(r1 == r2 || ((r1 == DV_EINVAL || r1 == DV_ERANGE) && (r2 == DV_EINVAL || r2 == DV_ERANGE)));
  assert(r1 == 0 || r1 == DV_EINVAL || r1 == DV_ERANGE);
  if (r1 == 0) {
    assert(a.len <= CAP && a.len == b.len && (!a.len || !memcmp(a.p, b.p, a.len)));
    assert(dv_gz_encode(a.p, a.len, 1, &enc) == 0);
    assert(dv_gz_decode(enc.p, enc.len, 0, &back) == 0);
    assert(back.len == a.len && (!a.len || !memcmp(back.p, a.p, a.len)));
  }
  buf_reset(&enc);
  buf_reset(&back);
  assert(dv_gz_encode(data, size, size % 10, &enc) == 0);
  assert(decode_pieces(enc.p, enc.len, 7, &back) == 0);
  assert(back.len == size && (!size || !memcmp(back.p, data, size)));
  buf_free(&a);
  buf_free(&b);
  buf_free(&enc);
  buf_free(&back);
  return 0;
}
