/* mindex.c — Mango json indexes kept exact in the write transaction, built
 * in the background on existing documents, read by key range (mindex.h).
 *
 * Key layout, under the database's indexes subspace I = (P, "i"):
 *   (I,"dd",DdocID)              (Name, Sig, DefJSON, …)  the json indexes a
 *                                query design document defines, three
 *                                elements per index (the registry)
 *   (I,Sig,"s")                  (Refs, Ready, CreatedInc, CreatedVS,
 *                                CursorInc|null, CursorVS|null, Built, Total)
 *                                an index's state: how many (ddoc, name)
 *                                use it; built or not; the Sequence it was
 *                                created at (this commit's stamp, user
 *                                version 0xffff, so every changes row of
 *                                the creating commit is before it); where
 *                                the build is; progress
 *   (I,Sig,"k",EK:bytes,DocID)   (KeyJSON, Rev): a row — the JSON text of the
 *                                key array, and the winner's rev it was
 *                                written for (rows are rewritten whenever
 *                                the winner changes, so a query reads the
 *                                document's body by it, without reading
 *                                its revisions first)
 *   (I,Sig,"b",DocID)            EK: the back-index row of a document
 *   (I,Sig,"n")                  8-byte LE counter: documents left out
 *                                (key or value past the limits; atomic ADD)
 * Sig: 16 bytes, MD5 of the fields and the partial_filter_selector; EK: the
 * collation key (collate.h) of the array of the fields' values.
 *
 * Data flow:
 *   write a document   store calls index_update (ix_update) in the edit's
 *                      transaction with the old and new winner: per index,
 *                      the old row is found through the back-index row (one
 *                      point read; none for a new document), cleared when
 *                      the key moved, and the new row and back row written.
 *                      The body is the edit's own (or read in the
 *                      transaction when another branch became the winner).
 *   write a _design/   ix_update compares the design document's json
 *   document           indexes with its registry row: a new signature gets
 *                      a state row (building, created at this commit), a
 *                      signature no name uses any more is cleared with one
 *                      clear_range. store bumps the metadata version and
 *                      conflicts every concurrent writer of the database
 *                      (hooks.c), so each write after this commit keeps the
 *                      new index, and the builder takes every document
 *                      written before it.
 *   build              one thread per process (builder): per unfinished
 *                      index, batches of the changes subspace between its
 *                      cursor and its creation Sequence, read non-snapshot
 *                      (an edit moving a row conflicts the batch, which is
 *                      retried without it — RFC 006 step 4), each batch one
 *                      transaction that writes the rows and moves the
 *                      cursor; the last one marks the index ready.
 *   query              mi_scan: batches of rows in key order, each batch one
 *                      transaction that also reads the documents, so a row
 *                      and its document are one snapshot.
 *   limits             a key over what fits under KV_MAX_KEY, or a value
 *                      over KV_MAX_VALUE, leaves the document out of that
 *                      index (counted in (I,Sig,"n")), never fails the write.
 */
#include "index/mindex.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/collate.h"
#include "index/mango_int.h"
#include "util/alloc.h"
#include "util/md5.h"
#include "util/thread.h"

#define BUILD_BATCH 250      /* changes rows per build transaction */
#define BUILD_BATCH_MS 2000  /* and at most this long */
#define SCAN_BATCH 200       /* index rows per query transaction */

/* ---- keys ------------------------------------------------------------------------ */

/* b = I + (Sig,) + sub… ; w ready for more. */
static void key_sig(store_tx *t, dv_buf *b, tup_w *w, const uint8_t *sig, const char *sub) {
  store_tx_ikey(t, b, w);
  tup_bytes(w, sig, MI_SIG_LEN);
  if (sub) tup_strz(w, sub);
}

static void key_dd(store_tx *t, dv_buf *b, const char *id, size_t n) {
  tup_w w;
  store_tx_ikey(t, b, &w);
  tup_strz(&w, "dd");
  if (id) tup_str(&w, id, n);
}

/* Tuple byte-string escaping, without the type byte and terminator. */
static void esc(dv_buf *b, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    buf_putc(b, p[i]);
    if (!p[i]) buf_putc(b, 0xff);
  }
}

static int is_design(const char *id, size_t n) { return n > 8 && !memcmp(id, "_design/", 8); }

/* ---- definitions ----------------------------------------------------------------- */

const json_val *mi_field(const json_val *doc, const char *f, size_t n) {
  dv_arena a;
  arena_init(&a, 0);
  mseg *seg;
  size_t ns;
  const json_val *v = mango__split_path(&a, f, n, &seg, &ns) ? NULL : mango__get_path(doc, seg, ns);
  arena_free(&a);
  return v;
}

/* Split each field's path once, for mi_doc_key. */
static int split_fields(dv_arena *a, mi_def *d) {
  d->segs = arena_alloc(a, (d->n_fields + 1) * sizeof *d->segs);
  d->nsegs = arena_alloc(a, (d->n_fields + 1) * sizeof *d->nsegs);
  if (!d->segs || !d->nsegs) return DV_ENOMEM;
  for (size_t i = 0; i < d->n_fields; i++) {
    mseg *sg;
    if (mango__split_path(a, d->fields[i], d->field_lens[i], &sg, &d->nsegs[i])) return DV_ENOMEM;
    d->segs[i] = sg;
  }
  return 0;
}

static void sig_of(const mi_def *d, uint8_t out[MI_SIG_LEN]) {
  dv_md5 c;
  dv_md5_init(&c);
  for (size_t i = 0; i < d->n_fields; i++) {
    dv_md5_update(&c, d->fields[i], d->field_lens[i]);
    dv_md5_update(&c, "\0", 1);
  }
  if (d->partial) {
    dv_buf b;
    buf_init(&b);
    if (!json_write(&b, d->partial)) {
      dv_md5_update(&c, "\1", 1);
      dv_md5_update(&c, b.p, b.len);
    }
    buf_free(&b);
  }
  dv_md5_final(&c, out);
}

