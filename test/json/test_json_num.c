/* test_json_num.c — JSON numbers: classification, exact integers, the
 * shortest-double formatting (checked against a brute-force oracle built
 * on printf/strtod), and the agreement between the text path and the
 * binary path of canonicalisation.
 *
 * Not here: numbers inside documents (test_json_conf.c has those).
 */
#include <float.h>
#include <math.h>

#include "test.h"
#include "json/json.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static const char *canon(const char *s, json_num *n) {
  static char out[64];
  int rc = json_num_parse(s, strlen(s), n);
  ASSERTF(rc == 0, "json_num_parse(%s) = %d", s, rc);
  ASSERT(n->len < sizeof out);
  memcpy(out, n->text, n->len);
  out[n->len] = 0;
  return out;
}

TEST(json_num_classes) {
  static const struct {
    const char *text;
    int cls;
  } t[] = {
      {"0", JSON_NUM_INT64},
      {"-0", JSON_NUM_TEXT},
      {"1", JSON_NUM_INT64},
      {"-1", JSON_NUM_INT64},
      {"999999999999999999", JSON_NUM_INT64},
      {"9223372036854775807", JSON_NUM_INT64},
      {"9223372036854775808", JSON_NUM_UINT64},
      {"-9223372036854775808", JSON_NUM_INT64},
      {"-9223372036854775809", JSON_NUM_BIGINT},
      {"18446744073709551615", JSON_NUM_UINT64},
      {"18446744073709551616", JSON_NUM_BIGINT},
      {"99999999999999999999", JSON_NUM_BIGINT},
      {"-18446744073709551615", JSON_NUM_BIGINT},
      {"123456789012345678901234567890", JSON_NUM_BIGINT},
      {"1.5", JSON_NUM_DOUBLE},
      {"1.0", JSON_NUM_DOUBLE},
      {"-0.0", JSON_NUM_DOUBLE},
      {"1e2", JSON_NUM_DOUBLE},
      {"5e-324", JSON_NUM_DOUBLE},
      {"1.7976931348623157e308", JSON_NUM_DOUBLE},
      {"1e400", JSON_NUM_TEXT},
      {"-1e400", JSON_NUM_TEXT},
      {"1e-400", JSON_NUM_TEXT},
      {"0e-400", JSON_NUM_DOUBLE},
      {"2e-324", JSON_NUM_TEXT},
      {"3e-324", JSON_NUM_DOUBLE},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    int c = json_num_classify(t[i].text, strlen(t[i].text));
    ASSERTF(c == t[i].cls, "%s: class %d, want %d", t[i].text, c, t[i].cls);
  }
  static const char *bad[] = {"", "-", "01", "1.", ".1", "+1", "1e", "1 ", " 1", "0x1", "NaN", "1.5.5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_num n;
    ASSERT_EQ(json_num_classify(bad[i], strlen(bad[i])), -1);
    ASSERT_EQ(json_num_parse(bad[i], strlen(bad[i]), &n), DV_EJSON);
  }
}

TEST(json_num_integers) {
  int64_t i;
  uint64_t u;
  ASSERT_OK(json_num_int64("9223372036854775807", 19, &i));
  ASSERT(i == INT64_MAX);
  ASSERT_OK(json_num_int64("-9223372036854775808", 20, &i));
  ASSERT(i == INT64_MIN);
  ASSERT_OK(json_num_int64("-0", 2, &i));
  ASSERT_EQ(i, 0);
  ASSERT_EQ(json_num_int64("9223372036854775808", 19, &i), DV_ERANGE);
  ASSERT_EQ(json_num_int64("-9223372036854775809", 20, &i), DV_ERANGE);
  ASSERT_EQ(json_num_int64("1.0", 3, &i), DV_EINVAL);
  ASSERT_EQ(json_num_int64("1e2", 3, &i), DV_EINVAL);
  ASSERT_EQ(json_num_int64("x", 1, &i), DV_EINVAL);
  ASSERT_OK(json_num_uint64("18446744073709551615", 20, &u));
  ASSERT(u == UINT64_MAX);
  ASSERT_EQ(json_num_uint64("18446744073709551616", 20, &u), DV_ERANGE);
  ASSERT_EQ(json_num_uint64("-1", 2, &u), DV_ERANGE);
  ASSERT_OK(json_num_uint64("-0", 2, &u));
  ASSERT(u == 0);
  ASSERT_EQ(json_num_uint64("123456789012345678901234567890", 30, &u), DV_ERANGE);

  char t[24];
  ASSERT_EQ(json_fmt_int64(INT64_MIN, t), 20);
  ASSERT_STR_EQ(t, "-9223372036854775808");
  ASSERT_EQ(json_fmt_int64(0, t), 1);
  ASSERT_STR_EQ(t, "0");
  ASSERT_EQ(json_fmt_uint64(UINT64_MAX, t), 20);
  ASSERT_STR_EQ(t, "18446744073709551615");
  for (int k = 0; k < 10000; k++) {
    int64_t v = (int64_t)rnd() >> (rnd() % 64);
    size_t n = json_fmt_int64(v, t);
    ASSERT_OK(json_num_int64(t, n, &i));
    ASSERT(i == v);
    json_num num;
    ASSERT_OK(json_num_parse(t, n, &num));
    ASSERT_EQ(num.cls, JSON_NUM_INT64);
    ASSERT(num.text == t && num.len == n);
  }

  /* big integers: exact text, any length, DOM round trip */
  static const char *big[] = {"123456789012345678901234567890", "18446744073709551616",
                              "-18446744073709551617",
                              "100000000000000000000000000000000000000000000000000000000000001"};
  for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
    dv_arena a = DV_ARENA_INIT;
    dv_buf b = DV_BUF_INIT;
    json_val *v;
    ASSERT_OK(json_parse(&a, big[k], strlen(big[k]), NULL, &v, NULL));
    ASSERT_EQ(v->num, JSON_NUM_BIGINT);
    ASSERT_OK(json_write(&b, v));
    ASSERT_STR_EQ((char *)b.p, big[k]);
    buf_free(&b);
    arena_free(&a);
  }
}

