/* mquery.c — Mango's _find and _explain with CouchDB 3.4's semantics
 * (mquery.h): the options of a request (mango_opts:validate_find), which
 * index answers it (mango_idx:get_usable_indexes, mango_cursor:create,
 * mango_cursor_view:choose_best_index), the key ranges read
 * (mango_idx_view:field_ranges/start_key/end_key), running the query over
 * mindex.h's scans or _all_docs (mango_cursor_view/_special), the bookmark,
 * the execution statistics, the warnings and the _explain document.
 *
 * What it is not: POST/GET _index (mqidx.c), the selector language itself
 * (mango.c; this file reads its normalised tree through mango_int.h), the
 * index rows (mindex.c), HTTP (api/mango.c).
 *
 * Beyond CouchDB, never changing which documents come back or their order:
 *   - multi-range: when the chosen json index's first column c0 is bound
 *     by a top-level $in, or the selector is an $or whose branches all bind
 *     c0, the scan reads one key range per value/branch instead of the
 *     whole of CouchDB's range. Each range is a superset of the c0 values a
 *     matching document can have (a $in also reads every array-valued c0,
 *     since {"$in": [1]} matches [1, 5]), intersected with CouchDB's own
 *     range, sorted by start key and merged until disjoint; every row is
 *     still matched against the whole selector. Not done for c0 = "_id"
 *     (its conditions compare in Erlang's term order, the index in view
 *     collation), nor with $beginsWith inside $or branches.
 *   - covering: a json index holding every field the selector and "fields"
 *     use answers from its rows (documents derived from the key, §8).
 *
 * Key ranges are collation-key prefixes (mindex.h mi_range): a start is
 * 0x40 then each bound element's key (no array terminator), an end the
 * same up to the first unbounded element (CouchDB's MAX). A CouchDB end key
 * always ends in MAX, so "every key with end as a prefix" is exactly
 * CouchDB's inclusive end.
 *
 * Bookmarks are divan's own: base64url (no padding) of a kind byte ('j': a
 * json index row position as mi_row.pos gives it, 'a': an _all_docs id)
 * and its payload; a page resumes strictly after that row.
 */
#include "index/mquery_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/collate.h"
#include "index/mango_int.h"
#include "util/b64.h"
#include "util/stats.h"

#define MQ_SCAN_WARN 10         /* [mango] index_scan_warning_threshold */
#define MQ_WAIT_MS 300000       /* longest wait for an index being built (update=true) */
#define MQ_MAX_RANGES 512       /* more ranges than this: read CouchDB's one range */

/* ---- the selector tree, as mango_idx_view and mango_selector read it --------------------- */

/* A field node's name (its dotted path), in a; NULL when out of memory. */
static const char *fname(dv_arena *a, const mnode *f, size_t *n) { return mango__path_name(a, f->path, n); }

static int fname_is(dv_arena *a, const mnode *f, const char *s, size_t n) {
  size_t fn;
  const char *x = fname(a, f, &fn);
  return x && fn == n && !memcmp(x, s, n);
}

static int indexable_op(int op) {
  return op == MO_LT || op == MO_LTE || op == MO_EQ || op == MO_GT || op == MO_GTE || op == MO_EXISTS ||
         op == MO_BEGINS;
}

/* A list of names (sorted and unique once usort ran). */
typedef struct names {
  mq_str *v;
  size_t n, cap;
} names;

static int names_add(dv_arena *a, names *l, const char *s, size_t n) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 8;
    mq_str *nv = arena_alloc(a, nc * sizeof *nv);
    if (!nv) return DV_ENOMEM;
    if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n].s = s;
  l->v[l->n].n = n;
  l->n++;
  return 0;
}

/* Erlang's order of binaries: bytes, then length. */
static int bin_cmp(const char *a, size_t an, const char *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : an < bn ? -1 : an > bn;
}

static int str_cmp_q(const void *x, const void *y) {
  const mq_str *a = x, *b = y;
  return bin_cmp(a->s, a->n, b->s, b->n);
}

static void names_usort(names *l) {
  if (l->n < 2) return;
  qsort(l->v, l->n, sizeof *l->v, str_cmp_q);
  size_t k = 1;
  for (size_t i = 1; i < l->n; i++)
    if (str_cmp_q(&l->v[i], &l->v[k - 1])) l->v[k++] = l->v[i];
  l->n = k;
}

static int names_has(const names *l, const char *s, size_t n) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].n == n && !memcmp(l->v[i].s, s, n)) return 1;
  return 0;
}

/* mango_idx_view:indexable_fields (unsorted; names_usort after). */
static int indexable_fields(dv_arena *a, const mnode *n, names *out) {
  if (!n) return 0;
  if (n->op == MO_AND) {
    for (size_t i = 0; i < n->n; i++) {
      int rc = indexable_fields(a, n->kid[i], out);
      if (rc) return rc;
    }
    return 0;
  }
  if (n->op == MO_FIELD && indexable_op(n->kid[0]->op)) {
    size_t len;
    const char *s = fname(a, n, &len);
    return s ? names_add(a, out, s, len) : DV_ENOMEM;
  }
  return 0;
}

/* mango_selector:fields. */
static int sel_fields(dv_arena *a, const mnode *n, names *out) {
  if (!n) return 0;
  if (n->op == MO_AND || n->op == MO_OR || n->op == MO_NOR) {
    for (size_t i = 0; i < n->n; i++) {
      int rc = sel_fields(a, n->kid[i], out);
      if (rc) return rc;
    }
    return 0;
  }
  if (n->op == MO_FIELD) {
    size_t len;
    const char *s = fname(a, n, &len);
    return s ? names_add(a, out, s, len) : DV_ENOMEM;
  }
  if (n->op == MO_DEFAULT) return names_add(a, out, "$default", 8);
  if (n->op == MO_NOT) return names_add(a, out, "$not", 4);
  return 0;
}

static int has_default(const mnode *n) {
  if (!n) return 0;
  if (n->op == MO_DEFAULT) return 1;
  for (size_t i = 0; i < n->n; i++)
    if (n->kid && has_default(n->kid[i])) return 1;
  return 0;
}

/* mango_selector:has_required_fields: the bits of req (one per column
 * name) no condition guarantees. */
static uint64_t req_left(dv_arena *a, const mnode *n, uint64_t req, const mq_str *cols, size_t nc) {
  if (!req || !n) return req;
  switch (n->op) {
  case MO_AND:
    for (size_t i = 0; i < n->n && req; i++) req = req_left(a, n->kid[i], req, cols, nc);
    return req;
  case MO_OR: {
    uint64_t u = 0;
    for (size_t i = 0; i < n->n; i++) u |= req_left(a, n->kid[i], req, cols, nc);
    return u;
  }
  case MO_FIELD: {
    if (n->kid[0]->op == MO_EXISTS && !n->kid[0]->b) return req;
    size_t len;
    const char *s = fname(a, n, &len);
    for (size_t i = 0; s && i < nc; i++)
      if (cols[i].n == len && !memcmp(cols[i].s, s, len)) req &= ~(1ull << i);
    return req;
  }
  default: return req;
  }
}

/* mango_selector:is_constant_field. */
static int is_constant(dv_arena *a, const mnode *n, const char *f, size_t fl) {
  if (!n) return 0;
  if (n->op == MO_AND) {
    for (size_t i = 0; i < n->n; i++)
      if (is_constant(a, n->kid[i], f, fl)) return 1;
    return 0;
  }
  return n->op == MO_FIELD && fname_is(a, n, f, fl) && n->kid[0]->op == MO_EQ;
}

