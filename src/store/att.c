/* att.c — attachments: content chunks, stubs in RevisionMetadata, uploads
 * in bounded transactions, and collection of content nothing uses.
 *
 * Keys (store_int.h has the whole table):
 *   (P,"a",DocID,AttID,i)          chunk i of the stored bytes, ≤ STORE_ATT_CHUNK
 *   (P,"d",DocID,ND,Pos,Hash)      (0, (stub…)) — the leaf's stubs
 *   (P,"r",DocID,ND,Pos,Hash)      …, (AttID…) — the content the leaf uses
 *   (R,0,"att_uploads",AttID)      (DbPrefix, DocID, ExpiresMs) — unlinked upload
 *
 * Data flow of an edit with attachments (edit.c calls in):
 *   1. store_update, before any transaction: each new content is either in
 *      memory (store_att.data: AttID = MD5 of the stored bytes, so equal
 *      content is stored once per document) or an upload already written
 *      (store_att.up: AttID random). When an edit's in-memory content
 *      passes STORE_ATT_INLINE_MAX, the biggest pieces are uploaded first
 *      (st_att_spill) so no transaction carries more than that.
 *   2. In the edit's transaction: stubs are resolved against the parent's
 *      RevisionMetadata (new_edits=false: any leaf's), in-memory content is
 *      written (st_att_write), uploads are linked (st_att_link: their
 *      marker is read, so a sweep that raced it makes the edit retry and
 *      fail cleanly, and cleared); the new leaf's stubs go into its
 *      RevisionMetadata and its AttIDs into its branch value.
 *   3. Content the replaced leaf used that no remaining leaf uses is
 *      cleared in the same transaction (st_att_collect). With one branch —
 *      the usual case — that needs no read beyond seed 000's profile; a
 *      conflicted document's other branches are read for their AttIDs.
 *
 * An upload (store_att_upload_*) writes its marker, then chunks in
 * transactions of UP_BATCH chunks (about 4 MB), each refreshing the
 * marker's expiry. A crash part-way leaves chunks nothing points to and a
 * marker; the background sweeper (st_att_sweep) clears both once expired.
 * store_att_upload_free clears an upload no edit linked at once.
 *
 * Reading: store_doc_atts gives a leaf's stubs with their AttIDs;
 * store_att_pread reads a byte range of the stored content in one short
 * transaction (chunks are immutable once written, so a download may span
 * many transactions; if the content is collected in between, the read
 * says DV_EATT_GONE rather than return a mix).
 */
#include <string.h>

#include "store/store_int.h"
#include "util/alloc.h"
#include "util/b64.h"
#include "util/md5.h"

#define UP_BATCH 40   /* chunks per upload transaction */
#define SWEEP_MAX 100 /* expired uploads cleared per sweep transaction */

/* ---- keys ---------------------------------------------------------------- */

void st_att_key(const st_dbx *x, dv_buf *b, const char *id, size_t id_len, const uint8_t attid[16]) {
  tup_w w;
  st_key_doc(x, b, &w, ST_SUB_ATT, id, id_len);
  tup_bytes(&w, attid, 16);
}

static void upload_key(store *s, dv_buf *b, const uint8_t attid[16]) {
  tup_w w;
  st_key_cluster(s, b, &w, "att_uploads");
  tup_bytes(&w, attid, 16);
}

/* ---- RevisionMetadata ------------------------------------------------------ */

int st_meta_encode(dv_buf *b, const store_att *atts, size_t n) {
  tup_w w;
  tup_w_init(&w, b);
  tup_int(&w, 0);
  if (n) {
    tup_nest_begin(&w);
    for (size_t i = 0; i < n; i++) {
      const store_att *t = &atts[i];
      tup_nest_begin(&w);
      tup_str(&w, t->name, t->name_len);
      tup_str(&w, t->type, t->type_len);
      tup_int(&w, t->length);
      tup_int(&w, t->enc_length);
      tup_bool(&w, t->gzip);
      tup_bytes(&w, t->md5, 16);
      tup_int(&w, t->revpos);
      tup_bytes(&w, t->id, 16);
      tup_nest_end(&w);
    }
    tup_nest_end(&w);
  }
  int rc = tup_w_finish(&w);
  return rc ? rc : buf_error(b) ? DV_ENOMEM : 0;
}

