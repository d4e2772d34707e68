/* test_store.c — the store's contract, case by case: databases and their
 * names, handles racing deletion, interactive edits and their conflicts,
 * new_edits=false merges, reads with every option, the seed 000 read
 * profile, changes, _all_docs, local docs, _db_updates, and
 * commit_unknown_result injected under random edits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kv/kv_fault.h"
#include "store/check.h"
#include "store/store.h"
#include "storet.h"
#include "test.h"

typedef struct st {
  kv_db *kv;
  store *s;
  store_db *db;
  dv_arena a;
} st;

static void st_up(st *t, int fault) {
  static int seq;
  char dir[512];
  snprintf(dir, sizeof dir, "%s/kv%d", test_tmpdir(), seq++);
  ASSERT_OK(storet_kv_open(dir, 0, &t->kv));
  if (fault) {
    kv_db *f;
    ASSERT_OK(kv_fault_wrap(t->kv, &f));
    t->kv = f;
  }
  ASSERT_OK(store_open(t->kv, NULL, &t->s));
  ASSERT_OK(store_db_create(t->s, "db"));
  ASSERT_OK(store_db_open(t->s, "db", &t->db));
  arena_init(&t->a, 0);
}

static void st_down(st *t) {
  store_db_close(t->db);
  store_close(t->s);
  kv_close(t->kv);
  arena_free(&t->a);
}

static json_val *J(st *t, const char *text) {
  json_val *v;
  json_err e;
  ASSERT_OK(json_parse(&t->a, text, strlen(text), NULL, &v, &e));
  return v;
}

static const char *W(st *t, const json_val *v) {
  dv_buf b;
  buf_init(&b);
  ASSERT_OK(json_write(&b, v));
  char *s = arena_strndup(&t->a, (const char *)b.p, b.len);
  buf_free(&b);
  return s;
}

static const char *R(st *t, const store_rev *r) {
  dv_buf b;
  buf_init(&b);
  store_rev_format(r, &b);
  char *s = arena_strndup(&t->a, (const char *)b.p, b.len);
  buf_free(&b);
  return s;
}

/* One interactive edit from a JSON doc; returns its rc, *rev the new rev. */
static int put(st *t, const char *doc, store_rev *rev) {
  store_edit e;
  int rc = store_edit_from_json(&t->a, J(t, doc), 1, &e);
  if (rc) return rc;
  ASSERT_OK(store_update(t->db, NULL, &e, 1, 1));
  if (!e.rc && rev) {
    *rev = e.rev; /* rev.h points into e: copy the bytes out */
    rev->h = arena_memdup(&t->a, e.rev.h, e.rev.len);
  }
  return e.rc;
}

static int put_repl(st *t, const char *doc) {
  store_edit e;
  int rc = store_edit_from_json(&t->a, J(t, doc), 0, &e);
  if (rc) return rc;
  ASSERT_OK(store_update(t->db, NULL, &e, 1, 0));
  return e.rc;
}

static const char *get(st *t, const char *id, const char *rev, int flags, int *rc) {
  json_val *d;
  store_rev r;
  if (rev) ASSERT_OK(store_rev_parse(rev, strlen(rev), &t->a, &r));
  *rc = store_doc_get(t->db, id, strlen(id), rev ? &r : NULL, flags, &t->a, &d);
  return *rc ? NULL : W(t, d);
}

TEST(store_db_names) {
  ASSERT_OK(store_db_name_check("a", 1));
  ASSERT_OK(store_db_name_check("a0_$()+/-", 9));
  ASSERT_OK(store_db_name_check("_users", 6));
  ASSERT_OK(store_db_name_check("_replicator", 11));
  ASSERT_EQ(store_db_name_check("A", 1), DV_EBAD_DB_NAME);
  ASSERT_EQ(store_db_name_check("0a", 2), DV_EBAD_DB_NAME);
  ASSERT_EQ(store_db_name_check("_other", 6), DV_EBAD_DB_NAME);
  ASSERT_EQ(store_db_name_check("a b", 3), DV_EBAD_DB_NAME);
  ASSERT_EQ(store_db_name_check("", 0), DV_EBAD_DB_NAME);
  char lim[STORE_MAX_DBNAME + 2];
  memset(lim, 'a', sizeof lim);
  ASSERT_OK(store_db_name_check(lim, STORE_MAX_DBNAME));
  ASSERT_EQ(store_db_name_check(lim, STORE_MAX_DBNAME + 1), DV_EBAD_DB_NAME);
}

static int list_cb(void *arg, const char *name, size_t len) {
  dv_buf *b = arg;
  buf_append(b, name, len);
  buf_putc(b, ',');
  return 0;
}

static store_range mkrange(const char *start, const char *end, int desc, int incl, int64_t limit, int64_t skip) {
  store_range r;
  store_range_init(&r);
  r.start = start;
  r.start_len = start ? strlen(start) : 0;
  r.end = end;
  r.end_len = end ? strlen(end) : 0;
  r.descending = desc;
  r.inclusive_end = incl;
  r.limit = limit;
  r.skip = skip;
  return r;
}

static const char *list(st *t, const char *start, const char *end, int desc, int incl, int64_t limit, int64_t skip) {
  store_range r = mkrange(start, end, desc, incl, limit, skip);
  dv_buf b;
  buf_init(&b);
  ASSERT_OK(store_db_list(t->s, &r, list_cb, &b));
  char *s = arena_strndup(&t->a, b.p ? (const char *)b.p : "", b.len);
  buf_free(&b);
  return s;
}

