/* store.c — the store's frame: opening, keys, revision ids, sequences,
 * the transaction loop with transaction ids.
 *
 * Transaction ids (seed 004, DESIGN.md "commit_unknown_result"): st_run
 * mints a TxId once per logical operation. The operation's function writes
 * the key (R,0,"txids",Bucket,TxId) in every attempt. After an attempt whose
 * commit came back maybe-committed, the next attempt first reads that key
 * (non-snapshot, so a late commit of the earlier attempt makes this one
 * conflict): present means the earlier attempt committed and its kept
 * results are the answer. Buckets are unix minutes; the background thread
 * (bg.c) drops buckets older than an hour with one clear_range, which is
 * safe to run in every process at once.
 *
 * The loop (op_drive) runs attempts — TxId check, body, commit — and on a
 * failure asks kv whether and when to retry. st_run waits on its thread
 * (kv_commit, kv_on_error's sleep); st_run_async starts the commit with
 * kv_commit_async and returns: the completion (on the kv thread) finishes
 * the run, or — never sleeping there — hands the next attempt to the
 * store's workers after kv_on_error_nowait's backoff (work.c). The two
 * share every step but those two calls.
 *
 * Not here: database handles (db.c), edits (edit.c), reads (read.c),
 * _db_updates (dbupd.c), the background thread (bg.c).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include "store/store_int.h"
#include "util/alloc.h"
#include "util/stats.h"

/* ---- small helpers --------------------------------------------------------- */

int64_t st_now_ms(void) { return st_now_us() / 1000; }

int64_t st_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void st_random(uint8_t *out, size_t n) {
  while (n) {
    ssize_t got = getrandom(out, n, 0);
    if (got <= 0) { /* fall back to something unique enough */
      static __thread uint64_t x = 0x9e3779b97f4a7c15ull;
      x ^= (uint64_t)st_now_ms() + (uint64_t)(uintptr_t)out;
      for (size_t i = 0; i < n; i++) { x = x * 6364136223846793005ull + 1442695040888963407ull; out[i] = (uint8_t)(x >> 56); }
      return;
    }
    out += got;
    n -= (size_t)got;
  }
}

void st_le64(int64_t v, uint8_t out[8]) {
  uint64_t u = (uint64_t)v;
  for (int i = 0; i < 8; i++) out[i] = (uint8_t)(u >> (8 * i));
}

int64_t st_le64_get(const uint8_t *p, size_t n) {
  uint64_t u = 0;
  for (size_t i = 0; i < n && i < 8; i++) u |= (uint64_t)p[i] << (8 * i);
  return (int64_t)u;
}

static __thread store_read_stats tls_stats;

void st_count_read(size_t kvs) {
  tls_stats.round_trips++;
  tls_stats.kvs += kvs;
}
void st_count_old_body(void) { tls_stats.old_bodies++; }

void store_read_stats_get(store_read_stats *out) { *out = tls_stats; }
void store_read_stats_reset(void) { memset(&tls_stats, 0, sizeof tls_stats); }

/* ---- keys ------------------------------------------------------------------ */

void st_key_root(store *s, dv_buf *b, tup_w *w) {
  buf_reset(b);
  buf_append(b, s->root, s->root_len);
  tup_w_init(w, b);
}

void st_key_cluster(store *s, dv_buf *b, tup_w *w, const char *name) {
  st_key_root(s, b, w);
  tup_int(w, 0);
  tup_strz(w, name);
}

void st_key_db(const st_dbx *x, dv_buf *b, tup_w *w, char sub) {
  st_key_root(x->s, b, w);
  tup_int(w, 1);
  tup_int(w, x->prefix);
  char c = sub;
  tup_str(w, &c, 1);
}

void st_key_doc(const st_dbx *x, dv_buf *b, tup_w *w, char sub, const char *id, size_t id_len) {
  st_key_db(x, b, w, sub);
  tup_str(w, id, id_len);
}

