/* mango.h — Mango selectors (CouchDB's `_find` query language): parse a
 * selector object once, then test documents against it.
 *
 * Used by the `_changes?filter=_selector` feed now and by `_find` later.
 * The semantics are CouchDB 3.x's (docs.couchdb.org "Selector Syntax",
 * and src/mango/src/mango_selector.erl, which this module follows clause
 * for clause): implicit $eq and $and, dotted field paths (with "\."
 * escaping a dot), nested objects as implicit paths, combination operators
 * ($and $or $not $nor $all $elemMatch $allMatch $keyMapMatch) and
 * condition operators ($lt $lte $eq $ne $gte $gt $exists $type $in $nin
 * $size $mod $regex $beginsWith), comparing values in CouchDB's collation
 * order (null < false < true < numbers < strings < arrays < objects).
 *
 * Like CouchDB, a selector is normalised before it is used: negations are
 * pushed down to the conditions ({"$not": {"a": 1}} becomes {"a": {"$ne":
 * 1}}), so a negated condition on a field still requires the field to
 * exist. Only {"$exists": false} matches a missing field.
 *
 * Strings collate by ICU's root collation, as CouchDB's (index/collate.h).
 *
 * Approximation (CouchDB behaviour we do not reproduce exactly):
 *  - $regex is PCRE in CouchDB; here the pattern is translated to a POSIX
 *    extended regular expression for the C library's regcomp (\d \s \w,
 *    (?:…), a leading (?i), lazy quantifiers are understood); constructs
 *    ERE cannot express (lookaround, backreferences, \p{…}, NUL bytes) are
 *    rejected as a bad $regex argument.
 */
#ifndef DV_MANGO_H
#define DV_MANGO_H

#include "json/json.h"
#include "util/arena.h"
#include "util/err.h"

typedef struct mango_sel mango_sel; /* a parsed selector, lives in the arena */

/* Why a selector was refused, in CouchDB's words: its 400 response would be
 * {"error": error, "reason": reason}. Both are static or in the arena. */
typedef struct mango_err {
  const char *error;  /* "invalid_operator", "bad_arg", "not_supported",
                         "invalid_selector", "bad_field",
                         "invalid_field_name", "invalid_selector_json" */
  const char *reason; /* e.g. "Invalid operator: $foo" */
} mango_err;

/* Parse a selector (must be a JSON object). Everything is allocated in a;
 * sel must stay alive as long as the result is used (the parsed selector
 * points into it). On a bad selector returns DV_EINVAL and, if reason is
 * not NULL, points *reason at a CouchDB-style message (static or in the
 * arena), e.g. "Invalid operator: $foo". DV_ENOMEM when the arena is
 * exhausted. *out is written only on success. */
int mango_parse(dv_arena *a, const json_val *sel, mango_sel **out, const char **reason) DV_MUST_CHECK;

/* The same, with CouchDB's error name as well (for _find, which answers
 * 400 {"error":"invalid_operator",…} where _changes answers bad_request).
 * err may be NULL. */
int mango_parse_err(dv_arena *a, const json_val *sel, mango_sel **out, mango_err *err) DV_MUST_CHECK;

/* 1 if the document matches, else 0. doc is the whole document as
 * returned to users (with _id, _rev, _deleted…). The empty selector {}
 * matches everything. Thread-safe: a parsed selector may be matched from
 * several threads at once (compiled $regex patterns are cached per
 * thread). */
int mango_match(const mango_sel *s, const json_val *doc);

/* CouchDB's collation of two JSON values (<0, 0, >0): by type, then
 * numbers by exact numeric value (1 == 1.0), strings by code point,
 * arrays element by element, objects member by member (key, then value)
 * in their stored order; a shorter array or object that is a prefix of
 * the other sorts first. */
int mango_cmp(const json_val *a, const json_val *b);

#endif
