/* edit.c — writing documents: interactive edits and new_edits=false
 * merges, over the revisions subspace with seed 000's cost profile.
 *
 * Data flow of store_update:
 *   1. Outside any transaction, per edit: check the id, explode the body
 *      once into key suffixes (body.h) — this checks max_document_size,
 *      the 10 KB path limit and the KV budget — and digest it (rev hash).
 *      A second edit of an id already in the call gets DV_ECONFLICT.
 *   2. Group the edits into transactions of at most ST_TXN_BUDGET bytes.
 *      Each group runs in st_run with a TxId (commit_unknown_result safe)
 *      — or, for store_update_async, in st_run_async: the group's commit
 *      completes on the kv thread, and the next group starts on a store
 *      worker (work.c). Both calls are one path (`update` below), apart
 *      from which st_run they call and who waits.
 *   3. In the transaction, first, when the group has two or more creates
 *      (no parent): one snapshot range read of (P,"r") over their ids'
 *      span, limit 1; empty, it is their read conflict range and settles
 *      that none of them exists (creates_absent). Then per edit (reads of
 *      the revisions subspace):
 *        create, no parent      range (P,"r",Id) limit 1 (none when
 *                               creates_absent settled it); its first KV
 *                               is the winner unless the doc has several
 *                               branches: then reverse range limit 1
 *        extend the winner      1 point read (the parent's KV)
 *        extend a losing branch point read + reverse range limit 1 (2 trips)
 *        delete the winner      reverse range limit 2 ending at the parent
 *        new_edits=false        the whole (P,"r",Id) range
 *      then: clear the replaced leaf's KV and its body range, write the
 *      new leaf (the winner's value gets the Sequence as a versionstamped
 *      value), rewrite the old/new winner's KV when its role or Sequence
 *      changes, write the body, clear the old changes row (its Sequence is
 *      on the old winner) and write the new one with a versionstamped key
 *      (user version = the edit's index among this transaction's writes).
 *   4. Once per transaction: counter ADDs, (P,"m","update_seq"), the
 *      db_updates queue entry, the TxId.
 * Rules (seed 000 "Key Changes", DESIGN.md "Update paths"): an edit must
 * name a live leaf, else 409; no parent on a doc whose winner is deleted
 * extends the deleted winner; a new_edits=false path that adds no
 * revision writes nothing.
 */
#include <stddef.h>
#include <string.h>

#include "store/body.h"
#include "store/store_int.h"
#include "util/alloc.h"
#include "util/b64.h"
#include "util/buf.h"
#include "util/md5.h"
#include "util/stats.h"

/* ---- ids and special members ------------------------------------------------ */

/* A name CouchDB accepts: non-empty UTF-8, not starting with '_'. */
static int att_name_ok(const char *p, size_t n) {
  return n && p[0] != '_' && !json_utf8_check(p, n, NULL) && !memchr(p, 0, n);
}

static int att_int(const json_val *o, const char *k, int64_t *out) {
  const json_val *v = json_obj_getz(o, k);
  if (!v) return 0;
  if (v->type != JSON_NUMBER || json_num_int64(v->u.s, v->len, out) || *out < 0) return DV_EBAD_ATT;
  return 0;
}

/* "_attachments": {name: {stub | data | follows, …}} into e->atts. */
static int atts_from_json(dv_arena *a, const json_val *v, store_edit *e) {
  if (v->type != JSON_OBJECT) return DV_EBAD_ATT;
  store_att *atts = arena_calloc(a, (v->len ? v->len : 1) * sizeof *atts);
  if (!atts) return DV_ENOMEM;
  for (size_t i = 0; i < v->len; i++) {
    const json_member *m = &v->u.members[i];
    const json_val *o = m->val;
    store_att *t = &atts[i];
    if (!att_name_ok(m->key, m->klen) || o->type != JSON_OBJECT) return DV_EBAD_ATT;
    t->name = m->key;
    t->name_len = m->klen;
    const json_val *ct = json_obj_getz(o, "content_type"), *stub = json_obj_getz(o, "stub");
    const json_val *data = json_obj_getz(o, "data"), *fol = json_obj_getz(o, "follows");
    const json_val *dig = json_obj_getz(o, "digest"), *enc = json_obj_getz(o, "encoding");
    if (ct && ct->type == JSON_STRING) t->type = ct->u.s, t->type_len = ct->len;
    if (att_int(o, "revpos", &t->revpos) || att_int(o, "length", &t->length) ||
        att_int(o, "encoded_length", &t->enc_length))
      return DV_EBAD_ATT;
    if (dig && dig->type == JSON_STRING && dig->len > 4 && !memcmp(dig->u.s, "md5-", 4)) {
      uint8_t md5[18]; /* dv_b64_decoded_max(24) */
      size_t n;
      if (dig->len - 4 <= 24 && !dv_b64_decode(dig->u.s + 4, dig->len - 4, 0, md5, &n) && n == 16) {
        memcpy(t->md5, md5, 16);
        t->has_md5 = 1;
      }
    }
    if (stub && stub->type == JSON_BOOL && stub->b) {
      t->stub = 1;
    } else if (data && data->type == JSON_STRING) {
      uint8_t *p = arena_alloc(a, dv_b64_decoded_max(data->len) + 1);
      size_t n;
      if (!p) return DV_ENOMEM;
      if (dv_b64_decode(data->u.s, data->len, 0, p, &n)) return DV_EBAD_ATT;
      t->data = p;
      t->data_len = n;
      t->length = (int64_t)n;
      t->has_md5 = 0; /* CouchDB computes inline data's digest itself */
    } else if (fol && fol->type == JSON_BOOL && fol->b) {
      t->follows = 1;
      t->gzip = enc && enc->type == JSON_STRING && enc->len == 4 && !memcmp(enc->u.s, "gzip", 4);
      if (!t->gzip) t->enc_length = t->length;
    } else {
      return DV_EBAD_ATT;
    }
  }
  e->atts = atts;
  e->n_atts = v->len;
  return 0;
}

