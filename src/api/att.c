/* att.c — the standalone attachment endpoints of the CouchDB API: PUT,
 * GET, HEAD and DELETE on /{db}/{docid}/{attname} (the name is every path
 * segment after the document id, joined with '/', so it may hold slashes),
 * and POST /{db}/{docid} with multipart/form-data (Fauxton's upload form).
 *
 * Both directions stream, so memory stays bounded whatever the size:
 *
 *   PUT   a route flagged HTTP_STREAM_BODY (doc.c's table): the engine
 *         authenticates it before any body byte is read and calls
 *         hapi_att_upload: every check that needs no body, including the
 *         read of the parent revision, so a conflict is answered without
 *         reading a gigabyte first. Each piece of the body then comes to
 *         up_write: counted against [couchdb] max_attachment_size, MD5'd
 *         for Content-MD5, gzip-encoded when the type is compressible
 *         ([attachments] compressible_types, compression_level), and kept
 *         in memory while the stored bytes fit STORE_ATT_INLINE_MAX, else
 *         written to a store upload (store_att_upload_*). When the body
 *         ended, up_finish makes the edit: the parent's body and its other
 *         attachments as stubs, this one replaced or added.
 *   GET   the stored bytes are read back with store_att_pread, ATT_PIECE
 *         per call, by a sized response (hres_stream): a gzip-stored
 *         attachment goes out as stored to a client whose Accept-Encoding
 *         takes gzip, else decoded on the fly. Range requests apply to
 *         identity attachments only, as in CouchDB: one range is a 206
 *         with Content-Range, 2..9 ranges a multipart/byteranges 206, 10 or
 *         more are ignored; a backwards range or one past the end is 416.
 *
 * Every clause follows db_attachment_req in CouchDB's chttpd_db.erl (and
 * the POST clause of db_doc_req for forms), with its error texts.
 *
 * Not here: inline (base64) and multipart/related attachments inside
 * document bodies (doc.c, bulk.c, docatt.c), how the bytes are stored
 * (store/att.c).
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "http/hparse.h"
#include "api/api.h"
#include "util/multipart.h"
#include "util/alloc.h"
#include "util/b64.h"
#include "util/gz.h"
#include "util/md5.h"

#define ATT_ALLOW "DELETE,GET,HEAD,PUT"  /* db_attachment_req's 405 list */
#define ATT_PIECE (1u << 20)             /* stored bytes per store_att_pread and per upload write */
#define ATT_DECODE_FEED 4096             /* gzip input per decode step: what one step can expand to stays small */
#define FORM_MAX_PARTS 10000             /* parts of one form upload */
#define FORM_MAX_HEADER 16384            /* header bytes of one form part */
#define R_MISSING_ATT "Document is missing attachment"

/* ---- small tools --------------------------------------------------------- */

static int has_prefix(const char *s, size_t n, const char *p) {
  size_t k = strlen(p);
  return n >= k && !memcmp(s, p, k);
}

static int is_local(const char *id, size_t n) { return n > 7 && has_prefix(id, n, "_local/"); }

/* An error of a read: no such document is "missing", a deleted winner
 * "deleted" (as api/doc.c answers them). */
static void read_err(hreq *r, int rc) {
  hres_err(r, rc == DV_EBAD_DOCID ? DV_ENOT_FOUND : rc); /* a bad id names no document */
}

/* An error of a write: a document over max_document_size names it. */
static void write_err(hreq *r, int rc, const char *why) {
  if (rc == DV_EDOC_TOO_LARGE) hres_errw(r, DV_EDOC_TOO_LARGE, r->app->docid);
  else if (why) hres_errw(r, rc, why); /* a write hook's refusal, with its reason */
  else hres_err(r, rc);
}

/* CouchDB's answer to a ?rev= that is no leaf of the document
 * (chttpd: {{not_found, missing}, Rev}). */
static void missing_rev(hreq *r) { hres_err(r, DV_EMISSING_REV); }

/* The attachment's name: path segments r->app->sub.. joined with '/' (arena). */
static int att_name(hreq *r, const char **out, size_t *out_len) {
  size_t n = 1;
  for (int i = r->app->sub; i < r->nseg; i++) n += r->seg_len[i] + 1;
  char *s = arena_alloc(&r->a, n);
  if (!s) return DV_ENOMEM;
  size_t k = 0;
  for (int i = r->app->sub; i < r->nseg; i++) {
    if (i > r->app->sub) s[k++] = '/';
    memcpy(s + k, r->seg[i], r->seg_len[i]);
    k += r->seg_len[i];
  }
  s[k] = 0;
  *out = s;
  *out_len = k;
  return 0;
}

/* validate_attachment_name: no leading '_', valid UTF-8. */
static int name_ok(hreq *r, const char *name, size_t n) {
  if (n && name[0] == '_') {
    dv_buf b;
    buf_init(&b);
    buf_puts(&b, "Attachment name '");
    buf_append(&b, name, n);
    buf_puts(&b, "' starts with prohibited character '_'");
    if (buf_error(&b)) hres_err(r, DV_ENOMEM);
    else hres_errw(r, DV_EBAD_REQUEST, (const char *)b.p);
    buf_free(&b);
    return -1;
  }
  if (n == 0 || json_utf8_check(name, n, NULL)) {
    hres_errw(r, DV_EBAD_REQUEST, "Attachment name is not UTF-8 encoded");
    return -1;
  }
  return 0;
}

/* May the requester write an attachment of this document (api_may_write)?
 * -1 with the error written. */
static int write_allowed(hreq *r) {
  const char *why;
  int rc = api_may_write(r, r->app->docid, r->app->docid_len, 1, NULL, &why);
  if (rc) hres_errw(r, rc, why);
  return rc ? -1 : 0;
}

/* One edit through the store as the requester (the write hooks see who),
 * blocking: for the form upload, whose files are freed right after. */
static int att_update(hreq *r, store_edit *e) {
  store_wctx w;
  store_user u;
  api_wctx(r, &w, &u);
  return store_update(r->app->db, &w, e, 1, 1);
}

static void write_err(hreq *r, int rc, const char *why);
static void send_written(hreq *r, int status, const store_rev *rev);
static void set_location(hreq *r, const char *name, size_t n);

