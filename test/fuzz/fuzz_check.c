/* fuzz_check.c — libFuzzer target for the store's invariant checker
 * (src/store/check.c: store_check_db, store_check_cluster), the code of
 * `divan check` that decodes every stored key and value of a database.
 *
 * Once per process a real store is made in a temporary directory (the
 * embedded engine, no fsync) through the store's own writes: documents
 * edited, deleted, in conflict (new_edits=false), with attachments, a
 * local document and a purge, in database "db". Its KVs are the
 * reference. Each input is a list of mutations of the reference, applied
 * before the check, the store being reset to the reference first:
 *   [op][a][b][len][bytes…] repeated (at most 24), op % 4 picks:
 *     0  clear reference KV a (of those under the database's prefix)
 *     1  replace KV a's value with bytes (len of them)
 *     2  xor byte b of KV a's value with len (a byte of it changed)
 *     3  add a KV: key = the database's subspace a % 9 ("r", "c", "d",
 *        "a", "l", "m", "p", "i", or a prefix no database names) + bytes
 *        (raw: any suffix, a tuple or not), value = the key's bytes reversed
 * The cluster rows (the database list, the prefix counter) stay as the
 * reference has them, so the store opens the database as it is. The check
 * must return (0 or an error), never crash, leak or hang; the reference
 * itself must check clean (else the target aborts at start: it would test
 * nothing).
 *
 * Build: make fuzzers (its own rule: it links kv/ and store/).
 * Seeds: test/fuzz/seeds/fuzz_check.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kv/kv.h"
#include "store/check.h"
#include "store/store.h"
#include "tuple/tuple.h"
#include "util/arena.h"

#define CHECK(c)                                                                  \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "fuzz_check: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                    \
    }                                                                             \
  } while (0)

typedef struct ref_kv {
  uint8_t *k, *v;
  size_t kn, vn;
  int mutable_; /* under the database's prefix */
} ref_kv;

static struct {
  kv_db *kv;
  store *s;
  int64_t prefix;
  ref_kv *r;
  size_t n;
  size_t *mut; /* indexes of the mutable ones */
  size_t n_mut;
  uint8_t root[64]; /* ("divan",) */
  size_t root_len;
  char dir[64];     /* the store's temporary directory */
} G;

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(path);
}

/* At exit (libFuzzer ends with exit()): the store's directory removed.
 * The store is left open: RocksDB's own static objects may already be
 * gone by then, and closing it from an atexit handler crashes. */
