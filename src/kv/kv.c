/* kv.c — the backend-independent half of kv.h.
 *
 * Every public kv_* call passes through here: the contract's checks are
 * made once for all backends (FDB's limits, the system keyspace, inverted
 * ranges, the 10 MB transaction budget, the sticky error of a failed
 * transaction), then the backend's method runs. The retry machinery
 * (kv_on_error, kv_run), the blocking commit wrapper, kv_get_range on top
 * of iterators, and the byte helpers shared by backends live here too.
 * No storage mechanics here: those are the backends' (rocks.c, fdb.c).
 * The metrics every backend shares are counted here too (util/stats.h:
 * divan.kv.*): commits that wrote, the errors that fail a transaction,
 * retries.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv/kv_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/stats.h"
#include <stddef.h>

#define DEFAULT_RETRY_LIMIT 100

void kv__txn_init(kv_txn *t, const kv_methods *m, kv_db *db) {
  t->m = m;
  t->db = db;
  t->err = 0;
  t->retries = 0;
  t->retry_limit = DEFAULT_RETRY_LIMIT;
  t->bytes = 0;
  t->committing = 0;
  t->owned = NULL;
  t->frees_space = 0;
}

/* Owned blocks: a header with the next pointer, then the payload, aligned
 * for any type. */
typedef union owned_hdr {
  void *next;            /* next block */
  max_align_t align;     /* payload alignment */
} owned_hdr;

void *kv__txn_alloc(kv_txn *t, size_t n) {
  owned_hdr *h = dv_malloc(sizeof *h + n);
  if (!h) return NULL;
  h->next = t->owned;
  t->owned = h;
  return h + 1;
}

static void free_owned(kv_txn *t) {
  owned_hdr *h = t->owned;
  while (h) {
    owned_hdr *next = h->next;
    dv_free(h);
    h = next;
  }
  t->owned = NULL;
}

void kv__stamp_make(uint8_t out[KV_STAMP_LEN], int64_t version, uint16_t order) {
  uint64_t v = (uint64_t)version;
  for (int i = 7; i >= 0; i--) { out[i] = (uint8_t)v; v >>= 8; }
  out[8] = (uint8_t)(order >> 8);
  out[9] = (uint8_t)order;
}

