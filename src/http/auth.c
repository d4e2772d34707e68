/* auth.c — authentication (cookie, proxy, Basic), the checks that decide
 * who may use which endpoint and database, and /_session. The data flow is
 * in auth.h; the _users document rules are users.c's.
 *
 * Not here: the hashing primitives (crypto.c), the ini file (util/config.c),
 * the _config endpoints (h_config.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http/auth.h"
#include "http/authparse.h"
#include "http/crypto.h"
#include "http/users.h"
#include "util/alloc.h"

#define ADMIN_ROLE "_admin"
#define COOKIE_NAME "AuthSession"
#define DEFAULT_TIMEOUT 600
#define DEFAULT_ITERATIONS 600000 /* CouchDB 3.4's [chttpd_auth] iterations */
#define MAX_NAME 1024             /* longer user names are never valid */

/* ---- config helpers ---------------------------------------------------------- */

/* A config value copied into the request's arena (NULL when absent). */
static const char *cfg(hreq *r, const char *section, const char *key) {
  char *v = config_get(hsrv_config(r->srv), section, key);
  if (!v) return NULL;
  char *c = arena_strndup(&r->a, v, strlen(v));
  dv_free(v);
  return c;
}

static const char *users_db_name(dv_config *c, char *buf, size_t n) {
  char *v = config_get(c, "chttpd_auth", "authentication_db");
  snprintf(buf, n, "%s", v && *v ? v : "_users");
  dv_free(v);
  return buf;
}

int auth_is_users_db(hreq *r) { return r->users_db && r->db_name; }

/* ---- users --------------------------------------------------------------------- */

/* What the server knows of a name. */
typedef struct auser {
  const char *name;         /* the name */
  int admin;                /* from [admins] */
  const char *admin_hash;   /* its [admins] value */
  const char **roles;       /* roles (arena); admins: "_admin" */
  int nroles;
  /* a _users document's credentials */
  const char *scheme;       /* password_scheme: "pbkdf2" or "simple" */
  const char *prf;          /* pbkdf2_prf (default "sha") */
  const char *derived_key;  /* hex */
  const char *salt;         /* salt text */
  const char *password_sha; /* simple scheme */
  long iterations;
} auser;

static const char *jstr(hreq *r, const json_val *o, const char *k) {
  const json_val *v = json_obj_getz(o, k);
  if (!v || v->type != JSON_STRING) return NULL;
  return arena_strndup(&r->a, v->u.s, v->len);
}

/* The salt of an [admins] hash: its second comma-separated field. */
static const char *admin_salt(hreq *r, const char *h) {
  const char *c1 = h ? strchr(h, ',') : NULL;
  if (!c1) return NULL;
  const char *c2 = strchr(c1 + 1, ',');
  size_t n = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
  return arena_strndup(&r->a, c1 + 1, n);
}

/* Find a user: [admins] first, then the authentication db. 0 with *found. */
static int user_lookup(hreq *r, const char *name, auser *u, int *found) {
  memset(u, 0, sizeof *u);
  *found = 0;
  if (!*name || strlen(name) > MAX_NAME) return 0;
  u->name = name;
  const char *h = cfg(r, "admins", name);
  if (h) {
    u->admin = 1;
    u->admin_hash = h;
    u->salt = admin_salt(r, h);
    u->roles = arena_alloc(&r->a, sizeof *u->roles);
    if (!u->roles) return DV_ENOMEM;
    u->roles[0] = ADMIN_ROLE;
    u->nroles = 1;
    *found = 1;
    return 0;
  }
  char dbn[256];
  users_db_name(hsrv_config(r->srv), dbn, sizeof dbn);
  store_db *db;
  int rc = store_db_open(hsrv_store(r->srv), dbn, &db);
  if (rc == DV_ENO_DB || rc == DV_EBAD_DB_NAME) return 0;
  if (rc) return rc;
  size_t nl = strlen(name);
  char *id = arena_alloc(&r->a, nl + 18);
  if (!id) {
    store_db_close(db);
    return DV_ENOMEM;
  }
  memcpy(id, "org.couchdb.user:", 17);
  memcpy(id + 17, name, nl + 1);
  json_val *doc;
  rc = store_doc_get(db, id, nl + 17, NULL, 0, &r->a, &doc);
  store_db_close(db);
  if (rc == DV_ENOT_FOUND || rc == DV_EDELETED) return 0;
  if (rc) return rc;
  u->scheme = jstr(r, doc, "password_scheme");
  u->prf = jstr(r, doc, "pbkdf2_prf");
  u->derived_key = jstr(r, doc, "derived_key");
  u->salt = jstr(r, doc, "salt");
  u->password_sha = jstr(r, doc, "password_sha");
  const json_val *it = json_obj_getz(doc, "iterations");
  int64_t iters = 10; /* CouchDB's default for a user doc without iterations */
  if (it && it->type == JSON_NUMBER && json_num_int64(it->u.s, it->len, &iters)) iters = -1; /* never verifies */
  u->iterations = (long)iters;
  const json_val *roles = json_obj_getz(doc, "roles");
  if (roles && roles->type == JSON_ARRAY) {
    u->roles = arena_alloc(&r->a, (roles->len + 1) * sizeof *u->roles);
    if (!u->roles) return DV_ENOMEM;
    for (size_t i = 0; i < roles->len; i++)
      if (roles->u.items[i]->type == JSON_STRING)
        u->roles[u->nroles++] = arena_strndup(&r->a, roles->u.items[i]->u.s, roles->u.items[i]->len);
  }
  *found = 1;
  return 0;
}

static int has_role(const char *const *roles, int n, const char *role) {
  for (int i = 0; i < n; i++)
    if (roles[i] && !strcmp(roles[i], role)) return 1;
  return 0;
}

static void set_user(hreq *r, const auser *u, const char *via) {
  r->user = u->name;
  r->roles = u->roles;
  r->nroles = u->nroles;
  r->is_admin = u->admin || has_role(u->roles, u->nroles, ADMIN_ROLE);
  r->auth_via = via;
}

