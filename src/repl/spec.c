/* spec.c — what a replication is: the JSON a user gives (POST /_replicate,
 * a _replicator document) parsed into repl_spec, and CouchDB's replication
 * id.
 *
 * Data flow:
 *   JSON object ─▶ repl_spec_parse: source/target (URL string, object with
 *     url/headers/auth, or a local db name) ─▶ repl_ep: credentials taken
 *     out of the URL into an Authorization header, base URL ending in '/',
 *     host/port/path kept for the id; options checked by type and range.
 *   repl_spec ─▶ repl_id_make: CouchDB 3's version-4 id,
 *     md5(term_to_binary([ServerUUID, SrcInfo, TgtInfo | Filter])) in hex,
 *     SrcInfo = {remote, User, Host, Port, Path, Headers, undefined} with
 *     the Basic Authorization header left out (so a new password keeps the
 *     id, and the checkpoints), Port 'default' for 80/443/5984. A local
 *     endpoint is the binary DbName. Filter: [DocIds], [Selector] (EJSON),
 *     or [Code, QueryParams] for a design-document filter, then the atom
 *     winning_revs_only when that is asked (its checkpoints are its own). Extensions
 *     "+continuous" and "+create_target" follow the base id.
 *
 * Erlang's external term format here covers what the id needs: lists,
 * strings (byte lists), binaries, atoms (ATOM_EXT, as OTP wrote them
 * before 26), small tuples, integers, floats — and EJSON ({[{K,V}]}
 * objects, lists, binaries, numbers, true/false/null atoms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl/repl.h"
#include "store/store.h"
#include "util/b64.h"
#include "util/md5.h"

#define RS_DEFAULT_WORKERS 4
#define RS_DEFAULT_BATCH 500
#define RS_DEFAULT_CONNS 20
#define RS_DEFAULT_TIMEOUT_MS 30000
#define RS_DEFAULT_RETRIES 5
#define RS_DEFAULT_CHECKPOINT_MS 30000

/* ---- endpoints ------------------------------------------------------------ */

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Percent-decode s[0..n) into the arena. */
static char *pct_decode(dv_arena *a, const char *s, size_t n) {
  char *o = arena_alloc(a, n + 1);
  if (!o) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
      o[k++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else {
      o[k++] = s[i];
    }
  }
  o[k] = 0;
  return o;
}

static int add_hdr(dv_arena *a, repl_ep *e, const char *name, size_t nl, const char *val, size_t vl) {
  repl_hdr *h = arena_alloc(a, (e->nhdrs + 1) * sizeof *h);
  if (!h) return DV_ENOMEM;
  if (e->nhdrs) memcpy(h, e->hdrs, e->nhdrs * sizeof *h);
  h[e->nhdrs].name = arena_strndup(a, name, nl);
  h[e->nhdrs].value = arena_strndup(a, val, vl);
  if (!h[e->nhdrs].name || !h[e->nhdrs].value) return DV_ENOMEM;
  e->hdrs = h;
  e->nhdrs++;
  return 0;
}

static int header_ok(const char *s, size_t n, int is_name) {
  if (is_name && !n) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\r' || c == '\n' || c == 0) return 0;
    if (is_name && (c <= ' ' || c == ':' || c >= 127)) return 0;
  }
  return 1;
}

/* The user of a "Basic b64(user:pass)" value, or NULL. */
static char *basic_user(dv_arena *a, const char *v) {
  if (strncasecmp(v, "Basic ", 6)) return NULL;
  const char *b = v + 6;
  while (*b == ' ') b++;
  size_t n = strlen(b);
  uint8_t *raw = arena_alloc(a, dv_b64_decoded_max(n) + 1);
  size_t rl;
  if (!raw || dv_b64_decode(b, n, 0, raw, &rl)) return NULL;
  uint8_t *colon = memchr(raw, ':', rl);
  if (!colon) return NULL;
  return arena_strndup(a, (char *)raw, (size_t)(colon - raw));
}

