/* test_purge.c — store_purge against CouchDB's _purge semantics: a losing
 * leaf, the only leaf, the winner of a conflicted document (the next leaf
 * wins and the document moves to a new changes row), a deleted leaf, revs
 * that are not leaves, a purged document created again, the purge
 * sequence with its infos and purged_infos_limit, and purges whose commit
 * comes back unknown. Every case checks the changes feed, _all_docs and
 * the counters afterwards; size_active must come back to 0 once every
 * leaf of every document is gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/kv_fault.h"
#include "storet.h"

/* Revs made up for new_edits=false trees: "N-" + 32 times c. */
static const char *R(dv_arena *a, int pos, char c) {
  char *s = arena_alloc(a, 40);
  ASSERT(s != NULL);
  int n = snprintf(s, 40, "%d-", pos);
  memset(s + n, c, 32);
  s[n + 32] = 0;
  return s;
}

/* A replicated branch: leaf rev (pos, c), parents (pos-1, p1)… given as a
 * string of hash letters, newest first ("cba": 3-c…, 2-b…, 1-a…). */
static void branch(storet *t, const char *id, const char *letters, int deleted, const char *body) {
  size_t n = strlen(letters);
  char doc[4096];
  int k = snprintf(doc, sizeof doc, "{\"_id\":\"%s\",%s\"_revisions\":{\"start\":%zu,\"ids\":[", id,
                   deleted ? "\"_deleted\":true," : "", n);
  for (size_t i = 0; i < n; i++) {
    char h[33];
    memset(h, letters[i], 32);
    h[32] = 0;
    k += snprintf(doc + k, sizeof doc - (size_t)k, "%s\"%s\"", i ? "," : "", h);
  }
  snprintf(doc + k, sizeof doc - (size_t)k, "]}%s%s}", body ? "," : "", body ? body : "");
  ASSERT_OK(storet_put_doc(t->db, &t->a, doc, 0, NULL));
}

static size_t purge(storet *t, const char *id, const char *const *revs, size_t n, store_rev **out) {
  store_rev *rv = n ? arena_alloc(&t->a, n * sizeof *rv) : NULL;
  for (size_t i = 0; i < n; i++) rv[i] = storet_rev(&t->a, revs[i]);
  store_rev *p = NULL;
  size_t np = 99;
  ASSERT_OK(store_purge(t->db, id, strlen(id), rv, n, &t->a, &p, &np));
  if (out) *out = p;
  return np;
}

static store_db_info info(storet *t) {
  store_db_info i;
  ASSERT_OK(store_db_info_get(t->db, &i));
  return i;
}

static int count_row(void *arg, const store_doc_row *row) {
  (void)row;
  (*(int *)arg)++;
  return 0;
}

static int all_docs_n(storet *t) {
  store_range r;
  store_range_init(&r);
  int n = 0;
  ASSERT_OK(store_all_docs(t->db, STORE_ALL, &r, 0, 0, count_row, &n));
  return n;
}

/* The winner's "_rev" of a document (asserts it can be read, deleted or not). */
static const char *winner(storet *t, const char *id) {
  store_leaf *l;
  size_t n;
  ASSERT_OK(store_doc_leaves(t->db, id, strlen(id), &t->a, &l, &n));
  ASSERT(n >= 1);
  return storet_rev_str(&t->a, &l[0].rev);
}

static size_t leaves_n(storet *t, const char *id) {
  store_leaf *l;
  size_t n;
  int rc = store_doc_leaves(t->db, id, strlen(id), &t->a, &l, &n);
  if (rc == DV_ENOT_FOUND) return 0;
  ASSERT_OK(rc);
  return n;
}

/* The changes row of id (asserts it appears at most once); NULL if none. */
static const storet_change *change_of(storet *t, const char *id) {
  storet_change *rows;
  size_t n = storet_changes(t->db, &t->a, NULL, &rows, NULL);
  const storet_change *hit = NULL;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(rows[i].id, id)) {
      ASSERTF(!hit, "%s appears twice in the changes feed", id);
      hit = &rows[i];
    }
  return hit;
}

