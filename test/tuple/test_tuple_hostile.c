/* Malformed input for the tuple decoder: truncated encodings of every type,
 * bad type codes, bad and non-minimal integers, unterminated strings and
 * nesting, invalid UTF-8, extreme nesting depth, and random corruption of
 * valid encodings. Every case must give DV_ETUPLE (from tup_validate,
 * tup_next and tup_format alike) and never read outside the input: each
 * input is copied into a heap block of exactly its size, so under
 * `make SANITIZE=address,undefined test` a one-byte over-read fails.
 *
 * Also runs the libFuzzer target briefly (tuple_fuzz_smoke).
 */
#include <sys/stat.h>

#include "test.h"
#include "tuple/tuple.h"
#include "util/buf.h"

static uint8_t *exact_copy(const uint8_t *p, size_t n) {
  uint8_t *c = malloc(n ? n : 1);
  ASSERT(c != NULL);
  if (n) memcpy(c, p, n);
  return c;
}

/* Walk everything (nested too, recursively: inputs here are shallow or
 * checked to be), returning the first error or 0. */
static int walk(tup_r *r, int depth) {
  tup_item it;
  int rc;
  while ((rc = tup_next(r, &it)) == 1) {
    if (it.type == TUP_NEST && depth < 64) {
      int sub = walk(&it.sub, depth + 1);
      ASSERTF(sub == 0, "nested tuple validated by tup_next fails inside: %d", sub);
    }
  }
  return rc;
}

/* Decode p[0..n) in every way; all must agree. Returns 0 or DV_ETUPLE. */
static int decode_all(const uint8_t *src, size_t n) {
  uint8_t *p = exact_copy(src, n);
  int v = tup_validate(p, n);
  ASSERTF(v == 0 || v == DV_ETUPLE, "tup_validate returned %d", v);
  tup_r r;
  tup_r_init(&r, p, n);
  ASSERT_EQ(walk(&r, 0), v);
  if (v) { /* the reader is stuck at the bad element, not past it */
    tup_item it;
    ASSERT_EQ(tup_next(&r, &it), v);
  }
  dv_buf t = DV_BUF_INIT;
  ASSERT_EQ(tup_format(&t, p, n), v);
  if (v) ASSERT(strstr((const char *)t.p, "<malformed at byte ") != NULL);
  buf_free(&t);
  free(p);
  return v;
}

static void must_fail(const char *hex, const char *why) {
  dv_buf b = DV_BUF_INIT;
  size_t n = strlen(hex);
  ASSERT(n % 2 == 0);
  for (size_t i = 0; i < n; i += 2) {
    unsigned x;
    ASSERT(sscanf(hex + i, "%2x", &x) == 1);
    buf_putc(&b, (uint8_t)x);
  }
  int rc = decode_all(b.p, b.len);
  ASSERTF(rc == DV_ETUPLE, "%s (%s) decoded without error", hex, why);
  buf_free(&b);
}

struct bad {
  const char *hex; /* the input */
  const char *why; /* what is wrong with it */
};

