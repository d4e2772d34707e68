/* dumpfmt.c — the dump file's writer and reader (dumpfmt.h has the
 * format). The writer fills a block of whole records, compresses it with
 * zlib and hands it out; the reader takes one block at a time, checks its
 * sizes and CRC, and hands out its records, so both hold one block. */
#include <string.h>
#include <zlib.h>

#include "store/dumpfmt.h"
#include "util/alloc.h"

#define NAME_MAX_ 255
#define KEY_MAX_ 10000
#define VAL_MAX_ 100000
#define ID_MAX_ 4096

static void be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}
static uint32_t get_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- writer ---------------------------------------------------------------- */

static void put_varint(dv_buf *b, uint64_t v) {
  while (v >= 0x80) buf_putc(b, (uint8_t)(v | 0x80)), v >>= 7;
  buf_putc(b, (uint8_t)v);
}

static int flush_block(dump_w *w) {
  if (w->err || !w->blk.len) return w->err;
  uLong bound = compressBound(w->blk.len);
  buf_reset(&w->z);
  if (buf_reserve(&w->z, 12 + bound)) return w->err = DV_ENOMEM;
  uint8_t *h = w->z.p;
  uLongf clen = bound;
  if (compress2(h + 12, &clen, w->blk.p, w->blk.len, 6) != Z_OK) return w->err = DV_ENOMEM;
  be32(h, (uint32_t)w->blk.len);
  be32(h + 4, (uint32_t)clen);
  be32(h + 8, (uint32_t)crc32(0, w->blk.p, (uInt)w->blk.len));
  int rc = w->out(w->arg, h, 12 + clen);
  buf_reset(&w->blk);
  return w->err = rc;
}

/* Start a record of at most n bytes: a new block when it would not fit. */
static size_t rec_begin(dump_w *w, size_t n) {
  if (w->blk.len && w->blk.len + n > DUMP_BLOCK) flush_block(w);
  return w->blk.len;
}
static void rec_end(dump_w *w, size_t at) {
  if (buf_error(&w->blk)) {
    if (!w->err) w->err = DV_ENOMEM;
    return;
  }
  w->crc = (uint32_t)crc32(w->crc, w->blk.p + at, (uInt)(w->blk.len - at));
  w->bytes += w->blk.len - at;
}

int dump_w_open(dump_w *w, dump_out_fn out, void *arg) {
  memset(w, 0, sizeof *w);
  w->out = out;
  w->arg = arg;
  buf_init(&w->blk);
  buf_init(&w->z);
  w->crc = (uint32_t)crc32(0, NULL, 0);
  uint8_t h[10];
  memcpy(h, DUMP_MAGIC, 8);
  h[8] = DUMP_VERSION >> 8, h[9] = DUMP_VERSION & 0xff;
  return w->err = out(arg, h, 10);
}

void dump_w_continue(dump_w *w, dump_out_fn out, void *arg, const dump_cont *c) {
  memset(w, 0, sizeof *w);
  w->out = out;
  w->arg = arg;
  buf_init(&w->blk);
  buf_init(&w->z);
  w->crc = c->crc;
  w->kvs = c->kvs, w->docs = c->docs, w->bytes = c->bytes;
}

void dump_w_header(dump_w *w, const char *name, size_t len, int64_t inc, const uint8_t id[DUMP_ID_LEN],
                   const uint8_t uuid[DUMP_ID_LEN]) {
  size_t at = rec_begin(w, len + 32 + 2 * DUMP_ID_LEN);
  buf_putc(&w->blk, DUMP_HEADER);
  put_varint(&w->blk, len);
  buf_append(&w->blk, name, len);
  put_varint(&w->blk, (uint64_t)inc);
  buf_append(&w->blk, id, DUMP_ID_LEN);
  buf_append(&w->blk, uuid, DUMP_ID_LEN);
  rec_end(w, at);
}

