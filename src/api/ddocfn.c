/* ddocfn.c — the design-document functions that answer HTTP requests:
 * update handlers (/{db}/_design/{ddoc}/_update/{name}[/{docid…}]), show
 * functions (_show/{name}[/{docid…}]), list functions (_list/{name}/…:
 * until views exist, only the answers CouchDB gives before it would run
 * one) and rewrites (_rewrite/{path…}: a rule array, or a function).
 *
 * Each handler follows its clause of CouchDB's chttpd_show.erl or
 * chttpd_rewrite.erl, including the order of its checks: the design
 * document is read first (404 missing / deleted, as handle_design_req),
 * then the path's shape, then the function's key
 * (couch_util:get_nested_json_value: "missing json key: …"). The function
 * runs in a query server (index/qs.h) with CouchDB's request object
 * (api_js_req) and the document as couch_query_servers:json_doc gives it.
 *
 * What a function answers becomes HTTP as chttpd_external's
 * send_external_response does it (send_external below): the response
 * object's members are folded in order, so a later body/json/base64 wins
 * and a "code" the function set beats the 200/201 put before it.
 *
 * A rewritten request runs through the whole stack again (hreq_reroute):
 * routing, authentication, the route's flags and its handler, with the
 * same body; [httpd] rewrite_limit bounds the loops.
 *
 * Not here: validate_doc_update and _changes filters (index/, api/changes.c),
 * the query servers themselves (index/qs.c), the request object
 * (api/jsreq_http.c, index/jsreq.c).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "index/qs.h"
#include "util/alloc.h"
#include "util/b64.h"
#include "util/md5.h"

/* /{db}/_design/{ddoc}/{_action}/{name}/… */
enum { SEG_DDOC = 2, SEG_NAME = 4, SEG_AFTER_NAME = 5 };

#define QS_REVS_LIMIT 20 /* [query_server_config] revs_limit: _revisions ids a function sees */

/* ---- the design document and its functions ----------------------------------- */

typedef struct ddoc_ctx {
  json_val *doc; /* the design document as stored (r->a) */
  qs_ddoc dd;    /* what the query server needs of it */
} ddoc_ctx;

static const char *strz_of(hreq *r, const json_val *v) {
  return v && v->type == JSON_STRING ? arena_strndup(&r->a, v->u.s, v->len) : NULL;
}

/* Read r->app->docid ("_design/x") for a call: a missing or deleted one is
 * CouchDB's 404 (ddoc_cache:open's error, thrown). 0, or -1 answered. */
static int ddoc_open(hreq *r, ddoc_ctx *c) {
  json_val *doc;
  int rc = store_doc_get(r->app->db, r->app->docid, r->app->docid_len, NULL, 0, &r->a, &doc);
  if (rc) {
    hres_err(r, rc == DV_EBAD_DOCID ? DV_ENOT_FOUND : rc);
    return -1;
  }
  dv_buf b;
  buf_init(&b);
  rc = json_write(&b, doc);
  const char *txt = rc ? NULL : arena_strndup(&r->a, (const char *)b.p, b.len);
  size_t n = b.len;
  buf_free(&b);
  const char *rev = strz_of(r, json_obj_getz(doc, "_rev"));
  if (!txt || !rev) {
    hres_err(r, DV_ENOMEM);
    return -1;
  }
  c->doc = doc;
  c->dd = (qs_ddoc){.id = r->app->docid, .id_len = r->app->docid_len, .rev = rev,
                    .lang = strz_of(r, json_obj_getz(doc, "language")), .json = txt, .json_len = n};
  return 0;
}

/* couch_util:get_nested_json_value(DDoc, [section, name]): 0, or 404
 * not_found "missing json key: …" ("json_mismatch" when the section is
 * not an object) answered and -1. */
static int fn_need(hreq *r, const ddoc_ctx *c, const char *section, const char *name) {
  const json_val *s = json_obj_getz(c->doc, section);
  if (!s) {
    hres_errwf(r, DV_ENOT_FOUND, "missing json key: %s", section);
    return -1;
  }
  if (s->type != JSON_OBJECT) {
    hres_errw(r, DV_ENOT_FOUND, "json_mismatch");
    return -1;
  }
  if (!json_obj_getz(s, name)) {
    hres_errwf(r, DV_ENOT_FOUND, "missing json key: %s", name);
    return -1;
  }
  return 0;
}

/* Run ["ddoc", id, [section(, name)], args]: 0 with *out, or -1 answered. */
static int fn_call(hreq *r, const ddoc_ctx *c, const char *section, const char *name, const dv_buf *args,
                   json_val **out) {
  dv_buf path;
  buf_init(&path);
  json_w w;
  json_w_init(&w, &path);
  json_w_arr_begin(&w);
  json_w_strz(&w, section);
  if (name) json_w_strz(&w, name);
  json_w_arr_end(&w);
  int rc = json_w_finish(&w);
  if (!rc && buf_error(args)) rc = DV_ENOMEM;
  if (rc) {
    buf_free(&path);
    hres_err(r, rc);
    return -1;
  }
  qs_err e = {0};
  rc = qs_ddoc_call(&c->dd, (const char *)path.p, path.len, (const char *)args->p, args->len, &r->a, out, &e);
  buf_free(&path);
  if (rc) {
    api_qs_fail(r, rc, &e);
    return -1;
  }
  return 0;
}

static int doc_req_args(hreq *r, const json_val *doc, const char *docid, dv_buf *args);

/* A call that runs off the pool threads (hres_offload): a function may run
 * up to os_process_timeout, and a pool thread serves other connections.
 * The handler prepares it, fn_work runs it on an offload thread, the
 * handler's continuation answers from job->ans (r->app->pending). */
typedef struct fn_job {
  ddoc_ctx c;
  const char *section, *name, *docid, *etag;
  json_val *doc;
  dv_buf args;
  int rc;
  qs_err e;
  json_val *ans;
} fn_job;

static void fn_work(hreq *r) {
  fn_job *j = r->app->pending;
  dv_buf path;
  buf_init(&path);
  json_w w;
  json_w_init(&w, &path);
  json_w_arr_begin(&w);
  json_w_strz(&w, j->section);
  if (j->name) json_w_strz(&w, j->name);
  json_w_arr_end(&w);
  j->rc = json_w_finish(&w) || buf_error(&j->args) ? DV_ENOMEM : 0;
  if (!j->rc)
    j->rc = qs_ddoc_call(&j->c.dd, (const char *)path.p, path.len, (const char *)j->args.p, j->args.len, &r->a,
                         &j->ans, &j->e);
  buf_free(&path);
  buf_free(&j->args);
}