/* Parse "scheme://[user[:pass]@]host[:port][/path]" into e. */
static int parse_url(dv_arena *a, const char *url, size_t n, repl_ep *e, const char **reason) {
  const char *p = url, *end = url + n;
  int https;
  if (n > 7 && !strncasecmp(p, "http://", 7)) https = 0, p += 7;
  else if (n > 8 && !strncasecmp(p, "https://", 8)) https = 1, p += 8;
  else {
    *reason = "Replication source and target URLs must start with http:// or https://.";
    return DV_EINVAL;
  }
  const char *auth_end = NULL;
  const char *slash = memchr(p, '/', (size_t)(end - p));
  const char *hostpart_end = slash ? slash : end;
  for (const char *q = p; q < hostpart_end; q++)
    if (*q == '@') auth_end = q;
  if (auth_end) {
    const char *colon = memchr(p, ':', (size_t)(auth_end - p));
    e->user = pct_decode(a, p, (size_t)((colon ? colon : auth_end) - p));
    e->pass = colon ? pct_decode(a, colon + 1, (size_t)(auth_end - colon - 1)) : arena_strndup(a, "", 0);
    if (!e->user || !e->pass) return DV_ENOMEM;
    p = auth_end + 1;
  }
  const char *hs = p, *he = hostpart_end, *ps = NULL;
  if (hs < he && *hs == '[') { /* IPv6 literal */
    const char *rb = memchr(hs, ']', (size_t)(he - hs));
    if (!rb) {
      *reason = "Invalid replication URL: bad IPv6 host.";
      return DV_EINVAL;
    }
    ps = rb + 1 < he && rb[1] == ':' ? rb + 2 : NULL;
    e->host = arena_strndup(a, hs, (size_t)(rb + 1 - hs));
  } else {
    const char *colon = memchr(hs, ':', (size_t)(he - hs));
    ps = colon ? colon + 1 : NULL;
    e->host = arena_strndup(a, hs, (size_t)((colon ? colon : he) - hs));
  }
  if (!e->host) return DV_ENOMEM;
  if (!e->host[0]) {
    *reason = "Invalid replication URL: no host.";
    return DV_EINVAL;
  }
  for (const char *q = e->host; *q; q++)
    if ((unsigned char)*q <= ' ' || *q == '/' || *q == '?' || *q == '#') {
      *reason = "Invalid replication URL: bad host.";
      return DV_EINVAL;
    }
  int port = https ? 443 : 80;
  if (ps) {
    if (ps == he) {
      *reason = "Invalid replication URL: bad port.";
      return DV_EINVAL;
    }
    long v = 0;
    for (const char *q = ps; q < he; q++) {
      if (*q < '0' || *q > '9' || (v = v * 10 + (*q - '0')) > 65535) {
        *reason = "Invalid replication URL: bad port.";
        return DV_EINVAL;
      }
    }
    if (v == 0) {
      *reason = "Invalid replication URL: bad port.";
      return DV_EINVAL;
    }
    port = (int)v;
  }
  e->port = (https && port == 443) || (!https && (port == 80 || port == 5984)) ? 0 : port;
  /* path: as given, with a trailing slash; no query or fragment */
  size_t pl = slash ? (size_t)(end - slash) : 0;
  for (size_t i = 0; i < pl; i++)
    if (slash[i] == '?' || slash[i] == '#' || (unsigned char)slash[i] <= ' ') {
      *reason = "Invalid replication URL: the path may not hold a query, a fragment or spaces.";
      return DV_EINVAL;
    }
  dv_buf b;
  buf_init(&b);
  buf_append(&b, slash ? slash : "/", slash ? pl : 1);
  if (b.len && b.p[b.len - 1] != '/') buf_putc(&b, '/');
  e->path = arena_strndup(a, (char *)b.p, b.len);
  buf_reset(&b);
  buf_printf(&b, "%s://%s", https ? "https" : "http", e->host);
  if (port != (https ? 443 : 80)) buf_printf(&b, ":%d", port);
  buf_puts(&b, e->path ? e->path : "/");
  e->url = buf_error(&b) ? NULL : arena_strndup(a, (char *)b.p, b.len);
  buf_free(&b);
  if (!e->url || !e->path) return DV_ENOMEM;
  return 0;
}

