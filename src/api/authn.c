/* authn.c — the HTTP side of auth/: the engine's identify and authorize
 * callbacks, the database membership and admin checks handlers ask for,
 * and the one "may this request write this document" every write path
 * calls (document PUT/POST/DELETE/COPY, attachments, _bulk_docs).
 *
 * Data flow: the engine ─▶ api_identify (auth_identify over the request's
 * headers; a renewed session cookie goes out with the answer) ─▶
 * api_authorize(route): the route's flags (api.h) — a server admin, the
 * database opened and its _security checked (as a db admin when asked),
 * the users database's document rules — before the handler runs.
 */
#include <string.h>

#include "api/api.h"
#include "index/view.h"
#include "repl/repl.h"

static const char *hdr_of(void *arg, const char *name) { return hreq_hdr(arg, name); }

static auth_env env_of(hreq *r) {
  api_srv *s = api_srv_of(r);
  return (auth_env){.st = s->st, .cfg = s->config, .a = &r->a, .repl_token = s->repl_token};
}

static auth_user user_of(hreq *r) {
  return (auth_user){.name = r->app->user, .roles = r->app->roles, .nroles = r->app->nroles,
                     .is_admin = r->app->is_admin, .via = r->app->auth_via};
}

int api_identify(hreq *r) {
  auth_env e = env_of(r);
  auth_user u;
  const char *cookie, *why;
  int rc = auth_identify(&e, hdr_of, r, &u, &cookie, &why);
  if (rc) {
    hres_errw(r, rc, why);
    return -1;
  }
  r->app->user = u.name;
  r->app->roles = u.roles;
  r->app->nroles = u.nroles;
  r->app->is_admin = u.is_admin;
  r->app->auth_via = u.via;
  if (cookie) hres_header(r, "Set-Cookie", cookie);
  return 0;
}

int api_need_server_admin(hreq *r) {
  if (r->app->is_admin) return 0;
  hres_errw(r, DV_EUNAUTHORIZED, "You are not a server admin.");
  return -1;
}

int api_is_users_db(hreq *r) { return r->app->users_db && r->app->db_name; }

static int is_system_db(const char *name) {
  return !strcmp(name, "_users") || !strcmp(name, "_replicator");
}

int api_authorize(hreq *r, const http_route *rt) {
  unsigned f = rt->flags;
  if (r->app->db_name) {
    char b[256];
    r->app->users_db = !strcmp(r->app->db_name, auth_users_db_name(api_config(r), b, sizeof b));
  }
  int admin_only = (f & API_SERVER_ADMIN) ||
                   ((f & API_ALL_DBS) && config_get_bool(api_config(r), "chttpd", "admin_only_all_dbs", 1)) ||
                   /* _all_docs and _changes of _users and _replicator */
                   ((f & API_SYSDB_ADMIN) && r->app->db_name && is_system_db(r->app->db_name));
  if (admin_only && api_need_server_admin(r)) return -1;
  /* _users documents follow users.c's rules (anyone may sign up, a user
   * sees and changes only their own document) for those _security lets in
   * (nobody but admins by default, as CouchDB 3.4); every other _users
   * path needs a member. */
  if ((f & API_DOC) && r->app->users_db && r->app->docid && r->app->docid[0] != '_' &&
      (r->method == HM_GET || r->method == HM_HEAD || r->method == HM_PUT || r->method == HM_DELETE))
    r->app->users_doc = 1;
  if (f & API_NEEDS_DB) return api_open_db(r);
  return 0;
}

int api_security(hreq *r, json_val **out) {
  auth_env e = env_of(r);
  int rc = auth_security(&e, r->app->db, out);
  if (!rc) r->app->sec = *out; /* the write hooks get it (api_wctx) */
  return rc;
}

int api_db_member(hreq *r, int need_admin) {
  if (r->app->is_admin) {
    r->app->db_admin = 1;
    return 0;
  }
  json_val *sec;
  int rc = api_security(r, &sec);
  if (rc) {
    hres_err(r, rc);
    return -1;
  }
  auth_user u = user_of(r);
  const char *why;
  rc = auth_db_access(&u, sec, need_admin, &r->app->db_admin, &why);
  if (rc) {
    hres_errw(r, rc, why);
    return -1;
  }
  return 0;
}