TEST(store_purge_leaf) {
  storet *t = storet_open(NULL, 0, "db");
  branch(t, "a", "ba", 0, "\"v\":1");
  branch(t, "a", "ca", 0, "\"v\":2");
  ASSERT_STR_EQ(winner(t, "a"), R(&t->a, 2, 'c'));
  store_db_info i0 = info(t);
  const storet_change *c0 = change_of(t, "a");
  ASSERT(c0 != NULL);
  store_seq s0 = c0->seq;
  /* purge the losing leaf: the winner stays, the doc moves in the feed */
  const char *revs[] = {R(&t->a, 2, 'b')};
  store_rev *p;
  ASSERT_EQ(purge(t, "a", revs, 1, &p), 1);
  ASSERT_STR_EQ(storet_rev_str(&t->a, &p[0]), revs[0]);
  ASSERT_EQ(leaves_n(t, "a"), 1);
  ASSERT_STR_EQ(winner(t, "a"), R(&t->a, 2, 'c'));
  const storet_change *c1 = change_of(t, "a");
  ASSERT(c1 != NULL);
  ASSERT(store_seq_cmp(&c1->seq, &s0) > 0);
  ASSERT_STR_EQ(storet_rev_str(&t->a, &c1->rev), R(&t->a, 2, 'c'));
  store_db_info i1 = info(t);
  ASSERT_EQ(i1.doc_count, 1);
  ASSERT_EQ(i1.doc_del_count, 0);
  ASSERT_EQ(i1.size_external, i0.size_external);
  ASSERT(i1.size_active < i0.size_active && i1.size_active > 0);
  ASSERT(store_seq_cmp(&i1.update_seq, &i0.update_seq) > 0);
  /* the purged rev is gone for reads, the other one still there */
  json_val *d;
  ASSERT_EQ(storet_get(t->db, &t->a, "a", revs[0], 0, &d), DV_ENOT_FOUND);
  ASSERT_OK(storet_get(t->db, &t->a, "a", R(&t->a, 2, 'c'), 0, &d));
  ASSERT_OK(storet_get(t->db, &t->a, "a", NULL, STORE_CONFLICTS, &d));
  ASSERT(json_obj_getz(d, "_conflicts") == NULL);
  /* the shared ancestor lives on in the remaining branch */
  store_leaf *l;
  size_t nl;
  ASSERT_OK(store_doc_leaves(t->db, "a", 1, &t->a, &l, &nl));
  ASSERT_EQ(l[0].n_anc, 1);
  ASSERT_STR_EQ(storet_rev_str(&t->a, &l[0].anc[0]), R(&t->a, 1, 'a'));
  /* purging the same rev again matches nothing */
  ASSERT_EQ(purge(t, "a", revs, 1, NULL), 0);
  int64_t ps;
  ASSERT_OK(store_db_get_purge_seq(t->db, &ps));
  ASSERT_EQ(ps, 2);
  storet_close(t);
}

