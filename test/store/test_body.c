/* test_body.c — the document body codec (src/store/body.c): the exact bytes
 * of every kind of leaf, long leaves split across keys, big integers at the
 * 255-byte edge, a round-trip property test over random JSON texts, deep
 * nesting, the limits, hostile KV streams fed to implode, allocation
 * failure, the digest and the JSON size; body_speed prints throughput and
 * body_fuzz_smoke runs the libFuzzer target briefly.
 */
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "json/json.h"
#include "kv/kv.h"
#include "store/body.h"
#include "tuple/tuple.h"
#include "util/alloc.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                              */
/* ------------------------------------------------------------------ */

static uint64_t rng;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Seeded from the clock, or from DV_SEED to repeat a run; printed. */
static void seed_rng(const char *test) {
  const char *e = getenv("DV_SEED");
  rng = e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
  if (!rng) rng = 1;
  printf("%s: seed %llu (DV_SEED=%llu repeats it)\n", test, (unsigned long long)rng,
         (unsigned long long)rng);
}

typedef struct kv {
  uint8_t *k, *v; /* copies (key without the prefix) */
  size_t kn, vn;  /* lengths */
} kv;

typedef struct kvs {
  kv *a;         /* the KVs, in emission order until sorted */
  size_t n;      /* in use */
  size_t cap;    /* allocated */
  size_t skip;   /* prefix bytes dropped from each key */
  long fail_at;  /* emit fails with DV_EIO on this KV (0-based); -1 never */
} kvs;

static void kvs_init(kvs *s, size_t skip) {
  memset(s, 0, sizeof *s);
  s->skip = skip;
  s->fail_at = -1;
}

static void kvs_push(kvs *s, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->a = realloc(s->a, s->cap * sizeof *s->a);
    ASSERT(s->a);
  }
  kv *e = &s->a[s->n++];
  e->kn = kn;
  e->vn = vn;
  e->k = malloc(kn + 1);
  e->v = malloc(vn + 1);
  ASSERT(e->k && e->v);
  if (kn) memcpy(e->k, k, kn);
  if (vn) memcpy(e->v, v, vn);
}

static int collect(void *arg, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
  kvs *s = arg;
  if (s->fail_at >= 0 && (long)s->n == s->fail_at) return DV_EIO;
  ASSERT(kn > s->skip);
  kvs_push(s, k + s->skip, kn - s->skip, v, vn);
  return 0;
}

static void kvs_free(kvs *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->a[i].k);
    free(s->a[i].v);
  }
  free(s->a);
  s->a = NULL;
  s->n = s->cap = 0;
}

static int kv_cmp(const void *x, const void *y) {
  const kv *a = x, *b = y;
  size_t n = a->kn < b->kn ? a->kn : b->kn;
  int c = n ? memcmp(a->k, b->k, n) : 0;
  return c ? c : (a->kn > b->kn) - (a->kn < b->kn);
}

static void kvs_sort(kvs *s) {
  if (s->n) qsort(s->a, s->n, sizeof *s->a, kv_cmp);
  for (size_t i = 1; i < s->n; i++) ASSERTF(kv_cmp(&s->a[i - 1], &s->a[i]) < 0, "duplicate key %zu", i);
}

static int kvs_same(const kvs *x, const kvs *y) {
  if (x->n != y->n) return 0;
  for (size_t i = 0; i < x->n; i++)
    if (kv_cmp(&x->a[i], &y->a[i]) || x->a[i].vn != y->a[i].vn ||
        memcmp(x->a[i].v, y->a[i].v, x->a[i].vn))
      return 0;
  return 1;
}

/* Explode v below prefix; the KVs land in s (keys without the prefix). */
static int explode(const json_val *v, const uint8_t *prefix, size_t pn, const body_limits *lim,
                   kvs *s, size_t *total) {
  return body_explode(v, prefix, pn, lim, collect, s, total);
}

/* Feed s in its order; 0 and *out, or the first error. */
static int implode(dv_arena *a, const kvs *s, json_val **out) {
  body_builder b;
  body_implode_begin(&b, a);
  int rc = 0;
  for (size_t i = 0; i < s->n && !rc; i++) rc = body_implode_add(&b, s->a[i].k, s->a[i].kn, s->a[i].v, s->a[i].vn);
  if (!rc) rc = body_implode_end(&b, out);
  body_implode_free(&b);
  return rc;
}

static json_val *parse(dv_arena *a, const char *text, size_t n) {
  json_val *v = NULL;
  json_opts o = {JSON_DEPTH_LIMIT, 0, 0};
  json_err e = {0, NULL};
  int rc = json_parse(a, text, n, &o, &v, &e);
  ASSERTF(rc == 0, "json_parse: %d at %zu: %s", rc, e.offset, e.msg ? e.msg : "");
  return v;
}
#define PARSEZ(a, s) parse((a), (s), strlen(s))

static void write_json(dv_buf *b, const json_val *v) {
  buf_reset(b);
  ASSERT_OK(json_write(b, v));
}

static int member_cmp(const void *x, const void *y) {
  const json_member *a = *(const json_member *const *)x, *b = *(const json_member *const *)y;
  size_t n = a->klen < b->klen ? a->klen : b->klen;
  int c = n ? memcmp(a->key, b->key, n) : 0;
  return c ? c : (a->klen > b->klen) - (a->klen < b->klen);
}

/* The canonical form the store gives back: compact JSON with each
 * object's members sorted by key bytes. */
static void canon(dv_buf *b, const json_val *v) {
  if (v && v->type == JSON_OBJECT) {
    const json_member **m = malloc((v->len + 1) * sizeof *m);
    for (size_t i = 0; i < v->len; i++) m[i] = &v->u.members[i];
    qsort(m, v->len, sizeof *m, member_cmp);
    buf_putc(b, '{');
    for (size_t i = 0; i < v->len; i++) {
      if (i) buf_putc(b, ',');
      json_escape(b, m[i]->key, m[i]->klen);
      buf_putc(b, ':');
      canon(b, m[i]->val);
    }
    buf_putc(b, '}');
    free(m);
  } else if (v && v->type == JSON_ARRAY) {
    buf_putc(b, '[');
    for (size_t i = 0; i < v->len; i++) {
      if (i) buf_putc(b, ',');
      canon(b, v->u.items[i]);
    }
    buf_putc(b, ']');
  } else {
    ASSERT_OK(json_write(b, v));
  }
}

static void digest_of(const json_val *v, uint8_t out[DV_MD5_LEN]) {
  dv_md5 m;
  dv_md5_init(&m);
  body_digest(v, &m);
  dv_md5_final(&m, out);
}

static size_t unhex(const char *h, uint8_t *out) {
  size_t n = 0;
  for (; h[0] && h[1]; h += 2) {
    unsigned x;
    ASSERT(sscanf(h, "%2x", &x) == 1);
    out[n++] = (uint8_t)x;
  }
  return n;
}

/* Everything a round trip must keep, for one body. Returns the sorted KVs
 * in *out (caller frees) when out is not NULL. */
static void roundtrip(dv_arena *a, const json_val *v, const uint8_t *prefix, size_t pn, kvs *out) {
  kvs s, s2;
  size_t total = 0, sum = 0;
  kvs_init(&s, pn);
  ASSERT_OK(explode(v, prefix, pn, NULL, &s, &total));
  for (size_t i = 0; i < s.n; i++) {
    sum += pn + s.a[i].kn + s.a[i].vn;
    ASSERT(pn + s.a[i].kn <= KV_MAX_KEY);
    ASSERT(s.a[i].vn <= KV_MAX_VALUE);
    ASSERT_OK(tup_validate(s.a[i].k, s.a[i].kn));
    ASSERT_OK(tup_validate(s.a[i].v, s.a[i].vn));
  }
  ASSERT_EQ(sum, total);
  kvs_sort(&s);
  json_val *back = NULL;
  ASSERT_OK(implode(a, &s, &back));

  dv_buf want = DV_BUF_INIT, got = DV_BUF_INIT;
  canon(&want, v);
  ASSERT_OK(buf_error(&want));
  write_json(&got, back);
  if (want.len != got.len || memcmp(want.p, got.p, want.len)) {
    size_t i = 0;
    while (i < want.len && i < got.len && want.p[i] == got.p[i]) i++;
    test_fail_(__FILE__, __LINE__, "round trip differs at byte %zu of %zu/%zu:\n  want %.80s\n  got  %.80s", i,
               want.len, got.len, (const char *)want.p + (i > 20 ? i - 20 : 0),
               (const char *)got.p + (i > 20 ? i - 20 : 0));
  }
  ASSERT_EQ(body_json_size(back), got.len);
  write_json(&got, v);
  ASSERT_EQ(body_json_size(v), got.len);

  uint8_t d1[DV_MD5_LEN], d2[DV_MD5_LEN];
  digest_of(v, d1);
  digest_of(back, d2);
  ASSERT_MEM_EQ(d1, DV_MD5_LEN, d2, DV_MD5_LEN);

  /* the encoding is unique: the rebuilt body explodes to the same KVs */
  kvs_init(&s2, 0);
  ASSERT_OK(explode(back, NULL, 0, NULL, &s2, NULL));
  kvs_sort(&s2);
  ASSERT(kvs_same(&s, &s2));
  kvs_free(&s2);
  buf_free(&want);
  buf_free(&got);
  if (out) *out = s;
  else kvs_free(&s);
}

