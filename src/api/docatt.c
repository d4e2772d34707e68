/* docatt.c — attachments at the document level: what the document endpoints
 * (api/doc.c), the bulk endpoints (api/bulk.c) and the changes feed
 * (api/changes.c) share once a document carries `_attachments`.
 *
 *   writes   hatt_prepare readies a store_edit's inline attachments the way
 *            CouchDB's couch_db:with_stream does: max_attachment_size,
 *            gzip for [attachments] compressible_types at
 *            compression_level (the stored digest is then the MD5 of the
 *            gzip bytes, as CouchDB's), and content past the store's
 *            per-edit memory budget goes through store_att_upload_*.
 *            hatt_mp_begin/feed/end read a multipart/related document
 *            body (couch_doc:doc_from_multi_part_stream) pushed piece by
 *            piece, from server.c's body sink or from r->body at once
 *            (hatt_mp_read): the JSON part, then one part per "follows"
 *            attachment, each checked and stored (in memory or a store
 *            upload) as it arrives. hatt_copy gives a COPY its source's
 *            content.
 *   reads    hatt_doc turns the store's stubs into inline "data" (identity
 *            bytes, base64) or "follows" stubs, honouring atts_since as
 *            couch_db:find_ancestor_rev_pos does; hatt_out streams a
 *            multipart answer (couch_httpd_multipart:encode_multipart_stream)
 *            through a feed, reading attachment content piecewise.
 *   errors   the reasons CouchDB gives: "Invalid attachment stub in ID for
 *            NAME", "Invalid attachment data for NAME", the attachment
 *            name for attachment_too_large.
 *
 * Not here: the standalone attachment endpoints (/{db}/{doc}/{att}), the
 * store's chunking and dedup (store/att.c), HTTP routing.
 */
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
#include "util/config.h"
#include "util/gz.h"
#include "util/md5.h"

#define DEFAULT_TYPES "text/*, application/javascript, application/json, application/xml"
#define READ_PIECE (256u << 10)   /* bytes per store_att_pread */
#define FEED_STEP (512u << 10)    /* output produced per feed step, at most about */
#define UP_PIECE (1u << 20)       /* bytes per store_att_upload_write */
#define MP_HEADER_MAX 16384       /* header bytes of one multipart part */

/* ---- small tools ---------------------------------------------------------- */

static const char *fmt(dv_arena *a, const char *f, const char *s, size_t n) {
  dv_buf b;
  buf_init(&b);
  const char *pct = strstr(f, "%s");
  buf_append(&b, f, (size_t)(pct - f));
  buf_append(&b, s, n);
  buf_puts(&b, pct + 2);
  char *out = buf_error(&b) ? NULL : arena_strndup(a, (const char *)b.p, b.len);
  buf_free(&b);
  return out;
}

/* A JSON string value over bytes already in the arena (no copy). */
static json_val *str_val(dv_arena *a, const char *s, size_t n) {
  json_val *v = arena_calloc(a, sizeof *v);
  if (!v) return NULL;
  v->type = JSON_STRING;
  v->u.s = s;
  v->len = n;
  return v;
}

