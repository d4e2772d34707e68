/* test_vtree.c — the tree of reductions (index/vtree.h) against what it
 * promises: the shape the header writes down (checked with the test's own
 * SipHash-2-4, itself checked against the reference vectors), answers equal
 * to a brute force over an in-memory model after random batches on both
 * backends, node KVs byte-equal whatever the history, O(log n) reads at a
 * million rows, the value limit, and errors (the ops', corruption, out of
 * memory) that come back clean.
 *
 * The reductions the tests use catch order bugs: reduction 0 is the sum of
 * the rows' values (8 bytes LE), reduction 1 the first and last suffix of
 * the range (not commutative: rereduce keeps the first of the first piece
 * and the last of the last). Both assert they never see an empty input.
 */
#include <time.h>

#include "index/vtree.h"
#include "kv/kvt.h"
#include "test.h"
#include "util/alloc.h"
#include "util/arena.h"

/* ---- the test's own SipHash-2-4 and lv -------------------------------------- */

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

#define RL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
static void sround(uint64_t v[4]) {
  v[0] += v[1]; v[1] = RL(v[1], 13); v[1] ^= v[0]; v[0] = RL(v[0], 32);
  v[2] += v[3]; v[3] = RL(v[3], 16); v[3] ^= v[2];
  v[0] += v[3]; v[3] = RL(v[3], 21); v[3] ^= v[0];
  v[2] += v[1]; v[1] = RL(v[1], 17); v[1] ^= v[2]; v[2] = RL(v[2], 32);
}

static uint64_t ref_sip(const uint8_t k[16], const uint8_t *m, size_t n) {
  uint64_t k0 = rd64(k), k1 = rd64(k + 8);
  uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL, k0 ^ 0x6c7967656e657261ULL,
                   k1 ^ 0x7465646279746573ULL};
  uint8_t last[8] = {0};
  size_t full = n / 8 * 8;
  for (size_t i = 0; i < full + 8; i += 8) {
    uint64_t w;
    if (i < full) {
      w = rd64(m + i);
    } else {
      if (n > full) memcpy(last, m + full, n - full);
      last[7] = (uint8_t)n;
      w = rd64(last);
    }
    v[3] ^= w;
    sround(v);
    sround(v);
    v[0] ^= w;
  }
  v[2] ^= 0xff;
  for (int i = 0; i < 4; i++) sround(v);
  return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static int ref_lv(const uint8_t salt[16], const uint8_t *s, size_t n) {
  if (!n) return 0;
  uint64_t h = ref_sip(salt, s, n);
  int z = h ? __builtin_ctzll(h) : 64;
  return z / VT_BITS > VT_MAX_LEVEL ? VT_MAX_LEVEL : z / VT_BITS;
}

/* ---- the test reductions ---------------------------------------------------- */

typedef struct tops_ctx {
  size_t skip;          /* rows_prefix_len: a row's suffix starts there */
  long fail_reduce;     /* >= 0: the reduce call of that number fails */
  long fail_rereduce;   /* >= 0: the rereduce call of that number fails */
  long n_reduce;        /* reduce calls so far */
  long n_rereduce;      /* rereduce calls so far */
} tops_ctx;

#define TOPS_ERR DV_EVIEW_BUILTIN

static void put_u32(dv_buf *b, size_t v) {
  uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  buf_append(b, x, 4);
}

/* (first, last) as len(first) (4 bytes LE) + first + last */
static void put_fl(dv_buf *b, const uint8_t *f, size_t fl, const uint8_t *l, size_t ll) {
  put_u32(b, fl);
  buf_append(b, f, fl);
  buf_append(b, l, ll);
}

static int t_reduce(void *ctx, const kv_pair *rows, size_t n, dv_buf *out) {
  tops_ctx *c = ctx;
  ASSERT(n > 0);
  if (c->n_reduce++ == c->fail_reduce) return TOPS_ERR;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    ASSERT_EQ(rows[i].val_len, 8);
    sum += rd64(rows[i].val);
  }
  uint8_t s8[8];
  wr64(s8, sum);
  ASSERT_EQ(out[0].len, 0);
  ASSERT_EQ(out[1].len, 0);
  buf_append(&out[0], s8, 8);
  put_fl(&out[1], rows[0].key + c->skip, rows[0].key_len - c->skip, rows[n - 1].key + c->skip,
         rows[n - 1].key_len - c->skip);
  return 0;
}

static int t_rereduce(void *ctx, size_t which, const vt_red *in, size_t n, dv_buf *out) {
  tops_ctx *c = ctx;
  ASSERT(n > 0);
  if (c->n_rereduce++ == c->fail_rereduce) return TOPS_ERR;
  if (which == 0) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
      ASSERT_EQ(in[i].len, 8);
      sum += rd64(in[i].p);
    }
    uint8_t s8[8];
    wr64(s8, sum);
    buf_append(out, s8, 8);
    return 0;
  }
  ASSERT_EQ(which, 1);
  for (size_t i = 0; i < n; i++) ASSERT(in[i].len >= 4 && in[i].len >= 4 + (size_t)(in[i].p[0] | in[i].p[1] << 8));
  size_t fl = (size_t)(in[0].p[0] | in[0].p[1] << 8 | in[0].p[2] << 16);
  const vt_red *z = &in[n - 1];
  size_t zf = (size_t)(z->p[0] | z->p[1] << 8 | z->p[2] << 16);
  put_fl(out, in[0].p + 4, fl, z->p + 4 + zf, z->len - 4 - zf);
  return 0;
}

static const vt_ops t_ops = {t_reduce, t_rereduce};

/* ---- a tree under test ------------------------------------------------------------ */

typedef struct tree {
  vt_def d;
  tops_ctx ctx;
  char rp[16]; /* rows prefix */
  char np[16]; /* node prefix */
} tree;

static void tree_init(tree *t, const char *rows_prefix, const char *node_prefix, uint64_t salt_seed, size_t n_red,
                      const vt_ops *ops) {
  memset(t, 0, sizeof *t);
  snprintf(t->rp, sizeof t->rp, "%s", rows_prefix);
  snprintf(t->np, sizeof t->np, "%s", node_prefix);
  t->d.rows_prefix = (const uint8_t *)t->rp;
  t->d.rows_prefix_len = strlen(t->rp);
  t->d.node_prefix = (const uint8_t *)t->np;
  t->d.node_prefix_len = strlen(t->np);
  uint64_t st = salt_seed;
  for (int i = 0; i < VT_SALT_LEN; i++) t->d.salt[i] = (uint8_t)kvt_rand(&st);
  t->d.n_red = n_red;
  t->d.ops = ops;
  t->d.ctx = &t->ctx;
  t->ctx.skip = t->d.rows_prefix_len;
  t->ctx.fail_reduce = t->ctx.fail_rereduce = -1;
}