/* An attachment write in flight (store_update_async): the edit (a copy the
 * store fills in) and how to answer. */
typedef struct att_w {
  api_write w;
  store_edit e;
  int status;            /* 201 for a PUT, 200 for a DELETE */
  const char *loc;       /* the attachment's name for Location, or NULL */
  size_t loc_n;
} att_w;

static void att_answer(hreq *r) {
  att_w *p = r->app->pending;
  int rc = p->w.rc ? p->w.rc : p->e.rc;
  if (rc) {
    write_err(r, rc, p->w.rc ? NULL : p->e.why);
    return;
  }
  send_written(r, p->status, &p->e.rev);
  if (p->loc) set_location(r, p->loc, p->loc_n);
}

/* Write e as the requester and answer status (with the Location of
 * attachment loc when given) once it is durable, without holding a thread
 * while it commits. What the edit uses must live until the request ends. */
static void att_write(hreq *r, const store_edit *e, int status, const char *loc, size_t loc_n) {
  att_w *p = arena_calloc(&r->a, sizeof *p);
  if (!p) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  p->e = *e;
  p->status = status;
  p->loc = loc;
  p->loc_n = loc_n;
  r->app->pending = p;
  api_update(r, &p->w, &p->e, 1, 1, att_answer);
}

/* ---- revisions ----------------------------------------------------------- */

/* couch_doc:parse_rev's shape: decimal digits, '-', then anything. */
static int rev_shape(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && i < 19 && s[i] >= '0' && s[i] <= '9') i++;
  return i > 0 && i < n && s[i] == '-';
}

static int is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return 0;
  }
  return 1;
}

/* Equal as CouchDB compares parsed revs (a 32-hex id is a number). */
static int rev_eq(const char *a, size_t an, const char *b, size_t bn) {
  if (an != bn) return 0;
  if (!memcmp(a, b, an)) return 1;
  const char *da = memchr(a, '-', an);
  return da && (size_t)(da - a) + 33 == an && !strncmp(a, b, (size_t)(da - a) + 1) && is_hex(da + 1, 32) &&
         is_hex(b + (da - a) + 1, 32) && !strncasecmp(da + 1, b + (da - a) + 1, 32);
}

/* extract_header_rev: ?rev= and If-Match (quotes stripped), which must
 * agree. *have = 0 when neither is given. -1 with the error written. */
static int write_rev(hreq *r, const char **out, size_t *out_len, int *have) {
  size_t qn = 0, hn = 0;
  const char *q = hq_get(r, "rev", &qn);
  const char *h = hreq_hdr(r, "If-Match");
  if (q && !rev_shape(q, qn)) goto bad;
  if (h) {
    hn = strlen(h);
    while (hn && *h == '"') h++, hn--;
    while (hn && h[hn - 1] == '"') hn--;
    if (!rev_shape(h, hn)) goto bad;
  }
  if (q && h && !rev_eq(q, qn, h, hn)) {
    hres_errw(r, DV_EBAD_REQUEST, "Document rev and etag have different values");
    return -1;
  }
  *have = q || h;
  *out = q ? q : h;
  *out_len = q ? qn : hn;
  return 0;
bad:
  hres_err(r, DV_EBAD_REV);
  return -1;
}

/* ---- configuration ------------------------------------------------------- */

/* [couchdb] max_attachment_size as a limit on the bytes of a body as sent
 * (api/docatt.c reads the config, "infinity" included). */
static uint64_t max_size(const hatt_cfg *c) { return c->max_size < 0 ? 0 : (uint64_t)c->max_size; }

/* The gzip level for a new attachment of this Content-Type, 0 = store it
 * as sent ([attachments] compression_level and compressible_types, matched
 * as api/docatt.c matches them for inline attachments). */
static int comp_level(const hatt_cfg *c, const char *type) {
  return hatt_compressible(c, type, strlen(type)) ? c->level : 0;
}

/* ---- response headers ---------------------------------------------------- */

/* Location: /{db}/{docid}/{attname} made absolute (chttpd:absolute_uri). */
static void set_location(hreq *r, const char *name, size_t n) {
  const char *seg[3] = {r->app->db_name, r->app->docid, name};
  size_t len[3] = {strlen(r->app->db_name), r->app->docid_len, n};
  hres_location(r, seg, len, 3);
}

/* {"ok":true,"id":…,"rev":…} with the ETag of the new rev. */
static void send_written(hreq *r, int status, const store_rev *rev) {
  dv_buf rb;
  buf_init(&rb);
  store_rev_format(rev, &rb);
  buf_putc(&rb, 0);
  if (buf_error(&rb)) hres_err(r, DV_ENOMEM);
  else api_written(r, status, r->app->docid, r->app->docid_len, (const char *)rb.p, 1, 0);
  buf_free(&rb);
}

/* ---- edits --------------------------------------------------------------- */

/* The edit of a document revision as it stands (doc from store_doc_get, or
 * NULL for a new document): its user fields and its attachments as stubs,
 * but the one named (dropped); e->atts has room for one more. A deleted
 * revision edited this way comes back to life. */
static int edit_from(hreq *r, json_val *doc, const char *name, size_t n, store_edit *e) {
  if (doc) {
    int rc = store_edit_from_json(&r->a, doc, 1, e);
    if (rc) return rc;
  } else {
    memset(e, 0, sizeof *e);
  }
  e->id = r->app->docid;
  e->id_len = r->app->docid_len;
  e->deleted = 0;
  store_att *atts = arena_alloc(&r->a, (e->n_atts + 1) * sizeof *atts);
  if (!atts) return DV_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < e->n_atts; i++) {
    const store_att *a = &e->atts[i];
    if (a->name_len == n && !memcmp(a->name, name, n)) continue;
    atts[k++] = *a;
  }
  e->atts = atts;
  e->n_atts = k;
  return 0;
}

/* Does the document (store_doc_get's form) have this attachment? */
static int doc_has_att(const json_val *doc, const char *name, size_t n) {
  const json_val *atts = json_obj_getz(doc, "_attachments");
  return atts && atts->type == JSON_OBJECT && json_obj_get(atts, name, n);
}

