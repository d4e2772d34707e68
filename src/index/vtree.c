/* vtree.c — the tree of reductions of vtree.h, which holds the design (the
 * shape, the key layout, the costs); this file is the code that keeps it.
 *
 * Data flow.
 *   vt_update  (1) The changed suffixes are sorted and deduplicated; each
 *              one's level lv(s) is SipHash-2-4 of s under the salt. A
 *              boundary (lv >= 1) is looked up in the rows: present, its
 *              nodes at levels 1..lv get a placeholder (empty) value, absent
 *              they are cleared — so every lookup below sees the new shape —
 *              and a present one adds an entry "just before s", whose
 *              containing node is s's left neighbour (its range may have
 *              shrunk). (2) The new height: the highest level that still
 *              has a node other than "" (one range read per level, from the
 *              top, until one is found). (3) Bottom up, level L's dirty
 *              nodes are the nodes containing level L-1's dirty entries
 *              (level 0: the changed suffixes): one reverse read finds
 *              the containing node (none when the entry is itself a node of
 *              level L), one forward read its end, which also covers every
 *              later entry before that end. Runs of adjacent dirty nodes read
 *              their children (rows, or level L-1 nodes, already
 *              recomputed) in one range read, and each node's value is
 *              recomputed and written. (4) The meta KV and the levels above
 *              the new height are fixed.
 *   vt_reduce  From the root down (visit): a child wholly inside the range
 *              is one piece (its stored value), a child that holds a bound
 *              is opened; at level 1 the rows in range are read and reduced
 *              into one piece. The pieces, in key order, are rereduced once
 *              at the end.
 *   vt_check   The whole tree is built in memory from the rows (build) and
 *              compared KV by KV with what is stored.
 * Node values are encoded in one place (encode) and computed in two
 * (node_of_rows, node_of_kids) that the three paths share: vt_check checks
 * which nodes exist and what each one summarises, not a second encoder.
 *
 * Not here: the rows (the caller writes them), what reductions mean
 * (vt_ops), and any state outside the transaction.
 */
#include "index/vtree.h"

#include <stdlib.h>
#include <string.h>

#include "util/arena.h"

/* ---- SipHash-2-4 (Aumasson & Bernstein), 64-bit output ---------------------- */

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                 \
  do {                                                           \
    v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);    \
    v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                       \
    v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                       \
    v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);    \
  } while (0)

static uint64_t siphash24(const uint8_t key[16], const uint8_t *m, size_t n) {
  uint64_t k0 = le64(key), k1 = le64(key + 8);
  uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t mi = le64(m + i);
    v3 ^= mi;
    SIPROUND;
    SIPROUND;
    v0 ^= mi;
  }
  uint64_t b = (uint64_t)n << 56;
  for (size_t j = 0; i + j < n; j++) b |= (uint64_t)m[i + j] << (8 * j);
  v3 ^= b;
  SIPROUND;
  SIPROUND;
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

/* lv(s): the highest level at which s starts a node (vtree.h). "" starts the
 * first node of every level anyway: its lv is 0. */
static int vt_lv(const vt_def *d, const uint8_t *s, size_t n) {
  if (!n) return 0;
  uint64_t h = siphash24(d->salt, s, n);
  int z = h ? __builtin_ctzll(h) : 64;
  return z / VT_BITS > VT_MAX_LEVEL ? VT_MAX_LEVEL : z / VT_BITS;
}

/* ---- one call's context ------------------------------------------------------ */

typedef struct vt_cx {
  kv_txn *txn;     /* the caller's transaction */
  const vt_def *d; /* the tree */
  int flags;       /* flags of every read (KV_SNAPSHOT or 0) */
  vt_stats st;     /* this call's reads, added to the caller's at the end */
  dv_arena a;      /* the call's arrays and copies */
  dv_buf kb, ke;   /* scratch keys: a read's begin and end, a write's key */
  dv_buf val;      /* the node value being encoded */
  dv_buf *red;     /* n_red reductions being computed */
  dv_buf vals;     /* the summaries a node combines (vt_red array) */
  dv_buf ins;      /* a rereduce's inputs (vt_red array) */
} vt_cx;

static int cx_init(vt_cx *cx, kv_txn *txn, const vt_def *d, int flags) {
  memset(cx, 0, sizeof *cx);
  cx->txn = txn;
  cx->d = d;
  cx->flags = flags;
  arena_init(&cx->a, 0);
  buf_init(&cx->kb);
  buf_init(&cx->ke);
  buf_init(&cx->val);
  buf_init(&cx->vals);
  buf_init(&cx->ins);
  if (!d->n_red) return 0;
  cx->red = arena_calloc(&cx->a, d->n_red * sizeof *cx->red); /* zeroes are empty bufs */
  return cx->red ? 0 : DV_ENOMEM;
}