/* ---- verified-password cache ----------------------------------------------------
 *
 * PBKDF2 with CouchDB 3.4's 600,000 iterations costs a tenth of a second;
 * Basic auth sends the password with every request. A slot holds
 * sha256(name, stored hash) and sha256(stored hash, password) of a pair
 * that verified: the same pair again matches without PBKDF2, a changed
 * password or stored hash does not. Direct-mapped, so memory is fixed. */

#define CACHE_SLOTS 4096

typedef struct cslot {
  uint8_t key[32];
  uint8_t val[32];
  int used;
} cslot;

static cslot cache[CACHE_SLOTS];
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

void auth_cache_clear(void) {
  pthread_mutex_lock(&cache_mu);
  memset(cache, 0, sizeof cache);
  pthread_mutex_unlock(&cache_mu);
}

/* The stored credentials as one string (what a password is checked against). */
static void ident(const auser *u, dv_buf *b) {
  if (u->admin) {
    buf_puts(b, u->admin_hash);
    return;
  }
  buf_printf(b, "%s|%s|%s|%s|%s|%ld", u->scheme ? u->scheme : "", u->prf ? u->prf : "",
             u->derived_key ? u->derived_key : "", u->salt ? u->salt : "", u->password_sha ? u->password_sha : "",
             u->iterations);
}

static void cache_keys(const auser *u, const char *password, uint8_t key[32], uint8_t val[32]) {
  dv_buf b;
  buf_init(&b);
  ident(u, &b);
  dv_buf k;
  buf_init(&k);
  buf_puts(&k, u->name);
  buf_putc(&k, 0);
  buf_append(&k, b.p, b.len);
  cr_hash(CR_SHA256, k.p, k.len, key);
  buf_putc(&b, 0);
  buf_puts(&b, password);
  cr_hash(CR_SHA256, b.p, b.len, val);
  buf_free(&b);
  buf_free(&k);
}

static int verify(const auser *u, const char *password, int *ok) {
  *ok = 0;
  uint8_t key[32], val[32];
  cache_keys(u, password, key, val);
  unsigned slot = (unsigned)(key[0] | key[1] << 8) % CACHE_SLOTS;
  pthread_mutex_lock(&cache_mu);
  int hit = cache[slot].used && cr_ct_eq(cache[slot].key, key, 32) && cr_ct_eq(cache[slot].val, val, 32);
  pthread_mutex_unlock(&cache_mu);
  if (hit) {
    *ok = 1;
    return 0;
  }
  int rc;
  if (u->admin) {
    rc = cr_admin_verify(u->admin_hash, password, ok, NULL);
  } else {
    const char *scheme = u->scheme ? u->scheme : (u->password_sha ? "simple" : NULL);
    if (!scheme) return 0; /* no password set: never matches */
    rc = cr_user_verify(scheme, u->prf ? u->prf : "sha", u->derived_key, u->salt, u->iterations, u->password_sha,
                        password, ok);
  }
  if (rc) { /* a malformed stored hash never matches */
    *ok = 0;
    return 0;
  }
  if (*ok) {
    pthread_mutex_lock(&cache_mu);
    memcpy(cache[slot].key, key, 32);
    memcpy(cache[slot].val, val, 32);
    cache[slot].used = 1;
    pthread_mutex_unlock(&cache_mu);
  }
  return 0;
}

/* An unknown name costs what a known one does: one PBKDF2 at the
 * configured count, so the time of a refusal does not tell whether the
 * name exists. */
static void waste_pbkdf2(hreq *r, const char *password) {
  uint8_t out[32];
  static const uint8_t salt[] = "divan-no-such-user";
  int wasted = cr_pbkdf2(CR_SHA256, password, strlen(password), salt, sizeof salt - 1,
                         auth_iterations(hsrv_config(r->srv)), out, sizeof out);
  (void)wasted; /* only its time matters */
}

int auth_check_password(hreq *r, const char *name, const char *password, int *ok, const char ***roles,
                        int *nroles) {
  auser u;
  int found;
  *ok = 0;
  int rc = user_lookup(r, name, &u, &found);
  if (rc) return rc;
  if (!found) {
    waste_pbkdf2(r, password);
    return 0;
  }
  rc = verify(&u, password, ok);
  if (!rc && *ok) {
    if (roles) *roles = u.roles;
    if (nroles) *nroles = u.nroles;
  }
  return rc;
}

/* ---- cookies ------------------------------------------------------------------- */

static long cookie_timeout(hreq *r) {
  long t = (long)config_get_int(hsrv_config(r->srv), "chttpd_auth", "timeout", DEFAULT_TIMEOUT);
  return t > 0 ? t : DEFAULT_TIMEOUT;
}

/* AuthSession value for name at time t (seconds), in the arena. */
static const char *cookie_make(hreq *r, const char *name, const char *salt, long t) {
  const char *secret = cfg(r, "chttpd_auth", "secret");
  if (!secret) return NULL;
  char head[MAX_NAME + 32];
  int hn = snprintf(head, sizeof head, "%s:%lX", name, t);
  if (hn < 0 || (size_t)hn >= sizeof head) return NULL;
  dv_buf key;
  buf_init(&key);
  buf_puts(&key, secret);
  if (salt) buf_puts(&key, salt);
  uint8_t mac[64];
  cr_hmac(CR_SHA256, key.p, key.len, head, (size_t)hn, mac);
  buf_free(&key);
  size_t ml = cr_hash_len(CR_SHA256);
  uint8_t raw[sizeof head + 1 + 64];
  memcpy(raw, head, (size_t)hn);
  raw[hn] = ':';
  memcpy(raw + hn + 1, mac, ml);
  size_t rl = (size_t)hn + 1 + ml;
  char *out = arena_alloc(&r->a, cr_b64_encoded_len(rl, 1) + 1);
  if (!out) return NULL;
  cr_b64_encode(raw, rl, 1, out);
  return out;
}

