/* authparse.c — the credential parsers of authparse.h: pure functions over
 * bytes, no requests, no store. auth.c decides what each result means for
 * the request; test/fuzz/fuzz_auth.c feeds them arbitrary input.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/authparse.h"
#include "auth/crypto.h"

#define COOKIE_NAME "AuthSession"

/* Decode base64 (url or standard) into the arena, NUL-terminated. */
static uint8_t *b64(dv_arena *a, const char *p, size_t n, int url, size_t *out_len, int *nomem) {
  uint8_t *raw = arena_alloc(a, cr_b64_decoded_max(n) + 1);
  if (!raw) {
    *nomem = 1;
    return NULL;
  }
  if (cr_b64_decode(p, n, url, raw, out_len)) return NULL;
  raw[*out_len] = 0;
  return raw;
}

int ap_basic(dv_arena *a, const char *h, const char **name, const char **password) {
  if (!h) return AP_NONE;
  while (*h == ' ') h++;
  /* "Basic x" only: "Basic: x", which some PouchDB versions send, is no
   * credential for CouchDB (couch_httpd_auth:basic_name_pw), so none here */
  if (strncasecmp(h, "basic", 5) || h[5] != ' ') return AP_NONE; /* another scheme */
  const char *v = h + 5;
  while (*v == ' ') v++;
  size_t n = strlen(v);
  while (n && v[n - 1] == ' ') n--;
  size_t rl;
  int nomem = 0;
  uint8_t *raw = b64(a, v, n, 0, &rl, &nomem);
  if (!raw) return nomem ? AP_NOMEM : AP_BAD;
  uint8_t *colon = memchr(raw, ':', rl);
  if (!colon) return AP_NONE;                 /* CouchDB: no name:password pair, anonymous */
  if (memchr(raw, 0, rl)) return AP_REFUSE;   /* a NUL would cut the pair short: never a match */
  *colon = 0;
  if (!strcmp((char *)raw, "_") && !strcmp((char *)colon + 1, "_")) return AP_NONE; /* the log-out pair */
  *name = (const char *)raw;
  *password = (const char *)colon + 1;
  return AP_OK;
}

const char *ap_cookie_value(const char *c, size_t *n) {
  size_t cl = strlen(COOKIE_NAME);
  while (c && *c) {
    while (*c == ' ' || *c == ';') c++;
    const char *eq = strchr(c, '=');
    const char *end = strchr(c, ';');
    if (!end) end = c + strlen(c);
    if (eq && eq < end && (size_t)(eq - c) == cl && !strncmp(c, COOKIE_NAME, cl)) {
      *n = (size_t)(end - eq - 1);
      return eq + 1;
    }
    c = end;
  }
  return NULL;
}

int ap_session_parse(dv_arena *a, const char *v, size_t n, ap_session *out) {
  size_t rl;
  int nomem = 0;
  uint8_t *raw = b64(a, v, n, 1, &rl, &nomem);
  if (!raw) return nomem ? AP_NOMEM : AP_BAD;
  uint8_t *c1 = memchr(raw, ':', rl);
  uint8_t *c2 = c1 ? memchr(c1 + 1, ':', rl - (size_t)(c1 + 1 - raw)) : NULL;
  if (!c1 || !c2) return AP_BAD;
  *c1 = 0;
  *c2 = 0;
  const char *name = (const char *)raw, *time_s = (const char *)c1 + 1;
  if (strlen(name) != (size_t)(c1 - raw) || strlen(time_s) != (size_t)(c2 - c1 - 1)) return AP_NONE; /* a NUL inside */
  if (!*time_s || strlen(time_s) > 15) return AP_NONE;
  for (const char *p = time_s; *p; p++)
    if (!isxdigit((unsigned char)*p)) return AP_NONE;
  long t = strtol(time_s, NULL, 16);
  if (t <= 0) return AP_NONE;
  out->name = name;
  out->time = t;
  out->mac = c2 + 1;
  out->mac_len = rl - (size_t)(c2 + 1 - raw);
  return AP_OK;
}

/* One base64url JSON object into the arena, or NULL. */
static json_val *jwt_part(dv_arena *a, const char *p, size_t n, int *nomem) {
  size_t rl;
  uint8_t *raw = b64(a, p, n, 1, &rl, nomem);
  json_val *v;
  if (!raw) return NULL;
  if (json_parse(a, raw, rl, NULL, &v, NULL) || v->type != JSON_OBJECT) return NULL;
  return v;
}

int ap_jwt_parse(dv_arena *a, const char *tok, ap_jwt *out) {
  const char *d1 = strchr(tok, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  if (!d1 || !d2 || strchr(d2 + 1, '.')) return AP_BAD;
  int nomem = 0;
  out->header = jwt_part(a, tok, (size_t)(d1 - tok), &nomem);
  out->payload = out->header ? jwt_part(a, d1 + 1, (size_t)(d2 - d1 - 1), &nomem) : NULL;
  out->sig = out->payload ? b64(a, d2 + 1, strlen(d2 + 1), 1, &out->sig_len, &nomem) : NULL;
  if (!out->sig) return nomem ? AP_NOMEM : AP_BAD;
  out->signed_part = tok;
  out->signed_len = (size_t)(d2 - tok);
  return AP_OK;
}

char *ap_form_field(dv_arena *a, const char *body, size_t n, const char *name, int *present) {
  size_t nl = strlen(name);
  const char *p = body, *end = body + n;
  if (present) *present = 0;
  while (body && p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    const char *e = amp ? amp : end;
    if ((size_t)(e - p) > nl && !memcmp(p, name, nl) && p[nl] == '=') {
      if (present) *present = 1;
      const char *v = p + nl + 1;
      char *out = arena_alloc(a, (size_t)(e - v) + 1);
      if (!out) return NULL;
      size_t k = 0;
      for (const char *q = v; q < e; q++) {
        if (*q == '+') {
          out[k++] = ' ';
        } else if (*q == '%' && e - q > 2 && isxdigit((unsigned char)q[1]) && isxdigit((unsigned char)q[2])) {
          char hx[3] = {q[1], q[2], 0};
          out[k++] = (char)strtol(hx, NULL, 16);
          q += 2;
        } else {
          out[k++] = *q;
        }
      }
      out[k] = 0;
      return memchr(out, 0, k) ? NULL : out;
    }
    p = e + 1;
  }
  return NULL;
}
