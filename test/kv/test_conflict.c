/* test_conflict.c — the isolation half of the KV contract, on every backend.
 *
 * What kv.h promises about concurrent transactions: strict
 * serializability under many committers (a bank-transfer workload whose
 * total never changes and whose per-transfer records explain every
 * balance), not_committed for a read-modify-write that lost a race (also
 * inside one group-commit batch), no conflict for blind writes, no write
 * skew, phantom protection for range reads (limited, reverse and
 * early-closed reads conflict only up to the last key returned), snapshot
 * reads and explicit conflict ranges, consistent snapshots for long reads
 * under concurrent commits, and a model of FDB's conflict rule checked
 * over thousands of random transactions. Limits, read-your-writes, watches,
 * versionstamps and durability are in the other test_*.c files.
 */
#include <stdatomic.h>

#include "kvt.h"

/* ---- serializability: concurrent transfers with auditors ---------------- */

#define SER_ACCTS 50
#define SER_THREADS 8
#define SER_INITIAL 1000
#define SER_MS 2500

typedef struct ser_xfer {
  int from, to;   /* account indexes */
  int64_t amount; /* moved from `from` to `to` */
  int tid;        /* transferring thread */
  long seq;       /* its logical transfer number */
} ser_xfer;

typedef struct ser_shared {
  kv_db *db;                       /* the store */
  atomic_int stop;                 /* 1 when time is up */
  long committed[SER_THREADS];     /* transfers each thread saw commit */
  long audits;                     /* auditor transactions that checked */
  long fn_calls[SER_THREADS];      /* transfer attempts, retries included */
} ser_shared;

typedef struct ser_thread {
  ser_shared *sh; /* shared state */
  int tid;        /* thread index */
} ser_thread;

static void acct_key(char *out, int i) { sprintf(out, "ser/a/%02d", i); }

static int ser_fn(kv_txn *t, void *arg) {
  ser_xfer *x = arg;
  char ka[32], kb[32], kr[48];
  int64_t a, b;
  acct_key(ka, x->from);
  acct_key(kb, x->to);
  int rc = kvt_get_i64(t, ka, 0, INT64_MIN, &a);
  if (!rc) rc = kvt_get_i64(t, kb, 0, INT64_MIN, &b);
  if (rc) return rc;
  ASSERT(a != INT64_MIN && b != INT64_MIN);
  rc = kvt_set_i64(t, ka, a - x->amount);
  if (!rc) rc = kvt_set_i64(t, kb, b + x->amount);
  if (rc) return rc;
  sprintf(kr, "ser/x/%d/%08ld", x->tid, x->seq);
  uint8_t rec[24];
  kvt_be64(rec, x->from);
  kvt_be64(rec + 8, x->to);
  kvt_be64(rec + 16, x->amount);
  return kv_set(t, kr, strlen(kr), rec, sizeof rec);
}

typedef struct ser_fn_arg {
  ser_xfer x;      /* the transfer */
  long *calls;     /* attempt counter */
} ser_fn_arg;

static int ser_fn_counted(kv_txn *t, void *arg) {
  ser_fn_arg *a = arg;
  (*a->calls)++;
  return ser_fn(t, &a->x);
}

static void *ser_worker(void *arg) {
  ser_thread *th = arg;
  ser_shared *sh = th->sh;
  uint64_t rs = 0x5e2 + (uint64_t)th->tid;
  long seq = 0;
  while (!atomic_load(&sh->stop)) {
    ser_fn_arg a;
    a.x.from = kvt_rand_below(&rs, SER_ACCTS);
    do a.x.to = kvt_rand_below(&rs, SER_ACCTS); while (a.x.to == a.x.from);
    a.x.amount = 1 + kvt_rand_below(&rs, 100);
    a.x.tid = th->tid;
    a.x.seq = seq++;
    a.calls = &sh->fn_calls[th->tid];
    int rc = kv_run(sh->db, ser_fn_counted, &a);
    ASSERTF(rc == 0, "transfer thread %d: kv_run: %s", th->tid, dv_err_name(rc));
    sh->committed[th->tid]++;
  }
  return NULL;
}

/* Reads every account in one transaction (alternately by range and by
 * point reads) and checks the total. */
static void *ser_auditor(void *arg) {
  ser_shared *sh = arg;
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(sh->db, &t));
  int round = 0;
  while (!atomic_load(&sh->stop)) {
    int64_t sum = 0;
    int n = 0, rc = 0;
    if (round++ % 2 == 0) {
      kv_pair *p;
      int count, more;
      rc = kv_get_range(t, "ser/a/", 6, "ser/a0", 6, 0, 0, &p, &count, &more);
      if (!rc) {
        for (int i = 0; i < count; i++) {
          ASSERT_EQ(p[i].val_len, 8);
          sum += kvt_from_be64(p[i].val);
        }
        n = count;
      }
    } else {
      for (int i = 0; i < SER_ACCTS && !rc; i++) {
        char k[32];
        int64_t v;
        acct_key(k, i);
        rc = kvt_get_i64(t, k, i % 3 == 0 ? KV_SNAPSHOT : 0, INT64_MIN, &v);
        if (!rc) { ASSERT(v != INT64_MIN); sum += v; n++; }
      }
    }
    if (!rc) {
      ASSERT_EQ(n, SER_ACCTS);
      ASSERTF(sum == (int64_t)SER_ACCTS * SER_INITIAL, "auditor saw total %lld, want %lld",
              (long long)sum, (long long)SER_ACCTS * SER_INITIAL);
      rc = kv_commit(t); /* read-only: must succeed */
      ASSERTF(rc == 0, "read-only audit commit: %s", dv_err_name(rc));
      sh->audits++;
      kv_txn_reset(t);
    } else {
      ASSERTF(kv_on_error(t, rc) == 0, "auditor read: %s", dv_err_name(rc));
    }
  }
  kv_txn_destroy(t);
  return NULL;
}