/* ---- ranges (mango_idx_view:range) ----------------------------------------------------- */

enum { C_GT, C_GTE, C_EQ, C_LT, C_LTE };

typedef struct rng {
  int empty;
  int lc;              /* C_GT, C_GTE, C_EQ */
  const json_val *lo;  /* NULL: mango_json_min */
  int hc;              /* C_LT, C_LTE, C_EQ */
  const json_val *hi;  /* NULL: mango_json_max */
} rng;

static const rng RNG_FULL = {0, C_GT, NULL, C_LT, NULL};

enum { P_MIN, P_LOW, P_MID, P_HIGH, P_MAX };

static int rpos(const json_val *lo, const json_val *x, const json_val *hi) {
  int c = lo ? mango_cmp(x, lo) : 1;
  if (c < 0) return P_MIN;
  if (c == 0) return P_LOW;
  c = hi ? mango_cmp(x, hi) : -1;
  return c < 0 ? P_MID : c == 0 ? P_HIGH : P_MAX;
}

static void rng_apply(rng *r, int op, const json_val *x) {
  if (r->empty) return;
  int p = rpos(r->lo, x, r->hi);
  int lok = r->lc == C_GTE || r->lc == C_EQ, hok = r->hc == C_LTE || r->hc == C_EQ;
  switch (op) {
  case MO_LT:
    if (p == P_MIN || p == P_LOW) r->empty = 1;
    else if (p == P_MID || p == P_HIGH) r->hc = C_LT, r->hi = x;
    break;
  case MO_LTE:
    if (p == P_MIN) r->empty = 1;
    else if (p == P_LOW) {
      if (lok) r->lc = r->hc = C_EQ, r->lo = r->hi = x;
      else r->empty = 1;
    } else if (p == P_MID) r->hc = C_LTE, r->hi = x;
    break;
  case MO_EQ:
    if (p == P_MIN || p == P_MAX) r->empty = 1;
    else if ((p == P_LOW && !lok) || (p == P_HIGH && !hok)) r->empty = 1;
    else r->lc = r->hc = C_EQ, r->lo = r->hi = x;
    break;
  case MO_GTE:
    if (p == P_MID) r->lc = C_GTE, r->lo = x;
    else if (p == P_HIGH) {
      if (hok) r->lc = r->hc = C_EQ, r->lo = r->hi = x;
      else r->empty = 1;
    } else if (p == P_MAX) r->empty = 1;
    break;
  case MO_GT:
    if (p == P_LOW || p == P_MID) r->lc = C_GT, r->lo = x;
    else if (p == P_HIGH || p == P_MAX) r->empty = 1;
    break;
  }
}

/* One condition on the field; the $beginsWith upper bound is built in a. */
static int rng_cond(dv_arena *a, rng *r, const mnode *c, int begins) {
  if (c->op == MO_BEGINS) {
    if (!begins) return 0;
    char *s = arena_alloc(a, c->arg->len + 3);
    if (!s) return DV_ENOMEM;
    memcpy(s, c->arg->u.s, c->arg->len);
    memcpy(s + c->arg->len, "\xef\xbf\xbf", 3);
    json_val *hi = json_new_string(a, s, c->arg->len + 3);
    if (!hi) return DV_ENOMEM;
    rng_apply(r, MO_GTE, c->arg);
    rng_apply(r, MO_LTE, hi);
    return 0;
  }
  if (c->op >= MO_LT && c->op <= MO_GT && c->op != MO_NE) rng_apply(r, c->op, c->arg);
  return 0;
}

/* range(Selector, Field): the conjunction folded in order. */
static int rng_fold(dv_arena *a, const mnode *n, const char *f, size_t fl, rng *r, int begins) {
  if (!n || r->empty) return 0;
  if (n->op == MO_AND) {
    for (size_t i = 0; i < n->n && !r->empty; i++) {
      int rc = rng_fold(a, n->kid[i], f, fl, r, begins);
      if (rc) return rc;
    }
    return 0;
  }
  if (n->op == MO_FIELD && fname_is(a, n, f, fl)) return rng_cond(a, r, n->kid[0], begins);
  return 0;
}

/* One field's range for field_ranges. */
typedef struct frange {
  mq_str f;
  rng r;
} frange;

/* ---- indexes and the choice ---------------------------------------------------------- */

typedef struct ix {
  const mi_def *d;           /* NULL: _all_docs */
  size_t nc;                 /* columns */
  mq_str *col;
  int partial, named, scope, usable, filtered, oftype;
  const char *why_not;       /* the first reason it is not usable */
  size_t prefix;             /* composite prefix length */
  long diff;                 /* PrefixDifference */
  const char *reason;        /* explain */
  int rank;
} ix;

typedef struct plan {
  ix *ix;                    /* _all_docs first, then mi_list's order */
  size_t n;
  ix *chosen;                /* NULL: none usable (explain) */
  names indexable;           /* sorted indexable fields */
  frange *fr;                /* field_ranges */
  size_t nfr;
  int empty;                 /* the ranges are [empty]: no scan */
  int covering;
  /* json: CouchDB's range (as prefixes) and what is read */
  json_val *start_key, *end_key; /* for explain, before the desc swap */
  mi_range *ranges;
  size_t nranges;
  /* _all_docs */
  const json_val *id_lo, *id_hi; /* NULL: min / max */
  int id_lo_special;             /* lo is mango_json_min (CouchDB's MIN_STR "") */
  size_t n_sorted;               /* OfType, ranked */
  ix **sorted;
} plan;

static int ix_cmp(const ix *x, const ix *y) {
  if (x->diff != y->diff) return x->diff < y->diff ? -1 : 1;
  if (x->nc != y->nc) return x->nc < y->nc ? -1 : 1;
  if (!x->d || !y->d) return !x->d ? (y->d ? -1 : 0) : 1;
  int c = strcmp(x->d->ddoc, y->d->ddoc);
  return c ? c : strcmp(x->d->name, y->d->name);
}

/* use_index D without its "_design/" */
static mq_str use_ddoc(const mq_req *q) {
  mq_str d = q->use[0];
  if (d.n >= 8 && !memcmp(d.s, "_design/", 8)) d.s += 8, d.n -= 8;
  return d;
}

static int ix_named(const mq_req *q, const ix *x) {
  if (!q->n_use || !x->d) return 0;
  mq_str d = use_ddoc(q);
  const char *dd = x->d->ddoc;
  if (strlen(dd) != d.n + 8 || memcmp(dd + 8, d.s, d.n)) return 0;
  return q->n_use == 1 || (strlen(x->d->name) == q->use[1].n && !memcmp(x->d->name, q->use[1].s, q->use[1].n));
}

