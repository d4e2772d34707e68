/* doc.c — the document endpoints of the CouchDB API: GET/HEAD, PUT,
 * DELETE, COPY and POST on /{db}/{docid}, /{db}/_design/{name} and
 * /{db}/_local/{name}, and POST /{db} (a new document, called by hapi_db).
 *
 * Each handler follows its clause of db_doc_req in CouchDB's chttpd_db.erl,
 * including the order of its checks: the query string, then the document
 * id, then the body, then the revision taken from the body, ?rev= and
 * If-Match (couch_doc_from_req). Where CouchDB throws from
 * couch_doc:transfer_fields or validate_docid, this file writes the same
 * reason text rather than the store's generic one, so a client sees
 * "Bad special document member: _foo" and not just "doc_validation".
 *
 * _local documents have no revision tree: they go to store_local_get/put,
 * their revs are "0-N", they never show in _changes and take no
 * attachments.
 *
 * Attachments at the document level go through api/docatt.c: inline `data`,
 * stubs and "follows" in written documents, multipart/related PUT bodies
 * (the CouchDB replicator's form; streamed through a body sink, so an
 * attachment of any size passes in bounded memory: hapi_doc_mp_begin),
 * attachments=true / atts_since /
 * att_encoding_info on reads, a multipart/related answer for a client that
 * asks for one, and open_revs as multipart/mixed.
 *
 * Not here: the standalone attachment endpoints /{db}/{docid}/{att…} and
 * the multipart/form-data POST (api/att.c), _bulk_docs (api/bulk.c).
 */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "http/hparse.h"
#include "api/api.h"
#include "auth/users.h"
#include "util/alloc.h"
#include "http/url.h"

#define DOC_ALLOW "DELETE,GET,HEAD,POST,PUT,COPY" /* chttpd_db's 405 list */
#define ATT_ALLOW "DELETE,GET,HEAD,PUT"           /* db_attachment_req's */

/* ---- small tools ---------------------------------------------------------- */

static int has_prefix(const char *s, size_t n, const char *p) {
  size_t k = strlen(p);
  return n >= k && !memcmp(s, p, k);
}

static int is_local(const char *id, size_t n) { return n > 7 && has_prefix(id, n, "_local/"); }

static int key_is(const json_member *m, const char *k) {
  size_t n = strlen(k);
  return m->klen == n && !memcmp(m->key, k, n);
}

/* 400 bad_request "Invalid rev format" (couch_doc:parse_rev); returns -1. */
static int bad_rev(hreq *r) {
  hres_err(r, DV_EBAD_REV);
  return -1;
}

/* A NUL-terminated arena copy of a revision's text; NULL when out of
 * memory. */
static const char *rev_text(hreq *r, const store_rev *rv) {
  dv_buf b;
  buf_init(&b);
  store_rev_format(rv, &b);
  const char *s = buf_error(&b) ? NULL : arena_strndup(&r->a, (const char *)b.p, b.len);
  buf_free(&b);
  return s;
}

/* ---- revisions as CouchDB parses them ------------------------------------- */

/* A revision as couch_doc:parse_rev reads it: the integer before the first
 * '-' and whatever follows. Kept as text, so both a _local doc's "0-N" and
 * a replicated rev id fit; the store's stricter parser runs later, where a
 * rev CouchDB would merely not find is then answered as not found. */
typedef struct trev {
  const char *s;   /* the whole text, "POS-ID" (not NUL-terminated) */
  size_t n;        /* its length */
  int64_t pos;     /* POS */
  const char *h;   /* ID: the text after the first '-' */
  size_t hlen;     /* its length */
} trev;

static int trev_parse(const char *s, size_t n, trev *out) {
  size_t i = 0;
  int64_t pos = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') {
    if (pos > (INT64_MAX - 9) / 10) return -1;
    pos = pos * 10 + (s[i] - '0');
    i++;
  }
  if (i == 0 || i >= n || s[i] != '-') return -1;
  out->s = s;
  out->n = n;
  out->pos = pos;
  out->h = s + i + 1;
  out->hlen = n - i - 1;
  return 0;
}

static int is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return 0;
  }
  return 1;
}

/* CouchDB compares parsed revs: a 32-hex-digit id is a 128-bit number, so
 * its case does not matter; any other id compares as bytes. */
static int trev_eq(const trev *a, const trev *b) {
  if (a->pos != b->pos || a->hlen != b->hlen) return 0;
  if (a->hlen == 32 && is_hex(a->h, 32) && is_hex(b->h, 32)) {
    for (size_t i = 0; i < 32; i++) {
      char x = a->h[i], y = b->h[i];
      if (x >= 'A' && x <= 'F') x = (char)(x - 'A' + 'a');
      if (y >= 'A' && y <= 'F') y = (char)(y - 'A' + 'a');
      if (x != y) return 0;
    }
    return 1;
  }
  return !memcmp(a->h, b->h, a->hlen);
}

/* The revision of a write, as couch_doc_from_req and extract_header_rev
 * pick it: the body's rev (which ?rev= and If-Match must then equal), else
 * ?rev= (qs, may be NULL), else If-Match (quotes stripped). *have is 0 when
 * none was given. Writes the error and returns -1 on a bad or mismatched
 * rev. */
static int pick_rev(hreq *r, const trev *body, const char *qs, size_t qn, trev *out, int *have) {
  trev q, h;
  int hq = 0, hh = 0;
  if (qs) {
    if (trev_parse(qs, qn, &q)) return bad_rev(r);
    hq = 1;
  }
  const char *im = hreq_hdr(r, "If-Match");
  if (im) {
    size_t n = strlen(im);
    while (n && *im == '"') im++, n--;
    while (n && im[n - 1] == '"') n--;
    if (trev_parse(im, n, &h)) return bad_rev(r);
    hh = 1;
  }
  if (body) {
    if (hq && !trev_eq(&q, body)) {
      hres_errw(r, DV_EBAD_REQUEST, "Document rev from request body and query string have different values");
      return -1;
    }
    if (hh && !trev_eq(&h, body)) {
      hres_errw(r, DV_EBAD_REQUEST, "Document rev and etag have different values");
      return -1;
    }
    *out = *body;
    *have = 1;
    return 0;
  }
  if (hq && hh && !trev_eq(&q, &h)) {
    hres_errw(r, DV_EBAD_REQUEST, "Document rev and etag have different values");
    return -1;
  }
  if (hq) *out = q;
  else if (hh) *out = h;
  *have = hq || hh;
  return 0;
}

