/* test_view.c — views' indexes against a model. Two random design
 * documents a run (random map functions from a grammar the test evaluates
 * in C, random built-in and JavaScript reduces: rand_ixspec); random
 * documents written, updated, deleted, given conflicting branches
 * (new_edits=false) and purged (a winner or a conflict), the model being
 * every document's winner as the store shows it (on the FoundationDB
 * double, with commit_unknown_result injected). After each round each
 * index is brought up to date (vw_step) and every slot's rows must equal
 * the brute-force evaluation's (in key order, byte for byte), its tree a
 * rebuild's (vt_check), its whole-range reductions the model's; then 40
 * random queries of random views (map rows, total_rows, offset, reduce at
 * a random group level) must equal the model's answers. On RocksDB and on
 * the FoundationDB double. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/collate.h"
#include "index/qs.h"
#include "index/view_int.h"
#include "kv/kv_fault.h"
#include "store/storet.h"
#include "test.h"
#include "util/alloc.h"

#define NDOCS 60
#define MAXROWS (2 * NDOCS + 1) /* a map emits at most twice */
#define MAXVIEWS 5
#define NIX 2                   /* indexes per run, each from its own random design document */

/* A document's winner, as the store shows it. */
typedef struct mdoc {
  int live;
  int k, v, g;            /* k < 0: no "k" field */
} mdoc;

/* ---- random map and reduce functions, and their brute-force evaluation ----
 * A map function is drawn from a small grammar — a condition, one or two
 * emits, each a key and a value expression — that the test evaluates in C
 * for the model; a view pairs a map with a reduce, built-in or JavaScript,
 * drawn among those its values suit. Views may share a map (one slot). */
enum { C_ALL, C_HAS_K, C_G_NOT1, C_V_EVEN, N_COND };
enum { K_K, K_GK, K_ID, K_G, K_V, K_NULL, K_MIX, N_KEY };
enum { V_V, V_1, V_NULL, V_GV, V_OBJ, N_VAL };
enum { R_NONE, R_SUM, R_COUNT, R_STATS, R_JSSUM, R_JSCOUNT, N_RED };

static const char *const COND_JS[N_COND] = {"true", "doc.k !== undefined", "doc.g !== 1", "doc.v % 2 === 0"};
static const char *const KEY_JS[N_KEY] = {
    "doc.k", "[doc.g, doc.k]", "doc._id", "doc.g", "doc.v", "null",
    "(doc.v % 3 === 0 ? 's' + doc.g : doc.v % 3 === 1 ? [doc.g] : doc.v > 50)"};
static const char *const VAL_JS[N_VAL] = {"doc.v", "1", "null", "[doc.g, doc.v]", "{g: doc.g}"};
static const char *const RED_SRC[N_RED] = {
    NULL, "_sum", "_count", "_stats", "function(keys, values, rereduce){ return sum(values); }",
    "function(keys, values, rereduce){ return rereduce ? sum(values) : values.length; }"};

typedef struct mspec {
  int cond, n_emit, key[2], val[2];
  char src[320];
} mspec;

typedef struct ixspec {
  size_t n_views;
  mspec maps[MAXVIEWS];   /* view i's map */
  int red[MAXVIEWS];      /* view i's reduce (R_*) */
  char ddoc[4096];
} ixspec;

static int num_vals(const mspec *m) {
  for (int e = 0; e < m->n_emit; e++)
    if (m->val[e] != V_V && m->val[e] != V_1) return 0;
  return 1;
}

