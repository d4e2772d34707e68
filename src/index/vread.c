/* vread.c — reading a view (view.h): map rows by range, total_rows and
 * offset, and reduce rows by group through the slot's tree.
 *
 * A range of a query becomes raw key bounds [lo, hi) over the slot's rows
 * (rows prefix R, suffix (EK, DocID, N) as tuple elements, so a key's rows
 * are the keys starting with R + enc(EK), a document's among them with
 * R + enc(EK) + enc(DocID)):
 *   ascending   lo = R + enc(EK(start_key)) [+ enc(start_docid)]   or R
 *               hi = R + enc(EK(end_key)) [+ enc(end_docid)] + 0xff or R + 0xff
 *                    (inclusive_end=false: without the 0xff)
 *   descending  the start key names hi (with its 0xff), the end key lo
 *               (inclusive_end=false: with a 0xff, so its rows are out)
 * Map rows: batches of BATCH rows, each read in one transaction (with the
 * included documents), handed on after it; the next batch starts past the
 * last key read (DESIGN.md "Long reads").
 * total_rows and offset: the tree's counts (vt_reduce without reductions):
 * the whole slot, and the rows before lo (after hi, descending), plus skip.
 * Reduce: no grouping, one tree reduce of [lo, hi); grouping, per group:
 * its first row (one range read of one KV, from where the last group ended),
 * its key range (the exact key: R + enc(EK); group_level N on a longer
 * array: every key starting with its first N elements, R + 0x01 +
 * esc(EK(prefix)) without the array's end byte), one tree reduce of that
 * range within [lo, hi).
 */
#include <string.h>

#include "index/collate.h"
#include "index/view_int.h"
#include "util/alloc.h"
#include "util/buf.h"

#define BATCH 200       /* map rows per transaction */
#define GROUPS 64       /* reduce groups per transaction */

/* ---- bounds ---------------------------------------------------------------------- */

static int ekey(const vw_slot *sl, const json_val *k, dv_buf *out) {
  return sl->raw ? collate_raw_key(out, k) : collate_key(out, k);
}

/* R + enc(EK(key)) [+ enc(docid)] [+ 0xff] */
static int bound(dv_buf *b, const dv_buf *rows, const vw_slot *sl, const json_val *key, const char *docid,
                 size_t docid_len, int ff) {
  buf_reset(b);
  buf_append(b, rows->p, rows->len);
  if (key) {
    dv_buf ek;
    buf_init(&ek);
    int rc = ekey(sl, key, &ek);
    tup_w w;
    tup_w_init(&w, b);
    if (!rc) tup_bytes(&w, ek.p, ek.len);
    if (!rc && docid) tup_str(&w, docid, docid_len);
    if (!rc && tup_w_finish(&w)) rc = DV_ENOMEM;
    buf_free(&ek);
    if (rc) return rc;
  }
  if (ff) buf_putc(b, 0xff);
  return buf_error(b) ? DV_ENOMEM : 0;
}

static int range_bounds(const dv_buf *rows, const vw_slot *sl, const vw_range *r, int desc, dv_buf *lo, dv_buf *hi) {
  int rc;
  if (!desc) {
    rc = bound(lo, rows, sl, r->start_key, r->start_docid, r->start_docid_len, 0);
    if (!rc) rc = r->end_key ? bound(hi, rows, sl, r->end_key, r->end_docid, r->end_docid_len, r->inclusive_end)
                             : bound(hi, rows, sl, NULL, NULL, 0, 1);
  } else {
    rc = r->start_key ? bound(hi, rows, sl, r->start_key, r->start_docid, r->start_docid_len, 1)
                      : bound(hi, rows, sl, NULL, NULL, 0, 1);
    if (!rc) rc = r->end_key ? bound(lo, rows, sl, r->end_key, r->end_docid, r->end_docid_len, !r->inclusive_end)
                             : bound(lo, rows, sl, NULL, NULL, 0, 0);
  }
  return rc;
}

