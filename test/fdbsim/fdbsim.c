/* fdbsim.c — a test double of libfdb_c, built as libfdb_c.so, with fault
 * injection.
 *
 * No FoundationDB is reachable here, so divan's fdb backend (src/kv/fdb.c)
 * is proven against this library: the subset of the libfdb_c C API that
 * fdb_api.h declares, same names, same ABI, same semantics as far as divan
 * can observe them, on top of divan's embedded engine (kv.h over rocks.c,
 * linked into this .so with hidden visibility and -Bsymbolic, so its kv_*
 * never mix with the host binary's own). It is a test tool, never shipped.
 *
 * Data flow:
 *   fdb_create_database(cluster file) -> the file's one line is
 *     "description:ID@DIR"; DIR is the engine's directory. Every
 *     FDBDatabase naming the same DIR shares one engine (refcounted), so
 *     two store instances in one process see one "cluster".
 *   FDBTransaction -> one kv_txn of the engine: read-your-writes,
 *     conflicts, versionstamps, limits and the 5-second age are the
 *     engine's (the same contract FDB has).
 *   reads -> computed on the caller's thread into memory the future owns;
 *     the future is ready at once (as FDB's are for cached reads) or, with
 *     the "slow" fault, later, from the network thread.
 *   commit -> the engine's asynchronous commit; its completion (engine
 *     thread) hands the future to the network thread, which sets the
 *     versionstamp future, then the commit future, and runs callbacks.
 *   watches -> kv_watch_add of the engine; firing completes the future.
 *   on_error -> retryable codes within the retry limit reset the
 *     transaction and complete after a jittered backoff (10 ms doubling
 *     to 1 s, as kv.c); other codes complete with themselves.
 *   fdb_run_network -> runs the queue of due tasks (callbacks, delayed
 *     completions) until fdb_stop_network; the "stall" fault sleeps it.
 *
 * Key selectors: only firstGreaterOrEqual (or_equal 0, offset 1) and
 * firstGreaterThan (1, 1) are supported, the ones divan uses; others fail
 * with client_invalid_operation (2000).
 *
 * Faults: FDBSIM_FAULTS="kind=probability[:count],…" (read at
 * fdb_setup_network) and FDBSIM_SEED, or fdbsim_set_fault() from a test.
 * Kinds: commit_unknown_after (commit applied, 1021 reported),
 * commit_unknown_before (not applied, 1021), not_committed (1020),
 * too_old (1007 on reads and commits), future_version (1009 on reads),
 * timed_out (1031 at commit, nothing applied), slow (a future completes
 * 1-20 ms late), stall (the network thread sleeps FDBSIM_STALL_MS, default
 * 30, before a task). Commit kinds apply only to transactions that wrote,
 * checked in that order, first hit wins (as kv/fault.c).
 * FDBSIM_NO_SYNC=1 opens the engine without WAL fsync (tests).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv/fdb_api.h"
#include "kv/kv_int.h"

#define SIM_API __attribute__((visibility("default")))

#define X_PROTO(ret, name, args) SIM_API ret name args;
FDB_API_FUNCS(X_PROTO)
#undef X_PROTO

SIM_API int fdbsim_set_fault(const char *kind, double probability, long count);
SIM_API long fdbsim_injected(const char *kind);
SIM_API void fdbsim_clear_faults(void);
SIM_API void fdbsim_seed(uint64_t seed);

/* ---- faults ------------------------------------------------------------------ */

enum {
  FK_UNKNOWN_AFTER, FK_UNKNOWN_BEFORE, FK_NOT_COMMITTED, FK_TOO_OLD, FK_FUTURE_VERSION,
  FK_TIMED_OUT, FK_SLOW, FK_STALL, FK_N
};
static const char *const fk_names[FK_N] = {"commit_unknown_after", "commit_unknown_before", "not_committed",
                                           "too_old", "future_version", "timed_out", "slow", "stall"};

static pthread_mutex_t fmu = PTHREAD_MUTEX_INITIALIZER; /* guards the fault state */
static double f_prob[FK_N];      /* chance per eligible operation */
static long f_count[FK_N];       /* injections left, < 0 unlimited */
static long f_injected[FK_N];    /* injections made */
static uint64_t f_rng = 0x66646273696dULL; /* splitmix64 state */
static int stall_ms = 30;        /* the stall fault's sleep */

