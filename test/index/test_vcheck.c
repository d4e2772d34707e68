/* test_vcheck.c — `divan check` of view indexes (view.h vw_check, through
 * icheck_run): a database whose design document has a map-only view,
 * views with _sum, _count and _stats over one map (one slot, one tree of
 * three reductions) and a view with a JavaScript reduce, built through the
 * builder (vw_refresh, the embedded JavaScript engine), checks clean — also
 * once documents were written after the build (the index is behind: those
 * are not compared) and once a document was purged and the index has not
 * applied it yet. Then each test breaks one thing by writing or clearing
 * raw keys through kv.h — a row deleted, a row's value changed, stale rows
 * of a deleted and of a purged document, a tree node changed — and asserts
 * the check names it; the last one runs the `divan check` binary on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "index/collate.h"
#include "index/icheck.h"
#include "index/qs.h"
#include "index/view.h"
#include "store/storet.h"
#include "test.h"

#define NDOCS 40

static const char *DDOC =
    "{\"_id\":\"_design/v\",\"views\":{"
    "\"plain\":{\"map\":\"function(doc){ if (doc.v !== undefined) emit(doc.v, doc.name); }\"},"
    "\"sum\":{\"map\":\"function(doc){ if (doc.g !== undefined) emit(doc.g, doc.v); }\",\"reduce\":\"_sum\"},"
    "\"count\":{\"map\":\"function(doc){ if (doc.g !== undefined) emit(doc.g, doc.v); }\",\"reduce\":\"_count\"},"
    "\"stats\":{\"map\":\"function(doc){ if (doc.g !== undefined) emit(doc.g, doc.v); }\",\"reduce\":\"_stats\"},"
    "\"js\":{\"map\":\"function(doc){ if (doc.g !== undefined) emit([doc.g, doc._id], doc.v * 2); }\","
    "\"reduce\":\"function(keys, values, rereduce){ return sum(values); }\"}}}";

typedef struct vfx {
  storet *t;
  int64_t prefix;
  vw_index *ix;
  size_t slot_plain, slot_sum, slot_js;
} vfx;

static void refresh(vfx *f) {
  vw_err e = {0};
  int rc = vw_refresh(f->t->db, f->ix, &f->t->a, &e);
  ASSERTF(rc == 0, "vw_refresh: %s: %s %s", dv_err_name(rc), e.error ? e.error : "", e.reason ? e.reason : "");
}

static void build(vfx *f) {
  ASSERT_OK(qs_start(NULL));
  storet *t = f->t = storet_open(NULL, 0, "db");
  dv_arena *a = &t->a;
  ASSERT_OK(storet_put_doc(t->db, a, DDOC, 1, NULL));
  char id[16], body[128];
  store_rev r;
  for (int i = 0; i < NDOCS; i++) {
    snprintf(id, sizeof id, "d%02d", i);
    snprintf(body, sizeof body, "{\"v\":%d,\"g\":%d,\"name\":\"n%d\"}", i, i % 4, i);
    ASSERT_OK(storet_put(t->db, a, id, body, NULL, 0, &r));
    if (i % 10 == 3) ASSERT_OK(storet_put(t->db, a, id, NULL, storet_rev_str(a, &r), 1, NULL)); /* d03, d13, … deleted */
  }
  /* d05 in conflict: the winner is what is mapped */
  ASSERT_OK(storet_put_doc(t->db, a, "{\"_id\":\"d05\",\"_rev\":\"1-ffffffffffffffffffffffffffffffff\",\"v\":500,\"g\":1}",
                           0, NULL));
  ASSERT_OK(vw_from_ddoc(a, storet_json(a, DDOC), &f->ix));
  ASSERT_EQ(f->ix->n_slots, 3);
  f->slot_plain = vw_find(f->ix, "plain", 5)->slot;
  f->slot_sum = vw_find(f->ix, "sum", 3)->slot;
  f->slot_js = vw_find(f->ix, "js", 2)->slot;
  ASSERT_EQ(vw_find(f->ix, "count", 5)->slot, f->slot_sum);
  ASSERT_EQ(vw_find(f->ix, "stats", 5)->slot, f->slot_sum);
  refresh(f);
  store_db_info in;
  ASSERT_OK(store_db_info_get(t->db, &in));
  f->prefix = in.prefix;
}

static void done(vfx *f) {
  storet_close(f->t);
  qs_stop();
}

typedef struct found {
  dv_arena a;
  char *text; /* every finding, one per line: kind|db|id|what|expected */
  size_t len;
} found;

