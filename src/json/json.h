/* json.h — divan's JSON layer: a strict pull reader, a DOM for the document
 * layer, and a compact writer. This header is the manual.
 *
 * What it is for. Request bodies are read with the pull reader (the storage
 * layer explodes a document into one KV per leaf straight from its events)
 * or parsed into a DOM allocated from a request arena (the HTTP layer
 * rewrites _id, _rev, _attachments and builds responses with it). Output is
 * compact JSON in CouchDB's shape: no spaces, UTF-8, only the escapes JSON
 * requires.
 *
 * What it is not. It does not read incrementally from a socket (the reader
 * works on a complete buffer), it does not pretty-print, it has no JSON
 * Pointer or query language (Mango lives in index/), and it never accepts
 * anything RFC 8259 rejects: no comments, no trailing commas, no NaN, no
 * single quotes, no BOM.
 *
 * Errors. Functions return 0 or a negative DV_E* code (util/err.h):
 *   DV_EJSON        the input is not strict RFC 8259 JSON (or not UTF-8);
 *   DV_EJSON_DEPTH  nesting deeper than the configured limit;
 *   DV_EJSON_SIZE   input longer than the configured limit;
 *   DV_ENOMEM       an allocation failed;
 *   DV_EINVAL       a caller error (a writer used out of order, NaN, ...).
 * A parse error also yields a json_err: the byte offset where the input
 * went wrong and a short English message ("leading zero in number"), for
 * logs; CouchDB itself answers every one of them with
 * 400 {"error":"bad_request","reason":"invalid UTF-8 JSON"}, which is what
 * dv_err_http/dv_strerror give for DV_EJSON.
 *
 * Decisions (CouchDB 3 decodes with jiffy; we follow it where sensible):
 *
 * - Depth. JSON_DEFAULT_DEPTH = 1000 levels of arrays/objects. Real
 *   documents nest far less, but generated ones (comment trees, exported
 *   ASTs) reach a few hundred, and CouchDB itself has no limit. 1000 is also
 *   what the key layout can hold: every level adds at least one to three
 *   bytes of tuple-encoded path to a leaf's key, so a 1000-deep path with
 *   short keys still fits FoundationDB's 10,000-byte key limit next to the
 *   database prefix, the doc id and the revision. The limit is configurable
 *   up to JSON_DEPTH_LIMIT. The reader keeps one bit per level, so depth
 *   costs no memory; the DOM parser is iterative, never recursive.
 *
 * - Duplicate keys. The last value wins, and the surviving member takes the
 *   position of its LAST occurrence: {"a":1,"b":2,"a":3} is {"b":2,"a":3}.
 *   That is exactly what CouchDB does (couch_util:json_decode passes
 *   dedupe_keys to jiffy, which keeps the last pair in place). It holds
 *   whatever the values are: {"a":{"x":1},"a":2} is {"a":2}. Keys compare
 *   as decoded bytes ("\u0061" and "a" are the same key). The pull reader
 *   reports duplicates as they come; resolving them is the consumer's job
 *   (the DOM does it).
 *
 * - Numbers. The DOM keeps every number as its canonical text plus a class
 *   (json_numclass), never as a lossy binary:
 *   * An integer (no fraction, no exponent) is kept digit for digit, any
 *     length: 123456789012345678901234567890 comes back unchanged. "-0"
 *     stays "-0" (jiffy turns it into 0; we keep the text because the
 *     storage layer keeps it — DESIGN.md's leaves row — and it loses
 *     nothing).
 *   * Any other number is a double, as in jiffy, and is written as the
 *     shortest decimal that reads back to the same double, in jiffy's
 *     (double-conversion's) format: plain notation with at least one
 *     fractional digit when 1e-6 <= |x| < 1e21 ("1.50" -> "1.5",
 *     "1e2" -> "100.0", "0.000001"), otherwise exponent notation with an
 *     explicit sign ("1e-7", "1e+21", "1.7976931348623157e+308",
 *     "5e-324"). -0.0 keeps its sign ("-0.0"; jiffy prints "0.0", which
 *     reads back as a different double).
 *   * A non-integer a double cannot hold — one that overflows (1e400) or
 *     underflows to zero although its digits are not zero (1e-400) — is
 *     kept as its text, class JSON_NUM_TEXT.
 *   The writer always emits canonical text, so parse -> write -> parse ->
 *   write is idempotent.
 *
 * - Strings are validated UTF-8 (no overlongs, no UTF-16 surrogates encoded
 *   in UTF-8, nothing above U+10FFFF, no truncated sequences), raw control
 *   characters are rejected, \u escapes must pair surrogates correctly, and
 *   \u0000 is allowed: decoded strings carry a length and may contain NUL.
 *
 * Number parsing and formatting assume the C locale for LC_NUMERIC (divan
 * never calls setlocale), because the slow path uses strtod.
 */