int store_edit_from_json(dv_arena *a, const json_val *doc, int new_edits, store_edit *e) {
  memset(e, 0, sizeof *e);
  if (!doc || doc->type != JSON_OBJECT) return DV_ENOT_OBJECT;
  json_val *body = json_new_object(a);
  if (!body) return DV_ENOMEM;
  const json_val *rev = NULL, *revisions = NULL;
  for (size_t i = 0; i < doc->len; i++) {
    const json_member *m = &doc->u.members[i];
    switch (store_doc_member(m->key, m->klen)) {
    case STORE_MEMBER_USER:
    case STORE_MEMBER_KEPT:
      if (json_obj_set(a, body, m->key, m->klen, m->val)) return DV_ENOMEM;
      break;
    case STORE_MEMBER_ID:
      if (m->val->type != JSON_STRING) return DV_EBAD_DOCID;
      e->id = m->val->u.s;
      e->id_len = m->val->len;
      break;
    case STORE_MEMBER_REV:
      if (m->val->type != JSON_STRING) return DV_EBAD_REV;
      rev = m->val;
      break;
    case STORE_MEMBER_DELETED:
      if (m->val->type != JSON_BOOL) return DV_EDOC_FIELD;
      e->deleted = m->val->b;
      break;
    case STORE_MEMBER_REVISIONS:
      revisions = m->val;
      break;
    case STORE_MEMBER_IGNORED:
      break;
    case STORE_MEMBER_ATTACHMENTS: {
      int rc = atts_from_json(a, m->val, e);
      if (rc) return rc;
      break;
    }
    case STORE_MEMBER_BAD:
      return DV_EDOC_FIELD;
    }
  }
  e->body = body;
  store_rev *path = NULL;
  size_t n = 0;
  if (revisions) {
    const json_val *start = json_obj_getz(revisions, "start");
    const json_val *ids = json_obj_getz(revisions, "ids");
    int64_t st;
    if (revisions->type != JSON_OBJECT || !start || start->type != JSON_NUMBER || !ids ||
        ids->type != JSON_ARRAY || ids->len == 0 || json_num_int64(start->u.s, start->len, &st) ||
        st < (int64_t)ids->len)
      return DV_EBAD_REV;
    path = arena_alloc(a, ids->len * sizeof *path);
    if (!path) return DV_ENOMEM;
    dv_buf t;
    buf_init(&t);
    for (size_t i = 0; i < ids->len; i++) {
      const json_val *h = ids->u.items[i];
      if (h->type != JSON_STRING) { buf_free(&t); return DV_EBAD_REV; }
      buf_reset(&t);
      buf_printf(&t, "%lld-", (long long)(st - (int64_t)i));
      buf_append(&t, h->u.s, h->len);
      int rc = buf_error(&t) ? DV_ENOMEM : store_rev_parse((const char *)t.p, t.len, a, &path[i]);
      if (rc) { buf_free(&t); return rc; }
    }
    buf_free(&t);
    n = ids->len;
  }
  store_rev r0 = {0};
  if (rev) {
    int rc = store_rev_parse(rev->u.s, rev->len, a, &r0);
    if (rc) return rc;
  }
  if (new_edits) {
    if (rev) e->parent = r0;
    else if (n) e->parent = path[0];
  } else {
    if (n) {
      e->path = path;
      e->path_len = n;
    } else if (rev) {
      store_rev *p1 = arena_alloc(a, sizeof *p1);
      if (!p1) return DV_ENOMEM;
      *p1 = r0;
      e->path = p1;
      e->path_len = 1;
    } else {
      return DV_EBAD_REV;
    }
  }
  return 0;
}

/* ---- per-edit preparation ------------------------------------------------------ */

typedef struct ed {
  store_edit *e;        /* the caller's edit */
  dv_buf kvs;           /* exploded body: [u32 klen][key][u32 vlen][val]… (suffixes) */
  size_t n_kvs;         /* leaves */
  size_t kv_bytes;      /* their key+value bytes (suffixes only) */
  int64_t json_size;    /* compact JSON bytes of the body */
  int empty;            /* body has no members */
  uint8_t digest[16];   /* body_digest */
  uint8_t newh[16];     /* the new rev's hash (interactive) */
  int refused;          /* 1: e->rc was settled before any transaction */
  int kept_rc;          /* results of a maybe-committed attempt */
  const char *kept_why;
  store_rev kept_rev;
  uint8_t kept_h[16];
  store_att *in;        /* e->atts with sizes, digests and AttIDs of new content filled (dv_malloc) */
  size_t n_in;
  size_t att_bytes;     /* in-memory content written by the edit's transaction */
  store_att *res;       /* this attempt's resolved stubs (attempt arena) */
  store_att_upload **spill; /* uploads prepare made for content past STORE_ATT_INLINE_MAX */
  size_t n_spill;
  int wrote, kept_wrote; /* the edit wrote a revision (its uploads are linked) */
  int inserted;         /* … of a document id the database did not have (couchdb.document_inserts) */
  int absent;           /* this attempt: a create whose id the database has not (creates_absent) */
} ed;

static int emit_buf(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  ed *d = arg;
  uint32_t a = (uint32_t)kl, b = (uint32_t)vl;
  buf_append(&d->kvs, &a, 4);
  buf_append(&d->kvs, k, kl);
  buf_append(&d->kvs, &b, 4);
  buf_append(&d->kvs, v, vl);
  d->n_kvs++;
  return buf_error(&d->kvs);
}

/* Longest (P,"d",Id,NotDeleted,Pos,Hash) this edit can produce. */
static size_t doc_prefix_max(const store *s, const store_edit *e) {
  size_t hash = 2 + 2 * 16; /* 0x01, 16 bytes each escaped at worst, 0x00 */
  if (e->path_len && e->path[0].raw) hash = 2 + 2 * (size_t)e->path[0].len;
  /* root + (1, prefix int ≤ 9) + "d" + id (escaped ≤ 2x) + bool + pos ≤ 9 */
  return s->root_len + 1 + 9 + 3 + 2 + 2 * e->id_len + 1 + 9 + hash;
}

/* Upload in-memory content while the edit's total passes
 * STORE_ATT_INLINE_MAX, biggest first. */
static int spill(store_db *db, ed *d) {
  d->spill = dv_calloc(d->n_in, sizeof *d->spill);
  if (!d->spill) return DV_ENOMEM;
  while (d->att_bytes > STORE_ATT_INLINE_MAX) {
    store_att *big = NULL;
    for (size_t i = 0; i < d->n_in; i++) {
      store_att *t = &d->in[i];
      if (!t->stub && !t->up && (!big || t->data_len > big->data_len)) big = t;
    }
    store_att_upload *u;
    int rc = store_att_upload_begin(db, d->e->id, d->e->id_len, &u);
    if (rc) return rc;
    d->spill[d->n_spill++] = u;
    if ((rc = store_att_upload_write(u, big->data, big->data_len)) || (rc = store_att_upload_finish(u, NULL, NULL)))
      return rc;
    d->att_bytes -= big->data_len;
    big->up = u;
    big->data = NULL;
    big->data_len = 0;
    memcpy(big->id, st_upload_id(u), 16);
  }
  return 0;
}

