/* fdb.c — the FoundationDB backend of kv.h, over libfdb_c loaded with dlopen.
 *
 * Data flow:
 *   kv_open_fdb -> (once per process) dlopen(library), dlsym of every
 *     function in fdb_api.h, fdb_select_api_version_impl(710 or the
 *     library's highest), fdb_setup_network, a thread running
 *     fdb_run_network until exit -> fdb_create_database(cluster file).
 *   kv_get / kv_get_read_version -> an FDB future, blocked on by the
 *     calling thread; the future is kept until the transaction resets, so
 *     the value it owns is what kv.h hands out as borrowed.
 *   kv_iter -> batches of fdb_transaction_get_range (FIRST_GREATER_OR_EQUAL
 *     selectors, ITERATOR mode, iteration counting up), read as snapshot;
 *     the read conflict range kv.h promises — [begin, end) when the
 *     iterator reached the end, else only up to the last pair returned —
 *     is added explicitly when it is freed, so prefetched pairs never
 *     widen it. Read-your-writes is libfdb_c's own.
 *   writes -> fdb_transaction_set/clear/clear_range/atomic_op (kv.h's
 *     atomic numbers mapped to FDB's; versionstamped key/value are the
 *     atomic ops 14/15 with the same offset-suffix format).
 *   kv_commit_async -> fdb_transaction_get_versionstamp (if it wrote), then
 *     fdb_transaction_commit; the commit future's callback runs on FDB's
 *     network thread, records the committed version and the stamp and
 *     calls kv.c's completion.
 *   kv_on_error -> kv.c decides retryable / retry limit (the same rules on
 *     every backend), then fdb_transaction_on_error does FDB's backoff and
 *     reset.
 *   kv_watch_add -> fdb_transaction_watch; its callback (network thread)
 *     calls the kv callback once; kv_watch_free and kv_close cancel.
 *
 * Errors: FDB numbers map onto util/err.h by negation where divan has the
 * code (not_committed 1020 is DV_ENOT_COMMITTED); other retryable codes
 * (process_behind, throttled, …) are reported as DV_EFUTURE_VERSION or,
 * when maybe committed, DV_ECOMMIT_UNKNOWN, and the raw code is kept so
 * on_error gets FDB's own number back; 1101 operation_cancelled and 1025
 * are DV_ECANCELLED; anything else is DV_EIO (logged).
 *
 * Stateless across processes: this file caches nothing about the data.
 * Not here: FDB's tenants, locality, or any cluster management.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/fdb_api.h"
#include "kv/kv_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/thread.h"

#define DEFAULT_LIBRARY "libfdb_c.so"

/* ---- the library: loaded once per process --------------------------------- */

typedef struct fdb_lib {
#define X_FIELD(ret, name, args) ret(*name) args;
  FDB_API_FUNCS(X_FIELD)
#undef X_FIELD
} fdb_lib;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* guards the loading state */
static fdb_lib g_api;          /* the functions, valid once g_loaded */
static int g_loaded;           /* 1 after a successful load + network start */
static char *g_library;        /* the path loaded */
static int g_api_version;      /* the API version selected */
static pthread_t g_net;        /* runs fdb_run_network */
static pthread_mutex_t g_watch_mu = PTHREAD_MUTEX_INITIALIZER; /* guards watch lists */

#define F (&g_api)

static void *net_main(void *arg) {
  dv_thread_name("dv-fdb-net");
  fdb_error_t e = F->fdb_run_network();
  if (e) log_critical("fdb network thread ended: %s (%d)", F->fdb_get_error(e), e);
  return NULL;
}

static void net_stop(void) {
  if (!F->fdb_stop_network()) pthread_join(g_net, NULL);
}

static int load_locked(const char *library) {
  if (g_loaded) return strcmp(g_library, library) ? DV_EINVAL : 0;
  void *dl = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    log_error("cannot load %s: %s", library, dlerror());
    return DV_ENOTSUP;
  }
  fdb_lib api;
