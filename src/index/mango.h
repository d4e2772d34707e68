/* mango.h — Mango selectors (CouchDB's `_find` query language): parse a
 * selector object once, then test documents against it.
 *
 * Used by the `_changes?filter=_selector` feed now and by `_find` later.
 * The semantics are CouchDB 3.x's (docs.couchdb.org "Selector Syntax"):
 * implicit $eq and $and, dotted field paths (with "\." escaping a dot),
 * combination operators ($and $or $not $nor $all $elemMatch $allMatch
 * $keyMapMatch) and condition operators ($lt $lte $eq $ne $gte $gt $exists
 * $type $in $nin $size $mod $regex $beginsWith), comparing values in
 * CouchDB's collation order (null < false < true < numbers < strings <
 * arrays < objects).
 */
#ifndef DV_MANGO_H
#define DV_MANGO_H

#include "json/json.h"
#include "util/arena.h"
#include "util/err.h"

typedef struct mango_sel mango_sel; /* a parsed selector, lives in the arena */

/* Parse a selector (must be a JSON object). Everything is allocated in a;
 * sel must stay alive as long as the result is used. On a bad selector
 * returns DV_EINVAL and, if reason is not NULL, points *reason at a
 * CouchDB-style message (static or in the arena), e.g.
 * "Invalid operator: $foo". */
int mango_parse(dv_arena *a, const json_val *sel, mango_sel **out, const char **reason) DV_MUST_CHECK;

/* 1 if the document matches, else 0. doc is the whole document as
 * returned to users (with _id, _rev, _deleted…). */
int mango_match(const mango_sel *s, const json_val *doc);

/* CouchDB's collation of two JSON values (<0, 0, >0). */
int mango_cmp(const json_val *a, const json_val *b);

#endif
