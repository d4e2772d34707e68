/* body.c — exploding a document body into one KV per leaf, imploding it
 * back, its canonical digest and its JSON size (body.h has the layout).
 *
 * Exploding walks the DOM with an explicit stack, so depth costs heap, not
 * C stack; one key buffer holds prefix + path and is cut back to a
 * container's own path before each child. Imploding keeps the path of the
 * last leaf and, for each new key, finds the first byte where the two
 * differ: the path elements before it are shared (tuple elements are
 * self-delimiting, so equal bytes are equal elements), the containers
 * above them stay open, and only the elements after it are decoded. Keys
 * (one exception: a string's 00 terminator followed by FF is an escaped
 * NUL, see add()). Keys
 * arriving in strictly increasing order is what makes object keys unique
 * and lets a container never be re-entered once left.
 *
 * Not here: KV I/O, revision metadata, the size policy (the caller passes
 * body_limits).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kv/kv.h"
#include "store/body.h"
#include "tuple/tuple.h"
#include "util/alloc.h"
#include "util/buf.h"

#define STR_OVERHEAD 2 /* 02 ... 00 */
#define NUM_OVERHEAD 6 /* 05 15 03 02 ... 00 00 */
#define DEC_MAX 620    /* more decimal digits than any 255-byte magnitude has */

/* ------------------------------------------------------------------ */
/* Big integers: decimal text <-> big-endian magnitude                  */
/* ------------------------------------------------------------------ */

/* Big-endian magnitude of the decimal digits d[0..n) into out; its length
 * in bytes (0 for zero), or SIZE_MAX if it needs more than
 * TUP_BIGINT_MAX bytes. Base 2^32 limbs, nine digits per step. */
static size_t dec_to_mag(const char *d, size_t n, uint8_t out[TUP_BIGINT_MAX]) {
  uint32_t limb[(DEC_MAX * 10 / 3 + 31) / 32 + 1]; /* little-endian */
  size_t nl = 0;
  if (n > DEC_MAX) return SIZE_MAX;
  for (size_t i = 0; i < n;) {
    size_t k = n - i < 9 ? n - i : 9;
    uint32_t chunk = 0, mul = 1;
    for (size_t j = 0; j < k; j++) {
      chunk = chunk * 10 + (uint32_t)(d[i + j] - '0');
      mul *= 10;
    }
    i += k;
    uint64_t carry = chunk;
    for (size_t j = 0; j < nl; j++) {
      uint64_t t = (uint64_t)limb[j] * mul + carry;
      limb[j] = (uint32_t)t;
      carry = t >> 32;
    }
    if (carry) limb[nl++] = (uint32_t)carry;
  }
  size_t nb = nl * 4;
  while (nb && !((limb[(nb - 1) / 4] >> (8 * ((nb - 1) % 4))) & 0xFF)) nb--;
  if (nb > TUP_BIGINT_MAX) return SIZE_MAX;
  for (size_t i = 0; i < nb; i++) out[nb - 1 - i] = (uint8_t)(limb[i / 4] >> (8 * (i % 4)));
  return nb;
}

/* Decimal digits of the big-endian magnitude mag[0..n) (n <= 255, no
 * leading zero, not zero) into out (DEC_MAX bytes); returns how many. */
