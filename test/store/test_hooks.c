/* test_hooks.c — store's write hooks (src/store/hooks.c), through a
 * provider of test validators and a recording index_update.
 *
 * store_hooks_validate: validators see the new doc as the client sent it
 *   and the old one (the leaf the edit replaces) through the accessor; a
 *   refusal is the edit's rc and why (copied into the wctx's arena), the
 *   other edits of the call are written; the first refusal wins; a write
 *   without a wctx (the server's own) runs no validator; new_edits=false
 *   edits are validated against the winner.
 * store_hooks_lazy_old: no validator that asks, no old-body read: extending
 *   the winner still reads 1 KV in 1 round trip (seed 000), with the hooks
 *   registered and a validator that does not look; one that looks reads
 *   the body once however often it asks.
 * store_hooks_conflict_order: an edit that conflicts on a document with no
 *   live winner is answered by the validators first; one on a live winner
 *   is a conflict first.
 * store_hooks_index_update: index_update is called inside the transaction
 *   for each document whose winner changed (create, update, delete,
 *   replicated branch that wins, purge of the winner or of the whole
 *   document), not for a losing branch; an error from it aborts the whole
 *   transaction: no document of the call is written.
 * store_hooks_reload: the provider is asked again after a _design/ write
 *   (metadata version bumped), not for ordinary writes.
 * (fdb_store_hooks_coherence, in test_fdb.c: the same across two stores.)
 */
#include <stdio.h>
#include <string.h>

#include "storet.h"

/* ---- a provider of test hooks ------------------------------------------------ */

typedef struct rec {
  int loads;               /* provider.load calls */
  int validate;            /* 1: register the validators below */
  int ask_old;             /* the first validator reads the old doc */
  int ask_twice;           /* … twice */
  const char *refuse_id;   /* this id is refused (DV_EFORBIDDEN "no <id>") */
  int calls;               /* validator calls */
  char last_new[512];      /* the last new doc seen, as JSON */
  char last_old[512];      /* the last old doc seen, as JSON ("null": none) */
  char last_user[64];      /* the last user's name */
  int second_calls;        /* calls of the second validator */
  int index;               /* 1: register index_update */
  int index_calls;
  char index_log[1024];    /* "id:old>new;" per call, revs as pos or "-" */
  const char *index_fail;  /* index_update fails (DV_EINTERNAL) for this id */
} rec;

static void jtext(const json_val *v, char *out, size_t cap) {
  dv_buf b;
  buf_init(&b);
  if (!v) buf_puts(&b, "null");
  else if (json_write(&b, v)) buf_puts(&b, "?");
  snprintf(out, cap, "%.*s", (int)b.len, (const char *)b.p);
  buf_free(&b);
}

static int v_first(void *ctx, const json_val *nd, store_old *old, const store_user *u, const json_val *sec,
                   dv_arena *a, const char **why) {
  rec *r = ctx;
  r->calls++;
  jtext(nd, r->last_new, sizeof r->last_new);
  snprintf(r->last_user, sizeof r->last_user, "%s", u->name ? u->name : "(anon)");
  if (r->ask_old) {
    json_val *od;
    int rc = store_old_doc(old, &od);
    if (rc) return rc;
    if (r->ask_twice && (rc = store_old_doc(old, &od))) return rc;
    jtext(od, r->last_old, sizeof r->last_old);
  }
  const json_val *id = json_obj_getz(nd, "_id");
  if (r->refuse_id && id && id->len == strlen(r->refuse_id) && !memcmp(id->u.s, r->refuse_id, id->len)) {
    char *m = arena_alloc(a, 64);
    snprintf(m, 64, "no %s", r->refuse_id);
    *why = m;
    return DV_EFORBIDDEN;
  }
  (void)sec;
  return 0;
}