/* The N of a _local doc's "0-N" (none given: 0). Anything else is CouchDB's
 * "Invalid rev format" (increment_local_doc_revs). */
static int local_rev(hreq *r, const trev *rev, int have, int64_t *out) {
  *out = 0;
  if (!have) return 0;
  if (rev->pos != 0 || rev->hlen == 0 || rev->hlen > 18) return bad_rev(r);
  int64_t v = 0;
  for (size_t i = 0; i < rev->hlen; i++) {
    if (rev->h[i] < '0' || rev->h[i] > '9') return bad_rev(r);
    v = v * 10 + (rev->h[i] - '0');
  }
  *out = v;
  return 0;
}

/* ---- document ids and bodies ----------------------------------------------- */

static int doc_validation(hreq *r, const char *why) {
  hres_errw(r, DV_EDOC_FIELD, why);
  return -1;
}

static int bad_member(hreq *r, const json_member *m) {
  dv_buf b;
  buf_init(&b);
  buf_puts(&b, "Bad special document member: ");
  buf_append(&b, m->key, m->klen);
  if (buf_error(&b)) hres_err(r, DV_ENOMEM);
  else doc_validation(r, (const char *)b.p);
  buf_free(&b);
  return -1;
}

/* _revisions as transfer_fields checks it; its newest rev into *rev. */
static int check_revisions(hreq *r, const json_member *m, trev *rev, int *have, int *revs_set) {
  const json_val *v = m->val;
  if (v->type != JSON_OBJECT) return bad_member(r, m);
  const json_val *start = json_obj_getz(v, "start"), *ids = json_obj_getz(v, "ids");
  int64_t st;
  if (!start || start->type != JSON_NUMBER || start->num > JSON_NUM_BIGINT ||
      json_num_int64(start->u.s, start->len, &st))
    return doc_validation(r, "_revisions.start isn't an integer.");
  if (!ids || ids->type != JSON_ARRAY) return doc_validation(r, "_revisions.ids isn't a array.");
  for (size_t i = 0; i < ids->len; i++) {
    const json_val *h = ids->u.items[i];
    if (h->type != JSON_STRING) return doc_validation(r, "RevId isn't a string");
    if (h->len == 32 && !is_hex(h->u.s, 32)) return doc_validation(r, "RevId isn't a valid hexadecimal");
  }
  *revs_set = st != 0 || ids->len;
  *have = 0;
  if (ids->len) {
    /* the text "START-ID" is rebuilt so the rev can be compared and sent */
    const json_val *h = ids->u.items[0];
    char num[24];
    int k = snprintf(num, sizeof num, "%lld-", (long long)st);
    char *s = arena_alloc(&r->a, (size_t)k + h->len + 1);
    if (!s) {
      hres_err(r, DV_ENOMEM);
      return -1;
    }
    memcpy(s, num, (size_t)k);
    memcpy(s + k, h->u.s, h->len);
    s[(size_t)k + h->len] = 0;
    if (trev_parse(s, (size_t)k + h->len, rev)) return bad_rev(r); /* a negative start */
    *have = 1;
  }
  return 0;
}

/* Walk a document's `_` members in order, as couch_doc:transfer_fields
 * does, and write the first error it would throw (returning -1). On
 * success *rev and *have hold the revision the body names (_rev, or the newest
 * of _revisions). doc must be an object. */
static int doc_fields(hreq *r, const json_val *doc, trev *rev, int *have) {
  int revs_set = 0; /* CouchDB's #doc.revs is no longer {0, []} */
  *have = 0;
  for (size_t i = 0; i < doc->len; i++) {
    const json_member *m = &doc->u.members[i];
    switch (store_doc_member(m->key, m->klen)) {
    case STORE_MEMBER_ID:
      if (m->val->type != JSON_STRING) {
        hres_errw(r, DV_EBAD_DOCID, "Document id must be a string");
        return -1;
      }
      if (api_docid_ok(r, m->val->u.s, m->val->len, 1)) return -1;
      break;
    case STORE_MEMBER_REV:
      if (revs_set) break; /* _revisions came first and wins */
      if (m->val->type != JSON_STRING || trev_parse(m->val->u.s, m->val->len, rev)) return bad_rev(r);
      *have = revs_set = 1;
      break;
    case STORE_MEMBER_REVISIONS:
      if (check_revisions(r, m, rev, have, &revs_set)) return -1;
      break;
    case STORE_MEMBER_DELETED:
      if (m->val->type != JSON_BOOL) return bad_member(r, m);
      break;
    case STORE_MEMBER_ATTACHMENTS:
      if (m->val->type != JSON_OBJECT) return bad_member(r, m);
      break; /* store_edit_from_json reads them; api/docatt.c readies their content */
    case STORE_MEMBER_USER:
    case STORE_MEMBER_IGNORED:
    case STORE_MEMBER_KEPT:
      break;
    case STORE_MEMBER_BAD:
      return bad_member(r, m);
    }
  }
  return 0;
}

/* In CouchDB a document's _revisions always names its rev, whatever _rev
 * says (transfer_fields); the store would take _rev, so drop it then. */
static void prefer_revisions(json_val *doc) {
  const json_val *rv = json_obj_getz(doc, "_revisions");
  const json_val *ids = rv ? json_obj_getz(rv, "ids") : NULL;
  if (ids && ids->type == JSON_ARRAY && ids->len) json_obj_del(doc, "_rev", 4);
}

/* The request body as a document object: broken JSON is CouchDB's
 * "invalid UTF-8 JSON", anything but an object "Document must be a JSON
 * object" (couch_doc:from_json_obj). */
static int doc_body(hreq *r, json_val **out) {
  if (hreq_json_body(r, 0, out)) return -1;
  if ((*out)->type != JSON_OBJECT) {
    hres_errw(r, DV_EBAD_REQUEST, "Document must be a JSON object");
    return -1;
  }
  return 0;
}

/* An error of a write: the store's code, except that a document over
 * max_document_size names the document, as CouchDB's 413 does, and an
 * attachment error carries CouchDB's reason when there is one (why). */
static void write_err_why(hreq *r, int rc, const char *id, size_t n, const char *why) {
  if (rc == DV_EDOC_TOO_LARGE) {
    const char *s = arena_strndup(&r->a, id, n);
    hres_errw(r, DV_EDOC_TOO_LARGE, s ? s : "");
    return;
  }
  hres_errw(r, rc, why);
}