static int get_str(tup_r *r, int type, dv_arena *a, const char **out, size_t *len) {
  tup_item it;
  if (tup_get(r, type, &it)) return DV_ECORRUPT;
  char *p = arena_alloc(a, it.s_len + 1);
  if (!p) return DV_ENOMEM;
  tup_item_copy(&it, (uint8_t *)p);
  p[it.s_len] = 0;
  *out = p;
  *len = it.s_len;
  return 0;
}

static int get_i64(tup_r *r, int64_t *out) {
  tup_item it;
  if (tup_get(r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  *out = it.i64;
  return 0;
}

int st_meta_atts(const uint8_t *val, size_t vl, dv_arena *a, store_att **out, size_t *out_n) {
  *out = NULL;
  *out_n = 0;
  tup_r r;
  tup_item it, e;
  tup_r_init(&r, val, vl);
  if (tup_get(&r, TUP_INT, &it) || it.i64 != 0) return DV_ECORRUPT; /* DocFormat */
  if (tup_r_done(&r)) return 0;
  if (tup_get(&r, TUP_NEST, &it) || !tup_r_done(&r)) return DV_ECORRUPT;
  tup_r sub = it.sub;
  size_t n = 0;
  int k;
  while ((k = tup_next(&sub, &e)) == 1) n++;
  if (k < 0) return DV_ECORRUPT;
  store_att *v = arena_calloc(a, (n ? n : 1) * sizeof *v);
  if (!v) return DV_ENOMEM;
  sub = it.sub;
  for (size_t i = 0; i < n; i++) {
    store_att *t = &v[i];
    if (tup_get(&sub, TUP_NEST, &e)) return DV_ECORRUPT;
    tup_r s = e.sub;
    const char *md5, *id;
    size_t l1, l2;
    int rc;
    if ((rc = get_str(&s, TUP_STR, a, &t->name, &t->name_len))) return rc;
    if ((rc = get_str(&s, TUP_STR, a, &t->type, &t->type_len))) return rc;
    if ((rc = get_i64(&s, &t->length)) || (rc = get_i64(&s, &t->enc_length))) return rc;
    if (tup_get(&s, TUP_BOOL, &it)) return DV_ECORRUPT;
    t->gzip = it.b;
    if ((rc = get_str(&s, TUP_BYTES, a, &md5, &l1))) return rc;
    if ((rc = get_i64(&s, &t->revpos))) return rc;
    if ((rc = get_str(&s, TUP_BYTES, a, &id, &l2))) return rc;
    if (l1 != 16 || l2 != 16 || !tup_r_done(&s)) return DV_ECORRUPT;
    memcpy(t->md5, md5, 16);
    memcpy(t->id, id, 16);
  }
  *out = v;
  *out_n = n;
  return 0;
}

/* The digest as CouchDB prints it: "md5-" + base64. */
static json_val *digest_str(dv_arena *a, const uint8_t md5[16]) {
  char s[4 + 25];
  memcpy(s, "md5-", 4);
  dv_b64_encode(md5, 16, 0, s + 4);
  return json_new_stringz(a, s);
}

#define SET(o, k, v)                                        \
  do {                                                      \
    json_val *v_ = (v);                                     \
    if (!v_ || json_obj_setz(a, (o), (k), v_)) return NULL; \
  } while (0)

json_val *st_atts_json(dv_arena *a, const store_att *atts, size_t n, int info) {
  json_val *o = json_new_object(a);
  if (!o) return NULL;
  for (size_t i = 0; i < n; i++) {
    const store_att *t = &atts[i];
    json_val *s = json_new_object(a);
    if (!s) return NULL;
    SET(s, "content_type", json_new_string(a, t->type, t->type_len));
    SET(s, "revpos", json_new_int(a, t->revpos));
    SET(s, "digest", digest_str(a, t->md5));
    SET(s, "length", json_new_int(a, t->length));
    SET(s, "stub", json_new_bool(a, 1));
    if (info && t->gzip) {
      SET(s, "encoding", json_new_stringz(a, "gzip"));
      SET(s, "encoded_length", json_new_int(a, t->enc_length));
    }
    if (json_obj_set(a, o, t->name, t->name_len, s)) return NULL;
  }
  return o;
}

/* ---- content ---------------------------------------------------------------- */

int st_att_write(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const uint8_t attid[16],
                 const uint8_t *p, size_t n) {
  dv_buf k;
  buf_init(&k);
  st_att_key(x, &k, id, id_len, attid);
  size_t plen = k.len;
  int rc = 0;
  for (int64_t i = 0; !rc && (i == 0 || (size_t)i * STORE_ATT_CHUNK < n); i++) {
    size_t off = (size_t)i * STORE_ATT_CHUNK, len = n - off < STORE_ATT_CHUNK ? n - off : STORE_ATT_CHUNK;
    if (n == 0) break; /* empty content has no chunks */
    k.len = plen;
    tup_w w;
    tup_w_init(&w, &k);
    tup_int(&w, i);
    rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, p + off, len);
  }
  buf_free(&k);
  return rc;
}

static int att_clear(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const uint8_t attid[16]) {
  dv_buf k, b, e;
  buf_init(&k);
  buf_init(&b);
  buf_init(&e);
  st_att_key(x, &k, id, id_len, attid);
  int rc = buf_error(&k) ? DV_ENOMEM : st_prefix_range(&k, &b, &e);
  if (!rc) rc = kv_clear_range(txn, b.p, b.len, e.p, e.len);
  buf_free(&k);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

int st_att_has_id(const uint8_t *ids, size_t n, const uint8_t id[16]) {
  for (size_t i = 0; i < n; i++)
    if (!memcmp(ids + 16 * i, id, 16)) return 1;
  return 0;
}

int st_att_collect(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const uint8_t *dropped,
                   size_t n_dropped, const st_branch *keep, int n_keep) {
  for (size_t i = 0; i < n_dropped; i++) {
    const uint8_t *d = dropped + 16 * i;
    if (st_att_has_id(dropped, i, d)) continue; /* listed twice */
    int used = 0;
    for (int k = 0; k < n_keep && !used; k++) used = st_att_has_id(keep[k].att_ids, keep[k].n_att_ids, d);
    if (used) continue;
    int rc = att_clear(txn, x, id, id_len, d);
    if (rc) return rc;
  }
  return 0;
}

/* ---- uploads ------------------------------------------------------------------ */

struct store_att_upload {
  store_db *db;        /* the database (a reference of its own) */
  char *id;            /* the document id */
  size_t id_len;
  uint8_t attid[16];   /* random */
  dv_buf batch;        /* chunks not yet written: full ones, then the partial one */
  int64_t next;        /* index of the first chunk in batch */
  int64_t total;       /* stored bytes so far */
  dv_md5 md5;          /* of them */
  uint8_t digest[16];  /* after finish */
  int finished;
  int linked;          /* a committed edit links it */
  int began;           /* the marker was written */
};

const uint8_t *st_upload_id(const store_att_upload *u) { return u->attid; }
int st_upload_done(const store_att_upload *u, int64_t *len, uint8_t md5[16]) {
  if (!u->finished) return DV_EINVAL;
  *len = u->total;
  memcpy(md5, u->digest, 16);
  return 0;
}
void st_upload_set_linked(store_att_upload *u) { u->linked = 1; }
store_db *st_upload_db(const store_att_upload *u) { return u->db; }

/* Read an upload's marker, conflict-checked (so an edit linking it, a
 * flush refreshing it and the sweeper clearing it never all commit), and
 * clear it when asked and found. */
static int marker_take(kv_txn *txn, store *s, const uint8_t attid[16], int clear, int *found) {
  dv_buf k;
  buf_init(&k);
  upload_key(s, &k, attid);
  const uint8_t *v;
  size_t vl;
  *found = 0;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &v, &vl, found);
  if (!rc && *found && clear) rc = kv_clear(txn, k.p, k.len);
  buf_free(&k);
  return rc;
}

struct up_txn {
  store_att_upload *u;
  size_t nbytes;     /* bytes of batch to write (whole chunks, or all at the end) */
  int clear;         /* 1: clear everything instead (free) */
};

static int marker_put(kv_txn *txn, const st_dbx *x, store_att_upload *u) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  upload_key(x->s, &k, u->attid);
  tup_w w;
  tup_w_init(&w, &v);
  tup_int(&w, x->prefix);
  tup_str(&w, u->id, u->id_len);
  tup_int(&w, st_now_ms() + STORE_ATT_UPLOAD_TTL_S * 1000LL);
  int rc = tup_w_finish(&w);
  if (!rc) rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

static int up_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct up_txn *t = arg;
  store_att_upload *u = t->u;
  int rc = 0;
  if (t->clear) {
    /* Only while its marker is there: without it, either an edit linked
     * the upload (one whose commit came back unknown to us, so u->linked
     * was never set: its content is now a document's) or the sweeper
     * already cleared it. */
    int found;
    rc = marker_take(txn, x->s, u->attid, 1, &found);
    return rc || !found ? rc : att_clear(txn, x, u->id, u->id_len, u->attid);
  }
  if (u->began) { /* a sweep that took it (an upload stalled past its TTL) must not leave a hole */
    int found;
    if ((rc = marker_take(txn, x->s, u->attid, 0, &found))) return rc;
    if (!found) return DV_EATT_GONE;
  }
  if ((rc = marker_put(txn, x, u))) return rc;
  if (!t->nbytes) return 0;
  dv_buf k;
  buf_init(&k);
  st_att_key(x, &k, u->id, u->id_len, u->attid);
  size_t plen = k.len;
  for (size_t off = 0; !rc && off < t->nbytes; off += STORE_ATT_CHUNK) {
    size_t len = t->nbytes - off < STORE_ATT_CHUNK ? t->nbytes - off : STORE_ATT_CHUNK;
    k.len = plen;
    tup_w w;
    tup_w_init(&w, &k);
    tup_int(&w, u->next + (int64_t)(off / STORE_ATT_CHUNK));
    rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, u->batch.p + off, len);
  }
  buf_free(&k);
  return rc;
}

