/* repl.c — the replicator's endpoints (src/repl does the work):
 *
 *   POST /_replicate                 one-shot: the request waits (deferred,
 *                                    no pool thread held) for the job's
 *                                    answer; continuous: 202 and _local_id;
 *                                    cancel: 200 or 404
 *   GET  /_scheduler/jobs[/{id}]     running jobs
 *   GET  /_scheduler/docs[/{db}[/{docid}]]  _replicator documents' states
 *                                    ({db} may hold slashes: other/_replicator)
 *   GET  /_active_tasks              running replications
 *
 * All are server-admin endpoints (their routes carry API_SERVER_ADMIN, as CouchDB).
 * Documents written to a _replicator database are checked by
 * hrepl_doc_check (CouchDB's validate_doc_update there).
 */
#include <string.h>

#include "api/api.h"
#include "repl/repl.h"

static int mgr_or_fail(hreq *r, repl_mgr **m) {
  *m = api_srv_of(r)->repl;
  if (*m) return 0;
  hres_errw(r, DV_EINTERNAL, "The replicator is not running.");
  return -1;
}

/* A one-shot replication's answer, on the job's thread. */
static void replicate_done(void *arg, repl_result *res) {
  hreq *r = arg;
  if (!res->rc) {
    json_w w;
    hres_jw(r, 200, &w);
    json_w_raw(&w, (char *)res->body.p, res->body.len);
  } else {
    hres_errw(r, res->rc, res->reason ? res->reason : "");
  }
  hdefer_done(r);
}

void hapi_replicate(hreq *r) {
  repl_mgr *m;
  json_val *body = r->json;
  if (mgr_or_fail(r, &m)) return;
  repl_spec s;
  const char *reason;
  if (repl_spec_parse(&r->a, body, &s, &reason)) {
    hres_errw(r, DV_EBAD_REQUEST, reason);
    return;
  }
  /* The replication acts as the requester on local databases. */
  s.user = (char *)r->app->user;
  s.roles = arena_alloc(&r->a, ((size_t)r->app->nroles + 1) * sizeof *s.roles);
  if (!s.roles) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  s.nroles = 0;
  int has_admin = 0;
  for (int i = 0; i < r->app->nroles; i++) {
    s.roles[s.nroles++] = (char *)r->app->roles[i];
    has_admin |= !strcmp(r->app->roles[i], "_admin");
  }
  if (r->app->is_admin && !has_admin) s.roles[s.nroles++] = "_admin"; /* [admins] carry no roles */
  char id[REPL_ID_MAX];
  if (s.cancel) {
    int rc = repl_submit(m, &s, NULL, NULL, id);
    if (rc == DV_ENOT_FOUND) {
      hres_errw(r, DV_ENOT_FOUND, "Replication not found.");
      return;
    }
    if (rc) {
      hres_err(r, rc);
      return;
    }
  } else if (!s.continuous) {
    hres_defer(r);
    int rc = repl_submit(m, &s, replicate_done, r, id);
    if (rc) {
      hres_err(r, rc);
      hdefer_done(r);
    }
    return;
  } else {
    int rc = repl_submit(m, &s, NULL, NULL, id);
    if (rc) {
      hres_err(r, rc);
      return;
    }
  }
  json_w w;
  hres_jw(r, s.cancel ? 200 : 202, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "ok");
  json_w_bool(&w, 1);
  json_w_keyz(&w, "_local_id");
  json_w_strz(&w, id);
  json_w_obj_end(&w);
}

/* Join segments [i, k) with '/' into the arena. */
static char *join(hreq *r, int i, int k) {
  dv_buf b;
  buf_init(&b);
  for (int s = i; s < k; s++) {
    if (s > i) buf_putc(&b, '/');
    buf_append(&b, r->seg[s], r->seg_len[s]);
  }
  char *out = buf_error(&b) ? NULL : arena_strndup(&r->a, (char *)b.p, b.len);
  buf_free(&b);
  return out;
}

static void answer(hreq *r, int rc, dv_buf *b, const char *what) {
  if (rc == DV_ENOT_FOUND) hres_errw(r, DV_ENOT_FOUND, what);
  else if (rc) hres_err(r, rc);
  else {
    json_w w;
    hres_jw(r, 200, &w);
    json_w_raw(&w, (char *)b->p, b->len);
  }
  buf_free(b);
}

void hapi_scheduler(hreq *r) {
  repl_mgr *m;
  if (mgr_or_fail(r, &m)) return;
  int64_t skip = 0, limit = -1;
  if (hq_int(r, "skip", 0, &skip) || hq_int(r, "limit", 0, &limit)) return;
  dv_buf b;
  buf_init(&b);
  if (r->nseg >= 2 && r->seg_len[1] == 4 && !memcmp(r->seg[1], "jobs", 4)) {
    char *id = r->nseg > 2 ? join(r, 2, r->nseg) : NULL;
    answer(r, repl_jobs_json(m, id, skip, limit, &b), &b, "unknown replication job");
    return;
  }
  if (r->nseg >= 2 && r->seg_len[1] == 4 && !memcmp(r->seg[1], "docs", 4)) {
    char *db = NULL, *docid = NULL;
    if (r->nseg > 2) {
      int k = 3;
      db = join(r, 2, k);
      while (db && !repl_is_replicator_db(db, strlen(db)) && k < r->nseg) db = join(r, 2, ++k);
      if (!db || !repl_is_replicator_db(db, strlen(db))) {
        hres_errw(r, DV_EBAD_REQUEST, "Not a replicator database: its name must end in _replicator.");
        return;
      }
      if (k < r->nseg) docid = join(r, k, r->nseg);
    }
    answer(r, repl_docs_json(m, db, docid, skip, limit, &b), &b, "unknown replication document");
    return;
  }
  hres_errw(r, DV_ENOT_FOUND, "Unknown scheduler endpoint: use /_scheduler/jobs or /_scheduler/docs.");
}

int api_repl_tasks(hreq *r, dv_buf *out) {
  repl_mgr *m = api_srv_of(r)->repl;
  if (!m) {
    buf_puts(out, "[]");
    return buf_error(out) ? DV_ENOMEM : 0;
  }
  return repl_tasks_json(m, out);
}

/* ---- routes ------------------------------------------------------------------ */

static const http_route routes[] = {
    /* as CouchDB's chttpd_auth_request: anyone may ask for a replication;
     * it acts on local databases as them */
    {M(POST), "/_replicate", HTTP_JSON_OBJECT, hapi_replicate},
    {GET_HEAD, "/_scheduler", API_SERVER_ADMIN, hapi_scheduler},
    {GET_HEAD, "/_scheduler/{rest}", API_SERVER_ADMIN, hapi_scheduler},
};
const api_routes api_repl_routes = API_TABLE(routes);
