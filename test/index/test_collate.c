/* test_collate.c — CouchDB's view collation (src/index/collate.c): the
 * examples of CouchDB's documentation ("Views Collation"), exact numbers,
 * Erlang's term order for raw collation, and the one property that makes
 * keys usable in an ordered store: memcmp of two keys orders them as
 * collate_cmp does, for random values, alone and inside arrays.
 */
#include <pthread.h>
#include <stdlib.h>

#include "index/collate.h"
#include "idxt.h"
#include "test.h"
#include "util/alloc.h"

#define J idxt_json

static int sgn(int x) { return x < 0 ? -1 : x > 0; }

/* memcmp order of two byte strings, shorter first on a common prefix. */
static int keycmp(const dv_buf *a, const dv_buf *b) {
  int r = memcmp(a->p, b->p, a->len < b->len ? a->len : b->len);
  if (r) return sgn(r);
  return a->len < b->len ? -1 : a->len > b->len;
}

/* Check cmp and keys of p and q against want (-1, 0, 1). */
static void check_pair(const json_val *p, const json_val *q, int want, const char *ps, const char *qs) {
  int got = sgn(collate_cmp(p, q));
  ASSERTF(got == want, "cmp(%s, %s) = %d, want %d", ps, qs, got, want);
  dv_buf kp, kq;
  buf_init(&kp);
  buf_init(&kq);
  ASSERT_OK(collate_key(&kp, p));
  ASSERT_OK(collate_key(&kq, q));
  int k = keycmp(&kp, &kq);
  ASSERTF(k == want, "key(%s) vs key(%s) = %d, want %d", ps, qs, k, want);
  buf_free(&kp);
  buf_free(&kq);
}

/* Each row ascending; values in one row compare equal. */
static void check_order(const char *const (*rows)[3], size_t n) {
  dv_arena a = DV_ARENA_INIT;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      for (int x = 0; x < 3 && rows[i][x]; x++)
        for (int y = 0; y < 3 && rows[j][y]; y++)
          check_pair(J(&a, rows[i][x]), J(&a, rows[j][y]), i < j ? -1 : i > j, rows[i][x], rows[j][y]);
  arena_free(&a);
}

/* docs.couchdb.org "Views Collation", Collation Specification. */
TEST(collate_docs_spec) {
  static const char *const rows[][3] = {
      {"null"}, {"false"}, {"true"},
      {"1"}, {"2"}, {"3.0", "3"}, {"4"},
      {"'a'"}, {"'A'"}, {"'aa'"}, {"'b'"}, {"'B'"}, {"'ba'"}, {"'bb'"},
      {"['a']"}, {"['b']"}, {"['b','c']"}, {"['b','c','a']"}, {"['b','d']"}, {"['b','d','e']"},
      {"{'a':1}"}, {"{'a':2}"}, {"{'b':1}"}, {"{'b':2}"}, {"{'b':2,'a':1}"}, {"{'b':2,'c':2}"},
  };
  check_order(rows, sizeof rows / sizeof rows[0]);
}

/* The same page: "abc < Abc < ABC < abc1 < AbcZZZZZ", letters differing
 * only in case after their lower-case form, and startkey/endkey sentinels:
 * "abc\ufff0" after every "abc…" string, {} after every array, and
 * ["foo",{"an":"object"}] after the endkey ["foo",{}]. */
TEST(collate_docs_ranges) {
  static const char *const rows[][3] = {
      {"'abc'"}, {"'Abc'"}, {"'ABC'"}, {"'abc1'"}, {"'AbcZZZZZ'"}, {"'abc\\ufff0'"},
      {"['foo']"}, {"['foo','bar']"}, {"['foo',['bar','baz']]"}, {"['foo',{}]"}, {"['foo',{'an':'object'}]"},
      {"['foo',{'x':1}]"}, {"{}"},
  };
  check_order(rows, sizeof rows / sizeof rows[0]);
}

