/* http_int.h — shared by the files of src/http only: the request object,
 * response builders, query-parameter parsers, streamed feeds, and the
 * handler table the router dispatches to.
 *
 * Data flow of one request (server.c owns it):
 *
 *   MHD access callback ─▶ hreq created (arena, decoded path segments,
 *     decoded query) ─▶ body read into r->body (≤ max_body, else 413)
 *     ─▶ route.c picks a handler ─▶ handler calls store_* (blocking, on this
 *     pool thread) and fills the response: status + r->out (+ headers), or
 *     hres_feed() for a streamed body ─▶ server.c queues it with MHD.
 *
 *   A feed (changes, _db_updates): MHD pulls the body through a content
 *   reader; it calls ops->step to produce more. When step says HF_WAIT the
 *   connection is suspended (no pool thread held) until hfeed_wake() (a kv
 *   watch fired), its timer is due (heartbeat/timeout), or the client left
 *   (server.c's reaper thread peeks at suspended sockets).
 *
 * Handlers never send anything themselves; they set the response and
 * return. Every handler has the signature `void hapi_x(hreq *r)`. A handler
 * that fails writes the CouchDB error with hres_err()/hres_errs() and
 * returns.
 *
 * Request bodies that stream (attachment uploads, multipart/related
 * document PUTs) skip r->body: see hsink_ops below.
 *
 * Authentication and authorization: auth.h.
 */
#ifndef DV_HTTP_INT_H
#define DV_HTTP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "json/json.h"
#include "store/store.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/err.h"

/* ---- the server ---------------------------------------------------------- */

typedef struct http_server hsrv; /* server.c: the daemon, its options, the feed reaper */

store *hsrv_store(hsrv *s);
const char *hsrv_uuid(hsrv *s);           /* 32 hex chars, stable across restarts */
const http_opts *hsrv_opts(hsrv *s);
struct repl_mgr *hsrv_repl(hsrv *s);      /* NULL when replication could not start */
const char *hsrv_repl_token(hsrv *s);     /* secret of the replicator's loopback requests */

/* The header carrying the replicator's identity on its loopback requests
 * to local databases: "TOKEN;USER;ROLE,ROLE" (auth.c). */
#define HTTP_REPL_HEADER "X-Divan-Replicator"
/* "strict": a _local document write checks its rev (h_doc.c local_flags) */
#define HTTP_LOCAL_REV_HEADER "X-Divan-Local-Rev"

/* ---- the request --------------------------------------------------------- */

enum {
  HM_GET = 1,
  HM_HEAD,
  HM_POST,
  HM_PUT,
  HM_DELETE,
  HM_COPY,
  HM_OPTIONS,
  HM_OTHER,
};

#define HREQ_MAX_SEG 16 /* path segments kept; a longer path is a 400 */

typedef struct hparam {
  const char *key;   /* decoded, NUL-terminated */
  size_t klen;
  const char *val;   /* decoded ('+' is a space, %XX a byte), NUL-terminated */
  size_t vlen;
} hparam;

typedef struct hhdr {
  const char *name;  /* response header name */
  const char *val;   /* its value */
} hhdr;

typedef struct hfeed hfeed;

