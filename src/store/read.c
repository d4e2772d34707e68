/* read.c — reading documents, the changes feed, _all_docs and local
 * documents.
 *
 * Data flow:
 *   doc by winner   reverse range (P,"r",Id) limit 1 -> the winner's key,
 *                   then the body range (P,"d",Id,NotDeleted,Pos,Hash)
 *                   (seed 001 option 1); the whole (P,"r",Id) range only
 *                   when conflicts are asked and BranchCount > 1.
 *   doc by rev      point reads of the live, then the deleted leaf key.
 *   changes         (P,"c") after `since`, in batches; each batch is one
 *                   transaction that finishes before its rows go to the
 *                   callback (DESIGN.md "Long reads"); style=all_docs reads
 *                   the revisions range only when BranchCount > 1.
 *   _all_docs       the revisions subspace in key order: per DocID the last
 *                   key is the winner (the first one when descending).
 *   _all_docs offset  a rank sample per handle, valid while update_seq is
 *                   unchanged ("_all_docs offsets" below).
 *   local docs      (P,"l",Id) = (0, RevN, NChunks), chunks (P,"l",Id,i).
 * Not here: writing (edit.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/body.h"
#include "store/store_int.h"
#include "util/alloc.h"
#include "util/stats.h"

#define CHG_BATCH 500
#define ALL_BATCH 1000
#define LOCAL_CHUNK 90000

/* ---- helpers ---------------------------------------------------------------------- */

/* A leaf by rev, live or deleted: one or two point reads. */
static int read_leaf(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const store_rev *rev, dv_arena *a,
                     st_branch *out, int *found) {
  int rc = st_branch_get(txn, x, id, id_len, 0, rev, a, out, found);
  if (!rc && !*found) rc = st_branch_get(txn, x, id, id_len, 1, rev, a, out, found);
  return rc;
}

/* The body of a leaf (an empty object for a plain tombstone). */
/* The "_attachments" stubs in a RevisionMetadata value, or NULL when none. */
static int meta_atts_json(const uint8_t *v, size_t vl, dv_arena *a, int flags, json_val **out) {
  store_att *atts;
  size_t n;
  *out = NULL;
  int rc = st_meta_atts(v, vl, a, &atts, &n);
  if (rc || !n) return rc;
  *out = st_atts_json(a, atts, n, flags & STORE_ATT_INFO);
  return *out ? 0 : DV_ENOMEM;
}

static int read_body(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br, dv_arena *a,
                     int flags, json_val **out, json_val **atts) {
  *atts = NULL;
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  st_doc_key(x, &b, id, id_len, br);
  buf_append(&e, b.p, b.len);
  buf_putc(&e, 0xff);
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  kv_iter *it = NULL;
  if (!rc) rc = kv_iter_begin(txn, b.p, b.len, e.p, e.len, 0, 0, &it);
  body_builder bb;
  body_implode_begin(&bb, a);
  kv_pair p;
  int k;
  while (!rc && (k = kv_iter_next(it, &p)) == 1) {
    if (p.key_len == b.len) { /* the RevisionMetadata KV: attachment stubs */
      if (br->n_att_ids) rc = meta_atts_json(p.val, p.val_len, a, flags, atts);
      continue;
    }
    rc = body_implode_add(&bb, p.key + b.len, p.key_len - b.len, p.val, p.val_len);
  }
  if (!rc && k < 0) rc = k;
  kv_iter_free(it);
  if (!rc) rc = body_implode_end(&bb, out);
  body_implode_free(&bb);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

static json_val *rev_str(dv_arena *a, const store_rev *r) {
  dv_buf b;
  buf_init(&b);
  store_rev_format(r, &b);
  json_val *v = buf_error(&b) ? NULL : json_new_string(a, (const char *)b.p, b.len);
  buf_free(&b);
  return v;
}

/* The hash part of a rev, as _revisions lists it. */
static json_val *hash_str(dv_arena *a, const store_rev *r) {
  if (r->raw) return json_new_string(a, (const char *)r->h, r->len);
  char hex[2 * 16];
  if (r->len > 16) return NULL;
  st_hex(r->h, r->len, hex);
  return json_new_string(a, hex, 2 * (size_t)r->len);
}

#define SETZ(obj, key, val)                                     \
  do {                                                          \
    json_val *v_ = (val);                                       \
    if (!v_ || json_obj_setz(a, (obj), (key), v_)) return NULL; \
  } while (0)

/* Sort branches descending in key order (winner first). */
static int br_desc(const void *x, const void *y) { return -st_branch_cmp(x, y); }

/* Sort branches by rev alone, deleted or not (open_revs=all). */
static int br_rev_asc(const void *x, const void *y) {
  const st_branch *a = x, *b = y;
  return store_rev_cmp(&a->rev, &b->rev);
}

/* The document as CouchDB shows it. all/n_all: every branch (for
 * conflicts), may be NULL; winner: the doc's winner (for _local_seq). */
static json_val *build_doc(dv_arena *a, const char *id, size_t id_len, const st_branch *br, json_val *body,
                           json_val *atts, int flags, const st_branch *all, int n_all, const st_branch *winner) {
  json_val *d = json_new_object(a);
  if (!d) return NULL;
  SETZ(d, "_id", json_new_string(a, id, id_len));
  SETZ(d, "_rev", rev_str(a, &br->rev));
  if (br->deleted) SETZ(d, "_deleted", json_new_bool(a, 1));
  for (size_t i = 0; body && i < body->len; i++)
    if (json_obj_set(a, d, body->u.members[i].key, body->u.members[i].klen, body->u.members[i].val)) return NULL;
  if (flags & (STORE_CONFLICTS | STORE_DELETED_CONFLICTS)) {
    json_val *c = json_new_array(a), *dc = json_new_array(a);
    if (!c || !dc) return NULL;
    for (int i = n_all - 1; i >= 0; i--) { /* key order reversed: CouchDB lists them descending */
      if (!store_rev_cmp(&all[i].rev, &br->rev) && all[i].deleted == br->deleted) continue;
      if (all[i].winner) continue;
      if (json_arr_push(a, all[i].deleted ? dc : c, rev_str(a, &all[i].rev))) return NULL;
    }
    if ((flags & STORE_CONFLICTS) && c->len) SETZ(d, "_conflicts", c);
    if ((flags & STORE_DELETED_CONFLICTS) && dc->len) SETZ(d, "_deleted_conflicts", dc);
  }
  if (flags & STORE_LOCAL_SEQ && winner) {
    char s[STORE_SEQ_STR];
    store_seq_format(&winner->seq, s);
    SETZ(d, "_local_seq", json_new_stringz(a, s));
  }
  if (flags & STORE_REVS_INFO) {
    json_val *ri = json_new_array(a);
    if (!ri) return NULL;
    for (size_t j = 0; j <= br->n_anc; j++) {
      const store_rev *r = j == 0 ? &br->rev : &br->anc[j - 1];
      json_val *o = json_new_object(a);
      if (!o) return NULL;
      SETZ(o, "rev", rev_str(a, r));
      SETZ(o, "status", json_new_stringz(a, j == 0 ? (br->deleted ? "deleted" : "available") : "missing"));
      if (json_arr_push(a, ri, o)) return NULL;
    }
    SETZ(d, "_revs_info", ri);
  }
  if (flags & STORE_REVS) {
    json_val *rv = json_new_object(a), *ids = json_new_array(a);
    if (!rv || !ids) return NULL;
    SETZ(rv, "start", json_new_int(a, br->rev.pos));
    for (size_t j = 0; j <= br->n_anc; j++)
      if (json_arr_push(a, ids, hash_str(a, j == 0 ? &br->rev : &br->anc[j - 1]))) return NULL;
    SETZ(rv, "ids", ids);
    SETZ(d, "_revisions", rv);
  }
  if (atts) SETZ(d, "_attachments", atts); /* last, as couch_doc:to_json_obj */
  return d;
}

/* Read the body of br and build the doc; conflicts need all branches. */
static int load_doc(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br, int flags,
                    const st_branch *winner, dv_arena *a, json_val **out) {
  json_val *body, *atts;
  int rc = read_body(txn, x, id, id_len, br, a, flags, &body, &atts);
  if (rc) return rc;
  st_branch *all = NULL;
  int n_all = 0;
  if ((flags & (STORE_CONFLICTS | STORE_DELETED_CONFLICTS)) && winner && winner->bc > 1) {
    rc = st_branch_range(txn, x, id, id_len, NULL, 0, 0, a, &all, &n_all);
    if (rc) return rc;
  }
  *out = build_doc(a, id, id_len, br, body, atts, flags, all, n_all, winner);
  return *out ? 0 : DV_ENOMEM;
}

int st_leaf_doc(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br, dv_arena *a,
                json_val **out) {
  return load_doc(txn, x, id, id_len, br, 0, NULL, a, out);
}

int st_leaf_body(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br, dv_arena *a,
                 json_val **out) {
  json_val *atts;
  return read_body(txn, x, id, id_len, br, a, 0, out, &atts);
}

int st_live_leaf_doc(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const store_rev *rev,
                     dv_arena *a, json_val **out) {
  /* the leaf's RevisionMetadata KV starts its body range: stubs, if any,
   * are read from it whatever the branch value would say */
  st_branch br = {.rev = *rev, .n_att_ids = 1};
  json_val *body, *atts;
  int rc = read_body(txn, x, id, id_len, &br, a, 0, &body, &atts);
  if (rc) return rc;
  *out = build_doc(a, id, id_len, &br, body, atts, 0, NULL, 0, NULL);
  return *out ? 0 : DV_ENOMEM;
}

int st_winner_doc(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, int flags, dv_arena *a,
                  json_val **out) {
  st_branch *w1;
  int n;
  int rc = st_branch_range(txn, x, id, id_len, NULL, 1, KV_REVERSE, a, &w1, &n);
  if (rc) return rc;
  if (!n) return DV_ENOT_FOUND;
  if (w1->deleted) return DV_EDELETED;
  return load_doc(txn, x, id, id_len, w1, flags, w1, a, out);
}

/* ---- single documents ---------------------------------------------------------------- */

struct get_arg {
  store_db *db;
  const char *id;
  size_t id_len;
  const store_rev *rev;
  int flags;
  dv_arena *a;
  json_val *out;
  const store_rev *revs;  /* open_revs */
  size_t n_revs;
  int open_revs;
  store_leaf *leaves;     /* store_doc_leaves */
  size_t n_leaves;
  int want_leaves;
};

static int get_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct get_arg *g = arg;
  int rc = 0;
  st_branch *w1;
  int n;
  if (!g->rev) return st_winner_doc(txn, x, g->id, g->id_len, g->flags, g->a, &g->out);
  rc = st_branch_range(txn, x, g->id, g->id_len, NULL, 1, KV_REVERSE, g->a, &w1, &n);
  if (rc) return rc;
  if (!n) return DV_ENOT_FOUND;
  st_branch br;
  int found;
  rc = read_leaf(txn, x, g->id, g->id_len, g->rev, g->a, &br, &found);
  if (rc) return rc;
  if (!found) return DV_ENOT_FOUND;
  return load_doc(txn, x, g->id, g->id_len, &br, g->flags, w1, g->a, &g->out);
}

