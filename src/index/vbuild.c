/* vbuild.c — a view index's state, the step that indexes a batch of
 * changes, and the builder threads (view.h has the key layout and the data
 * flow).
 *
 * One step (vw_step), one transaction:
 *   1. the state row, conflict-checked (two builders of one index never
 *      both commit a step); created with a random salt when missing
 *   2. the purged documents past the state's purge_seq (read before, in
 *      store's own transactions) and the changes rows after its Sequence,
 *      snapshot reads, at most STEP_DOCS documents or STEP_MS
 *   3. per document: its winner read (a deleted one, a design document
 *      unless include_design, maps to nothing), mapped in the step's query
 *      server session; its old rows listed from the back-index; rows and
 *      back rows cleared or written so the index holds exactly the new
 *      ones; every row key touched noted per slot
 *   4. each slot's tree updated with the noted keys (vtree.h), its
 *      reductions computed by vw_red_ops (vred.c)
 *   5. the state moved to the last change read and the purge_seq reached.
 * A step that fails on a retryable kv error is retried by store_db_run;
 * any other error (a map function that does not compile, the query server
 * dying) fails the step, and the queries waiting for it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/collate.h"
#include "index/qs.h"
#include "index/view_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/thread.h"

#define STEP_DOCS 500         /* changes rows per step */
#define STEP_MS 1000          /* and at most this long mapping */
#define STEP_PURGES 100       /* purge infos per step */
#define STEP_BYTES (2u << 20) /* and at most about this much written (FoundationDB's 10 MB, and the trees' share) */

/* ---- keys ---------------------------------------------------------------------- */

void vw_key(store_tx *t, dv_buf *b, tup_w *w, const uint8_t *sig, const char *sub) {
  store_tx_ikey(t, b, w);
  tup_strz(w, "v");
  tup_bytes(w, sig, VW_SIG_LEN);
  if (sub) tup_strz(w, sub);
}

/* ---- state ------------------------------------------------------------------------ */

int vw_state_get(store_tx *t, const uint8_t *sig, int flags, dv_arena *a, vw_state *s) {
  dv_buf k;
  buf_init(&k);
  tup_w w;
  vw_key(t, &k, &w, sig, "s");
  const uint8_t *v;
  size_t vl;
  memset(s, 0, sizeof *s);
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(store_tx_kv(t), k.p, k.len, flags, &v, &vl, &s->found);
  buf_free(&k);
  if (rc || !s->found) return rc;
  tup_r r;
  tup_item fmt, si, sv, ps, salt, def;
  tup_r_init(&r, v, vl);
  if (tup_get(&r, TUP_INT, &fmt) || tup_next(&r, &si) != 1 || tup_next(&r, &sv) != 1 || tup_get(&r, TUP_INT, &ps) ||
      tup_get(&r, TUP_BYTES, &salt) || tup_get(&r, TUP_STR, &def) || salt.s_len != VT_SALT_LEN)
    return DV_ECORRUPT;
  if (si.type == TUP_INT && sv.type == TUP_VS) {
    s->have_seq = 1;
    s->seq.inc = si.i64;
    memcpy(s->seq.vs, sv.fixed, 12);
  }
  s->purge_seq = ps.i64;
  tup_item_copy(&salt, s->salt);
  char *d = arena_alloc(a, def.s_len + 1);
  if (!d) return DV_ENOMEM;
  tup_item_copy(&def, (uint8_t *)d);
  d[def.s_len] = 0;
  s->def = d;
  s->def_len = def.s_len;
  return 0;
}

int vw_state_put(store_tx *t, const uint8_t *sig, const vw_state *s) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  vw_key(t, &k, &w, sig, "s");
  tup_w_init(&w, &v);
  tup_int(&w, 1);
  if (s->have_seq) {
    tup_int(&w, s->seq.inc);
    tup_vs(&w, s->seq.vs);
  } else {
    tup_null(&w);
    tup_null(&w);
  }
  tup_int(&w, s->purge_seq);
  tup_bytes(&w, s->salt, VT_SALT_LEN);
  tup_str(&w, s->def, s->def_len);
  int rc = tup_w_finish(&w) || buf_error(&k) ? DV_ENOMEM : kv_set(store_tx_kv(t), k.p, k.len, v.p, v.len);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

/* A fresh state for ix: nothing indexed, purges up to now already moot. */
static int state_new(vw_state *s, const vw_index *ix, int64_t purge_seq) {
  memset(s, 0, sizeof *s);
  s->found = 1;
  s->purge_seq = purge_seq;
  FILE *f = fopen("/dev/urandom", "rb");
  int ok = f && fread(s->salt, 1, VT_SALT_LEN, f) == VT_SALT_LEN;
  if (f) fclose(f);
  if (!ok) { /* no urandom: the time and the signature still scatter boundaries */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    memcpy(s->salt, ix->sig, VT_SALT_LEN);
    for (size_t i = 0; i < sizeof ts.tv_nsec; i++) s->salt[i] ^= (uint8_t)(ts.tv_nsec >> (8 * i));
  }
  s->def = ix->def;
  s->def_len = ix->def_len;
  return 0;
}

