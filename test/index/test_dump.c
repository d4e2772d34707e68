/* test_dump.c — store_dump / store_load (store/dump.h) and the dump file
 * format (store/dumpfmt.h): a database with live, deleted and conflicted
 * documents, attachments, a local document, _security, _revs_limit, a
 * purge and a Mango index is dumped and loaded into a fresh embedded store
 * and into the fdb backend over the libfdb_c double; the loaded database's
 * keys are the source's byte for byte (its prefix aside), its changes feed
 * and update_seq are the source's, both check clean, and a write to it
 * sorts after every copied row. A write made between the dump's full pass
 * and its catch-up arrives with one changes row per document. Truncated,
 * bit-flipped, newer-version and garbage files are refused and leave no
 * database and no key under any new prefix. Here (not test/store) because
 * the Mango index and the index check are the index layer's. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "index/icheck.h"
#include "index/mindex.h"
#include "store/dump.h"
#include "kv/kvt.h"
#include "idxt.h"
#include "store/storet.h"
#include "test.h"

/* The source: database "db" on the embedded engine, index hooks on. */
static storet *build(void) {
  storet *t = idxt_mango_db();
  dv_arena *a = &t->a;
  store_db *db = t->db;
  idxt_edge_docs(db, a);
  store_rev r;
  for (int i = 0; i < 30; i++) {
    char id[16], body[64];
    snprintf(id, sizeof id, "n%02d", i);
    snprintf(body, sizeof body, "{\"v\":%d,\"s\":\"%0*d\"}", 100 + i, i + 1, 7);
    ASSERT_OK(storet_put(db, a, id, body, NULL, 0, NULL));
  }
  ASSERT_OK(storet_put(db, a, "p", "{\"v\":8}", NULL, 0, &r));
  store_rev *purged;
  size_t np;
  ASSERT_OK(store_purge(db, "p", 1, &r, 1, a, &purged, &np));
  ASSERT_EQ(np, 1);
  ASSERT_OK(store_local_put(db, "_local/x", 8, storet_json(a, "{\"k\":\"v\"}"), 0, 0, 0, NULL));
  ASSERT_OK(store_db_set_security(db, storet_json(a, "{\"members\":{\"names\":[\"bob\"]}}")));
  ASSERT_OK(store_db_set_revs_limit(db, 77));
  mi_def *d;
  size_t n;
  ASSERT_OK(mi_list(db, a, &d, &n));
  ASSERT_EQ(n, 1);
  ASSERT_OK(mindex_wait(db, d[0].sig, 60000));
  return t;
}

/* ---- the file in memory ---------------------------------------------------- */

static int mem_out(void *arg, const uint8_t *p, size_t n) {
  buf_append(arg, p, n);
  return buf_error(arg) ? DV_ENOMEM : 0;
}

typedef struct mem_in {
  const uint8_t *p;
  size_t n, at;
} mem_in;

static long mem_read(void *arg, uint8_t *p, size_t n) {
  mem_in *m = arg;
  if (n > m->n - m->at) n = m->n - m->at;
  memcpy(p, m->p + m->at, n);
  m->at += n;
  return (long)n;
}

static long file_read(void *arg, uint8_t *p, size_t n) {
  size_t k = fread(p, 1, n, arg);
  return k == 0 && ferror(arg) ? DV_EIO : (long)k;
}

static int load_mem(store *s, const char *name, const uint8_t *p, size_t n, const char **why) {
  mem_in m = {p, n, 0};
  return store_load(s, name, NULL, mem_read, &m, NULL, why);
}

/* ---- comparing ------------------------------------------------------------- */

/* Every KV under ("divan",1,prefix), prefix stripped, as len-prefixed
 * bytes in out. */
static void db_kvs(kv_db *kv, int64_t prefix, dv_buf *out) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  tup_w_init(&w, &b);
  tup_strz(&w, "divan");
  tup_int(&w, 1);
  tup_int(&w, prefix);
  size_t plen = b.len;
  buf_append(&e, b.p, b.len);
  buf_putc(&e, 0xff);
  buf_reset(out);
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(kv, &txn));
  for (;;) {
    kv_pair *ps;
    int np, more;
    ASSERT_OK(kv_get_range(txn, b.p, b.len, e.p, e.len, 1000, KV_SNAPSHOT, &ps, &np, &more));
    for (int i = 0; i < np; i++) {
      uint32_t l = (uint32_t)(ps[i].key_len - plen);
      buf_append(out, &l, 4);
      buf_append(out, ps[i].key + plen, l);
      l = (uint32_t)ps[i].val_len;
      buf_append(out, &l, 4);
      buf_append(out, ps[i].val, l);
    }
    if (!more || !np) break;
    buf_reset(&b);
    buf_append(&b, ps[np - 1].key, ps[np - 1].key_len);
    buf_putc(&b, 0);
    kv_txn_reset(txn);
  }
  kv_txn_destroy(txn);
  ASSERT(!buf_error(out));
  buf_free(&b);
  buf_free(&e);
}

static void check_store_clean(store *s, const char *name) {
  store_check_out out = {0};
  ASSERT_OK(store_check_db(s, name, &out));
  ASSERTF(out.counts.problems == 0, "%s: %lld problems", name, (long long)out.counts.problems);
  store_check_out cl = {0};
  ASSERT_OK(store_check_cluster(s, &cl));
  ASSERTF(cl.counts.problems == 0, "cluster: %lld problems", (long long)cl.counts.problems);
}

/* The loaded database is the source: keys, feed, update_seq, security,
 * documents; the new Incarnation is the source's + 1. */
static void same_db(storet *src, store *dst_s, kv_db *dst_kv, const char *name, int lower_versions) {
  dv_arena *a = &src->a;
  store_db *dst;
  ASSERT_OK(store_db_open(dst_s, name, &dst));
  store_db_info si, di;
  ASSERT_OK(store_db_info_get(src->db, &si));
  ASSERT_OK(store_db_info_get(dst, &di));
  ASSERT_EQ(store_seq_cmp(&si.update_seq, &di.update_seq), 0);
  ASSERT_EQ(di.incarnation, si.incarnation + 1);
  ASSERT_EQ(si.doc_count, di.doc_count);
  ASSERT_EQ(si.doc_del_count, di.doc_del_count);
  ASSERT_EQ(di.revs_limit, 77);
  dv_buf x, y;
  buf_init(&x);
  buf_init(&y);
  db_kvs(src->kv, si.prefix, &x);
  db_kvs(dst_kv, di.prefix, &y);
  ASSERT(x.len > 1000);
  ASSERTF(x.len == y.len && !memcmp(x.p, y.p, x.len), "keys differ: %zu vs %zu bytes", x.len, y.len);
  storet_change *c1, *c2;
  store_seq l1, l2;
  size_t n1 = storet_changes(src->db, a, NULL, &c1, &l1), n2 = storet_changes(dst, a, NULL, &c2, &l2);
  ASSERT_EQ(n1, n2);
  for (size_t i = 0; i < n1; i++) {
    ASSERT_EQ(store_seq_cmp(&c1[i].seq, &c2[i].seq), 0);
    ASSERT(!strcmp(c1[i].id, c2[i].id));
    ASSERT(storet_rev_eq(&c1[i].rev, &c2[i].rev));
  }
  json_val *s1, *s2;
  ASSERT_OK(store_db_get_security(src->db, a, &s1));
  ASSERT_OK(store_db_get_security(dst, a, &s2));
  STORET_ASSERT_JSON_EQ(a, s1, s2);
  static const char *ids[] = {"a", "c", "d", "_design/q"};
  for (int i = 0; i < 4; i++) {
    json_val *d1, *d2;
    ASSERT_OK(storet_get(src->db, a, ids[i], NULL, 0, &d1));
    ASSERT_OK(storet_get(dst, a, ids[i], NULL, 0, &d2));
    STORET_ASSERT_JSON_EQ(a, d1, d2);
  }
  /* a write sorts after every copied row, even on a fresh target */
  store_rev r;
  ASSERT_OK(storet_put(dst, a, "after", "{\"v\":99}", NULL, 0, &r));
  storet_change *c3;
  size_t n3 = storet_changes(dst, a, &l2, &c3, NULL);
  ASSERT_EQ(n3, 1);
  ASSERT(store_seq_cmp(&c3[0].seq, &si.update_seq) > 0);
  ASSERT_EQ(c3[0].seq.inc, si.incarnation + 1);
  /* on a fresh embedded target the commit versions are lower than the
   * source's: only the Incarnation puts the write after the copied rows */
  if (lower_versions) ASSERT(memcmp(c3[0].seq.vs, si.update_seq.vs, 12) < 0);
  check_store_clean(dst_s, name);
  store_db_close(dst);
  buf_free(&x);
  buf_free(&y);
}