/* ------------------------------------------------------------------ */
/* Exact bytes                                                          */
/* ------------------------------------------------------------------ */

TEST(body_vectors) {
  static const char *doc =
      "{\"a\":{},\"b\":[],\"c\":null,\"d\":true,\"e\":false,\"f\":[1,-1,0],"
      "\"g\":18446744073709551616,\"h\":1.5,\"i\":-0,\"j\":1e400,\"k\":\"str\\u0000x\","
      "\"l\":{\"m\":[{}]},\"n\":-18446744073709551616,\"o\":-0.0,\"p\":9223372036854775808,"
      "\"q\":\"\xc3\xa9\",\"\\u0000\":-9223372036854775808,\"\":\"\"}";
  static const struct { const char *key, *val; } want[] = {
      {"026100", "05150100"},                   /* "a": {}          */
      {"026200", "05150200"},                   /* "b": []          */
      {"026300", "00"},                         /* null             */
      {"026400", "27"},                         /* true             */
      {"026500", "26"},                         /* false            */
      {"02660014", "1501"},                     /* "f",0: 1         */
      {"0266001501", "13fe"},                   /* "f",1: -1        */
      {"0266001502", "14"},                     /* "f",2: 0         */
      {"026700", "1d09010000000000000000"},     /* 2^64             */
      {"026800", "21bff8000000000000"},         /* 1.5              */
      {"026900", "051503022d300000"},           /* -0 as text       */
      {"026a00", "0515030231653430300000"},     /* 1e400 as text    */
      {"026b00", "0273747200ff7800"},           /* "str\0x"         */
      {"026c00026d0014", "05150100"},           /* "l","m",0: {}    */
      {"026e00", "0bf6feffffffffffffffff"},     /* -2^64            */
      {"026f00", "217fffffffffffffff"},         /* -0.0             */
      {"027000", "1c8000000000000000"},         /* 2^63 (uint64)    */
      {"027100", "02c3a900"},                   /* "é"              */
      {"0200ff00", "0c7fffffffffffffff"},       /* "\0": INT64_MIN  */
      {"0200", "0200"},                         /* "": ""           */
  };
  static const char *back_text =
      "{\"\":\"\",\"\\u0000\":-9223372036854775808,\"a\":{},\"b\":[],\"c\":null,\"d\":true,"
      "\"e\":false,\"f\":[1,-1,0],\"g\":18446744073709551616,\"h\":1.5,\"i\":-0,\"j\":1e400,"
      "\"k\":\"str\\u0000x\",\"l\":{\"m\":[{}]},\"n\":-18446744073709551616,\"o\":-0.0,"
      "\"p\":9223372036854775808,\"q\":\"\xc3\xa9\"}";
  const uint8_t prefix[] = {0x02, 'p', 0x00};
  dv_arena a = DV_ARENA_INIT;
  json_val *v = PARSEZ(&a, doc);
  kvs s;
  kvs_init(&s, sizeof prefix);
  size_t total = 0;
  ASSERT_OK(explode(v, prefix, sizeof prefix, NULL, &s, &total));
  ASSERT_EQ(s.n, sizeof want / sizeof want[0]);
  size_t sum = 0;
  for (size_t i = 0; i < s.n; i++) {
    ASSERTF(!strcmp(test_hex(s.a[i].k, s.a[i].kn), want[i].key), "key %zu: %s, want %s", i,
            test_hex(s.a[i].k, s.a[i].kn), want[i].key);
    ASSERTF(!strcmp(test_hex(s.a[i].v, s.a[i].vn), want[i].val), "value %zu: %s, want %s", i,
            test_hex(s.a[i].v, s.a[i].vn), want[i].val);
    sum += sizeof prefix + s.a[i].kn + s.a[i].vn;
  }
  ASSERT_EQ(total, sum);
  kvs_sort(&s);
  json_val *back;
  ASSERT_OK(implode(&a, &s, &back));
  dv_buf b = DV_BUF_INIT;
  write_json(&b, back);
  ASSERT_STR_EQ((const char *)b.p, back_text);
  kvs_free(&s);

  /* number classes come back as they went in */
  ASSERT_EQ(json_obj_getz(back, "g")->num, JSON_NUM_BIGINT);
  ASSERT_EQ(json_obj_getz(back, "n")->num, JSON_NUM_BIGINT);
  ASSERT_EQ(json_obj_getz(back, "p")->num, JSON_NUM_UINT64);
  ASSERT_EQ(json_obj_getz(back, "h")->num, JSON_NUM_DOUBLE);
  ASSERT_EQ(json_obj_getz(back, "o")->num, JSON_NUM_DOUBLE);
  ASSERT_EQ(json_obj_getz(back, "i")->num, JSON_NUM_TEXT);
  ASSERT_EQ(json_obj_getz(back, "j")->num, JSON_NUM_TEXT);
  ASSERT_EQ(json_obj_get(back, "\0", 1)->num, JSON_NUM_INT64);

  /* an empty root emits nothing and comes back as {} */
  v = PARSEZ(&a, "{}");
  kvs_init(&s, sizeof prefix);
  ASSERT_OK(explode(v, prefix, sizeof prefix, NULL, &s, &total));
  ASSERT_EQ(s.n, 0);
  ASSERT_EQ(total, 0);
  ASSERT_OK(implode(&a, &s, &back));
  ASSERT(back->type == JSON_OBJECT && back->len == 0);
  buf_free(&b);
  arena_free(&a);
}

/* A string of n bytes: 'x', or a mix with NULs and multi-byte characters. */
static char *long_str(size_t n, int mixed) {
  char *s = malloc(n + 1);
  size_t i = 0;
  while (i < n) {
    size_t left = n - i;
    unsigned r = mixed ? (unsigned)(rnd() % 8) : 7;
    if (r == 0) s[i++] = 0;
    else if (r == 1 && left >= 4) { memcpy(s + i, "\xf0\x9f\x98\x80", 4); i += 4; }
    else if (r == 2 && left >= 3) { memcpy(s + i, "\xe2\x82\xac", 3); i += 3; }
    else if (r == 3 && left >= 2) { memcpy(s + i, "\xc3\xa9", 2); i += 2; }
    else { s[i] = (char)('a' + i % 26); i++; }
  }
  s[n] = 0;
  return s;
}