static uint64_t rnd_locked(void) {
  uint64_t z = (f_rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int draw(int k) {
  pthread_mutex_lock(&fmu);
  int hit = 0;
  if (f_count[k] != 0 && f_prob[k] > 0) {
    double r = (double)(rnd_locked() >> 11) * (1.0 / 9007199254740992.0);
    if (r < f_prob[k]) {
      hit = 1;
      f_injected[k]++;
      if (f_count[k] > 0) f_count[k]--;
    }
  }
  pthread_mutex_unlock(&fmu);
  return hit;
}

static int rnd_below(int n) {
  pthread_mutex_lock(&fmu);
  int r = (int)(rnd_locked() % (uint64_t)n);
  pthread_mutex_unlock(&fmu);
  return r;
}

static int kind_of(const char *name, size_t n) {
  for (int k = 0; k < FK_N; k++)
    if (strlen(fk_names[k]) == n && !strncmp(fk_names[k], name, n)) return k;
  return -1;
}

int fdbsim_set_fault(const char *kind, double probability, long count) {
  int k = kind_of(kind, strlen(kind));
  if (k < 0) return -1;
  pthread_mutex_lock(&fmu);
  f_prob[k] = probability;
  f_count[k] = count;
  pthread_mutex_unlock(&fmu);
  return 0;
}

long fdbsim_injected(const char *kind) {
  int k = kind_of(kind, strlen(kind));
  if (k < 0) return -1;
  pthread_mutex_lock(&fmu);
  long n = f_injected[k];
  pthread_mutex_unlock(&fmu);
  return n;
}

void fdbsim_clear_faults(void) {
  pthread_mutex_lock(&fmu);
  for (int k = 0; k < FK_N; k++) f_prob[k] = 0, f_count[k] = 0;
  pthread_mutex_unlock(&fmu);
}

void fdbsim_seed(uint64_t seed) {
  pthread_mutex_lock(&fmu);
  f_rng = seed;
  pthread_mutex_unlock(&fmu);
}

static void faults_from_env(void) {
  const char *s = getenv("FDBSIM_FAULTS");
  const char *seed = getenv("FDBSIM_SEED");
  const char *st = getenv("FDBSIM_STALL_MS");
  if (seed) fdbsim_seed(strtoull(seed, NULL, 0));
  if (st) stall_ms = atoi(st);
  while (s && *s) {
    const char *end = strchr(s, ',');
    size_t n = end ? (size_t)(end - s) : strlen(s);
    const char *eq = memchr(s, '=', n);
    if (eq) {
      int k = kind_of(s, (size_t)(eq - s));
      char *rest;
      double p = strtod(eq + 1, &rest);
      long count = *rest == ':' ? strtol(rest + 1, NULL, 10) : -1;
      if (k >= 0) {
        f_prob[k] = p;
        f_count[k] = count;
      } else {
        fprintf(stderr, "fdbsim: unknown fault kind in FDBSIM_FAULTS: %.*s\n", (int)(eq - s), s);
      }
    }
    s = end ? end + 1 : NULL;
  }
}

/* ---- time and the network thread ------------------------------------------------ */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct task {
  int64_t due;               /* monotonic ms */
  void (*fn)(void *arg);     /* work */
  void *arg;                 /* its argument */
  struct task *next;         /* queue, by due time */
} task;

static pthread_mutex_t nmu = PTHREAD_MUTEX_INITIALIZER; /* guards the network state */
static pthread_cond_t ncv = PTHREAD_COND_INITIALIZER;   /* new task or stop */
static task *queue;              /* pending tasks, earliest first */
static int api_version;          /* selected, 0 = none */
static int net_setup;            /* fdb_setup_network called */
static int net_stop;             /* fdb_stop_network called */
static int net_running;          /* fdb_run_network is looping */
static pthread_t net_thread;     /* the thread in fdb_run_network */

static int on_network(void) { return net_running && pthread_equal(pthread_self(), net_thread); }

static void post(int64_t delay_ms, void (*fn)(void *), void *arg) {
  task *t = malloc(sizeof *t);
  if (!t) abort(); /* a test tool: no way to report it */
  t->due = now_ms() + delay_ms;
  t->fn = fn;
  t->arg = arg;
  pthread_mutex_lock(&nmu);
  task **p = &queue;
  while (*p && (*p)->due <= t->due) p = &(*p)->next;
  t->next = *p;
  *p = t;
  pthread_cond_signal(&ncv);
  pthread_mutex_unlock(&nmu);
}

fdb_error_t fdb_run_network(void) {
  pthread_mutex_lock(&nmu);
  if (!net_setup) {
    pthread_mutex_unlock(&nmu);
    return FDB_ERR_NETWORK_NOT_SETUP;
  }
  net_thread = pthread_self();
  net_running = 1;
  while (!net_stop) {
    if (!queue) {
      pthread_cond_wait(&ncv, &nmu);
      continue;
    }
    int64_t wait = queue->due - now_ms();
    if (wait > 0) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += wait / 1000;
      ts.tv_nsec += (long)(wait % 1000) * 1000000L;
      if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&ncv, &nmu, &ts);
      continue;
    }
    task *t = queue;
    queue = t->next;
    pthread_mutex_unlock(&nmu);
    if (draw(FK_STALL)) usleep((useconds_t)stall_ms * 1000);
    t->fn(t->arg);
    free(t);
    pthread_mutex_lock(&nmu);
  }
  net_running = 0;
  pthread_mutex_unlock(&nmu);
  return 0;
}

fdb_error_t fdb_stop_network(void) {
  pthread_mutex_lock(&nmu);
  int ok = net_setup;
  net_stop = 1;
  pthread_cond_broadcast(&ncv);
  pthread_mutex_unlock(&nmu);
  return ok ? 0 : FDB_ERR_NETWORK_NOT_SETUP;
}

fdb_error_t fdb_setup_network(void) {
  pthread_mutex_lock(&nmu);
  int again = net_setup;
  net_setup = 1;
  pthread_mutex_unlock(&nmu);
  if (again) return FDB_ERR_NETWORK_ALREADY_SETUP;
  faults_from_env();
  return 0;
}

