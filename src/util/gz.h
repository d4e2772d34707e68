/* gz.h — gzip (RFC 1952) streams through zlib, for attachments.
 *
 * Attachments of compressible types are stored gzip-encoded and sent as
 * they are to clients that accept gzip, decoded for the others (CouchDB's
 * [attachments] compressible_types); multipart parts from the replicator
 * may arrive gzip-encoded. Both directions stream: input goes in pieces of
 * any size, output leaves through a callback in pieces of at most
 * DV_GZ_OUT bytes, so memory stays bounded whatever the size.
 *
 * Errors: DV_EINVAL (data that is not gzip, or trailing garbage after the
 * stream's end), DV_ERANGE (decoded output past the caller's cap: a gzip
 * bomb), DV_ENOMEM, or what the callback returned.
 */
#ifndef DV_GZ_H
#define DV_GZ_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define DV_GZ_OUT 65536       /* largest piece handed to the callback */
#define DV_GZ_LEVEL 8         /* CouchDB's [attachments] compression_level */

typedef struct dv_gz dv_gz;
typedef int (*dv_gz_out)(void *arg, const uint8_t *p, size_t n);

/* A stream: encode (1) with the given zlib level, or decode (0) with
 * decoded output capped at max_out bytes (0 = no cap). */
int dv_gz_open(int encode, int level, uint64_t max_out, dv_gz **out);
/* Feed n bytes; `last` = 1 on the final call (n may be 0), which flushes
 * the stream's end (decoding: the input must be one complete gzip member;
 * anything after it is DV_EINVAL). */
int dv_gz_write(dv_gz *z, const void *in, size_t n, int last, dv_gz_out cb, void *arg);
/* Bytes produced so far. */
uint64_t dv_gz_total_out(const dv_gz *z);
void dv_gz_close(dv_gz *z); /* NULL is a no-op */

/* One-shot forms appending to out. */
int dv_gz_encode(const void *in, size_t n, int level, dv_buf *out);
int dv_gz_decode(const void *in, size_t n, uint64_t max_out, dv_buf *out);

#endif
