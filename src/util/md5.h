/* md5.h — MD5 (RFC 1321), for divan's deterministic revision ids.
 *
 * CouchDB names a new revision by the MD5 of what the edit contains, so the
 * same edit made on two nodes gets the same rev; divan does the same
 * (DESIGN.md, "RevHash"). That is the only reason this exists. MD5 is broken
 * as a cryptographic hash: nothing in divan relies on it resisting an
 * attacker, and it must not be used where that matters.
 *
 * Streaming: init once, update with any number of pieces of any size, final
 * once. The result depends only on the concatenation of the pieces. Nothing
 * allocates and nothing can fail; a context is a plain struct that may live
 * on the stack and be copied (to digest a common prefix once).
 */
#ifndef DV_MD5_H
#define DV_MD5_H

#include <stddef.h>
#include <stdint.h>

#define DV_MD5_LEN 16 /* bytes of a digest */

typedef struct dv_md5 {
  uint32_t h[4];   /* chaining state A, B, C, D */
  uint64_t n;      /* bytes fed so far (the length appended by final) */
  uint8_t buf[64]; /* the unprocessed tail of the input, n % 64 bytes */
} dv_md5;

/* Start a digest. */
void dv_md5_init(dv_md5 *c);
/* Feed n bytes at p (p may be NULL when n is 0). */
void dv_md5_update(dv_md5 *c, const void *p, size_t n);
/* Pad, write the 16-byte digest to out. c must be re-initialised before
 * it is used again. */
void dv_md5_final(dv_md5 *c, uint8_t out[DV_MD5_LEN]);

#endif