/* Start ["ddoc", id, [section, name], [doc, req]] off the pool; then(r)
 * answers. j lives in r->a. */
static void fn_offload(hreq *r, fn_job *j, void (*then)(hreq *r)) {
  buf_init(&j->args);
  if (doc_req_args(r, j->doc, j->docid, &j->args)) {
    buf_free(&j->args);
    return;
  }
  r->app->pending = j;
  hres_offload(r, fn_work, then);
}

/* The job's answer, or -1 with the failure answered. */
static int fn_answer(hreq *r, fn_job **out) {
  fn_job *j = r->app->pending;
  *out = j;
  if (j->rc) {
    api_qs_fail(r, j->rc, &j->e);
    return -1;
  }
  return 0;
}

/* The document id of the segments from i on, joined with '/' as
 * chttpd_show does; NULL when there are none (or out of memory: *oom). */
static const char *docid_from(hreq *r, int i, int *oom) {
  *oom = 0;
  if (i >= r->nseg) return NULL;
  dv_buf b;
  buf_init(&b);
  for (int k = i; k < r->nseg; k++) {
    if (k > i) buf_putc(&b, '/');
    buf_append(&b, r->seg[k], r->seg_len[k]);
  }
  const char *s = buf_error(&b) ? NULL : arena_strndup(&r->a, (const char *)b.p, b.len);
  buf_free(&b);
  if (!s) *oom = 1;
  return s;
}

/* The document a show or update function gets (maybe_open_doc with
 * [conflicts], then json_doc: _revisions cut to revs_limit), or NULL when
 * there is none or it is deleted. 0, or -1 answered. */
static int fn_doc(hreq *r, const char *docid, json_val **out) {
  *out = NULL;
  if (!docid) return 0;
  json_val *doc;
  int rc = store_doc_get(r->app->db, docid, strlen(docid), NULL, STORE_REVS | STORE_CONFLICTS, &r->a, &doc);
  if (rc == DV_ENOT_FOUND || rc == DV_EDELETED || rc == DV_EBAD_DOCID) return 0;
  if (rc) {
    hres_err(r, rc);
    return -1;
  }
  json_val *revs = json_obj_getz(doc, "_revisions");
  json_val *ids = revs ? json_obj_getz(revs, "ids") : NULL;
  long long lim = config_get_int(api_config(r), "query_server_config", "revs_limit", QS_REVS_LIMIT);
  if (ids && ids->type == JSON_ARRAY && lim > 0 && ids->len > (size_t)lim) ids->len = (size_t)lim;
  *out = doc;
  return 0;
}

/* [doc, req] for a show or update function into args. 0, or -1 answered. */
static int doc_req_args(hreq *r, const json_val *doc, const char *docid, dv_buf *args) {
  buf_putc(args, '[');
  if (doc) {
    if (json_write(args, doc)) {
      hres_err(r, DV_ENOMEM);
      return -1;
    }
  } else {
    buf_puts(args, "null");
  }
  buf_putc(args, ',');
  if (api_js_req(r, docid, args)) return -1;
  buf_putc(args, ']');
  return 0;
}

static int str_is(const json_val *v, const char *s) {
  return v && v->type == JSON_STRING && v->len == strlen(s) && !memcmp(v->u.s, s, v->len);
}

static int key_is(const json_member *m, const char *k) { return m->klen == strlen(k) && !memcmp(m->key, k, m->klen); }

/* ---- a function's response as HTTP (chttpd_external) -------------------------- */

/* couch_util:url_encode: letters, digits and _ . - : stay, all else %XX. */
static void url_enc(dv_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
        ch == '.' || ch == '-' || ch == ':')
      buf_putc(b, ch);
    else
      buf_printf(b, "%%%02X", ch);
  }
}

/* 500 external_response_error "Invalid data from external server: {<<"k">>,V}". */
static void bad_external(hreq *r, const json_member *m) {
  dv_buf b;
  buf_init(&b);
  buf_puts(&b, "Invalid data from external server: {<<\"");
  buf_append(&b, m->key, m->klen);
  buf_puts(&b, "\">>,");
  if (json_write(&b, m->val)) buf_reset(&b);
  buf_puts(&b, "}");
  buf_putc(&b, 0);
  hres_errn(r, DV_EQS, "external_response_error", buf_error(&b) ? NULL : (const char *)b.p);
  buf_free(&b);
}

/* Answer with the response object resp of a show or update function
 * (parse_external_response, send_external_response): status code (the
 * default dflt), body, json or base64 (the last one wins; each with its
 * default Content-Type), headers; then force[0..nforce) replace the
 * function's headers of the same name (apply_headers), and [csp]
 * showlist's Content-Security-Policy is added. */
static void send_external(hreq *r, int dflt, const json_val *resp, const hhdr *force, int nforce) {
  int64_t code = dflt;
  const char *ctype = "application/json";
  const char *body = "";
  size_t n = 0;
  const json_val *hdrs = NULL;
  for (size_t i = 0; i < resp->len; i++) {
    const json_member *m = &resp->u.members[i];
    const json_val *v = m->val;
    if (key_is(m, "code")) {
      if (v->type != JSON_NUMBER || json_num_int64(v->u.s, v->len, &code) || code < 100 || code > 599) {
        bad_external(r, m);
        return;
      }
    } else if (key_is(m, "stop")) {
      if (v->type != JSON_BOOL || !v->b) {
        bad_external(r, m);
        return;
      }
    } else if (key_is(m, "json")) {
      dv_buf b;
      buf_init(&b);
      int rc = json_write(&b, v);
      body = rc ? NULL : arena_strndup(&r->a, (const char *)b.p, b.len);
      n = b.len;
      buf_free(&b);
      if (!body) {
        hres_err(r, DV_ENOMEM);
        return;
      }
      ctype = "application/json";
    } else if (key_is(m, "body")) {
      if (v->type != JSON_STRING) {
        bad_external(r, m);
        return;
      }
      body = v->u.s, n = v->len;
      ctype = "text/html; charset=utf-8";
    } else if (key_is(m, "base64")) {
      uint8_t *p = v->type == JSON_STRING ? arena_alloc(&r->a, dv_b64_decoded_max(v->len) + 1) : NULL;
      if (!p || dv_b64_decode(v->u.s, v->len, 0, p, &n)) {
        bad_external(r, m);
        return;
      }
      body = (const char *)p;
      ctype = "application/binary";
    } else if (key_is(m, "headers")) {
      if (v->type != JSON_OBJECT) {
        bad_external(r, m);
        return;
      }
      for (size_t k = 0; k < v->len; k++)
        if (v->u.members[k].val->type != JSON_STRING) {
          bad_external(r, m);
          return;
        }
      hdrs = v;
    } else {
      bad_external(r, m);
      return;
    }
  }
  /* the headers sent: the forced ones, then the function's not replaced */
  hhdr out[64];
  int nout = 0;
  dv_config *cfg = api_config(r);
  if (config_get_bool(cfg, "csp", "showlist_enable", 1)) {
    char *csp = config_get(cfg, "csp", "showlist_header_value");
    const char *v = csp ? arena_strndup(&r->a, csp, strlen(csp)) : "sandbox";
    dv_free(csp);
    if (v) out[nout++] = (hhdr){"Content-Security-Policy", v};
  }
  for (int i = 0; i < nforce; i++) out[nout++] = force[i];
  for (size_t k = 0; hdrs && k < hdrs->len && nout < (int)(sizeof out / sizeof *out); k++) {
    const json_member *m = &hdrs->u.members[k];
    const char *name = arena_strndup(&r->a, m->key, m->klen), *val = strz_of(r, m->val);
    if (!name || !val) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    int forced = 0;
    for (int i = 0; i < nforce; i++) forced |= !strcmp(force[i].name, name);
    if (!forced) out[nout++] = (hhdr){name, val};
  }
  int have_ct = 0;
  for (int i = 0; i < nout; i++)
    if (!strcasecmp(out[i].name, "Content-Type") && !have_ct) ctype = out[i].val, have_ct = 1;
  hres_raw(r, (int)code, ctype, body, n);
  for (int i = 0; i < nout; i++)
    if (strcasecmp(out[i].name, "Content-Type")) hres_header(r, out[i].name, out[i].val);
}