/* The 7-bit ASCII sequence the page shows. Its list was made with an older
 * ICU; ICU 72 (Debian 12, the one CouchDB 3.4 links there) puts ` and ^
 * after % — this table is ICU 72's root order, which CouchDB 3.4 on this
 * system would give. Every symbol sorts before the digits and the digits
 * before the letters, lower case first. */
TEST(collate_docs_ascii) {
  static const char seq[] = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ";
  size_t n = sizeof seq - 1;
  for (size_t i = 0; i + 1 < n; i++) {
    int r = collate_str_cmp(seq + i, 1, seq + i + 1, 1);
    ASSERTF(r < 0, "'%c' < '%c' (got %d)", seq[i], seq[i + 1], r);
  }
  ASSERT(n == 95); /* 0x20..0x7e, each once */
}

/* Numbers by exact value, whatever their text. */
TEST(collate_numbers) {
  static const char *const rows[][3] = {
      {"-1e400"}, {"-1.7976931348623157e308"}, {"-123456789012345678901234567890"},
      {"-5", "-5.0", "-50e-1"}, {"-0.5"}, {"-0.123"}, {"-0.12", "-0.120"}, {"-1e-400"},
      {"0", "-0", "0.0"}, {"1e-400"}, {"0.12", "12e-2"}, {"0.123"},
      {"1", "1.0", "10e-1"}, {"1.5"}, {"2"}, {"9007199254740992", "9007199254740992.0"}, {"9007199254740993"},
      {"1e20", "100000000000000000000"}, {"123456789012345678901234567890"},
      {"1.7976931348623157e308"}, {"1e400"}, {"1e999999999999999999999"},
  };
  check_order(rows, sizeof rows / sizeof rows[0]);
}

/* Raw collation: Erlang's term order, strings by bytes. */
TEST(collate_raw) {
  static const char *const rows[] = {"-1", "0", "1e400", "false", "null", "true", "{}", "{'a':1}", "[]", "[1]", "'B'", "'a'", "'b'"};
  dv_arena a = DV_ARENA_INIT;
  size_t n = sizeof rows / sizeof rows[0];
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      int got = sgn(collate_raw_cmp(J(&a, rows[i]), J(&a, rows[j]))), want = i < j ? -1 : i > j;
      ASSERTF(got == want, "raw(%s, %s) = %d, want %d", rows[i], rows[j], got, want);
    }
  arena_free(&a);
}

/* ---- random values: key order is collation order --------------------------------- */

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* A random string from a small alphabet of letters in both cases, digits,
 * symbols, accents, CJK and an emoji, so that ties at every ICU level
 * happen often. */
static void rand_str(dv_buf *b) {
  static const char *const atoms[] = {"a", "A", "b", "B", "e", "\xc3\xa9", "E", "1", "9", " ", "-", "_", "~",
                                      "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "z", "\\\"", "\\u0000", "aa"};
  int n = (int)(rnd() % 5);
  buf_putc(b, '"');
  for (int i = 0; i < n; i++) buf_puts(b, atoms[rnd() % (sizeof atoms / sizeof atoms[0])]);
  buf_putc(b, '"');
}

static void rand_val(dv_buf *b, int depth) {
  static const char *const nums[] = {"0", "-0", "1", "1.0", "-1", "0.5", "-0.5", "1e400", "-1e400", "2",
                                     "12345678901234567890123", "1e-7", "0.0000001", "-3.25", "100", "1e2"};
  switch (rnd() % (depth < 3 ? 7 : 5)) {
  case 0: buf_puts(b, "null"); break;
  case 1: buf_puts(b, rnd() & 1 ? "true" : "false"); break;
  case 2: buf_puts(b, nums[rnd() % (sizeof nums / sizeof nums[0])]); break;
  case 3:
  case 4: rand_str(b); break;
  case 5: {
    int n = (int)(rnd() % 4);
    buf_putc(b, '[');
    for (int i = 0; i < n; i++) {
      if (i) buf_putc(b, ',');
      rand_val(b, depth + 1);
    }
    buf_putc(b, ']');
    break;
  }
  default: {
    int n = (int)(rnd() % 3);
    buf_putc(b, '{');
    for (int i = 0; i < n; i++) {
      if (i) buf_putc(b, ',');
      buf_printf(b, "\"k%d\":", (int)(rnd() % 2) + i * 2); /* distinct keys, random gaps */
      rand_val(b, depth + 1);
    }
    buf_putc(b, '}');
  }
  }
}