static int parse_ep(dv_arena *a, const json_val *v, const char *which, repl_ep *e, const char **reason) {
  memset(e, 0, sizeof *e);
  const json_val *url = v, *hdrs = NULL, *auth = NULL;
  if (v && v->type == JSON_OBJECT) {
    url = json_obj_getz(v, "url");
    hdrs = json_obj_getz(v, "headers");
    auth = json_obj_getz(v, "auth");
  }
  if (!url || url->type != JSON_STRING || !url->len) {
    *reason = !strcmp(which, "source") ? "Missing or invalid `source` field: a URL or a database name."
                                       : "Missing or invalid `target` field: a URL or a database name.";
    return DV_EINVAL;
  }
  int rc;
  if (url->len > 7 && (!strncasecmp(url->u.s, "http://", 7) || !strncasecmp(url->u.s, "https://", 8))) {
    if ((rc = parse_url(a, url->u.s, url->len, e, reason))) return rc;
  } else {
    if (store_db_name_check(url->u.s, url->len)) {
      *reason = "Replication source and target must be URLs (http:// or https://) or local database names.";
      return DV_EINVAL;
    }
    e->local = arena_strndup(a, url->u.s, url->len);
    if (!e->local) return DV_ENOMEM;
  }
  if (hdrs && hdrs->type != JSON_NULL) {
    if (hdrs->type != JSON_OBJECT) {
      *reason = "`headers` must be an object of strings.";
      return DV_EINVAL;
    }
    for (size_t i = 0; i < hdrs->len; i++) {
      const json_member *m = &hdrs->u.members[i];
      if (m->val->type != JSON_STRING || !header_ok(m->key, m->klen, 1) ||
          !header_ok(m->val->u.s, m->val->len, 0)) {
        *reason = "`headers` must be an object of strings (valid header names and values).";
        return DV_EINVAL;
      }
      if ((rc = add_hdr(a, e, m->key, m->klen, m->val->u.s, m->val->len))) return rc;
    }
  }
  if (auth && auth->type == JSON_OBJECT) {
    const json_val *basic = json_obj_getz(auth, "basic");
    if (basic && basic->type == JSON_OBJECT) {
      const json_val *u = json_obj_getz(basic, "username"), *p = json_obj_getz(basic, "password");
      if (!u || u->type != JSON_STRING || !p || p->type != JSON_STRING) {
        *reason = "`auth.basic` needs string `username` and `password`.";
        return DV_EINVAL;
      }
      if (!e->user) {
        e->user = arena_strndup(a, u->u.s, u->len);
        e->pass = arena_strndup(a, p->u.s, p->len);
        if (!e->user || !e->pass) return DV_ENOMEM;
      }
    }
  } else if (auth && auth->type != JSON_NULL) {
    *reason = "`auth` must be an object.";
    return DV_EINVAL;
  }
  if (e->user) { /* credentials from the URL (or auth) win over a header's, as CouchDB */
    size_t ul = strlen(e->user), pl = strlen(e->pass);
    char *up = arena_alloc(a, ul + pl + 2);
    char *hv = up ? arena_alloc(a, 6 + dv_b64_encoded_len(ul + pl + 1, 0) + 1) : NULL;
    if (!hv) return DV_ENOMEM;
    memcpy(up, e->user, ul);
    up[ul] = ':';
    memcpy(up + ul + 1, e->pass, pl);
    memcpy(hv, "Basic ", 6);
    dv_b64_encode((uint8_t *)up, ul + pl + 1, 0, hv + 6);
    hv[6 + dv_b64_encoded_len(ul + pl + 1, 0)] = 0;
    size_t k = 0;
    for (size_t i = 0; i < e->nhdrs; i++)
      if (strcasecmp(e->hdrs[i].name, "Authorization")) e->hdrs[k++] = e->hdrs[i];
    e->nhdrs = k;
    if ((rc = add_hdr(a, e, "Authorization", 13, hv, strlen(hv)))) return rc;
  } else {
    for (size_t i = 0; i < e->nhdrs; i++)
      if (!strcasecmp(e->hdrs[i].name, "Authorization")) e->user = basic_user(a, e->hdrs[i].value);
  }
  return 0;
}

/* ---- options --------------------------------------------------------------- */

static int opt_bool(const json_val *body, const char *k, int dflt, int *out, const char **reason) {
  const json_val *v = json_obj_getz(body, k);
  if (!v || v->type == JSON_NULL) {
    *out = dflt;
    return 0;
  }
  if (v->type != JSON_BOOL) {
    static char msg[96];
    snprintf(msg, sizeof msg, "`%s` must be a boolean.", k);
    *reason = msg;
    return DV_EINVAL;
  }
  *out = v->b;
  return 0;
}

