/* store_int.h — private to src/store: the key layout, the handle and
 * store structs, the transaction loop with transaction ids.
 *
 * Key layout (tuple-encoded; R = (root,), default ("divan",)). This table
 * is ../shared/DESIGN.md "Key layout", made exact for this code:
 *
 *   cluster level, under (R, 0, …)
 *   key                                         value
 *   (R,0,"dbs",DbName)                          (DbPrefix, Incarnation, CreatedAt, DbUUID:bytes16
 *                                                [, MovingSince: a move's read-only round, move.c])
 *                                               CreatedAt: unix microseconds (seconds in stores
 *                                               written before; read as such when below 10^11)
 *   (R,0,"config","db_updates_partitions")      (N,)
 *   (R,0,"prefix_counter")                      8-byte LE counter (atomic ADD; read non-snapshot)
 *   (R,0,"db_updates_queue",Part,VS)            (DbName, DbPrefix, "updated")  blind versionstamped key
 *   (R,0,"db_updates",VS)                       (DbName, EventType)
 *   (R,0,"db_updates_by_name",DbName)           (VS,)  the index key's stamp, versionstamped value
 *   (R,0,"db_updates_lease",Part)               (OwnerId:bytes16, ExpiresMs)
 *   (R,0,"db_updates_tick")                     8-byte LE counter bumped by the consumer (watched)
 *   (R,0,"server_uuid")                         16 random bytes, made once (watch.c; GET / uuid)
 *   (R,0,"txids",Bucket,TxId:bytes16)           ""  Bucket = unix minutes
 *   (R,0,"loads",DbPrefix)                      (DbName, StartedAt)  a `divan load` filling DbPrefix,
 *                                               which no dbs row names yet (dump.c); cleared with
 *                                               the dbs row's write or the prefix's clear
 *
 *   per database, P = (R, 1, DbPrefix)
 *   (P,"r",DocID,NotDeleted,RevPos,RevHash)     winner: (0, (Inc,VS), BranchCount, (anc…), JsonSize, KvSize[, (AttID…)])
 *                                               other:  (0, null, null, (anc…), JsonSize, KvSize[, (AttID…)])
 *                                               (AttID…): the content the leaf's stubs use, when it has any
 *   (P,"d",DocID,NotDeleted,RevPos,RevHash)     (0[, (stub…)])  RevisionMetadata: DocFormat, attachment stubs
 *                                               stub = (Name, Type, Length, EncLength, Gzip, Md5:bytes16, RevPos, AttID:bytes16)
 *   (P,"d",DocID,NotDeleted,RevPos,RevHash,path…) one KV per JSON leaf (body.h)
 *   (P,"c",Inc,VS)                              (0, DocID, RevPos, RevHash, BranchCount, NotDeleted)
 *   (P,"l",DocID)                               (0, RevN, NChunks)   local doc; the JSON text in
 *   (P,"l",DocID,i)                             chunk i (bytes), i = 0..NChunks-1
 *   (P,"m","doc_count"|"doc_del_count"|"size_active"|"size_external")  8-byte LE (atomic ADD)
 *   (P,"m","update_seq")                        (Inc, VS) of the newest changes row (versionstamped value)
 *   (P,"m","revs_limit")                        (N,)
 *   (P,"m","security")                          JSON text
 *   (P,"m","purge_seq")                         (N,)  purges ever recorded (purge.c)
 *   (P,"m","purged_infos_limit")                (N,)  purge infos kept (default 1000)
 *   (P,"p",PurgeSeq,Chunk)                      a purge info (id, revs asked), ≤ 90 KB a chunk
 *   (P,"a",DocID,AttID:bytes16,i)               attachment content chunk i (raw stored bytes, ≤ STORE_ATT_CHUNK)
 *   (R,0,"att_uploads",AttID:bytes16)           (DbPrefix, DocID, ExpiresMs)  an upload not yet linked (att.c)
 *   (P,"i",…)                                   the indexes subspace: index/'s rows, written through
 *                                               store_tx (tx.c); their layout is index/'s (mango_idx.c)
 *
 * RevHash: 16 bytes (tuple bytes) for a 32-hex-digit rev; any other rev id
 * from replication is a tuple string of its text. NotDeleted: tuple bool.
 * anc: ancestor hashes, parent first, same element types as RevHash.
 * VS: a 12-byte tuple versionstamp; its 2-byte user version orders the
 * documents written by one transaction.
 */
