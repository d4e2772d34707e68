/* test_fdb.c — what only the fdb backend has: loading libfdb_c, the cluster
 * file, FDB's on_error under kv.h's retry limit, and faults of the double
 * reaching kv.h callers as kv.h's error classes.
 *
 * The contract itself runs on fdb through KV_CONTRACT (kv_*_fdb).
 */
#include <stdio.h>

#include "kvt.h"

static int fail_n(kv_txn *t, void *arg) {
  (*(int *)arg)++;
  return kv_set(t, "f/k", 3, "v", 1);
}

TEST(kv_fdb_open_errors) {
  kv_db *db = NULL;
  kv_fdb_opts bad = {.library = "/nonexistent/libfdb_c.so"};
  ASSERT_EQ(kv_open_fdb(NULL, &bad, &db), DV_ENOTSUP); /* nothing loaded yet */
  db = kvt_open(&kvt_fdb);                              /* loads the double */
  ASSERT_STR_EQ(kv_db_backend(db), "fdb");
  kv_db *other = NULL;
  ASSERT_EQ(kv_open_fdb(NULL, &bad, &other), DV_EINVAL); /* one library per process */
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none.cluster", test_tmpdir());
  kv_fdb_opts same = {.library = getenv("DV_FDBSIM")};
  if (same.library) ASSERT_EQ(kv_open_fdb(missing, &same, &other), DV_EIO);
  kv_close(db);
}

/* kv.h's retry limit holds on FDB's on_error: limit 2 means 3 attempts. */
TEST(kv_fdb_retry_limit) {
  kv_db *db = kvt_open(&kvt_fdb);
  kvt_fdbsim_fault("not_committed", 1.0, -1);
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  kv_set_retry_limit(t, 2);
  int runs = 0, rc;
  for (;;) {
    rc = fail_n(t, &runs);
    if (!rc) rc = kv_commit(t);
    if (!rc || kv_on_error(t, rc)) break;
  }
  ASSERT_EQ(rc, DV_ENOT_COMMITTED);
  ASSERT_EQ(runs, 3);
  ASSERT_EQ(kvt_fdbsim_injected("not_committed"), 3);
  kv_txn_destroy(t);
  /* At the limit, the last retry may succeed. */
  kvt_fdbsim_fault("not_committed", 1.0, 2);
  ASSERT_OK(kv_txn_begin(db, &t));
  kv_set_retry_limit(t, 2);
  runs = 0;
  for (;;) {
    rc = fail_n(t, &runs);
    if (!rc) rc = kv_commit(t);
    if (!rc || kv_on_error(t, rc)) break;
  }
  ASSERT_OK(rc);
  ASSERT_EQ(runs, 3);
  kv_txn_destroy(t);
  kvt_expect_str(db, "f/k", "v");
  kv_close(db);
}

/* Faults of each kind reach the caller as kv.h's classes; kv_run rides out
 * the retryable ones and commits exactly once. */
TEST(kv_fdb_fault_classes) {
  kv_db *db = kvt_open(&kvt_fdb);
  static const struct { const char *kind; int rc; } k[] = {
      {"commit_unknown_after", DV_ECOMMIT_UNKNOWN}, {"commit_unknown_before", DV_ECOMMIT_UNKNOWN},
      {"not_committed", DV_ENOT_COMMITTED},        {"too_old", DV_ETXN_TOO_OLD},
      {"timed_out", DV_ETIMED_OUT},                 {"future_version", DV_EFUTURE_VERSION},
  };
  for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
    kvt_fdbsim_clear();
    kvt_fdbsim_fault(k[i].kind, 1.0, 1);
    kv_txn *t;
    ASSERT_OK(kv_txn_begin(db, &t));
    const uint8_t *v;
    size_t vl;
    int found;
    int rc = kv_get(t, "c/x", 3, 0, &v, &vl, &found);
    if (!rc) rc = kv_set(t, "c/x", 3, "1", 1);
    if (!rc) rc = kv_commit(t);
    ASSERTF(rc == k[i].rc, "%s: got %s", k[i].kind, dv_err_name(rc));
    ASSERT_EQ(dv_err_retryable(rc), k[i].rc != DV_ETIMED_OUT);
    kv_txn_destroy(t);
  }
  kvt_fdbsim_clear();
  for (int i = 0; i < 4; i++) kvt_fdbsim_fault(i % 2 ? "slow" : "stall", 0.5, -1);
  int runs = 0;
  ASSERT_OK(kv_run(db, fail_n, &runs));
  ASSERT_EQ(runs, 1);
  kv_close(db);
}
