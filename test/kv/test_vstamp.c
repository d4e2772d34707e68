/* test_vstamp.c — versionstamps on every backend.
 *
 * Stamps strictly increase in commit order across concurrent committers:
 * a chain of read-modify-write transactions (whose commit order is forced
 * by their conflicts) must get increasing stamps, blind writers beside
 * them must get distinct ones, every stamp's first 8 bytes must be its
 * commit version, and the versionstamped keys and values stored at commit
 * must hold exactly the stamp kv_get_versionstamp reports, at the
 * placeholder offset, with the 4-byte suffix removed. Commits that share
 * a group-commit batch share the version and differ in the 2-byte order.
 */
#include <stdatomic.h>

#include "kvt.h"

/* Append FDB's versionstamp suffix: the 4-byte little-endian offset. */
static size_t with_offset(uint8_t *buf, size_t len, uint32_t off) {
  buf[len] = (uint8_t)off;
  buf[len + 1] = (uint8_t)(off >> 8);
  buf[len + 2] = (uint8_t)(off >> 16);
  buf[len + 3] = (uint8_t)(off >> 24);
  return len + 4;
}

KV_CONTRACT(vstamp_format) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  /* Key: "vs/k/" + placeholder + "/tail"; value "pre" + placeholder +
   * "post"; a second stamped key with the placeholder at offset 0 of a
   * key in another prefix is impossible to keep in a subspace, so put one
   * at the very end instead. */
  uint8_t k1[64], v1[64], k2[64];
  size_t k1l = 0, v1l = 0, k2l = 0;
  memcpy(k1, "vs/k/", 5);
  memset(k1 + 5, 0xaa, KV_STAMP_LEN);
  memcpy(k1 + 15, "/tail", 5);
  k1l = with_offset(k1, 20, 5);
  memcpy(v1, "pre", 3);
  memset(v1 + 3, 0xbb, KV_STAMP_LEN);
  memcpy(v1 + 13, "post", 4);
  v1l = with_offset(v1, 17, 3);
  memcpy(k2, "vs/e/", 5);
  memset(k2 + 5, 0, KV_STAMP_LEN);
  k2l = with_offset(k2, 15, 5);
  ASSERT_OK(kv_set_versionstamped_key(t, k1, k1l, "kval", 4));
  ASSERT_OK(kv_set_versionstamped_value(t, "vs/v", 4, v1, v1l));
  ASSERT_OK(kv_set_versionstamped_key(t, k2, k2l, "end", 3));
  uint8_t v0[14] = {0};
  ASSERT_OK(kv_set_versionstamped_value(t, "vs/v0", 5, v0, with_offset(v0, 10, 0)));
  ASSERT_OK(kv_set(t, "vs/plain", 8, "p", 1));
  ASSERT_OK(kv_commit(t));
  uint8_t stamp[KV_STAMP_LEN];
  int64_t cv;
  ASSERT_OK(kv_get_versionstamp(t, stamp));
  ASSERT_OK(kv_get_committed_version(t, &cv));
  ASSERT_EQ(kvt_stamp_version(stamp), cv);
  kv_txn_reset(t);

  uint8_t want[64];
  memcpy(want, "vs/k/", 5);
  memcpy(want + 5, stamp, KV_STAMP_LEN);
  memcpy(want + 15, "/tail", 5);
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_get_range(t, "vs/k/", 5, "vs/k0", 5, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 1);
  ASSERT_MEM_EQ(p[0].key, p[0].key_len, want, 20);
  ASSERT_MEM_EQ(p[0].val, p[0].val_len, "kval", 4);
  ASSERT_OK(kv_get_range(t, "vs/e/", 5, "vs/e0", 5, 0, 0, &p, &n, &more));
  ASSERT_EQ(n, 1);
  memcpy(want, "vs/e/", 5);
  memcpy(want + 5, stamp, KV_STAMP_LEN);
  ASSERT_MEM_EQ(p[0].key, p[0].key_len, want, 15);
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_get(t, "vs/v", 4, 0, &v, &vl, &found));
  ASSERT(found);
  memcpy(want, "pre", 3);
  memcpy(want + 3, stamp, KV_STAMP_LEN);
  memcpy(want + 13, "post", 4);
  ASSERT_MEM_EQ(v, vl, want, 17);
  ASSERT_OK(kv_get(t, "vs/v0", 5, 0, &v, &vl, &found));
  ASSERT(found);
  ASSERT_MEM_EQ(v, vl, stamp, KV_STAMP_LEN);
  kv_txn_destroy(t);
  kv_close(db);
}

