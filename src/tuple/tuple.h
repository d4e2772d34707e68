/* tuple.h — FoundationDB's tuple layer: the order-preserving codec every
 * divan key (and many values) is written in.
 *
 * This is a byte-exact implementation of design/tuple.md in
 * apple/foundationdb, checked against FDB's Python binding (fdb/tuple.py)
 * and cross-checked against the npm package fdb-tuple. It encodes and
 * decodes; it does not compare decoded values (memcmp of two encodings IS
 * the tuple order) and it knows nothing about the key layout of store/.
 *
 * Writing: a tup_w appends elements to a dv_buf, so a key is built as
 * "prefix bytes already in the buffer" + more elements. Reading: a tup_r
 * walks a packed tuple element by element without allocating; strings and
 * byte strings are returned as spans of the input (zero-copy when they
 * hold no escaped 0x00), nested tuples as a sub-reader.
 *
 * Encoding, one type code byte per element, then:
 *
 *   code        type            payload
 *   ----------  --------------  ---------------------------------------------
 *   0x00        null            none at top level; 0x00 0xFF inside a nested
 *                               tuple (a bare 0x00 there ends the tuple)
 *   0x01        byte string     bytes, each 0x00 written as 0x00 0xFF, then 0x00
 *   0x02        unicode string  UTF-8, escaped and terminated like 0x01
 *   0x05        nested tuple    the elements, then 0x00
 *   0x0b        integer < 0,    (len ^ 0xFF), then the one's complement of the
 *               9..255 bytes    big-endian magnitude, len bytes
 *   0x0c..0x13  integer < 0     8..1 bytes: one's complement of the big-endian
 *                               magnitude (-1 is 0x13 0xFE; -(2^64-1) is
 *                               0x0c 00 00 00 00 00 00 00 00)
 *   0x14        zero            none
 *   0x15..0x1c  integer > 0     1..8 bytes, big-endian (2^64-1 is 0x1c FF*8)
 *   0x1d        integer > 0,    len, then the big-endian magnitude
 *               9..255 bytes
 *   0x20        float           4 bytes big-endian IEEE 754; negative: all
 *                               bits flipped, otherwise the sign bit flipped
 *   0x21        double          8 bytes, the same transformation
 *   0x26        false           none
 *   0x27        true            none
 *   0x30        UUID            16 bytes, RFC 4122 network order
 *   0x33        versionstamp    12 bytes: 10-byte transaction version (commit
 *                               version, batch order) + 2-byte user version,
 *                               big-endian. An incomplete stamp has ten 0xFF
 *                               bytes where the transaction version goes.
 *
 * Every other code (the deprecated 0x03/0x04 nested tuples and 0x25 true,
 * the reserved 0x0a/0x1e/0x22-0x24/0x31/0x32, user codes 0x40-0x4f, 0xff) is
 * rejected with DV_ETUPLE.
 *
 * The decoder is strict, so that a key it accepts has exactly one encoding
 * and re-encoding what it returns gives the same bytes back:
 *  - integers must use the fewest bytes (0x16 0x00 0x05, 0x13 0xFF, a 0x1d
 *    of fewer than 9 bytes or with a leading zero byte are rejected). The
 *    one tolerated exception is FDB's Python binding writing ±(2^64-1) as
 *    0x1d 0x08 FF*8 and 0x0b 0xF7 00*8 (apple/foundationdb issue #1296):
 *    those decode to their value, and tup_put_item / re-encoding writes the
 *    standard 0x1c / 0x0c form, which every other binding uses.
 *  - unicode strings must be well-formed UTF-8 (RFC 3629: no overlong forms,
 *    no surrogates, nothing above U+10FFFF). FDB's Python binding raises on
 *    such input too; the Java binding would silently substitute U+FFFD,
 *    which would make two different keys decode to the same string.
 *  - floats and doubles are not canonicalised: every NaN payload and -0.0
 *    round-trip bit for bit.
 *
 * Errors: DV_ETUPLE for malformed input, DV_EINVAL for API misuse,
 * DV_ERANGE for a value the format cannot hold, DV_ENOMEM (see util/err.h).
 */
#ifndef DV_TUPLE_H
#define DV_TUPLE_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/err.h"

/* Element types, numbered in tuple order: a null sorts before any byte
 * string, every integer before every float, and so on. */
