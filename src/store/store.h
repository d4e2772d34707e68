/* store.h — the CouchDB data model over kv.h: databases, revisions,
 * exploded documents, the changes feed, local documents, _db_updates.
 *
 * This is the API the HTTP layer and the replicator call. It knows nothing
 * of HTTP and nothing of which kv backend runs. The key layout it writes is
 * the one in ../shared/DESIGN.md "Key layout" (and the table at the top of
 * store_int.h); the update paths keep the cost profile of seed 000.
 *
 * Threads: a `store` and its `store_db` handles are shared by all threads.
 * Every call runs its own transactions (retried on retryable kv errors) and
 * blocks until they committed; nothing here holds a transaction between
 * calls. The writes a server makes most — store_update, store_local_put —
 * also come as *_async calls that hold no thread while a commit or a
 * retry's backoff is waited for: they return at once and report through a
 * store_done_fn. Their later attempts run on the store's own workers (a
 * fixed few threads, started by the first async call, stopped by
 * store_close: every async call's done must have run before it).
 *
 * Memory: results that are JSON (documents, security objects) are built in
 * the caller's arena; rows handed to callbacks live only for the callback.
 *
 * Errors: 0 or a DV_E* code (util/err.h). CouchDB meanings: DV_ENO_DB (the
 * database does not exist), DV_ENOT_FOUND ("missing"), DV_EDELETED
 * ("deleted"), DV_ECONFLICT, DV_EDB_EXISTS, DV_EBAD_DB_NAME, DV_EBAD_DOCID,
 * DV_EBAD_REV, DV_EDOC_TOO_LARGE, DV_EPATH_TOO_LONG, DV_ENOT_OBJECT,
 * DV_EDOC_FIELD, DV_EBAD_REVS_LIMIT, DV_EBAD_SEQ; kv errors pass through
 * when retries are exhausted.
 */
#ifndef DV_STORE_H
#define DV_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "kv/kv.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/err.h"
#include "store/hooks.h"
#include "tuple/tuple.h"

typedef struct store store;       /* one per process and kv_db */
typedef struct store_db store_db; /* a database handle (cached, refcounted) */

#define STORE_DEFAULT_MAX_DOC 1000000 /* max_document_size, bytes of JSON (seed 001) */
#define STORE_DEFAULT_REVS_LIMIT 1000
#define STORE_MAX_REVS_LIMIT 4000     /* seed 000 */
#define STORE_MAX_DOCID 4096          /* longest document id, bytes */
#define STORE_MAX_REVID 255           /* longest rev hash part accepted, bytes */
#define STORE_MAX_DBNAME 238          /* CouchDB's limit on database names */

/* ---- opening ----------------------------------------------------------- */

typedef struct store_opts {
  const char *root;          /* root prefix R = (root,); NULL = "divan" */
  size_t max_document_size;  /* JSON bytes; 0 = STORE_DEFAULT_MAX_DOC */
  int db_updates_partitions; /* N, fixed at the first open of a store; 0 = 4 */
  int background;            /* 1: run the background thread (db_updates
                                consumer, TxId cleanup) */
} store_opts;

/* Open the layer over an open kv store (which must outlive it). Opts may be
 * NULL. Returns 0 / DV_ENOMEM / kv errors. */
int store_open(kv_db *kv, const store_opts *opts, store **out) DV_MUST_CHECK;

/* Stop the background thread and free the handle cache. All store_db
 * handles must be closed first. NULL is a no-op. */
void store_close(store *s);

kv_db *store_kv(store *s);
/* Change max_document_size (store_opts) before serving: main.c, once the
 * cluster-wide settings are read. */
void store_set_max_document_size(store *s, size_t n);

/* ---- revision ids ------------------------------------------------------ */

/* A revision id "POS-HASH". A 32-hex-digit HASH is kept as its 16 bytes
 * (raw = 0) and printed as lower-case hex; any other HASH (accepted only
 * from replication, new_edits=false) is kept as sent (raw = 1). */
typedef struct store_rev {
  int64_t pos;        /* generation, >= 1; 0 = no revision */
  const uint8_t *h;   /* hash bytes (borrowed or arena) */
  uint32_t len;       /* bytes at h: 16 when !raw */
  uint8_t raw;        /* 1: h is the id's text, not a binary hash */
} store_rev;

/* Parse "N-HASH" (N a positive decimal integer, HASH at most
 * STORE_MAX_REVID bytes, no control characters; an empty HASH, "1-", is
 * a rev old PouchDB databases hold, kept raw). Hash bytes are copied into
 * the arena. DV_EBAD_REV otherwise. */