KV_CONTRACT(serializable) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  for (int i = 0; i < SER_ACCTS; i++) {
    char k[32];
    acct_key(k, i);
    ASSERT_OK(kvt_set_i64(t, k, SER_INITIAL));
  }
  ASSERT_OK(kv_commit(t));
  kv_txn_destroy(t);

  ser_shared sh;
  memset(&sh, 0, sizeof sh);
  sh.db = db;
  pthread_t th[SER_THREADS], aud;
  ser_thread args[SER_THREADS];
  for (int i = 0; i < SER_THREADS; i++) {
    args[i].sh = &sh;
    args[i].tid = i;
    ASSERT_OK(pthread_create(&th[i], NULL, ser_worker, &args[i]));
  }
  ASSERT_OK(pthread_create(&aud, NULL, ser_auditor, &sh));
  kvt_sleep_ms(SER_MS);
  atomic_store(&sh.stop, 1);
  for (int i = 0; i < SER_THREADS; i++) pthread_join(th[i], NULL);
  pthread_join(aud, NULL);

  long total_committed = 0, total_calls = 0;
  for (int i = 0; i < SER_THREADS; i++) {
    total_committed += sh.committed[i];
    total_calls += sh.fn_calls[i];
  }
  printf("%s: %ld transfers committed, %ld attempts (%ld retried), %ld audits\n", be->name,
         total_committed, total_calls, total_calls - total_committed, sh.audits);
  ASSERT(total_committed > 100);
  ASSERT(sh.audits > 0);

  /* Replay the committed transfer records over the initial balances: they
   * must explain every final balance exactly, and there must be one record
   * per acknowledged transfer (no lost and no phantom commit). */
  int64_t model[SER_ACCTS];
  for (int i = 0; i < SER_ACCTS; i++) model[i] = SER_INITIAL;
  ASSERT_OK(kv_txn_begin(db, &t));
  kv_iter *it;
  ASSERT_OK(kv_iter_begin(t, "ser/x/", 6, "ser/x0", 6, 0, 0, &it));
  kv_pair p;
  long records = 0;
  int rc;
  while ((rc = kv_iter_next(it, &p)) == 1) {
    ASSERT_EQ(p.val_len, 24);
    int from = (int)kvt_from_be64(p.val), to = (int)kvt_from_be64(p.val + 8);
    ASSERT(from >= 0 && from < SER_ACCTS && to >= 0 && to < SER_ACCTS);
    int64_t amount = kvt_from_be64(p.val + 16);
    model[from] -= amount;
    model[to] += amount;
    records++;
  }
  ASSERT_EQ(rc, 0);
  kv_iter_free(it);
  ASSERT_EQ(records, total_committed);
  int64_t sum = 0;
  for (int i = 0; i < SER_ACCTS; i++) {
    char k[32];
    int64_t v;
    acct_key(k, i);
    ASSERT_OK(kvt_get_i64(t, k, 0, INT64_MIN, &v));
    ASSERTF(v == model[i], "account %d = %lld, records explain %lld", i, (long long)v,
            (long long)model[i]);
    sum += v;
  }
  ASSERT_EQ(sum, (int64_t)SER_ACCTS * SER_INITIAL);
  /* Each thread's records are exactly its sequence numbers 0..committed-1. */
  for (int i = 0; i < SER_THREADS; i++) {
    char b[32], e[32];
    sprintf(b, "ser/x/%d/", i);
    sprintf(e, "ser/x/%d0", i);
    kv_pair *pairs;
    int count, more;
    ASSERT_OK(kv_get_range(t, b, strlen(b), e, strlen(e), 0, 0, &pairs, &count, &more));
    ASSERT_EQ(count, sh.committed[i]);
    for (int j = 0; j < count; j++) {
      char want[48];
      sprintf(want, "ser/x/%d/%08d", i, j);
      ASSERT_MEM_EQ(pairs[j].key, pairs[j].key_len, want, strlen(want));
    }
  }
  kv_txn_destroy(t);
  kv_close(db);
}

/* ---- two read-modify-writes of one key -------------------------------- */