static void is_usable(dv_arena *a, const mq_req *q, const plan *p, ix *x) {
  if (!x->d) {
    int has_id = names_has(&p->indexable, "_id", 3);
    int sort_ok = q->n_sort == 0 || (q->n_sort == 1 && str_is(q->sort[0].s, q->sort[0].n, "_id"));
    x->usable = q->n_sort == 0 || (has_id && sort_ok);
    x->why_not = x->usable ? NULL : !has_id ? "field_mismatch" : "sort_order_mismatch";
    return;
  }
  uint64_t req = 0;
  for (size_t i = 0; i < x->nc; i++) {
    int in_sort = 0;
    for (size_t k = 0; k < q->n_sort; k++)
      in_sort |= q->sort[k].n == x->col[i].n && !memcmp(q->sort[k].s, x->col[i].s, x->col[i].n);
    if (!in_sort && !str_is(x->col[i].s, x->col[i].n, "_id") && !str_is(x->col[i].s, x->col[i].n, "_rev"))
      req |= 1ull << i;
  }
  int fields_ok = !req || (q->root && req_left(a, q->root, req, x->col, x->nc) == 0);
  int text = has_default(q->root);
  /* can_use_sort */
  int sort_ok = 1;
  if (q->n_sort) {
    size_t c = 0;
    sort_ok = 0;
    while (c < x->nc) {
      if (x->col[c].n == q->sort[0].n && !memcmp(x->col[c].s, q->sort[0].s, q->sort[0].n)) {
        sort_ok = q->n_sort <= x->nc - c;
        for (size_t k = 0; sort_ok && k < q->n_sort; k++)
          sort_ok = x->col[c + k].n == q->sort[k].n && !memcmp(x->col[c + k].s, q->sort[k].s, q->sort[k].n);
        break;
      }
      if (!is_constant(a, q->root, x->col[c].s, x->col[c].n)) break;
      c++;
    }
  }
  x->usable = !text && fields_ok && sort_ok;
  x->why_not = text ? "needs_text_search" : !fields_ok ? "field_mismatch" : !sort_ok ? "sort_order_mismatch" : NULL;
}

/* composite_prefix / PrefixDifference. */
static void composite(plan *p, ix *x) {
  size_t k = 0;
  for (; k < x->nc; k++) {
    int found = 0;
    for (size_t j = 0; j < p->nfr && !found; j++)
      found = p->fr[j].f.n == x->col[k].n && !memcmp(p->fr[j].f.s, x->col[k].s, x->col[k].n);
    if (!found) break;
  }
  x->prefix = k;
  x->diff = (long)p->nfr - (long)k;
}

static const rng *fr_get(const plan *p, const char *s, size_t n) {
  for (size_t j = 0; j < p->nfr; j++)
    if (p->fr[j].f.n == n && !memcmp(p->fr[j].f.s, s, n)) return &p->fr[j].r;
  return NULL;
}

/* covers(Index, Fields) */
static int covers(const ix *x, const names *f) {
  if (!x->d || !f->n) return 0;
  for (size_t i = 0; i < f->n; i++) {
    int ok = str_is(f->v[i].s, f->v[i].n, "_id");
    for (size_t k = 0; !ok && k < x->nc; k++) ok = x->col[k].n == f->v[i].n && !memcmp(x->col[k].s, f->v[i].s, f->v[i].n);
    if (!ok) return 0;
  }
  return 1;
}

static int query_fields(dv_arena *a, const mq_req *q, names *out) {
  for (size_t i = 0; i < q->n_fields; i++)
    if (names_add(a, out, q->fields[i].s, q->fields[i].n)) return DV_ENOMEM;
  return 0;
}

/* ---- byte ranges (mi_range prefixes) ----------------------------------------------------- */

typedef struct brange {
  const uint8_t *l;   /* lower prefix (len 0: from the first) */
  size_t ln;
  const uint8_t *u;   /* upper prefix, NULL: to the last */
  size_t un;
} brange;

static int lex(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  int c = an && bn ? memcmp(a, b, an < bn ? an : bn) : 0;
  return c ? c : an < bn ? -1 : an > bn;
}

static int starts(const uint8_t *a, size_t an, const uint8_t *p, size_t pn) { return an >= pn && !memcmp(a, p, pn); }

/* Is upper bound x below y (NULL = +inf)? A longer bound extending a shorter one is lower. */
static int up_lt(const uint8_t *x, size_t xn, const uint8_t *y, size_t yn) {
  if (!x) return 0;
  if (!y) return 1;
  if (starts(x, xn, y, yn)) return xn > yn;
  if (starts(y, yn, x, xn)) return 0;
  return lex(x, xn, y, yn) < 0;
}

static int b_nonempty(const brange *r) {
  return !r->u || starts(r->l, r->ln, r->u, r->un) || lex(r->l, r->ln, r->u, r->un) < 0;
}

static brange b_inter(const brange *x, const brange *y) {
  brange r;
  if (lex(x->l, x->ln, y->l, y->ln) >= 0) r.l = x->l, r.ln = x->ln;
  else r.l = y->l, r.ln = y->ln;
  if (up_lt(x->u, x->un, y->u, y->un)) r.u = x->u, r.un = x->un;
  else r.u = y->u, r.un = y->un;
  return r;
}

static int b_cmp(const void *x, const void *y) {
  const brange *a = x, *b = y;
  return lex(a->l, a->ln, b->l, b->ln);
}

/* A range set: n ranges, or full (any value). */
typedef struct bset {
  int full;
  brange *r;
  size_t n;
} bset;

static int bset_add(dv_arena *a, bset *s, brange r) {
  if (!b_nonempty(&r)) return 0;
  if (s->n >= MQ_MAX_RANGES) {
    s->full = 1;
    return 0;
  }
  brange *nr = arena_realloc(a, s->r, s->n * sizeof *nr, (s->n + 1) * sizeof *nr, DV_ARENA_ALIGN);
  if (!nr) return DV_ENOMEM;
  nr[s->n++] = r;
  s->r = nr;
  return 0;
}

/* x := x ∩ y */
static int bset_inter(dv_arena *a, bset *x, const bset *y) {
  if (y->full) return 0;
  if (x->full) {
    *x = *y;
    return 0;
  }
  bset o = {0, NULL, 0};
  for (size_t i = 0; i < x->n; i++)
    for (size_t j = 0; j < y->n; j++) {
      int rc = bset_add(a, &o, b_inter(&x->r[i], &y->r[j]));
      if (rc) return rc;
      if (o.full) return 0; /* too many: keep x as it is (a superset) */
    }
  *x = o;
  return 0;
}

/* Sorted by lower bound, overlapping ranges merged. */
static void bset_merge(bset *s) {
  if (s->full || s->n < 2) return;
  qsort(s->r, s->n, sizeof *s->r, b_cmp);
  size_t k = 0;
  for (size_t i = 1; i < s->n; i++) {
    brange *c = &s->r[k];
    brange t = {s->r[i].l, s->r[i].ln, c->u, c->un};
    if (b_nonempty(&t)) {
      if (up_lt(c->u, c->un, s->r[i].u, s->r[i].un)) c->u = s->r[i].u, c->un = s->r[i].un;
    } else {
      s->r[++k] = s->r[i];
    }
  }
  s->n = k + 1;
}

/* 0x40 then each value's collation key, in the arena. */
static int prefix_of(dv_arena *a, const json_val *const *v, size_t n, const uint8_t **out, size_t *len) {
  dv_buf b = DV_BUF_INIT;
  int rc = 0;
  buf_putc(&b, 0x40);
  for (size_t i = 0; !rc && i < n; i++) rc = collate_key(&b, v[i]);
  if (!rc && buf_error(&b)) rc = DV_ENOMEM;
  if (!rc && !(*out = arena_memdup(a, b.p, b.len))) rc = DV_ENOMEM;
  if (!rc) *len = b.len;
  buf_free(&b);
  return rc;
}

