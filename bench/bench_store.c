/* bench_store.c — what a document operation costs through the store, next
 * to the kv transactions it boils down to.
 *
 *   build/<cc>/bench/bench_store [seconds_per_run]      (make bench runs it)
 *   build/<cc>/bench/bench_store [seconds_per_run] writers   only the last part
 *
 * On a fresh store in a temporary directory (synced WAL, default options),
 * through store.h, with 1 thread and with 8 threads (each on its own
 * documents):
 *   - create: a new document of 10 JSON leaves (no parent);
 *   - update: extend the winner of one of those documents (its current rev
 *     as parent, a new body of the same shape);
 *   - read: store_doc_get of the winner of a random document.
 * For each: throughput (ops/s), latency p50/p99 (µs) and, from
 * store_read_stats, the revisions-subspace reads per operation (round trips
 * and KVs returned) — seed 000's cost profile: extend the winner = 1 KV,
 * create = one empty reverse range read.
 *
 * The peer, measured in the same run on the same kv store under another
 * prefix: a raw kv transaction per document that sets as many KVs as a
 * store create leaves behind (counted by scanning the kv before and after
 * the 1-thread create run), committed with one kv_commit (for updates it
 * first reads one key, as the store reads the winner); for reads, one
 * kv_get of one key per transaction, and a range read of as many keys as a
 * document has stored KVs. The ratio store/peer is printed for each. A
 * second create peer does a create's kv operations without the store (the
 * reverse range read, the sets, four atomic ADDs, a versionstamped changes
 * key and update_seq value), which tells the store's own cost from what
 * such read-write transactions cost the kv engine.
 * Then blocking vs asynchronous writes (store_update vs store_update_async,
 * issue 17): N writer "clients", each extending the winner of its own
 * document again and again — with the blocking API on N threads, and with
 * the asynchronous one from 2 threads holding all N updates in flight (a
 * client's done hands it back to its issuing thread, which starts its next
 * update), for N = 8 and 64. Updates per second for both and their ratio.
 * It is a measurement, not a test: it exits 0 unless something fails.
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json/json.h"
#include "kv/kv.h"
#include "store/store.h"
#include "util/arena.h"

#define MAXT 8
#define PEER_PREFIX "\x02peer\x00"

static double run_secs = 3.0; /* per measured run */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "bench_store: %s: %s (%d)\n", what, dv_err_name(rc), rc);
  exit(1);
}

static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb; (void)flag; (void)f;
  return remove(p);
}

/* ---- latencies ----------------------------------------------------------- */

typedef struct lat {
  double *v;        /* seconds per op */
  size_t n, cap;    /* used / allocated */
} lat;

static void lat_add(lat *l, double s) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 4096;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    if (!l->v) die("realloc", DV_ENOMEM);
  }
  l->v[l->n++] = s;
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct result {
  double ops_s;          /* throughput */
  double p50_us, p99_us; /* latency */
  double rt_op, kvs_op;  /* revisions reads per op (store runs) */
  long ops;              /* operations measured */
} result;

/* ---- workers ------------------------------------------------------------- */

enum { W_CREATE, W_UPDATE, W_READ, P_CREATE, P_UPDATE, P_GET, P_RANGE, P_MIX };

typedef struct doc_state {
  int64_t pos;           /* current winner pos */
  uint8_t h[16];         /* its hash */
} doc_state;

typedef struct worker {
  int kind;              /* W_* / P_* */
  int tid;               /* thread index */
  int nthreads;          /* threads in this run */
  store_db *db;          /* store runs */
  kv_db *kv;             /* peer runs */
  atomic_int *stop;      /* raised when time is up */
  doc_state *docs;       /* this thread's documents (create fills, update extends) */
  long ndocs, cap;       /* created / allocated */
  long all_docs[MAXT];   /* read runs: documents each thread created */
  int peer_kvs;          /* KVs per peer transaction */
  lat l;                 /* latencies */
  long ops;              /* completed */
  store_read_stats rs;   /* reads made by this thread in the run */
  uint64_t seed;         /* random reads */
  long peer_n;           /* peer docs written by this thread */
} worker;