static int before(const dv_buf *a, const dv_buf *b) { return dv_bytes_cmp(a->p, a->len, b->p, b->len) < 0; }

/* The rows prefix of a slot (no transaction needed: the prefix of the
 * database is the handle's). */
struct prefix_arg {
  const vw_index *ix;
  size_t slot;
  dv_buf *rows;
  vw_state st;
  dv_arena *a;
};

static int prefix_fn(store_tx *t, void *arg) {
  struct prefix_arg *p = arg;
  int rc = vw_state_get(t, p->ix->sig, KV_SNAPSHOT, p->a, &p->st);
  if (rc) return rc;
  buf_reset(p->rows);
  tup_w w;
  vw_key(t, p->rows, &w, p->ix->sig, "k");
  tup_int(&w, (int64_t)p->slot);
  return tup_w_finish(&w) ? DV_ENOMEM : 0;
}

/* ---- map rows ---------------------------------------------------------------------- */

struct batch_arg {
  const vw_map_opts *o;
  size_t rows_len;            /* the slot's rows prefix */
  dv_buf lo, hi;              /* what is left of the range */
  dv_arena a;
  vw_row *rows;               /* this batch's, in the arena */
  size_t n;
  int64_t skip;               /* rows still to skip */
  int64_t want;               /* rows still wanted (< 0: all) */
  int64_t skipped;            /* out: rows skipped in this batch */
  int read;                   /* out: KVs read */
  int more;                   /* out: the range may have more */
  dv_buf next;                /* out: the bound the next batch starts from */
};

static int row_decode(dv_arena *a, const kv_pair *kv, size_t rows_len, vw_row *r) {
  tup_r t;
  tup_item ek, id, k, v;
  if (kv->key_len < rows_len) return DV_ECORRUPT;
  tup_r_init(&t, kv->key + rows_len, kv->key_len - rows_len);
  if (tup_get(&t, TUP_BYTES, &ek) || tup_get(&t, TUP_STR, &id)) return DV_ECORRUPT;
  tup_r_init(&t, kv->val, kv->val_len);
  if (tup_get(&t, TUP_STR, &k) || tup_get(&t, TUP_STR, &v)) return DV_ECORRUPT;
  char *ids = arena_alloc(a, id.s_len + 1), *ks = arena_alloc(a, k.s_len + 1), *vs = arena_alloc(a, v.s_len + 1);
  if (!ids || !ks || !vs) return DV_ENOMEM;
  tup_item_copy(&id, (uint8_t *)ids);
  tup_item_copy(&k, (uint8_t *)ks);
  tup_item_copy(&v, (uint8_t *)vs);
  ids[id.s_len] = ks[k.s_len] = vs[v.s_len] = 0;
  *r = (vw_row){.id = ids, .id_len = id.s_len, .key = ks, .key_len = k.s_len, .value = vs, .value_len = v.s_len};
  return 0;
}

/* include_docs: the emitting document, or the one a value {"_id": X} names
 * (a null _id: no document; with "_rev": that revision, when it is a leaf
 * — divan keeps no body of an older one). */
