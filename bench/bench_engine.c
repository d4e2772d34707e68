/* bench_engine.c — the engine's own limit for the exploded layout: the KVs
 * a _bulk_docs wrote, written again through kv.h directly.
 *
 *   build/<cc>/bench/bench_engine DATA DB [DOCS_PER_TXN] [--memory-mb N] [--sorted] [--threads N]
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
 *      synced commits; the memory budget --memory-mb, what the server's
 *      memory_limit left its store, or the default), write them back in
 *      transactions of DOCS_PER_TXN (1,000) documents, in the order the
 *      documents were written (their changes rows'), each document's KVs
 *      together — its body ("d"), its revisions ("r") and its changes row
 *      ("c") — one transaction at a time on one thread, as one
 *      connection's _bulk_docs commits do; the database's own KVs
 *      (counters, update_seq) go with the last. Every write a plain kv_set
 *      (the changes rows' versionstamps were already made: writing 10
 *      fixed bytes costs the committer no more than stamping);
 *   3. wait until RocksDB owes nothing for them (no flush or compaction
 *      running or pending): the sustained rate counts the compaction the
 *      writes caused, as bench.js counts bulk1's (the rate until the last
 *      commit alone leaves it to after the clock stops, and a faster
 *      writer leaves more of it);
 *   4. print `ENGINEJSON {"docs":…, "kvs":…, "bytes":…, "secs":…,
 *      "docs_per_s":…, "settle_secs":…, "sustained_docs_per_s":…}` for
 *      bench.js, and a line for people.
 *
 * With --sorted, step 2 writes the KVs in key order instead, in
 * transactions of as many KVs: what the engine's write path does when
 * every flush is a run of keys after the last one, which RocksDB moves
 * down its levels without rewriting. That is not the documents' order —
 * a transaction of the exploded layout writes into three subspaces, so
 * every level-0 file spans all of them and compactions rewrite — and
 * bench.js prints it only beside the limit, to show what compaction
 * costs. (It was the limit before; on 265,000 documents one run measured
 * 64.3k docs/s sorted against 53.2k in the documents' order, until the
 * last commit.)
 *
 * With --threads N, N threads take the transactions in turn (the next one
 * not yet taken), each its own kv_run, as N connections' _bulk_docs
 * commits do: the engine's limit for the 4-connection workload, whose bar
 * is set against pouchdb-server, not against this; bench.js prints it
 * beside that bar, so a run shows whether the bar is within the engine's
 * reach on the machine at all.
 *
 * What it leaves out on purpose: JSON, HTTP, revision trees, reading the
 * documents' current state — the whole HTTP, JSON and store path, which is
 * what the bar (`_bulk_docs` ≥ 80 % of this) weighs. */
#define _GNU_SOURCE
#include <ftw.h>
#include <pthread.h>
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

/* Seconds until RocksDB owes nothing for what was written: no flush or
 * compaction running and none pending, seen twice 50 ms apart (at most
 * 300 s). The same test bench.js applies to the server after bulk1, through
 * its _stats, so both sustained rates count the compaction their writes
 * caused. */
static double settle(kv_db *kv) {
  double t0 = now_s();
  for (int quiet = 0; quiet < 2 && now_s() - t0 < 300;) {
    kv_info in;
    kv_db_info(kv, &in);
    quiet = in.running_compactions == 0 && in.running_flushes == 0 && in.pending_compaction_bytes == 0 ? quiet + 1 : 0;
    if (quiet < 2) usleep(50000);
  }
  return now_s() - t0;
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
  const size_t *order; /* KV indexes in write order */
  size_t from, to;     /* this transaction's slice of order */
} wr;

static int write_fn(kv_txn *t, void *arg) {
  const wr *w = arg;
  for (size_t i = w->from; i < w->to; i++) {
    const kvp *p = &w->l->v[w->order[i]];
    const uint8_t *k = w->l->bytes.p + p->off;
    int rc = kv_set(t, k, p->kl, k + p->kl, p->vl);
    if (rc) return rc;
  }
  return 0;
}

/* N writers taking the transactions in turn. */
typedef struct pool {
  kv_db *kv;
  const load *l;
  const size_t *order, *ends;
  size_t groups, next; /* next: the next group not yet taken (atomic) */
  int rc;              /* the first failure, or 0 */
} pool;

