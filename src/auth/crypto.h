/* crypto.h — the cryptography CouchDB-style authentication needs: SHA-1/2
 * digests, HMAC, PBKDF2, a CSPRNG, constant-time comparison, hex and
 * base64, and CouchDB 3.4's password hash formats (the [admins] ini values
 * and the credentials of a _users document).
 *
 * The primitives are OpenSSL's libcrypto; nothing here implements a hash or
 * a cipher. Base64 is divan's own because libcrypto's decoder is lenient
 * (it skips whitespace and accepts bad padding) and a Basic-auth header or
 * an AuthSession cookie must be parsed strictly. This file knows nothing of
 * HTTP, users or configuration: the auth code decides which hash to check
 * and what a failure means to the client.
 *
 * Algorithms are the CR_* constants; an out-of-range one is a caller's bug
 * (cr_hash_len gives 0 for it, the int-returning functions DV_EINVAL, and
 * cr_hash and cr_hmac abort). Digests and HMACs cannot fail except when
 * libcrypto cannot allocate its context; that aborts the process too (as
 * libsodium's void functions do) rather than hand back a value that is not
 * the digest. Nothing here keeps
 * state: every function may be called from any thread.
 *
 * Passwords are NUL-terminated: a caller holding a decoded password that
 * contains a NUL byte (Basic auth can carry one) must refuse it before it
 * gets here, or the password would be checked only up to the NUL.
 */
#ifndef DV_CRYPTO_H
#define DV_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#include "util/b64.h"
#include "util/err.h"

enum { CR_SHA1, CR_SHA224, CR_SHA256, CR_SHA384, CR_SHA512 };

#define CR_MAX_HASH_LEN 64          /* bytes of the longest digest (SHA-512) */
#define CR_MAX_ITERATIONS 100000000 /* PBKDF2 iterations accepted, at most */
#define CR_SALT_HEX_LEN 32          /* hex chars of a new salt (couch_uuids:random()) */
#define CR_USER_DEFAULT_ITERATIONS 10000 /* a pbkdf2 _users doc without "iterations" */

/* ---- digests, MAC, KDF ---------------------------------------------------- */

/* The algorithm CouchDB names `name` ("sha" is SHA-1; "sha224", "sha256",
 * "sha384", "sha512"), as in pbkdf2_prf and "-pbkdf2:<name>-"; -1 for any
 * other name or NULL. Names are case-sensitive, as CouchDB's atoms are. */
int cr_prf_by_name(const char *name);
/* CouchDB's name of alg ("sha", "sha256", ...), or NULL for an unknown alg.
 * Static storage. */
const char *cr_prf_name(int alg);
/* Bytes of alg's digest (20, 28, 32, 48, 64), or 0 for an unknown alg. */
size_t cr_hash_len(int alg);

/* out = alg(p[0..n)); out holds cr_hash_len(alg) bytes. p may be NULL when
 * n is 0. alg must be valid. */
void cr_hash(int alg, const void *p, size_t n, uint8_t *out);
/* out = HMAC-alg(key, msg) (RFC 2104); out holds cr_hash_len(alg) bytes.
 * Any key length; key/msg may be NULL when their length is 0. */
void cr_hmac(int alg, const void *key, size_t klen, const void *msg, size_t mlen, uint8_t *out);

/* 1 if n is a PBKDF2 iteration count divan accepts: 1..CR_MAX_ITERATIONS.
 * For checking a configured or stored count before anything is derived. */
int cr_iterations_valid(long n);

/* PBKDF2-HMAC-alg (RFC 8018) of the password pw[0..pwlen) and salt, outlen
 * bytes into out. Returns 0, DV_EINVAL (unknown alg, iterations outside
 * 1..CR_MAX_ITERATIONS, outlen 0, or a password or salt of 2 GB or more),
 * or DV_EINTERNAL if libcrypto fails (out of memory; out's content is then
 * unspecified). Costs `iterations` HMACs per digest-length block of output. */
int cr_pbkdf2(int alg, const char *pw, size_t pwlen, const uint8_t *salt, size_t saltlen,
              long iterations, uint8_t *out, size_t outlen) DV_MUST_CHECK;

/* ---- randomness, comparison, encodings ------------------------------------ */

/* n bytes from libcrypto's CSPRNG (seeded by the OS). 0, or DV_EIO when the
 * generator cannot be seeded; out is then unspecified and must not be used. */
int cr_random(void *out, size_t n) DV_MUST_CHECK;
/* nbytes random bytes as 2*nbytes lower-case hex chars plus a NUL into out
 * (2*nbytes+1 bytes). CouchDB's salts and secrets are 16 bytes: 32 chars.
 * A generator that cannot be seeded aborts the process: predictable salts
 * are worse than no server. */
void cr_random_hex(char *out, size_t nbytes);

/* 1 if a[0..n) == b[0..n), else 0, in time that depends on n only. */
int cr_ct_eq(const void *a, const void *b, size_t n);
/* p[0..n) as 2n lower-case hex chars and a NUL into out (2n+1 bytes). */
void cr_hex(const uint8_t *p, size_t n, char *out);

/* Base64 lives in util/b64.h (the store decodes attachment data too);
 * the cr_ names stay for the auth code. */
#define cr_b64_encoded_len dv_b64_encoded_len
#define cr_b64_encode dv_b64_encode
#define cr_b64_decoded_max dv_b64_decoded_max
#define cr_b64_decode dv_b64_decode