/* A fresh embedded store for a load or a move to write into. */
static void open_target(kv_db **kv, store **s) {
  ASSERT_OK(storet_kv_open(kvt_newdir("target"), 0, kv));
  ASSERT_OK(store_open(*kv, NULL, s));
}

static void icheck_clean(store *s, const char *name) {
  store_check_out out = {0};
  ASSERT_OK(icheck_run(s, name, &out));
  ASSERTF(out.counts.problems == 0, "%s: %lld problems", name ? name : "all", (long long)out.counts.problems);
}

static void dump_mem(storet *t, const store_dump_opts *o, dv_buf *f, store_dump_stats *st) {
  const char *why = NULL;
  buf_init(f);
  int rc = store_dump(t->s, "db", o, mem_out, f, st, &why);
  ASSERTF(rc == 0, "dump: %s (%s)", dv_err_name(rc), why ? why : "");
}

static void round_trip(int fdb) {
  storet *t = build();
  dv_buf f;
  store_dump_stats st;
  dump_mem(t, NULL, &f, &st);
  ASSERT_EQ(st.rounds, 1);
  ASSERT_EQ(st.docs, 0);
  if (fdb) setenv("DV_STORE_BACKEND", "fdb", 1);
  kv_db *kv;
  store *s;
  open_target(&kv, &s);
  const char *why = NULL;
  int rc = load_mem(s, "moved", f.p, f.len, &why);
  ASSERTF(rc == 0, "load: %s (%s)", dv_err_name(rc), why ? why : "");
  icheck_clean(t->s, NULL);
  icheck_clean(s, "moved"); /* index rows included, before the write below (no index hooks on the target) */
  /* loading again under the same name is refused */
  ASSERT_EQ(load_mem(s, "moved", f.p, f.len, &why), DV_EDB_EXISTS);
  same_db(t, s, kv, "moved", !fdb);
  store_close(s);
  kv_close(kv);
  buf_free(&f);
  mindex_stop();
  storet_close(t);
}

TEST(dump_round_trip) { round_trip(0); }
TEST(dump_round_trip_fdb) { round_trip(1); }

/* A write between the full pass and the catch-up. */
typedef struct mid {
  storet *t;
} mid;

static void during(void *arg) {
  mid *m = arg;
  dv_arena *a = &m->t->a;
  store_db *db = m->t->db;
  json_val *doc;
  ASSERT_OK(storet_get(db, a, "a", NULL, 0, &doc));
  store_rev r = storet_doc_rev(a, doc);
  ASSERT_OK(storet_put(db, a, "a", "{\"v\":20}", storet_rev_str(a, &r), 0, NULL));
  ASSERT_OK(storet_put(db, a, "new", "{\"v\":21}", NULL, 0, NULL));
  ASSERT_OK(storet_get(db, a, "n03", NULL, 0, &doc));
  r = storet_doc_rev(a, doc);
  ASSERT_OK(storet_put(db, a, "n03", NULL, storet_rev_str(a, &r), 1, NULL));
  ASSERT_OK(storet_get(db, a, "n04", NULL, 0, &doc));
  r = storet_doc_rev(a, doc);
  store_rev *purged;
  size_t np;
  ASSERT_OK(store_purge(db, "n04", 3, &r, 1, a, &purged, &np));
  ASSERT_EQ(np, 1);
  ASSERT_OK(store_local_put(db, "_local/y", 8, storet_json(a, "{\"k\":2}"), 0, 0, 0, NULL));
}

TEST(dump_catch_up) {
  storet *t = build();
  mid m = {t};
  store_dump_opts o = {.after_full = during, .arg = &m};
  dv_buf f;
  store_dump_stats st;
  dump_mem(t, &o, &f, &st);
  ASSERT_EQ(st.docs, 4); /* a, new, n03 (changes rows) and n04 (a purge info) */
  ASSERT(st.rounds >= 1);
  kv_db *kv;
  store *s;
  open_target(&kv, &s);
  const char *why = NULL;
  int rc = load_mem(s, "moved", f.p, f.len, &why);
  ASSERTF(rc == 0, "load: %s (%s)", dv_err_name(rc), why ? why : "");
  icheck_clean(s, "moved");
  same_db(t, s, kv, "moved", 1); /* byte-identical keys: one changes row per document, n04 gone */
  store_db *dst;
  ASSERT_OK(store_db_open(s, "moved", &dst));
  json_val *doc;
  ASSERT_EQ(storet_get(dst, &t->a, "n04", NULL, 0, &doc), DV_ENOT_FOUND);
  ASSERT_OK(storet_get(dst, &t->a, "new", NULL, 0, &doc));
  store_db_close(dst);
  store_close(s);
  kv_close(kv);
  buf_free(&f);
  mindex_stop();
  storet_close(t);
}

/* Writes between the transactions of the full pass (a few hundred bytes
 * each): a document's changes row may be copied before a write and its
 * revisions after it, or the other way round. */
typedef struct inter {
  storet *t;
  uint64_t rs;
  int calls, writes;
} inter;

static void between(void *arg) {
  inter *in = arg;
  if (in->calls++ % 2 || in->writes >= 40) return;
  dv_arena *a = &in->t->a;
  store_db *db = in->t->db;
  char id[16];
  snprintf(id, sizeof id, "n%02d", (int)storet_below(&in->rs, 34));
  json_val *doc;
  int rc = storet_get(db, a, id, NULL, 0, &doc);
  if (rc == DV_ENOT_FOUND) ASSERT_OK(storet_put(db, a, id, "{\"v\":1}", NULL, 0, NULL));
  else if (rc == DV_EDELETED) return;
  else {
    ASSERT_OK(rc);
    store_rev r = storet_doc_rev(a, doc);
    int del = storet_chance(&in->rs, 1, 5);
    ASSERT_OK(storet_put(db, a, id, del ? NULL : "{\"v\":300}", storet_rev_str(a, &r), del, NULL));
  }
  in->writes++;
}

TEST(dump_writes_during_full_pass) {
  storet *t = build();
  inter in = {.t = t, .rs = storet_seed("dump interleaved writes", 11)};
  store_dump_opts o = {.each_txn = between, .arg = &in, .txn_bytes = 100};
  dv_buf f;
  store_dump_stats st;
  dump_mem(t, &o, &f, &st);
  ASSERTF(in.writes >= 20, "%d writes in %d transactions", in.writes, in.calls);
  ASSERT(st.docs > 0);
  kv_db *kv;
  store *s;
  open_target(&kv, &s);
  const char *why = NULL;
  int rc = load_mem(s, "moved", f.p, f.len, &why);
  ASSERTF(rc == 0, "load: %s (%s)", dv_err_name(rc), why ? why : "");
  icheck_clean(s, "moved");
  same_db(t, s, kv, "moved", 1);
  store_close(s);
  kv_close(kv);
  buf_free(&f);
  mindex_stop();
  storet_close(t);
}

/* ---- refused files ------------------------------------------------------------- */

/* No database but "db", no key under any prefix no database names, and
 * every refused load said why. */
static void nothing_loaded(storet *t) {
  check_store_clean(t->s, "db");
  store_db *x;
  ASSERT_EQ(store_db_open(t->s, "copy", &x), DV_ENO_DB);
}

static void refuse(storet *t, const uint8_t *p, size_t n, int want, const char *needle) {
  const char *why = NULL;
  int rc = load_mem(t->s, "copy", p, n, &why);
  ASSERTF(rc == want, "load of %zu bytes: %s, expected %s", n, dv_err_name(rc), dv_err_name(want));
  ASSERT(why != NULL);
  if (needle) ASSERTF(strstr(why, needle), "why: %s", why);
}

