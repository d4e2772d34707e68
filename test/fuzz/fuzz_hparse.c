/* fuzz_hparse.c — libFuzzer target for the header-value parsers of
 * src/http/hparse.c (Range, Accept, the media type of a Content-Type) and
 * multipart.c's mp_boundary (the boundary parameter): values any client
 * sends with an attachment or multipart request.
 *
 * The input, up to its first NUL, is the header value given to each
 * parser. Invariants beyond "no crash, no read past the value":
 *   Range     at most HPARSE_MAX_RANGES + 1 ranges, each with a bound, no
 *             bound past 18 digits; the ranges printed back as "bytes=…"
 *             parse to the same ranges. Resolved against several body
 *             lengths: 1 means every range lies inside the body, in the
 *             order given, with the bounds that were sent (clipped to the
 *             end); 0 means a "0-" was among them; -1 means one is
 *             backwards or starts at or past the end.
 *   Accept    the answer ignores case, does not change when an element
 *             refused with q=0 goes first, and becomes 1 when the type is
 *             appended as one more element.
 *   media     the answer ignores case; the type followed by ';' and
 *             anything is a match; a match starts with the type.
 *   boundary  a boundary found is 1..70 bchars, found again from the
 *             quoted form, and refused when the output is too small. */
#include <assert.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/hparse.h"
#include "util/multipart.h"

static char *cat3(const char *a, const char *b, const char *c) {
  size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
  char *s = malloc(na + nb + nc + 1);
  if (!s) abort();
  memcpy(s, a, na);
  memcpy(s + na, b, nb);
  memcpy(s + na + nb, c, nc + 1);
  return s;
}

static char *upper(const char *s) {
  size_t n = strlen(s);
  char *u = malloc(n + 1);
  if (!u) abort();
  for (size_t i = 0; i <= n; i++) u[i] = (char)toupper((unsigned char)s[i]);
  return u;
}

static void check_resolve(const hrange *rg, int n, int64_t len) {
  hrange r[HPARSE_MAX_RANGES + 1];
  memcpy(r, rg, (size_t)n * sizeof *r);
  int how = hparse_range_resolve(r, n, len);
  assert(how >= -1 && how <= 1);
  if (how == 1) {
    for (int i = 0; i < n; i++) {
      assert(r[i].from >= 0 && r[i].from <= r[i].to && r[i].to < len);
      if (rg[i].from >= 0) { /* as sent, clipped to the end */
        assert(r[i].from == rg[i].from);
        assert(r[i].to == (rg[i].to < 0 || rg[i].to >= len ? len - 1 : rg[i].to));
      } else { /* a suffix: the last bytes */
        assert(r[i].to == len - 1 && r[i].from == (rg[i].to >= len ? 0 : len - rg[i].to));
      }
    }
    return;
  }
  int zero = 0, bad = 0;
  for (int i = 0; i < n && !zero && !bad; i++) { /* the first that decides */
    if (rg[i].from == 0 && rg[i].to < 0) zero = 1;
    else if ((rg[i].from >= 0 && rg[i].to >= 0 && rg[i].to < rg[i].from) || rg[i].from >= len ||
             (rg[i].from < 0 && (len == 0 || rg[i].to == 0)))
      bad = 1;
  }
  assert(how == 0 ? zero : bad);
}

static void fuzz_range(const char *s, const uint8_t *data, size_t size) {
  hrange rg[HPARSE_MAX_RANGES + 1];
  int n = hparse_range(s, rg);
  assert(n >= 0 && n <= HPARSE_MAX_RANGES + 1);
  if (!n) return;
  char buf[16 + (HPARSE_MAX_RANGES + 1) * 42];
  size_t at = (size_t)snprintf(buf, sizeof buf, "bytes=");
  for (int i = 0; i < n; i++) {
    assert(rg[i].from >= -1 && rg[i].to >= -1 && (rg[i].from >= 0 || rg[i].to >= 0));
    assert(rg[i].from < 1000000000000000000LL && rg[i].to < 1000000000000000000LL);
    if (i) buf[at++] = ',';
    if (rg[i].from >= 0) at += (size_t)snprintf(buf + at, sizeof buf - at, "%lld", (long long)rg[i].from);
    buf[at++] = '-';
    if (rg[i].to >= 0) at += (size_t)snprintf(buf + at, sizeof buf - at, "%lld", (long long)rg[i].to);
    buf[at] = 0;
  }
  hrange again[HPARSE_MAX_RANGES + 1];
  assert(hparse_range(buf, again) == n);
  for (int i = 0; i < n; i++) assert(again[i].from == rg[i].from && again[i].to == rg[i].to);
  int64_t lens[] = {0, 1, 29, (int64_t)size * 97, INT64_MAX / 2};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) check_resolve(rg, n, lens[i]);
  if (size >= 4) check_resolve(rg, n, (int64_t)(data[size - 1] | data[size - 2] << 8 | data[size - 3] << 16));
}

static void fuzz_accept(const char *s) {
  static const char *types[] = {"multipart/related", "multipart/mixed"};
  for (size_t i = 0; i < 2; i++) {
    int a = hparse_accepts(s, types[i]);
    assert(a == 0 || a == 1);
    char *u = upper(s);
    assert(hparse_accepts(u, types[i]) == a);
    free(u);
    char *refused = cat3(types[i], ";q=0, ", s);
    assert(hparse_accepts(refused, types[i]) == a);
    free(refused);
    char *more = cat3(s, ", ", types[i]);
    assert(hparse_accepts(more, types[i]) == 1);
    free(more);
    /* mochiweb's rule: case-blind, and an explicit q=0 for the type wins */
    int any = hparse_accepts_any(s, types[i]);
    assert(any == 0 || any == 1);
    u = upper(s);
    assert(hparse_accepts_any(u, types[i]) == any);
    free(u);
    refused = cat3(types[i], ";q=0, ", s);
    assert(hparse_accepts_any(refused, types[i]) == 0);
    free(refused);
  }
}

static void fuzz_media(const char *s, size_t n) {
  static const char type[] = "multipart/related";
  int m = hparse_media_is(s, n, type);
  assert(m == 0 || m == 1);
  if (m) assert(!strncasecmp(s, type, sizeof type - 1));
  char *u = upper(s);
  assert(hparse_media_is(u, n, type) == m);
  free(u);
  char *p = cat3(type, ";", s);
  assert(hparse_media_is(p, strlen(p), type) == 1);
  free(p);
}

static void fuzz_boundary(const char *s) {
  char out[MP_MAX_BOUNDARY + 1];
  if (mp_boundary(s, out, sizeof out)) return;
  size_t n = strlen(out);
  assert(n >= 1 && n <= MP_MAX_BOUNDARY);
  for (size_t i = 0; i < n; i++) assert(out[i] != '"' && out[i] != '\\' && out[i] != ';' && (unsigned char)out[i] >= 0x20);
  char *q = cat3("multipart/related; boundary=\"", out, "\"");
  char again[MP_MAX_BOUNDARY + 1];
  assert(!mp_boundary(q, again, sizeof again) && !strcmp(again, out));
  char small[MP_MAX_BOUNDARY + 1];
  memset(small, 'x', sizeof small);
  assert(mp_boundary(q, small, n) == DV_EINVAL && small[0] == 'x'); /* no room for the NUL: refused, untouched */
  free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  size_t n = strlen(s); /* header values arrive NUL-terminated */
  fuzz_range(s, data, size);
  fuzz_accept(s);
  fuzz_media(s, n);
  fuzz_boundary(s);
  free(s);
  return 0;
}
