/* view.h — map/reduce views: a design document's views as one index, kept
 * in the database's indexes subspace, built in the background from the
 * changes subspace, read by key range and reduced through a tree of
 * reductions (vtree.h) in O(log n). The endpoints are api/view.c.
 *
 * An index is the views of one design document, named by a signature
 * (MD5 of their language, functions, options and views.lib, as CouchDB's
 * couch_mrview_util:ddoc_to_mrst): two design documents with the same
 * views share one, and a design-document edit that leaves them alone keeps
 * it. Views whose map functions are the same share one map ("slot": one
 * set of rows; each of their reduces is one reduction of the slot's tree).
 *
 * Key layout, under the database's indexes subspace I = (P, "i"):
 *   (I,"v",Sig,"s")                        the index's state: (Format,
 *                                          SeqInc|null, SeqVS|null, PurgeSeq,
 *                                          Salt, DefJSON) — the Sequence every
 *                                          change up to which is indexed, the
 *                                          purge_seq reached, the trees' salt,
 *                                          and the definition (the builder
 *                                          needs no design document)
 *   (I,"v",Sig,"k",Slot,EK:bytes,DocID,N)  a row: (KeyJSON, ValueJSON); EK the
 *                                          key's collation key (collate.h), N
 *                                          the emit's number among the
 *                                          document's emits of that slot
 *   (I,"v",Sig,"b",DocID,Slot,EK:bytes,N)  ""  the back-index: a document's
 *                                          rows, to clear them when it changes
 *   (I,"v",Sig,"t",Slot) + vtree keys      the slot's tree (vtree.h): counts
 *                                          (total_rows, offset) and reductions
 *
 * Data flow:
 *   query ──▶ vw_from_ddoc (the design document's views ─▶ Sig, slots)
 *         ──▶ vw_refresh (update=true: the index brought to the database's
 *             update_seq read now) ──▶ vw_scan / vw_reduce
 *   build ──▶ vw_step, one bounded transaction: changes after the state's
 *             Sequence (snapshot reads: a document changed since has a
 *             later changes row, indexed by a later step), each winning
 *             document mapped (query server session: reset, add_lib,
 *             add_fun per slot, map per document), its old rows cleared
 *             through the back-index, the new ones written, each slot's
 *             tree updated with the changed row keys, the state moved to
 *             the last change read; purge infos past the state's
 *             purge_seq first (their documents' rows are dropped or
 *             remapped). The state row is read conflict-checked, so two
 *             builders of one index (two processes) never both commit a
 *             step.
 *   builder: one thread takes indexes that need work from a queue (a
 *             design document's write adds its index), one step at a
 *             time, back of the queue after each, so indexes building at
 *             once share the machine.
 */
#ifndef DV_INDEX_VIEW_H
#define DV_INDEX_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "index/vreduce.h"
#include "json/json.h"
#include "store/check.h"
#include "store/store.h"
#include "util/arena.h"
#include "util/buf.h"

#define VW_SIG_LEN 16

/* One map function and the reduces of the views that share it. */
typedef struct vw_slot {
  const char *map;            /* its source */
  size_t n_red;
  const char **reds;          /* reduce sources */
  vr_kind *kinds;             /* their kinds (VR_JS: the query server) */
  int raw;                    /* "collation": "raw" */
} vw_slot;

/* One view of the design document. */
typedef struct vw_view {
  const char *name;
  size_t slot;
  int red;                    /* its reduce in the slot's, -1: a map view */
} vw_view;

/* A design document's views as an index (strings in the arena). */
typedef struct vw_index {
  uint8_t sig[VW_SIG_LEN];
  char sig_hex[2 * VW_SIG_LEN + 1];
  const char *ddoc_id;        /* "_design/x" */
  const char *lang;           /* "javascript" unless said */
  const char *def;            /* the canonical definition (JSON text): what Sig digests */
  size_t def_len;
  const char *lib_json;       /* views.lib as JSON text, NULL when none */
  size_t n_slots;
  vw_slot *slots;
  size_t n_views;
  vw_view *views;             /* by name */
  int include_design;         /* options.include_design: design documents are mapped */
  int local_seq;              /* options.local_seq: documents get _local_seq */
} vw_index;