static const char *body_fmt =
    "{\"name\":\"user %ld of thread %d\",\"age\":%ld,\"tags\":[\"alpha\",\"beta\",\"gamma\"],"
    "\"address\":{\"street\":\"%ld Long Street\",\"city\":\"Springfield\"},\"active\":true,"
    "\"score\":3.25,\"note\":null}";

static json_val *make_body(dv_arena *a, long n, int tid) {
  char text[512];
  int len = snprintf(text, sizeof text, body_fmt, n, tid, n % 90, n * 7);
  json_val *v = NULL;
  json_opts o = {0};
  o.flags = JSON_COPY;
  int rc = json_parse(a, text, (size_t)len, &o, &v, NULL);
  if (rc) die("json_parse", rc);
  return v;
}

static size_t doc_id(char *out, size_t cap, int tid, long n) {
  return (size_t)snprintf(out, cap, "bench-%d-%08ld", tid, n);
}

static void store_op(worker *w, dv_arena *a, long i) {
  char id[64];
  store_edit e;
  memset(&e, 0, sizeof e);
  if (w->kind == W_CREATE) {
    if (w->ndocs == w->cap) {
      w->cap = w->cap ? w->cap * 2 : 4096;
      w->docs = realloc(w->docs, (size_t)w->cap * sizeof *w->docs);
      if (!w->docs) die("realloc", DV_ENOMEM);
    }
    e.id_len = doc_id(id, sizeof id, w->tid, w->ndocs);
    e.id = id;
    e.body = make_body(a, w->ndocs, w->tid);
    int rc = store_update(w->db, NULL, &e, 1, 1);
    if (rc || e.rc) die("store_update create", rc ? rc : e.rc);
    doc_state *d = &w->docs[w->ndocs++];
    d->pos = e.rev.pos;
    memcpy(d->h, e.rev.h, 16);
  } else if (w->kind == W_UPDATE) {
    long k = i % w->ndocs;
    doc_state *d = &w->docs[k];
    e.id_len = doc_id(id, sizeof id, w->tid, k);
    e.id = id;
    e.body = make_body(a, k + i, w->tid);
    e.parent = (store_rev){d->pos, d->h, 16, 0};
    int rc = store_update(w->db, NULL, &e, 1, 1);
    if (rc || e.rc) die("store_update update", rc ? rc : e.rc);
    d->pos = e.rev.pos;
    memcpy(d->h, e.rev.h, 16);
  } else {
    int t;
    do t = (int)(rnd(&w->seed) % MAXT);
    while (!w->all_docs[t]);
    long k = (long)(rnd(&w->seed) % (uint64_t)w->all_docs[t]);
    size_t n = doc_id(id, sizeof id, t, k);
    json_val *doc;
    int rc = store_doc_get(w->db, id, n, NULL, 0, a, &doc);
    if (rc) die("store_doc_get", rc);
  }
}

static size_t peer_key(uint8_t *out, int tid, long doc, int k) {
  size_t n = sizeof PEER_PREFIX - 1;
  memcpy(out, PEER_PREFIX, n);
  n += (size_t)sprintf((char *)out + n, "\x02" "bench-%d-%08ld", tid, doc);
  out[n++] = 0;
  out[n++] = 0x15;
  out[n++] = (uint8_t)k;
  return n;
}