/* Case-insensitive glob: '*' matches any run of bytes. */
static int glob_ci(const char *p, size_t pn, const char *s, size_t sn) {
  size_t pi = 0, si = 0, star = (size_t)-1, mark = 0;
  while (si < sn) {
    if (pi < pn && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (pi < pn && (p[pi] | 0x20) == (s[si] | 0x20) &&
               ((p[pi] >= 'A' && p[pi] <= 'Z') || (p[pi] >= 'a' && p[pi] <= 'z') || p[pi] == s[si])) {
      pi++;
      si++;
    } else if (star != (size_t)-1) {
      pi = star + 1;
      si = ++mark;
    } else {
      return 0;
    }
  }
  while (pi < pn && p[pi] == '*') pi++;
  return pi == pn;
}

static int is_sp(char c) { return c == ' ' || c == '\t'; }

/* couch_util:compressible_att_type: the media type (parameters dropped)
 * matches one of the comma-separated patterns, '*' a wildcard, case
 * ignored. */
static int compressible(const char *types, const char *ct, size_t cn) {
  size_t k = 0;
  while (k < cn && ct[k] != ';') k++;
  cn = k;
  while (cn && is_sp(ct[cn - 1])) cn--;
  while (cn && is_sp(*ct)) ct++, cn--;
  const char *p = types;
  while (p && *p) {
    while (*p == ',' || is_sp(*p)) p++;
    const char *e = p;
    while (*e && *e != ',') e++;
    const char *t = e;
    while (t > p && is_sp(t[-1])) t--;
    if (t > p && glob_ci(p, (size_t)(t - p), ct, cn)) return 1;
    p = e;
  }
  return 0;
}

/* ---- per-request write state ------------------------------------------------ */

void hatt_cfg_get(hreq *r, hatt_cfg *out) {
  dv_config *c = api_config(r);
  long long lv = config_get_int(c, "attachments", "compression_level", DV_GZ_LEVEL);
  out->level = lv < 0 ? 0 : lv > 9 ? 9 : (int)lv;
  char *v = config_get(c, "couchdb", "max_attachment_size");
  out->max_size = STORE_DEFAULT_MAX_ATT;
  if (v && !strcmp(v, "infinity")) out->max_size = INT64_MAX;
  else if (v) out->max_size = config_get_int(c, "couchdb", "max_attachment_size", STORE_DEFAULT_MAX_ATT);
  dv_free(v);
  v = config_get(c, "attachments", "compressible_types");
  const char *t = v ? v : DEFAULT_TYPES;
  out->types = arena_strndup(&r->a, t, strlen(t));
  if (!out->types) out->types = DEFAULT_TYPES;
  dv_free(v);
}

int hatt_compressible(const hatt_cfg *c, const char *type, size_t n) {
  return c->level > 0 && compressible(c->types, type, n);
}

struct hatt_w {
  hreq *r;                  /* the request */
  int level;                /* [attachments] compression_level, 0 = off */
  int64_t max_size;         /* [couchdb] max_attachment_size */
  const char *types;        /* [attachments] compressible_types (arena) */
  store_att_upload **ups;   /* uploads begun, freed by hatt_w_done */
  size_t n_ups, cap_ups;
  void **blocks;            /* dv_malloc'd content handed to edits */
  size_t n_blocks, cap_blocks;
  hatt_w *next;             /* the request's others (r->app->att_w) */
};

hatt_w *hatt_w_new(hreq *r) {
  hatt_w *w = arena_calloc(&r->a, sizeof *w);
  if (!w) return NULL;
  w->r = r;
  w->next = r->app->att_w; /* hatt_w_done runs again at the request's end (route.c) */
  r->app->att_w = w;
  hatt_cfg c;
  hatt_cfg_get(r, &c);
  w->level = c.level;
  w->max_size = c.max_size;
  w->types = c.types;
  return w;
}

hatt_w *hatt_w_next(hatt_w *w) { return w->next; }

void hatt_w_done(hatt_w *w) {
  if (!w) return;
  for (size_t i = 0; i < w->n_ups; i++) store_att_upload_free(w->ups[i]);
  for (size_t i = 0; i < w->n_blocks; i++) dv_free(w->blocks[i]);
  dv_free(w->ups);
  dv_free(w->blocks);
  w->ups = NULL;
  w->blocks = NULL;
  w->n_ups = w->n_blocks = 0;
}

static int keep_up(hatt_w *w, store_att_upload *u) {
  if (w->n_ups == w->cap_ups) {
    size_t nc = w->cap_ups ? 2 * w->cap_ups : 8;
    void *p = dv_realloc(w->ups, nc * sizeof *w->ups);
    if (!p) return DV_ENOMEM;
    w->ups = p;
    w->cap_ups = nc;
  }
  w->ups[w->n_ups++] = u;
  return 0;
}

static int keep_block(hatt_w *w, void *b) {
  if (w->n_blocks == w->cap_blocks) {
    size_t nc = w->cap_blocks ? 2 * w->cap_blocks : 8;
    void *p = dv_realloc(w->blocks, nc * sizeof *w->blocks);
    if (!p) {
      dv_free(b);
      return DV_ENOMEM;
    }
    w->blocks = p;
    w->cap_blocks = nc;
  }
  w->blocks[w->n_blocks++] = b;
  return 0;
}

/* The bytes of b become the edit's (kept until hatt_w_done). */
static int take_buf(hatt_w *w, dv_buf *b, const uint8_t **out, size_t *out_n) {
  if (buf_error(b)) return DV_ENOMEM;
  size_t n = 0;
  uint8_t *p = buf_detach(b, &n);
  if (!p) {
    *out = (const uint8_t *)"";
    *out_n = 0;
    return 0;
  }
  int rc = keep_block(w, p);
  if (rc) return rc;
  *out = p;
  *out_n = n;
  return 0;
}

static int upload_bytes(hatt_w *w, const store_edit *e, store_att *a) {
  store_att_upload *u;
  int rc = store_att_upload_begin(w->r->app->db, e->id, e->id_len, &u);
  if (rc) return rc;
  if ((rc = keep_up(w, u))) {
    store_att_upload_free(u);
    return rc;
  }
  for (size_t off = 0; !rc && off < a->data_len; off += UP_PIECE) {
    size_t n = a->data_len - off < UP_PIECE ? a->data_len - off : UP_PIECE;
    rc = store_att_upload_write(u, a->data + off, n);
  }
  int64_t len;
  if (!rc) rc = store_att_upload_finish(u, &len, NULL);
  if (rc) return rc;
  a->up = u;
  a->data = NULL;
  a->data_len = 0;
  return 0;
}

static int gzip_of(int level, const uint8_t *p, size_t n, dv_buf *out) {
  buf_init(out);
  int rc = dv_gz_encode(p, n, level, out);
  if (!rc && buf_error(out)) rc = DV_ENOMEM;
  if (rc) buf_free(out);
  return rc;
}

static int name_why(hatt_w *w, const store_att *a, const char **why) {
  *why = arena_strndup(&w->r->a, a->name, a->name_len);
  return DV_EATT_TOO_LARGE;
}

int hatt_prepare(hatt_w *w, store_edit *e, const char **why) {
  *why = NULL;
  size_t budget = 0; /* stored bytes already given in memory */
  for (size_t i = 0; i < e->n_atts; i++)
    if (!e->atts[i].stub && e->atts[i].follows && e->atts[i].data) budget += e->atts[i].data_len;
  for (size_t i = 0; i < e->n_atts; i++) {
    store_att *a = &e->atts[i];
    if (a->stub) continue;
    if (a->follows) {
      if (a->data || a->up) continue; /* hatt_mp_read gave it */
      *why = fmt(&w->r->a, "Attachment %s is marked \"follows\" but the request is not multipart/related", a->name,
                 a->name_len);
      return DV_EBAD_ATT;
    }
    if ((int64_t)a->data_len > w->max_size) return name_why(w, a, why);
    a->has_md5 = 0; /* CouchDB ignores a digest sent with inline data */
    a->length = (int64_t)a->data_len;
    a->gzip = 0;
    if (w->level > 0 && compressible(w->types, a->type, a->type_len)) {
      dv_buf g;
      int rc = gzip_of(w->level, a->data, a->data_len, &g);
      if (!rc) rc = take_buf(w, &g, &a->data, &a->data_len);
      if (rc) return rc;
      a->gzip = 1;
    }
    a->enc_length = (int64_t)a->data_len;
    if (budget + a->data_len > STORE_ATT_INLINE_MAX) {
      int rc = upload_bytes(w, e, a);
      if (rc) return rc;
    } else {
      budget += a->data_len;
    }
  }
  return 0;
}

/* ---- errors ----------------------------------------------------------------- */

/* Why store_edit_from_json refused the _attachments of doc, in CouchDB's
 * words (couch_att:from_json, chttpd_db:validate_attachment_name). */
static const char *bad_att_reason(hreq *r, const json_val *doc) {
  const json_val *atts = doc ? json_obj_getz(doc, "_attachments") : NULL;
  if (!atts || atts->type != JSON_OBJECT) return NULL;
  for (size_t i = 0; i < atts->len; i++) {
    const json_member *m = &atts->u.members[i];
    if (m->klen == 0) return "Attachment name must not be empty";
    if (m->key[0] == '_')
      return fmt(&r->a, "Attachment name '%s' starts with prohibited character '_'", m->key, m->klen);
    if (json_utf8_check(m->key, m->klen, NULL)) return "Attachment name is not UTF-8 encoded";
    const json_val *v = m->val;
    if (v->type != JSON_OBJECT) return fmt(&r->a, "Invalid attachment: %s", m->key, m->klen);
    const json_val *st = json_obj_getz(v, "stub"), *fo = json_obj_getz(v, "follows");
    if ((st && st->type == JSON_BOOL && st->b) || (fo && fo->type == JSON_BOOL && fo->b)) continue;
    const json_val *d = json_obj_getz(v, "data");
    int bad = !d || d->type != JSON_STRING;
    if (!bad) {
      uint8_t *tmp = dv_malloc(dv_b64_decoded_max(d->len) + 1);
      size_t n;
      bad = !tmp || dv_b64_decode(d->u.s, d->len, 0, tmp, &n) != 0;
      dv_free(tmp);
    }
    if (bad) return fmt(&r->a, "Invalid attachment data for %s", m->key, m->klen);
  }
  return NULL;
}

static int att_named(const store_att *v, size_t n, const store_att *a) {
  for (size_t i = 0; i < n; i++)
    if (v[i].name_len == a->name_len && !memcmp(v[i].name, a->name, a->name_len) &&
        (!a->has_md5 || !memcmp(v[i].md5, a->md5, 16)))
      return 1;
  return 0;
}

/* The first stub of e that the revision(s) it may come from lack. */
static const store_att *missing_stub(hreq *r, const store_edit *e) {
  store_att *have = NULL;
  size_t n_have = 0;
  if (e->path_len) { /* replication: any leaf's attachment of that name */
    store_leaf *lv;
    size_t nl;
    if (!store_doc_leaves(r->app->db, e->id, e->id_len, &r->a, &lv, &nl)) {
      size_t cap = 0;
      for (size_t i = 0; i < nl; i++) {
        store_att *v;
        size_t n;
        if (store_doc_atts(r->app->db, e->id, e->id_len, &lv[i].rev, &r->a, NULL, &v, &n) || !n) continue;
        store_att *all = arena_alloc(&r->a, (cap + n) * sizeof *all);
        if (!all) break;
        if (n_have) memcpy(all, have, n_have * sizeof *all);
        memcpy(all + n_have, v, n * sizeof *all);
        have = all;
        n_have += n;
        cap += n;
      }
    }
  } else if (e->parent.pos) {
    if (store_doc_atts(r->app->db, e->id, e->id_len, &e->parent, &r->a, NULL, &have, &n_have)) n_have = 0;
  }
  const store_att *first = NULL;
  for (size_t i = 0; i < e->n_atts; i++) {
    const store_att *a = &e->atts[i];
    if (!a->stub) continue;
    if (!first) first = a;
    if (!att_named(have, n_have, a)) return a;
  }
  return first;
}

const char *hatt_reason(hreq *r, int rc, const json_val *doc, const store_edit *e) {
  if (e && e->why) return e->why; /* a write hook's refusal */
  if (rc == DV_EBAD_ATT) return bad_att_reason(r, doc);
  if (rc == DV_EMISSING_STUB && e && e->id) {
    const store_att *a = missing_stub(r, e);
    if (!a) return fmt(&r->a, "Previous revision missing for document %s", e->id, e->id_len);
    dv_buf b;
    buf_init(&b);
    buf_puts(&b, "Invalid attachment stub in ");
    buf_append(&b, e->id, e->id_len);
    buf_puts(&b, " for ");
    buf_append(&b, a->name, a->name_len);
    const char *s = buf_error(&b) ? NULL : arena_strndup(&r->a, (const char *)b.p, b.len);
    buf_free(&b);
    return s;
  }
  return NULL;
}

/* ---- multipart/related document bodies ------------------------------------- */

enum { MP_STOP = 1 }; /* a callback's "stop": the error is in the state */

struct hatt_mp {
  hatt_w *w;                /* the write's attachment state (its request, config, uploads) */
  hatt_doc_fn fn;           /* parses the JSON part */
  void *arg;                /* fn's argument */
  mp_parser *p;             /* the multipart parser (multipart.h) */
  store_edit *e;            /* fn's edit */
  size_t parts;             /* parts begun */
  int json_ok;              /* the first part is application/json */
  size_t max_json;          /* bytes the JSON part may have */
  dv_buf json;              /* the first part's bytes */
  size_t *fol;              /* indices in e->atts of the "follows" ones */
  size_t n_fol;             /* how many */
  size_t budget;            /* stored bytes given in memory so far */
  uint64_t total;           /* body bytes fed so far */
  uint64_t limit;           /* body bytes allowed: max_json, then plus each
                               follows part's declared length */
  int failed;               /* an error was written: feed no more */
  /* the attachment part being read */
  store_att *cur;           /* its attachment */
  int gz_in;                /* sent gzip-encoded ("encoding":"gzip") */
  int64_t want;             /* bytes the part must have */
  int64_t got;              /* bytes it had so far */
  dv_md5 md5;               /* of the bytes as sent */
  int has_pmd5;             /* the part carried Content-MD5 */
  uint8_t pmd5[16];         /* its digest */
  dv_gz *check;             /* gz_in: a decoder proving the gzip and its length */
  dv_gz *enc;               /* identity content of a compressible type: the encoder */
  dv_buf mem;               /* stored bytes kept in memory … */
  store_att_upload *up;     /* … or streamed into an upload */
  int64_t stored;           /* stored bytes so far */
  /* the error */
  int rc;                   /* 0: none yet; else its DV_E* code (util/err.h) */
  const char *reason;       /* and its reason (arena or static) */
  int answered;             /* fn wrote the answer itself */
};

typedef struct hatt_mp mpr;

/* Framing bytes allowed besides the JSON and the declared attachment
 * lengths: the preamble, the JSON part's headers and the epilogue, then
 * per attachment part its delimiter and header block. */
#define MP_SLACK (MP_HEADER_MAX + 4096u)

static uint64_t add_sat(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }


/* The first error stops the parse; mp_answer writes it with rc's row.
 * reason NULL (a message that could not be built): "Invalid multipart
 * body.". */
static int mp_fail(mpr *m, int rc, const char *reason) {
  if (!m->rc && !m->answered) {
    m->rc = rc;
    m->reason = reason;
  }
  return MP_STOP;
}

static int mp_fail_rc(mpr *m, int rc) { return mp_fail(m, rc, dv_strerror(rc)); }

static const char *att_fmt(mpr *m, const char *f) { return fmt(&m->w->r->a, f, m->cur->name, m->cur->name_len); }

static int mp_part_begin(void *arg) {
  mpr *m = arg;
  m->parts++;
  if (m->parts == 1) return 0;
  size_t k = m->parts - 2;
  if (!m->e || k >= m->n_fol)
    return mp_fail(m, DV_EBAD_REQUEST, "The body has more parts than attachments marked \"follows\".");
  store_att *a = m->cur = &m->e->atts[m->fol[k]];
  hatt_w *w = m->w;
  m->gz_in = a->gzip;
  m->want = a->gzip ? a->enc_length : a->length;
  m->got = m->stored = 0;
  m->has_pmd5 = 0;
  if (m->want < 0) return mp_fail(m, DV_EBAD_REQUEST, att_fmt(m, "Attachment %s has no valid length."));
  if (m->want > w->max_size) return mp_fail(m, DV_EATT_TOO_LARGE, att_fmt(m, "%s"));
  dv_md5_init(&m->md5);
  int rc = 0;
  if (m->gz_in) rc = dv_gz_open(0, 0, (uint64_t)(a->length > 0 ? a->length : 0) + 1, &m->check);
  else if (w->level > 0 && compressible(w->types, a->type, a->type_len)) rc = dv_gz_open(1, w->level, 0, &m->enc);
  if (rc) return mp_fail_rc(m, rc);
  uint64_t bound = (uint64_t)m->want + (m->enc ? (uint64_t)m->want / 1000 + 64 : 0);
  buf_init(&m->mem);
  if (m->budget + bound > STORE_ATT_INLINE_MAX) {
    rc = store_att_upload_begin(w->r->app->db, m->e->id, m->e->id_len, &m->up);
    if (!rc && (rc = keep_up(w, m->up))) store_att_upload_free(m->up);
    if (rc) {
      m->up = NULL;
      return mp_fail_rc(m, rc);
    }
  }
  return 0;
}

static int mp_header(void *arg, const char *name, size_t nl, const char *value, size_t vl) {
  mpr *m = arg;
  if (m->parts == 1 && nl == 12 && !strncasecmp(name, "Content-Type", 12))
    m->json_ok = hparse_media_is(value, vl, "application/json");
  if (m->parts > 1 && nl == 11 && !strncasecmp(name, "Content-MD5", 11)) {
    /* a part's own digest of its bytes as sent, checked as the
     * standalone PUT checks Content-MD5 */
    uint8_t d[64];
    size_t dn = 0;
    if (vl > 64 || dv_b64_decode(value, vl, 0, d, &dn) || dn != 16)
      return mp_fail(m, DV_ECONTENT_MD5, "Possible message corruption.");
    memcpy(m->pmd5, d, 16);
    m->has_pmd5 = 1;
  }
  return 0;
}

static int mp_headers_end(void *arg) {
  mpr *m = arg;
  if (m->parts == 1 && !m->json_ok) return mp_fail(m, DV_EBAD_CONTENT_TYPE, "Content-Type must be application/json");
  return 0;
}

/* Stored bytes of the current part: into memory or the upload. */
static int mp_store(void *arg, const uint8_t *p, size_t n) {
  mpr *m = arg;
  m->stored += (int64_t)n;
  if (m->up) return store_att_upload_write(m->up, p, n);
  buf_append(&m->mem, p, n);
  return buf_error(&m->mem) ? DV_ENOMEM : 0;
}

static int mp_discard(void *arg, const uint8_t *p, size_t n) {
  (void)arg, (void)p, (void)n;
  return 0;
}

static int mp_data(void *arg, const uint8_t *p, size_t n) {
  mpr *m = arg;
  if (m->parts == 1) {
    if (m->json.len + n > m->max_json) return mp_fail(m, DV_EBODY_TOO_LARGE, "the request entity is too large");
    buf_append(&m->json, p, n);
    return buf_error(&m->json) ? mp_fail_rc(m, DV_ENOMEM) : 0;
  }
  m->got += (int64_t)n;
  if (m->got > m->want)
    return mp_fail(m, DV_EBAD_REQUEST, att_fmt(m, "The part of attachment %s is longer than its length."));
  dv_md5_update(&m->md5, p, n);
  int rc = 0;
  if (m->check) {
    rc = dv_gz_write(m->check, p, n, 0, mp_discard, NULL);
    if (rc) return mp_fail(m, DV_EBAD_REQUEST, att_fmt(m, "Attachment %s is not valid gzip data."));
  }
  rc = m->enc ? dv_gz_write(m->enc, p, n, 0, mp_store, m) : mp_store(m, p, n);
  return rc ? mp_fail_rc(m, rc) : 0;
}

static int mp_doc_end(mpr *m) {
  if (!m->json_ok) return mp_fail(m, DV_EBAD_CONTENT_TYPE, "Content-Type must be application/json");
  /* the JSON values point into the part's bytes: they live as the edit does */
  const uint8_t *js;
  size_t jn;
  int rc = take_buf(m->w, &m->json, &js, &jn);
  if (rc) return mp_fail_rc(m, rc);
  if (m->fn(m->arg, (const char *)js, jn, &m->e)) {
    m->answered = 1;
    return MP_STOP;
  }
  store_edit *e = m->e;
  m->fol = arena_alloc(&m->w->r->a, (e->n_atts ? e->n_atts : 1) * sizeof *m->fol);
  if (!m->fol) return mp_fail_rc(m, DV_ENOMEM);
  for (size_t i = 0; i < e->n_atts; i++) {
    const store_att *a = &e->atts[i];
    if (!a->follows || a->stub) continue;
    m->fol[m->n_fol++] = i;
    int64_t want = a->gzip ? a->enc_length : a->length; /* a bad one fails when its part begins */
    m->limit = add_sat(add_sat(m->limit, want > 0 ? (uint64_t)want : 0), MP_SLACK);
  }
  return 0;
}

static int mp_part_end(void *arg) {
  mpr *m = arg;
  if (m->parts == 1) return mp_doc_end(m);
  store_att *a = m->cur;
  if (m->got != m->want)
    return mp_fail(m, DV_EBAD_REQUEST, att_fmt(m, "The part of attachment %s is shorter than its length."));
  int rc;
  if (m->check) {
    rc = dv_gz_write(m->check, NULL, 0, 1, mp_discard, NULL);
    uint64_t idl = dv_gz_total_out(m->check);
    dv_gz_close(m->check);
    m->check = NULL;
    if (rc || idl != (uint64_t)a->length)
      return mp_fail(m, DV_EBAD_REQUEST, att_fmt(m, "Attachment %s is not gzip data of its length."));
  }
  if (m->enc) {
    rc = dv_gz_write(m->enc, NULL, 0, 1, mp_store, m);
    dv_gz_close(m->enc);
    m->enc = NULL;
    if (rc) return mp_fail_rc(m, rc);
    a->gzip = 1;
  }
  uint8_t md5[16];
  dv_md5_final(&m->md5, md5);
  if ((a->has_md5 && memcmp(md5, a->md5, 16)) || (m->has_pmd5 && memcmp(md5, m->pmd5, 16)))
    return mp_fail(m, DV_ECONTENT_MD5, "Possible message corruption.");
  a->has_md5 = 0; /* checked against the bytes sent; the store digests what it keeps */
  if (!m->gz_in) a->length = m->got;
  a->enc_length = m->stored;
  if (m->up) {
    int64_t len;
    rc = store_att_upload_finish(m->up, &len, NULL);
    if (rc) return mp_fail_rc(m, rc);
    a->up = m->up;
    a->data = NULL;
    a->data_len = 0;
    m->up = NULL;
  } else {
    rc = take_buf(m->w, &m->mem, &a->data, &a->data_len);
    if (rc) return mp_fail_rc(m, rc);
    if (!a->data) a->data = (const uint8_t *)"";
    m->budget += a->data_len;
  }
  m->cur = NULL;
  return 0;
}

/* Write the error that stopped the parse (rc: mp_feed's or mp_finish's). */
static void mp_answer(mpr *m, int rc) {
  hreq *r = m->w->r;
  m->failed = 1;
  if (m->answered) return; /* fn answered */
  if (m->rc) hres_errw(r, m->rc, m->reason ? m->reason : "Invalid multipart body.");
  else if (rc == DV_EVALUE_TOO_LARGE) hres_errw(r, DV_EBODY_TOO_LARGE, "A part's headers are too large.");
  else if (rc == DV_ENOMEM) hres_err(r, rc);
  else hres_errw(r, DV_EBAD_REQUEST, "Malformed or truncated multipart/related body.");
}

int hatt_mp_begin(hatt_w *w, const char *ctype, size_t max_json, hatt_doc_fn fn, void *arg, hatt_mp **out) {
  hreq *r = w->r;
  char bnd[MP_MAX_BOUNDARY + 1];
  if (mp_boundary(ctype, bnd, sizeof bnd)) {
    hres_errw(r, DV_EBAD_REQUEST, "Content-Type multipart/related needs a valid boundary parameter.");
    return -1;
  }
  mpr *m = dv_calloc(1, sizeof *m);
  if (!m) {
    hres_err(r, DV_ENOMEM);
    return -1;
  }
  m->w = w;
  m->fn = fn;
  m->arg = arg;
  m->max_json = max_json;
  m->limit = add_sat(max_json, MP_SLACK);
  buf_init(&m->json);
  buf_init(&m->mem);
  static const mp_callbacks cb = {mp_part_begin, mp_header, mp_headers_end, mp_data, mp_part_end};
  int rc = mp_new(bnd, &cb, m, MP_HEADER_MAX, 0, &m->p);
  if (rc) {
    hatt_mp_free(m);
    hres_err(r, rc);
    return -1;
  }
  *out = m;
  return 0;
}

int hatt_mp_feed(hatt_mp *m, const uint8_t *p, size_t n) {
  if (m->failed) return -1;
  int rc = mp_feed(m->p, p, n);
  m->total = add_sat(m->total, n);
  /* checked after the piece: the JSON part's end, inside it, raises the
   * limit by the lengths it declares */
  if (!rc && m->total > m->limit) rc = mp_fail(m, DV_EBODY_TOO_LARGE, "the request entity is too large");
  if (rc) {
    mp_answer(m, rc);
    return -1;
  }
  return 0;
}

int hatt_mp_end(hatt_mp *m, store_edit **out) {
  hreq *r = m->w->r;
  if (m->failed) return -1;
  int rc = mp_finish(m->p);
  if (rc) {
    mp_answer(m, rc);
    return -1;
  }
  m->failed = 1; /* whatever follows, the parse is over */
  if (!m->e) {
    hres_errw(r, DV_EBAD_REQUEST, "The multipart/related body has no document part.");
    return -1;
  }
  if (m->parts - 1 != m->n_fol) {
    hres_errw(r, DV_EBAD_REQUEST, "The body has fewer parts than attachments marked \"follows\".");
    return -1;
  }
  *out = m->e;
  return 0;
}

void hatt_mp_free(hatt_mp *m) {
  if (!m) return;
  mp_free(m->p);
  dv_gz_close(m->check);
  dv_gz_close(m->enc);
  buf_free(&m->json);
  buf_free(&m->mem);
  dv_free(m); /* an upload begun is the hatt_w's (hatt_w_done frees it) */
}

int hatt_mp_read(hatt_w *w, const char *ctype, hatt_doc_fn fn, void *arg, store_edit **out) {
  hreq *r = w->r;
  hatt_mp *m;
  if (hatt_mp_begin(w, ctype, api_srv_of(r)->max_body, fn, arg, &m)) return -1;
  int rc = hatt_mp_feed(m, (const uint8_t *)(r->body ? r->body : ""), r->body_len);
  if (!rc) rc = hatt_mp_end(m, out);
  hatt_mp_free(m);
  return rc;
}

/* ---- COPY ---------------------------------------------------------------------- */

int hatt_copy(hatt_w *w, const char *src_id, size_t src_n, const store_rev *src_rev, store_edit *e) {
  hreq *r = w->r;
  int any = 0;
  for (size_t i = 0; i < e->n_atts; i++) any |= e->atts[i].stub;
  if (!any) return 0;
  store_att *v;
  size_t n;
  int rc = store_doc_atts(r->app->db, src_id, src_n, src_rev, &r->a, NULL, &v, &n);
  if (rc) return rc;
  size_t budget = 0;
  for (size_t i = 0; i < e->n_atts; i++) {
    store_att *a = &e->atts[i];
    if (!a->stub) continue;
    const store_att *s = NULL;
    for (size_t k = 0; k < n && !s; k++)
      if (v[k].name_len == a->name_len && !memcmp(v[k].name, a->name, a->name_len)) s = &v[k];
    if (!s) return DV_EMISSING_STUB;
    int big = budget + (uint64_t)s->enc_length > STORE_ATT_INLINE_MAX;
    store_att_upload *u = NULL;
    dv_buf b;
    buf_init(&b);
    if (big) {
      if ((rc = store_att_upload_begin(r->app->db, e->id, e->id_len, &u))) return rc;
      if ((rc = keep_up(w, u))) {
        store_att_upload_free(u);
        return rc;
      }
    }
    uint8_t *piece = big ? dv_malloc(READ_PIECE) : NULL;
    if (big && !piece) return DV_ENOMEM;
    for (int64_t off = 0; !rc && off < s->enc_length;) {
      size_t want = (size_t)(s->enc_length - off < READ_PIECE ? s->enc_length - off : READ_PIECE), got = 0;
      uint8_t *p = big ? piece : buf_extend(&b, want);
      if (!p) rc = DV_ENOMEM;
      if (!rc) rc = store_att_pread(r->app->db, src_id, src_n, s, off, p, want, &got);
      if (!rc && got != want) rc = DV_EATT_GONE;
      if (!rc && big) rc = store_att_upload_write(u, p, got);
      off += (int64_t)want;
    }
    dv_free(piece);
    int64_t len;
    if (!rc && big) rc = store_att_upload_finish(u, &len, NULL);
    if (!rc && !big) rc = take_buf(w, &b, &a->data, &a->data_len);
    buf_free(&b);
    if (rc) return rc;
    if (big) a->up = u;
    else if (!a->data) a->data = (const uint8_t *)"";
    budget += big ? 0 : a->data_len;
    a->stub = 0;
    a->follows = 1; /* content given: hatt_prepare leaves it as it is */
    a->has_md5 = 0;
    a->gzip = s->gzip;
    a->length = s->length;
    a->enc_length = s->enc_length;
    a->type = s->type;
    a->type_len = s->type_len;
  }
  return 0;
}

/* ---- reads ------------------------------------------------------------------------ */

/* couch_db:find_ancestor_rev_pos: the position of the newest rev of doc's
 * history (rev, then its ancestors) that `since` names; 0 if none. */
static int since_pos(store_db *db, dv_arena *a, const char *id, size_t n, const store_rev *rev, const json_val *since,
                     int64_t *out) {
  *out = 0;
  store_rev *sv = arena_alloc(a, since->len * sizeof *sv);
  size_t ns = 0;
  if (!sv) return DV_ENOMEM;
  for (size_t i = 0; i < since->len; i++) {
    const json_val *s = since->u.items[i];
    if (s->type == JSON_STRING && !store_rev_parse(s->u.s, s->len, a, &sv[ns])) ns++;
  }
  if (!ns) return 0;
  store_leaf *lv;
  size_t nl;
  int rc = store_doc_leaves(db, id, n, a, &lv, &nl);
  if (rc) return rc == DV_ENOT_FOUND ? 0 : rc;
  for (size_t i = 0; i < nl; i++) {
    if (store_rev_cmp(&lv[i].rev, rev)) continue;
    for (size_t k = 0; k <= lv[i].n_anc; k++) {
      const store_rev *p = k ? &lv[i].anc[k - 1] : &lv[i].rev;
      for (size_t j = 0; j < ns; j++)
        if (!store_rev_cmp(p, &sv[j])) {
          *out = p->pos;
          return 0;
        }
    }
    break;
  }
  return 0;
}

/* The identity bytes of an attachment, base64, as a JSON string in a. */
static int data_val(store_db *db, dv_arena *a, const char *id, size_t n, const store_att *s, json_val **out) {
  dv_buf b, d;
  buf_init(&b);
  buf_init(&d);
  int rc = 0;
  for (int64_t off = 0; !rc && off < s->enc_length;) {
    size_t want = (size_t)(s->enc_length - off < READ_PIECE ? s->enc_length - off : READ_PIECE), got = 0;
    uint8_t *p = buf_extend(&b, want);
    rc = p ? store_att_pread(db, id, n, s, off, p, want, &got) : DV_ENOMEM;
    if (!rc && got != want) rc = DV_EATT_GONE;
    off += (int64_t)want;
  }
  const dv_buf *id_bytes = &b;
  if (!rc && s->gzip) {
    rc = dv_gz_decode(b.p, b.len, (uint64_t)(s->length > 0 ? s->length : 0), &d);
    if (rc == DV_EINVAL || rc == DV_ERANGE) rc = DV_ECORRUPT;
    id_bytes = &d;
  }
  if (!rc && buf_error(id_bytes)) rc = DV_ENOMEM;
  if (!rc) {
    size_t el = dv_b64_encoded_len(id_bytes->len, 0);
    char *s64 = arena_alloc(a, el + 1);
    if (!s64) rc = DV_ENOMEM;
    else {
      dv_b64_encode(id_bytes->len ? id_bytes->p : (const uint8_t *)"", id_bytes->len, 0, s64);
      *out = str_val(a, s64, el);
      if (!*out) rc = DV_ENOMEM;
    }
  }
  buf_free(&b);
  buf_free(&d);
  return rc;
}

static int copy_member(dv_arena *a, json_val *to, const json_val *from, const char *k) {
  json_val *v = json_obj_getz(from, k);
  return v ? json_obj_setz(a, to, k, v) : 0;
}

int hatt_doc(store_db *db, dv_arena *a, json_val *doc, const hatt_ro *o, store_att **out_send, size_t *out_n) {
  if (out_send) *out_send = NULL;
  if (out_n) *out_n = 0;
  json_val *atts = doc && doc->type == JSON_OBJECT ? json_obj_getz(doc, "_attachments") : NULL;
  if (!o->data || !atts || atts->type != JSON_OBJECT || !atts->len) return 0;
  const json_val *idv = json_obj_getz(doc, "_id"), *rv = json_obj_getz(doc, "_rev");
  if (!idv || idv->type != JSON_STRING || !rv || rv->type != JSON_STRING) return 0;
  const char *id = idv->u.s;
  size_t idn = idv->len;
  store_rev rev;
  if (store_rev_parse(rv->u.s, rv->len, a, &rev)) return 0;
  store_att *sa;
  size_t nsa;
  int rc = store_doc_atts(db, id, idn, &rev, a, NULL, &sa, &nsa);
  if (rc == DV_ENOT_FOUND) rc = DV_EATT_GONE; /* the leaf was replaced since doc was read */
  if (rc) return rc;
  int64_t since = 0;
  if (o->since && o->since->type == JSON_ARRAY && o->since->len &&
      (rc = since_pos(db, a, id, idn, &rev, o->since, &since)))
    return rc;
  store_att *send = arena_alloc(a, (nsa ? nsa : 1) * sizeof *send);
  json_val *nat = json_new_object(a);
  if (!send || !nat) return DV_ENOMEM;
  size_t ns = 0;
  for (size_t i = 0; i < atts->len; i++) {
    const json_member *m = &atts->u.members[i];
    const store_att *s = NULL;
    for (size_t k = 0; k < nsa && !s; k++)
      if (sa[k].name_len == m->klen && !memcmp(sa[k].name, m->key, m->klen)) s = &sa[k];
    if (!s || s->revpos <= since || m->val->type != JSON_OBJECT) {
      if ((rc = json_obj_set(a, nat, m->key, m->klen, m->val))) return rc;
      continue;
    }
    const json_val *st = m->val;
    json_val *na = json_new_object(a);
    if (!na) return DV_ENOMEM;
    if ((rc = copy_member(a, na, st, "content_type")) || (rc = copy_member(a, na, st, "revpos")) ||
        (rc = copy_member(a, na, st, "digest")))
      return rc;
    if (o->follows) {
      if ((rc = json_obj_setz(a, na, "length", json_new_int(a, s->length))) ||
          (rc = json_obj_setz(a, na, "follows", json_new_bool(a, 1))))
        return rc;
      if (s->gzip && ((rc = json_obj_setz(a, na, "encoding", json_new_stringz(a, "gzip"))) ||
                      (rc = json_obj_setz(a, na, "encoded_length", json_new_int(a, s->enc_length)))))
        return rc;
      send[ns++] = *s;
    } else {
      json_val *d;
      if ((rc = data_val(db, a, id, idn, s, &d)) || (rc = json_obj_setz(a, na, "data", d)) ||
          (rc = copy_member(a, na, st, "encoding")) || (rc = copy_member(a, na, st, "encoded_length")))
        return rc;
    }
    if ((rc = json_obj_set(a, nat, m->key, m->klen, na))) return rc;
  }
  if ((rc = json_obj_setz(a, doc, "_attachments", nat))) return rc;
  if (out_send) *out_send = send;
  if (out_n) *out_n = ns;
  return 0;
}

int hatt_accepts(hreq *r, const char *type) { return hparse_accepts(hreq_hdr(r, "Accept"), type); }

/* ---- streamed multipart answers --------------------------------------------------- */

typedef struct oseg {
  size_t off, n;            /* literal: bytes [off, off+n) of lit */
  const store_att *att;     /* or an attachment's stored bytes */
  const char *id;           /* its document */
  size_t id_len;
} oseg;

struct hatt_out {
  store_db *db;             /* our own handle */
  dv_arena a;               /* attachments and ids */
  dv_buf lit;               /* every literal byte */
  oseg *seg;
  size_t n_seg, cap_seg;
  size_t at;                /* segment being sent */
  int64_t off;              /* bytes of it sent */
};

int hatt_out_new(hreq *r, hatt_out **out) {
  hatt_out *o = dv_calloc(1, sizeof *o);
  if (!o) return DV_ENOMEM;
  arena_init(&o->a, 0);
  buf_init(&o->lit);
  int rc = store_db_open(api_store(r), r->app->db_name, &o->db);
  if (rc) {
    dv_free(o);
    return rc;
  }
  *out = o;
  return 0;
}

void hatt_out_free(hatt_out *o) {
  if (!o) return;
  store_db_close(o->db);
  arena_free(&o->a);
  buf_free(&o->lit);
  dv_free(o->seg);
  dv_free(o);
}

void hatt_boundary(char out[33]) { api_uuid(out); }

static oseg *seg_new(hatt_out *o) {
  if (o->n_seg == o->cap_seg) {
    size_t nc = o->cap_seg ? 2 * o->cap_seg : 16;
    oseg *p = dv_realloc(o->seg, nc * sizeof *p);
    if (!p) return NULL;
    o->seg = p;
    o->cap_seg = nc;
  }
  oseg *s = &o->seg[o->n_seg++];
  memset(s, 0, sizeof *s);
  return s;
}

int hatt_out_lit(hatt_out *o, const void *p, size_t n) {
  if (!n) return 0;
  oseg *last = o->n_seg ? &o->seg[o->n_seg - 1] : NULL;
  size_t off = o->lit.len;
  buf_append(&o->lit, p, n);
  if (buf_error(&o->lit)) return DV_ENOMEM;
  if (last && !last->att && last->off + last->n == off) { /* extend the last literal */
    last->n += n;
    return 0;
  }
  oseg *s = seg_new(o);
  if (!s) return DV_ENOMEM;
  s->off = off;
  s->n = n;
  return 0;
}

static int out_att(hatt_out *o, const char *id, size_t idn, const store_att *att) {
  store_att *c = arena_alloc(&o->a, sizeof *c); /* arena_memdup would not align it */
  char *i = arena_memdup(&o->a, id, idn ? idn : 1);
  if (!c || !i) return DV_ENOMEM;
  *c = *att;
  c->name = arena_memdup(&o->a, att->name, att->name_len ? att->name_len : 1);
  c->type = arena_memdup(&o->a, att->type, att->type_len ? att->type_len : 1);
  if (!c->name || !c->type) return DV_ENOMEM;
  oseg *s = seg_new(o);
  if (!s) return DV_ENOMEM;
  s->att = c;
  s->id = i;
  s->id_len = idn;
  return 0;
}

/* A header value with what would break the header line or the quoted
 * filename made harmless. */
static void put_hval(dv_buf *b, const char *s, size_t n, int quoted) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\r' || c == '\n') c = ' ';
    if (quoted && (c == '"' || c == '\\')) buf_putc(b, '\\');
    buf_putc(b, (uint8_t)c);
  }
}