int store_rev_parse(const char *s, size_t n, dv_arena *a, store_rev *out) DV_MUST_CHECK;

/* Append "N-HASH" to b. */
void store_rev_format(const store_rev *r, dv_buf *b);

/* Order of revisions (pos, then hash as the store's keys order them). */
int store_rev_cmp(const store_rev *a, const store_rev *b);

/* ---- sequences --------------------------------------------------------- */

/* Sequence = (Incarnation, 12-byte versionstamp). The zero sequence (inc 0,
 * all-zero stamp) is "before everything" and prints as "0". Other sequences
 * print as lower-case hex that sorts like the sequences. */
typedef struct store_seq {
  int64_t inc;     /* database incarnation */
  uint8_t vs[12];  /* commit stamp (10) + order inside the commit (2) */
} store_seq;

#define STORE_SEQ_STR 64 /* room for a formatted sequence, NUL included */

int store_seq_is_zero(const store_seq *q);
int store_seq_cmp(const store_seq *a, const store_seq *b);
/* "0" or the hex form; DV_EBAD_SEQ otherwise. ("now" is the caller's job:
 * use store_db_info's update_seq.) */
int store_seq_parse(const char *s, size_t n, store_seq *out) DV_MUST_CHECK;
void store_seq_format(const store_seq *q, char out[STORE_SEQ_STR]);

/* ---- databases --------------------------------------------------------- */

/* CouchDB's rule: ^[a-z][a-z0-9_$()+/-]*$ up to STORE_MAX_DBNAME bytes, or
 * one of the system names _users, _replicator, _global_changes. 0 or
 * DV_EBAD_DB_NAME. */
int store_db_name_check(const char *name, size_t len);

/* What a write does with a member of a document (couch_doc:transfer_fields):
 * one list for every write path (name.c). */
typedef enum store_member {
  STORE_MEMBER_USER,        /* not special: part of the body */
  STORE_MEMBER_ID,          /* _id */
  STORE_MEMBER_REV,         /* _rev */
  STORE_MEMBER_REVISIONS,   /* _revisions */
  STORE_MEMBER_DELETED,     /* _deleted */
  STORE_MEMBER_ATTACHMENTS, /* _attachments */
  STORE_MEMBER_IGNORED,     /* _revs_info, _local_seq, _conflicts, _deleted_conflicts: dropped */
  STORE_MEMBER_KEPT,        /* _access and the replicator's _replication_*: stored in the body */
  STORE_MEMBER_BAD,         /* any other "_" name: "Bad special document member" */
} store_member;
store_member store_doc_member(const char *key, size_t len);

/* Create a database (DV_EDB_EXISTS if it exists). Writes a "created" row
 * to _db_updates in the same transaction. */
int store_db_create(store *s, const char *name) DV_MUST_CHECK;

/* Delete a database: one clear_range of its prefix, in one transaction,
 * plus a "deleted" row in _db_updates. DV_ENO_DB if absent. Open handles
 * to it fail with DV_ENO_DB from then on. */
int store_db_delete(store *s, const char *name) DV_MUST_CHECK;

/* A move's read-only mark (store/move.c): on, every write to the
 * database (documents, attachments, local documents, purge, _security,
 * _revs_limit) is refused with DV_EDB_MOVING in every process, a write in
 * flight included (it conflicts and its retry sees the mark); off lifts
 * it. DV_ENO_DB if absent. */
int store_db_set_moving(store *s, const char *name, int on) DV_MUST_CHECK;
/* Rename a database in one transaction (its keys stay; the mark is
 * lifted): "deleted" and "created" rows to _db_updates. DV_ENO_DB,
 * DV_EDB_EXISTS (to exists), DV_EBAD_DB_NAME (to). */
int store_db_rename(store *s, const char *name, const char *to) DV_MUST_CHECK;

/* Open a handle (DV_ENO_DB if absent). Handles are cached and revalidated
 * inside every transaction that uses them. */
int store_db_open(store *s, const char *name, store_db **out) DV_MUST_CHECK;
void store_db_close(store_db *db); /* NULL is a no-op */
const char *store_db_name(const store_db *db);

/* A key range over ids or names, CouchDB's parameters. With descending,
 * start is the high end. */
typedef struct store_range {
  const char *start; /* NULL = unbounded */
  size_t start_len;
  const char *end;   /* NULL = unbounded */
  size_t end_len;
  int inclusive_end; /* 1 (CouchDB's default): end itself is included */
  int descending;    /* 1: from high to low */
  int64_t limit;     /* < 0: no limit */
  int64_t skip;      /* rows to drop first */
} store_range;