#define X_SYM(ret, name, args)                                                       \
  *(void **)&api.name = dlsym(dl, #name);                                            \
  if (!api.name) {                                                                   \
    log_error("%s has no %s: not a usable libfdb_c", library, #name);               \
    dlclose(dl);                                                                     \
    return DV_ENOTSUP;                                                               \
  }
  FDB_API_FUNCS(X_SYM)
#undef X_SYM
  int max = api.fdb_get_max_api_version();
  int v = max < FDB_DIVAN_API_VERSION ? max : FDB_DIVAN_API_VERSION;
  if (v < FDB_DIVAN_MIN_API_VERSION) {
    log_error("%s supports API version %d, divan needs >= %d", library, max, FDB_DIVAN_MIN_API_VERSION);
    dlclose(dl);
    return DV_ENOTSUP;
  }
  fdb_error_t e = api.fdb_select_api_version_impl(v, v);
  if (!e) e = api.fdb_setup_network();
  if (e) {
    log_error("fdb setup (API %d): %s (%d)", v, api.fdb_get_error(e), e);
    return DV_EIO; /* the library stays loaded: FDB allows one setup */
  }
  g_api = api;
  g_api_version = v;
  if (pthread_create(&g_net, NULL, net_main, NULL)) return DV_ENOMEM;
  g_library = strdup(library);
  if (!g_library) return DV_ENOMEM;
  g_loaded = 1;
  atexit(net_stop);
  return 0;
}

/* ---- errors ---------------------------------------------------------------- */

static int map_fdb(fdb_error_t e) {
  switch (e) {
  case 0: return 0;
  case FDB_ERR_TRANSACTION_TOO_OLD: case FDB_ERR_FUTURE_VERSION: case FDB_ERR_NOT_COMMITTED:
  case FDB_ERR_COMMIT_UNKNOWN_RESULT: case FDB_ERR_TRANSACTION_TIMED_OUT:
  case FDB_ERR_ACCESSED_UNREADABLE: case FDB_ERR_USED_DURING_COMMIT:
  case FDB_ERR_KEY_OUTSIDE_LEGAL_RANGE: case FDB_ERR_INVERTED_RANGE:
  case FDB_ERR_INVALID_MUTATION_TYPE: case FDB_ERR_TRANSACTION_TOO_LARGE:
  case FDB_ERR_KEY_TOO_LARGE: case FDB_ERR_VALUE_TOO_LARGE:
    return -e;
  case FDB_ERR_TIMED_OUT: return DV_ETIMED_OUT;
  case FDB_ERR_TRANSACTION_CANCELLED: case FDB_ERR_OPERATION_CANCELLED: return DV_ECANCELLED;
  case FDB_ERR_NO_COMMIT_VERSION: case FDB_ERR_INVALID_OPTION: case FDB_ERR_INVALID_OPTION_VALUE:
  case FDB_ERR_CLIENT_INVALID_OPERATION: return DV_EINVAL;
  default: break;
  }
  if (F->fdb_error_predicate(FDB_ERROR_PREDICATE_MAYBE_COMMITTED, e)) return DV_ECOMMIT_UNKNOWN;
  if (F->fdb_error_predicate(FDB_ERROR_PREDICATE_RETRYABLE, e)) return DV_EFUTURE_VERSION;
  log_error("fdb error %d (%s) reported as I/O error", e, F->fdb_get_error(e));
  return DV_EIO;
}

/* ---- structs ---------------------------------------------------------------- */

typedef struct fwatch fwatch;

typedef struct fdb_db {
  struct kv_db base;   /* m = &fdb_methods */
  FDBDatabase *fdb;    /* libfdb_c's handle */
  fwatch *watches;     /* live watches (g_watch_mu), cancelled at close */
} fdb_db;

typedef struct ftxn {
  struct kv_txn base;      /* must be first */
  FDBTransaction *tr;      /* libfdb_c's transaction */
  FDBFuture **held;        /* read futures whose memory was handed out */
  size_t nheld, capheld;   /* count, capacity */
  int wrote;               /* any mutation or write conflict range */
  int committed;           /* 1 after a successful commit */
  int64_t version;         /* committed version (-1: read-only) */
  uint8_t stamp[KV_STAMP_LEN]; /* versionstamp, if have_stamp */
  int have_stamp;          /* 1 when stamp is set */
  FDBFuture *commit_f;     /* commit in flight */
  FDBFuture *stamp_f;      /* its versionstamp future, or NULL */
  int commit_rc;           /* the commit's rc, kept while the stamp arrives */
  kv_commit_cb cb;         /* kv.c's completion */
  void *cb_arg;            /* its argument */
  int timeout_ms;          /* the timeout option, re-applied after reset */
  int fresh;               /* 1: on_error already reset tr */
  fdb_error_t last_err;    /* raw code of the last mapped error */
} ftxn;

typedef struct fiter {
  struct kv_iter base;     /* must be first */
  ftxn *t;                 /* owning transaction */
  uint8_t *cur;            /* continuation key (owned), forward: first key after the last */
  size_t cur_len;          /* its length */
  int has_cur;             /* 1 after the first batch */
  int returned;            /* pairs returned */
  int iteration;           /* FDB ITERATOR mode counter */
  FDBFuture *batch;        /* the batch the pairs point into */
  const FDBKeyValue *kvs;  /* its pairs */
  int n, i;                /* its count, next index */
  int more;                /* FDB said there may be more after the batch */
  int at_end;              /* 1 when the range was exhausted */
  uint8_t *last;           /* last key returned (owned) */
  size_t last_len, last_cap; /* its length and buffer size */
} fiter;

struct fwatch {
  struct kv_watch base;    /* must be first */
  FDBFuture *f;            /* libfdb_c's watch future */
  kv_watch_cb cb;          /* user callback */
  void *arg;               /* its argument */
  fdb_db *d;               /* the store while open (g_watch_mu) */
  fwatch *next, *prev;     /* in d->watches */
  pthread_mutex_t mu;      /* guards state, exited */
  pthread_cond_t cv;       /* signals exited */
  int state;               /* 0 pending, 1 user cb called or being called */
  int exited;              /* 1 once the FDB callback returned */
};

static const kv_methods fdb_methods;

static ftxn *as_t(kv_txn *t) { return (ftxn *)t; }

static int terr(ftxn *t, fdb_error_t e) {
  t->last_err = e;
  return map_fdb(e);
}

/* Block on a future; 0 or the mapped error (the future is kept either way). */
static int wait_f(ftxn *t, FDBFuture *f) {
  fdb_error_t e = F->fdb_future_block_until_ready(f);
  if (!e) e = F->fdb_future_get_error(f);
  return e ? terr(t, e) : 0;
}

static int hold(ftxn *t, FDBFuture *f) {
  if (t->nheld == t->capheld) {
    size_t cap = t->capheld ? t->capheld * 2 : 8;
    FDBFuture **h = dv_realloc(t->held, cap * sizeof *h);
    if (!h) return DV_ENOMEM;
    t->held = h;
    t->capheld = cap;
  }
  t->held[t->nheld++] = f;
  return 0;
}

static void drop_held(ftxn *t) {
  for (size_t i = 0; i < t->nheld; i++) F->fdb_future_destroy(t->held[i]);
  t->nheld = 0;
}

static int set_int_option(FDBTransaction *tr, int opt, int64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)v >> (8 * i)); /* little-endian */
  return F->fdb_transaction_set_option(tr, opt, b, 8);
}

