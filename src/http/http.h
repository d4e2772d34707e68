/* http.h — the HTTP engine (libmicrohttpd): connections, request parsing,
 * URL decoding, bodies (buffered or streamed to a sink), responses, feeds
 * and deferred answers that wait without holding a thread, and a
 * declarative route table. It knows no endpoint: the application above it
 * (api/) hands http_start an http_app — its route table and its
 * {identify, authorize} callbacks — and the engine calls up only through
 * that.
 *
 * Data flow of one request (server.c owns it):
 *
 *   MHD access callback ─▶ hreq created (arena, decoded path segments,
 *     decoded query, app->req_size zeroed bytes at r->app)
 *     ─▶ app->route picks the route (a row of the app's table, or NULL
 *        with the error written); its methods refused ─▶ 405 with Allow
 *     ─▶ a HTTP_STREAM_BODY route: identify, authorize, handler at once
 *        (the handler sets a body sink); else the body is read into
 *        r->body (≤ max_body, else 413), then identify, authorize, the
 *        route's methods (405), HTTP_JSON_BODY's Content-Type (415) and
 *        HTTP_JSON_OBJECT's parse (400), the handler
 *     ─▶ the handler fills the response: status + r->out (+ headers), or
 *        hres_feed()/hres_stream() for a streamed body, or hres_defer()
 *        for an answer that comes later ─▶ server.c queues it with MHD
 *     ─▶ app->done(r) when the request is over, then the arena goes.
 *
 *   A feed (changes, _db_updates): MHD pulls the body through a content
 *   reader; it calls ops->step to produce more. When step says HF_WAIT the
 *   connection is suspended (no pool thread held) until hfeed_wake() (a kv
 *   watch fired), its timer is due (heartbeat/timeout), or the client left
 *   (server.c's reaper thread peeks at suspended sockets).
 *
 * Handlers never send anything themselves; they set the response and
 * return. Every handler has the signature `void fn(hreq *r)`. A handler
 * that fails writes the error with hres_err() and returns: every error
 * answer comes from util/err.h's table.
 */
#ifndef DV_HTTP_H
#define DV_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/config.h"
#include "util/err.h"

#define HTTP_DEFAULT_MAX_BODY (64u << 20)  /* max_http_request_size, bytes */
#define HTTP_THREADS_PER_CORE 4            /* pool threads per core (nothing waits on one: writes
                                              and feeds suspend their connection) */
#define HTTP_DEFAULT_TIMEOUT 300           /* idle connection timeout, seconds */
#define HTTP_HEADER_LIMIT (8u << 10)       /* request line + headers, bytes (CouchDB's max_uri_length is 8000) */
/* libmicrohttpd's memory per connection: the head and some room. It costs
 * an idle feed about 0.6 of itself (libmicrohttpd zeroes the unused half
 * of its first read buffer), so it stays small: see idlefeeds.test.js. */