/* The views of a design document (the whole document, with _id): 0 with
 * *out; DV_ENOT_FOUND when it defines no view; DV_ENOMEM. Views without a
 * string map are left out. */
int vw_from_ddoc(dv_arena *a, const json_val *ddoc, vw_index **out) DV_MUST_CHECK;

/* The index's definition again from its canonical text (the builder's
 * side: it reads DefJSON from the state row). */
int vw_from_def(dv_arena *a, const char *def, size_t len, vw_index **out) DV_MUST_CHECK;

/* A view by name, or NULL. */
const vw_view *vw_find(const vw_index *ix, const char *name, size_t len);

/* ---- building ------------------------------------------------------------ */

/* Why a build or a read failed in a query server (map or reduce function):
 * CouchDB's error name and reason, copied into the caller's arena. */
typedef struct vw_err {
  const char *error;
  const char *reason;
} vw_err;

/* Bring ix up to date with db (every change committed before the call is
 * indexed when it returns 0), in this thread, step by step. DV_EQS… with
 * *e when a function failed. */
int vw_refresh(store_db *db, const vw_index *ix, dv_arena *a, vw_err *e) DV_MUST_CHECK;

/* Clear every view index of db whose signature is not in keep (what
 * _view_cleanup does, with keep the signatures of the current design
 * documents); *dropped (may be NULL) gets how many went. One index per
 * transaction. */
int vw_cleanup(store_db *db, const uint8_t (*keep)[VW_SIG_LEN], size_t n_keep, int64_t *dropped) DV_MUST_CHECK;

/* What _info shows of an index. */
typedef struct vw_info {
  int built;                  /* a state row exists */
  int have_seq;
  store_seq seq;              /* indexed up to */
  int64_t purge_seq;
  int updater_running;        /* the background builder is on it now */
} vw_info;
int vw_info_get(store_db *db, const vw_index *ix, vw_info *out) DV_MUST_CHECK;

/* The background builder: one thread, a queue of indexes to bring up to
 * date (update=lazy, stale=update_after, design-document writes), each
 * refreshed whole, in the order asked. */
int vw_start(store *s) DV_MUST_CHECK;
void vw_stop(void);
void vw_kick(const char *db, const vw_index *ix);
int vw_building(const char *db, const vw_index *ix);

/* One index being brought up to date, for /_active_tasks (type indexer). */
typedef struct vw_task {
  char db[STORE_MAX_DBNAME + 1];
  char ddoc[512];
  int64_t changes_done, total_changes;
  int64_t started_on, updated_on; /* unix seconds */
} vw_task;
/* Copy up to max running builds into out; returns how many. */
size_t vw_tasks(vw_task *out, size_t max);

/* ---- reading ------------------------------------------------------------- */

/* A range of a view's rows as a query names it (CouchDB's start_key,
 * start_key_docid, end_key, end_key_docid, inclusive_end, descending):
 * keys NULL are open; docids only apply with their key. */
typedef struct vw_range {
  const json_val *start_key;
  const char *start_docid;    /* NULL: none */
  size_t start_docid_len;
  const json_val *end_key;
  const char *end_docid;
  size_t end_docid_len;
  int inclusive_end;
} vw_range;

/* One row handed to a map query's callback (valid during the call). */
typedef struct vw_row {
  const char *id;
  size_t id_len;
  const char *key, *value;    /* JSON texts */
  size_t key_len, value_len;
  int has_doc;                /* include_docs: doc is the document, or NULL (null) */
  json_val *doc;              /* (in the batch's arena: the callback may rewrite it) */
} vw_row;

