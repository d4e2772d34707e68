/* hooks.h — store's write hooks: what layers above store/ (index/, auth/)
 * give it to run inside a document's edit transaction, the way kv/ takes
 * kv_methods. store/ includes nothing from above; it calls this table.
 *
 * Two hooks per database (DESIGN.md "Write hooks"):
 *   validate      validate_doc_update and the built-in _users rules: may
 *                 refuse one document's edit (DV_EFORBIDDEN,
 *                 DV_EUNAUTHORIZED, …) with a reason; the edit's rc and why
 *                 carry the answer, the other edits of the call go on.
 *   index_update  indexes kept in the document's own transaction: called for
 *                 every document an edit or purge writes (its winner, or
 *                 only its changes row, moved); an error aborts the whole
 *                 transaction (nothing of it is written).
 * The table of a database comes from the provider the layers above register
 * with store_set_hooks; the store caches it on the database handle and asks
 * the provider again whenever the cluster-wide metadata version moved (a
 * write to a _design/ document, _security, _revs_limit, a deletion bump it),
 * so every process sees a new table in its next transaction. hooks.c has the
 * data flow.
 *
 * Threads: validators and index_update run inside the edit's transaction,
 * on the thread that called store_update — or, for store_update_async, on
 * that thread for the first attempt and on a store worker for a retried
 * attempt or a later transaction of the call; never on a kv callback
 * thread. They must not call the store (that would run a transaction
 * inside the transaction). The provider's load runs on a thread that is
 * about to write, outside any store lock.
 */
#ifndef DV_STORE_HOOKS_H
#define DV_STORE_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "kv/kv.h"
#include "util/arena.h"
#include "util/err.h"

typedef struct store store;
typedef struct store_db store_db;
typedef struct store_rev store_rev;
typedef struct store_tx store_tx; /* one attempt of a transaction on one database (store.h) */

/* Who writes (CouchDB's userCtx). */
typedef struct store_user {
  const char *name;          /* NUL-terminated; NULL = anonymous */
  const char *const *roles;  /* the requester's roles */
  size_t n_roles;
  int is_admin;              /* a server admin (role _admin) */
  int is_db_admin;           /* an admin of this database (_security "admins") */
} store_user;

/* The context of a write: store_update's `w`. NULL w = a write by the server
 * itself (tools, tests): no validator runs; index_update still does. */
typedef struct store_wctx {
  const store_user *user;    /* who writes (NULL: anonymous) */
  const json_val *sec;       /* the database's _security object in force (NULL: {}) */
  dv_arena *a;               /* where refusal reasons (store_edit.why) are copied;
                                NULL: the code's own reason (err.h) */
} store_wctx;

/* The document an edit replaces, as validate_doc_update's oldDoc: read
 * only when a validator asks (store_old_doc), so a database whose
 * validators never look at it keeps seed 000's read profile. */
typedef struct store_old store_old;

/* The old document: {"_id","_rev",["_deleted":true], user fields…,
 * ["_attachments" stubs]}, or *out NULL when the edit creates the document.
 * The first call reads its body (one range read in the edit's transaction;
 * counted in store_read_stats.old_bodies), later calls return the same
 * value. Borrowed until the validator returns. 0 or a kv error (which the
 * validator returns as is). */
int store_old_doc(store_old *o, json_val **out) DV_MUST_CHECK;

/* validate: new_doc is couch_doc:to_json_obj(Doc, [revs]): {"_id",
 * ["_rev": the parent rev (interactive) or the new leaf (new_edits=false)],
 * user fields…, ["_deleted":true], ["_revisions": {start, ids}],
 * ["_attachments": stubs]} as the client sent it (after the caller's own
 * rewrites, e.g. _users password hashing, and with its stubs resolved). Return 0 to let the edit through, or a
 * per-document refusal (store_refusal: DV_EFORBIDDEN, DV_EUNAUTHORIZED,
 * DV_ENOT_FOUND, DV_EVDU_*, and the query servers' DV_EQS* when a
 * validator's function failed), with *why its reason (in `a`, the
 * attempt's arena, or static). Any other negative code is a failure of
 * the whole call (kv errors are retried). ctx is the validator's own. */
typedef int (*store_validate_fn)(void *ctx, const json_val *new_doc, store_old *old, const store_user *user,
                                 const json_val *sec, dv_arena *a, const char **why);

/* 1 when rc is a per-document refusal a validator may return (the edit
 * gets it with its reason; the other edits of the call go on), 0 when it
 * fails the whole call. One list, so store/, api/ and auth/ agree. */
int store_refusal(int rc);

/* A winner as index_update sees it. */
typedef struct store_winner {
  const store_rev *rev;      /* the winning leaf */
  int deleted;               /* 1: the document is deleted */
  const json_val *body;      /* the user body when it is the edit's own new
                                leaf; NULL otherwise (not read) */
} store_winner;

/* index_update: old_w NULL when the document is new, new_w NULL when a
 * purge removed it; old_w and new_w name the same leaf when the winner did
 * not change but the document's changes row moved (a branch was added or
 * removed): an index still being built from the changes subspace must
 * take the document now, the build will not see it again. Runs after the edit's (or purge's) writes, in its
 * transaction t (store.h "transactions for the layers above": its reads
 * see the edit's writes, so store_tx_body reads a new winner that is not
 * the edit's own leaf); nonzero aborts the transaction (store_update or
 * store_purge returns it). */
typedef int (*store_index_update_fn)(void *ctx, store_tx *t, const char *id, size_t id_len,
                                     const store_winner *old_w, const store_winner *new_w);

#define STORE_MAX_VALIDATORS 16

/* One database's hooks, filled by the provider. */
typedef struct store_hooks {
  struct {
    store_validate_fn fn;    /* called in order; the first refusal wins */
    void *ctx;
    int slow;                /* it may wait (JavaScript, up to its timeout): store_db_slow_validators */
  } validate[STORE_MAX_VALIDATORS];
  size_t n_validate;
  store_index_update_fn index_update; /* NULL: none */
  void *index_ctx;
} store_hooks;

/* The layers above: load fills a zeroed table for database `name` (0, or
 * an error the write that needed the table returns); unload (optional)
 * is called once the store no longer uses a table load filled. */
typedef struct store_hooks_provider {
  int (*load)(void *arg, const char *name, size_t name_len, store_hooks *out);
  void (*unload)(void *arg, store_hooks *h);
  void *arg;
} store_hooks_provider;

/* Register the provider (copied; NULL removes it). Handles load their
 * table again at their next write. */
void store_set_hooks(store *s, const store_hooks_provider *p);

#endif
