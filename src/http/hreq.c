/* hreq.c — the request object's helpers: path and query decoding, headers,
 * bodies, query-parameter parsers with CouchDB's errors, and the response
 * builders every handler uses.
 *
 * Query values are decoded as CouchDB (mochiweb) does: '+' is a space and
 * %XX a byte. Parameter parsers never guess: a value that is not what the
 * parameter takes is a 400 query_parse_error, as CouchDB answers.
 *
 * Not here: sending (server.c), routing (the application's).
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "http/http_int.h"
#include "http/url.h"
#include "util/log.h"

/* ---- decoding -------------------------------------------------------------- */

int hreq__split_path(hreq *r) {
  int rc = url_split_path(&r->a, r->path, r->seg, r->seg_len, HREQ_MAX_SEG, &r->nseg);
  if (rc == -2) hres_errw(r, DV_EBAD_REQUEST, "Too many path segments.");
  else if (rc) hres_errw(r, DV_EBAD_REQUEST, "Malformed URL: bad percent-encoding.");
  return rc;
}

int hreq__add_param(hreq *r, const char *key, const char *val) {
  if ((r->nparams & 15) == 0) {
    hparam *np = arena_realloc(&r->a, r->params, sizeof(hparam) * (size_t)r->nparams,
                               sizeof(hparam) * (size_t)(r->nparams + 16), 16);
    if (!np) return -1;
    r->params = np;
  }
  hparam *p = &r->params[r->nparams];
  p->key = url_decode(&r->a, key, strlen(key), 1, &p->klen);
  if (!val) val = "";
  p->val = url_decode(&r->a, val, strlen(val), 1, &p->vlen);
  if (!p->key || !p->val) {
    if (!r->status) hres_errw(r, DV_EBAD_REQUEST, "Malformed query string: bad percent-encoding.");
    return 0;
  }
  r->nparams++;
  return 0;
}

/* ---- request --------------------------------------------------------------- */

const char *hreq_hdr(hreq *r, const char *name) {
  for (int i = r->nin_hdr - 1; i >= 0; i--)
    if (!strcasecmp(r->in_hdr[i].name, name)) return r->in_hdr[i].val;
  return r->conn ? MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name) : NULL;
}

int hreq_set_hdr(hreq *r, const char *name, const char *val) {
  if ((r->nin_hdr & 7) == 0) {
    hhdr *nh = arena_realloc(&r->a, r->in_hdr, sizeof(hhdr) * (size_t)r->nin_hdr,
                             sizeof(hhdr) * (size_t)(r->nin_hdr + 8), 8);
    if (!nh) return DV_ENOMEM;
    r->in_hdr = nh;
  }
  const char *n = arena_strndup(&r->a, name, strlen(name));
  const char *v = arena_strndup(&r->a, val, strlen(val));
  if (!n || !v) return DV_ENOMEM;
  r->in_hdr[r->nin_hdr++] = (hhdr){n, v};
  return 0;
}

struct each_hdr {
  int (*cb)(void *arg, const char *name, const char *val);
  void *arg;
  int rc;
  hreq *r; /* its hreq_set_hdr headers hide the client's */
};

static enum MHD_Result each_hdr_cb(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  struct each_hdr *e = cls;
  (void)kind;
  for (int i = 0; i < e->r->nin_hdr; i++) /* one hreq_set_hdr set hides */
    if (!strcasecmp(e->r->in_hdr[i].name, key)) return MHD_YES;
  e->rc = e->cb(e->arg, key, value ? value : "");
  return e->rc ? MHD_NO : MHD_YES;
}

int hreq_each_hdr(hreq *r, int (*cb)(void *arg, const char *name, const char *val), void *arg) {
  struct each_hdr e = {cb, arg, 0, r};
  if (r->conn) MHD_get_connection_values(r->conn, MHD_HEADER_KIND, each_hdr_cb, &e);
  for (int i = 0; !e.rc && i < r->nin_hdr; i++) { /* hreq_set_hdr's, the last of a name */
    int later = 0;
    for (int k = i + 1; k < r->nin_hdr; k++) later |= !strcasecmp(r->in_hdr[k].name, r->in_hdr[i].name);
    if (!later) e.rc = cb(arg, r->in_hdr[i].name, r->in_hdr[i].val);
  }
  return e.rc;
}