TEST(store_db_lifecycle) {
  st t;
  st_up(&t, 0);
  ASSERT_EQ(store_db_create(t.s, "db"), DV_EDB_EXISTS);
  ASSERT_EQ(store_db_create(t.s, "Bad"), DV_EBAD_DB_NAME);
  ASSERT_OK(store_db_create(t.s, "b"));
  ASSERT_OK(store_db_create(t.s, "c"));
  ASSERT_OK(store_db_create(t.s, "_users"));
  ASSERT_STR_EQ(list(&t, NULL, NULL, 0, 1, -1, 0), "_users,b,c,db,");
  ASSERT_STR_EQ(list(&t, "b", "c", 0, 1, -1, 0), "b,c,");
  ASSERT_STR_EQ(list(&t, "b", "c", 0, 0, -1, 0), "b,");
  ASSERT_STR_EQ(list(&t, NULL, NULL, 1, 1, 2, 1), "c,b,");
  ASSERT_STR_EQ(list(&t, "c", "b", 1, 0, -1, 0), "c,");
  store_db_info in0, in1;
  ASSERT_OK(store_db_info_get(t.db, &in0));
  ASSERT_EQ(in0.doc_count, 0);
  ASSERT(store_seq_is_zero(&in0.update_seq));
  ASSERT_OK(put(&t, "{\"_id\":\"x\",\"a\":1}", NULL));
  ASSERT_OK(store_db_info_get(t.db, &in1));
  ASSERT_EQ(in1.doc_count, 1);
  ASSERT(!store_seq_is_zero(&in1.update_seq));
  ASSERT(in1.size_external > 0 && in1.size_active > 0);
  /* delete: the open handle dies, a re-created db is empty with a new prefix */
  ASSERT_OK(store_db_delete(t.s, "db"));
  ASSERT_EQ(store_db_delete(t.s, "db"), DV_ENO_DB);
  store_db_info in2;
  ASSERT_EQ(store_db_info_get(t.db, &in2), DV_ENO_DB);
  int rc;
  get(&t, "x", NULL, 0, &rc);
  ASSERT_EQ(rc, DV_ENO_DB);
  store_db *gone;
  ASSERT_EQ(store_db_open(t.s, "db", &gone), DV_ENO_DB);
  ASSERT_OK(store_db_create(t.s, "db"));
  store_db *db2;
  ASSERT_OK(store_db_open(t.s, "db", &db2));
  ASSERT_OK(store_db_info_get(db2, &in2));
  ASSERT_EQ(in2.doc_count, 0);
  ASSERT(in2.prefix != in1.prefix);
  store_db_close(db2);
  /* revs_limit and security */
  ASSERT_OK(store_db_open(t.s, "b", &db2));
  int64_t rl;
  ASSERT_OK(store_db_get_revs_limit(db2, &rl));
  ASSERT_EQ(rl, 1000);
  ASSERT_EQ(store_db_set_revs_limit(db2, 0), DV_EBAD_REVS_LIMIT);
  ASSERT_EQ(store_db_set_revs_limit(db2, 4001), DV_EBAD_REVS_LIMIT);
  ASSERT_OK(store_db_set_revs_limit(db2, 4000));
  ASSERT_OK(store_db_get_revs_limit(db2, &rl));
  ASSERT_EQ(rl, 4000);
  json_val *sec;
  ASSERT_OK(store_db_get_security(db2, &t.a, &sec));
  ASSERT_STR_EQ(W(&t, sec), "{}");
  ASSERT_OK(store_db_set_security(db2, J(&t, "{\"members\":{\"names\":[\"bob\"]}}")));
  ASSERT_OK(store_db_get_security(db2, &t.a, &sec));
  ASSERT_STR_EQ(W(&t, sec), "{\"members\":{\"names\":[\"bob\"]}}");
  ASSERT_EQ(store_db_set_security(db2, J(&t, "[1]")), DV_ENOT_OBJECT);
  store_db_close(db2);
  st_down(&t);
}

/* Two store instances over one kv: separate handle caches. */
TEST(store_two_caches) {
  st t;
  st_up(&t, 0);
  store *s2;
  ASSERT_OK(store_open(t.kv, NULL, &s2));
  store_db *h2;
  ASSERT_OK(store_db_open(s2, "db", &h2));
  ASSERT_OK(put(&t, "{\"_id\":\"a\"}", NULL));
  ASSERT_OK(store_db_delete(t.s, "db"));
  ASSERT_OK(store_db_create(t.s, "db"));
  /* the other cache notices: its handle is dead, a fresh one sees the new db */
  store_edit e = {.id = "b", .id_len = 1};
  ASSERT_EQ(store_update(h2, NULL, &e, 1, 1), DV_ENO_DB);
  store_db_close(h2);
  ASSERT_OK(store_db_open(s2, "db", &h2));
  ASSERT_OK(store_update(h2, NULL, &e, 1, 1));
  ASSERT_OK(e.rc);
  store_db_info in;
  ASSERT_OK(store_db_info_get(h2, &in));
  ASSERT_EQ(in.doc_count, 1);
  store_db_close(h2);
  store_close(s2);
  st_down(&t);
}