/* Compare a and b as unsigned little-endian integers of equal length n. */
static int le_cmp(const uint8_t *a, const uint8_t *b, size_t n) {
  for (size_t i = n; i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  size_t n = an < bn ? an : bn;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

size_t kv__atomic_apply(kv_atomic_op op, const uint8_t *old, size_t old_len, int present,
                        const uint8_t *param, size_t param_len, uint8_t *out, int *out_present) {
  *out_present = 1;
  if (!present) { /* every op stores the param over an absent key */
    if (param_len) memcpy(out, param, param_len);
    return param_len;
  }
  if (op == KV_BYTE_MIN || op == KV_BYTE_MAX) {
    int c = bytes_cmp(old, old_len, param, param_len);
    int keep_old = op == KV_BYTE_MIN ? c <= 0 : c >= 0;
    const uint8_t *src = keep_old ? old : param;
    size_t n = keep_old ? old_len : param_len;
    if (n) memcpy(out, src, n);
    return n;
  }
  /* The existing value, zero-extended or truncated to the param's width. */
  size_t n = param_len;
  uint8_t *cur = out;
  size_t copy = old_len < n ? old_len : n;
  if (copy) memcpy(cur, old, copy);
  if (n > copy) memset(cur + copy, 0, n - copy);
  switch (op) {
  case KV_ADD: {
    unsigned carry = 0;
    for (size_t i = 0; i < n; i++) {
      unsigned s = (unsigned)cur[i] + param[i] + carry;
      cur[i] = (uint8_t)s;
      carry = s >> 8;
    }
    break;
  }
  case KV_MAX:
    if (le_cmp(cur, param, n) < 0) memcpy(cur, param, n);
    break;
  case KV_MIN:
    if (le_cmp(cur, param, n) > 0) memcpy(cur, param, n);
    break;
  default:
    break;
  }
  return n;
}

int kv_strinc(const void *key, size_t key_len, uint8_t *out, size_t *out_len) {
  const uint8_t *k = key;
  size_t n = key_len;
  while (n && k[n - 1] == 0xff) n--;
  if (!n) return DV_EINVAL;
  memmove(out, k, n);
  out[n - 1]++;
  *out_len = n;
  return 0;
}

/* ---- validation -------------------------------------------------------- */

static int check_key(const uint8_t *k, size_t kl) {
  if (kl > KV_MAX_KEY) return DV_EKEY_TOO_LARGE;
  if (kl && k[0] == 0xff) {
    if (kl == KV_METADATA_VERSION_KEY_LEN && !memcmp(k, KV_METADATA_VERSION_KEY, kl)) return 0;
    return DV_EKEY_OUTSIDE_LEGAL;
  }
  return 0;
}

/* Range ends may reach into 0xFF: [x, "\xff") is the whole user keyspace,
 * as in FDB. Anything past a single 0xFF is outside the legal range. */
static int check_range(const uint8_t *b, size_t bl, const uint8_t *e, size_t el) {
  if (bl > KV_MAX_KEY + 1 || el > KV_MAX_KEY + 1) return DV_EKEY_TOO_LARGE;
  if (el > 1 && e[0] == 0xff) return DV_EKEY_OUTSIDE_LEGAL;
  if (bl > 1 && b[0] == 0xff) return DV_EKEY_OUTSIDE_LEGAL;
  if (bytes_cmp(b, bl, e, el) > 0) return DV_EINVERTED_RANGE;
  return 0;
}

/* The error that fails a transaction, counted once (the sticky error
 * returned again is not a new one). */
static void count_fail(int rc) {
  if (rc == DV_ENOT_COMMITTED) dv_stat_inc(DV_ST_KV_CONFLICTS);
  else if (rc == DV_ECOMMIT_UNKNOWN) dv_stat_inc(DV_ST_KV_COMMIT_UNKNOWN);
  else if (rc == DV_ETXN_TOO_OLD) dv_stat_inc(DV_ST_KV_TOO_OLD);
}

static int fail(kv_txn *t, int rc) {
  if (rc < 0 && !t->err) {
    t->err = rc;
    count_fail(rc);
  }
  return rc;
}

/* A commit succeeded: counted when it wrote (a read-only commit has no
 * committed version). */
static void count_commit(kv_txn *t) {
  int64_t v;
  if (dv_stats_on() && !t->m->get_committed_version(t, &v) && v >= 0) dv_stat_inc(DV_ST_KV_COMMITS);
}

#define ENTER(t)                                   \
  do {                                             \
    if ((t)->err) return (t)->err;                 \
    if ((t)->committing) return DV_EUSED_DURING_COMMIT; \
  } while (0)

static int account(kv_txn *t, size_t n) {
  t->bytes += n;
  return 0;
}

/* ---- dispatch ---------------------------------------------------------- */

void kv_close(kv_db *db) {
  if (db) db->m->close(db);
}

int64_t kv_db_version(kv_db *db) { return db->m->db_version(db); }

const char *kv_db_backend(kv_db *db) { return db->m->name; }

int kv_compact(kv_db *db) { return db->m->compact ? db->m->compact(db) : 0; }

void kv_db_info(kv_db *db, kv_info *out) {
  memset(out, 0, sizeof *out);
  out->engine = db->m->name;
  out->pending_compaction_bytes = out->running_compactions = out->running_flushes = -1;
  out->sst_bytes = out->memtable_bytes = out->write_stopped = out->history_bytes = out->read_only = -1;
  if (db->m->info) db->m->info(db, out);
}

void kv_bulk_written(kv_db *db, size_t n) {
  if (db->m->bulk_written) db->m->bulk_written(db, n);
}

int kv_txn_begin(kv_db *db, kv_txn **out_txn) { return db->m->txn_begin(db, out_txn); }

void kv_txn_reset(kv_txn *t) {
  t->m->txn_reset(t);
  free_owned(t);
  t->err = 0;
  t->bytes = 0;
  t->committing = 0;
  t->frees_space = 0;
}

void kv_txn_destroy(kv_txn *t) {
  if (!t) return;
  free_owned(t);
  t->m->txn_destroy(t);
}

int kv_get_read_version(kv_txn *t, int64_t *out) {
  ENTER(t);
  return fail(t, t->m->get_read_version(t, out));
}

int kv_get(kv_txn *t, const void *key, size_t kl, int flags, const uint8_t **out_val,
           size_t *out_len, int *out_found) {
  ENTER(t);
  int rc = check_key(key, kl);
  if (rc) return fail(t, rc);
  if (!(flags & KV_SNAPSHOT)) account(t, 2 * kl + 1);
  return fail(t, t->m->get(t, key, kl, flags, out_val, out_len, out_found));
}

int kv_iter_begin(kv_txn *t, const void *b, size_t bl, const void *e, size_t el, int limit,
                  int flags, kv_iter **out) {
  ENTER(t);
  int rc = check_range(b, bl, e, el);
  if (rc) return fail(t, rc);
  if (limit < 0) return fail(t, DV_EINVAL);
  if (!(flags & KV_SNAPSHOT)) account(t, bl + el);
  return fail(t, t->m->iter_begin(t, b, bl, e, el, limit, flags, out));
}

int kv_iter_next(kv_iter *it, kv_pair *out) {
  kv_txn *t = it->txn;
  ENTER(t);
  int rc = it->m->iter_next(it, out);
  return rc < 0 ? fail(t, rc) : rc;
}

void kv_iter_free(kv_iter *it) {
  if (it) it->m->iter_free(it);
}

void *kv__iter_new(size_t size, const kv_methods *m, kv_txn *t, const uint8_t *b, size_t bl, const uint8_t *e,
                   size_t el, int limit, int flags) {
  kv_iter *it = dv_calloc(1, size);
  if (!it) return NULL;
  it->b = dv_memdup(b, bl ? bl : 1);
  it->e = dv_memdup(e, el ? el : 1);
  if (!it->b || !it->e) {
    kv__iter_free(it);
    return NULL;
  }
  it->m = m;
  it->txn = t;
  it->bl = bl;
  it->el = el;
  it->limit = limit;
  it->flags = flags;
  return it;
}

void kv__iter_free(kv_iter *it) {
  if (!it) return;
  dv_free(it->b);
  dv_free(it->e);
  dv_free(it);
}

int kv_set(kv_txn *t, const void *key, size_t kl, const void *val, size_t vl) {
  ENTER(t);
  int rc = check_key(key, kl);
  if (!rc && vl > KV_MAX_VALUE) rc = DV_EVALUE_TOO_LARGE;
  if (rc) return fail(t, rc);
  account(t, 2 * kl + vl + 1);
  return fail(t, t->m->set(t, key, kl, val, vl));
}

int kv_clear(kv_txn *t, const void *key, size_t kl) {
  ENTER(t);
  int rc = check_key(key, kl);
  if (rc) return fail(t, rc);
  account(t, 2 * kl + 1);
  return fail(t, t->m->clear(t, key, kl));
}

int kv_clear_range(kv_txn *t, const void *b, size_t bl, const void *e, size_t el) {
  ENTER(t);
  int rc = check_range(b, bl, e, el);
  if (rc) return fail(t, rc);
  account(t, 2 * (bl + el));
  return fail(t, t->m->clear_range(t, b, bl, e, el));
}

int kv_atomic(kv_txn *t, kv_atomic_op op, const void *key, size_t kl, const void *param,
              size_t pl) {
  ENTER(t);
  int rc = check_key(key, kl);
  if (!rc && pl > KV_MAX_VALUE) rc = DV_EVALUE_TOO_LARGE;
  if (!rc && op != KV_ADD && op != KV_MAX && op != KV_MIN && op != KV_BYTE_MIN && op != KV_BYTE_MAX)
    rc = DV_EINVALID_MUTATION;
  if (rc) return fail(t, rc);
  account(t, 2 * kl + pl + 1);
  return fail(t, t->m->atomic(t, op, key, kl, param, pl));
}

/* The 4-byte little-endian placeholder offset at the end of buf. */
static int stamp_offset(const uint8_t *buf, size_t len, size_t *out_off) {
  if (len < 4 + KV_STAMP_LEN) return DV_EINVAL;
  const uint8_t *s = buf + len - 4;
  uint32_t off = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
  if ((size_t)off + KV_STAMP_LEN > len - 4) return DV_EINVAL;
  *out_off = off;
  return 0;
}

int kv_set_versionstamped_key(kv_txn *t, const void *key, size_t kl, const void *val, size_t vl) {
  ENTER(t);
  size_t off;
  int rc = stamp_offset(key, kl, &off);
  if (!rc && kl - 4 > KV_MAX_KEY) rc = DV_EKEY_TOO_LARGE;
  if (!rc && vl > KV_MAX_VALUE) rc = DV_EVALUE_TOO_LARGE;
  if (!rc && ((const uint8_t *)key)[0] == 0xff) rc = DV_EKEY_OUTSIDE_LEGAL;
  if (rc) return fail(t, rc);
  account(t, 2 * kl + vl + 1);
  return fail(t, t->m->set_vs_key(t, key, kl, val, vl));
}

int kv_set_versionstamped_value(kv_txn *t, const void *key, size_t kl, const void *val, size_t vl) {
  ENTER(t);
  size_t off;
  int rc = check_key(key, kl);
  if (!rc) rc = stamp_offset(val, vl, &off);
  if (!rc && vl - 4 > KV_MAX_VALUE) rc = DV_EVALUE_TOO_LARGE;
  if (rc) return fail(t, rc);
  account(t, 2 * kl + vl + 1);
  return fail(t, t->m->set_vs_value(t, key, kl, val, vl));
}

int kv_add_conflict_range(kv_txn *t, const void *b, size_t bl, const void *e, size_t el, int type) {
  ENTER(t);
  int rc = check_range(b, bl, e, el);
  if (!rc && type != KV_CONFLICT_READ && type != KV_CONFLICT_WRITE) rc = DV_EINVAL;
  if (rc) return fail(t, rc);
  account(t, bl + el);
  return fail(t, t->m->add_conflict_range(t, b, bl, e, el, type));
}

/* ---- commit ------------------------------------------------------------ */

struct commit_wrap {
  kv_commit_cb cb;  /* caller's callback */
  void *arg;        /* caller's argument */
};

static void commit_done(kv_txn *t, int rc, void *arg) {
  struct commit_wrap w = *(struct commit_wrap *)arg;
  dv_free(arg);
  t->committing = 0;
  if (rc) fail(t, rc);
  else t->retries = 0, count_commit(t);
  w.cb(t, rc, w.arg);
}

/* What every commit checks before the backend sees it. */
static int commit_check(kv_txn *t) {
  if (t->committing) return DV_EUSED_DURING_COMMIT;
  if (t->err) return t->err;
  if (t->bytes > KV_MAX_TXN_BYTES) return fail(t, DV_ETXN_TOO_LARGE);
  return 0;
}

void kv_commit_async(kv_txn *t, kv_commit_cb cb, void *arg) {
  int rc = commit_check(t);
  if (rc) { cb(t, rc, arg); return; }
  struct commit_wrap *w = dv_malloc(sizeof *w);
  if (!w) { cb(t, fail(t, DV_ENOMEM), arg); return; }
  w->cb = cb;
  w->arg = arg;
  t->committing = 1;
  t->m->commit_async(t, commit_done, w);
}

void kv__wait_cb(kv_txn *t, int rc, void *arg) {
  kv__waiter *w = arg;
  pthread_mutex_lock(&w->mu);
  w->rc = rc;
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

int kv__wait(kv__waiter *w) {
  pthread_mutex_lock(&w->mu);
  while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  return w->rc;
}

int kv_commit(kv_txn *t) {
  if (t->m->commit_sync) {
    int rc = commit_check(t);
    if (rc) return rc;
    t->committing = 1;
    rc = t->m->commit_sync(t);
    t->committing = 0;
    if (rc) fail(t, rc);
    else t->retries = 0, count_commit(t);
    return rc;
  }
  kv__waiter w = KV__WAITER_INIT;
  kv_commit_async(t, kv__wait_cb, &w);
  return kv__wait(&w);
}

int kv_get_committed_version(kv_txn *t, int64_t *out) { return t->m->get_committed_version(t, out); }

int kv_get_versionstamp(kv_txn *t, uint8_t out[KV_STAMP_LEN]) { return t->m->get_versionstamp(t, out); }

int kv_set_retry_limit(kv_txn *t, int limit) {
  t->retry_limit = limit;
  return 0;
}

void kv_set_frees_space(kv_txn *t) { t->frees_space = 1; }

int kv_set_timeout_ms(kv_txn *t, int ms) {
  if (ms < 0) return DV_EINVAL;
  return t->m->set_timeout_ms(t, ms);
}

/* Jittered exponential backoff as FDB's on_error: 10 ms doubling to 1 s,
 * each delay drawn uniformly from [d/2, d]. */
int kv_retry_delay_ms(kv_txn *t, int rc) {
  if (!dv_err_retryable(rc)) return -1;
  if (t->retry_limit >= 0 && t->retries >= t->retry_limit) return -1;
  int d = 10;
  for (int i = 0; i < t->retries && d < 1000; i++) d *= 2;
  if (d > 1000) d = 1000;
  static __thread unsigned seed;
  if (!seed) seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&seed;
  return d / 2 + (int)(rand_r(&seed) % (unsigned)(d / 2 + 1));
}

/* not_committed retries at once the first time, as FDB does for
 * conflicts: the conflict is resolved by the new read version. */
static int retry_now(const kv_txn *t, int rc) { return t->retries == 0 && rc == DV_ENOT_COMMITTED; }

/* Reset for the next attempt, counting it against the retry limit. */
static void retry_reset(kv_txn *t) {
  dv_stat_inc(DV_ST_KV_RETRIES);
  int retries = t->retries + 1;
  kv_txn_reset(t);
  t->retries = retries;
}

int kv_on_error(kv_txn *t, int rc) {
  int ms = kv_retry_delay_ms(t, rc);
  if (ms < 0) return rc;
  if (t->m->on_error) { /* the backend's own (FDB's on_error future) */
    int erc = t->m->on_error(t, rc);
    if (erc) return fail(t, erc);
  } else if (!retry_now(t, rc)) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  retry_reset(t);
  return 0;
}

int kv_on_error_nowait(kv_txn *t, int rc) {
  int ms = kv_retry_delay_ms(t, rc);
  if (ms < 0) return rc;
  if (retry_now(t, rc)) ms = 0;
  retry_reset(t);
  return ms;
}

int kv_run(kv_db *db, kv_txn_fn fn, void *arg) {
  kv_txn *t;
  int rc = kv_txn_begin(db, &t);
  if (rc) return rc;
  for (;;) {
    rc = fn(t, arg);
    if (!rc) rc = kv_commit(t);
    if (!rc) break;
    if (kv_on_error(t, rc)) break;
  }
  kv_txn_destroy(t);
  return rc;
}

/* ---- kv_get_range over an iterator -------------------------------------- */

int kv_get_range(kv_txn *t, const void *b, size_t bl, const void *e, size_t el, int limit,
                 int flags, kv_pair **out_pairs, int *out_count, int *out_more) {
  kv_iter *it;
  int rc = kv_iter_begin(t, b, bl, e, el, limit, flags, &it);
  if (rc) return rc;
  /* Gather into one byte buffer and an offset array, then make the
   * borrowed result out of two transaction-owned blocks. */
  dv_buf bytes = DV_BUF_INIT;
  size_t *offs = NULL, n = 0, cap = 0;
  kv_pair p;
  while ((rc = kv_iter_next(it, &p)) == 1) {
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      size_t *o = dv_realloc(offs, cap * 4 * sizeof *offs);
      if (!o) { rc = DV_ENOMEM; break; }
      offs = o;
    }
    offs[4 * n] = bytes.len;
    offs[4 * n + 1] = p.key_len;
    buf_append(&bytes, p.key, p.key_len);
    offs[4 * n + 2] = bytes.len;
    offs[4 * n + 3] = p.val_len;
    buf_append(&bytes, p.val, p.val_len);
    n++;
  }
  kv_iter_free(it);
  if (!rc) rc = buf_error(&bytes);
  kv_pair *pairs = NULL;
  uint8_t *data = NULL;
  if (!rc) {
    pairs = kv__txn_alloc(t, n * sizeof *pairs);
    data = kv__txn_alloc(t, bytes.len);
    if (!pairs || !data) rc = DV_ENOMEM;
  }
  if (!rc) {
    if (bytes.len) memcpy(data, bytes.p, bytes.len);
    for (size_t i = 0; i < n; i++) {
      pairs[i].key = data + offs[4 * i];
      pairs[i].key_len = offs[4 * i + 1];
      pairs[i].val = data + offs[4 * i + 2];
      pairs[i].val_len = offs[4 * i + 3];
    }
    *out_pairs = pairs;
    *out_count = (int)n;
    if (out_more) *out_more = limit > 0 && (int)n == limit;
  }
  buf_free(&bytes);
  dv_free(offs);
  return rc < 0 ? fail(t, rc) : 0;
}

/* ---- watches ------------------------------------------------------------ */

int kv_watch_add(kv_txn *t, const void *key, size_t kl, kv_watch_cb cb, void *arg, kv_watch **out) {
  ENTER(t);
  int rc = check_key(key, kl);
  if (rc) return fail(t, rc);
  return fail(t, t->m->watch_add(t, key, kl, cb, arg, out));
}

void kv_watch_free(kv_watch *w) {
  if (w) w->m->watch_free(w);
}
