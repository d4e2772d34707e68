/* test_view.c — views' index against a model: random documents written,
 * updated, deleted, given conflicting branches (new_edits=false) and
 * purged (a winner or a conflict), the model being every document's
 * winner as the store shows it (on the FoundationDB double, with
 * commit_unknown_result injected); after each round the index is brought up to
 * date (vw_step) and every slot's rows must equal the rows a brute-force
 * evaluation of the map functions gives (in key order, byte for byte), its
 * tree must equal a rebuild (vt_check), and whole-range reductions must
 * equal the model's. On RocksDB and on the FoundationDB double. */
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

/* A document's winner, as the store shows it. */
typedef struct mdoc {
  int live;
  int k, v, g;            /* k < 0: no "k" field */
} mdoc;

static const char DDOC[] =
    "{\"_id\":\"_design/m\",\"views\":{"
    "\"by_k\":{\"map\":\"function(doc){ if (doc.k !== undefined) emit(doc.k, doc.v); }\",\"reduce\":\"_sum\"},"
    "\"cnt\":{\"map\":\"function(doc){ if (doc.k !== undefined) emit(doc.k, doc.v); }\",\"reduce\":\"_count\"},"
    "\"js\":{\"map\":\"function(doc){ if (doc.k !== undefined) emit(doc.k, doc.v); }\","
    "\"reduce\":\"function(keys, values, rereduce){ return sum(values); }\"},"
    "\"pair\":{\"map\":\"function(doc){ emit([doc.g, doc.k], 1); emit(doc._id); }\"},"
    "\"pair_n\":{\"map\":\"function(doc){ emit([doc.g, doc.k], 1); emit(doc._id); }\",\"reduce\":\"_count\"}}}";

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

/* The model's rows of a slot: slot 0 = by_k's map, slot 1 = pair's. */
static size_t model_rows(const mdoc *m, size_t slot, dv_arena *a, xrow *rs) {
  size_t n = 0;
  char id[16], kj[64], vj[32];
  for (int i = 0; i < NDOCS; i++) {
    if (!m[i].live) continue;
    snprintf(id, sizeof id, "d%02d", i);
    if (slot == 0) {
      if (m[i].k < 0) continue;
      snprintf(kj, sizeof kj, "%d", m[i].k);
      snprintf(vj, sizeof vj, "%d", m[i].v);
      add_row(rs, &n, a, kj, vj, id, 0);
    } else {
      if (m[i].k < 0) snprintf(kj, sizeof kj, "[%d,null]", m[i].g);
      else snprintf(kj, sizeof kj, "[%d,%d]", m[i].g, m[i].k);
      add_row(rs, &n, a, kj, "1", id, 0);
      snprintf(kj, sizeof kj, "\"%s\"", id);
      add_row(rs, &n, a, kj, "null", id, 1);
    }
  }
  qsort(rs, n, sizeof *rs, xrow_cmp);
  return n;
}

struct check_arg {
  const vw_index *ix;
  vw_session *ss;
  const mdoc *m;
  dv_arena *a;
};

