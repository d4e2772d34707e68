/* collate.c — CouchDB's view collation and its byte-comparable keys (the
 * order and the key layout are in collate.h).
 *
 * Numbers are read from their JSON text as sign × 0.DIGITS × 10^E, so
 * comparison and keys are exact whatever the size or precision. Strings go
 * through ICU: ucol_strcollUTF8 to compare, ucol_getSortKey (on UTF-16)
 * for keys; ICU guarantees that comparing sort keys bytewise gives the
 * same answer as the collator. Each thread opens its own root collator on
 * first use (a pthread key closes it when the thread ends), so no lock is
 * taken per comparison. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unicode/ucol.h>
#include <unicode/ustring.h>

#include "index/collate.h"
#include "util/alloc.h"

/* ---- numbers ------------------------------------------------------------------- */

/* A JSON number text seen as sign × 0.DIGITS × 10^exp, without copying:
 * the significant digits run from position first to last (inclusive) of
 * the integer digits followed by the fraction digits. */
typedef struct dec {
  const char *ip;  /* integer digits */
  size_t in;       /* their count */
  const char *fp;  /* fraction digits */
  size_t fn;       /* their count */
  size_t first;    /* first non-zero digit (combined index) */
  size_t last;     /* last non-zero digit (combined index) */
  int64_t exp;     /* decimal exponent of 0.DIGITS */
  int neg;         /* 1 if negative */
  int zero;        /* 1 if the value is zero (any sign) */
} dec;

static char dec_digit(const dec *d, size_t i) { return i < d->in ? d->ip[i] : d->fp[i - d->in]; }

static void dec_parse(const char *s, size_t n, dec *d) {
  size_t i = 0;
  int64_t e = 0;
  memset(d, 0, sizeof *d);
  if (i < n && s[i] == '-') d->neg = 1, i++;
  d->ip = s + i;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++, d->in++;
  if (i < n && s[i] == '.') {
    i++;
    d->fp = s + i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, d->fn++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    int eneg = 0;
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i] == '-', i++;
    /* Saturate: exponents beyond 10^15 are all "huge" alike. */
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
      if (e < 1000000000000000LL) e = e * 10 + (s[i] - '0');
    if (eneg) e = -e;
  }
  size_t total = d->in + d->fn, k = 0;
  while (k < total && dec_digit(d, k) == '0') k++;
  if (k == total) {
    d->zero = 1;
    return;
  }
  d->first = k;
  d->last = total - 1;
  while (dec_digit(d, d->last) == '0') d->last--;
  d->exp = (int64_t)d->in - (int64_t)k + e;
}

static int dec_sign(const dec *d) { return d->zero ? 0 : d->neg ? -1 : 1; }

int collate_num_cmp(const char *a, size_t an, const char *b, size_t bn) {
  dec x, y;
  dec_parse(a, an, &x);
  dec_parse(b, bn, &y);
  int sx = dec_sign(&x), sy = dec_sign(&y);
  if (sx != sy) return sx < sy ? -1 : 1;
  if (sx == 0) return 0;
  int mag = 0;
  if (x.exp != y.exp) {
    mag = x.exp < y.exp ? -1 : 1;
  } else {
    size_t i = x.first, j = y.first;
    for (; i <= x.last && j <= y.last; i++, j++) {
      char p = dec_digit(&x, i), q = dec_digit(&y, j);
      if (p != q) {
        mag = p < q ? -1 : 1;
        break;
      }
    }
    if (!mag) {
      int xmore = i <= x.last, ymore = j <= y.last;
      mag = xmore ? 1 : ymore ? -1 : 0;
    }
  }
  return sx < 0 ? -mag : mag;
}

/* ---- strings ------------------------------------------------------------------- */

static pthread_key_t coll_key;
static pthread_once_t coll_once = PTHREAD_ONCE_INIT;

static void coll_free(void *c) { ucol_close(c); }
static void coll_init(void) { (void)pthread_key_create(&coll_key, coll_free); }

/* This thread's root collator (CouchDB: ucol_open("", …), default
 * strength), or NULL when ICU cannot open one. */
static UCollator *coll(void) {
  pthread_once(&coll_once, coll_init);
  UCollator *c = pthread_getspecific(coll_key);
  if (c) return c;
  UErrorCode st = U_ZERO_ERROR;
  c = ucol_open("", &st);
  if (U_FAILURE(st)) return NULL;
  if (pthread_setspecific(coll_key, c)) {
    ucol_close(c);
    return NULL;
  }
  return c;
}

void collate_versions_get(collate_versions *out) {
  UVersionInfo v;
  memset(out, 0, sizeof *out);
  u_getVersion(v);
  u_versionToString(v, out->library);
  UCollator *c = coll();
  if (!c) return;
  ucol_getUCAVersion(c, v);
  u_versionToString(v, out->algorithm);
  ucol_getVersion(c, v);
  u_versionToString(v, out->collator);
}

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn) {
  int r = memcmp(a, b, an < bn ? an : bn);
  if (r) return r < 0 ? -1 : 1;
  return an < bn ? -1 : an > bn ? 1 : 0;
}

