/* fault.c — the fault-injecting kv backend (kv_fault.h), for tests.
 *
 * A decorator: every method forwards to the inner backend, except where a
 * test armed a fault. kv.c has already validated each call, accounted its
 * bytes and keeps the sticky error on the OUTER transaction (this file's),
 * so reads and writes go straight to the inner backend's methods
 * (inner->m->…), never through the public kv_* functions, which would
 * validate and account a second time. Three calls do go through the
 * public layer on purpose, because kv.c keeps base-struct state the inner
 * backend may rely on: kv_txn_begin (the base init), kv_txn_reset and
 * kv_txn_destroy (the inner transaction's owned blocks: values the inner
 * backend hands out as borrowed), and kv_commit_async (the inner
 * committing flag). The inner transaction's byte count stays 0 and its
 * error stays clear, so those public calls never refuse on its own account.
 *
 * Not here: latency, crashes, allocation failure (util/alloc.h has that).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kv/kv_fault.h"
#include "kv/kv_int.h"
#include "util/alloc.h"

#define DEFAULT_SEED 0x6469766166756c74ULL /* "divafult" */

typedef struct fault_arm {
  double probability; /* chance per eligible operation */
  long count;         /* injections left; < 0 = unlimited, 0 = disarmed */
  long injected;      /* injections made */
  long eligible;      /* eligible operations seen */
} fault_arm;

typedef struct fault_db {
  struct kv_db base;                /* m = &methods */
  kv_methods methods;               /* this instance's table (its own name) */
  char name[64];                    /* "fault(<inner>)" */
  kv_db *inner;                     /* the decorated store, owned */
  pthread_mutex_t mu;               /* guards arms and rng */
  fault_arm arms[KV_FAULT_NKINDS];  /* per-kind settings and counters */
  uint64_t rng;                     /* splitmix64 state */
} fault_db;

typedef struct fault_txn {
  struct kv_txn base;  /* must be first */
  kv_txn *inner;       /* the inner backend's transaction, owned */
  int wrote;           /* 1 after any mutation or write conflict range */
  int commit_rc;       /* result reported for the last commit; 1 = none */
  int pending;         /* fault decided for the commit in flight, or -1 */
  kv_commit_cb cb;     /* kv.c's completion for the commit in flight */
  void *cb_arg;        /* its argument */
} fault_txn;

typedef struct fault_iter {
  struct kv_iter base; /* must be first */
  kv_iter *inner;      /* the inner backend's iterator */
} fault_iter;

static const kv_methods fault_methods;

static fault_db *as_db(kv_db *db) { return (fault_db *)db; }
static fault_txn *as_txn(kv_txn *t) { return (fault_txn *)t; }
static fault_db *txn_db(kv_txn *t) { return as_db(t->db); }
static kv_txn *in_txn(kv_txn *t) { return as_txn(t)->inner; }

/* ---- the decision ------------------------------------------------------ */