static void cx_free(vt_cx *cx, vt_stats *st) {
  if (st) {
    st->reads += cx->st.reads;
    st->kvs += cx->st.kvs;
  }
  if (cx->red)
    for (size_t i = 0; i < cx->d->n_red; i++) buf_free(&cx->red[i]);
  buf_free(&cx->kb);
  buf_free(&cx->ke);
  buf_free(&cx->val);
  buf_free(&cx->vals);
  buf_free(&cx->ins);
  arena_free(&cx->a);
}

static int check_def(const vt_def *d) {
  if (!d || !d->rows_prefix_len || !d->node_prefix_len) return DV_EINVAL;
  size_t m = d->rows_prefix_len < d->node_prefix_len ? d->rows_prefix_len : d->node_prefix_len;
  if (!memcmp(d->rows_prefix, d->node_prefix, m)) return DV_EINVAL; /* one holds the other */
  if (d->n_red && (!d->ops || !d->ops->reduce || !d->ops->rereduce)) return DV_EINVAL;
  return 0;
}

/* Byte order of two strings (the KV order of suffixes). */
static int scmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  int c = an && bn ? memcmp(a, b, an < bn ? an : bn) : 0;
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

/* ---- keys ---------------------------------------------------------------------- */

/* N + (0x01 + level) + s, and one 0x00 more when `after` (the first key
 * after it). Level 0 would be the meta key's neighbour: never used. */
static int key_node(dv_buf *b, const vt_def *d, int level, const uint8_t *s, size_t n, int after) {
  buf_reset(b);
  buf_append(b, d->node_prefix, d->node_prefix_len);
  buf_putc(b, (uint8_t)(1 + level));
  buf_append(b, s, n);
  if (after) buf_putc(b, 0);
  return buf_error(b);
}

/* The first key after every node of a level. */
static int key_level_end(dv_buf *b, const vt_def *d, int level) {
  buf_reset(b);
  buf_append(b, d->node_prefix, d->node_prefix_len);
  buf_putc(b, (uint8_t)(2 + level));
  return buf_error(b);
}

static int key_meta(dv_buf *b, const vt_def *d) {
  buf_reset(b);
  buf_append(b, d->node_prefix, d->node_prefix_len);
  buf_putc(b, 0);
  return buf_error(b);
}

static int key_row(dv_buf *b, const vt_def *d, const uint8_t *s, size_t n, int after) {
  buf_reset(b);
  buf_append(b, d->rows_prefix, d->rows_prefix_len);
  buf_append(b, s, n);
  if (after) buf_putc(b, 0);
  return buf_error(b);
}

/* The first key after every key that starts with p (strinc; "\xff" when p
 * is all 0xFF, the end of the user keyspace). */
static int key_prefix_end(dv_buf *b, const uint8_t *p, size_t n) {
  buf_reset(b);
  uint8_t *o = buf_extend(b, n);
  if (!o) return DV_ENOMEM;
  size_t ol;
  if (kv_strinc(p, n, o, &ol)) {
    buf_reset(b);
    buf_putc(b, 0xff);
  } else {
    b->len = ol;
  }
  return buf_error(b);
}

/* ---- reads (counted) ---------------------------------------------------------- */

static int read_range(vt_cx *cx, const dv_buf *b, const dv_buf *e, int limit, int flags, kv_pair **out, int *n) {
  int more;
  int rc = kv_get_range(cx->txn, b->p, b->len, e->p, e->len, limit, flags | cx->flags, out, n, &more);
  if (rc) return rc;
  cx->st.reads++;
  cx->st.kvs += (uint64_t)*n;
  return 0;
}

static int read_one(vt_cx *cx, const dv_buf *k, const uint8_t **v, size_t *vl, int *found) {
  int rc = kv_get(cx->txn, k->p, k->len, cx->flags, v, vl, found);
  if (rc) return rc;
  cx->st.reads++;
  cx->st.kvs += (uint64_t)*found;
  return 0;
}

/* The height stored in the meta KV (0 when absent). */
static int read_height(vt_cx *cx, int *h) {
  const uint8_t *v;
  size_t vl;
  int found, rc = key_meta(&cx->kb, cx->d);
  if (!rc) rc = read_one(cx, &cx->kb, &v, &vl, &found);
  if (rc) return rc;
  if (!found) {
    *h = 0;
    return 0;
  }
  if (vl != 1 || v[0] < 1 || v[0] > VT_MAX_LEVEL + 1) return DV_ECORRUPT;
  *h = v[0];
  return 0;
}

/* ---- node values ------------------------------------------------------------
 *
 *   offset  size       field
 *   0       8          count of rows under the node, little-endian
 *   8       4          length of reduction 0, little-endian
 *   12      len0       reduction 0's bytes
 *   ...                the same for reductions 1 .. n_red-1
 *
 * A node with no rows (only a first node "" can have none: when the first
 * row starts a node at that level) has count 0 and empty reductions.
 */

/* Parse a node value: its count and, when which < n_red, reduction which. */
static int node_get(const uint8_t *v, size_t n, size_t n_red, size_t which, uint64_t *count, vt_red *r) {
  if (n < 8) return DV_ECORRUPT;
  *count = le64(v);
  size_t off = 8;
  for (size_t i = 0; i < n_red; i++) {
    if (n - off < 4) return DV_ECORRUPT;
    size_t len = le32(v + off);
    off += 4;
    if (n - off < len) return DV_ECORRUPT;
    if (i == which) {
      r->p = v + off;
      r->len = len;
    }
    off += len;
  }
  return off == n ? 0 : DV_ECORRUPT;
}