static void rand_ixspec(uint64_t *seed, int which, ixspec *x) {
  memset(x, 0, sizeof *x);
  x->n_views = 2 + storet_below(seed, MAXVIEWS - 1);
  size_t o = (size_t)snprintf(x->ddoc, sizeof x->ddoc, "{\"_id\":\"_design/r%d\",\"views\":{", which);
  for (size_t i = 0; i < x->n_views; i++) {
    mspec *m = &x->maps[i];
    if (i && storet_chance(seed, 1, 3)) {
      *m = x->maps[storet_below(seed, i)]; /* the same map: one slot */
    } else {
      m->cond = (int)storet_below(seed, N_COND);
      m->n_emit = 1 + storet_chance(seed, 1, 3);
      for (int e = 0; e < m->n_emit; e++) {
        m->key[e] = (int)storet_below(seed, N_KEY);
        m->val[e] = (int)storet_below(seed, N_VAL);
      }
      if (m->n_emit == 2 && (m->val[0] == V_GV) != (m->val[1] == V_GV) && storet_chance(seed, 1, 2))
        m->val[1] = m->val[0];
      size_t n = (size_t)snprintf(m->src, sizeof m->src, "function(doc){ if (%s) {", COND_JS[m->cond]);
      for (int e = 0; e < m->n_emit; e++)
        n += (size_t)snprintf(m->src + n, sizeof m->src - n, " emit(%s, %s);", KEY_JS[m->key[e]], VAL_JS[m->val[e]]);
      snprintf(m->src + n, sizeof m->src - n, " } }");
    }
    int r = (int)storet_below(seed, N_RED);
    int nums = num_vals(m), arrs = m->val[0] == V_GV && (m->n_emit == 1 || m->val[1] == V_GV);
    if ((r == R_SUM && !nums && !arrs) || ((r == R_STATS || r == R_JSSUM) && !nums)) r = R_COUNT;
    x->red[i] = r;
    o += (size_t)snprintf(x->ddoc + o, sizeof x->ddoc - o, "%s\"v%zu\":{\"map\":\"%s\"", i ? "," : "", i, m->src);
    if (r != R_NONE) o += (size_t)snprintf(x->ddoc + o, sizeof x->ddoc - o, ",\"reduce\":\"%s\"", RED_SRC[r]);
    o += (size_t)snprintf(x->ddoc + o, sizeof x->ddoc - o, "}");
  }
  snprintf(x->ddoc + o, sizeof x->ddoc - o, "}}");
}

static int cond_holds(int c, const mdoc *d) {
  switch (c) {
  case C_HAS_K: return d->k >= 0;
  case C_G_NOT1: return d->g != 1;
  case C_V_EVEN: return d->v % 2 == 0;
  default: return 1;
  }
}

static void key_text(int k, const mdoc *d, const char *id, char *out, size_t n) {
  switch (k) {
  case K_K: d->k < 0 ? snprintf(out, n, "null") : snprintf(out, n, "%d", d->k); break;
  case K_GK: d->k < 0 ? snprintf(out, n, "[%d,null]", d->g) : snprintf(out, n, "[%d,%d]", d->g, d->k); break;
  case K_ID: snprintf(out, n, "\"%s\"", id); break;
  case K_G: snprintf(out, n, "%d", d->g); break;
  case K_V: snprintf(out, n, "%d", d->v); break;
  case K_NULL: snprintf(out, n, "null"); break;
  default:
    if (d->v % 3 == 0) snprintf(out, n, "\"s%d\"", d->g);
    else if (d->v % 3 == 1) snprintf(out, n, "[%d]", d->g);
    else snprintf(out, n, "%s", d->v > 50 ? "true" : "false");
  }
}

static void val_text(int v, const mdoc *d, char *out, size_t n) {
  switch (v) {
  case V_V: snprintf(out, n, "%d", d->v); break;
  case V_1: snprintf(out, n, "1"); break;
  case V_NULL: snprintf(out, n, "null"); break;
  case V_GV: snprintf(out, n, "[%d,%d]", d->g, d->v); break;
  default: snprintf(out, n, "{\"g\":%d}", d->g);
  }
}