static int row_doc(store_tx *t, struct batch_arg *b, vw_row *r) {
  const char *id = r->id;
  size_t n = r->id_len;
  json_val *val = NULL;
  const json_val *lrev = NULL;
  r->has_doc = 1;
  r->doc = NULL;
  if (r->value_len && r->value[0] == '{' && !json_parse(&b->a, r->value, r->value_len, NULL, &val, NULL)) {
    const json_val *lid = json_obj_getz(val, "_id");
    if (lid && lid->type == JSON_NULL) return 0;
    if (lid && lid->type == JSON_STRING) {
      id = lid->u.s;
      n = lid->len;
      lrev = json_obj_getz(val, "_rev");
    }
  }
  json_val *doc = NULL;
  int rc;
  store_rev rv;
  if (lrev && lrev->type == JSON_STRING) {
    /* the live leaves are the winner and its _conflicts */
    rc = store_tx_doc(t, id, n, b->o->doc_flags | STORE_CONFLICTS, &b->a, &doc);
    const json_val *wr = rc ? NULL : json_obj_getz(doc, "_rev"), *cf = rc ? NULL : json_obj_getz(doc, "_conflicts");
    int is_winner = wr && wr->type == JSON_STRING && wr->len == lrev->len && !memcmp(wr->u.s, lrev->u.s, lrev->len);
    int is_leaf = 0;
    for (size_t i = 0; !is_winner && cf && cf->type == JSON_ARRAY && i < cf->len; i++)
      is_leaf |= cf->u.items[i]->type == JSON_STRING && cf->u.items[i]->len == lrev->len &&
                 !memcmp(cf->u.items[i]->u.s, lrev->u.s, lrev->len);
    if (!rc && is_winner && !(b->o->doc_flags & STORE_CONFLICTS)) json_obj_del(doc, "_conflicts", 10);
    if (!rc && !is_winner) {
      doc = NULL;
      rc = is_leaf && !store_rev_parse(lrev->u.s, lrev->len, &b->a, &rv) ? store_tx_leaf_doc(t, id, n, &rv, &b->a, &doc)
                                                                       : DV_ENOT_FOUND;
    }
  } else {
    rc = store_tx_doc(t, id, n, b->o->doc_flags, &b->a, &doc);
  }
  if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) return 0;
  r->doc = doc;
  return rc;
}

static int batch_fn(store_tx *t, void *arg) {
  struct batch_arg *b = arg;
  arena_reset(&b->a);
  b->n = 0;
  b->skipped = 0;
  b->rows = arena_alloc(&b->a, BATCH * sizeof *b->rows);
  if (!b->rows) return DV_ENOMEM;
  kv_pair *kv;
  int n, more;
  int rc = kv_get_range(store_tx_kv(t), b->lo.p, b->lo.len, b->hi.p, b->hi.len, BATCH,
                        KV_SNAPSHOT | (b->o->descending ? KV_REVERSE : 0), &kv, &n, &more);
  if (rc) return rc;
  int i;
  for (i = 0; i < n; i++) {
    if (b->skip - b->skipped > 0) {
      b->skipped++;
      continue;
    }
    if (b->want >= 0 && (int64_t)b->n >= b->want) break;
    vw_row *r = &b->rows[b->n];
    rc = row_decode(&b->a, &kv[i], b->rows_len, r);
    if (!rc && b->o->include_docs) rc = row_doc(t, b, r);
    if (rc) return rc;
    b->n++;
  }
  b->read = i;
  b->more = more || i < n;
  if (i) { /* the next batch starts past the last row used */
    const kv_pair *last = &kv[i - 1];
    buf_reset(&b->next);
    buf_append(&b->next, last->key, last->key_len);
    if (!b->o->descending) buf_putc(&b->next, 0x00);
    if (buf_error(&b->next)) return DV_ENOMEM;
  }
  return 0;
}

static int rows_prefix(store_db *db, const vw_index *ix, size_t slot, dv_buf *rows, vw_state *st) {
  dv_arena a;
  arena_init(&a, 0);
  struct prefix_arg p = {ix, slot, rows, {0}, &a};
  int rc = store_db_run(db, prefix_fn, &p);
  if (st) {
    *st = p.st;
    st->def = NULL; /* the arena goes */
  }
  arena_free(&a);
  return rc;
}

struct vw_map_iter {
  store_db *db;
  const vw_index *ix;
  size_t slot;
  const vw_map_opts *o;
  dv_buf rows;                /* the slot's rows prefix */
  struct batch_arg b;
  size_t k;                   /* the range being read */
  int in_range;               /* b.lo/b.hi hold what is left of range k */
};

