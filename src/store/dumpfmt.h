/* dumpfmt.h — the dump file format (`divan dump` / `divan load`, dump.h):
 * its writer and its reader, with no store or kv below them (the fuzz
 * target links this file alone).
 *
 * File:
 *   "DIVANDMP"                     8 bytes of magic
 *   version                        u16 big-endian (DUMP_VERSION = 2; a
 *                                  reader refuses a newer one and reads
 *                                  version 1: its header has no id and no
 *                                  uuid, and it has no 'C' records)
 *   block*                         until the end of the file
 * Block:
 *   ulen  u32 BE                   uncompressed bytes, 1..DUMP_BLOCK_MAX
 *   clen  u32 BE                   compressed bytes, 1..compressBound(ulen)
 *   crc   u32 BE                   CRC-32 (zlib's) of the uncompressed bytes
 *   clen bytes                     zlib (RFC 1950 deflate) of ulen bytes
 * The uncompressed bytes of a block are whole records (a record never
 * spans two blocks). Records, each a tag byte then its fields; varint =
 * unsigned LEB128, at most 10 bytes; bytes = varint length + the bytes:
 *   'H' name:bytes inc:varint id:16 uuid:16
 *                                  header: the source database's name,
 *                                  Incarnation and DbUUID, and the dump's
 *                                  id (random; a resumed dump keeps it);
 *                                  the first record, once
 *   'K' key:bytes value:bytes      one KV, key with the database's prefix
 *                                  P = (R,1,DbPrefix) stripped
 *   'D' id:bytes                   replace document: the K records up to
 *                                  'E' are all of the document's current
 *                                  KVs ("r", "d", "a" rows, its changes row)
 *   'E'                            end of a replace-document group
 *   'S' sub:1 byte                 section: the K records until the next
 *                                  'S', 'D' or 'T' are all of subspace
 *                                  (P,sub) — the loader clears it first
 *   'C' round:varint s0:bytes q0:varint at:bytes qat:varint
 *                                  checkpoint: a place the dump can start
 *                                  again from (dump.c), every record
 *                                  before it being applied: round 0 is
 *                                  the full pass, started at update_seq
 *                                  s0 (a Sequence, packed as a tuple) and
 *                                  purge_seq q0, going on at key `at`
 *                                  (prefix stripped; empty: the start);
 *                                  round r > 0 is a catch-up round of
 *                                  changes rows after Sequence `at` and
 *                                  purge infos after purge_seq qat. The
 *                                  writer ends the block after it, so a
 *                                  file cut anywhere keeps every
 *                                  checkpoint before the cut whole
 *   'T' kvs docs bytes:varint crc:u32 BE   trailer: K records, D records,
 *                                  record bytes before the trailer, and the
 *                                  CRC-32 of those bytes; the last record of
 *                                  the last block, then the end of the file
 * Limits (the reader's): a name <= 255 bytes, a key <= 10,000 bytes, a
 * value <= 100,000 bytes (kv's), a document id <= 4096 bytes, a
 * checkpoint's Sequence <= 64 bytes and its key <= 10,001.
 *
 * Version 2 (the header's id and uuid, 'C') because version-1 files were
 * written by earlier builds: read under the same number, their header
 * would run into the next record. Nothing else changed, so version 1 is
 * still read (it cannot be resumed: it has no checkpoints).
 *
 * Resuming a file (dump_scan, dump_w_continue): the complete blocks with
 * good CRCs from the start are read; the file is cut after the last of
 * them that ends with a 'C'; the writer goes on after it with the counts,
 * record bytes and CRC of what was kept, so the trailer covers the whole
 * file.
 */
#ifndef DV_STORE_DUMPFMT_H
#define DV_STORE_DUMPFMT_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/err.h"

#define DUMP_MAGIC "DIVANDMP"
#define DUMP_VERSION 2
#define DUMP_ID_LEN 16              /* the header's dump id and DbUUID */
#define DUMP_SEQ_MAX 64             /* a checkpoint's packed Sequence */
#define DUMP_AT_MAX 10001           /* a checkpoint's key: a key + 0x00 */
#define DUMP_BLOCK (256u << 10)     /* the writer's block: flush past this */
#define DUMP_BLOCK_MAX (1u << 20)   /* the largest block a reader takes */

