/* fuzz_jsreq.c — libFuzzer target for CouchDB's request object builder
 * (src/index/jsreq.h), with its Cookie and url-encoded form parsers.
 *
 * The input is lines; the first byte of each says what the rest is:
 *   m METHOD    q NAME=VALUE (a query parameter)    h NAME:VALUE (a header)
 *   p SEGMENT   b BODY (the rest of the input, newlines included)
 *   i DOCID     r (the rewrite variant)
 * The target checks:
 *  - jsreq_build succeeds, or fails with DV_EJSON only when a key,
 *    startkey, endkey or descending parameter is there (never a crash,
 *    never DV_ENOMEM with this much memory);
 *  - on success the text is one JSON object whose members are exactly
 *    CouchDB's, in its order (without info, uuid, id and form for a
 *    rewrite), and the builder is deterministic (a second build gives the
 *    same bytes);
 *  - query holds each parameter name once, with its last value (a string,
 *    or the JSON of the four json_query_keys ones); headers hold each name
 *    (without case) once; cookie and form are objects of strings;
 *  - method is the method as a string, or its character codes.
 * Any failed check aborts, which libFuzzer reports as a crash.
 *
 * Build: make fuzzers. Seeds: test/fuzz/seeds/fuzz_jsreq. The entry point
 * is weak, like the other targets'.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "index/jsreq.h"
#include "json/json.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/err.h"

#define CHECK(c)                                                                  \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "fuzz_jsreq: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                    \
    }                                                                             \
  } while (0)

#define MAXN 256

static int is_json_key(const char *k, size_t n) {
  return (n == 3 && !memcmp(k, "key", 3)) || (n == 8 && !memcmp(k, "startkey", 8)) ||
         (n == 6 && !memcmp(k, "endkey", 6)) || (n == 10 && !memcmp(k, "descending", 10));
}

/* Names equal without ASCII case (NUL bytes included). */
static int same_nocase(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
    if (x >= 'A' && x <= 'Z') x = (unsigned char)(x + 32);
    if (y >= 'A' && y <= 'Z') y = (unsigned char)(y + 32);
    if (x != y) return 0;
  }
  return 1;
}

static int all_strings(const json_val *o) {
  if (!o || o->type != JSON_OBJECT) return 0;
  for (size_t i = 0; i < o->len; i++)
    if (o->u.members[i].val->type != JSON_STRING) return 0;
  return 1;
}