int api_db_admin(hreq *r) {
  auth_user u = user_of(r);
  const char *why;
  int rc = auth_db_admin(&u, r->app->db_admin, &why);
  if (rc) hres_errw(r, rc, why);
  return rc ? -1 : 0;
}

int api_may_write(hreq *r, const char *id, size_t n, int att, json_val **doc, const char **why) {
  auth_user u = user_of(r);
  *why = NULL;
  int rc = auth_may_write(&u, r->app->db_admin, r->app->users_doc, id, n, att, why);
  if (rc) return rc;
  int local = n > 7 && !memcmp(id, "_local/", 7);
  if (!doc || !*doc || local) return 0;
  if (r->app->db_name && repl_is_replicator_db(r->app->db_name, strlen(r->app->db_name)) &&
      repl_doc_validate(&r->a, *doc, r->app->user, r->app->is_admin, why))
    return DV_EFORBIDDEN;
  if (!api_is_users_db(r)) return 0;
  auth_env e = env_of(r);
  return auth_users_prepare(&e, &u, r->app->db_admin, id, n, *doc, doc);
}

static void api_committed(void *arg, int rc) {
  hreq *r = arg;
  r->app->write->rc = rc;
  hdefer_done(r); /* the handler's then() runs on a pool thread */
}

/* A write whose validators may run JavaScript (up to os_process_timeout)
 * must not run on the pool thread whose other connections would wait for
 * it. Where it runs instead:
 *   a JavaScript context's own thread (qs_run): store_update_async's
 *     first attempt, validators and all, runs there, the validators'
 *     calls with no hand-off between threads, and its commit completes
 *     as any asynchronous write's does (api_committed). Two thread
 *     switches per write instead of eight (vdubench);
 *   else (javascript is an external query server, or no context starts)
 *     an offload thread (hres_offload) runs the blocking store_update.
 * A retry after a conflict runs on a store worker, where a validator's
 * call is an ordinary one. */
typedef struct off_write {
  hreq *r;
  store_edit *edits;
  size_t n;
  int new_edits;
  qs_job job;
} off_write;

static void off_update(hreq *r) {
  off_write *o = r->app->write->off;
  r->app->write->rc = store_update(r->app->db, &r->app->write->wc, o->edits, o->n, o->new_edits);
}

static void js_update(void *arg) {
  off_write *o = arg;
  hreq *r = o->r;
  store_update_async(r->app->db, &r->app->write->wc, o->edits, o->n, o->new_edits, api_committed, r);
}

/* After a write: a design document with views written is handed to the
 * view builder, so its index is built in the background (CouchDB's ken)
 * before the first query asks; then the handler's continuation. */
static void update_then(hreq *r) {
  api_write *w = r->app->write;
  for (size_t i = 0; !w->rc && i < w->n; i++) {
    store_edit *e = &w->edits[i];
    vw_index *ix;
    if (e->rc || e->deleted || e->id_len < 9 || memcmp(e->id, "_design/", 8) || !e->body) continue;
    if (vw_from_ddoc(&r->a, e->body, &ix)) continue;
    ix->ddoc_id = arena_strndup(&r->a, e->id, e->id_len);
    vw_kick(r->app->db_name, ix);
  }
  w->then(r);
}

void api_update(hreq *r, api_write *w, store_edit *edits, size_t n, int new_edits, void (*then)(hreq *r)) {
  api_wctx(r, &w->wc, &w->su);
  r->app->write = w;
  w->then = then;
  w->edits = edits;
  w->n = n;
  then = update_then;
  off_write *o = store_db_slow_validators(r->app->db) > 0 ? arena_alloc(&r->a, sizeof *o) : NULL;
  hres_defer_then(r, then);
  if (o) {
    *o = (off_write){.r = r, .edits = edits, .n = n, .new_edits = new_edits, .job = {.fn = js_update, .arg = o}};
    w->off = o;
    if (!qs_run(NULL, &o->job)) return;
    hres_offload(r, off_update, then);
    return;
  }
  store_update_async(r->app->db, &w->wc, edits, n, new_edits, api_committed, r);
}

void api_wctx(hreq *r, store_wctx *w, store_user *u) {
  auth_user au = user_of(r);
  auth_wctx(&au, r->app->db_admin, r->app->sec, &r->a, w, u);
}
