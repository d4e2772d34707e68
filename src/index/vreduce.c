/* vreduce.c — CouchDB's built-in view reduces (_sum, _count, _stats,
 * _approx_count_distinct) as pure functions over JSON rows, with CouchDB's
 * answers, its error objects and its error texts, byte for byte where the
 * bytes can be known. It is not the view layer: it stores nothing, reads no
 * KV and knows no tree; vtree.h keeps the states it returns.
 *
 * Data flow. A row's value (or, on rereduce, a state parsed back with
 * json/) becomes a `term`: the Erlang term jiffy would have decoded
 * (integers of any size, floats, binaries, atoms true/false/null, lists,
 * {Props} objects), plus the 5-tuple {Sum,Cnt,Min,Max,Sqr} of _stats. The
 * fold below is couch_query_servers.erl's, clause for clause, over terms;
 * its result is written as the state:
 *
 *   rows ──term_from_json──▶ terms ──sum_values / stat_values──▶ term
 *        ──term_json──▶ state bytes (JSON text)        (_sum, _stats)
 *   rows ──count──▶ 8 bytes LE                         (_count)
 *   keys ──json_write, XXH64──▶ 2048 one-byte registers (_approx_count_distinct)
 *
 * vr_final turns a state into the query's answer (a copy for the JSON
 * states, the integer for _count, the estimate for the sketch).
 *
 * Numbers are Erlang's: an integer stays exact at any size (int64 while it
 * fits, then a magnitude of 32-bit limbs in the arena), so a sum of
 * integers is the same whatever the chunking; an integer meeting a float
 * becomes a float (Erlang's `+`); a float that overflows is Erlang's
 * badarith (the reduce fails). Floats are written shortest round-trip in
 * jiffy's layout (json_fmt_double), the way CouchDB answers; inside error
 * texts they are written as Erlang's io_lib writes them ("1.0e21").
 *
 * CouchDB semantics (src/couch/src/couch_query_servers.erl, 3.4 line:
 * builtin_reduce, builtin_sum_rows, sum_values, sum_objects, sum_arrays,
 * check_sum_overflow, builtin_stats, stat_values, build_initial_accumulator,
 * unpack_stats, pack_stats, get_number, approx_count_distinct, finalize):
 *
 * - _sum folds sum_values(Value, Acc) from Acc = 0 over the values in key
 *   order. A value it cannot take does not fail the reduce: builtin_sum_rows
 *   catches the throw and the reduction *is* the object
 *   {"error":"builtin_reduce_error","reason":SUMERROR,"caused_by":Cause},
 *   which a query answers as the row's value (200). Cause is the argument
 *   of throw_sum_error: the value itself when it is a string, true, false,
 *   null, or a number or array met by an object sum; but in sum_arrays it is
 *   the *accumulator's* remaining tail (sum_arrays(Acc, Value) throws its
 *   first argument), so [1,2] then ["x"] gives caused_by [1,2]. A value
 *   that is itself an object with "error":"builtin_reduce_error", at any
 *   depth of an object sum, becomes the reduction as it is (so errors
 *   propagate through rereduce). Arrays of different lengths add element
 *   by element and keep the longer tail unchecked. The first object kept
 *   while Acc is 0 keeps its member order; a sum of two objects has its
 *   members sorted by key bytes (lists:sort). Then check_sum_overflow: when
 *   the reduction's external term size exceeds 4906 bytes and twice it
 *   exceeds the input's, the reduction becomes
 *   {"error":"builtin_reduce_error","reason":"Reduce output must shrink
 *   more rapidly: input size: I output size: O"} (reduce_limit = "true",
 *   CouchDB's default; sizes are erlang:external_size of OTP 26's encoding,
 *   computed in etf_* below; the input is [[[Key, DocId], Value], ...] on
 *   reduce and [[[], Reduction], ...] on rereduce).
 * - _count is length(KVs) on reduce and a sum on rereduce.
 * - _stats folds stat_values(Value, Acc) from
 *   build_initial_accumulator(First): numbers, objects with numeric
 *   sum/count/min/max/sumsqr (other members ignored), and arrays (nested,
 *   element by element) of those. Its throws are not caught: the reduce
 *   fails (DV_EVIEW_BUILTIN here; CouchDB's HTTP answer is 500 with error
 *   "invalid_value") with these reasons, no caused_by:
 *     "non-numeric _stats input: ~w"                 (first value)
 *     "The _stats function requires that map values be numbers or arrays
 *      of numbers, not '~p'"                         (a later value)
 *     "user _stats input missing required field ~s (~p)"
 *     "non-numeric _stats input received for ~s: ~w"
 *   ~w and ~p are Erlang's io_lib: binaries as <<97,98>> (~w) or <<"ab">>
 *   (~p), lists of printable latin-1 integers as strings (~p), and ~p's
 *   pretty printing, which breaks a term that does not fit in 80 columns
 *   counted from where it starts (erl_p below follows io_lib_pretty). The
 *   answer packs the tuple as {"sum","count","min","max","sumsqr"} in that
 *   order; ties in min/max keep the later value (erlang:min/max return
 *   their first argument, the value, when equal).
 * - _approx_count_distinct hashes each row's key (not its value) into a
 *   HyperLogLog of precision 11 (2^11 registers, hyper:new(11)); rereduce
 *   is the register-wise max (hyper:union); the answer is round(card).
 *   CouchDB hashes term_to_binary(Key) with SHA-1, which we do not
 *   reproduce: we hash the key's canonical JSON text (json_write) with
 *   XXH64, seed 0, so equal keys (1 and 1.0 are not equal, as in Erlang)
 *   count once. The estimate is Ertl's improved estimator ("New cardinality
 *   estimation algorithms for HyperLogLog sketches", 2017; Redis's
 *   hyperloglog.c uses it), whose sigma and tau terms are the small- and
 *   large-range corrections, instead of hyper's HLL++ bias tables: the
 *   same sketch statistics (standard error 1.04/sqrt(2048) = 2.3 %), not
 *   CouchDB's exact integers.
 *
 * Where CouchDB crashes instead of throwing (an Erlang error, a 500 with
 * no reason of CouchDB's own), the reduce fails with DV_EVIEW_BUILTIN and
 * one of the R_* texts below, caused_by the offending value: an object
 * whose "error" member is not "builtin_reduce_error", or an object added
 * to a non-zero number or to an array (case_clause in sum_values); _stats
 * arrays of different lengths (lists:zipwith); a float overflowing
 * (badarith).
 *
 * Not reproduced: reduce_limit = "false"/"log" and other thresholds (no
 * configuration reaches here); Erlang's big-to-float conversion (ours is
 * correctly rounded); _sum/_stats of a number no double can hold (1e400:
 * jiffy cannot decode it; here arithmetic on it is badarith).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/vreduce.h"
#include "util/alloc.h"

/* couch_query_servers.erl ?SUMERROR, the reason of _sum's error object. */
static const char SUMERROR[] =
    "The _sum function requires that map values be numbers, arrays of numbers, or objects. Objects cannot be "
    "mixed with other data structures. Objects can be arbitrarily nested, provided that the values for all "
    "fields are themselves numbers, arrays of numbers, or objects.";
/* couch_query_servers.erl ?STATERROR, "...not '~p'", split around the ~p. */
static const char STATERR_A[] = "The _stats function requires that map values be numbers or arrays of numbers, not '";
static const char STATERR_B[] = "'";
/* build_initial_accumulator/1, "non-numeric _stats input: ~w" */
static const char STAT_FIRST[] = "non-numeric _stats input: ";
/* get_number/2: "user _stats input missing required field ~s (~p)" and
 * "non-numeric _stats input received for ~s: ~w" */
static const char STAT_MISSING[] = "user _stats input missing required field ";
static const char STAT_NONNUM[] = "non-numeric _stats input received for ";
/* log_sum_overflow/2: "Reduce output must shrink more rapidly: input size:
 * ~b output size: ~b" */
static const char SUM_OVERFLOW[] = "Reduce output must shrink more rapidly: input size: ";

/* Our texts where CouchDB crashes (see the top of this file). */
static const char R_SUM_ERRKEY[] =
    "The _sum function cannot add an object whose \"error\" member is not \"builtin_reduce_error\" "
    "(CouchDB: case_clause in sum_values).";
static const char R_SUM_CASE[] =
    "The _sum function cannot add an object to a number other than 0 or to an array "
    "(CouchDB: case_clause in sum_values).";
static const char R_ZIP[] =
    "The _stats function requires that arrays of numbers all have the same length "
    "(CouchDB: function_clause in lists:zipwith/3).";
static const char R_BADARITH[] = "A _sum or _stats result does not fit a double (CouchDB: badarith).";

/* check_sum_overflow/3: OutSize > 4906 andalso OutSize * 2 > InSize */
#define SUM_LIMIT 4906

#define HLL_P 11                   /* hyper:new(11) */
#define HLL_M (1u << HLL_P)        /* registers */
#define HLL_Q (64 - HLL_P)         /* hash bits left for the rank */

/* The fold's outcomes besides 0 and DV_E* codes. */
enum {
  TH_SUM = 1, /* throw_sum_error: _sum's error object with vx.cause */
  TH_OBJ,     /* a builtin_reduce_error object met: it is the sum (vx.obj) */
  TH_FAIL,    /* the reduce fails: vx.reason, vx.caused_by */
};

/* ------------------------------------------------------------------ */
/* Numbers                                                             */
/* ------------------------------------------------------------------ */

enum { N_INT, N_BIG, N_DBL, N_TXT };

