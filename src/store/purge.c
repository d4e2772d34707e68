/* purge.c — CouchDB's _purge over the revisions subspace: removing leaf
 * revisions for good, the purge sequence, and the purge infos an index
 * reads to drop a purged document's rows.
 *
 * A document's tree is one KV per edit branch (rev.c), and each branch KV
 * holds its leaf's whole path, so CouchDB's couch_key_tree:remove_leafs —
 * drop the paths whose leaf is named, keep every node another path still
 * uses — is here: clear the named leaves' branch KVs and bodies. Ancestors
 * shared with a remaining branch live on in that branch's KV.
 *
 * Keys this file owns (they belong in the table at the top of
 * store_int.h; P is the database's prefix):
 *
 *   key                                value
 *   (P,"m","purge_seq")                (N,)  purges recorded so far; read
 *                                            non-snapshot, so purges of one
 *                                            database serialize
 *   (P,"m","purged_infos_limit")       (N,)  infos kept; absent = 1000
 *   (P,"p",PurgeSeq,Chunk)             (0, DocID, ((RevPos, RevHash), …))
 *                                      the revs one purge named, in slices
 *                                      of at most PG_CHUNK bytes (chunk 0,
 *                                      1, …); RevHash as in "r" keys
 *
 * Data flow of store_purge (one st_run with a TxId):
 *   1. read purge_seq, purged_infos_limit and the document's whole
 *      (P,"r",DocID) range (non-snapshot: a racing edit conflicts);
 *   2. match the named revs against the leaves (non-leaves match nothing);
 *   3. clear each matched leaf's branch KV and its body range;
 *   4. no leaf left: clear the changes row (its Sequence is on the old
 *      winner), take the old winner out of the counters;
 *      leaves left: the last remaining KV in key order is the winner:
 *      rewrite it with a new Sequence and BranchCount and move the changes
 *      row there (CouchDB re-sequences every partly purged document), count
 *      old winner out and new winner in;
 *   5. always, as CouchDB's engine does: purge_seq + 1, the purge info,
 *      drop the info that falls past the limit, move update_seq forward (a
 *      versionstamped value, so watchers and indexers see the purge), the
 *      db_updates queue entry, the TxId.
 * A purged leaf's attachment content is cleared when no remaining leaf
 * uses it (att.c). Not here: the HTTP shape of _purge (http/api/purge.c).
 */
#include <string.h>

#include "store/store_int.h"

#define PG_CHUNK 90000     /* bytes of one purge info KV value (< KV_MAX_VALUE) */
#define PG_REV_MAX 600     /* the most one (pos, hash) entry can take, encoded */
#define PG_READ_BATCH 256  /* info KVs per read transaction */

/* ---- keys and small meta values ------------------------------------------------- */

/* A tuple-int meta KV, or dflt when absent. */
static int meta_int(kv_txn *txn, const st_dbx *x, const char *name, int flags, int64_t dflt, int64_t *out) {
  const uint8_t *v;
  size_t vl;
  int found;
  int rc = st_meta_get(txn, x, name, flags, &v, &vl, &found);
  if (rc) return rc;
  *out = dflt;
  if (found) {
    tup_r r;
    tup_item it;
    tup_r_init(&r, v, vl);
    if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
    *out = it.i64;
  }
  return 0;
}

static int meta_int_set(kv_txn *txn, const st_dbx *x, const char *name, int64_t val) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  st_key_meta(x, &k, name);
  tup_w w;
  tup_w_init(&w, &v);
  tup_int(&w, val);
  int rc = tup_w_finish(&w);
  if (!rc) rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

/* b = (P,"p",seq) */
static void info_key(const st_dbx *x, dv_buf *b, tup_w *w, int64_t seq) {
  st_key_db(x, b, w, ST_SUB_PURGE);
  tup_int(w, seq);
}

/* Clear the infos with begin <= purge_seq < end (begin <= 0: every one
 * before end). */