int vw_map_iter_new(store_db *db, const vw_index *ix, size_t slot, const vw_map_opts *o, vw_map_iter **out) {
  vw_map_iter *it = dv_calloc(1, sizeof *it);
  if (!it) return DV_ENOMEM;
  *it = (vw_map_iter){.db = db, .ix = ix, .slot = slot, .o = o};
  buf_init(&it->rows);
  it->b.o = o;
  buf_init(&it->b.lo);
  buf_init(&it->b.hi);
  buf_init(&it->b.next);
  arena_init(&it->b.a, 0);
  it->b.skip = o->skip;
  it->b.want = o->limit;
  int rc = rows_prefix(db, ix, slot, &it->rows, NULL);
  it->b.rows_len = it->rows.len;
  if (rc) {
    vw_map_iter_free(it);
    return rc;
  }
  *out = it;
  return 0;
}

void vw_map_iter_free(vw_map_iter *it) {
  if (!it) return;
  buf_free(&it->rows);
  buf_free(&it->b.lo);
  buf_free(&it->b.hi);
  buf_free(&it->b.next);
  arena_free(&it->b.a);
  dv_free(it);
}

int vw_map_iter_next(vw_map_iter *it, vw_row_fn fn, void *arg, int *done) {
  struct batch_arg *b = &it->b;
  const vw_map_opts *o = it->o;
  int rc = 0;
  *done = 0;
  for (;;) { /* to the next range that has rows left, then one batch of it */
    if (o->unbuilt || b->want == 0 || (!it->in_range && it->k >= o->n_ranges)) {
      *done = 1;
      return 0;
    }
    if (!it->in_range) {
      rc = range_bounds(&it->rows, &it->ix->slots[it->slot], &o->ranges[it->k], o->descending, &b->lo, &b->hi);
      if (rc) return rc;
      it->in_range = 1;
    }
    if (before(&b->lo, &b->hi)) break;
    it->in_range = 0;
    it->k++;
  }
  rc = store_db_run(it->db, batch_fn, b);
  if (rc) return rc;
  b->skip -= b->skipped;
  for (size_t i = 0; !rc && i < b->n; i++) {
    rc = fn(arg, &b->rows[i]);
    if (b->want > 0) b->want--;
  }
  if (rc) return rc;
  if (!b->more || !b->read) { /* this range is done */
    it->in_range = 0;
    it->k++;
  } else {
    dv_buf *move = o->descending ? &b->hi : &b->lo;
    buf_reset(move);
    buf_append(move, b->next.p, b->next.len);
    if (buf_error(move)) return DV_ENOMEM;
  }
  return 0;
}

int vw_map_rows(store_db *db, const vw_index *ix, size_t slot, const vw_map_opts *o, vw_row_fn fn, void *arg) {
  vw_map_iter *it;
  int rc = vw_map_iter_new(db, ix, slot, o, &it);
  int done = 0;
  while (!rc && !done) rc = vw_map_iter_next(it, fn, arg, &done);
  vw_map_iter_free(it);
  return rc == 1 ? 0 : rc;
}

/* ---- counts: total_rows and offset -------------------------------------------------- */

struct meta_arg {
  const vw_index *ix;
  size_t slot;
  const dv_buf *bound;        /* lo (ascending) or hi (descending) of the first range */
  int descending;
  dv_arena a;
  uint64_t total, before;
  int found;                  /* the index has a state: it was built */
};

static int meta_fn(store_tx *t, void *arg) {
  struct meta_arg *m = arg;
  arena_reset(&m->a);
  vw_state st;
  int rc = vw_state_get(t, m->ix->sig, KV_SNAPSHOT, &m->a, &st);
  m->found = !rc && st.found;
  if (rc || !st.found) {
    m->total = m->before = 0;
    return rc;
  }
  vw_tree tr;
  rc = vw_tree_def(t, m->ix, &st, m->slot, &tr);
  if (!rc) rc = vt_reduce(store_tx_kv(t), &tr.d, NULL, NULL, KV_SNAPSHOT, &m->total, NULL, NULL);
  if (!rc && m->bound) {
    size_t pl = tr.rows.len;
    vt_bound bd = {m->bound->p + pl, m->bound->len - pl, m->descending};
    rc = m->descending ? vt_reduce(store_tx_kv(t), &tr.d, &bd, NULL, KV_SNAPSHOT, &m->before, NULL, NULL)
                       : vt_reduce(store_tx_kv(t), &tr.d, NULL, &bd, KV_SNAPSHOT, &m->before, NULL, NULL);
  }
  vw_tree_free(&tr);
  return rc;
}