/* cx->val = the node value of count and cx->red. */
static int encode(vt_cx *cx, uint64_t count) {
  size_t total = 8;
  for (size_t i = 0; i < cx->d->n_red; i++) {
    if (cx->red[i].len > KV_MAX_VALUE) return DV_EVALUE_TOO_LARGE;
    total += 4 + cx->red[i].len;
  }
  if (total > KV_MAX_VALUE) return DV_EVALUE_TOO_LARGE;
  buf_reset(&cx->val);
  uint8_t *o = buf_extend(&cx->val, total);
  if (!o) return DV_ENOMEM;
  for (int i = 0; i < 8; i++) *o++ = (uint8_t)(count >> (8 * i));
  for (size_t i = 0; i < cx->d->n_red; i++) {
    size_t len = cx->red[i].len;
    for (int j = 0; j < 4; j++) *o++ = (uint8_t)(len >> (8 * j));
    if (len) memcpy(o, cx->red[i].p, len);
    o += len;
  }
  return 0;
}

/* cx->val = the value of a level-1 node over these rows. reduce is never
 * called with no rows. */
static int node_of_rows(vt_cx *cx, const kv_pair *rows, size_t n) {
  const vt_def *d = cx->d;
  for (size_t i = 0; i < d->n_red; i++) buf_reset(&cx->red[i]);
  if (n && d->n_red) {
    int rc = d->ops->reduce(d->ctx, rows, n, cx->red);
    if (rc) return rc;
    for (size_t i = 0; i < d->n_red; i++)
      if (buf_error(&cx->red[i])) return DV_ENOMEM;
  }
  return encode(cx, n);
}

/* The values of several summaries (node values, in key order) into cx->red
 * and *count: rereduce over those that hold rows, never over none. */
static int combine(vt_cx *cx, const vt_red *vals, size_t n, uint64_t *count) {
  const vt_def *d = cx->d;
  uint64_t c = 0, ci;
  vt_red r;
  for (size_t i = 0; i < n; i++) {
    int rc = node_get(vals[i].p, vals[i].len, d->n_red, SIZE_MAX, &ci, &r);
    if (rc) return rc;
    c += ci;
  }
  *count = c;
  for (size_t w = 0; w < d->n_red; w++) {
    buf_reset(&cx->red[w]);
    if (!c) continue;
    buf_reset(&cx->ins);
    if (buf_reserve(&cx->ins, n * sizeof(vt_red))) return DV_ENOMEM;
    vt_red *in = (vt_red *)(void *)cx->ins.p;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      (void)node_get(vals[i].p, vals[i].len, d->n_red, w, &ci, &r); /* parsed above */
      if (ci) in[m++] = r;
    }
    int rc = d->ops->rereduce(d->ctx, w, in, m, &cx->red[w]);
    if (rc) return rc;
    if (buf_error(&cx->red[w])) return DV_ENOMEM;
  }
  return 0;
}

/* cx->val = the value of a node of level >= 2 over its children's KVs. */
static int node_of_kids(vt_cx *cx, const kv_pair *kids, size_t n) {
  uint64_t count;
  buf_reset(&cx->vals);
  if (buf_reserve(&cx->vals, (n ? n : 1) * sizeof(vt_red))) return DV_ENOMEM;
  vt_red *v = (vt_red *)(void *)cx->vals.p;
  for (size_t i = 0; i < n; i++) v[i] = (vt_red){kids[i].val, kids[i].val_len};
  int rc = combine(cx, v, n, &count);
  return rc ? rc : encode(cx, count);
}

/* ---- vt_update -------------------------------------------------------------- */

/* An entry of a level's walk: a changed suffix (level 0) or a dirty node. */
typedef struct vt_ent {
  const uint8_t *s;  /* suffix (borrowed from the caller or the transaction) */
  size_t len;
  const uint8_t *nx; /* dirty node: the next node's suffix, where its range ends */
  size_t nxlen;
  int8_t lv;         /* lv(s) */
  int8_t exists;     /* 1: a row (or node) now; 0: absent; -1: not looked up (lv 0) */
  int8_t before;     /* changed: stands for "just before s" (a present boundary's left neighbour) */
  int8_t nx_inf;     /* dirty node: the last of its level, open to the end */
} vt_ent;

static int ent_cmp(const void *pa, const void *pb) {
  const vt_ent *a = pa, *b = pb;
  int c = scmp(a->s, a->len, b->s, b->len);
  return c ? c : b->before - a->before; /* "just before s" sorts before s */
}

/* The suffix of a node key. */
static const uint8_t *node_sfx(const vt_def *d, const kv_pair *p, size_t *n) {
  *n = p->key_len - d->node_prefix_len - 1;
  return p->key + d->node_prefix_len + 1;
}