static int trim_infos(kv_txn *txn, const st_dbx *x, int64_t begin, int64_t end) {
  if (end <= 1 || (begin > 0 && begin >= end)) return 0;
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  if (begin > 0) info_key(x, &b, &w, begin);
  else st_key_db(x, &b, &w, ST_SUB_PURGE);
  info_key(x, &e, &w, end);
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : kv_clear_range(txn, b.p, b.len, e.p, e.len);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

/* Record what one purge named: (P,"p",seq,chunk) KVs of at most PG_CHUNK
 * bytes each (always at least chunk 0, even for no revs). */
static int write_info(kv_txn *txn, const st_dbx *x, int64_t seq, const char *id, size_t id_len,
                      const store_rev *revs, size_t n) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  int rc = 0;
  size_t i = 0;
  int64_t chunk = 0;
  do {
    tup_w w;
    info_key(x, &k, &w, seq);
    tup_int(&w, chunk++);
    buf_reset(&v);
    tup_w_init(&w, &v);
    tup_int(&w, 0);
    tup_str(&w, id, id_len);
    tup_nest_begin(&w);
    while (i < n && v.len + PG_REV_MAX < PG_CHUNK) {
      tup_nest_begin(&w);
      tup_int(&w, revs[i].pos);
      st_put_hash(&w, &revs[i]);
      tup_nest_end(&w);
      i++;
    }
    tup_nest_end(&w);
    rc = tup_w_finish(&w);
    if (!rc) rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  } while (!rc && i < n);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

/* ---- one document's purge ----------------------------------------------------------- */


struct pg_arg {
  store_db *db;           /* the database */
  st_op *op;              /* the operation (its TxId) */
  const char *id;         /* the document id */
  size_t id_len;
  const store_rev *revs;  /* the revs named */
  size_t n;
  dv_arena arena;         /* per attempt: branches and results */
  store_rev *purged;      /* this attempt's (or the restored) result */
  size_t n_purged;
  int oom;                /* 1: keep() could not copy (result lost) */
  dv_arena kept_arena;    /* the result of a maybe-committed attempt */
  store_rev *kept;
  size_t n_kept;
};

static int pg_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct pg_arg *g = arg;
  arena_reset(&g->arena);
  g->purged = NULL;
  g->n_purged = 0;
  int rc = 0;
  int64_t pseq, limit;
  if ((rc = meta_int(txn, x, "purge_seq", 0, 0, &pseq))) return rc;
  if ((rc = meta_int(txn, x, "purged_infos_limit", 0, STORE_DEFAULT_PURGED_INFOS_LIMIT, &limit))) return rc;
  st_branch *brs = NULL;
  int nb = 0;
  rc = st_branch_range(txn, x, g->id, g->id_len, NULL, 0, 0, &g->arena, &brs, &nb);
  if (rc) return rc;
  char *gone = nb ? arena_calloc(&g->arena, (size_t)nb) : NULL;
  store_rev *out = g->n ? arena_alloc(&g->arena, g->n * sizeof *out) : NULL;
  if ((nb && !gone) || (g->n && !out)) return DV_ENOMEM;
  size_t np = 0;
  for (size_t i = 0; i < g->n; i++)
    for (int k = 0; k < nb; k++)
      if (!gone[k] && !store_rev_cmp(&brs[k].rev, &g->revs[i])) {
        gone[k] = 1;
        out[np++] = brs[k].rev;
        break;
      }
  if (np) {
    const st_branch *w = &brs[nb - 1], *nw = NULL;
    if (!w->winner) return DV_ECORRUPT;
    int64_t dc = 0, ddc = 0, sa = 0, se = 0;
    /* attachment content only the purged leaves used */
    st_branch *keep = arena_alloc(&g->arena, (size_t)nb * sizeof *keep);
    int n_keep = 0;
    if (!keep) return DV_ENOMEM;
    for (int k = 0; k < nb; k++)
      if (!gone[k]) keep[n_keep++] = brs[k];
    for (int k = 0; k < nb; k++)
      if (gone[k] && brs[k].n_att_ids &&
          (rc = st_att_collect(txn, x, g->id, g->id_len, brs[k].att_ids, brs[k].n_att_ids, keep, n_keep)))
        return rc;
    for (int k = 0; k < nb; k++) {
      if (!gone[k]) {
        nw = &brs[k]; /* key order: the last one left wins */
        continue;
      }
      if ((rc = st_branch_clear(txn, x, g->id, g->id_len, &brs[k]))) return rc;
      sa -= brs[k].kv_size;
    }
    dc -= !w->deleted;
    ddc -= w->deleted;
    se -= w->deleted ? 0 : w->json_size;
    int64_t bc = nb - (int64_t)np;
    if (nw) {
      if ((rc = st_branch_put(txn, x, g->id, g->id_len, nw, 1, 0, bc))) return rc;
      dc += !nw->deleted;
      ddc += nw->deleted;
      se += nw->deleted ? 0 : nw->json_size;
    }
    if ((rc = st_change_move(txn, x, g->id, g->id_len, &w->seq, nw, bc, 0))) return rc;
    { /* the winner changed, or only the changes row moved, or the document is gone: indexes follow */
      st_hooks *h;
      if ((rc = st_hooks_get(x->db, &h))) return rc;
      rc = st_hooks_index(h, txn, x, g->id, g->id_len, w, nw, NULL);
      st_hooks_put(h);
      if (rc) return rc;
      if (g->id_len > 8 && !memcmp(g->id, "_design/", 8) && (rc = st_hooks_changed(txn, x))) return rc;
    }
    if ((rc = st_counter_add(txn, x, "doc_count", dc))) return rc;
    if ((rc = st_counter_add(txn, x, "doc_del_count", ddc))) return rc;
    if ((rc = st_counter_add(txn, x, "size_active", sa))) return rc;
    if ((rc = st_counter_add(txn, x, "size_external", se))) return rc;
  }
  pseq++;
  if ((rc = meta_int_set(txn, x, "purge_seq", pseq))) return rc;
  if ((rc = write_info(txn, x, pseq, g->id, g->id_len, g->revs, g->n))) return rc;
  if (limit > 0 && pseq - limit >= 1 && (rc = trim_infos(txn, x, pseq - limit, pseq - limit + 1))) return rc;
  if ((rc = st_update_seq_put(txn, x, 0))) return rc;
  if ((rc = st_dbu_enqueue(x->s, txn, x->name, x->name_len, x->prefix))) return rc;
  if ((rc = st_txid_write(x->s, txn, g->op))) return rc;
  g->purged = out;
  g->n_purged = np;
  return 0;
}