static void set_cookie(hreq *r, const char *value, long max_age) {
  char *h;
  int persistent = config_get_bool(hsrv_config(r->srv), "chttpd_auth", "allow_persistent_cookies", 1);
  const char *same_site = cfg(r, "chttpd_auth", "same_site");
  int secure = config_get_bool(hsrv_config(r->srv), "chttpd_auth", "cookie_secure", 0);
  dv_buf b;
  buf_init(&b);
  buf_printf(&b, COOKIE_NAME "=%s; Version=1; Path=/; HttpOnly", value);
  if (max_age == 0) buf_puts(&b, "; Expires=Thu, 01-Jan-1970 00:00:00 GMT; Max-Age=0");
  else if (persistent) buf_printf(&b, "; Max-Age=%ld", max_age);
  if (secure) buf_puts(&b, "; Secure");
  if (same_site && *same_site) buf_printf(&b, "; SameSite=%s", same_site);
  h = buf_error(&b) ? NULL : arena_strndup(&r->a, (const char *)b.p, b.len);
  buf_free(&b);
  if (h) hres_header(r, "Set-Cookie", h);
}

/* 1: authenticated by cookie; 0: no usable cookie; -1: error written. */
static int auth_cookie(hreq *r) {
  size_t n;
  const char *v = ap_cookie_value(hreq_hdr(r, "Cookie"), &n);
  if (!v || !n) return 0;
  ap_session ses;
  int prc = ap_session_parse(&r->a, v, n, &ses);
  if (prc == AP_BAD) {
    hres_errs(r, 400, "bad_request", "Malformed AuthSession cookie. Please clear your cookies.");
    return -1;
  }
  if (prc != AP_OK) return 0;
  const char *name = ses.name;
  const uint8_t *mac = ses.mac;
  size_t macl = ses.mac_len;
  long t = ses.time;
  long now = (long)time(NULL), timeout = cookie_timeout(r);
  if (now >= t + timeout) return 0; /* expired */
  auser u;
  int found;
  if (user_lookup(r, name, &u, &found) || !found) return 0;
  const char *expect = cookie_make(r, name, u.salt, t);
  if (!expect) return 0;
  /* compare the HMACs (the cookie's own bytes against ours) */
  size_t en = strlen(expect);
  uint8_t *eraw = arena_alloc(&r->a, cr_b64_decoded_max(en) + 1);
  size_t erl;
  if (!eraw || cr_b64_decode(expect, en, 1, eraw, &erl)) return 0;
  size_t ml = cr_hash_len(CR_SHA256);
  if (macl != ml || erl < ml || !cr_ct_eq(mac, eraw + erl - ml, ml)) return 0;
  set_user(r, &u, "cookie");
  if (now - t > timeout / 10) { /* renew once 10 % of its life has passed */
    const char *fresh = cookie_make(r, name, u.salt, now);
    if (fresh) set_cookie(r, fresh, timeout);
  }
  return 1;
}

/* ---- proxy auth ------------------------------------------------------------------ */

/* The optional handlers [chttpd] authentication_handlers turns on (cookie
 * and Basic always run), read once per request. */
enum { H_PROXY = 1, H_JWT = 2 };
static unsigned handlers_on(hreq *r) {
  const char *h = cfg(r, "chttpd", "authentication_handlers");
  if (!h) return 0;
  return (strstr(h, "proxy_authentication_handler") ? H_PROXY : 0) | (strstr(h, "jwt_authentication_handler") ? H_JWT : 0);
}

/* "a,b,,c" into u->roles (empty names skipped), in r's arena; DV_ENOMEM. */
static int split_roles(hreq *r, const char *roles, auser *u) {
  size_t cap = 1;
  for (const char *p = roles; *p; p++) cap += *p == ',';
  u->roles = arena_alloc(&r->a, cap * sizeof *u->roles);
  if (!u->roles) return DV_ENOMEM;
  for (const char *p = roles; *p;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l) u->roles[u->nroles++] = arena_strndup(&r->a, p, l);
    p += l + (e ? 1 : 0);
  }
  return 0;
}

static int auth_proxy(hreq *r) {
  const char *hn = cfg(r, "chttpd_auth", "x_auth_username");
  const char *hr = cfg(r, "chttpd_auth", "x_auth_roles");
  const char *ht = cfg(r, "chttpd_auth", "x_auth_token");
  const char *name = hreq_hdr(r, hn ? hn : "X-Auth-CouchDB-UserName");
  if (!name || !*name || strlen(name) > MAX_NAME) return 0;
  if (config_get_bool(hsrv_config(r->srv), "chttpd_auth", "proxy_use_secret", 0)) {
    const char *secret = cfg(r, "chttpd_auth", "secret");
    const char *tok = hreq_hdr(r, ht ? ht : "X-Auth-CouchDB-Token");
    if (secret) {
      uint8_t mac[20];
      char hex[41];
      cr_hmac(CR_SHA1, secret, strlen(secret), name, strlen(name), mac);
      cr_hex(mac, 20, hex);
      if (!tok || strlen(tok) != 40 || !cr_ct_eq(tok, hex, 40)) return 0;
    }
  }
  auser u;
  memset(&u, 0, sizeof u);
  u.name = arena_strndup(&r->a, name, strlen(name));
  const char *roles = hreq_hdr(r, hr ? hr : "X-Auth-CouchDB-Roles");
  if (roles && split_roles(r, roles, &u)) return 0;
  set_user(r, &u, "proxy");
  return 1;
}

/* The replicator's loopback requests to local databases (src/repl):
 * HTTP_REPL_HEADER = "TOKEN;USER;ROLE,ROLE", TOKEN the server's secret of
 * this run (never leaves the process but over loopback). The request runs
 * as USER with those roles (no USER: anonymous with the roles, which is
 * how the replicator acts as "_admin" for its own bookkeeping). */
