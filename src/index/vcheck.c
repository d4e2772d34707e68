/* vcheck.c — a view index held against a rebuild (view.h: vw_check), for
 * `divan check` and GET /_node/{node}/_check through index/icheck.c. It
 * reads only and never commits; every pass works in bounded transactions
 * (at most VC_DOCS documents or VC_ROWS rows, and VC_TXN_MS, each), all of
 * them snapshot reads. Not here: the building (vbuild.c) — the rebuild is
 * the builder's own vw_doc_rows, so the two cannot drift apart.
 *
 * Passes, for an index whose state row exists:
 *   A documents  the changes rows in Sequence order up to the state's
 *                Sequence (the documents the index has reached): each
 *                document's rows as vw_doc_rows gives them now (its winner
 *                mapped in a query server session) against its back-index
 *                rows (I,"v",Sig,"b",DocID,…) and, for each row, the row
 *                KV (I,"v",Sig,"k",Slot,EK,DocID,N) and its value
 *                (KeyJSON, ValueJSON), byte for byte. Documents changed
 *                after the state's Sequence are the next step's: not
 *                compared (their rows are of an older revision, gone).
 *   B rows       every row KV of every slot: its key decodes as (EK,
 *                DocID, N), its value as (KeyJSON, ValueJSON) with EK the
 *                collation key of KeyJSON, and it has its back-index row
 *                (a row the back-index does not name is never cleared).
 *   C back rows  every back-index row decodes, names a row that exists,
 *                and names a document the database has (a deleted one has
 *                its tombstone) — unless a purge of it is not yet applied
 *                to the index (the purge infos past the state's
 *                purge_seq).
 *   D trees      each slot's tree of counts and reductions (vtree.h)
 *                byte-equal to a rebuild from its rows (vt_check; the
 *                reductions run as the builder runs them, JavaScript in
 *                the session), for slots of at most VC_TREE_MAX rows: it
 *                reads every row and node in one transaction and builds
 *                the tree in memory (a larger slot gets a note).
 *
 * Exact beside writes: each of A, B, D relates only keys read in one
 * transaction, and the builder commits a step (rows, back rows, trees,
 * state) in one transaction, so what one snapshot shows of a document's
 * rows, its winner and the state agrees whatever runs beside the check.
 * The one finding that needs two reads is C's "no such document" (a purge
 * in between removes a document the index still names until its next
 * step): those are held until the end and reported only when the
 * database's purge_seq did not move during the check; otherwise one note
 * says they were not checked.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "index/collate.h"
#include "index/view_int.h"
#include "util/alloc.h"

#define VC_DOCS 200          /* changes rows per transaction of pass A */
#define VC_ROWS 500          /* rows per transaction of passes B and C */
#define VC_TXN_MS 1000       /* a transaction takes no more work after this */
#define VC_TREE_MAX 200000   /* rows of a slot whose tree pass D rebuilds in memory */
#define VC_SHOW 160          /* bytes of a key or value shown in a finding */

typedef struct vc_find {
  struct vc_find *next;
  char *id;                  /* document id, NULL when none */
  size_t id_len;
  char *what, *expected;
  int held;                  /* a "no such document" finding (see the header) */
} vc_find;

typedef struct vc {
  store_db *db;
  const char *name;          /* the database's */
  const vw_index *ix;
  store_check_out *out;
  vw_session ss;
  int ss_open;
  dv_arena a;                /* a step's memory, its findings too */
  vc_find *found, **tail;    /* this step's findings */
  dv_arena held_a;           /* held findings, to the end */
  vc_find *held, **held_tail;
  size_t n_held;
  /* where the passes are (committed after each step) */
  int have_after;
  store_seq after;           /* A: changes after this */
  size_t slot;               /* B: the slot walked */
  dv_buf from;               /* B, C: resume after this key (empty: from the start) */
  int done;
  /* a step's results, committed by the driver when it succeeds */
  int s_have_after, s_done, s_gone;
  store_seq s_after;
  dv_buf s_from;
  int64_t s_docs, s_rows, s_skipped;
  /* C: the last document whose existence was read (its finding, if any, made once) */
  dv_buf last_doc, s_last;
  /* purges not yet applied to the index when the check began */
  char **pending;
  size_t *pending_len, n_pending, cap_pending;
  int pending_lost;          /* infos past the limit were dropped: cannot tell */
  int64_t state_purge_seq;
  int64_t docs, rows, skipped;   /* A: documents compared; B: rows seen; A: past the state */
  int64_t *slot_rows;        /* B: rows per slot */
  int gone;                  /* the index was dropped during the check */
  const char **slot_names;   /* per slot, for messages (in held_a) */
} vc;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The views of a slot, for messages: "v" or "count,stats,sum" (views
 * that share a map share its rows and its tree). */