static void peer_op(worker *w, kv_txn *t, long i) {
  uint8_t key[96];
  static const char val[24] = "a tuple-encoded leaf...";
  int rc = 0;
  if (w->kind == P_MIX) { /* a create's kv operations, without the store */
    long doc = 1000000000L + w->peer_n++;
    size_t kl = peer_key(key, w->tid, doc, 0);
    uint8_t end[96];
    memcpy(end, key, kl - 1);
    end[kl - 1] = 0xff;
    kv_pair *p;
    int n, more;
    rc = kv_get_range(t, key, kl - 1, end, kl, 1, KV_REVERSE, &p, &n, &more);
    for (int k = 0; k < w->peer_kvs - 2 && !rc; k++) {
      kl = peer_key(key, w->tid, doc, k);
      rc = kv_set(t, key, kl, val, sizeof val);
    }
    static const uint8_t one[8] = {1};
    for (int c = 0; c < 4 && !rc; c++) {
      uint8_t ck[16];
      int cl = snprintf((char *)ck, sizeof ck, "\x02peer-c%d", c);
      rc = kv_atomic(t, KV_ADD, ck, (size_t)cl + 1, one, sizeof one);
    }
    if (!rc) { /* a changes row: versionstamped key; update_seq: versionstamped value */
      uint8_t vk[32] = "\x02peer-chg";
      uint32_t off = 10;
      memset(vk + 10, 0, 12);
      memcpy(vk + 22, &off, 4);
      rc = kv_set_versionstamped_key(t, vk, 26, val, sizeof val);
    }
    if (!rc) {
      uint8_t vv[16] = {0};
      uint32_t off = 0;
      memcpy(vv + 10, &off, 4);
      rc = kv_set_versionstamped_value(t, "\x02peer-useq", 11, vv, 14);
    }
    if (!rc) rc = kv_commit(t);
    if (rc) die("peer mix", rc);
  } else if (w->kind == P_CREATE || w->kind == P_UPDATE) {
    long doc = w->kind == P_CREATE ? w->peer_n++ : i % (w->peer_n ? w->peer_n : 1);
    if (w->kind == P_UPDATE) {
      const uint8_t *v;
      size_t vl;
      int found;
      size_t kl = peer_key(key, w->tid, doc, 0);
      rc = kv_get(t, key, kl, 0, &v, &vl, &found);
      if (rc) die("peer kv_get", rc);
    }
    for (int k = 0; k < w->peer_kvs && !rc; k++) {
      size_t kl = peer_key(key, w->tid, doc, k);
      rc = kv_set(t, key, kl, val, sizeof val);
    }
    if (!rc) rc = kv_commit(t);
    if (rc) die("peer commit", rc);
  } else {
    int th;
    do th = (int)(rnd(&w->seed) % MAXT);
    while (!w->all_docs[th]);
    long doc = (long)(rnd(&w->seed) % (uint64_t)w->all_docs[th]);
    size_t kl = peer_key(key, th, doc, 0);
    if (w->kind == P_GET) {
      const uint8_t *v;
      size_t vl;
      int found;
      rc = kv_get(t, key, kl, 0, &v, &vl, &found);
      if (rc) die("peer kv_get", rc);
      if (!found) die("peer kv_get: missing key", DV_EINTERNAL);
    } else {
      uint8_t end[96];
      memcpy(end, key, kl - 1);
      end[kl - 1] = 0xff;
      kv_pair *p;
      int n, more;
      rc = kv_get_range(t, key, kl - 1, end, kl, 0, 0, &p, &n, &more);
      if (rc) die("peer kv_get_range", rc);
      if (n != w->peer_kvs) die("peer range: wrong count", DV_EINTERNAL);
    }
  }
  kv_txn_reset(t);
}

static void *worker_main(void *arg) {
  worker *w = arg;
  dv_arena a;
  arena_init(&a, 0);
  kv_txn *t = NULL;
  if (w->kind >= P_CREATE) {
    int rc = kv_txn_begin(w->kv, &t);
    if (rc) die("kv_txn_begin", rc);
  }
  store_read_stats_reset();
  for (long i = 0; !atomic_load(w->stop); i++) {
    double t0 = now_s();
    if (t) peer_op(w, t, i);
    else store_op(w, &a, i);
    lat_add(&w->l, now_s() - t0);
    w->ops++;
    arena_reset(&a);
  }
  store_read_stats_get(&w->rs);
  kv_txn_destroy(t);
  arena_free(&a);
  return NULL;
}

