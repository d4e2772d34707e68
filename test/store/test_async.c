/* test_async.c — the asynchronous write entry points (store_update_async,
 * store_local_put_async; src/store/edit.c, store.c, work.c).
 *
 * store_async_same_results: one script of calls run twice, on database
 *   "a" with store_update and on "b" with store_update_async, gives the
 *   same results edit by edit (rc, why, rev) and the same documents and
 *   changes: creates, updates, conflicts, a duplicate id in a call,
 *   deletions, new_edits=false branches, validator refusals (hooks), and
 *   two updates split into several transactions (over 4096 edits, and
 *   over ST_TXN_BUDGET bytes).
 * store_async_done_once: done runs exactly once — before the call returns
 *   when the update is over at once (no edits, a deleted database, every
 *   edit refused before any transaction), later otherwise.
 * store_async_many: 1,000 single-document updates in flight from two
 *   threads, 8 of them new_edits=false branches of one document (conflicts
 *   at commit, retried): all complete with rc 0, each done once, and the
 *   database holds them all.
 * store_async_retry: faults from the fault backend (kv_fault.h): a run of
 *   not_committed is retried by the workers after its backoff while the
 *   caller is long gone; commit_unknown_result after a real commit is
 *   answered from the TxId (one revision, one changes row); a fatal error
 *   is reported, and turns into commit_unknown_result after a
 *   maybe-committed attempt — each the same as store_update's answer.
 * store_async_local: store_local_put_async answers as store_local_put
 *   (create, strict update, conflict, delete, delete of a missing doc, bad
 *   id).
 * Every test runs on the fdb backend too (fdb_store_async_*).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv/kv_fault.h"
#include "storet.h"

/* ---- waiting for done ---------------------------------------------------------- */

/* One async call's completion. */
typedef struct waiter {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_int calls;  /* done calls (must end at 1) */
  int rc;            /* the last rc */
  double at;         /* storet_now() of the first call */
} waiter;

static void waiter_init(waiter *w) {
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  atomic_init(&w->calls, 0);
  w->rc = 1;
}

static void on_done(void *arg, int rc) {
  waiter *w = arg;
  pthread_mutex_lock(&w->mu);
  if (!atomic_load(&w->calls)) w->at = storet_now();
  w->rc = rc;
  atomic_fetch_add(&w->calls, 1);
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Wait (at most 60 s) for the first done; its rc. */
static int waiter_wait(waiter *w) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 60;
  pthread_mutex_lock(&w->mu);
  while (!atomic_load(&w->calls))
    ASSERTF(pthread_cond_timedwait(&w->cv, &w->mu, &ts) == 0, "done never came");
  int rc = w->rc;
  pthread_mutex_unlock(&w->mu);
  return rc;
}

/* After waiter_wait and the wait for a stray second done: free a heap
 * waiter once on_done has let go of its lock. */
static void waiter_free(waiter *w) {
  pthread_mutex_lock(&w->mu);
  pthread_mutex_unlock(&w->mu);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w);
}

static int update_async_wait(store_db *db, const store_wctx *wc, store_edit *e, size_t n, int new_edits) {
  waiter *w = calloc(1, sizeof *w);
  ASSERT(w != NULL);
  waiter_init(w);
  store_update_async(db, wc, e, n, new_edits, on_done, w);
  int rc = waiter_wait(w);
  usleep(1000); /* a second done would come about now */
  ASSERT_EQ(atomic_load(&w->calls), 1);
  waiter_free(w);
  return rc;
}

/* ---- a validator ---------------------------------------------------------------------- */