/* Is rv an ancestor of a leaf of the document (replaced, not unknown)? */
static int in_history(hreq *r, const store_rev *rv) {
  store_leaf *lv;
  size_t n;
  if (store_doc_leaves(r->app->db, r->app->docid, r->app->docid_len, &r->a, &lv, &n)) return 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < lv[i].n_anc; k++)
      if (!store_rev_cmp(&lv[i].anc[k], rv)) return 1;
  return 0;
}

/* The parent of a write: the revision named (rev_s), or the winner when
 * none is. *out NULL: no document (or a deleted one) to extend. -1 with the
 * error written: a rev replaced since is a 409 conflict, one the document
 * never had 409 not_found/missing_rev. An existing doc without a rev is
 * left to the caller. */
static int load_parent(hreq *r, const char *rev_s, size_t rev_n, int have, json_val **out) {
  *out = NULL;
  if (!have) {
    json_val *doc;
    int rc = store_doc_get(r->app->db, r->app->docid, r->app->docid_len, NULL, 0, &r->a, &doc);
    if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) return 0;
    if (rc) {
      hres_err(r, rc);
      return -1;
    }
    *out = doc;
    return 0;
  }
  store_rev rv;
  if (store_rev_parse(rev_s, rev_n, &r->a, &rv)) {
    missing_rev(r);
    return -1;
  }
  int rc = store_doc_get(r->app->db, r->app->docid, r->app->docid_len, &rv, 0, &r->a, out);
  if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) {
    if (in_history(r, &rv)) hres_err(r, DV_ECONFLICT); /* edited since: CouchDB's update conflict */
    else missing_rev(r);
    return -1;
  }
  if (rc) {
    hres_err(r, rc);
    return -1;
  }
  return 0;
}

/* ---- uploads (PUT) ------------------------------------------------------- */

typedef struct att_up {
  hreq *r;                /* the request (the sink's state lives in its arena) */
  int streamed;           /* the body came through the sink (hapi_att_upload) */
  const char *name;       /* the attachment (arena) */
  size_t name_len;
  const char *type;       /* its content_type (arena) */
  json_val *parent;       /* the revision edited (arena), NULL: a new document */
  int gzip_in;            /* Content-Encoding: gzip: stored as sent */
  int level;              /* > 0: gzip-encoded here with this level */
  dv_gz *enc;             /* the encoder (level > 0) */
  dv_gz *dec;             /* gzip_in: a decoder that only counts */
  dv_md5 md5;             /* of the body as sent (Content-MD5) */
  int has_cmd5;           /* Content-MD5 was sent */
  uint8_t cmd5[16];       /* its digest */
  uint64_t got;           /* body bytes so far */
  uint64_t max;           /* max_attachment_size */
  uint64_t ident;         /* identity bytes (decoded length) */
  uint64_t stored;        /* stored bytes (encoded length) */
  dv_buf mem;             /* stored bytes: all of them while they fit
                             STORE_ATT_INLINE_MAX, then a staging buffer */
  store_att_upload *up;   /* the store upload, once past the inline size */
} att_up;

/* Stored bytes: into memory while they fit inline, else to the upload. */
static int put_stored(void *arg, const uint8_t *p, size_t n) {
  att_up *u = arg;
  hreq *r = u->r;
  u->stored += n;
  if (!u->up && u->mem.len + n <= STORE_ATT_INLINE_MAX) {
    buf_append(&u->mem, p, n);
    return buf_error(&u->mem) ? DV_ENOMEM : 0;
  }
  int rc;
  if (!u->up && (rc = store_att_upload_begin(r->app->db, r->app->docid, r->app->docid_len, &u->up))) return rc;
  buf_append(&u->mem, p, n);
  if (buf_error(&u->mem)) return DV_ENOMEM;
  if (u->mem.len < ATT_PIECE) return 0;
  rc = store_att_upload_write(u->up, u->mem.p, u->mem.len);
  buf_reset(&u->mem);
  return rc;
}

static int count_ident(void *arg, const uint8_t *p, size_t n) {
  att_up *u = arg;
  (void)p;
  u->ident += n;
  return 0;
}

/* A store or codec error met while writing: gzip that is not gzip is the
 * client's fault, the rest is the server's. */
static void up_err(att_up *u, int rc) {
  if (rc == DV_EINVAL && u->gzip_in) hres_errw(u->r, DV_EBAD_REQUEST, "The attachment is not valid gzip data.");
  else hres_err(u->r, rc);
}

static int up_write(void *arg, hreq *r, const uint8_t *p, size_t n) {
  att_up *u = arg;
  if (u->got + n > u->max || u->got + n < u->got) {
    hres_errw(r, DV_EATT_TOO_LARGE, u->name);
    return -1;
  }
  u->got += n;
  dv_md5_update(&u->md5, p, n);
  int rc;
  if (u->gzip_in) {
    rc = dv_gz_write(u->dec, p, n, 0, count_ident, u);
    if (!rc) rc = put_stored(u, p, n);
  } else if (u->enc) {
    u->ident += n;
    rc = dv_gz_write(u->enc, p, n, 0, put_stored, u);
  } else {
    u->ident += n;
    rc = put_stored(u, p, n);
  }
  if (rc) {
    up_err(u, rc);
    return -1;
  }
  return 0;
}

static void up_finish(void *arg, hreq *r) {
  att_up *u = arg;
  int rc = 0;
  if (u->enc) rc = dv_gz_write(u->enc, NULL, 0, 1, put_stored, u);
  if (!rc && u->dec) rc = dv_gz_write(u->dec, NULL, 0, 1, count_ident, u);
  if (rc) {
    up_err(u, rc);
    return;
  }
  if (u->has_cmd5) {
    uint8_t d[16];
    dv_md5_final(&u->md5, d);
    if (memcmp(d, u->cmd5, 16)) {
      hres_err(r, DV_ECONTENT_MD5);
      return;
    }
  }
  store_att na;
  memset(&na, 0, sizeof na);
  na.name = u->name;
  na.name_len = u->name_len;
  na.type = u->type;
  na.type_len = strlen(u->type);
  na.gzip = u->gzip_in || u->level > 0;
  na.length = (int64_t)u->ident;
  na.enc_length = (int64_t)u->stored;
  if (u->up) {
    if (u->mem.len) rc = store_att_upload_write(u->up, u->mem.p, u->mem.len);
    buf_reset(&u->mem);
    if (!rc) rc = store_att_upload_finish(u->up, NULL, NULL);
    if (rc) {
      hres_err(r, rc);
      return;
    }
    na.up = u->up;
  } else {
    na.data = u->mem.p ? u->mem.p : (const uint8_t *)"";
    na.data_len = u->mem.len;
  }
  store_edit e;
  rc = edit_from(r, u->parent, u->name, u->name_len, &e);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  e.atts[e.n_atts++] = na;
  if (!u->streamed) { /* hapi_att frees the upload right after: write now */
    rc = att_update(r, &e);
    int own = !rc;
    if (!rc) rc = e.rc;
    if (rc) {
      write_err(r, rc, own ? e.why : NULL);
      return;
    }
    send_written(r, 201, &e.rev);
    set_location(r, u->name, u->name_len);
    return;
  }
  att_write(r, &e, 201, u->name, u->name_len); /* up_done runs after the answer */
}

