/* auth.h — identities and rights (CouchDB 3.x's chttpd_auth,
 * couch_httpd_auth and the _security checks of couch_db), with no HTTP in
 * them: api/authn.c hands in a request's headers through a function and
 * turns the answers into responses.
 *
 * Data flow of one request:
 *
 *   api_identify ─▶ auth_identify(headers):
 *     0. replicator  AUTH_REPL_HEADER = "TOKEN;USER;ROLE,ROLE" with this
 *                run's secret: the replicator's loopback requests.
 *     1. cookie  AuthSession = base64url("NAME:HEXTIME:HMAC"),
 *                HMAC = hmac_sha256(secret ++ user's salt, "NAME:HEXTIME");
 *                valid and younger than [chttpd_auth] timeout ─▶ the user;
 *                less than 90 % of the timeout left ─▶ a fresh cookie
 *                (*set_cookie). Forged, expired or unknown user: ignored
 *                (anonymous); unparseable: DV_EBAD_CREDENTIAL.
 *     2. proxy   only when [chttpd] authentication_handlers names
 *                proxy_authentication_handler: X-Auth-CouchDB-UserName,
 *                -Roles, and -Token = hex hmac_sha1(secret, name) when
 *                [chttpd_auth] proxy_use_secret is true.
 *     3. JWT     when authentication_handlers names
 *                jwt_authentication_handler (see auth.c).
 *     4. Basic   Authorization: Basic b64(name:password) against the
 *                [admins] section (pbkdf2 hashes) or the _users document
 *                org.couchdb.user:NAME; wrong or unknown: DV_EUNAUTHORIZED
 *                "Name or password is incorrect." (the same for both, so
 *                names cannot be probed). A cache of verified passwords
 *                (keyed by name and stored hash, holding sha256(salt ++
 *                password)) spares PBKDF2 on every request.
 *   api_authorize ─▶ the route's flags: server admin, or the database's
 *     _security (auth_security: an empty one is [couchdb]
 *     default_security's; admin_only makes it
 *     {"members":{"roles":["_admin"]},"admins":{"roles":["_admin"]}})
 *     checked by auth_db_access.
 *   every write path ─▶ auth_may_write (design documents need a db admin,
 *     attachments of _users documents an admin); then, in the store's
 *     edit transaction, the users database's validator (users.c's rules,
 *     given to the store by auth_hooks_load through main.c's provider).
 *
 * Server admins carry the role "_admin"; so does a _users account whose
 * roles an admin set to include it. Refusals come back as err.h codes
 * (DV_EUNAUTHORIZED 401, DV_EFORBIDDEN 403, DV_EBAD_CREDENTIAL 400) with
 * CouchDB's reason in *why.
 */
#ifndef DV_AUTH_H
#define DV_AUTH_H

#include <stddef.h>

#include "auth/users.h"
#include "json/json.h"
#include "store/store.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/err.h"

/* The header of the replicator's loopback requests. */
#define AUTH_REPL_HEADER "X-Divan-Replicator"

/* Who asks. */
typedef struct auth_user {
  const char *name;       /* NULL = anonymous */
  const char **roles;     /* in the caller's arena */
  int nroles;
  int is_admin;           /* a server admin (role _admin) */
  const char *via;        /* "cookie", "default" (Basic), "proxy", "jwt", "replicator", or NULL */
} auth_user;

/* What auth works with: the store, the configuration, an arena for what it
 * returns (names, roles, reasons, cookies). */
typedef struct auth_env {
  store *st;
  dv_config *cfg;
  dv_arena *a;
  const char *repl_token; /* the replicator's secret of this run, or NULL */
} auth_env;

/* A request header by name (case-insensitive), or NULL. */
typedef const char *(*auth_hdr_fn)(void *arg, const char *name);

/* Start of server life: hash plaintext [admins] values (CouchDB does it on
 * start), make [chttpd_auth] secret if there is none, create the _users
 * database if it is missing. Persisted as config_set persists: to the
 * file, and to the store's cluster-wide settings once main.c attached them
 * (store/clustercfg.h). The users database's validator is not registered
 * here: main.c's hooks provider asks auth_hooks_load. */
int auth_setup(store *st, dv_config *cfg) DV_MUST_CHECK;
/* auth_setup's first step alone: hash the plaintext [admins] values in
 * place (main.c runs it before the file seeds the cluster-wide settings,
 * so no plaintext password reaches the store). */
