/* auth.h — who is asking, and whether they may (CouchDB 3.x's chttpd_auth,
 * couch_httpd_auth and the _security checks of couch_db), for the files of
 * src/http.
 *
 * Data flow of one request:
 *
 *   server.c, before routing ─▶ auth_identify(r):
 *     1. cookie  AuthSession = base64url("NAME:HEXTIME:HMAC"),
 *                HMAC = hmac_sha256(secret ++ user's salt, "NAME:HEXTIME");
 *                valid and younger than [chttpd_auth] timeout ─▶ r->user;
 *                less than 90 % of the timeout left ─▶ a fresh cookie goes
 *                out with the answer. Forged, expired or unknown user:
 *                ignored (anonymous); unparseable: 400.
 *     2. proxy   only when [chttpd] authentication_handlers names
 *                proxy_authentication_handler: X-Auth-CouchDB-UserName,
 *                -Roles, and -Token = hex hmac_sha1(secret, name) when
 *                [chttpd_auth] proxy_use_secret is true.
 *     3. Basic   Authorization: Basic b64(name:password) against the
 *                [admins] section (pbkdf2 hashes) or the _users document
 *                org.couchdb.user:NAME; wrong or unknown: 401 "Name or
 *                password is incorrect." (the same for both, so names
 *                cannot be probed). A cache of verified passwords (keyed
 *                by name and stored hash, holding sha256(salt ++ password))
 *                spares PBKDF2 on every request.
 *   route.c ─▶ auth_authorize(r): server endpoints that need a server
 *     admin, PUT/DELETE of databases, _compact/_view_cleanup (db admin).
 *   hreq_open_db ─▶ auth_db_member(r): the database's _security (an empty
 *     one is [couchdb] default_security: admin_only makes it
 *     {"members":{"roles":["_admin"]},"admins":{"roles":["_admin"]}}).
 *   handlers ─▶ auth_db_admin(r): _security PUT, design documents, purge.
 *   _users documents: users.c's rules, applied by the document handlers.
 *
 * Server admins carry the role "_admin"; so does a _users account whose
 * roles an admin set to include it.
 */
#ifndef DV_HTTP_AUTH_H
#define DV_HTTP_AUTH_H

#include "http/http_int.h"
#include "http/users.h"
#include "util/config.h"

/* The config the server runs with (main.c owns it). */
dv_config *hsrv_config(hsrv *s);

/* Start of server life: hash plaintext [admins] values (CouchDB does it on
 * start), make [chttpd_auth] secret if there is none, create the _users
 * database if it is missing. Persisted to the config file. */
int auth_setup(store *st, dv_config *cfg) DV_MUST_CHECK;

/* Fill r->user/roles/is_admin from the request's credentials. On a refusal
 * (bad header, wrong password) the error is written and -1 returned. */
int auth_identify(hreq *r);

/* The router's checks for server endpoints and database-level paths that
 * need an admin; -1 with the error written when refused. */
int auth_authorize(hreq *r);

/* 0 if the requester is a server admin, else 401 "You are not a server
 * admin." written and -1. */
int auth_need_server_admin(hreq *r);

/* After r->db is open: may the requester use the database at all? Sets
 * r->db_admin. 401 for anonymous, 403 for others, written; -1. */
int auth_db_member(hreq *r);

/* The _security object in force (r->db open): the stored one, or
 * [couchdb] default_security's when none was ever set. In r->a. */
int auth_security(hreq *r, json_val **out) DV_MUST_CHECK;

/* A database admin (or server admin)? Else CouchDB's 401/403 "You are not
 * a db or server admin." written and -1. */
int auth_db_admin(hreq *r);

/* The requester's _security-independent view of a database: 1 when the
 * requester is a server admin. */
static inline int auth_is_server_admin(const hreq *r) { return r->is_admin; }

/* Is the database _users (or [chttpd_auth] authentication_db)? Decided
 * once by auth_authorize. */
int auth_is_users_db(hreq *r);

/* /_session: POST (log in: JSON or form), GET (who am I), DELETE. */
void hapi_session(hreq *r);

/* Check a name/password pair (admins, then _users). 0 with *ok and, when
 * it matches, the roles (arena) — for /_session. */
int auth_check_password(hreq *r, const char *name, const char *password, int *ok, const char ***roles,
                        int *nroles);

/* Before a write of doc (as sent) to id: in the users database, CouchDB's
 * before_doc_update (users_before_write: a plaintext password becomes
 * PBKDF2 fields when the rules' first steps let it); elsewhere, and for
 * _local documents, *out = doc. The _users rules themselves run in the
 * store's edit transaction, as the users database's validator (auth_setup
 * registers it): they answer through the edit's rc and why. 0 or a DV_E*
 * code (hashing failed). */
int auth_users_prepare(hreq *r, const char *id, size_t n, json_val *doc, json_val **out) DV_MUST_CHECK;

/* Who writes, for store_update (store/hooks.h): the requester and the
 * database's _security object when the request read it. u is filled and
 * must live as long as w. */
void auth_wctx(hreq *r, store_wctx *w, store_user *u);

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
