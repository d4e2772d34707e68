/* kv_int.h — what backend files share; nothing outside src/kv includes it.
 *
 * A backend is a table of function pointers (SQLite's sqlite3_io_methods):
 * kv.c validates every call against the contract once — limits, legal
 * keys, the sticky error of a failed transaction, the byte budget — and
 * then dispatches here, so each backend implements only the mechanics.
 * Each backend's structs begin with the base structs below.
 *
 * Calls reaching a backend have valid sizes, legal keys, begin <= end,
 * and a transaction that is not failed; a backend returns DV_E* codes and
 * kv.c makes them sticky.
 */
#ifndef DV_KV_INT_H
#define DV_KV_INT_H

#include <pthread.h>

#include "kv/kv.h"

typedef struct kv_methods {
  const char *name;                                   /* "rocks", "fault", … */
  void (*close)(kv_db *db);
  int64_t (*db_version)(kv_db *db);
  int (*txn_begin)(kv_db *db, kv_txn **out);          /* allocates its own txn struct */
  void (*txn_reset)(kv_txn *t);                       /* backend part only */
  void (*txn_destroy)(kv_txn *t);
  int (*get_read_version)(kv_txn *t, int64_t *out);
  int (*get)(kv_txn *t, const uint8_t *k, size_t kl, int flags, const uint8_t **v, size_t *vl, int *found);
  int (*iter_begin)(kv_txn *t, const uint8_t *b, size_t bl, const uint8_t *e, size_t el, int limit,
                    int flags, kv_iter **out);
  int (*iter_next)(kv_iter *it, kv_pair *out);
  void (*iter_free)(kv_iter *it);
  int (*set)(kv_txn *t, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl);
  int (*clear)(kv_txn *t, const uint8_t *k, size_t kl);
  int (*clear_range)(kv_txn *t, const uint8_t *b, size_t bl, const uint8_t *e, size_t el);
  int (*atomic)(kv_txn *t, kv_atomic_op op, const uint8_t *k, size_t kl, const uint8_t *p, size_t pl);
  int (*set_vs_key)(kv_txn *t, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl);
  int (*set_vs_value)(kv_txn *t, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl);
  int (*add_conflict_range)(kv_txn *t, const uint8_t *b, size_t bl, const uint8_t *e, size_t el, int type);
  void (*commit_async)(kv_txn *t, kv_commit_cb cb, void *arg);
  int (*commit_sync)(kv_txn *t);                      /* may be NULL: async + wait */
  int (*get_committed_version)(kv_txn *t, int64_t *out);
  int (*get_versionstamp)(kv_txn *t, uint8_t out[KV_STAMP_LEN]);
  int (*watch_add)(kv_txn *t, const uint8_t *k, size_t kl, kv_watch_cb cb, void *arg, kv_watch **out);
  void (*watch_free)(kv_watch *w);
  int (*set_timeout_ms)(kv_txn *t, int ms);
  int (*compact)(kv_db *db);                          /* may be NULL: nothing to do */
  void (*bulk_written)(kv_db *db, size_t n);          /* may be NULL: a hint, ignored */
  void (*info)(kv_db *db, kv_info *out);              /* may be NULL: nothing known; out comes preset
                                                         (engine = name, numbers -1) */
  /* may be NULL: kv.c sleeps its own backoff. Called by kv_on_error once
   * kv.c has decided rc is retryable within the retry limit: the backend
   * waits out its backoff (FDB's on_error) and returns 0, or an error that
   * ends the retries; kv.c then resets the transaction. */
  int (*on_error)(kv_txn *t, int rc);
} kv_methods;

struct kv_db {
  const kv_methods *m;     /* backend */
};

struct kv_txn {
  const kv_methods *m;     /* backend */
  kv_db *db;               /* owning store */
  int err;                 /* sticky error; 0 while usable */
  int retries;             /* kv_on_error calls since the last success */
  int retry_limit;         /* -1 = unlimited */
  size_t bytes;            /* mutation + conflict-range bytes so far */
  int committing;          /* 1 while a commit is in flight */
  void *owned;             /* blocks freed at reset/destroy (kv__txn_alloc) */
  int frees_space;         /* kv_set_frees_space: may commit inside a free-space reserve */
};

struct kv_iter {
  const kv_methods *m;     /* backend */
  kv_txn *txn;             /* owning transaction */
  uint8_t *b, *e;          /* the requested range [b, e) (owned copies) */
  size_t bl, el;           /* their lengths */
  int limit;               /* pairs to return at most (0 = no limit) */
  int flags;               /* KV_REVERSE, KV_SNAPSHOT, KV_BULK */
};

/* A backend's new iterator: a zeroed block of `size` bytes (its struct,
 * kv_iter first) with the base filled in and the bounds copied. NULL when
 * out of memory. kv__iter_free releases the bounds and the block. */
void *kv__iter_new(size_t size, const kv_methods *m, kv_txn *t, const uint8_t *b, size_t bl, const uint8_t *e,
                   size_t el, int limit, int flags);
void kv__iter_free(kv_iter *it);

struct kv_watch {
  const kv_methods *m;     /* backend */
};

/* Initialise the base part of a backend's new transaction. */
void kv__txn_init(kv_txn *t, const kv_methods *m, kv_db *db);

/* Memory owned by the transaction until its reset or destroy (for values
 * handed out as borrowed). NULL on allocation failure. */
void *kv__txn_alloc(kv_txn *t, size_t n);

/* A blocking wait for one commit callback: kv__wait_cb is the callback,
 * kv__wait blocks until it ran and returns its rc. */
typedef struct kv__waiter {
  pthread_mutex_t mu;  /* guards done/rc */
  pthread_cond_t cv;   /* signalled on completion */
  int done;            /* 1 once the callback ran */
  int rc;              /* its result */
} kv__waiter;
#define KV__WAITER_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}
void kv__wait_cb(kv_txn *t, int rc, void *waiter);
int kv__wait(kv__waiter *w);

/* Byte order helpers for versionstamps and atomic ops. */
void kv__stamp_make(uint8_t out[KV_STAMP_LEN], int64_t version, uint16_t order);

/* FDB atomic-op semantics over an existing value (present=0: absent).
 * Writes the result to out (capacity max(existing_len, param_len)) and
 * returns its length; *out_present is 0 if the result is "absent". */
size_t kv__atomic_apply(kv_atomic_op op, const uint8_t *old, size_t old_len, int present,
                        const uint8_t *param, size_t param_len, uint8_t *out, int *out_present);

#endif