typedef struct hreq {
  hsrv *srv;                      /* the server */
  void *conn;                     /* struct MHD_Connection * */
  int method;                     /* HM_* */
  const char *method_str;         /* as sent */
  const char *path;               /* raw path, still percent-encoded */
  int nseg;                       /* path segments ("/" alone: 0) */
  const char *seg[HREQ_MAX_SEG];  /* each percent-decoded, NUL-terminated */
  size_t seg_len[HREQ_MAX_SEG];   /* their lengths (a segment may hold NUL) */
  hparam *params;                 /* query parameters in order, decoded */
  int nparams;
  char *body;                     /* request body (NUL-terminated), or NULL */
  size_t body_len;
  dv_arena a;                     /* per-request memory, freed at the end */
  /* set by the router for database and document handlers */
  store_db *db;                   /* hreq_open_db(): the open database */
  const char *db_name;            /* seg[0] */
  const char *docid;              /* full id: "x", "_design/x", "_local/x" */
  size_t docid_len;
  int sub;                        /* index of the first segment after the doc id
                                     (attachment name), or 0 when none */
  /* who is asking (auth.c) */
  const char *user;               /* authenticated name, NULL = anonymous */
  const char **roles;             /* its roles (arena) */
  int nroles;
  int is_admin;                   /* a server admin (role _admin) */
  const char *auth_via;           /* "cookie", "default" (Basic), "proxy", or NULL */
  int db_admin;                   /* auth_db_member found a db admin */
  int need_db_admin;              /* the router wants a db admin for this path */
  int users_db;                   /* seg[0] names the users database (auth_authorize) */
  int users_doc;                  /* a document request on _users: users.c's rules, not _security */
  const json_val *sec;            /* the _security object in force, once auth_security read it */
  /* the response */
  int status;                     /* 0 until a handler set one */
  const char *ctype;              /* Content-Type (default application/json) */
  dv_buf out;                     /* the body */
  hhdr hdr[24];                   /* extra response headers */
  int nhdr;
  hfeed *feed;                    /* a streamed body (hres_feed) */
} hreq;

/* A request header (case-insensitive name), or NULL. */
const char *hreq_hdr(hreq *r, const char *name);

/* Open r->db from r->db_name. On failure writes the error (404 "Database
 * does not exist.", 400 illegal_database_name) and returns nonzero. */
int hreq_open_db(hreq *r);

/* A document id the store accepts (store_docid_problem; local: "_local/…"
 * too): 0, or 400 illegal_docid with CouchDB's reason written and -1. */
int hreq_docid_ok(hreq *r, const char *id, size_t n, int local);

/* Content-Type must be application/json (parameters such as charset are
 * allowed), else 415 bad_content_type written and nonzero returned. */
int hreq_need_json(hreq *r);

/* Parse n bytes of JSON into r->a: broken JSON is CouchDB's 400
 * bad_request "invalid UTF-8 JSON" (500 when out of memory), written here,
 * and nonzero returned. Bodies, JSON query values, keys. */
int hreq_parse_json(hreq *r, const char *p, size_t n, json_val **out);

/* Parse the body as JSON into r->a. An empty or broken body is a 400
 * bad_request ("invalid UTF-8 JSON") written here, and nonzero returned.
 * With want_object, anything but an object is 400 "Request body must be a
 * JSON object". */
int hreq_json_body(hreq *r, int want_object, json_val **out);

/* ---- query parameters ---------------------------------------------------- */
/* Each returns 0, or writes 400 query_parse_error and returns -1. Absent
 * parameters leave *io untouched, so callers preset the default. */

/* The value of a parameter (last one wins, as CouchDB), or NULL. */
const char *hq_get(hreq *r, const char *name, size_t *out_len);
/* "true" / "false" only. */
int hq_bool(hreq *r, const char *name, int *io);
/* A decimal integer >= min. */
int hq_int(hreq *r, const char *name, int64_t min, int64_t *io);
/* A JSON value (startkey, keys, open_revs, …) parsed into r->a. */
int hq_json(hreq *r, const char *name, json_val **io);

/* ---- the response ---------------------------------------------------------- */

/* A JSON writer over r->out with the status set (body starts empty). The
 * server appends the trailing newline CouchDB sends. */
json_w *hres_jw(hreq *r, int status, json_w *w);
/* Status and a JSON value as the body. */
void hres_json(hreq *r, int status, const json_val *v);
/* {"ok":true} */
void hres_ok(hreq *r, int status);
/* The CouchDB error for a DV_E* code (util/err.h): its status, error and
 * reason. */