void st_key_meta(const st_dbx *x, dv_buf *b, const char *name) {
  tup_w w;
  st_key_db(x, b, &w, ST_SUB_META);
  tup_strz(&w, name);
}

int st_meta_get(kv_txn *txn, const st_dbx *x, const char *name, int flags, const uint8_t **v, size_t *vl,
                int *found) {
  dv_buf k;
  buf_init(&k);
  st_key_meta(x, &k, name);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, flags, v, vl, found);
  buf_free(&k);
  return rc;
}

void st_seq_put(tup_w *w, const store_seq *q) {
  tup_int(w, q->inc);
  tup_vs(w, q->vs);
}

int st_seq_get(tup_r *r, store_seq *out) {
  tup_item it;
  if (tup_get(r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64) || it.i64 < 0) return DV_ECORRUPT;
  out->inc = it.i64;
  if (tup_get(r, TUP_VS, &it)) return DV_ECORRUPT;
  memcpy(out->vs, it.fixed, 12);
  return 0;
}

void st_hex(const uint8_t *p, size_t n, char *out) {
  static const char hx[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = hx[p[i] >> 4];
    out[2 * i + 1] = hx[p[i] & 15];
  }
}

void st_put_hash(tup_w *w, const store_rev *r) {
  if (r->raw) tup_str(w, (const char *)r->h, r->len);
  else tup_bytes(w, r->h, r->len);
}

int st_get_hash(const tup_item *it, dv_arena *a, store_rev *r) {
  if (it->type == TUP_BYTES) {
    if (it->s_len != 16) return DV_ECORRUPT;
    r->raw = 0;
  } else if (it->type == TUP_STR) {
    if (it->s_len != it->s_enc_len) return DV_ECORRUPT; /* revs never hold NUL */
    r->raw = 1;
    if (it->s_len == 0) { /* "1-", as old PouchDB databases hold */
      r->h = (const uint8_t *)"";
      r->len = 0;
      return 0;
    }
  } else {
    return DV_ECORRUPT;
  }
  uint8_t *d = arena_alloc(a, it->s_len);
  if (!d) return DV_ENOMEM;
  tup_item_copy(it, d); /* undoes the escapes of 0x00 bytes */
  r->h = d;
  r->len = (uint32_t)it->s_len;
  return 0;
}

int st_prefix_range(const dv_buf *prefix, dv_buf *begin, dv_buf *end) {
  buf_reset(begin);
  buf_reset(end);
  buf_append(begin, prefix->p, prefix->len);
  buf_append(end, prefix->p, prefix->len);
  buf_putc(end, 0xff);
  return buf_error(begin) ? buf_error(begin) : buf_error(end);
}

/* ---- revision ids ---------------------------------------------------------- */

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int store_rev_parse(const char *s, size_t n, dv_arena *a, store_rev *out) {
  size_t i = 0;
  int64_t pos = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') {
    if (pos > (INT64_MAX - 9) / 10) return DV_EBAD_REV;
    pos = pos * 10 + (s[i] - '0');
    i++;
  }
  if (i == 0 || i >= n || s[i] != '-' || pos < 1) return DV_EBAD_REV;
  const char *h = s + i + 1;
  size_t hl = n - i - 1;
  if (hl > STORE_MAX_REVID) return DV_EBAD_REV; /* "1-" is a rev: couch_doc:parse_rev takes it */
  for (size_t k = 0; k < hl; k++)
    if ((unsigned char)h[k] < 0x20 || h[k] == 0x7f) return DV_EBAD_REV;
  if (json_utf8_check(h, hl, NULL)) return DV_EBAD_REV;
  int hex = hl == 32;
  for (size_t k = 0; hex && k < 32; k++) hex = hexval((unsigned char)h[k]) >= 0;
  store_rev r = {.pos = pos};
  if (hex) {
    uint8_t *d = arena_alloc(a, 16);
    if (!d) return DV_ENOMEM;
    for (int k = 0; k < 16; k++) d[k] = (uint8_t)(hexval(h[2 * k]) << 4 | hexval(h[2 * k + 1]));
    r.h = d;
    r.len = 16;
  } else if (hl == 0) {
    r.h = (const uint8_t *)"";
    r.raw = 1;
  } else {
    uint8_t *d = arena_memdup(a, h, hl);
    if (!d) return DV_ENOMEM;
    r.h = d;
    r.len = (uint32_t)hl;
    r.raw = 1;
  }
  *out = r;
  return 0;
}