static void rowkey(dv_buf *k, const tree *t, const uint8_t *s, size_t n) {
  buf_reset(k);
  buf_append(k, t->rp, strlen(t->rp));
  buf_append(k, s, n);
  ASSERT_OK(buf_error(k));
}

static void put_row(kv_txn *txn, const tree *t, const uint8_t *s, size_t n, uint64_t v) {
  dv_buf k = DV_BUF_INIT;
  uint8_t v8[8];
  wr64(v8, v);
  rowkey(&k, t, s, n);
  ASSERT_OK(kv_set(txn, k.p, k.len, v8, 8));
  buf_free(&k);
}

static void del_row(kv_txn *txn, const tree *t, const uint8_t *s, size_t n) {
  dv_buf k = DV_BUF_INIT;
  rowkey(&k, t, s, n);
  ASSERT_OK(kv_clear(txn, k.p, k.len));
  buf_free(&k);
}

static void check_tree(kv_txn *txn, const tree *t) {
  dv_buf why = DV_BUF_INIT;
  int rc = vt_check(txn, &t->d, &why);
  ASSERTF(rc == 0, "vt_check: %s: %s", dv_err_name(rc), why.len ? (char *)why.p : "");
  buf_free(&why);
}

static int height(kv_txn *txn, const tree *t) {
  char k[20];
  snprintf(k, sizeof k, "%s", t->np);
  size_t kl = strlen(k);
  k[kl++] = 0;
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_get(txn, k, kl, 0, &v, &vl, &found));
  if (!found) return 0;
  ASSERT_EQ(vl, 1);
  return v[0];
}

/* All KVs under a prefix (in the transaction's array). */
static kv_pair *all_under(kv_txn *txn, const char *prefix, int *n) {
  uint8_t e[16];
  size_t el;
  ASSERT_OK(kv_strinc(prefix, strlen(prefix), e, &el));
  kv_pair *p;
  int more;
  ASSERT_OK(kv_get_range(txn, prefix, strlen(prefix), e, el, 0, 0, &p, n, &more));
  return p;
}

/* ---- the model: rows in memory, sorted ------------------------------------------- */

typedef struct mrow {
  uint8_t *s;
  size_t len;
  uint64_t v;
} mrow;

typedef struct model {
  mrow *r;
  size_t n, cap;
} model;

static int bcmp_(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  int c = an && bn ? memcmp(a, b, an < bn ? an : bn) : 0;
  return c ? c : (an < bn ? -1 : an > bn);
}

static size_t m_find(const model *m, const uint8_t *s, size_t n, int *found) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (bcmp_(m->r[mid].s, m->r[mid].len, s, n) < 0) lo = mid + 1;
    else hi = mid;
  }
  *found = lo < m->n && !bcmp_(m->r[lo].s, m->r[lo].len, s, n);
  return lo;
}

static void m_set(model *m, const uint8_t *s, size_t n, uint64_t v) {
  int f;
  size_t i = m_find(m, s, n, &f);
  if (f) {
    m->r[i].v = v;
    return;
  }
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 64;
    m->r = realloc(m->r, m->cap * sizeof *m->r);
    ASSERT(m->r);
  }
  memmove(m->r + i + 1, m->r + i, (m->n - i) * sizeof *m->r);
  m->r[i].s = malloc(n ? n : 1);
  ASSERT(m->r[i].s);
  if (n) memcpy(m->r[i].s, s, n);
  m->r[i].len = n;
  m->r[i].v = v;
  m->n++;
}

static void m_del(model *m, const uint8_t *s, size_t n) {
  int f;
  size_t i = m_find(m, s, n, &f);
  if (!f) return;
  free(m->r[i].s);
  memmove(m->r + i, m->r + i + 1, (m->n - i - 1) * sizeof *m->r);
  m->n--;
}

static void m_free(model *m) {
  for (size_t i = 0; i < m->n; i++) free(m->r[i].s);
  free(m->r);
  memset(m, 0, sizeof *m);
}

/* ---- random suffixes ------------------------------------------------------------ */

/* A suffix of level >= want (rejection sampling): a row that starts nodes
 * up to that level, so small trees grow tall. */
static size_t tall(uint64_t *rng, const uint8_t salt[16], int want, uint8_t first, uint8_t *out) {
  for (;;) {
    for (int i = 0; i < 9; i++) out[i] = i < 3 && !first ? 0x00 : (uint8_t)('a' + kvt_rand_below(rng, 26));
    out[0] = first;
    if (ref_lv(salt, out, 9) >= want) return 9;
  }
}

/* A random suffix into out (room for 2000 bytes): short binary ones (0x00
 * and 0xFF included), ones sharing prefixes, the empty one, long ones, and
 * now and then a tall one. */
static size_t gen_suffix(uint64_t *rng, const model *m, const uint8_t salt[16], int allow_tall, uint8_t *out) {
  static const uint8_t alpha[] = {0x00, 0x01, 'a', 'b', 0x7f, 0xfe, 0xff};
  int r = kvt_rand_below(rng, 100);
  size_t n = 0;
  if (r < 4) return 0;
  if (r < 30) {
    n = 1 + (size_t)kvt_rand_below(rng, 3);
    for (size_t i = 0; i < n; i++) out[i] = alpha[kvt_rand_below(rng, (int)sizeof alpha)];
    return n;
  }
  if (r < 60) {
    memcpy(out, "user/", 5);
    n = 5 + 1 + (size_t)kvt_rand_below(rng, 8);
    for (size_t i = 5; i < n; i++) out[i] = (uint8_t)('a' + kvt_rand_below(rng, 4));
    return n;
  }
  if (r < 70 && m->n) {
    const mrow *w = &m->r[kvt_rand_below(rng, (int)m->n)];
    n = w->len < 1500 ? w->len : 1500;
    memcpy(out, w->s, n);
    for (int i = kvt_rand_below(rng, 2); i >= 0; i--) out[n++] = alpha[kvt_rand_below(rng, (int)sizeof alpha)];
    return n;
  }
  if (r < 74) {
    n = 200 + (size_t)kvt_rand_below(rng, 1300);
    memset(out, 'L', n - 1);
    out[n - 1] = (uint8_t)kvt_rand(rng);
    return n;
  }
  /* tall ones starting 0x00 are often the first row: the first nodes "" of
   * the levels below theirs hold no rows */
  uint8_t first = kvt_rand_below(rng, 3) ? 't' : 0x00;
  if (allow_tall && r < 84) return tall(rng, salt, 1, first, out);
  if (allow_tall && r < 88) return tall(rng, salt, 2, first, out);
  if (allow_tall && r < 89) return tall(rng, salt, 3, first, out);
  n = 4 + (size_t)kvt_rand_below(rng, 12);
  for (size_t i = 0; i < n; i++) out[i] = (uint8_t)kvt_rand(rng);
  return n;
}