#ifndef DV_STORE_INT_H
#define DV_STORE_INT_H

#include <pthread.h>
#include <string.h>

#include "store/store.h"
#include "tuple/tuple.h"

#define ST_SUB_REV 'r'
#define ST_SUB_DOC 'd'
#define ST_SUB_CHG 'c'
#define ST_SUB_LOCAL 'l'
#define ST_SUB_PURGE 'p'
#define ST_SUB_META 'm'
#define ST_SUB_ATT 'a'
#define ST_SUB_INDEX 'i'

#define ST_TXID_BUCKET_S 60        /* one TxId bucket per minute */
#define ST_TXID_KEEP_BUCKETS 60    /* keep an hour of TxIds */
#define ST_TXN_BUDGET 6000000      /* mutation bytes per edit transaction */
#define ST_DOC_KV_BUDGET 8000000   /* exploded bytes of one document */
#define ST_WORKERS 2               /* the store's worker threads (work.c) */

/* A database handle. The cached fields are revalidated in each
 * transaction (st_db_check) against the metadata-version key. */
struct store_db {
  store *s;               /* owner */
  struct store_db *next;  /* hash chain in s->tab */
  char *name;             /* NUL-terminated */
  size_t name_len;
  uint8_t *conflict;      /* (R,0,"dbs",Name) + 0x00: the end of its read conflict range */
  size_t conflict_len;
  int refs;               /* under s->mu */
  int64_t prefix;         /* DbPrefix (fixed for the handle's life) */
  pthread_mutex_t mu;     /* guards the fields below */
  int64_t inc;            /* Incarnation */
  int64_t created_at;     /* unix microseconds */
  uint8_t uuid[16];       /* DbUUID */
  int64_t revs_limit;     /* cached meta */
  int64_t moving;         /* the dbs row's MovingSince (0: none): writes are refused */
  uint8_t mdv[16];        /* metadata version the cache was read at */
  size_t mdv_len;         /* its length */
  int mdv_found;          /* 0: the key was absent then */
  int dead;               /* 1: deleted (prefix no longer named) */
  struct st_rank *rank;   /* _all_docs offsets (read.c), under mu */
  uint64_t meta_gen;      /* +1 each time st_db_check reloads the cache (mdv moved) */
  struct st_hooks *hooks; /* the write hooks loaded at meta_gen (hooks.c), under mu */
};

struct store {
  kv_db *kv;              /* the store (not owned) */
  uint8_t root[64];       /* packed (root,) */
  size_t root_len;
  size_t max_doc;         /* max_document_size */
  int partitions;         /* db_updates partitions */
  pthread_mutex_t mu;     /* guards tab */
  store_db *tab[256];     /* handle cache, hashed by name */
  uint8_t owner[16];      /* this process's lease owner id */
  pthread_t bg;           /* background thread (bg.c) */
  int bg_started;
  int bg_stop;            /* under bg_mu */
  pthread_mutex_t bg_mu;
  pthread_cond_t bg_cv;
  int64_t last_cleanup;   /* unix minutes of the last TxId cleanup */
  pthread_mutex_t dbu_mu; /* one consumer at a time in this process; guards dbu_cursor */
  dv_buf *dbu_cursor;     /* per partition: the last queue key this process consumed (dbupd.c) */
  store_hooks_provider hp; /* the write hooks' provider (hooks.c), under mu */
  uint64_t hp_gen;        /* +1 per store_set_hooks, under mu */
  pthread_mutex_t work_mu; /* the workers' queue (work.c); guards the fields below */
  pthread_cond_t work_cv;  /* a task was queued, or stop (CLOCK_MONOTONIC) */
  struct st_task *work_ready; /* due tasks, FIFO */
  struct st_task *work_tail;  /* the last of them */
  struct st_task *work_timed; /* tasks waiting for their time, by due time */
  pthread_t work_th[ST_WORKERS]; /* the workers (started by the first async call) */
  int work_started;       /* how many run (read without the lock: atomic) */
  int work_stop;          /* store_close: the workers exit */
};