/* Default range: everything, inclusive_end, no limit. */
void store_range_init(store_range *r);

/* Names of the databases in range, in order; cb returns nonzero to stop. */
typedef int (*store_name_cb)(void *arg, const char *name, size_t len);
int store_db_list(store *s, const store_range *r, store_name_cb cb, void *arg) DV_MUST_CHECK;

typedef struct store_db_info {
  int64_t doc_count;      /* documents whose winner is live */
  int64_t doc_del_count;  /* documents whose winner is deleted */
  int64_t size_active;    /* stored bytes of leaf bodies (keys + values) */
  int64_t size_external;  /* JSON bytes of live winning bodies */
  store_seq update_seq;   /* newest changes row, zero for a fresh db */
  int64_t revs_limit;
  int64_t incarnation;
  int64_t prefix;         /* DbPrefix */
  int64_t created_at;     /* unix microseconds (GET /db's instance_start_time) */
  char uuid[33];          /* hex, NUL-terminated */
} store_db_info;

/* Counters are atomic KVs: this is a handful of point reads, never a scan. */
int store_db_info_get(store_db *db, store_db_info *out) DV_MUST_CHECK;

int store_db_get_revs_limit(store_db *db, int64_t *out) DV_MUST_CHECK;
/* 1..STORE_MAX_REVS_LIMIT, else DV_EBAD_REVS_LIMIT. */
int store_db_set_revs_limit(store_db *db, int64_t n) DV_MUST_CHECK;
/* The _security object ({} when never set), in the arena. */
int store_db_get_security(store_db *db, dv_arena *a, json_val **out) DV_MUST_CHECK;
/* Store a _security object (must be an object: DV_ENOT_OBJECT). */
int store_db_set_security(store_db *db, const json_val *sec) DV_MUST_CHECK;

/* ---- attachments (att.c has the data flow) -------------------------------- */

/* Bytes are stored as they are encoded (gzip for compressible types, else
 * identity) in chunks of STORE_ATT_CHUNK under (P,"a",DocID,AttID,i); a
 * leaf's stubs live in its RevisionMetadata KV. Content given in memory
 * (store_att.data, at most STORE_ATT_INLINE_MAX bytes per edit in all) is
 * written by the edit's own transaction, under AttID = its MD5, so equal
 * content is stored once per document; larger content is uploaded first
 * (store_att_upload_*, bounded transactions, invisible until an edit links
 * it) and linked by the edit. Content no leaf of the document references
 * any more is cleared by the edit (or purge) that dropped the last
 * reference; uploads never linked are cleared when freed, or by the
 * background sweeper after STORE_ATT_UPLOAD_TTL_S. */
#define STORE_ATT_CHUNK 100000              /* bytes per chunk KV */
#define STORE_ATT_INLINE_MAX (4u << 20)     /* in-memory content per edit */
#define STORE_ATT_UPLOAD_TTL_S 3600         /* an unlinked upload's lifetime */
#define STORE_DEFAULT_MAX_ATT (1LL << 30)   /* max_attachment_size (HTTP enforces) */

typedef struct store_att_upload store_att_upload;

/* One attachment of a revision. On read every field but the write-side
 * ones is filled (strings in the caller's arena). On write (store_edit.atts)
 * set name, type, and exactly one of stub / data / up. */
typedef struct store_att {
  const char *name;      /* UTF-8, non-empty, not starting with '_' */
  size_t name_len;
  const char *type;      /* content_type ("application/octet-stream" if none given) */
  size_t type_len;
  int64_t length;        /* identity (decoded) bytes */
  int64_t enc_length;    /* stored bytes (== length unless gzip) */
  int gzip;              /* 1: stored gzip-encoded ("encoding":"gzip") */
  uint8_t md5[16];       /* digest "md5-<base64>": MD5 of the stored bytes */
  int64_t revpos;        /* generation whose edit gave it this content */
  uint8_t id[16];        /* AttID (read side; store_att_pread needs it) */
  /* write side */
  int stub;              /* keep the parent's attachment of this name;
                            new_edits=false: any leaf's of this name and,
                            when has_md5, this digest. Else DV_EMISSING_STUB */
  int has_md5;           /* md5 was given: a stub must match it; for new
                            content the store computes the digest itself
                            (the HTTP layer checks a client's digest) */
  const uint8_t *data;   /* new content as stored (gzip'd when gzip) */
  size_t data_len;
  store_att_upload *up;  /* new content from an upload (after _finish) */
  int follows;           /* store_edit_from_json: "follows": true — the
                            caller must set data or up before store_update */
} store_att;