/* ---- range queries against the model -------------------------------------------- */

static void rand_bound(uint64_t *rng, const model *m, const uint8_t salt[16], vt_bound *b, uint8_t *space, int *open) {
  *open = kvt_rand_below(rng, 100) < 15;
  b->inclusive = kvt_rand_below(rng, 2);
  if (m->n && kvt_rand_below(rng, 2)) {
    const mrow *w = &m->r[kvt_rand_below(rng, (int)m->n)];
    b->s = w->s;
    b->len = w->len;
  } else {
    b->len = gen_suffix(rng, m, salt, 0, space);
    b->s = space;
  }
}

static int in_range(const mrow *w, const vt_bound *lo, const vt_bound *hi) {
  if (lo) {
    int c = bcmp_(w->s, w->len, lo->s, lo->len);
    if (c < 0 || (c == 0 && !lo->inclusive)) return 0;
  }
  if (hi) {
    int c = bcmp_(w->s, w->len, hi->s, hi->len);
    if (c > 0 || (c == 0 && !hi->inclusive)) return 0;
  }
  return 1;
}

/* One vt_reduce against the brute force; returns the reads it took. */
static uint64_t query_check(kv_txn *txn, const tree *t, const model *m, const vt_bound *lo, const vt_bound *hi,
                            int count_only, int flags) {
  uint64_t cnt = 0, sum = 0;
  const mrow *first = NULL, *last = NULL;
  for (size_t i = 0; i < m->n; i++)
    if (in_range(&m->r[i], lo, hi)) {
      if (!first) first = &m->r[i];
      last = &m->r[i];
      cnt++;
      sum += m->r[i].v;
    }
  dv_buf reds[2] = {DV_BUF_INIT, DV_BUF_INIT};
  uint64_t got = ~0ULL;
  vt_stats st = {0, 0};
  int rc = vt_reduce(txn, &t->d, lo, hi, flags, &got, count_only ? NULL : reds, &st);
  ASSERTF(rc == 0, "vt_reduce: %s", dv_err_name(rc));
  ASSERTF(got == cnt, "count %llu, model %llu (lo %s %s, hi %s %s)", (unsigned long long)got,
          (unsigned long long)cnt, lo ? test_hex(lo->s, lo->len) : "open", lo && lo->inclusive ? "incl" : "",
          hi ? "set" : "open", hi && hi->inclusive ? "incl" : "");
  if (!count_only && cnt) {
    uint8_t s8[8];
    wr64(s8, sum);
    ASSERT_MEM_EQ(reds[0].p, reds[0].len, s8, 8);
    dv_buf fl = DV_BUF_INIT;
    put_fl(&fl, first->s, first->len, last->s, last->len);
    ASSERT_MEM_EQ(reds[1].p, reds[1].len, fl.p, fl.len);
    buf_free(&fl);
  } else {
    ASSERT_EQ(reds[0].len, 0);
    ASSERT_EQ(reds[1].len, 0);
  }
  buf_free(&reds[0]);
  buf_free(&reds[1]);
  return st.reads;
}

/* ---- the model test ---------------------------------------------------------------- */

/* Random batches (each one transaction and one vt_update) of inserts,
 * value changes, deletes of present and absent rows, and rows inserted and
 * deleted again in the same transaction, the same suffix listed several
 * times. The tree grows, is emptied, and grows again; after each batch it
 * must equal a rebuild (vt_check) and answer 60 random ranges as the model
 * does. */