typedef struct vnum {
  uint8_t k;   /* N_INT, N_BIG (beyond int64), N_DBL, N_TXT (a number no double holds) */
  uint8_t neg; /* N_BIG: negative */
  size_t nl;   /* N_BIG: limbs (top one non-zero); N_TXT: text length */
  union {
    int64_t i;        /* N_INT */
    double d;         /* N_DBL */
    const uint32_t *l; /* N_BIG: magnitude, little-endian base 2^32 (never written once made) */
    const char *s;    /* N_TXT: the number's text */
  } u;
} vnum;

typedef struct term term;
typedef struct tmem tmem;

enum { T_NUM, T_STR, T_TRUE, T_FALSE, T_NULL, T_LIST, T_OBJ, T_TUP };

/* An Erlang term as jiffy decodes JSON, plus _stats' 5-tuple. Terms are
 * values: copying one shares its children, which nothing writes after the
 * term is made (the _stats fold writes only its own accumulator). */
struct term {
  uint8_t t;  /* T_* */
  vnum n;     /* T_NUM */
  size_t len; /* T_STR bytes; T_LIST/T_OBJ/T_TUP elements */
  union {
    const char *s; /* T_STR */
    term *items;   /* T_LIST, T_TUP (5 T_NUM: sum, count, min, max, sumsqr) */
    tmem *mem;     /* T_OBJ, keys unique */
  } u;
};

struct tmem {
  const char *k; /* key bytes */
  size_t kl;     /* key length */
  term v;        /* value */
};

/* A fold's context. */
typedef struct vx {
  dv_arena *a;           /* everything the fold makes */
  const term *cause;     /* TH_SUM: caused_by (valid until the thrower returns) */
  const term *obj;       /* TH_OBJ: the error object met */
  const char *reason;    /* TH_FAIL: in the arena or static */
  const char *caused_by; /* TH_FAIL: JSON text in the arena, or NULL */
} vx;

static size_t mag_norm(const uint32_t *l, size_t n) {
  while (n && !l[n - 1]) n--;
  return n;
}