enum {
  DUMP_HEADER = 'H',
  DUMP_KV = 'K',
  DUMP_DOC = 'D',
  DUMP_DOC_END = 'E',
  DUMP_SECTION = 'S',
  DUMP_CKPT = 'C',
  DUMP_TRAILER = 'T',
};

/* Where the writer's bytes go: 0 or an error to stop with. */
typedef int (*dump_out_fn)(void *arg, const uint8_t *p, size_t n);
/* Where the reader's bytes come from: bytes read (< n only at the end),
 * 0 at the end, or a negative error. */
typedef long (*dump_in_fn)(void *arg, uint8_t *p, size_t n);

/* A checkpoint ('C'); pointers into a record's bytes. */
typedef struct dump_ckpt {
  uint64_t round;       /* 0: the full pass; r: catch-up round r */
  const uint8_t *s0;    /* update_seq at the full pass's start, packed */
  size_t s0_len;
  uint64_t q0;          /* purge_seq then */
  const uint8_t *at;    /* round 0: the next key; round r: the Sequence after which */
  size_t at_len;
  uint64_t qat;         /* round r: the purge_seq after which */
} dump_ckpt;

typedef struct dump_w {
  dump_out_fn out;
  void *arg;
  dv_buf blk;           /* the block being filled */
  dv_buf z;             /* its compressed form */
  uint32_t crc;         /* over every record byte so far */
  uint64_t kvs, docs, bytes;
  int err;              /* first error (sticky) */
} dump_w;

/* Where a cut file goes on (dump_scan), or where a dump resumes. */
typedef struct dump_cont {
  uint64_t off;                 /* bytes of the file kept: up to the end of ck's block */
  uint64_t kvs, docs, bytes;    /* the writer's counts there */
  uint32_t crc;                 /* and its CRC over the record bytes */
  char name[256];               /* the header's */
  int64_t inc;
  uint8_t id[DUMP_ID_LEN], uuid[DUMP_ID_LEN];
  dv_buf ck;                    /* the last checkpoint record, 'C' and its fields */
  int complete;                 /* dump_scan: the file ends with its trailer */
} dump_cont;

/* Start a file (magic and version go out now). */
int dump_w_open(dump_w *w, dump_out_fn out, void *arg) DV_MUST_CHECK;
/* Go on with a file cut at c->off (nothing goes out now): the counts,
 * record bytes and CRC start at c's. */
void dump_w_continue(dump_w *w, dump_out_fn out, void *arg, const dump_cont *c);
/* Append records (errors are sticky and come back from dump_w_finish). */
void dump_w_header(dump_w *w, const char *name, size_t len, int64_t inc, const uint8_t id[DUMP_ID_LEN],
                   const uint8_t uuid[DUMP_ID_LEN]);
/* A checkpoint, then the block goes out. */
void dump_w_ckpt(dump_w *w, const dump_ckpt *ck);
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
  uint8_t id[DUMP_ID_LEN], uuid[DUMP_ID_LEN]; /* H (zeros in version 1) */
  dump_ckpt ck;      /* C */
  uint64_t kvs, docs, bytes; /* T */
  const uint8_t *raw; /* the record's bytes, tag first */
  size_t raw_len;
} dump_rec;

typedef struct dump_r {
  dump_in_fn in;
  void *arg;
  uint8_t *blk;          /* the current block, uncompressed */
  size_t len, pos;
  uint8_t *z;            /* compressed input */
  uint32_t crc;
  uint64_t kvs, docs, bytes;
  uint64_t off;          /* bytes read from in */
  int seen_header, done;
  int in_err;            /* the error came from in, not from the file's bytes */
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

/* A checkpoint record's bytes (dump_rec.raw of a 'C', dump_cont.ck) into
 * *ck, pointing into them: 0 or DV_ECORRUPT. */
int dump_ckpt_parse(const uint8_t *p, size_t n, dump_ckpt *ck) DV_MUST_CHECK;

/* Read a dump file cut anywhere (or damaged past some point) from in,
 * for dump_w_continue: c (buf_init'ed ck) gets the header and the state
 * after the last complete, good block ending with a checkpoint, or
 * c->complete when the file is whole. 0, or DV_ENOTSUP (a newer version,
 * or version 1: no checkpoints), DV_ECORRUPT (not a dump, or no
 * checkpoint in its good part), in's error; *why gets a reason. */
int dump_scan(dump_in_fn in, void *arg, dump_cont *c, const char **why) DV_MUST_CHECK;

#endif
