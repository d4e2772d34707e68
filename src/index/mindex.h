/* mindex.h — Mango json indexes: their definitions, their rows kept exact in
 * every document's own write transaction, their background build, and the
 * scan a query reads them with (RFC "Mango JSON indexes in FoundationDB",
 * DESIGN.md "Indexes"). The query planner is mplan.h; the endpoints are
 * api/mango.c.
 *
 * An index is defined by a design document with "language": "query", as
 * CouchDB stores it:
 *   {"_id": "_design/D", "language": "query", "views": {"NAME": {
 *      "map": {"fields": {"a": "asc", …}, "partial_filter_selector": {…}},
 *      "reduce": "_count", "options": {"def": {"fields": ["a", …]}}}}}
 * Whatever writes such a document — POST _index, PUT, _bulk_docs,
 * replication — makes the index live in that write's transaction, and
 * deleting or purging the document drops it. Its storage is named by a
 * signature (MD5 of the fields and the partial_filter_selector), so two
 * names with one definition share one set of rows. The key layout and the
 * data flow are in mindex.c's header comment.
 *
 * Threads: everything here may be called from any thread. mindex_start
 * starts one builder thread per process; mindex_stop joins it. */
#ifndef DV_MINDEX_H
#define DV_MINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "index/mango.h"
#include "json/json.h"
#include "store/store.h"
#include "util/arena.h"

#define MI_SIG_LEN 16
#define MI_MAX_FIELDS 64 /* fields of one index */
/* A document is in an index only when its row fits: the collation key of
 * its values plus its id plus MI_KEY_ROOM (the rest of the row key) at
 * most KV_MAX_KEY bytes, and the values' JSON at most KV_MAX_VALUE. One
 * that does not fit is left out of that index (its write succeeds) and
 * counted. */
#define MI_KEY_ROOM 1024

/* One json index as its design document defines it (strings and values
 * in the arena it was parsed into). */
typedef struct mi_def {
  const char *ddoc;            /* "_design/…", NUL-terminated */
  const char *name;            /* the view's name */
  size_t n_fields;
  const char **fields;         /* field names as written (dotted paths, "\." escapes a dot) */
  size_t *field_lens;
  uint8_t *desc;               /* per field: 1 for "desc" */
  struct mseg **segs;          /* per field: its path split into steps (mango_int.h) */
  size_t *nsegs;
  const json_val *partial;     /* partial_filter_selector, NULL when none */
  mango_sel *psel;             /* it, parsed (NULL: none) */
  uint8_t sig[MI_SIG_LEN];     /* the storage it shares */
  int ready;                   /* 1: built; 0: the background build runs */
  int64_t built, total;        /* build progress: documents indexed, to index */
  store_seq created;           /* the build takes the changes up to here (later ones: the write hook) */
  int have_cursor;             /* … and has taken them up to cursor */
  store_seq cursor;
  int64_t skipped;             /* documents left out: key or value past the limits */
} mi_def;

/* The json indexes of a design document body (the whole document, with
 * _id): each view whose map has "fields", as CouchDB's mango_idx:from_ddoc
 * reads it; views it cannot read are left out. *out in the arena; n 0 when
 * the document is not "language": "query". DV_ENOMEM only. */
int mi_from_ddoc(dv_arena *a, const json_val *ddoc, mi_def **out, size_t *n) DV_MUST_CHECK;

/* An index's key for a document: 1 with the collation key of the array of
 * its fields' values appended to key and that array's JSON text to val; 0
 * when the document is not in the index (a field missing, the partial
 * filter does not match, a design document). doc is {"_id","_rev",…}. */
int mi_doc_key(const mi_def *d, const json_val *doc, dv_buf *key, dv_buf *val) DV_MUST_CHECK;

/* The value at a dotted field path of doc ("a.b", "\." a literal dot), or
 * NULL when it is missing: the rule the selector matcher uses (mango.c).
 * Splits the path on each call; definitions keep theirs split (segs). */
const json_val *mi_field(const json_val *doc, const char *field, size_t len);