/* ---- keys ---------------------------------------------------------------- */

/* Start a key: b = R followed by the writer's elements; returns the writer. */
void st_key_root(store *s, dv_buf *b, tup_w *w);
/* b = (R, 0, name) */
void st_key_cluster(store *s, dv_buf *b, tup_w *w, const char *name);
/* A database as one transaction sees it (filled by st_db_check). */
typedef struct st_dbx {
  store *s;            /* the store */
  store_db *db;        /* the handle */
  const char *name;    /* its name */
  size_t name_len;
  int64_t prefix;      /* DbPrefix */
  int64_t inc;         /* Incarnation */
  int64_t revs_limit;  /* _revs_limit */
  int64_t moving;      /* nonzero: a move's read-only round (writes refused, DV_EDB_MOVING) */
} st_dbx;

/* b = P + (sub,) for a database. */
void st_key_db(const st_dbx *x, dv_buf *b, tup_w *w, char sub);
/* b = P + (sub, DocID) */
void st_key_doc(const st_dbx *x, dv_buf *b, tup_w *w, char sub, const char *id, size_t id_len);
/* b = P + ("m", name): a database's meta KV. */
void st_key_meta(const st_dbx *x, dv_buf *b, const char *name);
/* Read a meta KV (value borrowed from the transaction). */
int st_meta_get(kv_txn *txn, const st_dbx *x, const char *name, int flags, const uint8_t **v, size_t *vl,
                int *found) DV_MUST_CHECK;
/* A Sequence as two tuple elements (Inc, VS): write, or read (DV_ECORRUPT
 * when the next elements are not one). */
void st_seq_put(tup_w *w, const store_seq *q);
int st_seq_get(tup_r *r, store_seq *out) DV_MUST_CHECK;
/* Lower-case hex of n bytes into out (2n chars, no NUL). */
void st_hex(const uint8_t *p, size_t n, char *out);
/* Append a rev's hash element. */
void st_put_hash(tup_w *w, const store_rev *r);
/* Read a hash element into r (its bytes decoded into the arena). */
int st_get_hash(const tup_item *it, dv_arena *a, store_rev *r) DV_MUST_CHECK;
/* Bounds [begin, end) over keys prefix + (str, …) for a store_range. */
int st_range_bounds(const dv_buf *prefix, const store_range *r, dv_buf *begin, dv_buf *end) DV_MUST_CHECK;
/* 1 if [b, e) is not empty. */
static inline int st_nonempty(const dv_buf *b, const dv_buf *e) {
  size_t n = b->len < e->len ? b->len : e->len;
  int c = memcmp(b->p, e->p, n);
  return c < 0 || (c == 0 && b->len < e->len);
}
/* Range [b, b+\xff) style bounds of a prefix key into begin/end bufs. */
int st_prefix_range(const dv_buf *prefix, dv_buf *begin, dv_buf *end);

/* ---- revision branches (rev.c) ----------------------------------------------- */

/* One KV of the revisions subspace, decoded. */
typedef struct st_branch {
  store_rev rev;       /* the leaf */
  int deleted;         /* 1: tombstone (NotDeleted false) */
  int winner;          /* the value carries Sequence and BranchCount */
  store_seq seq;       /* winner: the doc's changes row */
  int64_t bc;          /* winner: BranchCount */
  store_rev *anc;      /* ancestors, parent first; positions rev.pos-1, … */
  size_t n_anc;
  int64_t json_size;   /* JSON bytes of the leaf's body */
  int64_t kv_size;     /* stored bytes of the leaf's body */
  const uint8_t *att_ids; /* AttIDs the leaf's stubs reference, 16 bytes each (att.c) */
  size_t n_att_ids;
} st_branch;