int store_doc_get(store_db *db, const char *id, size_t id_len, const store_rev *rev, int flags, dv_arena *a,
                  json_val **out) {
  struct get_arg g = {.db = db, .id = id, .id_len = id_len, .rev = rev, .flags = flags, .a = a};
  st_op op = {.dbfn = get_fn, .db = db, .arg = &g};
  int rc = st_run(db->s, &op);
  if (!rc) *out = g.out, dv_stat_inc(DV_ST_DATABASE_READS);
  return rc;
}

static int leaves_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct get_arg *g = arg;
  int rc = 0;
  st_branch *brs;
  int n;
  rc = st_branch_range(txn, x, g->id, g->id_len, NULL, 0, 0, g->a, &brs, &n);
  if (rc) return rc;
  if (g->want_leaves) {
    if (!n) return DV_ENOT_FOUND;
    qsort(brs, (size_t)n, sizeof *brs, br_desc);
    store_leaf *l = arena_alloc(g->a, (size_t)n * sizeof *l);
    if (!l) return DV_ENOMEM;
    for (int i = 0; i < n; i++) {
      l[i].rev = brs[i].rev;
      l[i].deleted = brs[i].deleted;
      l[i].anc = brs[i].anc;
      l[i].n_anc = brs[i].n_anc;
    }
    g->leaves = l;
    g->n_leaves = (size_t)n;
    return 0;
  }
  /* open_revs: all leaves ascending by rev, as CouchDB lists them */
  if (!g->revs && !n) return DV_ENOT_FOUND;
  const st_branch *winner = n ? &brs[n - 1] : NULL; /* key order: the winner sorts last */
  if (n && !g->revs) {
    st_branch w = *winner;
    qsort(brs, (size_t)n, sizeof *brs, br_rev_asc);
    for (int k = 0; k < n; k++)
      if (!st_branch_cmp(&brs[k], &w)) winner = &brs[k];
  }
  json_val *arr = json_new_array(g->a);
  if (!arr) return DV_ENOMEM;
  char *used = n ? arena_calloc(g->a, (size_t)n) : NULL;
  if (n && !used) return DV_ENOMEM;
  size_t nr = g->revs ? g->n_revs : (size_t)n;
  for (size_t i = 0; i < nr; i++) {
    int hit = 0;
    for (int k = 0; k < n; k++) {
      int match;
      if (!g->revs) match = (size_t)k == i;
      else if (!store_rev_cmp(&brs[k].rev, &g->revs[i])) match = 1;
      else if (g->flags & STORE_LATEST) {
        int64_t j = brs[k].rev.pos - g->revs[i].pos;
        match = j > 0 && j <= (int64_t)brs[k].n_anc && !store_rev_cmp(&brs[k].anc[j - 1], &g->revs[i]);
      } else match = 0;
      if (!match) continue;
      hit = 1;
      if (g->revs && used[k]) continue;
      used[k] = 1;
      json_val *doc, *o = json_new_object(g->a);
      if (!o) return DV_ENOMEM;
      rc = load_doc(txn, x, g->id, g->id_len, &brs[k], g->flags & ~STORE_LATEST, winner, g->a, &doc);
      if (rc) return rc;
      if (json_obj_setz(g->a, o, "ok", doc) || json_arr_push(g->a, arr, o)) return DV_ENOMEM;
    }
    if (!hit) {
      json_val *o = json_new_object(g->a), *r = rev_str(g->a, &g->revs[i]);
      if (!o || !r || json_obj_setz(g->a, o, "missing", r) || json_arr_push(g->a, arr, o)) return DV_ENOMEM;
    }
  }
  g->out = arr;
  return 0;
}

int store_doc_open_revs(store_db *db, const char *id, size_t id_len, const store_rev *revs, size_t n_revs,
                        int flags, dv_arena *a, json_val **out) {
  struct get_arg g = {.db = db, .id = id, .id_len = id_len, .revs = revs, .n_revs = n_revs, .flags = flags, .a = a,
                      .open_revs = 1};
  st_op op = {.dbfn = leaves_fn, .db = db, .arg = &g};
  int rc = st_run(db->s, &op);
  if (!rc) *out = g.out, dv_stat_inc(DV_ST_DATABASE_READS);
  return rc;
}

int store_doc_leaves(store_db *db, const char *id, size_t id_len, dv_arena *a, store_leaf **out, size_t *out_n) {
  struct get_arg g = {.db = db, .id = id, .id_len = id_len, .a = a, .want_leaves = 1};
  st_op op = {.dbfn = leaves_fn, .db = db, .arg = &g};
  int rc = st_run(db->s, &op);
  if (!rc) {
    *out = g.leaves;
    *out_n = g.n_leaves;
  }
  return rc;
}

/* ---- changes ------------------------------------------------------------------------ */

