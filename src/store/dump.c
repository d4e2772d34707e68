/* dump.c — store_dump / store_load (dump.h): one database's keys to a
 * dump file (dumpfmt.h) and back, in bounded transactions.
 *
 * What is copied. Every key of a database lives under P = (R,1,DbPrefix)
 * (store_int.h: "r", "d", "c", "l", "m", "p", "a", "i") and names nothing
 * outside it, so a dump is the database's KVs with P stripped, and a load
 * writes them under a new prefix: revision trees, bodies, changes rows
 * keyed (Incarnation, Versionstamp), update_seq, local documents,
 * attachments, revs_limit, _security, purge infos and index rows come
 * back byte-identical. Outside P only the dbs row (R,0,"dbs",Name)
 * matters: the header carries the source's name and Incarnation. Not
 * copied: (R,0,"att_uploads") (uploads not linked to a revision) and the
 * _db_updates rows (the load writes a "created" event as create does).
 *
 * Dump, while the source stays writable:
 *   read update_seq S0, purge_seq Q0
 *   full pass  ─▶ every KV of P in key order, each transaction a snapshot
 *                 reading at most STORE_DUMP_TXN_BYTES / STORE_DUMP_TXN_MS
 *                 and the next starting after its last key; skipped: the
 *                 "l" and "m" subspaces (sections at the end) and changes
 *                 rows newer than S0 (their documents are caught up)
 *   round r = 1.. ─▶ read S_r, Q_r
 *     catch-up ─▶ for each changes row newer than S_{r-1} and each purge
 *                 info newer than Q_{r-1}: its document as one
 *                 replace-document record ('D' id, its "r", "d", "a" KVs
 *                 and its current changes row, 'E'), read in one
 *                 transaction
 *     sections ─▶ 'S' + every KV of "m" and "l"; and, once anything moved
 *                 since S0/Q0, of "p" and "i" (index rows follow documents)
 *     read S', Q' ─▶ equal to S_r, Q_r: nothing was written during the
 *                 round, every record since is that state: trailer, done.
 *                 Else another round, at most max_rounds (then the dump
 *                 fails: "the database kept changing").
 * Why one changes row per document comes out: the full pass copies changes
 * rows <= S0 only, and a document has one row at any time, every row
 * written after S0 being > S0; so the target holds at most one row per
 * document from the full pass — the one it had at S0 — and for a document
 * changed since, the loader finds and clears exactly that row (below).
 * Local documents and _security do not move update_seq: they are copied
 * last, as sections, in every round.
 *
 * Load, into a new name:
 *   refuse an existing name ─▶ allocate a prefix (prefix_counter, as create)
 *   stream records into batches of STORE_DUMP_TXN_BYTES; one transaction
 *   each, under the new prefix, which no dbs row names yet (invisible):
 *     K ─▶ set P'+key; a changes row also sets (P',"~",DocID) = its key
 *     D ─▶ clear (P',"r"|"d"|"a",DocID) and the changes row (P',"~",DocID)
 *          names, then the group's K records write the current ones
 *     S ─▶ clear (P',sub), then its K records
 *   trailer read, counts and checksum good ─▶ the last batch, clear
 *   (P',"~"), the dbs row (Incarnation = the highest in the header and the
 *   changes rows + 1, a new DbUUID), a "created" event, the metadata
 *   version: one transaction. Until it commits nothing is visible.
 *   Any error (a damaged file included) ─▶ clear P' and return the reason.
 *   The first transaction also writes (R,0,"loads",P') = (Name, StartedAt),
 *   cleared with the dbs row's write or the prefix's clear: a load killed
 *   midway leaves keys under a prefix no dbs row names and that mark, and
 *   `divan check` reports them as a note ("an unfinished `divan load`"),
 *   not a problem; they can be dropped with a clear of the prefix and the
 *   mark (a running load looks the same: check cannot tell them apart).
 * Memory: one dump block, one batch, one document's id list page.
 */
#include <string.h>
#include <time.h>

#include "store/dump.h"
#include "store/store_int.h"
#include "util/alloc.h"

