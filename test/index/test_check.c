/* test_check.c — `divan check` (store/check.h, index/icheck.h,
 * cli/check.h): a store built through the layer's own writes — documents
 * edited, deleted, in conflict, with attachments, local documents, a
 * purge, several databases and a deleted one, a Mango index and a view —
 * checks clean (on the embedded engine and on the fdb backend over the
 * libfdb_c double); then each test breaks one invariant by writing or
 * clearing raw keys through kv.h and asserts the check reports it. The
 * last test runs the `divan check` binary (DIVAN_BIN) for its exit status
 * and report lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/check.h"
#include "index/icheck.h"
#include "index/mindex.h"
#include "idxt.h"
#include "store/storet.h"
#include "test.h"

typedef struct fx {
  storet *t;
  int64_t prefix, prefix2, gone_prefix;
} fx;

/* Build the store every test starts from. */
static void build(fx *f) {
  storet *t = f->t = idxt_mango_db();
  dv_arena *a = &t->a;
  store_db *db = t->db;
  ASSERT_OK(storet_put_doc(db, a, "{\"_id\":\"_design/v\",\"views\":{\"v\":{\"map\":\"function(doc){emit(doc.v,1)}\"}}}",
                           1, NULL));
  idxt_edge_docs(db, a);
  store_rev r;
  ASSERT_OK(storet_put(db, a, "p", "{\"v\":8}", NULL, 0, &r));
  store_rev *purged;
  size_t np;
  ASSERT_OK(store_purge(db, "p", 1, &r, 1, a, &purged, &np));
  ASSERT_EQ(np, 1);
  ASSERT_OK(store_local_put(db, "_local/x", 8, storet_json(a, "{\"k\":\"v\"}"), 0, 0, 0, NULL));
  store_db *db2 = storet_create_db(t, "db2");
  ASSERT_OK(storet_put(db2, a, "only", "{\"w\":1}", NULL, 0, NULL));
  store_db *gone = storet_create_db(t, "gone");
  ASSERT_OK(storet_put(gone, a, "x", "{}", NULL, 0, NULL));
  store_db_info in;
  ASSERT_OK(store_db_info_get(db, &in));
  f->prefix = in.prefix;
  ASSERT_OK(store_db_info_get(db2, &in));
  f->prefix2 = in.prefix;
  ASSERT_OK(store_db_info_get(gone, &in));
  f->gone_prefix = in.prefix;
  store_db_close(db2);
  store_db_close(gone);
  ASSERT_OK(store_db_delete(t->s, "gone"));
  ASSERT(store_db_updates_consume(t->s) >= 0);
  mi_def *d;
  size_t n;
  ASSERT_OK(mi_list(db, a, &d, &n));
  ASSERT_EQ(n, 1);
  ASSERT_OK(mindex_wait(db, d[0].sig, 60000));
}

static void done(fx *f) {
  mindex_stop();
  storet_close(f->t);
}

typedef struct found {
  dv_arena a;
  char *text; /* every finding, one per line */
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

/* Run the whole check; returns its counts, the findings in fd. */
static store_check_counts run(fx *f, found *fd) {
  arena_init(&fd->a, 0);
  fd->text = "";
  fd->len = 0;
  store_check_out out = {.cb = collect, .arg = fd};
  ASSERT_OK(icheck_run(f->t->s, NULL, &out));
  return out.counts;
}

/* Assert the check finds a problem whose line contains each of needles. */
static void expect(fx *f, const char *n1, const char *n2) {
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

/* ---- raw keys ------------------------------------------------------------- */

/* b = ("divan", 1, prefix, sub) and w over it. */
static void pkey(dv_buf *b, tup_w *w, int64_t prefix, const char *sub) {
  buf_reset(b);
  tup_w_init(w, b);
  tup_strz(w, "divan");
  tup_int(w, 1);
  tup_int(w, prefix);
  if (sub) tup_strz(w, sub);
}

static void raw_set(fx *f, const dv_buf *k, const void *v, size_t vl) {
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(f->t->kv, &txn));
  ASSERT_OK(kv_set(txn, k->p, k->len, v, vl));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
}

static void raw_clear(fx *f, const uint8_t *k, size_t kl) {
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(f->t->kv, &txn));
  ASSERT_OK(kv_clear(txn, k, kl));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
}