TEST(store_edit_basics) {
  st t;
  st_up(&t, 0);
  store_rev r1, r2, r3, r4;
  int rc;
  ASSERT_OK(put(&t, "{\"_id\":\"d\",\"v\":1}", &r1));
  ASSERT_EQ(r1.pos, 1);
  ASSERT_EQ(r1.len, 16);
  /* the same edit gives the same rev anywhere */
  st t2;
  st_up(&t2, 0);
  store_rev r1b;
  ASSERT_OK(put(&t2, "{\"v\":1,\"_id\":\"d\"}", &r1b));
  ASSERT_STR_EQ(R(&t, &r1), R(&t2, &r1b));
  st_down(&t2);
  ASSERT_EQ(put(&t, "{\"_id\":\"d\",\"v\":1}", NULL), DV_ECONFLICT);
  char doc[256];
  snprintf(doc, sizeof doc, "{\"_id\":\"d\",\"_rev\":\"%s\",\"v\":2}", R(&t, &r1));
  ASSERT_OK(put(&t, doc, &r2));
  ASSERT_EQ(r2.pos, 2);
  ASSERT_EQ(put(&t, doc, NULL), DV_ECONFLICT); /* stale parent */
  char want[512];
  snprintf(want, sizeof want, "{\"_id\":\"d\",\"_rev\":\"%s\",\"v\":2}", R(&t, &r2));
  ASSERT_STR_EQ(get(&t, "d", NULL, 0, &rc), want);
  /* delete, then the doc reads as deleted, its tombstone by rev */
  snprintf(doc, sizeof doc, "{\"_id\":\"d\",\"_rev\":\"%s\",\"_deleted\":true}", R(&t, &r2));
  ASSERT_OK(put(&t, doc, &r3));
  get(&t, "d", NULL, 0, &rc);
  ASSERT_EQ(rc, DV_EDELETED);
  snprintf(want, sizeof want, "{\"_id\":\"d\",\"_rev\":\"%s\",\"_deleted\":true}", R(&t, &r3));
  ASSERT_STR_EQ(get(&t, "d", R(&t, &r3), 0, &rc), want);
  get(&t, "d", R(&t, &r1), 0, &rc); /* not a leaf */
  ASSERT_EQ(rc, DV_ENOT_FOUND);
  get(&t, "nope", NULL, 0, &rc);
  ASSERT_EQ(rc, DV_ENOT_FOUND);
  /* an edit naming the deleted leaf is a conflict (seed 000) */
  snprintf(doc, sizeof doc, "{\"_id\":\"d\",\"_rev\":\"%s\",\"v\":9}", R(&t, &r3));
  ASSERT_EQ(put(&t, doc, NULL), DV_ECONFLICT);
  /* recreate extends the deleted winner */
  ASSERT_OK(put(&t, "{\"_id\":\"d\",\"v\":3}", &r4));
  ASSERT_EQ(r4.pos, 4);
  snprintf(want, sizeof want, "{\"_id\":\"d\",\"_rev\":\"%s\",\"v\":3,\"_revisions\":{\"start\":4,\"ids\":[", R(&t, &r4));
  const char *got = get(&t, "d", NULL, STORE_REVS, &rc);
  ASSERT_OK(rc);
  ASSERT(!strncmp(got, want, strlen(want)));
  /* revs_info */
  got = get(&t, "d", NULL, STORE_REVS_INFO, &rc);
  ASSERT(strstr(got, "\"status\":\"available\"") && strstr(got, "\"status\":\"missing\""));
  /* bad input */
  store_edit e;
  ASSERT_EQ(store_edit_from_json(&t.a, J(&t, "{\"_id\":\"x\",\"_foo\":1}"), 1, &e), DV_EDOC_FIELD);
  ASSERT_EQ(store_edit_from_json(&t.a, J(&t, "{\"_id\":\"x\",\"_rev\":\"abc\"}"), 1, &e), DV_EBAD_REV);
  ASSERT_EQ(store_edit_from_json(&t.a, J(&t, "[]"), 1, &e), DV_ENOT_OBJECT);
  ASSERT_EQ(put(&t, "{\"_id\":\"_bad\"}", NULL), DV_EBAD_DOCID);
  ASSERT_EQ(put(&t, "{\"_id\":\"\"}", NULL), DV_EBAD_DOCID);
  ASSERT_OK(put(&t, "{\"_id\":\"_design/x\"}", NULL));
  /* two edits of one id in one call: the second conflicts */
  store_edit two[2] = {{.id = "p", .id_len = 1}, {.id = "p", .id_len = 1}};
  ASSERT_OK(store_update(t.db, NULL, two, 2, 1));
  ASSERT_OK(two[0].rc);
  ASSERT_EQ(two[1].rc, DV_ECONFLICT);
  store_db_info in;
  ASSERT_OK(store_db_info_get(t.db, &in));
  ASSERT_EQ(in.doc_count, 3);
  ASSERT_EQ(in.doc_del_count, 0);
  st_down(&t);
}

#define H(c) #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c #c

TEST(store_replicated_merge) {
  st t;
  st_up(&t, 0);
  int rc;
  /* a path 3-c 2-b 1-a, then a conflicting branch 2-d from 1-a */
  ASSERT_OK(put_repl(&t, "{\"_id\":\"x\",\"v\":1,\"_revisions\":{\"start\":3,\"ids\":[\"" H(c) "\",\"" H(b) "\",\"" H(a) "\"]}}"));
  ASSERT_OK(put_repl(&t, "{\"_id\":\"x\",\"v\":2,\"_revisions\":{\"start\":2,\"ids\":[\"" H(d) "\",\"" H(a) "\"]}}"));
  store_leaf *l;
  size_t n;
  ASSERT_OK(store_doc_leaves(t.db, "x", 1, &t.a, &l, &n));
  ASSERT_EQ(n, 2);
  ASSERT_STR_EQ(R(&t, &l[0].rev), "3-" H(c));
  ASSERT_EQ(l[0].n_anc, 2);
  ASSERT_STR_EQ(R(&t, &l[1].rev), "2-" H(d));
  ASSERT_EQ(l[1].n_anc, 1);
  const char *got = get(&t, "x", NULL, STORE_CONFLICTS, &rc);
  ASSERT(strstr(got, "\"_conflicts\":[\"2-" H(d) "\"]"));
  /* a known rev writes nothing: no new changes row */
  store_db_info a0, a1;
  ASSERT_OK(store_db_info_get(t.db, &a0));
  ASSERT_OK(put_repl(&t, "{\"_id\":\"x\",\"_revisions\":{\"start\":2,\"ids\":[\"" H(b) "\",\"" H(a) "\"]}}"));
  ASSERT_OK(store_db_info_get(t.db, &a1));
  ASSERT_EQ(store_seq_cmp(&a0.update_seq, &a1.update_seq), 0);
  /* extending the losing branch past the winner moves the winner */
  ASSERT_OK(put_repl(&t, "{\"_id\":\"x\",\"v\":3,\"_revisions\":{\"start\":4,\"ids\":[\"" H(e) "\",\"" H(f) "\",\"" H(d) "\"]}}"));
  ASSERT_OK(store_doc_leaves(t.db, "x", 1, &t.a, &l, &n));
  ASSERT_EQ(n, 2);
  ASSERT_STR_EQ(R(&t, &l[0].rev), "4-" H(e));
  ASSERT_EQ(l[0].n_anc, 3); /* e f d a */
  /* deleting the winner promotes the other branch */
  char doc[400];
  snprintf(doc, sizeof doc, "{\"_id\":\"x\",\"_rev\":\"4-%s\",\"_deleted\":true}", H(e));
  store_rev rd;
  ASSERT_OK(put(&t, doc, &rd));
  got = get(&t, "x", NULL, STORE_DELETED_CONFLICTS, &rc);
  ASSERT_OK(rc);
  ASSERT(strstr(got, "\"_rev\":\"3-" H(c) "\""));
  ASSERT(strstr(got, "\"_deleted_conflicts\":[\"5-"));
  /* open_revs: all, listed, latest */
  json_val *o;
  ASSERT_OK(store_doc_open_revs(t.db, "x", 1, NULL, 0, 0, &t.a, &o));
  ASSERT_EQ(o->len, 2);
  store_rev q[2];
  ASSERT_OK(store_rev_parse("1-" H(a), 34, &t.a, &q[0]));
  ASSERT_OK(store_rev_parse("9-" H(a), 34, &t.a, &q[1]));
  ASSERT_OK(store_doc_open_revs(t.db, "x", 1, q, 2, 0, &t.a, &o));
  ASSERT_STR_EQ(W(&t, o), "[{\"missing\":\"1-" H(a) "\"},{\"missing\":\"9-" H(a) "\"}]");
  ASSERT_OK(store_doc_open_revs(t.db, "x", 1, q, 1, STORE_LATEST, &t.a, &o));
  ASSERT_EQ(o->len, 2);
  /* non-hex revs are kept as sent */
  ASSERT_OK(put_repl(&t, "{\"_id\":\"y\",\"_rev\":\"1-xyz\"}"));
  got = get(&t, "y", NULL, 0, &rc);
  ASSERT_STR_EQ(got, "{\"_id\":\"y\",\"_rev\":\"1-xyz\"}");
  st_down(&t);
}