/* ---- the tree of a slot ------------------------------------------------------------ */

int vw_tree_def(store_tx *t, const vw_index *ix, const vw_state *s, size_t slot, vw_tree *tr) {
  buf_init(&tr->rows);
  buf_init(&tr->nodes);
  tup_w w;
  vw_key(t, &tr->rows, &w, ix->sig, "k");
  tup_int(&w, (int64_t)slot);
  if (tup_w_finish(&w)) return DV_ENOMEM;
  vw_key(t, &tr->nodes, &w, ix->sig, "t");
  tup_int(&w, (int64_t)slot);
  if (tup_w_finish(&w)) return DV_ENOMEM;
  memset(&tr->d, 0, sizeof tr->d);
  tr->d.rows_prefix = tr->rows.p;
  tr->d.rows_prefix_len = tr->rows.len;
  tr->d.node_prefix = tr->nodes.p;
  tr->d.node_prefix_len = tr->nodes.len;
  memcpy(tr->d.salt, s->salt, VT_SALT_LEN);
  /* nodes hold one reduction per reduce of the slot, whoever reads them
   * (a count-only read too); the caller sets ctx before reducing */
  tr->d.n_red = ix->slots[slot].n_red;
  tr->d.ops = tr->d.n_red ? &vw_red_ops : NULL;
  return 0;
}

void vw_tree_free(vw_tree *tr) {
  buf_free(&tr->rows);
  buf_free(&tr->nodes);
}

/* ---- mapping ------------------------------------------------------------------------ */

void vw_cmd(json_w *w, dv_buf *line, const char *name) {
  buf_reset(line);
  json_w_init(w, line);
  json_w_arr_begin(w);
  json_w_strz(w, name);
}

int vw_session_prompt(vw_session *ss, json_w *w, dv_buf *line) {
  json_w_arr_end(w);
  buf_reset(&ss->out);
  return json_w_finish(w) || buf_error(line) ? DV_ENOMEM
                                              : qs_prompt(ss->p, (char *)line->p, line->len, &ss->out, &ss->a, &ss->e);
}

/* Start a session for ix: reset, lib, one add_fun per slot. */
int vw_session_open(const vw_index *ix, vw_session *ss) {
  memset(ss, 0, sizeof *ss);
  arena_init(&ss->a, 0);
  buf_init(&ss->out);
  int rc = qs_acquire(ix->lang, &ss->p, &ss->e);
  if (rc) return rc;
  dv_buf line;
  buf_init(&line);
  json_w w;
  vw_cmd(&w, &line, "reset");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "reduce_limit");
  switch (qs_get_reduce_limit()) {
  case QS_REDUCE_LIMIT_LOG: json_w_strz(&w, "log"); break;
  case QS_REDUCE_LIMIT_OFF: json_w_bool(&w, 0); break;
  default: json_w_bool(&w, 1);
  }
  json_w_obj_end(&w);
  rc = vw_session_prompt(ss, &w, &line);
  if (!rc && ix->lib_json) {
    vw_cmd(&w, &line, "add_lib");
    json_w_raw(&w, ix->lib_json, strlen(ix->lib_json));
    rc = vw_session_prompt(ss, &w, &line);
  }
  for (size_t i = 0; !rc && i < ix->n_slots; i++) {
    vw_cmd(&w, &line, "add_fun");
    json_w_strz(&w, ix->slots[i].map);
    rc = vw_session_prompt(ss, &w, &line);
  }
  buf_free(&line);
  if (rc) ss->broken = 1;
  return rc;
}

void vw_session_close(vw_session *ss) {
  if (ss->p) qs_release(ss->p, ss->broken);
  ss->p = NULL;
  buf_free(&ss->out);
  arena_free(&ss->a);
}

/* Map one document: *out the answer, an array with one array of [key,
 * value] per slot (in a). */
static int map_doc(vw_session *ss, const json_val *doc, dv_arena *a, json_val **out) {
  dv_buf line;
  buf_init(&line);
  json_w w;
  vw_cmd(&w, &line, "map_doc");
  json_w_val(&w, doc);
  int rc = vw_session_prompt(ss, &w, &line);
  buf_free(&line);
  if (!rc) rc = json_parse(a, ss->out.p, ss->out.len, &(json_opts){.flags = JSON_COPY}, out, NULL);
  if (rc == DV_EJSON) rc = DV_EQS_PROCESS;
  if (rc && rc != DV_EQS) ss->broken = 1;
  return rc;
}

/* ---- one document's rows ---------------------------------------------------------- */

