/* auth.c — identities and rights, with no HTTP in them: who a request's
 * credentials name (cookie, proxy, JWT, Basic, the replicator's loopback
 * token), the password cache, the _security checks, the one rule for who
 * may write which document, the _users rules as the users database's
 * validator, and the start-up work (hashing [admins], the secret). The
 * data flow is in auth.h; the _users document rules are users.c's.
 *
 * Not here: the hashing primitives (crypto.c), the header parsers
 * (authparse.c), the ini file (util/config.c), the HTTP side (api/authn.c,
 * api/session.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "auth/auth.h"
#include "auth/authparse.h"
#include "auth/crypto.h"
#include "auth/users.h"
#include "util/alloc.h"

#define ADMIN_ROLE "_admin"
#define COOKIE_NAME "AuthSession"
#define DEFAULT_TIMEOUT 600
#define DEFAULT_ITERATIONS 600000 /* CouchDB 3.4's [chttpd_auth] iterations */
#define MAX_NAME 1024             /* longer user names are never valid */
#define R_BAD_PASSWORD "Name or password is incorrect."

/* One identification: auth's view of a request (HTTP-free: headers come
 * through the caller's function). */
typedef struct actx {
  store *st;
  dv_config *cfg;
  dv_arena *a;
  const char *repl_token;     /* the replicator's secret ("" or NULL: none) */
  auth_hdr_fn hdr_fn;
  void *hdr_arg;
  auth_user *out;             /* filled on success */
  const char *set_cookie;     /* a Set-Cookie value to send, or NULL */
  const char *why;            /* a refusal's reason */
} actx;

static const char *hdr(actx *r, const char *name) { return r->hdr_fn(r->hdr_arg, name); }

/* A refusal: the code, and its reason kept for the caller. */
static int refuse(actx *r, int rc, const char *why) {
  r->why = why;
  return rc;
}


/* ---- config helpers ---------------------------------------------------------- */

/* A config value copied into the request's arena (NULL when absent). */
static const char *cfg(actx *r, const char *section, const char *key) {
  char *v = config_get(r->cfg, section, key);
  if (!v) return NULL;
  char *c = arena_strndup(r->a, v, strlen(v));
  dv_free(v);
  return c;
}

const char *auth_users_db_name(dv_config *c, char *buf, size_t n) {
  char *v = config_get(c, "chttpd_auth", "authentication_db");
  snprintf(buf, n, "%s", v && *v ? v : "_users");
  dv_free(v);
  return buf;
}

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

static const char *jstr(actx *r, const json_val *o, const char *k) {
  const json_val *v = json_obj_getz(o, k);
  if (!v || v->type != JSON_STRING) return NULL;
  return arena_strndup(r->a, v->u.s, v->len);
}

/* The salt of an [admins] hash: its second comma-separated field. */
static const char *admin_salt(actx *r, const char *h) {
  const char *c1 = h ? strchr(h, ',') : NULL;
  if (!c1) return NULL;
  const char *c2 = strchr(c1 + 1, ',');
  size_t n = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
  return arena_strndup(r->a, c1 + 1, n);
}

/* Find a user: [admins] first, then the authentication db. 0 with *found. */
static int user_lookup(actx *r, const char *name, auser *u, int *found) {
  memset(u, 0, sizeof *u);
  *found = 0;
  if (!*name || strlen(name) > MAX_NAME) return 0;
  u->name = name;
  const char *h = cfg(r, "admins", name);
  if (h) {
    u->admin = 1;
    u->admin_hash = h;
    u->salt = admin_salt(r, h);
    u->roles = arena_alloc(r->a, sizeof *u->roles);
    if (!u->roles) return DV_ENOMEM;
    u->roles[0] = ADMIN_ROLE;
    u->nroles = 1;
    *found = 1;
    return 0;
  }
  char dbn[256];
  auth_users_db_name(r->cfg, dbn, sizeof dbn);
  store_db *db;
  int rc = store_db_open(r->st, dbn, &db);
  if (rc == DV_ENO_DB || rc == DV_EBAD_DB_NAME) return 0;
  if (rc) return rc;
  size_t nl = strlen(name);
  char *id = arena_alloc(r->a, nl + 18);
  if (!id) {
    store_db_close(db);
    return DV_ENOMEM;
  }
  memcpy(id, "org.couchdb.user:", 17);
  memcpy(id + 17, name, nl + 1);
  json_val *doc;
  rc = store_doc_get(db, id, nl + 17, NULL, 0, r->a, &doc);
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
    u->roles = arena_alloc(r->a, (roles->len + 1) * sizeof *u->roles);
    if (!u->roles) return DV_ENOMEM;
    for (size_t i = 0; i < roles->len; i++)
      if (roles->u.items[i]->type == JSON_STRING)
        u->roles[u->nroles++] = arena_strndup(r->a, roles->u.items[i]->u.s, roles->u.items[i]->len);
  }
  *found = 1;
  return 0;
}