static const struct bad bad_inputs[] = {
    /* truncated, every type */
    {"01", "byte string, no terminator"},
    {"016162", "byte string, no terminator"},
    {"016100ff", "byte string ends inside an escape"},
    {"02", "unicode string, no terminator"},
    {"026162", "unicode string, no terminator"},
    {"026100ff", "unicode string ends inside an escape"},
    {"05", "nested tuple, no terminator"},
    {"050100", "nested tuple, no terminator after an element"},
    {"0500ff", "nested tuple, no terminator after a null"},
    {"050500", "inner tuple closed, outer not"},
    {"0502610015", "nested integer truncated"},
    {"15", "1-byte integer, no byte"},
    {"16", "2-byte integer, no byte"},
    {"1601", "2-byte integer, one byte"},
    {"1c01020304050607", "8-byte integer, 7 bytes"},
    {"13", "negative 1-byte integer, no byte"},
    {"0c01020304050607", "negative 8-byte integer, 7 bytes"},
    {"1d", "big integer, no length"},
    {"1d09", "big integer, no magnitude"},
    {"1d090102030405060708", "big integer, 8 of 9 bytes"},
    {"0b", "negative big integer, no length"},
    {"0bf6", "negative big integer, no magnitude"},
    {"0bf6feffffffffffffff", "negative big integer, 8 of 9 bytes"},
    {"20", "float, no bytes"},
    {"20800000", "float, 3 bytes"},
    {"21", "double, no bytes"},
    {"2180000000000000", "double, 7 bytes"},
    {"30000102030405060708090a0b0c0d0e", "UUID, 15 bytes"},
    {"30", "UUID, no bytes"},
    {"330000000000000001000200", "versionstamp, 11 bytes"},
    {"33ffffffffffffffffffff00", "incomplete versionstamp, 11 bytes"},
    {"33", "versionstamp, no bytes"},
    /* type codes that are not (or no longer) in use */
    {"03", "deprecated nested tuple start"},
    {"04", "deprecated nested tuple end"},
    {"0304", "deprecated empty nested tuple"},
    {"06", "unused"},
    {"0a", "reserved negative big integer"},
    {"1e", "reserved positive big integer"},
    {"1f", "unused"},
    {"22000000000000000000", "reserved long double"},
    {"23", "reserved decimal"},
    {"24", "reserved decimal"},
    {"25", "deprecated true"},
    {"28", "unused"},
    {"310000000000000000", "reserved 64-bit identifier"},
    {"3200000000000000000000", "reserved 80-bit versionstamp"},
    {"34", "unused"},
    {"40", "user type code"},
    {"4f", "user type code"},
    {"80", "unused"},
    {"fe", "unused"},
    {"ff", "the escape character"},
    {"00ff", "top-level null followed by 0xff"},
    {"1501ff", "0xff after an element"},
    {"050300", "bad code inside a nested tuple"},
    /* integers not in their shortest form */
    {"1500", "0 as one byte"},
    {"160001", "1 as two bytes"},
    {"1600ff", "255 as two bytes"},
    {"13ff", "-0 as one byte"},
    {"12fffe", "-1 as two bytes"},
    {"1c00ffffffffffffff", "7-byte value as 8 bytes"},
    {"0cffffffffffffffff", "negative 7-byte value as 8 bytes"},
    /* bad arbitrary-precision integers */
    {"1d00", "length 0"},
    {"1d0105", "length 1"},
    {"1d080102030405060708", "length 8, not Python's 2^64-1"},
    {"1d08fffffffffffffffe", "length 8, not Python's 2^64-1"},
    {"1d09000102030405060708", "leading zero byte"},
    {"0bff", "negative, length 0"},
    {"0bfefa", "negative, length 1"},
    {"0bf70102030405060708", "negative, length 8, not Python's -(2^64-1)"},
    {"0bf6ff0000000000000000", "negative, leading zero byte of the magnitude"},
    /* unterminated */
    {"01616263", "byte string"},
    {"0261626300ff", "unicode string ending in an escaped NUL"},
    {"05026100", "nested tuple"},
    {"0505050500000000" "05", "nested tuple after nested tuples"},
    /* invalid UTF-8 */
    {"028000", "lone continuation byte"},
    {"02618062", "continuation byte inside, and unterminated"},
    {"0261806200", "continuation byte inside"},
    {"02c08000", "overlong NUL (modified UTF-8)"},
    {"02c1bf00", "overlong 2-byte"},
    {"02c300", "truncated 2-byte sequence"},
    {"02c300ff9400", "2-byte sequence split by an escape"},
    {"02c3a98000", "extra continuation byte"},
    {"02e0808000", "overlong 3-byte"},
    {"02e09fbf00", "overlong 3-byte, edge"},
    {"02e29800", "truncated 3-byte sequence"},
    {"02eda08000", "UTF-16 surrogate D800"},
    {"02edbfbf00", "UTF-16 surrogate DFFF"},
    {"02f080808000", "overlong 4-byte"},
    {"02f08fbfbf00", "overlong 4-byte, edge"},
    {"02f09f9200", "truncated 4-byte sequence"},
    {"02f490808000", "above U+10FFFF"},
    {"02f580808000", "lead byte F5"},
    {"02f8888080800000", "5-byte form"},
    {"02fe00", "byte FE"},
    {"02ff00", "byte FF"},
    {"0261616161616161616161616161616161ff00", "bad byte after the 8-byte fast path"},
    {"05028000" "00", "invalid UTF-8 inside a nested tuple"},
};

