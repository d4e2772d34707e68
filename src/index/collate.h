/* collate.h — CouchDB's view collation: the order of JSON values that view
 * rows, Mango indexes and Mango's comparison operators use, as a
 * comparison and as a byte string whose memcmp order is that comparison.
 *
 * The order (docs.couchdb.org "Views Collation", couch_ejson_compare.c):
 *   null < false < true < numbers < strings < arrays < objects;
 *   numbers by exact value (1 == 1.0; integers of any size, and numbers no
 *   double can hold, compare exactly: the JSON text is read as a decimal);
 *   strings by ICU's root collation (the Unicode Collation Algorithm at
 *   tertiary strength: "a" < "A" < "aa" < "b"), the collator CouchDB opens;
 *   arrays element by element, a prefix first; objects member by member
 *   (key by the string rule, then value), a prefix first — member order
 *   matters, as in CouchDB.
 * "Raw" collation (a view's "options": {"collation": "raw"}, and the
 * document ids of _all_docs) is Erlang's term order instead: numbers <
 * false < null < true < objects < arrays < strings, strings by their bytes.
 *
 * Keys (collate_key) exist for indexes in the ordered KV store (DESIGN.md
 * "Indexes"): one byte string per value, self-delimiting, so a key made of
 * several values (an index's fields, then the doc id) still sorts right.
 * They cannot be decoded: an index keeps the values themselves beside
 * them. Layout, every value starting with its type byte:
 *
 *   byte  value
 *   0x00  end of an array or object (sorts before any element)
 *   0x10  null
 *   0x11  false
 *   0x12  true
 *   0x20  number, then 0x01 negative | 0x02 zero | 0x03 positive, then
 *         for non-zero 0.DIGITS × 10^E: E as 1 byte 0x80+E (|E| < 0x70)
 *         or 0x0f/0xf0 + 8 bytes big-endian of E + 2^63, then the digits
 *         as ASCII, then 0x00; a negative number's E and digit bytes are
 *         inverted (0xff - b) and end in 0xff instead
 *   0x30  string: ICU's sort key (it holds no 0x00 but its last byte)
 *   0x40  array: its elements' keys, then 0x00
 *   0x50  object: per member the key of its name (as a string) and of its
 *         value, then 0x00
 *
 * Strings compare through a collator per thread (ICU collators are opened
 * once per thread and closed when it ends). Not here: what an index stores
 * beside its keys (index/ and store/), Mango's selector semantics
 * (mango.c). */
#ifndef DV_COLLATE_H
#define DV_COLLATE_H

#include <stddef.h>

#include "json/json.h"
#include "util/buf.h"

/* CouchDB's view collation of a and b: < 0, 0 or > 0. Out of memory while
 * converting a string for ICU, strings compare by code point (never
 * happens below a few GB; noted, not reported). */
int collate_cmp(const json_val *a, const json_val *b);

/* Erlang's term order (raw collation): < 0, 0 or > 0. */
int collate_raw_cmp(const json_val *a, const json_val *b);

/* Two JSON number texts (already valid JSON) by exact value. */
int collate_num_cmp(const char *a, size_t an, const char *b, size_t bn);

/* Two UTF-8 strings by ICU's root collation. */
int collate_str_cmp(const char *a, size_t an, const char *b, size_t bn);

/* Append v's key to out: memcmp order of keys is collate_cmp order, equal
 * values give equal keys. DV_ENOMEM; DV_EBAD_JSON for a string ICU cannot
 * read (invalid UTF-8; json/ never makes one). */
int collate_key(dv_buf *out, const json_val *v) DV_MUST_CHECK;

/* The same for raw collation: memcmp order of keys is collate_raw_cmp
 * order (a view with "options": {"collation": "raw"}). */
int collate_raw_key(dv_buf *out, const json_val *v) DV_MUST_CHECK;

/* ICU's versions as CouchDB's _versions shows them ("72.1", "14.0",
 * "153.112"): the library, the Unicode Collation Algorithm, the root
 * collator. An empty string when ICU cannot say. */
typedef struct collate_versions {
  char library[32];
  char algorithm[32];
  char collator[32];
} collate_versions;
void collate_versions_get(collate_versions *out);

#endif