/* Seed 000's cost profile: reads of the revisions subspace per edit. */
TEST(store_read_profile) {
  st t;
  st_up(&t, 0);
  store_read_stats s;
  store_rev r1, r2;
  store_read_stats_reset();
  ASSERT_OK(put(&t, "{\"_id\":\"p\"}", &r1));
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 1); /* create: reverse range limit 1, nothing found */
  ASSERT_EQ(s.kvs, 0);
  char doc[300];
  snprintf(doc, sizeof doc, "{\"_id\":\"p\",\"_rev\":\"%s\"}", R(&t, &r1));
  store_read_stats_reset();
  ASSERT_OK(put(&t, doc, &r2));
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 1); /* extend the winner: 1 KV */
  ASSERT_EQ(s.kvs, 1);
  ASSERT_EQ(s.old_bodies, 0); /* no validator asked for the old body (test_hooks.c) */
  /* a conflict branch: then extending the losing one reads 2 */
  ASSERT_OK(put_repl(&t, "{\"_id\":\"p\",\"_revisions\":{\"start\":2,\"ids\":[\"" H(0) "\",\"" H(0) "\"]}}"));
  ASSERT_OK(put_repl(&t, "{\"_id\":\"p\",\"_revisions\":{\"start\":1,\"ids\":[\"" H(1) "\"]}}"));
  store_leaf *l;
  size_t n;
  ASSERT_OK(store_doc_leaves(t.db, "p", 1, &t.a, &l, &n));
  ASSERT_EQ(n, 3);
  snprintf(doc, sizeof doc, "{\"_id\":\"p\",\"_rev\":\"%s\"}", R(&t, &l[2].rev));
  store_read_stats_reset();
  ASSERT_OK(put(&t, doc, NULL));
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 2);
  ASSERT_EQ(s.kvs, 2);
  /* delete the winner: 2 contiguous KVs, one read */
  ASSERT_OK(store_doc_leaves(t.db, "p", 1, &t.a, &l, &n));
  snprintf(doc, sizeof doc, "{\"_id\":\"p\",\"_rev\":\"%s\",\"_deleted\":true}", R(&t, &l[0].rev));
  store_read_stats_reset();
  ASSERT_OK(put(&t, doc, NULL));
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 1);
  ASSERT_EQ(s.kvs, 2);
  /* new_edits=false reads the whole range */
  store_read_stats_reset();
  ASSERT_OK(put_repl(&t, "{\"_id\":\"p\",\"_revisions\":{\"start\":1,\"ids\":[\"" H(2) "\"]}}"));
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 1);
  ASSERT_EQ(s.kvs, 3);
  st_down(&t);
}

/* Creates settled by one range read (edit.c, creates_absent): n new ids
 * "<pre>000".. in one call. */
static void creates(st *t, const char *pre, int n, int *rcs, int64_t *pos) {
  store_edit e[64];
  char ids[64][16];
  ASSERT(n <= 64);
  memset(e, 0, sizeof e);
  for (int i = 0; i < n; i++) {
    snprintf(ids[i], sizeof ids[i], "%s%03d", pre, i);
    e[i].id = ids[i];
    e[i].id_len = strlen(ids[i]);
  }
  ASSERT_OK(store_update(t->db, NULL, e, (size_t)n, 1));
  for (int i = 0; i < n; i++) rcs[i] = e[i].rc, pos[i] = e[i].rev.pos;
}

TEST(store_creates_one_read) {
  st t;
  st_up(&t, 0);
  store_read_stats s;
  int rcs[64];
  int64_t pos[64];
  /* none exists: one read for all 50 */
  store_read_stats_reset();
  creates(&t, "a", 50, rcs, pos);
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 1);
  ASSERT_EQ(s.kvs, 0);
  for (int i = 0; i < 50; i++) {
    ASSERT_OK(rcs[i]);
    ASSERT_EQ(pos[i], 1);
  }
  /* one live and one deleted document in their span: the span read finds
   * one, then every edit reads its own — a conflict, a recreate on the
   * tombstone, and new documents */
  ASSERT_OK(put(&t, "{\"_id\":\"m005\"}", NULL));
  store_rev r;
  ASSERT_OK(put(&t, "{\"_id\":\"m007\"}", &r));
  char doc[200];
  snprintf(doc, sizeof doc, "{\"_id\":\"m007\",\"_rev\":\"%s\",\"_deleted\":true}", R(&t, &r));
  ASSERT_OK(put(&t, doc, NULL));
  store_read_stats_reset();
  creates(&t, "m", 10, rcs, pos);
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 11);
  for (int i = 0; i < 10; i++) {
    ASSERT_EQ(rcs[i], i == 5 ? DV_ECONFLICT : 0);
    ASSERT_EQ(pos[i], i == 5 ? 0 : i == 7 ? 3 : 1);
  }
  /* again: all ten exist now */
  creates(&t, "m", 10, rcs, pos);
  for (int i = 0; i < 10; i++) ASSERT_EQ(rcs[i], DV_ECONFLICT);
  store_db_info in;
  ASSERT_OK(store_db_info_get(t.db, &in));
  ASSERT_EQ(in.doc_count, 60);
  ASSERT_EQ(in.doc_del_count, 0);
  store_check_out out = {0};
  ASSERT_OK(store_check_db(t.s, "db", &out));
  ASSERT_EQ(out.counts.problems, 0);
  st_down(&t);
}