/* ---- _update ---------------------------------------------------------------- */

/* An update handler's save in flight (api_update). */
typedef struct up_w {
  api_write w;            /* the store's answer */
  store_edit e;           /* the document saved */
  const json_val *resp;   /* the function's response object */
} up_w;

static void up_saved(hreq *r) {
  up_w *p = r->app->pending;
  int rc = p->w.rc ? p->w.rc : p->e.rc;
  if (rc) {
    if (rc == DV_EDOC_TOO_LARGE) hres_errw(r, rc, arena_strndup(&r->a, p->e.id, p->e.id_len));
    else hres_errw(r, rc, hatt_reason(r, rc, NULL, &p->e));
    return;
  }
  dv_buf rev, id;
  buf_init(&rev);
  buf_init(&id);
  store_rev_format(&p->e.rev, &rev);
  buf_putc(&rev, 0);
  url_enc(&id, p->e.id, p->e.id_len);
  buf_putc(&id, 0);
  if (buf_error(&rev) || buf_error(&id)) {
    hres_err(r, DV_ENOMEM);
  } else {
    hhdr force[2] = {{"X-Couch-Update-NewRev", arena_strndup(&r->a, (const char *)rev.p, rev.len)},
                     {"X-Couch-Id", arena_strndup(&r->a, (const char *)id.p, id.len)}};
    if (!force[0].val || !force[1].val) hres_err(r, DV_ENOMEM);
    else send_external(r, 201, p->resp, force, 2);
  }
  buf_free(&rev);
  buf_free(&id);
}

/* Save the document an update function returned, as fabric:update_doc
 * after couch_db:doc_from_json_obj_validate and validate_docid: through
 * api_update, so the validators and the requester's rights apply. */
static void up_save(hreq *r, json_val *doc, const json_val *resp) {
  const json_val *id = json_obj_getz(doc, "_id");
  if (id && id->type != JSON_STRING) {
    hres_errw(r, DV_EBAD_DOCID, "Document id must be a string");
    return;
  }
  if (!id || !id->len) {
    hres_errw(r, DV_EBAD_DOCID, "Document id must not be empty");
    return;
  }
  if (api_docid_ok(r, id->u.s, id->len, 0)) return;
  /* _revisions names the rev whatever _rev says (couch_doc:transfer_fields) */
  const json_val *rv = json_obj_getz(doc, "_revisions");
  const json_val *st = rv ? json_obj_getz(rv, "start") : NULL, *ids = rv ? json_obj_getz(rv, "ids") : NULL;
  if (st && st->type == JSON_NUMBER && ids && ids->type == JSON_ARRAY && ids->len &&
      ids->u.items[0]->type == JSON_STRING) {
    dv_buf b;
    buf_init(&b);
    buf_append(&b, st->u.s, st->len);
    buf_putc(&b, '-');
    buf_append(&b, ids->u.items[0]->u.s, ids->u.items[0]->len);
    int rc = buf_error(&b) ? DV_ENOMEM : json_obj_setz(&r->a, doc, "_rev", json_new_string(&r->a, (const char *)b.p, b.len));
    buf_free(&b);
    if (rc) {
      hres_err(r, rc);
      return;
    }
  }
  json_obj_del(doc, "_revisions", 10);
  const char *why;
  int rc = api_may_write(r, id->u.s, id->len, 0, &doc, &why);
  if (rc) {
    hres_errw(r, rc, why);
    return;
  }
  up_w *p = arena_calloc(&r->a, sizeof *p);
  hatt_w *aw = p ? hatt_w_new(r) : NULL;
  if (!aw) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  rc = store_edit_from_json(&r->a, doc, 1, &p->e);
  if (rc) {
    hres_errw(r, rc, hatt_reason(r, rc, doc, NULL));
    return;
  }
  p->e.id = id->u.s;
  p->e.id_len = id->len;
  why = NULL;
  rc = hatt_prepare(aw, &p->e, &why);
  if (rc) {
    hres_errw(r, rc, why);
    return;
  }
  p->resp = resp;
  r->app->pending = p;
  api_update(r, &p->w, &p->e, 1, 1, up_saved);
}

static void update_then(hreq *r);

/* POST|PUT|… /{db}/_design/{ddoc}/_update/{name}[/{docid…}] */
static void hapi_update(hreq *r) {
  ddoc_ctx c;
  if (ddoc_open(r, &c)) return;
  if (r->nseg <= SEG_NAME) {
    hres_errn(r, DV_ENOT_FOUND, "update_error", "Invalid path.");
    return;
  }
  const char *name = r->seg[SEG_NAME];
  if (fn_need(r, &c, "updates", name)) return;
  int oom;
  const char *docid = docid_from(r, SEG_AFTER_NAME, &oom);
  json_val *doc;
  if (oom) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (fn_doc(r, docid, &doc)) return;
  fn_job *j = arena_calloc(&r->a, sizeof *j);
  if (!j) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  *j = (fn_job){.c = c, .section = "updates", .name = name, .docid = docid, .doc = doc};
  fn_offload(r, j, update_then);
}