static int auth_replicator(hreq *r) {
  const char *v = hreq_hdr(r, HTTP_REPL_HEADER);
  if (!v) return 0;
  const char *tok = hsrv_repl_token(r->srv);
  size_t tl = strlen(tok);
  if (!tl || strlen(v) < tl + 1 || v[tl] != ';' || !cr_ct_eq(v, tok, tl)) return 0;
  const char *name = v + tl + 1, *semi = strchr(name, ';');
  if (!semi) return 0;
  auser u;
  memset(&u, 0, sizeof u);
  u.name = semi > name ? arena_strndup(&r->a, name, (size_t)(semi - name)) : NULL;
  if (split_roles(r, semi + 1, &u)) return 0;
  set_user(r, &u, "replicator");
  return 1;
}

/* ---- JWT (jwtf.erl, jwtf_keystore.erl) ----------------------------------------------
 *
 * On when [chttpd] authentication_handlers names jwt_authentication_handler.
 * Authorization: Bearer HEADER.PAYLOAD.SIG (base64url JSON). alg is
 * HS256/384/512 (key: [jwt_keys] hmac:KID, base64) or RS256/384/512 (key:
 * [jwt_keys] rsa:KID, a PEM public key with its newlines written "\n");
 * KID is the header's kid or "_default". [jwt_auth] required_claims lists
 * the claims checked (exp, nbf, iat, iss, kid, typ; {iss, "value"}); sub is
 * the user name, [jwt_auth] roles_claim_name (default "_couchdb.roles")
 * its roles. Errors as jwtf's: 400 for a malformed or badly signed token,
 * 401 for exp/nbf and a missing sub. */


/* Is claim named in [jwt_auth] required_claims? *value gets a
 * {claim, "value"} form's value (in r->a) or NULL. */
static int jwt_required(hreq *r, const char *claims, const char *claim, const char **value) {
  *value = NULL;
  size_t n = strlen(claim);
  for (const char *p = claims; p && *p;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == '{') { /* {iss, "https://…"} */
      const char *q = p + 1;
      while (*q == ' ') q++;
      if (!strncmp(q, claim, n) && (q[n] == ',' || q[n] == ' ')) {
        const char *o = strchr(q, '"'), *c = o ? strchr(o + 1, '"') : NULL;
        if (o && c) *value = arena_strndup(&r->a, o + 1, (size_t)(c - o - 1));
        return 1;
      }
      const char *e = strchr(p, '}');
      p = e ? e + 1 : p + strlen(p);
      continue;
    }
    const char *e = p;
    while (*e && *e != ',' && *e != ' ') e++;
    if ((size_t)(e - p) == n && !strncmp(p, claim, n)) return 1;
    p = e;
  }
  return 0;
}

static int jwt_fail(hreq *r, int status, const char *reason) {
  hres_errs(r, status, status == 401 ? "unauthorized" : "bad_request", reason);
  return -1;
}

static int jwt_time_claim(hreq *r, const json_val *pl, const char *claims, const char *name, int future) {
  const char *ignored;
  if (!jwt_required(r, claims, name, &ignored)) return 0;
  const json_val *v = json_obj_getz(pl, name);
  char msg[48];
  if (!v) {
    snprintf(msg, sizeof msg, "Missing %s claim", name);
    return jwt_fail(r, 400, arena_strndup(&r->a, msg, strlen(msg)));
  }
  char num[64];
  double t = 0;
  if (v->type == JSON_NUMBER && v->len < sizeof num) { /* number text is not NUL-terminated */
    memcpy(num, v->u.s, v->len);
    num[v->len] = 0;
    t = strtod(num, NULL);
  }
  double now = (double)time(NULL);
  if (v->type != JSON_NUMBER || (future ? !(t > now) : !(t < now))) {
    snprintf(msg, sizeof msg, "%s not in %s", name, future ? "future" : "past");
    return jwt_fail(r, 401, arena_strndup(&r->a, msg, strlen(msg)));
  }
  return 0;
}