static void model_run(const kvt_backend *be, uint64_t seed) {
  kv_db *db = kvt_open(be);
  tree t;
  tree_init(&t, "R", "N", seed, 2, &t_ops);
  model m = {0};
  uint64_t rng = seed * 7919 + 1;
  uint8_t *space = malloc(2048), *qa = malloc(2048), *qb = malloc(2048);
  ASSERT(space && qa && qb);
  int maxh = 0, batches = 90, emptied = 0, empty_first = 0;
  long queries = 0;
  size_t maxrows = 0;
  for (int b = 0; b < batches; b++) {
    /* grow, then empty the tree (batches 40..54), then grow again */
    int phase = b < 40 ? 0 : b < 55 ? 1 : 2;
    int nops = 1 + kvt_rand_below(&rng, b % 7 == 0 ? 600 : 150);
    kv_txn *txn;
    ASSERT_OK(kv_txn_begin(db, &txn));
    dv_arena a = DV_ARENA_INIT;
    vt_key *ch = arena_alloc(&a, (size_t)(3 * nops + m.n + 1) * sizeof *ch);
    ASSERT(ch);
    size_t nch = 0;
    if (phase == 1 && b == 54) { /* the last emptying batch: delete every row */
      for (size_t i = 0; i < m.n; i++) {
        uint8_t *c = arena_memdup(&a, m.r[i].s, m.r[i].len ? m.r[i].len : 1);
        del_row(txn, &t, m.r[i].s, m.r[i].len);
        ch[nch++] = (vt_key){c, m.r[i].len};
      }
      m_free(&m);
    } else {
      for (int o = 0; o < nops; o++) {
        int k = kvt_rand_below(&rng, 100);
        int del_bias = phase == 1 ? 55 : 0;
        size_t n;
        const uint8_t *s;
        if (m.n && k < 15 + del_bias) { /* delete a present row, often the first */
          const mrow *w = &m.r[kvt_rand_below(&rng, 4) ? kvt_rand_below(&rng, (int)m.n) : 0];
          s = arena_memdup(&a, w->s, w->len ? w->len : 1);
          n = w->len;
          del_row(txn, &t, s, n);
          m_del(&m, s, n);
        } else if (m.n && k < 25 + del_bias) { /* a new value for a present row */
          const mrow *w = &m.r[kvt_rand_below(&rng, (int)m.n)];
          uint64_t v = (uint64_t)kvt_rand_below(&rng, 1000);
          s = arena_memdup(&a, w->s, w->len ? w->len : 1);
          n = w->len;
          put_row(txn, &t, s, n, v);
          m_set(&m, s, n, v);
        } else if (k < 32 + del_bias) { /* delete a row that may be absent */
          n = gen_suffix(&rng, &m, t.d.salt, 1, space);
          s = arena_memdup(&a, space, n ? n : 1);
          del_row(txn, &t, s, n);
          m_del(&m, s, n);
        } else if (k < 40 + del_bias) { /* in and out again in this transaction */
          n = gen_suffix(&rng, &m, t.d.salt, 1, space);
          s = arena_memdup(&a, space, n ? n : 1);
          int f;
          m_find(&m, s, n, &f);
          if (!f) {
            put_row(txn, &t, s, n, 5);
            ch[nch++] = (vt_key){s, n};
            del_row(txn, &t, s, n);
          }
        } else { /* insert */
          uint64_t v = (uint64_t)kvt_rand_below(&rng, 1000);
          n = gen_suffix(&rng, &m, t.d.salt, 1, space);
          s = arena_memdup(&a, space, n ? n : 1);
          put_row(txn, &t, s, n, v);
          m_set(&m, s, n, v);
        }
        ch[nch++] = (vt_key){s, n};
        if (kvt_rand_below(&rng, 10) == 0) ch[nch++] = (vt_key){s, n}; /* listed twice */
      }
    }
    vt_stats ust = {0, 0};
    int rc = vt_update(txn, &t.d, ch, nch, &ust);
    ASSERTF(rc == 0, "batch %d: vt_update: %s", b, dv_err_name(rc));
    ASSERT_OK(kv_commit(txn));
    kv_txn_destroy(txn);
    arena_free(&a);

    ASSERT_OK(kv_txn_begin(db, &txn));
    check_tree(txn, &t);
    int h = height(txn, &t);
    if (h > maxh) maxh = h;
    if (m.n > maxrows) maxrows = m.n;
    if (!m.n) { /* no rows: no node KVs, no meta */
      int nk;
      all_under(txn, t.np, &nk);
      ASSERT_EQ(nk, 0);
      ASSERT_EQ(h, 0);
      emptied++;
    }
    const uint8_t *v;
    size_t vl;
    int found;
    ASSERT_OK(kv_get(txn, "N\x02", 2, 0, &v, &vl, &found)); /* level 1's first node */
    if (found && vl >= 8 && rd64(v) == 0) empty_first++;
    for (int q = 0; q < 60; q++) {
      vt_bound lo, hi;
      int lo_open, hi_open;
      rand_bound(&rng, &m, t.d.salt, &lo, qa, &lo_open);
      rand_bound(&rng, &m, t.d.salt, &hi, qb, &hi_open);
      if (kvt_rand_below(&rng, 3) == 0 && bcmp_(lo.s, lo.len, hi.s, hi.len) > 0) { /* mostly non-empty */
        vt_bound x = lo;
        lo = hi;
        hi = x;
      }
      int count_only = kvt_rand_below(&rng, 4) == 0;
      uint64_t reads = query_check(txn, &t, &m, lo_open ? NULL : &lo, hi_open ? NULL : &hi, count_only,
                                   kvt_rand_below(&rng, 2) ? KV_SNAPSHOT : 0);
      ASSERTF(reads <= (uint64_t)(2 * h + 1), "%llu reads at height %d", (unsigned long long)reads, h);
      queries++;
    }
    query_check(txn, &t, &m, NULL, NULL, 0, 0); /* the whole range: the root */
    kv_txn_destroy(txn);
  }
  printf("  %s: %d batches, up to %zu rows, height up to %d, emptied %d times, first node empty after %d, "
         "%ld range queries\n", be->name, batches, maxrows, maxh, emptied, empty_first, queries);
  ASSERT(empty_first > 0);
  ASSERT(maxh >= 4);
  ASSERT(emptied >= 1);
  free(space);
  free(qa);
  free(qb);
  m_free(&m);
  kv_close(db);
}

TEST(vtree_model_rocks) {
  model_run(&kvt_rocks, 1);
  model_run(&kvt_rocks, 2);
  model_run(&kvt_rocks, 5);
}

TEST(vtree_model_fdb) {
  model_run(&kvt_fdb, 3);
  model_run(&kvt_fdb, 4);
}

/* ---- the shape, against the header ------------------------------------------------ */