/* One view of a query design document as an index; 0 when it is not one. */
static int view_def(dv_arena *a, const char *ddoc, const json_member *m, mi_def *d) {
  /* mango_idx_view:validate_ddoc: a map with an object of fields, and an
   * options object; a view without them is not an index (CouchDB skips it) */
  const json_val *map = json_obj_getz(m->val, "map"), *opt = json_obj_getz(m->val, "options");
  const json_val *f = map ? json_obj_getz(map, "fields") : NULL;
  if (!f || f->type != JSON_OBJECT || f->len > MI_MAX_FIELDS || !opt || opt->type != JSON_OBJECT) return 0;
  memset(d, 0, sizeof *d);
  d->ddoc = ddoc;
  d->name = arena_strndup(a, m->key, m->klen);
  d->n_fields = f->len;
  d->fields = arena_alloc(a, (f->len + 1) * sizeof *d->fields);
  d->field_lens = arena_alloc(a, (f->len + 1) * sizeof *d->field_lens);
  d->desc = arena_alloc(a, f->len + 1);
  if (!d->name || !d->fields || !d->field_lens || !d->desc) return DV_ENOMEM;
  /* the column order: divan keeps a document's members in key order, so
   * map.fields comes back sorted; options.def.fields (the request's array)
   * still has the order the index was made with, and gives it when it
   * names the same fields */
  const json_val *order = json_obj_getz(json_obj_getz(opt, "def"), "fields");
  int use_order = order && order->type == JSON_ARRAY && order->len == f->len;
  for (size_t i = 0; use_order && i < order->len; i++) {
    const json_val *o = order->u.items[i];
    const json_val *nm = o->type == JSON_STRING ? o : NULL;
    if (o->type == JSON_OBJECT && o->len == 1) nm = json_new_string(a, o->u.members[0].key, o->u.members[0].klen);
    use_order = nm && nm->type == JSON_STRING && json_obj_get(f, nm->u.s, nm->len);
    for (size_t j = 0; use_order && j < i; j++)
      use_order = !(d->field_lens[j] == nm->len && !memcmp(d->fields[j], nm->u.s, nm->len));
    if (use_order) {
      d->fields[i] = nm->u.s;
      d->field_lens[i] = nm->len;
    }
  }
  for (size_t i = 0; i < f->len; i++) {
    if (!use_order) {
      d->fields[i] = f->u.members[i].key;
      d->field_lens[i] = f->u.members[i].klen;
    }
    const json_val *dir = json_obj_get(f, d->fields[i], d->field_lens[i]);
    if (!d->field_lens[i] || !dir || dir->type != JSON_STRING) return 0;
    d->desc[i] = dir->len == 4 && !memcmp(dir->u.s, "desc", 4);
    if (!d->desc[i] && !(dir->len == 3 && !memcmp(dir->u.s, "asc", 3))) return 0;
  }
  const json_val *p = json_obj_getz(map, "partial_filter_selector");
  if (p && p->type == JSON_OBJECT && p->len) {
    if (mango_parse(a, p, &d->psel, NULL)) return 0;
    d->partial = p;
  }
  sig_of(d, d->sig);
  return split_fields(a, d) ? DV_ENOMEM : 1;
}

static int name_cmp(const void *x, const void *y) {
  const mi_def *a = x, *b = y;
  int c = strcmp(a->ddoc, b->ddoc);
  return c ? c : strcmp(a->name, b->name);
}

int mi_from_ddoc(dv_arena *a, const json_val *doc, mi_def **out, size_t *n) {
  *out = NULL;
  *n = 0;
  const json_val *id = json_obj_getz(doc, "_id"), *lang = json_obj_getz(doc, "language");
  const json_val *views = json_obj_getz(doc, "views");
  if (!id || id->type != JSON_STRING || !is_design(id->u.s, id->len)) return 0;
  if (!lang || lang->type != JSON_STRING || lang->len != 5 || memcmp(lang->u.s, "query", 5)) return 0;
  if (!views || views->type != JSON_OBJECT || !views->len) return 0;
  const char *ddoc = arena_strndup(a, id->u.s, id->len);
  mi_def *d = arena_alloc(a, views->len * sizeof *d);
  if (!ddoc || !d) return DV_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < views->len; i++) {
    int rc = view_def(a, ddoc, &views->u.members[i], &d[k]);
    if (rc < 0) return rc;
    k += (size_t)rc;
  }
  if (k) qsort(d, k, sizeof *d, name_cmp);
  *out = d;
  *n = k;
  return 0;
}

/* The "def" GET _index shows: {"fields":[{"a":"asc"},…][,"partial_filter_selector":…]}. */
static int def_json(dv_arena *a, const mi_def *d, dv_buf *out) {
  json_val *o = json_new_object(a), *fs = json_new_array(a);
  if (!o || !fs) return DV_ENOMEM;
  for (size_t i = 0; i < d->n_fields; i++) {
    json_val *f = json_new_object(a);
    if (!f || json_obj_set(a, f, d->fields[i], d->field_lens[i], json_new_stringz(a, d->desc[i] ? "desc" : "asc")) ||
        json_arr_push(a, fs, f))
      return DV_ENOMEM;
  }
  if (json_obj_setz(a, o, "fields", fs)) return DV_ENOMEM;
  if (d->partial && json_obj_setz(a, o, "partial_filter_selector", (json_val *)d->partial)) return DV_ENOMEM;
  return json_write(out, o);
}

/* A def back from its registry JSON. */
static int def_parse(dv_arena *a, const char *ddoc, const char *name, const uint8_t *sig, const uint8_t *js,
                     size_t jn, mi_def *d) {
  json_val *v;
  json_opts jo = {.flags = JSON_COPY};
  if (json_parse(a, js, jn, &jo, &v, NULL)) return DV_ECORRUPT;
  const json_val *fs = json_obj_getz(v, "fields");
  if (!fs || fs->type != JSON_ARRAY) return DV_ECORRUPT;
  memset(d, 0, sizeof *d);
  d->ddoc = ddoc;
  d->name = name;
  d->n_fields = fs->len;
  d->fields = arena_alloc(a, (fs->len + 1) * sizeof *d->fields);
  d->field_lens = arena_alloc(a, (fs->len + 1) * sizeof *d->field_lens);
  d->desc = arena_alloc(a, fs->len + 1);
  if (!d->fields || !d->field_lens || !d->desc) return DV_ENOMEM;
  for (size_t i = 0; i < fs->len; i++) {
    const json_val *f = fs->u.items[i];
    if (f->type != JSON_OBJECT || f->len != 1) return DV_ECORRUPT;
    d->fields[i] = f->u.members[0].key;
    d->field_lens[i] = f->u.members[0].klen;
    const json_val *dir = f->u.members[0].val;
    d->desc[i] = dir->type == JSON_STRING && dir->len == 4 && !memcmp(dir->u.s, "desc", 4);
  }
  const json_val *p = json_obj_getz(v, "partial_filter_selector");
  if (p) {
    if (mango_parse(a, p, &d->psel, NULL)) return DV_ECORRUPT;
    d->partial = p;
  }
  memcpy(d->sig, sig, MI_SIG_LEN);
  return split_fields(a, d);
}

int mi_doc_key(const mi_def *d, const json_val *doc, dv_buf *key, dv_buf *val) {
  const json_val *id = json_obj_getz(doc, "_id");
  if (id && id->type == JSON_STRING && is_design(id->u.s, id->len)) return 0;
  const json_val *vals[MI_MAX_FIELDS];
  for (size_t i = 0; i < d->n_fields; i++)
    if (!(vals[i] = mango__get_path(doc, d->segs[i], d->nsegs[i]))) return 0;
  if (d->psel && !mango_match(d->psel, doc)) return 0;
  json_val arr = {.type = JSON_ARRAY, .len = d->n_fields, .cap = d->n_fields, .u.items = (json_val **)vals};
  int rc = collate_key(key, &arr);
  if (!rc) rc = json_write(val, &arr);
  if (!rc && (buf_error(key) || buf_error(val))) rc = DV_ENOMEM;
  return rc ? rc : 1;
}

/* ---- the registry and state rows ------------------------------------------------- */

typedef struct state {
  int found;
  int64_t refs;
  int ready;
  store_seq created;
  int have_cursor;
  store_seq cursor;
  int64_t built, total;
} state;