/* 1: authenticated; 0: no Bearer token; -1: refused, written. */
static int auth_jwt(hreq *r) {
  const char *h = hreq_hdr(r, "Authorization");
  if (!h || strncmp(h, "Bearer ", 7)) return 0;
  ap_jwt jw;
  if (ap_jwt_parse(&r->a, h + 7, &jw)) return jwt_fail(r, 400, "Malformed token");
  json_val *hd = jw.header, *pl = jw.payload;
  const char *claims = cfg(r, "jwt_auth", "required_claims");
  const char *want;
  const json_val *typ = json_obj_getz(hd, "typ");
  if (jwt_required(r, claims, "typ", &want)) {
    if (!typ) return jwt_fail(r, 400, "Missing typ header parameter");
    if (typ->type != JSON_STRING || typ->len != 3 || memcmp(typ->u.s, "JWT", 3))
      return jwt_fail(r, 400, "Invalid typ header parameter");
  }
  const json_val *alg = json_obj_getz(hd, "alg");
  if (!alg) return jwt_fail(r, 400, "Missing alg header parameter");
  static const struct { const char *name; int rsa, md; } algs[] = {
      {"HS256", 0, CR_SHA256}, {"HS384", 0, CR_SHA384}, {"HS512", 0, CR_SHA512},
      {"RS256", 1, CR_SHA256}, {"RS384", 1, CR_SHA384}, {"RS512", 1, CR_SHA512}};
  int ai = -1;
  for (int i = 0; alg->type == JSON_STRING && i < 6; i++)
    if (alg->len == 5 && !memcmp(alg->u.s, algs[i].name, 5)) ai = i;
  if (ai < 0) return jwt_fail(r, 400, "Invalid alg header parameter");
  if (jwt_required(r, claims, "iss", &want)) {
    const json_val *iss = json_obj_getz(pl, "iss");
    if (!iss) return jwt_fail(r, 400, "Missing iss claim");
    if (want && (iss->type != JSON_STRING || iss->len != strlen(want) || memcmp(iss->u.s, want, iss->len)))
      return jwt_fail(r, 400, "Invalid iss claim");
  }
  if (jwt_required(r, claims, "iat", &want)) {
    const json_val *iat = json_obj_getz(pl, "iat");
    if (!iat) return jwt_fail(r, 400, "Missing iat claim");
    int integer = iat->type == JSON_NUMBER;
    for (size_t i = 0; integer && i < iat->len; i++) integer = iat->u.s[i] != '.' && iat->u.s[i] != 'e' && iat->u.s[i] != 'E';
    if (!integer) return jwt_fail(r, 400, "Invalid iat claim");
  }
  if (jwt_time_claim(r, pl, claims, "nbf", 0) || jwt_time_claim(r, pl, claims, "exp", 1)) return -1;
  /* the key */
  const json_val *kidv = json_obj_getz(hd, "kid");
  if (!kidv && jwt_required(r, claims, "kid", &want)) return jwt_fail(r, 400, "Missing kid claim");
  char keyname[300];
  int kn = snprintf(keyname, sizeof keyname, "%s:%.*s", algs[ai].rsa ? "rsa" : "hmac",
                    kidv && kidv->type == JSON_STRING ? (int)kidv->len : 8,
                    kidv && kidv->type == JSON_STRING ? kidv->u.s : "_default");
  const char *key = kn > 0 && (size_t)kn < sizeof keyname ? cfg(r, "jwt_keys", keyname) : NULL;
  if (!key) return jwt_fail(r, 400, "Unknown kid");
  const uint8_t *sig = jw.sig;
  size_t sl = jw.sig_len, ml = jw.signed_len;
  const char *tok = jw.signed_part;
  if (algs[ai].rsa) {
    /* the ini value writes the PEM's newlines as "\n" */
    size_t kl = strlen(key);
    char *pem = arena_alloc(&r->a, kl + 1);
    size_t pn = 0;
    if (!pem) return jwt_fail(r, 400, "Unknown kid");
    for (size_t i = 0; i < kl; i++) {
      if (key[i] == '\\' && key[i + 1] == 'n') pem[pn++] = '\n', i++;
      else pem[pn++] = key[i];
    }
    int ok = 0;
    if (cr_rsa_verify(algs[ai].md, pem, pn, tok, ml, sig, sl, &ok) || !ok) return jwt_fail(r, 400, "Bad signature");
  } else {
    size_t kl = strlen(key);
    uint8_t *raw = arena_alloc(&r->a, cr_b64_decoded_max(kl) + 1);
    size_t rl;
    if (!raw || cr_b64_decode(key, kl, 0, raw, &rl)) return jwt_fail(r, 400, "Unknown kid");
    uint8_t mac[CR_MAX_HASH_LEN];
    cr_hmac(algs[ai].md, raw, rl, tok, ml, mac);
    size_t hl = cr_hash_len(algs[ai].md);
    if (sl != hl || !cr_ct_eq(mac, sig, hl)) return jwt_fail(r, 400, "Bad HMAC");
  }
  const json_val *sub = json_obj_getz(pl, "sub");
  if (!sub || sub->type != JSON_STRING || !sub->len || memchr(sub->u.s, 0, sub->len))
    return jwt_fail(r, 401, "Token missing sub claim.");
  auser u;
  memset(&u, 0, sizeof u);
  u.name = arena_strndup(&r->a, sub->u.s, sub->len);
  const char *rc_name = cfg(r, "jwt_auth", "roles_claim_name");
  const json_val *roles = json_obj_getz(pl, rc_name && *rc_name ? rc_name : "_couchdb.roles");
  if (roles && roles->type == JSON_ARRAY) {
    u.roles = arena_alloc(&r->a, (roles->len + 1) * sizeof *u.roles);
    if (!u.roles) return jwt_fail(r, 400, "Malformed token");
    for (size_t i = 0; i < roles->len; i++)
      if (roles->u.items[i]->type == JSON_STRING)
        u.roles[u.nroles++] = arena_strndup(&r->a, roles->u.items[i]->u.s, roles->u.items[i]->len);
  }
  set_user(r, &u, "jwt");
  return 1;
}

/* ---- Basic ------------------------------------------------------------------------ */

static int auth_basic(hreq *r) {
  const char *name, *password;
  switch (ap_basic(&r->a, hreq_hdr(r, "Authorization"), &name, &password)) {
  case AP_OK:
    break;
  case AP_BAD: /* a broken header is no credential: CouchDB 3.4 answers as to anyone */
    return 0;
  case AP_REFUSE:
    hres_errs(r, 401, "unauthorized", "Name or password is incorrect.");
    return -1;
  case AP_NOMEM:
    hres_err(r, DV_ENOMEM);
    return -1;
  default:
    return 0; /* another scheme, or no name:password pair: anonymous */
  }
  auser u;
  int found, ok = 0;
  int rc = user_lookup(r, name, &u, &found);
  if (!rc && found) rc = verify(&u, password, &ok);
  if (!rc && !found) waste_pbkdf2(r, password);
  if (rc) {
    hres_err(r, rc);
    return -1;
  }
  if (!ok) {
    hres_errs(r, 401, "unauthorized", "Name or password is incorrect.");
    return -1;
  }
  set_user(r, &u, "default");
  return 1;
}

int auth_identify(hreq *r) {
  r->user = NULL;
  r->roles = NULL;
  r->nroles = 0;
  r->is_admin = 0;
  if (auth_replicator(r)) return 0;
  int rc = auth_cookie(r);
  if (rc) return rc < 0 ? -1 : 0;
  unsigned on = handlers_on(r);
  if ((on & H_PROXY) && auth_proxy(r)) return 0;
  if (on & H_JWT) {
    rc = auth_jwt(r);
    if (rc) return rc < 0 ? -1 : 0;
  }
  rc = auth_basic(r);
  return rc < 0 ? -1 : 0;
}