/* Check the edit's attachments and fill in what new content tells. */
static int prepare_atts(store_db *db, ed *d) {
  store_edit *e = d->e;
  if (!e->n_atts) return 0;
  d->in = dv_malloc(e->n_atts * sizeof *d->in);
  if (!d->in) return DV_ENOMEM;
  memcpy(d->in, e->atts, e->n_atts * sizeof *d->in);
  d->n_in = e->n_atts;
  for (size_t i = 0; i < d->n_in; i++) {
    store_att *t = &d->in[i];
    if (!att_name_ok(t->name, t->name_len)) return DV_EBAD_ATT;
    for (size_t j = 0; j < i; j++)
      if (d->in[j].name_len == t->name_len && !memcmp(d->in[j].name, t->name, t->name_len)) return DV_EBAD_ATT;
    if (!t->type || !t->type_len) t->type = "application/octet-stream", t->type_len = 24;
    if (t->stub) {
      if (t->up || t->data) return DV_EBAD_ATT;
      continue;
    }
    if (t->up) {
      if (t->data || st_upload_done(t->up, &t->enc_length, t->md5)) return DV_EBAD_ATT;
      memcpy(t->id, st_upload_id(t->up), 16);
    } else {
      if (t->follows && !t->data) return DV_EBAD_ATT; /* the caller never gave the content */
      dv_md5 m;
      dv_md5_init(&m);
      dv_md5_update(&m, t->data, t->data_len);
      dv_md5_final(&m, t->md5);
      memcpy(t->id, t->md5, 16);
      t->enc_length = (int64_t)t->data_len;
      d->att_bytes += t->data_len;
    }
    if (!t->gzip) t->length = t->enc_length;
  }
  return d->att_bytes > STORE_ATT_INLINE_MAX ? spill(db, d) : 0;
}

static int prepare(store *s, ed *d) {
  store_edit *e = d->e;
  int rc = store_docid_check(e->id, e->id_len, 0);
  if (rc) return rc;
  if (e->body && e->body->type != JSON_OBJECT) return DV_ENOT_OBJECT;
  if (e->path_len) {
    for (size_t i = 0; i < e->path_len; i++)
      if (e->path[i].pos != e->path[0].pos - (int64_t)i || e->path[i].pos < 1) return DV_EBAD_REV;
  }
  static const json_val empty_obj = {.type = JSON_OBJECT};
  const json_val *body = e->body ? e->body : &empty_obj;
  d->json_size = (int64_t)body_json_size(body);
  if ((size_t)d->json_size > s->max_doc) return DV_EDOC_TOO_LARGE;
  d->empty = body->len == 0;
  size_t pmax = doc_prefix_max(s, e);
  if (pmax >= KV_MAX_KEY) return DV_EBAD_DOCID;
  body_limits lim = {.max_key = KV_MAX_KEY - pmax, .max_kv_bytes = ST_DOC_KV_BUDGET};
  rc = body_explode(body, NULL, 0, &lim, emit_buf, d, &d->kv_bytes);
  if (rc) return rc;
  if (d->kv_bytes + d->n_kvs * pmax > ST_DOC_KV_BUDGET) return DV_EDOC_TOO_LARGE;
  dv_md5 m;
  dv_md5_init(&m);
  body_digest(body, &m);
  dv_md5_final(&m, d->digest);
  return 0;
}

/* ---- reads of the revisions subspace (counted) -------------------------------------- */

/* The winner (last KV), if any. */
static int read_winner(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, dv_arena *a, st_branch *w,
                       int *found) {
  st_branch *brs;
  int n;
  int rc = st_branch_range(txn, x, id, id_len, NULL, 1, KV_REVERSE, a, &brs, &n);
  if (rc) return rc;
  *found = n;
  if (n) {
    if (!brs[0].winner) return DV_ECORRUPT;
    *w = brs[0];
  }
  return 0;
}

/* The winner for a create: a forward range limit 1 first — the usual
 * answer, nothing, costs a Seek instead of a SeekForPrev, which RocksDB
 * makes in every sorted run before its reverse merge — and the first KV is
 * the winner when the document has one branch; only a document with
 * several reads its last KV as well. */
static int read_winner_create(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, dv_arena *a,
                              st_branch *w, int *found) {
  st_branch *brs;
  int n;
  int rc = st_branch_range(txn, x, id, id_len, NULL, 1, 0, a, &brs, &n);
  if (rc) return rc;
  if (n && brs[0].winner) {
    *w = brs[0];
    *found = 1;
    return 0;
  }
  return n ? read_winner(txn, x, id, id_len, a, w, found) : (*found = 0, 0);
}

/* ---- writes ---------------------------------------------------------------- */

struct deltas {
  int64_t dc, ddc, sa, se; /* doc_count, doc_del_count, size_active, size_external */
};

static int write_body(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br,
                      const ed *d) {
  if (br->deleted && d->empty && !d->n_in) return 0; /* a plain deletion stores no body */
  dv_buf k, meta;
  buf_init(&k);
  buf_init(&meta);
  st_doc_key(x, &k, id, id_len, br);
  size_t plen = k.len;
  int rc = st_meta_encode(&meta, d->res, d->n_in); /* (DocFormat 0[, stubs]) */
  if (!rc) rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, meta.p, meta.len);
  buf_free(&meta);
  const uint8_t *p = d->kvs.p, *end = d->kvs.p + d->kvs.len;
  while (!rc && p < end) {
    uint32_t kl, vl;
    memcpy(&kl, p, 4);
    p += 4;
    k.len = plen;
    buf_append(&k, p, kl);
    p += kl;
    memcpy(&vl, p, 4);
    p += 4;
    rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, p, vl);
    p += vl;
  }
  buf_free(&k);
  return rc;
}

static void count(struct deltas *dl, const st_branch *old_w, const st_branch *new_w, int64_t replaced_kv,
                  int64_t new_kv) {
  dl->dc += !new_w->deleted - (old_w && !old_w->deleted);
  dl->ddc += new_w->deleted - (old_w && old_w->deleted);
  dl->se += (new_w->deleted ? 0 : new_w->json_size) - (old_w && !old_w->deleted ? old_w->json_size : 0);
  dl->sa += new_kv - replaced_kv;
}

static int64_t leaf_kv_size(const ed *d, size_t plen) {
  if (d->empty && d->e->deleted && !d->n_in) return 0;
  return (int64_t)(d->kv_bytes + (d->n_kvs + 1) * plen + 1);
}

/* Prepend `first` to `anc` (arena). */
static store_rev *anc_push(dv_arena *a, const store_rev *first, const store_rev *anc, size_t n) {
  store_rev *r = arena_alloc(a, (n + 1) * sizeof *r);
  if (!r) return NULL;
  r[0] = *first;
  if (n) memcpy(r + 1, anc, n * sizeof *r);
  return r;
}