static int state_get(store_tx *t, const uint8_t *sig, int flags, state *s) {
  dv_buf k;
  buf_init(&k);
  tup_w w;
  key_sig(t, &k, &w, sig, "s");
  const uint8_t *v;
  size_t vl;
  memset(s, 0, sizeof *s);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(store_tx_kv(t), k.p, k.len, flags, &v, &vl, &s->found);
  buf_free(&k);
  if (rc || !s->found) return rc;
  tup_r r;
  tup_item a, b, c, d, e, f, g, h;
  tup_r_init(&r, v, vl);
  if (tup_get(&r, TUP_INT, &a) || tup_get(&r, TUP_INT, &b) || tup_get(&r, TUP_INT, &c) ||
      tup_get(&r, TUP_VS, &d) || tup_next(&r, &e) != 1 || tup_next(&r, &f) != 1 || tup_get(&r, TUP_INT, &g) ||
      tup_get(&r, TUP_INT, &h))
    return DV_ECORRUPT;
  s->refs = a.i64;
  s->ready = (int)b.i64;
  s->created.inc = c.i64;
  memcpy(s->created.vs, d.fixed, 12);
  if (e.type == TUP_INT && f.type == TUP_VS) {
    s->have_cursor = 1;
    s->cursor.inc = e.i64;
    memcpy(s->cursor.vs, f.fixed, 12);
  }
  s->built = g.i64;
  s->total = h.i64;
  return 0;
}

/* Write a state row; fresh: created is this commit (versionstamped value). */
static int state_put(store_tx *t, const uint8_t *sig, const state *s, int fresh) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  key_sig(t, &k, &w, sig, "s");
  tup_w_init(&w, &v);
  tup_int(&w, s->refs);
  tup_int(&w, s->ready);
  tup_int(&w, fresh ? store_tx_inc(t) : s->created.inc);
  if (fresh) tup_vs_incomplete(&w, 0xffff);
  else tup_vs(&w, s->created.vs);
  if (s->have_cursor) {
    tup_int(&w, s->cursor.inc);
    tup_vs(&w, s->cursor.vs);
  } else {
    tup_null(&w);
    tup_null(&w);
  }
  tup_int(&w, s->built);
  tup_int(&w, s->total);
  int rc = fresh ? tup_w_finish_vs(&w) : 0;
  if (!rc) rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : 0;
  if (!rc)
    rc = fresh ? kv_set_versionstamped_value(store_tx_kv(t), k.p, k.len, v.p, v.len)
               : kv_set(store_tx_kv(t), k.p, k.len, v.p, v.len);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

/* Clear everything of one signature. */
static int sig_drop(store_tx *t, const uint8_t *sig) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  key_sig(t, &b, &w, sig, NULL);
  buf_append(&e, b.p, b.len);
  buf_putc(&e, 0xff);
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : kv_clear_range(store_tx_kv(t), b.p, b.len, e.p, e.len);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

/* One registry entry. */
typedef struct reg {
  const char *name;
  size_t nlen;
  const uint8_t *sig;
  const uint8_t *def;
  size_t dlen;
} reg;

static int reg_decode(dv_arena *a, const uint8_t *v, size_t vl, reg **out, size_t *n) {
  tup_r r;
  tup_item x, y, z;
  size_t cap = 0, k = 0;
  reg *e = NULL;
  tup_r_init(&r, v, vl);
  *out = NULL;
  *n = 0;
  while (!tup_r_done(&r)) {
    if (tup_get(&r, TUP_STR, &x) || tup_get(&r, TUP_BYTES, &y) || tup_get(&r, TUP_STR, &z) ||
        y.s_len != MI_SIG_LEN)
      return DV_ECORRUPT;
    if (k == cap) {
      size_t nc = cap ? 2 * cap : 4;
      reg *ne = arena_alloc(a, nc * sizeof *ne);
      if (!ne) return DV_ENOMEM;
      if (k) memcpy(ne, e, k * sizeof *ne);
      e = ne;
      cap = nc;
    }
    char *nm = arena_alloc(a, x.s_len + 1);
    uint8_t *sg = arena_alloc(a, MI_SIG_LEN);
    uint8_t *df = arena_alloc(a, z.s_len + 1);
    if (!nm || !sg || !df) return DV_ENOMEM;
    tup_item_copy(&x, (uint8_t *)nm);
    nm[x.s_len] = 0;
    tup_item_copy(&y, sg);
    tup_item_copy(&z, df);
    df[z.s_len] = 0;
    e[k++] = (reg){nm, x.s_len, sg, df, z.s_len};
  }
  *out = e;
  *n = k;
  return 0;
}

static int reg_has(const reg *e, size_t n, const char *name, const uint8_t *sig) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(e[i].name, name) && !memcmp(e[i].sig, sig, MI_SIG_LEN)) return 1;
  return 0;
}

static int defs_have(const mi_def *d, size_t n, const char *name, const uint8_t *sig) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(d[i].name, name) && !memcmp(d[i].sig, sig, MI_SIG_LEN)) return 1;
  return 0;
}

/* A design document was written (nw: its new winner, NULL when purged). */
static int ddoc_changed(store_tx *t, dv_arena *a, const char *id, size_t n, const store_winner *nw) {
  mi_def *nd = NULL;
  size_t nn = 0;
  int rc = 0;
  if (nw && !nw->deleted) {
    json_val *body = (json_val *)nw->body;
    if (!body && (rc = store_tx_body(t, id, n, nw, a, &body))) return rc;
    json_val *doc = json_new_object(a);
    if (!doc || json_obj_setz(a, doc, "_id", json_new_string(a, id, n))) return DV_ENOMEM;
    for (size_t i = 0; body && i < body->len; i++)
      if (json_obj_set(a, doc, body->u.members[i].key, body->u.members[i].klen, body->u.members[i].val))
        return DV_ENOMEM;
    if ((rc = mi_from_ddoc(a, doc, &nd, &nn))) return rc;
  }
  dv_buf k;
  buf_init(&k);
  key_dd(t, &k, id, n);
  if (buf_error(&k)) return DV_ENOMEM;
  const uint8_t *v;
  size_t vl;
  int found;
  reg *old = NULL;
  size_t no = 0;
  rc = kv_get(store_tx_kv(t), k.p, k.len, 0, &v, &vl, &found);
  if (!rc && found) rc = reg_decode(a, v, vl, &old, &no);
  /* names gone (or redefined): their signature loses a reference */
  for (size_t i = 0; !rc && i < no; i++) {
    if (defs_have(nd, nn, old[i].name, old[i].sig)) continue;
    state s;
    if ((rc = state_get(t, old[i].sig, 0, &s)) || !s.found) continue;
    if (--s.refs > 0) rc = state_put(t, old[i].sig, &s, 0);
    else rc = sig_drop(t, old[i].sig);
  }
  /* names new: a reference, or a new index to build */
  for (size_t i = 0; !rc && i < nn; i++) {
    if (reg_has(old, no, nd[i].name, nd[i].sig)) continue;
    state s;
    if ((rc = state_get(t, nd[i].sig, 0, &s))) break;
    if (s.found) {
      s.refs++;
      rc = state_put(t, nd[i].sig, &s, 0);
    } else {
      s = (state){.refs = 1};
      rc = state_put(t, nd[i].sig, &s, 1);
    }
  }
  if (!rc && !nn && found) rc = kv_clear(store_tx_kv(t), k.p, k.len);
  if (!rc && nn) {
    dv_buf rv, dj;
    buf_init(&rv);
    buf_init(&dj);
    tup_w w;
    tup_w_init(&w, &rv);
    for (size_t i = 0; !rc && i < nn; i++) {
      buf_reset(&dj);
      if ((rc = def_json(a, &nd[i], &dj))) break;
      tup_strz(&w, nd[i].name);
      tup_bytes(&w, nd[i].sig, MI_SIG_LEN);
      tup_str(&w, (const char *)dj.p, dj.len);
    }
    if (!rc) rc = buf_error(&rv) ? DV_ENOMEM : kv_set(store_tx_kv(t), k.p, k.len, rv.p, rv.len);
    buf_free(&rv);
    buf_free(&dj);
  }
  buf_free(&k);
  return rc;
}