static int mag_cmp(const uint32_t *a, size_t an, const uint32_t *b, size_t bn) {
  if (an != bn) return an < bn ? -1 : 1;
  for (size_t i = an; i--;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

/* r = a + b; r holds max(an, bn) + 1 limbs. Returns r's length. */
static size_t mag_add(const uint32_t *a, size_t an, const uint32_t *b, size_t bn, uint32_t *r) {
  if (an < bn) {
    const uint32_t *t = a;
    a = b;
    b = t;
    size_t tn = an;
    an = bn;
    bn = tn;
  }
  uint64_t c = 0;
  for (size_t i = 0; i < an; i++) {
    c += (uint64_t)a[i] + (i < bn ? b[i] : 0);
    r[i] = (uint32_t)c;
    c >>= 32;
  }
  r[an] = (uint32_t)c;
  return mag_norm(r, an + 1);
}

/* r = a - b for a >= b; r holds an limbs. */
static size_t mag_sub(const uint32_t *a, size_t an, const uint32_t *b, size_t bn, uint32_t *r) {
  uint64_t borrow = 0;
  for (size_t i = 0; i < an; i++) {
    uint64_t x = a[i], y = (i < bn ? b[i] : 0) + borrow;
    borrow = x < y;
    r[i] = (uint32_t)(x - y);
  }
  return mag_norm(r, an);
}

/* r = a * b; r holds an + bn limbs. */
static size_t mag_mul(const uint32_t *a, size_t an, const uint32_t *b, size_t bn, uint32_t *r) {
  memset(r, 0, (an + bn) * sizeof *r);
  for (size_t i = 0; i < an; i++) {
    uint64_t c = 0;
    for (size_t j = 0; j < bn; j++) {
      uint64_t t = (uint64_t)a[i] * b[j] + r[i + j] + c;
      r[i + j] = (uint32_t)t;
      c = t >> 32;
    }
    r[i + bn] = (uint32_t)c;
  }
  return mag_norm(r, an + bn);
}

/* A number as sign and magnitude (an int64 in tmp). Not to be copied. */
typedef struct mview {
  const uint32_t *l; /* magnitude */
  size_t n;          /* limbs */
  int neg;           /* sign */
  uint32_t tmp[2];   /* an N_INT's limbs */
} mview;

static void mview_of(const vnum *x, mview *m) {
  if (x->k == N_BIG) {
    m->l = x->u.l;
    m->n = x->nl;
    m->neg = x->neg;
    return;
  }
  uint64_t v = x->u.i < 0 ? 0 - (uint64_t)x->u.i : (uint64_t)x->u.i;
  m->neg = x->u.i < 0;
  m->tmp[0] = (uint32_t)v;
  m->tmp[1] = (uint32_t)(v >> 32);
  m->l = m->tmp;
  m->n = mag_norm(m->tmp, 2);
}

/* out = the integer (neg, l[0..n)): N_INT when it fits int64. */
static void num_set_mag(vnum *out, const uint32_t *l, size_t n, int neg) {
  if (n <= 2) {
    uint64_t v = n ? l[0] | (n > 1 ? (uint64_t)l[1] << 32 : 0) : 0;
    if (!neg && v <= (uint64_t)INT64_MAX) {
      out->k = N_INT;
      out->u.i = (int64_t)v;
      return;
    }
    if (neg && v <= (uint64_t)INT64_MAX + 1) {
      out->k = N_INT;
      out->u.i = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
      return;
    }
  }
  out->k = N_BIG;
  out->neg = (uint8_t)(neg != 0);
  out->nl = n;
  out->u.l = l;
}

static int badarith(vx *c) {
  c->reason = R_BADARITH;
  c->caused_by = NULL;
  return TH_FAIL;
}

/* Decimal digits (an optional '-' first) to an integer in the arena. */
static int num_from_dec(dv_arena *a, const char *s, size_t n, vnum *out) {
  int neg = n && s[0] == '-';
  s += neg;
  n -= (size_t)neg;
  size_t cap = n / 9 + 2;
  uint32_t *l = arena_alloc_align(a, cap * sizeof *l, 4);
  if (!l) return DV_ENOMEM;
  size_t ln = 0;
  for (size_t i = 0; i < n;) {
    size_t k = i ? 9 : (n % 9 ? n % 9 : 9);
    uint64_t chunk = 0, mul = 1;
    for (size_t j = 0; j < k; j++, i++) {
      chunk = chunk * 10 + (uint64_t)(s[i] - '0');
      mul *= 10;
    }
    uint64_t c = chunk;
    for (size_t j = 0; j < ln; j++) {
      uint64_t t = (uint64_t)l[j] * mul + c;
      l[j] = (uint32_t)t;
      c = t >> 32;
    }
    if (c) l[ln++] = (uint32_t)c;
  }
  num_set_mag(out, l, ln, neg && ln);
  return 0;
}

/* Append the decimal text of a magnitude. */
static int mag_dec(dv_buf *b, int neg, const uint32_t *l, size_t n) {
  size_t cap = n * 10 + 20;
  uint32_t *t = dv_malloc(n * sizeof *t);
  char *d = dv_malloc(cap);
  if (!t || !d) {
    dv_free(t);
    dv_free(d);
    return DV_ENOMEM;
  }
  memcpy(t, l, n * sizeof *t);
  char *e = d + cap, *p = e;
  size_t tn = n;
  while (tn) {
    uint64_t r = 0;
    for (size_t i = tn; i--;) {
      uint64_t cur = (r << 32) | t[i];
      t[i] = (uint32_t)(cur / 1000000000u);
      r = cur % 1000000000u;
    }
    tn = mag_norm(t, tn);
    for (int k = 0; k < 9; k++) {
      *--p = (char)('0' + r % 10);
      r /= 10;
    }
  }
  while (p < e - 1 && *p == '0') p++;
  if (neg) buf_putc(b, '-');
  buf_append(b, p, (size_t)(e - p));
  dv_free(t);
  dv_free(d);
  return 0;
}

/* A DOM number as Erlang holds it after jiffy. */
static int num_from_json(dv_arena *a, const json_val *v, vnum *out) {
  const char *s = v->u.s;
  size_t n = v->len;
  switch (v->num) {
  case JSON_NUM_INT64:
    out->k = N_INT;
    if (json_num_int64(s, n, &out->u.i) == 0) return 0;
    return num_from_dec(a, s, n, out);
  case JSON_NUM_UINT64:
  case JSON_NUM_BIGINT:
    return num_from_dec(a, s, n, out);
  default: {
    if (n == 2 && s[0] == '-' && s[1] == '0') { /* jiffy: the integer 0 */
      out->k = N_INT;
      out->u.i = 0;
      return 0;
    }
    double d = 0;
    int rc = json_num_double(s, n, &d);
    if (rc == DV_ENOMEM) return rc;
    if (rc == 0 || (rc == DV_ERANGE && d == 0)) { /* an underflow is 0.0 */
      out->k = N_DBL;
      out->u.d = d;
      return 0;
    }
    out->k = N_TXT;
    out->nl = n;
    out->u.s = s;
    return 0;
  }
  }
}

/* Erlang's float(X). */
static int num_dbl(vx *c, const vnum *x, double *out) {
  if (x->k == N_INT) {
    *out = (double)x->u.i;
    return 0;
  }
  if (x->k == N_DBL) {
    *out = x->u.d;
    return 0;
  }
  if (x->k == N_TXT) return badarith(c);
  dv_buf b;
  buf_init(&b);
  int rc = mag_dec(&b, x->neg, x->u.l, x->nl);
  if (!rc) rc = buf_error(&b);
  if (!rc) {
    rc = json_num_double((const char *)b.p, b.len, out);
    if (rc == DV_ERANGE || (!rc && !isfinite(*out))) rc = badarith(c);
  }
  buf_free(&b);
  return rc;
}

/* Erlang's X + Y. */
static int num_add(vx *c, const vnum *x, const vnum *y, vnum *out) {
  if (x->k == N_TXT || y->k == N_TXT) return badarith(c);
  if (x->k == N_INT && y->k == N_INT) {
    int64_t r;
    if (!__builtin_add_overflow(x->u.i, y->u.i, &r)) {
      out->k = N_INT;
      out->u.i = r;
      return 0;
    }
  } else if (x->k == N_DBL || y->k == N_DBL) {
    double p, q;
    int rc = num_dbl(c, x, &p);
    if (!rc) rc = num_dbl(c, y, &q);
    if (rc) return rc;
    double r = p + q;
    if (!isfinite(r)) return badarith(c);
    out->k = N_DBL;
    out->u.d = r;
    return 0;
  }
  mview mx, my;
  mview_of(x, &mx);
  mview_of(y, &my);
  size_t cap = (mx.n > my.n ? mx.n : my.n) + 1;
  uint32_t *r = arena_alloc_align(c->a, cap * sizeof *r, 4);
  if (!r) return DV_ENOMEM;
  size_t n;
  int neg;
  if (mx.neg == my.neg) {
    n = mag_add(mx.l, mx.n, my.l, my.n, r);
    neg = mx.neg;
  } else if (mag_cmp(mx.l, mx.n, my.l, my.n) >= 0) {
    n = mag_sub(mx.l, mx.n, my.l, my.n, r);
    neg = mx.neg;
  } else {
    n = mag_sub(my.l, my.n, mx.l, mx.n, r);
    neg = my.neg;
  }
  num_set_mag(out, r, n, neg && n);
  return 0;
}

/* Erlang's X * X. */
static int num_sq(vx *c, const vnum *x, vnum *out) {
  if (x->k == N_TXT) return badarith(c);
  if (x->k == N_DBL) {
    double r = x->u.d * x->u.d;
    if (!isfinite(r)) return badarith(c);
    out->k = N_DBL;
    out->u.d = r;
    return 0;
  }
  if (x->k == N_INT) {
    int64_t r;
    if (!__builtin_mul_overflow(x->u.i, x->u.i, &r)) {
      out->k = N_INT;
      out->u.i = r;
      return 0;
    }
  }
  mview m;
  mview_of(x, &m);
  uint32_t *r = arena_alloc_align(c->a, 2 * m.n * sizeof *r, 4);
  if (!r) return DV_ENOMEM;
  size_t n = mag_mul(m.l, m.n, m.l, m.n, r);
  num_set_mag(out, r, n, 0);
  return 0;
}

/* Exact comparison of an integer and a double. */
static int cmp_i_d(int64_t i, double d) {
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  double t = trunc(d);
  int64_t ti = (int64_t)t;
  if (i != ti) return i < ti ? -1 : 1;
  double f = d - t;
  return f > 0 ? -1 : f < 0 ? 1 : 0;
}

/* Exact comparison of a big integer (|b| >= 2^63) and a double. */
static int cmp_b_d(const vnum *b, double d) {
  if (fabs(d) < 9223372036854775808.0 || b->neg != (d < 0)) return b->neg ? -1 : 1;
  int e;
  double m = frexp(fabs(d), &e); /* |d| = m 2^e, e >= 64 */
  uint64_t mant = (uint64_t)ldexp(m, 53);
  int sh = e - 53;
  uint32_t t[36] = {0}; /* 53 + 1024 bits */
  size_t w = (size_t)sh / 32;
  unsigned __int128 v = (unsigned __int128)mant << (sh % 32);
  t[w] = (uint32_t)v;
  t[w + 1] = (uint32_t)(v >> 32);
  t[w + 2] = (uint32_t)(v >> 64);
  int r = mag_cmp(b->u.l, b->nl, t, mag_norm(t, w + 3));
  return b->neg ? -r : r;
}

/* Erlang's term order on numbers: exact. */
static int num_cmp(const vnum *x, const vnum *y) {
  if (x->k == N_INT && y->k == N_INT) return x->u.i < y->u.i ? -1 : x->u.i > y->u.i;
  if (x->k == N_DBL && y->k == N_DBL) return x->u.d < y->u.d ? -1 : x->u.d > y->u.d;
  if (x->k == N_INT && y->k == N_DBL) return cmp_i_d(x->u.i, y->u.d);
  if (x->k == N_DBL && y->k == N_INT) return -cmp_i_d(y->u.i, x->u.d);
  if (x->k == N_BIG && y->k == N_DBL) return cmp_b_d(x, y->u.d);
  if (x->k == N_DBL && y->k == N_BIG) return -cmp_b_d(y, x->u.d);
  mview mx, my;
  mview_of(x, &mx);
  mview_of(y, &my);
  if (mx.neg != my.neg) return mx.neg ? -1 : 1;
  int r = mag_cmp(mx.l, mx.n, my.l, my.n);
  return mx.neg ? -r : r;
}

/* The number as JSON (jiffy's layout). */
static int num_json(dv_buf *b, const vnum *x) {
  char t[JSON_NUM_BUF];
  switch (x->k) {
  case N_INT:
    buf_append(b, t, json_fmt_int64(x->u.i, t));
    return 0;
  case N_DBL:
    buf_append(b, t, json_fmt_double(x->u.d, t));
    return 0;
  case N_BIG:
    return mag_dec(b, x->neg, x->u.l, x->nl);
  default:
    buf_append(b, x->u.s, x->nl);
    return 0;
  }
}

/* A float as Erlang's io_lib writes it (io_lib_format:fwrite_g/1, OTP 25
 * and later): the shortest round-trip digits S with value S * 10^Place,
 * laid out by insert_decimal/3. */
static void erl_double(dv_buf *b, double d) {
  char t[JSON_NUM_BUF], dig[24];
  size_t n = json_fmt_double(d, t), nd = 0, fl = 0;
  const char *p = t, *e = t + n;
  int neg = *p == '-';
  p += neg;
  int frac = 0;
  for (; p < e && *p != 'e'; p++) {
    if (*p == '.') {
      frac = 1;
      continue;
    }
    if (nd == 0 && *p == '0') { /* leading zeros count only as fraction places */
      fl += (size_t)frac;
      continue;
    }
    dig[nd++] = *p;
    fl += (size_t)frac;
  }
  long ex = p < e ? strtol(p + 1, NULL, 10) : 0;
  if (nd == 0) {
    buf_puts(b, neg ? "-0.0" : "0.0");
    return;
  }
  long place = ex - (long)fl;
  while (nd > 1 && dig[nd - 1] == '0') {
    nd--;
    place++;
  }
  long L = (long)nd, x = place + L - 1;
  char xs[24];
  int xl = snprintf(xs, sizeof xs, "%ld", x);
  long cost = xl + 2;
  if (neg) buf_putc(b, '-');
  if (place < 0) {
    if (x >= 0) {
      buf_append(b, dig, (size_t)(L + place));
      buf_putc(b, '.');
      buf_append(b, dig + L + place, (size_t)-place);
      return;
    }
    if (2 - place - L <= cost) {
      buf_puts(b, "0.");
      for (long i = 0; i < -place - L; i++) buf_putc(b, '0');
      buf_append(b, dig, nd);
      return;
    }
  } else if (cost + (L == 1) >= place + 2 && fabs(d) < 9007199254740992.0) {
    buf_append(b, dig, nd);
    for (long i = 0; i < place; i++) buf_putc(b, '0');
    buf_puts(b, ".0");
    return;
  }
  buf_putc(b, dig[0]);
  buf_putc(b, '.');
  if (nd == 1) buf_putc(b, '0');
  else buf_append(b, dig + 1, nd - 1);
  buf_putc(b, 'e');
  buf_append(b, xs, (size_t)xl);
}

/* The number as io_lib:write writes it. */
static int num_erl(dv_buf *b, const vnum *x) {
  if (x->k == N_DBL) {
    erl_double(b, x->u.d);
    return 0;
  }
  return num_json(b, x);
}

/* ------------------------------------------------------------------ */
/* Terms                                                               */
/* ------------------------------------------------------------------ */

static const term T0 = {T_NUM, {N_INT, 0, 0, {.i = 0}}, 0, {NULL}}; /* the integer 0 */

static int term_from_json(dv_arena *a, const json_val *v, term *out) {
  memset(out, 0, sizeof *out);
  if (!v) {
    out->t = T_NULL;
    return 0;
  }
  switch (v->type) {
  case JSON_NULL:
    out->t = T_NULL;
    return 0;
  case JSON_BOOL:
    out->t = v->b ? T_TRUE : T_FALSE;
    return 0;
  case JSON_NUMBER:
    out->t = T_NUM;
    return num_from_json(a, v, &out->n);
  case JSON_STRING:
    out->t = T_STR;
    out->len = v->len;
    out->u.s = v->u.s;
    return 0;
  case JSON_ARRAY: {
    out->t = T_LIST;
    out->len = v->len;
    if (!v->len) return 0;
    out->u.items = arena_alloc(a, v->len * sizeof(term));
    if (!out->u.items) return DV_ENOMEM;
    for (size_t i = 0; i < v->len; i++) {
      int rc = term_from_json(a, v->u.items[i], &out->u.items[i]);
      if (rc) return rc;
    }
    return 0;
  }
  default: {
    out->t = T_OBJ;
    out->len = v->len;
    if (!v->len) return 0;
    out->u.mem = arena_alloc(a, v->len * sizeof(tmem));
    if (!out->u.mem) return DV_ENOMEM;
    for (size_t i = 0; i < v->len; i++) {
      out->u.mem[i].k = v->u.members[i].key;
      out->u.mem[i].kl = v->u.members[i].klen;
      int rc = term_from_json(a, v->u.members[i].val, &out->u.mem[i].v);
      if (rc) return rc;
    }
    return 0;
  }
  }
}

static const term *obj_get(const term *o, const char *k) {
  size_t kl = strlen(k);
  for (size_t i = 0; i < o->len; i++)
    if (o->u.mem[i].kl == kl && !memcmp(o->u.mem[i].k, k, kl)) return &o->u.mem[i].v;
  return NULL;
}

static const char *const STAT_KEYS[5] = {"sum", "count", "min", "max", "sumsqr"};

/* The term as JSON; a 5-tuple is packed as pack_stats/1 packs it. */
static int term_json(dv_buf *b, const term *t) {
  int rc = 0;
  switch (t->t) {
  case T_NUM:
    return num_json(b, &t->n);
  case T_STR:
    json_escape(b, t->u.s, t->len);
    return 0;
  case T_TRUE:
    buf_puts(b, "true");
    return 0;
  case T_FALSE:
    buf_puts(b, "false");
    return 0;
  case T_NULL:
    buf_puts(b, "null");
    return 0;
  case T_LIST:
    buf_putc(b, '[');
    for (size_t i = 0; i < t->len && !rc; i++) {
      if (i) buf_putc(b, ',');
      rc = term_json(b, &t->u.items[i]);
    }
    buf_putc(b, ']');
    return rc;
  case T_OBJ:
    buf_putc(b, '{');
    for (size_t i = 0; i < t->len && !rc; i++) {
      if (i) buf_putc(b, ',');
      json_escape(b, t->u.mem[i].k, t->u.mem[i].kl);
      buf_putc(b, ':');
      rc = term_json(b, &t->u.mem[i].v);
    }
    buf_putc(b, '}');
    return rc;
  default:
    buf_putc(b, '{');
    for (size_t i = 0; i < 5 && !rc; i++) {
      if (i) buf_putc(b, ',');
      json_escape(b, STAT_KEYS[i], strlen(STAT_KEYS[i]));
      buf_putc(b, ':');
      rc = num_json(b, &t->u.items[i].n);
    }
    buf_putc(b, '}');
    return rc;
  }
}

/* JSON text of a term, NUL-terminated, in the arena (NULL: DV_ENOMEM). */
static const char *term_text(dv_arena *a, const term *t) {
  dv_buf b;
  buf_init(&b);
  int rc = term_json(&b, t);
  const char *s = rc || buf_error(&b) ? NULL : arena_strndup(a, b.p ? (const char *)b.p : "", b.len);
  buf_free(&b);
  return s;
}

/* Why the reduce fails: reason (copied from r[0..rn)) and caused_by. */
static int fail(vx *c, const char *r, size_t rn, const term *cause) {
  c->reason = arena_strndup(c->a, r, rn);
  c->caused_by = cause ? term_text(c->a, cause) : NULL;
  return c->reason && (!cause || c->caused_by) ? TH_FAIL : DV_ENOMEM;
}

static int fail_static(vx *c, const char *r, const term *cause) { return fail(c, r, strlen(r), cause); }

/* ------------------------------------------------------------------ */
/* Erlang's external term sizes (erlang:external_size/1, OTP 26)       */
/* ------------------------------------------------------------------ */

/* An integer: SMALL_INTEGER_EXT, INTEGER_EXT, SMALL_BIG_EXT, LARGE_BIG_EXT. */
static size_t etf_mag(int neg, const uint32_t *l, size_t n) {
  if (n <= 2) {
    uint64_t v = n ? l[0] | (n > 1 ? (uint64_t)l[1] << 32 : 0) : 0;
    if (!neg && v <= 255) return 2;
    if (neg ? v <= 0x80000000u : v <= 0x7fffffffu) return 5;
  }
  size_t bits = 32 * (n - 1) + (32 - (size_t)__builtin_clz(l[n - 1]));
  size_t bytes = (bits + 7) / 8;
  return bytes <= 255 ? 3 + bytes : 6 + bytes;
}

static size_t etf_num(const vnum *x) {
  if (x->k == N_DBL || x->k == N_TXT) return 9; /* NEW_FLOAT_EXT */
  mview m;
  mview_of(x, &m);
  return etf_mag(m.neg, m.l, m.n);
}

static int small_int(const term *t) { return t->t == T_NUM && t->n.k == N_INT && t->n.u.i >= 0 && t->n.u.i <= 255; }

static size_t etf_term(const term *t) {
  size_t s = 0;
  switch (t->t) {
  case T_NUM:
    return etf_num(&t->n);
  case T_STR:
    return 5 + t->len; /* BINARY_EXT */
  case T_TRUE:
  case T_NULL:
    return 6; /* SMALL_ATOM_UTF8_EXT */
  case T_FALSE:
    return 7;
  case T_LIST: {
    if (!t->len) return 1; /* NIL_EXT */
    int str = t->len <= 65535;
    for (size_t i = 0; i < t->len && str; i++) str = small_int(&t->u.items[i]);
    if (str) return 3 + t->len; /* STRING_EXT */
    for (size_t i = 0; i < t->len; i++) s += etf_term(&t->u.items[i]);
    return 5 + s + 1; /* LIST_EXT ... NIL_EXT */
  }
  case T_OBJ: /* {[{K, V}, ...]} */
    if (!t->len) return 2 + 1;
    for (size_t i = 0; i < t->len; i++) s += 2 + 5 + t->u.mem[i].kl + etf_term(&t->u.mem[i].v);
    return 2 + 5 + s + 1;
  default:
    for (size_t i = 0; i < 5; i++) s += etf_num(&t->u.items[i].n);
    return 2 + s;
  }
}

/* ------------------------------------------------------------------ */
/* Erlang's io_lib: ~w (io_lib:write) and ~p (io_lib_pretty:print)     */
/* ------------------------------------------------------------------ */

static int printable_latin1(unsigned c) {
  return (c >= 32 && c <= 126) || c >= 160 || (c >= 8 && c <= 13) || c == 27;
}

/* io_lib:write_string(S, $"): the quoted text of printable characters. */
static void erl_string(dv_buf *b, const uint8_t *s, size_t n) {
  buf_putc(b, '"');
  for (size_t i = 0; i < n; i++) {
    uint8_t ch = s[i];
    const char *esc = NULL;
    switch (ch) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case '\n': esc = "\\n"; break;
    case '\r': esc = "\\r"; break;
    case '\t': esc = "\\t"; break;
    case 11: esc = "\\v"; break;
    case 8: esc = "\\b"; break;
    case 12: esc = "\\f"; break;
    case 27: esc = "\\e"; break;
    default: break;
    }
    if (esc) buf_puts(b, esc);
    else buf_putc(b, ch);
  }
  buf_putc(b, '"');
}

/* <<1,2,3>>, io_lib:write_binary's form. */
static void erl_bytes(dv_buf *b, const char *s, size_t n) {
  buf_puts(b, "<<");
  for (size_t i = 0; i < n; i++) buf_printf(b, i ? ",%u" : "%u", (unsigned)(uint8_t)s[i]);
  buf_puts(b, ">>");
}

static int erl_w(dv_buf *b, const term *t);

static int erl_w_list(dv_buf *b, const term *items, size_t n, char open, char close) {
  int rc = 0;
  buf_putc(b, (uint8_t)open);
  for (size_t i = 0; i < n && !rc; i++) {
    if (i) buf_putc(b, ',');
    rc = erl_w(b, &items[i]);
  }
  buf_putc(b, (uint8_t)close);
  return rc;
}

/* io_lib:write/1 (~w). */
static int erl_w(dv_buf *b, const term *t) {
  int rc = 0;
  switch (t->t) {
  case T_NUM:
    return num_erl(b, &t->n);
  case T_STR:
    erl_bytes(b, t->u.s, t->len);
    return 0;
  case T_TRUE:
    buf_puts(b, "true");
    return 0;
  case T_FALSE:
    buf_puts(b, "false");
    return 0;
  case T_NULL:
    buf_puts(b, "null");
    return 0;
  case T_LIST:
    return erl_w_list(b, t->u.items, t->len, '[', ']');
  case T_OBJ:
    buf_puts(b, "{[");
    for (size_t i = 0; i < t->len && !rc; i++) {
      if (i) buf_putc(b, ',');
      buf_putc(b, '{');
      erl_bytes(b, t->u.mem[i].k, t->u.mem[i].kl);
      buf_putc(b, ',');
      rc = erl_w(b, &t->u.mem[i].v);
      buf_putc(b, '}');
    }
    buf_puts(b, "]}");
    return rc;
  default:
    return erl_w_list(b, t->u.items, 5, '{', '}');
  }
}

/* io_lib_pretty's intermediate format, for the terms JSON gives: a leaf
 * (chars), a list, an untagged tuple, or a binary that is not printable
 * ({bin, S}: only a leaf counts as "atomic" for the layout). */
enum { P_LEAF, P_LIST, P_TUPLE, P_BIN };

typedef struct pif pif;
struct pif {
  uint8_t kind;  /* P_* */
  size_t len;    /* characters when written on one line */
  const char *s; /* P_LEAF, P_BIN: the text */
  pif *el;       /* P_LIST, P_TUPLE: elements */
  size_t n;      /* their number */
};

static int pif_leaf(dv_arena *a, dv_buf *tmp, pif *p, uint8_t kind) {
  p->kind = kind;
  p->len = tmp->len;
  p->s = buf_error(tmp) ? NULL : arena_memdup(a, tmp->p ? (const void *)tmp->p : "", tmp->len);
  p->el = NULL;
  p->n = 0;
  return p->s ? 0 : DV_ENOMEM;
}

static int pif_of(dv_arena *a, const term *t, pif *p);

static int pif_bin(dv_arena *a, const char *s, size_t n, pif *p) {
  dv_buf tmp;
  buf_init(&tmp);
  int ok = 1;
  for (size_t i = 0; i < n && ok; i++) ok = printable_latin1((uint8_t)s[i]);
  if (!n) buf_puts(&tmp, "<<>>");
  else if (ok) {
    buf_puts(&tmp, "<<");
    erl_string(&tmp, (const uint8_t *)s, n);
    buf_puts(&tmp, ">>");
  } else erl_bytes(&tmp, s, n);
  int rc = pif_leaf(a, &tmp, p, !n || ok ? P_LEAF : P_BIN);
  buf_free(&tmp);
  return rc;
}

static int pif_seq(dv_arena *a, pif *p, uint8_t kind, size_t n) {
  p->kind = kind;
  p->n = n;
  p->s = NULL;
  p->len = 2 + (n ? n - 1 : 0);
  p->el = arena_alloc(a, (n ? n : 1) * sizeof *p->el);
  return p->el ? 0 : DV_ENOMEM;
}

/* The proplist of an object: [{<<"k">>,V}, ...]. */
static int pif_props(dv_arena *a, const term *o, pif *p) {
  if (!o->len) {
    dv_buf tmp;
    buf_init(&tmp);
    buf_puts(&tmp, "[]");
    int rc = pif_leaf(a, &tmp, p, P_LEAF);
    buf_free(&tmp);
    return rc;
  }
  int rc = pif_seq(a, p, P_LIST, o->len);
  for (size_t i = 0; i < o->len && !rc; i++) {
    pif *kv = &p->el[i];
    rc = pif_seq(a, kv, P_TUPLE, 2);
    if (!rc) rc = pif_bin(a, o->u.mem[i].k, o->u.mem[i].kl, &kv->el[0]);
    if (!rc) rc = pif_of(a, &o->u.mem[i].v, &kv->el[1]);
    if (!rc) {
      kv->len += kv->el[0].len + kv->el[1].len;
      p->len += kv->len;
    }
  }
  return rc;
}

static int pif_of(dv_arena *a, const term *t, pif *p) {
  dv_buf tmp;
  buf_init(&tmp);
  int rc = 0;
  switch (t->t) {
  case T_STR:
    return pif_bin(a, t->u.s, t->len, p);
  case T_LIST: {
    int str = t->len > 0;
    for (size_t i = 0; i < t->len && str; i++) {
      const term *e = &t->u.items[i];
      str = e->t == T_NUM && e->n.k == N_INT && e->n.u.i >= 0 && e->n.u.i <= 255 && printable_latin1((unsigned)e->n.u.i);
    }
    if (!t->len || str) { /* "[]", or a printable list printed as a string */
      if (!t->len) buf_puts(&tmp, "[]");
      else {
        uint8_t *s = buf_extend(&tmp, t->len);
        for (size_t i = 0; s && i < t->len; i++) s[i] = (uint8_t)t->u.items[i].n.u.i;
        if (s) {
          dv_buf q;
          buf_init(&q);
          erl_string(&q, s, t->len);
          buf_reset(&tmp);
          buf_append(&tmp, q.p, q.len);
          if (buf_error(&q)) tmp.oom = 1;
          buf_free(&q);
        }
      }
      break;
    }
    rc = pif_seq(a, p, P_LIST, t->len);
    for (size_t i = 0; i < t->len && !rc; i++) {
      rc = pif_of(a, &t->u.items[i], &p->el[i]);
      if (!rc) p->len += p->el[i].len;
    }
    return rc;
  }
  case T_OBJ:
    rc = pif_seq(a, p, P_TUPLE, 1);
    if (!rc) rc = pif_props(a, t, &p->el[0]);
    if (!rc) p->len += p->el[0].len;
    return rc;
  case T_TUP:
    rc = pif_seq(a, p, P_TUPLE, 5);
    for (size_t i = 0; i < 5 && !rc; i++) {
      rc = pif_of(a, &t->u.items[i], &p->el[i]);
      if (!rc) p->len += p->el[i].len;
    }
    return rc;
  default:
    rc = erl_w(&tmp, t);
    break;
  }
  if (!rc) rc = pif_leaf(a, &tmp, p, P_LEAF);
  buf_free(&tmp);
  return rc;
}

/* io_lib_pretty:write/1: the whole thing on one line. */
static void pif_write(dv_buf *b, const pif *p) {
  if (p->kind == P_LEAF || p->kind == P_BIN) {
    buf_append(b, p->s, p->len);
    return;
  }
  buf_putc(b, p->kind == P_LIST ? '[' : '{');
  for (size_t i = 0; i < p->n; i++) {
    if (i) buf_putc(b, ',');
    pif_write(b, &p->el[i]);
  }
  buf_putc(b, p->kind == P_LIST ? ']' : '}');
}

#define LL 80 /* ~p's line length */

typedef struct pp {
  dv_buf *b; /* output */
  long m;    /* the whole term's length (io_lib_pretty's M when line_max_chars is -1) */
} pp;

static void pp_ind(pp *x, long ind) {
  buf_putc(x->b, '\n');
  for (long i = 0; i < ind; i++) buf_putc(x->b, ' ');
}

static long pp_term(pp *x, const pif *p, long col, long ind, long ld, long w);

/* pp_element/8: returns the width taken (LL forces the next on a new line). */
static long pp_element(pp *x, const pif *e, long col, long ind, long ld, long w) {
  long len = (long)e->len;
  if (len < LL - col - ld && len + w + ld <= x->m && e->kind == P_LEAF) {
    pif_write(x->b, e);
    return len;
  }
  pp_term(x, e, col, ind, ld, w);
  return LL;
}

/* pp_list/9 and pp_tail/10 over the elements. */
static void pp_list(pp *x, const pif *el, size_t n, long col0, long ind, long ld, long w) {
  long we = pp_element(x, &el[0], col0, ind, n > 1 ? 0 : ld + 1, w);
  long col = col0 + we;
  w += we;
  for (size_t i = 1; i < n; i++) {
    const pif *e = &el[i];
    long ld1 = i + 1 < n ? 0 : ld + 1, elen = 1 + (long)e->len;
    int atm = e->kind == P_LEAF;
    if ((ld1 == 0 && elen + 1 < LL - col && w + elen + 1 <= x->m && atm) ||
        (ld1 > 0 && elen < LL - col - ld1 && w + elen + ld1 <= x->m && atm)) {
      buf_putc(x->b, ',');
      pif_write(x->b, e);
      col += elen;
      w += elen;
    } else {
      buf_putc(x->b, ',');
      pp_ind(x, ind);
      we = pp_element(x, e, col0, ind, ld1, 0);
      col = col0 + we;
      w = we;
    }
  }
}

/* pp_binary/7: the bytes of <<...>>, at most N characters a line. */
static void pp_binary(pp *x, const pif *p, long col, long ind, long ld, long w) {
  long a = LL - col, bb = x->m - 4 - w;
  long n0 = (a < bb ? a : bb) - ld, n;
  if (n0 < 8) n0 = 8;
  n = n0;
  const char *s = p->s + 2, *e = p->s + p->len - 2;
  buf_puts(x->b, "<<");
  while (s < e) {
    const char *c = memchr(s, ',', (size_t)(e - s));
    if (!c) {
      if (e - s > n) pp_ind(x, ind);
      buf_append(x->b, s, (size_t)(e - s));
      break;
    }
    long len = (long)(c - s) + 1;
    if (n - len < 0) {
      pp_ind(x, ind);
      n = n0 - len;
    } else n -= len;
    buf_append(x->b, s, (size_t)len);
    s = c + 1;
  }
  buf_puts(x->b, ">>");
}

/* pp/8. */
static long pp_term(pp *x, const pif *p, long col, long ind, long ld, long w) {
  long len = (long)p->len;
  if (len < LL - col - ld && len + w + ld <= x->m) {
    pif_write(x->b, p);
    return len;
  }
  switch (p->kind) {
  case P_LIST:
  case P_TUPLE:
    buf_putc(x->b, p->kind == P_LIST ? '[' : '{');
    pp_list(x, p->el, p->n, col + 1, ind + 1, ld, w + 1);
    buf_putc(x->b, p->kind == P_LIST ? ']' : '}');
    break;
  case P_BIN:
    pp_binary(x, p, col + 2, ind + 2, ld, w);
    break;
  default:
    pif_write(x->b, p);
  }
  return len;
}

/* ~p of t where the text before it on its line is col - 1 characters
 * long (io_lib_format passes column I + 1 to io_lib_pretty:print/2). */
static int erl_p(dv_arena *a, dv_buf *b, const pif *p, long col) {
  (void)a;
  pp x = {b, (long)p->len};
  if ((long)p->len < LL - col || p->kind == P_LEAF) pif_write(b, p);
  else pp_term(&x, p, col, col - 1, 0, 0);
  return buf_error(b);
}

/* ------------------------------------------------------------------ */
/* _sum                                                                */
/* ------------------------------------------------------------------ */

static int sum_values(vx *c, const term *v, const term *acc, term *out);

/* A one-element list of t, in the arena. */
static int list1(vx *c, const term *t, term *out) {
  memset(out, 0, sizeof *out);
  out->t = T_LIST;
  out->len = 1;
  out->u.items = arena_alloc(c->a, sizeof(term));
  if (!out->u.items) return DV_ENOMEM;
  out->u.items[0] = *t;
  return 0;
}

/* sum_arrays(X, Y), X being the accumulator's side. */
static int sum_arrays(vx *c, const term *x, const term *y, term *out) {
  if (!y->len) {
    *out = *x;
    return 0;
  }
  if (!x->len) {
    *out = *y;
    return 0;
  }
  size_t n = x->len > y->len ? x->len : y->len, m = x->len < y->len ? x->len : y->len;
  term *r = arena_alloc(c->a, n * sizeof *r);
  if (!r) return DV_ENOMEM;
  for (size_t i = 0; i < m; i++) {
    const term *p = &x->u.items[i], *q = &y->u.items[i];
    if (p->t != T_NUM || q->t != T_NUM) { /* throw_sum_error(Else): X's tail */
      term *tail = arena_alloc(c->a, sizeof *tail);
      if (!tail) return DV_ENOMEM;
      memset(tail, 0, sizeof *tail);
      tail->t = T_LIST;
      tail->len = x->len - i;
      tail->u.items = x->u.items + i;
      c->cause = tail;
      return TH_SUM;
    }
    memset(&r[i], 0, sizeof r[i]);
    r[i].t = T_NUM;
    int rc = num_add(c, &p->n, &q->n, &r[i].n);
    if (rc) return rc;
  }
  const term *rest = x->len > m ? x : y;
  for (size_t i = m; i < n; i++) r[i] = rest->u.items[i];
  memset(out, 0, sizeof *out);
  out->t = T_LIST;
  out->len = n;
  out->u.items = r;
  return 0;
}

static int mem_cmp(const void *p, const void *q) {
  const tmem *a = p, *b = q;
  size_t n = a->kl < b->kl ? a->kl : b->kl;
  int r = memcmp(a->k, b->k, n);
  return r ? r : a->kl < b->kl ? -1 : a->kl > b->kl;
}

static tmem *sorted(vx *c, const term *o) {
  tmem *m = arena_alloc(c->a, (o->len ? o->len : 1) * sizeof *m);
  if (!m) return NULL;
  if (o->len) memcpy(m, o->u.mem, o->len * sizeof *m);
  qsort(m, o->len, sizeof *m, mem_cmp);
  return m;
}

/* {sum_objects(lists:sort(Props), lists:sort(AccProps))} */
static int sum_objects(vx *c, const term *v, const term *acc, term *out) {
  tmem *p = sorted(c, v), *q = sorted(c, acc);
  tmem *r = arena_alloc(c->a, (v->len + acc->len + 1) * sizeof *r);
  if (!p || !q || !r) return DV_ENOMEM;
  size_t i = 0, j = 0, k = 0;
  while (i < v->len || j < acc->len) {
    int d = i == v->len ? 1 : j == acc->len ? -1 : mem_cmp(&p[i], &q[j]);
    if (d < 0) r[k++] = p[i++];
    else if (d > 0) r[k++] = q[j++];
    else {
      r[k] = p[i];
      int rc = sum_values(c, &p[i].v, &q[j].v, &r[k].v);
      if (rc) return rc;
      i++, j++, k++;
    }
  }
  memset(out, 0, sizeof *out);
  out->t = T_OBJ;
  out->len = k;
  out->u.mem = r;
  return 0;
}

/* sum_values(Value, Acc). */
static int sum_values(vx *c, const term *v, const term *acc, term *out) {
  int vn = v->t == T_NUM, an = acc->t == T_NUM, vl = v->t == T_LIST, al = acc->t == T_LIST;
  if (vn && an) {
    memset(out, 0, sizeof *out);
    out->t = T_NUM;
    return num_add(c, &acc->n, &v->n, &out->n);
  }
  if (vl && al) return sum_arrays(c, acc, v, out);
  if ((vn && al) || (vl && an)) {
    term one;
    int rc = list1(c, vn ? v : acc, &one);
    if (rc) return rc;
    return vn ? sum_arrays(c, acc, &one, out) : sum_arrays(c, &one, v, out);
  }
  if (v->t == T_OBJ) {
    const term *e = obj_get(v, "error");
    if (e) {
      if (e->t == T_STR && e->len == 20 && !memcmp(e->u.s, "builtin_reduce_error", 20)) {
        c->obj = v;
        return TH_OBJ;
      }
      return fail_static(c, R_SUM_ERRKEY, v);
    }
    if (acc->t == T_NUM && acc->n.k == N_INT && acc->n.u.i == 0) {
      *out = *v;
      return 0;
    }
    if (acc->t == T_OBJ) return sum_objects(c, v, acc, out);
    return fail_static(c, R_SUM_CASE, v);
  }
  c->cause = v;
  return TH_SUM;
}

/* The error object of builtin_sum_rows/2 (cause NULL: check_sum_overflow's,
 * with reason r and no caused_by). */
static int err_obj(vx *c, const char *r, size_t rn, const term *cause, term *out) {
  tmem *m = arena_alloc(c->a, 3 * sizeof *m);
  if (!m) return DV_ENOMEM;
  memset(m, 0, 3 * sizeof *m);
  const char *name = dv_err_couch(DV_EVIEW_BUILTIN);
  static const char *const keys[3] = {"error", "reason", "caused_by"};
  for (int i = 0; i < 3; i++) {
    m[i].k = keys[i];
    m[i].kl = strlen(keys[i]);
  }
  m[0].v.t = T_STR;
  m[0].v.u.s = name;
  m[0].v.len = strlen(name);
  m[1].v.t = T_STR;
  m[1].v.u.s = r;
  m[1].v.len = rn;
  if (cause) m[2].v = *cause;
  memset(out, 0, sizeof *out);
  out->t = T_OBJ;
  out->len = cause ? 3 : 2;
  out->u.mem = m;
  return 0;
}

/* The values a fold reads: the rows' (reduce) or parsed states (rereduce). */
typedef struct vsrc {
  const vr_row *rows;          /* reduce: the rows, or NULL */
  const json_val *const *vals; /* rereduce: the states */
  size_t n;                    /* how many */
} vsrc;

static const json_val *val_at(const vsrc *s, size_t i) { return s->rows ? s->rows[i].value : s->vals[i]; }

/* builtin_sum_rows(KVs, 0) over the values. */
static int sum_fold(vx *c, const vsrc *src, term *res) {
  term acc = T0;
  for (size_t i = 0; i < src->n; i++) {
    term v, nacc;
    int rc = term_from_json(c->a, val_at(src, i), &v);
    if (!rc) rc = sum_values(c, &v, &acc, &nacc);
    if (rc == TH_OBJ) {
      *res = *c->obj;
      return 0;
    }
    if (rc == TH_SUM) return err_obj(c, SUMERROR, sizeof SUMERROR - 1, c->cause, res);
    if (rc) return rc;
    acc = nacc;
  }
  *res = acc;
  return 0;
}

/* external_size of a DOM value as jiffy decodes it. */
static int etf_json(dv_arena *a, const json_val *v, size_t *out) {
  term t;
  size_t s = 0;
  int rc = 0;
  if (!v || v->type != JSON_ARRAY || !v->len) {
    if (v && v->type == JSON_OBJECT && v->len) {
      s = 2 + 5 + 1;
      for (size_t i = 0; i < v->len && !rc; i++) {
        size_t e;
        rc = etf_json(a, v->u.members[i].val, &e);
        s += 2 + 5 + v->u.members[i].klen + e;
      }
      *out = s;
      return rc;
    }
    rc = term_from_json(a, v, &t); /* a scalar, [] or {}: no allocation but big integers */
    if (!rc) *out = etf_term(&t);
    return rc;
  }
  int str = v->len <= 65535;
  for (size_t i = 0; i < v->len && str; i++) {
    const json_val *e = v->u.items[i];
    int64_t x;
    str = e->type == JSON_NUMBER && ((e->num == JSON_NUM_INT64 && !json_num_int64(e->u.s, e->len, &x) && x >= 0 &&
                                      x <= 255) ||
                                     (e->len == 2 && !memcmp(e->u.s, "-0", 2))); /* jiffy's 0 */
  }
  if (str) {
    *out = 3 + v->len;
    return 0;
  }
  s = 5 + 1;
  for (size_t i = 0; i < v->len && !rc; i++) {
    size_t e;
    rc = etf_json(a, v->u.items[i], &e);
    s += e;
  }
  *out = s;
  return rc;
}

/* check_sum_overflow(InSize, OutSize, Sum): in is ?term_size(KVs). */
static int sum_check(vx *c, size_t in, term *res) {
  size_t outsz = 1 + etf_term(res);
  if (!(outsz > SUM_LIMIT && outsz * 2 > in)) return 0;
  char *r = arena_alloc(c->a, sizeof SUM_OVERFLOW + 64);
  if (!r) return DV_ENOMEM;
  int n = snprintf(r, sizeof SUM_OVERFLOW + 64, "%s%zu output size: %zu", SUM_OVERFLOW, in, outsz);
  return err_obj(c, r, (size_t)n, NULL, res);
}

static int sum_reduce(vx *c, const vr_row *rows, size_t n, dv_buf *out) {
  vsrc src = {rows, NULL, n};
  term res;
  int rc = sum_fold(c, &src, &res);
  if (rc) return rc;
  if (1 + etf_term(&res) > SUM_LIMIT) { /* [[[Key, DocId], Value], ...] */
    size_t in = 1 + (n ? 5 + 1 : 1);
    for (size_t i = 0; i < n && !rc; i++) {
      size_t k = 0, v = 0;
      rc = etf_json(c->a, rows[i].key, &k);
      if (!rc) rc = etf_json(c->a, rows[i].value, &v);
      in += 5 + (5 + k + 5 + rows[i].id_len + 1) + v + 1;
    }
    if (!rc) rc = sum_check(c, in, &res);
    if (rc) return rc;
  }
  return term_json(out, &res);
}

/* A state back as the DOM it was written from. */
static int parse_state(dv_arena *a, const uint8_t *p, size_t n, json_val **out) {
  json_opts o = {JSON_DEPTH_LIMIT, 0, 0};
  int rc = json_parse(a, p, n, &o, out, NULL);
  return rc == DV_ENOMEM ? rc : rc ? DV_ECORRUPT : 0;
}

static int sum_rereduce(vx *c, const uint8_t *const *states, const size_t *lens, size_t n, dv_buf *out) {
  json_val **vals = arena_alloc(c->a, (n ? n : 1) * sizeof *vals);
  if (!vals) return DV_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    int rc = parse_state(c->a, states[i], lens[i], &vals[i]);
    if (rc) return rc;
  }
  vsrc src = {NULL, (const json_val *const *)vals, n};
  term res;
  int rc = sum_fold(c, &src, &res);
  if (rc) return rc;
  if (1 + etf_term(&res) > SUM_LIMIT) { /* [[[], Reduction], ...] */
    size_t in = 1 + (n ? 5 + 1 : 1);
    for (size_t i = 0; i < n && !rc; i++) {
      size_t v = 0;
      rc = etf_json(c->a, vals[i], &v);
      in += 5 + 1 + v + 1;
    }
    if (!rc) rc = sum_check(c, in, &res);
    if (rc) return rc;
  }
  return term_json(out, &res);
}

