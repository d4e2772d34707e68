/* test_alldocs.c — what _all_docs reads beyond the rows themselves.
 *
 * store_all_docs_bodies: with include_docs, a batch's bodies come from one
 * scan of the documents subspace; every document must equal what
 * store_doc_get returns for it, across batches, both directions, skip and
 * limit, conflicts (losing branches with bodies in between), deleted
 * documents with bodies, design documents and odd ids.
 *
 * store_doc_rank_*: store_doc_rank (the _all_docs offset) against a model.
 *
 * Rounds of random edits — creates, updates, deletes, re-creates, live
 * conflicts added by replication, purges — with design documents among
 * the ids, then queries at ids present and absent, ascending and
 * descending, each asked three times so that the scan, the sample build
 * and the sample hit all answer; some rounds edit nothing, so a built
 * sample serves many queries. Every answer must equal the model's count of
 * live documents before (after) the id. A second store over the same kv
 * (its own handle cache, as another divan process would have) edits
 * between queries of the first, so a sample must notice edits it did not
 * see. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storet.h"

#define RK_IDS 1500

typedef struct rk_doc {
  char id[24];
  int exists;          /* has any revision */
  int live;            /* winner live */
  int conflicted;      /* has a second branch (never deleted then) */
  char rev[48];        /* winner rev text */
} rk_doc;

static int id_cmp(const void *a, const void *b) { return strcmp(((const rk_doc *)a)->id, ((const rk_doc *)b)->id); }

static int64_t model_rank(const rk_doc *d, size_t n, const char *probe, int desc) {
  int64_t c = 0;
  for (size_t i = 0; i < n; i++) {
    if (!d[i].live) continue;
    int k = strcmp(d[i].id, probe);
    if (desc ? k > 0 : k < 0) c++;
  }
  return c;
}

static void edit(storet *t, store_db *db, rk_doc *d, uint64_t *rs) {
  store_rev r;
  unsigned what = (unsigned)storet_below(rs, 10);
  if (!d->exists || (!d->live && what < 5)) { /* create, or re-create a deleted doc */
    ASSERT_OK(storet_put(db, &t->a, d->id, "{\"v\":1}", NULL, 0, &r));
    d->exists = d->live = 1;
  } else if (d->live && !d->conflicted && what < 3) { /* delete */
    ASSERT_OK(storet_put(db, &t->a, d->id, NULL, d->rev, 1, &r));
    d->live = 0;
  } else if (d->live && !d->conflicted && what < 4) { /* purge the only leaf: gone */
    store_rev w = storet_rev(&t->a, d->rev), *p;
    size_t np;
    ASSERT_OK(store_purge(db, d->id, strlen(d->id), &w, 1, &t->a, &p, &np));
    ASSERT_EQ(np, 1);
    d->exists = d->live = 0;
    return;
  } else if (what < 6 && !d->conflicted) { /* a live branch arrives by replication */
    char doc[200];
    char h[33];
    for (int i = 0; i < 32; i++) h[i] = "0123456789abcdef"[storet_below(rs, 16)];
    h[32] = 0;
    snprintf(doc, sizeof doc, "{\"_id\":\"%s\",\"_rev\":\"1-%s\",\"c\":1}", d->id, h);
    ASSERT_OK(storet_put_doc(db, &t->a, doc, 0, NULL));
    d->conflicted = 1;
    d->live = 1;
    /* the winner may be either branch now: read it back */
    json_val *got;
    ASSERT_OK(storet_get(db, &t->a, d->id, NULL, 0, &got));
    r = storet_doc_rev(&t->a, got);
  } else if (d->live) { /* update the winner */
    ASSERT_OK(storet_put(db, &t->a, d->id, "{\"v\":2}", d->rev, 0, &r));
  } else {
    return;
  }
  snprintf(d->rev, sizeof d->rev, "%s", storet_rev_str(&t->a, &r));
}

