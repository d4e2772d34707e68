/* bench_kv.c — how fast the embedded kv engine is, next to RocksDB itself.
 *
 *   build/<cc>/bench/bench_kv [seconds_per_run]      (make bench runs it)
 *
 * Measures, each as the median of 3 runs:
 *   - durable commits/s of 1-key transactions through kv_run with 1, 8 and
 *     64 committer threads (group commit is what makes 64 beat 1);
 *   - RocksDB's own synced single-put rate (rocksdb_put, sync=1, one
 *     thread, on a separate directory), the peer the 1-thread rate is
 *     compared with;
 *   - on a store of 1,000,000 keys (tuple-like 20-40 byte keys with long
 *     shared prefixes, 100-byte values, loaded in 5,000-key transactions):
 *     random point gets/s on one thread through kv.h, and full-range
 *     iterator scans of the whole key prefix in keys/s, before and after
 *     kv_compact;
 *   - RocksDB's own random gets on the same files afterwards (the peer);
 *   - the process RSS after loading and after reading;
 *   - the conflict history's false conflicts: 8 threads of read-modify-write
 *     transactions on random keys of a 1,000,000-key space (two of them
 *     meet on a key about once in a million), 8 more that wait 500 ms
 *     between their read and their commit, while a reader holds a 4 s
 *     snapshot so no history can be dropped as unneeded, at the default
 *     memory budget and at the least (16 MiB: 1 MiB of history, coarsened
 *     all the time): refused commits per 1,000, the history's size and how
 *     often it was coarsened.
 *   - the write set a transaction buffers its writes in (kv/wset.h): the
 *     14,000 keys of a 1,000-document _bulk_docs (per document 11 body
 *     keys, 2 revision keys and a changes row, ids ascending as one
 *     request's server-made ids are) inserted in the order the request
 *     writes them, and the same keys shuffled, in ns per key;
 * It prints a table and the ratios the design sets bars for; a missed bar
 * is printed as MISSED, never hidden. It is a measurement, not a test: it
 * always exits 0 unless something fails outright.
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv/kv.h"
#include "kv/wset.h"

#define REPS 3
#define NKEYS 1000000
#define LOAD_TXN_KEYS 5000
#define GETS_PER_TXN 1000

static double run_secs = 2.0; /* per measured run */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "bench_kv: %s: %s (%d)\n", what, dv_err_name(rc), rc);
  exit(1);
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
  fclose(f);
  return kb;
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median3(double v[REPS]) {
  double s[REPS];
  memcpy(s, v, sizeof s);
  qsort(s, REPS, sizeof *s, dcmp);
  return s[REPS / 2];
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb; (void)flag; (void)f;
  return remove(p);
}

static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* ---- false conflicts of a coarsened history ----------------------------------- */

typedef struct fc {
  kv_db *db;
  atomic_int *stop;
  uint64_t rng;
  long commits, refused;
  int slow_ms; /* between the read and the commit */
} fc;

static void *fc_loop(void *arg) {
  fc *w = arg;
  while (!atomic_load(w->stop)) {
    char k[32];
    int kl = snprintf(k, sizeof k, "fc/%07d", (int)(rnd(&w->rng) % 1000000));
    kv_txn *t;
    if (kv_txn_begin(w->db, &t)) die("kv_txn_begin", DV_ENOMEM);
    const uint8_t *v;
    size_t vl;
    int found, rc = kv_get(t, k, (size_t)kl, 0, &v, &vl, &found);
    if (!rc) rc = kv_set(t, k, (size_t)kl, "0123456789abcdef", 16);
    if (!rc && w->slow_ms) {
      struct timespec ts = {0, w->slow_ms * 1000000L};
      nanosleep(&ts, NULL);
    }
    if (!rc) rc = kv_commit(t);
    if (rc == DV_ENOT_COMMITTED) w->refused++;
    else if (rc) die("commit", rc);
    else w->commits++;
    kv_txn_destroy(t);
  }
  return NULL;
}

/* One run: refused per 1,000 commits of the fast threads (out[0]) and of
 * the slow ones (out[1], which commit 500 ms after their read, so their
 * check reaches older, coarsened entries); *hist_peak the history's peak. */