static void update_then(hreq *r) {
  fn_job *j;
  if (fn_answer(r, &j)) return;
  json_val *ans = j->ans;
  json_val *nd = json_arr_get(ans, 1), *resp = json_arr_get(ans, 2);
  if (!str_is(json_arr_get(ans, 0), "up") || ans->len != 3 || resp->type != JSON_OBJECT) {
    hres_errw(r, DV_EQS_RENDER, "undefined response from update function");
    return;
  }
  if (nd->type == JSON_OBJECT) {
    up_save(r, nd, resp);
    return;
  }
  send_external(r, 200, resp, NULL, 0);
}

/* ---- _show ------------------------------------------------------------------ */

/* couch_httpd:make_etag's format: the md5 as a 128-bit integer in base 36,
 * quoted. CouchDB hashes term_to_binary({ddoc etag, doc etag | nil,
 * Accept, roles, []}); those exact bytes are Erlang's, so the same parts
 * are hashed here in a format of our own: a stable tag that changes with
 * any of them. */
static const char *show_etag(hreq *r, const ddoc_ctx *c, const json_val *doc) {
  dv_md5 m;
  dv_md5_init(&m);
  const char *drev = doc ? strz_of(r, json_obj_getz(doc, "_rev")) : NULL;
  const char *acc = hreq_hdr(r, "Accept");
  dv_md5_update(&m, c->dd.rev, strlen(c->dd.rev) + 1);
  dv_md5_update(&m, drev ? drev : "nil", strlen(drev ? drev : "nil") + 1);
  dv_md5_update(&m, acc ? acc : "undefined", strlen(acc ? acc : "undefined") + 1);
  for (int i = 0; i < r->app->nroles; i++)
    if (r->app->roles[i]) dv_md5_update(&m, r->app->roles[i], strlen(r->app->roles[i]) + 1);
  uint8_t d[DV_MD5_LEN];
  dv_md5_final(&m, d);
  /* base 36 of the big-endian 128-bit number, by repeated division */
  char digits[32];
  int nd = 0;
  uint8_t x[DV_MD5_LEN];
  memcpy(x, d, sizeof x);
  for (;;) {
    int zero = 1;
    unsigned rem = 0;
    for (int i = 0; i < DV_MD5_LEN; i++) {
      unsigned cur = rem * 256 + x[i];
      x[i] = (uint8_t)(cur / 36);
      rem = cur % 36;
      if (x[i]) zero = 0;
    }
    digits[nd++] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[rem];
    if (zero) break;
  }
  char *s = arena_alloc(&r->a, (size_t)nd + 3);
  if (!s) return NULL;
  s[0] = '"';
  for (int i = 0; i < nd; i++) s[1 + i] = digits[nd - 1 - i];
  s[nd + 1] = '"';
  s[nd + 2] = 0;
  return s;
}

static void show_then(hreq *r);

/* GET|POST|… /{db}/_design/{ddoc}/_show/{name}[/{docid…}] */
static void hapi_show(hreq *r) {
  ddoc_ctx c;
  if (ddoc_open(r, &c)) return;
  if (r->nseg <= SEG_NAME) {
    hres_errn(r, DV_ENOT_FOUND, "show_error", "Invalid path.");
    return;
  }
  const char *name = r->seg[SEG_NAME];
  if (fn_need(r, &c, "shows", name)) return;
  int oom;
  const char *docid = docid_from(r, SEG_AFTER_NAME, &oom);
  json_val *doc;
  if (oom) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (fn_doc(r, docid, &doc)) return;
  const char *etag = show_etag(r, &c, doc);
  if (!etag) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (hreq_etag_match(r, etag)) { /* chttpd:etag_respond: the function does not run */
    hres_raw(r, 304, "text/html; charset=utf-8", "", 0);
    hres_header(r, "ETag", etag);
    return;
  }
  fn_job *j = arena_calloc(&r->a, sizeof *j);
  if (!j) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  *j = (fn_job){.c = c, .section = "shows", .name = name, .docid = docid, .doc = doc, .etag = etag};
  fn_offload(r, j, show_then);
}

static void show_then(hreq *r) {
  fn_job *j;
  if (fn_answer(r, &j)) return;
  json_val *ans = j->ans, *resp = json_arr_get(ans, 1);
  if (!str_is(json_arr_get(ans, 0), "resp") || ans->len != 2 || resp->type != JSON_OBJECT) {
    hres_errw(r, DV_EQS_RENDER, "undefined response from show function");
    return;
  }
  hhdr force[2] = {{"ETag", j->etag}, {"Vary", "Accept"}};
  send_external(r, 200, resp, force, 2);
}

/* ---- _list ------------------------------------------------------------------ */

/* /{db}/_design/{ddoc}/_list/{name}/{view} and …/{name}/{ddoc2}/{view}.
 * Every check CouchDB makes before it queries the view, then the view's
 * rows through the list function (view.c api_view_list). */
static void hapi_list(hreq *r) {
  ddoc_ctx c;
  if (ddoc_open(r, &c)) return;
  int get = r->method == HM_GET || r->method == HM_HEAD || r->method == HM_OPTIONS;
  if (!get && r->method != HM_POST) {
    hres_method(r, "GET,POST,HEAD");
    return;
  }
  if (r->nseg != 6 && r->nseg != 7) {
    hres_errn(r, DV_ENOT_FOUND, "list_error", "Invalid path.");
    return;
  }
  json_val *body = NULL;
  if (r->method == HM_POST && (hreq_need_json(r) || hreq_json_body(r, 1, &body))) return;
  if (fn_need(r, &c, "lists", r->seg[SEG_NAME])) return;
  const json_val *vdoc = c.doc;
  if (r->nseg == 7) { /* the view's design document is another one */
    dv_buf id;
    buf_init(&id);
    buf_puts(&id, "_design/");
    buf_append(&id, r->seg[5], r->seg_len[5]);
    json_val *d = NULL;
    int rc = buf_error(&id) ? DV_ENOMEM : store_doc_get(r->app->db, (const char *)id.p, id.len, NULL, 0, &r->a, &d);
    buf_free(&id);
    if (rc) {
      hres_err(r, rc == DV_EBAD_DOCID ? DV_ENOT_FOUND : rc);
      return;
    }
    vdoc = d;
  }
  const char *view = r->seg[r->nseg - 1];
  if (!strcmp(view, "_all_docs")) {
    hres_errw(r, DV_ENOTSUP, "List functions over _all_docs are not supported by this divan release.");
    return;
  }
  const json_val *views = json_obj_getz(vdoc, "views");
  if (!views || views->type != JSON_OBJECT || !json_obj_getz(views, view)) {
    hres_errw(r, DV_ENOT_FOUND, "missing_named_view");
    return;
  }
  api_view_list(r, vdoc, view, strlen(view), &c.dd, r->seg[SEG_NAME], body);
}