/* Every index of the database, with its state, in t. */
static int list_in(store_tx *t, dv_arena *a, int flags, mi_def **out, size_t *out_n) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  key_dd(t, &b, NULL, 0);
  buf_append(&e, b.p, b.len);
  buf_putc(&e, 0xff);
  *out = NULL;
  *out_n = 0;
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  kv_iter *it = NULL;
  if (!rc) rc = kv_iter_begin(store_tx_kv(t), b.p, b.len, e.p, e.len, 0, flags, &it);
  mi_def *d = NULL;
  size_t n = 0, cap = 0;
  kv_pair p;
  int k;
  while (!rc && (k = kv_iter_next(it, &p)) == 1) {
    tup_r r;
    tup_item idi;
    tup_r_init(&r, p.key + b.len, p.key_len - b.len);
    if (tup_get(&r, TUP_STR, &idi)) {
      rc = DV_ECORRUPT;
      break;
    }
    char *ddoc = arena_alloc(a, idi.s_len + 1);
    if (!ddoc) {
      rc = DV_ENOMEM;
      break;
    }
    tup_item_copy(&idi, (uint8_t *)ddoc);
    ddoc[idi.s_len] = 0;
    reg *g;
    size_t ng;
    if ((rc = reg_decode(a, p.val, p.val_len, &g, &ng))) break;
    for (size_t i = 0; !rc && i < ng; i++) {
      if (n == cap) {
        size_t nc = cap ? 2 * cap : 8;
        mi_def *nd = arena_alloc(a, nc * sizeof *nd);
        if (!nd) {
          rc = DV_ENOMEM;
          break;
        }
        if (n) memcpy(nd, d, n * sizeof *nd);
        d = nd;
        cap = nc;
      }
      if ((rc = def_parse(a, ddoc, g[i].name, g[i].sig, g[i].def, g[i].dlen, &d[n]))) break;
      n++;
    }
  }
  if (!rc && k < 0) rc = k;
  kv_iter_free(it);
  buf_free(&b);
  buf_free(&e);
  for (size_t i = 0; !rc && i < n; i++) {
    state s;
    if ((rc = state_get(t, d[i].sig, flags, &s))) break;
    d[i].ready = !s.found || s.ready;
    d[i].built = s.built;
    d[i].total = s.total;
    d[i].created = s.created;
    d[i].have_cursor = s.have_cursor;
    d[i].cursor = s.cursor;
  }
  if (!rc) {
    if (n) qsort(d, n, sizeof *d, name_cmp);
    *out = d;
    *out_n = n;
  }
  return rc;
}

struct list_arg {
  dv_arena *a;
  mi_def *d;
  size_t n;
};

static int list_fn(store_tx *t, void *arg) {
  struct list_arg *l = arg;
  return list_in(t, l->a, KV_SNAPSHOT, &l->d, &l->n);
}

int mi_list(store_db *db, dv_arena *a, mi_def **out, size_t *n) {
  struct list_arg l = {.a = a};
  int rc = store_db_run(db, list_fn, &l);
  if (!rc) {
    *out = l.d;
    *n = l.n;
  }
  return rc;
}

/* ---- the write hook ---------------------------------------------------------------- */

/* The hook's context: a database's indexes, one per signature. */
typedef struct mi_hook {
  dv_arena a;
  mi_def *d;
  size_t n;
} mi_hook;

/* Per-thread scratch for the hook (it runs inside store's transactions),
 * freed when the thread ends. */
static __thread dv_arena *hook_arena;
static pthread_key_t hook_key;
static pthread_once_t hook_once = PTHREAD_ONCE_INIT;

static void hook_arena_free(void *p) {
  arena_free(p);
  dv_free(p);
}
static void hook_key_init(void) { (void)pthread_key_create(&hook_key, hook_arena_free); }

static dv_arena *scratch(void) {
  if (!hook_arena) {
    pthread_once(&hook_once, hook_key_init);
    hook_arena = dv_malloc(sizeof *hook_arena);
    if (!hook_arena) return NULL;
    arena_init(hook_arena, 0);
    pthread_setspecific(hook_key, hook_arena);
  } else {
    arena_reset(hook_arena);
  }
  return hook_arena;
}

static int row_key(store_tx *t, dv_buf *b, const uint8_t *sig, const uint8_t *ek, size_t ekn, const char *id,
                   size_t n) {
  tup_w w;
  key_sig(t, b, &w, sig, "k");
  tup_bytes(&w, ek, ekn);
  tup_str(&w, id, n);
  return buf_error(b) ? DV_ENOMEM : 0;
}

static int back_key(store_tx *t, dv_buf *b, const uint8_t *sig, const char *id, size_t n) {
  tup_w w;
  key_sig(t, b, &w, sig, "b");
  tup_str(&w, id, n);
  return buf_error(b) ? DV_ENOMEM : 0;
}

static int skipped_add(store_tx *t, const uint8_t *sig) {
  dv_buf k;
  buf_init(&k);
  tup_w w;
  key_sig(t, &k, &w, sig, "n");
  uint8_t one[8] = {1};
  int rc = buf_error(&k) ? DV_ENOMEM : kv_atomic(store_tx_kv(t), KV_ADD, k.p, k.len, one, 8);
  buf_free(&k);
  return rc;
}

/* A row's value: (KeyJSON, Rev) from mi_doc_key's JSON and the doc's _rev. */
static int row_value(const json_val *doc, const dv_buf *json, dv_buf *out) {
  const json_val *rev = json_obj_getz(doc, "_rev");
  tup_w w;
  tup_w_init(&w, out);
  tup_str(&w, json->len ? (const char *)json->p : "", json->len);
  if (rev && rev->type == JSON_STRING) tup_str(&w, rev->u.s, rev->len);
  return buf_error(out) ? DV_ENOMEM : 0;
}

/* Put document id into index d (doc NULL: take it out). check_old: read
 * the back-index row for a row to replace. */
