/* storet.c — the helpers of storet.h, shared by the store tests.
 *
 * Not a test file itself: it registers no tests. It wraps the multi-step
 * calls the store tests repeat (open a kv store and a store, one edit,
 * one read, the whole changes feed) and holds the JSON comparer the tests
 * judge documents with, written here without reference to the store's own
 * code so that a shared mistake cannot hide.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "kv/kv_fault.h"
#include "kv/kvt.h"
#include "storet.h"

/* ---- opening ------------------------------------------------------------- */

int storet_on_fdb(void) {
  const char *b = getenv("DV_STORE_BACKEND");
  return b && !strcmp(b, "fdb");
}

int storet_kv_open(const char *dir, int sync, kv_db **out_kv) {
  if (storet_on_fdb()) return kvt_fdbsim_open(dir, out_kv);
  kv_rocks_opts ko = {0};
  ko.create_if_missing = 1;
  ko.no_sync = !sync;
  return kv_open_rocks(dir, &ko, out_kv);
}

void storet_fdb_pair(storet_pair *p) {
  const char *dir = kvt_newdir("cluster");
  for (int i = 0; i < 2; i++) {
    ASSERT_OK(kvt_fdbsim_open(dir, &p->kv[i]));
    ASSERT_OK(store_open(p->kv[i], NULL, &p->s[i]));
  }
}

void storet_fdb_pair_close(storet_pair *p) {
  for (int i = 0; i < 2; i++) store_close(p->s[i]);
  for (int i = 0; i < 2; i++) kv_close(p->kv[i]);
}

storet *storet_open(const store_opts *opts, int sync, const char *dbname) {
  static int n;
  storet *t = calloc(1, sizeof *t);
  ASSERT(t != NULL);
  if (asprintf(&t->dir, "%s/store-%d", test_tmpdir(), n++) < 0) abort();
  arena_init(&t->a, 0);
  int rc = storet_kv_open(t->dir, sync, &t->kv);
  ASSERTF(rc == 0, "kv open %s: %s (%d)", t->dir, dv_err_name(rc), rc);
  rc = store_open(t->kv, opts, &t->s);
  ASSERTF(rc == 0, "store_open: %s (%d)", dv_err_name(rc), rc);
  if (dbname) t->db = storet_create_db(t, dbname);
  return t;
}

storet *storet_open_fault(const char *dbname) {
  static int n;
  storet *t = calloc(1, sizeof *t);
  ASSERT(t != NULL);
  if (asprintf(&t->dir, "%s/fault-%d", test_tmpdir(), n++) < 0) abort();
  arena_init(&t->a, 0);
  kv_db *inner;
  int rc = storet_kv_open(t->dir, 0, &inner);
  ASSERTF(rc == 0, "kv open %s: %s (%d)", t->dir, dv_err_name(rc), rc);
  ASSERT_OK(kv_fault_wrap(inner, &t->kv));
  rc = store_open(t->kv, NULL, &t->s);
  ASSERTF(rc == 0, "store_open: %s (%d)", dv_err_name(rc), rc);
  if (dbname) t->db = storet_create_db(t, dbname);
  return t;
}

void storet_close(storet *t) {
  if (!t) return;
  store_db_close(t->db);
  store_close(t->s);
  kv_close(t->kv);
  arena_free(&t->a);
  free(t->dir);
  free(t);
}

store_db *storet_create_db(storet *t, const char *name) {
  int rc = store_db_create(t->s, name);
  ASSERTF(rc == 0, "store_db_create %s: %s (%d)", name, dv_err_name(rc), rc);
  store_db *db = NULL;
  rc = store_db_open(t->s, name, &db);
  ASSERTF(rc == 0, "store_db_open %s: %s (%d)", name, dv_err_name(rc), rc);
  return db;
}

/* ---- JSON ---------------------------------------------------------------- */

json_val *storet_json_n(dv_arena *a, const char *text, size_t n) {
  json_opts o = {0};
  o.flags = JSON_COPY;
  json_val *v = NULL;
  json_err e = {0};
  int rc = json_parse(a, text, n, &o, &v, &e);
  ASSERTF(rc == 0, "json_parse: %s at %zu (%s): %.200s", dv_err_name(rc), e.offset,
          e.msg ? e.msg : "", text);
  return v;
}

json_val *storet_json(dv_arena *a, const char *text) { return storet_json_n(a, text, strlen(text)); }

const char *storet_json_text(dv_arena *a, const json_val *v) {
  if (!v) return "(null)";
  dv_buf b = DV_BUF_INIT;
  ASSERT_OK(json_write(&b, v));
  char *s = arena_strndup(a, (const char *)b.p, b.len);
  buf_free(&b);
  ASSERT(s != NULL);
  return s;
}