int st_change_decode(const uint8_t *val, size_t vl, dv_arena *a, store_change *row, int64_t *bc_out) {
  tup_r r;
  tup_item it, id, pos, h, bc, nd;
  tup_r_init(&r, val, vl);
  if (tup_get(&r, TUP_INT, &it) || tup_get(&r, TUP_STR, &id) || tup_get(&r, TUP_INT, &pos) ||
      tup_next(&r, &h) != 1 || tup_get(&r, TUP_INT, &bc) || tup_get(&r, TUP_BOOL, &nd))
    return DV_ECORRUPT;
  char *ids = arena_alloc(a, id.s_len + 1);
  if (!ids) return DV_ENOMEM;
  tup_item_copy(&id, (uint8_t *)ids);
  ids[id.s_len] = 0;
  row->id = ids;
  row->id_len = id.s_len;
  row->deleted = !nd.b;
  row->rev.pos = pos.i64;
  if (bc_out) *bc_out = bc.i64;
  return st_get_hash(&h, a, &row->rev);
}

struct chg_arg {
  store_db *db;
  const store_changes_opts *o;
  store_seq last;        /* continuation point */
  int have_last;
  dv_arena a;            /* the batch's rows */
  store_change *rows;
  int n;
  int more;
  int64_t want;          /* rows to read in this batch */
};

static int chg_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct chg_arg *c = arg;
  arena_reset(&c->a);
  c->n = 0;
  c->more = 0;
  int rc = 0;
  dv_buf pfx, b, e;
  buf_init(&pfx);
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  st_key_db(x, &pfx, &w, ST_SUB_CHG);
  buf_append(&b, pfx.p, pfx.len);
  buf_append(&e, pfx.p, pfx.len);
  buf_putc(&e, 0xff);
  const store_seq *from = c->have_last ? &c->last : (c->o->descending ? NULL : &c->o->since);
  if (from && !store_seq_is_zero(from)) {
    dv_buf *side = c->o->descending ? &e : &b;
    buf_reset(side);
    buf_append(side, pfx.p, pfx.len);
    tup_w_init(&w, side);
    st_seq_put(&w, from);
    if (!c->o->descending) buf_putc(side, 0); /* strictly after */
  }
  kv_pair *pairs;
  int n = 0;
  rc = buf_error(&pfx) || buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  if (!rc && st_nonempty(&b, &e))
    rc = kv_get_range(txn, b.p, b.len, e.p, e.len, (int)c->want, KV_SNAPSHOT | (c->o->descending ? KV_REVERSE : 0),
                      &pairs, &n, &c->more);
  if (!rc && n && !(c->rows = arena_alloc(&c->a, (size_t)n * sizeof *c->rows))) rc = DV_ENOMEM;
  for (int i = 0; !rc && i < n; i++) {
    store_change *row = &c->rows[i];
    memset(row, 0, sizeof *row);
    tup_r r;
    tup_r_init(&r, pairs[i].key + pfx.len, pairs[i].key_len - pfx.len);
    if ((rc = st_seq_get(&r, &row->seq))) break;
    int64_t bc;
    if ((rc = st_change_decode(pairs[i].val, pairs[i].val_len, &c->a, row, &bc))) break;
    st_branch wb = {.rev = row->rev, .deleted = row->deleted, .winner = 1, .seq = row->seq, .bc = bc};
    if (c->o->all_docs) {
      if (bc > 1) {
        st_branch *brs;
        int nb;
        rc = st_branch_range(txn, x, row->id, row->id_len, NULL, 0, KV_SNAPSHOT, &c->a, &brs, &nb);
        if (rc) break;
        if (nb) qsort(brs, (size_t)nb, sizeof *brs, br_desc);
        store_leaf *l = arena_alloc(&c->a, (size_t)(nb ? nb : 1) * sizeof *l);
        if (!l) { rc = DV_ENOMEM; break; }
        for (int k = 0; k < nb; k++) l[k] = (store_leaf){brs[k].rev, brs[k].deleted, brs[k].anc, brs[k].n_anc};
        row->leaves = l;
        row->n_leaves = (size_t)nb;
      } else {
        store_leaf *l = arena_alloc(&c->a, sizeof *l);
        if (!l) { rc = DV_ENOMEM; break; }
        *l = (store_leaf){row->rev, row->deleted, NULL, 0};
        row->leaves = l;
        row->n_leaves = 1;
      }
    }
    if (c->o->include_docs) {
      /* the winner's KV gives its ancestors and sizes */
      st_branch full;
      int found;
      rc = read_leaf(txn, x, row->id, row->id_len, &row->rev, &c->a, &full, &found);
      if (rc) break;
      if (!found) full = wb; /* raced with a later edit: show what the row names */
      full.seq = row->seq;
      full.bc = bc;
      rc = load_doc(txn, x, row->id, row->id_len, &full, c->o->doc_flags, &full, &c->a, &row->doc);
      if (rc) break;
    }
  }
  if (!rc) c->n = n;
  buf_free(&pfx);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

int store_changes(store_db *db, const store_changes_opts *o, store_change_cb cb, void *arg, store_seq *out_last) {
  struct chg_arg c = {.db = db, .o = o};
  arena_init(&c.a, 0);
  int64_t left = o->limit;
  int rc = 0, stop = 0;
  store_seq last = o->since;
  if (o->descending) memset(&last, 0, sizeof last);
  while (!rc && !stop && left != 0) {
    int64_t batch = o->include_docs ? CHG_BATCH / 5 : CHG_BATCH;
    c.want = left > 0 && left < batch ? left : batch;
    st_op op = {.dbfn = chg_fn, .db = db, .arg = &c};
    rc = st_run(db->s, &op);
    if (rc) break;
    if (o->include_docs) dv_stat_add(DV_ST_DATABASE_READS, c.n);
    for (int i = 0; i < c.n; i++) {
      last = c.rows[i].seq;
      if (left > 0) left--;
      int r = cb(arg, &c.rows[i]);
      if (r) {
        rc = r;
        stop = 1;
        break;
      }
    }
    if (c.n) {
      c.last = c.rows[c.n - 1].seq;
      c.have_last = 1;
    }
    if (!c.more || c.n == 0) break;
  }
  arena_free(&c.a);
  if (out_last && (!rc || stop)) *out_last = last;
  return rc;
}

/* ---- _all_docs ---------------------------------------------------------------------- */

struct all_arg {
  store_db *db;
  int which;
  const store_range *r;
  int include_docs, doc_flags;
  store_row_cb cb;
  void *cbarg;
  int64_t skip, left;
  dv_buf cont;        /* continuation key (exclusive) */
  int have_cont;
  dv_arena a;
  store_doc_row *rows;
  st_branch *wins;    /* include_docs: rows[i]'s winner, its body loaded at the end of the batch */
  int n, cap;
  int more;
  dv_buf pend_id;     /* forward: the DocID whose keys are being read */
  st_branch pend;     /* …and its last branch so far */
  int have_pend;
  /* the same, as they were before the batch (an attempt that is retried
   * starts again from here) */
  int64_t skip0, left0;
  dv_buf cont0, pend_id0;
  int have_cont0, have_pend0;
  st_branch pend0;
};

static void all_save(struct all_arg *g) {
  g->skip0 = g->skip;
  g->left0 = g->left;
  buf_reset(&g->cont0);
  buf_append(&g->cont0, g->cont.p, g->cont.len);
  buf_reset(&g->pend_id0);
  buf_append(&g->pend_id0, g->pend_id.p, g->pend_id.len);
  g->have_cont0 = g->have_cont;
  g->have_pend0 = g->have_pend;
  g->pend0 = g->pend;
}

static void all_restore(struct all_arg *g) {
  g->skip = g->skip0;
  g->left = g->left0;
  buf_reset(&g->cont);
  buf_append(&g->cont, g->cont0.p, g->cont0.len);
  buf_reset(&g->pend_id);
  buf_append(&g->pend_id, g->pend_id0.p, g->pend_id0.len);
  g->have_cont = g->have_cont0;
  g->have_pend = g->have_pend0;
  g->pend = g->pend0;
}

