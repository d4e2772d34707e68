/* tuple.c — FoundationDB tuple layer codec; the format and the API are
 * described in tuple.h.
 *
 * Hot paths are the writer's integer and string appends and tup_next: the
 * writer reserves an element's bytes once and writes them in place (inline
 * when the buffer has room), the reader finds string terminators eight
 * bytes at a time (memchr past 32 bytes), checks UTF-8 eight ASCII bytes at
 * a time, loads integers with one unaligned load, and never allocates.
 * Skipping a nested tuple (to return it as one item) and tup_format walk
 * nesting with a depth counter, not recursion, so no input can exhaust the
 * stack.
 *
 * Not here: comparing decoded values (memcmp of encodings is the order),
 * the deprecated and reserved type codes, and key layout (store/).
 */
#include "tuple/tuple.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- byte helpers ------------------------------------------------------ */

static inline uint64_t load_be(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = (v << 8) | p[i];
  return v;
}

static inline void store_be(uint8_t *p, uint64_t v, size_t n) {
  for (size_t i = n; i > 0; i--) {
    p[i - 1] = (uint8_t)v;
    v >>= 8;
  }
}

/* Bytes needed for a non-zero magnitude: 1..8. */
static inline size_t mag_bytes(uint64_t mag) {
  return (size_t)(71 - __builtin_clzll(mag)) >> 3;
}

/* The first 0x00 in [q, end), or NULL. Keys hold short strings, where a
 * call to memchr costs more than the search: scan 8 bytes at a time inline
 * (SWAR zero-byte test; on little-endian the lowest flagged byte is the
 * first zero) and leave long strings to memchr. */
static inline const uint8_t *find_zero(const uint8_t *q, const uint8_t *end) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint8_t *stop = end - q > 32 ? q + 32 : end;
  for (; stop - q >= 8; q += 8) {
    uint64_t v;
    memcpy(&v, q, 8);
    uint64_t z = (v - 0x0101010101010101ULL) & ~v & 0x8080808080808080ULL;
    if (z) return q + (__builtin_ctzll(z) >> 3);
  }
  if (stop == end) {
    for (; q < end; q++)
      if (!*q) return q;
    return NULL;
  }
#endif
  return q < end ? memchr(q, 0, (size_t)(end - q)) : NULL;
}

/* 1 if s[0..n) is well-formed UTF-8 (RFC 3629; Unicode table 3-7). */
static int utf8_valid(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (n - i >= 8) {
      uint64_t v;
      memcpy(&v, s + i, 8);
      if (!(v & 0x8080808080808080ULL)) {
        i += 8;
        continue;
      }
    }
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
    } else if (c < 0xc2) {
      return 0; /* stray continuation byte or overlong 2-byte form */
    } else if (c < 0xe0) {
      if (n - i < 2 || (s[i + 1] & 0xc0) != 0x80) return 0;
      i += 2;
    } else if (c < 0xf0) {
      if (n - i < 3) return 0;
      uint8_t c1 = s[i + 1];
      if ((c1 & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80) return 0;
      if (c == 0xe0 && c1 < 0xa0) return 0; /* overlong */
      if (c == 0xed && c1 > 0x9f) return 0; /* UTF-16 surrogate */
      i += 3;
    } else if (c < 0xf5) {
      if (n - i < 4) return 0;
      uint8_t c1 = s[i + 1];
      if ((c1 & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80 ||
          (s[i + 3] & 0xc0) != 0x80)
        return 0;
      if (c == 0xf0 && c1 < 0x90) return 0; /* overlong */
      if (c == 0xf4 && c1 > 0x8f) return 0; /* above U+10FFFF */
      i += 4;
    } else {
      return 0;
    }
  }
  return 1;
}

/* ---- writing ----------------------------------------------------------- */

/* buf_extend with the common case inline: n (> 0) more bytes at the end of
 * b, NUL after them as dv_buf promises; NULL when out of memory. */
static inline uint8_t *grow(dv_buf *b, size_t n) {
  if (b->p && !b->oom && b->cap - b->len >= n) {
    uint8_t *d = b->p + b->len;
    b->len += n;
    b->p[b->len] = 0;
    return d;
  }
  return buf_extend(b, n);
}

static inline int w_rc(const tup_w *w) {
  return w->err ? w->err : w->b->oom ? DV_ENOMEM : 0;
}