void store_rev_format(const store_rev *r, dv_buf *b) {
  buf_printf(b, "%lld-", (long long)r->pos);
  if (r->raw) {
    buf_append(b, r->h, r->len);
    return;
  }
  uint8_t *d = buf_extend(b, 2 * (size_t)r->len);
  if (d) st_hex(r->h, r->len, (char *)d);
}

int store_rev_cmp(const store_rev *a, const store_rev *b) {
  if (a->pos != b->pos) return a->pos < b->pos ? -1 : 1;
  if (a->raw != b->raw) return a->raw < b->raw ? -1 : 1;
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(a->h, b->h, n);
  if (c) return c < 0 ? -1 : 1;
  return a->len == b->len ? 0 : (a->len < b->len ? -1 : 1);
}

/* ---- sequences ------------------------------------------------------------- */

int store_seq_is_zero(const store_seq *q) {
  if (q->inc) return 0;
  for (int i = 0; i < 12; i++)
    if (q->vs[i]) return 0;
  return 1;
}

int store_seq_cmp(const store_seq *a, const store_seq *b) {
  if (a->inc != b->inc) return a->inc < b->inc ? -1 : 1;
  int c = memcmp(a->vs, b->vs, 12);
  return c < 0 ? -1 : c > 0;
}

void store_seq_format(const store_seq *q, char out[STORE_SEQ_STR]) {
  if (store_seq_is_zero(q)) {
    strcpy(out, "0");
    return;
  }
  dv_buf b;
  buf_init(&b);
  tup_w w;
  tup_w_init(&w, &b);
  st_seq_put(&w, q);
  size_t n = b.len < (STORE_SEQ_STR - 1) / 2 ? b.len : (STORE_SEQ_STR - 1) / 2;
  st_hex(b.p, n, out);
  out[2 * n] = 0;
  buf_free(&b);
}

int store_seq_parse(const char *s, size_t n, store_seq *out) {
  if (n == 1 && s[0] == '0') {
    memset(out, 0, sizeof *out);
    return 0;
  }
  uint8_t raw[40];
  if (n == 0 || n % 2 || n / 2 > sizeof raw) return DV_EBAD_SEQ;
  for (size_t i = 0; i < n; i += 2) {
    int hi = hexval((unsigned char)s[i]), lo = hexval((unsigned char)s[i + 1]);
    if (hi < 0 || lo < 0 || (s[i] >= 'A' && s[i] <= 'F') || (s[i + 1] >= 'A' && s[i + 1] <= 'F'))
      return DV_EBAD_SEQ;
    raw[i / 2] = (uint8_t)(hi << 4 | lo);
  }
  tup_r r;
  tup_r_init(&r, raw, n / 2);
  store_seq q;
  if (st_seq_get(&r, &q) || !tup_r_done(&r)) return DV_EBAD_SEQ;
  *out = q;
  return 0;
}

/* ---- ranges ---------------------------------------------------------------- */

void store_range_init(store_range *r) {
  memset(r, 0, sizeof *r);
  r->inclusive_end = 1;
  r->limit = -1;
}

/* ---- transaction ids and the retry loop --------------------------------------- */

