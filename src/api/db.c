/* db.c — database endpoints: PUT/GET/HEAD/DELETE/POST /{db},
 * _revs_limit, _security, and the maintenance endpoints CouchDB clients
 * call (_compact, _view_cleanup, _ensure_full_commit) which have nothing to
 * do here: the store compacts itself and every answered write is durable.
 *
 * Not here: documents (api/doc.c), bulk and _all_docs (api/bulk.c), feeds
 * (api/changes.c), purge (api/purge.c), Mango (api/mango.c).
 */
#include <string.h>

#include "api/api.h"
#include "api/api.h"

void hapi__db_info(json_w *w, store_db *db, const store_db_info *in, int64_t purge_seq); /* api/server.c */

static void db_create(hreq *r) {
  /* q, n and placement are cluster knobs of CouchDB with no meaning here;
   * partitioned databases are not supported. */
  int partitioned = 0;
  if (hq_bool(r, "partitioned", &partitioned)) return;
  if (partitioned) {
    hres_errw(r, DV_EBAD_REQUEST, "Partitioned databases are not supported.");
    return;
  }
  size_t n = strlen(r->app->db_name);
  int rc = store_db_name_check(r->app->db_name, n);
  if (!rc) rc = store_db_create(api_store(r), r->app->db_name);
  if (rc == DV_EBAD_DB_NAME) {
    r->app->db = NULL;
    if (api_open_db(r)) return; /* writes CouchDB's illegal_database_name */
  }
  if (rc) {
    hres_err(r, rc);
    return;
  }
  api_created(r);
}

static void db_delete(hreq *r) {
  if (hq_get(r, "rev", NULL)) {
    hres_errw(r, DV_EBAD_REQUEST,
              "You tried to DELETE a database with a ?rev= parameter. Did you mean to DELETE a document instead?");
    return;
  }
  int rc = store_db_name_check(r->app->db_name, strlen(r->app->db_name));
  if (rc) {
    if (api_open_db(r)) return;
  }
  rc = store_db_delete(api_store(r), r->app->db_name);
  if (rc) hres_err(r, rc);
  else hres_ok(r, 200);
}

void hapi_db(hreq *r) {
  switch (r->method) {
  case HM_PUT:
    db_create(r);
    return;
  case HM_DELETE:
    db_delete(r);
    return;
  case HM_GET:
  case HM_HEAD: {
    store_db_info in;
    int64_t pseq = 0;
    int rc = store_db_info_get(r->app->db, &in);
    if (!rc) rc = store_db_get_purge_seq(r->app->db, &pseq);
    if (rc) {
      hres_err(r, rc);
      return;
    }
    json_w w;
    hres_jw(r, 200, &w);
    hapi__db_info(&w, r->app->db, &in, pseq);
    return;
  }
  case HM_POST:
    hapi_doc_post(r);
    return;
  default:
    hres_method(r, "DELETE,GET,HEAD,POST,PUT");
  }
}

void hapi_revs_limit(hreq *r) {
  int64_t n;
  int rc;
  if (r->method == HM_GET) {
    rc = store_db_get_revs_limit(r->app->db, &n);
    if (!rc) {
      json_w w;
      hres_jw(r, 200, &w);
      json_w_int(&w, n);
    }
  } else {
    json_val *v;
    if (api_db_admin(r) || hreq_json_body(r, 0, &v)) return;
    if (v->type != JSON_NUMBER || json_num_int64(v->u.s, v->len, &n) || n < 1) {
      hres_errw(r, DV_EBAD_REQUEST, "revs_limit must be a positive integer");
      return;
    }
    rc = store_db_set_revs_limit(r->app->db, n);
    if (!rc) hres_ok(r, 200);
  }
  if (rc) hres_err(r, rc);
}

/* {"names":[strings], "roles":[strings]}, either member optional. */
static int sec_part_ok(const json_val *p) {
  if (!p) return 1;
  if (p->type != JSON_OBJECT) return 0;
  static const char *const keys[] = {"names", "roles"};
  for (int k = 0; k < 2; k++) {
    json_val *a = json_obj_getz(p, keys[k]);
    if (!a) continue;
    if (a->type != JSON_ARRAY) return 0;
    for (size_t i = 0; i < a->len; i++)
      if (a->u.items[i]->type != JSON_STRING) return 0;
  }
  return 1;
}

void hapi_security(hreq *r) {
  int rc;
  if (r->method == HM_GET) {
    json_val *sec;
    rc = api_security(r, &sec); /* never set: [couchdb] default_security's object */
    if (!rc) hres_json(r, 200, sec);
  } else {
    json_val *sec;
    if (api_db_admin(r) || hreq_json_body(r, 1, &sec)) return;
    if (!sec_part_ok(json_obj_getz(sec, "admins")) || !sec_part_ok(json_obj_getz(sec, "members"))) {
      hres_errw(r, DV_EBAD_REQUEST, "names and roles must be arrays of strings");
      return;
    }
    rc = store_db_set_security(r->app->db, sec);
    if (!rc) hres_ok(r, 200);
  }
  if (rc) hres_err(r, rc);
}

void hapi_compact(hreq *r) {
  if (r->nseg == 3) { /* /_compact/{ddoc}: the design doc must exist */
    char id[8 + 4096 + 1];
    size_t n = r->seg_len[2];
    if (n > 4096) n = 4096;
    memcpy(id, "_design/", 8);
    memcpy(id + 8, r->seg[2], n);
    json_val *d;
    int rc = store_doc_get(r->app->db, id, 8 + n, NULL, 0, &r->a, &d);
    if (rc) {
      hres_err(r, rc);
      return;
    }
  }
  hres_ok(r, 202);
}

void hapi_view_cleanup(hreq *r) {
  int rc = api_view_cleanup(r->app->db);
  if (rc) hres_err(r, rc);
  else hres_ok(r, 202);
}

void hapi_ensure_full_commit(hreq *r) {
  json_w w;
  hres_jw(r, 201, &w);
  json_w_raw(&w, "{\"ok\":true,\"instance_start_time\":\"0\"}", 37);
}

/* ---- routes ------------------------------------------------------------------ */

static const http_route routes[] = {
    {M(PUT), "/{db}", API_SERVER_ADMIN | API_IF_LOAD | HTTP_STREAM_BODY, hapi__db_load}, /* api/dump.c */
    {M(PUT) | M(DELETE), "/{db}", API_SERVER_ADMIN, hapi_db},
    {HTTP_ANY, "/{db}", API_NEEDS_DB, hapi_db},
    {M(GET) | M(PUT), "/{db}/_revs_limit", API_NEEDS_DB, hapi_revs_limit},
    {M(GET) | M(PUT), "/{db}/_security", API_NEEDS_DB, hapi_security},
    /* POST with a JSON content type, on an existing database */
    {M(POST), "/{db}/_compact", API_NEEDS_DB | API_DB_ADMIN | HTTP_JSON_BODY, hapi_compact},
    {M(POST), "/{db}/_compact/{any}", API_NEEDS_DB | API_DB_ADMIN | HTTP_JSON_BODY, hapi_compact},
    {M(POST), "/{db}/_view_cleanup", API_NEEDS_DB | API_DB_ADMIN, hapi_view_cleanup}, /* no Content-Type check, as chttpd_db */
    {M(POST), "/{db}/_ensure_full_commit", API_NEEDS_DB, hapi_ensure_full_commit},
};
const api_routes api_db_routes = API_TABLE(routes);