#ifndef DV_JSON_H
#define DV_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/buf.h"
#include "util/err.h"

/* ------------------------------------------------------------------ */
/* Options and errors                                                  */
/* ------------------------------------------------------------------ */

#define JSON_DEFAULT_DEPTH 1000 /* see "Depth" above */
#define JSON_DEPTH_LIMIT 4096   /* the most max_depth may ask for */

/* json_opts.flags */
#define JSON_COPY 1u /* DOM: copy every string and number into the arena, so
                        the DOM does not borrow the input buffer */
#define JSON_CSTR 2u /* DOM: copy every string and key into the arena with a NUL after it
                        (lengths still count; a string holding NUL reads short as C) */

typedef struct json_opts {
  int max_depth;   /* nesting limit; 0 = JSON_DEFAULT_DEPTH; clamped to JSON_DEPTH_LIMIT */
  size_t max_len;  /* longest input accepted, bytes; 0 = no limit (DV_EJSON_SIZE past it) */
  unsigned flags;  /* JSON_COPY, JSON_CSTR */
} json_opts;

typedef struct json_err {
  size_t offset;   /* byte offset into the input where it went wrong */
  const char *msg; /* static English text, e.g. "trailing comma"; never NULL after an error */
} json_err;

/* ------------------------------------------------------------------ */
/* The pull reader                                                     */
/* ------------------------------------------------------------------ */

/* Events returned by json_next (>= 0; errors are negative). */
enum json_event {
  JSON_EV_END = 0,   /* the value is complete and only whitespace follows */
  JSON_EV_OBJ_BEGIN, /* '{' */
  JSON_EV_OBJ_END,   /* '}' */
  JSON_EV_ARR_BEGIN, /* '[' */
  JSON_EV_ARR_END,   /* ']' */
  JSON_EV_KEY,       /* an object key: str/len (decoded); its value follows */
  JSON_EV_STRING,    /* a string value: str/len (decoded) */
  JSON_EV_NUMBER,    /* a number: str/len is its text as written; num_int says integer */
  JSON_EV_TRUE,
  JSON_EV_FALSE,
  JSON_EV_NULL,
};

typedef struct json_reader {
  const uint8_t *p;        /* next unread byte */
  const uint8_t *end;      /* end of input */
  const uint8_t *begin;    /* start of input (offsets are relative to it) */
  const char *str;         /* KEY/STRING: decoded bytes; NUMBER: its text */
  size_t len;              /* bytes at str */
  int num_int;             /* NUMBER: 1 if the text has no fraction and no exponent */
  int escaped;             /* KEY/STRING: 1 if str is in the scratch buffer, 0 if it points into the input */
  int state;               /* private: what the grammar expects next */
  int depth;               /* open arrays/objects */
  int max_depth;           /* nesting limit in force */
  int rc;                  /* sticky error once one happened, else 0 */
  json_err err;            /* where and why, once rc != 0 */
  dv_buf scratch;          /* decoded strings that contained escapes */
  uint8_t stack[JSON_DEPTH_LIMIT / 8]; /* bit per level: 1 = object */
} json_reader;

/* Start reading the len bytes at p (a complete JSON text; p may be NULL
 * when len is 0). The reader borrows p: it must stay valid and unchanged
 * while the reader is used.
 * opts may be NULL (defaults). Returns 0, or DV_EJSON_SIZE when len exceeds
 * opts->max_len (r is then still safe to pass to json_next, which repeats
 * the error, and to json_reader_free). */