int hatt_out_doc(hatt_out *o, const char *bnd, const json_val *doc, const store_att *send, size_t n) {
  dv_buf b;
  buf_init(&b);
  int rc = 0;
  if (n) buf_printf(&b, "--%s\r\nContent-Type: application/json\r\n\r\n", bnd);
  if (json_write(&b, doc)) rc = DV_ENOMEM;
  if (n) buf_printf(&b, "\r\n--%s", bnd);
  const json_val *idv = json_obj_getz(doc, "_id");
  for (size_t i = 0; !rc && i < n; i++) {
    const store_att *s = &send[i];
    buf_puts(&b, "\r\nContent-Disposition: attachment; filename=\"");
    put_hval(&b, s->name, s->name_len, 1);
    buf_puts(&b, "\"\r\nContent-Type: ");
    put_hval(&b, s->type, s->type_len, 0);
    buf_printf(&b, "\r\nContent-Length: %lld", (long long)s->enc_length);
    if (s->gzip) buf_puts(&b, "\r\nContent-Encoding: gzip");
    buf_puts(&b, "\r\n\r\n");
    if (buf_error(&b)) rc = DV_ENOMEM;
    if (!rc) rc = hatt_out_lit(o, b.p, b.len);
    buf_reset(&b);
    if (!rc) rc = out_att(o, idv ? idv->u.s : "", idv ? idv->len : 0, s);
    buf_printf(&b, "\r\n--%s", bnd);
  }
  if (!rc && n) buf_puts(&b, "--");
  if (!rc && buf_error(&b)) rc = DV_ENOMEM;
  if (!rc) rc = hatt_out_lit(o, b.p, b.len);
  buf_free(&b);
  return rc;
}

static int out_step(void *arg, hfeed *f, dv_buf *out) {
  (void)f;
  hatt_out *o = arg;
  while (o->at < o->n_seg && out->len < FEED_STEP) {
    const oseg *s = &o->seg[o->at];
    if (!s->att) {
      buf_append(out, o->lit.p + s->off, s->n);
      o->at++;
      continue;
    }
    int64_t left = s->att->enc_length - o->off;
    if (left <= 0) {
      o->at++;
      o->off = 0;
      continue;
    }
    size_t want = (size_t)(left < READ_PIECE ? left : READ_PIECE), got = 0;
    uint8_t *p = buf_extend(out, want);
    if (!p) return HF_FAIL;
    int rc = store_att_pread(o->db, s->id, s->id_len, s->att, o->off, p, want, &got);
    if (rc || got != want) return HF_FAIL; /* the client sees a cut body */
    o->off += (int64_t)got;
  }
  return o->at < o->n_seg ? HF_MORE : HF_DONE;
}

static void out_done(void *arg) { hatt_out_free(arg); }

static const hfeed_ops out_ops = {out_step, out_done};

void hatt_out_send(hreq *r, hatt_out *o, int status, const char *ctype) { hres_feed(r, status, ctype, &out_ops, o); }