static void write_err(hreq *r, int rc, const char *id, size_t n) { write_err_why(r, rc, id, n, NULL); }

/* An error of a read: a document that is not there (or whose id the store
 * would never hold) is "missing", a deleted winner "deleted". */
static void read_err(hreq *r, int rc) {
  hres_err(r, rc == DV_EBAD_DOCID ? DV_ENOT_FOUND : rc); /* a bad id names no document */
}

/* ---- response headers ------------------------------------------------------ */

/* Answer a document read: 200 with the ETag, or 304 when the client holds
 * it. As CouchDB, no ETag goes with a document that carries meta fields
 * (_revs_info, _conflicts, _deleted_conflicts, _local_seq). With
 * attachments to follow (n > 0), the body is multipart/related
 * (chttpd_db:send_doc_efficiently). */
static void send_doc_atts(hreq *r, const json_val *doc, const store_att *send, size_t n) {
  const json_val *rv = json_obj_getz(doc, "_rev");
  int meta = json_obj_getz(doc, "_revs_info") || json_obj_getz(doc, "_conflicts") ||
             json_obj_getz(doc, "_deleted_conflicts") || json_obj_getz(doc, "_local_seq");
  if (!meta && rv && rv->type == JSON_STRING) {
    char *rev = arena_strndup(&r->a, rv->u.s, rv->len);
    dv_buf b;
    buf_init(&b);
    buf_printf(&b, "\"%s\"", rev ? rev : "");
    int hit = !buf_error(&b) && hreq_etag_match(r, (const char *)b.p);
    buf_free(&b);
    if (rev) hres_etag(r, rev);
    if (hit) {
      hres_raw(r, 304, "application/json", "", 0);
      return;
    }
  }
  if (!n) {
    hres_json(r, 200, doc);
    return;
  }
  hatt_out *o;
  char b[33];
  hatt_boundary(b);
  int rc = hatt_out_new(r, &o);
  if (!rc && (rc = hatt_out_doc(o, b, doc, send, n))) hatt_out_free(o);
  const char *ct = NULL;
  dv_buf t;
  buf_init(&t);
  if (!rc) {
    buf_printf(&t, "multipart/related; boundary=\"%s\"", b);
    ct = buf_error(&t) ? NULL : arena_strndup(&r->a, (const char *)t.p, t.len);
    if (!ct) {
      hatt_out_free(o);
      rc = DV_ENOMEM;
    }
  }
  buf_free(&t);
  if (rc) read_err(r, rc);
  else hatt_out_send(r, o, 200, ct);
}

static void send_doc(hreq *r, const json_val *doc) { send_doc_atts(r, doc, NULL, 0); }

/* ---- query parameters ---------------------------------------------------- */

/* The parameters of CouchDB's parse_doc_query that divan acts on. Boolean
 * parameters take "true" or "false" (anything else is query_parse_error,
 * where CouchDB would silently ignore it). */
typedef struct docq {
  int flags;          /* STORE_* extras for a document read */
  int latest;         /* latest=true */
  int deleted;        /* deleted=true: a deleted winner is answered too */
  int new_edits;      /* new_edits (default true) */
  const char *rev;    /* rev=, or NULL */
  size_t rev_len;     /* its length */
  int open_revs;      /* 0: none, 1: all, 2: the list in revs */
  json_val *revs;     /* open_revs=[…]: an array of rev strings */
  int atts;           /* attachments=true */
  json_val *atts_since; /* atts_since=[…] (implies attachments), or NULL */
} docq;

/* A JSON list of revs (open_revs, atts_since): broken JSON is "invalid
 * UTF-8 JSON", a non-array "Invalid list of revisions", a bad element
 * "Invalid rev format" (couch_doc:parse_revs). */
static int rev_list(hreq *r, const char *v, size_t n, json_val **out) {
  json_val *j;
  if (hreq_parse_json(r, v, n, &j)) return -1;
  if (j->type != JSON_ARRAY) {
    hres_errw(r, DV_EBAD_REQUEST, "Invalid list of revisions");
    return -1;
  }
  for (size_t i = 0; i < j->len; i++) {
    trev t;
    const json_val *e = j->u.items[i];
    if (e->type != JSON_STRING || trev_parse(e->u.s, e->len, &t)) return bad_rev(r);
  }
  *out = j;
  return 0;
}

static int parse_docq(hreq *r, docq *q) {
  static const struct {
    const char *name; /* parameter */
    int flag;         /* STORE_* it sets */
  } fl[] = {
      {"revs", STORE_REVS},           {"revs_info", STORE_REVS_INFO},
      {"conflicts", STORE_CONFLICTS}, {"deleted_conflicts", STORE_DELETED_CONFLICTS},
      {"local_seq", STORE_LOCAL_SEQ}, {"meta", STORE_META},
  };
  memset(q, 0, sizeof *q);
  q->new_edits = 1;
  for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
    int on = 0;
    if (hq_bool(r, fl[i].name, &on)) return -1;
    if (on) q->flags |= fl[i].flag;
  }
  int info = 0;
  if (hq_bool(r, "attachments", &q->atts) || hq_bool(r, "att_encoding_info", &info)) return -1;
  if (info) q->flags |= STORE_ATT_INFO;
  if (hq_bool(r, "latest", &q->latest) || hq_bool(r, "deleted", &q->deleted) ||
      hq_bool(r, "new_edits", &q->new_edits))
    return -1;
  q->rev = hq_get(r, "rev", &q->rev_len);
  trev t;
  if (q->rev && trev_parse(q->rev, q->rev_len, &t)) return bad_rev(r);
  size_t n;
  const char *v = hq_get(r, "open_revs", &n);
  if (v && !strcmp(v, "all")) {
    q->open_revs = 1;
  } else if (v) {
    if (rev_list(r, v, n, &q->revs)) return -1;
    q->open_revs = q->revs->len ? 2 : 0; /* open_revs=[] is a plain read in CouchDB */
  }
  v = hq_get(r, "atts_since", &n);
  if (v && rev_list(r, v, n, &q->atts_since)) return -1;
  return 0;
}

/* batch=ok */
static int batch_ok(hreq *r) {
  const char *b = hq_get(r, "batch", NULL);
  return b && !strcmp(b, "ok");
}

/* ---- reads ----------------------------------------------------------------- */

