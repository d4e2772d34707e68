/* rev.c — the revisions subspace's KVs (seed 000): one KV per edit
 * branch, keyed (P,"r",DocID,NotDeleted,RevPos,RevHash) so the winner
 * sorts last; the winner's value carries the document's Sequence and
 * BranchCount, the others carry null there.
 *
 *   value = (RevFormat 0, (Inc, VS) | null, BranchCount | null,
 *            (ancestor hash, …), JsonSize, KvSize)
 *
 * Ancestor hashes are parent first; their positions are implied (leaf pos
 * - 1, - 2, …). Sizes are the leaf body's, so counters never re-read
 * bodies. Not here: deciding what to write (edit.c).
 */
#include <string.h>

#include "store/store_int.h"

int st_branch_cmp(const st_branch *a, const st_branch *b) {
  if (a->deleted != b->deleted) return a->deleted ? -1 : 1;
  return store_rev_cmp(&a->rev, &b->rev);
}

void st_branch_key(const st_dbx *x, dv_buf *b, const char *id, size_t id_len, int deleted, const store_rev *r) {
  tup_w w;
  st_key_doc(x, b, &w, ST_SUB_REV, id, id_len);
  tup_bool(&w, !deleted);
  tup_int(&w, r->pos);
  st_put_hash(&w, r);
}

void st_doc_key(const st_dbx *x, dv_buf *b, const char *id, size_t id_len, const st_branch *br) {
  tup_w w;
  st_key_doc(x, b, &w, ST_SUB_DOC, id, id_len);
  tup_bool(&w, !br->deleted);
  tup_int(&w, br->rev.pos);
  st_put_hash(&w, &br->rev);
}

int st_branch_decode(dv_arena *a, const uint8_t *key, size_t key_len, size_t key_off, const uint8_t *val,
                     size_t val_len, st_branch *out) {
  if (key_off > key_len) return DV_ECORRUPT;
  st_branch br;
  memset(&br, 0, sizeof br);
  tup_r r;
  tup_item it;
  tup_r_init(&r, key + key_off, key_len - key_off);
  if (tup_get(&r, TUP_BOOL, &it)) return DV_ECORRUPT;
  br.deleted = !it.b;
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64) || it.i64 < 1) return DV_ECORRUPT;
  br.rev.pos = it.i64;
  if (tup_next(&r, &it) != 1 || !tup_r_done(&r)) return DV_ECORRUPT;
  int rc = st_get_hash(&it, a, &br.rev);
  if (rc) return rc;
  tup_r_init(&r, val, val_len);
  if (tup_get(&r, TUP_INT, &it) || it.i64 != 0) return DV_ECORRUPT; /* RevFormat */
  if (tup_next(&r, &it) != 1) return DV_ECORRUPT;
  if (it.type == TUP_NEST) {
    br.winner = 1;
    if (st_seq_get(&it.sub, &br.seq)) return DV_ECORRUPT;
    if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64) || it.i64 < 1) return DV_ECORRUPT;
    br.bc = it.i64;
  } else if (it.type == TUP_NULL) {
    if (tup_get(&r, TUP_NULL, &it)) return DV_ECORRUPT;
  } else {
    return DV_ECORRUPT;
  }
  if (tup_get(&r, TUP_NEST, &it)) return DV_ECORRUPT;
  /* count, then copy */
  tup_r sub = it.sub;
  size_t n = 0;
  tup_item e;
  int k;
  while ((k = tup_next(&sub, &e)) == 1) n++;
  if (k < 0) return DV_ECORRUPT;
  if (n >= (size_t)br.rev.pos) return DV_ECORRUPT;
  br.anc = n ? arena_alloc(a, n * sizeof *br.anc) : NULL;
  if (n && !br.anc) return DV_ENOMEM;
  sub = it.sub;
  for (size_t i = 0; i < n; i++) {
    if (tup_next(&sub, &e) != 1) return DV_ECORRUPT;
    br.anc[i].pos = br.rev.pos - 1 - (int64_t)i;
    rc = st_get_hash(&e, a, &br.anc[i]);
    if (rc) return rc;
  }
  br.n_anc = n;
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  br.json_size = it.i64;
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  br.kv_size = it.i64;
  if (!tup_r_done(&r)) { /* the AttIDs the leaf uses */
    if (tup_get(&r, TUP_NEST, &it)) return DV_ECORRUPT;
    sub = it.sub;
    n = 0;
    while ((k = tup_next(&sub, &e)) == 1) {
      if (e.type != TUP_BYTES || e.s_len != 16) return DV_ECORRUPT;
      n++;
    }
    if (k < 0 || n == 0) return DV_ECORRUPT;
    uint8_t *ids = arena_alloc(a, n * 16);
    if (!ids) return DV_ENOMEM;
    sub = it.sub;
    for (size_t i = 0; i < n; i++) {
      if (tup_next(&sub, &e) != 1) return DV_ECORRUPT;
      tup_item_copy(&e, ids + 16 * i);
    }
    br.att_ids = ids;
    br.n_att_ids = n;
    if (!tup_r_done(&r)) return DV_ECORRUPT;
  }
  *out = br;
  return 0;
}

