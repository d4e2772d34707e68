/* test_history.c — the embedded engine's conflict history within its share
 * of [divan] memory_limit (src/kv/rocks.c "the history").
 *
 * kv_history_budget: a store with the smallest budget (16 MiB: 1 MiB of
 * history); two long transactions hold old snapshots, so nothing can be
 * dropped as unneeded, while 200 commits write 100,000 distinct keys
 * (~14 MB of write ranges), within the 5 s a transaction may live. The history must stay near its budget
 * (coarsened), and the long transaction whose read range one of the first
 * of those commits wrote must still be refused (not_committed): coarsening
 * may add conflicts, never lose one. The other long transaction read only
 * keys nobody wrote: whether it commits is counted (a false conflict is
 * allowed), not asserted.
 *
 * kv_history_trim: with no transaction holding an old snapshot, the
 * history is dropped as soon as it is not needed: after commits with no
 * reader open it is empty, and while a reader holds a snapshot the entries
 * newer than it stay (a conflicting write is seen).
 */
#include <stdio.h>
#include <string.h>

#include "kvt.h"

typedef struct hw {
  int from, n; /* key numbers [from, from + n) */
  const char *extra; /* one more key to write, or NULL */
} hw;

static int write_keys(kv_txn *t, void *arg) {
  const hw *w = arg;
  static const char val[16] = "history test...";
  char k[96];
  for (int i = w->from; i < w->from + w->n; i++) {
    int kl = snprintf(k, sizeof k, "h/w/%08d/a-rather-long-key-suffix-like-a-document-id-%08d", i, i * 7);
    int rc = kv_set(t, k, (size_t)kl, val, sizeof val);
    if (rc) return rc;
  }
  if (w->extra) return kv_set(t, w->extra, strlen(w->extra), val, sizeof val);
  return 0;
}

static int64_t history_bytes(kv_db *db) {
  kv_info in;
  kv_db_info(db, &in);
  return in.history_bytes;
}

/* A transaction that read [b, e) (one range read, to its end). */
static kv_txn *reader(kv_db *db, const char *b, const char *e) {
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  kv_iter *it;
  ASSERT_OK(kv_iter_begin(t, b, strlen(b), e, strlen(e), 0, 0, &it));
  kv_pair p;
  int rc;
  while ((rc = kv_iter_next(it, &p)) == 1) {}
  ASSERT_OK(rc);
  kv_iter_free(it);
  return t;
}

TEST(kv_history_budget) {
  kv_rocks_opts o = {.create_if_missing = 1, .memory_mb = KV_ROCKS_MEMORY_MIN_MB};
  kv_db *db;
  ASSERT_OK(kv_open_rocks(kvt_newdir("hist"), &o, &db));
  const int64_t budget = ((int64_t)KV_ROCKS_MEMORY_MIN_MB << 20) / 16;
  kv_txn *hit = reader(db, "h/a/", "h/a0");   /* one early commit writes into this */
  kv_txn *miss = reader(db, "h/b/", "h/b0");  /* nobody writes here */
  int64_t peak = 0;
  for (int i = 0; i < 200; i++) {
    hw w = {i * 500, 500, i == 3 ? "h/a/0042" : NULL};
    ASSERT_OK(kv_run(db, write_keys, &w));
    int64_t hb = history_bytes(db);
    if (hb > peak) peak = hb;
  }
  /* a commit's own ranges (~70 KB) may come on top before the next trim */
  ASSERTF(peak <= budget + (128 << 10), "history peaked at %lld bytes, budget %lld", (long long)peak,
          (long long)budget);
  ASSERT_OK(kv_set(hit, "h/l/1", 5, "x", 1));
  ASSERT_EQ(kv_commit(hit), DV_ENOT_COMMITTED);
  ASSERT_OK(kv_set(miss, "h/l/2", 5, "x", 1));
  int rc = kv_commit(miss);
  ASSERT(rc == 0 || rc == DV_ENOT_COMMITTED);
  printf("history budget %lld bytes, peak %lld; a reader of untouched keys %s\n", (long long)budget, (long long)peak,
         rc ? "was refused (a false conflict, allowed)" : "committed");
  kv_txn_destroy(hit);
  kv_txn_destroy(miss);
  kv_close(db);
}

TEST(kv_history_trim) {
  kv_db *db = kvt_open(&kvt_rocks);
  for (int i = 0; i < 20; i++) {
    hw w = {i * 10, 10, NULL};
    ASSERT_OK(kv_run(db, write_keys, &w));
  }
  ASSERT_EQ(history_bytes(db), 0); /* nobody can need it */
  kv_txn *r = reader(db, "h/a/", "h/a0");
  for (int i = 0; i < 20; i++) {
    hw w = {1000 + i * 10, 10, i == 10 ? "h/a/0001" : NULL};
    ASSERT_OK(kv_run(db, write_keys, &w));
  }
  ASSERT(history_bytes(db) > 0); /* r's snapshot keeps what came after it */
  ASSERT_OK(kv_set(r, "h/l/1", 5, "x", 1));
  ASSERT_EQ(kv_commit(r), DV_ENOT_COMMITTED);
  kv_txn_destroy(r);
  hw w = {5000, 1, NULL};
  ASSERT_OK(kv_run(db, write_keys, &w));
  ASSERT_EQ(history_bytes(db), 0);
  kv_close(db);
}