static int index_doc(store_tx *t, const mi_def *d, const char *id, size_t n, const json_val *doc, int check_old) {
  kv_txn *txn = store_tx_kv(t);
  dv_buf ek, val, bk, rk;
  buf_init(&ek);
  buf_init(&val);
  buf_init(&bk);
  buf_init(&rk);
  int has = 0, rc = 0;
  if (doc) {
    rc = mi_doc_key(d, doc, &ek, &val);
    if (rc > 0) has = 1, rc = 0;
  }
  if (!rc && has && (ek.len + n + MI_KEY_ROOM > KV_MAX_KEY || val.len > KV_MAX_VALUE)) {
    has = 0;
    rc = skipped_add(t, d->sig);
  }
  if (!rc) rc = back_key(t, &bk, d->sig, id, n);
  if (!rc && check_old) {
    const uint8_t *v;
    size_t vl;
    int found;
    rc = kv_get(txn, bk.p, bk.len, 0, &v, &vl, &found);
    if (!rc && found && !(has && vl == ek.len && !memcmp(v, ek.p, vl))) {
      rc = row_key(t, &rk, d->sig, v, vl, id, n);
      if (!rc) rc = kv_clear(txn, rk.p, rk.len);
      if (!rc && !has) rc = kv_clear(txn, bk.p, bk.len);
    }
  }
  if (!rc && has) {
    dv_buf rv;
    buf_init(&rv);
    buf_reset(&rk);
    rc = row_key(t, &rk, d->sig, ek.p, ek.len, id, n);
    if (!rc) rc = row_value(doc, &val, &rv);
    if (!rc) rc = kv_set(txn, rk.p, rk.len, rv.p, rv.len);
    buf_free(&rv);
    if (!rc) rc = kv_set(txn, bk.p, bk.len, ek.p, ek.len);
  }
  buf_free(&ek);
  buf_free(&val);
  buf_free(&bk);
  buf_free(&rk);
  return rc;
}

/* {"_id", "_rev", body…} for key extraction. */
static json_val *doc_of(dv_arena *a, const char *id, size_t n, const store_rev *rev, const json_val *body) {
  json_val *d = json_new_object(a);
  dv_buf b;
  buf_init(&b);
  store_rev_format(rev, &b);
  int bad = !d || buf_error(&b) || json_obj_setz(a, d, "_id", json_new_string(a, id, n)) ||
            json_obj_setz(a, d, "_rev", json_new_string(a, (const char *)b.p, b.len));
  buf_free(&b);
  if (bad) return NULL;
  for (size_t i = 0; body && i < body->len; i++)
    if (json_obj_set(a, d, body->u.members[i].key, body->u.members[i].klen, body->u.members[i].val)) return NULL;
  return d;
}

static int ix_update(void *ctx, store_tx *t, const char *id, size_t n, const store_winner *ow,
                     const store_winner *nw) {
  mi_hook *h = ctx;
  int design = is_design(id, n);
  if (!design && !h->n) return 0; /* no index: nothing to do, nothing read */
  dv_arena *a = scratch();
  if (!a) return DV_ENOMEM;
  if (design) return ddoc_changed(t, a, id, n, nw);
  /* the winner stayed, its changes row moved: only an index still being
   * built needs it (the build reads the changes subspace below its
   * creation and will not meet this document again) */
  int same = ow && nw && ow->deleted == nw->deleted && !store_rev_cmp(ow->rev, nw->rev);
  if (same) {
    size_t i = 0;
    while (i < h->n && h->d[i].ready) i++;
    if (i == h->n) return 0;
  }
  json_val *doc = NULL;
  if (nw && !nw->deleted) {
    json_val *body = (json_val *)nw->body;
    int rc;
    if (!body && (rc = store_tx_body(t, id, n, nw, a, &body))) return rc;
    if (!(doc = doc_of(a, id, n, nw->rev, body))) return DV_ENOMEM;
  }
  for (size_t i = 0; i < h->n; i++) {
    if (same && h->d[i].ready) continue;
    int rc = index_doc(t, &h->d[i], id, n, doc, ow != NULL);
    if (rc) return rc;
  }
  return 0;
}

struct hook_load {
  mi_hook *h;
};

static int hook_fn(store_tx *t, void *arg) {
  mi_hook *h = arg;
  arena_reset(&h->a);
  mi_def *d;
  size_t n;
  int rc = list_in(t, &h->a, KV_SNAPSHOT, &d, &n);
  if (rc) return rc;
  /* one entry per signature: they share rows */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = 0;
    while (j < k && memcmp(d[j].sig, d[i].sig, MI_SIG_LEN)) j++;
    if (j == k) d[k++] = d[i];
  }
  h->d = d;
  h->n = k;
  return 0;
}

int mindex_hooks_load(store *s, const char *name, size_t len, store_hooks *out) {
  char nm[STORE_MAX_DBNAME + 1];
  if (len > STORE_MAX_DBNAME) return 0;
  memcpy(nm, name, len);
  nm[len] = 0;
  store_db *db;
  int rc = store_db_open(s, nm, &db);
  if (rc) return rc == DV_ENO_DB ? 0 : rc;
  mi_hook *h = dv_calloc(1, sizeof *h);
  if (!h) {
    store_db_close(db);
    return DV_ENOMEM;
  }
  arena_init(&h->a, 0);
  rc = store_db_run(db, hook_fn, h);
  store_db_close(db);
  if (rc) {
    arena_free(&h->a);
    dv_free(h);
    return rc;
  }
  for (size_t i = 0; i < h->n; i++)
    if (!h->d[i].ready) {
      mindex_kick(name, len);
      break;
    }
  out->index_update = ix_update;
  out->index_ctx = h;
  return 0;
}

void mindex_hooks_unload(store_hooks *hk) {
  mi_hook *h = hk->index_ctx;
  if (!h || hk->index_update != ix_update) return;
  arena_free(&h->a);
  dv_free(h);
  hk->index_ctx = NULL;
}

/* ---- the builder ------------------------------------------------------------------- */

typedef struct kick {
  struct kick *next;
  size_t len;
  char name[];
} kick;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;    /* work queued, or stop */
  pthread_cond_t done;  /* a build batch committed */
  pthread_t th;
  int started, stop;
  store *s;
  kick *q;
  uint64_t batches;     /* committed build batches (waiters) */
  mi_task tasks[16];
  size_t n_tasks;
} B = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