/* ---- CouchDB's password hashes ------------------------------------------- */

/* Verify an RSA PKCS#1 v1.5 signature (JWT's RS256/384/512) of msg with
 * the hash alg, by a public key in PEM ("-----BEGIN PUBLIC KEY-----", as
 * CouchDB's [jwt_keys] rsa:… values). 0 with *ok, or DV_EINVAL for a key
 * that does not parse or is not RSA. */
int cr_rsa_verify(int alg, const char *pem, size_t pem_len, const void *msg, size_t mlen, const uint8_t *sig,
                  size_t slen, int *ok) DV_MUST_CHECK;

/* Hash a server admin's password for the [admins] ini section, as CouchDB
 * 3.4's couch_passwords:hash_admin_password does with password_scheme
 * "pbkdf2":
 *
 *   -pbkdf2:<prf name>-<hex derived key>,<salt>,<iterations>
 *
 * where the salt is 32 fresh random hex chars, used as their ASCII bytes,
 * and the key is as long as prf's digest. *out is dv_malloc'd (the caller
 * dv_frees it) and written only on success. Returns 0, DV_EINVAL (unknown
 * prf, iterations not cr_iterations_valid, NULL password), DV_EIO (no
 * randomness), DV_ENOMEM or DV_EINTERNAL. */
int cr_admin_hash(const char *password, int prf, long iterations, char **out) DV_MUST_CHECK;

/* 1 if an [admins] value is already a hash in one of the forms CouchDB's
 * get_unhashed_admins leaves alone: it starts with "-hashed-", "-pbkdf2-"
 * or "-pbkdf2:<sha|sha224|sha256|sha384|sha512>-". Anything else is a
 * plaintext password, which the server hashes on start as CouchDB does.
 * Only the prefix is looked at: a hashed-looking value may still be
 * malformed (cr_admin_verify says so). NULL is not hashed. */
int cr_admin_is_hashed(const char *stored);

/* Check password against an [admins] value. The forms:
 *
 *   -pbkdf2:<prf>-<hex key>,<salt>,<iterations>   (CouchDB 3.4)
 *   -pbkdf2-<hex key>,<salt>,<iterations>         (PBKDF2-HMAC-SHA1)
 *   -hashed-<hex sha1(password ++ salt)>,<salt>   (the legacy "simple")
 *
 * The key is lower-case hex exactly twice the PRF's digest length (what
 * CouchDB writes; it compares the hex text, so nothing else could match);
 * the salt is any non-empty text without ',' used as its bytes;
 * iterations is decimal digits, 1..CR_MAX_ITERATIONS. The key comparison
 * takes constant time.
 *
 * Returns 0 with *ok set (1 on a match), or DV_EINVAL for a value that is
 * none of the forms (a wrong prefix, a plaintext password, missing or
 * extra fields, bad hex, a bad count) — never a match, and *ok untouched
 * — or DV_ENOMEM. When salt_out is not NULL and the value parses, it gets
 * a dv_malloc'd copy of the salt whatever *ok is (cookie authentication
 * mixes it into its HMAC key); the caller dv_frees it. Cost: the stored
 * iteration count. */
int cr_admin_verify(const char *stored, const char *password, int *ok,
                    char **salt_out) DV_MUST_CHECK;

/* Check password against a _users document's credentials, as CouchDB
 * 3.4's couch_httpd_auth:authenticate does. The caller passes the
 * document's members as it finds them (NULL for a missing string):
 *
 *   scheme        password_scheme; NULL means "simple", CouchDB's default
 *   prf           pbkdf2_prf; NULL means "sha" (SHA-1)
 *   derived_key   pbkdf2's lower-case hex key
 *   salt          salt; NULL means ""
 *   iterations    iterations; pass CR_USER_DEFAULT_ITERATIONS when the
 *                 document has none, as CouchDB does
 *   password_sha  "simple"'s hex sha1(password ++ salt)
 *
 * "pbkdf2" derives a key as long as the PRF's digest from the password and
 * salt and compares its hex with derived_key; "simple" compares
 * hex(sha1(password ++ salt)) with password_sha. Comparisons take constant
 * time for an expected value of the right length; a missing or
 * differently sized one just does not match, as in CouchDB.
 *
 * Returns 0 with *ok set, or DV_EINVAL (and *ok untouched) for an unknown
 * scheme or prf, iterations not cr_iterations_valid under "pbkdf2", or a
 * NULL password; DV_EINTERNAL if libcrypto fails. */
int cr_user_verify(const char *scheme, const char *prf, const char *derived_key, const char *salt,
                   long iterations, const char *password_sha, const char *password,
                   int *ok) DV_MUST_CHECK;

/* The credentials a _users document gets when a plaintext "password" is
 * written (CouchDB's couch_users_db:save_doc): a fresh salt of 32 random
 * hex chars into salt (NUL-terminated) and the hex PBKDF2-HMAC-prf key of
 * the password and that salt, as long as prf's digest, into
 * derived_key_hex (NUL-terminated; at most 128 chars). The document also
 * gets password_scheme "pbkdf2", pbkdf2_prf cr_prf_name(prf) and
 * iterations; that is the caller's part. Outputs are written only on
 * success. Returns 0, DV_EINVAL (unknown prf, bad iterations, NULL
 * password), DV_EIO (no randomness) or DV_EINTERNAL. */
int cr_user_hash(const char *password, int prf, long iterations, char derived_key_hex[129],
                 char salt[33]) DV_MUST_CHECK;

#endif