TEST(dump_refused_files) {
  storet *t = storet_open(NULL, 0, "db");
  dv_arena *a = &t->a;
  for (int i = 0; i < 20; i++) {
    char id[16];
    snprintf(id, sizeof id, "x%02d", i);
    ASSERT_OK(storet_put(t->db, a, id, "{\"v\":1,\"w\":\"some text\"}", NULL, 0, NULL));
  }
  ASSERT_OK(store_local_put(t->db, "_local/x", 8, storet_json(a, "{\"k\":\"v\"}"), 0, 0, 0, NULL));
  dv_buf f;
  store_dump_stats st;
  dump_mem(t, NULL, &f, &st);
  /* every cut point of the first 64 bytes, then a sample */
  for (size_t cut = 0; cut < f.len; cut += cut < 64 ? 1 : 1 + cut / 16)
    refuse(t, f.p, cut, DV_ECORRUPT, cut >= 10 ? "truncated" : "not a divan dump");
  refuse(t, f.p, f.len - 1, DV_ECORRUPT, "truncated");
  /* bit flips: each refused (a flip in the version may read as a newer one) */
  uint64_t rs = storet_seed("dump bit flips", 23);
  uint8_t *c = malloc(f.len + 16);
  for (int i = 0; i < 150; i++) {
    memcpy(c, f.p, f.len);
    size_t at = i < 10 ? (size_t)i : storet_below(&rs, f.len);
    c[at] ^= (uint8_t)(1u << storet_below(&rs, 8));
    const char *why = NULL;
    int rc = load_mem(t->s, "copy", c, f.len, &why);
    ASSERTF(rc == DV_ECORRUPT || (rc == DV_ENOTSUP && (at == 8 || at == 9)), "flip at %zu: %s", at,
            dv_err_name(rc));
  }
  /* bytes after the trailer */
  memcpy(c, f.p, f.len);
  c[f.len] = 0;
  refuse(t, c, f.len + 1, DV_ECORRUPT, "after its trailer");
  /* a newer format version */
  memcpy(c, f.p, f.len);
  c[8] = 0, c[9] = DUMP_VERSION + 1;
  refuse(t, c, f.len, DV_ENOTSUP, "newer");
  /* garbage */
  for (size_t i = 0; i < f.len; i++) c[i] = (uint8_t)storet_rand(&rs);
  refuse(t, c, f.len, DV_ECORRUPT, "not a divan dump");
  memcpy(c, DUMP_MAGIC "\0\1", 10);
  refuse(t, c, f.len, DV_ECORRUPT, "damaged");
  nothing_loaded(t);
  /* the intact file still loads */
  const char *why = NULL;
  ASSERT_OK(load_mem(t->s, "copy", f.p, f.len, &why));
  check_store_clean(t->s, "copy");
  free(c);
  buf_free(&f);
  storet_close(t);
}

/* Reads the file; once a load batch must have been committed, checks the
 * store (a note for the unfinished load, no problem), then fails. */
typedef struct midload {
  storet *t;
  mem_in m;
  int checked;
} midload;

static int note_cb(void *arg, const store_check_item *it) {
  int *seen = arg;
  if (it->note && strstr(it->what, "unfinished `divan load` of copy")) (*seen)++;
  return 0;
}

static long mid_read(void *arg, uint8_t *p, size_t n) {
  midload *ml = arg;
  if (ml->m.at > ml->m.n / 10 * 9) { /* 90 % of the file: past the first batch's records */
    int seen = 0;
    store_check_out cl = {.cb = note_cb, .arg = &seen};
    ASSERT_OK(store_check_cluster(ml->t->s, &cl));
    ASSERTF(cl.counts.problems == 0 && seen == 1, "%lld problems, %d notes", (long long)cl.counts.problems, seen);
    ml->checked = 1;
    return DV_EIO;
  }
  return mem_read(&ml->m, p, n);
}

/* A file bigger than one load transaction, cut near its end: the batches
 * already committed under the new prefix are cleared again. */
TEST(dump_refused_after_batches) {
  storet *t = storet_open(NULL, 0, "db");
  dv_arena *a = &t->a;
  uint64_t rs = storet_seed("dump big", 5);
  char *body = malloc(90000);
  for (int i = 0; i < 40; i++) {
    char id[16];
    snprintf(id, sizeof id, "big%02d", i);
    int n = snprintf(body, 90000, "{\"s\":\"");
    for (int j = 0; j < 80000; j++) body[n++] = "abcdefghijklmnopqrstuvwxyz0123456789"[storet_below(&rs, 36)];
    memcpy(body + n, "\"}", 3);
    ASSERT_OK(storet_put(t->db, a, id, body, NULL, 0, NULL));
    arena_reset(a);
  }
  free(body);
  dv_buf f;
  store_dump_stats st;
  dump_mem(t, NULL, &f, &st);
  ASSERT(st.bytes > STORE_DUMP_TXN_BYTES / 2 + 500000); /* the loader commits a batch at half of it */
  refuse(t, f.p, f.len - 3, DV_ECORRUPT, NULL);
  uint8_t *c = malloc(f.len);
  memcpy(c, f.p, f.len);
  c[f.len - 20] ^= 4;
  refuse(t, c, f.len, DV_ECORRUPT, NULL);
  free(c);
  nothing_loaded(t);
  /* midway through, the batches committed are marked as a load: a note */
  midload ml = {.t = t, .m = {f.p, f.len, 0}};
  const char *why = NULL;
  ASSERT_EQ(store_load(t->s, "copy", NULL, mid_read, &ml, NULL, &why), DV_EIO);
  ASSERT(ml.checked);
  nothing_loaded(t);
  store_check_out cl = {0};
  ASSERT_OK(store_check_cluster(t->s, &cl));
  ASSERT_EQ(cl.counts.notes, 0);
  buf_free(&f);
  storet_close(t);
}

/* ---- the command line -------------------------------------------------------- */

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

/* The process's peak RSS in MiB that a summary line ends with ("; peak
 * RSS 35.2 MiB", what bench/http/dumpbench.js parses); -1 without it. */
static double peak_rss(const char *out) {
  const char *p = strstr(out, "; peak RSS ");
  double mib;
  char unit[8];
  return p && sscanf(p, "; peak RSS %lf %7s", &mib, unit) == 2 && !strcmp(unit, "MiB") ? mib : -1;
}

/* Run a shell command made of fmt and its arguments: its exit status, and
 * what it wrote to stdout (the command sends stderr there too) in *out. */