/* open_revs as multipart/mixed (chttpd_db:send_docs_multipart): one part
 * per result, a document with attachments to send as a nested
 * multipart/related, the others application/json. Attachments always
 * follow (atts_since, which CouchDB 3 ignores here, spares the ones the
 * client has). */
static void open_revs_multipart(hreq *r, const docq *q, json_val *res) {
  hatt_out *o;
  char outer[33], inner[33];
  hatt_boundary(outer);
  hatt_boundary(inner);
  int rc = hatt_out_new(r, &o);
  if (rc) {
    read_err(r, rc);
    return;
  }
  dv_buf b;
  buf_init(&b);
  buf_printf(&b, "--%s", outer);
  hatt_ro ro = {.data = 1, .follows = 1, .since = q->atts_since};
  for (size_t i = 0; !rc && i < res->len; i++) {
    json_val *doc = json_obj_getz(res->u.items[i], "ok");
    store_att *send = NULL;
    size_t ns = 0;
    if (doc) rc = hatt_doc(r->app->db, &r->a, doc, &ro, &send, &ns);
    if (rc) break;
    if (!doc) buf_puts(&b, "\r\nContent-Type: application/json; error=\"true\"\r\n\r\n");
    else if (ns) buf_printf(&b, "\r\nContent-Type: multipart/related; boundary=\"%s\"\r\n\r\n", inner);
    else buf_puts(&b, "\r\nContent-Type: application/json\r\n\r\n");
    if (!doc && json_write(&b, res->u.items[i])) rc = DV_ENOMEM;
    if (!rc && buf_error(&b)) rc = DV_ENOMEM;
    if (!rc) rc = hatt_out_lit(o, b.p, b.len);
    buf_reset(&b);
    if (!rc && doc) rc = hatt_out_doc(o, inner, doc, send, ns);
    buf_printf(&b, "\r\n--%s", outer);
  }
  buf_puts(&b, "--");
  if (!rc && buf_error(&b)) rc = DV_ENOMEM;
  if (!rc) rc = hatt_out_lit(o, b.p, b.len);
  buf_reset(&b);
  buf_printf(&b, "multipart/mixed; boundary=\"%s\"", outer);
  const char *ct = !rc && !buf_error(&b) ? arena_strndup(&r->a, (const char *)b.p, b.len) : NULL;
  buf_free(&b);
  if (!rc && !ct) rc = DV_ENOMEM;
  if (rc) {
    hatt_out_free(o);
    read_err(r, rc);
    return;
  }
  hatt_out_send(r, o, 200, ct);
}

/* GET with open_revs: CouchDB's JSON array of {"ok":doc} / {"missing":rev}
 * (multipart/mixed for a client that asks for it). A rev the store's
 * parser refuses cannot exist, so it is missing. */
static void doc_open_revs(hreq *r, const docq *q) {
  store_rev *revs = NULL;
  size_t n = 0;
  json_val *bad = NULL;
  int rc = 0;
  if (q->open_revs == 2) {
    revs = arena_alloc(&r->a, q->revs->len * sizeof *revs);
    bad = json_new_array(&r->a);
    if (!revs || !bad) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    for (size_t i = 0; i < q->revs->len; i++) {
      const json_val *e = q->revs->u.items[i];
      if (!store_rev_parse(e->u.s, e->len, &r->a, &revs[n])) {
        n++;
        continue;
      }
      json_val *o = json_new_object(&r->a);
      if (json_obj_setz(&r->a, o, "missing", json_new_string(&r->a, e->u.s, e->len)) ||
          json_arr_push(&r->a, bad, o)) {
        hres_err(r, DV_ENOMEM);
        return;
      }
    }
  }
  int mp = r->method == HM_GET && hparse_accepts_any(hreq_hdr(r, "Accept"), "multipart/mixed");
  int flags = (q->flags & (STORE_REVS | STORE_ATT_INFO)) | (q->latest ? STORE_LATEST : 0) | (mp ? STORE_ATT_INFO : 0);
  json_val *out = NULL;
  if (q->open_revs == 1 || n) rc = store_doc_open_revs(r->app->db, r->app->docid, r->app->docid_len, revs, n, flags, &r->a, &out);
  else out = json_new_array(&r->a);
  if (!rc && !out) rc = DV_ENOMEM;
  for (size_t i = 0; !rc && bad && i < bad->len; i++) rc = json_arr_push(&r->a, out, bad->u.items[i]);
  if (rc) {
    read_err(r, rc);
    return;
  }
  if (mp) {
    open_revs_multipart(r, q, out);
    return;
  }
  hatt_ro ro = {.data = q->atts || q->atts_since, .since = q->atts_since};
  for (size_t i = 0; !rc && ro.data && i < out->len; i++)
    rc = hatt_doc(r->app->db, &r->a, json_obj_getz(out->u.items[i], "ok"), &ro, NULL, NULL);
  if (rc) {
    read_err(r, rc);
    return;
  }
  hres_json(r, 200, out);
}

static void doc_get(hreq *r, const docq *q) {
  if (q->open_revs) {
    doc_open_revs(r, q);
    return;
  }
  store_rev rv, *rp = NULL;
  if (q->rev && !q->latest) { /* latest=true opens the winner whatever rev says */
    if (store_rev_parse(q->rev, q->rev_len, &r->a, &rv)) {
      read_err(r, DV_ENOT_FOUND);
      return;
    }
    rp = &rv;
  }
  /* attachments=true (or atts_since): content inline, or following the
   * document in a multipart/related answer when the client asks for one
   * (which always shows encoding info, as CouchDB's) */
  int with_atts = q->atts || q->atts_since;
  int mp = with_atts && r->method == HM_GET && hatt_accepts(r, "multipart/related");
  int flags = q->flags | (mp ? STORE_ATT_INFO : 0);
  json_val *doc = NULL;
  int tries = 0;
again:;
  int rc = store_doc_get(r->app->db, r->app->docid, r->app->docid_len, rp, flags, &r->a, &doc);
  if (rc == DV_EDELETED && q->deleted) {
    store_leaf *lv;
    size_t nl;
    rc = store_doc_leaves(r->app->db, r->app->docid, r->app->docid_len, &r->a, &lv, &nl);
    if (!rc) rc = store_doc_get(r->app->db, r->app->docid, r->app->docid_len, &lv[0].rev, flags, &r->a, &doc);
  }
  if (rc) {
    read_err(r, rc);
    return;
  }
  if (api_is_users_db(r) && !r->app->is_admin && !r->app->db_admin) {
    users_ctx u = {.name = r->app->user, .is_admin = 0};
    char *pub = config_get(api_config(r), "chttpd_auth", "public_fields");
    const char *why;
    json_val *out;
    rc = users_check_read(&r->a, &u, r->app->docid, r->app->docid_len, doc, pub, &out, &why);
    dv_free(pub);
    if (rc) {
      hres_errw(r, rc, why);
      return;
    }
    doc = out;
  }
  store_att *send = NULL;
  size_t ns = 0;
  if (with_atts) {
    hatt_ro ro = {.data = 1, .follows = mp, .since = q->atts_since};
    rc = hatt_doc(r->app->db, &r->a, doc, &ro, &send, &ns);
    if (rc == DV_EATT_GONE && !rp && ++tries < 3) goto again; /* the winner moved on meanwhile */
    if (rc) {
      read_err(r, rc);
      return;
    }
  }
  send_doc_atts(r, doc, send, ns);
}