static int check_fn(store_tx *t, void *arg) {
  struct check_arg *c = arg;
  vw_state st;
  ASSERT_OK(vw_state_get(t, c->ix->sig, 0, c->a, &st));
  ASSERT(st.found);
  for (size_t s = 0; s < c->ix->n_slots; s++) {
    vw_tree tr;
    ASSERT_OK(vw_tree_def(t, c->ix, &st, s, &tr));
    xrow *want = dv_calloc(3 * NDOCS + 1, sizeof *want);
    ASSERT(want != NULL);
    size_t nw = model_rows(c->m, s, c->a, want);
    dv_buf be, ee;
    buf_init(&be);
    buf_init(&ee);
    ASSERT_OK(tup_range(tr.rows.p, tr.rows.len, &be, &ee));
    kv_pair *kv;
    int n, more;
    ASSERT_OK(kv_get_range(store_tx_kv(t), be.p, be.len, ee.p, ee.len, 0, 0, &kv, &n, &more));
    ASSERTF((size_t)n == nw, "slot %zu: %d rows, the model has %zu", s, n, nw);
    for (int i = 0; i < n; i++) {
      ASSERT_EQ(kv[i].key_len, tr.rows.len + want[i].suffix.len);
      ASSERTF(!memcmp(kv[i].key + tr.rows.len, want[i].suffix.p, want[i].suffix.len), "slot %zu row %d: key", s, i);
      tup_r r;
      tup_item k, v;
      tup_r_init(&r, kv[i].val, kv[i].val_len);
      ASSERT_OK(tup_get(&r, TUP_STR, &k));
      ASSERT_OK(tup_get(&r, TUP_STR, &v));
      ASSERT_EQ(k.s_len, strlen(want[i].kj));
      ASSERT(!memcmp(k.s, want[i].kj, k.s_len));
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
    dv_buf reds[4];
    for (int i = 0; i < 4; i++) buf_init(&reds[i]);
    ASSERT_OK(vt_reduce(store_tx_kv(t), &tr.d, NULL, NULL, 0, &count, tr.d.n_red ? reds : NULL, NULL));
    ASSERT_EQ(count, nw);
    if (s == 0 && nw) { /* _sum, _count, the JavaScript sum, in the views' name order */
      long sum = 0;
      for (int i = 0; i < NDOCS; i++)
        if (c->m[i].live && c->m[i].k >= 0) sum += c->m[i].v;
      char want_sum[32], got[64];
      snprintf(want_sum, sizeof want_sum, "%ld", sum);
      for (int i = 0; i < 3; i++) ASSERT(reds[i].len && ((uint8_t *)reds[i].p)[0] == 0);
      dv_buf f;
      buf_init(&f);
      ASSERT_OK(vr_final(VR_SUM, (uint8_t *)reds[0].p + 1, reds[0].len - 1, &f));
      snprintf(got, sizeof got, "%.*s", (int)f.len, (char *)f.p);
      ASSERT_STR_EQ(got, want_sum);
      buf_reset(&f);
      ASSERT_OK(vr_final(VR_COUNT, (uint8_t *)reds[1].p + 1, reds[1].len - 1, &f));
      snprintf(got, sizeof got, "%.*s", (int)f.len, (char *)f.p);
      snprintf(want_sum, sizeof want_sum, "%zu", nw);
      ASSERT_STR_EQ(got, want_sum);
      snprintf(want_sum, sizeof want_sum, "%ld", sum);
      snprintf(got, sizeof got, "%.*s", (int)reds[2].len - 1, (char *)reds[2].p + 1);
      ASSERT_STR_EQ(got, want_sum);
      buf_free(&f);
    }
    for (int i = 0; i < 4; i++) buf_free(&reds[i]);
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
static size_t model_query(const mdoc *m, size_t slot, dv_arena *a, const vw_range *r, int desc, qrow *out) {
  xrow *xs = dv_calloc(3 * NDOCS + 1, sizeof *xs);
  ASSERT(xs != NULL);
  size_t n = model_rows(m, slot, a, xs), k = 0;
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
  const char *id[3 * NDOCS + 1], *kj[3 * NDOCS + 1], *vj[3 * NDOCS + 1];
} got;

static int got_row(void *arg, const vw_row *r) {
  got *g = arg;
  ASSERT(g->n < 3 * NDOCS + 1);
  g->id[g->n] = arena_strndup(g->a, r->id, r->id_len);
  g->kj[g->n] = arena_strndup(g->a, r->key, r->key_len);
  g->vj[g->n] = arena_strndup(g->a, r->value, r->value_len);
  g->n++;
  return 0;
}

static int got_red(void *arg, const vw_red_row *r) {
  got *g = arg;
  ASSERT(g->n < 3 * NDOCS + 1);
  ASSERT(!r->error);
  g->kj[g->n] = arena_strndup(g->a, r->key, r->key_len);
  g->vj[g->n] = arena_strndup(g->a, r->value, r->value_len);
  g->n++;
  return 0;
}

static json_val *rand_key(uint64_t *seed, dv_arena *a, size_t slot) {
  char t[32];
  if (slot == 0) snprintf(t, sizeof t, "%d", (int)storet_below(seed, 13) - 1);
  else if (storet_chance(seed, 1, 3)) snprintf(t, sizeof t, "\"d%02d\"", (int)storet_below(seed, NDOCS));
  else if (storet_chance(seed, 1, 2)) snprintf(t, sizeof t, "[%d]", (int)storet_below(seed, 3));
  else snprintf(t, sizeof t, "[%d,%d]", (int)storet_below(seed, 3), (int)storet_below(seed, 12));
  return storet_json(a, t);
}

static void check_queries(store_db *db, const vw_index *ix, const mdoc *m, dv_arena *a, uint64_t *seed) {
  static qrow want[3 * NDOCS + 1];
  static got g;
  for (int q = 0; q < 40; q++) {
    size_t slot = storet_below(seed, 2);
    vw_range r = {.inclusive_end = !storet_chance(seed, 1, 3)};
    char sd[8], ed[8];
    if (storet_chance(seed, 2, 3)) r.start_key = rand_key(seed, a, slot);
    if (storet_chance(seed, 2, 3)) r.end_key = rand_key(seed, a, slot);
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
    size_t nw = model_query(m, slot, a, &r, desc, want);
    memset(&g, 0, sizeof g);
    g.a = a;
    ASSERT_OK(vw_map_rows(db, ix, slot, &o, got_row, &g));
    size_t from = (size_t)o.skip < nw ? (size_t)o.skip : nw, to = nw;
    if (o.limit >= 0 && from + (size_t)o.limit < to) to = from + (size_t)o.limit;
    ASSERTF(g.n == to - from, "query %d slot %zu desc %d: %zu rows, the model has %zu", q, slot, desc, g.n, to - from);
    for (size_t i = 0; i < g.n; i++) {
      ASSERT_STR_EQ(g.id[i], want[from + i].id);
      ASSERT_STR_EQ(g.kj[i], want[from + i].kj);
      ASSERT_STR_EQ(g.vj[i], want[from + i].vj);
    }
    uint64_t total, offset;
    ASSERT_OK(vw_map_meta(db, ix, slot, &o, &total, &offset));
    xrow *xs = dv_calloc(3 * NDOCS + 1, sizeof *xs);
    size_t all = model_rows(m, slot, a, xs);
    for (size_t i = 0; i < all; i++) buf_free(&xs[i].suffix);
    dv_free(xs);
    ASSERT_EQ(total, all);
    vw_range from_start = {.start_key = r.start_key, .start_docid = r.start_docid, .inclusive_end = 1};
    size_t from_n = model_query(m, slot, a, &from_start, desc, want); /* rows at or after the start */
    size_t off = all - from_n + (size_t)o.skip;
    ASSERTF(offset == (off < all ? off : all), "query %d: offset %llu, the model's %zu", q, (unsigned long long)offset,
            off < all ? off : all);
    nw = model_query(m, slot, a, &r, desc, want);
    /* reduce by group: slot 0's _count (exact keys), slot 1's _count at group level 1 or exact */
    const vw_view *v = vw_find(ix, slot ? "pair_n" : "cnt", slot ? 6 : 3);
    ASSERT(v != NULL);
    int lvl = slot && storet_chance(seed, 1, 2) ? 1 : storet_chance(seed, 1, 4) ? 0 : -1;
    vw_red_opts ro = {.ranges = &r, .n_ranges = 1, .descending = desc, .group_level = lvl, .skip = 0, .limit = -1};
    memset(&g, 0, sizeof g);
    g.a = a;
    vw_err e = {0};
    ASSERT_OK(vw_reduce_rows(db, ix, v, &ro, got_red, &g, a, &e));
    /* the model's groups */
    size_t ng = 0;
    char key[64];
    for (size_t i = 0; i < nw;) {
      json_val *gk = want[i].k;
      if (lvl > 0 && gk->type == JSON_ARRAY && gk->len >= (size_t)lvl) {
        json_val *t = json_new_array(a);
        for (int j = 0; j < lvl; j++) ASSERT_OK(json_arr_push(a, t, gk->u.items[j]));
        gk = t;
      }
      size_t j = i;
      while (j < nw) {
        json_val *k2 = want[j].k;
        if (lvl > 0 && k2->type == JSON_ARRAY && k2->len >= (size_t)lvl) {
          json_val *t = json_new_array(a);
          for (int x = 0; x < lvl; x++) ASSERT_OK(json_arr_push(a, t, k2->u.items[x]));
          k2 = t;
        }
        if (lvl != 0 && collate_cmp(k2, gk)) break;
        j++;
      }
      ASSERTF(ng < g.n, "query %d: only %zu groups", q, g.n);
      snprintf(key, sizeof key, "%s", lvl == 0 ? "null" : storet_json_text(a, gk));
      ASSERT_STR_EQ(g.kj[ng], key);
      snprintf(key, sizeof key, "%zu", j - i);
      ASSERT_STR_EQ(g.vj[ng], key);
      ng++;
      i = j;
    }
    ASSERTF(ng == g.n, "query %d lvl %d: %zu groups, the model has %zu", q, lvl, g.n, ng);
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
  vw_index *ix;
  ASSERT_OK(vw_from_ddoc(&a, storet_json(&a, DDOC), &ix));
  ASSERT_EQ(ix->n_slots, 2);
  ASSERT_EQ(ix->n_views, 5);
  ASSERT_EQ(ix->slots[0].n_red, 3);
  vw_session ss;
  ASSERT_OK(vw_session_open(ix, &ss));
  static mdoc m[NDOCS];
  memset(m, 0, sizeof m);
  uint64_t seed = storet_seed("view_model", 20);
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
    catch_up(t->db, ix, &ss);
    struct check_arg c = {ix, &ss, m, &a};
    ASSERT_OK(store_db_run(t->db, check_fn, &c));
    check_queries(t->db, ix, m, &a, &seed);
  }
  vw_session_close(&ss);
  qs_stop();
  arena_free(&a);
  storet_close(t);
  if (fdb) unsetenv("DV_STORE_BACKEND");
}

TEST(view_model_rocks) { model_run(0); }
TEST(view_model_fdb) { model_run(1); }