static inline int w_fail(tup_w *w, int rc) {
  if (!w->err) w->err = rc;
  return w_rc(w);
}

void tup_w_init(tup_w *w, dv_buf *b) {
  w->b = b;
  w->depth = 0;
  w->vs_count = 0;
  w->vs_at = 0;
  w->err = 0;
}

int tup_w_finish(tup_w *w) {
  int rc = w_rc(w);
  if (rc) return rc;
  if (w->depth || w->vs_count) return DV_EINVAL;
  return 0;
}

int tup_w_finish_vs(tup_w *w) {
  int rc = w_rc(w);
  if (rc) return rc;
  if (w->depth || w->vs_count != 1) return DV_EINVAL;
  if (w->vs_at > UINT32_MAX) return DV_ERANGE;
  uint8_t *d = grow(w->b, 4);
  if (!d) return DV_ENOMEM;
  uint32_t at = (uint32_t)w->vs_at;
  d[0] = (uint8_t)at;
  d[1] = (uint8_t)(at >> 8);
  d[2] = (uint8_t)(at >> 16);
  d[3] = (uint8_t)(at >> 24);
  return 0;
}

int tup_null(tup_w *w) {
  if (w->depth) {
    uint8_t *d = grow(w->b, 2);
    if (d) {
      d[0] = 0x00;
      d[1] = 0xff;
    }
  } else {
    buf_putc_fast(w->b, 0x00);
  }
  return w_rc(w);
}

/* code, the bytes with 0x00 escaped as 0x00 0xFF, 0x00. */
static void put_escaped(dv_buf *b, uint8_t code, const uint8_t *p, size_t len) {
  const uint8_t *z = len ? memchr(p, 0, len) : NULL;
  if (!z) { /* the common case: one copy */
    uint8_t *d = grow(b, len + 2);
    if (!d) return;
    d[0] = code;
    if (len) memcpy(d + 1, p, len);
    d[len + 1] = 0x00;
    return;
  }
  if (buf_reserve(b, len + 3)) return;
  buf_putc_fast(b, code);
  const uint8_t *end = p + len;
  while (z) {
    buf_append(b, p, (size_t)(z - p) + 1);
    buf_putc(b, 0xff);
    p = z + 1;
    z = p < end ? memchr(p, 0, (size_t)(end - p)) : NULL;
  }
  buf_append(b, p, (size_t)(end - p));
  buf_putc(b, 0x00);
}

int tup_bytes(tup_w *w, const void *p, size_t len) {
  put_escaped(w->b, TUP_C_BYTES, p, len);
  return w_rc(w);
}

int tup_str(tup_w *w, const char *s, size_t len) {
  if (!utf8_valid((const uint8_t *)s, len)) return w_fail(w, DV_EINVAL);
  put_escaped(w->b, TUP_C_STR, (const uint8_t *)s, len);
  return w_rc(w);
}

int tup_strz(tup_w *w, const char *s) { return tup_str(w, s, strlen(s)); }

/* An integer of magnitude < 2^64 in the 0x0c..0x1c forms. */
static void put_int(dv_buf *b, int neg, uint64_t mag) {
  if (!mag) {
    buf_putc_fast(b, TUP_C_INT_ZERO);
    return;
  }
  size_t n = mag_bytes(mag);
  uint8_t *d = grow(b, n + 1);
  if (!d) return;
  d[0] = (uint8_t)(neg ? TUP_C_INT_ZERO - n : TUP_C_INT_ZERO + n);
  store_be(d + 1, neg ? ~mag : mag, n); /* low n bytes of ~mag: 1's complement */
}

int tup_int(tup_w *w, int64_t v) {
  if (v < 0)
    put_int(w->b, 1, 0 - (uint64_t)v);
  else
    put_int(w->b, 0, (uint64_t)v);
  return w_rc(w);
}

int tup_uint(tup_w *w, uint64_t v) {
  put_int(w->b, 0, v);
  return w_rc(w);
}

int tup_bigint(tup_w *w, int neg, const uint8_t *mag, size_t len) {
  while (len && !*mag) {
    mag++;
    len--;
  }
  if (len <= 8) {
    put_int(w->b, neg, load_be(mag, len));
    return w_rc(w);
  }
  if (len > TUP_BIGINT_MAX) return w_fail(w, DV_ERANGE);
  uint8_t *d = grow(w->b, len + 2);
  if (!d) return w_rc(w);
  if (neg) {
    d[0] = TUP_C_NEG_BIG;
    d[1] = (uint8_t)(len ^ 0xff);
    for (size_t i = 0; i < len; i++) d[i + 2] = (uint8_t)~mag[i];
  } else {
    d[0] = TUP_C_POS_BIG;
    d[1] = (uint8_t)len;
    memcpy(d + 2, mag, len);
  }
  return w_rc(w);
}

