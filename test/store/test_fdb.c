/* test_fdb.c — the store on the fdb backend, where only FoundationDB can
 * take it: several divan processes on one cluster, and a cluster that
 * fails.
 *
 * fdb_store_coherence: two store instances (two kv_open_fdb handles, two
 *   handle caches — two divan processes in all but the address space) over
 *   one double. A database deleted and re-created through one is seen
 *   correctly by the other, and while the other keeps writing through its
 *   cached handle during 20 delete/re-create rounds, no key ever remains
 *   under a dead prefix and every write acknowledged under the live one is
 *   there.
 * fdb_store_fault_run: >= 10,000 document edits (DV_FAULT_EDITS) through
 *   the store in batches of 1-6, with every fault kind of the double armed
 *   at 5% (commit_unknown_result after and before applying, not_committed,
 *   transaction_too_old, future_version, transaction_timed_out, slow
 *   futures, network stalls). A model follows each reply: an acknowledged
 *   edit must extend the model's revision by exactly one; a failed request
 *   leaves each of its documents either untouched or with that very edit
 *   applied once (read back and judged). At the end every document is the
 *   model's, has exactly one changes row naming its winner, and the
 *   counters equal the real counts.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv/kvt.h"
#include "storet.h"
#include "tuple/tuple.h"

/* Keys under (root, 1, prefix): a database's whole keyspace. */
static int keys_under_prefix(kv_db *kv, int64_t prefix) {
  dv_buf b;
  buf_init(&b);
  tup_w w;
  tup_w_init(&w, &b);
  ASSERT_OK(tup_strz(&w, "divan"));
  ASSERT_OK(tup_int(&w, 1));
  ASSERT_OK(tup_int(&w, prefix));
  ASSERT_OK(tup_w_finish(&w));
  uint8_t end[64];
  size_t el;
  ASSERT(b.len < sizeof end);
  ASSERT_OK(kv_strinc(b.p, b.len, end, &el));
  kv_txn *t;
  ASSERT_OK(kv_txn_begin(kv, &t));
  kv_pair *p;
  int n, more;
  ASSERT_OK(kv_get_range(t, b.p, b.len, end, el, 0, KV_SNAPSHOT, &p, &n, &more));
  kv_txn_destroy(t);
  buf_free(&b);
  return n;
}

static int64_t db_prefix(store_db *db, int *rc) {
  store_db_info in;
  *rc = store_db_info_get(db, &in);
  return *rc ? -1 : in.prefix;
}

/* ---- coherence ------------------------------------------------------------ */

typedef struct writer {
  store *s;                 /* the second instance */
  volatile int stop;        /* set by the main thread */
  int64_t prefix;           /* prefix of the handle in use */
  char (*acked)[32];        /* ids acknowledged under `prefix` */
  size_t n_acked, cap;      /* count, capacity */
  long total, no_db;        /* acknowledged writes, DV_ENO_DB answers */
  long next_id;             /* ids are never reused across rounds */
  int err;                  /* an unexpected rc */
} writer;

static void *writer_main(void *arg) {
  writer *w = arg;
  store_db *h = NULL;
  while (!w->stop && !w->err) {
    int rc;
    if (!h) {
      rc = store_db_open(w->s, "db", &h);
      if (rc == DV_ENO_DB) { usleep(500); continue; }
      if (rc) { w->err = rc; break; }
      int64_t p = db_prefix(h, &rc);
      if (rc == DV_ENO_DB) { store_db_close(h); h = NULL; continue; }
      if (rc) { w->err = rc; break; }
      if (p != w->prefix) w->n_acked = 0; /* a new database: start over */
      w->prefix = p;
    }
    char id[32];
    snprintf(id, sizeof id, "w%ld", w->next_id++);
    store_edit e = {.id = id, .id_len = strlen(id)};
    rc = store_update(h, NULL, &e, 1, 1);
    if (rc == DV_ENO_DB) { /* the cached handle died: never a write under it */
      w->no_db++;
      store_db_close(h);
      h = NULL;
      continue;
    }
    if (rc || e.rc) { w->err = rc ? rc : e.rc; break; }
    if (w->n_acked == w->cap) {
      w->cap = w->cap ? w->cap * 2 : 256;
      w->acked = realloc(w->acked, w->cap * sizeof *w->acked);
      if (!w->acked) abort();
    }
    memcpy(w->acked[w->n_acked++], id, sizeof id);
    w->total++;
  }
  store_db_close(h);
  return NULL;
}

