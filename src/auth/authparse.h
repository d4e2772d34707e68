/* authparse.h — the parsers of credentials that auth.c reads from a
 * request: the Basic Authorization value, the AuthSession cookie (and the
 * Cookie header around it), a JWT's three parts, and form fields. They
 * take bytes and an arena and know nothing of requests, users or the
 * store, so the fuzzer (test/fuzz/fuzz_auth.c) drives them directly.
 *
 * Everything returned lives in the arena; strings handed out are
 * NUL-terminated and never contain a NUL themselves.
 */
#ifndef DV_HTTP_AUTHPARSE_H
#define DV_HTTP_AUTHPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "util/arena.h"

enum {
  AP_OK = 0,        /* parsed */
  AP_NONE = 1,      /* not this kind of credential (the request is anonymous for it) */
  AP_BAD = -1,      /* malformed: the caller answers 400 */
  AP_REFUSE = -2,   /* well-formed but never valid (a NUL inside): the caller answers 401 */
  AP_NOMEM = -3,    /* out of memory */
};

/* An Authorization value. "Basic b64(name:password)": AP_OK with *name and
 * *password (split at the first colon). Another scheme ("Basic: b64", as
 * some PouchDB versions send it, included), no colon, or CouchDB's "_:_"
 * log-out pair: AP_NONE. Not base64: AP_BAD (the caller treats the request
 * as anonymous, as CouchDB). A NUL in the pair: AP_REFUSE. */
int ap_basic(dv_arena *a, const char *value, const char **name, const char **password);

/* The value of the AuthSession cookie in a Cookie header, or NULL; *n
 * gets its length (it is not NUL-terminated there). */
const char *ap_cookie_value(const char *header, size_t *n);

typedef struct ap_session {
  const char *name;     /* the user name */
  long time;            /* HEXTIME: seconds since 1970 */
  const uint8_t *mac;   /* the raw HMAC bytes */
  size_t mac_len;
} ap_session;

/* An AuthSession value: base64url("NAME:HEXTIME:MAC"). AP_OK; AP_BAD when
 * it is not base64url or has fewer than two colons (CouchDB's "Malformed
 * AuthSession cookie"); AP_NONE when it parses but can never be valid (a
 * NUL in the name, a time that is not positive hex). */
int ap_session_parse(dv_arena *a, const char *v, size_t n, ap_session *out);

typedef struct ap_jwt {
  json_val *header;     /* the decoded JOSE header (an object) */
  json_val *payload;    /* the decoded claims (an object) */
  const char *signed_part; /* HEADER.PAYLOAD as sent: what the signature covers */
  size_t signed_len;
  uint8_t *sig;         /* the decoded signature */
  size_t sig_len;
} ap_jwt;

/* A compact JWT: three base64url parts, the first two JSON objects.
 * AP_OK or AP_BAD ("Malformed token"). */
int ap_jwt_parse(dv_arena *a, const char *token, ap_jwt *out);

/* A field of an application/x-www-form-urlencoded body, decoded ('+' is a
 * space, %XX a byte), or NULL when absent or holding a NUL. *present (may
 * be NULL) is 1 when the field is there at all. */
char *ap_form_field(dv_arena *a, const char *body, size_t n, const char *name, int *present);

#endif