static void txid_key(store *s, dv_buf *b, int64_t bucket, const uint8_t txid[16]) {
  tup_w w;
  st_key_cluster(s, b, &w, "txids");
  tup_int(&w, bucket);
  tup_bytes(&w, txid, 16);
}

int st_txid_write(store *s, kv_txn *txn, const st_op *op) {
  if (!op->use_txid) return 0;
  dv_buf k;
  buf_init(&k);
  txid_key(s, &k, op->bucket, op->txid);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, "", 0);
  buf_free(&k);
  return rc;
}

/* The run's transaction and TxId (minted once, outside the attempts). */
static int op_begin(store *s, st_op *op) {
  op->s = s;
  op->txn = NULL;
  op->committed_before = 0;
  op->maybe = 0;
  buf_init(&op->txkey);
  int rc = kv_txn_begin(s->kv, &op->txn);
  if (rc) return rc;
  if (op->use_txid) {
    st_random(op->txid, 16);
    op->bucket = st_now_ms() / 1000 / ST_TXID_BUCKET_S;
    txid_key(s, &op->txkey, op->bucket, op->txid);
    if (buf_error(&op->txkey)) rc = DV_ENOMEM;
  }
  return rc;
}

static void op_end(st_op *op) {
  buf_free(&op->txkey);
  kv_txn_destroy(op->txn);
  op->txn = NULL;
}

/* One attempt up to its commit: 0 to commit, 1 when an earlier attempt
 * committed (its results are restored: the run is over), or an error. */
static int op_attempt(st_op *op) {
  kv_txn *txn = op->txn;
  int rc = 0;
  if (op->use_txid && op->maybe) {
    const uint8_t *v;
    size_t vl;
    int found;
    rc = kv_get(txn, op->txkey.p, op->txkey.len, 0, &v, &vl, &found);
    if (!rc && found) {
      op->committed_before = 1;
      dv_stat_inc(DV_ST_STORE_UNKNOWN_RECOVERED);
      if (op->result) *op->result = op->kept;
      if (op->restore) op->restore(op->arg);
      return 1;
    }
  }
  if (!rc && op->db) {
    st_dbx x;
    rc = st_db_check(op->db, txn, &x);
    /* a write (every one mints a TxId) to a database in a move's last,
     * read-only round; st_db_check's read conflict on its dbs row makes
     * a write that began before the mark retry and land here */
    if (!rc && op->use_txid && x.moving) rc = DV_EDB_MOVING;
    if (!rc) rc = op->dbfn(txn, &x, op->arg);
  } else if (!rc) {
    rc = op->fn(txn, op->arg);
  }
  return rc;
}

/* After an attempt or its commit failed with rc: keep what a
 * maybe-committed attempt reported, then let kv decide. Returns the delay
 * (ms, >= 0) before the next attempt — always 0 for st_run, whose
 * kv_on_error slept it — or the run's final error. */
static int op_failed(st_op *op, int rc) {
  if (dv_err_maybe_committed(rc)) {
    op->maybe = 1;
    if (op->result) op->kept = *op->result;
    if (op->keep) op->keep(op->arg);
  }
  int d = op->sync ? kv_on_error(op->txn, rc) : kv_on_error_nowait(op->txn, rc);
  /* a fatal error (timed out, retry limit) after an attempt that may have
   * committed: the caller must not read it as "not applied" */
  if (d < 0 && op->maybe) d = DV_ECOMMIT_UNKNOWN;
  return d;
}

/* The commit handshake of st_run_async: whichever of the starting thread
 * and the completion gets past STARTING first decides who goes on — the
 * completion ran at once (INLINE: the starter carries on in its loop) or
 * the starter left first (WAITING: the completion carries on). */
enum { PH_STARTING = 1, PH_WAITING, PH_INLINE };

static void op_finish(st_op *op, int rc, int on_worker) {
  op_end(op);
  op->done(op, rc, on_worker);
}

static int op_drive(st_op *op);