#define SUB_TMP '~' /* the loader's DocID -> changes row index, cleared at the end */

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* b = P = (R,1,prefix) */
static void key_p(store *s, int64_t prefix, dv_buf *b) {
  tup_w w;
  st_key_root(s, b, &w);
  tup_int(&w, 1);
  tup_int(&w, prefix);
}

/* b = P + (sub,) [+ (id,)] */
static void key_sub(const dv_buf *p, dv_buf *b, char sub, const char *id, size_t id_len) {
  buf_reset(b);
  buf_append(b, p->p, p->len);
  tup_w w;
  tup_w_init(&w, b);
  tup_str(&w, &sub, 1);
  if (id) tup_str(&w, id, id_len);
}

static void set_to(dv_buf *b, const void *p, size_t n, int tail) {
  buf_reset(b);
  buf_append(b, p, n);
  if (tail >= 0) buf_putc(b, (uint8_t)tail);
}

/* ---- dump ------------------------------------------------------------------ */

typedef struct dctx {
  store *s;
  store_db *db;
  dump_w w;
  dv_buf p;          /* P */
  int64_t prefix;
  kv_txn *txn;
  dv_arena a;
  const char *why;
  const store_dump_opts *o; /* may be NULL */
  size_t txn_bytes;
  int full;                 /* 1 during the full pass (o->each_txn) */
} dctx;

/* Copy [begin, end) as K records in bounded snapshot transactions. */
static int copy_range(dctx *c, const dv_buf *begin, const dv_buf *end) {
  dv_buf from;
  buf_init(&from);
  set_to(&from, begin->p, begin->len, -1);
  int rc = buf_error(&from) ? DV_ENOMEM : 0;
  int more = 1;
  while (!rc && more) {
    kv_txn_reset(c->txn);
    kv_iter *it;
    rc = kv_iter_begin(c->txn, from.p, from.len, end->p, end->len, 0, KV_SNAPSHOT, &it);
    if (rc) break;
    int64_t t0 = mono_ms();
    size_t n = 0;
    kv_pair kp;
    int r;
    while ((r = kv_iter_next(it, &kp)) == 1) {
      if (kp.key_len < c->p.len) {
        r = DV_ECORRUPT;
        break;
      }
      dump_w_kv(&c->w, kp.key + c->p.len, kp.key_len - c->p.len, kp.val, kp.val_len);
      set_to(&from, kp.key, kp.key_len, 0);
      n += kp.key_len + kp.val_len;
      if (n >= c->txn_bytes || mono_ms() - t0 >= STORE_DUMP_TXN_MS) break;
    }
    kv_iter_free(it);
    if (c->full && c->o && c->o->each_txn) c->o->each_txn(c->o->arg);
    if (buf_error(&from)) r = DV_ENOMEM;
    if (c->w.err) r = c->w.err;
    if (r == 0) more = 0;
    else if (r < 0) rc = c->w.err || r == DV_ENOMEM || r == DV_ECORRUPT ? r : kv_on_error(c->txn, r);
  }
  buf_free(&from);
  return rc;
}

/* Copy subspace sub as a section. */
static int copy_section(dctx *c, char sub) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  key_sub(&c->p, &b, sub, NULL, 0);
  set_to(&e, b.p, b.len, 0xff);
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : 0;
  if (!rc) {
    dump_w_section(&c->w, sub);
    rc = copy_range(c, &b, &e);
  }
  buf_free(&b);
  buf_free(&e);
  return rc;
}