int tup_float(tup_w *w, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  u = (u & 0x80000000u) ? ~u : u ^ 0x80000000u;
  uint8_t *d = grow(w->b, 5);
  if (d) {
    d[0] = TUP_C_FLOAT;
    store_be(d + 1, u, 4);
  }
  return w_rc(w);
}

int tup_double(tup_w *w, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  u = (u >> 63) ? ~u : u ^ (1ULL << 63);
  uint8_t *d = grow(w->b, 9);
  if (d) {
    d[0] = TUP_C_DOUBLE;
    store_be(d + 1, u, 8);
  }
  return w_rc(w);
}

int tup_bool(tup_w *w, int v) {
  buf_putc_fast(w->b, v ? TUP_C_TRUE : TUP_C_FALSE);
  return w_rc(w);
}

static void put_fixed(dv_buf *b, uint8_t code, const uint8_t *p, size_t n) {
  uint8_t *d = grow(b, n + 1);
  if (d) {
    d[0] = code;
    memcpy(d + 1, p, n);
  }
}

int tup_uuid(tup_w *w, const uint8_t uuid[TUP_UUID_LEN]) {
  put_fixed(w->b, TUP_C_UUID, uuid, TUP_UUID_LEN);
  return w_rc(w);
}

int tup_vs(tup_w *w, const uint8_t vs[TUP_VS_LEN]) {
  put_fixed(w->b, TUP_C_VS, vs, TUP_VS_LEN);
  return w_rc(w);
}

int tup_vs_incomplete(tup_w *w, uint16_t user_version) {
  uint8_t *d = grow(w->b, 1 + TUP_VS_LEN);
  if (!d) return w_rc(w);
  d[0] = TUP_C_VS;
  memset(d + 1, 0xff, TUP_VS_TR_LEN);
  d[11] = (uint8_t)(user_version >> 8);
  d[12] = (uint8_t)user_version;
  w->vs_at = (size_t)(d + 1 - w->b->p);
  w->vs_count++;
  return w_rc(w);
}

int tup_nest_begin(tup_w *w) {
  if (w->depth == UINT32_MAX) return w_fail(w, DV_ERANGE);
  buf_putc_fast(w->b, TUP_C_NEST);
  w->depth++;
  return w_rc(w);
}

int tup_nest_end(tup_w *w) {
  if (!w->depth) return w_fail(w, DV_EINVAL);
  buf_putc_fast(w->b, 0x00);
  w->depth--;
  return w_rc(w);
}

/* ---- reading ----------------------------------------------------------- */

void tup_r_init(tup_r *r, const void *bytes, size_t len) {
  r->p = bytes;
  r->end = len ? r->p + len : r->p; /* NULL + 0 is undefined behaviour */
  r->nested = 0;
}

/* A byte or unicode string starting at its code p[0]. */
static int parse_string(const uint8_t *p, const uint8_t *end, tup_item *it,
                        int utf8) {
  const uint8_t *s = p + 1, *q = s;
  size_t escapes = 0;
  for (;;) {
    const uint8_t *z = find_zero(q, end);
    if (!z) return DV_ETUPLE; /* unterminated */
    /* A multi-byte sequence cannot straddle an escape (0x00 is not a
     * continuation byte), so the runs between escapes are checked alone. */
    if (utf8 && !utf8_valid(q, (size_t)(z - q))) return DV_ETUPLE;
    if (z + 1 < end && z[1] == 0xff) {
      escapes++;
      q = z + 2;
      continue;
    }
    it->s = s;
    it->s_enc_len = (size_t)(z - s);
    it->s_len = it->s_enc_len - escapes;
    it->raw_len = (size_t)(z + 1 - p);
    return 0;
  }
}