/* The largest node of level L before s ("" when none is stored: the first
 * node, which a new level has not written yet). */
static int node_before(vt_cx *cx, int L, const uint8_t *s, size_t n, vt_ent *o) {
  kv_pair *p;
  int np, rc = key_node(&cx->kb, cx->d, L, NULL, 0, 0);
  if (!rc) rc = key_node(&cx->ke, cx->d, L, s, n, 0);
  if (!rc) rc = read_range(cx, &cx->kb, &cx->ke, 1, KV_REVERSE, &p, &np);
  if (rc) return rc;
  o->s = (const uint8_t *)"";
  o->len = 0;
  if (np) o->s = node_sfx(cx->d, p, &o->len);
  return 0;
}

/* The node of level L after o->s: o's range end. */
static int node_after(vt_cx *cx, int L, vt_ent *o) {
  kv_pair *p;
  int np, rc = key_node(&cx->kb, cx->d, L, o->s, o->len, 1);
  if (!rc) rc = key_level_end(&cx->ke, cx->d, L);
  if (!rc) rc = read_range(cx, &cx->kb, &cx->ke, 1, 0, &p, &np);
  if (rc) return rc;
  o->nx_inf = np == 0;
  if (np) o->nx = node_sfx(cx->d, p, &o->nxlen);
  return 0;
}

/* Is entry e inside the range of dirty node o (e >= o->s is known)? */
static int covers(const vt_ent *o, const vt_ent *e) {
  if (o->nx_inf) return 1;
  int c = scmp(e->s, e->len, o->nx, o->nxlen);
  return e->before ? c <= 0 : c < 0;
}

/* Recompute a run of adjacent dirty nodes of level L (each one's end is the
 * next one's start) from their children, read in one range read. */
static int recompute_run(vt_cx *cx, int L, const vt_ent *run, size_t n) {
  const vt_def *d = cx->d;
  const vt_ent *last = &run[n - 1];
  kv_pair *kids;
  int nk, rc;
  if (L == 1) {
    rc = key_row(&cx->kb, d, run[0].s, run[0].len, 0);
    if (!rc) rc = last->nx_inf ? key_prefix_end(&cx->ke, d->rows_prefix, d->rows_prefix_len)
                               : key_row(&cx->ke, d, last->nx, last->nxlen, 0);
  } else {
    rc = key_node(&cx->kb, d, L - 1, run[0].s, run[0].len, 0);
    if (!rc)
      rc = last->nx_inf ? key_level_end(&cx->ke, d, L - 1) : key_node(&cx->ke, d, L - 1, last->nx, last->nxlen, 0);
  }
  if (!rc) rc = read_range(cx, &cx->kb, &cx->ke, 0, 0, &kids, &nk);
  if (rc) return rc;
  size_t skip = L == 1 ? d->rows_prefix_len : d->node_prefix_len + 1;
  size_t j = 0;
  for (size_t r = 0; r < n; r++) {
    size_t j0 = j;
    while (j < (size_t)nk &&
           (run[r].nx_inf || scmp(kids[j].key + skip, kids[j].key_len - skip, run[r].nx, run[r].nxlen) < 0))
      j++;
    /* a node of level >= 2 starts with its own child of the same suffix */
    if (L > 1 && (j0 == j || scmp(kids[j0].key + skip, kids[j0].key_len - skip, run[r].s, run[r].len)))
      return DV_ECORRUPT;
    rc = L == 1 ? node_of_rows(cx, kids + j0, j - j0) : node_of_kids(cx, kids + j0, j - j0);
    if (!rc) rc = key_node(&cx->kb, d, L, run[r].s, run[r].len, 0);
    if (!rc) rc = kv_set(cx->txn, cx->kb.p, cx->kb.len, cx->val.p, cx->val.len);
    if (rc) return rc;
  }
  return 0;
}

/* Level L's dirty nodes (out) from level L-1's dirty entries (in), each
 * recomputed and written. */
static int update_level(vt_cx *cx, int L, const vt_ent *in, size_t nin, vt_ent *out, size_t *nout) {
  size_t no = 0;
  int rc;
  for (size_t i = 0; i < nin;) {
    const vt_ent *e = &in[i];
    vt_ent *o = &out[no++];
    memset(o, 0, sizeof *o);
    if (!e->before && (e->len == 0 || (e->exists == 1 && e->lv >= L))) {
      o->s = e->s; /* a node of level L itself */
      o->len = e->len;
    } else if ((rc = node_before(cx, L, e->s, e->len, o))) {
      return rc;
    }
    o->lv = (int8_t)vt_lv(cx->d, o->s, o->len);
    o->exists = 1;
    if ((rc = node_after(cx, L, o))) return rc;
    for (i++; i < nin && covers(o, &in[i]); i++) {}
  }
  for (size_t a = 0; a < no;) {
    size_t b = a + 1;
    while (b < no && !out[b - 1].nx_inf && !scmp(out[b - 1].nx, out[b - 1].nxlen, out[b].s, out[b].len)) b++;
    if ((rc = recompute_run(cx, L, out + a, b - a))) return rc;
    a = b;
  }
  *nout = no;
  return 0;
}

