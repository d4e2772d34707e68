/* server.c — the HTTP server: libmicrohttpd's epoll thread pool, request
 * bodies and limits, responses, and streamed feeds that wait without
 * holding a thread.
 *
 * Before any of this, every byte read from a client passes hwire (the
 * request framing, RFC 9112), and the connection limits and the request
 * head deadline apply: "connections" below.
 *
 * One request (MHD calls `on_request` several times):
 *
 *   1st call   headers are in: make the hreq (its arena, r->app), decode
 *              the path and query, ask the application for the route,
 *              refuse early what is refused by headers alone (Content-Length
 *              over max_body → 413, an Expect other than 100-continue →
 *              417). A route flagged HTTP_STREAM_BODY (an attachment
 *              upload, a document PUT with a multipart/related body) is
 *              identified, authorized and its handler run here, before any
 *              body byte is read, and its body goes to the sink the handler
 *              sets (hreq_sink) instead of r->body: no max_body for it, the
 *              sink enforces its own limits.
 *   Nth call   a piece of the body: to the sink, or appended to r->body
 *              while ≤ max_body (past it: drop the rest, answer 413 at the
 *              end). A sink that refuses a piece has set the error: the
 *              rest is dropped and that error sent at the end.
 *   last call  (no more body) the sink's finish builds the response; else
 *              a CORS preflight is answered, or run_route: identify,
 *              authorize (the application's callbacks), the route's methods
 *              (405), HTTP_JSON_BODY (415) and HTTP_JSON_OBJECT (400), the
 *              handler; and queue the response it built.
 *   completed  `on_completed` frees the hreq (and the sink); a feed's or a
 *              stream's response is freed by MHD when the connection lets
 *              go of it (`feed_free`, `stream_free`).
 *
 * Streams (hres_stream): a body of known length pulled by MHD through
 * `stream_read`, which asks the producer for each piece (attachments read
 * back from the store). A producer that fails ends the connection: the
 * client sees a body shorter than its Content-Length.
 *
 * Feeds (hfeed): the response is read through `feed_read`, which asks the
 * feed's step for more output. When a step answers HF_WAIT the connection
 * is suspended (MHD_suspend_connection, from inside the reader as MHD
 * allows) and no pool thread is held. Three things resume it: hfeed_wake
 * (a kv watch callback), the feed's timer, and the reaper noticing the
 * client closed its socket (a suspended connection is invisible to MHD's
 * own timeout and disconnect detection, so the reaper thread peeks at
 * each suspended socket every REAP_MS). All feed state is under srv->mu.
 *
 * The URL is taken raw (an identity unescape callback) so that "%2F" in a
 * document id is not mistaken for a path separator; we split the path on
 * '/' first and percent-decode each segment after.
 *
 * Not here: the request helpers (hreq.c); routes, identities and handlers
 * (the application, api/).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "http/http_int.h"
#include "http/hwire.h"
#include "util/alloc.h"
#include "util/deadline.h"
#include "util/log.h"
#include "util/stats.h"
#include "util/thread.h"

#define REAP_MS 50        /* reaper tick: timers and left clients */
#define HREQ_ARENA_CHUNK 1024 /* a request's first arena chunk (later ones grow): small, as a feed keeps it */
#define PEEK_EVERY 10     /* peek at suspended sockets every N ticks */
#define DEADLINE_EVERY 4  /* check head deadlines and lingering refusals every N ticks */
#define LINGER_MS 2000    /* a refused connection's input is drained this long, then it is cut */

typedef struct hconn hconn;

struct http_server {
  http_app app;           /* the application: routes and callbacks */
  http_opts o;            /* options, defaults filled in */
  struct MHD_Daemon *d;   /* the daemon */
  int port;               /* bound port */
  pthread_mutex_t mu;     /* feeds and their state */
  hfeed *feeds;           /* every live feed (doubly linked) */
  pthread_t reaper;       /* timers and disconnects of waiting feeds */
  pthread_cond_t cv;      /* wakes the reaper on stop */
  int stopping;           /* 1 once http_stop began */
  pthread_mutex_t cmu;    /* conns, nconns */
  hconn *conns;           /* every client connection, oldest `since` first */
  hconn *conns_tail;      /* the newest */
  int nconns;             /* how many */
  _Atomic size_t body_cost; /* the bodies admitted and not yet finished, as HTTP_BODY_COST × bytes (admit) */
  /* hres_offload's workers, started as jobs come (at most OFF_THREADS) */
  pthread_mutex_t omu;
  pthread_cond_t ocv;
  struct off_job *oq, *oq_tail; /* jobs waiting */
  pthread_t oth[64];
  int on, oidle, ostop;
};

#define OFF_THREADS 64 /* blocking work (design-document functions, validated writes) at once, off the pool */

struct off_job {
  struct off_job *next;
  hreq *r;
  void (*work)(hreq *r);
};


struct hfeed {
  hsrv *srv;                 /* owner */
  struct MHD_Connection *conn; /* the connection it streams to */
  int fd;                    /* its socket, for the reaper's peek */
  size_t block;              /* bytes per piece handed to libmicrohttpd */
  const hfeed_ops *ops;      /* the producer */
  void *arg;                 /* its state (freed by ops->done) */
  dv_buf buf;                /* output produced, not yet handed to MHD */
  size_t off;                /* bytes of buf already handed out */
  int woken;                 /* a wake arrived (consumed by hfeed_woken) */
  int suspended;             /* the connection is suspended by us */
  int want_wait;             /* the last step said HF_WAIT */
  int finished;              /* the last step said HF_DONE */
  int gone;                  /* the client left or the server stops */
  int dead;                  /* done() began: ignore wakes */
  int64_t due;               /* timer (monotonic ms), 0 = none */
  int fired;                 /* the timer came due: step again */
  hfeed *next, *prev;        /* srv->feeds */
};

/* A client connection (MHD's socket context), from accept to close.
 * Every byte read on it passes through w (see "connections" below). */
struct hconn {
  hsrv *srv;              /* owner */
  int fd;                 /* the socket */
  pthread_mutex_t mu;     /* w, refused, linger_until: the MHD thread's recv and the reaper */
  hwire w;                /* the request framing so far */
  _Atomic int64_t head_since; /* monotonic ms the current request head began, 0 = none in progress */
  _Atomic int busy;       /* heads completed minus requests MHD finished: > 0 while one is handled */
  _Atomic int64_t body_since; /* monotonic ms the current request body began, 0 = none arriving */
  _Atomic uint64_t body_bytes; /* bytes received since (request_body_min_rate) */
  _Atomic int64_t stall_since; /* monotonic ms a send first found the socket full, 0 = it took everything */
  int refused;            /* we answered (framing error, head timeout): drain input, then close */
  int64_t linger_until;   /* when a refused connection is cut */
  int64_t since;          /* last became idle (accept, a request finished): eviction order */
  hconn *next, *prev;     /* srv->conns (under srv->cmu) */
};

/* ---- small tools --------------------------------------------------------- */

int64_t hnow_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t hnow_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A request id: 10 hex digits (40 bits), as chttpd's nonce
 * (couch_util:to_hex(crypto:strong_rand_bytes(5))). It names a request in
 * the log, so a per-thread xorshift seeded from the kernel will do: no
 * system call per request. */
static void new_reqid(char out[11]) {
  static __thread uint64_t x;
  static const char hex[] = "0123456789abcdef";
  while (!x)
    if (getrandom(&x, sizeof x, 0) != sizeof x) x = (uint64_t)hnow_us() ^ (uint64_t)(uintptr_t)&x;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  uint64_t v = x >> 24;
  for (int i = 9; i >= 0; i--, v >>= 4) out[i] = hex[v & 15];
  out[10] = 0;
}

