/* check.c — the store's invariant checker (check.h has what it checks,
 * the data flow and how it stays exact beside live writes).
 *
 * Two walkers carry every pass, each in bounded, read-only transactions
 * that never commit (snapshot reads only):
 *   walk_groups  reads up to CK_BATCH keys from a cursor and hands them to
 *                a pass grouped by their first n tuple elements after a
 *                base prefix (a document's branches, a local document and
 *                its chunks), each group whole and read in one
 *                transaction; a group cut by the batch's end is read again
 *                in the next transaction (or, alone in its batch, whole).
 *   walk_skip    finds the next distinct group (its first key only) and
 *                jumps past it: bodies and attachment contents, where only
 *                the group's existence matters and its keys may be many.
 * A transaction stops taking groups after CK_TXN_MS, far below the kv's
 * 5 s limit, and the next one resumes past the last group done. Findings
 * are held until the transaction that found them has finished its step
 * (a retried step must not report twice), then handed out.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/body.h"
#include "store/check.h"
#include "store/store_int.h"
#include "util/alloc.h"
#include "util/md5.h"

#define CK_BATCH 500    /* keys read per range read of a walk */
#define CK_SKIPS 200    /* groups found per transaction of walk_skip */
#define CK_TXN_MS 1000  /* a transaction takes no new group after this */
#define CK_TRIES 20     /* attempts of one step on retryable errors */

typedef struct ck_find {
  struct ck_find *next;
  store_check_item it;
} ck_find;

typedef struct ck {
  store *s;
  store_check_out *out;
  const char *db_name;     /* the database checked, NULL at cluster level */
  store_db *db;            /* its handle */
  st_dbx x;                /* as the current transaction sees it */
  kv_txn *txn;             /* the current transaction */
  dv_arena a;              /* the current step's memory (findings too) */
  ck_find *found, **tail;  /* the current step's findings */
  int64_t t0_ms;           /* when the current transaction started */
  uint64_t gen;            /* +1 per attempt: keys the per-transaction caches */
  /* per-transaction caches */
  uint64_t useq_gen;       /* update_seq read at this gen */
  int useq_found;
  store_seq useq;
  uint64_t pmeta_gen;      /* purge_seq / purged_infos_limit read at this gen */
  int64_t purge_seq, purge_limit;
  /* per database */
  int64_t dc, ddc, sa, se; /* what the revisions subspace counts */
  /* cluster level */
  int64_t *prefixes;       /* DbPrefixes named by (R,0,"dbs",…), sorted after the walk */
  size_t n_prefixes, cap_prefixes;
  int64_t counter0;        /* prefix_counter before the dbs walk */
  int gone;                /* the database was deleted during its check */
} ck;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int store_check_emit(store_check_out *out, const store_check_item *it) {
  if (it->note) out->counts.notes++;
  else out->counts.problems++;
  return out->cb ? out->cb(out->arg, it) : 0;
}

/* Record a finding of this step; what is printf-formatted, expected copied. */
static void __attribute__((format(printf, 6, 7)))
find(ck *c, int note, const char *id, size_t id_len, const char *expected, const char *fmt, ...) {
  ck_find *f = arena_alloc(&c->a, sizeof *f);
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (!f) return; /* out of memory: the step fails on its next allocation */
  memset(f, 0, sizeof *f);
  f->it.db = c->db_name;
  f->it.id = id ? arena_strndup(&c->a, id, id_len) : NULL;
  f->it.id_len = id ? id_len : 0;
  f->it.what = arena_strndup(&c->a, buf, strlen(buf));
  f->it.expected = expected ? arena_strndup(&c->a, expected, strlen(expected)) : NULL;
  f->it.note = note;
  *c->tail = f;
  c->tail = &f->next;
}

#define PROBLEM(c, id, idl, exp, ...) find(c, 0, id, idl, exp, __VA_ARGS__)

static int flush(ck *c) {
  int rc = 0;
  for (ck_find *f = c->found; f && !rc; f = f->next) rc = store_check_emit(c->out, &f->it);
  c->found = NULL;
  c->tail = &c->found;
  return rc;
}

static void drop(ck *c) {
  c->found = NULL;
  c->tail = &c->found;
  arena_reset(&c->a);
}

/* Run step(c, arg) as one transaction (db checked first when c->db), again
 * on retryable errors; its findings are handed out once it succeeded. */
static int run_step(ck *c, int (*step)(ck *c, void *arg), void *arg) {
  kv_txn *txn;
  int rc = kv_txn_begin(store_kv(c->s), &txn);
  if (rc) return rc;
  for (int tries = 0;; tries++) {
    drop(c);
    c->gen++;
    c->txn = txn;
    c->t0_ms = now_ms();
    rc = c->db ? st_db_check(c->db, txn, &c->x) : 0;
    if (!rc) rc = step(c, arg);
    if (!rc || rc == DV_ENO_DB || tries >= CK_TRIES || kv_on_error(txn, rc)) break;
  }
  c->txn = NULL;
  kv_txn_destroy(txn);
  if (rc == DV_ENO_DB && c->db) {
    drop(c);
    c->gone = 1;
    return DV_ENO_DB;
  }
  if (!rc) rc = flush(c);
  drop(c);
  return rc;
}

/* The end of the first n tuple elements of key after off: their length
 * from the key's start, or 0 when they do not decode. */
static size_t elems_end(const uint8_t *key, size_t len, size_t off, int n) {
  if (off > len) return 0;
  tup_r r;
  tup_item it;
  tup_r_init(&r, key + off, len - off);
  for (int i = 0; i < n; i++)
    if (tup_next(&r, &it) != 1) return 0;
  return (size_t)(r.p - key);
}

/* ---- walk_groups -------------------------------------------------------- */

typedef int (*group_fn)(ck *c, const kv_pair *p, int n, size_t glen);

typedef struct gwalk {
  dv_buf cur, end;    /* the cursor and the end of the range */
  size_t base;        /* bytes of the base prefix */
  int n_elems;        /* elements that make a group */
  group_fn fn;
  int done;
  dv_buf next;        /* the step's cursor, taken on success */
} gwalk;

static int gwalk_step(ck *c, void *arg) {
  gwalk *g = arg;
  kv_pair *p;
  int n = 0, more = 0;
  int rc = kv_get_range(c->txn, g->cur.p, g->cur.len, g->end.p, g->end.len, CK_BATCH, KV_SNAPSHOT, &p, &n, &more);
  if (rc) return rc;
  buf_reset(&g->next);
  buf_append(&g->next, g->cur.p, g->cur.len);
  int i = 0, took = 0;
  g->done = !more;
  while (i < n) {
    size_t gl = elems_end(p[i].key, p[i].key_len, g->base, g->n_elems);
    int j = i + 1, whole = gl != 0;
    if (!gl) gl = p[i].key_len; /* does not decode: a group of its own */
    else
      while (j < n && p[j].key_len >= gl && !memcmp(p[j].key, p[i].key, gl)) j++;
    kv_pair *gp = p + i;
    int gn = j - i;
    if (j == n && more && whole) { /* the batch may have cut this group */
      if (took) { g->done = 0; break; }
      dv_buf b, e; /* alone in its batch: read it whole */
      buf_init(&b);
      buf_init(&e);
      buf_append(&b, p[i].key, gl);
      rc = tup_strinc(&e, p[i].key, gl);
      rc = rc || buf_error(&b) || buf_error(&e) ? DV_ENOMEM
                                          : kv_get_range(c->txn, b.p, b.len, e.p, e.len, 0, KV_SNAPSHOT, &gp, &gn, &more);
      buf_free(&b);
      buf_free(&e);
      if (rc) return rc;
      g->done = 0; /* the rest of the range is the next step's */
    }
    rc = g->fn(c, gp, gn, whole ? gl : 0);
    if (rc) return rc;
    took++;
    buf_reset(&g->next); /* past the group: every key with its prefix (not prefix + 0xff: a
                          * corrupt key may go on with 0xff bytes), or the lone key + 0x00 */
    if (whole && tup_strinc(&g->next, gp[0].key, gl)) return DV_ENOMEM;
    if (!whole) {
      buf_append(&g->next, gp[0].key, gl);
      buf_putc(&g->next, 0x00);
    }
    i = j;
    if (j == n && !g->done) break;
    if (now_ms() - c->t0_ms > CK_TXN_MS) { g->done = i >= n && !more; break; }
  }
  return buf_error(&g->next) ? DV_ENOMEM : 0;
}