fdb_error_t fdb_network_set_option(int option, const uint8_t *value, int value_length) { return 0; }

int fdb_get_max_api_version(void) { return FDB_DIVAN_API_VERSION; }

fdb_error_t fdb_select_api_version_impl(int runtime_version, int header_version) {
  if (runtime_version > FDB_DIVAN_API_VERSION || header_version < runtime_version)
    return FDB_ERR_API_VERSION_UNSUPPORTED;
  if (api_version) return FDB_ERR_API_VERSION_ALREADY_SET;
  api_version = runtime_version;
  return 0;
}

/* ---- errors ----------------------------------------------------------------------- */

static int retryable(fdb_error_t e) {
  switch (e) {
  case 1007: case 1009: case 1020: case 1021: case 1037: case 1038: case 1042: case 1051:
  case 1078: case 1213: return 1;
  default: return 0;
  }
}

fdb_bool_t fdb_error_predicate(int test, fdb_error_t e) {
  switch (test) {
  case FDB_ERROR_PREDICATE_RETRYABLE: return retryable(e);
  case FDB_ERROR_PREDICATE_MAYBE_COMMITTED: return e == 1021;
  case FDB_ERROR_PREDICATE_RETRYABLE_NOT_COMMITTED: return retryable(e) && e != 1021;
  default: return 0;
  }
}

const char *fdb_get_error(fdb_error_t e) {
  switch (e) {
  case 0: return "Success";
  case 1004: return "Operation timed out";
  case 1007: return "Transaction is too old to perform reads or be committed";
  case 1009: return "Request for future version";
  case 1020: return "Transaction not committed due to conflict with another transaction";
  case 1021: return "Transaction may or may not have committed";
  case 1025: return "Operation aborted because the transaction was cancelled";
  case 1031: return "Operation aborted because the transaction timed out";
  case 1036: return "Read or wrote an unreadable key";
  case 1101: return "Asynchronous operation cancelled";
  case 2000: return "Invalid API call";
  case 2004: return "Key outside legal range";
  case 2005: return "Range begin key larger than end key";
  case 2017: return "Operation issued while a commit was outstanding";
  case 2018: return "Mutation type not valid";
  case 2021: return "Transaction is read-only and therefore does not have a commit version";
  case 2101: return "Transaction exceeds byte limit";
  case 2102: return "Key length exceeds limit";
  case 2103: return "Value length exceeds limit";
  case 2104: return "Connection string invalid";
  case 2201: return "API version may be set only once";
  case 2203: return "API version not supported";
  default: return "Unknown error";
  }
}

/* An engine error as FDB's number: kv codes are FDB's, negated. */
static fdb_error_t from_dv(int rc) {
  if (!rc) return 0;
  if (rc == DV_ECANCELLED) return FDB_ERR_TRANSACTION_CANCELLED;
  if (rc < 0 && rc > -3000) return -rc;
  return FDB_ERR_INTERNAL;
}

/* ---- futures --------------------------------------------------------------------------- */

struct FDB_future {
  pthread_mutex_t mu;        /* guards everything below */
  pthread_cond_t cv;         /* readiness */
  int refs;                  /* the user's, plus one per queued task */
  int ready;                 /* 1 once set */
  fdb_error_t err;           /* its error */
  FDBCallback cb;            /* callback, once set */
  void *cb_arg;              /* its parameter */
  int cb_done;               /* callback dispatched */
  int destroyed;             /* the user let go: do not call back */
  int64_t i64;               /* int64 result */
  int present;               /* value result: key was present */
  uint8_t *data;             /* owned bytes: value, key, or the pairs' bytes */
  int len;                   /* value/key length */
  FDBKeyValue *kvs;          /* range result */
  int count, more;           /* its count and more flag */
  kv_watch *watch;           /* a watch future's engine watch */
  int watch_freed;           /* 1 once kv_watch_free ran */
};

static FDBFuture *fut_new(void) {
  FDBFuture *f = calloc(1, sizeof *f);
  if (!f) abort();
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  f->refs = 1;
  return f;
}

static void fut_unref(FDBFuture *f) {
  pthread_mutex_lock(&f->mu);
  int left = --f->refs;
  pthread_mutex_unlock(&f->mu);
  if (left) return;
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->cv);
  free(f->data);
  free(f->kvs);
  free(f);
}

static void run_cb(void *arg) {
  FDBFuture *f = arg;
  pthread_mutex_lock(&f->mu);
  FDBCallback cb = f->destroyed ? NULL : f->cb;
  void *cb_arg = f->cb_arg;
  pthread_mutex_unlock(&f->mu);
  if (cb) cb(f, cb_arg);
  fut_unref(f);
}

/* Make f ready: waiters wake, a set callback runs on the network thread. */
static void fut_set(FDBFuture *f, fdb_error_t err) {
  pthread_mutex_lock(&f->mu);
  if (f->ready) {
    pthread_mutex_unlock(&f->mu);
    return;
  }
  f->ready = 1;
  f->err = err;
  int call = f->cb && !f->cb_done;
  if (call) {
    f->cb_done = 1;
    f->refs++;
  }
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  if (call) {
    if (on_network()) run_cb(f);
    else post(0, run_cb, f);
  }
}