static int opt_int(const json_val *body, const char *k, int dflt, int lo, int hi, int *out, const char **reason) {
  const json_val *v = json_obj_getz(body, k);
  int64_t x;
  if (!v || v->type == JSON_NULL) {
    *out = dflt;
    return 0;
  }
  /* CouchDB accepts numbers and numeric strings here */
  if ((v->type == JSON_NUMBER || v->type == JSON_STRING) && !json_num_int64(v->u.s, v->len, &x) && x >= lo &&
      x <= hi) {
    *out = (int)x;
    return 0;
  }
  static __thread char msg[128];
  snprintf(msg, sizeof msg, "`%s` must be an integer from %d to %d.", k, lo, hi);
  *reason = msg;
  return DV_EINVAL;
}

static char *str_opt(dv_arena *a, const json_val *v) { return v ? arena_strndup(a, v->u.s, v->len) : NULL; }

int repl_spec_parse(dv_arena *a, const json_val *body, repl_spec *s, const char **reason) {
  memset(s, 0, sizeof *s);
  *reason = "Invalid replication.";
  if (!body || body->type != JSON_OBJECT) {
    *reason = "The replication must be a JSON object.";
    return DV_EINVAL;
  }
  int rc;
  if ((rc = opt_bool(body, "cancel", 0, &s->cancel, reason))) return rc;
  const json_val *rid = json_obj_getz(body, "replication_id");
  if (!rid) rid = json_obj_getz(body, "id"); /* CouchDB accepts either with cancel */
  if (rid && rid->type == JSON_STRING && s->cancel) s->replication_id = str_opt(a, rid);
  else if (rid && rid->type != JSON_STRING && rid->type != JSON_NULL && json_obj_getz(body, "replication_id")) {
    *reason = "`replication_id` must be a string.";
    return DV_EINVAL;
  }
  if (s->cancel && s->replication_id && !json_obj_getz(body, "source")) return 0;
  if ((rc = parse_ep(a, json_obj_getz(body, "source"), "source", &s->source, reason))) return rc;
  if ((rc = parse_ep(a, json_obj_getz(body, "target"), "target", &s->target, reason))) return rc;
  if ((rc = opt_bool(body, "continuous", 0, &s->continuous, reason)) ||
      (rc = opt_bool(body, "create_target", 0, &s->create_target, reason)) ||
      (rc = opt_bool(body, "winning_revs_only", 0, &s->winning_revs_only, reason)) ||
      (rc = opt_bool(body, "use_checkpoints", 1, &s->use_checkpoints, reason)) ||
      (rc = opt_bool(body, "use_bulk_get", 1, &s->use_bulk_get, reason)) ||
      (rc = opt_int(body, "worker_processes", RS_DEFAULT_WORKERS, 1, 64, &s->worker_processes, reason)) ||
      (rc = opt_int(body, "worker_batch_size", RS_DEFAULT_BATCH, 1, 10000, &s->worker_batch_size, reason)) ||
      (rc = opt_int(body, "http_connections", RS_DEFAULT_CONNS, 1, 1000, &s->http_connections, reason)) ||
      (rc = opt_int(body, "connection_timeout", RS_DEFAULT_TIMEOUT_MS, 100, 3600000, &s->connection_timeout_ms,
                    reason)) ||
      (rc = opt_int(body, "retries_per_request", RS_DEFAULT_RETRIES, 0, 100, &s->retries_per_request, reason)) ||
      (rc = opt_int(body, "checkpoint_interval", RS_DEFAULT_CHECKPOINT_MS, 1, 86400000, &s->checkpoint_interval_ms,
                    reason)))
    return rc;
  const json_val *v;
  if ((v = json_obj_getz(body, "doc_ids")) && v->type != JSON_NULL) {
    if (v->type != JSON_ARRAY) {
      *reason = "`doc_ids` field must be a list of strings.";
      return DV_EINVAL;
    }
    for (size_t i = 0; i < v->len; i++)
      if (v->u.items[i]->type != JSON_STRING) {
        *reason = "`doc_ids` field must be a list of strings.";
        return DV_EINVAL;
      }
    s->doc_ids = v;
  }
  if ((v = json_obj_getz(body, "selector")) && v->type != JSON_NULL) {
    if (v->type != JSON_OBJECT) {
      *reason = "`selector` must be a JSON object.";
      return DV_EINVAL;
    }
    s->selector = v;
  }
  if ((v = json_obj_getz(body, "filter")) && v->type != JSON_NULL) {
    if (v->type != JSON_STRING || !v->len) {
      *reason = "`filter` must be a string.";
      return DV_EINVAL;
    }
    s->filter = str_opt(a, v);
    if (!strcmp(s->filter, "_doc_ids")) {
      if (!s->doc_ids) {
        *reason = "`filter` _doc_ids needs `doc_ids`.";
        return DV_EINVAL;
      }
    } else if (!strcmp(s->filter, "_selector")) {
      if (!s->selector) {
        *reason = "`filter` _selector needs `selector`.";
        return DV_EINVAL;
      }
    } else if (s->filter[0] == '_') {
      *reason = "`filter` must be _doc_ids, _selector or a design document filter (ddoc/name).";
      return DV_EINVAL;
    } else {
      const char *slash = strchr(s->filter, '/');
      if (!slash || slash == s->filter || !slash[1] || strchr(slash + 1, '/')) {
        *reason = "`filter` must be of the form `designname/filtername`.";
        return DV_EINVAL;
      }
    }
  }
  if ((s->doc_ids != NULL) + (s->selector != NULL) +
          (s->filter && strcmp(s->filter, "_doc_ids") && strcmp(s->filter, "_selector")) > 1) {
    *reason = "`doc_ids`, `selector` and `filter` are mutually exclusive.";
    return DV_EINVAL;
  }
  if ((v = json_obj_getz(body, "query_params")) && v->type != JSON_NULL) {
    if (v->type != JSON_OBJECT) {
      *reason = "`query_params` must be an object.";
      return DV_EINVAL;
    }
    s->query_params = v;
  }
  if ((v = json_obj_getz(body, "since_seq")) && v->type != JSON_NULL) {
    if (v->type != JSON_STRING && v->type != JSON_NUMBER) {
      *reason = "`since_seq` must be a string or a number.";
      return DV_EINVAL;
    }
    dv_buf b;
    buf_init(&b);
    if (json_write(&b, v) == 0) s->since_seq = arena_strndup(a, (char *)b.p, b.len);
    buf_free(&b);
    if (!s->since_seq) return DV_ENOMEM;
  }
  if ((v = json_obj_getz(body, "user_ctx")) && v->type == JSON_OBJECT) {
    const json_val *n = json_obj_getz(v, "name"), *r = json_obj_getz(v, "roles");
    if (n && n->type == JSON_STRING) s->user = str_opt(a, n);
    if (r && r->type == JSON_ARRAY) {
      s->roles = arena_alloc(a, (r->len + 1) * sizeof *s->roles);
      if (!s->roles) return DV_ENOMEM;
      for (size_t i = 0; i < r->len; i++)
        if (r->u.items[i]->type == JSON_STRING) s->roles[s->nroles++] = str_opt(a, r->u.items[i]);
    }
  }
  return 0;
}

