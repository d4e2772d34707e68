/* url.h — percent-decoding of request paths and query strings. Pure
 * functions over an arena (no libmicrohttpd), so the fuzz target can run
 * them alone. */
#ifndef DV_HTTP_URL_H
#define DV_HTTP_URL_H

#include <stddef.h>

#include "util/arena.h"

/* Decode s[0..n): %XX is a byte; with plus, '+' is a space (query strings,
 * as mochiweb decodes them). The result is NUL-terminated in the arena (it
 * may hold NUL bytes: use *out_len). NULL on a bad escape or no memory. */
char *url_decode(dv_arena *a, const char *s, size_t n, int plus, size_t *out_len);

/* Split a raw path ("/db/a%2Fb/") on '/' and decode each segment: a leading
 * '/' is skipped and empty segments are dropped ("//db//x" is "/db/x", as
 * mochiweb's string:tokens makes it). Returns 0, -1 on a bad escape (or no memory), -2 when there are
 * more than max segments. */
int url_split_path(dv_arena *a, const char *path, const char **seg, size_t *seg_len, int max, int *out_n);

#endif