static inline void set_int_fits(tup_item *it) {
  it->fits = 0;
  if (it->mag_len > 8) return;
  uint64_t m = it->mag64;
  if (it->neg) {
    if (m <= (1ULL << 63)) {
      it->fits = TUP_FITS_I64;
      it->i64 = m == (1ULL << 63) ? INT64_MIN : -(int64_t)m;
    }
  } else {
    it->fits = TUP_FITS_U64;
    it->u64 = m;
    if (m <= (uint64_t)INT64_MAX) {
      it->fits |= TUP_FITS_I64;
      it->i64 = (int64_t)m;
    }
  }
}

/* A 0x0b or 0x1d integer. FDB's Python binding writes ±(2^64-1) with a
 * length of 8 (issue #1296); that one form is accepted, no other. */
static int parse_bigint(const uint8_t *p, size_t avail, tup_item *it) {
  int neg = p[0] == TUP_C_NEG_BIG;
  if (avail < 1) return DV_ETUPLE;
  size_t len = neg ? p[1] ^ 0xffu : p[1];
  if (avail - 1 < len) return DV_ETUPLE;
  const uint8_t *m = p + 2;
  uint8_t pad = neg ? 0xff : 0x00;  /* how a leading zero of |v| is encoded */
  uint8_t full = neg ? 0x00 : 0xff; /* how 0xFF of |v| is encoded */
  if (len < 9) {
    if (len != 8) return DV_ETUPLE;
    for (size_t i = 0; i < 8; i++)
      if (m[i] != full) return DV_ETUPLE;
  } else if (m[0] == pad) {
    return DV_ETUPLE; /* not the shortest form */
  }
  it->type = TUP_INT;
  it->neg = neg;
  it->mag = m;
  it->mag_len = len;
  it->mag64 = len == 8 ? UINT64_MAX : 0;
  it->raw_len = len + 2;
  set_int_fits(it);
  return 0;
}

/* Any element but null and nested tuples, starting at its code p[0]
 * (p < end). Fills it (type, raw_len and the type's fields). */
static int parse_scalar(const uint8_t *p, const uint8_t *end, tup_item *it) {
  uint8_t code = p[0];
  size_t avail = (size_t)(end - p) - 1; /* bytes after the code */
  switch (code) {
  case TUP_C_BYTES:
    it->type = TUP_BYTES;
    return parse_string(p, end, it, 0);
  case TUP_C_STR:
    it->type = TUP_STR;
    return parse_string(p, end, it, 1);
  case TUP_C_NEG_BIG:
  case TUP_C_POS_BIG:
    return parse_bigint(p, avail, it);
  case 0x0c ... 0x1c: {
    int neg = code < TUP_C_INT_ZERO;
    size_t n = neg ? (size_t)(TUP_C_INT_ZERO - code) : (size_t)(code - TUP_C_INT_ZERO);
    if (avail < n) return DV_ETUPLE;
    uint64_t v;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n && avail >= 8) { /* one unaligned load instead of n shifts */
      memcpy(&v, p + 1, 8);
      v = __builtin_bswap64(v) >> (64 - 8 * n);
    } else
#endif
      v = load_be(p + 1, n);
    if (n) {
      if (p[1] == (neg ? 0xff : 0x00)) return DV_ETUPLE; /* not the shortest */
      if (neg) v = ~v & (n == 8 ? UINT64_MAX : (1ULL << (8 * n)) - 1);
    }
    it->type = TUP_INT;
    it->neg = neg;
    it->mag = p + 1;
    it->mag_len = n;
    it->mag64 = v;
    it->raw_len = n + 1;
    set_int_fits(it);
    return 0;
  }
  case TUP_C_FLOAT: {
    if (avail < 4) return DV_ETUPLE;
    uint32_t u = (uint32_t)load_be(p + 1, 4);
    u = (u & 0x80000000u) ? u ^ 0x80000000u : ~u;
    it->type = TUP_FLOAT;
    memcpy(&it->f, &u, 4);
    it->raw_len = 5;
    return 0;
  }
  case TUP_C_DOUBLE: {
    if (avail < 8) return DV_ETUPLE;
    uint64_t u = load_be(p + 1, 8);
    u = (u >> 63) ? u ^ (1ULL << 63) : ~u;
    it->type = TUP_DOUBLE;
    memcpy(&it->d, &u, 8);
    it->raw_len = 9;
    return 0;
  }
  case TUP_C_FALSE:
  case TUP_C_TRUE:
    it->type = TUP_BOOL;
    it->b = code == TUP_C_TRUE;
    it->raw_len = 1;
    return 0;
  case TUP_C_UUID:
    if (avail < TUP_UUID_LEN) return DV_ETUPLE;
    it->type = TUP_UUID;
    it->fixed = p + 1;
    it->raw_len = 1 + TUP_UUID_LEN;
    return 0;
  case TUP_C_VS: {
    if (avail < TUP_VS_LEN) return DV_ETUPLE;
    it->type = TUP_VS;
    it->fixed = p + 1;
    int inc = 1;
    for (size_t i = 1; i <= TUP_VS_TR_LEN; i++) inc &= p[i] == 0xff;
    it->vs_incomplete = inc;
    it->vs_user = (uint16_t)((p[11] << 8) | p[12]);
    it->raw_len = 1 + TUP_VS_LEN;
    return 0;
  }
  default:
    return DV_ETUPLE;
  }
}