/* An upload of new content for document `id`, written in bounded
 * transactions (~4 MB each) as it arrives: memory stays bounded whatever
 * the size. write takes stored bytes (encode first if gzip). */
int store_att_upload_begin(store_db *db, const char *id, size_t id_len, store_att_upload **out) DV_MUST_CHECK;
int store_att_upload_write(store_att_upload *u, const void *p, size_t n) DV_MUST_CHECK;
/* Flush the rest; *out_len / md5 (may be NULL) get the stored length and
 * MD5. After this the upload may be named by one store_att.up. */
int store_att_upload_finish(store_att_upload *u, int64_t *out_len, uint8_t md5[16]) DV_MUST_CHECK;
/* Free it; if no committed edit linked it, its chunks are cleared (one
 * transaction, best effort: the sweeper catches what this misses). */
void store_att_upload_free(store_att_upload *u);

/* The attachments of a leaf: rev NULL = the winner (DV_EDELETED when that
 * is a tombstone), else that leaf (DV_ENOT_FOUND if it is not one).
 * *out_rev (may be NULL) gets the leaf's rev (hash in the arena). */
int store_doc_atts(store_db *db, const char *id, size_t id_len, const store_rev *rev, dv_arena *a,
                   store_rev *out_rev, store_att **out, size_t *out_n) DV_MUST_CHECK;

/* Stored bytes [off, off + cap) of an attachment read by store_doc_atts,
 * in one transaction (call it again from off + *got for more: each call is
 * short, so a slow reader holds no transaction). *got < cap only at the
 * end. DV_EATT_GONE when its content was collected in between (its
 * revision was replaced and nothing else references it). */
int store_att_pread(store_db *db, const char *id, size_t id_len, const store_att *att, int64_t off,
                    uint8_t *buf, size_t cap, size_t *got) DV_MUST_CHECK;

/* ---- writing documents -------------------------------------------------- */

/* One document edit. The caller fills the inputs; store_update fills rc
 * and rev. */
typedef struct store_edit {
  const char *id;          /* document id (not _local/) */
  size_t id_len;
  json_val *body;          /* user fields only (an object), NULL = {} */
  int deleted;             /* 1: the new revision is a tombstone */
  store_rev parent;        /* interactive edits: the rev edited (pos 0 = none) */
  const store_rev *path;   /* new_edits=false: [leaf, parent, grandparent…] */
  size_t path_len;
  store_att *atts;         /* the new revision's attachments, exactly (a
                              name absent here is dropped); NULL = none */
  size_t n_atts;
  /* results */
  int rc;                  /* 0, or DV_ECONFLICT, DV_EDOC_TOO_LARGE, …, or a
                              validator's refusal (DV_EFORBIDDEN, …) */
  const char *why;         /* a validator's reason for rc (in the wctx's
                              arena), NULL when rc's own reason applies */
  store_rev rev;           /* the revision written (or path[0]) */
  uint8_t rev_buf[16];     /* holds rev.h of a new interactive revision
                              (so rev.h points into this struct: copy the
                              bytes when the struct is copied or freed) */
} store_edit;

/* Fill `e` from a CouchDB document object: _id, _rev, _deleted, _revisions
 * (new_edits=false), _attachments, dropping _conflicts/_deleted_conflicts/_revs_info/
 * _local_seq as CouchDB does and refusing other `_` members
 * (DV_EDOC_FIELD). _attachments: each member becomes a store_att — a
 * stub ("stub": true; "digest" sets has_md5/md5, "revpos" is ignored), inline
 * "data" (base64 decoded into the arena as identity content: the caller
 * may gzip it and set gzip), or "follows": true ("length", and with
 * "encoding":"gzip" also "encoded_length", give the sizes expected;
 * "digest" sets has_md5). "content_type" defaults to
 * application/octet-stream. DV_EBAD_ATT for a name starting with '_' or
 * not UTF-8, bad base64, or a member that is none of the three. e->body becomes the user members (a new object in the
 * arena; doc is not changed). With new_edits=0 the path comes from
 * _revisions or _rev (DV_EBAD_REV when neither). A missing _id leaves
 * e->id NULL (the caller mints one). */
int store_edit_from_json(dv_arena *a, const json_val *doc, int new_edits, store_edit *e) DV_MUST_CHECK;