/* Walk [begin, end) by groups of n_elems elements after base bytes. */
/* The walkers' driver: [begin, end) in steps of one transaction each, every
 * step resuming where the last one's cursor (next) stopped, until done. */
static int walk_drive(ck *c, int (*step)(ck *c, void *arg), void *arg, dv_buf *cur, dv_buf *endb, dv_buf *next,
                      const int *done, const dv_buf *begin, const dv_buf *end) {
  buf_init(cur);
  buf_init(endb);
  buf_init(next);
  buf_append(cur, begin->p, begin->len);
  buf_append(endb, end->p, end->len);
  int rc = buf_error(cur) || buf_error(endb) ? DV_ENOMEM : 0;
  while (!rc && !*done) {
    rc = run_step(c, step, arg);
    if (!rc) {
      buf_reset(cur);
      buf_append(cur, next->p, next->len);
      if (buf_error(cur)) rc = DV_ENOMEM;
    }
  }
  buf_free(cur);
  buf_free(endb);
  buf_free(next);
  return rc;
}

static int walk_groups(ck *c, const dv_buf *begin, const dv_buf *end, size_t base, int n_elems, group_fn fn) {
  gwalk g = {.base = base, .n_elems = n_elems, .fn = fn};
  return walk_drive(c, gwalk_step, &g, &g.cur, &g.end, &g.next, &g.done, begin, end);
}

/* ---- walk_skip ---------------------------------------------------------- */

typedef int (*skip_fn)(ck *c, const kv_pair *first, size_t glen);

typedef struct swalk {
  dv_buf cur, end, next;
  size_t base;
  int n_elems;
  skip_fn fn;
  int done;
} swalk;

static int swalk_step(ck *c, void *arg) {
  swalk *g = arg;
  buf_reset(&g->next);
  buf_append(&g->next, g->cur.p, g->cur.len);
  for (int k = 0; k < CK_SKIPS && now_ms() - c->t0_ms <= CK_TXN_MS; k++) {
    kv_pair *p;
    int n = 0, more;
    int rc = kv_get_range(c->txn, g->next.p, g->next.len, g->end.p, g->end.len, 1, KV_SNAPSHOT, &p, &n, &more);
    if (rc) return rc;
    if (!n) {
      g->done = 1;
      return 0;
    }
    size_t gl = elems_end(p[0].key, p[0].key_len, g->base, g->n_elems);
    if ((rc = g->fn(c, &p[0], gl))) return rc;
    buf_reset(&g->next);
    if (gl) { /* every key with the group's prefix (see gwalk_step) */
      if (tup_strinc(&g->next, p[0].key, gl)) return DV_ENOMEM;
    } else {
      buf_append(&g->next, p[0].key, p[0].key_len);
      buf_putc(&g->next, 0x00);
    }
    if (buf_error(&g->next)) return DV_ENOMEM;
  }
  return 0;
}

static int walk_skip(ck *c, const dv_buf *begin, const dv_buf *end, size_t base, int n_elems, skip_fn fn) {
  swalk g = {.base = base, .n_elems = n_elems, .fn = fn};
  return walk_drive(c, swalk_step, &g, &g.cur, &g.end, &g.next, &g.done, begin, end);
}

/* [P+(sub,), P+(sub,)+0xff) into b, e; *base = its prefix length. */
static int sub_range(ck *c, char sub, dv_buf *b, dv_buf *e, size_t *base) {
  tup_w w;
  st_key_db(&c->x, b, &w, sub);
  *base = b->len;
  buf_reset(e);
  buf_append(e, b->p, b->len);
  buf_putc(e, 0xff);
  return buf_error(b) || buf_error(e) ? DV_ENOMEM : 0;
}

/* ---- small readers -------------------------------------------------------- */

static void rev_text(const store_rev *r, char *out, size_t cap) {
  dv_buf b;
  buf_init(&b);
  store_rev_format(r, &b);
  snprintf(out, cap, "%.*s", buf_error(&b) ? 1 : (int)b.len, buf_error(&b) ? "?" : (const char *)b.p);
  buf_free(&b);
}

static void seq_text(const store_seq *q, char out[STORE_SEQ_STR]) { store_seq_format(q, out); }

/* A decoded string element into the arena, NUL-terminated. */
static char *item_str(dv_arena *a, const tup_item *it) {
  char *s = arena_alloc(a, it->s_len + 1);
  if (!s) return NULL;
  tup_item_copy(it, (uint8_t *)s);
  s[it->s_len] = 0;
  return s;
}

static int read_useq(ck *c, int *found, store_seq *out) {
  if (c->useq_gen != c->gen) {
    const uint8_t *v;
    size_t vl;
    int f;
    int rc = st_meta_get(c->txn, &c->x, "update_seq", KV_SNAPSHOT, &v, &vl, &f);
    if (rc) return rc;
    memset(&c->useq, 0, sizeof c->useq);
    c->useq_found = f;
    if (f) {
      tup_r r;
      tup_r_init(&r, v, vl);
      if (st_seq_get(&r, &c->useq) || !tup_r_done(&r)) {
        PROBLEM(c, NULL, 0, "(Incarnation, Versionstamp)", "update_seq does not decode");
        c->useq_found = 0;
      }
    }
    c->useq_gen = c->gen;
  }
  *found = c->useq_found;
  *out = c->useq;
  return 0;
}

static int64_t meta_int(const uint8_t *v, size_t vl, int64_t dflt) {
  tup_r r;
  tup_item it;
  tup_r_init(&r, v, vl);
  if (tup_get(&r, TUP_INT, &it) || !(it.fits & TUP_FITS_I64)) return dflt;
  return it.i64;
}

/* ---- revisions: one document, whole, in one transaction ------------------- */

/* The content (P,"a",id,attid): chunks 0..n-1, each at most
 * STORE_ATT_CHUNK; *len and md5 of the bytes. */