void mindex_kick(const char *name, size_t len) {
  pthread_mutex_lock(&B.mu);
  if (B.started && !B.stop) {
    kick *k;
    for (k = B.q; k; k = k->next)
      if (k->len == len && !memcmp(k->name, name, len)) break;
    if (!k && (k = dv_malloc(sizeof *k + len + 1))) {
      k->len = len;
      memcpy(k->name, name, len);
      k->name[len] = 0;
      k->next = B.q;
      B.q = k;
      pthread_cond_signal(&B.cv);
    }
  }
  pthread_mutex_unlock(&B.mu);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct batch {
  const mi_def *d;   /* the index (one def of its signature) */
  dv_arena a;
  int finished;      /* out: built, or gone */
  int64_t built, total;
};

static int batch_fn(store_tx *t, void *arg) {
  struct batch *b = arg;
  arena_reset(&b->a);
  b->finished = 0;
  state s;
  int rc = state_get(t, b->d->sig, 0, &s);
  if (rc) return rc;
  if (!s.found || s.ready) {
    b->finished = 1;
    return 0;
  }
  store_change *rows;
  int n, more;
  rc = store_tx_changes(t, s.have_cursor ? &s.cursor : NULL, &s.created, BUILD_BATCH, 0, &b->a, &rows, &n, &more);
  int64_t t0 = now_ms();
  int i;
  for (i = 0; !rc && i < n; i++) {
    store_change *c = &rows[i];
    if (!c->deleted && !is_design(c->id, c->id_len)) {
      json_val *doc;
      rc = store_tx_doc(t, c->id, c->id_len, 0, &b->a, &doc);
      if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) {
        rc = 0;
        continue;
      }
      if (!rc) rc = index_doc(t, b->d, c->id, c->id_len, doc, 0);
      s.built++;
    }
    if (now_ms() - t0 > BUILD_BATCH_MS) {
      i++;
      more = 1;
      break;
    }
  }
  if (rc) return rc;
  if (i) {
    s.have_cursor = 1;
    s.cursor = rows[i - 1].seq;
  }
  if (!more && i == n) s.ready = 1;
  if (s.total < s.built) s.total = s.built;
  rc = state_put(t, b->d->sig, &s, 0);
  b->finished = s.ready;
  b->built = s.built;
  b->total = s.total;
  return rc;
}

static void task_set(const char *db, const mi_def *d, int64_t done, int64_t total, int end) {
  pthread_mutex_lock(&B.mu);
  size_t i = 0;
  while (i < B.n_tasks && (strcmp(B.tasks[i].db, db) || strcmp(B.tasks[i].ddoc, d->ddoc) ||
                           strcmp(B.tasks[i].name, d->name)))
    i++;
  if (end) {
    if (i < B.n_tasks) B.tasks[i] = B.tasks[--B.n_tasks];
  } else {
    if (i == B.n_tasks && B.n_tasks < sizeof B.tasks / sizeof *B.tasks) {
      mi_task *k = &B.tasks[B.n_tasks++];
      memset(k, 0, sizeof *k);
      snprintf(k->db, sizeof k->db, "%s", db);
      snprintf(k->ddoc, sizeof k->ddoc, "%s", d->ddoc);
      snprintf(k->name, sizeof k->name, "%s", d->name);
      k->started_on = time(NULL);
    }
    if (i < B.n_tasks) {
      B.tasks[i].changes_done = done;
      B.tasks[i].total_changes = total;
      B.tasks[i].updated_on = time(NULL);
    }
  }
  B.batches++;
  pthread_cond_broadcast(&B.done);
  pthread_mutex_unlock(&B.mu);
}

size_t mindex_tasks(mi_task *out, size_t max) {
  pthread_mutex_lock(&B.mu);
  size_t n = B.n_tasks < max ? B.n_tasks : max;
  memcpy(out, B.tasks, n * sizeof *out);
  pthread_mutex_unlock(&B.mu);
  return n;
}

static int stopping(void) {
  pthread_mutex_lock(&B.mu);
  int s = B.stop;
  pthread_mutex_unlock(&B.mu);
  return s;
}

/* Build every unfinished index of one database. */
static void build_db(const char *name) {
  store_db *db;
  if (store_db_open(B.s, name, &db)) return;
  dv_arena la;
  arena_init(&la, 0);
  mi_def *d;
  size_t n;
  if (!mi_list(db, &la, &d, &n)) {
    store_db_info info;
    int64_t total = store_db_info_get(db, &info) ? 0 : info.doc_count;
    for (size_t i = 0; i < n && !stopping(); i++) {
      if (d[i].ready) continue;
      int dup = 0;
      for (size_t j = 0; j < i; j++) dup |= !memcmp(d[j].sig, d[i].sig, MI_SIG_LEN);
      if (dup) continue;
      struct batch b = {.d = &d[i]};
      arena_init(&b.a, 0);
      task_set(name, &d[i], d[i].built, total, 0);
      while (!stopping()) {
        if (store_db_run(db, batch_fn, &b)) break;
        task_set(name, &d[i], b.built, total > b.built ? total : b.built, 0);
        if (b.finished) break;
      }
      task_set(name, &d[i], 0, 0, 1);
      arena_free(&b.a);
    }
  }
  arena_free(&la);
  store_db_close(db);
}

static int list_cb(void *arg, const char *name, size_t len) {
  (void)arg;
  mindex_kick(name, len);
  return stopping();
}

static void *builder(void *arg) {
  dv_thread_name("dv-mango-build");
  (void)arg;
  store_range r;
  store_range_init(&r);
  if (store_db_list(B.s, &r, list_cb, NULL)) { /* resume builds after a restart */
  }
  pthread_mutex_lock(&B.mu);
  while (!B.stop) {
    kick *k = B.q;
    if (!k) {
      pthread_cond_wait(&B.cv, &B.mu);
      continue;
    }
    B.q = k->next;
    pthread_mutex_unlock(&B.mu);
    build_db(k->name);
    dv_free(k);
    pthread_mutex_lock(&B.mu);
  }
  pthread_mutex_unlock(&B.mu);
  return NULL;
}

int mindex_start(store *s) {
  pthread_mutex_lock(&B.mu);
  B.s = s;
  B.stop = 0;
  int rc = B.started ? 0 : pthread_create(&B.th, NULL, builder, NULL) ? DV_ENOMEM : 0;
  if (!rc) B.started = 1;
  pthread_mutex_unlock(&B.mu);
  return rc;
}

void mindex_stop(void) {
  pthread_mutex_lock(&B.mu);
  int was = B.started;
  B.stop = 1;
  pthread_cond_broadcast(&B.cv);
  pthread_cond_broadcast(&B.done);
  pthread_mutex_unlock(&B.mu);
  if (was) pthread_join(B.th, NULL);
  pthread_mutex_lock(&B.mu);
  B.started = 0;
  while (B.q) {
    kick *k = B.q;
    B.q = k->next;
    dv_free(k);
  }
  B.n_tasks = 0;
  pthread_mutex_unlock(&B.mu);
}

struct wait_arg {
  const uint8_t *sig;
  state s;
};

static int wait_fn(store_tx *t, void *arg) {
  struct wait_arg *w = arg;
  return state_get(t, w->sig, KV_SNAPSHOT, &w->s);
}

int mindex_wait(store_db *db, const uint8_t sig[MI_SIG_LEN], int timeout_ms) {
  int64_t end = now_ms() + timeout_ms;
  const char *name = store_db_name(db);
  for (;;) {
    struct wait_arg w = {.sig = sig};
    int rc = store_db_run(db, wait_fn, &w);
    if (rc) return rc;
    if (!w.s.found) return DV_ENOT_FOUND;
    if (w.s.ready) return 0;
    mindex_kick(name, strlen(name));
    int64_t left = end - now_ms();
    if (left <= 0) return DV_ETIMED_OUT;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ms = left < 200 ? left : 200;
    ts.tv_nsec += ms * 1000000;
    ts.tv_sec += ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    pthread_mutex_lock(&B.mu);
    pthread_cond_timedwait(&B.done, &B.mu, &ts);
    pthread_mutex_unlock(&B.mu);
  }
}

