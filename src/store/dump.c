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
 * matters: the header carries the source's name, Incarnation and DbUUID,
 * and a random dump id (kept by a resumed dump). Not
 * copied: (R,0,"att_uploads") (uploads not linked to a revision) and the
 * _db_updates rows (the load writes a "created" event as create does).
 *
 * Dump, while the source stays writable (C: a checkpoint record, below):
 *   read update_seq S0, purge_seq Q0 ─▶ 'H', C(0, S0, Q0, at = start)
 *   full pass  ─▶ every KV of P in key order, each transaction a snapshot
 *                 reading at most STORE_DUMP_TXN_BYTES / STORE_DUMP_TXN_MS
 *                 and the next starting after its last key; skipped: the
 *                 "l" and "m" subspaces (sections at the end) and changes
 *                 rows newer than S0 (their documents are caught up);
 *                 after each transaction C(0, S0, Q0, at = its next key)
 *   round r = 1.. ─▶ read S_r, Q_r; C(r, S0, Q0, at = S_{r-1}, Q_{r-1})
 *     catch-up ─▶ for each changes row newer than S_{r-1} and each purge
 *                 info newer than Q_{r-1}: its document as one
 *                 replace-document record ('D' id, its "r", "d", "a" KVs
 *                 and its current changes row, 'E'), read in one
 *                 transaction; the changes rows a page of 512 at a time,
 *                 then C(r, S0, Q0, at = the page's last row, Q_{r-1})
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
 * Checkpoints and resuming. Every record is idempotent when applied again
 * after a later record of the same dump: K sets a key; D clears its
 * document (its changes row through "~") and rewrites it; S clears its
 * subspace and rewrites it. C(round, S0, Q0, at, qat) says: a dump
 * started there, with that S0/Q0, brings a target holding every record
 * before C (and any after it) to the source's state. For the full pass
 * that is the multi-snapshot argument above, unchanged: keys before `at`
 * came from earlier snapshots, as they would have, and whatever changed
 * since S0 is caught up. A round started at since-seqs (X, qat) is a round
 * with S_{r-1} = X: a document caught up before the checkpoint and
 * written again has a row newer than X; one whose D group was cut has a
 * row newer than X still (or, purged, a purge info newer than qat), so
 * its D comes again. The writer ends the block after each C, so a file
 * cut anywhere keeps every C before the cut in whole blocks.
 *   store_dump_opts.resume ─▶ its C: round 0: the full pass from P+at with
 *     its S0/Q0; round r: rounds from since = (at, qat), S0/Q0 for the
 *     "moved" test; the database must be the header's (DbUUID); the dump
 *     id is kept. append (divan dump --resume): the writer goes on in the
 *     cut file with its counts and CRC (dump_scan); else a new stream, 'H'
 *     and the C again first (a move resumed: its loader checks it).
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
 *   Any error (a damaged file included) ─▶ clear P' and return the reason;
 *   but an interruption keeps P' and the mark for a resume: the input
 *   failing with store_load_opts.keep_on_input_error (a move's source
 *   side), or the process killed.
 *   The mark (R,0,"loads",P') = (Name, StartedAt, DumpId, SrcUUID,
 *   Committed, MaxInc, Checkpoint) is written by the prefix's transaction
 *   and again by each batch's: Committed = records read so far (all
 *   written), Checkpoint = the last C among them. It is cleared with the
 *   dbs row's write or the prefix's clear: a load killed midway leaves keys
 *   under a prefix no dbs row names and that mark, and `divan check`
 *   reports them as a note ("an unfinished `divan load`"), not a problem;
 *   they can be dropped with a clear of the prefix and the mark (a running
 *   load looks the same: check cannot tell them apart), or resumed:
 *     STORE_LOAD_RESUME_FILE (divan load --resume): the name must not
 *       exist; the mark with the file's dump id; the file is read again
 *       from its start, every record checked (the trailer still covers all
 *       of it) and the first Committed ones not written again; the last C
 *       among them must be the mark's (else: another file, refused);
 *     STORE_LOAD_RESUME_STREAM (divan move --resume): the name's newest
 *       mark; the dump resumed at its Checkpoint (store_move starts it
 *       there), whose first record after 'H' must be that C; all written.
 *   A refused resume (no mark, another dump) changes nothing; once the
 *   stream is accepted a damaged file clears P' as a new load's does.
 * Memory: one dump block, one batch, one document's id list page, a
 * checkpoint record or two.
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
  int full;                 /* 1 during the full pass (o->each_txn, checkpoints) */
  dv_buf s0;                /* S0 packed (a checkpoint's s0) */
  int64_t q0;
  uint64_t round;           /* the round running (0: the full pass), for checkpoints */
  int64_t qp;               /* the round's Q_{r-1} */
  size_t chg_len;           /* (P,"c") */
  dv_buf a_key;             /* scratch */
} dctx;