/* Validate the elements of a nested tuple whose 0x05 is at p[-1]; on
 * success *out_close is its terminating 0x00. Iterative: any depth. */
static int skip_nested(const uint8_t *p, const uint8_t *end,
                       const uint8_t **out_close) {
  size_t depth = 1;
  tup_item tmp;
  while (p < end) {
    uint8_t c = *p;
    if (c == 0x00) {
      if (p + 1 < end && p[1] == 0xff) { /* a null element */
        p += 2;
        continue;
      }
      if (--depth == 0) {
        *out_close = p;
        return 0;
      }
      p++;
    } else if (c == TUP_C_NEST) {
      depth++;
      p++;
    } else {
      int rc = parse_scalar(p, end, &tmp);
      if (rc) return rc;
      p += tmp.raw_len;
    }
  }
  return DV_ETUPLE; /* unterminated */
}

int tup_next(tup_r *r, tup_item *it) {
  const uint8_t *p = r->p, *end = r->end;
  if (p >= end) return 0;
  it->raw = p;
  uint8_t c = *p;
  if (c == 0x00) {
    if (r->nested) {
      /* A sub-reader's span ends before the terminator, so a bare 0x00
       * cannot occur; refuse it anyway rather than trust that. */
      if (p + 1 >= end || p[1] != 0xff) return DV_ETUPLE;
      it->raw_len = 2;
    } else {
      it->raw_len = 1;
    }
    it->type = TUP_NULL;
  } else if (c == TUP_C_NEST) {
    const uint8_t *close;
    int rc = skip_nested(p + 1, end, &close);
    if (rc) return rc;
    it->type = TUP_NEST;
    it->sub.p = p + 1;
    it->sub.end = close;
    it->sub.nested = 1;
    it->raw_len = (size_t)(close + 1 - p);
  } else {
    int rc = parse_scalar(p, end, it);
    if (rc) return rc;
  }
  r->p = p + it->raw_len;
  return 1;
}

int tup_get(tup_r *r, int type, tup_item *out) {
  tup_r save = *r;
  int rc = tup_next(r, out);
  if (rc < 0) return rc;
  if (rc == 0 || out->type != type) {
    *r = save;
    return DV_ETUPLE;
  }
  return 0;
}

int tup_validate(const void *bytes, size_t len) {
  tup_r r;
  tup_item it;
  int rc;
  tup_r_init(&r, bytes, len);
  while ((rc = tup_next(&r, &it)) == 1) {
  }
  return rc;
}

void tup_item_copy(const tup_item *it, uint8_t *out) {
  const uint8_t *p = it->s, *end = it->s + it->s_enc_len;
  if (it->s_len == it->s_enc_len) {
    if (it->s_len) memcpy(out, p, it->s_len);
    return;
  }
  while (p < end) {
    const uint8_t *z = memchr(p, 0, (size_t)(end - p));
    if (!z) z = end;
    else z++; /* keep the 0x00, skip the 0xFF after it */
    memcpy(out, p, (size_t)(z - p));
    out += z - p;
    p = z < end ? z + 1 : end;
  }
}

int tup_item_data(const tup_item *it, dv_buf *scratch, const uint8_t **out_p) {
  if (it->s_len == it->s_enc_len) {
    *out_p = it->s;
    return 0;
  }
  buf_reset(scratch);
  uint8_t *d = buf_extend(scratch, it->s_len);
  if (!d) return DV_ENOMEM;
  tup_item_copy(it, d);
  *out_p = d;
  return 0;
}

