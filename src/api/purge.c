/* purge.c — POST /{db}/_purge and /{db}/_purged_infos_limit, CouchDB
 * 3.x's shapes (chttpd_db.erl) over store_purge.
 *
 *   POST /{db}/_purge   {"docid": ["rev", …], …}
 *     -> 201 {"purge_seq": null, "purged": {"docid": ["rev purged", …], …}}
 *   GET  /{db}/_purged_infos_limit  -> 200 1000
 *   PUT  /{db}/_purged_infos_limit  1234 -> 200 {"ok": true}
 *
 * The order of CouchDB's checks is kept, so the same bad request gets the
 * same answer: Content-Type (415), a JSON object body (400), each member a
 * list of revs (400 "Invalid list of revisions", "Invalid rev format"),
 * then the limits (400 "Exceeded maximum number of documents." past
 * PURGE_MAX_DOCS ids, "… revisions." past PURGE_MAX_REVS revs in all), and
 * only then the database (404). Each document's purge is its own
 * transaction, as each is in CouchDB; the request as a whole is not atomic.
 * Not here: the purge itself (store/purge.c).
 */
#include <string.h>

#include "api/api.h"
#include "api/api.h"

#define PURGE_MAX_DOCS 100   /* CouchDB's [purge] max_document_id_number */
#define PURGE_MAX_REVS 1000  /* CouchDB's [purge] max_revisions_number */

/* One document of the request. */
typedef struct pdoc {
  const char *id;        /* the member's key */
  size_t id_len;
  store_rev *revs;       /* the revs divan can hold (r->a) */
  size_t n;
  store_rev *purged;     /* what store_purge removed (r->a) */
  size_t n_purged;
} pdoc;

/* CouchDB's couch_doc:parse_rev accepts "N-anything" with N an Erlang
 * integer (a sign allowed). 1 for such a string. Revs it accepts that divan
 * cannot hold (generation 0 or less, an empty or over-long hash) name no
 * leaf here, so they are dropped rather than refused. */
static int couch_rev_ok(const char *s, size_t n) {
  const char *dash = memchr(s, '-', n);
  if (!dash) return 0;
  size_t i = 0, k = (size_t)(dash - s);
  if (k && (s[0] == '+' || s[0] == '-')) i = 1;
  if (i == k) return 0;
  for (; i < k; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

/* Parse the body's members into docs (r->a). 0, or the error written. */
static int parse_body(hreq *r, const json_val *body, pdoc **out) {
  pdoc *docs = body->len ? arena_calloc(&r->a, body->len * sizeof *docs) : NULL;
  if (body->len && !docs) goto oom;
  size_t total = 0;
  for (size_t i = 0; i < body->len; i++) {
    const json_member *m = &body->u.members[i];
    pdoc *d = &docs[i];
    d->id = m->key;
    d->id_len = m->klen;
    if (m->val->type != JSON_ARRAY) {
      hres_errw(r, DV_EBAD_REQUEST, "Invalid list of revisions");
      return -1;
    }
    size_t n = m->val->len;
    total += n;
    d->revs = n ? arena_alloc(&r->a, n * sizeof *d->revs) : NULL;
    if (n && !d->revs) goto oom;
    for (size_t k = 0; k < n; k++) {
      const json_val *v = m->val->u.items[k];
      if (v->type != JSON_STRING || !couch_rev_ok(v->u.s, v->len)) {
        hres_errw(r, DV_EBAD_REQUEST, "Invalid rev format");
        return -1;
      }
      int rc = store_rev_parse(v->u.s, v->len, &r->a, &d->revs[d->n]);
      if (rc == DV_ENOMEM) goto oom;
      if (!rc) d->n++;
    }
  }
  if (body->len > PURGE_MAX_DOCS) {
    hres_errw(r, DV_EBAD_REQUEST, "Exceeded maximum number of documents.");
    return -1;
  }
  if (total > PURGE_MAX_REVS) {
    hres_errw(r, DV_EBAD_REQUEST, "Exceeded maximum number of revisions.");
    return -1;
  }
  *out = docs;
  return 0;
oom:
  hres_err(r, DV_ENOMEM);
  return -1;
}

void hapi_purge(hreq *r) {
  json_val *body = r->json;
  pdoc *docs;
  dv_stat_inc(DV_ST_HTTPD_PURGE_REQUESTS);
  if (parse_body(r, body, &docs)) return;
  if (api_db_admin(r)) return;
  dv_stat_inc(DV_ST_DATABASE_PURGES);
  for (size_t i = 0; i < body->len; i++) {
    pdoc *d = &docs[i];
    int rc = store_purge(r->app->db, d->id, d->id_len, d->revs, d->n, &r->a, &d->purged, &d->n_purged);
    if (rc) {
      hres_err(r, rc);
      return;
    }
  }
  json_w w;
  hres_jw(r, 201, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "purge_seq");
  json_w_null(&w);
  json_w_keyz(&w, "purged");
  json_w_obj_begin(&w);
  dv_buf t;
  buf_init(&t);
  for (size_t i = 0; i < body->len; i++) {
    const pdoc *d = &docs[i];
    json_w_key(&w, d->id, d->id_len);
    json_w_arr_begin(&w);
    for (size_t k = 0; k < d->n_purged; k++) {
      buf_reset(&t);
      store_rev_format(&d->purged[k], &t);
      json_w_str(&w, (const char *)t.p, t.len);
    }
    json_w_arr_end(&w);
  }
  int oom = buf_error(&t);
  buf_free(&t);
  json_w_obj_end(&w);
  json_w_obj_end(&w);
  if (oom || json_w_finish(&w)) hres_err(r, DV_ENOMEM);
}

void hapi_purged_infos_limit(hreq *r) {
  int64_t n = 0;
  if (r->method == HM_PUT) {
    json_val *v;
    if (hreq_json_body(r, 0, &v)) return;
    if (v->type != JSON_NUMBER || json_num_int64(v->u.s, v->len, &n) || n < 1) {
      hres_errw(r, DV_EBAD_REQUEST, "`purge_infos_limit` must be positive integer");
      return;
    }
  }
  if (r->method != HM_GET && api_db_admin(r)) return;
  int rc;
  if (r->method == HM_GET) {
    rc = store_db_get_purged_infos_limit(r->app->db, &n);
    if (!rc) {
      json_w w;
      hres_jw(r, 200, &w);
      json_w_int(&w, n);
      if (json_w_finish(&w)) rc = DV_ENOMEM;
    }
  } else {
    rc = store_db_set_purged_infos_limit(r->app->db, n);
    if (!rc) hres_ok(r, 200);
  }
  if (rc) hres_err(r, rc);
}

/* ---- routes ------------------------------------------------------------------ */

static const http_route routes[] = {
    {M(POST), "/{db}/_purge", API_NEEDS_DB | HTTP_JSON_OBJECT, hapi_purge},
    {M(GET) | M(PUT), "/{db}/_purged_infos_limit", API_NEEDS_DB, hapi_purged_infos_limit},
};
const api_routes api_purge_routes = API_TABLE(routes);