/* A _local doc read. Local docs have no revision tree, so open_revs finds
 * nothing (as CouchDB); ?rev= must name the current rev. */
static void local_get(hreq *r, const docq *q) {
  if (q->open_revs == 1) {
    read_err(r, DV_ENOT_FOUND);
    return;
  }
  if (q->open_revs == 2) {
    json_val *out = json_new_array(&r->a);
    int rc = out ? 0 : DV_ENOMEM;
    for (size_t i = 0; !rc && i < q->revs->len; i++) {
      const json_val *e = q->revs->u.items[i];
      json_val *o = json_new_object(&r->a);
      rc = json_obj_setz(&r->a, o, "missing", json_new_string(&r->a, e->u.s, e->len));
      if (!rc) rc = json_arr_push(&r->a, out, o);
    }
    if (rc) hres_err(r, rc);
    else hres_json(r, 200, out);
    return;
  }
  json_val *doc = NULL;
  int rc = store_local_get(r->app->db, r->app->docid, r->app->docid_len, &r->a, &doc);
  if (rc) {
    read_err(r, rc);
    return;
  }
  const json_val *cur = json_obj_getz(doc, "_rev");
  if (q->rev && !q->latest && (!cur || cur->len != q->rev_len || memcmp(cur->u.s, q->rev, q->rev_len))) {
    read_err(r, DV_ENOT_FOUND);
    return;
  }
  if ((q->flags & STORE_REVS) && cur && cur->len > 2) {
    /* {"start":0,"ids":["N"]}, what couch_doc:to_json_obj makes of {0, [N]} */
    json_val *rv = json_new_object(&r->a), *ids = json_new_array(&r->a);
    if (json_obj_setz(&r->a, rv, "start", json_new_int(&r->a, 0)) ||
        json_arr_push(&r->a, ids, json_new_string(&r->a, cur->u.s + 2, cur->len - 2)) ||
        json_obj_setz(&r->a, rv, "ids", ids) || json_obj_setz(&r->a, doc, "_revisions", rv)) {
      hres_err(r, DV_ENOMEM);
      return;
    }
  }
  send_doc(r, doc);
}

/* ---- writes ------------------------------------------------------------------ */

/* How a write answers success: its status for a new revision and for a
 * deletion (PUT and DELETE say 200 for a deletion, POST and COPY 201), and
 * which headers go with it. */
typedef struct wans {
  int created;   /* status of a new live revision */
  int deleted;   /* status of a deletion */
  int etag;      /* send ETag */
  int loc;       /* send Location */
} wans;

static const wans ANS_PUT = {201, 200, 1, 1};
static const wans ANS_DELETE = {200, 200, 1, 0};
static const wans ANS_COPY = {201, 201, 1, 1};
static const wans ANS_POST = {201, 201, 0, 1};

/* May the requester write doc to id? Design documents need a db admin.
 * In the users database a plaintext password becomes PBKDF2 fields here
 * (*doc replaced); the _users rules answer from the store's edit (the users
 * database's validator, auth.c). doc NULL: a deletion. -1 with the error
 * written. */
/* api_may_write, its refusal written. */
static int write_allowed(hreq *r, const char *id, size_t n, json_val **doc) {
  const char *why;
  int rc = api_may_write(r, id, n, 0, doc, &why);
  if (rc) hres_errw(r, rc, why);
  return rc ? -1 : 0;
}

/* _local documents are not rev-checked (CouchDB 3.4), unless the request
 * asks for it with "X-Divan-Local-Rev: strict": a compare-and-set, which
 * the replicator's leases (repl/mgr.c) rely on. */
static int local_flags(hreq *r) {
  const char *h = hreq_hdr(r, HTTP_LOCAL_REV_HEADER);
  return h && !strcmp(h, "strict") ? STORE_LOCAL_STRICT : 0;
}

/* Write a _local document: doc is the request's object (its _rev and
 * _revisions are dropped here; the rev is `rev` when have). batch answers
 * 202 whatever happened, as CouchDB. */
static void local_write(hreq *r, json_val *doc, const char *id, size_t n, const trev *rev, int have, int batch,
                        const wans *ans) {
  int64_t cur;
  if (local_rev(r, rev, have, &cur)) return;
  json_obj_del(doc, "_rev", 4);
  json_obj_del(doc, "_revisions", 10);
  store_edit e;
  int rc = store_edit_from_json(&r->a, doc, 1, &e);
  if (rc) {
    write_err(r, rc, id, n);
    return;
  }
  int64_t nrev = 0;
  rc = store_local_put(r->app->db, id, n, e.body, cur, e.deleted, local_flags(r), &nrev);
  if (rc == DV_ENOT_FOUND && e.deleted) rc = 0; /* deleting nothing: CouchDB answers 0-0 */
  if (batch) {
    api_written(r, 202, id, n, NULL, 0, 0);
    return;
  }
  if (rc) {
    write_err(r, rc, id, n);
    return;
  }
  char rs[32];
  snprintf(rs, sizeof rs, "0-%lld", (long long)(e.deleted ? 0 : nrev));
  api_written(r, e.deleted ? ans->deleted : ans->created, id, n, rs, ans->etag, ans->loc);
}

/* One edit through the store, answered as ans says. w (may be NULL: no
 * attachments to ready) is the request's attachment state. */
/* A document write in flight (store_update_async): its edit (a copy the
 * store fills in) and how to answer. */
typedef struct doc_w {
  api_write w;
  store_edit e;
  int batch;
  const wans *ans;
} doc_w;