TEST(store_purge_full) {
  storet *t = storet_open(NULL, 0, "db");
  store_rev r1, r2;
  ASSERT_OK(storet_put(t->db, &t->a, "a", "{\"x\":[1,2,3],\"s\":\"hello\"}", NULL, 0, &r1));
  ASSERT_OK(storet_put(t->db, &t->a, "a", "{\"x\":4}", storet_rev_str(&t->a, &r1), 0, &r2));
  ASSERT_OK(storet_put(t->db, &t->a, "b", "{\"y\":1}", NULL, 0, NULL));
  ASSERT_EQ(all_docs_n(t), 2);
  store_db_info i0 = info(t);
  ASSERT_EQ(i0.doc_count, 2);
  /* the old rev is not a leaf: nothing happens */
  const char *old[] = {storet_rev_str(&t->a, &r1)};
  ASSERT_EQ(purge(t, "a", old, 1, NULL), 0);
  ASSERT_EQ(info(t).doc_count, 2);
  ASSERT_EQ(leaves_n(t, "a"), 1);
  /* the leaf, named twice and with a stranger: purged once */
  const char *revs[] = {storet_rev_str(&t->a, &r2), storet_rev_str(&t->a, &r2), "7-abc", old[0]};
  store_rev *p;
  ASSERT_EQ(purge(t, "a", revs, 4, &p), 1);
  ASSERT(storet_rev_eq(&p[0], &r2));
  json_val *d;
  ASSERT_EQ(storet_get(t->db, &t->a, "a", NULL, 0, &d), DV_ENOT_FOUND);
  ASSERT_EQ(leaves_n(t, "a"), 0);
  ASSERT(change_of(t, "a") == NULL);
  ASSERT(change_of(t, "b") != NULL);
  ASSERT_EQ(all_docs_n(t), 1);
  store_db_info i1 = info(t);
  ASSERT_EQ(i1.doc_count, 1);
  ASSERT_EQ(i1.doc_del_count, 0);
  ASSERT(i1.size_external < i0.size_external);
  /* b's sizes alone are left: purge b too and both come to 0 */
  const char *br[] = {winner(t, "b")};
  ASSERT_EQ(purge(t, "b", br, 1, NULL), 1);
  store_db_info i2 = info(t);
  ASSERT_EQ(i2.doc_count, 0);
  ASSERT_EQ(i2.doc_del_count, 0);
  ASSERT_EQ(i2.size_external, 0);
  ASSERT_EQ(i2.size_active, 0);
  ASSERT_EQ(storet_changes(t->db, &t->a, NULL, NULL, NULL), 0);
  ASSERT_EQ(all_docs_n(t), 0);
  /* unknown ids purge nothing, but each call is a purge (CouchDB) */
  ASSERT_EQ(purge(t, "nope", revs, 1, NULL), 0);
  ASSERT_EQ(purge(t, "nope", NULL, 0, NULL), 0);
  int64_t ps;
  ASSERT_OK(store_db_get_purge_seq(t->db, &ps));
  ASSERT_EQ(ps, 5);
  storet_close(t);
}

TEST(store_purge_winner) {
  storet *t = storet_open(NULL, 0, "db");
  /* three branches from 1-a: 2-b, 3-dc (winner), 2-e deleted */
  branch(t, "a", "ba", 0, "\"who\":\"b\"");
  branch(t, "a", "dca", 0, "\"who\":\"d\",\"pad\":\"xxxxxxxxxxxxxxxxxxxx\"");
  branch(t, "a", "ea", 1, NULL);
  ASSERT_OK(storet_put(t->db, &t->a, "z", "{}", NULL, 0, NULL));
  ASSERT_STR_EQ(winner(t, "a"), R(&t->a, 3, 'd'));
  store_db_info i0 = info(t);
  ASSERT_EQ(i0.doc_count, 2);
  store_seq s0 = change_of(t, "a")->seq;
  /* purge the winner: 2-b wins (live beats deleted) */
  const char *w[] = {R(&t->a, 3, 'd')};
  ASSERT_EQ(purge(t, "a", w, 1, NULL), 1);
  ASSERT_STR_EQ(winner(t, "a"), R(&t->a, 2, 'b'));
  json_val *d;
  ASSERT_OK(storet_get(t->db, &t->a, "a", NULL, STORE_CONFLICTS | STORE_DELETED_CONFLICTS, &d));
  ASSERT_STR_EQ(storet_json_text(&t->a, d),
                storet_json_text(&t->a, storet_json(&t->a, "{\"_id\":\"a\",\"_rev\":\"2-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\","
                                                           "\"who\":\"b\",\"_deleted_conflicts\":"
                                                           "[\"2-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\"]}")));
  const storet_change *c = change_of(t, "a");
  ASSERT(c != NULL);
  ASSERT(store_seq_cmp(&c->seq, &s0) > 0);
  ASSERT_STR_EQ(storet_rev_str(&t->a, &c->rev), R(&t->a, 2, 'b'));
  ASSERT_EQ(c->deleted, 0);
  /* the feed's last row is a's (it moved past z) */
  storet_change *rows;
  size_t n = storet_changes(t->db, &t->a, NULL, &rows, NULL);
  ASSERT_EQ(n, 2);
  ASSERT_STR_EQ(rows[1].id, "a");
  store_db_info i1 = info(t);
  ASSERT_EQ(i1.doc_count, 2);
  ASSERT_EQ(i1.doc_del_count, 0);
  ASSERT(i1.size_external < i0.size_external);
  /* purge the live leaf left: the deleted one wins, the doc is deleted */
  const char *b[] = {R(&t->a, 2, 'b')};
  ASSERT_EQ(purge(t, "a", b, 1, NULL), 1);
  ASSERT_EQ(storet_get(t->db, &t->a, "a", NULL, 0, &d), DV_EDELETED);
  ASSERT_STR_EQ(winner(t, "a"), R(&t->a, 2, 'e'));
  c = change_of(t, "a");
  ASSERT(c != NULL && c->deleted);
  store_db_info i2 = info(t);
  ASSERT_EQ(i2.doc_count, 1);
  ASSERT_EQ(i2.doc_del_count, 1);
  ASSERT_EQ(all_docs_n(t), 1);
  /* keys mode still sees the tombstone */
  storet_close(t);
}