/* ---- scans --------------------------------------------------------------------------- */

typedef struct scan_row {
  const char *id;
  size_t id_len;
  json_val *key;
  json_val *doc;
  uint8_t *pos;
  size_t pos_len;
} scan_row;

struct scan {
  const mi_scan_opts *o;
  size_t ri;          /* the range being read (in walk order) */
  dv_buf last;        /* the suffix (after (I,Sig,"k")) of the last row read; empty: none yet */
  int have_last;
  int range_done;
  dv_arena a;
  scan_row *rows;
  int n;
  int64_t keys;
};

static int key_cmp(const dv_buf *x, const dv_buf *y) {
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->p, y->p, n);
  return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

/* Bounds of range r under prefix K (K + \x01 + esc(start) …). */
static void bounds(const dv_buf *K, const mi_range *r, dv_buf *b, dv_buf *e) {
  buf_append(b, K->p, K->len);
  if (r && r->start_len) {
    buf_putc(b, 0x01);
    esc(b, r->start, r->start_len);
  }
  buf_append(e, K->p, K->len);
  if (r && r->end) {
    buf_putc(e, 0x01);
    esc(e, r->end, r->end_len);
  }
  buf_putc(e, 0xff);
}

static int scan_fn(store_tx *t, void *arg) {
  struct scan *s = arg;
  const mi_scan_opts *o = s->o;
  arena_reset(&s->a);
  s->n = 0;
  s->range_done = 0;
  dv_buf K, b, e;
  buf_init(&K);
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  key_sig(t, &K, &w, o->sig, "k");
  size_t nr = o->n_ranges ? o->n_ranges : 1;
  size_t idx = o->descending ? nr - 1 - s->ri : s->ri;
  bounds(&K, o->n_ranges ? &o->ranges[idx] : NULL, &b, &e);
  /* resume strictly after the last row (or the bookmark) */
  const uint8_t *after = s->have_last ? s->last.p : o->after;
  size_t after_len = s->have_last ? s->last.len : o->after_len;
  if (after && after_len) {
    dv_buf p;
    buf_init(&p);
    buf_append(&p, K.p, K.len);
    buf_append(&p, after, after_len);
    if (!o->descending) {
      buf_putc(&p, 0); /* the first key after it */
      if (key_cmp(&p, &b) > 0) {
        buf_reset(&b);
        buf_append(&b, p.p, p.len);
      }
    } else if (key_cmp(&p, &e) < 0) {
      buf_reset(&e);
      buf_append(&e, p.p, p.len);
    }
    buf_free(&p);
  }
  int rc = buf_error(&K) || buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  kv_pair *pairs = NULL;
  int n = 0, more = 0;
  int nonempty = key_cmp(&b, &e) < 0;
  if (!rc && nonempty)
    rc = kv_get_range(store_tx_kv(t), b.p, b.len, e.p, e.len, SCAN_BATCH,
                      KV_SNAPSHOT | (o->descending ? KV_REVERSE : 0), &pairs, &n, &more);
  if (!rc && n && !(s->rows = arena_alloc(&s->a, (size_t)n * sizeof *s->rows))) rc = DV_ENOMEM;
  for (int i = 0; !rc && i < n; i++) {
    scan_row *row = &s->rows[i];
    tup_r r;
    tup_item eki, idi;
    tup_r_init(&r, pairs[i].key + K.len, pairs[i].key_len - K.len);
    if (tup_get(&r, TUP_BYTES, &eki) || tup_get(&r, TUP_STR, &idi)) {
      rc = DV_ECORRUPT;
      break;
    }
    char *id = arena_alloc(&s->a, idi.s_len + 1);
    row->pos_len = pairs[i].key_len - K.len;
    row->pos = arena_alloc(&s->a, row->pos_len);
    if (!id || !row->pos) {
      rc = DV_ENOMEM;
      break;
    }
    tup_item_copy(&idi, (uint8_t *)id);
    id[idi.s_len] = 0;
    memcpy(row->pos, pairs[i].key + K.len, row->pos_len);
    row->id = id;
    row->id_len = idi.s_len;
    json_opts jo = {.flags = JSON_COPY};
    tup_r vr;
    tup_item kj, rv;
    tup_r_init(&vr, pairs[i].val, pairs[i].val_len);
    int have_rev = 0;
    if (tup_get(&vr, TUP_STR, &kj) || json_parse(&s->a, kj.s, kj.s_len, &jo, &row->key, NULL)) {
      rc = DV_ECORRUPT;
      break;
    }
    if (!tup_r_done(&vr) && tup_get(&vr, TUP_STR, &rv) == 0) have_rev = 1;
    row->doc = NULL;
    if (!o->covering && have_rev && !o->doc_flags && rv.s_len == rv.s_enc_len) {
      store_rev lr;
      rc = store_rev_parse((const char *)rv.s, rv.s_len, &s->a, &lr);
      if (!rc) rc = store_tx_leaf_doc(t, id, idi.s_len, &lr, &s->a, &row->doc);
    } else if (!o->covering) {
      rc = store_tx_doc(t, id, idi.s_len, o->doc_flags, &s->a, &row->doc);
      if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) rc = DV_ECORRUPT; /* a row without its document */
    }
  }
  if (!rc) {
    s->n = n;
    s->range_done = !more;
  }
  buf_free(&K);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

int mi_scan(store_db *db, const mi_scan_opts *o, mi_row_cb cb, void *arg, int64_t *keys) {
  struct scan s = {.o = o};
  arena_init(&s.a, 0);
  buf_init(&s.last);
  size_t nr = o->n_ranges ? o->n_ranges : 1;
  int rc = 0;
  *keys = 0;
  while (!rc && s.ri < nr) {
    rc = store_db_run(db, scan_fn, &s);
    if (rc) break;
    s.keys += s.n;
    for (int i = 0; !rc && i < s.n; i++) {
      mi_row row = {.id = s.rows[i].id, .id_len = s.rows[i].id_len, .key = s.rows[i].key, .doc = s.rows[i].doc,
                    .pos = s.rows[i].pos, .pos_len = s.rows[i].pos_len};
      rc = cb(arg, &row);
    }
    if (rc) break;
    if (s.n) {
      buf_reset(&s.last);
      buf_append(&s.last, s.rows[s.n - 1].pos, s.rows[s.n - 1].pos_len);
      if (buf_error(&s.last)) rc = DV_ENOMEM;
      s.have_last = 1;
    }
    if (s.range_done) s.ri++;
  }
  *keys = s.keys;
  arena_free(&s.a);
  buf_free(&s.last);
  return rc == 1 ? 0 : rc;
}

/* ---- checking an index against a rebuild ------------------------------------------- */

typedef struct ck_row {
  uint8_t *k; /* the key suffix after (I,Sig,sub) */
  size_t kl;
  uint8_t *v;
  size_t vl;
} ck_row;

typedef struct ck_list {
  ck_row *r;
  size_t n, cap;
} ck_list;