int json_reader_init(json_reader *r, const void *p, size_t len, const json_opts *opts)
    DV_MUST_CHECK;

/* Release the scratch buffer. NULL is a no-op; r may be re-initialised. */
void json_reader_free(json_reader *r);

/* The next event (enum json_event, >= 0) or a negative error: DV_EJSON,
 * DV_EJSON_DEPTH, DV_EJSON_SIZE or DV_ENOMEM; r->err tells where. Errors
 * are sticky. After the last value's event, one more call checks that only
 * whitespace follows and returns JSON_EV_END (or the error); JSON_EV_END
 * repeats thereafter. KEY/STRING/NUMBER data at r->str/r->len is valid
 * until the next call: a string without escapes points into the input
 * (r->escaped == 0, valid as long as the input), otherwise into the
 * reader's scratch buffer. Strings are not NUL-terminated and may contain
 * NUL bytes. */
int json_next(json_reader *r) DV_MUST_CHECK;

/* Skip the value that starts with the event just returned: after
 * OBJ_BEGIN/ARR_BEGIN it consumes up to and including the matching end;
 * after a KEY it skips that member's value; after a scalar it does
 * nothing. Returns 0 or the reader's error. */
int json_skip(json_reader *r) DV_MUST_CHECK;

/* ------------------------------------------------------------------ */
/* Numbers                                                             */
/* ------------------------------------------------------------------ */

/* What a number is, for the storage layer's choice of tuple encoding. */
typedef enum json_numclass {
  JSON_NUM_INT64 = 0, /* an integer in [INT64_MIN, INT64_MAX] ("-0" excluded) */
  JSON_NUM_UINT64,    /* an integer in (INT64_MAX, UINT64_MAX] */
  JSON_NUM_BIGINT,    /* an integer beyond 64 bits; its text is the exact decimal */
  JSON_NUM_DOUBLE,    /* not an integer; a finite double whose shortest form
                         (json_fmt_double) is exactly the canonical text, so
                         storing the double loses nothing */
  JSON_NUM_TEXT,      /* keep the text: "-0", or a non-integer a double cannot
                         hold (overflow 1e400, underflow 1e-400) */
} json_numclass;

/* Longest canonical text of a non-integer, NUL included. */
#define JSON_NUM_BUF 32

/* A classified number. text points either at the caller's input (when it
 * was canonical already, and for every integer and JSON_NUM_TEXT number) or
 * at tmp inside this struct — so do not copy the struct and keep using
 * text. */
typedef struct json_num {
  json_numclass cls;     /* see above */
  const char *text;      /* canonical text (not NUL-terminated) */
  size_t len;            /* its length */
  char tmp[JSON_NUM_BUF];/* holds text when it had to be rewritten */
} json_num;

/* Check that s[0..n) is one JSON number (RFC 8259 grammar, nothing around
 * it), classify it and compute its canonical text. Returns 0, DV_EJSON if
 * it is not a number, or DV_ENOMEM (a number text of 256 bytes or more
 * that needs strtod is copied to the heap). Cheap for integers and for
 * non-integers of up to 15 significant digits (no conversion at all);
 * longer ones cost one strtod. */
int json_num_parse(const char *s, size_t n, json_num *out) DV_MUST_CHECK;

/* Classify a valid JSON number text; -1 if s is not one. */
int json_num_classify(const char *s, size_t n);

/* The integer value of an integer text. Return 0, DV_ERANGE if it does not
 * fit, DV_EINVAL if s is not a JSON integer. */
int json_num_int64(const char *s, size_t n, int64_t *out) DV_MUST_CHECK;
int json_num_uint64(const char *s, size_t n, uint64_t *out) DV_MUST_CHECK;

/* The nearest double to a number text (any JSON number). Returns 0;
 * DV_ERANGE if it overflows (out is then +-HUGE_VAL) or if non-zero digits
 * underflow to zero (out is then +-0.0); DV_EINVAL if s is not a JSON
 * number; DV_ENOMEM (long texts are copied to the heap for strtod). */
int json_num_double(const char *s, size_t n, double *out) DV_MUST_CHECK;