static void op_resume(st_task *t) {
  st_op *op = (st_op *)((char *)t - offsetof(st_op, task));
  int rc = op_drive(op);
  if (rc != ST_PENDING) op_finish(op, rc, 1);
}

/* The completion of an asynchronous commit, on the kv backend's thread
 * unless it came at once: nothing here blocks; the next attempt goes to
 * a worker. */
static void op_commit_cb(kv_txn *txn, int rc, void *arg) {
  st_op *op = arg;
  op->crc = rc;
  int ph = PH_STARTING;
  if (__atomic_compare_exchange_n(&op->phase, &ph, PH_INLINE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
  if (!rc) {
    op_finish(op, 0, 0);
    return;
  }
  int d = op_failed(op, rc); /* kv_on_error_nowait: resets the transaction, never sleeps */
  if (d < 0) {
    op_finish(op, d, 0);
    return;
  }
  op->task.fn = op_resume;
  st_defer(op->s, &op->task, d);
}

/* Commit the attempt: 0 or an error, or ST_PENDING once the completion
 * owns the run. */
static int op_commit(st_op *op) {
  if (op->sync) return kv_commit(op->txn);
  __atomic_store_n(&op->phase, PH_STARTING, __ATOMIC_RELEASE);
  kv_commit_async(op->txn, op_commit_cb, op);
  int ph = PH_STARTING;
  if (__atomic_compare_exchange_n(&op->phase, &ph, PH_WAITING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return ST_PENDING; /* op is the completion's now: touch nothing */
  return op->crc;
}

/* Attempts on this thread until the run is over (its rc) or waits for a
 * commit or a backoff (ST_PENDING). The one loop of st_run and
 * st_run_async: they differ only in op_commit and op_failed's kv call. */
static int op_drive(st_op *op) {
  for (;;) {
    int rc = op_attempt(op);
    if (rc > 0) return 0;
    if (!rc) rc = op_commit(op);
    if (rc == ST_PENDING || !rc) return rc;
    int d = op_failed(op, rc);
    if (d < 0) return d;
    if (d > 0) { /* st_run_async only: nobody sleeps, the queue waits */
      op->task.fn = op_resume;
      st_defer(op->s, &op->task, d);
      return ST_PENDING;
    }
  }
}

int st_run(store *s, st_op *op) {
  op->sync = 1;
  int rc = op_begin(s, op);
  if (!rc) rc = op_drive(op);
  op_end(op);
  return rc;
}

int st_run_async(store *s, st_op *op) {
  op->sync = 0;
  int rc = st_work_start(s);
  if (rc) return rc;
  rc = op_begin(s, op);
  if (!rc) rc = op_drive(op);
  if (rc == ST_PENDING) return rc;
  op_end(op);
  return rc;
}

/* Drop TxId buckets older than ST_TXID_KEEP_BUCKETS, one clear_range. */
static int txid_cleanup_fn(kv_txn *txn, void *arg) {
  store *s = arg;
  int64_t cutoff = st_now_ms() / 1000 / ST_TXID_BUCKET_S - ST_TXID_KEEP_BUCKETS;
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  st_key_cluster(s, &b, &w, "txids");
  st_key_cluster(s, &e, &w, "txids");
  tup_int(&w, cutoff);
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : kv_clear_range(txn, b.p, b.len, e.p, e.len);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

int st_txid_cleanup(store *s) {
  st_op op = {.fn = txid_cleanup_fn, .arg = s};
  return st_run(s, &op);
}

/* ---- counters -------------------------------------------------------------- */

int st_counter_add(kv_txn *txn, const st_dbx *x, const char *name, int64_t delta) {
  if (!delta) return 0;
  dv_buf k;
  buf_init(&k);
  st_key_meta(x, &k, name);
  uint8_t p[8];
  st_le64(delta, p);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_atomic(txn, KV_ADD, k.p, k.len, p, 8);
  buf_free(&k);
  return rc;
}

int st_mdv_bump(kv_txn *txn) {
  uint8_t v[14] = {0};
  return kv_set_versionstamped_value(txn, KV_METADATA_VERSION_KEY, KV_METADATA_VERSION_KEY_LEN, v, 14);
}

/* ---- open / close / background ---------------------------------------------------- */

struct cfg_arg {
  store *s;
  int want;   /* partitions asked for */
  int got;    /* partitions in force */
};

static int config_fn(kv_txn *txn, void *arg) {
  struct cfg_arg *c = arg;
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_cluster(c->s, &k, &w, "config");
  tup_strz(&w, "db_updates_partitions");
  const uint8_t *v;
  size_t vl;
  int found, rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &v, &vl, &found);
  if (!rc && found) {
    tup_r r;
    tup_item it;
    tup_r_init(&r, v, vl);
    if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64) || it.i64 < 1 || it.i64 > 1024)
      rc = DV_ECORRUPT;
    else
      c->got = (int)it.i64;
  } else if (!rc) {
    dv_buf val;
    buf_init(&val);
    tup_w vw;
    tup_w_init(&vw, &val);
    tup_int(&vw, c->want);
    rc = buf_error(&val) ? DV_ENOMEM : kv_set(txn, k.p, k.len, val.p, val.len);
    buf_free(&val);
    c->got = c->want;
  }
  buf_free(&k);
  return rc;
}

void store_set_max_document_size(store *s, size_t n) { s->max_doc = n ? n : STORE_DEFAULT_MAX_DOC; }

int store_open(kv_db *kv, const store_opts *opts, store **out) {
  store_opts o = {0};
  if (opts) o = *opts;
  store *s = dv_calloc(1, sizeof *s);
  if (!s) return DV_ENOMEM;
  s->kv = kv;
  s->max_doc = o.max_document_size ? o.max_document_size : STORE_DEFAULT_MAX_DOC;
  const char *root = o.root ? o.root : "divan";
  dv_buf b;
  buf_init(&b);
  tup_w w;
  tup_w_init(&w, &b);
  tup_strz(&w, root);
  int rc = tup_w_finish(&w);
  if (!rc && b.len > sizeof s->root) rc = DV_EINVAL;
  if (rc) {
    buf_free(&b);
    dv_free(s);
    return rc;
  }
  memcpy(s->root, b.p, b.len);
  s->root_len = b.len;
  buf_free(&b);
  pthread_mutex_init(&s->mu, NULL);
  st_work_init(s);
  st_random(s->owner, 16);
  struct cfg_arg c = {s, o.db_updates_partitions > 0 ? o.db_updates_partitions : 4, 0};
  if (c.want > 1024) c.want = 1024;
  st_op op = {.fn = config_fn, .arg = &c};
  rc = st_run(s, &op);
  if (rc) goto fail;
  s->partitions = c.got;
  pthread_mutex_init(&s->dbu_mu, NULL);
  s->dbu_cursor = dv_calloc((size_t)s->partitions, sizeof *s->dbu_cursor);
  if (!s->dbu_cursor) {
    rc = DV_ENOMEM;
    goto fail;
  }
  if (o.background && (rc = st_bg_start(s))) goto fail;
  *out = s;
  return 0;
fail:
  dv_free(s->dbu_cursor);
  st_work_stop(s);
  pthread_mutex_destroy(&s->mu);
  dv_free(s);
  return rc;
}

void store_close(store *s) {
  if (!s) return;
  st_bg_stop(s);
  st_work_stop(s);
  st_db_free_all(s);
  for (int p = 0; p < s->partitions; p++) buf_free(&s->dbu_cursor[p]);
  dv_free(s->dbu_cursor);
  pthread_mutex_destroy(&s->dbu_mu);
  pthread_mutex_destroy(&s->mu);
  dv_free(s);
}

kv_db *store_kv(store *s) { return s->kv; }