/* What a reduce of the values vj[0..n) is, as JSON text (integers: exact). */
static const char *model_reduce(dv_arena *a, int red, const char *const *vj, size_t n) {
  char out[160];
  if (red == R_COUNT || red == R_JSCOUNT) {
    snprintf(out, sizeof out, "%zu", n);
  } else {
    int64_t sum[2] = {0, 0}, sq = 0, mn = 0, mx = 0;
    int arr = 0;
    for (size_t i = 0; i < n; i++) {
      json_val *v = storet_json(a, vj[i]);
      int64_t x;
      if (v->type == JSON_ARRAY) {
        arr = 1;
        for (int j = 0; j < 2; j++) {
          ASSERT_OK(json_num_int64(v->u.items[j]->u.s, v->u.items[j]->len, &x));
          sum[j] += x;
        }
        continue;
      }
      ASSERT_OK(json_num_int64(v->u.s, v->len, &x));
      sum[0] += x;
      sq += x * x;
      if (!i || x < mn) mn = x;
      if (!i || x > mx) mx = x;
    }
    if (red == R_STATS)
      snprintf(out, sizeof out, "{\"sum\":%lld,\"count\":%zu,\"min\":%lld,\"max\":%lld,\"sumsqr\":%lld}",
               (long long)sum[0], n, (long long)mn, (long long)mx, (long long)sq);
    else if (arr) snprintf(out, sizeof out, "[%lld,%lld]", (long long)sum[0], (long long)sum[1]);
    else snprintf(out, sizeof out, "%lld", (long long)sum[0]);
  }
  return arena_strndup(a, out, strlen(out));
}

/* Whether two JSON texts are the same value (numbers by value: 1 == 1.0). */
static void assert_same_json(dv_arena *a, const char *got, size_t got_len, const char *want, const char *what) {
  json_val *g = storet_json(a, arena_strndup(a, got, got_len)), *w = storet_json(a, want);
  ASSERTF(!collate_cmp(g, w) && g->type == w->type, "%s: %.*s, the model's %s", what, (int)got_len, got, want);
}

/* A row as the model and the index both give it. */
typedef struct xrow {
  dv_buf suffix; /* (EK, DocID, N) */
  char *kj, *vj;
} xrow;

static int xrow_cmp(const void *a, const void *b) {
  const xrow *x = a, *y = b;
  size_t n = x->suffix.len < y->suffix.len ? x->suffix.len : y->suffix.len;
  int c = memcmp(x->suffix.p, y->suffix.p, n);
  return c ? c : (x->suffix.len > y->suffix.len) - (x->suffix.len < y->suffix.len);
}

static void add_row(xrow *rs, size_t *n, dv_arena *a, const char *kj, const char *vj, const char *id, int emit_n) {
  json_val *k = storet_json(a, kj);
  xrow *r = &rs[(*n)++];
  buf_init(&r->suffix);
  dv_buf ek;
  buf_init(&ek);
  ASSERT_OK(collate_key(&ek, k));
  tup_w w;
  tup_w_init(&w, &r->suffix);
  tup_bytes(&w, ek.p, ek.len);
  tup_strz(&w, id);
  tup_int(&w, emit_n);
  ASSERT_OK(tup_w_finish(&w));
  buf_free(&ek);
  r->kj = arena_strndup(a, kj, strlen(kj));
  r->vj = arena_strndup(a, vj, strlen(vj));
}

/* The model's rows of a map, in index order. */
static size_t model_rows(const mdoc *m, const mspec *ms, dv_arena *a, xrow *rs) {
  size_t n = 0;
  char id[16], kj[64], vj[32];
  for (int i = 0; i < NDOCS; i++) {
    if (!m[i].live || !cond_holds(ms->cond, &m[i])) continue;
    snprintf(id, sizeof id, "d%02d", i);
    for (int e = 0; e < ms->n_emit; e++) {
      key_text(ms->key[e], &m[i], id, kj, sizeof kj);
      val_text(ms->val[e], &m[i], vj, sizeof vj);
      add_row(rs, &n, a, kj, vj, id, e);
    }
  }
  qsort(rs, n, sizeof *rs, xrow_cmp);
  return n;
}

/* The spec of a slot's map, and of a view, by the index's names. */
static const mspec *slot_map(const ixspec *x, const vw_index *ix, size_t slot) {
  for (size_t i = 0; i < x->n_views; i++)
    if (!strcmp(x->maps[i].src, ix->slots[slot].map)) return &x->maps[i];
  ASSERT(!"a slot the design document has no map for");
  return NULL;
}

static size_t view_no(const vw_view *v) { return (size_t)atoi(v->name + 1); } /* "v3" ─▶ 3 */