static result run(worker *w, int nthreads, int kind) {
  atomic_int stop = 0;
  pthread_t th[MAXT];
  for (int i = 0; i < nthreads; i++) {
    w[i].kind = kind;
    w[i].tid = i;
    w[i].nthreads = nthreads;
    w[i].stop = &stop;
    w[i].l.n = 0;
    w[i].ops = 0;
    w[i].seed = 0x5eed + (uint64_t)i * 7919 + (uint64_t)kind;
  }
  double t0 = now_s();
  for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, worker_main, &w[i]);
  struct timespec ts = {(time_t)run_secs, (long)((run_secs - (double)(time_t)run_secs) * 1e9)};
  nanosleep(&ts, NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  double el = now_s() - t0;
  result r = {0};
  lat all = {0};
  uint64_t rt = 0, kvs = 0;
  for (int i = 0; i < nthreads; i++) {
    r.ops += w[i].ops;
    for (size_t k = 0; k < w[i].l.n; k++) lat_add(&all, w[i].l.v[k]);
    rt += w[i].rs.round_trips;
    kvs += w[i].rs.kvs;
  }
  qsort(all.v, all.n, sizeof *all.v, dcmp);
  r.ops_s = (double)r.ops / el;
  r.p50_us = all.n ? all.v[all.n / 2] * 1e6 : 0;
  r.p99_us = all.n ? all.v[(size_t)((double)all.n * 0.99)] * 1e6 : 0;
  r.rt_op = r.ops ? (double)rt / (double)r.ops : 0;
  r.kvs_op = r.ops ? (double)kvs / (double)r.ops : 0;
  free(all.v);
  return r;
}

/* ---- blocking vs asynchronous writers ------------------------------------------------ */

#define MAXC 64       /* writer clients at most */
#define ISSUERS 2     /* threads issuing the asynchronous updates */

typedef struct client {
  struct wrun *run;      /* the run it belongs to */
  int id;                /* its document: bench-c-<id> */
  char docid[32];
  doc_state d;           /* its document's winner */
  store_edit e;          /* the update in flight */
  dv_arena a;            /* its body */
  long ops;              /* updates completed */
  struct client *next;   /* its issuer's ready list */
} client;

typedef struct issuer {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  client *ready;         /* clients whose update completed: start the next */
  int in_flight;         /* updates started and not done */
} issuer;

typedef struct wrun {
  store_db *db;
  int n;                 /* clients */
  client c[MAXC];
  issuer is[ISSUERS];
  atomic_int stop;
} wrun;

static void client_edit(client *c, long n) {
  arena_reset(&c->a);
  memset(&c->e, 0, sizeof c->e);
  c->e.id = c->docid;
  c->e.id_len = strlen(c->docid);
  c->e.body = make_body(&c->a, n, c->id);
  c->e.parent = (store_rev){c->d.pos, c->d.h, 16, 0};
}

static void client_done(client *c) {
  if (c->e.rc) die("store_update (client)", c->e.rc);
  c->d.pos = c->e.rev.pos;
  memcpy(c->d.h, c->e.rev.h, 16);
  c->ops++;
}

static void *blocking_main(void *arg) {
  client *c = arg;
  for (long i = 0; !atomic_load(&c->run->stop); i++) {
    client_edit(c, i);
    int rc = store_update(c->run->db, NULL, &c->e, 1, 1);
    if (rc) die("store_update (client)", rc);
    client_done(c);
  }
  return NULL;
}

/* done: on the kv thread or a store worker — only hand the client back. */
static void on_client_done(void *arg, int rc) {
  client *c = arg;
  if (rc) die("store_update_async", rc);
  issuer *is = &c->run->is[c->id % ISSUERS];
  pthread_mutex_lock(&is->mu);
  c->next = is->ready;
  is->ready = c;
  pthread_cond_signal(&is->cv);
  pthread_mutex_unlock(&is->mu);
}