KV_CONTRACT(rmw_conflict) {
  kv_db *db = kvt_open(be);
  for (int round = 0; round < 20; round++) {
    kvt_put_i64(db, "rmw/k", round * 10);
    kv_txn *a, *b;
    ASSERT_OK(kv_txn_begin(db, &a));
    ASSERT_OK(kv_txn_begin(db, &b));
    int64_t va, vb, rva, rvb;
    ASSERT_OK(kvt_get_i64(a, "rmw/k", 0, -1, &va));
    ASSERT_OK(kvt_get_i64(b, "rmw/k", 0, -1, &vb));
    ASSERT_EQ(va, round * 10);
    ASSERT_EQ(vb, round * 10);
    ASSERT_OK(kv_get_read_version(a, &rva));
    ASSERT_OK(kv_get_read_version(b, &rvb));
    ASSERT_OK(kvt_set_i64(a, "rmw/k", va + 1));
    ASSERT_OK(kvt_set_i64(b, "rmw/k", vb + 2));
    /* Each also writes a key of its own, to see which one landed. */
    ASSERT_OK(kv_set(a, "rmw/a", 5, "x", 1));
    ASSERT_OK(kv_set(b, "rmw/b", 5, "x", 1));
    kvt_waiter wa, wb;
    kvt_commit_start(a, &wa);
    kvt_commit_start(b, &wb);
    int ra = kvt_commit_wait(&wa), rb = kvt_commit_wait(&wb);
    ASSERTF((ra == 0 && rb == DV_ENOT_COMMITTED) || (ra == DV_ENOT_COMMITTED && rb == 0),
            "round %d: commits returned %s and %s, want exactly one NOT_COMMITTED", round,
            dv_err_name(ra), dv_err_name(rb));
    ASSERT_EQ(wa.calls, 1);
    ASSERT_EQ(wb.calls, 1);
    int64_t v;
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kvt_get_i64(t, "rmw/k", 0, -1, &v));
    ASSERT_EQ(v, round * 10 + (ra == 0 ? 1 : 2));
    const uint8_t *val;
    size_t vl;
    int fa, fb;
    ASSERT_OK(kv_get(t, "rmw/a", 5, 0, &val, &vl, &fa));
    ASSERT_OK(kv_get(t, "rmw/b", 5, 0, &val, &vl, &fb));
    ASSERT_EQ(fa, ra == 0);
    ASSERT_EQ(fb, rb == 0);
    ASSERT_OK(kv_clear(t, "rmw/a", 5));
    ASSERT_OK(kv_clear(t, "rmw/b", 5));
    ASSERT_OK(kv_commit(t));
    kv_txn_destroy(t);
    int64_t winner_version;
    ASSERT_OK(kv_get_committed_version(ra == 0 ? a : b, &winner_version));
    ASSERT(winner_version > rva && winner_version > rvb);
    kv_txn_destroy(a);
    kv_txn_destroy(b);
  }

  /* Blind writes never conflict: both commit, the later one wins. */
  for (int round = 0; round < 10; round++) {
    kv_txn *a, *b;
    int64_t rv;
    ASSERT_OK(kv_txn_begin(db, &a));
    ASSERT_OK(kv_txn_begin(db, &b));
    ASSERT_OK(kv_get_read_version(a, &rv));
    ASSERT_OK(kv_get_read_version(b, &rv));
    ASSERT_OK(kvt_set_i64(a, "rmw/blind", 1));
    ASSERT_OK(kvt_set_i64(b, "rmw/blind", 2));
    /* b also reads an unrelated key: still no conflict. */
    int64_t other;
    ASSERT_OK(kvt_get_i64(b, "rmw/other", 0, 0, &other));
    kvt_waiter wa, wb;
    kvt_commit_start(a, &wa);
    kvt_commit_start(b, &wb);
    ASSERT_OK(kvt_commit_wait(&wa));
    ASSERT_OK(kvt_commit_wait(&wb));
    int64_t ca, cb;
    ASSERT_OK(kv_get_committed_version(a, &ca));
    ASSERT_OK(kv_get_committed_version(b, &cb));
    uint8_t sa[KV_STAMP_LEN], sb[KV_STAMP_LEN];
    ASSERT_OK(kv_get_versionstamp(a, sa));
    ASSERT_OK(kv_get_versionstamp(b, sb));
    int64_t v;
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kvt_get_i64(t, "rmw/blind", 0, -1, &v));
    /* The one committed later (larger stamp) is the value seen. */
    ASSERT_EQ(v, memcmp(sa, sb, KV_STAMP_LEN) > 0 ? 1 : 2);
    kv_txn_destroy(t);
    kv_txn_destroy(a);
    kv_txn_destroy(b);
  }

  /* A blind write racing a committed write of the same key still commits. */
  kv_txn *a;
  ASSERT_OK(kv_txn_begin(db, &a));
  int64_t rv;
  ASSERT_OK(kv_get_read_version(a, &rv));
  kvt_put_i64(db, "rmw/blind", 7);
  ASSERT_OK(kvt_set_i64(a, "rmw/blind", 8));
  ASSERT_OK(kv_commit(a));
  kv_txn_destroy(a);
  kv_close(db);
}

/* ---- write skew ------------------------------------------------------- */

/* Both read x and y (constraint x + y >= 1) and each decrements one of
 * them: under snapshot isolation both would commit and break the
 * constraint; serializable transactions must fail one. */