struct check_arg {
  const ixspec *x;
  const vw_index *ix;
  vw_session *ss;
  const mdoc *m;
  dv_arena *a;
};

/* Every slot: its rows are the model's byte for byte, its tree a rebuild's,
 * and each of its reduces over the whole range the model's. */
static int check_fn(store_tx *t, void *arg) {
  struct check_arg *c = arg;
  vw_state st;
  ASSERT_OK(vw_state_get(t, c->ix->sig, 0, c->a, &st));
  ASSERT(st.found);
  for (size_t s = 0; s < c->ix->n_slots; s++) {
    vw_tree tr;
    ASSERT_OK(vw_tree_def(t, c->ix, &st, s, &tr));
    xrow *want = dv_calloc(MAXROWS, sizeof *want);
    ASSERT(want != NULL);
    size_t nw = model_rows(c->m, slot_map(c->x, c->ix, s), c->a, want);
    dv_buf be, ee;
    buf_init(&be);
    buf_init(&ee);
    ASSERT_OK(tup_range(tr.rows.p, tr.rows.len, &be, &ee));
    kv_pair *kv;
    int n, more;
    ASSERT_OK(kv_get_range(store_tx_kv(t), be.p, be.len, ee.p, ee.len, 0, 0, &kv, &n, &more));
    ASSERTF((size_t)n == nw, "slot %zu (%s): %d rows, the model has %zu", s, c->ix->slots[s].map, n, nw);
    for (int i = 0; i < n; i++) {
      ASSERT_EQ(kv[i].key_len, tr.rows.len + want[i].suffix.len);
      ASSERTF(!memcmp(kv[i].key + tr.rows.len, want[i].suffix.p, want[i].suffix.len), "slot %zu row %d: key", s, i);
      tup_r r;
      tup_item k, v;
      tup_r_init(&r, kv[i].val, kv[i].val_len);
      ASSERT_OK(tup_get(&r, TUP_STR, &k));
      ASSERT_OK(tup_get(&r, TUP_STR, &v));
      ASSERTF(k.s_len == strlen(want[i].kj) && !memcmp(k.s, want[i].kj, k.s_len), "slot %zu row %d: key %.*s, want %s",
              s, i, (int)k.s_len, (const char *)k.s, want[i].kj);
      ASSERTF(v.s_len == strlen(want[i].vj) && !memcmp(v.s, want[i].vj, v.s_len), "slot %zu row %d: value %.*s, want %s",
              s, i, (int)v.s_len, (const char *)v.s, want[i].vj);
    }
    /* the tree: a rebuild's bytes, and the model's totals */
    vw_red_ctx rc;
    vw_red_init(&rc, c->ix, s, c->ss, tr.rows.len);
    tr.d.n_red = c->ix->slots[s].n_red;
    tr.d.ops = tr.d.n_red ? &vw_red_ops : NULL;
    tr.d.ctx = &rc;
    dv_buf why;
    buf_init(&why);
    int crc = vt_check(store_tx_kv(t), &tr.d, &why);
    ASSERTF(crc == 0, "slot %zu: %.*s", s, (int)why.len, (char *)why.p);
    buf_free(&why);
    uint64_t count = 0;
    dv_buf reds[MAXVIEWS];
    for (int i = 0; i < MAXVIEWS; i++) buf_init(&reds[i]);
    ASSERT_OK(vt_reduce(store_tx_kv(t), &tr.d, NULL, NULL, 0, &count, tr.d.n_red ? reds : NULL, NULL));
    ASSERT_EQ(count, nw);
    const char **vals = arena_alloc(c->a, (nw + 1) * sizeof *vals);
    for (size_t i = 0; i < nw; i++) vals[i] = want[i].vj;
    for (size_t i = 0; nw && i < c->ix->n_views; i++) {
      const vw_view *v = &c->ix->views[i];
      if (v->slot != s || v->red < 0) continue;
      const dv_buf *rb = &reds[v->red];
      ASSERTF(rb->len && ((uint8_t *)rb->p)[0] == 0, "view %s: the reduce failed", v->name);
      dv_buf f;
      buf_init(&f);
      vr_kind kind = c->ix->slots[s].kinds[v->red];
      if (kind == VR_JS) buf_append(&f, (uint8_t *)rb->p + 1, rb->len - 1);
      else ASSERT_OK(vr_final(kind, (uint8_t *)rb->p + 1, rb->len - 1, &f));
      assert_same_json(c->a, (const char *)f.p, f.len, model_reduce(c->a, c->x->red[view_no(v)], vals, nw), v->name);
      buf_free(&f);
    }
    for (int i = 0; i < MAXVIEWS; i++) buf_free(&reds[i]);
    vw_red_free(&rc);
    for (size_t i = 0; i < nw; i++) buf_free(&want[i].suffix);
    dv_free(want);
    buf_free(&be);
    buf_free(&ee);
    vw_tree_free(&tr);
  }
  return 0;
}