static int suffix_of(dv_buf *b, const uint8_t *ek, size_t ek_len, const char *id, size_t id_len, int64_t n) {
  tup_w w;
  tup_w_init(&w, b);
  tup_bytes(&w, ek, ek_len);
  tup_str(&w, id, id_len);
  tup_int(&w, n);
  return tup_w_finish(&w) ? DV_ENOMEM : 0;
}

void vw_rows_free(vw_rows *r) {
  for (size_t j = 0; j < r->n; j++) {
    buf_free(&r->r[j].suffix);
    buf_free(&r->r[j].val);
  }
  dv_free(r->r);
  memset(r, 0, sizeof *r);
}

/* The rows of a map answer (NULL: none), appended to out. */
static int rows_of(const vw_index *ix, const size_t *rows_prefix_len, const char *id, size_t id_len,
                   const json_val *mapped, vw_rows *out) {
  dv_buf tmp;
  buf_init(&tmp);
  int rc = 0;
  for (size_t s = 0; !rc && mapped && s < ix->n_slots && s < mapped->len; s++) {
    const json_val *em = mapped->u.items[s];
    if (!em || em->type != JSON_ARRAY) continue;
    for (size_t i = 0; !rc && i < em->len; i++) {
      const json_val *kv = em->u.items[i];
      const json_val *key = json_arr_get(kv, 0), *val = json_arr_get(kv, 1);
      if (!key) continue;
      if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 8;
        vw_nrow *nrw = dv_realloc(out->r, cap * sizeof *nrw);
        if (!nrw) {
          rc = DV_ENOMEM;
          break;
        }
        out->r = nrw;
        out->cap = cap;
      }
      vw_nrow *r = &out->r[out->n];
      r->slot = s;
      buf_init(&r->suffix);
      buf_init(&r->val);
      out->n++;
      buf_reset(&tmp);
      rc = ix->slots[s].raw ? collate_raw_key(&tmp, key) : collate_key(&tmp, key);
      if (!rc) rc = suffix_of(&r->suffix, tmp.p, tmp.len, id, id_len, (int64_t)i);
      if (!rc) {
        dv_buf kj, vj;
        buf_init(&kj);
        buf_init(&vj);
        rc = json_write(&kj, key) || (val ? json_write(&vj, val) : (buf_append(&vj, "null", 4), 0)) || buf_error(&vj)
                 ? DV_ENOMEM
                 : 0;
        tup_w w;
        tup_w_init(&w, &r->val);
        tup_str(&w, (char *)kj.p, kj.len);
        tup_str(&w, (char *)vj.p, vj.len);
        if (!rc && tup_w_finish(&w)) rc = DV_ENOMEM;
        buf_free(&kj);
        buf_free(&vj);
      }
      if (!rc && (rows_prefix_len[s] + r->suffix.len > KV_MAX_KEY || r->val.len > KV_MAX_VALUE)) {
        /* a row past the kv limits is left out (the write that made the
         * document succeeded; CouchDB's limits are per engine too) */
        out->skipped++;
        buf_free(&r->suffix);
        buf_free(&r->val);
        out->n--;
      }
    }
  }
  buf_free(&tmp);
  return rc;
}

static int is_design(const char *id, size_t n) { return n >= 8 && !memcmp(id, "_design/", 8); }

int vw_doc_rows(store_tx *t, const vw_index *ix, vw_session *ss, const size_t *rows_prefix_len, const char *id,
                size_t id_len, dv_arena *a, vw_rows *out) {
  json_val *doc = NULL, *mapped = NULL;
  int rc = 0;
  if (!is_design(id, id_len) || ix->include_design) {
    rc = store_tx_doc(t, id, id_len, STORE_CONFLICTS | STORE_DELETED_CONFLICTS | (ix->local_seq ? STORE_LOCAL_SEQ : 0),
                      a, &doc);
    if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) {
      rc = 0;
      doc = NULL;
    }
  }
  if (!rc && doc) rc = map_doc(ss, doc, a, &mapped);
  if (!rc) rc = rows_of(ix, rows_prefix_len, id, id_len, mapped, out);
  return rc;
}

/* Note a changed row key of a slot for the tree. */
static int note(vw_step_ctx *c, size_t slot, const uint8_t *s, size_t len) {
  vw_changes *ch = &c->changed[slot];
  if (ch->n == ch->cap) {
    size_t cap = ch->cap ? 2 * ch->cap : 64;
    vt_key *k = dv_realloc(ch->k, cap * sizeof *k);
    if (!k) return DV_ENOMEM;
    ch->k = k;
    ch->cap = cap;
  }
  uint8_t *p = arena_alloc(&c->keys, len ? len : 1);
  if (!p) return DV_ENOMEM;
  memcpy(p, s, len);
  ch->k[ch->n++] = (vt_key){p, len};
  return 0;
}