static void *pool_main(void *arg) {
  pool *p = arg;
  for (;;) {
    size_t g = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
    if (g >= p->groups) break;
    wr x = {p->l, p->order, g ? p->ends[g - 1] : 0, p->ends[g]};
    int rc = kv_run(p->kv, write_fn, &x);
    if (rc) {
      int zero = 0;
      __atomic_compare_exchange_n(&p->rc, &zero, rc, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
      break;
    }
  }
  return NULL;
}

/* ---- the documents' order ------------------------------------------------ */

static const uint8_t *kv_key(const load *l, size_t i) { return l->bytes.p + l->v[i].off; }

/* The subspace letter of KV i (keys under the database prefix of plen
 * bytes: (P, sub, …)), or 0. */
static char kv_sub(const load *l, size_t i, size_t plen) {
  const kvp *p = &l->v[i];
  const uint8_t *k = kv_key(l, i);
  return p->kl >= plen + 3 && k[plen] == 0x02 && k[plen + 2] == 0 ? (char)k[plen + 1] : 0;
}

/* First index in idx[0..n) whose key's DocID element (at offset off) is
 * not below the encoded DocID id[0..il). */
static size_t lower(const load *l, const size_t *idx, size_t n, size_t off, const uint8_t *id, size_t il) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t m = lo + (hi - lo) / 2;
    const kvp *p = &l->v[idx[m]];
    size_t kl = p->kl - off, c = kl < il ? kl : il;
    int r = memcmp(kv_key(l, idx[m]) + off, id, c);
    if (r < 0 || (r == 0 && kl < il)) lo = m + 1;
    else hi = m;
  }
  return lo;
}

static int has_id(const load *l, size_t i, size_t off, const uint8_t *id, size_t il) {
  return l->v[i].kl >= off + il && !memcmp(kv_key(l, i) + off, id, il);
}

/* order[] = every KV index, document by document in changes order (the
 * document's "d" KVs, "r" KVs, then its changes row), the rest at the end;
 * ends[k] = where document group k (per_txn documents) ends. Returns the
 * number of groups, or 0 when the changes rows cannot be read. */
static size_t doc_order(const load *l, size_t plen, long per_txn, size_t *order, size_t *ends) {
  size_t nd = 0, nr = 0, nc = 0;
  size_t *d = malloc(l->n * sizeof *d), *r = malloc(l->n * sizeof *r), *c = malloc(l->n * sizeof *c);
  uint8_t *used = calloc(l->n, 1);
  if (!d || !r || !c || !used) return 0;
  for (size_t i = 0; i < l->n; i++) {
    char sub = kv_sub(l, i, plen);
    if (sub == 'd') d[nd++] = i;
    else if (sub == 'r') r[nr++] = i;
    else if (sub == 'c') c[nc++] = i;
  }
  size_t n = 0, groups = 0, off = plen + 3;
  for (size_t j = 0; j < nc; j++) {
    const kvp *p = &l->v[c[j]];
    tup_r tr;
    tup_item it;
    tup_r_init(&tr, kv_key(l, c[j]) + p->kl, p->vl); /* (0, DocID, …) */
    if (tup_next(&tr, &it) != 1 || tup_next(&tr, &it) != 1 || it.type != TUP_STR) return 0;
    for (size_t k = lower(l, d, nd, off, it.raw, it.raw_len); k < nd && has_id(l, d[k], off, it.raw, it.raw_len); k++) {
      if (used[d[k]]) return 0; /* two changes rows of one document: not a database check accepts */
      order[n++] = d[k], used[d[k]] = 1;
    }
    for (size_t k = lower(l, r, nr, off, it.raw, it.raw_len); k < nr && has_id(l, r[k], off, it.raw, it.raw_len); k++) {
      if (used[r[k]]) return 0;
      order[n++] = r[k], used[r[k]] = 1;
    }
    order[n++] = c[j], used[c[j]] = 1;
    if ((long)((j + 1) % (size_t)per_txn) == 0) ends[groups++] = n;
  }
  for (size_t i = 0; i < l->n; i++)
    if (!used[i]) order[n++] = i;
  if (groups) ends[groups - 1] = n; /* the database's own KVs go with the last documents */
  else ends[groups++] = n;
  free(d), free(r), free(c), free(used);
  return n == l->n ? groups : 0; /* every KV once */
}