/* libmicrohttpd's own complaints (a failed accept, a connection it gave
 * up on) go to the log, not to a bare stderr. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  if (!log_enabled(DV_LOG_WARNING)) return;
  char msg[512];
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
  while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' ')) len--;
  log_write(DV_LOG_WARNING, NULL, msg, len);
}

void *http_app_arg(hreq *r) { return r->srv->app.arg; }
int http_port(http_server *h) { return h->port; }
int http_threads(http_server *h) { return h->o.threads; }
const http_opts *http_options(http_server *h) { return &h->o; }
const char *http_engine_version(void) { return MHD_get_version(); }

/* ---- responses ------------------------------------------------------------ */

static void buf_release(void *p) { dv_free(p); }

/* ---- CORS ([chttpd] enable_cors, [cors]; chttpd_cors.erl) --------------------
 *
 * A request with an Origin header that [cors] origins allows ("*" or a
 * comma-separated list) gets Access-Control-Allow-Origin (the origin
 * itself when credentials are allowed), -Allow-Credentials and
 * -Expose-Headers; a preflight (OPTIONS with Access-Control-Request-Method)
 * is answered here with the allowed methods and headers. Nothing is added
 * when CORS is off or the origin is not allowed. */

#define CORS_METHODS "GET, HEAD, POST, PUT, DELETE, TRACE, CONNECT, COPY, OPTIONS"
#define CORS_HEADERS "accept, accept-language, authorization, content-length, content-range, content-type, destination, expires, if-match, last-modified, origin, pragma, referer, x-couchdb-www-authenticate, x-http-method-override, x-requested-with, x-couchdb-vhost-path"
#define CORS_EXPOSE "content-type, cache-control, accept-ranges, etag, server, x-couch-request-id, x-couch-update-newrev, x-couchdb-body-time"

static int list_has(const char *list, const char *item) {
  size_t n = strlen(item);
  const char *p = list;
  while (p && *p) {
    while (*p == ' ' || *p == ',') p++;
    const char *e = p;
    while (*e && *e != ',') e++;
    const char *t = e;
    while (t > p && t[-1] == ' ') t--;
    if ((size_t)(t - p) == n && !strncasecmp(p, item, n)) return 1;
    p = e;
  }
  return 0;
}

/* The origin to allow, in r's arena, or NULL. */
static const char *cors_origin(hreq *r, int *credentials) {
  dv_config *c = r->srv->o.config;
  const char *origin = hreq_hdr(r, "Origin");
  if (!c || !origin || !*origin || !config_get_bool(c, "chttpd", "enable_cors", config_get_bool(c, "httpd", "enable_cors", 0)))
    return NULL; /* chttpd_util:get_chttpd_config_boolean: [httpd] is the fallback (Fauxton writes it) */
  char *origins = config_get(c, "cors", "origins");
  int any = origins && !strcmp(origins, "*");
  int ok = any || (origins && list_has(origins, origin));
  dv_free(origins);
  if (!ok) return NULL;
  *credentials = config_get_bool(c, "cors", "credentials", 0);
  return any && !*credentials ? "*" : origin;
}

/* A preflight answered here: 1 (r->status set), else 0. */
static int cors_preflight(hreq *r) {
  if (r->method != HM_OPTIONS || !hreq_hdr(r, "Access-Control-Request-Method")) return 0;
  int cred = 0;
  const char *o = cors_origin(r, &cred);
  if (!o) return 0;
  dv_config *c = r->srv->o.config;
  char *methods = config_get(c, "cors", "methods"), *headers = config_get(c, "cors", "headers");
  const char *want = hreq_hdr(r, "Access-Control-Request-Method");
  int ok = list_has(methods ? methods : CORS_METHODS, want);
  if (ok) {
    hres_header(r, "Access-Control-Allow-Origin", o);
    if (cred) hres_header(r, "Access-Control-Allow-Credentials", "true");
    hres_header(r, "Access-Control-Allow-Methods", methods ? methods : CORS_METHODS);
    hres_header(r, "Access-Control-Allow-Headers", headers ? headers : CORS_HEADERS);
    char *age = config_get(c, "cors", "max_age");
    hres_header(r, "Access-Control-Max-Age", age ? age : "600");
    dv_free(age);
  }
  dv_free(methods);
  dv_free(headers);
  if (!ok) return 0;
  hres_raw(r, 204, "text/plain", "", 0);
  return 1;
}

static void add_common_headers(hreq *r, struct MHD_Response *res, const char *ctype) {
  MHD_add_response_header(res, "Content-Type", ctype);
  int own_cc = 0; /* a handler's Cache-Control (/_uuids, /_utils) replaces the default */
  for (int i = 0; i < r->nhdr; i++) own_cc |= !strcasecmp(r->hdr[i].name, "Cache-Control");
  if (!own_cc) MHD_add_response_header(res, "Cache-Control", "must-revalidate");
  MHD_add_response_header(res, "Server", r->srv->o.server);
  MHD_add_response_header(res, "X-Couch-Request-ID", r->reqid);
  for (int i = 0; i < r->nhdr; i++) MHD_add_response_header(res, r->hdr[i].name, r->hdr[i].val);
  if (r->status == 401 && r->srv->o.config) { /* [chttpd] WWW-Authenticate, as chttpd:error_headers */
    char *wa = config_get(r->srv->o.config, "chttpd", "WWW-Authenticate");
    if (wa && *wa) MHD_add_response_header(res, "WWW-Authenticate", wa);
    dv_free(wa);
  }
  int cred = 0;
  const char *o = r->method == HM_OPTIONS && hreq_hdr(r, "Access-Control-Request-Method") ? NULL : cors_origin(r, &cred);
  if (o) {
    MHD_add_response_header(res, "Access-Control-Allow-Origin", o);
    if (cred) MHD_add_response_header(res, "Access-Control-Allow-Credentials", "true");
    MHD_add_response_header(res, "Access-Control-Expose-Headers", CORS_EXPOSE);
  }
}

static enum MHD_Result send_response(hreq *r) {
  struct MHD_Connection *c = r->conn;
  if (!r->status) hres_err(r, DV_ENO_RESPONSE);
  int json = !r->ctype || !strcmp(r->ctype, "application/json");
  if (json && r->status != 304 && r->out.len) buf_putc(&r->out, '\n');
  if (buf_error(&r->out)) {
    buf_reset(&r->out);
    hres_err(r, DV_ENOMEM);
    buf_putc(&r->out, '\n');
  }
  size_t n = 0;
  uint8_t *p = NULL;
  if (r->status == 304) buf_reset(&r->out);
  if (r->out.len) p = buf_detach(&r->out, &n);
  struct MHD_Response *res = p ? MHD_create_response_from_buffer_with_free_callback(n, p, buf_release)
                               : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!res) {
    dv_free(p);
    return MHD_NO;
  }
  add_common_headers(r, res, r->ctype ? r->ctype : "application/json");
  if (r->app && r->srv->app.answered) r->srv->app.answered(r);
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, res);
  MHD_destroy_response(res);
  return ok;
}

/* ---- feeds ----------------------------------------------------------------- */

static void feed_link(hfeed *f) {
  hsrv *s = f->srv;
  pthread_mutex_lock(&s->mu);
  f->next = s->feeds;
  if (s->feeds) s->feeds->prev = f;
  s->feeds = f;
  if (s->stopping) f->gone = 1;
  pthread_mutex_unlock(&s->mu);
}

