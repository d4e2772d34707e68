/* crypto.c — digests, HMAC, PBKDF2, randomness and CouchDB's password
 * hash formats over OpenSSL's libcrypto; strict base64 of our own (crypto.h).
 *
 * Everything goes through libcrypto's EVP layer and its one-shot HMAC and
 * PKCS5_PBKDF2_HMAC (none deprecated in OpenSSL 3), so a FIPS provider or a
 * faster implementation is picked up without a change here. libcrypto
 * allocates inside those calls and does not use dv_malloc: allocation
 * failure injection (dv_alloc_fail_after) reaches only the strings this
 * file hands back.
 *
 * The [admins] value layouts, as CouchDB 3.4 writes and reads them
 * (couch_passwords.erl, couch_auth_cache.erl):
 *
 *   prefix                 fields after it, ','-separated
 *   "-pbkdf2:<prf>-"       hex key (2 * digest length), salt, iterations
 *   "-pbkdf2-"             the same with prf sha (SHA-1)
 *   "-hashed-"             hex sha1(password ++ salt), salt
 *
 * Derived keys are compared as the hex text CouchDB stores, in constant
 * time; expected values of the wrong length fail before any comparison,
 * which leaks only that length (public: it is the PRF's).
 */
#include "auth/crypto.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "util/alloc.h"
#include "util/log.h"

/* ---- algorithms ----------------------------------------------------------- */

static const struct {
  const char *name; /* CouchDB's (Erlang crypto's) name */
  size_t len;       /* digest bytes */
} algs[] = {
    [CR_SHA1] = {"sha", 20},       [CR_SHA224] = {"sha224", 28}, [CR_SHA256] = {"sha256", 32},
    [CR_SHA384] = {"sha384", 48}, [CR_SHA512] = {"sha512", 64},
};
#define NALGS ((int)(sizeof algs / sizeof algs[0]))

static int alg_ok(int alg) { return alg >= 0 && alg < NALGS; }

static const EVP_MD *md_of(int alg) {
  switch (alg) {
  case CR_SHA1: return EVP_sha1();
  case CR_SHA224: return EVP_sha224();
  case CR_SHA256: return EVP_sha256();
  case CR_SHA384: return EVP_sha384();
  case CR_SHA512: return EVP_sha512();
  }
  return NULL;
}

/* libcrypto could not allocate a digest context: there is no digest to
 * return, and a void function has no other way out. */
static void die(const char *what) {
  log_critical("libcrypto: %s failed", what);
  abort();
}

int cr_prf_by_name(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < NALGS; i++)
    if (!strcmp(name, algs[i].name)) return i;
  return -1;
}

const char *cr_prf_name(int alg) { return alg_ok(alg) ? algs[alg].name : NULL; }

size_t cr_hash_len(int alg) { return alg_ok(alg) ? algs[alg].len : 0; }

/* out = alg(a ++ b), without building the concatenation. */
static void hash2(int alg, const void *a, size_t an, const void *b, size_t bn, uint8_t *out) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  if (!c) die("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(c, md_of(alg), NULL) != 1 || EVP_DigestUpdate(c, a ? a : "", an) != 1 ||
      EVP_DigestUpdate(c, b ? b : "", bn) != 1 || EVP_DigestFinal_ex(c, out, NULL) != 1)
    die("digest");
  EVP_MD_CTX_free(c);
}

void cr_hash(int alg, const void *p, size_t n, uint8_t *out) {
  if (!alg_ok(alg)) die("cr_hash of an unknown algorithm");
  hash2(alg, p, n, NULL, 0, out);
}

void cr_hmac(int alg, const void *key, size_t klen, const void *msg, size_t mlen, uint8_t *out) {
  if (!alg_ok(alg)) die("cr_hmac of an unknown algorithm");
  uint8_t kh[CR_MAX_HASH_LEN];
  if (klen > INT_MAX) { /* HMAC hashes a key longer than a block anyway */
    cr_hash(alg, key, klen, kh);
    key = kh;
    klen = algs[alg].len;
  }
  if (!HMAC(md_of(alg), key ? key : "", (int)klen, msg ? msg : (const void *)"", mlen, out, NULL))
    die("HMAC");
  OPENSSL_cleanse(kh, sizeof kh);
}