KV_CONTRACT(write_skew) {
  kv_db *db = kvt_open(be);
  for (int round = 0; round < 10; round++) {
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kvt_set_i64(t, "ws/x", 1));
    ASSERT_OK(kvt_set_i64(t, "ws/y", 1));
    ASSERT_OK(kv_commit(t));
    kv_txn_destroy(t);

    kv_txn *tx[2];
    for (int i = 0; i < 2; i++) {
      int64_t x, y;
      ASSERT_OK(kv_txn_begin(db, &tx[i]));
      ASSERT_OK(kvt_get_i64(tx[i], "ws/x", 0, 0, &x));
      ASSERT_OK(kvt_get_i64(tx[i], "ws/y", 0, 0, &y));
      ASSERT(x + y - 1 >= 1);
      ASSERT_OK(kvt_set_i64(tx[i], i == 0 ? "ws/x" : "ws/y", (i == 0 ? x : y) - 1));
    }
    int r0, r1;
    if (round % 2 == 0) { /* one after the other */
      r0 = kv_commit(tx[0]);
      r1 = kv_commit(tx[1]);
    } else { /* back to back, likely one batch */
      kvt_waiter w0, w1;
      kvt_commit_start(tx[0], &w0);
      kvt_commit_start(tx[1], &w1);
      r0 = kvt_commit_wait(&w0);
      r1 = kvt_commit_wait(&w1);
    }
    ASSERTF((r0 == 0) + (r1 == 0) == 1 && (r0 == DV_ENOT_COMMITTED || r1 == DV_ENOT_COMMITTED),
            "round %d: %s / %s", round, dv_err_name(r0), dv_err_name(r1));
    int64_t x, y;
    ASSERT_OK(kv_txn_begin(db, &t));
    ASSERT_OK(kvt_get_i64(t, "ws/x", 0, 0, &x));
    ASSERT_OK(kvt_get_i64(t, "ws/y", 0, 0, &y));
    ASSERT(x + y >= 1);
    kv_txn_destroy(t);
    kv_txn_destroy(tx[0]);
    kv_txn_destroy(tx[1]);
  }
  kv_close(db);
}

/* ---- phantoms and the extent of range-read conflicts ------------------ */

/* Keys p/c, p/e, p/g exist. `reader` decides how T1 reads [p/b, p/z);
 * T1 then writes elsewhere; T2 writes `key`; T1's commit result is
 * returned. */
typedef enum { RD_FULL, RD_LIMIT2, RD_REV_LIMIT2, RD_ITER2, RD_REV_ITER2, RD_EMPTY } rd_mode;

static int phantom_round(kv_db *db, rd_mode mode, const char *key, int t2_clears) {
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_clear_range(t, "p/", 2, "p0", 2));
  ASSERT_OK(kv_set(t, "p/c", 3, "c", 1));
  ASSERT_OK(kv_set(t, "p/e", 3, "e", 1));
  ASSERT_OK(kv_set(t, "p/g", 3, "g", 1));
  ASSERT_OK(kv_commit(t));
  kv_txn_destroy(t);

  kv_txn *t1;
  ASSERT_OK(kv_txn_begin(db, &t1));
  kv_pair *p;
  int n, more;
  switch (mode) {
  case RD_FULL:
    ASSERT_OK(kv_get_range(t1, "p/b", 3, "p/z", 3, 0, 0, &p, &n, &more));
    ASSERT_EQ(n, 3);
    break;
  case RD_LIMIT2:
    ASSERT_OK(kv_get_range(t1, "p/b", 3, "p/z", 3, 2, 0, &p, &n, &more));
    ASSERT_EQ(n, 2);
    ASSERT_EQ(more, 1);
    ASSERT_MEM_EQ(p[1].key, p[1].key_len, "p/e", 3);
    break;
  case RD_REV_LIMIT2:
    ASSERT_OK(kv_get_range(t1, "p/b", 3, "p/z", 3, 2, KV_REVERSE, &p, &n, &more));
    ASSERT_EQ(n, 2);
    ASSERT_EQ(more, 1);
    ASSERT_MEM_EQ(p[0].key, p[0].key_len, "p/g", 3);
    ASSERT_MEM_EQ(p[1].key, p[1].key_len, "p/e", 3);
    break;
  case RD_ITER2:
  case RD_REV_ITER2: {
    kv_iter *it;
    kv_pair pr;
    ASSERT_OK(kv_iter_begin(t1, "p/b", 3, "p/z", 3, 0, mode == RD_REV_ITER2 ? KV_REVERSE : 0, &it));
    ASSERT_EQ(kv_iter_next(it, &pr), 1);
    ASSERT_EQ(kv_iter_next(it, &pr), 1);
    ASSERT_MEM_EQ(pr.key, pr.key_len, "p/e", 3);
    kv_iter_free(it); /* stopped early, after p/e */
    break;
  }
  case RD_EMPTY:
    ASSERT_OK(kv_get_range(t1, "p/h", 3, "p/m", 3, 0, 0, &p, &n, &more));
    ASSERT_EQ(n, 0);
    ASSERT_EQ(more, 0);
    break;
  }
  ASSERT_OK(kv_set(t1, "q/1", 3, "w", 1));

  kv_txn *t2;
  ASSERT_OK(kv_txn_begin(db, &t2));
  if (t2_clears) ASSERT_OK(kv_clear(t2, key, strlen(key)));
  else ASSERT_OK(kv_set(t2, key, strlen(key), "new", 3));
  ASSERT_OK(kv_commit(t2));
  kv_txn_destroy(t2);

  int rc = kv_commit(t1);
  kv_txn_destroy(t1);
  return rc;
}

