/* test_fault.c — the fault-injection backend itself (kv_fault.h).
 *
 * The wrapper passes the whole contract suite with no faults armed (the
 * *_fault tests); these check what it injects when armed: each kind on
 * exactly the operations it promises, COMMIT_UNKNOWN_AFTER really
 * committed and _BEFORE really not, read-only commits untouched, counts
 * and probabilities honoured (deterministically from a seed), kv_run
 * riding through injected retryable errors, and many threads committing
 * at once with every reported outcome matching the stored data.
 */
#include <stdatomic.h>

#include "kv/kv_fault.h"
#include "kvt.h"

static kv_db *open_fault(void) { return kvt_open(&kvt_fault); }

/* Commit one blind write of key=val; returns the commit result. */
static int commit_put(kv_db *db, const char *key, const char *val) {
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_set(t, key, strlen(key), val, strlen(val)));
  int rc = kv_commit(t);
  if (rc) {
    int64_t cv;
    uint8_t s[KV_STAMP_LEN];
    ASSERT_EQ(kv_get_committed_version(t, &cv), DV_EINVAL);
    ASSERT_EQ(kv_get_versionstamp(t, s), DV_EINVAL);
  }
  kv_txn_destroy(t);
  return rc;
}

TEST(kv_fault_kinds) {
  kv_db *db = open_fault();
  ASSERT_STR_EQ(kv_db_backend(db), "fault(rocks)");
  ASSERT(kv_fault_inner(db) != NULL);
  ASSERT(kv_fault_inner(kv_fault_inner(db)) == NULL);

  kv_fault_set(db, KV_FAULT_COMMIT_UNKNOWN_AFTER, 1.0, 1);
  ASSERT_EQ(commit_put(db, "f/after", "1"), DV_ECOMMIT_UNKNOWN);
  kvt_expect_str(db, "f/after", "1"); /* it did commit */
  ASSERT_OK(commit_put(db, "f/after", "2")); /* count used up */
  kvt_expect_str(db, "f/after", "2");
  ASSERT_EQ(kv_fault_injected(db, KV_FAULT_COMMIT_UNKNOWN_AFTER), 1);

  kv_fault_set(db, KV_FAULT_COMMIT_UNKNOWN_BEFORE, 1.0, 2);
  ASSERT_EQ(commit_put(db, "f/before", "1"), DV_ECOMMIT_UNKNOWN);
  ASSERT_EQ(commit_put(db, "f/before", "2"), DV_ECOMMIT_UNKNOWN);
  kvt_expect_absent(db, "f/before"); /* it did not */
  ASSERT_OK(commit_put(db, "f/before", "3"));
  ASSERT_EQ(kv_fault_injected(db, KV_FAULT_COMMIT_UNKNOWN_BEFORE), 2);

  kv_fault_set(db, KV_FAULT_NOT_COMMITTED, 1.0, 1);
  ASSERT_EQ(commit_put(db, "f/nc", "1"), DV_ENOT_COMMITTED);
  kvt_expect_absent(db, "f/nc");

  kv_fault_set(db, KV_FAULT_TIMED_OUT, 1.0, 1);
  ASSERT_EQ(commit_put(db, "f/to", "1"), DV_ETIMED_OUT);
  kvt_expect_absent(db, "f/to");

  /* TOO_OLD: on reads (point, range; snapshot or not) and on commits. */
  kv_txn *t;
  const uint8_t *v;
  size_t vl;
  int found;
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_txn_begin(db, &t));
  kv_fault_set(db, KV_FAULT_TOO_OLD, 1.0, 2);
  ASSERT_EQ(kv_get(t, "f/after", 7, 0, &v, &vl, &found), DV_ETXN_TOO_OLD);
  ASSERT_EQ(kv_get(t, "f/after", 7, 0, &v, &vl, &found), DV_ETXN_TOO_OLD); /* sticky, not drawn */
  ASSERT_OK(kv_on_error(t, DV_ETXN_TOO_OLD));
  ASSERT_EQ(kv_get_range(t, "f/", 2, "f0", 2, 0, KV_SNAPSHOT, &p, &n, &more), DV_ETXN_TOO_OLD);
  ASSERT_OK(kv_on_error(t, DV_ETXN_TOO_OLD));
  ASSERT_OK(kv_get(t, "f/after", 7, 0, &v, &vl, &found)); /* count used up */
  ASSERT_OK(kv_get_range(t, "f/", 2, "f0", 2, 0, 0, &p, &n, &more));
  ASSERT_EQ(kv_fault_injected(db, KV_FAULT_TOO_OLD), 2);
  kv_fault_set(db, KV_FAULT_TOO_OLD, 1.0, 1);
  ASSERT_OK(kv_set(t, "f/old", 5, "x", 1));
  ASSERT_EQ(kv_commit(t), DV_ETXN_TOO_OLD);
  kv_txn_destroy(t);
  kvt_expect_absent(db, "f/old");

  /* Read-only commits are never failed, even when armed. */
  for (int k = 0; k < KV_FAULT_NKINDS; k++)
    if (k != KV_FAULT_TOO_OLD) kv_fault_set(db, (kv_fault_kind)k, 1.0, -1);
  ASSERT_OK(kv_txn_begin(db, &t));
  ASSERT_OK(kv_get(t, "f/after", 7, 0, &v, &vl, &found));
  ASSERT_OK(kv_commit(t));
  kv_txn_reset(t);
  ASSERT_OK(kv_commit(t));
  /* … while a write-conflict-range-only commit is a write and is failed. */
  kv_txn_reset(t);
  ASSERT_OK(kv_add_conflict_range(t, "a", 1, "b", 1, KV_CONFLICT_WRITE));
  ASSERT_EQ(kv_commit(t), DV_ECOMMIT_UNKNOWN);
  kv_txn_destroy(t);

  /* kv_fault_clear disarms everything; counters stay until reset. */
  kv_fault_clear(db);
  ASSERT_OK(commit_put(db, "f/clear", "1"));
  ASSERT(kv_fault_injected(db, KV_FAULT_COMMIT_UNKNOWN_AFTER) >= 2);
  ASSERT(kv_fault_eligible(db, KV_FAULT_COMMIT_UNKNOWN_AFTER) >= kv_fault_injected(db, KV_FAULT_COMMIT_UNKNOWN_AFTER));
  kv_fault_reset_counts(db);
  for (int k = 0; k < KV_FAULT_NKINDS; k++) ASSERT_EQ(kv_fault_injected(db, (kv_fault_kind)k), 0);

  /* Calls on a store that is not a fault wrapper do nothing. */
  kv_fault_set(kv_fault_inner(db), KV_FAULT_NOT_COMMITTED, 1.0, -1);
  ASSERT_EQ(kv_fault_injected(kv_fault_inner(db), KV_FAULT_NOT_COMMITTED), 0);
  kv_close(db);
}