TEST(json_num_shortest) {
  static const struct {
    double d;
    const char *text;
  } t[] = {
      {0.1, "0.1"},
      {1e-7, "1e-7"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {0.30000000000000004, "0.30000000000000004"},
      {0.1 + 0.2, "0.30000000000000004"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {1.0, "1.0"},
      {100.0, "100.0"},
      {1.5, "1.5"},
      {-2.5, "-2.5"},
      {1e21, "1e+21"},
      {1e20, "100000000000000000000.0"},
      {123456789.0, "123456789.0"},
      {1e-6, "0.000001"},
      {2.2250738585072014e-308, "2.2250738585072014e-308"},
      {9007199254740992.0, "9007199254740992.0"},
      {9007199254740993.0, "9007199254740992.0"},
      {1.0 / 3.0, "0.3333333333333333"},
      {2.0 / 3.0, "0.6666666666666666"},
      {100.0 / 7.0, "14.285714285714286"},
      {1e23, "1e+23"},
      {DBL_MIN / 2, "1.1125369292536007e-308"},
      {4294967296.0, "4294967296.0"},
  };
  char out[JSON_NUM_BUF];
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    size_t n = json_fmt_double(t[i].d, out);
    ASSERTF(n == strlen(t[i].text) && strcmp(out, t[i].text) == 0, "%.17g: got %s, want %s",
            t[i].d, out, t[i].text);
  }
  ASSERT_EQ(json_fmt_double(NAN, out), 0);
  ASSERT_EQ(json_fmt_double(INFINITY, out), 0);
  ASSERT_EQ(json_fmt_double(-INFINITY, out), 0);

  /* canonical text of number texts */
  json_num n;
  ASSERT_STR_EQ(canon("1.50", &n), "1.5");
  ASSERT_STR_EQ(canon("1e2", &n), "100.0");
  ASSERT_STR_EQ(canon("-0", &n), "-0");
  ASSERT_EQ(n.cls, JSON_NUM_TEXT);
  ASSERT_STR_EQ(canon("-0.0", &n), "-0.0");
  ASSERT_EQ(n.cls, JSON_NUM_DOUBLE);
  ASSERT_STR_EQ(canon("1e400", &n), "1e400");
  ASSERT_EQ(n.cls, JSON_NUM_TEXT);

  /* json_num_double */
  double d;
  ASSERT_OK(json_num_double("0.1", 3, &d));
  ASSERT(d == 0.1);
  ASSERT_OK(json_num_double("-0", 2, &d));
  ASSERT(d == 0 && signbit(d));
  ASSERT_OK(json_num_double("123456789012345678901234567890", 30, &d));
  ASSERT(d == 123456789012345678901234567890.0);
  ASSERT_OK(json_num_double("1e22", 4, &d));
  ASSERT(d == 1e22);
  ASSERT_OK(json_num_double("1e23", 4, &d));
  ASSERT(d == 1e23);
  ASSERT_OK(json_num_double("4.9e-324", 8, &d));
  ASSERT(d == 5e-324);
  ASSERT_EQ(json_num_double("1e400", 5, &d), DV_ERANGE);
  ASSERT(isinf(d));
  ASSERT_EQ(json_num_double("1e-400", 6, &d), DV_ERANGE);
  ASSERT(d == 0);
  ASSERT_EQ(json_num_double("1.", 2, &d), DV_EINVAL);
}

/* The shortest correctly rounded %.*e that reads back: the oracle. */
static int oracle(double d, char *dig, int *exp10) {
  char buf[64];
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, d);
    if (strtod(buf, NULL) == d) {
      int n = 0;
      char *q = buf;
      for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9') dig[n++] = *q;
      while (n > 1 && dig[n - 1] == '0') n--;
      dig[n] = 0;
      *exp10 = atoi(q + 1);
      return n;
    }
  }
  return -1;
}

