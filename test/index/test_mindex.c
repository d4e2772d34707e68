/* test_mindex.c — Mango json indexes kept by the write hook (index/mindex.h).
 *
 * Each test writes through the store with the index provider registered,
 * the way divan serve wires it, and then compares every index with a
 * rebuild from the documents (mi_check): no stale, duplicate or missing row,
 * whatever wrote — interactive edits, deletions, new_edits=false branches
 * (a losing branch becoming the winner), purges, index creation on
 * existing documents (the background build) and index deletion. The
 * property test runs on both backends with commit_unknown_result injected
 * (DV_SEED, DV_MINDEX_OPS, DV_MINDEX_FAULT_PCT, DV_MINDEX_CHECK_EVERY and
 * DV_MINDEX_TRACE steer it); mindex_build_while_writing builds an index
 * over 200,000 documents (DV_MINDEX_BUILD_DOCS) while 64 threads write.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/collate.h"
#include "index/mindex.h"
#include "kv/kv_fault.h"
#include "store/storet.h"
#include "test.h"
#include "util/alloc.h"

static int load(void *arg, const char *name, size_t len, store_hooks *out) {
  return mindex_hooks_load(arg, name, len, out);
}
static void unload(void *arg, store_hooks *h) {
  (void)arg;
  mindex_hooks_unload(h);
}

static void wire(store *s) {
  store_set_hooks(s, &(store_hooks_provider){.load = load, .unload = unload, .arg = s});
  ASSERT_OK(mindex_start(s));
}

/* A query design document with one index per (name, fields) pair;
 * fields is a JSON object text like {"a":"asc"}; partial may be NULL. */
static const char *ddoc_text(dv_arena *a, const char *id, const char *name, const char *fields, const char *partial) {
  char buf[2048];
  snprintf(buf, sizeof buf,
           "{\"_id\":\"%s\",\"language\":\"query\",\"views\":{\"%s\":{\"map\":{\"fields\":%s,"
           "\"partial_filter_selector\":%s},\"reduce\":\"_count\",\"options\":{\"def\":{\"fields\":[]}}}}}",
           id, name, fields, partial ? partial : "{}");
  return arena_strndup(a, buf, strlen(buf));
}

static void put_ddoc(store_db *db, dv_arena *a, const char *id, const char *name, const char *fields,
                     const char *partial) {
  json_val *old;
  const char *txt = ddoc_text(a, id, name, fields, partial);
  json_val *d = storet_json(a, txt);
  if (storet_get(db, a, id, NULL, 0, &old) == 0) ASSERT_OK(json_obj_setz(a, d, "_rev", json_obj_getz(old, "_rev")));
  ASSERT_OK(storet_put_doc(db, a, storet_json_text(a, d), 1, NULL));
}

/* The "_rev" of a document read back, NUL-terminated. */
static const char *rev_of(dv_arena *a, const json_val *doc) {
  const json_val *r = json_obj_getz(doc, "_rev");
  return arena_strndup(a, r->u.s, r->len);
}

static void del_doc(store_db *db, dv_arena *a, const char *id) {
  json_val *old;
  ASSERT_OK(storet_get(db, a, id, NULL, 0, &old));
  const char *rev = rev_of(a, old);
  ASSERT_OK(storet_put(db, a, id, NULL, rev, 1, NULL));
}

/* Wait for every index, then compare each with a rebuild. */
static size_t check_all(store_db *db, dv_arena *a) {
  mi_def *d;
  size_t n;
  ASSERT_OK(mi_list(db, a, &d, &n));
  for (size_t i = 0; i < n; i++) {
    ASSERT_OK(mindex_wait(db, d[i].sig, 60000));
    const char *why;
    int64_t rows;
    int rc = mi_check(db, &d[i], a, &rows, &why);
    ASSERTF(rc == 0, "index %s/%s: %s", d[i].ddoc, d[i].name, why ? why : dv_err_name(rc));
  }
  return n;
}