int st_branch_put(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br,
                  int winner, uint16_t uv, int64_t bc) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  st_branch_key(x, &k, id, id_len, br->deleted, &br->rev);
  size_t n = br->n_anc;
  if (x->revs_limit > 0 && n > (size_t)x->revs_limit - 1) n = (size_t)x->revs_limit - 1;
  int rc;
  for (;;) {
    buf_reset(&v);
    tup_w w;
    tup_w_init(&w, &v);
    tup_int(&w, 0);
    if (winner) {
      tup_nest_begin(&w);
      tup_int(&w, x->inc);
      tup_vs_incomplete(&w, uv);
      tup_nest_end(&w);
      tup_int(&w, bc);
    } else {
      tup_null(&w);
      tup_null(&w);
    }
    tup_nest_begin(&w);
    for (size_t i = 0; i < n; i++) st_put_hash(&w, &br->anc[i]);
    tup_nest_end(&w);
    tup_int(&w, br->json_size);
    tup_int(&w, br->kv_size);
    if (br->n_att_ids) {
      tup_nest_begin(&w);
      for (size_t i = 0; i < br->n_att_ids; i++) tup_bytes(&w, br->att_ids + 16 * i, 16);
      tup_nest_end(&w);
    }
    rc = winner ? tup_w_finish_vs(&w) : tup_w_finish(&w);
    if (rc) goto out;
    if (buf_error(&v) || buf_error(&k)) { rc = DV_ENOMEM; goto out; }
    if (v.len - (winner ? 4 : 0) <= KV_MAX_VALUE || n == 0) break;
    n = n * 3 / 4; /* a long history of long raw revs: stem further */
  }
  rc = winner ? kv_set_versionstamped_value(txn, k.p, k.len, v.p, v.len) : kv_set(txn, k.p, k.len, v.p, v.len);
out:
  buf_free(&k);
  buf_free(&v);
  return rc;
}

int st_branch_range(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const dv_buf *end_key,
                    int limit, int flags, dv_arena *a, st_branch **out, int *out_n) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  st_key_doc(x, &b, &w, ST_SUB_REV, id, id_len);
  size_t off = b.len;
  if (end_key) {
    buf_append(&e, end_key->p, end_key->len);
  } else {
    buf_append(&e, b.p, b.len);
    buf_putc(&e, 0xff);
  }
  kv_pair *pairs;
  int n = 0, more;
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  if (!rc) rc = kv_get_range(txn, b.p, b.len, e.p, e.len, limit, flags, &pairs, &n, &more);
  if (!rc) st_count_read((size_t)n);
  st_branch *brs = NULL;
  if (!rc && n && !(brs = arena_alloc(a, (size_t)n * sizeof *brs))) rc = DV_ENOMEM;
  for (int i = 0; !rc && i < n; i++)
    rc = st_branch_decode(a, pairs[i].key, pairs[i].key_len, off, pairs[i].val, pairs[i].val_len, &brs[i]);
  buf_free(&b);
  buf_free(&e);
  if (rc) return rc;
  *out = brs;
  *out_n = n;
  return 0;
}

int st_branch_get(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, int deleted, const store_rev *r,
                  dv_arena *a, st_branch *out, int *found) {
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_doc(x, &k, &w, ST_SUB_REV, id, id_len);
  size_t off = k.len;
  tup_bool(&w, !deleted);
  tup_int(&w, r->pos);
  st_put_hash(&w, r);
  const uint8_t *v;
  size_t vl;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &v, &vl, found);
  if (!rc) st_count_read((size_t)*found);
  if (!rc && *found) rc = st_branch_decode(a, k.p, k.len, off, v, vl, out);
  buf_free(&k);
  return rc;
}

int st_branch_clear(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br) {
  dv_buf k, e;
  buf_init(&k);
  buf_init(&e);
  st_branch_key(x, &k, id, id_len, br->deleted, &br->rev);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_clear(txn, k.p, k.len);
  if (!rc) {
    st_doc_key(x, &k, id, id_len, br);
    buf_append(&e, k.p, k.len);
    buf_putc(&e, 0xff);
    rc = buf_error(&k) || buf_error(&e) ? DV_ENOMEM : kv_clear_range(txn, k.p, k.len, e.p, e.len);
  }
  buf_free(&k);
  buf_free(&e);
  return rc;
}

/* ---- the changes row and update_seq that go with a new winner --------------- */

int st_change_move(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const store_seq *old,
                   const st_branch *nw, int64_t bc, uint16_t uv) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  int rc = 0;
  if (old) {
    st_key_db(x, &k, &w, ST_SUB_CHG);
    st_seq_put(&w, old);
    rc = buf_error(&k) ? DV_ENOMEM : kv_clear(txn, k.p, k.len);
  }
  if (!rc && nw) {
    st_key_db(x, &k, &w, ST_SUB_CHG);
    tup_int(&w, x->inc);
    tup_vs_incomplete(&w, uv);
    rc = tup_w_finish_vs(&w);
    if (!rc) {
      tup_w_init(&w, &v);
      tup_int(&w, 0);
      tup_str(&w, id, id_len);
      tup_int(&w, nw->rev.pos);
      st_put_hash(&w, &nw->rev);
      tup_int(&w, bc);
      tup_bool(&w, !nw->deleted);
      rc = tup_w_finish(&w);
    }
    if (!rc) rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : kv_set_versionstamped_key(txn, k.p, k.len, v.p, v.len);
  }
  buf_free(&k);
  buf_free(&v);
  return rc;
}

int st_update_seq_put(kv_txn *txn, const st_dbx *x, uint16_t uv) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  st_key_meta(x, &k, "update_seq");
  tup_w_init(&w, &v);
  tup_int(&w, x->inc);
  tup_vs_incomplete(&w, uv);
  int rc = tup_w_finish_vs(&w);
  if (!rc) rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : kv_set_versionstamped_value(txn, k.p, k.len, v.p, v.len);
  buf_free(&k);
  buf_free(&v);
  return rc;
}