/* Write the first nbytes of the batch (a multiple of the chunk size, or
 * everything at the end) and drop them from it. */
static int up_flush(store_att_upload *u, size_t nbytes) {
  struct up_txn t = {.u = u, .nbytes = nbytes};
  st_op op = {.dbfn = up_fn, .db = u->db, .arg = &t}; /* idempotent: no TxId needed */
  int rc = st_run(u->db->s, &op);
  if (rc) return rc;
  u->began = 1;
  kv_bulk_written(u->db->s->kv, nbytes);
  u->next += (int64_t)((nbytes + STORE_ATT_CHUNK - 1) / STORE_ATT_CHUNK);
  if (nbytes) { /* the batch may not exist yet (the marker-only flush) */
    memmove(u->batch.p, u->batch.p + nbytes, u->batch.len - nbytes);
    u->batch.len -= nbytes;
  }
  return 0;
}

int store_att_upload_begin(store_db *db, const char *id, size_t id_len, store_att_upload **out) {
  int rc = store_docid_check(id, id_len, 0);
  if (rc) return rc;
  store_att_upload *u = dv_calloc(1, sizeof *u);
  char *idc = dv_malloc(id_len + 1);
  if (!u || !idc) {
    dv_free(u);
    dv_free(idc);
    return DV_ENOMEM;
  }
  memcpy(idc, id, id_len);
  idc[id_len] = 0;
  u->id = idc;
  u->id_len = id_len;
  st_random(u->attid, 16);
  buf_init(&u->batch);
  dv_md5_init(&u->md5);
  /* a reference of its own: the caller may close its handle first */
  if ((rc = store_db_open(db->s, db->name, &u->db))) {
    dv_free(idc);
    dv_free(u);
    return rc;
  }
  if ((rc = up_flush(u, 0))) { /* the marker first: a crash from here on is swept */
    store_att_upload_free(u);
    return rc;
  }
  *out = u;
  return 0;
}

