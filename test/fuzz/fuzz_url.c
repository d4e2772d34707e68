/* fuzz_url.c — libFuzzer target for the router's percent-decoding
 * (src/http/url.c): the input is split at its first '?' into a path and a
 * query; the path goes through url_split_path, each '&'-separated query
 * piece through url_decode. Checks: no crash, no read past the input, and
 * every decoded string is no longer than its source and NUL-terminated;
 * decoding text without '%' or '+' gives the text back. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  size_t n = strlen(s); /* the server sees NUL-terminated URLs */
  dv_arena a;
  arena_init(&a, 0);
  char *q = strchr(s, '?');
  if (q) *q++ = 0;
  const char *seg[16];
  size_t seg_len[16];
  int nseg = 0;
  int rc = url_split_path(&a, s, seg, seg_len, 16, &nseg);
  if (!rc) {
    size_t total = 0;
    for (int i = 0; i < nseg; i++) {
      assert(seg[i][seg_len[i]] == 0);
      total += seg_len[i];
    }
    assert(total <= strlen(s));
  }
  if (q) {
    for (char *p = q; p && *p;) {
      char *amp = strchr(p, '&');
      size_t len = amp ? (size_t)(amp - p) : strlen(p);
      size_t out = 0;
      char *d = url_decode(&a, p, len, 1, &out);
      if (d) {
        assert(out <= len && d[out] == 0);
        if (!memchr(p, '%', len) && !memchr(p, '+', len)) assert(out == len && !memcmp(d, p, len));
      }
      p = amp ? amp + 1 : NULL;
    }
  }
  (void)n;
  arena_free(&a);
  free(s);
  return 0;
}
