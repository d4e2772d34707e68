/* vreduce.h — CouchDB's built-in reduce functions for views: _sum, _count,
 * _stats and _approx_count_distinct (couch_query_servers.erl's builtin
 * reduces), in C, with CouchDB's answers and errors.
 *
 * A view's reductions live in its tree (vtree.h) as opaque bytes, so a
 * built-in works in three steps:
 *
 *   vr_reduce    rows (key, value)   ─▶ state bytes
 *   vr_rereduce  states (key order)  ─▶ state bytes
 *   vr_final     state               ─▶ the JSON value a query answers
 *
 * States are deterministic (the same input gives the same bytes: a
 * recomputed tree node must be byte-equal to a rebuilt one) and compact:
 *   _count   the count (8 bytes LE)
 *   _sum     the reduction as JSON text: a number, an array, an object of
 *            such (nested), or CouchDB's error object (below). Numbers are
 *            Erlang's: integers exact at any size (int64 while they fit),
 *            a float as soon as a float is added, floats printed shortest
 *            round-trip as json/ prints them. A sum of integers is
 *            therefore the same bytes whatever the chunking.
 *   _stats   JSON text {"sum","count","min","max","sumsqr"} (or an array,
 *            possibly nested, of them for arrays of numbers), in CouchDB's
 *            member order: the answer itself
 *   _approx_count_distinct  a HyperLogLog sketch of the keys (2^11
 *            registers, CouchDB's hyper precision), one byte per register
 * and vr_final turns them into CouchDB's answer (for _approx_count_distinct
 * the estimate, an integer).
 *
 * Errors are CouchDB's, and CouchDB has two kinds:
 * - A value _sum cannot take does NOT fail the reduce: the reduction
 *   becomes {"error":"builtin_reduce_error","reason":"The _sum function
 *   requires ...","caused_by":<the term CouchDB blames>} and a query
 *   answers it as the row's value, with a 200 (builtin_sum_rows). Such a
 *   state propagates through rereduce; vr_state_error tells it apart. A
 *   _sum that grows instead of shrinking becomes such an object too
 *   (check_sum_overflow: "Reduce output must shrink more rapidly: ...",
 *   no caused_by).
 * - A value _stats cannot take fails the reduce: DV_EVIEW_BUILTIN with *e
 *   (error "builtin_reduce_error" from err.h's row, reason CouchDB's text,
 *   caused_by NULL — CouchDB puts the value in the reason; its throw is
 *   {invalid_value, Reason}, which its HTTP layer names "invalid_value").
 *   Inputs on which CouchDB crashes rather than throws (see vreduce.c)
 *   fail the same way, with our reason text and, when there is one, the
 *   offending value's JSON text in caused_by.
 * vreduce.c's opening comment lists every rule and text with its source.
 *
 * Threads: pure functions; any thread.
 */
#ifndef DV_INDEX_VREDUCE_H
#define DV_INDEX_VREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/err.h"

typedef enum vr_kind {
  VR_JS = 0,     /* not a built-in: a function for the query server */
  VR_SUM,
  VR_COUNT,
  VR_STATS,
  VR_APPROX,     /* _approx_count_distinct */
  VR_UNKNOWN,    /* starts with '_' but names no built-in: CouchDB refuses it */
} vr_kind;

/* Which built-in a view's "reduce" source names, recognized as CouchDB
 * recognizes it: by prefix, with no trimming (couch_query_servers.erl
 * matches <<"_sum", _/binary>>, so "_sum", "_summary" and "_sum\n" are all
 * _sum, while " _sum" is JavaScript source). Checked in CouchDB's order:
 * _sum, _count, _stats, _approx_count_distinct; any other source starting
 * with '_' is VR_UNKNOWN, which couch_mrview:validate refuses when the
 * design document is saved: 400 invalid_design_doc, "`_foo` is not a
 * supported reduce function." (jsddoc.c writes that answer). CouchDB 3.4
 * has no other built-in (_top_N, _bottom_N, _first and _last are newer,
 * on CouchDB's main branch). */
vr_kind vr_kind_of(const char *src, size_t n);

/* Why a reduce failed, CouchDB's way. Strings in the caller's arena (or
 * static). */
typedef struct vr_err {
  const char *error;     /* "builtin_reduce_error" */
  const char *reason;    /* CouchDB's text */
  const char *caused_by; /* JSON text of the offending value, or NULL */
} vr_err;

/* One row: its key, value (JSON; NULL reads as null) and document id. */
typedef struct vr_row {
  const json_val *key;   /* the emitted key */
  const json_val *value; /* the emitted value */
  const char *id;        /* the document id (may be NULL when id_len is 0): only its
                            size matters, to _sum's reduce_limit check, which
                            measures [[Key, DocId], Value] as CouchDB does */
  size_t id_len;         /* its length */
} vr_row;

/* The state of rows (n may be 0: the state of nothing), appended to out.
 * Rows in key order (the order decides which error CouchDB reports, the
 * member order of a _sum of one object, and min/max ties). Everything is
 * allocated from a (the caller resets it); rows are borrowed for the call.
 * 0; DV_EVIEW_BUILTIN with *e (strings in a, or static); DV_ENOMEM;
 * DV_EINVAL for VR_JS/VR_UNKNOWN. On error out is as it was. */
int vr_reduce(vr_kind k, const vr_row *rows, size_t n, dv_arena *a, dv_buf *out, vr_err *e) DV_MUST_CHECK;

/* The state of several states (in key order), appended to out; out must
 * not hold the states. n may be 0 (the state of nothing). Errors as
 * vr_reduce's, and DV_ECORRUPT for a state this module did not write. */
int vr_rereduce(vr_kind k, const uint8_t *const *states, const size_t *lens, size_t n, dv_arena *a, dv_buf *out,
                vr_err *e) DV_MUST_CHECK;

/* The JSON value a query answers for a state, appended to out (JSON
 * text). 0; DV_ENOMEM; DV_ECORRUPT (an empty state, or a _count or sketch
 * of the wrong size); DV_EINVAL. */
int vr_final(vr_kind k, const uint8_t *state, size_t len, dv_buf *out) DV_MUST_CHECK;

/* Whether a state is CouchDB's error object (only _sum's can be: see
 * "Errors" above): 1 with *e filled (e may be NULL; reason and caused_by,
 * the JSON text of the member, in a, or NULL when absent), 0 when it is an
 * ordinary reduction, or DV_ENOMEM / DV_ECORRUPT. A view layer that must
 * fail a query on such a row (an option of its own; CouchDB answers it as
 * a value) asks here. */
int vr_state_error(vr_kind k, const uint8_t *state, size_t len, dv_arena *a, vr_err *e) DV_MUST_CHECK;

/* XXH64 of p[0..n) (the sketch's hash; exposed for tests). */
uint64_t vr__xxh64(const void *p, size_t n, uint64_t seed);

#endif