TEST(vtree_shape) {
  /* the test's SipHash-2-4 against the reference vectors (key 00..0f,
   * message 00..n-1) */
  static const uint64_t vec[] = {
      0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL, 0x85676696d7fb7e2dULL,
      0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL, 0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL,
      0x93f5f5799a932462ULL, 0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
      0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL, 0xa129ca6149be45e5ULL,
  };
  uint8_t key[16], msg[16];
  for (int i = 0; i < 16; i++) key[i] = msg[i] = (uint8_t)i;
  for (size_t n = 0; n < sizeof vec / sizeof *vec; n++)
    ASSERTF(ref_sip(key, msg, n) == vec[n], "siphash of %zu bytes", n);

  /* a tree whose first row starts nodes up to level 2, so the first node
   * "" of levels 1 and 2 holds no rows */
  kv_db *db = kvt_open(&kvt_rocks);
  tree t;
  tree_init(&t, "rows/", "tree/", 42, 2, &t_ops);
  model m = {0};
  uint64_t rng = 9;
  uint8_t s[2048];
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(db, &txn));
  vt_key *ch = calloc(3000, sizeof *ch);
  size_t nch = 0;
  size_t n0 = tall(&rng, t.d.salt, 2, 0x00, s);
  ASSERT_EQ(ref_lv(t.d.salt, s, n0) >= 2, 1);
  m_set(&m, s, n0, 1);
  for (int i = 0; i < 2500; i++) {
    size_t n = gen_suffix(&rng, &m, t.d.salt, 1, s);
    if (!n || s[0] == 0x00) continue; /* the tall row stays first */
    m_set(&m, s, n, (uint64_t)i);
  }
  for (size_t i = 0; i < m.n; i++) {
    put_row(txn, &t, m.r[i].s, m.r[i].len, m.r[i].v);
    ch[nch++] = (vt_key){m.r[i].s, m.r[i].len};
  }
  ASSERT_OK(vt_update(txn, &t.d, ch, nch, NULL));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);

  ASSERT_OK(kv_txn_begin(db, &txn));
  int maxlv = 0;
  for (size_t i = 0; i < m.n; i++) {
    int l = ref_lv(t.d.salt, m.r[i].s, m.r[i].len);
    if (l > maxlv) maxlv = l;
  }
  int nk;
  kv_pair *kv = all_under(txn, t.np, &nk);
  size_t np = strlen(t.np);
  /* meta: N + 0x00 = H */
  ASSERT(nk > 0);
  ASSERT_MEM_EQ(kv[0].key, kv[0].key_len, "tree/\x00", np + 1);
  ASSERT_EQ(kv[0].val_len, 1);
  ASSERT_EQ(kv[0].val[0], 1 + maxlv);
  int H = 1 + maxlv, at = 1;
  size_t *starts = malloc((m.n + 1) * sizeof *starts);
  for (int L = 1; L <= H; L++) {
    /* level L: "" then every row of lv >= L, in key order, each counting
     * the rows up to the next */
    size_t ns = 0;
    starts[ns++] = 0;
    for (size_t i = 0; i < m.n; i++)
      if (m.r[i].len && ref_lv(t.d.salt, m.r[i].s, m.r[i].len) >= L) starts[ns++] = i;
    for (size_t j = 0; j < ns; j++, at++) {
      ASSERTF(at < nk, "level %d: missing nodes", L);
      const uint8_t *k = kv[at].key;
      ASSERT_EQ(k[np], 1 + L);
      if (j) ASSERT_MEM_EQ(k + np + 1, kv[at].key_len - np - 1, m.r[starts[j]].s, m.r[starts[j]].len);
      else ASSERT_EQ(kv[at].key_len, np + 1);
      ASSERT_EQ(rd64(kv[at].val), (j + 1 < ns ? starts[j + 1] : m.n) - starts[j]);
      if (!j && L <= 2) /* the empty first nodes: count 0, empty reductions */
        ASSERT_MEM_EQ(kv[at].val, kv[at].val_len, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
    }
  }
  free(starts);
  ASSERT_EQ(at, nk);
  ASSERT_EQ(rd64(kv[nk - 1].val), m.n); /* the root */
  printf("  %zu rows, height %d, %d node KVs\n", m.n, H, nk);

  /* vt_check finds a changed value, a missing node, a stray one, a wrong
   * height (each in a transaction thrown away) */
  struct {
    const char *what;
    int kind;
  } bad[] = {{"differs", 0}, {"missing", 1}, {"unexpected", 2}, {"meta", 3}};
  for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
    kv_txn *x;
    ASSERT_OK(kv_txn_begin(db, &x));
    int nx;
    kv_pair *y = all_under(x, t.np, &nx);
    const kv_pair *p = &y[nx / 2];
    uint8_t v[200];
    ASSERT(p->val_len <= sizeof v);
    memcpy(v, p->val, p->val_len);
    if (bad[b].kind == 0) {
      v[0] ^= 1;
      ASSERT_OK(kv_set(x, p->key, p->key_len, v, p->val_len));
    } else if (bad[b].kind == 1) {
      ASSERT_OK(kv_clear(x, p->key, p->key_len));
    } else if (bad[b].kind == 2) {
      ASSERT_OK(kv_set(x, "tree/\x03zz", 8, v, p->val_len));
    } else {
      ASSERT_OK(kv_set(x, "tree/\x00", 6, "\x07", 1));
    }
    dv_buf why = DV_BUF_INIT;
    ASSERT_EQ(vt_check(x, &t.d, &why), DV_ECORRUPT);
    printf("  vt_check: %s\n", (char *)why.p);
    ASSERTF(strstr((char *)why.p, bad[b].what) != NULL, "why: %s", (char *)why.p);
    buf_free(&why);
    kv_txn_destroy(x);
  }

  /* vt_clear leaves no node KV; the rows rebuild the same tree */
  ASSERT_OK(vt_clear(txn, &t.d));
  all_under(txn, t.np, &nk);
  ASSERT_EQ(nk, 0);
  ASSERT_OK(vt_update(txn, &t.d, ch, nch, NULL));
  check_tree(txn, &t);
  kv_txn_destroy(txn);
  free(ch);
  m_free(&m);
  kv_close(db);
}

/* ---- history independence -------------------------------------------------------- */

/* Apply a list of (suffix, insert?) in random batches to tree t. */
typedef struct hop {
  const uint8_t *s;
  size_t len;
  int ins;
} hop;

static void apply_ops(kv_db *db, const tree *t, const hop *ops, size_t n, uint64_t *rng) {
  for (size_t i = 0; i < n;) {
    size_t k = 1 + (size_t)kvt_rand_below(rng, 300);
    if (k > n - i) k = n - i;
    kv_txn *txn;
    ASSERT_OK(kv_txn_begin(db, &txn));
    vt_key *ch = calloc(k, sizeof *ch);
    for (size_t j = 0; j < k; j++) {
      const hop *o = &ops[i + j];
      if (o->ins) put_row(txn, t, o->s, o->len, o->len * 3 + 1);
      else del_row(txn, t, o->s, o->len);
      ch[j] = (vt_key){o->s, o->len};
    }
    ASSERT_OK(vt_update(txn, &t->d, ch, k, NULL));
    ASSERT_OK(kv_commit(txn));
    kv_txn_destroy(txn);
    free(ch);
    i += k;
  }
}

static void shuffle(hop *o, size_t n, uint64_t *rng) {
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)kvt_rand_below(rng, (int)i);
    hop x = o[i - 1];
    o[i - 1] = o[j];
    o[j] = x;
  }
}