__attribute__((weak)) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static jsreq_pair qp[MAXN], hp[MAXN];
  static const char *seg[MAXN];
  static size_t segl[MAXN];
  char *in = malloc(size + 1);
  if (!in) return 0;
  memcpy(in, data, size);
  in[size] = 0;
  jsreq q;
  memset(&q, 0, sizeof q);
  q.method = "GET";
  q.uuid = "0123456789abcdef0123456789abcdef";
  q.db = "db";
  q.info = "{\"db_name\":\"db\"}";
  q.info_len = strlen(q.info);
  q.raw_path = "/db/_changes";
  q.raw_path_len = strlen(q.raw_path);
  static const char *roles[] = {"_admin", "r"};
  q.roles = roles;
  q.n_roles = 2;
  size_t nq = 0, nh = 0;
  int ns = 0, json_keys = 0;
  char *p = in, *end = in + size;
  while (p < end) {
    char kind = *p++;
    if (kind == 'b') {
      q.body = p;
      q.body_len = (size_t)(end - p);
      break;
    }
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *le = nl ? nl : end;
    *le = 0;
    size_t n = (size_t)(le - p);
    if (kind == 'm' && n) {
      q.method = p;
    } else if (kind == 'q' && nq < MAXN) {
      char *eq = memchr(p, '=', n);
      size_t kn = eq ? (size_t)(eq - p) : n;
      qp[nq++] = (jsreq_pair){p, kn, eq ? eq + 1 : "", eq ? n - kn - 1 : 0};
      json_keys |= is_json_key(p, kn);
    } else if (kind == 'h' && nh < MAXN) {
      char *col = memchr(p, ':', n);
      size_t kn = col ? (size_t)(col - p) : n;
      hp[nh++] = (jsreq_pair){p, kn, col ? col + 1 : "", col ? n - kn - 1 : 0};
    } else if (kind == 'p' && ns < MAXN) {
      seg[ns] = p;
      segl[ns++] = n;
    } else if (kind == 'i') {
      q.id = p;
      q.id_len = n;
    } else if (kind == 'r') {
      q.flags |= JSREQ_REWRITE;
    } else if (kind == 'u') {
      q.user = p;
    }
    p = le + 1;
  }
  q.query = qp;
  q.n_query = nq;
  q.headers = hp;
  q.n_headers = nh;
  q.req_path = seg;
  q.req_path_len = segl;
  q.n_req_path = ns;

  dv_buf out, again;
  buf_init(&out);
  buf_init(&again);
  int rc = jsreq_build(&q, &out);
  CHECK(rc == 0 || (rc == DV_EJSON && json_keys));
  int rc2 = jsreq_build(&q, &again);
  CHECK(rc2 == rc);
  if (!rc) {
    CHECK(out.len == again.len && !memcmp(out.p, again.p, out.len));
    dv_arena a;
    arena_init(&a, 0);
    json_val *v;
    CHECK(json_parse(&a, out.p, out.len, NULL, &v, NULL) == 0);
    CHECK(v->type == JSON_OBJECT);
    static const char *const full[] = {"info", "uuid", "id", "method", "requested_path", "path", "raw_path",
                                       "query", "headers", "body", "peer", "form", "cookie", "userCtx", "secObj"};
    static const char *const rw[] = {"method", "requested_path", "path", "raw_path", "query", "headers",
                                     "body", "peer", "cookie", "userCtx", "secObj"};
    int rewrite = (q.flags & JSREQ_REWRITE) != 0;
    const char *const *want = rewrite ? rw : full;
    size_t nwant = rewrite ? sizeof rw / sizeof *rw : sizeof full / sizeof *full;
    CHECK(v->len == nwant);
    for (size_t i = 0; i < nwant; i++)
      CHECK(v->u.members[i].klen == strlen(want[i]) && !memcmp(v->u.members[i].key, want[i], v->u.members[i].klen));
    const json_val *qo = json_obj_getz(v, "query");
    CHECK(qo && qo->type == JSON_OBJECT);
    for (size_t i = 0; i < nq; i++) { /* the last value of each name */
      size_t last = i;
      for (size_t k = i + 1; k < nq; k++)
        if (qp[k].kn == qp[i].kn && !memcmp(qp[k].k, qp[i].k, qp[i].kn)) last = k;
      if (json_utf8_check(qp[i].k, qp[i].kn, NULL)) continue; /* written with U+FFFD */
      const json_val *qv = json_obj_get(qo, qp[i].k, qp[i].kn);
      CHECK(qv);
      if (!is_json_key(qp[i].k, qp[i].kn) && json_utf8_check(qp[last].v, qp[last].vn, NULL) == 0)
        CHECK(qv->type == JSON_STRING && qv->len == qp[last].vn && !memcmp(qv->u.s, qp[last].v, qv->len));
    }
    const json_val *ho = json_obj_getz(v, "headers");
    CHECK(all_strings(ho));
    int names_ok = 1; /* bad UTF-8 becomes U+FFFD: distinct names may then meet */
    for (size_t i = 0; i < nh; i++) names_ok &= json_utf8_check(hp[i].k, hp[i].kn, NULL) == 0;
    for (size_t i = 0; names_ok && i < ho->len; i++)
      for (size_t k = i + 1; k < ho->len; k++)
        CHECK(ho->u.members[i].klen != ho->u.members[k].klen ||
              !same_nocase(ho->u.members[i].key, ho->u.members[k].key, ho->u.members[i].klen));
    CHECK(all_strings(json_obj_getz(v, "cookie")));
    if (!rewrite) CHECK(all_strings(json_obj_getz(v, "form")));
    const json_val *m = json_obj_getz(v, "method");
    if (jsreq_method_known(q.method)) {
      CHECK(m->type == JSON_STRING && m->len == strlen(q.method) && !memcmp(m->u.s, q.method, m->len));
    } else {
      CHECK(m->type == JSON_ARRAY && m->len == strlen(q.method));
    }
    const json_val *body = json_obj_getz(v, "body");
    CHECK(body && body->type == JSON_STRING);
    if (!q.body) CHECK(body->len == 9 && !memcmp(body->u.s, "undefined", 9));
    const json_val *uc = json_obj_getz(v, "userCtx");
    CHECK(uc && json_obj_getz(uc, "roles") && json_obj_getz(uc, "roles")->len == 2);
    arena_free(&a);
  }
  buf_free(&out);
  buf_free(&again);
  free(in);
  return 0;
}