/* The height the rows define now, after the boundaries' node KVs were set
 * or cleared: 1 + the highest level with a node other than "". */
static int new_height(vt_cx *cx, int h_old, int maxlv, int *h) {
  kv_pair *p;
  int np, rc;
  for (int L = h_old - 1 > maxlv ? h_old - 1 : maxlv; L >= 1; L--) {
    if (maxlv >= L) { /* a boundary present now */
      *h = L + 1;
      return 0;
    }
    rc = key_node(&cx->kb, cx->d, L, NULL, 0, 1);
    if (!rc) rc = key_level_end(&cx->ke, cx->d, L);
    if (!rc) rc = read_range(cx, &cx->kb, &cx->ke, 1, 0, &p, &np);
    if (rc) return rc;
    if (np) {
      *h = L + 1;
      return 0;
    }
  }
  rc = key_row(&cx->kb, cx->d, NULL, 0, 0);
  if (!rc) rc = key_prefix_end(&cx->ke, cx->d->rows_prefix, cx->d->rows_prefix_len);
  if (!rc) rc = read_range(cx, &cx->kb, &cx->ke, 1, 0, &p, &np);
  if (rc) return rc;
  *h = np ? 1 : 0;
  return 0;
}

int vt_update(kv_txn *txn, const vt_def *d, const vt_key *changed, size_t n, vt_stats *st) {
  static const uint8_t placeholder[1];
  vt_cx cx;
  int rc = check_def(d);
  if (rc) return rc;
  if (!n) return 0;
  if (n > SIZE_MAX / (4 * sizeof(vt_ent))) return DV_ENOMEM;
  if ((rc = cx_init(&cx, txn, d, 0))) goto done;
  int h_old, h_new, maxlv = 0;
  if ((rc = read_height(&cx, &h_old))) goto done;

  /* (1) the changed suffixes, sorted, once each; the boundaries' nodes */
  vt_ent *in = arena_alloc(&cx.a, 2 * n * sizeof *in), *out = arena_alloc(&cx.a, 2 * n * sizeof *out);
  if (!in || !out) {
    rc = DV_ENOMEM;
    goto done;
  }
  size_t nin = 0;
  for (size_t i = 0; i < n; i++)
    in[nin++] = (vt_ent){.s = changed[i].s, .len = changed[i].len, .lv = (int8_t)vt_lv(d, changed[i].s, changed[i].len),
                         .exists = -1};
  qsort(in, nin, sizeof *in, ent_cmp);
  size_t k = 0;
  for (size_t i = 0; i < nin; i++)
    if (!k || ent_cmp(&in[k - 1], &in[i])) in[k++] = in[i];
  nin = k;
  for (size_t i = 0, nc = nin; i < nc; i++) {
    vt_ent *e = &in[i];
    if (!e->lv) continue;
    const uint8_t *v;
    size_t vl;
    int found;
    if ((rc = key_row(&cx.kb, d, e->s, e->len, 0)) || (rc = read_one(&cx, &cx.kb, &v, &vl, &found))) goto done;
    e->exists = (int8_t)found;
    for (int L = 1; L <= e->lv; L++) {
      if ((rc = key_node(&cx.kb, d, L, e->s, e->len, 0))) goto done;
      rc = found ? kv_set(txn, cx.kb.p, cx.kb.len, placeholder, 0) : kv_clear(txn, cx.kb.p, cx.kb.len);
      if (rc) goto done;
    }
    if (found) {
      if (e->lv > maxlv) maxlv = e->lv;
      in[nin] = *e;
      in[nin++].before = 1;
    }
  }
  qsort(in, nin, sizeof *in, ent_cmp);

  /* (2) the new height; (3) the dirty nodes, bottom up */
  if ((rc = new_height(&cx, h_old, maxlv, &h_new))) goto done;
  for (int L = 1; L <= h_new; L++) {
    size_t nout;
    if ((rc = update_level(&cx, L, in, nin, out, &nout))) goto done;
    vt_ent *t = in;
    in = out;
    out = t;
    nin = nout;
  }
  if (h_new && (nin != 1 || in[0].len || !in[0].nx_inf)) { /* the top level is not one root */
    rc = DV_ECORRUPT;
    goto done;
  }

  /* (4) the meta KV; the levels above the new height */
  if (h_new != h_old) {
    uint8_t hb = (uint8_t)h_new;
    if ((rc = key_meta(&cx.kb, d))) goto done;
    rc = h_new ? kv_set(txn, cx.kb.p, cx.kb.len, &hb, 1) : kv_clear(txn, cx.kb.p, cx.kb.len);
    if (rc) goto done;
  }
  if (h_old > h_new) {
    if ((rc = key_node(&cx.kb, d, h_new + 1, NULL, 0, 0)) || (rc = key_level_end(&cx.ke, d, h_old))) goto done;
    rc = kv_clear_range(txn, cx.kb.p, cx.kb.len, cx.ke.p, cx.ke.len);
  }
done:
  cx_free(&cx, st);
  return rc;
}