static int att_content(ck *c, const char *id, size_t idl, const uint8_t attid[16], int64_t *len, uint8_t md5[16],
                       int *ok, char *why, size_t why_cap) {
  dv_buf k, b, e;
  buf_init(&k);
  buf_init(&b);
  buf_init(&e);
  st_att_key(&c->x, &k, id, idl, attid);
  int rc = buf_error(&k) ? DV_ENOMEM : st_prefix_range(&k, &b, &e);
  kv_iter *it = NULL;
  if (!rc) rc = kv_iter_begin(c->txn, b.p, b.len, e.p, e.len, 0, KV_SNAPSHOT | KV_BULK, &it);
  dv_md5 m;
  dv_md5_init(&m);
  int64_t n = 0, want = 0;
  *ok = 1;
  kv_pair p;
  int k2;
  while (!rc && (k2 = kv_iter_next(it, &p)) == 1) {
    tup_r r;
    tup_item ci;
    tup_r_init(&r, p.key + k.len, p.key_len - k.len);
    if (tup_get(&r, TUP_INT, &ci) || !tup_r_done(&r) || ci.i64 != want) {
      snprintf(why, why_cap, "chunk %lld missing or out of order", (long long)want);
      *ok = 0;
      break;
    }
    if (p.val_len > STORE_ATT_CHUNK) {
      snprintf(why, why_cap, "chunk %lld holds %zu bytes (at most %d)", (long long)want, p.val_len, STORE_ATT_CHUNK);
      *ok = 0;
      break;
    }
    dv_md5_update(&m, p.val, p.val_len);
    n += (int64_t)p.val_len;
    want++;
  }
  if (!rc && *ok && k2 < 0) rc = k2;
  kv_iter_free(it);
  dv_md5_final(&m, md5);
  *len = n;
  buf_free(&k);
  buf_free(&b);
  buf_free(&e);
  return rc;
}

/* The body of leaf br: its RevisionMetadata KV and the bytes it takes. */
static int leaf_body(ck *c, const char *id, size_t idl, const st_branch *br, int *has_meta, const uint8_t **meta,
                     size_t *meta_len, int64_t *bytes) {
  dv_buf k, e;
  buf_init(&k);
  buf_init(&e);
  st_doc_key(&c->x, &k, id, idl, br);
  buf_append(&e, k.p, k.len);
  buf_putc(&e, 0xff);
  kv_iter *it = NULL;
  int rc = buf_error(&k) || buf_error(&e) ? DV_ENOMEM : kv_iter_begin(c->txn, k.p, k.len, e.p, e.len, 0, KV_SNAPSHOT, &it);
  *has_meta = 0;
  *bytes = 0;
  kv_pair p;
  int n;
  while (!rc && (n = kv_iter_next(it, &p)) == 1) {
    if (p.key_len == k.len) {
      *has_meta = 1;
      uint8_t *m = arena_alloc(&c->a, p.val_len + 1);
      if (!m) { rc = DV_ENOMEM; break; }
      memcpy(m, p.val, p.val_len);
      *meta = m;
      *meta_len = p.val_len;
    }
    *bytes += (int64_t)(p.key_len + p.val_len);
  }
  if (!rc && n < 0) rc = n;
  kv_iter_free(it);
  buf_free(&k);
  buf_free(&e);
  return rc;
}