KV_CONTRACT(phantom) {
  kv_db *db = kvt_open(be);
  static const struct {
    rd_mode mode;      /* how T1 reads */
    const char *key;   /* what T2 writes */
    int clears;        /* 1: T2 clears the key instead of setting it */
    int conflict;      /* expected: 1 = T1 fails */
  } cases[] = {
      /* a full range read sees inserts, updates and deletes anywhere inside */
      {RD_FULL, "p/d", 0, 1},
      {RD_FULL, "p/b", 0, 1},
      {RD_FULL, "p/y", 0, 1},
      {RD_FULL, "p/e", 1, 1},
      {RD_FULL, "p/z", 0, 0},  /* end is exclusive */
      {RD_FULL, "p/a", 0, 0},
      /* limit 2 forward returned p/c, p/e: conflict range [p/b, p/e] */
      {RD_LIMIT2, "p/d", 0, 1},
      {RD_LIMIT2, "p/e", 0, 1},
      {RD_LIMIT2, "p/b", 0, 1},
      {RD_LIMIT2, "p/e\x01", 0, 0},
      {RD_LIMIT2, "p/f", 0, 0},
      {RD_LIMIT2, "p/g", 1, 0},
      {RD_LIMIT2, "p/y", 0, 0},
      /* limit 2 reverse returned p/g, p/e: conflict range [p/e, p/z) */
      {RD_REV_LIMIT2, "p/f", 0, 1},
      {RD_REV_LIMIT2, "p/e", 0, 1},
      {RD_REV_LIMIT2, "p/y", 0, 1},
      {RD_REV_LIMIT2, "p/d", 0, 0},
      {RD_REV_LIMIT2, "p/c", 1, 0},
      {RD_REV_LIMIT2, "p/b", 0, 0},
      /* an iterator closed after two keys behaves like a limit */
      {RD_ITER2, "p/d", 0, 1},
      {RD_ITER2, "p/f", 0, 0},
      {RD_REV_ITER2, "p/f", 0, 1},
      {RD_REV_ITER2, "p/d", 0, 0},
      /* an empty range read still conflicts with an insert into it */
      {RD_EMPTY, "p/k", 0, 1},
      {RD_EMPTY, "p/m", 0, 0},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = phantom_round(db, cases[i].mode, cases[i].key, cases[i].clears);
    int want = cases[i].conflict ? DV_ENOT_COMMITTED : 0;
    if (rc != want) {
      printf("case %zu (mode %d, T2 %s %s): T1 commit %s, want %s\n", i, (int)cases[i].mode,
             cases[i].clears ? "clears" : "sets", test_hex(cases[i].key, strlen(cases[i].key)),
             dv_err_name(rc), dv_err_name(want));
      bad++;
    }
  }
  ASSERTF(bad == 0, "%d phantom cases wrong (see above)", bad);
  kv_close(db);
}

/* ---- snapshot reads and explicit conflict ranges ----------------------- */