/* ---- authorization ------------------------------------------------------------------ */

int auth_need_server_admin(hreq *r) {
  if (r->is_admin) return 0;
  hres_errs(r, 401, "unauthorized", "You are not a server admin.");
  return -1;
}

static int seg_is(const hreq *r, int i, const char *s) {
  return i < r->nseg && r->seg_len[i] == strlen(s) && !memcmp(r->seg[i], s, r->seg_len[i]);
}

int auth_authorize(hreq *r) {
  if (r->nseg == 0) return 0;
  if (seg_is(r, 0, "favicon.ico")) return 0;
  const char *s0 = r->seg[0];
  char b[256];
  r->users_db = !strcmp(s0, users_db_name(hsrv_config(r->srv), b, sizeof b)); /* once, not per document */
  int users = seg_is(r, 0, "_users") || seg_is(r, 0, "_replicator");
  if (s0[0] == '_' && !users && !seg_is(r, 0, "_global_changes")) {
    if (r->nseg == 1 && (seg_is(r, 0, "_up") || seg_is(r, 0, "_uuids") || seg_is(r, 0, "_session"))) return 0;
    if (seg_is(r, 0, "_utils") && (r->method == HM_GET || r->method == HM_HEAD)) return 0; /* as CouchDB */
    /* as CouchDB's chttpd_auth_request: anyone may ask for a replication; it
     * acts on local databases as them (h_repl.c) */
    if (r->nseg == 1 && seg_is(r, 0, "_replicate")) return 0;
    if (r->nseg == 1 && (seg_is(r, 0, "_all_dbs") || seg_is(r, 0, "_dbs_info")) &&
        !config_get_bool(hsrv_config(r->srv), "chttpd", "admin_only_all_dbs", 1))
      return 0;
    return auth_need_server_admin(r);
  }
  if (r->nseg == 1 && (r->method == HM_PUT || r->method == HM_DELETE)) return auth_need_server_admin(r);
  if (users && r->nseg >= 2 && (seg_is(r, 1, "_all_docs") || seg_is(r, 1, "_changes")))
    return auth_need_server_admin(r);
  if (r->nseg >= 2 && (seg_is(r, 1, "_compact") || seg_is(r, 1, "_view_cleanup"))) r->need_db_admin = 1;
  /* _users documents follow users.c's rules (anyone may sign up, a user
   * sees and changes only their own document) for those _security lets in
   * (nobody but admins by default, as CouchDB 3.4); every other _users
   * path needs a member. */
  if (r->nseg >= 2 && r->users_db && r->seg[1][0] != '_' &&
      (r->method == HM_GET || r->method == HM_HEAD || r->method == HM_PUT || r->method == HM_DELETE))
    r->users_doc = 1;
  return 0;
}

/* Is the requester named in (or holding a role of) sec[part]? */
static int sec_match(hreq *r, const json_val *sec, const char *part, int *empty) {
  const json_val *p = json_obj_getz(sec, part);
  const json_val *names = p && p->type == JSON_OBJECT ? json_obj_getz(p, "names") : NULL;
  const json_val *roles = p && p->type == JSON_OBJECT ? json_obj_getz(p, "roles") : NULL;
  *empty = 1;
  int hit = 0;
  if (names && names->type == JSON_ARRAY) {
    for (size_t i = 0; i < names->len; i++) {
      const json_val *v = names->u.items[i];
      if (v->type != JSON_STRING) continue;
      *empty = 0;
      if (r->user && v->len == strlen(r->user) && !memcmp(v->u.s, r->user, v->len)) hit = 1;
    }
  }
  if (roles && roles->type == JSON_ARRAY) {
    for (size_t i = 0; i < roles->len; i++) {
      const json_val *v = roles->u.items[i];
      if (v->type != JSON_STRING) continue;
      *empty = 0;
      for (int k = 0; k < r->nroles; k++)
        if (r->roles[k] && v->len == strlen(r->roles[k]) && !memcmp(v->u.s, r->roles[k], v->len)) hit = 1;
    }
  }
  return hit;
}

/* The security object in force: the stored one, or the default of
 * [couchdb] default_security when none was ever set. */
int auth_security(hreq *r, json_val **out) {
  json_val *sec;
  int rc = store_db_get_security(r->db, &r->a, &sec);
  if (rc) return rc;
  if (sec->type == JSON_OBJECT && sec->len == 0) {
    const char *d = cfg(r, "couchdb", "default_security");
    if (!d || strcmp(d, "everyone")) {
      static const char admin_only[] = "{\"members\":{\"roles\":[\"_admin\"]},\"admins\":{\"roles\":[\"_admin\"]}}";
      rc = json_parse(&r->a, admin_only, sizeof admin_only - 1, NULL, &sec, NULL);
      if (rc) return rc;
    }
  }
  r->sec = sec; /* the write hooks get it (auth_wctx) */
  *out = sec;
  return 0;
}

int auth_db_member(hreq *r) {
  if (r->is_admin) {
    r->db_admin = 1;
    return 0;
  }
  json_val *sec;
  int rc = auth_security(r, &sec);
  if (rc) {
    hres_err(r, rc);
    return -1;
  }
  int e1, e2;
  if (sec_match(r, sec, "admins", &e1)) {
    r->db_admin = 1;
    return 0;
  }
  if (r->need_db_admin) {
    hres_errs(r, 401, "unauthorized", "You are not a server or db admin.");
    return -1;
  }
  /* _users too: admin-only while it has its default security, as CouchDB
   * 3.4; once opened through _security, users.c's rules decide */
  if (sec_match(r, sec, "members", &e2) || e2) return 0; /* named, or a public db */
  if (!r->user) hres_errs(r, 401, "unauthorized", "You are not authorized to access this db.");
  else hres_errs(r, 403, "forbidden", "You are not allowed to access this db.");
  return -1;
}

