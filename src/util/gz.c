/* gz.c — gzip streams over zlib (see gz.h). */
#include "util/gz.h"

#include <string.h>
#include <zlib.h>

#include "util/alloc.h"
#include "util/err.h"

struct dv_gz {
  z_stream zs;      /* zlib's state */
  int encode;       /* 1: deflate, 0: inflate */
  int ended;        /* decoding: the member's end was seen */
  uint64_t max_out; /* decoding: cap on output (0 = none) */
  uint64_t total;   /* output so far */
  uint8_t out[DV_GZ_OUT];
};

static void *zalloc(void *op, uInt n, uInt m) {
  (void)op;
  return dv_calloc(n, m);
}
static void zfree(void *op, void *p) {
  (void)op;
  dv_free(p);
}

int dv_gz_open(int encode, int level, uint64_t max_out, dv_gz **out) {
  dv_gz *z = dv_calloc(1, sizeof *z);
  if (!z) return DV_ENOMEM;
  z->encode = encode;
  z->max_out = max_out;
  z->zs.zalloc = zalloc;
  z->zs.zfree = zfree;
  /* windowBits 15 + 16: a gzip wrapper, not zlib's */
  int zr = encode ? deflateInit2(&z->zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY)
                  : inflateInit2(&z->zs, 15 + 16);
  if (zr != Z_OK) {
    dv_free(z);
    return DV_ENOMEM;
  }
  *out = z;
  return 0;
}

uint64_t dv_gz_total_out(const dv_gz *z) { return z->total; }

/* Hand out what zlib wrote to z->out. */
static int drain(dv_gz *z, dv_gz_out cb, void *arg) {
  size_t n = sizeof z->out - z->zs.avail_out;
  if (!n) return 0;
  z->total += n;
  if (!z->encode && z->max_out && z->total > z->max_out) return DV_ERANGE;
  int rc = cb(arg, z->out, n);
  z->zs.next_out = z->out;
  z->zs.avail_out = sizeof z->out;
  return rc;
}

int dv_gz_write(dv_gz *z, const void *in, size_t n, int last, dv_gz_out cb, void *arg) {
  const uint8_t *p = in;
  z->zs.next_out = z->out;
  z->zs.avail_out = sizeof z->out;
  do { /* zlib counts input in uInt: feed at most 1 GiB at a time */
    size_t take = n > (1u << 30) ? (1u << 30) : n;
    int fin = last && take == n;
    z->zs.next_in = (Bytef *)(uintptr_t)p;
    z->zs.avail_in = (uInt)take;
    p += take;
    n -= take;
    for (;;) {
      if (!z->encode && z->ended) {
        if (z->zs.avail_in) return DV_EINVAL; /* bytes after the member */
        break;
      }
      int zr = z->encode ? deflate(&z->zs, fin ? Z_FINISH : Z_NO_FLUSH) : inflate(&z->zs, Z_NO_FLUSH);
      if (zr == Z_STREAM_END) {
        if (!z->encode) z->ended = 1;
        int rc = drain(z, cb, arg);
        if (rc) return rc;
        if (z->encode) return 0;
        continue;
      }
      if (zr == Z_BUF_ERROR) { /* no progress possible: needs input (or output room) */
        int rc = drain(z, cb, arg);
        if (rc) return rc;
        if (z->zs.avail_in == 0) break;
        continue;
      }
      if (zr != Z_OK) return zr == Z_MEM_ERROR ? DV_ENOMEM : DV_EINVAL;
      if (z->zs.avail_out == 0) {
        int rc = drain(z, cb, arg);
        if (rc) return rc;
        continue;
      }
      if (z->zs.avail_in == 0 && !(z->encode && fin)) break;
    }
  } while (n);
  int rc = drain(z, cb, arg);
  if (rc) return rc;
  if (last && !z->encode && !z->ended) return DV_EINVAL; /* truncated */
  return 0;
}

void dv_gz_close(dv_gz *z) {
  if (!z) return;
  if (z->encode) deflateEnd(&z->zs);
  else inflateEnd(&z->zs);
  dv_free(z);
}

static int to_buf(void *arg, const uint8_t *p, size_t n) {
  dv_buf *b = arg;
  buf_append(b, p, n);
  return buf_error(b) ? DV_ENOMEM : 0;
}

static int one_shot(int encode, const void *in, size_t n, int level, uint64_t max_out, dv_buf *out) {
  dv_gz *z;
  int rc = dv_gz_open(encode, level, max_out, &z);
  if (rc) return rc;
  rc = dv_gz_write(z, in, n, 1, to_buf, out);
  dv_gz_close(z);
  return rc;
}

int dv_gz_encode(const void *in, size_t n, int level, dv_buf *out) { return one_shot(1, in, n, level, 0, out); }

int dv_gz_decode(const void *in, size_t n, uint64_t max_out, dv_buf *out) {
  return one_shot(0, in, n, 0, max_out, out);
}