static void up_done(void *arg) {
  att_up *u = arg;
  dv_gz_close(u->enc);
  dv_gz_close(u->dec);
  buf_free(&u->mem);
  store_att_upload_free(u->up); /* after store_update: linked content stays */
  u->enc = u->dec = NULL;
  u->up = NULL;
}

static const hsink_ops UP_OPS = {up_write, up_finish, up_done};

/* Everything a PUT decides before its body: the database and the rights,
 * the id and the name, the encodings, the rev, the declared size, the
 * parent revision. NULL with the error written. */
static att_up *up_prepare(hreq *r) {
  if (api_docid_ok(r, r->app->docid, r->app->docid_len, 0) || write_allowed(r)) return NULL;
  att_up *u = arena_calloc(&r->a, sizeof *u);
  if (!u) {
    hres_err(r, DV_ENOMEM);
    return NULL;
  }
  u->r = r;
  buf_init(&u->mem);
  dv_md5_init(&u->md5);
  int rc = att_name(r, &u->name, &u->name_len);
  if (rc) {
    hres_err(r, rc);
    return NULL;
  }
  if (name_ok(r, u->name, u->name_len)) return NULL;
  const char *ct = hreq_hdr(r, "Content-Type");
  u->type = ct ? arena_strndup(&r->a, ct, strlen(ct)) : "application/octet-stream";
  const char *ce = hreq_hdr(r, "Content-Encoding");
  if (ce) {
    while (*ce == ' ') ce++;
    size_t n = strlen(ce);
    while (n && ce[n - 1] == ' ') n--;
    if (n == 4 && !strncasecmp(ce, "gzip", 4)) u->gzip_in = 1;
    else if (!(n == 8 && !strncasecmp(ce, "identity", 8))) {
      hres_errw(r, DV_EBAD_CONTENT_TYPE, "Only gzip and identity content-encodings are supported");
      return NULL;
    }
  }
  const char *rev;
  size_t rev_n;
  int have;
  if (!u->type || write_rev(r, &rev, &rev_n, &have)) {
    if (!u->type) hres_err(r, DV_ENOMEM);
    return NULL;
  }
  hatt_cfg cfg;
  hatt_cfg_get(r, &cfg);
  u->max = max_size(&cfg);
  const char *cl = hreq_hdr(r, "Content-Length");
  if (cl && strtoull(cl, NULL, 10) > u->max) {
    hres_errw(r, DV_EATT_TOO_LARGE, u->name);
    return NULL;
  }
  const char *cm = hreq_hdr(r, "Content-MD5");
  if (cm) {
    uint8_t d[64];
    size_t dn = 0, n = strlen(cm);
    if (n > 64 || dv_b64_decode(cm, n, 0, d, &dn) || dn != 16) {
      hres_err(r, DV_ECONTENT_MD5);
      return NULL;
    }
    memcpy(u->cmd5, d, 16);
    u->has_cmd5 = 1;
  }
  if (load_parent(r, rev, rev_n, have, &u->parent)) return NULL;
  if (!have && u->parent) { /* a new document's id is taken */
    hres_err(r, DV_ECONFLICT);
    return NULL;
  }
  if (!u->gzip_in) u->level = comp_level(&cfg, u->type);
  if (u->gzip_in) rc = dv_gz_open(0, 0, 0, &u->dec);
  else if (u->level) rc = dv_gz_open(1, u->level, 0, &u->enc);
  if (rc) {
    hres_err(r, rc);
    return NULL;
  }
  return u;
}

void hapi_att_upload(hreq *r) {
  att_up *u = up_prepare(r);
  if (!u) return;
  u->streamed = 1; /* the sink's done frees the upload once the write was answered */
  hreq_sink(r, &UP_OPS, u);
}

/* ---- reads (GET, HEAD) --------------------------------------------------- */

/* One piece of a response body: literal bytes, or stored bytes of the
 * attachment. */
typedef struct rd_seg {
  int lit;       /* 1: bytes of rd->lits at off; 0: stored bytes at off */
  int64_t off;   /* where they start */
  int64_t len;   /* how many */
} rd_seg;

typedef struct att_rd {
  store_db *db;          /* owned (taken from the request) */
  char *id;              /* the document id (owned) */
  size_t id_len;
  store_att att;         /* the attachment; name and type owned */
  rd_seg *segs;          /* the body, in order (owned) */
  int nsegs;
  int cur;               /* the segment being sent */
  int64_t seg_done;      /* bytes of it sent */
  dv_buf lits;           /* literal bytes of the segments */
  uint8_t *in;           /* stored bytes read ahead (ATT_PIECE) */
  size_t in_len, in_pos; /* what it holds, what was used */
  int decode;            /* 1: send the gzip-stored bytes decoded */
  dv_gz *gz;             /* the decoder */
  int64_t next_off;      /* decode: next stored offset to read */
  int gz_ended;          /* decode: the last input went in */
  dv_buf out;            /* decode: output not yet sent */
  size_t out_pos;
} att_rd;

static void rd_done(void *arg) {
  att_rd *d = arg;
  store_db_close(d->db);
  dv_free(d->id);
  dv_free((void *)d->att.name);
  dv_free((void *)d->att.type);
  dv_free(d->segs);
  buf_free(&d->lits);
  dv_free(d->in);
  dv_gz_close(d->gz);
  buf_free(&d->out);
  dv_free(d);
}