static void edit_answer(hreq *r) {
  doc_w *p = r->app->pending;
  store_edit *e = &p->e;
  int rc = p->w.rc, batch = p->batch;
  const wans *ans = p->ans;
  if (batch && !(!rc && e->why)) { /* CouchDB answers before it writes; errors only reach its log
                                     (a validator's refusal came first, as it did before the hooks) */
    api_written(r, 202, e->id, e->id_len, NULL, 0, 0);
    return;
  }
  if (!rc) rc = e->rc;
  if (rc) {
    write_err_why(r, rc, e->id, e->id_len, hatt_reason(r, rc, NULL, e));
    return;
  }
  const char *rev = rev_text(r, &e->rev);
  if (!rev) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  api_written(r, e->deleted ? ans->deleted : ans->created, e->id, e->id_len, rev, ans->etag, ans->loc);
}

/* Write e and answer once it is durable, without holding a thread while
 * it commits: the answer is edit_answer's. w (may be NULL) stays the
 * request's until its end. */
static void edit_write(hreq *r, store_edit *e, int new_edits, int batch, const wans *ans, hatt_w *w) {
  const char *why = NULL;
  int rc = w ? hatt_prepare(w, e, &why) : 0;
  if (rc) {
    write_err_why(r, rc, e->id, e->id_len, why);
    return;
  }
  doc_w *p = arena_calloc(&r->a, sizeof *p);
  if (!p) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  p->e = *e;
  p->batch = batch;
  p->ans = ans;
  r->app->pending = p;
  api_update(r, &p->w, &p->e, 1, new_edits, edit_answer);
}

/* A PUT in progress: the document comes from the JSON body or from the
 * first part of a multipart/related body (put_mp_json). */
typedef struct putctx {
  hreq *r;
  const docq *q;
  int local;      /* a _local document */
  int batch;      /* batch=ok */
  store_edit e;   /* the edit, once the document is read */
} putctx;

/* The document of a PUT up to its edit. -1 when the request has been
 * answered (an error, or a _local document written), else 0 with *out. */
static int put_doc(putctx *c, json_val *doc, store_edit **out) {
  hreq *r = c->r;
  const docq *q = c->q;
  trev brev, rev;
  int have_b, have;
  if (doc_fields(r, doc, &brev, &have_b)) return -1;
  if (pick_rev(r, have_b ? &brev : NULL, q->rev, q->rev_len, &rev, &have)) return -1;
  prefer_revisions(doc);
  if (c->local) {
    local_write(r, doc, r->app->docid, r->app->docid_len, &rev, have, c->batch, &ANS_PUT);
    return -1;
  }
  if (!q->new_edits && !have) {
    hres_errw(r, DV_EBAD_REQUEST, "When `new_edits: false`, the document needs `_rev` or `_revisions` specified");
    return -1;
  }
  if (have && !have_b) { /* the rev came from ?rev= or If-Match */
    json_val *s = json_new_string(&r->a, rev.s, rev.n);
    if (json_obj_setz(&r->a, doc, "_rev", s)) {
      hres_err(r, DV_ENOMEM);
      return -1;
    }
  }
  if (write_allowed(r, r->app->docid, r->app->docid_len, &doc)) return -1;
  int rc = store_edit_from_json(&r->a, doc, q->new_edits, &c->e);
  if (rc) {
    write_err_why(r, rc, r->app->docid, r->app->docid_len, hatt_reason(r, rc, doc, NULL));
    return -1;
  }
  c->e.id = r->app->docid; /* the URL names the document, whatever _id says */
  c->e.id_len = r->app->docid_len;
  *out = &c->e;
  return 0;
}

/* hatt_mp_read's hand-over of the JSON part. */
static int put_mp_json(void *arg, const char *json, size_t n, store_edit **out) {
  putctx *c = arg;
  json_val *doc;
  if (hreq_parse_json(c->r, json, n, &doc)) return -1;
  if (doc->type != JSON_OBJECT) {
    hres_errw(c->r, DV_EBAD_REQUEST, "Document must be a JSON object");
    return -1;
  }
  return put_doc(c, doc, out);
}

/* A multipart/related Content-Type (chttpd_db matches "multipart/related;"). */
static int is_mp_related(const char *ct) { return ct && hparse_media_is(ct, strlen(ct), "multipart/related"); }

/* PUT /{db}/{docid}: a JSON document, or a multipart/related body (the
 * document, then the content of its "follows" attachments). */
static void doc_put(hreq *r, const docq *q, int local) {
  if (api_docid_ok(r, r->app->docid, r->app->docid_len, 1)) return;
  putctx c = {.r = r, .q = q, .local = local, .batch = batch_ok(r)};
  hatt_w *w = hatt_w_new(r);
  if (!w) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  store_edit *e;
  const char *ct = hreq_hdr(r, "Content-Type");
  json_val *doc;
  if (is_mp_related(ct) ? hatt_mp_read(w, ct, put_mp_json, &c, &e) : doc_body(r, &doc) || put_doc(&c, doc, &e)) {
    hatt_w_done(w);
    return;
  }
  edit_write(r, e, q->new_edits, c.batch, &ANS_PUT, w);
}

/* ---- PUT /{db}/{docid} with a multipart/related body, streamed ----------------
 *
 * The route (HTTP_STREAM_BODY | HTTP_MULTIPART, below) hands such a body to
 * the sink hapi_doc_mp_begin sets after authentication instead of reading it into
 * r->body: the pieces go through hatt_mp_feed as they arrive, so only the
 * JSON part is held in memory (at most max_body bytes) while each
 * attachment part is checked and written to a store upload piecewise. At
 * the end of the body the edit is written exactly as doc_put writes it.
 * _local documents never come here (they have no attachments): doc_put
 * answers them from r->body. */

typedef struct mp_put {
  docq q;         /* the query, parsed before the body */
  putctx c;       /* the PUT (c.q points at q) */
  hatt_w *w;      /* its attachment state */
  hatt_mp *m;     /* the body's parse */
} mp_put;

static int mp_put_write(void *arg, hreq *r, const uint8_t *p, size_t n) {
  (void)r;
  mp_put *u = arg;
  return hatt_mp_feed(u->m, p, n);
}

static void mp_put_finish(void *arg, hreq *r) {
  mp_put *u = arg;
  store_edit *e;
  if (hatt_mp_end(u->m, &e)) return;
  edit_write(r, e, u->q.new_edits, u->c.batch, &ANS_PUT, u->w);
}