#define HTTP_CONN_POOL (HTTP_HEADER_LIMIT + (2u << 10))
#define HTTP_FEED_BLOCK (16u << 10)        /* bytes a feed hands libmicrohttpd per call */
#define HTTP_FEED_BLOCK_LIVE 512u          /* … and a feed that mostly waits (hfeed_live) */
#define HTTP_DEFAULT_HEAD_TIMEOUT 30       /* request_head_timeout: seconds from a head's first byte to its end */
#define HTTP_DEFAULT_BODY_TIMEOUT 60       /* request_body_timeout: seconds of grace for a request body … */
#define HTTP_DEFAULT_BODY_MIN_RATE 500     /* … and request_body_min_rate: one more second per this many
                                              bytes received (Apache's mod_reqtimeout body=20,MinRate=500) */
#define HTTP_DEFAULT_SEND_TIMEOUT 60       /* send_timeout: seconds a response may wait for its reader */
#define HTTP_DEFAULT_MAX_CONNS 10000       /* max_connections: open client connections */
#define HTTP_DEFAULT_MAX_CONNS_PER_CLIENT 1000 /* max_connections_per_client: from one address */
/* What a request body costs while it is handled, in multiples of its size:
 * a 1,000-document _bulk_docs body of 250 KB peaked at ~5.5 MB (its JSON
 * tree and arena, the write set of its ~15,000 KVs, the response). */
#define HTTP_BODY_COST 24
#define HTTP_BODY_FREE (64u << 10)           /* a body this small is never refused for the budget */
#define HTTP_RETRY_AFTER "1"                 /* seconds, in a 503's Retry-After */

typedef struct http_opts {
  const char *bind;       /* listen address (IPv4 or IPv6 literal) */
  int port;               /* 0 = any free port (see http_port) */
  int threads;            /* pool threads; 0 = cores × HTTP_THREADS_PER_CORE */
  size_t max_body;        /* 0 = HTTP_DEFAULT_MAX_BODY */
  int timeout_s;          /* idle connection timeout; 0 = HTTP_DEFAULT_TIMEOUT */
  int head_timeout_s;     /* request_head_timeout; 0 = HTTP_DEFAULT_HEAD_TIMEOUT */
  int body_timeout_s;     /* request_body_timeout; 0 = HTTP_DEFAULT_BODY_TIMEOUT */
  int body_min_rate;      /* request_body_min_rate, bytes/s; 0 = HTTP_DEFAULT_BODY_MIN_RATE */
  int send_timeout_s;     /* send_timeout; 0 = HTTP_DEFAULT_SEND_TIMEOUT */
  int max_conns;          /* max_connections; 0 = HTTP_DEFAULT_MAX_CONNS (capped by the fd limit) */
  int max_conns_per_client; /* max_connections_per_client; 0 = HTTP_DEFAULT_MAX_CONNS_PER_CLIENT, -1 = no limit */
  size_t body_budget;     /* bytes the request bodies being read or handled may cost at once (each counted
                             HTTP_BODY_COST times its size); past it new ones get 503 + Retry-After; 0 = none */
  const char *server;     /* the Server: header */
  struct dv_config *config; /* [chttpd] WWW-Authenticate, [cors]; not owned, may be NULL */
} http_opts;

typedef struct http_server http_server;
typedef struct http_server hsrv;
typedef struct hreq hreq;

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

struct hreq {
  hsrv *srv;                      /* the server */
  void *conn;                     /* struct MHD_Connection * */
  int method;                     /* HM_* */
  const char *method_str;         /* as sent */
  const char *path;               /* raw path, still percent-encoded */
  const char *orig_path;          /* the path as the client sent it (path changes when
                                     the application reroutes r: hreq_reroute) */
  int reroutes;                   /* how many times hreq_reroute ran for r */
  hhdr *in_hdr;                   /* request headers set by hreq_set_hdr, over the client's */
  int nin_hdr;
  int nseg;                       /* path segments ("/" alone: 0) */
  const char *seg[HREQ_MAX_SEG];  /* each percent-decoded, NUL-terminated */
  size_t seg_len[HREQ_MAX_SEG];   /* their lengths (a segment may hold NUL) */
  hparam *params;                 /* query parameters in order, decoded */
  int nparams;
  char *body;                     /* request body (NUL-terminated), or NULL */
  size_t body_len;
  dv_arena a;                     /* per-request memory, freed at the end */
  const struct http_route *route; /* the route that matched (set before the handler runs) */
  json_val *json;                 /* HTTP_JSON_OBJECT: the body, parsed (in r->a) */
  struct hreq_app *app;           /* the application's per-request state: http_app.req_size
                                     zeroed bytes; the engine never looks inside */
  /* the response */
  int status;                     /* 0 until a handler set one */
  const char *ctype;              /* Content-Type (default application/json) */
  dv_buf out;                     /* the body */
  hhdr hdr[24];                   /* extra response headers */
  int nhdr;
  hfeed *feed;                    /* a streamed body (hres_feed) */
  /* the request's life, for the log (api/reqlog.c) */
  int64_t t_start_us;             /* monotonic µs when its head was in */
  int64_t t_end_us;               /* and when it ended (set with end) */
  char reqid[11];                 /* its id, 10 hex digits: X-Couch-Request-ID (chttpd's nonce) */
  int end;                        /* 0 while it runs (also in the app->done of hreq_reroute); at its
                                     end, before app->done: HREQ_END_OK or HREQ_END_ABORTED */
};

enum {
  HREQ_END_OK = 1,      /* the answer went out whole */
  HREQ_END_ABORTED = 2, /* the client left, a timeout, the server stopped, or a write failed */
};

/* A request header (case-insensitive name), or NULL: one set by
 * hreq_set_hdr, else the client's. */
const char *hreq_hdr(hreq *r, const char *name);
/* Set a request header for what runs next on r (a rewritten request,
 * hreq_reroute): it hides the client's of that name. Both strings are
 * copied into r->a. 0, or DV_ENOMEM. */
int hreq_set_hdr(hreq *r, const char *name, const char *val) DV_MUST_CHECK;

/* Run r again as if the client had sent `method target` (target: a raw
 * path, still percent-encoded, with "?query" or not), from inside its
 * handler: the application's state for r is released (app->done) and
 * zeroed, the response so far dropped, then the application routes,
 * identifies and authorizes it and the handler runs, exactly as for a
 * request from the wire. The body stays r->body (a HTTP_STREAM_BODY
 * route's sink gets it at once). r->reroutes counts the calls, so the
 * application can bound a loop of them; orig_path keeps the client's.
 * The answer (or its error: a bad path is 400) is on r when it returns;
 * the calling handler must not touch r->app afterwards. */
void hreq_reroute(hreq *r, const char *method, const char *target);
/* Each request header in arrival order, names as sent (those hreq_set_hdr
 * set come last, in place of the client's of their name): cb returns 0 to
 * go on; a nonzero return stops the walk and is returned. */
int hreq_each_hdr(hreq *r, int (*cb)(void *arg, const char *name, const char *val), void *arg);
/* The client's address as mochiweb's get(peer) gives it: the socket's IP;
 * from 127.0.0.1 or 10.x the last X-Forwarded-For entry when there is one.
 * Appended to b ("127.0.0.1" when the socket is unknown). */
void hreq_peer(hreq *r, dv_buf *b);
/* The same without a copy: *len bytes at the result, which is tmp (the
 * socket's address) or in the X-Forwarded-For header (valid while r is). */
const char *hreq_peer_ref(hreq *r, char tmp[64], size_t *len);

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
/* The error for a DV_E* code with a reason of its own (NULL: the
 * table's): the status and error name still come from the table. */
void hres_errw(hreq *r, int rc, const char *why);
/* The error a design-document function threw (index/qs.h: a name of its
 * own, e.g. throw(["error","my_error","…"])): rc's status with that name
 * (NULL: rc's own), as chttpd answers {Error, Reason} it has no clause for. */
void hres_errn(hreq *r, int rc, const char *error, const char *why);
/* printf-style reason. */
void hres_errwf(hreq *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* There is no call taking a status and an error name: a (status, error)
 * pair CouchDB answers with is a row of util/err.h, added there once. */
/* 405 (DV_EMETHOD) with Allow: allowed (e.g. "GET,HEAD,POST"). */
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
/* After hres_feed, for a feed that mostly waits (continuous, longpoll,
 * eventsource): it hands the engine small pieces (HTTP_FEED_BLOCK_LIVE),
 * so an idle one keeps small buffers. */
void hfeed_live(hreq *r);

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
/* With hres_defer: when hdefer_done comes, run fn(r) on a pool thread
 * before answering (it sets the response; it may defer again). So the
 * thread that calls hdefer_done (a store commit's completion, which must
 * not block) only resumes the connection, and the answer is built where
 * blocking is allowed. */
void hres_defer_then(hreq *r, void (*fn)(hreq *r));
/* Work that blocks (a design-document function: up to its timeout) off
 * the pool threads, whose other connections would wait for it: the
 * request is deferred, work(r) runs on one of the server's offload
 * threads (it may use r->a and the handler's state, not r's response),
 * then fn(r) on a pool thread builds the answer as hres_defer_then's. */
void hres_offload(hreq *r, void (*work)(hreq *r), void (*fn)(hreq *r));

/* Wake the feed at this monotonic time in ms (0: no timer). */
void hfeed_timer(hfeed *f, int64_t due_ms);
/* Monotonic clock, ms. */
int64_t hnow_ms(void);
/* Monotonic clock, µs (r->t_start_us's). */
int64_t hnow_us(void);

/* ---- streamed request bodies and sized streamed responses (attachments) --- */

/* A body sink takes a request body piece by piece instead of r->body (no
 * max_body: the sink enforces its own limit). A route flagged
 * HTTP_STREAM_BODY is matched, identified, authorized and its handler run
 * on the first call, when the headers are in and no body byte has been
 * read: the handler sets the sink (hreq_sink) or writes an error (sent at
 * once, the body unread). */
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

/* Send the body of r to ops (from a HTTP_STREAM_BODY handler only). */
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

/* ---- the route table and the application ------------------------------------ */

/* Flags of a route the engine acts on; bits from HTTP_APP_FLAGS up are the
 * application's own (its authorize callback reads them). */
enum {
  HTTP_STREAM_BODY = 1 << 0, /* the handler runs before the body: it sets a sink (hreq_sink) */
  HTTP_MULTIPART = 1 << 1,   /* a row for multipart/related bodies only: app->route takes it for no other
                                Content-Type (the next row of its pattern answers those) */
  HTTP_JSON_BODY = 1 << 2,   /* Content-Type must be application/json, else 415 */
  HTTP_JSON_OBJECT = 1 << 3, /* HTTP_JSON_BODY, and the body a JSON object, parsed into r->json, else 400 */
  HTTP_APP_FLAGS = 1 << 8,
};

/* Method bits for http_route.methods (HTTP_ANY: the handler decides, and
 * answers its own 405). */
#define HTTP_M(m) (1u << (m))
#define HTTP_ANY 0u

/* One row of a route table: which requests, what every handler of them
 * needs (flags), and the handler. pattern is the application's (app->route
 * matches it); methods are checked here: a request whose method the row
 * does not take gets 405 with Allow listing them. */
typedef struct http_route {
  unsigned methods;          /* HTTP_M(HM_GET) | …, or HTTP_ANY */
  const char *pattern;       /* e.g. "/{db}/_bulk_docs" */
  unsigned flags;            /* HTTP_* and the application's */
  void (*handler)(hreq *r);
} http_route;

/* The application: how the engine calls up. */
typedef struct http_app {
  void *arg;                 /* the application's server state: http_app_arg(r) */
  size_t req_size;           /* bytes of struct hreq_app per request (zeroed) */
  /* The route for r (its path, method and headers are in), or NULL with
   * the error written. */
  const http_route *(*route)(hreq *r);
  /* Who asks: 0, or -1 with the error written (a bad credential). */
  int (*identify)(hreq *r);
  /* May they use this route: 0, or -1 with the error written. */
  int (*authorize)(hreq *r, const http_route *rt);
  /* A whole answer (not a feed or a stream) is about to be queued: its
   * status is final, and the client may read it before done runs (its
   * next request, on another connection, may even be served first).
   * May be NULL. */
  void (*answered)(hreq *r);
  /* The request is over: free what r->app holds. May be NULL. */
  void (*done)(hreq *r);
} http_app;

/* The application's server state (http_app.arg). */
void *http_app_arg(hreq *r);

/* Start serving. app and what it points to must outlive the server.
 * Returns 0, DV_EIO (cannot bind), DV_EINVAL (bad address) or DV_ENOMEM. */
int http_start(const http_app *app, const http_opts *o, http_server **out) DV_MUST_CHECK;
/* The port actually bound. */
int http_port(http_server *h);
/* The pool's thread count. */
int http_threads(http_server *h);
/* The options in force (defaults filled in). */
const http_opts *http_options(http_server *h);
/* libmicrohttpd's version ("0.9.75"), for /_node/_local/_versions. */
const char *http_engine_version(void);
/* Stop: ends every feed, waits for requests in flight. NULL is a no-op. */
void http_stop(http_server *h);

#endif