static int has_role(const char *const *roles, int n, const char *role) {
  for (int i = 0; i < n; i++)
    if (roles[i] && !strcmp(roles[i], role)) return 1;
  return 0;
}

static void set_user(actx *r, const auser *u, const char *via) {
  r->out->name = u->name;
  r->out->roles = u->roles;
  r->out->nroles = u->nroles;
  r->out->is_admin = u->admin || has_role(u->roles, u->nroles, ADMIN_ROLE);
  r->out->via = via;
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
static void waste_pbkdf2(actx *r, const char *password) {
  uint8_t out[32];
  static const uint8_t salt[] = "divan-no-such-user";
  int wasted = cr_pbkdf2(CR_SHA256, password, strlen(password), salt, sizeof salt - 1,
                         auth_iterations(r->cfg), out, sizeof out);
  (void)wasted; /* only its time matters */
}

/* auth's context for a call that has no request */
static actx env_ctx(const auth_env *e) { return (actx){.st = e->st, .cfg = e->cfg, .a = e->a}; }

int auth_check_password(const auth_env *e, const char *name, const char *password, int *ok, const char ***roles,
                        int *nroles) {
  actx ax = env_ctx(e), *r = &ax;
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

long auth_session_timeout(dv_config *c) {
  long t = (long)config_get_int(c, "chttpd_auth", "timeout", DEFAULT_TIMEOUT);
  return t > 0 ? t : DEFAULT_TIMEOUT;
}

/* AuthSession value for name at time t (seconds), in the arena. */
static const char *cookie_make(actx *r, const char *name, const char *salt, long t) {
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
  char *out = arena_alloc(r->a, cr_b64_encoded_len(rl, 1) + 1);
  if (!out) return NULL;
  cr_b64_encode(raw, rl, 1, out);
  return out;
}

const char *auth_session_cookie(const auth_env *e, const char *name) {
  actx ax = env_ctx(e), *r = &ax;
  auser u;
  int found;
  if (user_lookup(r, name, &u, &found) || !found) return NULL;
  return cookie_make(r, name, u.salt, (long)time(NULL));
}

const char *auth_cookie_header(const auth_env *e, const char *value, long max_age) {
  actx ax = env_ctx(e), *r = &ax;
  char *h;
  int persistent = config_get_bool(r->cfg, "chttpd_auth", "allow_persistent_cookies", 1);
  const char *same_site = cfg(r, "chttpd_auth", "same_site");
  int secure = config_get_bool(r->cfg, "chttpd_auth", "cookie_secure", 0);
  dv_buf b;
  buf_init(&b);
  buf_printf(&b, COOKIE_NAME "=%s; Version=1; Path=/; HttpOnly", value);
  if (max_age == 0) buf_puts(&b, "; Expires=Thu, 01-Jan-1970 00:00:00 GMT; Max-Age=0");
  else if (persistent) buf_printf(&b, "; Max-Age=%ld", max_age);
  if (secure) buf_puts(&b, "; Secure");
  if (same_site && *same_site) buf_printf(&b, "; SameSite=%s", same_site);
  h = buf_error(&b) ? NULL : arena_strndup(r->a, (const char *)b.p, b.len);
  buf_free(&b);
  return h;
}

/* 1: authenticated by cookie; 0: no usable cookie; < 0: refused. */
static int auth_cookie(actx *r) {
  size_t n;
  const char *v = ap_cookie_value(hdr(r, "Cookie"), &n);
  if (!v || !n) return 0;
  ap_session ses;
  int prc = ap_session_parse(r->a, v, n, &ses);
  if (prc == AP_BAD) return refuse(r, DV_EBAD_CREDENTIAL, "Malformed AuthSession cookie. Please clear your cookies.");
  if (prc != AP_OK) return 0;
  const char *name = ses.name;
  const uint8_t *mac = ses.mac;
  size_t macl = ses.mac_len;
  long t = ses.time;
  long now = (long)time(NULL), timeout = auth_session_timeout(r->cfg);
  if (now >= t + timeout) return 0; /* expired */
  auser u;
  int found;
  if (user_lookup(r, name, &u, &found) || !found) return 0;
  const char *expect = cookie_make(r, name, u.salt, t);
  if (!expect) return 0;
  /* compare the HMACs (the cookie's own bytes against ours) */
  size_t en = strlen(expect);
  uint8_t *eraw = arena_alloc(r->a, cr_b64_decoded_max(en) + 1);
  size_t erl;
  if (!eraw || cr_b64_decode(expect, en, 1, eraw, &erl)) return 0;
  size_t ml = cr_hash_len(CR_SHA256);
  if (macl != ml || erl < ml || !cr_ct_eq(mac, eraw + erl - ml, ml)) return 0;
  set_user(r, &u, "cookie");
  if (now - t > timeout / 10) { /* renew once 10 % of its life has passed */
    const char *fresh = cookie_make(r, name, u.salt, now);
    if (fresh) r->set_cookie = auth_cookie_header(&(auth_env){.st = r->st, .cfg = r->cfg, .a = r->a}, fresh, timeout);
  }
  return 1;
}

/* ---- proxy auth ------------------------------------------------------------------ */

/* The optional handlers [chttpd] authentication_handlers turns on (cookie
 * and Basic always run), read once per request. */
unsigned auth_handlers(dv_config *c) {
  char *h = config_get(c, "chttpd", "authentication_handlers");
  unsigned on = 0;
  if (h) on = (strstr(h, "proxy_authentication_handler") ? AUTH_PROXY : 0) |
              (strstr(h, "jwt_authentication_handler") ? AUTH_JWT : 0);
  dv_free(h);
  return on;
}

/* "a,b,,c" into u->roles (empty names skipped), in r's arena; DV_ENOMEM. */
static int split_roles(actx *r, const char *roles, auser *u) {
  size_t cap = 1;
  for (const char *p = roles; *p; p++) cap += *p == ',';
  u->roles = arena_alloc(r->a, cap * sizeof *u->roles);
  if (!u->roles) return DV_ENOMEM;
  for (const char *p = roles; *p;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l) u->roles[u->nroles++] = arena_strndup(r->a, p, l);
    p += l + (e ? 1 : 0);
  }
  return 0;
}

static int auth_proxy(actx *r) {
  const char *hn = cfg(r, "chttpd_auth", "x_auth_username");
  const char *hr = cfg(r, "chttpd_auth", "x_auth_roles");
  const char *ht = cfg(r, "chttpd_auth", "x_auth_token");
  const char *name = hdr(r, hn ? hn : "X-Auth-CouchDB-UserName");
  if (!name || !*name || strlen(name) > MAX_NAME) return 0;
  if (config_get_bool(r->cfg, "chttpd_auth", "proxy_use_secret", 0)) {
    const char *secret = cfg(r, "chttpd_auth", "secret");
    const char *tok = hdr(r, ht ? ht : "X-Auth-CouchDB-Token");
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
  u.name = arena_strndup(r->a, name, strlen(name));
  const char *roles = hdr(r, hr ? hr : "X-Auth-CouchDB-Roles");
  if (roles && split_roles(r, roles, &u)) return 0;
  set_user(r, &u, "proxy");
  return 1;
}

/* The replicator's loopback requests to local databases (src/repl):
 * AUTH_REPL_HEADER = "TOKEN;USER;ROLE,ROLE", TOKEN the server's secret of
 * this run (never leaves the process but over loopback). The request runs
 * as USER with those roles (no USER: anonymous with the roles, which is
 * how the replicator acts as "_admin" for its own bookkeeping). */
static int auth_replicator(actx *r) {
  const char *v = hdr(r, AUTH_REPL_HEADER);
  if (!v) return 0;
  const char *tok = r->repl_token ? r->repl_token : "";
  size_t tl = strlen(tok);
  if (!tl || strlen(v) < tl + 1 || v[tl] != ';' || !cr_ct_eq(v, tok, tl)) return 0;
  const char *name = v + tl + 1, *semi = strchr(name, ';');
  if (!semi) return 0;
  auser u;
  memset(&u, 0, sizeof u);
  u.name = semi > name ? arena_strndup(r->a, name, (size_t)(semi - name)) : NULL;
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
static int jwt_required(actx *r, const char *claims, const char *claim, const char **value) {
  *value = NULL;
  size_t n = strlen(claim);
  for (const char *p = claims; p && *p;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == '{') { /* {iss, "https://…"} */
      const char *q = p + 1;
      while (*q == ' ') q++;
      if (!strncmp(q, claim, n) && (q[n] == ',' || q[n] == ' ')) {
        const char *o = strchr(q, '"'), *c = o ? strchr(o + 1, '"') : NULL;
        if (o && c) *value = arena_strndup(r->a, o + 1, (size_t)(c - o - 1));
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

static int jwt_fail(actx *r, int status, const char *reason) {
  return refuse(r, status == 401 ? DV_EUNAUTHORIZED : DV_EBAD_CREDENTIAL, reason);
}

static int jwt_time_claim(actx *r, const json_val *pl, const char *claims, const char *name, int future) {
  const char *ignored;
  if (!jwt_required(r, claims, name, &ignored)) return 0;
  const json_val *v = json_obj_getz(pl, name);
  char msg[48];
  if (!v) {
    snprintf(msg, sizeof msg, "Missing %s claim", name);
    return jwt_fail(r, 400, arena_strndup(r->a, msg, strlen(msg)));
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
    return jwt_fail(r, 401, arena_strndup(r->a, msg, strlen(msg)));
  }
  return 0;
}

/* 1: authenticated; 0: no Bearer token; -1: refused, written. */
static int auth_jwt(actx *r) {
  const char *h = hdr(r, "Authorization");
  if (!h || strncmp(h, "Bearer ", 7)) return 0;
  ap_jwt jw;
  if (ap_jwt_parse(r->a, h + 7, &jw)) return jwt_fail(r, 400, "Malformed token");
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
  int trc = jwt_time_claim(r, pl, claims, "nbf", 0);
  if (!trc) trc = jwt_time_claim(r, pl, claims, "exp", 1);
  if (trc) return trc;
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
    char *pem = arena_alloc(r->a, kl + 1);
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
    uint8_t *raw = arena_alloc(r->a, cr_b64_decoded_max(kl) + 1);
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
  u.name = arena_strndup(r->a, sub->u.s, sub->len);
  const char *rc_name = cfg(r, "jwt_auth", "roles_claim_name");
  const json_val *roles = json_obj_getz(pl, rc_name && *rc_name ? rc_name : "_couchdb.roles");
  if (roles && roles->type == JSON_ARRAY) {
    u.roles = arena_alloc(r->a, (roles->len + 1) * sizeof *u.roles);
    if (!u.roles) return jwt_fail(r, 400, "Malformed token");
    for (size_t i = 0; i < roles->len; i++)
      if (roles->u.items[i]->type == JSON_STRING)
        u.roles[u.nroles++] = arena_strndup(r->a, roles->u.items[i]->u.s, roles->u.items[i]->len);
  }
  set_user(r, &u, "jwt");
  return 1;
}

/* ---- Basic ------------------------------------------------------------------------ */

static int auth_basic(actx *r) {
  const char *name, *password;
  switch (ap_basic(r->a, hdr(r, "Authorization"), &name, &password)) {
  case AP_OK:
    break;
  case AP_BAD: /* a broken header is no credential: CouchDB 3.4 answers as to anyone */
    return 0;
  case AP_REFUSE:
    return refuse(r, DV_EUNAUTHORIZED, R_BAD_PASSWORD);
  case AP_NOMEM:
    return DV_ENOMEM;
  default:
    return 0; /* another scheme, or no name:password pair: anonymous */
  }
  auser u;
  int found, ok = 0;
  int rc = user_lookup(r, name, &u, &found);
  if (!rc && found) rc = verify(&u, password, &ok);
  if (!rc && !found) waste_pbkdf2(r, password);
  if (rc) return rc;
  if (!ok) return refuse(r, DV_EUNAUTHORIZED, R_BAD_PASSWORD);
  set_user(r, &u, "default");
  return 1;
}

int auth_identify(const auth_env *e, auth_hdr_fn hdr_fn, void *hdr_arg, auth_user *out, const char **set_cookie,
                  const char **why) {
  actx ax = {.st = e->st, .cfg = e->cfg, .a = e->a, .repl_token = e->repl_token, .hdr_fn = hdr_fn,
             .hdr_arg = hdr_arg, .out = out};
  actx *r = &ax;
  memset(out, 0, sizeof *out);
  *set_cookie = *why = NULL;
  int rc = auth_replicator(r);
  if (!rc) {
    rc = auth_cookie(r);
    unsigned on = rc ? 0 : auth_handlers(r->cfg);
    if (!rc && (on & AUTH_PROXY)) rc = auth_proxy(r);
    if (!rc && (on & AUTH_JWT)) rc = auth_jwt(r);
    if (!rc) rc = auth_basic(r);
  }
  *set_cookie = ax.set_cookie;
  *why = ax.why;
  return rc < 0 ? rc : 0;
}

/* ---- rights ---------------------------------------------------------------------------- */

int auth_security(const auth_env *e, store_db *db, json_val **out) {
  json_val *sec;
  int rc = store_db_get_security(db, e->a, &sec);
  if (rc) return rc;
  if (sec->type == JSON_OBJECT && sec->len == 0) {
    char *d = config_get(e->cfg, "couchdb", "default_security");
    int everyone = d && !strcmp(d, "everyone");
    dv_free(d);
    if (!everyone) {
      static const char admin_only[] = "{\"members\":{\"roles\":[\"_admin\"]},\"admins\":{\"roles\":[\"_admin\"]}}";
      rc = json_parse(e->a, admin_only, sizeof admin_only - 1, NULL, &sec, NULL);
      if (rc) return rc;
    }
  }
  *out = sec;
  return 0;
}

/* Is the user named in (or holding a role of) sec[part]? *empty: the part
 * names nobody. */
static int sec_match(const auth_user *u, const json_val *sec, const char *part, int *empty) {
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
      if (u->name && v->len == strlen(u->name) && !memcmp(v->u.s, u->name, v->len)) hit = 1;
    }
  }
  if (roles && roles->type == JSON_ARRAY) {
    for (size_t i = 0; i < roles->len; i++) {
      const json_val *v = roles->u.items[i];
      if (v->type != JSON_STRING) continue;
      *empty = 0;
      for (int k = 0; k < u->nroles; k++)
        if (u->roles[k] && v->len == strlen(u->roles[k]) && !memcmp(v->u.s, u->roles[k], v->len)) hit = 1;
    }
  }
  return hit;
}

int auth_db_access(const auth_user *u, const json_val *sec, int need_admin, int *db_admin, const char **why) {
  *db_admin = 0;
  *why = NULL;
  if (u->is_admin) {
    *db_admin = 1;
    return 0;
  }
  int e1, e2;
  if (sec_match(u, sec, "admins", &e1)) {
    *db_admin = 1;
    return 0;
  }
  if (need_admin) {
    *why = "You are not a server or db admin.";
    return DV_EUNAUTHORIZED;
  }
  /* _users too: admin-only while it has its default security, as CouchDB
   * 3.4; once opened through _security, users.c's rules decide */
  if (sec_match(u, sec, "members", &e2) || e2) return 0; /* named, or a public db */
  if (!u->name) {
    *why = "You are not authorized to access this db.";
    return DV_EUNAUTHORIZED;
  }
  *why = "You are not allowed to access this db.";
  return DV_EFORBIDDEN;
}

int auth_db_admin(const auth_user *u, int db_admin, const char **why) {
  *why = NULL;
  if (u->is_admin || db_admin) return 0;
  *why = "You are not a db or server admin.";
  return u->name ? DV_EFORBIDDEN : DV_EUNAUTHORIZED;
}

int auth_may_write(const auth_user *u, int db_admin, int users_doc, const char *id, size_t n, int att,
                   const char **why) {
  *why = NULL;
  if (att && users_doc && !db_admin && !u->is_admin) {
    *why = "Only admins may do this in the users database.";
    return DV_EFORBIDDEN;
  }
  if (n >= 8 && !memcmp(id, "_design/", 8)) return auth_db_admin(u, db_admin, why);
  return 0;
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

int auth_hash_admins(dv_config *c) {
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
  return rc;
}

int auth_setup(store *st, dv_config *c) {
  int rc = auth_hash_admins(c);
  if (rc) return rc;
  char *secret = config_get(c, "chttpd_auth", "secret");
  if (!secret || !*secret) {
    char s[33];
    cr_random_hex(s, 16);
    rc = config_set(c, "chttpd_auth", "secret", s, config_path(c) != NULL, NULL);
  }
  dv_free(secret);
  if (rc) return rc;
  char dbn[256];
  auth_users_db_name(c, dbn, sizeof dbn);
  rc = store_db_create(st, dbn);
  if (rc == DV_EDB_EXISTS) rc = 0;
  return rc;
}

/* ---- _users writes ------------------------------------------------------------------ */

int auth_users_prepare(const auth_env *e, const auth_user *u, int db_admin, const char *id, size_t n, json_val *doc,
                       json_val **out) {
  *out = doc;
  if (!doc || !id) return 0;
  users_ctx uc = {.name = u->name, .is_admin = u->is_admin || db_admin};
  char *prf = config_get(e->cfg, "chttpd_auth", "pbkdf2_prf");
  int rc = users_before_write(e->a, &uc, id, n, doc, prf && *prf ? prf : "sha256", auth_iterations(e->cfg), out);
  dv_free(prf);
  return rc;
}

void auth_wctx(const auth_user *u, int db_admin, const json_val *sec, dv_arena *a, store_wctx *w, store_user *su) {
  *su = (store_user){.name = u->name, .roles = u->roles, .n_roles = u->nroles > 0 ? (size_t)u->nroles : 0,
                     .is_admin = u->is_admin, .is_db_admin = db_admin};
  *w = (store_wctx){.user = su, .sec = sec, .a = a};
}

/* The users database's validator (store/hooks.h): users.c's rules, in the
 * edit's transaction, on the old document the store reads for it. ctx is
 * the server's configuration. users_validate's refusals are the codes the
 * store takes from a validator, with their reasons: nothing to map. */
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
  rc = users_validate(a, &u, id->u.s, id->len, nd, od, prf && *prf ? prf : "sha256", auth_iterations(c), why);
  dv_free(prf);
  return rc;
}

/* auth's part of the hooks provider: the users database gets users_vdu. */
int auth_hooks_load(dv_config *c, const char *name, size_t len, store_hooks *out) {
  char dbn[256];
  auth_users_db_name(c, dbn, sizeof dbn);
  if (strlen(dbn) == len && !memcmp(dbn, name, len)) {
    if (out->n_validate >= STORE_MAX_VALIDATORS) return DV_EINTERNAL;
    out->validate[out->n_validate].fn = users_vdu;
    out->validate[out->n_validate].ctx = c;
    out->n_validate++;
  }
  return 0;
}