/* Threads create overlapping runs of ids at once: each id is created
 * exactly once (the empty span is a read conflict range: a create that
 * lands in it after the read retries the transaction, which then sees it).
 * Each round, all threads start together on a fresh region of 40 ids. */
#define RACE_ROUNDS 100
#define RACE_REGION 40

struct racer {
  st *t;
  pthread_barrier_t *go;
  int seed, ok[RACE_ROUNDS * RACE_REGION];
};

static void *race_creates(void *arg) {
  struct racer *r = arg;
  uint32_t x = (uint32_t)r->seed * 2654435761u + 1;
  for (int round = 0; round < RACE_ROUNDS; round++) {
    x = x * 1103515245u + 12345;
    int from = (int)(x >> 8) % (RACE_REGION - 2), n = 2 + (int)(x >> 20) % (RACE_REGION - 2);
    if (from + n > RACE_REGION) n = RACE_REGION - from;
    from += round * RACE_REGION;
    store_edit e[RACE_REGION];
    char ids[RACE_REGION][8];
    memset(e, 0, sizeof e);
    for (int i = 0; i < n; i++) {
      snprintf(ids[i], sizeof ids[i], "k%05d", from + i);
      e[i].id = ids[i];
      e[i].id_len = 6;
    }
    pthread_barrier_wait(r->go);
    if (store_update(r->t->db, NULL, e, (size_t)n, 1)) return "store_update failed";
    for (int i = 0; i < n; i++) {
      if (e[i].rc && e[i].rc != DV_ECONFLICT) return "an edit failed";
      r->ok[from + i] += !e[i].rc;
    }
  }
  return NULL;
}

TEST(store_creates_race) {
  st t;
  st_up(&t, 0);
  static struct racer r[4];
  pthread_t th[4];
  pthread_barrier_t go;
  ASSERT_EQ(pthread_barrier_init(&go, NULL, 4), 0);
  memset(r, 0, sizeof r);
  for (int i = 0; i < 4; i++) r[i].t = &t, r[i].go = &go, r[i].seed = i + 1;
  for (int i = 0; i < 4; i++) ASSERT_EQ(pthread_create(&th[i], NULL, race_creates, &r[i]), 0);
  const char *why = NULL;
  for (int i = 0; i < 4; i++) {
    void *w;
    pthread_join(th[i], &w);
    if (w) why = w;
  }
  pthread_barrier_destroy(&go);
  ASSERTF(!why, "%s", why);
  int64_t made = 0;
  for (int k = 0; k < RACE_ROUNDS * RACE_REGION; k++) {
    int c = r[0].ok[k] + r[1].ok[k] + r[2].ok[k] + r[3].ok[k];
    ASSERTF(c <= 1, "k%05d created %d times", k, c);
    made += c;
    char id[8];
    snprintf(id, sizeof id, "k%05d", k);
    store_leaf *l;
    size_t n;
    int rc = store_doc_leaves(t.db, id, 6, &t.a, &l, &n);
    ASSERT(c ? rc == 0 && n == 1 : rc == DV_ENOT_FOUND || (rc == 0 && n == 0));
  }
  store_db_info in;
  ASSERT_OK(store_db_info_get(t.db, &in));
  ASSERT_EQ(in.doc_count, made);
  store_check_out out = {0};
  ASSERT_OK(store_check_db(t.s, "db", &out));
  ASSERT_EQ(out.counts.problems, 0);
  st_down(&t);
}

struct chg {
  dv_buf b;
  int n;
  store_seq last;
};

static int chg_cb(void *arg, const store_change *c) {
  struct chg *g = arg;
  buf_puts(&g->b, c->deleted ? "!" : "");
  buf_append(&g->b, c->id, c->id_len);
  buf_printf(&g->b, "%s:%zu,", c->doc ? "+" : "", c->n_leaves);
  g->n++;
  if (g->n > 1) ASSERT(store_seq_cmp(&g->last, &c->seq) != 0);
  g->last = c->seq;
  return 0;
}

static const char *changes(st *t, const store_seq *since, int desc, int64_t limit, int all, int docs) {
  struct chg g = {.n = 0};
  buf_init(&g.b);
  store_changes_opts o = {.descending = desc, .limit = limit, .all_docs = all, .include_docs = docs};
  if (since) o.since = *since;
  ASSERT_OK(store_changes(t->db, &o, chg_cb, &g, NULL));
  char *s = arena_strndup(&t->a, g.b.p ? (const char *)g.b.p : "", g.b.len);
  buf_free(&g.b);
  return s;
}

static int row_cb(void *arg, const store_doc_row *r) {
  dv_buf *b = arg;
  buf_append(b, r->id, r->id_len);
  buf_puts(b, r->missing ? "?" : r->deleted ? "!" : "");
  buf_puts(b, r->doc ? "+," : ",");
  return 0;
}

static const char *alldocs(st *t, int which, const char *start, const char *end, int desc, int64_t limit,
                           int64_t skip, int docs) {
  store_range r = mkrange(start, end, desc, 1, limit, skip);
  dv_buf b;
  buf_init(&b);
  ASSERT_OK(store_all_docs(t->db, which, &r, docs, 0, row_cb, &b));
  char *s = arena_strndup(&t->a, b.p ? (const char *)b.p : "", b.len);
  buf_free(&b);
  return s;
}