typedef struct late { FDBFuture *f; fdb_error_t err; } late;

static void late_set(void *arg) {
  late *l = arg;
  fut_set(l->f, l->err);
  fut_unref(l->f);
  free(l);
}

/* Complete now, or later with the "slow" fault. */
static void fut_finish(FDBFuture *f, fdb_error_t err) {
  if (!draw(FK_SLOW)) {
    fut_set(f, err);
    return;
  }
  late *l = malloc(sizeof *l);
  if (!l) abort();
  l->f = f;
  l->err = err;
  pthread_mutex_lock(&f->mu);
  f->refs++;
  pthread_mutex_unlock(&f->mu);
  post(1 + rnd_below(20), late_set, l);
}

fdb_bool_t fdb_future_is_ready(FDBFuture *f) {
  pthread_mutex_lock(&f->mu);
  int r = f->ready;
  pthread_mutex_unlock(&f->mu);
  return r;
}

fdb_error_t fdb_future_block_until_ready(FDBFuture *f) {
  pthread_mutex_lock(&f->mu);
  while (!f->ready) pthread_cond_wait(&f->cv, &f->mu);
  pthread_mutex_unlock(&f->mu);
  return 0;
}

fdb_error_t fdb_future_set_callback(FDBFuture *f, FDBCallback cb, void *arg) {
  pthread_mutex_lock(&f->mu);
  f->cb = cb;
  f->cb_arg = arg;
  int now = f->ready && !f->cb_done;
  if (now) f->cb_done = 1;
  pthread_mutex_unlock(&f->mu);
  if (now) cb(f, arg); /* already ready: FDB calls back on this thread */
  return 0;
}

fdb_error_t fdb_future_get_error(FDBFuture *f) {
  pthread_mutex_lock(&f->mu);
  fdb_error_t e = f->ready ? f->err : FDB_ERR_CLIENT_INVALID_OPERATION;
  pthread_mutex_unlock(&f->mu);
  return e;
}

fdb_error_t fdb_future_get_int64(FDBFuture *f, int64_t *out) {
  fdb_error_t e = fdb_future_get_error(f);
  if (!e) *out = f->i64;
  return e;
}

fdb_error_t fdb_future_get_key(FDBFuture *f, const uint8_t **out_key, int *out_len) {
  fdb_error_t e = fdb_future_get_error(f);
  if (!e) *out_key = f->data, *out_len = f->len;
  return e;
}

fdb_error_t fdb_future_get_value(FDBFuture *f, fdb_bool_t *present, const uint8_t **v, int *vl) {
  fdb_error_t e = fdb_future_get_error(f);
  if (!e) *present = f->present, *v = f->data, *vl = f->len;
  return e;
}

fdb_error_t fdb_future_get_keyvalue_array(FDBFuture *f, const FDBKeyValue **kv, int *count, fdb_bool_t *more) {
  fdb_error_t e = fdb_future_get_error(f);
  if (!e) *kv = f->kvs, *count = f->count, *more = f->more;
  return e;
}

static void watch_release(FDBFuture *f) {
  pthread_mutex_lock(&f->mu);
  kv_watch *w = f->watch_freed ? NULL : f->watch;
  f->watch_freed = 1;
  pthread_mutex_unlock(&f->mu);
  if (w) kv_watch_free(w); /* an unfired watch calls back: operation_cancelled */
}

void fdb_future_cancel(FDBFuture *f) {
  if (f->watch) watch_release(f);
  fut_set(f, FDB_ERR_OPERATION_CANCELLED);
}

void fdb_future_destroy(FDBFuture *f) {
  if (f->watch) watch_release(f);
  pthread_mutex_lock(&f->mu);
  f->destroyed = 1;
  pthread_mutex_unlock(&f->mu);
  fut_unref(f);
}

/* ---- databases: engines shared by directory ----------------------------------------- */

typedef struct engine {
  char *dir;               /* the directory named by the cluster file */
  kv_db *kv;               /* the embedded engine */
  int refs;                /* FDBDatabase handles on it */
  struct engine *next;     /* registry */
} engine;

static pthread_mutex_t emu = PTHREAD_MUTEX_INITIALIZER; /* guards the registry */
static engine *engines;  /* open engines */

struct FDB_database {
  engine *e;               /* shared engine */
};

static char *cluster_dir(const char *path) {
  if (!path || !*path) path = getenv("FDB_CLUSTER_FILE");
  if (!path || !*path) path = "/etc/foundationdb/fdb.cluster";
  FILE *fp = fopen(path, "r");
  if (!fp) return NULL;
  char line[4096];
  char *got = fgets(line, sizeof line, fp);
  fclose(fp);
  if (!got) return NULL;
  line[strcspn(line, "\r\n")] = 0;
  char *at = strrchr(line, '@');
  if (!at || !at[1]) return NULL;
  return strdup(at + 1);
}