/* ------------------------------------------------------------------ */
/* _stats                                                              */
/* ------------------------------------------------------------------ */

/* A reason made of text, an Erlang-written term and more text. */
static int stat_fail(vx *c, const char *pre, const char *key, const term *t, int pretty, const term *props,
                     const char *post) {
  dv_buf b;
  buf_init(&b);
  buf_puts(&b, pre);
  if (key) buf_puts(&b, key);
  int rc = 0;
  if (props || pretty) {
    pif p;
    rc = props ? pif_props(c->a, props, &p) : pif_of(c->a, t, &p);
    if (!rc) rc = erl_p(c->a, &b, &p, (long)b.len + 1);
  } else rc = erl_w(&b, t);
  buf_puts(&b, post);
  if (!rc) rc = buf_error(&b);
  if (!rc) rc = fail(c, (const char *)b.p, b.len, NULL);
  buf_free(&b);
  return rc;
}

/* A 5-tuple of zeros in stack[5], or in the arena when stack is NULL (an
 * accumulator, which outlives the call). */
static int tup_alloc(vx *c, term *out, term *stack) {
  memset(out, 0, sizeof *out);
  out->t = T_TUP;
  out->len = 5;
  out->u.items = stack ? stack : arena_alloc(c->a, 5 * sizeof(term));
  if (!out->u.items) return DV_ENOMEM;
  memset(out->u.items, 0, 5 * sizeof(term));
  for (int i = 0; i < 5; i++) out->u.items[i].t = T_NUM;
  return 0;
}