/* A checkpoint: everything written so far is applied once a dump started
 * here has been. Then o->each_ckpt (tests) may stop the dump. */
static int ckpt(dctx *c, const uint8_t *at, size_t at_len, int64_t qat) {
  dump_ckpt ck = {.round = c->round, .s0 = c->s0.p, .s0_len = c->s0.len, .q0 = (uint64_t)c->q0,
                  .at = at, .at_len = at_len, .qat = (uint64_t)qat};
  dump_w_ckpt(&c->w, &ck);
  if (c->w.err) return c->w.err;
  int rc = c->o && c->o->each_ckpt ? c->o->each_ckpt(c->o->arg, &ck) : 0;
  if (rc) c->why = "stopped at a checkpoint";
  return rc;
}

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
    if (buf_error(&from)) r = DV_ENOMEM;
    if (c->w.err) r = c->w.err;
    if (r >= 0 && c->full && n) { /* the full pass goes on at from */
      int k = ckpt(c, from.p + c->p.len, from.len - c->p.len, 0);
      if (k) r = k, rc = k;
    }
    if (c->full && c->o && c->o->each_txn) c->o->each_txn(c->o->arg);
    if (rc) break;
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
    /* the round goes on after the page's last changes row: from is it + 0x00 */
    if (!rc && !purges && n) rc = ckpt(c, from->p + c->chg_len, from->len - c->chg_len - 1, c->qp);
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

/* A range of the full pass, [b, e) from `from` on when that is later. */
static int full_range(dctx *c, dv_buf *b, const dv_buf *e, const dv_buf *from) {
  if (buf_error(b) || buf_error(e) || buf_error(from)) return DV_ENOMEM;
  if (from->len && st_nonempty(b, from)) set_to(b, from->p, from->len, -1);
  return st_nonempty(b, e) ? copy_range(c, b, e) : 0;
}

/* Where a dump starts: o->resume's checkpoint (*ck, its fields pointing
 * into o->resume), or the beginning (S0 and Q0 now; *ck zero). *s0 the
 * full pass's update_seq (also packed in c->s0); *sp, *qp: a round's
 * since-seqs; c->round: 0 for the full pass (*from: its next key, empty:
 * P). */
static int dump_start(dctx *c, const store_dump_opts *o, dv_buf *from, dump_ckpt *ck, store_seq *s0, store_seq *sp,
                      int64_t *qp) {
  buf_reset(from);
  c->round = 0;
  memset(ck, 0, sizeof *ck);
  if (!o || !o->resume || !o->resume->ck.len) {
    int rc = read_seqs(c, s0, &c->q0, NULL);
    if (rc) return rc;
    *sp = *s0, *qp = c->q0;
  } else {
    tup_r r;
    if (dump_ckpt_parse(o->resume->ck.p, o->resume->ck.len, ck)) goto bad;
    tup_r_init(&r, ck->s0, ck->s0_len);
    if (st_seq_get(&r, s0) || !tup_r_done(&r) || ck->q0 > INT64_MAX || ck->qat > INT64_MAX) goto bad;
    c->q0 = (int64_t)ck->q0;
    c->round = ck->round;
    *sp = *s0, *qp = c->q0;
    if (ck->round == 0) {
      set_to(from, c->p.p, c->p.len, -1);
      buf_append(from, ck->at, ck->at_len);
    } else {
      tup_r_init(&r, ck->at, ck->at_len);
      if (st_seq_get(&r, sp) || !tup_r_done(&r)) goto bad;
      *qp = (int64_t)ck->qat;
    }
  }
  tup_w w;
  buf_reset(&c->s0);
  tup_w_init(&w, &c->s0);
  st_seq_put(&w, s0);
  return buf_error(&c->s0) || buf_error(from) ? DV_ENOMEM : 0;
bad:
  c->why = "the checkpoint to resume from does not decode";
  return DV_ECORRUPT;
}