/* ---- store ------------------------------------------------------------------ */

int kv_open_fdb(const char *cluster_file, const kv_fdb_opts *opts, kv_db **out_db) {
  const char *lib = opts && opts->library ? opts->library : DEFAULT_LIBRARY;
  pthread_mutex_lock(&g_mu);
  int rc = load_locked(lib);
  pthread_mutex_unlock(&g_mu);
  if (rc) return rc;
  fdb_db *d = dv_calloc(1, sizeof *d);
  if (!d) return DV_ENOMEM;
  fdb_error_t e = F->fdb_create_database(cluster_file, &d->fdb);
  if (e) {
    log_error("fdb_create_database(%s): %s (%d)", cluster_file ? cluster_file : "default", F->fdb_get_error(e), e);
    dv_free(d);
    return DV_EIO;
  }
  d->base.m = &fdb_methods;
  *out_db = &d->base;
  return 0;
}

static void watch_cancel_user(fwatch *w);

static void f_close(kv_db *db) {
  fdb_db *d = (fdb_db *)db;
  /* Fail what is left with DV_ECANCELLED; the handles stay valid. */
  pthread_mutex_lock(&g_watch_mu);
  fwatch *w = d->watches;
  d->watches = NULL;
  for (fwatch *x = w; x; x = x->next) x->d = NULL;
  pthread_mutex_unlock(&g_watch_mu);
  for (; w; w = w->next) {
    watch_cancel_user(w);
    F->fdb_future_cancel(w->f);
  }
  F->fdb_database_destroy(d->fdb);
  dv_free(d);
}