static void new_hash(const ed *d, int deleted, const store_rev *parent, uint8_t out[16]) {
  dv_buf b;
  buf_init(&b);
  tup_w w;
  tup_w_init(&w, &b);
  tup_bool(&w, deleted);
  if (parent && parent->pos) {
    tup_int(&w, parent->pos);
    st_put_hash(&w, parent);
  } else {
    tup_null(&w);
    tup_null(&w);
  }
  dv_md5 m;
  dv_md5_init(&m);
  dv_md5_update(&m, b.p, b.len);
  dv_md5_update(&m, d->digest, 16);
  for (size_t i = 0; i < d->n_in; i++) { /* the attachments: name and digest */
    uint32_t n = (uint32_t)d->res[i].name_len;
    dv_md5_update(&m, &n, 4);
    dv_md5_update(&m, d->res[i].name, n);
    dv_md5_update(&m, d->res[i].md5, 16);
  }
  dv_md5_final(&m, out);
  buf_free(&b);
}

/* ---- attachments in the transaction ------------------------------------------------ */

/* Resolve the edit's attachments for this attempt into d->res and the new
 * leaf's AttIDs: stubs from the leaves in `from` (interactive: the parent;
 * new_edits=false: every leaf), new content gets revpos `newpos` (or the
 * revpos it came with, under new_edits=false). Reads only. *bad gets
 * DV_EMISSING_STUB for a stub that matches nothing. */
static int atts_resolve(kv_txn *txn, const st_dbx *x, ed *d, const st_branch *from, int n_from, int64_t newpos,
                        int keep_revpos, dv_arena *a, st_branch *L, int *bad) {
  store_edit *e = d->e;
  *bad = 0;
  d->res = NULL;
  L->att_ids = NULL;
  L->n_att_ids = 0;
  if (!d->n_in) return 0;
  store_att *r = arena_alloc(a, d->n_in * sizeof *r);
  uint8_t *ids = arena_alloc(a, d->n_in * 16);
  if (!r || !ids) return DV_ENOMEM;
  memcpy(r, d->in, d->n_in * sizeof *r);
  store_att **cand = NULL;
  size_t *n_cand = NULL;
  for (size_t i = 0; i < d->n_in; i++) {
    store_att *t = &r[i];
    if (!t->stub) {
      if (!keep_revpos || t->revpos < 1) t->revpos = newpos;
      continue;
    }
    if (!cand) { /* the candidates' stubs, read once */
      cand = arena_calloc(a, (size_t)(n_from ? n_from : 1) * sizeof *cand);
      n_cand = arena_calloc(a, (size_t)(n_from ? n_from : 1) * sizeof *n_cand);
      if (!cand || !n_cand) return DV_ENOMEM;
      for (int k = 0; k < n_from; k++) {
        int rc = st_leaf_atts(txn, x, e->id, e->id_len, &from[k], a, &cand[k], &n_cand[k]);
        if (rc) return rc;
      }
    }
    const store_att *hit = NULL;
    for (int k = 0; k < n_from && !hit; k++)
      for (size_t j = 0; j < n_cand[k] && !hit; j++) {
        const store_att *c = &cand[k][j];
        if (c->name_len == t->name_len && !memcmp(c->name, t->name, t->name_len) &&
            (!t->has_md5 || !memcmp(c->md5, t->md5, 16)))
          hit = c;
      }
    if (!hit) {
      *bad = DV_EMISSING_STUB;
      return 0;
    }
    *t = *hit; /* name, type, sizes, digest, revpos, AttID as stored */
  }
  for (size_t i = 0; i < d->n_in; i++)
    if (!st_att_has_id(ids, L->n_att_ids, r[i].id)) memcpy(ids + 16 * L->n_att_ids++, r[i].id, 16);
  d->res = r;
  L->att_ids = ids;
  return 0;
}

/* The writes of the edit's new content: uploads linked (their markers
 * checked first, so a refused edit writes nothing), in-memory content as
 * chunks. *bad gets DV_EATT_GONE for an upload the sweeper took. */
static int atts_write(kv_txn *txn, const st_dbx *x, ed *d, int *bad) {
  *bad = 0;
  for (size_t i = 0; i < d->n_in; i++)
    if (d->res[i].up) {
      int rc = st_att_link(txn, x, d->res[i].up);
      if (rc == DV_EATT_GONE) {
        *bad = rc;
        return 0;
      }
      if (rc) return rc;
    }
  for (size_t i = 0; i < d->n_in; i++) {
    const store_att *t = &d->res[i];
    if (t->stub || t->up) continue;
    int rc = st_att_write(txn, x, d->e->id, d->e->id_len, t->id, t->data, t->data_len);
    if (rc) return rc;
  }
  return 0;
}

static size_t doc_prefix_len(const st_dbx *x, const char *id, size_t id_len, const st_branch *br) {
  dv_buf k;
  buf_init(&k);
  st_doc_key(x, &k, id, id_len, br);
  size_t n = k.len;
  buf_free(&k);
  return n;
}

/* Clear the content `gone` (a leaf being replaced) used that neither the
 * new leaf L nor any other branch in others[] uses. */
static int collect(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *gone,
                   const st_branch *others, int n_others, const st_branch *L, dv_arena *a) {
  st_branch *keep = arena_alloc(a, (size_t)(n_others + 1) * sizeof *keep);
  if (!keep) return DV_ENOMEM;
  int n = 0;
  keep[n++] = *L;
  for (int i = 0; i < n_others; i++)
    if (others[i].deleted != gone->deleted || store_rev_cmp(&others[i].rev, &gone->rev)) keep[n++] = others[i];
  return st_att_collect(txn, x, id, id_len, gone->att_ids, gone->n_att_ids, keep, n);
}

/* The user body of an edit's new leaf, for index_update. */
static const json_val *new_body(const store_edit *e) {
  static const json_val empty = {.type = JSON_OBJECT};
  return e->body ? e->body : &empty;
}

/* The hooks an attempt runs (hooks.c). */
typedef struct wh {
  const st_hooks *h;     /* the handle's table, NULL: none */
  const store_wctx *w;   /* who writes, NULL: the server */
} wh;

/* ---- interactive edits ------------------------------------------------------------ */