/* The first column's byte range of a value range. */
static int rng_brange(dv_arena *a, const rng *r, brange *out) {
  int rc = prefix_of(a, r->lo ? &r->lo : NULL, r->lo ? 1 : 0, &out->l, &out->ln);
  if (!rc) rc = prefix_of(a, r->hi ? &r->hi : NULL, r->hi ? 1 : 0, &out->u, &out->un);
  return rc;
}

/* A set of first-column ranges holding c0's value in every document n
 * matches (full when nothing narrower is known). */
static int cover(dv_arena *a, const mnode *n, const mq_str *c0, int in_or, bset *out) {
  *out = (bset){1, NULL, 0};
  if (!n) return 0;
  int rc;
  if (n->op == MO_OR) {
    bset u = {0, NULL, 0};
    if (!n->n) return 0;
    for (size_t i = 0; i < n->n; i++) {
      bset b;
      if ((rc = cover(a, n->kid[i], c0, 1, &b))) return rc;
      if (b.full) return 0;
      for (size_t k = 0; k < b.n; k++)
        if ((rc = bset_add(a, &u, b.r[k]))) return rc;
      if (u.full) return 0;
    }
    *out = u;
    return 0;
  }
  if (n->op == MO_FIELD && fname_is(a, n, c0->s, c0->n) && n->kid[0]->op == MO_IN) {
    bset s = {0, NULL, 0};
    const json_val *arr = n->kid[0]->arg;
    for (size_t i = 0; i < arr->len; i++) {
      brange r;
      const json_val *v = arr->u.items[i];
      if ((rc = prefix_of(a, &v, 1, &r.l, &r.ln))) return rc;
      r.u = r.l, r.un = r.ln;
      if ((rc = bset_add(a, &s, r))) return rc;
    }
    /* an array value is in when one of its elements is: every array */
    static const uint8_t arrays[] = {0x40, 0x40};
    if ((rc = bset_add(a, &s, (brange){arrays, 2, arrays, 2}))) return rc;
    *out = s;
    return 0;
  }
  if (n->op == MO_AND || (n->op == MO_FIELD && indexable_op(n->kid[0]->op))) {
    rng r = RNG_FULL;
    if ((rc = rng_fold(a, n, c0->s, c0->n, &r, !in_or))) return rc;
    bset s = {0, NULL, 0};
    if (!r.empty) {
      if (r.lo || r.hi) {
        brange b;
        if ((rc = rng_brange(a, &r, &b)) || (rc = bset_add(a, &s, b))) return rc;
      } else {
        s.full = 1;
      }
    }
    if (n->op == MO_AND)
      for (size_t i = 0; i < n->n; i++) {
        const mnode *k = n->kid[i];
        if (k->op == MO_OR || k->op == MO_AND || (k->op == MO_FIELD && k->kid[0]->op == MO_IN)) {
          bset b;
          if ((rc = cover(a, k, c0, in_or, &b)) || (rc = bset_inter(a, &s, &b))) return rc;
        }
      }
    *out = s;
    return 0;
  }
  return 0;
}

/* ---- the plan ------------------------------------------------------------------------- */

static int mkplan(store_db *db, dv_arena *a, const mq_req *q, int explain, plan *p, const char **why) {
  int rc;
  mi_def *defs = NULL;
  size_t nd = 0;
  memset(p, 0, sizeof *p);
  if ((rc = mi_list(db, a, &defs, &nd))) return fail_s(why, rc, NULL);
  p->n = nd + 1;
  p->ix = arena_calloc(a, p->n * sizeof *p->ix);
  if (!p->ix) return fail_s(why, DV_ENOMEM, NULL);
  static mq_str id_col = {"_id", 3};
  p->ix[0].nc = 1;
  p->ix[0].col = &id_col;
  for (size_t i = 0; i < nd; i++) {
    ix *x = &p->ix[i + 1];
    x->d = &defs[i];
    x->nc = defs[i].n_fields;
    x->col = arena_alloc(a, (x->nc + 1) * sizeof *x->col);
    if (!x->col) return fail_s(why, DV_ENOMEM, NULL);
    for (size_t k = 0; k < x->nc; k++) x->col[k].s = defs[i].fields[k], x->col[k].n = defs[i].field_lens[k];
    x->partial = defs[i].partial != NULL;
    x->named = ix_named(q, x);
  }
  /* field_ranges */
  if ((rc = indexable_fields(a, q->root, &p->indexable))) return fail_s(why, rc, NULL);
  names_usort(&p->indexable);
  p->fr = arena_alloc(a, (p->indexable.n + 1) * sizeof *p->fr);
  if (!p->fr) return fail_s(why, DV_ENOMEM, NULL);
  for (size_t i = 0; i < p->indexable.n; i++) {
    rng r = RNG_FULL;
    if ((rc = rng_fold(a, q->root, p->indexable.v[i].s, p->indexable.v[i].n, &r, 1))) return fail_s(why, rc, NULL);
    if (r.empty) {
      p->fr[0].f = p->indexable.v[i];
      p->fr[0].r = r;
      p->nfr = 1;
      break;
    }
    p->fr[p->nfr].f = p->indexable.v[i];
    p->fr[p->nfr].r = r;
    p->nfr++;
  }
  /* candidates: Global ∪ named, in scope, usable */
  size_t n_usable = 0, n_named_usable = 0;
  for (size_t i = 0; i < p->n; i++) {
    ix *x = &p->ix[i];
    x->scope = q->partition.n ? x->d == NULL : 1;
    if ((x->partial && !x->named) || !x->scope) continue;
    is_usable(a, q, p, x);
    n_usable += x->usable;
    n_named_usable += x->usable && x->named;
  }
  if (!n_usable && !explain)
    return fail_s(why, DV_EMQ_NO_INDEX, "No index exists for this sort, try indexing by the sort fields.");
  int use_named = q->n_use && n_named_usable;
  if (q->n_use && !n_named_usable && !q->allow_fallback) goto invalid_index;
  for (size_t i = 0; i < p->n; i++) p->ix[i].filtered = p->ix[i].usable && (!use_named || p->ix[i].named);
  int json = 0;
  for (size_t i = 1; i < p->n; i++) json |= p->ix[i].filtered;
  p->sorted = arena_alloc(a, p->n * sizeof *p->sorted);
  if (!p->sorted) return fail_s(why, DV_ENOMEM, NULL);
  for (size_t i = json ? 1 : 0; i < (json ? p->n : 1); i++) {
    ix *x = &p->ix[i];
    if (!x->filtered) continue;
    x->oftype = 1;
    composite(p, x);
    size_t k = p->n_sorted++;
    while (k && ix_cmp(x, p->sorted[k - 1]) < 0) p->sorted[k] = p->sorted[k - 1], k--;
    p->sorted[k] = x;
  }
  p->chosen = p->n_sorted ? p->sorted[0] : NULL;
  if (p->chosen && !p->chosen->d && !q->n_use && !q->allow_fallback) goto invalid_index;
  if (!p->chosen) return 0;

  /* the ranges */
  ix *c = p->chosen;
  const rng **pre = arena_alloc(a, (c->nc + 1) * sizeof *pre);
  if (!pre) return fail_s(why, DV_ENOMEM, NULL);
  size_t np = 0;
  if (!c->d) {
    const rng *r = fr_get(p, "_id", 3);
    if (r && r->empty) {
      p->empty = 1;
    } else if (r) {
      p->id_lo = r->lo, p->id_hi = r->hi;
      p->id_lo_special = r->lo == NULL;
    } else {
      p->id_lo = json_new_null(a); /* the catch-all {'$gt', null, '$lt', max} */
      if (!p->id_lo) return fail_s(why, DV_ENOMEM, NULL);
    }
  } else {
    for (size_t k = 0; k < c->prefix; k++) pre[np++] = fr_get(p, c->col[k].s, c->col[k].n);
    if (np && pre[0]->empty) p->empty = 1;
  }
  if (q->root && (q->root->op == MO_AND || q->root->op == MO_OR) && q->root->n == 0) p->empty = 1;
  if (p->empty || !c->d) return 0;
  /* start_key / end_key (CouchDB's), and their prefixes */
  const json_val **lo = arena_alloc(a, (np + 1) * sizeof *lo), **hi = arena_alloc(a, (np + 1) * sizeof *hi);
  p->start_key = json_new_array(a);
  p->end_key = json_new_array(a);
  if (!lo || !hi || !p->start_key || !p->end_key) return fail_s(why, DV_ENOMEM, NULL);
  size_t nlo = 0, nhi = 0;
  for (size_t k = 0; k < np && pre[k]->lo; k++) lo[nlo++] = pre[k]->lo;
  for (size_t k = 0; k < np && pre[k]->hi; k++) hi[nhi++] = pre[k]->hi;
  for (size_t k = 0; k < nlo; k++)
    if (json_arr_push(a, p->start_key, json_dup(a, lo[k]))) return fail_s(why, DV_ENOMEM, NULL);
  for (size_t k = 0; k < nhi; k++)
    if (json_arr_push(a, p->end_key, json_dup(a, hi[k]))) return fail_s(why, DV_ENOMEM, NULL);
  if (json_arr_push(a, p->end_key, json_new_stringz(a, "<MAX>"))) return fail_s(why, DV_ENOMEM, NULL);
  brange R;
  if ((rc = prefix_of(a, (const json_val *const *)lo, nlo, &R.l, &R.ln)) ||
      (rc = prefix_of(a, (const json_val *const *)hi, nhi, &R.u, &R.un)))
    return fail_s(why, rc, NULL);
  if (nlo == 0) R.ln = 0;
  /* the first column's ranges; every row when there is none to narrow by
   * (a zero-column index, or one led by _id) */
  bset s = {0, NULL, 0};
  int whole = !c->nc || str_is(c->col[0].s, c->col[0].n, "_id");
  if (!whole && (rc = cover(a, q->root, &c->col[0], 0, &s))) return fail_s(why, rc, NULL);
  if (whole) s.full = 1;
  bset rs = {0, NULL, 0};
  if ((rc = bset_add(a, &rs, R))) return fail_s(why, rc, NULL);
  if (rs.n && (rc = bset_inter(a, &s, &rs))) return fail_s(why, rc, NULL);
  if (s.full) s = rs;
  bset_merge(&s);
  p->ranges = arena_alloc(a, (s.n + 1) * sizeof *p->ranges);
  if (!p->ranges) return fail_s(why, DV_ENOMEM, NULL);
  for (size_t k = 0; k < s.n; k++)
    p->ranges[k] = (mi_range){s.r[k].l, s.r[k].ln, s.r[k].u, s.r[k].un};
  p->nranges = s.n;
  return 0;

invalid_index:
  if (!q->n_use) return fail_s(why, DV_EMQ_INDEX, "You must specify an index with the `use_index` parameter.");
  {
    mq_str d = use_ddoc(q);
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, "_design/");
    buf_append(&b, d.s, d.n);
    if (q->n_use == 2) {
      buf_puts(&b, ", ");
      buf_append(&b, q->use[1].s, q->use[1].n);
    }
    buf_puts(&b, " specified by `use_index` could not be found or it is not suitable.");
    char *t = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
    buf_free(&b);
    return t ? fail_s(why, DV_EMQ_INDEX, t) : fail_s(why, DV_ENOMEM, NULL);
  }
}