static int shf(dv_arena *a, char **out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int shf(dv_arena *a, char **out, const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  ASSERT(n > 0 && (size_t)n < sizeof cmd);
  return sh(cmd, a, out);
}

static const char *divan_bin(void) {
  const char *bin = getenv("DIVAN_BIN");
  return bin ? bin : "build/cc/divan";
}

/* The source, closed (one process owns a data directory): its directory. */
static void build_closed(char *dir, size_t n) {
  storet *t = build();
  snprintf(dir, n, "%s", t->dir);
  mindex_stop();
  storet_close(t);
}

/* `divan check --data dir` finds no problem, and says want. */
static void check_cli_clean(dv_arena *a, const char *dir, const char *want) {
  char *out;
  int st = shf(a, &out, "%s check --data '%s' 2>&1", divan_bin(), dir);
  ASSERTF(st == 0 && strstr(out, "; 0 problems") && strstr(out, want), "exit %d:\n%s", st, out);
}

TEST(dump_cli) {
  const char *bin = divan_bin();
  char dir[1024], t2[1200];
  build_closed(dir, sizeof dir);
  const char *tmp = test_tmpdir();
  dv_arena a;
  arena_init(&a, 0);
  char *out;
  int st = shf(&a, &out, "%s dump --data '%s' db > '%s/f.dump' 2>'%s/err'; st=$?; cat '%s/err'; exit $st", bin, dir,
               tmp, tmp, tmp);
  ASSERTF(st == 0 && strstr(out, "divan dump: db: ") && peak_rss(out) > 1, "exit %d:\n%s", st, out);
  for (int i = 0; i < 2; i++) { /* the second time the database exists */
    st = shf(&a, &out, "%s load --data '%s/t' copy -i '%s/f.dump' 2>&1", bin, tmp, tmp);
    if (!i) ASSERTF(st == 0 && strstr(out, "(incarnation 1); peak RSS ") && peak_rss(out) > 1, "exit %d:\n%s", st, out);
    else ASSERTF(st == 1 && strstr(out, "exists; nothing was loaded"), "exit %d:\n%s", st, out);
  }
  snprintf(t2, sizeof t2, "%s/t", tmp);
  check_cli_clean(&a, t2, "");
  st = shf(&a, &out, "head -c 500 '%s/f.dump' | %s load --data '%s/t' cut 2>&1", tmp, bin, tmp);
  ASSERTF(st == 1 && strstr(out, "divan load: cut: the dump file is truncated; nothing was loaded"), "exit %d:\n%s",
          st, out);
  st = shf(&a, &out, "%s dump --data '%s' -o '%s/g.dump' nosuch 2>&1", bin, dir, tmp);
  ASSERTF(st == 2 && strstr(out, "no such database"), "exit %d:\n%s", st, out);
  st = shf(&a, &out, "%s dump --data '%s' 2>&1", bin, dir);
  ASSERTF(st == 2 && strstr(out, "which database?"), "exit %d:\n%s", st, out);
  st = shf(&a, &out, "%s load --data '%s/t' copy2 < /dev/null 2>&1", bin, tmp);
  ASSERTF(st == 1 && strstr(out, "not a divan dump"), "exit %d:\n%s", st, out);
  arena_free(&a);
}

/* ---- move (store_move) --------------------------------------------------------- */

/* The source's keys and update_seq are the target's. */
static void same_keys(kv_db *k1, store *s1, const char *n1, kv_db *k2, store *s2, const char *n2) {
  store_db *d1, *d2;
  ASSERT_OK(store_db_open(s1, n1, &d1));
  ASSERT_OK(store_db_open(s2, n2, &d2));
  store_db_info i1, i2;
  ASSERT_OK(store_db_info_get(d1, &i1));
  ASSERT_OK(store_db_info_get(d2, &i2));
  ASSERT_EQ(store_seq_cmp(&i1.update_seq, &i2.update_seq), 0);
  ASSERT(i2.incarnation > i1.incarnation);
  dv_buf x, y;
  buf_init(&x);
  buf_init(&y);
  db_kvs(k1, i1.prefix, &x);
  db_kvs(k2, i2.prefix, &y);
  ASSERT(x.len > 1000);
  ASSERTF(x.len == y.len && !memcmp(x.p, y.p, x.len), "keys differ: %zu vs %zu bytes", x.len, y.len);
  buf_free(&x);
  buf_free(&y);
  store_db_close(d1);
  store_db_close(d2);
}

/* In the read-only round every kind of write to the source is refused,
 * and a write before it (after the full pass) reaches the target. */
typedef struct frz {
  storet *t;
  int after_full, frozen;
} frz;

static void frz_after_full(void *arg) {
  frz *f = arg;
  f->after_full++;
  during(&(mid){f->t});
}

/* store_update's own answer (storet_put asserts it is 0). */
static int try_put(store_db *db, dv_arena *a, const char *doc_json, int new_edits) {
  store_edit e;
  memset(&e, 0, sizeof e);
  ASSERT_OK(store_edit_from_json(a, storet_json(a, doc_json), new_edits, &e));
  return store_update(db, NULL, &e, 1, new_edits);
}

static void frz_frozen(void *arg) {
  frz *f = arg;
  f->frozen++;
  dv_arena *a = &f->t->a;
  store_db *db = f->t->db;
  json_val *doc;
  ASSERT_EQ(try_put(db, a, "{\"_id\":\"refused\",\"v\":1}", 1), DV_EDB_MOVING);
  ASSERT_OK(storet_get(db, a, "a", NULL, 0, &doc)); /* reads go on */
  store_rev r = storet_doc_rev(a, doc);
  char body[160];
  snprintf(body, sizeof body, "{\"_id\":\"a\",\"_rev\":\"%s\",\"v\":30}", storet_rev_str(a, &r));
  ASSERT_EQ(try_put(db, a, body, 1), DV_EDB_MOVING);
  ASSERT_EQ(try_put(db, a, "{\"_id\":\"c\",\"_rev\":\"9-abc\",\"v\":1}", 0), DV_EDB_MOVING); /* replicated */
  ASSERT_EQ(try_put(db, a,
                    "{\"_id\":\"e\",\"_attachments\":{\"x\":{\"content_type\":\"text/plain\",\"data\":\"eA==\"}}}", 1),
            DV_EDB_MOVING);
  ASSERT_EQ(store_local_put(db, "_local/z", 8, storet_json(a, "{\"k\":3}"), 0, 0, 0, NULL), DV_EDB_MOVING);
  ASSERT_EQ(store_db_set_security(db, storet_json(a, "{\"members\":{\"names\":[\"eve\"]}}")), DV_EDB_MOVING);
  ASSERT_EQ(store_db_set_revs_limit(db, 5), DV_EDB_MOVING);
  store_rev *purged;
  size_t np;
  ASSERT_EQ(store_purge(db, "a", 1, &r, 1, a, &purged, &np), DV_EDB_MOVING);
  /* check says why the database is read-only */
  store_check_out cl = {0};
  ASSERT_OK(store_check_cluster(f->t->s, &cl));
  ASSERT_EQ(cl.counts.problems, 0);
  ASSERTF(cl.counts.notes >= 1, "%lld notes", (long long)cl.counts.notes);
}

typedef struct taken {
  store *dst;
  int calls;
} taken;

static void take_target(void *arg) {
  taken *tk = arg;
  tk->calls++;
  ASSERT_OK(store_db_create(tk->dst, "late"));
}

TEST(move_read_only_round) {
  storet *t = build();
  kv_db *kv;
  store *s;
  open_target(&kv, &s);
  frz f = {.t = t};
  store_move_opts mo = {.then = STORE_MOVE_KEEP, .dump = {.after_full = frz_after_full, .frozen = frz_frozen, .arg = &f}};
  store_move_stats ms;
  const char *why = NULL;
  int rc = store_move(t->s, "db", s, "moved", &mo, &ms, &why);
  ASSERTF(rc == 0, "move: %s (%s)", dv_err_name(rc), why ? why : "");
  ASSERT_EQ(f.after_full, 1);
  ASSERT_EQ(f.frozen, 1);
  ASSERT(ms.dump.rounds >= 2);
  ASSERT_EQ(ms.dump.docs, 4); /* what during() wrote */
  icheck_clean(s, "moved");
  same_db(t, s, kv, "moved", 1); /* byte-identical, and then a write on the target */
  /* keep: the source is writable again (a copy) */
  ASSERT_OK(storet_put(t->db, &t->a, "after", "{\"v\":1}", NULL, 0, NULL));
  /* the target exists: refused, the source left writable */
  ASSERT_EQ(store_move(t->s, "db", s, "moved", &mo, &ms, &why), DV_EDB_EXISTS);
  ASSERT_OK(storet_put(t->db, &t->a, "after2", "{\"v\":1}", NULL, 0, NULL));
  ASSERT_EQ(store_move(t->s, "nosuch", s, "x", NULL, NULL, &why), DV_ENO_DB);
  /* a move failing after the mark (the target appears in its last round):
   * the mark is lifted, nothing of the load stays */
  taken tk = {.dst = s};
  store_move_opts mo2 = {.then = STORE_MOVE_DELETE, .dump = {.frozen = take_target, .arg = &tk}};
  rc = store_move(t->s, "db", s, "late", &mo2, &ms, &why);
  ASSERTF(rc == DV_EDB_EXISTS, "move: %s (%s)", dv_err_name(rc), why ? why : "");
  ASSERT_EQ(tk.calls, 1);
  ASSERT_OK(storet_put(t->db, &t->a, "after3", "{\"v\":1}", NULL, 0, NULL)); /* writable, not deleted */
  store_db *late;
  ASSERT_OK(store_db_open(s, "late", &late));
  store_db_info li;
  ASSERT_OK(store_db_info_get(late, &li));
  ASSERT_EQ(li.doc_count, 0); /* the one the hook made, empty */
  store_db_close(late);
  check_store_clean(s, "moved");
  check_store_clean(t->s, "db");
  store_close(s);
  kv_close(kv);
  mindex_stop();
  storet_close(t);
}

/* A writer racing the move (then delete): every write it was told
 * succeeded is at the target; past the read-only mark its writes are
 * refused (503) until the source is gone. */
#define RACE_MAX 20000

typedef struct racer {
  store *s;
  volatile int stop;
  int ok, moving, gone, other;
  char ids[RACE_MAX][12];
} racer;

static void *race_main(void *arg) {
  racer *w = arg;
  dv_arena a;
  arena_init(&a, 0);
  store_db *db;
  if (store_db_open(w->s, "db", &db)) {
    w->other++;
    return NULL;
  }
  struct timespec ts = {0, 300000};
  for (int i = 0; !w->stop && w->ok < RACE_MAX; i++) {
    nanosleep(&ts, NULL);
    arena_reset(&a);
    char id[12];
    snprintf(id, sizeof id, "w%05d", i);
    store_edit e;
    memset(&e, 0, sizeof e);
    e.id = id;
    e.id_len = strlen(id);
    e.body = storet_json(&a, "{\"racing\":true}");
    int rc = store_update(db, NULL, &e, 1, 1);
    if (!rc && !e.rc) memcpy(w->ids[w->ok++], id, sizeof id);
    else if (rc == DV_EDB_MOVING) w->moving++;
    else if (rc == DV_ENO_DB) {
      w->gone++;
      break;
    } else w->other++;
  }
  store_db_close(db);
  arena_free(&a);
  return NULL;
}

static void slow_txn(void *arg) {
  (void)arg;
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
}

TEST(move_racing_writer) {
  storet *t = build();
  kv_db *kv;
  store *s;
  open_target(&kv, &s);
  racer *w = calloc(1, sizeof *w);
  ASSERT(w);
  w->s = t->s;
  store_db_info in;
  ASSERT_OK(store_db_info_get(t->db, &in));
  int64_t base = (int64_t)in.doc_count;
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, race_main, w), 0);
  store_move_opts mo = {.then = STORE_MOVE_DELETE, .dump = {.txn_bytes = 2000, .each_txn = slow_txn}};
  store_move_stats ms;
  const char *why = NULL;
  int rc = store_move(t->s, "db", s, "moved", &mo, &ms, &why);
  ASSERTF(rc == 0, "move: %s (%s)", dv_err_name(rc), why ? why : "");
  w->stop = 1;
  pthread_join(th, NULL);
  ASSERTF(w->ok > 0 && w->ok < RACE_MAX && w->moving > 0 && w->gone == 1 && w->other == 0, "%d written, %d refused, %d gone, %d other",
          w->ok, w->moving, w->gone, w->other);
  store_db *dst;
  ASSERT_OK(store_db_open(s, "moved", &dst));
  for (int i = 0; i < w->ok; i++) {
    json_val *doc;
    int r = storet_get(dst, &t->a, w->ids[i], NULL, 0, &doc);
    ASSERTF(r == 0, "%s was written to the source but is not at the target (%d of %d; %d refused)", w->ids[i], i,
            w->ok, w->moving);
  }
  ASSERT_OK(store_db_info_get(dst, &in));
  ASSERTF((int64_t)in.doc_count == base + w->ok, "%lld documents at the target, %lld + %d written (%d refused)",
          (long long)in.doc_count, (long long)base, w->ok, w->moving);
  store_db_close(dst);
  icheck_clean(s, "moved");
  free(w);
  store_close(s);
  kv_close(kv);
  mindex_stop();
  storet_close(t);
}