void dump_w_ckpt(dump_w *w, const dump_ckpt *ck) {
  size_t at = rec_begin(w, ck->s0_len + ck->at_len + 60);
  buf_putc(&w->blk, DUMP_CKPT);
  put_varint(&w->blk, ck->round);
  put_varint(&w->blk, ck->s0_len);
  buf_append(&w->blk, ck->s0, ck->s0_len);
  put_varint(&w->blk, ck->q0);
  put_varint(&w->blk, ck->at_len);
  buf_append(&w->blk, ck->at, ck->at_len);
  put_varint(&w->blk, ck->qat);
  rec_end(w, at);
  flush_block(w);
}

void dump_w_kv(dump_w *w, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl) {
  size_t at = rec_begin(w, kl + vl + 21);
  buf_putc(&w->blk, DUMP_KV);
  put_varint(&w->blk, kl);
  buf_append(&w->blk, k, kl);
  put_varint(&w->blk, vl);
  buf_append(&w->blk, v, vl);
  rec_end(w, at);
  w->kvs++;
}

void dump_w_doc(dump_w *w, const char *id, size_t len) {
  size_t at = rec_begin(w, len + 11);
  buf_putc(&w->blk, DUMP_DOC);
  put_varint(&w->blk, len);
  buf_append(&w->blk, id, len);
  rec_end(w, at);
  w->docs++;
}

void dump_w_doc_end(dump_w *w) {
  size_t at = rec_begin(w, 1);
  buf_putc(&w->blk, DUMP_DOC_END);
  rec_end(w, at);
}

void dump_w_section(dump_w *w, char sub) {
  size_t at = rec_begin(w, 2);
  buf_putc(&w->blk, DUMP_SECTION);
  buf_putc(&w->blk, (uint8_t)sub);
  rec_end(w, at);
}

int dump_w_finish(dump_w *w) {
  rec_begin(w, 40);
  buf_putc(&w->blk, DUMP_TRAILER);
  put_varint(&w->blk, w->kvs);
  put_varint(&w->blk, w->docs);
  put_varint(&w->blk, w->bytes);
  uint8_t c[4];
  be32(c, w->crc);
  buf_append(&w->blk, c, 4);
  if (buf_error(&w->blk) && !w->err) w->err = DV_ENOMEM;
  return flush_block(w);
}

void dump_w_free(dump_w *w) {
  buf_free(&w->blk);
  buf_free(&w->z);
}

/* ---- reader ---------------------------------------------------------------- */

static int fail(dump_r *r, int rc, const char *why) {
  r->why = why;
  return rc;
}

/* Read exactly n bytes: 1, 0 at a clean end (nothing read), or an error. */
static int read_full(dump_r *r, uint8_t *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    long k = r->in(r->arg, p + got, n - got);
    if (k < 0) {
      r->in_err = 1;
      return fail(r, (int)k, "the dump could not be read");
    }
    if (k == 0) break;
    got += (size_t)k;
    r->off += (uint64_t)k;
  }
  if (got == n) return 1;
  if (got == 0) return 0;
  return fail(r, DV_ECORRUPT, "the dump file is truncated");
}

int dump_r_open(dump_r *r, dump_in_fn in, void *arg) {
  memset(r, 0, sizeof *r);
  r->in = in;
  r->arg = arg;
  r->crc = (uint32_t)crc32(0, NULL, 0);
  uint8_t h[10];
  int rc = read_full(r, h, 10);
  if (rc < 0) return r->why && rc != DV_ECORRUPT ? rc : fail(r, DV_ECORRUPT, "not a divan dump file (too short)");
  if (rc == 0 || memcmp(h, DUMP_MAGIC, 8)) return fail(r, DV_ECORRUPT, "not a divan dump file (no DIVANDMP magic)");
  r->version = h[8] << 8 | h[9];
  if (r->version > DUMP_VERSION)
    return fail(r, DV_ENOTSUP, "the dump's format version is newer than this divan reads (it reads versions 1 and 2)");
  if (r->version < 1) return fail(r, DV_ECORRUPT, "the dump's format version is 0: not a divan dump");
  return 0;
}