static int v_second(void *ctx, const json_val *nd, store_old *old, const store_user *u, const json_val *sec,
                    dv_arena *a, const char **why) {
  rec *r = ctx;
  r->second_calls++;
  (void)nd, (void)old, (void)u, (void)sec, (void)a;
  *why = "second";
  return DV_EUNAUTHORIZED;
}

static void rev_pos(char *b, size_t cap, const store_winner *w) {
  if (!w) snprintf(b, cap, "-");
  else snprintf(b, cap, "%lld%s", (long long)w->rev->pos, w->deleted ? "d" : "");
}

static int ix(void *ctx, store_tx *t, const char *id, size_t id_len, const store_winner *ow,
              const store_winner *nw) {
  rec *r = ctx;
  kv_txn *txn = store_tx_kv(t);
  r->index_calls++;
  char o[16], n[16];
  rev_pos(o, sizeof o, ow);
  rev_pos(n, sizeof n, nw);
  size_t l = strlen(r->index_log);
  snprintf(r->index_log + l, sizeof r->index_log - l, "%.*s:%s>%s%s;", (int)id_len, id, o, n,
           nw && !nw->body ? "?" : "");
  if (r->index_fail && id_len == strlen(r->index_fail) && !memcmp(id, r->index_fail, id_len)) return DV_EINTERNAL;
  /* a write in the edit's own transaction: it commits or not with it */
  char k[64];
  int kl = snprintf(k, sizeof k, "hooktest/%.*s", (int)id_len, id);
  return kv_set(txn, (const uint8_t *)k, (size_t)kl, (const uint8_t *)"x", 1);
}

static int load(void *arg, const char *name, size_t len, store_hooks *out) {
  rec *r = arg;
  r->loads++;
  (void)name, (void)len;
  if (r->validate) {
    out->validate[0].fn = v_first;
    out->validate[0].ctx = r;
    out->validate[1].fn = v_second;
    out->validate[1].ctx = r;
    out->n_validate = r->refuse_id && !strcmp(r->refuse_id, "*second*") ? 2 : 1;
  }
  if (r->index) {
    out->index_update = ix;
    out->index_ctx = r;
  }
  return 0;
}

static void hooks_on(storet *t, rec *r) {
  store_hooks_provider p = {.load = load, .arg = r};
  store_set_hooks(t->s, &p);
}

static int put_as(store_db *db, dv_arena *a, const store_wctx *w, const char *doc, int new_edits, store_edit *e) {
  json_val *d = storet_json(a, doc);
  ASSERT_OK(store_edit_from_json(a, d, new_edits, e));
  return store_update(db, w, e, 1, new_edits);
}

static int hook_key_present(storet *t, const char *id) {
  char k[64];
  int kl = snprintf(k, sizeof k, "hooktest/%s", id);
  kv_txn *txn;
  ASSERT_OK(kv_txn_begin(t->kv, &txn));
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_get(txn, (const uint8_t *)k, (size_t)kl, 0, &v, &vl, &found));
  kv_txn_destroy(txn);
  return found;
}

/* ---- tests ------------------------------------------------------------------- */