/* Refuses documents whose id starts with "refuse" (DV_EFORBIDDEN, "no <id>"). */
static int v_refuse(void *ctx, const json_val *nd, store_old *old, const store_user *u, const json_val *sec,
                    dv_arena *a, const char **why) {
  (void)ctx, (void)old, (void)u, (void)sec;
  const json_val *id = json_obj_getz(nd, "_id");
  if (id && id->len >= 6 && !memcmp(id->u.s, "refuse", 6)) {
    char *m = arena_alloc(a, id->len + 4);
    ASSERT(m != NULL);
    snprintf(m, id->len + 4, "no %.*s", (int)id->len, id->u.s);
    *why = m;
    return DV_EFORBIDDEN;
  }
  return 0;
}

static int load_refuse(void *arg, const char *name, size_t len, store_hooks *out) {
  (void)arg, (void)name, (void)len;
  out->validate[0].fn = v_refuse;
  out->n_validate = 1;
  return 0;
}

/* ---- store_async_same_results --------------------------------------------------------- */

typedef struct twin {
  storet *t;
  store_db *a, *b;     /* store_update / store_update_async */
  dv_arena ea, eb;     /* the edits of each side */
  store_wctx w;        /* who writes (validators run) */
  dv_arena wa;         /* w's arena */
} twin;

/* Run the same docs (JSON texts) through both sides and compare; returns
 * side a's edits (in ea, valid until the next call). */
static store_edit *both(twin *x, char **docs, size_t n, int new_edits, const store_wctx *w) {
  arena_reset(&x->ea);
  arena_reset(&x->eb);
  store_edit *ea = arena_calloc(&x->ea, (n ? n : 1) * sizeof *ea);
  store_edit *eb = arena_calloc(&x->eb, (n ? n : 1) * sizeof *eb);
  ASSERT(ea && eb);
  for (size_t i = 0; i < n; i++) {
    ASSERT_OK(store_edit_from_json(&x->ea, storet_json(&x->ea, docs[i]), new_edits, &ea[i]));
    ASSERT_OK(store_edit_from_json(&x->eb, storet_json(&x->eb, docs[i]), new_edits, &eb[i]));
  }
  int ra = store_update(x->a, w, ea, n, new_edits);
  int rb = update_async_wait(x->b, w, eb, n, new_edits);
  ASSERT_EQ(ra, rb);
  for (size_t i = 0; i < n; i++) {
    ASSERTF(ea[i].rc == eb[i].rc, "edit %zu (%.60s): rc %d != %d", i, docs[i], ea[i].rc, eb[i].rc);
    ASSERT_STR_EQ(ea[i].why ? ea[i].why : "(null)", eb[i].why ? eb[i].why : "(null)");
    if (!ea[i].rc) ASSERTF(storet_rev_eq(&ea[i].rev, &eb[i].rev), "edit %zu: rev %s != %s", i,
                           storet_rev_str(&x->t->a, &ea[i].rev), storet_rev_str(&x->t->a, &eb[i].rev));
  }
  return ea;
}

static char *fmt(dv_arena *a, const char *f, ...) __attribute__((format(printf, 2, 3)));
static char *fmt(dv_arena *a, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s;
  ASSERT(vasprintf(&s, f, ap) >= 0);
  va_end(ap);
  char *c = arena_alloc(a, strlen(s) + 1);
  ASSERT(c != NULL);
  strcpy(c, s);
  free(s);
  return c;
}