static int collect(void *arg, const store_check_item *it) {
  found *fd = arg;
  char line[2048];
  int n = snprintf(line, sizeof line, "%s|%s|%.*s|%s|%s\n", it->note ? "note" : "problem", it->db ? it->db : "",
                   (int)(it->id ? it->id_len : 0), it->id ? it->id : "", it->what, it->expected ? it->expected : "");
  if (n >= (int)sizeof line) n = sizeof line - 1;
  char *nt = arena_alloc(&fd->a, fd->len + (size_t)n + 1);
  if (fd->len) memcpy(nt, fd->text, fd->len);
  memcpy(nt + fd->len, line, (size_t)n + 1);
  fd->text = nt;
  fd->len += (size_t)n;
  return 0;
}

static store_check_counts run(vfx *f, found *fd) {
  arena_init(&fd->a, 0);
  fd->text = "";
  fd->len = 0;
  store_check_out out = {.cb = collect, .arg = fd};
  ASSERT_OK(icheck_run(f->t->s, "db", &out));
  return out.counts;
}

/* The check finds a problem whose line holds n1 and n2 (when not NULL). */
static void expect(vfx *f, const char *n1, const char *n2) {
  found fd;
  store_check_counts c = run(f, &fd);
  ASSERTF(c.problems > 0, "no problem found; findings:\n%s", fd.text);
  const char *p = fd.text;
  int hit = 0;
  while (*p && !hit) {
    const char *e = strchr(p, '\n');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    char *line = arena_strndup(&fd.a, p, l);
    hit = !strncmp(line, "problem|", 8) && strstr(line, n1) && (!n2 || strstr(line, n2));
    p += l + (e ? 1 : 0);
  }
  ASSERTF(hit, "no problem line with \"%s\"%s%s; findings:\n%s", n1, n2 ? " and " : "", n2 ? n2 : "", fd.text);
  arena_free(&fd.a);
}

/* ---- raw keys ---------------------------------------------------------------- */

/* b = ("divan", 1, prefix, "i", "v", Sig, sub) and w over it. */
static void vkey(vfx *f, dv_buf *b, tup_w *w, const char *sub) {
  buf_reset(b);
  tup_w_init(w, b);
  tup_strz(w, "divan");
  tup_int(w, 1);
  tup_int(w, f->prefix);
  tup_strz(w, "i");
  tup_strz(w, "v");
  tup_bytes(w, f->ix->sig, VW_SIG_LEN);
  tup_strz(w, sub);
}

static void raw_set(vfx *f, const dv_buf *k, const void *v, size_t vl) {
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(f->t->kv, &txn));
  ASSERT_OK(kv_set(txn, k->p, k->len, v, vl));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
}

static void raw_clear(vfx *f, const dv_buf *k) {
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(f->t->kv, &txn));
  ASSERT_OK(kv_clear(txn, k->p, k->len));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
}

/* The first KV under `pre` (a full prefix) whose decoded key holds needle
 * (NULL: any), skipping `skip` matches: its key and value. */
static int find_kv(vfx *f, const dv_buf *pre, const char *needle, int skip, dv_buf *key, dv_buf *val) {
  dv_buf e, txt;
  buf_init(&e);
  buf_init(&txt);
  buf_append(&e, pre->p, pre->len);
  buf_putc(&e, 0xff);
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(f->t->kv, &txn));
  kv_pair *p;
  int n, more, hit = 0;
  ASSERT_OK(kv_get_range(txn, pre->p, pre->len, e.p, e.len, 0, KV_SNAPSHOT, &p, &n, &more));
  for (int i = 0; i < n && !hit; i++) {
    buf_reset(&txt);
    tup_format(&txt, p[i].key, p[i].key_len);
    buf_putc(&txt, 0);
    if (needle && !strstr((const char *)txt.p, needle)) continue;
    if (skip-- > 0) continue;
    hit = 1;
    buf_reset(key);
    buf_append(key, p[i].key, p[i].key_len);
    if (val) {
      buf_reset(val);
      buf_append(val, p[i].val, p[i].val_len);
    }
  }
  kv_txn_destroy(txn);
  buf_free(&e);
  buf_free(&txt);
  return hit;
}