static size_t mag_to_dec(const uint8_t *mag, size_t n, char *out) {
  uint32_t limb[TUP_BIGINT_MAX / 4 + 1] = {0};
  size_t nl = (n + 3) / 4, o = 0;
  for (size_t i = 0; i < n; i++) limb[i / 4] |= (uint32_t)mag[n - 1 - i] << (8 * (i % 4));
  while (nl && !limb[nl - 1]) nl--;
  while (nl) {
    uint64_t rem = 0;
    for (size_t j = nl; j-- > 0;) {
      uint64_t cur = rem << 32 | limb[j];
      limb[j] = (uint32_t)(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    while (nl && !limb[nl - 1]) nl--;
    for (int k = 0; k < 9 && (nl || rem); k++) { /* least significant first */
      out[o++] = (char)('0' + rem % 10);
      rem /= 10;
    }
  }
  for (size_t i = 0; i < o / 2; i++) {
    char t = out[i];
    out[i] = out[o - 1 - i];
    out[o - 1 - i] = t;
  }
  return o;
}

/* Bytes of the tuple integer encoding of v. */
static size_t tup_uint_len(uint64_t v) {
  size_t n = 1;
  for (; v; v >>= 8) n++;
  return n;
}

/* ------------------------------------------------------------------ */
/* Exploding                                                            */
/* ------------------------------------------------------------------ */

typedef struct xframe {
  const json_val *c; /* the container */
  size_t i;          /* next child to visit */
  size_t klen;       /* key bytes up to and including c's own path */
} xframe;

typedef struct xctx {
  dv_buf key;          /* prefix + path of the current leaf */
  dv_buf val;          /* its value */
  size_t max_key;      /* body_limits.max_key, resolved */
  size_t max_kv;       /* body_limits.max_kv_bytes (0 = none) */
  size_t total;        /* key+value bytes emitted so far */
  body_emit_fn emit;   /* the caller's sink */
  void *arg;           /* its argument */
} xctx;

/* Emit key/val as they stand in the buffers. */
static int put_kv(xctx *x) {
  if (buf_error(&x->key) || buf_error(&x->val)) return DV_ENOMEM;
  if (x->key.len > x->max_key) return DV_EPATH_TOO_LONG;
  x->total += x->key.len + x->val.len;
  if (x->max_kv && x->total > x->max_kv) return DV_EDOC_TOO_LARGE;
  return x->emit(x->arg, x->key.p, x->key.len, x->val.p, x->val.len);
}

/* The head value of text leaf `is_num` with first chunk s[0..n), followed
 * by int(total) when total is not 0. */
static int put_head(dv_buf *val, int is_num, const uint8_t *s, size_t n, size_t total) {
  tup_w w;
  buf_reset(val);
  tup_w_init(&w, val);
  if (is_num) {
    (void)tup_nest_begin(&w);
    (void)tup_int(&w, BODY_MARK_NUM);
  }
  (void)tup_str(&w, (const char *)s, n);
  if (is_num) (void)tup_nest_end(&w);
  if (total) (void)tup_uint(&w, total);
  return tup_w_finish(&w); /* DV_EINVAL: not UTF-8 */
}

/* Where a chunk starting at pos ends: as far as `budget` encoded bytes
 * (a 00 byte costs two) reach, backed off to a UTF-8 character start. */
static size_t chunk_end(const uint8_t *s, size_t n, size_t pos, size_t budget) {
  size_t end = pos, enc = 0;
  while (end < n && enc < budget) {
    size_t take = n - end < budget - enc ? n - end : budget - enc;
    const uint8_t *z = memchr(s + end, 0, take);
    if (!z) {
      end += take;
      enc += take;
      continue;
    }
    size_t k = (size_t)(z - (s + end));
    end += k;
    enc += k;
    if (budget - enc < 2) break;
    end++;
    enc += 2;
  }
  while (end < n && end > pos && (s[end] & 0xC0) == 0x80) end--;
  return end;
}

/* A string (is_num 0) or number text (is_num 1) leaf at the current key,
 * split into continuation chunks when it does not fit one value. */
static int put_text(xctx *x, int is_num, const uint8_t *s, size_t n) {
  size_t overhead = is_num ? NUM_OVERHEAD : STR_OVERHEAD;
  if (n <= KV_MAX_VALUE - overhead) {
    int rc = put_head(&x->val, is_num, s, n, 0);
    if (rc) return rc;
    if (x->val.len <= KV_MAX_VALUE) return put_kv(x);
  }
  if (json_utf8_check(s, n, NULL)) return DV_EINVAL;
  size_t klen = x->key.len, pos = 0;
  for (uint64_t seq = 0; pos < n; seq++) {
    size_t end;
    int rc;
    x->key.len = klen;
    if (seq == 0) {
      end = chunk_end(s, n, pos, KV_MAX_VALUE - overhead - tup_uint_len(n));
      rc = put_head(&x->val, is_num, s, end, n);
    } else {
      tup_w w;
      tup_w_init(&w, &x->key);
      (void)tup_null(&w);
      (void)tup_uint(&w, seq);
      end = chunk_end(s, n, pos, KV_MAX_VALUE - STR_OVERHEAD);
      rc = put_head(&x->val, 0, s + pos, end - pos, 0);
    }
    if (!rc) rc = put_kv(x);
    if (rc) return rc;
    pos = end;
  }
  x->key.len = klen;
  return 0;
}

static int put_number(xctx *x, const json_val *v) {
  json_num num;
  int rc = json_num_parse(v->u.s, v->len, &num);
  if (rc) return rc == DV_ENOMEM ? rc : DV_EINVAL;
  tup_w w;
  buf_reset(&x->val);
  tup_w_init(&w, &x->val);
  switch (num.cls) {
    case JSON_NUM_INT64: {
      int64_t i;
      if (json_num_int64(num.text, num.len, &i)) return DV_EINVAL;
      (void)tup_int(&w, i);
      break;
    }
    case JSON_NUM_UINT64: {
      uint64_t u;
      if (json_num_uint64(num.text, num.len, &u)) return DV_EINVAL;
      (void)tup_uint(&w, u);
      break;
    }
    case JSON_NUM_BIGINT: {
      uint8_t mag[TUP_BIGINT_MAX];
      int neg = num.text[0] == '-';
      size_t ml = dec_to_mag(num.text + neg, num.len - (size_t)neg, mag);
      if (ml == SIZE_MAX) return put_text(x, 1, (const uint8_t *)num.text, num.len);
      (void)tup_bigint(&w, neg, mag, ml);
      break;
    }
    case JSON_NUM_DOUBLE: {
      double d;
      rc = json_num_double(num.text, num.len, &d);
      if (rc == DV_ENOMEM) return rc;
      if (rc || !isfinite(d)) return put_text(x, 1, (const uint8_t *)num.text, num.len);
      (void)tup_double(&w, d);
      break;
    }
    default:
      return put_text(x, 1, (const uint8_t *)num.text, num.len);
  }
  rc = tup_w_finish(&w);
  return rc ? rc : put_kv(x);
}

/* A leaf (or empty container, or NULL meaning null) at the current key. */
static int put_leaf(xctx *x, const json_val *v) {
  buf_reset(&x->val);
  switch (v ? v->type : JSON_NULL) {
    case JSON_BOOL: buf_putc(&x->val, v->b ? TUP_C_TRUE : TUP_C_FALSE); break;
    case JSON_NUMBER: return put_number(x, v);
    case JSON_STRING: return put_text(x, 0, (const uint8_t *)v->u.s, v->len);
    case JSON_OBJECT:
    case JSON_ARRAY: {
      uint8_t m[4] = {TUP_C_NEST, 0x15, v->type == JSON_OBJECT ? BODY_MARK_OBJ : BODY_MARK_ARR, 0};
      buf_append(&x->val, m, 4);
      break;
    }
    default: buf_putc(&x->val, TUP_C_NULL); break;
  }
  return put_kv(x);
}

int body_explode(const json_val *body, const uint8_t *prefix, size_t prefix_len,
                 const body_limits *lim, body_emit_fn emit, void *arg, size_t *out_kv_bytes) {
  if (!body || body->type != JSON_OBJECT) return DV_ENOT_OBJECT;
  xctx x;
  buf_init(&x.key);
  buf_init(&x.val);
  x.max_key = lim && lim->max_key ? lim->max_key : KV_MAX_KEY;
  x.max_kv = lim ? lim->max_kv_bytes : 0;
  x.total = 0;
  x.emit = emit;
  x.arg = arg;
  xframe *st = NULL;
  size_t depth = 0, cap = 0;
  int rc = 0;

  buf_append(&x.key, prefix, prefix_len);
  if (buf_error(&x.key)) { rc = DV_ENOMEM; goto out; }
  st = dv_malloc(16 * sizeof *st);
  if (!st) { rc = DV_ENOMEM; goto out; }
  cap = 16;
  st[depth++] = (xframe){body, 0, prefix_len};
  while (depth) {
    xframe *f = &st[depth - 1];
    if (f->i == f->c->len) {
      depth--;
      continue;
    }
    size_t i = f->i++;
    const json_val *child;
    tup_w w;
    x.key.len = f->klen;
    tup_w_init(&w, &x.key);
    if (f->c->type == JSON_OBJECT) {
      const json_member *m = &f->c->u.members[i];
      (void)tup_str(&w, m->key, m->klen);
      child = m->val;
    } else {
      (void)tup_uint(&w, i);
      child = f->c->u.items[i];
    }
    rc = tup_w_finish(&w);
    if (rc) goto out;
    if (child && (child->type == JSON_OBJECT || child->type == JSON_ARRAY) && child->len) {
      /* every leaf below has a longer key: fail early */
      if (x.key.len > x.max_key) { rc = DV_EPATH_TOO_LONG; goto out; }
      if (depth == cap) {
        xframe *n = dv_realloc(st, 2 * cap * sizeof *st);
        if (!n) { rc = DV_ENOMEM; goto out; }
        st = n;
        cap *= 2;
      }
      st[depth++] = (xframe){child, 0, x.key.len};
      continue;
    }
    rc = put_leaf(&x, child);
    if (rc) goto out;
  }
  if (out_kv_bytes) *out_kv_bytes = x.total;
out:
  dv_free(st);
  buf_free(&x.key);
  buf_free(&x.val);
  return rc;
}

/* ------------------------------------------------------------------ */
/* Imploding                                                            */
/* ------------------------------------------------------------------ */

static json_val *node(dv_arena *a, uint8_t type) {
  json_val *v = arena_alloc_align(a, sizeof *v, 8);
  if (v) {
    memset(v, 0, sizeof *v);
    v->type = type;
  }
  return v;
}

static int num_node(dv_arena *a, const char *text, size_t n, json_numclass cls, json_val **out) {
  json_val *v = node(a, JSON_NUMBER);
  char *t = v ? arena_memdup(a, text, n) : NULL;
  if (!t) return DV_ENOMEM;
  v->num = (uint8_t)cls;
  v->len = n;
  v->u.s = t;
  *out = v;
  return 0;
}

/* Append child v to container c (under key[0..klen) if c is an object). */
static int push_child(dv_arena *a, json_val *c, const char *key, size_t klen, json_val *v) {
  size_t elem = c->type == JSON_OBJECT ? sizeof(json_member) : sizeof(json_val *);
  if (c->len == c->cap) {
    size_t ncap = c->cap ? 2 * c->cap : 4;
    if (ncap > SIZE_MAX / elem) return DV_ENOMEM;
    void *p = arena_realloc(a, c->u.items, c->cap * elem, ncap * elem, 8);
    if (!p) return DV_ENOMEM;
    c->u.items = p;
    c->cap = ncap;
  }
  if (c->type == JSON_OBJECT) c->u.members[c->len] = (json_member){key, klen, v};
  else c->u.items[c->len] = v;
  c->len++;
  return 0;
}

/* 1 if an integer item uses the standard encoding: the decoder also takes
 * FDB Python's 0x1d 08 FF*8 for 2^64-1 (tuple.h), which explode never
 * writes, so implode must refuse it to keep the encoding unique. */
static int int_std(const tup_item *it) {
  return it->raw_len == (it->mag_len <= 8 ? 1 + it->mag_len : 2 + it->mag_len);
}

/* A tuple integer as a DOM number. */
static int int_node(dv_arena *a, const tup_item *it, json_val **out) {
  char t[DEC_MAX + 2];
  if (!int_std(it)) return DV_ECORRUPT;
  if (it->fits & TUP_FITS_I64) return num_node(a, t, json_fmt_int64(it->i64, t), JSON_NUM_INT64, out);
  if (it->fits & TUP_FITS_U64)
    return num_node(a, t, json_fmt_uint64(it->u64, t), JSON_NUM_UINT64, out);
  uint8_t mag[TUP_BIGINT_MAX];
  tup_item_magnitude(it, mag);
  size_t n = (size_t)it->neg;
  t[0] = '-';
  n += mag_to_dec(mag, it->mag_len, t + n);
  return num_node(a, t, n, JSON_NUM_BIGINT, out);
}

/* Check a number text from a marker: canonical, and not something a tuple
 * number would have held. Its class, or DV_ECORRUPT / DV_ENOMEM. */
static int text_class(const char *t, size_t n, json_numclass *out) {
  json_num num;
  int rc = json_num_parse(t, n, &num);
  if (rc) return rc == DV_ENOMEM ? rc : DV_ECORRUPT;
  if (num.len != n || memcmp(num.text, t, n) != 0) return DV_ECORRUPT;
  if (num.cls == JSON_NUM_BIGINT) {
    uint8_t mag[TUP_BIGINT_MAX];
    int neg = t[0] == '-';
    if (dec_to_mag(t + neg, n - (size_t)neg, mag) != SIZE_MAX) return DV_ECORRUPT;
  } else if (num.cls != JSON_NUM_TEXT) {
    return DV_ECORRUPT;
  }
  *out = num.cls;
  return 0;
}

/* The head of a long leaf: first chunk `first`, announced length `len`
 * (the rest of r must be empty). The node is linked now and filled when
 * the last chunk arrives. */
static int long_head(body_builder *b, int is_num, const tup_item *first, const tup_item *len,
                     tup_r *r, json_val **out) {
  tup_item x;
  if (len->type != TUP_INT || !(len->fits & TUP_FITS_U64) || tup_next(r, &x) != 0 ||
      len->u64 <= first->s_len || len->u64 >= SIZE_MAX || first->s_len == 0 ||
      (is_num && first->s_len != first->s_enc_len))
    return DV_ECORRUPT;
  json_val *v = node(b->a, is_num ? JSON_NUMBER : JSON_STRING);
  if (!v) return DV_ENOMEM;
  buf_reset(&b->chunks);
  size_t want = (size_t)len->u64;
  if (buf_reserve(&b->chunks, want < (1u << 24) ? want : (1u << 24))) return DV_ENOMEM;
  tup_item_copy(first, buf_extend(&b->chunks, first->s_len));
  b->pending = v;
  b->pending_total = want;
  b->pending_next = 1;
  *out = v;
  return 0;
}

/* The last chunk is in: check the whole and fill the node. */
static int long_done(body_builder *b) {
  json_val *v = b->pending;
  const uint8_t *s = b->chunks.p;
  size_t n = b->chunks.len;
  b->pending = NULL;
  if (v->type == JSON_NUMBER) {
    json_numclass cls;
    if (NUM_OVERHEAD + n <= KV_MAX_VALUE) return DV_ECORRUPT; /* would not have been split */
    int rc = text_class((const char *)s, n, &cls);
    if (rc) return rc;
    v->num = (uint8_t)cls;
  } else {
    size_t enc = n;
    for (const uint8_t *z = s; (z = memchr(z, 0, (size_t)(s + n - z))) != NULL; z++) enc++;
    if (STR_OVERHEAD + enc <= KV_MAX_VALUE) return DV_ECORRUPT;
  }
  char *t = arena_memdup(b->a, s, n);
  if (!t) return DV_ENOMEM;
  v->u.s = t;
  v->len = n;
  buf_free(&b->chunks); /* long strings are rare: do not keep their size */
  return 0;
}

/* Decode one leaf value into *out. */
static int leaf(body_builder *b, const uint8_t *val, size_t vn, json_val **out) {
  dv_arena *a = b->a;
  tup_r r;
  tup_item it, it2;
  tup_r_init(&r, val, vn);
  if (tup_next(&r, &it) != 1) return DV_ECORRUPT;
  int more = tup_next(&r, &it2);
  if (more < 0) return DV_ECORRUPT;
  json_val *v;
  switch (it.type) {
    case TUP_NULL:
    case TUP_BOOL:
      if (more) return DV_ECORRUPT;
      v = node(a, it.type == TUP_NULL ? JSON_NULL : JSON_BOOL);
      if (!v) return DV_ENOMEM;
      v->b = it.type == TUP_BOOL && it.b;
      *out = v;
      return 0;
    case TUP_INT:
      return more ? DV_ECORRUPT : int_node(a, &it, out);
    case TUP_DOUBLE: {
      if (more || !isfinite(it.d)) return DV_ECORRUPT;
      char t[JSON_NUM_BUF];
      return num_node(a, t, json_fmt_double(it.d, t), JSON_NUM_DOUBLE, out);
    }
    case TUP_STR: {
      if (more) return long_head(b, 0, &it, &it2, &r, out);
      v = node(a, JSON_STRING);
      char *s = v ? arena_alloc_align(a, it.s_len, 1) : NULL;
      if (!s) return DV_ENOMEM;
      tup_item_copy(&it, (uint8_t *)s);
      v->u.s = s;
      v->len = it.s_len;
      *out = v;
      return 0;
    }
    case TUP_NEST: {
      tup_r sub = it.sub;
      tup_item tag, t, x;
      if (tup_get(&sub, TUP_INT, &tag) || !(tag.fits & TUP_FITS_U64)) return DV_ECORRUPT;
      if (tag.u64 == BODY_MARK_OBJ || tag.u64 == BODY_MARK_ARR) {
        if (more || tup_next(&sub, &x) != 0) return DV_ECORRUPT;
        v = node(a, tag.u64 == BODY_MARK_OBJ ? JSON_OBJECT : JSON_ARRAY);
        if (!v) return DV_ENOMEM;
        *out = v;
        return 0;
      }
      if (tag.u64 != BODY_MARK_NUM || tup_get(&sub, TUP_STR, &t) || tup_next(&sub, &x) != 0)
        return DV_ECORRUPT;
      if (more) return long_head(b, 1, &t, &it2, &r, out);
      json_numclass cls;
      if (t.s_len != t.s_enc_len || NUM_OVERHEAD + t.s_len > KV_MAX_VALUE) return DV_ECORRUPT;
      int rc = text_class((const char *)t.s, t.s_len, &cls);
      return rc ? rc : num_node(a, (const char *)t.s, t.s_len, cls, out);
    }
    default:
      return DV_ECORRUPT;
  }
}

/* A continuation key while a long leaf is pending. */
static int add_chunk(body_builder *b, const uint8_t *s, size_t n, const uint8_t *val, size_t vn) {
  size_t pn = b->prev.len;
  tup_r r;
  tup_item x;
  if (n <= pn || memcmp(s, b->prev.p, pn) != 0) return DV_ECORRUPT;
  tup_r_init(&r, s + pn, n - pn);
  if (tup_get(&r, TUP_NULL, &x) || tup_get(&r, TUP_INT, &x) || !(x.fits & TUP_FITS_U64) ||
      x.u64 != b->pending_next || !tup_r_done(&r))
    return DV_ECORRUPT;
  tup_r_init(&r, val, vn);
  size_t have = b->chunks.len;
  if (tup_get(&r, TUP_STR, &x) || !tup_r_done(&r) || x.s_len == 0 ||
      x.s_len > b->pending_total - have ||
      (b->pending->type == JSON_NUMBER && x.s_len != x.s_enc_len))
    return DV_ECORRUPT;
  uint8_t *o = buf_extend(&b->chunks, x.s_len);
  if (!o) return DV_ENOMEM;
  tup_item_copy(&x, o);
  b->pending_next++;
  return b->chunks.len == b->pending_total ? long_done(b) : 0;
}

static int frames_reserve(body_builder *b, size_t n) {
  if (n <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 16;
  while (cap < n) cap *= 2;
  body_frame *f = dv_realloc(b->frames, cap * sizeof *f);
  if (!f) return DV_ENOMEM;
  b->frames = f;
  b->cap = cap;
  return 0;
}

static int add(body_builder *b, const uint8_t *s, size_t n, const uint8_t *val, size_t vn) {
  int rc;
  if (b->pending) return add_chunk(b, s, n, val, vn);
  if (n == 0) return DV_ECORRUPT; /* the metadata KV, or a path of length 0 */
  if (!b->root) {
    if ((rc = frames_reserve(b, 1)) != 0) return rc;
    if (!(b->root = node(b->a, JSON_OBJECT))) return DV_ENOMEM;
    b->frames[0].c = b->root;
  }
  /* c: path elements shared with the last leaf; start: where they end */
  size_t c = 0, start = 0;
  if (b->nframes) {
    const uint8_t *p = b->prev.p;
    size_t pn = b->prev.len, l = n < pn ? n : pn, d = 0;
    while (d < l && s[d] == p[d]) d++;
    if (d == n || (d < pn && s[d] < p[d])) return DV_ECORRUPT; /* not after the last key */
    size_t lo = 0, hi = b->nframes; /* first frame whose element ends past d */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (b->frames[mid].end <= d) lo = mid + 1;
      else hi = mid;
    }
    c = lo;
    /* Equal bytes are not always an equal element: "" is 02 00, "\0" is
     * 02 00 FF 00. A string goes on where 00 is followed by FF, a byte no
     * element starts with, so only the last shared element can be cut so. */
    if (c && b->frames[c - 1].end < n && s[b->frames[c - 1].end] == 0xFF) c--;
    if (c == b->nframes) return DV_ECORRUPT; /* below the last leaf */
    start = c ? b->frames[c - 1].end : 0;
  }
  tup_r r;
  tup_item cur, nxt;
  tup_r_init(&r, s + start, n - start);
  if (tup_next(&r, &cur) != 1) return DV_ECORRUPT;
  for (size_t j = c;; j++) {
    int more = tup_next(&r, &nxt);
    if (more < 0) return DV_ECORRUPT;
    json_val *ctr = b->frames[j].c, *child = NULL;
    char *key = NULL;
    size_t klen = 0;
    if (ctr->type == JSON_OBJECT) {
      if (cur.type != TUP_STR) return DV_ECORRUPT;
      klen = cur.s_len;
      if (!(key = arena_alloc_align(b->a, klen, 1))) return DV_ENOMEM;
      tup_item_copy(&cur, (uint8_t *)key);
    } else if (cur.type != TUP_INT || !(cur.fits & TUP_FITS_U64) || cur.u64 != ctr->len) {
      return DV_ECORRUPT;
    }
    b->frames[j].end = (size_t)(cur.raw + cur.raw_len - s);
    if (!more) {
      rc = leaf(b, val, vn, &child);
    } else if (nxt.type == TUP_STR || nxt.type == TUP_INT) {
      child = node(b->a, nxt.type == TUP_STR ? JSON_OBJECT : JSON_ARRAY);
      rc = child ? frames_reserve(b, j + 2) : DV_ENOMEM;
    } else {
      rc = DV_ECORRUPT;
    }
    if (!rc) rc = push_child(b->a, ctr, key, klen, child);
    if (rc) return rc;
    if (!more) {
      b->nframes = j + 1;
      break;
    }
    b->frames[j + 1].c = child;
    cur = nxt;
  }
  b->prev.len = start;
  buf_append(&b->prev, s + start, n - start);
  return buf_error(&b->prev);
}

void body_implode_begin(body_builder *b, dv_arena *a) {
  memset(b, 0, sizeof *b);
  b->a = a;
  buf_init(&b->prev);
  buf_init(&b->chunks);
}

int body_implode_add(body_builder *b, const uint8_t *suffix, size_t suffix_len, const uint8_t *val,
                     size_t val_len) {
  if (b->rc) return b->rc;
  if (!suffix) suffix_len = 0;
  if (!val) val_len = 0;
  /* explode never writes a value the KV store would refuse */
  int rc = val_len > KV_MAX_VALUE ? DV_ECORRUPT : add(b, suffix, suffix_len, val, val_len);
  if (rc) b->rc = rc;
  return rc;
}

int body_implode_end(body_builder *b, json_val **out) {
  if (b->rc) return b->rc;
  if (b->pending) return b->rc = DV_ECORRUPT;
  if (!b->root && !(b->root = node(b->a, JSON_OBJECT))) return DV_ENOMEM;
  *out = b->root;
  return 0;
}

void body_implode_free(body_builder *b) {
  if (!b) return;
  dv_free(b->frames);
  b->frames = NULL;
  b->cap = b->nframes = 0;
  buf_free(&b->prev);
  buf_free(&b->chunks);
}

/* ------------------------------------------------------------------ */
/* Digest                                                               */
/* ------------------------------------------------------------------ */

static void md5_varint(dv_md5 *m, uint64_t v) {
  uint8_t b[10];
  size_t n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7F);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  dv_md5_update(m, b, n);
}

static int key_cmp(const json_member *x, const json_member *y) {
  return dv_bytes_cmp(x->key, x->klen, y->key, y->klen);
}

static int key_cmp_q(const void *x, const void *y) {
  return key_cmp(*(const json_member *const *)x, *(const json_member *const *)y);
}

static void digest(const json_val *v, dv_md5 *m);

static void digest_member(const json_member *mb, dv_md5 *m) {
  md5_varint(m, mb->klen);
  dv_md5_update(m, mb->key, mb->klen);
  digest(mb->val, m);
}

static void digest_object(const json_val *v, dv_md5 *m) {
  const json_member *ms = v->u.members;
  size_t n = v->len, i = 1;
  dv_md5_update(m, "O", 1);
  md5_varint(m, n);
  while (i < n && key_cmp(&ms[i - 1], &ms[i]) < 0) i++;
  if (i >= n) { /* already in order, as a body read back from the store is */
    for (i = 0; i < n; i++) digest_member(&ms[i], m);
    return;
  }
  const json_member **idx = dv_malloc(n * sizeof *idx);
  if (idx) {
    for (i = 0; i < n; i++) idx[i] = &ms[i];
    qsort(idx, n, sizeof *idx, key_cmp_q);
    for (i = 0; i < n; i++) digest_member(idx[i], m);
    dv_free(idx);
    return;
  }
  /* no memory: pick each next key by a scan, quadratic but the same */
  const json_member *last = NULL;
  for (i = 0; i < n; i++) {
    const json_member *best = NULL;
    for (size_t j = 0; j < n; j++)
      if ((!last || key_cmp(&ms[j], last) > 0) && (!best || key_cmp(&ms[j], best) < 0))
        best = &ms[j];
    if (!best) break;
    digest_member(best, m);
    last = best;
  }
}

static void digest(const json_val *v, dv_md5 *m) {
  switch (v ? v->type : JSON_NULL) {
    case JSON_BOOL: dv_md5_update(m, v->b ? "t" : "f", 1); break;
    case JSON_NUMBER:
    case JSON_STRING:
      dv_md5_update(m, v->type == JSON_NUMBER ? "N" : "S", 1);
      md5_varint(m, v->len);
      dv_md5_update(m, v->u.s, v->len);
      break;
    case JSON_ARRAY:
      dv_md5_update(m, "A", 1);
      md5_varint(m, v->len);
      for (size_t i = 0; i < v->len; i++) digest(v->u.items[i], m);
      break;
    case JSON_OBJECT: digest_object(v, m); break;
    default: dv_md5_update(m, "n", 1); break;
  }
}

void body_digest(const json_val *body, dv_md5 *md5) { digest(body, md5); }

/* ------------------------------------------------------------------ */
/* JSON size                                                            */
/* ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p (first byte >= 0x80), or 0 —
 * the same rules as the JSON writer's (Unicode table 3-7). */
static size_t utf8_seq(const uint8_t *p, const uint8_t *end) {
  uint8_t c = p[0];
  size_t avail = (size_t)(end - p);
  if (c >= 0xC2 && c <= 0xDF) return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xE0 && c <= 0xEF) {
    if (avail < 3) return 0;
    if (c == 0xE0) lo = 0xA0;
    else if (c == 0xED) hi = 0x9F;
    return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (avail < 4) return 0;
    if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F;
    return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
  }
  return 0;
}

