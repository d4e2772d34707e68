/* hparse.c — the header-value parsers of hparse.h: Range, Accept and the
 * media type of a Content-Type. Pure functions over NUL-terminated or
 * counted strings; no allocation. Not here: multipart bodies and their
 * boundary parameter (multipart.c). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/hparse.h"

static int is_sp(char c) { return c == ' ' || c == '\t'; }

int hparse_range(const char *h, hrange out[HPARSE_MAX_RANGES + 1]) {
  if (!h || strncmp(h, "bytes=", 6)) return 0;
  int n = 0;
  for (const char *p = h + 6; *p;) {
    size_t k = strcspn(p, ",");
    const char *e = p + k;
    while (p < e && is_sp(*p)) p++;
    const char *t = e;
    while (t > p && is_sp(t[-1])) t--;
    if (t > p) {
      if (n == HPARSE_MAX_RANGES + 1) return n; /* enough to know there are too many */
      int64_t v[2] = {-1, -1};
      int which = 0, digits = 0;
      const char *q = p;
      if (*q == '-') which = 1, q++;
      for (; q < t; q++) {
        if (*q >= '0' && *q <= '9') {
          if (digits++ == HPARSE_MAX_DIGITS) return 0;
          v[which] = (v[which] < 0 ? 0 : v[which]) * 10 + (*q - '0');
        } else if (*q == '-' && which == 0 && digits) {
          which = 1;
          digits = 0;
        } else {
          return 0;
        }
      }
      if (v[0] < 0 && v[1] < 0) return 0;
      out[n].from = v[0];
      out[n].to = v[1];
      n++;
    }
    p = *e ? e + 1 : e;
  }
  return n;
}

int hparse_range_resolve(hrange *rg, int n, int64_t len) {
  for (int i = 0; i < n; i++) {
    int64_t f = rg[i].from, t = rg[i].to;
    if (f == 0 && t < 0) return 0;
    if (f >= 0 && t >= 0 && t < f) return -1;
    if (f < 0) {
      f = len - t;
      if (f < 0) f = 0;
      t = len - 1;
    } else if (t < 0 || t >= len) {
      t = len - 1;
    }
    if (t < f) return -1;
    rg[i].from = f;
    rg[i].to = t;
  }
  return 1;
}

int hparse_accepts(const char *h, const char *type) {
  size_t tn = strlen(type);
  while (h && *h) {
    while (*h == ',' || is_sp(*h)) h++;
    const char *e = h;
    while (*e && *e != ',' && *e != ';') e++;
    const char *t = e;
    while (t > h && is_sp(t[-1])) t--;
    size_t n = (size_t)(t - h);
    int hit = (n == tn && !strncasecmp(h, type, n)) || (n == 11 && !strncasecmp(h, "multipart/*", 11));
    double q = 1;
    while (*e == ';') { /* parameters: only q matters */
      e++;
      while (is_sp(*e)) e++;
      if ((e[0] == 'q' || e[0] == 'Q') && e[1] == '=') q = strtod(e + 2, NULL);
      while (*e && *e != ',' && *e != ';') e++;
    }
    if (hit && q > 0) return 1;
    h = e;
  }
  return 0;
}

int hparse_media_is(const char *v, size_t n, const char *type) {
  size_t k = strlen(type);
  return v && n >= k && !strncasecmp(v, type, k) && (n == k || v[k] == ';' || is_sp(v[k]));
}