/* Resume f if we suspended it (caller holds srv->mu). */
static void feed_resume_locked(hfeed *f) {
  if (f->suspended) {
    f->suspended = 0;
    MHD_resume_connection(f->conn);
  }
}

void hfeed_wake(hfeed *f) {
  hsrv *s = f->srv;
  pthread_mutex_lock(&s->mu);
  if (!f->dead) {
    f->woken = 1;
    feed_resume_locked(f);
  }
  pthread_mutex_unlock(&s->mu);
}

int hfeed_woken(hfeed *f) {
  pthread_mutex_lock(&f->srv->mu);
  int w = f->woken;
  f->woken = 0;
  pthread_mutex_unlock(&f->srv->mu);
  return w;
}

void hfeed_timer(hfeed *f, int64_t due_ms) {
  pthread_mutex_lock(&f->srv->mu);
  f->due = due_ms;
  pthread_mutex_unlock(&f->srv->mu);
}

static ssize_t feed_read(void *cls, uint64_t pos, char *out, size_t max) {
  hfeed *f = cls;
  for (;;) {
    if (f->off < f->buf.len) {
      size_t n = f->buf.len - f->off;
      if (n > max) n = max;
      memcpy(out, f->buf.p + f->off, n);
      f->off += n;
      return (ssize_t)n;
    }
    if (f->finished) return MHD_CONTENT_READER_END_OF_STREAM;
    buf_reset(&f->buf);
    f->off = 0;
    if (f->want_wait) {
      hsrv *s = f->srv;
      pthread_mutex_lock(&s->mu);
      int go_on = f->woken || f->gone || f->fired || (f->due && hnow_ms() >= f->due);
      f->fired = 0;
      if (!go_on) {
        buf_free(&f->buf); /* an idle feed holds no output buffer */
        buf_init(&f->buf);
        f->suspended = 1;
        MHD_suspend_connection(f->conn);
        pthread_mutex_unlock(&s->mu);
        return 0; /* nothing now; called again once resumed */
      }
      pthread_mutex_unlock(&s->mu);
      f->want_wait = 0;
    }
    pthread_mutex_lock(&f->srv->mu);
    int gone = f->gone;
    pthread_mutex_unlock(&f->srv->mu);
    if (gone) return MHD_CONTENT_READER_END_WITH_ERROR;
    int rc = f->ops->step(f->arg, f, &f->buf);
    if (buf_error(&f->buf) || rc == HF_FAIL) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (rc == HF_DONE) f->finished = 1;
    else if (rc == HF_WAIT) f->want_wait = 1;
  }
}

static void feed_free(void *cls) {
  hfeed *f = cls;
  hsrv *s = f->srv;
  pthread_mutex_lock(&s->mu);
  f->dead = 1;
  if (f->prev) f->prev->next = f->next;
  else if (s->feeds == f) s->feeds = f->next;
  if (f->next) f->next->prev = f->prev;
  f->next = f->prev = NULL;
  pthread_mutex_unlock(&s->mu);
  f->ops->done(f->arg); /* may run watch callbacks → hfeed_wake, ignored */
  buf_free(&f->buf);
  dv_free(f);
}

void hres_feed(hreq *r, int status, const char *ctype, const hfeed_ops *ops, void *arg) {
  hfeed *f = dv_calloc(1, sizeof *f);
  if (!f) {
    ops->done(arg);
    hres_err(r, DV_ENOMEM);
    return;
  }
  f->srv = r->srv;
  f->conn = r->conn;
  f->block = HTTP_FEED_BLOCK;
  f->ops = ops;
  f->arg = arg;
  buf_init(&f->buf);
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  f->fd = ci ? ci->connect_fd : -1;
  r->status = status;
  r->ctype = ctype;
  r->feed = f;
}

void hfeed_live(hreq *r) {
  if (r->feed) r->feed->block = HTTP_FEED_BLOCK_LIVE;
}

static enum MHD_Result queue_feed(hreq *r) {
  hfeed *f = r->feed;
  r->feed = NULL;
  struct MHD_Response *res = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, f->block, feed_read, f, feed_free);
  if (!res) {
    f->ops->done(f->arg);
    buf_free(&f->buf);
    dv_free(f);
    return MHD_NO;
  }
  feed_link(f);
  add_common_headers(r, res, r->ctype ? r->ctype : "application/json");
  enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)r->status, res);
  MHD_destroy_response(res); /* feed_free runs when the connection lets go */
  return ok;
}


/* ---- connections: framing, head deadline, caps ------------------------------
 *
 * libmicrohttpd reads each client socket with recv(); this file defines
 * recv, so the dynamic linker binds libmicrohttpd's calls here (the
 * executable's symbol comes first). For a socket that is one of our
 * client connections (conn_by_fd, filled by the connection notifier) the
 * bytes go through the connection's hwire before libmicrohttpd gets them;
 * every other socket in the process (libcurl's, …) is passed through
 * untouched. When hwire refuses the framing (hwire.h: smuggling shapes,
 * unknown transfer codings, folding, malformed chunks, heads too large),
 * the JSON answer is written to the socket here, the write side shut, and
 * libmicrohttpd never sees those bytes: it gets EAGAIN while the input is
 * drained and EOF once the client closes or LINGER_MS passed (a close with
 * unread input would reset the connection and could destroy the answer
 * in flight — the lingering close of RFC 9112 9.6).
 *
 * The reaper enforces:
 *   request_head_timeout  from a head's first byte to its last (408);
 *                         libmicrohttpd's own timeout is an idle timeout,
 *                         reset by every byte, so a client sending one
 *                         byte a second was never timed out (issue 24);
 *   request_body_timeout, request_body_min_rate  a body's deadline, the
 *                         same way (408; conns_tick);
 *   send_timeout          a response whose client reads nothing for it
 *                         is cut (send, sendmsg below);
 *   max_connections       counted here; when a new connection passes it,
 *                         the connection idle or in its head the longest
 *                         is closed (408 when a head was under way), as
 *                         nginx reuses idle keep-alive connections, so a
 *                         crowd of slow clients cannot lock everyone out;
 *                         libmicrohttpd's own limit sits a little above;
 *   max_connections_per_client  libmicrohttpd's per-IP limit: a new
 *                         connection past it is closed at once.
 * A connection is busy — never evicted nor timed — from the end of its
 * head until libmicrohttpd finishes its request (on_completed). */

static _Atomic(hconn *) *conn_by_fd; /* fd → connection; sized once, never freed */
static size_t conn_fd_cap;           /* its slots (the fd limit at the first start) */