/* ---- _rewrite ---------------------------------------------------------------- */

/* mochiweb_util:quote_plus: letters, digits and . - ~ _ stay, a space is
 * '+', all else %XX. */
static void quote_plus(dv_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
        ch == '-' || ch == '~' || ch == '_')
      buf_putc(b, ch);
    else if (ch == ' ')
      buf_putc(b, '+');
    else
      buf_printf(b, "%%%02X", ch);
  }
}

/* "/{db}/_design/{ddoc}/" + path, then normalize_path: '.' dropped, '..'
 * takes the segment before it, empty segments dropped. Into out (reset). */
static void rw_target(hreq *r, const char *path, size_t n, dv_buf *out) {
  dv_buf all;
  buf_init(&all);
  buf_putc(&all, '/');
  url_enc(&all, r->seg[0], r->seg_len[0]);
  buf_puts(&all, "/_design/");
  url_enc(&all, r->seg[SEG_DDOC], r->seg_len[SEG_DDOC]);
  buf_putc(&all, '/');
  buf_append(&all, path, n);
  /* segments, resolved on a stack of offsets into all */
  size_t starts[256], lens[256];
  int ns = 0;
  const char *p = (const char *)all.p, *end = p + all.len;
  while (!buf_error(&all) && p < end) {
    const char *q = memchr(p, '/', (size_t)(end - p));
    if (!q) q = end;
    size_t k = (size_t)(q - p);
    if (k == 2 && !memcmp(p, "..", 2)) {
      if (ns && !(lens[ns - 1] == 2 && !memcmp((const char *)all.p + starts[ns - 1], "..", 2))) ns--;
      else if (ns < 256) starts[ns] = (size_t)(p - (const char *)all.p), lens[ns++] = 2;
    } else if (k && !(k == 1 && *p == '.') && ns < 256) {
      starts[ns] = (size_t)(p - (const char *)all.p), lens[ns++] = k;
    }
    p = q + 1;
  }
  buf_reset(out);
  buf_putc(out, '/');
  for (int i = 0; i < ns; i++) {
    if (i) buf_putc(out, '/');
    buf_append(out, (const char *)all.p + starts[i], lens[i]);
  }
  buf_putc(out, 0);
  buf_free(&all);
}

/* A segment of a rule's from or to (chttpd_rewrite's path_to_list). */
typedef struct rw_seg {
  const char *s; /* literal, or the variable's name (after ':'), or "*" */
  size_t n;
  int var;       /* 1: a variable (":x", or "*" not last in from) */
  int all;       /* "*" */
} rw_seg;

typedef struct rw_rule {
  rw_seg *from, *to;
  int nfrom, nto;
  const json_val *method; /* NULL = any */
  const json_val *query;  /* an object, or NULL */
  const json_val *formats;/* an object, or NULL */
} rw_rule;

/* A binding: a path variable, a query parameter, or a rule's query value. */
typedef struct rw_bind {
  const char *k;
  size_t kn;
  const json_val *v; /* a string, or (key-like parameters, rule queries) any JSON */
} rw_bind;

typedef struct rw_binds {
  rw_bind *b;
  size_t n, cap;
} rw_binds;

static int binds_push(dv_arena *a, rw_binds *l, const char *k, size_t kn, const json_val *v) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    rw_bind *nb = arena_realloc(a, l->b, l->cap * sizeof *nb, cap * sizeof *nb, 8);
    if (!nb) return DV_ENOMEM;
    l->b = nb, l->cap = cap;
  }
  l->b[l->n++] = (rw_bind){k, kn, v};
  return 0;
}

static const json_val *binds_get(const rw_binds *l, const char *k, size_t kn) {
  for (size_t i = 0; i < l->n; i++)
    if (l->b[i].kn == kn && !memcmp(l->b[i].k, k, kn)) return l->b[i].v;
  return NULL;
}