/* The keys under prefix+(sub,) whose decoded text contains needle: the
 * first one into key (and its value into val when not NULL). */
static int find_key(fx *f, int64_t prefix, const char *sub, const char *needle, dv_buf *key, dv_buf *val) {
  dv_buf b, e, txt;
  buf_init(&b);
  buf_init(&e);
  buf_init(&txt);
  tup_w w;
  pkey(&b, &w, prefix, sub);
  buf_append(&e, b.p, b.len);
  buf_putc(&e, 0xff);
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(f->t->kv, &txn));
  kv_pair *p;
  int n, more, hit = 0;
  ASSERT_OK(kv_get_range(txn, b.p, b.len, e.p, e.len, 0, KV_SNAPSHOT, &p, &n, &more));
  for (int i = 0; i < n && !hit; i++) {
    buf_reset(&txt);
    tup_format(&txt, p[i].key, p[i].key_len);
    buf_putc(&txt, 0);
    if (strstr((const char *)txt.p, needle)) {
      hit = 1;
      buf_reset(key);
      buf_append(key, p[i].key, p[i].key_len);
      if (val) {
        buf_reset(val);
        buf_append(val, p[i].val, p[i].val_len);
      }
    }
  }
  kv_txn_destroy(txn);
  buf_free(&b);
  buf_free(&e);
  buf_free(&txt);
  return hit;
}

/* ---- the tests ------------------------------------------------------------ */

static void clean(void) {
  fx f;
  build(&f);
  found fd;
  store_check_counts c = run(&f, &fd);
  ASSERTF(c.problems == 0, "findings:\n%s", fd.text);
  ASSERT(c.databases >= 2);
  ASSERT(c.documents >= 6);
  ASSERT(c.revisions >= 8);
  ASSERT(c.changes >= 6);
  ASSERT_EQ(c.attachments, 2);
  ASSERT_EQ(c.local_docs, 1);
  ASSERT_EQ(c.purge_infos, 1);
  ASSERT(c.index_rows >= 3);
  ASSERT(c.db_updates >= 3);
  /* one database alone */
  store_check_out out = {0};
  ASSERT_OK(icheck_run(f.t->s, "db2", &out));
  ASSERT_EQ(out.counts.problems, 0);
  ASSERT_EQ(out.counts.documents, 1);
  ASSERT_EQ(icheck_run(f.t->s, "gone", &out), DV_ENO_DB);
  arena_free(&fd.a);
  done(&f);
}

TEST(check_clean) { clean(); }

TEST(check_clean_fdb) {
  setenv("DV_STORE_BACKEND", "fdb", 1);
  clean();
}

