/* multipart.h — a streaming (push) parser for MIME multipart bodies
 * (RFC 2046 section 5.1): the multipart/related uploads of a document with
 * its attachments (PUT /db/doc, the replicator's form, whose parts may be
 * gzip-encoded; this parser hands them over as sent) and multipart/form-data.
 *
 * It is not an HTTP parser, knows nothing of documents or attachments, and
 * never decodes a part (no Content-Transfer-Encoding, no gzip): it splits
 * bytes into parts, hands each part's headers and raw body bytes to
 * callbacks, and forgets them. Memory is bounded whatever the body size:
 * the parser holds the headers of the current part (at most
 * max_header_bytes, allocated once by mp_new) and a few bytes of a possible
 * delimiter; part data is never buffered, so a part may be any size.
 *
 * The rules followed (RFC 2046 5.1.1, with the leniencies noted):
 *   - A delimiter is CRLF "--" boundary; the first one may come without the
 *     CRLF (at the very start of the body). Anything before it (the
 *     preamble) and after the closing delimiter "--" boundary "--" (the
 *     epilogue) is ignored.
 *   - A delimiter line may carry transport padding (spaces and tabs, at
 *     most MP_MAX_PADDING of them) before its line end, which is CRLF or a
 *     bare LF. "--" boundary followed by anything else (a longer boundary,
 *     one '-', more padding than that) is not a delimiter: those bytes are
 *     part data and pass through unchanged.
 *   - Header lines end with CRLF; a bare LF is accepted too, as CouchDB's
 *     mochiweb does (clients building bodies by hand send it). A line
 *     starting with a space or tab continues the previous header (folding):
 *     it is joined to it with one space. A header line without ':', with an
 *     empty name or a name holding a space or control character, a bare CR
 *     or a NUL in the header block, and a continuation line before any
 *     header are malformed. The header block of a part is parsed when its
 *     empty line arrives, so the headers before a bad line have been handed
 *     to the callback when mp_feed returns DV_EINVAL.
 *   - The empty line that ends the headers may also be the CRLF of the next
 *     delimiter, as RFC 2046's grammar allows ([CRLF *OCTET] is optional):
 *     "--b\r\nA: x\r\n\r\n--b--" is one part with header A and no body.
 *   - A closing delimiter with no part before it is a well-formed body with
 *     no parts; the caller decides whether that is acceptable.
 *   - The boundary holds 1..70 of RFC 2046's bchars (letters, digits and
 *     '()+_,-./:=? and a space, not last).
 */
#ifndef DV_MULTIPART_H
#define DV_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define MP_MAX_BOUNDARY 70 /* RFC 2046: a boundary is 1..70 characters */
#define MP_MAX_PADDING 256 /* transport padding accepted on a delimiter line */

/* The boundary parameter of a Content-Type value, quoted or not ("multipart/
 * related; boundary=\"abc\""; the parameter name is case-insensitive, the
 * media type is not checked). 0 with the boundary in out (NUL-terminated,
 * quotes and backslash escapes removed); DV_EINVAL when the parameter is
 * missing, empty, longer than MP_MAX_BOUNDARY, holds a character that is
 * not a bchar or ends in a space, when content_type is NULL, or when it
 * does not fit in cap bytes (cap >= MP_MAX_BOUNDARY + 1 always suffices).
 * out is written only on success. */
int mp_boundary(const char *content_type, char *out, size_t cap) DV_MUST_CHECK;

/* The callbacks. Any may be NULL. A nonzero return stops the parse: mp_feed
 * returns that value, now and on every later call. Pointers handed to a
 * callback are borrowed and valid only during the call. */
typedef struct mp_callbacks {
  int (*part_begin)(void *arg);   /* a delimiter line opened a new part */
  int (*header)(void *arg, const char *name, size_t nl, const char *value,
                size_t vl);       /* one header: name as sent, value trimmed and
                                     unfolded; neither NUL-terminated */
  int (*headers_end)(void *arg);  /* the empty line after the headers */
  int (*data)(void *arg, const uint8_t *p, size_t n); /* body bytes of the part,
                                     in pieces of any size (never 0) */
  int (*part_end)(void *arg);     /* the delimiter after the part was seen */
} mp_callbacks;

typedef struct mp_parser mp_parser;

/* A parser for a body whose delimiter is "--" boundary (boundary as
 * mp_boundary gives it, without the dashes). cb is copied (NULL: no
 * callbacks); arg is passed to every callback. max_header_bytes bounds the
 * header lines of one part, their line ends included and the empty line
 * that ends them not (e.g. 16384); max_parts bounds the number of parts
 * (0: no limit). 0 with *out, to be freed with mp_free; DV_EINVAL for a
 * boundary that is not 1..70 bchars; DV_ENOMEM. */
int mp_new(const char *boundary, const mp_callbacks *cb, void *arg, size_t max_header_bytes,
           size_t max_parts, mp_parser **out) DV_MUST_CHECK;

/* The next n bytes of the body (any split of the body into calls gives
 * the same callbacks, up to how data is cut into pieces). 0; DV_EINVAL for
 * a malformed body (a bad header line, see above); DV_EVALUE_TOO_LARGE (413
 * too_large) when a part's headers exceed max_header_bytes or a part past
 * max_parts begins; or a callback's nonzero value. After an error the
 * parser is stuck: every later mp_feed returns the same value. Bytes after
 * the closing delimiter are ignored. */
int mp_feed(mp_parser *p, const uint8_t *data, size_t n) DV_MUST_CHECK;

/* The end of the body. 0 once the closing delimiter was seen; DV_EINVAL for
 * a truncated body (no closing delimiter, or in the middle of a part); the
 * error of an mp_feed that failed. Calls no callback. */
int mp_finish(mp_parser *p) DV_MUST_CHECK;

/* Frees the parser. NULL is fine. */
void mp_free(mp_parser *p);

#endif