/* Key order of two branches: NotDeleted, then pos, then hash. */
int st_branch_cmp(const st_branch *a, const st_branch *b);
/* Decode a revisions KV; key_off = bytes of (P,"r",DocID) before the
 * suffix. Hash and ancestor bytes are copied into the arena. */
int st_branch_decode(dv_arena *a, const uint8_t *key, size_t key_len, size_t key_off, const uint8_t *val,
                     size_t val_len, st_branch *out) DV_MUST_CHECK;
/* b = (P,"r",DocID,NotDeleted,RevPos,RevHash) */
void st_branch_key(const st_dbx *x, dv_buf *b, const char *id, size_t id_len, int deleted, const store_rev *r);
/* b = (P,"d",DocID,NotDeleted,RevPos,RevHash): the leaf's body prefix. */
void st_doc_key(const st_dbx *x, dv_buf *b, const char *id, size_t id_len, const st_branch *br);
/* Range read of a document's branches, [(P,"r",DocID), end_key) (end_key
 * NULL: the whole document), limit 0 = all, flags KV_REVERSE/KV_SNAPSHOT;
 * decoded into the arena, counted in store_read_stats. */
int st_branch_range(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const dv_buf *end_key,
                    int limit, int flags, dv_arena *a, st_branch **out, int *out_n) DV_MUST_CHECK;
/* Point read of one leaf's branch KV; *found 0 when absent. Counted. */
int st_branch_get(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, int deleted, const store_rev *r,
                  dv_arena *a, st_branch *out, int *found) DV_MUST_CHECK;
/* Write a branch KV: as the winner (Sequence = (x->inc, this commit, uv);
 * a versionstamped value) or not. Ancestors are stemmed to revs_limit-1
 * and further if the value would pass KV_MAX_VALUE. */
int st_branch_put(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br,
                  int winner, uint16_t uv, int64_t bc) DV_MUST_CHECK;
/* Clear a branch KV and its leaf's body range (edits replacing a leaf,
 * purge). */
int st_branch_clear(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br) DV_MUST_CHECK;
/* Move a document's changes row: clear the one at old (NULL: none) and,
 * unless nw is NULL, write nw's at (x->inc, this commit, uv) as a
 * versionstamped key carrying BranchCount bc. */
int st_change_move(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const store_seq *old,
                   const st_branch *nw, int64_t bc, uint16_t uv) DV_MUST_CHECK;
/* (P,"m","update_seq") = (x->inc, this commit, uv): a versionstamped value. */
int st_update_seq_put(kv_txn *txn, const st_dbx *x, uint16_t uv) DV_MUST_CHECK;

/* ---- the store's workers (work.c) ------------------------------------------------ */

/* A continuation for a worker, embedded in the operation that defers it. */
typedef struct st_task {
  void (*fn)(struct st_task *t); /* runs on a worker: may block; may free t */
  struct st_task *next;          /* queue link (work.c) */
  int64_t due_us;                /* monotonic time it may run (work.c) */
} st_task;

/* The worker queue's lock and condition variable (store_open), and the
 * workers: st_work_start starts them unless they run (from a caller's
 * thread, never a kv callback; DV_ENOMEM when a thread cannot start),
 * st_work_stop stops and joins them (store_close; every operation must
 * have finished: tasks still queued are dropped). */
void st_work_init(store *s);
int st_work_start(store *s) DV_MUST_CHECK;
void st_work_stop(store *s);
/* Run t->fn on a worker once delay_ms have passed (<= 0: as soon as one is
 * free; tasks of equal due time run in the order deferred). Never blocks
 * for long and never fails, so kv callbacks call it; the workers must
 * have been started. t must stay valid until t->fn runs. */