int store_att_upload_write(store_att_upload *u, const void *p, size_t n) {
  if (u->finished) return DV_EINVAL;
  const uint8_t *s = p;
  while (n) {
    size_t room = (size_t)UP_BATCH * STORE_ATT_CHUNK - u->batch.len;
    size_t take = n < room ? n : room;
    buf_append(&u->batch, s, take);
    if (buf_error(&u->batch)) return DV_ENOMEM;
    dv_md5_update(&u->md5, s, take);
    u->total += (int64_t)take;
    s += take;
    n -= take;
    if (u->batch.len == (size_t)UP_BATCH * STORE_ATT_CHUNK) {
      int rc = up_flush(u, u->batch.len);
      if (rc) return rc;
    }
  }
  return 0;
}

int store_att_upload_finish(store_att_upload *u, int64_t *out_len, uint8_t md5[16]) {
  if (!u->finished) {
    int rc = up_flush(u, u->batch.len);
    if (rc) return rc;
    buf_free(&u->batch);
    dv_md5_final(&u->md5, u->digest);
    u->finished = 1;
  }
  if (out_len) *out_len = u->total;
  if (md5) memcpy(md5, u->digest, 16);
  return 0;
}

void store_att_upload_free(store_att_upload *u) {
  if (!u) return;
  if (!u->linked && u->began) {
    struct up_txn t = {.u = u, .clear = 1};
    st_op op = {.dbfn = up_fn, .db = u->db, .arg = &t};
    if (st_run(u->db->s, &op)) {
      /* best effort: the sweeper clears it once its marker expires */
    }
  }
  store_db_close(u->db);
  buf_free(&u->batch);
  dv_free(u->id);
  dv_free(u);
}