static int next_block(dump_r *r) {
  uint8_t h[12];
  int rc = read_full(r, h, 12);
  if (rc < 0) return rc;
  if (rc == 0) return fail(r, DV_ECORRUPT, "the dump file is truncated (no trailer)");
  uint32_t ulen = get_be32(h), clen = get_be32(h + 4), crc = get_be32(h + 8);
  if (!ulen || ulen > DUMP_BLOCK_MAX || !clen || clen > compressBound(ulen))
    return fail(r, DV_ECORRUPT, "the dump file is damaged (a block's sizes are impossible)");
  if (!r->blk) {
    r->blk = dv_malloc(DUMP_BLOCK_MAX);
    r->z = dv_malloc(compressBound(DUMP_BLOCK_MAX));
    if (!r->blk || !r->z) return fail(r, DV_ENOMEM, "out of memory");
  }
  rc = read_full(r, r->z, clen);
  if (rc < 0) return rc;
  if (rc == 0) return fail(r, DV_ECORRUPT, "the dump file is truncated");
  uLongf out = ulen;
  if (uncompress(r->blk, &out, r->z, clen) != Z_OK || out != ulen)
    return fail(r, DV_ECORRUPT, "the dump file is damaged (a block does not decompress)");
  if ((uint32_t)crc32(0, r->blk, ulen) != crc) return fail(r, DV_ECORRUPT, "the dump file is damaged (a block's CRC)");
  r->len = ulen;
  r->pos = 0;
  return 1;
}