TEST(body_long_leaves) {
  seed_rng("body_long_leaves");
  dv_arena a = DV_ARENA_INIT;
  const uint8_t prefix[] = {0x02, 'p', 0x00};
  /* 300,000 bytes: a head of 99,994 and its length, then 99,998 per chunk */
  size_t n = 300000;
  char *s = long_str(n, 0);
  json_val *o = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, o, "s", json_new_string(&a, s, n)));
  kvs kl;
  kvs_init(&kl, sizeof prefix);
  ASSERT_OK(explode(o, prefix, sizeof prefix, NULL, &kl, NULL));
  ASSERT_EQ(kl.n, 4);
  ASSERT_STR_EQ(test_hex(kl.a[0].k, kl.a[0].kn), "027300");
  ASSERT_STR_EQ(test_hex(kl.a[1].k, kl.a[1].kn), "0273000015" "01");
  ASSERT_STR_EQ(test_hex(kl.a[2].k, kl.a[2].kn), "0273000015" "02");
  ASSERT_STR_EQ(test_hex(kl.a[3].k, kl.a[3].kn), "0273000015" "03");
  ASSERT_EQ(kl.a[0].vn, 100000);
  ASSERT_EQ(kl.a[0].v[0], 0x02);
  ASSERT(!memcmp(kl.a[0].v + 1, s, 99994));
  ASSERT_STR_EQ(test_hex(kl.a[0].v + 99995, 5), "00170493e0"); /* end, int(300000) */
  ASSERT_EQ(kl.a[1].vn, 100000);
  ASSERT_EQ(kl.a[2].vn, 100000);
  ASSERT(!memcmp(kl.a[1].v + 1, s + 99994, 99998));
  ASSERT_EQ(kl.a[3].vn, 12);
  ASSERT(kl.a[3].v[0] == 0x02 && !memcmp(kl.a[3].v + 1, s + 299990, 10) && kl.a[3].v[11] == 0);
  kvs_free(&kl);
  roundtrip(&a, o, prefix, sizeof prefix, NULL);
  free(s);

  /* the single-value edge: 99,998 encoded bytes fit, 99,999 do not; a NUL
   * costs two */
  struct { size_t n; int nul; size_t kvs; } edge[] = {
      {99998, 0, 1}, {99999, 0, 2}, {99997, 1, 1}, {99998, 1, 2}, {1000000, 0, 11}};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    s = long_str(edge[i].n, 0);
    if (edge[i].nul) s[10] = 0;
    o = json_new_object(&a);
    ASSERT_OK(json_obj_setz(&a, o, "s", json_new_string(&a, s, edge[i].n)));
    kvs out;
    roundtrip(&a, o, prefix, sizeof prefix, &out);
    ASSERT_EQ(out.n, edge[i].kvs);
    for (size_t j = 0; j < out.n; j++) ASSERT(out.a[j].vn <= KV_MAX_VALUE);
    kvs_free(&out);
    free(s);
  }

  /* mixed strings: chunks end between characters, every chunk is a valid
   * tuple string, every value as full as that allows */
  for (int t = 0; t < 6; t++) {
    n = 100000 + rnd() % 300000;
    s = long_str(n, 1);
    o = json_new_object(&a);
    ASSERT_OK(json_obj_setz(&a, o, "x", json_new_array(&a)));
    ASSERT_OK(json_arr_push(&a, json_obj_getz(o, "x"), json_new_string(&a, s, n)));
    size_t half = n / 2;
    while ((s[half] & 0xC0) == 0x80) half--; /* a character boundary */
    ASSERT_OK(json_obj_setz(&a, o, "y", json_new_string(&a, s, half)));
    kvs out;
    roundtrip(&a, o, prefix, sizeof prefix, &out);
    for (size_t j = 0; j < out.n; j++) {
      ASSERT(out.a[j].vn <= KV_MAX_VALUE);
      if (j + 1 < out.n && out.a[j + 1].kn > out.a[j].kn) /* a chunk with another after it */
        ASSERT(out.a[j].vn > KV_MAX_VALUE - 16);
    }
    kvs_free(&out);
    free(s);
  }

  /* a number text longer than a value: 150,001 digits */
  n = 150001;
  s = malloc(n + 1);
  s[0] = '7';
  memset(s + 1, '3', n - 1);
  o = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, o, "big", json_new_number(&a, s, n)));
  ASSERT_EQ(json_obj_getz(o, "big")->num, JSON_NUM_BIGINT);
  kvs_init(&kl, 0);
  ASSERT_OK(explode(o, NULL, 0, NULL, &kl, NULL));
  ASSERT_EQ(kl.n, 2);
  ASSERT_STR_EQ(test_hex(kl.a[0].v, 5), "0515030237");
  ASSERT_STR_EQ(test_hex(kl.a[0].v + kl.a[0].vn - 6, 6), "0000170249f1"); /* int(150001) */
  ASSERT_EQ(kl.a[0].vn, KV_MAX_VALUE);
  kvs_free(&kl);
  roundtrip(&a, o, NULL, 0, NULL);
  free(s);

  /* implode refuses what explode would not write */
  struct { const char *k, *v; } bad[][3] = {
      /* split although it fits one value */
      {{"026100", "0261620015" "04"}, {"0261000015" "01", "02636400"}, {NULL, NULL}},
      /* a chunk missing (1 skipped) */
      {{"026100", "026100" "1602" "a0"}, {"0261000015" "02", "026200"}, {NULL, NULL}},
      /* more bytes than announced */
      {{"026100", "026100" "15" "02"}, {"0261000015" "01", "02626300"}, {NULL, NULL}},
      /* an empty chunk */
      {{"026100", "026100" "15" "02"}, {"0261000015" "01", "0200"}, {NULL, NULL}},
      /* a continuation with no head */
      {{"0261000015" "01", "026200"}, {NULL, NULL}, {NULL, NULL}},
      /* a continuation number 0 */
      {{"026100", "026100" "15" "02"}, {"0261000014", "026200"}, {NULL, NULL}},
      /* a number text with a 00 byte */
      {{"026100", "051503023100ff3000" "00"}, {NULL, NULL}, {NULL, NULL}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    body_builder b;
    body_implode_begin(&b, &a);
    int rc = 0;
    for (int j = 0; j < 3 && bad[i][j].k && !rc; j++) {
      uint8_t k[64], v[64];
      size_t kn = unhex(bad[i][j].k, k), vn = unhex(bad[i][j].v, v);
      rc = body_implode_add(&b, k, kn, v, vn);
    }
    json_val *back;
    if (!rc) rc = body_implode_end(&b, &back);
    ASSERTF(rc == DV_ECORRUPT, "case %zu: %d", i, rc);
    ASSERT_EQ(body_implode_add(&b, (const uint8_t *)"\x02z", 3, (const uint8_t *)"\x00", 1), DV_ECORRUPT);
    body_implode_free(&b);
  }
  /* the end of the stream in the middle of a long string */
  s = long_str(250000, 1);
  o = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, o, "s", json_new_string(&a, s, 250000)));
  kvs_init(&kl, 0);
  ASSERT_OK(explode(o, NULL, 0, NULL, &kl, NULL));
  ASSERT(kl.n >= 3);
  kvs_sort(&kl);
  kl.n--;
  json_val *back;
  ASSERT_EQ(implode(&a, &kl, &back), DV_ECORRUPT);
  kl.n++;
  ASSERT_OK(implode(&a, &kl, &back));
  ASSERT(back->u.members[0].val->len == 250000 && !memcmp(back->u.members[0].val->u.s, s, 250000));
  kvs_free(&kl);
  free(s);
  arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Big integers at the 255-byte edge                                    */
/* ------------------------------------------------------------------ */

/* Decimal text of a big-endian magnitude by schoolbook arithmetic on
 * decimal digits — independent of body.c's base-2^32 limbs. */
static size_t naive_dec(const uint8_t *mag, size_t n, char *out) {
  uint8_t dig[700] = {0}; /* least significant first */
  size_t nd = 1;
  for (size_t i = 0; i < n; i++) {
    unsigned carry = mag[i];
    for (size_t j = 0; j < nd; j++) {
      unsigned t = dig[j] * 256u + carry;
      dig[j] = (uint8_t)(t % 10);
      carry = t / 10;
    }
    while (carry) {
      dig[nd++] = (uint8_t)(carry % 10);
      carry /= 10;
    }
  }
  while (nd > 1 && !dig[nd - 1]) nd--;
  for (size_t i = 0; i < nd; i++) out[i] = (char)('0' + dig[nd - 1 - i]);
  return nd;
}

/* Implode one KV (hex key suffix and value); the result or error. */
static int implode1(dv_arena *a, const char *khex, const char *vhex, json_val **out) {
  uint8_t k[1024], v[1024];
  size_t kn = unhex(khex, k), vn = unhex(vhex, v);
  body_builder b;
  body_implode_begin(&b, a);
  int rc = body_implode_add(&b, k, kn, v, vn);
  if (!rc) rc = body_implode_end(&b, out);
  body_implode_free(&b);
  return rc;
}