/* Copy n revs (hashes included) into arena a; NULL on failure. */
static store_rev *revs_dup(dv_arena *a, const store_rev *r, size_t n) {
  if (!n) return NULL;
  store_rev *d = arena_alloc(a, n * sizeof *d);
  if (!d) return NULL;
  for (size_t i = 0; i < n; i++) {
    d[i] = r[i];
    d[i].h = arena_memdup(a, r[i].h, r[i].len);
    if (!d[i].h) return NULL;
  }
  return d;
}

static void pg_keep(void *arg) {
  struct pg_arg *g = arg;
  arena_reset(&g->kept_arena);
  g->kept = revs_dup(&g->kept_arena, g->purged, g->n_purged);
  g->n_kept = g->n_purged;
  g->oom = g->n_kept && !g->kept;
}

static void pg_restore(void *arg) {
  struct pg_arg *g = arg;
  g->purged = g->kept;
  g->n_purged = g->n_kept;
}

int store_purge(store_db *db, const char *id, size_t id_len, const store_rev *revs, size_t n, dv_arena *a,
                store_rev **out_purged, size_t *out_n) {
  /* An id no edit accepts names no document: nothing to purge or record. */
  if (!id || id_len == 0 || id_len > STORE_MAX_DOCID || json_utf8_check(id, id_len, NULL)) {
    *out_purged = NULL;
    *out_n = 0;
    return 0;
  }
  st_op op = {.dbfn = pg_fn, .db = db, .keep = pg_keep, .restore = pg_restore, .use_txid = 1};
  struct pg_arg g = {.db = db, .op = &op, .id = id, .id_len = id_len, .revs = revs, .n = n};
  op.arg = &g;
  arena_init(&g.arena, 0);
  arena_init(&g.kept_arena, 0);
  int rc = st_run(db->s, &op);
  if (!rc && op.committed_before && g.oom) rc = DV_ENOMEM;
  store_rev *res = NULL;
  if (!rc && g.n_purged && !(res = revs_dup(a, g.purged, g.n_purged))) rc = DV_ENOMEM;
  if (!rc) {
    *out_purged = res;
    *out_n = g.n_purged;
  }
  arena_free(&g.arena);
  arena_free(&g.kept_arena);
  return rc;
}