int auth_db_admin(hreq *r) {
  if (r->is_admin || r->db_admin) return 0;
  if (!r->user) hres_errs(r, 401, "unauthorized", "You are not a db or server admin.");
  else hres_errs(r, 403, "forbidden", "You are not a db or server admin.");
  return -1;
}

/* ---- setup ------------------------------------------------------------------------- */

struct hash_arg {
  dv_config *cfg;
  char **names; /* plaintext admins to hash */
  size_t n, cap;
};

static int collect_plain(void *arg, const char *section, const char *key, const char *value) {
  struct hash_arg *h = arg;
  (void)section;
  if (cr_admin_is_hashed(value)) return 0;
  if (h->n == h->cap) {
    size_t nc = h->cap ? 2 * h->cap : 8;
    char **p = dv_realloc(h->names, nc * sizeof *p);
    if (!p) return DV_ENOMEM;
    h->names = p;
    h->cap = nc;
  }
  h->names[h->n] = dv_malloc(strlen(key) + 1);
  if (!h->names[h->n]) return DV_ENOMEM;
  strcpy(h->names[h->n++], key);
  return 0;
}

long auth_iterations(dv_config *c) {
  long it = (long)config_get_int(c, "chttpd_auth", "iterations", DEFAULT_ITERATIONS);
  return it > 0 ? it : DEFAULT_ITERATIONS;
}

int auth_admin_hash(dv_config *c, const char *password, char **out) {
  char *prfn = config_get(c, "chttpd_auth", "pbkdf2_prf");
  int prf = cr_prf_by_name(prfn && *prfn ? prfn : "sha256");
  dv_free(prfn);
  return cr_admin_hash(password, prf < 0 ? CR_SHA256 : prf, auth_iterations(c), out);
}

static int hooks_load(void *arg, const char *name, size_t len, store_hooks *out);

int auth_setup(store *st, dv_config *c) {
  struct hash_arg h = {.cfg = c};
  int rc = config_each(c, "admins", collect_plain, &h);
  for (size_t i = 0; !rc && i < h.n; i++) {
    char *plain = config_get(c, "admins", h.names[i]);
    char *hash = NULL;
    if (plain) rc = auth_admin_hash(c, plain, &hash);
    /* persisted when it came from the file; an override (DIVAN_ADMIN)
     * stays in memory, hashed */
    if (!rc && hash) rc = config_set(c, "admins", h.names[i], hash, config_path(c) != NULL, NULL);
    dv_free(plain);
    dv_free(hash);
  }
  for (size_t i = 0; i < h.n; i++) dv_free(h.names[i]);
  dv_free(h.names);
  if (rc) return rc;
  char *secret = config_get(c, "chttpd_auth", "secret");
  if (!secret || !*secret) {
    char s[33];
    cr_random_hex(s, 16);
    rc = config_set(c, "chttpd_auth", "secret", s, config_path(c) != NULL, NULL);
  }
  dv_free(secret);
  if (rc) return rc;
  store_set_hooks(st, &(store_hooks_provider){.load = hooks_load, .arg = c});
  char dbn[256];
  users_db_name(c, dbn, sizeof dbn);
  rc = store_db_create(st, dbn);
  if (rc == DV_EDB_EXISTS) rc = 0;
  return rc;
}

/* ---- /_session ------------------------------------------------------------------------ */

static void put_roles(json_w *w, const char *const *roles, int n) {
  json_w_arr_begin(w);
  for (int i = 0; i < n; i++)
    if (roles[i]) json_w_strz(w, roles[i]);
  json_w_arr_end(w);
}

static void session_get(hreq *r) {
  const char *basic = hq_get(r, "basic", NULL);
  if (!r->user && basic && !strcmp(basic, "true")) {
    hres_errs(r, 401, "unauthorized", "Please login.");
    return;
  }
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "ok");
  json_w_bool(&w, 1);
  json_w_keyz(&w, "userCtx");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "name");
  if (r->user) json_w_strz(&w, r->user);
  else json_w_null(&w);
  json_w_keyz(&w, "roles");
  put_roles(&w, r->roles, r->nroles);
  json_w_obj_end(&w);
  json_w_keyz(&w, "info");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "authentication_handlers");
  json_w_arr_begin(&w);
  unsigned on = handlers_on(r);
  if (on & H_JWT) json_w_strz(&w, "jwt");
  if (on & H_PROXY) json_w_strz(&w, "proxy");
  json_w_strz(&w, "cookie");
  json_w_strz(&w, "default");
  json_w_arr_end(&w);
  if (r->auth_via) {
    json_w_keyz(&w, "authenticated");
    json_w_strz(&w, r->auth_via);
  }
  json_w_obj_end(&w);
  json_w_obj_end(&w);
}