/* The ids an index scan gives, in order, as "id,id,…". */
struct ids {
  dv_buf b;
};
static int ids_cb(void *arg, const mi_row *row) {
  struct ids *x = arg;
  buf_printf(&x->b, "%s%.*s", x->b.len ? "," : "", (int)row->id_len, row->id);
  return 0;
}
static const char *scan_ids(store_db *db, dv_arena *a, const mi_def *d, int desc) {
  struct ids x;
  buf_init(&x.b);
  mi_scan_opts o = {.sig = d->sig, .descending = desc};
  int64_t keys;
  ASSERT_OK(mi_scan(db, &o, ids_cb, &x, &keys));
  const char *s = arena_strndup(a, x.b.len ? (const char *)x.b.p : "", x.b.len);
  buf_free(&x.b);
  return s;
}

static const mi_def *find_def(store_db *db, dv_arena *a, const char *name) {
  mi_def *d;
  size_t n;
  ASSERT_OK(mi_list(db, a, &d, &n));
  for (size_t i = 0; i < n; i++)
    if (!strcmp(d[i].name, name)) return &d[i];
  return NULL;
}

TEST(mindex_write_paths) {
  storet *t = storet_open(NULL, 0, "db");
  wire(t->s);
  dv_arena *a = &t->a;
  put_ddoc(t->db, a, "_design/q", "by_a", "{\"a\":\"asc\"}", NULL);
  put_ddoc(t->db, a, "_design/p", "by_bc", "{\"b.c\":\"asc\"}", "{\"kind\":\"x\"}");
  ASSERT_EQ(check_all(t->db, a), 2);
  store_rev r1, r2;
  ASSERT_OK(storet_put(t->db, a, "d1", "{\"a\":3,\"b\":{\"c\":\"z\"},\"kind\":\"x\"}", NULL, 0, &r1));
  ASSERT_OK(storet_put(t->db, a, "d2", "{\"a\":1}", NULL, 0, NULL));
  ASSERT_OK(storet_put(t->db, a, "d3", "{\"a\":\"s\",\"b\":{\"c\":1},\"kind\":\"y\"}", NULL, 0, NULL));
  ASSERT_OK(storet_put(t->db, a, "d4", "{\"b\":1}", NULL, 0, NULL));
  check_all(t->db, a);
  const mi_def *ba = find_def(t->db, a, "by_a");
  ASSERT_STR_EQ(scan_ids(t->db, a, ba, 0), "d2,d1,d3");
  ASSERT_STR_EQ(scan_ids(t->db, a, ba, 1), "d3,d1,d2");
  ASSERT_STR_EQ(scan_ids(t->db, a, find_def(t->db, a, "by_bc"), 0), "d1");
  /* update moves the row, delete drops it */
  ASSERT_OK(storet_put(t->db, a, "d1", "{\"a\":0}", storet_rev_str(a, &r1), 0, &r2));
  ASSERT_STR_EQ(scan_ids(t->db, a, ba, 0), "d1,d2,d3");
  ASSERT_STR_EQ(scan_ids(t->db, a, find_def(t->db, a, "by_bc"), 0), "");
  del_doc(t->db, a, "d2");
  ASSERT_STR_EQ(scan_ids(t->db, a, ba, 0), "d1,d3");
  check_all(t->db, a);
  /* a replicated branch that loses, then wins when the winner is deleted */
  ASSERT_OK(storet_put_doc(t->db, a, "{\"_id\":\"d3\",\"_rev\":\"1-00000000000000000000000000000001\",\"a\":-5}", 0,
                           NULL));
  check_all(t->db, a);
  ASSERT_STR_EQ(scan_ids(t->db, a, ba, 0), "d1,d3");
  del_doc(t->db, a, "d3"); /* the branch with a:-5 becomes the winner */
  ASSERT_STR_EQ(scan_ids(t->db, a, ba, 0), "d3,d1");
  check_all(t->db, a);
  /* purge the winner: the document goes */
  json_val *d3;
  ASSERT_OK(storet_get(t->db, a, "d3", NULL, 0, &d3));
  store_rev pr = storet_doc_rev(a, d3), *out;
  size_t np;
  ASSERT_OK(store_purge(t->db, "d3", 2, &pr, 1, a, &out, &np));
  ASSERT_STR_EQ(scan_ids(t->db, a, ba, 0), "d1");
  check_all(t->db, a);
  /* dropping the design document drops the index and its rows */
  del_doc(t->db, a, "_design/q");
  ASSERT(find_def(t->db, a, "by_a") == NULL);
  ASSERT_EQ(check_all(t->db, a), 1);
  mindex_stop();
  storet_close(t);
}