static double random_double(int kind) {
  uint64_t bits = rnd();
  double d;
  switch (kind % 5) {
    case 0: /* any bit pattern */
      break;
    case 1: /* subnormal */
      bits &= 0x800FFFFFFFFFFFFFull;
      break;
    case 2: /* near a power of two: the asymmetric interval */
      bits = (bits & 0xFFF0000000000000ull) | (rnd() % 3);
      break;
    case 3: { /* a short decimal */
      d = (double)(rnd() % 100000000) / pow(10, (double)(rnd() % 12));
      return kind & 8 ? -d : d;
    }
    default: /* an integer-valued double */
      d = (double)(rnd() >> (rnd() % 64));
      return d;
  }
  memcpy(&d, &bits, 8);
  return d;
}

/* Ryu against the oracle: same digits (or shorter, when the oracle's
 * correctly rounded candidate misses a shorter one), and an exact round
 * trip through json_num_double. */
TEST(json_num_ryu_oracle) {
  char out[JSON_NUM_BUF], od[32], md[32];
  long checked = 0;
  for (int i = 0; i < 150000; i++) {
    double d = random_double(i);
    if (!isfinite(d) || d == 0) continue;
    size_t n = json_fmt_double(d, out);
    ASSERT(n > 0 && n < JSON_NUM_BUF);
    double back;
    ASSERTF(json_num_double(out, n, &back) == 0 && memcmp(&back, &d, 8) == 0,
            "%.17g -> %s does not read back", d, out);
    int oe, on = oracle(fabs(d), od, &oe);
    int mn = 0, nz = 0;
    for (const char *q = out; *q && *q != 'e'; q++) {
      if (*q < '0' || *q > '9') continue;
      if (*q != '0') nz = 1;
      if (nz) md[mn++] = *q;
    }
    while (mn > 1 && md[mn - 1] == '0') mn--;
    md[mn] = 0;
    ASSERTF(mn <= on, "%.17g: %s longer than %s", d, out, od);
    if (mn == on) ASSERTF(strcmp(md, od) == 0, "%.17g: %s vs oracle %s", d, out, od);
    /* the canonical text of our own output is itself, class DOUBLE */
    json_num num;
    ASSERT_OK(json_num_parse(out, n, &num));
    ASSERT_EQ(num.cls, JSON_NUM_DOUBLE);
    ASSERTF(num.len == n && memcmp(num.text, out, n) == 0, "%s not canonical", out);
    checked++;
  }
  printf("%ld doubles checked\n", checked);
}

/* Numbers of up to 15 significant digits take the text path; it must
 * agree with the binary path (strtod, then Ryu) digit for digit. */
TEST(json_num_text_path) {
  char text[64], want[JSON_NUM_BUF];
  for (int i = 0; i < 100000; i++) {
    int nd = 1 + (int)(rnd() % 15);
    uint64_t m = 0;
    for (int k = 0; k < nd; k++) m = m * 10 + rnd() % 10;
    int e = (int)(rnd() % 640) - 320;
    if (i % 3 == 0) e = (int)(rnd() % 40) - 20;
    snprintf(text, sizeof text, "%s%llue%d", rnd() & 1 ? "-" : "", (unsigned long long)m, e);
    json_num num;
    ASSERT_OK(json_num_parse(text, strlen(text), &num));
    double d = strtod(text, NULL);
    if (isinf(d) || (d == 0 && m != 0)) {
      ASSERT_EQ(num.cls, JSON_NUM_TEXT);
      continue;
    }
    size_t n = json_fmt_double(d, want);
    ASSERTF(num.len == n && memcmp(num.text, want, n) == 0, "%s: text path %.*s, binary %s", text,
            (int)num.len, num.text, want);
    ASSERT_EQ(num.cls, JSON_NUM_DOUBLE);
    double back;
    ASSERT_OK(json_num_double(num.text, num.len, &back));
    ASSERT(memcmp(&back, &d, 8) == 0);
  }
}
