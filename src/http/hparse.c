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

/* The next media range of an Accept value: its type (trimmed, *n bytes at
 * *t) and its q (1 when absent); *h moves past it. 0 at the end. */
static int accept_next(const char **h, const char **t, size_t *n, double *q) {
  const char *p = *h;
  while (*p == ',' || is_sp(*p)) p++;
  if (!*p) return 0;
  const char *e = p;
  while (*e && *e != ',' && *e != ';') e++;
  const char *end = e;
  while (end > p && is_sp(end[-1])) end--;
  *t = p;
  *n = (size_t)(end - p);
  *q = 1;
  while (*e == ';') { /* parameters: only q matters */
    e++;
    while (is_sp(*e)) e++;
    if ((e[0] == 'q' || e[0] == 'Q') && e[1] == '=') *q = strtod(e + 2, NULL);
    while (*e && *e != ',' && *e != ';') e++;
  }
  *h = e;
  return 1;
}

int hparse_accepts(const char *h, const char *type) {
  size_t tn = strlen(type), n;
  const char *t;
  double q;
  while (h && accept_next(&h, &t, &n, &q)) {
    int hit = (n == tn && !strncasecmp(t, type, n)) || (n == 11 && !strncasecmp(t, "multipart/*", 11));
    if (hit && q > 0) return 1;
  }
  return 0;
}

int hparse_accepts_any(const char *h, const char *type) {
  if (!h) return 1; /* mochiweb: no Accept header takes anything */
  size_t tn = strlen(type), n;
  const char *slash = strchr(type, '/');
  size_t mn = slash ? (size_t)(slash - type) : tn; /* main type */
  const char *t;
  double q;
  int yes = 0, no = 0;
  while (accept_next(&h, &t, &n, &q)) {
    int exact = n == tn && !strncasecmp(t, type, n);
    int super = n == mn + 2 && !strncasecmp(t, type, mn) && t[mn] == '/' && t[mn + 1] == '*';
    int any = n == 3 && !memcmp(t, "*/*", 3);
    if ((exact || super || any) && q > 0) yes = 1;
    if ((exact || super) && q <= 0) no = 1;
  }
  return yes && !no;
}

int hparse_media_is(const char *v, size_t n, const char *type) {
  size_t k = strlen(type);
  return v && n >= k && !strncasecmp(v, type, k) && (n == k || v[k] == ';' || is_sp(v[k]));
}
