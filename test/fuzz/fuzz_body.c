/* fuzz_body.c — libFuzzer target for the document body codec
 * (src/store/body.c).
 *
 * The first byte picks what the rest is:
 *  - even: a JSON text. When it parses to an object, it is exploded (under
 *    a key limit the first byte also picks, so DV_EPATH_TOO_LONG paths are
 *    reached), the KVs are checked (prefix, tuple-valid keys and values,
 *    KV size limits, no duplicate key), sorted as a range read returns
 *    them and imploded; the result must digest as the original, have the
 *    same JSON size, and explode to exactly the same KVs again. Any value
 *    parsed gets body_json_size checked against json_write.
 *  - odd: a KV stream fed to the implode side as is, each record
 *    [key length: 1 byte][key][value length: 1 byte][value]. Implode must
 *    answer 0 or DV_ECORRUPT; when it accepts, exploding what it built
 *    must give back exactly the stream — the encoding is unique, so the
 *    strict decoder accepts nothing explode would not write.
 * Any failed check aborts, which libFuzzer reports as a crash.
 *
 * Build: make fuzzers. Seeds: test/fuzz/seeds/fuzz_body.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kv/kv.h"
#include "store/body.h"
#include "tuple/tuple.h"

#define CHECK(c)                                                                 \
  do {                                                                           \
    if (!(c)) {                                                                  \
      fprintf(stderr, "fuzz_body: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                   \
    }                                                                            \
  } while (0)

typedef struct kv {
  uint8_t *k, *v; /* copies */
  size_t kn, vn;  /* lengths */
} kv;

typedef struct kvs {
  kv *a;       /* the KVs */
  size_t n;    /* in use */
  size_t cap;  /* allocated */
  size_t skip; /* prefix bytes to drop from keys */
} kvs;

static int collect(void *arg, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
  kvs *s = arg;
  CHECK(kn >= s->skip && kn <= KV_MAX_KEY && vn <= KV_MAX_VALUE);
  CHECK(tup_validate(k, kn) == 0 && tup_validate(v, vn) == 0);
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->a = realloc(s->a, s->cap * sizeof *s->a);
    CHECK(s->a);
  }
  kv *e = &s->a[s->n++];
  e->kn = kn - s->skip;
  e->vn = vn;
  e->k = malloc(e->kn + 1);
  e->v = malloc(vn + 1);
  CHECK(e->k && e->v);
  memcpy(e->k, k + s->skip, e->kn);
  memcpy(e->v, v, vn);
  return 0;
}

static int kv_cmp(const void *x, const void *y) {
  const kv *a = x, *b = y;
  size_t n = a->kn < b->kn ? a->kn : b->kn;
  int c = memcmp(a->k, b->k, n);
  return c ? c : (a->kn > b->kn) - (a->kn < b->kn);
}

static void kvs_free(kvs *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->a[i].k);
    free(s->a[i].v);
  }
  free(s->a);
  memset(s, 0, sizeof *s);
}

static void digest(const json_val *v, uint8_t out[DV_MD5_LEN]) {
  dv_md5 m;
  dv_md5_init(&m);
  body_digest(v, &m);
  dv_md5_final(&m, out);
}

static void check_size(const json_val *v) {
  dv_buf b = DV_BUF_INIT;
  CHECK(json_write(&b, v) == 0);
  CHECK(body_json_size(v) == b.len);
  buf_free(&b);
}

/* Explode v with an empty prefix into s, sorted. */
static int explode_sorted(const json_val *v, size_t max_key, kvs *s) {
  body_limits lim = {max_key, 0};
  size_t total = 0;
  int rc = body_explode(v, NULL, 0, &lim, collect, s, &total);
  if (rc == 0) {
    size_t sum = 0;
    for (size_t i = 0; i < s->n; i++) sum += s->a[i].kn + s->a[i].vn;
    CHECK(sum == total);
    if (s->n) qsort(s->a, s->n, sizeof *s->a, kv_cmp);
    for (size_t i = 1; i < s->n; i++) CHECK(kv_cmp(&s->a[i - 1], &s->a[i]) < 0);
  }
  return rc;
}