TEST(fdb_store_coherence) {
  storet_pair pair;
  storet_fdb_pair(&pair);
  store *s1 = pair.s[0], *s2 = pair.s[1];
  dv_arena a;
  arena_init(&a, 0);

  /* Sequential: s2's cached handle dies with the database s1 deletes. */
  ASSERT_OK(store_db_create(s1, "db"));
  store_db *h1, *h2;
  ASSERT_OK(store_db_open(s1, "db", &h1));
  ASSERT_OK(store_db_open(s2, "db", &h2));
  int rc;
  int64_t p0 = db_prefix(h2, &rc);
  ASSERT_OK(rc);
  ASSERT_OK(storet_put(h2, &a, "a", "{\"x\":1}", NULL, 0, NULL));
  ASSERT_OK(storet_put(h1, &a, "b", "{\"x\":2}", NULL, 0, NULL));
  store_db_info in;
  ASSERT_OK(store_db_info_get(h2, &in));
  ASSERT_EQ(in.doc_count, 2);
  store_db_close(h1);
  ASSERT_OK(store_db_delete(s1, "db"));
  ASSERT_OK(store_db_create(s1, "db"));
  store_edit e = {.id = "c", .id_len = 1};
  ASSERT_EQ(store_update(h2, NULL, &e, 1, 1), DV_ENO_DB);
  json_val *doc;
  ASSERT_EQ(storet_get(h2, &a, "a", NULL, 0, &doc), DV_ENO_DB);
  ASSERT_EQ(keys_under_prefix(pair.kv[1], p0), 0);
  store_db_close(h2);
  ASSERT_OK(store_db_open(s2, "db", &h2));
  ASSERT_OK(store_db_info_get(h2, &in));
  ASSERT_EQ(in.doc_count, 0);
  ASSERT(in.prefix != p0);
  ASSERT_EQ(storet_get(h2, &a, "a", NULL, 0, &doc), DV_ENOT_FOUND);
  ASSERT_OK(storet_put(h2, &a, "c", NULL, NULL, 0, NULL));
  ASSERT_OK(store_db_open(s1, "db", &h1));
  ASSERT_OK(storet_get(h1, &a, "c", NULL, 0, &doc));
  store_db_close(h1);
  store_db_close(h2);

  /* Racing: s2 writes through its cache while s1 deletes and re-creates. */
  writer w = {.s = s2, .prefix = -1};
  int64_t dead[32];
  int n_dead = 0;
  for (int round = 0; round < 20; round++) {
    w.stop = 0;
    pthread_t th;
    ASSERT_OK(pthread_create(&th, NULL, writer_main, &w));
    kvt_sleep_ms(15 + round % 5 * 5);
    ASSERT_OK(store_db_open(s1, "db", &h1));
    dead[n_dead++] = db_prefix(h1, &rc);
    ASSERT_OK(rc);
    store_db_close(h1);
    ASSERT_OK(store_db_delete(s1, "db"));
    ASSERT_OK(store_db_create(s1, "db"));
    kvt_sleep_ms(10);
    w.stop = 1;
    pthread_join(th, NULL);
    ASSERTF(!w.err, "writer: %s (%d)", dv_err_name(w.err), w.err);
    for (int i = 0; i < n_dead; i++)
      ASSERTF(keys_under_prefix(pair.kv[0], dead[i]) == 0, "keys under dead prefix %lld after round %d",
              (long long)dead[i], round);
  }
  /* Every write acknowledged under the live prefix is there, and only those. */
  ASSERT_OK(store_db_open(s1, "db", &h1));
  ASSERT_OK(store_db_info_get(h1, &in));
  if (w.prefix == in.prefix) {
    ASSERT_EQ(in.doc_count, (int64_t)w.n_acked);
    for (size_t i = 0; i < w.n_acked; i++) {
      arena_reset(&a);
      ASSERTF(storet_get(h1, &a, w.acked[i], NULL, 0, &doc) == 0, "acknowledged %s lost", w.acked[i]);
    }
  } else {
    ASSERT_EQ(in.doc_count, 0);
  }
  printf("coherence: %ld acknowledged writes, %ld stale-handle refusals, %d dead prefixes empty\n", w.total,
         w.no_db, n_dead);
  ASSERT(w.total > 0 && w.no_db > 0);
  store_db_close(h1);
  free(w.acked);
  arena_free(&a);
  storet_fdb_pair_close(&pair);
}

/* ---- the randomized fault run ------------------------------------------------- */

typedef struct mdoc {
  char id[16];      /* document id */
  int exists;       /* created */
  int deleted;      /* winner is a tombstone */
  long v;           /* body {"v": v} of the winner */
  char rev[64];     /* winner rev text */
  int64_t pos;      /* its generation = edits applied */
} mdoc;

static const char *const kinds[] = {"commit_unknown_after", "commit_unknown_before", "not_committed", "too_old",
                                    "future_version", "timed_out", "slow", "stall"};
#define NKINDS (sizeof kinds / sizeof *kinds)