TEST(store_async_same_results) {
  twin x = {.t = storet_open(NULL, 0, NULL)};
  x.a = storet_create_db(x.t, "a");
  x.b = storet_create_db(x.t, "b");
  arena_init(&x.ea, 0);
  arena_init(&x.eb, 0);
  arena_init(&x.wa, 0);
  store_hooks_provider hp = {.load = load_refuse};
  store_set_hooks(x.t->s, &hp);
  store_user u = {.name = "bob"};
  x.w = (store_wctx){.user = &u, .a = &x.wa};
  dv_arena *a = &x.t->a;

  /* creates, one of them twice in the call, one refused by the validator */
  char *c1[] = {"{\"_id\":\"x\",\"n\":1}", "{\"_id\":\"y\",\"n\":1}", "{\"_id\":\"z\",\"n\":1}",
                "{\"_id\":\"z\",\"n\":2}", "{\"_id\":\"refuse1\",\"n\":1}", "{\"_id\":\"_bad\"}"};
  store_edit *e = both(&x, c1, 6, 1, &x.w);
  ASSERT_OK(e[0].rc);
  ASSERT_EQ(e[3].rc, DV_ECONFLICT);
  ASSERT_EQ(e[4].rc, DV_EFORBIDDEN);
  ASSERT_STR_EQ(e[4].why, "no refuse1");
  ASSERT_EQ(e[5].rc, DV_EBAD_DOCID);
  const char *rx = storet_rev_str(a, &e[0].rev), *ry = storet_rev_str(a, &e[1].rev);
  /* an update, a conflict (stale rev), a create over a live doc, a deletion */
  char *c2[] = {fmt(a, "{\"_id\":\"x\",\"_rev\":\"%s\",\"n\":2}", rx), "{\"_id\":\"y\",\"_rev\":\"1-00\",\"n\":2}",
                "{\"_id\":\"z\",\"n\":3}", fmt(a, "{\"_id\":\"y\",\"_rev\":\"%s\",\"_deleted\":true}", ry)};
  e = both(&x, c2, 4, 1, &x.w);
  ASSERT_OK(e[0].rc);
  ASSERT_EQ(e[1].rc, DV_ECONFLICT);
  ASSERT_EQ(e[2].rc, DV_ECONFLICT);
  ASSERT_EQ(e[3].rc, DV_ECONFLICT); /* y twice in one call */
  char *c3[] = {fmt(a, "{\"_id\":\"y\",\"_rev\":\"%s\",\"_deleted\":true}", ry), "{\"_id\":\"refuse2\"}"};
  e = both(&x, c3, 2, 1, &x.w);
  ASSERT_OK(e[0].rc);
  ASSERT_EQ(e[1].rc, DV_EFORBIDDEN);
  /* the server's own write: no validator */
  char *c4[] = {"{\"_id\":\"refuse3\"}", "{\"_id\":\"y\",\"n\":9}"};
  e = both(&x, c4, 2, 1, NULL);
  ASSERT_OK(e[0].rc);
  ASSERT_OK(e[1].rc); /* recreates y, extending its deleted winner */
  /* new_edits=false: a branch, the same again (adds nothing), one extending it, a refusal */
  char *c5[] = {"{\"_id\":\"x\",\"_revisions\":{\"start\":2,\"ids\":[\"bb\",\"aa\"]},\"n\":7}",
                "{\"_id\":\"w\",\"_revisions\":{\"start\":3,\"ids\":[\"c3\",\"c2\",\"c1\"]}}",
                "{\"_id\":\"refuse4\",\"_rev\":\"1-ab\"}"};
  e = both(&x, c5, 3, 0, &x.w);
  ASSERT_OK(e[0].rc);
  ASSERT_OK(e[1].rc);
  ASSERT_EQ(e[2].rc, DV_EFORBIDDEN);
  char *c6[] = {"{\"_id\":\"x\",\"_revisions\":{\"start\":2,\"ids\":[\"bb\",\"aa\"]},\"n\":7}",
                "{\"_id\":\"w\",\"_revisions\":{\"start\":4,\"ids\":[\"c4\",\"c3\"]}}"};
  e = both(&x, c6, 2, 0, &x.w);
  ASSERT_OK(e[0].rc);
  ASSERT_OK(e[1].rc);

  /* more than 4096 edits: two transactions; every 97th refused */
  enum { NSMALL = 5000 };
  char **many = calloc(NSMALL, sizeof *many);
  ASSERT(many != NULL);
  for (int i = 0; i < NSMALL; i++)
    many[i] = fmt(a, "{\"_id\":\"%s%05d\",\"i\":%d,\"s\":\"%0*d\"}", i % 97 ? "m" : "refuse", i, i, i % 50, 0);
  e = both(&x, many, NSMALL, 1, &x.w);
  for (int i = 0; i < NSMALL; i++) ASSERT_EQ(e[i].rc, i % 97 ? 0 : DV_EFORBIDDEN);
  /* over ST_TXN_BUDGET bytes: 8 documents of 900 KB, two transactions */
  char *big[8];
  char *pad = malloc(900001);
  ASSERT(pad != NULL);
  memset(pad, 'p', 900000);
  pad[900000] = 0;
  for (int i = 0; i < 8; i++) big[i] = fmt(a, "{\"_id\":\"big%d\",\"pad\":\"%s\"}", i, pad);
  free(pad);
  e = both(&x, big, 8, 1, &x.w);
  for (int i = 0; i < 8; i++) ASSERT_OK(e[i].rc);
  free(many);

  /* the two databases hold the same documents, in the same changes order */
  storet_change *ca, *cb;
  size_t na = storet_changes(x.a, a, NULL, &ca, NULL), nb = storet_changes(x.b, a, NULL, &cb, NULL);
  ASSERT_EQ(na, nb);
  ASSERT(na > NSMALL - 100);
  for (size_t i = 0; i < na; i++) {
    ASSERT_STR_EQ(ca[i].id, cb[i].id);
    ASSERT(storet_rev_eq(&ca[i].rev, &cb[i].rev));
    ASSERT_EQ(ca[i].deleted, cb[i].deleted);
  }
  store_db_info ia, ib;
  ASSERT_OK(store_db_info_get(x.a, &ia));
  ASSERT_OK(store_db_info_get(x.b, &ib));
  ASSERT_EQ(ia.doc_count, ib.doc_count);
  ASSERT_EQ(ia.doc_del_count, ib.doc_del_count);
  ASSERT_EQ(ia.size_external, ib.size_external);
  json_val *da, *db;
  ASSERT_OK(storet_get(x.a, a, "w", NULL, STORE_REVS | STORE_CONFLICTS, &da));
  ASSERT_OK(storet_get(x.b, a, "w", NULL, STORE_REVS | STORE_CONFLICTS, &db));
  STORET_ASSERT_JSON_EQ(a, da, db);
  ASSERT_OK(storet_get(x.a, a, "x", NULL, STORE_CONFLICTS, &da));
  ASSERT_OK(storet_get(x.b, a, "x", NULL, STORE_CONFLICTS, &db));
  STORET_ASSERT_JSON_EQ(a, da, db);

  store_db_close(x.a);
  store_db_close(x.b);
  storet_close(x.t);
  arena_free(&x.ea);
  arena_free(&x.eb);
  arena_free(&x.wa);
}