TEST(store_purge_deleted_leaf) {
  storet *t = storet_open(NULL, 0, "db");
  store_rev r1, r2;
  ASSERT_OK(storet_put(t->db, &t->a, "a", "{\"k\":1}", NULL, 0, &r1));
  ASSERT_OK(storet_put(t->db, &t->a, "a", NULL, storet_rev_str(&t->a, &r1), 1, &r2));
  store_db_info i0 = info(t);
  ASSERT_EQ(i0.doc_count, 0);
  ASSERT_EQ(i0.doc_del_count, 1);
  ASSERT(change_of(t, "a") != NULL);
  const char *revs[] = {storet_rev_str(&t->a, &r2)};
  ASSERT_EQ(purge(t, "a", revs, 1, NULL), 1);
  ASSERT_EQ(leaves_n(t, "a"), 0);
  ASSERT(change_of(t, "a") == NULL);
  store_db_info i1 = info(t);
  ASSERT_EQ(i1.doc_count, 0);
  ASSERT_EQ(i1.doc_del_count, 0);
  ASSERT_EQ(i1.size_active, 0);
  ASSERT_EQ(i1.size_external, 0);
  /* a deleted leaf beside a live winner: purging it only drops the branch */
  branch(t, "c", "ba", 0, "\"v\":1");
  branch(t, "c", "fa", 1, NULL);
  ASSERT_STR_EQ(winner(t, "c"), R(&t->a, 2, 'b'));
  const char *f[] = {R(&t->a, 2, 'f')};
  ASSERT_EQ(purge(t, "c", f, 1, NULL), 1);
  ASSERT_EQ(leaves_n(t, "c"), 1);
  ASSERT_EQ(info(t).doc_count, 1);
  ASSERT_EQ(info(t).doc_del_count, 0);
  storet_close(t);
}

