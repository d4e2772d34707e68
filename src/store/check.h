/* check.h — the store's invariant checker (`divan check`, and the online
 * GET /_node/_local/_check): read a store's keys and say, one item per
 * problem, where they break the key layout (store_int.h, DESIGN.md "Key
 * layout"). It reads only: it never commits, every read is a snapshot
 * read, and it works in bounded transactions (each well under the kv's 5 s
 * limit, resuming from the last key), so it may run against a live,
 * writing store. Not here: the indexes' own rows (index/: mi_check_db).
 *
 * What is checked, per database (store_check_db):
 *   revisions  every document's branches decode; exactly one carries a
 *              Sequence and BranchCount, and it is the one that sorts last
 *              (the winner); BranchCount is the number of branches
 *   changes    the winner's Sequence names a changes row that names the
 *              winner (id, rev, deleted, BranchCount); every changes row
 *              names a winner whose Sequence is that row's (so exactly one
 *              row per document); no row is newer than update_seq
 *   bodies     each leaf has its body (RevisionMetadata KV) unless it is a
 *              plain deletion; its stored bytes are the KvSize its branch
 *              value records; every body prefix in (P,"d") is a leaf's
 *   attachments each stub's content has chunks 0..n-1, none larger than
 *              STORE_ATT_CHUNK, whose bytes total its stored length and
 *              hash to its digest; the branch's AttID list is what its
 *              stubs use; every content under (P,"a") is used by a leaf or
 *              is an upload in progress (R,0,"att_uploads",AttID)
 *   counters   doc_count, doc_del_count, size_active, size_external equal
 *              what the revisions subspace counts
 *   local docs each header's chunks 0..NChunks-1 exist, and no others
 *   purges     purge infos lie in (purge_seq - purged_infos_limit,
 *              purge_seq], each with its chunk 0
 *   keys       no subspace or meta name the layout does not know
 *   and the cluster rows of the database (its _db_updates row).
 * Across the cluster (store_check_cluster):
 *   dbs        each (R,0,"dbs",Name) row decodes; no two share a DbPrefix;
 *              every DbPrefix is at most prefix_counter
 *   prefixes   no key under (R,1,DbPrefix) for a prefix no database names
 *              (a note instead when (R,0,"loads",DbPrefix) marks it: a
 *              `divan load` running or killed midway, dump.c)
 *   db_updates every database has its (R,0,"db_updates_by_name") row,
 *              naming an index row of that database; every index row is
 *              the one its database's by_name row names
 *
 * Data flow:
 *   store_check_cluster ─▶ walk (R,0,"dbs")         ─▶ prefixes seen, by_name checks
 *                       ─▶ skip-walk (R,1,*)          ─▶ dead prefixes
 *                       ─▶ walk (R,0,"db_updates")    ─▶ one row per database
 *   store_check_db ─▶ counters + update_seq (txn A)
 *                  ─▶ walk "r" by document (each document whole in one
 *                     transaction: branches, its changes row, its leaves'
 *                     bodies and attachment chunks, read together)
 *                  ─▶ walk "c", skip-walk "d" and "a", walk "l", "m", "p"
 *                  ─▶ update_seq again (txn B): counters compared only
 *                     when it did not move (see below)
 *   Each problem goes to the caller's callback as it is found (after the
 *   transaction that found it read everything it needed).
 *
 * Consistency while writes go on: every check above that relates two keys
 * reads both in one transaction, so it is exact whatever runs beside it.
 * The counters are the exception: they sum over the whole database, read
 * in many transactions. They are compared only when the database's
 * update_seq read before the scan (with the counters, in one transaction)
 * equals the one read after it — every write that moves a counter (edit,
 * purge) moves update_seq — and otherwise a note says they were not
 * checked. A database deleted while it is checked ends its check with a
 * note, not a problem.
 */
#ifndef DV_STORE_CHECK_H
#define DV_STORE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* One finding. Strings are valid during the callback only. */
typedef struct store_check_item {
  const char *db;        /* database name, NULL for a cluster-level finding */
  const char *id;        /* document id (local ids with "_local/"), NULL when none */
  size_t id_len;
  const char *what;      /* what is wrong (a sentence fragment) */
  const char *expected;  /* what was expected, NULL when what says it all */
  int note;              /* 1: not a problem — something not checked, and why */
} store_check_item;

/* What was checked, and what was found. Every call adds to it. */
typedef struct store_check_counts {
  int64_t databases;     /* databases checked */
  int64_t documents;     /* documents (revisions subspace, by id) */
  int64_t revisions;     /* branches (leaves) */
  int64_t changes;       /* changes rows */
  int64_t bodies;        /* leaf bodies */
  int64_t attachments;   /* attachment contents (distinct AttIDs per document) */
  int64_t local_docs;    /* _local documents */
  int64_t purge_infos;   /* purge infos */
  int64_t index_rows;    /* index rows compared with a rebuild (index/) */
  int64_t db_updates;    /* _db_updates index rows */
  int64_t problems;      /* findings that are problems */
  int64_t notes;         /* findings that are notes */
} store_check_counts;

/* cb gets each finding; nonzero stops the check (returned as is). */
typedef int (*store_check_cb)(void *arg, const store_check_item *it);

typedef struct store_check_out {
  store_check_cb cb;         /* may be NULL: only counted */
  void *arg;
  store_check_counts counts; /* filled in */
} store_check_out;

/* Hand one finding to out (counted as a problem or a note); cb's result. */
int store_check_emit(store_check_out *out, const store_check_item *it);

/* Check database `name`. 0 when the check ran (problems or not: see
 * out->counts), DV_ENO_DB when there is no such database, DV_ENOMEM, a kv
 * error when reads kept failing, or cb's nonzero result. */
int store_check_db(store *s, const char *name, store_check_out *out) DV_MUST_CHECK;

/* The cluster-level checks (not the databases' own subspaces). Errors as
 * store_check_db's (never DV_ENO_DB). */
int store_check_cluster(store *s, store_check_out *out) DV_MUST_CHECK;

#endif