/* The row KV of doc `id` in slot s. */
static void row_of(vfx *f, size_t s, const char *id, dv_buf *key, dv_buf *val) {
  dv_buf pre;
  buf_init(&pre);
  tup_w w;
  vkey(f, &pre, &w, "k");
  tup_int(&w, (int64_t)s);
  ASSERT_OK(tup_w_finish(&w));
  char needle[32];
  snprintf(needle, sizeof needle, "\"%s\"", id);
  ASSERTF(find_kv(f, &pre, needle, 0, key, val), "no row of %s in slot %zu", id, s);
  buf_free(&pre);
}

/* (KeyJSON, ValueJSON) */
static void row_value(dv_buf *v, const char *kj, const char *vj) {
  buf_reset(v);
  tup_w w;
  tup_w_init(&w, v);
  tup_strz(&w, kj);
  tup_strz(&w, vj);
  ASSERT_OK(tup_w_finish(&w));
}

/* A row (key kj, value vj) of doc id in slot s, and its back-index row
 * unless no_back: the rows the builder writes for one emit. */
static void put_row(vfx *f, size_t s, const char *id, const char *kj, const char *vj, int no_back) {
  dv_arena a;
  arena_init(&a, 0);
  dv_buf ek, k, v;
  buf_init(&ek);
  buf_init(&k);
  buf_init(&v);
  ASSERT_OK(collate_key(&ek, storet_json(&a, kj)));
  tup_w w;
  vkey(f, &k, &w, "k");
  tup_int(&w, (int64_t)s);
  tup_bytes(&w, ek.p, ek.len);
  tup_strz(&w, id);
  tup_int(&w, 0);
  ASSERT_OK(tup_w_finish(&w));
  row_value(&v, kj, vj);
  raw_set(f, &k, v.p, v.len);
  if (!no_back) {
    vkey(f, &k, &w, "b");
    tup_strz(&w, id);
    tup_int(&w, (int64_t)s);
    tup_bytes(&w, ek.p, ek.len);
    tup_strz(&w, id);
    tup_int(&w, 0);
    ASSERT_OK(tup_w_finish(&w));
    raw_set(f, &k, "", 0);
  }
  buf_free(&ek);
  buf_free(&k);
  buf_free(&v);
  arena_free(&a);
}

/* ---- the tests ---------------------------------------------------------------- */

TEST(check_views_clean) {
  vfx f;
  build(&f);
  found fd;
  store_check_counts c = run(&f, &fd);
  ASSERTF(c.problems == 0 && c.notes == 0, "findings:\n%s", fd.text);
  /* rows: plain 36 live docs, sum's slot 36, js 36 */
  ASSERTF(c.index_rows == 3 * (NDOCS - NDOCS / 10), "index_rows %lld", (long long)c.index_rows);
  arena_free(&fd.a);
  /* the index behind the database: documents written, deleted and
   * purged since it was built are not compared, and nothing is wrong */
  dv_arena *a = &f.t->a;
  ASSERT_OK(storet_put(f.t->db, a, "new", "{\"v\":1000,\"g\":2}", NULL, 0, NULL));
  json_val *d;
  ASSERT_OK(storet_get(f.t->db, a, "d07", NULL, 0, &d));
  const json_val *rv = json_obj_getz(d, "_rev");
  ASSERT_OK(storet_put(f.t->db, a, "d07", NULL, arena_strndup(a, rv->u.s, rv->len), 1, NULL));
  ASSERT_OK(storet_get(f.t->db, a, "d08", NULL, 0, &d));
  rv = json_obj_getz(d, "_rev");
  store_rev pr = storet_rev_n(a, rv->u.s, rv->len), *out;
  size_t np;
  ASSERT_OK(store_purge(f.t->db, "d08", 3, &pr, 1, a, &out, &np));
  ASSERT_EQ(np, 1);
  c = run(&f, &fd);
  ASSERTF(c.problems == 0 && c.notes == 0, "findings:\n%s", fd.text);
  arena_free(&fd.a);
  /* and brought up to date again */
  refresh(&f);
  c = run(&f, &fd);
  ASSERTF(c.problems == 0 && c.notes == 0, "findings:\n%s", fd.text);
  ASSERTF(c.index_rows == 3 * (NDOCS - NDOCS / 10 - 1), "index_rows %lld", (long long)c.index_rows);
  arena_free(&fd.a);
  done(&f);
}

TEST(check_view_row_deleted) {
  vfx f;
  build(&f);
  dv_buf k;
  buf_init(&k);
  row_of(&f, f.slot_plain, "d07", &k, NULL);
  raw_clear(&f, &k);
  expect(&f, "view _design/v/plain: a row is missing", "|d07|");
  expect(&f, "back-index row whose row is missing", "|d07|");
  buf_free(&k);
  done(&f);
}