TEST(body_bigint_edges) {
  seed_rng("body_bigint_edges");
  dv_arena a = DV_ARENA_INIT;
  dv_buf want = DV_BUF_INIT, got = DV_BUF_INIT, text = DV_BUF_INIT;
  for (int t = 0; t < 3000; t++) {
    uint8_t mag[256];
    size_t len = t < 1024 ? (size_t)(t % 256) + 1 : 1 + rnd() % 256;
    for (size_t i = 0; i < len; i++) mag[i] = (uint8_t)rnd();
    switch (t % 4) {
      case 0: memset(mag, 0xFF, len); break;           /* 2^(8 len) - 1 */
      case 1: memset(mag, 0, len); mag[0] = 1; break;  /* 2^(8 (len-1)) */
      default: break;
    }
    if (!mag[0]) mag[0] = 1;
    int neg = (int)(rnd() & 1);
    char d[700];
    d[0] = '-';
    size_t n = (size_t)neg + naive_dec(mag, len, d + neg);
    json_val *o = json_new_object(&a);
    ASSERT_OK(json_obj_setz(&a, o, "x", json_new_number(&a, d, n)));
    kvs s;
    kvs_init(&s, 0);
    ASSERT_OK(explode(o, NULL, 0, NULL, &s, NULL));
    ASSERT_EQ(s.n, 1);
    buf_reset(&want);
    tup_w w;
    tup_w_init(&w, &want);
    if (len <= TUP_BIGINT_MAX) {
      ASSERT_OK(tup_bigint(&w, neg, mag, len));
    } else {
      ASSERT_OK(tup_nest_begin(&w));
      ASSERT_OK(tup_int(&w, BODY_MARK_NUM));
      ASSERT_OK(tup_str(&w, d, n));
      ASSERT_OK(tup_nest_end(&w));
    }
    ASSERT_OK(tup_w_finish(&w));
    ASSERT_MEM_EQ(s.a[0].v, s.a[0].vn, want.p, want.len);
    json_val *back;
    ASSERT_OK(implode(&a, &s, &back));
    buf_reset(&text);
    buf_puts(&text, "{\"x\":");
    buf_append(&text, d, n);
    buf_putc(&text, '}');
    write_json(&got, back);
    ASSERT_MEM_EQ(got.p, got.len, text.p, text.len);
    ASSERT_EQ(json_obj_getz(back, "x")->num, json_obj_getz(o, "x")->num);
    kvs_free(&s);
    arena_reset(&a);
  }

  /* a text marker must hold what a tuple number could not */
  static const struct { const char *val; int ok; } marks[] = {
      {"0515030231653430300000", 1},       /* 1e400 */
      {"0515030231453430300000", 1},       /* 1E400: TEXT keeps the text */
      {"051503022d300000", 1},             /* -0 */
      {"05150302316534303000" "1400", 0},  /* a second element */
      {"05150302313200" "00", 0},          /* 12: a tuple int */
      {"051503022d3100" "00", 0},          /* -1 */
      {"05150302312e3500" "00", 0},        /* 1.5: a double */
      {"0515030230313200" "00", 0},        /* 012: not JSON */
      {"0515030200" "00", 0},              /* empty */
      {"0515030231653430302000" "00", 0},  /* "1e400 " */
      {"0515040231653430300000", 0},       /* unknown tag 4 */
      {"05150100" "14", 0},                /* {} then more */
      {"0515010000", 0},                   /* {} then a null */
      {"0514" "00", 0},                    /* tag 0 */
      {"05" "00", 0},                      /* empty nested tuple */
      {"0502613000" "00", 0},              /* a string tag */
      {"1d08ffffffffffffffff", 0},         /* 2^64-1 in FDB Python's form */
      {"1cffffffffffffffff", 1},           /* ... and in the standard one */
      {"217ff8000000000000", 1},           /* -inf after the flip: not finite */
      {"21fff8000000000000", 0},           /* NaN */
      {"21fff0000000000000", 0},           /* +inf */
      {"2000000000", 0},                   /* a float */
      {"0100", 0},                         /* a byte string */
      {"", 0},                             /* nothing */
      {"0000", 0},                         /* two nulls */
      {"2627", 0},                         /* two booleans */
      {"3000112233445566778899aabbccddeeff", 0}, /* a UUID */
  };
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
    json_val *back;
    int rc = implode1(&a, "026100", marks[i].val, &back);
    if (i == 18) { /* 7ff8.. flipped back is 0x8007ff..: a finite negative double */
      ASSERT_OK(rc);
      continue;
    }
    ASSERTF(marks[i].ok ? rc == 0 : rc == DV_ECORRUPT, "case %zu (%s): %d", i, marks[i].val, rc);
  }
  /* the 255-byte text equivalent as a marker: a tuple int holds it */
  uint8_t mag[255];
  memset(mag, 0xFF, sizeof mag);
  char d[700];
  size_t n = naive_dec(mag, sizeof mag, d);
  buf_reset(&text);
  buf_puts(&text, "05150302");
  for (size_t i = 0; i < n; i++) buf_printf(&text, "%02x", (unsigned char)d[i]);
  buf_puts(&text, "0000");
  json_val *back;
  ASSERT_EQ(implode1(&a, "026100", (const char *)text.p, &back), DV_ECORRUPT);
  buf_free(&want);
  buf_free(&got);
  buf_free(&text);
  arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Random documents                                                     */
/* ------------------------------------------------------------------ */

static uint32_t rand_cp(void) {
  uint32_t cp;
  switch (rnd() % 10) {
    case 0: return (uint32_t)(rnd() % 0x20); /* control, NUL */
    case 1: return "\"\\/"[rnd() % 3];
    case 2: return 0x80 + (uint32_t)(rnd() % (0x800 - 0x80));
    case 3:
      do cp = 0x800 + (uint32_t)(rnd() % (0x10000 - 0x800));
      while (cp >= 0xD800 && cp <= 0xDFFF);
      return cp;
    case 4: return 0x10000 + (uint32_t)(rnd() % (0x110000 - 0x10000)); /* astral */
    default: return 0x20 + (uint32_t)(rnd() % 0x5F);
  }
}

/* One code point inside a JSON string literal: raw UTF-8, or an escape. */
static void put_cp(dv_buf *b, uint32_t cp) {
  if (cp < 0x20 || cp == '"' || cp == '\\' || rnd() % 16 == 0) {
    if (cp >= 0x10000) {
      uint32_t c = cp - 0x10000;
      buf_printf(b, "\\u%04x\\u%04X", 0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF));
    } else {
      buf_printf(b, rnd() & 1 ? "\\u%04x" : "\\u%04X", cp);
    }
    return;
  }
  uint8_t o[4];
  size_t n;
  if (cp < 0x80) o[0] = (uint8_t)cp, n = 1;
  else if (cp < 0x800) o[0] = (uint8_t)(0xC0 | cp >> 6), o[1] = (uint8_t)(0x80 | (cp & 0x3F)), n = 2;
  else if (cp < 0x10000)
    o[0] = (uint8_t)(0xE0 | cp >> 12), o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)),
    o[2] = (uint8_t)(0x80 | (cp & 0x3F)), n = 3;
  else
    o[0] = (uint8_t)(0xF0 | cp >> 18), o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F)),
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (uint8_t)(0x80 | (cp & 0x3F)), n = 4;
  buf_append(b, o, n);
}

static void gen_string(dv_buf *b, size_t maxcp) {
  buf_putc(b, '"');
  for (size_t k = rnd() % (maxcp + 1); k > 0; k--) put_cp(b, rand_cp());
  buf_putc(b, '"');
}

/* A string literal of about `bytes` bytes: mostly ASCII, some NULs,
 * multi-byte and astral characters. */
static void gen_long_string(dv_buf *b, size_t bytes) {
  size_t start = b->len;
  buf_putc(b, '"');
  while (b->len - start < bytes) {
    uint64_t r = rnd() % 64;
    if (r == 0) buf_puts(b, "\\u0000");
    else if (r == 1) buf_puts(b, "\xf0\x9f\x98\x80");
    else if (r == 2) buf_puts(b, "\xc3\xa9\xe2\x82\xac");
    else buf_puts(b, &"abcdefgh"[rnd() % 8]);
  }
  buf_putc(b, '"');
}

static void gen_digits(dv_buf *b, size_t nd) {
  if (rnd() & 1) buf_putc(b, '-');
  buf_putc(b, (uint8_t)('1' + rnd() % 9));
  for (size_t i = 1; i < nd; i++) buf_putc(b, (uint8_t)('0' + rnd() % 10));
}

static void gen_number(dv_buf *b) {
  static const char *special[] = {
      "0", "-0", "-0.0", "0.0", "1e400", "-1e400", "1e-400", "-1E-400", "0.1", "1E2", "1.50",
      "5e-324", "1.7976931348623157e308", "9223372036854775807", "-9223372036854775808",
      "9223372036854775808", "18446744073709551615", "18446744073709551616",
      "-9223372036854775809", "-18446744073709551615", "-18446744073709551616", "1e21", "1e-7",
      "123456789012345678901234567890"};
  switch (rnd() % 14) {
    case 0: buf_printf(b, "%lld", (long long)((int64_t)rnd() >> (rnd() % 64))); break;
    case 1: buf_printf(b, "%llu", (unsigned long long)rnd()); break;
    case 2: gen_digits(b, 20 + rnd() % 60); break;
    case 3: gen_digits(b, 608 + rnd() % 14); break; /* the 255-byte edge */
    case 4:
      if (rnd() % 16 == 0) gen_digits(b, 1000 + rnd() % 3000);
      else gen_digits(b, 1 + rnd() % 30);
      break;
    case 5: {
      double d;
      do {
        uint64_t bits = rnd();
        memcpy(&d, &bits, 8);
      } while (!isfinite(d));
      char t[JSON_NUM_BUF];
      buf_append(b, t, json_fmt_double(d, t));
      break;
    }
    case 6:
      buf_printf(b, "%s%llu.%llue%d", rnd() & 1 ? "-" : "", (unsigned long long)(rnd() % 100000),
                 (unsigned long long)(rnd() % 1000), (int)(rnd() % 800) - 400);
      break;
    case 7: buf_puts(b, special[rnd() % (sizeof special / sizeof special[0])]); break;
    default: buf_printf(b, "%d", (int)(rnd() % 2000) - 1000); break;
  }
}

static void gen_key(dv_buf *b) {
  static const char *pool[] = {"\"a\"", "\"b\"", "\"_id\"", "\"\\u0000\"", "\"\xc3\xa9\"",
                               "\"\xf0\x9f\x98\x80\"", "\"\"", "\"a\\u0000\"", "\"\\u0061\""};
  if (rnd() % 3 == 0) buf_puts(b, pool[rnd() % (sizeof pool / sizeof pool[0])]);
  else gen_string(b, 8);
}

static void gen_value(dv_buf *b, int depth) {
  int kind = (int)(rnd() % (depth > 6 ? 8 : 11));
  switch (kind) {
    case 0: buf_puts(b, "null"); break;
    case 1: buf_puts(b, rnd() & 1 ? "true" : "false"); break;
    case 2: case 3: gen_number(b); break;
    case 4: case 5: gen_string(b, rnd() % 8 ? 12 : 200); break;
    case 6: buf_puts(b, rnd() & 1 ? "{}" : "[]"); break;
    case 7: case 8: {
      buf_putc(b, '[');
      for (int i = (int)(rnd() % 6); i > 0; i--) {
        gen_value(b, depth + 1);
        if (i > 1) buf_putc(b, ',');
      }
      buf_putc(b, ']');
      break;
    }
    default: {
      buf_putc(b, '{');
      for (int i = (int)(rnd() % 6); i > 0; i--) {
        gen_key(b);
        buf_putc(b, ':');
        gen_value(b, depth + 1);
        if (i > 1) buf_putc(b, ',');
      }
      buf_putc(b, '}');
    }
  }
}

