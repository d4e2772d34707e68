/* route.c — which route answers a request, and the application table the
 * engine runs it with (api_app).
 *
 * The families' tables are tried in the order below, each row in its
 * table's order; the first row whose pattern matches and whose methods
 * take the request's method wins. A row whose pattern matched but not its
 * method is kept: unless one of the rows right after it with the same
 * pattern takes the request, the engine answers it 405 from that row's
 * methods. The patterns (api.h) of the server
 * endpoints are literals ("/_up"); the database paths start with "{db}",
 * which takes a name not starting with '_' or a system database, so
 * "/_other" falls through to the last table here: CouchDB takes it for a
 * database that cannot exist (chttpd_db:handle_request), 404 "Database does
 * not exist." (a PUT creating it: illegal_database_name).
 *
 * Segments are already percent-decoded, so "/db/a%2Fb" is the document
 * "a/b" while "/db/a/b" is attachment "b" of document "a" (as CouchDB).
 */
#include <string.h>

#include "api/api.h"
#include "auth/crypto.h"
#include "http/hparse.h"

/* ---- matching ------------------------------------------------------------- */

static int is_system_db(const char *s, size_t n) {
  static const char *const sys[] = {"_users", "_replicator", "_global_changes"};
  for (size_t i = 0; i < sizeof sys / sizeof *sys; i++)
    if (n == strlen(sys[i]) && !memcmp(s, sys[i], n)) return 1;
  return 0;
}

/* The pattern's next segment [*p, *e) after its '/'. */
static int next_seg(const char **p, const char **e) {
  if (**p != '/') return 0;
  (*p)++;
  *e = *p;
  while (**e && **e != '/') (*e)++;
  return *e > *p;
}

static int pat_is(const char *p, const char *e, const char *what) {
  return (size_t)(e - p) == strlen(what) && !memcmp(p, what, (size_t)(e - p));
}

/* Does r's path match pattern? On a match, the captures go to cap: index
 * of {db}, of {id}, the literal before {id}, and the first {rest} segment. */
typedef struct caps {
  int db, id, rest;
  const char *id_prefix; /* "_design/", "_local/" or "" */
} caps;

static int match(const hreq *r, const char *pattern, caps *c) {
  *c = (caps){-1, -1, -1, ""};
  if (!strcmp(pattern, "/")) return r->nseg == 0;
  const char *p = pattern, *e;
  int i = 0;
  const char *prev = NULL;
  size_t prev_n = 0;
  while (next_seg(&p, &e)) {
    if (pat_is(p, e, "{rest}")) {
      if (i >= r->nseg) return 0;
      c->rest = i;
      return 1;
    }
    if (i >= r->nseg) return 0;
    const char *s = r->seg[i];
    size_t n = r->seg_len[i];
    if (pat_is(p, e, "{db}")) {
      if (!n || (s[0] == '_' && !is_system_db(s, n))) return 0;
      c->db = i;
    } else if (pat_is(p, e, "{_}")) {
      if (!n || s[0] != '_' || is_system_db(s, n)) return 0;
    } else if (pat_is(p, e, "{id}") || pat_is(p, e, "{_id}")) {
      if (p[1] == '_' && (!n || s[0] != '_')) return 0;
      c->id = i;
      if (prev && prev_n == 7 && !memcmp(prev, "_design", 7)) c->id_prefix = "_design/";
      else if (prev && prev_n == 6 && !memcmp(prev, "_local", 6)) c->id_prefix = "_local/";
    } else if (!pat_is(p, e, "{any}")) {
      if ((size_t)(e - p) != n || memcmp(p, s, n)) return 0;
    }
    prev = p;
    prev_n = (size_t)(e - p);
    p = e;
    i++;
  }
  return i == r->nseg;
}

/* A row for multipart/related bodies only takes those. */
static int multipart_ok(hreq *r, const http_route *rt) {
  if (!(rt->flags & HTTP_MULTIPART)) return 1;
  const char *ct = hreq_hdr(r, "Content-Type");
  return ct && hparse_media_is(ct, strlen(ct), "multipart/related");
}

/* A row for ?load=true only takes those (PUT /{db}?load=true, api/dump.c). */
static int load_ok(hreq *r, const http_route *rt) {
  if (!(rt->flags & API_IF_LOAD)) return 1;
  size_t n = 0;
  const char *v = hq_get(r, "load", &n);
  return v && n == 4 && !memcmp(v, "true", 4);
}