TEST(store_purge_recreate) {
  storet *t = storet_open(NULL, 0, "db");
  store_rev r1, r2;
  ASSERT_OK(storet_put(t->db, &t->a, "a", "{\"gen\":1}", NULL, 0, &r1));
  const char *revs[] = {storet_rev_str(&t->a, &r1)};
  ASSERT_EQ(purge(t, "a", revs, 1, NULL), 1);
  /* a new document, not an edit of the purged one: generation 1 again */
  ASSERT_OK(storet_put(t->db, &t->a, "a", "{\"gen\":2}", NULL, 0, &r2));
  ASSERT_EQ(r2.pos, 1);
  json_val *d;
  ASSERT_OK(storet_get(t->db, &t->a, "a", NULL, 0, &d));
  ASSERT_STR_EQ(storet_json_text(&t->a, json_obj_getz(d, "gen")), "2");
  ASSERT_EQ(leaves_n(t, "a"), 1);
  store_db_info i = info(t);
  ASSERT_EQ(i.doc_count, 1);
  ASSERT_EQ(all_docs_n(t), 1);
  ASSERT(change_of(t, "a") != NULL);
  /* the purged rev can also come back through replication */
  ASSERT_OK(storet_put_doc(t->db, &t->a, "{\"_id\":\"b\",\"_rev\":\"1-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"}", 0, NULL));
  const char *b[] = {"1-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"};
  ASSERT_EQ(purge(t, "b", b, 1, NULL), 1);
  ASSERT_EQ(leaves_n(t, "b"), 0);
  ASSERT_OK(storet_put_doc(t->db, &t->a, "{\"_id\":\"b\",\"_rev\":\"1-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\"v\":1}", 0, NULL));
  ASSERT_EQ(leaves_n(t, "b"), 1);
  ASSERT_EQ(info(t).doc_count, 2);
  storet_close(t);
}

struct infos {
  dv_arena *a;
  int64_t seq[16];
  const char *id[16];
  size_t n_revs[16];
  const store_rev *revs[16];
  int n;
};

static int info_cb(void *arg, const store_purge_info *pi) {
  struct infos *s = arg;
  ASSERT(s->n < 16);
  s->seq[s->n] = pi->purge_seq;
  s->id[s->n] = arena_strndup(s->a, pi->id, pi->id_len);
  s->n_revs[s->n] = pi->n_revs;
  store_rev *r = arena_alloc(s->a, (pi->n_revs + 1) * sizeof *r);
  for (size_t i = 0; i < pi->n_revs; i++) r[i] = storet_rev_dup(s->a, &pi->revs[i]);
  s->revs[s->n] = r;
  s->n++;
  return 0;
}

static struct infos read_infos(storet *t, int64_t since) {
  struct infos s;
  memset(&s, 0, sizeof s);
  s.a = &t->a;
  ASSERT_OK(store_purge_infos(t->db, since, info_cb, &s));
  return s;
}

TEST(store_purge_infos_limit) {
  storet *t = storet_open(NULL, 0, "db");
  int64_t v;
  ASSERT_OK(store_db_get_purged_infos_limit(t->db, &v));
  ASSERT_EQ(v, STORE_DEFAULT_PURGED_INFOS_LIMIT);
  ASSERT_OK(store_db_get_purge_seq(t->db, &v));
  ASSERT_EQ(v, 0);
  ASSERT_EQ(store_db_set_purged_infos_limit(t->db, 0), DV_ERANGE);
  ASSERT_EQ(store_db_set_purged_infos_limit(t->db, -5), DV_ERANGE);
  ASSERT_OK(store_db_set_purged_infos_limit(t->db, 3));
  ASSERT_OK(store_db_get_purged_infos_limit(t->db, &v));
  ASSERT_EQ(v, 3);
  /* five purges: the infos of the last three are kept */
  const char *ids[] = {"d1", "d2", "d3", "d4", "d5"};
  for (int i = 0; i < 5; i++) {
    ASSERT_OK(storet_put(t->db, &t->a, ids[i], "{}", NULL, 0, NULL));
    const char *revs[] = {winner(t, ids[i]), "9-notthere"};
    ASSERT_EQ(purge(t, ids[i], revs, 2, NULL), 1);
  }
  ASSERT_OK(store_db_get_purge_seq(t->db, &v));
  ASSERT_EQ(v, 5);
  struct infos s = read_infos(t, 0);
  ASSERT_EQ(s.n, 3);
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(s.seq[i], 3 + i);
    ASSERT_STR_EQ(s.id[i], ids[2 + i]);
    ASSERT_EQ(s.n_revs[i], 2); /* what was asked, not what matched */
    ASSERT_STR_EQ(storet_rev_str(&t->a, &s.revs[i][1]), "9-notthere");
  }
  s = read_infos(t, 4);
  ASSERT_EQ(s.n, 1);
  ASSERT_EQ(s.seq[0], 5);
  /* lowering the limit drops the older infos at once */
  ASSERT_OK(store_db_set_purged_infos_limit(t->db, 1));
  s = read_infos(t, 0);
  ASSERT_EQ(s.n, 1);
  ASSERT_EQ(s.seq[0], 5);
  /* raising it keeps what is there and lets new ones pile up */
  ASSERT_OK(store_db_set_purged_infos_limit(t->db, 10));
  ASSERT_EQ(purge(t, "x", NULL, 0, NULL), 0);
  s = read_infos(t, 0);
  ASSERT_EQ(s.n, 2);
  ASSERT_EQ(s.seq[1], 6);
  ASSERT_EQ(s.n_revs[1], 0);
  /* a purge naming many long raw revs: its info spans several KVs */
  size_t many = 1200;
  store_rev *rv = arena_alloc(&t->a, many * sizeof *rv);
  for (size_t i = 0; i < many; i++) {
    char txt[300];
    int k = snprintf(txt, sizeof txt, "%zu-", i + 1);
    memset(txt + k, 'a' + (int)(i % 26), 250);
    txt[k + 250] = 0;
    rv[i] = storet_rev(&t->a, txt);
  }
  store_rev *p;
  size_t np;
  ASSERT_OK(store_purge(t->db, "x", 1, rv, many, &t->a, &p, &np));
  ASSERT_EQ(np, 0);
  s = read_infos(t, 6);
  ASSERT_EQ(s.n, 1);
  ASSERT_EQ(s.seq[0], 7);
  ASSERT_EQ(s.n_revs[0], many);
  for (size_t i = 0; i < many; i++) ASSERT(storet_rev_eq(&s.revs[0][i], &rv[i]));
  /* the database's other state is untouched by all this */
  ASSERT_EQ(info(t).doc_count, 0);
  ASSERT_EQ(info(t).size_active, 0);
  storet_close(t);
}