TEST(tuple_hostile) {
  size_t n = sizeof bad_inputs / sizeof bad_inputs[0];
  for (size_t i = 0; i < n; i++) must_fail(bad_inputs[i].hex, bad_inputs[i].why);

  /* every type code alone: codes outside the spec's set are refused, and
   * of the spec's codes only those without a payload decode */
  int valid_codes = 0;
  for (int c = 0; c < 256; c++) {
    uint8_t in[1] = {(uint8_t)c};
    int known = c == 0x00 || c == 0x01 || c == 0x02 || c == 0x05 || (c >= 0x0b && c <= 0x1d) ||
                c == 0x20 || c == 0x21 || c == 0x26 || c == 0x27 || c == 0x30 || c == 0x33;
    uint8_t *p = exact_copy(in, 1);
    tup_r r;
    tup_item it;
    tup_r_init(&r, p, 1);
    int rc = tup_next(&r, &it);
    if (!known) ASSERTF(rc == DV_ETUPLE, "code 0x%02x accepted", c);
    else valid_codes++;
    /* a known code alone is complete only when it has no payload */
    if (known)
      ASSERT_EQ(rc, c == 0x00 || c == 0x14 || c == 0x26 || c == 0x27 ? 1 : DV_ETUPLE);
    free(p);
  }
  ASSERT_EQ(valid_codes, 1 + 2 + 1 + 19 + 2 + 2 + 2);

  /* a 255-byte integer cut anywhere */
  uint8_t big[257];
  big[0] = 0x1d;
  big[1] = 0xff;
  memset(big + 2, 0xab, 255);
  ASSERT_OK(decode_all(big, sizeof big));
  for (size_t cut = 1; cut < sizeof big; cut++) ASSERT_EQ(decode_all(big, cut), DV_ETUPLE);
  printf("%zu malformed inputs and 256 type codes refused\n", n);
}

/* Every cut of valid single-element encodings of every type is refused,
 * except where the cut lands on a shorter valid encoding, which must then
 * decode to one element that ends exactly at the cut. */
TEST(tuple_truncated) {
  static const char *const whole[] = {
      "01666f6f00ff62617200", "0246c3944f00ff62617200", "0501666f6f00ff6261720000ff050000",
      "11ab4b93", "1c7fffffffffffffff", "0c0000000000000000", "1d09010000000000000000",
      "0bf6feffffffffffffffff", "203dd7ffff", "21bff0000000000000",
      "3000112233445566778899aabbccddeeff", "33000000000000000100020003",
      "33ffffffffffffffffffff0003", "02f09f928300", "05050500ff000000", "0100ff00ff00"};
  int refused = 0, shorter = 0;
  for (size_t k = 0; k < sizeof whole / sizeof whole[0]; k++) {
    uint8_t b[64];
    size_t n = strlen(whole[k]) / 2;
    for (size_t i = 0; i < n; i++) {
      unsigned x;
      ASSERT(sscanf(whole[k] + 2 * i, "%2x", &x) == 1);
      b[i] = (uint8_t)x;
    }
    ASSERT_OK(decode_all(b, n));
    for (size_t cut = 1; cut < n; cut++) {
      if (decode_all(b, cut) == DV_ETUPLE) {
        refused++;
        continue;
      }
      /* e.g. 01 00 FF 00 cut after 01 00: the empty byte string */
      tup_r r;
      tup_item it;
      tup_r_init(&r, b, cut);
      ASSERT_EQ(tup_next(&r, &it), 1);
      ASSERT_EQ(it.raw_len, cut);
      shorter++;
    }
  }
  printf("%d cuts refused, %d landed on a shorter valid element\n", refused, shorter);
  ASSERT(refused >= 130 && shorter == 5);
}

/* Random corruption of valid tuples: decoding agrees in every entry point,
 * and whatever decodes re-encodes to the same bytes (canonical form). */