int main(int argc, char **argv) {
  if (argc < 3) {
    printf("bench_engine: run by bench/http/bench.js on the data of its bulk1 workload "
           "(bench_engine DATA DB [DOCS_PER_TXN])\n");
    return 0;
  }
  int sorted = 0, threads = 1;
  size_t memory_mb = 0;
  for (int more = 1; more && argc > 3;) {
    if (!strcmp(argv[argc - 1], "--sorted")) sorted = 1, argc--;
    else if (argc > 4 && !strcmp(argv[argc - 2], "--threads")) threads = atoi(argv[argc - 1]), argc -= 2;
    else if (argc > 4 && !strcmp(argv[argc - 2], "--memory-mb")) memory_mb = (size_t)atol(argv[argc - 1]), argc -= 2;
    else more = 0;
  }
  if (argc < 3 || threads < 1 || threads > 64) return 2;
  const char *data = argv[1], *dbname = argv[2];
  long per_txn = argc > 3 ? atol(argv[3]) : 1000;
  if (per_txn < 1) per_txn = 1000;
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
  kv_rocks_opts wo = {.create_if_missing = 1, .memory_mb = memory_mb};
  if ((rc = kv_open_rocks(dir, &wo, &kv))) die(dir, rc);
  size_t *order = malloc(l.n * sizeof *order), *ends = malloc((l.n + 1) * sizeof *ends);
  if (!order || !ends) die("order", DV_ENOMEM);
  size_t groups;
  if (sorted) { /* key order, as many KVs a transaction */
    size_t per = (size_t)((double)l.n * (double)per_txn / (double)docs + 0.5);
    if (per < 1) per = 1;
    groups = 0;
    for (size_t i = 0; i < l.n; i++) order[i] = i;
    for (size_t i = 0; i < l.n; i += per) ends[groups++] = i + per < l.n ? i + per : l.n;
  } else if (!(groups = doc_order(&l, b.len, per_txn, order, ends))) {
    fprintf(stderr, "bench_engine: cannot read %s's changes rows\n", dbname);
    return 1;
  }
  double t0 = now_s();
  size_t txns = groups;
  pool p = {kv, &l, order, ends, groups, 0, 0};
  pthread_t tid[64];
  for (int i = 1; i < threads; i++)
    if (pthread_create(&tid[i], NULL, pool_main, &p)) die("pthread_create", DV_ENOMEM);
  pool_main(&p);
  for (int i = 1; i < threads; i++) pthread_join(tid[i], NULL);
  if (p.rc) die("kv_run", p.rc);
  double secs = now_s() - t0, owed = settle(kv);
  size_t per = l.n / txns;
  kv_close(kv);
  nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  printf("engine %s: %lld docs (%zu KVs, %zu bytes) in %zu transactions of ~%zu KVs (%ld docs%s) on %d thread%s: "
         "%.2f s, %.0f docs/s; its flushes and compactions settled %.2f s later: %.0f docs/s sustained\n",
         sorted ? "write path, keys sorted" : "limit", (long long)docs, l.n, l.bytes.len, txns, per, per_txn,
         sorted ? "' worth, in key order" : ", in their order", threads, threads > 1 ? "s" : "", secs, (double)docs / secs, owed,
         (double)docs / (secs + owed));
  printf("ENGINEJSON {\"docs\":%lld,\"kvs\":%zu,\"bytes\":%zu,\"txns\":%zu,\"secs\":%.4f,\"docs_per_s\":%.1f,"
         "\"settle_secs\":%.4f,\"sustained_docs_per_s\":%.1f,\"threads\":%d,\"sorted\":%s}\n",
         (long long)docs, l.n, l.bytes.len, txns, secs, (double)docs / secs, owed, (double)docs / (secs + owed),
         threads, sorted ? "true" : "false");
  free(order);
  free(ends);
  free(l.v);
  buf_free(&l.bytes);
  buf_free(&b);
  buf_free(&e);
  return 0;
}
