/* tx.c — transactions on one database for the layers above store/: the
 * indexes subspace (P,"i",…) index/ keeps its rows in, and the document
 * and changes reads it makes in the same transaction as those rows, so an
 * index row and the document it names are one snapshot.
 *
 * Data flow:
 *   store_db_run(db, fn)      st_run with the database checked in every
 *                             attempt (st_db_check), fn(store_tx) per
 *                             attempt; its writes commit when fn returns 0.
 *   index_update (hooks.c)    edit.c's transaction, wrapped in a store_tx on
 *                             the stack (st_tx_wrap) for the hook.
 *   store_tx_doc/_body        read.c's winner and leaf readers.
 *   store_tx_changes          the changes subspace between two Sequences,
 *                             non-snapshot when asked, so a builder that
 *                             indexes rows conflicts with an edit moving
 *                             one of them (RFC 006 step 4).
 * Not here: what the rows mean (index/).
 */
#include <string.h>

#include "store/store_int.h"
#include "util/alloc.h"

struct run_arg {
  store_tx_fn fn;
  void *arg;
};

static int run_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct run_arg *r = arg;
  store_tx t = {.txn = txn, .x = x};
  return r->fn(&t, r->arg);
}

int store_db_run(store_db *db, store_tx_fn fn, void *arg) {
  struct run_arg r = {.fn = fn, .arg = arg};
  st_op op = {.dbfn = run_fn, .db = db, .arg = &r};
  return st_run(db->s, &op);
}

kv_txn *store_tx_kv(store_tx *t) { return t->txn; }
store_db *store_tx_db(store_tx *t) { return t->x->db; }
int64_t store_tx_inc(store_tx *t) { return t->x->inc; }

void store_tx_ikey(store_tx *t, dv_buf *b, tup_w *w) { st_key_db(t->x, b, w, ST_SUB_INDEX); }

int store_tx_doc(store_tx *t, const char *id, size_t id_len, int flags, dv_arena *a, json_val **out) {
  return st_winner_doc(t->txn, t->x, id, id_len, flags, a, out);
}

int store_tx_leaf_doc(store_tx *t, const char *id, size_t id_len, const store_rev *rev, dv_arena *a,
                      json_val **out) {
  return st_live_leaf_doc(t->txn, t->x, id, id_len, rev, a, out);
}

int store_tx_body(store_tx *t, const char *id, size_t id_len, const store_winner *w, dv_arena *a, json_val **out) {
  st_branch br = {.rev = *w->rev, .deleted = w->deleted};
  return st_leaf_body(t->txn, t->x, id, id_len, &br, a, out);
}

int store_tx_update_seq(store_tx *t, store_seq *out) {
  const uint8_t *v;
  size_t vl;
  int found;
  memset(out, 0, sizeof *out);
  int rc = st_meta_get(t->txn, t->x, "update_seq", KV_SNAPSHOT, &v, &vl, &found);
  if (rc || !found) return rc;
  tup_r r;
  tup_r_init(&r, v, vl);
  return st_seq_get(&r, out);
}

int store_tx_changes(store_tx *t, const store_seq *after, const store_seq *before, int limit, int flags,
                     dv_arena *a, store_change **out, int *out_n, int *more) {
  const st_dbx *x = t->x;
  dv_buf pfx, b, e;
  buf_init(&pfx);
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  *out = NULL;
  *out_n = 0;
  *more = 0;
  st_key_db(x, &pfx, &w, ST_SUB_CHG);
  buf_append(&b, pfx.p, pfx.len);
  if (after && !store_seq_is_zero(after)) {
    tup_w_init(&w, &b);
    st_seq_put(&w, after);
    buf_putc(&b, 0); /* strictly after */
  }
  buf_append(&e, pfx.p, pfx.len);
  if (before) {
    tup_w_init(&w, &e);
    st_seq_put(&w, before);
  } else {
    buf_putc(&e, 0xff);
  }
  int rc = buf_error(&pfx) || buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  kv_pair *pairs = NULL;
  int n = 0;
  if (!rc && st_nonempty(&b, &e))
    rc = kv_get_range(t->txn, b.p, b.len, e.p, e.len, limit, flags & KV_SNAPSHOT, &pairs, &n, more);
  store_change *rows = NULL;
  if (!rc && n && !(rows = arena_alloc(a, (size_t)n * sizeof *rows))) rc = DV_ENOMEM;
  for (int i = 0; !rc && i < n; i++) {
    store_change *row = &rows[i];
    memset(row, 0, sizeof *row);
    tup_r r;
    tup_r_init(&r, pairs[i].key + pfx.len, pairs[i].key_len - pfx.len);
    if ((rc = st_seq_get(&r, &row->seq))) break;
    rc = st_change_decode(pairs[i].val, pairs[i].val_len, a, row, NULL);
  }
  if (!rc) {
    *out = rows;
    *out_n = n;
  }
  buf_free(&pfx);
  buf_free(&b);
  buf_free(&e);
  return rc;
}