/* The longest run of 'x' whose key still fits with document id `id`. */
static size_t longest_fit(const char *id) {
  size_t lo = 1, hi = KV_MAX_KEY;
  char *s = dv_malloc(hi + 1);
  ASSERT(s != NULL);
  memset(s, 'x', hi);
  while (lo < hi) {
    size_t mid = (lo + hi + 1) / 2;
    json_val str = {.type = JSON_STRING, .len = mid, .u.s = s}, *items[1] = {&str};
    json_val arr = {.type = JSON_ARRAY, .len = 1, .cap = 1, .u.items = items};
    dv_buf k;
    buf_init(&k);
    ASSERT_OK(collate_key(&k, &arr));
    if (k.len + strlen(id) + MI_KEY_ROOM <= KV_MAX_KEY) lo = mid;
    else hi = mid - 1;
    buf_free(&k);
  }
  dv_free(s);
  return lo;
}

static char *x_body(size_t n) {
  char *b = dv_malloc(n + 16);
  ASSERT(b != NULL);
  strcpy(b, "{\"a\":\"");
  memset(b + 6, 'x', n);
  strcpy(b + 6 + n, "\"}");
  return b;
}

TEST(mindex_key_limit) {
  storet *t = storet_open(NULL, 0, "db");
  wire(t->s);
  dv_arena *a = &t->a;
  put_ddoc(t->db, a, "_design/q", "by_a", "{\"a\":\"asc\"}", NULL);
  size_t n = longest_fit("atlimit");
  ASSERT(n > 4000);
  char *at = x_body(n), *past = x_body(n + 1);
  ASSERT_OK(storet_put(t->db, a, "atlimit", at, NULL, 0, NULL));  /* in the index */
  ASSERT_OK(storet_put(t->db, a, "pastlim", past, NULL, 0, NULL)); /* written, left out */
  ASSERT_OK(storet_put(t->db, a, "small", "{\"a\":1}", NULL, 0, NULL));
  const mi_def *d = find_def(t->db, a, "by_a");
  ASSERT_STR_EQ(scan_ids(t->db, a, d, 0), "small,atlimit");
  json_val *doc;
  ASSERT_OK(storet_get(t->db, a, "pastlim", NULL, 0, &doc));
  check_all(t->db, a);
  printf("  a string of %zu ASCII letters is the longest indexed value\n", n);
  dv_free(at);
  dv_free(past);
  mindex_stop();
  storet_close(t);
}

/* ---- the property test -------------------------------------------------------------- */

static const char *rand_val(dv_arena *a, uint64_t *st, int depth) {
  static const char *strs[] = {"\"a\"", "\"A\"", "\"b\"", "\"aa\"", "\"\\u00e9\"", "\"z\"", "\"\"", "\"\\u4e2d\""};
  char buf[256];
  switch (storet_below(st, depth > 1 ? 6 : 8)) {
  case 0: return "null";
  case 1: return storet_chance(st, 1, 2) ? "true" : "false";
  case 2: snprintf(buf, sizeof buf, "%d", (int)storet_below(st, 7) - 3); break;
  case 3: snprintf(buf, sizeof buf, "%d.5", (int)storet_below(st, 5) - 2); break;
  case 4:
  case 5: return strs[storet_below(st, sizeof strs / sizeof *strs)];
  case 6: snprintf(buf, sizeof buf, "[%s,%s]", rand_val(a, st, depth + 1), rand_val(a, st, depth + 1)); break;
  default: snprintf(buf, sizeof buf, "{\"c\":%s}", rand_val(a, st, depth + 1)); break;
  }
  return arena_strndup(a, buf, strlen(buf));
}

static const char *rand_body(dv_arena *a, uint64_t *st) {
  char buf[1024];
  size_t n = 0;
  n += (size_t)snprintf(buf + n, sizeof buf - n, "{");
  const char *keys[] = {"a", "b", "k"};
  int first = 1;
  for (int i = 0; i < 3; i++) {
    if (storet_chance(st, 1, 4)) continue; /* missing fields */
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"%s\":%s", first ? "" : ",", keys[i],
                          i == 1 && storet_chance(st, 1, 2) ? arena_strndup(a, "{\"c\":1}", 7) : rand_val(a, st, 0));
    first = 0;
  }
  snprintf(buf + n, sizeof buf - n, "}");
  return arena_strndup(a, buf, strlen(buf));
}