/* ---- store_async_done_once ------------------------------------------------------------ */

/* A done that records whether it ran before the call returned. */
typedef struct early {
  atomic_int calls;
  atomic_int returned; /* set by the caller once the call returned */
  int before;          /* done ran before that */
  int rc;
} early;

static void on_early(void *arg, int rc) {
  early *e = arg;
  e->before = !atomic_load(&e->returned);
  e->rc = rc;
  atomic_fetch_add(&e->calls, 1);
}

TEST(store_async_done_once) {
  storet *t = storet_open(NULL, 0, "db");
  early no = {0}, gone = {0}, refused = {0};
  /* no edits */
  store_update_async(t->db, NULL, NULL, 0, 1, on_early, &no);
  atomic_store(&no.returned, 1);
  ASSERT_EQ(atomic_load(&no.calls), 1);
  ASSERT(no.before);
  ASSERT_OK(no.rc);
  /* every edit refused before any transaction: a read-only commit */
  store_edit r[2] = {{.id = "_x", .id_len = 2}, {.id = "", .id_len = 0}};
  store_update_async(t->db, NULL, r, 2, 1, on_early, &refused);
  atomic_store(&refused.returned, 1);
  waiter w0;
  waiter_init(&w0);
  for (int i = 0; i < 6000 && !atomic_load(&refused.calls); i++) usleep(10000);
  ASSERT_EQ(atomic_load(&refused.calls), 1);
  ASSERT_OK(refused.rc);
  ASSERT_EQ(r[0].rc, DV_EBAD_DOCID);
  ASSERT_EQ(r[1].rc, DV_EBAD_DOCID);
  /* a database deleted under its handle: DV_ENO_DB, found in the first attempt */
  ASSERT_OK(store_db_delete(t->s, "db"));
  store_edit e = {.id = "a", .id_len = 1};
  store_update_async(t->db, NULL, &e, 1, 1, on_early, &gone);
  atomic_store(&gone.returned, 1);
  ASSERT_EQ(atomic_load(&gone.calls), 1);
  ASSERT(gone.before);
  ASSERT_EQ(gone.rc, DV_ENO_DB);
  /* a real write: done later, once */
  store_db *db = storet_create_db(t, "db2");
  store_edit ok = {.id = "a", .id_len = 1};
  store_update_async(db, NULL, &ok, 1, 1, on_done, &w0);
  ASSERT_OK(waiter_wait(&w0));
  ASSERT_OK(ok.rc);
  ASSERT_EQ(ok.rev.pos, 1);
  store_db_close(db);
  storet_close(t); /* joins the workers; kv_close waits for the commits */
  ASSERT_EQ(atomic_load(&no.calls), 1);
  ASSERT_EQ(atomic_load(&refused.calls), 1);
  ASSERT_EQ(atomic_load(&gone.calls), 1);
  ASSERT_EQ(atomic_load(&w0.calls), 1);
}