int st_att_link(kv_txn *txn, const st_dbx *x, const store_att_upload *u) {
  int found;
  int rc = marker_take(txn, x->s, u->attid, 1, &found);
  return rc ? rc : found ? 0 : DV_EATT_GONE; /* not found: swept, the upload took too long */
}

/* ---- the sweeper ---------------------------------------------------------------- */

struct sweep_arg {
  store *s;
  int64_t now;
  int n;        /* uploads cleared */
};

static int sweep_fn(kv_txn *txn, void *arg) {
  struct sweep_arg *g = arg;
  g->n = 0;
  dv_buf k, b, e, ck;
  buf_init(&k);
  buf_init(&b);
  buf_init(&e);
  buf_init(&ck);
  tup_w w;
  st_key_cluster(g->s, &k, &w, "att_uploads");
  size_t off = k.len;
  int rc = buf_error(&k) ? DV_ENOMEM : st_prefix_range(&k, &b, &e);
  kv_pair *ps = NULL;
  int n = 0, more = 0;
  /* every marker (one per upload in progress), clearing at most
   * SWEEP_MAX expired ones per transaction: live uploads that sort first
   * cannot starve the expired ones behind them */
  if (!rc) rc = kv_get_range(txn, b.p, b.len, e.p, e.len, 0, KV_SNAPSHOT, &ps, &n, &more);
  for (int i = 0; !rc && i < n && g->n < SWEEP_MAX; i++) {
    tup_r r;
    tup_item it, pf, id, ex;
    tup_r_init(&r, ps[i].val, ps[i].val_len);
    if (tup_get(&r, TUP_INT, &pf) || tup_get(&r, TUP_STR, &id) || tup_get(&r, TUP_INT, &ex)) continue;
    if (ex.i64 > g->now) continue;
    /* the scan was a snapshot: read this marker again, conflict-checked,
     * so an edit that links it (or a flush that refreshes it) and this
     * sweep cannot both commit */
    const uint8_t *mv;
    size_t mvl;
    int found = 0;
    rc = kv_get(txn, ps[i].key, ps[i].key_len, 0, &mv, &mvl, &found);
    if (rc) break;
    if (!found || mvl != ps[i].val_len || memcmp(mv, ps[i].val, mvl)) continue;
    tup_r_init(&r, ps[i].key + off, ps[i].key_len - off);
    if (tup_get(&r, TUP_BYTES, &it) || it.s_len != 16) continue;
    uint8_t attid[16];
    tup_item_copy(&it, attid);
    char *docid = dv_malloc(id.s_len + 1);
    if (!docid) { rc = DV_ENOMEM; break; }
    tup_item_copy(&id, (uint8_t *)docid);
    st_dbx x = {.s = g->s, .prefix = pf.i64};
    buf_reset(&ck);
    st_att_key(&x, &ck, docid, id.s_len, attid);
    buf_reset(&b);
    buf_reset(&e);
    rc = buf_error(&ck) ? DV_ENOMEM : st_prefix_range(&ck, &b, &e);
    if (!rc) rc = kv_clear_range(txn, b.p, b.len, e.p, e.len);
    if (!rc) rc = kv_clear(txn, ps[i].key, ps[i].key_len);
    dv_free(docid);
    g->n++;
  }
  buf_free(&k);
  buf_free(&b);
  buf_free(&e);
  buf_free(&ck);
  return rc;
}

