/* Order preservation of the tuple codec: for random pairs of tuples, the
 * memcmp order of their encodings must be the tuple order the spec defines,
 * computed here from the values by a reference comparator that knows
 * nothing about the encoding.
 *
 * The reference order (design/tuple.md, FDB's fdb.tuple.compare):
 *  - elements compare by type first: null < byte string < unicode string <
 *    nested tuple < integer < float < double < false < true < UUID <
 *    versionstamp;
 *  - byte strings, unicode strings (as UTF-8), UUIDs and versionstamps by
 *    their bytes, a proper prefix first;
 *  - integers by value, whatever their width (0x0b..0x1d are one type);
 *  - floats and doubles by the IEEE total order: -NaN (larger payloads
 *    first) < -inf < negative numbers < -0.0 < +0.0 < positive numbers <
 *    +inf < +NaN (larger payloads last);
 *  - tuples (and nested tuples) element by element, a proper prefix first.
 * Values are drawn from small alphabets and pairs are often near-copies of
 * each other, so comparisons are decided deep inside strings, big integers
 * and nested tuples rather than by the first type code.
 */
#include <math.h>

#include "test.h"
#include "tuple/tuple.h"
#include "util/buf.h"

enum { K_NULL, K_BYTES, K_STR, K_NEST, K_INT, K_FLOAT, K_DOUBLE, K_FALSE, K_TRUE, K_UUID, K_VS, K_COUNT };

typedef struct val {
  int kind;           /* K_*, numbered in tuple order */
  int neg;            /* K_INT: negative */
  uint32_t fbits;     /* K_FLOAT: IEEE bits */
  uint64_t dbits;     /* K_DOUBLE: IEEE bits */
  size_t len;         /* bytes in data */
  uint8_t data[256];  /* K_BYTES/K_STR payload, K_INT magnitude (no leading
                         zero byte), K_UUID (16), K_VS (12) */
  struct val *kids;   /* K_NEST: its elements */
  size_t nkids;       /* K_NEST: how many */
} val;

/* xorshift64*: deterministic for a seed, printed on failure. */
static uint64_t rs;
static uint64_t rnd(void) {
  rs ^= rs >> 12;
  rs ^= rs << 25;
  rs ^= rs >> 27;
  return rs * 2685821657736338717ULL;
}
static size_t below(size_t n) { return (size_t)(rnd() % n); }

static const uint8_t byte_alpha[] = {0x00, 0x01, 0x61, 0xfe, 0xff};
static const char *const str_alpha[] = {"\x00", "a", "b", "\xc3\xa9", "\xe2\x82\xac",
                                        "\xef\xbf\xbf", "\xf0\x9f\x98\x80"};