/* ---- documents: projection and derivation (mango_fields, mango_doc) --------------------- */

/* mango_doc:set_field into an object, creating objects on the way. */
static int set_path(dv_arena *a, json_val *o, const mseg *seg, size_t n, json_val *val) {
  for (size_t i = 0; i + 1 < n; i++) {
    json_val *nx = json_obj_get(o, seg[i].s, seg[i].n);
    if (!nx || nx->type != JSON_OBJECT) {
      nx = json_new_object(a);
      if (json_obj_set(a, o, seg[i].s, seg[i].n, nx)) return DV_ENOMEM;
    }
    o = nx;
  }
  return json_obj_set(a, o, seg[n - 1].s, seg[n - 1].n, val);
}

static int project(dv_arena *a, const mq_req *q, const json_val *doc, json_val **out) {
  if (!q->n_fields) {
    *out = (json_val *)doc;
    return 0;
  }
  json_val *o = json_new_object(a);
  if (!o) return DV_ENOMEM;
  for (size_t i = 0; i < q->n_fields; i++) {
    mseg *seg;
    size_t ns;
    int rc = mango__split_path(a, q->fields[i].s, q->fields[i].n, &seg, &ns);
    if (rc) return rc;
    const json_val *v = mango__get_path(doc, seg, ns);
    if (v && (rc = set_path(a, o, seg, ns, (json_val *)v))) return rc;
  }
  *out = o;
  return 0;
}

/* derive_doc_from_index: {"_id": id} plus each column, last first. */
static int derive(dv_arena *a, const ix *x, const char *id, size_t idn, const json_val *key, json_val **out) {
  json_val *o = json_new_object(a);
  if (!o || json_obj_set(a, o, "_id", 3, json_new_string(a, id, idn))) return DV_ENOMEM;
  for (size_t k = x->nc; key && key->type == JSON_ARRAY && k-- > 0;) {
    if (k >= key->len) continue;
    mseg *seg;
    size_t ns;
    int rc = mango__split_path(a, x->col[k].s, x->col[k].n, &seg, &ns);
    if (!rc) rc = set_path(a, o, seg, ns, key->u.items[k]);
    if (rc) return rc;
  }
  *out = o;
  return 0;
}

/* ---- running a query -------------------------------------------------------------------- */

typedef struct run {
  const mq_req *q;
  const plan *p;
  const mq_sink *s;
  dv_arena tmp;              /* per row */
  int64_t skip, limit;
  int64_t keys, docs, quorum, results;
  dv_buf bm;                 /* the last matched row's bookmark bytes (kind + payload) */
  int have_bm;
  int covering;
  int sink_rc;
  int rc;                    /* an error inside a callback */
  const uint8_t *after;      /* _all_docs: the bookmark's id */
  size_t after_len;
} run;

