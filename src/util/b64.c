/* b64.c — base64 and base64url (see b64.h). */
#include "util/b64.h"

#include "util/err.h"

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t dv_b64_encoded_len(size_t n, int url) {
  if (!url) return (n / 3 + (n % 3 != 0)) * 4;
  return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

void dv_b64_encode(const uint8_t *p, size_t n, int url, char *out) {
  const char *a = url ? b64_url : b64_std;
  size_t i = 0;
  char *o = out;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    *o++ = a[v >> 18];
    *o++ = a[v >> 12 & 63];
    *o++ = a[v >> 6 & 63];
    *o++ = a[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)p[i] << 16;
    *o++ = a[v >> 18];
    *o++ = a[v >> 12 & 63];
    if (!url) *o++ = '=', *o++ = '=';
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    *o++ = a[v >> 18];
    *o++ = a[v >> 12 & 63];
    *o++ = a[v >> 6 & 63];
    if (!url) *o++ = '=';
  }
  *o = 0;
}

size_t dv_b64_decoded_max(size_t n) { return n / 4 * 3 + (n % 4 ? 3 : 0); }

/* The 6-bit value of c in the chosen alphabet, or -1. */
static int b64_val(unsigned char c, int url) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == (url ? '-' : '+')) return 62;
  if (c == (url ? '_' : '/')) return 63;
  return -1;
}

int dv_b64_decode(const char *in, size_t n, int url, uint8_t *out, size_t *out_len) {
  const unsigned char *s = (const unsigned char *)in;
  size_t body = n, pad = 0;
  /* Padding: always for standard base64, and for base64url when it is
   * there at all; then the text is whole quanta and the '=' are the last
   * one or two characters, no more than the final quantum leaves over. */
  if (!url || (n && s[n - 1] == '=')) {
    if (n % 4) return DV_EINVAL;
    while (pad < 2 && body && s[body - 1] == '=') body--, pad++;
    if (pad && body % 4 + pad != 4) return DV_EINVAL;
  }
  if (body % 4 == 1) return DV_EINVAL; /* 6 bits cannot end a byte */
  /* Validate everything before writing anything. */
  int last = 0;
  for (size_t i = 0; i < body; i++)
    if ((last = b64_val(s[i], url)) < 0) return DV_EINVAL;
  /* Canonical only: the bits below the last whole byte must be zero, so
   * each byte string has exactly one encoding. */
  if ((body % 4 == 2 && (last & 15)) || (body % 4 == 3 && (last & 3))) return DV_EINVAL;

  uint8_t *o = out;
  size_t i = 0;
  for (; i + 4 <= body; i += 4) {
    uint32_t v = (uint32_t)b64_val(s[i], url) << 18 | (uint32_t)b64_val(s[i + 1], url) << 12 |
                 (uint32_t)b64_val(s[i + 2], url) << 6 | (uint32_t)b64_val(s[i + 3], url);
    *o++ = (uint8_t)(v >> 16);
    *o++ = (uint8_t)(v >> 8);
    *o++ = (uint8_t)v;
  }
  if (body - i >= 2) {
    uint32_t v = (uint32_t)b64_val(s[i], url) << 18 | (uint32_t)b64_val(s[i + 1], url) << 12;
    if (body - i == 3) v |= (uint32_t)b64_val(s[i + 2], url) << 6;
    *o++ = (uint8_t)(v >> 16);
    if (body - i == 3) *o++ = (uint8_t)(v >> 8);
  }
  *out_len = (size_t)(o - out);
  return 0;
}