/* {X, 1, X, X, X*X} */
static int tup_of(vx *c, const vnum *x, term *out, term *stack) {
  int rc = tup_alloc(c, out, stack);
  if (rc) return rc;
  term *it = out->u.items;
  it[0].n = it[2].n = it[3].n = *x;
  it[1].n.k = N_INT;
  it[1].n.u.i = 1;
  return num_sq(c, x, &it[4].n);
}

/* unpack_stats({Props}) with get_number/2's errors. */
static int unpack(vx *c, const term *o, term *out, term *stack) {
  int rc = tup_alloc(c, out, stack);
  for (int i = 0; i < 5 && !rc; i++) {
    const term *v = obj_get(o, STAT_KEYS[i]);
    if (!v) {
      char key[16];
      snprintf(key, sizeof key, "%s (", STAT_KEYS[i]);
      return stat_fail(c, STAT_MISSING, key, NULL, 1, o, ")");
    }
    if (v->t != T_NUM) {
      char key[16];
      snprintf(key, sizeof key, "%s: ", STAT_KEYS[i]);
      return stat_fail(c, STAT_NONNUM, key, v, 0, NULL, "");
    }
    out->u.items[i].n = v->n;
  }
  return rc;
}

/* build_initial_accumulator/1: a fresh accumulator the fold may write. */
static int stat_initial(vx *c, const term *x, term *out) {
  switch (x->t) {
  case T_LIST: {
    *out = *x;
    if (!x->len) return 0;
    out->u.items = arena_alloc(c->a, x->len * sizeof(term));
    if (!out->u.items) return DV_ENOMEM;
    for (size_t i = 0; i < x->len; i++) {
      int rc = stat_initial(c, &x->u.items[i], &out->u.items[i]);
      if (rc) return rc;
    }
    return 0;
  }
  case T_NUM:
    return tup_of(c, &x->n, out, NULL);
  case T_TUP: {
    int rc = tup_alloc(c, out, NULL);
    if (!rc) memcpy(out->u.items, x->u.items, 5 * sizeof(term));
    return rc;
  }
  case T_OBJ:
    return unpack(c, x, out, NULL);
  default:
    return stat_fail(c, STAT_FIRST, NULL, x, 0, NULL, "");
  }
}