static void *issuer_main(void *arg) {
  client *first = arg; /* this issuer's clients: first, first + ISSUERS, … */
  wrun *w = first->run;
  issuer *is = &w->is[first->id];
  pthread_mutex_lock(&is->mu);
  for (int k = first->id; k < w->n; k += ISSUERS) { /* all in flight at once */
    client *c = &w->c[k];
    c->next = is->ready;
    is->ready = c;
  }
  is->in_flight = 0;
  for (;;) {
    while (!is->ready && is->in_flight) pthread_cond_wait(&is->cv, &is->mu);
    if (!is->ready) break; /* stopped and drained */
    client *c = is->ready;
    is->ready = c->next;
    if (c->e.id) { /* an update came back */
      is->in_flight--;
      client_done(c);
    }
    if (atomic_load(&w->stop)) {
      c->e.id = NULL;
      continue;
    }
    is->in_flight++;
    pthread_mutex_unlock(&is->mu);
    client_edit(c, c->ops);
    store_update_async(w->db, NULL, &c->e, 1, 1, on_client_done, c);
    pthread_mutex_lock(&is->mu);
  }
  pthread_mutex_unlock(&is->mu);
  return NULL;
}

/* Updates per second of n clients, blocking (n threads) or async (2). */
static double writers(store_db *db, int n, int async) {
  static wrun w;
  static int made;
  w.db = db;
  w.n = n;
  atomic_store(&w.stop, 0);
  for (int i = 0; i < n; i++) {
    client *c = &w.c[i];
    c->run = &w;
    c->id = i;
    c->ops = 0;
    c->e.id = NULL;
    if (i >= made) { /* its document, once */
      arena_init(&c->a, 0);
      snprintf(c->docid, sizeof c->docid, "bench-c-%d", i);
      memset(&c->e, 0, sizeof c->e);
      c->e.id = c->docid;
      c->e.id_len = strlen(c->docid);
      c->e.body = make_body(&c->a, 0, i);
      int rc = store_update(db, NULL, &c->e, 1, 1);
      if (rc || c->e.rc) die("store_update (client doc)", rc ? rc : c->e.rc);
      c->d.pos = c->e.rev.pos;
      memcpy(c->d.h, c->e.rev.h, 16);
      c->e.id = NULL;
      made = i + 1;
    }
  }
  pthread_t th[MAXC];
  int nth = async ? ISSUERS : n;
  for (int i = 0; i < ISSUERS; i++) {
    pthread_mutex_init(&w.is[i].mu, NULL);
    pthread_cond_init(&w.is[i].cv, NULL);
    w.is[i].ready = NULL;
  }
  double t0 = now_s();
  for (int i = 0; i < nth; i++)
    pthread_create(&th[i], NULL, async ? issuer_main : blocking_main, &w.c[i]);
  struct timespec ts = {(time_t)run_secs, (long)((run_secs - (double)(time_t)run_secs) * 1e9)};
  nanosleep(&ts, NULL);
  atomic_store(&w.stop, 1);
  for (int i = 0; i < nth; i++) pthread_join(th[i], NULL);
  double el = now_s() - t0;
  for (int i = 0; i < ISSUERS; i++) {
    pthread_mutex_destroy(&w.is[i].mu);
    pthread_cond_destroy(&w.is[i].cv);
  }
  long ops = 0;
  for (int i = 0; i < n; i++) ops += w.c[i].ops;
  return (double)ops / el;
}

static void writers_report(store_db *db) {
  printf("blocking vs asynchronous writers: each client extends the winner of its own document\n");
  static const int ns[] = {8, MAXC};
  for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
    int n = ns[k];
    double b = writers(db, n, 0);
    double a = writers(db, n, 1);
    printf("  %2d clients: store_update on %2d threads %8.0f docs/s; store_update_async from %d threads, %2d in flight "
           "%8.0f docs/s; async/blocking %.2fx\n",
           n, n, b, ISSUERS, n, a, a / b);
  }
}