TEST(check_changes_rows) {
  fx f;
  build(&f);
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  /* a second changes row for "a": the same value at another stamp */
  ASSERT(find_key(&f, f.prefix, "c", "", &k, &v));
  dv_buf k2;
  buf_init(&k2);
  tup_w w;
  pkey(&k2, &w, f.prefix, "c");
  tup_int(&w, 0);
  uint8_t vs[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
  tup_vs(&w, vs);
  raw_set(&f, &k2, v.p, v.len);
  expect(&f, "one row per document", NULL);
  /* and "a"'s own row gone */
  raw_clear(&f, k2.p, k2.len);
  raw_clear(&f, k.p, k.len);
  expect(&f, "no changes row for winner", NULL);
  buf_free(&k);
  buf_free(&k2);
  buf_free(&v);
  done(&f);
}

TEST(check_branches) {
  fx f;
  build(&f);
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  /* "c" has three branches: rewrite its winner's BranchCount to 2 */
  ASSERT(find_key(&f, f.prefix, "r", "\"c\", true, 2", &k, &v));
  tup_r r;
  tup_item it[8];
  tup_r_init(&r, v.p, v.len);
  int n = 0;
  while (n < 8 && tup_next(&r, &it[n]) == 1) n++;
  ASSERT(n >= 6);
  dv_buf nv;
  buf_init(&nv);
  tup_w w;
  tup_w_init(&w, &nv);
  for (int i = 0; i < n; i++) {
    if (i == 2) tup_int(&w, 2);
    else ASSERT_OK(tup_put_item(&w, &it[i]));
  }
  raw_set(&f, &k, nv.p, nv.len);
  expect(&f, "BranchCount is 2", "|c|");
  /* a losing branch that claims to be the winner too */
  ASSERT(find_key(&f, f.prefix, "r", "\"c\", true, 1", &k, NULL));
  buf_reset(&nv);
  tup_w_init(&w, &nv);
  for (int i = 0; i < n; i++) {
    if (i == 3) {
      tup_nest_begin(&w);
      tup_nest_end(&w);
    } else {
      ASSERT_OK(tup_put_item(&w, &it[i]));
    }
  }
  raw_set(&f, &k, nv.p, nv.len);
  expect(&f, "2 branches carry a Sequence", NULL);
  buf_free(&k);
  buf_free(&v);
  buf_free(&nv);
  done(&f);
}

TEST(check_bodies) {
  fx f;
  build(&f);
  dv_buf k;
  buf_init(&k);
  tup_w w;
  /* a body for a revision that is not a leaf (a's first) */
  pkey(&k, &w, f.prefix, "d");
  tup_strz(&w, "a");
  tup_bool(&w, 1);
  tup_int(&w, 1);
  uint8_t h[16] = {1};
  tup_bytes(&w, h, 16);
  uint8_t zero = 0x14; /* tuple (0,) */
  raw_set(&f, &k, &zero, 1);
  expect(&f, "which is not a leaf", "|a|");
  raw_clear(&f, k.p, k.len);
  /* a leaf's body loses one leaf KV: its size no longer matches */
  ASSERT(find_key(&f, f.prefix, "d", "\"deep\"", &k, NULL));
  raw_clear(&f, k.p, k.len);
  expect(&f, "body takes", "|a|");
  /* a live leaf with no body at all: "c"'s winner */
  ASSERT(find_key(&f, f.prefix, "d", "\"c\", true, 2", &k, NULL));
  raw_clear(&f, k.p, k.len);
  expect(&f, "has body KVs but no RevisionMetadata", "|c|");
  buf_free(&k);
  done(&f);
}

TEST(check_counters) {
  fx f;
  build(&f);
  dv_buf k;
  buf_init(&k);
  tup_w w;
  pkey(&k, &w, f.prefix, "m");
  tup_strz(&w, "doc_count");
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(f.t->kv, &txn));
  uint8_t one[8] = {1};
  ASSERT_OK(kv_atomic(txn, KV_ADD, k.p, k.len, one, 8));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
  expect(&f, "doc_count is", NULL);
  buf_free(&k);
  done(&f);
}

TEST(check_attachments) {
  fx f;
  build(&f);
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  /* one content's chunk 0 gone */
  ASSERT(find_key(&f, f.prefix, "a", "\"d\"", &k, &v));
  raw_clear(&f, k.p, k.len);
  expect(&f, "has 0 bytes of content", "|d|");
  raw_set(&f, &k, v.p, v.len);
  /* its bytes changed: the digest no longer matches */
  ((uint8_t *)v.p)[0] ^= 1;
  raw_set(&f, &k, v.p, v.len);
  expect(&f, "MD5 differs", "|d|");
  ((uint8_t *)v.p)[0] ^= 1;
  raw_set(&f, &k, v.p, v.len);
  /* content no leaf references */
  tup_w w;
  pkey(&k, &w, f.prefix, "a");
  tup_strz(&w, "d");
  uint8_t id[16] = {9, 9, 9};
  tup_bytes(&w, id, 16);
  tup_int(&w, 0);
  raw_set(&f, &k, "x", 1);
  expect(&f, "no leaf references", "|d|");
  buf_free(&k);
  buf_free(&v);
  done(&f);
}

TEST(check_local_docs) {
  fx f;
  build(&f);
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  pkey(&k, &w, f.prefix, "l");
  tup_strz(&w, "_local/x");
  buf_init(&v);
  tup_w_init(&w, &v);
  tup_int(&w, 0);
  tup_int(&w, 1);
  tup_int(&w, 2); /* two chunks, one stored */
  raw_set(&f, &k, v.p, v.len);
  expect(&f, "the local document has 1 chunks", "_local/x");
  buf_free(&k);
  buf_free(&v);
  done(&f);
}