/* Canonical text of a finite double (shortest round-trip form, format
 * above) into out, NUL-terminated. Returns its length, or 0 for NaN and
 * infinities (which JSON cannot express). */
size_t json_fmt_double(double d, char out[JSON_NUM_BUF]);

/* Decimal text of an integer into out (at least 21 bytes), NUL-terminated;
 * returns the length. */
size_t json_fmt_int64(int64_t v, char *out);
size_t json_fmt_uint64(uint64_t v, char *out);

/* ------------------------------------------------------------------ */
/* The DOM                                                             */
/* ------------------------------------------------------------------ */

typedef enum json_type {
  JSON_NULL = 0,
  JSON_BOOL,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT,
} json_type;

typedef struct json_val json_val;

typedef struct json_member {
  const char *key; /* decoded key bytes (may contain NUL; not NUL-terminated) */
  size_t klen;     /* key length */
  json_val *val;   /* the value */
} json_member;

struct json_val {
  uint8_t type;    /* json_type */
  uint8_t num;     /* JSON_NUMBER: json_numclass */
  uint8_t b;       /* JSON_BOOL: 0 or 1 */
  uint8_t hashed;  /* OBJECT: members is followed by json_obj_set's key index (json_dom.c) */
  size_t len;      /* STRING/NUMBER: bytes; ARRAY/OBJECT: elements */
  size_t cap;      /* ARRAY/OBJECT: slots allocated */
  union {
    const char *s;          /* STRING: decoded bytes; NUMBER: canonical text */
    json_val **items;       /* ARRAY: len values */
    json_member *members;   /* OBJECT: len members, keys unique */
  } u;
};

/* Parse the len bytes at p into a DOM allocated from arena a; *out is the
 * root on success. opts may be NULL. Unless opts->flags has JSON_COPY,
 * strings without escapes and canonical numbers point into p, so p must
 * outlive the DOM (the request body usually does; the arena must too).
 * Duplicate keys are resolved (see "Duplicate keys"). Returns 0, DV_EJSON,
 * DV_EJSON_DEPTH, DV_EJSON_SIZE or DV_ENOMEM; err (may be NULL) is filled
 * on a parse error. On failure *out is untouched and whatever was
 * allocated stays in the arena until it is reset. */
int json_parse(dv_arena *a, const void *p, size_t len, const json_opts *opts,
               json_val **out, json_err *err) DV_MUST_CHECK;

/* Member value for a key, or NULL if absent or obj is not an object.
 * Linear in the number of members. The key may contain NUL. */
json_val *json_obj_get(const json_val *obj, const char *key, size_t klen);
/* Same, for a NUL-terminated key. */
json_val *json_obj_getz(const json_val *obj, const char *key);
/* Element i, or NULL if out of range or arr is not an array. */
json_val *json_arr_get(const json_val *arr, size_t i);

/* Builders. Every value lives in arena a; strings and keys are copied into
 * it. Constructors return NULL when out of memory (or, for numbers, when
 * the input is not valid), and every function that takes a json_val *v
 * returns DV_ENOMEM when v is NULL, so a constructor can be passed straight
 * in: json_obj_set(a, o, "ok", 2, json_new_bool(a, 1)). Values are not
 * reference counted; inserting one value in two places shares it. */
json_val *json_new_null(dv_arena *a);
json_val *json_new_bool(dv_arena *a, int b);
json_val *json_new_int(dv_arena *a, int64_t v);
json_val *json_new_uint(dv_arena *a, uint64_t v);
/* NULL for NaN or an infinity. */
json_val *json_new_double(dv_arena *a, double d);
/* From number text (validated and canonicalised); NULL if not a number. */
json_val *json_new_number(dv_arena *a, const char *text, size_t n);
/* A string of n bytes, copied; should be UTF-8 (the writer replaces
 * invalid sequences with U+FFFD). */
json_val *json_new_string(dv_arena *a, const char *s, size_t n);
json_val *json_new_stringz(dv_arena *a, const char *s);
json_val *json_new_array(dv_arena *a);
json_val *json_new_object(dv_arena *a);