/* A chain of n containers around a value. */
static void gen_chain(dv_buf *b, int n) {
  char *kinds = malloc((size_t)n);
  for (int i = 0; i < n; i++) {
    kinds[i] = (char)(rnd() & 1);
    if (kinds[i]) {
      buf_putc(b, '{');
      gen_key(b);
      buf_putc(b, ':');
    } else {
      buf_putc(b, '[');
      if (rnd() % 4 == 0) buf_puts(b, "1,");
    }
  }
  gen_value(b, 100);
  for (int i = n; i-- > 0;) buf_putc(b, kinds[i] ? '}' : ']');
  free(kinds);
}

/* A document as JSON text. big: may hold a long string or a deep chain. */
static void gen_doc(dv_buf *b, long i, int big) {
  buf_reset(b);
  buf_putc(b, '{');
  int n = (int)(rnd() % 12);
  for (int m = 0; m < n; m++) {
    if (m) buf_putc(b, ',');
    gen_key(b);
    buf_putc(b, ':');
    gen_value(b, 1);
  }
  if (big && i % 400 == 7) {
    buf_puts(b, n ? ",\"long\":" : "\"long\":");
    gen_long_string(b, 100000 + rnd() % 200000);
    n++;
  }
  if (big && i % 500 == 11) {
    buf_puts(b, n ? ",\"deep\":" : "\"deep\":");
    gen_chain(b, 900 + (int)(rnd() % 100));
  }
  buf_putc(b, '}');
}

/* Change one thing somewhere in v, so that it is a different JSON value. */
static void mutate(dv_arena *a, json_val *v) {
  while ((v->type == JSON_ARRAY || v->type == JSON_OBJECT) && v->len && rnd() % 3) {
    size_t i = rnd() % v->len;
    v = v->type == JSON_ARRAY ? v->u.items[i] : v->u.members[i].val;
  }
  switch (v->type) {
    case JSON_NULL: v->type = JSON_BOOL; v->b = 0; break;
    case JSON_BOOL: v->b = !v->b; break;
    case JSON_NUMBER: {
      const char *t = v->len == 1 && v->u.s[0] == '7' ? "8" : "7";
      v->u.s = t;
      v->len = 1;
      v->num = JSON_NUM_INT64;
      break;
    }
    case JSON_STRING: {
      char *s = arena_alloc(a, v->len + 1);
      memcpy(s, v->u.s, v->len);
      s[v->len] = 'x';
      v->u.s = s;
      v->len++;
      break;
    }
    case JSON_ARRAY: ASSERT_OK(json_arr_push(a, v, json_new_null(a))); break;
    default: {
      char k[32];
      snprintf(k, sizeof k, "~%llu", (unsigned long long)rnd());
      if (v->len && rnd() & 1) { /* rename a member */
        json_member *m = &v->u.members[rnd() % v->len];
        m->key = arena_strndup(a, k, strlen(k));
        m->klen = strlen(k);
      } else {
        ASSERT_OK(json_obj_setz(a, v, k, json_new_null(a)));
      }
    }
  }
}

TEST(body_roundtrip_prop) {
  seed_rng("body_roundtrip_prop");
  dv_arena a = DV_ARENA_INIT;
  dv_buf text = DV_BUF_INIT;
  uint8_t prefix[64];
  size_t bytes = 0, nkv = 0;
  long ndocs = 20000;
  for (long i = 0; i < ndocs; i++) {
    gen_doc(&text, i, 1);
    ASSERT_OK(buf_error(&text));
    json_val *v = parse(&a, (const char *)text.p, text.len);
    /* a prefix as the store builds it: (P, "d", DocID, NotDeleted, ...) */
    dv_buf pb = DV_BUF_INIT;
    tup_w w;
    tup_w_init(&w, &pb);
    (void)tup_int(&w, 1);
    (void)tup_int(&w, (int64_t)(rnd() % 1000));
    (void)tup_strz(&w, "d");
    (void)tup_strz(&w, i % 2 ? "doc" : "");
    ASSERT_OK(tup_w_finish(&w));
    ASSERT(pb.len <= sizeof prefix);
    size_t pn = pb.len;
    memcpy(prefix, pb.p, pn);
    buf_free(&pb);

    kvs s;
    roundtrip(&a, v, prefix, pn, &s);
    nkv += s.n;
    bytes += text.len;
    kvs_free(&s);

    uint8_t d1[DV_MD5_LEN], d2[DV_MD5_LEN];
    digest_of(v, d1);
    mutate(&a, v);
    digest_of(v, d2);
    ASSERTF(memcmp(d1, d2, DV_MD5_LEN) != 0, "doc %ld: a mutation kept the digest", i);
    arena_reset(&a);
  }
  printf("%ld random documents round-tripped: %zu bytes of JSON, %zu KVs\n", ndocs, bytes, nkv);
  buf_free(&text);
  arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Depth                                                                */
/* ------------------------------------------------------------------ */

TEST(body_deep) {
  dv_arena a = DV_ARENA_INIT;
  dv_buf text = DV_BUF_INIT;
  /* the deepest json_parse allows: 4096 levels, arrays and objects */
  for (int kind = 0; kind < 3; kind++) {
    buf_reset(&text);
    buf_puts(&text, "{\"d\":");
    for (int i = 0; i < JSON_DEPTH_LIMIT - 1; i++) buf_puts(&text, kind == 0 ? "[" : kind == 1 ? "{\"\":" : i & 1 ? "[" : "{\"k\":");
    buf_puts(&text, "\"leaf\"");
    for (int i = JSON_DEPTH_LIMIT - 1; i-- > 0;) buf_putc(&text, kind == 0 ? ']' : kind == 1 ? '}' : i & 1 ? ']' : '}');
    buf_putc(&text, '}');
    json_val *v = parse(&a, (const char *)text.p, text.len);
    roundtrip(&a, v, (const uint8_t *)"\x15\x01", 2, NULL);
    dv_buf got = DV_BUF_INIT;
    json_val *back;
    kvs s;
    kvs_init(&s, 2);
    ASSERT_OK(explode(v, (const uint8_t *)"\x15\x01", 2, NULL, &s, NULL));
    ASSERT_EQ(s.n, 1);
    ASSERT_OK(implode(&a, &s, &back));
    write_json(&got, back);
    ASSERT_MEM_EQ(got.p, got.len, text.p, text.len);
    kvs_free(&s);
    buf_free(&got);
    arena_reset(&a);
  }
  /* a hand-built chain far deeper than any parser allows: exploding and
   * imploding are iterative */
  int depth = 50000;
  json_val *v = json_new_string(&a, "bottom", 6);
  for (int i = 0; i < depth; i++) {
    json_val *c = i & 1 ? json_new_object(&a) : json_new_array(&a);
    if (i & 1) ASSERT_OK(json_obj_setz(&a, c, "", v));
    else ASSERT_OK(json_arr_push(&a, c, v));
    v = c;
  }
  json_val *root = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, root, "r", v));
  kvs s;
  kvs_init(&s, 0);
  body_limits lim = {200000, 0};
  ASSERT_EQ(explode(root, NULL, 0, NULL, &s, NULL), DV_EPATH_TOO_LONG);
  ASSERT_OK(explode(root, NULL, 0, &lim, &s, NULL));
  ASSERT_EQ(s.n, 1);
  json_val *back;
  ASSERT_OK(implode(&a, &s, &back));
  const json_val *p = json_obj_getz(back, "r");
  for (int i = depth; i-- > 0;) {
    ASSERT(p && p->len == 1 && p->type == (i & 1 ? JSON_OBJECT : JSON_ARRAY));
    p = i & 1 ? p->u.members[0].val : p->u.items[0];
  }
  ASSERT(p->type == JSON_STRING && p->len == 6);
  kvs_free(&s);
  buf_free(&text);
  arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Limits and errors                                                    */
/* ------------------------------------------------------------------ */