int vw_back_prefix(store_tx *t, const uint8_t *sig, const char *id, size_t n, dv_buf *b) {
  tup_w w;
  vw_key(t, b, &w, sig, "b");
  tup_str(&w, id, n);
  return tup_w_finish(&w) ? DV_ENOMEM : 0;
}

/* Replace a document's rows with `rows` (what vw_doc_rows gave). */
static int put_rows(store_tx *t, vw_step_ctx *c, const char *id, size_t id_len, const vw_rows *nr) {
  const vw_index *ix = c->ix;
  kv_txn *txn = store_tx_kv(t);
  dv_buf bp, be, k, tmp;
  buf_init(&bp);
  buf_init(&be);
  buf_init(&k);
  buf_init(&tmp);
  int rc = vw_back_prefix(t, ix->sig, id, id_len, &bp);
  if (!rc) rc = tup_range(bp.p, bp.len, &tmp, &be) ? DV_ENOMEM : 0;
  const vw_nrow *rows = nr->r;
  /* the old rows, from the back-index: clear those not written again */
  kv_pair *old = NULL;
  int n_old = 0, more = 0;
  if (!rc) rc = kv_get_range(txn, bp.p, bp.len, be.p, be.len, 0, 0, &old, &n_old, &more);
  for (int i = 0; !rc && i < n_old; i++) {
    /* back key = prefix + (Slot, EK, DocID…): its tail after the prefix is (Slot) + suffix */
    tup_r r;
    tup_item sl;
    tup_r_init(&r, old[i].key + bp.len, old[i].key_len - bp.len);
    if (tup_get(&r, TUP_INT, &sl) || sl.i64 < 0 || (size_t)sl.i64 >= ix->n_slots) {
      rc = DV_ECORRUPT;
      break;
    }
    const uint8_t *sfx = r.p;
    size_t sfx_len = (size_t)(r.end - r.p);
    int kept = 0;
    for (size_t j = 0; j < nr->n && !kept; j++)
      kept = rows[j].slot == (size_t)sl.i64 && rows[j].suffix.len == sfx_len && !memcmp(rows[j].suffix.p, sfx, sfx_len);
    if (kept) continue; /* rewritten below, noted there */
    buf_reset(&k);
    buf_append(&k, c->rows_prefix[sl.i64], c->rows_prefix_len[sl.i64]);
    buf_append(&k, sfx, sfx_len);
    rc = buf_error(&k) ? DV_ENOMEM : kv_clear(txn, k.p, k.len);
    if (!rc) rc = kv_clear(txn, old[i].key, old[i].key_len);
    if (!rc) rc = note(c, (size_t)sl.i64, sfx, sfx_len);
  }
  for (size_t j = 0; !rc && j < nr->n; j++) {
    const vw_nrow *r = &rows[j];
    buf_reset(&k);
    buf_append(&k, c->rows_prefix[r->slot], c->rows_prefix_len[r->slot]);
    buf_append(&k, r->suffix.p, r->suffix.len);
    rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, r->val.p, r->val.len);
    if (!rc) {
      buf_reset(&k);
      buf_append(&k, bp.p, bp.len);
      tup_w w;
      tup_w_init(&w, &k);
      tup_int(&w, (int64_t)r->slot);
      rc = tup_w_finish(&w) ? DV_ENOMEM : 0;
      buf_append(&k, r->suffix.p, r->suffix.len);
      if (!rc) rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, "", 0);
    }
    if (!rc) rc = note(c, r->slot, r->suffix.p, r->suffix.len);
    c->rows_written++;
    c->bytes += 2 * (c->rows_prefix_len[r->slot] + r->suffix.len) + r->val.len + 64; /* the row and its back row */
  }
  buf_free(&bp);
  buf_free(&be);
  buf_free(&k);
  buf_free(&tmp);
  return rc;
}

