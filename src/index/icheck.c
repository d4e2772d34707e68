/* icheck.c — `divan check` as one call (icheck.h). */
#include <stdio.h>
#include <string.h>

#include "index/icheck.h"
#include "index/mindex.h"
#include "index/view.h"
#include "util/alloc.h"

static int useq(store_db *db, store_seq *out) {
  store_db_info in;
  int rc = store_db_info_get(db, &in);
  if (!rc) *out = in.update_seq;
  return rc;
}

static int note(store_check_out *out, const char *db, const char *what) {
  store_check_item it = {.db = db, .what = what, .note = 1};
  return store_check_emit(out, &it);
}

int icheck_indexes(store *s, const char *name, store_check_out *out) {
  store_db *db;
  int rc = store_db_open(s, name, &db);
  if (rc) return rc == DV_ENO_DB ? 0 : rc; /* deleted since: store_check_db said so */
  dv_arena a;
  arena_init(&a, 0);
  mi_def *d;
  size_t n = 0;
  rc = mi_list(db, &a, &d, &n);
  for (size_t i = 0; !rc && i < n; i++) {
    char what[600];
    if (!d[i].ready) {
      snprintf(what, sizeof what, "index %s/%s not compared: it is being built", d[i].ddoc, d[i].name);
      rc = note(out, name, what);
      continue;
    }
    /* the same rows once per signature */
    size_t k = 0;
    while (k < i && memcmp(d[k].sig, d[i].sig, MI_SIG_LEN)) k++;
    if (k < i) continue;
    store_seq q0, q1;
    int64_t rows = 0;
    const char *why = NULL;
    rc = useq(db, &q0);
    if (rc) break;
    int crc = mi_check(db, &d[i], &a, &rows, &why);
    if (crc && crc != DV_ECORRUPT) {
      rc = crc;
      break;
    }
    if ((rc = useq(db, &q1))) break;
    if (store_seq_cmp(&q0, &q1)) {
      snprintf(what, sizeof what, "index %s/%s not compared: the database was written during the comparison",
               d[i].ddoc, d[i].name);
      rc = note(out, name, what);
      continue;
    }
    out->counts.index_rows += rows;
    if (crc) {
      snprintf(what, sizeof what, "index %s/%s differs from a rebuild: %s", d[i].ddoc, d[i].name,
               why ? why : "(no detail)");
      store_check_item it = {.db = name, .what = what, .expected = "the rows a rebuild from the documents writes"};
      rc = store_check_emit(out, &it);
    }
  }
  if (rc == DV_ENO_DB) rc = 0;
  arena_free(&a);
  store_db_close(db);
  return rc;
}

/* The view indexes of a database's design documents, one per signature. */
struct vlist {
  dv_arena *a;
  vw_index **v;
  size_t n, cap;
};

static int ddoc_cb(void *arg, const store_doc_row *row) {
  struct vlist *l = arg;
  vw_index *ix;
  if (!row->doc) return 0;
  int rc = vw_from_ddoc(l->a, row->doc, &ix);
  if (rc == DV_ENOT_FOUND || (!rc && !strcmp(ix->lang, "query"))) return 0; /* no views; Mango's are mi_check's */
  if (rc) return rc == DV_ENOMEM ? rc : 0; /* a design document the builder cannot read either */
  for (size_t i = 0; i < l->n; i++)
    if (!memcmp(l->v[i]->sig, ix->sig, VW_SIG_LEN)) return 0;
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 8;
    vw_index **nv = arena_alloc(l->a, nc * sizeof *nv);
    if (!nv) return DV_ENOMEM;
    if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = ix;
  return 0;
}

int icheck_views(store *s, const char *name, store_check_out *out) {
  store_db *db;
  int rc = store_db_open(s, name, &db);
  if (rc) return rc == DV_ENO_DB ? 0 : rc;
  dv_arena a;
  arena_init(&a, 0);
  struct vlist l = {.a = &a};
  store_range r;
  store_range_init(&r);
  rc = store_all_docs(db, STORE_DESIGN, &r, 1, 0, ddoc_cb, &l);
  for (size_t i = 0; !rc && i < l.n; i++) {
    int64_t rows = 0;
    rc = vw_check(db, l.v[i], out, &rows);
    out->counts.index_rows += rows;
  }
  if (rc == DV_ENO_DB) rc = 0; /* deleted since: store_check_db said so */
  arena_free(&a);
  store_db_close(db);
  return rc;
}

struct names {
  char **v;
  size_t n, cap;
};

static int name_cb(void *arg, const char *name, size_t len) {
  struct names *ns = arg;
  if (ns->n == ns->cap) {
    size_t nc = ns->cap ? 2 * ns->cap : 32;
    char **nv = dv_realloc(ns->v, nc * sizeof *nv);
    if (!nv) return DV_ENOMEM;
    ns->v = nv;
    ns->cap = nc;
  }
  char *s = dv_malloc(len + 1);
  if (!s) return DV_ENOMEM;
  memcpy(s, name, len);
  s[len] = 0;
  ns->v[ns->n++] = s;
  return 0;
}

static int check_one(store *s, const char *name, store_check_out *out) {
  int rc = store_check_db(s, name, out);
  if (!rc) rc = icheck_indexes(s, name, out);
  if (!rc) rc = icheck_views(s, name, out);
  return rc;
}

int icheck_run(store *s, const char *db, store_check_out *out) {
  if (db) return check_one(s, db, out);
  int rc = store_check_cluster(s, out);
  struct names ns = {0};
  if (!rc) {
    store_range r;
    store_range_init(&r);
    rc = store_db_list(s, &r, name_cb, &ns);
  }
  for (size_t i = 0; !rc && i < ns.n; i++) {
    rc = check_one(s, ns.v[i], out);
    if (rc == DV_ENO_DB) rc = 0; /* deleted since it was listed */
  }
  for (size_t i = 0; i < ns.n; i++) dv_free(ns.v[i]);
  dv_free(ns.v);
  return rc;
}