static int get_varint(dump_r *r, uint64_t *out) {
  uint64_t v = 0;
  for (int i = 0; i < 10; i++) {
    if (r->pos >= r->len) return -1;
    uint8_t c = r->blk[r->pos++];
    if (i == 9 && c > 1) return -1;
    v |= (uint64_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

static int get_bytes(dump_r *r, size_t max, const uint8_t **p, size_t *n) {
  uint64_t l;
  if (get_varint(r, &l) || l > max || l > r->len - r->pos) return -1;
  *p = r->blk + r->pos;
  *n = (size_t)l;
  r->pos += (size_t)l;
  return 0;
}

static int get_fixed(dump_r *r, uint8_t *out, size_t n) {
  if (n > r->len - r->pos) return -1;
  memcpy(out, r->blk + r->pos, n);
  r->pos += n;
  return 0;
}

/* A 'C' record's fields (after its tag). */
static int get_ckpt(dump_r *r, dump_ckpt *ck) {
  return get_varint(r, &ck->round) || get_bytes(r, DUMP_SEQ_MAX, &ck->s0, &ck->s0_len) || get_varint(r, &ck->q0) ||
                 get_bytes(r, DUMP_AT_MAX, &ck->at, &ck->at_len) || get_varint(r, &ck->qat)
             ? -1
             : 0;
}

int dump_ckpt_parse(const uint8_t *p, size_t n, dump_ckpt *ck) {
  dump_r r = {.blk = (uint8_t *)p, .len = n, .pos = 1};
  memset(ck, 0, sizeof *ck);
  return n < 1 || p[0] != DUMP_CKPT || get_ckpt(&r, ck) || r.pos != n ? DV_ECORRUPT : 0;
}

#define BAD fail(r, DV_ECORRUPT, "the dump file is damaged (a malformed record)")

int dump_r_next(dump_r *r, dump_rec *out) {
  if (r->done) return 0;
  if (r->pos >= r->len) {
    int rc = next_block(r);
    if (rc < 0) return rc;
  }
  size_t at = r->pos;
  memset(out, 0, sizeof *out);
  out->tag = r->blk[r->pos++];
  if (!r->seen_header && out->tag != DUMP_HEADER) return BAD;
  switch (out->tag) {
  case DUMP_HEADER: {
    uint64_t inc;
    if (r->seen_header || get_bytes(r, NAME_MAX_, &out->a, &out->a_len) || get_varint(r, &inc) ||
        inc > INT64_MAX)
      return BAD;
    if (r->version >= 2 && (get_fixed(r, out->id, DUMP_ID_LEN) || get_fixed(r, out->uuid, DUMP_ID_LEN))) return BAD;
    out->inc = (int64_t)inc;
    r->seen_header = 1;
    break;
  }
  case DUMP_KV:
    if (get_bytes(r, KEY_MAX_, &out->a, &out->a_len) || get_bytes(r, VAL_MAX_, &out->b, &out->b_len)) return BAD;
    r->kvs++;
    break;
  case DUMP_DOC:
    if (get_bytes(r, ID_MAX_, &out->a, &out->a_len)) return BAD;
    r->docs++;
    break;
  case DUMP_DOC_END:
    break;
  case DUMP_SECTION:
    if (r->pos >= r->len) return BAD;
    out->a = r->blk + r->pos++;
    out->a_len = 1;
    break;
  case DUMP_CKPT:
    if (r->version < 2 || get_ckpt(r, &out->ck)) return BAD;
    break;
  case DUMP_TRAILER: {
    if (get_varint(r, &out->kvs) || get_varint(r, &out->docs) || get_varint(r, &out->bytes) ||
        r->len - r->pos != 4)
      return BAD;
    uint32_t crc = get_be32(r->blk + r->pos);
    r->pos += 4;
    if (out->kvs != r->kvs || out->docs != r->docs || out->bytes != r->bytes || crc != r->crc)
      return fail(r, DV_ECORRUPT, "the dump file is damaged (its trailer's counts or checksum do not match)");
    uint8_t extra;
    int rc = read_full(r, &extra, 1);
    if (rc < 0) return rc;
    if (rc) return fail(r, DV_ECORRUPT, "the dump file has bytes after its trailer");
    r->done = 1;
    return 0;
  }
  default:
    return BAD;
  }
  r->crc = (uint32_t)crc32(r->crc, r->blk + at, (uInt)(r->pos - at));
  r->bytes += r->pos - at;
  out->raw = r->blk + at;
  out->raw_len = r->pos - at;
  return 1;
}

void dump_r_free(dump_r *r) {
  dv_free(r->blk);
  dv_free(r->z);
  r->blk = r->z = NULL;
}

/* ---- resuming a file ---------------------------------------------------------- */

int dump_scan(dump_in_fn in, void *arg, dump_cont *c, const char **why) {
  dv_buf ck = c->ck;
  memset(c, 0, sizeof *c);
  buf_reset(&ck);
  c->ck = ck;
  dump_r r;
  int rc = dump_r_open(&r, in, arg), found = 0, opened = !rc;
  if (!rc && r.version < 2) rc = fail(&r, DV_ENOTSUP, "the dump is of format version 1, which has no checkpoints");
  dump_rec rec;
  while (!rc && (rc = dump_r_next(&r, &rec)) == 1) {
    rc = 0;
    if (rec.tag == DUMP_HEADER) {
      memcpy(c->name, rec.a, rec.a_len);
      c->name[rec.a_len] = 0;
      c->inc = rec.inc;
      memcpy(c->id, rec.id, DUMP_ID_LEN);
      memcpy(c->uuid, rec.uuid, DUMP_ID_LEN);
    }
    if (rec.tag != DUMP_CKPT || r.pos != r.len) continue; /* a checkpoint that ends its block */
    c->off = r.off;
    c->kvs = r.kvs, c->docs = r.docs, c->bytes = r.bytes, c->crc = r.crc;
    buf_reset(&c->ck);
    buf_append(&c->ck, rec.raw, rec.raw_len);
    if (buf_error(&c->ck)) rc = fail(&r, DV_ENOMEM, "out of memory");
    found = 1;
  }
  if (rc == 0) c->complete = 1;
  else if (rc == DV_ECORRUPT && !r.in_err && opened && r.version >= 2) rc = 0; /* the cut, or damage: keep what came before */
  if (!rc && !c->complete && !found) rc = fail(&r, DV_ECORRUPT, "the dump has no checkpoint in its readable part");
  if (rc && why) *why = r.why;
  dump_r_free(&r);
  return rc;
}