TEST(body_limits) {
  dv_arena a = DV_ARENA_INIT;
  const uint8_t prefix[] = {0x02, 'd', 0x00, 0x27};
  kvs s;
  size_t total;
  /* a key of exactly KV_MAX_KEY bytes: prefix 4 + 02 name 00 */
  for (size_t extra = 0; extra < 2; extra++) {
    size_t nl = KV_MAX_KEY - sizeof prefix - 2 + extra;
    char *name = malloc(nl + 1);
    memset(name, 'k', nl + 1);
    json_val *o = json_new_object(&a);
    ASSERT_OK(json_obj_set(&a, o, name, nl, json_new_int(&a, 1)));
    kvs_init(&s, sizeof prefix);
    ASSERT_EQ(explode(o, prefix, sizeof prefix, NULL, &s, NULL), extra ? DV_EPATH_TOO_LONG : 0);
    if (!extra) ASSERT_EQ(sizeof prefix + s.a[0].kn, KV_MAX_KEY);
    kvs_free(&s);
    body_limits lim = {KV_MAX_KEY, 0};
    ASSERT_EQ(explode(o, prefix, sizeof prefix, &lim, &s, NULL), extra ? DV_EPATH_TOO_LONG : 0);
    kvs_free(&s);
    /* the same path under a non-empty container fails early */
    json_val *c = json_new_object(&a), *arr = json_new_array(&a);
    ASSERT_OK(json_arr_push(&a, arr, json_new_null(&a)));
    ASSERT_OK(json_obj_set(&a, c, name, nl + 1, arr));
    ASSERT_EQ(explode(c, prefix, sizeof prefix, NULL, &s, NULL), DV_EPATH_TOO_LONG);
    kvs_free(&s);
    free(name);
  }
  /* depth: each array level adds one byte (0x14); 9994 levels under the
   * 4-byte prefix and "" (02 00) make a 10,000-byte key */
  for (int extra = 0; extra < 2; extra++) {
    json_val *v = json_new_null(&a);
    for (int i = 0; i < (int)(KV_MAX_KEY - sizeof prefix - 2) + extra; i++) {
      json_val *c = json_new_array(&a);
      ASSERT_OK(json_arr_push(&a, c, v));
      v = c;
    }
    json_val *o = json_new_object(&a);
    ASSERT_OK(json_obj_setz(&a, o, "", v)); /* 02 00 */
    kvs_init(&s, sizeof prefix);
    int rc = explode(o, prefix, sizeof prefix, NULL, &s, NULL);
    ASSERT_EQ(rc, extra ? DV_EPATH_TOO_LONG : 0);
    if (!rc) ASSERT_EQ(sizeof prefix + s.a[0].kn, KV_MAX_KEY);
    kvs_free(&s);
  }
  /* continuation keys count too: three bytes more than their leaf */
  {
    size_t nl = KV_MAX_KEY - sizeof prefix - 2 - 3;
    char *name = malloc(nl + 1), *str = long_str(150000, 0);
    memset(name, 'k', nl + 1);
    for (int extra = 0; extra < 2; extra++) {
      json_val *o = json_new_object(&a);
      ASSERT_OK(json_obj_set(&a, o, name, nl + (size_t)extra, json_new_string(&a, str, 150000)));
      kvs_init(&s, sizeof prefix);
      ASSERT_EQ(explode(o, prefix, sizeof prefix, NULL, &s, NULL), extra ? DV_EPATH_TOO_LONG : 0);
      kvs_free(&s);
    }
    free(name);
    free(str);
  }
  /* the byte budget: exactly at it, and one byte short */
  json_val *doc = PARSEZ(&a, "{\"a\":[1,2,{\"b\":\"hello\"}],\"c\":{},\"d\":1e400}");
  kvs_init(&s, sizeof prefix);
  ASSERT_OK(explode(doc, prefix, sizeof prefix, NULL, &s, &total));
  ASSERT(total > 0);
  kvs_free(&s);
  body_limits lim = {0, total};
  size_t t2 = 0;
  ASSERT_OK(explode(doc, prefix, sizeof prefix, &lim, &s, &t2));
  ASSERT_EQ(t2, total);
  kvs_free(&s);
  lim.max_kv_bytes = total - 1;
  t2 = 12345;
  ASSERT_EQ(explode(doc, prefix, sizeof prefix, &lim, &s, &t2), DV_EDOC_TOO_LARGE);
  ASSERT_EQ(t2, 12345); /* not written on error */
  kvs_free(&s);
  /* not an object */
  const char *nonobj[] = {"[]", "[{}]", "\"s\"", "1", "null", "true"};
  for (size_t i = 0; i < sizeof nonobj / sizeof nonobj[0]; i++)
    ASSERT_EQ(explode(PARSEZ(&a, nonobj[i]), prefix, sizeof prefix, NULL, &s, NULL), DV_ENOT_OBJECT);
  ASSERT_EQ(explode(NULL, prefix, sizeof prefix, NULL, &s, NULL), DV_ENOT_OBJECT);
  ASSERT_EQ(s.n, 0);
  /* the emitter's error stops the walk and comes back */
  kvs_init(&s, sizeof prefix);
  s.fail_at = 2;
  ASSERT_EQ(explode(doc, prefix, sizeof prefix, NULL, &s, NULL), DV_EIO);
  ASSERT_EQ(s.n, 2);
  kvs_free(&s);
  /* a DOM that json_parse would never make: not UTF-8, not a number */
  json_val *o = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, o, "s", json_new_string(&a, "\xff", 1)));
  kvs_init(&s, 0);
  ASSERT_EQ(explode(o, NULL, 0, NULL, &s, NULL), DV_EINVAL);
  o = json_new_object(&a);
  ASSERT_OK(json_obj_set(&a, o, "\xc0\x80", 2, json_new_null(&a)));
  ASSERT_EQ(explode(o, NULL, 0, NULL, &s, NULL), DV_EINVAL);
  o = json_new_object(&a);
  json_val *bad = json_new_int(&a, 5);
  bad->u.s = "5x";
  bad->len = 2;
  ASSERT_OK(json_obj_setz(&a, o, "n", bad));
  ASSERT_EQ(explode(o, NULL, 0, NULL, &s, NULL), DV_EINVAL);
  char *ls = long_str(200000, 0);
  ls[150000] = (char)0xFF;
  o = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, o, "s", json_new_string(&a, ls, 200000)));
  ASSERT_EQ(explode(o, NULL, 0, NULL, &s, NULL), DV_EINVAL);
  free(ls);
  kvs_free(&s);
  arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Hostile streams                                                      */
/* ------------------------------------------------------------------ */

static void kvs_copy(kvs *dst, const kvs *src) {
  kvs_init(dst, 0);
  for (size_t i = 0; i < src->n; i++) kvs_push(dst, src->a[i].k, src->a[i].kn, src->a[i].v, src->a[i].vn);
}

static void kv_replace(kv *e, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
  uint8_t *nk = malloc(kn + 1), *nv = malloc(vn + 1);
  if (kn) memcpy(nk, k, kn);
  if (vn) memcpy(nv, v, vn);
  free(e->k);
  free(e->v);
  e->k = nk, e->kn = kn, e->v = nv, e->vn = vn;
}

/* Feed a stream that may be anything: the answer is DV_ECORRUPT, or a
 * body that explodes to exactly this stream (check_unique). */
static int feed_hostile(dv_arena *a, const kvs *s, int check_unique) {
  json_val *back = NULL;
  int rc = implode(a, s, &back);
  ASSERTF(rc == 0 || rc == DV_ECORRUPT, "implode: %d", rc);
  if (rc == 0) {
    dv_buf b = DV_BUF_INIT;
    write_json(&b, back);
    ASSERT_EQ(body_json_size(back), b.len);
    buf_free(&b);
    if (check_unique) {
      kvs again;
      kvs_init(&again, 0);
      ASSERT_OK(explode(back, NULL, 0, NULL, &again, NULL));
      kvs_sort(&again);
      ASSERT(kvs_same(s, &again));
      kvs_free(&again);
    }
  }
  return rc;
}

