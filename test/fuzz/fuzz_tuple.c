/* fuzz_tuple.c — libFuzzer target for the tuple decoder (src/tuple).
 *
 * Each input is decoded as a packed tuple. The target walks every element,
 * nested ones included (with an explicit stack, so deep nesting cannot
 * overflow the C stack), formats the input with tup_format, and checks:
 *  - tup_validate, the element walk and tup_format agree on whether the
 *    input is well formed;
 *  - every item lies inside the input;
 *  - canonical form: a well-formed input, re-encoded from the decoded
 *    VALUES with the writer, gives back exactly the input bytes. The
 *    decoder rejects every non-canonical form (non-minimal integers,
 *    invalid UTF-8, ...) except one it tolerates for interoperability:
 *    FDB's Python binding writes ±(2^64-1) as 0x1d 0x08 FF*8 / 0x0b 0xF7
 *    00*8 (apple/foundationdb#1296). For those elements the expected bytes
 *    are the standard 0x1c FF*8 / 0x0c 00*8 instead; nothing else is
 *    excused. Floats keep their bits, so NaN payloads must round-trip too.
 *  - tup_strinc / tup_range on the raw input behave (no crash; strinc gives
 *    a key greater than the input that does not start with it).
 * Any failed check aborts, which libFuzzer reports as a crash.
 *
 * Build: make fuzzers (clang -fsanitize=fuzzer,address,undefined).
 * Seeds: test/fuzz/seeds/fuzz_tuple.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuple/tuple.h"
#include "util/alloc.h"
#include "util/buf.h"

#define CHECK(c)                                                            \
  do {                                                                      \
    if (!(c)) {                                                             \
      fprintf(stderr, "fuzz_tuple: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                              \
    }                                                                       \
  } while (0)

/* Decode everything, re-encoding into w by value and building in want the
 * bytes that re-encoding must give; *legacy counts the tolerated
 * non-canonical integers. Returns tup_next's error, or 0. */