/* One document of a row (already read or derived); 1 stops the scan. */
static int on_doc(run *r, json_val *doc, const char *id, size_t idn, char kind, const uint8_t *pos, size_t pos_len) {
  if (!mango_match(r->q->sel, doc)) return 0;
  if (kind == 'a' && idn >= 8 && !memcmp(id, "_design/", 8)) return 0;
  if (r->limit > 0) {
    buf_reset(&r->bm);
    buf_putc(&r->bm, (uint8_t)kind);
    buf_append(&r->bm, pos, pos_len);
    if (buf_error(&r->bm)) {
      r->rc = DV_ENOMEM;
      return 1;
    }
    r->have_bm = 1;
  }
  if (r->skip > 0) {
    r->skip--;
    return 0;
  }
  if (r->limit <= 0) return 1;
  json_val *out;
  int rc = project(&r->tmp, r->q, doc, &out);
  if (rc) {
    r->rc = rc;
    return 1;
  }
  r->limit--;
  r->results++;
  if ((rc = r->s->doc(r->s->arg, out))) {
    r->sink_rc = rc;
    return 1;
  }
  return r->limit == 0;
}

static void strip_conflicts(json_val *doc) {
  if (doc) json_obj_del(doc, "_conflicts", 10);
}

static int json_row(void *arg, const mi_row *row) {
  run *r = arg;
  json_val *doc = row->doc;
  arena_reset(&r->tmp);
  r->keys++;
  if (r->covering) {
    int rc = derive(&r->tmp, r->p->chosen, row->id, row->id_len, row->key, &doc);
    if (rc) {
      r->rc = rc;
      return 1;
    }
  } else if (r->q->r > 1) {
    r->quorum++;
    strip_conflicts(doc);
  } else {
    r->docs++;
  }
  if (!doc) return 0;
  return on_doc(r, doc, row->id, row->id_len, 'j', row->pos, row->pos_len);
}

static int all_row(void *arg, const store_doc_row *row) {
  run *r = arg;
  arena_reset(&r->tmp);
  if (r->after) {
    int c = bin_cmp(row->id, row->id_len, (const char *)r->after, r->after_len);
    if (r->q->desc ? c >= 0 : c <= 0) return 0;
  }
  r->keys++;
  if (r->q->r > 1) {
    r->quorum++;
    strip_conflicts(row->doc);
  } else {
    r->docs++;
  }
  if (!row->doc) return 0;
  return on_doc(r, row->doc, row->id, row->id_len, 'a', (const uint8_t *)row->id, row->id_len);
}