/* Append one path step to *where (built innermost first, so prepend). */
static void where_push(dv_arena *a, const char **where, const char *step, size_t n) {
  if (!where) return;
  const char *old = *where ? *where : "";
  size_t ol = strlen(old);
  char *s = arena_alloc(a, n + ol + 2);
  ASSERT(s != NULL);
  s[0] = '/';
  for (size_t i = 0; i < n; i++) s[1 + i] = step[i] ? step[i] : '0'; /* NUL shows as '0' */
  memcpy(s + 1 + n, old, ol + 1);
  *where = s;
}

static int eq_rec(dv_arena *a, const json_val *x, const json_val *y, const char **where) {
  if (!x || !y) return x == y;
  if (x->type != y->type) return 0;
  switch (x->type) {
    case JSON_NULL: return 1;
    case JSON_BOOL: return !x->b == !y->b;
    case JSON_NUMBER:
    case JSON_STRING: return x->len == y->len && (!x->len || !memcmp(x->u.s, y->u.s, x->len));
    case JSON_ARRAY:
      if (x->len != y->len) return 0;
      for (size_t i = 0; i < x->len; i++)
        if (!eq_rec(a, x->u.items[i], y->u.items[i], where)) {
          char step[24];
          int n = snprintf(step, sizeof step, "%zu", i);
          where_push(a, where, step, (size_t)n);
          return 0;
        }
      return 1;
    case JSON_OBJECT:
      for (size_t i = 0; i < x->len; i++) {
        const json_member *m = &x->u.members[i];
        json_val *o = json_obj_get(y, m->key, m->klen);
        if (!o || !eq_rec(a, m->val, o, where)) {
          where_push(a, where, m->key, m->klen > 64 ? 64 : m->klen);
          return 0;
        }
      }
      if (x->len != y->len) { /* keys unique on both sides: a member of y is extra */
        for (size_t i = 0; i < y->len; i++)
          if (!json_obj_get(x, y->u.members[i].key, y->u.members[i].klen)) {
            where_push(a, where, y->u.members[i].key,
                       y->u.members[i].klen > 64 ? 64 : y->u.members[i].klen);
            break;
          }
        return 0;
      }
      return 1;
  }
  return 0;
}

int storet_json_eq(dv_arena *a, const json_val *x, const json_val *y, const char **where) {
  if (where) *where = NULL;
  int eq = eq_rec(a, x, y, where);
  if (!eq && where && !*where) *where = "/";
  return eq;
}

json_val *storet_body(dv_arena *a, const json_val *doc) {
  ASSERT(doc && doc->type == JSON_OBJECT);
  json_val *o = json_new_object(a);
  ASSERT(o != NULL);
  for (size_t i = 0; i < doc->len; i++) {
    const json_member *m = &doc->u.members[i];
    if (m->klen && m->key[0] == '_') continue;
    ASSERT_OK(json_obj_set(a, o, m->key, m->klen, m->val));
  }
  return o;
}

/* ---- revisions ----------------------------------------------------------- */

store_rev storet_rev_n(dv_arena *a, const char *text, size_t n) {
  store_rev r;
  int rc = store_rev_parse(text, n, a, &r);
  ASSERTF(rc == 0, "store_rev_parse %.*s: %s", (int)(n > 200 ? 200 : n), text, dv_err_name(rc));
  return r;
}

store_rev storet_rev(dv_arena *a, const char *text) { return storet_rev_n(a, text, strlen(text)); }

store_rev storet_doc_rev(dv_arena *a, const json_val *doc) {
  const json_val *r = json_obj_getz(doc, "_rev");
  ASSERTF(r && r->type == JSON_STRING, "no _rev in %.300s", storet_json_text(a, doc));
  return storet_rev_n(a, r->u.s, r->len);
}

const char *storet_rev_str(dv_arena *a, const store_rev *r) {
  dv_buf b = DV_BUF_INIT;
  store_rev_format(r, &b);
  ASSERT_OK(buf_error(&b));
  char *s = arena_strndup(a, b.p ? (const char *)b.p : "", b.len);
  buf_free(&b);
  ASSERT(s != NULL);
  return s;
}

store_rev storet_rev_dup(dv_arena *a, const store_rev *r) {
  store_rev c = *r;
  if (r->len) {
    c.h = arena_memdup(a, r->h, r->len);
    ASSERT(c.h != NULL);
  }
  return c;
}