void st_defer(store *s, st_task *t, int delay_ms);

/* ---- transactions ---------------------------------------------------------- */

/* One logical operation (seed 004 "commit_unknown_result"): a TxId minted
 * once; every attempt first reads it (non-snapshot) and, if the key is
 * there, an earlier attempt committed, and its results are the answer:
 * st_run keeps *result (an operation with one number to report) or calls
 * `keep` (anything larger) when an attempt's commit comes back
 * maybe-committed, and brings them back with `restore`. */
typedef struct st_op {
  int (*fn)(kv_txn *txn, void *arg);  /* one attempt; 0 to commit */
  /* or, for an operation on one database: st_run checks db in each
   * attempt (st_db_check) and hands dbfn the checked database */
  int (*dbfn)(kv_txn *txn, const st_dbx *x, void *arg);
  store_db *db;
  void (*keep)(void *arg);            /* optional: save this attempt's results */
  void (*restore)(void *arg);         /* optional: bring the saved ones back */
  int64_t *result;                    /* optional: the one number fn reports */
  int64_t kept;                       /* *result of a maybe-committed attempt */
  void *arg;
  int use_txid;                       /* 1 for non-idempotent writes */
  uint8_t txid[16];                   /* minted by st_run */
  int64_t bucket;                     /* its time bucket */
  int committed_before;               /* out: 1 if an earlier attempt's TxId was found */
  /* st_run_async: the completion of a run that went pending, with its
   * final rc (as st_run's); on_worker 1 on a store worker (it may block),
   * 0 on the kv backend's thread (it must not: st_defer what blocks). The
   * run is over and op is the caller's again when it is called. */
  void (*done)(struct st_op *op, int rc, int on_worker);
  /* private to store.c: the run in progress */
  store *s;                           /* the store it runs on */
  kv_txn *txn;                        /* its transaction */
  dv_buf txkey;                       /* its TxId key */
  int maybe;                          /* an attempt came back maybe-committed */
  int sync;                           /* 1: st_run (kv_commit, kv_on_error) */
  int phase;                          /* commit handshake (atomic; store.c) */
  int crc;                            /* the commit's rc, handed over by its callback */
  st_task task;                       /* the next attempt, deferred */
} st_op;

/* Run op: fn, or (op->db set) st_db_check then dbfn, in each attempt,
 * each commit waited for on this thread, each retry's backoff slept. */
int st_run(store *s, st_op *op) DV_MUST_CHECK;
/* st_run_async: ST_PENDING, then op->done runs once with the result. */
#define ST_PENDING 1
/* The same operation without waiting: the first attempt runs on this
 * thread and its commit is started with kv_commit_async. Returns the
 * result (<= 0) when the run ended on this thread (op->done is not
 * called), or ST_PENDING: op->done will be called once, on the kv thread
 * or a worker, and until then op and everything fn reads belong to the
 * run. Later attempts (after a retryable error and its backoff, on the
 * timed queue) run on a worker, never on the kv thread. */
int st_run_async(store *s, st_op *op) DV_MUST_CHECK;
/* Write op's TxId key in txn (fn calls this in every attempt). */
int st_txid_write(store *s, kv_txn *txn, const st_op *op) DV_MUST_CHECK;

/* Revalidate a cached handle inside txn: snapshot read of the metadata
 * version, reload when it moved, read conflict on (R,0,"dbs",name).
 * DV_ENO_DB once the database is gone or re-created. Fills the handle's
 * prefix/inc/revs_limit under its lock and copies them out. */
int st_db_check(store_db *db, kv_txn *txn, st_dbx *out) DV_MUST_CHECK;

/* Bump the cluster-wide metadata version (every process reloads). */
int st_mdv_bump(kv_txn *txn) DV_MUST_CHECK;
/* A new database prefix: (R,0,"prefix_counter") + 1, read non-snapshot so
 * two creators conflict (db.c's create, dump.c's load). */