static ssize_t sys_recv(int fd, void *buf, size_t len, int flags) {
  return (ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

/* A whole CouchDB-style answer for rc, written to fd without blocking (a
 * 503 says when to come back: Retry-After). */
static void refusal_send(int fd, const char *server, int rc) {
  char body[256], msg[768];
  int bn = snprintf(body, sizeof body, "{\"error\":\"%s\",\"reason\":\"", dv_err_couch(rc));
  for (const char *p = dv_strerror(rc); *p && bn < (int)sizeof body - 4; p++) {
    if (*p == '"' || *p == '\\') body[bn++] = '\\';
    body[bn++] = *p;
  }
  bn += snprintf(body + bn, sizeof body - (size_t)bn, "\"}\n");
  int st = dv_err_http(rc);
  const char *text = st == 400 ? "Bad Request" : st == 408 ? "Request Timeout" : st == 414 ? "URI Too Long"
                   : st == 431 ? "Request Header Fields Too Large" : st == 501 ? "Not Implemented"
                   : st == 503 ? "Service Unavailable" : "Error";
  int n = snprintf(msg, sizeof msg,
                   "HTTP/1.1 %d %s\r\nServer: %s\r\nContent-Type: application/json\r\nCache-Control: must-revalidate\r\n"
                   "%sConnection: close\r\nContent-Length: %d\r\n\r\n%s",
                   st, text, server, st == 503 ? "Retry-After: " HTTP_RETRY_AFTER "\r\n" : "", bn, body);
  if (n > 0 && n < (int)sizeof msg) (void)!send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Write a CouchDB-style answer for rc and shut the write side (c->mu held). */
static void conn_refuse(hconn *c, int rc) {
  refusal_send(c->fd, c->srv->o.server, rc);
  shutdown(c->fd, SHUT_WR);
  c->refused = 1;
  c->linger_until = hnow_ms() + LINGER_MS;
  atomic_store(&c->head_since, 0);
  atomic_store(&c->body_since, 0);
}

/* The bytes recv just returned for c: check them, or drain after a refusal. */
static ssize_t conn_filter(hconn *c, void *buf, size_t len, ssize_t n) {
  pthread_mutex_lock(&c->mu);
  if (!c->refused && n > 0) {
    int was = c->w.in_head, was_body = hwire_in_body(&c->w);
    uint64_t heads = c->w.heads;
    int rc = hwire_feed(&c->w, buf, (size_t)n);
    if (rc) {
      conn_refuse(c, rc);
    } else {
      if (c->w.heads != heads) atomic_fetch_add(&c->busy, (int)(c->w.heads - heads));
      if (!c->w.in_head) atomic_store(&c->head_since, 0);
      else if (!was || c->w.heads != heads) atomic_store(&c->head_since, hnow_ms());
      if (!hwire_in_body(&c->w)) {
        atomic_store(&c->body_since, 0);
      } else {
        if (!was_body || c->w.heads != heads) { /* a new body: its deadline starts now */
          atomic_store(&c->body_bytes, 0);
          atomic_store(&c->body_since, hnow_ms());
        }
        atomic_fetch_add(&c->body_bytes, (uint64_t)n);
      }
    }
  }
  if (c->refused) { /* drain what is there; EOF once the client closed or the linger ended */
    while (n > 0) n = sys_recv(c->fd, buf, len, MSG_DONTWAIT);
    if (n == 0 || hnow_ms() >= c->linger_until) n = 0;
    else if (errno != EAGAIN && errno != EWOULDBLOCK) n = -1;
    else n = -1, errno = EAGAIN;
  }
  pthread_mutex_unlock(&c->mu);
  return n;
}

/* libmicrohttpd's recv (see above). */
ssize_t recv(int fd, void *buf, size_t len, int flags) {
  ssize_t n = sys_recv(fd, buf, len, flags);
  _Atomic(hconn *) *t = conn_by_fd;
  hconn *c = t && fd >= 0 && (size_t)fd < conn_fd_cap ? atomic_load(&t[fd]) : NULL;
  if (!c) return n;
  int e = errno;
  n = conn_filter(c, buf, len, n);
  if (n >= 0) errno = e;
  return n;
}

/* libmicrohttpd's send and sendmsg (defined here as recv is): a send that
 * finds a client's socket full starts its connection's stall clock, one
 * that writes anything restarts it — or stops it when it wrote all it was
 * given (libmicrohttpd takes a partial send for a full socket and waits for
 * EPOLLOUT without trying again, so a partial send starts the clock too). The reaper cuts a connection whose clock
 * passes send_timeout: a client that never reads its response — a
 * continuous feed above all, which would otherwise wait for it forever
 * (libmicrohttpd's idle timeout is 300 s and a suspended feed hides from
 * it) holding its buffers. */
static void conn_sent(int fd, size_t len, ssize_t n, int err) {
  _Atomic(hconn *) *t = conn_by_fd;
  hconn *c = t && fd >= 0 && (size_t)fd < conn_fd_cap ? atomic_load(&t[fd]) : NULL;
  if (!c) return;
  if (n > 0) atomic_store(&c->stall_since, (size_t)n < len ? hnow_ms() : 0);
  else if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK) && !atomic_load(&c->stall_since))
    atomic_store(&c->stall_since, hnow_ms());
}

ssize_t send(int fd, const void *buf, size_t len, int flags) {
  ssize_t n = (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
  int e = errno;
  conn_sent(fd, len, n, e);
  errno = e;
  return n;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  ssize_t n = (ssize_t)syscall(SYS_sendmsg, fd, msg, flags);
  int e = errno;
  size_t len = 0;
  for (size_t i = 0; msg && i < (size_t)msg->msg_iovlen; i++) len += msg->msg_iov[i].iov_len;
  conn_sent(fd, len, n, e);
  errno = e;
  return n;
}

/* ---- out of file descriptors: accept4 ----------------------------------------
 *
 * libmicrohttpd accepts with accept4(); this file defines it too (as recv
 * above, the executable's symbol is the one bound). When the process has
 * no descriptor left (EMFILE, ENFILE), libmicrohttpd 0.9.75 logs the
 * failure and, in a pool thread that has no connection of its own, tries
 * again at once — measured: ~1 s of CPU in 3 s and the log growing by
 * hundreds of MB while the limit lasted. Here such an accept gives up a
 * reserve descriptor kept for the purpose, takes the waiting connection,
 * answers it 503 with Retry-After, closes it and takes the reserve back,
 * for every connection waiting (at most the listen backlog), then tells
 * libmicrohttpd EAGAIN, so it waits for the next one without a log line.
 * Connections already open are untouched and finish their requests; once
 * descriptors are free again accept works as before. */

#define SHED_MAX 1024    /* connections shed by one failed accept: the listen backlog */
#define SHED_NAP_MS 20   /* without a reserve (another thread took the fd): pause, never spin */

static int reserve_fd = -1;      /* /dev/null, given up to answer a connection; -1 = none */
static char shed_server[64] = "divan"; /* the Server header of the answer */
static pthread_mutex_t shed_mu = PTHREAD_MUTEX_INITIALIZER; /* reserve_fd, shed_server */
/* Every accept holds it shared, shed() alone: the other pool threads
 * accept from the same socket, and one of them would take the descriptor
 * the reserve just gave up (it is the lowest free), leaving shed() without
 * one and the connections waiting in the backlog unanswered. */
static pthread_rwlock_t accept_rw = PTHREAD_RWLOCK_INITIALIZER;
static _Atomic uint64_t shed_n;  /* connections answered 503 for want of descriptors */

static int sys_accept4(int fd, struct sockaddr *a, socklen_t *l, int flags) {
  return (int)syscall(SYS_accept4, fd, a, l, flags);
}

/* Answer every connection waiting on lfd 503 (out of descriptors). */
static void shed(int lfd) {
  int n = 0;
  pthread_rwlock_wrlock(&accept_rw);
  pthread_mutex_lock(&shed_mu);
  if (reserve_fd < 0) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* lost before: again */
  while (n < SHED_MAX && reserve_fd >= 0) {
    close(reserve_fd);
    int c = sys_accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) {
      char junk[2048]; /* the request so far: a close with unread input would reset the answer */
      while (sys_recv(c, junk, sizeof junk, MSG_DONTWAIT) > 0) {}
      refusal_send(c, shed_server, DV_EHTTP_BUSY);
      shutdown(c, SHUT_WR);
      close(c);
      n++;
    }
    reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (c < 0) break; /* none waits (EAGAIN), or the fd went to another thread */
  }
  int none = reserve_fd < 0;
  pthread_mutex_unlock(&shed_mu);
  pthread_rwlock_unlock(&accept_rw);
  uint64_t before = atomic_fetch_add(&shed_n, (uint64_t)n);
  if (n && (before == 0 || (before + (uint64_t)n) / 1000 != before / 1000)) /* the first, then every 1000th */
    log_warning("out of file descriptors: %llu new connections answered 503 so far", (unsigned long long)(before + (uint64_t)n));
  if (none) usleep(SHED_NAP_MS * 1000);
}

/* libmicrohttpd's accept4 (see above). */
int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  pthread_rwlock_rdlock(&accept_rw);
  int c = sys_accept4(fd, addr, len, flags);
  int e = errno;
  pthread_rwlock_unlock(&accept_rw);
  errno = e;
  if (c >= 0 || (errno != EMFILE && errno != ENFILE)) return c;
  shed(fd);
  errno = EAGAIN;
  return -1;
}