static int walk(const uint8_t *data, size_t size, tup_w *w, dv_buf *want, int *legacy) {
  size_t cap = 16, depth = 0;
  tup_r *stack = malloc(cap * sizeof *stack);
  dv_buf tmp = DV_BUF_INIT;
  uint8_t mag[TUP_BIGINT_MAX];
  int rc = 0;
  CHECK(stack);
  tup_r_init(&stack[0], data, size);
  for (;;) {
    tup_item it;
    tup_r *r = &stack[depth];
    int n = tup_next(r, &it);
    if (n < 0) {
      rc = n;
      CHECK(n == DV_ETUPLE);
      break;
    }
    if (n == 0) {
      if (!depth) break;
      depth--;
      CHECK(tup_nest_end(w) == 0 || buf_error(w->b));
      buf_putc(want, 0x00);
      continue;
    }
    CHECK(it.raw >= data && it.raw_len >= 1 && it.raw_len <= size - (size_t)(it.raw - data));
    switch (it.type) {
    case TUP_NULL:
      tup_null(w);
      buf_append(want, it.raw, it.raw_len);
      CHECK(it.raw_len == (depth ? 2u : 1u));
      break;
    case TUP_BYTES:
    case TUP_STR: {
      const uint8_t *p;
      CHECK(it.s_len <= it.s_enc_len);
      CHECK(tup_item_data(&it, &tmp, &p) == 0);
      if (it.type == TUP_BYTES) tup_bytes(w, p, it.s_len);
      else CHECK(tup_str(w, (const char *)p, it.s_len) == 0 || buf_error(w->b));
      buf_append(want, it.raw, it.raw_len);
      break;
    }
    case TUP_NEST:
      CHECK(it.sub.p == it.raw + 1 && it.sub.end == it.raw + it.raw_len - 1);
      tup_nest_begin(w);
      buf_putc(want, TUP_C_NEST);
      if (++depth == cap) {
        cap *= 2;
        stack = realloc(stack, cap * sizeof *stack);
        CHECK(stack);
      }
      stack[depth] = it.sub;
      break;
    case TUP_INT: {
      int legacy_form = (it.raw[0] == TUP_C_POS_BIG || it.raw[0] == TUP_C_NEG_BIG) && it.mag_len == 8;
      CHECK(it.mag_len <= TUP_BIGINT_MAX);
      if (it.fits & TUP_FITS_I64) {
        tup_int(w, it.i64);
      } else if (it.fits & TUP_FITS_U64) {
        tup_uint(w, it.u64);
      } else {
        tup_item_magnitude(&it, mag);
        CHECK(it.mag_len && mag[0]);
        CHECK(tup_bigint(w, it.neg, mag, it.mag_len) == 0 || buf_error(w->b));
      }
      if (legacy_form) {
        (*legacy)++;
        static const uint8_t pos[9] = {0x1c, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        static const uint8_t neg[9] = {0x0c, 0, 0, 0, 0, 0, 0, 0, 0};
        buf_append(want, it.neg ? neg : pos, 9);
      } else {
        buf_append(want, it.raw, it.raw_len);
      }
      break;
    }
    case TUP_FLOAT:
      tup_float(w, it.f);
      buf_append(want, it.raw, it.raw_len);
      break;
    case TUP_DOUBLE:
      tup_double(w, it.d);
      buf_append(want, it.raw, it.raw_len);
      break;
    case TUP_BOOL:
      tup_bool(w, it.b);
      buf_append(want, it.raw, it.raw_len);
      break;
    case TUP_UUID:
      tup_uuid(w, it.fixed);
      buf_append(want, it.raw, it.raw_len);
      break;
    case TUP_VS:
      if (it.vs_incomplete) tup_vs_incomplete(w, it.vs_user);
      else tup_vs(w, it.fixed);
      buf_append(want, it.raw, it.raw_len);
      break;
    default:
      CHECK(0);
    }
  }
  free(stack);
  buf_free(&tmp);
  return rc;
}

/* Weak: the Makefile also compiles every test/fuzz/fuzz_*.c into the test
 * runner (TEST_SRC takes every .c one level under test/), where several
 * fuzz targets would otherwise collide on this name. In the fuzzer binary
 * it is the only definition, so weak changes nothing there. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dv_buf out = DV_BUF_INIT, want = DV_BUF_INIT, text = DV_BUF_INIT;
  tup_w w;
  tup_w_init(&w, &out);

  int rc = tup_validate(data, size), legacy = 0;
  CHECK(rc == 0 || rc == DV_ETUPLE);
  CHECK(walk(data, size, &w, &want, &legacy) == rc);

  CHECK(tup_format(&text, data, size) == rc);
  CHECK(text.len >= 1 && text.p[0] == '(');
  if (rc == 0) CHECK(text.p[text.len - 1] == ')');

  if (rc == 0) { /* well formed: re-encoding gives the canonical bytes */
    CHECK(!buf_error(&out) && !buf_error(&want));
    CHECK(w.err == 0 && w.depth == 0);
    CHECK(out.len == want.len && (!want.len || !memcmp(out.p, want.p, want.len)));
    if (!legacy) CHECK(want.len == size && (!size || !memcmp(want.p, data, size)));
    else CHECK(want.len + (size_t)legacy == size);
  }

  if (size) {
    dv_buf a = DV_BUF_INIT, b = DV_BUF_INIT;
    int src = tup_strinc(&a, data, size);
    if (src == 0) {
      size_t n = a.len < size ? a.len : size;
      int c = memcmp(a.p, data, n);
      CHECK(c > 0); /* greater than the input and every key it prefixes */
    } else {
      CHECK(src == DV_EINVAL);
      for (size_t i = 0; i < size; i++) CHECK(data[i] == 0xff);
    }
    buf_reset(&a);
    CHECK(tup_range(data, size, &a, &b) == 0);
    CHECK(a.len == size + 1 && b.len == size + 1 && a.p[size] == 0x00 && b.p[size] == 0xff);
    buf_free(&a);
    buf_free(&b);
  }

  buf_free(&out);
  buf_free(&want);
  buf_free(&text);
  return 0;
}