static const struct {
  const char *name, *fields, *partial;
} IDX[] = {
    {"by_a", "{\"a\":\"asc\"}", NULL},
    {"by_ab", "{\"a\":\"asc\",\"b\":\"asc\"}", NULL},
    {"by_bc", "{\"b.c\":\"desc\"}", NULL},
    {"by_k_part", "{\"k\":\"asc\"}", "{\"a\":{\"$gt\":0}}"},
    {"by_id", "{\"_id\":\"asc\"}", NULL},
};

static void property(int fdb) {
  if (fdb) setenv("DV_STORE_BACKEND", "fdb", 1);
  storet *t = storet_open_fault("db");
  wire(t->s);
  dv_arena *a = &t->a;
  uint64_t st = storet_seed("mindex_property", 0x5eed1234);
  kv_fault_seed(t->kv, st);
  double p = storet_env_long("DV_MINDEX_FAULT_PCT", 5) / 100.0;
  kv_fault_set(t->kv, KV_FAULT_COMMIT_UNKNOWN_AFTER, p, -1);
  kv_fault_set(t->kv, KV_FAULT_COMMIT_UNKNOWN_BEFORE, p, -1);
  long ops = storet_env_long("DV_MINDEX_OPS", 1500);
  int have[sizeof IDX / sizeof *IDX] = {0};
  long every = storet_env_long("DV_MINDEX_CHECK_EVERY", 0);
  for (long op = 0; op < ops; op++) {
    if (every && op % every == 0) {
      if (getenv("DV_MINDEX_TRACE")) printf("  op %ld\n", op);
      check_all(t->db, a);
    }
    if (op % 100 == 0) arena_reset(a);
    char id[16];
    snprintf(id, sizeof id, "d%02d", (int)storet_below(&st, 60));
    json_val *cur = NULL;
    int live = storet_get(t->db, a, id, NULL, 0, &cur) == 0;
    unsigned k = (unsigned)storet_below(&st, 100);
    if (getenv("DV_MINDEX_TRACE")) printf("  op %ld: %u on %s (live %d)\n", op, k, id, live);
    if (k < 40) { /* create or update */
      const char *parent = live ? rev_of(a, cur) : NULL;
      int rc = storet_put(t->db, a, id, rand_body(a, &st), parent, 0, NULL);
      ASSERTF(rc == 0, "put %s: %s", id, dv_err_name(rc));
    } else if (k < 55) { /* delete */
      if (live) del_doc(t->db, a, id);
    } else if (k < 70) { /* a replicated branch */
      char doc[1200];
      snprintf(doc, sizeof doc, "{\"_id\":\"%s\",\"_rev\":\"%d-%016llx%016llx\",%s", id, 1 + (int)storet_below(&st, 3),
               (unsigned long long)storet_rand(&st), (unsigned long long)storet_rand(&st), rand_body(a, &st) + 1);
      if (doc[strlen(doc) - 2] == ',') memmove(doc + strlen(doc) - 2, "}", 2);
      ASSERT_OK(storet_put_doc(t->db, a, doc, 0, NULL));
    } else if (k < 80) { /* purge a leaf */
      store_leaf *lv;
      size_t nl;
      if (store_doc_leaves(t->db, id, strlen(id), a, &lv, &nl) == 0 && nl) {
        store_rev *out;
        size_t np;
        ASSERT_OK(store_purge(t->db, id, strlen(id), &lv[storet_below(&st, nl)].rev, 1, a, &out, &np));
      }
    } else if (k < 84) { /* create or drop an index */
      size_t i = storet_below(&st, sizeof IDX / sizeof *IDX);
      char dd[64];
      snprintf(dd, sizeof dd, "_design/%s", IDX[i].name);
      if (getenv("DV_MINDEX_TRACE")) printf("  index op on %s (have %d)\n", IDX[i].name, have[i]);
      if (have[i] && storet_chance(&st, 1, 2)) {
        del_doc(t->db, a, dd);
        have[i] = 0;
      } else if (!have[i]) {
        put_ddoc(t->db, a, dd, IDX[i].name, IDX[i].fields, IDX[i].partial);
        have[i] = 1;
      }
    } else if (k < 86) {
      check_all(t->db, a);
    }
  }
  kv_fault_clear(t->kv);
  for (size_t i = 0; i < sizeof IDX / sizeof *IDX; i++)
    if (!have[i]) {
      char dd[64];
      snprintf(dd, sizeof dd, "_design/%s", IDX[i].name);
      put_ddoc(t->db, a, dd, IDX[i].name, IDX[i].fields, IDX[i].partial);
    }
  ASSERT_EQ(check_all(t->db, a), sizeof IDX / sizeof *IDX);
  printf("  commit_unknown_result injected: %ld after, %ld before\n",
         kv_fault_injected(t->kv, KV_FAULT_COMMIT_UNKNOWN_AFTER), kv_fault_injected(t->kv, KV_FAULT_COMMIT_UNKNOWN_BEFORE));
  mindex_stop();
  storet_close(t);
  if (fdb) unsetenv("DV_STORE_BACKEND");
}