static int ck_push(dv_arena *a, ck_list *l, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 64;
    ck_row *nr = arena_alloc(a, nc * sizeof *nr);
    if (!nr) return DV_ENOMEM;
    if (l->n) memcpy(nr, l->r, l->n * sizeof *nr);
    l->r = nr;
    l->cap = nc;
  }
  ck_row *r = &l->r[l->n];
  r->k = arena_alloc(a, kl + 1);
  r->v = arena_alloc(a, vl + 1);
  if (!r->k || !r->v) return DV_ENOMEM;
  memcpy(r->k, k, kl);
  memcpy(r->v, v, vl);
  r->kl = kl;
  r->vl = vl;
  l->n++;
  return 0;
}

static int ck_cmp(const void *x, const void *y) {
  const ck_row *a = x, *b = y;
  size_t n = a->kl < b->kl ? a->kl : b->kl;
  int c = memcmp(a->k, b->k, n);
  return c ? c : a->kl < b->kl ? -1 : a->kl > b->kl;
}

struct ck_read {
  const uint8_t *sig;
  const char *sub;
  dv_arena *a;
  ck_list *l;
  dv_buf from;   /* resume after this full key; empty: from the start */
  int done;
};

static int ck_read_fn(store_tx *t, void *arg) {
  struct ck_read *c = arg;
  dv_buf K, b, e;
  buf_init(&K);
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  key_sig(t, &K, &w, c->sig, c->sub);
  if (c->from.len) {
    buf_append(&b, c->from.p, c->from.len);
    buf_putc(&b, 0);
  } else {
    buf_append(&b, K.p, K.len);
  }
  buf_append(&e, K.p, K.len);
  buf_putc(&e, 0xff);
  kv_pair *p;
  int n = 0, more = 0;
  int rc = buf_error(&K) || buf_error(&b) || buf_error(&e) ? DV_ENOMEM
           : kv_get_range(store_tx_kv(t), b.p, b.len, e.p, e.len, 1000, KV_SNAPSHOT, &p, &n, &more);
  size_t before = c->l->n;
  for (int i = 0; !rc && i < n; i++)
    rc = ck_push(c->a, c->l, p[i].key + K.len, p[i].key_len - K.len, p[i].val, p[i].val_len);
  if (!rc && n) {
    buf_reset(&c->from);
    buf_append(&c->from, p[n - 1].key, p[n - 1].key_len);
    if (buf_error(&c->from)) rc = DV_ENOMEM;
  }
  if (rc) c->l->n = before; /* an attempt that failed leaves nothing */
  c->done = !more;
  buf_free(&K);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

static int ck_read(store_db *db, const uint8_t *sig, const char *sub, dv_arena *a, ck_list *l) {
  struct ck_read c = {.sig = sig, .sub = sub, .a = a, .l = l};
  buf_init(&c.from);
  int rc = 0;
  while (!rc && !c.done) rc = store_db_run(db, ck_read_fn, &c);
  buf_free(&c.from);
  return rc;
}

struct ck_docs {
  const mi_def *d;
  dv_arena *a;
  ck_list rows, back;
  int rc;
};

static int ck_doc_cb(void *arg, const store_doc_row *row) {
  struct ck_docs *c = arg;
  dv_buf ek, val, k;
  buf_init(&ek);
  buf_init(&val);
  buf_init(&k);
  int rc = mi_doc_key(c->d, row->doc, &ek, &val);
  if (rc == 1 && !(ek.len + row->id_len + MI_KEY_ROOM > KV_MAX_KEY || val.len > KV_MAX_VALUE)) {
    tup_w w;
    tup_w_init(&w, &k);
    tup_bytes(&w, ek.p, ek.len);
    tup_str(&w, row->id, row->id_len);
    dv_buf rv;
    buf_init(&rv);
    rc = buf_error(&k) ? DV_ENOMEM : row_value(row->doc, &val, &rv);
    if (!rc) rc = ck_push(c->a, &c->rows, k.p, k.len, rv.p, rv.len);
    buf_free(&rv);
    buf_reset(&k);
    tup_w_init(&w, &k);
    tup_str(&w, row->id, row->id_len);
    if (!rc) rc = buf_error(&k) ? DV_ENOMEM : ck_push(c->a, &c->back, k.p, k.len, ek.p, ek.len);
  } else if (rc == 1) {
    rc = 0;
  }
  buf_free(&ek);
  buf_free(&val);
  buf_free(&k);
  return rc;
}

/* The last string element of a row key (its document id), for messages. */
static const char *ck_tail(const ck_row *r) {
  static __thread char out[128];
  size_t i = r->kl;
  while (i > 0 && r->k[i - 1] != 0x02) i--;
  size_t n = r->kl - i;
  if (n > sizeof out - 1) n = sizeof out - 1;
  memcpy(out, r->k + i, n);
  out[n && out[n - 1] == 0 ? n - 1 : n] = 0;
  return out;
}

static int ck_same(dv_arena *a, const char *what, const ck_list *x, const ck_list *y, const char **why) {
  for (size_t i = 0; i < x->n || i < y->n; i++) {
    const ck_row *p = i < x->n ? &x->r[i] : NULL, *q = i < y->n ? &y->r[i] : NULL;
    if (p && q && p->kl == q->kl && !memcmp(p->k, q->k, p->kl) && p->vl == q->vl && !memcmp(p->v, q->v, p->vl))
      continue;
    dv_buf b;
    buf_init(&b);
    buf_printf(&b, "%s: row %zu differs (index has %zu rows, a rebuild %zu)", what, i, x->n, y->n);
    if (p && p->vl < 200) buf_printf(&b, "; index row %s value %.*s", ck_tail(p), (int)p->vl, (const char *)p->v);
    if (q && q->vl < 200) buf_printf(&b, "; rebuilt row %s value %.*s", ck_tail(q), (int)q->vl, (const char *)q->v);
    *why = buf_error(&b) ? what : arena_strndup(a, (const char *)b.p, b.len);
    buf_free(&b);
    return DV_ECORRUPT;
  }
  return 0;
}

int mi_check(store_db *db, const mi_def *d, dv_arena *a, int64_t *rows, const char **why) {
  ck_list rk = {0}, bk = {0};
  struct ck_docs c = {.d = d, .a = a};
  *why = NULL;
  int rc = ck_read(db, d->sig, "k", a, &rk);
  if (!rc) rc = ck_read(db, d->sig, "b", a, &bk);
  store_range r;
  store_range_init(&r);
  if (!rc) rc = store_all_docs(db, STORE_ALL, &r, 1, 0, ck_doc_cb, &c);
  if (rc) return rc;
  if (c.rows.n) qsort(c.rows.r, c.rows.n, sizeof *c.rows.r, ck_cmp);
  if (c.back.n) qsort(c.back.r, c.back.n, sizeof *c.back.r, ck_cmp);
  if (rows) *rows = (int64_t)rk.n;
  rc = ck_same(a, "index rows", &rk, &c.rows, why);
  if (!rc) rc = ck_same(a, "back-index rows", &bk, &c.back, why);
  return rc;
}