static const uint8_t int_alpha[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
static const uint32_t float_special[] = {
    0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000,
    0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0xffffffff,
    0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x7f7fffff, 0xff7fffff};
static const uint64_t double_special[] = {
    0x0000000000000000ULL, 0x8000000000000000ULL, 0x3ff0000000000000ULL,
    0xbff0000000000000ULL, 0x7ff0000000000000ULL, 0xfff0000000000000ULL,
    0x7ff8000000000000ULL, 0xfff8000000000000ULL, 0x7ff0000000000001ULL,
    0xfff0000000000001ULL, 0x7fffffffffffffffULL, 0xffffffffffffffffULL,
    0x0000000000000001ULL, 0x8000000000000001ULL, 0x000fffffffffffffULL,
    0x7fefffffffffffffULL, 0xffefffffffffffffULL, 0x3ff0000000000001ULL};

static void gen(val *v, int depth);

static void gen_int(val *v) {
  v->kind = K_INT;
  size_t r = below(20), n;
  if (r < 8) n = below(4);
  else if (r < 16) n = 4 + below(7); /* 4..10 bytes: around the 8-byte edge */
  else if (r < 19) n = 11 + below(20);
  else n = 250 + below(6);
  for (size_t i = 0; i < n; i++) v->data[i] = int_alpha[below(sizeof int_alpha)];
  if (n && !v->data[0]) v->data[0] = 1;
  v->len = n;
  v->neg = n && below(2);
}

static void gen(val *v, int depth) {
  memset(v, 0, offsetof(val, data));
  v->kids = NULL;
  v->nkids = 0;
  int k = (int)below(K_COUNT + 2); /* integers and nests twice as often */
  if (k == K_COUNT) k = K_INT;
  if (k == K_COUNT + 1) k = K_NEST;
  if (k == K_NEST && depth >= 3) k = K_BYTES;
  v->kind = k;
  switch (k) {
  case K_BYTES:
    v->len = below(5);
    for (size_t i = 0; i < v->len; i++) v->data[i] = byte_alpha[below(sizeof byte_alpha)];
    break;
  case K_STR: {
    size_t n = below(5);
    for (size_t i = 0; i < n; i++) {
      const char *c = str_alpha[below(sizeof str_alpha / sizeof str_alpha[0])];
      size_t cl = c[0] ? strlen(c) : 1;
      memcpy(v->data + v->len, c, cl);
      v->len += cl;
    }
    break;
  }
  case K_NEST:
    v->nkids = below(4);
    v->kids = v->nkids ? calloc(v->nkids, sizeof *v->kids) : NULL;
    for (size_t i = 0; i < v->nkids; i++) gen(&v->kids[i], depth + 1);
    break;
  case K_INT:
    gen_int(v);
    break;
  case K_FLOAT:
    v->fbits = below(2) ? float_special[below(sizeof float_special / 4)] : (uint32_t)rnd();
    break;
  case K_DOUBLE:
    v->dbits = below(2) ? double_special[below(sizeof double_special / 8)] : rnd();
    break;
  case K_UUID:
  case K_VS:
    v->len = k == K_UUID ? 16 : 12;
    for (size_t i = 0; i < v->len; i++) v->data[i] = (uint8_t[]){0x00, 0x01, 0xff}[below(3)];
    break;
  default:
    break;
  }
}

static void val_free(val *v) {
  for (size_t i = 0; i < v->nkids; i++) val_free(&v->kids[i]);
  free(v->kids);
  v->kids = NULL;
  v->nkids = 0;
}

static void val_copy(val *dst, const val *src) {
  *dst = *src;
  if (src->nkids) {
    dst->kids = calloc(src->nkids, sizeof *dst->kids);
    for (size_t i = 0; i < src->nkids; i++) val_copy(&dst->kids[i], &src->kids[i]);
  }
}

/* A small change to one element somewhere in t (nkids elements). */
static void mutate(val **t, size_t *n, int depth) {
  size_t r = below(10);
  if (*n == 0 || r == 0) { /* append an element */
    *t = realloc(*t, (*n + 1) * sizeof **t);
    gen(&(*t)[*n], depth);
    (*n)++;
    return;
  }
  if (r == 1) { /* drop the last element */
    val_free(&(*t)[*n - 1]);
    (*n)--;
    return;
  }
  val *v = &(*t)[below(*n)];
  if (v->kind == K_NEST && r < 5) {
    mutate(&v->kids, &v->nkids, depth + 1);
    return;
  }
  switch (v->kind) {
  case K_BYTES:
  case K_STR:
    if (v->len && below(2)) { /* drop the last character (UTF-8: whole) */
      do v->len--;
      while (v->kind == K_STR && v->len && (v->data[v->len] & 0xc0) == 0x80);
    } else if (v->len < 200) v->data[v->len++] = v->kind == K_STR ? 'a' : byte_alpha[below(5)];
    return;
  case K_INT: { /* +-1 on the magnitude, carries included */
    size_t i = v->len;
    if (below(2)) {
      while (i > 0 && v->data[i - 1] == 0xff) v->data[--i] = 0x00;
      if (i > 0) v->data[i - 1]++;
      else if (v->len < 255) {
        memmove(v->data + 1, v->data, v->len);
        v->data[0] = 1;
        v->len++;
      }
    } else if (v->len) {
      while (i > 0 && v->data[i - 1] == 0x00) v->data[--i] = 0xff;
      v->data[i - 1]--;
      size_t z = 0;
      while (z < v->len && !v->data[z]) z++;
      memmove(v->data, v->data + z, v->len - z);
      v->len -= z;
      if (!v->len) v->neg = 0;
    }
    return;
  }
  case K_FLOAT: v->fbits += below(2) ? 1 : (uint32_t)-1; return;
  case K_DOUBLE: v->dbits += below(2) ? 1 : (uint64_t)-1; return;
  case K_UUID:
  case K_VS: v->data[below(v->len)] ^= 1; return;
  default:
    val_free(v);
    gen(v, depth);
  }
}

/* ---- the reference order -------------------------------------------------- */

static int sgn(long long x) { return (x > 0) - (x < 0); }

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  size_t n = an < bn ? an : bn;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return sgn(c);
  return sgn((long long)an - (long long)bn);
}