/* ---- store_async_many ----------------------------------------------------------------- */

enum { MANY = 1000, HOT = 8 };

typedef struct many {
  store_db *db;
  store_edit e[MANY];
  atomic_int calls[MANY];
  int rc[MANY];
  atomic_int done;      /* completions */
  atomic_int issued;    /* calls made */
  atomic_int peak;      /* most in flight seen */
  dv_arena a[2];        /* one per issuing thread */
} many;

typedef struct slot {
  many *m;
  int i;
} slot;

static slot slots[MANY];

static void on_many(void *arg, int rc) {
  slot *s = arg;
  s->m->rc[s->i] = rc;
  atomic_fetch_add(&s->m->calls[s->i], 1);
  atomic_fetch_add(&s->m->done, 1);
}

typedef struct issuer {
  many *m;
  int tid;
} issuer;

static void *issue(void *arg) {
  issuer *is = arg;
  many *m = is->m;
  dv_arena *a = &m->a[is->tid];
  for (int i = is->tid; i < MANY; i += 2) {
    store_edit *e = &m->e[i];
    int hot = i < HOT;
    char text[128];
    if (hot) /* a branch of one document: the writers conflict at commit */
      snprintf(text, sizeof text, "{\"_id\":\"hot\",\"_rev\":\"1-%032x\",\"i\":%d}", i + 1, i);
    else
      snprintf(text, sizeof text, "{\"_id\":\"d%04d\",\"i\":%d}", i, i);
    ASSERT_OK(store_edit_from_json(a, storet_json(a, text), !hot, e));
    slots[i] = (slot){m, i};
    int in = atomic_fetch_add(&m->issued, 1) + 1 - atomic_load(&m->done);
    for (int p = atomic_load(&m->peak); in > p && !atomic_compare_exchange_weak(&m->peak, &p, in);) {
    }
    store_update_async(m->db, NULL, e, 1, !hot, on_many, &slots[i]);
  }
  return NULL;
}