/* ---- queries against the model ---- */

typedef struct qrow {
  const char *id, *kj, *vj;
  json_val *k;
} qrow;

static int qrow_cmp_key(const json_val *k, const char *id, const json_val *bk, const char *bid) {
  int c = collate_cmp(k, bk);
  if (!c && bid) c = strcmp(id, bid);
  return c;
}

/* The model's rows of a slot in a range, in traversal order. */
static size_t model_query(const mdoc *m, const mspec *ms, dv_arena *a, const vw_range *r, int desc, qrow *out) {
  xrow *xs = dv_calloc(MAXROWS, sizeof *xs);
  ASSERT(xs != NULL);
  size_t n = model_rows(m, ms, a, xs), k = 0;
  for (size_t j = 0; j < n; j++) {
    size_t i = desc ? n - 1 - j : j;
    tup_r t;
    tup_item ek, id;
    tup_r_init(&t, xs[i].suffix.p, xs[i].suffix.len);
    ASSERT_OK(tup_get(&t, TUP_BYTES, &ek));
    ASSERT_OK(tup_get(&t, TUP_STR, &id));
    char *ids = arena_strndup(a, (const char *)id.s, id.s_len);
    json_val *key = storet_json(a, xs[i].kj);
    int in = 1;
    if (r->start_key) {
      int c = qrow_cmp_key(key, ids, r->start_key, r->start_docid);
      in = desc ? c <= 0 : c >= 0;
    }
    if (in && r->end_key) {
      int c = qrow_cmp_key(key, ids, r->end_key, r->end_docid);
      in = desc ? (r->inclusive_end ? c >= 0 : c > 0) : (r->inclusive_end ? c <= 0 : c < 0);
    }
    if (in) out[k++] = (qrow){ids, xs[i].kj, xs[i].vj, key};
  }
  for (size_t i = 0; i < n; i++) buf_free(&xs[i].suffix);
  dv_free(xs);
  return k;
}

typedef struct got {
  dv_arena *a;
  size_t n;
  const char *id[MAXROWS], *kj[MAXROWS], *vj[MAXROWS];
} got;

static int got_row(void *arg, const vw_row *r) {
  got *g = arg;
  ASSERT(g->n < MAXROWS);
  g->id[g->n] = arena_strndup(g->a, r->id, r->id_len);
  g->kj[g->n] = arena_strndup(g->a, r->key, r->key_len);
  g->vj[g->n] = arena_strndup(g->a, r->value, r->value_len);
  g->n++;
  return 0;
}

static int got_red(void *arg, const vw_red_row *r) {
  got *g = arg;
  ASSERT(g->n < MAXROWS);
  ASSERT(!r->error);
  g->kj[g->n] = arena_strndup(g->a, r->key, r->key_len);
  g->vj[g->n] = arena_strndup(g->a, r->value, r->value_len);
  g->n++;
  return 0;
}