TEST(vtree_history_independent) {
  kv_db *db = kvt_open(&kvt_rocks);
  tree A, B;
  tree_init(&A, "RA", "NA", 77, 2, &t_ops);
  tree_init(&B, "RB", "NB", 77, 2, &t_ops); /* the same salt: the same shape */
  uint64_t rng = 5;
  model fin = {0}, extra = {0};
  uint8_t s[2048];
  while (fin.n < 3000) {
    size_t n = gen_suffix(&rng, &fin, A.d.salt, 1, s);
    m_set(&fin, s, n, 0);
  }
  while (extra.n < 1500) {
    size_t n = gen_suffix(&rng, &extra, A.d.salt, 1, s);
    int f;
    m_find(&fin, s, n, &f);
    if (!f) m_set(&extra, s, n, 0);
  }
  hop *ops = calloc(4 * (fin.n + extra.n), sizeof *ops);
  size_t n = 0;
  /* A: the final rows, inserted in a random order */
  for (size_t i = 0; i < fin.n; i++) ops[n++] = (hop){fin.r[i].s, fin.r[i].len, 1};
  shuffle(ops, n, &rng);
  apply_ops(db, &A, ops, n, &rng);
  /* B: final and extra rows in another order, half the final ones deleted
   * and inserted again, then the extra ones deleted */
  n = 0;
  for (size_t i = 0; i < fin.n; i++) ops[n++] = (hop){fin.r[i].s, fin.r[i].len, 1};
  for (size_t i = 0; i < extra.n; i++) ops[n++] = (hop){extra.r[i].s, extra.r[i].len, 1};
  shuffle(ops, n, &rng);
  apply_ops(db, &B, ops, n, &rng);
  n = 0;
  for (size_t i = 0; i < fin.n; i += 2) ops[n++] = (hop){fin.r[i].s, fin.r[i].len, 0};
  shuffle(ops, n, &rng);
  apply_ops(db, &B, ops, n, &rng);
  n = 0;
  for (size_t i = 0; i < fin.n; i += 2) ops[n++] = (hop){fin.r[i].s, fin.r[i].len, 1};
  for (size_t i = 0; i < extra.n; i++) ops[n++] = (hop){extra.r[i].s, extra.r[i].len, 0};
  shuffle(ops, n, &rng);
  apply_ops(db, &B, ops, n, &rng);

  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(db, &txn));
  check_tree(txn, &A);
  check_tree(txn, &B);
  int na, nb;
  kv_pair *pa = all_under(txn, A.np, &na), *pb = all_under(txn, B.np, &nb);
  ASSERT_EQ(na, nb);
  for (int i = 0; i < na; i++) {
    ASSERT_MEM_EQ(pa[i].key + 2, pa[i].key_len - 2, pb[i].key + 2, pb[i].key_len - 2);
    ASSERT_MEM_EQ(pa[i].val, pa[i].val_len, pb[i].val, pb[i].val_len);
  }
  printf("  %zu rows (%zu more in B's history): %d node KVs byte-equal, height %d\n", fin.n, extra.n, na,
         height(txn, &A));
  kv_txn_destroy(txn);
  free(ops);
  m_free(&fin);
  m_free(&extra);
  kv_close(db);
}

/* ---- O(log n) reads ------------------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

typedef struct lr_stat {
  int h;            /* height */
  double avg_kvs;   /* sub-range reduces: KVs per reduce */
  double avg_reads; /* reads per reduce */
  uint64_t max_kvs; /* the most KVs one reduce read */
  double us;        /* time per reduce */
  double avg_kvs_c; /* the same ranges, counts only */
  double us_c;
} lr_stat;

/* Row i: suffix BE32(i), value i. 300 random sub-ranges [lo, hi] of the n
 * rows, then the same counts only. */
static void measure(kv_db *db, const tree *t, uint32_t n, uint64_t *rng, lr_stat *o) {
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(db, &txn));
  o->h = height(txn, t);
  dv_buf reds[2] = {DV_BUF_INIT, DV_BUF_INIT};
  uint64_t c;
  vt_stats st = {0, 0};
  ASSERT_OK(vt_reduce(txn, &t->d, NULL, NULL, 0, &c, reds, &st));
  ASSERT_EQ(c, n);
  ASSERT_EQ(rd64(reds[0].p), (uint64_t)n * (n - 1) / 2);
  ASSERT_EQ(st.reads, 2); /* meta and root */
  ASSERT_EQ(st.kvs, 2);
  enum { Q = 300 };
  uint32_t los[Q], his[Q];
  for (int q = 0; q < Q; q++) {
    los[q] = (uint32_t)(kvt_rand(rng) % n);
    his[q] = los[q] + (uint32_t)(kvt_rand(rng) % (n - los[q]));
  }
  for (int pass = 0; pass < 2; pass++) {
    uint64_t kvs = 0, reads = 0, mx = 0;
    double t0 = now_s();
    for (int q = 0; q < Q; q++) {
      uint8_t a[4], b[4];
      be32(a, los[q]);
      be32(b, his[q]);
      vt_bound lo = {a, 4, 1}, hi = {b, 4, 1};
      vt_stats s1 = {0, 0};
      buf_reset(&reds[0]);
      buf_reset(&reds[1]);
      ASSERT_OK(vt_reduce(txn, &t->d, &lo, &hi, 0, &c, pass ? NULL : reds, &s1));
      ASSERT_EQ(c, his[q] - los[q] + 1);
      if (!pass) {
        uint64_t want = (uint64_t)his[q] * (his[q] + 1) / 2 - (los[q] ? (uint64_t)los[q] * (los[q] - 1) / 2 : 0);
        ASSERT_EQ(rd64(reds[0].p), want);
      }
      kvs += s1.kvs;
      reads += s1.reads;
      if (s1.kvs > mx) mx = s1.kvs;
    }
    double us = (now_s() - t0) * 1e6 / Q;
    if (!pass) {
      o->avg_kvs = (double)kvs / Q;
      o->avg_reads = (double)reads / Q;
      o->max_kvs = mx;
      o->us = us;
    } else {
      o->avg_kvs_c = (double)kvs / Q;
      o->us_c = us;
    }
  }
  if (n <= 100000) check_tree(txn, t);
  buf_free(&reds[0]);
  buf_free(&reds[1]);
  kv_txn_destroy(txn);
}