TEST(store_async_many) {
  storet *t = storet_open(NULL, 0, "db");
  many *m = calloc(1, sizeof *m);
  ASSERT(m != NULL);
  m->db = t->db;
  arena_init(&m->a[0], 0);
  arena_init(&m->a[1], 0);
  double t0 = storet_now();
  pthread_t th[2];
  issuer is[2] = {{m, 0}, {m, 1}};
  for (int i = 0; i < 2; i++) ASSERT_OK(pthread_create(&th[i], NULL, issue, &is[i]));
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  double t1 = storet_now();
  for (int i = 0; i < 60000 && atomic_load(&m->done) < MANY; i++) usleep(1000);
  double t2 = storet_now();
  ASSERT_EQ(atomic_load(&m->done), MANY);
  printf("%d updates: issued in %.3f s (peak %d in flight), all done after %.3f s\n", MANY, t1 - t0,
         atomic_load(&m->peak), t2 - t0);
  for (int i = 0; i < MANY; i++) {
    ASSERTF(m->rc[i] == 0 && m->e[i].rc == 0, "update %d: rc %d, edit rc %d", i, m->rc[i], m->e[i].rc);
  }
  store_db_info in;
  ASSERT_OK(store_db_info_get(t->db, &in));
  ASSERT_EQ(in.doc_count, MANY - HOT + 1);
  store_leaf *l;
  size_t n;
  ASSERT_OK(store_doc_leaves(t->db, "hot", 3, &t->a, &l, &n));
  ASSERT_EQ(n, HOT);
  storet_close(t);
  for (int i = 0; i < MANY; i++) ASSERT_EQ(atomic_load(&m->calls[i]), 1);
  arena_free(&m->a[0]);
  arena_free(&m->a[1]);
  free(m);
}

/* ---- store_async_retry ---------------------------------------------------------------- */

static store_edit edit_of(dv_arena *a, const char *text) {
  store_edit e;
  ASSERT_OK(store_edit_from_json(a, storet_json(a, text), 1, &e));
  return e;
}

/* Arm one fault kind (and maybe a second) for the next commits, run the
 * same edit through store_update (on id "s…") and store_update_async
 * ("a…"): both answer alike. *ea gets the async edit (its rev.h points
 * into it: not to be copied); returns the call's rc. */
static int arm_both(storet *f, kv_fault_kind kind, long count, kv_fault_kind kind2, long count2, const char *id,
                    store_edit *ea) {
  char text[64];
  snprintf(text, sizeof text, "{\"_id\":\"s%s\",\"v\":1}", id);
  store_edit es = edit_of(&f->a, text);
  kv_fault_set(f->kv, kind, 1.0, count);
  if (count2) kv_fault_set(f->kv, kind2, 1.0, count2);
  int rs = store_update(f->db, NULL, &es, 1, 1);
  kv_fault_clear(f->kv);
  snprintf(text, sizeof text, "{\"_id\":\"a%s\",\"v\":1}", id);
  *ea = edit_of(&f->a, text);
  kv_fault_set(f->kv, kind, 1.0, count);
  if (count2) kv_fault_set(f->kv, kind2, 1.0, count2);
  int ra = update_async_wait(f->db, NULL, ea, 1, 1);
  kv_fault_clear(f->kv);
  ASSERT_EQ(rs, ra);
  ASSERT_EQ(es.rc, ea->rc);
  if (!rs && !es.rc) ASSERT_EQ(es.rev.pos, ea->rev.pos);
  return ra;
}

/* 1 when v is the JSON string s. */
static int jstr_is(const json_val *v, const char *s) {
  return v && v->type == JSON_STRING && v->len == strlen(s) && !memcmp(v->u.s, s, v->len);
}

static int changes_rows(store_db *db, dv_arena *a, const char *id) {
  storet_change *c;
  size_t n = storet_changes(db, a, NULL, &c, NULL);
  int k = 0;
  for (size_t i = 0; i < n; i++) k += !strcmp(c[i].id, id);
  return k;
}