/* Every json index of the database, live or building, in CouchDB's order
 * (ddoc id, then name), read in one transaction. */
int mi_list(store_db *db, dv_arena *a, mi_def **out, size_t *n) DV_MUST_CHECK;

/* ---- the write hook (store/hooks.h) ------------------------------------ */

/* Fill h->index_update for database name (every database gets one: a
 * design document written to it may create the first index). Part of the
 * provider main.c registers; mindex_unload frees what this filled. */
int mindex_hooks_load(store *s, const char *name, size_t len, store_hooks *h) DV_MUST_CHECK;
void mindex_hooks_unload(store_hooks *h);

/* ---- the builder --------------------------------------------------------- */

/* Start the builder (it resumes every unfinished build it finds) / stop it. */
int mindex_start(store *s) DV_MUST_CHECK;
void mindex_stop(void);
/* Ask the builder to look at database name's unfinished builds now (after
 * a design document was written). */
void mindex_kick(const char *name, size_t len);
/* Wait until the index with this signature is built, or timeout_ms passed
 * (DV_ETIMED_OUT), or it is gone (DV_ENOT_FOUND). */
int mindex_wait(store_db *db, const uint8_t sig[MI_SIG_LEN], int timeout_ms) DV_MUST_CHECK;

/* One running build, for /_active_tasks. */
typedef struct mi_task {
  char db[256];
  char ddoc[512];
  char name[256];
  int64_t changes_done;
  int64_t total_changes;
  int64_t started_on;  /* unix seconds */
  int64_t updated_on;
} mi_task;
/* Copy up to max running builds into out; returns how many. */
size_t mindex_tasks(mi_task *out, size_t max);

/* ---- reading an index ---------------------------------------------------- */

/* A key range of an index, as collation-key prefixes of the key array:
 * rows whose key starts at or after start, and at or before end (every
 * key with end as a prefix included). start_len 0: from the first row;
 * end NULL: to the last. Built by mplan.c. */
typedef struct mi_range {
  const uint8_t *start;
  size_t start_len;
  const uint8_t *end;
  size_t end_len;
} mi_range;

/* A row handed to a scan's callback. */
typedef struct mi_row {
  const char *id;          /* the document id */
  size_t id_len;
  const json_val *key;     /* the array of the index's field values */
  json_val *doc;           /* the document (with flags), NULL when covering */
  const uint8_t *pos;      /* the row's position (a bookmark resumes after it) */
  size_t pos_len;
} mi_row;

typedef struct mi_scan_opts {
  const uint8_t *sig;      /* the index */
  const mi_range *ranges;  /* in key order, disjoint; n 0: the whole index */
  size_t n_ranges;
  int descending;          /* last row first (ranges walked last first) */
  int covering;            /* 1: no document is read */
  int doc_flags;           /* STORE_CONFLICTS … for the documents */
  const uint8_t *after;    /* a bookmark's position: rows strictly past it */
  size_t after_len;
} mi_scan_opts;

/* Rows in order, in batches: each batch one transaction that reads the
 * index rows and their documents (a row whose document changed since is
 * not in the index any more in that snapshot), finished before its rows
 * go to cb. cb returns 0 to go on, nonzero to stop (returned as is; 1 is
 * turned into 0). *keys gets the rows read. */
typedef int (*mi_row_cb)(void *arg, const mi_row *row);
int mi_scan(store_db *db, const mi_scan_opts *o, mi_row_cb cb, void *arg, int64_t *keys) DV_MUST_CHECK;

/* ---- checking ---------------------------------------------------------------- */

/* Compare index d's rows and back-index rows with a rebuild from the
 * database's documents: 0 when they are equal, DV_ECORRUPT with *why (in
 * the arena) naming the first difference. For a quiet database (tests,
 * `divan check`): the rows and the documents are read in separate
 * transactions. *rows (may be NULL) gets the index's row count. Memory:
 * every row, in the arena. */
int mi_check(store_db *db, const mi_def *d, dv_arena *a, int64_t *rows, const char **why) DV_MUST_CHECK;

#endif