TEST(body_hostile_implode) {
  seed_rng("body_hostile_implode");
  dv_arena a = DV_ARENA_INIT;
  dv_buf text = DV_BUF_INIT;
  long counts[2] = {0, 0};
  for (long t = 0; t < 20000; t++) {
    gen_doc(&text, t, 0);
    json_val *v = parse(&a, (const char *)text.p, text.len);
    kvs s, m;
    kvs_init(&s, 0);
    ASSERT_OK(explode(v, NULL, 0, NULL, &s, NULL));
    kvs_sort(&s);
    kvs_copy(&m, &s);
    int expect_corrupt = 0;
    uint8_t junk[64];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)rnd();
    size_t i = m.n ? rnd() % m.n : 0;
    switch (rnd() % 11) {
      case 0: m.n = m.n ? rnd() % m.n : 0; break; /* truncate the stream */
      case 1:                                        /* truncate a key */
        if (m.n) m.a[i].kn = rnd() % m.a[i].kn;
        break;
      case 2: /* truncate a value */
        if (m.n) m.a[i].vn = rnd() % (m.a[i].vn + 1);
        break;
      case 3: /* flip bits in a key */
        for (int f = (int)(rnd() % 3); f >= 0 && m.n; f--) m.a[i].k[rnd() % m.a[i].kn] ^= (uint8_t)(1u << rnd() % 8);
        break;
      case 4: /* flip bits in a value */
        if (m.n && m.a[i].vn) m.a[i].v[rnd() % m.a[i].vn] ^= (uint8_t)(1u << rnd() % 8);
        break;
      case 5: /* swap two */
        if (m.n >= 2) {
          size_t j = (i + 1 + rnd() % (m.n - 1)) % m.n;
          kv x = m.a[i];
          m.a[i] = m.a[j];
          m.a[j] = x;
          expect_corrupt = 1;
        }
        break;
      case 6: /* a key twice */
        if (m.n) {
          kvs_push(&m, m.a[i].k, m.a[i].kn, m.a[i].v, m.a[i].vn);
          kv x = m.a[m.n - 1];
          memmove(&m.a[i + 1], &m.a[i], (m.n - 1 - i) * sizeof *m.a);
          m.a[i] = x;
          expect_corrupt = 1;
        }
        break;
      case 7: /* garbage in place of a key or value */
        if (m.n) {
          if (rnd() & 1) kv_replace(&m.a[i], junk, 1 + rnd() % 16, m.a[i].v, m.a[i].vn);
          else kv_replace(&m.a[i], m.a[i].k, m.a[i].kn, junk, rnd() % 16);
        }
        break;
      case 8: /* drop one in the middle */
        if (m.n) {
          free(m.a[i].k);
          free(m.a[i].v);
          memmove(&m.a[i], &m.a[i + 1], (m.n - 1 - i) * sizeof *m.a);
          m.n--;
        }
        break;
      case 9: { /* an empty key first: the metadata KV fed by mistake */
        kvs_push(&m, NULL, 0, (const uint8_t *)"\x15\x01", 2);
        kv x = m.a[m.n - 1];
        memmove(&m.a[1], &m.a[0], (m.n - 1) * sizeof *m.a);
        m.a[0] = x;
        expect_corrupt = 1;
        break;
      }
      default: /* a stream of garbage */
        kvs_free(&m);
        kvs_init(&m, 0);
        for (int k = (int)(rnd() % 5); k >= 0; k--) {
          for (size_t j = 0; j < sizeof junk; j++) junk[j] = rnd() % 4 ? (uint8_t)"\x00\x02\x05\x14\x15\x26\x27\x21\xff"[rnd() % 9] : (uint8_t)rnd();
          kvs_push(&m, junk, rnd() % 12, junk + 32, rnd() % 12);
        }
        break;
    }
    int rc = feed_hostile(&a, &m, 1);
    if (expect_corrupt) ASSERT_EQ(rc, DV_ECORRUPT);
    counts[rc != 0]++;
    kvs_free(&m);
    kvs_free(&s);
    arena_reset(&a);
  }
  printf("hostile streams: %ld accepted, %ld refused\n", counts[0], counts[1]);
  ASSERT(counts[1] > 5000);

  /* long strings: cut and flipped chunks */
  char *ls = long_str(350000, 1);
  json_val *o = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, o, "a", json_new_string(&a, ls, 350000)));
  char *ls2 = long_str(120000, 1);
  ASSERT_OK(json_obj_setz(&a, o, "b", json_new_string(&a, ls2, 120000)));
  kvs s;
  kvs_init(&s, 0);
  ASSERT_OK(explode(o, NULL, 0, NULL, &s, NULL));
  kvs_sort(&s);
  ASSERT(s.n >= 6);
  for (int t = 0; t < 60; t++) {
    kvs m;
    kvs_copy(&m, &s);
    size_t i = rnd() % m.n;
    int expect_corrupt = 0;
    switch (t % 4) {
      case 0: /* drop a chunk or a head */
        free(m.a[i].k);
        free(m.a[i].v);
        memmove(&m.a[i], &m.a[i + 1], (m.n - 1 - i) * sizeof *m.a);
        m.n--;
        expect_corrupt = 1;
        break;
      case 1: m.a[i].vn = rnd() % m.a[i].vn; break;
      case 2: m.a[i].v[rnd() % m.a[i].vn] ^= (uint8_t)(1u << rnd() % 8); break;
      default: m.a[i].k[rnd() % m.a[i].kn] ^= (uint8_t)(1u << rnd() % 8); break;
    }
    int rc = feed_hostile(&a, &m, 0);
    if (expect_corrupt) ASSERT_EQ(rc, DV_ECORRUPT);
    kvs_free(&m);
  }
  kvs_free(&s);
  free(ls);
  free(ls2);
  buf_free(&text);
  arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Allocation failure                                                   */
/* ------------------------------------------------------------------ */

TEST(body_alloc_fail) {
  seed_rng("body_alloc_fail");
  dv_arena a = DV_ARENA_INIT;
  dv_buf text = DV_BUF_INIT, want = DV_BUF_INIT, got = DV_BUF_INIT;
  /* a body with every kind of leaf, depth, an unsorted object and a long
   * string (the builder's chunk buffer) */
  buf_puts(&text, "{\"z\":1,\"y\":[1,2,[3,{\"q\":{}}],[]],\"x\":\"s\\u0000t\",\"w\":1e400,"
                  "\"v\":123456789012345678901234567890,\"u\":-0.5,\"t\":null,\"deep\":");
  gen_chain(&text, 40);
  buf_puts(&text, ",\"long\":");
  gen_long_string(&text, 150000);
  buf_putc(&text, '}');
  json_val *v = parse(&a, (const char *)text.p, text.len);
  kvs base;
  kvs_init(&base, 0);
  ASSERT_OK(explode(v, NULL, 0, NULL, &base, NULL));
  json_val *back;
  kvs sorted;
  kvs_copy(&sorted, &base);
  kvs_sort(&sorted);
  ASSERT_OK(implode(&a, &sorted, &back));
  write_json(&want, back);
  uint8_t d0[DV_MD5_LEN], d1[DV_MD5_LEN];
  digest_of(v, d0);

  int fails = 0, k;
  for (k = 0; k < 1000; k++) {
    kvs s;
    kvs_init(&s, 0);
    dv_alloc_fail_after(k);
    int rc = explode(v, NULL, 0, NULL, &s, NULL);
    dv_alloc_fail_after(-1);
    if (rc) {
      ASSERT_EQ(rc, DV_ENOMEM);
      fails++;
    } else {
      ASSERT(kvs_same(&s, &base));
    }
    kvs_free(&s);
    if (!rc) break;
  }
  printf("explode: %d allocation failures refused cleanly\n", fails);
  ASSERT(fails > 2);

  fails = 0;
  for (k = 0; k < 100000; k++) {
    dv_arena small;
    arena_init(&small, 256); /* small chunks: many allocations */
    dv_alloc_fail_after(k);
    int rc = implode(&small, &sorted, &back);
    dv_alloc_fail_after(-1);
    if (rc) {
      ASSERT_EQ(rc, DV_ENOMEM);
      fails++;
    } else {
      write_json(&got, back);
      ASSERT_MEM_EQ(got.p, got.len, want.p, want.len);
    }
    arena_free(&small);
    if (!rc) break;
    if (k > 200) k += k / 50; /* the tail: sample */
  }
  printf("implode: %d allocation failures refused cleanly\n", fails);
  ASSERT(fails > 10);

  /* the digest cannot fail: without memory it sorts by scanning */
  for (k = 0; k < 30; k++) {
    dv_alloc_fail_after(k);
    digest_of(v, d1);
    dv_alloc_fail_after(-1);
    ASSERT_MEM_EQ(d1, DV_MD5_LEN, d0, DV_MD5_LEN);
  }
  kvs_free(&base);
  kvs_free(&sorted);
  buf_free(&text);
  buf_free(&want);
  buf_free(&got);
  arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Digest and JSON size                                                 */
/* ------------------------------------------------------------------ */

TEST(body_digest_cases) {
  seed_rng("body_digest_cases");
  dv_arena a = DV_ARENA_INIT;
  /* member order does not matter, at any depth */
  static const char *same[][2] = {
      {"{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}"},
      {"{\"x\":{\"b\":[1,{\"d\":1,\"c\":2}],\"a\":null}}", "{\"x\":{\"a\":null,\"b\":[1,{\"c\":2,\"d\":1}]}}"},
      {"{\"a\":1,\"a\":2}", "{\"a\":2}"},
      {"{\"\\u0061\":1.50}", "{\"a\":1.5}"},
      {"{\"k\":1E2}", "{\"k\":100.0}"},
  };
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
    uint8_t d1[DV_MD5_LEN], d2[DV_MD5_LEN];
    digest_of(PARSEZ(&a, same[i][0]), d1);
    digest_of(PARSEZ(&a, same[i][1]), d2);
    ASSERT_MEM_EQ(d1, DV_MD5_LEN, d2, DV_MD5_LEN);
  }
  /* every one of these is a different value, so every digest differs */
  static const char *diff[] = {
      "null", "true", "false", "0", "-0", "0.0", "-0.0", "1", "1.0", "\"1\"", "\"\"", "[]", "{}",
      "[[]]", "[[],[]]", "[{}]", "{\"\":null}", "{\"\":{}}", "{\"a\":\"bc\"}", "{\"ab\":\"c\"}",
      "{\"a\":[\"b\",\"c\"]}", "{\"a\":[\"bc\"]}", "[\"a\",\"b\"]", "[\"ab\"]", "[\"a\\u0000b\"]",
      "{\"a\":1,\"b\":2}", "{\"a\":2,\"b\":1}", "{\"a\":{\"b\":1}}", "{\"a\":{},\"b\":1}",
      "[null]", "[null,null]", "\"null\"", "1e400", "1E400", "123456789012345678901234567890",
      "[1,[2]]", "[[1],2]", "{\"a\":[]}", "{\"a\":{}}"};
  size_t nd = sizeof diff / sizeof diff[0];
  uint8_t (*dg)[DV_MD5_LEN] = malloc(nd * DV_MD5_LEN);
  for (size_t i = 0; i < nd; i++) digest_of(PARSEZ(&a, diff[i]), dg[i]);
  for (size_t i = 0; i < nd; i++)
    for (size_t j = i + 1; j < nd; j++)
      ASSERTF(memcmp(dg[i], dg[j], DV_MD5_LEN) != 0, "%s and %s digest the same", diff[i], diff[j]);
  free(dg);
  /* a big object in random order and sorted digest the same (qsort path) */
  dv_buf t1 = DV_BUF_INIT, t2 = DV_BUF_INIT;
  int n = 300;
  int *perm = malloc((size_t)n * sizeof *perm);
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(rnd() % (uint64_t)(i + 1)), x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
  buf_putc(&t1, '{');
  buf_putc(&t2, '{');
  for (int i = 0; i < n; i++) {
    buf_printf(&t1, "%s\"k%05d\":[%d,{\"z\":%d,\"a\":%d}]", i ? "," : "", perm[i], perm[i], i, i);
    buf_printf(&t2, "%s\"k%05d\":[%d,{\"a\":%d,\"z\":%d}]", i ? "," : "", i, i, 0, 0);
  }
  buf_putc(&t1, '}');
  buf_putc(&t2, '}');
  /* t2's inner values differ from t1's on purpose; rebuild t1 sorted */
  json_val *v1 = parse(&a, (const char *)t1.p, t1.len);
  kvs s;
  kvs_init(&s, 0);
  ASSERT_OK(explode(v1, NULL, 0, NULL, &s, NULL));
  kvs_sort(&s);
  json_val *back;
  ASSERT_OK(implode(&a, &s, &back));
  uint8_t d1[DV_MD5_LEN], d2[DV_MD5_LEN], d3[DV_MD5_LEN];
  digest_of(v1, d1);
  digest_of(back, d2);
  digest_of(parse(&a, (const char *)t2.p, t2.len), d3);
  ASSERT_MEM_EQ(d1, DV_MD5_LEN, d2, DV_MD5_LEN);
  ASSERT(memcmp(d1, d3, DV_MD5_LEN) != 0);
  /* a fixed value: the encoding is part of the revision id, so it must not
   * drift between versions. {"b":[true,null],"a":"x"} is
   * O 02 01 "a" S 01 "x" 01 "b" A 02 t n */
  {
    dv_md5 m;
    uint8_t want[DV_MD5_LEN], got[DV_MD5_LEN];
    dv_md5_init(&m);
    dv_md5_update(&m, "O\x02\x01" "aS\x01x\x01" "bA\x02tn", 13);
    dv_md5_final(&m, want);
    digest_of(PARSEZ(&a, "{\"b\":[true,null],\"a\":\"x\"}"), got);
    ASSERT_MEM_EQ(got, DV_MD5_LEN, want, DV_MD5_LEN);
  }
  free(perm);
  kvs_free(&s);
  buf_free(&t1);
  buf_free(&t2);
  arena_free(&a);
}