/* Raise the soft fd limit to the hard one (each connection is an fd) and
 * size the fd table. */
static int conns_setup(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
  }
  pthread_mutex_lock(&shed_mu);
  if (reserve_fd < 0) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pthread_mutex_unlock(&shed_mu);
  if (conn_by_fd) return 0;
  size_t cap = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (size_t)rl.rlim_cur : 65536;
  if (cap > (1u << 22)) cap = 1u << 22;
  _Atomic(hconn *) *t = dv_calloc(cap, sizeof *t);
  if (!t) return DV_ENOMEM;
  conn_fd_cap = cap;
  conn_by_fd = t;
  return 0;
}

/* Unlink c from srv->conns (cmu held). */
static void conn_unlink(hsrv *s, hconn *c) {
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  else s->conns_tail = c->prev;
  c->next = c->prev = NULL;
}

static void conn_append(hsrv *s, hconn *c) {
  c->prev = s->conns_tail;
  c->next = NULL;
  if (s->conns_tail) s->conns_tail->next = c;
  else s->conns = c;
  s->conns_tail = c;
}

/* Close c for the server's sake (cmu held): 408 when a head was under way,
 * else a plain close. */
static void conn_evict(hconn *c, int rc) {
  pthread_mutex_lock(&c->mu);
  if (!c->refused) {
    if (c->w.in_head) {
      conn_refuse(c, rc);
    } else {
      c->refused = 1;
      c->linger_until = 0;
      shutdown(c->fd, SHUT_RDWR);
    }
  }
  pthread_mutex_unlock(&c->mu);
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  hsrv *s = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = ci ? ci->connect_fd : -1;
    hconn *c = fd >= 0 && (size_t)fd < conn_fd_cap ? dv_calloc(1, sizeof *c) : NULL;
    if (!c) { /* cannot track it: let it go */
      if (fd >= 0) shutdown(fd, SHUT_RDWR);
      return;
    }
    c->srv = s;
    c->fd = fd;
    pthread_mutex_init(&c->mu, NULL);
    hwire_init(&c->w, HTTP_HEADER_LIMIT);
    c->since = hnow_ms();
    *socket_context = c;
    pthread_mutex_lock(&s->cmu);
    conn_append(s, c);
    s->nconns++;
    atomic_store(&conn_by_fd[fd], c);
    if (s->nconns > s->o.max_conns) { /* make room: the longest idle or slow one goes */
      hconn *v = s->conns;
      while (v && (v == c || atomic_load(&v->busy) > 0 || v->refused)) v = v->next;
      if (v) { /* the new one gets its place */
        conn_evict(v, DV_EHTTP_HEAD_TIMEOUT);
      } else { /* every other one is busy (feeds, requests): the new one is told to come back */
        pthread_mutex_lock(&c->mu);
        conn_refuse(c, DV_EOVERLOADED);
        pthread_mutex_unlock(&c->mu);
        dv_stat_inc(DV_ST_S_503);
      }
    }
    pthread_mutex_unlock(&s->cmu);
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    hconn *c = *socket_context;
    if (!c) return;
    pthread_mutex_lock(&s->cmu);
    atomic_store(&conn_by_fd[c->fd], NULL);
    conn_unlink(s, c);
    s->nconns--;
    pthread_mutex_unlock(&s->cmu);
    pthread_mutex_destroy(&c->mu);
    dv_free(c);
    *socket_context = NULL;
  }
}

/* A request on mc finished: the connection is idle again (newest). */
static void conn_request_done(hsrv *s, struct MHD_Connection *mc) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  hconn *c = ci ? ci->socket_context : NULL;
  if (!c) return;
  pthread_mutex_lock(&s->cmu);
  if (atomic_load(&c->busy) > 0) atomic_fetch_sub(&c->busy, 1);
  c->since = hnow_ms();
  conn_unlink(s, c);
  conn_append(s, c);
  pthread_mutex_unlock(&s->cmu);
}

/* Heads and bodies past their deadlines get 408, connections whose client
 * read nothing for send_timeout are cut, refused connections past their
 * linger are cut (the reaper, every DEADLINE_EVERY ticks).
 *
 * A body's deadline is Apache's mod_reqtimeout's: request_body_timeout
 * seconds from the end of its head, one more second for every
 * request_body_min_rate bytes received — a large upload at a sane rate
 * never meets it, a body trickled a byte a second does, and a waiting body
 * holds no pool thread meanwhile (libmicrohttpd reads it by epoll). */
static void conns_tick(hsrv *s, int64_t now) {
  int64_t limit = (int64_t)s->o.head_timeout_s * 1000;
  int64_t body_limit = (int64_t)s->o.body_timeout_s * 1000, send_limit = (int64_t)s->o.send_timeout_s * 1000;
  pthread_mutex_lock(&s->cmu);
  for (hconn *c = s->conns; c; c = c->next) {
    int64_t hs = atomic_load(&c->head_since), bs = atomic_load(&c->body_since), ss = atomic_load(&c->stall_since);
    if (hs && now - hs >= limit) {
      conn_evict(c, DV_EHTTP_HEAD_TIMEOUT);
    } else if (bs && now - bs >= body_limit + (int64_t)(atomic_load(&c->body_bytes) * 1000 / (uint64_t)s->o.body_min_rate)) {
      pthread_mutex_lock(&c->mu);
      if (!c->refused) conn_refuse(c, DV_EHTTP_BODY_TIMEOUT);
      pthread_mutex_unlock(&c->mu);
    } else if (ss && now - ss >= send_limit && !c->refused) {
      pthread_mutex_lock(&c->mu);
      log_info("a client read nothing of its response for %d s: connection closed (send_timeout)", s->o.send_timeout_s);
      c->refused = 1;
      c->linger_until = 0;
      atomic_store(&c->stall_since, 0);
      shutdown(c->fd, SHUT_RDWR);
      pthread_mutex_unlock(&c->mu);
    } else if (c->refused && now >= c->linger_until) {
      pthread_mutex_lock(&c->mu);
      shutdown(c->fd, SHUT_RDWR);
      pthread_mutex_unlock(&c->mu);
    }
  }
  pthread_mutex_unlock(&s->cmu);
}

/* Timers and clients that left, for suspended feeds; head deadlines. */
static void *reaper_main(void *arg) {
  dv_thread_name("dv-http-reaper");
  hsrv *s = arg;
  unsigned tick = 0;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping) {
    struct timespec ts = dv_deadline_ms(CLOCK_REALTIME, REAP_MS);
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    if (s->stopping) break;
    int64_t now = hnow_ms();
    int peek = ++tick % PEEK_EVERY == 0;
    if (tick % DEADLINE_EVERY == 0) {
      pthread_mutex_unlock(&s->mu); /* conns_tick takes cmu; never both */
      conns_tick(s, now);
      pthread_mutex_lock(&s->mu);
      if (s->stopping) break;
    }
    for (hfeed *f = s->feeds; f; f = f->next) {
      if (!f->suspended) continue;
      if (f->due && now >= f->due) {
        f->due = 0;
        f->fired = 1;
        feed_resume_locked(f);
        continue;
      }
      if (peek && f->fd >= 0) {
        char c;
        ssize_t n = recv(f->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          f->gone = 1;
          feed_resume_locked(f);
        }
      }
    }
  }
  pthread_mutex_unlock(&s->mu); /* http_stop ends the feeds */
  return NULL;
}

