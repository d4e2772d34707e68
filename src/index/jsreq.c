/* jsreq.c — CouchDB's request object (json_req_obj) as JSON text: see
 * jsreq.h. The two small parsers CouchDB runs while building it are here
 * too, each a transcription of its mochiweb function: the Cookie header
 * (mochiweb_cookies:parse_cookie) and a url-encoded form body
 * (mochiweb_util:parse_qs). Not here: reading any of it from an HTTP
 * request (api/jsreq_http.c).
 */
#include "index/jsreq.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json/json.h"
#include "util/arena.h"

/* ---- pairs: CouchDB passes proplists; JavaScript sees the last of a name -- */

typedef struct pairs {
  jsreq_pair *p; /* in arrival order */
  size_t n, cap;
} pairs;

static int pairs_add(dv_arena *a, pairs *ps, const char *k, size_t kn, const char *v, size_t vn) {
  if (ps->n == ps->cap) {
    size_t cap = ps->cap ? 2 * ps->cap : 16;
    jsreq_pair *np = arena_realloc(a, ps->p, ps->cap * sizeof *np, cap * sizeof *np, 8);
    if (!np) return DV_ENOMEM;
    ps->p = np;
    ps->cap = cap;
  }
  ps->p[ps->n++] = (jsreq_pair){k, kn, v, vn};
  return 0;
}

typedef struct sort_ent {
  const jsreq_pair *p; /* the pair */
  size_t i;            /* its position (ties keep arrival order) */
  int nocase;          /* compare names without case (headers) */
} sort_ent;

static int name_cmp(const jsreq_pair *x, const jsreq_pair *y, int nocase) {
  size_t n = x->kn < y->kn ? x->kn : y->kn;
  int c;
  if (nocase) {
    c = 0;
    for (size_t i = 0; i < n && !c; i++) {
      unsigned char a = (unsigned char)x->k[i], b = (unsigned char)y->k[i];
      if (a >= 'A' && a <= 'Z') a = (unsigned char)(a + 32);
      if (b >= 'A' && b <= 'Z') b = (unsigned char)(b + 32);
      c = (a > b) - (a < b);
    }
  } else {
    c = memcmp(x->k, y->k, n);
  }
  return c ? c : (x->kn > y->kn) - (x->kn < y->kn);
}

static int ent_cmp(const void *a, const void *b) {
  const sort_ent *x = a, *y = b;
  int c = name_cmp(x->p, y->p, x->nocase);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Write ps as one JSON object, each name once, where it first came.
 * join == 0: the last value of a name (JSON.parse of CouchDB's proplist
 * keeps the last); join != 0: names compared without case, the values
 * joined with ", " (mochiweb_headers). */
static int write_pairs(dv_arena *a, json_w *w, const jsreq_pair *p, size_t n, int join) {
  json_w_obj_begin(w);
  if (!n) {
    json_w_obj_end(w);
    return 0;
  }
  sort_ent *e = arena_alloc(a, n * sizeof *e);
  size_t *grp = arena_alloc(a, n * sizeof *grp); /* position → its group's start in e, or SIZE_MAX */
  if (!e || !grp) return DV_ENOMEM;
  for (size_t i = 0; i < n; i++) e[i] = (sort_ent){&p[i], i, join};
  qsort(e, n, sizeof *e, ent_cmp);
  for (size_t i = 0; i < n; i++) grp[i] = SIZE_MAX;
  for (size_t g = 0; g < n;) {
    size_t end = g + 1;
    while (end < n && !name_cmp(e[g].p, e[end].p, join)) end++;
    grp[e[g].i] = g; /* the first of the group (the sort keeps arrival order) */
    g = end;
  }
  dv_buf jb;
  buf_init(&jb);
  for (size_t i = 0; i < n; i++) {
    size_t g = grp[i];
    if (g == SIZE_MAX) continue;
    size_t end = g + 1;
    while (end < n && !name_cmp(e[g].p, e[end].p, join)) end++;
    json_w_key(w, p[i].k, p[i].kn);
    if (!join) {
      json_w_str(w, e[end - 1].p->v, e[end - 1].p->vn);
    } else {
      buf_reset(&jb);
      for (size_t k = g; k < end; k++) {
        if (k > g) buf_append(&jb, ", ", 2);
        buf_append(&jb, e[k].p->v, e[k].p->vn);
      }
      json_w_str(w, jb.len ? (const char *)jb.p : "", jb.len);
    }
  }
  int rc = buf_error(&jb) ? DV_ENOMEM : 0;
  buf_free(&jb);
  json_w_obj_end(w);
  return rc;
}

/* ---- mochiweb_util:parse_qs ------------------------------------------------- */

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* qs_revdecode: '+' is a space, %XX with two hex digits a byte, anything
 * else itself. */
static char *qs_decode(dv_arena *a, const char *s, size_t n, size_t *out_n) {
  char *o = arena_alloc(a, n + 1);
  if (!o) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int h, l;
    if (s[i] == '+') o[k++] = ' ';
    else if (s[i] == '%' && i + 2 < n && (h = hexval((unsigned char)s[i + 1])) >= 0 &&
             (l = hexval((unsigned char)s[i + 2])) >= 0) {
      o[k++] = (char)(h * 16 + l);
      i += 2;
    } else {
      o[k++] = s[i];
    }
  }
  o[k] = 0;
  *out_n = k;
  return o;
}