/* One document, whole, in one transaction: 'D' id, its rows, 'E'. */
static int doc_once(dctx *c, const char *id, size_t id_len) {
  static const char subs[3] = {ST_SUB_REV, ST_SUB_DOC, ST_SUB_ATT};
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  dump_w_doc(&c->w, id, id_len);
  int rc = 0;
  store_seq seq;
  int have_seq = 0;
  for (int i = 0; i < 3 && !rc; i++) {
    key_sub(&c->p, &b, subs[i], id, id_len);
    set_to(&e, b.p, b.len, 0xff);
    kv_iter *it;
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM
                                        : kv_iter_begin(c->txn, b.p, b.len, e.p, e.len, 0, KV_SNAPSHOT, &it);
    if (rc) break;
    kv_pair kp;
    int r;
    while ((r = kv_iter_next(it, &kp)) == 1) {
      dump_w_kv(&c->w, kp.key + c->p.len, kp.key_len - c->p.len, kp.val, kp.val_len);
      if (subs[i] == ST_SUB_REV) {
        st_branch br;
        arena_reset(&c->a);
        r = st_branch_decode(&c->a, kp.key, kp.key_len, b.len, kp.val, kp.val_len, &br);
        if (r) break;
        if (br.winner) seq = br.seq, have_seq = 1;
      }
    }
    kv_iter_free(it);
    if (r < 0) rc = r;
  }
  if (!rc && have_seq) {
    tup_w w;
    key_sub(&c->p, &b, ST_SUB_CHG, NULL, 0);
    tup_w_init(&w, &b);
    st_seq_put(&w, &seq);
    const uint8_t *v;
    size_t vl;
    int found;
    rc = buf_error(&b) ? DV_ENOMEM : kv_get(c->txn, b.p, b.len, KV_SNAPSHOT, &v, &vl, &found);
    if (!rc && found) dump_w_kv(&c->w, b.p + c->p.len, b.len - c->p.len, v, vl);
  }
  if (!rc) dump_w_doc_end(&c->w);
  buf_free(&b);
  buf_free(&e);
  return rc ? rc : c->w.err;
}

static int doc_replace(dctx *c, const char *id, size_t id_len) {
  for (;;) {
    kv_txn_reset(c->txn);
    int rc = doc_once(c, id, id_len);
    if (!rc || c->w.err || rc == DV_ENOMEM || rc == DV_ECORRUPT) return rc;
    if ((rc = kv_on_error(c->txn, rc))) return rc; /* a retry writes a new 'D' group: the loader starts over */
  }
}

/* Ids out of rows in [from, end) of subspace sub (changes rows: value
 * (0, DocID, …); purge infos: chunk 0's value (0, DocID, …)), a page at a
 * time, each then caught up. */
static int catch_up_range(dctx *c, dv_buf *from, const dv_buf *end, int purges) {
  dv_buf ids;
  buf_init(&ids);
  int rc = 0, more = 1;
  while (!rc && more) {
    buf_reset(&ids);
    size_t n = 0;
    kv_txn_reset(c->txn);
    kv_iter *it;
    rc = kv_iter_begin(c->txn, from->p, from->len, end->p, end->len, 512, KV_SNAPSHOT, &it);
    if (rc) break;
    kv_pair kp;
    int r;
    while ((r = kv_iter_next(it, &kp)) == 1) {
      set_to(from, kp.key, kp.key_len, 0);
      n++;
      if (purges) { /* (P,"p",PurgeSeq,Chunk): chunk 0 only */
        tup_r tr;
        tup_item ti;
        tup_r_init(&tr, kp.key + c->p.len, kp.key_len - c->p.len);
        if (tup_get(&tr, TUP_STR, &ti) || tup_get(&tr, TUP_INT, &ti) || tup_get(&tr, TUP_INT, &ti)) {
          r = DV_ECORRUPT;
          break;
        }
        if (ti.i64 != 0) continue;
      }
      tup_r tr;
      tup_item ti;
      tup_r_init(&tr, kp.val, kp.val_len);
      if (tup_get(&tr, TUP_INT, &ti) || tup_get(&tr, TUP_STR, &ti)) {
        r = DV_ECORRUPT;
        break;
      }
      uint32_t l = (uint32_t)ti.s_len;
      buf_append(&ids, &l, 4);
      uint8_t *d = buf_extend(&ids, l);
      if (d) tup_item_copy(&ti, d);
    }
    kv_iter_free(it);
    if (buf_error(from) || buf_error(&ids)) r = DV_ENOMEM;
    if (r < 0) {
      rc = r == DV_ENOMEM || r == DV_ECORRUPT ? r : kv_on_error(c->txn, r);
      continue;
    }
    if (n < 512) more = 0;
    for (size_t at = 0; !rc && at < ids.len;) {
      uint32_t l;
      memcpy(&l, ids.p + at, 4);
      rc = doc_replace(c, (const char *)ids.p + at + 4, l);
      at += 4 + l;
    }
  }
  buf_free(&ids);
  return rc;
}