static void session_post(hreq *r) {
  const char *ct = hreq_hdr(r, "Content-Type");
  const char *name = NULL, *password = NULL;
  const char *uname = NULL;
  int have_name = 0, have_uname = 0;
  if (ct && !strncasecmp(ct, "application/x-www-form-urlencoded", 33)) {
    name = ap_form_field(&r->a, r->body, r->body_len, "name", &have_name);
    uname = ap_form_field(&r->a, r->body, r->body_len, "username", &have_uname);
    password = ap_form_field(&r->a, r->body, r->body_len, "password", NULL);
  } else if (ct && !strncasecmp(ct, "application/json", 16)) {
    json_val *b;
    if (hreq_json_body(r, 1, &b)) return;
    const json_val *n = json_obj_getz(b, "name"), *un = json_obj_getz(b, "username"), *p = json_obj_getz(b, "password");
    have_name = n != NULL, have_uname = un != NULL;
    /* a NUL inside either would cut it short: such a pair never matches */
    if (n && n->type == JSON_STRING && !memchr(n->u.s, 0, n->len)) name = arena_strndup(&r->a, n->u.s, n->len);
    if (un && un->type == JSON_STRING && !memchr(un->u.s, 0, un->len)) uname = arena_strndup(&r->a, un->u.s, un->len);
    if (p && p->type == JSON_STRING && !memchr(p->u.s, 0, p->len)) password = arena_strndup(&r->a, p->u.s, p->len);
  } else {
    hres_errs(r, 415, "bad_content_type", "Content-Type must be application/x-www-form-urlencoded or application/json");
    return;
  }
  /* couch_httpd_auth:extract_username: "name" or "username", not two
   * different ones, and one of them */
  if (!have_name && !have_uname) {
    hres_errs(r, 400, "bad_request", "request body must contain a username");
    return;
  }
  if (have_name && have_uname && (!name || !uname || strcmp(name, uname))) {
    hres_errs(r, 400, "bad_request", "request body contains different usernames");
    return;
  }
  if (!have_name) name = uname;
  int ok = 0;
  const char **roles = NULL;
  int nroles = 0;
  if (name && password && strlen(name) <= MAX_NAME) {
    int rc = auth_check_password(r, name, password, &ok, &roles, &nroles);
    if (rc) {
      hres_err(r, rc);
      return;
    }
  }
  if (!ok) {
    hres_errs(r, 401, "unauthorized", "Name or password is incorrect.");
    return;
  }
  auser u;
  int found;
  if (user_lookup(r, name, &u, &found) || !found) {
    hres_errs(r, 401, "unauthorized", "Name or password is incorrect.");
    return;
  }
  const char *c = cookie_make(r, name, u.salt, (long)time(NULL));
  if (!c) {
    hres_errs(r, 500, "internal_server_error", "No [chttpd_auth] secret.");
    return;
  }
  set_cookie(r, c, cookie_timeout(r));
  const char *next = hq_get(r, "next", NULL);
  json_w w;
  hres_jw(r, next ? 302 : 200, &w);
  if (next) hres_header(r, "Location", next);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "ok");
  json_w_bool(&w, 1);
  json_w_keyz(&w, "name");
  json_w_strz(&w, name);
  json_w_keyz(&w, "roles");
  put_roles(&w, roles, nroles);
  json_w_obj_end(&w);
}

void hapi_session(hreq *r) {
  switch (r->method) {
  case HM_GET:
  case HM_HEAD:
    session_get(r);
    break;
  case HM_POST:
    session_post(r);
    break;
  case HM_DELETE:
    set_cookie(r, "", 0);
    if (hq_get(r, "next", NULL)) {
      hres_header(r, "Location", hq_get(r, "next", NULL));
      json_w w;
      hres_jw(r, 302, &w);
      json_w_obj_begin(&w);
      json_w_keyz(&w, "ok");
      json_w_bool(&w, 1);
      json_w_obj_end(&w);
    } else {
      hres_ok(r, 200);
    }
    break;
  default:
    hres_method(r, "GET,HEAD,POST,DELETE");
  }
}

/* ---- _users writes ------------------------------------------------------------------ */

int auth_users_prepare(hreq *r, const char *id, size_t n, json_val *doc, json_val **out) {
  *out = doc;
  if (!auth_is_users_db(r) || !doc || !id) return 0;
  users_ctx u = {.name = r->user, .is_admin = r->is_admin || r->db_admin};
  char *prf = config_get(hsrv_config(r->srv), "chttpd_auth", "pbkdf2_prf");
  int rc = users_before_write(&r->a, &u, id, n, doc, prf && *prf ? prf : "sha256",
                              auth_iterations(hsrv_config(r->srv)), out);
  dv_free(prf);
  return rc;
}

void auth_wctx(hreq *r, store_wctx *w, store_user *u) {
  *u = (store_user){.name = r->user, .roles = r->roles, .n_roles = r->nroles > 0 ? (size_t)r->nroles : 0,
                    .is_admin = r->is_admin, .is_db_admin = r->db_admin};
  *w = (store_wctx){.user = u, .sec = r->sec, .a = &r->a};
}

/* The users database's validator (store/hooks.h): users.c's rules, in the
 * edit's transaction, on the old document the store reads for it. ctx is
 * the server's configuration. */
static int users_vdu(void *ctx, const json_val *nd, store_old *old, const store_user *su, const json_val *sec,
                     dv_arena *a, const char **why) {
  (void)sec;
  dv_config *c = ctx;
  const json_val *id = json_obj_getz(nd, "_id");
  if (!id || id->type != JSON_STRING) return DV_EINVAL;
  json_val *od;
  int rc = store_old_doc(old, &od);
  if (rc) return rc;
  const json_val *del = od ? json_obj_getz(od, "_deleted") : NULL;
  if (del && del->type == JSON_BOOL && del->b) od = NULL; /* a deleted document is no old document */
  users_ctx u = {.name = su->name, .is_admin = su->is_admin || su->is_db_admin};
  char *prf = config_get(c, "chttpd_auth", "pbkdf2_prf");
  users_err e;
  rc = users_validate(a, &u, id->u.s, id->len, nd, od, prf && *prf ? prf : "sha256", auth_iterations(c), &e);
  dv_free(prf);
  if (rc != USERS_REFUSED) return rc;
  *why = e.reason;
  switch (e.status) {
  case 401: return DV_EUNAUTHORIZED;
  case 403: return DV_EFORBIDDEN;
  case 404: return DV_ENOT_FOUND;
  default: return e.error && !strcmp(e.error, "TypeError") ? DV_EVDU_TYPEERROR : DV_EVDU_UNKNOWN;
  }
}

/* The hooks provider: the users database gets users_vdu. */
static int hooks_load(void *arg, const char *name, size_t len, store_hooks *out) {
  char dbn[256];
  users_db_name(arg, dbn, sizeof dbn);
  if (strlen(dbn) == len && !memcmp(dbn, name, len)) {
    out->validate[0].fn = users_vdu;
    out->validate[0].ctx = arg;
    out->n_validate = 1;
  }
  return 0;
}
