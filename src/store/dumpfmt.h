/* dumpfmt.h — the dump file format (`divan dump` / `divan load`, dump.h):
 * its writer and its reader, with no store or kv below them (the fuzz
 * target links this file alone).
 *
 * File:
 *   "DIVANDMP"                     8 bytes of magic
 *   version                        u16 big-endian (DUMP_VERSION; a reader
 *                                  refuses a newer one)
 *   block*                         until the end of the file
 * Block:
 *   ulen  u32 BE                   uncompressed bytes, 1..DUMP_BLOCK_MAX
 *   clen  u32 BE                   compressed bytes, 1..compressBound(ulen)
 *   crc   u32 BE                   CRC-32 (zlib's) of the uncompressed bytes
 *   clen bytes                     zlib (RFC 1950 deflate) of ulen bytes
 * The uncompressed bytes of a block are whole records (a record never
 * spans two blocks). Records, each a tag byte then its fields; varint =
 * unsigned LEB128, at most 10 bytes; bytes = varint length + the bytes:
 *   'H' name:bytes inc:varint      header: the source database's name and
 *                                  Incarnation; the first record, once
 *   'K' key:bytes value:bytes      one KV, key with the database's prefix
 *                                  P = (R,1,DbPrefix) stripped
 *   'D' id:bytes                   replace document: the K records up to
 *                                  'E' are all of the document's current
 *                                  KVs ("r", "d", "a" rows, its changes row)
 *   'E'                            end of a replace-document group
 *   'S' sub:1 byte                 section: the K records until the next
 *                                  'S', 'D' or 'T' are all of subspace
 *                                  (P,sub) — the loader clears it first
 *   'T' kvs docs bytes:varint crc:u32 BE   trailer: K records, D records,
 *                                  record bytes before the trailer, and the
 *                                  CRC-32 of those bytes; the last record of
 *                                  the last block, then the end of the file
 * Limits (the reader's): a name <= 255 bytes, a key <= 10,000 bytes, a
 * value <= 100,000 bytes (kv's), a document id <= 4096 bytes.
 */
#ifndef DV_STORE_DUMPFMT_H
#define DV_STORE_DUMPFMT_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/err.h"

#define DUMP_MAGIC "DIVANDMP"
#define DUMP_VERSION 1
#define DUMP_BLOCK (256u << 10)     /* the writer's block: flush past this */
#define DUMP_BLOCK_MAX (1u << 20)   /* the largest block a reader takes */

enum {
  DUMP_HEADER = 'H',
  DUMP_KV = 'K',
  DUMP_DOC = 'D',
  DUMP_DOC_END = 'E',
  DUMP_SECTION = 'S',
  DUMP_TRAILER = 'T',
};

/* Where the writer's bytes go: 0 or an error to stop with. */
typedef int (*dump_out_fn)(void *arg, const uint8_t *p, size_t n);
/* Where the reader's bytes come from: bytes read (< n only at the end),
 * 0 at the end, or a negative error. */
typedef long (*dump_in_fn)(void *arg, uint8_t *p, size_t n);

typedef struct dump_w {
  dump_out_fn out;
  void *arg;
  dv_buf blk;           /* the block being filled */
  dv_buf z;             /* its compressed form */
  uint32_t crc;         /* over every record byte so far */
  uint64_t kvs, docs, bytes;
  int err;              /* first error (sticky) */
} dump_w;

/* Start a file (magic and version go out now). */
int dump_w_open(dump_w *w, dump_out_fn out, void *arg) DV_MUST_CHECK;
/* Append records (errors are sticky and come back from dump_w_finish). */
void dump_w_header(dump_w *w, const char *name, size_t len, int64_t inc);
void dump_w_kv(dump_w *w, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl);
void dump_w_doc(dump_w *w, const char *id, size_t len);
void dump_w_doc_end(dump_w *w);
void dump_w_section(dump_w *w, char sub);
/* The trailer and the last block; the first error of any call. */
int dump_w_finish(dump_w *w) DV_MUST_CHECK;
void dump_w_free(dump_w *w);

/* One record as read; pointers into the reader's block, valid until the
 * next dump_r_next. */
typedef struct dump_rec {
  int tag;
  const uint8_t *a;  /* H: name; K: key; D: id; S: the sub byte */
  size_t a_len;
  const uint8_t *b;  /* K: value */
  size_t b_len;
  int64_t inc;       /* H */
  uint64_t kvs, docs, bytes; /* T */
} dump_rec;

typedef struct dump_r {
  dump_in_fn in;
  void *arg;
  uint8_t *blk;          /* the current block, uncompressed */
  size_t len, pos;
  uint8_t *z;            /* compressed input */
  uint32_t crc;
  uint64_t kvs, docs, bytes;
  int seen_header, done;
  int version;           /* the file's */
  const char *why;       /* a one-line reason after an error */
} dump_r;

/* Read the magic and version: 0, or DV_ECORRUPT (not a dump) / DV_ENOTSUP
 * (a newer version) / the input's error, with r->why. */
int dump_r_open(dump_r *r, dump_in_fn in, void *arg) DV_MUST_CHECK;
/* The next record: 1 (*out filled), 0 after the trailer once every count
 * and the checksum matched and the input ended, or an error with r->why:
 * DV_ECORRUPT (damaged, truncated), DV_ENOMEM, the input's error. */
int dump_r_next(dump_r *r, dump_rec *out) DV_MUST_CHECK;
void dump_r_free(dump_r *r);

#endif