static uint64_t next_rand(fault_db *d) {
  uint64_t z = (d->rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* One eligible operation for `kind`: 1 if it must fail. Caller holds mu. */
static int draw_locked(fault_db *d, kv_fault_kind kind) {
  fault_arm *a = &d->arms[kind];
  a->eligible++;
  if (a->count == 0 || a->probability <= 0) return 0;
  double r = (double)(next_rand(d) >> 11) * (1.0 / 9007199254740992.0);
  if (r >= a->probability) return 0;
  a->injected++;
  if (a->count > 0) a->count--;
  return 1;
}

static int draw(fault_db *d, kv_fault_kind kind) {
  pthread_mutex_lock(&d->mu);
  int hit = draw_locked(d, kind);
  pthread_mutex_unlock(&d->mu);
  return hit;
}

/* The fault for a commit, or -1: kinds in enum order, first hit wins. */
static int draw_commit(fault_db *d) {
  int kind = -1;
  pthread_mutex_lock(&d->mu);
  for (int k = 0; k < KV_FAULT_NKINDS && kind < 0; k++)
    if (draw_locked(d, (kv_fault_kind)k)) kind = k;
  pthread_mutex_unlock(&d->mu);
  return kind;
}

/* ---- store ------------------------------------------------------------- */

static void fault_close(kv_db *db) {
  fault_db *d = as_db(db);
  kv_close(d->inner);
  pthread_mutex_destroy(&d->mu);
  dv_free(d);
}

static int64_t fault_db_version(kv_db *db) { return kv_db_version(as_db(db)->inner); }

static int fault_compact(kv_db *db) { return kv_compact(as_db(db)->inner); }
static void fault_bulk_written(kv_db *db, size_t n) { kv_bulk_written(as_db(db)->inner, n); }
static void fault_info(kv_db *db, kv_info *out) { kv_db_info(as_db(db)->inner, out); }

/* ---- transactions ------------------------------------------------------ */

static int fault_txn_begin(kv_db *db, kv_txn **out) {
  fault_db *d = as_db(db);
  fault_txn *ft = dv_calloc(1, sizeof *ft);
  if (!ft) return DV_ENOMEM;
  int rc = kv_txn_begin(d->inner, &ft->inner);
  if (rc) {
    dv_free(ft);
    return rc;
  }
  kv__txn_init(&ft->base, &d->methods, db);
  ft->commit_rc = 1;
  ft->pending = -1;
  *out = &ft->base;
  return 0;
}

static void fault_txn_reset(kv_txn *t) {
  fault_txn *ft = as_txn(t);
  kv_txn_reset(ft->inner);
  ft->wrote = 0;
  ft->commit_rc = 1;
  ft->pending = -1;
}

static void fault_txn_destroy(kv_txn *t) {
  fault_txn *ft = as_txn(t);
  kv_txn_destroy(ft->inner);
  dv_free(ft);
}

static int fault_get_read_version(kv_txn *t, int64_t *out) {
  kv_txn *in = in_txn(t);
  return in->m->get_read_version(in, out);
}

static int fault_set_timeout_ms(kv_txn *t, int ms) {
  kv_txn *in = in_txn(t);
  return in->m->set_timeout_ms(in, ms);
}

/* ---- reads ------------------------------------------------------------- */

static int fault_get(kv_txn *t, const uint8_t *k, size_t kl, int flags, const uint8_t **v,
                     size_t *vl, int *found) {
  if (draw(txn_db(t), KV_FAULT_TOO_OLD)) return DV_ETXN_TOO_OLD;
  kv_txn *in = in_txn(t);
  return in->m->get(in, k, kl, flags, v, vl, found);
}

static int fault_iter_begin(kv_txn *t, const uint8_t *b, size_t bl, const uint8_t *e, size_t el,
                            int limit, int flags, kv_iter **out) {
  if (draw(txn_db(t), KV_FAULT_TOO_OLD)) return DV_ETXN_TOO_OLD;
  fault_iter *fi = dv_calloc(1, sizeof *fi);
  if (!fi) return DV_ENOMEM;
  kv_txn *in = in_txn(t);
  int rc = in->m->iter_begin(in, b, bl, e, el, limit, flags, &fi->inner);
  if (rc) {
    dv_free(fi);
    return rc;
  }
  fi->base.m = t->m;
  fi->base.txn = t;
  *out = &fi->base;
  return 0;
}

static int fault_iter_next(kv_iter *it, kv_pair *out) {
  kv_iter *in = ((fault_iter *)it)->inner;
  return in->m->iter_next(in, out);
}

static void fault_iter_free(kv_iter *it) {
  fault_iter *fi = (fault_iter *)it;
  fi->inner->m->iter_free(fi->inner);
  dv_free(fi);
}

/* ---- writes ------------------------------------------------------------ */

static int fault_set(kv_txn *t, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  kv_txn *in = in_txn(t);
  as_txn(t)->wrote = 1;
  return in->m->set(in, k, kl, v, vl);
}

static int fault_clear(kv_txn *t, const uint8_t *k, size_t kl) {
  kv_txn *in = in_txn(t);
  as_txn(t)->wrote = 1;
  return in->m->clear(in, k, kl);
}

static int fault_clear_range(kv_txn *t, const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  kv_txn *in = in_txn(t);
  as_txn(t)->wrote = 1;
  return in->m->clear_range(in, b, bl, e, el);
}

static int fault_atomic(kv_txn *t, kv_atomic_op op, const uint8_t *k, size_t kl, const uint8_t *p,
                        size_t pl) {
  kv_txn *in = in_txn(t);
  as_txn(t)->wrote = 1;
  return in->m->atomic(in, op, k, kl, p, pl);
}

static int fault_set_vs_key(kv_txn *t, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  kv_txn *in = in_txn(t);
  as_txn(t)->wrote = 1;
  return in->m->set_vs_key(in, k, kl, v, vl);
}

static int fault_set_vs_value(kv_txn *t, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  kv_txn *in = in_txn(t);
  as_txn(t)->wrote = 1;
  return in->m->set_vs_value(in, k, kl, v, vl);
}

static int fault_add_conflict_range(kv_txn *t, const uint8_t *b, size_t bl, const uint8_t *e,
                                    size_t el, int type) {
  kv_txn *in = in_txn(t);
  if (type == KV_CONFLICT_WRITE) as_txn(t)->wrote = 1;
  return in->m->add_conflict_range(in, b, bl, e, el, type);
}

/* ---- commit ------------------------------------------------------------ */

static void inner_commit_done(kv_txn *in, int rc, void *arg) {
  fault_txn *ft = arg;
  if (ft->pending == KV_FAULT_COMMIT_UNKNOWN_AFTER) {
    if (rc == 0 || rc == DV_ENOT_COMMITTED) {
      rc = DV_ECOMMIT_UNKNOWN;
    } else { /* a real error passes: take back the injection */
      fault_db *d = txn_db(&ft->base);
      pthread_mutex_lock(&d->mu);
      d->arms[KV_FAULT_COMMIT_UNKNOWN_AFTER].injected--;
      pthread_mutex_unlock(&d->mu);
    }
  }
  ft->pending = -1;
  ft->commit_rc = rc;
  kv_commit_cb cb = ft->cb;
  void *cb_arg = ft->cb_arg;
  cb(&ft->base, rc, cb_arg); /* may destroy the transaction: last touch */
}

static void fault_commit_async(kv_txn *t, kv_commit_cb cb, void *arg) {
  fault_txn *ft = as_txn(t);
  int kind = ft->wrote ? draw_commit(txn_db(t)) : -1;
  int rc = 0;
  switch (kind) {
  case KV_FAULT_COMMIT_UNKNOWN_BEFORE: rc = DV_ECOMMIT_UNKNOWN; break;
  case KV_FAULT_NOT_COMMITTED: rc = DV_ENOT_COMMITTED; break;
  case KV_FAULT_TOO_OLD: rc = DV_ETXN_TOO_OLD; break;
  case KV_FAULT_TIMED_OUT: rc = DV_ETIMED_OUT; break;
  default: break;
  }
  if (rc) {
    ft->commit_rc = rc;
    cb(t, rc, arg);
    return;
  }
  ft->pending = kind;
  ft->cb = cb;
  ft->cb_arg = arg;
  if (t->frees_space) kv_set_frees_space(ft->inner);
  kv_commit_async(ft->inner, inner_commit_done, ft);
}

static int fault_get_committed_version(kv_txn *t, int64_t *out) {
  fault_txn *ft = as_txn(t);
  if (ft->commit_rc != 0 && ft->commit_rc != 1) return DV_EINVAL;
  return ft->inner->m->get_committed_version(ft->inner, out);
}

static int fault_get_versionstamp(kv_txn *t, uint8_t out[KV_STAMP_LEN]) {
  fault_txn *ft = as_txn(t);
  if (ft->commit_rc != 0 && ft->commit_rc != 1) return DV_EINVAL;
  return ft->inner->m->get_versionstamp(ft->inner, out);
}

/* ---- watches: the inner backend's own handles pass through -------------- */

static int fault_watch_add(kv_txn *t, const uint8_t *k, size_t kl, kv_watch_cb cb, void *arg,
                           kv_watch **out) {
  kv_txn *in = in_txn(t);
  return in->m->watch_add(in, k, kl, cb, arg, out);
}

static void fault_watch_free(kv_watch *w) { w->m->watch_free(w); }

static const kv_methods fault_methods = {
    .name = "fault",
    .close = fault_close,
    .db_version = fault_db_version,
    .txn_begin = fault_txn_begin,
    .txn_reset = fault_txn_reset,
    .txn_destroy = fault_txn_destroy,
    .get_read_version = fault_get_read_version,
    .get = fault_get,
    .iter_begin = fault_iter_begin,
    .iter_next = fault_iter_next,
    .iter_free = fault_iter_free,
    .set = fault_set,
    .clear = fault_clear,
    .clear_range = fault_clear_range,
    .atomic = fault_atomic,
    .set_vs_key = fault_set_vs_key,
    .set_vs_value = fault_set_vs_value,
    .add_conflict_range = fault_add_conflict_range,
    .commit_async = fault_commit_async,
    .get_committed_version = fault_get_committed_version,
    .get_versionstamp = fault_get_versionstamp,
    .watch_add = fault_watch_add,
    .watch_free = fault_watch_free,
    .set_timeout_ms = fault_set_timeout_ms,
    .compact = fault_compact,
    .bulk_written = fault_bulk_written,
    .info = fault_info,
};

/* ---- public API ------------------------------------------------------- */

int kv_fault_wrap(kv_db *inner, kv_db **out_db) {
  if (!inner) return DV_EINVAL;
  fault_db *d = dv_calloc(1, sizeof *d);
  if (!d) return DV_ENOMEM;
  if (pthread_mutex_init(&d->mu, NULL)) {
    dv_free(d);
    return DV_ENOMEM;
  }
  snprintf(d->name, sizeof d->name, "fault(%s)", kv_db_backend(inner));
  d->methods = fault_methods;
  d->methods.name = d->name;
  d->base.m = &d->methods;
  d->inner = inner;
  d->rng = DEFAULT_SEED;
  *out_db = &d->base;
  return 0;
}

/* The fault store behind a public handle, or NULL if it is not one. */
static fault_db *checked(kv_db *db) {
  if (!db || db->m->close != fault_close) return NULL;
  return as_db(db);
}

void kv_fault_set(kv_db *db, kv_fault_kind kind, double probability, long count) {
  fault_db *d = checked(db);
  if (!d || kind < 0 || kind >= KV_FAULT_NKINDS) return;
  pthread_mutex_lock(&d->mu);
  d->arms[kind].probability = probability;
  d->arms[kind].count = count;
  pthread_mutex_unlock(&d->mu);
}

void kv_fault_clear(kv_db *db) {
  fault_db *d = checked(db);
  if (!d) return;
  pthread_mutex_lock(&d->mu);
  for (int k = 0; k < KV_FAULT_NKINDS; k++) {
    d->arms[k].probability = 0;
    d->arms[k].count = 0;
  }
  pthread_mutex_unlock(&d->mu);
}

void kv_fault_seed(kv_db *db, uint64_t seed) {
  fault_db *d = checked(db);
  if (!d) return;
  pthread_mutex_lock(&d->mu);
  d->rng = seed;
  pthread_mutex_unlock(&d->mu);
}

static long read_counter(kv_db *db, kv_fault_kind kind, int eligible) {
  fault_db *d = checked(db);
  if (!d || kind < 0 || kind >= KV_FAULT_NKINDS) return 0;
  pthread_mutex_lock(&d->mu);
  long n = eligible ? d->arms[kind].eligible : d->arms[kind].injected;
  pthread_mutex_unlock(&d->mu);
  return n;
}

long kv_fault_injected(kv_db *db, kv_fault_kind kind) { return read_counter(db, kind, 0); }

long kv_fault_eligible(kv_db *db, kv_fault_kind kind) { return read_counter(db, kind, 1); }

void kv_fault_reset_counts(kv_db *db) {
  fault_db *d = checked(db);
  if (!d) return;
  pthread_mutex_lock(&d->mu);
  for (int k = 0; k < KV_FAULT_NKINDS; k++) {
    d->arms[k].injected = 0;
    d->arms[k].eligible = 0;
  }
  pthread_mutex_unlock(&d->mu);
}

kv_db *kv_fault_inner(kv_db *db) {
  fault_db *d = checked(db);
  return d ? d->inner : NULL;
}