static char *dup_or_null(dv_arena *a, const char *s) { return s ? arena_strndup(a, s, strlen(s)) : NULL; }

static int ep_copy(dv_arena *a, const repl_ep *in, repl_ep *out) {
  *out = *in;
  out->local = dup_or_null(a, in->local);
  out->url = dup_or_null(a, in->url);
  out->user = dup_or_null(a, in->user);
  out->pass = dup_or_null(a, in->pass);
  out->host = dup_or_null(a, in->host);
  out->path = dup_or_null(a, in->path);
  out->hdrs = in->nhdrs ? arena_alloc(a, in->nhdrs * sizeof *out->hdrs) : NULL;
  if (in->nhdrs && !out->hdrs) return DV_ENOMEM;
  for (size_t i = 0; i < in->nhdrs; i++) {
    out->hdrs[i].name = dup_or_null(a, in->hdrs[i].name);
    out->hdrs[i].value = dup_or_null(a, in->hdrs[i].value);
    if (!out->hdrs[i].name || !out->hdrs[i].value) return DV_ENOMEM;
  }
  return 0;
}

int repl_spec_copy(dv_arena *a, const repl_spec *in, repl_spec *out) {
  *out = *in;
  int rc;
  if ((rc = ep_copy(a, &in->source, &out->source)) || (rc = ep_copy(a, &in->target, &out->target))) return rc;
  out->doc_ids = in->doc_ids ? json_dup(a, in->doc_ids) : NULL;
  out->selector = in->selector ? json_dup(a, in->selector) : NULL;
  out->query_params = in->query_params ? json_dup(a, in->query_params) : NULL;
  out->filter = dup_or_null(a, in->filter);
  out->since_seq = dup_or_null(a, in->since_seq);
  out->replication_id = dup_or_null(a, in->replication_id);
  out->user = dup_or_null(a, in->user);
  out->roles = in->nroles ? arena_alloc(a, in->nroles * sizeof *out->roles) : NULL;
  for (size_t i = 0; i < in->nroles; i++)
    if (out->roles) out->roles[i] = dup_or_null(a, in->roles[i]);
  if ((in->doc_ids && !out->doc_ids) || (in->selector && !out->selector) ||
      (in->query_params && !out->query_params) || (in->nroles && !out->roles))
    return DV_ENOMEM;
  return 0;
}