static void cleanup(void) {
  if (G.dir[0]) nftw(G.dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void edit(store_db *db, dv_arena *a, const char *json, int new_edits) {
  json_val *doc;
  CHECK(json_parse(a, json, strlen(json), NULL, &doc, NULL) == 0);
  store_edit e;
  memset(&e, 0, sizeof e);
  CHECK(store_edit_from_json(a, doc, new_edits, &e) == 0);
  CHECK(store_update(db, NULL, &e, 1, new_edits) == 0);
  CHECK(e.rc == 0);
}

static void build(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(G.dir, sizeof G.dir, "%s/fuzz_check.XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
  const char *dir = mkdtemp(G.dir);
  CHECK(dir);
  atexit(cleanup);
  kv_rocks_opts ko = {.create_if_missing = 1, .no_sync = 1, .memory_mb = 16, .reserve_mb = -1};
  CHECK(kv_open_rocks(dir, &ko, &G.kv) == 0);
  CHECK(store_open(G.kv, NULL, &G.s) == 0);
  CHECK(store_db_create(G.s, "db") == 0);
  CHECK(store_db_create(G.s, "other") == 0);
  store_db *db;
  CHECK(store_db_open(G.s, "db", &db) == 0);
  dv_arena a;
  arena_init(&a, 0);
  edit(db, &a, "{\"_id\":\"a\",\"v\":1,\"deep\":{\"x\":[1,2,{}],\"s\":\"text\"}}", 1);
  edit(db, &a, "{\"_id\":\"b\",\"v\":2}", 1);
  edit(db, &a, "{\"_id\":\"c\",\"_rev\":\"2-0123456789abcdef0123456789abcdef\",\"_revisions\":{\"start\":2,\"ids\":["
               "\"0123456789abcdef0123456789abcdef\",\"11111111111111111111111111111111\"]},\"v\":5}",
       0);
  edit(db, &a, "{\"_id\":\"c\",\"_rev\":\"1-22222222222222222222222222222222\",\"v\":6}", 0);
  edit(db, &a, "{\"_id\":\"d\",\"_rev\":\"1-33333333333333333333333333333333\",\"_deleted\":true}", 0);
  edit(db, &a, "{\"_id\":\"e\",\"v\":7,\"_attachments\":{\"f.txt\":{\"content_type\":\"text/plain\","
               "\"data\":\"aGVsbG8gd29ybGQ=\"}}}",
       1);
  edit(db, &a, "{\"_id\":\"p\",\"_rev\":\"1-44444444444444444444444444444444\",\"v\":8}", 0);
  store_rev pr = {.pos = 1}, *purged;
  size_t np;
  {
    json_val *d;
    CHECK(store_doc_get(db, "p", 1, NULL, 0, &a, &d) == 0);
    const json_val *rv = json_obj_getz(d, "_rev");
    CHECK(rv);
    CHECK(store_rev_parse(rv->u.s, rv->len, &a, &pr) == 0);
  }
  CHECK(store_purge(db, "p", 1, &pr, 1, &a, &purged, &np) == 0);
  json_val *ld;
  CHECK(json_parse(&a, "{\"k\":\"v\"}", 9, NULL, &ld, NULL) == 0);
  CHECK(store_local_put(db, "_local/x", 8, ld, 0, 0, 0, NULL) == 0);
  store_db_info in;
  CHECK(store_db_info_get(db, &in) == 0);
  G.prefix = in.prefix;
  store_db_close(db);
  CHECK(store_db_updates_consume(G.s) >= 0);
  arena_free(&a);
  /* the reference: every KV under ("divan",) */
  dv_buf root, end, dp;
  buf_init(&root);
  buf_init(&end);
  buf_init(&dp);
  tup_w w;
  tup_w_init(&w, &root);
  tup_strz(&w, "divan");
  CHECK(tup_w_finish(&w) == 0 && root.len < sizeof G.root);
  memcpy(G.root, root.p, root.len);
  G.root_len = root.len;
  buf_append(&end, root.p, root.len);
  buf_putc(&end, 0xff);
  tup_w_init(&w, &dp);
  tup_strz(&w, "divan");
  tup_int(&w, 1);
  tup_int(&w, G.prefix);
  CHECK(tup_w_finish(&w) == 0);
  kv_txn *txn;
  CHECK(kv_txn_begin(G.kv, &txn) == 0);
  kv_pair *p;
  int n, more;
  CHECK(kv_get_range(txn, root.p, root.len, end.p, end.len, 0, KV_SNAPSHOT, &p, &n, &more) == 0);
  CHECK(!more && n > 0);
  G.r = calloc((size_t)n, sizeof *G.r);
  G.mut = calloc((size_t)n, sizeof *G.mut);
  CHECK(G.r && G.mut);
  for (int i = 0; i < n; i++) {
    ref_kv *r = &G.r[G.n++];
    r->k = malloc(p[i].key_len + 1);
    r->v = malloc(p[i].val_len + 1);
    CHECK(r->k && r->v);
    memcpy(r->k, p[i].key, p[i].key_len);
    memcpy(r->v, p[i].val, p[i].val_len);
    r->kn = p[i].key_len;
    r->vn = p[i].val_len;
    r->mutable_ = p[i].key_len > dp.len && !memcmp(p[i].key, dp.p, dp.len);
    if (r->mutable_) G.mut[G.n_mut++] = G.n - 1;
  }
  kv_txn_destroy(txn);
  CHECK(G.n_mut > 0);
  buf_free(&root);
  buf_free(&end);
  buf_free(&dp);
}

/* Reset the store to the reference with the input's mutations. */
static void apply(const uint8_t *data, size_t size) {
  /* per reference KV: its value now (NULL: cleared) */
  size_t n = G.n;
  const uint8_t **val = calloc(n, sizeof *val);
  size_t *vn = calloc(n, sizeof *vn);
  uint8_t **own = calloc(n, sizeof *own);
  CHECK(val && vn && own);
  for (size_t i = 0; i < n; i++) {
    val[i] = G.r[i].v;
    vn[i] = G.r[i].vn;
  }
  kv_txn *txn;
  CHECK(kv_txn_begin(G.kv, &txn) == 0);
  uint8_t end[64];
  memcpy(end, G.root, G.root_len);
  end[G.root_len] = 0xff;
  CHECK(kv_clear_range(txn, G.root, G.root_len, end, G.root_len + 1) == 0);
  static const char *const subs[] = {"r", "c", "d", "a", "l", "m", "p", "i"};
  size_t i = 0;
  for (int ops = 0; ops < 24 && i + 4 <= size; ops++) {
    uint8_t op = data[i], x = data[i + 1], y = data[i + 2];
    size_t len = data[i + 3];
    i += 4;
    if (len > size - i) len = size - i;
    const uint8_t *bytes = data + i;
    size_t m = G.mut[x % G.n_mut];
    switch (op % 4) {
    case 0: val[m] = NULL; break;
    case 1:
      if (!val[m]) break;
      val[m] = bytes;
      vn[m] = len;
      i += len;
      break;
    case 2:
      if (!val[m] || !vn[m]) break;
      if (!own[m]) {
        own[m] = malloc(vn[m]);
        CHECK(own[m]);
        memcpy(own[m], val[m], vn[m]);
        val[m] = own[m];
      }
      own[m][y % vn[m]] ^= (uint8_t)(len ? len : 1);
      break;
    default: {
      dv_buf k, v;
      buf_init(&k);
      buf_init(&v);
      tup_w w;
      tup_w_init(&w, &k);
      tup_strz(&w, "divan");
      tup_int(&w, 1);
      if (x % 9 == 8) {
        tup_int(&w, G.prefix + 1000 + y); /* no database has it */
      } else {
        tup_int(&w, G.prefix);
        tup_strz(&w, subs[x % 9]);
      }
      CHECK(tup_w_finish(&w) == 0);
      buf_append(&k, bytes, len);
      for (size_t j = 0; j < len; j++) buf_putc(&v, bytes[len - 1 - j]);
      CHECK(!buf_error(&k) && !buf_error(&v));
      if (k.len <= KV_MAX_KEY) CHECK(kv_set(txn, k.p, k.len, v.p, v.len) == 0);
      buf_free(&k);
      buf_free(&v);
      i += len;
    }
    }
  }
  for (size_t j = 0; j < n; j++)
    if (val[j]) CHECK(kv_set(txn, G.r[j].k, G.r[j].kn, val[j], vn[j]) == 0);
  CHECK(kv_commit(txn) == 0);
  kv_txn_destroy(txn);
  for (size_t j = 0; j < n; j++) free(own[j]);
  free(own);
  free(val);
  free(vn);
}

static int count_cb(void *arg, const store_check_item *it) {
  /* every finding is a readable sentence */
  CHECK(it->what && it->what[0]);
  (void)arg;
  return 0;
}

static store_check_counts check(void) {
  store_check_out out = {.cb = count_cb};
  int rc = store_check_cluster(G.s, &out);
  (void)rc;
  rc = store_check_db(G.s, "db", &out);
  (void)rc;
  return out.counts;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  build();
  apply(NULL, 0);
  store_check_counts c = check();
  if (c.problems) {
    fprintf(stderr, "fuzz_check: the reference store has %lld problems\n", (long long)c.problems);
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  apply(data, size);
  (void)check();
  return 0;
}