/* Read up to want stored bytes at off into d->in. */
static int rd_fill(att_rd *d, int64_t off, size_t want) {
  if (!d->in && !(d->in = dv_malloc(ATT_PIECE))) return -1;
  if (want > ATT_PIECE) want = ATT_PIECE;
  size_t got = 0;
  int rc = store_att_pread(d->db, d->id, d->id_len, &d->att, off, d->in, want, &got);
  if (rc || got == 0) return -1;
  d->in_len = got;
  d->in_pos = 0;
  return 0;
}

static int to_out(void *arg, const uint8_t *p, size_t n) {
  att_rd *d = arg;
  buf_append(&d->out, p, n);
  return buf_error(&d->out) ? DV_ENOMEM : 0;
}

static int64_t rd_decode(att_rd *d, uint8_t *out, size_t max) {
  for (;;) {
    if (d->out_pos < d->out.len) {
      size_t n = d->out.len - d->out_pos;
      if (n > max) n = max;
      memcpy(out, d->out.p + d->out_pos, n);
      d->out_pos += n;
      return (int64_t)n;
    }
    buf_reset(&d->out);
    d->out_pos = 0;
    if (d->gz_ended) return -1; /* the decoded body is shorter than its length */
    if (d->in_pos == d->in_len) {
      if (d->next_off >= d->att.enc_length) {
        d->gz_ended = 1;
        if (dv_gz_write(d->gz, NULL, 0, 1, to_out, d)) return -1;
        continue;
      }
      if (rd_fill(d, d->next_off, (size_t)(d->att.enc_length - d->next_off))) return -1;
      d->next_off += (int64_t)d->in_len;
    }
    size_t k = d->in_len - d->in_pos;
    if (k > ATT_DECODE_FEED) k = ATT_DECODE_FEED;
    int last = d->in_pos + k == d->in_len && d->next_off >= d->att.enc_length;
    int rc = dv_gz_write(d->gz, d->in + d->in_pos, k, last, to_out, d);
    d->in_pos += k;
    if (last) d->gz_ended = 1;
    if (rc) return -1;
  }
}

static int64_t rd_read(void *arg, uint8_t *out, size_t max) {
  att_rd *d = arg;
  if (d->decode) return rd_decode(d, out, max);
  while (d->cur < d->nsegs) {
    const rd_seg *s = &d->segs[d->cur];
    int64_t left = s->len - d->seg_done;
    if (left <= 0) {
      d->cur++;
      d->seg_done = 0;
      d->in_len = d->in_pos = 0;
      continue;
    }
    size_t n = (uint64_t)left < max ? (size_t)left : max;
    if (s->lit) {
      memcpy(out, d->lits.p + s->off + d->seg_done, n);
    } else {
      if (d->in_pos == d->in_len && rd_fill(d, s->off + d->seg_done, (size_t)(left < ATT_PIECE ? left : ATT_PIECE)))
        return -1;
      if (n > d->in_len - d->in_pos) n = d->in_len - d->in_pos;
      memcpy(out, d->in + d->in_pos, n);
      d->in_pos += n;
    }
    d->seg_done += (int64_t)n;
    return (int64_t)n;
  }
  return -1;
}

static const hstream_ops RD_OPS = {rd_read, rd_done};

/* A reader for att of r's document; takes r->app->db. NULL when out of memory. */
static att_rd *rd_new(hreq *r, const store_att *att) {
  att_rd *d = dv_calloc(1, sizeof *d);
  if (!d) return NULL;
  buf_init(&d->lits);
  buf_init(&d->out);
  d->att = *att;
  d->att.name = dv_strndup(att->name, att->name_len);
  d->att.type = dv_strndup(att->type, att->type_len);
  d->id = dv_strndup(r->app->docid, r->app->docid_len);
  d->id_len = r->app->docid_len;
  d->segs = dv_calloc(3 * HPARSE_MAX_RANGES + 2, sizeof *d->segs);
  if (!d->att.name || !d->att.type || !d->id || !d->segs) {
    rd_done(d);
    return NULL;
  }
  d->db = r->app->db; /* the response outlives the request: it owns the handle now */
  r->app->db = NULL;
  return d;
}

static void rd_lit(att_rd *d, const char *s) {
  rd_seg *g = &d->segs[d->nsegs++];
  g->lit = 1;
  g->off = (int64_t)d->lits.len;
  g->len = (int64_t)strlen(s);
  buf_puts(&d->lits, s);
}

static void rd_range(att_rd *d, int64_t off, int64_t len) {
  rd_seg *g = &d->segs[d->nsegs++];
  g->lit = 0;
  g->off = off;
  g->len = len;
}