/* embedded -> the FoundationDB double (then rename) -> a fresh embedded
 * store (then delete). */
TEST(move_hops) {
  storet *t = build();
  kv_db *kv1, *kv2;
  store *s1, *s2;
  setenv("DV_STORE_BACKEND", "fdb", 1);
  ASSERT_OK(storet_kv_open(kvt_newdir("fdb"), 0, &kv1));
  unsetenv("DV_STORE_BACKEND");
  ASSERT_OK(store_open(kv1, NULL, &s1));
  ASSERT_OK(storet_kv_open(kvt_newdir("emb"), 0, &kv2));
  ASSERT_OK(store_open(kv2, NULL, &s2));
  store_move_opts mo = {.then = STORE_MOVE_RENAME};
  store_move_stats ms;
  const char *why = NULL;
  int rc = store_move(t->s, "db", s1, NULL, &mo, &ms, &why);
  ASSERTF(rc == 0, "move: %s (%s)", dv_err_name(rc), why ? why : "");
  ASSERT(!strncmp(ms.retired, "db_moved_", 9));
  store_db *x;
  ASSERT_EQ(store_db_open(t->s, "db", &x), DV_ENO_DB);
  ASSERT_EQ(try_put(t->db, &t->a, "{\"_id\":\"late\"}", 1), DV_ENO_DB); /* the old handle is dead */
  char retired[256];
  snprintf(retired, sizeof retired, "%s", ms.retired);
  same_keys(t->kv, t->s, retired, kv1, s1, "db");
  ASSERT_OK(store_db_open(t->s, retired, &x)); /* the renamed source takes writes */
  ASSERT_OK(storet_put(x, &t->a, "late", "{}", NULL, 0, NULL));
  store_db_close(x);
  /* a rename whose name is taken is refused before anything is copied */
  mo.rename_to = "db_copy";
  ASSERT_OK(store_db_create(s1, "db_copy"));
  ASSERT_EQ(store_move(s1, "db", s2, NULL, &mo, &ms, &why), DV_EDB_EXISTS);
  ASSERT_EQ(store_db_open(s2, "db", &x), DV_ENO_DB);
  mo = (store_move_opts){.then = STORE_MOVE_DELETE};
  rc = store_move(s1, "db", s2, "db2", &mo, &ms, &why);
  ASSERTF(rc == 0, "move: %s (%s)", dv_err_name(rc), why ? why : "");
  ASSERT_EQ(store_db_open(s1, "db", &x), DV_ENO_DB);
  icheck_clean(s1, NULL);
  icheck_clean(s2, NULL);
  /* what hopped twice is the original, byte for byte */
  ASSERT_OK(store_db_open(t->s, retired, &x));
  store_db_close(x);
  store_db *d2;
  ASSERT_OK(store_db_open(s2, "db2", &d2));
  store_db_info i2;
  ASSERT_OK(store_db_info_get(d2, &i2));
  ASSERT_EQ(i2.revs_limit, 77);
  json_val *doc;
  ASSERT_OK(storet_get(d2, &t->a, "d", NULL, 0, &doc));
  ASSERT_EQ(storet_get(d2, &t->a, "late", NULL, 0, &doc), DV_ENOT_FOUND);
  ASSERT_EQ(i2.incarnation, 2); /* 0 at the source, +1 per hop */
  store_db_close(d2);
  store_close(s2);
  kv_close(kv2);
  store_close(s1);
  kv_close(kv1);
  mindex_stop();
  storet_close(t);
}

TEST(move_cli) {
  const char *bin = divan_bin();
  const char *lib = getenv("DV_FDBSIM");
  if (!lib) lib = "build/cc/fdbsim/libfdb_c.so";
  char dir[1024], c[1200];
  build_closed(dir, sizeof dir);
  const char *tmp = test_tmpdir();
  const char *cf = kvt_fdbsim_cluster_file(kvt_newdir("cluster"));
  dv_arena a;
  arena_init(&a, 0);
  char *out;
  setenv("FDBSIM_NO_SYNC", "1", 1);
  int st = shf(&a, &out, "%s move --then rename data:'%s' db fdb:'%s' --fdb-library '%s' 2>&1", bin, dir, cf, lib);
  ASSERTF(st == 0 && strstr(out, "the source was renamed to db_moved_"), "exit %d:\n%s", st, out);
  for (int i = 0; i < 2; i++) { /* again: the target exists */
    st = shf(&a, &out, "%s move fdb:'%s' db data:'%s/c' copy --fdb-library '%s' 2>&1", bin, cf, tmp, lib);
    if (!i) ASSERTF(st == 0 && strstr(out, "incarnation 2") && strstr(out, "kept") && peak_rss(out) > 1, "exit %d:\n%s", st, out);
    else ASSERTF(st == 1 && strstr(out, "the database exists"), "exit %d:\n%s", st, out);
  }
  for (int i = 0; i < 2; i++) { /* again: the source is gone */
    st = shf(&a, &out, "%s move --then delete fdb:'%s' db data:'%s/c' --fdb-library '%s' 2>&1", bin, cf, tmp, lib);
    if (!i) ASSERTF(st == 0 && strstr(out, "the source was deleted"), "exit %d:\n%s", st, out);
    else ASSERTF(st == 2 && strstr(out, "no such database"), "exit %d:\n%s", st, out);
  }
  snprintf(c, sizeof c, "%s/c", tmp);
  check_cli_clean(&a, c, "");
  check_cli_clean(&a, dir, "");
  st = shf(&a, &out, "%s move --then burn data:'%s' db data:x 2>&1", bin, dir);
  ASSERTF(st == 2 && strstr(out, "--then takes keep, rename or delete"), "exit %d:\n%s", st, out);
  st = shf(&a, &out, "%s move '%s' db data:x 2>&1", bin, dir);
  ASSERTF(st == 2 && strstr(out, "is no store"), "exit %d:\n%s", st, out);
  st = shf(&a, &out, "%s move data:'%s' db 2>&1", bin, dir);
  ASSERTF(st == 2 && strstr(out, "move takes SRC DB DST"), "exit %d:\n%s", st, out);
  arena_free(&a);
}


/* ---- resume ----------------------------------------------------------------------- */

/* A source whose dump has many checkpoints: small read transactions, and
 * (more) documents written after the full pass, which a catch-up round
 * copies in pages of 512 with a checkpoint after each. */
typedef struct cutter {
  storet *t;
  int writes;          /* documents after_full writes (each dump once) */
  int wrote, serial;
  int ckpts, cut_at;   /* the checkpoint after which the output is cut (0: none) */
  uint64_t cut_round;  /* the round of that checkpoint */
  int in_round;        /* or: cut after the in_round-th checkpoint of round cut_round (cut_at 0) */
  int seen_in_round;
  uint64_t last_round;
  int armed;
  dv_buf *f;           /* the output */
} cutter;

static void cut_after_full(void *arg) {
  cutter *c = arg;
  dv_arena *a = &c->t->a;
  for (int i = 0; i < c->writes; i++) {
    char id[32];
    snprintf(id, sizeof id, "w%d_%04d", c->serial, i);
    ASSERT_OK(storet_put(c->t->db, a, id, "{\"v\":500,\"pad\":\"some text to make it longer\"}", NULL, 0, NULL));
    arena_reset(a);
  }
  c->wrote += c->writes;
}

static int cut_ckpt(void *arg, const dump_ckpt *ck) {
  cutter *c = arg;
  if (ck->round != c->last_round || c->ckpts == 0) c->seen_in_round = 0;
  c->last_round = ck->round;
  c->seen_in_round++;
  if (++c->ckpts == c->cut_at) c->armed = 1, c->cut_round = ck->round;
  if (!c->cut_at && c->in_round && ck->round == c->cut_round && c->seen_in_round == c->in_round) c->armed = 1;
  return 0;
}