/* Index one document as it is now in t: its winner mapped, or no rows. */
static int index_doc(store_tx *t, vw_step_ctx *c, const char *id, size_t id_len) {
  dv_arena *a = &c->doc_arena;
  arena_reset(a);
  vw_rows rows = {0};
  int rc = vw_doc_rows(t, c->ix, c->ss, c->rows_prefix_len, id, id_len, a, &rows);
  c->skipped += rows.skipped;
  if (!rc) rc = put_rows(t, c, id, id_len, &rows);
  vw_rows_free(&rows);
  c->docs++;
  return rc;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int step_fn(store_tx *t, void *arg) {
  vw_step_ctx *c = arg;
  const vw_index *ix = c->ix;
  arena_reset(&c->a);
  arena_reset(&c->keys);
  for (size_t s = 0; s < ix->n_slots; s++) c->changed[s].n = 0;
  c->docs = c->rows_written = c->bytes = 0;
  c->done = 0;
  vw_state st;
  int rc = vw_state_get(t, ix->sig, 0, &c->a, &st);
  if (rc) return rc;
  if (!st.found) {
    if ((rc = state_new(&st, ix, c->purge_seq_now))) return rc;
  } else if (st.def_len != ix->def_len || memcmp(st.def, ix->def, ix->def_len)) {
    return DV_ECORRUPT; /* a signature collision: MD5 of two definitions */
  }
  for (size_t s = 0; s < ix->n_slots; s++) {
    vw_tree_free(&c->trees[s]);
    if ((rc = vw_tree_def(t, ix, &st, s, &c->trees[s]))) return rc;
    c->rows_prefix[s] = c->trees[s].rows.p;
    c->rows_prefix_len[s] = c->trees[s].rows.len;
  }
  /* purges first: documents that left the changes subspace */
  for (size_t i = 0; !rc && i < c->n_purged; i++)
    if (c->purged[i].seq > st.purge_seq) rc = index_doc(t, c, c->purged[i].id, c->purged[i].len);
  if (!rc && c->n_purged) st.purge_seq = c->purged[c->n_purged - 1].seq > st.purge_seq ? c->purged[c->n_purged - 1].seq
                                                                                        : st.purge_seq;
  store_change *rows = NULL;
  int n = 0, more = 0, i = 0;
  if (!rc) rc = store_tx_changes(t, st.have_seq ? &st.seq : NULL, NULL, STEP_DOCS, KV_SNAPSHOT, &c->a, &rows, &n, &more);
  int64_t t0 = now_ms();
  for (i = 0; !rc && i < n; i++) {
    rc = index_doc(t, c, rows[i].id, rows[i].id_len);
    if (!rc && (now_ms() - t0 > STEP_MS || c->bytes > STEP_BYTES)) {
      i++;
      more = 1;
      break;
    }
  }
  if (rc) return rc;
  for (size_t s = 0; s < ix->n_slots; s++) {
    if (!c->changed[s].n) continue;
    vw_red_ctx rctx;
    vw_red_init(&rctx, ix, s, c->ss, c->rows_prefix_len[s]);
    c->trees[s].d.n_red = ix->slots[s].n_red;
    c->trees[s].d.ops = ix->slots[s].n_red ? &vw_red_ops : NULL;
    c->trees[s].d.ctx = &rctx;
    rc = vt_update(store_tx_kv(t), &c->trees[s].d, c->changed[s].k, c->changed[s].n, NULL);
    vw_red_free(&rctx);
    if (rc) return rc;
  }
  if (i) {
    st.have_seq = 1;
    st.seq = rows[i - 1].seq;
  }
  c->done = !more;
  c->purge_seq = st.purge_seq;
  c->seq = st.seq;
  c->have_seq = st.have_seq;
  return vw_state_put(t, ix->sig, &st);
}

/* Purge infos past `since`, at most STEP_PURGES, into c. */
static int collect_purge(void *arg, const store_purge_info *pi) {
  vw_step_ctx *c = arg;
  if (c->n_purged == STEP_PURGES) return 1;
  char *id = arena_strndup(&c->purge_arena, pi->id, pi->id_len);
  if (!id) return DV_ENOMEM;
  c->purged[c->n_purged++] = (vw_purged){id, pi->id_len, pi->purge_seq};
  return 0;
}

int vw_step(store_db *db, const vw_index *ix, vw_session *ss, int64_t purge_since, vw_step_result *res) {
  vw_step_ctx c;
  memset(&c, 0, sizeof c);
  c.ix = ix;
  c.ss = ss;
  arena_init(&c.a, 0);
  arena_init(&c.keys, 0);
  arena_init(&c.doc_arena, 0);
  arena_init(&c.purge_arena, 0);
  c.changed = dv_calloc(ix->n_slots ? ix->n_slots : 1, sizeof *c.changed);
  c.trees = dv_calloc(ix->n_slots ? ix->n_slots : 1, sizeof *c.trees);
  c.rows_prefix = dv_calloc(ix->n_slots ? ix->n_slots : 1, sizeof *c.rows_prefix);
  c.rows_prefix_len = dv_calloc(ix->n_slots ? ix->n_slots : 1, sizeof *c.rows_prefix_len);
  c.purged = dv_calloc(STEP_PURGES, sizeof *c.purged);
  int rc = c.changed && c.trees && c.rows_prefix && c.rows_prefix_len && c.purged ? 0 : DV_ENOMEM;
  for (size_t s = 0; c.trees && s < ix->n_slots; s++) {
    buf_init(&c.trees[s].rows);
    buf_init(&c.trees[s].nodes);
  }
  if (!rc) rc = store_db_get_purge_seq(db, &c.purge_seq_now);
  if (!rc && purge_since < c.purge_seq_now) {
    rc = store_purge_infos(db, purge_since, collect_purge, &c);
    if (rc == 1) rc = 0;
  }
  if (!rc) rc = store_db_run(db, step_fn, &c);
  if (!rc) {
    res->done = c.done && (c.n_purged < STEP_PURGES);
    res->docs = c.docs;
    res->have_seq = c.have_seq;
    res->seq = c.seq;
    res->skipped = c.skipped;
    res->purge_seq = c.purge_seq;
  }
  for (size_t s = 0; c.trees && s < ix->n_slots; s++) vw_tree_free(&c.trees[s]);
  for (size_t s = 0; c.changed && s < ix->n_slots; s++) dv_free(c.changed[s].k);
  dv_free(c.changed);
  dv_free(c.trees);
  dv_free(c.rows_prefix);
  dv_free(c.rows_prefix_len);
  dv_free(c.purged);
  arena_free(&c.a);
  arena_free(&c.keys);
  arena_free(&c.doc_arena);
  arena_free(&c.purge_arena);
  return rc;
}

struct fresh_arg {
  const vw_index *ix;
  int64_t purge_seq;
  int fresh;
  dv_arena a;
};

/* Is the index already at the database's update_seq and purge_seq? (One
 * snapshot transaction, no query server: most queries need no step.) */
static int fresh_fn(store_tx *t, void *arg) {
  struct fresh_arg *f = arg;
  arena_reset(&f->a);
  vw_state st;
  store_seq now;
  int rc = vw_state_get(t, f->ix->sig, KV_SNAPSHOT, &f->a, &st);
  if (!rc) rc = store_tx_update_seq(t, &now);
  f->fresh = !rc && st.found && st.purge_seq >= f->purge_seq &&
             (store_seq_is_zero(&now) || (st.have_seq && store_seq_cmp(&st.seq, &now) >= 0));
  return rc;
}

/* ---- tasks -------------------------------------------------------------------------- */

#define VW_TASKS 32

static struct {
  pthread_mutex_t mu;
  vw_task t[VW_TASKS];
  int used[VW_TASKS];
} VT = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int task_begin(store_db *db, const vw_index *ix) {
  store_db_info info;
  int64_t total = store_db_info_get(db, &info) ? 0 : info.doc_count + info.doc_del_count;
  pthread_mutex_lock(&VT.mu);
  int i = 0;
  while (i < VW_TASKS && VT.used[i]) i++;
  if (i < VW_TASKS) {
    VT.used[i] = 1;
    vw_task *t = &VT.t[i];
    memset(t, 0, sizeof *t);
    snprintf(t->db, sizeof t->db, "%s", store_db_name(db));
    snprintf(t->ddoc, sizeof t->ddoc, "%s", ix->ddoc_id ? ix->ddoc_id : "");
    t->total_changes = total;
    t->started_on = t->updated_on = (int64_t)time(NULL);
  }
  pthread_mutex_unlock(&VT.mu);
  return i < VW_TASKS ? i : -1;
}

static void task_step(int i, int64_t docs, int end) {
  if (i < 0) return;
  pthread_mutex_lock(&VT.mu);
  if (end) {
    VT.used[i] = 0;
  } else {
    VT.t[i].changes_done += docs;
    if (VT.t[i].total_changes < VT.t[i].changes_done) VT.t[i].total_changes = VT.t[i].changes_done;
    VT.t[i].updated_on = (int64_t)time(NULL);
  }
  pthread_mutex_unlock(&VT.mu);
}

size_t vw_tasks(vw_task *out, size_t max) {
  pthread_mutex_lock(&VT.mu);
  size_t n = 0;
  for (int i = 0; i < VW_TASKS && n < max; i++)
    if (VT.used[i]) out[n++] = VT.t[i];
  pthread_mutex_unlock(&VT.mu);
  return n;
}

int vw_refresh(store_db *db, const vw_index *ix, dv_arena *a, vw_err *e) {
  struct fresh_arg f = {ix, 0, 0, {0}};
  arena_init(&f.a, 0);
  int rc = store_db_get_purge_seq(db, &f.purge_seq);
  if (!rc) rc = store_db_run(db, fresh_fn, &f);
  arena_free(&f.a);
  if (rc || f.fresh) return rc;
  vw_session ss;
  rc = vw_session_open(ix, &ss);
  vw_step_result r = {0};
  int64_t purge_since = 0;
  int task = rc ? -1 : task_begin(db, ix);
  while (!rc) {
    rc = vw_step(db, ix, &ss, purge_since, &r);
    if (!rc) task_step(task, r.docs, 0);
    if (rc || r.done) break;
    purge_since = r.purge_seq;
  }
  task_step(task, 0, 1);
  if (rc && e && ss.e.error) {
    e->error = arena_strndup(a, ss.e.error, strlen(ss.e.error));
    e->reason = arena_strndup(a, ss.e.reason ? ss.e.reason : "", ss.e.reason ? strlen(ss.e.reason) : 0);
  }
  vw_session_close(&ss);
  return rc;
}

/* ---- cleanup -------------------------------------------------------------------------- */

struct cleanup_arg {
  const uint8_t (*keep)[VW_SIG_LEN];
  size_t n_keep;
  dv_buf from;                /* where the next look starts (empty: the first) */
  int done;
  int64_t dropped;
};

/* One transaction: from `from`, the next index's signature; clear it when
 * no design document uses it. */
static int cleanup_fn(store_tx *t, void *arg) {
  struct cleanup_arg *c = arg;
  dv_buf pre, end;
  buf_init(&pre);
  buf_init(&end);
  tup_w w;
  store_tx_ikey(t, &pre, &w);
  tup_strz(&w, "v");
  int rc = tup_w_finish(&w) || tup_strinc(&end, pre.p, pre.len) ? DV_ENOMEM : 0;
  const uint8_t *b = c->from.len ? c->from.p : pre.p;
  size_t bl = c->from.len ? c->from.len : pre.len;
  kv_pair *kv;
  int n = 0, more;
  if (!rc) rc = kv_get_range(store_tx_kv(t), b, bl, end.p, end.len, 1, 0, &kv, &n, &more);
  c->done = !rc && !n;
  if (!rc && n) {
    tup_r r;
    tup_item sig;
    tup_r_init(&r, kv[0].key + pre.len, kv[0].key_len - pre.len);
    if (tup_get(&r, TUP_BYTES, &sig) || sig.s_len != VW_SIG_LEN) rc = DV_ECORRUPT;
    uint8_t s[VW_SIG_LEN];
    if (!rc) tup_item_copy(&sig, s);
    int keep = 0;
    for (size_t i = 0; !rc && i < c->n_keep && !keep; i++) keep = !memcmp(c->keep[i], s, VW_SIG_LEN);
    dv_buf sb, se;
    buf_init(&sb);
    buf_init(&se);
    buf_append(&sb, kv[0].key, pre.len + sig.raw_len);
    if (!rc && (buf_error(&sb) || tup_strinc(&se, sb.p, sb.len))) rc = DV_ENOMEM;
    if (!rc && !keep) {
      rc = kv_clear_range(store_tx_kv(t), sb.p, sb.len, se.p, se.len);
      c->dropped++;
    }
    buf_reset(&c->from);
    buf_append(&c->from, se.p, se.len);
    if (!rc && buf_error(&c->from)) rc = DV_ENOMEM;
    buf_free(&sb);
    buf_free(&se);
  }
  buf_free(&pre);
  buf_free(&end);
  return rc;
}

int vw_cleanup(store_db *db, const uint8_t (*keep)[VW_SIG_LEN], size_t n_keep, int64_t *dropped) {
  struct cleanup_arg c = {keep, n_keep, DV_BUF_INIT, 0, 0};
  int rc = 0;
  while (!rc && !c.done) rc = store_db_run(db, cleanup_fn, &c);
  buf_free(&c.from);
  if (dropped) *dropped = c.dropped;
  return rc;
}

/* ---- info ------------------------------------------------------------------------------ */

struct info_arg {
  const vw_index *ix;
  vw_info *out;
  dv_arena a;
};

static int info_fn(store_tx *t, void *arg) {
  struct info_arg *i = arg;
  arena_reset(&i->a);
  vw_state st;
  int rc = vw_state_get(t, i->ix->sig, KV_SNAPSHOT, &i->a, &st);
  if (rc) return rc;
  memset(i->out, 0, sizeof *i->out);
  i->out->built = st.found;
  i->out->have_seq = st.have_seq;
  i->out->seq = st.seq;
  i->out->purge_seq = st.purge_seq;
  return 0;
}

int vw_info_get(store_db *db, const vw_index *ix, vw_info *out) {
  struct info_arg i = {ix, out, {0}};
  arena_init(&i.a, 0);
  int rc = store_db_run(db, info_fn, &i);
  arena_free(&i.a);
  out->updater_running = vw_building(store_db_name(db), ix);
  return rc;
}

/* ---- the builder: background refreshes (update=lazy, design-document writes) ---- */

typedef struct vw_job {
  struct vw_job *next;
  char *db;
  char *def;
  size_t def_len;
  char *ddoc;                 /* for /_active_tasks */
  uint8_t sig[VW_SIG_LEN];
  int64_t purge_since;        /* the last step's purge_seq */
  int task;                   /* its /_active_tasks row, -1 before the first step */
} vw_job;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t th;
  int started, stop;
  store *s;
  vw_job *q, *tail;
  char running_db[STORE_MAX_DBNAME + 1];
  uint8_t running_sig[VW_SIG_LEN];
  int running;
} VB = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

