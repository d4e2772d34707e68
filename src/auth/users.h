/* users.h — the native rules of CouchDB's `_users` database: who may write
 * and read which account document, and the hashing of a plaintext
 * "password" on write.
 *
 * CouchDB enforces these in two places, and divan reproduces both, in the
 * same order and with the same error reasons:
 *
 *   couch_users_db.erl   before_doc_update (who may write the document at
 *                        all; the "password" -> pbkdf2 credentials rewrite)
 *                        and after_doc_read (what a reader may see);
 *   _design/_auth        the validate_doc_update function every _users
 *                        database is born with (couch_js_functions.hrl,
 *                        AUTH_DB_DOC_VALIDATE_FUNCTION), written here in C
 *                        with JavaScript's semantics (truthiness, ==, ===,
 *                        string conversion) where a malformed document
 *                        would tell them apart.
 *
 * A write goes through, in CouchDB's order:
 *   1. access    a server/db admin, the owner (the name after
 *                "org.couchdb.user:" in the id equals the requester's), or
 *                an anonymous requester (signup) pass; anyone else gets
 *                404 not_found "missing" (before_doc_update's throw(not_found));
 *   2. password  a non-null "password" is replaced by password_scheme,
 *                pbkdf2_prf, salt, iterations and derived_key (salt kept
 *                when "preserve_salt" is true); a password that is not a
 *                string is 403 "Password value of '…' is invalid." with the
 *                value printed as Erlang's ~p would;
 *   3. validate  design documents: admins only (couch_db's check_is_admin);
 *                other documents: the _auth rules on the rewritten document.
 * The expensive PBKDF2 runs last, once everything else has passed: the
 * rules only look at the types of the fields it fills, so the answer is the
 * same as CouchDB's, without hashing for a write that is refused anyway.
 *
 * _local documents have none of this (CouchDB skips both hooks for them):
 * both checks pass them through unchanged.
 *
 * Not here: the [chttpd_auth] password_regexp requirements (no regexp
 * engine yet) and the legacy "simple" password_scheme. The caller reads the
 * configuration (pbkdf2_prf, iterations, public_fields) and passes it in.
 */
#ifndef DV_HTTP_USERS_H
#define DV_HTTP_USERS_H

#include <stddef.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/err.h"

#define USERS_ID_PREFIX "org.couchdb.user:" /* every account document's id starts so */

/* Who is asking. */
typedef struct users_ctx {
  const char *name; /* the requester's name (NUL-terminated), NULL when anonymous */
  int is_admin;     /* server admin or _users db admin */
} users_ctx;

/* users_check_write/users_check_read return 0, or a DV_E* code of
 * util/err.h with *why its reason (static, or in the arena passed in), so
 * a caller answers hres_errw(r, rc, why) and the code's row gives the
 * status and CouchDB's error name:
 *   a refusal (the client's doing), with CouchDB's reason:
 *     DV_ENOT_FOUND      404 not_found
 *     DV_EFORBIDDEN      403 forbidden
 *     DV_EUNAUTHORIZED   401 unauthorized
 *     DV_EVDU_TYPEERROR  500 TypeError       the _auth function crashed
 *     DV_EVDU_UNKNOWN    500 unknown_error   couch_passwords crashed
 *   which are the refusals store/hooks.h takes from a validator; or
 *   a failure of the server, with the code's own reason: DV_ENOMEM; DV_EIO
 *     when no randomness for a salt; DV_EINTERNAL when libcrypto fails;
 *     DV_EINVAL when doc is not an object.
 * *why is NULL after a success. */