TEST(check_dead_prefix) {
  fx f;
  build(&f);
  dv_buf k;
  buf_init(&k);
  tup_w w;
  pkey(&k, &w, f.gone_prefix, "r");
  tup_strz(&w, "x");
  raw_set(&f, &k, "", 0);
  char want[64];
  snprintf(want, sizeof want, "dead database prefix %lld", (long long)f.gone_prefix);
  expect(&f, want, NULL);
  buf_free(&k);
  done(&f);
}

TEST(check_db_updates) {
  fx f;
  build(&f);
  dv_buf k;
  buf_init(&k);
  tup_w w;
  tup_w_init(&w, &k);
  tup_strz(&w, "divan");
  tup_int(&w, 0);
  tup_strz(&w, "db_updates_by_name");
  tup_strz(&w, "db2");
  raw_clear(&f, k.p, k.len);
  expect(&f, "no _db_updates row for the database", "|db2|");
  buf_free(&k);
  done(&f);
}

TEST(check_purge_infos) {
  fx f;
  build(&f);
  dv_buf k, v;
  buf_init(&k);
  buf_init(&v);
  tup_w w;
  pkey(&k, &w, f.prefix, "m");
  tup_strz(&w, "purge_seq");
  tup_w_init(&w, &v);
  tup_int(&w, 0);
  raw_set(&f, &k, v.p, v.len);
  expect(&f, "purge info 1 is kept", NULL);
  /* and a meta key the layout does not know */
  pkey(&k, &w, f.prefix, "m");
  tup_strz(&w, "bogus");
  raw_set(&f, &k, "", 0);
  expect(&f, "unknown meta key \"bogus\"", NULL);
  buf_free(&k);
  buf_free(&v);
  done(&f);
}

TEST(check_mango_index) {
  fx f;
  build(&f);
  dv_buf k;
  buf_init(&k);
  /* the back-index row of one document gone */
  ASSERT(find_key(&f, f.prefix, "i", ", \"b\", \"a\")", &k, NULL));
  raw_clear(&f, k.p, k.len);
  expect(&f, "differs from a rebuild", "back-index");
  buf_free(&k);
  done(&f);
}

/* The binary: exit 0 and the summary when clean, 1 and a problem line
 * when not, 2 when the store cannot be opened. */
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

TEST(check_cli) {
  const char *bin = getenv("DIVAN_BIN");
  if (!bin) bin = "build/cc/divan";
  fx f;
  build(&f);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", f.t->dir);
  dv_arena a;
  arena_init(&a, 0);
  char cmd[4096], *out;
  /* the store must be closed: one process owns a data directory */
  dv_buf k;
  buf_init(&k);
  tup_w w;
  pkey(&k, &w, f.prefix, "m");
  tup_strz(&w, "doc_del_count");
  done(&f);
  snprintf(cmd, sizeof cmd, "%s check --data '%s' 2>&1", bin, dir);
  int st = sh(cmd, &a, &out);
  ASSERTF(st == 0, "exit %d:\n%s", st, out);
  ASSERTF(strstr(out, "checked: ") && strstr(out, " documents, ") && strstr(out, "; 0 problems"), "%s", out);
  snprintf(cmd, sizeof cmd, "%s check --data '%s' --db db2 2>&1", bin, dir);
  st = sh(cmd, &a, &out);
  ASSERTF(st == 0 && strstr(out, "checked: 1 databases, 1 documents"), "exit %d:\n%s", st, out);
  snprintf(cmd, sizeof cmd, "%s check --data '%s' --db nosuch 2>&1", bin, dir);
  st = sh(cmd, &a, &out);
  ASSERTF(st == 2 && strstr(out, "no database nosuch"), "exit %d:\n%s", st, out);
  snprintf(cmd, sizeof cmd, "%s check --data '%s/none' 2>&1", bin, dir);
  st = sh(cmd, &a, &out);
  ASSERTF(st == 2 && strstr(out, "cannot open"), "exit %d:\n%s", st, out);
  snprintf(cmd, sizeof cmd, "%s check --bogus 2>&1", bin);
  ASSERT_EQ(sh(cmd, &a, &out), 2);
  /* break a counter */
  kv_db *kv;
  ASSERT_OK(storet_kv_open(dir, 0, &kv));
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(kv, &txn));
  uint8_t one[8] = {1};
  ASSERT_OK(kv_atomic(txn, KV_ADD, k.p, k.len, one, 8));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
  kv_close(kv);
  snprintf(cmd, sizeof cmd, "%s check --data '%s' 2>&1", bin, dir);
  st = sh(cmd, &a, &out);
  ASSERTF(st == 1, "exit %d:\n%s", st, out);
  ASSERTF(strstr(out, "problem: db \"db\": doc_del_count is 2; expected 1 (what the revisions subspace counts)\n") &&
              strstr(out, "; 1 problems, 0 notes\n"),
          "%s", out);
  buf_free(&k);
  arena_free(&a);
}