static int64_t f_db_version(kv_db *db) {
  FDBTransaction *tr;
  if (F->fdb_database_create_transaction(((fdb_db *)db)->fdb, &tr)) return -1;
  FDBFuture *f = F->fdb_transaction_get_read_version(tr);
  int64_t v = -1;
  if (F->fdb_future_block_until_ready(f) || F->fdb_future_get_int64(f, &v)) v = -1;
  F->fdb_future_destroy(f);
  F->fdb_transaction_destroy(tr);
  return v;
}

/* ---- transactions ------------------------------------------------------------- */

/* The options kv.h gives every transaction: FDB clears them on reset. The
 * retry limit is kv.c's (it decides before on_error); FDB gets the same
 * number as a backstop. */
static void apply_options(ftxn *t) {
  (void)set_int_option(t->tr, FDB_TR_OPTION_SIZE_LIMIT, KV_MAX_TXN_BYTES);
  (void)set_int_option(t->tr, FDB_TR_OPTION_RETRY_LIMIT, t->base.retry_limit);
  if (t->timeout_ms) (void)set_int_option(t->tr, FDB_TR_OPTION_TIMEOUT, t->timeout_ms);
}

static int f_txn_begin(kv_db *db, kv_txn **out) {
  ftxn *t = dv_calloc(1, sizeof *t);
  if (!t) return DV_ENOMEM;
  fdb_error_t e = F->fdb_database_create_transaction(((fdb_db *)db)->fdb, &t->tr);
  if (e) {
    dv_free(t);
    return map_fdb(e);
  }
  kv__txn_init(&t->base, &fdb_methods, db);
  t->version = -1;
  apply_options(t);
  *out = &t->base;
  return 0;
}

static void reset_local(ftxn *t) {
  drop_held(t);
  t->wrote = 0;
  t->committed = 0;
  t->version = -1;
  t->have_stamp = 0;
  t->last_err = 0;
}

static void f_txn_reset(kv_txn *kt) {
  ftxn *t = as_t(kt);
  reset_local(t);
  if (!t->fresh) F->fdb_transaction_reset(t->tr);
  t->fresh = 0;
  apply_options(t); /* kv.h's timeout runs from the reset, as on rocks */
}

static void f_txn_destroy(kv_txn *kt) {
  ftxn *t = as_t(kt);
  drop_held(t);
  dv_free(t->held);
  F->fdb_transaction_destroy(t->tr);
  dv_free(t);
}

static int f_set_timeout_ms(kv_txn *kt, int ms) {
  ftxn *t = as_t(kt);
  t->timeout_ms = ms;
  fdb_error_t e = set_int_option(t->tr, FDB_TR_OPTION_TIMEOUT, ms);
  return e ? terr(t, e) : 0;
}

static int f_get_read_version(kv_txn *kt, int64_t *out) {
  ftxn *t = as_t(kt);
  FDBFuture *f = F->fdb_transaction_get_read_version(t->tr);
  int rc = wait_f(t, f);
  if (!rc && F->fdb_future_get_int64(f, out)) rc = DV_EIO;
  F->fdb_future_destroy(f);
  return rc;
}