TEST(store_changes_alldocs_local) {
  st t;
  st_up(&t, 0);
  store_rev ra;
  ASSERT_OK(put(&t, "{\"_id\":\"a\"}", &ra));
  ASSERT_OK(put(&t, "{\"_id\":\"b\"}", NULL));
  ASSERT_OK(put(&t, "{\"_id\":\"_design/q\"}", NULL));
  ASSERT_OK(put(&t, "{\"_id\":\"c\"}", NULL));
  ASSERT_STR_EQ(changes(&t, NULL, 0, -1, 0, 0), "a:0,b:0,_design/q:0,c:0,");
  char doc[200];
  snprintf(doc, sizeof doc, "{\"_id\":\"a\",\"_rev\":\"%s\",\"_deleted\":true}", R(&t, &ra));
  ASSERT_OK(put(&t, doc, NULL));
  ASSERT_OK(put_repl(&t, "{\"_id\":\"b\",\"_rev\":\"1-" H(f) "\"}"));
  ASSERT_STR_EQ(changes(&t, NULL, 0, -1, 1, 1), "_design/q+:1,c+:1,!a+:1,b+:2,");
  ASSERT_STR_EQ(changes(&t, NULL, 1, 2, 0, 0), "b:0,!a:0,");
  /* since: after c's row */
  struct chg g = {.n = 0};
  buf_init(&g.b);
  store_changes_opts o = {.limit = 2};
  store_seq last;
  ASSERT_OK(store_changes(t.db, &o, chg_cb, &g, &last));
  buf_free(&g.b);
  char s[STORE_SEQ_STR];
  store_seq_format(&last, s);
  store_seq back;
  ASSERT_OK(store_seq_parse(s, strlen(s), &back));
  ASSERT_EQ(store_seq_cmp(&back, &last), 0);
  ASSERT_STR_EQ(changes(&t, &back, 0, -1, 0, 0), "!a:0,b:0,");
  ASSERT_EQ(store_seq_parse("zz", 2, &back), DV_EBAD_SEQ);
  /* _all_docs: live winners in id order */
  ASSERT_STR_EQ(alldocs(&t, STORE_ALL, NULL, NULL, 0, -1, 0, 0), "_design/q,b,c,");
  ASSERT_STR_EQ(alldocs(&t, STORE_ALL, NULL, NULL, 1, -1, 0, 1), "c+,b+,_design/q+,");
  ASSERT_STR_EQ(alldocs(&t, STORE_ALL, "b", NULL, 0, 1, 0, 0), "b,");
  ASSERT_STR_EQ(alldocs(&t, STORE_ALL, NULL, NULL, 0, -1, 1, 0), "b,c,");
  ASSERT_STR_EQ(alldocs(&t, STORE_DESIGN, NULL, NULL, 0, -1, 0, 0), "_design/q,");
  const char *keys[] = {"a", "zz", "c"};
  size_t lens[] = {1, 2, 1};
  dv_buf b;
  buf_init(&b);
  ASSERT_OK(store_all_docs_keys(t.db, keys, lens, 3, 1, 0, row_cb, &b));
  ASSERT_STR_EQ((const char *)b.p, "a!,zz?,c+,");
  buf_free(&b);
  /* local docs: rev 0-N, not in changes; the rev is given + 1, checked
   * only when STORE_LOCAL_STRICT asks */
  int64_t lr;
  ASSERT_OK(store_local_put(t.db, "_local/k", 8, J(&t, "{\"x\":1}"), 0, 0, STORE_LOCAL_STRICT, &lr));
  ASSERT_EQ(lr, 1);
  ASSERT_EQ(store_local_put(t.db, "_local/k", 8, J(&t, "{\"x\":2}"), 0, 0, STORE_LOCAL_STRICT, &lr), DV_ECONFLICT);
  ASSERT_EQ(store_local_put(t.db, "_local/k", 8, J(&t, "{\"x\":2}"), 5, 0, STORE_LOCAL_STRICT, &lr), DV_ECONFLICT);
  ASSERT_OK(store_local_put(t.db, "_local/k", 8, J(&t, "{\"x\":0}"), 0, 0, 0, &lr));
  ASSERT_EQ(lr, 1);
  ASSERT_OK(store_local_put(t.db, "_local/k", 8, J(&t, "{\"x\":2}"), 1, 0, STORE_LOCAL_STRICT, &lr));
  ASSERT_EQ(lr, 2);
  ASSERT_EQ(store_local_put(t.db, "_local/k", 8, J(&t, "{\"x\":2}"), INT64_MAX, 0, 0, &lr), DV_EBAD_REV);
  ASSERT_EQ(store_local_put(t.db, "_local/k", 8, J(&t, "{\"x\":2}"), -1, 0, 0, &lr), DV_EBAD_REV);
  json_val *ld;
  ASSERT_OK(store_local_get(t.db, "_local/k", 8, &t.a, &ld));
  ASSERT_STR_EQ(W(&t, ld), "{\"_id\":\"_local/k\",\"_rev\":\"0-2\",\"x\":2}");
  ASSERT_STR_EQ(alldocs(&t, STORE_LOCAL, NULL, NULL, 0, -1, 0, 1), "_local/k+,");
  ASSERT_STR_EQ(changes(&t, NULL, 0, -1, 0, 0), "_design/q:0,c:0,!a:0,b:0,");
  ASSERT_EQ(store_local_put(t.db, "_local/k", 8, NULL, 1, 1, STORE_LOCAL_STRICT, NULL), DV_ECONFLICT);
  ASSERT_OK(store_local_put(t.db, "_local/k", 8, NULL, 7, 1, 0, NULL));
  ASSERT_EQ(store_local_get(t.db, "_local/k", 8, &t.a, &ld), DV_ENOT_FOUND);
  ASSERT_EQ(store_local_put(t.db, "_local/k", 8, NULL, 2, 1, 0, NULL), DV_ENOT_FOUND);
  /* a local doc past one value is chunked */
  char *big = malloc(300000);
  memset(big, 'x', 300000);
  memcpy(big, "{\"s\":\"", 6);
  memcpy(big + 300000 - 2, "\"}", 2);
  json_val *bv;
  json_err je;
  ASSERT_OK(json_parse(&t.a, big, 300000, NULL, &bv, &je));
  ASSERT_OK(store_local_put(t.db, "_local/big", 10, bv, 0, 0, 0, NULL));
  ASSERT_OK(store_local_get(t.db, "_local/big", 10, &t.a, &ld));
  ASSERT_EQ(json_obj_getz(ld, "s")->len, 300000 - 8);
  free(big);
  st_down(&t);
}

static int dbu_cb(void *arg, const store_dbu_row *r) {
  dv_buf *b = arg;
  buf_append(b, r->name, r->name_len);
  buf_printf(b, ":%s,", r->type);
  return 0;
}