static void false_conflicts(const char *dir, size_t memory_mb, long *hist_peak, long *commits, double out[2]) {
  kv_rocks_opts o = {.create_if_missing = 1, .memory_mb = memory_mb};
  kv_db *db;
  int rc = kv_open_rocks(dir, &o, &db);
  if (rc) die("kv_open_rocks", rc);
  atomic_int stop = 0;
  fc w[16];
  pthread_t th[16];
  for (int i = 0; i < 16; i++) {
    w[i] = (fc){db, &stop, 77 + (uint64_t)i * 1000003, 0, 0, i < 8 ? 0 : 500};
    pthread_create(&th[i], NULL, fc_loop, &w[i]);
  }
  *hist_peak = 0;
  double t0 = now_s();
  kv_txn *reader = NULL;
  double held = 0;
  while (now_s() - t0 < run_secs * 2) {
    if (!reader || now_s() - held > 4.0) { /* a long reader: its snapshot keeps the history */
      if (reader) kv_txn_destroy(reader);
      if (kv_txn_begin(db, &reader)) die("kv_txn_begin", DV_ENOMEM);
      int64_t rv;
      if ((rc = kv_get_read_version(reader, &rv))) die("read version", rc);
      held = now_s();
    }
    kv_info in;
    kv_db_info(db, &in);
    if (in.history_bytes > *hist_peak) *hist_peak = in.history_bytes;
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
  atomic_store(&stop, 1);
  long c[2] = {0, 0}, f[2] = {0, 0};
  for (int i = 0; i < 16; i++) {
    pthread_join(th[i], NULL);
    c[i >= 8] += w[i].commits;
    f[i >= 8] += w[i].refused;
  }
  if (reader) kv_txn_destroy(reader);
  kv_close(db);
  commits[0] = c[0], commits[1] = c[1];
  for (int k = 0; k < 2; k++) out[k] = c[k] ? 1000.0 * (double)f[k] / (double)(c[k] + f[k]) : 0;
}

/* ---- commit rate ---------------------------------------------------------- */

typedef struct cw {
  kv_db *db;           /* store */
  int tid;             /* thread index */
  atomic_int *stop;    /* 1 when time is up */
  long commits;        /* committed transactions */
  long seq;            /* next key number */
  int run;             /* run number, for distinct keys */
} cw;

static int put_fn(kv_txn *t, void *arg) {
  cw *w = arg;
  char k[48];
  static const char val[100] = "a one-key transaction's value, about a hundred bytes long ........................";
  int kl = snprintf(k, sizeof k, "commit/%d/%03d/%010ld", w->run, w->tid, w->seq);
  return kv_set(t, k, (size_t)kl, val, sizeof val);
}

static void *commit_loop(void *arg) {
  cw *w = arg;
  while (!atomic_load(w->stop)) {
    int rc = kv_run(w->db, put_fn, w);
    if (rc) die("kv_run", rc);
    w->seq++;
    w->commits++;
  }
  return NULL;
}

static double commit_rate(kv_db *db, int threads, int run) {
  atomic_int stop = 0;
  cw *w = calloc((size_t)threads, sizeof *w);
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  for (int i = 0; i < threads; i++) {
    w[i].db = db;
    w[i].tid = i;
    w[i].stop = &stop;
    w[i].run = run;
  }
  double t0 = now_s();
  for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, commit_loop, &w[i]);
  struct timespec ts = {(time_t)run_secs, (long)((run_secs - (double)(time_t)run_secs) * 1e9)};
  nanosleep(&ts, NULL);
  atomic_store(&stop, 1);
  long total = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(th[i], NULL);
    total += w[i].commits;
  }
  double el = now_s() - t0;
  free(w);
  free(th);
  return (double)total / el;
}