/* The pairs of a url-encoded form: '&' and ';' separate pairs, the first
 * '=' a name from its value. */
static int parse_form(dv_arena *a, const char *s, size_t n, pairs *out) {
  size_t i = 0;
  while (i < n) {
    size_t ks = i;
    while (i < n && s[i] != '=' && s[i] != '&' && s[i] != ';') i++;
    size_t ke = i, vs = i, ve = i;
    if (i < n && s[i] == '=') {
      vs = ++i;
      while (i < n && s[i] != '&' && s[i] != ';') i++;
      ve = i;
    }
    if (i < n) i++; /* the separator ('&' or ';'); parse_qs_key leaves it for the value, which eats it */
    size_t kn, vn;
    char *k = qs_decode(a, s + ks, ke - ks, &kn), *v = qs_decode(a, s + vs, ve - vs, &vn);
    if (!k || !v) return DV_ENOMEM;
    int rc = pairs_add(a, out, k, kn, v, vn);
    if (rc) return rc;
  }
  return 0;
}

/* ---- mochiweb_cookies:parse_cookie ------------------------------------------- */

static int ck_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static int ck_sep(int c) { return c < 32 || c == ' ' || c == '\t' || c == ';' || c == ',' || c == '"' || c == '='; }

static int parse_cookie(dv_arena *a, const char *s, size_t n, pairs *out) {
  size_t i = 0;
  while (i < n) {
    while (i < n && ck_space((unsigned char)s[i])) i++;
    size_t ts = i;
    while (i < n && !ck_sep((unsigned char)s[i])) i++;
    size_t te = i;
    while (i < n && ck_space((unsigned char)s[i])) i++;
    const char *v = "";
    size_t vn = 0;
    if (i < n && s[i] == '=') {
      i++;
      while (i < n && ck_space((unsigned char)s[i])) i++;
      if (i < n && s[i] == '"') { /* read_quoted: \x is x, ends at '"' or the end */
        char *q = arena_alloc(a, n - i + 1);
        if (!q) return DV_ENOMEM;
        i++;
        while (i < n && s[i] != '"') {
          if (s[i] == '\\' && i + 1 < n) i++;
          q[vn++] = s[i++];
        }
        if (i < n) i++; /* the closing quote */
        v = q;
      } else {
        size_t vs = i;
        while (i < n && !ck_sep((unsigned char)s[i])) i++;
        v = s + vs;
        vn = i - vs;
      }
    }
    while (i < n && s[i] != ';' && s[i] != ',') i++; /* skip_past_separator */
    if (i < n) i++;
    if (te > ts && s[ts] != '$') {
      int rc = pairs_add(a, out, s + ts, te - ts, v, vn);
      if (rc) return rc;
    }
  }
  return 0;
}

/* ---- the object ----------------------------------------------------------------- */

int jsreq_method_known(const char *m) {
  static const char *const known[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "COPY", "CONNECT", "PATCH"};
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (!strcmp(m, known[i])) return 1;
  return 0;
}

/* json_query_keys: these parameters are JSON in the object. */
static int json_query_key(const char *k, size_t n) {
  return (n == 3 && !memcmp(k, "key", 3)) || (n == 8 && !memcmp(k, "startkey", 8)) ||
         (n == 6 && !memcmp(k, "endkey", 6)) || (n == 10 && !memcmp(k, "descending", 10));
}

static void write_segs(json_w *w, const char *const *seg, const size_t *len, int n) {
  json_w_arr_begin(w);
  for (int i = 0; i < n; i++) json_w_str(w, seg[i], len[i]);
  json_w_arr_end(w);
}

/* query: like write_pairs (last value of a name, where it first came), the
 * json_query_keys parameters parsed. */
static int write_query(dv_arena *a, json_w *w, const jsreq_pair *p, size_t n) {
  int json_keys = 0;
  for (size_t i = 0; i < n; i++) json_keys |= json_query_key(p[i].k, p[i].kn);
  if (!json_keys) return write_pairs(a, w, p, n, 0);
  /* Rare: write the object as text, then rewrite the JSON values. */
  dv_buf tmp;
  buf_init(&tmp);
  json_w w2;
  json_w_init(&w2, &tmp);
  int rc = write_pairs(a, &w2, p, n, 0);
  if (!rc) rc = json_w_finish(&w2);
  json_val *o = NULL;
  json_opts jo = {.flags = JSON_COPY};
  if (!rc) rc = json_parse(a, tmp.p, tmp.len, &jo, &o, NULL);
  buf_free(&tmp);
  if (rc) return rc == DV_ENOMEM ? rc : DV_ENOMEM;
  for (size_t i = 0; i < o->len; i++) {
    json_member *m = &o->u.members[i];
    if (!json_query_key(m->key, m->klen)) continue;
    json_val *v;
    json_opts vo = {.flags = JSON_COPY, .max_depth = JSON_DEFAULT_DEPTH - 2}; /* the object and query hold it */
    rc = json_parse(a, m->val->u.s, m->val->len, &vo, &v, NULL);
    if (rc) return rc == DV_ENOMEM ? rc : DV_EJSON;
    m->val = v;
  }
  json_w_val(w, o);
  return 0;
}