static json_val *rand_json(dv_arena *a, dv_buf *t) {
  buf_reset(t);
  rand_val(t, 0);
  json_val *v = NULL;
  json_err e = {0, NULL};
  char *s = arena_alloc(a, t->len + 1);
  ASSERT(s != NULL);
  memcpy(s, t->p, t->len);
  s[t->len] = 0;
  int rc = json_parse(a, s, t->len, NULL, &v, &e);
  ASSERTF(rc == 0, "%s at %zu: %s", e.msg, e.offset, s);
  return v;
}

/* 20,000 random pairs: sgn(cmp) == sgn(memcmp of keys), cmp antisymmetric;
 * and inside a two-element array after an equal first element, so keys
 * really end where their value does. */
TEST(collate_keys_random) {
  dv_buf t;
  buf_init(&t);
  for (int i = 0; i < 20000; i++) {
    dv_arena a = DV_ARENA_INIT;
    json_val *p = rand_json(&a, &t), *q = rand_json(&a, &t);
    int c = sgn(collate_cmp(p, q));
    ASSERT_EQ(sgn(collate_cmp(q, p)), -c);
    dv_buf kp, kq;
    buf_init(&kp);
    buf_init(&kq);
    ASSERT_OK(collate_key(&kp, p));
    ASSERT_OK(collate_key(&kq, q));
    ASSERTF(keycmp(&kp, &kq) == c, "pair %d: keys disagree with cmp %d", i, c);
    /* [x, p] vs [x, q] and [p, y] vs [q, y]: the same answer when p != q */
    json_val *x = rand_json(&a, &t);
    json_val *ap = json_new_array(&a), *aq = json_new_array(&a);
    ASSERT(ap && aq);
    ASSERT_OK(json_arr_push(&a, ap, rand_json(&a, &t)));
    ASSERT_OK(json_arr_push(&a, ap, p));
    ASSERT_OK(json_arr_push(&a, aq, ap->u.items[0]));
    ASSERT_OK(json_arr_push(&a, aq, q));
    buf_reset(&kp);
    buf_reset(&kq);
    ASSERT_OK(collate_key(&kp, ap));
    ASSERT_OK(collate_key(&kq, aq));
    ASSERT_EQ(keycmp(&kp, &kq), c);
    ap->u.items[0] = p, ap->u.items[1] = x;
    aq->u.items[0] = q, aq->u.items[1] = x;
    if (c) {
      buf_reset(&kp);
      buf_reset(&kq);
      ASSERT_OK(collate_key(&kp, ap));
      ASSERT_OK(collate_key(&kq, aq));
      ASSERT_EQ(keycmp(&kp, &kq), c);
    }
    buf_free(&kp);
    buf_free(&kq);
    arena_free(&a);
  }
  buf_free(&t);
}

/* The same for raw collation (Erlang's term order): 20,000 random pairs,
 * alone and as the first element of an array, keys agree with
 * collate_raw_cmp. */