static int f_on_error(kv_txn *kt, int rc) {
  ftxn *t = as_t(kt);
  fdb_error_t code = t->last_err && map_fdb(t->last_err) == rc ? t->last_err : -rc;
  FDBFuture *f = F->fdb_transaction_on_error(t->tr, code);
  fdb_error_t e = F->fdb_future_block_until_ready(f);
  if (!e) e = F->fdb_future_get_error(f);
  F->fdb_future_destroy(f);
  if (e) return map_fdb(e);
  t->fresh = 1; /* FDB reset the transaction after its backoff */
  return 0;
}

/* ---- reads ---------------------------------------------------------------------- */

static int f_get(kv_txn *kt, const uint8_t *k, size_t kl, int flags, const uint8_t **v, size_t *vl,
                 int *found) {
  ftxn *t = as_t(kt);
  FDBFuture *f = F->fdb_transaction_get(t->tr, k, (int)kl, (flags & KV_SNAPSHOT) != 0);
  int rc = wait_f(t, f);
  fdb_bool_t present = 0;
  const uint8_t *val = NULL;
  int len = 0;
  if (!rc && F->fdb_future_get_value(f, &present, &val, &len)) rc = DV_EIO;
  if (!rc && present) rc = hold(t, f);
  if (rc || !present) F->fdb_future_destroy(f);
  if (rc) return rc;
  *found = present != 0;
  *v = present ? val : NULL;
  *vl = present ? (size_t)len : 0;
  return 0;
}

static int f_iter_begin(kv_txn *kt, const uint8_t *b, size_t bl, const uint8_t *e, size_t el, int limit,
                        int flags, kv_iter **out) {
  fiter *it = kv__iter_new(sizeof *it, &fdb_methods, kt, b, bl, e, el, limit, flags);
  if (!it) return DV_ENOMEM;
  it->t = as_t(kt);
  it->more = 1;
  *out = &it->base;
  return 0;
}

static int set_bytes(uint8_t **p, size_t *len, size_t *cap, const uint8_t *src, size_t n, int extra0) {
  size_t need = n + (extra0 ? 1 : 0);
  if (need > *cap || !*p) {
    uint8_t *q = dv_realloc(*p, need ? need : 1);
    if (!q) return DV_ENOMEM;
    *p = q;
    *cap = need;
  }
  if (n) memcpy(*p, src, n);
  if (extra0) (*p)[n] = 0;
  *len = need;
  return 0;
}

/* Fetch the next batch: forward from cur (the last key + \0) to e, reverse
 * from b to cur (the last key, exclusive). */
static int fetch(fiter *it) {
  ftxn *t = it->t;
  int rev = (it->base.flags & KV_REVERSE) != 0;
  const uint8_t *b = it->base.b, *e = it->base.e;
  size_t bl = it->base.bl, el = it->base.el;
  if (it->has_cur) {
    if (rev) e = it->cur, el = it->cur_len;
    else b = it->cur, bl = it->cur_len;
  }
  int want = it->base.limit ? it->base.limit - it->returned : 0;
  if (it->batch) F->fdb_future_destroy(it->batch);
  it->batch = F->fdb_transaction_get_range(t->tr, b, (int)bl, 0, 1, e, (int)el, 0, 1, want, 0,
                                           FDB_STREAMING_MODE_ITERATOR, ++it->iteration, 1, rev);
  int rc = wait_f(t, it->batch);
  fdb_bool_t more = 0;
  if (!rc && F->fdb_future_get_keyvalue_array(it->batch, &it->kvs, &it->n, &more)) rc = DV_EIO;
  if (rc) {
    F->fdb_future_destroy(it->batch);
    it->batch = NULL;
    it->n = it->i = 0;
    return rc;
  }
  it->i = 0;
  it->more = more != 0;
  if (it->n) { /* the continuation: after (forward) or at (reverse) the batch's last key */
    const FDBKeyValue *l = &it->kvs[it->n - 1];
    size_t cap = 0;
    dv_free(it->cur);
    it->cur = NULL;
    rc = set_bytes(&it->cur, &it->cur_len, &cap, l->key, (size_t)l->key_length, !rev);
    if (rc) return rc;
    it->has_cur = 1;
  } else {
    it->more = 0;
  }
  return 0;
}