void tup_item_magnitude(const tup_item *it, uint8_t *out) {
  if (it->mag_len <= 8) { /* also covers the legacy 0x1d/0x0b length-8 form */
    store_be(out, it->mag64, it->mag_len);
    return;
  }
  for (size_t i = 0; i < it->mag_len; i++)
    out[i] = it->neg ? (uint8_t)~it->mag[i] : it->mag[i];
}

int tup_put_item(tup_w *w, const tup_item *it) {
  switch (it->type) {
  case TUP_NULL:
    return tup_null(w);
  case TUP_INT:
    if (it->mag_len <= 8) {
      put_int(w->b, it->neg, it->mag64);
      return w_rc(w);
    }
    break;
  case TUP_VS:
    if (it->vs_incomplete) return tup_vs_incomplete(w, it->vs_user);
    break;
  default:
    break;
  }
  buf_append(w->b, it->raw, it->raw_len);
  return w_rc(w);
}

/* ---- keys and ranges --------------------------------------------------- */

int tup_strinc(dv_buf *out, const void *key, size_t len) {
  const uint8_t *k = key;
  while (len && k[len - 1] == 0xff) len--;
  if (!len) return DV_EINVAL;
  uint8_t *d = buf_extend(out, len);
  if (!d) return DV_ENOMEM;
  memcpy(d, k, len);
  d[len - 1]++;
  return 0;
}

int tup_range(const void *prefix, size_t len, dv_buf *begin, dv_buf *end) {
  uint8_t *b = buf_extend(begin, len + 1), *e = buf_extend(end, len + 1);
  if (!b || !e) return DV_ENOMEM;
  if (len) {
    memcpy(b, prefix, len);
    memcpy(e, prefix, len);
  }
  b[len] = 0x00;
  e[len] = 0xff;
  return 0;
}

/* ---- inspection -------------------------------------------------------- */

static const char hexd[] = "0123456789abcdef";

static void fmt_hex(dv_buf *out, const uint8_t *p, size_t n) {
  uint8_t *d = buf_extend(out, 2 * n);
  if (!d) return;
  for (size_t i = 0; i < n; i++) {
    d[2 * i] = (uint8_t)hexd[p[i] >> 4];
    d[2 * i + 1] = (uint8_t)hexd[p[i] & 15];
  }
}

/* Quoted text; is_str keeps UTF-8 (already validated) readable. */
static void fmt_quoted(dv_buf *out, const tup_item *it, int is_str) {
  const uint8_t *p = it->s, *end = it->s + it->s_enc_len;
  if (!is_str) buf_putc(out, 'b');
  buf_putc(out, '"');
  while (p < end) {
    uint8_t c = *p++;
    if (c == 0x00) p++; /* the 0xFF of an escape */
    if (c == '"' || c == '\\') {
      buf_putc(out, '\\');
      buf_putc(out, c);
    } else if (c < 0x20 || c == 0x7f || (!is_str && c >= 0x80)) {
      char e[4] = {'\\', 'x', hexd[c >> 4], hexd[c & 15]};
      buf_append(out, e, 4);
    } else {
      buf_putc_fast(out, c);
    }
  }
  buf_putc(out, '"');
}