typedef struct vw_map_opts {
  const vw_range *ranges;     /* one, or one per `keys` element, in order */
  size_t n_ranges;
  int descending;
  int64_t skip, limit;        /* limit < 0: none */
  int include_docs;
  int doc_flags;              /* STORE_CONFLICTS… for included documents */
  int unbuilt;                /* set by vw_map_meta: the index had never been
                                 built, so the rows are none, as total_rows
                                 said (a build that starts between the two
                                 reads does not show rows under a 0) */
} vw_map_opts;

typedef int (*vw_row_fn)(void *arg, const vw_row *row);

/* The slot's total_rows and the offset of the query's first row; sets
 * o->unbuilt for the rows read after it with o. */
int vw_map_meta(store_db *db, const vw_index *ix, size_t slot, vw_map_opts *o, uint64_t *total_rows,
                uint64_t *offset) DV_MUST_CHECK;

/* The rows, in order, each batch read in its own transaction (rows and
 * included documents one snapshot), handed to fn after the transaction.
 * fn returns nonzero to stop (returned as is; 1 is turned into 0). */
int vw_map_rows(store_db *db, const vw_index *ix, size_t slot, const vw_map_opts *o, vw_row_fn fn, void *arg)
    DV_MUST_CHECK;

/* The same rows a batch at a time (a streamed answer): each _next reads
 * one batch in one transaction and hands its rows to fn; *done once
 * every row was handed. o must outlive the iterator. */
typedef struct vw_map_iter vw_map_iter;
int vw_map_iter_new(store_db *db, const vw_index *ix, size_t slot, const vw_map_opts *o, vw_map_iter **out)
    DV_MUST_CHECK;
int vw_map_iter_next(vw_map_iter *it, vw_row_fn fn, void *arg, int *done) DV_MUST_CHECK;
void vw_map_iter_free(vw_map_iter *it);

/* One reduce row: key (JSON text, "null" without grouping), and either
 * value (JSON text) or error/reason (a reduction that failed: CouchDB's
 * error row). */
typedef struct vw_red_row {
  const char *key, *value;
  size_t key_len, value_len;
  const char *error, *reason;
} vw_red_row;

typedef struct vw_red_opts {
  const vw_range *ranges;
  size_t n_ranges;
  int keys;                   /* ranges are `keys`: each a group of its own */
  int descending;
  int group_level;            /* 0: none; -1: exact (group=true); N */
  int64_t skip, limit;
} vw_red_opts;

typedef int (*vw_red_fn)(void *arg, const vw_red_row *row);

/* The reduce rows of view v, through each slot's tree: one tree reduce per
 * group, so O(groups × log n) KV reads. DV_EQS… with *e when a function
 * failed, or a reduction that fails the query (CouchDB's invalid_value). */
int vw_reduce_rows(store_db *db, const vw_index *ix, const vw_view *v, const vw_red_opts *o, vw_red_fn fn, void *arg,
                   dv_arena *a, vw_err *e) DV_MUST_CHECK;

/* ---- checking ------------------------------------------------------------ */

/* Hold ix's index in db against a rebuild from the documents (vcheck.c
 * has the passes and why they stay exact beside writes): every document
 * the index has reached mapped again in a query server session, its rows
 * and back-index rows compared byte for byte; every row and back row
 * decoded and paired; each slot's tree compared with a rebuild (vt_check).
 * Each difference goes to out as a problem (db, document id, the view,
 * what differs); what cannot be compared, as a note. Read-only, in bounded
 * snapshot transactions. An index with no state row (never built) is not
 * compared (0, nothing found). *rows (may be NULL) gets the rows seen. 0
 * when the comparison ran (a function failing in the query server is a
 * note), DV_ENOMEM, a kv error, or out's callback's nonzero result. */
int vw_check(store_db *db, const vw_index *ix, store_check_out *out, int64_t *rows) DV_MUST_CHECK;

#endif