static int row_push(struct all_arg *g, kv_txn *txn, const st_dbx *x, const char *id, size_t id_len,
                    const st_branch *w) {
  if (w->deleted) return 0;
  if (g->skip > 0) {
    g->skip--;
    return 0;
  }
  if (g->left == 0) return 1;
  if (g->left > 0) g->left--;
  if (g->n == g->cap) {
    int nc = g->cap ? 2 * g->cap : 64;
    store_doc_row *nr = arena_alloc(&g->a, (size_t)nc * sizeof *nr);
    st_branch *nw = g->include_docs ? arena_alloc(&g->a, (size_t)nc * sizeof *nw) : NULL;
    if (!nr || (g->include_docs && !nw)) return DV_ENOMEM;
    if (g->n) memcpy(nr, g->rows, (size_t)g->n * sizeof *nr);
    if (g->n && nw) memcpy(nw, g->wins, (size_t)g->n * sizeof *nw);
    g->rows = nr;
    g->wins = nw;
    g->cap = nc;
  }
  store_doc_row *row = &g->rows[g->n++];
  memset(row, 0, sizeof *row);
  char *ids = arena_strndup(&g->a, id, id_len);
  if (!ids) return DV_ENOMEM;
  row->id = ids;
  row->id_len = id_len;
  row->rev = w->rev;
  uint8_t *h = arena_memdup(&g->a, w->rev.h, w->rev.len);
  if (!h) return DV_ENOMEM;
  row->rev.h = h;
  if (g->include_docs) g->wins[g->n - 1] = *w; /* its memory lives until the batch ends */
  (void)txn;
  (void)x;
  return 0;
}

/* Row i's document from its winner's body (conflicts read the branches). */
static int docs_finish(kv_txn *txn, const st_dbx *x, struct all_arg *g, int i, json_val *body, json_val *atts) {
  store_doc_row *row = &g->rows[i];
  const st_branch *w = &g->wins[i];
  st_branch *all = NULL;
  int n_all = 0;
  if ((g->doc_flags & (STORE_CONFLICTS | STORE_DELETED_CONFLICTS)) && w->bc > 1) {
    int rc = st_branch_range(txn, x, row->id, row->id_len, NULL, 0, 0, &g->a, &all, &n_all);
    if (rc) return rc;
  }
  row->doc = build_doc(&g->a, row->id, row->id_len, w, body, atts, g->doc_flags, all, n_all, w);
  return row->doc ? 0 : DV_ENOMEM;
}

/* The bodies of a batch's rows, in one forward scan of the documents
 * subspace from the smallest id to the largest (the rows' ids are sorted,
 * and so are their body keys), instead of one range read per row. A KV
 * under a row winner's (P,"d",DocID,NotDeleted,Pos,Hash) belongs to it;
 * other keys on the way (losing branches, deleted docs) are passed over. */
static int load_bodies(kv_txn *txn, const st_dbx *x, struct all_arg *g) {
  if (!g->n) return 0;
  int desc = g->r->descending;
  dv_buf b, e, pre;
  buf_init(&b);
  buf_init(&e);
  buf_init(&pre);
  const store_doc_row *lo = &g->rows[desc ? g->n - 1 : 0], *hi = &g->rows[desc ? 0 : g->n - 1];
  tup_w w;
  st_key_doc(x, &b, &w, ST_SUB_DOC, lo->id, lo->id_len);
  st_key_doc(x, &e, &w, ST_SUB_DOC, hi->id, hi->id_len);
  buf_putc(&e, 0xff);
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  kv_iter *it = NULL;
  if (!rc) rc = kv_iter_begin(txn, b.p, b.len, e.p, e.len, 0, KV_SNAPSHOT, &it);
  body_builder bb;
  int j = 0, open = 0, k = 0; /* j counts rows in ascending order */
  kv_pair p;
  json_val *body = NULL, *atts = NULL;
#define ROW(j) (desc ? g->n - 1 - (j) : (j))
  /* finish the open row (its body is complete) */
#define CLOSE()                                                                                                do {                                                                                                           if (open) {                                                                                                    int r_ = ROW(j);                                                                                             rc = body_implode_end(&bb, &body);                                                                           body_implode_free(&bb);                                                                                      open = 0;                                                                                                    if (!rc) rc = docs_finish(txn, x, g, r_, body, atts);                                                            }                                                                                                          } while (0)
  if (!rc) st_doc_key(x, &pre, g->rows[ROW(0)].id, g->rows[ROW(0)].id_len, &g->wins[ROW(0)]);
  if (!rc && buf_error(&pre)) rc = DV_ENOMEM;
  while (!rc && j < g->n && (k = kv_iter_next(it, &p)) == 1) {
    for (;;) {
      int starts = p.key_len >= pre.len && !memcmp(p.key, pre.p, pre.len);
      if (starts) {
        if (!open) {
          body_implode_begin(&bb, &g->a);
          open = 1;
          atts = NULL;
        }
        if (p.key_len > pre.len) rc = body_implode_add(&bb, p.key + pre.len, p.key_len - pre.len, p.val, p.val_len);
        else if (g->wins[ROW(j)].n_att_ids) rc = meta_atts_json(p.val, p.val_len, &g->a, g->doc_flags, &atts);
        break;
      }
      size_t n = p.key_len < pre.len ? p.key_len : pre.len;
      int c = memcmp(p.key, pre.p, n);
      if (c < 0 || (c == 0 && p.key_len < pre.len)) break; /* before this row's body: pass over */
      /* past this row's body: the next row */
      if (open) CLOSE();
      else rc = DV_ECORRUPT; /* a live winner always has its RevisionMetadata KV */
      if (rc) break;
      if (++j == g->n) break;
      buf_reset(&pre);
      st_doc_key(x, &pre, g->rows[ROW(j)].id, g->rows[ROW(j)].id_len, &g->wins[ROW(j)]);
      if (buf_error(&pre)) { rc = DV_ENOMEM; break; }
    }
  }
  if (!rc && k < 0) rc = k;
  if (!rc && j < g->n) {
    if (open) CLOSE();
    else rc = DV_ECORRUPT;
    if (!rc && j + 1 < g->n) rc = DV_ECORRUPT; /* rows whose body was never seen */
  }
  if (open) body_implode_free(&bb);
#undef CLOSE
#undef ROW
  kv_iter_free(it);
  buf_free(&b);
  buf_free(&e);
  buf_free(&pre);
  return rc;
}

static int all_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct all_arg *g = arg;
  all_restore(g);
  if (buf_error(&g->cont) || buf_error(&g->pend_id)) return DV_ENOMEM;
  arena_reset(&g->a);
  g->rows = NULL;
  g->n = g->cap = 0;
  g->more = 0;
  int rc = 0;
  dv_buf pfx, b, e, idb;
  buf_init(&pfx);
  buf_init(&b);
  buf_init(&e);
  buf_init(&idb);
  tup_w w;
  st_key_db(x, &pfx, &w, ST_SUB_REV);
  rc = st_range_bounds(&pfx, g->r, &b, &e);
  if (!rc && g->which == STORE_DESIGN) { /* clamp to ids starting "_design/" */
    dv_buf lo, hi;
    buf_init(&lo);
    buf_init(&hi);
    buf_append(&lo, pfx.p, pfx.len);
    buf_append(&lo, "\x02_design/", 9);
    buf_append(&hi, pfx.p, pfx.len);
    buf_append(&hi, "\x02_design0", 9);
    if (st_nonempty(&b, &lo)) { buf_reset(&b); buf_append(&b, lo.p, lo.len); }
    if (st_nonempty(&hi, &e)) { buf_reset(&e); buf_append(&e, hi.p, hi.len); }
    buf_free(&lo);
    buf_free(&hi);
  }
  if (!rc && g->have_cont) {
    dv_buf *side = g->r->descending ? &e : &b;
    buf_reset(side);
    buf_append(side, g->cont.p, g->cont.len);
    if (!g->r->descending) buf_putc(side, 0);
  }
  if (!rc && (buf_error(&b) || buf_error(&e))) rc = DV_ENOMEM;
  kv_pair *pairs;
  int n = 0;
  if (!rc && st_nonempty(&b, &e))
    rc = kv_get_range(txn, b.p, b.len, e.p, e.len, ALL_BATCH, KV_SNAPSHOT | (g->r->descending ? KV_REVERSE : 0),
                      &pairs, &n, &g->more);
  int stop = 0;
  for (int i = 0; !rc && !stop && i < n; i++) {
    tup_r r;
    tup_item id;
    tup_r_init(&r, pairs[i].key + pfx.len, pairs[i].key_len - pfx.len);
    if (tup_get(&r, TUP_STR, &id)) { rc = DV_ECORRUPT; break; }
    size_t off = pairs[i].key_len - (size_t)(r.end - r.p);
    const uint8_t *idp;
    if ((rc = tup_item_data(&id, &idb, &idp))) break;
    int same = g->have_pend && g->pend_id.len == id.s_len && !memcmp(g->pend_id.p, idp, id.s_len);
    st_branch br;
    if (g->r->descending) {
      if (!same) { /* the first key of a doc in reverse is its winner */
        rc = st_branch_decode(&g->a, pairs[i].key, pairs[i].key_len, off, pairs[i].val, pairs[i].val_len, &br);
        if (rc) break;
        buf_reset(&g->pend_id);
        buf_append(&g->pend_id, idp, id.s_len);
        g->have_pend = 1;
        rc = row_push(g, txn, x, (const char *)idp, id.s_len, &br);
        if (rc == 1) { rc = 0; stop = 1; }
      }
    } else {
      if (g->have_pend && !same) { /* the previous doc is complete */
        rc = row_push(g, txn, x, (const char *)g->pend_id.p, g->pend_id.len, &g->pend);
        if (rc == 1) { rc = 0; stop = 1; break; }
        if (rc) break;
      }
      rc = st_branch_decode(&g->a, pairs[i].key, pairs[i].key_len, off, pairs[i].val, pairs[i].val_len, &br);
      if (rc) break;
      /* keep the pending branch in memory that survives the batch */
      buf_reset(&g->pend_id);
      buf_append(&g->pend_id, idp, id.s_len);
      g->pend = br;
      g->have_pend = 1;
    }
    buf_reset(&g->cont);
    buf_append(&g->cont, pairs[i].key, pairs[i].key_len);
    g->have_cont = 1;
  }
  if (!rc && !stop && !g->more && !g->r->descending && g->have_pend) {
    rc = row_push(g, txn, x, (const char *)g->pend_id.p, g->pend_id.len, &g->pend);
    if (rc == 1) rc = 0;
    g->have_pend = 0;
  }
  if (stop) g->more = 0, g->left = 0;
  if (!rc && g->include_docs) rc = load_bodies(txn, x, g);
  buf_free(&pfx);
  buf_free(&b);
  buf_free(&e);
  buf_free(&idb);
  return rc;
}