/* update_seq and purge_seq now; DV_ENO_DB if the database went or was
 * re-created. */
static int read_seqs(dctx *c, store_seq *seq, int64_t *pseq, int64_t *inc) {
  store_db_info in;
  int rc = store_db_info_get(c->db, &in);
  if (!rc && in.prefix != c->prefix) rc = DV_ENO_DB;
  if (!rc) rc = store_db_get_purge_seq(c->db, pseq);
  if (!rc) *seq = in.update_seq;
  if (!rc && inc) *inc = in.incarnation;
  return rc;
}

static int dump_run(dctx *c, const char *name, const store_dump_opts *o, store_dump_stats *st) {
  store_seq s0, sp, sr, s2;
  int64_t q0, qp, qr, q2, inc;
  store_db_info in;
  int rc = store_db_info_get(c->db, &in);
  if (rc) return rc;
  c->prefix = in.prefix;
  key_p(c->s, c->prefix, &c->p);
  if ((rc = read_seqs(c, &s0, &q0, &inc))) return rc;
  dump_w_header(&c->w, name, strlen(name), inc);

  /* the full pass: [P, (P,"c",S0)] + ((P,"c")+ff, (P,"l")) + [(P,"p"), P+ff) */
  c->full = 1;
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  set_to(&b, c->p.p, c->p.len, -1);
  key_sub(&c->p, &e, ST_SUB_CHG, NULL, 0);
  tup_w_init(&w, &e);
  st_seq_put(&w, &s0);
  buf_putc(&e, 0);
  rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : copy_range(c, &b, &e);
  if (!rc) {
    key_sub(&c->p, &b, ST_SUB_CHG, NULL, 0);
    buf_putc(&b, 0xff);
    key_sub(&c->p, &e, ST_SUB_LOCAL, NULL, 0);
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : copy_range(c, &b, &e);
  }
  if (!rc) {
    key_sub(&c->p, &b, ST_SUB_PURGE, NULL, 0);
    set_to(&e, c->p.p, c->p.len, 0xff);
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : copy_range(c, &b, &e);
  }
  c->full = 0;
  if (!rc && o && o->after_full) o->after_full(o->arg);

  sp = s0, qp = q0;
  int max = o && o->max_rounds > 0 ? o->max_rounds : STORE_DUMP_ROUNDS, done = 0;
  int frozen = !(o && o->freeze);
  for (int round = 1; !rc && !done && round <= max; round++) {
    if (st) st->rounds = round;
    uint64_t docs0 = c->w.docs;
    if ((rc = read_seqs(c, &sr, &qr, NULL))) break;
    /* changes rows newer than S_{r-1} */
    key_sub(&c->p, &b, ST_SUB_CHG, NULL, 0);
    set_to(&e, b.p, b.len, 0xff);
    tup_w_init(&w, &b);
    st_seq_put(&w, &sp);
    buf_putc(&b, 0);
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : catch_up_range(c, &b, &e, 0);
    if (!rc && qr > qp) { /* purge infos newer than Q_{r-1} */
      key_sub(&c->p, &b, ST_SUB_PURGE, NULL, 0);
      set_to(&e, b.p, b.len, 0xff);
      tup_w_init(&w, &b);
      tup_int(&w, qp + 1);
      rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : catch_up_range(c, &b, &e, 1);
    }
    int moved = store_seq_cmp(&sr, &s0) != 0 || qr != q0;
    if (!rc) rc = copy_section(c, ST_SUB_META);
    if (!rc) rc = copy_section(c, ST_SUB_LOCAL);
    if (!rc && moved) rc = copy_section(c, ST_SUB_PURGE);
    if (!rc && moved) rc = copy_section(c, ST_SUB_INDEX);
    if (!rc) rc = read_seqs(c, &s2, &q2, NULL);
    if (!rc && !store_seq_cmp(&s2, &sr) && q2 == qr) done = 1;
    sp = sr, qp = qr;
    if (!rc && !frozen && (done || c->w.docs - docs0 <= STORE_MOVE_FREEZE_DOCS || round >= max - 2)) {
      /* a move: the rest runs read-only, and only a round after this
       * one can end it (writes may have come since S') */
      frozen = 1;
      done = 0;
      rc = o->freeze(o->arg);
      if (rc) c->why = "the source could not be made read-only for the last round";
      else if (o->frozen) o->frozen(o->arg);
    }
  }
  buf_free(&b);
  buf_free(&e);
  if (!rc && !done) {
    c->why = "the database kept changing during the dump: no catch-up round found it still";
    rc = DV_ECONFLICT;
  }
  return rc;
}