TEST(store_db_updates_feed) {
  st t;
  st_up(&t, 0);
  ASSERT_OK(store_db_create(t.s, "other"));
  ASSERT_OK(store_db_create(t.s, "gone"));
  ASSERT_OK(store_db_delete(t.s, "gone"));
  dv_buf b;
  buf_init(&b);
  store_seq last;
  ASSERT_OK(store_db_updates(t.s, NULL, -1, dbu_cb, &b, &last));
  ASSERT_STR_EQ((const char *)b.p, "db:created,other:created,gone:deleted,");
  ASSERT_EQ(put(&t, "{}", NULL), DV_EBAD_DOCID); /* the caller mints ids */
  char id[16];
  for (int i = 0; i < 5; i++) {
    snprintf(id, sizeof id, "{\"_id\":\"%d\"}", i);
    ASSERT_OK(put(&t, id, NULL));
  }
  ASSERT(store_db_updates_consume(t.s) >= 5);
  buf_reset(&b);
  ASSERT_OK(store_db_updates(t.s, &last, -1, dbu_cb, &b, &last));
  ASSERT_STR_EQ((const char *)b.p, "db:updated,");
  ASSERT_EQ(store_db_updates_consume(t.s), 0);
  /* an update queued for a database deleted since is dropped */
  store_db *o;
  ASSERT_OK(store_db_open(t.s, "other", &o));
  store_edit e = {.id = "z", .id_len = 1};
  ASSERT_OK(store_update(o, NULL, &e, 1, 1));
  store_db_close(o);
  ASSERT_OK(store_db_delete(t.s, "other"));
  ASSERT(store_db_updates_consume(t.s) >= 1);
  buf_reset(&b);
  ASSERT_OK(store_db_updates(t.s, &last, -1, dbu_cb, &b, &last));
  ASSERT_STR_EQ((const char *)b.p, "other:deleted,");
  buf_free(&b);
  st_down(&t);
}

/* commit_unknown_result after and before apply, under random edits and
 * database creations: every answer is right, nothing is lost or doubled. */
struct mdoc {
  char rev[80]; /* "" = no doc; the current winner otherwise */
  int deleted;
};

TEST(store_commit_unknown) {
  st t;
  st_up(&t, 1);
  kv_fault_seed(t.kv, 42);
  kv_fault_set(t.kv, KV_FAULT_COMMIT_UNKNOWN_AFTER, 0.15, -1);
  kv_fault_set(t.kv, KV_FAULT_COMMIT_UNKNOWN_BEFORE, 0.15, -1);
  enum { NDOC = 50 };
  struct mdoc m[NDOC];
  memset(m, 0, sizeof m);
  uint64_t x = 7;
  int ops = 0, dbs = 0;
  for (int i = 0; i < 1200; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    int d = (int)((x >> 33) % NDOC);
    arena_reset(&t.a);
    if ((x >> 20) % 10 == 0) { /* a database creation */
      char name[32];
      snprintf(name, sizeof name, "d%d", dbs++);
      ASSERT_OK(store_db_create(t.s, name));
      ASSERT_EQ(store_db_create(t.s, name), DV_EDB_EXISTS);
      continue;
    }
    char id[8], doc[200];
    snprintf(id, sizeof id, "k%d", d);
    int del = m[d].rev[0] && (x >> 40) % 4 == 0;
    if (m[d].rev[0] && !m[d].deleted)
      snprintf(doc, sizeof doc, "{\"_id\":\"%s\",\"_rev\":\"%s\",\"n\":%d%s}", id, m[d].rev, i,
               del ? ",\"_deleted\":true" : "");
    else
      snprintf(doc, sizeof doc, "{\"_id\":\"%s\",\"n\":%d}", id, i), del = 0;
    store_rev r;
    ASSERT_OK(put(&t, doc, &r));
    snprintf(m[d].rev, sizeof m[d].rev, "%s", R(&t, &r));
    m[d].deleted = del;
    ops++;
  }
  ASSERT(kv_fault_injected(t.kv, KV_FAULT_COMMIT_UNKNOWN_AFTER) > 50);
  ASSERT(kv_fault_injected(t.kv, KV_FAULT_COMMIT_UNKNOWN_BEFORE) > 50);
  kv_fault_clear(t.kv);
  /* every doc: its winner is the model's, exactly one changes row */
  struct chg g = {.n = 0};
  buf_init(&g.b);
  store_changes_opts o = {.limit = -1};
  ASSERT_OK(store_changes(t.db, &o, chg_cb, &g, NULL));
  int live = 0, dead = 0, present = 0;
  for (int d = 0; d < NDOC; d++) {
    if (!m[d].rev[0]) continue;
    present++;
    char id[8];
    snprintf(id, sizeof id, "k%d", d);
    store_leaf *l;
    size_t n;
    ASSERT_OK(store_doc_leaves(t.db, id, strlen(id), &t.a, &l, &n));
    ASSERT_EQ(n, 1);
    ASSERT_STR_EQ(R(&t, &l[0].rev), m[d].rev);
    ASSERT_EQ(l[0].deleted, m[d].deleted);
    live += !m[d].deleted;
    dead += m[d].deleted;
  }
  ASSERT_EQ(g.n, present);
  buf_free(&g.b);
  store_db_info in;
  ASSERT_OK(store_db_info_get(t.db, &in));
  ASSERT_EQ(in.doc_count, live);
  ASSERT_EQ(in.doc_del_count, dead);
  ASSERTF(ops > 1000, "ops %d", ops);
  st_down(&t);
}

static int count_cb(void *arg, const store_doc_row *r) {
  struct chg *g = arg;
  buf_append(&g->b, r->id, r->id_len);
  buf_putc(&g->b, ',');
  g->n++;
  return 0;
}

/* Reads longer than one batch continue from the last key: changes (500
 * rows a batch), _all_docs (1000 keys a batch) with conflicted documents
 * whose keys straddle batch ends, both directions, skip and limit. */