enum tup_type {
  TUP_NULL = 0,   /* 0x00 */
  TUP_BYTES,      /* 0x01 */
  TUP_STR,        /* 0x02 */
  TUP_NEST,       /* 0x05 */
  TUP_INT,        /* 0x0b..0x1d, every width */
  TUP_FLOAT,      /* 0x20 */
  TUP_DOUBLE,     /* 0x21 */
  TUP_BOOL,       /* 0x26 false, 0x27 true */
  TUP_UUID,       /* 0x30 */
  TUP_VS          /* 0x33 */
};

/* Type codes, for code that inspects raw bytes (and for the tests). */
enum {
  TUP_C_NULL = 0x00,
  TUP_C_BYTES = 0x01,
  TUP_C_STR = 0x02,
  TUP_C_NEST = 0x05,
  TUP_C_NEG_BIG = 0x0b,
  TUP_C_INT_ZERO = 0x14,
  TUP_C_POS_BIG = 0x1d,
  TUP_C_FLOAT = 0x20,
  TUP_C_DOUBLE = 0x21,
  TUP_C_FALSE = 0x26,
  TUP_C_TRUE = 0x27,
  TUP_C_UUID = 0x30,
  TUP_C_VS = 0x33
};

#define TUP_UUID_LEN 16
#define TUP_VS_LEN 12        /* complete versionstamp: 10 + 2 bytes */
#define TUP_VS_TR_LEN 10     /* the transaction version part */
#define TUP_BIGINT_MAX 255   /* largest integer magnitude, in bytes */

/* ---- writing ---------------------------------------------------------- */

/* A writer appends elements to a buffer it does not own. Errors are sticky,
 * like dv_buf's oom: each call returns the first error so far (0 if none),
 * an element that could not be written is left out, and tup_w_finish()
 * reports the error once at the end. */
typedef struct tup_w {
  dv_buf *b;          /* output; elements are appended to it */
  uint32_t depth;     /* nested tuples opened and not yet closed */
  uint32_t vs_count;  /* incomplete versionstamps written */
  size_t vs_at;       /* offset in b of the last incomplete stamp's 10 bytes */
  int err;            /* first misuse (DV_EINVAL / DV_ERANGE), 0 if none */
} tup_w;

/* Start writing at the end of b (which may already hold a packed prefix).
 * Cannot fail. */
void tup_w_init(tup_w *w, dv_buf *b);

/* Finish a tuple: 0, or the first error of any call on w (DV_ENOMEM from
 * the buffer, DV_EINVAL / DV_ERANGE from misuse), or DV_EINVAL if a nested
 * tuple is still open or an incomplete versionstamp was written (those
 * need tup_w_finish_vs). The bytes stay in the buffer either way. */
int tup_w_finish(tup_w *w) DV_MUST_CHECK;

/* Finish a tuple that holds exactly one incomplete versionstamp, the way
 * FDB's pack_with_versionstamp does for API version >= 520: append the
 * 4-byte little-endian offset, from the start of the buffer (the whole key,
 * prefix included), of the stamp's 10 transaction-version bytes. That is
 * the format set_versionstamped_key/value take. DV_EINVAL when the tuple
 * holds no or several incomplete stamps or a nested tuple is open,
 * DV_ERANGE if the offset does not fit in 32 bits, or an earlier error. */
int tup_w_finish_vs(tup_w *w) DV_MUST_CHECK;

/* null: 0x00, or 0x00 0xFF inside a nested tuple. */
int tup_null(tup_w *w);
/* A byte string of len bytes (any bytes, 0x00 included). */
int tup_bytes(tup_w *w, const void *p, size_t len);
/* A unicode string of len bytes of UTF-8 (0x00 allowed). DV_EINVAL, and
 * nothing written, if the bytes are not well-formed UTF-8. */
int tup_str(tup_w *w, const char *s, size_t len);
/* tup_str of a NUL-terminated string. */
int tup_strz(tup_w *w, const char *s);
/* Integers, in the fewest bytes the format allows. */
int tup_int(tup_w *w, int64_t v);
int tup_uint(tup_w *w, uint64_t v);
/* An integer of any size: neg is 1 for a negative value, mag its
 * big-endian magnitude (leading zero bytes are allowed and ignored; a zero
 * magnitude is 0 whatever neg says). Magnitudes up to 8 bytes use the same
 * encoding as tup_int; longer ones 0x1d / 0x0b. DV_ERANGE if the magnitude
 * needs more than 255 bytes. */