/* IEEE 754 totalOrder; sign is the sign bit, mag the other bits, isnan
 * and value the number they form. */
static int cmp_ieee(int sa, uint64_t ma, int a_nan, double a, int sb, uint64_t mb, int b_nan,
                    double b) {
  if (sa != sb) return sa ? -1 : 1; /* every negative (-0.0, -NaN too) first */
  if (!a_nan && !b_nan) return (a > b) - (a < b);
  int c = (ma > mb) - (ma < mb); /* a NaN's magnitude exceeds inf's */
  return sa ? -c : c;
}

static int cmp_tuple(const val *a, size_t an, const val *b, size_t bn);

static int cmp_val(const val *a, const val *b) {
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  switch (a->kind) {
  case K_BYTES:
  case K_STR:
  case K_UUID:
  case K_VS:
    return cmp_bytes(a->data, a->len, b->data, b->len);
  case K_NEST:
    return cmp_tuple(a->kids, a->nkids, b->kids, b->nkids);
  case K_INT: {
    if (a->neg != b->neg) return a->neg ? -1 : 1;
    int c = a->len != b->len ? (a->len < b->len ? -1 : 1) : cmp_bytes(a->data, a->len, b->data, b->len);
    return a->neg ? -c : c;
  }
  case K_FLOAT: {
    float x, y;
    memcpy(&x, &a->fbits, 4);
    memcpy(&y, &b->fbits, 4);
    return cmp_ieee(a->fbits >> 31, a->fbits & 0x7fffffff, isnan(x), x, b->fbits >> 31,
                    b->fbits & 0x7fffffff, isnan(y), y);
  }
  case K_DOUBLE: {
    double x, y;
    memcpy(&x, &a->dbits, 8);
    memcpy(&y, &b->dbits, 8);
    uint64_t m = ~(1ULL << 63);
    return cmp_ieee((int)(a->dbits >> 63), a->dbits & m, isnan(x), x, (int)(b->dbits >> 63),
                    b->dbits & m, isnan(y), y);
  }
  default:
    return 0; /* null, false, true */
  }
}

static int cmp_tuple(const val *a, size_t an, const val *b, size_t bn) {
  for (size_t i = 0; i < an && i < bn; i++) {
    int c = cmp_val(&a[i], &b[i]);
    if (c) return c;
  }
  return an < bn ? -1 : an > bn;
}

/* ---- encoding ---------------------------------------------------------- */

