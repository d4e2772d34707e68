/* view_int.h — what the files of views share (vbuild.c, vred.c, vread.c):
 * keys, the state row, a slot's tree, a query server session, a step. */
#ifndef DV_INDEX_VIEW_INT_H
#define DV_INDEX_VIEW_INT_H

#include "index/qs.h"
#include "index/view.h"
#include "index/vtree.h"
#include "tuple/tuple.h"

/* b = (I, "v", Sig[, sub]) with w ready for more. */
void vw_key(store_tx *t, dv_buf *b, tup_w *w, const uint8_t *sig, const char *sub);

/* The state row (view.h). */
typedef struct vw_state {
  int found;
  int have_seq;
  store_seq seq;          /* every change up to it is indexed */
  int64_t purge_seq;      /* every purge up to it is applied */
  uint8_t salt[VT_SALT_LEN];
  const char *def;        /* the definition (in the caller's arena) */
  size_t def_len;
} vw_state;

int vw_state_get(store_tx *t, const uint8_t *sig, int flags, dv_arena *a, vw_state *s) DV_MUST_CHECK;
int vw_state_put(store_tx *t, const uint8_t *sig, const vw_state *s) DV_MUST_CHECK;

/* A slot's rows and tree prefixes, and the tree's definition over them. */
typedef struct vw_tree {
  dv_buf rows, nodes;
  vt_def d;
} vw_tree;
int vw_tree_def(store_tx *t, const vw_index *ix, const vw_state *s, size_t slot, vw_tree *tr) DV_MUST_CHECK;
void vw_tree_free(vw_tree *tr);

/* A query server session set up for an index's maps. */
typedef struct vw_session {
  qs_proc *p;
  qs_err e;               /* why the last call failed (in a) */
  dv_arena a;
  dv_buf out;
  int broken;             /* the process must not be reused */
} vw_session;
int vw_session_open(const vw_index *ix, vw_session *ss) DV_MUST_CHECK;
/* A command line: line reset, w over it, ["name", … (the caller adds the
 * arguments), then vw_session_prompt closes it, sends it, and leaves the
 * answer line in ss->out. */
void vw_cmd(json_w *w, dv_buf *line, const char *name);
int vw_session_prompt(vw_session *ss, json_w *w, dv_buf *line) DV_MUST_CHECK;
void vw_session_close(vw_session *ss);

/* One document's rows as the builder writes them (vbuild.c): its winner
 * as it is in t (a deletion, a design document unless include_design:
 * none) mapped in ss, each emit a row of its slot — the key suffix (EK,
 * DocID, N) after the slot's rows prefix and the value (KeyJSON,
 * ValueJSON) — in emit order per slot; rows past the kv limits are
 * counted in skipped and left out. The step writes exactly these; the
 * checker (vcheck.c) compares the stored rows with them. */
typedef struct vw_nrow {
  size_t slot;
  dv_buf suffix;          /* (EK, DocID, N) */
  dv_buf val;             /* (KeyJSON, ValueJSON) */
} vw_nrow;

typedef struct vw_rows {
  vw_nrow *r;
  size_t n, cap;
  int64_t skipped;        /* rows past the kv limits, left out */
} vw_rows;

/* rows_prefix_len[slot]: the slot's rows prefix length (for the limits).
 * The document and the map answer go to a; rows are appended to out
 * (free with vw_rows_free, on failure too). DV_EQS… as map_doc. */
int vw_doc_rows(store_tx *t, const vw_index *ix, vw_session *ss, const size_t *rows_prefix_len, const char *id,
                size_t id_len, dv_arena *a, vw_rows *out) DV_MUST_CHECK;
void vw_rows_free(vw_rows *r);

/* b = (I,"v",Sig,"b",DocID): a document's back-index rows start with it. */
int vw_back_prefix(store_tx *t, const uint8_t *sig, const char *id, size_t n, dv_buf *b) DV_MUST_CHECK;

/* Reductions for a slot's tree (vred.c): vt_ops over the rows' (KeyJSON,
 * ValueJSON), built-ins in C (vreduce.h), JavaScript in the session. A
 * state is a tag byte (0 ok, 1 error) and the reduce's own bytes (for an
 * error, {"error","reason"[,"caused_by"]} as JSON). */
typedef struct vw_red_ctx {
  const vw_index *ix;
  size_t slot;
  vw_session *ss;
  size_t rows_prefix_len;  /* the slot's rows prefix: a row key's suffix follows it */
  dv_arena a;
} vw_red_ctx;
extern const vt_ops vw_red_ops;
void vw_red_init(vw_red_ctx *c, const vw_index *ix, size_t slot, vw_session *ss, size_t rows_prefix_len);
void vw_red_free(vw_red_ctx *c);

/* One step (vbuild.c). */
typedef struct vw_changes {
  vt_key *k;
  size_t n, cap;
} vw_changes;

typedef struct vw_purged {
  const char *id;
  size_t len;
  int64_t seq;
} vw_purged;

typedef struct vw_step_ctx {
  const vw_index *ix;
  vw_session *ss;
  dv_arena a, keys, doc_arena, purge_arena;
  vw_changes *changed;    /* per slot: row suffixes written or cleared */
  vw_tree *trees;         /* per slot */
  const uint8_t **rows_prefix;
  size_t *rows_prefix_len;
  vw_purged *purged;
  size_t n_purged;
  int64_t purge_seq_now;
  int64_t docs, rows_written, skipped;
  size_t bytes;           /* written so far in this step (rows and back rows) */
  int64_t purge_seq;      /* out: the state's purge_seq */
  int done, have_seq;
  store_seq seq;
} vw_step_ctx;

typedef struct vw_step_result {
  int done;               /* nothing left to index (as of the step's snapshot) */
  int64_t docs;           /* documents indexed */
  int64_t skipped;        /* rows past the kv limits, left out */
  int have_seq;
  store_seq seq;          /* where the index is now */
  int64_t purge_seq;      /* the purges it has applied: the next step's purge_since */
} vw_step_result;

/* Index the next batch of ix's changes (creating its state when new). */
int vw_step(store_db *db, const vw_index *ix, vw_session *ss, int64_t purge_since, vw_step_result *res) DV_MUST_CHECK;

#endif
