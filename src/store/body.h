/* body.h — a document body as KVs: one KV per JSON leaf (seed 001,
 * DESIGN.md "document leaves"), and back.
 *
 * What it is for. The store layer keeps each revision's body under
 * (P, "d", DocID, NotDeleted, RevPos, RevHash): body_explode turns a DOM
 * object into the KVs to write below that prefix, body_implode_* rebuilds
 * the DOM from a forward range read of it, body_digest feeds a canonical
 * encoding of a body to MD5 for deterministic revision ids, and
 * body_json_size tells the size of a body as JSON without writing it.
 *
 * What it is not. It does no KV I/O (the caller writes what the emit
 * callback gets and reads the range back), it does not write the metadata
 * KV at the prefix itself, and it knows nothing of _id, _rev or
 * _attachments: the caller strips those before exploding.
 *
 * Keys. A leaf's key is the caller's prefix (a packed tuple) followed by
 * its path, tuple-encoded: object keys as unicode strings (0x02), array
 * positions as integers (0x14.., from 0). An empty root emits nothing. A
 * string or number text too long for one value continues in keys of a form
 * no JSON path produces, the leaf's path followed by (null, n):
 *
 *   key                               value
 *   --------------------------------  ------------------------------------
 *   prefix + path                     the leaf (table below)
 *   prefix + path + 00 + int(n)       continuation chunk n = 1, 2, ... of a
 *                                     long leaf: 02 chunk 00
 *
 * Since 0x00 sorts before every other type code, the continuation keys of
 * a leaf come right after the leaf in a range read. Every emitted key is
 * checked against body_limits.max_key, continuation keys included.
 *
 * Values. Every value is a packed tuple. "int(x)" is the tuple integer in
 * its shortest form, "str(s)" the tuple unicode string 02 s' 00 where s'
 * is s with each 00 byte written 00 FF. A 0x05 nested tuple opening the
 * value marks what a plain tuple value cannot say.
 *
 *   JSON value                       value bytes
 *   -------------------------------  --------------------------------------
 *   null                             00
 *   false / true                     26 / 27
 *   integer of up to 255 bytes       int(x): 0b..1d (tuple.h), any sign,
 *     (|x| < 2^2040)                 e.g. 0 -> 14, -1 -> 13 FE,
 *                                    2^64 -> 1d 09 01 00*8
 *   other number that is exactly a   21 + 8 bytes (tuple double); the DOM's
 *     double (class DOUBLE)          canonical text is the shortest text of
 *                                    that double, so it comes back as is
 *   string, str(s) <= 100,000 bytes  str(s)
 *   longer string                    str(s0) int(len): the first chunk and
 *                                    the whole string's length in bytes;
 *                                    chunks 1.. follow in continuation keys
 *   {} (not the root)                05 15 01 00       nested tuple (1)
 *   [] (not the root)                05 15 02 00       nested tuple (2)
 *   number kept as text: "-0",       05 15 03 02 t 00 00
 *     overflow/underflow ("1e400",                     nested tuple (3, t),
 *     "1e-400"), integers past 255                     t the DOM's text
 *     bytes                                            (ASCII, no 00)
 *   longer number text               05 15 03 02 t0 00 00 int(len), then
 *                                    continuation keys as for strings
 *
 * Chunks of a long string split it between UTF-8 characters, so each is a
 * valid tuple string and any chunk can be read on its own; explode fills
 * each value as close to KV_MAX_VALUE as that allows. Implode accepts any
 * split into non-empty chunks.
 *
 * The encoding is unique: a body has exactly one set of KVs (apart from
 * where long leaves are split), and implode rejects anything explode would
 * not write — integers are minimal, a text number is canonical and not
 * representable otherwise, array positions are 0, 1, 2, ... .
 *
 * Errors: DV_ENOT_OBJECT, DV_EPATH_TOO_LONG, DV_EDOC_TOO_LARGE, DV_EINVAL,
 * DV_ECORRUPT, DV_ENOMEM (util/err.h), as each function says.
 */
#ifndef DV_BODY_H
#define DV_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/md5.h"

/* Value-tuple marker tags: a value opening with nested tuple (tag, ...). */
#define BODY_MARK_OBJ 1  /* empty object */
#define BODY_MARK_ARR 2  /* empty array */
#define BODY_MARK_NUM 3  /* number kept as its text */

/* One KV of an exploded body. key/val are borrowed for the call. Return 0,
 * or an error to stop body_explode, which then returns it. */
typedef int (*body_emit_fn)(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                            size_t val_len);

typedef struct body_limits {
  size_t max_key;      /* longest full key (prefix + path) emitted, e.g. KV_MAX_KEY; 0 = KV_MAX_KEY */
  size_t max_kv_bytes; /* most key+value bytes of all KVs together; 0 = no limit */
} body_limits;