KV_CONTRACT(conflict_ranges) {
  kv_db *db = kvt_open(be);
  kvt_put_str(db, "cr/k", "1");
  kv_txn *t1, *t2;
  const uint8_t *v;
  size_t vl;
  int found;

  /* A snapshot point read adds no conflict. */
  ASSERT_OK(kv_txn_begin(db, &t1));
  ASSERT_OK(kv_get(t1, "cr/k", 4, KV_SNAPSHOT, &v, &vl, &found));
  ASSERT(found);
  ASSERT_OK(kv_set(t1, "cr/out", 6, "a", 1));
  kvt_put_str(db, "cr/k", "2");
  ASSERT_OK(kv_commit(t1));
  kv_txn_destroy(t1);

  /* A snapshot range read adds none either. */
  ASSERT_OK(kv_txn_begin(db, &t1));
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_get_range(t1, "cr/", 3, "cr0", 3, 0, KV_SNAPSHOT, &p, &n, &more));
  ASSERT_OK(kv_set(t1, "cr/out", 6, "b", 1));
  kvt_put_str(db, "cr/j", "new");
  ASSERT_OK(kv_commit(t1));
  kv_txn_destroy(t1);

  /* The same reads without KV_SNAPSHOT conflict. */
  ASSERT_OK(kv_txn_begin(db, &t1));
  ASSERT_OK(kv_get(t1, "cr/k", 4, 0, &v, &vl, &found));
  ASSERT_OK(kv_set(t1, "cr/out", 6, "c", 1));
  kvt_put_str(db, "cr/k", "3");
  ASSERT_EQ(kv_commit(t1), DV_ENOT_COMMITTED);
  kv_txn_destroy(t1);

  /* An explicit read conflict range conflicts with a write inside it,
   * though nothing was read. */
  ASSERT_OK(kv_txn_begin(db, &t1));
  int64_t rv;
  ASSERT_OK(kv_get_read_version(t1, &rv));
  ASSERT_OK(kv_add_conflict_range(t1, "cr/m", 4, "cr/p", 4, KV_CONFLICT_READ));
  ASSERT_OK(kv_set(t1, "cr/out", 6, "d", 1));
  kvt_put_str(db, "cr/n", "x");
  ASSERT_EQ(kv_commit(t1), DV_ENOT_COMMITTED);
  kv_txn_destroy(t1);
  /* … and not with a write outside it. */
  ASSERT_OK(kv_txn_begin(db, &t1));
  ASSERT_OK(kv_get_read_version(t1, &rv));
  ASSERT_OK(kv_add_conflict_range(t1, "cr/m", 4, "cr/p", 4, KV_CONFLICT_READ));
  ASSERT_OK(kv_set(t1, "cr/out", 6, "e", 1));
  kvt_put_str(db, "cr/p", "x");
  ASSERT_OK(kv_commit(t1));
  kv_txn_destroy(t1);

  /* An explicit write conflict range (and nothing else) makes a reader of
   * a key inside it fail, and changes no data. */
  ASSERT_OK(kv_txn_begin(db, &t1));
  ASSERT_OK(kv_get(t1, "cr/k", 4, 0, &v, &vl, &found));
  ASSERT_OK(kv_set(t1, "cr/out", 6, "f", 1));
  ASSERT_OK(kv_txn_begin(db, &t2));
  ASSERT_OK(kv_add_conflict_range(t2, "cr/a", 4, "cr/z", 4, KV_CONFLICT_WRITE));
  ASSERT_OK(kv_commit(t2));
  int64_t cv;
  ASSERT_OK(kv_get_committed_version(t2, &cv));
  ASSERTF(cv > 0, "a transaction with only a write conflict range is not read-only: version %lld",
          (long long)cv);
  kv_txn_destroy(t2);
  ASSERT_EQ(kv_commit(t1), DV_ENOT_COMMITTED);
  kv_txn_destroy(t1);
  kvt_expect_str(db, "cr/k", "3");

  /* A write conflict range does not make a snapshot reader fail. */
  ASSERT_OK(kv_txn_begin(db, &t1));
  ASSERT_OK(kv_get(t1, "cr/k", 4, KV_SNAPSHOT, &v, &vl, &found));
  ASSERT_OK(kv_set(t1, "cr/out", 6, "g", 1));
  ASSERT_OK(kv_txn_begin(db, &t2));
  ASSERT_OK(kv_set(t2, "cr/unrelated", 12, "x", 1));
  ASSERT_OK(kv_add_conflict_range(t2, "cr/a", 4, "cr/z", 4, KV_CONFLICT_WRITE));
  ASSERT_OK(kv_commit(t2));
  kv_txn_destroy(t2);
  ASSERT_OK(kv_commit(t1));
  kv_txn_destroy(t1);
  kvt_expect_str(db, "cr/out", "g");

  /* Atomic ops add no read conflict: two concurrent ADDs both commit. */
  ASSERT_OK(kv_txn_begin(db, &t1));
  ASSERT_OK(kv_txn_begin(db, &t2));
  ASSERT_OK(kv_get_read_version(t1, &rv));
  ASSERT_OK(kv_get_read_version(t2, &rv));
  uint8_t one[8] = {1};
  ASSERT_OK(kv_atomic(t1, KV_ADD, "cr/ctr", 6, one, 8));
  ASSERT_OK(kv_atomic(t2, KV_ADD, "cr/ctr", 6, one, 8));
  ASSERT_OK(kv_commit(t1));
  ASSERT_OK(kv_commit(t2));
  kv_txn_destroy(t1);
  kv_txn_destroy(t2);
  uint8_t buf[8];
  size_t len;
  ASSERT(kvt_read(db, "cr/ctr", 6, buf, 8, &len));
  ASSERT_EQ(len, 8);
  ASSERT_EQ(buf[0], 2);
  kv_close(db);
}

/* ---- snapshot consistency of reads under concurrent commits ------------ */

/* A writer rewrites all SC_KEYS keys to a new generation in one
 * transaction, again and again; readers scan (both directions, in pieces
 * with limits, and by point reads) and must see one generation in every
 * transaction — never a mix of two commits. */
#define SC_KEYS 300

typedef struct sc_shared {
  kv_db *db;       /* store */
  atomic_int stop; /* time is up */
  long gens;       /* generations written */
  long scans;      /* read transactions checked */
} sc_shared;

static void *sc_writer(void *arg) {
  sc_shared *sh = arg;
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(sh->db, &t));
  for (int64_t g = 1; !atomic_load(&sh->stop); g++) {
    for (int i = 0; i < SC_KEYS; i++) {
      char k[32];
      sprintf(k, "sc/%04d", i);
      ASSERT_OK(kvt_set_i64(t, k, g));
    }
    ASSERT_OK(kv_commit(t));
    kv_txn_reset(t);
    sh->gens = g;
  }
  kv_txn_destroy(t);
  return NULL;
}

static void *sc_reader(void *arg) {
  sc_shared *sh = arg;
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(sh->db, &t));
  for (int round = 0; !atomic_load(&sh->stop); round++) {
    int64_t gen = -1;
    int seen = 0;
    int reverse = round % 2;
    /* in pieces of 7, continuing from the last key */
    char from[32] = "sc/", to[32] = "sc0";
    for (;;) {
      kv_pair *p;
      int n, more;
      int rc = kv_get_range(t, from, strlen(from), to, strlen(to), 7, reverse ? KV_REVERSE : 0, &p, &n, &more);
      ASSERTF(rc == 0, "scan: %s", dv_err_name(rc));
      for (int i = 0; i < n; i++) {
        int64_t g = kvt_from_be64(p[i].val);
        if (gen < 0) gen = g;
        ASSERTF(g == gen, "one read transaction saw generations %lld and %lld", (long long)gen, (long long)g);
        seen++;
      }
      if (!n) break;
      const kv_pair *last = &p[n - 1];
      if (reverse) {
        memcpy(to, last->key, last->key_len);
        to[last->key_len] = 0;
      } else {
        memcpy(from, last->key, last->key_len);
        from[last->key_len] = 0;
        strcat(from, "!"); /* just after it (no key has a '!' suffix) */
      }
    }
    ASSERT_EQ(seen, SC_KEYS);
    int64_t g;
    ASSERT_OK(kvt_get_i64(t, "sc/0150", round % 3 ? 0 : KV_SNAPSHOT, -1, &g));
    ASSERT_EQ(g, gen);
    ASSERT_OK(kv_commit(t)); /* read-only */
    kv_txn_reset(t);
    sh->scans++;
  }
  kv_txn_destroy(t);
  return NULL;
}