static int local_list(store_db *db, const store_range *r, int include_docs, store_row_cb cb, void *arg);

int store_all_docs(store_db *db, int which, const store_range *r, int include_docs, int doc_flags, store_row_cb cb,
                   void *arg) {
  if (which == STORE_LOCAL) return local_list(db, r, include_docs, cb, arg);
  struct all_arg g = {.db = db, .which = which, .r = r, .include_docs = include_docs, .doc_flags = doc_flags,
                      .cb = cb, .cbarg = arg, .skip = r->skip, .left = r->limit};
  buf_init(&g.cont);
  buf_init(&g.pend_id);
  buf_init(&g.cont0);
  buf_init(&g.pend_id0);
  arena_init(&g.a, 0);
  int rc = 0;
  dv_arena keep; /* the pending branch must outlive the batch arena */
  arena_init(&keep, 0);
  for (;;) {
    all_save(&g);
    st_op op = {.dbfn = all_fn, .db = db, .arg = &g};
    rc = st_run(db->s, &op);
    if (rc) break;
    for (int i = 0; include_docs && i < g.n; i++)
      if (g.rows[i].doc) dv_stat_inc(DV_ST_DATABASE_READS);
    for (int i = 0; i < g.n; i++) {
      int c = cb(arg, &g.rows[i]);
      if (c) {
        rc = c;
        goto out;
      }
    }
    if (!g.more) break;
    if (g.have_pend) { /* copy the pending branch out of the batch arena */
      arena_reset(&keep);
      st_branch p = g.pend;
      p.rev.h = arena_memdup(&keep, p.rev.h, p.rev.len);
      p.anc = p.n_anc ? arena_memdup(&keep, p.anc, p.n_anc * sizeof *p.anc) : NULL;
      if (!p.rev.h || (p.n_anc && !p.anc)) { rc = DV_ENOMEM; break; }
      for (size_t k = 0; k < p.n_anc; k++) {
        p.anc[k].h = arena_memdup(&keep, p.anc[k].h, p.anc[k].len);
        if (!p.anc[k].h) { rc = DV_ENOMEM; goto out; }
      }
      g.pend = p;
    }
  }
out:
  arena_free(&keep);
  arena_free(&g.a);
  buf_free(&g.cont);
  buf_free(&g.pend_id);
  buf_free(&g.cont0);
  buf_free(&g.pend_id0);
  return rc;
}

struct keys_arg {
  store_db *db;
  const char *const *keys;
  const size_t *lens;
  size_t from, to;
  int include_docs, doc_flags;
  dv_arena a;
  store_doc_row *rows;
};

static int keys_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct keys_arg *k = arg;
  arena_reset(&k->a);
  int rc = 0;
  k->rows = arena_calloc(&k->a, (k->to - k->from + 1) * sizeof *k->rows);
  if (!k->rows) return DV_ENOMEM;
  for (size_t i = k->from; i < k->to; i++) {
    store_doc_row *row = &k->rows[i - k->from];
    row->id = k->keys[i];
    row->id_len = k->lens[i];
    st_branch *w;
    int n = 0;
    if (row->id_len && row->id_len <= STORE_MAX_DOCID) {
      rc = st_branch_range(txn, x, row->id, row->id_len, NULL, 1, KV_REVERSE, &k->a, &w, &n);
      if (rc) return rc;
    }
    if (!n) {
      row->missing = 1;
      continue;
    }
    row->rev = w->rev;
    row->deleted = w->deleted;
    if (k->include_docs && !w->deleted) {
      rc = load_doc(txn, x, row->id, row->id_len, w, k->doc_flags, w, &k->a, &row->doc);
      if (rc) return rc;
    }
  }
  return 0;
}

int store_all_docs_keys(store_db *db, const char *const *keys, const size_t *key_lens, size_t n, int include_docs,
                        int doc_flags, store_row_cb cb, void *arg) {
  struct keys_arg k = {.db = db, .keys = keys, .lens = key_lens, .include_docs = include_docs, .doc_flags = doc_flags};
  arena_init(&k.a, 0);
  int rc = 0;
  for (size_t i = 0; !rc && i < n;) {
    k.from = i;
    k.to = i + (include_docs ? 100 : 1000) < n ? i + (include_docs ? 100 : 1000) : n;
    st_op op = {.dbfn = keys_fn, .db = db, .arg = &k};
    rc = st_run(db->s, &op);
    for (size_t j = k.from; !rc && include_docs && j < k.to; j++)
      if (k.rows[j - k.from].doc) dv_stat_inc(DV_ST_DATABASE_READS);
    for (size_t j = k.from; !rc && j < k.to; j++) rc = cb(arg, &k.rows[j - k.from]);
    i = k.to;
  }
  arena_free(&k.a);
  return rc;
}

/* ---- _all_docs offsets ------------------------------------------------------------------
 *
 * CouchDB's offset is the number of live documents before the first row.
 * The layout has no ordered count, so it costs a scan of every revisions
 * key before the start (20 ms in the middle of 100,000 docs). A database
 * that is read more than written gets a rank sample instead:
 *
 *   sample    every ST_RANK_STEP-th live DocID in order, and the number of
 *             live docs, as of one value of (P,"m","update_seq"); every
 *             edit and purge writes that key in the transaction that
 *             changes the revisions, so an equal value means the same
 *             set of live docs.
 *   query     one transaction reads update_seq; while it matches, the
 *             rank is j * ST_RANK_STEP for the greatest sample id j before
 *             the start, plus a count of at most ST_RANK_STEP live docs
 *             from it (keys only).
 *   miss      the first query at a new update_seq scans as before and
 *             remembers the value; the second one at the same value
 *             builds the sample with one ascending scan (in as many
 *             transactions as it takes) and keeps it only if update_seq
 *             read after the scan is still the value read before it.
 *
 * One sample per handle (so per process; each revalidates it in its own
 * transactions, as the handle cache is), ~docs / ST_RANK_STEP ids. */

#define ST_RANK_STEP 512

typedef struct st_rank {
  uint8_t seq[32];      /* the update_seq value it holds for */
  size_t seq_len;
  int seq_found;        /* 0: update_seq was absent (a fresh db) */
  int built;            /* 0: seen once, no sample yet */
  int64_t total;        /* live docs */
  dv_buf ids;           /* sample ids, concatenated */
  size_t *off;          /* n + 1 offsets into ids */
  size_t n;             /* sample ids */
} st_rank;