void repl_ep_show(const repl_ep *e, dv_buf *out) {
  if (e->local) {
    buf_puts(out, e->local);
    return;
  }
  const char *u = e->url;
  const char *sep = strstr(u, "://");
  if (!sep || !e->user) {
    buf_puts(out, u);
    return;
  }
  buf_append(out, u, (size_t)(sep + 3 - u));
  buf_puts(out, e->user);
  buf_puts(out, ":*****@");
  buf_puts(out, sep + 3);
}

/* ---- Erlang's external term format ------------------------------------------------ */

enum {
  ET_VERSION = 131, ET_NEW_FLOAT = 70, ET_SMALL_INT = 97, ET_INT = 98, ET_ATOM = 100, ET_SMALL_TUPLE = 104,
  ET_NIL = 106, ET_STRING = 107, ET_LIST = 108, ET_BINARY = 109, ET_SMALL_BIG = 110,
};

static void et_u16(dv_buf *b, size_t v) {
  buf_putc(b, (uint8_t)(v >> 8));
  buf_putc(b, (uint8_t)v);
}
static void et_u32(dv_buf *b, size_t v) {
  buf_putc(b, (uint8_t)(v >> 24));
  buf_putc(b, (uint8_t)(v >> 16));
  buf_putc(b, (uint8_t)(v >> 8));
  buf_putc(b, (uint8_t)v);
}
static void et_atom(dv_buf *b, const char *s) {
  buf_putc(b, ET_ATOM);
  et_u16(b, strlen(s));
  buf_puts(b, s);
}
static void et_binary(dv_buf *b, const char *s, size_t n) {
  buf_putc(b, ET_BINARY);
  et_u32(b, n);
  buf_append(b, s, n);
}
/* An Erlang string: a list of bytes. */
static void et_string(dv_buf *b, const char *s) {
  size_t n = strlen(s);
  if (!n) {
    buf_putc(b, ET_NIL);
    return;
  }
  if (n <= 65535) {
    buf_putc(b, ET_STRING);
    et_u16(b, n);
    buf_append(b, s, n);
    return;
  }
  buf_putc(b, ET_LIST);
  et_u32(b, n);
  for (size_t i = 0; i < n; i++) {
    buf_putc(b, ET_SMALL_INT);
    buf_putc(b, (uint8_t)s[i]);
  }
  buf_putc(b, ET_NIL);
}
static void et_int(dv_buf *b, int64_t v) {
  if (v >= 0 && v <= 255) {
    buf_putc(b, ET_SMALL_INT);
    buf_putc(b, (uint8_t)v);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    buf_putc(b, ET_INT);
    et_u32(b, (uint32_t)(int32_t)v);
  } else {
    uint64_t m = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
    uint8_t d[8];
    int n = 0;
    while (m) d[n++] = (uint8_t)m, m >>= 8;
    buf_putc(b, ET_SMALL_BIG);
    buf_putc(b, (uint8_t)n);
    buf_putc(b, v < 0);
    buf_append(b, d, (size_t)n);
  }
}
static void et_tuple(dv_buf *b, int arity) {
  buf_putc(b, ET_SMALL_TUPLE);
  buf_putc(b, (uint8_t)arity);
}
static void et_list(dv_buf *b, size_t n) {
  if (n) {
    buf_putc(b, ET_LIST);
    et_u32(b, n);
  }
}
static void et_list_end(dv_buf *b) { buf_putc(b, ET_NIL); }