/* Add one to a database's doc_count, through kv.h. */
static void break_counter(kv_db *kv, store *s, const char *name) {
  store_db *db;
  store_db_info in;
  ASSERT_OK(store_db_open(s, name, &db));
  ASSERT_OK(store_db_info_get(db, &in));
  store_db_close(db);
  dv_buf k;
  buf_init(&k);
  tup_w w;
  pkey(&k, &w, in.prefix, "m");
  tup_strz(&w, "doc_count");
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(kv, &txn));
  uint8_t one[8] = {1};
  ASSERT_OK(kv_atomic(txn, KV_ADD, k.p, k.len, one, 8));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
  buf_free(&k);
  store_check_out out = {0};
  ASSERT_OK(icheck_run(s, name, &out));
  ASSERT_EQ(out.counts.problems, 1);
}

/* Break database DV_CHECK_DB's doc_count in the store at DV_CHECK_DIR
 * (the online suite, check.test.js, runs this between two servers), or,
 * without them, in this file's own store; either way the check must then
 * report exactly that problem. */
TEST(check_break_counter) {
  const char *dir = getenv("DV_CHECK_DIR"), *name = getenv("DV_CHECK_DB");
  if (dir && name) {
    kv_db *kv;
    store *s;
    kv_rocks_opts o = {.create_if_missing = 0};
    ASSERT_OK(kv_open_rocks(dir, &o, &kv));
    ASSERT_OK(store_open(kv, NULL, &s));
    break_counter(kv, s, name);
    store_close(s);
    kv_close(kv);
    return;
  }
  fx f;
  build(&f);
  break_counter(f.t->kv, f.t->s, "db2");
  done(&f);
}

/* A corrupt key that goes on with 0xff bytes past its group (found by
 * fuzz_check): the walkers once sought the group's prefix + 0xff, which
 * such a key passes, and read it again for ever. Each walker (groups:
 * local documents; skips: bodies, dead prefixes) must step past it and
 * say what it is. */
TEST(check_key_past_group) {
  fx f;
  build(&f);
  static const uint8_t ff[] = {0xff, 0xff, 0xff, 0x07};
  const char *subs[] = {"l", "d", NULL};
  for (int i = 0; subs[i] || i == 2; i++) {
    dv_buf k;
    buf_init(&k);
    tup_w w;
    if (subs[i]) {
      pkey(&k, &w, f.prefix, subs[i]);
      tup_strz(&w, "zz");
    } else {
      pkey(&k, &w, f.gone_prefix, NULL);
    }
    ASSERT_OK(tup_w_finish(&w));
    buf_append(&k, ff, sizeof ff);
    raw_set(&f, &k, "", 0);
    found fd;
    store_check_counts c = run(&f, &fd);
    ASSERTF(c.problems > 0, "no problem for a key under %s; findings:\n%s", subs[i] ? subs[i] : "a dead prefix", fd.text);
    arena_free(&fd.a);
    raw_clear(&f, k.p, k.len);
    buf_free(&k);
    if (!subs[i]) break;
  }
  done(&f);
}

/* The checker over a store whose KVs libFuzzer mutates (test/fuzz/fuzz_check.c). */
TEST(check_fuzz_smoke) { test_fuzz_smoke("fuzz_check"); }