int store_dump(store *s, const char *name, const store_dump_opts *o, dump_out_fn out, void *arg,
               store_dump_stats *st, const char **why) {
  dctx c = {.s = s, .o = o, .txn_bytes = o && o->txn_bytes ? o->txn_bytes : STORE_DUMP_TXN_BYTES};
  buf_init(&c.p);
  arena_init(&c.a, 0);
  if (st) memset(st, 0, sizeof *st);
  int rc = store_db_open(s, name, &c.db);
  if (rc) {
    if (why) *why = rc == DV_ENO_DB ? "no such database" : "the database could not be opened";
    arena_free(&c.a);
    return rc;
  }
  rc = kv_txn_begin(store_kv(s), &c.txn);
  if (!rc) rc = dump_w_open(&c.w, out, arg);
  if (!rc) rc = dump_run(&c, name, o, st);
  if (!rc) rc = dump_w_finish(&c.w);
  if (st) st->kvs = c.w.kvs, st->docs = c.w.docs, st->bytes = c.w.bytes;
  if (rc && why) *why = c.why ? c.why : c.w.err ? "the dump could not be written" : dv_strerror(rc);
  dump_w_free(&c.w);
  kv_txn_destroy(c.txn);
  store_db_close(c.db);
  buf_free(&c.p);
  arena_free(&c.a);
  return rc;
}

/* ---- load ------------------------------------------------------------------ */

typedef struct lctx {
  store *s;
  const char *name;
  size_t name_len;
  dv_buf p;          /* P' */
  int64_t prefix;    /* 0 until allocated */
  int64_t max_inc;
  dv_buf batch;      /* records: tag, u32 a_len, a, u32 b_len, b */
  int final;         /* the last batch: also make the database visible */
  st_op *op;
  const char *why;
} lctx;

/* k = (R,0,"loads",DbPrefix): the mark of a load in progress, which
 * `divan check` reports as a note beside the prefix's keys. */
static int loads_key(lctx *l, dv_buf *k) {
  tup_w w;
  st_key_cluster(l->s, k, &w, "loads");
  tup_int(&w, l->prefix);
  return buf_error(k) ? DV_ENOMEM : 0;
}

static int prefix_fn(kv_txn *txn, void *arg) {
  lctx *l = arg;
  dv_buf k;
  buf_init(&k);
  tup_w w;
  int rc = st_db_prefix_alloc(l->s, txn, &l->prefix);
  dv_buf v2;
  buf_init(&v2);
  if (!rc) rc = loads_key(l, &k);
  if (!rc) {
    tup_w_init(&w, &v2);
    tup_str(&w, l->name, l->name_len);
    tup_int(&w, st_now_us());
    rc = buf_error(&v2) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v2.p, v2.len);
  }
  buf_free(&v2);
  buf_free(&k);
  return rc;
}

static int drop_fn(kv_txn *txn, void *arg) {
  lctx *l = arg;
  kv_set_frees_space(txn);
  dv_buf e;
  buf_init(&e);
  set_to(&e, l->p.p, l->p.len, 0xff);
  int rc = buf_error(&e) ? DV_ENOMEM : kv_clear_range(txn, l->p.p, l->p.len, e.p, e.len);
  if (!rc) rc = loads_key(l, &e);
  if (!rc) rc = kv_clear(txn, e.p, e.len);
  buf_free(&e);
  return rc;
}