/* ---- purge_seq and purged_infos_limit --------------------------------------------- */

struct pm_arg {
  store_db *db;        /* the database */
  st_op *op;           /* set: the operation (its TxId) */
  const char *name;    /* get: the meta KV */
  int64_t dflt;        /* get: its value when absent */
  int64_t val;         /* get: out; set: the new limit */
};

static int pm_get_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct pm_arg *m = arg;
  return meta_int(txn, x, m->name, KV_SNAPSHOT, m->dflt, &m->val);
}

static int pm_get(store_db *db, const char *name, int64_t dflt, int64_t *out) {
  struct pm_arg m = {.db = db, .name = name, .dflt = dflt};
  st_op op = {.dbfn = pm_get_fn, .db = db, .arg = &m};
  int rc = st_run(db->s, &op);
  if (!rc) *out = m.val;
  return rc;
}

int store_db_get_purge_seq(store_db *db, int64_t *out) { return pm_get(db, "purge_seq", 0, out); }

int store_db_get_purged_infos_limit(store_db *db, int64_t *out) {
  return pm_get(db, "purged_infos_limit", STORE_DEFAULT_PURGED_INFOS_LIMIT, out);
}

static int pm_set_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct pm_arg *m = arg;
  int rc = 0;
  int64_t pseq;
  if ((rc = meta_int(txn, x, "purge_seq", 0, 0, &pseq))) return rc;
  if ((rc = meta_int_set(txn, x, "purged_infos_limit", m->val))) return rc;
  if ((rc = trim_infos(txn, x, 0, pseq - m->val + 1))) return rc;
  if ((rc = st_dbu_enqueue(x->s, txn, x->name, x->name_len, x->prefix))) return rc;
  return st_txid_write(x->s, txn, m->op);
}

int store_db_set_purged_infos_limit(store_db *db, int64_t n) {
  if (n < 1) return DV_ERANGE;
  st_op op = {.dbfn = pm_set_fn, .db = db, .use_txid = 1};
  struct pm_arg m = {.db = db, .op = &op, .val = n};
  op.arg = &m;
  return st_run(db->s, &op);
}

/* ---- reading the purge infos --------------------------------------------------------- */

struct pi_arg {
  store_db *db;              /* the database */
  int64_t from;              /* first purge_seq to read */
  int limit;                 /* KVs per batch */
  dv_arena arena;            /* this batch's infos */
  store_purge_info *rows;    /* infos read, oldest first */
  size_t n;
  int more;                  /* the range went on past the batch */
};

