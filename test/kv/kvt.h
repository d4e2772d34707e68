/* kvt.h — helpers shared by the kv tests (the .c files of test/kv).
 *
 * The contract suite runs every test against every backend: a test is
 * written once as KV_CONTRACT(name) { … } over a `be` (a kvt_backend, which
 * knows how to open a fresh store in a directory), and the macro defines
 * one runner test per backend: test_kv_<name>_rocks, test_kv_<name>_fault,
 * test_kv_<name>_fdb (src/kv/fdb.c over the libfdb_c double, test/fdbsim).
 * test/kv/tests.h lists them with KV_EACH_BACKEND(X, name, timeout). A new
 * backend (the fdb double) is one more line in each of the two macros.
 *
 * The rest are small conveniences: fresh directories, one-shot puts and
 * reads, big-endian int64 values, async-commit waiters and watch flags.
 * Every helper asserts on unexpected errors, so tests read as the contract.
 */
#ifndef DV_TEST_KVT_H
#define DV_TEST_KVT_H

#include <pthread.h>
#include <stdint.h>

#include "kv/kv.h"
#include "test.h"

typedef struct kvt_backend {
  const char *name;                             /* "rocks", "fault" */
  int (*open)(const char *dir, kv_db **out_db); /* open (create) a store in dir */
  int shared;  /* 1: a cluster — a second open of dir succeeds and shares the data */
} kvt_backend;

extern const kvt_backend kvt_rocks; /* kv_open_rocks */
extern const kvt_backend kvt_fault; /* kv_fault_wrap over kv_open_rocks, no faults */
extern const kvt_backend kvt_fdb;   /* kv_open_fdb over the double, data in dir */

#define KV_CONTRACT(name)                                               \
  static void contract_##name(const kvt_backend *be);                   \
  TEST(kv_##name##_rocks) { contract_##name(&kvt_rocks); }              \
  TEST(kv_##name##_fault) { contract_##name(&kvt_fault); }              \
  TEST(kv_##name##_fdb) { contract_##name(&kvt_fdb); }                  \
  static void contract_##name(const kvt_backend *be)

/* The libfdb_c double (test/fdbsim/libfdb_c.so, $DV_FDBSIM, which `make
 * test` sets). kvt_fdbsim_open opens (kv_open_fdb) the double's "cluster"
 * stored in dir, writing the cluster file dir.cluster that names it;
 * several opens of one dir share one engine, as several processes share
 * one cluster. The double's WAL is not synced (FDBSIM_NO_SYNC). The rest
 * drive its fault injection (fdbsim.c lists the kinds) through the
 * functions the library exports. */
int kvt_fdbsim_open(const char *dir, kv_db **out_db);
const char *kvt_fdbsim_cluster_file(const char *dir); /* writes it; static storage per call */
void kvt_fdbsim_fault(const char *kind, double probability, long count);
long kvt_fdbsim_injected(const char *kind);
void kvt_fdbsim_clear(void);
void kvt_fdbsim_seed(uint64_t seed);

/* A fresh directory path under test_tmpdir() (not created yet). The
 * string is allocated per call and lives until the test process ends. */
const char *kvt_newdir(const char *tag);

/* Open a fresh store of this backend in a new directory. */
kv_db *kvt_open(const kvt_backend *be);
/* Open this backend in an existing (or new) directory, asserting success. */
kv_db *kvt_open_at(const kvt_backend *be, const char *dir);

/* One committed transaction each. */
void kvt_put(kv_db *db, const char *key, const void *val, size_t val_len);
void kvt_put_str(kv_db *db, const char *key, const char *val);
void kvt_put_i64(kv_db *db, const char *key, int64_t v);
void kvt_del(kv_db *db, const char *key);
/* Read key in a fresh transaction: returns 1 and copies up to cap bytes
 * into buf (sets *len to the full length), or 0 when absent. */
int kvt_read(kv_db *db, const void *key, size_t key_len, void *buf, size_t cap, size_t *len);
/* 1 if present and equal to the string, else a test failure message. */
void kvt_expect_str(kv_db *db, const char *key, const char *want);
void kvt_expect_absent(kv_db *db, const char *key);

/* Big-endian int64 values (8 bytes) in a transaction. Returns the kv
 * error; an absent key reads as `dflt`. */
int kvt_get_i64(kv_txn *t, const char *key, int flags, int64_t dflt, int64_t *out);
int kvt_set_i64(kv_txn *t, const char *key, int64_t v);
void kvt_be64(uint8_t out[8], int64_t v);
int64_t kvt_from_be64(const uint8_t in[8]);

/* Time. */
int64_t kvt_now_ms(void);
void kvt_sleep_ms(int ms);

/* Wait for an asynchronous commit. */
typedef struct kvt_waiter {
  pthread_mutex_t mu; /* guards the rest */
  pthread_cond_t cv;  /* signalled on completion */
  int done;           /* 1 once the callback ran */
  int calls;          /* times the callback ran (must end at 1) */
  int rc;             /* its result */
} kvt_waiter;
void kvt_waiter_init(kvt_waiter *w);
void kvt_commit_start(kv_txn *t, kvt_waiter *w); /* kv_commit_async into w */
int kvt_commit_wait(kvt_waiter *w);              /* blocks; returns rc */

/* A flag a watch callback raises. */
typedef struct kvt_flag {
  pthread_mutex_t mu; /* guards the rest */
  pthread_cond_t cv;  /* signalled on each callback */
  int calls;          /* callbacks so far */
  int rc;             /* rc of the last callback */
} kvt_flag;
void kvt_flag_init(kvt_flag *f);
void kvt_flag_cb(void *arg, int rc); /* kv_watch_cb: arg is a kvt_flag */
/* Wait up to ms for at least one callback; returns the call count. */
int kvt_flag_wait(kvt_flag *f, int ms);
int kvt_flag_calls(kvt_flag *f);

/* Committed versions and stamps. */
int64_t kvt_stamp_version(const uint8_t stamp[KV_STAMP_LEN]);
int kvt_stamp_order(const uint8_t stamp[KV_STAMP_LEN]);

/* Deterministic random numbers (splitmix64). */
uint64_t kvt_rand(uint64_t *state);
int kvt_rand_below(uint64_t *state, int n);

#endif