/* ---- the request context: body sinks and sized streams (attachments) -------- */

typedef struct hstream hstream;

struct hctx {
  hreq r;           /* the request (first: an hreq * is its hctx *) */
  int too_large;    /* the body passed max_body */
  int answered;     /* a response was queued */
  const hsink_ops *sink; /* the body goes here, not to r.body (hreq_sink) */
  void *sink_arg;   /* its state (freed by sink->done) */
  int sink_err;     /* the sink refused a piece: its error is in r */
  hstream *stream;  /* a sized streamed body (hres_stream), not yet queued */
  int deferred;     /* the handler answers later (hres_defer) */
  int defer_done;   /* hdefer_done came: the response is in r */
  int defer_susp;   /* suspended waiting for it (under srv->mu) */
  void (*then)(hreq *r); /* hres_defer_then: builds the answer once it came */
  size_t body_cap;  /* bytes allocated for r.body (its NUL included) */
  size_t charged;   /* what it holds of srv->body_cost */
  int overloaded;   /* admit refused its body: 503 at the end */
};

/* The body budget ([divan] memory_limit's share for requests): charge x for
 * a body of `bytes`, as HTTP_BODY_COST × bytes, from its head until its
 * answer is built (answer_now). A body is refused (0) when others are in
 * flight and it would take the total past the budget; alone it always
 * passes (max_http_request_size bounds it), so one big request never waits
 * for nothing, and a small one (HTTP_BODY_FREE) always passes: the budget
 * holds back big bodies, never a plain document write. */
static int admit(hsrv *s, struct hctx *x, size_t bytes) {
  if (!s->o.body_budget) return 1;
  size_t want = bytes * HTTP_BODY_COST;
  if (want <= x->charged) return 1;
  size_t add = want - x->charged;
  size_t before = atomic_fetch_add(&s->body_cost, add);
  if (bytes > HTTP_BODY_FREE && before > x->charged && before + add > s->o.body_budget) {
    atomic_fetch_sub(&s->body_cost, add);
    return 0;
  }
  x->charged = want;
  return 1;
}

static void unadmit(hsrv *s, struct hctx *x) {
  if (x->charged) atomic_fetch_sub(&s->body_cost, x->charged);
  x->charged = 0;
}

void hres_defer(hreq *r) { ((struct hctx *)r)->deferred = 1; }

void hres_defer_then(hreq *r, void (*fn)(hreq *r)) {
  struct hctx *x = (struct hctx *)r;
  x->deferred = 1;
  x->then = fn;
}

void hdefer_done(hreq *r) {
  struct hctx *x = (struct hctx *)r;
  hsrv *s = r->srv;
  pthread_mutex_lock(&s->mu);
  x->defer_done = 1;
  if (x->defer_susp) {
    x->defer_susp = 0;
    MHD_resume_connection(r->conn);
  }
  pthread_mutex_unlock(&s->mu);
}

/* ---- hres_offload: blocking work off the pool threads ------------------------------- */

static void *off_main(void *arg) {
  dv_thread_name("dv-http-off");
  hsrv *s = arg;
  pthread_mutex_lock(&s->omu);
  for (;;) {
    struct off_job *j = s->oq;
    if (!j) {
      if (s->ostop) break;
      s->oidle++;
      pthread_cond_wait(&s->ocv, &s->omu);
      s->oidle--;
      continue;
    }
    s->oq = j->next;
    if (!s->oq) s->oq_tail = NULL;
    pthread_mutex_unlock(&s->omu);
    j->work(j->r);
    hdefer_done(j->r);
    pthread_mutex_lock(&s->omu);
  }
  pthread_mutex_unlock(&s->omu);
  return NULL;
}

void hres_offload(hreq *r, void (*work)(hreq *r), void (*then)(hreq *r)) {
  hsrv *s = r->srv;
  struct off_job *j = arena_alloc(&r->a, sizeof *j);
  hres_defer_then(r, then);
  pthread_mutex_lock(&s->omu);
  if (!j || s->ostop) { /* no memory, or stopping: do it here */
    pthread_mutex_unlock(&s->omu);
    work(r);
    hdefer_done(r);
    return;
  }
  *j = (struct off_job){.r = r, .work = work};
  if (s->oq_tail) s->oq_tail->next = j;
  else s->oq = j;
  s->oq_tail = j;
  if (!s->oidle && s->on < OFF_THREADS && !pthread_create(&s->oth[s->on], NULL, off_main, s)) s->on++;
  if (!s->on) { /* no thread could start: do it here */
    s->oq = s->oq_tail = NULL;
    pthread_mutex_unlock(&s->omu);
    work(r);
    hdefer_done(r);
    return;
  }
  pthread_cond_signal(&s->ocv);
  pthread_mutex_unlock(&s->omu);
}

void hreq_sink(hreq *r, const hsink_ops *ops, void *arg) {
  struct hctx *x = (struct hctx *)r;
  x->sink = ops;
  x->sink_arg = arg;
}

#define STREAM_BLOCK (256u << 10) /* largest piece MHD asks a stream for */

struct hstream {
  const hstream_ops *ops;  /* the producer */
  void *arg;               /* its state (freed by ops->done) */
  uint64_t len;            /* bytes the body has (Content-Length) */
};

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max) {
  hstream *st = cls;
  (void)pos; /* MHD asks in order; the producer keeps its own place */
  int64_t n = st->ops->read(st->arg, (uint8_t *)out, max);
  return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls) {
  hstream *st = cls;
  st->ops->done(st->arg);
  dv_free(st);
}

void hres_stream(hreq *r, int status, const char *ctype, uint64_t len, const hstream_ops *ops, void *arg) {
  struct hctx *x = (struct hctx *)r;
  hstream *st = dv_calloc(1, sizeof *st);
  if (!st) {
    ops->done(arg);
    hres_err(r, DV_ENOMEM);
    return;
  }
  st->ops = ops;
  st->arg = arg;
  st->len = len;
  if (x->stream) stream_free(x->stream);
  x->stream = st;
  buf_reset(&r->out);
  r->status = status;
  r->ctype = ctype;
}

static enum MHD_Result queue_stream(struct hctx *x) {
  hreq *r = &x->r;
  hstream *st = x->stream;
  x->stream = NULL;
  struct MHD_Response *res = MHD_create_response_from_callback(st->len, STREAM_BLOCK, stream_read, st, stream_free);
  if (!res) {
    stream_free(st);
    return MHD_NO;
  }
  add_common_headers(r, res, r->ctype ? r->ctype : "application/octet-stream");
  enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)r->status, res);
  MHD_destroy_response(res); /* stream_free runs when the connection lets go */
  return ok;
}

/* ---- requests --------------------------------------------------------------- */

static int method_of(const char *m) {
  static const struct { const char *s; int m; } t[] = {
      {"GET", HM_GET}, {"HEAD", HM_HEAD}, {"POST", HM_POST}, {"PUT", HM_PUT},
      {"DELETE", HM_DELETE}, {"COPY", HM_COPY}, {"OPTIONS", HM_OPTIONS},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(m, t[i].s)) return t[i].m;
  return HM_OTHER;
}