/* Append v to arr. 0, DV_ENOMEM, or DV_EINVAL if arr is not an array. */
int json_arr_push(dv_arena *a, json_val *arr, json_val *v) DV_MUST_CHECK;
/* Set key to v: an existing member keeps its position and gets the new
 * value; otherwise the member is appended. The key is copied. 0, DV_ENOMEM,
 * or DV_EINVAL if obj is not an object. Amortized O(1) for any object
 * size: an object that grows past a few dozen members through it gets a
 * hash index of its keys, so copying an object member by member is linear. */
int json_obj_set(dv_arena *a, json_val *obj, const char *key, size_t klen, json_val *v)
    DV_MUST_CHECK;
int json_obj_setz(dv_arena *a, json_val *obj, const char *key, json_val *v) DV_MUST_CHECK;
/* Remove key (the order of the others is kept). Returns 1 if it was there,
 * 0 if not (or obj is not an object). */
int json_obj_del(json_val *obj, const char *key, size_t klen);
/* A deep copy of v in arena a (sharing nothing with v); NULL on ENOMEM. */
json_val *json_dup(dv_arena *a, const json_val *v);

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

/* Append v as compact JSON to b. Returns 0 or DV_ENOMEM (b's sticky oom:
 * what was appended is then incomplete). Recursive: depth is that of v. */
int json_write(dv_buf *b, const json_val *v) DV_MUST_CHECK;

/* Append s[0..n) as a JSON string literal, quotes included: '"' and '\'
 * escaped, control characters as \b \f \n \r \t or \u00XX, everything
 * else raw UTF-8; an invalid UTF-8 byte becomes U+FFFD. Errors go to b's
 * sticky oom flag. */
void json_escape(dv_buf *b, const char *s, size_t n);

/* Check that p[0..n) is valid UTF-8 (the strict rules above). Returns 0, or
 * DV_EJSON with *out_bad (may be NULL) set to the offset of the first
 * invalid byte. */
int json_utf8_check(const void *p, size_t n, size_t *out_bad) DV_MUST_CHECK;

/* The streaming writer: emit JSON piece by piece into a dv_buf; it inserts
 * commas and colons itself. A misuse (a key outside an object, a value in
 * an object without a key, an end that does not match, NaN, invalid number
 * text, more than JSON_DEPTH_LIMIT levels) makes the writer fail: later
 * calls do nothing and json_w_finish reports DV_EINVAL. Several values may
 * be written at top level one after another (no separators are added
 * there), which suits splicing pieces into a larger response. */
typedef struct json_w {
  dv_buf *b;              /* output, owned by the caller */
  int depth;              /* open containers */
  int comma;              /* 1 if the next element needs a ',' first */
  int want_value;         /* 1 right after a key */
  int rc;                 /* sticky DV_EINVAL on misuse */
  uint8_t obj[JSON_DEPTH_LIMIT / 8]; /* bit per level: 1 = object */
} json_w;

void json_w_init(json_w *w, dv_buf *b);
void json_w_obj_begin(json_w *w);
void json_w_obj_end(json_w *w);
void json_w_arr_begin(json_w *w);
void json_w_arr_end(json_w *w);
void json_w_key(json_w *w, const char *k, size_t n);
void json_w_keyz(json_w *w, const char *k);
void json_w_str(json_w *w, const char *s, size_t n);
void json_w_strz(json_w *w, const char *s);
void json_w_int(json_w *w, int64_t v);
void json_w_uint(json_w *w, uint64_t v);
/* Shortest round-trip form; NaN and infinities are a misuse. */
void json_w_double(json_w *w, double d);
/* Number text: validated, written in canonical form (big integers and
 * JSON_NUM_TEXT numbers verbatim). */
void json_w_num(json_w *w, const char *text, size_t n);
void json_w_bool(json_w *w, int b);
void json_w_null(json_w *w);
/* Splice n bytes of JSON that the caller vouches for (not validated), as
 * one value. */
void json_w_raw(json_w *w, const char *json, size_t n);
/* Splice a DOM value. */
void json_w_val(json_w *w, const json_val *v);
/* 0 if everything was well formed and complete (all containers closed) and
 * the buffer grew fine; DV_EINVAL or DV_ENOMEM otherwise. */
int json_w_finish(json_w *w) DV_MUST_CHECK;

#endif
