/* test_range.c — range reads on every backend: kv_get_range and iterators.
 *
 * kv_get_range's limit, reverse and more flag; borrowed memory that stays
 * valid until the transaction is reset, whatever else the transaction
 * does meanwhile; iterators that stream 100,000 keys in both directions,
 * alone and merged with the transaction's own sets, clears and
 * clear_ranges. The conflict ranges range reads leave are tested in
 * test_conflict.c, read-your-writes on small ranges in test_ryw.c.
 */
#include "kvt.h"

static void key_of(char *out, int i) { sprintf(out, "g/%03d", i); }

KV_CONTRACT(get_range) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  for (int i = 0; i < 100; i++) {
    char k[16], v[16];
    key_of(k, i);
    sprintf(v, "v%d", i);
    ASSERT_OK(kv_set(t, k, strlen(k), v, strlen(v)));
  }
  ASSERT_OK(kv_commit(t));
  kv_txn_reset(t);

  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_get_range(t, "g/", 2, "g0", 2, 10, 0, &p, &n, &more));
  ASSERT_EQ(n, 10);
  ASSERT_EQ(more, 1);
  for (int i = 0; i < 10; i++) {
    char k[16];
    key_of(k, i);
    ASSERT_MEM_EQ(p[i].key, p[i].key_len, k, strlen(k));
  }
  ASSERT_OK(kv_get_range(t, "g/", 2, "g0", 2, 10, KV_REVERSE, &p, &n, &more));
  ASSERT_EQ(n, 10);
  ASSERT_EQ(more, 1);
  for (int i = 0; i < 10; i++) {
    char k[16];
    key_of(k, 99 - i);
    ASSERT_MEM_EQ(p[i].key, p[i].key_len, k, strlen(k));
  }
  ASSERT_OK(kv_get_range(t, "g/", 2, "g0", 2, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 100);
  ASSERT_EQ(more, 0);
  ASSERT_OK(kv_get_range(t, "g/", 2, "g0", 2, 1000, KV_REVERSE, &p, &n, &more));
  ASSERT_EQ(n, 100);
  ASSERT_EQ(more, 0);
  ASSERT_OK(kv_get_range(t, "g/010", 5, "g/020", 5, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 10);
  ASSERT_MEM_EQ(p[0].key, p[0].key_len, "g/010", 5);
  ASSERT_MEM_EQ(p[9].key, p[9].key_len, "g/019", 5);
  ASSERT_OK(kv_get_range(t, "g/010", 5, "g/020", 5, 3, KV_REVERSE, &p, &n, &more));
  ASSERT_EQ(n, 3);
  ASSERT_MEM_EQ(p[0].key, p[0].key_len, "g/019", 5);
  /* A range between keys, and a range past everything. */
  ASSERT_OK(kv_get_range(t, "g/0105", 6, "g/011", 5, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 0);
  ASSERT_OK(kv_get_range(t, "h", 1, "i", 1, 5, KV_REVERSE, &p, &n, &more));
  ASSERT_EQ(n, 0);
  ASSERT_EQ(more, 0);
  /* A limit bigger than what is left after own clears. */
  ASSERT_OK(kv_clear_range(t, "g/005", 5, "g/095", 5));
  ASSERT_OK(kv_get_range(t, "g/", 2, "g0", 2, 20, 0, &p, &n, &more));
  ASSERT_EQ(n, 10);
  ASSERT_EQ(more, 0);
  ASSERT_MEM_EQ(p[5].key, p[5].key_len, "g/095", 5);
  kv_txn_reset(t);

  /* Borrowed memory: results of earlier reads stay intact until reset,
   * through later reads, writes to the same keys, and more range reads. */
  kv_pair *first;
  int nfirst;
  ASSERT_OK(kv_get_range(t, "g/", 2, "g0", 2, 50, 0, &first, &nfirst, &more));
  const uint8_t *pv;
  size_t pvl;
  int found;
  ASSERT_OK(kv_get(t, "g/042", 5, 0, &pv, &pvl, &found));
  ASSERT(found);
  for (int i = 0; i < 100; i++) {
    char k[16];
    key_of(k, i);
    ASSERT_OK(kv_set(t, k, strlen(k), "overwritten-with-a-longer-value", 31));
  }
  ASSERT_OK(kv_clear_range(t, "g/", 2, "g/050", 5));
  for (int r = 0; r < 20; r++) {
    ASSERT_OK(kv_get_range(t, "g/", 2, "g0", 2, 0, r % 2 ? KV_REVERSE : 0, &p, &n, &more));
    ASSERT_EQ(n, 50);
    const uint8_t *v2;
    size_t vl2;
    ASSERT_OK(kv_get(t, "g/042", 5, 0, &v2, &vl2, &found));
    ASSERT(!found);
  }
  ASSERT_MEM_EQ(pv, pvl, "v42", 3);
  ASSERT_EQ(nfirst, 50);
  for (int i = 0; i < 50; i++) {
    char k[16], v[16];
    key_of(k, i);
    sprintf(v, "v%d", i);
    ASSERT_MEM_EQ(first[i].key, first[i].key_len, k, strlen(k));
    ASSERT_MEM_EQ(first[i].val, first[i].val_len, v, strlen(v));
  }
  kv_txn_destroy(t);
  kv_close(db);
}

/* ---- iterators over 100,000 keys ---------------------------------------- */

#define BIG_N 100000

static int big_key(char *out, int i) { return sprintf(out, "it/%06d", i); }
static int big_val(char *out, int i) { return sprintf(out, "value-%06d-%s", i, "padding-padding-padding"); }

/* The expected view after the overlay writes below: key i is
 *   cleared           if i % 1000 == 7 or 50000 <= i < 51000
 *   "new"             if i % 1000 == 500 (and not cleared)
 *   original          otherwise,
 * and an extra key it/%06d\x01 = "extra" exists for i % 10000 == 3
 * (except 50003's, inside the cleared block). */
static int overlay_cleared(int i) { return i % 1000 == 7 || (i >= 50000 && i < 51000); }

typedef struct exp_pair {
  char k[32];   /* expected key */
  size_t kl;
  char v[64];   /* expected value */
  size_t vl;
} exp_pair;

static int expected_at(int slot, int overlay, exp_pair *e) {
  /* slot 2*i is key i, slot 2*i+1 its extra key */
  int i = slot / 2;
  if (slot % 2) {
    if (!overlay || i % 10000 != 3 || overlay_cleared(i)) return 0;
    e->kl = (size_t)big_key(e->k, i);
    e->k[e->kl++] = 1;
    e->vl = (size_t)sprintf(e->v, "extra");
    return 1;
  }
  if (overlay && overlay_cleared(i)) return 0;
  e->kl = (size_t)big_key(e->k, i);
  if (overlay && i % 1000 == 500) e->vl = (size_t)sprintf(e->v, "new");
  else e->vl = (size_t)big_val(e->v, i);
  return 1;
}

static void scan_compare(kv_txn *t, int overlay, int reverse, int flags) {
  kv_iter *it;
  ASSERT_OK(kv_iter_begin(t, "it/", 3, "it0", 3, 0, flags | (reverse ? KV_REVERSE : 0), &it));
  int slot = reverse ? 2 * BIG_N - 1 : 0, seen = 0;
  kv_pair p;
  int rc;
  while ((rc = kv_iter_next(it, &p)) == 1) {
    exp_pair e;
    while (slot >= 0 && slot < 2 * BIG_N && !expected_at(slot, overlay, &e)) slot += reverse ? -1 : 1;
    ASSERTF(slot >= 0 && slot < 2 * BIG_N, "extra pair %s after the end", test_hex(p.key, p.key_len));
    ASSERTF(p.key_len == e.kl && !memcmp(p.key, e.k, e.kl), "pair %d: key %s, want %s (overlay %d rev %d)",
            seen, test_hex(p.key, p.key_len), e.k, overlay, reverse);
    ASSERTF(p.val_len == e.vl && !memcmp(p.val, e.v, e.vl), "pair %d (%s): value %.*s, want %s", seen, e.k,
            (int)p.val_len, p.val, e.v);
    slot += reverse ? -1 : 1;
    seen++;
  }
  ASSERT_EQ(rc, 0);
  exp_pair e;
  while (slot >= 0 && slot < 2 * BIG_N) {
    ASSERTF(!expected_at(slot, overlay, &e), "missing %s at the end (overlay %d rev %d)", e.k, overlay, reverse);
    slot += reverse ? -1 : 1;
  }
  ASSERT_EQ(kv_iter_next(it, &p), 0); /* stays at the end */
  kv_iter_free(it);
  /* the 7s, the 50000 block (one 7 inside it), 9 extras */
  int want = overlay ? BIG_N - 100 - 1000 + 1 + 9 : BIG_N;
  ASSERT_EQ(seen, want);
}

KV_CONTRACT(iter_stream) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  for (int i = 0; i < BIG_N; i++) {
    char k[32], v[64];
    int kl = big_key(k, i), vl = big_val(v, i);
    ASSERT_OK(kv_set(t, k, (size_t)kl, v, (size_t)vl));
    if (i % 5000 == 4999) {
      ASSERT_OK(kv_commit(t));
      kv_txn_reset(t);
    }
  }
  int64_t t0 = kvt_now_ms();
  scan_compare(t, 0, 0, 0);
  scan_compare(t, 0, 1, KV_SNAPSHOT);
  int64_t t1 = kvt_now_ms();
  /* Own writes merged into the stream. */
  for (int i = 0; i < BIG_N; i++) {
    char k[32];
    int kl = big_key(k, i);
    if (i % 1000 == 500) ASSERT_OK(kv_set(t, k, (size_t)kl, "new", 3));
    if (i % 1000 == 7) ASSERT_OK(kv_clear(t, k, (size_t)kl));
    if (i % 10000 == 3) {
      k[kl] = 1;
      ASSERT_OK(kv_set(t, k, (size_t)kl + 1, "extra", 5));
    }
  }
  ASSERT_OK(kv_clear_range(t, "it/050000", 9, "it/051000", 9));
  scan_compare(t, 1, 0, 0);
  scan_compare(t, 1, 1, 0);
  /* Committed, the store alone gives the same stream. */
  ASSERT_OK(kv_commit(t));
  kv_txn_reset(t);
  scan_compare(t, 1, 0, KV_SNAPSHOT);
  scan_compare(t, 1, 1, 0);
  printf("%s: two scans of %d keys in %lld ms\n", be->name, BIG_N, (long long)(t1 - t0));
  /* A limit and an early stop in the middle of the stream. */
  kv_iter *it;
  kv_pair p;
  ASSERT_OK(kv_iter_begin(t, "it/049990", 9, "it0", 3, 25, 0, &it));
  int n = 0, rc;
  char last[32] = "";
  while ((rc = kv_iter_next(it, &p)) == 1) {
    n++;
    ASSERT(p.key_len < sizeof last);
    memcpy(last, p.key, p.key_len);
    last[p.key_len] = 0;
  }
  ASSERT_EQ(rc, 0);
  ASSERT_EQ(n, 25);
  /* 49990..49999 (10), 51000..51006 (7), 51008..51015 (8) */
  ASSERT_STR_EQ(last, "it/051015");
  kv_iter_free(it);
  kv_txn_destroy(t);
  kv_close(db);
}

/* KV_BULK and kv_bulk_written are hints: 40 MB of 100 KB values written
 * with the hint after each 4 MB commit (the embedded engine flushes its
 * memtable every 16 MB of them) read back the same with and without
 * KV_BULK, forward and reverse, in the same and in a new transaction. */
KV_CONTRACT(bulk_hints) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  static uint8_t v[100000];
  for (int c = 0; c < 10; c++) {
    for (int i = 0; i < 40; i++) {
      char k[16];
      sprintf(k, "b/%04d", c * 40 + i);
      memset(v, 'a' + (c * 40 + i) % 26, sizeof v);
      ASSERT_OK(kv_set(t, k, strlen(k), v, sizeof v));
    }
    ASSERT_OK(kv_commit(t));
    kv_txn_reset(t);
    kv_bulk_written(db, 40 * sizeof v);
  }
  for (int round = 0; round < 2; round++) {
    for (int flags = 0; flags < 4; flags++) {
      int f = (flags & 1 ? KV_BULK : 0) | (flags & 2 ? KV_REVERSE : 0);
      kv_iter *it;
      ASSERT_OK(kv_iter_begin(t, "b/", 2, "b0", 2, 0, f | KV_SNAPSHOT, &it));
      kv_pair p;
      int n = 0, k;
      while ((k = kv_iter_next(it, &p)) == 1) {
        int i = f & KV_REVERSE ? 399 - n : n;
        char want[16];
        sprintf(want, "b/%04d", i);
        ASSERT_MEM_EQ(p.key, p.key_len, want, strlen(want));
        ASSERT_EQ(p.val_len, sizeof v);
        ASSERT(p.val[0] == 'a' + i % 26 && p.val[sizeof v - 1] == 'a' + i % 26);
        n++;
      }
      ASSERT_EQ(k, 0);
      ASSERT_EQ(n, 400);
      kv_iter_free(it);
    }
    kv_txn_reset(t);
  }
  kv_txn_destroy(t);
  kv_close(db);
}
