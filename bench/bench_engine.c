/* bench_engine.c — the engine's own limit for the exploded layout: the KVs
 * a _bulk_docs wrote, written again through kv.h directly.
 *
 *   build/<cc>/bench/bench_engine DATA DB [DOCS_PER_TXN]
 *   build/<cc>/bench/bench_engine            (make bench: a note, exit 0)
 *
 * bench/http/bench.js runs it after its `bulk1` workload (1,000-document
 * _bulk_docs on one connection into database `bulk1`), on the stopped
 * server's data directory, so both numbers are of the same documents:
 *
 *   1. open DATA (read-only use), find DB's prefix (store_db_info), read
 *      every KV under (R, 1, prefix) into memory: the documents' rows, their
 *      changes rows, counters, everything the HTTP path wrote for them;
 *   2. in a fresh store (a temp directory next to DATA, default options:
 *      synced commits, the default memory budget), write them back in key
 *      order, in transactions of the KVs of DOCS_PER_TXN (1,000) documents
 *      (total KVs × 1,000 / doc_count each), one transaction at a time on
 *      one thread, as one connection's _bulk_docs commits do; every write a
 *      plain kv_set (the changes rows' versionstamps were already made:
 *      writing 10 fixed bytes costs the committer no more than stamping);
 *   3. print `ENGINEJSON {"docs":…, "kvs":…, "bytes":…, "secs":…,
 *      "docs_per_s":…}` for bench.js, and a line for people.
 *
 * What it leaves out on purpose: JSON, HTTP, revision trees, reading the
 * documents' current state — the whole HTTP, JSON and store path, which is
 * what the bar (`_bulk_docs` ≥ 80 % of this) weighs. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv/kv.h"
#include "store/store.h"
#include "tuple/tuple.h"
#include "util/buf.h"

typedef struct kvp {
  uint32_t kl, vl;
  size_t off; /* key then value, in the bytes buffer */
} kvp;

typedef struct load {
  dv_buf bytes;
  kvp *v;
  size_t n, cap;
} load;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "bench_engine: %s: %s\n", what, dv_strerror(rc));
  exit(1);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

/* Read [b, e) in 5,000-key transactions, resuming after the last key. */
static int read_range(kv_db *kv, const uint8_t *b, size_t bl, const uint8_t *e, size_t el, load *out) {
  dv_buf from;
  buf_init(&from);
  buf_append(&from, b, bl);
  for (int more = 1; more;) {
    kv_txn *t;
    int rc = kv_txn_begin(kv, &t);
    if (rc) return rc;
    kv_iter *it = NULL;
    rc = kv_iter_begin(t, from.p, from.len, e, el, 5000, 0, &it);
    size_t got = 0;
    kv_pair pr;
    while (!rc && (rc = kv_iter_next(it, &pr)) == 1) {
      const uint8_t *k = pr.key, *v = pr.val;
      size_t kl = pr.key_len, vl = pr.val_len;
      rc = 0;
      if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 1 << 16;
        out->v = realloc(out->v, out->cap * sizeof *out->v);
        if (!out->v) return DV_ENOMEM;
      }
      out->v[out->n++] = (kvp){(uint32_t)kl, (uint32_t)vl, out->bytes.len};
      buf_append(&out->bytes, k, kl);
      buf_append(&out->bytes, v, vl);
      buf_reset(&from);
      buf_append(&from, k, kl);
      buf_putc(&from, 0); /* next read starts just after k */
      got++;
    }
    if (rc > 0) rc = 0;
    kv_iter_free(it);
    kv_txn_destroy(t);
    if (rc) return rc;
    if (buf_error(&out->bytes) || buf_error(&from)) return DV_ENOMEM;
    more = got == 5000;
  }
  buf_free(&from);
  return 0;
}

typedef struct wr {
  const load *l;
  size_t from, to;
} wr;

static int write_fn(kv_txn *t, void *arg) {
  const wr *w = arg;
  for (size_t i = w->from; i < w->to; i++) {
    const kvp *p = &w->l->v[i];
    const uint8_t *k = w->l->bytes.p + p->off;
    int rc = kv_set(t, k, p->kl, k + p->kl, p->vl);
    if (rc) return rc;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    printf("bench_engine: run by bench/http/bench.js on the data of its bulk1 workload "
           "(bench_engine DATA DB [DOCS_PER_TXN])\n");
    return 0;
  }
  const char *data = argv[1], *dbname = argv[2];
  long per_txn = argc > 3 ? atol(argv[3]) : 1000;
  kv_rocks_opts ro = {.create_if_missing = 0};
  kv_db *kv;
  int rc = kv_open_rocks(data, &ro, &kv);
  if (rc) die(data, rc);
  store *st;
  store_opts so = {0};
  if ((rc = store_open(kv, &so, &st))) die("store_open", rc);
  store_db *db;
  store_db_info in;
  if ((rc = store_db_open(st, dbname, &db))) die(dbname, rc);
  if ((rc = store_db_info_get(db, &in))) die("store_db_info_get", rc);
  store_db_close(db);
  store_close(st);
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  tup_w_init(&w, &b);
  tup_strz(&w, "divan");
  tup_int(&w, 1);
  tup_int(&w, in.prefix);
  buf_append(&e, b.p, b.len);
  buf_putc(&e, 0xff);
  load l = {0};
  buf_init(&l.bytes);
  if ((rc = read_range(kv, b.p, b.len, e.p, e.len, &l))) die("reading the database's keys", rc);
  kv_close(kv);
  int64_t docs = in.doc_count + in.doc_del_count;
  if (docs <= 0 || !l.n) {
    fprintf(stderr, "bench_engine: %s has no documents\n", dbname);
    return 1;
  }

  char dir[4200];
  snprintf(dir, sizeof dir, "%s.engine", data);
  nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  kv_rocks_opts wo = {.create_if_missing = 1};
  if ((rc = kv_open_rocks(dir, &wo, &kv))) die(dir, rc);
  size_t per = (size_t)((double)l.n * (double)per_txn / (double)docs + 0.5);
  if (per < 1) per = 1;
  double t0 = now_s();
  size_t txns = 0;
  for (size_t i = 0; i < l.n; i += per, txns++) {
    wr x = {&l, i, i + per < l.n ? i + per : l.n};
    if ((rc = kv_run(kv, write_fn, &x))) die("kv_run", rc);
  }
  double secs = now_s() - t0;
  kv_close(kv);
  nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  printf("engine limit: %lld docs (%zu KVs, %zu bytes) in %zu transactions of %zu KVs (%ld docs) on one thread: "
         "%.2f s, %.0f docs/s\n",
         (long long)docs, l.n, l.bytes.len, txns, per, per_txn, secs, (double)docs / secs);
  printf("ENGINEJSON {\"docs\":%lld,\"kvs\":%zu,\"bytes\":%zu,\"txns\":%zu,\"secs\":%.4f,\"docs_per_s\":%.1f}\n",
         (long long)docs, l.n, l.bytes.len, txns, secs, (double)docs / secs);
  free(l.v);
  buf_free(&l.bytes);
  buf_free(&b);
  buf_free(&e);
  return 0;
}