static void mp_put_done(void *arg) {
  mp_put *u = arg;
  hatt_mp_free(u->m);
  hatt_w_done(u->w); /* after the write's answer: uploads a committed edit linked stay */
  u->m = NULL;
}

static const hsink_ops MP_PUT_OPS = {mp_put_write, mp_put_finish, mp_put_done};

void hapi_doc_mp_begin(hreq *r) {
  if (r->app->users_doc && !r->app->db_admin && hq_get(r, "open_revs", NULL)) { /* as hapi_doc */
    hres_errw(r, DV_EFORBIDDEN, "Only admins may do this in the users database.");
    return;
  }
  mp_put *u = arena_calloc(&r->a, sizeof *u);
  if (!u) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (parse_docq(r, &u->q) || api_docid_ok(r, r->app->docid, r->app->docid_len, 1)) return;
  u->c = (putctx){.r = r, .q = &u->q, .local = 0, .batch = batch_ok(r)};
  if (!(u->w = hatt_w_new(r))) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (hatt_mp_begin(u->w, hreq_hdr(r, "Content-Type"), api_srv_of(r)->max_body, put_mp_json, &u->c, &u->m)) {
    hatt_w_done(u->w);
    return;
  }
  hreq_sink(r, &MP_PUT_OPS, u);
}

/* DELETE /{db}/{docid}: the doc must exist (404 missing/deleted), then the
 * rev comes from ?rev= or If-Match; none is a conflict, as CouchDB. */
static void doc_delete(hreq *r, int local) {
  size_t qn;
  const char *qs = hq_get(r, "rev", &qn);
  if (local) {
    json_val *cur;
    int rc = store_local_get(r->app->db, r->app->docid, r->app->docid_len, &r->a, &cur);
    if (rc) {
      read_err(r, rc);
      return;
    }
    trev rev;
    int have;
    if (pick_rev(r, NULL, qs, qn, &rev, &have)) return;
    int64_t n;
    if (local_rev(r, &rev, have, &n)) return;
    rc = store_local_put(r->app->db, r->app->docid, r->app->docid_len, NULL, n, 1, local_flags(r), NULL);
    if (rc == DV_ENOT_FOUND) rc = DV_ECONFLICT; /* deleted meanwhile */
    if (rc) write_err(r, rc, r->app->docid, r->app->docid_len);
    else api_written(r, ANS_DELETE.deleted, r->app->docid, r->app->docid_len, "0-0", ANS_DELETE.etag, ANS_DELETE.loc);
    return;
  }
  store_leaf *lv;
  size_t nl;
  int rc = store_doc_leaves(r->app->db, r->app->docid, r->app->docid_len, &r->a, &lv, &nl);
  if (!rc && lv[0].deleted) rc = DV_EDELETED;
  if (rc) {
    read_err(r, rc);
    return;
  }
  trev rev;
  int have;
  if (pick_rev(r, NULL, qs, qn, &rev, &have)) return;
  if (write_allowed(r, r->app->docid, r->app->docid_len, NULL)) return;
  store_edit e;
  memset(&e, 0, sizeof e);
  e.id = r->app->docid;
  e.id_len = r->app->docid_len;
  e.deleted = 1;
  if (have && store_rev_parse(rev.s, rev.n, &r->a, &e.parent)) {
    hres_err(r, DV_ECONFLICT); /* a rev the store cannot hold is no leaf of this doc */
    return;
  }
  edit_write(r, &e, 1, 0, &ANS_DELETE, NULL);
}

/* COPY /{db}/{docid} with Destination: "newid" or "newid?rev=X". */
static void doc_copy(hreq *r, int local) {
  size_t qn;
  const char *qs = hq_get(r, "rev", &qn);
  trev srev, trv;
  int have_s, have_t = 0;
  if (pick_rev(r, NULL, qs, qn, &srev, &have_s)) return;
  const char *dest = hreq_hdr(r, "Destination");
  if (!dest) {
    hres_errw(r, DV_EBAD_REQUEST, "Destination header is mandatory for COPY.");
    return;
  }
  if (!strncmp(dest, "http://", 7) || !strncmp(dest, "https://", 8)) {
    hres_errw(r, DV_EBAD_REQUEST, "Destination URL must be relative.");
    return;
  }
  const char *qm = strchr(dest, '?');
  size_t dn = qm ? (size_t)(qm - dest) : strlen(dest);
  if (qm) {
    const char *eq = strchr(qm + 1, '=');
    if (!eq || trev_parse(eq + 1, strlen(eq + 1), &trv)) {
      bad_rev(r);
      return;
    }
    have_t = 1;
  }
  size_t tn;
  char *tid = url_decode(&r->a, dest, dn, 1, &tn); /* mochiweb_util:unquote */
  if (!tid) {
    hres_errw(r, DV_EBAD_REQUEST, "Destination header is not a valid URL path.");
    return;
  }
  /* the source */
  json_val *src = NULL;
  int rc;
  if (local) {
    rc = store_local_get(r->app->db, r->app->docid, r->app->docid_len, &r->a, &src);
    const json_val *cur = rc ? NULL : json_obj_getz(src, "_rev");
    if (!rc && have_s && (!cur || cur->len != srev.n || memcmp(cur->u.s, srev.s, srev.n))) rc = DV_ENOT_FOUND;
  } else {
    store_rev rv;
    rc = have_s && store_rev_parse(srev.s, srev.n, &r->a, &rv) ? DV_ENOT_FOUND : 0;
    if (!rc) rc = store_doc_get(r->app->db, r->app->docid, r->app->docid_len, have_s ? &rv : NULL, 0, &r->a, &src);
  }
  if (rc) {
    read_err(r, rc);
    return;
  }
  /* the copy: the source's fields (a deleted source rev copies as deleted) */
  json_val *doc = json_new_object(&r->a);
  if (!doc) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  for (size_t i = 0; i < src->len; i++) {
    const json_member *m = &src->u.members[i];
    if (key_is(m, "_id") || key_is(m, "_rev")) continue;
    if (json_obj_set(&r->a, doc, m->key, m->klen, m->val)) {
      hres_err(r, DV_ENOMEM);
      return;
    }
  }
  if (api_docid_ok(r, tid, tn, 1)) return;
  if (is_local(tid, tn)) {
    local_write(r, doc, tid, tn, &trv, have_t, 0, &ANS_COPY);
    return;
  }
  if (write_allowed(r, tid, tn, &doc)) return;
  store_edit e;
  rc = store_edit_from_json(&r->a, doc, 1, &e);
  if (rc) {
    write_err_why(r, rc, tid, tn, hatt_reason(r, rc, doc, NULL));
    return;
  }
  e.id = tid;
  e.id_len = tn;
  if (have_t && store_rev_parse(trv.s, trv.n, &r->a, &e.parent)) {
    hres_err(r, DV_ECONFLICT);
    return;
  }
  /* the copy's attachments: the source revision's content, not stubs */
  const json_val *srv = json_obj_getz(src, "_rev");
  store_rev from;
  hatt_w *w = hatt_w_new(r);
  if (!w) rc = DV_ENOMEM;
  else if (srv && srv->type == JSON_STRING && !store_rev_parse(srv->u.s, srv->len, &r->a, &from))
    rc = hatt_copy(w, r->app->docid, r->app->docid_len, &from, &e);
  if (rc) write_err(r, rc, tid, tn);
  else edit_write(r, &e, 1, 0, &ANS_COPY, w);
}

