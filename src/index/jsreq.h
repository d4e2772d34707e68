/* jsreq.h — CouchDB's request object, the `req` a design-document function
 * (filter, show, update, list, rewrite) is given: chttpd_external's
 * json_req_obj, written as JSON text.
 *
 * This is the pure half: it takes plain strings and pairs (filled from an
 * HTTP request by api/jsreq_http.c's api_js_req, or by a fuzzer) and knows
 * nothing of HTTP types, so it links into test/fuzz/fuzz_jsreq.c. It parses
 * what CouchDB parses while building the object — the Cookie header
 * (mochiweb_cookies:parse_cookie) and an application/x-www-form-urlencoded
 * body (mochiweb_util:parse_qs) — and nothing else.
 *
 * The object, members in CouchDB's order (json_req_obj_fields):
 *
 *   info            the database's info (GET /{db}), as given
 *   uuid            a fresh uuid, as given
 *   id              the document id, or null (filters; a show without one)
 *   method          "GET", …; a method mochiweb/CouchDB know no atom for
 *                   is an array of its character codes
 *   requested_path  the path segments as requested (decoded)
 *   path            the path segments after a rewrite (decoded)
 *   raw_path        the path as sent, with "?query"
 *   query           {name: value}, values strings except key, startkey,
 *                   endkey and descending (json_query_keys: their JSON);
 *                   a repeated name keeps its last value, in the place of
 *                   its first
 *   headers         {name as sent: value}; a repeated header (names
 *                   compared without case) joined with ", " (mochiweb_headers)
 *   body            the body text; "undefined" when there is none (a GET)
 *   peer            the client's address
 *   form            POST/PUT with Content-Type
 *                   application/x-www-form-urlencoded: the body's pairs;
 *                   else {}
 *   cookie          {name: value} from the Cookie header
 *   userCtx         {"db", "name" (null: anonymous), "roles"}
 *   secObj          the _security object, as given
 *
 * JS rewrites get the object without info, uuid, id and form (JSREQ_REWRITE).
 * Strings that are not valid UTF-8 are written with U+FFFD in place of the
 * bad bytes (json_escape), as the only alternative is an error the client
 * could not act on.
 */
#ifndef DV_INDEX_JSREQ_H
#define DV_INDEX_JSREQ_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

/* A name and its value (query parameters, headers), both decoded; neither
 * need be NUL-terminated. */
typedef struct jsreq_pair {
  const char *k;  /* name */
  size_t kn;      /* its length */
  const char *v;  /* value */
  size_t vn;      /* its length */
} jsreq_pair;

enum {
  JSREQ_REWRITE = 1 << 0, /* leave out info, uuid, id and form (CouchDB's "request2") */
};

/* Everything the object is built from. Pointers are borrowed for the call. */
typedef struct jsreq {
  unsigned flags;                 /* JSREQ_* */
  const char *info;               /* the db info object as JSON text (trusted), NULL: {} */
  size_t info_len;
  const char *uuid;               /* 32 hex chars (NUL-terminated), NULL: null */
  const char *id;                 /* document id, NULL: null */
  size_t id_len;
  const char *method;             /* as sent, NUL-terminated */
  const char *const *req_path;    /* requested path segments, decoded */
  const size_t *req_path_len;
  int n_req_path;
  const char *const *path;        /* path segments after a rewrite; NULL: the requested ones */
  const size_t *path_len;
  int n_path;
  const char *raw_path;           /* the raw path with its "?query", as sent */
  size_t raw_path_len;
  const jsreq_pair *query;        /* query parameters in order */
  size_t n_query;
  const jsreq_pair *headers;      /* request headers in order */
  size_t n_headers;
  const char *body;               /* the body, NULL: none (written as "undefined") */
  size_t body_len;
  const char *peer;               /* client address, NUL-terminated; NULL: "127.0.0.1" */
  const char *db;                 /* userCtx.db: the database name, NUL-terminated */
  const char *user;               /* userCtx.name, NULL: anonymous (null) */
  const char *const *roles;       /* userCtx.roles */
  size_t n_roles;
  const char *sec;                /* the _security object as JSON text (trusted), NULL: {} */
  size_t sec_len;
} jsreq;

/* Append the request object as JSON text to out. Returns 0, DV_EJSON (a
 * key/startkey/endkey/descending value that is not JSON: CouchDB's 400
 * "invalid UTF-8 JSON" — out then holds a partial object the caller
 * discards) or DV_ENOMEM. */
int jsreq_build(const jsreq *q, dv_buf *out) DV_MUST_CHECK;

/* A known HTTP method (written as a string; others as char codes). */
int jsreq_method_known(const char *method);

#endif