static void att_get(hreq *r) {
  const char *name;
  size_t nlen;
  int rc = att_name(r, &name, &nlen);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  size_t qn;
  const char *q = hq_get(r, "rev", &qn);
  store_rev rv, *rp = NULL;
  if (q) {
    if (!rev_shape(q, qn)) {
      hres_err(r, DV_EBAD_REV);
      return;
    }
    if (store_rev_parse(q, qn, &r->a, &rv)) {
      read_err(r, DV_ENOT_FOUND);
      return;
    }
    rp = &rv;
  }
  store_att *atts;
  size_t n;
  rc = store_doc_atts(r->app->db, r->app->docid, r->app->docid_len, rp, &r->a, NULL, &atts, &n);
  if (rc) {
    read_err(r, rc);
    return;
  }
  const store_att *a = NULL;
  for (size_t i = 0; i < n && !a; i++)
    if (atts[i].name_len == nlen && !memcmp(atts[i].name, name, nlen)) a = &atts[i];
  if (!a) {
    hres_errw(r, DV_ENOT_FOUND, R_MISSING_ATT);
    return;
  }
  const char *type = arena_strndup(&r->a, a->type, a->type_len);
  char md5b[32], etag[36];
  dv_b64_encode(a->md5, 16, 0, md5b);
  snprintf(etag, sizeof etag, "\"%s\"", md5b);
  hres_header(r, "ETag", etag);
  if (hreq_etag_match(r, etag)) {
    hres_raw(r, 304, type ? type : "application/octet-stream", "", 0);
    return;
  }
  int gz_ok = a->gzip && api_accepts_gzip(r);
  if (gz_ok) hres_header(r, "Content-Encoding", "gzip");
  hres_header(r, "Accept-Ranges", a->gzip ? "none" : "bytes");
  dv_config *c = api_config(r);
  if (config_get_bool(c, "csp", "attachments_enable", 1)) {
    char *csp = config_get(c, "csp", "attachments_header_value");
    hres_header(r, "Content-Security-Policy", csp ? csp : "sandbox");
    dv_free(csp);
  }
  int64_t len = a->gzip && !gz_ok ? a->length : a->enc_length;
  hrange rg[HPARSE_MAX_RANGES + 1];
  int nr = a->gzip ? 0 : hparse_range(hreq_hdr(r, "Range"), rg);
  int how = nr > 0 ? hparse_range_resolve(rg, nr, len) : 0;
  if (how < 0) {
    char cr[48];
    snprintf(cr, sizeof cr, "bytes */%lld", (long long)len);
    hres_header(r, "Content-Range", cr);
    hres_err(r, DV_ERANGE_UNSATISFIABLE);
    return;
  }
  if (how > 0 && nr >= HPARSE_MAX_RANGES) how = 0;
  if (!type) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (how == 0 && (!a->gzip || gz_ok)) hres_header(r, "Content-MD5", md5b);
  if (how == 0 && len == 0) {
    hres_raw(r, 200, type, "", 0);
    return;
  }
  att_rd *d = rd_new(r, a);
  if (!d) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (how == 0) {
    if (a->gzip && !gz_ok) {
      d->decode = 1;
      if (dv_gz_open(0, 0, (uint64_t)a->length, &d->gz)) {
        rd_done(d);
        hres_err(r, DV_ENOMEM);
        return;
      }
    } else {
      rd_range(d, 0, len);
    }
    hres_stream(r, 200, type, (uint64_t)len, &RD_OPS, d);
    return;
  }
  char cr[80];
  if (nr == 1) {
    snprintf(cr, sizeof cr, "bytes %lld-%lld/%lld", (long long)rg[0].from, (long long)rg[0].to, (long long)len);
    hres_header(r, "Content-Range", cr);
    rd_range(d, rg[0].from, rg[0].to - rg[0].from + 1);
    hres_stream(r, 206, type, (uint64_t)(rg[0].to - rg[0].from + 1), &RD_OPS, d);
    return;
  }
  /* send_ranges_multipart: "--B", then per range CRLF, its headers, CRLF,
   * the bytes, CRLF "--B"; then "--". */
  char bnd[33];
  api_uuid(bnd);
  dv_buf hb;
  buf_init(&hb);
  buf_puts(&hb, "--");
  buf_puts(&hb, bnd);
  rd_lit(d, (const char *)(hb.p ? hb.p : (const uint8_t *)""));
  int64_t total = 0;
  for (int i = 0; i < nr; i++) {
    buf_reset(&hb);
    buf_printf(&hb, "\r\nContent-Type: %s\r\nContent-Range: bytes %lld-%lld/%lld\r\n\r\n", type,
               (long long)rg[i].from, (long long)rg[i].to, (long long)len);
    rd_lit(d, hb.p ? (const char *)hb.p : "");
    rd_range(d, rg[i].from, rg[i].to - rg[i].from + 1);
    buf_reset(&hb);
    buf_puts(&hb, "\r\n--");
    buf_puts(&hb, bnd);
    rd_lit(d, hb.p ? (const char *)hb.p : "");
  }
  rd_lit(d, "--");
  int oom = buf_error(&hb) || buf_error(&d->lits);
  buf_free(&hb);
  for (int i = 0; i < d->nsegs; i++) total += d->segs[i].len;
  char *ctype = arena_alloc(&r->a, 96);
  if (oom || !ctype) {
    rd_done(d);
    hres_err(r, DV_ENOMEM);
    return;
  }
  snprintf(ctype, 96, "multipart/byteranges; boundary=\"%s\"", bnd);
  hres_stream(r, 206, ctype, (uint64_t)total, &RD_OPS, d);
}

/* ---- DELETE -------------------------------------------------------------- */

static void att_delete(hreq *r) {
  const char *name, *rev;
  size_t nlen, rev_n;
  int have;
  int rc = att_name(r, &name, &nlen);
  if (rc) {
    hres_err(r, rc);
    return;
  }
  if (api_docid_ok(r, r->app->docid, r->app->docid_len, 0) || write_allowed(r) || name_ok(r, name, nlen) ||
      write_rev(r, &rev, &rev_n, &have))
    return;
  json_val *doc;
  if (!have) { /* the doc and the attachment must exist; then it is a conflict */
    rc = store_doc_get(r->app->db, r->app->docid, r->app->docid_len, NULL, 0, &r->a, &doc);
    if (rc) read_err(r, rc);
    else if (!doc_has_att(doc, name, nlen)) hres_errw(r, DV_ENOT_FOUND, R_MISSING_ATT);
    else hres_err(r, DV_ECONFLICT);
    return;
  }
  if (load_parent(r, rev, rev_n, 1, &doc)) return;
  if (!doc_has_att(doc, name, nlen)) {
    hres_errw(r, DV_ENOT_FOUND, R_MISSING_ATT);
    return;
  }
  store_edit e;
  rc = edit_from(r, doc, name, nlen, &e);
  if (rc) {
    write_err(r, rc, NULL);
    return;
  }
  att_write(r, &e, 200, NULL, 0);
}

/* ---- entry point --------------------------------------------------------- */

void hapi_att(hreq *r) {
  if (is_local(r->app->docid, r->app->docid_len)) {
    hres_errw(r, DV_EBAD_REQUEST, "_local documents do not accept attachments.");
    return;
  }
  switch (r->method) {
  case HM_GET:
  case HM_HEAD:
    att_get(r);
    return;
  case HM_PUT: { /* a body server.c did not stream (it read it into r->body) */
    att_up *u = up_prepare(r);
    if (!u) return;
    if (!r->body_len || !up_write(u, r, (const uint8_t *)r->body, r->body_len)) up_finish(u, r);
    up_done(u);
    return;
  }
  case HM_DELETE:
    att_delete(r);
    return;
  default:
    hres_method(r, ATT_ALLOW);
  }
}

/* ---- POST /{db}/{docid}: multipart/form-data ----------------------------- */