/* The only leaf of a single-branch document: rev text, deleted flag, v. */
static int read_leaf(store_db *h, dv_arena *a, const mdoc *m, char *rev, int *deleted, long *v) {
  json_val *arr;
  int rc = store_doc_open_revs(h, m->id, strlen(m->id), NULL, 0, 0, a, &arr);
  if (rc == DV_ENOT_FOUND) return rc;
  ASSERTF(rc == 0, "open_revs %s: %s", m->id, dv_err_name(rc));
  ASSERTF(arr->type == JSON_ARRAY && arr->len == 1, "%s has %zu leaves", m->id, arr->len);
  json_val *doc = json_obj_get(arr->u.items[0], "ok", 2);
  ASSERT(doc != NULL);
  store_rev r = storet_doc_rev(a, doc);
  snprintf(rev, 64, "%s", storet_rev_str(a, &r));
  json_val *d = json_obj_get(doc, "_deleted", 8);
  *deleted = d && d->type == JSON_BOOL && d->b;
  json_val *jv = json_obj_get(doc, "v", 1);
  *v = -1;
  if (jv && jv->type == JSON_NUMBER) {
    *v = 0;
    for (size_t i = 0; i < jv->len; i++) *v = *v * 10 + (jv->u.s[i] - '0');
  }
  return 0;
}