TEST(store_async_retry) {
  storet *f = storet_open_fault("db");
  /* not_committed five times: the retries wait on the timed queue, the
   * caller's thread is back at once */
  store_edit e = edit_of(&f->a, "{\"_id\":\"nc\",\"v\":1}");
  kv_fault_reset_counts(f->kv);
  kv_fault_set(f->kv, KV_FAULT_NOT_COMMITTED, 1.0, 5);
  waiter w;
  waiter_init(&w);
  double t0 = storet_now();
  store_update_async(f->db, NULL, &e, 1, 1, on_done, &w);
  double back = storet_now() - t0;
  ASSERT_OK(waiter_wait(&w));
  double took = w.at - t0;
  printf("5 x not_committed: the call returned after %.1f ms, done after %.1f ms\n", back * 1e3, took * 1e3);
  ASSERT_EQ(kv_fault_injected(f->kv, KV_FAULT_NOT_COMMITTED), 5);
  ASSERT_OK(e.rc);
  ASSERT_EQ(e.rev.pos, 1);
  ASSERT(back < took);
  ASSERT(took > 0.030); /* backoffs of at least 0 + 5 + 10 + 20 + 40 ms */
  kv_fault_clear(f->kv);
  ASSERT_EQ(changes_rows(f->db, &f->a, "nc"), 1);

  store_edit u;
  /* commit_unknown_result after a real commit: the TxId answers */
  int rc = arm_both(f, KV_FAULT_COMMIT_UNKNOWN_AFTER, 1, 0, 0, "cu", &u);
  ASSERT_OK(rc);
  ASSERT_OK(u.rc);
  json_val *d;
  ASSERT_OK(storet_get(f->db, &f->a, "acu", NULL, 0, &d));
  ASSERT(jstr_is(json_obj_getz(d, "_rev"), storet_rev_str(&f->a, &u.rev)));
  store_leaf *l;
  size_t n;
  ASSERT_OK(store_doc_leaves(f->db, "acu", 3, &f->a, &l, &n));
  ASSERT_EQ(n, 1);
  ASSERT(storet_rev_eq(&l[0].rev, &u.rev));
  ASSERT_EQ(changes_rows(f->db, &f->a, "acu"), 1);
  /* commit_unknown_result before the commit: the retry commits */
  rc = arm_both(f, KV_FAULT_COMMIT_UNKNOWN_BEFORE, 2, 0, 0, "cb", &u);
  ASSERT_OK(rc);
  ASSERT_OK(u.rc);
  ASSERT_EQ(changes_rows(f->db, &f->a, "acb"), 1);
  /* transaction_too_old (retryable) on reads and commits */
  rc = arm_both(f, KV_FAULT_TOO_OLD, 3, 0, 0, "to", &u);
  ASSERT_OK(rc);
  ASSERT_OK(u.rc);
  /* a fatal error: reported as is */
  rc = arm_both(f, KV_FAULT_TIMED_OUT, 1, 0, 0, "tm", &u);
  ASSERT_EQ(rc, DV_ETIMED_OUT);
  ASSERT_EQ(storet_get(f->db, &f->a, "atm", NULL, 0, &d), DV_ENOT_FOUND);
  /* … and after a maybe-committed attempt: commit_unknown_result */
  rc = arm_both(f, KV_FAULT_COMMIT_UNKNOWN_BEFORE, 1, KV_FAULT_TIMED_OUT, 1, "mt", &u);
  ASSERT_EQ(rc, DV_ECOMMIT_UNKNOWN);

  /* many edits, a third of the commits failing: every one lands */
  enum { N = 300 };
  store_edit *es = calloc(N, sizeof *es);
  ASSERT(es != NULL);
  for (int i = 0; i < N; i++) {
    char text[64];
    snprintf(text, sizeof text, "{\"_id\":\"r%03d\",\"i\":%d}", i, i);
    es[i] = edit_of(&f->a, text);
  }
  kv_fault_seed(f->kv, 17);
  kv_fault_set(f->kv, KV_FAULT_NOT_COMMITTED, 0.2, -1);
  kv_fault_set(f->kv, KV_FAULT_COMMIT_UNKNOWN_AFTER, 0.1, -1);
  waiter *ws = calloc(N, sizeof *ws);
  ASSERT(ws != NULL);
  for (int i = 0; i < N; i++) {
    waiter_init(&ws[i]);
    store_update_async(f->db, NULL, &es[i], 1, 1, on_done, &ws[i]);
  }
  for (int i = 0; i < N; i++) {
    ASSERT_OK(waiter_wait(&ws[i]));
    ASSERT_OK(es[i].rc);
  }
  kv_fault_clear(f->kv);
  ASSERT(kv_fault_injected(f->kv, KV_FAULT_NOT_COMMITTED) > 0);
  store_db_info in;
  ASSERT_OK(store_db_info_get(f->db, &in));
  int want = 0;
  storet_change *c;
  size_t nc = storet_changes(f->db, &f->a, NULL, &c, NULL);
  for (size_t i = 0; i < nc; i++) want += c[i].id[0] == 'r';
  ASSERT_EQ(want, N);
  storet_close(f);
  for (int i = 0; i < N; i++) ASSERT_EQ(atomic_load(&ws[i].calls), 1);
  free(es);
  free(ws);
}

