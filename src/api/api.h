/* api.h — the CouchDB endpoints over the HTTP engine (http/http.h): shared
 * by the files of src/api only. main.c uses api_app and api_srv.
 *
 * Each family file declares its routes as a table of http_route rows
 * {methods, pattern, flags, handler}; route.c matches a request against
 * them in order (the tables' order in route.c, then each table's), and
 * api_authorize does once, before any handler runs, what the flags ask:
 *
 *   API_SERVER_ADMIN  a server admin only (401 "You are not a server admin.")
 *   API_NEEDS_DB      open r->app->db (404 / 400 illegal_database_name) and
 *                     check the requester is a member (_security; 401/403)
 *   API_DB_ADMIN      with API_NEEDS_DB: a db admin (401/403)
 *   API_SYSDB_ADMIN   in _users and _replicator, a server admin only
 *   API_DOC           a document path: in the users database, users.c's
 *                     rules decide, not _security (r->app->users_doc)
 *   API_ALL_DBS       a server admin unless [chttpd] admin_only_all_dbs is
 *                     false
 *   HTTP_JSON_BODY    (the engine) Content-Type application/json, else 415
 *   HTTP_STREAM_BODY  (the engine) the handler runs before the body, and
 *                     sets a sink
 *
 * Patterns: "/" is the root; each further segment is a literal, "{db}" (a
 * database name: not starting with '_', or a system database), "{_}" (a
 * segment starting with '_', not a system database), "{id}" (a document id), "{_id}" (one
 * starting with '_'), "{any}" (any one
 * segment) or "{rest}" last (one or more segments). The captures fill
 * r->app: db_name; docid ("_design/" or "_local/" prefixed after those
 * literals); sub (the first segment of "{rest}" after "{id}").
 */
#ifndef DV_API_H
#define DV_API_H

#include <stddef.h>
#include <stdint.h>

#include "auth/auth.h"
#include "http/http.h"
#include "index/qs.h"
#include "json/json.h"
#include "store/store.h"
#include "util/config.h"
#include "util/stats.h"

/* ---- the server and one request's state --------------------------------- */

struct repl_mgr;

/* What every handler may need of the server; main.c fills it and gives
 * it to http_start through api_app. */
typedef struct api_srv {
  store *st;                  /* the store */
  dv_config *config;          /* the ini configuration */
  const char *version;        /* divan's version, for GET / */
  const char *data_dir;       /* shown by /_node/_local/_config */
  size_t max_document_size;   /* the store's limit, shown by _config */
  size_t max_body;            /* max_http_request_size */
  char uuid[33];              /* the server's uuid (store_server_uuid) */
  char repl_token[33];        /* secret of the replicator's loopback requests */
  struct repl_mgr *repl;      /* NULL until main.c started it, or when it could not */
} api_srv;

/* The node's name (/_membership, /_node/{name}): divan is one node. */
#define API_NODE_NAME "divan@127.0.0.1"

/* Fill the app table for http_start from s (which must outlive the
 * server): routes, identify, authorize, done. Reads the server uuid and
 * mints the replicator token. */
int api_app(api_srv *s, http_app *out) DV_MUST_CHECK;

/* The node's name: /_membership, /_node/{name}, and every log line. */
#define API_NODE_NAME "divan@127.0.0.1"

/* The request's line in the log, at its end (reqlog.c): from app->done. */
void api_log_request(hreq *r);

typedef struct api_write api_write;

/* The request's CouchDB side (the engine's r->app). */
struct hreq_app {
  /* captured by the route (route.c) */
  store_db *db;                   /* API_NEEDS_DB: the open database */
  const char *db_name;            /* {db} */
  const char *docid;              /* full id: "x", "_design/x", "_local/x" */
  size_t docid_len;
  int sub;                        /* index of the first segment after the doc id
                                     (attachment name), or 0 when none */
  /* who is asking (authn.c) */
  const char *user;               /* authenticated name, NULL = anonymous */
  const char **roles;             /* its roles (arena) */
  int nroles;
  int is_admin;                   /* a server admin (role _admin) */
  const char *auth_via;           /* "cookie", "default" (Basic), "proxy", or NULL */
  int db_admin;                   /* api_db_member found a db admin */
  int users_db;                   /* {db} names the users database */
  int users_doc;                  /* a document request on _users: users.c's rules, not _security */
  const json_val *sec;            /* the _security object in force, once read */
  void *pending;                  /* a write in flight: its handler's state (hres_defer_then) */
  api_write *write;               /* … and its api_update part */
  struct hatt_w *att_w;           /* the request's attachment state (docatt.c), freed at its end */
  int counted;                    /* stats.c has weighed it: counted, or left out (paused, replicator) */
};