void st_rank_free(st_rank *rk) {
  if (!rk) return;
  buf_free(&rk->ids);
  dv_free(rk->off);
  dv_free(rk);
}

/* The end of the tuple string that starts at key[at] (just past its 0x00),
 * or 0 if there is none. */
static size_t tup_str_end(const uint8_t *key, size_t len, size_t at) {
  if (at >= len || key[at] != 0x02) return 0;
  for (size_t i = at + 1; i < len; i++) {
    if (key[i] != 0) continue;
    if (i + 1 < len && key[i + 1] == 0xff) { i++; continue; }
    return i + 1;
  }
  return 0;
}

/* Live docs among the revisions keys [b, e), both at DocID boundaries: per
 * DocID the last key is the winner, live if its NotDeleted is true. Keys
 * only, snapshot reads. */
static int count_live(kv_txn *txn, size_t pfx_len, const dv_buf *b, const dv_buf *e, int64_t *out) {
  *out = 0;
  if (!st_nonempty(b, e)) return 0;
  kv_iter *it;
  int rc = kv_iter_begin(txn, b->p, b->len, e->p, e->len, 0, KV_SNAPSHOT, &it);
  if (rc) return rc;
  dv_buf cur;
  buf_init(&cur);
  int have = 0, live = 0, k;
  size_t keys = 0;
  kv_pair p;
  while ((k = kv_iter_next(it, &p)) == 1) {
    keys++;
    size_t end = tup_str_end(p.key, p.key_len, pfx_len);
    if (!end || end >= p.key_len) { rc = DV_ECORRUPT; break; }
    size_t il = end - pfx_len;
    if (!have || cur.len != il || memcmp(cur.p, p.key + pfx_len, il)) {
      if (have && live) (*out)++;
      buf_reset(&cur);
      buf_append(&cur, p.key + pfx_len, il);
      have = 1;
    }
    live = p.key[end] == 0x27; /* NotDeleted: the tuple true */
  }
  if (!rc && k < 0) rc = k;
  if (!rc && have && live) (*out)++;
  if (!rc && buf_error(&cur)) rc = DV_ENOMEM;
  kv_iter_free(it);
  buf_free(&cur);
  st_count_read(keys);
  return rc;
}

enum { RANK_HIT, RANK_MISS, RANK_BUILD };

struct rank_arg {
  store_db *db;
  const char *id;
  size_t id_len;
  int descending;
  int64_t out;          /* RANK_HIT: the rank */
  int state;            /* RANK_* */
  uint8_t seq[32];      /* update_seq as this transaction read it */
  size_t seq_len;
  int seq_found;
  dv_buf from;          /* the sample id counted from */
};

static int seq_read(kv_txn *txn, const st_dbx *x, struct rank_arg *a) {
  const uint8_t *v;
  size_t vl;
  int rc = st_meta_get(txn, x, "update_seq", KV_SNAPSHOT, &v, &vl, &a->seq_found);
  if (rc) return rc;
  if (a->seq_found && vl > sizeof a->seq) return DV_ECORRUPT;
  a->seq_len = a->seq_found ? vl : 0;
  if (a->seq_len) memcpy(a->seq, v, vl);
  return 0;
}

static int rank_same_seq(const st_rank *rk, const struct rank_arg *a) {
  return rk && rk->seq_found == a->seq_found && rk->seq_len == a->seq_len && !memcmp(rk->seq, a->seq, a->seq_len);
}

static int seq_fn(kv_txn *txn, const st_dbx *x, void *arg) { return seq_read(txn, x, arg); }

/* bytes a < b, as DocIDs sort */
static int id_less(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c < 0 || (c == 0 && al < bl);
}

static int rank_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct rank_arg *a = arg;
  int rc = seq_read(txn, x, a);
  if (rc) return rc;
  store_db *db = a->db;
  int64_t base = 0, total = 0;
  int have_from = 0;
  pthread_mutex_lock(&db->mu);
  st_rank *rk = db->rank;
  if (!rank_same_seq(rk, a)) a->state = RANK_MISS;
  else if (!rk->built) a->state = RANK_BUILD;
  else {
    a->state = RANK_HIT;
    total = rk->total;
    /* the greatest sample id before the bound: < id ascending, <= id
     * descending (which counts the docs up to id and subtracts) */
    size_t lo = 0, hi = rk->n;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      const uint8_t *s = rk->ids.p + rk->off[mid];
      size_t sl = rk->off[mid + 1] - rk->off[mid];
      int before = a->descending ? !id_less((const uint8_t *)a->id, a->id_len, s, sl)
                                 : id_less(s, sl, (const uint8_t *)a->id, a->id_len);
      if (before) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) {
      have_from = 1;
      base = (int64_t)(lo - 1) * ST_RANK_STEP;
      buf_reset(&a->from);
      buf_append(&a->from, rk->ids.p + rk->off[lo - 1], rk->off[lo] - rk->off[lo - 1]);
    }
  }
  pthread_mutex_unlock(&db->mu);
  if (a->state != RANK_HIT) return 0;
  int64_t n = 0;
  if (have_from) {
    dv_buf pfx, b, e;
    buf_init(&pfx);
    buf_init(&b);
    buf_init(&e);
    tup_w w;
    st_key_db(x, &pfx, &w, ST_SUB_REV);
    st_key_doc(x, &b, &w, ST_SUB_REV, (const char *)a->from.p, a->from.len);
    st_key_doc(x, &e, &w, ST_SUB_REV, a->id, a->id_len);
    if (a->descending) buf_putc(&e, 0xff); /* past every key of id */
    rc = buf_error(&pfx) || buf_error(&b) || buf_error(&e) || buf_error(&a->from) ? DV_ENOMEM
                                                                                  : count_live(txn, pfx.len, &b, &e, &n);
    buf_free(&pfx);
    buf_free(&b);
    buf_free(&e);
    if (rc) return rc;
  }
  a->out = a->descending ? total - (base + n) : base + n;
  return 0;
}

struct rank_build {
  int64_t total;
  dv_buf ids;
  size_t *off;
  size_t n, cap;
  int err;
};

static int rank_build_cb(void *arg, const store_doc_row *row) {
  struct rank_build *b = arg;
  if (b->total++ % ST_RANK_STEP) return 0;
  if (b->n + 2 > b->cap) {
    size_t nc = b->cap ? 2 * b->cap : 64;
    size_t *o = dv_realloc(b->off, nc * sizeof *o);
    if (!o) return DV_ENOMEM;
    b->off = o;
    b->cap = nc;
  }
  b->off[b->n++] = b->ids.len;
  buf_append(&b->ids, row->id, row->id_len);
  b->off[b->n] = b->ids.len;
  return buf_error(&b->ids);
}

static int rank_count_cb(void *arg, const store_doc_row *row) {
  (void)row;
  (*(int64_t *)arg)++;
  return 0;
}

/* Count live docs before the bound with a scan (no sample). */
static int rank_scan(store_db *db, const char *id, size_t id_len, int descending, int64_t *out) {
  store_range before;
  store_range_init(&before);
  before.end = id;
  before.end_len = id_len;
  before.inclusive_end = 0;
  before.descending = descending;
  *out = 0;
  return store_all_docs(db, STORE_ALL, &before, 0, 0, rank_count_cb, out);
}

/* The sample as of a->seq, installed if update_seq did not move during
 * the scan. 0 also when it moved (the caller scans instead). */