int cr_iterations_valid(long n) { return n >= 1 && n <= CR_MAX_ITERATIONS; }

int cr_pbkdf2(int alg, const char *pw, size_t pwlen, const uint8_t *salt, size_t saltlen,
              long iterations, uint8_t *out, size_t outlen) {
  if (!alg_ok(alg) || !cr_iterations_valid(iterations) || outlen == 0 || outlen > INT_MAX ||
      pwlen > INT_MAX || saltlen > INT_MAX)
    return DV_EINVAL;
  if (PKCS5_PBKDF2_HMAC(pw ? pw : "", (int)pwlen, salt ? salt : (const uint8_t *)"",
                        (int)saltlen, (int)iterations, md_of(alg), (int)outlen, out) != 1)
    return DV_EINTERNAL;
  return 0;
}

/* ---- randomness, comparison, hex ------------------------------------------ */

int cr_random(void *out, size_t n) {
  uint8_t *p = out;
  while (n) {
    int k = n > INT_MAX ? INT_MAX : (int)n;
    if (RAND_bytes(p, k) != 1) return DV_EIO;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

void cr_random_hex(char *out, size_t nbytes) {
  uint8_t buf[64];
  char *o = out;
  *o = 0;
  while (nbytes) {
    size_t k = nbytes < sizeof buf ? nbytes : sizeof buf;
    if (cr_random(buf, k)) die("RAND_bytes");
    cr_hex(buf, k, o);
    o += 2 * k;
    nbytes -= k;
  }
  OPENSSL_cleanse(buf, sizeof buf);
}

int cr_ct_eq(const void *a, const void *b, size_t n) { return n == 0 || CRYPTO_memcmp(a, b, n) == 0; }

void cr_hex(const uint8_t *p, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * n] = 0;
}

/* ---- CouchDB's password hashes ------------------------------------------- */

/* hex(derived key) of password and salt under alg, into hex (2 * digest
 * length + 1 bytes). */
static int derive_hex(int alg, const char *password, const char *salt, size_t saltlen,
                      long iterations, char *hex) {
  uint8_t dk[CR_MAX_HASH_LEN];
  int rc = cr_pbkdf2(alg, password, strlen(password), (const uint8_t *)salt, saltlen, iterations,
                     dk, algs[alg].len);
  if (!rc) cr_hex(dk, algs[alg].len, hex);
  OPENSSL_cleanse(dk, sizeof dk);
  return rc;
}

/* hex(sha1(password ++ salt)): the "simple" scheme. */
static void simple_hex(const char *password, const char *salt, size_t saltlen, char *hex) {
  uint8_t d[20];
  hash2(CR_SHA1, password, strlen(password), salt, saltlen, d);
  cr_hex(d, sizeof d, hex);
}

/* 1 if the expected hex text equals the computed one. Constant time over
 * the (public) length; a missing or differently sized expected value is
 * simply not equal, as couch_passwords:verify has it. */
static int hex_matches(const char *expected, const char *computed) {
  size_t n = strlen(computed);
  if (!expected || strlen(expected) != n) return 0;
  return cr_ct_eq(expected, computed, n);
}

/* A fresh salt (CR_SALT_HEX_LEN random hex chars, used as its ASCII
 * bytes as CouchDB does) and the hex PBKDF2 key of password with it: what
 * both an [admins] hash and a _users document's credentials are made of. */
static int salted_key(const char *password, int prf, long iterations, char salt[CR_SALT_HEX_LEN + 1],
                      char key[2 * CR_MAX_HASH_LEN + 1]) {
  if (!password || !alg_ok(prf) || !cr_iterations_valid(iterations)) return DV_EINVAL;
  uint8_t rnd[CR_SALT_HEX_LEN / 2];
  int rc = cr_random(rnd, sizeof rnd);
  if (rc) return rc;
  cr_hex(rnd, sizeof rnd, salt);
  return derive_hex(prf, password, salt, CR_SALT_HEX_LEN, iterations, key);
}

int cr_admin_hash(const char *password, int prf, long iterations, char **out) {
  char salt[CR_SALT_HEX_LEN + 1], key[2 * CR_MAX_HASH_LEN + 1];
  int rc = salted_key(password, prf, iterations, salt, key);
  if (rc) goto done;
  /* "-pbkdf2:" name "-" key "," salt "," iterations (at most 9 digits) */
  size_t cap = 8 + strlen(algs[prf].name) + 1 + strlen(key) + 1 + CR_SALT_HEX_LEN + 1 + 20 + 1;
  char *s = dv_malloc(cap);
  if (!s) {
    rc = DV_ENOMEM;
    goto done;
  }
  snprintf(s, cap, "-pbkdf2:%s-%s,%s,%ld", algs[prf].name, key, salt, iterations);
  *out = s;
done:
  OPENSSL_cleanse(key, sizeof key);
  return rc;
}

/* The "-pbkdf2:<name>-" prefix of s: its algorithm and the prefix length
 * in *plen, or -1. */
static int pbkdf2_prefix(const char *s, size_t *plen) {
  static const char pre[] = "-pbkdf2:";
  if (strncmp(s, pre, sizeof pre - 1)) return -1;
  const char *name = s + sizeof pre - 1;
  const char *dash = strchr(name, '-');
  char buf[8];
  if (!dash || (size_t)(dash - name) >= sizeof buf) return -1;
  memcpy(buf, name, (size_t)(dash - name));
  buf[dash - name] = 0;
  int alg = cr_prf_by_name(buf);
  if (alg >= 0) *plen = (size_t)(dash + 1 - s);
  return alg;
}

int cr_admin_is_hashed(const char *stored) {
  size_t plen;
  if (!stored) return 0;
  return !strncmp(stored, "-hashed-", 8) || !strncmp(stored, "-pbkdf2-", 8) ||
         pbkdf2_prefix(stored, &plen) >= 0;
}

/* A parsed [admins] value; pointers into the stored string. */
typedef struct admin_val {
  int simple;       /* 1 for "-hashed-", 0 for a pbkdf2 form */
  int alg;          /* the PRF (CR_SHA1 for "-hashed-" and "-pbkdf2-") */
  const char *key;  /* lower-case hex, 2 * digest length chars */
  const char *salt; /* the salt's first char */
  size_t saltlen;   /* its length, > 0 */
  long iterations;  /* pbkdf2 only: 1..CR_MAX_ITERATIONS */
} admin_val;

static int parse_admin(const char *s, admin_val *v) {
  size_t plen;
  memset(v, 0, sizeof *v);
  if (!strncmp(s, "-hashed-", 8)) {
    v->simple = 1, v->alg = CR_SHA1, plen = 8;
  } else if (!strncmp(s, "-pbkdf2-", 8)) {
    v->alg = CR_SHA1, plen = 8;
  } else if ((v->alg = pbkdf2_prefix(s, &plen)) < 0) {
    return DV_EINVAL;
  }
  s += plen;
  /* the key */
  size_t klen = 2 * algs[v->alg].len;
  for (size_t i = 0; i < klen; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return DV_EINVAL;
  if (s[klen] != ',') return DV_EINVAL;
  v->key = s;
  s += klen + 1;
  /* the salt */
  const char *comma = strchr(s, ',');
  v->salt = s;
  v->saltlen = comma ? (size_t)(comma - s) : strlen(s);
  if (!v->saltlen) return DV_EINVAL;
  if (v->simple) return comma ? DV_EINVAL : 0;
  if (!comma) return DV_EINVAL;
  /* the iterations: digits only, no sign, no spaces */
  s = comma + 1;
  if (!*s) return DV_EINVAL;
  long n = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return DV_EINVAL;
    n = n * 10 + (*s - '0');
    if (n > CR_MAX_ITERATIONS) return DV_EINVAL;
  }
  if (!cr_iterations_valid(n)) return DV_EINVAL;
  v->iterations = n;
  return 0;
}

int cr_admin_verify(const char *stored, const char *password, int *ok, char **salt_out) {
  admin_val v;
  char hex[2 * CR_MAX_HASH_LEN + 1];
  char *salt = NULL;
  if (!stored || !password) return DV_EINVAL;
  int rc = parse_admin(stored, &v);
  if (rc) return rc;
  if (salt_out && !(salt = dv_strndup(v.salt, v.saltlen))) return DV_ENOMEM;
  if (v.simple) {
    simple_hex(password, v.salt, v.saltlen, hex);
  } else if ((rc = derive_hex(v.alg, password, v.salt, v.saltlen, v.iterations, hex))) {
    dv_free(salt);
    return rc;
  }
  *ok = cr_ct_eq(hex, v.key, strlen(hex));
  if (salt_out) *salt_out = salt;
  OPENSSL_cleanse(hex, sizeof hex);
  return 0;
}

int cr_user_verify(const char *scheme, const char *prf, const char *derived_key, const char *salt,
                   long iterations, const char *password_sha, const char *password, int *ok) {
  char hex[2 * CR_MAX_HASH_LEN + 1];
  if (!password) return DV_EINVAL;
  if (!salt) salt = "";
  if (!scheme || !strcmp(scheme, "simple")) {
    simple_hex(password, salt, strlen(salt), hex);
    *ok = hex_matches(password_sha, hex);
  } else if (!strcmp(scheme, "pbkdf2")) {
    int alg = prf ? cr_prf_by_name(prf) : CR_SHA1;
    if (alg < 0 || !cr_iterations_valid(iterations)) return DV_EINVAL;
    int rc = derive_hex(alg, password, salt, strlen(salt), iterations, hex);
    if (rc) return rc;
    *ok = hex_matches(derived_key, hex);
  } else {
    return DV_EINVAL;
  }
  OPENSSL_cleanse(hex, sizeof hex);
  return 0;
}

int cr_user_hash(const char *password, int prf, long iterations, char derived_key_hex[129],
                 char salt[33]) {
  char s[CR_SALT_HEX_LEN + 1], key[2 * CR_MAX_HASH_LEN + 1];
  int rc = salted_key(password, prf, iterations, s, key);
  if (!rc) {
    memcpy(derived_key_hex, key, strlen(key) + 1);
    memcpy(salt, s, sizeof s);
  }
  OPENSSL_cleanse(key, sizeof key);
  return rc;
}

/* ---- RSA signatures (JWT) --------------------------------------------------- */

int cr_rsa_verify(int alg, const char *pem, size_t pem_len, const void *msg, size_t mlen, const uint8_t *sig,
                  size_t slen, int *ok) {
  *ok = 0;
  if (pem_len > INT_MAX) return DV_EINVAL;
  BIO *bio = BIO_new_mem_buf(pem, (int)pem_len);
  if (!bio) return DV_ENOMEM;
  EVP_PKEY *key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
  BIO_free(bio);
  ERR_clear_error();
  if (!key || EVP_PKEY_base_id(key) != EVP_PKEY_RSA) {
    EVP_PKEY_free(key);
    return DV_EINVAL;
  }
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  int rc = 0;
  if (!ctx || EVP_DigestVerifyInit(ctx, NULL, md_of(alg), NULL, key) != 1) rc = DV_EINVAL;
  else *ok = EVP_DigestVerify(ctx, sig, slen, msg, mlen) == 1;
  ERR_clear_error();
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  return rc;
}