int vw_map_meta(store_db *db, const vw_index *ix, size_t slot, vw_map_opts *o, uint64_t *total_rows,
                uint64_t *offset) {
  dv_buf rows, lo, hi;
  buf_init(&rows);
  buf_init(&lo);
  buf_init(&hi);
  int rc = rows_prefix(db, ix, slot, &rows, NULL);
  if (!rc && o->n_ranges) rc = range_bounds(&rows, &ix->slots[slot], &o->ranges[0], o->descending, &lo, &hi);
  struct meta_arg m = {ix, slot, o->n_ranges ? (o->descending ? &hi : &lo) : NULL, o->descending, {0}, 0, 0, 0};
  arena_init(&m.a, 0);
  if (!rc) rc = store_db_run(db, meta_fn, &m);
  arena_free(&m.a);
  *total_rows = m.total;
  o->unbuilt = !rc && !m.found;
  uint64_t off = m.before + (o->skip > 0 ? (uint64_t)o->skip : 0);
  *offset = off < m.total ? off : m.total;
  buf_free(&rows);
  buf_free(&lo);
  buf_free(&hi);
  return rc;
}

/* ---- reduce rows ---------------------------------------------------------------------- */

typedef struct got_red {
  char *key;
  size_t key_len;
  dv_buf state;   /* the view's reduction (tag byte + bytes) */
} got_red;

struct red_arg {
  const vw_index *ix;
  const vw_view *v;
  const vw_red_opts *o;
  vw_session *ss;             /* for JavaScript reduces, or NULL */
  dv_buf rows;                /* the slot's rows prefix */
  dv_buf lo, hi;              /* what is left of the current range */
  const json_val *req_key;    /* keys: the requested key, shown as the group key */
  dv_arena a;
  got_red g[GROUPS];
  size_t n;
  int end;                    /* out: the range is done */
};

static int tree_of(store_tx *t, struct red_arg *r, vw_tree *tr, vw_red_ctx *rc) {
  vw_state st;
  int e = vw_state_get(t, r->ix->sig, KV_SNAPSHOT, &r->a, &st);
  if (e) return e;
  if (!st.found) return DV_ENOT_FOUND;
  if ((e = vw_tree_def(t, r->ix, &st, r->v->slot, tr))) return e;
  vw_red_init(rc, r->ix, r->v->slot, r->ss, tr->rows.len);
  tr->d.n_red = r->ix->slots[r->v->slot].n_red;
  tr->d.ops = &vw_red_ops;
  tr->d.ctx = rc;
  return 0;
}

/* Reduce [lo, hi) into g (count 0: no row). */
static int reduce_range(store_tx *t, vw_tree *tr, const dv_buf *lo, const dv_buf *hi, size_t which, got_red *g,
                        uint64_t *count) {
  size_t pl = tr->rows.len;
  vt_bound l = {lo->p + pl, lo->len - pl, 1}, h = {hi->p + pl, hi->len - pl, 0};
  dv_buf reds[16];
  size_t nr = tr->d.n_red;
  if (nr > 16) return DV_EINVAL;
  for (size_t i = 0; i < nr; i++) buf_init(&reds[i]);
  int rc = vt_reduce(store_tx_kv(t), &tr->d, &l, &h, KV_SNAPSHOT, count, reds, NULL);
  if (!rc && *count) {
    buf_reset(&g->state);
    buf_append(&g->state, reds[which].p, reds[which].len);
    if (buf_error(&g->state)) rc = DV_ENOMEM;
  }
  for (size_t i = 0; i < nr; i++) buf_free(&reds[i]);
  return rc;
}