KV_CONTRACT(snapshot_reads) {
  kv_db *db = kvt_open(be);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  for (int i = 0; i < SC_KEYS; i++) {
    char k[32];
    sprintf(k, "sc/%04d", i);
    ASSERT_OK(kvt_set_i64(t, k, 0));
  }
  ASSERT_OK(kv_commit(t));
  kv_txn_destroy(t);
  sc_shared sh;
  memset(&sh, 0, sizeof sh);
  sh.db = db;
  pthread_t w, r[2];
  ASSERT_OK(pthread_create(&w, NULL, sc_writer, &sh));
  for (int i = 0; i < 2; i++) ASSERT_OK(pthread_create(&r[i], NULL, sc_reader, &sh));
  kvt_sleep_ms(1500);
  atomic_store(&sh.stop, 1);
  pthread_join(w, NULL);
  for (int i = 0; i < 2; i++) pthread_join(r[i], NULL);
  printf("%s: %ld generations written, %ld read transactions checked\n", be->name, sh.gens, sh.scans);
  ASSERT(sh.gens > 5 && sh.scans > 5);
  kv_close(db);
}

/* ---- conflicts against a model ------------------------------------------ */

/* Rounds of up to CM_TXNS transactions over CM_KEYS keys. Transaction j
 * takes its reads after the first r_j commits of the round finished
 * (r_j <= j); the commits go in index order — one by one, or, when all
 * reads come first, all back to back with kv_commit_async (one or a few
 * batches). FDB's rule gives the outcome: j fails iff some transaction i
 * accepted before it (r_j <= i < j) wrote into something j read without
 * KV_SNAPSHOT. Reads come before writes in each transaction, so none
 * reads its own writes. Atomic ops and blind writes add no read conflict;
 * explicit write conflict ranges count as writes. A transaction that writes
 * nothing is read-only and always commits. */
#define CM_KEYS 32
#define CM_TXNS 24
#define CM_ROUNDS 1000

typedef struct cm_txn {
  uint8_t reads[CM_KEYS];  /* 1: key in a non-snapshot read (or read conflict range) */
  uint8_t writes[CM_KEYS]; /* 1: key written (or in a write conflict range) */
  int read_after;          /* r_j */
} cm_txn;

static void cm_key(char *out, int i) { sprintf(out, "cm/%02d", i); } /* sorts as i does */