int vw_building(const char *db, const vw_index *ix) {
  pthread_mutex_lock(&VB.mu);
  int r = VB.running && !strcmp(VB.running_db, db) && !memcmp(VB.running_sig, ix->sig, VW_SIG_LEN);
  pthread_mutex_unlock(&VB.mu);
  return r;
}

static void job_free(vw_job *j) {
  if (!j) return;
  task_step(j->task, 0, 1);
  dv_free(j->db);
  dv_free(j->def);
  dv_free(j->ddoc);
  dv_free(j);
}

void vw_kick(const char *db, const vw_index *ix) {
  pthread_mutex_lock(&VB.mu);
  if (VB.started && !VB.stop) {
    vw_job *j;
    for (j = VB.q; j; j = j->next)
      if (!strcmp(j->db, db) && !memcmp(j->sig, ix->sig, VW_SIG_LEN)) break;
    if (!j && (j = dv_calloc(1, sizeof *j))) {
      j->db = dv_strndup(db, strlen(db));
      j->def = dv_strndup(ix->def, ix->def_len);
      j->def_len = ix->def_len;
      j->ddoc = dv_strndup(ix->ddoc_id ? ix->ddoc_id : "", ix->ddoc_id ? strlen(ix->ddoc_id) : 0);
      j->task = -1;
      memcpy(j->sig, ix->sig, VW_SIG_LEN);
      if (!j->db || !j->def || !j->ddoc) {
        job_free(j);
      } else {
        if (VB.tail) VB.tail->next = j;
        else VB.q = j;
        VB.tail = j;
        pthread_cond_signal(&VB.cv);
      }
    }
  }
  pthread_mutex_unlock(&VB.mu);
}