/* POST /{db}/{docid} is CouchDB's multipart/form-data attachment upload
 * (api/att.c). */
static void doc_form_post(hreq *r) { hapi_doc_form(r); }

/* /{db}/{docid}/{attachment…} (api/att.c; it refuses _local documents). */
static void att_req(hreq *r, int local) {
  (void)local;
  hapi_att(r);
}

/* ---- entry points ---------------------------------------------------------- */

void hapi_doc(hreq *r) {
  int local = is_local(r->app->docid, r->app->docid_len);
  if (r->app->users_doc && !r->app->db_admin && (r->app->sub || local || hq_get(r, "open_revs", NULL))) {
    /* a _users document outside a member's rights: only its plain form */
    hres_errw(r, DV_EFORBIDDEN, "Only admins may do this in the users database.");
    return;
  }
  if (r->app->sub) {
    att_req(r, local);
    return;
  }
  docq q;
  switch (r->method) {
  case HM_GET:
  case HM_HEAD:
    if (parse_docq(r, &q)) return;
    if (local) local_get(r, &q);
    else doc_get(r, &q);
    return;
  case HM_PUT:
    if (parse_docq(r, &q)) return;
    doc_put(r, &q, local);
    return;
  case HM_DELETE:
    doc_delete(r, local);
    return;
  case HM_COPY:
    doc_copy(r, local);
    return;
  case HM_POST:
    doc_form_post(r);
    return;
  default:
    hres_method(r, DOC_ALLOW);
  }
}

/* POST /{db}: a new document; its id from _id or a fresh uuid. */
void hapi_doc_post(hreq *r) {
  if (hreq_need_json(r)) return;
  json_val *doc;
  trev brev;
  int have_b;
  if (doc_body(r, &doc) || doc_fields(r, doc, &brev, &have_b)) return;
  const json_val *idv = json_obj_getz(doc, "_id");
  const char *id;
  size_t n;
  if (idv) {
    id = idv->u.s;
    n = idv->len;
  } else {
    /* CouchDB gives a doc without _id a new id and no rev */
    char *u = arena_alloc(&r->a, 33);
    if (!u) {
      hres_err(r, DV_ENOMEM);
      return;
    }
    api_uuid(u);
    id = u;
    n = 32;
    json_obj_del(doc, "_rev", 4);
    json_obj_del(doc, "_revisions", 10);
    have_b = 0;
  }
  prefer_revisions(doc);
  int batch = batch_ok(r);
  if (is_local(id, n)) {
    local_write(r, doc, id, n, &brev, have_b, batch, &ANS_POST);
    return;
  }
  if (write_allowed(r, id, n, &doc)) return;
  store_edit e;
  int rc = store_edit_from_json(&r->a, doc, 1, &e);
  if (rc) {
    write_err_why(r, rc, id, n, hatt_reason(r, rc, doc, NULL));
    return;
  }
  e.id = id;
  e.id_len = n;
  hatt_w *w = hatt_w_new(r);
  if (!w) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  edit_write(r, &e, 1, batch, &ANS_POST, w);
}

/* ---- routes ------------------------------------------------------------------ */

static void no_design_id(hreq *r) { hres_errw(r, DV_EBAD_DOCID, "Illegal document id `_design/`"); }
static void no_local_id(hreq *r) { hres_errw(r, DV_EBAD_DOCID, "Illegal document id `_local/`"); }

#define DOC (API_NEEDS_DB | API_DOC)

/* After every other table (route.c): "{id}" takes any segment. */
static const http_route routes[] = {
    {HTTP_ANY, "/{db}/_design", 0, no_design_id},
    {HTTP_ANY, "/{db}/_local", 0, no_local_id},
    {HTTP_ANY, "/{db}/_design/{any}/{_}", 0, hapi_not_yet},
    {HTTP_ANY, "/{db}/_design/{any}/{_}/{rest}", 0, hapi_not_yet},
    /* a PUT of a document with its attachments (multipart/related) or of
     * one attachment streams its body (the row of the same pattern right
     * after it takes the rest) */
    {M(PUT), "/{db}/_design/{id}", DOC | HTTP_STREAM_BODY | HTTP_MULTIPART, hapi_doc_mp_begin},
    {HTTP_ANY, "/{db}/_design/{id}", DOC, hapi_doc},
    {M(PUT), "/{db}/_design/{id}/{rest}", DOC | HTTP_STREAM_BODY, hapi_att_upload},
    {HTTP_ANY, "/{db}/_design/{id}/{rest}", DOC, hapi_doc},
    {HTTP_ANY, "/{db}/_local/{id}", DOC, hapi_doc},
    {HTTP_ANY, "/{db}/_local/{id}/{rest}", DOC, hapi_doc},
    {HTTP_ANY, "/{db}/{_}/{rest}", 0, hapi_missing}, /* no such database endpoint */
    {HTTP_ANY, "/{db}/{_id}", DOC, hapi_doc},        /* "_design%2Fx", or an id it refuses */
    {M(PUT), "/{db}/{id}", DOC | HTTP_STREAM_BODY | HTTP_MULTIPART, hapi_doc_mp_begin},
    {HTTP_ANY, "/{db}/{id}", DOC, hapi_doc},
    {M(PUT), "/{db}/{id}/{rest}", DOC | HTTP_STREAM_BODY, hapi_att_upload},
    {HTTP_ANY, "/{db}/{id}/{rest}", DOC, hapi_doc},
};
const api_routes api_doc_routes = API_TABLE(routes);