/* The DocID of a changes row's value (0, DocID, …), into out. */
static int chg_id(const uint8_t *v, size_t vl, dv_buf *out) {
  tup_r r;
  tup_item it;
  tup_r_init(&r, v, vl);
  if (tup_get(&r, TUP_INT, &it) || tup_get(&r, TUP_STR, &it)) return DV_ECORRUPT;
  buf_reset(out);
  uint8_t *d = buf_extend(out, it.s_len);
  if (!d) return DV_ENOMEM;
  tup_item_copy(&it, d);
  return 0;
}

static int clear_prefix(kv_txn *txn, dv_buf *k, dv_buf *e) {
  set_to(e, k->p, k->len, 0xff);
  return buf_error(k) || buf_error(e) ? DV_ENOMEM : kv_clear_range(txn, k->p, k->len, e->p, e->len);
}

static int final_write(lctx *l, kv_txn *txn, dv_buf *k, dv_buf *e) {
  key_sub(&l->p, k, SUB_TMP, NULL, 0);
  int rc = clear_prefix(txn, k, e);
  if (rc) return rc;
  rc = st_db_register(l->s, txn, l->name, l->name_len, l->prefix, l->max_inc + 1);
  if (rc == DV_EDB_EXISTS) l->why = "the database exists";
  if (!rc) rc = loads_key(l, k);
  if (!rc) rc = kv_clear(txn, k->p, k->len);
  if (!rc) rc = st_mdv_bump(txn);
  if (!rc) rc = st_txid_write(l->s, txn, l->op);
  return rc;
}

static int batch_fn(kv_txn *txn, void *arg) {
  lctx *l = arg;
  static const char subs[3] = {ST_SUB_REV, ST_SUB_DOC, ST_SUB_ATT};
  dv_buf k, e, id;
  buf_init(&k);
  buf_init(&e);
  buf_init(&id);
  int rc = 0;
  for (size_t at = 0; !rc && at < l->batch.len;) {
    int tag = l->batch.p[at];
    uint32_t al, bl;
    memcpy(&al, l->batch.p + at + 1, 4);
    const uint8_t *a = l->batch.p + at + 5;
    memcpy(&bl, a + al, 4);
    const uint8_t *b = a + al + 4;
    at += 9 + al + bl;
    switch (tag) {
    case DUMP_KV:
      set_to(&k, l->p.p, l->p.len, -1);
      buf_append(&k, a, al);
      rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, b, bl);
      if (!rc && al >= 3 && a[1] == ST_SUB_CHG) { /* (P',"~",DocID) = the row's key */
        rc = chg_id(b, bl, &id);
        if (!rc) {
          key_sub(&l->p, &k, SUB_TMP, (const char *)id.p, id.len);
          rc = buf_error(&k) ? DV_ENOMEM : kv_set(txn, k.p, k.len, a, al);
        }
      }
      break;
    case DUMP_DOC: {
      for (int i = 0; i < 3 && !rc; i++) {
        key_sub(&l->p, &k, subs[i], (const char *)a, al);
        rc = clear_prefix(txn, &k, &e);
      }
      if (rc) break;
      key_sub(&l->p, &k, SUB_TMP, (const char *)a, al);
      const uint8_t *v;
      size_t vl;
      int found;
      rc = buf_error(&k) ? DV_ENOMEM : kv_get(txn, k.p, k.len, 0, &v, &vl, &found);
      if (rc || !found) break;
      rc = kv_clear(txn, k.p, k.len);
      set_to(&e, l->p.p, l->p.len, -1);
      buf_append(&e, v, vl);
      if (!rc) rc = buf_error(&e) ? DV_ENOMEM : kv_clear(txn, e.p, e.len);
      break;
    }
    case DUMP_SECTION:
      key_sub(&l->p, &k, (char)a[0], NULL, 0);
      rc = clear_prefix(txn, &k, &e);
      break;
    default:
      break;
    }
  }
  if (!rc && l->final) rc = final_write(l, txn, &k, &e);
  buf_free(&k);
  buf_free(&e);
  buf_free(&id);
  return rc;
}

static int flush_batch(lctx *l) {
  if (buf_error(&l->batch)) return DV_ENOMEM;
  st_op op = {.fn = batch_fn, .arg = l, .use_txid = l->final};
  l->op = &op;
  int rc = st_run(l->s, &op);
  buf_reset(&l->batch);
  return rc;
}