TEST(store_hooks_validate) {
  storet *t = storet_open(NULL, 0, "db");
  rec r = {.validate = 1, .ask_old = 1};
  hooks_on(t, &r);
  dv_arena wa;
  arena_init(&wa, 0);
  store_user u = {.name = "bob"};
  store_wctx w = {.user = &u, .a = &wa};
  store_edit e;

  /* a create: no old doc */
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"a\",\"x\":1}", 1, &e));
  ASSERT_OK(e.rc);
  ASSERT_EQ(r.calls, 1);
  ASSERT_STR_EQ(r.last_new, "{\"_id\":\"a\",\"x\":1}");
  ASSERT_STR_EQ(r.last_old, "null");
  ASSERT_STR_EQ(r.last_user, "bob");
  const char *r1 = storet_rev_str(&t->a, &e.rev);

  /* an update: the old doc is the parent, the new one names it */
  char doc[256];
  snprintf(doc, sizeof doc, "{\"_id\":\"a\",\"_rev\":\"%s\",\"x\":2}", r1);
  ASSERT_OK(put_as(t->db, &t->a, &w, doc, 1, &e));
  ASSERT_OK(e.rc);
  char want[256];
  /* couch_doc:to_json_obj(Doc, [revs]): _revisions after the body */
  snprintf(want, sizeof want, "{\"_id\":\"a\",\"_rev\":\"%s\",\"x\":2,\"_revisions\":{\"start\":1,\"ids\":[\"%s\"]}}", r1,
           r1 + 2);
  ASSERT_STR_EQ(r.last_new, want);
  snprintf(want, sizeof want, "{\"_id\":\"a\",\"_rev\":\"%s\",\"x\":1}", r1);
  ASSERT_STR_EQ(r.last_old, want);
  const char *r2 = storet_rev_str(&t->a, &e.rev);

  /* a deletion: _deleted in the new doc */
  snprintf(doc, sizeof doc, "{\"_id\":\"a\",\"_rev\":\"%s\",\"_deleted\":true}", r2);
  ASSERT_OK(put_as(t->db, &t->a, &w, doc, 1, &e));
  ASSERT_OK(e.rc);
  snprintf(want, sizeof want, "{\"_id\":\"a\",\"_rev\":\"%s\",\"_deleted\":true,\"_revisions\":{\"start\":2,\"ids\":[\"%s\"]}}",
           r2, r2 + 2);
  ASSERT_STR_EQ(r.last_new, want);

  /* a refusal: rc and why, nothing written; the other edits of the call go on */
  r.refuse_id = "no";
  store_edit two[2];
  ASSERT_OK(store_edit_from_json(&t->a, storet_json(&t->a, "{\"_id\":\"no\",\"y\":1}"), 1, &two[0]));
  ASSERT_OK(store_edit_from_json(&t->a, storet_json(&t->a, "{\"_id\":\"yes\",\"y\":1}"), 1, &two[1]));
  ASSERT_OK(store_update(t->db, &w, two, 2, 1));
  ASSERT_EQ(two[0].rc, DV_EFORBIDDEN);
  ASSERT_STR_EQ(two[0].why, "no no");
  ASSERT_OK(two[1].rc);
  ASSERT(two[1].why == NULL);
  json_val *d;
  ASSERT_EQ(storet_get(t->db, &t->a, "no", NULL, 0, &d), DV_ENOT_FOUND);
  ASSERT_OK(storet_get(t->db, &t->a, "yes", NULL, 0, &d));

  /* the first refusal wins; a second validator runs when the first passes */
  r.refuse_id = "*second*";
  store_set_hooks(t->s, &(store_hooks_provider){.load = load, .arg = &r}); /* reload */
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"b\"}", 1, &e));
  ASSERT_EQ(e.rc, DV_EUNAUTHORIZED);
  ASSERT_STR_EQ(e.why, "second");
  ASSERT_EQ(r.second_calls, 1);

  /* the server's own write (no wctx): no validator */
  int calls = r.calls;
  ASSERT_OK(put_as(t->db, &t->a, NULL, "{\"_id\":\"c\"}", 1, &e));
  ASSERT_OK(e.rc);
  ASSERT_EQ(r.calls, calls);

  /* new_edits=false: oldDoc is the leaf the incoming path extends
   * (couch_db's make_first_doc_on_disk), none for a branch of its own */
  r.refuse_id = NULL;
  store_set_hooks(t->s, &(store_hooks_provider){.load = load, .arg = &r});
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"c\",\"_revisions\":{\"start\":2,\"ids\":[\"" 
                   "0123456789abcdef0123456789abcdef\",\"00000000000000000000000000000000\"]},\"z\":3}", 0, &e));
  ASSERT_OK(e.rc);
  ASSERT_STR_EQ(r.last_old, "null");
  ASSERT(strstr(r.last_new, "\"z\":3") != NULL);
  r.refuse_id = "c";
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"c\",\"_revisions\":{\"start\":3,\"ids\":[\""
                   "1123456789abcdef0123456789abcdef\",\"0123456789abcdef0123456789abcdef\"]}}", 0, &e));
  ASSERT_EQ(e.rc, DV_EFORBIDDEN);
  ASSERT_STR_EQ(e.why, "no c");
  ASSERT(strstr(r.last_old, "\"z\":3") != NULL); /* it extends 2-0123…: that leaf is oldDoc */

  arena_free(&wa);
  storet_close(t);
}