/* Explode `body`, which must be a JSON object, into KVs whose keys are
 * prefix[0..prefix_len) + path (the layout above), calling emit once per KV
 * in document order (not key order). lim may be NULL: KV_MAX_KEY and no
 * size limit. On success *out_kv_bytes (may be NULL) gets the sum of key
 * and value bytes of every KV emitted.
 * The DOM must be well formed, as json_parse and the json_new_* builders
 * make it: strings and keys valid UTF-8, number texts valid, keys unique.
 * Deep bodies are fine: the walk is iterative.
 * Errors: DV_ENOT_OBJECT (body is not an object, or NULL),
 * DV_EPATH_TOO_LONG (a key would exceed max_key), DV_EDOC_TOO_LARGE (the
 * KVs would exceed max_kv_bytes), DV_EINVAL (a string that is not UTF-8 or
 * a number that is not a number), DV_ENOMEM, or what emit returned. KVs
 * emitted before an error stay emitted: write them in a transaction that
 * is dropped on error. */
int body_explode(const json_val *body, const uint8_t *prefix, size_t prefix_len,
                 const body_limits *lim, body_emit_fn emit, void *arg, size_t *out_kv_bytes)
    DV_MUST_CHECK;

/* Rebuilding a body: begin, add every KV of one exploded body IN KEY ORDER
 * (as a forward range read of the prefix returns them, the metadata KV at
 * the prefix itself left out), passing only the key suffix after the
 * prefix, then end. add is strict: anything explode would not have written
 * (a malformed tuple, a path element of the wrong type, a child under a
 * leaf or a marker, array positions not 0, 1, 2, ..., keys out of order, a
 * continuation chunk out of place or missing, an unknown marker, a NaN) is
 * DV_ECORRUPT, and never reads out of bounds. Errors are sticky. The
 * builder copies what it keeps, so suffix and val may go after each call.
 * Cost: linear in the bytes fed. */

/* Private to body.c: one open container on the current path. */
typedef struct body_frame {
  json_val *c; /* the container at this depth */
  size_t end;  /* offset in prev just past the path element chosen in c */
} body_frame;

typedef struct body_builder body_builder;
struct body_builder {
  dv_arena *a;          /* the DOM is allocated here */
  json_val *root;       /* the object being rebuilt; NULL until first needed */
  body_frame *frames;   /* frames[j]: container at depth j (dv_malloc) */
  size_t nframes;       /* path elements of the last leaf (frames in use) */
  size_t cap;           /* frames allocated */
  dv_buf prev;          /* key suffix of the last leaf */
  json_val *pending;    /* long leaf still expecting chunks, or NULL */
  dv_buf chunks;        /* its bytes so far */
  size_t pending_total; /* its announced length */
  uint64_t pending_next;/* the continuation number expected next */
  int rc;               /* sticky error, 0 if none */
};

/* Start rebuilding into arena a. Allocates nothing; cannot fail. */
void body_implode_begin(body_builder *b, dv_arena *a);
/* Add one KV. 0, DV_ECORRUPT or DV_ENOMEM (sticky). */
int body_implode_add(body_builder *b, const uint8_t *suffix, size_t suffix_len,
                     const uint8_t *val, size_t val_len) DV_MUST_CHECK;
/* The rebuilt object (an empty object if nothing was added), allocated in
 * the arena and valid as long as it. 0, or the sticky error, or
 * DV_ECORRUPT if a long leaf is missing chunks, or DV_ENOMEM. *out is
 * written only on success. Members come in key order. */
int body_implode_end(body_builder *b, json_val **out) DV_MUST_CHECK;
/* Release the builder's own memory (not the arena's: the DOM stays). Safe
 * after end, after an error, and twice; NULL is a no-op. */
void body_implode_free(body_builder *b);

/* Feed a canonical encoding of `body` (any JSON value) to md5. It ignores
 * object member order, so a body read back from the store (members in key
 * order) digests as the one written, and it is injective: distinct JSON
 * values give distinct byte streams (numbers compared by the DOM's
 * canonical text — 1 and 1.0 differ, as they round-trip differently —
 * strings and keys by their bytes). A NULL value counts as null, as
 * json_write has it. Recursive, to the depth of the value, as json_write;
 * it allocates only to sort unsorted objects of more than one member and
 * falls back to a slower sort if that fails, so it cannot fail.
 *
 * The encoding: null "n", false "f", true "t", number "N" len text,
 * string "S" len bytes, array "A" count values..., object "O" count
 * (len key value)... with members sorted by key bytes; len and count are
 * LEB128 varints. */
void body_digest(const json_val *body, dv_md5 *md5);

/* Bytes of the compact JSON text of v, exactly what json_write would
 * append (invalid UTF-8 counted as the U+FFFD it writes). Allocates
 * nothing; recursive to the depth of v. */
size_t body_json_size(const json_val *v);

#endif