/* The header (a new file: magic, 'H', the first checkpoint) unless o
 * appends to a file cut after its checkpoint. */
static int dump_head(dctx *c, const char *name, const store_dump_opts *o, dump_out_fn out, void *arg) {
  const dump_cont *re = o ? o->resume : NULL;
  store_db_info in;
  int rc = store_db_info_get(c->db, &in);
  if (rc) return rc;
  c->prefix = in.prefix;
  key_p(c->s, c->prefix, &c->p);
  key_sub(&c->p, &c->a_key, ST_SUB_CHG, NULL, 0);
  c->chg_len = c->a_key.len;
  if (buf_error(&c->p) || buf_error(&c->a_key)) return DV_ENOMEM;
  if (re && memcmp(re->uuid, c->db->uuid, DUMP_ID_LEN)) {
    c->why = "the database is not the one the dump being resumed was taken of (its uuid differs)";
    return DV_ECONFLICT;
  }
  if (re && o->append) {
    dump_w_continue(&c->w, out, arg, re);
    return 0;
  }
  uint8_t id[DUMP_ID_LEN];
  if (re) memcpy(id, re->id, DUMP_ID_LEN);
  else st_random(id, DUMP_ID_LEN);
  if ((rc = dump_w_open(&c->w, out, arg))) return rc;
  dump_w_header(&c->w, name, strlen(name), in.incarnation, id, c->db->uuid);
  return c->w.err;
}

