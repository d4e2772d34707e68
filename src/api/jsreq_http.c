/* jsreq_http.c — the request object of a design-document function, filled
 * from an HTTP request: what chttpd_external:json_req_obj reads from the
 * #httpd record and the database. The object itself is built by
 * index/jsreq.c (pure, fuzzed); this file only gathers its inputs — query
 * parameters, headers, body, the client's address, userCtx, the _security
 * object and GET /{db}'s info. Not here: calling the function (index/qs.h).
 */
#include <string.h>

#include "api/api.h"
#include "http/url.h"
#include "index/jsreq.h"

void hapi__db_info(json_w *w, store_db *db, const store_db_info *in, int64_t purge_seq); /* api/server.c */

typedef struct hdr_acc {
  dv_arena *a;      /* r->a */
  jsreq_pair *p;    /* headers collected */
  size_t n, cap;
} hdr_acc;

static int hdr_add(void *arg, const char *name, const char *val) {
  hdr_acc *h = arg;
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 16;
    jsreq_pair *np = arena_realloc(h->a, h->p, h->cap * sizeof *np, cap * sizeof *np, 8);
    if (!np) return DV_ENOMEM;
    h->p = np;
    h->cap = cap;
  }
  h->p[h->n++] = (jsreq_pair){name, strlen(name), val, strlen(val)};
  return 0;
}

/* couch_util:url_encode: letters, digits and _ . - : stay, all else %XX. */
static void url_enc(dv_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
        c == '-' || c == ':') {
      buf_putc(b, c);
    } else {
      buf_putc(b, '%');
      buf_putc(b, (uint8_t)hex[c >> 4]);
      buf_putc(b, (uint8_t)hex[c & 15]);
    }
  }
}

int api_js_req(hreq *r, const char *docid, dv_buf *out) {
  jsreq q;
  memset(&q, 0, sizeof q);
  dv_buf info, raw, peer, sec;
  buf_init(&info);
  buf_init(&raw);
  buf_init(&peer);
  buf_init(&sec);
  int rc = 0;

  if (r->app->db) { /* info: GET /{db}'s body */
    store_db_info in;
    int64_t pseq = 0;
    rc = store_db_info_get(r->app->db, &in);
    if (!rc) rc = store_db_get_purge_seq(r->app->db, &pseq);
    if (rc) goto fail;
    json_w w;
    json_w_init(&w, &info);
    hapi__db_info(&w, r->app->db, &in, pseq);
    rc = json_w_finish(&w);
    if (rc) goto fail;
    q.info = (const char *)info.p;
    q.info_len = info.len;
    json_val *so;
    rc = api_security(r, &so);
    if (rc) goto fail;
    rc = json_write(&sec, so);
    if (rc) goto fail;
    q.sec = (const char *)sec.p;
    q.sec_len = sec.len;
  }
  char uuid[33];
  api_uuid(uuid);
  q.uuid = uuid;
  q.id = docid;
  q.id_len = docid ? strlen(docid) : 0;
  q.method = r->method_str;
  q.req_path = r->seg;
  q.req_path_len = r->seg_len;
  q.n_req_path = r->nseg;
  if (r->reroutes) { /* a rewritten request: requested_path is the client's, path the rewritten one */
    const char **seg = arena_alloc(&r->a, HREQ_MAX_SEG * sizeof *seg);
    size_t *len = arena_alloc(&r->a, HREQ_MAX_SEG * sizeof *len);
    int n;
    if (seg && len && !url_split_path(&r->a, r->orig_path, seg, len, HREQ_MAX_SEG, &n)) {
      q.req_path = seg, q.req_path_len = len, q.n_req_path = n;
      q.path = r->seg, q.path_len = r->seg_len, q.n_path = r->nseg;
    }
  }

  /* raw_path: the path as sent; the query string comes to us decoded, so
   * it is encoded again. */
  buf_puts(&raw, r->path);
  for (int i = 0; i < r->nparams; i++) {
    buf_putc(&raw, i ? '&' : '?');
    url_enc(&raw, r->params[i].key, r->params[i].klen);
    buf_putc(&raw, '=');
    url_enc(&raw, r->params[i].val, r->params[i].vlen);
  }
  q.raw_path = (const char *)raw.p;
  q.raw_path_len = raw.len;

  jsreq_pair *qp = arena_alloc(&r->a, (size_t)(r->nparams ? r->nparams : 1) * sizeof *qp);
  if (!qp) {
    rc = DV_ENOMEM;
    goto fail;
  }
  for (int i = 0; i < r->nparams; i++)
    qp[i] = (jsreq_pair){r->params[i].key, r->params[i].klen, r->params[i].val, r->params[i].vlen};
  q.query = qp;
  q.n_query = (size_t)r->nparams;

  hdr_acc h = {&r->a, NULL, 0, 0};
  rc = hreq_each_hdr(r, hdr_add, &h);
  if (rc) goto fail;
  q.headers = h.p;
  q.n_headers = h.n;

  /* body: a GET without one is mochiweb's undefined */
  if (r->body && (r->body_len || r->method != HM_GET)) q.body = r->body, q.body_len = r->body_len;
  else if (r->method != HM_GET) q.body = "", q.body_len = 0;

  hreq_peer(r, &peer);
  buf_putc(&peer, 0);
  q.peer = buf_error(&peer) ? NULL : (const char *)peer.p;

  q.db = r->app->db_name;
  q.user = r->app->user;
  const char **roles = arena_alloc(&r->a, (size_t)(r->app->nroles ? r->app->nroles : 1) * sizeof *roles);
  if (!roles) {
    rc = DV_ENOMEM;
    goto fail;
  }
  for (int i = 0; i < r->app->nroles; i++)
    if (r->app->roles[i]) roles[q.n_roles++] = r->app->roles[i];
  q.roles = roles;
  if (buf_error(&raw)) {
    rc = DV_ENOMEM;
    goto fail;
  }
  rc = jsreq_build(&q, out);

fail:
  buf_free(&info);
  buf_free(&raw);
  buf_free(&peer);
  buf_free(&sec);
  if (rc == DV_EJSON) hres_err(r, DV_EJSON);
  else if (rc) hres_err(r, rc);
  return rc;
}