static const char *slot_view(const vc *c, size_t slot) { return c->slot_names[slot]; }

static int slot_names(vc *c) {
  c->slot_names = arena_alloc(&c->held_a, (c->ix->n_slots ? c->ix->n_slots : 1) * sizeof *c->slot_names);
  if (!c->slot_names) return DV_ENOMEM;
  for (size_t s = 0; s < c->ix->n_slots; s++) {
    dv_buf b;
    buf_init(&b);
    for (size_t i = 0; i < c->ix->n_views; i++)
      if (c->ix->views[i].slot == s) buf_printf(&b, "%s%s", b.len ? "," : "", c->ix->views[i].name);
    c->slot_names[s] = buf_error(&b) ? NULL : arena_strndup(&c->held_a, b.len ? (const char *)b.p : "?", b.len ? b.len : 1);
    buf_free(&b);
    if (!c->slot_names[s]) return DV_ENOMEM;
  }
  return 0;
}

/* Record a finding of this step (printf-formatted what). */
static int vc_add(vc *c, int held, const char *id, size_t id_len, const char *expected, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int vc_add(vc *c, int held, const char *id, size_t id_len, const char *expected, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[1024];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof tmp) n = sizeof tmp - 1;
  vc_find *f = arena_alloc(&c->a, sizeof *f);
  if (!f) return DV_ENOMEM;
  memset(f, 0, sizeof *f);
  f->held = held;
  f->what = arena_strndup(&c->a, tmp, (size_t)n);
  f->expected = expected ? arena_strndup(&c->a, expected, strlen(expected)) : NULL;
  if (id) {
    f->id = arena_strndup(&c->a, id, id_len);
    f->id_len = id_len;
  }
  if (!f->what || (expected && !f->expected) || (id && !f->id)) return DV_ENOMEM;
  *c->tail = f;
  c->tail = &f->next;
  return 0;
}

/* A JSON text for a message, cut at VC_SHOW bytes. */
static const char *show(dv_arena *a, const uint8_t *p, size_t n) {
  if (n <= VC_SHOW) return arena_strndup(a, (const char *)p, n);
  char *s = arena_alloc(a, VC_SHOW + 4);
  if (!s) return "…";
  memcpy(s, p, VC_SHOW);
  memcpy(s + VC_SHOW, "...", 4);
  return s;
}

/* A row value (KeyJSON, ValueJSON): 0 with both, DV_ECORRUPT. */
static int row_val(const uint8_t *v, size_t vl, tup_item *k, tup_item *val) {
  tup_r r;
  tup_r_init(&r, v, vl);
  if (tup_get(&r, TUP_STR, k) || tup_get(&r, TUP_STR, val) || r.p != r.end) return DV_ECORRUPT;
  return 0;
}

/* "key K value V" of a row value, in a. */
static const char *row_text(dv_arena *a, const uint8_t *v, size_t vl) {
  tup_item k, val;
  if (row_val(v, vl, &k, &val)) return "(an undecodable value)";
  char *kb = arena_alloc(a, k.s_len + 1), *vb = arena_alloc(a, val.s_len + 1);
  if (!kb || !vb) return "?";
  tup_item_copy(&k, (uint8_t *)kb);
  tup_item_copy(&val, (uint8_t *)vb);
  const char *ks = show(a, (uint8_t *)kb, k.s_len), *vs = show(a, (uint8_t *)vb, val.s_len);
  size_t n = strlen(ks) + strlen(vs) + 16;
  char *out = arena_alloc(a, n);
  if (!out) return "?";
  snprintf(out, n, "key %s value %s", ks, vs);
  return out;
}

static int is_qs_err(int rc) {
  return rc == DV_EQS || rc == DV_EQS_COMPILE || rc == DV_EQS_PROCESS || rc == DV_EQS_RENDER || rc == DV_EQS_LANG;
}

static int session(vc *c) {
  if (c->ss_open) return 0;
  int rc = vw_session_open(c->ix, &c->ss);
  c->ss_open = 1; /* closed by vw_check whatever happened (it accepts a failed open) */
  return rc;
}

/* The slots' trees (rows prefixes) as the state in t names them. */
static int trees_of(store_tx *t, vc *c, const vw_state *st, vw_tree *tr, size_t *plen) {
  for (size_t s = 0; s < c->ix->n_slots; s++) {
    int rc = vw_tree_def(t, c->ix, st, s, &tr[s]);
    if (rc) return rc;
    plen[s] = tr[s].rows.len;
  }
  return 0;
}

