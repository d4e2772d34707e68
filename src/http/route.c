/* route.c — which handler answers a request, from its decoded path.
 *
 *   /                              hapi_root
 *   /_up, /_all_dbs, /_dbs_info, /_uuids, /_db_updates, /_active_tasks,
 *   /_membership, /_node/…         server handlers
 *   /_replicate, /_scheduler/…     the replicator (h_repl.c)
 *   /_other[/…]                    404 not_found "Database does not exist."
 *                                  (CouchDB takes it for a database name;
 *                                  PUT /_other: 400 illegal_database_name)
 *   /{db}                          hapi_db
 *   /{db}/_all_docs[/queries], _design_docs[/queries], _local_docs[/queries]
 *   /{db}/_bulk_docs … _purge      database endpoints
 *   /{db}/_design/{name}[/att…]    hapi_doc, id "_design/name"
 *   /{db}/_local/{name}            hapi_doc, id "_local/name"
 *   /{db}/_find, _index, _explain, /{db}/_design/x/_view/…: later issues
 *   /{db}/{id}[/att…]              hapi_doc
 *
 * Segments are already percent-decoded, so "/db/a%2Fb" is the document
 * "a/b" while "/db/a/b" is attachment "b" of document "a" (as CouchDB).
 */
#include <string.h>

#include "http/auth.h"
#include "http/route.h"

static int is(const hreq *r, int i, const char *s) {
  return i < r->nseg && r->seg_len[i] == strlen(s) && !memcmp(r->seg[i], s, r->seg_len[i]);
}

static void not_yet(hreq *r, const char *what) {
  hres_errf(r, 501, "not_implemented", "%s is not supported by this divan release.", what);
}

/* The server endpoints: /_name, and below it only for those marked deep. */
static const struct {
  const char *name;
  void (*handler)(hreq *r);
  int deep; /* takes more path segments */
} server_routes[] = {
    {"_up", hapi_up, 0},
    {"_all_dbs", hapi_all_dbs, 0},
    {"_dbs_info", hapi_dbs_info, 0},
    {"_uuids", hapi_uuids, 0},
    {"_db_updates", hapi_db_updates, 0},
    {"_active_tasks", hapi_active_tasks, 0},
    {"_membership", hapi_membership, 0},
    {"_node", hapi_node, 1},
    {"_replicate", hapi_replicate, 0},
    {"_scheduler", hapi_scheduler, 1},
    {"_session", hapi_session, 0},
};

/* Any other /_name is, for CouchDB, a database that cannot exist
 * (chttpd_db:handle_request): a PUT creating it is refused for its name,
 * anything else is 404 "Database does not exist.". */
static void server_route(hreq *r) {
  for (size_t i = 0; i < sizeof server_routes / sizeof *server_routes; i++) {
    if (!is(r, 0, server_routes[i].name)) continue;
    if (r->nseg > 1 && !server_routes[i].deep) hres_errs(r, 400, "bad_request", "Not a server endpoint.");
    else server_routes[i].handler(r);
    return;
  }
  if (r->method == HM_PUT && r->nseg == 1) {
    r->db_name = r->seg[0];
    (void)hreq_open_db(r); /* writes CouchDB's illegal_database_name */
    return;
  }
  hres_err(r, DV_ENO_DB);
}

static void doc_route(hreq *r, int id_seg, const char *prefix) {
  size_t pl = strlen(prefix);
  size_t n = pl + r->seg_len[id_seg];
  char *id = arena_alloc(&r->a, n + 1);
  if (!id) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  memcpy(id, prefix, pl);
  memcpy(id + pl, r->seg[id_seg], r->seg_len[id_seg]);
  id[n] = 0;
  r->docid = id;
  r->docid_len = n;
  r->sub = r->nseg > id_seg + 1 ? id_seg + 1 : 0;
  hapi_doc(r);
}

void route_request(hreq *r) {
  if (r->nseg == 0) {
    hapi_root(r);
    return;
  }
  const char *s0 = r->seg[0];
  int system_db = is(r, 0, "_users") || is(r, 0, "_replicator") || is(r, 0, "_global_changes");
  if (s0[0] == '_' && !system_db) {
    server_route(r);
    return;
  }
  r->db_name = s0;
  if (r->nseg == 1) {
    hapi_db(r);
    return;
  }
  const char *s1 = r->seg[1];
  if (s1[0] != '_') {
    doc_route(r, 1, "");
    return;
  }
  int two = r->nseg == 2;
  int queries = r->nseg == 3 && is(r, 2, "queries");
  if (is(r, 1, "_design")) {
    if (r->nseg == 2) hres_errs(r, 400, "illegal_docid", "Illegal document id `_design/`");
    else if (r->nseg > 3 && r->seg[3][0] == '_') not_yet(r, "Views, shows, lists and updates");
    else doc_route(r, 2, "_design/");
  } else if (is(r, 1, "_local")) {
    if (r->nseg == 2) hres_errs(r, 400, "illegal_docid", "Illegal document id `_local/`");
    else doc_route(r, 2, "_local/");
  } else if (is(r, 1, "_all_docs") && (two || queries)) hapi_all_docs(r, STORE_ALL, queries);
  else if (is(r, 1, "_design_docs") && (two || queries)) hapi_all_docs(r, STORE_DESIGN, queries);
  else if (is(r, 1, "_local_docs") && (two || queries)) hapi_all_docs(r, STORE_LOCAL, queries);
  else if (!two && !is(r, 1, "_compact")) hres_errs(r, 404, "not_found", "missing");
  else if (is(r, 1, "_bulk_docs")) hapi_bulk_docs(r);
  else if (is(r, 1, "_bulk_get")) hapi_bulk_get(r);
  else if (is(r, 1, "_changes")) hapi_changes(r);
  else if (is(r, 1, "_revs_diff")) hapi_revs_diff(r);
  else if (is(r, 1, "_missing_revs")) hapi_missing_revs(r);
  else if (is(r, 1, "_revs_limit")) hapi_revs_limit(r);
  else if (is(r, 1, "_security")) hapi_security(r);
  else if (is(r, 1, "_compact") && r->nseg <= 3) hapi_compact(r);
  else if (is(r, 1, "_view_cleanup")) hapi_view_cleanup(r);
  else if (is(r, 1, "_ensure_full_commit")) hapi_ensure_full_commit(r);
  else if (is(r, 1, "_purge")) hapi_purge(r);
  else if (is(r, 1, "_purged_infos_limit")) hapi_purged_infos_limit(r);
  else if (is(r, 1, "_find") || is(r, 1, "_index") || is(r, 1, "_explain")) not_yet(r, "Mango queries");
  else if (is(r, 1, "_compact")) hres_errs(r, 404, "not_found", "missing");
  else doc_route(r, 1, ""); /* the doc handler refuses the id (illegal_docid) */
}