/* Keys in the whole kv keyspace (below 0xff). */
static long count_keys(kv_db *kv) {
  kv_txn *t;
  int rc = kv_txn_begin(kv, &t);
  if (rc) die("kv_txn_begin", rc);
  kv_iter *it;
  rc = kv_iter_begin(t, "", 0, "\xff", 1, 0, KV_SNAPSHOT, &it);
  if (rc) die("kv_iter_begin", rc);
  kv_pair p;
  long n = 0;
  while ((rc = kv_iter_next(it, &p)) == 1) n++;
  if (rc) die("kv_iter_next", rc);
  kv_iter_free(it);
  kv_txn_destroy(t);
  return n;
}

static void row(const char *what, const result *s, const result *p, int reads) {
  printf("  %-30s %9.0f ops/s  p50 %7.0f us  p99 %7.0f us", what, s->ops_s, s->p50_us, s->p99_us);
  if (reads) printf("  reads/op: %.2f round trips, %.2f KVs", s->rt_op, s->kvs_op);
  printf("\n");
  if (p)
    printf("  %-30s %9.0f ops/s  p50 %7.0f us  p99 %7.0f us   store/peer: %.2fx throughput, %.2fx p50\n",
           "  peer", p->ops_s, p->p50_us, p->p99_us, s->ops_s / p->ops_s, s->p50_us / p->p50_us);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1) run_secs = atof(argv[1]);
  if (run_secs <= 0) run_secs = 3.0;
  const char *tmp = getenv("TMPDIR");
  char base[256];
  snprintf(base, sizeof base, "%s/divan-bench-store-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(base)) {
    perror("mkdtemp");
    return 1;
  }
  char dir[300];
  snprintf(dir, sizeof dir, "%s/kv", base);
  double t_start = now_s();
  kv_db *kv;
  int rc = kv_open_rocks(dir, NULL, &kv);
  if (rc) die("kv_open_rocks", rc);
  store *s;
  rc = store_open(kv, NULL, &s);
  if (rc) die("store_open", rc);
  rc = store_db_create(s, "bench");
  if (rc) die("store_db_create", rc);
  store_db *db;
  rc = store_db_open(s, "bench", &db);
  if (rc) die("store_db_open", rc);
  printf("bench_store: %.1f s per run; store under %s (synced WAL, default options)\n", run_secs, base);
  printf("document: 10 JSON leaves, %zu bytes of JSON\n", strlen(body_fmt) - 4);

  if (argc > 2 && !strcmp(argv[2], "writers")) {
    writers_report(db);
    store_db_close(db);
    store_close(s);
    kv_close(kv);
    nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
  }

  static worker w1[1], w8[MAXT], p1[1], p8[MAXT];
  for (int i = 0; i < MAXT; i++) w8[i].db = p8[i].db = db, w8[i].kv = p8[i].kv = kv;
  w1[0].db = db;
  w1[0].kv = p1[0].kv = kv;

  /* creates: 1 thread first, counting the KVs a document leaves */
  long k0 = count_keys(kv);
  result c1 = run(w1, 1, W_CREATE);
  long k1 = count_keys(kv);
  int peer_kvs = (int)((double)(k1 - k0) / (double)c1.ops + 0.5);
  printf("a create leaves %.2f KVs in the kv store (%ld docs); the peer writes %d per transaction\n\n",
         (double)(k1 - k0) / (double)c1.ops, c1.ops, peer_kvs);
  for (int i = 0; i < MAXT; i++) p8[i].peer_kvs = peer_kvs;
  p1[0].peer_kvs = peer_kvs;
  result pc1 = run(p1, 1, P_CREATE);
  /* 8 threads, each its own documents (ids bench-<t>-…; thread 0 goes on
   * after the 1-thread run's documents) */
  w8[0].docs = w1[0].docs;
  w8[0].ndocs = w1[0].ndocs;
  w8[0].cap = w1[0].cap;
  w1[0].docs = NULL;
  p8[0].peer_n = p1[0].peer_n;
  result c8 = run(w8, MAXT, W_CREATE);
  result pc8 = run(p8, MAXT, P_CREATE);
  long pn[MAXT];
  for (int i = 0; i < MAXT; i++) pn[i] = p8[i].peer_n;
  result pm1 = run(p8, 1, P_MIX);
  result pm8 = run(p8, MAXT, P_MIX);
  for (int i = 0; i < MAXT; i++) p8[i].peer_n = pn[i]; /* mix docs are not read back */

  result u1 = run(w8, 1, W_UPDATE);
  result pu1 = run(p8, 1, P_UPDATE);
  result u8 = run(w8, MAXT, W_UPDATE);
  result pu8 = run(p8, MAXT, P_UPDATE);

  for (int i = 0; i < MAXT; i++)
    for (int j = 0; j < MAXT; j++) {
      w8[i].all_docs[j] = w8[j].ndocs;
      p8[i].all_docs[j] = p8[j].peer_n;
    }
  result r1 = run(w8, 1, W_READ);
  result pg1 = run(p8, 1, P_GET);
  result pr1 = run(p8, 1, P_RANGE);
  result r8 = run(w8, MAXT, W_READ);
  result pg8 = run(p8, MAXT, P_GET);
  result pr8 = run(p8, MAXT, P_RANGE);

  long total = 0;
  for (int i = 0; i < MAXT; i++) total += w8[i].ndocs;
  printf("create (new doc, no parent)\n");
  row("1 thread", &c1, &pc1, 1);
  row("8 threads", &c8, &pc8, 1);
  printf("  peer 2: a create's kv operations without the store (reverse range read of 1, %d sets,\n"
         "  4 atomic ADDs, a versionstamped key and value)\n", peer_kvs - 2);
  printf("  %-30s %9.0f ops/s  p50 %7.0f us  p99 %7.0f us   store/peer: %.2fx throughput, %.2fx p50\n",
         "  1 thread", pm1.ops_s, pm1.p50_us, pm1.p99_us, c1.ops_s / pm1.ops_s, c1.p50_us / pm1.p50_us);
  printf("  %-30s %9.0f ops/s  p50 %7.0f us  p99 %7.0f us   store/peer: %.2fx throughput, %.2fx p50\n",
         "  8 threads", pm8.ops_s, pm8.p50_us, pm8.p99_us, c8.ops_s / pm8.ops_s, c8.p50_us / pm8.p50_us);
  printf("update (extend the winner)\n");
  row("1 thread", &u1, &pu1, 1);
  row("8 threads", &u8, &pu8, 1);
  printf("read the winner (store_doc_get) over %ld docs; peer: one kv_get per transaction\n", total);
  row("1 thread", &r1, &pg1, 1);
  row("8 threads", &r8, &pg8, 1);
  printf("  peer 2: a range read of %d keys per transaction\n", peer_kvs);
  printf("  %-30s %9.0f ops/s  p50 %7.0f us  p99 %7.0f us   store/peer: %.2fx throughput\n", "  1 thread",
         pr1.ops_s, pr1.p50_us, pr1.p99_us, r1.ops_s / pr1.ops_s);
  printf("  %-30s %9.0f ops/s  p50 %7.0f us  p99 %7.0f us   store/peer: %.2fx throughput\n", "  8 threads",
         pr8.ops_s, pr8.p50_us, pr8.p99_us, r8.ops_s / pr8.ops_s);
  writers_report(db);
  printf("\n(total %.0f s)\n", now_s() - t_start);

  for (int i = 0; i < MAXT; i++) {
    free(w8[i].docs);
    free(w8[i].l.v);
    free(p8[i].l.v);
  }
  free(w1[0].l.v);
  free(p1[0].l.v);
  store_db_close(db);
  store_close(s);
  kv_close(kv);
  nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}