static void trees_free(vc *c, vw_tree *tr) {
  for (size_t s = 0; s < c->ix->n_slots; s++) vw_tree_free(&tr[s]);
}

/* ---- A: documents ------------------------------------------------------------------ */

/* One document's stored rows against nr (a rebuild's). */
static int cmp_doc(store_tx *t, vc *c, const vw_tree *tr, const char *id, size_t idl, const vw_rows *nr) {
  kv_txn *txn = store_tx_kv(t);
  dv_buf bp, bb, be, k;
  buf_init(&bp);
  buf_init(&bb);
  buf_init(&be);
  buf_init(&k);
  uint8_t *matched = dv_calloc(nr->n ? nr->n : 1, 1);
  int rc = matched ? vw_back_prefix(t, c->ix->sig, id, idl, &bp) : DV_ENOMEM;
  if (!rc) rc = tup_range(bp.p, bp.len, &bb, &be) ? DV_ENOMEM : 0;
  kv_pair *old = NULL;
  int n_old = 0, more = 0;
  if (!rc) rc = kv_get_range(txn, bb.p, bb.len, be.p, be.len, 0, KV_SNAPSHOT, &old, &n_old, &more);
  const char *vn = NULL;
  for (int i = 0; !rc && i < n_old; i++) {
    tup_r r;
    tup_item sl;
    tup_r_init(&r, old[i].key + bp.len, old[i].key_len - bp.len);
    if (tup_get(&r, TUP_INT, &sl) || sl.i64 < 0 || (size_t)sl.i64 >= c->ix->n_slots) {
      rc = vc_add(c, 0, id, idl, NULL, "view %s (index %s): a back-index row of the document does not decode",
                  c->ix->ddoc_id, c->ix->sig_hex);
      continue;
    }
    const uint8_t *sfx = r.p;
    size_t sl_len = (size_t)(r.end - r.p);
    size_t j = 0;
    while (j < nr->n && !(nr->r[j].slot == (size_t)sl.i64 && nr->r[j].suffix.len == sl_len &&
                          !memcmp(nr->r[j].suffix.p, sfx, sl_len)))
      j++;
    if (j < nr->n) {
      matched[j] = 1;
      continue;
    }
    /* a row the rebuild does not give: show it when it is there */
    vn = slot_view(c, (size_t)sl.i64);
    buf_reset(&k);
    buf_append(&k, tr[sl.i64].rows.p, tr[sl.i64].rows.len);
    buf_append(&k, sfx, sl_len);
    const uint8_t *v;
    size_t vl;
    int found = 0;
    rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
    if (rc) break;
    if (found)
      rc = vc_add(c, 0, id, idl, "no such row (a rebuild from the document does not give it)",
                  "view %s/%s: a stale row, %s", c->ix->ddoc_id, vn, row_text(&c->a, v, vl));
    else
      rc = vc_add(c, 0, id, idl, "neither (a rebuild from the document gives no such row)",
                  "view %s/%s: a back-index row whose row is missing", c->ix->ddoc_id, vn);
  }
  for (size_t j = 0; !rc && j < nr->n; j++) {
    const vw_nrow *w = &nr->r[j];
    vn = slot_view(c, w->slot);
    buf_reset(&k);
    buf_append(&k, tr[w->slot].rows.p, tr[w->slot].rows.len);
    buf_append(&k, w->suffix.p, w->suffix.len);
    const uint8_t *v;
    size_t vl;
    int found = 0;
    rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
    if (rc) break;
    const char *want = row_text(&c->a, w->val.p, w->val.len);
    char exp[600];
    if (!found) {
      snprintf(exp, sizeof exp, "the row %s (a rebuild from the document gives it)", want);
      rc = vc_add(c, 0, id, idl, exp, "view %s/%s: a row is missing", c->ix->ddoc_id, vn);
    } else if (vl != w->val.len || memcmp(v, w->val.p, vl)) {
      snprintf(exp, sizeof exp, "%s (a rebuild from the document)", want);
      rc = vc_add(c, 0, id, idl, exp, "view %s/%s: a row differs: the index has %s", c->ix->ddoc_id, vn,
                  row_text(&c->a, v, vl));
    }
    if (!rc && !matched[j])
      rc = vc_add(c, 0, id, idl, "a back-index row for each row of the document",
                  "view %s/%s: the row %s has no back-index row", c->ix->ddoc_id, vn, want);
  }
  dv_free(matched);
  buf_free(&bp);
  buf_free(&bb);
  buf_free(&be);
  buf_free(&k);
  return rc;
}