fdb_error_t fdb_create_database(const char *cluster_file, FDBDatabase **out) {
  if (!net_setup) return FDB_ERR_NETWORK_NOT_SETUP;
  char *dir = cluster_dir(cluster_file);
  if (!dir) return 2104; /* connection_string_invalid */
  pthread_mutex_lock(&emu);
  engine *e = engines;
  while (e && strcmp(e->dir, dir)) e = e->next;
  if (!e) {
    e = calloc(1, sizeof *e);
    kv_rocks_opts o = {0};
    o.create_if_missing = 1;
    o.no_sync = getenv("FDBSIM_NO_SYNC") && atoi(getenv("FDBSIM_NO_SYNC"));
    if (!e || kv_open_rocks(dir, &o, &e->kv)) {
      pthread_mutex_unlock(&emu);
      free(e);
      free(dir);
      return FDB_ERR_INTERNAL;
    }
    e->dir = dir;
    dir = NULL;
    e->next = engines;
    engines = e;
  }
  e->refs++;
  pthread_mutex_unlock(&emu);
  free(dir);
  FDBDatabase *d = calloc(1, sizeof *d);
  if (!d) abort();
  d->e = e;
  *out = d;
  return 0;
}

void fdb_database_destroy(FDBDatabase *d) {
  if (!d) return;
  pthread_mutex_lock(&emu);
  engine *e = d->e;
  int last = --e->refs == 0;
  if (last) {
    engine **p = &engines;
    while (*p != e) p = &(*p)->next;
    *p = e->next;
  }
  pthread_mutex_unlock(&emu);
  if (last) {
    kv_close(e->kv);
    free(e->dir);
    free(e);
  }
  free(d);
}

/* ---- transactions ---------------------------------------------------------------------- */

struct FDB_transaction {
  FDBDatabase *d;            /* owner */
  kv_txn *t;                 /* the engine's transaction */
  int wrote;                 /* any mutation or write conflict range */
  int64_t size_limit;        /* SIZE_LIMIT option */
  int64_t retry_limit;       /* RETRY_LIMIT option, -1 = none */
  int retries;               /* on_error retries since reset */
  int committed;             /* 1 after a successful commit */
  int64_t version;           /* committed version, -1 read-only */
  FDBFuture *commit_f;       /* commit in flight */
  FDBFuture *stamp_f;        /* versionstamp future handed out, or NULL */
  fdb_error_t pending_after; /* report 1021 after applying */
  fdb_error_t sticky;        /* error of a failed call, for the next future */
  int timeout_ms;            /* TIMEOUT option (kept across on_error) */
};

static void txn_defaults(FDBTransaction *tr) {
  tr->wrote = 0;
  tr->size_limit = KV_MAX_TXN_BYTES;
  tr->retry_limit = -1;
  tr->retries = 0;
  tr->committed = 0;
  tr->version = -1;
  tr->sticky = 0;
  kv_set_retry_limit(tr->t, -1);
}

fdb_error_t fdb_database_create_transaction(FDBDatabase *d, FDBTransaction **out) {
  FDBTransaction *tr = calloc(1, sizeof *tr);
  if (!tr) abort();
  int rc = kv_txn_begin(d->e->kv, &tr->t);
  if (rc) {
    free(tr);
    return from_dv(rc);
  }
  tr->d = d;
  txn_defaults(tr);
  *out = tr;
  return 0;
}

static void drop_stamp(FDBTransaction *tr, fdb_error_t err) {
  if (!tr->stamp_f) return;
  fut_set(tr->stamp_f, err);
  fut_unref(tr->stamp_f);
  tr->stamp_f = NULL;
}

void fdb_transaction_reset(FDBTransaction *tr) {
  drop_stamp(tr, FDB_ERR_TRANSACTION_CANCELLED);
  kv_txn_reset(tr->t);
  txn_defaults(tr);
  tr->timeout_ms = 0; /* options do not survive a reset */
  (void)kv_set_timeout_ms(tr->t, 0);
}

void fdb_transaction_cancel(FDBTransaction *tr) { tr->sticky = FDB_ERR_TRANSACTION_CANCELLED; }

void fdb_transaction_destroy(FDBTransaction *tr) {
  if (!tr) return;
  drop_stamp(tr, FDB_ERR_TRANSACTION_CANCELLED);
  kv_txn_destroy(tr->t);
  free(tr);
}

static int64_t le_int(const uint8_t *v, int n) {
  uint64_t u = 0;
  for (int i = 0; i < n && i < 8; i++) u |= (uint64_t)v[i] << (8 * i);
  return (int64_t)u;
}

fdb_error_t fdb_transaction_set_option(FDBTransaction *tr, int option, const uint8_t *v, int vl) {
  if (vl != 8) return FDB_ERR_INVALID_OPTION_VALUE;
  int64_t x = le_int(v, vl);
  switch (option) {
  case FDB_TR_OPTION_TIMEOUT:
    if (x < 0 || x > INT32_MAX) return FDB_ERR_INVALID_OPTION_VALUE;
    tr->timeout_ms = (int)x;
    return from_dv(kv_set_timeout_ms(tr->t, (int)x));
  case FDB_TR_OPTION_RETRY_LIMIT:
    if (x < -1 || x > INT32_MAX) return FDB_ERR_INVALID_OPTION_VALUE;
    tr->retry_limit = x;
    return 0;
  case FDB_TR_OPTION_SIZE_LIMIT:
    if (x < 32 || x > KV_MAX_TXN_BYTES) return FDB_ERR_INVALID_OPTION_VALUE;
    tr->size_limit = x;
    return 0;
  default: return FDB_ERR_INVALID_OPTION;
  }
}