TEST(store_hooks_lazy_old) {
  storet *t = storet_open(NULL, 0, "db");
  store_rev r1, r2;
  ASSERT_OK(storet_put(t->db, &t->a, "p", "{\"a\":1}", NULL, 0, &r1));
  rec r = {.validate = 1, .ask_old = 0};
  hooks_on(t, &r);
  store_user u = {.name = "bob"};
  store_wctx w = {.user = &u};
  store_edit e;
  store_read_stats s;
  char doc[256];

  /* a validator that does not ask: extending the winner reads 1 KV */
  snprintf(doc, sizeof doc, "{\"_id\":\"p\",\"_rev\":\"%s\",\"a\":2}", storet_rev_str(&t->a, &r1));
  store_read_stats_reset();
  ASSERT_OK(put_as(t->db, &t->a, &w, doc, 1, &e));
  ASSERT_OK(e.rc);
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 1);
  ASSERT_EQ(s.kvs, 1);
  ASSERT_EQ(s.old_bodies, 0);
  ASSERT_EQ(r.calls, 1);
  r2 = storet_rev_dup(&t->a, &e.rev);

  /* one that asks (twice): one body read */
  r.ask_old = r.ask_twice = 1;
  snprintf(doc, sizeof doc, "{\"_id\":\"p\",\"_rev\":\"%s\",\"a\":3}", storet_rev_str(&t->a, &r2));
  store_read_stats_reset();
  ASSERT_OK(put_as(t->db, &t->a, &w, doc, 1, &e));
  ASSERT_OK(e.rc);
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 1);
  ASSERT_EQ(s.kvs, 1);
  ASSERT_EQ(s.old_bodies, 1);
  ASSERT(strstr(r.last_old, "\"a\":2") != NULL);

  /* a create: nothing to read, whatever the validator asks */
  store_read_stats_reset();
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"q\"}", 1, &e));
  store_read_stats_get(&s);
  ASSERT_EQ(s.round_trips, 1);
  ASSERT_EQ(s.old_bodies, 0);
  storet_close(t);
}

TEST(store_hooks_conflict_order) {
  storet *t = storet_open(NULL, 0, "db");
  rec r = {.validate = 1, .refuse_id = "x"};
  hooks_on(t, &r);
  store_user u = {.name = "bob"};
  store_wctx w = {.user = &u};
  store_edit e;
  /* no such document, a rev named: the validator answers, not the conflict */
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"x\",\"_rev\":\"1-0123456789abcdef0123456789abcdef\"}", 1, &e));
  ASSERT_EQ(e.rc, DV_EFORBIDDEN);
  /* a validator that passes: the conflict */
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"y\",\"_rev\":\"1-0123456789abcdef0123456789abcdef\"}", 1, &e));
  ASSERT_EQ(e.rc, DV_ECONFLICT);
  /* a live document, a stale rev: the conflict first */
  ASSERT_OK(storet_put(t->db, &t->a, "x", NULL, NULL, 0, NULL));
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"x\",\"_rev\":\"1-0123456789abcdef0123456789abcdef\"}", 1, &e));
  ASSERT_EQ(e.rc, DV_ECONFLICT);
  ASSERT_OK(put_as(t->db, &t->a, &w, "{\"_id\":\"x\"}", 1, &e));
  ASSERT_EQ(e.rc, DV_ECONFLICT);
  storet_close(t);
}