/* Without grouping, or one `keys` element: one row for the whole range. */
static int red_whole_fn(store_tx *t, void *arg) {
  struct red_arg *r = arg;
  arena_reset(&r->a);
  r->n = 0;
  vw_tree tr;
  vw_red_ctx rc;
  buf_init(&tr.rows);
  buf_init(&tr.nodes);
  int e = tree_of(t, r, &tr, &rc);
  if (e == DV_ENOT_FOUND) e = 0, r->end = 1;
  else if (!e) {
    uint64_t count = 0;
    e = reduce_range(t, &tr, &r->lo, &r->hi, (size_t)r->v->red, &r->g[0], &count);
    if (!e && count) {
      dv_buf k;
      buf_init(&k);
      if (r->req_key) e = json_write(&k, r->req_key);
      else buf_append(&k, "null", 4);
      r->g[0].key = arena_strndup(&r->a, (char *)k.p, k.len);
      r->g[0].key_len = k.len;
      buf_free(&k);
      if (!e && !r->g[0].key) e = DV_ENOMEM;
      r->n = 1;
    }
    vw_red_free(&rc);
  }
  vw_tree_free(&tr);
  r->end = 1;
  return e;
}

/* The key range of the group a row starts (group level lvl, -1 exact):
 * [glo, ghi), and the group's key (JSON text) into key. */
static int group_of(struct red_arg *r, const kv_pair *kv, dv_buf *glo, dv_buf *ghi, dv_buf *key) {
  const vw_slot *sl = &r->ix->slots[r->v->slot];
  tup_r t;
  tup_item ek, kj;
  tup_r_init(&t, kv->key + r->rows.len, kv->key_len - r->rows.len);
  if (tup_get(&t, TUP_BYTES, &ek)) return DV_ECORRUPT;
  tup_r_init(&t, kv->val, kv->val_len);
  if (tup_get(&t, TUP_STR, &kj)) return DV_ECORRUPT;
  char *ks = arena_alloc(&r->a, kj.s_len + 1);
  if (!ks) return DV_ENOMEM;
  tup_item_copy(&kj, (uint8_t *)ks);
  json_val *k = NULL;
  int rc = json_parse(&r->a, ks, kj.s_len, NULL, &k, NULL);
  if (rc) return rc == DV_ENOMEM ? rc : DV_ECORRUPT;
  int lvl = r->o->group_level;
  buf_reset(glo);
  buf_reset(ghi);
  buf_reset(key);
  if (lvl > 0 && k->type == JSON_ARRAY && k->len >= (size_t)lvl) {
    json_val *g = json_new_array(&r->a);
    if (!g) return DV_ENOMEM;
    for (int i = 0; i < lvl; i++)
      if (json_arr_push(&r->a, g, k->u.items[i])) return DV_ENOMEM;
    dv_buf e;
    buf_init(&e);
    rc = ekey(sl, g, &e);
    if (!rc) {
      e.len--; /* the array's end byte: every longer array with these elements follows */
      buf_append(glo, r->rows.p, r->rows.len);
      buf_putc(glo, 0x01); /* the tuple's byte-string code, then its escaped bytes */
      for (size_t i = 0; i < e.len; i++) {
        buf_putc(glo, ((uint8_t *)e.p)[i]);
        if (!((uint8_t *)e.p)[i]) buf_putc(glo, 0xff);
      }
      rc = tup_strinc(ghi, glo->p, glo->len);
    }
    buf_free(&e);
    if (!rc) rc = json_write(key, g);
  } else {
    /* the exact key: R + enc(EK) as stored */
    buf_append(glo, kv->key, r->rows.len + ek.raw_len);
    buf_append(ghi, kv->key, r->rows.len + ek.raw_len);
    buf_putc(ghi, 0xff);
    buf_append(key, ks, kj.s_len);
  }
  return rc ? rc : buf_error(glo) || buf_error(ghi) || buf_error(key) ? DV_ENOMEM : 0;
}