/* couch_doc:validate_docid (name.c): NULL when the id is good — non-empty,
 * valid UTF-8, at most STORE_MAX_DOCID bytes, not starting with '_' unless
 * "_design/…" (or "_local/…" when local is 1) — else CouchDB's reason
 * (static): "Document id must not be empty", "Illegal document id
 * `_design/`", "Illegal document id `_local/`" (local only), "Document id
 * is too long", "Document id must be valid UTF-8", "Only reserved document
 * ids may start with underscore.". The HTTP layer answers 400
 * illegal_docid with it. */
const char *store_docid_problem(const char *id, size_t len, int local);
/* The same as a code: 0 or DV_EBAD_DOCID. */
int store_docid_check(const char *id, size_t len, int local);

/* The completion of an asynchronous write: rc is what the blocking call
 * would have returned. It runs exactly once, on one of: the caller's
 * thread before the *_async call returns (an early error, or a commit
 * that completed at once), the kv backend's thread (kv.h "Threads"), or a
 * store worker. So it must be cheap and must not block — no store or kv
 * call, no lock held for long: hand the result to a thread of your own
 * (the HTTP layer resumes a suspended connection from here). */
typedef void (*store_done_fn)(void *arg, int rc);

/* Apply edits as w says who writes (NULL: the server itself, no
 * validator runs; hooks.h). new_edits = 1: interactive (CouchDB PUT/POST/_bulk_docs);
 * 0: replication (store the given paths, merge into the trees). Edits are
 * grouped into transactions by encoded size; each document's edit is
 * atomic, the request as a whole is not. A second edit of the same id in
 * one call gets DV_ECONFLICT. Returns 0 when every edit got its own rc, or
 * a request-wide error (DV_ENO_DB, kv errors). */
int store_update(store_db *db, const store_wctx *w, store_edit *edits, size_t n, int new_edits) DV_MUST_CHECK;
/* How many of the validators a write to db runs now may wait (JavaScript,
 * up to its timeout: store_hooks' slow), loading its hook table if need
 * be; or a negative error. A caller moves such writes off a thread that
 * must not wait. */
int store_db_slow_validators(store_db *db);

/* store_update without waiting: the same edits give the same results in
 * edits[] (rc, why, rev) and done(arg, rc) gets store_update's return
 * value, once. The edits are checked and exploded and the first
 * transaction's body runs (its reads, the validators, index_update) on
 * this thread, then its commit is started and the call returns; a
 * retried attempt (after its backoff, on a timed queue) and the next
 * transaction of a large update run on a store worker. Content of
 * attachments too large to write inline is uploaded on this thread
 * first, as store_update does. db, w, edits and everything they point to
 * (bodies, revs, attachments, w's arena: `why` lands there) must stay
 * valid and untouched until done runs; the read counters of
 * store_read_stats count only what ran on the calling thread. */
void store_update_async(store_db *db, const store_wctx *w, store_edit *edits, size_t n, int new_edits,
                        store_done_fn done, void *arg);

/* ---- reading documents -------------------------------------------------- */

enum {
  STORE_REVS = 1 << 0,              /* _revisions */
  STORE_REVS_INFO = 1 << 1,         /* _revs_info */
  STORE_CONFLICTS = 1 << 2,         /* _conflicts */
  STORE_DELETED_CONFLICTS = 1 << 3, /* _deleted_conflicts */
  STORE_LOCAL_SEQ = 1 << 4,         /* _local_seq */
  STORE_LATEST = 1 << 5,            /* open_revs: a non-leaf rev gives its leaves */
  STORE_ATT_INFO = 1 << 6,          /* stubs carry "encoding"/"encoded_length" */
  STORE_META = STORE_REVS_INFO | STORE_CONFLICTS | STORE_DELETED_CONFLICTS,
};

/* The document as CouchDB returns it: {"_id","_rev",["_deleted"], user
 * fields…, "_attachments" stubs (when it has any: {"content_type","revpos",
 * "digest","length","stub":true}, plus "encoding","encoded_length" for
 * gzip with STORE_ATT_INFO), extras by flags}. rev NULL = the winner (DV_EDELETED when the
 * winner is a tombstone, DV_ENOT_FOUND when there is no such doc); a given
 * rev must be a leaf, live or deleted (else DV_ENOT_FOUND). */
int store_doc_get(store_db *db, const char *id, size_t id_len, const store_rev *rev, int flags,
                  dv_arena *a, json_val **out) DV_MUST_CHECK;