/* erlang:min(A, B) / erlang:max(A, B): A when they compare equal. */
static int num_minmax(vx *c, const vnum *a, const vnum *b, int max, vnum *out) {
  if (a->k == N_TXT || b->k == N_TXT) return badarith(c);
  int r = num_cmp(a, b);
  *out = (max ? r < 0 : r > 0) ? *b : *a;
  return 0;
}

/* stat_values(Value, Acc), writing Acc. */
static int stat_values(vx *c, const term *v, term *acc) {
  term t, stack[5];
  int rc;
  if (v->t == T_LIST && acc->t == T_LIST) {
    size_t m = v->len < acc->len ? v->len : acc->len;
    for (size_t i = 0; i < m; i++)
      if ((rc = stat_values(c, &v->u.items[i], &acc->u.items[i]))) return rc;
    return v->len == acc->len ? 0 : fail_static(c, R_ZIP, v);
  }
  if (v->t == T_OBJ) {
    if ((rc = unpack(c, v, &t, stack))) return rc;
    return stat_values(c, &t, acc);
  }
  if (v->t == T_NUM) {
    if ((rc = tup_of(c, &v->n, &t, stack))) return rc;
    return stat_values(c, &t, acc);
  }
  if (acc->t == T_NUM) {
    if ((rc = tup_of(c, &acc->n, &t, NULL))) return rc;
    *acc = t;
    return stat_values(c, v, acc);
  }
  if (v->t == T_TUP && acc->t == T_TUP) {
    const term *x = v->u.items;
    term *y = acc->u.items;
    vnum r[5];
    if ((rc = num_add(c, &x[0].n, &y[0].n, &r[0])) || (rc = num_add(c, &x[1].n, &y[1].n, &r[1])) ||
        (rc = num_minmax(c, &x[2].n, &y[2].n, 0, &r[2])) || (rc = num_minmax(c, &x[3].n, &y[3].n, 1, &r[3])) ||
        (rc = num_add(c, &x[4].n, &y[4].n, &r[4])))
      return rc;
    for (int i = 0; i < 5; i++) y[i].n = r[i];
    return 0;
  }
  return stat_fail(c, STATERR_A, NULL, v, 1, NULL, STATERR_B);
}