static int edit_interactive(kv_txn *txn, const st_dbx *x, const wh *hk, ed *d, uint16_t uv, struct deltas *dl,
                            dv_arena *a, int *wrote) {
  store_edit *e = d->e;
  st_branch W, B, P2;
  int haveW = 0, haveB = 0, haveP2 = 0, b_is_w = 0, rc, bad = 0;
  store_rev parent = e->parent;
  *wrote = 0;
  if (parent.pos == 0) {
    rc = d->absent ? 0 : read_winner_create(txn, x, e->id, e->id_len, a, &W, &haveW);
    if (rc) return rc;
    if (haveW && !W.deleted) goto conflict;
    if (haveW) {
      B = W;
      haveB = b_is_w = 1;
      parent = W.rev;
    }
  } else if (e->deleted) {
    dv_buf end;
    buf_init(&end);
    st_branch_key(x, &end, e->id, e->id_len, 0, &parent);
    buf_putc(&end, 0);
    st_branch *two;
    int n;
    rc = buf_error(&end) ? DV_ENOMEM : st_branch_range(txn, x, e->id, e->id_len, &end, 2, KV_REVERSE, a, &two, &n);
    buf_free(&end);
    if (rc) return rc;
    if (n == 0 || two[0].deleted || store_rev_cmp(&two[0].rev, &parent)) goto conflict;
    B = two[0];
    haveB = 1;
    if (B.winner) {
      W = B;
      haveW = b_is_w = 1;
      if (n == 2) P2 = two[1], haveP2 = 1;
    } else {
      rc = read_winner(txn, x, e->id, e->id_len, a, &W, &haveW);
      if (rc) return rc;
      if (!haveW) return DV_ECORRUPT;
    }
  } else {
    int found;
    rc = st_branch_get(txn, x, e->id, e->id_len, 0, &parent, a, &B, &found);
    if (rc) return rc;
    if (!found) goto conflict;
    haveB = 1;
    if (B.winner) {
      W = B;
      haveW = b_is_w = 1;
    } else {
      rc = read_winner(txn, x, e->id, e->id_len, a, &W, &haveW);
      if (rc) return rc;
      if (!haveW) return DV_ECORRUPT;
    }
  }
  /* the new leaf */
  st_branch L;
  memset(&L, 0, sizeof L);
  L.deleted = e->deleted;
  L.rev.pos = parent.pos + 1;
  if ((rc = atts_resolve(txn, x, d, &B, haveB, L.rev.pos, 0, a, &L, &bad))) return rc;
  if (bad) {
    e->rc = bad;
    return 0;
  }
  /* validators see the leaf this edit replaces (its body only on demand)
   * and the stubs merged, as couch_db's prep_and_validate_update */
  if ((rc = st_hooks_validate(hk->h, hk->w, txn, x, e, &e->parent, e->parent.pos ? 1 : 0, d->res, d->n_in,
                              haveB && e->parent.pos ? &B : NULL, a, &bad)))
    return rc;
  if (bad) return 0;
  int64_t bc = haveW ? W.bc : 1;
  /* content the replaced leaf used: other branches are read now, before
   * this transaction writes (the winner's value becomes unreadable) */
  st_branch *keep = NULL;
  int n_keep = 0;
  if (haveB && B.n_att_ids && bc > 1 &&
      (rc = st_branch_range(txn, x, e->id, e->id_len, NULL, 0, 0, a, &keep, &n_keep)))
    return rc;
  new_hash(d, e->deleted, &parent, d->newh);
  L.rev.h = d->newh;
  L.rev.len = 16;
  if (haveB) {
    L.anc = anc_push(a, &B.rev, B.anc, B.n_anc);
    if (!L.anc) return DV_ENOMEM;
    L.n_anc = B.n_anc + 1;
  }
  L.json_size = d->json_size;
  L.kv_size = leaf_kv_size(d, doc_prefix_len(x, e->id, e->id_len, &L));
  const st_branch *NW; /* the winner after the edit */
  if (!haveW) NW = &L;
  else if (b_is_w) NW = !L.deleted ? &L : (haveP2 && st_branch_cmp(&P2, &L) > 0 ? &P2 : &L);
  else NW = st_branch_cmp(&L, &W) > 0 ? &L : &W;
  /* writes */
  if (d->n_in) {
    if ((rc = atts_write(txn, x, d, &bad))) return rc;
    if (bad) {
      e->rc = bad;
      return 0;
    }
  }
  if (haveB && B.n_att_ids && (rc = collect(txn, x, e->id, e->id_len, &B, keep, n_keep, &L, a))) return rc;
  if (haveB && (rc = st_branch_clear(txn, x, e->id, e->id_len, &B))) return rc;
  if ((rc = st_branch_put(txn, x, e->id, e->id_len, &L, NW == &L, uv, bc))) return rc;
  if (haveW && !b_is_w && (rc = st_branch_put(txn, x, e->id, e->id_len, &W, NW == &W, uv, bc))) return rc;
  if (NW == &P2 && (rc = st_branch_put(txn, x, e->id, e->id_len, &P2, 1, uv, bc))) return rc;
  if ((rc = write_body(txn, x, e->id, e->id_len, &L, d))) return rc;
  if ((rc = st_change_move(txn, x, e->id, e->id_len, haveW ? &W.seq : NULL, NW, bc, uv))) return rc;
  if ((rc = st_hooks_index(hk->h, txn, x, e->id, e->id_len, haveW ? &W : NULL, NW, NW == &L ? new_body(e) : NULL)))
    return rc;
  count(dl, haveW ? &W : NULL, NW, haveB ? B.kv_size : 0, L.kv_size);
  e->rc = 0;
  e->rev = L.rev;
  *wrote = 1;
  d->inserted = !haveW;
  return 0;
conflict:
  /* a document with no live winner: its validators answer before the
   * conflict does (the _users rules always did) */
  if (st_hooks_validating(hk->h, hk->w) && !(haveW && !W.deleted)) {
    if ((rc = read_winner(txn, x, e->id, e->id_len, a, &W, &haveW))) return rc;
    if ((!haveW || W.deleted) && (rc = st_hooks_validate(hk->h, hk->w, txn, x, e, &e->parent,
                                                          e->parent.pos ? 1 : 0, NULL, 0, NULL, a, &bad)))
      return rc;
    if ((!haveW || W.deleted) && bad) return 0;
  }
  e->rc = DV_ECONFLICT;
  return 0;
}

/* ---- new_edits=false --------------------------------------------------------------- */

/* Index of rev in branch b's full path [leaf, anc…], or -1. */
static long path_index(const st_branch *b, const store_rev *r) {
  int64_t j = b->rev.pos - r->pos;
  if (j < 0 || j > (int64_t)b->n_anc) return -1;
  const store_rev *c = j == 0 ? &b->rev : &b->anc[j - 1];
  return store_rev_cmp(c, r) == 0 ? (long)j : -1;
}