TEST(store_doc_rank_model) {
  storet *t = storet_open(NULL, 0, "db");
  store *s2;
  ASSERT_OK(store_open(t->kv, NULL, &s2));
  store_db *h2;
  ASSERT_OK(store_db_open(s2, "db", &h2));
  uint64_t rs = storet_seed("rank", 0x7a11d0c5);
  rk_doc *d = calloc(RK_IDS, sizeof *d);
  ASSERT(d != NULL);
  for (size_t i = 0; i < RK_IDS; i++) {
    if (i % 50 == 7) snprintf(d[i].id, sizeof d[i].id, "_design/d%04zu", i);
    else snprintf(d[i].id, sizeof d[i].id, "k%04zu", i * 7 % 10007);
  }
  qsort(d, RK_IDS, sizeof *d, id_cmp);
  long queries = 0;
  for (int round = 0; round < 24; round++) {
    arena_reset(&t->a);
    /* edits: none in a third of the rounds, else a few or many */
    int nedits = round % 3 == 2 ? 0 : (int)storet_below(&rs, round < 3 ? 1500 : 200);
    for (int e = 0; e < nedits; e++) edit(t, t->db, &d[storet_below(&rs, RK_IDS)], &rs);
    for (int q = 0; q < 40; q++) {
      char probe[32];
      unsigned k = (unsigned)storet_below(&rs, 4);
      if (k == 0) snprintf(probe, sizeof probe, "%s", d[storet_below(&rs, RK_IDS)].id);
      else if (k == 1) snprintf(probe, sizeof probe, "k%04u5", (unsigned)storet_below(&rs, 10007));
      else if (k == 2) snprintf(probe, sizeof probe, "%s", (const char *[]){"", "_", "_design/", "_design0", "a", "k", "z", "\x7f"}[storet_below(&rs, 8)]);
      else snprintf(probe, sizeof probe, "%s", d[storet_below(&rs, RK_IDS)].id), probe[strlen(probe) - 1] = 0;
      int desc = (int)storet_below(&rs, 2);
      int64_t want = model_rank(d, RK_IDS, probe, desc);
      for (int rep = 0; rep < 3; rep++) {
        int64_t got = -1;
        ASSERT_OK(store_doc_rank(t->db, probe, strlen(probe), desc, &got));
        ASSERTF(got == want, "round %d: rank of \"%s\" %s = %lld, model %lld (ask %d)", round, probe,
                desc ? "descending" : "ascending", (long long)got, (long long)want, rep);
        queries++;
      }
      /* the other handle cache edits now and then: the sample of this one
       * must notice */
      if (storet_below(&rs, 8) == 0) edit(t, h2, &d[storet_below(&rs, RK_IDS)], &rs);
    }
  }
  printf("%ld rank queries, all as the model says\n", queries);
  free(d);
  store_db_close(h2);
  store_close(s2);
  storet_close(t);
}

/* An empty database and one whose docs are all deleted rank 0 everywhere. */
TEST(store_doc_rank_empty) {
  storet *t = storet_open(NULL, 0, "db");
  int64_t got = -1;
  for (int rep = 0; rep < 3; rep++) {
    ASSERT_OK(store_doc_rank(t->db, "m", 1, rep & 1, &got));
    ASSERT_EQ(got, 0);
  }
  store_rev r;
  ASSERT_OK(storet_put(t->db, &t->a, "a", NULL, NULL, 0, &r));
  ASSERT_OK(storet_put(t->db, &t->a, "a", NULL, storet_rev_str(&t->a, &r), 1, &r));
  for (int rep = 0; rep < 3; rep++) {
    ASSERT_OK(store_doc_rank(t->db, "", 0, 0, &got));
    ASSERT_EQ(got, 0);
    ASSERT_OK(store_doc_rank(t->db, "", 0, 1, &got));
    ASSERT_EQ(got, 0);
  }
  storet_close(t);
}

struct ab_rows {
  storet *t;
  int flags;
  int n;
  const char *last;
  int desc;
};

static int ab_cb(void *arg, const store_doc_row *row) {
  struct ab_rows *r = arg;
  ASSERT(row->doc != NULL);
  json_val *want;
  char id[64];
  ASSERT(row->id_len < sizeof id);
  memcpy(id, row->id, row->id_len);
  id[row->id_len] = 0;
  ASSERT_OK(storet_get(r->t->db, &r->t->a, id, NULL, r->flags, &want));
  STORET_ASSERT_JSON_EQ(&r->t->a, row->doc, want);
  if (r->last) ASSERT(r->desc ? strcmp(r->last, id) > 0 : strcmp(r->last, id) < 0);
  r->last = arena_strndup(&r->t->a, id, row->id_len);
  r->n++;
  return 0;
}