static int same(const kvs *x, const kvs *y) {
  if (x->n != y->n) return 0;
  for (size_t i = 0; i < x->n; i++)
    if (kv_cmp(&x->a[i], &y->a[i]) || x->a[i].vn != y->a[i].vn ||
        memcmp(x->a[i].v, y->a[i].v, x->a[i].vn))
      return 0;
  return 1;
}

static void json_mode(const uint8_t *data, size_t size, size_t max_key) {
  dv_arena a = DV_ARENA_INIT;
  json_val *v;
  json_opts o = {JSON_DEPTH_LIMIT, 0, 0};
  if (json_parse(&a, data, size, &o, &v, NULL) != 0) goto out;
  check_size(v);
  uint8_t d1[DV_MD5_LEN], d2[DV_MD5_LEN];
  digest(v, d1);
  kvs s = {0}, s2 = {0};
  /* a prefix, as the store has one: keys arrive with it and lose it */
  static const uint8_t prefix[] = {0x02, 'p', 0x00, 0x15, 0x07};
  body_limits lim = {max_key, 0};
  s.skip = sizeof prefix;
  int rc = body_explode(v, prefix, sizeof prefix, &lim, collect, &s, NULL);
  if (v->type != JSON_OBJECT) {
    CHECK(rc == DV_ENOT_OBJECT);
    goto out;
  }
  if (rc) {
    CHECK(rc == DV_EPATH_TOO_LONG);
    kvs_free(&s);
    goto out;
  }
  if (s.n) qsort(s.a, s.n, sizeof *s.a, kv_cmp);
  body_builder b;
  body_implode_begin(&b, &a);
  for (size_t i = 0; i < s.n; i++)
    CHECK(body_implode_add(&b, s.a[i].k, s.a[i].kn, s.a[i].v, s.a[i].vn) == 0);
  json_val *back;
  CHECK(body_implode_end(&b, &back) == 0);
  body_implode_free(&b);
  check_size(back);
  digest(back, d2);
  CHECK(memcmp(d1, d2, DV_MD5_LEN) == 0);
  CHECK(explode_sorted(back, max_key - sizeof prefix, &s2) == 0);
  CHECK(same(&s, &s2));
  kvs_free(&s);
  kvs_free(&s2);
out:
  arena_free(&a);
}

static void kv_mode(const uint8_t *data, size_t size) {
  dv_arena a = DV_ARENA_INIT;
  kvs in = {0}, again = {0};
  body_builder b;
  body_implode_begin(&b, &a);
  int rc = 0, valid = 1;
  size_t i = 0;
  while (i < size && rc == 0) {
    size_t kn = data[i++];
    if (kn > size - i) break;
    const uint8_t *k = data + i;
    i += kn;
    if (i >= size) break;
    size_t vn = data[i++];
    if (vn > size - i) break;
    const uint8_t *v = data + i;
    i += vn;
    if (tup_validate(k, kn) || tup_validate(v, vn)) valid = 0;
    else CHECK(collect(&in, k, kn, v, vn) == 0);
    rc = body_implode_add(&b, k, kn, v, vn);
  }
  json_val *v = NULL;
  if (rc == 0) rc = body_implode_end(&b, &v);
  body_implode_free(&b);
  body_implode_free(&b); /* twice is fine */
  CHECK(rc == 0 || rc == DV_ECORRUPT);
  if (rc == 0) {
    CHECK(valid); /* implode decodes every byte it accepts */
    check_size(v);
    uint8_t d[DV_MD5_LEN];
    digest(v, d);
    CHECK(explode_sorted(v, KV_MAX_KEY, &again) == 0);
    CHECK(same(&in, &again));
  }
  kvs_free(&in);
  kvs_free(&again);
  arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1) {
    kv_mode(data + 1, size - 1);
  } else {
    /* key limits from tiny to the KV maximum */
    static const size_t limits[8] = {KV_MAX_KEY, KV_MAX_KEY, KV_MAX_KEY, KV_MAX_KEY, 8, 12, 20, 64};
    json_mode(data + 1, size - 1, limits[(data[0] >> 1) & 7]);
  }
  return 0;
}