/* A state's objects back as the tuples CouchDB keeps (finalize packs them
 * only for the answer), so errors print what CouchDB prints. */
static void internalize(vx *c, term *t) {
  if (t->t == T_LIST)
    for (size_t i = 0; i < t->len; i++) internalize(c, &t->u.items[i]);
  if (t->t != T_OBJ) return;
  const term *f[5];
  for (int i = 0; i < 5; i++)
    if (!(f[i] = obj_get(t, STAT_KEYS[i])) || f[i]->t != T_NUM) return;
  term *it = arena_alloc(c->a, 5 * sizeof *it);
  if (!it) return; /* left an object: unpack gives the same numbers */
  for (int i = 0; i < 5; i++) it[i] = *f[i];
  t->t = T_TUP;
  t->len = 5;
  t->u.items = it;
}

/* builtin_stats(_, KVs) over the values. */
static int stats_fold(vx *c, const vsrc *src, int states, term *res) {
  if (!src->n) {
    int rc = tup_alloc(c, res, NULL); /* {0, 0, 0, 0, 0} */
    for (int i = 0; !rc && i < 5; i++) res->u.items[i] = T0;
    return rc;
  }
  term v;
  int rc = term_from_json(c->a, val_at(src, 0), &v);
  if (!rc && states) internalize(c, &v);
  if (!rc) rc = stat_initial(c, &v, res);
  for (size_t i = 1; i < src->n && !rc; i++) {
    rc = term_from_json(c->a, val_at(src, i), &v);
    if (!rc && states) internalize(c, &v);
    if (!rc) rc = stat_values(c, &v, res);
  }
  return rc;
}

static int stats_reduce(vx *c, const vr_row *rows, size_t n, dv_buf *out) {
  vsrc src = {rows, NULL, n};
  term res;
  int rc = stats_fold(c, &src, 0, &res);
  return rc ? rc : term_json(out, &res);
}

static int stats_rereduce(vx *c, const uint8_t *const *states, const size_t *lens, size_t n, dv_buf *out) {
  json_val **vals = arena_alloc(c->a, (n ? n : 1) * sizeof *vals);
  if (!vals) return DV_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    int rc = parse_state(c->a, states[i], lens[i], &vals[i]);
    if (rc) return rc;
  }
  vsrc src = {NULL, (const json_val *const *)vals, n};
  term res;
  int rc = stats_fold(c, &src, 1, &res);
  return rc ? rc : term_json(out, &res);
}

/* ------------------------------------------------------------------ */
/* _count                                                              */
/* ------------------------------------------------------------------ */

static void put_u64(dv_buf *b, uint64_t v) {
  uint8_t t[8];
  for (int i = 0; i < 8; i++) t[i] = (uint8_t)(v >> (8 * i));
  buf_append(b, t, 8);
}

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* ------------------------------------------------------------------ */
/* _approx_count_distinct                                              */
/* ------------------------------------------------------------------ */

#define XP1 11400714785074694791ull
#define XP2 14029467366897019727ull
#define XP3 1609587929392839161ull
#define XP4 9650029242287828579ull
#define XP5 2870177450012600261ull

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static uint64_t xround(uint64_t acc, uint64_t in) { return rotl64(acc + in * XP2, 31) * XP1; }

