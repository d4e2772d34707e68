/* url.c — percent-decoding for the router (see url.h). Nothing here knows
 * HTTP beyond the grammar of a path and a query value. */
#include <string.h>

#include "http/url.h"

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char *url_decode(dv_arena *a, const char *s, size_t n, int plus, size_t *out_len) {
  char *d = arena_alloc(a, n + 1);
  if (!d) return NULL;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      int hi = i + 1 < n ? hexval((unsigned char)s[i + 1]) : -1;
      int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
      if (hi < 0 || lo < 0) return NULL;
      d[j++] = (char)(hi << 4 | lo);
      i += 2;
    } else {
      d[j++] = c == '+' && plus ? ' ' : c;
    }
  }
  d[j] = 0;
  *out_len = j;
  return d;
}

int url_split_path(dv_arena *a, const char *path, const char **seg, size_t *seg_len, int max, int *out_n) {
  const char *p = path;
  int n = 0;
  if (*p == '/') p++;
  while (*p) {
    const char *e = strchr(p, '/');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (!len) { /* "//": empty segments are dropped, as mochiweb's string:tokens does */
      if (!e) break;
      p = e + 1;
      continue;
    }
    if (n == max) return -2;
    char *d = url_decode(a, p, len, 0, &seg_len[n]);
    if (!d) return -1;
    seg[n++] = d;
    if (!e) break;
    p = e + 1;
  }
  *out_n = n;
  return 0;
}
