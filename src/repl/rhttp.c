/* rhttp.c — the replicator's HTTP client: one libcurl easy handle per
 * connection (kept alive across requests), requests relative to an
 * endpoint's base URL, and CouchDB's retry rule.
 *
 * Data flow of rh_do:
 *   method + path + body ─▶ curl (headers of the endpoint, Accept, a stop
 *   check in the progress callback, connect/stall timeouts) ─▶ status,
 *   Content-Type and body in memory.
 *   No answer (connection refused or cut, timeout) or a 5xx/429 ─▶ wait
 *   250 ms, 500 ms, … (capped at 10 s) and again, up to `retries` times
 *   (not a 501: that answer will not change) —
 *   couch_replicator_httpc's rule. 4xx answers are the caller's.
 *   Bodies are held in memory (the replicator asks for bounded batches),
 *   except with rh_do_file: an answer into a file (out->sink) and a body
 *   from a file, for documents with attachments of any size.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "repl/repl_int.h"
#include "util/alloc.h"
#include "util/log.h"

#define RH_BACKOFF_FIRST_MS 250
#define RH_BACKOFF_MAX_MS 10000

int rh_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : DV_EIO; }

int rh_sleep(volatile int *stop, int ms) {
  while (ms > 0) {
    if (stop && *stop) return 1;
    int step = ms < 50 ? ms : 50;
    struct timespec ts = {0, (long)step * 1000000L};
    nanosleep(&ts, NULL);
    ms -= step;
  }
  return stop && *stop;
}

void rh_seq_param(dv_buf *p, dv_arena *a, const char *seq) {
  json_val *v;
  json_err je;
  if (seq && !json_parse(a, seq, strlen(seq), NULL, &v, &je) && v->type == JSON_STRING) rh_escape(p, v->u.s, v->len);
  else if (seq) rh_escape(p, seq, strlen(seq));
  else buf_putc(p, '0');
}

void rh_escape(dv_buf *b, const char *s, size_t n) {
  static const char hx[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~')
      buf_putc(b, c);
    else {
      buf_putc(b, '%');
      buf_putc(b, (uint8_t)hx[c >> 4]);
      buf_putc(b, (uint8_t)hx[c & 15]);
    }
  }
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg) {
  rh_resp *r = arg;
  if (r->sink) return fwrite(p, 1, sz * n, r->sink);
  buf_append(&r->body, p, sz * n);
  return buf_error(&r->body) ? 0 : sz * n;
}

static size_t on_read(char *p, size_t sz, size_t n, void *arg) {
  return fread(p, 1, sz * n, (FILE *)arg);
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg) {
  rh_resp *r = arg;
  size_t len = sz * n;
  if (len > 13 && !strncasecmp(p, "Content-Type:", 13)) {
    const char *v = p + 13;
    size_t vl = len - 13;
    while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
    if (vl >= sizeof r->ctype) vl = sizeof r->ctype - 1;
    memcpy(r->ctype, v, vl);
    r->ctype[vl] = 0;
  }
  return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  rh_conn *c = arg;
  return c->stop && *c->stop;
}

int rh_init(rh_conn *c, const repl_ep *ep, int timeout_ms, int retries, volatile int *stop) {
  memset(c, 0, sizeof *c);
  c->ep = ep;
  c->stop = stop;
  c->timeout_ms = timeout_ms;
  c->retries = retries;
  c->h = curl_easy_init();
  if (!c->h) return DV_ENOMEM;
  struct curl_slist *l = NULL;
  dv_buf b;
  buf_init(&b);
  for (size_t i = 0; i < ep->nhdrs; i++) {
    buf_reset(&b);
    buf_printf(&b, "%s: %s", ep->hdrs[i].name, ep->hdrs[i].value);
    buf_putc(&b, 0);
    struct curl_slist *nl = buf_error(&b) ? NULL : curl_slist_append(l, (char *)b.p);
    if (!nl) {
      buf_free(&b);
      curl_slist_free_all(l);
      curl_easy_cleanup(c->h);
      c->h = NULL;
      return DV_ENOMEM;
    }
    l = nl;
  }
  buf_free(&b);
  c->hdrs = l;
  return 0;
}

void rh_free(rh_conn *c) {
  if (c->h) curl_easy_cleanup(c->h);
  curl_slist_free_all(c->hdrs);
  c->h = NULL;
  c->hdrs = NULL;
}

void rh_resp_free(rh_resp *r) {
  buf_free(&r->body);
  memset(r, 0, sizeof *r);
}

static int once(rh_conn *c, const char *method, const char *url, const char *accept, const char *ctype,
                const void *body, size_t len, FILE *src, rh_resp *out, CURLcode *cc) {
  CURL *h = c->h;
  curl_easy_reset(h);
  struct curl_slist *l = NULL, *base = c->hdrs;
  char hb[512];
  for (struct curl_slist *s = base; s; s = s->next) {
    struct curl_slist *nl = curl_slist_append(l, s->data);
    if (!nl) goto oom;
    l = nl;
  }
  snprintf(hb, sizeof hb, "Accept: %s", accept ? accept : "application/json");
  if (!(l = curl_slist_append(l, hb))) goto oom;
  if (ctype) {
    snprintf(hb, sizeof hb, "Content-Type: %s", ctype);
    if (!(l = curl_slist_append(l, hb))) goto oom;
  }
  if (!(l = curl_slist_append(l, "Expect:"))) goto oom; /* no 100-continue round trip */
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "divan-replicator/1");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)(c->timeout_ms + 999) / 1000);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
  /* gzip-encoded JSON when the peer offers it; never for attachments: a
   * peer would send their stored gzip bytes with "encoding":"gzip", which
   * a target other than CouchDB or divan (pouchdb-server) does not take */
  if (!accept || strncmp(accept, "multipart/", 10)) curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  if (src) { /* a body streamed from a file (PUT) */
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(h, CURLOPT_READDATA, src);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    if (strcmp(method, "PUT")) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  } else if (!strcmp(method, "GET")) {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (!strcmp(method, "HEAD")) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
    if (strcmp(method, "POST")) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  }
  *cc = curl_easy_perform(h);
  if (*cc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
  curl_slist_free_all(l);
  return 0;
oom:
  curl_slist_free_all(l);
  return DV_ENOMEM;
}