/* ---- concurrent committers ------------------------------------------------ */

#define VS_CHAIN_THREADS 4
#define VS_BLIND_THREADS 4
#define VS_MS 1500
#define VS_MAX 200000

typedef struct vs_rec {
  uint8_t stamp[KV_STAMP_LEN]; /* reported stamp */
  int64_t version;             /* reported commit version */
  int64_t chain;               /* chain position (chain commits), else -1 */
  int tid;                     /* committing thread */
  int seq;                     /* its commit number */
} vs_rec;

typedef struct vs_shared {
  kv_db *db;            /* store */
  atomic_int stop;      /* time is up */
  vs_rec *recs;         /* all commits */
  atomic_int nrecs;     /* used entries */
} vs_shared;

typedef struct vs_thread {
  vs_shared *sh; /* shared state */
  int tid;       /* index; chain threads first */
} vs_thread;

static void *vs_worker(void *arg) {
  vs_thread *th = arg;
  vs_shared *sh = th->sh;
  int chain = th->tid < VS_CHAIN_THREADS;
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(sh->db, &t));
  uint8_t prev[KV_STAMP_LEN] = {0};
  for (int seq = 0; !atomic_load(&sh->stop); seq++) {
    int64_t pos = -1;
    for (;;) {
      int rc = 0;
      uint8_t k[64];
      size_t kl;
      if (chain) {
        rc = kvt_get_i64(t, "vc/chain", 0, 0, &pos);
        if (!rc) rc = kvt_set_i64(t, "vc/chain", ++pos);
        memcpy(k, "vc/log/", 7);
        memset(k + 7, 0, KV_STAMP_LEN);
        kl = with_offset(k, 17, 7);
      } else {
        kl = (size_t)sprintf((char *)k, "vc/b/%d/", th->tid);
        memset(k + kl, 0, KV_STAMP_LEN);
        kl = with_offset(k, kl + KV_STAMP_LEN, (uint32_t)kl);
      }
      uint8_t val[16];
      kvt_be64(val, th->tid);
      kvt_be64(val + 8, chain ? pos : seq);
      if (!rc) rc = kv_set_versionstamped_key(t, k, kl, val, 16);
      if (!rc) rc = kv_commit(t);
      if (!rc) break;
      rc = kv_on_error(t, rc);
      ASSERTF(rc == 0, "thread %d: %s", th->tid, dv_err_name(rc));
    }
    int i = atomic_fetch_add(&sh->nrecs, 1);
    ASSERT(i < VS_MAX);
    vs_rec *r = &sh->recs[i];
    ASSERT_OK(kv_get_versionstamp(t, r->stamp));
    ASSERT_OK(kv_get_committed_version(t, &r->version));
    r->chain = pos;
    r->tid = th->tid;
    r->seq = seq;
    /* Real-time order: a commit acknowledged before this one started has
     * a smaller stamp. */
    ASSERTF(memcmp(prev, r->stamp, KV_STAMP_LEN) < 0, "thread %d: stamp went back", th->tid);
    memcpy(prev, r->stamp, KV_STAMP_LEN);
    kv_txn_reset(t);
  }
  kv_txn_destroy(t);
  return NULL;
}

static int rec_by_stamp(const void *a, const void *b) {
  return memcmp(((const vs_rec *)a)->stamp, ((const vs_rec *)b)->stamp, KV_STAMP_LEN);
}