TEST(vtree_log_reads) {
  kv_db *db = kvt_open(&kvt_rocks);
  tree t;
  tree_init(&t, "r", "n", 11, 2, &t_ops);
  enum { BATCH = 10000 };
  static const uint32_t marks[] = {10000, 100000, 1000000};
  lr_stat res[3];
  uint8_t *keys = malloc(BATCH * 4);
  vt_key *ch = malloc(BATCH * sizeof *ch);
  ASSERT(keys && ch);
  uint64_t rng = 3;
  double build = 0, upd = 0;
  uint32_t n = 0;
  for (int m = 0; m < 3; m++) {
    double t0 = now_s();
    while (n < marks[m]) {
      kv_txn *txn;
      ASSERT_OK(kv_txn_begin(db, &txn));
      for (int i = 0; i < BATCH; i++, n++) {
        be32(keys + 4 * i, n);
        put_row(txn, &t, keys + 4 * i, 4, n);
        ch[i] = (vt_key){keys + 4 * i, 4};
      }
      double u0 = now_s();
      ASSERT_OK(vt_update(txn, &t.d, ch, BATCH, NULL));
      upd += now_s() - u0;
      ASSERT_OK(kv_commit(txn));
      kv_txn_destroy(txn);
    }
    build += now_s() - t0;
    measure(db, &t, n, &rng, &res[m]);
    fprintf(stderr,
            "vtree_log_reads: %7u rows, height %d: sub-range reduce %.1f reads %.1f KVs (max %llu) %.0f us; "
            "count only %.1f KVs %.0f us; whole range 2 reads 2 KVs\n",
            n, res[m].h, res[m].avg_reads, res[m].avg_kvs, (unsigned long long)res[m].max_kvs, res[m].us,
            res[m].avg_kvs_c, res[m].us_c);
    /* the header's bound is about 2 x H x 2^VT_BITS; the node holding a
     * bound is drawn by size (twice the average run), so 4 x */
    ASSERTF(res[m].max_kvs <= (uint64_t)(4 * res[m].h * (1 << VT_BITS) + 64), "max %llu KVs at height %d",
            (unsigned long long)res[m].max_kvs, res[m].h);
    ASSERT(res[m].avg_reads <= 2.0 * res[m].h);
  }
  fprintf(stderr, "vtree_log_reads: loaded %u rows in %.1f s (vt_update %.1f s: %.0f rows/s in batches of %d)\n", n,
          build, upd, n / upd, BATCH);
  ASSERTF(res[2].avg_kvs <= 3 * res[0].avg_kvs, "%.1f KVs at 1M vs %.1f at 10k", res[2].avg_kvs, res[0].avg_kvs);
  free(keys);
  free(ch);
  kv_close(db);
}

/* ---- limits ------------------------------------------------------------------------- */

/* One reduction: the concatenation of the values (grows with its input). */
static int cat_reduce(void *ctx, const kv_pair *rows, size_t n, dv_buf *out) {
  for (size_t i = 0; i < n; i++) buf_append(&out[0], rows[i].val, rows[i].val_len);
  return 0;
}

static int cat_rereduce(void *ctx, size_t which, const vt_red *in, size_t n, dv_buf *out) {
  for (size_t i = 0; i < n; i++) buf_append(out, in[i].p, in[i].len);
  return 0;
}

static const vt_ops cat_ops = {cat_reduce, cat_rereduce};

TEST(vtree_limits) {
  kv_db *db = kvt_open(&kvt_rocks);
  tree t;
  tree_init(&t, "R", "N", 8, 1, &cat_ops);
  uint8_t *big = malloc(KV_MAX_VALUE);
  ASSERT(big);
  memset(big, 'v', KV_MAX_VALUE);
  /* one row: a node is 8 + 4 + the value; at the limit it fits */
  size_t at_limit = KV_MAX_VALUE - 12;
  for (int past = 0; past < 2; past++) {
    kv_txn *txn;
    ASSERT_OK(kv_txn_begin(db, &txn));
    ASSERT_OK(kv_set(txn, "Rk", 2, big, at_limit + (size_t)past));
    vt_key k = {(const uint8_t *)"k", 1};
    int rc = vt_update(txn, &t.d, &k, 1, NULL);
    if (!past) {
      ASSERT_OK(rc);
      check_tree(txn, &t);
      dv_buf red = DV_BUF_INIT;
      uint64_t c;
      ASSERT_OK(vt_reduce(txn, &t.d, NULL, NULL, 0, &c, &red, NULL));
      ASSERT_EQ(c, 1);
      ASSERT_EQ(red.len, at_limit);
      buf_free(&red);
      ASSERT_OK(kv_commit(txn));
    } else {
      ASSERT_EQ(rc, DV_EVALUE_TOO_LARGE);
    }
    kv_txn_destroy(txn);
  }
  /* a reduction that grows: 300 rows of 1000 bytes fail at a node above
   * the rows, cleanly; the committed tree is untouched */
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(db, &txn));
  vt_key ch[300];
  uint8_t sfx[300][4];
  for (int i = 0; i < 300; i++) {
    snprintf((char *)sfx[i], 4, "%03d", i);
    char key[8];
    snprintf(key, sizeof key, "R%03d", i);
    ASSERT_OK(kv_set(txn, key, 4, big, 1000));
    ch[i] = (vt_key){sfx[i], 3};
  }
  ASSERT_EQ(vt_update(txn, &t.d, ch, 300, NULL), DV_EVALUE_TOO_LARGE);
  kv_txn_destroy(txn);
  ASSERT_OK(kv_txn_begin(db, &txn));
  check_tree(txn, &t);
  kv_txn_destroy(txn);
  free(big);
  kv_close(db);
}

/* ---- errors -------------------------------------------------------------------------- */

/* A committed tree of ~400 rows (some tall) for the error tests. */
static void seed_tree(kv_db *db, tree *t, model *m, uint64_t *rng) {
  uint8_t s[2048];
  while (m->n < 400) {
    size_t n = gen_suffix(rng, m, t->d.salt, 1, s);
    m_set(m, s, n, m->n);
  }
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(db, &txn));
  vt_key *ch = calloc(m->n, sizeof *ch);
  for (size_t i = 0; i < m->n; i++) {
    put_row(txn, t, m->r[i].s, m->r[i].len, m->r[i].v);
    ch[i] = (vt_key){m->r[i].s, m->r[i].len};
  }
  ASSERT_OK(vt_update(txn, &t->d, ch, m->n, NULL));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
  free(ch);
}