/* EJSON: objects {[{<<K>>, V}]}, arrays lists, strings binaries. */
static void et_ejson(dv_buf *b, const json_val *v) {
  switch (v->type) {
  case JSON_NULL: et_atom(b, "null"); break;
  case JSON_BOOL: et_atom(b, v->b ? "true" : "false"); break;
  case JSON_STRING: et_binary(b, v->u.s, v->len); break;
  case JSON_NUMBER: {
    int64_t i;
    double d;
    if (!json_num_int64(v->u.s, v->len, &i)) {
      et_int(b, i);
    } else if (!json_num_double(v->u.s, v->len, &d)) {
      uint64_t bits;
      memcpy(&bits, &d, 8);
      buf_putc(b, ET_NEW_FLOAT);
      for (int k = 7; k >= 0; k--) buf_putc(b, (uint8_t)(bits >> (k * 8)));
    } else {
      et_binary(b, v->u.s, v->len);
    }
    break;
  }
  case JSON_ARRAY:
    et_list(b, v->len);
    for (size_t i = 0; i < v->len; i++) et_ejson(b, v->u.items[i]);
    et_list_end(b);
    break;
  case JSON_OBJECT:
    et_tuple(b, 1);
    et_list(b, v->len);
    for (size_t i = 0; i < v->len; i++) {
      et_tuple(b, 2);
      et_binary(b, v->u.members[i].key, v->u.members[i].klen);
      et_ejson(b, v->u.members[i].val);
    }
    et_list_end(b);
    break;
  }
}

static int hdr_cmp(const void *x, const void *y) {
  return strcmp(((const repl_hdr *)x)->name, ((const repl_hdr *)y)->name);
}

/* {remote, User, Host, Port, Path, HeadersWithoutBasicAuth, undefined}, or
 * <<DbName>> for a local endpoint. */
static void et_endpoint(dv_buf *b, const repl_ep *e) {
  if (e->local) {
    et_binary(b, e->local, strlen(e->local));
    return;
  }
  et_tuple(b, 7);
  et_atom(b, "remote");
  if (e->user) et_string(b, e->user);
  else et_atom(b, "undefined");
  et_string(b, e->host);
  if (e->port) et_int(b, e->port);
  else et_atom(b, "default");
  et_string(b, e->path);
  repl_hdr hs[64];
  size_t n = 0;
  for (size_t i = 0; i < e->nhdrs && n < 64; i++) {
    if (!strcasecmp(e->hdrs[i].name, "Authorization") && !strncasecmp(e->hdrs[i].value, "Basic ", 6)) continue;
    hs[n++] = e->hdrs[i];
  }
  qsort(hs, n, sizeof hs[0], hdr_cmp);
  et_list(b, n);
  for (size_t i = 0; i < n; i++) {
    et_tuple(b, 2);
    et_string(b, hs[i].name);
    et_string(b, hs[i].value);
  }
  et_list_end(b);
  et_atom(b, "undefined");
}