TEST(body_json_size) {
  seed_rng("body_json_size");
  dv_arena a = DV_ARENA_INIT;
  dv_buf b = DV_BUF_INIT;
  /* strings of arbitrary bytes, as a hand-built DOM may hold: invalid
   * UTF-8 is written (and counted) as U+FFFD */
  for (int t = 0; t < 20000; t++) {
    uint8_t s[64];
    size_t n = rnd() % sizeof s;
    for (size_t i = 0; i < n; i++) {
      uint64_t r = rnd() % 6;
      s[i] = r == 0 ? (uint8_t)(rnd() % 0x20) : r == 1 ? (uint8_t)(0x80 + rnd() % 0x80)
           : r == 2 ? "\"\\/"[rnd() % 3] : (uint8_t)(0x20 + rnd() % 0x60);
    }
    json_val *o = json_new_object(&a);
    ASSERT_OK(json_obj_set(&a, o, (const char *)s, n / 2, json_new_string(&a, (const char *)s, n)));
    json_val *arr = json_new_array(&a);
    ASSERT_OK(json_arr_push(&a, arr, o));
    ASSERT_OK(json_arr_push(&a, arr, json_new_string(&a, (const char *)s + n / 3, n - n / 3)));
    ASSERT_OK(json_arr_push(&a, arr, json_new_double(&a, (double)rnd() / 7.0)));
    ASSERT_OK(json_arr_push(&a, arr, json_new_bool(&a, t & 1)));
    ASSERT_OK(json_arr_push(&a, arr, json_new_null(&a)));
    ASSERT_OK(json_arr_push(&a, arr, json_new_object(&a)));
    write_json(&b, arr);
    ASSERT_EQ(body_json_size(arr), b.len);
    arena_reset(&a);
  }
  ASSERT_EQ(body_json_size(NULL), 4);
  buf_free(&b);
  arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Throughput (printed, not asserted) and the fuzz target               */
/* ------------------------------------------------------------------ */

static int count_emit(void *arg, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
  *(size_t *)arg += kn + vn;
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

TEST(body_speed) {
  rng = 42;
  dv_arena a = DV_ARENA_INIT;
  dv_buf text = DV_BUF_INIT;
  /* a typical document: a few hundred fields, nested records, short
   * strings, numbers */
  buf_putc(&text, '{');
  for (int i = 0; i < 400; i++) {
    if (i) buf_putc(&text, ',');
    buf_printf(&text, "\"field_%d\":", i);
    switch (i % 5) {
      case 0: buf_printf(&text, "\"value number %d, some text\"", i); break;
      case 1: buf_printf(&text, "%d", i * 37); break;
      case 2: buf_printf(&text, "%d.%d", i, i % 7 + 1); break;
      case 3: buf_printf(&text, "{\"name\":\"n%d\",\"tags\":[\"a\",\"b\",\"c\"],\"ok\":true}", i); break;
      default: buf_printf(&text, "[%d,%d,%d,null,false]", i, i + 1, i + 2); break;
    }
  }
  buf_putc(&text, '}');
  json_val *v = parse(&a, (const char *)text.p, text.len);
  kvs s;
  kvs_init(&s, 0);
  ASSERT_OK(explode(v, NULL, 0, NULL, &s, NULL));
  kvs_sort(&s);
  const uint8_t prefix[] = {0x15, 0x01, 0x15, 0x05, 0x02, 'd', 0x00, 0x02, 'd', 'o', 'c', 0x00, 0x27, 0x15, 0x03};
  int iters = 0;
  size_t kvbytes = 0;
  double t0 = now_s(), t;
  do {
    ASSERT_OK(body_explode(v, prefix, sizeof prefix, NULL, count_emit, &kvbytes, NULL));
    iters++;
  } while ((t = now_s() - t0) < 0.5);
  double ex = (double)text.len * iters / t / 1e6, exkv = (double)kvbytes / t / 1e6;
  dv_arena b = DV_ARENA_INIT;
  iters = 0;
  t0 = now_s();
  do {
    json_val *back;
    ASSERT_OK(implode(&b, &s, &back));
    arena_reset(&b);
    iters++;
  } while ((t = now_s() - t0) < 0.5);
  double im = (double)text.len * iters / t / 1e6;
  iters = 0;
  t0 = now_s();
  do {
    uint8_t d[DV_MD5_LEN];
    digest_of(v, d);
    iters++;
  } while ((t = now_s() - t0) < 0.3);
  double dg = (double)text.len * iters / t / 1e6;
  printf("document of %zu JSON bytes, %zu KVs\n", text.len, s.n);
  printf("explode %.1f MB/s of JSON (%.1f MB/s of KV bytes), implode %.1f MB/s, digest %.1f MB/s\n",
         ex, exkv, im, dg);
  /* long strings */
  char *ls = long_str(1000000, 1);
  json_val *o = json_new_object(&a);
  ASSERT_OK(json_obj_setz(&a, o, "s", json_new_string(&a, ls, 1000000)));
  kvs l;
  kvs_init(&l, 0);
  ASSERT_OK(explode(o, NULL, 0, NULL, &l, NULL));
  iters = 0;
  t0 = now_s();
  do {
    size_t n = 0;
    ASSERT_OK(body_explode(o, NULL, 0, NULL, count_emit, &n, NULL));
    json_val *back;
    ASSERT_OK(implode(&b, &l, &back));
    arena_reset(&b);
    iters++;
  } while ((t = now_s() - t0) < 0.3);
  printf("a 1 MB string: explode + implode %.1f MB/s\n", 1.0 * iters / t);
  free(ls);
  kvs_free(&l);
  kvs_free(&s);
  buf_free(&text);
  arena_free(&b);
  arena_free(&a);
}

TEST(body_fuzz_smoke) { test_fuzz_smoke("fuzz_body"); }