/* A key to bound a range with: any of the types the maps emit. */
static json_val *rand_key(uint64_t *seed, dv_arena *a) {
  char t[32];
  switch (storet_below(seed, 8)) {
  case 0: snprintf(t, sizeof t, "\"d%02d\"", (int)storet_below(seed, NDOCS)); break;
  case 1: snprintf(t, sizeof t, "[%d]", (int)storet_below(seed, 3)); break;
  case 2: snprintf(t, sizeof t, "[%d,%d]", (int)storet_below(seed, 3), (int)storet_below(seed, 12)); break;
  case 3: snprintf(t, sizeof t, "\"s%d\"", (int)storet_below(seed, 3)); break;
  case 4: snprintf(t, sizeof t, "%s", storet_chance(seed, 1, 3) ? "null" : storet_chance(seed, 1, 2) ? "true" : "false"); break;
  case 5: snprintf(t, sizeof t, "[%d,null]", (int)storet_below(seed, 3)); break;
  default: snprintf(t, sizeof t, "%d", (int)storet_below(seed, 101) - 1);
  }
  return storet_json(a, t);
}

/* The key of a row's group: the key, or its first lvl items (lvl > 0, an
 * array key of at least lvl items), or null (lvl 0: group=false). */
static json_val *group_key(dv_arena *a, json_val *k, int lvl) {
  if (lvl == 0) return storet_json(a, "null");
  if (lvl < 0 || k->type != JSON_ARRAY || k->len < (size_t)lvl) return k;
  json_val *t = json_new_array(a);
  for (int j = 0; j < lvl; j++) ASSERT_OK(json_arr_push(a, t, k->u.items[j]));
  return t;
}

/* Random queries of random views: map rows (range, docids, inclusive_end,
 * descending, skip, limit) with total_rows and offset, and for a view with
 * a reduce its rows at a random group level, against the model. */
static void check_queries(store_db *db, const ixspec *x, const vw_index *ix, const mdoc *m, dv_arena *a, uint64_t *seed) {
  static qrow want[MAXROWS];
  static got g;
  for (int q = 0; q < 40; q++) {
    const vw_view *v = &ix->views[storet_below(seed, ix->n_views)];
    size_t slot = v->slot;
    const mspec *ms = slot_map(x, ix, slot);
    vw_range r = {.inclusive_end = !storet_chance(seed, 1, 3)};
    char sd[8], ed[8];
    if (storet_chance(seed, 2, 3)) r.start_key = rand_key(seed, a);
    if (storet_chance(seed, 2, 3)) r.end_key = rand_key(seed, a);
    if (r.start_key && storet_chance(seed, 1, 3)) {
      snprintf(sd, sizeof sd, "d%02d", (int)storet_below(seed, NDOCS));
      r.start_docid = sd;
      r.start_docid_len = 3;
    }
    if (r.end_key && storet_chance(seed, 1, 3)) {
      snprintf(ed, sizeof ed, "d%02d", (int)storet_below(seed, NDOCS));
      r.end_docid = ed;
      r.end_docid_len = 3;
    }
    int desc = storet_chance(seed, 1, 2);
    vw_map_opts o = {.ranges = &r, .n_ranges = 1, .descending = desc, .skip = (int64_t)storet_below(seed, 4),
                     .limit = storet_chance(seed, 1, 2) ? -1 : (int64_t)storet_below(seed, 10)};
    size_t nw = model_query(m, ms, a, &r, desc, want);
    memset(&g, 0, sizeof g);
    g.a = a;
    ASSERT_OK(vw_map_rows(db, ix, slot, &o, got_row, &g));
    size_t from = (size_t)o.skip < nw ? (size_t)o.skip : nw, to = nw;
    if (o.limit >= 0 && from + (size_t)o.limit < to) to = from + (size_t)o.limit;
    ASSERTF(g.n == to - from, "query %d view %s desc %d: %zu rows, the model has %zu", q, v->name, desc, g.n, to - from);
    for (size_t i = 0; i < g.n; i++) {
      ASSERT_STR_EQ(g.id[i], want[from + i].id);
      ASSERT_STR_EQ(g.kj[i], want[from + i].kj);
      ASSERT_STR_EQ(g.vj[i], want[from + i].vj);
    }
    uint64_t total, offset;
    ASSERT_OK(vw_map_meta(db, ix, slot, &o, &total, &offset));
    xrow *xs = dv_calloc(MAXROWS, sizeof *xs);
    size_t all = model_rows(m, ms, a, xs);
    for (size_t i = 0; i < all; i++) buf_free(&xs[i].suffix);
    dv_free(xs);
    ASSERT_EQ(total, all);
    vw_range from_start = {.start_key = r.start_key, .start_docid = r.start_docid, .inclusive_end = 1};
    size_t from_n = model_query(m, ms, a, &from_start, desc, want); /* rows at or after the start */
    size_t off = all - from_n + (size_t)o.skip;
    ASSERTF(offset == (off < all ? off : all), "query %d: offset %llu, the model's %zu", q, (unsigned long long)offset,
            off < all ? off : all);
    if (v->red < 0) continue;
    nw = model_query(m, ms, a, &r, desc, want);
    /* its reduce by group: exact keys, group=false, or group_level 1 or 2 */
    int lvl = (int)storet_below(seed, 4) - 1;
    vw_red_opts ro = {.ranges = &r, .n_ranges = 1, .descending = desc, .group_level = lvl, .skip = 0, .limit = -1};
    memset(&g, 0, sizeof g);
    g.a = a;
    vw_err e = {0};
    ASSERT_OK(vw_reduce_rows(db, ix, v, &ro, got_red, &g, a, &e));
    size_t ng = 0;
    const char **vals = arena_alloc(a, (nw + 1) * sizeof *vals);
    for (size_t i = 0; i < nw;) {
      json_val *gk = group_key(a, want[i].k, lvl);
      size_t j = i;
      while (j < nw && !collate_cmp(group_key(a, want[j].k, lvl), gk)) {
        vals[j - i] = want[j].vj;
        j++;
      }
      ASSERTF(ng < g.n, "query %d view %s: only %zu groups", q, v->name, g.n);
      ASSERT_STR_EQ(g.kj[ng], storet_json_text(a, gk));
      assert_same_json(a, g.vj[ng], strlen(g.vj[ng]), model_reduce(a, x->red[view_no(v)], vals, j - i), v->name);
      ng++;
      i = j;
    }
    ASSERTF(ng == g.n, "query %d view %s lvl %d: %zu groups, the model has %zu", q, v->name, lvl, g.n, ng);
  }
}

