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

/* Parse a selector (must be a JSON object). Everything is allocated in a;
 * sel must stay alive as long as the result is used (the parsed selector
 * points into it). *out is written only on success. Returns 0, DV_ENOMEM
 * when the arena is exhausted, or for a bad selector the code of CouchDB's
 * mango_error (util/err.h, each 400 with its error name):
 *   DV_EMANGO_OPERATOR       invalid_operator       "Invalid operator: $foo"
 *   DV_EMANGO_NOT_SUPPORTED  not_supported          "Unsupported operator: $…"
 *   DV_EMANGO_BAD_ARG        bad_arg                "Bad argument for operator $in: 1"
 *   DV_EMANGO_SELECTOR       invalid_selector       a condition without a field
 *   DV_EMANGO_SELECTOR_JSON  invalid_selector_json  sel is not an object
 *   DV_EMANGO_BAD_FIELD      bad_field              a field CouchDB cannot use
 *   DV_EMANGO_FIELD_NAME     invalid_field_name     an empty step in a path
 * On an error, if why is not NULL, *why is its reason in CouchDB's words
 * (static or in the arena), so _find can answer hres_errw(r, rc, why)
 * (where _changes answers bad_request with the same reason). */
int mango_parse(dv_arena *a, const json_val *sel, mango_sel **out, const char **why) DV_MUST_CHECK;

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