/* Random replicated branches, edits and purges over a few documents: after
 * every step the counters, the changes feed and _all_docs agree with the
 * documents' trees. */
TEST(store_purge_random) {
  storet *t = storet_open(NULL, 0, "db");
  uint64_t st = storet_seed("store_purge_random", 0x5eed);
  char id[16];
  long rounds = storet_env_long("DV_PURGE_ROUNDS", 300);
  for (long round = 0; round < rounds; round++) {
    snprintf(id, sizeof id, "d%d", (int)storet_below(&st, 6));
    int op = (int)storet_below(&st, 4);
    if (op == 0) { /* a new branch from a random root */
      char letters[4] = {0};
      int depth = 1 + (int)storet_below(&st, 3);
      for (int i = 0; i < depth; i++) letters[i] = (char)('a' + storet_below(&st, 6));
      branch(t, id, letters, storet_chance(&st, 1, 3), storet_chance(&st, 1, 2) ? "\"p\":\"qqqq\"" : NULL);
    } else if (op == 1) { /* an interactive edit of the winner */
      store_leaf *l;
      size_t n;
      int rc = store_doc_leaves(t->db, id, strlen(id), &t->a, &l, &n);
      if (rc == DV_ENOT_FOUND) ASSERT_OK(storet_put(t->db, &t->a, id, "{\"i\":1}", NULL, 0, NULL));
      else if (!l[0].deleted)
        ASSERT_OK(storet_put(t->db, &t->a, id, "{\"i\":2}", storet_rev_str(&t->a, &l[0].rev), 0, NULL));
    } else { /* purge some leaves */
      store_leaf *l;
      size_t n;
      int rc = store_doc_leaves(t->db, id, strlen(id), &t->a, &l, &n);
      if (rc == DV_ENOT_FOUND) continue;
      store_rev *rv = arena_alloc(&t->a, n * sizeof *rv);
      size_t k = 0;
      for (size_t i = 0; i < n; i++)
        if (storet_chance(&st, 1, 2)) rv[k++] = l[i].rev;
      store_rev *p;
      size_t np;
      ASSERT_OK(store_purge(t->db, id, strlen(id), rv, k, &t->a, &p, &np));
      ASSERT_EQ(np, k);
      ASSERT_EQ(leaves_n(t, id), n - k);
    }
    /* the counters against the documents */
    int64_t live = 0, dead = 0;
    for (int d = 0; d < 6; d++) {
      char di[16];
      snprintf(di, sizeof di, "d%d", d);
      store_leaf *l;
      size_t n;
      int rc = store_doc_leaves(t->db, di, strlen(di), &t->a, &l, &n);
      if (rc == DV_ENOT_FOUND) {
        ASSERT(change_of(t, di) == NULL);
        continue;
      }
      ASSERT_OK(rc);
      if (l[0].deleted) dead++;
      else live++;
      const storet_change *c = change_of(t, di);
      ASSERT(c != NULL);
      ASSERT(storet_rev_eq(&c->rev, &l[0].rev));
    }
    store_db_info i = info(t);
    ASSERT_EQ(i.doc_count, live);
    ASSERT_EQ(i.doc_del_count, dead);
    ASSERT_EQ(all_docs_n(t), live);
    arena_reset(&t->a);
  }
  /* purge everything: sizes come back to 0 */
  for (int d = 0; d < 6; d++) {
    snprintf(id, sizeof id, "d%d", d);
    store_leaf *l;
    size_t n;
    if (store_doc_leaves(t->db, id, strlen(id), &t->a, &l, &n) == DV_ENOT_FOUND) continue;
    store_rev *rv = arena_alloc(&t->a, n * sizeof *rv);
    for (size_t i = 0; i < n; i++) rv[i] = l[i].rev;
    store_rev *p;
    size_t np;
    ASSERT_OK(store_purge(t->db, id, strlen(id), rv, n, &t->a, &p, &np));
    ASSERT_EQ(np, n);
  }
  store_db_info i = info(t);
  ASSERT_EQ(i.doc_count, 0);
  ASSERT_EQ(i.doc_del_count, 0);
  ASSERT_EQ(i.size_active, 0);
  ASSERT_EQ(i.size_external, 0);
  ASSERT_EQ(storet_changes(t->db, &t->a, NULL, NULL, NULL), 0);
  storet_close(t);
}

