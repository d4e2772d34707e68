/* vtree.h — a tree of reductions over ordered rows in the KV store, so that
 * the count and the reductions of any key range cost O(log n) KV reads, not
 * a scan of the range (issue 20 "Reduce in O(log n)"; fabric2 kept an
 * ebtree in FoundationDB for the same reason). Views keep one per map
 * function: its count gives total_rows and offset, its reductions answer
 * reduce queries at any group level (index/view.c).
 *
 * The rows are not the tree's: they are the KVs under rows_prefix, written
 * and cleared by the caller (one KV per row; key = rows_prefix + suffix).
 * The tree keeps, under node_prefix, a summary (count and n_red
 * reductions) of runs of rows, and runs of runs, up to one root.
 *
 * Shape: content-defined, so it is a pure function of the set of row keys
 * (and the salt) — the same whatever order the rows came in, and therefore
 * byte-equal to a rebuild from scratch (the index-versus-rebuild
 * check), with no split or merge rules to get wrong (a "prolly tree" /
 * Merkle search tree):
 *
 *   lv(s) = the level of row suffix s: ctz(hash(salt, s)) / VT_BITS, capped
 *           at VT_MAX_LEVEL (ctz of 0 is 64) — so P(lv >= L) =
 *           2^-(VT_BITS*L), a run averages 2^VT_BITS entries. hash:
 *           SipHash-2-4 with the 16-byte salt as key (k0 = salt[0..7],
 *           k1 = salt[8..15], little-endian), 64-bit output, so an index's
 *           boundaries cannot be aimed at by whoever chooses the keys.
 *           lv("") = 0: the empty suffix starts the first node of every
 *           level anyway.
 *   level-L node (L >= 1): one per row suffix s with lv(s) >= L, plus the
 *           first node of each level, whose suffix is "" (empty): it covers
 *           the rows from s (inclusive) up to the next node of level L
 *           (exclusive), or to the end. Its children are the level L-1
 *           nodes (L = 1: the rows) in that range.
 *           A first node holds no rows when the first row itself starts a
 *           node at that level: its count is 0 and its reductions empty
 *           (reduce and rereduce never run over nothing, and rereduce never
 *           sees such a node).
 *   height  H = 1 + max lv over the rows (0 when there are no rows); level
 *           H holds only the "" node: the root. No node exists above H;
 *           with no rows there is no node KV and no meta KV at all.
 *
 * Keys, under node_prefix (N):
 *   N + 0x00                       (meta) value: 1 byte H
 *   N + (0x01 + L) + s             level-L node for suffix s (raw bytes:
 *                                  nodes of one level sort by suffix)
 * value of a node: count (8 bytes LE: rows under it), then n_red times:
 *   length (4 bytes LE) + the reduction's bytes.
 *
 * Updating (vt_update, in the caller's transaction, after it wrote or
 * cleared rows): for each changed suffix s (inserted, removed, or given a
 * new value), the nodes s creates or removes at levels 1..lv(s), then
 * every node that contains s at each level is dirty (and, for a row s that
 * starts nodes, its left neighbour at level 1, whose range may have
 * shrunk; above level 1 that follows from containment); dirty nodes are
 * recomputed bottom up — level 1 from its rows, level L from its children
 * (level L-1, already recomputed) — and H moved. Cost per dirty node: one
 * reverse read to find it (none when the entry below is itself a node of
 * that level) and one forward read for its end; adjacent dirty nodes read
 * their children in one range read, so a batch of appended rows reads
 * each row once. Changes of one batch share all of it.
 *
 * Reading (vt_reduce): from the root down, a node wholly inside the range
 * gives its summary; one partly inside is opened (its children read); only
 * the nodes holding a bound are opened, at most two per level: at most
 * 2 × H range reads (plus the meta KV), about 2 × H × 2^VT_BITS KVs,
 * whatever the size of the range (test vtree_log_reads: 159, 235 and 317
 * KVs on average at 10^4, 10^5 and 10^6 rows, heights 3, 4, 5). The whole
 * range is two reads: the meta KV and the root.
 *
 * Reductions are bytes the caller defines (vt_ops): the tree stores them,
 * combines them with rereduce, and hands them back. Rows' reductions come
 * from reduce over the rows' KVs. The caller's functions must be
 * deterministic (same input, same bytes), so a recomputed node is
 * byte-equal to a rebuilt one. rereduce runs even over one summary (a
 * node with one non-empty child, a range that is one piece), so its
 * answer is always a rereduce's.
 *
 * Limits: a node's value must fit KV_MAX_VALUE: a reduction that grows
 * with its input (a JavaScript reduce that returns its values) fails the
 * update with DV_EVALUE_TOO_LARGE (the caller answers reduce_overflow).
 * A node's key is node_prefix + 1 + the row's suffix: it must fit
 * KV_MAX_KEY too (DV_EKEY_TOO_LARGE from the store otherwise).
 *
 * Threads: no state outside the transaction; any thread.
 */