/* RocksDB alone: synced single puts, one thread. */
static double raw_put_rate(const char *dir) {
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  char *err = NULL;
  rocksdb_t *db = rocksdb_open(o, dir, &err);
  if (err) {
    fprintf(stderr, "bench_kv: rocksdb_open: %s\n", err);
    exit(1);
  }
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_writeoptions_set_sync(wo, 1);
  static const char val[100] = "raw";
  long n = 0;
  double t0 = now_s(), el;
  while ((el = now_s() - t0) < run_secs) {
    char k[48];
    int kl = snprintf(k, sizeof k, "raw/%010ld", n);
    rocksdb_put(db, wo, k, (size_t)kl, val, sizeof val, &err);
    if (err) {
      fprintf(stderr, "bench_kv: rocksdb_put: %s\n", err);
      exit(1);
    }
    n++;
  }
  rocksdb_writeoptions_destroy(wo);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
  return (double)n / el;
}

/* ---- the 1M-key store ------------------------------------------------------- */

/* A tuple-like key: ("divan", 1, db, "d", docid, NotDeleted, revpos, field)
 * — 20-40 bytes, long shared prefixes, i in [0, NKEYS). */
static size_t make_key(uint8_t *out, long i) {
  static const uint8_t prefix[] = {0x02, 'd', 'i', 'v', 'a', 'n', 0x00, 0x15, 0x01, 0x15};
  size_t n = 0;
  memcpy(out, prefix, sizeof prefix);
  n += sizeof prefix;
  out[n++] = (uint8_t)(1 + i / 250000); /* database prefix */
  out[n++] = 0x02;
  out[n++] = 'd';
  out[n++] = 0x00;
  out[n++] = 0x02;
  long doc = i / 10;
  n += (size_t)sprintf((char *)out + n, "doc-%07ld", doc);
  out[n++] = 0x00;
  out[n++] = 0x27; /* live */
  out[n++] = 0x15;
  out[n++] = (uint8_t)(1 + doc % 3);
  out[n++] = 0x02;
  static const char *fields[] = {"a", "name", "address", "tags", "x", "created_at", "y", "profile", "z", "id"};
  const char *f = fields[i % 10];
  size_t fl = strlen(f);
  memcpy(out + n, f, fl);
  n += fl;
  out[n++] = 0x00;
  return n;
}

static void load(kv_db *db) {
  kv_txn *t;
  int rc = kv_txn_begin(db, &t);
  if (rc) die("kv_txn_begin", rc);
  uint8_t k[64], v[100];
  for (long i = 0; i < NKEYS; i++) {
    size_t kl = make_key(k, i);
    for (int j = 0; j < 100; j++) v[j] = (uint8_t)(i * 7 + j);
    rc = kv_set(t, k, kl, v, sizeof v);
    if (rc) die("kv_set", rc);
    if ((i + 1) % LOAD_TXN_KEYS == 0 || i + 1 == NKEYS) {
      rc = kv_commit(t);
      if (rc) die("load commit", rc);
      kv_txn_reset(t);
    }
  }
  kv_txn_destroy(t);
}

static double get_rate(kv_db *db, uint64_t seed, int flags) {
  kv_txn *t;
  int rc = kv_txn_begin(db, &t);
  if (rc) die("kv_txn_begin", rc);
  uint8_t k[64];
  long n = 0, miss = 0;
  double t0 = now_s(), el;
  while ((el = now_s() - t0) < run_secs) {
    for (int i = 0; i < GETS_PER_TXN; i++) {
      size_t kl = make_key(k, (long)(rnd(&seed) % NKEYS));
      const uint8_t *v;
      size_t vl;
      int found;
      rc = kv_get(t, k, kl, flags, &v, &vl, &found);
      if (rc) die("kv_get", rc);
      miss += !found;
    }
    n += GETS_PER_TXN;
    kv_txn_reset(t);
  }
  kv_txn_destroy(t);
  if (miss) fprintf(stderr, "bench_kv: %ld gets missed\n", miss);
  return (double)n / el;
}