/* A new future for a read, or one already failed with the sticky error or
 * a read fault. */
static FDBFuture *read_future(FDBTransaction *tr, fdb_error_t *out_err) {
  FDBFuture *f = fut_new();
  fdb_error_t e = tr->sticky;
  if (!e && draw(FK_TOO_OLD)) e = FDB_ERR_TRANSACTION_TOO_OLD;
  if (!e && draw(FK_FUTURE_VERSION)) e = FDB_ERR_FUTURE_VERSION;
  *out_err = e;
  return f;
}

FDBFuture *fdb_transaction_get_read_version(FDBTransaction *tr) {
  fdb_error_t e;
  FDBFuture *f = read_future(tr, &e);
  if (!e) e = from_dv(kv_get_read_version(tr->t, &f->i64));
  fut_finish(f, e);
  return f;
}

FDBFuture *fdb_transaction_get(FDBTransaction *tr, const uint8_t *k, int kl, fdb_bool_t snapshot) {
  fdb_error_t e;
  FDBFuture *f = read_future(tr, &e);
  if (!e) {
    const uint8_t *v;
    size_t vl;
    int found;
    e = from_dv(kv_get(tr->t, k, (size_t)kl, snapshot ? KV_SNAPSHOT : 0, &v, &vl, &found));
    if (!e && found) {
      f->data = malloc(vl ? vl : 1);
      if (!f->data) abort();
      if (vl) memcpy(f->data, v, vl);
      f->len = (int)vl;
      f->present = 1;
    }
  }
  fut_finish(f, e);
  return f;
}

/* Pairs per batch in each streaming mode (0: as many as the limit allows),
 * and bytes per batch. */
static void batch_size(int mode, int iteration, int limit, int *rows, size_t *bytes) {
  int it = iteration < 1 ? 1 : iteration > 9 ? 9 : iteration;
  switch (mode) {
  case FDB_STREAMING_MODE_ITERATOR: *rows = 16 << (it - 1); *bytes = (size_t)8192 << (it - 1); break;
  case FDB_STREAMING_MODE_SMALL: *rows = 32; *bytes = 4096; break;
  case FDB_STREAMING_MODE_MEDIUM: *rows = 256; *bytes = 65536; break;
  case FDB_STREAMING_MODE_LARGE: *rows = 1024; *bytes = 1 << 20; break;
  default: *rows = 0; *bytes = 0; break; /* WANT_ALL, EXACT, SERIAL */
  }
  if (limit > 0 && (!*rows || limit < *rows)) *rows = limit;
}

FDBFuture *fdb_transaction_get_range(FDBTransaction *tr, const uint8_t *bk, int bkl, fdb_bool_t b_or_equal,
                                     int b_offset, const uint8_t *ek, int ekl, fdb_bool_t e_or_equal,
                                     int e_offset, int limit, int target_bytes, int mode, int iteration,
                                     fdb_bool_t snapshot, fdb_bool_t reverse) {
  fdb_error_t e;
  FDBFuture *f = read_future(tr, &e);
  if (!e && (b_offset != 1 || e_offset != 1 || limit < 0 || (mode == FDB_STREAMING_MODE_EXACT && !limit) ||
             mode < FDB_STREAMING_MODE_WANT_ALL || mode > FDB_STREAMING_MODE_SERIAL))
    e = FDB_ERR_CLIENT_INVALID_OPERATION;
  /* firstGreaterThan(k) is firstGreaterOrEqual(k + \0). */
  uint8_t *b2 = NULL, *e2 = NULL;
  if (!e && b_or_equal) {
    b2 = malloc((size_t)bkl + 1);
    memcpy(b2, bk, (size_t)bkl);
    b2[bkl] = 0;
    bk = b2, bkl++;
  }
  if (!e && e_or_equal) {
    e2 = malloc((size_t)ekl + 1);
    memcpy(e2, ek, (size_t)ekl);
    e2[ekl] = 0;
    ek = e2, ekl++;
  }
  int rows;
  size_t max_bytes;
  batch_size(mode, iteration, limit, &rows, &max_bytes);
  if (target_bytes > 0 && (!max_bytes || (size_t)target_bytes < max_bytes)) max_bytes = (size_t)target_bytes;
  kv_iter *it = NULL;
  /* An empty or inverted selector range is empty, as in FDB. */
  int cmp = memcmp(bk, ek, (size_t)(bkl < ekl ? bkl : ekl));
  int empty = cmp > 0 || (cmp == 0 && bkl >= ekl);
  if (!e && !empty) {
    int flags = (snapshot ? KV_SNAPSHOT : 0) | (reverse ? KV_REVERSE : 0);
    e = from_dv(kv_iter_begin(tr->t, bk, (size_t)bkl, ek, (size_t)ekl, rows, flags, &it));
  }
  size_t cap = 0, used = 0, n = 0, ncap = 0, total = 0;
  uint8_t *buf = NULL;
  size_t *offs = NULL;
  kv_pair p;
  int rc = 0;
  while (!e && it && (rc = kv_iter_next(it, &p)) == 1) {
    if (used + p.key_len + p.val_len > cap) {
      cap = (used + p.key_len + p.val_len) * 2 + 256;
      buf = realloc(buf, cap);
      if (!buf) abort();
    }
    if (n == ncap) {
      ncap = ncap ? ncap * 2 : 64;
      offs = realloc(offs, ncap * 4 * sizeof *offs);
      if (!offs) abort();
    }
    offs[4 * n] = used, offs[4 * n + 1] = p.key_len;
    memcpy(buf + used, p.key, p.key_len), used += p.key_len;
    offs[4 * n + 2] = used, offs[4 * n + 3] = p.val_len;
    if (p.val_len) memcpy(buf + used, p.val, p.val_len);
    used += p.val_len;
    n++;
    total += p.key_len + p.val_len;
    if ((rows && (int)n >= rows) || (max_bytes && total >= max_bytes)) break;
  }
  if (!e && it && rc < 0) e = from_dv(rc);
  kv_iter_free(it); /* the engine records the read conflict up to where it stopped */
  if (!e) {
    f->kvs = calloc(n ? n : 1, sizeof *f->kvs);
    if (!f->kvs) abort();
    f->data = buf;
    buf = NULL;
    for (size_t i = 0; i < n; i++) {
      f->kvs[i].key = f->data + offs[4 * i];
      f->kvs[i].key_length = (int)offs[4 * i + 1];
      f->kvs[i].value = f->data + offs[4 * i + 2];
      f->kvs[i].value_length = (int)offs[4 * i + 3];
    }
    f->count = (int)n;
    /* More may follow when the batch stopped on its size or the limit
     * before the engine said the range was exhausted. */
    f->more = it && rc == 1;
  }
  free(buf);
  free(offs);
  free(b2);
  free(e2);
  fut_finish(f, e);
  return f;
}