/* Half of the first write after the checkpoint, then a failure: a file
 * cut in the middle of a block. */
static int cut_out(void *arg, const uint8_t *p, size_t n) {
  cutter *c = arg;
  if (c->armed) {
    buf_append(c->f, p, n / 2);
    return DV_EIO;
  }
  buf_append(c->f, p, n);
  return 0;
}

/* Writes made between the cut and the resume: a new document, an update,
 * a delete, a purge and a local document. */
static void between_cut(storet *t, int serial) {
  dv_arena *a = &t->a;
  store_db *db = t->db;
  char id[32];
  snprintf(id, sizeof id, "late%d", serial);
  ASSERT_OK(storet_put(db, a, id, "{\"v\":1}", NULL, 0, NULL));
  json_val *doc;
  store_rev r;
  snprintf(id, sizeof id, "n%02d", 5 + serial);
  if (storet_get(db, a, id, NULL, 0, &doc) == 0) {
    r = storet_doc_rev(a, doc);
    ASSERT_OK(storet_put(db, a, id, serial % 2 ? NULL : "{\"v\":77}", storet_rev_str(a, &r), serial % 2, NULL));
  }
  snprintf(id, sizeof id, "n%02d", 20 + serial);
  if (storet_get(db, a, id, NULL, 0, &doc) == 0) {
    r = storet_doc_rev(a, doc);
    store_rev *purged;
    size_t np;
    ASSERT_OK(store_purge(db, id, strlen(id), &r, 1, a, &purged, &np));
  }
  char lid[32];
  snprintf(lid, sizeof lid, "_local/cut%d", serial);
  ASSERT_OK(store_local_put(db, lid, strlen(lid), storet_json(a, "{\"k\":1}"), 0, 0, 0, NULL));
}

/* Load f into a fresh embedded store as "moved": the source itself. */
static void loads_as_source(storet *t, const dv_buf *f) {
  kv_db *kv;
  store *s;
  open_target(&kv, &s);
  const char *why = NULL;
  int rc = load_mem(s, "moved", f->p, f->len, &why);
  ASSERTF(rc == 0, "load: %s (%s)", dv_err_name(rc), why ? why : "");
  icheck_clean(s, "moved");
  same_db(t, s, kv, "moved", 1);
  store_close(s);
  kv_close(kv);
}

/* Cut f where the scan finds its last checkpoint and go on dumping into
 * it: `divan dump --resume`'s steps. */
static void resume_file(storet *t, dv_buf *f, uint64_t want_round, store_dump_stats *st) {
  dump_cont c = {0};
  buf_init(&c.ck);
  mem_in m = {f->p, f->len, 0};
  const char *why = NULL;
  int rc = dump_scan(mem_read, &m, &c, &why);
  ASSERTF(rc == 0 && !c.complete, "scan of %zu bytes: %s (%s)", f->len, dv_err_name(rc), why ? why : "");
  ASSERT(c.off <= f->len && c.off > 10);
  dump_ckpt ck;
  ASSERT_OK(dump_ckpt_parse(c.ck.p, c.ck.len, &ck));
  ASSERTF(ck.round == want_round, "resumed at round %llu, expected %llu", (unsigned long long)ck.round,
          (unsigned long long)want_round);
  f->len = (size_t)c.off;
  store_dump_opts o = {.resume = &c, .append = 1};
  rc = store_dump(t->s, "db", &o, mem_out, f, st, &why);
  ASSERTF(rc == 0, "resumed dump: %s (%s)", dv_err_name(rc), why ? why : "");
  buf_free(&c.ck);
}

TEST(dump_resume_file) {
  storet *t = build();
  cutter c = {.t = t, .writes = 600};
  dv_buf f;
  buf_init(&f);
  c.f = &f;
  store_dump_opts o = {.after_full = cut_after_full, .each_ckpt = cut_ckpt, .arg = &c, .txn_bytes = 400};
  const char *why = NULL;
  store_dump_stats st;
  /* cut after (round, its n-th checkpoint): the start (the full pass's
   * first), inside the full pass, round 1's start, round 1 after its first
   * page of 512 documents */
  uint64_t rounds[] = {0, 0, 0, 1, 1};
  int nth[] = {1, 5, 12, 1, 2};
  for (int i = 0; i < 5; i++) {
    buf_reset(&f);
    c.serial = i + 1;
    c.ckpts = 0;
    c.cut_at = 0;
    c.cut_round = rounds[i];
    c.in_round = nth[i];
    c.armed = 0;
    int rc = store_dump(t->s, "db", &o, cut_out, &c, &st, &why);
    ASSERTF(rc == DV_EIO && c.armed, "cut %d: %s", i, dv_err_name(rc));
    between_cut(t, i);
    size_t cut_len = f.len;
    resume_file(t, &f, rounds[i], &st);
    printf("cut after checkpoint %d of round %llu at byte %zu; resumed: %zu bytes, %d catch-up rounds\n", nth[i],
           (unsigned long long)rounds[i], cut_len, f.len, st.rounds);
    loads_as_source(t, &f);
  }
  /* a whole file cut short of its trailer, then writes: resumed from its
   * last checkpoint (the last round's start) */
  buf_reset(&f);
  c.cut_at = -1;
  c.in_round = 0;
  c.armed = 0;
  c.serial = 9;
  ASSERT_OK(store_dump(t->s, "db", &o, cut_out, &c, &st, &why));
  ASSERTF(st.rounds >= 1 && st.docs >= 600, "%d rounds, %llu documents caught up", st.rounds,
          (unsigned long long)st.docs);
  f.len -= 5;
  between_cut(t, 9);
  resume_file(t, &f, (uint64_t)st.rounds, &st);
  loads_as_source(t, &f);
  /* nothing to resume: a whole file; a file cut before its first
   * checkpoint's block ended */
  dump_cont dc = {0};
  buf_init(&dc.ck);
  mem_in m = {f.p, f.len, 0};
  ASSERT_OK(dump_scan(mem_read, &m, &dc, &why));
  ASSERT(dc.complete);
  m = (mem_in){f.p, 30, 0};
  ASSERT_EQ(dump_scan(mem_read, &m, &dc, &why), DV_ECORRUPT);
  ASSERTF(strstr(why, "no checkpoint"), "why: %s", why);
  /* a resume on another database (its uuid) is refused */
  ASSERT_OK(store_db_create(t->s, "other"));
  dc.complete = 0;
  m = (mem_in){f.p, f.len - 5, 0};
  ASSERT_OK(dump_scan(mem_read, &m, &dc, &why));
  size_t before = f.len;
  ASSERT_EQ(store_dump(t->s, "other", &(store_dump_opts){.resume = &dc, .append = 1}, mem_out, &f, NULL, &why),
            DV_ECONFLICT);
  ASSERTF(strstr(why, "uuid"), "why: %s", why);
  ASSERT_EQ(f.len, before);
  buf_free(&dc.ck);
  buf_free(&f);
  mindex_stop();
  storet_close(t);
}

/* A load that stops after `stop` batches, as if killed. */
typedef struct stopper {
  int batches, stop;
} stopper;

static int stop_batch(void *arg) {
  stopper *sp = arg;
  return ++sp->batches >= sp->stop ? DV_ECANCELLED : 0;
}

/* The mark of name's unfinished load, and its prefix's keys. */
static void mark_and_keys(store *s, kv_db *kv, const char *name, store_load_mark *m, dv_buf *keys) {
  ASSERT_OK(store_load_mark_find(s, name, NULL, m));
  db_kvs(kv, m->prefix, keys);
}