/* One file of the form. */
typedef struct form_file {
  const char *name;      /* filename= (arena) */
  size_t name_len;
  const char *type;      /* the part's Content-Type (arena) */
  dv_buf data;           /* its bytes */
  struct form_file *next;
} form_file;

typedef struct form {
  hreq *r;
  /* the part being parsed */
  char field[64];        /* name= (truncated: only _rev, _doc, _attachments matter) */
  const char *filename;  /* filename=, arena, or NULL */
  size_t filename_len;
  const char *ptype;     /* Content-Type, arena, or NULL */
  dv_buf val;            /* a plain field's value */
  form_file *file;       /* the file part being read */
  /* results */
  const char *rev;       /* _rev (arena) */
  size_t rev_len;
  const char *doc;       /* _doc (arena) */
  size_t doc_len;
  form_file *files, **tail;
  uint64_t max;          /* max_attachment_size */
  int too_large;         /* a file passed it (its name in big) */
  const char *big;
} form;

/* A parameter of a Content-Disposition value (quoted or not), arena. */
static const char *disp_param(dv_arena *a, const char *v, size_t vl, const char *key, size_t *out_len) {
  size_t kn = strlen(key);
  for (size_t i = 0; i < vl;) {
    size_t j = i;
    while (j < vl && v[j] != ';') {
      if (v[j] == '"') {
        j++;
        while (j < vl && v[j] != '"') j += v[j] == '\\' ? 2 : 1;
      }
      j++;
    }
    if (j > vl) j = vl;
    size_t s = i;
    while (s < j && (v[s] == ' ' || v[s] == '\t')) s++;
    if (j - s > kn && !strncasecmp(v + s, key, kn) && v[s + kn] == '=') {
      const char *p = v + s + kn + 1;
      size_t n = j - (s + kn + 1);
      while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
      char *out = arena_alloc(a, n + 1);
      if (!out) return NULL;
      size_t k = 0;
      if (n >= 2 && p[0] == '"' && p[n - 1] == '"') {
        for (size_t x = 1; x + 1 < n; x++) {
          if (p[x] == '\\' && x + 2 < n) x++;
          out[k++] = p[x];
        }
      } else {
        memcpy(out, p, n);
        k = n;
      }
      out[k] = 0;
      *out_len = k;
      return out;
    }
    i = j + 1;
  }
  return NULL;
}

static int fm_begin(void *arg) {
  form *f = arg;
  f->field[0] = 0;
  f->filename = NULL;
  f->ptype = NULL;
  f->file = NULL;
  buf_reset(&f->val);
  return 0;
}

static int fm_header(void *arg, const char *name, size_t nl, const char *value, size_t vl) {
  form *f = arg;
  dv_arena *a = &f->r->a;
  if (nl == 19 && !strncasecmp(name, "Content-Disposition", 19)) {
    size_t n = 0;
    const char *fld = disp_param(a, value, vl, "name", &n);
    if (fld && n < sizeof f->field) {
      memcpy(f->field, fld, n);
      f->field[n] = 0;
    }
    f->filename = disp_param(a, value, vl, "filename", &f->filename_len);
  } else if (nl == 12 && !strncasecmp(name, "Content-Type", 12)) {
    f->ptype = arena_strndup(a, value, vl);
    if (!f->ptype) return DV_ENOMEM;
  }
  return 0;
}

static int fm_headers_end(void *arg) {
  form *f = arg;
  if (strcmp(f->field, "_attachments") || !f->filename) return 0;
  form_file *ff = arena_calloc(&f->r->a, sizeof *ff);
  if (!ff) return DV_ENOMEM;
  ff->name = f->filename;
  ff->name_len = f->filename_len;
  ff->type = f->ptype ? f->ptype : "application/octet-stream";
  buf_init(&ff->data);
  *f->tail = ff;
  f->tail = &ff->next;
  f->file = ff;
  return 0;
}

static int fm_data(void *arg, const uint8_t *p, size_t n) {
  form *f = arg;
  dv_buf *b = f->file ? &f->file->data : &f->val;
  if (f->file && b->len + n > f->max) {
    f->too_large = 1;
    f->big = f->file->name;
    return DV_ERANGE;
  }
  buf_append(b, p, n);
  return buf_error(b) ? DV_ENOMEM : 0;
}

static int fm_end(void *arg) {
  form *f = arg;
  if (f->file) return 0;
  const char *v = arena_strndup(&f->r->a, f->val.p ? (const char *)f->val.p : "", f->val.len);
  if (!v) return DV_ENOMEM;
  if (!strcmp(f->field, "_rev")) f->rev = v, f->rev_len = f->val.len;
  else if (!strcmp(f->field, "_doc")) f->doc = v, f->doc_len = f->val.len;
  return 0;
}

/* couch_httpd:validate_referer: Referer must name the host asked. */
static int referer_ok(hreq *r) {
  const char *ref = hreq_hdr(r, "Referer");
  if (!ref) {
    hres_errw(r, DV_EBAD_REQUEST, "Referer header required.");
    return -1;
  }
  const char *p = strstr(ref, "://");
  p = p ? p + 3 : ref;
  size_t n = strcspn(p, "/?#");
  const char *at = memchr(p, '@', n); /* userinfo is not part of the host */
  if (at) n -= (size_t)(at + 1 - p), p = at + 1;
  dv_buf b;
  buf_init(&b);
  hreq_host(r, &b);
  int same = !buf_error(&b) && b.len == n && !memcmp(b.p, p, n);
  buf_free(&b);
  if (same) return 0;
  hres_errw(r, DV_EBAD_REQUEST, "Referer header must match host.");
  return -1;
}

/* One form file as a new store_att: gzip'd when compressible, in memory
 * when it fits, else through an upload (kept in *ups to free). */