static inline api_srv *api_srv_of(hreq *r) { return (api_srv *)http_app_arg(r); }
static inline store *api_store(hreq *r) { return api_srv_of(r)->st; }
static inline dv_config *api_config(hreq *r) { return api_srv_of(r)->config; }

/* Route flags (HTTP_APP_FLAGS and up). */
enum {
  API_NEEDS_DB = HTTP_APP_FLAGS << 0,
  API_DB_ADMIN = HTTP_APP_FLAGS << 1,
  API_SERVER_ADMIN = HTTP_APP_FLAGS << 2,
  API_SYSDB_ADMIN = HTTP_APP_FLAGS << 3, /* in _users and _replicator: a server admin */
  API_DOC = HTTP_APP_FLAGS << 4,         /* a document path: in _users, users.c's rules apply */
  API_ALL_DBS = HTTP_APP_FLAGS << 5,     /* a server admin unless [chttpd] admin_only_all_dbs is false */
  API_IF_LOAD = HTTP_APP_FLAGS << 6,     /* a row for ?load=true only (route.c): the next row of its
                                            pattern takes the request without it */
};

#define M(x) HTTP_M(HM_##x)
#define GET_HEAD (M(GET) | M(HEAD))

/* A family's table. */
typedef struct api_routes {
  const http_route *rows;
  size_t n;
} api_routes;
#define API_TABLE(t) {t, sizeof t / sizeof *t}
/* Each family's table, in its file; route.c tries them in its order. */
extern const api_routes api_server_routes, api_repl_routes, api_db_routes, api_bulk_routes, api_changes_routes,
    api_purge_routes, api_mango_routes, api_ddocfn_routes, api_view_routes, api_doc_routes, api_utils_routes,
    api_stats_routes, api_check_routes, api_dump_routes;
/* PUT /{db}?load=true (api/dump.c), a row of db.c's table */
void hapi__db_load(hreq *r);

/* The header carrying the replicator's identity on its loopback requests
 * to local databases: "TOKEN;USER;ROLE,ROLE" (authn.c). */
#define HTTP_REPL_HEADER "X-Divan-Replicator"
/* "strict": a _local document write checks its rev (doc.c local_flags) */
#define HTTP_LOCAL_REV_HEADER "X-Divan-Local-Rev"

/* ---- request helpers with CouchDB's meaning (areq.c) --------------------- */

/* Open r->app->db from r->app->db_name and check membership. On failure
 * writes the error (404 "Database does not exist.", 400
 * illegal_database_name, 401/403) and returns nonzero. */
int api_open_db(hreq *r);

/* A document id the store accepts (store_docid_problem; local: "_local/…"
 * too): 0, or 400 illegal_docid with CouchDB's reason written and -1. */
int api_docid_ok(hreq *r, const char *id, size_t n, int local);

/* A write's answer, {"ok":true,"id":…[,"rev":…]} with status; the ETag
 * (rev) and the document's Location (/{db}/{id}) when asked. */
void api_written(hreq *r, int status, const char *id, size_t n, const char *rev, int etag, int loc);

/* Does the request's Accept-Encoding take gzip (mochiweb's
 * accepted_encodings: q-values, "x-gzip", "*")? No header: identity only. */
int api_accepts_gzip(hreq *r);

/* A new id as 32 lower-case hex chars + NUL (new doc ids, /_uuids):
 * CouchDB's "sequential" algorithm (areq.c). */
void api_uuid(char out[33]);
/* n such ids, 33 bytes apart, one contiguous run of the sequence. */
void api_uuids(char *out, size_t n);
/* 201 Created, Location: the request's path (areq.c). */
void api_created(hreq *r);
/* /_node/{node}/…: 1 when {node} is _local or this node's name, else the
 * 404 "no such node" of chttpd_node's call_node is written and 0 (areq.c). */
int api_our_node(hreq *r);

/* CouchDB's request object (chttpd_external:json_req_obj) of r as JSON text,
 * appended to out, for a design-document function: info (GET /{db}, when
 * r->app->db is open), a fresh uuid, id (docid, NULL: null), method,
 * requested_path and path, raw_path, query, headers, body ("undefined" for
 * a GET without one), peer, form, cookie, userCtx and secObj. index/jsreq.h
 * builds it (jsreq_http.c gathers the inputs). 0, or the error written on r
 * (400 for a key/startkey/endkey/descending parameter that is not JSON,
 * 500 on a store error) and its code returned. */