static int docs_fn(store_tx *t, void *arg) {
  vc *c = arg;
  arena_reset(&c->a);
  c->found = NULL;
  c->tail = &c->found;
  c->s_docs = c->s_rows = c->s_skipped = 0;
  c->s_have_after = c->have_after;
  c->s_after = c->after;
  c->s_done = c->s_gone = 0;
  int64_t t0 = now_ms();
  vw_state st;
  int rc = vw_state_get(t, c->ix->sig, KV_SNAPSHOT, &c->a, &st);
  if (rc) return rc;
  if (!st.found) {
    c->s_gone = c->s_done = 1;
    return 0;
  }
  if (!st.have_seq) { /* nothing indexed yet */
    c->s_done = 1;
    return 0;
  }
  vw_tree *tr = arena_alloc(&c->a, c->ix->n_slots * sizeof *tr);
  size_t *plen = arena_alloc(&c->a, c->ix->n_slots * sizeof *plen);
  if (!tr || !plen) return DV_ENOMEM;
  memset(tr, 0, c->ix->n_slots * sizeof *tr);
  rc = trees_of(t, c, &st, tr, plen);
  store_change *rows = NULL;
  int n = 0, more = 0;
  if (!rc) rc = store_tx_changes(t, c->have_after ? &c->after : NULL, NULL, VC_DOCS, KV_SNAPSHOT, &c->a, &rows, &n, &more);
  int i;
  for (i = 0; !rc && i < n; i++) {
    if (store_seq_cmp(&rows[i].seq, &st.seq) > 0) { /* past the index: the next step's */
      c->s_done = 1;
      break;
    }
    vw_rows nr = {0};
    rc = session(c);
    if (!rc) rc = vw_doc_rows(t, c->ix, &c->ss, plen, rows[i].id, rows[i].id_len, &c->a, &nr);
    if (!rc) rc = cmp_doc(t, c, tr, rows[i].id, rows[i].id_len, &nr);
    c->s_skipped += nr.skipped;
    c->s_rows += (int64_t)nr.n;
    vw_rows_free(&nr);
    if (rc) break;
    c->s_docs++;
    c->s_have_after = 1;
    c->s_after = rows[i].seq;
    if (now_ms() - t0 > VC_TXN_MS) {
      i++;
      break;
    }
  }
  if (!rc && i == n && !more) c->s_done = 1;
  trees_free(c, tr);
  return rc;
}

/* ---- B: rows ----------------------------------------------------------------------- */