int repl_id_make(const repl_spec *s, const char server_uuid[33], const char *filter_code, char base[33],
                 char full[REPL_ID_MAX]) {
  dv_buf b;
  buf_init(&b);
  int user_filter = s->filter && strcmp(s->filter, "_doc_ids") && strcmp(s->filter, "_selector");
  size_t n = 3 + (s->doc_ids || s->selector ? 1 : 0) + (user_filter ? 2 : 0) + (s->winning_revs_only ? 1 : 0);
  buf_putc(&b, ET_VERSION);
  et_list(&b, n);
  et_binary(&b, server_uuid, strlen(server_uuid));
  et_endpoint(&b, &s->source);
  et_endpoint(&b, &s->target);
  if (user_filter) {
    const char *code = filter_code ? filter_code : "";
    et_binary(&b, code, strlen(code));
    if (s->query_params) et_ejson(&b, s->query_params);
    else {
      et_tuple(&b, 1);
      et_list_end(&b);
    }
  } else if (s->doc_ids) {
    et_ejson(&b, s->doc_ids);
  } else if (s->selector) {
    et_ejson(&b, s->selector);
  }
  /* winning-revisions-only runs must not share checkpoints with full ones:
   * a full run resuming from one would skip the conflicts it left out */
  if (s->winning_revs_only) et_atom(&b, "winning_revs_only");
  et_list_end(&b);
  if (buf_error(&b)) {
    buf_free(&b);
    return DV_ENOMEM;
  }
  dv_md5 c;
  uint8_t d[DV_MD5_LEN];
  dv_md5_init(&c);
  dv_md5_update(&c, b.p, b.len);
  dv_md5_final(&c, d);
  buf_free(&b);
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) base[2 * i] = hx[d[i] >> 4], base[2 * i + 1] = hx[d[i] & 15];
  base[32] = 0;
  if (full)
    snprintf(full, REPL_ID_MAX, "%s%s%s", base, s->continuous ? "+continuous" : "",
             s->create_target ? "+create_target" : "");
  return 0;
}

/* ---- _replicator documents -------------------------------------------------------- */

int repl_is_replicator_db(const char *name, size_t len) {
  static const char suf[] = "/_replicator";
  if (len == 11 && !memcmp(name, "_replicator", 11)) return 1;
  return len > sizeof suf - 1 && !memcmp(name + len - (sizeof suf - 1), suf, sizeof suf - 1);
}

int repl_doc_validate(dv_arena *a, const json_val *doc, const char *user, int is_admin, const char **reason) {
  if (!doc || doc->type != JSON_OBJECT) {
    *reason = "Replication documents must be JSON objects.";
    return DV_EINVAL;
  }
  const json_val *del = json_obj_getz(doc, "_deleted");
  if (del && del->type == JSON_BOOL && del->b) return 0;
  const json_val *id = json_obj_getz(doc, "_id");
  if (id && id->type == JSON_STRING && id->len >= 8 && !memcmp(id->u.s, "_design/", 8)) {
    if (!is_admin) {
      *reason = "Only admins may write design documents in a replicator database.";
      return DV_EINVAL;
    }
    return 0;
  }
  repl_spec s;
  int rc = repl_spec_parse(a, doc, &s, reason);
  if (rc) return rc;
  if (s.cancel) {
    *reason = "`cancel` is not allowed in replication documents: delete the document instead.";
    return DV_EINVAL;
  }
  const json_val *st = json_obj_getz(doc, "_replication_state");
  if (st && st->type != JSON_STRING) {
    *reason = "`_replication_state` must be a string.";
    return DV_EINVAL;
  }
  const json_val *uc = json_obj_getz(doc, "user_ctx");
  if (uc && uc->type != JSON_NULL) {
    if (uc->type != JSON_OBJECT) {
      *reason = "`user_ctx` must be an object.";
      return DV_EINVAL;
    }
    const json_val *n = json_obj_getz(uc, "name"), *r = json_obj_getz(uc, "roles");
    if ((n && n->type != JSON_STRING && n->type != JSON_NULL) || (r && r->type != JSON_ARRAY)) {
      *reason = "`user_ctx` must hold a string `name` and an array `roles`.";
      return DV_EINVAL;
    }
    if (r)
      for (size_t i = 0; i < r->len; i++)
        if (r->u.items[i]->type != JSON_STRING) {
          *reason = "`user_ctx.roles` must be an array of strings.";
          return DV_EINVAL;
        }
    if (!is_admin) {
      if (!n || n->type != JSON_STRING || !user || strlen(user) != n->len || memcmp(user, n->u.s, n->len)) {
        *reason = "The `user_ctx.name` of a replication document must be your own user name.";
        return DV_EINVAL;
      }
      if (r)
        for (size_t i = 0; i < r->len; i++)
          if (r->u.items[i]->len && r->u.items[i]->u.s[0] == '_') {
            *reason = "Only admins may give a replication system roles.";
            return DV_EINVAL;
          }
    }
  } else if (!is_admin && (s.source.local || s.target.local)) {
    *reason = "A replication document with a local database needs a `user_ctx` naming you.";
    return DV_EINVAL;
  }
  return 0;
}