TEST(check_view_row_value) {
  vfx f;
  build(&f);
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  row_of(&f, f.slot_sum, "d09", &k, NULL);
  row_value(&v, "1", "999");
  raw_set(&f, &k, v.p, v.len);
  expect(&f, "a row differs: the index has key 1 value 999", "|d09|");
  /* the key text no longer the one its collation key was made from */
  row_value(&v, "\"one\"", "9");
  raw_set(&f, &k, v.p, v.len);
  expect(&f, "sorts under another key", "|d09|");
  buf_free(&k);
  buf_free(&v);
  done(&f);
}

TEST(check_view_stale_row) {
  vfx f;
  build(&f);
  /* d13 is deleted: a row left behind, with its back-index row */
  put_row(&f, f.slot_plain, "d13", "13", "\"n13\"", 0);
  expect(&f, "a stale row, key 13 value \"n13\"", "|d13|");
  /* without: nothing would ever clear it */
  put_row(&f, f.slot_js, "d23", "[3,\"d23\"]", "46", 1);
  expect(&f, "has no back-index row", "|d23|");
  /* rows of a document that is not there at all (no purge explains them) */
  put_row(&f, f.slot_plain, "zz", "77", "null", 0);
  expect(&f, "rows of a document the database does not have", "|zz|");
  done(&f);
}

TEST(check_view_tree) {
  vfx f;
  build(&f);
  dv_buf pre, k, v;
  buf_init(&pre);
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  vkey(&f, &pre, &w, "t");
  tup_int(&w, (int64_t)f.slot_sum);
  ASSERT_OK(tup_w_finish(&w));
  /* the root of the _sum/_count/_stats slot's tree (meta first, then
   * level 1 upward: the last node KV is the root), its reductions
   * changed: the count stays, one byte of the first reduction moves */
  dv_buf e;
  buf_init(&e);
  buf_append(&e, pre.p, pre.len);
  buf_putc(&e, 0xff);
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(f.t->kv, &txn));
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_get_range(txn, pre.p, pre.len, e.p, e.len, 0, KV_SNAPSHOT, &p, &n, &more));
  ASSERT(n >= 2);
  buf_append(&k, p[n - 1].key, p[n - 1].key_len);
  buf_append(&v, p[n - 1].val, p[n - 1].val_len);
  kv_txn_destroy(txn);
  ASSERT(v.len > 8 + 4 + 1);
  ((uint8_t *)v.p)[v.len - 1] ^= 0x01;
  raw_set(&f, &k, v.p, v.len);
  expect(&f, "view _design/v/count,stats,sum: its tree of counts and reductions differs from a rebuild", NULL);
  buf_free(&pre);
  buf_free(&k);
  buf_free(&v);
  buf_free(&e);
  done(&f);
}

/* The binary starts the JavaScript engine itself: a view row changed is
 * found from the command line (exit 1, a problem line). */
static int sh(const char *cmd, dv_arena *a, char **out) {
  FILE *p = popen(cmd, "r");
  ASSERT(p);
  size_t cap = 1 << 16, n = 0;
  char *b = arena_alloc(a, cap);
  size_t k;
  while ((k = fread(b + n, 1, cap - 1 - n, p)) > 0) n += k;
  b[n] = 0;
  *out = b;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(check_view_cli) {
  const char *bin = getenv("DIVAN_BIN");
  if (!bin) bin = "build/cc/divan";
  vfx f;
  build(&f);
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  row_of(&f, f.slot_js, "d10", &k, NULL);
  row_value(&v, "[2,\"d10\"]", "21");
  raw_set(&f, &k, v.p, v.len);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", f.t->dir);
  done(&f);
  dv_arena a;
  arena_init(&a, 0);
  char cmd[2048], *out;
  snprintf(cmd, sizeof cmd, "%s check --data '%s' 2>&1", bin, dir);
  int st = sh(cmd, &a, &out);
  ASSERTF(st == 1, "exit %d:\n%s", st, out);
  ASSERTF(strstr(out, "problem: db \"db\" doc \"d10\": view _design/v/js: a row differs: the index has key [2,\"d10\"] "
                      "value 21; expected key [2,\"d10\"] value 20 (a rebuild from the document)\n") &&
              strstr(out, "; 2 problems, 0 notes\n"),
          "%s", out);
  buf_free(&k);
  buf_free(&v);
  arena_free(&a);
}