/* open_revs: revs NULL = all leaves. The answer is CouchDB's array of
 * {"ok": doc} and {"missing": "rev"} objects. STORE_LATEST maps a non-leaf
 * rev to the leaves descending from it. DV_ENOT_FOUND when revs is NULL and
 * the document does not exist. */
int store_doc_open_revs(store_db *db, const char *id, size_t id_len, const store_rev *revs,
                        size_t n_revs, int flags, dv_arena *a, json_val **out) DV_MUST_CHECK;

/* One edit branch of a document's revision tree. */
typedef struct store_leaf {
  store_rev rev;         /* the leaf */
  int deleted;           /* 1: a tombstone */
  const store_rev *anc;  /* ancestors, parent first (positions rev.pos-1, …) */
  size_t n_anc;
} store_leaf;

/* Every branch of a document, winner first, the others in descending
 * order (for _revs_diff and replication). DV_ENOT_FOUND if none. */
int store_doc_leaves(store_db *db, const char *id, size_t id_len, dv_arena *a, store_leaf **out,
                     size_t *out_n) DV_MUST_CHECK;

/* ---- local documents ---------------------------------------------------- */

/* _local/ docs: no history, rev "0-N", not in changes. id is the full id
 * ("_local/x"). get: the doc with _id and _rev, DV_ENOT_FOUND if absent.
 * put: as CouchDB 3.4 (increment_local_doc_revs), rev is not checked: the
 * document is replaced and its new rev is rev + 1 (rev 0 when none was
 * given). With STORE_LOCAL_STRICT rev must be the current one (0 for a new
 * document), else DV_ECONFLICT: a compare-and-set for divan's own leases.
 * deleted removes it (DV_ENOT_FOUND when absent). *out_rev (may be NULL)
 * gets N. */
#define STORE_LOCAL_STRICT 1
int store_local_get(store_db *db, const char *id, size_t id_len, dv_arena *a, json_val **out) DV_MUST_CHECK;
int store_local_put(store_db *db, const char *id, size_t id_len, const json_val *body,
                    int64_t rev, int deleted, int flags, int64_t *out_rev) DV_MUST_CHECK;
/* store_local_put without waiting (see store_update_async): done(arg, rc)
 * gets what store_local_put would return. id and body are copied before
 * this returns; db and out_rev (may be NULL; written before done runs)
 * must stay valid until done. */
void store_local_put_async(store_db *db, const char *id, size_t id_len, const json_val *body, int64_t rev,
                           int deleted, int flags, int64_t *out_rev, store_done_fn done, void *arg);

/* ---- the changes feed and _all_docs ------------------------------------- */

typedef struct store_change {
  store_seq seq;             /* the row's sequence */
  const char *id;            /* document id */
  size_t id_len;
  int deleted;               /* winner is a tombstone */
  store_rev rev;             /* winning revision */
  const store_leaf *leaves;  /* style=all_docs: every branch, winner first */
  size_t n_leaves;           /* 0 unless all_docs */
  json_val *doc;             /* include_docs: the winner (flags applied) */
} store_change;

typedef struct store_changes_opts {
  store_seq since;   /* rows after this sequence */
  int descending;    /* newest first (since is then ignored, as CouchDB) */
  int64_t limit;     /* < 0: none */
  int all_docs;      /* style=all_docs: fill leaves */
  int include_docs;  /* fill doc */
  int doc_flags;     /* STORE_CONFLICTS etc. for included docs */
} store_changes_opts;

/* cb returns 0 to go on, nonzero to stop (returned as is). Rows are valid
 * only during the callback. Reads run in batches, each batch in its own
 * transaction that has finished before its rows are handed out (a slow
 * consumer holds no transaction); every document changed before the call
 * appears at least once. *out_last (may be NULL) gets the last sequence
 * delivered (or `since` when none). */
typedef int (*store_change_cb)(void *arg, const store_change *c);
int store_changes(store_db *db, const store_changes_opts *o, store_change_cb cb, void *arg,
                  store_seq *out_last) DV_MUST_CHECK;

/* A row of _all_docs: each id once, in key order, winners only, live
 * documents only (keys mode below shows deleted and missing ones). */
typedef struct store_doc_row {
  const char *id;
  size_t id_len;
  store_rev rev;   /* winner (pos 0 when missing) */
  int deleted;     /* keys mode: the winner is a tombstone */
  int missing;     /* keys mode: no such document */
  json_val *doc;   /* include_docs */
} store_doc_row;

typedef int (*store_row_cb)(void *arg, const store_doc_row *row);