static size_t identity_unescape(void *cls, struct MHD_Connection *c, char *s) { return strlen(s); }

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *val) {
  hreq *r = cls;
  return hreq__add_param(r, key, val) ? MHD_NO : MHD_YES;
}

static enum MHD_Result answer_now(struct hctx *x) {
  x->answered = 1;
  unadmit(x->r.srv, x); /* its body is handled: the answer is built */
  if (x->r.feed) return queue_feed(&x->r);
  if (x->stream) return queue_stream(x);
  return send_response(&x->r);
}

/* A deferred request: answer if its response came, else wait suspended
 * (MHD calls on_request again once hdefer_done resumes it). */
static enum MHD_Result defer_step(struct hctx *x) {
  hsrv *s = x->r.srv;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    if (!x->defer_done) {
      x->defer_susp = 1;
      MHD_suspend_connection(x->r.conn);
      pthread_mutex_unlock(&s->mu);
      return MHD_YES;
    }
    pthread_mutex_unlock(&s->mu);
    void (*fn)(hreq *r) = x->then;
    if (!fn) return answer_now(x);
    x->then = NULL; /* the continuation runs once; it may defer again */
    x->deferred = x->defer_done = 0;
    fn(&x->r);
    if (!x->deferred) return answer_now(x);
  }
}

/* A route whose body streams to its handler's sink. */
static int streams(hreq *r) { return (r->route->flags & HTTP_STREAM_BODY) != 0; }

/* 405 with Allow listing the route's methods. */
static void refuse_method(hreq *r, unsigned methods) {
  static const struct { int m; const char *s; } order[] = {
      {HM_COPY, "COPY"}, {HM_DELETE, "DELETE"}, {HM_GET, "GET"}, {HM_HEAD, "HEAD"},
      {HM_OPTIONS, "OPTIONS"}, {HM_POST, "POST"}, {HM_PUT, "PUT"},
  };
  char allow[64] = "";
  size_t n = 0;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++)
    if (methods & HTTP_M(order[i].m))
      n += (size_t)snprintf(allow + n, sizeof allow - n, "%s%s", n ? "," : "", order[i].s);
  hres_method(r, allow);
}

/* Who asks, may they, then the route's own checks and its handler. */
static void run_route(hreq *r) {
  hsrv *s = r->srv;
  const http_route *rt = r->route;
  if (!rt) return;
  if (s->app.identify && s->app.identify(r)) return;
  if (s->app.authorize && s->app.authorize(r, rt)) return;
  if (rt->methods && !(rt->methods & HTTP_M(r->method))) {
    refuse_method(r, rt->methods);
    return;
  }
  if ((rt->flags & (HTTP_JSON_BODY | HTTP_JSON_OBJECT)) && hreq_need_json(r)) return;
  if ((rt->flags & HTTP_JSON_OBJECT) && hreq_json_body(r, 1, &r->json)) return;
  rt->handler(r);
}

/* The query string of a rerouted request, "k=v&k2", into r->params as MHD
 * would hand them (raw; a key without '=' has no value). */
static int add_query(hreq *r, const char *q) {
  while (*q) {
    size_t n = strcspn(q, "&");
    if (n) {
      char *kv = arena_strndup(&r->a, q, n);
      if (!kv) return DV_ENOMEM;
      char *eq = strchr(kv, '=');
      if (eq) *eq++ = 0;
      if (hreq__add_param(r, kv, eq)) return DV_ENOMEM;
    }
    q += n;
    if (*q) q++;
  }
  return 0;
}

