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
 *   _sum     the running sum as JSON text (a number, an array of numbers,
 *            or an object of such, nested), numbers exact while they are
 *            integers that fit 64 bits, else doubles printed shortest
 *            round-trip (CouchDB: Erlang integers and floats)
 *   _stats   JSON text {"sum","count","min","max","sumsqr"} (or an array of
 *            them for arrays of numbers), in CouchDB's member order
 *   _approx_count_distinct  a HyperLogLog sketch of the keys (2^11
 *            registers, CouchDB's hyper precision), one byte per register
 * and vr_final turns them into CouchDB's answer (for _approx_count_distinct
 * the estimate, an integer).
 *
 * Errors are CouchDB's: a value _sum or _stats cannot take fails the
 * reduce with builtin_reduce_error (err.h DV_EVIEW_BUILTIN) and the reason
 * text CouchDB gives, with caused_by (the offending value as JSON text).
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
 * recognizes it (leading/trailing whitespace, prefix rules). */
vr_kind vr_kind_of(const char *src, size_t n);

/* Why a reduce failed, CouchDB's way. Strings in the caller's arena. */
typedef struct vr_err {
  const char *error;     /* "builtin_reduce_error" */
  const char *reason;    /* CouchDB's text */
  const char *caused_by; /* JSON text of the offending value, or NULL */
} vr_err;

/* One row: its key and value (JSON). */
typedef struct vr_row {
  const json_val *key;
  const json_val *value;
} vr_row;

/* The state of rows (n may be 0: the state of nothing), appended to out.
 * 0; DV_EVIEW_BUILTIN with *e (in a); DV_ENOMEM. */
int vr_reduce(vr_kind k, const vr_row *rows, size_t n, dv_arena *a, dv_buf *out, vr_err *e) DV_MUST_CHECK;

/* The state of several states (in key order), appended to out. */
int vr_rereduce(vr_kind k, const uint8_t *const *states, const size_t *lens, size_t n, dv_arena *a, dv_buf *out,
                vr_err *e) DV_MUST_CHECK;

/* The JSON value a query answers for a state, written to out (JSON text). */
int vr_final(vr_kind k, const uint8_t *state, size_t len, dv_buf *out) DV_MUST_CHECK;

#endif