int st_db_prefix_alloc(store *s, kv_txn *txn, int64_t *out) DV_MUST_CHECK;
/* (R,0,"dbs",Name) for a new database under prefix at Incarnation inc,
 * with a fresh DbUUID and CreatedAt, and its "created" _db_updates event;
 * DV_EDB_EXISTS when the name is taken (create, dump.c's load). */
int st_db_register(store *s, kv_txn *txn, const char *name, size_t len, int64_t prefix,
                   int64_t inc) DV_MUST_CHECK;

/* Append this transaction's "updated" event for the database to the
 * db_updates queue (blind versionstamped key). */
int st_dbu_enqueue(store *s, kv_txn *txn, const char *name, size_t name_len, int64_t prefix) DV_MUST_CHECK;
/* Write a created/deleted row directly into the index (create/delete). */
int st_dbu_event(store *s, kv_txn *txn, const char *name, size_t name_len, const char *type) DV_MUST_CHECK;

/* Counted reads of the revisions subspace (store_read_stats). */
void st_count_read(size_t kvs);

/* Little-endian int64 helpers for the atomic counters. */
void st_le64(int64_t v, uint8_t out[8]);
int64_t st_le64_get(const uint8_t *p, size_t n);
int st_counter_add(kv_txn *txn, const st_dbx *x, const char *name, int64_t delta) DV_MUST_CHECK;

/* ---- write hooks (hooks.c) ------------------------------------------------------- */

typedef struct st_hooks st_hooks;
/* The handle's hook table for this transaction (after st_db_check), a
 * reference the caller drops with st_hooks_put; *out NULL when no provider
 * is registered. Errors: the provider's, DV_ENOMEM. */
int st_hooks_get(store_db *db, st_hooks **out) DV_MUST_CHECK;
void st_hooks_put(st_hooks *h); /* NULL is fine */
/* 1 when validators would run for a write with context w. */
int st_hooks_validating(const st_hooks *h, const store_wctx *w);
/* Run the validators on edit e (revs: newDoc's _rev and _revisions, newest
 * first — the parent of an interactive edit, the incoming path of a
 * replicated one; n_revs 0 for a new document; atts: its attachments with
 * stubs resolved; old: the leaf it replaces, NULL when none; its body is
 * read only if a validator asks). A refusal sets e->rc, e->why and
 * *refused; other errors are returned. */
int st_hooks_validate(const st_hooks *h, const store_wctx *w, kv_txn *txn, const st_dbx *x, store_edit *e,
                      const store_rev *revs, size_t n_revs, const store_att *atts, size_t n_atts,
                      const st_branch *old, dv_arena *a, int *refused) DV_MUST_CHECK;
/* A _design/ document was written or purged in txn: every process reloads
 * the database's hooks, and transactions on it that ran with the old ones
 * conflict. */
int st_hooks_changed(kv_txn *txn, const st_dbx *x) DV_MUST_CHECK;
/* Document id was written: its winner went from old_w (NULL: new
 * document) to new_w (NULL: purged away), or stayed (the same leaf) while
 * its changes row moved; new_body: its user body when at hand (an
 * edit's own new leaf), else NULL. index_update, if any. */
int st_hooks_index(const st_hooks *h, kv_txn *txn, const st_dbx *x, const char *id, size_t id_len,
                   const st_branch *old_w, const st_branch *new_w, const json_val *new_body) DV_MUST_CHECK;
/* A leaf as a document {"_id","_rev",["_deleted"],body…,["_attachments"]}
 * (read.c), in the arena. */
int st_leaf_doc(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br, dv_arena *a,
                json_val **out) DV_MUST_CHECK;
/* The user body of a leaf (no attachment stubs), in the arena. */
int st_leaf_body(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br, dv_arena *a,
                 json_val **out) DV_MUST_CHECK;
/* A live leaf by its rev as store_doc_get shows it (no extras): one range
 * read of its body, no revisions read. */
int st_live_leaf_doc(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const store_rev *rev,
                     dv_arena *a, json_val **out) DV_MUST_CHECK;