KV_CONTRACT(conflict_model) {
  kv_db *db = kvt_open(be);
  uint64_t rs = 0xc0ff1c7;
  long fails = 0, total = 0;
  for (int round = 0; round < CM_ROUNDS; round++) {
    int n = 2 + kvt_rand_below(&rs, CM_TXNS - 1);
    int async = kvt_rand_below(&rs, 2);
    cm_txn m[CM_TXNS];
    kv_txn *t[CM_TXNS];
    memset(m, 0, sizeof m);
    /* a known starting state: keys present with 50% */
    kv_txn *s;
    ASSERT_OK(kv_txn_begin(db, &s));
    ASSERT_OK(kv_clear_range(s, "cm/", 3, "cm0", 3));
    for (int k = 0; k < CM_KEYS; k++) {
      char key[16];
      cm_key(key, k);
      if (kvt_rand_below(&rs, 2)) ASSERT_OK(kv_set(s, key, strlen(key), "0", 1));
    }
    ASSERT_OK(kv_commit(s));
    kv_txn_destroy(s);

    for (int j = 0; j < n; j++) {
      ASSERT_OK(kv_txn_begin(db, &t[j]));
      m[j].read_after = async ? 0 : kvt_rand_below(&rs, j + 1);
    }
    /* Plan each transaction's reads and writes now; perform the reads at
     * the right moment. */
    int plan_kind[CM_TXNS][4], plan_a[CM_TXNS][4], plan_b[CM_TXNS][4], nplan[CM_TXNS];
    for (int j = 0; j < n; j++) {
      nplan[j] = kvt_rand_below(&rs, 4);
      for (int q = 0; q < nplan[j]; q++) {
        int kind = kvt_rand_below(&rs, 5); /* 0 point, 1 range, 2 snapshot point, 3 snapshot range, 4 read conflict range */
        int a = kvt_rand_below(&rs, CM_KEYS), b = a + 1 + kvt_rand_below(&rs, CM_KEYS - a);
        plan_kind[j][q] = kind;
        plan_a[j][q] = a;
        plan_b[j][q] = b;
        if (kind == 0) m[j].reads[a] = 1;
        if (kind == 1 || kind == 4)
          for (int k = a; k < b; k++) m[j].reads[k] = 1;
      }
    }
    int committed = 0;
    int rcs[CM_TXNS];
    kvt_waiter w[CM_TXNS];
    for (int j = 0; j <= n; j++) {
      /* reads of every transaction whose turn it is: after `committed` commits */
      for (int x = 0; x < n; x++) {
        if (m[x].read_after != committed) continue;
        if (x < committed) continue;
        int64_t rv;
        ASSERT_OK(kv_get_read_version(t[x], &rv));
        for (int q = 0; q < nplan[x]; q++) {
          char ka[16], kb[16];
          cm_key(ka, plan_a[x][q]);
          cm_key(kb, plan_b[x][q]);
          if (plan_b[x][q] == CM_KEYS) strcpy(kb, "cm0");
          const uint8_t *v;
          size_t vl;
          int found;
          kv_pair *p;
          int np, more;
          switch (plan_kind[x][q]) {
          case 0: ASSERT_OK(kv_get(t[x], ka, strlen(ka), 0, &v, &vl, &found)); break;
          case 2: ASSERT_OK(kv_get(t[x], ka, strlen(ka), KV_SNAPSHOT, &v, &vl, &found)); break;
          case 1: ASSERT_OK(kv_get_range(t[x], ka, strlen(ka), kb, strlen(kb), 0, kvt_rand_below(&rs, 2) ? KV_REVERSE : 0, &p, &np, &more)); break;
          case 3: ASSERT_OK(kv_get_range(t[x], ka, strlen(ka), kb, strlen(kb), 0, KV_SNAPSHOT, &p, &np, &more)); break;
          case 4: ASSERT_OK(kv_add_conflict_range(t[x], ka, strlen(ka), kb, strlen(kb), KV_CONFLICT_READ)); break;
          }
        }
        /* then its writes */
        int nw = kvt_rand_below(&rs, 3);
        for (int q = 0; q < nw; q++) {
          int kind = kvt_rand_below(&rs, 5); /* set, clear, clear_range, atomic, write conflict range */
          int a = kvt_rand_below(&rs, CM_KEYS), b = a + 1 + kvt_rand_below(&rs, CM_KEYS - a);
          char ka[16], kb[16];
          cm_key(ka, a);
          cm_key(kb, b);
          if (b == CM_KEYS) strcpy(kb, "cm0");
          switch (kind) {
          case 0: ASSERT_OK(kv_set(t[x], ka, strlen(ka), "1", 1)); m[x].writes[a] = 1; break;
          case 1: ASSERT_OK(kv_clear(t[x], ka, strlen(ka))); m[x].writes[a] = 1; break;
          case 2:
            ASSERT_OK(kv_clear_range(t[x], ka, strlen(ka), kb, strlen(kb)));
            for (int k = a; k < b; k++) m[x].writes[k] = 1;
            break;
          case 3: ASSERT_OK(kv_atomic(t[x], KV_ADD, ka, strlen(ka), "\x01", 1)); m[x].writes[a] = 1; break;
          case 4:
            ASSERT_OK(kv_add_conflict_range(t[x], ka, strlen(ka), kb, strlen(kb), KV_CONFLICT_WRITE));
            for (int k = a; k < b; k++) m[x].writes[k] = 1;
            break;
          }
        }
      }
      if (j == n) break;
      if (async) {
        kvt_commit_start(t[j], &w[j]);
      } else {
        rcs[j] = kv_commit(t[j]);
      }
      committed++;
    }
    if (async)
      for (int j = 0; j < n; j++) rcs[j] = kvt_commit_wait(&w[j]);
    /* The model. */
    int accepted[CM_TXNS];
    for (int j = 0; j < n; j++) {
      int conflict = 0, writes = 0;
      for (int k = 0; k < CM_KEYS; k++) writes |= m[j].writes[k];
      /* a transaction that writes nothing commits trivially, as in FDB */
      for (int i = m[j].read_after; i < j && !conflict && writes; i++) {
        if (!accepted[i]) continue;
        for (int k = 0; k < CM_KEYS; k++)
          if (m[i].writes[k] && m[j].reads[k]) conflict = 1;
      }
      accepted[j] = !conflict;
      int want = conflict ? DV_ENOT_COMMITTED : 0;
      if (rcs[j] != want) {
        for (int x = 0; x < n; x++) {
          printf("txn %d: reads after %d commits, result %s, reads", x, m[x].read_after, dv_err_name(rcs[x]));
          for (int k = 0; k < CM_KEYS; k++) if (m[x].reads[k]) printf(" %d", k);
          printf(", writes");
          for (int k = 0; k < CM_KEYS; k++) if (m[x].writes[k]) printf(" %d", k);
          printf("; ops:");
          for (int q = 0; q < nplan[x]; q++) printf(" %d[%d,%d)", plan_kind[x][q], plan_a[x][q], plan_b[x][q]);
          printf("\n");
        }
      }
      ASSERTF(rcs[j] == want, "round %d (%s): transaction %d of %d (reads after %d commits) committed with %s, model says %s",
              round, async ? "async" : "sequential", j, n, m[j].read_after, dv_err_name(rcs[j]), dv_err_name(want));
      fails += conflict;
      total++;
    }
    for (int j = 0; j < n; j++) kv_txn_destroy(t[j]);
  }
  printf("%s: %ld transactions, %ld conflicts, all as the model says\n", be->name, total, fails);
  kv_close(db);
}