static const store_rev *full_at(const st_branch *b, size_t j) { return j == 0 ? &b->rev : &b->anc[j - 1]; }

static int edit_replicated(kv_txn *txn, const st_dbx *x, const wh *hk, ed *d, uint16_t uv, struct deltas *dl,
                           dv_arena *a, int *wrote) {
  store_edit *e = d->e;
  const store_rev *path = e->path;
  size_t n = e->path_len;
  st_branch *brs;
  int nb;
  *wrote = 0;
  int rc = st_branch_range(txn, x, e->id, e->id_len, NULL, 0, 0, a, &brs, &nb);
  if (rc) return rc;
  int bad;
  e->rev = path[0];
  /* rule 1: the leaf is known already */
  for (int i = 0; i < nb; i++)
    if (path_index(&brs[i], &path[0]) >= 0) {
      e->rc = 0;
      return 0;
    }
  int ext = -1;        /* branch extended (its leaf is in the path) */
  const st_branch *ov = NULL;
  size_t ov_i = 0;     /* path index of the overlap */
  long ov_j = -1;      /* index of that rev in ov's full path */
  for (int i = 0; i < nb && ext < 0; i++) {
    int64_t idx = path[0].pos - brs[i].rev.pos;
    if (idx > 0 && idx < (int64_t)n && !store_rev_cmp(&path[idx], &brs[i].rev)) ext = i;
  }
  /* merged full path: [leaf, …] */
  size_t mcap = n + 1;
  store_rev *m;
  size_t mn = 0;
  if (ext >= 0) {
    const st_branch *b = &brs[ext];
    int64_t oldest = path[n - 1].pos;
    mcap += b->n_anc;
    m = arena_alloc(a, mcap * sizeof *m);
    if (!m) return DV_ENOMEM;
    memcpy(m, path, n * sizeof *m);
    mn = n;
    for (size_t j = 0; j <= b->n_anc; j++)
      if (full_at(b, j)->pos < oldest) m[mn++] = *full_at(b, j);
  } else {
    for (size_t i = 0; i < n && !ov; i++)
      for (int k = 0; k < nb && !ov; k++) {
        long j = path_index(&brs[k], &path[i]);
        if (j >= 0) ov = &brs[k], ov_i = i, ov_j = j;
      }
    if (ov) {
      mcap = ov_i + 1 + ov->n_anc;
      m = arena_alloc(a, mcap * sizeof *m);
      if (!m) return DV_ENOMEM;
      memcpy(m, path, (ov_i + 1) * sizeof *m);
      mn = ov_i + 1;
      for (size_t j = (size_t)ov_j + 1; j <= ov->n_anc; j++) m[mn++] = *full_at(ov, j);
    } else {
      m = (store_rev *)path;
      mn = n;
    }
  }
  st_branch L;
  memset(&L, 0, sizeof L);
  L.rev = path[0];
  L.deleted = e->deleted;
  L.anc = m + 1;
  L.n_anc = mn - 1;
  L.json_size = d->json_size;
  L.kv_size = leaf_kv_size(d, doc_prefix_len(x, e->id, e->id_len, &L));
  if ((rc = atts_resolve(txn, x, d, brs, nb, L.rev.pos, 1, a, &L, &bad))) return rc;
  if (bad) {
    e->rc = bad;
    return 0;
  }
  /* validators run for a new leaf only (a known one returned above), with
   * oldDoc the leaf the path extends — couch_db's make_first_doc_on_disk;
   * only leaves keep bodies here — or none */
  rc = st_hooks_validate(hk->h, hk->w, txn, x, e, path, n, d->res, d->n_in, ext >= 0 ? &brs[ext] : NULL, a, &bad);
  if (rc || bad) return rc;
  if (d->n_in) {
    if ((rc = atts_write(txn, x, d, &bad))) return rc;
    if (bad) {
      e->rc = bad;
      return 0;
    }
  }
  if (ext >= 0 && brs[ext].n_att_ids && (rc = collect(txn, x, e->id, e->id_len, &brs[ext], brs, nb, &L, a)))
    return rc;
  /* old winner, new winner, branch count */
  const st_branch *W = NULL, *NW = &L;
  int64_t bc = 1;
  for (int i = 0; i < nb; i++) {
    if (brs[i].winner) W = &brs[i];
    if (i == ext) continue;
    bc++;
    if (st_branch_cmp(&brs[i], NW) > 0) NW = &brs[i];
  }
  if (nb && !W) return DV_ECORRUPT;
  if (ext >= 0 && (rc = st_branch_clear(txn, x, e->id, e->id_len, &brs[ext]))) return rc;
  if ((rc = st_branch_put(txn, x, e->id, e->id_len, &L, NW == &L, uv, bc))) return rc;
  if (W && !(ext >= 0 && W == &brs[ext])) {
    if ((rc = st_branch_put(txn, x, e->id, e->id_len, W, NW == W, uv, bc))) return rc;
  }
  if (NW != &L && NW != W && (rc = st_branch_put(txn, x, e->id, e->id_len, NW, 1, uv, bc))) return rc;
  if ((rc = write_body(txn, x, e->id, e->id_len, &L, d))) return rc;
  if ((rc = st_change_move(txn, x, e->id, e->id_len, W ? &W->seq : NULL, NW, bc, uv))) return rc;
  /* the changes row moved even when the winner did not: indexes follow both */
  if ((rc = st_hooks_index(hk->h, txn, x, e->id, e->id_len, W, NW, NW == &L ? new_body(e) : NULL)))
    return rc;
  count(dl, W, NW, ext >= 0 ? brs[ext].kv_size : 0, L.kv_size);
  e->rc = 0;
  *wrote = 1;
  d->inserted = nb == 0;
  return 0;
}

/* ---- transactions ---------------------------------------------------------------- */

struct up_arg {
  store_db *db;
  const store_wctx *w; /* who writes (validators), NULL: the server */
  st_op *op;
  ed *eds;
  size_t from, to;   /* the group [from, to) */
  int new_edits;
  dv_arena arena;    /* per attempt */
};

static int id_cmp(const store_edit *a, const store_edit *b) {
  return dv_bytes_cmp(a->id, a->id_len, b->id, b->id_len);
}

/* An edit of the group that creates (no parent) and is not settled yet. */
static int is_create(const ed *d) { return !d->refused && !d->e->parent.pos; }