/* Injected retryable errors are retried by kv_run; the work happens
 * exactly once unless the fault says the commit happened (AFTER), in
 * which case a non-idempotent fn would run twice — which is exactly what
 * the store layer's TxId keys must detect. */
typedef struct incr_arg {
  int calls; /* fn invocations */
} incr_arg;

static int incr_fn(kv_txn *t, void *arg) {
  ((incr_arg *)arg)->calls++;
  int64_t v;
  int rc = kvt_get_i64(t, "f/ctr", 0, 0, &v);
  return rc ? rc : kvt_set_i64(t, "f/ctr", v + 1);
}

static int64_t read_ctr(kv_db *db) {
  uint8_t b[8];
  size_t len = 0;
  if (!kvt_read(db, "f/ctr", 5, b, 8, &len)) return 0;
  ASSERT_EQ(len, 8);
  return kvt_from_be64(b);
}

TEST(kv_fault_kv_run) {
  kv_db *db = open_fault();
  incr_arg a = {0};
  kv_fault_set(db, KV_FAULT_NOT_COMMITTED, 1.0, 3);
  ASSERT_OK(kv_run(db, incr_fn, &a));
  ASSERT_EQ(a.calls, 4);
  ASSERT_EQ(read_ctr(db), 1);
  a.calls = 0;
  kv_fault_set(db, KV_FAULT_COMMIT_UNKNOWN_BEFORE, 1.0, 2);
  ASSERT_OK(kv_run(db, incr_fn, &a));
  ASSERT_EQ(a.calls, 3);
  ASSERT_EQ(read_ctr(db), 2);
  a.calls = 0;
  kv_fault_set(db, KV_FAULT_COMMIT_UNKNOWN_AFTER, 1.0, 1);
  ASSERT_OK(kv_run(db, incr_fn, &a));
  ASSERT_EQ(a.calls, 2);
  ASSERT_EQ(read_ctr(db), 4); /* the "unknown" attempt committed too */
  a.calls = 0;
  kv_fault_set(db, KV_FAULT_TIMED_OUT, 1.0, 1);
  ASSERT_EQ(kv_run(db, incr_fn, &a), DV_ETIMED_OUT); /* fatal: no retry */
  ASSERT_EQ(a.calls, 1);
  ASSERT_EQ(read_ctr(db), 4);
  kv_close(db);
}