static int f_iter_next(kv_iter *ki, kv_pair *out) {
  fiter *it = (fiter *)ki;
  if (it->base.limit && it->returned >= it->base.limit) return 0;
  while (it->i >= it->n) {
    if (it->batch && !it->more) {
      it->at_end = 1;
      return 0;
    }
    int rc = fetch(it);
    if (rc) return rc;
  }
  const FDBKeyValue *p = &it->kvs[it->i++];
  out->key = p->key;
  out->key_len = (size_t)p->key_length;
  out->val = p->value;
  out->val_len = (size_t)p->value_length;
  it->returned++;
  int rc = set_bytes(&it->last, &it->last_len, &it->last_cap, p->key, (size_t)p->key_length, 0);
  if (rc) return rc;
  /* The last pair of the range, returned before the limit: complete. */
  if (it->i >= it->n && !it->more && (!it->base.limit || it->returned < it->base.limit)) it->at_end = 1;
  return 1;
}

static void f_iter_free(kv_iter *ki) {
  fiter *it = (fiter *)ki;
  ftxn *t = it->t;
  if (!(it->base.flags & KV_SNAPSHOT) && !t->base.err) {
    const uint8_t *b = it->base.b, *e = it->base.e;
    size_t bl = it->base.bl, el = it->base.el;
    uint8_t *tmp = NULL;
    int add = 1;
    if (!it->at_end) {
      if (!it->returned) add = 0;
      else if (it->base.flags & KV_REVERSE) b = it->last, bl = it->last_len;
      else {
        tmp = dv_malloc(it->last_len + 1);
        if (tmp) {
          memcpy(tmp, it->last, it->last_len);
          tmp[it->last_len] = 0;
          e = tmp, el = it->last_len + 1;
        } else {
          e = it->base.e, el = it->base.el; /* wider is safe */
        }
      }
    }
    if (add) (void)F->fdb_transaction_add_conflict_range(t->tr, b, (int)bl, e, (int)el,
                                                         FDB_CONFLICT_RANGE_TYPE_READ);
    dv_free(tmp);
  }
  if (it->batch) F->fdb_future_destroy(it->batch);
  dv_free(it->cur);
  dv_free(it->last);
  kv__iter_free(&it->base);
}

/* ---- writes ------------------------------------------------------------------------ */

static int f_set(kv_txn *kt, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  ftxn *t = as_t(kt);
  t->wrote = 1;
  F->fdb_transaction_set(t->tr, k, (int)kl, v, (int)vl);
  return 0;
}

static int f_clear(kv_txn *kt, const uint8_t *k, size_t kl) {
  ftxn *t = as_t(kt);
  t->wrote = 1;
  F->fdb_transaction_clear(t->tr, k, (int)kl);
  return 0;
}

static int f_clear_range(kv_txn *kt, const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  ftxn *t = as_t(kt);
  t->wrote = 1;
  F->fdb_transaction_clear_range(t->tr, b, (int)bl, e, (int)el);
  return 0;
}

static int f_atomic(kv_txn *kt, kv_atomic_op op, const uint8_t *k, size_t kl, const uint8_t *p, size_t pl) {
  ftxn *t = as_t(kt);
  int fop;
  switch (op) {
  case KV_ADD: fop = FDB_MUTATION_TYPE_ADD; break;
  case KV_MAX: fop = FDB_MUTATION_TYPE_MAX; break;
  case KV_MIN: fop = FDB_MUTATION_TYPE_MIN; break;
  case KV_BYTE_MIN: fop = FDB_MUTATION_TYPE_BYTE_MIN; break;
  case KV_BYTE_MAX: fop = FDB_MUTATION_TYPE_BYTE_MAX; break;
  default: return DV_EINVALID_MUTATION;
  }
  t->wrote = 1;
  F->fdb_transaction_atomic_op(t->tr, k, (int)kl, p, (int)pl, fop);
  return 0;
}

