/* mquery.h — Mango's requests, CouchDB 3.4's semantics: the options of
 * POST _index, _find and _explain, which index answers a query (CouchDB's
 * index choice), the key ranges read, running the query over mindex.h's
 * scans or _all_docs, and the _explain document. No HTTP here: api/mango.c
 * parses the body into a json_val, calls these, and writes the answers.
 *
 * Every error is a row of util/err.h (CouchDB's mango_error table: status,
 * error name) with CouchDB's reason in *why (static or in the arena).
 *
 * Beyond CouchDB, with CouchDB's answers (same documents, same order):
 *   - $or / $in on an indexed field read one key range per branch or value
 *     (merged, without duplicates) instead of the whole index or database;
 *   - a covering json index answers from its rows without reading bodies;
 *   - _explain says which of these it used ("divan" member).
 */
#ifndef DV_MQUERY_H
#define DV_MQUERY_H

#include <stddef.h>
#include <stdint.h>

#include "index/mindex.h"
#include "json/json.h"
#include "store/store.h"
#include "util/arena.h"

/* ---- POST /{db}/_index ------------------------------------------------------ */

/* A validated index creation request (CouchDB's mango_opts:validate_idx_create
 * and mango_idx:new/validate_new). */
typedef struct mq_index_req {
  const char *ddoc;        /* "_design/…" (given, or generated) */
  const char *name;        /* given, or generated */
  json_val *view;          /* the views.NAME value to store: {"map": {"fields": {…},
                              "partial_filter_selector": {…}}, "reduce": "_count",
                              "options": {"def": <the request's index>}} */
  int partitioned;         /* the body's "partitioned": 1 true, 0 false, -1 not
                              given (CouchDB's db_default) */
} mq_index_req;

/* Validate a POST _index body (a JSON object). Errors: missing_required_key,
 * invalid_key, invalid_string, invalid_pos_integer, invalid_index ("Invalid
 * type for index: …", "JSON indexes must be an object…"), the sort-spec
 * errors for fields, selector errors for partial_filter_selector,
 * illegal_docid, and "type": "text"/"nouveau" → 503 "required index service
 * unavailable". */
int mq_index_parse(dv_arena *a, const json_val *body, mq_index_req *out, const char **why) DV_MUST_CHECK;

/* The design document that results from adding the index to `old` (the
 * stored ddoc body with _id/_rev, or NULL when missing or deleted):
 * *out the new body (with "_id" and, when old had one, "_rev"); *exists 1
 * when nothing changes (CouchDB answers "exists"). Errors: invalid_ddoc_lang. */
int mq_index_add(dv_arena *a, const json_val *old, const mq_index_req *q, json_val **out, int *exists,
                 const char **why) DV_MUST_CHECK;

/* The "indexes" array of GET _index: _all_docs first, then every json index
 * (mindex.h's list) in CouchDB's shape {ddoc,name,type,partitioned,def}. */
json_val *mq_index_list_json(dv_arena *a, const mi_def *d, size_t n);

/* ---- _find and _explain ------------------------------------------------------ */

typedef struct mq_req mq_req; /* a parsed _find/_explain body (in the arena) */

/* Validate a _find/_explain body (mango_opts:validate_find): selector,
 * use_index, bookmark, limit, skip, sort, fields, partition, r, conflicts,
 * stale, update, stable, execution_stats, allow_fallback; unknown keys are
 * invalid_key. */
int mq_parse(dv_arena *a, const json_val *body, mq_req **out, const char **why) DV_MUST_CHECK;

/* Where _find's results go, in order. doc returns 0 to go on, nonzero to
 * stop the query (returned by mq_find). */
typedef struct mq_sink {
  int (*doc)(void *arg, const json_val *doc);
  void *arg;
} mq_sink;

/* What follows the docs in _find's answer. */
typedef struct mq_result {
  int ran;                 /* 0: the range was empty (CouchDB then adds no bookmark,
                              stats or warning) */
  const char *bookmark;    /* the bookmark ("nil" when none) */
  json_val *stats;         /* execution_stats when asked, else NULL */
  const char *warning;     /* warnings joined with "\n", NULL when none */
} mq_result;

/* Run a _find on db: choose the index (waiting for a json index still being
 * built when the query asks update=true, answering from what is built with
 * update=false), read its ranges, match each document against the whole
 * selector, apply skip, limit, fields and conflicts, and hand each result
 * to s. Errors (before any doc was handed out): no_usable_index,
 * invalid_index (allow_fallback false), invalid_bookmark, store errors. */
int mq_find(store_db *db, dv_arena *a, const mq_req *q, const mq_sink *s, mq_result *res,
            const char **why) DV_MUST_CHECK;

/* _explain's document (CouchDB 3.4's shape: dbname, index, partitioned,
 * selector, opts, limit, skip, fields, index_candidates, selector_hints,
 * mrargs, covering; plus "divan": how divan reads it). */
int mq_explain(store_db *db, dv_arena *a, const mq_req *q, json_val **out, const char **why) DV_MUST_CHECK;

#endif