int collate_str_cmp(const char *a, size_t an, const char *b, size_t bn) {
  UCollator *c = coll();
  if (c && an <= INT32_MAX && bn <= INT32_MAX) {
    UErrorCode st = U_ZERO_ERROR;
    UCollationResult r = ucol_strcollUTF8(c, a, (int32_t)an, b, (int32_t)bn, &st);
    if (U_SUCCESS(st)) return r == UCOL_LESS ? -1 : r == UCOL_GREATER ? 1 : 0;
  }
  return bytes_cmp(a, an, b, bn); /* no collator: code point order */
}

/* ---- values -------------------------------------------------------------------- */

/* Rank of a value's type: CouchDB's collation, or Erlang's term order. */
static int type_rank(const json_val *v, int raw) {
  /* indexed by json_type: null, bool, number, string, array, object */
  static const int coll_rank[] = {0, 0, 3, 4, 5, 6}, erl_rank[] = {2, 0, 0, 6, 5, 4};
  if (v->type == JSON_BOOL) return raw ? (v->b ? 3 : 1) : (v->b ? 2 : 1);
  return raw ? erl_rank[v->type] : coll_rank[v->type];
}

/* Both orders compare arrays element-wise and objects member by member
 * (key, then value), shorter first; they differ in how types rank and how
 * strings compare. */
static int vcmp(const json_val *a, const json_val *b, int raw) {
  int ra = type_rank(a, raw), rb = type_rank(b, raw);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (a->type) {
  case JSON_NUMBER: return collate_num_cmp(a->u.s, a->len, b->u.s, b->len);
  case JSON_STRING: return raw ? bytes_cmp(a->u.s, a->len, b->u.s, b->len) : collate_str_cmp(a->u.s, a->len, b->u.s, b->len);
  case JSON_ARRAY:
    for (size_t i = 0; i < a->len && i < b->len; i++) {
      int r = vcmp(a->u.items[i], b->u.items[i], raw);
      if (r) return r;
    }
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
  case JSON_OBJECT:
    for (size_t i = 0; i < a->len && i < b->len; i++) {
      const json_member *p = &a->u.members[i], *q = &b->u.members[i];
      int r = raw ? bytes_cmp(p->key, p->klen, q->key, q->klen) : collate_str_cmp(p->key, p->klen, q->key, q->klen);
      if (!r) r = vcmp(p->val, q->val, raw);
      if (r) return r;
    }
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
  default: return 0; /* null, or booleans of equal rank */
  }
}

int collate_cmp(const json_val *a, const json_val *b) { return vcmp(a, b, 0); }
int collate_raw_cmp(const json_val *a, const json_val *b) { return vcmp(a, b, 1); }

/* ---- keys ---------------------------------------------------------------------- */

enum {
  K_END = 0x00,
  K_NULL = 0x10,
  K_FALSE = 0x11,
  K_TRUE = 0x12,
  K_NUM = 0x20,
  K_STR = 0x30,
  K_ARR = 0x40,
  K_OBJ = 0x50,
  N_NEG = 0x01,
  N_ZERO = 0x02,
  N_POS = 0x03,
};

/* The exponent of a non-zero number, order-preserving; inverted for a
 * negative number so that a larger magnitude sorts first. */
static void key_exp(dv_buf *out, int64_t e, int neg) {
  uint8_t b[9];
  size_t n;
  if (e > -0x70 && e < 0x70) {
    b[0] = (uint8_t)(0x80 + e);
    n = 1;
  } else {
    uint64_t u = (uint64_t)e ^ (UINT64_C(1) << 63);
    b[0] = e < 0 ? 0x0f : 0xf0;
    for (int i = 0; i < 8; i++) b[1 + i] = (uint8_t)(u >> (56 - 8 * i));
    n = 9;
  }
  for (size_t i = 0; neg && i < n; i++) b[i] = (uint8_t)(0xff - b[i]);
  buf_append(out, b, n);
}

static void key_num(dv_buf *out, const json_val *v, uint8_t type) {
  dec d;
  dec_parse(v->u.s, v->len, &d);
  buf_putc(out, type);
  if (d.zero) {
    buf_putc(out, N_ZERO);
    return;
  }
  buf_putc(out, d.neg ? N_NEG : N_POS);
  key_exp(out, d.exp, d.neg);
  uint8_t *p = buf_extend(out, d.last - d.first + 2);
  if (!p) return;
  for (size_t i = d.first; i <= d.last; i++) *p++ = d.neg ? (uint8_t)(0xff - dec_digit(&d, i)) : (uint8_t)dec_digit(&d, i);
  *p = d.neg ? 0xff : 0x00;
}