TEST(dump_resume_load) {
  storet *t = build();
  cutter c = {.t = t, .writes = 100};
  dv_buf f, g;
  buf_init(&f);
  buf_init(&g);
  c.f = &f;
  store_dump_opts o = {.after_full = cut_after_full, .arg = &c, .txn_bytes = 400};
  const char *why = NULL;
  ASSERT_OK(store_dump(t->s, "db", &o, mem_out, &f, NULL, &why));
  ASSERT_OK(store_dump(t->s, "db", NULL, mem_out, &g, NULL, &why)); /* another dump of it: another id */
  kv_db *kv;
  store *s;
  open_target(&kv, &s);
  /* the reference: one load, uninterrupted */
  store_load_opts small = {.batch_bytes = 3000};
  mem_in m = {f.p, f.len, 0};
  store_dump_stats whole;
  ASSERT_OK(store_load(s, "whole", &small, mem_read, &m, &whole, &why));
  store_db *d;
  store_db_info wi;
  ASSERT_OK(store_db_open(s, "whole", &d));
  ASSERT_OK(store_db_info_get(d, &wi));
  store_db_close(d);
  dv_buf ref;
  buf_init(&ref);
  db_kvs(kv, wi.prefix, &ref);
  /* a resume with no unfinished load: refused, nothing changed */
  store_load_opts res = {.resume = STORE_LOAD_RESUME_FILE, .batch_bytes = 3000};
  m = (mem_in){f.p, f.len, 0};
  ASSERT_EQ(store_load(s, "part1", &res, mem_read, &m, NULL, &why), DV_ENOT_FOUND);
  ASSERTF(strstr(why, "no unfinished load"), "why: %s", why);
  check_store_clean(s, "whole");
  int stops[] = {1, 4, 9};
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "part%d", i + 1);
    stopper sp = {.stop = stops[i]};
    store_load_opts stop = {.batch_bytes = 3000, .after_batch = stop_batch, .arg = &sp};
    m = (mem_in){f.p, f.len, 0};
    store_dump_stats st;
    ASSERT_EQ(store_load(s, name, &stop, mem_read, &m, &st, &why), DV_ECANCELLED);
    ASSERT(st.kept);
    store_db *x;
    ASSERT_EQ(store_db_open(s, name, &x), DV_ENO_DB); /* nothing visible */
    /* resumed with another dump file: refused, nothing changed */
    store_load_mark m1, m2;
    dv_buf k1, k2;
    buf_init(&k1);
    buf_init(&k2);
    mark_and_keys(s, kv, name, &m1, &k1);
    ASSERT(m1.committed > 0 && m1.c.ck.len > 0);
    mem_in mg = {g.p, g.len, 0};
    ASSERT_EQ(store_load(s, name, &res, mem_read, &mg, NULL, &why), DV_ECONFLICT);
    ASSERTF(strstr(why, "another dump"), "why: %s", why);
    mark_and_keys(s, kv, name, &m2, &k2);
    ASSERT(m2.committed == m1.committed && m2.prefix == m1.prefix && k1.len == k2.len &&
           !memcmp(k1.p, k2.p, k1.len));
    store_load_mark_free(&m1);
    store_load_mark_free(&m2);
    buf_free(&k1);
    buf_free(&k2);
    /* resumed with its file: the whole load's keys, fewer records written */
    m = (mem_in){f.p, f.len, 0};
    int rc = store_load(s, name, &res, mem_read, &m, &st, &why);
    ASSERTF(rc == 0, "resume: %s (%s)", dv_err_name(rc), why ? why : "");
    printf("%s: stopped after %d batches; resumed: %llu of %llu records written (a whole load writes %llu)\n", name,
           stops[i], (unsigned long long)st.applied, (unsigned long long)st.records,
           (unsigned long long)whole.applied);
    ASSERT_EQ(st.records, whole.records);
    ASSERT(st.applied < whole.applied);
    ASSERT_OK(store_db_open(s, name, &d));
    store_db_info pi;
    ASSERT_OK(store_db_info_get(d, &pi));
    store_db_close(d);
    dv_buf got;
    buf_init(&got);
    db_kvs(kv, pi.prefix, &got);
    ASSERTF(got.len == ref.len && !memcmp(got.p, ref.p, ref.len), "keys differ: %zu vs %zu bytes", got.len, ref.len);
    ASSERT_EQ(pi.incarnation, wi.incarnation);
    buf_free(&got);
    icheck_clean(s, name);
    store_load_mark mk;
    ASSERT_EQ(store_load_mark_find(s, name, NULL, &mk), DV_ENOT_FOUND);
    store_load_mark_free(&mk);
    /* again: the name exists */
    m = (mem_in){f.p, f.len, 0};
    ASSERT_EQ(store_load(s, name, &res, mem_read, &m, NULL, &why), DV_EDB_EXISTS);
  }
  store_check_out cl = {0};
  ASSERT_OK(store_check_cluster(s, &cl));
  ASSERT_EQ(cl.counts.problems, 0);
  ASSERT_EQ(cl.counts.notes, 0); /* no mark left */
  /* a resumed load whose file turns out damaged clears what it had, as a
   * new load does */
  stopper sp = {.stop = 2};
  store_load_opts stop = {.batch_bytes = 3000, .after_batch = stop_batch, .arg = &sp};
  m = (mem_in){f.p, f.len, 0};
  ASSERT_EQ(store_load(s, "bad", &stop, mem_read, &m, NULL, &why), DV_ECANCELLED);
  m = (mem_in){f.p, f.len - 3, 0};
  ASSERT_EQ(store_load(s, "bad", &res, mem_read, &m, NULL, &why), DV_ECORRUPT);
  store_load_mark mk;
  ASSERT_EQ(store_load_mark_find(s, "bad", NULL, &mk), DV_ENOT_FOUND);
  store_load_mark_free(&mk);
  check_store_clean(s, "whole");
  store_check_out cl2 = {0};
  ASSERT_OK(store_check_cluster(s, &cl2));
  ASSERT_EQ(cl2.counts.notes, 0);
  buf_free(&ref);
  store_close(s);
  kv_close(kv);
  buf_free(&f);
  buf_free(&g);
  mindex_stop();
  storet_close(t);
}

/* The dump side of a move fails at its n-th checkpoint. */
typedef struct failer {
  cutter c;
  int n, seen;
} failer;

static int fail_ckpt(void *arg, const dump_ckpt *ck) {
  failer *fl = arg;
  (void)ck;
  return ++fl->seen == fl->n ? DV_EIO : 0;
}

static void fail_after_full(void *arg) { cut_after_full(&((failer *)arg)->c); }

TEST(move_resume) {
  storet *t = build();
  kv_db *kv;
  store *s;
  open_target(&kv, &s);
  const char *why = NULL;
  store_move_stats ms;
  /* nothing to resume */
  store_move_opts none = {.resume = 1};
  ASSERT_EQ(store_move(t->s, "db", s, "moved", &none, &ms, &why), DV_ENOT_FOUND);
  ASSERTF(strstr(why, "no unfinished move"), "why: %s", why);
  /* a resume whose source is another database than the one copied */
  ASSERT_OK(store_db_create(t->s, "other"));
  store_db *od;
  ASSERT_OK(store_db_open(t->s, "other", &od));
  for (int i = 0; i < 20; i++) {
    char id[16];
    snprintf(id, sizeof id, "o%02d", i);
    ASSERT_OK(storet_put(od, &t->a, id, "{\"pad\":\"some text to fill a batch or two\"}", NULL, 0, NULL));
  }
  store_db_close(od);
  failer of = {.n = 4};
  store_move_opts om = {.dump = {.each_ckpt = fail_ckpt, .arg = &of, .txn_bytes = 200}, .load = {.batch_bytes = 300}};
  ASSERT_EQ(store_move(t->s, "other", s, "movedx", &om, &ms, &why), DV_EIO);
  ASSERT(ms.load.kept);
  ASSERT_EQ(store_move(t->s, "db", s, "movedx", &none, &ms, &why), DV_ECONFLICT);
  ASSERTF(strstr(why, "uuid"), "why: %s", why);
  store_load_mark mx;
  ASSERT_OK(store_load_mark_find(s, "movedx", NULL, &mx)); /* still there, for the right source */
  store_load_mark_free(&mx);
  ASSERT_OK(store_move(t->s, "other", s, "movedx", &none, &ms, &why));
  same_keys(t->kv, t->s, "other", kv, s, "movedx");
  ASSERT_OK(store_db_delete(t->s, "other"));
  /* the checkpoint to fail at: the second (nothing committed yet: the
   * resume starts over), the last of the full pass, round 1's after its
   * first page of 512 documents */
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "moved%d", i);
    cutter probe = {.t = t, .cut_at = -1};
    dv_buf pf;
    buf_init(&pf);
    probe.f = &pf;
    ASSERT_OK(store_dump(t->s, "db", &(store_dump_opts){.each_ckpt = cut_ckpt, .arg = &probe, .txn_bytes = 400},
                         cut_out, &probe, NULL, &why));
    buf_free(&pf);
    int full = probe.ckpts - 1; /* the start, the full pass's, round 1's start: the last of the full pass */
    int at[] = {2, full, full + 2};
    failer fl = {.c = {.t = t, .writes = 700, .serial = 10 + i}, .n = at[i]};
    store_move_opts mo = {.then = STORE_MOVE_KEEP,
                          .dump = {.each_ckpt = fail_ckpt, .after_full = fail_after_full, .arg = &fl, .txn_bytes = 400},
                          .load = {.batch_bytes = 3000}};
    int rc = store_move(t->s, "db", s, name, &mo, &ms, &why);
    ASSERTF(rc == DV_EIO && ms.load.kept, "move: %s (%s), kept %d", dv_err_name(rc), why ? why : "", ms.load.kept);
    ASSERTF(strstr(why, "stays on the target"), "why: %s", why);
    store_db *x;
    ASSERT_EQ(store_db_open(s, name, &x), DV_ENO_DB);
    store_load_mark mk;
    ASSERT_OK(store_load_mark_find(s, name, NULL, &mk));
    dump_ckpt ck = {0};
    if (i == 0) ASSERT_EQ(mk.c.ck.len, 0); /* no batch in yet */
    else ASSERT_OK(dump_ckpt_parse(mk.c.ck.p, mk.c.ck.len, &ck));
    printf("%s: the dump failed at checkpoint %d; the target holds %llu records, up to a checkpoint of round %llu\n",
           name, fl.n, (unsigned long long)mk.committed, (unsigned long long)ck.round);
    if (i) ASSERT_EQ(ck.round, (uint64_t)(i - 1)); /* the full pass; round 1 */
    store_load_mark_free(&mk);
    uint64_t first = ms.load.records;
    /* the source is writable, and takes writes before the resume */
    between_cut(t, 20 + i);
    store_move_opts re = {.then = STORE_MOVE_KEEP, .resume = 1, .load = {.batch_bytes = 3000}};
    rc = store_move(t->s, "db", s, name, &re, &ms, &why);
    ASSERTF(rc == 0, "resumed move: %s (%s)", dv_err_name(rc), why ? why : "");
    printf("%s: resumed: %llu records (the failed run read %llu)\n", name, (unsigned long long)ms.load.records,
           (unsigned long long)first);
    ASSERT_EQ(store_load_mark_find(s, name, NULL, &mk), DV_ENOT_FOUND);
    store_load_mark_free(&mk);
    icheck_clean(s, name);
    same_keys(t->kv, t->s, "db", kv, s, name);
    check_store_clean(s, name);
    check_store_clean(t->s, "db");
    ASSERT_OK(storet_put(t->db, &t->a, "writable", "{}", NULL, 0, NULL)); /* keep: the mark lifted */
    json_val *doc;
    ASSERT_OK(storet_get(t->db, &t->a, "writable", NULL, 0, &doc));
    store_rev r = storet_doc_rev(&t->a, doc);
    ASSERT_OK(storet_put(t->db, &t->a, "writable", NULL, storet_rev_str(&t->a, &r), 1, NULL));
  }
  store_close(s);
  kv_close(kv);
  mindex_stop();
  storet_close(t);
}