TEST(mindex_property) { property(0); }
TEST(mindex_property_fdb) { property(1); }

/* ---- a background build while writers write ----------------------------------------- */

struct writer {
  store_db *db;
  int n, seed;
  volatile int *stop;
};

static void *write_loop(void *arg) {
  struct writer *w = arg;
  dv_arena a;
  arena_init(&a, 0);
  uint64_t st = (uint64_t)w->seed;
  for (int i = 0; !*w->stop; i++) {
    arena_reset(&a);
    char id[32];
    snprintf(id, sizeof id, "doc%06d", (int)storet_below(&st, (uint64_t)w->n));
    json_val *cur;
    const char *parent = storet_get(w->db, &a, id, NULL, 0, &cur) == 0 ? rev_of(&a, cur) : NULL;
    char body[64];
    snprintf(body, sizeof body, "{\"v\":%d,\"w\":%d}", (int)storet_below(&st, 1000), w->seed);
    int rc = storet_put(w->db, &a, id, body, parent, storet_chance(&st, 1, 10), NULL);
    ASSERTF(rc == 0 || rc == DV_ECONFLICT, "write: %s", dv_err_name(rc));
  }
  arena_free(&a);
  return NULL;
}

TEST(mindex_build_while_writing) {
  storet *t = storet_open(NULL, 0, "db");
  wire(t->s);
  dv_arena *a = &t->a;
  int n = (int)storet_env_long("DV_MINDEX_BUILD_DOCS", 200000);
  store_edit *e = dv_calloc(1000, sizeof *e);
  ASSERT(e != NULL);
  for (int i = 0; i < n; i += 1000) {
    arena_reset(a);
    int m = n - i < 1000 ? n - i : 1000;
    for (int j = 0; j < m; j++) {
      char id[32], body[64];
      snprintf(id, sizeof id, "doc%06d", i + j);
      snprintf(body, sizeof body, "{\"v\":%d}", (i + j) % 997);
      e[j] = (store_edit){.id = arena_strndup(a, id, strlen(id)), .id_len = strlen(id), .body = storet_json(a, body)};
    }
    ASSERT_OK(store_update(t->db, NULL, e, (size_t)m, 1));
  }
  dv_free(e);
  volatile int stop = 0;
  enum { WRITERS = 64 };
  pthread_t th[WRITERS];
  struct writer w[WRITERS];
  for (int i = 0; i < WRITERS; i++) {
    w[i] = (struct writer){.db = t->db, .n = n, .seed = i + 1, .stop = &stop};
    ASSERT(pthread_create(&th[i], NULL, write_loop, &w[i]) == 0);
  }
  double t0 = storet_now();
  put_ddoc(t->db, a, "_design/q", "by_v", "{\"v\":\"asc\"}", NULL);
  const mi_def *d = find_def(t->db, a, "by_v");
  ASSERT(d != NULL);
  /* progress shows while it builds */
  mi_task tk[4];
  size_t seen = 0;
  for (int i = 0; i < 200 && !seen; i++) {
    seen = mindex_tasks(tk, 4);
    if (!seen) {
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
    }
  }
  ASSERT_OK(mindex_wait(t->db, d->sig, 120000));
  double took = storet_now() - t0;
  stop = 1;
  for (int i = 0; i < WRITERS; i++) pthread_join(th[i], NULL);
  check_all(t->db, a);
  printf("  %d documents built in %.1f s (%.0f docs/s) with %d writers; a build task was %s\n", n, took, n / took,
         (int)WRITERS, seen ? "seen" : "not seen (the build finished first)");
  mindex_stop();
  storet_close(t);
}