TEST(store_all_docs_bodies) {
  storet *t = storet_open(NULL, 0, "db");
  uint64_t rs = storet_seed("alldocs", 0xa11d0c5);
  int live = 0;
  for (int i = 0; i < 2600; i++) {
    char id[40], body[400];
    if (i % 97 == 5) snprintf(id, sizeof id, "_design/x%04d", i);
    else if (i % 89 == 3) snprintf(id, sizeof id, "u\xc3\xa9\x01%04d\xff", i); /* é, a control char, a 0xff-free odd tail */
    else snprintf(id, sizeof id, "a%05d", i);
    if (i % 89 == 3) id[strlen(id) - 1] = 'z';
    snprintf(body, sizeof body,
             "{\"i\":%d,\"s\":\"%0*d\",\"n\":{\"a\":[1,{\"b\":null},[]],\"e\":{}},\"f\":%d.5,\"t\":true}", i,
             (int)storet_below(&rs, 200), i, -i);
    store_rev r;
    ASSERT_OK(storet_put(t->db, &t->a, id, storet_below(&rs, 6) ? body : NULL, NULL, 0, &r));
    unsigned what = (unsigned)storet_below(&rs, 8);
    if (what == 0) { /* deleted, with a body */
      ASSERT_OK(storet_put(t->db, &t->a, id, "{\"gone\":[1,2]}", storet_rev_str(&t->a, &r), 1, NULL));
      continue;
    }
    if (what == 1) { /* plain deletion */
      ASSERT_OK(storet_put(t->db, &t->a, id, NULL, storet_rev_str(&t->a, &r), 1, NULL));
      continue;
    }
    if (what == 2) /* updated */
      ASSERT_OK(storet_put(t->db, &t->a, id, "{\"v\":2,\"z\":[\"x\"]}", storet_rev_str(&t->a, &r), 0, NULL));
    if (what == 3 || what == 4) { /* a conflict with a body, winning or not */
      char doc[300], h[33];
      memset(h, what == 3 ? 'f' : '0', 32);
      h[32] = 0;
      snprintf(doc, sizeof doc, "{\"_id\":\"%s\",\"_rev\":\"%d-%s\",\"branch\":{\"k\":%d}}", id, what == 3 ? 5 : 1, h, i);
      if (i % 89 != 3) ASSERT_OK(storet_put_doc(t->db, &t->a, doc, 0, NULL));
    }
    live++;
    arena_reset(&t->a);
  }
  static const int flags[] = {0, STORE_CONFLICTS, STORE_CONFLICTS | STORE_DELETED_CONFLICTS};
  for (int f = 0; f < 3; f++) {
    for (int desc = 0; desc < 2; desc++) {
      store_range rg;
      store_range_init(&rg);
      rg.descending = desc;
      struct ab_rows r = {.t = t, .flags = flags[f], .desc = desc};
      ASSERT_OK(store_all_docs(t->db, STORE_ALL, &rg, 1, flags[f], ab_cb, &r));
      ASSERT_EQ(r.n, live);
      /* windows: skip and limit inside and across batches */
      for (int w = 0; w < 6; w++) {
        store_range_init(&rg);
        rg.descending = desc;
        rg.skip = (int64_t)storet_below(&rs, 1500);
        rg.limit = 1 + (int64_t)storet_below(&rs, 1200);
        char from[16];
        if (w & 1) {
          snprintf(from, sizeof from, "a%05d", (int)storet_below(&rs, 2600));
          rg.start = from;
          rg.start_len = strlen(from);
        }
        struct ab_rows q = {.t = t, .flags = flags[f], .desc = desc};
        ASSERT_OK(store_all_docs(t->db, STORE_ALL, &rg, 1, flags[f], ab_cb, &q));
        ASSERT(q.n <= rg.limit);
        arena_reset(&t->a);
      }
      /* design documents only */
      store_range_init(&rg);
      rg.descending = desc;
      struct ab_rows d = {.t = t, .flags = flags[f], .desc = desc};
      ASSERT_OK(store_all_docs(t->db, STORE_DESIGN, &rg, 1, flags[f], ab_cb, &d));
      ASSERT(d.n > 0);
      arena_reset(&t->a);
    }
  }
  storet_close(t);
}