enum { STORE_ALL = 0, STORE_DESIGN = 1, STORE_LOCAL = 2 };

/* _all_docs (which = STORE_ALL), _design_docs (STORE_DESIGN: ids in
 * "_design/" only) or _local_docs (STORE_LOCAL; rev is 0-N). */
int store_all_docs(store_db *db, int which, const store_range *r, int include_docs, int doc_flags,
                   store_row_cb cb, void *arg) DV_MUST_CHECK;
/* _all_docs with keys: one row per key, in the order given. */
/* Live documents (design ones included, local ones not) whose id sorts
 * before `id`, or after it when `descending`: CouchDB's _all_docs offset
 * for a range starting at id. Exact; cheap on a database that is read
 * more than it is written (read.c "_all_docs offsets"). */
int store_doc_rank(store_db *db, const char *id, size_t id_len, int descending, int64_t *out) DV_MUST_CHECK;

int store_all_docs_keys(store_db *db, const char *const *keys, const size_t *key_lens, size_t n,
                        int include_docs, int doc_flags, store_row_cb cb, void *arg) DV_MUST_CHECK;

/* ---- _db_updates -------------------------------------------------------- */

typedef struct store_dbu_row {
  const char *name;   /* database name */
  size_t name_len;
  const char *type;   /* "created", "updated" or "deleted" */
  store_seq seq;      /* the row's position in the index */
} store_dbu_row;

/* Rows after `since`, oldest first; one per database (its latest event).
 * A reader that resumes from the last seq it saw never misses an event. */
int store_db_updates(store *s, const store_seq *since, int64_t limit,
                     int (*cb)(void *arg, const store_dbu_row *row), void *arg,
                     store_seq *out_last) DV_MUST_CHECK;

/* Run the queue consumer once over every partition it can lease; returns
 * the number of queue entries consumed, or an error. The background thread
 * calls this; tests call it to make the index current. */
int store_db_updates_consume(store *s) DV_MUST_CHECK;

/* ---- purge -------------------------------------------------------------- */

#define STORE_DEFAULT_PURGED_INFOS_LIMIT 1000 /* CouchDB's purged_infos_limit */

/* CouchDB's _purge for one document, in one transaction: remove the named
 * LEAF revisions (live or deleted) and whatever of the tree only they used
 * (each leaf's branch KV holds its whole path, so dropping the KV and its
 * body drops exactly that path). Revs that are not leaves, unknown revs and
 * unknown ids are ignored. Purging every leaf removes the document (no
 * _all_docs row, no changes row, counters adjusted); otherwise the best
 * remaining leaf is the winner and the document moves to a new changes
 * row, as CouchDB re-sequences a purged document. Every call also takes the
 * next purge_seq, records a purge info (id and the revs asked for), keeps
 * at most purged_infos_limit of them, and moves update_seq forward (so
 * indexers see the purge), as CouchDB does.
 * *out_purged (in a, request order, duplicates once) and *out_n get the
 * revs removed; *out_n is 0 when nothing matched. DV_ENO_DB, kv errors. */
int store_purge(store_db *db, const char *id, size_t id_len, const store_rev *revs, size_t n, dv_arena *a,
                store_rev **out_purged, size_t *out_n) DV_MUST_CHECK;

/* The number of purges ever recorded in the database (0 for a new one). */
int store_db_get_purge_seq(store_db *db, int64_t *out) DV_MUST_CHECK;
/* How many purge infos the database keeps (STORE_DEFAULT_PURGED_INFOS_LIMIT
 * until set). Setting it drops the infos past the new limit at once; n < 1
 * is DV_ERANGE. */
int store_db_get_purged_infos_limit(store_db *db, int64_t *out) DV_MUST_CHECK;
int store_db_set_purged_infos_limit(store_db *db, int64_t n) DV_MUST_CHECK;

/* One recorded purge: what was asked, not what matched. */
typedef struct store_purge_info {
  int64_t purge_seq;      /* its number, 1, 2, … */
  const char *id;         /* the document id */
  size_t id_len;
  const store_rev *revs;  /* the revs named in the request */
  size_t n_revs;
} store_purge_info;

/* The kept purge infos with purge_seq > since, oldest first (for indexes
 * that must drop a purged document's rows). Read in batches, each in its
 * own finished transaction; an info is valid only during the callback; cb
 * returns nonzero to stop (returned as is). */
int store_purge_infos(store_db *db, int64_t since, int (*cb)(void *arg, const store_purge_info *pi),
                      void *arg) DV_MUST_CHECK;