static int form_att(hreq *r, const hatt_cfg *cfg, form_file *ff, store_att *out, store_att_upload **up) {
  memset(out, 0, sizeof *out);
  out->name = ff->name;
  out->name_len = ff->name_len;
  out->type = ff->type;
  out->type_len = strlen(ff->type);
  out->length = (int64_t)ff->data.len;
  int level = comp_level(cfg, ff->type);
  if (level) {
    dv_buf z;
    buf_init(&z);
    int rc = dv_gz_encode(ff->data.p ? ff->data.p : (const uint8_t *)"", ff->data.len, level, &z);
    if (rc) {
      buf_free(&z);
      return rc;
    }
    buf_free(&ff->data);
    ff->data = z;
    out->gzip = 1;
  }
  out->enc_length = (int64_t)ff->data.len;
  if (ff->data.len <= STORE_ATT_INLINE_MAX) {
    out->data = ff->data.p ? ff->data.p : (const uint8_t *)"";
    out->data_len = ff->data.len;
    return 0;
  }
  int rc = store_att_upload_begin(r->app->db, r->app->docid, r->app->docid_len, up);
  for (size_t off = 0; !rc && off < ff->data.len; off += ATT_PIECE) {
    size_t k = ff->data.len - off < ATT_PIECE ? ff->data.len - off : ATT_PIECE;
    rc = store_att_upload_write(*up, ff->data.p + off, k);
  }
  if (!rc) rc = store_att_upload_finish(*up, NULL, NULL);
  out->up = *up;
  return rc;
}

void hapi_doc_form(hreq *r) {
  if (api_docid_ok(r, r->app->docid, r->app->docid_len, 0)) return;
  const char *ct = hreq_hdr(r, "Content-Type");
  size_t n = strlen("multipart/form-data");
  if (!ct || strncasecmp(ct, "multipart/form-data", n) || (ct[n] && ct[n] != ';' && ct[n] != ' ')) {
    hres_errw(r, DV_EBAD_CONTENT_TYPE, "Content-Type must be multipart/form-data");
    return;
  }
  if (referer_ok(r) || write_allowed(r)) return;
  char bnd[MP_MAX_BOUNDARY + 1];
  if (mp_boundary(ct, bnd, sizeof bnd)) {
    hres_errw(r, DV_EBAD_REQUEST, "Invalid multipart/form-data: no boundary.");
    return;
  }
  form f;
  memset(&f, 0, sizeof f);
  f.r = r;
  f.tail = &f.files;
  hatt_cfg cfg;
  hatt_cfg_get(r, &cfg);
  f.max = max_size(&cfg);
  buf_init(&f.val);
  static const mp_callbacks cb = {fm_begin, fm_header, fm_headers_end, fm_data, fm_end};
  mp_parser *mp = NULL;
  store_att_upload **ups = NULL;
  size_t nf = 0;
  int rc = mp_new(bnd, &cb, &f, FORM_MAX_HEADER, FORM_MAX_PARTS, &mp);
  if (!rc) rc = mp_feed(mp, (const uint8_t *)(r->body ? r->body : ""), r->body_len);
  if (!rc) rc = mp_finish(mp);
  mp_free(mp);
  buf_free(&f.val);
  if (rc) {
    if (f.too_large) hres_errw(r, DV_EATT_TOO_LARGE, f.big);
    else if (rc == DV_EINVAL) hres_errw(r, DV_EBAD_REQUEST, "Invalid multipart/form-data body.");
    else hres_err(r, rc);
    goto out;
  }
  for (form_file *ff = f.files; ff; ff = ff->next) {
    nf++;
    if (name_ok(r, ff->name, ff->name_len)) goto out;
  }
  /* the document edited: _doc as sent, else the revision _rev names */
  json_val *doc = NULL;
  store_edit e;
  if (f.doc) {
    if (hreq_parse_json(r, f.doc, f.doc_len, &doc)) goto out;
    if (doc->type != JSON_OBJECT) {
      hres_errw(r, DV_EBAD_REQUEST, "Document must be a JSON object");
      goto out;
    }
    const char *qr;
    size_t qn;
    int have;
    if (write_rev(r, &qr, &qn, &have)) goto out;
    const json_val *br = json_obj_getz(doc, "_rev");
    if (have && !br && json_obj_setz(&r->a, doc, "_rev", json_new_string(&r->a, qr, qn))) {
      hres_err(r, DV_ENOMEM);
      goto out;
    }
    rc = store_edit_from_json(&r->a, doc, 1, &e);
    if (rc) {
      write_err(r, rc, NULL);
      goto out;
    }
    e.id = r->app->docid;
    e.id_len = r->app->docid_len;
    store_att *atts = arena_alloc(&r->a, (e.n_atts + nf + 1) * sizeof *atts);
    if (!atts) {
      hres_err(r, DV_ENOMEM);
      goto out;
    }
    memcpy(atts, e.atts, e.n_atts * sizeof *atts);
    e.atts = atts;
  } else {
    if (!f.rev || !rev_shape(f.rev, f.rev_len)) {
      hres_err(r, DV_EBAD_REV);
      goto out;
    }
    if (load_parent(r, f.rev, f.rev_len, 1, &doc)) goto out;
    rc = edit_from(r, doc, "", 0, &e);
    if (!rc && !(e.atts = arena_realloc(&r->a, e.atts, (e.n_atts + 1) * sizeof *e.atts,
                                        (e.n_atts + nf + 1) * sizeof *e.atts, 8)))
      rc = DV_ENOMEM;
    if (rc) {
      hres_err(r, rc);
      goto out;
    }
  }
  /* the files replace attachments of their names (the last of a name wins) */
  ups = dv_calloc(nf + 1, sizeof *ups);
  if (!ups) {
    hres_err(r, DV_ENOMEM);
    goto out;
  }
  size_t i = 0;
  for (form_file *ff = f.files; ff; ff = ff->next, i++) {
    size_t k = 0;
    for (size_t j = 0; j < e.n_atts; j++)
      if (!(e.atts[j].name_len == ff->name_len && !memcmp(e.atts[j].name, ff->name, ff->name_len)))
        e.atts[k++] = e.atts[j];
    e.n_atts = k;
    rc = form_att(r, &cfg, ff, &e.atts[e.n_atts++], &ups[i]);
    if (rc) {
      hres_err(r, rc);
      goto out;
    }
  }
  rc = att_update(r, &e);
  int own = !rc;
  if (!rc) rc = e.rc;
  if (rc) write_err(r, rc, own ? e.why : NULL);
  else send_written(r, 201, &e.rev);
out:
  for (size_t k = 0; ups && k < nf; k++) store_att_upload_free(ups[k]);
  dv_free(ups);
  for (form_file *ff = f.files; ff; ff = ff->next) buf_free(&ff->data);
}