const char *hreq_peer_ref(hreq *r, char tmp[64], size_t *len) {
  const union MHD_ConnectionInfo *ci =
      r->conn ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
  const struct sockaddr *sa = ci ? ci->client_addr : NULL;
  int proxied = 0;
  if (sa && sa->sa_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
    uint32_t ip = ntohl(a->sin_addr.s_addr);
    proxied = ip == 0x7f000001u || (ip >> 24) == 10;
    if (!inet_ntop(AF_INET, &a->sin_addr, tmp, 64)) sa = NULL;
  } else if (sa && sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
    if (!inet_ntop(AF_INET6, &a->sin6_addr, tmp, 64)) sa = NULL;
  } else {
    sa = NULL;
  }
  const char *xff = proxied ? hreq_hdr(r, "X-Forwarded-For") : NULL;
  if (xff) { /* string:strip(lists:last(string:tokens(Hosts, ","))) */
    const char *end = xff + strlen(xff), *last = NULL, *last_end = NULL;
    for (const char *p = xff; p < end;) {
      while (p < end && *p == ',') p++;
      if (p >= end) break;
      const char *q = p;
      while (q < end && *q != ',') q++;
      last = p, last_end = q;
      p = q;
    }
    if (last) {
      while (last < last_end && *last == ' ') last++;
      while (last_end > last && last_end[-1] == ' ') last_end--;
      *len = (size_t)(last_end - last);
      return last;
    }
  }
  if (!sa) strcpy(tmp, "127.0.0.1");
  *len = strlen(tmp);
  return tmp;
}

void hreq_peer(hreq *r, dv_buf *b) {
  char tmp[64];
  size_t n;
  const char *p = hreq_peer_ref(r, tmp, &n);
  buf_append(b, p, n);
}

int hreq_need_json(hreq *r) {
  const char *ct = hreq_hdr(r, "Content-Type");
  size_t n = strlen("application/json");
  if (ct && !strncasecmp(ct, "application/json", n) && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' '))
    return 0;
  hres_err(r, DV_EBAD_CONTENT_TYPE);
  return -1;
}

int hreq_parse_json(hreq *r, const char *p, size_t n, json_val **out) {
  int rc = json_parse(&r->a, p ? p : "", n, NULL, out, NULL);
  if (rc == DV_ENOMEM) hres_err(r, rc);
  else if (rc) hres_err(r, DV_EJSON); /* any parse failure: "invalid UTF-8 JSON" */
  return rc ? -1 : 0;
}

int hreq_json_body(hreq *r, int want_object, json_val **out) {
  json_val *v;
  if (hreq_parse_json(r, r->body, r->body_len, &v)) return -1;
  if (want_object && v->type != JSON_OBJECT) {
    hres_errw(r, DV_EBAD_REQUEST, "Request body must be a JSON object");
    return -1;
  }
  *out = v;
  return 0;
}

/* ---- query parameters ------------------------------------------------------- */

const char *hq_get(hreq *r, const char *name, size_t *out_len) {
  for (int i = r->nparams - 1; i >= 0; i--)
    if (!strcmp(r->params[i].key, name)) {
      if (out_len) *out_len = r->params[i].vlen;
      return r->params[i].val;
    }
  return NULL;
}

int hq_bool(hreq *r, const char *name, int *io) {
  const char *v = hq_get(r, name, NULL);
  if (!v) return 0;
  if (!strcmp(v, "true")) *io = 1;
  else if (!strcmp(v, "false")) *io = 0;
  else {
    hres_errwf(r, DV_EQUERY_PARSE, "Invalid boolean parameter: \"%s\"", v);
    return -1;
  }
  return 0;
}

int hq_int(hreq *r, const char *name, int64_t min, int64_t *io) {
  size_t n;
  const char *v = hq_get(r, name, &n);
  if (!v) return 0;
  int64_t x;
  if (!n || json_num_int64(v, n, &x) || strchr(v, '.') || strchr(v, 'e') || strchr(v, 'E')) {
    hres_errwf(r, DV_EQUERY_PARSE, "Invalid value for integer: \"%s\"", v);
    return -1;
  }
  if (x < min) {
    if (min == 0) hres_errwf(r, DV_EQUERY_PARSE, "Invalid value for positive integer: \"%s\"", v);
    else hres_errwf(r, DV_EQUERY_PARSE, "Invalid value for %s: \"%s\"", name, v);
    return -1;
  }
  *io = x;
  return 0;
}

int hq_json(hreq *r, const char *name, json_val **io) {
  size_t n;
  const char *v = hq_get(r, name, &n);
  if (!v) return 0;
  json_val *j;
  if (hreq_parse_json(r, v, n, &j)) return -1;
  *io = j;
  return 0;
}

/* ---- responses --------------------------------------------------------------- */

json_w *hres_jw(hreq *r, int status, json_w *w) {
  buf_reset(&r->out);
  r->status = status;
  r->ctype = NULL;
  json_w_init(w, &r->out);
  return w;
}

void hres_json(hreq *r, int status, const json_val *v) {
  json_w w;
  hres_jw(r, status, &w);
  json_w_val(&w, v);
}

void hres_ok(hreq *r, int status) {
  json_w w;
  hres_jw(r, status, &w);
  json_w_raw(&w, "{\"ok\":true}", 11);
}

void hres_err(hreq *r, int rc) { hres_errw(r, rc, NULL); }

/* The one place an error body is written: the status and the error name
 * are rc's row in util/err.h, so no caller can pair them by hand. */