/* ---- vt_reduce -------------------------------------------------------------- */

/* A range of suffixes [a, b), b open when b_inf. */
typedef struct vt_q {
  const uint8_t *a; /* first suffix in range */
  size_t al;
  const uint8_t *b; /* first suffix past the range */
  size_t bl;
  int b_inf;        /* no end */
} vt_q;

/* A summary the answer combines (pieces is a vt_red array): a node value,
 * stored (borrowed from the transaction) or of partial rows (in cx->a). */
static int add_piece(vt_cx *cx, dv_buf *pieces, const uint8_t *v, size_t n) {
  vt_red p = {v, n};
  buf_append(pieces, &p, sizeof p);
  return buf_error(pieces);
}

/* The rows of [max(k, q.a), min(nx, q.b)) as one piece (level-1 node k,
 * partly in range). */
static int visit_rows(vt_cx *cx, const vt_q *q, const vt_ent *nd, dv_buf *pieces, int want_reds, uint64_t *count) {
  const vt_def *d = cx->d;
  kv_pair *rows;
  int nr;
  int from_q = scmp(q->a, q->al, nd->s, nd->len) > 0;
  int rc = from_q ? key_row(&cx->kb, d, q->a, q->al, 0) : key_row(&cx->kb, d, nd->s, nd->len, 0);
  if (rc) return rc;
  if (nd->nx_inf && q->b_inf) rc = key_prefix_end(&cx->ke, d->rows_prefix, d->rows_prefix_len);
  else if (nd->nx_inf || (!q->b_inf && scmp(q->b, q->bl, nd->nx, nd->nxlen) < 0))
    rc = key_row(&cx->ke, d, q->b, q->bl, 0);
  else rc = key_row(&cx->ke, d, nd->nx, nd->nxlen, 0);
  if (!rc) rc = read_range(cx, &cx->kb, &cx->ke, 0, 0, &rows, &nr);
  if (rc || !nr) return rc;
  *count += (uint64_t)nr;
  if (!want_reds) return 0;
  if ((rc = node_of_rows(cx, rows, (size_t)nr))) return rc;
  uint8_t *v = arena_memdup(&cx->a, cx->val.p, cx->val.len);
  return v ? add_piece(cx, pieces, v, cx->val.len) : DV_ENOMEM;
}

/* Node nd of level L, partly in range q: its children wholly in range are
 * pieces, those holding a bound are opened. */
static int visit(vt_cx *cx, const vt_q *q, int L, const vt_ent *nd, dv_buf *pieces, int want_reds, uint64_t *count) {
  const vt_def *d = cx->d;
  if (L == 1) return visit_rows(cx, q, nd, pieces, want_reds, count);
  kv_pair *kids;
  int nk, rc = key_node(&cx->kb, d, L - 1, nd->s, nd->len, 0);
  if (!rc) rc = nd->nx_inf ? key_level_end(&cx->ke, d, L - 1) : key_node(&cx->ke, d, L - 1, nd->nx, nd->nxlen, 0);
  if (!rc) rc = read_range(cx, &cx->kb, &cx->ke, 0, 0, &kids, &nk);
  if (rc) return rc;
  for (int i = 0; i < nk; i++) {
    vt_ent c = {0};
    c.s = node_sfx(d, &kids[i], &c.len);
    if (i == 0 && scmp(c.s, c.len, nd->s, nd->len)) return DV_ECORRUPT;
    if (i + 1 < nk) c.nx = node_sfx(d, &kids[i + 1], &c.nxlen);
    else if (nd->nx_inf) c.nx_inf = 1;
    else c.nx = nd->nx, c.nxlen = nd->nxlen;
    if (!c.nx_inf && scmp(c.nx, c.nxlen, q->a, q->al) <= 0) continue;   /* before the range */
    if (!q->b_inf && scmp(c.s, c.len, q->b, q->bl) >= 0) break;          /* after it */
    if (scmp(c.s, c.len, q->a, q->al) >= 0 && (q->b_inf || (!c.nx_inf && scmp(c.nx, c.nxlen, q->b, q->bl) <= 0))) {
      uint64_t ci;
      vt_red r;
      if ((rc = node_get(kids[i].val, kids[i].val_len, d->n_red, SIZE_MAX, &ci, &r))) return rc;
      *count += ci;
      if (ci && want_reds && (rc = add_piece(cx, pieces, kids[i].val, kids[i].val_len))) return rc;
    } else if ((rc = visit(cx, q, L - 1, &c, pieces, want_reds, count))) {
      return rc;
    }
  }
  return 0;
}

/* A bound as the start (lo) or end (hi) of a half-open range: s itself, or
 * s + 0x00 (the first suffix after s). */
static int bound_key(vt_cx *cx, const vt_bound *bd, int after, const uint8_t **s, size_t *n) {
  if (!after) {
    *s = bd->s;
    *n = bd->len;
    return 0;
  }
  uint8_t *p = arena_alloc(&cx->a, bd->len + 1);
  if (!p) return DV_ENOMEM;
  if (bd->len) memcpy(p, bd->s, bd->len);
  p[bd->len] = 0;
  *s = p;
  *n = bd->len + 1;
  return 0;
}