#ifndef DV_INDEX_VTREE_H
#define DV_INDEX_VTREE_H

#include <stddef.h>
#include <stdint.h>

#include "kv/kv.h"
#include "util/buf.h"
#include "util/err.h"

#define VT_BITS 5        /* a run averages 2^5 = 32 entries */
#define VT_MAX_LEVEL 12  /* 2^60 rows */
#define VT_SALT_LEN 16

/* One reduction handed to rereduce. */
typedef struct vt_red {
  const uint8_t *p;
  size_t len;
} vt_red;

typedef struct vt_ops {
  /* The n_red reductions of rows (each a row KV: key is the whole key,
   * rows_prefix included), appended to out[0..n_red-1] (each out[i] is
   * empty on entry). 0 or an error (returned by the tree as is). */
  int (*reduce)(void *ctx, const kv_pair *rows, size_t n, dv_buf *out);
  /* Reduction `which` of several summaries (in key order) into out. */
  int (*rereduce)(void *ctx, size_t which, const vt_red *in, size_t n, dv_buf *out);
} vt_ops;

/* Both prefixes are non-empty and neither starts the other (DV_EINVAL). */
typedef struct vt_def {
  const uint8_t *rows_prefix; /* the rows: every KV whose key starts with it */
  size_t rows_prefix_len;
  const uint8_t *node_prefix; /* the tree's KVs (must not overlap the rows) */
  size_t node_prefix_len;
  uint8_t salt[VT_SALT_LEN];  /* the index's own (random at creation, kept by the caller) */
  size_t n_red;               /* reductions per node; 0: counts only */
  const vt_ops *ops;          /* NULL when n_red is 0 (else both functions set) */
  void *ctx;
} vt_def;

/* KV traffic (the O(log n) proof counts these): a call adds its own to
 * the caller's counters, which the caller zeroes. */
typedef struct vt_stats {
  uint64_t reads;   /* point and range reads issued (kv_get, kv_get_range) */
  uint64_t kvs;     /* KVs they returned */
} vt_stats;

/* A changed row: its suffix (the key without rows_prefix). */
typedef struct vt_key {
  const uint8_t *s;
  size_t len;
} vt_key;

/* After the caller inserted, cleared or rewrote the rows whose suffixes
 * are in changed (any order, repeats allowed; a suffix inserted and
 * cleared again in the same transaction is fine) in txn: bring the tree
 * back to the shape and summaries the rows now define. Reads and writes
 * only in txn. On an error the tree in txn is half updated: the caller
 * must not commit it. 0, DV_EINVAL (the definition), DV_ENOMEM,
 * DV_EVALUE_TOO_LARGE, DV_ECORRUPT (the stored tree is not one), a kv
 * error, or the ops' error. st may be NULL. */
int vt_update(kv_txn *txn, const vt_def *d, const vt_key *changed, size_t n, vt_stats *st) DV_MUST_CHECK;

/* A bound of a range of row suffixes; a NULL bound is open. len 0 is the
 * empty suffix (s may then be NULL). */
typedef struct vt_bound {
  const uint8_t *s;
  size_t len;
  int inclusive;
} vt_bound;

/* The count (and, when reds is not NULL, the n_red reductions, appended to
 * reds[0..n_red-1]; an empty range leaves them empty) of the rows with
 * suffix in [lo, hi] per the bounds' inclusiveness. With reds NULL no op
 * is called. flags: KV_SNAPSHOT or 0, for every read. st may be NULL.
 * *count and reds are written only on success. 0, DV_EINVAL (the
 * definition, flags), DV_ENOMEM, DV_ECORRUPT, a kv error, or the ops'. */
int vt_reduce(kv_txn *txn, const vt_def *d, const vt_bound *lo, const vt_bound *hi, int flags, uint64_t *count,
              dv_buf *reds, vt_stats *st) DV_MUST_CHECK;

/* Clear the whole tree (the caller clears the rows). */
int vt_clear(kv_txn *txn, const vt_def *d) DV_MUST_CHECK;

/* Compare the tree with the one the rows define: 0 when every node KV is
 * byte-equal to a rebuild from the rows, DV_ECORRUPT with why (appended to
 * why_buf) naming the first difference ("vtree: missing level 2 node
 * \"6162\"", suffixes in hex). Reads every row and node in txn and builds
 * the whole tree in memory: for tests and `divan check` on small indexes.
 * Other errors: DV_EINVAL, DV_ENOMEM, a kv error, the ops'. */
int vt_check(kv_txn *txn, const vt_def *d, dv_buf *why_buf) DV_MUST_CHECK;

#endif