static const dv_buf *max_of(const dv_buf *a, const dv_buf *b) { return before(a, b) ? b : a; }
static const dv_buf *min_of(const dv_buf *a, const dv_buf *b) { return before(a, b) ? a : b; }

/* Grouped: up to GROUPS groups from where the range is left. */
static int red_groups_fn(store_tx *t, void *arg) {
  struct red_arg *r = arg;
  arena_reset(&r->a);
  r->n = 0;
  r->end = 0;
  vw_tree tr;
  vw_red_ctx rc;
  buf_init(&tr.rows);
  buf_init(&tr.nodes);
  int e = tree_of(t, r, &tr, &rc);
  if (e == DV_ENOT_FOUND) {
    vw_tree_free(&tr);
    r->end = 1;
    return 0;
  }
  dv_buf lo, hi, glo, ghi, key;
  buf_init(&lo);
  buf_init(&hi);
  buf_init(&glo);
  buf_init(&ghi);
  buf_init(&key);
  buf_append(&lo, r->lo.p, r->lo.len);
  buf_append(&hi, r->hi.p, r->hi.len);
  while (!e && r->n < GROUPS) {
    if (!before(&lo, &hi)) {
      r->end = 1;
      break;
    }
    kv_pair *kv;
    int n, more;
    e = kv_get_range(store_tx_kv(t), lo.p, lo.len, hi.p, hi.len, 1, KV_SNAPSHOT | (r->o->descending ? KV_REVERSE : 0),
                     &kv, &n, &more);
    if (e) break;
    if (!n) {
      r->end = 1;
      break;
    }
    if ((e = group_of(r, &kv[0], &glo, &ghi, &key))) break;
    const dv_buf *a = max_of(&lo, &glo), *b = min_of(&hi, &ghi);
    got_red *g = &r->g[r->n];
    uint64_t count = 0;
    e = reduce_range(t, &tr, a, b, (size_t)r->v->red, g, &count);
    if (e) break;
    if (count) {
      g->key = arena_strndup(&r->a, (char *)key.p, key.len);
      g->key_len = key.len;
      if (!g->key) {
        e = DV_ENOMEM;
        break;
      }
      r->n++;
    }
    /* the next group starts where this one ends */
    dv_buf *move = r->o->descending ? &hi : &lo;
    const dv_buf *to = r->o->descending ? a : b;
    dv_buf tmp;
    buf_init(&tmp);
    buf_append(&tmp, to->p, to->len);
    buf_reset(move);
    buf_append(move, tmp.p, tmp.len);
    buf_free(&tmp);
  }
  if (!e) { /* the caller continues from here */
    buf_reset(&r->lo);
    buf_append(&r->lo, lo.p, lo.len);
    buf_reset(&r->hi);
    buf_append(&r->hi, hi.p, hi.len);
    if (buf_error(&r->lo) || buf_error(&r->hi)) e = DV_ENOMEM;
  }
  vw_red_free(&rc);
  vw_tree_free(&tr);
  buf_free(&lo);
  buf_free(&hi);
  buf_free(&glo);
  buf_free(&ghi);
  buf_free(&key);
  return e;
}