/* Writes: errors are kept for the next future or the commit, as FDB's. */
static void keep(FDBTransaction *tr, int rc) {
  if (rc && !tr->sticky) tr->sticky = from_dv(rc);
}

void fdb_transaction_set(FDBTransaction *tr, const uint8_t *k, int kl, const uint8_t *v, int vl) {
  tr->wrote = 1;
  keep(tr, kv_set(tr->t, k, (size_t)kl, v, (size_t)vl));
}

void fdb_transaction_clear(FDBTransaction *tr, const uint8_t *k, int kl) {
  tr->wrote = 1;
  keep(tr, kv_clear(tr->t, k, (size_t)kl));
}

void fdb_transaction_clear_range(FDBTransaction *tr, const uint8_t *b, int bl, const uint8_t *e, int el) {
  tr->wrote = 1;
  keep(tr, kv_clear_range(tr->t, b, (size_t)bl, e, (size_t)el));
}

void fdb_transaction_atomic_op(FDBTransaction *tr, const uint8_t *k, int kl, const uint8_t *p, int pl, int op) {
  tr->wrote = 1;
  int rc;
  switch (op) {
  case FDB_MUTATION_TYPE_ADD: rc = kv_atomic(tr->t, KV_ADD, k, (size_t)kl, p, (size_t)pl); break;
  case FDB_MUTATION_TYPE_MAX: rc = kv_atomic(tr->t, KV_MAX, k, (size_t)kl, p, (size_t)pl); break;
  case FDB_MUTATION_TYPE_MIN: rc = kv_atomic(tr->t, KV_MIN, k, (size_t)kl, p, (size_t)pl); break;
  case FDB_MUTATION_TYPE_BYTE_MIN: rc = kv_atomic(tr->t, KV_BYTE_MIN, k, (size_t)kl, p, (size_t)pl); break;
  case FDB_MUTATION_TYPE_BYTE_MAX: rc = kv_atomic(tr->t, KV_BYTE_MAX, k, (size_t)kl, p, (size_t)pl); break;
  case FDB_MUTATION_TYPE_SET_VERSIONSTAMPED_KEY:
    rc = kv_set_versionstamped_key(tr->t, k, (size_t)kl, p, (size_t)pl);
    break;
  case FDB_MUTATION_TYPE_SET_VERSIONSTAMPED_VALUE:
    rc = kv_set_versionstamped_value(tr->t, k, (size_t)kl, p, (size_t)pl);
    break;
  default: rc = DV_EINVALID_MUTATION; break;
  }
  keep(tr, rc);
}

fdb_error_t fdb_transaction_add_conflict_range(FDBTransaction *tr, const uint8_t *b, int bl, const uint8_t *e,
                                               int el, int type) {
  if (type == FDB_CONFLICT_RANGE_TYPE_WRITE) tr->wrote = 1;
  return from_dv(kv_add_conflict_range(tr->t, b, (size_t)bl, e, (size_t)el,
                                       type == FDB_CONFLICT_RANGE_TYPE_WRITE ? KV_CONFLICT_WRITE : KV_CONFLICT_READ));
}

/* ---- commit ----------------------------------------------------------------------------- */

FDBFuture *fdb_transaction_get_versionstamp(FDBTransaction *tr) {
  FDBFuture *f = fut_new();
  drop_stamp(tr, FDB_ERR_TRANSACTION_CANCELLED);
  f->refs++; /* the transaction's */
  tr->stamp_f = f;
  return f;
}

typedef struct done_arg { FDBTransaction *tr; int rc; } done_arg;