int api_js_req(hreq *r, const char *docid, dv_buf *out);

/* ---- who asks, and may they (authn.c, over auth/) ------------------------ */

/* The engine's identify and authorize callbacks. */
int api_identify(hreq *r);
int api_authorize(hreq *r, const http_route *rt);

/* 0 if the requester is a server admin, else 401 written and -1. */
int api_need_server_admin(hreq *r);
/* After r->app->db is open: may the requester use the database at all?
 * Sets r->app->db_admin. 401 for anonymous, 403 for others, written; -1. */
int api_db_member(hreq *r, int need_admin);
/* A database admin (or server admin)? Else 401/403 written and -1. */
int api_db_admin(hreq *r);
/* The _security object in force (r->app->db open), in r->a. */
int api_security(hreq *r, json_val **out) DV_MUST_CHECK;
/* Is {db} the users database? */
int api_is_users_db(hreq *r);
/* May the requester write document id (att: one of its attachments; doc:
 * its body as sent, or NULL) in r's database: auth_may_write, the
 * _replicator rules, and in the users database the password hashing of
 * before_doc_update (*doc may be replaced). The one check of every write
 * path. 0; or a refusal (DV_EFORBIDDEN, DV_EUNAUTHORIZED) with *why its
 * reason; or another code (hashing failed). Nothing written. */
int api_may_write(hreq *r, const char *id, size_t n, int att, json_val **doc, const char **why);
/* A write in flight: what store_update_async needs past the handler, and
 * its answer. A handler's own state embeds it (r->app->pending). */
struct api_write {
  int rc;                 /* the store's answer (then each edit's rc) */
  store_wctx wc;          /* who writes, as long as the store may ask */
  store_user su;
  void *off;              /* a write run off the pool (its database has JavaScript validators: authn.c) */
  void (*then)(hreq *r);  /* the handler's continuation (api_update runs its own first) */
  store_edit *edits;      /* what was written, for that first look */
  size_t n;
};
/* Write edits[0..n) as the requester without holding a thread while they
 * commit: then(r) runs on a pool thread once they are durable (or failed:
 * w->rc), and builds the answer. w and the edits live in r->a. */
void api_update(hreq *r, api_write *w, store_edit *edits, size_t n, int new_edits, void (*then)(hreq *r));
/* Who writes, for store_update (store/hooks.h). u must live as long as w. */
void api_wctx(hreq *r, store_wctx *w, store_user *u);

/* The answer to a failed design-document function (index/qs.h): rc and e
 * from qs_ddoc_call, as chttpd:error_info maps them. */
void api_qs_fail(hreq *r, int rc, const qs_err *e);

/* _view_cleanup's work: drop every view index no design document of db
 * uses (view.c). */
int api_view_cleanup(store_db *db) DV_MUST_CHECK;
/* _list: view `view` of design document vdoc queried with r's parameters
 * (a POST body's keys), its rows fed to list function list_name of
 * list_dd, answered (view.c). */
void api_view_list(hreq *r, const json_val *vdoc, const char *view, size_t view_len, const qs_ddoc *list_dd,
                   const char *list_name, const json_val *body);

/* stats.c: count r (its method, status and time) in util/stats.h's
 * metrics, once: api_stats_answered from the app's answered hook, as a
 * whole answer is queued; api_stats_request from the app's done, once r
 * is over — a feed's or a stream's count (an r without a status yet,
 * released by a reroute, is not counted there). */
void api_stats_answered(hreq *r);
void api_stats_request(hreq *r);
/* [stats] enabled (default true): pause or resume counting (util/stats.h's
 * dv_stats_set), at the start and whenever /_config changes it. */
void api_stats_config(dv_config *cfg);

/* route.c: a /_name that is no endpoint (404 "Database does not exist.",
 * or 400 for a server endpoint given more segments); what later issues
 * build (501). */
void hapi_no_db(hreq *r);
void hapi_not_yet(hreq *r);
void hapi_missing(hreq *r); /* 404 not_found missing */