static uint64_t xmerge(uint64_t acc, uint64_t v) { return (acc ^ xround(0, v)) * XP1 + XP4; }

/* XXH64 (Yann Collet's xxHash, 64-bit), from its specification. */
static uint64_t xxh64(const uint8_t *p, size_t n, uint64_t seed) {
  const uint8_t *e = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v1 = seed + XP1 + XP2, v2 = seed + XP2, v3 = seed, v4 = seed - XP1;
    for (; e - p >= 32; p += 32) {
      v1 = xround(v1, rd64(p));
      v2 = xround(v2, rd64(p + 8));
      v3 = xround(v3, rd64(p + 16));
      v4 = xround(v4, rd64(p + 24));
    }
    h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
    h = xmerge(h, v1);
    h = xmerge(h, v2);
    h = xmerge(h, v3);
    h = xmerge(h, v4);
  } else h = seed + XP5;
  h += n;
  for (; e - p >= 8; p += 8) h = rotl64(h ^ xround(0, rd64(p)), 27) * XP1 + XP4;
  if (e - p >= 4) {
    uint64_t k = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
    h = rotl64(h ^ k * XP1, 23) * XP2 + XP3;
    p += 4;
  }
  for (; p < e; p++) h = rotl64(h ^ *p * XP5, 11) * XP1;
  h ^= h >> 33;
  h *= XP2;
  h ^= h >> 29;
  h *= XP3;
  h ^= h >> 32;
  return h;
}

uint64_t vr__xxh64(const void *p, size_t n, uint64_t seed) { return xxh64(p, n, seed); }

/* couch_hyper:insert/2's split of the hash: the first P bits pick the
 * register, the run of zeros after them plus one is its candidate. */
static void hll_add(uint8_t *reg, uint64_t h) {
  uint64_t w = h << HLL_P;
  uint8_t r = w ? (uint8_t)(__builtin_clzll(w) + 1) : HLL_Q + 1;
  if (r > reg[h >> (64 - HLL_P)]) reg[h >> (64 - HLL_P)] = r;
}

static double hll_sigma(double x) {
  if (x == 1.) return INFINITY;
  double y = 1, z = x, zp;
  do {
    x *= x;
    zp = z;
    z += x * y;
    y += y;
  } while (zp != z);
  return z;
}

static double hll_tau(double x) {
  if (x == 0. || x == 1.) return 0.;
  double y = 1, z = 1 - x, zp;
  do {
    x = sqrt(x);
    zp = z;
    y *= 0.5;
    z -= (1 - x) * (1 - x) * y;
  } while (zp != z);
  return z / 3;
}

/* Ertl's improved raw estimator, rounded as Erlang's round/1 rounds. */
static uint64_t hll_count(const uint8_t *reg) {
  unsigned hist[HLL_Q + 2] = {0};
  for (size_t i = 0; i < HLL_M; i++) hist[reg[i]]++;
  if (hist[0] == HLL_M) return 0;
  double m = HLL_M, z = m * hll_tau((m - hist[HLL_Q + 1]) / m);
  for (int k = HLL_Q; k >= 1; k--) z = 0.5 * (z + hist[k]);
  z += m * hll_sigma(hist[0] / m);
  return (uint64_t)llround(0.5 / log(2) * m * m / z);
}

static int hll_valid(const uint8_t *p, size_t n) {
  if (n != HLL_M) return 0;
  for (size_t i = 0; i < n; i++)
    if (p[i] > HLL_Q + 1) return 0;
  return 1;
}

static int approx_reduce(const vr_row *rows, size_t n, dv_buf *out) {
  uint8_t *reg = buf_extend(out, HLL_M);
  if (!reg) return DV_ENOMEM;
  memset(reg, 0, HLL_M);
  dv_buf k;
  buf_init(&k);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    buf_reset(&k);
    if (rows[i].key) rc = json_write(&k, rows[i].key);
    else buf_puts(&k, "null");
    if (!rc) rc = buf_error(&k);
    if (!rc) hll_add(reg, xxh64(k.p, k.len, 0));
  }
  buf_free(&k);
  return rc;
}

/* ------------------------------------------------------------------ */
/* The interface                                                       */
/* ------------------------------------------------------------------ */

vr_kind vr_kind_of(const char *src, size_t n) {
  static const struct {
    const char *name;
    vr_kind k;
  } b[] = {{"_sum", VR_SUM}, {"_count", VR_COUNT}, {"_stats", VR_STATS}, {"_approx_count_distinct", VR_APPROX}};
  if (!src || !n) return VR_JS;
  for (size_t i = 0; i < sizeof b / sizeof *b; i++) {
    size_t l = strlen(b[i].name);
    if (n >= l && !memcmp(src, b[i].name, l)) return b[i].k;
  }
  return src[0] == '_' ? VR_UNKNOWN : VR_JS;
}

/* Common end: out keeps only a success; a TH_FAIL becomes *e. */
static int finish(vx *c, int rc, dv_buf *out, size_t start, vr_err *e) {
  if (!rc) rc = buf_error(out);
  if (rc == TH_FAIL) {
    rc = DV_EVIEW_BUILTIN;
    if (e) {
      e->error = dv_err_couch(DV_EVIEW_BUILTIN);
      e->reason = c->reason;
      e->caused_by = c->caused_by;
    }
  } else if (rc > 0) rc = DV_EINTERNAL; /* a throw that escaped its fold */
  if (rc && out->len > start) {
    out->len = start;
    out->p[start] = 0;
  }
  return rc;
}

int vr_reduce(vr_kind k, const vr_row *rows, size_t n, dv_arena *a, dv_buf *out, vr_err *e) {
  vx c = {a, NULL, NULL, NULL, NULL};
  size_t start = out->len;
  int rc;
  switch (k) {
  case VR_COUNT:
    put_u64(out, n);
    rc = 0;
    break;
  case VR_SUM:
    rc = sum_reduce(&c, rows, n, out);
    break;
  case VR_STATS:
    rc = stats_reduce(&c, rows, n, out);
    break;
  case VR_APPROX:
    rc = approx_reduce(rows, n, out);
    break;
  default:
    rc = DV_EINVAL;
  }
  return finish(&c, rc, out, start, e);
}

int vr_rereduce(vr_kind k, const uint8_t *const *states, const size_t *lens, size_t n, dv_arena *a, dv_buf *out,
                vr_err *e) {
  vx c = {a, NULL, NULL, NULL, NULL};
  size_t start = out->len;
  int rc = 0;
  switch (k) {
  case VR_COUNT: {
    uint64_t s = 0;
    for (size_t i = 0; i < n && !rc; i++) {
      if (lens[i] != 8) rc = DV_ECORRUPT;
      else if (__builtin_add_overflow(s, get_u64(states[i]), &s)) rc = DV_ECORRUPT; /* no real counts get there */
    }
    if (!rc) put_u64(out, s);
    break;
  }
  case VR_SUM:
    rc = sum_rereduce(&c, states, lens, n, out);
    break;
  case VR_STATS:
    rc = stats_rereduce(&c, states, lens, n, out);
    break;
  case VR_APPROX: {
    uint8_t *reg = buf_extend(out, HLL_M);
    if (!reg) {
      rc = DV_ENOMEM;
      break;
    }
    memset(reg, 0, HLL_M);
    for (size_t i = 0; i < n && !rc; i++) {
      if (!hll_valid(states[i], lens[i])) rc = DV_ECORRUPT;
      for (size_t j = 0; !rc && j < HLL_M; j++)
        if (states[i][j] > reg[j]) reg[j] = states[i][j];
    }
    break;
  }
  default:
    rc = DV_EINVAL;
  }
  return finish(&c, rc, out, start, e);
}

int vr_final(vr_kind k, const uint8_t *state, size_t len, dv_buf *out) {
  size_t start = out->len;
  char t[24];
  int rc = 0;
  switch (k) {
  case VR_COUNT:
    if (len != 8) return DV_ECORRUPT;
    buf_append(out, t, json_fmt_uint64(get_u64(state), t));
    break;
  case VR_SUM:
  case VR_STATS:
    if (!len) return DV_ECORRUPT;
    buf_append(out, state, len);
    break;
  case VR_APPROX:
    if (!hll_valid(state, len)) return DV_ECORRUPT;
    buf_append(out, t, json_fmt_uint64(hll_count(state), t));
    break;
  default:
    return DV_EINVAL;
  }
  rc = buf_error(out);
  if (rc && out->len > start) {
    out->len = start;
    out->p[start] = 0;
  }
  return rc;
}

int vr_state_error(vr_kind k, const uint8_t *state, size_t len, dv_arena *a, vr_err *e) {
  if (k != VR_SUM) return 0;
  json_val *v;
  int rc = parse_state(a, state, len, &v);
  if (rc) return rc;
  const json_val *err = json_obj_getz(v, "error");
  if (!err || err->type != JSON_STRING || err->len != 20 || memcmp(err->u.s, "builtin_reduce_error", 20)) return 0;
  const json_val *r = json_obj_getz(v, "reason"), *cause = json_obj_getz(v, "caused_by");
  vr_err x = {dv_err_couch(DV_EVIEW_BUILTIN), NULL, NULL};
  if (r && r->type == JSON_STRING && !(x.reason = arena_strndup(a, r->u.s, r->len))) return DV_ENOMEM;
  if (cause) {
    dv_buf b;
    buf_init(&b);
    rc = json_write(&b, cause);
    if (!rc) rc = buf_error(&b);
    if (!rc && !(x.caused_by = arena_strndup(a, (const char *)b.p, b.len))) rc = DV_ENOMEM;
    buf_free(&b);
    if (rc) return rc;
  }
  if (e) *e = x;
  return 1;
}