static void enc(tup_w *w, const val *v) {
  switch (v->kind) {
  case K_NULL: tup_null(w); break;
  case K_BYTES: tup_bytes(w, v->data, v->len); break;
  case K_STR: ASSERT_OK(tup_str(w, (const char *)v->data, v->len)); break;
  case K_NEST:
    tup_nest_begin(w);
    for (size_t i = 0; i < v->nkids; i++) enc(w, &v->kids[i]);
    tup_nest_end(w);
    break;
  case K_INT:
    if (v->len <= 8 && below(2)) {
      uint64_t m = 0;
      for (size_t i = 0; i < v->len; i++) m = m << 8 | v->data[i];
      if (!v->neg) tup_uint(w, m);
      else if (m <= (1ULL << 63)) tup_int(w, m == (1ULL << 63) ? INT64_MIN : -(int64_t)m);
      else tup_bigint(w, 1, v->data, v->len);
    } else {
      tup_bigint(w, v->neg, v->data, v->len);
    }
    break;
  case K_FLOAT: {
    float f;
    memcpy(&f, &v->fbits, 4);
    tup_float(w, f);
    break;
  }
  case K_DOUBLE: {
    double d;
    memcpy(&d, &v->dbits, 8);
    tup_double(w, d);
    break;
  }
  case K_FALSE: tup_bool(w, 0); break;
  case K_TRUE: tup_bool(w, 1); break;
  case K_UUID: tup_uuid(w, v->data); break;
  case K_VS: tup_vs(w, v->data); break;
  }
}

static void encode(dv_buf *b, const val *t, size_t n) {
  tup_w w;
  buf_reset(b);
  tup_w_init(&w, b);
  for (size_t i = 0; i < n; i++) enc(&w, &t[i]);
  ASSERT_OK(tup_w_finish(&w));
}

static void describe(const char *label, const dv_buf *b) {
  dv_buf t = DV_BUF_INIT;
  (void)tup_format(&t, b->p, b->len);
  fprintf(stderr, "%s %s\n   = %s\n", label, test_hex(b->p, b->len), (const char *)t.p);
  buf_free(&t);
}

TEST(tuple_order) {
  uint64_t seed = 0x5eed0f79e3779b9ULL ^ (uint64_t)rand();
  rs = seed | 1;
  dv_buf ea = DV_BUF_INIT, eb = DV_BUF_INIT;
  long counts[3] = {0, 0, 0};
  const int pairs = 150000;
  for (int k = 0; k < pairs; k++) {
    size_t an = below(5), bn;
    val *a = an ? calloc(an, sizeof *a) : NULL, *b;
    for (size_t i = 0; i < an; i++) gen(&a[i], 0);
    if (below(4)) { /* a near-copy of a */
      bn = an;
      b = an ? calloc(an, sizeof *b) : NULL;
      for (size_t i = 0; i < an; i++) val_copy(&b[i], &a[i]);
      size_t edits = 1 + below(2);
      for (size_t e = 0; e < edits; e++) mutate(&b, &bn, 0);
    } else {
      bn = below(5);
      b = bn ? calloc(bn, sizeof *b) : NULL;
      for (size_t i = 0; i < bn; i++) gen(&b[i], 0);
    }
    encode(&ea, a, an);
    encode(&eb, b, bn);
    int want = cmp_tuple(a, an, b, bn);
    int got = cmp_bytes(ea.p, ea.len, eb.p, eb.len);
    if (want != got) {
      describe("a", &ea);
      describe("b", &eb);
      test_fail_(__FILE__, __LINE__, "pair %d (seed %llu): reference order %d, memcmp %d", k,
                 (unsigned long long)seed, want, got);
    }
    ASSERT_EQ(cmp_tuple(b, bn, a, an), -want);
    counts[want + 1]++;
    for (size_t i = 0; i < an; i++) val_free(&a[i]);
    for (size_t i = 0; i < bn; i++) val_free(&b[i]);
    free(a);
    free(b);
  }
  printf("%d pairs (seed %llu): %ld less, %ld equal, %ld greater; memcmp agrees on all\n", pairs,
         (unsigned long long)seed, counts[0], counts[1], counts[2]);
  /* enough of each outcome that the check means something */
  ASSERT(counts[0] > pairs / 10 && counts[2] > pairs / 10 && counts[1] > pairs / 100);
  buf_free(&ea);
  buf_free(&eb);
}