void hreq_reroute(hreq *r, const char *method, const char *target) {
  struct hctx *x = (struct hctx *)r;
  hsrv *s = r->srv;
  if (s->app.done) s->app.done(r);
  memset(r->app, 0, s->app.req_size ? s->app.req_size : 1);
  r->status = 0;
  r->ctype = NULL;
  buf_reset(&r->out);
  r->nhdr = 0;
  r->json = NULL;
  r->route = NULL;
  r->params = NULL;
  r->nparams = 0;
  r->reroutes++;
  size_t pn = strcspn(target, "?");
  r->method = method_of(method);
  r->method_str = arena_strndup(&r->a, method, strlen(method));
  r->path = arena_strndup(&r->a, target, pn);
  if (!r->method_str || !r->path) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (hreq__split_path(r)) return;
  if (target[pn] && add_query(r, target + pn + 1)) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  if (r->status) return; /* a bad escape in the query */
  r->route = s->app.route(r);
  if (!r->route) return;
  run_route(r);
  if (!streams(r) || r->status || x->deferred) return;
  if (!x->sink) {
    hres_err(r, DV_ENO_RESPONSE);
    return;
  }
  if (r->body_len && x->sink->write(x->sink_arg, r, (const uint8_t *)r->body, r->body_len)) {
    x->sink_err = 1;
    return;
  }
  x->sink->finish(x->sink_arg, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **ctx) {
  hsrv *s = cls;
  struct hctx *x = *ctx;
  if (!x) {
    x = dv_calloc(1, sizeof *x);
    if (!x) return MHD_NO;
    *ctx = x;
    hreq *r = &x->r;
    r->srv = s;
    r->conn = c;
    r->t_start_us = hnow_us();
    new_reqid(r->reqid);
    arena_init(&r->a, HREQ_ARENA_CHUNK);
    buf_init(&r->out);
    r->method = method_of(method);
    r->method_str = arena_strndup(&r->a, method, strlen(method));
    r->path = arena_strndup(&r->a, url, strlen(url));
    r->orig_path = r->path;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    r->app = arena_calloc(&r->a, s->app.req_size ? s->app.req_size : 1);
    /* a bad path or query leaves its error in r->status, sent at the end */
    if (!r->path || !r->method_str || !r->app) hres_err(r, DV_ENOMEM);
    int parsed = !r->status && hreq__split_path(r) == 0 &&
                 MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, r) >= 0 && !r->status;
    if (parsed) r->route = s->app.route(r); /* NULL: its error is written */
    if (r->route && streams(r)) { /* everything but the body is decided now */
      if (ex && strcasecmp(ex, "100-continue")) hres_err(r, DV_EEXPECTATION);
      else run_route(r);
      if (!r->status && !x->sink) hres_err(r, DV_ENO_RESPONSE);
      return r->status ? answer_now(x) : MHD_YES;
    }
    if (cl && strtoull(cl, NULL, 10) > s->o.max_body) {
      hres_err(r, DV_EBODY_TOO_LARGE);
      return answer_now(x);
    }
    if (cl && !admit(s, x, (size_t)strtoull(cl, NULL, 10))) { /* refused before a byte is read */
      hres_err(r, DV_EOVERLOADED);
      return answer_now(x);
    }
    if (ex && strcasecmp(ex, "100-continue")) {
      hres_err(r, DV_EEXPECTATION);
      return answer_now(x);
    }
    return MHD_YES;
  }
  hreq *r = &x->r;
  if (*upload_size) {
    if (x->sink) {
      if (!x->answered && !x->sink_err && x->sink->write(x->sink_arg, r, (const uint8_t *)upload, *upload_size))
        x->sink_err = 1;
    } else if (!x->answered && !x->too_large && !x->overloaded) {
      if (r->body_len + *upload_size > s->o.max_body) {
        x->too_large = 1;
      } else if (!admit(s, x, r->body_len + *upload_size)) { /* a chunked body grew past the budget */
        x->overloaded = 1;
      } else {
        size_t need = r->body_len + *upload_size + 1;
        if (need > x->body_cap) { /* the declared length at once, else doubling: no copy per piece */
          const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
          size_t cap = x->body_cap ? 2 * x->body_cap : 16384;
          unsigned long long decl = cl ? strtoull(cl, NULL, 10) : 0;
          if (!x->body_cap && decl && decl <= s->o.max_body) cap = (size_t)decl + 1;
          if (cap < need) cap = need;
          if (cap > s->o.max_body + 1) cap = s->o.max_body + 1;
          char *nb = dv_realloc(r->body, cap);
          if (!nb) return MHD_NO;
          r->body = nb;
          x->body_cap = cap;
        }
        memcpy(r->body + r->body_len, upload, *upload_size);
        r->body_len += *upload_size;
        r->body[r->body_len] = 0;
      }
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (x->answered) return MHD_YES;
  if (x->deferred) return defer_step(x);
  if (x->sink) {
    if (!x->sink_err) x->sink->finish(x->sink_arg, r);
    return x->deferred ? defer_step(x) : answer_now(x);
  }
  if (x->too_large || x->overloaded) {
    hres_err(r, x->too_large ? DV_EBODY_TOO_LARGE : DV_EOVERLOADED);
    return answer_now(x);
  }
  if (!r->status && !cors_preflight(r)) run_route(r);
  if (x->deferred) return defer_step(x);
  return answer_now(x);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe) {
  conn_request_done(cls, c);
  struct hctx *x = *ctx;
  if (!x) return;
  hreq *r = &x->r;
  if (r->feed) { /* built but never queued */
    hfeed *f = r->feed;
    f->ops->done(f->arg);
    buf_free(&f->buf);
    dv_free(f);
  }
  if (x->stream) stream_free(x->stream); /* built but never queued */
  if (x->sink) x->sink->done(x->sink_arg);
  r->end = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? HREQ_END_OK : HREQ_END_ABORTED;
  r->t_end_us = hnow_us(); /* one clock read for the log line and request_time */
  if (r->app && ((hsrv *)cls)->app.done) ((hsrv *)cls)->app.done(r);
  buf_free(&r->out);
  dv_free(r->body);
  arena_free(&r->a);
  unadmit(cls, x);
  dv_free(x);
  *ctx = NULL;
}

/* ---- start and stop ----------------------------------------------------------- */

int http_start(const http_app *app, const http_opts *o, http_server **out) {
  hsrv *s = dv_calloc(1, sizeof *s);
  if (!s) return DV_ENOMEM;
  s->app = *app;
  s->o = *o;
  pthread_mutex_init(&s->omu, NULL);
  pthread_cond_init(&s->ocv, NULL);
  if (!s->o.threads) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s->o.threads = (int)(cores > 0 ? cores : 1) * HTTP_THREADS_PER_CORE;
  }
  if (!s->o.max_body) s->o.max_body = HTTP_DEFAULT_MAX_BODY;
  if (!s->o.timeout_s) s->o.timeout_s = HTTP_DEFAULT_TIMEOUT;
  if (!s->o.head_timeout_s) s->o.head_timeout_s = HTTP_DEFAULT_HEAD_TIMEOUT;
  if (!s->o.body_timeout_s) s->o.body_timeout_s = HTTP_DEFAULT_BODY_TIMEOUT;
  if (!s->o.body_min_rate) s->o.body_min_rate = HTTP_DEFAULT_BODY_MIN_RATE;
  if (!s->o.send_timeout_s) s->o.send_timeout_s = HTTP_DEFAULT_SEND_TIMEOUT;
  if (!s->o.max_conns_per_client) s->o.max_conns_per_client = HTTP_DEFAULT_MAX_CONNS_PER_CLIENT;
  if (!s->o.server) s->o.server = "divan";
  if (!s->o.bind) s->o.bind = "127.0.0.1";
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->cmu, NULL);
  pthread_cond_init(&s->cv, NULL);
  int rc = conns_setup();
  if (rc) goto fail;
  pthread_mutex_lock(&shed_mu);
  snprintf(shed_server, sizeof shed_server, "%s", s->o.server);
  pthread_mutex_unlock(&shed_mu);
  /* max_connections, within the fd limit less room for the store's files */
  int fd_room = conn_fd_cap > 1024 ? (int)(conn_fd_cap - 512) : (int)conn_fd_cap / 2;
  if (!s->o.max_conns) s->o.max_conns = HTTP_DEFAULT_MAX_CONNS;
  if (s->o.max_conns > fd_room) {
    log_warning("max_connections %d lowered to %d (the process may open %zu files)", s->o.max_conns, fd_room,
                conn_fd_cap);
    s->o.max_conns = fd_room;
  }
  /* libmicrohttpd's limit: a little above ours, so a new connection is
   * accepted and an old idle one evicted (on_connection); it is split
   * among the pool threads, so at least a few each */
  unsigned mhd_limit = (unsigned)s->o.max_conns + 16 + (unsigned)s->o.max_conns / 16;
  if (mhd_limit < 4u * (unsigned)s->o.threads) mhd_limit = 4u * (unsigned)s->o.threads;

  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ERROR_LOG;
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, s->o.bind, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)s->o.port);
  } else if (inet_pton(AF_INET6, s->o.bind, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)s->o.port);
    flags |= MHD_USE_IPv6;
  } else {
    rc = DV_EINVAL;
    goto fail;
  }
  s->d = MHD_start_daemon(flags, (uint16_t)s->o.port, NULL, NULL, on_request, s,
                          MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first, or MHD logs some itself */
                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                          MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->o.threads,
                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->o.timeout_s,
                          MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_POOL,
                          MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
                          MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                          (unsigned)(s->o.max_conns_per_client > 0 ? s->o.max_conns_per_client : 0),
                          MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                          MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
                          MHD_OPTION_UNESCAPE_CALLBACK, identity_unescape, NULL,
                          MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                          MHD_OPTION_END);
  if (!s->d) {
    rc = DV_EIO;
    goto fail;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : s->o.port;
  if (pthread_create(&s->reaper, NULL, reaper_main, s)) {
    MHD_stop_daemon(s->d);
    rc = DV_ENOMEM;
    goto fail;
  }
  *out = s;
  return 0;
fail:
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->cmu);
  pthread_cond_destroy(&s->cv);
  dv_free(s);
  return rc;
}

void http_stop(http_server *s) {
  if (!s) return;
  /* Stop the reaper, end every feed (resuming the suspended ones so MHD can
   * finish them; one that starts from now on ends at once: feed_link),
   * then stop the daemon. No MHD_quiesce_daemon: with an epoll thread pool,
   * libmicrohttpd 0.9.75 races its own workers removing the listen socket
   * from their epoll sets and aborts ("Failed to remove listen FD from
   * epoll set", seen once in http_conformance's stop). */
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->reaper, NULL);
  for (int i = 0; i < 100; i++) { /* let resumed feeds end (≤ 1 s) */
    pthread_mutex_lock(&s->mu);
    int any = s->feeds != NULL;
    for (hfeed *f = s->feeds; f; f = f->next) f->gone = 1, feed_resume_locked(f);
    pthread_mutex_unlock(&s->mu);
    if (!any) break;
    usleep(10000);
  }
  /* offloaded work finishes (each job is bounded: a function's timeout) */
  pthread_mutex_lock(&s->omu);
  s->ostop = 1;
  pthread_cond_broadcast(&s->ocv);
  pthread_mutex_unlock(&s->omu);
  for (int i = 0; i < s->on; i++) pthread_join(s->oth[i], NULL);
  MHD_stop_daemon(s->d);
  pthread_mutex_destroy(&s->omu);
  pthread_cond_destroy(&s->ocv);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->cmu);
  pthread_cond_destroy(&s->cv);
  dv_free(s);
}