/* The answer of one reduction: its final value, or its error. */
static int red_emit(struct red_arg *r, got_red *g, int64_t *skip, int64_t *want, vw_red_fn fn, void *arg, vw_err *err,
                    dv_arena *ea) {
  const vw_slot *sl = &r->ix->slots[r->v->slot];
  vr_kind k = sl->kinds[r->v->red];
  const uint8_t *s = g->state.p;
  size_t n = g->state.len;
  if (!n) return DV_ECORRUPT;
  vw_red_row row = {.key = g->key, .key_len = g->key_len};
  dv_buf val;
  buf_init(&val);
  int rc = 0;
  if (s[0] == 1) { /* a failed reduction: CouchDB's error row, or the query fails */
    json_val *o = NULL;
    rc = json_parse(&r->a, s + 1, n - 1, NULL, &o, NULL);
    const json_val *en = rc ? NULL : json_obj_getz(o, "error"), *rs = rc ? NULL : json_obj_getz(o, "reason");
    if (!en || en->type != JSON_STRING || !rs || rs->type != JSON_STRING) {
      buf_free(&val);
      return DV_ECORRUPT;
    }
    if (!(en->len == 21 && !memcmp(en->u.s, "reduce_overflow_error", 21))) {
      if (err) {
        err->error = arena_strndup(ea, en->u.s, en->len);
        err->reason = arena_strndup(ea, rs->u.s, rs->len);
      }
      buf_free(&val);
      return DV_EQS;
    }
    row.key = "null";
    row.key_len = 4;
    row.error = arena_strndup(&r->a, en->u.s, en->len);
    row.reason = arena_strndup(&r->a, rs->u.s, rs->len);
  } else if (k == VR_JS) {
    row.value = (const char *)s + 1;
    row.value_len = n - 1;
  } else {
    rc = vr_final(k, s + 1, n - 1, &val);
    row.value = (char *)val.p;
    row.value_len = val.len;
  }
  if (!rc) {
    if (*skip > 0) (*skip)--;
    else if (*want != 0) {
      rc = fn(arg, &row);
      if (*want > 0) (*want)--;
    }
  }
  buf_free(&val);
  return rc;
}

static int has_js(const vw_slot *sl) {
  for (size_t i = 0; i < sl->n_red; i++)
    if (sl->kinds[i] == VR_JS) return 1;
  return 0;
}

int vw_reduce_rows(store_db *db, const vw_index *ix, const vw_view *v, const vw_red_opts *o, vw_red_fn fn, void *arg,
                   dv_arena *ea, vw_err *err) {
  if (v->red < 0) return DV_EINVAL;
  struct red_arg *r = dv_calloc(1, sizeof *r);
  if (!r) return DV_ENOMEM;
  r->ix = ix;
  r->v = v;
  r->o = o;
  buf_init(&r->rows);
  buf_init(&r->lo);
  buf_init(&r->hi);
  arena_init(&r->a, 0);
  for (size_t i = 0; i < GROUPS; i++) buf_init(&r->g[i].state);
  vw_session ss;
  memset(&ss, 0, sizeof ss);
  int rc = 0;
  if (has_js(&ix->slots[v->slot])) {
    rc = vw_session_open(ix, &ss);
    r->ss = &ss;
  }
  if (!rc) rc = rows_prefix(db, ix, v->slot, &r->rows, NULL);
  int64_t skip = o->skip, want = o->limit;
  for (size_t k = 0; !rc && k < o->n_ranges && want != 0; k++) {
    rc = range_bounds(&r->rows, &ix->slots[v->slot], &o->ranges[k], o->descending, &r->lo, &r->hi);
    r->req_key = o->keys ? o->ranges[k].start_key : NULL;
    int grouped = o->group_level != 0 && !o->keys;
    r->end = 0;
    while (!rc && !r->end && want != 0) {
      rc = store_db_run(db, grouped ? red_groups_fn : red_whole_fn, r);
      for (size_t i = 0; !rc && i < r->n && want != 0; i++) rc = red_emit(r, &r->g[i], &skip, &want, fn, arg, err, ea);
    }
  }
  if (rc == DV_EQS && r->ss && ss.e.error && err && !err->error) {
    err->error = arena_strndup(ea, ss.e.error, strlen(ss.e.error));
    err->reason = arena_strndup(ea, ss.e.reason ? ss.e.reason : "", ss.e.reason ? strlen(ss.e.reason) : 0);
  }
  if (r->ss) vw_session_close(&ss);
  for (size_t i = 0; i < GROUPS; i++) buf_free(&r->g[i].state);
  buf_free(&r->rows);
  buf_free(&r->lo);
  buf_free(&r->hi);
  arena_free(&r->a);
  dv_free(r);
  return rc == 1 ? 0 : rc;
}