TEST(collate_raw_keys_random) {
  dv_buf t;
  buf_init(&t);
  for (int i = 0; i < 20000; i++) {
    dv_arena a = DV_ARENA_INIT;
    json_val *p = rand_json(&a, &t), *q = rand_json(&a, &t);
    int c = sgn(collate_raw_cmp(p, q));
    ASSERT_EQ(sgn(collate_raw_cmp(q, p)), -c);
    dv_buf kp, kq;
    buf_init(&kp);
    buf_init(&kq);
    ASSERT_OK(collate_raw_key(&kp, p));
    ASSERT_OK(collate_raw_key(&kq, q));
    ASSERTF(keycmp(&kp, &kq) == c, "pair %d: raw keys disagree with cmp %d", i, c);
    json_val *ap = json_new_array(&a), *aq = json_new_array(&a), *x = rand_json(&a, &t);
    ASSERT(ap && aq);
    ASSERT_OK(json_arr_push(&a, ap, p));
    ASSERT_OK(json_arr_push(&a, ap, x));
    ASSERT_OK(json_arr_push(&a, aq, q));
    ASSERT_OK(json_arr_push(&a, aq, x));
    if (c) {
      buf_reset(&kp);
      buf_reset(&kq);
      ASSERT_OK(collate_raw_key(&kp, ap));
      ASSERT_OK(collate_raw_key(&kq, aq));
      ASSERT_EQ(keycmp(&kp, &kq), c);
    }
    buf_free(&kp);
    buf_free(&kq);
    arena_free(&a);
  }
  buf_free(&t);
}

/* Long strings and deep values: keys grow as needed. */
TEST(collate_keys_long) {
  dv_arena a = DV_ARENA_INIT;
  size_t n = 100000;
  char *s = dv_malloc(n + 3);
  ASSERT(s != NULL);
  s[0] = '"';
  for (size_t i = 1; i <= n; i++) s[i] = (char)('a' + i % 26);
  s[n + 1] = '"';
  s[n + 2] = 0;
  char *s2 = dv_malloc(n + 3);
  ASSERT(s2 != NULL);
  memcpy(s2, s, n + 3);
  s2[n] = (char)(s[n] - 'a' + 'A'); /* the same letters, the last one in upper case */
  json_val *v = NULL, *w = NULL;
  ASSERT_OK(json_parse(&a, s, n + 2, NULL, &v, NULL));
  ASSERT_OK(json_parse(&a, s2, n + 2, NULL, &w, NULL));
  check_pair(v, w, -1, "long", "long with its last letter in upper case"); /* a < A at the tertiary level */
  dv_free(s);
  dv_free(s2);
  arena_free(&a);
}

/* Each thread has its own collator: comparisons from several threads at
 * once all give the documented answers. */
static void *cmp_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 20000; i++) {
    if (collate_str_cmp("a", 1, "A", 1) >= 0 || collate_str_cmp("A", 1, "aa", 2) >= 0 ||
        collate_str_cmp("~", 1, "0", 1) >= 0)
      return (void *)1;
  }
  return NULL;
}

TEST(collate_threads) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) ASSERT_EQ(pthread_create(&t[i], NULL, cmp_thread, NULL), 0);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    ASSERT(r == NULL);
  }
}

/* collate_key under allocation failure: DV_ENOMEM, never a crash; with
 * enough memory it succeeds. */
TEST(collate_alloc_fail) {
  dv_arena a = DV_ARENA_INIT;
  json_val *v = J(&a, "[{'name':'\\u00e9l\\u00e8ve','n':[1e400,-2.5,null]},'zzz',true]");
  int ok = 0, nomem = 0;
  for (long n = 0; n < 100 && !ok; n++) {
    dv_buf k;
    buf_init(&k);
    dv_alloc_fail_after(n);
    int rc = collate_key(&k, v);
    dv_alloc_fail_after(-1);
    ASSERTF(rc == 0 || rc == DV_ENOMEM, "n=%ld rc=%d", n, rc);
    nomem += rc == DV_ENOMEM;
    ok = rc == 0;
    buf_free(&k);
  }
  ASSERT(ok && nomem > 0);
  arena_free(&a);
}

/* The fuzz target's smoke run (make fuzz runs it longer). */
TEST(collate_fuzz_smoke) { test_fuzz_smoke("fuzz_collate"); }