static int dump_run(dctx *c, const store_dump_opts *o, store_dump_stats *st) {
  store_seq sp = {0}, sr, s2, s0;
  int64_t qp = 0, qr, q2;
  dv_buf b, e, from;
  buf_init(&b);
  buf_init(&e);
  buf_init(&from);
  dump_ckpt ck;
  int rc = dump_start(c, o, &from, &ck, &s0, &sp, &qp);
  /* where it starts, again in a new stream (a resumed one's loader checks it) */
  if (!rc && !(o && o->append)) {
    if (c->round == 0) rc = ckpt(c, from.len ? from.p + c->p.len : NULL, from.len ? from.len - c->p.len : 0, 0);
    else rc = ckpt(c, ck.at, ck.at_len, (int64_t)ck.qat);
  }

  /* the full pass: [P, (P,"c",S0)] + ((P,"c")+ff, (P,"l")) + [(P,"p"), P+ff) */
  tup_w w;
  if (!rc && c->round == 0) {
    c->full = 1;
    set_to(&b, c->p.p, c->p.len, -1);
    key_sub(&c->p, &e, ST_SUB_CHG, NULL, 0);
    tup_w_init(&w, &e);
    st_seq_put(&w, &s0);
    buf_putc(&e, 0);
    rc = full_range(c, &b, &e, &from);
    if (!rc) {
      key_sub(&c->p, &b, ST_SUB_CHG, NULL, 0);
      buf_putc(&b, 0xff);
      key_sub(&c->p, &e, ST_SUB_LOCAL, NULL, 0);
      rc = full_range(c, &b, &e, &from);
    }
    if (!rc) {
      key_sub(&c->p, &b, ST_SUB_PURGE, NULL, 0);
      set_to(&e, c->p.p, c->p.len, 0xff);
      rc = full_range(c, &b, &e, &from);
    }
    c->full = 0;
    if (!rc && o && o->after_full) o->after_full(o->arg);
  }

  int max = o && o->max_rounds > 0 ? o->max_rounds : STORE_DUMP_ROUNDS, done = 0;
  int frozen = !(o && o->freeze);
  uint64_t first = c->round ? c->round : 1;
  int started = c->round > 0; /* a resumed round: its checkpoint went out above */
  for (int round = 1; !rc && !done && round <= max; round++) {
    if (st) st->rounds = round;
    c->round = first + (uint64_t)round - 1;
    c->qp = qp;
    uint64_t docs0 = c->w.docs;
    if ((rc = read_seqs(c, &sr, &qr, NULL))) break;
    if (round > 1 || !started) { /* a round starts here */
      key_sub(&c->p, &b, ST_SUB_CHG, NULL, 0);
      tup_w_init(&w, &b);
      st_seq_put(&w, &sp);
      rc = buf_error(&b) ? DV_ENOMEM : ckpt(c, b.p + c->chg_len, b.len - c->chg_len, qp);
      if (rc) break;
    }
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
    int moved = store_seq_cmp(&sr, &s0) != 0 || qr != c->q0;
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
  buf_free(&from);
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
  buf_init(&c.s0);
  buf_init(&c.a_key);
  arena_init(&c.a, 0);
  memset(&c.w, 0, sizeof c.w);
  if (st) memset(st, 0, sizeof *st);
  int rc = store_db_open(s, name, &c.db);
  if (rc) {
    if (why) *why = rc == DV_ENO_DB ? "no such database" : "the database could not be opened";
    arena_free(&c.a);
    return rc;
  }
  rc = kv_txn_begin(store_kv(s), &c.txn);
  if (!rc) rc = dump_head(&c, name, o, out, arg);
  if (!rc) rc = dump_run(&c, o, st);
  if (!rc) rc = dump_w_finish(&c.w);
  if (st) st->kvs = c.w.kvs, st->docs = c.w.docs, st->bytes = c.w.bytes;
  if (rc && why) *why = c.why ? c.why : c.w.err ? "the dump could not be written" : dv_strerror(rc);
  dump_w_free(&c.w);
  kv_txn_destroy(c.txn);
  store_db_close(c.db);
  buf_free(&c.p);
  buf_free(&c.s0);
  buf_free(&c.a_key);
  arena_free(&c.a);
  return rc;
}

/* ---- load ------------------------------------------------------------------ */

typedef struct lctx {
  store *s;
  const char *name;
  size_t name_len;
  const store_load_opts *o; /* may be NULL */
  dv_buf p;          /* P' */
  int64_t prefix;    /* 0 until allocated */
  int64_t max_inc;
  int64_t started;   /* the mark's StartedAt */
  uint8_t id[DUMP_ID_LEN], uuid[DUMP_ID_LEN]; /* the header's */
  uint64_t nrec;     /* records read */
  uint64_t skip;     /* a resumed file load: the records already committed */
  uint64_t applied;  /* records put in a batch by this run */
  dv_buf ck;         /* the last checkpoint read */
  dv_buf want;       /* a resume: the mark's checkpoint, which the stream must pass (or start at) */
  dv_buf batch;      /* records: tag, u32 a_len, a, u32 b_len, b */
  int final;         /* the last batch: also make the database visible */
  int keep;          /* a failure leaves the prefix and the mark (an interruption, or a refused resume) */
  st_op *op;
  const char *why;
} lctx;

/* k = (R,0,"loads",DbPrefix): the mark of a load in progress, which
 * `divan check` reports as a note beside the prefix's keys. */
static void loads_key(store *s, int64_t prefix, dv_buf *k) {
  tup_w w;
  st_key_cluster(s, k, &w, "loads");
  tup_int(&w, prefix);
}

/* The mark's value: (Name, StartedAt, DumpId, SrcUUID, Committed, MaxInc,
 * Checkpoint): Committed records of the stream and every record before
 * Checkpoint (a 'C' record; empty: none yet) are in. */
static int mark_write(lctx *l, kv_txn *txn) {
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  loads_key(l->s, l->prefix, &k);
  tup_w w;
  tup_w_init(&w, &v);
  tup_str(&w, l->name, l->name_len);
  tup_int(&w, l->started);
  tup_bytes(&w, l->id, DUMP_ID_LEN);
  tup_bytes(&w, l->uuid, DUMP_ID_LEN);
  tup_int(&w, (int64_t)l->nrec);
  tup_int(&w, l->max_inc);
  tup_bytes(&w, l->ck.p, l->ck.len);
  int rc = buf_error(&k) || buf_error(&v) ? DV_ENOMEM : kv_set(txn, k.p, k.len, v.p, v.len);
  buf_free(&k);
  buf_free(&v);
  return rc;
}

static int mark_decode(const uint8_t *k, size_t kl, size_t off, const uint8_t *v, size_t vl, store_load_mark *m) {
  tup_r r;
  tup_item it, nm;
  tup_r_init(&r, k + off, kl - off);
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  m->prefix = it.i64;
  tup_r_init(&r, v, vl);
  if (tup_get(&r, TUP_STR, &nm) || nm.s_len >= sizeof m->c.name) return DV_ECORRUPT;
  tup_item_copy(&nm, (uint8_t *)m->c.name);
  m->c.name[nm.s_len] = 0;
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  m->started = it.i64;
  if (tup_r_done(&r)) return DV_ENOTSUP; /* an earlier build's mark: no resume */
  if (tup_get(&r, TUP_BYTES, &it) || it.s_len != DUMP_ID_LEN) return DV_ECORRUPT;
  tup_item_copy(&it, m->c.id);
  if (tup_get(&r, TUP_BYTES, &it) || it.s_len != DUMP_ID_LEN) return DV_ECORRUPT;
  tup_item_copy(&it, m->c.uuid);
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64) || it.i64 < 0) return DV_ECORRUPT;
  m->committed = (uint64_t)it.i64;
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return DV_ECORRUPT;
  m->max_inc = it.i64;
  if (tup_get(&r, TUP_BYTES, &it)) return DV_ECORRUPT;
  buf_reset(&m->c.ck);
  uint8_t *d = buf_extend(&m->c.ck, it.s_len);
  if (it.s_len && !d) return DV_ENOMEM;
  if (it.s_len) tup_item_copy(&it, d);
  dump_ckpt ck;
  return it.s_len && dump_ckpt_parse(m->c.ck.p, m->c.ck.len, &ck) ? DV_ECORRUPT : 0;
}

