/* bench_vtree.c — what the reduce tree (index/vtree.h) costs to keep and to
 * read, at a million rows.
 *
 *   build/<cc>/bench/bench_vtree [seconds_per_run]      (make bench runs it)
 *
 * On a fresh embedded store in a temporary directory (WAL not synced: this
 * measures the tree's work, not fsync), one tree with one reduction (the
 * sum of 8-byte values, as _sum):
 *   - load: 1,000,000 rows appended in transactions of 10,000 (rows/s,
 *     and the share of it spent in vt_update);
 *   - update: transactions of 200 rows at random keys (inserts), each with
 *     its vt_update: rows/s of whole transactions and of vt_update alone,
 *     and the KV reads per batch;
 *   - reduce: random sub-ranges with the sum and counts only, and the whole
 *     range: latency p50/p99 (µs) and KVs read per reduce — after the load,
 *     and again after the random updates (RocksDB then reads through their
 *     uncompacted files: slower reads, the same KV counts).
 * It is a measurement, not a test: it exits 0 unless something fails.
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/vtree.h"
#include "kv/kv.h"

#define NROWS 1000000
#define LOAD_TXN 10000
#define UPD_TXN 200
#define QUERIES 2000

static double run_secs = 3.0;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void check(const char *what, int rc) {
  if (!rc) return;
  fprintf(stderr, "bench_vtree: %s: %s (%d)\n", what, dv_err_name(rc), rc);
  exit(1);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static uint64_t rnd(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int sum_reduce(void *ctx, const kv_pair *rows, size_t n, dv_buf *out) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t v;
    memcpy(&v, rows[i].val, 8);
    s += v;
  }
  buf_append(&out[0], &s, 8);
  return 0;
}

static int sum_rereduce(void *ctx, size_t which, const vt_red *in, size_t n, dv_buf *out) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t v;
    memcpy(&v, in[i].p, 8);
    s += v;
  }
  buf_append(out, &s, 8);
  return 0;
}

static const vt_ops sum_ops = {sum_reduce, sum_rereduce};

/* Row key "r" + 8-byte big-endian k; value k. */
static void put(kv_txn *t, uint64_t k, uint8_t sfx[8]) {
  uint8_t key[9], v[8];
  key[0] = 'r';
  for (int i = 0; i < 8; i++) sfx[i] = key[1 + i] = (uint8_t)(k >> (56 - 8 * i));
  memcpy(v, &k, 8);
  check("kv_set", kv_set(t, key, 9, v, 8));
}

/* One batch: rows at the keys gen gives, then vt_update, then commit. */
static double batch(kv_db *db, const vt_def *d, uint64_t *keys, size_t n, vt_stats *st) {
  static uint8_t sfx[LOAD_TXN][8];
  static vt_key ch[LOAD_TXN];
  kv_txn *t;
  check("kv_txn_begin", kv_txn_begin(db, &t));
  for (size_t i = 0; i < n; i++) {
    put(t, keys[i], sfx[i]);
    ch[i] = (vt_key){sfx[i], 8};
  }
  double t0 = now_s();
  check("vt_update", vt_update(t, d, ch, n, st));
  double u = now_s() - t0;
  check("kv_commit", kv_commit(t));
  kv_txn_destroy(t);
  return u;
}