/* Network thread: the engine's commit finished. */
static void commit_done_net(void *arg) {
  done_arg *a = arg;
  FDBTransaction *tr = a->tr;
  int rc = a->rc;
  free(a);
  fdb_error_t e = from_dv(rc);
  if (!e) {
    tr->committed = 1;
    if (kv_get_committed_version(tr->t, &tr->version)) tr->version = -1;
  }
  if (tr->pending_after && (!e || e == FDB_ERR_NOT_COMMITTED)) e = tr->pending_after;
  tr->pending_after = 0;
  if (tr->stamp_f) {
    FDBFuture *s = tr->stamp_f;
    tr->stamp_f = NULL;
    uint8_t st[KV_STAMP_LEN];
    fdb_error_t se = e;
    if (!se && (tr->version < 0 || kv_get_versionstamp(tr->t, st))) se = FDB_ERR_NO_COMMIT_VERSION;
    if (!se) {
      s->data = malloc(KV_STAMP_LEN);
      if (!s->data) abort();
      memcpy(s->data, st, KV_STAMP_LEN);
      s->len = KV_STAMP_LEN;
    }
    fut_set(s, se);
    fut_unref(s);
  }
  FDBFuture *f = tr->commit_f;
  tr->commit_f = NULL;
  fut_finish(f, e);
  fut_unref(f); /* the transaction's reference */
}

static void engine_commit_done(kv_txn *t, int rc, void *arg) {
  done_arg *a = malloc(sizeof *a);
  if (!a) abort();
  a->tr = arg;
  a->rc = rc;
  post(0, commit_done_net, a);
}

FDBFuture *fdb_transaction_commit(FDBTransaction *tr) {
  FDBFuture *f = fut_new();
  fdb_error_t e = tr->sticky;
  if (!e && tr->wrote) {
    if (draw(FK_UNKNOWN_AFTER)) tr->pending_after = FDB_ERR_COMMIT_UNKNOWN_RESULT;
    else if (draw(FK_UNKNOWN_BEFORE)) e = FDB_ERR_COMMIT_UNKNOWN_RESULT;
    else if (draw(FK_NOT_COMMITTED)) e = FDB_ERR_NOT_COMMITTED;
    else if (draw(FK_TOO_OLD)) e = FDB_ERR_TRANSACTION_TOO_OLD;
    else if (draw(FK_TIMED_OUT)) e = FDB_ERR_TRANSACTION_TIMED_OUT;
  }
  if (!e && tr->t->bytes > (size_t)tr->size_limit) e = FDB_ERR_TRANSACTION_TOO_LARGE;
  if (e) {
    tr->pending_after = 0;
    drop_stamp(tr, e);
    fut_finish(f, e);
    return f;
  }
  f->refs++; /* held by tr until the engine answers */
  tr->commit_f = f;
  kv_commit_async(tr->t, engine_commit_done, tr);
  return f;
}

fdb_error_t fdb_transaction_get_committed_version(FDBTransaction *tr, int64_t *out) {
  *out = tr->committed ? tr->version : -1;
  return 0;
}

/* ---- watches -------------------------------------------------------------------------------- */

static void watch_fired(void *arg, int rc) {
  FDBFuture *f = arg;
  fut_set(f, rc == DV_ECANCELLED ? FDB_ERR_OPERATION_CANCELLED : from_dv(rc));
}

FDBFuture *fdb_transaction_watch(FDBTransaction *tr, const uint8_t *k, int kl) {
  FDBFuture *f = fut_new();
  if (tr->sticky) {
    fut_set(f, tr->sticky);
    return f;
  }
  kv_watch *w = NULL;
  int rc = kv_watch_add(tr->t, k, (size_t)kl, watch_fired, f, &w);
  if (rc) fut_set(f, from_dv(rc));
  else f->watch = w;
  return f;
}

/* ---- on_error ----------------------------------------------------------------------------- */

static void set_ok(void *arg) {
  FDBFuture *f = arg;
  fut_set(f, 0);
  fut_unref(f);
}

FDBFuture *fdb_transaction_on_error(FDBTransaction *tr, fdb_error_t code) {
  FDBFuture *f = fut_new();
  if (!retryable(code) || (tr->retry_limit >= 0 && tr->retries >= tr->retry_limit)) {
    fut_set(f, code);
    return f;
  }
  int d = 10;
  for (int i = 0; i < tr->retries && d < 1000; i++) d *= 2;
  if (d > 1000) d = 1000;
  int ms = tr->retries == 0 && code == FDB_ERR_NOT_COMMITTED ? 0 : d / 2 + rnd_below(d / 2 + 1);
  int retries = tr->retries + 1;
  int64_t limit = tr->retry_limit;
  int64_t size_limit = tr->size_limit;
  int timeout_ms = tr->timeout_ms;
  fdb_transaction_reset(tr);
  tr->timeout_ms = timeout_ms;
  (void)kv_set_timeout_ms(tr->t, timeout_ms);
  tr->retries = retries; /* options persist across on_error (API >= 610) */
  tr->retry_limit = limit;
  tr->size_limit = size_limit;
  if (!ms) {
    fut_set(f, 0);
    return f;
  }
  pthread_mutex_lock(&f->mu);
  f->refs++;
  pthread_mutex_unlock(&f->mu);
  post(ms, set_ok, f);
  return f;
}