TEST(store_hooks_index_update) {
  storet *t = storet_open(NULL, 0, "db");
  rec r = {.index = 1};
  hooks_on(t, &r);
  store_rev r1, r2;
  ASSERT_OK(storet_put(t->db, &t->a, "a", "{\"v\":1}", NULL, 0, &r1));
  ASSERT_OK(storet_put(t->db, &t->a, "a", "{\"v\":2}", storet_rev_str(&t->a, &r1), 0, &r2));
  ASSERT_OK(storet_put(t->db, &t->a, "a", NULL, storet_rev_str(&t->a, &r2), 1, NULL));
  ASSERT_STR_EQ(r.index_log, "a:->1;a:1>2;a:2>3d;");
  ASSERT(hook_key_present(t, "a"));
  /* a replicated branch that loses: the winner stays but the changes row
   * moves, a call with the same leaf (body not at hand); one that wins: a call */
  r.index_log[0] = 0;
  store_edit e;
  ASSERT_OK(put_as(t->db, &t->a, NULL, "{\"_id\":\"b\",\"_revisions\":{\"start\":3,\"ids\":[\""
                   "3333333333333333333333333333333a\",\"2222222222222222222222222222222a\"]}}", 0, &e));
  ASSERT_OK(put_as(t->db, &t->a, NULL, "{\"_id\":\"b\",\"_revisions\":{\"start\":1,\"ids\":[\""
                   "1111111111111111111111111111111b\"]}}", 0, &e));
  ASSERT_OK(put_as(t->db, &t->a, NULL, "{\"_id\":\"b\",\"_revisions\":{\"start\":4,\"ids\":[\""
                   "4444444444444444444444444444444b\",\"3333333333333333333333333333333b\"]}}", 0, &e));
  ASSERT_STR_EQ(r.index_log, "b:->3;b:3>3?;b:3>4;");
  /* purge: the winner goes (the next branch wins, its body not at hand),
   * then the whole document */
  r.index_log[0] = 0;
  store_rev pr = storet_rev(&t->a, "4-4444444444444444444444444444444b"), *pout;
  size_t pn;
  ASSERT_OK(store_purge(t->db, "b", 1, &pr, 1, &t->a, &pout, &pn));
  ASSERT_EQ(pn, 1);
  store_leaf *lv;
  size_t nl;
  ASSERT_OK(store_doc_leaves(t->db, "b", 1, &t->a, &lv, &nl));
  store_rev all[2] = {lv[0].rev, lv[1].rev};
  ASSERT_OK(store_purge(t->db, "b", 1, all, 2, &t->a, &pout, &pn));
  ASSERT_EQ(pn, 2);
  ASSERT_STR_EQ(r.index_log, "b:4>3?;b:3>-;");
  ASSERT_OK(put_as(t->db, &t->a, NULL, "{\"_id\":\"b\"}", 1, &e));
  /* an error aborts the transaction: neither edit of the call is written */
  r.index_fail = "bad";
  store_edit two[2];
  ASSERT_OK(store_edit_from_json(&t->a, storet_json(&t->a, "{\"_id\":\"good\"}"), 1, &two[0]));
  ASSERT_OK(store_edit_from_json(&t->a, storet_json(&t->a, "{\"_id\":\"bad\"}"), 1, &two[1]));
  ASSERT_EQ(store_update(t->db, NULL, two, 2, 1), DV_EINTERNAL);
  json_val *d;
  ASSERT_EQ(storet_get(t->db, &t->a, "good", NULL, 0, &d), DV_ENOT_FOUND);
  ASSERT_EQ(storet_get(t->db, &t->a, "bad", NULL, 0, &d), DV_ENOT_FOUND);
  ASSERT(!hook_key_present(t, "good"));
  store_db_info in;
  ASSERT_OK(store_db_info_get(t->db, &in));
  ASSERT_EQ(in.doc_count, 1); /* b */
  storet_close(t);
}