static int f_set_vs_key(kv_txn *kt, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  ftxn *t = as_t(kt);
  t->wrote = 1;
  F->fdb_transaction_atomic_op(t->tr, k, (int)kl, v, (int)vl, FDB_MUTATION_TYPE_SET_VERSIONSTAMPED_KEY);
  return 0;
}

static int f_set_vs_value(kv_txn *kt, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  ftxn *t = as_t(kt);
  t->wrote = 1;
  F->fdb_transaction_atomic_op(t->tr, k, (int)kl, v, (int)vl, FDB_MUTATION_TYPE_SET_VERSIONSTAMPED_VALUE);
  return 0;
}

static int f_add_conflict_range(kv_txn *kt, const uint8_t *b, size_t bl, const uint8_t *e, size_t el, int type) {
  ftxn *t = as_t(kt);
  if (type == KV_CONFLICT_WRITE) t->wrote = 1;
  fdb_error_t err = F->fdb_transaction_add_conflict_range(
      t->tr, b, (int)bl, e, (int)el, type == KV_CONFLICT_WRITE ? FDB_CONFLICT_RANGE_TYPE_WRITE : FDB_CONFLICT_RANGE_TYPE_READ);
  return err ? terr(t, err) : 0;
}

/* ---- commit ------------------------------------------------------------------------ */

static void commit_finish(ftxn *t) {
  if (t->commit_f) F->fdb_future_destroy(t->commit_f);
  if (t->stamp_f) F->fdb_future_destroy(t->stamp_f);
  t->commit_f = t->stamp_f = NULL;
  kv_commit_cb cb = t->cb;
  void *arg = t->cb_arg;
  cb(&t->base, t->commit_rc, arg); /* may reset or destroy t: last touch */
}

static void on_stamp(FDBFuture *f, void *arg) {
  ftxn *t = arg;
  const uint8_t *k;
  int kl;
  fdb_error_t e = F->fdb_future_get_error(f);
  if (!e) e = F->fdb_future_get_key(f, &k, &kl);
  if (!e && kl == KV_STAMP_LEN) {
    memcpy(t->stamp, k, KV_STAMP_LEN);
    t->have_stamp = 1;
  }
  commit_finish(t);
}

static void on_commit(FDBFuture *f, void *arg) {
  ftxn *t = arg;
  fdb_error_t e = F->fdb_future_get_error(f);
  if (e) {
    t->commit_rc = terr(t, e);
    commit_finish(t);
    return;
  }
  t->commit_rc = 0;
  t->committed = 1;
  if (F->fdb_transaction_get_committed_version(t->tr, &t->version)) t->version = -1;
  if (t->stamp_f && t->version >= 0) {
    if (F->fdb_future_set_callback(t->stamp_f, on_stamp, t)) commit_finish(t);
    return;
  }
  commit_finish(t);
}

static void f_commit_async(kv_txn *kt, kv_commit_cb cb, void *arg) {
  ftxn *t = as_t(kt);
  t->cb = cb;
  t->cb_arg = arg;
  t->committed = 0;
  t->have_stamp = 0;
  t->stamp_f = t->wrote ? F->fdb_transaction_get_versionstamp(t->tr) : NULL;
  t->commit_f = F->fdb_transaction_commit(t->tr);
  fdb_error_t e = F->fdb_future_set_callback(t->commit_f, on_commit, t);
  if (e) {
    t->commit_rc = terr(t, e);
    commit_finish(t);
  }
}

static int f_get_committed_version(kv_txn *kt, int64_t *out) {
  ftxn *t = as_t(kt);
  if (!t->committed) return DV_EINVAL;
  *out = t->version;
  return 0;
}

static int f_get_versionstamp(kv_txn *kt, uint8_t out[KV_STAMP_LEN]) {
  ftxn *t = as_t(kt);
  if (!t->committed || t->version < 0 || !t->have_stamp) return DV_EINVAL;
  memcpy(out, t->stamp, KV_STAMP_LEN);
  return 0;
}