KV_CONTRACT(vstamp_order) {
  kv_db *db = kvt_open(be);
  vs_shared sh;
  memset(&sh, 0, sizeof sh);
  sh.db = db;
  sh.recs = calloc(VS_MAX, sizeof *sh.recs);
  pthread_t th[VS_CHAIN_THREADS + VS_BLIND_THREADS];
  vs_thread args[VS_CHAIN_THREADS + VS_BLIND_THREADS];
  for (int i = 0; i < VS_CHAIN_THREADS + VS_BLIND_THREADS; i++) {
    args[i].sh = &sh;
    args[i].tid = i;
    ASSERT_OK(pthread_create(&th[i], NULL, vs_worker, &args[i]));
  }
  kvt_sleep_ms(VS_MS);
  atomic_store(&sh.stop, 1);
  for (int i = 0; i < VS_CHAIN_THREADS + VS_BLIND_THREADS; i++) pthread_join(th[i], NULL);
  int n = atomic_load(&sh.nrecs);
  ASSERT(n > 50);

  /* Sorted by stamp: all distinct; version = first 8 bytes; the chain
   * positions appear in increasing order (commit order = stamp order). */
  qsort(sh.recs, (size_t)n, sizeof *sh.recs, rec_by_stamp);
  int64_t last_chain = 0;
  int chains = 0, shared_versions = 0;
  for (int i = 0; i < n; i++) {
    vs_rec *r = &sh.recs[i];
    ASSERT_EQ(kvt_stamp_version(r->stamp), r->version);
    if (i) {
      ASSERTF(memcmp(sh.recs[i - 1].stamp, r->stamp, KV_STAMP_LEN) < 0, "stamp %s repeated",
              test_hex(r->stamp, KV_STAMP_LEN));
      if (sh.recs[i - 1].version == r->version) shared_versions++;
    }
    if (r->chain >= 0) {
      ASSERTF(r->chain == last_chain + 1, "chain position %lld follows %lld in stamp order",
              (long long)r->chain, (long long)last_chain);
      last_chain = r->chain;
      chains++;
    }
  }
  printf("%s: %d commits (%d chained), %d shared a version with the previous stamp\n", be->name, n,
         chains, shared_versions);

  /* The stored stamped keys are exactly the reported stamps. */
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  kv_iter *it;
  kv_pair p;
  ASSERT_OK(kv_iter_begin(t, "vc/log/", 7, "vc/log0", 7, 0, 0, &it));
  for (int i = 0; i < n; i++) {
    vs_rec *r = &sh.recs[i];
    if (r->chain < 0) continue;
    ASSERT_EQ(kv_iter_next(it, &p), 1);
    ASSERT_EQ(p.key_len, 17);
    ASSERT_MEM_EQ(p.key + 7, KV_STAMP_LEN, r->stamp, KV_STAMP_LEN);
    ASSERT_EQ(kvt_from_be64(p.val + 8), r->chain);
  }
  ASSERT_EQ(kv_iter_next(it, &p), 0);
  kv_iter_free(it);
  for (int i = 0; i < n; i++) {
    vs_rec *r = &sh.recs[i];
    if (r->chain >= 0) continue;
    uint8_t k[64];
    size_t kl = (size_t)sprintf((char *)k, "vc/b/%d/", r->tid);
    memcpy(k + kl, r->stamp, KV_STAMP_LEN);
    const uint8_t *v;
    size_t vl;
    int found;
    ASSERT_OK(kv_get(t, k, kl + KV_STAMP_LEN, 0, &v, &vl, &found));
    ASSERTF(found, "blind stamped key of thread %d seq %d missing", r->tid, r->seq);
    ASSERT_EQ(vl, 16);
    ASSERT_EQ(kvt_from_be64(v + 8), r->seq);
  }
  int count, more;
  kv_pair *pairs;
  ASSERT_OK(kv_get_range(t, "vc/b/", 5, "vc/b0", 5, 0, 0, &pairs, &count, &more));
  ASSERT_EQ(count, n - chains);
  kv_txn_destroy(t);
  free(sh.recs);
  kv_close(db);
}

static int stamp_cmp(const void *a, const void *b) { return memcmp(a, b, KV_STAMP_LEN); }

/* Many commits started back to back from one thread land in few batches:
 * those sharing a version have distinct orders. */
KV_CONTRACT(vstamp_batch) {
  kv_db *db = kvt_open(be);
  enum { N = 64 };
  kv_txn *t[N];
  kvt_waiter w[N];
  int shared = 0;
  for (int round = 0; round < 5 && !shared; round++) {
    for (int i = 0; i < N; i++) {
      char k[32];
      ASSERT_OK(kv_txn_begin(db, &t[i]));
      sprintf(k, "vb/%d/%d", round, i);
      ASSERT_OK(kv_set(t[i], k, strlen(k), "x", 1));
    }
    for (int i = 0; i < N; i++) kvt_commit_start(t[i], &w[i]);
    uint8_t s[N][KV_STAMP_LEN];
    for (int i = 0; i < N; i++) {
      ASSERT_OK(kvt_commit_wait(&w[i]));
      ASSERT_OK(kv_get_versionstamp(t[i], s[i]));
    }
    qsort(s, N, KV_STAMP_LEN, stamp_cmp);
    for (int i = 1; i < N; i++) {
      ASSERTF(memcmp(s[i - 1], s[i], KV_STAMP_LEN) < 0, "stamp %s given twice",
              test_hex(s[i], KV_STAMP_LEN));
      if (kvt_stamp_version(s[i - 1]) == kvt_stamp_version(s[i])) shared++;
    }
    for (int i = 0; i < N; i++) kv_txn_destroy(t[i]);
  }
  ASSERTF(shared > 0, "no two of %d back-to-back commits shared a batch", N);
  kv_close(db);
}