int rh_do(rh_conn *c, const char *method, const char *path, const char *accept, const char *ctype,
          const void *body, size_t len, rh_resp *out) {
  memset(out, 0, sizeof *out);
  return rh_do_file(c, method, path, accept, ctype, body, len, NULL, out);
}

int rh_do_file(rh_conn *c, const char *method, const char *path, const char *accept, const char *ctype,
               const void *body, size_t len, FILE *src, rh_resp *out) {
  FILE *sink = out->sink;
  memset(out, 0, sizeof *out);
  out->sink = sink;
  buf_init(&out->body);
  dv_buf url;
  buf_init(&url);
  buf_puts(&url, c->ep->url);
  buf_puts(&url, path);
  buf_putc(&url, 0);
  if (buf_error(&url)) {
    buf_free(&url);
    return DV_ENOMEM;
  }
  int wait = RH_BACKOFF_FIRST_MS, rc = 0;
  for (int attempt = 0;; attempt++) {
    if (c->stop && *c->stop) {
      rc = DV_ECANCELLED;
      break;
    }
    CURLcode cc = CURLE_OK;
    buf_reset(&out->body);
    out->status = 0;
    out->ctype[0] = 0;
    if (src) rewind(src); /* a retry sends the whole body again */
    if (sink && (fflush(sink) || ftruncate(fileno(sink), 0) || fseeko(sink, 0, SEEK_SET))) {
      snprintf(c->err, sizeof c->err, "cannot reset a temporary file");
      rc = DV_EIO;
      break;
    }
    if ((rc = once(c, method, (char *)url.p, accept, ctype, body, len, src, out, &cc))) break;
    if (cc == CURLE_ABORTED_BY_CALLBACK || (c->stop && *c->stop)) {
      rc = DV_ECANCELLED;
      break;
    }
    if (sink && fflush(sink)) cc = CURLE_WRITE_ERROR;
    /* every request at debug (not the answer's body: it may be a _users document) */
    log_debug("replicator: %s %s -> %ld (%s) %zu bytes", method, (char *)url.p, out->status,
              cc == CURLE_OK ? "ok" : curl_easy_strerror(cc), out->body.len);
    int retry;
    if (cc != CURLE_OK) {
      snprintf(c->err, sizeof c->err, "%s %s: %s", method, c->ep->url, curl_easy_strerror(cc));
      retry = 1;
    } else {
      retry = (out->status >= 500 && out->status != 501) || out->status == 429; /* 501: it never will */
      if (retry)
        snprintf(c->err, sizeof c->err, "%s %s%s: HTTP %ld", method, c->ep->url, path, out->status);
    }
    if (!retry) break;
    if (attempt >= c->retries) {
      rc = cc != CURLE_OK ? DV_EIO : 0; /* a 5xx answer is the caller's to report */
      break;
    }
    if (rh_sleep(c->stop, wait)) {
      rc = DV_ECANCELLED;
      break;
    }
    wait = wait * 2 > RH_BACKOFF_MAX_MS ? RH_BACKOFF_MAX_MS : wait * 2;
  }
  buf_free(&url);
  if (rc) buf_free(&out->body);
  return rc;
}