static int warn(dv_arena *a, const mq_req *q, const plan *p, const run *r, const char **out) {
  dv_buf b = DV_BUF_INIT;
  const ix *c = p->chosen;
  if (q->n_use && !(c->d && ix_named(q, c))) {
    mq_str d = use_ddoc(q);
    buf_puts(&b, "_design/");
    buf_append(&b, d.s, d.n);
    if (q->n_use == 1) {
      buf_puts(&b, " was not used because it does not contain a valid index for this query.");
    } else {
      buf_puts(&b, ", ");
      buf_append(&b, q->use[1].s, q->use[1].n);
      buf_puts(&b, " was not used because it is not a valid index for this query.");
    }
    dv_stat_inc(DV_ST_MANGO_INVALID_INDEX);
  }
  if (!c->d) {
    if (b.len) buf_putc(&b, '\n');
    buf_puts(&b, "No matching index found, create an index to optimize query time.");
    dv_stat_inc(DV_ST_MANGO_UNINDEXED);
  }
  double ex = (double)(r->docs + r->quorum);
  double ratio = r->results ? ex / (double)r->results : ex;
  if (MQ_SCAN_WARN > 0 && ratio > MQ_SCAN_WARN) {
    if (b.len) buf_putc(&b, '\n');
    buf_puts(&b, "The number of documents examined is high in proportion to the number of results returned. "
                 "Consider adding a more specific index to improve this.");
    dv_stat_inc(DV_ST_MANGO_TOO_MANY_DOCS);
  }
  int rc = buf_error(&b) ? DV_ENOMEM : 0;
  *out = NULL;
  if (!rc && b.len && !(*out = arena_strndup(a, (const char *)b.p, b.len))) rc = DV_ENOMEM;
  buf_free(&b);
  return rc;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The bookmark's bytes (kind + payload) for the chosen index, or
 * invalid_bookmark. */
static int bookmark_in(dv_arena *a, const mq_req *q, const plan *p, const uint8_t **out, size_t *n,
                       const char **why) {
  *out = NULL;
  *n = 0;
  if (!q->bookmark) return 0;
  uint8_t *d = arena_alloc(a, dv_b64_decoded_max(q->bookmark_len) + 1);
  size_t dn = 0;
  if (!d) return fail_s(why, DV_ENOMEM, NULL);
  if (dv_b64_decode(q->bookmark, q->bookmark_len, 1, d, &dn) || dn < 2 || d[0] != (p->chosen->d ? 'j' : 'a')) {
    dv_buf b = DV_BUF_INIT;
    buf_puts(&b, "Invalid bookmark value: ");
    json_escape(&b, q->bookmark, q->bookmark_len);
    char *s = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
    buf_free(&b);
    return s ? fail_s(why, DV_EMQ_BOOKMARK, s) : fail_s(why, DV_ENOMEM, NULL);
  }
  *out = d + 1;
  *n = dn - 1;
  return 0;
}

static json_val *stats_json(dv_arena *a, const run *r, double ms) {
  json_val *o = json_new_object(a);
  if (json_obj_setz(a, o, "total_keys_examined", json_new_int(a, r->keys)) ||
      json_obj_setz(a, o, "total_docs_examined", json_new_int(a, r->docs)) ||
      json_obj_setz(a, o, "total_quorum_docs_examined", json_new_int(a, r->quorum)) ||
      json_obj_setz(a, o, "results_returned", json_new_int(a, r->results)) ||
      json_obj_setz(a, o, "execution_time_ms", json_new_double(a, ms)))
    return NULL;
  return o;
}

/* A query that ran, in the mango.* metrics (mango_cursor's). */
static void count(const run *r, double ms) {
  dv_stat_add(DV_ST_MANGO_KEYS_EXAMINED, r->keys);
  dv_stat_add(DV_ST_MANGO_DOCS_EXAMINED, r->docs);
  dv_stat_add(DV_ST_MANGO_QUORUM_DOCS_EXAMINED, r->quorum);
  dv_stat_add(DV_ST_MANGO_RESULTS_RETURNED, r->results);
  dv_stat_hist(DV_SH_MANGO_QUERY_TIME, ms);
}

/* required_fields of the cursor: fields ++ selector fields (all_fields: none). */
static int required(dv_arena *a, const mq_req *q, names *out) {
  if (!q->n_fields) return 0;
  int rc = query_fields(a, q, out);
  if (!rc) rc = sel_fields(a, q->root, out);
  names_usort(out);
  return rc;
}

int mq_find(store_db *db, dv_arena *a, const mq_req *q, const mq_sink *s, mq_result *res, const char **why) {
  plan p;
  int rc = 0;
  double t0 = now_ms();
  memset(res, 0, sizeof *res);
  if (q->partition.n)
    return fail_s(why, DV_EBAD_REQUEST, "`partition` parameter is not supported in this db.");
  if ((rc = mkplan(db, a, q, 0, &p, why))) return rc;
  if (p.empty) return 0;
  const uint8_t *after;
  size_t after_len;
  if ((rc = bookmark_in(a, q, &p, &after, &after_len, why))) return rc;
  names req = {0};
  if ((rc = required(a, q, &req))) return fail_s(why, rc, NULL);
  run r = {.q = q, .p = &p, .s = s, .skip = q->skip, .limit = q->limit};
  r.covering = covers(p.chosen, &req);
  arena_init(&r.tmp, 0);
  buf_init(&r.bm);
  int flags = q->conflicts && q->r == 1 ? STORE_CONFLICTS : 0;
  if (p.chosen->d) {
    const mi_def *d = p.chosen->d;
    if (!d->ready && q->update) {
      rc = mindex_wait(db, d->sig, MQ_WAIT_MS);
      if (rc == DV_ENOT_FOUND) rc = 0; /* dropped meanwhile: the scan finds nothing */
    }
    if (!rc && p.nranges) {
      mi_scan_opts o = {.sig = d->sig, .ranges = p.ranges, .n_ranges = p.nranges, .descending = q->desc,
                        .covering = r.covering, .doc_flags = flags, .after = after, .after_len = after_len};
      int64_t keys = 0;
      rc = mi_scan(db, &o, json_row, &r, &keys);
    }
  } else {
    /* _all_docs: non-string bounds read nothing (CouchDB 3.4, #4524) */
    const json_val *lo = p.id_lo, *hi = p.id_hi;
    int none = (lo && lo->type != JSON_STRING && lo->type != JSON_NULL) || (hi && hi->type != JSON_STRING);
    store_range sr;
    store_range_init(&sr);
    const char *ls = lo && lo->type == JSON_STRING ? lo->u.s : NULL, *hs = hi ? hi->u.s : NULL;
    size_t ln = ls ? lo->len : 0, hn = hs ? hi->len : 0;
    if (after) {
      r.after = after, r.after_len = after_len;
      if (!q->desc && (!ls || bin_cmp((const char *)after, after_len, ls, ln) > 0)) ls = (const char *)after, ln = after_len;
      if (q->desc && (!hs || bin_cmp((const char *)after, after_len, hs, hn) < 0)) hs = (const char *)after, hn = after_len;
    }
    sr.descending = q->desc;
    sr.start = q->desc ? hs : ls;
    sr.start_len = q->desc ? hn : ln;
    sr.end = q->desc ? ls : hs;
    sr.end_len = q->desc ? ln : hn;
    if (!none) rc = store_all_docs(db, STORE_ALL, &sr, 1, flags, all_row, &r);
  }
  if (rc == 1) rc = 0;
  if (!rc) rc = r.rc;
  if (!rc && r.sink_rc) rc = r.sink_rc;
  if (rc) {
    if (!r.sink_rc && why) *why = dv_strerror(rc);
    goto out;
  }
  res->ran = 1;
  if (r.have_bm) {
    char *b = arena_alloc(a, dv_b64_encoded_len(r.bm.len, 1) + 1);
    if (!b) {
      rc = fail_s(why, DV_ENOMEM, NULL);
      goto out;
    }
    dv_b64_encode(r.bm.p, r.bm.len, 1, b);
    res->bookmark = b;
  } else {
    res->bookmark = q->bookmark ? q->bookmark : "nil";
  }
  if (q->stats && !(res->stats = stats_json(a, &r, now_ms() - t0))) rc = fail_s(why, DV_ENOMEM, NULL);
  if (!rc && (rc = warn(a, q, &p, &r, &res->warning))) fail_s(why, rc, NULL);
  count(&r, now_ms() - t0);
out:
  arena_free(&r.tmp);
  buf_free(&r.bm);
  return rc;
}

/* ---- _explain --------------------------------------------------------------------------- */

static json_val *ix_json(dv_arena *a, const ix *x) {
  json_val *o = json_new_object(a), *def = json_new_object(a), *f = json_new_array(a);
  if (!o || !def || !f) return NULL;
  if (!x->d) {
    json_val *c = json_new_object(a);
    if (json_obj_setz(a, o, "ddoc", json_new_null(a)) || json_obj_setz(a, o, "name", json_new_stringz(a, "_all_docs")) ||
        json_obj_setz(a, o, "type", json_new_stringz(a, "special")) ||
        json_obj_setz(a, c, "_id", json_new_stringz(a, "asc")) || json_arr_push(a, f, c) ||
        json_obj_setz(a, def, "fields", f) || json_obj_setz(a, o, "def", def))
      return NULL;
    return o;
  }
  for (size_t k = 0; k < x->nc; k++) {
    json_val *c = json_new_object(a);
    if (json_obj_set(a, c, x->col[k].s, x->col[k].n, json_new_stringz(a, x->d->desc[k] ? "desc" : "asc")) ||
        json_arr_push(a, f, c))
      return NULL;
  }
  if (json_obj_setz(a, o, "ddoc", json_new_stringz(a, x->d->ddoc)) ||
      json_obj_setz(a, o, "name", json_new_stringz(a, x->d->name)) ||
      json_obj_setz(a, o, "type", json_new_stringz(a, "json")) ||
      json_obj_setz(a, o, "partitioned", json_new_bool(a, 0)) || json_obj_setz(a, def, "fields", f) ||
      (x->d->partial && json_obj_setz(a, def, "partial_filter_selector", json_dup(a, x->d->partial))) ||
      json_obj_setz(a, o, "def", def))
    return NULL;
  return o;
}

/* explain's candidate order: descending by (ddoc, name), _all_docs last. */
static int cand_cmp(const void *x, const void *y) {
  const ix *a = *(const ix *const *)x, *b = *(const ix *const *)y;
  if (!a->d || !b->d) return !a->d ? 1 : -1;
  int c = strcmp(b->d->ddoc, a->d->ddoc);
  return c ? c : strcmp(b->d->name, a->d->name);
}

static json_val *names_json(dv_arena *a, const names *l) {
  json_val *arr = json_new_array(a);
  for (size_t i = 0; arr && i < l->n; i++)
    if (json_arr_push(a, arr, json_new_string(a, l->v[i].s, l->v[i].n))) return NULL;
  return arr;
}

static int candidates(dv_arena *a, const mq_req *q, plan *p, json_val **out) {
  size_t U = p->n_sorted > 1 ? p->n_sorted : 1;
  int unfav = 0, excl = 0, notus = 0, oos = 0;
  for (size_t i = 0; i < p->n; i++) {
    ix *x = &p->ix[i];
    int in_part = (!x->partial || x->named) && x->scope;
    if (x == p->chosen) continue;
    if (x->oftype) continue;
    if (x->filtered) unfav = 1, x->reason = "unfavored_type";
    else if (x->usable) excl = 1, x->reason = "excluded_by_user";
    else if (in_part) notus = 1, x->reason = x->why_not ? x->why_not : "field_mismatch";
    else if (!x->partial || x->named) oos = 1, x->reason = "scope_mismatch";
    else x->reason = "is_partial";
  }
  int r_ex = (int)U + unfav, r_nu = r_ex + excl, r_sc = r_nu + notus, r_pa = r_sc + oos;
  for (size_t k = 1; k < p->n_sorted; k++) {
    ix *x = p->sorted[k];
    x->rank = (int)k;
    x->reason = x->diff > 0 ? "less_overlap" : x->nc > p->chosen->nc ? "too_many_fields" : "alphabetically_comes_after";
  }
  names qf = {0};
  if (query_fields(a, q, &qf)) return DV_ENOMEM;
  ix **list = arena_alloc(a, p->n * sizeof *list);
  if (!list) return DV_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++)
    if (&p->ix[i] != p->chosen) list[n++] = &p->ix[i];
  if (n) qsort(list, n, sizeof *list, cand_cmp);
  json_val *arr = json_new_array(a);
  if (!arr) return DV_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    ix *x = list[i];
    const char *rs = x->reason;
    int rank = x->oftype ? x->rank
               : !strcmp(rs, "unfavored_type") ? (int)U
               : !strcmp(rs, "excluded_by_user") ? r_ex
               : !strcmp(rs, "scope_mismatch") ? r_sc
               : !strcmp(rs, "is_partial") ? r_pa
                                              : r_nu;
    int usable = x->oftype || x->filtered || x->usable;
    json_val *c = json_new_object(a), *an = json_new_object(a), *reasons = json_new_array(a),
             *r1 = json_new_object(a);
    if (!c || !an || !reasons || !r1 || json_obj_setz(a, c, "index", ix_json(a, x)) ||
        json_obj_setz(a, r1, "name", json_new_stringz(a, rs)) || json_arr_push(a, reasons, r1) ||
        json_obj_setz(a, an, "usable", json_new_bool(a, usable)) || json_obj_setz(a, an, "reasons", reasons) ||
        json_obj_setz(a, an, "ranking", json_new_int(a, rank)) ||
        json_obj_setz(a, an, "covering", x->d ? json_new_bool(a, covers(x, &qf)) : json_new_null(a)) ||
        json_obj_setz(a, c, "analysis", an) || json_arr_push(a, arr, c))
      return DV_ENOMEM;
  }
  *out = arr;
  return 0;
}