void hres_errw(hreq *r, int rc, const char *why) { hres_errn(r, rc, NULL, why); }

void hres_errn(hreq *r, int rc, const char *error, const char *why) {
  json_w w;
  int status = dv_err_http(rc);
  if (!error) error = dv_err_couch(rc);
  if (!why) why = dv_strerror(rc);
  hres_jw(r, status, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "error");
  json_w_strz(&w, error);
  json_w_keyz(&w, "reason");
  json_w_strz(&w, why);
  json_w_obj_end(&w);
  if (rc == DV_EOVERLOADED) hres_header(r, "Retry-After", HTTP_RETRY_AFTER);
  /* a server-side failure is logged with its request's id, as chttpd's
   * req_err line; the request line that follows names the request */
  if (status >= 500 && log_enabled(DV_LOG_ERROR))
    log_msg(DV_LOG_ERROR, r->reqid, "req_err %d %s : %s (%s)", status, error, why, dv_err_name(rc));
}

void hres_errwf(hreq *r, int rc, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  hres_errw(r, rc, tmp);
}

void hres_method(hreq *r, const char *allowed) {
  hres_errwf(r, DV_EMETHOD, "Only %s allowed", allowed);
  hres_header(r, "Allow", allowed);
}

void hres_header(hreq *r, const char *name, const char *val) {
  if (r->nhdr == (int)(sizeof r->hdr / sizeof r->hdr[0])) return;
  const char *n = arena_strndup(&r->a, name, strlen(name));
  const char *v = arena_strndup(&r->a, val, strlen(val));
  if (!n || !v) return;
  r->hdr[r->nhdr].name = n;
  r->hdr[r->nhdr].val = v;
  r->nhdr++;
}

void hres_raw(hreq *r, int status, const char *ctype, const void *p, size_t n) {
  buf_reset(&r->out);
  buf_append(&r->out, p, n);
  r->status = status;
  r->ctype = arena_strndup(&r->a, ctype, strlen(ctype));
}

/* ---- absolute URLs (chttpd:absolute_uri) --------------------------------------- */

/* couch_util:url_encode: letters, digits and _ . - : stay, all else %XX. */
static void url_enc(dv_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
        c == '-' || c == ':')
      buf_putc(b, c);
    else
      buf_printf(b, "%%%02X", c);
  }
}

/* host:port this connection came in on, for a request without Host. */
static void local_addr(hreq *r, dv_buf *b) {
  const union MHD_ConnectionInfo *ci =
      r->conn ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char host[INET6_ADDRSTRLEN];
  if (ci && !getsockname(ci->connect_fd, (struct sockaddr *)&ss, &sl)) {
    if (ss.ss_family == AF_INET) {
      const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
      if (inet_ntop(AF_INET, &a->sin_addr, host, sizeof host)) {
        buf_printf(b, "%s:%u", host, (unsigned)ntohs(a->sin_port));
        return;
      }
    } else if (ss.ss_family == AF_INET6) {
      const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
      if (inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host)) {
        buf_printf(b, "[%s]:%u", host, (unsigned)ntohs(a->sin6_port));
        return;
      }
    }
  }
  buf_puts(b, "localhost");
}

void hreq_host(hreq *r, dv_buf *b) {
  const char *host = hreq_hdr(r, "X-Forwarded-Host");
  if (!host) host = hreq_hdr(r, "Host");
  if (host) buf_puts(b, host);
  else local_addr(r, b);
}

void hres_location(hreq *r, const char *const *seg, const size_t *len, int n) {
  dv_buf b;
  buf_init(&b);
  const char *ssl = hreq_hdr(r, "X-Forwarded-Ssl"), *proto = hreq_hdr(r, "X-Forwarded-Proto");
  int https = (ssl && !strcmp(ssl, "on")) || (proto && !strcmp(proto, "https"));
  buf_puts(&b, https ? "https://" : "http://");
  hreq_host(r, &b);
  for (int i = 0; i < n; i++) {
    buf_putc(&b, '/');
    url_enc(&b, seg[i], len[i]);
  }
  if (!buf_error(&b)) hres_header(r, "Location", (const char *)b.p);
  buf_free(&b);
}

/* If-None-Match holds this ETag (couch_httpd:etag_match splits the header
 * on commas and spaces). */
int hreq_etag_match(hreq *r, const char *etag) {
  const char *h = hreq_hdr(r, "If-None-Match");
  size_t en = strlen(etag);
  while (h && *h) {
    while (*h == ',' || *h == ' ') h++;
    size_t k = strcspn(h, ", ");
    if (k && k == en && !memcmp(h, etag, k)) return 1;
    h += k;
  }
  return 0;
}

void hres_etag(hreq *r, const char *rev) {
  dv_buf b;
  buf_init(&b);
  buf_printf(&b, "\"%s\"", rev);
  if (!buf_error(&b)) hres_header(r, "ETag", (const char *)b.p);
  buf_free(&b);
}