/* The winner as store_doc_get shows it: DV_ENOT_FOUND, DV_EDELETED. */
int st_winner_doc(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, int flags, dv_arena *a,
                  json_val **out) DV_MUST_CHECK;
/* A changes row's value into row (id, rev, deleted; strings in the
 * arena) and its BranchCount (bc may be NULL). */
int st_change_decode(const uint8_t *val, size_t vl, dv_arena *a, store_change *row, int64_t *bc) DV_MUST_CHECK;
/* One attempt of a transaction on one database (store_tx, tx.c). */
struct store_tx {
  kv_txn *txn;
  const st_dbx *x;
};
/* Count a lazy old-body read (store_read_stats.old_bodies). */
void st_count_old_body(void);

/* ---- attachments (att.c) ------------------------------------------------------ */

/* b = (P,"a",DocID,AttID): the prefix of one content's chunks. */
void st_att_key(const st_dbx *x, dv_buf *b, const char *id, size_t id_len, const uint8_t attid[16]);
/* Append a RevisionMetadata value (0[, (stub…)]) for these stubs. */
int st_meta_encode(dv_buf *b, const store_att *atts, size_t n) DV_MUST_CHECK;
/* Decode one (strings in the arena); none: *out NULL, *out_n 0. */
int st_meta_atts(const uint8_t *val, size_t vl, dv_arena *a, store_att **out, size_t *out_n) DV_MUST_CHECK;
/* CouchDB's "_attachments" object of stubs (info: encoding fields). */
json_val *st_atts_json(dv_arena *a, const store_att *atts, size_t n, int info);
/* A leaf's stubs: one point read of its RevisionMetadata, none when its
 * branch value lists no AttIDs. */
int st_leaf_atts(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const st_branch *br, dv_arena *a,
                 store_att **out, size_t *n) DV_MUST_CHECK;
/* Write n bytes of content as chunks under (P,"a",DocID,AttID). */
int st_att_write(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const uint8_t attid[16],
                 const uint8_t *p, size_t n) DV_MUST_CHECK;
/* 1 when id is among the n AttIDs at ids (16 bytes each). */
int st_att_has_id(const uint8_t *ids, size_t n, const uint8_t id[16]);
/* Clear each dropped AttID (16 bytes each) no branch in keep uses. */
int st_att_collect(kv_txn *txn, const st_dbx *x, const char *id, size_t id_len, const uint8_t *dropped,
                   size_t n_dropped, const st_branch *keep, int n_keep) DV_MUST_CHECK;
/* Link an upload into this transaction's edit: read (conflict-checked)
 * and clear its marker; DV_EATT_GONE when it was swept. */
int st_att_link(kv_txn *txn, const st_dbx *x, const store_att_upload *u) DV_MUST_CHECK;
const uint8_t *st_upload_id(const store_att_upload *u);
/* A finished upload's stored length and MD5; DV_EINVAL if not finished. */
int st_upload_done(const store_att_upload *u, int64_t *len, uint8_t md5[16]) DV_MUST_CHECK;
void st_upload_set_linked(store_att_upload *u);
/* Clear expired unlinked uploads (a batch); the number cleared or an error. */
int st_att_sweep(store *s, int64_t now_ms);

/* The background thread (bg.c): start (DV_ENOMEM when it cannot), and
 * stop and join it (a no-op when it never started). */
int st_bg_start(store *s) DV_MUST_CHECK;
void st_bg_stop(store *s);

/* Background work, called by the store's thread. */
int st_txid_cleanup(store *s) DV_MUST_CHECK;
/* Free every cached handle (store_close). */
void st_db_free_all(store *s);
/* Free a handle's rank sample (read.c); NULL is fine. */
void st_rank_free(struct st_rank *rk);

/* Milliseconds since the epoch. */
int64_t st_now_ms(void);
int64_t st_now_us(void); /* wall clock, microseconds since the epoch */
void st_random(uint8_t *out, size_t n);

#endif