static int rank_build(struct rank_arg *a) {
  store_range all;
  store_range_init(&all);
  struct rank_build b = {0};
  buf_init(&b.ids);
  int rc = store_all_docs(a->db, STORE_ALL, &all, 0, 0, rank_build_cb, &b);
  struct rank_arg after = {.db = a->db};
  st_op op = {.dbfn = seq_fn, .db = a->db, .arg = &after};
  if (!rc) rc = st_run(a->db->s, &op);
  st_rank *rk = NULL;
  if (!rc && after.seq_found == a->seq_found && after.seq_len == a->seq_len &&
      !memcmp(after.seq, a->seq, a->seq_len)) {
    rk = dv_calloc(1, sizeof *rk);
    if (!rk) rc = DV_ENOMEM;
  }
  if (rk) {
    memcpy(rk->seq, a->seq, a->seq_len);
    rk->seq_len = a->seq_len;
    rk->seq_found = a->seq_found;
    rk->built = 1;
    rk->total = b.total;
    rk->ids = b.ids;
    rk->n = b.n;
    rk->off = b.off;
    if (!rk->off) { /* no live docs: one offset, 0 */
      rk->off = dv_calloc(1, sizeof *rk->off);
      if (!rk->off) { dv_free(rk); return DV_ENOMEM; }
    }
    buf_init(&b.ids);
    b.off = NULL;
    pthread_mutex_lock(&a->db->mu);
    st_rank_free(a->db->rank);
    a->db->rank = rk;
    pthread_mutex_unlock(&a->db->mu);
  }
  buf_free(&b.ids);
  dv_free(b.off);
  return rc;
}

/* Remember that update_seq had this value when a scan was needed. */
static int rank_seen(struct rank_arg *a) {
  st_rank *rk = dv_calloc(1, sizeof *rk);
  if (!rk) return DV_ENOMEM;
  buf_init(&rk->ids);
  memcpy(rk->seq, a->seq, a->seq_len);
  rk->seq_len = a->seq_len;
  rk->seq_found = a->seq_found;
  pthread_mutex_lock(&a->db->mu);
  st_rank_free(a->db->rank);
  a->db->rank = rk;
  pthread_mutex_unlock(&a->db->mu);
  return 0;
}

int store_doc_rank(store_db *db, const char *id, size_t id_len, int descending, int64_t *out) {
  struct rank_arg a = {.db = db, .id = id, .id_len = id_len, .descending = descending};
  buf_init(&a.from);
  st_op op = {.dbfn = rank_fn, .db = db, .arg = &a};
  int rc = st_run(db->s, &op);
  if (!rc && a.state == RANK_BUILD) {
    rc = rank_build(&a);
    if (!rc) rc = st_run(db->s, &op); /* a hit, unless update_seq moved */
  }
  if (!rc && a.state == RANK_HIT) *out = a.out;
  else if (!rc) {
    rc = rank_scan(db, id, id_len, descending, out);
    if (!rc && a.state == RANK_MISS) rc = rank_seen(&a);
  }
  buf_free(&a.from);
  return rc;
}

/* ---- local documents -------------------------------------------------------------------- */

struct local_arg {
  store_db *db;
  st_op *op;
  const char *id;
  size_t id_len;
  dv_buf text;       /* JSON text (put: to store; get: read) */
  int64_t rev;       /* put: given (0 = none); get: found */
  int deleted;
  int strict;        /* put: rev must be the current one */
  int64_t new_rev;   /* put: the rev written (op->result) */
};

static void local_key(const st_dbx *x, dv_buf *b, const char *id, size_t id_len) {
  tup_w w;
  st_key_doc(x, b, &w, ST_SUB_LOCAL, id, id_len);
}

/* Read the header; *found 0 when absent. */
static int local_head(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, int flags, int64_t *rev,
                      int64_t *chunks, int *found) {
  dv_buf k;
  buf_init(&k);
  local_key(x, &k, id, id_len);
  const uint8_t *v;
  size_t vl;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, flags, &v, &vl, found);
  if (!rc && *found) {
    tup_r r;
    tup_item it, rv, ch;
    tup_r_init(&r, v, vl);
    if (tup_get(&r, TUP_INT, &it) || tup_get(&r, TUP_INT, &rv) || tup_get(&r, TUP_INT, &ch)) rc = DV_ECORRUPT;
    else *rev = rv.i64, *chunks = ch.i64;
  }
  buf_free(&k);
  return rc;
}

static int local_text(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, int64_t chunks, dv_buf *out) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  local_key(x, &b, id, id_len);
  tup_w w;
  tup_w_init(&w, &b);
  tup_int(&w, 0);
  local_key(x, &e, id, id_len);
  tup_w_init(&w, &e);
  tup_int(&w, chunks);
  kv_pair *pairs;
  int n = 0, more;
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : kv_get_range(txn, b.p, b.len, e.p, e.len, 0, 0, &pairs, &n, &more);
  buf_reset(out);
  for (int i = 0; !rc && i < n; i++) buf_append(out, pairs[i].val, pairs[i].val_len);
  if (!rc && n != chunks) rc = DV_ECORRUPT;
  buf_free(&b);
  buf_free(&e);
  return rc ? rc : buf_error(out);
}

static int local_get_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct local_arg *l = arg;
  int rc = 0;
  int64_t chunks;
  int found;
  rc = local_head(txn, x, l->id, l->id_len, 0, &l->rev, &chunks, &found);
  if (rc) return rc;
  if (!found) return DV_ENOT_FOUND;
  return local_text(txn, x, l->id, l->id_len, chunks, &l->text);
}

static json_val *local_doc(dv_arena *a, const char *id, size_t id_len, int64_t rev, const dv_buf *text, int *rc) {
  json_val *body;
  json_opts jo = {.flags = JSON_COPY, .max_depth = JSON_DEPTH_LIMIT};
  json_err je;
  *rc = json_parse(a, text->p, text->len, &jo, &body, &je);
  if (*rc) {
    *rc = DV_ECORRUPT;
    return NULL;
  }
  json_val *d = json_new_object(a);
  char rv[32];
  snprintf(rv, sizeof rv, "0-%lld", (long long)rev);
  *rc = DV_ENOMEM;
  if (!d || json_obj_setz(a, d, "_id", json_new_string(a, id, id_len)) ||
      json_obj_setz(a, d, "_rev", json_new_stringz(a, rv)))
    return NULL;
  for (size_t i = 0; i < body->len; i++)
    if (json_obj_set(a, d, body->u.members[i].key, body->u.members[i].klen, body->u.members[i].val)) return NULL;
  *rc = 0;
  return d;
}

int store_local_get(store_db *db, const char *id, size_t id_len, dv_arena *a, json_val **out) {
  struct local_arg l = {.db = db, .id = id, .id_len = id_len};
  buf_init(&l.text);
  st_op op = {.dbfn = local_get_fn, .db = db, .arg = &l};
  int rc = st_run(db->s, &op);
  if (!rc) {
    json_val *d = local_doc(a, id, id_len, l.rev, &l.text, &rc);
    if (!rc) *out = d;
  }
  buf_free(&l.text);
  return rc;
}

static int local_put_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct local_arg *l = arg;
  int rc = 0;
  int64_t cur = 0, chunks = 0;
  int found;
  rc = local_head(txn, x, l->id, l->id_len, 0, &cur, &chunks, &found);
  if (rc) return rc;
  if (l->deleted && !found) return DV_ENOT_FOUND;
  if (l->strict && (found ? cur != l->rev : l->rev != 0)) return DV_ECONFLICT;
  dv_buf k, e, v;
  buf_init(&k);
  buf_init(&e);
  buf_init(&v);
  local_key(x, &k, l->id, l->id_len);
  buf_append(&e, k.p, k.len);
  buf_putc(&e, 0xff);
  rc = buf_error(&k) || buf_error(&e) ? DV_ENOMEM : kv_clear_range(txn, k.p, k.len, e.p, e.len);
  l->new_rev = l->deleted ? 0 : l->rev + 1;
  if (!rc && !l->deleted) {
    int64_t nch = (int64_t)((l->text.len + LOCAL_CHUNK - 1) / LOCAL_CHUNK);
    tup_w w;
    tup_w_init(&w, &v);
    tup_int(&w, 0);
    tup_int(&w, l->new_rev);
    tup_int(&w, nch);
    rc = buf_error(&v) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
    size_t plen = k.len;
    for (int64_t i = 0; !rc && i < nch; i++) {
      k.len = plen;
      tup_w_init(&w, &k);
      tup_int(&w, i);
      size_t off = (size_t)i * LOCAL_CHUNK;
      size_t len = l->text.len - off < LOCAL_CHUNK ? l->text.len - off : LOCAL_CHUNK;
      rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, l->text.p + off, len);
    }
  }
  buf_free(&k);
  buf_free(&e);
  buf_free(&v);
  if (!rc) rc = st_txid_write(x->s, txn, l->op);
  return rc;
}