int jsreq_build(const jsreq *q, dv_buf *out) {
  dv_arena a;
  arena_init(&a, 0);
  json_w w;
  json_w_init(&w, out);
  int rc = 0;
  int rewrite = (q->flags & JSREQ_REWRITE) != 0;
  pairs form = {0}, cookie = {0};

  json_w_obj_begin(&w);
  if (!rewrite) {
    json_w_keyz(&w, "info");
    if (q->info) json_w_raw(&w, q->info, q->info_len);
    else json_w_raw(&w, "{}", 2);
    json_w_keyz(&w, "uuid");
    if (q->uuid) json_w_strz(&w, q->uuid);
    else json_w_null(&w);
    json_w_keyz(&w, "id");
    if (q->id) json_w_str(&w, q->id, q->id_len);
    else json_w_null(&w);
  }
  const char *method = q->method ? q->method : "GET";
  json_w_keyz(&w, "method");
  if (jsreq_method_known(method)) {
    json_w_strz(&w, method);
  } else { /* a string in Erlang: a list of character codes */
    json_w_arr_begin(&w);
    for (const unsigned char *m = (const unsigned char *)method; *m; m++) json_w_int(&w, *m);
    json_w_arr_end(&w);
  }
  json_w_keyz(&w, "requested_path");
  write_segs(&w, q->req_path, q->req_path_len, q->n_req_path);
  json_w_keyz(&w, "path");
  if (q->path) write_segs(&w, q->path, q->path_len, q->n_path);
  else write_segs(&w, q->req_path, q->req_path_len, q->n_req_path);
  json_w_keyz(&w, "raw_path");
  json_w_str(&w, q->raw_path ? q->raw_path : "", q->raw_path ? q->raw_path_len : 0);
  json_w_keyz(&w, "query");
  rc = write_query(&a, &w, q->query, q->n_query);
  if (rc) goto done;
  json_w_keyz(&w, "headers");
  rc = write_pairs(&a, &w, q->headers, q->n_headers, 1);
  if (rc) goto done;
  json_w_keyz(&w, "body");
  if (q->body) json_w_str(&w, q->body, q->body_len);
  else json_w_strz(&w, "undefined");
  json_w_keyz(&w, "peer");
  json_w_strz(&w, q->peer ? q->peer : "127.0.0.1");
  /* form: POST and PUT with a url-encoded body; the primary value of
   * Content-Type (the first such header, before any ';'). */
  const char *ctype = NULL;
  size_t ctn = 0;
  for (size_t i = 0; i < q->n_headers && !ctype; i++)
    if (q->headers[i].kn == 12 && !strncasecmp(q->headers[i].k, "content-type", 12))
      ctype = q->headers[i].v, ctn = q->headers[i].vn;
  static const char fe[] = "application/x-www-form-urlencoded";
  if (!rewrite) {
    if (ctype && (!strcmp(method, "POST") || !strcmp(method, "PUT")) && ctn >= sizeof fe - 1 &&
        !strncasecmp(ctype, fe, sizeof fe - 1) && q->body) {
      rc = parse_form(&a, q->body, q->body_len, &form);
      if (rc) goto done;
    }
    json_w_keyz(&w, "form");
    rc = write_pairs(&a, &w, form.p, form.n, 0);
    if (rc) goto done;
  }
  for (size_t i = 0; i < q->n_headers; i++) /* mochiweb reads the first Cookie header */
    if (q->headers[i].kn == 6 && !strncasecmp(q->headers[i].k, "cookie", 6)) {
      rc = parse_cookie(&a, q->headers[i].v, q->headers[i].vn, &cookie);
      if (rc) goto done;
      break;
    }
  json_w_keyz(&w, "cookie");
  rc = write_pairs(&a, &w, cookie.p, cookie.n, 0);
  if (rc) goto done;
  json_w_keyz(&w, "userCtx");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "db");
  json_w_strz(&w, q->db ? q->db : "");
  json_w_keyz(&w, "name");
  if (q->user) json_w_strz(&w, q->user);
  else json_w_null(&w);
  json_w_keyz(&w, "roles");
  json_w_arr_begin(&w);
  for (size_t i = 0; i < q->n_roles; i++) json_w_strz(&w, q->roles[i]);
  json_w_arr_end(&w);
  json_w_obj_end(&w);
  json_w_keyz(&w, "secObj");
  if (q->sec) json_w_raw(&w, q->sec, q->sec_len);
  else json_w_raw(&w, "{}", 2);
  json_w_obj_end(&w);
  rc = json_w_finish(&w);
done:
  arena_free(&a);
  return rc;
}