TEST(tuple_corrupted) {
  uint64_t s = 0x9e3779b97f4a7c15ULL ^ (uint64_t)rand();
  const uint64_t seed = s;
  dv_buf b = DV_BUF_INIT, re = DV_BUF_INIT;
  int ok = 0, bad = 0;
  for (int k = 0; k < 40000; k++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    tup_w w;
    buf_reset(&b);
    tup_w_init(&w, &b);
    uint64_t x = s;
    for (int e = 0; e < 4; e++, x >>= 13) {
      switch (x % 9) {
      case 0: tup_strz(&w, "h\xc3\xa9llo"); break;
      case 1: tup_bytes(&w, "\x00\xff\x00", 3); break;
      case 2: tup_int(&w, (int64_t)(x * 0x9e3779b97f4a7c15ULL) >> (x % 64)); break;
      case 3: tup_bigint(&w, (int)(x & 1), (const uint8_t *)"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a", 10); break;
      case 4: tup_double(&w, (double)(int64_t)x / 7.0); break;
      case 5: tup_float(&w, (float)x); break;
      case 6: tup_nest_begin(&w); tup_null(&w); tup_strz(&w, "n"); tup_nest_end(&w); break;
      case 7: tup_vs(&w, (const uint8_t *)"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b"); break;
      default: tup_bool(&w, (int)(x & 1)); tup_null(&w); break;
      }
    }
    ASSERT_OK(tup_w_finish(&w));
    /* flip, overwrite, drop or insert a byte or two */
    for (int m = 0; m < 1 + (int)(s >> 60 & 1); m++) {
      size_t at = (size_t)((s >> (8 + 8 * m)) % b.len);
      uint8_t v = (uint8_t)(s >> (24 + 8 * m));
      switch ((s >> (40 + 2 * m)) & 3) {
      case 0: b.p[at] ^= (uint8_t)(1u << (v & 7)); break;
      case 1: b.p[at] = v; break;
      case 2: memmove(b.p + at, b.p + at + 1, b.len - at - 1); b.len--; break;
      default: buf_putc(&b, 0); memmove(b.p + at + 1, b.p + at, b.len - at - 1); b.p[at] = v; break;
      }
      if (!b.len) break;
    }
    if (decode_all(b.p, b.len)) {
      bad++;
      continue;
    }
    ok++;
    /* canonical: decoded elements written back give the same bytes */
    tup_r r;
    tup_item it;
    int rc;
    buf_reset(&re);
    tup_w_init(&w, &re);
    tup_r_init(&r, b.p, b.len);
    while ((rc = tup_next(&r, &it)) == 1) ASSERT_OK(tup_put_item(&w, &it));
    ASSERT_EQ(rc, 0);
    ASSERTF(re.len == b.len && (!b.len || !memcmp(re.p, b.p, b.len)),
            "seed %llu case %d: not canonical: %s", (unsigned long long)seed, k, test_hex(b.p, b.len));
  }
  printf("seed %llu: %d corrupted tuples still valid (and canonical), %d refused\n",
         (unsigned long long)seed, ok, bad);
  ASSERT(bad > 10000);
  buf_free(&b);
  buf_free(&re);
}

/* Depth is no attack: a million nested tuples decode and print without
 * recursion, an unterminated million fails cleanly. */
TEST(tuple_deep_nesting) {
  const size_t depth = 1000000;
  uint8_t *p = malloc(2 * depth + 2);
  ASSERT(p != NULL);
  memset(p, 0x05, depth);
  p[depth] = 0x00;
  p[depth + 1] = 0xff; /* a null at the bottom */
  memset(p + depth + 2, 0x00, depth);
  ASSERT_OK(tup_validate(p, 2 * depth + 2));
  dv_buf t = DV_BUF_INIT;
  ASSERT_OK(tup_format(&t, p, 2 * depth + 2));
  ASSERT_EQ(t.len, 2 * depth + 2 + 4);
  buf_reset(&t);
  ASSERT_EQ(tup_validate(p, 2 * depth + 1), DV_ETUPLE);
  ASSERT_EQ(tup_format(&t, p, 2 * depth + 1), DV_ETUPLE);
  buf_free(&t);
  tup_r r;
  tup_item it;
  tup_r_init(&r, p, 2 * depth + 2);
  ASSERT_EQ(tup_next(&r, &it), 1);
  ASSERT_EQ(it.type, TUP_NEST);
  ASSERT_EQ(it.raw_len, 2 * depth + 2);
  free(p);
}

TEST(tuple_fuzz_smoke) { test_fuzz_smoke("fuzz_tuple"); }