/* divan dump --resume and divan load --resume. */
TEST(dump_resume_cli) {
  const char *bin = divan_bin();
  char dir[1024], path[1200], t1[1200], t2[1200];
  build_closed(dir, sizeof dir);
  const char *tmp = test_tmpdir();
  snprintf(path, sizeof path, "%s/f.dump", tmp);
  snprintf(t1, sizeof t1, "%s/t", tmp);
  snprintf(t2, sizeof t2, "%s/t2", tmp);
  dv_arena a;
  arena_init(&a, 0);
  char *out;
  int st = shf(&a, &out, "%s dump --data '%s' -o '%s' db 2>&1", bin, dir, path);
  ASSERTF(st == 0, "exit %d:\n%s", st, out);
  /* cut it (as a killed dump leaves it), write to the source, resume */
  struct stat sb;
  ASSERT_OK(stat(path, &sb));
  ASSERT_OK(truncate(path, sb.st_size * 2 / 3));
  kv_db *kv;
  store *s;
  ASSERT_OK(storet_kv_open(dir, 0, &kv));
  ASSERT_OK(store_open(kv, NULL, &s));
  store_db *db;
  ASSERT_OK(store_db_open(s, "db", &db));
  ASSERT_OK(storet_put(db, &a, "late", "{\"w\":1}", NULL, 0, NULL)); /* no "v": no index row (no index hooks here) */
  store_db_close(db);
  store_close(s);
  kv_close(kv);
  for (int i = 0; i < 2; i++) { /* the second time the file is whole */
    st = shf(&a, &out, "%s dump --resume --data '%s' -o '%s' db 2>&1", bin, dir, path);
    ASSERTF(st == 0 && strstr(out, i ? "nothing to resume" : "resumed from its last checkpoint"), "exit %d:\n%s", st,
            out);
  }
  st = shf(&a, &out, "%s dump --resume --data '%s' db 2>&1 >/dev/null", bin, dir);
  ASSERTF(st == 2 && strstr(out, "-o FILE"), "exit %d:\n%s", st, out);
  st = shf(&a, &out, "%s load --data '%s' copy -i '%s' 2>&1", bin, t1, path);
  ASSERTF(st == 0, "exit %d:\n%s", st, out);
  /* a load stopped after two batches (as a killed one leaves it) */
  ASSERT_OK(storet_kv_open(t2, 0, &kv));
  ASSERT_OK(store_open(kv, NULL, &s));
  FILE *f = fopen(path, "rb");
  ASSERT(f);
  stopper sp = {.stop = 2};
  store_load_opts lo = {.batch_bytes = 1000, .after_batch = stop_batch, .arg = &sp};
  const char *why = NULL;
  ASSERT_EQ(store_load(s, "copy2", &lo, file_read, f, NULL, &why), DV_ECANCELLED);
  fclose(f);
  store_close(s);
  kv_close(kv);
  check_cli_clean(&a, t2, "unfinished `divan load` of copy2");
  st = shf(&a, &out, "%s load --resume --data '%s' -i '%s' nosuch 2>&1", bin, t2, path);
  ASSERTF(st == 1 && strstr(out, "no unfinished load of this name to resume; nothing changed"), "exit %d:\n%s", st,
          out);
  for (int i = 0; i < 2; i++) { /* the second time the database exists */
    st = shf(&a, &out, "%s load --resume --data '%s' -i '%s' copy2 2>&1", bin, t2, path);
    if (!i) ASSERTF(st == 0 && strstr(out, "; resumed: ") && strstr(out, "records written by this run"),
                    "exit %d:\n%s", st, out);
    else ASSERTF(st == 1 && strstr(out, "the database exists; nothing changed"), "exit %d:\n%s", st, out);
  }
  check_cli_clean(&a, t2, "0 problems, 0 notes");
  /* the resumed dump, loaded twice, is the source with its late write */
  kv_db *k1, *k2, *k3;
  store *s1, *s2, *s3;
  ASSERT_OK(storet_kv_open(dir, 0, &k1));
  ASSERT_OK(store_open(k1, NULL, &s1));
  ASSERT_OK(storet_kv_open(t1, 0, &k2));
  ASSERT_OK(store_open(k2, NULL, &s2));
  same_keys(k1, s1, "db", k2, s2, "copy");
  ASSERT_OK(storet_kv_open(t2, 0, &k3));
  ASSERT_OK(store_open(k3, NULL, &s3));
  same_keys(k1, s1, "db", k3, s3, "copy2");
  store_close(s3);
  kv_close(k3);
  store_close(s2);
  kv_close(k2);
  store_close(s1);
  kv_close(k1);
  arena_free(&a);
}

/* divan move --resume, after a move whose source side failed. */
TEST(move_resume_cli) {
  const char *bin = divan_bin();
  storet *t = build();
  char dir[1024], tdir[1200];
  snprintf(dir, sizeof dir, "%s", t->dir);
  snprintf(tdir, sizeof tdir, "%s/mt", test_tmpdir());
  kv_db *kv;
  store *s;
  ASSERT_OK(storet_kv_open(tdir, 0, &kv));
  ASSERT_OK(store_open(kv, NULL, &s));
  failer fl = {.c = {.t = t}, .n = 6};
  store_move_opts mo = {.dump = {.each_ckpt = fail_ckpt, .arg = &fl, .txn_bytes = 400}, .load = {.batch_bytes = 1000}};
  store_move_stats ms;
  const char *why = NULL;
  ASSERT_EQ(store_move(t->s, "db", s, "moved", &mo, &ms, &why), DV_EIO);
  ASSERT(ms.load.kept);
  store_close(s);
  kv_close(kv);
  mindex_stop();
  storet_close(t);
  dv_arena a;
  arena_init(&a, 0);
  char *out;
  int st = shf(&a, &out, "%s move --resume data:'%s' db data:'%s' other 2>&1", bin, dir, tdir);
  ASSERTF(st == 1 && strstr(out, "no unfinished move or load of this name"), "exit %d:\n%s", st, out);
  for (int i = 0; i < 2; i++) { /* the second time the source is gone */
    st = shf(&a, &out, "%s move --resume --then delete data:'%s' db data:'%s' moved 2>&1", bin, dir, tdir);
    if (!i)
      ASSERTF(st == 0 && strstr(out, "resumed from the target's last checkpoint") && strstr(out, "the source was deleted"),
              "exit %d:\n%s", st, out);
    else ASSERTF(st == 2 && strstr(out, "no such database"), "exit %d:\n%s", st, out);
  }
  check_cli_clean(&a, tdir, "0 problems, 0 notes");
  check_cli_clean(&a, dir, "");
  arena_free(&a);
}

TEST(dump_fuzz_smoke) { test_fuzz_smoke("fuzz_dump"); }