int st_att_sweep(store *s, int64_t now_ms) {
  struct sweep_arg g = {.s = s, .now = now_ms};
  st_op op = {.fn = sweep_fn, .arg = &g};
  int rc = st_run(s, &op);
  return rc ? rc : g.n;
}

/* ---- reading ------------------------------------------------------------------- */

struct atts_arg {
  store_db *db;
  const char *id;
  size_t id_len;
  const store_rev *rev;
  dv_arena *a;
  store_rev out_rev;
  store_att *atts;
  size_t n;
};

int st_leaf_atts(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br, dv_arena *a,
                 store_att **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!br->n_att_ids) return 0; /* no stubs: no read */
  dv_buf k;
  buf_init(&k);
  st_doc_key(x, &k, id, id_len, br);
  const uint8_t *v;
  size_t vl;
  int found = 0;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &v, &vl, &found);
  buf_free(&k);
  if (!rc && !found) rc = DV_ECORRUPT;
  if (!rc) rc = st_meta_atts(v, vl, a, out, n);
  return rc;
}

static int atts_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct atts_arg *g = arg;
  int rc = 0;
  st_branch br;
  int found = 0;
  if (!g->rev) {
    st_branch *w;
    int n;
    rc = st_branch_range(txn, x, g->id, g->id_len, NULL, 1, KV_REVERSE, g->a, &w, &n);
    if (rc) return rc;
    if (!n) return DV_ENOT_FOUND;
    if (w->deleted) return DV_EDELETED;
    br = *w;
  } else {
    rc = st_branch_get(txn, x, g->id, g->id_len, 0, g->rev, g->a, &br, &found);
    if (!rc && !found) rc = st_branch_get(txn, x, g->id, g->id_len, 1, g->rev, g->a, &br, &found);
    if (rc) return rc;
    if (!found) return DV_ENOT_FOUND;
  }
  g->out_rev = br.rev;
  return st_leaf_atts(txn, x, g->id, g->id_len, &br, g->a, &g->atts, &g->n);
}

