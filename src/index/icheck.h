/* icheck.h — `divan check` as one call: the store's invariants
 * (store/check.h) and the indexes' rows held against a rebuild, for the
 * whole store or one database. The command line (cli/check.c) and the
 * online endpoint (api/check.c) both run this; it prints nothing.
 *
 * Data flow:
 *   icheck_run ─▶ store_check_cluster (no database named)
 *              ─▶ store_db_list ─▶ per database: store_check_db
 *                                  ─▶ icheck_indexes: each Mango json
 *                                     index that is built, mi_check
 *                                     (rows and back-index rows equal to a
 *                                     rebuild from the documents)
 *                               ─▶ icheck_views: each design document's
 *                                  view index that has a state row,
 *                                  vw_check (view.h: rows, back-index
 *                                  rows and trees against a rebuild
 *                                  through the query server)
 *
 * mi_check reads the index and the documents in separate transactions,
 * so it is exact only while the database is not written. It runs between
 * two reads of the database's update_seq; if they differ the comparison
 * is dropped with a note (as the store's counters are), never reported
 * as a problem. An index still being built is not compared (a note).
 * View indexes need no such bracket: vw_check relates only keys read in
 * one snapshot (see index/vcheck.c); they need the query servers started
 * (qs_start), as a server has them and `divan check` starts them.
 */
#ifndef DV_INDEX_ICHECK_H
#define DV_INDEX_ICHECK_H

#include "store/check.h"

/* Check the whole store (db NULL: cluster rows and every database) or one
 * database. 0 when the check ran (problems are in out->counts), DV_ENO_DB
 * when db names no database, else an error that stopped it. */
int icheck_run(store *s, const char *db, store_check_out *out) DV_MUST_CHECK;

/* The Mango index comparisons of one database (icheck_run calls it). */
int icheck_indexes(store *s, const char *db, store_check_out *out) DV_MUST_CHECK;

/* The view index comparisons of one database (icheck_run calls it): each
 * design document's views, once per signature, through vw_check. */
int icheck_views(store *s, const char *db, store_check_out *out) DV_MUST_CHECK;

#endif