int tup_bigint(tup_w *w, int neg, const uint8_t *mag, size_t len);
/* IEEE float / double, bits kept as given (NaN payloads, -0.0). */
int tup_float(tup_w *w, float v);
int tup_double(tup_w *w, double v);
/* false (0x26) when v is 0, else true (0x27). */
int tup_bool(tup_w *w, int v);
/* A 16-byte UUID. */
int tup_uuid(tup_w *w, const uint8_t uuid[TUP_UUID_LEN]);
/* A complete 12-byte versionstamp, written as given (even ten 0xFF bytes:
 * like FDB's Versionstamp(tr_version=...), this counts as complete). */
int tup_vs(tup_w *w, const uint8_t vs[TUP_VS_LEN]);
/* An incomplete versionstamp: ten 0xFF bytes, then user_version
 * big-endian. Its position is remembered for tup_w_finish_vs. */
int tup_vs_incomplete(tup_w *w, uint16_t user_version);
/* Open / close a nested tuple. tup_nest_end without a matching begin is
 * DV_EINVAL. */
int tup_nest_begin(tup_w *w);
int tup_nest_end(tup_w *w);

/* ---- reading ---------------------------------------------------------- */

/* A reader over a packed tuple. It borrows the bytes: items point into
 * them and are valid as long as the bytes are. Reading is lazy: an element
 * is validated when tup_next reaches it (a nested tuple as a whole, at any
 * depth, before it is returned). */
typedef struct tup_r {
  const uint8_t *p;    /* next element */
  const uint8_t *end;  /* one past the last byte */
  int nested;          /* 1 inside a nested tuple: null is 0x00 0xFF */
} tup_r;

/* Flags of tup_item.fits. */
#define TUP_FITS_I64 1
#define TUP_FITS_U64 2

/* One decoded element. Only the fields of its type are set; the others are
 * unspecified. Pointers point into the reader's input. */
typedef struct tup_item {
  int type;               /* enum tup_type */
  const uint8_t *raw;     /* the element's encoding, type code first */
  size_t raw_len;         /* bytes in raw (terminators included) */

  /* TUP_BYTES, TUP_STR */
  const uint8_t *s;       /* payload as encoded: escapes kept, terminator not */
  size_t s_enc_len;       /* bytes in s */
  size_t s_len;           /* decoded length; == s_enc_len iff no 0x00 inside */

  /* TUP_INT */
  int neg;                /* 1 if negative (never for zero) */
  int fits;               /* TUP_FITS_I64 | TUP_FITS_U64: which fields hold it */
  int64_t i64;            /* the value, when fits & TUP_FITS_I64 */
  uint64_t u64;           /* the value, when fits & TUP_FITS_U64 */
  uint64_t mag64;         /* |value|, when mag_len <= 8 */
  const uint8_t *mag;     /* magnitude as encoded: big-endian, one's
                             complement when neg (tup_item_magnitude undoes it) */
  size_t mag_len;         /* magnitude bytes: 0 for zero, else 1..255 */

  /* TUP_FLOAT, TUP_DOUBLE */
  float f;                /* TUP_FLOAT value, bits as encoded */
  double d;               /* TUP_DOUBLE value, bits as encoded */

  /* TUP_BOOL */
  int b;                  /* 0 false, 1 true */

  /* TUP_UUID, TUP_VS */
  const uint8_t *fixed;   /* the 16 (UUID) or 12 (versionstamp) bytes */
  int vs_incomplete;      /* TUP_VS: 1 if the first 10 bytes are all 0xFF */
  uint16_t vs_user;       /* TUP_VS: the 2-byte user version */

  /* TUP_NEST */
  tup_r sub;              /* reader over the nested tuple's elements */
} tup_item;

/* Read a packed tuple of len bytes (len 0 is the empty tuple). To read the
 * elements after a known prefix, pass bytes + prefix_len. Cannot fail. */
void tup_r_init(tup_r *r, const void *bytes, size_t len);

/* Decode the next element into *out: 1 if there was one, 0 at the end,
 * DV_ETUPLE if the input is malformed there (truncated, a bad type code, a
 * non-minimal integer, invalid UTF-8, an unterminated string or nested
 * tuple). On 0 or an error *out is unspecified and the reader stays where it
 * is, so calling again gives the same answer. Never reads outside the input
 * and never allocates. */
int tup_next(tup_r *r, tup_item *out) DV_MUST_CHECK;