TEST(store_long_reads) {
  st t;
  st_up(&t, 0);
  enum { N = 2600 };
  store_edit *e = calloc(N, sizeof *e);
  char (*ids)[16] = calloc(N, 16);
  for (int i = 0; i < N; i++) {
    snprintf(ids[i], 16, "d%05d", i);
    e[i].id = ids[i];
    e[i].id_len = strlen(ids[i]);
  }
  ASSERT_OK(store_update(t.db, NULL, e, N, 1));
  for (int i = 0; i < N; i++) ASSERT_OK(e[i].rc);
  /* every 7th doc gets two more branches */
  for (int i = 0; i < N; i += 7) {
    char doc[200];
    snprintf(doc, sizeof doc, "{\"_id\":\"%s\",\"_revisions\":{\"start\":1,\"ids\":[\"%032x\"]}}", ids[i], i + 1);
    ASSERT_OK(put_repl(&t, doc));
    snprintf(doc, sizeof doc, "{\"_id\":\"%s\",\"_revisions\":{\"start\":1,\"ids\":[\"%032x\"]}}", ids[i], i + 100000);
    ASSERT_OK(put_repl(&t, doc));
  }
  struct chg g = {.n = 0};
  buf_init(&g.b);
  store_changes_opts o = {.limit = -1, .all_docs = 1};
  ASSERT_OK(store_changes(t.db, &o, chg_cb, &g, NULL));
  ASSERT_EQ(g.n, N);
  ASSERT(strstr((const char *)g.b.p, "d00007:3,"));
  buf_reset(&g.b);
  g.n = 0;
  store_range r;
  store_range_init(&r);
  ASSERT_OK(store_all_docs(t.db, STORE_ALL, &r, 0, 0, count_cb, &g));
  ASSERT_EQ(g.n, N);
  for (int i = 0; i < N; i++) { /* each id once, in order */
    char want[16];
    snprintf(want, sizeof want, "d%05d,", i);
    ASSERT(!memcmp(g.b.p + (size_t)i * 7, want, 7));
  }
  buf_reset(&g.b);
  g.n = 0;
  r.descending = 1;
  r.skip = 10;
  r.limit = 1500;
  ASSERT_OK(store_all_docs(t.db, STORE_ALL, &r, 0, 0, count_cb, &g));
  ASSERT_EQ(g.n, 1500);
  ASSERT(!memcmp(g.b.p, "d02589,", 7));
  ASSERT(!memcmp(g.b.p + 1499 * 7, "d01090,", 7));
  buf_free(&g.b);
  free(e);
  free(ids);
  st_down(&t);
}

/* The background thread makes the _db_updates index current by itself. */
TEST(store_background_consumer) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/bg", test_tmpdir());
  kv_db *kv;
  ASSERT_OK(storet_kv_open(dir, 0, &kv));
  store_opts so = {.background = 1, .db_updates_partitions = 3};
  store *s;
  ASSERT_OK(store_open(kv, &so, &s));
  ASSERT_OK(store_db_create(s, "x"));
  store_db *db;
  ASSERT_OK(store_db_open(s, "x", &db));
  store_edit e = {.id = "a", .id_len = 1};
  ASSERT_OK(store_update(db, NULL, &e, 1, 1));
  int seen = 0;
  for (int i = 0; i < 100 && !seen; i++) {
    dv_buf b;
    buf_init(&b);
    ASSERT_OK(store_db_updates(s, NULL, -1, dbu_cb, &b, NULL));
    seen = b.p && strstr((const char *)b.p, "x:updated") != NULL;
    buf_free(&b);
    if (!seen) usleep(50000);
  }
  ASSERT(seen);
  store_db_close(db);
  store_close(s);
  kv_close(kv);
}

/* TxIds live in minute buckets; cleanup drops the ones over an hour old
 * with one clear_range and keeps the recent ones. */
#include "store/store_int.h"

static int count_txids(st *t) {
  dv_buf b, e;
  buf_init(&b);
  buf_init(&e);
  tup_w w;
  st_key_cluster(t->s, &b, &w, "txids");
  buf_append(&e, b.p, b.len);
  buf_putc(&e, 0xff);
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(t->kv, &txn));
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_get_range(txn, b.p, b.len, e.p, e.len, 0, 0, &p, &n, &more));
  kv_txn_destroy(txn);
  buf_free(&b);
  buf_free(&e);
  return n;
}

TEST(store_txid_cleanup) {
  st t;
  st_up(&t, 0);
  int before = count_txids(&t); /* the creation of "db" wrote one */
  ASSERT(before >= 1);
  dv_buf k;
  buf_init(&k);
  tup_w w;
  st_key_cluster(t.s, &k, &w, "txids");
  tup_int(&w, st_now_ms() / 1000 / ST_TXID_BUCKET_S - ST_TXID_KEEP_BUCKETS - 5);
  tup_bytes(&w, "0123456789abcdef", 16);
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(t.kv, &txn));
  ASSERT_OK(kv_set(txn, k.p, k.len, "", 0));
  ASSERT_OK(kv_commit(txn));
  kv_txn_destroy(txn);
  buf_free(&k);
  ASSERT_EQ(count_txids(&t), before + 1);
  ASSERT_OK(st_txid_cleanup(t.s));
  ASSERT_EQ(count_txids(&t), before);
  st_down(&t);
}

/* Document ids: one rule set (name.c), CouchDB's reasons, for every path. */
TEST(store_docid_rules) {
  static const struct {
    const char *id;
    int local;
    const char *why; /* NULL: good */
  } t[] = {
      {"", 1, "Document id must not be empty"},
      {"_design/", 1, "Illegal document id `_design/`"},
      {"_design/", 0, "Illegal document id `_design/`"},
      {"_local/", 1, "Illegal document id `_local/`"},
      {"_local/", 0, "Only reserved document ids may start with underscore."},
      {"_local/x", 0, "Only reserved document ids may start with underscore."},
      {"_local/x", 1, NULL},
      {"_design/x", 0, NULL},
      {"_x", 1, "Only reserved document ids may start with underscore."},
      {"\xff", 1, "Document id must be valid UTF-8"},
      {"a", 0, NULL},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    const char *w = store_docid_problem(t[i].id, strlen(t[i].id), t[i].local);
    ASSERTF(t[i].why ? w && !strcmp(w, t[i].why) : !w, "%s (local %d): %s", t[i].id, t[i].local, w ? w : "ok");
    ASSERT_EQ(store_docid_check(t[i].id, strlen(t[i].id), t[i].local), t[i].why ? DV_EBAD_DOCID : 0);
  }
  char big[STORE_MAX_DOCID + 2];
  memset(big, 'a', sizeof big);
  ASSERT_STR_EQ(store_docid_problem(big, STORE_MAX_DOCID + 1, 1), "Document id is too long");
  ASSERT(!store_docid_problem(big, STORE_MAX_DOCID, 1));
}