/* One local put, blocking or not: its argument, its run, and (async) the
 * id copied so the caller's may go at once. */
struct local_put {
  struct local_arg l;
  st_op op;
  int64_t *out_rev;
  store_done_fn done;
  void *arg;
  char id[];           /* async: a copy of the id */
};

static int local_put_end(struct local_put *p, int rc) {
  if (!rc && p->out_rev) *p->out_rev = p->l.new_rev;
  if (!rc) dv_stat_inc(DV_ST_LOCAL_DOCUMENT_WRITES);
  buf_free(&p->l.text);
  return rc;
}

static void local_put_done(st_op *op, int rc, int on_worker) {
  struct local_put *p = (struct local_put *)((char *)op - offsetof(struct local_put, op));
  rc = local_put_end(p, rc);
  store_done_fn done = p->done;
  void *arg = p->arg;
  dv_free(p);
  done(arg, rc);
}

/* The one path of store_local_put and store_local_put_async (p->done set):
 * returns the result, or ST_PENDING when local_put_done will. */
static int local_put(store_db *db, const json_val *body, int64_t rev, int deleted, int flags,
                     struct local_put *p) {
  const char *id = p->l.id;
  size_t id_len = p->l.id_len;
  buf_init(&p->l.text);
  dv_stat_inc(DV_ST_DATABASE_WRITES); /* couch_db:update_docs counts _local ones too */
  if (id_len <= 7 || memcmp(id, "_local/", 7) || store_docid_check(id, id_len, 1)) return DV_EBAD_DOCID;
  if (rev < 0 || rev == INT64_MAX) return DV_EBAD_REV;
  static const json_val empty_obj = {.type = JSON_OBJECT};
  if (!body) body = &empty_obj;
  if (body->type != JSON_OBJECT) return DV_ENOT_OBJECT;
  p->op = (st_op){.dbfn = local_put_fn, .db = db, .use_txid = 1, .arg = &p->l, .result = &p->l.new_rev,
                  .done = local_put_done};
  p->l.db = db;
  p->l.op = &p->op;
  p->l.rev = rev;
  p->l.deleted = deleted;
  p->l.strict = flags & STORE_LOCAL_STRICT;
  int rc = json_write(&p->l.text, body);
  if (!rc && p->l.text.len > db->s->max_doc) rc = DV_EDOC_TOO_LARGE;
  if (rc) return rc;
  return p->done ? st_run_async(db->s, &p->op) : st_run(db->s, &p->op);
}

int store_local_put(store_db *db, const char *id, size_t id_len, const json_val *body, int64_t rev, int deleted,
                    int flags, int64_t *out_rev) {
  struct local_put p = {.l = {.id = id, .id_len = id_len}, .out_rev = out_rev};
  return local_put_end(&p, local_put(db, body, rev, deleted, flags, &p));
}

void store_local_put_async(store_db *db, const char *id, size_t id_len, const json_val *body, int64_t rev,
                           int deleted, int flags, int64_t *out_rev, store_done_fn done, void *arg) {
  struct local_put *p = dv_calloc(1, sizeof *p + id_len + 1);
  if (!p) {
    done(arg, DV_ENOMEM);
    return;
  }
  memcpy(p->id, id, id_len);
  p->l.id = p->id;
  p->l.id_len = id_len;
  p->out_rev = out_rev;
  p->done = done;
  p->arg = arg;
  int rc = local_put(db, body, rev, deleted, flags, p);
  if (rc != ST_PENDING) local_put_done(&p->op, rc, 1); /* over already: done on this thread */
}

struct llist_arg {
  store_db *db;
  const store_range *r;
  int include_docs;
  dv_arena a;
  store_doc_row *rows;
  int n;
  int64_t skip, left;
  dv_buf cont;
  int have_cont;
  int more;
  int64_t skip0, left0;   /* before the batch, for a retried attempt */
  dv_buf cont0;
  int have_cont0;
};

static int llist_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct llist_arg *g = arg;
  g->skip = g->skip0;
  g->left = g->left0;
  buf_reset(&g->cont);
  buf_append(&g->cont, g->cont0.p, g->cont0.len);
  g->have_cont = g->have_cont0;
  arena_reset(&g->a);
  g->n = 0;
  g->more = 0;
  int rc = 0;
  dv_buf pfx, b, e, tx;
  buf_init(&pfx);
  buf_init(&b);
  buf_init(&e);
  buf_init(&tx);
  tup_w w;
  st_key_db(x, &pfx, &w, ST_SUB_LOCAL);
  rc = st_range_bounds(&pfx, g->r, &b, &e);
  if (!rc && g->have_cont) {
    dv_buf *side = g->r->descending ? &e : &b;
    buf_reset(side);
    buf_append(side, g->cont.p, g->cont.len);
    if (!g->r->descending) buf_putc(side, 0xff); /* past its chunks */
  }
  kv_pair *pairs;
  int n = 0;
  if (!rc && st_nonempty(&b, &e))
    rc = kv_get_range(txn, b.p, b.len, e.p, e.len, ALL_BATCH, KV_SNAPSHOT | (g->r->descending ? KV_REVERSE : 0),
                      &pairs, &n, &g->more);
  if (!rc && n && !(g->rows = arena_calloc(&g->a, (size_t)n * sizeof *g->rows))) rc = DV_ENOMEM;
  for (int i = 0; !rc && i < n; i++) {
    tup_r r;
    tup_item id, it, rv, ch;
    tup_r_init(&r, pairs[i].key + pfx.len, pairs[i].key_len - pfx.len);
    if (tup_get(&r, TUP_STR, &id)) { rc = DV_ECORRUPT; break; }
    if (!tup_r_done(&r)) continue; /* a chunk */
    buf_reset(&g->cont);
    buf_append(&g->cont, pairs[i].key, pairs[i].key_len);
    g->have_cont = 1;
    if (g->skip > 0) { g->skip--; continue; }
    if (g->left == 0) { g->more = 0; break; }
    if (g->left > 0) g->left--;
    tup_r_init(&r, pairs[i].val, pairs[i].val_len);
    if (tup_get(&r, TUP_INT, &it) || tup_get(&r, TUP_INT, &rv) || tup_get(&r, TUP_INT, &ch)) { rc = DV_ECORRUPT; break; }
    store_doc_row *row = &g->rows[g->n++];
    char *ids = arena_alloc(&g->a, id.s_len + 1);
    if (!ids) { rc = DV_ENOMEM; break; }
    tup_item_copy(&id, (uint8_t *)ids);
    ids[id.s_len] = 0;
    row->id = ids;
    row->id_len = id.s_len;
    char rs[24];
    int rl = snprintf(rs, sizeof rs, "%lld", (long long)rv.i64);
    row->rev.pos = 0;
    row->rev.raw = 1;
    row->rev.h = arena_memdup(&g->a, rs, (size_t)rl);
    row->rev.len = (uint32_t)rl;
    if (!row->rev.h) { rc = DV_ENOMEM; break; }
    if (g->include_docs) {
      rc = local_text(txn, x, ids, id.s_len, ch.i64, &tx);
      if (!rc) row->doc = local_doc(&g->a, ids, id.s_len, rv.i64, &tx, &rc);
    }
  }
  buf_free(&pfx);
  buf_free(&b);
  buf_free(&e);
  buf_free(&tx);
  return rc;
}

static int local_list(store_db *db, const store_range *r, int include_docs, store_row_cb cb, void *arg) {
  struct llist_arg g = {.db = db, .r = r, .include_docs = include_docs, .skip = r->skip, .left = r->limit};
  arena_init(&g.a, 0);
  buf_init(&g.cont);
  int rc = 0;
  buf_init(&g.cont0);
  for (;;) {
    g.skip0 = g.skip;
    g.left0 = g.left;
    buf_reset(&g.cont0);
    buf_append(&g.cont0, g.cont.p, g.cont.len);
    g.have_cont0 = g.have_cont;
    st_op op = {.dbfn = llist_fn, .db = db, .arg = &g};
    rc = st_run(db->s, &op);
    for (int i = 0; !rc && i < g.n; i++) rc = cb(arg, &g.rows[i]);
    if (rc || !g.more || g.left == 0) break;
  }
  arena_free(&g.a);
  buf_free(&g.cont);
  buf_free(&g.cont0);
  return rc;
}