static void reduce_run(kv_db *db, const vt_def *d, int kind, uint64_t nrows, uint64_t *rng, const char *when) {
  static const char *name[] = {"sub-range, sum", "sub-range, count only", "whole range, sum"};
  static double lat[QUERIES];
  uint64_t kvs = 0, reads = 0;
  kv_txn *t;
  check("kv_txn_begin", kv_txn_begin(db, &t));
  dv_buf red = DV_BUF_INIT;
  for (int q = 0; q < QUERIES; q++) {
    if (q % 200 == 0) { /* a transaction lives 5 s at most */
      kv_txn_destroy(t);
      check("kv_txn_begin", kv_txn_begin(db, &t));
    }
    uint64_t a = rnd(rng) % nrows, b = a + rnd(rng) % (nrows - a);
    uint8_t sa[8], sb[8];
    for (int i = 0; i < 8; i++) sa[i] = (uint8_t)(a >> (56 - 8 * i)), sb[i] = (uint8_t)(b >> (56 - 8 * i));
    vt_bound lo = {sa, 8, 1}, hi = {sb, 8, 1};
    vt_stats st = {0, 0};
    uint64_t c;
    buf_reset(&red);
    double t0 = now_s();
    check("vt_reduce",
          vt_reduce(t, d, kind == 2 ? NULL : &lo, kind == 2 ? NULL : &hi, 0, &c, kind == 1 ? NULL : &red, &st));
    lat[q] = (now_s() - t0) * 1e6;
    kvs += st.kvs;
    reads += st.reads;
  }
  buf_free(&red);
  kv_txn_destroy(t);
  qsort(lat, QUERIES, sizeof *lat, dcmp);
  printf("  reduce %-22s %-14s p50 %6.1f us  p99 %6.1f us  %5.1f reads %6.1f KVs per reduce\n", name[kind], when,
         lat[QUERIES / 2], lat[QUERIES * 99 / 100], (double)reads / QUERIES, (double)kvs / QUERIES);
}

int main(int argc, char **argv) {
  if (argc > 1) run_secs = atof(argv[1]);
  char base[] = "/tmp/bench_vtree-XXXXXX";
  if (!mkdtemp(base)) {
    perror("mkdtemp");
    return 1;
  }
  kv_rocks_opts o = {.no_sync = 1, .create_if_missing = 1};
  kv_db *db;
  check("kv_open_rocks", kv_open_rocks(base, &o, &db));
  vt_def d = {.rows_prefix = (const uint8_t *)"r", .rows_prefix_len = 1, .node_prefix = (const uint8_t *)"t",
              .node_prefix_len = 1, .n_red = 1, .ops = &sum_ops};
  uint64_t rng = 42;
  for (int i = 0; i < VT_SALT_LEN; i++) d.salt[i] = (uint8_t)rnd(&rng);
  static uint64_t keys[LOAD_TXN];

  /* load: appended rows; row k at key k << 20, so random keys fall between */
  double t0 = now_s(), upd = 0;
  for (uint64_t k = 0; k < NROWS;) {
    for (size_t i = 0; i < LOAD_TXN; i++) keys[i] = (k++) << 20;
    upd += batch(db, &d, keys, LOAD_TXN, NULL);
  }
  double load = now_s() - t0;
  printf("bench_vtree: %d rows, one reduction (sum)\n", NROWS);
  printf("  load   appended, %d per txn: %8.0f rows/s (vt_update %.0f rows/s, %.0f%% of the time)\n", LOAD_TXN,
         NROWS / load, NROWS / upd, 100 * upd / load);

  for (int kind = 0; kind < 3; kind++) reduce_run(db, &d, kind, (uint64_t)NROWS << 20, &rng, "after load");

  /* update: random keys in batches of 200 */
  uint64_t rows = 0, nb = 0;
  vt_stats st = {0, 0};
  upd = 0;
  t0 = now_s();
  while (now_s() - t0 < run_secs) {
    for (size_t i = 0; i < UPD_TXN; i++) keys[i] = rnd(&rng) % ((uint64_t)NROWS << 20);
    upd += batch(db, &d, keys, UPD_TXN, &st);
    rows += UPD_TXN;
    nb++;
  }
  double el = now_s() - t0;
  if (nb) printf("  update random, %d per txn: %8.0f rows/s (vt_update %.0f rows/s, %.0f%% of the time; "
         "%.0f reads %.0f KVs per batch)\n",
         UPD_TXN, rows / el, rows / upd, 100 * upd / el, (double)st.reads / nb, (double)st.kvs / nb);

  for (int kind = 0; kind < 3; kind++) reduce_run(db, &d, kind, (uint64_t)NROWS << 20, &rng, "after updates");
  kv_close(db);
  nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}