/* ---- watches ------------------------------------------------------------------------ */

/* Call the user's callback with DV_ECANCELLED unless it ran already. */
static void watch_cancel_user(fwatch *w) {
  pthread_mutex_lock(&w->mu);
  int first = !w->state;
  w->state = 1;
  pthread_mutex_unlock(&w->mu);
  if (first) w->cb(w->arg, DV_ECANCELLED);
}

static void on_watch(FDBFuture *f, void *arg) {
  fwatch *w = arg;
  fdb_error_t e = F->fdb_future_get_error(f);
  pthread_mutex_lock(&w->mu);
  int first = !w->state;
  w->state = 1;
  pthread_mutex_unlock(&w->mu);
  if (first) w->cb(w->arg, map_fdb(e));
  pthread_mutex_lock(&w->mu);
  w->exited = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static int f_watch_add(kv_txn *kt, const uint8_t *k, size_t kl, kv_watch_cb cb, void *arg, kv_watch **out) {
  ftxn *t = as_t(kt);
  fwatch *w = dv_calloc(1, sizeof *w);
  if (!w) return DV_ENOMEM;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->base.m = &fdb_methods;
  w->cb = cb;
  w->arg = arg;
  w->f = F->fdb_transaction_watch(t->tr, k, (int)kl);
  fdb_db *d = (fdb_db *)t->base.db;
  pthread_mutex_lock(&g_watch_mu);
  w->d = d;
  w->next = d->watches;
  if (d->watches) d->watches->prev = w;
  d->watches = w;
  pthread_mutex_unlock(&g_watch_mu);
  fdb_error_t e = F->fdb_future_set_callback(w->f, on_watch, w);
  if (e) { /* no callback will come: behave as if it had run */
    pthread_mutex_lock(&w->mu);
    w->exited = 1;
    pthread_mutex_unlock(&w->mu);
  }
  *out = &w->base;
  return 0;
}

static void f_watch_free(kv_watch *kw) {
  fwatch *w = (fwatch *)kw;
  pthread_mutex_lock(&g_watch_mu);
  if (w->d) {
    if (w->prev) w->prev->next = w->next;
    else w->d->watches = w->next;
    if (w->next) w->next->prev = w->prev;
    w->d = NULL;
  }
  pthread_mutex_unlock(&g_watch_mu);
  watch_cancel_user(w);
  F->fdb_future_cancel(w->f);
  pthread_mutex_lock(&w->mu);
  while (!w->exited) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
  F->fdb_future_destroy(w->f);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  dv_free(w);
}

/* A client knows the API version it speaks; the cluster's storage (its
 * compaction, its memory) is the storage servers' and not seen here. */
static void f_info(kv_db *db, kv_info *out) {
  out->engine = "foundationdb";
  snprintf(out->version, sizeof out->version, "%d", g_api_version);
}

static const kv_methods fdb_methods = {
    .name = "fdb",
    .close = f_close,
    .db_version = f_db_version,
    .txn_begin = f_txn_begin,
    .txn_reset = f_txn_reset,
    .txn_destroy = f_txn_destroy,
    .get_read_version = f_get_read_version,
    .get = f_get,
    .iter_begin = f_iter_begin,
    .iter_next = f_iter_next,
    .iter_free = f_iter_free,
    .set = f_set,
    .clear = f_clear,
    .clear_range = f_clear_range,
    .atomic = f_atomic,
    .set_vs_key = f_set_vs_key,
    .set_vs_value = f_set_vs_value,
    .add_conflict_range = f_add_conflict_range,
    .commit_async = f_commit_async,
    .get_committed_version = f_get_committed_version,
    .get_versionstamp = f_get_versionstamp,
    .watch_add = f_watch_add,
    .watch_free = f_watch_free,
    .set_timeout_ms = f_set_timeout_ms,
    .on_error = f_on_error,
    .info = f_info,
};