/* Size of s[0..n) as a JSON string literal, quotes included. */
static size_t str_size(const uint8_t *s, size_t n) {
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  const uint8_t *p = s, *end = s + n;
  size_t out = 2;
  while (p < end) {
    /* eight plain bytes at a time: no '"', '\', control or non-ASCII byte */
    while (end - p >= 8) {
      uint64_t v;
      memcpy(&v, p, 8);
      uint64_t xq = v ^ (ones * '"'), xb = v ^ (ones * '\\');
      uint64_t t = ((xq - ones) & ~xq) | ((xb - ones) & ~xb) | ((v - ones * 0x20) & ~v) | v;
      if (t & high) break;
      p += 8;
      out += 8;
    }
    if (p == end) break;
    uint8_t c = *p;
    if (c >= 0x80) {
      size_t k = utf8_seq(p, end);
      out += k ? k : 3; /* an invalid byte is written as U+FFFD */
      p += k ? k : 1;
      continue;
    }
    p++;
    if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
      out += 2;
    else if (c < 0x20)
      out += 6;
    else
      out += 1;
  }
  return out;
}

size_t body_json_size(const json_val *v) {
  size_t n;
  switch (v ? v->type : JSON_NULL) {
    case JSON_BOOL: return v->b ? 4 : 5;
    case JSON_NUMBER: return v->len;
    case JSON_STRING: return str_size((const uint8_t *)v->u.s, v->len);
    case JSON_ARRAY:
      n = 2 + (v->len ? v->len - 1 : 0);
      for (size_t i = 0; i < v->len; i++) n += body_json_size(v->u.items[i]);
      return n;
    case JSON_OBJECT:
      n = 2 + (v->len ? v->len - 1 : 0);
      for (size_t i = 0; i < v->len; i++) {
        const json_member *m = &v->u.members[i];
        n += str_size((const uint8_t *)m->key, m->klen) + 1 + body_json_size(m->val);
      }
      return n;
    default: return 4;
  }
}