int store_load_mark_find(store *s, const char *name, const uint8_t *id, store_load_mark *out) {
  memset(out, 0, sizeof *out);
  buf_init(&out->c.ck);
  store_load_mark m = {0};
  buf_init(&m.c.ck);
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  st_key_cluster(s, &b, &w, "loads");
  size_t off = b.len;
  set_to(&e, b.p, b.len, 0xff);
  kv_txn *txn = NULL;
  int rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : kv_txn_begin(store_kv(s), &txn);
  int found = 0, other = 0;
  while (!rc) { /* the unfinished loads: a handful of rows */
    found = other = 0;
    kv_iter *it;
    if ((rc = kv_iter_begin(txn, b.p, b.len, e.p, e.len, 0, KV_SNAPSHOT, &it))) break;
    kv_pair kp;
    int r;
    while ((r = kv_iter_next(it, &kp)) == 1) {
      /* one that does not decode (or an earlier build's, with no dump id)
       * cannot be resumed: `divan check` reports its prefix */
      if (mark_decode(kp.key, kp.key_len, off, kp.val, kp.val_len, &m) || strcmp(m.c.name, name)) continue;
      if (id && memcmp(m.c.id, id, DUMP_ID_LEN)) {
        other = 1;
        continue;
      }
      if (found && m.started < out->started) continue; /* the newest */
      dv_buf ck = out->c.ck;
      *out = m;
      buf_reset(&ck);
      buf_append(&ck, m.c.ck.p, m.c.ck.len);
      out->c.ck = ck;
      found = 1;
      if (buf_error(&ck)) {
        r = DV_ENOMEM;
        break;
      }
    }
    kv_iter_free(it);
    if (r >= 0) break;
    rc = r == DV_ENOMEM ? r : kv_on_error(txn, r);
  }
  kv_txn_destroy(txn);
  buf_free(&m.c.ck);
  buf_free(&b);
  buf_free(&e);
  if (!rc && !found) rc = other ? DV_ECONFLICT : DV_ENOT_FOUND;
  return rc;
}

void store_load_mark_free(store_load_mark *m) { buf_free(&m->c.ck); }