/* The group's creates (no parent) in one range read instead of one each:
 * when no document has an id in [min, max] of theirs, none of them exists,
 * and each skips read_winner — a seek of every sorted run of the engine,
 * the request thread's largest cost in a _bulk_docs of new documents.
 * Server-minted ids of one request are a contiguous run (api_uuids), so
 * the range is theirs alone. The read is a snapshot read: only an empty
 * range, the answer the edits rely on, becomes a read conflict range
 * (a concurrent create in it retries the transaction, as the per-edit
 * reads would); a range with documents in it settles nothing, and the
 * edits read their own as before. Ids sort as their tuple encoding does. */
static int creates_absent(kv_txn *txn, const st_dbx *x, ed *eds, size_t from, size_t to) {
  const store_edit *lo = NULL, *hi = NULL;
  size_t n = 0;
  for (size_t i = from; i < to; i++) {
    const store_edit *e = eds[i].e;
    eds[i].absent = 0;
    if (!is_create(&eds[i])) continue;
    if (!lo || id_cmp(e, lo) < 0) lo = e;
    if (!hi || id_cmp(e, hi) > 0) hi = e;
    n++;
  }
  if (n < 2) return 0; /* one create: its own read is no dearer */
  dv_buf b, e;
  tup_w w;
  buf_init(&b);
  buf_init(&e);
  st_key_doc(x, &b, &w, ST_SUB_REV, lo->id, lo->id_len);
  st_key_doc(x, &e, &w, ST_SUB_REV, hi->id, hi->id_len);
  buf_putc(&e, 0xff);
  kv_pair *pairs;
  int got = 0, more;
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  if (!rc) rc = kv_get_range(txn, b.p, b.len, e.p, e.len, 1, KV_SNAPSHOT, &pairs, &got, &more);
  if (!rc) st_count_read((size_t)got);
  if (!rc && !got) rc = kv_add_conflict_range(txn, b.p, b.len, e.p, e.len, KV_CONFLICT_READ);
  for (size_t i = from; !rc && !got && i < to; i++) eds[i].absent = is_create(&eds[i]);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

static int up_fn(kv_txn *txn, const st_dbx *x, void *arg) {
  struct up_arg *u = arg;
  arena_reset(&u->arena);
  int rc = 0;
  st_hooks *h;
  if ((rc = st_hooks_get(u->db, &h))) return rc;
  wh hk = {.h = h, .w = u->w};
  struct deltas dl = {0};
  uint16_t uv = 0;
  int design = 0;
  if (u->new_edits && (rc = creates_absent(txn, x, u->eds, u->from, u->to))) {
    st_hooks_put(h);
    return rc;
  }
  for (size_t i = u->from; i < u->to; i++) {
    ed *d = &u->eds[i];
    if (d->refused) continue;
    d->e->rc = 0;
    d->e->why = NULL;
    d->wrote = d->inserted = 0;
    int wrote = 0;
    rc = u->new_edits ? edit_interactive(txn, x, &hk, d, uv, &dl, &u->arena, &wrote)
                      : edit_replicated(txn, x, &hk, d, uv, &dl, &u->arena, &wrote);
    if (rc) break;
    d->wrote = wrote;
    uv += (uint16_t)wrote;
    design |= wrote && d->e->id_len > 8 && !memcmp(d->e->id, "_design/", 8);
  }
  st_hooks_put(h);
  if (rc) return rc;
  if (uv == 0) return 0; /* nothing written: a read-only commit */
  /* a design document may change the hooks: every process reloads them */
  if (design && (rc = st_hooks_changed(txn, x))) return rc;
  if ((rc = st_counter_add(txn, x, "doc_count", dl.dc))) return rc;
  if ((rc = st_counter_add(txn, x, "doc_del_count", dl.ddc))) return rc;
  if ((rc = st_counter_add(txn, x, "size_active", dl.sa))) return rc;
  if ((rc = st_counter_add(txn, x, "size_external", dl.se))) return rc;
  rc = st_update_seq_put(txn, x, (uint16_t)(uv - 1));
  if (!rc) rc = st_dbu_enqueue(x->s, txn, x->name, x->name_len, x->prefix);
  if (!rc) rc = st_txid_write(x->s, txn, u->op);
  return rc;
}

static void up_keep(void *arg) {
  struct up_arg *u = arg;
  for (size_t i = u->from; i < u->to; i++) {
    ed *d = &u->eds[i];
    if (d->refused) continue;
    d->kept_rc = d->e->rc;
    d->kept_why = d->e->why;
    d->kept_rev = d->e->rev;
    d->kept_wrote = d->wrote;
    if (d->e->rev.h == d->newh) {
      memcpy(d->kept_h, d->newh, 16);
      d->kept_rev.h = d->kept_h;
    }
  }
}

static void up_restore(void *arg) {
  struct up_arg *u = arg;
  for (size_t i = u->from; i < u->to; i++) {
    ed *d = &u->eds[i];
    if (d->refused) continue;
    d->e->rc = d->kept_rc;
    d->e->why = d->kept_why;
    d->e->rev = d->kept_rev;
    d->wrote = d->kept_wrote;
  }
}

/* Duplicate ids in one call: a small open-addressing set of edit indexes. */
static int mark_duplicates(ed *eds, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  size_t *slot = dv_malloc(cap * sizeof *slot);
  if (!slot) return DV_ENOMEM;
  for (size_t i = 0; i < cap; i++) slot[i] = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    store_edit *e = eds[i].e;
    if (e->rc) continue;
    uint32_t h = 2166136261u;
    for (size_t k = 0; k < e->id_len; k++) h = (h ^ (uint8_t)e->id[k]) * 16777619u;
    size_t j = h & (cap - 1);
    for (;;) {
      if (slot[j] == SIZE_MAX) {
        slot[j] = i;
        break;
      }
      store_edit *o = eds[slot[j]].e;
      if (o->id_len == e->id_len && !memcmp(o->id, e->id, e->id_len)) {
        e->rc = DV_ECONFLICT;
        eds[i].refused = 1;
        break;
      }
      j = (j + 1) & (cap - 1);
    }
  }
  dv_free(slot);
  return 0;
}

/* One store_update call, blocking or not: the prepared edits and the
 * group of them in flight. */
typedef struct upd {
  store_db *db;
  store_edit *edits;     /* the caller's */
  size_t n;
  ed *eds;               /* one per edit */
  struct up_arg u;       /* the group in flight and its attempt arena */
  st_op op;              /* its run */
  size_t next;           /* the first edit of the next group */
  int sync;              /* 1: store_update (st_run); 0: st_run_async */
  int spilled;           /* some edit made uploads (the finish may run a transaction) */
  int rc;                /* the result, for a finish deferred to a worker */
  store_done_fn done;    /* store_update_async's completion */
  void *arg;
  st_task task;          /* the next group or the finish, on a worker */
} upd;