/* ---- store_async_local ---------------------------------------------------------------- */

static int local_async(store_db *db, const char *id, const json_val *body, int64_t rev, int deleted, int flags,
                       int64_t *out_rev) {
  waiter *w = calloc(1, sizeof *w);
  ASSERT(w != NULL);
  waiter_init(w);
  store_local_put_async(db, id, strlen(id), body, rev, deleted, flags, out_rev, on_done, w);
  int rc = waiter_wait(w);
  usleep(1000);
  ASSERT_EQ(atomic_load(&w->calls), 1);
  waiter_free(w);
  return rc;
}

TEST(store_async_local) {
  storet *t = storet_open(NULL, 0, "db");
  json_val *b = storet_json(&t->a, "{\"x\":1}");
  int64_t r = -1;
  char id[16] = "_local/a";
  ASSERT_OK(local_async(t->db, id, b, 0, 0, STORE_LOCAL_STRICT, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(local_async(t->db, id, b, 1, 0, STORE_LOCAL_STRICT, &r));
  ASSERT_EQ(r, 2);
  ASSERT_EQ(local_async(t->db, id, b, 1, 0, STORE_LOCAL_STRICT, &r), DV_ECONFLICT);
  ASSERT_EQ(store_local_put(t->db, id, strlen(id), b, 1, 0, STORE_LOCAL_STRICT, &r), DV_ECONFLICT);
  json_val *d;
  ASSERT_OK(store_local_get(t->db, id, strlen(id), &t->a, &d));
  ASSERT(jstr_is(json_obj_getz(d, "_rev"), "0-2"));
  ASSERT_OK(local_async(t->db, id, NULL, 0, 1, 0, NULL));
  ASSERT_EQ(store_local_get(t->db, id, strlen(id), &t->a, &d), DV_ENOT_FOUND);
  ASSERT_EQ(local_async(t->db, id, NULL, 0, 1, 0, NULL), DV_ENOT_FOUND);
  ASSERT_EQ(local_async(t->db, "nolocal", b, 0, 0, 0, NULL), DV_EBAD_DOCID);
  ASSERT_EQ(local_async(t->db, id, storet_json(&t->a, "[1]"), 0, 0, 0, NULL), DV_ENOT_OBJECT);
  /* the id is the call's: the caller may reuse its buffer at once */
  waiter w;
  waiter_init(&w);
  store_local_put_async(t->db, id, strlen(id), b, 0, 0, 0, &r, on_done, &w);
  strcpy(id, "_local/zzzzz");
  ASSERT_OK(waiter_wait(&w));
  ASSERT_OK(store_local_get(t->db, "_local/a", 8, &t->a, &d));
  storet_close(t);
  ASSERT_EQ(atomic_load(&w.calls), 1);
}