TEST(fdb_store_fault_run) {
  setenv("FDBSIM_STALL_MS", "5", 1);
  long target = storet_env_long("DV_FAULT_EDITS", 10000);
  uint64_t seed = storet_seed("fdb_store_fault_run", 20240601);
  const char *dir = kvt_newdir("faults");
  kv_db *kv;
  ASSERT_OK(kvt_fdbsim_open(dir, &kv));
  store *s;
  ASSERT_OK(store_open(kv, NULL, &s));
  ASSERT_OK(store_db_create(s, "db"));
  store_db *h;
  ASSERT_OK(store_db_open(s, "db", &h));
  dv_arena a;
  arena_init(&a, 0);
  enum { NDOCS = 300, BATCH = 6 };
  mdoc *docs = calloc(NDOCS, sizeof *docs);
  ASSERT(docs != NULL);
  for (int i = 0; i < NDOCS; i++) snprintf(docs[i].id, sizeof docs[i].id, "doc%03d", i);
  kvt_fdbsim_seed(seed);
  for (size_t k = 0; k < NKINDS; k++) kvt_fdbsim_fault(kinds[k], 0.05, -1);

  long edits = 0, acked = 0, failed_req = 0, applied_anyway = 0, next_v = 1;
  long err_by[8] = {0};
  const int err_codes[8] = {DV_ETIMED_OUT, DV_ECOMMIT_UNKNOWN, DV_ENOT_COMMITTED, DV_ETXN_TOO_OLD,
                            DV_EFUTURE_VERSION, 0, 0, 0};
  double t0 = storet_now();
  while (edits < target) {
    arena_reset(&a);
    int b = 1 + (int)storet_below(&seed, BATCH);
    store_edit e[BATCH];
    mdoc *m[BATCH];
    long v[BATCH];
    memset(e, 0, sizeof e);
    for (int i = 0; i < b; i++) {
      mdoc *d;
      int again;
      do { /* distinct documents in one request */
        d = &docs[storet_below(&seed, NDOCS)];
        again = 0;
        for (int j = 0; j < i; j++) again |= m[j] == d;
      } while (again);
      m[i] = d;
      v[i] = next_v++;
      char body[48];
      snprintf(body, sizeof body, "{\"v\":%ld}", v[i]);
      e[i].id = d->id;
      e[i].id_len = strlen(d->id);
      e[i].body = storet_json(&a, body);
      e[i].deleted = d->exists && !d->deleted && storet_chance(&seed, 15, 100);
      /* A deleted document is re-created without a parent (naming the
       * tombstone is a conflict); the new rev extends it (seed 000). */
      if (d->exists && !d->deleted) e[i].parent = storet_rev(&a, d->rev);
    }
    int rc = store_update(h, NULL, e, (size_t)b, 1);
    edits += b;
    if (!rc) {
      for (int i = 0; i < b; i++) {
        if (e[i].rc) {
          char rev[64];
          int dl;
          long got;
          int r = read_leaf(h, &a, m[i], rev, &dl, &got);
          ASSERTF(0, "edit %s (v %ld, parent %s, model v %ld) answered %s; stored: rc %d %s v %ld deleted %d", m[i]->id,
                  v[i], m[i]->rev, m[i]->v, dv_err_name(e[i].rc), r, rev, got, dl);
        }
        ASSERTF(e[i].rev.pos == m[i]->pos + 1, "%s: acknowledged rev %lld after %lld", m[i]->id,
                (long long)e[i].rev.pos, (long long)m[i]->pos);
        mdoc *d = m[i];
        d->exists = 1;
        d->deleted = e[i].deleted;
        d->v = v[i];
        d->pos = e[i].rev.pos;
        snprintf(d->rev, sizeof d->rev, "%s", storet_rev_str(&a, &e[i].rev));
        acked++;
        if (acked % 25 == 0) { /* the acknowledged state reads back */
          char rev[64];
          int del;
          long got;
          ASSERT_OK(read_leaf(h, &a, d, rev, &del, &got));
          ASSERTF(!strcmp(rev, d->rev) && got == d->v && del == d->deleted, "%s reads %s, want %s", d->id, rev,
                  d->rev);
        }
      }
      continue;
    }
    /* A failed request: each document is untouched, or has this edit once. */
    failed_req++;
    int known = 0;
    for (int k = 0; k < 5; k++)
      if (rc == err_codes[k]) err_by[k]++, known = 1;
    ASSERTF(known, "request failed with %s (%d)", dv_err_name(rc), rc);
    for (int i = 0; i < b; i++) {
      mdoc *d = m[i];
      char rev[64];
      int del;
      long got;
      int r = read_leaf(h, &a, d, rev, &del, &got);
      if (r == DV_ENOT_FOUND) {
        ASSERTF(!d->exists, "%s vanished after a failed edit", d->id);
        continue;
      }
      if (d->exists && !strcmp(rev, d->rev)) continue; /* not applied */
      store_rev rr = storet_rev(&a, rev);
      ASSERTF(rr.pos == d->pos + 1 && got == v[i] && del == e[i].deleted,
              "%s after a failed edit: %s v %ld, model %s v %ld, edit v %ld", d->id, rev, got, d->rev, d->v, v[i]);
      d->exists = 1;
      d->deleted = del;
      d->v = got;
      d->pos = rr.pos;
      snprintf(d->rev, sizeof d->rev, "%s", rev);
      applied_anyway++;
    }
  }
  double secs = storet_now() - t0;
  kvt_fdbsim_clear();

  /* The end state: the model's documents, one changes row each, counters. */
  int64_t live = 0, del = 0;
  for (int i = 0; i < NDOCS; i++) {
    mdoc *d = &docs[i];
    arena_reset(&a);
    char rev[64];
    int isdel;
    long got;
    int r = read_leaf(h, &a, d, rev, &isdel, &got);
    if (!d->exists) {
      ASSERT_EQ(r, DV_ENOT_FOUND);
      continue;
    }
    ASSERT_OK(r);
    ASSERTF(!strcmp(rev, d->rev) && got == d->v && isdel == d->deleted, "%s is %s v %ld, model %s v %ld", d->id,
            rev, got, d->rev, d->v);
    if (d->deleted) del++;
    else live++;
  }
  arena_reset(&a);
  storet_change *rows;
  size_t n = storet_changes(h, &a, NULL, &rows, NULL);
  int *seen = calloc(NDOCS, sizeof *seen);
  ASSERT(seen != NULL);
  for (size_t i = 0; i < n; i++) {
    int idx = atoi(rows[i].id + 3);
    ASSERT(idx >= 0 && idx < NDOCS && !strcmp(rows[i].id, docs[idx].id));
    seen[idx]++;
    ASSERTF(seen[idx] == 1, "%s has %d changes rows", rows[i].id, seen[idx]);
    ASSERT_STR_EQ(storet_rev_str(&a, &rows[i].rev), docs[idx].rev);
    ASSERT_EQ(rows[i].deleted, docs[idx].deleted);
  }
  for (int i = 0; i < NDOCS; i++) ASSERTF(seen[i] == docs[i].exists, "%s: %d changes rows", docs[i].id, seen[i]);
  store_db_info in;
  ASSERT_OK(store_db_info_get(h, &in));
  ASSERT_EQ(in.doc_count, live);
  ASSERT_EQ(in.doc_del_count, del);

  printf("fault run: %ld edits in %.1f s, %ld acknowledged, %ld requests failed "
         "(timed_out %ld, commit_unknown %ld, not_committed %ld, too_old %ld, future_version %ld), "
         "%ld edits of failed requests found applied once\n",
         edits, secs, acked, failed_req, err_by[0], err_by[1], err_by[2], err_by[3], err_by[4], applied_anyway);
  printf("injected:");
  for (size_t k = 0; k < NKINDS; k++) {
    printf(" %s %ld", kinds[k], kvt_fdbsim_injected(kinds[k]));
    ASSERTF(kvt_fdbsim_injected(kinds[k]) > 0, "no %s injected", kinds[k]);
  }
  printf("\nend state: %lld live, %lld deleted, %zu changes rows\n", (long long)live, (long long)del, n);
  ASSERT(edits >= target);
  free(seen);
  free(docs);
  store_db_close(h);
  arena_free(&a);
  store_close(s);
  kv_close(kv);
}