static int key_like(const char *k, size_t n) {
  static const char *const keys[] = {"key", "startkey", "start_key", "endkey", "end_key", "keys"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if (n == strlen(keys[i]) && !memcmp(k, keys[i], n)) return 1;
  return 0;
}

/* parse_path: split on '/', empty segments dropped; a third ".." is
 * refused unless [httpd] secure_rewrites = false. 0, or -1 answered. */
static int rw_parse_path(hreq *r, const json_val *v, rw_seg **out, int *out_n) {
  if (v->type != JSON_STRING) {
    hres_errn(r, DV_EQS, "error", "invalid_rewrite_target");
    return -1;
  }
  size_t cap = 1;
  for (size_t i = 0; i < v->len; i++) cap += v->u.s[i] == '/';
  rw_seg *s = arena_alloc(&r->a, cap * sizeof *s);
  if (!s) {
    hres_err(r, DV_ENOMEM);
    return -1;
  }
  int n = 0, dotdot = 0;
  const char *p = v->u.s, *end = p + v->len;
  while (p <= end) {
    const char *q = memchr(p, '/', (size_t)(end - p));
    if (!q) q = end;
    size_t k = (size_t)(q - p);
    if (k == 2 && !memcmp(p, "..", 2)) {
      if (dotdot == 2 && config_get_bool(api_config(r), "httpd", "secure_rewrites", 1)) {
        hres_errn(r, DV_EQS, "insecure_rewrite_rule", "too many ../.. segments");
        return -1;
      }
      dotdot++;
    }
    if (k == 1 && *p == '*') s[n++] = (rw_seg){p, 1, 1, 1};
    else if (k && *p == ':') s[n++] = (rw_seg){p + 1, k - 1, 1, 0};
    else if (k) s[n++] = (rw_seg){p, k, 0, 0};
    p = q + 1;
  }
  *out = s;
  *out_n = n;
  return 0;
}

/* make_rule for every rule of the array (non-objects are skipped, as the
 * list comprehension does). 0, or -1 answered. */
static int rw_rules(hreq *r, const json_val *arr, rw_rule **out, size_t *out_n) {
  rw_rule *rules = arena_calloc(&r->a, (arr->len ? arr->len : 1) * sizeof *rules);
  if (!rules) {
    hres_err(r, DV_ENOMEM);
    return -1;
  }
  size_t n = 0;
  for (size_t i = 0; i < arr->len; i++) {
    const json_val *o = arr->u.items[i];
    if (o->type != JSON_OBJECT) continue;
    rw_rule *ru = &rules[n++];
    ru->method = json_obj_getz(o, "method");
    const json_val *q = json_obj_getz(o, "query"), *f = json_obj_getz(o, "formats");
    ru->query = q && q->type == JSON_OBJECT ? q : NULL;
    ru->formats = f && f->type == JSON_OBJECT ? f : NULL;
    const json_val *from = json_obj_getz(o, "from"), *to = json_obj_getz(o, "to");
    if (from) {
      if (rw_parse_path(r, from, &ru->from, &ru->nfrom)) return -1;
    } else {
      static rw_seg all = {"*", 1, 1, 1};
      ru->from = &all, ru->nfrom = 1;
    }
    if (!to) {
      hres_errn(r, DV_EQS, "error", "invalid_rewrite_target");
      return -1;
    }
    if (rw_parse_path(r, to, &ru->to, &ru->nto)) return -1;
  }
  *out = rules;
  *out_n = n;
  return 0;
}

/* bind_path: from against the request's segments [i, nseg). 1 on a match
 * (bindings pushed, newest first as CouchDB prepends them; *rest the index
 * of the segments "*" took), 0 if not, -1 out of memory. A final "*"
 * binds the first segment it takes, as CouchDB's own rewrite tests expect
 * (the rule from "welcome4" then "*" with query {"name": "*"} gives name=user for welcome4/user). */
static int rw_bind_path(hreq *r, const rw_rule *ru, int i, rw_binds *pb, int *rest) {
  rw_binds tmp = {0};
  int k = 0;
  for (; k < ru->nfrom; k++) {
    const rw_seg *s = &ru->from[k];
    if (s->all && k == ru->nfrom - 1) { /* "*" takes the rest, and binds its first segment */
      *rest = i;
      json_val *v = i < r->nseg ? json_new_string(&r->a, r->seg[i], r->seg_len[i]) : NULL;
      if (i < r->nseg && (!v || binds_push(&r->a, &tmp, "*", 1, v))) return -1;
      goto ok;
    }
    if (i >= r->nseg) return 0;
    if (s->var) {
      json_val *v = json_new_string(&r->a, r->seg[i], r->seg_len[i]);
      if (!v || binds_push(&r->a, &tmp, s->s, s->n, v)) return -1;
    } else if (s->n != r->seg_len[i] || memcmp(s->s, r->seg[i], s->n)) {
      return 0;
    }
    i++;
  }
  if (i != r->nseg) return 0;
  *rest = r->nseg;
ok:
  for (size_t j = tmp.n; j-- > 0;)
    if (binds_push(&r->a, pb, tmp.b[j].k, tmp.b[j].kn, tmp.b[j].v)) return -1;
  return 1;
}

/* maybe_format: formats[name] "int" or "bool" converts a string. */
static const json_val *rw_format(hreq *r, const rw_rule *ru, const char *name, size_t n, const json_val *v) {
  const json_val *f = ru->formats ? json_obj_get(ru->formats, name, n) : NULL;
  if (!f || !v || v->type != JSON_STRING) return v;
  if (str_is(f, "int")) {
    size_t i = v->len && (v->u.s[0] == '-' || v->u.s[0] == '+') ? 1 : 0;
    if (i == v->len) return v;
    for (size_t k = i; k < v->len; k++)
      if (v->u.s[k] < '0' || v->u.s[k] > '9') return v;
    const char *t = v->u.s[0] == '+' ? v->u.s + 1 : v->u.s;
    json_val *num = json_new_number(&r->a, t, v->len - (v->u.s[0] == '+'));
    return num ? num : v;
  }
  if (str_is(f, "bool")) {
    if (v->len == 4 && !strncasecmp(v->u.s, "true", 4)) return json_new_bool(&r->a, 1);
    if (v->len == 5 && !strncasecmp(v->u.s, "false", 5)) return json_new_bool(&r->a, 0);
  }
  return v;
}

/* get_var: the binding of name in b, else dflt; formatted. */
static const json_val *rw_var(hreq *r, const rw_rule *ru, const rw_binds *b, const char *name, size_t n,
                              const json_val *dflt) {
  const json_val *v = binds_get(b, name, n);
  return rw_format(r, ru, name, n, v ? v : dflt);
}

/* replace_var of a rule's query value. */
static const json_val *rw_replace(hreq *r, const rw_rule *ru, const rw_binds *b, const json_val *v) {
  if (v->type == JSON_STRING) {
    if (v->len == 1 && v->u.s[0] == '*') return rw_var(r, ru, b, "*", 1, v);
    if (v->len && v->u.s[0] == ':') return rw_var(r, ru, b, v->u.s + 1, v->len - 1, v);
    return v;
  }
  if (v->type != JSON_ARRAY) return v;
  json_val *a = json_new_array(&r->a);
  for (size_t i = 0; a && i < v->len; i++) {
    const json_val *e = v->u.items[i];
    if (e->type == JSON_STRING && e->len && e->u.s[0] == ':') e = rw_var(r, ru, b, e->u.s + 1, e->len - 1, e);
    if (json_arr_push(&r->a, a, (json_val *)e)) return NULL;
  }
  return a;
}

/* iolist_to_binary of a bound value: a string's bytes, an array's strings
 * joined; anything else as JSON (CouchDB would fail on it). */
static void rw_value(dv_buf *b, const json_val *v) {
  if (v->type == JSON_STRING) {
    buf_append(b, v->u.s, v->len);
  } else if (v->type == JSON_ARRAY) {
    for (size_t i = 0; i < v->len; i++) rw_value(b, v->u.items[i]);
  } else if (json_write(b, v)) {
    buf_reset(b);
  }
}

/* The rule array's answer: the first rule whose method and from match,
 * its target built as try_bind_path and make_new_path do, then the
 * request dispatched there. */
static void rewrite_rules(hreq *r, const json_val *arr) {
  rw_rule *rules;
  size_t nr;
  if (rw_rules(r, arr, &rules, &nr)) return;
  /* the request's query list (decode_query_value) */
  rw_binds ql = {0};
  for (int i = 0; i < r->nparams; i++) {
    const hparam *p = &r->params[i];
    json_val *v;
    if (key_like(p->key, p->klen)) {
      if (hreq_parse_json(r, p->val, p->vlen, &v)) return;
    } else if (!(v = json_new_string(&r->a, p->val, p->vlen))) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    if (binds_push(&r->a, &ql, p->key, p->klen, v)) {
      hres_err(r, DV_ENOMEM);
      return;
    }
  }
  const int base = SEG_NAME; /* the path after _rewrite */
  for (size_t k = 0; k < nr; k++) {
    const rw_rule *ru = &rules[k];
    if (ru->method && !str_is(ru->method, r->method_str)) continue;
    rw_binds b1 = {0}, qa = {0}, fin = {0};
    int rest;
    int m = rw_bind_path(r, ru, base, &b1, &rest);
    if (m < 0) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    if (!m) continue;
    /* Bindings1 = path ++ query list; QueryArgs1 (reversed); FinalBindings */
    for (size_t i = 0; i < ql.n; i++)
      if (binds_push(&r->a, &b1, ql.b[i].k, ql.b[i].kn, ql.b[i].v)) {
        hres_err(r, DV_ENOMEM);
        return;
      }
    for (size_t i = ru->query ? ru->query->len : 0; i-- > 0;) {
      const json_member *qm = &ru->query->u.members[i];
      const json_val *v = rw_replace(r, ru, &b1, qm->val);
      if (!v || binds_push(&r->a, &qa, qm->key, qm->klen, v)) {
        hres_err(r, DV_ENOMEM);
        return;
      }
    }
    for (size_t i = 0; i < b1.n; i++)
      if (!binds_get(&qa, b1.b[i].k, b1.b[i].kn) && binds_push(&r->a, &fin, b1.b[i].k, b1.b[i].kn, b1.b[i].v)) {
        hres_err(r, DV_ENOMEM);
        return;
      }
    for (size_t i = 0; i < qa.n; i++)
      if (binds_push(&r->a, &fin, qa.b[i].k, qa.b[i].kn, qa.b[i].v)) {
        hres_err(r, DV_ENOMEM);
        return;
      }
    /* make_new_path, each part quote_plus'd, then the bindings as the query */
    dv_buf path, one;
    buf_init(&path);
    buf_init(&one);
    int parts = 0;
    for (int i = 0; i < ru->nto; i++) {
      const rw_seg *s = &ru->to[i];
      if (s->all) {
        for (int j = rest; j < r->nseg; j++) {
          if (parts++) buf_putc(&path, '/');
          quote_plus(&path, r->seg[j], r->seg_len[j]);
        }
        break;
      }
      if (parts++) buf_putc(&path, '/');
      if (!s->var) {
        quote_plus(&path, s->s, s->n);
        continue;
      }
      const json_val *v = binds_get(&fin, s->s, s->n);
      buf_reset(&one);
      if (v) rw_value(&one, v);
      else buf_puts(&one, "undefined");
      quote_plus(&path, (const char *)one.p, one.len);
    }
    int q = 0;
    for (size_t i = fin.n; i-- > 0;) { /* maybe_encode_bindings folds onto a list: reversed */
      const rw_bind *bd = &fin.b[i];
      if (bd->kn == 1 && bd->k[0] == '*') continue;
      buf_putc(&path, q++ ? '&' : '?');
      quote_plus(&path, bd->k, bd->kn);
      buf_putc(&path, '=');
      buf_reset(&one);
      if (key_like(bd->k, bd->kn)) {
        if (json_write(&one, bd->v)) buf_reset(&one);
      } else {
        rw_value(&one, bd->v);
      }
      quote_plus(&path, (const char *)one.p, one.len);
    }
    dv_buf target;
    buf_init(&target);
    rw_target(r, (const char *)path.p, path.len, &target);
    int oom = buf_error(&path) || buf_error(&one) || buf_error(&target);
    const char *t = oom ? NULL : arena_strndup(&r->a, (const char *)target.p, target.len);
    buf_free(&path);
    buf_free(&one);
    buf_free(&target);
    if (!t) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    hreq_reroute(r, r->method_str, t);
    return;
  }
  hres_err(r, DV_ENOT_FOUND); /* throw(not_found) */
}

/* validate_rewrite_response: each field's type; 0, or -1 answered. */
static int rw_fields_ok(hreq *r, const json_val *o) {
  for (size_t i = 0; i < o->len; i++) {
    const json_member *m = &o->u.members[i];
    const json_val *v = m->val;
    const char *bad = NULL;
    if (key_is(m, "method") && v->type != JSON_STRING) bad = "bad method";
    else if (key_is(m, "path") && v->type != JSON_STRING) bad = "bad path";
    else if (key_is(m, "body") && v->type != JSON_STRING) bad = "bad body";
    else if (key_is(m, "code")) {
      int64_t c;
      if (v->type != JSON_NUMBER || json_num_int64(v->u.s, v->len, &c) || c < 200 || c >= 600) bad = "bad code";
    } else if (key_is(m, "headers") || key_is(m, "query")) {
      if (v->type != JSON_OBJECT) bad = key_is(m, "headers") ? "bad headers" : "bad query";
      for (size_t k = 0; !bad && k < v->len; k++)
        if (v->u.members[k].val->type != JSON_STRING) bad = "object key/value must be strings";
    }
    if (bad) {
      hres_errn(r, DV_EQS, "rewrite_error", bad);
      return -1;
    }
  }
  return 0;
}

/* The rewrite function's answer (couch_query_servers:rewrite, then
 * do_rewrite): a response of its own when it has a code, else the
 * request again with its method, headers, path (relative to the design
 * document), query and body. */
static void rewrite_js(hreq *r, const ddoc_ctx *c) {
  dv_buf args, req;
  buf_init(&args);
  buf_init(&req);
  json_val *rq = NULL, *ans = NULL;
  int failed = api_js_req(r, NULL, &req);
  if (!failed && buf_error(&req)) failed = (hres_err(r, DV_ENOMEM), -1);
  if (!failed) failed = hreq_parse_json(r, (const char *)req.p, req.len, &rq);
  if (!failed && rq->type == JSON_OBJECT) { /* "request2": no info, uuid, id, form */
    json_obj_del(rq, "info", 4);
    json_obj_del(rq, "uuid", 4);
    json_obj_del(rq, "id", 2);
    json_obj_del(rq, "form", 4);
  }
  if (!failed) {
    buf_putc(&args, '[');
    if (json_write(&args, rq)) buf_reset(&args);
    buf_putc(&args, ']');
    failed = fn_call(r, c, "rewrites", NULL, &args, &ans);
  }
  buf_free(&args);
  buf_free(&req);
  if (failed) return;
  if (ans->type == JSON_OBJECT && ans->len == 1) {
    const json_member *m = &ans->u.members[0];
    const char *msg = strz_of(r, m->val);
    if (key_is(m, "forbidden")) {
      hres_errw(r, DV_EFORBIDDEN, msg);
      return;
    }
    if (key_is(m, "unauthorized")) {
      hres_errw(r, DV_EUNAUTHORIZED, msg);
      return;
    }
  }
  if (ans->type == JSON_ARRAY && ans->len == 1 && str_is(ans->u.items[0], "no_dispatch_rule")) {
    hres_errn(r, DV_ENOT_FOUND, "rewrite_error", "Invalid path.");
    return;
  }
  if (ans->type != JSON_ARRAY || ans->len != 2 || !str_is(ans->u.items[0], "ok")) {
    hres_errw(r, DV_EQS, "bad rewrite return");
    return;
  }
  const json_val *o = ans->u.items[1];
  if (o->type != JSON_OBJECT) {
    hres_errn(r, DV_EQS, "rewrite_error", "bad rewrite");
    return;
  }
  if (rw_fields_ok(r, o)) return;
  const json_val *code = json_obj_getz(o, "code"), *hdrs = json_obj_getz(o, "headers");
  const json_val *body = json_obj_getz(o, "body"), *path = json_obj_getz(o, "path");
  const json_val *query = json_obj_getz(o, "query"), *method = json_obj_getz(o, "method");
  if (code) { /* an answer of its own, with the request's body unless it gave one */
    int64_t st = 200;
    if (json_num_int64(code->u.s, code->len, &st)) {
      hres_err(r, DV_EINTERNAL);
      return;
    }
    const char *ct = "application/octet-stream";
    for (size_t i = 0; hdrs && i < hdrs->len; i++)
      if (hdrs->u.members[i].klen == 12 && !strncasecmp(hdrs->u.members[i].key, "Content-Type", 12))
        ct = strz_of(r, hdrs->u.members[i].val);
    if (body) hres_raw(r, (int)st, ct ? ct : "application/octet-stream", body->u.s, body->len);
    else hres_raw(r, (int)st, ct ? ct : "application/octet-stream", r->body ? r->body : "", r->body_len);
    for (size_t i = 0; hdrs && i < hdrs->len; i++) {
      const json_member *m = &hdrs->u.members[i];
      const char *k = arena_strndup(&r->a, m->key, m->klen), *v = strz_of(r, m->val);
      if (k && v && strcasecmp(k, "Content-Type")) hres_header(r, k, v);
    }
    return;
  }
  if (!path) {
    hres_errn(r, DV_EQS, "rewrite_error", "Rewrite result must produce a new path.");
    return;
  }
  dv_buf p, t;
  buf_init(&p);
  buf_init(&t);
  rw_target(r, path->u.s, path->len, &p);
  buf_append(&t, p.p, p.len ? p.len - 1 : 0); /* without its NUL */
  int nq = 0;
  if (query) {
    for (size_t i = 0; i < query->len; i++) {
      const json_member *m = &query->u.members[i];
      buf_putc(&t, nq++ ? '&' : '?');
      quote_plus(&t, m->key, m->klen);
      buf_putc(&t, '=');
      quote_plus(&t, m->val->u.s, m->val->len);
    }
  } else {
    for (int i = 0; i < r->nparams; i++) {
      buf_putc(&t, nq++ ? '&' : '?');
      quote_plus(&t, r->params[i].key, r->params[i].klen);
      buf_putc(&t, '=');
      quote_plus(&t, r->params[i].val, r->params[i].vlen);
    }
  }
  buf_putc(&t, 0);
  const char *target = buf_error(&p) || buf_error(&t) ? NULL : arena_strndup(&r->a, (const char *)t.p, t.len);
  buf_free(&p);
  buf_free(&t);
  if (!target) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  for (size_t i = 0; hdrs && i < hdrs->len; i++) {
    const json_member *m = &hdrs->u.members[i];
    const char *k = arena_strndup(&r->a, m->key, m->klen), *v = strz_of(r, m->val);
    if (!k || !v || hreq_set_hdr(r, k, v)) {
      hres_err(r, DV_ENOMEM);
      return;
    }
  }
  if (body) { /* the rewritten request's body (r->body is the engine's, freed with dv_free) */
    char *nb = dv_malloc(body->len + 1);
    if (!nb) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    memcpy(nb, body->u.s, body->len);
    nb[body->len] = 0;
    dv_free(r->body);
    r->body = nb;
    r->body_len = body->len;
  }
  const char *meth = method ? strz_of(r, method) : r->method_str;
  if (!meth) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  hreq_reroute(r, meth, target);
}

/* ANY /{db}/_design/{ddoc}/_rewrite[/{path…}] */
static void hapi_rewrite(hreq *r) {
  long long limit = config_get_int(api_config(r), "httpd", "rewrite_limit", 100);
  if (r->reroutes >= limit) {
    hres_errw(r, DV_EBAD_REQUEST, "Exceeded rewrite recursion limit");
    return;
  }
  ddoc_ctx c;
  if (ddoc_open(r, &c)) return;
  const json_val *rw = json_obj_getz(c.doc, "rewrites");
  if (!rw) {
    hres_errn(r, DV_ENOT_FOUND, "rewrite_error", "Invalid path.");
    return;
  }
  if (rw->type == JSON_ARRAY) {
    rewrite_rules(r, rw);
    return;
  }
  if (rw->type == JSON_STRING) {
    rewrite_js(r, &c);
    return;
  }
  hres_errn(r, DV_EQS, "case_clause", "rewrites must be an array or a string");
}

/* ---- routes -------------------------------------------------------------------- */

#define DB API_NEEDS_DB

static const http_route routes[] = {
    {HTTP_ANY, "/{db}/_design/{id}/_update", DB, hapi_update},
    {HTTP_ANY, "/{db}/_design/{id}/_update/{rest}", DB, hapi_update},
    {HTTP_ANY, "/{db}/_design/{id}/_show", DB, hapi_show},
    {HTTP_ANY, "/{db}/_design/{id}/_show/{rest}", DB, hapi_show},
    {HTTP_ANY, "/{db}/_design/{id}/_list", DB, hapi_list},
    {HTTP_ANY, "/{db}/_design/{id}/_list/{rest}", DB, hapi_list},
    {HTTP_ANY, "/{db}/_design/{id}/_rewrite", DB, hapi_rewrite},
    {HTTP_ANY, "/{db}/_design/{id}/_rewrite/{rest}", DB, hapi_rewrite},
};
const api_routes api_ddocfn_routes = API_TABLE(routes);