int mq_explain(store_db *db, dv_arena *a, const mq_req *q, json_val **out, const char **why) {
  plan p;
  int rc;
  if ((rc = mkplan(db, a, q, 1, &p, why))) return rc;
  json_val *o = json_new_object(a), *opts = json_new_object(a), *use = json_new_array(a);
  if (!o || !opts || !use) goto oom;
  for (size_t i = 0; i < q->n_use; i++)
    if (json_arr_push(a, use, json_new_string(a, q->use[i].s, q->use[i].n))) goto oom;
  if (json_obj_setz(a, opts, "use_index", use) ||
      json_obj_setz(a, opts, "bookmark", q->bookmark ? json_new_string(a, q->bookmark, q->bookmark_len)
                                                     : json_new_stringz(a, "nil")) ||
      json_obj_setz(a, opts, "limit", json_new_int(a, q->limit)) ||
      json_obj_setz(a, opts, "skip", json_new_int(a, q->skip)) || json_obj_setz(a, opts, "sort", q->sort_json) ||
      json_obj_setz(a, opts, "fields", q->fields_json) ||
      json_obj_setz(a, opts, "partition", json_new_string(a, q->partition.s, q->partition.n)) ||
      json_obj_setz(a, opts, "r", json_new_int(a, q->r)) ||
      json_obj_setz(a, opts, "conflicts", json_new_bool(a, q->conflicts)) ||
      json_obj_setz(a, opts, "stale", q->stale_ok ? json_new_stringz(a, "ok") : json_new_bool(a, 0)) ||
      json_obj_setz(a, opts, "update", json_new_bool(a, q->update)) ||
      json_obj_setz(a, opts, "stable", json_new_bool(a, q->stable)) ||
      json_obj_setz(a, opts, "execution_stats", json_new_bool(a, q->stats)) ||
      json_obj_setz(a, opts, "allow_fallback", json_new_bool(a, q->allow_fallback)))
    goto oom;
  const char *dbname = store_db_name(db);
  if (json_obj_setz(a, o, "dbname", json_new_stringz(a, dbname ? dbname : "")) ||
      json_obj_setz(a, o, "index", p.chosen ? ix_json(a, p.chosen) : json_new_null(a)) ||
      json_obj_setz(a, o, "partitioned", json_new_bool(a, 0)) || json_obj_setz(a, o, "selector", q->norm) ||
      json_obj_setz(a, o, "opts", opts) || json_obj_setz(a, o, "limit", json_new_int(a, q->limit)) ||
      json_obj_setz(a, o, "skip", json_new_int(a, q->skip)) || json_obj_setz(a, o, "fields", q->fields_json))
    goto oom;
  json_val *cands;
  if ((rc = candidates(a, q, &p, &cands))) goto oom;
  names unidx = {0}, all = {0};
  if (sel_fields(a, q->root, &all)) goto oom;
  names_usort(&all);
  for (size_t i = 0; i < all.n; i++)
    if (!names_has(&p.indexable, all.v[i].s, all.v[i].n) && names_add(a, &unidx, all.v[i].s, all.v[i].n)) goto oom;
  json_val *hints = json_new_array(a), *h = json_new_object(a);
  if (json_obj_setz(a, o, "index_candidates", cands) || !hints || !h ||
      json_obj_setz(a, h, "type", json_new_stringz(a, "json")) ||
      json_obj_setz(a, h, "indexable_fields", names_json(a, &p.indexable)) ||
      json_obj_setz(a, h, "unindexable_fields", names_json(a, &unidx)) || json_arr_push(a, hints, h) ||
      json_obj_setz(a, o, "selector_hints", hints))
    goto oom;
  if (p.chosen) {
    names req = {0};
    if (required(a, q, &req)) goto oom;
    int cov = covers(p.chosen, &req);
    json_val *m = json_new_object(a), *sk, *ek;
    if (!m) goto oom;
    if (p.empty) {
      sk = json_new_null(a), ek = json_new_null(a);
    } else if (p.chosen->d) {
      sk = p.start_key, ek = p.end_key;
    } else {
      sk = p.id_lo_special ? json_new_stringz(a, "") : json_dup(a, p.id_lo);
      ek = p.id_hi ? json_dup(a, p.id_hi) : json_new_stringz(a, "<MAX>");
    }
    if (q->desc) {
      json_val *t = sk;
      sk = ek, ek = t;
    }
    json_val *dv = json_new_object(a);
    size_t nr = p.empty ? 0 : p.chosen->d ? p.nranges : 1;
    if (json_obj_setz(a, m, "include_docs", json_new_bool(a, q->r == 1 && !cov)) ||
        json_obj_setz(a, m, "view_type", json_new_stringz(a, "map")) ||
        json_obj_setz(a, m, "reduce", json_new_bool(a, 0)) ||
        json_obj_setz(a, m, "partition", q->partition.n ? json_new_string(a, q->partition.s, q->partition.n)
                                                        : json_new_null(a)) ||
        json_obj_setz(a, m, "start_key", sk) || json_obj_setz(a, m, "end_key", ek) ||
        json_obj_setz(a, m, "direction", json_new_stringz(a, q->desc ? "rev" : "fwd")) ||
        json_obj_setz(a, m, "stable", json_new_bool(a, q->stable)) ||
        json_obj_setz(a, m, "update", json_new_bool(a, q->update)) ||
        json_obj_setz(a, m, "conflicts", q->conflicts ? json_new_bool(a, 1) : json_new_stringz(a, "undefined")) ||
        json_obj_setz(a, o, "mrargs", m) || json_obj_setz(a, o, "covering", json_new_bool(a, cov)) || !dv ||
        json_obj_setz(a, dv, "ranges", json_new_int(a, (int64_t)nr)) ||
        json_obj_setz(a, dv, "covering", json_new_bool(a, cov)) || json_obj_setz(a, o, "divan", dv))
      goto oom;
  }
  *out = o;
  return 0;
oom:
  return fail_s(why, DV_ENOMEM, NULL);
}