void hres_err(hreq *r, int rc);
/* An explicit error body {"error":error,"reason":reason}. */
void hres_errs(hreq *r, int status, const char *error, const char *reason);
/* printf-style reason. */
void hres_errf(hreq *r, int status, const char *error, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 405 with Allow: allowed (e.g. "GET,HEAD,POST"). */
void hres_method(hreq *r, const char *allowed);
/* Add a response header (both strings copied into r->a). */
void hres_header(hreq *r, const char *name, const char *val);
/* The host the client addressed (couch_httpd:host_for_request):
 * X-Forwarded-Host, else Host, else the socket's own address. */
void hreq_host(hreq *r, dv_buf *b);
/* Location: scheme://host/seg0/seg1/… with each segment url-encoded as
 * couch_util:url_encode (https when X-Forwarded-Ssl: on or
 * X-Forwarded-Proto: https), as chttpd:absolute_uri builds it. */
void hres_location(hreq *r, const char *const *seg, const size_t *len, int n);
/* 1 when If-None-Match holds this ETag (couch_httpd:etag_match: the header
 * split on commas and spaces). */
int hreq_etag_match(hreq *r, const char *etag);
/* ETag: the quoted rev. */
void hres_etag(hreq *r, const char *rev);
/* A write's answer, {"ok":true,"id":…[,"rev":…]} with status; the ETag
 * (rev) and the document's Location (/{db}/{id}) when asked. */
void hres_written(hreq *r, int status, const char *id, size_t n, const char *rev, int etag, int loc);
/* A non-JSON body. */
void hres_raw(hreq *r, int status, const char *ctype, const void *p, size_t n);

/* ---- streamed bodies (feeds) ---------------------------------------------- */

enum {
  HF_MORE = 0,  /* output produced; call step again when it has been sent */
  HF_DONE = 1,  /* output produced (maybe none); the body ends after it */
  HF_WAIT = 2,  /* send what was produced, then wait for a wake or the timer */
  HF_FAIL = -1, /* abort the connection (the client sees a cut body) */
};

typedef struct hfeed_ops {
  /* Produce output into out (empty on entry). Runs on a pool thread, never
   * two at once for one feed. hfeed_woken() tells whether a wake came. */
  int (*step)(void *arg, hfeed *f, dv_buf *out);
  /* The request is over (finished, failed, or the client left): stop any
   * watch (kv_watch_free) and free arg. Runs once. */
  void (*done)(void *arg);
} hfeed_ops;

/* Make the response a feed. The status and headers set on r are sent
 * first; the body is chunked. arg is owned by the feed from here on (done
 * frees it, even if the response never starts). */
void hres_feed(hreq *r, int status, const char *ctype, const hfeed_ops *ops, void *arg);

/* From any thread, at any time (a kv watch callback): wake the feed. Safe
 * to call before it waits (the wake is remembered) and after done() began
 * (ignored). */
void hfeed_wake(hfeed *f);
/* Consume the remembered wake: 1 if a wake came since the last call. */
int hfeed_woken(hfeed *f);
/* A response that comes later, from another thread (POST /_replicate
 * waits for its replication): the handler calls hres_defer(r) and returns
 * without a response; the connection is suspended (no pool thread held).
 * Later, any thread fills r's response (hres_* functions: nothing else
 * touches r meanwhile) and calls hdefer_done(r), exactly once. The
 * request must be answered before http_stop finishes. */
void hres_defer(hreq *r);
void hdefer_done(hreq *r);

/* Wake the feed at this monotonic time in ms (0: no timer). */
void hfeed_timer(hfeed *f, int64_t due_ms);
/* Monotonic clock, ms. */
int64_t hnow_ms(void);

/* ---- small tools ----------------------------------------------------------- */

/* A new id as 32 lower-case hex chars + NUL (new doc ids, /_uuids):
 * CouchDB's "sequential" algorithm (server.c). */
void http_uuid(char out[33]);

/* ---- handlers (route.c dispatches) --------------------------------------- */

/* h_repl.c */
void hapi_replicate(hreq *r);     /* POST /_replicate */
void hapi_scheduler(hreq *r);     /* /_scheduler/jobs, /_scheduler/docs */
void hapi_repl_tasks(hreq *r);    /* the replication part of /_active_tasks */
/* A document written to a _replicator database must describe a
 * replication: 0, or 403 forbidden written and -1. */
int hrepl_doc_check(hreq *r, const json_val *doc);

/* h_server.c */
void hapi_root(hreq *r);          /* GET / */
void hapi_up(hreq *r);            /* /_up */
void hapi_all_dbs(hreq *r);       /* /_all_dbs */
void hapi_dbs_info(hreq *r);      /* /_dbs_info */
void hapi_uuids(hreq *r);         /* /_uuids */
void hapi_active_tasks(hreq *r);  /* /_active_tasks */
void hapi_membership(hreq *r);    /* /_membership */
void hapi_node(hreq *r);          /* /_node/{name}[/...] */

/* h_db.c */
void hapi_db(hreq *r);            /* /{db}: PUT GET HEAD DELETE POST */
void hapi_revs_limit(hreq *r);    /* /{db}/_revs_limit */
void hapi_security(hreq *r);      /* /{db}/_security */
void hapi_compact(hreq *r);       /* /{db}/_compact[/{ddoc}] */
void hapi_view_cleanup(hreq *r);  /* /{db}/_view_cleanup */
void hapi_ensure_full_commit(hreq *r); /* /{db}/_ensure_full_commit */

/* h_doc.c */
void hapi_doc_post(hreq *r);      /* POST /{db} (called by hapi_db) */
void hapi_doc(hreq *r);           /* /{db}/{docid} incl. _design/ and _local/ */
void hapi_doc_mp_begin(hreq *r);  /* a multipart/related PUT's sink (hatt_upload_begin) */

/* h_bulk.c */
void hapi_bulk_docs(hreq *r);     /* /{db}/_bulk_docs */
void hapi_bulk_get(hreq *r);      /* /{db}/_bulk_get */
void hapi_revs_diff(hreq *r);     /* /{db}/_revs_diff */
void hapi_missing_revs(hreq *r);  /* /{db}/_missing_revs */
/* which: STORE_ALL, STORE_DESIGN, STORE_LOCAL; queries: the /queries form */
void hapi_all_docs(hreq *r, int which, int queries);

/* h_purge.c */
void hapi_purge(hreq *r);         /* /{db}/_purge */
void hapi_purged_infos_limit(hreq *r); /* /{db}/_purged_infos_limit */

/* h_changes.c */
void hapi_changes(hreq *r);       /* /{db}/_changes */
void hapi_db_updates(hreq *r);    /* /_db_updates */

/* ==== attachments at the document level (hatt.c) ===========================
 * Shared by h_doc.c, h_bulk.c and h_changes.c: preparing the attachments
 * of a write (CouchDB's [attachments] compression, max_attachment_size,
 * the reasons of its attachment errors), reading a multipart/related
 * document body, inlining attachment content into documents read as JSON,
 * and streaming multipart/related and multipart/mixed answers. Not here:
 * the standalone attachment endpoints /{db}/{doc}/{att} (att_req, h_doc.c). */

/* [attachments] compression_level (0: off) and compressible_types,
 * [couchdb] max_attachment_size ("infinity" or bytes), as CouchDB reads
 * them; types in r->a. */
typedef struct hatt_cfg {
  int level;            /* zlib level, 0 = store everything as sent */
  int64_t max_size;     /* largest attachment accepted, bytes */
  const char *types;    /* comma-separated patterns, '*' a wildcard */
} hatt_cfg;
void hatt_cfg_get(hreq *r, hatt_cfg *out);
/* couch_util:compressible_att_type for a content type (parameters
 * ignored), and compression on. */
int hatt_compressible(const hatt_cfg *c, const char *type, size_t n);

typedef struct hatt_w hatt_w; /* the attachment side of one write request */

/* The state of one write request (in r->a): its config, read once, and the
 * uploads and buffers its edits use. hatt_w_done after the last
 * store_update (it frees uploads no committed edit linked). NULL on OOM. */
hatt_w *hatt_w_new(hreq *r);
void hatt_w_done(hatt_w *w); /* NULL is a no-op */

/* Ready e's attachments for store_update: inline data (identity, as
 * store_edit_from_json decoded it) is checked against [couchdb]
 * max_attachment_size (DV_EATT_TOO_LARGE), gzip-encoded when its type is
 * one of [attachments] compressible_types, and, past the store's in-memory
 * budget per edit, uploaded. A "follows" attachment must have its content
 * already (hatt_mp_read), else DV_EBAD_ATT. e->id must be set. 0, or the
 * code with *why set to CouchDB's reason (in r->a; NULL: the code's). */
int hatt_prepare(hatt_w *w, store_edit *e, const char **why) DV_MUST_CHECK;

/* CouchDB's reason for an attachment error of a write (in r->a), or NULL
 * for other codes: DV_EBAD_ATT from store_edit_from_json (doc is the
 * object it was given), DV_EMISSING_STUB from store_update ("Invalid
 * attachment stub in ID for NAME"; e is the failed edit). */
const char *hatt_reason(hreq *r, int rc, const json_val *doc, const store_edit *e);

/* The HTTP status and error member for an attachment code, as hres_err
 * would answer it. */
void hatt_err(hreq *r, int rc, const char *why);

/* A multipart/related document body (couch_doc:doc_from_multi_part_stream),
 * read push-style: hatt_mp_begin with the request's Content-Type, then
 * hatt_mp_feed for each piece of the body as it arrives, hatt_mp_end when
 * it ended, hatt_mp_free always. The first part is the JSON document
 * (Content-Type application/json, else 415; at most max_json bytes, else
 * 413 too_large), handed to fn when complete (fn parses and checks it,
 * fills a store_edit and returns 0, or writes its error and returns
 * nonzero); each further part is the content of the next "follows"
 * attachment of that edit, in order: checked against its length /
 * encoded_length, its "digest" and the part's own Content-MD5,
 * gzip-encoded as hatt_prepare would (a gzip part is stored as sent and
 * only decoded to prove it), and kept in memory while the edit's stored
 * bytes fit STORE_ATT_INLINE_MAX, else written piecewise to a store upload
 * (the hatt_w's: hatt_w_done frees it). So memory is bounded by max_json
 * whatever the attachments' sizes. The whole body may have max_json plus
 * the declared attachment lengths plus some framing bytes, else 413
 * too_large.
 *
 * Each returns 0, or -1 with the error written on w's request, after which
 * the parse is over (feed and end return -1 again): 400 for a malformed
 * or truncated body, missing or extra parts, lengths or digests that do
 * not match (content_md5_mismatch); 413 attachment_too_large for a part
 * declared past [couchdb] max_attachment_size; fn's own answer. end gives
 * *out = fn's edit, its follows attachments all given (data or up). */
typedef int (*hatt_doc_fn)(void *arg, const char *json, size_t n, store_edit **out);
typedef struct hatt_mp hatt_mp;
int hatt_mp_begin(hatt_w *w, const char *ctype, size_t max_json, hatt_doc_fn fn, void *arg,
                  hatt_mp **out) DV_MUST_CHECK;
int hatt_mp_feed(hatt_mp *m, const uint8_t *p, size_t n) DV_MUST_CHECK;
int hatt_mp_end(hatt_mp *m, store_edit **out) DV_MUST_CHECK;
void hatt_mp_free(hatt_mp *m); /* NULL is a no-op */
/* The same over the whole r->body at once (max_json: max_body). */
int hatt_mp_read(hatt_w *w, const char *ctype, hatt_doc_fn fn, void *arg, store_edit **out);

/* COPY: every stub of e gets the content of the source revision's
 * attachment of that name (stored bytes as they are). */
int hatt_copy(hatt_w *w, const char *src_id, size_t src_n, const store_rev *src_rev, store_edit *e) DV_MUST_CHECK;

/* How a document read shows its attachments. */
typedef struct hatt_ro {
  int data;               /* attachments=true (atts_since implies it) */
  int follows;            /* multipart: "follows":true, not "data" */
  const json_val *since;  /* atts_since: an array of rev strings, or NULL */
} hatt_ro;

/* Rewrite doc's "_attachments" stubs (a document as store_doc_get gives
 * it, in arena a) as o asks: every attachment whose revpos is past the
 * newest atts_since rev in the document's history gets its content as
 * base64 "data" of the identity bytes, or "follows":true with encoding
 * info; the others stay stubs. *out_send / *out_n (may be NULL) get the
 * attachments to follow, in order. 0, DV_EATT_GONE when doc's revision was
 * replaced since it was read (read it again), or store errors. */
int hatt_doc(store_db *db, dv_arena *a, json_val *doc, const hatt_ro *o, store_att **out_send,
             size_t *out_n) DV_MUST_CHECK;

/* 1 when the request's Accept names `type`, or "multipart" with any
 * subtype, with q > 0. An absent Accept or a bare wildcard is 0: JSON
 * stays the default answer (CouchDB's mochiweb would send multipart). */
int hatt_accepts(hreq *r, const char *type);

/* A streamed multipart answer: literal bytes and attachment content read
 * piecewise (store_att_pread) while it is sent. Owns its own database
 * handle and memory, so it outlives the request. */
typedef struct hatt_out hatt_out;
int hatt_out_new(hreq *r, hatt_out **out) DV_MUST_CHECK;
void hatt_out_free(hatt_out *o); /* NULL is a no-op; not after hatt_out_send */
/* A fresh boundary, 32 hex characters. */
void hatt_boundary(char out[33]);
int hatt_out_lit(hatt_out *o, const void *p, size_t n) DV_MUST_CHECK;
/* The body of a multipart/related document (boundary b): the JSON part,
 * then one part per attachment in send; just the JSON when n is 0. */
int hatt_out_doc(hatt_out *o, const char *b, const json_val *doc, const store_att *send, size_t n) DV_MUST_CHECK;
/* Answer with it (o is the feed's from here on). */
void hatt_out_send(hreq *r, hatt_out *o, int status, const char *ctype);

/* ---- streamed request bodies and sized streamed responses (attachments) --- */

/* A body sink takes a request body piece by piece instead of r->body (no
 * max_body: the sink enforces its own limit). server.c asks
 * hatt_upload_match on its first call, when the headers are in and no body
 * byte has been read; for a match it authenticates and calls
 * hatt_upload_begin, which sets the sink (hreq_sink) or writes an error
 * (sent at once, the body unread). Two kinds of request stream: a
 * standalone attachment PUT (h_att.c) and a document PUT with a
 * multipart/related body (h_doc.c's hapi_doc_mp_begin). */
typedef struct hsink_ops {
  /* n > 0 bytes of the body, in order. Nonzero: the error is written on r;
   * the rest of the body is dropped and that error sent. */
  int (*write)(void *arg, hreq *r, const uint8_t *p, size_t n);
  /* The body ended: set the response. */
  void (*finish)(void *arg, hreq *r);
  /* The request is over (answered, failed, or the client left): free what
   * arg holds. Runs once, whatever happened. */
  void (*done)(void *arg);
} hsink_ops;

/* Send the body of r to ops (from hatt_upload_begin only). */
void hreq_sink(hreq *r, const hsink_ops *ops, void *arg);

typedef struct hstream_ops {
  /* The next 1..max bytes of the body into out; returns how many, or -1 to
   * end the connection (the client sees a body shorter than its length).
   * Never asked for more than the length given to hres_stream. */
  int64_t (*read)(void *arg, uint8_t *out, size_t max);
  /* The response is over (sent, failed, or never started): free arg. */
  void (*done)(void *arg);
} hstream_ops;

/* Make the response a body of exactly len bytes pulled from ops (sent with
 * Content-Length; a HEAD request never calls read). The status and
 * headers set on r go first. arg is owned by the stream from here on (done
 * frees it, even if the response never starts). */
void hres_stream(hreq *r, int status, const char *ctype, uint64_t len, const hstream_ops *ops, void *arg);

/* h_att.c */
int hatt_upload_match(hreq *r);   /* server.c's 1st call: PUT /{db}/{docid}/{att…}, or PUT
                                     /{db}/{docid} with Content-Type multipart/related; not
                                     _local (sets db_name, docid, sub as route.c would) */
void hatt_upload_begin(hreq *r);  /* after auth: the checks that need no body, then hreq_sink */
void hapi_att(hreq *r);           /* /{db}/{docid}/{att…}: GET HEAD PUT DELETE (called by hapi_doc) */
void hapi_doc_form(hreq *r);      /* POST /{db}/{docid} multipart/form-data (called by hapi_doc) */

#endif