static void catch_up(store_db *db, const vw_index *ix, vw_session *ss) {
  vw_step_result r = {0};
  int64_t purge_since = 0;
  for (int guard = 0; guard < 100; guard++) {
    ASSERT_OK(vw_step(db, ix, ss, purge_since, &r));
    purge_since = r.purge_seq;
    if (r.done) return;
  }
  ASSERT(!"the index never caught up");
}

/* On RocksDB; and on the FoundationDB double with commit_unknown_result
 * injected into 5 % of the commits (before and after they apply), the
 * document writes' and the index steps' alike. */
static void model_run(int fdb) {
  if (fdb) setenv("DV_STORE_BACKEND", "fdb", 1);
  storet *t = fdb ? storet_open_fault("db") : storet_open(NULL, 0, "db");
  if (fdb) {
    kv_fault_seed(t->kv, storet_seed("view_model_faults", 7));
    kv_fault_set(t->kv, KV_FAULT_COMMIT_UNKNOWN_AFTER, 0.05, -1);
    kv_fault_set(t->kv, KV_FAULT_COMMIT_UNKNOWN_BEFORE, 0.05, -1);
  }
  ASSERT_OK(qs_start(NULL));
  dv_arena a;
  arena_init(&a, 0);
  uint64_t seed = storet_seed("view_model", 20);
  static ixspec xs[NIX];
  vw_index *ix[NIX];
  vw_session ss[NIX];
  for (int i = 0; i < NIX; i++) {
    rand_ixspec(&seed, i, &xs[i]);
    fprintf(stderr, "view_model: %s\n", xs[i].ddoc);
    ASSERT_OK(vw_from_ddoc(&a, storet_json(&a, xs[i].ddoc), &ix[i]));
    ASSERT_EQ(ix[i]->n_views, xs[i].n_views);
    ASSERT_OK(vw_session_open(ix[i], &ss[i]));
  }
  static mdoc m[NDOCS];
  memset(m, 0, sizeof m);
  char id[16], body[160];
  for (int round = 0; round < 16; round++) {
    for (int op = 0; op < 60; op++) {
      int i = (int)storet_below(&seed, NDOCS);
      snprintf(id, sizeof id, "d%02d", i);
      int what = (int)storet_below(&seed, 12);
      json_val *cur = NULL; /* the winner now, with its conflicts */
      int live = !storet_get(t->db, &a, id, NULL, STORE_CONFLICTS, &cur);
      const json_val *crev = live ? json_obj_getz(cur, "_rev") : NULL;
      const char *parent = crev ? arena_strndup(&a, crev->u.s, crev->len) : NULL;
      int k = (int)storet_below(&seed, 12) - 1, v = (int)storet_below(&seed, 100), g = (int)storet_below(&seed, 3);
      char fields[64];
      if (k >= 0) snprintf(fields, sizeof fields, "\"k\":%d,\"v\":%d,\"g\":%d", k, v, g);
      else snprintf(fields, sizeof fields, "\"v\":%d,\"g\":%d", v, g);
      if (what < 5) { /* create (a deleted document: without a parent, extending the tombstone) or update */
        snprintf(body, sizeof body, "{%s}", fields);
        ASSERT_OK(storet_put(t->db, &a, id, body, parent, 0, NULL));
      } else if (what < 7) { /* a conflicting branch, as replication brings it */
        snprintf(body, sizeof body, "{\"_id\":\"%s\",\"_rev\":\"%d-%016llx%016llx\",%s}", id,
                 1 + (int)storet_below(&seed, 3), (unsigned long long)storet_rand(&seed),
                 (unsigned long long)storet_rand(&seed), fields);
        ASSERT_OK(storet_put_doc(t->db, &a, body, 0, NULL));
      } else if (what < 9 && live) { /* delete the winner (a conflict may win next) */
        ASSERT_OK(storet_put(t->db, &a, id, NULL, parent, 1, NULL));
      } else if (live) { /* purge the winner, or one of its conflicts */
        const json_val *cf = json_obj_getz(cur, "_conflicts");
        const json_val *pick = crev;
        if (cf && cf->len && storet_chance(&seed, 1, 2)) pick = cf->u.items[storet_below(&seed, cf->len)];
        store_rev pr = storet_rev_n(&a, pick->u.s, pick->len), *out;
        size_t np;
        ASSERT_OK(store_purge(t->db, id, strlen(id), &pr, 1, &a, &out, &np));
      }
    }
    /* the model: every document's winner as the store has it now */
    for (int i = 0; i < NDOCS; i++) {
      snprintf(id, sizeof id, "d%02d", i);
      json_val *d;
      memset(&m[i], 0, sizeof m[i]);
      if (storet_get(t->db, &a, id, NULL, 0, &d)) continue;
      const json_val *kv = json_obj_getz(d, "k"), *vv = json_obj_getz(d, "v"), *gv = json_obj_getz(d, "g");
      int64_t x;
      m[i].live = 1;
      m[i].k = kv && !json_num_int64(kv->u.s, kv->len, &x) ? (int)x : -1;
      m[i].v = vv && !json_num_int64(vv->u.s, vv->len, &x) ? (int)x : 0;
      m[i].g = gv && !json_num_int64(gv->u.s, gv->len, &x) ? (int)x : 0;
    }
    for (int i = 0; i < NIX; i++) {
      catch_up(t->db, ix[i], &ss[i]);
      struct check_arg c = {&xs[i], ix[i], &ss[i], m, &a};
      ASSERT_OK(store_db_run(t->db, check_fn, &c));
      check_queries(t->db, &xs[i], ix[i], m, &a, &seed);
    }
  }
  for (int i = 0; i < NIX; i++) vw_session_close(&ss[i]);
  qs_stop();
  arena_free(&a);
  storet_close(t);
  if (fdb) unsetenv("DV_STORE_BACKEND");
}

TEST(view_model_rocks) { model_run(0); }
TEST(view_model_fdb) { model_run(1); }