static double scan_rate(kv_db *db) {
  kv_txn *t;
  kv_iter *it;
  kv_pair p;
  int rc = kv_txn_begin(db, &t);
  if (rc) die("kv_txn_begin", rc);
  double t0 = now_s();
  /* Every key of the store lies under the tuple prefix ("divan",). */
  rc = kv_iter_begin(t, "\x02" "divan\x00", 7, "\x02" "divan\x01", 7, 0, 0, &it);
  if (rc) die("kv_iter_begin", rc);
  long n = 0;
  size_t bytes = 0;
  while ((rc = kv_iter_next(it, &p)) == 1) {
    n++;
    bytes += p.key_len + p.val_len;
  }
  if (rc) die("kv_iter_next", rc);
  kv_iter_free(it);
  double el = now_s() - t0;
  kv_txn_destroy(t);
  if (n != NKEYS) fprintf(stderr, "bench_kv: scan saw %ld keys, want %d\n", n, NKEYS);
  (void)bytes;
  return (double)n / el;
}

/* RocksDB alone: random gets on the compacted files, with the engine's
 * table options (256 MB block cache, 10-bit bloom filter). */
static double raw_get_rate(const char *dir, uint64_t seed) {
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_block_based_table_options_t *bbto = rocksdb_block_based_options_create();
  rocksdb_cache_t *cache = rocksdb_cache_create_lru(256 << 20);
  rocksdb_block_based_options_set_block_cache(bbto, cache);
  rocksdb_block_based_options_set_filter_policy(bbto, rocksdb_filterpolicy_create_bloom(10));
  rocksdb_options_set_block_based_table_factory(o, bbto);
  char *err = NULL;
  rocksdb_t *db = rocksdb_open(o, dir, &err);
  if (err) {
    fprintf(stderr, "bench_kv: rocksdb_open %s: %s\n", dir, err);
    exit(1);
  }
  rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
  uint8_t k[64];
  long n = 0, miss = 0;
  double t0 = now_s(), el;
  while ((el = now_s() - t0) < run_secs) {
    for (int i = 0; i < GETS_PER_TXN; i++) {
      size_t kl = make_key(k, (long)(rnd(&seed) % NKEYS));
      rocksdb_pinnableslice_t *ps = rocksdb_get_pinned(db, ro, (const char *)k, kl, &err);
      if (err) {
        fprintf(stderr, "bench_kv: rocksdb_get: %s\n", err);
        exit(1);
      }
      miss += !ps;
      rocksdb_pinnableslice_destroy(ps);
    }
    n += GETS_PER_TXN;
  }
  if (miss) fprintf(stderr, "bench_kv: %ld raw gets missed\n", miss);
  rocksdb_readoptions_destroy(ro);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
  rocksdb_block_based_options_destroy(bbto);
  rocksdb_cache_destroy(cache);
  return (double)n / el;
}

static void row(const char *what, double v[REPS], const char *unit) {
  printf("  %-44s %12.0f %-8s (runs: %.0f, %.0f, %.0f)\n", what, median3(v), unit, v[0], v[1], v[2]);
}

/* ---- the write set ----------------------------------------------------------- */

#define WS_DOCS 1000
#define WS_KEYS (WS_DOCS * 14)

/* Key j of a _bulk_docs transaction's writes: (db prefix, "d"|"r"|"c", …). */
static size_t ws_key(uint8_t *o, int j) {
  int doc = j / 14, sub = j % 14;
  size_t n = (size_t)snprintf((char *)o, 32, "\x02" "divan\x01\x15\x01\x15\x07\x02%c\x01", sub < 11 ? 'd' : sub < 13 ? 'r' : 'c');
  if (sub == 13) return n + (size_t)snprintf((char *)o + n, 32, "\x33%08x%02x", doc, 0);
  n += (size_t)snprintf((char *)o + n, 64, "\x02" "3f1e9a0c4b7d2e8f1a6c3b9d5e%06x\x01", 0x100 + doc * 0x7ff);
  return n + (size_t)snprintf((char *)o + n, 32, "\x02" "f%02d\x01", sub < 11 ? sub : sub - 11);
}

/* ns per key to fill a write set with the keys in order[], 20 fills. */
static double ws_fill(uint8_t (*keys)[96], const size_t *kls, const int *order) {
  ws w;
  if (ws_init(&w)) die("ws_init", DV_ENOMEM);
  double t0 = now_s();
  for (int f = 0; f < 20; f++) {
    ws_reset(&w);
    for (int j = 0; j < WS_KEYS; j++)
      if (ws_set(&w, keys[order[j]], kls[order[j]], (const uint8_t *)"value", 5)) die("ws_set", DV_ENOMEM);
  }
  double ns = (now_s() - t0) * 1e9 / (20.0 * WS_KEYS);
  ws_free(&w);
  return ns;
}