/* ---- transactions for the layers above (tx.c) -------------------------- */

/* index/ keeps its rows in a database's indexes subspace (P,"i",…) and
 * reads documents and changes in the transaction that reads or writes
 * those rows, so an index row and the document it names are one snapshot.
 * A store_tx is one attempt of such a transaction: handed to
 * store_db_run's fn and to index_update (hooks.h), valid during that call
 * only. Reads are conflict-checked unless said otherwise. */
typedef int (*store_tx_fn)(store_tx *t, void *arg);

/* Run fn as one transaction on db (checked in every attempt, DV_ENO_DB
 * once it is gone), retried on retryable kv errors, so fn must be
 * idempotent; its writes commit when it returns 0, nonzero is returned. */
int store_db_run(store_db *db, store_tx_fn fn, void *arg) DV_MUST_CHECK;
kv_txn *store_tx_kv(store_tx *t);
store_db *store_tx_db(store_tx *t);
int64_t store_tx_inc(store_tx *t); /* the database's Incarnation */
/* b = (P, "i"), w ready for the index's own elements. */
void store_tx_ikey(store_tx *t, dv_buf *b, tup_w *w);
/* The winner as store_doc_get shows it (flags), read in t: DV_ENOT_FOUND,
 * DV_EDELETED. */
int store_tx_doc(store_tx *t, const char *id, size_t id_len, int flags, dv_arena *a, json_val **out) DV_MUST_CHECK;
/* A live leaf the caller knows is the winner in t (an index row written
 * with it), as store_tx_doc shows it without flags, in one range read of
 * its body instead of a read of the revisions first. */
int store_tx_leaf_doc(store_tx *t, const char *id, size_t id_len, const store_rev *rev, dv_arena *a,
                      json_val **out) DV_MUST_CHECK;
/* The user body of a winner index_update was handed (no _id/_rev/stubs). */
int store_tx_body(store_tx *t, const char *id, size_t id_len, const store_winner *w, dv_arena *a,
                  json_val **out) DV_MUST_CHECK;
/* The database's update_seq (snapshot; zero when nothing was written). */
int store_tx_update_seq(store_tx *t, store_seq *out) DV_MUST_CHECK;
/* Changes rows strictly after `after` (NULL or zero: from the first) and
 * before `before` (NULL: no bound), at most limit (0: all), in Sequence
 * order, into the arena (*more: rows are left). flags: KV_SNAPSHOT or 0
 * (0: the range is read-conflict-checked). doc/leaves are not filled. */
int store_tx_changes(store_tx *t, const store_seq *after, const store_seq *before, int limit, int flags,
                     dv_arena *a, store_change **out, int *out_n, int *more) DV_MUST_CHECK;

/* ---- waiting for changes ------------------------------------------------ */

/* Watch a database for any committed edit (or its deletion): cb runs once,
 * on a kv thread (must not block). Register first, then read: an edit
 * committed after this returns always fires it, one committed before is
 * visible to any read started after. Free with kv_watch_free. */
int store_db_watch(store_db *db, kv_watch_cb cb, void *arg, kv_watch **out) DV_MUST_CHECK;
/* The same for the _db_updates index (fires when the consumer adds rows). */
int store_db_updates_watch(store *s, kv_watch_cb cb, void *arg, kv_watch **out) DV_MUST_CHECK;

/* ---- the server's identity ---------------------------------------------- */

/* The server uuid (32 hex chars + NUL): made once, stored in the kv, the
 * same after every restart (PouchDB builds replication ids from it). */
int store_server_uuid(store *s, char out[33]) DV_MUST_CHECK;

/* Does the store answer? One read through the kv layer (the server uuid's
 * key, a snapshot read) within timeout_ms: on FoundationDB the cluster
 * must give a read version and a storage server the value. 0, or the
 * error: DV_ETIMED_OUT when no answer came in time, another kv error. */
int store_ping(store *s, int timeout_ms) DV_MUST_CHECK;

/* ---- instrumentation ---------------------------------------------------- */

/* Reads of the revisions subspace made by this thread (for the seed 000
 * cost-profile tests and the benchmark). round_trips counts kv_get calls
 * and range reads; kvs counts the KVs they returned. */
typedef struct store_read_stats {
  uint64_t round_trips; /* point or range reads issued */
  uint64_t kvs;         /* KVs returned by them */
  uint64_t old_bodies;  /* old documents' bodies read for validators (hooks.h) */
} store_read_stats;

void store_read_stats_get(store_read_stats *out);
void store_read_stats_reset(void);

#endif