/* One step of a job (its own transaction, its own session): 1 when the
 * index is up to date (or cannot be built: the error is logged), 0 when
 * steps are left. The builder takes jobs round robin, one step each, so
 * indexes building at once share it. */
static int job_step(vw_job *j) {
  store_db *db;
  if (store_db_open(VB.s, j->db, &db)) return 1; /* the database is gone */
  dv_arena a;
  arena_init(&a, 0);
  vw_index *ix;
  int done = 1;
  if (!vw_from_def(&a, j->def, j->def_len, &ix)) {
    ix->ddoc_id = j->ddoc;
    vw_session ss;
    vw_step_result r = {0};
    int rc = vw_session_open(ix, &ss);
    if (!rc && j->task < 0) j->task = task_begin(db, ix);
    if (!rc) rc = vw_step(db, ix, &ss, j->purge_since, &r);
    if (rc) {
      log_error("view index %s of %s: %s: %s", ix->sig_hex, j->db, ss.e.error ? ss.e.error : dv_err_name(rc),
                ss.e.reason ? ss.e.reason : dv_strerror(rc));
    } else {
      task_step(j->task, r.docs, 0);
      j->purge_since = r.purge_seq;
      done = r.done;
    }
    vw_session_close(&ss);
  }
  arena_free(&a);
  store_db_close(db);
  return done;
}

