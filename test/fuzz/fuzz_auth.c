/* fuzz_auth.c — libFuzzer target for the credential parsers of
 * src/http/authparse.c, which read what any client may send: the
 * Authorization value (Basic), the Cookie header and its AuthSession
 * value, a JWT, and form fields of a /_session POST.
 *
 * The input, up to its first NUL, is each of those. Invariants: no crash or
 * sanitizer report; every string handed out is NUL-free and its length
 * agrees with strlen; a Basic pair re-encoded as "Basic b64(name:password)"
 * parses back to the same pair; an AuthSession that parses re-encodes to
 * a value that parses to the same name, time and MAC; a JWT that parses has
 * two JSON objects and its signed part is a prefix of the token. */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/authparse.h"
#include "auth/crypto.h"
#include "util/arena.h"

static void basic(dv_arena *a, const char *s) {
  const char *name, *pw;
  int rc = ap_basic(a, s, &name, &pw);
  assert(rc == AP_OK || rc == AP_NONE || rc == AP_BAD || rc == AP_REFUSE);
  if (rc != AP_OK) return;
  assert(!strchr(name, ':'));
  size_t nl = strlen(name), pl = strlen(pw);
  char *pair = malloc(nl + pl + 2);
  memcpy(pair, name, nl);
  pair[nl] = ':';
  memcpy(pair + nl + 1, pw, pl + 1);
  size_t el = cr_b64_encoded_len(nl + pl + 1, 0);
  char *hdr = malloc(el + 7);
  memcpy(hdr, "Basic ", 6);
  cr_b64_encode((const uint8_t *)pair, nl + pl + 1, 0, hdr + 6);
  const char *n2, *p2;
  assert(ap_basic(a, hdr, &n2, &p2) == AP_OK);
  assert(!strcmp(n2, name) && !strcmp(p2, pw));
  free(pair);
  free(hdr);
}

static void session(dv_arena *a, const char *v, size_t n) {
  ap_session s;
  int rc = ap_session_parse(a, v, n, &s);
  assert(rc == AP_OK || rc == AP_NONE || rc == AP_BAD);
  if (rc != AP_OK) return;
  assert(s.time > 0 && !strchr(s.name, ':'));
  /* NAME:HEXTIME:MAC again */
  size_t nl = strlen(s.name);
  uint8_t *raw = malloc(nl + 20 + s.mac_len);
  memcpy(raw, s.name, nl);
  int tl = sprintf((char *)raw + nl, ":%lX:", s.time);
  memcpy(raw + nl + tl, s.mac, s.mac_len);
  size_t rl = nl + (size_t)tl + s.mac_len;
  char *enc = malloc(cr_b64_encoded_len(rl, 1) + 1);
  cr_b64_encode(raw, rl, 1, enc);
  ap_session t;
  assert(ap_session_parse(a, enc, strlen(enc), &t) == AP_OK);
  assert(!strcmp(t.name, s.name) && t.time == s.time && t.mac_len == s.mac_len);
  assert(!s.mac_len || !memcmp(t.mac, s.mac, s.mac_len));
  free(raw);
  free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = 0;
  size_t n = strlen(s);
  dv_arena a;
  arena_init(&a, 0);

  basic(&a, s);

  size_t cn;
  const char *cv = ap_cookie_value(s, &cn);
  if (cv) {
    assert(cv >= s && cv + cn <= s + n);
    session(&a, cv, cn);
  }
  session(&a, s, n);

  ap_jwt j;
  if (ap_jwt_parse(&a, s, &j) == AP_OK) {
    assert(j.header && j.header->type == JSON_OBJECT);
    assert(j.payload && j.payload->type == JSON_OBJECT);
    assert(j.signed_part == s && j.signed_len < n && s[j.signed_len] == '.');
  }

  static const char *const fields[] = {"name", "username", "password"};
  for (int i = 0; i < 3; i++) {
    int present;
    char *v = ap_form_field(&a, s, n, fields[i], &present);
    assert(!v || present);
    if (v) assert(strlen(v) <= n);
  }
  arena_free(&a);
  free(s);
  return 0;
}