static void ws_bench(void) {
  static uint8_t keys[WS_KEYS][96];
  static size_t kls[WS_KEYS];
  static int inorder[WS_KEYS], shuffled[WS_KEYS];
  uint64_t seed = 42;
  for (int j = 0; j < WS_KEYS; j++) kls[j] = ws_key(keys[j], j), inorder[j] = shuffled[j] = j;
  for (int j = WS_KEYS - 1; j > 0; j--) {
    int i = (int)(rnd(&seed) % (uint64_t)(j + 1)), t = shuffled[i];
    shuffled[i] = shuffled[j], shuffled[j] = t;
  }
  double a[REPS], b[REPS];
  for (int r = 0; r < REPS; r++) a[r] = ws_fill(keys, kls, inorder), b[r] = ws_fill(keys, kls, shuffled);
  printf("\nwrite set: the %d keys of a %d-document _bulk_docs\n", WS_KEYS, WS_DOCS);
  row("ns per key, in the request's order", a, "ns");
  row("ns per key, shuffled", b, "ns");
}

/* ---- main ---------------------------------------------------------------- */

static void bar(const char *what, double value, double want, const char *fmt) {
  printf("  %-44s ", what);
  printf(fmt, value);
  printf("   bar ");
  printf(fmt, want);
  printf("   %s\n", value >= want ? "met" : "MISSED");
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) run_secs = atof(argv[1]);
  if (run_secs <= 0) run_secs = 2.0;
  const char *tmp = getenv("TMPDIR");
  char base[256];
  snprintf(base, sizeof base, "%s/divan-bench-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(base)) {
    perror("mkdtemp");
    return 1;
  }
  char dcommit[300], draw[300], dload[300];
  snprintf(dcommit, sizeof dcommit, "%s/commit", base);
  snprintf(draw, sizeof draw, "%s/raw", base);
  snprintf(dload, sizeof dload, "%s/load", base);
  double t_start = now_s();

  printf("bench_kv: %d runs of %.1f s each, median shown; store under %s\n", REPS, run_secs, base);
  const char *only = getenv("BENCH_KV_ONLY"); /* "history": only the conflict history's section */
  int all = !only || strcmp(only, "history");
  if (!all) goto history;
  static const int nthreads[] = {1, 8, 64};
  double commits[3][REPS], raw[REPS], ratio[REPS];
  kv_db *db;
  int rc = kv_open_rocks(dcommit, NULL, &db);
  if (rc) die("kv_open_rocks", rc);
  /* The peer runs right after each kv run, interleaved: this disk's fsync
   * rate drifts by 2x over a minute, so runs far apart in time would
   * compare the disk with itself rather than kv with RocksDB. */
  for (int r = 0; r < REPS; r++) {
    char d[320];
    snprintf(d, sizeof d, "%s-%d", draw, r);
    commits[0][r] = commit_rate(db, nthreads[0], r);
    raw[r] = raw_put_rate(d);
    ratio[r] = commits[0][r] / raw[r];
    for (int c = 1; c < 3; c++) commits[c][r] = commit_rate(db, nthreads[c], r);
  }
  kv_close(db);

  printf("\ndurable commits (1-key transactions, kv_run, synced group commit)\n");
  row("kv commits/s, 1 committer thread", commits[0], "/s");
  row("kv commits/s, 8 committer threads", commits[1], "/s");
  row("kv commits/s, 64 committer threads", commits[2], "/s");
  row("rocksdb_put sync=1, 1 thread (peer)", raw, "/s");
  ws_bench();

  /* The 1M-key store. */
  rc = kv_open_rocks(dload, NULL, &db);
  if (rc) die("kv_open_rocks", rc);
  double t0 = now_s();
  load(db);
  double load_s = now_s() - t0;
  long rss_loaded = rss_kb();
  double gets[REPS], scans[REPS], gets_c[REPS], scans_c[REPS], gets_s[REPS], raw_gets[REPS];
  for (int r = 0; r < REPS; r++) gets[r] = get_rate(db, 1000 + (uint64_t)r, 0);
  for (int r = 0; r < REPS; r++) scans[r] = scan_rate(db);
  long rss_read = rss_kb();
  t0 = now_s();
  rc = kv_compact(db);
  if (rc) die("kv_compact", rc);
  double compact_s = now_s() - t0;
  for (int r = 0; r < REPS; r++) gets_c[r] = get_rate(db, 2000 + (uint64_t)r, 0);
  for (int r = 0; r < REPS; r++) gets_s[r] = get_rate(db, 3000 + (uint64_t)r, KV_SNAPSHOT);
  for (int r = 0; r < REPS; r++) scans_c[r] = scan_rate(db);
  long rss_after = rss_kb();
  kv_close(db);
  for (int r = 0; r < REPS; r++) raw_gets[r] = raw_get_rate(dload, 4000 + (uint64_t)r);

  printf("\nstore of %d keys (20-40 byte tuple-like keys, 100-byte values)\n", NKEYS);
  printf("  %-44s %12.1f s    (%.0f keys/s, %d-key transactions)\n", "load", load_s, NKEYS / load_s,
         LOAD_TXN_KEYS);
  row("random gets/s, 1 thread, as loaded", gets, "/s");
  row("scan keys/s, 1 thread, as loaded", scans, "/s");
  printf("  %-44s %12.1f s\n", "kv_compact", compact_s);
  row("random gets/s, 1 thread, compacted", gets_c, "/s");
  row("scan keys/s, 1 thread, compacted", scans_c, "/s");
  row("random snapshot gets/s, compacted", gets_s, "/s");
  row("rocksdb_get/s on the same files (peer)", raw_gets, "/s");
  printf("  %-44s %12ld MB\n", "RSS after loading", rss_loaded / 1024);
  printf("  %-44s %12ld MB\n", "RSS after reading (before compaction)", rss_read / 1024);
  printf("  %-44s %12ld MB\n", "RSS after compaction and reading", rss_after / 1024);