TEST(store_hooks_reload) {
  storet *t = storet_open(NULL, 0, "db");
  rec r = {0};
  hooks_on(t, &r);
  ASSERT_OK(storet_put(t->db, &t->a, "a", NULL, NULL, 0, NULL));
  ASSERT_EQ(r.loads, 1);
  ASSERT_OK(storet_put(t->db, &t->a, "b", NULL, NULL, 0, NULL));
  ASSERT_EQ(r.loads, 1); /* cached on the handle */
  ASSERT_OK(storet_put(t->db, &t->a, "_design/x", NULL, NULL, 0, NULL));
  ASSERT_OK(storet_put(t->db, &t->a, "c", NULL, NULL, 0, NULL));
  ASSERT_EQ(r.loads, 2); /* the design write moved the metadata version */
  ASSERT_OK(storet_put(t->db, &t->a, "d", NULL, NULL, 0, NULL));
  ASSERT_EQ(r.loads, 2);
  store_set_hooks(t->s, NULL);
  ASSERT_OK(storet_put(t->db, &t->a, "e", NULL, NULL, 0, NULL));
  ASSERT_EQ(r.loads, 2);
  storet_close(t);
}

/* ---- two stores over one FoundationDB double (two processes) -------------------- */

#include "kv/kvt.h"

static const char *policy; /* what a table loaded now refuses */

static int load_policy(void *arg, const char *name, size_t len, store_hooks *out) {
  rec *r = arg;
  r->refuse_id = policy; /* the table's content is what it was at load time */
  return load(arg, name, len, out);
}

TEST(fdb_store_hooks_coherence) {
  storet_pair pair;
  storet_fdb_pair(&pair);
  store *s1 = pair.s[0], *s2 = pair.s[1];
  rec r1 = {.validate = 1}, r2 = {.validate = 1};
  store_set_hooks(s1, &(store_hooks_provider){.load = load_policy, .arg = &r1});
  store_set_hooks(s2, &(store_hooks_provider){.load = load_policy, .arg = &r2});
  dv_arena a;
  arena_init(&a, 0);
  ASSERT_OK(store_db_create(s1, "db"));
  store_db *h1, *h2;
  ASSERT_OK(store_db_open(s1, "db", &h1));
  ASSERT_OK(store_db_open(s2, "db", &h2));
  store_user u = {.name = "bob"};
  store_wctx w = {.user = &u, .a = &a};
  store_edit e;

  policy = NULL;
  ASSERT_OK(put_as(h2, &a, &w, "{\"_id\":\"z\"}", 1, &e));
  ASSERT_OK(e.rc);
  ASSERT_EQ(r2.loads, 1);
  char doc[128];
  snprintf(doc, sizeof doc, "{\"_id\":\"z\",\"_rev\":\"%s\"}", storet_rev_str(&a, &e.rev));
  /* the hooks change (as a new design document would bring): s2 still
   * writes with the table it cached ... */
  policy = "z";
  ASSERT_OK(put_as(h2, &a, &w, "{\"_id\":\"y\"}", 1, &e));
  ASSERT_OK(e.rc);
  ASSERT_EQ(r2.loads, 1);
  /* ... until the design document's write through s1 bumps the metadata
   * version: s2's very next write loads the new table */
  ASSERT_OK(put_as(h1, &a, NULL, "{\"_id\":\"_design/v\"}", 1, &e));
  ASSERT_OK(e.rc);
  ASSERT_OK(put_as(h2, &a, &w, doc, 1, &e));
  ASSERT_EQ(e.rc, DV_EFORBIDDEN);
  ASSERT_STR_EQ(e.why, "no z");
  ASSERT_EQ(r2.loads, 2);
  /* and s1 too */
  ASSERT_OK(put_as(h1, &a, &w, doc, 1, &e));
  ASSERT_EQ(e.rc, DV_EFORBIDDEN);
  policy = NULL;
  store_db_close(h1);
  store_db_close(h2);
  storet_fdb_pair_close(&pair);
  arena_free(&a);
}