/* Check and explode every edit, outside any transaction; a request-wide
 * error (DV_ENOMEM) or 0 when every edit is settled or ready. */
static int upd_prepare(upd *p, int new_edits) {
  store *s = p->db->s;
  for (size_t i = 0; i < p->n; i++) {
    store_edit *e = &p->edits[i];
    ed *d = &p->eds[i];
    d->e = e;
    buf_init(&d->kvs);
    e->rc = 0;
    e->why = NULL;
    memset(&e->rev, 0, sizeof e->rev);
    if (!new_edits && e->path_len == 0) e->rc = DV_EBAD_REV;
    if (!e->rc) e->rc = prepare(s, d);
    if (!e->rc) e->rc = prepare_atts(p->db, d);
    p->spilled |= d->n_spill > 0;
    if (e->rc) {
      d->refused = 1;
      if (e->rc == DV_ENOMEM) return DV_ENOMEM;
    }
  }
  return mark_duplicates(p->eds, p->n);
}

/* A group's run ended with rc: committed, the uploads it used are linked
 * and its documents counted. */
static int upd_group_end(upd *p, int rc) {
  int64_t writes = 0, inserts = 0;
  for (size_t k = p->u.from; !rc && k < p->u.to; k++) {
    writes += p->eds[k].wrote && !p->eds[k].refused;
    inserts += p->eds[k].wrote && !p->eds[k].refused && p->eds[k].inserted;
    for (size_t t = 0; p->eds[k].wrote && !p->eds[k].refused && t < p->eds[k].n_in; t++)
      if (p->eds[k].in[t].up) st_upload_set_linked(p->eds[k].in[t].up);
  }
  if (writes) dv_stat_add(DV_ST_DOCUMENT_WRITES, writes), dv_stat_add(DV_ST_DOCUMENT_INSERTS, inserts);
  p->next = p->u.to;
  return rc;
}

static void upd_group_done(st_op *op, int rc, int on_worker);

/* Run the groups left on this thread until all are done (the update's rc)
 * or one waits for its commit (ST_PENDING). */
static int upd_groups(upd *p) {
  int rc = 0;
  size_t n = p->n;
  while (!rc && p->next < n) {
    size_t i = p->next, j = i, bytes = 0;
    while (j < n) {
      size_t c = p->eds[j].kvs.len + p->eds[j].att_bytes + 4096;
      if (j > i && bytes + c > ST_TXN_BUDGET) break;
      bytes += c;
      j++;
      if (j - i >= 4096) break; /* user versions and the 5 s window */
    }
    p->op = (st_op){.dbfn = up_fn, .db = p->db, .keep = up_keep, .restore = up_restore, .use_txid = 1,
                    .arg = &p->u, .done = upd_group_done};
    p->u.op = &p->op;
    p->u.from = i;
    p->u.to = j;
    rc = p->sync ? st_run(p->db->s, &p->op) : st_run_async(p->db->s, &p->op);
    if (rc == ST_PENDING) return rc; /* p is the run's now */
    rc = upd_group_end(p, rc);
  }
  return rc;
}

/* The end of the update: results made to outlive eds, everything freed.
 * Returns rc (store_update) or hands it to done (store_update_async). */
static int upd_finish(upd *p, int rc) {
  for (size_t k = 0; p->eds && k < p->n; k++) { /* the hashes must outlive eds */
    store_edit *e = &p->edits[k];
    if (!e->rc && e->rev.h && (e->rev.h == p->eds[k].newh || e->rev.h == p->eds[k].kept_h)) {
      memcpy(e->rev_buf, e->rev.h, 16);
      e->rev.h = e->rev_buf;
    }
  }
  arena_free(&p->u.arena);
  for (size_t k = 0; p->eds && k < p->n; k++) {
    ed *d = &p->eds[k];
    buf_free(&d->kvs);
    for (size_t t = 0; t < d->n_spill; t++) store_att_upload_free(d->spill[t]); /* unlinked: a transaction */
    dv_free(d->spill);
    dv_free(d->in);
  }
  dv_free(p->eds);
  if (p->sync) return rc;
  store_done_fn done = p->done;
  void *arg = p->arg;
  dv_free(p);
  done(arg, rc);
  return 0;
}

static void upd_resume(st_task *t) {
  upd *p = (upd *)((char *)t - offsetof(upd, task));
  int rc = upd_groups(p);
  if (rc != ST_PENDING) upd_finish(p, rc);
}

static void upd_finish_task(st_task *t) {
  upd *p = (upd *)((char *)t - offsetof(upd, task));
  upd_finish(p, p->rc);
}

/* A group's pending run ended (kv thread or worker): the next group, or
 * the finish, goes to a worker unless it cannot block. */
static void upd_group_done(st_op *op, int rc, int on_worker) {
  upd *p = (upd *)((char *)op - offsetof(upd, op));
  rc = upd_group_end(p, rc);
  if (!rc && p->next < p->n) {
    p->task.fn = upd_resume;
    st_defer(p->db->s, &p->task, 0);
  } else if (p->spilled && !on_worker) {
    p->rc = rc;
    p->task.fn = upd_finish_task;
    st_defer(p->db->s, &p->task, 0);
  } else {
    upd_finish(p, rc);
  }
}

/* The one write path of store_update and store_update_async. */
static int update(store_db *db, const store_wctx *w, store_edit *edits, size_t n, int new_edits, upd *p) {
  dv_stat_inc(DV_ST_DATABASE_WRITES);
  p->db = db;
  p->edits = edits;
  p->n = n;
  p->u = (struct up_arg){.db = db, .w = w, .new_edits = new_edits};
  arena_init(&p->u.arena, 0);
  p->eds = dv_calloc(n ? n : 1, sizeof *p->eds);
  if (!p->eds) return upd_finish(p, DV_ENOMEM);
  p->u.eds = p->eds;
  int rc = upd_prepare(p, new_edits);
  if (!rc && !p->sync) rc = st_work_start(db->s);
  if (!rc) rc = upd_groups(p);
  return rc == ST_PENDING ? 0 : upd_finish(p, rc);
}

int store_update(store_db *db, const store_wctx *w, store_edit *edits, size_t n, int new_edits) {
  upd p = {.sync = 1};
  return update(db, w, edits, n, new_edits, &p);
}

void store_update_async(store_db *db, const store_wctx *w, store_edit *edits, size_t n, int new_edits,
                        store_done_fn done, void *arg) {
  upd *p = dv_calloc(1, sizeof *p);
  if (!p) {
    done(arg, DV_ENOMEM);
    return;
  }
  p->done = done;
  p->arg = arg;
  (void)update(db, w, edits, n, new_edits, p);
}