static int prefix_fn(kv_txn *txn, void *arg) {
  lctx *l = arg;
  int rc = st_db_prefix_alloc(l->s, txn, &l->prefix);
  return rc ? rc : mark_write(l, txn);
}

static int drop_fn(kv_txn *txn, void *arg) {
  lctx *l = arg;
  kv_set_frees_space(txn);
  dv_buf e;
  buf_init(&e);
  set_to(&e, l->p.p, l->p.len, 0xff);
  int rc = buf_error(&e) ? DV_ENOMEM : kv_clear_range(txn, l->p.p, l->p.len, e.p, e.len);
  if (!rc) {
    loads_key(l->s, l->prefix, &e);
    rc = buf_error(&e) ? DV_ENOMEM : kv_clear(txn, e.p, e.len);
  }
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
  if (!rc) {
    loads_key(l->s, l->prefix, k);
    rc = buf_error(k) ? DV_ENOMEM : kv_clear(txn, k->p, k->len);
  }
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
  if (!rc) rc = l->final ? final_write(l, txn, &k, &e) : mark_write(l, txn);
  buf_free(&k);
  buf_free(&e);
  buf_free(&id);
  return rc;
}

static int flush_batch(lctx *l) {
  if (buf_error(&l->batch) || buf_error(&l->ck)) return DV_ENOMEM;
  st_op op = {.fn = batch_fn, .arg = l, .use_txid = l->final};
  l->op = &op;
  int rc = st_run(l->s, &op);
  buf_reset(&l->batch);
  if (!rc && !l->final && l->o && l->o->after_batch && (rc = l->o->after_batch(l->o->arg))) {
    l->keep = 1; /* as if the process stopped here */
    l->why = "stopped after a batch";
  }
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

/* A resume: the stream passes the mark's checkpoint (a file read again
 * from its start, at record Committed) or starts at it (a dump resumed
 * from it: its first record after the header). */
static int resume_at(lctx *l, const dump_rec *rec) {
  if (l->want.len == rec->raw_len && !memcmp(l->want.p, rec->raw, rec->raw_len)) {
    buf_free(&l->want); /* passed */
    return 0;
  }
  l->keep = 1;
  l->why = l->o->resume == STORE_LOAD_RESUME_FILE
               ? "the dump file is not the one the unfinished load was reading (its checkpoint differs)"
               : "the dump does not start where the unfinished load stopped";
  return DV_ECONFLICT;
}

static int load_run(lctx *l, dump_r *r) {
  dump_rec rec, last = {0}; /* last: the last checkpoint read (l->ck) */
  int rc;
  while ((rc = dump_r_next(r, &rec)) == 1) {
    l->nrec++;
    switch (rec.tag) {
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
    case DUMP_CKPT:
      /* a resumed stream starts at the mark's checkpoint; a file read
       * again has it as its last one before record Committed */
      if (l->want.len && (rc = l->o->resume == STORE_LOAD_RESUME_STREAM ? resume_at(l, &rec)
                                : l->nrec > l->skip                     ? resume_at(l, &last)
                                                                        : 0))
        return rc;
      buf_reset(&l->ck);
      buf_append(&l->ck, rec.raw, rec.raw_len);
      last.raw = l->ck.p, last.raw_len = l->ck.len;
      continue;
    default:
      break;
    }
    if (l->want.len && l->o->resume == STORE_LOAD_RESUME_STREAM) return resume_at(l, &rec);
    if (l->nrec <= l->skip) continue; /* committed before the interruption */
    if (l->want.len && (rc = resume_at(l, &last))) return rc;
    uint32_t al = (uint32_t)rec.a_len, bl = (uint32_t)rec.b_len;
    buf_putc(&l->batch, (uint8_t)rec.tag);
    buf_append(&l->batch, &al, 4);
    buf_append(&l->batch, rec.a, al);
    buf_append(&l->batch, &bl, 4);
    buf_append(&l->batch, rec.b, bl);
    l->applied++;
    size_t cap = l->o && l->o->batch_bytes ? l->o->batch_bytes : STORE_DUMP_TXN_BYTES / 2;
    if (l->batch.len >= cap && (rc = flush_batch(l))) return rc;
  }
  if (rc < 0) {
    l->why = r->why;
    l->keep = l->o && l->o->keep_on_input_error && r->in_err;
    return rc;
  }
  if (l->want.len && l->nrec < l->skip) {
    l->keep = 1;
    l->why = "the dump file is shorter than what the unfinished load committed: not the same file";
    return DV_ECONFLICT;
  }
  if (l->want.len && (rc = resume_at(l, &last))) return rc;
  l->final = 1;
  return flush_batch(l);
}

/* The header, and the prefix: a new one with its mark, or (a resume) the
 * mark's. */
static int load_begin(lctx *l, dump_r *r) {
  dump_rec rec;
  int rc = dump_r_next(r, &rec);
  if (rc <= 0) { /* the reader takes an 'H' first and only */
    l->why = rc ? r->why : "the dump file is truncated";
    return rc ? rc : DV_ECORRUPT;
  }
  l->nrec = 1;
  l->max_inc = rec.inc;
  memcpy(l->id, rec.id, DUMP_ID_LEN);
  memcpy(l->uuid, rec.uuid, DUMP_ID_LEN);
  int mode = l->o ? l->o->resume : 0;
  if (!mode) {
    l->started = st_now_us();
    st_op op = {.fn = prefix_fn, .arg = l};
    return st_run(l->s, &op);
  }
  l->keep = 1; /* refused: nothing changes */
  if (r->version < 2) {
    l->why = "the dump is of format version 1, which cannot resume a load";
    return DV_ENOTSUP;
  }
  store_load_mark m;
  rc = store_load_mark_find(l->s, l->name, mode == STORE_LOAD_RESUME_FILE ? l->id : NULL, &m);
  if (rc == DV_ENOT_FOUND) l->why = "no unfinished load of this name to resume";
  else if (rc == DV_ECONFLICT) l->why = "the unfinished load of this name was reading another dump (its id differs)";
  else if (!rc && memcmp(m.c.id, l->id, DUMP_ID_LEN)) {
    l->why = "the dump is not the one the unfinished load was reading (its id differs)";
    rc = DV_ECONFLICT;
  }
  if (!rc) {
    l->prefix = m.prefix;
    l->started = m.started;
    if (m.max_inc > l->max_inc) l->max_inc = m.max_inc;
    l->skip = mode == STORE_LOAD_RESUME_FILE ? m.committed : 0;
    buf_append(&l->want, m.c.ck.p, m.c.ck.len);
    if (buf_error(&l->want)) rc = DV_ENOMEM;
    else l->keep = 0; /* from here a damaged file clears what was loaded, as a new load's does */
  }
  store_load_mark_free(&m);
  return rc;
}

int store_load(store *s, const char *name, const store_load_opts *o, dump_in_fn in, void *arg,
               store_dump_stats *st, const char **why) {
  lctx l = {.s = s, .name = name, .name_len = strlen(name), .o = o};
  buf_init(&l.p);
  buf_init(&l.batch);
  buf_init(&l.ck);
  buf_init(&l.want);
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
  if (!rc) rc = load_begin(&l, &r);
  if (!rc || l.prefix) {
    if (!rc) {
      key_p(s, l.prefix, &l.p);
      rc = buf_error(&l.p) ? DV_ENOMEM : load_run(&l, &r);
    }
    if (rc && !l.keep) {
      st_op op = {.fn = drop_fn, .arg = &l};
      if (buf_error(&l.p) || st_run(s, &op)) l.why = "the load failed and its keys could not be cleared (divan check reports them)";
    }
  }
  if (st && opened) st->kvs = r.kvs, st->docs = r.docs, st->bytes = r.bytes, st->inc = l.max_inc + 1;
  if (st) st->records = l.nrec, st->applied = l.applied, st->kept = rc && l.keep && l.prefix;
  if (rc && why) *why = l.why ? l.why : dv_strerror(rc);
  if (opened) dump_r_free(&r);
  buf_free(&l.p);
  buf_free(&l.batch);
  buf_free(&l.ck);
  buf_free(&l.want);
  return rc;
}