/* Where Fauxton's files are (utils.c), the one place that decides: [chttpd]
 * docroot of c (may be NULL), else $COUCHDB_FAUXTON_DOCROOT (CouchDB's),
 * else the first of PREFIX/share/divan/www (beside an installed
 * PREFIX/bin/divan) and the source tree's share/fauxton install (beside
 * ./divan or build/TAG/divan) that holds index.html. 0 with *out the
 * directory (dv_free it); or DV_ENOT_FOUND with *why (when why is not NULL;
 * dv_free it; NULL when out of memory) saying what is missing and where it
 * looked; or DV_ENOMEM. */
int api_utils_docroot(dv_config *c, char **out, char **why) DV_MUST_CHECK;

/* /_session (session.c) */
void hapi_session(hreq *r);

/* ---- handlers (each family file declares its routes) -------------------- */

/* repl.c */
void hapi_replicate(hreq *r);     /* POST /_replicate */
void hapi_scheduler(hreq *r);     /* /_scheduler/jobs, /_scheduler/docs */
/* The replication part of /_active_tasks: a JSON array into out. */
int api_repl_tasks(hreq *r, dv_buf *out) DV_MUST_CHECK;

/* server.c */
void hapi_root(hreq *r);          /* GET / */
void hapi_up(hreq *r);            /* /_up */
void hapi_all_dbs(hreq *r);       /* /_all_dbs */
void hapi_dbs_info(hreq *r);      /* /_dbs_info */
void hapi_uuids(hreq *r);         /* /_uuids */
void hapi_active_tasks(hreq *r);  /* /_active_tasks */
void hapi_membership(hreq *r);    /* /_membership */
void hapi_node(hreq *r);          /* /_node/{name}[/...] */
void hapi_cluster_setup(hreq *r); /* /_cluster_setup */

/* db.c */
void hapi_db(hreq *r);            /* /{db}: PUT GET HEAD DELETE POST */
void hapi_revs_limit(hreq *r);    /* /{db}/_revs_limit */
void hapi_security(hreq *r);      /* /{db}/_security */
void hapi_compact(hreq *r);       /* /{db}/_compact[/{ddoc}] */
void hapi_view_cleanup(hreq *r);  /* /{db}/_view_cleanup */
void hapi_ensure_full_commit(hreq *r); /* /{db}/_ensure_full_commit */

/* doc.c */
void hapi_doc_post(hreq *r);      /* POST /{db} (called by hapi_db) */
void hapi_doc(hreq *r);           /* /{db}/{docid} incl. _design/ and _local/ */
void hapi_doc_mp_begin(hreq *r);  /* a multipart/related PUT's sink (hapi_att_upload) */

/* bulk.c */
void hapi_bulk_docs(hreq *r);     /* /{db}/_bulk_docs */
void hapi_bulk_get(hreq *r);      /* /{db}/_bulk_get */
void hapi_revs_diff(hreq *r);     /* /{db}/_revs_diff */
void hapi_missing_revs(hreq *r);  /* /{db}/_missing_revs */
/* which: STORE_ALL, STORE_DESIGN, STORE_LOCAL; queries: the /queries form */
void hapi_all_docs(hreq *r, int which, int queries);

/* purge.c */
void hapi_purge(hreq *r);         /* /{db}/_purge */
void hapi_purged_infos_limit(hreq *r); /* /{db}/_purged_infos_limit */

/* changes.c */
void hapi_changes(hreq *r);       /* /{db}/_changes */
void hapi_db_updates(hreq *r);    /* /_db_updates */

/* ==== attachments at the document level (docatt.c) ===========================
 * Shared by api/doc.c, api/bulk.c and api/changes.c: preparing the attachments
 * of a write (CouchDB's [attachments] compression, max_attachment_size,
 * the reasons of its attachment errors), reading a multipart/related
 * document body, inlining attachment content into documents read as JSON,
 * and streaming multipart/related and multipart/mixed answers. Not here:
 * the standalone attachment endpoints /{db}/{doc}/{att} (att.c). */

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
void hatt_w_done(hatt_w *w); /* NULL is a no-op; again is a no-op */
hatt_w *hatt_w_next(hatt_w *w); /* the request's next one (r->app->att_w), for route.c */

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

/* att.c */
void hapi_att_upload(hreq *r);  /* PUT /{db}/{docid}/{att…} (streamed): the checks that need no body, then hreq_sink */
void hapi_att(hreq *r);           /* /{db}/{docid}/{att…}: GET HEAD PUT DELETE (called by hapi_doc) */
void hapi_doc_form(hreq *r);      /* POST /{db}/{docid} multipart/form-data (called by hapi_doc) */

#endif