int storet_rev_eq(const store_rev *a, const store_rev *b) {
  return a->pos == b->pos && !a->raw == !b->raw && a->len == b->len &&
         (!a->len || !memcmp(a->h, b->h, a->len));
}

/* ---- documents ----------------------------------------------------------- */

int storet_put(store_db *db, dv_arena *a, const char *id, const char *body_json,
               const char *parent, int deleted, store_rev *out_rev) {
  store_edit e;
  memset(&e, 0, sizeof e);
  e.id = id;
  e.id_len = strlen(id);
  e.body = body_json ? storet_json(a, body_json) : NULL;
  e.deleted = deleted;
  if (parent) e.parent = storet_rev(a, parent);
  int rc = store_update(db, NULL, &e, 1, 1);
  ASSERTF(rc == 0, "store_update %s: %s (%d)", id, dv_err_name(rc), rc);
  if (e.rc == 0 && out_rev) *out_rev = storet_rev_dup(a, &e.rev);
  return e.rc;
}

int storet_put_doc(store_db *db, dv_arena *a, const char *doc_json, int new_edits,
                   store_rev *out_rev) {
  json_val *doc = storet_json(a, doc_json);
  store_edit e;
  memset(&e, 0, sizeof e);
  int rc = store_edit_from_json(a, doc, new_edits, &e);
  ASSERTF(rc == 0, "store_edit_from_json: %s (%d): %.200s", dv_err_name(rc), rc, doc_json);
  ASSERTF(e.id != NULL, "document without _id: %.200s", doc_json);
  rc = store_update(db, NULL, &e, 1, new_edits);
  ASSERTF(rc == 0, "store_update: %s (%d)", dv_err_name(rc), rc);
  if (e.rc == 0 && out_rev) *out_rev = storet_rev_dup(a, &e.rev);
  return e.rc;
}

int storet_get(store_db *db, dv_arena *a, const char *id, const char *rev, int flags,
               json_val **out) {
  store_rev r;
  if (rev) r = storet_rev(a, rev);
  return store_doc_get(db, id, strlen(id), rev ? &r : NULL, flags, a, out);
}

/* ---- the changes feed ---------------------------------------------------- */

typedef struct chg_acc {
  dv_arena *a;         /* where rows go */
  storet_change *rows; /* grown with arena_realloc */
  size_t n, cap;       /* rows used / allocated */
} chg_acc;

static int chg_cb(void *arg, const store_change *c) {
  chg_acc *acc = arg;
  if (acc->n == acc->cap) {
    size_t ncap = acc->cap ? acc->cap * 2 : 64;
    acc->rows = arena_realloc(acc->a, acc->rows, acc->cap * sizeof *acc->rows,
                              ncap * sizeof *acc->rows, DV_ARENA_ALIGN);
    ASSERT(acc->rows != NULL);
    acc->cap = ncap;
  }
  storet_change *r = &acc->rows[acc->n++];
  r->seq = c->seq;
  r->id = arena_strndup(acc->a, c->id, c->id_len);
  ASSERT(r->id != NULL);
  r->id_len = c->id_len;
  r->rev = storet_rev_dup(acc->a, &c->rev);
  r->deleted = c->deleted;
  return 0;
}

size_t storet_changes(store_db *db, dv_arena *a, const store_seq *since, storet_change **out,
                      store_seq *out_last) {
  store_changes_opts o;
  memset(&o, 0, sizeof o);
  if (since) o.since = *since;
  o.limit = -1;
  chg_acc acc = {a, NULL, 0, 0};
  store_seq last;
  int rc = store_changes(db, &o, chg_cb, &acc, &last);
  ASSERTF(rc == 0, "store_changes: %s (%d)", dv_err_name(rc), rc);
  if (out) *out = acc.rows;
  if (out_last) *out_last = last;
  return acc.n;
}

/* ---- random numbers ------------------------------------------------------ */

uint64_t storet_seed(const char *what, uint64_t dflt) {
  const char *s = getenv("DV_SEED");
  uint64_t seed = dflt;
  if (s && *s) {
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (!errno && end != s) seed = (uint64_t)v;
  }
  printf("%s: seed %llu (DV_SEED=%llu reproduces)\n", what, (unsigned long long)seed,
         (unsigned long long)seed);
  fflush(stdout);
  return seed;
}

uint64_t storet_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t storet_below(uint64_t *state, uint64_t n) { return n ? storet_rand(state) % n : 0; }

int storet_chance(uint64_t *state, unsigned num, unsigned den) {
  return storet_below(state, den) < num;
}

long storet_env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 0);
  return errno || end == s ? dflt : v;
}

double storet_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