/* One row KV of slot s: decodes, EK is its key's, its back row exists. */
static int check_row(store_tx *t, vc *c, size_t s, const vw_tree *tr, const kv_pair *p) {
  const char *vn = slot_view(c, s);
  tup_r r;
  tup_item ek, id, num;
  tup_r_init(&r, p->key + tr[s].rows.len, p->key_len - tr[s].rows.len);
  if (tup_get(&r, TUP_BYTES, &ek) || tup_get(&r, TUP_STR, &id) || tup_get(&r, TUP_INT, &num) || r.p != r.end)
    return vc_add(c, 0, NULL, 0, "(EK, DocID, N)", "view %s/%s: a row key does not decode", c->ix->ddoc_id, vn);
  char *idb = arena_alloc(&c->a, id.s_len + 1);
  uint8_t *ekb = arena_alloc(&c->a, ek.s_len + 1);
  if (!idb || !ekb) return DV_ENOMEM;
  tup_item_copy(&id, (uint8_t *)idb);
  tup_item_copy(&ek, ekb);
  tup_item kj, vj;
  if (row_val(p->val, p->val_len, &kj, &vj))
    return vc_add(c, 0, idb, id.s_len, "(KeyJSON, ValueJSON)", "view %s/%s: a row value does not decode",
                  c->ix->ddoc_id, vn);
  char *kb = arena_alloc(&c->a, kj.s_len + 1), *vb = arena_alloc(&c->a, vj.s_len + 1);
  if (!kb || !vb) return DV_ENOMEM;
  tup_item_copy(&kj, (uint8_t *)kb);
  tup_item_copy(&vj, (uint8_t *)vb);
  json_val *kv = NULL, *vv = NULL;
  int prc = json_parse(&c->a, kb, kj.s_len, NULL, &kv, NULL);
  if (!prc) prc = json_parse(&c->a, vb, vj.s_len, NULL, &vv, NULL);
  if (prc == DV_ENOMEM) return prc;
  if (prc)
    return vc_add(c, 0, idb, id.s_len, "JSON texts", "view %s/%s: a row's key or value is not JSON: %s",
                  c->ix->ddoc_id, vn, row_text(&c->a, p->val, p->val_len));
  dv_buf want, k;
  buf_init(&want);
  buf_init(&k);
  int rc = c->ix->slots[s].raw ? collate_raw_key(&want, kv) : collate_key(&want, kv);
  if (!rc && (want.len != ek.s_len || memcmp(want.p, ekb, ek.s_len)))
    rc = vc_add(c, 0, idb, id.s_len, "the collation key of the row's key",
                "view %s/%s: the row %s sorts under another key", c->ix->ddoc_id, vn,
                row_text(&c->a, p->val, p->val_len));
  if (!rc) rc = vw_back_prefix(t, c->ix->sig, idb, id.s_len, &k);
  if (!rc) {
    tup_w w;
    tup_w_init(&w, &k);
    tup_int(&w, (int64_t)s);
    rc = tup_w_finish(&w) ? DV_ENOMEM : 0;
    buf_append(&k, p->key + tr[s].rows.len, p->key_len - tr[s].rows.len);
  }
  const uint8_t *v;
  size_t vl;
  int found = 0;
  if (!rc) rc = buf_error(&k) ? DV_ENOMEM : kv_get(store_tx_kv(t), k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
  if (!rc && !found)
    rc = vc_add(c, 0, idb, id.s_len, "a back-index row for each row (else it is never cleared)",
                "view %s/%s: the row %s has no back-index row", c->ix->ddoc_id, vn,
                row_text(&c->a, p->val, p->val_len));
  buf_free(&want);
  buf_free(&k);
  return rc;
}

/* Read up to VC_ROWS KVs under prefix (pre), after c->from. */
static int next_batch(store_tx *t, vc *c, const dv_buf *pre, kv_pair **p, int *n, int *more) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  if (c->from.len) {
    buf_append(&b, c->from.p, c->from.len);
    buf_putc(&b, 0);
  } else {
    buf_append(&b, pre->p, pre->len);
  }
  buf_append(&e, pre->p, pre->len);
  buf_putc(&e, 0xff);
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM
                                          : kv_get_range(store_tx_kv(t), b.p, b.len, e.p, e.len, VC_ROWS, KV_SNAPSHOT, p,
                                                         n, more);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

static void step_begin(vc *c) {
  arena_reset(&c->a);
  c->found = NULL;
  c->tail = &c->found;
  c->s_rows = 0;
  c->s_done = c->s_gone = 0;
  buf_reset(&c->s_from);
}

static int rows_fn(store_tx *t, void *arg) {
  vc *c = arg;
  step_begin(c);
  int64_t t0 = now_ms();
  vw_state st;
  int rc = vw_state_get(t, c->ix->sig, KV_SNAPSHOT, &c->a, &st);
  if (rc) return rc;
  if (!st.found) {
    c->s_gone = c->s_done = 1;
    return 0;
  }
  vw_tree *tr = arena_alloc(&c->a, c->ix->n_slots * sizeof *tr);
  size_t *plen = arena_alloc(&c->a, c->ix->n_slots * sizeof *plen);
  if (!tr || !plen) return DV_ENOMEM;
  memset(tr, 0, c->ix->n_slots * sizeof *tr);
  rc = trees_of(t, c, &st, tr, plen);
  kv_pair *p = NULL;
  int n = 0, more = 0, i;
  if (!rc) rc = next_batch(t, c, &tr[c->slot].rows, &p, &n, &more);
  for (i = 0; !rc && i < n; i++) {
    rc = check_row(t, c, c->slot, tr, &p[i]);
    c->s_rows++;
    if (now_ms() - t0 > VC_TXN_MS) {
      i++;
      break;
    }
  }
  if (!rc && i) {
    buf_append(&c->s_from, p[i - 1].key, p[i - 1].key_len);
    if (buf_error(&c->s_from)) rc = DV_ENOMEM;
  }
  if (!rc && i == n && !more) c->s_done = 1;
  trees_free(c, tr);
  return rc;
}

/* ---- C: back-index rows ----------------------------------------------------------- */

static int pending(const vc *c, const char *id, size_t n) {
  for (size_t i = 0; i < c->n_pending; i++)
    if (c->pending_len[i] == n && !memcmp(c->pending[i], id, n)) return 1;
  return 0;
}

static int back_fn(store_tx *t, void *arg) {
  vc *c = arg;
  step_begin(c);
  int64_t t0 = now_ms();
  vw_state st;
  int rc = vw_state_get(t, c->ix->sig, KV_SNAPSHOT, &c->a, &st);
  if (rc) return rc;
  if (!st.found) {
    c->s_gone = c->s_done = 1;
    return 0;
  }
  vw_tree *tr = arena_alloc(&c->a, c->ix->n_slots * sizeof *tr);
  size_t *plen = arena_alloc(&c->a, c->ix->n_slots * sizeof *plen);
  if (!tr || !plen) return DV_ENOMEM;
  memset(tr, 0, c->ix->n_slots * sizeof *tr);
  rc = trees_of(t, c, &st, tr, plen);
  dv_buf pre, k;
  buf_init(&pre);
  buf_init(&k);
  tup_w w;
  vw_key(t, &pre, &w, c->ix->sig, "b");
  if (!rc && tup_w_finish(&w)) rc = DV_ENOMEM;
  kv_pair *p = NULL;
  int n = 0, more = 0, i;
  /* which document the last one seen is, as this step began (a retried step starts again from it) */
  dv_buf last;
  buf_init(&last);
  buf_append(&last, c->last_doc.p, c->last_doc.len);
  if (!rc) rc = next_batch(t, c, &pre, &p, &n, &more);
  for (i = 0; !rc && i < n; i++) {
    tup_r r;
    tup_item id, sl, ek, id2, num;
    tup_r_init(&r, p[i].key + pre.len, p[i].key_len - pre.len);
    if (tup_get(&r, TUP_STR, &id) || tup_get(&r, TUP_INT, &sl) || sl.i64 < 0 || (size_t)sl.i64 >= c->ix->n_slots ||
        tup_get(&r, TUP_BYTES, &ek) || tup_get(&r, TUP_STR, &id2) || tup_get(&r, TUP_INT, &num) || r.p != r.end ||
        id.s_len != id2.s_len) {
      rc = vc_add(c, 0, NULL, 0, "(DocID, Slot, EK, DocID, N) with a slot of the index",
                  "view %s (index %s): a back-index row key does not decode", c->ix->ddoc_id, c->ix->sig_hex);
      c->s_rows++;
      continue;
    }
    char *idb = arena_alloc(&c->a, id.s_len + 1);
    if (!idb) {
      rc = DV_ENOMEM;
      break;
    }
    tup_item_copy(&id, (uint8_t *)idb);
    const char *vn = slot_view(c, (size_t)sl.i64);
    /* its row */
    const uint8_t *sfx = ek.raw;
    size_t sfx_len = (size_t)(p[i].key + p[i].key_len - sfx);
    buf_reset(&k);
    buf_append(&k, tr[sl.i64].rows.p, tr[sl.i64].rows.len);
    buf_append(&k, sfx, sfx_len);
    const uint8_t *v;
    size_t vl;
    int found = 0;
    rc = buf_error(&k) ? DV_ENOMEM : kv_get(store_tx_kv(t), k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
    if (!rc && !found)
      rc = vc_add(c, 0, idb, id.s_len, "the row it names", "view %s/%s: a back-index row whose row is missing",
                  c->ix->ddoc_id, vn);
    /* its document (once per document) */
    if (!rc && !(last.len == id.s_len && !memcmp(last.p, idb, id.s_len))) {
      buf_reset(&last);
      buf_append(&last, idb, id.s_len);
      json_val *doc;
      int drc = store_tx_doc(t, idb, id.s_len, 0, &c->a, &doc);
      if (drc && drc != DV_ENOT_FOUND && drc != DV_EDELETED) rc = drc;
      if (!rc && drc == DV_ENOT_FOUND && !pending(c, idb, id.s_len))
        rc = vc_add(c, 1, idb, id.s_len, "no index rows for a document the database does not have",
                    "view %s/%s: rows of a document the database does not have", c->ix->ddoc_id, vn);
    }
    c->s_rows++;
    if (!rc && now_ms() - t0 > VC_TXN_MS) {
      i++;
      break;
    }
  }
  if (!rc && i) {
    buf_append(&c->s_from, p[i - 1].key, p[i - 1].key_len);
    if (buf_error(&c->s_from)) rc = DV_ENOMEM;
  }
  if (!rc && i == n && !more) c->s_done = 1;
  if (!rc) { /* the last document, kept only when the step succeeds */
    buf_reset(&c->s_last);
    buf_append(&c->s_last, last.p, last.len);
    if (buf_error(&c->s_last)) rc = DV_ENOMEM;
  }
  buf_free(&pre);
  buf_free(&k);
  buf_free(&last);
  trees_free(c, tr);
  return rc;
}

/* ---- D: trees ---------------------------------------------------------------------- */

static int tree_fn(store_tx *t, void *arg) {
  vc *c = arg;
  step_begin(c);
  vw_state st;
  int rc = vw_state_get(t, c->ix->sig, KV_SNAPSHOT, &c->a, &st);
  if (rc) return rc;
  if (!st.found) {
    c->s_gone = c->s_done = 1;
    return 0;
  }
  vw_tree tr;
  rc = vw_tree_def(t, c->ix, &st, c->slot, &tr);
  vw_red_ctx rx;
  vw_red_init(&rx, c->ix, c->slot, &c->ss, tr.rows.len);
  tr.d.ctx = &rx;
  dv_buf why;
  buf_init(&why);
  if (!rc) rc = vt_check(store_tx_kv(t), &tr.d, &why);
  if (rc == DV_ECORRUPT)
    rc = vc_add(c, 0, NULL, 0, "the nodes a rebuild from the slot's rows makes (vtree.h)",
                "view %s/%s: its tree of counts and reductions differs from a rebuild: %.*s", c->ix->ddoc_id,
                slot_view(c, c->slot), (int)(why.len < 400 ? why.len : 400), why.len ? (const char *)why.p : "");
  vw_red_free(&rx);
  buf_free(&why);
  vw_tree_free(&tr);
  return rc;
}

/* ---- the driver -------------------------------------------------------------------- */

/* Hand out the findings of a step that succeeded (held ones kept). */
static int flush(vc *c) {
  int rc = 0;
  for (vc_find *f = c->found; !rc && f; f = f->next) {
    if (f->held) {
      vc_find *h = arena_alloc(&c->held_a, sizeof *h);
      if (!h) return DV_ENOMEM;
      *h = *f;
      h->next = NULL;
      h->what = arena_strndup(&c->held_a, f->what, strlen(f->what));
      h->expected = f->expected ? arena_strndup(&c->held_a, f->expected, strlen(f->expected)) : NULL;
      h->id = f->id ? arena_strndup(&c->held_a, f->id, f->id_len) : NULL;
      if (!h->what || (f->expected && !h->expected) || (f->id && !h->id)) return DV_ENOMEM;
      *c->held_tail = h;
      c->held_tail = &h->next;
      c->n_held++;
      continue;
    }
    store_check_item it = {.db = c->name, .id = f->id, .id_len = f->id_len, .what = f->what, .expected = f->expected};
    rc = store_check_emit(c->out, &it);
  }
  c->found = NULL;
  c->tail = &c->found;
  return rc;
}

static int vc_note(vc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vc_note(vc *c, const char *fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  store_check_item it = {.db = c->name, .what = what, .note = 1};
  return store_check_emit(c->out, &it);
}

static int pending_cb(void *arg, const store_purge_info *pi) {
  vc *c = arg;
  if (pi->purge_seq <= c->state_purge_seq) return 0;
  if (!c->n_pending && pi->purge_seq != c->state_purge_seq + 1) c->pending_lost = 1; /* dropped past the limit */
  if (c->n_pending == c->cap_pending) {
    size_t nc = c->cap_pending ? 2 * c->cap_pending : 16;
    char **np = dv_realloc(c->pending, nc * sizeof *np);
    if (!np) return DV_ENOMEM;
    c->pending = np;
    size_t *nl = dv_realloc(c->pending_len, nc * sizeof *nl);
    if (!nl) return DV_ENOMEM;
    c->pending_len = nl;
    c->cap_pending = nc;
  }
  char *id = dv_strndup(pi->id, pi->id_len);
  if (!id) return DV_ENOMEM;
  c->pending[c->n_pending] = id;
  c->pending_len[c->n_pending++] = pi->id_len;
  return 0;
}

/* Run one pass: fn step after step until it is done; after each step its
 * findings go out and commit(c) moves the pass's cursor. */
static int run_pass(vc *c, store_tx_fn fn, void (*commit)(vc *c)) {
  int rc = 0;
  c->done = 0;
  buf_reset(&c->from);
  while (!rc && !c->done && !c->gone) {
    rc = store_db_run(c->db, fn, c);
    if (!rc) rc = flush(c);
    if (rc) break;
    commit(c);
    c->done = c->s_done;
    c->gone = c->s_gone;
  }
  return rc;
}

static void commit_docs(vc *c) {
  c->have_after = c->s_have_after;
  c->after = c->s_after;
  c->docs += c->s_docs;
  c->skipped += c->s_skipped;
}

static void commit_from(vc *c) {
  buf_reset(&c->from);
  buf_append(&c->from, c->s_from.p, c->s_from.len);
}

static void commit_rows(vc *c) {
  commit_from(c);
  c->rows += c->s_rows;
  c->slot_rows[c->slot] += c->s_rows;
}

static void commit_back(vc *c) {
  commit_from(c);
  buf_reset(&c->last_doc);
  buf_append(&c->last_doc, c->s_last.p, c->s_last.len);
}

static void commit_tree(vc *c) { c->s_done = 1; }

int vw_check(store_db *db, const vw_index *ix, store_check_out *out, int64_t *rows) {
  vc c;
  memset(&c, 0, sizeof c);
  c.db = db;
  c.name = store_db_name(db);
  c.ix = ix;
  c.out = out;
  arena_init(&c.a, 0);
  arena_init(&c.held_a, 0);
  c.tail = &c.found;
  c.held_tail = &c.held;
  buf_init(&c.from);
  buf_init(&c.s_from);
  buf_init(&c.last_doc);
  buf_init(&c.s_last);
  c.slot_rows = dv_calloc(ix->n_slots ? ix->n_slots : 1, sizeof *c.slot_rows);
  int64_t p0 = 0, p1 = 0;
  vw_info in;
  int rc = c.slot_rows ? slot_names(&c) : DV_ENOMEM;
  if (!rc) rc = store_db_get_purge_seq(db, &p0);
  if (!rc) rc = vw_info_get(db, ix, &in);
  if (!rc && !in.built) goto done;
  c.state_purge_seq = in.purge_seq;
  if (!rc && in.purge_seq < p0) {
    rc = store_purge_infos(db, in.purge_seq, pending_cb, &c);
    if (!rc && !c.n_pending) c.pending_lost = 1;
  }
  /* A, B per slot, C, D per slot */
  if (!rc) rc = run_pass(&c, docs_fn, commit_docs);
  for (c.slot = 0; !rc && !c.gone && c.slot < ix->n_slots; c.slot++) rc = run_pass(&c, rows_fn, commit_rows);
  if (!rc && !c.gone) rc = run_pass(&c, back_fn, commit_back);
  for (c.slot = 0; !rc && !c.gone && c.slot < ix->n_slots; c.slot++) {
    if (c.slot_rows[c.slot] > VC_TREE_MAX) {
      rc = vc_note(&c, "view %s/%s: its tree not compared with a rebuild: %lld rows, more than %d", ix->ddoc_id,
                   slot_view(&c, c.slot), (long long)c.slot_rows[c.slot], VC_TREE_MAX);
      continue;
    }
    int js = 0;
    for (size_t r = 0; r < ix->slots[c.slot].n_red; r++) js |= ix->slots[c.slot].kinds[r] == VR_JS;
    if (js) rc = session(&c);
    if (!rc) rc = run_pass(&c, tree_fn, commit_tree);
  }
  if (!rc) rc = store_db_get_purge_seq(db, &p1);
  if (!rc && c.gone) {
    rc = vc_note(&c, "view %s (index %s): not compared: the index was dropped during the check", ix->ddoc_id,
                 ix->sig_hex);
  } else if (!rc && c.n_held && (p0 != p1 || c.pending_lost)) {
    rc = vc_note(&c, "view %s: %zu rows of documents the database does not have not reported: %s", ix->ddoc_id, c.n_held,
                 p0 != p1 ? "the database was purged during the check" : "purges the index has not applied were dropped");
  } else {
    for (vc_find *f = c.held; !rc && f; f = f->next) {
      store_check_item it = {.db = c.name, .id = f->id, .id_len = f->id_len, .what = f->what, .expected = f->expected};
      rc = store_check_emit(out, &it);
    }
  }
  if (rc && is_qs_err(rc)) { /* a function failed: the rebuild cannot be made here */
    rc = vc_note(&c, "view %s: not compared with a rebuild: the query server failed: %s: %s", ix->ddoc_id,
                 c.ss.e.error ? c.ss.e.error : dv_err_name(rc), c.ss.e.reason ? c.ss.e.reason : dv_strerror(rc));
  }
done:
  if (rows) *rows = c.rows;
  if (c.ss_open) vw_session_close(&c.ss);
  for (size_t i = 0; i < c.n_pending; i++) dv_free(c.pending[i]);
  dv_free(c.pending);
  dv_free(c.pending_len);
  dv_free(c.slot_rows);
  buf_free(&c.from);
  buf_free(&c.s_from);
  buf_free(&c.last_doc);
  buf_free(&c.s_last);
  arena_free(&c.a);
  arena_free(&c.held_a);
  return rc;
}