int auth_hash_admins(dv_config *cfg) DV_MUST_CHECK;

/* auth's part of the store's hooks provider (store/hooks.h): for the users
 * database ([couch_httpd_auth] authentication_db), append users.c's rules
 * to out->validate. Other databases get nothing. 0, or DV_EINTERNAL when
 * the table is full. cfg must outlive the store's use of the table. */
int auth_hooks_load(dv_config *cfg, const char *name, size_t len, store_hooks *out) DV_MUST_CHECK;

/* Who the credentials name: 0 with *out (anonymous when none), *set_cookie
 * a Set-Cookie value to send (a renewed session) or NULL; or a refusal
 * (DV_EBAD_CREDENTIAL, DV_EUNAUTHORIZED with *why) or DV_ENOMEM/store
 * errors. */
int auth_identify(const auth_env *e, auth_hdr_fn hdr, void *hdr_arg, auth_user *out, const char **set_cookie,
                  const char **why);

/* Check a name/password pair (admins, then _users). 0 with *ok and, when
 * it matches, the roles (e->a) — for /_session. */
int auth_check_password(const auth_env *e, const char *name, const char *password, int *ok, const char ***roles,
                        int *nroles);
/* A new AuthSession value for name (in e->a), or NULL (no secret). */
const char *auth_session_cookie(const auth_env *e, const char *name);
/* The Set-Cookie header value carrying value (max_age 0: the cookie's
 * removal), as [chttpd_auth] asks; in e->a, or NULL. */
const char *auth_cookie_header(const auth_env *e, const char *value, long max_age);
/* [chttpd_auth] timeout, seconds. */
long auth_session_timeout(dv_config *c);
/* The optional handlers [chttpd] authentication_handlers turns on. */
enum { AUTH_PROXY = 1, AUTH_JWT = 2 };
unsigned auth_handlers(dv_config *c);
/* The name of the users database ([chttpd_auth] authentication_db). */
const char *auth_users_db_name(dv_config *c, char *buf, size_t n);

/* The _security object in force for db: the stored one, or [couchdb]
 * default_security's when none was ever set. In e->a. */
int auth_security(const auth_env *e, store_db *db, json_val **out) DV_MUST_CHECK;
/* May u use a database with this _security at all (need_admin: as its
 * admin)? 0 with *db_admin; or DV_EUNAUTHORIZED / DV_EFORBIDDEN with *why. */
int auth_db_access(const auth_user *u, const json_val *sec, int need_admin, int *db_admin, const char **why);
/* A database admin (or server admin)? 0, or DV_EUNAUTHORIZED (anonymous) /
 * DV_EFORBIDDEN with *why "You are not a db or server admin.". */
int auth_db_admin(const auth_user *u, int db_admin, const char **why);
/* May u write document id (att: one of its attachments) in a database where
 * it is db_admin (users_doc: a document of the users database, under
 * users.c's rules)? The one rule every write path asks. 0, or the refusal
 * with *why. */
int auth_may_write(const auth_user *u, int db_admin, int users_doc, const char *id, size_t n, int att,
                   const char **why);

/* Before a write of doc (as sent) to id in the users database: CouchDB's
 * before_doc_update (users_before_write: a plaintext password becomes
 * PBKDF2 fields when the rules' first steps let it); *out = doc otherwise.
 * 0 or a DV_E* code (hashing failed). */
int auth_users_prepare(const auth_env *e, const auth_user *u, int db_admin, const char *id, size_t n, json_val *doc,
                       json_val **out) DV_MUST_CHECK;
/* Who writes, for store_update (store/hooks.h): u and the database's
 * _security object (may be NULL). su is filled and must live as long as w. */
void auth_wctx(const auth_user *u, int db_admin, const json_val *sec, dv_arena *a, store_wctx *w, store_user *su);

/* PBKDF2 iterations for new hashes: [chttpd_auth] iterations (600,000). */
long auth_iterations(dv_config *c);
/* A server admin's password hashed for [admins] with the configured PRF
 * ([chttpd_auth] pbkdf2_prf, sha256) and iterations; *out dv_malloc'd.
 * Every admin hash divan writes (start-up, DIVAN_ADMIN, the first admin,
 * /_config) comes from here. */
int auth_admin_hash(dv_config *c, const char *password, char **out) DV_MUST_CHECK;
/* Forget cached verifications (a _users document or [admins] changed). */
void auth_cache_clear(void);

#endif