TEST(vtree_errors) {
  char *dir = (char *)kvt_newdir("rocks"); /* freed below, for the leak check */
  kv_db *db = kvt_open_at(&kvt_rocks, dir);
  tree t;
  tree_init(&t, "R", "N", 4, 2, &t_ops);
  model m = {0};
  uint64_t rng = 12;
  seed_tree(db, &t, &m, &rng);
  kv_txn *txn;
  uint64_t c;
  dv_buf reds[2] = {DV_BUF_INIT, DV_BUF_INIT};
  vt_key k1 = {(const uint8_t *)"user/x", 6};
  vt_bound lo = {m.r[10].s, m.r[10].len, 1}, hi = {m.r[300].s, m.r[300].len, 0};

  /* definitions that cannot work */
  ASSERT_OK(kv_txn_begin(db, &txn));
  tree bad = t;
  bad.d.rows_prefix_len = 0;
  ASSERT_EQ(vt_update(txn, &bad.d, &k1, 1, NULL), DV_EINVAL);
  bad = t;
  bad.d.node_prefix = (const uint8_t *)"RN";
  bad.d.node_prefix_len = 2; /* inside the rows */
  ASSERT_EQ(vt_reduce(txn, &bad.d, NULL, NULL, 0, &c, NULL, NULL), DV_EINVAL);
  bad = t;
  bad.d.ops = NULL;
  ASSERT_EQ(vt_check(txn, &bad.d, &reds[0]), DV_EINVAL);
  ASSERT_EQ(vt_reduce(txn, &t.d, NULL, NULL, KV_REVERSE, &c, NULL, NULL), DV_EINVAL);
  ASSERT_OK(vt_update(txn, &t.d, &k1, 0, NULL)); /* nothing changed: nothing to do */
  kv_txn_destroy(txn);

  /* the ops' errors come back as they are, whichever call fails: a run
   * with no failure counts the calls, then each one fails in turn */
  for (int op = 0; op < 2; op++)     /* 0: vt_update, 1: vt_reduce */
    for (int which = 0; which < 2; which++) { /* 0: reduce, 1: rereduce */
      long calls = -1;
      for (long at = -1; at < calls; at++) {
        ASSERT_OK(kv_txn_begin(db, &txn));
        if (!op) put_row(txn, &t, k1.s, k1.len, 1);
        t.ctx.n_reduce = t.ctx.n_rereduce = 0;
        t.ctx.fail_reduce = which ? -1 : at;
        t.ctx.fail_rereduce = which ? at : -1;
        buf_reset(&reds[0]);
        int rc = op ? vt_reduce(txn, &t.d, &lo, &hi, 0, &c, reds, NULL) : vt_update(txn, &t.d, &k1, 1, NULL);
        t.ctx.fail_reduce = t.ctx.fail_rereduce = -1;
        if (at < 0) {
          ASSERT_OK(rc);
          calls = which ? t.ctx.n_rereduce : t.ctx.n_reduce;
          ASSERT(calls > 0);
        } else {
          ASSERT_EQ(rc, TOPS_ERR);
          if (op) ASSERT_EQ(reds[0].len, 0); /* nothing appended on failure */
        }
        if (op) { /* counts only: no op is called (the next call of either would fail) */
          t.ctx.fail_reduce = t.ctx.n_reduce;
          t.ctx.fail_rereduce = t.ctx.n_rereduce;
          ASSERT_OK(vt_reduce(txn, &t.d, &lo, &hi, 0, &c, NULL, NULL));
          ASSERT_EQ(c, 290);
          t.ctx.fail_reduce = t.ctx.fail_rereduce = -1;
        }
        kv_txn_destroy(txn);
      }
    }

  /* corruption is named, not followed */
  ASSERT_OK(kv_txn_begin(db, &txn));
  ASSERT_OK(kv_set(txn, "N\x00", 2, "\x30", 1)); /* a height past VT_MAX_LEVEL + 1 */
  ASSERT_EQ(vt_update(txn, &t.d, &k1, 1, NULL), DV_ECORRUPT);
  kv_txn_destroy(txn);
  ASSERT_OK(kv_txn_begin(db, &txn));
  int nk;
  kv_pair *kv = all_under(txn, "N", &nk);
  for (int i = 1; i < nk; i++) /* every node's value cut short */
    ASSERT_OK(kv_set(txn, kv[i].key, kv[i].key_len, kv[i].val, 7));
  ASSERT_EQ(vt_reduce(txn, &t.d, &lo, &hi, 0, &c, reds, NULL), DV_ECORRUPT);
  ASSERT_EQ(vt_reduce(txn, &t.d, NULL, NULL, 0, &c, NULL, NULL), DV_ECORRUPT);
  kv_txn_destroy(txn);

  /* out of memory at every allocation in turn: DV_ENOMEM and no leak,
   * until the call succeeds (and leaves a correct tree) */
  int nomem[3] = {0, 0, 0};
  uint8_t sv[40][16];
  vt_key ch[40];
  uint64_t r2 = 99;
  for (int i = 0; i < 40; i++) {
    if (i % 3 == 0) { /* a present row, deleted */
      ch[i] = (vt_key){m.r[i * 9].s, m.r[i * 9].len};
      continue;
    }
    for (int j = 0; j < 16; j++) sv[i][j] = (uint8_t)kvt_rand(&r2);
    ch[i] = (vt_key){sv[i], (size_t)(1 + i % 16)};
  }
  for (int f = 0; f < 3; f++)
    for (long n = 0;; n++) {
      ASSERT(n < 100000);
      ASSERT_OK(kv_txn_begin(db, &txn));
      if (f == 0)
        for (int i = 0; i < 40; i++) {
          if (i % 3 == 0) del_row(txn, &t, ch[i].s, ch[i].len);
          else put_row(txn, &t, ch[i].s, ch[i].len, 7);
        }
      dv_buf why = DV_BUF_INIT;
      buf_reset(&reds[0]);
      buf_reset(&reds[1]);
      dv_alloc_fail_after(n);
      int rc = f == 0 ? vt_update(txn, &t.d, ch, 40, NULL)
               : f == 1 ? vt_reduce(txn, &t.d, &lo, &hi, KV_SNAPSHOT, &c, reds, NULL)
                        : vt_check(txn, &t.d, &why);
      dv_alloc_fail_after(-1);
      ASSERTF(rc == 0 || rc == DV_ENOMEM, "call %d, allocation %ld: %s", f, n, dv_err_name(rc));
      if (!rc && f == 0) check_tree(txn, &t);
      if (!rc && f == 1) ASSERT_EQ(c, 290);
      buf_free(&why);
      kv_txn_destroy(txn);
      if (!rc) break;
      nomem[f]++;
    }
  printf("  out of memory: %d / %d / %d failing runs before update / reduce / check succeeded\n", nomem[0], nomem[1],
         nomem[2]);
  ASSERT(nomem[0] > 0 && nomem[1] > 0 && nomem[2] > 0);
  buf_free(&reds[0]);
  buf_free(&reds[1]);
  m_free(&m);
  kv_close(db);
  free(dir);
  LEAK_CHECK();
}