/* Probabilities: roughly the asked fraction, reproducible from a seed. */
TEST(kv_fault_probability) {
  kv_db *db = open_fault();
  kvt_put_str(db, "f/k", "v");
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  enum { READS = 4000 };
  static char pattern[2][READS];
  for (int run = 0; run < 2; run++) {
    kv_fault_seed(db, 12345);
    kv_fault_reset_counts(db);
    kv_fault_set(db, KV_FAULT_TOO_OLD, 0.25, -1);
    for (int i = 0; i < READS; i++) {
      const uint8_t *v;
      size_t vl;
      int found;
      int rc = kv_get(t, "f/k", 3, KV_SNAPSHOT, &v, &vl, &found);
      ASSERT(rc == 0 || rc == DV_ETXN_TOO_OLD);
      pattern[run][i] = rc != 0;
      if (rc) kv_txn_reset(t);
    }
    long inj = kv_fault_injected(db, KV_FAULT_TOO_OLD);
    ASSERT_EQ(kv_fault_eligible(db, KV_FAULT_TOO_OLD), READS);
    ASSERTF(inj > READS * 0.22 && inj < READS * 0.28, "%ld of %d reads failed at p=0.25", inj, READS);
  }
  ASSERT(memcmp(pattern[0], pattern[1], READS) == 0);
  kv_fault_clear(db);
  kv_txn_destroy(t);

  /* On commits, with a count cap: p=0.5 but at most 20. */
  kv_fault_reset_counts(db);
  kv_fault_set(db, KV_FAULT_NOT_COMMITTED, 0.5, 20);
  int failed = 0;
  for (int i = 0; i < 200; i++) {
    char k[32];
    sprintf(k, "f/p/%d", i);
    int rc = commit_put(db, k, "x");
    ASSERT(rc == 0 || rc == DV_ENOT_COMMITTED);
    failed += rc != 0;
  }
  ASSERT_EQ(failed, 20);
  ASSERT_EQ(kv_fault_injected(db, KV_FAULT_NOT_COMMITTED), 20);
  kv_fault_reset_counts(db);
  kv_fault_set(db, KV_FAULT_NOT_COMMITTED, 0.5, -1);
  failed = 0;
  for (int i = 0; i < 300; i++) {
    char k[32];
    sprintf(k, "f/q/%d", i);
    failed += commit_put(db, k, "x") != 0;
  }
  ASSERTF(failed > 110 && failed < 190, "%d of 300 commits failed at p=0.5", failed);
  kv_close(db);
}

/* Many threads commit at once under AFTER and BEFORE faults: every
 * outcome reported matches the store (0 and AFTER-unknown: present;
 * BEFORE-unknown: absent), and the counters add up. */
#define FT_THREADS 6
#define FT_PER_THREAD 150

typedef struct ft_arg {
  kv_db *db;                   /* store */
  int tid;                     /* thread index */
  int rc[FT_PER_THREAD];       /* commit result per key */
} ft_arg;

static void *ft_worker(void *arg) {
  ft_arg *a = arg;
  for (int i = 0; i < FT_PER_THREAD; i++) {
    char k[32];
    sprintf(k, "ft/%d/%04d", a->tid, i);
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(a->db, &t));
    ASSERT_OK(kv_set(t, k, strlen(k), "v", 1));
    ASSERT_OK(kv_atomic(t, KV_ADD, "ft/total", 8, "\x01\x00\x00\x00\x00\x00\x00\x00", 8));
    a->rc[i] = kv_commit(t);
    kv_txn_destroy(t);
  }
  return NULL;
}

TEST(kv_fault_threads) {
  kv_db *db = open_fault();
  kv_fault_seed(db, 99);
  kv_fault_set(db, KV_FAULT_COMMIT_UNKNOWN_AFTER, 0.2, -1);
  kv_fault_set(db, KV_FAULT_COMMIT_UNKNOWN_BEFORE, 0.2, -1);
  pthread_t th[FT_THREADS];
  static ft_arg args[FT_THREADS];
  for (int i = 0; i < FT_THREADS; i++) {
    args[i].db = db;
    args[i].tid = i;
    ASSERT_OK(pthread_create(&th[i], NULL, ft_worker, &args[i]));
  }
  for (int i = 0; i < FT_THREADS; i++) pthread_join(th[i], NULL);
  long ok = 0, unknown = 0, present_unknown = 0;
  kv_fault_clear(db);
  for (int i = 0; i < FT_THREADS; i++) {
    for (int j = 0; j < FT_PER_THREAD; j++) {
      char k[32];
      sprintf(k, "ft/%d/%04d", i, j);
      int rc = args[i].rc[j];
      ASSERTF(rc == 0 || rc == DV_ECOMMIT_UNKNOWN, "%s: %s", k, dv_err_name(rc));
      int present = kvt_read(db, k, strlen(k), NULL, 0, NULL);
      if (rc == 0) {
        ASSERTF(present, "%s acknowledged but absent", k);
        ok++;
      } else {
        unknown++;
        present_unknown += present;
      }
    }
  }
  long after = kv_fault_injected(db, KV_FAULT_COMMIT_UNKNOWN_AFTER);
  long before = kv_fault_injected(db, KV_FAULT_COMMIT_UNKNOWN_BEFORE);
  printf("%ld ok, %ld unknown (%ld after, %ld before), %ld unknown ones present\n", ok, unknown, after,
         before, present_unknown);
  ASSERT_EQ(unknown, after + before);
  ASSERT_EQ(present_unknown, after);
  uint8_t b[8];
  size_t len;
  ASSERT(kvt_read(db, "ft/total", 8, b, 8, &len));
  ASSERT_EQ(b[0] | b[1] << 8, ok + after);
  ASSERT(after > 50 && before > 50);
  kv_close(db);
}