/* A string's sort key, its terminating 0x00 included. */
static int key_str(dv_buf *out, const char *s, size_t n) {
  UCollator *c = coll();
  if (!c || n > INT32_MAX / 2) return DV_ENOMEM;
  UChar small[256], *u = small;
  int32_t cap = (int32_t)(sizeof small / sizeof *small), ul = 0;
  UErrorCode st = U_ZERO_ERROR;
  u_strFromUTF8(u, cap, &ul, s, (int32_t)n, &st);
  if (st == U_BUFFER_OVERFLOW_ERROR) {
    u = dv_malloc(((size_t)ul + 1) * sizeof *u);
    if (!u) return DV_ENOMEM;
    cap = ul + 1;
    st = U_ZERO_ERROR;
    u_strFromUTF8(u, cap, &ul, s, (int32_t)n, &st);
  }
  int rc = U_FAILURE(st) ? DV_EJSON : 0;
  buf_putc(out, K_STR);
  /* a sort key is rarely longer than a few bytes per UTF-16 unit; ask
   * again with the size ICU names when it is */
  size_t room = 3 * (size_t)ul + 16;
  for (int attempt = 0; !rc && attempt < 2; attempt++) {
    size_t at = out->len;
    uint8_t *p = room <= INT32_MAX ? buf_extend(out, room) : NULL;
    if (!p) {
      rc = DV_ENOMEM;
      break;
    }
    int32_t k = ucol_getSortKey(c, u, ul, p, (int32_t)room);
    if (k <= 0) {
      rc = DV_ENOMEM;
    } else if ((size_t)k <= room) {
      out->len = at + (size_t)k;
      break;
    } else {
      out->len = at;
      room = (size_t)k;
    }
  }
  if (u != small) dv_free(u);
  return rc;
}

static int key_val(dv_buf *out, const json_val *v) {
  int rc = 0;
  switch (v->type) {
  case JSON_NULL: buf_putc(out, K_NULL); break;
  case JSON_BOOL: buf_putc(out, v->b ? K_TRUE : K_FALSE); break;
  case JSON_NUMBER: key_num(out, v, K_NUM); break;
  case JSON_STRING: rc = key_str(out, v->u.s, v->len); break;
  case JSON_ARRAY:
    buf_putc(out, K_ARR);
    for (size_t i = 0; !rc && i < v->len; i++) rc = key_val(out, v->u.items[i]);
    buf_putc(out, K_END);
    break;
  case JSON_OBJECT:
    buf_putc(out, K_OBJ);
    for (size_t i = 0; !rc && i < v->len; i++) {
      rc = key_str(out, v->u.members[i].key, v->u.members[i].klen);
      if (!rc) rc = key_val(out, v->u.members[i].val);
    }
    buf_putc(out, K_END);
    break;
  default: rc = DV_EINVAL;
  }
  return rc;
}

int collate_key(dv_buf *out, const json_val *v) {
  int rc = key_val(out, v);
  return rc ? rc : buf_error(out);
}

/* Raw keys: Erlang's term order. Numbers (the same body as above) < false
 * < null < true < objects < arrays < strings; a string is its bytes with
 * 0x00 escaped as 0x00 0xff, ending in 0x00, so bytes order and a prefix
 * sorts first; arrays and objects as above. */
enum {
  R_NUM = 0x10,
  R_FALSE = 0x21,
  R_NULL = 0x22,
  R_TRUE = 0x23,
  R_OBJ = 0x30,
  R_ARR = 0x40,
  R_STR = 0x50,
};

static void raw_str(dv_buf *out, const char *s, size_t n) {
  buf_putc(out, R_STR);
  for (size_t i = 0; i < n; i++) {
    buf_putc(out, (uint8_t)s[i]);
    if (!s[i]) buf_putc(out, 0xff);
  }
  buf_putc(out, K_END);
}

static int raw_val(dv_buf *out, const json_val *v) {
  int rc = 0;
  switch (v->type) {
  case JSON_NULL: buf_putc(out, R_NULL); break;
  case JSON_BOOL: buf_putc(out, v->b ? R_TRUE : R_FALSE); break;
  case JSON_NUMBER: key_num(out, v, R_NUM); break;
  case JSON_STRING: raw_str(out, v->u.s, v->len); break;
  case JSON_ARRAY:
    buf_putc(out, R_ARR);
    for (size_t i = 0; !rc && i < v->len; i++) rc = raw_val(out, v->u.items[i]);
    buf_putc(out, K_END);
    break;
  case JSON_OBJECT:
    buf_putc(out, R_OBJ);
    for (size_t i = 0; !rc && i < v->len; i++) {
      raw_str(out, v->u.members[i].key, v->u.members[i].klen);
      rc = raw_val(out, v->u.members[i].val);
    }
    buf_putc(out, K_END);
    break;
  default: rc = DV_EINVAL;
  }
  return rc;
}

int collate_raw_key(dv_buf *out, const json_val *v) {
  int rc = raw_val(out, v);
  return rc ? rc : buf_error(out);
}
