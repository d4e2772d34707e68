/* b64.h — base64 (RFC 4648): cookies, Basic auth, JWT, attachment data
 * and digests. */
#ifndef DV_B64_H
#define DV_B64_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Base64 (RFC 4648 section 4), or base64url (section 5) when url is 1:
 * '-' and '_' for '+' and '/', and no '=' padding on output.
 *
 * dv_b64_encoded_len is the number of characters dv_b64_encode writes, NOT
 * counting its terminating NUL: out needs dv_b64_encoded_len(n, url) + 1
 * bytes. n must be below SIZE_MAX / 4 * 3.
 *
 * dv_b64_decode decodes in[0..n) (any bytes; a NUL is just an invalid
 * character) into out, which holds dv_b64_decoded_max(n) bytes, and sets
 * *out_len. Standard base64 is strict: n a multiple of 4, only the 64
 * alphabet characters, '=' only as the one or two final characters, and
 * the bits padding leaves over zero (the encoding is canonical). No
 * whitespace, no line breaks. base64url (url = 1) takes only '-' and '_'
 * of the two alphabets and, like CouchDB's couch_util:decodeBase64Url,
 * accepts the input without its padding; padding that is present must be
 * complete. Returns 0 or DV_EINVAL; out and *out_len are written only on
 * success. The empty input decodes to 0 bytes. */
size_t dv_b64_encoded_len(size_t n, int url);
void dv_b64_encode(const uint8_t *p, size_t n, int url, char *out);
size_t dv_b64_decoded_max(size_t n);
int dv_b64_decode(const char *in, size_t n, int url, uint8_t *out, size_t *out_len) DV_MUST_CHECK;

#endif