int vt_reduce(kv_txn *txn, const vt_def *d, const vt_bound *lo, const vt_bound *hi, int flags, uint64_t *count,
              dv_buf *reds, vt_stats *st) {
  vt_cx cx;
  dv_buf pieces = DV_BUF_INIT;
  int rc = check_def(d);
  if (rc) return rc;
  if (flags & ~KV_SNAPSHOT) return DV_EINVAL;
  if ((rc = cx_init(&cx, txn, d, flags))) goto done;
  vt_q q = {(const uint8_t *)"", 0, NULL, 0, 1};
  if (lo && (rc = bound_key(&cx, lo, !lo->inclusive, &q.a, &q.al))) goto done;
  if (hi && (rc = bound_key(&cx, hi, hi->inclusive, &q.b, &q.bl))) goto done;
  q.b_inf = !hi;
  int want = reds && d->n_red;
  uint64_t c = 0;
  int h = 0;
  if (!q.b_inf && scmp(q.a, q.al, q.b, q.bl) >= 0) goto answer; /* empty */
  if ((rc = read_height(&cx, &h))) goto done;
  if (!h) goto answer;
  if (!q.al && q.b_inf) { /* everything: the root */
    const uint8_t *v;
    size_t vl;
    int found;
    vt_red r;
    if ((rc = key_node(&cx.kb, d, h, NULL, 0, 0)) || (rc = read_one(&cx, &cx.kb, &v, &vl, &found))) goto done;
    if (!found) {
      rc = DV_ECORRUPT;
      goto done;
    }
    if ((rc = node_get(v, vl, d->n_red, SIZE_MAX, &c, &r))) goto done;
    if (c && want && (rc = add_piece(&cx, &pieces, v, vl))) goto done;
  } else {
    vt_ent root = {.s = (const uint8_t *)"", .nx_inf = 1};
    if ((rc = visit(&cx, &q, h, &root, &pieces, want, &c))) goto done;
  }
answer:
  if (want && pieces.len) {
    uint64_t c2;
    if ((rc = combine(&cx, (const vt_red *)(void *)pieces.p, pieces.len / sizeof(vt_red), &c2))) goto done;
    if (c2 != c) {
      rc = DV_ECORRUPT;
      goto done;
    }
    for (size_t w = 0; w < d->n_red; w++) {
      buf_append(&reds[w], cx.red[w].p, cx.red[w].len);
      if ((rc = buf_error(&reds[w]))) goto done;
    }
  }
  *count = c;
done:
  buf_free(&pieces);
  cx_free(&cx, st);
  return rc;
}

/* ---- vt_clear, vt_check --------------------------------------------------------- */

int vt_clear(kv_txn *txn, const vt_def *d) {
  dv_buf e = DV_BUF_INIT;
  int rc = check_def(d);
  if (!rc) rc = key_prefix_end(&e, d->node_prefix, d->node_prefix_len);
  if (!rc) rc = kv_clear_range(txn, d->node_prefix, d->node_prefix_len, e.p, e.len);
  buf_free(&e);
  return rc;
}

/* One node of the tree built in memory. */
typedef struct vt_bnode {
  const uint8_t *s;   /* suffix */
  size_t len;
  size_t start;       /* its first child in the level below */
  const uint8_t *val; /* value (in cx->a) */
  size_t vlen;
} vt_bnode;

/* The whole tree the rows define, level by level: lvl[L] (L = 1..*h) holds
 * nl[L] nodes in key order. */
static int build(vt_cx *cx, const kv_pair *rows, size_t nr, vt_bnode **lvl, size_t *nl, int *h) {
  const vt_def *d = cx->d;
  int H = 0;
  for (size_t i = 0; i < nr; i++) {
    int l = vt_lv(d, rows[i].key + d->rows_prefix_len, rows[i].key_len - d->rows_prefix_len);
    if (1 + l > H) H = 1 + l;
  }
  *h = H;
  kv_pair *kids = NULL; /* level L-1 as pairs (suffix, value), for node_of_kids */
  for (int L = 1; L <= H; L++) {
    size_t nc = L == 1 ? nr : nl[L - 1];
    vt_bnode *o = arena_alloc(&cx->a, (nc + 1) * sizeof *o);
    if (!o) return DV_ENOMEM;
    size_t no = 0;
    o[no++] = (vt_bnode){(const uint8_t *)"", 0, 0, NULL, 0}; /* the first node */
    for (size_t i = 0; i < nc; i++) {
      const uint8_t *s = L == 1 ? rows[i].key + d->rows_prefix_len : kids[i].key;
      size_t sl = L == 1 ? rows[i].key_len - d->rows_prefix_len : kids[i].key_len;
      if (sl && vt_lv(d, s, sl) >= L) o[no++] = (vt_bnode){s, sl, i, NULL, 0};
    }
    for (size_t j = 0; j < no; j++) {
      size_t a = o[j].start, b = j + 1 < no ? o[j + 1].start : nc;
      int rc = L == 1 ? node_of_rows(cx, rows + a, b - a) : node_of_kids(cx, kids + a, b - a);
      if (rc) return rc;
      if (!(o[j].val = arena_memdup(&cx->a, cx->val.p, cx->val.len))) return DV_ENOMEM;
      o[j].vlen = cx->val.len;
    }
    lvl[L] = o;
    nl[L] = no;
    if (!(kids = arena_alloc(&cx->a, no * sizeof *kids))) return DV_ENOMEM;
    for (size_t i = 0; i < no; i++) kids[i] = (kv_pair){o[i].s, o[i].len, o[i].val, o[i].vlen};
  }
  return 0;
}