TEST(store_purge_no_db) {
  storet *t = storet_open(NULL, 0, "db");
  ASSERT_OK(storet_put(t->db, &t->a, "a", "{}", NULL, 0, NULL));
  ASSERT_OK(store_db_delete(t->s, "db"));
  store_rev *p;
  size_t np;
  ASSERT_EQ(store_purge(t->db, "a", 1, NULL, 0, &t->a, &p, &np), DV_ENO_DB);
  int64_t v;
  ASSERT_EQ(store_db_get_purge_seq(t->db, &v), DV_ENO_DB);
  ASSERT_EQ(store_db_set_purged_infos_limit(t->db, 5), DV_ENO_DB);
  storet_close(t);
}

/* commit_unknown_result around purges: the answer is the one of the attempt
 * that committed, and each purge counts once in purge_seq. */
TEST(store_purge_commit_unknown) {
  storet *t = calloc(1, sizeof *t);
  ASSERT(t != NULL);
  t->dir = malloc(strlen(test_tmpdir()) + 8);
  ASSERT(t->dir != NULL);
  sprintf(t->dir, "%s/kv", test_tmpdir());
  arena_init(&t->a, 0);
  kv_db *inner;
  ASSERT_OK(storet_kv_open(t->dir, 0, &inner));
  ASSERT_OK(kv_fault_wrap(inner, &t->kv));
  ASSERT_OK(store_open(t->kv, NULL, &t->s));
  t->db = storet_create_db(t, "db");
  int64_t want_seq = 0;
  for (int i = 0; i < 40; i++) {
    char id[16];
    snprintf(id, sizeof id, "c%d", i);
    branch(t, id, "ba", 0, "\"v\":1");
    branch(t, id, "ca", i % 3 == 0, NULL);
    kv_fault_kind kind = i % 2 ? KV_FAULT_COMMIT_UNKNOWN_AFTER : KV_FAULT_COMMIT_UNKNOWN_BEFORE;
    kv_fault_set(t->kv, kind, 1.0, 1 + i % 2);
    const char *revs[] = {R(&t->a, 2, 'c'), R(&t->a, 1, 'a')};
    store_rev *p;
    ASSERT_EQ(purge(t, id, revs, 2, &p), 1);
    kv_fault_clear(t->kv);
    ASSERT_STR_EQ(storet_rev_str(&t->a, &p[0]), revs[0]);
    ASSERT_EQ(leaves_n(t, id), 1);
    ASSERT_STR_EQ(winner(t, id), R(&t->a, 2, 'b'));
    want_seq++;
    int64_t ps;
    ASSERT_OK(store_db_get_purge_seq(t->db, &ps));
    ASSERT_EQ(ps, want_seq);
    arena_reset(&t->a);
  }
  ASSERT(kv_fault_injected(t->kv, KV_FAULT_COMMIT_UNKNOWN_AFTER) >= 20);
  store_db_info i = info(t);
  ASSERT_EQ(i.doc_count, 40);
  ASSERT_EQ(i.doc_del_count, 0);
  ASSERT_EQ(storet_changes(t->db, &t->a, NULL, NULL, NULL), 40);
  storet_close(t);
}