/* Check one write of the document `id` (id_len bytes, as in the URL or the
 * doc's _id) in the users database.
 *
 *   doc    the new document as the client sent it (an object; may carry
 *          "_deleted": true);
 *   old    the current winning document body (with _id, _rev, ...), or NULL
 *          when the document does not exist or is deleted;
 *   prf_name, iterations   [chttpd_auth] pbkdf2_prf (NULL: "sha256") and
 *          iterations for a new password.
 *
 * On success *out is doc itself, or, when doc has a plaintext "password"
 * that is not null, a new object in arena a: doc's members ("_" members
 * first) without password, password_sha, preserve_salt and the old
 * credentials, plus password_scheme "pbkdf2", pbkdf2_prf, salt (32 hex
 * chars), iterations and derived_key (hex), in CouchDB's order. The new
 * object shares doc's other values. *out is written only on success.
 *
 * Refusals (code, reason), in the order they are checked:
 *   DV_ENOT_FOUND     "missing"     a non-admin writing another user's doc
 *                                   (or any non-account id, design docs too)
 *   DV_EFORBIDDEN     "Server cannot hash passwords at this time."
 *                                   prf_name or iterations unusable
 *   DV_EFORBIDDEN     "Password value of '<~p>' is invalid."
 *   DV_EFORBIDDEN     "Salt value of '<~p>' is invalid."   (preserve_salt)
 *   DV_EVDU_UNKNOWN   "function_clause"   neither password nor salt usable
 *   DV_EUNAUTHORIZED  "You are not a db or server admin."  anonymous, design doc
 *   DV_EFORBIDDEN     the _auth rules' reasons (users.c lists them)
 *   DV_EVDU_TYPEERROR where the _auth function itself crashes on a malformed
 *                     document (a name that is a number, a non-admin deleting
 *                     a document that does not exist)
 */
int users_check_write(dv_arena *a, const users_ctx *u, const char *id, size_t id_len,
                      const json_val *doc, const json_val *old, const char *prf_name,
                      long iterations, json_val **out, const char **why) DV_MUST_CHECK;

/* The same two halves apart, for a write through the store's hooks
 * (store/hooks.h): users_validate is the store's validator of the users
 * database — every check above, in order, with the old document the store
 * hands over, and no hashing (0, or a code with *why as above): its
 * refusals are those store/hooks.h's validate takes, so it can answer as
 * the store's validator unchanged.
 * users_before_write is CouchDB's before_doc_update, run before the write
 * (PBKDF2 inside a transaction would hold it open for a second): when the
 * access and password steps pass, a plaintext password becomes credentials
 * as users_check_write makes them (*out a new object in a); in every other
 * case *out = doc, unchanged, and users_validate refuses it later with the
 * same answer users_check_write gives. The rules look only at the types of
 * the credential fields, so validating the rewritten document answers as
 * validating the original would. Returns 0 or a DV_E* code (hashing
 * failed). */
int users_validate(dv_arena *a, const users_ctx *u, const char *id, size_t id_len, const json_val *doc,
                   const json_val *old, const char *prf_name, long iterations, const char **why) DV_MUST_CHECK;
int users_before_write(dv_arena *a, const users_ctx *u, const char *id, size_t id_len, const json_val *doc,
                       const char *prf_name, long iterations, json_val **out) DV_MUST_CHECK;

/* What a requester may see of the users-database document `id` (CouchDB's
 * after_doc_read). An admin, or the account's owner, sees doc as it is:
 * *out = doc. Anyone else sees only the members named in public_fields
 * ([chttpd_auth] public_fields: names separated by commas with optional
 * blanks around them; NULL is ""), plus doc's "_" members (_id, _rev, ...):
 * *out is then a new object in arena a. When no public member remains the
 * answer is DV_ENOT_FOUND "missing". Design documents: DV_EFORBIDDEN "Only
 * administrators can view design docs in the users database." for
 * non-admins. Returns as users_check_write. */
int users_check_read(dv_arena *a, const users_ctx *u, const char *id, size_t id_len,
                     const json_val *doc, const char *public_fields, json_val **out,
                     const char **why) DV_MUST_CHECK;

/* The user name in an id "org.couchdb.user:NAME": a pointer into id and its
 * length in *name_len (0 for "org.couchdb.user:"), or NULL (and *name_len
 * untouched) for any other id. */
const char *users_name_of(const char *id, size_t id_len, size_t *name_len);

#endif