/* Decimal digits of a big-endian magnitude of up to 255 bytes. */
static void fmt_decimal(dv_buf *out, const uint8_t *mag, size_t n) {
  uint8_t num[TUP_BIGINT_MAX];
  uint32_t chunk[80]; /* base 1e9 digits, least significant first */
  size_t nchunk = 0, start = 0;
  memcpy(num, mag, n);
  while (start < n && !num[start]) start++;
  if (start == n) {
    buf_putc(out, '0');
    return;
  }
  while (start < n) {
    uint64_t rem = 0;
    for (size_t i = start; i < n; i++) {
      uint64_t cur = (rem << 8) | num[i];
      num[i] = (uint8_t)(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    chunk[nchunk++] = (uint32_t)rem;
    while (start < n && !num[start]) start++;
  }
  buf_printf(out, "%u", chunk[nchunk - 1]);
  for (size_t i = nchunk - 1; i-- > 0;) buf_printf(out, "%09u", chunk[i]);
}

/* Shortest %g form that reads back to the same value; always shows it is
 * a floating-point number ("1.0", not "1"). */
static void fmt_real(dv_buf *out, double v, int is_float, uint64_t bits,
                     uint64_t quiet_nan) {
  char s[40];
  if (isnan(v)) {
    uint64_t sign = is_float ? 1ULL << 31 : 1ULL << 63;
    if ((bits & ~sign) != quiet_nan)
      snprintf(s, sizeof s, "nan(0x%0*llx)", is_float ? 8 : 16,
               (unsigned long long)bits);
    else
      snprintf(s, sizeof s, "%snan", (bits & sign) ? "-" : "");
  } else if (isinf(v)) {
    snprintf(s, sizeof s, "%sinf", v < 0 ? "-" : "");
  } else {
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(s, sizeof s, "%.*g", prec, v);
      if (is_float ? strtof(s, NULL) == (float)v : strtod(s, NULL) == v) break;
    }
    if (!strpbrk(s, ".e")) strcat(s, ".0");
  }
  buf_puts(out, s);
}

static void fmt_item(dv_buf *out, const tup_item *it) {
  switch (it->type) {
  case TUP_BYTES:
    fmt_quoted(out, it, 0);
    break;
  case TUP_STR:
    fmt_quoted(out, it, 1);
    break;
  case TUP_INT: {
    uint8_t mag[TUP_BIGINT_MAX];
    if (it->neg) buf_putc(out, '-');
    if (it->mag_len <= 8) {
      buf_printf(out, "%llu", (unsigned long long)it->mag64);
    } else {
      tup_item_magnitude(it, mag);
      fmt_decimal(out, mag, it->mag_len);
    }
    break;
  }
  case TUP_FLOAT: {
    uint32_t u;
    memcpy(&u, &it->f, 4);
    buf_puts(out, "float(");
    fmt_real(out, it->f, 1, u, 0x7fc00000u);
    buf_putc(out, ')');
    break;
  }
  case TUP_DOUBLE: {
    uint64_t u;
    memcpy(&u, &it->d, 8);
    fmt_real(out, it->d, 0, u, 0x7ff8000000000000ULL);
    break;
  }
  case TUP_BOOL:
    buf_puts(out, it->b ? "true" : "false");
    break;
  case TUP_UUID: {
    const uint8_t *u = it->fixed;
    buf_puts(out, "uuid(");
    fmt_hex(out, u, 4);
    buf_putc(out, '-');
    fmt_hex(out, u + 4, 2);
    buf_putc(out, '-');
    fmt_hex(out, u + 6, 2);
    buf_putc(out, '-');
    fmt_hex(out, u + 8, 2);
    buf_putc(out, '-');
    fmt_hex(out, u + 10, 6);
    buf_putc(out, ')');
    break;
  }
  case TUP_VS:
    if (it->vs_incomplete) {
      buf_printf(out, "vs(incomplete, %u)", (unsigned)it->vs_user);
    } else {
      buf_puts(out, "vs(");
      fmt_hex(out, it->fixed, TUP_VS_LEN);
      buf_putc(out, ')');
    }
    break;
  default:
    break;
  }
}

int tup_format(dv_buf *out, const void *bytes, size_t len) {
  const uint8_t *start = bytes, *p = start, *end = len ? start + len : start;
  size_t depth = 0;
  int comma = 0, rc = 0;
  tup_item it;
  buf_putc(out, '(');
  while (p < end) {
    uint8_t c = *p;
    if (depth && c == 0x00 && !(p + 1 < end && p[1] == 0xff)) {
      buf_putc(out, ')'); /* end of a nested tuple */
      depth--;
      comma = 1;
      p++;
      continue;
    }
    if (comma) buf_append(out, ", ", 2);
    comma = 1;
    if (c == 0x00) {
      buf_puts(out, "null");
      p += depth ? 2 : 1;
    } else if (c == TUP_C_NEST) {
      buf_putc(out, '(');
      depth++;
      comma = 0;
      p++;
    } else if (parse_scalar(p, end, &it) == 0) {
      fmt_item(out, &it);
      p += it.raw_len;
    } else {
      break;
    }
  }
  if (p < end || depth) {
    /* p < end: the element at p did not parse (its ", " is already out);
     * otherwise a nested tuple was never closed. */
    if (p >= end && comma) buf_append(out, ", ", 2);
    buf_printf(out, "<malformed at byte %zu>", (size_t)(p - start));
    rc = DV_ETUPLE;
  } else {
    buf_putc(out, ')');
  }
  return buf_error(out) ? DV_ENOMEM : rc;
}
