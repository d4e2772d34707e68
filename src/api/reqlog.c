/* reqlog.c — the log's line for each request, as chttpd:maybe_log writes
 * it (couch_log:notice):
 *
 *   [notice] TIME NODE <0.TID.0> REQID HOST PEER USER METHOD PATH CODE ok|aborted MS
 *
 * HOST is the Host header ("undefined" without one), PEER the client's
 * address as mochiweb's get(peer) (hreq_peer), USER the authenticated name
 * url-encoded as couch_util:url_encode ("undefined" for anonymous), METHOD
 * as sent, PATH the path and query the client sent, CODE the status
 * (0: the client left before any answer), then ok or aborted (the answer
 * did not go out whole) and the milliseconds from the request's head to
 * its end, rounded. The replicator's loopback requests to this server's
 * own databases are logged at debug. A rewritten request (_rewrite) is one line, under the
 * path the client sent (without its query, which the rewrite replaced).
 *
 * What CouchDB logs raw and divan does not: a credential. The path loses
 * the user:password@ of an absolute-form target ("GET http://u:p@host/…");
 * the value of a query parameter whose name says it is a secret (pass,
 * pwd, secret, token, auth, cookie, session, in any case) is written
 * "REDACTED"; the query is written re-encoded from its parsed parameters.
 * Headers (Authorization, Cookie) and bodies are never logged.
 *
 * Cost: nothing below the notice level; above it, one line formatted on
 * the stack (no allocation) and log_write's one write(2).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "util/log.h"

typedef struct out {
  char *p;    /* the line so far, on the caller's stack */
  size_t n;   /* bytes in it */
  size_t cap; /* bytes it can hold; what does not fit is dropped */
} out;

static void put(out *o, const char *s, size_t n) {
  if (n > o->cap - o->n) n = o->cap - o->n;
  memcpy(o->p + o->n, s, n);
  o->n += n;
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static int alnum(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

static void put_hex(out *o, unsigned char c) {
  static const char hex[] = "0123456789ABCDEF";
  char e[3] = {'%', hex[c >> 4], hex[c & 15]};
  put(o, e, 3);
}

/* couch_util:url_encode: [A-Za-z0-9_.-:] as they are, %XX for the rest. */
static void put_url_encoded(out *o, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (alnum(c) || c == '_' || c == '.' || c == '-' || c == ':') put(o, (const char *)&c, 1);
    else put_hex(o, c);
  }
}

/* A decoded query key or value, encoded again for the log. */
static void put_query_part(out *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (alnum(c) || (c && strchr("-._~!$'()*,;:@/?[]\"{}", c))) put(o, (const char *)&c, 1);
    else put_hex(o, c);
  }
}

static int secret_key(const char *k, size_t n) {
  static const char *const words[] = {"pass", "pwd", "secret", "token", "auth", "cookie", "session"};
  for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
    size_t wl = strlen(words[w]);
    for (size_t i = 0; i + wl <= n; i++)
      if (!strncasecmp(k + i, words[w], wl)) return 1;
  }
  return 0;
}

/* The path as sent, without the userinfo of an absolute-form target. */
static void put_path(out *o, const char *path) {
  const char *sep = path[0] != '/' ? strstr(path, "://") : NULL;
  if (sep) {
    const char *auth = sep + 3, *end = auth + strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < end; p++)
      if (*p == '@') at = p;
    if (at) {
      put(o, path, (size_t)(auth - path));
      path = at + 1;
    }
  }
  puts_(o, path);
}

void api_log_request(hreq *r) {
  /* the replicator's own loopback requests (auth_via "replicator") are
   * debug: CouchDB's replicator reads local databases without HTTP */
  int level = r->app && r->app->auth_via && !strcmp(r->app->auth_via, "replicator") ? DV_LOG_DEBUG : DV_LOG_NOTICE;
  if (!r->end || !log_enabled(level)) return; /* !end: hreq_reroute letting go of r->app */
  char line[LOG_MAX_MESSAGE];
  out o = {line, 0, sizeof line - 64}; /* room kept for "..." and the status, outcome and time */
  const char *host = hreq_hdr(r, "Host");
  puts_(&o, host && *host ? host : "undefined");
  put(&o, " ", 1);
  char tmp[64];
  size_t pn;
  const char *peer = hreq_peer_ref(r, tmp, &pn);
  put(&o, peer, pn);
  put(&o, " ", 1);
  if (r->app && r->app->user) put_url_encoded(&o, r->app->user);
  else puts_(&o, "undefined");
  put(&o, " ", 1);
  puts_(&o, r->method_str ? r->method_str : "?");
  put(&o, " ", 1);
  put_path(&o, r->orig_path ? r->orig_path : r->path ? r->path : "/");
  for (int i = 0; !r->reroutes && i < r->nparams; i++) { /* rerouted: the query is the rewrite's */
    const hparam *q = &r->params[i];
    put(&o, i ? "&" : "?", 1);
    put_query_part(&o, q->key, q->klen);
    put(&o, "=", 1);
    if (secret_key(q->key, q->klen)) puts_(&o, "REDACTED");
    else put_query_part(&o, q->val, q->vlen);
  }
  int64_t us = r->t_end_us - r->t_start_us;
  char tail[64];
  int tn = snprintf(tail, sizeof tail, " %d %s %lld", r->status, r->end == HREQ_END_OK ? "ok" : "aborted",
                    (long long)((us + 500) / 1000));
  int cut = o.n == o.cap; /* a path or query too long for the line */
  o.cap = sizeof line;
  if (cut) put(&o, "...", 3);
  if (tn > 0) put(&o, tail, (size_t)tn < sizeof tail ? (size_t)tn : sizeof tail - 1);
  log_write(level, r->reqid, line, o.n);
}