static void *builder_main(void *arg) {
  dv_thread_name("dv-view-build");
  (void)arg;
  pthread_mutex_lock(&VB.mu);
  while (!VB.stop) {
    vw_job *j = VB.q;
    if (!j) {
      pthread_cond_wait(&VB.cv, &VB.mu);
      continue;
    }
    VB.q = j->next;
    if (!VB.q) VB.tail = NULL;
    j->next = NULL;
    snprintf(VB.running_db, sizeof VB.running_db, "%s", j->db);
    memcpy(VB.running_sig, j->sig, VW_SIG_LEN);
    VB.running = 1;
    pthread_mutex_unlock(&VB.mu);
    int done = job_step(j);
    pthread_mutex_lock(&VB.mu);
    VB.running = 0;
    if (done || VB.stop) {
      pthread_mutex_unlock(&VB.mu);
      job_free(j);
      pthread_mutex_lock(&VB.mu);
    } else { /* the back of the queue: the others' turn first */
      if (VB.tail) VB.tail->next = j;
      else VB.q = j;
      VB.tail = j;
    }
  }
  pthread_mutex_unlock(&VB.mu);
  return NULL;
}

int vw_start(store *s) {
  pthread_mutex_lock(&VB.mu);
  VB.s = s;
  VB.stop = 0;
  int rc = VB.started ? 0 : pthread_create(&VB.th, NULL, builder_main, NULL) ? DV_ENOMEM : 0;
  if (!rc) VB.started = 1;
  pthread_mutex_unlock(&VB.mu);
  return rc;
}

void vw_stop(void) {
  pthread_mutex_lock(&VB.mu);
  int was = VB.started;
  VB.stop = 1;
  pthread_cond_broadcast(&VB.cv);
  pthread_mutex_unlock(&VB.mu);
  if (was) pthread_join(VB.th, NULL);
  pthread_mutex_lock(&VB.mu);
  VB.started = 0;
  while (VB.q) {
    vw_job *j = VB.q;
    VB.q = j->next;
    job_free(j);
  }
  VB.tail = NULL;
  pthread_mutex_unlock(&VB.mu);
}