/* "level 2 node 6162" or "meta" for a key under the node prefix. */
static void describe(dv_buf *w, const vt_def *d, const uint8_t *k, size_t n) {
  k += d->node_prefix_len;
  n -= d->node_prefix_len;
  if (!n) {
    buf_puts(w, "the bare node prefix");
    return;
  }
  if (k[0] == 0) {
    buf_printf(w, "the meta KV%s", n > 1 ? " (with trailing bytes)" : "");
    return;
  }
  buf_printf(w, "level %d node \"", k[0] - 1);
  for (size_t i = 1; i < n && i <= 32; i++) buf_printf(w, "%02x", k[i]);
  buf_puts(w, n > 33 ? "…\"" : "\"");
}

int vt_check(kv_txn *txn, const vt_def *d, dv_buf *why_buf) {
  vt_cx cx;
  int rc = check_def(d);
  if (rc) return rc;
  if ((rc = cx_init(&cx, txn, d, 0))) goto done;
  kv_pair *rows, *have;
  int nr, nh, h;
  if ((rc = key_row(&cx.kb, d, NULL, 0, 0)) || (rc = key_prefix_end(&cx.ke, d->rows_prefix, d->rows_prefix_len)) ||
      (rc = read_range(&cx, &cx.kb, &cx.ke, 0, 0, &rows, &nr)))
    goto done;
  vt_bnode *lvl[VT_MAX_LEVEL + 2];
  size_t nl[VT_MAX_LEVEL + 2];
  if ((rc = build(&cx, rows, (size_t)nr, lvl, nl, &h))) goto done;
  if ((rc = key_prefix_end(&cx.ke, d->node_prefix, d->node_prefix_len))) goto done;
  buf_reset(&cx.kb);
  buf_append(&cx.kb, d->node_prefix, d->node_prefix_len);
  if ((rc = buf_error(&cx.kb)) || (rc = read_range(&cx, &cx.kb, &cx.ke, 0, 0, &have, &nh))) goto done;

  /* walk the wanted KVs (meta, then each level's nodes: key order) beside
   * the stored ones */
  size_t ai = 0;
  uint8_t hb = (uint8_t)h;
  for (int L = 0; L <= h; L++) {
    size_t cnt = L ? nl[L] : (h > 0);
    for (size_t i = 0; i < cnt; i++) {
      const uint8_t *wv = L ? lvl[L][i].val : &hb;
      size_t wl = L ? lvl[L][i].vlen : 1;
      if ((rc = L ? key_node(&cx.kb, d, L, lvl[L][i].s, lvl[L][i].len, 0) : key_meta(&cx.kb, d))) goto done;
      int c = ai < (size_t)nh ? scmp(have[ai].key, have[ai].key_len, cx.kb.p, cx.kb.len) : 1;
      if (c < 0) {
        buf_puts(why_buf, "vtree: unexpected ");
        describe(why_buf, d, have[ai].key, have[ai].key_len);
        rc = DV_ECORRUPT;
        goto done;
      }
      if (c > 0) {
        buf_puts(why_buf, "vtree: missing ");
        describe(why_buf, d, cx.kb.p, cx.kb.len);
        rc = DV_ECORRUPT;
        goto done;
      }
      if (scmp(have[ai].val, have[ai].val_len, wv, wl)) {
        uint64_t hc = 0, wc = 0;
        vt_red r;
        buf_puts(why_buf, "vtree: ");
        describe(why_buf, d, cx.kb.p, cx.kb.len);
        if (L && !node_get(have[ai].val, have[ai].val_len, d->n_red, SIZE_MAX, &hc, &r) &&
            !node_get(wv, wl, d->n_red, SIZE_MAX, &wc, &r))
          buf_printf(why_buf, " differs from a rebuild (count %llu, rebuilt %llu)", (unsigned long long)hc,
                     (unsigned long long)wc);
        else
          buf_puts(why_buf, " differs from a rebuild");
        rc = DV_ECORRUPT;
        goto done;
      }
      ai++;
    }
  }
  if (ai < (size_t)nh) {
    buf_puts(why_buf, "vtree: unexpected ");
    describe(why_buf, d, have[ai].key, have[ai].key_len);
    rc = DV_ECORRUPT;
  }
done:
  cx_free(&cx, NULL);
  return rc;
}