history:
  printf("\nconflict history: 8 fast and 8 slow (500 ms to commit) threads of random read-modify-writes on 1,000,000 keys,"
         " a 4 s reader holding a snapshot\n");
  static const size_t budgets[] = {KV_ROCKS_MEMORY_MB, KV_ROCKS_MEMORY_MIN_MB};
  for (int b = 0; b < 2; b++) {
    char d[320];
    snprintf(d, sizeof d, "%s/fc-%d", base, b);
    long peak, c[2];
    double per[2];
    false_conflicts(d, budgets[b], &peak, c, per);
    /* chance meetings: a slow transaction's key written by one of the
     * commits of its 500 ms, out of 1,000,000 keys */
    double chance = 1000.0 * ((double)c[0] / (run_secs * 2)) * 0.5 / 1e6;
    printf("  memory budget %3zu MiB (history %4zu KiB, peak %5ld KiB): refused per 1,000 attempts: fast %.2f (%ld "
           "commits), slow %.2f (%ld commits; %.2f expected from true conflicts)\n",
           budgets[b], (budgets[b] << 10) / 16, peak >> 10, per[0], c[0], per[1], c[1], chance);
  }

  if (!all) {
    nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
  }
  printf("\nbars\n");
  bar("64-committer / 1-committer commit rate", median3(commits[2]) / median3(commits[0]), 10.0, "%8.2fx");
  bar("1-committer rate / raw synced put rate", median3(ratio), 0.8, "%8.2fx"); /* median of paired runs */
  bar("random gets/s (as loaded)", median3(gets), 300000, "%8.0f");
  bar("random gets/s (compacted)", median3(gets_c), 300000, "%8.0f");
  bar("scan keys/s (as loaded)", median3(scans), 2000000, "%8.0f");
  bar("scan keys/s (compacted)", median3(scans_c), 2000000, "%8.0f");
  printf("\n(total %.0f s)\n", now_s() - t_start);

  nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}
