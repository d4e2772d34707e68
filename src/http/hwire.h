/* hwire.h — request framing (RFC 9112) checked on the raw bytes of a
 * connection, before libmicrohttpd parses them.
 *
 * libmicrohttpd 0.9.75 frames requests leniently: with two Content-Length
 * headers it uses the first; with Content-Length and Transfer-Encoding it
 * reads the body as chunked and runs whatever follows as the next request;
 * an unknown transfer coding makes it read the body until the client
 * closes; it appends an obs-fold continuation line to the header's *name*;
 * and a chunk line that does not fit its buffer gets its HTML 500. Behind a
 * proxy that frames the same bytes differently, that is request smuggling
 * (issue 24). So server.c feeds every byte the server receives on a client
 * connection through an hwire first, and refuses the connection with the
 * CouchDB-style JSON answer of the code hwire_feed returns before
 * libmicrohttpd sees the offending bytes.
 *
 * What is refused (the table in test/http/test_hwire.c is the contract):
 *   - a head (request line + headers, or a chunked body's trailers) past
 *     limits.head bytes: 431 (a request line past it alone: 414);
 *   - a header line starting with a space or tab (obsolete line folding),
 *     a header name that is not a token or is followed by whitespace before
 *     its colon, a bare CR or a NUL in the head: 400;
 *   - Content-Length that is not 1*DIGIT (optional whitespace around it)
 *     or longer than 18 digits, or two that differ: 400 (the same value
 *     twice is accepted, as RFC 9112 allows);
 *   - Transfer-Encoding together with Content-Length: 400;
 *   - Transfer-Encoding naming a coding other than chunked: 501; chunked
 *     not alone in exactly one header (libmicrohttpd decodes only a single
 *     "chunked"), or a malformed list: 400;
 *   - chunked bodies: a size of no or more than 16 hex digits, a size line
 *     (extensions included) past HWIRE_CHUNK_LINE, data not followed by
 *     CRLF: 400.
 * Empty lines before a request line are skipped (RFC 9112 2.2); line ends
 * may be CRLF or a bare LF, as libmicrohttpd takes them.
 *
 * A pure state machine: no allocation, no I/O, O(1) state, any split of the
 * input gives the same answer (fuzz_hwire checks that). Not here: what the
 * request means (libmicrohttpd, server.c), body size limits (server.c). */
#ifndef DV_HTTP_HWIRE_H
#define DV_HTTP_HWIRE_H

#include <stddef.h>
#include <stdint.h>

#define HWIRE_CHUNK_LINE 1024 /* bytes of a chunk-size line, extensions included */
#define HWIRE_VAL 128         /* bytes of a Content-Length / Transfer-Encoding value kept */

typedef struct hwire {
  uint8_t st;            /* state (hwire.c) */
  uint8_t kind;          /* the header being read: 0 other, 1 Content-Length, 2 Transfer-Encoding */
  uint8_t te_n;          /* Transfer-Encoding headers in this head */
  uint8_t te_unknown;    /* one of them names a coding other than chunked */
  uint8_t te_ok;         /* exactly "chunked" (what libmicrohttpd decodes) */
  uint8_t te_bad;        /* a malformed Transfer-Encoding list */
  uint8_t in_head;       /* a head has begun and is not complete */
  uint8_t nlen;          /* bytes of name kept (lower case) */
  char name[20];         /* the header name, while it may still be one we check */
  uint16_t vlen;         /* bytes of val kept */
  char val[HWIRE_VAL];   /* the value of a Content-Length / Transfer-Encoding header */
  uint8_t vover;         /* the value was longer than val */
  uint8_t hex;           /* hex digits of the chunk size read */
  uint32_t line;         /* bytes of the current line */
  uint32_t head;         /* bytes of the current head (or trailer section) */
  uint32_t head_max;     /* limit of a head, request line included */
  int64_t cl;            /* Content-Length of this head, -1 none */
  uint64_t left;         /* body bytes still to come (Content-Length or chunk data) */
  uint64_t heads;        /* heads completed on this connection */
  int err;               /* the first error (a DV_E* code), then sticky */
} hwire;

/* Start a connection; head_max bounds each request head (the request line
 * alone: 414 past it; the whole head: 431). */
void hwire_init(hwire *w, uint32_t head_max);

/* Feed the next n bytes the client sent. Returns 0 while the framing is
 * sound, else a DV_E* code (err.h: DV_EHTTP_*) whose status and CouchDB
 * error/reason are the answer to send before closing the connection; an
 * error is sticky. w->in_head says whether a request head is incomplete
 * (the server's request_head_timeout runs while it is). */
int hwire_feed(hwire *w, const uint8_t *p, size_t n);

/* 1 while a request body is arriving: from the end of a head that
 * announced one to its last byte (a chunked body's trailers are a head:
 * w->in_head). The server's request_body_timeout runs while it is. */
int hwire_in_body(const hwire *w);

#endif