/* Fill r->app from a match. 0, or DV_ENOMEM. */
static int capture(hreq *r, const caps *c) {
  struct hreq_app *x = r->app;
  if (c->db >= 0) x->db_name = r->seg[c->db];
  if (c->id >= 0) {
    size_t pl = strlen(c->id_prefix), n = pl + r->seg_len[c->id];
    char *id = arena_alloc(&r->a, n + 1);
    if (!id) return DV_ENOMEM;
    memcpy(id, c->id_prefix, pl);
    memcpy(id + pl, r->seg[c->id], r->seg_len[c->id]);
    id[n] = 0;
    x->docid = id;
    x->docid_len = n;
    x->sub = c->rest > c->id ? c->rest : 0;
  }
  return 0;
}

/* ---- the paths no family answers -------------------------------------------- */

static const api_routes last_routes;

/* The order the tables are tried in: the literal paths first, the
 * document paths (whose "{id}" takes any segment) last. */
#define FAMILIES                                                                                          \
  {api_stats_routes, api_check_routes, api_dump_routes, api_server_routes, api_utils_routes, api_repl_routes, api_db_routes, api_bulk_routes, api_changes_routes, api_purge_routes, \
   api_mango_routes, api_ddocfn_routes, api_view_routes, last_routes, api_doc_routes}

/* /_name[/…] that is no endpoint: a database that cannot exist, or
 * a server endpoint given more segments than it takes. */
void hapi_no_db(hreq *r) {
  if (r->nseg > 1) {
    hreq probe = {.nseg = 1, .seg = {r->seg[0]}, .seg_len = {r->seg_len[0]}};
    const api_routes f[] = FAMILIES;
    size_t nf = sizeof f / sizeof *f;
    caps c;
    for (size_t i = 0; i < nf; i++)
      for (size_t k = 0; k < f[i].n; k++)
        if (f[i].rows[k].handler != hapi_no_db && f[i].rows[k].pattern[1] == '_' &&
            match(&probe, f[i].rows[k].pattern, &c)) {
          hres_errw(r, DV_EBAD_REQUEST, "Not a server endpoint.");
          return;
        }
  }
  hres_err(r, DV_ENO_DB);
}

static void bad_db_name(hreq *r) {
  r->app->db_name = r->seg[0];
  (void)api_open_db(r); /* writes CouchDB's illegal_database_name */
}

void hapi_missing(hreq *r) { hres_err(r, DV_ENOT_FOUND); }

void hapi_not_yet(hreq *r) {
  hres_errw(r, DV_ENOTSUP, "Views, shows, lists and updates are not supported by this divan release.");
}

static const http_route last_rows[] = {
    {M(PUT), "/{_}", API_SERVER_ADMIN, bad_db_name},
    {HTTP_ANY, "/{_}", API_SERVER_ADMIN, hapi_no_db},
    {HTTP_ANY, "/{_}/{rest}", API_SERVER_ADMIN, hapi_no_db},
};
static const api_routes last_routes = API_TABLE(last_rows);

static const http_route *route(hreq *r) {
  const api_routes f[] = FAMILIES;
  size_t nf = sizeof f / sizeof *f;
  const http_route *seen = NULL;
  caps c, seen_c = {0};
  for (size_t i = 0; i < nf; i++)
    for (size_t k = 0; k < f[i].n; k++) {
      const http_route *rt = &f[i].rows[k];
      if (seen && strcmp(rt->pattern, seen->pattern)) goto found; /* only its own pattern's rows may still take it */
      if (!match(r, rt->pattern, &c) || !multipart_ok(r, rt) || !load_ok(r, rt)) continue;
      if (rt->methods && !(rt->methods & HTTP_M(r->method))) {
        if (!seen) seen = rt, seen_c = c;
        continue;
      }
      seen = rt, seen_c = c;
      goto found;
    }
  if (!seen) { /* every path matches some row above; this is a bug */
    hres_err(r, DV_EINTERNAL);
    return NULL;
  }
found:
  if (capture(r, &seen_c)) {
    hres_err(r, DV_ENOMEM);
    return NULL;
  }
  return seen;
}

/* ---- the application ------------------------------------------------------- */

/* The request is over: what it holds. A write answered after its commit
 * (store_update_async) may leave its attachment state to this. */
static void done(hreq *r) {
  api_log_request(r);
  api_stats_request(r);
  for (hatt_w *w = r->app->att_w; w; w = hatt_w_next(w)) hatt_w_done(w);
  store_db_close(r->app->db);
}

int api_app(api_srv *s, http_app *out) {
  int rc = store_server_uuid(s->st, s->uuid);
  if (rc) return rc;
  cr_random_hex(s->repl_token, 16);
  api_stats_config(s->config);
  *out = (http_app){.arg = s, .req_size = sizeof(struct hreq_app), .route = route, .identify = api_identify,
                    .authorize = api_authorize, .answered = api_stats_answered, .done = done};
  return 0;
}
