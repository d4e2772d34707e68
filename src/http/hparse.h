/* hparse.h — pure parsers of the request header values the attachment code
 * reads: Range (bytes=…), Accept (which multipart answer a client takes)
 * and the media type of a Content-Type. Nothing here knows a request, the
 * store or libmicrohttpd, so the fuzz target (test/fuzz/fuzz_hparse.c)
 * links them alone. The boundary parameter of a multipart Content-Type is
 * multipart.h's mp_boundary. */
#ifndef DV_HTTP_HPARSE_H
#define DV_HTTP_HPARSE_H

#include <stddef.h>
#include <stdint.h>

#define HPARSE_MAX_RANGES 10 /* this many ranges or more: send the whole body (CouchDB) */
#define HPARSE_MAX_DIGITS 18 /* digits of one range bound (anything longer: ignored) */

typedef struct hrange {
  int64_t from;  /* first byte, inclusive; -1: none given (a suffix "-N") */
  int64_t to;    /* last byte, inclusive; -1: none given ("N-") */
} hrange;

/* Parse a Range value "bytes=…" as mochiweb's parse_range_request: ranges
 * are comma-separated "A-B", "A-" or "-N" with optional spaces and tabs
 * around them, empty elements skipped. Returns how many were written to
 * out (room for HPARSE_MAX_RANGES + 1: parsing stops at that many, enough
 * to know there are too many), or 0 when h is NULL or malformed (another
 * unit than "bytes", a character other than digits and one '-', a bound of
 * more than HPARSE_MAX_DIGITS digits, "-"). */
int hparse_range(const char *h, hrange out[HPARSE_MAX_RANGES + 1]);

/* chttpd_db:parse_ranges over n parsed ranges of a body of len bytes:
 * 1 with every range made absolute (0 <= from <= to < len, in the order
 * given), 0 to send the whole body ("bytes=0-" anywhere), -1 for 416 (a
 * backwards range, or one starting at or past the end). A suffix longer
 * than the body is the whole body and an end past it is clipped (RFC
 * 7233). rg is rewritten in place (partly when the answer is not 1). */
int hparse_range_resolve(hrange *rg, int n, int64_t len);

/* 1 when the Accept value h names `type` (case ignored), or multipart with
 * the wildcard subtype, with q > 0 (a missing q is 1). NULL, an empty
 * value and the bare wildcard type are 0: JSON stays the default answer. */
int hparse_accepts(const char *h, const char *type);

/* mochiweb's accepts_content_type, which CouchDB asks where it prefers a
 * multipart answer (open_revs): 1 when the Accept value h takes `type`
 * through itself, its main type with the wildcard subtype, or the any-type
 * wildcard with q > 0, and neither of the first two has q = 0. A missing
 * header (NULL) takes anything. */
int hparse_accepts_any(const char *h, const char *type);

/* 1 when the Content-Type value v[0..n) has the media type `type` (case
 * ignored), alone or followed by parameters (';', a space or a tab). */
int hparse_media_is(const char *v, size_t n, const char *type);

#endif