/* Append one chunk's value to info p (a new one when fresh). */
static int pi_add(dv_arena *a, store_purge_info *p, int fresh, const uint8_t *v, size_t vl) {
  tup_r r;
  tup_item it;
  tup_r_init(&r, v, vl);
  if (tup_get(&r, TUP_INT, &it) || it.i64 != 0) return DV_ECORRUPT;
  if (tup_get(&r, TUP_STR, &it)) return DV_ECORRUPT;
  if (fresh) {
    char *id = arena_alloc(a, it.s_len + 1);
    if (!id) return DV_ENOMEM;
    tup_item_copy(&it, (uint8_t *)id);
    id[it.s_len] = 0;
    p->id = id;
    p->id_len = it.s_len;
  }
  if (tup_get(&r, TUP_NEST, &it) || !tup_r_done(&r)) return DV_ECORRUPT;
  const tup_r nest = it.sub;
  tup_r sub = nest;
  size_t k = 0;
  int got;
  while ((got = tup_next(&sub, &it)) == 1) k++;
  if (got < 0) return DV_ECORRUPT;
  if (!k) return 0;
  store_rev *revs = arena_alloc(a, (p->n_revs + k) * sizeof *revs);
  if (!revs) return DV_ENOMEM;
  if (p->n_revs) memcpy(revs, p->revs, p->n_revs * sizeof *revs);
  sub = nest;
  for (size_t i = 0; i < k; i++) {
    tup_item e, f;
    store_rev *rv = &revs[p->n_revs + i];
    if (tup_get(&sub, TUP_NEST, &e)) return DV_ECORRUPT;
    if (tup_get(&e.sub, TUP_INT, &f) || !(f.fits & TUP_FITS_I64)) return DV_ECORRUPT;
    rv->pos = f.i64;
    if (tup_next(&e.sub, &f) != 1 || !tup_r_done(&e.sub)) return DV_ECORRUPT;
    int rc = st_get_hash(&f, a, rv);
    if (rc) return rc;
  }
  p->revs = revs;
  p->n_revs += k;
  return 0;
}

static int pi_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct pi_arg *g = arg;
  arena_reset(&g->arena);
  g->rows = NULL;
  g->n = 0;
  g->more = 0;
  int rc = 0;
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  st_key_db(x, &e, &w, ST_SUB_PURGE);
  size_t off = e.len;
  buf_putc(&e, 0xff);
  info_key(x, &b, &w, g->from);
  kv_pair *pairs = NULL;
  int np = 0;
  rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM
                                      : kv_get_range(txn, b.p, b.len, e.p, e.len, g->limit, KV_SNAPSHOT, &pairs, &np,
                                                     &g->more);
  buf_free(&b);
  buf_free(&e);
  if (rc) return rc;
  if (np && !(g->rows = arena_calloc(&g->arena, (size_t)np * sizeof *g->rows))) return DV_ENOMEM;
  for (int i = 0; i < np; i++) {
    tup_r r;
    tup_item it;
    if (pairs[i].key_len < off) return DV_ECORRUPT;
    tup_r_init(&r, pairs[i].key + off, pairs[i].key_len - off);
    if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
    int64_t seq = it.i64;
    int fresh = g->n == 0 || g->rows[g->n - 1].purge_seq != seq;
    if (fresh) g->rows[g->n++].purge_seq = seq;
    rc = pi_add(&g->arena, &g->rows[g->n - 1], fresh, pairs[i].val, pairs[i].val_len);
    if (rc) return rc;
  }
  return 0;
}

int store_purge_infos(store_db *db, int64_t since, int (*cb)(void *arg, const store_purge_info *pi), void *arg) {
  struct pi_arg g = {.db = db, .from = since < 0 ? 1 : since + 1, .limit = PG_READ_BATCH};
  arena_init(&g.arena, 0);
  int rc = 0;
  for (;;) {
    st_op op = {.dbfn = pi_fn, .db = db, .arg = &g};
    rc = st_run(db->s, &op);
    if (rc) break;
    if (g.more && g.n <= 1) { /* one info larger than a batch: read more at once */
      g.limit *= 2;
      continue;
    }
    size_t whole = g.more ? g.n - 1 : g.n; /* the last one may go on past the batch */
    for (size_t i = 0; !rc && i < whole; i++) rc = cb(arg, &g.rows[i]);
    if (rc || !g.more) break;
    g.from = g.rows[g.n - 1].purge_seq;
  }
  arena_free(&g.arena);
  return rc;
}