/* tup_next for a caller that knows what comes next: 0 with *out filled if
 * the next element is of `type`, DV_ETUPLE if it is of another type, the
 * tuple has ended, or the input is malformed. */
int tup_get(tup_r *r, int type, tup_item *out) DV_MUST_CHECK;

/* 1 when every element has been read. */
static inline int tup_r_done(const tup_r *r) { return r->p >= r->end; }

/* Check a whole packed tuple: 0, or DV_ETUPLE. */
int tup_validate(const void *bytes, size_t len) DV_MUST_CHECK;

/* Copy a byte string's or unicode string's decoded bytes (it->s_len of
 * them, escapes undone) to out. */
void tup_item_copy(const tup_item *it, uint8_t *out);

/* The decoded bytes of a byte string or unicode string, without copying
 * when nothing was escaped (*out_p then points into the input); otherwise
 * they are decoded into scratch (reset first) and *out_p points there.
 * *out_p is NOT NUL-terminated in the zero-copy case. 0 or DV_ENOMEM. */
int tup_item_data(const tup_item *it, dv_buf *scratch, const uint8_t **out_p)
    DV_MUST_CHECK;

/* Write an integer's big-endian magnitude (it->mag_len bytes, no leading
 * zero) to out; out needs room for TUP_BIGINT_MAX bytes at most. */
void tup_item_magnitude(const tup_item *it, uint8_t *out);

/* An integer item as int64 / uint64: 0, DV_ERANGE if it does not fit,
 * DV_ETUPLE if the item is not an integer. */
static inline int tup_item_i64(const tup_item *it, int64_t *out) {
  if (it->type != TUP_INT) return DV_ETUPLE;
  if (!(it->fits & TUP_FITS_I64)) return DV_ERANGE;
  *out = it->i64;
  return 0;
}
static inline int tup_item_u64(const tup_item *it, uint64_t *out) {
  if (it->type != TUP_INT) return DV_ETUPLE;
  if (!(it->fits & TUP_FITS_U64)) return DV_ERANGE;
  *out = it->u64;
  return 0;
}

/* Write a decoded element with w: a null as the writer's context needs it
 * (0x00 or 0x00 0xFF), an integer in its standard form, an incomplete
 * versionstamp as tup_vs_incomplete (so tup_w_finish_vs sees it), anything
 * else by copying its encoding. An incomplete stamp inside a copied nested
 * tuple is copied, not tracked. Returns the writer's sticky error. */
int tup_put_item(tup_w *w, const tup_item *it);

/* ---- keys and ranges -------------------------------------------------- */

/* FDB's strinc: the first key after every key that starts with `key` —
 * trailing 0xFF bytes stripped, then the last byte incremented. Appended to
 * out (which must not hold `key` itself). DV_EINVAL if key is empty or all
 * 0xFF, DV_ENOMEM. */
int tup_strinc(dv_buf *out, const void *key, size_t len) DV_MUST_CHECK;

/* FDB's Subspace.range / tuple.range: the keys of every tuple that extends
 * the packed tuple `prefix` by at least one element lie in
 * [prefix + 0x00, prefix + 0xFF). begin and end are appended to (neither
 * may hold prefix itself). 0 or DV_ENOMEM. */
int tup_range(const void *prefix, size_t len, dv_buf *begin, dv_buf *end)
    DV_MUST_CHECK;

/* ---- inspection ------------------------------------------------------- */

/* Append a readable, Python-repr-like text of a packed tuple to out, e.g.
 *   ("divan", 1, b"\x00\xff", true, ("nested", null), 1.5, float(-0.0),
 *    uuid(00112233-4455-6677-8899-aabbccddeeff), vs(000000000000000100020003),
 *    vs(incomplete, 3))
 * Integers of any size print in decimal, doubles in their shortest
 * round-trip form (NaNs with a payload other than the default as
 * nan(0x<bits>)), floats as float(...), strings with \" \\ and \xNN
 * escapes for control bytes, byte strings with \xNN for everything that is
 * not printable ASCII. Unlike Python, a one-element tuple has no trailing
 * comma: ("a") — the walk is iterative and keeps no per-level state, so
 * any depth prints.
 * On malformed input what decoded is printed, then "<malformed at byte N>",
 * and DV_ETUPLE is returned; DV_ENOMEM if out ran out of memory; else 0. */
int tup_format(dv_buf *out, const void *bytes, size_t len);

#endif