int store_doc_atts(store_db *db, const char *id, size_t id_len, const store_rev *rev, dv_arena *a,
                   store_rev *out_rev, store_att **out, size_t *out_n) {
  struct atts_arg g = {.db = db, .id = id, .id_len = id_len, .rev = rev, .a = a};
  st_op op = {.dbfn = atts_fn, .db = db, .arg = &g};
  int rc = st_run(db->s, &op);
  if (rc) return rc;
  if (out_rev) *out_rev = g.out_rev;
  *out = g.atts;
  *out_n = g.n;
  return 0;
}

struct pread_arg {
  store_db *db;
  const char *id;
  size_t id_len;
  const store_att *att;
  int64_t off;
  uint8_t *buf;
  size_t cap;
  size_t got;
};

static int pread_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct pread_arg *g = arg;
  g->got = 0;
  int rc = 0;
  int64_t end = g->off + (int64_t)g->cap;
  if (end > g->att->enc_length) end = g->att->enc_length;
  if (g->off >= end) return 0;
  int64_t c0 = g->off / STORE_ATT_CHUNK, c1 = (end - 1) / STORE_ATT_CHUNK;
  dv_buf k, b, e;
  buf_init(&k);
  buf_init(&b);
  buf_init(&e);
  st_att_key(x, &k, g->id, g->id_len, g->att->id);
  size_t plen = k.len;
  tup_w w;
  buf_append(&b, k.p, k.len);
  tup_w_init(&w, &b);
  tup_int(&w, c0);
  buf_append(&e, k.p, k.len);
  tup_w_init(&w, &e);
  tup_int(&w, c1 + 1);
  kv_iter *it = NULL;
  rc = buf_error(&k) || buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  if (!rc) rc = kv_iter_begin(txn, b.p, b.len, e.p, e.len, 0, KV_SNAPSHOT | KV_BULK, &it);
  kv_pair p;
  int more = 0;
  int64_t want = c0;
  while (!rc && (more = kv_iter_next(it, &p)) == 1) {
    tup_r r;
    tup_item ci;
    tup_r_init(&r, p.key + plen, p.key_len - plen);
    if (tup_get(&r, TUP_INT, &ci) || ci.i64 != want) {
      rc = DV_EATT_GONE; /* a hole: collected while we read */
      break;
    }
    int64_t cstart = want * STORE_ATT_CHUNK;
    int64_t clen = end - cstart < STORE_ATT_CHUNK ? end - cstart : STORE_ATT_CHUNK;
    int64_t expect = g->att->enc_length - cstart < STORE_ATT_CHUNK ? g->att->enc_length - cstart : STORE_ATT_CHUNK;
    if ((int64_t)p.val_len != expect) {
      rc = DV_ECORRUPT;
      break;
    }
    int64_t from = g->off > cstart ? g->off - cstart : 0;
    memcpy(g->buf + g->got, p.val + from, (size_t)(clen - from));
    g->got += (size_t)(clen - from);
    want++;
  }
  if (!rc && more < 0) rc = more;
  if (!rc && want != c1 + 1) rc = DV_EATT_GONE;
  kv_iter_free(it);
  buf_free(&k);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

int store_att_pread(store_db *db, const char *id, size_t id_len, const store_att *att, int64_t off, uint8_t *buf,
                    size_t cap, size_t *got) {
  if (off < 0) return DV_ERANGE;
  struct pread_arg g = {.db = db, .id = id, .id_len = id_len, .att = att, .off = off, .buf = buf, .cap = cap};
  st_op op = {.dbfn = pread_fn, .db = db, .arg = &g};
  int rc = st_run(db->s, &op);
  if (!rc) *got = g.got;
  return rc;
}