static int doc_group(ck *c, const kv_pair *p, int n, size_t glen) {
  size_t base = glen;
  tup_r r;
  tup_item idi;
  { /* the document id: the element before glen */
    dv_buf pre;
    buf_init(&pre);
    tup_w w;
    st_key_db(&c->x, &pre, &w, ST_SUB_REV);
    size_t off = pre.len;
    buf_free(&pre);
    if (glen == p[0].key_len || off >= glen) {
      PROBLEM(c, NULL, 0, "(P,\"r\",DocID,NotDeleted,RevPos,RevHash)", "a revisions key does not decode");
      return 0;
    }
    tup_r_init(&r, p[0].key + off, glen - off);
    if (tup_get(&r, TUP_STR, &idi)) {
      PROBLEM(c, NULL, 0, "a string DocID", "a revisions key's DocID is not a string");
      return 0;
    }
  }
  const char *id = item_str(&c->a, &idi);
  if (!id) return DV_ENOMEM;
  size_t idl = idi.s_len;
  st_branch *brs = arena_alloc(&c->a, (size_t)n * sizeof *brs);
  if (!brs) return DV_ENOMEM;
  int nb = 0;
  for (int i = 0; i < n; i++) {
    int rc = st_branch_decode(&c->a, p[i].key, p[i].key_len, base, p[i].val, p[i].val_len, &brs[nb]);
    if (rc == DV_ENOMEM) return rc;
    if (rc) {
      PROBLEM(c, id, idl, "(0, Sequence|null, BranchCount|null, (ancestors), JsonSize, KvSize[, AttIDs])",
              "revisions row %d does not decode", i);
      continue;
    }
    nb++;
  }
  c->out->counts.documents++;
  c->out->counts.revisions += nb;
  if (!nb) return 0;
  /* the winner */
  int winners = 0;
  for (int i = 0; i < nb; i++) winners += brs[i].winner;
  st_branch *w = &brs[nb - 1];
  char rv[320], rv2[320], sq[STORE_SEQ_STR], sq2[STORE_SEQ_STR], exp[400];
  rev_text(&w->rev, rv, sizeof rv);
  if (winners != 1 || !w->winner) {
    snprintf(exp, sizeof exp, "exactly one, on %s%s (the branch that sorts last)", rv, w->deleted ? " (deleted)" : "");
    PROBLEM(c, id, idl, exp, "%d branches carry a Sequence and BranchCount%s", winners,
            winners == 1 ? ", not the winner" : "");
  }
  if (w->winner) {
    if (w->bc != nb) {
      snprintf(exp, sizeof exp, "%d (the branches stored)", nb);
      PROBLEM(c, id, idl, exp, "BranchCount is %lld", (long long)w->bc);
    }
    if (w->seq.inc > c->x.inc) {
      snprintf(exp, sizeof exp, "at most the database's Incarnation %lld", (long long)c->x.inc);
      PROBLEM(c, id, idl, exp, "the winner's Sequence has Incarnation %lld", (long long)w->seq.inc);
    }
    /* its changes row */
    dv_buf k;
    buf_init(&k);
    tup_w tw;
    st_key_db(&c->x, &k, &tw, ST_SUB_CHG);
    st_seq_put(&tw, &w->seq);
    const uint8_t *v;
    size_t vl;
    int found;
    int rc = buf_error(&k) ? DV_ENOMEM : kv_get(c->txn, k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
    buf_free(&k);
    if (rc) return rc;
    seq_text(&w->seq, sq);
    if (!found) {
      snprintf(exp, sizeof exp, "a changes row at the winner's Sequence %s", sq);
      PROBLEM(c, id, idl, exp, "no changes row for winner %s", rv);
    } else {
      store_change row;
      int64_t bc;
      memset(&row, 0, sizeof row);
      rc = st_change_decode(v, vl, &c->a, &row, &bc);
      if (rc == DV_ENOMEM) return rc;
      if (rc) {
        PROBLEM(c, id, idl, "(0, DocID, RevPos, RevHash, BranchCount, NotDeleted)", "the changes row at %s does not decode",
                sq);
      } else if (row.id_len != idl || memcmp(row.id, id, idl) || store_rev_cmp(&row.rev, &w->rev) ||
                 row.deleted != w->deleted || bc != w->bc) {
        rev_text(&row.rev, rv2, sizeof rv2);
        snprintf(exp, sizeof exp, "%s %s%s BranchCount %lld", id, rv, w->deleted ? " deleted" : "", (long long)w->bc);
        PROBLEM(c, id, idl, exp, "the changes row at %s names %.*s %s%s BranchCount %lld", sq, (int)row.id_len,
                row.id, rv2, row.deleted ? " deleted" : "", (long long)bc);
      }
    }
    if (!w->deleted) c->dc++, c->se += w->json_size;
    else c->ddc++;
  }
  /* every leaf's body and attachments */
  const uint8_t *seen = NULL; /* AttIDs whose content was checked */
  size_t n_seen = 0;
  uint8_t *seen_buf = NULL;
  for (int i = 0; i < nb; i++) {
    st_branch *b = &brs[i];
    rev_text(&b->rev, rv, sizeof rv);
    c->sa += b->kv_size;
    int has_meta;
    const uint8_t *meta = NULL;
    size_t ml = 0;
    int64_t bytes;
    int rc = leaf_body(c, id, idl, b, &has_meta, &meta, &ml, &bytes);
    if (rc) return rc;
    if (!has_meta) {
      if (bytes) PROBLEM(c, id, idl, "its RevisionMetadata KV first", "leaf %s has body KVs but no RevisionMetadata", rv);
      else if (!b->deleted || b->kv_size) {
        snprintf(exp, sizeof exp, "a body of %lld bytes", (long long)b->kv_size);
        PROBLEM(c, id, idl, exp, "leaf %s%s has no body", rv, b->deleted ? " (deleted)" : "");
      }
      if (b->n_att_ids) PROBLEM(c, id, idl, "stubs for its AttIDs", "leaf %s lists AttIDs but has no stubs", rv);
      continue;
    }
    c->out->counts.bodies++;
    if (bytes - (int64_t)ml + 1 != b->kv_size) {
      snprintf(exp, sizeof exp, "%lld (its KvSize)", (long long)b->kv_size);
      PROBLEM(c, id, idl, exp, "leaf %s's body takes %lld bytes", rv, (long long)(bytes - (int64_t)ml + 1));
    }
    json_val *body;
    rc = st_leaf_body(c->txn, &c->x, id, idl, b, &c->a, &body);
    if (rc == DV_ENOMEM) return rc;
    if (rc && rc != DV_ECORRUPT) return rc;
    if (rc) PROBLEM(c, id, idl, NULL, "leaf %s's body does not decode", rv);
    else if ((int64_t)body_json_size(body) != b->json_size) {
      snprintf(exp, sizeof exp, "%lld (its JsonSize)", (long long)b->json_size);
      PROBLEM(c, id, idl, exp, "leaf %s's body is %zu bytes of JSON", rv, body_json_size(body));
    }
    store_att *atts;
    size_t na;
    rc = st_meta_atts(meta, ml, &c->a, &atts, &na);
    if (rc == DV_ENOMEM) return rc;
    if (rc) {
      PROBLEM(c, id, idl, "(0[, (stub…)])", "leaf %s's RevisionMetadata does not decode", rv);
      continue;
    }
    for (size_t j = 0; j < b->n_att_ids; j++) {
      size_t q = 0;
      while (q < na && memcmp(atts[q].id, b->att_ids + 16 * j, 16)) q++;
      if (q == na) PROBLEM(c, id, idl, "only the AttIDs its stubs use", "leaf %s lists an AttID no stub of it uses", rv);
    }
    for (size_t q = 0; q < na; q++) {
      store_att *s = &atts[q];
      if (s->enc_length == 0) continue; /* empty content has no chunks */
      if (!st_att_has_id(b->att_ids, b->n_att_ids, s->id))
        PROBLEM(c, id, idl, "the AttID in its branch's list", "leaf %s's attachment \"%.*s\" uses an AttID its branch does not list",
                rv, (int)s->name_len, s->name);
      if (st_att_has_id(seen, n_seen, s->id)) continue;
      int64_t len;
      uint8_t md5[16];
      int ok;
      char why[160];
      rc = att_content(c, id, idl, s->id, &len, md5, &ok, why, sizeof why);
      if (rc) return rc;
      c->out->counts.attachments++;
      if (!ok) {
        PROBLEM(c, id, idl, "chunks 0..n-1, each at most STORE_ATT_CHUNK bytes",
                "attachment \"%.*s\" of leaf %s: %s", (int)s->name_len, s->name, rv, why);
      } else if (len != s->enc_length) {
        snprintf(exp, sizeof exp, "%lld bytes (its stub's stored length)", (long long)s->enc_length);
        PROBLEM(c, id, idl, exp, "attachment \"%.*s\" of leaf %s has %lld bytes of content", (int)s->name_len, s->name,
                rv, (long long)len);
      } else if (memcmp(md5, s->md5, 16)) {
        PROBLEM(c, id, idl, "the MD5 of its stub's digest", "attachment \"%.*s\" of leaf %s: its content's MD5 differs",
                (int)s->name_len, s->name, rv);
      }
      uint8_t *nbuf = arena_alloc(&c->a, (n_seen + 1) * 16);
      if (!nbuf) return DV_ENOMEM;
      if (n_seen) memcpy(nbuf, seen_buf, n_seen * 16);
      memcpy(nbuf + 16 * n_seen, s->id, 16);
      seen = seen_buf = nbuf;
      n_seen++;
    }
  }
  (void)sq2;
  return 0;
}

/* ---- changes rows ------------------------------------------------------- */

static int change_group(ck *c, const kv_pair *p, int n, size_t glen) {
  (void)n;
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_db(&c->x, &pre, &w, ST_SUB_CHG);
  size_t off = pre.len;
  buf_free(&pre);
  store_seq q;
  tup_r r;
  tup_r_init(&r, p[0].key + off, p[0].key_len - off);
  if (!glen || n != 1 || st_seq_get(&r, &q) || !tup_r_done(&r)) {
    PROBLEM(c, NULL, 0, "(P,\"c\",Incarnation,Versionstamp)", "a changes key does not decode");
    return 0;
  }
  c->out->counts.changes++;
  char sq[STORE_SEQ_STR], sq2[STORE_SEQ_STR], rv[320], exp[400];
  seq_text(&q, sq);
  store_change row;
  int64_t bc;
  memset(&row, 0, sizeof row);
  int rc = st_change_decode(p[0].val, p[0].val_len, &c->a, &row, &bc);
  if (rc == DV_ENOMEM) return rc;
  if (rc) {
    PROBLEM(c, NULL, 0, "(0, DocID, RevPos, RevHash, BranchCount, NotDeleted)", "the changes row at %s does not decode", sq);
    return 0;
  }
  int uf;
  store_seq us;
  if ((rc = read_useq(c, &uf, &us))) return rc;
  if (!uf || store_seq_cmp(&q, &us) > 0) {
    seq_text(&us, sq2);
    snprintf(exp, sizeof exp, "no row after update_seq %s", uf ? sq2 : "(none)");
    PROBLEM(c, row.id, row.id_len, exp, "a changes row at %s", sq);
  }
  st_branch br;
  int found;
  rev_text(&row.rev, rv, sizeof rv);
  rc = st_branch_get(c->txn, &c->x, row.id, row.id_len, row.deleted, &row.rev, &c->a, &br, &found);
  if (rc == DV_ENOMEM) return rc;
  if (rc && rc != DV_ECORRUPT) return rc;
  if (rc) return 0; /* reported by the revisions walk */
  if (!found) {
    snprintf(exp, sizeof exp, "a branch %s%s", rv, row.deleted ? " (deleted)" : "");
    PROBLEM(c, row.id, row.id_len, exp, "the changes row at %s names a revision that is not a leaf", sq);
  } else if (!br.winner || store_seq_cmp(&br.seq, &q)) {
    if (br.winner) seq_text(&br.seq, sq2);
    snprintf(exp, sizeof exp, "one row per document, at the winner's Sequence %s", br.winner ? sq2 : "(none)");
    PROBLEM(c, row.id, row.id_len, exp, "a changes row at %s for %s", sq, rv);
  } else if (br.bc != bc) {
    snprintf(exp, sizeof exp, "the winner's %lld", (long long)br.bc);
    PROBLEM(c, row.id, row.id_len, exp, "the changes row at %s carries BranchCount %lld", sq, (long long)bc);
  }
  return 0;
}

/* ---- bodies and attachment contents without a leaf ---------------------- */

static int body_first(ck *c, const kv_pair *p, size_t glen) {
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_db(&c->x, &pre, &w, ST_SUB_DOC);
  size_t off = pre.len;
  buf_free(&pre);
  tup_r r;
  tup_item idi, nd, pos, h;
  if (!glen) {
    PROBLEM(c, NULL, 0, "(P,\"d\",DocID,NotDeleted,RevPos,RevHash,…)", "a documents key does not decode");
    return 0;
  }
  tup_r_init(&r, p->key + off, glen - off);
  if (tup_get(&r, TUP_STR, &idi) || tup_get(&r, TUP_BOOL, &nd) || tup_get(&r, TUP_INT, &pos) || tup_next(&r, &h) != 1) {
    PROBLEM(c, NULL, 0, "(P,\"d\",DocID,NotDeleted,RevPos,RevHash,…)", "a documents key does not decode");
    return 0;
  }
  const char *id = item_str(&c->a, &idi);
  if (!id) return DV_ENOMEM;
  store_rev rev = {.pos = pos.i64};
  int rc = st_get_hash(&h, &c->a, &rev);
  if (rc == DV_ENOMEM) return rc;
  if (rc) {
    PROBLEM(c, id, idi.s_len, "a RevHash", "a documents key's RevHash does not decode");
    return 0;
  }
  st_branch br;
  int found;
  rc = st_branch_get(c->txn, &c->x, id, idi.s_len, !nd.b, &rev, &c->a, &br, &found);
  if (rc == DV_ECORRUPT) return 0; /* the revisions walk says it */
  if (rc) return rc;
  if (!found) {
    char rv[320];
    rev_text(&rev, rv, sizeof rv);
    PROBLEM(c, id, idi.s_len, "bodies for leaf revisions only", "a body for %s%s, which is not a leaf", rv,
            nd.b ? "" : " (deleted)");
  }
  return 0;
}

static int att_first(ck *c, const kv_pair *p, size_t glen) {
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_db(&c->x, &pre, &w, ST_SUB_ATT);
  size_t off = pre.len;
  buf_free(&pre);
  tup_r r;
  tup_item idi, ai;
  if (glen) tup_r_init(&r, p->key + off, glen - off);
  if (!glen || tup_get(&r, TUP_STR, &idi) || tup_get(&r, TUP_BYTES, &ai) || ai.s_len != 16) {
    PROBLEM(c, NULL, 0, "(P,\"a\",DocID,AttID,Chunk)", "an attachments key does not decode");
    return 0;
  }
  const char *id = item_str(&c->a, &idi);
  if (!id) return DV_ENOMEM;
  uint8_t attid[16];
  tup_item_copy(&ai, attid);
  st_branch *brs;
  int nb;
  int rc = st_branch_range(c->txn, &c->x, id, idi.s_len, NULL, 0, KV_SNAPSHOT, &c->a, &brs, &nb);
  if (rc == DV_ECORRUPT) return 0;
  if (rc) return rc;
  for (int i = 0; i < nb; i++)
    if (st_att_has_id(brs[i].att_ids, brs[i].n_att_ids, attid)) return 0;
  /* an upload not linked yet? */
  dv_buf k;
  buf_init(&k);
  st_key_cluster(c->s, &k, &w, "att_uploads");
  tup_bytes(&w, attid, 16);
  const uint8_t *v;
  size_t vl;
  int found;
  rc = buf_error(&k) ? DV_ENOMEM : kv_get(c->txn, k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
  buf_free(&k);
  if (rc) return rc;
  if (found) {
    tup_item up, ud;
    tup_r_init(&r, v, vl);
    if (!tup_get(&r, TUP_INT, &up) && !tup_get(&r, TUP_STR, &ud) && up.i64 == c->x.prefix && ud.s_len == idi.s_len) {
      char *u = item_str(&c->a, &ud);
      if (!u) return DV_ENOMEM;
      if (!memcmp(u, id, idi.s_len)) return 0;
    }
  }
  char hex[33];
  st_hex(attid, 16, hex);
  hex[32] = 0;
  PROBLEM(c, id, idi.s_len, "content a leaf's stubs use, or an upload in (R,0,\"att_uploads\")",
          "attachment content %s that no leaf references", hex);
  return 0;
}

/* ---- local documents ----------------------------------------------------- */

static int local_group(ck *c, const kv_pair *p, int n, size_t glen) {
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_db(&c->x, &pre, &w, ST_SUB_LOCAL);
  size_t off = pre.len;
  buf_free(&pre);
  tup_r r;
  tup_item idi;
  if (glen) tup_r_init(&r, p[0].key + off, glen - off);
  if (!glen || tup_get(&r, TUP_STR, &idi)) {
    PROBLEM(c, NULL, 0, "(P,\"l\",DocID[,i])", "a local documents key does not decode");
    return 0;
  }
  const char *id = item_str(&c->a, &idi);
  if (!id) return DV_ENOMEM;
  size_t idl = idi.s_len;
  c->out->counts.local_docs++;
  if (p[0].key_len != glen) {
    PROBLEM(c, id, idl, "(0, RevN, NChunks) at (P,\"l\",DocID)", "local document chunks without a header");
    return 0;
  }
  tup_item f, rv, nc;
  tup_r_init(&r, p[0].val, p[0].val_len);
  if (tup_get(&r, TUP_INT, &f) || tup_get(&r, TUP_INT, &rv) || tup_get(&r, TUP_INT, &nc) || !tup_r_done(&r) ||
      nc.i64 < 0) {
    PROBLEM(c, id, idl, "(0, RevN, NChunks)", "a local document header does not decode");
    return 0;
  }
  int64_t want = 0;
  for (int i = 1; i < n; i++, want++) {
    tup_item ci;
    tup_r_init(&r, p[i].key + glen, p[i].key_len - glen);
    if (tup_get(&r, TUP_INT, &ci) || !tup_r_done(&r) || ci.i64 != want) {
      char exp[80];
      snprintf(exp, sizeof exp, "chunks 0..%lld", (long long)nc.i64 - 1);
      PROBLEM(c, id, idl, exp, "local document chunk %lld is missing or out of order", (long long)want);
      return 0;
    }
  }
  if (want != nc.i64) {
    char exp[80];
    snprintf(exp, sizeof exp, "%lld chunks (its header's NChunks)", (long long)nc.i64);
    PROBLEM(c, id, idl, exp, "the local document has %lld chunks", (long long)want);
  }
  return 0;
}

/* ---- meta, purge infos, subspaces ---------------------------------------- */

static int read_pmeta(ck *c) {
  if (c->pmeta_gen == c->gen) return 0;
  const uint8_t *v;
  size_t vl;
  int f;
  int rc = st_meta_get(c->txn, &c->x, "purge_seq", KV_SNAPSHOT, &v, &vl, &f);
  if (rc) return rc;
  c->purge_seq = f ? meta_int(v, vl, -1) : 0;
  if ((rc = st_meta_get(c->txn, &c->x, "purged_infos_limit", KV_SNAPSHOT, &v, &vl, &f))) return rc;
  c->purge_limit = f ? meta_int(v, vl, -1) : STORE_DEFAULT_PURGED_INFOS_LIMIT;
  c->pmeta_gen = c->gen;
  return 0;
}

static int purge_group(ck *c, const kv_pair *p, int n, size_t glen) {
  (void)n;
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_db(&c->x, &pre, &w, ST_SUB_PURGE);
  size_t off = pre.len;
  buf_free(&pre);
  tup_r r;
  tup_item sq, ch;
  if (glen) tup_r_init(&r, p[0].key + off, glen - off);
  if (!glen || tup_get(&r, TUP_INT, &sq)) {
    PROBLEM(c, NULL, 0, "(P,\"p\",PurgeSeq,Chunk)", "a purges key does not decode");
    return 0;
  }
  int rc = read_pmeta(c);
  if (rc) return rc;
  c->out->counts.purge_infos++;
  tup_r_init(&r, p[0].key + glen, p[0].key_len - glen);
  if (tup_get(&r, TUP_INT, &ch) || ch.i64 != 0)
    PROBLEM(c, NULL, 0, "its chunk 0", "purge info %lld has no chunk 0", (long long)sq.i64);
  if (sq.i64 > c->purge_seq || (c->purge_limit > 0 && sq.i64 <= c->purge_seq - c->purge_limit)) {
    char exp[160];
    snprintf(exp, sizeof exp, "infos %lld..%lld only (purge_seq %lld, purged_infos_limit %lld)",
             (long long)(c->purge_seq - c->purge_limit + 1 > 1 ? c->purge_seq - c->purge_limit + 1 : 1),
             (long long)c->purge_seq, (long long)c->purge_seq, (long long)c->purge_limit);
    PROBLEM(c, NULL, 0, exp, "purge info %lld is kept", (long long)sq.i64);
  }
  return 0;
}

static int meta_group(ck *c, const kv_pair *p, int n, size_t glen) {
  static const char *const known[] = {"doc_count", "doc_del_count", "size_active", "size_external", "update_seq",
                                      "revs_limit", "security", "purge_seq", "purged_infos_limit"};
  (void)n;
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_db(&c->x, &pre, &w, ST_SUB_META);
  size_t off = pre.len;
  buf_free(&pre);
  tup_r r;
  tup_item nm;
  if (glen) tup_r_init(&r, p[0].key + off, glen - off);
  if (!glen || tup_get(&r, TUP_STR, &nm) || p[0].key_len != glen) {
    PROBLEM(c, NULL, 0, "(P,\"m\",Name)", "a meta key does not decode");
    return 0;
  }
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (strlen(known[i]) == nm.s_len && !memcmp(known[i], nm.s, nm.s_len)) return 0;
  PROBLEM(c, NULL, 0, "doc_count, doc_del_count, size_active, size_external, update_seq, revs_limit, security, "
          "purge_seq, purged_infos_limit", "an unknown meta key \"%.*s\"", (int)nm.s_len, (const char *)nm.s);
  return 0;
}

static int sub_first(ck *c, const kv_pair *p, size_t glen) {
  tup_r r;
  tup_item su;
  size_t off = glen ? glen : p->key_len;
  (void)off;
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_root(c->s, &pre, &w);
  tup_int(&w, 1);
  tup_int(&w, c->x.prefix);
  size_t base = pre.len;
  buf_free(&pre);
  tup_r_init(&r, p->key + base, p->key_len - base);
  if (!glen || tup_get(&r, TUP_STR, &su) || su.s_len != 1 || !strchr("rdclpmai", su.s[0])) {
    PROBLEM(c, NULL, 0, "the subspaces r, d, c, l, p, m, a, i", "a key in no subspace the layout knows");
  }
  return 0;
}

/* ---- counters --------------------------------------------------------------- */

typedef struct ck_counters {
  int64_t v[4];
  int useq_found;
  store_seq useq;
} ck_counters;

static const char *const counter_names[4] = {"doc_count", "doc_del_count", "size_active", "size_external"};

static int counters_step(ck *c, void *arg) {
  ck_counters *k = arg;
  for (int i = 0; i < 4; i++) {
    const uint8_t *v;
    size_t vl;
    int f;
    int rc = st_meta_get(c->txn, &c->x, counter_names[i], KV_SNAPSHOT, &v, &vl, &f);
    if (rc) return rc;
    k->v[i] = f ? st_le64_get(v, vl) : 0;
  }
  return read_useq(c, &k->useq_found, &k->useq);
}

static int useq_step(ck *c, void *arg) {
  ck_counters *k = arg;
  return read_useq(c, &k->useq_found, &k->useq);
}

/* ---- one database --------------------------------------------------------------- */

static void ck_init(ck *c, store *s, store_check_out *out) {
  memset(c, 0, sizeof *c);
  c->s = s;
  c->out = out;
  arena_init(&c->a, 0);
  c->tail = &c->found;
}

static int db_passes(ck *c) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  size_t base;
  ck_counters before, after;
  int rc = run_step(c, counters_step, &before);
  /* revisions, by document */
  if (!rc) rc = sub_range(c, ST_SUB_REV, &b, &e, &base);
  if (!rc) rc = walk_groups(c, &b, &e, base, 1, doc_group);
  if (!rc) rc = sub_range(c, ST_SUB_CHG, &b, &e, &base);
  if (!rc) rc = walk_groups(c, &b, &e, base, 2, change_group);
  if (!rc) rc = sub_range(c, ST_SUB_DOC, &b, &e, &base);
  if (!rc) rc = walk_skip(c, &b, &e, base, 4, body_first);
  if (!rc) rc = sub_range(c, ST_SUB_ATT, &b, &e, &base);
  if (!rc) rc = walk_skip(c, &b, &e, base, 2, att_first);
  if (!rc) rc = sub_range(c, ST_SUB_LOCAL, &b, &e, &base);
  if (!rc) rc = walk_groups(c, &b, &e, base, 1, local_group);
  if (!rc) rc = sub_range(c, ST_SUB_PURGE, &b, &e, &base);
  if (!rc) rc = walk_groups(c, &b, &e, base, 1, purge_group);
  if (!rc) rc = sub_range(c, ST_SUB_META, &b, &e, &base);
  if (!rc) rc = walk_groups(c, &b, &e, base, 1, meta_group);
  if (!rc) { /* subspaces: P itself */
    tup_w w;
    st_key_root(c->s, &b, &w);
    tup_int(&w, 1);
    tup_int(&w, c->x.prefix);
    base = b.len;
    buf_reset(&e);
    buf_append(&e, b.p, b.len);
    buf_putc(&e, 0xff);
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : walk_skip(c, &b, &e, base, 1, sub_first);
  }
  if (!rc) rc = run_step(c, useq_step, &after);
  if (!rc) {
    int64_t want[4] = {c->dc, c->ddc, c->sa, c->se};
    if (before.useq_found != after.useq_found || store_seq_cmp(&before.useq, &after.useq)) {
      find(c, 1, NULL, 0, NULL, "counters not compared: the database was written during the check");
    } else {
      for (int i = 0; i < 4; i++)
        if (before.v[i] != want[i]) {
          char exp[96];
          snprintf(exp, sizeof exp, "%lld (what the revisions subspace counts)", (long long)want[i]);
          PROBLEM(c, NULL, 0, exp, "%s is %lld", counter_names[i], (long long)before.v[i]);
        }
    }
    rc = flush(c);
  }
  buf_free(&b);
  buf_free(&e);
  return rc;
}

/* The database's cluster rows: its _db_updates by_name row, naming an
 * index row of this database. Runs without a handle (c->db NULL). */
typedef struct dbu_arg {
  const char *name;
  size_t len;
} dbu_arg;

static int check_by_name(ck *c, const char *name, size_t len) {
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_cluster(c->s, &k, &w, "db_updates_by_name");
  tup_str(&w, name, len);
  const uint8_t *v;
  size_t vl;
  int found;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(c->txn, k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
  const char *saved = c->db_name;
  char *nm = arena_strndup(&c->a, name, len);
  if (!nm) rc = DV_ENOMEM;
  c->db_name = nm;
  if (!rc && !found) {
    PROBLEM(c, NULL, 0, "a (R,0,\"db_updates_by_name\",Name) row", "no _db_updates row for the database");
  } else if (!rc) {
    tup_r r;
    tup_item it;
    tup_r_init(&r, v, vl);
    if (tup_get(&r, TUP_VS, &it)) {
      PROBLEM(c, NULL, 0, "(Versionstamp,)", "its db_updates_by_name row does not decode");
    } else {
      st_key_cluster(c->s, &k, &w, "db_updates");
      tup_put_item(&w, &it);
      rc = buf_error(&k) ? DV_ENOMEM : kv_get(c->txn, k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
      tup_item n2, ty;
      if (!rc && !found) {
        PROBLEM(c, NULL, 0, "the (R,0,\"db_updates\",VS) row it names", "its db_updates_by_name row names no _db_updates row");
      } else if (!rc) {
        tup_r_init(&r, v, vl);
        if (tup_get(&r, TUP_STR, &n2) || tup_get(&r, TUP_STR, &ty) || n2.s_len != len ||
            memcmp(item_str(&c->a, &n2) ? item_str(&c->a, &n2) : "", name, len))
          PROBLEM(c, NULL, 0, "a row (Name, EventType) of this database", "its _db_updates row names another database");
        else if (ty.s_len == 7 && !memcmp(ty.s, "deleted", 7))
          PROBLEM(c, NULL, 0, "\"created\" or \"updated\"", "its _db_updates row says \"deleted\"");
      }
    }
  }
  c->db_name = saved;
  buf_free(&k);
  return rc;
}

static int by_name_step(ck *c, void *arg) {
  dbu_arg *d = arg;
  return check_by_name(c, d->name, d->len);
}

int store_check_db(store *s, const char *name, store_check_out *out) {
  ck c;
  ck_init(&c, s, out);
  store_db *db;
  int rc = store_db_open(s, name, &db);
  if (rc) {
    arena_free(&c.a);
    return rc;
  }
  c.db = db;
  c.db_name = name;
  out->counts.databases++;
  rc = db_passes(&c);
  if (rc == DV_ENO_DB && c.gone) {
    find(&c, 1, NULL, 0, NULL, "the database was deleted during its check");
    rc = flush(&c);
  } else if (!rc) {
    c.db = NULL;
    c.db_name = NULL;
    dbu_arg d = {name, strlen(name)};
    rc = run_step(&c, by_name_step, &d);
  }
  store_db_close(db);
  drop(&c);
  arena_free(&c.a);
  return rc;
}

/* ---- the cluster ------------------------------------------------------------- */

static int push_prefix(ck *c, int64_t p) {
  if (c->n_prefixes == c->cap_prefixes) {
    size_t nc = c->cap_prefixes ? 2 * c->cap_prefixes : 64;
    int64_t *np = dv_realloc(c->prefixes, nc * sizeof *np);
    if (!np) return DV_ENOMEM;
    c->prefixes = np;
    c->cap_prefixes = nc;
  }
  c->prefixes[c->n_prefixes++] = p;
  return 0;
}

static int read_counter(ck *c, int64_t *out) {
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_cluster(c->s, &k, &w, "prefix_counter");
  const uint8_t *v;
  size_t vl;
  int found;
  int rc = buf_error(&k) ? DV_ENOMEM : kv_get(c->txn, k.p, k.len, KV_SNAPSHOT, &v, &vl, &found);
  buf_free(&k);
  if (!rc) *out = found ? st_le64_get(v, vl) : 0;
  return rc;
}

static int counter_step(ck *c, void *arg) { return read_counter(c, arg); }

static int dbs_group(ck *c, const kv_pair *p, int n, size_t glen) {
  (void)n;
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_cluster(c->s, &pre, &w, "dbs");
  size_t off = pre.len;
  buf_free(&pre);
  tup_r r;
  tup_item nm, pf, inc, ca, uu, mv;
  int mv_set = 0;
  if (glen) tup_r_init(&r, p[0].key + off, glen - off);
  if (!glen || tup_get(&r, TUP_STR, &nm) || p[0].key_len != glen) {
    PROBLEM(c, NULL, 0, "(R,0,\"dbs\",DbName)", "a dbs key does not decode");
    return 0;
  }
  char *name = item_str(&c->a, &nm);
  if (!name) return DV_ENOMEM;
  c->out->counts.databases++;
  const char *saved = c->db_name;
  c->db_name = name;
  tup_r_init(&r, p[0].val, p[0].val_len);
  int bad = tup_get(&r, TUP_INT, &pf) || tup_get(&r, TUP_INT, &inc) || tup_get(&r, TUP_INT, &ca) ||
            tup_get(&r, TUP_BYTES, &uu) || uu.s_len != 16;
  if (!bad && !tup_r_done(&r)) { /* MovingSince: a move's read-only round (store/move.c) */
    mv_set = 1;
    bad = tup_get(&r, TUP_INT, &mv) != 0;
  }
  if (bad || !tup_r_done(&r) || pf.i64 < 1 || inc.i64 < 0) {
    PROBLEM(c, NULL, 0, "(DbPrefix, Incarnation, CreatedAt, DbUUID[, MovingSince])", "its dbs row does not decode");
    c->db_name = saved;
    return 0;
  }
  if (mv_set)
    find(c, 1, NULL, 0, NULL,
         "read-only since %lld (unix µs) for a `divan move`: one running now, or one killed midway (run the move "
         "again: it lifts the mark at its end)",
         (long long)mv.i64);
  int64_t counter;
  int rc = read_counter(c, &counter);
  if (rc) return rc;
  if (pf.i64 > counter) {
    char exp[96];
    snprintf(exp, sizeof exp, "at most prefix_counter %lld", (long long)counter);
    PROBLEM(c, NULL, 0, exp, "its DbPrefix is %lld", (long long)pf.i64);
  }
  c->db_name = saved;
  if ((rc = push_prefix(c, pf.i64))) return rc;
  return check_by_name(c, name, nm.s_len);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int prefix_first(ck *c, const kv_pair *p, size_t glen) {
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_root(c->s, &pre, &w);
  tup_int(&w, 1);
  size_t off = pre.len;
  buf_free(&pre);
  tup_r r;
  tup_item pf;
  tup_r_init(&r, p->key + off, p->key_len - off);
  if (!glen || tup_get(&r, TUP_INT, &pf)) {
    PROBLEM(c, NULL, 0, "(R,1,DbPrefix,…)", "a database key does not decode");
    return 0;
  }
  int64_t v = pf.i64;
  if (c->n_prefixes && bsearch(&v, c->prefixes, c->n_prefixes, sizeof v, cmp_i64)) return 0;
  if (v > c->counter0) return 0; /* a database created since the dbs walk began */
  dv_buf lk; /* a load in progress, or one killed midway (dump.c) */
  buf_init(&lk);
  st_key_cluster(c->s, &lk, &w, "loads");
  tup_int(&w, v);
  const uint8_t *lv;
  size_t lvl;
  int found;
  int rc = buf_error(&lk) ? DV_ENOMEM : kv_get(c->txn, lk.p, lk.len, KV_SNAPSHOT, &lv, &lvl, &found);
  buf_free(&lk);
  if (rc) return rc;
  if (found) {
    tup_item nm;
    tup_r_init(&r, lv, lvl);
    int ok = !tup_get(&r, TUP_STR, &nm);
    find(c, 1, NULL, 0, NULL,
         "keys under prefix %lld of an unfinished `divan load` of %.*s: one running now, or one stopped midway "
         "(`divan load --resume` or `divan move --resume` goes on with it; or its keys and its (R,0,\"loads\") "
         "row can be cleared)",
         (long long)v, ok ? (int)nm.s_len : 1, ok ? (const char *)nm.s : "?");
    return 0;
  }
  char exp[64];
  snprintf(exp, sizeof exp, "no keys (no database has DbPrefix %lld)", (long long)v);
  PROBLEM(c, NULL, 0, exp, "keys under the dead database prefix %lld", (long long)v);
  return 0;
}

static int dbu_group(ck *c, const kv_pair *p, int n, size_t glen) {
  (void)n;
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_cluster(c->s, &pre, &w, "db_updates");
  size_t off = pre.len;
  tup_r r;
  tup_item vs, nm, ty;
  if (glen) tup_r_init(&r, p[0].key + off, glen - off);
  int bad = !glen || tup_get(&r, TUP_VS, &vs) || p[0].key_len != glen;
  if (!bad) {
    tup_r_init(&r, p[0].val, p[0].val_len);
    bad = tup_get(&r, TUP_STR, &nm) || tup_get(&r, TUP_STR, &ty);
  }
  if (bad) {
    buf_free(&pre);
    PROBLEM(c, NULL, 0, "(R,0,\"db_updates\",VS) = (DbName, EventType)", "a _db_updates row does not decode");
    return 0;
  }
  c->out->counts.db_updates++;
  char *name = item_str(&c->a, &nm);
  if (!name) return DV_ENOMEM;
  st_key_cluster(c->s, &pre, &w, "db_updates_by_name");
  tup_str(&w, name, nm.s_len);
  const uint8_t *v;
  size_t vl;
  int found;
  int rc = buf_error(&pre) ? DV_ENOMEM : kv_get(c->txn, pre.p, pre.len, KV_SNAPSHOT, &v, &vl, &found);
  buf_free(&pre);
  if (rc) return rc;
  tup_item bv;
  if (found) tup_r_init(&r, v, vl);
  if (!found || tup_get(&r, TUP_VS, &bv) || memcmp(bv.fixed, vs.fixed, 12)) {
    const char *saved = c->db_name;
    c->db_name = name;
    PROBLEM(c, NULL, 0, "one _db_updates row per database, the one its db_updates_by_name row names",
            "a _db_updates row its db_updates_by_name row does not name");
    c->db_name = saved;
  }
  return 0;
}

/* A cluster-wide setting (store/clustercfg.c): (R,0,"config","ini",Section,
 * Key) = (Value,) or (null,). */
static int config_group(ck *c, const kv_pair *p, int n, size_t glen) {
  (void)n, (void)glen;
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  st_key_cluster(c->s, &pre, &w, "config");
  tup_strz(&w, "ini");
  size_t off = pre.len;
  buf_free(&pre);
  tup_r r;
  tup_item sec, key, val;
  tup_r_init(&r, p[0].key + off, p[0].key_len - off);
  int bad = tup_get(&r, TUP_STR, &sec) || tup_get(&r, TUP_STR, &key) || !tup_r_done(&r);
  if (!bad) {
    tup_r_init(&r, p[0].val, p[0].val_len);
    bad = tup_next(&r, &val) != 1 || (val.type != TUP_STR && val.type != TUP_NULL) || !tup_r_done(&r);
  }
  if (bad) PROBLEM(c, NULL, 0, "(R,0,\"config\",\"ini\",Section,Key) = (Value,) or (null,)",
                   "a cluster-wide setting's row does not decode");
  return 0;
}

int store_check_cluster(store *s, store_check_out *out) {
  ck c;
  ck_init(&c, s, out);
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  int rc = run_step(&c, counter_step, &c.counter0);
  if (!rc) {
    int64_t before = out->counts.databases;
    st_key_cluster(s, &b, &w, "dbs");
    size_t base = b.len;
    buf_reset(&e);
    buf_append(&e, b.p, b.len);
    buf_putc(&e, 0xff);
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : walk_groups(&c, &b, &e, base, 1, dbs_group);
    out->counts.databases = before; /* store_check_db counts the databases it checks */
  }
  if (!rc) {
    if (c.n_prefixes) qsort(c.prefixes, c.n_prefixes, sizeof *c.prefixes, cmp_i64);
    for (size_t i = 1; i < c.n_prefixes; i++)
      if (c.prefixes[i] == c.prefixes[i - 1]) {
        find(&c, 0, NULL, 0, "one database per DbPrefix", "two databases share DbPrefix %lld", (long long)c.prefixes[i]);
      }
    rc = flush(&c);
  }
  if (!rc) {
    st_key_root(s, &b, &w);
    tup_int(&w, 1);
    size_t base = b.len;
    buf_reset(&e);
    buf_append(&e, b.p, b.len);
    buf_putc(&e, 0xff);
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : walk_skip(&c, &b, &e, base, 1, prefix_first);
  }
  if (!rc) {
    st_key_cluster(s, &b, &w, "db_updates");
    size_t base = b.len;
    buf_reset(&e);
    buf_append(&e, b.p, b.len);
    buf_putc(&e, 0xff);
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : walk_groups(&c, &b, &e, base, 1, dbu_group);
  }
  if (!rc) {
    st_key_cluster(s, &b, &w, "config");
    tup_strz(&w, "ini");
    size_t base = b.len;
    buf_reset(&e);
    buf_append(&e, b.p, b.len);
    buf_putc(&e, 0xff);
    rc = buf_error(&b) || buf_error(&e) ? DV_ENOMEM : walk_groups(&c, &b, &e, base, 2, config_group);
  }
  buf_free(&b);
  buf_free(&e);
  dv_free(c.prefixes);
  drop(&c);
  arena_free(&c.a);
  return rc;
}