/* A K record's key: a tuple whose first element is a known one-letter
 * subspace; a changes row's inc counts toward the new Incarnation. */
static int check_key(lctx *l, const uint8_t *k, size_t n) {
  tup_r r;
  tup_item it;
  if (tup_validate(k, n)) return DV_ECORRUPT;
  tup_r_init(&r, k, n);
  if (tup_get(&r, TUP_STR, &it) || it.s_len != 1 || !strchr("rdclmpai", it.s[0])) return DV_ECORRUPT;
  if (it.s[0] == ST_SUB_CHG) {
    store_seq q;
    if (st_seq_get(&r, &q) || !tup_r_done(&r)) return DV_ECORRUPT;
    if (q.inc > l->max_inc) l->max_inc = q.inc;
  }
  return 0;
}

static int load_run(lctx *l, dump_r *r) {
  dump_rec rec;
  int rc;
  while ((rc = dump_r_next(r, &rec)) == 1) {
    switch (rec.tag) {
    case DUMP_HEADER:
      l->max_inc = rec.inc;
      continue;
    case DUMP_KV:
      if (check_key(l, rec.a, rec.a_len)) {
        l->why = "the dump file holds a key outside a database's layout";
        return DV_ECORRUPT;
      }
      break;
    case DUMP_SECTION:
      if (!strchr("mlpi", rec.a[0])) {
        l->why = "the dump file names an unknown section";
        return DV_ECORRUPT;
      }
      break;
    case DUMP_DOC:
      if (!rec.a_len) {
        l->why = "the dump file holds an empty document id";
        return DV_ECORRUPT;
      }
      break;
    default:
      break;
    }
    uint32_t al = (uint32_t)rec.a_len, bl = (uint32_t)rec.b_len;
    buf_putc(&l->batch, (uint8_t)rec.tag);
    buf_append(&l->batch, &al, 4);
    buf_append(&l->batch, rec.a, al);
    buf_append(&l->batch, &bl, 4);
    buf_append(&l->batch, rec.b, bl);
    if (l->batch.len >= STORE_DUMP_TXN_BYTES / 2 && (rc = flush_batch(l))) return rc;
  }
  if (rc < 0) {
    l->why = r->why;
    return rc;
  }
  l->final = 1;
  return flush_batch(l);
}

int store_load(store *s, const char *name, dump_in_fn in, void *arg, store_dump_stats *st, const char **why) {
  lctx l = {.s = s, .name = name, .name_len = strlen(name)};
  buf_init(&l.p);
  buf_init(&l.batch);
  dump_r r;
  if (st) memset(st, 0, sizeof *st);
  int rc = store_db_name_check(name, l.name_len);
  if (rc) l.why = "not a legal database name";
  store_db *db;
  if (!rc) {
    rc = store_db_open(s, name, &db);
    if (!rc) {
      store_db_close(db);
      rc = DV_EDB_EXISTS;
      l.why = "the database exists";
    } else if (rc == DV_ENO_DB) rc = 0;
  }
  int opened = 0;
  if (!rc) {
    rc = dump_r_open(&r, in, arg);
    opened = 1;
    if (rc) l.why = r.why;
  }
  if (!rc) {
    st_op op = {.fn = prefix_fn, .arg = &l};
    rc = st_run(s, &op);
  }
  if (!rc) {
    key_p(s, l.prefix, &l.p);
    rc = buf_error(&l.p) ? DV_ENOMEM : load_run(&l, &r);
    if (rc) {
      st_op op = {.fn = drop_fn, .arg = &l};
      if (st_run(s, &op)) l.why = "the load failed and its keys could not be cleared (divan check reports them)";
    }
  }
  if (st && opened) st->kvs = r.kvs, st->docs = r.docs, st->bytes = r.bytes, st->inc = l.max_inc + 1;
  if (rc && why) *why = l.why ? l.why : dv_strerror(rc);
  if (opened) dump_r_free(&r);
  buf_free(&l.p);
  buf_free(&l.batch);
  return rc;
}
